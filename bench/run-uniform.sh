#!/usr/bin/env bash
# ompi-resilience: the cost of coll_ftrabit_uniform (one agreement after every
# MPI_Allreduce / MPI_Bcast), 8 B to 16 MiB, on 2 and 4 ranks, under mpirun --with-ft ulfm.
# Not run by CI: timings need a quiet machine and minutes. Writes docs/uniform.md.
#
# The parameter cannot change inside a running job (it is registered without
# MCA_BASE_VAR_FLAG_SETTABLE, so MPI_T cannot write it), so "off" and "on" are separate
# jobs of the same binary (bench/coll_bench), run alternately ROUNDS times with the order
# flipping every round, as bench/run-coll.sh does for ftrabit against tuned. coll_bench
# prints the value it runs with (read through MPI_T); the script checks it. Per size, the
# reported time is the median over the rounds of each run's median trial.
#
# Writes, under OUT (default docs/bench): uniform-<op>-np<N>.dat and .png, and DOC
# (default docs/uniform.md). Raw output goes to RAW (default BUILD/bench-logs/uniform).
#
# Environment (all optional): BUILD (default _build), COMPONENT_DIR, ROUNDS=4 TRIALS=5
#   TRIAL_SECONDS=0.05 MAX_BYTES=16777216 NPS="2 4" OPS="allreduce bcast" QUIET_WAIT=10
#   OUT RAW DOC
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$(cd "${BUILD:-$top/_build}" && pwd)
COMPONENT_DIR=${COMPONENT_DIR:-$BUILD/stage/lib/openmpi}
ROUNDS=${ROUNDS:-4}
TRIALS=${TRIALS:-5}
TRIAL_SECONDS=${TRIAL_SECONDS:-0.05}
MAX_BYTES=${MAX_BYTES:-16777216}
NPS=${NPS:-2 4}
OPS=${OPS:-allreduce bcast}
QUIET_WAIT=${QUIET_WAIT:-10}
OUT=${OUT:-$top/docs/bench}
DOC=${DOC:-$top/docs/uniform.md}
RAW=${RAW:-$BUILD/bench-logs/uniform}

bench_name=run-uniform
. "$top/bench/bench-lib.sh"

bench_require_ompi
make -C "$BUILD" bench/coll_bench >&2
bench=$BUILD/bench/coll_bench
bench_require_gnuplot

bench_mpirun_init --with-ft ulfm
mkdir -p "$OUT" "$RAW" "$(dirname "$DOC")"
ompi_version=$("$OMPI_PREFIX/bin/mpirun" --version | awk 'NR == 1 { print $NF }')


