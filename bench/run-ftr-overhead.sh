#!/usr/bin/env bash
# ompi-resilience: what the FTR_* layer costs while nothing fails: FTR_Allreduce against
# MPI_Allreduce on the same in-place buffer, in the same job (bench/ftr_bench: paired
# trials, the order flipping every trial), 8 B to MAX_BYTES, for each rank count in NPS and
# each checkpoint interval in EVERYS (FTR_Checkpoint every that many FTR calls, untimed),
# plus the memory the result cache holds at the checkpoints. Not run by CI.
#
# Every round runs every (np, interval) once, so that machine noise and drift hit all of
# them alike; per size the tables give the median over the rounds of each run's median
# trial (and their ratio), and the median over the rounds of each run's median paired
# ratio (each trial's FTR time over the MPI time measured right next to it: the estimate
# least disturbed by other jobs on a shared machine).
#
# Writes, under OUT (default docs/bench):
#   ftr-overhead-np<N>-every<K>.dat  per size: medians, ratios, memory
#   ftr-overhead-np<N>.png           time per call and ratio, one line per interval
#   ftr-overhead.md                  the tables and how they were measured
# Raw output goes to RAW (default BUILD/bench-logs/ftr-overhead).
#
# Usage: bench/run-ftr-overhead.sh
# Environment (all optional):
#   BUILD (default _build), COMPONENT_DIR (default BUILD/stage/lib/openmpi)
#   NPS="2 4" EVERYS="10 100" ROUNDS=3 TRIALS=11 TRIAL_SECONDS=0.015 MAX_BYTES=16777216
#   FTR_MCA     extra mpirun arguments, e.g. "--mca coll_ftrabit_result_replicas 2"
#   QUIET_WAIT=20  before each run, wait up to this many seconds for a quiet machine
#   HOSTS=1     with 2 or more, every job runs across that many simulated hosts
#               (test/cluster/cluster.sh, as root; ranks spread evenly, btl/tcp over the
#               cluster's data networks), where the network, not memory, carries the data
#   OUT, RAW; MEASURE=0 only redraws tables and plots from RAW
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
NPS=${NPS:-2 4}
EVERYS=${EVERYS:-10 100}
ROUNDS=${ROUNDS:-3}
TRIALS=${TRIALS:-11}
TRIAL_SECONDS=${TRIAL_SECONDS:-0.015}
MAX_BYTES=${MAX_BYTES:-16777216}
FTR_MCA=${FTR_MCA:-}
QUIET_WAIT=${QUIET_WAIT:-20}
HOSTS=${HOSTS:-1}
MEASURE=${MEASURE:-1}
OUT=${OUT:-$top/docs/bench}
RAW=${RAW:-$BUILD/bench-logs/ftr-overhead}

bench_name=run-ftr-overhead
. "$top/bench/bench-lib.sh"

bench_require_ompi
make -C "$BUILD" bench/ftr_bench >&2
ftr_bench=$BUILD/bench/ftr_bench
bench_require_gnuplot

export PMIX_MCA_mca_base_component_show_load_errors=0
# shellcheck disable=SC2206 # FTR_MCA is a word list on purpose
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR" --with-ft ulfm
        $FTR_MCA)
mkdir -p "$OUT" "$RAW"
if [ "$MEASURE" = 1 ]; then bench_hosts_up; fi
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')
running() { awk '{ split($4, a, "/"); print a[1] - 1 }' /proc/loadavg; }

if [ "$MEASURE" = 1 ]; then
    rm -f "$RAW"/ovh-*.txt "$RAW"/ovh-*.err
    : >"$RAW/loads.txt"
    start=$(date +%s)
    for ((r = 1; r <= ROUNDS; r++)); do
        for np in $NPS; do
            for every in $EVERYS; do
                say "round $r/$ROUNDS np $np every $every ($(($(date +%s) - start)) s so far)"
                wait_quiet
                # load averages and other runnable processes when the run starts and ends
                before="$(cut -d' ' -f1-3 /proc/loadavg) $(running)"
                bench_mpirun_cmd -np "$np" "$ftr_bench" allreduce "$MAX_BYTES" "$TRIALS" \
                    "$TRIAL_SECONDS" "$every"
                timeout -k 5 1800 "${bench_cmd[@]}" </dev/null >"$RAW/ovh-np$np-e$every-r$r.txt" \
                    2>"$RAW/ovh-np$np-e$every-r$r.err" \
                    || { tail -n 20 "$RAW/ovh-np$np-e$every-r$r.err" >&2; die "ftr_bench np $np every $every failed"; }
                echo "$np $every $r $before $(cut -d' ' -f1-3 /proc/loadavg) $(running)" >>"$RAW/loads.txt"
            done
        done
    done
    cat >"$RAW/meta.sh" <<EOF
