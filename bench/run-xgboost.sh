#!/usr/bin/env bash
# ompi-resilience: distributed XGBoost 1.7.4 (integrations/xgboost/, docs/xgboost.md) per
# boosting round on three collective engines, and what a killed rank costs the job. Not run
# by CI: timings need minutes and a quiet machine.
#
# The training is scripts/xgboost.sh's (integrations/xgboost/agaricus.conf: binary
# classification on the agaricus data, nthread=1) with num_round=NUM_ROUND. Engines:
#   ftrabit  our rabit engine on FTR_* (coll/ftrabit, a checkpoint of the learner every
#            CHECKPOINT_EVERY rounds): what scripts/xgboost.sh runs
#   mpi      the same program with FTRABIT_XGB_ENGINE=mpi: plain MPI_Allreduce/MPI_Bcast,
#            served by coll/tuned (--mca coll ^ftrabit), no checkpoint, survives nothing
#   socket   XGBoost with rabit's own socket engine, unchanged (integrations/xgboost/build.sh
#            --engine socket), its processes started with xgboost's tracker
#            (python-package/xgboost/tracker.py, python3) instead of mpirun: what users run
# Seconds per round: (wall time of NUM_ROUND rounds - wall time of STARTUP_ROUND rounds) /
# (NUM_ROUND - STARTUP_ROUND), both runs next to each other, so that the start (MPI or the
# tracker, reading the data, round 0) cancels.
# A killed rank (ftrabit_test_kill=1:KILL_ROUND:round, the original process of rank 1
# SIGKILLs itself in round KILL_ROUND) at KILL_NP ranks, the job's extra wall time over the
# same job without the kill:
#   respawn  KILL_NP processes, the dead one respawned (against ftrabit's run)
#   spare    KILL_NP+1 processes, --mca coll_ftrabit_spares 1: the warm spare takes the rank
#            (against spare0, the same job without the kill)
#   restart  the same job with --mca coll_ftrabit_recovery abort dies with its rank; it is
#            started again from round 0, which takes a run without failure: the extra time
#            is the failed attempt's wall time, until mpirun has ended (the mpi engine would
#            do for this, but its kill hook never passes round 0: its CheckPoint counts no
#            round)
# Each round runs every method once, in an order that rotates from round to round, so that
# drift and other jobs hit all alike; figures are medians over the rounds, ratios paired by
# round. One job at a time.
#
# Writes, under OUT (default docs/bench/xgboost-DATE): xgboost.dat, xgboost.png, xgboost.md.
# Raw output goes to RAW (default BUILD/bench-logs/xgboost).
#
# Usage: nice -n 19 bench/run-xgboost.sh
# Environment (all optional):
#   BUILD (default _build: a built tree, scripts/build.sh's), COMPONENT_DIR
#   NPS="2 4" ROUNDS=3 NUM_ROUND=200 STARTUP_ROUND=2 KILL_NP=4 KILL_ROUND=100
#   ENGINES="ftrabit mpi socket" KILLS="respawn spare restart" (KILLS="" measures none)
#   XGB_FTRABIT, XGB_SOCKET: XGBoost builds to use (integrations/xgboost/build.sh's
#     directories); by default built or found in the cache by integrations/xgboost/build.sh
#   QUIET_WAIT=20  before each run, wait up to this many seconds for a quiet machine
#   RUN_TIMEOUT=600, OUT, RAW; MEASURE=0 only redraws the table and plot from RAW
#   CHECKPOINT_EVERY  the engine's ftrabit_checkpoint_every (default: the engine's, 10)
#   NOTE  a sentence for the report (e.g. what else loaded the machine)
# Every ftrabit run is made with the engine's ftrabit_timing=1: rank 0's split of the time
# (collectives, serializing the learner, FTR_Checkpoint) goes to RAW/timing.txt and the report.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
NPS=${NPS:-2 4}
ROUNDS=${ROUNDS:-3}
NUM_ROUND=${NUM_ROUND:-200}
STARTUP_ROUND=${STARTUP_ROUND:-2}
KILL_NP=${KILL_NP:-4}
KILL_ROUND=${KILL_ROUND:-100}
ENGINES=${ENGINES:-ftrabit mpi socket}
KILLS=${KILLS-respawn spare restart}
QUIET_WAIT=${QUIET_WAIT:-20}
OUT=${OUT:-$top/docs/bench/xgboost-$(date -u +%Y-%m-%d)}
RAW=${RAW:-$BUILD/bench-logs/xgboost}
MEASURE=${MEASURE:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-}

