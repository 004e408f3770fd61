#!/usr/bin/env bash
# ompi-resilience: what a preemption costs when the process is told first (SIGTERM, then
# the handover at the next checkpoint: ftrabit_notice.c) against when it is not (SIGKILL:
# recovery from the last checkpoint). Not run by CI: timings need a quiet machine.
#
# examples/ftr_kmeans --timeline on NP ranks (checkpoint every EVERY iterations); original
# rank VICTIM gets, at iteration I (after its computation, before its allreduce):
#   none     nothing (the reference: its job time and fingerprint)
#   kill     SIGKILL (--kill): unannounced; a spare or a respawned replacement starts from
#            the last checkpoint and replays every iteration since
#   notice   SIGTERM (--notice), and lives on: at the next checkpoint its rank is handed over
#            to a spare or a respawned replacement, which starts from that checkpoint
# with warm spares (CONFIG spares: NP ranks + SPARES processes) and without (respawn).
# Measured per run, from the wall-clock times the processes print (one machine, one clock):
#   job      from the first rank's start to the last rank's end of the last iteration
#   lost     job minus the median job of the runs without a failure (same config): the
#            wall-clock time the failure cost the whole job
#   redone   iterations the replacement computed again: I minus the iteration it started
#            at (0 when it started at or after I)
#   ftrabit  the recovery or handover time ftrabit reports ("... in X s")
# Methods interleave, their order rotating each repetition.
#
# Writes OUT/NAME.md, NAME.dat, NAME.png (OUT default docs/bench, NAME preemption); raw
# output under RAW (default BUILD/bench-logs/preemption).
# Environment (all optional): BUILD, COMPONENT_DIR, NP=4 SPARES=2 CONFIGS="spares respawn"
#   REPS=5 ITERATIONS=30 EVERY=10 EVENT_ITS="12 18" VICTIM=1 POINTS=2000000 (per rank: an
#   iteration must weigh more than the noise of a shared machine, or redone ones do not show)
#   QUIET_WAIT=30 (seconds to wait for a quiet machine before each run) OUT RAW NAME
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
NP=${NP:-4}
SPARES=${SPARES:-2}
CONFIGS=${CONFIGS:-spares respawn}
REPS=${REPS:-5}
ITERATIONS=${ITERATIONS:-30}
EVERY=${EVERY:-10}
EVENT_ITS=${EVENT_ITS:-12 18}
VICTIM=${VICTIM:-1}
POINTS=${POINTS:-2000000}
QUIET_WAIT=${QUIET_WAIT:-30}
NAME=${NAME:-preemption}
OUT=${OUT:-$top/docs/bench}
RAW=${RAW:-$BUILD/bench-logs/preemption}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
METHODS="none kill notice"

bench_name=run-preemption
. "$top/bench/bench-lib.sh"

bench_require_ompi
make -C "$BUILD" examples/ftr_kmeans >&2
kmeans=$BUILD/examples/ftr_kmeans
bench_require_gnuplot

bench_mpirun_init --with-ft ulfm
mkdir -p "$OUT" "$RAW"