# run on|off NP LOG ARGS...
run() {
    local mode=$1 np=$2 log=$3 want
    shift 3
    want=$([ "$mode" = on ] && echo 1 || echo 0)
    if ! "${mpirun[@]}" --mca coll_ftrabit_uniform "$([ "$mode" = on ] && echo true || echo false)" \
        -np "$np" "$bench" "$@" >"$log" 2>"$log.err"; then
        tail -n 20 "$log.err" >&2
        die "uniform $mode on $np ranks failed: $bench $*"
    fi
    grep -q "^# coll_ftrabit_uniform = $want\$" "$log" \
        || die "the run did not have coll_ftrabit_uniform = $want (see $log)"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
for np in $NPS; do
    for op in $OPS; do
        for ((r = 1; r <= ROUNDS; r++)); do
            order="off on"
            ((r % 2)) || order="on off"
            for mode in $order; do
                say "np $np $op round $r/$ROUNDS: uniform $mode ($(($(date +%s) - start)) s so far)"
                wait_quiet
                run "$mode" "$np" "$RAW/$op-np$np-$mode-r$r.txt" "$op" "$MAX_BYTES" "$TRIALS" "$TRIAL_SECONDS"
            done
        done
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Columns: bytes off on ratio off_min off_max on_min on_max ratio_min ratio_max
aggregate() {
    awk -v rounds="$ROUNDS" '
        function med(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        FNR == 1 { base = FILENAME; sub(/.*\//, "", base); split(base, p, "-"); mode = p[3]; rnd = p[4]; gsub(/[^0-9]/, "", rnd) }
        /^#/ { next }
        NF == 2 { if (!($1 in seen)) { seen[$1] = 1; sizes[++ns] = $1 }; t[mode, $1, rnd + 0] = $2 }
        END {
            print "# bytes off_us on_us ratio off_min off_max on_min on_max ratio_min ratio_max"
            for (s = 1; s <= ns; s++) { b = sizes[s]; n = 0
                for (k = 1; k <= rounds; k++) if (("off", b, k) in t && ("on", b, k) in t) {
                    n++; o[n] = t["off", b, k]; u[n] = t["on", b, k]; r[n] = u[n] / o[n] }
                if (!n) continue
                omin = omax = o[1]; umin = umax = u[1]; rmin = rmax = r[1]
                for (k = 2; k <= n; k++) {
                    if (o[k] < omin) omin = o[k]; if (o[k] > omax) omax = o[k]
                    if (u[k] < umin) umin = u[k]; if (u[k] > umax) umax = u[k]
                    if (r[k] < rmin) rmin = r[k]; if (r[k] > rmax) rmax = r[k] }
                om = med(o, n); um = med(u, n)
                printf "%d %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", b, om, um, um / om, omin, omax, umin, umax, rmin, rmax }
        }' "$@"
}
human_awk='function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }'
opname() { [ "$1" = allreduce ] && echo "MPI_Allreduce (MPI_DOUBLE, MPI_SUM)" || echo "MPI_Bcast (MPI_DOUBLE, root 0)"; }

summary=$(mktemp)
tables=$(mktemp)
trap 'rm -f "$summary" "$tables"' EXIT
for np in $NPS; do
    for op in $OPS; do
        dat=$OUT/uniform-$op-np$np.dat
        png=$OUT/uniform-$op-np$np.png
        aggregate "$RAW/$op-np$np-"{off,on}-r*.txt >"$dat"
        tics=$(awk "$human_awk"'!/^#/ && int(log($1) / log(2) + 0.5) % 3 == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), human($1), $1 }' "$dat")
        gnuplot <<EOF
set terminal pngcairo noenhanced size 1000,900 font "sans,12"
set output "$png"
set multiplot layout 2,1 title "$(opname "$op"), $np ranks on $(nproc) cores: coll_ftrabit_uniform off vs on\nmedian of $ROUNDS alternating runs x median of $TRIALS trials; Open MPI $ompi_version, mpirun --with-ft ulfm"
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
plot "$dat" using 1:2:5:6 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb "#1f77b4" title "uniform off (default)", \
     "$dat" using 1:3:7:8 with yerrorlines lw 2 pt 5 ps 0.8 lc rgb "#d62728" title "uniform on (one agreement per call)"
set size 1,0.38
set origin 0,0
set ylabel "on / off (log scale)"
set xlabel "message size (bytes of MPI_DOUBLE)"
set tmargin 1
plot "$dat" using 1:9:10 with filledcurves fs transparent solid 0.25 noborder lc rgb "#d62728" title "range over rounds (paired)", \
     "$dat" using 1:4 with linespoints lw 2 pt 7 ps 0.8 lc rgb "#d62728" title "ratio of medians", \
     1.0 with lines lw 1 lc rgb "black" title "equal"
unset multiplot
EOF
        awk -v op="$op" -v np="$np" "$human_awk"'
            !/^#/ { n++; r[n] = $4; if ($1 <= 64) sm[++ns] = $3 - $2 }
            END {
                for (i = 2; i <= n; i++) { t = r[i]; for (j = i - 1; j >= 1 && r[j] > t; j--) r[j + 1] = r[j]; r[j + 1] = t }
                for (i = 2; i <= ns; i++) { t = sm[i]; for (j = i - 1; j >= 1 && sm[j] > t; j--) sm[j + 1] = sm[j]; sm[j + 1] = t }
                m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
                ms = ns % 2 ? sm[(ns + 1) / 2] : (sm[ns / 2] + sm[ns / 2 + 1]) / 2
                printf "| %s | %d | %.2f | %.2f – %.2f | %.1f |\n", op, np, m, r[1], r[n], ms
            }' "$dat" >>"$summary"
        {
            printf '\n### %s, %d ranks\n\n![%s on %d ranks](bench/uniform-%s-np%d.png)\n\n' "$(opname "$op")" "$np" "$op" "$np" "$op" "$np"
            printf '| size | off µs | on µs | ratio on/off | ratio range over rounds | on − off µs |\n| ---: | ---: | ---: | ---: | :---: | ---: |\n'
            awk "$human_awk"'!/^#/ { printf "| %s | %.2f | %.2f | **%.2f** | %.2f – %.2f | %.1f |\n", human($1), $2, $3, $4, $9, $10, $3 - $2 }' "$dat"
        } >>"$tables"
    done
done

# The prose is kept here, next to the numbers it talks about, so that a re-run keeps both
# together; the paragraph "What it costs" is generated from the measurements.
{
    cat <<'EOF'
# `coll_ftrabit_uniform`: the same outcome on every survivor

`--mca coll_ftrabit_uniform true` (default `false`) is for programs that call
`MPI_Allreduce` and `MPI_Bcast` themselves and recover with plain ULFM calls
(`MPIX_Comm_revoke`, `MPIX_Comm_shrink`, `MPIX_Comm_agree`, or `FTR_Comm_recover`; see
`examples/ulfm_allreduce.c`). The `FTR_*` API does not need it: `FTR_Allreduce` and
`FTR_Bcast` recover by themselves and never return a process-failure error.

## The problem it solves

ULFM only promises that a collective involving a dead process does not hang: it returns an
error *somewhere*. It does not promise that it returns an error *everywhere*. A rank whose
part of the collective was done before the peer died (a broadcast's leaf that already
received its data, a rank in an allreduce whose exchanges all happened before the death)
returns `MPI_SUCCESS` and goes on to the next call, while its neighbours return
`MPIX_ERR_PROC_FAILED`, enter their recovery code, and wait there for a rank that is now one
collective ahead: the survivors disagree on how far the program got. The standard ULFM answer
is for the application to follow each collective with `MPIX_Comm_agree` on its return code.
`coll_ftrabit_uniform` does exactly that inside the collective, so the program does not have
to.

## What it guarantees

With ULFM enabled (`mpirun --with-ft ulfm`), for every `MPI_Allreduce` and `MPI_Bcast` that
coll/ftrabit serves on a communicator of two or more ranks:

- **Uniform outcome.** Either the call returns `MPI_SUCCESS` on every surviving rank of the
  communicator, or it returns an error on every surviving rank. Never success on some and
  failure on others. After an error, every survivor knows the call must be redone.
- **A success is a real success.** If the call succeeded anywhere it succeeded everywhere, and
  every rank has the complete, correct result (for an allreduce, the same bits on every
  rank). If a process of the communicator died before or during the call and the
  application has not acknowledged that failure, the agreement fails, so the call fails on
  every survivor, also on those whose own part had completed.
- **It holds under further failures.** The decision is made by Open MPI's ULFM agreement
  (ERA, `comm->c_coll->coll_agree`, the implementation behind `MPIX_Comm_agree`), which is
  itself uniform even when processes die during it.
- **Nobody is left waiting.** A rank whose collective failed revokes the communicator before
  it joins the agreement, so ranks still blocked inside the collective, waiting for a message
  that will never come, are released with an error instead of waiting forever.

What it does not promise:

- The error *code* can differ between ranks: a rank that saw the failure gets
  `MPIX_ERR_PROC_FAILED`, a rank released by the revocation gets `MPIX_ERR_REVOKED`, a rank
  whose own part had succeeded gets the agreement's error (`MPIX_ERR_PROC_FAILED`). Test for
  "not `MPI_SUCCESS`", then recover (`MPIX_Comm_shrink` or `FTR_Comm_recover`).
- After an error the output buffer is undefined on every rank (also where the local part had
  finished): redo the call on the rebuilt communicator.
- Failures the application already acknowledged (`MPIX_Comm_failure_ack` /
  `MPIX_Comm_ack_failed`) do not make the agreement fail, as with `MPIX_Comm_agree`.
- Only `MPI_Allreduce` and `MPI_Bcast`, the collectives ftrabit provides; other collectives
  come from the module below (tuned, han, ...) and keep plain ULFM semantics.
- Without `--with-ft ulfm` (or on one rank) the parameter does nothing: the first failure
  ends the job anyway.

Tested by `test/mpi/ft_uniform.c` (4 ranks with the victim last or rank 0, and 6 ranks: every
survivor stops at the same call, the one the dead rank did not join), in `test/run-tests.sh`.

## What it costs

One agreement per call: with no failure, ERA's agreement is a reduction of one integer up a
tree and its result back down, about two extra message latencies per call on top of the
collective, whatever the message size. The agreement also keeps state per communicator
and per call, so it is not free in CPU time either.
EOF
    cat <<EOF

Measured by \`bench/run-uniform.sh\` on $(date -u +%Y-%m-%d): $(nproc) cores
($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -r), Open MPI $ompi_version,
\`mpirun --with-ft ulfm --oversubscribe\`, all ranks on one machine (4 ranks share $(nproc)
cores). Not run by CI. \`bench/coll_bench\` ran $ROUNDS rounds per rank count and collective,
alternately with \`--mca coll_ftrabit_uniform false\` and \`true\` (the order flips every round;
the parameter cannot change inside a job: it is not writable through MPI_T), each run
printing the value it really had (read through MPI_T) and the script checking it. Each run
times every size in $TRIALS trials of about $TRIAL_SECONDS s; a trial's time is the slowest
rank's mean time per call, a run's time is its median trial; the tables give the median over
the rounds, the ratio of the medians, and the lowest and highest ratio of the two runs of one
round. The measurement took $elapsed s; load averages (1, 5, 15 min) were $load_start before
and $load_end after (the machine was shared with other builds and tests);
$noisy_starts of the $((2 * ROUNDS * $(wc -w <<<"$NPS") * $(wc -w <<<"$OPS"))) runs started without $QUIET_WAIT s of quiet.

| collective | ranks | median ratio on/off over sizes | lowest – highest ratio of medians | extra µs per call, median over 8–64 B |
| --- | ---: | ---: | :---: | ---: |
EOF
    cat "$summary"
    echo
    for np in $NPS; do
        for op in $OPS; do
            awk -v op="$(opname "$op")" -v np="$np" "$human_awk"'
                !/^#/ { r[$1] = $4; d[$1] = $3 - $2 }
                END { printf "- %s, %d ranks: on/off %.2f at 8 B (%+.1f µs), %.2f at 64 KiB, %.2f at 1 MiB, %.2f at 16 MiB.\n",
                      op, np, r[8], d[8], r[65536], r[1048576], r[16777216] }' "$OUT/uniform-$op-np$np.dat"
        done
    done
    cat <<'EOF'

How to read this (a shared 2-core VM; the machine's noise is large, see the ranges):

- **Allreduce**: the agreement adds a fixed cost per call. On 2 ranks about 1.5–2 µs up to
  1 KiB (ratio 2.5–4.5, because the call itself takes only 0.6 µs there); on 4 oversubscribed
  ranks 12–37 µs up to 4 KiB (ratio 1.3–1.8). From 8 KiB on the difference disappears in the
  noise on 4 ranks (ratios 0.7–1.0). On 2 ranks the "off" runs were erratic for large
  messages (8 ms for 1 MiB in some rounds, 0.16 ms in others; `bench/coll.md` shows the same
  instability without uniform), so the ratios below 1 there are noise, not a speedup.
- **Bcast costs more**, because the ranks leave a broadcast at different times (the root
  first, the leaves when their data has arrived): the agreement makes everyone wait for the
  last one, which turns the broadcast into a synchronising operation. On 4 ranks: 50–115 µs
  more per call at every size up to 2 MiB (ratio 25–87 for ≤ 256 B, 1.1–2.9 from 512 B).
  On 2 ranks most rounds showed a constant extra of about 4.0 ms per call up to 1 KiB and
  again at 1–4 MiB (a fixed duration, the length of one 4 ms timer tick, as if a waiting
  rank slept once per call in the agreement), while some rounds did not (the lowest paired
  ratio at 8 B is about 10). Not investigated further; worth a look before recommending the
  option for broadcast-heavy code.
- In short: affordable for collectives of tens of KiB and more, or for programs with a few
  collectives per iteration of milliseconds; expensive for streams of tiny broadcasts.
  Programs using the `FTR_*` API do not need it at all.
EOF
    printf '\n## Measurements\n'
    cat "$tables"
} >"$DOC"
say "wrote $DOC and the plots in $OUT"
cat "$summary"
