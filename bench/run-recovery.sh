#!/usr/bin/env bash
# ompi-resilience: what a process failure costs with libftrabit, against restarting the
# whole job from a checkpoint file; and what the FTR_* layer costs when nothing fails.
# Not run by CI: timings need minutes and a quiet machine.
#
# Part "recovery": examples/ftr_kmeans --timeline on NP ranks; original rank KILL_RANK
# SIGKILLs itself at iteration I (before its allreduce, after that iteration's compute),
# with a checkpoint every EVERY iterations. Measured: from the kill to every rank having
# finished iteration I (its collectives and checkpoint), from the wall-clock times the
# processes print (one machine, one clock). Methods, interleaved (the order rotates every
# repetition so drift and other jobs hit all alike):
#   none      no failure (reference fingerprint and iteration time)
#   respawn   mpirun --with-ft ulfm, coll_ftrabit_recovery respawn (default)
#   spares    the same with coll_ftrabit_spares SPARES: the job starts with SPARES processes
#             more (NP + SPARES), which wait inside FTR_Init; a spare takes the dead rank
#   shrink    mpirun --with-ft ulfm, coll_ftrabit_recovery shrink
#   failall   plain mpirun (no ULFM: the failure ends the job), rank 0 writes the global
#             model to a file at each checkpoint (--checkpoint-file); then a new mpirun
#             with --restart-from-file reads it and redoes the lost iterations.
# Both kill positions are measured: KILL_ITS (default "5 9" with EVERY 5: just after a
# checkpoint, and just before the next one, 4 more iterations to redo).
#
# The failure-free cost of the FTR_* layer is measured by bench/run-ftr-overhead.sh.
#
# Writes, under OUT (default docs/bench), NAME defaulting to "recovery":
#   NAME.dat, NAME.png                 recovery time per method, np and kill iteration
#   NAME.md                            the tables and how they were measured
# Raw output goes to RAW (default BUILD/bench-logs/recovery).
#
# Usage: bench/run-recovery.sh
# Environment (all optional):
#   BUILD (default _build), COMPONENT_DIR (default BUILD/stage/lib/openmpi)
#   PARTS=recovery  NPS="4 8"  REPS=5  METHODS="none respawn shrink failall"
#   SPARES=2 (for the spares method)  NAME=recovery
#   KILL_RANK=1 KILL_ITS="5 9" EVERY=5 ITERATIONS=16 POINTS=400000 (per rank)
#   QUIET_WAIT=30  before each run, wait up to this many seconds for a quiet machine
#   OUT, RAW
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
PARTS=${PARTS:-recovery}
NPS=${NPS:-4 8}
REPS=${REPS:-5}
METHODS=${METHODS:-none respawn shrink failall}
SPARES=${SPARES:-2}
NAME=${NAME:-recovery}
KILL_RANK=${KILL_RANK:-1}
KILL_ITS=${KILL_ITS:-5 9}
EVERY=${EVERY:-5}
ITERATIONS=${ITERATIONS:-16}
POINTS=${POINTS:-400000}
QUIET_WAIT=${QUIET_WAIT:-30}
OUT=${OUT:-$top/docs/bench}
RAW=${RAW:-$BUILD/bench-logs/recovery}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}

bench_name=run-recovery
. "$top/bench/bench-lib.sh"

bench_require_ompi
make -C "$BUILD" examples/ftr_kmeans >&2
kmeans=$BUILD/examples/ftr_kmeans
bench_require_gnuplot

bench_mpirun_init
mkdir -p "$OUT" "$RAW"
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')

