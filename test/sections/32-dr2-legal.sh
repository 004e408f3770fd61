# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ...).
# pml/dr2 and legal programs under ULFM: receive paths across the failure of a process
# that takes no part in them, revoked and freed communicators (issue 45).

echo "== pml/dr2: legal programs under ULFM (timeout ${timeout_s}s each)"
# Receives across the failure of an unrelated process (dr2_ulfm_recv failure: one process
# killed per scenario). An MPI_Recv(ANY_SOURCE) matched to a live sender's rendezvous
# completes with it and the sender's send completes (before: MPIX_ERR_PROC_FAILED, the
# message thrown away, the send never completed); MPI_Wait on such an MPI_Irecv and a
# persistent ANY_SOURCE receive likewise (before: MPIX_ERR_PROC_FAILED_PENDING); unmatched
# ANY_SOURCE receives and probes fail as ULFM says and match again once acknowledged.
mpi dr2/ulfm-recv-unrelated-failure 11 pass test/mpi/dr2_ulfm_recv "${DR2[@]}" "${FT[@]}" -- failure
# Receive paths on a communicator revoked under them (posted and matched receives, probes,
# a message taken by MPI_Mprobe, persistent requests, cancel) and on one freed while they
# are pending (MPI: they complete normally): dr2_revoked_freed. A message taken by
# MPI_Mprobe now holds its communicator until MPI_Mrecv (freed before: use after free; this
# test passed 2 of 2 without that hold, the freed memory not yet reused).
# Over ob1 the freed ones pass; of the revoked ones, a receive cancelled after the revoke
# ends in MPI_SUCCESS, neither cancelled nor received (ob1's defect, docs/dr2-ulfm.md).
mpi dr2/revoked-receive-paths 2 pass test/mpi/dr2_revoked_freed "${DR2[@]}" "${FT[@]}" -- revoke
mpi dr2/freed-receive-paths 2 pass test/mpi/dr2_revoked_freed "${DR2[@]}" -- freed
# Context ids reused (dr2_cid_reuse): messages of a communicator that rank 1 revoked and
# freed unreceived are still being resent (30 % injected loss) when the next communicator
# takes its context id; they must be dropped there, never received on the new one (before:
# one was received in place of the new one's message, eager run 2 of 2), and a rendezvous
# among them must be answered so that its send ends (before: it waited for ever, 2 of 2).
# Each run checks that such late messages arrived (pml_dr2_stale_msgs).
CID_REUSE=(--mca pml_dr2_inject_drop 0.3 --mca pml_dr2_ack_timeout_us 2000
           --mca pml_dr2_ack_timeout_max_us 20000)
mpi dr2/cid-reuse-eager 2 pass test/mpi/dr2_cid_reuse "${DR2[@]}" "${FT[@]}" "${CID_REUSE[@]}" \
    -- 50 8 12 expect-stale
mpi dr2/cid-reuse-rndv 2 pass test/mpi/dr2_cid_reuse "${DR2[@]}" "${FT[@]}" "${CID_REUSE[@]}" \
    -- 20 8 65536 expect-stale
# Injected corruption is there to be caught: under pml_dr2_checksum auto it puts payload
# checksums on sm and self too, so dr2_stress's messages (up to 2 MiB) arrive intact
# (before: delivered with the injected bit flips, 2 runs of 2), and no warning is printed;
# under none the damage is delivered and every process says so (show_help, aggregated
# by mpirun into one message).
dr2_inject_corrupt() { # POLICY WARNING(yes|no) PROGRAM ARGS...
    local policy=$1 warn=$2 prog=$3 rc timed_out log=$logs/dr2-inject-corrupt-$1-run.log
    shift 3
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" --mca btl sm,self \
        --mca pml_dr2_checksum "$policy" --mca pml_dr2_inject_corrupt 0.02 -np 2 "$build/$prog" "$@"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" || return 1
    if [ "$warn" = yes ]; then
        grep -aq "pml/dr2 injects corruption (pml_dr2_inject_corrupt 0.02) while payload checksums" "$log"
    else
        ! grep -aq "pml/dr2 injects corruption" "$log"
    fi
}
check dr2/inject-corrupt-auto-checks-sm dr2_inject_corrupt auto no test/mpi/dr2_stress 10 expect-faults
check dr2/inject-corrupt-none-warns dr2_inject_corrupt none yes test/mpi/dr2_ack_ride corrupt
