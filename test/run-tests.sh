#!/usr/bin/env bash
# ompi-resilience test runner: unit tests (no MPI runtime) and MPI tests under mpirun,
# each with a timeout. A hang is a failure that names the test and the ranks that never
# finished. Ends with the line "N passed, N failed, N skipped".
#
# Usage: test/run-tests.sh BUILD_DIR [NAME_FILTER]
# Needs OMPI_PREFIX (the Open MPI install) in the environment; BUILD_DIR is a configured
# and built tree whose `make install` went to BUILD_DIR/stage (scripts/test.sh does all that).
set -u
build=$(cd "${1:?usage: test/run-tests.sh BUILD_DIR [FILTER]}" && pwd)
filter=${2:-}
: "${OMPI_PREFIX:?set OMPI_PREFIX to the Open MPI install (scripts/test.sh does)}"
timeout_s=${OMPIRES_TEST_TIMEOUT:-120}
logs=$build/test-logs
rm -rf "$logs"
mkdir -p "$logs"

passed=0 failed=0 skipped=0
failures=()

# Components are found in our staging directory besides Open MPI's own.
component_path="$OMPI_PREFIX/lib/openmpi:$build/stage/lib/openmpi"
# PMIx reads the component path too and complains about every non-PMIx file in it.
export PMIX_MCA_mca_base_component_show_load_errors=0
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe
        --mca mca_base_component_path "$component_path")

# run_timed SECONDS LOG CMD...: run CMD with a timeout, output to LOG; sets $rc and
# $timed_out. mpirun's own exit code can be 137 (a rank was SIGKILLed on purpose), so a
# hang is told by timeout's message, not by the exit code.
run_timed() {
    local limit=$1 log=$2
    shift 2
    timeout --verbose -k 10 "$limit" "$@" </dev/null >"$log" 2>&1
    rc=$?
    timed_out=0
    if grep -aq "^timeout: sending signal" "$log"; then timed_out=1; fi
}

selected() { [ -z "$filter" ] || [[ "$1" == *"$filter"* ]]; }
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() {
    failed=$((failed + 1)); failures+=("$1")
    printf 'FAIL  %s: %s\n' "$1" "$2"
    [ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/      | /' "$3" | tail -n 25
}
skip() { skipped=$((skipped + 1)); printf 'SKIP  %s: %s\n' "$1" "$2"; }

# Ranks of an np-process run that did not print "mpitest: rank R done".
missing_ranks() {
    local log=$1 np=$2 r missing=""
    for ((r = 0; r < np; r++)); do
        grep -aq "^mpitest: rank $r done" "$log" || missing="$missing $r"
    done
    echo "${missing# }"
}

# unit NAME: a unit-test binary printing "ok X" / "not ok X"; each case counts.
unit() {
    local name=$1 bin=$build/test/unit/$1 log=$logs/unit-$1.log
    selected "$name" || return 0
    if [ ! -x "$bin" ]; then fail "unit/$name" "not built"; return; fi
    timeout -k 5 "$timeout_s" "$bin" >"$log" 2>&1
    local rc=$?
    while read -r line; do
        case "$line" in
            "ok "*) pass "unit/$name/${line#ok }" ;;
            "not ok "*) fail "unit/$name/${line#not ok }" "" ;;
        esac
    done <"$log"
    if [ $rc -ne 0 ] && ! grep -q '^not ok' "$log"; then
        fail "unit/$name" "exit code $rc" "$log"
    fi
    if command -v valgrind >/dev/null 2>&1; then
        if OMPIRES_UNIT_QUICK=1 timeout -k 5 "$timeout_s" valgrind -q --error-exitcode=99 --leak-check=full \
               "$bin" >"$log.valgrind" 2>&1; then
            pass "unit/$name/valgrind-clean"
        else
            fail "unit/$name/valgrind-clean" "valgrind reported errors" "$log.valgrind"
        fi
    fi
}

# mpi LABEL NP EXPECT PROGRAM [mpirun options...] -- [program args...]
# EXPECT: pass (exit 0, "PASS" verdict) or "abort:TEXT" (non-zero exit, TEXT in the output).
mpi() {
    local label=$1 np=$2 expect=$3 prog=$4
    shift 4
    local opts=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    local name="mpi/$label/np$np"
    selected "$name" || return 0
    local bin=$build/$prog log=$logs/$(echo "$label-np$np" | tr '/ ' '__').log
    if [ ! -x "$bin" ]; then fail "$name" "$prog not built"; return; fi
    local rc timed_out
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${opts[@]}" -np "$np" "$bin" "${args[@]}"
    if [ $timed_out = 1 ]; then
        fail "$name" "HANG: no result after ${timeout_s}s; ranks that never finished: $(missing_ranks "$log" "$np")" "$log"
        return
    fi
    case "$expect" in
        pass)
            if [ $rc -eq 0 ] && grep -aq "^mpitest .*: np $np: PASS" "$log"; then
                pass "$name"
            else
                fail "$name" "exit code $rc" "$log"
            fi ;;
        abort:*)
            if [ $rc -ne 0 ] && grep -aq "${expect#abort:}" "$log"; then
                pass "$name"
            else
                fail "$name" "expected an abort saying '${expect#abort:}', got exit code $rc" "$log"
            fi ;;
    esac
}

# check NAME FUNCTION [ARGS...]: a check written as a shell function that passes when it
# returns 0; the function puts its own timeouts on what it runs.
check() {
    local name=$1
    shift
    selected "$name" || return 0
    local log=$logs/$(echo "$name" | tr '/ ' '__').log
    if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "failed" "$log"; fi
}