bench_name=run-xgboost
. "$top/bench/bench-lib.sh"
((NUM_ROUND > STARTUP_ROUND && KILL_ROUND < NUM_ROUND)) \
    || die "need STARTUP_ROUND < NUM_ROUND and KILL_ROUND < NUM_ROUND"
mkdir -p "$OUT" "$RAW"
results=$RAW/runs.txt
timings=$RAW/timing.txt
socket_note=

if [ "$MEASURE" = 1 ]; then
    bench_require_ompi
    bench_require_gnuplot
    export OMPI_PREFIX
    XGB_FTRABIT=${XGB_FTRABIT:-$("$top/integrations/xgboost/build.sh" "$BUILD")} \
        || die "XGBoost with the ftrabit engine did not build"
    if [[ " $ENGINES " == *" socket "* ]] && [ -z "${XGB_SOCKET:-}" ]; then
        # The baseline's build takes as long as ours (about 13 minutes here); without it the
        # other engines are measured all the same and the report says why it is missing.
        if ! XGB_SOCKET=$("$top/integrations/xgboost/build.sh" --engine socket "$BUILD" \
                2>"$RAW/socket-build.err"); then
            socket_note="rabit's socket engine did not build: $(tail -n 1 "$RAW/socket-build.err")"
            XGB_SOCKET=
        fi
    fi
    if [[ " $ENGINES " == *" socket "* ]] && [ -z "${XGB_SOCKET:-}" ]; then
        ENGINES=$(echo " $ENGINES " | sed 's/ socket / /')
        [ -n "$socket_note" ] || socket_note="no XGBoost with the socket engine"
        say "$socket_note: measuring without it"
    fi
    command -v python3 >/dev/null || [[ " $ENGINES " != *" socket "* ]] \
        || die "the socket engine's tracker needs python3"
fi

bench_mpirun_init --with-ft ulfm \
    -x "LD_LIBRARY_PATH=$BUILD/stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# run_dir NAME XGB: a fresh directory with the training's configuration
run_dir() {
    local dir=$RAW/$1
    rm -rf "$dir"
    mkdir -p "$dir"
    sed -e "s|@DATA@|$2/src/demo/data|g" "$top/integrations/xgboost/agaricus.conf" >"$dir/agaricus.conf"
    echo "$dir"
}

