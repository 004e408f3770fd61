#!/usr/bin/env bash
# ompi-resilience: pml/dr2 against pml/ob1 with NetPIPE, 2 ranks on one node, every
# configuration in one run. Not run by CI: timings need a quiet machine and minutes.
#
# NetPIPE is Debian's source package `netpipe` (3.7.2), fetched with apt's ordinary client
# (a deb-src entry for trixie, added the way scripts/ompi-bootstrap.sh adds it for
# openmpi), built once as NPmpi with our Open MPI's mpicc and cached under
#   ${OMPI_RESILIENCE_CACHE:-~/.cache/ompi-resilience}/netpipe-<version>/
# If it cannot be fetched or built, bench/dr2_pingpong (the same ping-pong, our code) is
# used instead and dr2.md says so. NETPIPE=0 forces that fallback.
#
# Parts (PARTS, default all four), each a set of configurations:
#   sm    --mca btl sm,self: ob1 (default, CMA single copy for large messages); ob1
#         copy-in/out (--mca smsc ^cma,knem,xpmem: no single-copy component, so sm copies
#         through its shared segment as dr2 does: the fair baseline for a checksumming
#         PML); dr2 with CRC32C forced (--mca pml_dr2_checksum crc32c); dr2 by default
#         (pml_dr2_checksum auto: no payload checksum on sm); dr2 with checksum none
#   tcp   --mca btl tcp,self (loopback): ob1, dr2 crc32c (the default there), dr2 none
#   frag  dr2 crc32c on sm, pml_dr2_frag_size FRAGS; btl/sm's largest send (32 KiB by
#         default, which caps dr2's fragments) is raised to fit the fragment and its header
#   loss  dr2 crc32c on sm with pml_dr2_inject_drop DROPS (segments dropped between dr2
#         and the BTL, resent by dr2): bandwidth under loss
#   ofi   --mca btl ofi,self (libfabric on loopback; not in the default PARTS): ob1 and dr2
#         (crc32c, its default on ofi) over the sockets provider and over udp;ofi_rxd, and
#         dr2 over sockets with btl_ofi_max_send_size 65536 (Open MPI patch 0032; without
#         it btl/ofi sends 4 KiB whatever it is told). bench/run-dr2-ofi.sh runs this part
#         into a dated report.
# All runs of all parts are interleaved: every round runs each configuration once, the
# order rotating every round so that machine noise and drift hit all alike. Per size, a
# run's one-way time is NetPIPE's (the best of its trials of an MPI_Send / MPI_Recv
# ping-pong: NPmpi without -a posts no receive ahead); the tables give the median over the
# rounds. Ratios are dr2 over ob1 copy-in/out: time ratio for latency, bandwidth ratio for
# bandwidth. A run that fails after its last size keeps its numbers and is listed under
# "Anomalies" in dr2.md; other failed runs are listed and left out.
#
# Writes, under OUT (default docs/bench; QUICK: BUILD/bench-quick):
#   dr2-sm.dat dr2-tcp.dat dr2-frag.dat dr2-loss.dat dr2-ofi.dat   medians per size
#   dr2-bw.png     bandwidth against size (sm, dr2/ob1 ratio on sm, tcp)
#   dr2-lat.png    latency of small messages (sm, tcp) and the ratio on sm
#   dr2-frag.png   bandwidth for each fragment size    dr2-loss.png  bandwidth under loss
#   dr2-ofi.png    bandwidth over btl/ofi
#   dr2.md, dr2.txt  the tables (markdown, text) and the targets
# Raw output of every run goes to RAW (default BUILD/bench-logs/dr2, QUICK: dr2-quick).
#
# Usage: bench/run-dr2.sh
# Environment (all optional):
#   BUILD          configured build tree, `make install`ed to BUILD/stage (default _build)
#   COMPONENT_DIR  where mca_pml_dr2.so is (default BUILD/stage/lib/openmpi)
#   PARTS="sm tcp frag loss"  ROUNDS=3  FRAGS="8192 32768 65536 131072"
#   DROPS="0 0.001 0.01 0.05"  MAX_BYTES=8388608  (sizes: NetPIPE's sweep from 8 B, and
#                  from 16 KiB for frag and loss, to MAX_BYTES; no perturbed sizes)
#   QUICK=1        smoke test: 1 round, sizes up to 2 MiB, 20 repetitions per size instead
#                  of NetPIPE's timed trials, no quiet wait, output to BUILD/bench-quick
#   NETPIPE=0      use bench/dr2_pingpong instead of NetPIPE
#   NETPIPE_RUNTM=0.05  NetPIPE's compile-time RUNTM (seconds; a trial takes about twice
#                  that; NetPIPE's own default is 0.10): 0.05 halves NetPIPE's trials (a full
#                  run took 24 minutes here, quiet waits included)
#   MPIRUN_ARGS    given to every mpirun (default none: plain MPI, no ULFM runtime)
#   RUN_TIMEOUT=300  seconds before one mpirun is killed (counted as a failed run)
#   TABLES_ONLY=1  no measurement: tables and plots again from the last one's RAW
#   OUT, RAW       output and raw-log directories
#   QUIET_WAIT=60  before each run, wait up to this many seconds for the machine to be
#                  quiet (no other runnable process for 3 s); 0 does not wait
#   PLACEMENT=any  which runs the tables use: any, near or far. Before and after every run
#                  bench/cacheline_rtt measures how far apart the first two CPUs are (a cache
#                  line's round trip; the ranks are bound to them): near when both
#                  measurements are under PLACEMENT_NS (default 150 ns, cores sharing a
#                  cache), far when both are at or over it; a run between the two is
#                  neither. On a VM the vCPUs can move between the two within minutes, and
#                  sm bandwidth differs by 2x between them: compare runs of one placement
#                  (TABLES_ONLY=1 PLACEMENT=near redoes the tables from the last measurement)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
QUICK=${QUICK:-0}
PARTS=${PARTS:-sm tcp frag loss}
FRAGS=${FRAGS:-8192 32768 65536 131072}
DROPS=${DROPS:-0 0.001 0.01 0.05}
NETPIPE=${NETPIPE:-1}
MPIRUN_ARGS=${MPIRUN_ARGS:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
NETPIPE_RUNTM=${NETPIPE_RUNTM:-0.05}
TABLES_ONLY=${TABLES_ONLY:-0}
PLACEMENT=${PLACEMENT:-any}
PLACEMENT_NS=${PLACEMENT_NS:-150}
case $PLACEMENT in any | near | far) ;; *) echo "run-dr2: PLACEMENT must be any, near or far" >&2; exit 2 ;; esac
if [ "$QUICK" = 1 ]; then
    ROUNDS=${ROUNDS:-1}
    MAX_BYTES=${MAX_BYTES:-2097152}
    QUIET_WAIT=${QUIET_WAIT:-0}
    OUT=${OUT:-$BUILD/bench-quick}
