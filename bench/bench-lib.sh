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

# bench_mpirun_init [OPTIONS...]: sets the array mpirun to our Open MPI's mpirun with our
# components, ranks oversubscribed, and OPTIONS; PMIx keeps quiet about components it
# cannot load.
bench_mpirun_init() {
    export PMIX_MCA_mca_base_component_show_load_errors=0
    mpirun=("${OMPI_PREFIX:-}/bin/mpirun" --allow-run-as-root --oversubscribe
            --mca mca_base_component_path "${OMPI_PREFIX:-}/lib/openmpi:$COMPONENT_DIR" "$@")
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

# Across simulated hosts (HOSTS of 2 or more; test/cluster/cluster.sh, as root):
# bench_hosts_up brings up a cluster of HOSTS hosts; bench_mpirun_cmd ARGS... sets the array
# bench_cmd to the script's "${mpirun[@]}" ARGS... across them (ranks spread evenly, btl/tcp
# over the cluster's data networks) or, with HOSTS 1, on this host; bench_hosts_down takes
# the cluster down (at the latest when the script exits); bench_where describes where the
# jobs ran, for a report.
bench_hosts_up() {
    local why
    [ "${HOSTS:-1}" -gt 1 ] || return 0
    # shellcheck source=test/cluster/cluster.sh
    . "$top/test/cluster/cluster.sh"
    why=$(cluster_unavailable) && die "the cluster cannot run here: $why"
    cluster_up "$HOSTS" >/dev/null || die "the cluster did not come up" # traps EXIT
    say "cluster $CLUSTER_ID: $HOSTS hosts"
}

bench_hosts_down() {
    [ -n "${CLUSTER_ID:-}" ] || return 0
    cluster_down >/dev/null 2>&1 || true
}

bench_mpirun_cmd() { # ARGS...: sets the array bench_cmd
    local cluster_cmd
    if [ "${HOSTS:-1}" -gt 1 ]; then
        cluster_mpirun_cmd "${mpirun[@]}" "$@" || return 1
        bench_cmd=("${cluster_cmd[@]}")
    else
        bench_cmd=("${mpirun[@]}" "$@")
    fi
}

bench_where() {
    if [ "${HOSTS:-1}" -gt 1 ]; then
        echo "**Across $HOSTS simulated hosts** (test/cluster/cluster.sh: network namespaces joined by
veth pairs, btl/tcp over the cluster's two data networks, the ranks spread evenly over the
hosts). A veth moves data by the same CPUs' copies, so this network is slower than memory
but not free of the copies the compared variants differ by; on real NICs the copies run
beside the wire."
    else
        echo "All ranks on this one host (btl/sm)."
    fi
}
