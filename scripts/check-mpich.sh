#!/usr/bin/env bash
# MPICH's conformance tests (test/mpi of Debian's mpich source package) run against our Open
# MPI twice per test, with Open MPI's own component and with ours, and compared:
#   pt2pt: pml/ob1 against pml/dr2;
#   coll:  coll/tuned (coll/ftrabit excluded) against coll/ftrabit (which serves
#          MPI_Allreduce and MPI_Bcast; every other collective stays with tuned).
# Writes one report per suite, a table test | np | reference | ours, to
# docs/mpich-SUITE.md (or into --out-dir), and exits non-zero if any test passes with
# the reference and not with ours.
#
# The test suite is fetched once with apt-get source, configured against our mpicc (C
# only) and built (the suites' directories and the two helper libraries they link, util and
# dtpools); the built tree is cached per user under
#   ${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}/mpich-tests-<version>/
# so a rerun goes straight to the tests.
#
# Usage: scripts/check-mpich.sh --component-dir DIR [--suite pt2pt|coll]... [--ompi PREFIX]
#            [--out-dir DIR] [--logs DIR] [--timeout SECONDS] [--only NAME] [--no-apt]
#   --component-dir DIR  where mca_pml_dr2.so and mca_coll_ftrabit.so are installed
#                        (BUILD/stage/lib/openmpi)
#   --suite S            pt2pt or coll; repeatable (default: both)
#   --ompi PREFIX        the Open MPI install (default: $OMPI_PREFIX, else the cached one)
#   --out-dir DIR        where the reports go (default: docs/ in this source tree)
#   --logs DIR           one log per run (default: mpich-logs in the current dir)
#   --timeout SECONDS    per run, unless the testlist gives a timeLimit (default 180, as
#                        MPICH's runtests; lines MPICH marks xfail= get --xfail-timeout)
#   --xfail-timeout S    per run of an xfail= line (default 60: the send-cancel tests hang)
#   --only NAME          run only tests whose name contains NAME; no report is written
#   --no-apt             never call apt-get (the suite must be cached already)
# `make check-mpich` in a build tree runs both suites with that tree's stage directory;
# `make mpich-pt2pt` the pt2pt suite alone.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}
component_dir="" ompi_prefix=${OMPI_PREFIX:-} out_dir="" logs="$PWD/mpich-logs"
timeout_s=180 xfail_timeout_s=60 only="" use_apt=1 suites=()
while [ $# -gt 0 ]; do
    case "$1" in
        --component-dir) component_dir=$2; shift 2 ;;
        --suite) suites+=("$2"); shift 2 ;;
        --ompi) ompi_prefix=$2; shift 2 ;;
        --out-dir) out_dir=$2; shift 2 ;;
        --logs) logs=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --xfail-timeout) xfail_timeout_s=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --no-apt) use_apt=0; shift ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        *) echo "check-mpich: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

say() { printf '[check-mpich] %s\n' "$*" >&2; }
die() { printf '[check-mpich] ERROR: %s\n' "$*" >&2; exit 1; }

[ ${#suites[@]} -gt 0 ] || suites=(pt2pt coll)
for s in "${suites[@]}"; do
    case "$s" in pt2pt|coll) ;; *) die "unknown suite '$s' (pt2pt or coll)" ;; esac
done
[ -n "$component_dir" ] || die "--component-dir is required (BUILD/stage/lib/openmpi; make check-mpich passes it)"
for so in mca_pml_dr2.so mca_coll_ftrabit.so; do
    [ -f "$component_dir/$so" ] || die "$component_dir has no $so: build and 'make install' first"
done
component_dir=$(cd "$component_dir" && pwd)
if [ -z "$ompi_prefix" ]; then
    eval "$("$src/scripts/ompi-bootstrap.sh" --print-env --no-apt)"
    ompi_prefix=$OMPI_PREFIX
fi
[ -x "$ompi_prefix/bin/mpicc" ] || die "$ompi_prefix/bin/mpicc not found: is $ompi_prefix an Open MPI install?"
[ -n "$out_dir" ] || out_dir="$src/docs"
ompi_version=$("$ompi_prefix/bin/ompi_info" --parsable | sed -n 's/^ompi:version:full://p')

