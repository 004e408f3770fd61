#!/usr/bin/env bash
# ompi-resilience: instructions one FTR_Allreduce / FTR_Bcast call executes outside
# MPI_Allreduce / MPI_Bcast (what the FTR layer adds to a call), counted with valgrind
# --tool=callgrind on rank 0 of bench/ftr_percall. Unlike times, these counts do not move
# with the machine's load. Not run by CI.
#
# Per (collective, size): two runs of CALLS_A and CALLS_B calls (checkpoint every EVERY);
# X = instructions inclusive of FTR_Allreduce minus those inclusive of the MPI collective
# it calls (MPI's own polling, which depends on the other rank's speed, cancels); the
# per-call figure is (X_B - X_A) / (CALLS_B - CALLS_A), so start-up, warm-up and the end
# cancel too. Also prints the top functions of that difference (what the calls spend in).
#
# Usage: bench/run-ftr-callgrind.sh [OUT_FILE]   (default: stdout only)
# Environment: BUILD (default _build), SIZES="8 64 4096", COLLS="allreduce bcast",
#   NP=2, EVERY=10, CALLS_A=100, CALLS_B=400, FTR_MCA (extra mpirun arguments)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
SIZES=${SIZES:-8 64 4096}
COLLS=${COLLS:-allreduce bcast}
NP=${NP:-2}
EVERY=${EVERY:-10}
CALLS_A=${CALLS_A:-100}
CALLS_B=${CALLS_B:-400}
FTR_MCA=${FTR_MCA:-}
OUT_FILE=${1:-}

bench_name=run-ftr-callgrind
. "$top/bench/bench-lib.sh"
bench_require_ompi
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null \
    || die "valgrind (with callgrind_annotate) is not installed: apt-get install valgrind"
# the program itself, not its libtool wrapper script; it loads libftrabit from the stage
make -C "$BUILD" bench/ftr_percall install >&2
percall=$BUILD/bench/.libs/ftr_percall
raw=$BUILD/bench-logs/ftr-callgrind
mkdir -p "$raw"

export PMIX_MCA_mca_base_component_show_load_errors=0
# shellcheck disable=SC2206 # FTR_MCA is a word list on purpose
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR" --with-ft ulfm
        $FTR_MCA)

# Inclusive instructions of the function named exactly $2 in callgrind file $1.
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null \
        | awk -v f="$2" '!done && $3 ~ ("(^|:)" f "$") { gsub(",", "", $1); print $1; done = 1 }'
}

# Rank 0's callgrind file of one run of $1 calls of collective $2 at $3 bytes, counting
# only inside function $4 (FTR_Allreduce or FTR_Bcast).
run() {
    local calls=$1 coll=$2 bytes=$3 out="$raw/cg-$2-$3-$1"
    rm -f "$out".*
    timeout -k 5 900 "${mpirun[@]}" -np "$NP" valgrind -q --tool=callgrind --toggle-collect="$4" \
        --callgrind-out-file="$out.%q{OMPI_COMM_WORLD_RANK}" "$percall" "$coll" "$bytes" \
        "$calls" "$EVERY" </dev/null >"$out.log" 2>&1 || { cat "$out.log" >&2; die "$coll $bytes $calls failed"; }
    echo "$out.0"
}

report() { if [ -n "$OUT_FILE" ]; then tee -a "$OUT_FILE"; else cat; fi; }
{
    echo "# ftrabit per-call instructions outside MPI (callgrind, rank 0 of np $NP, checkpoint every $EVERY)"
    echo "# commit $(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet HEAD -- ompi || echo '+changes'), $(uname -m), load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# collective bytes instructions_per_call"
} | report
for coll in $COLLS; do
    mpi=MPI_Allreduce
    [ "$coll" = bcast ] && mpi=MPI_Bcast
    ftr=FTR_Allreduce
    [ "$coll" = bcast ] && ftr=FTR_Bcast
    for bytes in $SIZES; do
        say "$coll $bytes B: $CALLS_A and $CALLS_B calls under callgrind"
        a=$(run "$CALLS_A" "$coll" "$bytes" "$ftr")
        b=$(run "$CALLS_B" "$coll" "$bytes" "$ftr")
        xa=$(( $(inclusive "$a" "$ftr") - $(inclusive "$a" "P?$mpi") ))
        xb=$(( $(inclusive "$b" "$ftr") - $(inclusive "$b" "P?$mpi") ))
        awk -v c="$coll" -v n="$bytes" -v xa="$xa" -v xb="$xb" -v ca="$CALLS_A" -v cb="$CALLS_B" \
            'BEGIN { printf "%s %s %.0f\n", c, n, (xb - xa) / (cb - ca) }' | report
    done
done