ompi_info_lists_ftrabit() {
    local out
    # ompi_info takes the component path from the environment, not from --mca
    out=$(OMPI_MCA_mca_base_component_path="$component_path" timeout -k 5 "$timeout_s" \
          "$OMPI_PREFIX/bin/ompi_info" --param coll ftrabit --level 9) || return 1
    echo "$out"
    for p in priority verbose allreduce_algorithm allreduce_rsag_min_bytes bcast_algorithm \
             bcast_pipeline_min_bytes bcast_segment_bytes result_replicas result_pool_mib spares; do
        grep -q "parameter \"coll_ftrabit_$p\"" <<<"$out" || { echo "missing coll_ftrabit_$p"; return 1; }
    done
}

invalid_segment_size_is_refused() {
    # The component refuses to open with a clear message; the job still runs on tuned.
    local out=$logs/invalid-segment-size.out rc
    timeout -k 10 "$timeout_s" "${mpirun[@]}" --mca coll_ftrabit_bcast_segment_bytes 0 -np 2 \
        "$build/test/mpi/coll_selection" excluded </dev/null >"$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] && grep -aq "coll_ftrabit_bcast_segment_bytes has an invalid value" "$out"
}

invalid_pool_bound_is_refused() {
    local out=$logs/invalid-pool-bound.out rc
    timeout -k 10 "$timeout_s" "${mpirun[@]}" --mca coll_ftrabit_result_pool_mib -2 -np 2 \
        "$build/test/mpi/coll_selection" excluded </dev/null >"$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] && grep -aq "coll_ftrabit_result_pool_mib has an invalid value" "$out"
}

echo "== unit tests"
unit test_schedule
unit test_ftrabit_cache
unit test_ftrabit_pool
unit test_ftrabit_bootstrap
unit test_ftrabit_recovery
unit test_ftrabit_spare_plan
unit test_dr2_crc
unit test_dr2_hdr
unit test_dr2_window
unit test_dr2_rxcheck
unit test_dr2_copychoice

echo "== coll/ftrabit under mpirun (timeout ${timeout_s}s each)"
FT=(--with-ft ulfm)
for np in 1 2 3 4 5 8; do mpi allreduce "$np" pass test/mpi/coll_allreduce "${FT[@]}"; done
mpi allreduce/no-ulfm 4 pass test/mpi/coll_allreduce
mpi allreduce/recursive-doubling 3 pass test/mpi/coll_allreduce "${FT[@]}" \
    --mca coll_ftrabit_allreduce_algorithm recursive_doubling
mpi allreduce/reduce-scatter-allgather 6 pass test/mpi/coll_allreduce "${FT[@]}" \
    --mca coll_ftrabit_allreduce_algorithm reduce_scatter_allgather
for np in 1 2 3 4 7 8; do mpi bcast "$np" pass test/mpi/coll_bcast "${FT[@]}"; done
mpi bcast/pipeline-small-segments 5 pass test/mpi/coll_bcast "${FT[@]}" \
    --mca coll_ftrabit_bcast_algorithm pipeline --mca coll_ftrabit_bcast_segment_bytes 1000
mpi bcast/binomial 4 pass test/mpi/coll_bcast "${FT[@]}" --mca coll_ftrabit_bcast_algorithm binomial
for np in 1 2 3 5; do mpi selection "$np" pass test/mpi/coll_selection "${FT[@]}"; done
mpi selection/excluded 2 pass test/mpi/coll_selection "${FT[@]}" --mca coll ^ftrabit -- excluded
for alg in recursive_doubling reduce_scatter_allgather; do
    mpi "determinism/$alg" 4 pass test/mpi/coll_determinism "${FT[@]}" \
        -x "OMPI_MCA_coll_ftrabit_allreduce_algorithm=$alg"
done
mpi determinism 3 pass test/mpi/coll_determinism "${FT[@]}"
mpi determinism 8 pass test/mpi/coll_determinism "${FT[@]}"
for np in 2 3 4 8; do mpi mismatch "$np" pass test/mpi/coll_mismatch "${FT[@]}"; done
mpi mismatch/fatal 3 "abort:called with different arguments on different ranks" \
    test/mpi/coll_mismatch -- fatal