# ---- 1. the test suite, configured and built against this Open MPI (cached) ------------
configure_opts=(
    --disable-fortran --disable-cxx --disable-romio --disable-spawn --disable-rma
    --disable-part --disable-perftest --disable-ft-tests --disable-collalgo-tests
    --disable-checkerrors --disable-dependency-tracking --disable-static --enable-threads=multiple
)
build_key=$( (printf '%s\n' "$ompi_prefix" "$ompi_version" "${configure_opts[@]}";
              cat "$ompi_prefix/include/mpi.h") | sha256sum | cut -c1-12)

find_cached() {
    local stamp
    for stamp in "$cache_root"/mpich-tests-*/build-"$build_key"/.configured; do
        if [ -e "$stamp" ]; then dirname "$stamp"; fi
    done | LC_ALL=C sort -V | tail -n 1
}

# shellcheck source=scripts/debian-src.sh
. "$src/scripts/debian-src.sh"

fetch_suite() {
    # Prints the directory holding test/mpi of the newly unpacked mpich source.
    local codename added work
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || die "cannot tell this machine's Debian release from /etc/os-release"
    if [ "$use_apt" = 1 ]; then
        [ "$(id -u)" = 0 ] || die "fetching the mpich source package needs root once (the result is cached per user)"
        # This machine's own release: the mpich apt would install here.
        added=$(ompires_add_deb_src "$codename") \
            || die "no Debian archive is configured in /etc/apt; cannot fetch the mpich source package"
        [ -z "$added" ] || say "added a deb-src entry for $codename (archive $added) to fetch mpich's source"
        say "apt-get update"
        apt-get update -qq >&2 || die "apt-get update failed; check the archive configured in /etc/apt"
        command -v dpkg-source >/dev/null || {
            say "installing dpkg-dev (for dpkg-source)"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q dpkg-dev >/dev/null 2>&1 \
                || die "could not install dpkg-dev"
        }
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/check-mpich.XXXXXX")
    say "downloading the mpich source package ($codename)"
    (cd "$work" && apt-get source --download-only mpich >"$work/apt-source.log" 2>&1) || {
        tail -n 5 "$work/apt-source.log" >&2
        rm -rf "$work"
        die "apt-get source mpich failed: is a deb-src entry for $codename configured? (this script adds one when run as root without --no-apt)"
    }
    local dsc
    dsc=$(ls "$work"/mpich_*.dsc | head -n 1)
    # dpkg-source applies Debian's patches (none touches test/mpi in 4.0.2, but it is the
    # package as Debian ships it).
    (cd "$work" && dpkg-source --no-check -x "$dsc" mpich-src >"$work/dpkg-source.log" 2>&1) \
        || { tail -n 5 "$work/dpkg-source.log" >&2; rm -rf "$work"; die "dpkg-source -x $dsc failed"; }
    [ -f "$work/mpich-src/test/mpi/configure" ] || { rm -rf "$work"; die "the mpich source has no test/mpi/configure"; }
    echo "$work"
}

build_dir=$(find_cached)
if [ -n "$build_dir" ]; then
    say "using the cached MPICH test suite in $build_dir"
