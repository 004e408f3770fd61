#!/usr/bin/env bash
# The demo: a Rabit-style k-means trainer (examples/ftr_kmeans.c, FTR_* API) on 4 ranks
# with ULFM and coll/ftrabit, the way users run it. First without failures (ftrabit
# announces the communicators it serves), then with rank 1 killed by SIGKILL in
# iteration 12: a replacement is started, reloads the checkpoint of iteration 10 from its
# peers, replays, and the job ends with the same centroids, bit for bit.
#
# Usage: scripts/demo.sh [NP]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
np=${1:-4}
build=$("$src/scripts/build.sh")
eval "$("$src/scripts/ompi-bootstrap.sh" --print-env --no-apt 2>/dev/null)"
export PMIX_MCA_mca_base_component_show_load_errors=0
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe --with-ft ulfm
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$build/stage/lib/openmpi")
app=$build/examples/ftr_kmeans
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() { # run LOG ARGS...: show the command the way a user types it, then run it
    local out=$1
    shift
    local shown="$*"
    echo "\$ mpirun --with-ft ulfm ${shown//$build\//}"
    timeout -k 10 120 "${mpirun[@]}" "$@" </dev/null 2>&1 | tee "$out" || true
    echo
}
fingerprint() { sed -n 's/^final centroids fingerprint \([0-9a-f]*\).*/\1/p' "$1" | head -n 1; }

echo "== 1. no failure (coll_ftrabit_verbose 1: ftrabit says which communicators it serves)"
run "$log" --mca coll_ftrabit_verbose 1 -np "$np" "$app" --iterations 30
expected=$(fingerprint "$log")

echo "== 2. rank 1 is killed with SIGKILL in iteration 12; the job carries on"
run "$log" -np "$np" "$app" --iterations 30 --kill 1:12
got=$(fingerprint "$log")

if [ -n "$expected" ] && [ "$got" = "$expected" ]; then
    echo "== same final centroids with and without the failure: $got"
else
    echo "== MISMATCH: without failure ${expected:-none}, with failure ${got:-none}"
    exit 1
fi
