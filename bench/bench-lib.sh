# Shared by the bench/run-*.sh scripts (sourced, after they set `bench_name`, BUILD,
# COMPONENT_DIR and QUIET_WAIT).

say() { printf '[%s] %s\n' "$bench_name" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$bench_name" "$*" >&2; exit 1; }

# The cached ULFM Open MPI (built on first use) and our installed coll component.
bench_require_ompi() {
    if [ -z "${OMPI_PREFIX:-}" ]; then
        eval "$("$top/scripts/ompi-bootstrap.sh" --print-env)"
    fi
    [ -x "$OMPI_PREFIX/bin/mpirun" ] || die "no mpirun under OMPI_PREFIX=$OMPI_PREFIX"
    [ -f "$COMPONENT_DIR/mca_coll_ftrabit.so" ] \
        || die "no mca_coll_ftrabit.so in $COMPONENT_DIR: run 'make && make install' in $BUILD"
}

# The wall clock in seconds, as the processes' timelines print it.
now() { date +%s.%N; }

# median min max n of the numbers on stdin (one per line); "- - - 0" if none
stats() {
    sort -g | awk '{ v[++n] = $1 } END {
        if (!n) { print "- - - 0"; exit }
        m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        printf "%.3f %.3f %.3f %d\n", m, v[1], v[n], n }'
}

# bench_seconds_plot PNG SIZE TITLE YMIN: the start of a gnuplot script for a bar chart of
# seconds on a log axis (the recovery plots); the caller appends its own xtics and plot.
bench_seconds_plot() {
    cat <<EOF
set terminal pngcairo noenhanced size $2 font "sans,12"
set output "$1"
set title "$3"
set style fill solid 0.8 border -1
set ylabel "seconds"
set logscale y 10
set yrange [$4:50]
set format y "%g"
set grid ytics mytics
EOF
}

bench_require_gnuplot() {
    command -v gnuplot >/dev/null && return 0
    say "installing gnuplot"
    apt-get install -y gnuplot-nox >&2 || { apt-get update >&2 && apt-get install -y gnuplot-nox >&2; }
}

# On a shared machine other jobs compete for the cores and their noise lands in whichever
# run is going on. Before each run: wait until, 3 times in a row 1 s apart, no process
# other than the one reading /proc/loadavg is runnable, for at most QUIET_WAIT seconds.
# `runs` counts the calls, `noisy_starts` the runs that had to start anyway.
noisy_starts=0
runs=0
wait_quiet() {
    local waited=0 calm=0 running
    runs=$((runs + 1))
    ((QUIET_WAIT > 0)) || return 0
    while :; do
        running=$(awk '{ split($4, a, "/"); print a[1] }' /proc/loadavg)
        if ((running <= 1)); then calm=$((calm + 1)); else calm=0; fi
        ((calm < 3)) || return 0
        if ((waited >= QUIET_WAIT)); then
            noisy_starts=$((noisy_starts + 1))
            return 0
        fi
        sleep 1
        waited=$((waited + 1))
    done
}
