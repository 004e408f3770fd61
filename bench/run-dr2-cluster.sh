#!/usr/bin/env bash
# ompi-resilience: pml/dr2 against pml/ob1 across two simulated hosts (test/cluster/cluster.sh,
# docs/cluster.md) and on one host, every configuration in one run. Not run by CI: needs
# root (network namespaces), a quiet machine, and a few minutes.
#
# Parts (PARTS, default all five):
#   tcp1    ping-pong h0 <-> h1 over one data network (btl tcp, btl_tcp_if_include neta):
#           ob1 and dr2 (its default checksum there: crc32c), and dr2 with btl/tcp's eager
#           limit (64 KiB) instead of its default there (a fragment, 128 KiB)
#   tcp2    the same over both data networks (neta,netb): ob1 (which splits a message over
#           its BTLs by weight) and dr2 striped (vfrags over both paths)
#   stream  a one-way stream (bench/dr2_stream, 1 MiB messages, 8 in flight) h0 -> h1 for
#           STREAM_S seconds: ob1 and dr2 on one network and on two
#   cut     the same stream over two networks for CUT_STREAM_S seconds; the network that
#           carried more of it so far is cut on h1 (iptables DROP, cluster_cut) CUT_AT s into it and healed (cluster_heal) HEAL_AT s
#           into it; the receiver samples its delivered bandwidth every SAMPLE_MS and the
#           kernel's byte counters of both networks. A job that does not end is killed after
#           CUT_STREAM_S + 15 s (a stalled ob1 without the heal would never end).
#   sm      ping-pong on one host over btl sm, ranks bound to a core each: ob1 copy-in/out
#           (--mca smsc ^cma,knem,xpmem: sm copies through its segment, as dr2 does; the fair
#           baseline, docs/dr2-notes.md) and dr2 with its default checksum policy (auto: none
#           on sm)
# Ping-pongs are bench/dr2_pingpong (powers of two from 8 B to MAX_BYTES, TRIALS trials of
# TRIAL_S s per size, the fastest trial, as NetPIPE reports: the one least disturbed by the
# other work on the machine). Every round runs every configuration once, in an
# order rotating every round (dr2 and ob1 of a part run next to each other: ABAB), so that
# drift and other load hit both; tables give medians over the rounds, and the 1-minute
# load average read before each run.
#
# Writes, under OUT (default docs/bench): dr2-cluster.md (tables, targets), dr2-cluster-*.dat
# (medians per size; the timelines), dr2-cluster-bw.png, dr2-cluster-lat.png,
# dr2-cluster-sm.png, dr2-cluster-cut.png. Raw logs under RAW (default BUILD/bench-logs/dr2-cluster).
#
# Usage: bench/run-dr2-cluster.sh          (as root)
# Environment (all optional): BUILD (default _build, installed to BUILD/stage), PARTS,
#   ROUNDS=4, MAX_BYTES=8388608, TRIALS=3, TRIAL_S=0.05, STREAM_S=3, CUT_STREAM_S=7.5,
#   CUT_AT=2, HEAL_AT=4.5, SAMPLE_MS=50, RUN_TIMEOUT=120 (one ping-pong or stream job),
#   QUIET_WAIT=4 (see bench-lib.sh's wait_quiet), TABLES_ONLY=1 (tables and plots again
#   from RAW), OUT, RAW.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
PARTS=${PARTS:-tcp1 tcp2 stream cut sm}
ROUNDS=${ROUNDS:-4}
MAX_BYTES=${MAX_BYTES:-8388608}
TRIALS=${TRIALS:-3}
TRIAL_S=${TRIAL_S:-0.05}
STREAM_S=${STREAM_S:-3}
CUT_STREAM_S=${CUT_STREAM_S:-7.5}
CUT_AT=${CUT_AT:-2}
HEAL_AT=${HEAL_AT:-4.5}
SAMPLE_MS=${SAMPLE_MS:-50}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
QUIET_WAIT=${QUIET_WAIT:-4}
TABLES_ONLY=${TABLES_ONLY:-0}
OUT=${OUT:-$top/docs/bench}
RAW=${RAW:-$BUILD/bench-logs/dr2-cluster}
STREAM_BYTES=1048576
STREAM_WINDOW=8

bench_name=run-dr2-cluster
. "$top/bench/bench-lib.sh"
. "$top/test/cluster/cluster.sh"

has_part() { [[ " $PARTS " == *" $1 "* ]]; }
for p in $PARTS; do
    case $p in tcp1 | tcp2 | stream | cut | sm) ;; *) die "unknown part '$p' (tcp1 tcp2 stream cut sm)" ;; esac
done
bench_require_ompi
[ -f "$COMPONENT_DIR/mca_pml_dr2.so" ] \
    || die "no mca_pml_dr2.so in $COMPONENT_DIR: run 'make && make install' in $BUILD"
bench_require_gnuplot
mkdir -p "$OUT" "$RAW"
OUT=$(cd "$OUT" && pwd) RAW=$(cd "$RAW" && pwd)
export PMIX_MCA_mca_base_component_show_load_errors=0

# ---- the configurations -------------------------------------------------------------------
# kind: pp (ping-pong across hosts), pp-sm (ping-pong on one host), stream, cut
declare -A cfg_args cfg_label cfg_kind
configs=()
add_config() { # TAG KIND LABEL ARGS...
    local tag=$1
    configs+=("$tag")
    cfg_kind[$tag]=$2
    cfg_label[$tag]=$3
    shift 3
    cfg_args[$tag]="$*"
}
# Configurations run in groups (an ob1 configuration and its dr2 counterparts), one group
# after the other; the groups rotate every round, and a group's order reverses every round.
groups=()
add_group() { groups+=("$*"); }
TCP=(--mca btl tcp,self)
NET1=(--mca btl_tcp_if_include neta)
NET2=(--mca btl_tcp_if_include neta,netb)
if has_part tcp1; then
    add_config tcp1-ob1 pp "ob1, one network" --mca pml ob1 "${TCP[@]}" "${NET1[@]}"
    add_config tcp1-dr2 pp "dr2, one network" --mca pml dr2 "${TCP[@]}" "${NET1[@]}"
    # what the default eager limit across a wire (256 KiB) buys against
    # btl/tcp's own (64 KiB, a rendezvous from there)
    add_config tcp1-dr2-e64 pp "dr2, eager limit 64 KiB" --mca pml dr2 "${TCP[@]}" "${NET1[@]}" \
        --mca pml_dr2_eager_limit 65536
    add_group tcp1-ob1 tcp1-dr2 tcp1-dr2-e64
fi
if has_part tcp2; then
    add_config tcp2-ob1 pp "ob1, two networks" --mca pml ob1 "${TCP[@]}" "${NET2[@]}"
    add_config tcp2-dr2 pp "dr2 striped, two networks" --mca pml dr2 "${TCP[@]}" "${NET2[@]}"
    add_group tcp2-ob1 tcp2-dr2