# one_run CONFIG I METHOD REP: prints "config I method rep job_s redone ftrabit_s fingerprint"
one_run() {
    local config=$1 k=$2 method=$3 rep=$4 base np=$NP opts=() event=()
    base=$RAW/$config-i$k-$method-r$rep
    [ "$config" = spares ] && { np=$((NP + SPARES)); opts=(--mca coll_ftrabit_spares "$SPARES"); }
    case $method in
        kill) event=(--kill "$VICTIM:$k") ;;
        notice) event=(--notice "$VICTIM:$k") ;;
    esac
    wait_quiet
    timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" "${opts[@]}" -np "$np" "$kmeans" --timeline \
        --iterations "$ITERATIONS" --checkpoint-every "$EVERY" --points "$POINTS" "${event[@]}" \
        >"$base.out" 2>"$base.err" || say "$config I=$k $method rep $rep: mpirun exit $? ($base.*)"
    awk -v c="$config" -v k="$k" -v m="$method" -v rep="$rep" -v last=$((ITERATIONS - 1)) \
        -v victim="$VICTIM" '
        FILENAME ~ /out$/ && $1 == "timeline" && $4 == "start" && (!t0 || $5 < t0) { t0 = $5 }
        FILENAME ~ /out$/ && $1 == "timeline" && $4 == "done" && $5 == last && $6 > t1 { t1 = $6 }
        FILENAME ~ /out$/ && /^final centroids fingerprint/ { fp = $4 }
        FILENAME ~ /out$/ && $1 == "rank" && $2 == victim ":" && /(spare takes over|replacement starts) at iteration/ {
            for (i = 1; i <= NF; i++) if ($i == "iteration") s = $(i + 1) + 0 }
        FILENAME ~ /err$/ && match($0, / in [0-9.]+ s \(/) { r = substr($0, RSTART + 4, RLENGTH - 7) + 0 }
        END {
            redone = m == "none" ? 0 : (k > s ? k - s : 0)
            printf "%s %d %s %d %.3f %d %s %s\n", c, k, m, rep, (t0 && t1 ? t1 - t0 : -1), redone,
                   r ? sprintf("%.3f", r) : "-", fp ? fp : "none"
        }' "$base.out" "$base.err"
}