else
    # An unpacked suite from an earlier run (another Open MPI) needs no download.
    top=$(for stamp in "$cache_root"/mpich-tests-*/src/.complete; do
              if [ -e "$stamp" ]; then dirname "$(dirname "$stamp")"; fi
          done | LC_ALL=C sort -V | tail -n 1)
    if [ -z "$top" ]; then
        work=$(fetch_suite)
        trap 'rm -rf "$work"' EXIT
        mpich_version=$(sed -n 's/^Version: //p' "$work"/mpich_*.dsc | head -n 1)
        upstream=${mpich_version%-*}; upstream=${upstream#*:}
        top="$cache_root/mpich-tests-$upstream"
        rm -rf "$top/src"
        mkdir -p "$top/src"
        cp -a "$work/mpich-src/test/mpi/." "$top/src/"
        echo "$mpich_version" > "$top/src/.debian-version"
        touch "$top/src/.complete"
        rm -rf "$work"
        trap - EXIT
    fi
    mpich_version=$(cat "$top/src/.debian-version")
    build_dir="$top/build-$build_key"
    rm -rf "$build_dir"
    mkdir -p "$build_dir"
    log="$build_dir/build.log"
    say "configuring MPICH $mpich_version's test suite against $ompi_prefix/bin/mpicc (about 1-2 minutes)"
    (cd "$build_dir" && "$top/src/configure" "${configure_opts[@]}" --with-mpi="$ompi_prefix" \
         CC="$ompi_prefix/bin/mpicc" MPICC="$ompi_prefix/bin/mpicc" >>"$log" 2>&1) \
        || { tail -n 30 "$log" >&2; die "configure failed; full log: $log"; }
    say "building util and dtpools"
    # dtpools (the datatype pools of sendrecv1, sendself and coll's dtp tests) calls
    # MPI_Type_hvector and MPI_Type_hindexed, removed in MPI-3.0 and absent from Open MPI 5:
    # it gets their MPI-2 names, same arguments.
    cat >"$build_dir/ompi-mpi1-removed.h" <<'HDR'
#include <mpi.h>
#undef MPI_Type_hvector
#undef MPI_Type_hindexed
#define MPI_Type_hvector MPI_Type_create_hvector
#define MPI_Type_hindexed MPI_Type_create_hindexed
HDR
    jobs=$(( $(nproc) + 1 ))
    (cd "$build_dir" && make -C util -j"$jobs" libmtest_single.la \
         && make -C dtpools -j"$jobs" CPPFLAGS="-include $build_dir/ompi-mpi1-removed.h") \
        >>"$log" 2>&1 \
        || { grep -E 'error' "$log" | head -n 30 >&2; die "build failed; full log: $log"; }
    touch "$build_dir/.configured"
fi
mpich_version=$(cat "$(dirname "$build_dir")/src/.debian-version")

# The programs of a suite's directory. Some tests use MPI-4.0 functions that Open MPI 5.0
# lacks: build what builds, and keep each failure's log (its first error is reported as
# the reason for skipping the test). A parallel make skips some programs it could build
# (coll's allred among them, seen with -j2): each one missing is then built alone.
build_suite() {
    local dir=$1 log="$build_dir/build-$1.log" prog
    [ -e "$build_dir/.built-$dir" ] && return 0
    say "building MPICH's $dir tests (a few minutes the first time)"
    (cd "$build_dir" && nice make -k -C "$dir" -j"$(( $(nproc) + 1 ))") >>"$log" 2>&1 || true
    mkdir -p "$build_dir/$dir/build-failures"
    for prog in $(cat "$build_dir/$dir"/testlist*[!~] | awk '!/^#/ && NF { print $1 }' | sort -u); do
        [ -x "$build_dir/$dir/$prog" ] \
            || (cd "$build_dir" && nice make -C "$dir" "$prog") >"$build_dir/$dir/build-failures/$prog.log" 2>&1 || true
    done
    touch "$build_dir/.built-$dir"
}

# ---- 2. the runs ------------------------------------------------------------------------
export PMIX_MCA_mca_base_component_show_load_errors=0
mpirun=("$ompi_prefix/bin/mpirun" --allow-run-as-root --oversubscribe
        --mca mca_base_component_path "$ompi_prefix/lib/openmpi:$component_dir")
mem_avail_gb=$(awk '/^MemAvailable:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
rm -rf "$logs"
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)

# What each suite compares: the names of the two sides and their mpirun options.
suite_sides() { # SUITE -> sets ref, ours, ref_opts, our_opts, what
    case "$1" in
        pt2pt) ref=ob1 ours=dr2 ref_opts=(--mca pml ob1) our_opts=(--mca pml dr2)
               what="point-to-point tests: pml/dr2 against pml/ob1" ;;
        coll)  ref=tuned ours=ftrabit ref_opts=(--mca coll ^ftrabit) our_opts=()
               what="collective tests: coll/ftrabit against coll/tuned" ;;
    esac
}

# run_one DIR LOG TIMEOUT NP PROG OPTS... -- ARGS...: prints pass|fail|timeout, seconds, exit code.
run_one() {
    local dir=$1 log=$2 limit=$3 np=$4 prog=$5
    shift 5
    local opts=() start rc=0 verdict
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    start=$(date +%s.%N)
    (cd "$build_dir/$dir" && env "${envs[@]}" timeout --verbose -k 10 "$limit" \
         "${mpirun[@]}" "${opts[@]}" -np "$np" "./$prog" "$@" </dev/null >"$log" 2>&1) || rc=$?
    local secs
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    if grep -aq '^timeout: sending signal' "$log"; then
        verdict=timeout
    elif [ "$rc" = 0 ] && grep -aqE '^[[:space:]]*No [Ee]rrors[[:space:]]*$' "$log"; then
        verdict=pass
    else
        verdict=fail
    fi
    echo "$verdict $secs $rc"
}

