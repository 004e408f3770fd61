# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# pml/dr2 across hosts: paths chosen by where their NIC is (hwloc). The jobs are
# 41-dr2-paths.sh's (dr2_paths_job: test/mpi/dr2_paths between h0 and h1, every byte checked).

# Not here: dr2 over btl/ofi beside btl/tcp across the hosts. Striped (sockets provider on
# netb, btl/tcp on neta) it passed but took about 2 minutes under load; with either network
# cut it hung (docs/dr2-ofi.md). dr2/ofi-beside-tcp (33-dr2-ofi.sh) stripes on one host.

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
