#!/usr/bin/env bash
# ompi-resilience: pml/dr2 against pml/ob1 over btl/ofi (libfabric's sockets provider, and
# udp under ofi_rxd, on loopback), NetPIPE, 2 ranks on one node: bench/run-dr2.sh's ofi
# part, written to a dated report docs/bench/dr2-ofi-YYYY-MM-DD/ (dr2.md, dr2-ofi.png,
# the .dat tables). Not run by CI. The 64 KiB configuration needs Open MPI patch 0032
# (scripts/ompi-patches/); without it that run measures 4 KiB sends. Every variable of
# bench/run-dr2.sh applies (ROUNDS, QUICK, MAX_BYTES, OUT...).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PARTS=ofi
export OUT=${OUT:-$here/../docs/bench/dr2-ofi-$(date -u +%Y-%m-%d)}
export RAW=${RAW:-${BUILD:-$here/../_build}/bench-logs/dr2-ofi}
exec "$here/run-dr2.sh" "$@"