fi
if has_part stream; then
    add_config s1-ob1 stream "ob1, one network" --mca pml ob1 "${TCP[@]}" "${NET1[@]}"
    add_config s1-dr2 stream "dr2, one network" --mca pml dr2 "${TCP[@]}" "${NET1[@]}"
    # where dr2's time goes: without the CRC it still copies each fragment in and out
    add_config s1-dr2-none stream "dr2 without checksum, one network" --mca pml dr2 "${TCP[@]}" "${NET1[@]}" \
        --mca pml_dr2_checksum none
    add_group s1-ob1 s1-dr2 s1-dr2-none
    add_config s2-ob1 stream "ob1, two networks" --mca pml ob1 "${TCP[@]}" "${NET2[@]}"
    add_config s2-dr2 stream "dr2 striped, two networks" --mca pml dr2 "${TCP[@]}" "${NET2[@]}"
    add_group s2-ob1 s2-dr2
fi
if has_part cut; then
    add_config cut-ob1 cut "ob1" --mca pml ob1 "${TCP[@]}" "${NET2[@]}"
    add_config cut-dr2 cut "dr2" --mca pml dr2 "${TCP[@]}" "${NET2[@]}"
    # What faster failover settings buy. A silent cut is noticed after pml_dr2_path_retry_budget
    # ACK timer expiries of one vfrag, each timeout twice the last (docs/dr2-paths.md); and
    # when the cut left segments in the TCP socket, a vfrag's timer starts only once the
    # local-completion watchdog (pml_dr2_local_timeout_us) gave up on them.
    add_config cut-dr2-fast cut "dr2 fast failover" --mca pml dr2 "${TCP[@]}" "${NET2[@]}" \
        --mca pml_dr2_path_retry_budget 2 --mca pml_dr2_local_timeout_us 200000
    add_group cut-ob1 cut-dr2 cut-dr2-fast
fi
if has_part sm; then
    add_config sm-ob1 pp-sm "ob1 copy-in/out" --mca pml ob1 --mca btl sm,self --mca smsc "^cma,knem,xpmem"
    add_config sm-dr2 pp-sm "dr2 (checksum auto)" --mca pml dr2 --mca btl sm,self
    add_group sm-ob1 sm-dr2
