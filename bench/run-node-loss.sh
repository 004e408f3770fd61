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
#   none     no failure, 4 ranks: the time of one iteration (the slowest rank's "done
#            KILL_IT" minus its "done KILL_IT-1")
#
# Usage: bench/run-node-loss.sh        prints one line per run, then the medians
# Environment: BUILD (default _build), REPS=5, KILL_IT=7, POINTS=20000 (per rank), RAW,
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

bench_name=run-node-loss
. "$top/bench/bench-lib.sh"
bench_require_ompi
. "$top/test/cluster/cluster.sh"
if why=$(cluster_unavailable); then die "the cluster cannot run here: $why"; fi

export PMIX_MCA_mca_base_component_show_load_errors=0
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe --with-ft ulfm
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR")
kmeans=$BUILD/examples/ftr_kmeans
mkdir -p "$RAW"
now() { date +%s.%N; }

# median min max n of the numbers on stdin
stats() {
    sort -g | awk '{ v[++n] = $1 } END {
        if (!n) { print "- - - 0"; exit }
        m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        printf "%.3f %.3f %.3f %d\n", m, v[1], v[n], n }'
}

# one_run METHOD REP: prints "METHOD REP seconds fingerprint ranks"
one_run() {
    local method=$1 rep=$2 base=$RAW/$1-r$2 marks tk="" job i pid np=6 opts=() holds=()
    marks=$(mktemp -d)
    wait_quiet
    case $method in
        spares | rank) opts=(--mca coll_ftrabit_spares 2); holds=(--hold 3:$KILL_IT) ;;
        shrink) opts=(--mca coll_ftrabit_recovery shrink); holds=(--hold 4:$KILL_IT --hold 5:$KILL_IT) ;;
        none) np=4 ;;
    esac
    timeout -k 10 "$RUN_TIMEOUT" "$CLUSTER_SELF" mpirun "${mpirun[@]}" "${opts[@]}" -np "$np" \
        "$kmeans" --timeline --points "$POINTS" --kill-marks "$marks" "${holds[@]}" \
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
    wait "$job" || say "$method rep $rep: exit $? (see $base.log)"
    rm -rf "$marks"
    cluster_reset
    awk -v k="$KILL_IT" -v tk="$tk" -v m="$method" -v rep="$rep" '
        $1 == "timeline" && $4 == "done" && $5 == k && $6 > last { last = $6 }
        $1 == "timeline" && $4 == "done" && $5 == k - 1 && $6 > prev { prev = $6 }
        /final centroids fingerprint/ { fp = $4; ranks = $9 }
        END { s = m == "none" ? last - prev : (last && tk ? last - tk : -1)
              printf "%s %d %.3f %s %s\n", m, rep, s, fp ? fp : "none", ranks ? ranks : "-" }' \
        "$base.log"
}

cluster_up 3
say "cluster $CLUSTER_ID up; $REPS repetitions, kill at iteration $KILL_IT, $POINTS points per rank"
results=$RAW/results.txt
: >"$results"
for ((rep = 1; rep <= REPS; rep++)); do
    order=(spares rank shrink none)
    ((rep % 2)) || order=(shrink rank spares none)
    for m in "${order[@]}"; do
        one_run "$m" "$rep" >>"$results"
        tail -n 1 "$results"
    done
done
echo
echo "method   median   min     max     runs  (seconds: kill to every rank past iteration $KILL_IT; none: one iteration)"
for m in spares rank shrink none; do
    printf '%-8s %s\n' "$m" "$(awk -v m="$m" '$1 == m && $3 >= 0 { print $3 }' "$results" | stats)"
done
echo "runs started on a busy machine: $noisy_starts of $runs"