else
    ROUNDS=${ROUNDS:-3}
    MAX_BYTES=${MAX_BYTES:-8388608}
    QUIET_WAIT=${QUIET_WAIT:-60}
    OUT=${OUT:-$top/docs/bench}
fi
RAW=${RAW:-$BUILD/bench-logs/dr2$([ "$QUICK" = 1 ] && echo -quick || true)}
cache_root=${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}

bench_name=run-dr2
. "$top/bench/bench-lib.sh"

bench_require_ompi
[ -f "$COMPONENT_DIR/mca_pml_dr2.so" ] \
    || die "no mca_pml_dr2.so in $COMPONENT_DIR: run 'make && make install' in $BUILD"
bench_require_gnuplot
mkdir -p "$OUT" "$RAW"
# absolute: NetPIPE runs elsewhere and writes its own output file under RAW
OUT=$(cd "$OUT" && pwd) RAW=$(cd "$RAW" && pwd)

# ---- NetPIPE ---------------------------------------------------------------------------
netpipe_note=""
failed=()
anomalies=()

# shellcheck source=scripts/debian-src.sh
. "$top/scripts/debian-src.sh"
# The trixie deb-src entry scripts/ompi-bootstrap.sh writes, for a machine whose Open MPI
# came from the cache and so never needed it.
netpipe_enable_deb_src() {
    local added
    [ "$(id -u)" = 0 ] || return 1
    added=$(ompires_add_deb_src trixie) || return 1
    [ -z "$added" ] && return 0
    say "added a deb-src entry for trixie (archive $added) to fetch netpipe's source"
    apt-get update -qq >&2
}

# On stdout: the path of NPmpi built against OMPI_PREFIX (building it if needed), or,
# returning 1, why that was not possible.
netpipe_build() {
    local dir stamp work orig deb version key="$OMPI_PREFIX runtm=$NETPIPE_RUNTM"
    for stamp in "$cache_root"/netpipe-*/.complete; do
        [ -e "$stamp" ] || continue
        dir=$(dirname "$stamp")
        if [ "$(cat "$stamp")" = "$key" ] && [ -x "$dir/NPmpi" ] \
               && [ "$dir/NPmpi" -nt "$OMPI_PREFIX/lib/libmpi.so" ]; then
            echo "$dir/NPmpi"
            return 0
        fi
    done
    netpipe_enable_deb_src || true
    work=$(mktemp -d "${TMPDIR:-/tmp}/netpipe.XXXXXX")
    say "fetching Debian's netpipe source package"
    # The archive may serve the upstream tarball but not the Debian one (seen here: the
    # .debian.tar.xz is missing from the mirror): go on with what arrived.
    (cd "$work" && apt-get source --download-only netpipe >"$work/apt-source.log" 2>&1) || true
    orig=$(ls "$work"/netpipe_*.orig.tar.* 2>/dev/null | head -n 1)
    if [ -z "$orig" ]; then
        tail -n 3 "$work/apt-source.log" >&2
        echo "\`apt-get source netpipe\` did not deliver the source ($(tail -n 1 "$work/apt-source.log"))"
        rm -rf "$work"
        return 1
    fi
    version=$(basename "$orig" | sed -E 's/^netpipe_([0-9][0-9.]*)\.orig\.tar\..*/\1/')
    dir=$cache_root/netpipe-$version
    rm -rf "$dir"
    mkdir -p "$dir/src"
    tar -xf "$orig" -C "$dir/src" --strip-components=1
    cp "$orig" "$work"/netpipe_*.dsc "$dir/" 2>/dev/null || true
    deb=$(ls "$work"/netpipe_*.debian.tar.* 2>/dev/null | head -n 1)
    if [ -n "$deb" ]; then
        tar -xf "$deb" -C "$dir/src"
        if [ -f "$dir/src/debian/patches/series" ]; then
            while read -r p _; do
                case $p in '' | '#'*) continue ;; esac
                patch -d "$dir/src" -p1 --forward --quiet <"$dir/src/debian/patches/$p" >&2 \
                    || say "Debian patch $p does not apply; building without it"
            done <"$dir/src/debian/patches/series"
        fi
        echo "Debian source package $(basename "$deb" | sed -E 's/\.debian\.tar\..*//') (upstream tarball and Debian patches)" >"$dir/origin"
    else
        echo "upstream tarball $(basename "$orig") of Debian's source package; the archive did not serve its .debian.tar, so without Debian's patches" >"$dir/origin"
    fi
    rm -rf "$work"
    # NetPIPE times each trial to about 2 x RUNTM (a compile-time constant: 0.10 s, or 0.25 s
    # with -DFINAL); NETPIPE_RUNTM sets it.
    sed -i -E "/^#else/,/^#endif/ s/^( *#define +RUNTM +)[0-9.]+ *$/\1$NETPIPE_RUNTM/" "$dir/src/src/netpipe.h"
    if ! grep -qE "^ *#define +RUNTM +$NETPIPE_RUNTM *$" "$dir/src/src/netpipe.h"; then
        echo "NetPIPE $version's netpipe.h has no RUNTM line to set to $NETPIPE_RUNTM"
        return 1
    fi
    say "building NPmpi $version with $OMPI_PREFIX/bin/mpicc"
    if ! make -C "$dir/src" mpi MPICC="$OMPI_PREFIX/bin/mpicc" CFLAGS="-O2" >"$dir/build.log" 2>&1 \
            || [ ! -x "$dir/src/NPmpi" ]; then
        tail -n 10 "$dir/build.log" >&2
        echo "NetPIPE $version did not build with our mpicc (see $dir/build.log)"
        return 1
    fi
    cp "$dir/src/NPmpi" "$dir/NPmpi"
    echo "$key" >"$dir/.complete"
    echo "$dir/NPmpi"
}

tool=pingpong
if [ "$TABLES_ONLY" = 1 ]; then
    [ -f "$RAW/meta.sh" ] || die "TABLES_ONLY=1 but no $RAW/meta.sh from a measurement"
    # shellcheck disable=SC1091
    . "$RAW/meta.sh"
elif [ "$NETPIPE" = 1 ] && npmpi=$(netpipe_build); then
    tool=netpipe
    np_dir=$(dirname "$npmpi")
    tool_desc="NetPIPE $(basename "$np_dir" | sed 's/^netpipe-//') (\`NPmpi\`, built with our mpicc from the $(cat "$np_dir/origin"); RUNTM set to $NETPIPE_RUNTM s)"