results=$RAW/runs.txt
: >"$results"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
read -r -a methods <<<"$METHODS"
for ((rep = 1; rep <= REPS; rep++)); do
    for config in $CONFIGS; do
        for k in $EVENT_ITS; do
            for ((j = 0; j < ${#methods[@]}; j++)); do
                m=${methods[$(((j + rep) % ${#methods[@]}))]}
                say "rep $rep/$REPS $config I=$k $m ($(($(date +%s) - start)) s so far)"
                one_run "$config" "$k" "$m" "$rep" >>"$results"
                tail -n 1 "$results" >&2
            done
        done
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- aggregation: per (config, I, method) ---------------------------------------------------
dat=$OUT/$NAME.dat
{
    echo "# x config event_it method job_med lost_med lost_min lost_max redone_med ftrabit_med n fingerprints_ok"
    x=0
    for config in $CONFIGS; do
        for k in $EVENT_ITS; do
            base_job=$(awk -v c="$config" -v k="$k" '$1 == c && $2 == k && $3 == "none" && $5 >= 0 { print $5 }' "$results" | stats | cut -d' ' -f1)
            ref=$(awk -v c="$config" -v k="$k" '$1 == c && $2 == k && $3 == "none" { print $8; exit }' "$results")
            for m in $METHODS; do
                x=$((x + 1))
                job=$(awk -v c="$config" -v k="$k" -v m="$m" '$1 == c && $2 == k && $3 == m && $5 >= 0 { print $5 }' "$results" | stats)
                lost=$(awk -v c="$config" -v k="$k" -v m="$m" -v b="$base_job" '$1 == c && $2 == k && $3 == m && $5 >= 0 { print $5 - b }' "$results" | stats)
                redone=$(awk -v c="$config" -v k="$k" -v m="$m" '$1 == c && $2 == k && $3 == m { print $6 }' "$results" | stats | cut -d' ' -f1)
                ftr=$(awk -v c="$config" -v k="$k" -v m="$m" '$1 == c && $2 == k && $3 == m && $7 != "-" { print $7 }' "$results" | stats | cut -d' ' -f1)
                ok=$(awk -v c="$config" -v k="$k" -v m="$m" -v ref="$ref" '$1 == c && $2 == k && $3 == m { n++; ok += $8 == ref } END { printf "%d/%d", ok, n }' "$results")
                read -r jm _ _ n <<<"$job"
                read -r lm lmin lmax _ <<<"$lost"
                echo "$x $config $k $m $jm $lm $lmin $lmax $redone $ftr $n $ok"
            done
            x=$((x + 1))
        done
    done
} >"$dat"

xtics=$(awk '!/^#/ && $4 == "kill" { printf "%s\"%s, at it. %s\" %d", (c++ ? ", " : ""), $2, $3, $1 }' "$dat")
{
    cat <<EOF
set terminal pngcairo noenhanced size 1000,600 font "sans,12"
set output "$OUT/$NAME.png"
set title "k-means ($POINTS points/rank, checkpoint every $EVERY it.): rank $VICTIM preempted at iteration I\nwall-clock time lost by the job; median of $REPS, whiskers min-max; $(nproc) cores, oversubscribed"
set style fill solid 0.8 border -1
set boxwidth 0.8
set ylabel "seconds lost against no failure"
set grid ytics
set xtics ($xtics)
set xrange [0:$(awk '!/^#/ { x = $1 } END { print x + 1 }' "$dat")]
set key top left box opaque
plot "< grep -w kill $dat" using 1:6 with boxes lc rgb "#d62728" title "SIGKILL, unannounced", \\
     "< grep -w notice $dat" using 1:6 with boxes lc rgb "#2ca02c" title "SIGTERM notice, handover at the next checkpoint", \\
     "< grep -Ew 'kill|notice' $dat" using 1:6:7:8 with yerrorbars lc rgb "black" pt 0 notitle
EOF
} | gnuplot

md=$OUT/$NAME.md
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
commit=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
{
    cat <<EOF
# A preemption with notice against one without

Generated by \`bench/run-preemption.sh\` on $(date -u "+%Y-%m-%d %H:%M UTC") at commit $commit: $(nproc) cores
($cpu), $(uname -r), Open MPI $("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }').
Not run by CI. Every process runs on this machine, oversubscribed ($NP ranks, plus $SPARES
spares in the spares runs, on $(nproc) cores): absolute times are a small VM's; the
comparison is what carries over.

![time lost]($NAME.png)

\`examples/ftr_kmeans --timeline\`, $NP ranks, $POINTS points per rank, $ITERATIONS
iterations, a checkpoint after every $EVERY (after iterations $((EVERY - 1)), $((2 * EVERY - 1)), ...).
Original rank $VICTIM gets, at iteration I (after its computation, before its allreduce),
a SIGKILL (**kill**: recovery from the last checkpoint, the replacement replays the
iterations since) or a SIGTERM (**notice**, \`coll_ftrabit_notice\` 1, the default: the
process goes on, and at the next checkpoint its rank is handed over to a process that
starts from that checkpoint; the notified process then leaves). **spares**: $SPARES warm
spares (\`coll_ftrabit_spares\`, the job started with $((NP + SPARES)) processes); **respawn**:
none, the replacement is spawned. **lost**: the job's wall-clock time (first rank's start to
the last rank's end of the last iteration) minus the median of the runs without a failure
of the same configuration. **redone**: iterations the replacement computed again.
**ftrabit**: the recovery or handover time ftrabit reports. $REPS repetitions of each,
interleaved; the runs took $elapsed s; load averages (1, 5, 15 min) $load_start before,
$load_end after; $noisy_starts of $runs runs started without $QUIET_WAIT s of quiet.

| config | I | method | job s (median) | lost s (median) | lost min – max | redone | ftrabit s | fingerprint = no failure |
| --- | ---: | --- | ---: | ---: | :---: | ---: | ---: | :---: |
EOF
    awk '!/^#/ { printf "| %s | %d | %s | %.2f | **%.2f** | %.2f – %.2f | %.0f | %s | %s |\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $12 }' "$dat"
    echo
    echo "How to read this (medians; one iteration of the run without a failure is its job time"
    echo "over $ITERATIONS, startup included):"
    echo
    awk -v its="$ITERATIONS" '!/^#/ { key = $2 " " $3; job[key, $4] = $5; lost[key, $4] = $6; redone[key, $4] = $9
                          if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
        END { for (i = 1; i <= n; i++) { k = order[i]; split(k, a, " ")
                  printf "- %s, preempted at iteration %s (an iteration %.2f s): unannounced, %.2f s lost and %d iteration(s) redone; with the notice, %.2f s lost and %d redone (%+.2f s).\n",
                         a[1], a[2], job[k, "none"] / its, lost[k, "kill"], redone[k, "kill"],
                         lost[k, "notice"], redone[k, "notice"], lost[k, "notice"] - lost[k, "kill"] } }' "$dat"
} >"$md"
say "wrote $md"