# ---- part 1: recovery ------------------------------------------------------------------
# One run; writes RAW/rec-np<NP>-k<I>-<method>-r<REP>.{out,err[,2.out,2.err]} and prints
# one result line: np kill_it method rep recovery_s total_s reported_s fingerprint
#   recovery_s   last "done I" time minus the kill time (none: "done I" minus "done I-1"
#                of the slowest rank, i.e. one failure-free iteration)
#   total_s      wall clock of the whole job, from the first mpirun to the last exit
#   reported_s   what ftrabit's "recovered ... in X s" line says (respawn, shrink)
one_run() {
    local np=$1 k=$2 method=$3 rep=$4
    local base=$RAW/rec-np$np-k$k-$method-r$rep
    local args=(--timeline --iterations "$ITERATIONS" --checkpoint-every "$EVERY" --points "$POINTS")
    local kill=(--kill "$KILL_RANK:$k")
    local t0 t1 rc=0
    rm -f "$base".*
    wait_quiet
    t0=$(now)
    case $method in
    none)
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" --with-ft ulfm -np "$np" "$kmeans" "${args[@]}" \
            >"$base.out" 2>"$base.err" || rc=$?
        ;;
    respawn | shrink)
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" --with-ft ulfm --mca coll_ftrabit_recovery "$method" \
            -np "$np" "$kmeans" "${args[@]}" "${kill[@]}" >"$base.out" 2>"$base.err" || rc=$?
        ;;
    spares)
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" --with-ft ulfm --mca coll_ftrabit_spares "$SPARES" \
            -np "$((np + SPARES))" "$kmeans" "${args[@]}" "${kill[@]}" >"$base.out" 2>"$base.err" || rc=$?
        ;;
    failall)
        local ckpt=$RAW/ckpt-np$np-k$k-r$rep.bin
        rm -f "$ckpt"
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" -np "$np" "$kmeans" "${args[@]}" "${kill[@]}" \
            --checkpoint-file "$ckpt" >"$base.out" 2>"$base.err" || true
        now >"$base.first-exit"
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" -np "$np" "$kmeans" "${args[@]}" \
            --checkpoint-file "$ckpt" --restart-from-file >"$base.2.out" 2>"$base.2.err" || rc=$?
        ;;
    esac
    t1=$(now)
    ((rc == 0)) || say "np $np kill $k $method rep $rep: mpirun exit $rc (see $base.*)"
    { cat "$base.out"; [ ! -f "$base.2.out" ] || cat "$base.2.out"; } | awk -v np="$np" -v k="$k" -v m="$method" -v rep="$rep" \
        -v t0="$t0" -v t1="$t1" -v err="$(cat "$base.err" "$base.2.err" 2>/dev/null | tr '\n' ' ')" '
        $1 == "timeline" && $4 == "kill" && $5 == k { tkill = $6 }
        $1 == "timeline" && $4 == "done" && $5 == k && $6 > last { last = $6 }
        $1 == "timeline" && $4 == "done" && $5 == k - 1 && $6 > prev { prev = $6 }
        /^final centroids fingerprint/ { fp = $4 }
        END {
            rec = m == "none" ? last - prev : (tkill && last ? last - tkill : -1)
            rep_s = "-"
            if (match(err, /recovered from a process failure in [0-9.]+ s/)) {
                s = substr(err, RSTART, RLENGTH); split(s, w, " "); rep_s = w[7]
            }
            printf "%d %d %s %d %.3f %.3f %s %s\n", np, k, m, rep, rec, t1 - t0, rep_s, fp ? fp : "none"
        }'
}