elapsed=$(($(date +%s) - start))
noisy=$noisy_starts
runs=$runs
date_utc="$(date -u '+%Y-%m-%d %H:%M')"
commit="$(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet HEAD -- ompi bench || echo ' (with uncommitted changes)')"
NPS="$NPS"
EVERYS="$EVERYS"
ROUNDS=$ROUNDS
TRIALS=$TRIALS
TRIAL_SECONDS=$TRIAL_SECONDS
FTR_MCA="$FTR_MCA"
QUIET_WAIT=$QUIET_WAIT
HOSTS=$HOSTS
EOF
fi

# shellcheck disable=SC1091
. "$RAW/meta.sh"
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'

# Per (np, every): per size, medians over the rounds.
for np in $NPS; do
    for every in $EVERYS; do
        awk -v np="$np" -v every="$every" '
            function med(a, n,   i, j, t) {
                for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
            /^#/ { next }
            NF >= 14 { b = $1; if (!(b in seen)) { seen[b] = 1; sizes[++ns] = b }
                       k = ++cnt[b]; m[b, k] = $2; f[b, k] = $3; p[b, k] = $7; cu[b, k] = $11; cp[b, k] = $13; if ($14 >= 0) ck[b, ++nck[b]] = $14
                       fl[b, k] = NF >= 15 ? $15 : -1 # FTR / floor, paired (-1: an older ftr_bench)
                       if (!(b in lo) || $5 < lo[b]) lo[b] = $5; if (!(b in hi) || $6 > hi[b]) hi[b] = $6
                       if ($8 > kept[b]) kept[b] = $8; if ($9 > hk[b]) hk[b] = $9; if ($10 > hb[b]) hb[b] = $10 }
            END {
                printf "# FTR_Allreduce vs MPI_Allreduce (in place, MPI_SUM of MPI_DOUBLE), %d ranks, checkpoint every %d calls\n", np, every
                printf "# bytes mpi_us ftr_us ratio_of_medians median_paired_ratio ratio_min ratio_max runs kept held_kept_bytes held_between_bytes copy_us copy_ratio_of_medians copy_median_paired_ratio checkpoint_us floor_median_paired_ratio\n"
                for (s = 1; s <= ns; s++) { b = sizes[s]; n = cnt[b]
                    for (k = 1; k <= n; k++) { mm[k] = m[b, k]; ff[k] = f[b, k]; pp[k] = p[b, k]; uu[k] = cu[b, k]; cc[k] = cp[b, k]; ll[k] = fl[b, k] }
                    for (k = 1; k <= nck[b]; k++) kk[k] = ck[b, k]
                    a = med(mm, n); c = med(ff, n); q = med(pp, n); u = med(uu, n); r = med(cc, n); l = med(ll, n)
                    z = nck[b] ? med(kk, nck[b]) : -1 # -1: no checkpoint inside a trial of this size
                    printf "%d %.3f %.3f %.4f %.4f %.4f %.4f %d %d %d %d %.3f %.4f %.4f %.3f %.4f\n", b, a, c, c / a, q, lo[b], hi[b], n, kept[b], hk[b], hb[b], u, u / a, r, z, l }
            }' "$RAW"/ovh-np$np-e$every-r*.txt >"$OUT/ftr-overhead-np$np-every$every.dat"
    done
done

summary() { # summary DAT COLUMN: median over sizes, worst size and value, sizes above 1.20
    awk -v col="$2" "$human_awk"'
        !/^#/ { v[++n] = $col; b[n] = $1; if ($col > w) { w = $col; wb = $1 } if ($col > 1.20) over++ }
        END { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
              m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
              printf "%.2f | %.2f (%s) | %d", m, w, human(wb), over }' "$1"
}

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
# other runnable processes when a run started (loads.txt: column 7), the most over the runs
others=$(awk 'BEGIN { m = 0 } $7 > m { m = $7 } END { print m }' "$RAW/loads.txt")
if [ "$others" -le 1 ]; then
    machine_note="**The machine ran nothing else** (at most $others other runnable process when a run
started; load averages per run below); np 4 oversubscribes the $(nproc) cores."
else
    machine_note="**The machine was shared**: up to $others other runnable processes when a run
