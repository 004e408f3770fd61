# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# The spellings users type to come in: `--mca coll ftrabit` (Open MPI patch 0023) and the
# parameter sets that turn fault tolerance on, `-am ft-enable-mpi` (patch 0022).

echo "== the spellings users type (timeout ${timeout_s}s each)"
# An include list naming ftrabit alone, which provides allreduce and bcast only: every
# collective of every kind must still work (the others served as without the list), and
# ftrabit must serve its two. Before patch 0023, MPI_Init failed.
mpi doors/coll-ftrabit-alone 4 pass test/mpi/coll_every --mca coll ftrabit -- ftrabit-serves
mpi doors/coll-ftrabit-alone-ulfm 3 pass test/mpi/coll_every --with-ft ulfm --mca coll ftrabit \
    -- ftrabit-serves
mpi doors/coll-default 4 pass test/mpi/coll_every -- ftrabit-serves
# A list whose components provide every collective still gets them alone: ftrabit, not
# named, must not be loaded (its MPI_T counters absent).
coll_complete_list_alone() {
    local log=$logs/doors-coll-complete-list.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" --mca coll basic,libnbc,self -np 3 \
        "$build/test/mpi/coll_selection" excluded
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "np 3: PASS" "$log"
}
check doors/coll-complete-list-gets-only-its-components coll_complete_list_alone
# coll_base_include_strict 1 keeps the old reading, with its error.
mpi doors/coll-include-strict 2 "abort:could be used for allgather on a new communicator" \
    test/mpi/coll_every --mca coll ftrabit --mca coll_base_include_strict 1
ompi_info_says_include_reading() {
    "$OMPI_PREFIX/bin/ompi_info" --param coll base --level 9 | tee /dev/stderr \
        | grep -A3 '"coll_base_include_strict"' | grep -q "serve the collectives A and B do not provide"
}
check doors/ompi_info-says-how-an-include-list-is-read ompi_info_says_include_reading
# Recovery needs the agreement (coll/ftagree), which the list does not name.
ft doors/coll-ftrabit-alone-kill 4 "1:12" --mca coll ftrabit

# The fault-tolerance spellings: a killed rank, the survivor told MPIX_ERR_PROC_FAILED,
# mpirun exits 0. ULFM's own spelling `-am ft-enable-mpi` (and `--amca`, `--tune`), Open
# MPI's parameter set `--tune ft-mpi`, against `--with-ft ulfm`; before patch 0022 the
# first exited 243 before starting and `--tune ft-mpi` could not find its file.
kill_survived_with() { # mpirun options that turn fault tolerance on
    local log=$logs/doors-kill-survived$(echo "$*" | tr ' /' '__').log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "$@" -np 2 "$build/test/mpi/ft_kill_notice"
    cat "$log"
    echo "mpirun exit code $rc"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "survivor got MPI_ERR_PROC_FAILED" "$log" \
        && grep -aq "ft_kill_notice: np 2: PASS" "$log"
}
check doors/with-ft-ulfm-survives-a-kill kill_survived_with --with-ft ulfm
check doors/am-ft-enable-mpi-survives-a-kill kill_survived_with -am ft-enable-mpi
check doors/amca-ft-enable-mpi-survives-a-kill kill_survived_with --amca ft-enable-mpi
check doors/tune-ft-enable-mpi-survives-a-kill kill_survived_with --tune ft-enable-mpi
check doors/tune-ft-mpi-survives-a-kill kill_survived_with --tune ft-mpi
check doors/am-ft-enable-mpi-over-dr2-survives-a-kill kill_survived_with -am ft-enable-mpi \
    --mca pml dr2
# Without any of them, the kill ends the job: the survivor never reports.
kill_ends_the_job_without_ft() {
    local log=$logs/doors-kill-without-ft.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" -np 2 "$build/test/mpi/ft_kill_notice"
    cat "$log"
    echo "mpirun exit code $rc"
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && ! grep -aq "survivor got" "$log"
}
check doors/without-ft-a-kill-ends-the-job kill_ends_the_job_without_ft
