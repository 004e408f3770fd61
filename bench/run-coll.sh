#!/usr/bin/env bash
# ompi-resilience: coll/ftrabit against coll/tuned, MPI_Allreduce and MPI_Bcast,
# 8 B to 16 MiB, on 2 and 4 ranks. Not run by CI: timings need a quiet machine and minutes.
#
# For each rank count and collective, the same binary (bench/coll_bench) is run several
# rounds, alternately with ftrabit (selected by its priority, as users get it) and without
# it (--mca coll ^ftrabit, so tuned serves the calls). Interleaving the two makes machine
# noise and drift hit both alike; the order flips every round so neither always goes
# first. Per size, the reported time is the median over the rounds of each run's median
# trial.
#
# Writes, under OUT (default docs/bench):
#   coll-<op>-np<N>.dat   per size: bytes, medians, spreads and the ratio ftrabit/tuned
#   coll-<op>-np<N>.png   time against size (log-log) for both, and the ratio
#   coll.md               the tables, each with its median ratio and its worst size
# Raw output of every run goes to RAW (default BUILD/bench-logs).
#
# Usage: bench/run-coll.sh
# Environment (all optional):
#   BUILD          configured build tree, `make install`ed to BUILD/stage (default _build)
#   COMPONENT_DIR  where mca_coll_ftrabit.so is (default BUILD/stage/lib/openmpi)
#   ROUNDS=5 TRIALS=5 TRIAL_SECONDS=0.06 MAX_BYTES=16777216 NPS="2 4" OPS="allreduce bcast"
#   MPIRUN_ARGS    given to every mpirun (default "--with-ft ulfm", as users run it)
#   FTRABIT_MCA    given to the ftrabit runs only, e.g. "--mca coll_ftrabit_bcast_algorithm
#                  pipeline", to try other algorithms or thresholds (use another OUT then)
#   OUT, RAW       output and raw-log directories
#   QUIET_WAIT=120 before each run, wait up to this many seconds for the machine to be
#                  quiet (no other runnable process for 3 s); 0 does not wait
#   HOSTS=1        with 2 or more, every job runs across that many simulated hosts
#                  (test/cluster/cluster.sh, as root; ranks spread evenly, btl/tcp)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
ROUNDS=${ROUNDS:-5}
TRIALS=${TRIALS:-5}
TRIAL_SECONDS=${TRIAL_SECONDS:-0.06}
MAX_BYTES=${MAX_BYTES:-16777216}
NPS=${NPS:-2 4}
OPS=${OPS:-allreduce bcast}
MPIRUN_ARGS=${MPIRUN_ARGS---with-ft ulfm}
FTRABIT_MCA=${FTRABIT_MCA:-}
QUIET_WAIT=${QUIET_WAIT:-120}
HOSTS=${HOSTS:-1}
OUT=${OUT:-$top/docs/bench}
RAW=${RAW:-$BUILD/bench-logs}

bench_name=run-coll
. "$top/bench/bench-lib.sh"

bench_require_ompi

# make does nothing when the benchmark is up to date.
make -C "$BUILD" bench/coll_bench >&2
bench=$BUILD/bench/coll_bench

bench_require_gnuplot

# PMIx reads the component path too and complains about every non-PMIx file in it.
export PMIX_MCA_mca_base_component_show_load_errors=0
# shellcheck disable=SC2206 # MPIRUN_ARGS and FTRABIT_MCA are word lists on purpose
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe $MPIRUN_ARGS
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR")
# shellcheck disable=SC2206
impl_args_ftrabit=($FTRABIT_MCA)
impl_args_tuned=(--mca coll ^ftrabit)
check_args=()

mkdir -p "$OUT" "$RAW"
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')

# run IMPL NP LOG ARGS...: coll_bench under mpirun with IMPL's arguments; dies on failure.
run() {
    local impl=$1 np=$2 log=$3
    shift 3
    local -n extra=impl_args_$impl
    local bench_cmd
    bench_mpirun_cmd "${extra[@]}" "${check_args[@]}" -np "$np" "$bench" "$@"
    if ! "${bench_cmd[@]}" </dev/null >"$log" 2>"$log.err"; then
        tail -n 20 "$log.err" >&2
        die "$impl on $np ranks failed: $bench $*"
    fi
}

bench_hosts_up

# The comparison means something only if ftrabit serves the calls in one run and not in
# the other: check with its selection message.
say "checking which component serves the calls"
check_args=(--mca coll_ftrabit_verbose 1)
run ftrabit 2 "$RAW/check-ftrabit.txt" allreduce 8 1 0.001
run tuned 2 "$RAW/check-tuned.txt" allreduce 8 1 0.001
check_args=()
grep -q 'coll:ftrabit: serving' "$RAW/check-ftrabit.txt.err" \
    || die "ftrabit is not selected (see $RAW/check-ftrabit.txt.err)"
