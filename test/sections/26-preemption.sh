# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# coll/ftrabit: a preemption notice (SIGTERM) turned into a handover at the next checkpoint
# (ftrabit_notice.c, coll_ftrabit_notice), under plain mpirun on this host. Under Slurm, on
# the simulated hosts: test/sections/47-slurm.sh.

echo "== coll/ftrabit: preemption notices (timeout ${ft_timeout_s}s each)"

# preemption_job LOG NP [mpirun options...] -- [ftr_kmeans options...]: ftr_kmeans in the
# background (marks in $marks, job in $job), checkpoints every 5 iterations.
preemption_job() {
    local log=$1 np=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    marks=$(mktemp -d)
    start_timed "$ft_timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm "${opts[@]}" \
        -np "$np" "$build/examples/ftr_kmeans" --kill-marks "$marks" "$@"
}

# preemption_paused_pid R: the pid of original rank R once it paused (ftr_kmeans --pause);
# 1 if it never did.
preemption_paused_pid() {
    local i
    for ((i = 0; i < ft_timeout_s * 10; i++)); do
        [ -s "$marks/paused-$1" ] && { head -n 1 "$marks/paused-$1"; return 0; }
        sleep 0.1
    done
    echo "rank $1 never paused" >&2
    return 1
}

preemption_release() { rm -f "$marks/paused-$1"; } # R: paused rank R goes on

# preemption_reference APP: the fingerprint of ftr_kmeans on APP ranks without failures
# (shared with ft_run's references).
preemption_reference() {
    local key="${launch[*]} ftr_kmeans $1 " log=$logs/ft-preemption-reference-np$1.log
    if [ -z "${ft_reference[$key]:-}" ]; then
        ft_launch ftr_kmeans "$log" "$1" ""
        ft_reference[$key]=$(ft_fingerprint "$log")
    fi
    echo "${ft_reference[$key]}"
}

# preemption_ended LOG APP [any-exit]: the job ended in time, with exit 0 (unless any-exit:
# mpirun exits 1 when a process died of a signal other than SIGKILL), with the fingerprint
# of a run without failures on APP ranks.
preemption_ended() {
    local log=$1 app=$2 any_exit=${3:-} reference got
    wait_timed "$log"
    rm -rf "$marks"
    cat "$log"
    echo "job exit code $rc"
    [ "$timed_out" = 0 ] || { echo "HANG"; return 1; }
    reference=$(preemption_reference "$app")
    got=$(ft_fingerprint "$log")
    [ -n "$reference" ] && [ "$got" = "$reference" ] \
        || { echo "fingerprint ${got:-missing}, reference ${reference:-missing}"; return 1; }
    [ "$rc" = 0 ] || [ -n "$any_exit" ] || { echo "mpirun exited with $rc"; return 1; }
}

# preemption_handed_over LOG R HOW: rank R was handed over at the checkpoint after its
# notice (iteration 10, version 2: nothing replayed) to a process of kind HOW ("spare takes
# over" or "replacement starts"), the notified process left, and nothing was recovered.
preemption_handed_over() {
    local log=$1 r=$2 how=$3
    grep -aq "^rank $r: $how at iteration 10 (checkpoint version 2)" "$log" \
        || { echo "rank $r was not taken over at iteration 10 by a '$how'"; return 1; }
    grep -aq "rank $r (world rank [0-9]*) handed over after a preemption notice; this process" \
        "$log" || { echo "the notified process did not say it leaves"; return 1; }
    grep -aq "handed over the rank(s) of a preemption notice" "$log" \
        || { echo "no handover announced"; return 1; }
    ! grep -aq "recovered from a process failure" "$log" \
        || { echo "a recovery from a failure happened"; return 1; }
}

# preemption_notify_and_kill R LOG: rank R paused at iteration 7 gets SIGTERM and goes on;
# once the handover is announced, the notified process gets the SIGKILL that ends its grace
# time (rank 0, paused at iteration 20, waits for it), then rank 0 goes on.
preemption_notify_and_kill() {
    local r=$1 log=$2 pid
    pid=$(preemption_paused_pid "$r") || return 1
    kill -TERM "$pid"
    preemption_release "$r"
    preemption_paused_pid 0 >/dev/null || return 1
    wait_for_line_in "$log" "handed over after a preemption notice" || return 1
    kill -KILL "$pid"
    preemption_release 0
}

wait_for_line_in() { # LOG TEXT: until TEXT is in LOG (at most ft_timeout_s)
    local i
    for ((i = 0; i < ft_timeout_s * 10; i++)); do
        grep -aq "$2" "$1" && return 0
        sleep 0.1
    done
    echo "'$2' never appeared"
    return 1
}

