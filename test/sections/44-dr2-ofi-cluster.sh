# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# pml/dr2 across hosts: over btl/tcp and btl/ofi side by side, and paths chosen by where
# their NIC is (hwloc). The jobs are
# 41-dr2-paths.sh's (dr2_paths_job: test/mpi/dr2_paths between h0 and h1, every byte checked).

# ---- dr2 over btl/tcp on neta and btl/ofi (sockets provider) on netb -----------------------
# Each rank reaches the other by a tcp path and an ofi path (dr2 gives btl/tcp the
# exclusivity of btl/ofi): the stream is striped over both, and either network cut under it
# leaves the other carrying it (dr2_paths cut: a path went down, every byte checked).
dr2_ofi_job() { # LABEL MODE [FAULT-CMD...]
    local label=$1 mode=$2
    local DR2_PATHS=(--mca pml dr2 --mca btl tcp,ofi,self --mca btl_tcp_if_include neta
        --mca btl_ofi_provider_exclude none --mca btl_ofi_mode 1
        -x FI_PROVIDER=sockets -x FI_SOCKETS_IFACE=netb -x FI_SOCKETS_MAX_BUF_SZ=4194304)
    shift 2
    dr2_paths_job "$label" "$mode" "$@"
}

dr2_ofi_cut() { # NET: NET cut on h1 under the stream; the other network carries the rest
    local rc timed_out log
    dr2_ofi_job "ofi-cut-$1" cut -- cluster_cut h1 "$1"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut
}

# ---- paths by NIC locality ----------------------------------------------------------------
# The hosts as nodes with two sockets and a NIC on each (test/topology: neta local to the
# socket of CPU 0, netb to that of CPU 1; hwloc reads it from HWLOC_XMLFILE, and with
# HWLOC_THISSYSTEM=1 still binds for real), the ranks bound to CPU 0: btl/tcp's path over
# neta takes the traffic, netb's stands by (pml_dr2_path_locality), until neta is cut.
dr2_nic_job() { # LABEL MODE [FAULT-CMD...]
    local label=$1 mode=$2 dr2_paths_launcher=(taskset -c 0)
    local -x HWLOC_XMLFILE=$src/test/topology/two-numa-two-nics.xml HWLOC_THISSYSTEM=1
    shift 2
    dr2_paths_job "$label" "$mode" -x HWLOC_XMLFILE -x HWLOC_THISSYSTEM "$@"
}

# The near NIC's path alone carries the stream (dr2_paths standby: no fragment on path 1).
dr2_nic_near_first() {
    local rc timed_out log
    dr2_nic_job nic-near standby
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed standby
}

# The near NIC's network cut: the far NIC's path takes the stream (fragments on path 1 by
# the end, rank 0's counters).
dr2_nic_near_cut() {
    local rc timed_out log
    dr2_nic_job nic-near-cut cut -- cluster_cut h1 neta
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && both_passed cut \
        && grep -aqE "rank 0: counters at the end: .*path 1 sent [1-9]" "$log"
}

in_cluster check cluster/dr2-nic-near-first dr2_nic_near_first
in_cluster check cluster/dr2-nic-near-cut-far-takes-over dr2_nic_near_cut
# The tcp network cut: the ofi path carries the rest of the stream. It always hung once the
# ofi path carried it alone, before the sockets provider got its 4 MiB socket buffers
# (docs/dr2-ofi.md, "The sockets provider's stall").
with_ofi sockets in_cluster check cluster/dr2-ofi-neta-cut dr2_ofi_cut neta
# The ofi network cut: the tcp path carries the rest. MPI_Send waited for ever for segments
# the sockets provider held on the cut network (fixed in send_flush_locked: a stuck
# transport is not waited for, and the wait runs the watchdog that finds it stuck), and
# fragments waited queued behind the stuck transport (fixed in vfrag_push: they go to
# another path).
with_ofi sockets in_cluster check cluster/dr2-ofi-netb-cut dr2_ofi_cut netb
