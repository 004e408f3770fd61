# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# Durable checkpoints (coll_ftrabit_checkpoint_dir, docs/durable-checkpoints.md): what is
# written, and jobs that lost everything in memory, killed whole, killed in the middle of a
# write, started again from the directory; damaged files, other jobs' files, a full disk.

echo "== durable checkpoints (timeout ${ft_timeout_s}s per job)"
unit test_ftrabit_store

# Every run is ftr_kmeans on 4 ranks with --local-assignments: the local checkpoint holds
# each point's cluster and the moves counted since the start, and each rank prints its
# fingerprint, so that a restart that got any rank's local state wrong shows.
durable_args=(--local-assignments --iterations 60 --checkpoint-every 5 --points 100000)
declare -A durable_reference_of

# durable_run LOG DIR NP [mpirun options...] [-- program options...]: ftr_kmeans with
# coll_ftrabit_checkpoint_dir DIR (none when DIR is ""), through run_timed.
durable_run() {
    local log=$1 dir=$2 np=$3 opts=() args=()
    shift 3
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    [ -n "$dir" ] && opts+=(--mca coll_ftrabit_checkpoint_dir "$dir")
    run_timed "$ft_timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm "${opts[@]}" \
        -np "$np" "$build/examples/ftr_kmeans" "${durable_args[@]}" "${args[@]}"
}

# durable_results LOG: the centroids' fingerprint and every rank's local one, on one line.
durable_results() {
    { ft_fingerprint "$1"; grep -a '^rank [0-9]* local fingerprint' "$1" | sort; } | tr '\n' ' '
}