# 4 ranks and 2 spares: rank 1 gets a SIGTERM at iteration 7; at the checkpoint after
# iteration 9 a spare takes its rank from that checkpoint, and the notified process waits
# with the spares; its SIGKILL then starts no recovery. Without the notice (0) the SIGTERM
# killed rank 1 and the spare replayed from iteration 5.
preemption_hands_over_to_a_spare() {
    local job marks rc timed_out log=$logs/ft-preemption-spare.log
    preemption_job "$log" 6 --mca coll_ftrabit_spares 2 -- --pause 1:7 --pause 0:20
    preemption_notify_and_kill 1 "$log" || { stop_timed "$log"; cat "$log"; return 1; }
    preemption_ended "$log" 4 && preemption_handed_over "$log" 1 "spare takes over" \
        && [ "$(ft_takeovers "$log")" = "1 spare(s), 0 respawned" ]
}

# 4 ranks, no spares: the same with a respawned replacement; the notified process waits in
# MPI_Finalize, where its SIGKILL finds it.
preemption_hands_over_to_a_replacement() {
    local job marks rc timed_out log=$logs/ft-preemption-respawn.log
    preemption_job "$log" 4 -- --pause 2:7 --pause 0:20
    preemption_notify_and_kill 2 "$log" || { stop_timed "$log"; cat "$log"; return 1; }
    preemption_ended "$log" 4 && preemption_handed_over "$log" 2 "replacement starts" \
        && [ "$(ft_takeovers "$log")" = "0 spare(s), 1 respawned" ]
}

# Every rank notified (a whole job preempted): nobody to hand over to; they say so and
# finish (the SIGKILL, had it come, would have ended them).
preemption_every_rank() {
    local job marks rc timed_out log=$logs/ft-preemption-every-rank.log
    preemption_job "$log" 3 -- --notice 0:7 --notice 1:7 --notice 2:7
    preemption_ended "$log" 3 && grep -aq "every rank got a preemption notice" "$log" \
        && ! grep -aq "handed over" "$log"
}

# preemption_sigterm_kills LOG SIGNALS [mpirun options]: rank 1 (of 4, 1 spare) paused at
# iteration 7 gets SIGNALS SIGTERMs and dies of them: an ordinary recovery, the spare
# replaying from iteration 5.
preemption_sigterm_kills() {
    local log=$1 signals=$2 job marks rc timed_out pid i
    shift 2
    preemption_job "$log" 5 --mca coll_ftrabit_spares 1 "$@" -- --pause 1:7
    pid=$(preemption_paused_pid 1) || { stop_timed "$log"; cat "$log"; return 1; }
    for ((i = 0; i < signals; i++)); do kill -TERM "$pid"; sleep 0.2; done
    preemption_release 1
    preemption_ended "$log" 4 any-exit \
        && grep -aq "^rank 1: spare takes over at iteration 5 " "$log" \
        && grep -aq "recovered from a process failure" "$log" && ! grep -aq "handed over" "$log"
}
preemption_second_sigterm() { preemption_sigterm_kills "$logs/ft-preemption-twice.log" 2; }
preemption_off() {
    preemption_sigterm_kills "$logs/ft-preemption-off.log" 1 --mca coll_ftrabit_notice 0
}

# With durable checkpoints (test/sections/25-durable.sh's runs: 60 iterations, a checkpoint
# every 5): rank 1 notified at iteration 7 is handed to the spare at the checkpoint after
# iteration 9, the notice's bit of the agreement beside the durable ones; the spare writes
# from there on, the job ends right, and its last version (12) is complete on disk: started
# again, it resumes from it with the same results.
preemption_with_durable_checkpoints() {
    local dir log=$logs/ft-preemption-durable rc timed_out want
    dir=$(mktemp -d)
    want=$(durable_reference 4)
    durable_run "$log.log" "$dir" 5 --mca coll_ftrabit_spares 1 -- --notice 1:7
    grep -av '^timeline' "$log.log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && [ "$(durable_results "$log.log")" = "$want" ] \
        || { echo "results: $(durable_results "$log.log")"; echo "reference: $want"; return 1; }
    preemption_handed_over "$log.log" 1 "spare takes over" || return 1
    durable_restart_ends_right "$log-restart.log" "$dir" 5 12 --mca coll_ftrabit_spares 1 \
        && rm -rf "$dir"
}

check ft/preemption/hands-over-to-a-spare preemption_hands_over_to_a_spare
check ft/preemption/hands-over-to-a-replacement preemption_hands_over_to_a_replacement
check ft/preemption/every-rank-notified preemption_every_rank
check ft/preemption/with-durable-checkpoints preemption_with_durable_checkpoints
check ft/preemption/second-sigterm-ends-the-process preemption_second_sigterm
check ft/preemption/off-sigterm-ends-the-process preemption_off
