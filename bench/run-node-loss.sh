#!/usr/bin/env bash
# ompi-resilience: what losing a whole node costs with libftrabit, warm spares against
# shrinking, on the multi-host test cluster (test/cluster/cluster.sh: network namespaces,
# needs root). Not run by CI.
#
# examples/ftr_kmeans --timeline on 3 hosts x 2 processes, checkpoint every 5 iterations.
# Every process of h2 (its PRRTE daemon and its ranks) is SIGKILLed while the application
# ranks there hold at iteration KILL_IT (--hold: they wait for the kill, so it always lands
# at the same point). Measured: from the kill (this script's clock, just before it) to every
# live rank having finished iteration KILL_IT (the times the processes print; the hosts
# share the machine's clock). Methods, interleaved (the order alternates every repetition):
#   spares   coll_ftrabit_spares 2: 4 application ranks, spares world 3 (h1) and 5 (h2);
#            h2 holds application rank 3 and a spare; the spare on h1 takes rank 3 and
#            redoes the iterations since the last checkpoint
#   rank     the same spares, but only application rank 3's process (world 4, on h2) is
#            killed: one process lost across hosts, h2 and its spare live on
#   shrink   coll_ftrabit_recovery shrink: 6 application ranks, h2 holds ranks 4 and 5;
#            the 4 survivors go on without them (a different answer, by design)
#   respawn  coll_ftrabit_recovery respawn (the default): 6 application ranks, h2 holds
#            ranks 4 and 5; replacements are spawned onto h0 and h1 and catch up
#   failall  plain mpirun (no ULFM): 6 ranks, rank 0 writes the model to a file at each
#            checkpoint; the node loss ends the job, and a new mpirun on the same 3 hosts
#            (as if the scheduler gave a fresh node at once) restarts from the file
#   spares8  coll_ftrabit_spares 2 with 8 application ranks (10 processes, 4+4+2 over the
#            hosts): the spares are world 3 (h0) and 7 (h1); h2 holds ranks 6 and 7, which
#            the two spares take
#   none     no failure, 4 ranks: the time of one iteration (the slowest rank's "done
#            KILL_IT" minus its "done KILL_IT-1")
#
# Usage: bench/run-node-loss.sh        prints one line per run, then the medians; writes
#                                      OUT/NAME.md, OUT/NAME.dat and OUT/NAME.png
# Environment: BUILD (default _build), REPS=5, KILL_IT=7, POINTS=20000 (per rank), RAW,
#   METHODS="spares rank respawn shrink failall none", NAME=node-loss, OUT=docs/bench,
#   QUIET_WAIT=10 (seconds to wait for a quiet machine before each run)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
REPS=${REPS:-5}
KILL_IT=${KILL_IT:-7}
POINTS=${POINTS:-20000}
RAW=${RAW:-$BUILD/bench-logs/node-loss}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
QUIET_WAIT=${QUIET_WAIT:-10}
METHODS=${METHODS:-spares rank respawn shrink failall none}
NAME=${NAME:-node-loss}
OUT=${OUT:-$top/docs/bench}

bench_name=run-node-loss
. "$top/bench/bench-lib.sh"
bench_require_ompi
. "$top/test/cluster/cluster.sh"
if why=$(cluster_unavailable); then die "the cluster cannot run here: $why"; fi

export PMIX_MCA_mca_base_component_show_load_errors=0
plain_mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe
              --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR")
