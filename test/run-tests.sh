#!/usr/bin/env bash
# ompi-resilience test runner: unit tests (no MPI runtime) and MPI tests under mpirun,
# each with a timeout. A hang is a failure that names the test and the ranks that never
# finished. Ends with the line "N passed, N failed, N skipped".
#
# Usage: test/run-tests.sh BUILD_DIR [NAME_FILTER]
# Needs OMPI_PREFIX (the Open MPI install) in the environment; BUILD_DIR is a configured
# and built tree whose `make install` went to BUILD_DIR/stage (scripts/test.sh does all that).
# This file holds the helpers (run_timed, unit, mpi, check); the tests are in test/sections/,
# one file per part of the project, sourced in file-name order.
set -u
build=$(cd "${1:?usage: test/run-tests.sh BUILD_DIR [FILTER]}" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
filter=${2:-}
# shellcheck source=test/hang-stacks.sh
. "$src/test/hang-stacks.sh"
: "${OMPI_PREFIX:?set OMPI_PREFIX to the Open MPI install (scripts/test.sh does)}"
timeout_s=${OMPIRES_TEST_TIMEOUT:-120}
logs=$build/test-logs
# Marks every process this run starts (see the clean-up at the end).
export OMPIRES_TEST_RUN="$$-$(date +%s%N)"
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
# hang is told by timeout's message, not by the exit code. A job still running at three
# quarters of its time has its processes' stacks taken (gdb, test/hang-stacks.sh); on a
# hang they end the log.
run_timed() {
    local job
    start_timed "$@"
    wait_timed "$2"
}

# start_timed SECONDS LOG CMD...: run_timed's first half, for a test that acts while the job
# runs (kills a host, cuts a network): starts CMD in the background and sets $job;
# wait_timed LOG waits for it and sets $rc and $timed_out.
start_timed() {
    local limit=$1 log=$2
    shift 2
    rm -f "$log.stacks"
    timed_stacks_at=$((limit * 3 / 4))
    timeout --verbose -k 10 "$limit" "$@" </dev/null >"$log" 2>&1 &
    job=$!
    hang_watch "$job" "$timed_stacks_at" "$log.stacks"
}

# stop_timed LOG: end the job start_timed started (a test gave up on it) and wait for it.
# timeout, killed, says it sent a signal: that was this stop, not a hang.
stop_timed() {
    kill "$job" 2>/dev/null
    wait_timed "$1"
    timed_out=0
}

wait_timed() {
    local log=$1
    wait "$job"
    rc=$?
    hang_unwatch "$log.stacks"
    # Open MPI's help messages forwarded from a process under --with-ft ulfm can end with a
    # NUL byte, glued to the start of the next line: drop them so that lines match.
    if grep -qaP '\x00' "$log" 2>/dev/null; then
        tr -d '\000' <"$log" >"$log.nul" && mv "$log.nul" "$log"
    fi
    timed_out=0
    if grep -aq "^timeout: sending signal" "$log"; then
        timed_out=1
        if [ -s "$log.stacks" ]; then
            echo "== stacks at $timed_stacks_at s ($log.stacks):" >>"$log"
            cat "$log.stacks" >>"$log"
        fi
    fi
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
# With mpi_rerun_why="REASON" set for the call, a failed run is run once more and only a
# second failure fails the test; the first is reported as RERUN with REASON and its log kept
# (LOG.first). Only for reference runs over Open MPI's own components with a known defect.
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
    local rc timed_out why attempt runs=1
    [ -n "${mpi_rerun_why:-}" ] && runs=2
    for ((attempt = 1; attempt <= runs; attempt++)); do
        run_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" "${opts[@]}" -np "$np" "$bin" "${args[@]}"
        why=$(mpi_verdict "$expect" "$np" "$log")
        [ -z "$why" ] && { pass "$name"; return; }
        [ $attempt -lt $runs ] || break
        mv "$log" "$log.first"
        printf 'RERUN %s: %s; %s (log: %s)\n' "$name" "$why" "$mpi_rerun_why" "$log.first"
    done
    fail "$name" "$why" "$log"
}

# mpi_verdict EXPECT NP LOG: nothing when the run just made (rc, timed_out) met EXPECT, or why not.
mpi_verdict() {
    local expect=$1 np=$2 log=$3
    if [ $timed_out = 1 ]; then
        echo "HANG: no result after ${timeout_s}s; ranks that never finished: $(missing_ranks "$log" "$np")"
        return
    fi
    case "$expect" in
        pass)
            [ $rc -eq 0 ] && grep -aq "^mpitest .*: np $np: PASS" "$log" || echo "exit code $rc" ;;
        abort:*)
            [ $rc -ne 0 ] && grep -aq "${expect#abort:}" "$log" \
                || echo "expected an abort saying '${expect#abort:}', got exit code $rc" ;;
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

# The tests, section by section, in file-name order (test/sections/NN-name.sh).
for section in "$src"/test/sections/[0-9]*.sh; do
    # shellcheck source=/dev/null
    . "$section"
done

# Leave nothing behind: a leftover rank would slow every later run on this machine. Only
# this run's processes (they inherit its OMPIRES_TEST_RUN): a kill campaign or another test
# run using the same build at the same time is left alone (ending them here made their
# jobs look hung). SIGKILL: coll/ftrabit takes a first SIGTERM as a preemption notice.
for pid in $(pgrep -f "$build/test/" || true); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPIRES_TEST_RUN=$OMPIRES_TEST_RUN"; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
done

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    printf '  %s\n' "${failures[@]}"
    echo "logs: $logs"
fi
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