# durable_reference NP: the results of a run without failures or directory.
durable_reference() {
    local key="${launch[*]} $1" log=$logs/durable-reference-np$1.log rc timed_out
    if [ -z "${durable_reference_of[$key]:-}" ]; then
        durable_run "$log" "" "$1"
        [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && durable_reference_of[$key]=$(durable_results "$log")
    fi
    echo "${durable_reference_of[$key]:-}"
}

# durable_restart_ends_right LOG DIR NP VERSIONS [mpirun options...]: the job started again
# resumes from one of VERSIONS (a regular expression) and ends with the reference results
# (of a run on NP ranks, or on NP-S with --mca coll_ftrabit_spares S).
durable_restart_ends_right() {
    local log=$1 dir=$2 np=$3 versions=$4 want got rc timed_out app=$3 o prev=""
    shift 4
    for o in "$@"; do # the reference runs on the application's ranks, without spares
        [ "$prev" = coll_ftrabit_spares ] && app=$((np - o))
        prev=$o
    done
    want=$(durable_reference "$app")
    [ -n "$want" ] || { echo "the reference run failed"; return 1; }
    durable_run "$log" "$dir" "$np" "$@"
    grep -av '^timeline' "$log"
    got=$(durable_results "$log")
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || { echo "restart: exit $rc, timed out $timed_out"; return 1; }
    grep -aEq "restarting from durable checkpoint version ($versions) in $dir " "$log" \
        || { echo "did not resume from version $versions"; return 1; }
    [ "$got" = "$want" ] || { echo "results: $got"; echo "reference: $want"; return 1; }
}

# The files a run (12 checkpoints) leaves on a directory every rank shares: per version one
# global state and one local state per rank, no copies of predecessors' states (the
# directory holds the owner's), nothing temporary; the 2 versions known complete
# (coll_ftrabit_checkpoint_keep) and the last, not known complete before the job ended.
# Then damaged files: a byte of the newest global state changed, then a local state of the
# newest version cut short: each is reported with its path, and the version before it is
# resumed.
durable_files_and_damage() {
    local dir log=$logs/durable-damaged rc timed_out files want="" v r
    dir=$(mktemp -d)
    durable_run "$log.log" "$dir" 4
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || { cat "$log.log"; return 1; }
    files=$(cd "$dir" && ls | tr '\n' ' ')
    echo "files: $files"
    for v in 10 11 12; do
        want="${want}ftrabit-v$v-global.ckpt "
        for r in 0 1 2 3; do want="${want}ftrabit-v$v-r$r.ckpt "; done
    done
    [ "$files" = "$(echo "$want" | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ')" ] \
        || { echo "expected: $want"; return 1; }
    printf '\377' | dd of="$dir/ftrabit-v12-global.ckpt" bs=1 seek=300 conv=notrunc 2>/dev/null
    durable_restart_ends_right "$log-flipped.log" "$dir" 4 11 || return 1
    grep -aq "durable checkpoint $dir/ftrabit-v12-global.ckpt: corrupt" "$log-flipped.log" || return 1
    truncate -s -1 "$dir/ftrabit-v12-r2.ckpt"
    durable_restart_ends_right "$log-torn.log" "$dir" 4 11 || return 1
    grep -aq "durable checkpoint $dir/ftrabit-v12-r2.ckpt: torn" "$log-torn.log" || return 1
    rm -rf "$dir"
}
check durable/damaged-files-fall-back/np4 durable_files_and_damage

# durable_wait_for FILE: until FILE exists (a --hold's mark); 1 if it did not within the
# jobs' timeout.
durable_wait_for() {
    local i
    for ((i = 0; i < ft_timeout_s * 10; i++)); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# job_tree PID: every process under PID.
job_tree() {
    local p
    for p in $(pgrep -P "$1"); do echo "$p"; job_tree "$p"; done
}

# The whole job SIGKILLed at once, mpirun and every rank, in its 33rd iteration (a
# preempted allocation; rank 0 holds there until the kill, so that it comes at a known
# point whatever the machine's speed), then started again: it resumes from the directory
# and ends as a run without failures.
durable_whole_job_killed() {
    local dir marks log=$logs/durable-whole-job-killed rc timed_out job pids held
    dir=$(mktemp -d) marks=$(mktemp -d)
    durable_reference 4 >/dev/null
    start_timed "$ft_timeout_s" "$log.log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_checkpoint_dir "$dir" -np 4 "$build/examples/ftr_kmeans" \
        "${durable_args[@]}" --hold 0:33 --kill-marks "$marks"
    durable_wait_for "$marks/held-0"
    held=$?
    pids=$(job_tree "$job")
    echo "killing the job: $(echo $pids)"
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids
    wait_timed "$log.log"
    rm -rf "$marks"
    cat "$log.log"
    [ $held = 0 ] || { echo "rank 0 never reached iteration 33"; return 1; }
    durable_restart_ends_right "$log-restart.log" "$dir" 4 "[67]" && rm -rf "$dir"
}
check durable/whole-job-killed-restarts/np4 durable_whole_job_killed

# Every in-memory copy of a rank's state lost: ranks 1 and 2 killed together with one
# local replica (rank 1's is on rank 2). The job ends with "recovery is not possible" and a
# message naming the directory and the command to restart; started again, it resumes from
# the directory and ends right.
durable_every_copy_lost() {
    local dir log=$logs/durable-every-copy-lost marks rc timed_out
    dir=$(mktemp -d) marks=$(mktemp -d)
    durable_run "$log.log" "$dir" 4 --mca coll_ftrabit_local_replicas 1 -- \
        --kill 1:12 --kill 2:12 --kill-marks "$marks"
    rm -rf "$marks"
    cat "$log.log"
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] || { echo "exit $rc, timed out $timed_out"; return 1; }
    grep -aq "recovery is not possible" "$log.log" \
        && grep -aq "the job can restart from its durable checkpoints in $dir: .*e.g. mpirun --with-ft ulfm -np 4 .*--mca coll_ftrabit_checkpoint_dir $dir .*ftr_kmeans --local-assignments" "$log.log" \
        || return 1
    durable_restart_ends_right "$log-restart.log" "$dir" 4 "[12]" \
        --mca coll_ftrabit_local_replicas 1 && rm -rf "$dir"
}
check durable/every-copy-lost-then-restart/np4 durable_every_copy_lost

# A process killed in the middle of writing a file (coll_ftrabit_test_kill_in_write: rank
# 0, the writer of the global state, dies with half of version 3's written; the abort
# policy ends the job there): the previous version stays usable. Started again, the job
# resumes from version 2, and the dead writer's temporary file is gone.
durable_killed_in_write() {
    local dir log=$logs/durable-killed-in-write rc timed_out
    dir=$(mktemp -d)
    durable_run "$log.log" "$dir" 4 --mca coll_ftrabit_recovery abort \
        --mca coll_ftrabit_test_kill_in_write 0 --mca coll_ftrabit_test_kill_in_write_version 3
    cat "$log.log"
    ls -l "$dir"
    grep -aq "killing this process in the middle of writing $dir/ftrabit-v3-global.ckpt.tmp-" \
        "$log.log" || return 1
    ls "$dir" | grep -q '^ftrabit-v3-global.ckpt.tmp-' || { echo "no temporary file left"; return 1; }
    ! ls "$dir" | grep -q '^ftrabit-v3-global.ckpt$' || return 1
    durable_restart_ends_right "$log-restart.log" "$dir" 4 2 || return 1
    grep -aq "version 3 in $dir is incomplete (its global state is in no readable file)" \
        "$log-restart.log" || return 1
    ! ls "$dir" | grep -q '\.tmp-' || { echo "temporary files left: $(ls "$dir")"; return 1; }
    rm -rf "$dir"
}
check durable/killed-in-write-previous-version-used/np4 durable_killed_in_write

# Recoveries in memory while durable checkpoints are written: ranks are replaced (respawn,
# then a warm spare), the directories are probed again, and the replacements write their
# files from the next checkpoint on: the job ends right, and its last version (12) is
# complete on disk: started again (with the spare, as the command says), it resumes from
# it and prints the same results.
durable_recoveries_keep_writing() { # LABEL [mpirun options...]
    local label=$1 dir marks log rc timed_out want np=4
    shift
    [[ "$*" == *coll_ftrabit_spares* ]] && np=5
    log=$logs/durable-recoveries-$label
    dir=$(mktemp -d) marks=$(mktemp -d)
    want=$(durable_reference 4)
    durable_run "$log.log" "$dir" "$np" "$@" -- --kill 1:7 --kill 2:23 --kill-marks "$marks"
    rm -rf "$marks"
    grep -av '^timeline' "$log.log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && [ "$(durable_results "$log.log")" = "$want" ] \
        && grep -Eq "replacement starts|spare takes over" "$log.log" || return 1
    durable_restart_ends_right "$log-restart.log" "$dir" "$np" 12 "$@" && rm -rf "$dir"
}
check durable/recoveries-keep-writing/respawn/np4 durable_recoveries_keep_writing respawn
check durable/recoveries-keep-writing/spares/np5 durable_recoveries_keep_writing spares \
    --mca coll_ftrabit_spares 1

# Directories of another job are refused with a clear error, and left as they are: another
# number of ranks, another program, another layout of the state (more clusters: a larger
# global state).
durable_other_jobs_refused() {
    local dir log=$logs/durable-refused rc timed_out before
    dir=$(mktemp -d)
    durable_run "$log.log" "$dir" 4 -- --iterations 10
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || { cat "$log.log"; return 1; }
    before=$(ls -l --time-style=full-iso "$dir")
    durable_run "$log-np3.log" "$dir" 3 -- --iterations 10
    cat "$log-np3.log"
    [ "$rc" != 0 ] && grep -aq "the newest checkpoint in $dir (version 2) is of a job of 4 ranks, and this job has 3" "$log-np3.log" \
        && ! grep -aq "^final centroids" "$log-np3.log" || return 1
    run_timed "$ft_timeout_s" "$log-program.log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_checkpoint_dir "$dir" -np 4 "$build/test/mpi/ft_campaign"
    cat "$log-program.log"
    [ "$rc" != 0 ] && grep -aq "durable checkpoint $dir/ftrabit-v2-global.ckpt was written by program ftr_kmeans, not by ft_campaign" "$log-program.log" \
        && grep -aq "$dir holds checkpoints this program (ft_campaign) did not write" "$log-program.log" \
        || return 1
    durable_run "$log-layout.log" "$dir" 4 -- --iterations 10 --clusters 9
    cat "$log-layout.log"
    [ "$rc" != 0 ] && grep -aq "read back from coll_ftrabit_checkpoint_dir $dir: a checkpoint of another layout" "$log-layout.log" \
        || return 1
    [ "$(ls -l --time-style=full-iso "$dir")" = "$before" ] || { echo "the directory changed"; return 1; }
    rm -rf "$dir"
}
check durable/other-jobs-refused/np4 durable_other_jobs_refused

# A full disk: the directory is a file system of 64 KiB (tmpfs, in a mount namespace of the
# job's own) and the global state 100 KB. Its write is refused before it starts, reported
# with its path; every rank stops writing; the job goes on with in-memory checkpoints and
# ends right; the file system is not filled.
durable_disk_full() {
    local name=durable/disk-full-job-goes-on/np4 dir log=$logs/durable-disk-full.log rc timed_out
    if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private -- \
            sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' 2>/dev/null; then
        echo "SKIP: needs root and tmpfs mounts in a mount namespace (unshare --mount)"
        return 2
    fi
    dir=$(mktemp -d)
    local args=(--iterations 12 --clusters 250 --dims 50 --points 2000)
    run_timed "$ft_timeout_s" "$log.reference" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm -np 4 \
        "$build/examples/ftr_kmeans" "${args[@]}"
    run_timed "$ft_timeout_s" "$log" unshare --mount --propagation private -- sh -c \
        'mount -t tmpfs -o size=64k tmpfs "$1" && shift && "$@"; rc=$?; df -k "$DIR_OF_TEST" | tail -n 1; ls -la "$DIR_OF_TEST"; exit $rc' \
        _ "$dir" env DIR_OF_TEST="$dir" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_checkpoint_dir "$dir" -np 4 "$build/examples/ftr_kmeans" "${args[@]}"
    cat "$log"
    rmdir "$dir"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || return 1
    [ "$(ft_fingerprint "$log")" = "$(ft_fingerprint "$log.reference")" ] || return 1
    grep -aq "rank 0: durable checkpoint version 1 not written: $dir/ftrabit-v1-global.ckpt: free space (the file system has less room than the file needs): No space left on device" "$log" \
        && grep -aq "durable checkpoints in $dir are off from version 2 on: a rank could not write its files" "$log" \
        && ! grep -aq '\.tmp-' "$log"
}
durable_disk_full_check() {
    local name=durable/disk-full-job-goes-on/np4 out
    selected "$name" || return 0
    out=$logs/durable-disk-full.out
    durable_disk_full >"$out" 2>&1
    case $? in
        0) pass "$name" ;;
        2) skip "$name" "$(sed -n 's/^SKIP: //p' "$out")" ;;
        *) fail "$name" "failed" "$out" ;;
    esac
}
durable_disk_full_check
