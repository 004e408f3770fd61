#!/usr/bin/env bash
# ompi-resilience: what durable checkpoints (coll_ftrabit_checkpoint_dir) cost. Not run by
# CI: timings need minutes and a quiet machine.
#
# bench/durable_bench: a data-parallel loop on a model of MODEL_MIB MiB (a gradient pass,
# an FTR_Allreduce of MODEL_MIB MiB, the update), FTR_Checkpoint every EVERY iterations of
# the model (global) and LOCAL_KIB KiB per rank (local). Methods, interleaved in one round
# (the order rotates every round, so that drift and other jobs hit all alike):
#   none     in-memory checkpoints only
#   dir      the same with coll_ftrabit_checkpoint_dir (a directory emptied before the run)
#   restart  the job started again on dir's directory: FTR_Init resumes from its last
#            version (then nothing is left to run)
# Measured: the mean iteration on the slowest rank (checkpoints included) with and without
# the directory, and their ratio paired by round; the iterations that end with a
# checkpoint; FTR_Init with and without a restart from the directory, and the restarted
# job's wall time against a fresh one; the bytes one checkpoint version puts on disk.
#
# Writes, under OUT (default docs/bench/durable-DATE):
#   durable.dat, durable.png, durable.md
# Raw output goes to RAW (default BUILD/bench-logs/durable).
#
# Usage: bench/run-durable.sh
# Environment (all optional):
#   BUILD (default _build), COMPONENT_DIR (default BUILD/stage/lib/openmpi)
#   NPS="2 4" ROUNDS=5 MODEL_MIB=64 EVERY=10 ITERATIONS=100 LOCAL_KIB=1024
#   CKPT_DIR  where the dir method writes (default RAW/ckpt; give a node's real disk)
#   QUIET_WAIT=20  before each run, wait up to this many seconds for a quiet machine
#   OUT, RAW; MEASURE=0 only redraws the table and plot from RAW
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
NPS=${NPS:-2 4}
ROUNDS=${ROUNDS:-5}
MODEL_MIB=${MODEL_MIB:-64}
EVERY=${EVERY:-10}
ITERATIONS=${ITERATIONS:-100}
LOCAL_KIB=${LOCAL_KIB:-1024}
QUIET_WAIT=${QUIET_WAIT:-20}
OUT=${OUT:-$top/docs/bench/durable-$(date -u +%Y-%m-%d)}
RAW=${RAW:-$BUILD/bench-logs/durable}
CKPT_DIR=${CKPT_DIR:-$RAW/ckpt}
MEASURE=${MEASURE:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}

bench_name=run-durable
. "$top/bench/bench-lib.sh"

bench_require_ompi
make -C "$BUILD" bench/durable_bench >&2
prog=$BUILD/bench/durable_bench
bench_require_gnuplot

bench_mpirun_init --with-ft ulfm
mkdir -p "$OUT" "$RAW"
results=$RAW/runs.txt
args=(--model-mib "$MODEL_MIB" --iterations "$ITERATIONS" --every "$EVERY" --local-kib "$LOCAL_KIB")

# value KEY FILE: what durable_bench printed for KEY
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }

# one_run NP METHOD ROUND: appends "np method round iter_mean iter_median ckpt_mean init_s
# wall_s start_version bytes_per_version fingerprint cpu_iter write_s write_cpu_s" to the
# results (cpu_iter: the largest of the ranks'; write_s, write_cpu_s: the median over the
# versions of the time and the writer thread's CPU time of rank 0's writes, the largest).
one_run() {
    local np=$1 method=$2 round=$3 base=$RAW/np$1-$2-r$3 dir=$CKPT_DIR/np$1 opts=() t0 t1 bytes=-
    case $method in
        none) ;;
        dir) rm -rf "$dir"; opts=(--mca coll_ftrabit_checkpoint_dir "$dir" --mca coll_ftrabit_verbose 1) ;;
        restart) opts=(--mca coll_ftrabit_checkpoint_dir "$dir") ;;
    esac
    wait_quiet
    t0=$(now)
    timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" "${opts[@]}" -np "$np" "$prog" "${args[@]}" \
        >"$base.out" 2>"$base.err" || say "np $np $method round $round: exit $? (see $base.err)"
    t1=$(now)
    if [ "$method" = dir ]; then # the files of the newest version: what one checkpoint writes
        bytes=$(ls -l "$dir" 2>/dev/null | awk '
            match($NF, /^ftrabit-v[0-9]+-/) { v = substr($NF, 10) + 0; b[v] += $5; if (v > top) top = v }
            END { print top ? b[top] : "-" }')
    fi
    local cpu
    cpu=$(awk '$1 == "cpu_iter_s" && $2 > m { m = $2 } END { print m + 0 }' "$base.out")
    # rank 0's writes (the global state's writer): "seconds cpu_seconds" per version
    grep -a "world rank 0\] durable checkpoint version [0-9]* written" "$base.err" \
        | sed 's/.* in \([0-9.]*\) s, \([0-9.]*\) s of CPU/\1 \2/' >"$base.writes" || true
    printf '%s %s %s %s %s %s %s %.3f %s %s %s %s %s %s\n' "$np" "$method" "$round" \
        "$(value iter_mean_s "$base.out")" "$(value iter_median_s "$base.out")" \
        "$(value ckpt_mean_s "$base.out")" "$(value init_s "$base.out")" \
        "$(echo "$t1 - $t0" | bc)" "$(value start_version "$base.out")" "$bytes" \
        "$(value fingerprint "$base.out")" "$cpu" \
        "$(cut -d' ' -f1 "$base.writes" | stats | cut -d' ' -f1)" \
        "$(cut -d' ' -f2 "$base.writes" | stats | cut -d' ' -f1)" >>"$results"
    tail -n 1 "$results" >&2
}

if [ "$MEASURE" = 1 ]; then
    : >"$results"
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s)
    for ((round = 1; round <= ROUNDS; round++)); do
        for np in $NPS; do
            # dir comes before restart (which reads what it wrote); none goes first,
            # between or last as the round turns
            case $((round % 3)) in
                0) order="none dir restart" ;;
                1) order="dir none restart" ;;
                2) order="dir restart none" ;;
            esac
            for m in $order; do
                say "round $round/$ROUNDS np $np: $m ($(($(date +%s) - start)) s so far)"
                one_run "$np" "$m" "$round"
            done
        done
    done
    printf 'load_start="%s"\nload_end="%s"\nelapsed=%s\nquiet_note="%s"\nmeasured="%s"\ncommit="%s"\n' \
        "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(($(date +%s) - start))" \
        "$noisy_starts of $runs runs started without $QUIET_WAIT s of quiet" \
        "$(date -u '+%Y-%m-%d %H:%M UTC')" \
        "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)" >"$RAW/meta.sh"
    rm -rf "$CKPT_DIR"
fi

