# shellcheck shell=bash
# ompi-resilience: the stacks of a job that hangs, taken before its timeout ends it.
# Sourced by test/run-tests.sh and test/campaign/run-campaign.sh. Needs gdb; without it
# nothing is taken (a hang is still reported, without stacks).
#
# hang_watch PID SECONDS OUT [PATTERN]: in the background, after SECONDS, if PID still
#   runs, write the stacks of every process below it (mpirun, PRRTE's daemons and shells
#   excepted), or of every process whose command line matches PATTERN (pgrep -f), to OUT.
#   Sets hang_watcher to the watcher's pid.
# hang_more_pids: if set, the name of a command printing more pids whose stacks to take,
#   PRRTE's daemons among them (the multi-host tests name every process of the simulated
#   hosts: a daemon whose parent host was killed is no longer below mpirun).
# hang_unwatch: stop the watcher if it has not started taking stacks (the job ended).

hang_descendants() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        echo "$child"
        hang_descendants "$child"
    done
}

hang_stacks() { # PID [PATTERN]
    local pid comm pass pids daemons=0
    if [ -n "${2:-}" ]; then pids=$(pgrep -f "$2"); else pids=$(hang_descendants "$1"); fi
    if [ -n "${hang_more_pids:-}" ]; then
        pids=$({ echo "$pids"; "$hang_more_pids"; } | sort -nu)
        daemons=1
    fi
    # the application's processes first: under load each gdb takes seconds, and the job's
    # time may run out before the daemons' turn
    for pass in application daemons; do
        for pid in $pids; do
            comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
            case $comm in
                prterun | mpirun | timeout | sh | bash | ssh | ip | nsenter | awk | sleep) continue ;;
                prted) [ "$daemons" = 1 ] && [ "$pass" = daemons ] || continue ;;
                *) [ "$pass" = application ] || continue ;;
            esac
            echo "=== stacks of pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
            timeout 20 gdb -batch -nx -p "$pid" -ex "thread apply all bt 30" </dev/null 2>/dev/null \
                | grep -E '^(Thread|#)'
        done
    done
}

hang_watch() {
    local pid=$1 seconds=$2 out=$3 pattern=${4:-}
    hang_watcher=""
    command -v gdb >/dev/null 2>&1 || return 0
    (
        # quiet: when the job ends first, its sleep is killed, and a shell says so on stderr
        exec 2>/dev/null
        sleep "$seconds"
        kill -0 "$pid" || exit 0
        : >"$out.taking"
        hang_stacks "$pid" "$pattern" >"$out"
        rm -f "$out.taking"
    ) &
    hang_watcher=$!
}

hang_unwatch() {
    local out=$1
    [ -n "${hang_watcher:-}" ] || return 0
    if [ -e "$out.taking" ] || [ -e "$out" ]; then
        wait "$hang_watcher" 2>/dev/null || true
    else
        pkill -P "$hang_watcher" 2>/dev/null || true # its sleep
        kill "$hang_watcher" 2>/dev/null || true
        wait "$hang_watcher" 2>/dev/null || true
    fi
    hang_watcher=""
}