fi
nconf=${#configs[@]}
((nconf)) || die "PARTS='$PARTS' names no configuration"

mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$COMPONENT_DIR")
pingpong=$BUILD/bench/dr2_pingpong
stream=$BUILD/bench/dr2_stream
rtt_probe=$BUILD/bench/cacheline_rtt

# ---- one run of each kind ---------------------------------------------------------------------
# Each writes RAW/TAG-rR.* and returns non-zero when the job failed (listed in the report).
# dr2 prints its counters (resends, ACK timeouts, per path) at MPI_Finalize with verbose 2.
run_args() { # TAG: the configuration's mpirun arguments, dr2's counters asked for
    # shellcheck disable=SC2206 # the arguments are a word list on purpose
    run_argv=(${cfg_args[$1]})
    [[ " ${run_argv[*]} " != *" pml dr2 "* ]] || run_argv+=(--mca pml_dr2_verbose 2)
}

# The VM's two vCPUs sit on cores that share a cache or on cores that do not, and the host
# moves them between the two within seconds: a cache line goes back and forth in about 55 ns
# or in about 320 ns, and every run, ob1's and dr2's alike, takes up to twice as long in the
# second state (docs/bench/dr2-cluster-analysis.md). Each run records the round trip before
# and after it (BASE.rtt).
placement_probe() { # BASE: append one round trip (ns) to BASE.rtt
    "$rtt_probe" | awk '{ printf "%s ", $4 }' >>"$1.rtt" || true
}

run_pp() { # TAG BASE
    local tag=$1 base=$2 rc=0 cluster_cmd
    run_args "$tag"
    : >"$base.rtt"
    placement_probe "$base"
    if [ "${cfg_kind[$tag]}" = pp-sm ]; then
        timeout -k 5 "$RUN_TIMEOUT" "${mpirun[@]}" --bind-to core "${run_argv[@]}" -np 2 \
            "$pingpong" 8 "$MAX_BYTES" "$TRIALS" "$TRIAL_S" best >"$base.out" 2>"$base.err" </dev/null || rc=$?
    else
        cluster_mpirun_cmd "${mpirun[@]}" "${run_argv[@]}" --host "$(cluster_hosts_arg 1 2)" -np 2 \
            "$pingpong" 8 "$MAX_BYTES" "$TRIALS" "$TRIAL_S" best
        timeout -k 5 "$RUN_TIMEOUT" "${cluster_cmd[@]}" >"$base.out" 2>"$base.err" </dev/null || rc=$?
        cluster_reap >/dev/null 2>&1 || true
    fi
    placement_probe "$base"
    # bytes, one-way µs, Gbit/s
    awk '!/^#/ && NF == 3 { printf "%d %.4f %.4f\n", $1, $2, $3 * 8 / 1000 }' "$base.out" >"$base.txt"
    [ "$rc" = 0 ] && [ -s "$base.txt" ]
}

run_stream() { # TAG BASE
    local tag=$1 base=$2 rc=0 cluster_cmd
    run_args "$tag"
    : >"$base.rtt"
    placement_probe "$base"
    cluster_mpirun_cmd "${mpirun[@]}" "${run_argv[@]}" --host "$(cluster_hosts_arg 1 2)" -np 2 \
        "$stream" "$STREAM_S" "$STREAM_BYTES" "$STREAM_WINDOW" "$SAMPLE_MS" neta,netb
    timeout -k 5 "$RUN_TIMEOUT" "${cluster_cmd[@]}" >"$base.out" 2>"$base.err" </dev/null || rc=$?
    cluster_reap >/dev/null 2>&1 || true
    placement_probe "$base"
    [ "$rc" = 0 ] && grep -q '^end ' "$base.out"
}

# sleep_until EPOCH: wait until the wall clock (date +%s.%N) reaches EPOCH
sleep_until() {
    local d
    d=$(awk -v t="$1" -v n="$(date +%s.%N)" 'BEGIN { d = t - n; print (d > 0 ? d : 0) }')
    sleep "$d"
}

tcp_snapshot() { # BASE LABEL: append both hosts' TCP connections (ss -tino) to BASE.ss
    local h
    for h in h0 h1; do
        { echo "== $2 $h $(date +%s.%N)"; cluster_exec "$h" ss -tino state all 2>&1; } >>"$1.ss" || true
    done
}

run_cut() { # TAG BASE: the stream through a cut and a heal of neta on h1
    local tag=$1 base=$2 rc=0 job t0 t net cluster_cmd
    run_args "$tag"
    : >"$base.rtt"
    placement_probe "$base"
    cluster_mpirun_cmd "${mpirun[@]}" "${run_argv[@]}" --host "$(cluster_hosts_arg 1 2)" -np 2 \
        "$stream" "$CUT_STREAM_S" "$STREAM_BYTES" "$STREAM_WINDOW" "$SAMPLE_MS" neta,netb
    : >"$base.out"
    timeout -k 5 "$(awk -v s="$CUT_STREAM_S" 'BEGIN { print int(s + 15) }')" "${cluster_cmd[@]}" \
        >"$base.out" 2>"$base.err" </dev/null &
    job=$!
    t0=""
    for ((t = 0; t < 600; t++)); do # the job's start line, 60 s at most
        t0=$(awk '/^start / { print $2; exit }' "$base.out")
        [ -n "$t0" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "$t0" ]; then
        sleep_until "$(awk -v a="$t0" -v b="$CUT_AT" 'BEGIN { printf "%.6f", a + b }')"
        # the network that carried more of the stream so far (dr2 need not split evenly)
        net=$(awk '/^sample / { if (!n++) { a0 = $4; b0 = $5 } a = $4; b = $5 }
                   END { print (b - b0 > a - a0 ? "netb" : "neta") }' "$base.out")
        cluster_cut h1 "$net"
        echo "cut $(date +%s.%N) $net" >"$base.events"
        sleep_until "$(awk -v a="$t0" -v b="$HEAL_AT" 'BEGIN { printf "%.6f", a + b }')"
        echo "dropped $(cluster_dropped h1 "$net")" >>"$base.events"
        cluster_heal h1
        echo "heal $(date +%s.%N)" >>"$base.events"
        # the hosts' TCP connections right after the heal and 1 s later: a path that comes
        # back late waits for its connection's retransmission timer (rto, backoff)
        tcp_snapshot "$base" heal
        (sleep 1 && tcp_snapshot "$base" heal+1s) &
    fi
    wait "$job" || rc=$?
    placement_probe "$base"
    echo "exit $rc" >>"$base.events"
    cluster_reset >/dev/null 2>&1 || true
    [ -n "$t0" ]
}

# ---- the measurement ---------------------------------------------------------------------------
failed=()
if [ "$TABLES_ONLY" != 1 ]; then
    why=$(cluster_unavailable) && die "the cluster cannot run here: $why"
    make -C "$BUILD" bench/dr2_pingpong bench/dr2_stream bench/cacheline_rtt >&2
    [ -f "$BUILD/stage/lib/openmpi/mca_pml_dr2.so" ] || die "no installed dr2 in $BUILD/stage"
    cluster_up 2
    say "cluster $CLUSTER_ID: h0, h1 on neta, netb (data) and netc (management)"
    rm -f "$RAW"/*-r[0-9]*.*
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s)
    date_start=$(date -u '+%Y-%m-%d %H:%M UTC')
    for ((r = 1; r <= ROUNDS; r++)); do
        for ((j = 0; j < ${#groups[@]}; j++)); do
            read -r -a group <<<"${groups[$(((j + r - 1) % ${#groups[@]}))]}"
            ((r % 2)) || for ((k = 0; k < ${#group[@]} / 2; k++)); do # reversed: dr2 first
                t=${group[k]} group[k]=${group[${#group[@]} - 1 - k]} group[${#group[@]} - 1 - k]=$t
            done
            for tag in "${group[@]}"; do
                base=$RAW/$tag-r$r
                say "round $r/$ROUNDS: $tag ($(($(date +%s) - start)) s so far, load $(cut -d' ' -f1 /proc/loadavg))"
                wait_quiet
                cut -d' ' -f1 /proc/loadavg >"$base.load"
                case ${cfg_kind[$tag]} in
                    pp | pp-sm) run_pp "$tag" "$base" || failed+=("$tag round $r") ;;
                    stream) run_stream "$tag" "$base" || failed+=("$tag round $r") ;;
                    cut) run_cut "$tag" "$base" || failed+=("$tag round $r") ;;
                esac
            done
        done
    done
    elapsed=$(($(date +%s) - start))
    load_end=$(cut -d' ' -f1-3 /proc/loadavg)
    cluster_down
    commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$top" diff --quiet HEAD -- ompi bench 2>/dev/null || commit+=" (with uncommitted changes)"
    {
        for v in elapsed load_start load_end date_start commit noisy_starts runs ROUNDS PARTS MAX_BYTES \
                 TRIALS TRIAL_S STREAM_S CUT_STREAM_S CUT_AT HEAL_AT SAMPLE_MS QUIET_WAIT; do
            printf '%s=%q\n' "$v" "${!v}"
        done
        printf 'failed=(%s)\n' "$( ((${#failed[@]})) && printf '%q ' "${failed[@]}")"
    } >"$RAW/meta.sh"
    say "measured in $elapsed s"
else
    [ -f "$RAW/meta.sh" ] || die "TABLES_ONLY=1 but no $RAW/meta.sh"
    # shellcheck disable=SC1091
    . "$RAW/meta.sh"
fi

# ---- tables --------------------------------------------------------------------------------------
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'
median_awk='function median(a, n,   i, j, x) {
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'

# load_of TAG...: "min-max (median M)" of the 1-minute load averages before those runs
load_of() {
    local t
    for t in "$@"; do cat "$RAW/$t"-r*.load 2>/dev/null; done \
        | awk "$median_awk"' { v[++n] = $1 } END { if (!n) { print "-"; exit }
            m = median(v, n); printf "%.2f-%.2f (median %.2f)", v[1], v[n], m }'
}

# pp_aggregate OB1 DR2 [DR2_OTHER]: per size, medians over rounds of each tag's one-way µs,
# the dr2/ob1 time ratio and ob1/dr2 bandwidth ratio of the medians, and the range of the
# per-round ratios (round r of dr2 against round r of ob1, run side by side).
# Columns: bytes ob1_us ob1_gbps dr2_us dr2_gbps time_ratio bw_ratio bw_ratio_min bw_ratio_max
#          time_ratio_min time_ratio_max [other_us other_gbps dr2_over_other_bw]
pp_aggregate() {
    local f files=()
    for f in "$RAW/$1"-r*.txt "$RAW/$2"-r*.txt ${3:+"$RAW/$3"-r*.txt}; do [ -s "$f" ] && files+=("$f"); done
    ((${#files[@]})) || return 0
    awk -v a="$1" -v b="$2" -v c="${3:-}" "$median_awk"'
        FNR == 1 { f = FILENAME; sub(/.*\//, "", f); r = f; sub(/-r[0-9]+\.txt$/, "", f); sub(/.*-r/, "", r); sub(/\.txt$/, "", r) }
        NF == 3 { if (!($1 in seen)) { seen[$1] = 1; sizes[++ns] = $1 }; t[f, $1, r] = $2; n[f, $1]++; v[f, $1, n[f, $1]] = $2; if (r > maxr) maxr = r }
        function med(tag, s,   k, x) { for (k = 1; k <= n[tag, s]; k++) x[k] = v[tag, s, k]; return n[tag, s] ? median(x, n[tag, s]) : 0 }
        END {
            for (i = 2; i <= ns; i++) { x = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > x; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = x }
            for (i = 1; i <= ns; i++) {
                s = sizes[i]; ta = med(a, s); tb = med(b, s)
                if (!ta || !tb) continue
                lo = 1e9; hi = 0; tlo = 1e9; thi = 0
                for (q = 1; q <= maxr; q++) if (((a, s, q) in t) && ((b, s, q) in t)) {
                    x = t[a, s, q] / t[b, s, q]; if (x < lo) lo = x; if (x > hi) hi = x
                    y = t[b, s, q] / t[a, s, q]; if (y < tlo) tlo = y; if (y > thi) thi = y
                }
                printf "%d %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f", s, ta, s * 8 / ta / 1000, tb, s * 8 / tb / 1000, tb / ta, ta / tb, lo, hi, tlo, thi
                if (c != "") { tc = med(c, s); if (tc) printf " %.4f %.4f %.4f", tc, s * 8 / tc / 1000, tc / tb; else printf " - - -" }
                printf "\n"
            }
        }' "${files[@]}"
}

# stream_rate BASE: the stream's delivered Gbit/s from 0.5 s after its start to its last sample
stream_rate() {
    awk '/^sample / { if (!t0) t0 = $2; if ($2 >= t0 + 0.5 && !ta) { ta = $2; ba = $3 } tb = $2; bb = $3 }
         END { if (tb > ta && ta) printf "%.3f\n", (bb - ba) * 8 / (tb - ta) / 1e9 }' "$1.out"
}

# stream_median TAG: the median over rounds of stream_rate
stream_median() {
    local f
    for f in "$RAW/$1"-r*.out; do [ -f "$f" ] && stream_rate "${f%.out}"; done \
        | awk "$median_awk"' NF { v[++n] = $1 } END { if (n) printf "%.3f", median(v, n); else printf "-" }'
}

# cut_timeline BASE: per sample: seconds since the cut, delivered Gbit/s, neta and netb
# Gbit/s (wire bytes received by h1) over the interval that ends at the sample.
cut_timeline() {
    local tc
    tc=$(awk '$1 == "cut" { print $2 }' "$1.events" 2>/dev/null)
    [ -n "$tc" ] || return 0
    awk -v tc="$tc" '/^sample / {
            if (pt) printf "%.3f %.3f %.3f %.3f\n", $2 - tc, ($3 - pb) * 8 / ($2 - pt) / 1e9, ($4 - pa) * 8 / ($2 - pt) / 1e9, ($5 - pn) * 8 / ($2 - pt) / 1e9
            pt = $2; pb = $3; pa = $4; pn = $5 }' "$1.out"
}

# cut_metrics BASE [ONE_NET_GBPS]: "pre during_mean recover_s heal_s stall_s share_pre
# share_post ref"
#   pre: Gb/s from 0.5 s after the start to the cut; ref, the reference: one network's
#   bandwidth, ONE_NET_GBPS (the median stream on one network of this measurement), or pre
#   if that is lower (two networks carry at least what one does, and the machine may have
#   been busier during this run than during the streams); recover: seconds from the cut
#   until the first 0.5 s window (ending before the heal) averaging >= 0.9 x ref (- if
#   none); during: Gb/s from the cut to the heal; heal: seconds from the heal until the
#   first 0.5 s window averaging >= 0.9 x ref with each network carrying >= 5 % of the wire
#   bytes (- if none); stall: the longest time without a delivered byte after the cut;
#   share: netb's share of the wire bytes before the cut and in the last 2 s.
cut_metrics() {
    local base=$1 th
    th=$(awk '$1 == "heal" { printf "%.6f", $2 }' "$base.events" 2>/dev/null)
    cut_timeline "$base" | awk -v th="$th" -v one_net="${2:-}" -v tc0="$(awk '$1 == "cut" { print $2 }' "$base.events")" '
        { n++; t[n] = $1; g[n] = $2; a[n] = $3; b[n] = $4 }
        function window(i, need_both,   j, s, sa, sb, k, span) {   # mean over [t[i], t[i] + 0.5)
            s = sa = sb = k = 0
            for (j = i + 1; j <= n && t[j] <= t[i] + 0.5 + 1e-9; j++) { s += g[j]; sa += a[j]; sb += b[j]; k++ }
            if (k < 5) return 0
            if (need_both && (sa < 0.05 * (sa + sb) || sb < 0.05 * (sa + sb))) return 0
            return s / k >= 0.9 * one
        }
        END {
            hs = th - tc0; t_first = t[1]
            for (i = 1; i <= n; i++) {
                if (t[i] < 0 && t[i] >= t_first + 0.5) { pre += g[i]; npre++; pa += a[i]; pb += b[i] }
                if (t[i] > 0 && t[i] <= hs) { dur += g[i]; ndur++ }
                if (t[i] > t[n] - 2) { qa += a[i]; qb += b[i] }
            }
            one = npre ? pre / npre : 0
            if (one_net != "" && one_net != "-" && one_net + 0 > 0 && one_net + 0 < one) one = one_net + 0
            rec = "-"; for (i = 1; i <= n; i++) if (t[i] >= 0 && t[i] + 0.5 <= hs && window(i, 0)) { rec = sprintf("%.2f", t[i]); break }
            hr = "-"; for (i = 1; i <= n; i++) if (t[i] >= hs && window(i, 1)) { hr = sprintf("%.2f", t[i] - hs); break }
            # the longest stretch of samples with nothing delivered, after the cut
            run = best = 0
            for (i = 2; i <= n; i++) if (t[i] > 0) { if (g[i] == 0) { run += t[i] - t[i - 1]; if (run > best) best = run } else run = 0 }
            printf "%.2f %.2f %s %s %.2f %.0f %.0f %.2f\n", npre ? pre / npre : 0, ndur ? dur / ndur : 0, rec, hr, best,
                pa + pb ? 100 * pb / (pa + pb) : 0, qa + qb ? 100 * qb / (qa + qb) : 0, one
        }'
}

# dr2's counters at MPI_Finalize (pml_dr2_verbose 2), summed over processes and rounds
dr2_counters() { # TAG
    cat "$RAW/$1"-r[0-9]*.err 2>/dev/null | awk -v tag="$1" '
        /pml:dr2: fragments sent/ {
            p++
            for (i = 1; i <= NF; i++) {
                w = $i; gsub(/[^0-9]/, "", w)
                if ($(i - 1) == "sent" && $(i - 2) == "fragments") sent += w
                if ($(i - 1) == "(resent") resent += w
                if ($(i - 1) == "timeouts" && $(i - 2) == "ACK") acks += w
            }
        }
        END { if (p) printf "| `%s` | %d | %d | %d | %d |\n", tag, p, sent, resent, acks }'
}

machine="$(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -r)"
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')
note="Open MPI $ompi_version, $machine; median of $ROUNDS interleaved rounds"
gp_common() { # HEIGHT
    printf 'set terminal pngcairo noenhanced size 1000,%s font "sans,11"\n' "$1"
    printf 'set datafile missing "-"\nset grid xtics ytics\nset key top left box opaque\n'
}
xtics_pow2='("8 B" 8, "64 B" 64, "512 B" 512, "4 KiB" 4096, "32 KiB" 32768, "256 KiB" 262144, "2 MiB" 2097152, "16 MiB" 16777216)'

targets=$(mktemp) tables=$(mktemp)
trap 'rm -f "$targets" "$tables"' EXIT
verdict() { # VALUE OP LIMIT -> met / missed
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { if (v == "" || v == "-") { print "no data"; exit }
        ok = op == ">=" ? v >= l : v <= l; print ok ? "met" : "**missed**" }'
}

# pp_table DAT TITLE OB1 DR2 [OTHER]: markdown table of a pp_aggregate file
pp_table() {
    local dat=$1 title=$2 a=$3 b=$4 c=${5:-}
    {
        printf '\n### %s\n\nLoad average (1 min) before the runs: %s.\n\n' "$title" "$(load_of "$a" "$b" ${c:+"$c"})"
        printf '| size | %s µs | %s µs | time ratio | %s Gb/s | %s Gb/s | bw ratio | bw ratio per round |' \
            "${cfg_label[$a]}" "${cfg_label[$b]}" "${cfg_label[$a]}" "${cfg_label[$b]}"
        [ -z "$c" ] || printf ' %s Gb/s | %s / %s |' "${cfg_label[$c]}" "${cfg_label[$b]%%,*}" "${cfg_label[$c]}"
        printf '\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
        [ -z "$c" ] || printf ' ---: | ---: |'
        printf '\n'
        awk -v c="$c" "$human_awk"'{ printf "| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f-%.2f |", human($1), $2, $4, $6, $3, $5, $7, $8, $9
            if (c != "") printf " %s | %s |", ($13 == "-" ? "–" : sprintf("%.2f", $13)), ($14 == "-" ? "–" : sprintf("%.3f", $14))
            printf "\n" }' "$dat"
    } >>"$tables"
}

# pp_same_cache_table A B: B's bandwidth over A's per size, median over the rounds in which
# every placement probe of both runs found the cores sharing a cache (under 150 ns).
pp_same_cache_table() {
    local a=$1 b=$2 r rounds=() all=0 f
    for f in "$RAW/$a"-r*.txt; do
        [ -s "$f" ] || continue
        r=${f##*-r}; r=${r%.txt}; all=$((all + 1))
        cat "$RAW/$a-r$r.rtt" "$RAW/$b-r$r.rtt" 2>/dev/null \
            | awk '{ for (i = 1; i <= NF; i++) { n++; if ($i >= 150) far++ } } END { exit !(n >= 4 && !far) }' \
            && rounds+=("$r")
    done
    {
        printf '\nPlacement (bench/cacheline_rtt before and after each run): the cores shared a cache for both runs of %d of %d rounds%s.\n' \
            "${#rounds[@]}" "$all" "$( ((${#rounds[@]})) && printf ' (%s)' "${rounds[*]}")"
        if ((${#rounds[@]})); then
            printf '\n| size | %s / %s bandwidth, those rounds (median) | range |\n| ---: | ---: | :---: |\n' \
                "${cfg_label[$b]}" "${cfg_label[$a]}"
            for r in "${rounds[@]}"; do
                join <(sort -k1,1 "$RAW/$a-r$r.txt") <(sort -k1,1 "$RAW/$b-r$r.txt") | awk '{ print $1, $2 / $4 }'
            done | awk "$median_awk$human_awk"'
                { if (!($1 in n)) sizes[++ns] = $1; v[$1, ++n[$1]] = $2 }
                END {
                    for (i = 2; i <= ns; i++) { x = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > x; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = x }
                    for (i = 1; i <= ns; i++) {
                        s = sizes[i]; lo = 1e9; hi = 0
                        for (k = 1; k <= n[s]; k++) { r[k] = v[s, k]; if (r[k] < lo) lo = r[k]; if (r[k] > hi) hi = r[k] }
                        printf "| %s | %.3f | %.2f-%.2f |\n", human(s), median(r, n[s]), lo, hi
                    }
                }'
        fi
    } >>"$tables"
}

# pp_targets DAT LABEL MIN_BW_BYTES BW_LIMIT LAT_LIMIT
pp_targets() {
    local dat=$1 label=$2 min=$3 bwl=$4 latl=$5 lat worst at
    [ -s "$dat" ] || return 0
    lat=$(awk '$1 == 8 { printf "%.3f", $6 }' "$dat")
    printf '| %s: latency at 8 B, dr2 / ob1 | ≤ %s | %s (%s µs / %s µs) | %s |\n' "$label" "$latl" "${lat:--}" \
        "$(awk '$1 == 8 { printf "%.2f", $4 }' "$dat")" "$(awk '$1 == 8 { printf "%.2f", $2 }' "$dat")" \
        "$(verdict "$lat" "<=" "$latl")" >>"$targets"
    read -r worst at < <(awk -v m="$min" '$1 >= m { if (!n++ || $7 < w) { w = $7; s = $1 } } END { if (n) printf "%.3f %d\n", w, s; else print "- 0" }' "$dat")
    printf '| %s: bandwidth from %s up, dr2 / ob1 (worst size) | ≥ %s | %s at %s (all: %s) | %s |\n' "$label" \
        "$(awk "$human_awk"' BEGIN { print human('"$min"') }')" "$bwl" "$worst" "$(awk "$human_awk"' BEGIN { print human('"$at"') }')" \
        "$(awk -v m="$min" "$human_awk"' $1 >= m { printf "%s%s %.2f", (n++ ? ", " : ""), human($1), $7 }' "$dat")" \
        "$(verdict "$worst" ">=" "$bwl")" >>"$targets"
}

one_net_gbps=""
if has_part tcp1; then
    pp_aggregate tcp1-ob1 tcp1-dr2 tcp1-dr2-e64 >"$OUT/dr2-cluster-tcp1.dat"
    pp_table "$OUT/dr2-cluster-tcp1.dat" "a. Two hosts, one network (neta): ping-pong" tcp1-ob1 tcp1-dr2 \
        tcp1-dr2-e64
    pp_targets "$OUT/dr2-cluster-tcp1.dat" "a. one network" 65536 0.95 1.10
    pp_same_cache_table tcp1-ob1 tcp1-dr2
fi
if has_part tcp2; then
    pp_aggregate tcp2-ob1 tcp2-dr2 "$(has_part tcp1 && echo tcp1-dr2)" >"$OUT/dr2-cluster-tcp2.dat"
    pp_table "$OUT/dr2-cluster-tcp2.dat" "b. Two hosts, two networks (neta, netb): ping-pong" tcp2-ob1 tcp2-dr2 \
        "$(has_part tcp1 && echo tcp1-dr2)"
    pp_targets "$OUT/dr2-cluster-tcp2.dat" "b. two networks, striped" 65536 1.0 1.10
    pp_same_cache_table tcp2-ob1 tcp2-dr2
    if has_part tcp1; then
        read -r worst at < <(awk '$1 >= 65536 && $14 != "-" { x = $14; if (!n++ || x < w) { w = x; s = $1 } } END { if (n) printf "%.3f %d\n", w, s; else print "- 0" }' "$OUT/dr2-cluster-tcp2.dat")
        printf '| b. ping-pong from 64 KiB up, dr2 striped / dr2 on one network (worst size) | ≥ 1.0 | %s at %s | %s |\n' \
            "$worst" "$(awk "$human_awk"' BEGIN { print human('"$at"') }')" "$(verdict "$worst" ">=" 1.0)" >>"$targets"
    fi
fi
if has_part stream; then
    declare -A srate
    for t in s1-ob1 s1-dr2 s1-dr2-none s2-ob1 s2-dr2; do srate[$t]=$(stream_median "$t"); done
    one_net_gbps=${srate[s1-dr2]}
    {
        printf '\n### b. Streaming bandwidth, one and two networks\n\n'
        printf 'bench/dr2_stream h0 -> h1: %s messages of 1 MiB in flight for %s s; delivered Gbit/s from 0.5 s\n' "$STREAM_WINDOW" "$STREAM_S"
        printf 'after the start to the end, median over rounds (per round in brackets). Load average (1 min): %s.\n\n' \
            "$(load_of s1-ob1 s1-dr2 s1-dr2-none s2-ob1 s2-dr2)"
        printf '| | ob1 Gb/s | dr2 Gb/s | dr2 / ob1 |\n| --- | ---: | ---: | ---: |\n'
        for n in 1 2; do
            printf '| %s | %s (%s) | %s (%s) | %s |\n' "$([ $n = 1 ] && echo "one network" || echo "two networks")" \
                "${srate[s$n-ob1]}" "$(for f in "$RAW/s$n-ob1"-r*.out; do stream_rate "${f%.out}"; done | paste -sd' ')" \
                "${srate[s$n-dr2]}" "$(for f in "$RAW/s$n-dr2"-r*.out; do stream_rate "${f%.out}"; done | paste -sd' ')" \
                "$(awk -v a="${srate[s$n-ob1]}" -v b="${srate[s$n-dr2]}" 'BEGIN { if (a > 0 && b != "-") printf "%.3f", b / a; else printf "-" }')"
        done
        printf '| one network, dr2 without checksum | | %s (%s) | %s |\n' "${srate[s1-dr2-none]}" \
            "$(for f in "$RAW"/s1-dr2-none-r*.out; do stream_rate "${f%.out}"; done | paste -sd' ')" \
            "$(awk -v a="${srate[s1-ob1]}" -v b="${srate[s1-dr2-none]}" 'BEGIN { if (a > 0 && b != "-") printf "%.3f", b / a; else printf "-" }')"
        printf '\ndr2 striped over two networks / dr2 on one: %s. netb'"'"'s share of the wire bytes in the dr2 two-network streams (per round): %s %%.\n' \
            "$(awk -v a="${srate[s1-dr2]}" -v b="${srate[s2-dr2]}" 'BEGIN { if (a > 0 && b != "-") printf "%.3f", b / a; else printf "-" }')" \
            "$(for f in "$RAW"/s2-dr2-r*.out; do awk '/^sample / { if (!a0) { a0 = $4; b0 = $5 } a = $4; b = $5 } END { if (a + b - a0 - b0 > 0) printf "%.0f\n", 100 * (b - b0) / (a + b - a0 - b0) }' "$f"; done | paste -sd' ')"
    } >>"$tables"
    r=$(awk -v a="${srate[s2-ob1]}" -v b="${srate[s2-dr2]}" 'BEGIN { if (a > 0 && b != "-") printf "%.3f", b / a; else printf "-" }')
    printf '| b. stream, two networks: dr2 striped / ob1 | ≥ 1.0 | %s (%s / %s Gb/s) | %s |\n' "$r" "${srate[s2-dr2]}" "${srate[s2-ob1]}" "$(verdict "$r" ">=" 1.0)" >>"$targets"
    r=$(awk -v a="${srate[s1-dr2]}" -v b="${srate[s2-dr2]}" 'BEGIN { if (a > 0 && b != "-") printf "%.3f", b / a; else printf "-" }')
    printf '| b. stream: dr2 striped / dr2 on one network | ≥ 1.0 | %s | %s |\n' "$r" "$(verdict "$r" ">=" 1.0)" >>"$targets"
fi
if has_part cut; then
    {
        printf '\n### c. Bandwidth through a cut and a heal\n\n'
        printf 'bench/dr2_stream h0 -> h1 over neta and netb for %s s, delivered bandwidth sampled every %s ms by the receiver;\n' "$CUT_STREAM_S" "$SAMPLE_MS"
        printf 'the network that carried more of it so far cut on h1 (iptables DROP, in and out) %s s into the stream,\nhealed at %s s. One network'"'"'s ' "$CUT_AT" "$HEAL_AT"
        printf 'bandwidth (the reference): dr2'"'"'s median stream on one network above (%s Gb/s), or the run'"'"'s own rate\nbefore the cut where that is lower (two networks carry at least what one does). Load average (1 min): %s.\n\n' "${one_net_gbps:-none measured}" "$(load_of cut-ob1 cut-dr2 cut-dr2-fast)"
        printf 'Columns: before the cut (Gb/s, from 0.5 s in); cut to heal (mean Gb/s); recovery: seconds from the cut\n'
        printf 'to the first 0.5 s (ending before the heal) averaging ≥ 0.9x the reference; after heal: seconds from the heal to the first 0.5 s\n'
        printf 'averaging ≥ 0.9x the reference with each network carrying ≥ 5 %% of the wire bytes; longest stall\n'
        printf '(s without a delivered byte, after the cut); netb'"'"'s share of the wire bytes before the cut and in the\n'
        printf 'last 2 s; paths taken down and back up by dr2 (its log: a down before the cut is a false failover);\n'
        printf 'the job'"'"'s exit (124: killed by the timeout); a cache line'"'"'s round trip between the two cores before and after the run (about 55 ns: they share a cache; about 320 ns: they do not, and every run is slower).\n\n'
        printf '| run | network cut | before | cut to heal | recovery s | after heal s | stall s | netb %% before / end | downs / ups | exit | cache line ns, before / after |\n'
        printf '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
        for t in cut-dr2 cut-dr2-fast cut-ob1; do
            for f in "$RAW/$t"-r*.out; do
                [ -f "${f%.out}.events" ] || continue
                rr=${f%.out}; rr=${rr##*-r}
                cut_metrics "${f%.out}" "$one_net_gbps" | awk -v tag="$t round $rr" -v ex="$(awk '$1 == "exit" { print $2 }' "${f%.out}.events")" \
                    -v net="$(awk '$1 == "cut" { print $3 }' "${f%.out}.events")" \
                    -v du="$(grep -c ') is down' "${f%.out}.err" || true) / $(grep -c ') is up again' "${f%.out}.err" || true)" \
                    -v place="$(awk '{ printf "%s", (NF ? $1 " / " $NF : "–") }' "${f%.out}.rtt" 2>/dev/null)" \
                    '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s |\n", tag, net, $1, $2, $3, $4, $5, $6, $7, (tag ~ /ob1/ ? "–" : du), ex, (place == "" ? "–" : place) }'
            done
        done
    } >>"$tables"
    cut_targets() { # TAG LABEL
        local recs heals worst_rec worst_heal f
        recs=$(for f in "$RAW/$1"-r*.out; do [ -f "${f%.out}.events" ] && cut_metrics "${f%.out}" "$one_net_gbps" | awk '{ print $3 }'; done | paste -sd' ')
        heals=$(for f in "$RAW/$1"-r*.out; do [ -f "${f%.out}.events" ] && cut_metrics "${f%.out}" "$one_net_gbps" | awk '{ print $4 }'; done | paste -sd' ')
        worst_rec=$(echo "$recs" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "-") { print "-"; exit } if ($i > w) w = $i } printf "%.2f\n", w }')
        worst_heal=$(echo "$heals" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "-") { print "-"; exit } if ($i > w) w = $i } printf "%.2f\n", w }')
        # a round that never got there is a miss ("-"), not missing data
        printf '| c. %s: from the cut to ≥ 0.9x one network (s, worst round) | ≤ 1.0 | %s (rounds: %s) | %s |\n' "$2" "$worst_rec" "$recs" \
            "$([ -n "$recs" ] && [ "$worst_rec" = - ] && echo "**missed**" || verdict "$worst_rec" "<=" 1.0)" >>"$targets"
        printf '| c. %s: from the heal to both networks at ≥ 0.9x one network (s, worst round) | ≤ 2.0 | %s (rounds: %s) | %s |\n' "$2" "$worst_heal" "$heals" \
            "$([ -n "$heals" ] && [ "$worst_heal" = - ] && echo "**missed**" || verdict "$worst_heal" "<=" 2.0)" >>"$targets"
    }
    cut_targets cut-dr2 "dr2 (defaults)"
    cut_targets cut-dr2-fast "dr2 fast failover (not the default)"
fi
if has_part sm; then
    pp_aggregate sm-ob1 sm-dr2 >"$OUT/dr2-cluster-sm.dat"
    pp_table "$OUT/dr2-cluster-sm.dat" "d. One host, btl sm: dr2 (checksum auto) against ob1 copy-in/out" sm-ob1 sm-dr2
    pp_targets "$OUT/dr2-cluster-sm.dat" "d. sm" 1048576 0.97 1.10
    pp_same_cache_table sm-ob1 sm-dr2
fi

# ---- plots -----------------------------------------------------------------------------------------
plot_pp() { # PNG TITLE XMIN XMAX COLUMN(5: bw; 4: µs) then DAT:LABEL:COL triples
    local png=$1 title=$2 xmin=$3 xmax=$4 ylabel=$5 plots="" spec dat label col pt=7
    shift 5
    for spec in "$@"; do
        IFS='|' read -r dat label col <<<"$spec"
        [ -s "$dat" ] || continue
        plots+="${plots:+, }\"$dat\" using 1:$col with linespoints lw 2 pt $pt ps 0.7 title \"$label\""
        pt=$((pt + 2))
    done
    [ -n "$plots" ] || return 0
    {
        gp_common 560
        cat <<EOF
set output "$png"
set title "$title\n$note"
set logscale x 2
set xrange [$xmin:$xmax]
set xtics $xtics_pow2
set xlabel "message size"
set ylabel "$ylabel"
plot $plots
EOF
    } | gnuplot
}

d1=$OUT/dr2-cluster-tcp1.dat d2=$OUT/dr2-cluster-tcp2.dat dsm=$OUT/dr2-cluster-sm.dat
if has_part tcp1 || has_part tcp2; then
    plot_pp "$OUT/dr2-cluster-bw.png" "ping-pong bandwidth across two simulated hosts (veth, btl tcp)" 4096 "$MAX_BYTES" "Gbit/s (1e9)" \
        "$d1|ob1, one network|3" "$d1|dr2, one network|5" "$d2|ob1, two networks|3" "$d2|dr2 striped, two networks|5"
    plot_pp "$OUT/dr2-cluster-lat.png" "ping-pong latency (one way) across two simulated hosts" 8 65536 "µs" \
        "$d1|ob1, one network|2" "$d1|dr2, one network|4" "$d2|ob1, two networks|2" "$d2|dr2 striped, two networks|4"
fi
if has_part sm; then
    {
        gp_common 700
        cat <<EOF
set output "$OUT/dr2-cluster-sm.png"
set multiplot layout 2,1 title "btl sm, one host: dr2 (checksum auto) against ob1 copy-in/out\n$note"
set logscale x 2
set xtics $xtics_pow2
set xlabel "message size"
set ylabel "Gbit/s (1e9)"
plot "$dsm" using 1:3 with linespoints lw 2 pt 5 ps 0.6 title "ob1 copy-in/out", "$dsm" using 1:5 with linespoints lw 2 pt 9 ps 0.6 title "dr2 (auto)"
set ylabel "dr2 / ob1"
set yrange [0.5:1.5]
plot "$dsm" using 1:7 with linespoints lw 2 pt 9 ps 0.6 title "bandwidth ratio", "$dsm" using 1:6 with linespoints lw 2 pt 5 ps 0.6 title "time ratio", 0.97 with lines dt 2 title "target bw 0.97 (from 1 MiB)", 1.10 with lines dt 3 title "target time 1.10"
unset multiplot
EOF
    } | gnuplot
fi
if has_part cut; then
    # the round whose dr2 recovery is the median one, and ob1 of the same round
    pick=$(for f in "$RAW"/cut-dr2-r*.out; do [ -f "${f%.out}.events" ] || continue; rr=${f%.out}; rr=${rr##*-r}
        cut_metrics "${f%.out}" "$one_net_gbps" | awk -v r="$rr" '{ print ($3 == "-" ? 99 : $3), r }'; done | sort -n | awk '{ v[++n] = $2 } END { if (n) print v[int((n + 1) / 2)] }')
    if [ -n "$pick" ]; then
        cut_timeline "$RAW/cut-dr2-r$pick" >"$OUT/dr2-cluster-cut-dr2.dat"
        cut_timeline "$RAW/cut-ob1-r$pick" >"$OUT/dr2-cluster-cut-ob1.dat" || true
        cut_timeline "$RAW/cut-dr2-fast-r$pick" >"$OUT/dr2-cluster-cut-dr2-fast.dat" || true
        one_ref=$(cut_metrics "$RAW/cut-dr2-r$pick" "$one_net_gbps" | awk '{ print $8 }')
        heal_rel=$(awk '$1 == "cut" { c = $2 } $1 == "heal" { h = $2 } END { printf "%.2f", h - c }' "$RAW/cut-dr2-r$pick.events")
        {
            gp_common 900
            cat <<EOF
set output "$OUT/dr2-cluster-cut.png"
set multiplot layout 2,1 title "Bandwidth through a cut and a heal of one of two networks (h0 -> h1, 1 MiB messages, 8 in flight), round $pick\n$note"
unset xlabel
set ylabel "delivered Gbit/s (every $SAMPLE_MS ms)"
set arrow 1 from 0, graph 0 to 0, graph 1 nohead lw 2 lc rgb "red"
set arrow 2 from $heal_rel, graph 0 to $heal_rel, graph 1 nohead lw 2 lc rgb "dark-green"
set label 1 "cut $(awk '$1 == "cut" { print $3 }' "$RAW/cut-dr2-r$pick.events")" at 0.05, graph 0.95 tc rgb "red"
set label 2 "heal" at $heal_rel + 0.05, graph 0.95 tc rgb "dark-green"
set key below box
plot "$OUT/dr2-cluster-cut-dr2.dat" using 1:2 with lines lw 2 lc rgb "#2c7bb6" title "dr2", \
     "$OUT/dr2-cluster-cut-ob1.dat" using 1:2 with lines lw 2 lc rgb "#d7191c" title "ob1", \
     "$OUT/dr2-cluster-cut-dr2-fast.dat" using 1:2 with lines lw 1 lc rgb "#fdae61" title "dr2 fast failover (retry budget 2, local timeout 0.2 s)", \
     $one_ref with lines dt 2 lc rgb "black" title "one network (the reference)", \
     0.9 * $one_ref with lines dt 3 lc rgb "gray" title "0.9x that"
set xlabel "seconds since the cut (each run aligned on its own cut; heals within 20 ms of the line shown)"
set title "wire bytes received by h1 per network (kernel counters; a cut network's dropped retransmissions included)"
set ylabel "Gbit/s"
plot "$OUT/dr2-cluster-cut-dr2.dat" using 1:3 with lines lw 1.5 lc rgb "#2c7bb6" title "dr2 neta", \
     "$OUT/dr2-cluster-cut-dr2.dat" using 1:4 with lines lw 1.5 dt 2 lc rgb "#2c7bb6" title "dr2 netb", \
     "$OUT/dr2-cluster-cut-ob1.dat" using 1:3 with lines lw 1.5 lc rgb "#d7191c" title "ob1 neta", \
     "$OUT/dr2-cluster-cut-ob1.dat" using 1:4 with lines lw 1.5 dt 2 lc rgb "#d7191c" title "ob1 netb"
unset multiplot
EOF
        } | gnuplot
    fi
fi

# ---- the report ------------------------------------------------------------------------------------
counters=$(for t in "${configs[@]}"; do [[ " ${cfg_args[$t]} " == *" pml dr2 "* ]] && dr2_counters "$t"; done || true)
config_list=$(for t in "${configs[@]}"; do printf -- '- `%s` (%s): %s, `%s`\n' "$t" "${cfg_kind[$t]}" "${cfg_label[$t]}" "${cfg_args[$t]}"; done)
{
    cat <<EOF
# pml/dr2 against pml/ob1 across two hosts, on two networks, through a cut, and on sm

Generated by \`bench/run-dr2-cluster.sh\` (not CI; as root), started $date_start, at commit
$commit, on $machine, Open MPI $ompi_version. The measurement took $elapsed s; load
averages (1, 5, 15 min) were $load_start before it and $load_end after: other
builds and tests shared the 2 cores, so every table gives the load average read before
its runs and compares dr2 and ob1 runs made side by side (each round runs every
configuration once, dr2 and ob1 of a part one after the other, their order swapped every
round). Before each run the script waited up to $QUIET_WAIT s for a quiet machine; $noisy_starts
of the $runs runs started without it.

The two hosts are network namespaces of the same VM (test/cluster/cluster.sh,
docs/cluster.md): h0 and h1 joined by veth pairs through bridges (neta, netb: data; netc:
PRRTE's management). **A veth has no wire: its bandwidth is the CPU's copies, and both
"networks" share the same 2 cores. Striping over two networks cannot add bandwidth here;
on real NICs, each with its own wire, it does.** Ranks are not bound on the cluster
(\`--bind-to none\`, as the harness runs them); on sm each rank is bound to a core.

What limits dr2 in these runs, measured separately (CPU profiles, the failover timers),
and what to change: [dr2-cluster-analysis.md](dr2-cluster-analysis.md), written for the run of
2026-11-26.

Configurations:

$config_list

Ping-pong: \`bench/dr2_pingpong 8 $MAX_BYTES $TRIALS $TRIAL_S best\` (blocking MPI_Send/MPI_Recv,
powers of two, $TRIALS trials of about $TRIAL_S s per size, the fastest trial as NetPIPE reports
it, the least disturbed by other work; one-way time =
half a round trip; Gbit/s = bytes x 8 / one-way time / 1e9). Tables: medians over rounds;
time ratio dr2/ob1, bandwidth ratio dr2/ob1, and the range of the bandwidth ratios of the
single rounds (dr2's run against the ob1 run next to it).
$( ((${#failed[@]})) && printf '\n**Failed runs** (left out): %s.\n' "$(IFS=';'; echo "${failed[*]}")")

## Targets

| target | required | measured | |
| --- | ---: | --- | --- |
EOF
    cat "$targets"
    printf '\n## Results\n\n'
    has_part tcp1 || has_part tcp2 && printf '![bandwidth across hosts](dr2-cluster-bw.png)\n\n![latency across hosts](dr2-cluster-lat.png)\n\n'
    has_part cut && printf '![bandwidth through a cut and a heal](dr2-cluster-cut.png)\n\n'
    has_part sm && printf '![sm](dr2-cluster-sm.png)\n\n'
    cat "$tables"
    if [ -n "$counters" ]; then
        printf '\n### dr2'"'"'s own counters\n\nSums over both processes of every round (`pml_dr2_verbose 2` at MPI_Finalize). Resends\n'
        printf 'and ACK timeouts without a fault are protocol waste; in the cut runs they are the repair.\n\n'
        printf '| configuration | processes | fragments sent | resent | ACK timeouts |\n| --- | ---: | ---: | ---: | ---: |\n%s\n' "$counters"
    fi
} >"$OUT/dr2-cluster.md"
say "wrote $OUT/dr2-cluster.md and its plots"
cat "$targets" >&2
((${#failed[@]} == 0)) || say "failed runs: ${failed[*]}"
