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
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
# Every job starts as "${launch[@]}" "${mpirun[@]}" ...: on this host while launch is empty;
# the multi-host section sets it to test/cluster/cluster.sh mpirun, which runs the same
# mpirun across simulated hosts.
launch=()

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

mpi_test_name() { echo "mpi/$1/np$2"; } # LABEL NP
ft_test_name() { echo "ft/$1/np$2"; }   # LABEL NP

# mpi LABEL NP EXPECT PROGRAM [mpirun options...] -- [program args...]
# EXPECT: pass (exit 0, "PASS" verdict) or "abort:TEXT" (non-zero exit, TEXT in the output).
mpi() {
    local label=$1 np=$2 expect=$3 prog=$4
    shift 4
    local opts=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    local name
    name=$(mpi_test_name "$label" "$np")
    selected "$name" || return 0
    local bin=$build/$prog log=$logs/$(echo "$label-np$np" | tr '/ ' '__').log
    if [ ! -x "$bin" ]; then fail "$name" "$prog not built"; return; fi
    local rc timed_out
    run_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" "${opts[@]}" -np "$np" "$bin" "${args[@]}"
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
unit test_dr2_path

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
# Both runs go through "${launch[@]}": a reference is kept per launcher.
# With --mca coll_ftrabit_spares S among the options, NP counts the spares too, and the
# reference is the plain run on NP-S ranks without spares: spares must not change a result.
declare -A ft_reference
ft_fingerprint() { sed -n 's/^final .* fingerprint \([0-9a-f]*\).*/\1/p' "$1" | head -n 1; }
# KILLS: R:I[:WHERE] kills rank R at iteration I (the program's --kill); on the cluster,
# hN:I kills every process of host hN once some rank is done with iteration I (ftr_kmeans
# --timeline tells; cluster_kill_host_when watches the log).
ft_launch() { # ft_launch PROG LOG NP KILLS [mpirun options...] [-- program options...]
    local prog=$1 log=$2 np=$3 kills=$4
    shift 4
    local opts=() args=() marks="" watchers=() k w bin=$build/examples/$prog
    [[ "$prog" == */* ]] && bin=$build/$prog
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    if [ "$prog" = ftr_kmeans ]; then
        marks=$(mktemp -d)
        args+=(--kill-marks "$marks")
    fi
    : >"$log"
    for k in $kills; do
        case "$k" in
            h[0-9]*:[0-9]*)
                [ ${#watchers[@]} -gt 0 ] || args+=(--timeline)
                cluster_kill_host_when "$log" "^timeline rank [0-9]+ done ${k#*:} " "${k%%:*}" \
                    "$ft_timeout_s" 2>>"$log.watch" &
                watchers+=($!) ;;
            *) args+=(--kill "$k") ;;
        esac
    done
    run_timed "$ft_timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm "${opts[@]}" \
        -np "$np" "$bin" "${args[@]}"
    for w in "${watchers[@]}"; do kill "$w" 2>/dev/null; wait "$w" 2>/dev/null; done
    [ -n "$marks" ] && rm -rf "$marks"
    return 0
}
ft_run() {
    local prog=$1 label=$2 np=$3 kills=$4
    shift 4
    local name
    name=$(ft_test_name "$label" "$np")
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
    local ref_key="${launch[*]} $prog $app ${ref_opts[*]}"
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
# A failure inside FTR_Checkpoint when the collectives are plain MPI ones: the survivors used
# to retry the checkpoint and wait in its ring exchange while the replacement replayed
# plain collectives from the previous version; now the checkpoint returns a process failure
# and everybody rolls back.
ft_run ulfm_allreduce plain-ulfm/kill-in-checkpoint 4 "1:7:checkpoint"
ft_run ulfm_allreduce plain-ulfm/kill-two-in-checkpoint 4 "2:7:checkpoint 1:7:checkpoint"
ft_run ulfm_allreduce plain-ulfm/kill-in-first-checkpoint 4 "3:3:checkpoint"
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
# Injected corruption is only repaired where payloads are checksummed: pml_dr2_checksum
# auto (the default) leaves them unchecked on sm and self, so fault runs force crc32c.
FAULTS1=(--mca pml_dr2_inject_drop 0.01 --mca pml_dr2_inject_corrupt 0.01 --mca pml_dr2_inject_dup 0.01
         --mca pml_dr2_checksum crc32c)
FAULTS5=(--mca pml_dr2_inject_drop 0.05 --mca pml_dr2_inject_corrupt 0.01 --mca pml_dr2_inject_dup 0.01
         --mca pml_dr2_checksum crc32c)
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
mpi dr2/p2p-checksum-crc32c 2 pass test/mpi/dr2_p2p "${DR2[@]}" --mca pml_dr2_checksum crc32c
# The checksum policy per BTL (pml_dr2_checksum), as each process reports it for each peer
# (verbose 10): auto checksums payloads on tcp, not on sm or self; crc32c everywhere;
# none nowhere. dr2_p2p passes under each.
dr2_checksum_policy() { # POLICY BTLS EXPECTED-LINE...
    local policy=$1 btls=$2 rc timed_out log=$logs/dr2-checksum-$1-$2-run.log
    shift 2
    run_timed "$timeout_s" "$log" "${mpirun[@]}" --mca pml dr2 --mca btl "$btls" \
        --mca pml_dr2_checksum "$policy" --mca pml_dr2_verbose 10 -np 2 "$build/test/mpi/dr2_p2p"
    grep -a "payload checksum" "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" || return 1
    for line in "$@"; do
        # each of the 2 processes, for its peer and for itself
        [ "$(grep -ac "over btl $line" "$log")" = 2 ] || { echo "not twice: over btl $line"; return 1; }
    done
}
check dr2/checksum-auto-sm dr2_checksum_policy auto sm,self "sm: payload checksum none" \
    "self: payload checksum none"
check dr2/checksum-auto-tcp dr2_checksum_policy auto tcp,self "tcp: payload checksum crc32c" \
    "self: payload checksum none"
check dr2/checksum-crc32c-sm dr2_checksum_policy crc32c sm,self "sm: payload checksum crc32c" \
    "self: payload checksum crc32c"
check dr2/checksum-none-tcp dr2_checksum_policy none tcp,self "tcp: payload checksum none"
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
    # the ways of copying a checksummed payload: checksums forced on sm
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" --mca pml_dr2_copy "$way" \
        --mca pml_dr2_checksum crc32c --mca pml_dr2_verbose 2 -np 2 "$build/test/mpi/dr2_p2p"
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
mpi dr2/invalid-probe-interval 2 \
    "abort:pml_dr2_path_probe_interval_us/_max_us has an invalid value" test/mpi/dr2_p2p \
    "${DR2[@]}" --mca pml_dr2_path_probe_interval_us 0
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
# A receiver that goes silent after acknowledging a rendezvous' RNDV (dr2_silent: it
# leaves MPI for good): the sender's resends of the RNDV count against the retry limit too,
# so its MPI_Send ends in MPIX_ERR_PROC_FAILED instead of waiting for a go-ahead for ever.
dr2_silent_receiver() {
    local rc timed_out log=$logs/dr2-silent-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" "${FT[@]}" "${GIVE_UP[@]}" \
        -np 2 "$build/test/mpi/dr2_silent"
    cat "$log"
    grep -aq "dr2_silent: rank 0: PASS" "$log"
}
check dr2/silent-receiver-after-rndv dr2_silent_receiver

# ULFM revoke (dr2_revoke): messages that reach a process after it revoked their
# communicator are dropped there but acknowledged (their sender must not resend them for
# ever and jam its window to that process for every communicator: 3,000 messages on
# another communicator follow); a small synchronous send no receive matched never
# succeeds; no receive on a revoked communicator completes with MPI_SUCCESS.
mpi dr2/revoke-inflight-eager 2 pass test/mpi/dr2_revoke "${DR2[@]}" "${FT[@]}" -- inflight 8 200
mpi dr2/revoke-inflight-multifrag 2 pass test/mpi/dr2_revoke "${DR2[@]}" "${FT[@]}" \
    --mca pml_dr2_frag_size 1024 --mca pml_dr2_eager_limit 8192 -- inflight 6000 100
mpi dr2/revoke-ssend 2 pass test/mpi/dr2_revoke "${DR2[@]}" "${FT[@]}" -- ssend
# Revoke, shrink and agree in a loop with traffic in flight (dr2_ulfm_loop, in the spirit of
# ulfm-testing's api/revoke and api/revshrink), 100 iterations without a hang; the same
# program over ob1 shows that what it checks is what ULFM promises.
mpi dr2/ulfm-revoke-shrink-agree-loop 4 pass test/mpi/dr2_ulfm_loop "${DR2[@]}" "${FT[@]}" -- 100
mpi ulfm-revoke-shrink-agree-loop-over-ob1 4 pass test/mpi/dr2_ulfm_loop --mca pml ob1 "${FT[@]}" \
    -- 100
# A send interrupted by a process failure (dr2_seqhole: a bcast rank 2 dies in, whose
# message to rank 1 waits for a window of one vfrag) still reaches its live receiver, to
# be dropped there: abandoned, it would leave a hole in the matching sequence that the
# next point-to-point message between the survivors waits behind for ever.
dr2_seqhole() {
    local rc timed_out log=$logs/dr2-seqhole-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2[@]}" "${FT[@]}" --mca pml_dr2_window 1 \
        --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 1 \
        -np 3 "$build/test/mpi/dr2_seqhole"
    cat "$log"
    [ "$timed_out" = 0 ] || { echo "HANG after ${timeout_s}s"; return 1; }
    ! grep -aq "dr2_seqhole: rank .*: FAIL" "$log" || return 1
    [ "$(grep -ac "dr2_seqhole: rank .*: PASS" "$log")" = 3 ]
}
check dr2/seqhole-interrupted-send dr2_seqhole
# Out of memory at the receiver (pml_dr2_inject_nomem): an unexpected eager message that
# cannot be buffered is neither lost nor a hole in the matching order (resent, placed
# later); a non-contiguous receive without memory for its staging copy ends with
# MPI_ERR_NO_MEM, and the traffic behind it flows.
mpi dr2/nomem-unexpected 2 pass test/mpi/dr2_nomem "${DR2[@]}" --mca pml_dr2_inject_nomem 0.5 \
    -- unexpected 300
mpi dr2/nomem-unexpected-multifrag 2 pass test/mpi/dr2_nomem "${DR2[@]}" \
    --mca pml_dr2_inject_nomem 0.3 --mca pml_dr2_frag_size 1024 -- unexpected 200
mpi dr2/nomem-noncontig 2 pass test/mpi/dr2_nomem "${DR2[@]}" --mca pml_dr2_inject_nomem 1 \
    --mca pml_dr2_frag_size 1024 -- noncontig

ompi_info_lists_dr2() {
    local out
    out=$(OMPI_MCA_mca_base_component_path="$component_path" timeout -k 5 "$timeout_s" \
          "$OMPI_PREFIX/bin/ompi_info" --param pml dr2 --level 9) || return 1
    echo "$out"
    for p in priority frag_size eager_limit checksum crc32c_impl copy ack_timeout_us ack_timeout_min_us \
             ack_timeout_max_us retry_limit local_timeout_us window verbose inject_drop inject_corrupt inject_dup \
             inject_nomem inject_seed; do
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
             FTR_Cache_memory FTR_Origin; do
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

# ---- multi-host cluster -------------------------------------------------------------------
# Hosts h0 h1 h2 are network namespaces with their own hostnames, on two data networks (neta,
# netb) and a management network (netc) that PRRTE's daemons use (test/cluster/cluster.sh,
# docs/cluster.md). One cluster serves the section, brought up for its first selected test;
# cluster_reset undoes every test's faults and kills what it left before the next.
echo "== multi-host cluster (network namespaces; timeout ${timeout_s}s each)"
# shellcheck source=test/cluster/cluster.sh
. "$src/test/cluster/cluster.sh"
if cluster_why_not=$(cluster_unavailable); then :; else cluster_why_not=""; fi
cluster_hosts=3
real_hostname=$(hostname)

# The job of the launcher tests: each rank prints its host's name. It lives on for half a
# second: PRRTE 3.0's daemons sometimes miss the end of a child that exits within
# milliseconds of its start, and the job then never ends (3 of 20 runs of a bare
# `hostname` across 3 hosts hung; 0 of 20 living 1 s; fixed upstream by openpmix/prrte
# pull request #2713).
print_hostname=(sh -c 'hostname && sleep 0.5')

# in_cluster TEST ARGS...: TEST (mpi, ft_run or check, with their usual arguments) with every
# job launched across the cluster; skipped, with the reason, where the cluster cannot run.
in_cluster() {
    local name
    case "$1" in
        mpi) name=$(mpi_test_name "$2" "$3") ;;
        ft_run) name=$(ft_test_name "$3" "$4") ;;
        check) name=$2 ;;
    esac
    selected "$name" || return 0
    if [ -n "$cluster_why_not" ]; then skip "$name" "$cluster_why_not"; return 0; fi
    if [ -z "$CLUSTER_ID" ] && ! cluster_up "$cluster_hosts"; then
        cluster_why_not="the cluster did not come up"
        fail "$name" "$cluster_why_not"
        return 0
    fi
    launch=("$CLUSTER_SELF" mpirun)
    "$@"
    launch=()
    # the last test takes the cluster down itself
    if [ -n "$CLUSTER_ID" ]; then cluster_reset || fail "$name/reset" "the cluster could not be reset"; fi
}

# Each host has its own name, for commands and for a job across the hosts; the machine's
# own hostname is untouched.
cluster_hosts_have_their_names() {
    local i name rc timed_out log=$logs/cluster-hostnames-job.log
    for ((i = 0; i < cluster_hosts; i++)); do
        name=$(cluster_exec "h$i" hostname) || return 1
        echo "h$i: hostname $name"
        [ "$name" = "h$i" ] || return 1
    done
    run_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" -np "$cluster_hosts" "${print_hostname[@]}"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || return 1
    [ "$(grep -x 'h[0-9]*' "$log" | sort | tr '\n' ' ')" = "h0 h1 h2 " ] || return 1
    [ "$(hostname)" = "$real_hostname" ]
}

expect_no_tcp() { # FROM TO NET: no TCP exchange gets through (2 s: a working path answers in ms)
    if cluster_tcp_probe "$1" "$2" "$3" 2; then echo "$1 -> $2 over $3 still works"; return 1; fi
}

# A silent cut of neta on h1: nothing passes between h0 and h1 on neta, and the cut really
# dropped packets; netb and netc still carry, and h0 and h2 still talk over neta. Healed,
# neta carries again.
cluster_cut_stops_one_network() {
    cluster_tcp_probe h0 h1 neta || return 1
    cluster_cut h1 neta || return 1
    expect_no_tcp h0 h1 neta && expect_no_tcp h1 h0 neta || return 1
    [ "$(cluster_dropped h1 neta)" -gt 0 ] || { echo "the cut dropped nothing"; return 1; }
    cluster_tcp_probe h0 h1 netb && cluster_tcp_probe h1 h0 netc && cluster_tcp_probe h0 h2 neta \
        || return 1
    cluster_heal h1 neta || return 1
    cluster_tcp_probe h0 h1 neta && cluster_tcp_probe h1 h0 neta
}

# A cut of one peer only: h1 and h2 lose neta between them, h0 keeps it with both.
cluster_cut_between_two_hosts() {
    cluster_cut h1 neta h2 || return 1
    expect_no_tcp h1 h2 neta && expect_no_tcp h2 h1 neta || return 1
    cluster_tcp_probe h0 h1 neta && cluster_tcp_probe h2 h0 neta || return 1
    cluster_heal h1 neta h2 && cluster_tcp_probe h2 h1 neta
}

# ip link set down: h1's netb is gone both ways; neta is not; back up, netb carries again.
cluster_link_down_and_up() {
    cluster_link_down h1 netb || return 1
    expect_no_tcp h1 h0 netb && expect_no_tcp h0 h1 netb || return 1
    cluster_tcp_probe h0 h1 neta || return 1
    cluster_link_up h1 netb || return 1
    cluster_tcp_probe h1 h0 netb && cluster_tcp_probe h0 h1 netb
}

# Both data networks of h1 cut: a job across the hosts still starts and ends, because
# PRRTE's daemons talk over netc.
cluster_launcher_survives_data_cuts() {
    local rc timed_out log=$logs/cluster-launcher-job.log
    cluster_cut h1 neta && cluster_cut h1 netb || return 1
    run_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" -np "$cluster_hosts" "${print_hostname[@]}"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -qx h1 "$log"
}

host_processes() { # HOST: "PID NAME" of every process on HOST
    local p
    for p in $(cluster_pids "$1"); do echo "$p $(cat "/proc/$p/comm" 2>/dev/null)"; done
}

# h2 dies in the middle of a job across the hosts (ftr_kmeans without ULFM, 2 ranks per
# host: ranks 4 and 5 on h2), once some rank is done with iteration 7: its PRRTE daemon and
# ranks are gone, nothing is left on h2, and the job ends, saying it lost a daemon, instead
# of hanging (a job without ULFM is not recoverable: PRRTE ends it, patched or not). The
# exit code is not judged: PRRTE 3.0's mpirun exits with 0 here.
cluster_kill_host_leaves_nothing() {
    local job rc log=$logs/cluster-kill-host-job.log
    : >"$log"
    timeout --verbose -k 10 "$timeout_s" "${launch[@]}" "${mpirun[@]}" -np 6 \
        "$build/examples/ftr_kmeans" --timeline --iterations 100000 </dev/null >"$log" 2>&1 &
    job=$!
    cluster_kill_host_when "$log" "^timeline rank [0-9]+ done 7 " h2 "$timeout_s" \
        || { kill "$job"; wait "$job"; cat "$log"; return 1; }
    [ -z "$(cluster_pids h2)" ] || { echo "left on h2: $(host_processes h2)"; return 1; }
    wait "$job"
    rc=$?
    grep -av '^timeline' "$log"
    echo "job exit code $rc"
    grep -aq '^timeline rank 4 ' "$log" && grep -aq '^timeline rank 5 ' "$log" \
        || { echo "ranks 4 and 5 never ran"; return 1; }
    ! grep -aq "^timeout: sending signal" "$log" && ! grep -aq "^final centroids" "$log" \
        && grep -aq "lost communication with a remote daemon" "$log"
}

# Two clusters side by side: taking one down leaves the other whole; a cluster whose owner
# died without taking it down (a test killed with SIGKILL) is removed as a leftover.
cluster_down_removes_only_its_own() {
    local other_dir other_id
    other_dir=$(OMPIRES_CLUSTER= "$CLUSTER_SELF" up 1 | sed -n 's/^export OMPIRES_CLUSTER=//p')
    [ -d "$other_dir" ] || return 1
    other_id=${other_dir##*/${CLUSTER_NS_PREFIX}}
    echo "second cluster $other_id"; cluster_namespaces_of "$other_id"
    OMPIRES_CLUSTER=$other_dir "$CLUSTER_SELF" down || return 1
    [ -z "$(cluster_namespaces_of "$other_id")" ] && [ ! -e "$other_dir" ] || return 1
    [ "$(cluster_namespaces_of "$CLUSTER_ID" | wc -l)" = $((cluster_hosts + 1)) ] || return 1
    # a leftover: made by a shell that ends without taking it down
    other_id=$(bash -c '. "$1" && cluster_up 1 --no-trap && echo "$CLUSTER_ID"' _ "$CLUSTER_SELF") || return 1
    echo "leftover $other_id"
    [ -n "$(cluster_namespaces_of "$other_id")" ] || return 1
    cluster_remove_leftovers
    [ -z "$(cluster_namespaces_of "$other_id")" ] && [ ! -e "$(cluster_state_dir "$other_id")" ] || return 1
    cluster_tcp_probe h0 h2 netc
}

# A script that made a cluster takes it down however it ends: at its exit, on INT, on TERM
# (the traps cluster_up sets), and a SIGKILLed one leaves a leftover that the next
# cluster_up removes (tested above).
cluster_removed_on_every_exit() {
    local how id sleeper i pid out=$logs/cluster-exit-paths.out
    for how in exit INT TERM; do
        # a script that brings a cluster up, prints its id, then ends or waits for the signal
        # (in the wait builtin: bash runs a trap only once a foreground command is done)
        rm -f "$out"
        bash -c '. "$1" && cluster_up 1 || exit 1
                 [ "$2" = exit ] && { echo "$CLUSTER_ID"; exit 0; }
                 sleep 30 & echo "$CLUSTER_ID $!"; wait' _ "$CLUSTER_SELF" "$how" >"$out" &
        pid=$!
        id=""
        for ((i = 0; i < 100; i++)); do # up to 10 s to come up
            [ -s "$out" ] && read -r id sleeper <"$out" && break
            sleep 0.1
        done
        [ -n "$id" ] || { echo "$how: no cluster came up"; kill "$pid"; wait "$pid"; return 1; }
        [ "$how" = exit ] || kill -s "$how" "$pid"
        wait "$pid"
        [ -n "${sleeper:-}" ] && kill "$sleeper" 2>/dev/null
        echo "$how: cluster $id, namespaces left: $(cluster_namespaces_of "$id" | tr '\n' ' ')"
        [ -z "$(cluster_namespaces_of "$id")" ] && [ ! -e "$(cluster_state_dir "$id")" ] || return 1
    done
}

# Wrong hosts, networks and counts are refused at once with a message naming them.
cluster_bad_input_refused() {
    local out
    refused() { # EXPECTED-MESSAGE COMMAND...
        local want=$1
        shift
        if out=$(timeout 20 "$CLUSTER_SELF" "$@" 2>&1); then echo "accepted: $*"; return 1; fi
        echo "$* -> $out"
        grep -q -- "$want" <<<"$out" || { echo "  expected: $want"; return 1; }
    }
    refused "N must be a number of hosts" up abc && refused "N must be a number of hosts" up 0 \
        && refused "no host 'h9'" cut h9 neta && refused "unknown network 'netz'" cut h1 netz \
        && refused "no host '10.91.3.9'" kill-host 10.91.3.9 && refused "SLOTS at least 1" hosts 0 \
        && refused "unknown command" bogus
}

# The section's cluster taken down: no namespace, no state, no process, nothing in the root
# namespace (nothing was ever made there).
cluster_down_leaves_nothing() {
    local id=$CLUSTER_ID dir=$CLUSTER_DIR
    cluster_down || return 1
    echo "namespaces left: $(cluster_namespaces_of "$id")"
    [ -z "$(cluster_namespaces_of "$id")" ] && [ ! -e "$dir" ] || return 1
    ! ip -br link | grep -E '^(neta|netb|netc|br-net|h[0-9]+-net)'
}

# ---- pml/dr2 over two data networks: two tcp paths between h0 and h1 (test/mpi/dr2_paths) --
# One rank on h0, one on h1, exchanging a stream whose every byte is checked. The job prints
# "phase streaming" mid-stream; the fault is then made and the job told so through a file
# (rank 0 runs on h0, which shares this file system); with a heal, the same after "phase
# failed-over". Nothing waits for a time: the job moves on when its MPI_T counters show
# the failover (or the return); the timeout ends a hang.
DR2_PATHS=(--mca pml dr2 --mca btl tcp,self)

wait_for_line() { # LOG TEXT PID: until TEXT is in LOG; 1 if the job PID ended first
    while ! grep -aq "$2" "$1"; do
        kill -0 "$3" 2>/dev/null || grep -aq "$2" "$1" || return 1
        sleep 0.1
    done
}

# dr2_paths_job LABEL MODE [MPIRUN-OPTIONS...] -- FAULT-CMD...: sets rc, timed_out, log and
# cut_dropped (packets the cut of h1 neta dropped, read before it is healed).
dr2_paths_job() {
    local label=$1 mode=$2 opts=() ctl job
    shift 2
    cut_dropped=0
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    ctl=$(mktemp -d "$logs/dr2-paths-$label.XXXXXX") || return 1
    log=$logs/dr2-paths-$label-job.log
    : >"$log" # the phases are read from it: nothing of an earlier run
    timeout --verbose -k 10 "$timeout_s" "${launch[@]}" "${mpirun[@]}" "${DR2_PATHS[@]}" \
        --mca pml_dr2_verbose 1 "${opts[@]}" --host "$(cluster_hosts_arg 1 2)" -np 2 \
        "$build/test/mpi/dr2_paths" "$mode" "$ctl" </dev/null >"$log" 2>&1 &
    job=$!
    if [ $# -gt 0 ] && wait_for_line "$log" "phase streaming" "$job"; then
        "$@" && touch "$ctl/cut"
        if [ "$mode" = heal ] && wait_for_line "$log" "phase failed-over" "$job"; then
            cluster_heal h1 && touch "$ctl/healed"
        fi
        if [ "$mode" = cut ] && wait_for_line "$log" "^dr2_paths: rank 0: PASS: cut" "$job" \
               && wait_for_line "$log" "^dr2_paths: rank 1: PASS: cut" "$job"; then
            # Both verdicts are out: the network comes back, so that MPI_Finalize can end
            # (btl/tcp's goodbye on the cut connection, below; seen: 1 hang in 4 runs after
            # the link went down).
            cut_dropped=$(cluster_dropped h1 neta) # healing clears the counters
            cluster_heal h1 && cluster_link_up h1 neta
        fi
        if [ "$mode" = both ] && wait_for_line "$log" "rank 0: .*both networks cut" "$job" \
               && wait_for_line "$log" "rank 1: .*both networks cut" "$job"; then
            # Both verdicts are out: heal, so that MPI_Finalize can end. btl/tcp says goodbye
            # on every connection with a blocking send that retries EAGAIN for ever
            # (mca_btl_tcp_send_blocking, Open MPI 5.0.7): on a connection that a silent cut
            # left with a full send buffer, that is until the network comes back.
            cluster_heal h1
        fi
    fi
    wait "$job"
    rc=$?
    timed_out=0
    grep -aq "^timeout: sending signal" "$log" && timed_out=1
    grep -av "copy to" "$log"
    echo "job exit code $rc"
    rm -rf "$ctl"
}

both_passed() { # MODE: both ranks printed their PASS verdict
    [ "$(grep -ac "^dr2_paths: rank [01]: PASS: $1" "$log")" = 2 ]
}

cut_both_data_networks() { cluster_cut h1 neta && cluster_cut h1 netb; }

# No fault: the stream goes over both networks (striping), both ranks verify every byte.
dr2_paths_striped() {
    local rc timed_out log
    dr2_paths_job striped plain
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed plain
}

# neta cut under the stream: the job finishes, no byte lost or corrupted, a path went down
# (and the cut really dropped the stream's packets).
dr2_paths_one_network_cut() {
    local rc timed_out log
    dr2_paths_job cut cut -- cluster_cut h1 neta
    echo "packets the cut dropped: $cut_dropped"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut && [ "$cut_dropped" -gt 0 ]
}

# The same with neta's interface going down on h1 instead (its sends fail at once there).
dr2_paths_link_down() {
    local rc timed_out log
    dr2_paths_job link-down cut -- cluster_link_down h1 neta
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut
}

# Every TCP segment on h1's neta answered with a reset: btl/tcp reports an error for the
# connection on both sides, and dr2 takes the path out at once (not after timeouts).
reset_connections_on_neta() {
    cluster_iptables h1 -I INPUT -i neta -p tcp -j REJECT --reject-with tcp-reset \
        && cluster_iptables h1 -I OUTPUT -o neta -p tcp -j REJECT --reject-with tcp-reset
}

dr2_paths_connection_reset() {
    local rc timed_out log
    dr2_paths_job reset cut -- reset_connections_on_neta
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut \
        && grep -aq "is down: the BTL reports an error" "$log"
}

# neta cut, then healed: a probe brings the path back and fragments go on both networks
# again (dr2_paths compares its per-path counters from the return on).
dr2_paths_cut_then_healed() {
    local rc timed_out log
    dr2_paths_job heal heal -- cluster_cut h1 neta
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed heal && grep -aq "phase path-back" "$log"
}

# Both networks cut under a one-way stream: no path left. Under ULFM the sender's MPI_Send
# ends with MPIX_ERR_PROC_FAILED (pml_dr2_retry_limit applies on the last path), and so does
# the receiver's MPI_Recv, which has nothing of its own in flight: dr2's keepalive probes
# the silent peer it waits for (pml_dr2_keepalive.h). Without ULFM the job aborts with dr2's
# message. Never a hang.
dr2_paths_both_cut_ulfm() {
    local rc timed_out log
    dr2_paths_job both-ulfm both --with-ft ulfm --mca pml_dr2_retry_limit 8 -- cut_both_data_networks
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed both
}

dr2_paths_both_cut_abort() {
    local rc timed_out log
    dr2_paths_job both-abort both --mca pml_dr2_retry_limit 8 -- cut_both_data_networks
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && grep -aq "pml/dr2 gave up on process" "$log"
}

in_cluster check cluster/hostnames cluster_hosts_have_their_names
in_cluster check cluster/cut-stops-one-network cluster_cut_stops_one_network
in_cluster check cluster/cut-between-two-hosts cluster_cut_between_two_hosts
in_cluster check cluster/link-down-and-up cluster_link_down_and_up
in_cluster check cluster/launcher-survives-data-cuts cluster_launcher_survives_data_cuts
in_cluster check cluster/kill-host-leaves-nothing cluster_kill_host_leaves_nothing
in_cluster check cluster/down-removes-only-its-own cluster_down_removes_only_its_own
in_cluster check cluster/removed-on-every-exit cluster_removed_on_every_exit
in_cluster check cluster/bad-input-refused cluster_bad_input_refused
# ob1 and dr2 across 2 and 3 hosts (2 ranks per host share sm; between hosts tcp)
in_cluster mpi cluster/allreduce-2-hosts 4 pass test/mpi/coll_allreduce "${FT[@]}" \
    --host "$(cluster_hosts_arg 2 2)"
in_cluster mpi cluster/allreduce-3-hosts 6 pass test/mpi/coll_allreduce "${FT[@]}"
in_cluster mpi cluster/dr2-p2p-2-hosts 2 pass test/mpi/dr2_p2p "${DR2_TCP[@]}" \
    --host "$(cluster_hosts_arg 1 2)"
in_cluster mpi cluster/dr2-p2p-3-hosts 3 pass test/mpi/dr2_p2p "${DR2_TCP[@]}"
# coll/ftrabit recovers a rank killed on h1 (ranks 2 and 3 live there) under the shrink
# policy. Not in CI: respawn across hosts. MPI_Comm_spawn's connect across nodes misreads
# its release in the bundled PRRTE (connect_release, pmix_server_dyn.c:1048/1079) and
# corrupts mpirun's heap now and then: one respawn across hosts crashed mpirun in 3 of 31
# runs, a second recovery (kills "2:7 5:12") never ended (docs/node-loss.md,
# docs/cluster.md "Found with the cluster"). OMPIRES_CLUSTER_RESPAWN=1 runs it.
in_cluster ft_run ftr_kmeans cluster/kill-rank-on-h1-shrink 6 "3:7" --mca coll_ftrabit_recovery shrink
if [ "${OMPIRES_CLUSTER_RESPAWN:-0}" = 1 ]; then
    in_cluster ft_run ftr_kmeans cluster/kill-rank-on-h1 6 "3:7"
elif selected cluster/kill-rank-on-h1-respawn; then
    skip cluster/kill-rank-on-h1-respawn "MPI_Comm_spawn across hosts crashes mpirun now and then (PRRTE 3.0 connect_release; docs/node-loss.md); OMPIRES_CLUSTER_RESPAWN=1 runs it"
fi
in_cluster check cluster/dr2-paths-striped dr2_paths_striped
in_cluster check cluster/dr2-paths-one-network-cut dr2_paths_one_network_cut
in_cluster check cluster/dr2-paths-link-down dr2_paths_link_down
in_cluster check cluster/dr2-paths-connection-reset dr2_paths_connection_reset
in_cluster check cluster/dr2-paths-cut-then-healed dr2_paths_cut_then_healed
in_cluster check cluster/dr2-paths-both-cut-ulfm dr2_paths_both_cut_ulfm
in_cluster check cluster/dr2-paths-both-cut-abort dr2_paths_both_cut_abort
# ---- a whole node lost (Open MPI patch 0002, docs/node-loss.md) ----
# wait_for_file_text SECONDS FILE TEXT: until FILE holds TEXT; 1 if it never did.
wait_for_file_text() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        grep -aq "$3" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# node_loss_job LOG OPTIONS...: start ft_node_loss (6 ranks, 2 per host, 4 survivors) in the
# background across the cluster; its rank 0 says "iterating" once every rank runs, and the
# job loops until something fails. Sets $job. It tests Open MPI's own ULFM collectives
# (coll ^ftrabit: ftrabit's allreduce is for jobs using the FTR_* API).
node_loss_job() {
    local log=$1
    shift
    timeout --verbose -k 10 "$timeout_s" "${launch[@]}" "${mpirun[@]}" "$@" -np 6 \
        "$build/test/mpi/ft_node_loss" 4 </dev/null >"$log" 2>&1 &
    job=$!
}

# ranks_not_done LOG RANKS...: those of RANKS that did not print "mpitest: rank R done".
ranks_not_done() {
    local log=$1 r missing=""
    shift
    for r in "$@"; do grep -aq "^mpitest: rank $r done" "$log" || missing="$missing $r"; done
    echo "${missing# }"
}

# node_loss_kill HOST LOG SURVIVORS...: once the job runs, kill HOST (its PRRTE daemon and its
# two ranks) and wait for the job's end; sets $rc. SURVIVORS name the ranks on the other
# hosts, for the message of a hang.
node_loss_kill() {
    local host=$1 log=$2
    shift 2
    if ! wait_for_file_text 60 "$log" "^ft_node_loss: iterating"; then
        echo "the job never started iterating"; kill "$job"; wait "$job"; cat "$log"; return 1
    fi
    cluster_kill_host "$host" || return 1
    wait "$job"
    rc=$?
    cat "$log"
    echo "job exit code $rc"
    ! grep -aq "^timeout: sending signal" "$log" \
        || { echo "HANG: ranks that never finished: $(ranks_not_done "$log" "$@")"; return 1; }
}

# node_loss_runs_on HOST SURVIVORS -- OPTIONS...: under ULFM the job runs on: the survivors
# see MPI_ERR_PROC_FAILED, revoke, shrink to 4 ranks, agree, and MPI_Finalize returns on
# each (its PMIx fence leaves HOST out).
node_loss_runs_on() {
    local host=$1 survivors=() job rc log=$logs/cluster-node-loss-$1.log
    shift
    while [ "$1" != "--" ]; do survivors+=("$1"); shift; done
    shift
    node_loss_job "$log" "${FT[@]}" --mca coll ^ftrabit "$@"
    node_loss_kill "$host" "$log" "${survivors[@]}" || return 1
    grep -aq "lost daemon .* on node $host" "$log" || { echo "mpirun did not report the lost daemon"; return 1; }
    [ -z "$(ranks_not_done "$log" "${survivors[@]}")" ] \
        || { echo "ranks that did not finish: $(ranks_not_done "$log" "${survivors[@]}")"; return 1; }
    grep -aq "^mpitest ft_node_loss: np 6: PASS" "$log"
}
# h2 (ranks 4 and 5) lost: its daemon is a leaf of the routing tree (radix 64)
node_loss_ulfm_runs_on() { node_loss_runs_on h2 0 1 2 3 --; }
# h1 (ranks 2 and 3) lost in a chain (routed_radix 1: daemon 2's parent is daemon 1): daemon
# 2 loses its parent and must be adopted by the HNP, or it exits and takes h2 with it
node_loss_route_repaired() { node_loss_runs_on h1 0 1 4 5 -- --prtemca routed_radix 1; }

# Without ULFM nothing changes: the job ends at the loss, with PRRTE's message, no hang.
node_loss_ends_a_job_without_ulfm() {
    local job rc log=$logs/cluster-node-loss-no-ulfm.log
    node_loss_job "$log" --mca coll ^ftrabit
    node_loss_kill h2 "$log" 0 1 2 3 || return 1
    grep -aq "lost communication with a remote daemon" "$log" && ! grep -aq "PASS" "$log"
}

# node_loss_ftr_kmeans LOG OPTIONS...: ftr_kmeans (6 ranks) across the cluster; ranks 4
# and 5 hold at iteration 7 until h2 (theirs) is killed; sets $rc.
node_loss_ftr_kmeans() {
    local log=$1 marks i job
    shift
    marks=$(mktemp -d)
    timeout --verbose -k 10 "$ft_timeout_s" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm "$@" \
        -np 6 "$build/examples/ftr_kmeans" --kill-marks "$marks" --hold 4:7 --hold 5:7 \
        </dev/null >"$log" 2>&1 &
    job=$!
    for ((i = 0; i < 600; i++)); do
        [ -e "$marks/held-4" ] && [ -e "$marks/held-5" ] && break
        sleep 0.1
    done
    if [ ! -e "$marks/held-4" ] || [ ! -e "$marks/held-5" ]; then
        echo "ranks 4 and 5 never reached iteration 7"; kill "$job"; wait "$job"; rm -rf "$marks"; cat "$log"; return 1
    fi
    cluster_kill_host h2 || return 1
    wait "$job"
    rc=$?
    rm -rf "$marks"
    cat "$log"
    echo "job exit code $rc"
    ! grep -aq "^timeout: sending signal" "$log" || { echo "HANG"; return 1; }
    grep -aq "lost daemon .* on node h2" "$log" || { echo "mpirun did not report the lost daemon"; return 1; }
}

# (ftr_kmeans's default recovery, respawn, is not tested across hosts: MPI_Comm_spawn's
# connect across nodes corrupts mpirun's heap in the bundled PRRTE, with or without a node
# loss - docs/node-loss.md, scripts/ompi-patches-drafts/0003-*.patch.)
# ftr_kmeans under the shrink policy: it ends on the 4 survivors with the centroids of a
# one-host run whose ranks 4 and 5 die at the same point.
node_loss_ftr_kmeans_shrinks() {
    local rc timed_out got reference log=$logs/cluster-node-loss-ftr-kmeans-shrink.log
    local shrink=(--mca coll_ftrabit_recovery shrink)
    run_timed "$ft_timeout_s" "$log.reference" "${mpirun[@]}" --with-ft ulfm "${shrink[@]}" \
        -np 6 "$build/examples/ftr_kmeans" --kill 4:7 --kill 5:7
    reference=$(ft_fingerprint "$log.reference")
    [ -n "$reference" ] || { echo "the one-host reference run did not finish"; cat "$log.reference"; return 1; }
    node_loss_ftr_kmeans "$log" "${shrink[@]}" || return 1
    got=$(ft_fingerprint "$log")
    [ "$got" = "$reference" ] || { echo "fingerprint ${got:-missing}, one-host reference $reference"; return 1; }
    grep -aq "on 4 ranks" "$log"
}

in_cluster check cluster/node-loss/ulfm-runs-on node_loss_ulfm_runs_on
in_cluster check cluster/node-loss/ftr-kmeans-shrinks node_loss_ftr_kmeans_shrinks
in_cluster check cluster/node-loss/route-repaired node_loss_route_repaired
in_cluster check cluster/node-loss/no-ulfm-ends-the-job node_loss_ends_a_job_without_ulfm
in_cluster check cluster/down-leaves-nothing cluster_down_leaves_nothing

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
