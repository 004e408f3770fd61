#!/usr/bin/env bash
# Distributed XGBoost that survives failures: XGBoost 1.7.4 (Debian bookworm's source) on
# coll/ftrabit trains binary classification on the agaricus (mushroom) data with the
# processes mpirun starts. A process that dies is replaced; the model is the same, bit for
# bit. On a fresh machine it first installs and builds what it needs (Open MPI, this
# project, XGBoost; each cached per user). The last line is `xgboost model sha256 HEX`.
#
# Usage: scripts/xgboost.sh [-np N] [mpirun args...] [-- xgboost parameters...]
#   scripts/xgboost.sh -np 4
#   scripts/xgboost.sh -np 5 --mca coll_ftrabit_spares 1     # 4 ranks, 1 warm spare
#   scripts/xgboost.sh -np 4 -- num_round=50 max_depth=4
# mpirun's arguments go to mpirun as they are (it also gets --with-ft ulfm, the component
# path, and as root --allow-run-as-root; --oversubscribe since a 2-core machine runs 4).
# XGBoost parameters override the training's (integrations/xgboost/agaricus.conf).
# Environment: XGBOOST_RUN_DIR (where the model and the configuration go; default a new
# temporary directory, removed at the end unless set).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '[xgboost] %s\n' "$*" >&2; }

mpirun_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do mpirun_args+=("$1"); shift; done
[ $# -gt 0 ] && shift
xgb_args=("$@")

build=$("$src/scripts/build.sh")
eval "$("$src/scripts/ompi-bootstrap.sh" --print-env --no-apt 2>/dev/null)"
export OMPI_PREFIX OMPI_SRC
xgb=$("$src/integrations/xgboost/build.sh" "$build")

if [ -n "${XGBOOST_RUN_DIR:-}" ]; then
    run=$XGBOOST_RUN_DIR
    mkdir -p "$run"
else
    run=$(mktemp -d "${TMPDIR:-/tmp}/xgboost.XXXXXX")
    trap 'rm -rf "$run"' EXIT
fi
data=$xgb/src/demo/data
model=$run/agaricus.model
rm -f "$model"
sed -e "s|@DATA@|$data|g" "$src/integrations/xgboost/agaricus.conf" >"$run/agaricus.conf"

launcher=("$OMPI_PREFIX/bin/mpirun" --with-ft ulfm --oversubscribe
          --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$build/stage/lib/openmpi"
          -x "LD_LIBRARY_PATH=$build/stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
[ "$(id -u)" = 0 ] && launcher+=(--allow-run-as-root)
# PMIx reads the component path too and complains about every non-PMIx file in it.
export PMIX_MCA_mca_base_component_show_load_errors=0

say "training: mpirun ${mpirun_args[*]} xgboost $run/agaricus.conf ${xgb_args[*]}"
start=$SECONDS
set +e
(cd "$run" && "${launcher[@]}" "${mpirun_args[@]}" "$xgb/bin/xgboost" "$run/agaricus.conf" \
     "model_out=$model" "${xgb_args[@]}")
rc=$?
set -e
say "mpirun ended with status $rc after $((SECONDS - start)) s"
# Rank 0 saves the model once training is over; under --with-ft ulfm mpirun's status may
# be non-zero after a process was killed even when every rank finished.
[ -s "$model" ] || { say "no model was saved"; exit $((rc ? rc : 1)); }
echo "xgboost model sha256 $(sha256sum "$model" | cut -d' ' -f1)"