# socket_job DIR NP PARAMS...: XGBoost with rabit's socket engine on NP processes started
# here, their ranks given by xgboost's tracker (python3), as dmlc's local launcher does.
socket_job() {
    local dir=$1 np=$2 tracker port i pids=() rc=0
    shift 2
    python3 "$XGB_SOCKET/src/python-package/xgboost/tracker.py" --num-workers "$np" \
        --host-ip 127.0.0.1 >"$dir/tracker.out" 2>"$dir/tracker.err" &
    tracker=$!
    for ((i = 0; i < 100; i++)); do
        port=$(sed -n 's/^DMLC_TRACKER_PORT=//p' "$dir/tracker.out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        kill "$tracker" 2>/dev/null; wait "$tracker" 2>/dev/null
        echo "the tracker gave no port" >>"$dir/err"
        return 1
    fi
    for ((i = 0; i < np; i++)); do
        (cd "$dir" && DMLC_TRACKER_URI=127.0.0.1 DMLC_TRACKER_PORT=$port DMLC_TASK_ID=$i \
            DMLC_NUM_WORKER=$np DMLC_ROLE=worker exec "$XGB_SOCKET/bin/xgboost" "$@") \
            >>"$dir/out" 2>>"$dir/err" &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=$?; done
    # the tracker ends when every worker has said shutdown; not after a failure
    kill "$tracker" 2>/dev/null || true
    wait "$tracker" 2>/dev/null || true
    return "$rc"
}

# one_run METHOD NP ROUND NUM_ROUND: one training; appends "np method round num_round
# wall_s rc model_sha256" to the results.
one_run() {
    local method=$1 np=$2 round=$3 nr=$4 xgb=$XGB_FTRABIT opts=() params=() dir t0 t1 rc=0 sha=-
    case $method in
        ftrabit|respawn) ;;
        mpi) opts=(-x FTRABIT_XGB_ENGINE=mpi --mca coll ^ftrabit) ;;
        restart) opts=(--mca coll_ftrabit_recovery abort) ;;
        spare|spare0) opts=(--mca coll_ftrabit_spares 1) ;;
        socket) xgb=$XGB_SOCKET ;;
    esac
    case $method in respawn|spare|restart) params=("ftrabit_test_kill=1:$KILL_ROUND:round") ;; esac
    case $method in mpi|socket) ;; *)
        params+=(ftrabit_timing=1 ${CHECKPOINT_EVERY:+"ftrabit_checkpoint_every=$CHECKPOINT_EVERY"}) ;;
    esac
    dir=$(run_dir "np$np-$method-r$round-n$nr" "$xgb")
    params=("$dir/agaricus.conf" "num_round=$nr" "model_out=$dir/model" "${params[@]}")
    wait_quiet
    t0=$(now)
    if [ "$method" = socket ]; then
        export -f socket_job
        XGB_SOCKET=$XGB_SOCKET timeout -k 5 "$RUN_TIMEOUT" bash -c 'socket_job "$@"' _ \
            "$dir" "$np" "${params[@]}" || rc=$?
    else
        (cd "$dir" && timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" "${opts[@]}" -np "$np" \
            "$xgb/bin/xgboost" "${params[@]}" >"$dir/out" 2>"$dir/err") || rc=$?
    fi
    t1=$(now)
    [ -s "$dir/model" ] && sha=$(sha256sum "$dir/model" | cut -c1-16)
    printf '%s %s %s %s %.3f %s %s\n' "$np" "$method" "$round" "$nr" "$(echo "$t1 - $t0" | bc)" \
        "$rc" "$sha" >>"$results"
    tail -n 1 "$results" >&2
    # rank 0's "timing: R rounds; collectives C s (N calls); serializing the learner S s,
    # FTR_Checkpoint K s (M checkpoints, the last B bytes); ..."
    sed -n 's/.*rank 0 timing: \([0-9]*\) rounds; collectives \([0-9.]*\) s ([0-9]* calls); serializing the learner \([0-9.]*\) s, FTR_Checkpoint \([0-9.]*\) s (\([0-9]*\) checkpoints, the last \([0-9]*\) bytes).*/\1 \2 \3 \4 \5 \6/p' \
        "$dir/out" "$dir/err" | head -n 1 | sed "s/^/$np $method $round $nr /" >>"$timings"
    rm -f "$dir/model"
}

# rotate N WORDS...: the words rotated left N times
rotate() {
    local n=$1
    shift
    local w=("$@") k=$(($# ? n % $# : 0))
    echo "${w[@]:k}" "${w[@]:0:k}"
}

if [ "$MEASURE" = 1 ]; then
    : >"$results"
    : >"$timings"
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s)
    started=$(date -u '+%Y-%m-%d %H:%M')
    kill_methods=
    for k in $KILLS; do
        case $k in
            spare) kill_methods+=" spare0 spare" ;;
            respawn|restart) kill_methods+=" $k" ;;
            *) die "unknown kill method '$k'" ;;
        esac
    done
    # respawn's baseline is ftrabit's run of the same round at KILL_NP
    if [ -n "$kill_methods" ] && [[ " $NPS " != *" $KILL_NP "* ]]; then kill_methods+=" ftrabit"; fi
    for ((round = 1; round <= ROUNDS; round++)); do
        for np in $NPS; do
            for m in $(rotate "$round" $ENGINES); do
                say "round $round/$ROUNDS np $np: $m ($(($(date +%s) - start)) s so far)"
                one_run "$m" "$np" "$round" "$NUM_ROUND"
                one_run "$m" "$np" "$round" "$STARTUP_ROUND"
            done
        done
        if [ -n "$kill_methods" ]; then
            for m in $(rotate "$round" $kill_methods); do
                say "round $round/$ROUNDS kill at np $KILL_NP: $m ($(($(date +%s) - start)) s so far)"
                case $m in
                    spare|spare0) one_run "$m" $((KILL_NP + 1)) "$round" "$NUM_ROUND" ;;
                    *) one_run "$m" "$KILL_NP" "$round" "$NUM_ROUND" ;;
                esac
            done
        fi
    done
    printf 'load_start="%s"\nload_end="%s"\nelapsed=%s\nquiet_note="%s"\nmeasured="%s"\ncommit="%s"\nsocket_note="%s"\nengines="%s"\nnote="%s"\ncheckpoint_every="%s"\n' \
        "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(($(date +%s) - start))" \
        "$noisy_starts of $runs runs started without $QUIET_WAIT s of quiet" \
        "$started-$(date -u '+%H:%M') UTC" \
        "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)" \
        "$socket_note" "$ENGINES" "${NOTE:-}" "${CHECKPOINT_EVERY:-10}" >"$RAW/meta.sh"
