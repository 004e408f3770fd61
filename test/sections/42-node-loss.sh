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
# (coll ^ftrabit: ftrabit's allreduce is for jobs using the FTR_* API). The program's
# arguments are node_loss_args (a caller may make it local).
node_loss_args=(4)
node_loss_job() {
    local log=$1
    shift
    start_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" "$@" -np 6 \
        "$build/test/mpi/ft_node_loss" "${node_loss_args[@]}"
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
        echo "the job never started iterating"; stop_timed "$log"; cat "$log"; return 1
    fi
    cluster_kill_host "$host" || return 1
    wait_timed "$log"
    cat "$log"
    echo "job exit code $rc"
    [ "$timed_out" = 0 ] \
        || { echo "HANG: ranks that never finished: $(ranks_not_done "$log" "$@")"; return 1; }
}

# node_loss_runs_on HOST SURVIVORS -- OPTIONS...: under ULFM the job runs on: the survivors
# see MPI_ERR_PROC_FAILED, revoke, shrink to 4 ranks, agree, and MPI_Finalize returns on
# each (its PMIx fence leaves HOST out).
node_loss_runs_on() {
    local host=$1 survivors=() job rc log=$logs/cluster-node-loss-$1${node_loss_tag:-}.log
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
# Before the loss each rank talks only to its ring neighbours: ranks 1 and 2 never address
# ranks 4 and 5 of h2, their children in the agreement's binary tree. The survivors' revoke,
# agreement and shrink must see those two dead (Open MPI patch 0012: without it every
# survivor waited in MPIX_Comm_agree for ever, 3 runs of 3), and a survivor that revokes
# before it is told who died asks for rank 5's address after its daemon was lost (patch
# 0013: without it that lookup waited for ever, 1 run in 10)
node_loss_ring_neighbours() {
    local node_loss_args=(--ring 4) node_loss_tag=-ring
    node_loss_runs_on h2 0 1 2 3 --
}

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
    start_timed "$ft_timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm "$@" \
        -np 6 "$build/examples/ftr_kmeans" --kill-marks "$marks" --hold 4:7 --hold 5:7
    for ((i = 0; i < 600; i++)); do
        [ -e "$marks/held-4" ] && [ -e "$marks/held-5" ] && break
        sleep 0.1
    done
    if [ ! -e "$marks/held-4" ] || [ ! -e "$marks/held-5" ]; then
        echo "ranks 4 and 5 never reached iteration 7"; stop_timed "$log"; rm -rf "$marks"; cat "$log"; return 1
    fi
    cluster_kill_host h2 || return 1
    wait_timed "$log"
    rm -rf "$marks"
    cat "$log"
    echo "job exit code $rc"
    [ "$timed_out" = 0 ] || { echo "HANG"; return 1; }
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
    # spread over the live hosts (h0 and h1 hold 2 survivors each): one on each
    local hosts
    hosts=$(sed -n 's/.*replacement starts .*, on \(h[0-9]*\)$/\1/p' "$log" | sort | tr '\n' ' ')
    [ "$hosts" = "h0 h1 " ] || { echo "replacements started on: ${hosts:-?} (expected h0 h1)"; return 1; }
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

# ---- warm spares across a node loss (coll_ftrabit_spares, docs/spares.md) ----
# ftr_kmeans on 3 hosts x 2 processes with warm spares; the spares are placed by
# ftrabit_spare_plan.c (2 spares: world ranks 3 on h1 and 5 on h2; 4 spares: 1 on h0, 3 on
# h1, 4 and 5 on h2). Each test holds an application rank at an iteration (--hold: it waits
# there for its SIGKILL) so that a host dies at a known point whatever the machine's speed,
# and ends bit-identical to the run without failures on the application's ranks.

# spares_job LOG NP SPARES HOLDS...: start ftr_kmeans (--timeline, --hold each R:I of
# HOLDS) with SPARES warm spares across the cluster, in the background; sets $job and
# $marks (the holds' directory).
spares_job() {
    local log=$1 np=$2 spares=$3 h args=()
    shift 3
    marks=$(mktemp -d)
    for h in "$@"; do args+=(--hold "$h"); done
    start_timed "$ft_timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_spares "$spares" --mca coll_ftrabit_verbose 1 -np "$np" \
        "$build/examples/ftr_kmeans" --timeline --kill-marks "$marks" "${args[@]}"
}

# spares_wait_held R: until application rank R holds (its mark), which is then removed so
# that a later hold of the same rank can be waited for; 1 if it never did (the caller ends
# the job: stop_timed).
spares_wait_held() {
    local i
    for ((i = 0; i < ft_timeout_s * 10; i++)); do
        [ -e "$marks/held-$1" ] && { rm -f "$marks/held-$1"; return 0; }
        sleep 0.1
    done
    echo "application rank $1 never held"
    return 1
}

# spares_check LOG APP EXPECT WORLD...: after the job ($job), it ended without a hang,
# mpirun reported each lost host, the centroids are those of the run without failures on
# APP ranks (ft_run's reference, shared with it), and the replacements were EXPECT ("S
# spare(s), R respawned"). WORLD: the world ranks that must reach the end, named if not.
spares_check() {
    local log=$1 app=$2 expect=$3 rc got w left="" ref_key
    shift 3
    wait_timed "$log"
    rm -rf "$marks"
    grep -av '^timeline' "$log"
    echo "job exit code $rc"
    if [ "$timed_out" = 1 ]; then
        for w in "$@"; do
            grep -aEq "world rank $w\] (final agreement reached|spare released)" "$log" \
                || left="$left $w"
        done
        echo "HANG: world ranks that never finished:$left"
        return 1
    fi
    ref_key="${launch[*]} ftr_kmeans $app "
    if [ -z "${ft_reference[$ref_key]:-}" ]; then
        ft_launch ftr_kmeans "$log.reference" "$app" ""
        ft_reference[$ref_key]=$(ft_fingerprint "$log.reference")
    fi
    [ -n "${ft_reference[$ref_key]}" ] || { echo "the reference run did not finish"; cat "$log.reference"; return 1; }
    got=$(ft_fingerprint "$log")
    [ "$got" = "${ft_reference[$ref_key]}" ] \
        || { echo "fingerprint ${got:-missing}, reference ${ft_reference[$ref_key]}"; return 1; }
    grep -aq "on $app ranks" "$log" || { echo "did not finish on $app ranks"; return 1; }
    [ "$(ft_takeovers "$log")" = "$expect" ] \
        || { echo "expected $expect, got $(ft_takeovers "$log")"; return 1; }
    [ "$rc" = 0 ] || { echo "mpirun exited with $rc"; return 1; }
}

# spares_lost HOST: mpirun said it lost HOST's daemon.
spares_lost() {
    grep -aq "lost daemon .* on node $1" "$log" || { echo "mpirun did not report losing $1"; return 1; }
}

# 2 spares (world 3 on h1, 5 on h2); h2 dies while application rank 3 (world 4, on h2)
# holds at iteration 7: its rank and the spare beside it are gone at once; the spare on h1
# takes rank 3. Hung before ftrabit_spares.c resolved every member (docs/spares.md).
node_loss_spare_takes_over() {
    local job marks log=$logs/cluster-node-loss-spare-takes-over.log
    spares_job "$log" 6 2 3:7
    spares_wait_held 3 || { stop_timed "$log"; cat "$log"; return 1; }
    cluster_kill_host h2 || return 1
    spares_check "$log" 4 "1 spare(s), 0 respawned" 0 1 2 3 && spares_lost h2 \
        && grep -aq "world rank 3\] spare takes the place of rank 3" "$log"
}

# 4 spares (1 on h0, 3 on h1, 4 and 5 on h2; application ranks 0 = world 0, 1 = world 2):
# h2, spares only, dies once the job runs; nobody needs a spare then and the job goes on.
# Then application rank 1 (world 2, on h1) is killed while it holds at iteration 20: the
# spare beside it (world 3) takes it over.
node_loss_spares_host_first() {
    local job marks pid log=$logs/cluster-node-loss-spares-host-first.log
    spares_job "$log" 6 4 1:20
    cluster_when "$log" "^timeline rank [0-9]+ done 2 " "$ft_timeout_s" cluster_kill_host h2 \
        || { stop_timed "$log"; cat "$log"; return 1; }
    grep -aq "world rank 4\] waiting as a spare" "$log" && grep -aq "world rank 5\] waiting as a spare" "$log" \
        || { echo "world ranks 4 and 5 were not the spares on h2"; stop_timed "$log"; cat "$log"; return 1; }
    spares_wait_held 1 || { stop_timed "$log"; cat "$log"; return 1; }
    wait_for_file_text 30 "$log" "lost daemon .* on node h2" || { echo "h2's loss never reported"; stop_timed "$log"; cat "$log"; return 1; }
    pid=$(cluster_world_pid h1 2) || { echo "world rank 2 not found on h1"; stop_timed "$log"; cat "$log"; return 1; }
    kill -KILL "$pid"
    spares_check "$log" 2 "1 spare(s), 0 respawned" 0 1 3 && spares_lost h2 \
        && grep -aq "world rank 3\] spare takes the place of rank 1" "$log"
}

# 4 spares as above; h1 dies while application rank 1 (world 2) holds at iteration 7: the
# spare with most company left (world 4, on h2) takes rank 1; then h2 dies while rank 1
# (now world 4) holds at iteration 14, with the last spare there: world 1, on h0, takes it.
# Only h0 (mpirun's) is left.
node_loss_two_hosts_one_after_the_other() {
    local job marks log=$logs/cluster-node-loss-two-hosts.log
    spares_job "$log" 6 4 1:7 1:14
    spares_wait_held 1 || { stop_timed "$log"; cat "$log"; return 1; }
    cluster_kill_host h1 || return 1
    spares_wait_held 1 || { stop_timed "$log"; cat "$log"; return 1; }
    cluster_kill_host h2 || return 1
    spares_check "$log" 2 "2 spare(s), 0 respawned" 0 1 && spares_lost h1 && spares_lost h2 \
        && grep -aq "world rank 4\] spare takes the place of rank 1" "$log" \
        && grep -aq "world rank 1\] spare takes the place of rank 1" "$log"
}

# Spares across hosts without a node loss: application rank 3 (world 4, on h2) killed; the
# spare beside it takes over, the other is left waiting. Each application process frees the
# standby communicator at the end: left to MPI_Finalize, coll/han's sub-communicators of it
# were freed twice ("corrupted double-linked list", then a hang: 2 runs of 2 before).
spares_across_hosts() {
    ft_expect="1 spare(s), 0 respawned"
    in_cluster ft_run ftr_kmeans cluster/spares-kill-rank-on-h2 6 "3:7" --mca coll_ftrabit_spares 2
    ft_expect=
}

in_cluster check cluster/node-loss/ulfm-runs-on node_loss_ulfm_runs_on
in_cluster check cluster/node-loss/route-repaired node_loss_route_repaired
in_cluster check cluster/node-loss/agree-with-peers-never-addressed node_loss_ring_neighbours
in_cluster check cluster/node-loss/no-ulfm-ends-the-job node_loss_ends_a_job_without_ulfm
in_cluster check cluster/node-loss/ftr-kmeans-shrinks node_loss_ftr_kmeans_shrinks
in_cluster check cluster/node-loss/ftr-kmeans-respawns node_loss_ftr_kmeans_respawns
in_cluster check cluster/node-loss/spare-takes-over node_loss_spare_takes_over
in_cluster check cluster/node-loss/spares-host-lost-first node_loss_spares_host_first
in_cluster check cluster/node-loss/two-hosts-one-after-the-other node_loss_two_hosts_one_after_the_other
spares_across_hosts