if [[ " $PARTS " == *" recovery "* ]]; then
    results=$RAW/recovery-runs.txt
    : >"$results"
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s)
    read -r -a methods <<<"$METHODS"
    nm=${#methods[@]}
    for ((rep = 1; rep <= REPS; rep++)); do
        for np in $NPS; do
            for k in $KILL_ITS; do
                for ((j = 0; j < nm; j++)); do
                    m=${methods[$(((j + rep) % nm))]}
                    say "rep $rep/$REPS np $np kill at $k: $m ($(($(date +%s) - start)) s so far)"
                    one_run "$np" "$k" "$m" "$rep" >>"$results" # not a pipe: counters survive
                    tail -n 1 "$results" >&2
                done
            done
        done
    done
    rec_elapsed=$(($(date +%s) - start))
    load_end=$(cut -d' ' -f1-3 /proc/loadavg)
    # The measurement's own settings, so that a later run with PARTS= (only the tables and
    # plots) describes it correctly.
    printf 'load_start="%s"\nload_end="%s"\nrec_elapsed=%s\nrec_quiet_note="%s"\n' \
        "$load_start" "$load_end" "$rec_elapsed" \
        "$noisy_starts of $runs runs started without $QUIET_WAIT s of quiet" >"$RAW/recovery-meta.sh"
    printf 'NPS="%s"\nREPS=%s\nMETHODS="%s"\nKILL_RANK=%s\nKILL_ITS="%s"\nEVERY=%s\nITERATIONS=%s\nPOINTS=%s\nQUIET_WAIT=%s\n' \
        "$NPS" "$REPS" "$METHODS" "$KILL_RANK" "$KILL_ITS" "$EVERY" "$ITERATIONS" "$POINTS" "$QUIET_WAIT" >>"$RAW/recovery-meta.sh"
fi

# ---- aggregation, plots, recovery.md ---------------------------------------------------
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'
md=$OUT/$NAME.md
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
commit=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
{
    cat <<EOF
# Recovery time and the failure-free cost of libftrabit

Generated by \`bench/run-recovery.sh\` on $(date -u +%Y-%m-%d) at commit $commit: $(nproc) cores ($cpu),
$(uname -r), Open MPI $ompi_version. Not run by CI. All ranks run on this one machine,
**oversubscribed**: 4 ranks share $(nproc) cores, 8 ranks share them 4 to a core, so absolute times
are those of a small VM, not of a cluster; what carries over is the comparison.
EOF
} >"$md"

if [ -f "$RAW/recovery-runs.txt" ]; then
    # shellcheck disable=SC1091
    . "$RAW/recovery-meta.sh"
    dat=$OUT/$NAME.dat
    ref_fp() { awk -v np="$1" -v k="$2" '$1 == np && $2 == k && $3 == "none" { print $8; exit }' "$RAW/recovery-runs.txt"; }
    {
        echo "# recovery time: kill of original rank $KILL_RANK at iteration I (before its allreduce) to every rank past I"
        echo "# seconds; median min max over repetitions; x is the plot position"
        echo "# x np kill_it method rec_med rec_min rec_max n total_med total_min total_max reported_med fingerprints_ok"
        x=0
        for k in $KILL_ITS; do
            for np in $NPS; do
                ref=$(ref_fp "$np" "$k")
                for m in $METHODS; do
                    x=$((x + 1))
                    rec=$(awk -v np="$np" -v k="$k" -v m="$m" '$1 == np && $2 == k && $3 == m && $5 >= 0 { print $5 }' "$RAW/recovery-runs.txt" | stats)
                    tot=$(awk -v np="$np" -v k="$k" -v m="$m" '$1 == np && $2 == k && $3 == m { print $6 }' "$RAW/recovery-runs.txt" | stats)
                    reported=$(awk -v np="$np" -v k="$k" -v m="$m" '$1 == np && $2 == k && $3 == m && $7 != "-" { print $7 }' "$RAW/recovery-runs.txt" | stats)
                    fpok=$(awk -v np="$np" -v k="$k" -v m="$m" -v ref="$ref" '$1 == np && $2 == k && $3 == m { n++; ok += ($8 == ref) } END { printf "%d/%d", ok, n }' "$RAW/recovery-runs.txt")
                    read -r rm rmin rmax rn <<<"$rec"
                    read -r tm tmin tmax _ <<<"$tot"
                    read -r pm _ _ _ <<<"$reported"
                    echo "$x $np $k $m $rm $rmin $rmax $rn $tm $tmin $tmax $pm $fpok"
                done
                x=$((x + 1))
            done
            x=$((x + 1))
        done
    } >"$dat"

    # The plot: one group per (kill iteration, np), one bar per method with min-max whiskers.
    xtics=$(awk '!/^#/ { if (!($3 SUBSEP $2 in g)) { g[$3 SUBSEP $2] = 1; first[$3 SUBSEP $2] = $1 } last[$3 SUBSEP $2] = $1; key[++n] = $3 SUBSEP $2 }
        END { for (i = 1; i <= n; i++) if (!(key[i] in done)) { done[key[i]] = 1; split(key[i], p, SUBSEP)
              printf "%s\"kill at it. %s\\n%s ranks\" %.1f", (c++ ? ", " : ""), p[1], p[2], (first[key[i]] + last[key[i]]) / 2 } }' "$dat")
    {
        bench_seconds_plot "$OUT/$NAME.png" 1100,650 "k-means (ftr_kmeans, $POINTS points/rank, checkpoint every $EVERY it.): rank $KILL_RANK SIGKILLed\nkill to every rank past the failed iteration; median of $REPS, whiskers min-max; $(nproc) cores, oversubscribed" 0.005
        cat <<EOF
set boxwidth 0.8
set xtics ($xtics)
set xrange [0:$(awk '!/^#/ { x = $1 } END { print x + 1 }' "$dat")]
set bmargin 5
set key top center horizontal box opaque maxrows 2
plot "< grep -w respawn $dat" using 1:5 with boxes lc rgb "#2ca02c" title "ftrabit respawn", \
     "< grep -w spares $dat" using 1:5 with boxes lc rgb "#9467bd" title "ftrabit spares ($SPARES warm spares)", \
     "< grep -w shrink $dat" using 1:5 with boxes lc rgb "#1f77b4" title "ftrabit shrink", \
     "< grep -w failall $dat" using 1:5 with boxes lc rgb "#d62728" title "fail-all: new mpirun, restart from file", \
     "< grep -w none $dat" using 1:5 with boxes lc rgb "#999999" title "no failure: one iteration", \
     "< grep -v '^#' $dat" using 1:5:6:7 with yerrorbars lc rgb "black" pt 0 notitle
EOF
    } | gnuplot

    {
        cat <<EOF

## Recovery time

![recovery time]($NAME.png)

What is measured: \`examples/ftr_kmeans --timeline\` ($POINTS points per rank, 8 clusters,
4 dimensions, $ITERATIONS iterations, \`--checkpoint-every $EVERY\`); original rank $KILL_RANK kills
itself with SIGKILL at iteration I, after that iteration's computation and before its
\`FTR_Allreduce\`. The recovery time is from the kill (the victim's clock just before
\`raise(SIGKILL)\`) to the moment the last rank has finished iteration I (its allreduce, its
broadcast and, where due, its checkpoint), from the wall-clock times every process prints;
all processes share one clock. It includes redoing the iterations lost since the last
checkpoint: with I = 5 the checkpoint at the end of iteration 4 is the last one, so only
iteration 5 is redone; with I = 9, iterations 5 to 9.

- **respawn**: \`mpirun --with-ft ulfm\`, the default policy: the survivors revoke, shrink,
  spawn a replacement, which loads the in-memory checkpoint and replays (its collectives
  are served from the survivors' caches).
- **spares**: \`--mca coll_ftrabit_spares $SPARES\`, the job started with $SPARES processes more
  (\`-np\` NP+$SPARES), which wait inside \`FTR_Init\`: the survivors and the spares shrink
  their standby communicator, a spare takes the dead rank's place, and it then loads the
  checkpoint and replays as a respawned replacement does. No process is started.
- **shrink**: \`--mca coll_ftrabit_recovery shrink\`: the survivors continue without the dead
  rank (its points are lost, so the final centroids differ, as they must).
- **fail-all**: what an MPI job does without ULFM: plain \`mpirun\`; the failure ends the whole
  job; rank 0 wrote the global model to a file at each checkpoint (\`--checkpoint-file\`,
  write and rename, no fsync: a page-cache write, the cheapest a file checkpoint gets), and
  the script at once starts a new \`mpirun ... --restart-from-file\`, which regenerates its
  data, reads the file and redoes the lost iterations. No scheduler queue wait is counted:
  on a real cluster a resubmitted job usually waits far longer than all of this.
- **no failure**: the same run without a kill; its "recovery" column is one iteration (the
  slowest rank's time from finishing iteration I-1 to finishing I), for scale.

$REPS repetitions of every (np, I, method), interleaved: every repetition runs all of them,
the method order rotating. The runs took $rec_elapsed s; load averages (1, 5, 15 min) were
$load_start before and $load_end after (other builds and tests shared the
machine); $rec_quiet_note.
"fingerprint" counts the runs whose final centroids equal the failure-free run's
(bit-identical, as ftrabit promises for respawn; shrink loses a rank's data and differs by
design; fail-all restarts from the same model and matches too).

| killed at | ranks | method | recovery s, median | min – max | whole job s, median | ftrabit's own "recovered in" s | fingerprint = no-failure run |
| ---: | ---: | --- | ---: | :---: | ---: | ---: | :---: |
EOF
        awk '!/^#/ { printf "| %d | %d | %s | **%.3f** | %.3f – %.3f | %.2f | %s | %s |\n", $3, $2, $4, $5, $6, $7, $9, $12, $13 }' "$dat"
        cat <<EOF

Where the time goes (medians over the same runs, seconds). fail-all: from the kill until the
first \`mpirun\` has exited (the launcher notices the death and kills the job); from there
until the restarted job's slowest rank has loaded the checkpoint file (a new \`mpirun\`,
\`MPI_Init\` of every rank, regenerating the data); from there until every rank has finished
iteration I again (redoing the lost iterations). respawn: what ftrabit reports for the
recovery itself (revoke, agreement, shrink, spawn and merge, the catch-up plan), and the
rest (the replacement's data generation and its replay up to the others).

| killed at | ranks | fail-all: kill → job gone | → restarted job ready | → past I again | respawn: ftrabit recovery | → past I | spares: ftrabit recovery | → past I |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
EOF
        for k in $KILL_ITS; do
            for np in $NPS; do
                fa=$(for f in "$RAW"/rec-np$np-k$k-failall-r*.out; do
                         case $f in *.2.out) continue ;; esac
                         [ -f "${f%.out}.first-exit" ] && [ -f "${f%.out}.2.out" ] || continue
                         awk -v k="$k" -v ex="$(cat "${f%.out}.first-exit")" '
                             FNR == 1 { file++ }
                             file == 1 && $1 == "timeline" && $4 == "kill" { tk = $6 }
                             file == 2 && $1 == "timeline" && $4 == "start" && $5 > ready { ready = $5 }
                             file == 2 && $1 == "timeline" && $4 == "done" && $5 == k && $6 > past { past = $6 }
                             END { if (tk && ready && past) printf "%.3f %.3f %.3f\n", ex - tk, ready - ex, past - ready }' "$f" "${f%.out}.2.out"
                     done)
                rs=$(awk -v np="$np" -v k="$k" '$1 == np && $2 == k && $3 == "respawn" && $7 != "-" { printf "%.3f %.3f\n", $7, $5 - $7 }' "$RAW/recovery-runs.txt")
                sp=$(awk -v np="$np" -v k="$k" '$1 == np && $2 == k && $3 == "spares" && $7 != "-" { printf "%.3f %.3f\n", $7, $5 - $7 }' "$RAW/recovery-runs.txt")
                c1=$(cut -d' ' -f1 <<<"$fa" | stats | cut -d' ' -f1)
                c2=$(cut -d' ' -f2 <<<"$fa" | stats | cut -d' ' -f1)
                c3=$(cut -d' ' -f3 <<<"$fa" | stats | cut -d' ' -f1)
                c4=$(cut -d' ' -f1 <<<"$rs" | stats | cut -d' ' -f1)
                c5=$(cut -d' ' -f2 <<<"$rs" | stats | cut -d' ' -f1)
                c6=$(cut -d' ' -f1 <<<"$sp" | stats | cut -d' ' -f1)
                c7=$(cut -d' ' -f2 <<<"$sp" | stats | cut -d' ' -f1)
                echo "| $k | $np | $c1 | $c2 | $c3 | $c4 | $c5 | $c6 | $c7 |"
            done
        done
        echo
        awk '!/^#/ { r[$3 SUBSEP $2 SUBSEP $4] = $5 }
             END { n = split("respawn spares shrink", ms, " ")
                   for (key in r) { split(key, p, SUBSEP); if (p[3] != "failall") continue
                     line = ""
                     for (i = 1; i <= n; i++) { d = r[p[1] SUBSEP p[2] SUBSEP ms[i]]
                       if (d > 0) line = line sprintf("%s%.1fx as long as %s", line == "" ? "" : ", ", r[key] / d, ms[i]) }
                     if (line != "") printf "- killed at %d on %d ranks: fail-all takes %s.\n", p[1], p[2], line }
                   for (key in r) { split(key, p, SUBSEP); if (p[3] != "respawn" || !(r[p[1] SUBSEP p[2] SUBSEP "spares"] > 0)) continue
                     printf "- killed at %d on %d ranks: respawn takes %.1fx as long as spares.\n", p[1], p[2], r[key] / r[p[1] SUBSEP p[2] SUBSEP "spares"] } }' "$dat" | sort -t' ' -k4n -k6n
        cat <<'EOF'

How to read this (the numbers are from this small, shared, oversubscribed machine):

- **Both respawn and fail-all are dominated by starting processes**, not by lost work. A
  respawn's cost is ftrabit's recovery, and within it almost all of it is
  `MPI_Comm_spawn` (prterun starting a process that then runs `MPI_Init` and connects);
  revoke, agreement and shrink take milliseconds (the shrink policy, which spawns nothing,
  recovers in under 10 ms). Fail-all pays the launcher's teardown of the dead job, a whole
  new `mpirun` and `MPI_Init` on every rank, and every rank reloading its data.
- **Lost work costs both about the same here**: after respawn only the replacement redoes
  the iterations since the checkpoint (its collectives are served from the cache, so it
  replays faster than the original run) while the survivors wait; after fail-all every rank
  redoes them in parallel. With these short iterations (tens of ms) killing at 9 instead of 5
  (four more iterations to redo) hardly shows; with real iterations of seconds, both grow by
  the lost work, and the difference between them stays the fixed start-up cost.
- **What fail-all cannot show here**: a real cluster adds the scheduler (a resubmitted job
  waits in the queue), reading the input from a parallel file system instead of generating
  it, and writing the checkpoint file at every checkpoint (here a page-cache write of a few
  hundred bytes). All of these make fail-all slower still; none of them touches respawn,
  whose checkpoints stay in memory on the ranks.
- **shrink** is the fastest by far but changes the job: the dead rank's data is gone, so the
  answer differs (0/5 fingerprints match, as expected) and later iterations run on fewer
  ranks. Use it when the application can rebalance or tolerate the loss.
- Respawn gives the bit-identical answer of the failure-free run in every repetition
  (5/5 in every row), and so does fail-all (it restarts from the same model).
EOF
        if [[ " $METHODS " == *" spares "* ]]; then
            cat <<'EOF'
- **spares** start no process: ftrabit's part is the standby round (revoke, shrink and
  split of the standby communicator, one agreement) and the catch-up, milliseconds to tens
  of milliseconds. What remains is the spare's own work as a replacement (generating its
  points, replaying the iterations since the checkpoint), the same as a respawned
  replacement's; here it runs on 2 cores beside the survivors, which poll inside MPI while
  they wait for it (NP ranks and the other spare on 2 cores). With one rank per core, as on a
  cluster, nobody would compete with it.
EOF
        fi
    } >>"$md"
fi

say "wrote $md"
