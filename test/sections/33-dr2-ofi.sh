# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# pml/dr2 over btl/ofi (libfabric) on one host, with the providers a machine without special
# NICs has: sockets, udp under ofi_rxd and tcp under ofi_rxm (Open MPI patch 0031); alone and
# beside btl/tcp, under injected faults (docs/dr2-ofi.md). The cluster blocks are in
# 44-dr2-ofi-cluster.sh.

echo "== pml/dr2 over btl/ofi (timeout ${timeout_s}s each)"
# btl/ofi leaves libfabric's sockets, tcp, udp and shm providers out unless told; mode 1
# (sends only) is all dr2 uses, and the only mode btl/ofi takes ofi_rxm in (Open MPI patch
# 0031). Each provider is kept on the loopback interface. The sockets provider gets socket
# buffers of 4 MiB: with the kernel's default it can wait for ever on a partly received
# header (docs/dr2-ofi.md, "The sockets provider's stall"; 3 runs in 99 of dr2/ofi-sockets-faults5).
DR2_OFI=(--mca pml dr2 --mca btl ofi,self --mca btl_ofi_provider_exclude none --mca btl_ofi_mode 1)
OFI_SOCKETS=(-x FI_PROVIDER=sockets -x FI_SOCKETS_IFACE=lo -x FI_SOCKETS_MAX_BUF_SZ=4194304)
OFI_UDP=(-x "FI_PROVIDER=udp;ofi_rxd" -x FI_UDP_IFACE=lo)
OFI_TCP=(-x "FI_PROVIDER=tcp;ofi_rxm" -x FI_TCP_IFACE=lo)

# ofi_unavailable PROVIDER: why libfabric's PROVIDER cannot run here; nothing if it can.
ofi_unavailable() {
    if ! command -v fi_info >/dev/null 2>&1; then
        echo "fi_info is missing (scripts/test.sh installs libfabric-bin)"
    elif ! timeout 20 fi_info -p "$1" -t FI_EP_RDM >/dev/null 2>&1; then
        echo "libfabric has no reliable-datagram endpoint of provider '$1' here (fi_info -p '$1' -t FI_EP_RDM)"
    else
        return 1
    fi
}

# with_ofi PROVIDER TEST ARGS...: TEST (mpi or check, with their usual arguments, or either
# under in_cluster), skipped with the reason where libfabric's PROVIDER cannot run.
with_ofi() {
    local provider=$1 name why
    shift
    case "$1" in
        mpi) name=$(mpi_test_name "$2" "$3") ;;
        check) name=$2 ;;
        in_cluster) [ "$2" = mpi ] && name=$(mpi_test_name "$3" "$4") || name=$3 ;;
    esac
    selected "$name" || return 0
    if why=$(ofi_unavailable "$provider"); then skip "$name" "$why"; return 0; fi
    "$@"
}

# Every byte of random messages (0 B - 2 MiB, eager and rendezvous) checked, over each
# provider: dr2 over btl/ofi hung at its first message before its segments named their
# sender (btl/ofi delivers without the endpoint a segment came from).
with_ofi sockets mpi dr2/ofi-sockets 3 pass test/mpi/dr2_stress "${DR2_OFI[@]}" "${OFI_SOCKETS[@]}" -- 2
with_ofi "udp;ofi_rxd" mpi dr2/ofi-udp-rxd 2 pass test/mpi/dr2_stress "${DR2_OFI[@]}" "${OFI_UDP[@]}" -- 2
# ofi_rxm: btl/ofi refused it ("unable to reach each other") before Open MPI patch 0031
with_ofi "tcp;ofi_rxm" mpi dr2/ofi-tcp-rxm 2 pass test/mpi/dr2_stress "${DR2_OFI[@]}" "${OFI_TCP[@]}" -- 2
# injected loss, corruption and duplicates between dr2 and btl/ofi, all repaired
with_ofi sockets mpi dr2/ofi-sockets-faults5 3 pass test/mpi/dr2_stress "${DR2_OFI[@]}" \
    "${OFI_SOCKETS[@]}" "${FAULTS5[@]}" -- 2 expect-faults

# The checksum policy treats ofi as a wire (pml_dr2_checksum auto: CRC32C on its payloads),
# and its segments name their sender (verbose 10, each process for its peer).
dr2_ofi_checksum_auto() {
    local rc timed_out log=$logs/dr2-ofi-checksum-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2_OFI[@]}" "${OFI_SOCKETS[@]}" \
        --mca pml_dr2_verbose 10 -np 2 "$build/test/mpi/dr2_stress" 1
    grep -a "over btl ofi\|btl ofi (" "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" \
        && [ "$(grep -ac "over btl ofi: payload checksum crc32c" "$log")" = 2 ] \
        && [ "$(grep -ac "btl ofi (.*segments name their sender)" "$log")" = 2 ]
}
with_ofi sockets check dr2/ofi-checksum-auto dr2_ofi_checksum_auto

# Beside btl/tcp: each process reaches the other by a tcp path and an ofi path (dr2 gives
# btl/tcp the exclusivity of btl/ofi; before, the BML kept the ofi path alone) and both carry
# fragments (the per-path counters at MPI_Finalize, verbose 2).
dr2_ofi_beside_tcp() {
    local rc timed_out log=$logs/dr2-ofi-beside-tcp-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" --mca pml dr2 --mca btl tcp,ofi,self \
        --mca btl_tcp_if_include lo --mca btl_ofi_provider_exclude none --mca btl_ofi_mode 1 \
        "${OFI_SOCKETS[@]}" --mca pml_dr2_verbose 2 -np 2 "$build/test/mpi/dr2_stress" 3
    grep -a "pml:dr2: path [01]:" "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" || return 1
    # each of the 2 processes sent fragments on both paths
    [ "$(grep -acE "pml:dr2: path [01]: fragments sent [1-9]" "$log")" = 4 ]
}
with_ofi sockets check dr2/ofi-beside-tcp dr2_ofi_beside_tcp

# Fragments of the size asked: with btl_ofi_max_send_size 65536 btl/ofi offers dr2 segments
# of 64 KiB (less dr2's FROM header; verbose 10, each process for its peer) and every byte of
# the random messages arrives. btl/ofi sent 4 KiB whatever the variable said before Open MPI
# patch 0032.
dr2_ofi_frag_size() {
    local rc timed_out log=$logs/dr2-ofi-frag-size-run.log
    run_timed "$timeout_s" "$log" "${mpirun[@]}" "${DR2_OFI[@]}" "${OFI_SOCKETS[@]}" \
        --mca btl_ofi_max_send_size 65536 --mca pml_dr2_verbose 10 -np 2 "$build/test/mpi/dr2_stress" 1
    grep -a "btl ofi (" "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 2: PASS" "$log" \
        && [ "$(grep -acE "btl ofi \(eager 65[0-9]{3}, max send 65[0-9]{3}," "$log")" = 2 ]
}
with_ofi sockets check dr2/ofi-frag-size dr2_ofi_frag_size

# A rank killed while another streams to it over btl/ofi (ft_tcp_peer_killed, three times
# with a fresh pair): the survivors get MPIX_ERR_PROC_FAILED, shrink and go on. btl/ofi
# ended the survivor itself (exit 1, "BTL OFI will now abort") on the failed completion of
# a send to the dead rank before Open MPI patch 0030.
with_ofi sockets mpi dr2/ofi-ulfm-peer-killed 4 pass test/mpi/ft_tcp_peer_killed \
    "${DR2_OFI[@]}" "${OFI_SOCKETS[@]}" "${FT[@]}" --mca coll ^ftrabit -- 1048576 3