fi

# ---- table, plot, report ---------------------------------------------------------------------
# shellcheck disable=SC1091
. "$RAW/meta.sh"

# per_round NP METHOD: "round milliseconds_per_round" for every round that has both runs
per_round() {
    awk -v np="$1" -v m="$2" -v n="$NUM_ROUND" -v s="$STARTUP_ROUND" '
        $1 == np && $2 == m && $6 == 0 && $4 == n { full[$3] = $5 }
        $1 == np && $2 == m && $6 == 0 && $4 == s { start[$3] = $5 }
        END { for (r in full) if (r in start) printf "%s %.3f\n", r, 1000 * (full[r] - start[r]) / (n - s) }' "$results"
}
# paired A_FILE B_FILE: the ratios a/b of the rounds both have (lines "round value")
paired() { awk 'NR == FNR { a[$1] = $2; next } ($1 in a) && $2 > 0 { print a[$1] / $2 }' "$1" "$2"; }
# wall NP METHOD: "round wall_s" of the NUM_ROUND runs (any exit status: killed jobs too)
wall() { awk -v np="$1" -v m="$2" -v n="$NUM_ROUND" '$1 == np && $2 == m && $4 == n { print $3, $5 }' "$results"; }
# extra A_FILE B_FILE: a - b of the rounds both have, "round value"
extra() { awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { print $1, a[$1] - $2 }' "$1" "$2"; }

tmp=$RAW/tmp
mkdir -p "$tmp"
dat=$OUT/xgboost.dat
{
    echo "# milliseconds per boosting round (median over rounds, min, max), then the paired ratios"
    echo "# np ftrabit ftrabit_min ftrabit_max mpi mpi_min mpi_max socket socket_min socket_max"
    echo "#    ftrabit/mpi min max ftrabit/socket min max"
    for np in $NPS; do
        line="$np"
        for m in ftrabit mpi socket; do
            per_round "$np" "$m" >"$tmp/$np-$m"
            read -r med lo hi _ < <(cut -d' ' -f2 "$tmp/$np-$m" | stats)
            line+=" $med $lo $hi"
        done
        for b in mpi socket; do
            read -r med lo hi _ < <(paired "$tmp/$np-ftrabit" "$tmp/$np-$b" | stats)
            line+=" $med $lo $hi"
        done
        echo "$line"
    done
} >"$dat"

# The kills: extra seconds and the same in rounds of ftrabit's run at KILL_NP.
kdat=$OUT/xgboost-kill.dat
per_round "$KILL_NP" ftrabit >"$tmp/kill-round"
wall "$KILL_NP" ftrabit >"$tmp/kill-base"
wall $((KILL_NP + 1)) spare0 >"$tmp/kill-spare0"
{
    echo "# np $KILL_NP, rank 1 killed in round $KILL_ROUND of $NUM_ROUND: the job's extra wall time"
    echo "# method extra_s extra_min extra_max extra_in_rounds rounds_min rounds_max same_model"
    for k in respawn spare restart; do
        case $k in
            respawn) wall "$KILL_NP" respawn >"$tmp/kill-a"; base=$tmp/kill-base ;;
            spare) wall $((KILL_NP + 1)) spare >"$tmp/kill-a"; base=$tmp/kill-spare0 ;;
            restart) wall "$KILL_NP" restart >"$tmp/kill-a"; base=/dev/null ;;
        esac
        [ -s "$tmp/kill-a" ] || continue
        if [ "$k" = restart ]; then cp "$tmp/kill-a" "$tmp/kill-x"; else extra "$tmp/kill-a" "$base" >"$tmp/kill-x"; fi
        read -r med lo hi _ < <(cut -d' ' -f2 "$tmp/kill-x" | stats)
        read -r rmed rlo rhi _ < <(paired "$tmp/kill-x" "$tmp/kill-round" | awk '{ print 1000 * $1 }' | stats)
        # the model of a recovered run against the same job without the kill
        same=-
        if [ "$k" != restart ]; then
            same=$(awk -v np="$KILL_NP" -v n="$NUM_ROUND" -v k="$k" '
                $4 == n && ($2 == "ftrabit" || $2 == "spare0") && $1 >= np { ref = $7 }
                $4 == n && $2 == k { s[$7]++ }
                END { ok = ref != ""; for (x in s) if (x != ref) ok = 0; print ok ? "yes" : "NO" }' "$results")
        fi
        echo "$k $med $lo $hi $rmed $rlo $rhi $same"
    done
} >"$kdat"