started (load averages per run below); np 4 also oversubscribes the $(nproc) cores."
fi
where=$(bench_where)
md=$OUT/ftr-overhead.md
{
    cat <<EOF
# Failure-free cost of the FTR_* layer (FTR_Allreduce against MPI_Allreduce)

Generated by \`bench/run-ftr-overhead.sh\` on $date_utc UTC at commit $commit:
$(nproc) cores ($cpu), $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo),
Open MPI $ompi_version \`--with-ft ulfm\`${FTR_MCA:+, \`$FTR_MCA\`}. Not run by CI.

$where

\`bench/ftr_bench allreduce\`, one job per (ranks, checkpoint interval): the same in-place sum of
MPI_DOUBLEs on the same buffer, as \`MPI_Allreduce(MPI_IN_PLACE, ...)\` and as \`FTR_Allreduce\`
(a sequence number, the result kept until the next checkpoint: what recovery replays).
coll/ftrabit serves both calls, so the difference is the FTR_* layer alone. $TRIALS paired trials of
about $TRIAL_SECONDS s per size, the order flipping every trial; \`FTR_Checkpoint\` every K FTR
calls, outside the clock (an agreement, whose cost an application amortises over its
interval: its own table below). The other variants stop their clocks at the same points and
run the same agreement (\`MPIX_Comm_agree\`), because an agreement slows the calls right
after it: on 2 ranks at 8 B the next few calls took 0.15 us more in all, \`MPI_Allreduce\`'s
as much as \`FTR_Allreduce\`'s (measured 2026-11-26 at c83e94d). Charged to
\`FTR_Allreduce\` alone, as an earlier version of this bench did, that aftermath made
8 B-2 KiB look 1.07-1.16x at K = 10. Before
the trials of each size, one untimed interval of K calls: the first interval with a new size
fills the result pool (its pages fault in once, as the application's own buffers do); the
trials measure the steady state, every later interval. $ROUNDS rounds, each running every
configuration once ($runs runs in $elapsed s; $noisy of them started without $QUIET_WAIT s of quiet).

$machine_note Single trials vary by up to 2x and more; what is comparable is FTR against MPI
measured side by side. "paired" is the median over the rounds of each run's median paired ratio (each trial's
FTR time over the MPI time measured right next to it), the estimate least disturbed by other
jobs; "of medians" divides the medians of the two columns.

What FTR_Allreduce does per call (ftrabit_api.c, \`ftrabit_collective\`): for a contiguous
datatype, MPI reduces from the user's buffer, which it only reads (so a retry after a
failure starts from the same input, with no copy of it), straight into a buffer borrowed
from the result pool (ftrabit_pool.c), and the result is copied once into the user's buffer
(from 2 MiB up to 8 MiB MPI reduces into one reused, cache-hot scratch buffer instead, and
one pass over it writes the user's buffer and streams the pool buffer with non-temporal
stores: docs/bench/ftr-floor2-2026-11-29.md); on a rank that keeps the result (every rank by default, \`coll_ftrabit_result_replicas\` of
them otherwise) that buffer becomes the cached result, elsewhere it goes back to the pool at
once. A checkpoint hands the interval's buffers back to the pool and the next interval reuses
them: the steady state allocates nothing and touches no fresh page. Before this, every kept
result was fresh memory and paid a page fault per 4 KiB (about 20 us each on this VM): 5.9x
at 64 KiB, 18-21x from 512 KiB (issue 18).

## Summary

FTR / MPI:

| ranks | checkpoint every | median ratio over sizes (paired) | worst size (paired) | sizes above 1.20 | median ratio over sizes (of medians) | worst size (of medians) | sizes above 1.20 |
| ---: | ---: | ---: | :--- | ---: | ---: | :--- | ---: |
EOF
    for np in $NPS; do
        for every in $EVERYS; do
            dat=$OUT/ftr-overhead-np$np-every$every.dat
            echo "| $np | $every | $(summary "$dat" 5) | $(summary "$dat" 4) |"
        done
    done
    cat <<EOF

The floor, (MPI + one memcpy of the result) / MPI, measured in the same runs: what any way of
keeping results adds at the least (the result has to be in a second place):

| ranks | runs with checkpoint every | median ratio over sizes (paired) | worst size (paired) | sizes above 1.20 |
| ---: | ---: | ---: | :--- | ---: |
EOF
    for np in $NPS; do
        for every in $EVERYS; do
            echo "| $np | $every | $(summary "$OUT/ftr-overhead-np$np-every$every.dat" 14) |"
        done
    done
    cat <<'EOF'

What a checkpoint costs (`FTR_Checkpoint` of an 8-byte global and an 8-byte local state, the
agreement included, the slowest rank's mean). It grows with the message size: each rank's
clock stops when its last call returns, and the agreement then waits for the ranks still
finishing theirs, a spread that grows with the message (the other variants' agreement
absorbs the same spread). At 8 B per checkpoint, and per FTR call when taken every K calls against one
8-byte `MPI_Allreduce`; at the largest size where a trial made K calls (larger sizes: fewer
calls per trial, no checkpoint timed):

| ranks | checkpoint every | µs per checkpoint at 8 B | per call at 8 B, µs | against an 8 B MPI_Allreduce | µs per checkpoint, largest size timed |
| ---: | ---: | ---: | ---: | ---: | :--- |
EOF
    for np in $NPS; do
        for every in $EVERYS; do
            awk -v np="$np" -v every="$every" "$human_awk"'!/^#/ && ++n == 1 { small = $2; c8 = $15 }
                !/^#/ && $15 >= 0 { big = $1; cbig = $15 }
                END { printf "| %s | %s | %.1f | %.2f | %.2fx | %.1f (%s) |\n", np, every, c8, c8 / every, c8 / every / small, cbig, human(big) }' \
                "$OUT/ftr-overhead-np$np-every$every.dat"
        done
    done
    cat <<'EOF'

How to read this:

- **Small messages** (up to a few KiB): what the FTR layer adds per call is bookkeeping (a
  sequence number, a pool buffer lent and kept, one small memcpy), too little to show next to
  a 2-rank `MPI_Allreduce` of 0.3-0.5 us: measured apart on 2 ranks at 8 B (2026-11-26, at
  c83e94d, best of 7 trials of 100,000 calls, the same agreement in both, two runs each
  with a checkpoint every 10, 100 and 1000 calls), `FTR_Allreduce` took 0-14 ns more than
  `MPI_Allreduce`'s 334-368 ns (1.00-1.04x). What small
  messages pay is the checkpoint itself (the table above): an agreement of a few
  microseconds, which every 10 calls of 8 B costs more than the calls. Checkpoint once per
  iteration of the application, after its collectives, not after each one.
- **Large messages**: a kept result must be in a second place, so every call writes the
  result once more than `MPI_Allreduce` alone (and the input must survive a failed attempt:
  FTR reduces out of the user's buffer into a pool buffer and copies the result back, one
  copy in all). On one node, where `MPI_Allreduce` itself is a few memory copies, one more
  copy of the vector is a large share of its time: the "MPI + memcpy" column, timed next
  to the others, shows that floor. FTR stays above it because each kept result has its own
  buffer (the pool cycles through one per call of the interval, colder in the caches than
  the single buffer of the floor) and because an out-of-place collective moves more
  memory than an in-place one. Measured apart on 2 ranks (2026-11-26, at c83e94d, a
  program timing `MPI_Allreduce` of coll/ftrabit four ways, best of 7 trials of 30 calls),
  at 1 / 4 / 8 MiB against the in-place call: a memcpy of the result into one other buffer
  1.53x / 1.35x / 1.44x (the floor column's way); into one of 10 buffers in turn, as a cache
  of 10 results needs, 1.53x / 1.47x / 1.68x; reducing out of place into one of 10 buffers
  in turn and copying the result back, FTR's way, 1.58x / 1.81x / 1.96x. The cheaper
  in-place way (reduce in the user's buffer, then copy into the kept one) loses the input a
  retry after a failure starts from. Also tried and not kept: the upper rank of the first
  exchange combining straight into the kept buffer with Open MPI's three-buffer reduction
  kernels instead of first copying its half there (no copy, one pass): 2.17-2.38x at 8 MiB
  against 1.89-1.99x, alternating builds in the same minutes: the copy overlaps the
  transfer, the three-buffer pass writes cold memory after it. With 4 ranks on 2 cores every rank's copy is serialised
  with the others' work, so the ratios are higher there than on a machine with a core per
  rank. Across nodes the network, not the memory, bounds `MPI_Allreduce`, and the copy is
  a smaller share. Tried and measured slower (2026-11-26, np 2, checkpoint every 10):
  reducing into one reused, cache-hot buffer, copying from it to the user's buffer and
  streaming it into the kept buffer with non-temporal stores: 1.81-2.04x MPI from 1 MiB,
  against 1.57-1.91x for the way described above, in the same minutes. Every kept result
  is memory written once more, and from about 1 MiB the writes go to DRAM either way.
  What the gap to the floor is made of, measured apart on 2 ranks (2026-11-28, at 7b7b6db,
  best of 11 trials, 100 buffers in turn as a cache of 100 results needs), against the
  in-place call at 256 KiB / 1 MiB / 8 MiB: FTR's way 1.41-1.47x / 1.88-1.90x / 1.86-1.98x;
  in place, then a memcpy into the kept buffer 1.38x / 1.55-1.74x / 1.68x; in place, then
  non-temporal stores into the kept buffer 1.26x / 1.49-1.52x / 1.39-1.46x, as low as the
  floor from 1 MiB (1.42-1.48x / 1.38-1.52x in the same runs). Most of the gap is the
  kept buffer's lines read from DRAM before they are written (a cold buffer written with
  ordinary stores); FTR's reduction writes it through Open MPI's kernels and btl/sm's
  copies, which use ordinary stores. Reducing in place
  would lose the input a retry starts from, so it needs another recovery: one that replays
  a call nobody completed from kept inputs or from the result blocks the survivors hold,
  not from each rank's buffer. Not built.
- `coll_ftrabit_result_replicas` makes only that many ranks keep each result; the others
  reduce into one reused scratch buffer (hot in the caches) and copy nothing into the cache.
EOF
    cat <<EOF

## Memory held by the result cache

Per size, from \`FTR_Cache_memory\` (the largest over the ranks): results kept right before a
checkpoint, every byte held then (result buffers, rounded up to the pool's size classes: at
most a quarter more, nothing for powers of two; the index), per kept result, and what stays
held right after the checkpoint, between two intervals (the buffers the next interval
reuses; a buffer no result used for a whole interval is freed at the next checkpoint,
\`coll_ftrabit_result_pool_mib\` bounds it). Every rank keeps every result here
(\`coll_ftrabit_result_replicas\` 0, the default).

EOF
    for np in $NPS; do
        for every in $EVERYS; do
            printf '\n### %s ranks, checkpoint every %s calls: memory\n\n' "$np" "$every"
            printf '| size | results kept | bytes held with them | per kept result | held between checkpoints |\n| ---: | ---: | ---: | ---: | ---: |\n'
            awk "$human_awk"'!/^#/ { printf "| %s | %d | %d | %.0f | %d |\n", human($1), $9, $10, $9 ? $10 / $9 : 0, $11 }' \
                "$OUT/ftr-overhead-np$np-every$every.dat"
        done
    done
    printf '\n## Time per call\n'
    for np in $NPS; do
        printf '\n![FTR_Allreduce vs MPI_Allreduce on %s ranks](ftr-overhead-np%s.png)\n' "$np" "$np"
        for every in $EVERYS; do
            printf '\n### %s ranks, checkpoint every %s calls\n\n' "$np" "$every"
            printf '| size | MPI_Allreduce µs | FTR_Allreduce µs | ratio of medians | ratio, paired | paired-trial range | MPI + memcpy µs | floor, paired | FTR / floor, paired | FTR_Checkpoint µs |\n| ---: | ---: | ---: | ---: | ---: | :---: | ---: | ---: | ---: | ---: |\n'
            awk "$human_awk"'!/^#/ { printf "| %s | %.2f | %.2f | %.2f | **%.2f** | %.2f – %.2f | %.2f | %.2f | %s | %s |\n", human($1), $2, $3, $4, $5, $6, $7, $12, $14, (NF >= 16 && $16 > 0) ? sprintf("**%.2f**", $16) : "-", ($15 < 0) ? "-" : sprintf("%.1f", $15) }' \
                "$OUT/ftr-overhead-np$np-every$every.dat"
        done
    done
    printf '\n## Load during the runs\n\nload averages (1, 5, 15 min) and other runnable processes at the start and at the end of each run:\n\n'
    printf '| ranks | every | round | start: load | runnable | end: load | runnable |\n| ---: | ---: | ---: | :--- | ---: | :--- | ---: |\n'
    awk '{ printf "| %s | %s | %s | %s %s %s | %s | %s %s %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$RAW/loads.txt"
} >"$md"

for np in $NPS; do
    first=$(set -- $EVERYS; echo "$OUT/ftr-overhead-np$np-every$1.dat")
    tics=$(awk "$human_awk"'!/^#/ && int(log($1) / log(2) + 0.5) % 3 == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), human($1), $1 }' "$first")
    plots_t="" plots_r="" colors=("#d62728" "#2ca02c" "#9467bd" "#ff7f0e")
    i=0
    for every in $EVERYS; do
        dat=$OUT/ftr-overhead-np$np-every$every.dat
        c=${colors[$((i % 4))]}
        [ $i = 0 ] && plots_t="\"$dat\" using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb \"#1f77b4\" title \"MPI_Allreduce (run with every $every)\", "
        plots_t="$plots_t\"$dat\" using 1:3 with linespoints lw 2 pt 5 ps 0.8 lc rgb \"$c\" title \"FTR_Allreduce, checkpoint every $every\", "
        plots_r="$plots_r\"$dat\" using 1:5 with linespoints lw 2 pt 7 ps 0.8 lc rgb \"$c\" title \"FTR/MPI paired, every $every\", \"$dat\" using 1:14 with lines lw 1 dt 2 lc rgb \"$c\" title \"(MPI + memcpy)/MPI, paired, every $every\", "
        i=$((i + 1))
    done
    gnuplot <<EOF
set terminal pngcairo noenhanced size 1000,900 font "sans,12"
set output "$OUT/ftr-overhead-np$np.png"
set multiplot layout 2,1 title "FTR_Allreduce vs MPI_Allreduce (both served by coll/ftrabit), $np ranks$([ "${HOSTS:-1}" -gt 1 ] && echo " across $HOSTS hosts,") on $(nproc) shared cores\nmedians of $ROUNDS rounds x $TRIALS paired trials; Open MPI $ompi_version --with-ft ulfm; $commit"
set logscale x 2
set xtics ($tics)
set grid xtics ytics mytics
set key top left box opaque
set size 1,0.58
set origin 0,0.38
set logscale y 10
set format y "%g"
set ylabel "time per call (µs, log scale)"
set bmargin 3
plot ${plots_t%, }
set size 1,0.38
set origin 0,0
unset logscale y
set yrange [0.5:3]
set ylabel "FTR / MPI"
set xlabel "message size (bytes of MPI_DOUBLE)"
set tmargin 1
plot ${plots_r%, }, 1.0 with lines lw 1 lc rgb "black" title "equal", 1.2 with lines lw 1 dt 3 lc rgb "gray" title "1.20"
unset multiplot
EOF
done
say "wrote $md"