else
    [ "$NETPIPE" = 1 ] && netpipe_note=$npmpi
    [ "$NETPIPE" = 1 ] && say "falling back to bench/dr2_pingpong: $netpipe_note"
    [ "$NETPIPE" = 1 ] || netpipe_note="NETPIPE=0 was given"
    make -C "$BUILD" bench/dr2_pingpong >&2
    pingpong=$BUILD/bench/dr2_pingpong
    tool_desc="bench/dr2_pingpong (NetPIPE's method, our code), because $netpipe_note"
fi
say "benchmark: $tool_desc"
if [ "$TABLES_ONLY" != 1 ]; then
    make -C "$BUILD" bench/cacheline_rtt >&2
    rtt_probe=$BUILD/bench/cacheline_rtt
fi

# ---- the configurations ----------------------------------------------------------------
export PMIX_MCA_mca_base_component_show_load_errors=0
# --oversubscribe (as the other benchmarks) turns Open MPI's default binding off: bind each
# of the 2 ranks to a core of its own, so that neither migrates in the middle of a run.
# shellcheck disable=SC2206 # MPIRUN_ARGS is a word list on purpose
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe --bind-to core $MPIRUN_ARGS
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR")
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')
# btl/sm sends at most this much per fragment (btl_sm_max_send_size's default), which
# caps dr2's fragments on sm.
sm_max_send=$("$OMPI_PREFIX/bin/ompi_info" --parsable --level 9 --param btl sm \
    | awk -F: '$5 == "btl_sm_max_send_size" && $6 == "value" { print $7; exit }')
[ -n "$sm_max_send" ] || die "ompi_info does not report btl_sm_max_send_size"
# dr2's largest header (PML_DR2_HDR_MAX_LEN, 48 bytes), rounded up: what a frag-sweep
# run adds to its fragment size for btl_sm_max_send_size.
dr2_hdr_room=64

declare -A cfg_args cfg_label cfg_min
configs=()
add_config() { # TAG MIN_BYTES LABEL ARGS...
    local tag=$1 min=$2 label=$3
    shift 3
    if [ -n "${cfg_args[$tag]+x}" ]; then
        ((min >= cfg_min[$tag])) || cfg_min[$tag]=$min
        return 0
    fi
    configs+=("$tag")
    cfg_args[$tag]="$*"
    cfg_label[$tag]=$label
    cfg_min[$tag]=$min
}
has_part() { [[ " $PARTS " == *" $1 "* ]]; }
frag_tag() { echo "frag-$(($1 / 1024))k"; }
drop_tag() { [ "$(awk -v d="$1" 'BEGIN { print (d == 0) }')" = 1 ] && echo sm-dr2-crc || echo "loss-$1"; }

SM=(--mca btl "sm,self")
TCP=(--mca btl "tcp,self")
# Every smsc component 5.0.7 has (ompi_info lists those that were built): with none, btl/sm
# has no single-copy path and copies in and out of its shared segment.
CICO=(--mca smsc "^cma,knem,xpmem")
# btl/ofi leaves sockets, tcp and udp out unless told; mode 1: sends only (what dr2 uses)
OFI=(--mca btl "ofi,self" --mca btl_ofi_provider_exclude none --mca btl_ofi_mode 1)
# 4 MiB socket buffers: the provider can stall for good with the default (docs/dr2-ofi.md)
OFI_SOCKETS=(-x FI_PROVIDER=sockets -x FI_SOCKETS_IFACE=lo -x FI_SOCKETS_MAX_BUF_SZ=4194304)
OFI_RXD=(-x "FI_PROVIDER=udp;ofi_rxd" -x FI_UDP_IFACE=lo)
bw_min=16384
if has_part sm; then
    add_config sm-ob1 8 "ob1" --mca pml ob1 "${SM[@]}"
    add_config sm-ob1-cico 8 "ob1 copy-in/out" --mca pml ob1 "${SM[@]}" "${CICO[@]}"
    add_config sm-dr2-crc 8 "dr2 crc32c" --mca pml dr2 "${SM[@]}" --mca pml_dr2_checksum crc32c
    add_config sm-dr2-auto 8 "dr2 default (auto: no checksum on sm)" --mca pml dr2 "${SM[@]}"
    add_config sm-dr2-none 8 "dr2 no checksum" --mca pml dr2 "${SM[@]}" --mca pml_dr2_checksum none
fi
if has_part tcp; then
    add_config tcp-ob1 8 "ob1" --mca pml ob1 "${TCP[@]}"
    add_config tcp-dr2-crc 8 "dr2 crc32c" --mca pml dr2 "${TCP[@]}"
    add_config tcp-dr2-none 8 "dr2 no checksum" --mca pml dr2 "${TCP[@]}" --mca pml_dr2_checksum none
fi
if has_part frag; then
    for f in $FRAGS; do
        btl_max=$((f + dr2_hdr_room > sm_max_send ? f + dr2_hdr_room : sm_max_send))
        add_config "$(frag_tag "$f")" $bw_min "frag $((f / 1024)) KiB" --mca pml dr2 "${SM[@]}" \
            --mca pml_dr2_checksum crc32c \
            --mca pml_dr2_frag_size "$f" --mca btl_sm_max_send_size "$btl_max"
    done
    # the reference line of the plot
    add_config sm-ob1-cico $bw_min "ob1 copy-in/out" --mca pml ob1 "${SM[@]}" "${CICO[@]}"
fi
if has_part loss; then
    for d in $DROPS; do
        add_config "$(drop_tag "$d")" $bw_min "drop $d" --mca pml dr2 "${SM[@]}" --mca pml_dr2_inject_drop "$d" \
            --mca pml_dr2_checksum crc32c
    done
fi
if has_part ofi; then
    add_config ofi-ob1-sockets 8 "ob1 sockets" --mca pml ob1 "${OFI[@]}" "${OFI_SOCKETS[@]}"
    add_config ofi-dr2-sockets 8 "dr2 sockets" --mca pml dr2 "${OFI[@]}" "${OFI_SOCKETS[@]}"
    add_config ofi-dr2-sockets-64k 8 "dr2 sockets, 64 KiB sends" --mca pml dr2 "${OFI[@]}" \
        "${OFI_SOCKETS[@]}" --mca btl_ofi_max_send_size 65536
    add_config ofi-ob1-rxd 8 "ob1 udp;ofi_rxd" --mca pml ob1 "${OFI[@]}" "${OFI_RXD[@]}"
    add_config ofi-dr2-rxd 8 "dr2 udp;ofi_rxd" --mca pml dr2 "${OFI[@]}" "${OFI_RXD[@]}"