mpirun=("${plain_mpirun[@]}" --with-ft ulfm)
kmeans=$BUILD/examples/ftr_kmeans
mkdir -p "$RAW"
# one_run METHOD REP: prints "METHOD REP seconds fingerprint ranks"
one_run() {
    local method=$1 rep=$2 base=$RAW/$1-r$2 marks tk="" job i pid np=6 opts=() holds=()
    local run=("${mpirun[@]}") ckpt=$RAW/$1-r$2.ckpt prog=()
    marks=$(mktemp -d)
    rm -f "$base.log" "$base.2.log" "$ckpt"
    wait_quiet
    case $method in
        spares | rank) opts=(--mca coll_ftrabit_spares 2); holds=(--hold 3:$KILL_IT) ;;
        shrink) opts=(--mca coll_ftrabit_recovery shrink); holds=(--hold 4:$KILL_IT --hold 5:$KILL_IT) ;;
        respawn) holds=(--hold 4:$KILL_IT --hold 5:$KILL_IT) ;;
        spares8) np=10; opts=(--mca coll_ftrabit_spares 2); holds=(--hold 6:$KILL_IT --hold 7:$KILL_IT) ;;
        failall) run=("${plain_mpirun[@]}"); prog=(--checkpoint-file "$ckpt")
                 holds=(--hold 4:$KILL_IT --hold 5:$KILL_IT) ;;
        none) np=4 ;;
    esac
    timeout -k 10 "$RUN_TIMEOUT" "$CLUSTER_SELF" mpirun "${run[@]}" "${opts[@]}" -np "$np" \
        "$kmeans" --timeline --points "$POINTS" --kill-marks "$marks" "${holds[@]}" "${prog[@]}" \
        </dev/null >"$base.log" 2>&1 &
    job=$!
    if [ "$method" != none ]; then
        for ((i = 0; i < 600; i++)); do
            [ "$(ls "$marks" | grep -c '^held-')" = "$((${#holds[@]} / 2))" ] && break
            sleep 0.05
        done
        if [ "$method" = rank ]; then
            pid=$(cluster_world_pid h2 4)
            tk=$(now)
            kill -KILL "$pid"
        else
            tk=$(now)
            cluster_kill_host h2
        fi
    fi
    # (without ULFM, mpirun ends the job at the loss and still exits 0: its message tells)
    wait "$job" || [ "$method" = failall ] || say "$method rep $rep: exit $? (see $base.log)"
    if [ "$method" = failall ] && ! grep -aq "lost communication with a remote daemon" "$base.log"; then
        say "failall rep $rep: the job did not end at the node loss (see $base.log)"
    fi
    if [ "$method" = failall ]; then
        # the job ended with the node; a new one restarts from the file on all 3 hosts
        timeout -k 10 "$RUN_TIMEOUT" "$CLUSTER_SELF" mpirun "${run[@]}" -np "$np" "$kmeans" \
            --timeline --points "$POINTS" --checkpoint-file "$ckpt" --restart-from-file \
            </dev/null >"$base.2.log" 2>&1 || say "failall rep $rep: restart exit $? (see $base.2.log)"
    fi
    rm -rf "$marks" "$ckpt"
    cluster_reset
    # the iteration's end, and the result: for failall, those of the restarted job
    local ended=$base.log
    [ "$method" != failall ] || ended=$base.2.log
    awk -v k="$KILL_IT" -v tk="$tk" -v m="$method" -v rep="$rep" '
        $1 == "timeline" && $4 == "done" && $5 == k && $6 > last { last = $6 }
        $1 == "timeline" && $4 == "done" && $5 == k - 1 && $6 > prev { prev = $6 }
        /final centroids fingerprint/ { fp = $4; ranks = $9 }
        END { s = m == "none" ? last - prev : (last && tk ? last - tk : -1)
              printf "%s %d %.3f %s %s\n", m, rep, s, fp ? fp : "none", ranks ? ranks : "-" }' \
        "$ended" 2>/dev/null || echo "$method $rep -1 none -"
}