# First line of a failed run's output that says something (for the notes column).
first_complaint() {
    { grep -av -E '^[[:space:]]*$|^-+$|^timeout: |No [Ee]rrors' "$1" || true; } | sed -n 1p \
        | tr -d '|`' | cut -c1-90
}

status=0
for suite in "${suites[@]}"; do
    suite_sides "$suite"
    build_suite "$suite"
    # MPICH's own default for a directory: testlist, plus testlist.dtp (the datatype-pool
    # variants configure generates) where there is one; testlist.gpu needs GPUs.
    lists=()
    for l in testlist testlist.dtp; do
        [ -f "$build_dir/$suite/$l" ] && lists+=("$l")
    done
    [ ${#lists[@]} -gt 0 ] || die "$build_dir/$suite has no testlist (configure writes it)"
    mkdir -p "$logs/$suite/$ref" "$logs/$suite/$ours"

    rows=() n_run=0 n_skip=0 pass_ref=0 pass_ours=0 regressions=() ours_only=()
    while read -r list line; do
        line=${line%%#*}
        [ -n "${line// /}" ] || continue
        read -r -a tok <<<"$line"
        name=${tok[0]} np=${tok[1]:-1}
        args=() envs=() xfail="" limit=$timeout_s mem="" skip=""
        for t in "${tok[@]:2}"; do
            case "$t" in
                arg=*) args+=("${t#arg=}") ;;
                env=*) envs+=("${t#env=}") ;;
                xfail=*) xfail="${xfail:+$xfail, }${t#xfail=}" ;;
                timeLimit=*) limit=${t#timeLimit=} ;;
                mem=*) mem=${t#mem=} ;;
                strict=false) skip="uses MPICH extensions (strict=false)" ;;
                mpix=*) skip="uses MPIX extensions" ;;
                *=*) skip="unknown testlist key '${t%%=*}'" ;;
                *) ;; # a stray word (sendself's lines carry their own path): runtests ignores it too
            esac
        done
        label=$name
        [ ${#args[@]} -eq 0 ] || label="$name ${args[*]}"
        [ ${#envs[@]} -eq 0 ] || label="$label [${envs[*]}]"
        if [ -n "$only" ] && [[ "$label" != *"$only"* ]]; then continue; fi
        # MPICH's control variables (MPIR_CVAR_*) mean nothing to Open MPI: such a line
        # would run exactly what the same line without them runs.
        for e in "${envs[@]}"; do
            case "$e" in MPIR_CVAR_*) skip="sets MPICH-only control variables (${envs[*]}): under Open MPI it repeats the line without them" ;; esac
        done
        if [ -z "$skip" ] && [ -n "$mem" ] && awk -v m="$mem" -v a="$mem_avail_gb" 'BEGIN { exit !(m > a) }'; then
            skip="needs ${mem} GB of memory, ${mem_avail_gb} GB available"
        fi
        if [ -z "$skip" ] && [ ! -x "$build_dir/$suite/$name" ]; then
            why=$(grep -a -m1 -oE "undefined reference to \`[A-Za-z0-9_]+'|error: .*" \
                      "$build_dir/$suite/build-failures/$name.log" 2>/dev/null | tr -d '`|' | cut -c1-100 || true)
            skip="does not build against Open MPI $ompi_version: ${why:-see $build_dir/build-$suite.log}"
        fi
        [ -z "$xfail" ] || limit=$xfail_timeout_s
        note=""
        [ "$list" = testlist ] || note="$list"
        [ -z "$xfail" ] || note="${note:+$note; }MPICH marks it as expected to fail ($xfail); run anyway"
        if [ -n "$skip" ]; then
            n_skip=$((n_skip + 1))
            rows+=("| \`$label\` | $np | skipped | skipped | $skip |")
            say "skip  $suite: $label (np $np): $skip"
            continue
        fi
        n_run=$((n_run + 1))
        key=$(printf '%03d-%s' "$n_run" "$name")
        declare -A res=()
        for side in "$ref" "$ours"; do
            if [ "$side" = "$ref" ]; then opts=("${ref_opts[@]}"); else opts=("${our_opts[@]}"); fi
            read -r v secs rc < <(run_one "$suite" "$logs/$suite/$side/$key.log" "$limit" "$np" \
                                      "$name" "${opts[@]}" -- "${args[@]}")
            res[$side]=$v
            case "$v" in
                pass) cell="pass ($secs s)" ;;
                timeout) cell="**timeout** (${limit} s)" ;;
                *) cell="**fail** (exit $rc)"
                   c=$(first_complaint "$logs/$suite/$side/$key.log")
                   [ -z "$c" ] || note="${note:+$note; }$side: \`$c\`" ;;
            esac
            res[$side-cell]=$cell
        done
        [ "${res[$ref]}" = pass ] && pass_ref=$((pass_ref + 1))
        [ "${res[$ours]}" = pass ] && pass_ours=$((pass_ours + 1))
        if [ "${res[$ref]}" = pass ] && [ "${res[$ours]}" != pass ]; then
            regressions+=("$label (np $np): $ours ${res[$ours]}, log $logs/$suite/$ours/$key.log")
        fi
        if [ "${res[$ref]}" != pass ] && [ "${res[$ours]}" = pass ]; then
            ours_only+=("$label (np $np)")
        fi
        rows+=("| \`$label\` | $np | ${res[$ref-cell]} | ${res[$ours-cell]} | $note |")
        printf '%-5s %-5s %s: %s (np %s)\n' "${res[$ref]}" "${res[$ours]}" "$suite" "$label" "$np" >&2
        unset res
    done < <(for l in "${lists[@]}"; do sed "s/^/$l /" "$build_dir/$suite/$l"; done)

    # ---- 3. the report ------------------------------------------------------------------
    report() {
        cat <<EOF
# MPICH $what

Generated by \`make check-mpich\` (\`scripts/check-mpich.sh --suite $suite\`) on $(date -u '+%Y-%m-%d %H:%M UTC')
at commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown).

- Open MPI $ompi_version, with ULFM (\`$ompi_prefix\`); $ours from this tree.
- MPICH $mpich_version: \`test/mpi/$suite\` of Debian's \`mpich\` source package, configured
  with \`CC=mpicc\` of that Open MPI (C only): every line of \`$suite/testlist\`$([ ${#lists[@]} -gt 1 ] && echo " and of
  \`$suite/testlist.dtp\` (the datatype-pool variants configure generates)"), as MPICH's
  \`make testing\` runs them.
- Each test runs twice on one node, \`mpirun --oversubscribe ${ref_opts[*]}\` ($ref) and
  \`mpirun --oversubscribe${our_opts[*]:+ ${our_opts[*]}}\` ($ours; default BTLs, no fault
  injection), under \`timeout\`: the testlist's \`timeLimit\`, else ${timeout_s} s (MPICH's
  default). Pass: exit code 0 and a line \` No Errors\` (MPICH's own rule); fail: anything
  else; timeout: no end within the limit.
- Lines marked \`xfail=\` (MPICH's expected failures) are run all the same, with a limit of
  ${xfail_timeout_s} s.
- The machine: $(nproc) cores, ranks oversubscribed; load average $(cut -d' ' -f1-3 /proc/loadavg) when
  the report was written (the machine is shared: times are noisy).

## Summary

- $((n_run + n_skip)) testlist lines: $n_run run, $n_skip skipped (reasons in the table).
- Passed with $ref: $pass_ref of $n_run; passed with $ours: $pass_ours of $n_run.
- Passed with $ref but not with $ours: **${#regressions[@]}** (must be 0).
EOF
        local r
        for r in "${regressions[@]}"; do echo "  - $r"; done
        echo "- Passed with $ours but not with $ref: ${#ours_only[@]}${ours_only[*]:+ (${ours_only[*]})}."
        cat <<EOF

## Results

| test | np | $ref | $ours | notes |
|---|---|---|---|---|
EOF
        printf '%s\n' "${rows[@]}"
    }

    if [ -n "$only" ]; then
        report | sed -n '/^## Summary/,$p'
    else
        mkdir -p "$out_dir"
        report >"$out_dir/mpich-$suite.md"
        say "report written to $out_dir/mpich-$suite.md"
    fi
    say "$suite: $n_run run, $n_skip skipped; pass $ref $pass_ref, $ours $pass_ours; $ref-only passes: ${#regressions[@]}"
    if [ ${#regressions[@]} -gt 0 ]; then
        for r in "${regressions[@]}"; do say "REGRESSION: $r"; done
        status=1
    fi
done
exit $status