panels=1
grep -qv '^#' "$kdat" && panels=2
cat >"$RAW/plot.gp" <<EOF
set terminal pngcairo noenhanced size $((panels * 550)),480 font "sans,12"
set output "$OUT/xgboost.png"
set multiplot layout 1,$panels
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left Left reverse
set offsets 0, 0, graph 0.3, 0
set yrange [0:*]
set datafile missing "-"
set title "XGBoost 1.7.4, milliseconds per boosting round (median of $ROUNDS)"
set ylabel "ms per round"
plot "$dat" using 2:xtic(sprintf("np %d", \$1)) title "ftrabit engine (checkpoint every $checkpoint_every rounds)", \
     "" using 5 title "same engine, MPI + coll/tuned", \
     "" using 8 title "rabit socket engine + tracker"
EOF
[ "$panels" = 1 ] || cat >>"$RAW/plot.gp" <<EOF
set title "Rank 1 killed in round $KILL_ROUND of $NUM_ROUND, np $KILL_NP: the job's extra time"
set ylabel "extra seconds (median of $ROUNDS)"
set style histogram clustered gap 3
unset key
set offsets 0, 0, 0, 0
plot "$kdat" using 2:xtic(1) title "extra seconds"
EOF
echo "unset multiplot" >>"$RAW/plot.gp"
gnuplot "$RAW/plot.gp"

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
socket_para=
[ -z "$socket_note" ] || socket_para=$'\n'"**Not measured: rabit's socket engine.** $socket_note"$'\n'
{
    cat <<EOF
# Distributed XGBoost: seconds per boosting round, and what a killed rank costs

Measured $measured on $(uname -n) ($(nproc) cores, $cpu, Linux $(uname -r)), at commit
$commit, Open MPI with ULFM; \`bench/run-xgboost.sh\` (NPS="$NPS" ROUNDS=$ROUNDS
NUM_ROUND=$NUM_ROUND STARTUP_ROUND=$STARTUP_ROUND KILL_NP=$KILL_NP KILL_ROUND=$KILL_ROUND), $((elapsed / 60))
minutes. Load average $load_start at the start, $load_end at the end; $quiet_note.
All processes on this one machine, oversubscribed. Not run by CI.${note:+ $note}
$socket_para
The training is scripts/xgboost.sh's (XGBoost 1.7.4 from Debian's source with our patches,
binary classification on the agaricus data, nthread=1, num_round=$NUM_ROUND). Engines: ours on
FTR_* with coll/ftrabit and a checkpoint of the learner every $checkpoint_every rounds (\`ftrabit\`); the
same program with \`FTRABIT_XGB_ENGINE=mpi\`, plain MPI_Allreduce/MPI_Bcast served by
coll/tuned (\`mpi\`); rabit's own socket engine with xgboost's tracker
(\`python-package/xgboost/tracker.py\`), what users run today (\`socket\`). Seconds per
round: the wall time of $NUM_ROUND rounds minus that of $STARTUP_ROUND rounds (run next to
it), over $((NUM_ROUND - STARTUP_ROUND)). Methods interleaved in each of the $ROUNDS rounds (the
order rotates); medians over the rounds, ratios paired by round.

| np | ftrabit ms/round (min-max) | mpi + tuned | socket + tracker | ftrabit / mpi (min-max) | ftrabit / socket (min-max) |
|---:|---:|---:|---:|---|---|
EOF
    awk '!/^#/ { printf "| %d | %s (%s-%s) | %s (%s-%s) | %s (%s-%s) | %sx (%s-%s) | %sx (%s-%s) |\n",
                 $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 }' "$dat"
    cat <<EOF

Where the ftrabit engine's time goes (rank 0, its own clock, \`ftrabit_timing=1\`; medians over
the rounds of the runs of $NUM_ROUND rounds), in milliseconds per boosting round: in the
collectives (waiting for the others included), serializing the learner (XGBoost's
Learner::Save) and FTR_Checkpoint (its copy of the state, the ring exchange of the local
state, empty here, and MPIX_Comm_agree); the checkpoints taken and the size of the last:

| np | collectives | serializing | FTR_Checkpoint | checkpoints | last checkpoint bytes |
|---:|---:|---:|---:|---:|---:|
EOF
    for np in $NPS; do
        awk -v np="$np" -v n="$NUM_ROUND" '$1 == np && $2 == "ftrabit" && $4 == n' "$timings" >"$tmp/t-$np"
        [ -s "$tmp/t-$np" ] || continue
        # col COLUMN SCALE: the median of the column times SCALE (an awk expression of n)
        col() { awk -v c="$1" -v n="$NUM_ROUND" "{ print \$c * ($2) }" "$tmp/t-$np" | stats | cut -d' ' -f1; }
        echo "| $np | $(col 6 1000/n) | $(col 7 1000/n) | $(col 8 1000/n) | $(col 9 1 | cut -d. -f1) | $(col 10 1 | cut -d. -f1) |"
    done
    cat <<EOF

A killed rank: rank 1's original process SIGKILLs itself in round $KILL_ROUND
(\`ftrabit_test_kill=1:$KILL_ROUND:round\`) at np $KILL_NP. The extra wall time is the job's
over the same job without the kill in the same round: \`respawn\` (the dead process
respawned) against the ftrabit run; \`spare\` ($((KILL_NP + 1)) processes,
\`--mca coll_ftrabit_spares 1\`) against the same $((KILL_NP + 1)) processes without the kill;
\`restart\` (\`--mca coll_ftrabit_recovery abort\`: the job dies with the rank and is started
again from round 0, which costs what a run without failure costs) is the failed attempt's
wall time, until mpirun has ended. In
rounds: over the same round's ftrabit time per round at np $KILL_NP.

| kill | extra seconds (min-max) | in rounds (min-max) | same model as without the kill |
|---|---:|---:|---|
EOF
    awk '!/^#/ { printf "| %s | %s (%s-%s) | %s (%s-%s) | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$kdat"
    cat <<EOF

Inside the job (the wall-clock stamps \`ftrabit_timing=1\` prints: the kill's message, the
replacement's return from FTR_Init, its checkpoint loaded), seconds, medians (min-max): from
the kill to the replacement taking the rank, then to its checkpoint loaded (it starts
XGBoost as every process does: its part of the data, the DMatrix, round 0 replayed), and
the two together. The job's extra wall time above also holds the difference in pace of two
jobs on a loaded machine.

| kill | kill to replacement | replacement to checkpoint loaded | kill to checkpoint loaded | runs |
|---|---:|---:|---:|---:|
EOF
    for k in spare respawn; do
        for d in "$RAW"/np*-"$k"-r*-n"$NUM_ROUND"; do
            [ -d "$d" ] || continue
            cat "$d/out" "$d/err" 2>/dev/null | awk '
                /killing itself/ { k = $NF } / joined as a replacement at / { j = $NF }
                / loaded version / { l = $NF }
                END { if (k != "" && j != "" && l != "") printf "%.3f %.3f %.3f\n", j - k, l - j, l - k }'
        done >"$tmp/stamps-$k"
        [ -s "$tmp/stamps-$k" ] || continue
        med() { cut -d' ' -f"$1" "$tmp/stamps-$k" | stats | awk '{ printf "%s (%s-%s)", $1, $2, $3 }'; }
        echo "| $k | $(med 1) | $(med 2) | $(med 3) | $(wc -l <"$tmp/stamps-$k") |"
    done
    cat <<EOF

## Against the targets of issue 42

$(awk '!/^#/ && $14 != "-" { printf "- Ours <= 1.05x rabit'"'"'s socket engine per round: np %d %sx (%s-%s): %s.\n", $1, $14, $15, $16, ($14 <= 1.05 ? "met" : "missed") }' "$dat")
$(awk '$1 == "spare" { printf "- A kill with a warm spare costs less than one round: %s s, %s rounds (%s-%s): %s.\n", $2, $5, $6, $7, ($5 < 1 ? "met" : "missed") }' "$kdat")

![per round and kills](xgboost.png)

Raw runs (np method round num_round wall_s exit model_sha256_prefix):

\`\`\`
$(cat "$results")
\`\`\`
EOF
} >"$OUT/xgboost.md"
say "report: $OUT/xgboost.md"