# ---- fault tests: real SIGKILLs under ULFM ------------------------------------------------
# ft_run PROG LABEL NP KILLS [mpirun options...] [-- program options...]: examples/PROG
# (or PROG under the build directory when it names a directory) with the given --kill specs
# must end with the same fingerprint as a run without failures (respawn: a replacement
# must have run), or, under the shrink policy, with the same fingerprint as a second run
# with the same kills (the dead ranks' data is gone, so only determinism can be checked).
# With --mca coll_ftrabit_spares S among the options, NP counts the spares too, and the
# reference is the plain run on NP-S ranks without spares: spares must not change a result.
declare -A ft_reference
ft_fingerprint() { sed -n 's/^final .* fingerprint \([0-9a-f]*\).*/\1/p' "$1" | head -n 1; }
ft_launch() { # ft_launch PROG LOG NP KILLS [mpirun options...] [-- program options...]
    local prog=$1 log=$2 np=$3 kills=$4
    shift 4
    local opts=() args=() marks="" bin=$build/examples/$prog
    [[ "$prog" == */* ]] && bin=$build/$prog
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    if [ "$prog" = ftr_kmeans ]; then
        marks=$(mktemp -d)
        args+=(--kill-marks "$marks")
    fi
    for k in $kills; do args+=(--kill "$k"); done
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm "${opts[@]}" -np "$np" \
        "$bin" "${args[@]}"
    [ -n "$marks" ] && rm -rf "$marks"
    return 0
}
ft_run() {
    local prog=$1 label=$2 np=$3 kills=$4
    shift 4
    local name="ft/$label/np$np"
    selected "$name" || return 0
    local log=$logs/ft-$(echo "$label-np$np" | tr '/ ' '__').log
    local shrink=0 rc timed_out spares=0 ref_opts=()
    [[ "$*" == *"recovery shrink"* ]] && shrink=1
    local opts=("$@") i
    for ((i = 0; i < ${#opts[@]}; i++)); do # the reference runs without spares
        if [ "${opts[i]}" = --mca ] && [[ "${opts[i + 1]:-}" == coll_ftrabit_*spare* ]]; then
            [ "${opts[i + 1]}" = coll_ftrabit_spares ] && spares=${opts[i + 2]}
            i=$((i + 2))
        else
            ref_opts+=("${opts[i]}")
        fi
    done
    local app=$((np - spares))
    local ref_key="$prog $app ${ref_opts[*]}"
    [ $shrink = 1 ] && ref_key="$ref_key $kills"
    if [ -z "${ft_reference[$ref_key]:-}" ]; then
        if [ $shrink = 1 ]; then
            ft_launch "$prog" "$log.reference" "$app" "$kills" "${ref_opts[@]}"
        else
            ft_launch "$prog" "$log.reference" "$app" "" "${ref_opts[@]}"
        fi
        ft_reference[$ref_key]=$(ft_fingerprint "$log.reference")
    fi
    local reference=${ft_reference[$ref_key]}
    if [ -z "$reference" ]; then
        fail "$name" "the reference run did not finish" "$log.reference"
        return
    fi
    ft_launch "$prog" "$log" "$np" "$kills" "$@"
    local got
    got=$(ft_fingerprint "$log")
    if [ $timed_out = 1 ]; then
        fail "$name" "HANG after ${ft_timeout_s}s (kills: $kills)" "$log"
    elif [ "$got" != "$reference" ]; then
        fail "$name" "final fingerprint ${got:-missing}, reference run gave $reference (exit $rc)" "$log"
    elif [ $shrink = 0 ] && [ -n "$kills" ] && ! grep -Eq "replacement starts|spare takes over" "$log"; then
        fail "$name" "no replacement process ran" "$log"
    elif [ "$spares" -gt 0 ] && ! grep -q "on $app ranks" "$log"; then
        fail "$name" "the job did not finish on $app ranks" "$log"
    elif [ -n "${ft_expect:-}" ] && [ "$(ft_takeovers "$log")" != "$ft_expect" ]; then
        fail "$name" "expected $ft_expect, got $(ft_takeovers "$log")" "$log"
    elif [ -z "$kills" ] && [[ "$*" != *test_kill* ]] && [ $rc -ne 0 ]; then
        fail "$name" "no failure, but mpirun exited with $rc" "$log"
    elif [ $shrink = 1 ] && ! grep -q "on $((np - $(wc -w <<<"$kills"))) ranks" "$log"; then
        fail "$name" "the survivors did not finish on $((np - $(wc -w <<<"$kills"))) ranks" "$log"
    else
        pass "$name"
    fi
}
ft() { ft_run ftr_kmeans "$@"; }
# "S spare(s), R respawned": the replacements of a run, by origin.
ft_takeovers() {
    echo "$(grep -c "spare takes over" "$1") spare(s), $(grep -c "replacement starts" "$1") respawned"
}
# ft_spares LABEL APP SPARES KILLS TAKEOVERS RESPAWNS [mpirun options...]: ftr_kmeans on APP
# ranks plus SPARES warm spares; exactly TAKEOVERS spares and RESPAWNS spawned processes
# must have replaced dead ranks (a waiting spare costs nothing, so spares go first).
ft_spares() { ft_spares_run ftr_kmeans "$@"; }
ft_spares_run() {
    local prog=$1 label=$2 app=$3 spares=$4 kills=$5
    ft_expect="$6 spare(s), $7 respawned"
    shift 7
    ft_run "$prog" "spares/$label" "$((app + spares))" "$kills" \
        --mca coll_ftrabit_spares "$spares" "$@"
    ft_expect=
}
ft_timeout_s=${OMPIRES_FT_TIMEOUT:-60}

# Both keepers of some results die together: a clear message and the end of the job. The
# survivors leave only once they saw both replacements gone (ftrabit_rebuild.c: prterun can
# hang when the original job ends while the replacements' job is being ended). At least one
# survivor must say so: the first survivor to exit non-zero makes prterun end the others,
# which may not have printed their line yet (1 run in about 6 here lost one of the four).
lost_results_end_the_job() {
    local log=$logs/ft-lost-results.log rc timed_out
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_result_replicas 2 --mca coll_ftrabit_verbose 1 \
        -np 6 "$build/examples/ftr_kmeans" --kill 2:8 --kill 3:8
    [ $timed_out = 0 ] && [ $rc -ne 0 ] \
        && grep -q "recovery is not possible: results needed by a recovering rank" "$log" \
        && [ "$(grep -o "2 of 2 replacement(s) seen gone" "$log" | wc -l)" -ge 1 ]
}

# A replacement that never joins: the survivors' watchdog must end the job with a message.
recovery_timeout_ends_the_job() {
    local log=$logs/ft-recovery-timeout.log rc timed_out
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_recovery_timeout 5 -np 3 "$build/examples/ftr_kmeans" \
        --kill 1:3 --replacement-stalls 20
    [ $timed_out = 0 ] && grep -q "recovery did not finish within coll_ftrabit_recovery_timeout" "$log"
}

# A waiting spare sleeps between tests for news (ftrabit_spares.c): over a run of several
# seconds its CPU time (all its threads, getrusage) must stay under 5% of the time it
# waited. A spare blocked in MPI instead polls a core for the whole run.
spare_waits_without_cpu() {
    local log=$logs/ft-spares-cpu.log rc timed_out
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm --mca coll_ftrabit_spares 1 \
        --mca coll_ftrabit_verbose 1 -np 3 "$build/examples/ftr_kmeans" --iterations 2000 \
        --points 100000
    cat "$log"
    [ $timed_out = 0 ] && [ $rc -eq 0 ] || return 1
    grep "spare released by FTR_Finalize after" "$log" | awk '
        { for (i = 1; i <= NF; i++) { if ($i == "after") wait = $(i + 1); if ($i == "waiting,") cpu = $(i + 1) } }
        END { printf "spare waited %s s, used %s s of CPU\n", wait, cpu
              exit !(NR == 1 && wait >= 1 && cpu < 0.05 * wait) }'
}

# Recovery impossible while a spare still waits (both keepers of some results die; two of
# three spares take their ranks): the job ends with the message, the last spare included.
spares_lost_results_end_the_job() {
    local log=$logs/ft-spares-lost-results.log rc timed_out
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm --mca coll_ftrabit_spares 3 \
        --mca coll_ftrabit_result_replicas 2 -np 9 "$build/examples/ftr_kmeans" \
        --kill 2:8 --kill 3:8
    cat "$log"
    [ $timed_out = 0 ] && [ $rc -ne 0 ] \
        && grep -q "recovery is not possible: results needed by a recovering rank" "$log"
}

# More spares than the job has processes: a clear message on every process, no hang.
spares_refused_without_room() {
    local log=$logs/ft-spares-refused.log rc timed_out
    run_timed "$ft_timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm --mca coll_ftrabit_spares 2 \
        -np 2 "$build/examples/ftr_kmeans"
    cat "$log"
    [ $timed_out = 0 ] && [ $rc -ne 0 ] \
        && grep -q "coll_ftrabit_spares 2: the job has no process left for the application" "$log"
}

# Shrink, rank 1 dies right before the last broadcast: the root has finished it and printed
# the result (of all four ranks' data: the failure-free one) when the others recover in
# FTR_Finalize's agreement; the job must end there, not hang.
last_collective_shrink() {
    local log=$logs/ft-last-collective-shrink.log rc timed_out reference
    ft_launch ftr_kmeans "$log.reference" 4 "" -- --iterations 32
    reference=$(ft_fingerprint "$log.reference")
    ft_launch ftr_kmeans "$log" 4 "1:31:before-bcast" --mca coll_ftrabit_recovery shrink \
        -- --iterations 32
    cat "$log"
    [ $timed_out = 0 ] && [ -n "$reference" ] && [ "$(ft_fingerprint "$log")" = "$reference" ] \
        && grep -q "recovered from a process failure .*(shrink; 3 ranks" "$log"
}

echo "== coll/ftrabit fault tolerance (FTR_* API), real SIGKILL (timeout ${ft_timeout_s}s each)"
ft kill-rank1-after-checkpoint 4 "1:7"
ft kill-rank0-before-first-checkpoint 4 "0:3"
ft kill-after-allreduce 4 "2:8:after-allreduce"
ft kill-before-bcast 4 "3:12:before-bcast"
ft kill-before-checkpoint 4 "1:9:before-checkpoint"
ft kill-two-adjacent-at-once 4 "1:7 2:7"
ft kill-same-rank-twice 4 "1:7 1:13"
ft kill-rank0-after-checkpoint 4 "0:12"
ft kill-rank0-and-its-neighbour-before-checkpoint 4 "0:9:before-checkpoint 1:9:before-checkpoint"
ft kill-three-at-once-then-one-more 10 "0:7 4:7 9:7 1:8"
# A rebuild inside a rebuild: rank 3 dies while the survivors recover from rank 0's second
# death, sometimes while rank 0's replacement is still catching up.
ft kill-rank0-twice-and-rank3 4 "0:3 0:11:after-allreduce 3:11:before-bcast"
# The same, on purpose: a survivor dies in the catch-up exchange a replacement is part of;
# the replacement stays for the next rebuild instead of leaving.
ft kill-during-catch-up 4 "1:7" --mca coll_ftrabit_test_kill_in_catch_up 2
ft kill-during-catch-up-of-rank0 5 "0:9:after-allreduce" --mca coll_ftrabit_test_kill_in_catch_up 4
# The same with results of 17 KiB (rendezvous on sm): transfers between live ranks that
# stopped receiving must not wait on each other.
ft kill-during-catch-up-large-results 4 "1:7" --mca coll_ftrabit_test_kill_in_catch_up 2 \
    -- --clusters 200 --dims 10 --points 4000
# Everything over TCP: survivors writing to the dead rank must get EPIPE, not SIGPIPE.
ft kill-two-over-tcp 4 "1:7 2:7:after-allreduce" --mca btl tcp,self
ft kill-during-recovery 4 "1:7" --mca coll_ftrabit_test_kill_in_recovery 2
ft kill-during-recovery-of-rank0 5 "0:12:after-allreduce" --mca coll_ftrabit_test_kill_in_recovery 4
ft result-replicas-2 6 "1:8 4:8" --mca coll_ftrabit_result_replicas 2
# 140 collectives since the (only) checkpoint, the start: the replacement's results come in
# ~70 runs from alternating keepers, more than the transfer table used to hold.
ft result-replicas-2/140-collectives-behind 6 "1:70" --mca coll_ftrabit_result_replicas 2 \
    -- --iterations 80 --checkpoint-every 100
ft shrink/kill-one 4 "1:7" --mca coll_ftrabit_recovery shrink
ft shrink/kill-rank0-then-one 5 "0:4 2:9:before-bcast" --mca coll_ftrabit_recovery shrink
# The root finishes its broadcast and reaches FTR_Checkpoint's agreement while the others
# recover: recovery must meet it there (ftrabit_recover's agreement), or both sides hang.
ft shrink/kill-rank0-then-two 5 "0:4 2:9:before-bcast 3:9:before-bcast" \
    --mca coll_ftrabit_recovery shrink
ft kill-two-before-bcast-then-checkpoint 5 "2:9:before-bcast 3:9:before-bcast"
# The application keeps the communicator FTR_Init gave it (MPI allows it): a replacement
# used to wait for ever in MPI_Finalize, disconnecting from the job that spawned it.
ft keep-comm/kill-rank1 4 "1:7" -- --keep-comm
ft keep-comm/kill-two-in-sequence 4 "2:3 1:13:after-allreduce" -- --keep-comm
# A failure right before the job's last collective, no checkpoint after it (32 iterations,
# checkpoints every 5): ranks that completed it meet the others in FTR_Finalize's agreement
# and recover with them (they used to be gone into MPI_Finalize while the others waited);
# rank 0 dying there must still print the result.
ft last-collective/kill-rank1-before-bcast 4 "1:31:before-bcast" -- --iterations 32
ft last-collective/kill-rank0-before-bcast 4 "0:31:before-bcast" -- --iterations 32
ft last-collective/kill-rank3-after-allreduce 4 "3:31:after-allreduce" -- --iterations 32 \
    --keep-comm
check ft/last-collective/shrink-kill-rank1-before-bcast/np4 last_collective_shrink
# Datatypes whose elements are not packed end to end (MPI_DOUBLE_INT with MINLOC, a resized
# int, a strided vector) replayed to a replacement, from the cache and from the bootstrap
# table (kill before the first checkpoint): cached results used to be copied as if the
# elements were true-extent apart.
ft_run test/mpi/ft_types types/kill-rank1 4 "1:7"
ft_run test/mpi/ft_types types/kill-rank0-before-first-checkpoint 4 "0:3"
ft_run test/mpi/ft_types types/kill-two-at-once 5 "2:12 3:12"
ft_run test/mpi/ft_types types/result-replicas-2 6 "1:8" --mca coll_ftrabit_result_replicas 2
# Shrink renumbers the survivors: a broadcast retried after a failure inside it must use
# its root's new number (the pipeline's first hop dies: nobody received anything), and a
# root that died there must give every rank the same clear error, not another rank's data.
ft_run test/mpi/ft_types types/shrink-bcast-root-renumbered 4 "0:7:bcast" \
    --mca coll_ftrabit_recovery shrink --mca coll_ftrabit_bcast_algorithm pipeline
shrink_bcast_root_died() {
    local log=$logs/ft-types-shrink-bcast-root-died.log rc timed_out
    ft_launch test/mpi/ft_types "$log" 4 "1:9:bcast" --mca coll_ftrabit_recovery shrink
    cat "$log"
    [ $timed_out = 0 ] && ! grep -q "broadcast value" "$log" \
        && grep -q "its root died before any survivor received the data" "$log" \
        && grep -q "padded Bcast failed" "$log" # the first to exit may end the others
}
check ft/types/shrink-bcast-root-died/np4 shrink_bcast_root_died
ft_run ulfm_allreduce plain-ulfm/kill-one 4 "2:6"
ft_run ulfm_allreduce plain-ulfm/kill-rank0-and-two-more 5 "0:3 3:9 4:9"
ft_run ulfm_allreduce plain-ulfm/shrink 4 "1:6" --mca coll_ftrabit_recovery shrink
# A failure inside FTR_Checkpoint when the collectives are plain MPI ones: the survivors used
# to retry the checkpoint and wait in its ring exchange while the replacement replayed
# plain collectives from the previous version; now the checkpoint returns a process failure
# and everybody rolls back.
ft_run ulfm_allreduce plain-ulfm/kill-in-checkpoint 4 "1:7:checkpoint"
ft_run ulfm_allreduce plain-ulfm/kill-two-in-checkpoint 4 "2:7:checkpoint 1:7:checkpoint"
ft_run ulfm_allreduce plain-ulfm/kill-in-first-checkpoint 4 "3:3:checkpoint"
# Warm spares (coll_ftrabit_spares): a spare takes each dead rank while any is left, then
# respawn; every run bit-identical to the plain run on the application's ranks.
ft_spares kill-one 4 2 "1:7" 1 0
ft_spares kill-two-at-once 4 2 "1:7 2:7" 2 0
ft_spares kill-three-with-two-spares 6 2 "1:7 3:7 5:7" 2 1
ft_spares kill-rank0 4 2 "0:7" 1 0
ft_spares kill-rank0-before-first-checkpoint 4 2 "0:3" 1 0
ft_spares kill-same-rank-twice 4 2 "1:7 1:13" 2 0
ft_spares spare-dies-waiting-then-rank1 4 2 "1:7" 1 0 --mca coll_ftrabit_test_kill_spare 4
ft_spares spares-run-out-then-respawn 4 1 "1:7 3:12" 1 1
ft_spares kill-in-the-last-iteration 4 2 "2:29:before-bcast" 1 0
ft_spares unused 4 2 "" 0 0
ft_spares spare-dies-unused 4 2 "" 0 0 --mca coll_ftrabit_test_kill_spare 5
# A survivor dies right after the standby round, or in the catch-up a spare is part of: the
# next round gives its rank to the other spare; with one spare, the second rank is respawned
# from the communicator of the first round (survivors and the spare share no older one).
ft_spares kill-during-recovery 4 2 "1:7" 2 0 --mca coll_ftrabit_test_kill_in_recovery 2
ft_spares kill-during-catch-up 4 2 "1:7" 2 0 --mca coll_ftrabit_test_kill_in_catch_up 2
ft_spares kill-during-catch-up-last-spare 4 1 "1:7" 1 1 --mca coll_ftrabit_test_kill_in_catch_up 2
# An application that recovers with plain ULFM calls and FTR_Comm_recover.
ft_spares_run ulfm_allreduce plain-ulfm-kill-rank0-and-two-more 5 2 "0:3 3:9 4:9" 2 1
check ft/spares/wait-costs-no-cpu spare_waits_without_cpu
check ft/spares/refused-without-room spares_refused_without_room
check ft/spares/lost-results-end-the-job spares_lost_results_end_the_job
check ft/recovery-timeout-ends-the-job recovery_timeout_ends_the_job
check ft/lost-results-end-the-job lost_results_end_the_job
# Every kind of cached result (contiguous small and 1 MiB, strided, broadcast) checked
# exactly, kept on the right ranks, replayed to a replacement; steady state holds the same
# memory at every checkpoint.
mpi ft/results/memory 4 pass test/mpi/ft_results --with-ft ulfm -- --memory 0
mpi ft/results/memory-replicas-2 4 pass test/mpi/ft_results --with-ft ulfm \
    --mca coll_ftrabit_result_replicas 2 -- --memory 2
mpi ft/results/kill-rank1 4 pass test/mpi/ft_results --with-ft ulfm -- --kill 1:6
mpi ft/results/kill-rank0-replicas-2 4 pass test/mpi/ft_results --with-ft ulfm \
    --mca coll_ftrabit_result_replicas 2 -- --kill 0:6
mpi ft/results/kill-rank2 3 pass test/mpi/ft_results --with-ft ulfm -- --kill 2:9
mpi ft/bootstrap-replayed-in-reverse-order 4 pass test/mpi/ft_bootstrap --with-ft ulfm
mpi ft/bootstrap-mismatch-refused-then-served 4 pass test/mpi/ft_bootstrap --with-ft ulfm \
    -- mismatch
for victim in 3 0; do
    mpi "ft/uniform/victim$victim" 4 pass test/mpi/ft_uniform --with-ft ulfm \
        --mca coll_ftrabit_uniform true -- "$victim"
done
mpi ft/uniform/np6 6 pass test/mpi/ft_uniform --with-ft ulfm --mca coll_ftrabit_uniform true -- 2

echo "== clean exits after failures (Open MPI patch 0001, docs/finalize-after-failures.md)"
for mode in three single continue; do
    mpi "ft/finalize-after-kills/$mode" 4 pass test/mpi/ft_finalize_after_kills --with-ft ulfm \
        -- "$mode" hold
done

echo "== pml/dr2 (timeout ${timeout_s}s each)"
DR2=(--mca pml dr2)
DR2_TCP=(--mca pml dr2 --mca btl tcp,self)
FAULTS1=(--mca pml_dr2_inject_drop 0.01 --mca pml_dr2_inject_corrupt 0.01 --mca pml_dr2_inject_dup 0.01)
FAULTS5=(--mca pml_dr2_inject_drop 0.05 --mca pml_dr2_inject_corrupt 0.01 --mca pml_dr2_inject_dup 0.01)
for np in 2 3 4; do mpi dr2/p2p "$np" pass test/mpi/dr2_p2p "${DR2[@]}"; done
mpi dr2/p2p-tcp 2 pass test/mpi/dr2_p2p "${DR2_TCP[@]}"
mpi dr2/p2p-faults5 3 pass test/mpi/dr2_p2p "${DR2[@]}" "${FAULTS5[@]}"
# pml_dr2_send_depth: the sender waits while the BTL holds that many of its segments;
# at 1 and 2 every fragment waits for the one before it to be taken, with and without loss
mpi dr2/p2p-send-depth-1 2 pass test/mpi/dr2_p2p "${DR2[@]}" --mca pml_dr2_send_depth 1
mpi dr2/stress-faults5-send-depth-2 3 pass test/mpi/dr2_stress "${DR2[@]}" "${FAULTS5[@]}" \
    --mca pml_dr2_send_depth 2 -- 10 expect-faults
# a RNDV carries the rest that whole fragments leave, if it fits the BTL's eager send
DR2_RNDV=(--mca pml dr2 --mca pml_dr2_frag_size 8192 --mca btl_sm_eager_limit 4096)
mpi dr2/rndv-data 2 pass test/mpi/dr2_rndv "${DR2_RNDV[@]}"
mpi dr2/rndv-data-faults5 2 pass test/mpi/dr2_rndv "${DR2_RNDV[@]}" "${FAULTS5[@]}"
# the eager limit follows the BTL (pml_dr2_eager_limit 0): at least 16 KiB, 64 KiB on tcp;
# a send is eager if it completes before the receiver has matched it (dr2_eager)
mpi dr2/eager-limit-sm-16k 2 pass test/mpi/dr2_eager "${DR2[@]}" -- 16384 eager
mpi dr2/eager-limit-sm-32k 2 pass test/mpi/dr2_eager "${DR2[@]}" -- 32768 rendezvous
mpi dr2/eager-limit-tcp-64k 2 pass test/mpi/dr2_eager "${DR2_TCP[@]}" -- 65536 eager
mpi dr2/eager-limit-tcp-128k 2 pass test/mpi/dr2_eager "${DR2_TCP[@]}" -- 131072 rendezvous
mpi dr2/eager-limit-set-sm-64k 2 pass test/mpi/dr2_eager "${DR2[@]}" --mca pml_dr2_eager_limit 65536 \
    -- 65536 eager
mpi dr2/eager-limit-set-tcp-8k 2 pass test/mpi/dr2_eager "${DR2_TCP[@]}" --mca pml_dr2_eager_limit 8192 \
    -- 16384 rendezvous
mpi dr2/p2p-checksum-none 2 pass test/mpi/dr2_p2p "${DR2[@]}" --mca pml_dr2_checksum none
# every CRC32C implementation gives the same wire checksum (auto may be vpclmul here)
mpi dr2/p2p-crc32c-sse42 2 pass test/mpi/dr2_p2p "${DR2[@]}" --mca pml_dr2_crc32c_impl sse42
mpi dr2/p2p-crc32c-portable 2 pass test/mpi/dr2_p2p "${DR2[@]}" \
    --mca pml_dr2_crc32c_impl portable
# Both ways of copying a rendezvous payload, and auto, which times them (pml_dr2_copychoice.h):
# dr2_p2p passes, and the counters at MPI_Finalize show the way taken: fused copies nothing
# separately, separate does, auto completes at least one measurement on each rank (dr2_p2p
# sends messages of up to 16 MiB both ways) and never more than one per 4096 fragments.
dr2_copy_way() { # WAY
    local way=$1 rc timed_out log=$logs/dr2-copy-$1-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" --mca pml_dr2_copy "$way" \
        --mca pml_dr2_verbose 2 -np 2 "$build/test/mpi/dr2_p2p"
    cat "$log"
    [ "$timed_out" = 0 ] || { echo "HANG after ${timeout_s}s"; return 1; }
    [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" || return 1
    grep -ao 'fragments sent [0-9]*.*payloads copied separately [0-9]*, copy-way probes [0-9]*' "$log" \
        | awk -v way="$way" '{ frags = $3; sep = $(NF - 3); sub(/,/, "", sep); probes = $NF; n++
              if (way == "fused" && (sep != 0 || probes != 0)) bad = 1
              if (way == "separate" && (sep == 0 || probes != 0)) bad = 1
              if (way == "auto" && (probes < 1 || probes > 1 + frags / 4096)) bad = 1 }
              END { exit !(n == 2 && !bad) }'
}
for way in fused separate auto; do check "dr2/p2p-copy-$way" dr2_copy_way "$way"; done
mpi dr2/stress 4 pass test/mpi/dr2_stress "${DR2[@]}" -- 30
mpi dr2/stress-faults1-copy-separate 3 pass test/mpi/dr2_stress "${DR2[@]}" "${FAULTS1[@]}" \
    --mca pml_dr2_copy separate -- 10 expect-faults
mpi dr2/stress-faults1 4 pass test/mpi/dr2_stress "${DR2[@]}" "${FAULTS1[@]}" -- 30 expect-faults
mpi dr2/stress-faults5 4 pass test/mpi/dr2_stress "${DR2[@]}" "${FAULTS5[@]}" -- 30 expect-faults
# Over TCP a peer often leaves MPI_Finalize while another still retransmits to it (lost
# ACKs): its connection is refused and btl/tcp fails our queued descriptors (this used to
# crash in finalize through a NULL completion callback).
mpi dr2/stress-tcp-faults5 3 pass test/mpi/dr2_stress "${DR2_TCP[@]}" "${FAULTS5[@]}" \
    --mca pml_dr2_inject_seed 7 -- 20 expect-faults
# small fragments, many vfrags, a tiny flow-control window, eager messages of many vfrags
mpi dr2/stress-small-frags-faults5 3 pass test/mpi/dr2_stress "${DR2[@]}" "${FAULTS5[@]}" \
    --mca pml_dr2_frag_size 1024 --mca pml_dr2_window 4 --mca pml_dr2_eager_limit 200000 \
    -- 10 expect-faults
# MPI_THREAD_MULTIPLE: threads sending and receiving at once, ANY_SOURCE, probe/mprobe.
mpi dr2/threads 2 pass test/mpi/dr2_threads "${DR2[@]}"
# tcp segments stuck behind a full socket while the receiver computes: the watchdog sees it
mpi dr2/local-completion-watchdog-tcp 2 pass test/mpi/dr2_watchdog "${DR2_TCP[@]}" \
    --mca pml_dr2_eager_limit 1048576 --mca pml_dr2_local_timeout_us 200000
mpi dr2/threads 3 pass test/mpi/dr2_threads "${DR2[@]}" -- 10
mpi dr2/threads-tcp 3 pass test/mpi/dr2_threads "${DR2_TCP[@]}"
mpi dr2/threads-faults1 3 pass test/mpi/dr2_threads "${DR2[@]}" "${FAULTS1[@]}" -- 10 4 expect-faults
mpi threads-over-ob1 3 pass test/mpi/dr2_threads --mca pml ob1
mpi allreduce-over-dr2 4 pass test/mpi/coll_allreduce "${DR2[@]}"
mpi allreduce-over-dr2-ulfm 3 pass test/mpi/coll_allreduce "${DR2[@]}" "${FT[@]}"
mpi bcast-over-dr2 4 pass test/mpi/coll_bcast "${DR2[@]}" "${FT[@]}"
mpi bcast-over-dr2-faults5 4 pass test/mpi/coll_bcast "${DR2[@]}" "${FT[@]}" "${FAULTS5[@]}"
mpi determinism-over-dr2 4 pass test/mpi/coll_determinism "${DR2[@]}" "${FT[@]}"
mpi dr2/invalid-frag-size 2 "abort:pml_dr2_frag_size has an invalid value" test/mpi/dr2_p2p \
    "${DR2[@]}" --mca pml_dr2_frag_size 0
mpi dr2/invalid-eager-limit 2 "abort:pml_dr2_eager_limit has an invalid value" test/mpi/dr2_p2p \
    "${DR2[@]}" --mca pml_dr2_eager_limit 2000000
mpi dr2/invalid-local-timeout 2 "abort:pml_dr2_local_timeout_us has an invalid value" \
    test/mpi/dr2_p2p "${DR2[@]}" --mca pml_dr2_local_timeout_us 0
ft kill-rank1-over-dr2 4 "1:7" "${DR2[@]}"
ft kill-two-adjacent-over-dr2 4 "1:7 2:7" "${DR2[@]}"

# A rank whose network is gone (dr2_unreachable: everything it sends is dropped): the
# others give up on it after pml_dr2_retry_limit timer expiries. Under ULFM they see
# MPIX_ERR_PROC_FAILED, shrink and go on (ULFM's fail-stop rule then ends the isolated
# rank: mpirun's exit code says nothing); without ULFM the job ends with dr2's message.
# Not judged: what happens after MPI_Finalize. When the isolated rank ended with SIGABRT
# (ULFM's "reported dead" abort), Open MPI 5.0.7's launcher ended the job before one of
# the survivors printed its line after MPI_Finalize in about half of the runs here.
GIVE_UP=(--mca pml_dr2_retry_limit 3 --mca pml_dr2_ack_timeout_us 2000
         --mca pml_dr2_ack_timeout_max_us 20000)
dr2_unreachable_ulfm() {
    local np=3 rc timed_out log=$logs/dr2-unreachable-ulfm-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" "${FT[@]}" "${GIVE_UP[@]}" \
        -np "$np" "$build/test/mpi/dr2_unreachable" ulfm
    cat "$log"
    [ "$timed_out" = 0 ] || { echo "HANG after ${timeout_s}s"; return 1; }
    ! grep -aq "dr2_unreachable: rank .*: FAIL" "$log" || return 1
    # each survivor: the failure seen, and the exchange after the shrink
    [ "$(grep -ac "dr2_unreachable: rank .*: PASS" "$log")" = $((2 * (np - 1))) ]
}
check dr2/unreachable-peer-ulfm dr2_unreachable_ulfm
mpi dr2/unreachable-peer-ends-the-job 2 "abort:pml/dr2 gave up on process" \
    test/mpi/dr2_unreachable "${DR2[@]}" "${GIVE_UP[@]}"

ompi_info_lists_dr2() {
    local out
    out=$(OMPI_MCA_mca_base_component_path="$component_path" timeout -k 5 "$timeout_s" \
          "$OMPI_PREFIX/bin/ompi_info" --param pml dr2 --level 9) || return 1
    echo "$out"
    for p in priority frag_size eager_limit checksum crc32c_impl copy ack_timeout_us ack_timeout_min_us \
             ack_timeout_max_us retry_limit local_timeout_us window verbose inject_drop inject_corrupt inject_dup \
             inject_seed; do
        grep -q "parameter \"pml_dr2_$p\"" <<<"$out" || { echo "missing pml_dr2_$p"; return 1; }
    done
}
check install/ompi_info-lists-dr2 ompi_info_lists_dr2

# `make install` puts a man page for every FTR_* function where man finds it, and each
# renders without a warning (groff -ww: unknown macros, bad escapes, broken .so links).
man_pages_installed() {
    local mandir=$build/stage/share/man f page out
    for f in ftrabit FTR_Init FTR_Finalize FTR_Allreduce FTR_Bcast FTR_Allreduce_bootstrap \
             FTR_Bcast_bootstrap FTR_Checkpoint FTR_Load_checkpoint FTR_Version FTR_Comm_recover \
             FTR_Origin; do
        page=$(man -M "$mandir" -w 3 "$f") || { echo "man 3 $f: not installed"; return 1; }
        echo "$f: $page"
        out=$(MANWIDTH=80 man --warnings=w -M "$mandir" 3 "$f" 2>&1 >/dev/null)
        [ -z "$out" ] || { echo "man 3 $f warns: $out"; return 1; }
        MANWIDTH=80 man -M "$mandir" 3 "$f" 2>/dev/null | grep -q "^SYNOPSIS" \
            || { echo "man 3 $f: no SYNOPSIS"; return 1; }
    done
    # every function the header exports has its page
    for f in $(grep -o 'FTR_[A-Za-z_]*(' "$build/stage/include/ftrabit.h" | tr -d '(' | sort -u); do
        case "$f" in *_at) f=${f%_at} ;; esac
        man -M "$mandir" -w 3 "$f" >/dev/null 2>&1 || { echo "no man page for $f"; return 1; }
    done
}

echo "== installation and parameters"
check install/ompi_info-lists-ftrabit ompi_info_lists_ftrabit
check install/man-pages man_pages_installed
check params/invalid-segment-size-refused invalid_segment_size_is_refused
check params/invalid-pool-bound-refused invalid_pool_bound_is_refused

# Leave nothing behind: a leftover rank would slow every later run on this machine.
pkill -f "$build/test/" 2>/dev/null || true

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    printf '  %s\n' "${failures[@]}"
    echo "logs: $logs"
fi
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
