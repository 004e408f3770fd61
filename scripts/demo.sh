#!/usr/bin/env bash
# The demo: an iterative k-means job (examples/iterative.c) on 4 ranks with ULFM and
# coll/ftrabit, the way users run it; ftrabit announces itself on each communicator and
# the program reports how many collectives it served.
#
# Usage: scripts/demo.sh [NP]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
np=${1:-4}
build=$("$src/scripts/build.sh")
eval "$("$src/scripts/ompi-bootstrap.sh" --print-env --no-apt 2>/dev/null)"
export PMIX_MCA_mca_base_component_show_load_errors=0
cmd=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe --with-ft ulfm
     --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$build/stage/lib/openmpi"
     --mca coll_ftrabit_verbose 1 -np "$np" "$build/examples/iterative")
echo "\$ mpirun --with-ft ulfm --mca coll_ftrabit_verbose 1 -np $np examples/iterative"
echo
"${cmd[@]}" </dev/null
