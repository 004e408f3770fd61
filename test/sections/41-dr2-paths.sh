# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# pml/dr2 paths across hosts: striping, failover and return on two data networks.

# ---- pml/dr2 over two data networks: two tcp paths between h0 and h1 (test/mpi/dr2_paths) --
# One rank on h0, one on h1, exchanging a stream whose every byte is checked. The job prints
# "phase streaming" mid-stream; the fault is then made and the job told so through a file
# (rank 0 runs on h0, which shares this file system); with a heal, the same after "phase
# failed-over". Nothing waits for a time: the job moves on when its MPI_T counters show
# the failover (or the return); the timeout ends a hang.
DR2_PATHS=(--mca pml dr2 --mca btl tcp,self)
dr2_paths_launcher=() # a command dr2_paths runs under (taskset: 44-dr2-ofi-cluster.sh)

wait_for_line() { # LOG TEXT PID [N]: until TEXT is in LOG (N times); 1 if the job PID ended first
    local n=${4:-1}
    while [ "$(grep -ac "$2" "$1")" -lt "$n" ]; do
        kill -0 "$3" 2>/dev/null || [ "$(grep -ac "$2" "$1")" -ge "$n" ] || return 1
        sleep 0.1
    done
}

# dr2_paths_job LABEL MODE [MPIRUN-OPTIONS...] -- FAULT-CMD...: sets rc, timed_out, log and
# cut_dropped (packets the cut of h1 neta dropped, read before it is healed); in heal mode,
# with hold_cut_s set, the cut is held that many seconds after the failover, heal_cmd (default
# cluster_heal h1) ends it, and back_after_s is the time from the heal until the job reports
# the path back (- if it never does).
dr2_paths_job() {
    local label=$1 mode=$2 opts=() ctl job healed_at
    shift 2
    cut_dropped=0
    back_after_s=-
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    ctl=$(mktemp -d "$logs/dr2-paths-$label.XXXXXX") || return 1
    log=$logs/dr2-paths-$label-job.log
    : >"$log" # the phases are read from it: nothing of an earlier run
    start_timed "$timeout_s" "$log" "${launch[@]}" "${mpirun[@]}" "${DR2_PATHS[@]}" \
        --mca pml_dr2_verbose 1 "${opts[@]}" --host "$(cluster_hosts_arg 1 2)" -np 2 \
        "${dr2_paths_launcher[@]}" "$build/test/mpi/dr2_paths" "$mode" "$ctl"
    if [ $# -gt 0 ] && wait_for_line "$log" "phase streaming" "$job"; then
        "$@" && touch "$ctl/cut"
        if [ -n "${heal_after_phase:-}" ] && wait_for_line "$log" "phase $heal_after_phase" "$job" "${heal_after_count:-1}"; then
            sleep "${hold_cut_s:-0}"
            ${heal_cmd:-cluster_heal h1} && touch "$ctl/healed"
            healed_at=$(date +%s.%N)
            if wait_for_line "$log" "phase path-back" "$job"; then
                back_after_s=$(awk -v a="$healed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
            fi
        fi
    fi
    # The cut stays until the job has ended: MPI_Finalize must end over it. (btl/tcp says
    # goodbye on every connection it closes, and waited for room in the send buffer for
    # ever, which a silent cut leaves full: Open MPI patch 0020 bounds that wait, and dr2
    # sets the bound.)
    wait_timed "$log"
    [ "$mode" = cut ] && cut_dropped=$(cluster_dropped h1 neta)
    grep -av "copy to" "$log"
    echo "job exit code $rc"
    rm -rf "$ctl"
}

both_passed() { # MODE: both ranks printed their PASS verdict
    [ "$(grep -ac "^dr2_paths: rank [01]: PASS: $1" "$log")" = 2 ]
}

cut_both_data_networks() { cluster_cut h1 neta && cluster_cut h1 netb; }
heal_both_data_networks() { cluster_heal h1 neta && cluster_heal h1 netb; }

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
# neta_resets -I starts that, -D stops it.
neta_resets() {
    cluster_iptables h1 "$1" INPUT -i neta -p tcp -j REJECT --reject-with tcp-reset \
        && cluster_iptables h1 "$1" OUTPUT -o neta -p tcp -j REJECT --reject-with tcp-reset
}

dr2_paths_connection_reset() {
    local rc timed_out log
    dr2_paths_job reset cut -- neta_resets -I
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut \
        && grep -aq "is down: the BTL reports an error" "$log"
}

# The same, and then the resets stop (a firewall reloaded, a switch reset): btl/tcp gave the
# failed connection up, and dr2's probes make a new one (btl_tcp_reconnect, Open MPI patch
# 0019; without it btl/tcp refused every later send on that network): the path comes back
# and fragments go on both networks again. The resets are held 2 s after the failover, so
# that the probes meet a few refused connections first.
dr2_paths_connection_reset_then_healed() {
    local rc timed_out log back_after_s hold_cut_s=2 heal_cmd="neta_resets -D" heal_after_phase=failed-over
    dr2_paths_job reset-heal heal -- neta_resets -I
    echo "the path was back ${back_after_s} s after the resets stopped"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed heal \
        && grep -aq "is down: the BTL reports an error" "$log" && [ "$back_after_s" != - ]
}

# neta cut, then healed: a probe brings the path back and fragments go on both networks
# again (dr2_paths compares its per-path counters from the return on).
dr2_paths_cut_then_healed() {
    local rc timed_out log heal_after_phase=failed-over
    dr2_paths_job heal heal -- cluster_cut h1 neta
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed heal && grep -aq "phase path-back" "$log"
}

# neta cut for 15 s, then healed. TCP's retransmissions on the cut connections back off
# meanwhile (200 ms doubling, to 120 s by default) and the path's probes wait behind them:
# without a bound the path came back 10.9 s after the heal (the next retransmission),
# with dr2's default (pml_dr2_tcp_rto_max_ms 1000, btl_tcp_rto_max_ms: Open MPI patch
# 0018) within the probe interval (1 s at most) and one retransmission timeout (1 s). The
# test allows 5 s. Needs TCP_RTO_MAX_MS (Linux 6.15 and later).
dr2_paths_long_cut_then_healed() {
    local rc timed_out log back_after_s hold_cut_s=15 heal_after_phase=failed-over
    dr2_paths_job long-heal heal -- cluster_cut h1 neta
    echo "the path was back ${back_after_s} s after the heal (the cut held ${hold_cut_s} s)"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed heal && [ "$back_after_s" != - ] \
        && awk -v t="$back_after_s" 'BEGIN { exit !(t <= 5) }'
}

# Both networks cut under a one-way stream: no path left. Under ULFM the sender's MPI_Send
# ends with MPIX_ERR_PROC_FAILED (pml_dr2_retry_limit applies on the last path), and so does
# the receiver's MPI_Recv, which has nothing of its own in flight: dr2's keepalive probes
# the silent peer it waits for (pml_dr2_keepalive.h), and both end MPI_Finalize with the
# networks still cut (the sender's connections full: Open MPI patch 0020). Without ULFM the
# job aborts with dr2's message. Never a hang.
dr2_paths_both_cut_ulfm() {
    local rc timed_out log
    dr2_paths_job both-ulfm both --with-ft ulfm --mca pml_dr2_retry_limit 8 -- cut_both_data_networks
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed both
}

# Both networks cut under the one-way stream (ULFM), then healed once both ranks had the
# error: what TCP still held of the stream arrives after the receive it was for ended in
# error, and the receiver has reused that buffer, which must stay as the receiver left it
# (no fragment of a message that is gone may be written anywhere; a transport that reads
# into receive buffers, such as btl/tcp's put, would have to be refused here).
dr2_paths_both_cut_then_healed() {
    local rc timed_out log heal_after_phase=ended-in-error heal_after_count=2 \
        heal_cmd=heal_both_data_networks
    dr2_paths_job both-heal both-heal --with-ft ulfm --mca pml_dr2_retry_limit 8 -- cut_both_data_networks
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed both
}

dr2_paths_both_cut_abort() {
    local rc timed_out log
    dr2_paths_job both-abort both --mca pml_dr2_retry_limit 8 -- cut_both_data_networks
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && grep -aq "pml/dr2 gave up on process" "$log"
}

in_cluster check cluster/dr2-paths-striped dr2_paths_striped
in_cluster check cluster/dr2-paths-one-network-cut dr2_paths_one_network_cut
in_cluster check cluster/dr2-paths-link-down dr2_paths_link_down
in_cluster check cluster/dr2-paths-connection-reset dr2_paths_connection_reset
in_cluster check cluster/dr2-paths-connection-reset-then-healed dr2_paths_connection_reset_then_healed
in_cluster check cluster/dr2-paths-cut-then-healed dr2_paths_cut_then_healed
if [ -e /proc/sys/net/ipv4/tcp_rto_max_ms ]; then # came with TCP_RTO_MAX_MS (Linux 6.15)
    in_cluster check cluster/dr2-paths-long-cut-then-healed dr2_paths_long_cut_then_healed
else
    selected cluster/dr2-paths-long-cut-then-healed \
        && skip cluster/dr2-paths-long-cut-then-healed "the kernel ($(uname -r)) has no TCP_RTO_MAX_MS (Linux 6.15 and later)"
fi
in_cluster check cluster/dr2-paths-both-cut-ulfm dr2_paths_both_cut_ulfm
in_cluster check cluster/dr2-paths-both-cut-abort dr2_paths_both_cut_abort
in_cluster check cluster/dr2-paths-both-cut-then-healed dr2_paths_both_cut_then_healed
