# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# A whole host lost under ULFM (Open MPI patch 0002, docs/node-loss.md).

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

# ftr_kmeans under its default policy, respawn: the two replacements are spawned onto the
# live hosts (h2 is down: PRRTE maps nothing there) and the job ends with the centroids of
# a run without failures (Open MPI patches 0002-0004).
node_loss_ftr_kmeans_respawns() {
    local rc timed_out got reference log=$logs/cluster-node-loss-ftr-kmeans-respawn.log
    run_timed "$ft_timeout_s" "$log.reference" "${mpirun[@]}" --with-ft ulfm -np 6 \
        "$build/examples/ftr_kmeans"
    reference=$(ft_fingerprint "$log.reference")
    [ -n "$reference" ] || { echo "the run without failures did not finish"; cat "$log.reference"; return 1; }
    node_loss_ftr_kmeans "$log" || return 1
    got=$(ft_fingerprint "$log")
    [ "$got" = "$reference" ] || { echo "fingerprint ${got:-missing}, run without failures $reference"; return 1; }
    [ "$(grep -ac "replacement starts" "$log")" = 2 ] || { echo "expected 2 replacements"; return 1; }
}

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
in_cluster check cluster/node-loss/ftr-kmeans-respawns node_loss_ftr_kmeans_respawns
in_cluster check cluster/node-loss/route-repaired node_loss_route_repaired
in_cluster check cluster/node-loss/no-ulfm-ends-the-job node_loss_ends_a_job_without_ulfm