# ---- table, plot, report ---------------------------------------------------------------------
# shellcheck disable=SC1091
. "$RAW/meta.sh"
dat=$OUT/durable.dat
{
    echo "# np, then per method (none, dir, restart) the median over rounds of: iter_mean_s"
    echo "# ckpt_mean_s init_s wall_s; then the median paired ratio dir/none of iter_mean_s,"
    echo "# its min and max, and the bytes one version writes"
    echo "# np none_iter none_ckpt none_init none_wall dir_iter dir_ckpt dir_init dir_wall restart_init restart_wall ratio ratio_min ratio_max bytes"
    echo "#    none_cpu dir_cpu cpu_ratio cpu_ratio_min cpu_ratio_max write_s write_cpu_s"
    for np in $NPS; do
        med() { awk -v np="$np" -v m="$1" -v c="$2" '$1 == np && $2 == m && $c != "" { print $c }' "$results" | stats | cut -d' ' -f1; }
        ratios=$(awk -v np="$np" '$1 == np && $2 == "none" { n[$3] = $4 } $1 == np && $2 == "dir" { d[$3] = $4 }
                 END { for (r in n) if (r in d && n[r] > 0) print d[r] / n[r] }' "$results" | stats)
        read -r rmed rmin rmax _ <<<"$ratios"
        cpu_ratios=$(awk -v np="$np" '$1 == np && $2 == "none" { n[$3] = $12 } $1 == np && $2 == "dir" { d[$3] = $12 }
                 END { for (r in n) if (r in d && n[r] > 0) print d[r] / n[r] }' "$results" | stats)
        read -r cmed cmin cmax _ <<<"$cpu_ratios"
        echo "$np $(med none 4) $(med none 6) $(med none 7) $(med none 8) $(med dir 4) $(med dir 6) $(med dir 7) $(med dir 8) $(med restart 7) $(med restart 8) $rmed $rmin $rmax $(med dir 10) $(med none 12) $(med dir 12) $cmed $cmin $cmax $(med dir 13) $(med dir 14)"
    done
} >"$dat"

cat >"$RAW/plot.gp" <<EOF
set terminal pngcairo noenhanced size 900,480 font "sans,12"
set output "$OUT/durable.png"
set title "Mean iteration (${MODEL_MIB} MiB model, checkpoint every ${EVERY}), slowest rank, median of ${ROUNDS} rounds"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "seconds per iteration"
set yrange [0:*]
set grid ytics
set key top left
plot "$dat" using 2:xtic(sprintf("np %d", \$1)) title "in-memory checkpoints only", \
     "" using 6 title "with coll_ftrabit_checkpoint_dir"
EOF
gnuplot "$RAW/plot.gp"

fingerprints_ok=$(awk '{ f[$1 " " $11]++; n[$1]++ } END { for (k in f) { split(k, a, " "); if (f[k] == n[a[1]]) ok++ } print ok + 0 }' "$results")
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
{
    cat <<EOF
# Durable checkpoints: what they cost

Measured $measured on $(uname -n) ($(nproc) cores, $cpu, Linux $(uname -r)), at commit
$commit, Open MPI with ULFM; \`bench/run-durable.sh\` (NPS="$NPS" ROUNDS=$ROUNDS
MODEL_MIB=$MODEL_MIB EVERY=$EVERY ITERATIONS=$ITERATIONS LOCAL_KIB=$LOCAL_KIB), $((elapsed / 60))
minutes. Load average $load_start at the start, $load_end at the end; $quiet_note.
All ranks on this one machine, oversubscribed; the directory on its disk. Not run by CI.

bench/durable_bench: a data-parallel loop on a model of $MODEL_MIB MiB (a gradient pass, an
FTR_Allreduce of $MODEL_MIB MiB, the update), FTR_Checkpoint every $EVERY iterations of the
model and $LOCAL_KIB KiB of local state per rank. Methods interleaved in each round: in-memory
checkpoints only, the same with \`coll_ftrabit_checkpoint_dir\`, and that job started again on
its directory (FTR_Init resumes from the last version). Figures: medians over the rounds of
the slowest rank's values; the ratio is paired by round (each round's run with the
directory over the run without, next to it). Every run of an np ended with the same model
fingerprint: $([ "$fingerprints_ok" = "$(echo $NPS | wc -w)" ] && echo yes || echo NO).

| np | mean iteration, in memory | with the directory | ratio (min-max) | iteration with a checkpoint, in memory | with the directory | bytes per version |
|---:|---:|---:|---|---:|---:|---:|
EOF
    awk '!/^#/ { printf "| %d | %.4f s | %.4f s | %.3fx (%.3f-%.3f) | %.4f s | %.4f s | %d (%.1f MiB) |\n", $1, $2, $6, $12, $13, $14, $3, $7, $15, $15 / 1048576 }' "$dat"
    cat <<EOF

| np | CPU per iteration, in memory | with the directory (the writer's included) | ratio (min-max) | rank 0's write of a version | its writer thread's CPU |
|---:|---:|---:|---|---:|---:|
EOF
    awk '!/^#/ { printf "| %d | %.4f s | %.4f s | %.3fx (%.3f-%.3f) | %.3f s | %.3f s |\n", $1, $16, $17, $18, $19, $20, $21, $22 }' "$dat"
    cat <<EOF

| np | FTR_Init, fresh start | FTR_Init, restart from the directory | job's wall time, fresh (all $ITERATIONS iterations) | restarted job's wall time (nothing left to run) |
|---:|---:|---:|---:|---:|
EOF
    awk '!/^#/ { printf "| %d | %.3f s | %.3f s | %.2f s | %.2f s |\n", $1, $4, $10, $5, $11 }' "$dat"
    cat <<EOF

![iteration time](durable.png)

Raw runs (np method round iter_mean iter_median ckpt_mean init_s wall_s start_version
bytes fingerprint cpu_iter write_s write_cpu_s):

\`\`\`
$(cat "$results")
\`\`\`
EOF
} >"$OUT/durable.md"
say "report: $OUT/durable.md"