fi
((${#configs[@]})) || die "PARTS='$PARTS' names no part (sm tcp frag loss ofi)"
nconf=${#configs[@]}

# run TAG LOG: one benchmark run, its table normalised to "bytes usec_one_way Gbit/s" in LOG.
# Returns non-zero when mpirun fails or times out.
run() {
    local tag=$1 log=$2 rc=0
    # shellcheck disable=SC2206
    local args=(${cfg_args[$tag]}) cmd
    if [ "$tool" = netpipe ]; then
        cmd=("$npmpi" -p 0 -l "${cfg_min[$tag]}" -u "$MAX_BYTES" -o "$log.np")
        [ "$QUICK" = 1 ] && cmd+=(-n 20)
    else
        cmd=("$pingpong" "${cfg_min[$tag]}" "$MAX_BYTES")
        [ "$QUICK" = 1 ] && cmd+=(1 0.01) || cmd+=(3 0.1)
    fi
    rm -f "$log" "$log.np"
    # dr2 prints its fault counters at MPI_Finalize (into $log.err): the report sums them
    [[ " ${args[*]} " != *" pml dr2 "* ]] || args+=(--mca pml_dr2_verbose 2)
    (cd "$RAW" && timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" "${args[@]}" -np 2 "${cmd[@]}") \
        >"$log.out" 2>"$log.err" </dev/null || rc=$?
    if [ "$tool" = netpipe ]; then
        # NPmpi: bytes, Mbit/s (2^20), one-way seconds. The seconds are printed to 10 ns
        # (%.8f), 8 % of a small message's time; the Mbit/s, computed from the unrounded
        # time, keep 6 decimals: the time is taken from them.
        touch "$log.np"
        awk 'NF >= 3 && $2 > 0 { t = $1 * 8 / ($2 * 1048576); printf "%d %.4f %.4f\n", $1, t * 1e6, $1 * 8 / t / 1e9 }' "$log.np" >"$log"
    else
        awk '!/^#/ && NF == 3 { printf "%d %.4f %.4f\n", $1, $2, $3 * 8 / 1000 }' "$log.out" >"$log"
    fi
    # A run that failed after its last size still measured every size: keep its numbers,
    # but report the failure (see "anomalies" in dr2.md).
    if ((rc != 0)); then
        local why="mpirun exit $rc"
        ((rc != 124)) || why+=" (timeout after $RUN_TIMEOUT s)"
        ((rc != 141)) || why+=" (SIGPIPE)"
        if [ "$(awk 'END { print $1 }' "$log")" = "$MAX_BYTES" ]; then
            say "$tag: $why after its last size; see $log.err"
            anomalies+=("$tag round $r: $why after the last size (results kept)")
            return 0
        fi
        say "$tag: $why; see $log.err"
        rm -f "$log"
        return 1
    fi
    [ -s "$log" ] || { say "$tag: no results in $log.out"; return 1; }
}

if [ "$TABLES_ONLY" != 1 ]; then
# The comparison means something only if dr2 serves the dr2 runs and the copy-in/out
# knob really removes single copy: check dr2's selection message and smsc's selection.
say "checking the selected components"
check_mpi() { # LOG ARGS...: a 2-rank MPI program (the benchmark itself, smallest run)
    local log=$1
    shift
    if [ "$tool" = netpipe ]; then
        (cd "$RAW" && timeout -k 5 120 "${mpirun[@]}" "$@" -np 2 "$npmpi" -p 0 -l 8 -u 8 -n 2 -o "$log.np") \
            >"$log" 2>&1 </dev/null
    else
        timeout -k 5 120 "${mpirun[@]}" "$@" -np 2 "$pingpong" 8 8 1 0.001 >"$log" 2>&1 </dev/null
    fi
}
check_mpi "$RAW/check-dr2.txt" --mca pml dr2 "${SM[@]}" --mca pml_dr2_verbose 1 \
    || { tail -n 20 "$RAW/check-dr2.txt" >&2; die "dr2 does not run"; }
grep -q 'pml:dr2: selected' "$RAW/check-dr2.txt" || die "dr2 is not selected (see $RAW/check-dr2.txt)"
dr2_selected=$(grep -m1 -o 'pml:dr2: selected.*' "$RAW/check-dr2.txt")
# shellcheck disable=SC2086
check_mpi "$RAW/check-smsc-default.txt" --mca pml ob1 "${SM[@]}" --mca smsc_base_verbose 100 || true
# shellcheck disable=SC2086
check_mpi "$RAW/check-smsc-cico.txt" --mca pml ob1 "${SM[@]}" "${CICO[@]}" --mca smsc_base_verbose 100 \
    || { tail -n 20 "$RAW/check-smsc-cico.txt" >&2; die "ob1 with '${CICO[*]}' does not run"; }
smsc_default=$(grep -o 'single-copy component: [a-z]*' "$RAW/check-smsc-default.txt" | sort -u | awk '{ print $3 }' | paste -sd,)
if grep -q 'single-copy component: ' "$RAW/check-smsc-cico.txt"; then
    die "'${CICO[*]}' still selects a single-copy component (see $RAW/check-smsc-cico.txt)"
fi
say "dr2: $dr2_selected; smsc by default: ${smsc_default:-none}; with '${CICO[*]}': none"

# ---- the measurement -------------------------------------------------------------------
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
failed=()
anomalies=()
rm -f "$RAW"/*-r[0-9]*.txt*
for ((r = 1; r <= ROUNDS; r++)); do
    for ((j = 0; j < nconf; j++)); do
        tag=${configs[$(((j + r - 1) % nconf))]}
        say "round $r/$ROUNDS: $tag ($(($(date +%s) - start)) s so far)"
        wait_quiet
        rtt_before=$("$rtt_probe" | awk '{ print $4 }') || rtt_before=-
        run "$tag" "$RAW/$tag-r$r.txt" || failed+=("$tag round $r")
        rtt_after=$("$rtt_probe" | awk '{ print $4 }') || rtt_after=-
        echo "$rtt_before $rtt_after" >"$RAW/$tag-r$r.txt.rtt"
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
say "measured in $elapsed s"
# What the tables need to describe this measurement, for TABLES_ONLY=1.
{
    for v in tool tool_desc dr2_selected smsc_default elapsed load_start load_end noisy_starts runs \
             ROUNDS QUICK MAX_BYTES QUIET_WAIT PARTS FRAGS DROPS MPIRUN_ARGS NETPIPE_RUNTM; do
        printf '%s=%q\n' "$v" "${!v}"
    done
    printf 'failed=(%s)\n' "$( ((${#failed[@]})) && printf '%q ' "${failed[@]}")"
    printf 'anomalies=(%s)\n' "$( ((${#anomalies[@]})) && printf '%q ' "${anomalies[@]}")"
} >"$RAW/meta.sh"
fi

# ---- tables and plots ------------------------------------------------------------------
# run_placement LOG: near, far or mixed (the cache-line round trips before and after the
# run on either side of PLACEMENT_NS), unknown without them.
run_placement() {
    awk -v ns="$PLACEMENT_NS" '
        NF == 2 && $1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ {
            print ($1 < ns && $2 < ns) ? "near" : ($1 >= ns && $2 >= ns) ? "far" : "mixed"; found = 1
        }
        END { if (!found) print "unknown" }' "$1.rtt" 2>/dev/null || echo unknown
}
placement_counts=$(for f in "$RAW"/*-r[0-9]*.txt; do [ ! -f "$f" ] || run_placement "$f"; done \
    | sort | uniq -c | awk '{ printf "%s%d %s", (n++ ? ", " : ""), $1, $2 }')
# aggregate BASE TAG...: per size (the union over the tags), the median over the rounds of
# the one-way time of each tag and the bandwidth that median gives, "-" where a tag has no
# data. Columns: bytes; per TAG: <tag>_us <tag>_gbps; per TAG other than BASE:
# <tag>_time_ratio <tag>_bw_ratio (to BASE).
aggregate() {
    local base=$1 files=() t f
    shift
    for t in "$@"; do
        for f in "$RAW/$t"-r*.txt; do
            [ -f "$f" ] || continue
            [ "$PLACEMENT" = any ] || [ "$(run_placement "$f")" = "$PLACEMENT" ] || continue
            files+=("$f")
        done
    done
    ((${#files[@]})) || files=(/dev/null)
    awk -v base="$base" -v tags="$*" '
        function med(a, n,   i, j, x) {
            for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        BEGIN { nt = split(tags, tag, " ") }
        FNR == 1 { f = FILENAME; sub(/.*\//, "", f); sub(/-r[0-9]+\.txt$/, "", f) }
        NF == 3 { if (!($1 in seen)) { seen[$1] = 1; sizes[++ns] = $1 }; n = ++cnt[f, $1]; v[f, $1, n] = $2 }
        END {
            for (i = 2; i <= ns; i++) { x = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > x; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = x }
            printf "# bytes"
            for (k = 1; k <= nt; k++) printf " %s_us %s_gbps", tag[k], tag[k]
            for (k = 1; k <= nt; k++) if (tag[k] != base) printf " %s_time_ratio %s_bw_ratio", tag[k], tag[k]
            printf "\n"
            for (s = 1; s <= ns; s++) {
                b = sizes[s]; printf "%d", b
                for (k = 1; k <= nt; k++) {
                    n = cnt[tag[k], b]; m[tag[k]] = 0
                    if (n) { for (i = 1; i <= n; i++) a[i] = v[tag[k], b, i]; m[tag[k]] = med(a, n); printf " %.4f %.4f", m[tag[k]], b * 8 / m[tag[k]] / 1000 }
                    else printf " - -"
                }
                for (k = 1; k <= nt; k++) if (tag[k] != base) {
                    if (m[tag[k]] && m[base]) printf " %.4f %.4f", m[tag[k]] / m[base], m[base] / m[tag[k]]; else printf " - -"
                }
                printf "\n"
            }
        }' "${files[@]}" 2>/dev/null
}

max_human=$(awk 'BEGIN { b = '"$MAX_BYTES"'; print (b >= 1048576 ? b / 1048576 " MiB" : b / 1024 " KiB") }')
if [ "$tool" = netpipe ]; then
    method_note="Per size, the one-way time is half a round trip of MPI_Send / MPI_Recv (NPmpi
without \`-a\` posts no receive ahead) between ranks 0 and 1, the best of NetPIPE's 3 trials of about $(awk -v r="$NETPIPE_RUNTM" 'BEGIN { print 2 * r }') s each$([ "$QUICK" = 1 ] && echo " (QUICK: 20 round trips each)" || true); sizes are
NetPIPE's sweep without perturbation (\`-p 0\`: 2 per octave) up to $max_human."
else
    method_note="Per size, the one-way time is half a round trip of blocking MPI_Send / MPI_Recv
between ranks 0 and 1, the median of $([ "$QUICK" = 1 ] && echo "1 trial of 0.01 s" || echo "3 trials of 0.1 s"); sizes are the powers of two up to $max_human."
fi
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'
machine="$(nproc) cores: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); $(uname -r)"
header_note="np 2 on one node ($machine); $tool; median of $ROUNDS interleaved rounds; Open MPI $ompi_version"
# xtics every factor 8 (log scale), labelled in B/KiB/MiB
xtics() { awk "$human_awk"' !/^#/ { k = int(log($1) / log(2) + 0.5) } !/^#/ && 2 ^ k == $1 && k % 3 == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), human($1), $1 }' "$1"; }
gp_common() { # HEIGHT
    printf 'set terminal pngcairo noenhanced size 1000,%s font "sans,11"\n' "$1"
    printf 'set datafile missing "-"\nset logscale x 2\nset grid xtics ytics\nset key top left box opaque\n'
}

# column of TAG's usec in a .dat (gbps is the next one); of its time ratio (bw: the next)
col() { awk -v t="$2_us" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == t) { print i - 1; exit } }' "$1"; }
rcol() { awk -v t="$2_time_ratio" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == t) { print i - 1; exit } }' "$1"; }

tables_md=$(mktemp)
tables_txt=$(mktemp)
targets=$(mktemp)
trap 'rm -f "$tables_md" "$tables_txt" "$targets"' EXIT

# table DAT TITLE BASE TAG...: markdown and text tables of a .dat made by `aggregate BASE TAG...`
table() {
    local dat=$1 title=$2 base=$3 t others=()
    shift 3
    for t in "$@"; do [ "$t" = "$base" ] || others+=("$t"); done
    {
        printf '\n### %s\n\nTime: one-way µs; bandwidth: Gbit/s; ratios to %s (time ratio, bandwidth ratio).\n\n| size |' \
            "$title" "${cfg_label[$base]}"
        for t in "$@"; do printf ' %s µs | Gb/s |' "${cfg_label[$t]}"; done
        for t in "${others[@]}"; do printf ' %s: time | bw |' "${cfg_label[$t]}"; done
        printf '\n| ---: |'
        for t in "$@" "${others[@]}"; do printf ' ---: | ---: |'; done
        printf '\n'
        awk -v nv=$((2 * $# + 1)) "$human_awk"' !/^#/ {
            printf "| %s |", human($1)
            for (i = 2; i <= NF; i++) printf " %s |", ($i == "-" ? "–" : (i > nv ? sprintf("%.3f", $i) : sprintf(i % 2 ? "%.3g" : "%.2f", $i)))
            printf "\n" }' "$dat"
    } >>"$tables_md"
    {
        printf '\n%s\nratios to %s\n%10s' "$title" "${cfg_label[$base]}" bytes
        for t in "$@"; do printf ' %24s' "${cfg_label[$t]}: us Gb/s"; done
        for t in "${others[@]}"; do printf ' %24s' "${cfg_label[$t]}: t bw"; done
        printf '\n'
        awk '!/^#/ { printf "%10d", $1; for (i = 2; i <= NF; i += 2) printf " %13s %10s", $i, $(i + 1); printf "\n" }' "$dat"
    } >>"$tables_txt"
}

# runs_in TAG PLACEMENT: how many of TAG's runs had that placement
runs_in() {
    local f n=0
    for f in "$RAW/$1"-r*.txt; do
        [ -f "$f" ] && [ "$(run_placement "$f")" = "$2" ] && n=$((n + 1))
    done
    echo "$n"
}

# sm_targets_of DAT PLACEMENT: the target rows of one placement's medians
sm_targets_of() {
    local dat=$1 where=$2 crc none cico ob1 counts
    crc=$(col "$dat" sm-dr2-crc) none=$(col "$dat" sm-dr2-none) cico=$(col "$dat" sm-ob1-cico) ob1=$(col "$dat" sm-ob1)
    counts="runs: dr2 $(runs_in sm-dr2-crc "$where"), copy-in/out $(runs_in sm-ob1-cico "$where"), ob1 $(runs_in sm-ob1 "$where")"
    awk -v crc="$crc" -v none="$none" -v cico="$cico" -v ob1="$ob1" -v where="$where" -v counts="$counts" "$human_awk"'
        function verdict(r, lim, up) {
            if (up) return r <= lim ? "met" : sprintf("**missed by %.0f %%**", (r / lim - 1) * 100)
            return r >= lim ? "met" : sprintf("**missed by %.0f %%**", (1 - r / lim) * 100)
        }
        !/^#/ && $1 == 8 && $crc != "-" && $cico != "-" {
            r = $crc / $cico
            printf "| latency at 8 B, dr2 crc32c / ob1 copy-in/out | %s | ≤ 1.15 | %.3f (%.3f µs / %.3f µs) | %s |\n", where, r, $crc, $cico, verdict(r, 1.15, 1)
        }
        !/^#/ && $1 == 8 && $crc != "-" && $ob1 != "-" {
            r = $crc / $ob1
            printf "| latency at 8 B, dr2 crc32c / ob1 (default) | %s | ≤ 1.15 | %.3f (%.3f µs / %.3f µs) | %s |\n", where, r, $crc, $ob1, verdict(r, 1.15, 1)
        }
        !/^#/ && $1 >= 1048576 && $crc != "-" && $cico != "-" {
            r = $cico / $crc
            if (!n++ || r < worst) { worst = r; wb = $1 }
            sizes = sizes (sizes ? ", " : "") human($1) " " sprintf("%.3f", r)
        }
        END {
            if (n) printf "| bandwidth from 1 MiB up, dr2 crc32c / ob1 copy-in/out (worst size) | %s | ≥ 0.90 | %.3f at %s (%s) | %s |\n", where, worst, human(wb), sizes, verdict(worst, 0.90, 0)
            else printf "| dr2 crc32c against ob1 copy-in/out | %s | | no data: both need runs of this placement (%s) | |\n", where, counts
        }' "$dat"
}

# The dr2/ob1 ratios against the targets (sm, CRC on), one placement at a time: every
# ratio is of medians over runs of the same placement (both cores near or both far), since
# sm's times differ by up to 3x between the two (8 B: 0.10 against 0.35 us) and a median
# over mixed runs compares one placement of dr2 with another of ob1. Runs whose placement
# changed while they ran are in no target.
sm_targets() {
    local where dat
    for where in near far; do
        dat=$(mktemp)
        PLACEMENT=$where aggregate sm-ob1-cico sm-ob1 sm-ob1-cico sm-dr2-crc sm-dr2-none >"$dat"
        sm_targets_of "$dat" "$where"
        rm -f "$dat"
    done
}

plot_bw_lat() {
    local sm=$OUT/dr2-sm.dat tcp=$OUT/dr2-tcp.dat tics panels=0 h
    has_part sm && panels=$((panels + 2))
    has_part tcp && panels=$((panels + 1))
    h=$((panels * 330 + 60))
    tics=$(xtics "$(has_part sm && echo "$sm" || echo "$tcp")")
    {
        gp_common "$h"
        cat <<EOF
set output "$OUT/dr2-bw.png"
set multiplot layout $panels,1 title "NetPIPE-style ping-pong bandwidth: pml dr2 vs ob1\n$header_note"
set xtics ($tics)
set xlabel "message size"
set ylabel "Gbit/s (1e9)"
EOF
        if has_part sm; then
            cat <<EOF
set title "btl sm"
plot "$sm" using 1:$(($(col "$sm" sm-ob1) + 1)) with linespoints lw 2 pt 7 ps 0.6 lc rgb "#7b3294" title "ob1 (CMA single copy)", \
     "$sm" using 1:$(($(col "$sm" sm-ob1-cico) + 1)) with linespoints lw 2 pt 5 ps 0.6 lc rgb "#1a9641" title "ob1 copy-in/out", \
     "$sm" using 1:$(($(col "$sm" sm-dr2-crc) + 1)) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$sm" using 1:$(($(col "$sm" sm-dr2-none) + 1)) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum"
set title "btl sm: bandwidth ratio to ob1 copy-in/out"
set ylabel "dr2 / ob1 copy-in/out"
set yrange [0:1.4<*]
plot "$sm" using 1:$(($(rcol "$sm" sm-dr2-crc) + 1)) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$sm" using 1:$(($(rcol "$sm" sm-dr2-none) + 1)) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum", \
     0.90 with lines dt 2 lw 1.5 lc rgb "#2ca02c" title "target 0.90 (from 1 MiB)", 1.0 with lines lc rgb "black" notitle
set autoscale y
set ylabel "Gbit/s (1e9)"
EOF
        fi
        if has_part tcp; then
            cat <<EOF
set title "btl tcp (loopback)"
plot "$tcp" using 1:$(($(col "$tcp" tcp-ob1) + 1)) with linespoints lw 2 pt 7 ps 0.6 lc rgb "#7b3294" title "ob1", \
     "$tcp" using 1:$(($(col "$tcp" tcp-dr2-crc) + 1)) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$tcp" using 1:$(($(col "$tcp" tcp-dr2-none) + 1)) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum"
EOF
        fi
        echo "unset multiplot"
    } | gnuplot
    # latency of small messages
    {
        gp_common "$h"
        cat <<EOF
set output "$OUT/dr2-lat.png"
set multiplot layout $panels,1 title "NetPIPE-style ping-pong latency (one way), up to 64 KiB: pml dr2 vs ob1\n$header_note"
set xrange [*:65536]
set xtics ($tics)
set xlabel "message size"
set ylabel "µs (one way)"
EOF
        if has_part sm; then
            cat <<EOF
set title "btl sm"
plot "$sm" using 1:$(col "$sm" sm-ob1) with linespoints lw 2 pt 7 ps 0.6 lc rgb "#7b3294" title "ob1 (CMA single copy)", \
     "$sm" using 1:$(col "$sm" sm-ob1-cico) with linespoints lw 2 pt 5 ps 0.6 lc rgb "#1a9641" title "ob1 copy-in/out", \
     "$sm" using 1:$(col "$sm" sm-dr2-crc) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$sm" using 1:$(col "$sm" sm-dr2-none) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum"
set title "btl sm: latency ratio to ob1 copy-in/out"
set ylabel "dr2 / ob1 copy-in/out"
set yrange [0.8<*:1.5<*]
plot "$sm" using 1:$(rcol "$sm" sm-dr2-crc) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$sm" using 1:$(rcol "$sm" sm-dr2-none) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum", \
     1.15 with lines dt 2 lw 1.5 lc rgb "#2ca02c" title "target 1.15 (at 8 B)", 1.0 with lines lc rgb "black" notitle
set autoscale y
set ylabel "µs (one way)"
EOF
        fi
        if has_part tcp; then
            cat <<EOF
set title "btl tcp (loopback)"
plot "$tcp" using 1:$(col "$tcp" tcp-ob1) with linespoints lw 2 pt 7 ps 0.6 lc rgb "#7b3294" title "ob1", \
     "$tcp" using 1:$(col "$tcp" tcp-dr2-crc) with linespoints lw 2 pt 9 ps 0.6 lc rgb "#2c7bb6" title "dr2 crc32c", \
     "$tcp" using 1:$(col "$tcp" tcp-dr2-none) with linespoints lw 2 pt 11 ps 0.6 lc rgb "#fdae61" title "dr2 no checksum"
EOF
        fi
        echo "unset multiplot"
    } | gnuplot
}

# plot_family DAT PNG YSCALE TITLE TAG...: bandwidth of each tag against size (YSCALE: lin, log)
plot_family() {
    local dat=$1 png=$2 yscale=$3 title=$4 plots="" t pt=5
    shift 4
    for t in "$@"; do
        local style="lw 2 pt $pt ps 0.7"
        [ "$t" != sm-ob1-cico ] || style='lw 2 dt 2 pt 5 ps 0.6 lc rgb "black"'
        plots+="${plots:+, }\"$dat\" using 1:$(($(col "$dat" "$t") + 1)) with linespoints $style title \"${cfg_label[$t]}\""
        pt=$((pt + 2))
    done
    {
        gp_common 560
        cat <<EOF
set output "$png"
set title "$title\n$header_note"
set xrange [$bw_min:*]
$([ "$yscale" = log ] && printf 'set logscale y 10\nset format y "%%g"\nset grid mytics')
set xtics ($(awk -v m=$bw_min '!/^#/ && $1 >= m' "$dat" | xtics /dev/stdin))
set xlabel "message size"
set ylabel "Gbit/s (1e9)$([ "$yscale" = log ] && echo ", log scale" || true)"
plot $plots
EOF
    } | gnuplot
}

if has_part sm; then
    aggregate sm-ob1-cico sm-ob1 sm-ob1-cico sm-dr2-crc sm-dr2-none >"$OUT/dr2-sm.dat"
    table "$OUT/dr2-sm.dat" "btl sm" sm-ob1-cico sm-ob1 sm-ob1-cico sm-dr2-crc sm-dr2-none
    sm_targets >"$targets"
fi
if has_part tcp; then
    aggregate tcp-ob1 tcp-ob1 tcp-dr2-crc tcp-dr2-none >"$OUT/dr2-tcp.dat"
    table "$OUT/dr2-tcp.dat" "btl tcp (loopback)" tcp-ob1 tcp-ob1 tcp-dr2-crc tcp-dr2-none
fi
if has_part sm || has_part tcp; then plot_bw_lat; fi
if has_part frag; then
    frag_tags=()
    for f in $FRAGS; do frag_tags+=("$(frag_tag "$f")"); done
    aggregate sm-ob1-cico sm-ob1-cico "${frag_tags[@]}" >"$OUT/dr2-frag.dat"
    table "$OUT/dr2-frag.dat" "dr2 fragment size on btl sm (crc32c)" sm-ob1-cico sm-ob1-cico "${frag_tags[@]}"
    plot_family "$OUT/dr2-frag.dat" "$OUT/dr2-frag.png" lin "pml dr2 (crc32c) on btl sm: fragment size (pml_dr2_frag_size)" \
        sm-ob1-cico "${frag_tags[@]}"
fi
if has_part ofi; then
    ofi_tags=(ofi-ob1-sockets ofi-dr2-sockets ofi-dr2-sockets-64k ofi-ob1-rxd ofi-dr2-rxd)
    aggregate ofi-ob1-sockets "${ofi_tags[@]}" >"$OUT/dr2-ofi.dat"
    table "$OUT/dr2-ofi.dat" "btl ofi (loopback; ratios to ob1 over sockets)" ofi-ob1-sockets "${ofi_tags[@]}"
    aggregate ofi-ob1-rxd ofi-ob1-rxd ofi-dr2-rxd >"$OUT/dr2-ofi-rxd.dat"
    table "$OUT/dr2-ofi-rxd.dat" "btl ofi over udp;ofi_rxd (loopback; ratios to ob1 over it)" ofi-ob1-rxd ofi-ob1-rxd ofi-dr2-rxd
    plot_family "$OUT/dr2-ofi.dat" "$OUT/dr2-ofi.png" log "pml dr2 and ob1 over btl ofi (loopback)" "${ofi_tags[@]}"
fi
if has_part loss; then
    loss_tags=()
    for d in $DROPS; do loss_tags+=("$(drop_tag "$d")"); done
    # with drop 0 the run is sm's dr2 crc32c run (the same configuration)
    [ "${loss_tags[0]}" != sm-dr2-crc ] || cfg_label[sm-dr2-crc]="drop 0 (dr2 crc32c)"
    # ratios to the first drop probability (0: no loss)
    aggregate "${loss_tags[0]}" "${loss_tags[@]}" >"$OUT/dr2-loss.dat"
    table "$OUT/dr2-loss.dat" "dr2 under injected loss on btl sm (crc32c)" "${loss_tags[0]}" "${loss_tags[@]}"
    plot_family "$OUT/dr2-loss.dat" "$OUT/dr2-loss.png" log "pml dr2 (crc32c) on btl sm under injected loss (pml_dr2_inject_drop)" \
        "${loss_tags[@]}"
fi

# dr2's own counters over every run of each dr2 configuration (both processes, all rounds):
# resends and ACK timeouts where nothing was injected are what the protocol wasted.
counters_md=$(for t in "${configs[@]}"; do
    [[ " ${cfg_args[$t]} " == *" pml dr2 "* ]] || continue
    cat "$RAW/$t"-r[0-9]*.txt.err 2>/dev/null | awk -v tag="$t" '
        /pml:dr2: fragments sent/ {
            n++
            for (i = 1; i <= NF; i++) {
                w = $i; gsub(/[^0-9]/, "", w)
                if ($(i - 1) == "sent" && $(i - 2) == "fragments") sent += w
                if ($(i - 1) == "(resent") resent += w
                if ($(i - 1) == "timeouts" && $(i - 2) == "ACK") acks += w
                if ($(i - 1) == "timeouts" && $(i - 2) == "local") local += w
                if ($(i - 1) == "drop") drop += w
            }
        }
        END { if (n) printf "| `%s` | %d | %d | %d | %d | %d | %d |\n", tag, n, sent, drop, resent, acks, local }'
done)

# configuration list for the method section
config_list=$(for t in "${configs[@]}"; do printf -- '- `%s`: %s, `%s`, sizes from %s\n' "$t" "${cfg_label[$t]}" "${cfg_args[$t]}" "$(awk "$human_awk"' BEGIN { print human('"${cfg_min[$t]}"') }')"; done)
rerun="bench/run-dr2.sh"
[ "$PARTS" = "sm tcp frag loss" ] || rerun="PARTS=\"$PARTS\" $rerun"
[ "$ROUNDS" = 3 ] || rerun="ROUNDS=$ROUNDS $rerun"
[ "$QUICK" = 1 ] && rerun="QUICK=1 $rerun"

{
    cat <<EOF
# pml/dr2 against pml/ob1: NetPIPE, shared memory and TCP

Generated by \`$rerun\` on $(date -u +%Y-%m-%d) ($machine).
Not run by CI. Open MPI $ompi_version; \`mpirun -np 2 --oversubscribe --bind-to core${MPIRUN_ARGS:+ $MPIRUN_ARGS}\`
on one node: each rank on a core of its own.$([ "$QUICK" = 1 ] && printf '\n\n**QUICK smoke test (1 round, 20 repetitions per size, no quiet wait): not a measurement.**')

Rerun: \`bench/run-dr2.sh\` (builds and caches NetPIPE on first use; the last full run
took the time given below, quiet waits included; needs the machine to itself). \`PARTS="sm tcp"\`, \`ROUNDS=5\`, \`QUICK=1\`
etc.: see the script's header.

## What was measured

Benchmark: $tool_desc. $method_note
Bandwidth is bytes over that one-way time, in Gbit/s (1e9 bits).
All $nconf configurations ran in each of $ROUNDS rounds, in an order rotating every round,
so that other load and drift hit all alike; tables give the median over rounds. Ratios:
dr2 / ob1 copy-in/out for time (latency) and for bandwidth.

- ob1 copy-in/out: \`${CICO[*]}\` leaves btl/sm without a single-copy (smsc) component, so large
  messages are copied into and out of the shared segment, as dr2 does (it checksums while
  copying). Open MPI 5.0.7 has no \`btl_sm_single_copy_mechanism\` any more (that was
  btl/vader in 4.x); single copy is the smsc framework (by default here: ${smsc_default:-none}).
  Checked: with the knob, no smsc component is selected.
- dr2: $dr2_selected. On sm, the fragment payload is also capped by
  \`btl_sm_max_send_size\` ($sm_max_send) minus dr2's header; the frag sweep raises it to the
  fragment size + $dr2_hdr_room for each point.
- loss: \`pml_dr2_inject_drop\` drops that fraction of the segments dr2 hands to the BTL
  (data, ACKs and NACKs alike); dr2 resends them. NetPIPE reports the best trial, so this is
  the bandwidth with the retransmissions of a typical trial, not the worst case.

Configurations:

$config_list

The measurement took $elapsed s; load averages (1, 5, 15 min) were $load_start before it and
$load_end after. Before each run the script waited up to $QUIET_WAIT s for no other process
to be runnable; $noisy_starts of the $runs runs started without that quiet.
Placement of the two ranks' CPUs (a cache line's round trip before and after each run,
\`bench/cacheline_rtt\`, near: both under $PLACEMENT_NS ns): ${placement_counts:-not measured};
the tables use $([ "$PLACEMENT" = any ] && echo "every run" || echo "the $PLACEMENT runs only").
$( ((${#failed[@]})) && printf '\n**Failed runs** (no data from them): %s.\n' "$(IFS=';'; echo "${failed[*]}")")
$( ((${#anomalies[@]})) && printf '\n**Anomalies**: %s.\n' "$(IFS=';'; echo "${anomalies[*]}")")

EOF
    if [ -s "$targets" ]; then
        cat <<EOF
## Targets (btl sm, CRC on)

Each ratio compares medians over runs of one placement (near: the ranks' cores share a
cache; far: they do not), whatever the tables below use.

| target | placement | required | measured | |
| --- | --- | ---: | --- | --- |
EOF
        cat "$targets"
        printf '\n'
    fi
    printf '## Results\n\n'
    has_part sm || has_part tcp && printf '![bandwidth](dr2-bw.png)\n\n![latency](dr2-lat.png)\n\n'
    has_part frag && printf '![fragment size](dr2-frag.png)\n\n'
    has_part loss && printf '![loss](dr2-loss.png)\n\n'
    has_part ofi && printf '![btl ofi](dr2-ofi.png)\n\n'
    printf 'Tables: time in µs (one way), bandwidth in Gbit/s, medians; also as text in dr2.txt\n'
    printf 'and per size in the dr2-*.dat files.\n'
    cat "$tables_md"
    if [ -n "$counters_md" ]; then
        printf '\n### What dr2 repaired during the measurement\n\n'
        printf 'Sums of the counters each dr2 process prints at MPI_Finalize (`pml_dr2_verbose 2`),\n'
        printf 'over both processes of every round. Resends and ACK timeouts without injected drops\n'
        printf 'are protocol waste (a timer that fired too early); with drops they are the repair.\n\n'
        printf '| configuration | processes | fragments sent | injected drops | resent | ACK timeouts | local timeouts |\n'
        printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
        printf '%s\n' "$counters_md"
    fi
} >"$OUT/dr2.md"
{
    printf 'pml/dr2 vs pml/ob1, %s\n' "$header_note"
    [ -s "$targets" ] && sed -e 's/\*\*//g' -e 's/^| //' -e 's/ |$//' "$targets"
    cat "$tables_txt"
} >"$OUT/dr2.txt"
say "wrote $OUT/dr2.md, dr2.txt and $(ls "$OUT"/dr2-*.png | wc -l) plots"
[ -s "$targets" ] && cat "$targets" >&2
((${#failed[@]} == 0)) || say "failed runs: ${failed[*]}"
((${#anomalies[@]} == 0)) || say "anomalies: ${anomalies[*]}"