! grep -q 'coll:ftrabit: serving' "$RAW/check-tuned.txt.err" \
    || die "ftrabit is selected despite --mca coll ^ftrabit"

# Other work on the machine shows in the numbers; the load averages go into coll.md.
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
for np in $NPS; do
    for op in $OPS; do
        for ((r = 1; r <= ROUNDS; r++)); do
            order="ftrabit tuned"
            ((r % 2)) || order="tuned ftrabit"
            for impl in $order; do
                say "np $np $op round $r/$ROUNDS: $impl ($(($(date +%s) - start)) s so far)"
                wait_quiet
                run "$impl" "$np" "$RAW/$op-np$np-$impl-r$r.txt" "$op" "$MAX_BYTES" "$TRIALS" \
                    "$TRIAL_SECONDS"
            done
        done
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
bench_hosts_down
say "measured in $elapsed s"

# median over rounds, per size. mawk has no sort, hence the insertion sort.
# Output columns: bytes tuned ftrabit ratio tuned_min tuned_max ftrabit_min ftrabit_max
#                 ratio_min ratio_max (ratio_* over the rounds' paired ratios)
aggregate() {
    local op=$1 np=$2
    awk -v rounds="$ROUNDS" -v op="$op" -v np="$np" '
        function med(a, n,   i, j, t, s) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        FNR == 1 { base = FILENAME; sub(/.*\//, "", base); split(base, parts, "-"); impl = parts[3]; rnd = parts[4]; sub(/r/, "", rnd); sub(/\.txt$/, "", rnd) }
        /^#/ { next }
        NF == 2 {
            if (!($1 in seen)) { seen[$1] = 1; sizes[++nsizes] = $1 }
            t[impl, $1, rnd + 0] = $2
        }
        END {
            printf "# %s on %d ranks, ftrabit vs tuned, %d interleaved rounds; times in microseconds\n", op, np, rounds
            printf "# bytes tuned_us ftrabit_us ratio tuned_min tuned_max ftrabit_min ftrabit_max ratio_min ratio_max\n"
            for (s = 1; s <= nsizes; s++) {
                b = sizes[s]; n = 0
                for (k = 1; k <= rounds; k++) if (("tuned", b, k) in t && ("ftrabit", b, k) in t) {
                    n++; tv[n] = t["tuned", b, k]; fv[n] = t["ftrabit", b, k]; rv[n] = fv[n] / tv[n]
                }
                if (n == 0) continue
                tmin = tmax = tv[1]; fmin = fmax = fv[1]; rmin = rmax = rv[1]
                for (k = 2; k <= n; k++) {
                    if (tv[k] < tmin) tmin = tv[k]; if (tv[k] > tmax) tmax = tv[k]
                    if (fv[k] < fmin) fmin = fv[k]; if (fv[k] > fmax) fmax = fv[k]
                    if (rv[k] < rmin) rmin = rv[k]; if (rv[k] > rmax) rmax = rv[k]
                }
                tm = med(tv, n); fm = med(fv, n)
                printf "%d %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", b, tm, fm, fm / tm, tmin, tmax, fmin, fmax, rmin, rmax
            }
        }' "$RAW/$op-np$np-"{tuned,ftrabit}-r*.txt
}

# Human-readable size: 8 B, 16 KiB, 4 MiB.
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'

opname() { [ "$1" = allreduce ] && echo "MPI_Allreduce (MPI_DOUBLE, MPI_SUM)" || echo "MPI_Bcast (MPI_DOUBLE, root 0)"; }

plot() {
    local op=$1 np=$2 dat=$3 png=$4 tics
    # x tics every factor 8, labelled in B/KiB/MiB rather than 1e+06.
    tics=$(awk "$human_awk"'
        !/^#/ && int(log($1) / log(2) + 0.5) % 3 == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), human($1), $1 }' "$dat")
    gnuplot <<EOF
set terminal pngcairo noenhanced size 1000,900 font "sans,12"
set output "$png"
set multiplot layout 2,1 title "$(opname "$op"), $np ranks$([ "$HOSTS" -gt 1 ] && echo " across $HOSTS hosts,") on $(nproc) cores: ftrabit vs tuned\nmedian of $ROUNDS interleaved rounds x median of $TRIALS trials; Open MPI $ompi_version, mpirun $MPIRUN_ARGS"
set logscale x 2
set xtics ($tics)
set grid xtics ytics mytics
set key top left box opaque

set size 1,0.58
set origin 0,0.38
set logscale y 10
set format y "%g"
set ylabel "time per call (µs, log scale)"
unset xlabel
set bmargin 3
plot "$dat" using 1:2:5:6 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb "#1f77b4" title "tuned (--mca coll ^ftrabit)", \
     "$dat" using 1:3:7:8 with yerrorlines lw 2 pt 5 ps 0.8 lc rgb "#d62728" title "ftrabit $FTRABIT_MCA"

set size 1,0.38
set origin 0,0
unset logscale y
set format y "%.2f"
set ylabel "ftrabit / tuned"
set xlabel "message size (bytes of MPI_DOUBLE)"
set key top left
# Autoscaled, but always showing 0.8 to 1.2 so that noise does not look like a trend.
set yrange [*<0.8:1.2<*]
set tmargin 1
plot "$dat" using 1:9:10 with filledcurves fs transparent solid 0.25 noborder lc rgb "#d62728" title "range over rounds (paired)", \
     "$dat" using 1:4 with linespoints lw 2 pt 7 ps 0.8 lc rgb "#d62728" title "ratio of medians", \
     1.0 with lines dt 1 lw 1 lc rgb "black" title "equal", \
     1.05 with lines dt 2 lw 1.5 lc rgb "#2ca02c" title "target 1.05"
unset multiplot
EOF
}

md=$OUT/coll.md
summary=$(mktemp)
tables=$(mktemp)
trap 'rm -f "$summary" "$tables"' EXIT
for np in $NPS; do
    for op in $OPS; do
        dat=$OUT/coll-$op-np$np.dat
        png=$OUT/coll-$op-np$np.png
        aggregate "$op" "$np" >"$dat"
        plot "$op" "$np" "$dat" "$png"
        # Median ratio over sizes, worst size, sizes over the target.
        awk -v op="$op" -v np="$np" "$human_awk"'
            !/^#/ { n++; r[n] = $4; if (n == 1 || $4 > worst) { worst = $4; wb = $1 }
                    if ($4 > 1.05) over = over (over ? ", " : "") human($1) }
            END {
                for (i = 2; i <= n; i++) { t = r[i]; for (j = i - 1; j >= 1 && r[j] > t; j--) r[j + 1] = r[j]; r[j + 1] = t }
                m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
                printf "| %s | %d | %.3f | %s | %.3f | %s |\n", op, np, m, human(wb), worst, over ? over : "none"
            }' "$dat" >>"$summary"
        {
            printf '\n## %s, %d ranks\n\n' "$(opname "$op")" "$np"
            printf '![%s on %d ranks](coll-%s-np%d.png)\n\n' "$op" "$np" "$op" "$np"
            printf '| size | bytes | tuned µs | ftrabit µs | ratio ftrabit/tuned | ratio range over rounds |\n'
            printf '| ---: | ---: | ---: | ---: | ---: | :---: |\n'
            awk "$human_awk"'
                !/^#/ { ratio = $4 > 1.05 ? sprintf("**%.3f**", $4) : sprintf("%.3f", $4)
                        printf "| %s | %d | %.2f | %.2f | %s | %.2f – %.2f |\n", human($1), $1, $2, $3, ratio, $9, $10 }' "$dat"
            tail -n 1 "$summary" | awk -F' [|] ' '{ printf "\nMedian ratio over sizes: **%s**; worst size: %s (ratio %s).\n", $3, $4, $5 }'
        } >>"$tables"
    done
done

{
    cat <<EOF
# coll/ftrabit vs coll/tuned: MPI_Allreduce and MPI_Bcast

Generated by \`bench/run-coll.sh\` on $(date -u +%Y-%m-%d) at commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown) ($(nproc) cores:
$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); $(uname -r)).
Not run by CI. Open MPI $ompi_version,
\`mpirun $MPIRUN_ARGS --oversubscribe\`. $(if [ "$HOSTS" -gt 1 ]; then bench_where; else echo "All ranks on one node, so 4 ranks share $(nproc) cores."; fi)

Method: for each rank count and collective, \`bench/coll_bench\` ran $ROUNDS rounds,
alternately with ftrabit (selected by its priority${FTRABIT_MCA:+, with \`$FTRABIT_MCA\`}) and with
\`--mca coll ^ftrabit\` (coll/tuned serves the calls), flipping the order every round. Each run
times every size in $TRIALS trials of about $TRIAL_SECONDS s after a calibrating warmup; a
trial's time is the slowest rank's mean time per call, a run's time is its median trial,
and the tables give the median over the rounds. The ratio is ftrabit's median over tuned's;
the range is the lowest and highest ratio of the two runs of one round. Target: median
ratio over sizes at most 1.05. Ratios above 1.05 are in bold. The measurement took
$elapsed s; load averages (1, 5, 15 min) were $load_start before it and $load_end after.
Before each run the script waited up to $QUIET_WAIT s for no other process to be runnable;
$noisy_starts of the $((2 * ROUNDS * $(wc -w <<<"$NPS") * $(wc -w <<<"$OPS"))) runs started without that quiet.

| collective | ranks | median ratio | worst size | worst ratio | sizes above 1.05 |
| --- | ---: | ---: | ---: | ---: | --- |
EOF
    cat "$summary"
    cat "$tables"
} >"$md"
say "wrote $md and $(ls "$OUT"/coll-*.png | wc -l) plots in $OUT"
cat "$summary"
