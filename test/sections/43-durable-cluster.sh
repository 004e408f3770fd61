# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# Durable checkpoints on node-local directories across the cluster (section 25 has the
# helpers, docs/durable-checkpoints.md the design).

# A host lost with its node-local directory, then the job started again on the hosts left.
# ftr_kmeans on 3 hosts x 2 ranks, coll_ftrabit_checkpoint_dir on each host's own disk
# (cluster.sh: the same path everywhere, each host's own contents); rank 4 (on h2) holds at
# iteration 33 until the end. Each directory gets the global state, its ranks' local
# states, and one copy of each ring predecessor's state held by a rank there when the
# owner's directory is another (local_replicas 2: rank 0 writes 4's and 5's into h0's).
# h2 dies and its disk is emptied, then the rest of the job is killed; started again with
# 6 ranks on h0 and h1, the job finds ranks 4's and 5's states in h0's directory (rank 2's,
# now on h0, in h1's), resumes, and ends as a run without failures.
durable_host_lost_with_its_directory() {
    local dir disk0 marks log=$logs/cluster-durable-host-lost rc timed_out job v
    dir=$(cluster_node_local_dir) disk0=$(cluster_host_disk h0) marks=$(mktemp -d)
    [ -n "$(durable_reference 6)" ] || { echo "the reference run failed"; return 1; }
    start_timed "$ft_timeout_s" "$log.log" "${launch[@]}" "${mpirun[@]}" --with-ft ulfm \
        --mca coll_ftrabit_checkpoint_dir "$dir" -np 6 "$build/examples/ftr_kmeans" \
        "${durable_args[@]}" --hold 4:33 --kill-marks "$marks"
    durable_wait_for "$marks/held-4"
    for v in 0 1 2; do echo "h$v: $(ls "$(cluster_host_disk "h$v")" | tr '\n' ' ')"; done
    if [ ! -e "$marks/held-4" ]; then
        echo "rank 4 never reached iteration 33"; stop_timed "$log.log"; cat "$log.log"; return 1
    fi
    cluster_kill_host h2 && rm -rf "$(cluster_host_disk h2)"/* && cluster_reap || return 1
    wait_timed "$log.log"
    rm -rf "$marks"
    grep -av '^timeline' "$log.log"
    ls "$disk0" | grep -q '^ftrabit-v5-r4.ckpt$' && ls "$disk0" | grep -q '^ftrabit-v5-r5.ckpt$' \
        || { echo "no copies of ranks 4 and 5 in h0's directory"; return 1; }
    ! ls "$disk0" | grep -q '^ftrabit-v5-r[23].ckpt$' || { echo "h1's ranks' states in h0's"; return 1; }
    durable_restart_ends_right "$log-restart.log" "$dir" 6 "[56]" --host "$(cluster_hosts_arg 3 2)"
}
in_cluster check cluster/durable/host-lost-with-its-directory durable_host_lost_with_its_directory
