# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# pml/dr2 paths across hosts: striping, failover and return on two data networks.

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