bench_require_gnuplot
cluster_up 3
say "cluster $CLUSTER_ID up; $REPS repetitions, kill at iteration $KILL_IT, $POINTS points per rank"
results=$RAW/results.txt
: >"$results"
read -r -a methods <<<"$METHODS"
for ((rep = 1; rep <= REPS; rep++)); do
    # the order rotates every repetition, so that drift and other jobs hit all methods alike
    for ((j = 0; j < ${#methods[@]}; j++)); do
        m=${methods[$(((j + rep - 1) % ${#methods[@]}))]}
        one_run "$m" "$rep" >>"$results"
        tail -n 1 "$results"
    done
done

# ---- report ------------------------------------------------------------------------------
describe() {
    case $1 in
        spares) echo "warm spares (h2 lost: a spare on h1 takes rank 3)" ;;
        rank) echo "warm spares, one process of h2 killed (h2 lives on)" ;;
        spares8) echo "8 ranks + 2 warm spares (h2 lost: spares on h0 and h1 take ranks 6, 7)" ;;
        respawn) echo "respawn (h2 lost: 2 replacements spawned onto h0 and h1)" ;;
        shrink) echo "shrink (h2 lost: 4 ranks go on, another answer)" ;;
        failall) echo "fail-all: the job ends, a new mpirun restarts from the file" ;;
        none) echo "no failure: one iteration" ;;
    esac
}
dat=$OUT/$NAME.dat
mkdir -p "$OUT"
{
    echo "# x method median min max runs (seconds: kill to every rank past iteration $KILL_IT; none: one iteration)"
    x=0
    for m in "${methods[@]}"; do
        x=$((x + 1))
        echo "$x $m $(awk -v m="$m" '$1 == m && $3 >= 0 { print $3 }' "$results" | stats)"
    done
} >"$dat"
echo
echo "method   median   min     max     runs  (seconds: kill to every rank past iteration $KILL_IT; none: one iteration)"
awk '!/^#/ { printf "%-8s %s %s %s %s\n", $2, $3, $4, $5, $6 }' "$dat"
echo "runs started on a busy machine: $noisy_starts of $runs"

xtics=$(awk '!/^#/ { printf "%s\"%s\" %d", (c++ ? ", " : ""), $2, $1 }' "$dat")
{
    bench_seconds_plot "$OUT/$NAME.png" 1000,560 "A whole host lost (3 hosts x 2 processes, ftr_kmeans, $POINTS points/rank)\nkill to every rank past iteration $KILL_IT; median of $REPS, whiskers min-max; $(nproc) cores for all hosts" 0.001
    cat <<EOF
set boxwidth 0.7
set xtics ($xtics)
set xrange [0:$((${#methods[@]} + 1))]
plot "< grep -v '^#' $dat" using 1:3 with boxes lc rgb "#2ca02c" notitle, \
     "< grep -v '^#' $dat" using 1:3:4:5 with yerrorbars lc rgb "black" pt 0 notitle, \
     "< grep -v '^#' $dat" using 1:3:(sprintf("%.3f s", \$3)) with labels offset 0,1 notitle
EOF
} | gnuplot

commit=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
{
    cat <<EOF
# A whole node lost: recovery time by method

Generated by \`bench/run-node-loss.sh\` on $(date -u +%Y-%m-%d) at commit $commit: $(nproc) cores
($cpu), $(uname -r). Not run by CI. The multi-host test cluster (docs/cluster.md): 3 hosts
(network namespaces of this one machine, sharing its $(nproc) cores and its clock), 2
processes each; examples/ftr_kmeans --timeline, $POINTS points per rank, a checkpoint every 5
iterations. The processes that must die hold at iteration $KILL_IT until the script kills
them, so every kill lands at the same point. Measured: from the kill (the script's clock, just
before it) to every live rank having finished iteration $KILL_IT. $REPS repetitions per
method, the order rotating; runs started on a busy machine: $noisy_starts of $runs.

![recovery time]($NAME.png)

| method | what happens | median s | min s | max s | runs |
|---|---|---|---|---|---|
EOF
    awk '!/^#/ { print $2, $3, $4, $5, $6 }' "$dat" | while read -r m med min max n; do
        echo "| $m | $(describe "$m") | $med | $min | $max | $n |"
    done
    awk '!/^#/ { t[$2] = $3 } END {
        if (t["spares"] > 0 && t["failall"] > 0)
            printf "\nMedians: warm spares recover %.0fx faster than failing the whole job and restarting it from the file", t["failall"] / t["spares"]
        if (t["respawn"] > 0 && t["failall"] > 0)
            printf ", respawn %.1fx.", t["failall"] / t["respawn"]
        printf "\n" }' "$dat"
    echo
    echo "Fingerprints (every run of a method must print the same; spares, rank and none end on"
    echo "4 application ranks, spares8 on 8, respawn and failall on 6 - each the answer of a run"
    echo "without failures on as many ranks; shrink's answer differs by design):"
    echo
    for m in "${methods[@]}"; do
        echo "- $m: $(awk -v m="$m" '$1 == m { print $4 }' "$results" | sort | uniq -c | awk '{ printf "%s%s x%d", (c++ ? ", " : ""), $2, $1 }')"
    done
} >"$OUT/$NAME.md"
say "wrote $OUT/$NAME.md, $dat and $OUT/$NAME.png"
