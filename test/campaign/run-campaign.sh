#!/usr/bin/env bash
# ompi-resilience kill campaign of coll/ftrabit: random fault scenarios of
# test/mpi/ft_campaign under `mpirun --with-ft ulfm`, each compared bit for bit with its
# failure-free run (under the shrink policy, with a second run with the same kills: the dead
# ranks' data is gone). One mpirun at a time, each with a timeout. Writes a table.
#
# Usage: test/campaign/run-campaign.sh --build DIR [options]
#   --build DIR      a built tree whose `make install` went to DIR/stage (scripts/build.sh)
#   --runs N         scenarios to run (200)
#   --seed S         scenario i is drawn from seed S and i alone, so any one of them can be
#                    run again with --only i (1)
#   --only I         run scenario I only (repeatable; prints its command lines)
#   --max-np N       at most N processes per job, spares included (10)
#   --max-bytes B    at most B data bytes per collective (8388608)
#   --timeout S      seconds per mpirun before it counts as hung (120)
#   --pml NAME       run every job over that PML (`--mca pml NAME`, e.g. dr2); Open MPI's
#                    choice (ob1) when not given
#   --logs DIR       where the logs go (DIR/NNN.log, DIR/results.tsv; ./campaign-logs)
#   --out FILE       write the report (markdown) there
#   --list           print the scenarios, run nothing
#   --rejudge        run nothing: judge again the runs of --logs' results.tsv from their logs
#                    (after a change of the rules), then write the summary and report
#   --restart        every run writes durable checkpoints (coll_ftrabit_checkpoint_dir, a
#                    directory of its own); a run that ended with "recovery is not possible"
#                    is started again from it, without kills, with the number of ranks its
#                    message names, and must end right (`make campaign` passes it)
# Needs OMPI_PREFIX. Exit status 0 when no run gave a wrong result or hung.
#
# A scenario: a policy (respawn, shrink, or respawn with warm spares), np 3-10, a datatype
# (contiguous, strided, padded), a message size (8 B - 8 MiB), coll_ftrabit_result_replicas
# 0 or 2, a program that frees its communicator or not, and a phase class with 1-3 victims
# at once or in sequence (rank 0 among them now and then):
#   before-allreduce, after-allreduce, before-bcast (the root moves: any rank is root;
#   under shrink any rank the scenario does not kill, chosen by process: a root that dies
#   under shrink takes its data with it, which test ft/types/shrink-bcast-root-died covers),
#   checkpoint-send, checkpoint-agree (inside FTR_Checkpoint), in-recovery (one kill, then a
#   survivor dies inside the recovery: coll_ftrabit_test_kill_in_recovery), in-catch-up (a
#   survivor dies while a replacement catches up: coll_ftrabit_test_kill_in_catch_up),
#   replacement-dies (the first spawned replacement dies before it joins), last-collective
#   (the job's last broadcast, with no checkpoint after it).
# Verdicts: right (every rank printed the reference fingerprint, on the expected number of
# ranks; under shrink one same fingerprint, each result having been checked by the program
# against the sets of ranks that may have contributed to it: the second run with the same
# kills may count a dead rank's contribution where this one does not), error (the job
# ended with an error FTR_* documents: "recovery is not possible", a replacement that never
# joined, a shrink broadcast whose root died), wrong (anything else, a process that crashed
# among it), hung (the timeout). With --restart, a restart after "recovery is not possible"
# is right when it ends as the failure-free run (respawn and spares: every rank prints the
# reference fingerprint; shrink: one fingerprint, each result checked by the program, on
# the ranks of the checkpoint), wrong or hung otherwise, and counts in the exit status.
set -u
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/hang-stacks.sh
. "$src/test/hang-stacks.sh"
build="" runs=200 seed=1 max_np=10 max_bytes=8388608 timeout_s=120 logs=campaign-logs out="" pml=""
only=() list=0 rejudge=0 restart=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift ;;
        --runs) runs=$2; shift ;;
        --seed) seed=$2; shift ;;
        --only) only+=("$2"); shift ;;
        --max-np) max_np=$2; shift ;;
        --max-bytes) max_bytes=$2; shift ;;
        --timeout) timeout_s=$2; shift ;;
        --pml) pml=$2; shift ;;
        --logs) logs=$2; shift ;;
        --out) out=$2; shift ;;
        --list) list=1 ;;
        --rejudge) rejudge=1 ;;
        --restart) restart=1 ;;
        *) echo "run-campaign.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$build" ] || { echo "run-campaign.sh: --build DIR is required" >&2; exit 2; }
: "${OMPI_PREFIX:?set OMPI_PREFIX to the Open MPI install}"
build=$(cd "$build" && pwd)
prog=$build/test/mpi/ft_campaign
# Its processes: libtool's wrapper runs the program from .libs/.
prog_pattern="^$build/test/mpi/(\\.libs/)?(lt-)?ft_campaign( |\$)"
[ -x "$prog" ] || { echo "run-campaign.sh: $prog is not built (make tests)" >&2; exit 2; }
[ "$max_np" -ge 3 ] || { echo "run-campaign.sh: --max-np must be at least 3" >&2; exit 2; }
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
export PMIX_MCA_mca_base_component_show_load_errors=0
mpirun=("$OMPI_PREFIX/bin/mpirun" --allow-run-as-root --oversubscribe --with-ft ulfm
        --mca mca_base_component_path "$OMPI_PREFIX/lib/openmpi:$build/stage/lib/openmpi")
[ -n "$pml" ] && mpirun+=(--mca pml "$pml")
iterations=10 every=3 # checkpoints after iterations 2, 5 and 8; iteration 9 is the last

# ---- drawing a scenario -------------------------------------------------------------------
# No subshell may draw: bash seeds RANDOM afresh in each one. So the helpers set REPLY.
pick() { local a=("$@"); REPLY=${a[RANDOM % ${#a[@]}]}; } # one of the arguments
# Distinct ranks in [0, NP): COUNT of them, rank 0 first in about a third of the draws.
draw_victims() {
    local count=$1 np=$2 chosen=() r
    [ $((RANDOM % 3)) = 0 ] && chosen+=(0)
    while [ ${#chosen[@]} -lt "$count" ]; do
        r=$((RANDOM % np))
        [[ " ${chosen[*]} " == *" $r "* ]] || chosen+=("$r")
    done
    REPLY="${chosen[*]}"
}

# Sets the scenario's variables for index $1: class policy np app spares type bytes replicas
# keep kills (program --kill specs) extra (more mpirun/program options) deaths shape.
draw_scenario() {
    RANDOM=$((seed * 100003 + $1))
    local sizes=() b
    for b in 8 100 4096 20000 65536 1048576 8388608; do
        [ "$b" -le "$max_bytes" ] && sizes+=("$b")
    done
    pick respawn respawn respawn shrink shrink spares; policy=$REPLY
    spares=0
    [ "$policy" = spares ] && spares=$((1 + RANDOM % 2))
    local app_max=$((max_np - spares))
    app=$((3 + RANDOM % (app_max - 2)))
    np=$((app + spares))
    pick contiguous strided padded; type=$REPLY
    pick "${sizes[@]}"; bytes=$REPLY
    pick 0 2; replicas=$REPLY
    pick 0 1; keep=$REPLY
    pick before-allreduce after-allreduce before-bcast checkpoint-send checkpoint-agree \
        in-recovery in-catch-up replacement-dies last-collective
    class=$REPLY
    # A replacement to catch up, or to die, exists under respawn only (with spares, only once
    # they are used up: the replacement-dies class is for plain respawn).
    [ "$policy" = shrink ] && [ "$class" = in-catch-up ] && class=in-recovery
    [ "$policy" != respawn ] && [ "$class" = replacement-dies ] && class=before-allreduce
    local nvictims=$((1 + RANDOM % 3)) sequence=$((RANDOM % 2))
    # the shrink policy needs two survivors, and a survivor dies in the recovery classes
    local room=$((app - 2))
    [ "$policy" != shrink ] && room=$((app - 1))
    case "$class" in in-recovery|in-catch-up) room=$((room - 1)) ;; esac
    [ "$nvictims" -gt "$room" ] && nvictims=$room
    [ "$nvictims" -lt 1 ] && nvictims=1
    [ "$class" = last-collective ] && sequence=0
    local victims it where v k=0
    draw_victims "$nvictims" "$app"; victims=$REPLY
    kills="" extra=""
    for v in $victims; do
        if [ $k = 0 ] || [ "$sequence" = 1 ]; then # in sequence: each at its own point
            case "$class" in
                before-allreduce|after-allreduce|before-bcast)
                    where=$class; it=$((RANDOM % iterations)) ;;
                checkpoint-send|checkpoint-agree)
                    where=$class; pick 2 5 8; it=$REPLY ;;
                last-collective) where=before-bcast; it=$((iterations - 1)) ;;
                *) pick before-allreduce after-allreduce before-bcast; where=$REPLY
                   it=$((RANDOM % iterations)) ;;
            esac
        fi
        kills="$kills $v:$it:$where"
        k=$((k + 1))
    done
    kills=${kills# }
    shape=1
    [ "$nvictims" -gt 1 ] && { [ "$sequence" = 1 ] && shape="$nvictims in sequence" || shape="$nvictims at once"; }
    deaths=$nvictims
    local others=() r
    for ((r = 0; r < app; r++)); do [[ " $victims " == *" $r "* ]] || others+=("$r"); done
    case "$class" in
        # (--not-root: under shrink the program's broadcast roots are processes that live)
        in-recovery)
            pick "${others[@]}"
            extra="--mca coll_ftrabit_test_kill_in_recovery $REPLY -- --not-root $REPLY"
            deaths=$((deaths + 1)) ;;
        in-catch-up)
            pick "${others[@]}"
            extra="--mca coll_ftrabit_test_kill_in_catch_up $REPLY -- --not-root $REPLY"
            deaths=$((deaths + 1)) ;;
        # The first replacement dies before it joins: the survivors start another (after
        # coll_ftrabit_join_timeout, 5 s here, if its death is never reported). Should one
        # never join, coll_ftrabit_recovery_timeout ends the job (20 s here, not 60).
        replacement-dies) extra="--mca coll_ftrabit_recovery_timeout 20 --mca coll_ftrabit_join_timeout 5 -- --kill-replacement 1" ;;
    esac
}

# The mpirun options and program arguments of the drawn scenario (a bash array, by name).
scenario_command() { # scenario_command ARRAY_NAME WITH_KILLS(0|1) MARKS_DIR; with scenario_dir set, durable
# checkpoints go there; with scenario_np set, that many processes
    local -n out_cmd=$1
    local with_kills=$2 marks=$3 k mca=() prog_args=() x
    [ "$policy" = shrink ] && mca+=(--mca coll_ftrabit_recovery shrink)
    [ "$spares" -gt 0 ] && [ "$with_kills" = 1 ] && mca+=(--mca coll_ftrabit_spares "$spares")
    mca+=(--mca coll_ftrabit_result_replicas "$replicas")
    prog_args=(--iterations "$iterations" --every "$every" --type "$type" --bytes "$bytes")
    [ "$keep" = 1 ] && prog_args+=(--keep-comm)
    [ "$policy" = shrink ] && prog_args+=(--shrink)
    if [ "$with_kills" = 1 ]; then
        for k in $kills; do prog_args+=(--kill "$k"); done
        # extra: mpirun options, then after "--" program options
        local after=0
        for x in $extra; do
            if [ "$x" = -- ]; then after=1
            elif [ $after = 1 ]; then prog_args+=("$x")
            else mca+=("$x"); fi
        done
        prog_args+=(--kill-marks "$marks")
    fi
    local n=$np
    [ "$with_kills" = 0 ] && n=$app # the reference: no spares
    [ -n "${scenario_np:-}" ] && n=$scenario_np
    [ -n "${scenario_dir:-}" ] && mca+=(--mca coll_ftrabit_checkpoint_dir "$scenario_dir")
    out_cmd=("${mpirun[@]}" "${mca[@]}" -np "$n" "$prog" "${prog_args[@]}")
}

# ---- running -----------------------------------------------------------------------------
# run_job LOG CMD...: one mpirun with the timeout; sets rc, hung. Processes of this build's
# campaign program left behind (a replacement outliving its job) are ended by their id.
run_job() {
    local log=$1 job
    shift
    rm -f "$log.rc" "$log.stacks"
    # Open MPI 5.0.7 can print "NBC_Progress: an error 75 ..." millions of times (a merge with
    # a dead replacement spins): those lines, and their fragments, are counted, not kept.
    { timeout --verbose -k 10 "$timeout_s" "$@" </dev/null 2>&1; echo "$?" >"$log.rc"; } \
        | awk '/NBC_Progress|schedule/ || length($0) <= 12 { n++; if (n <= 10) print; next } { print }
               END { if (n > 10) print "run-campaign: " n - 10 " more lines of NBC_Progress errors not kept" }' >"$log" &
    job=$!
    # A job still running at three quarters of its time: its processes' stacks (gdb).
    hang_watch "$job" $((timeout_s * 3 / 4)) "$log.stacks" "$prog_pattern"
    wait "$job"
    hang_unwatch "$log.stacks"
    rc=$(cat "$log.rc" 2>/dev/null || echo 1)
    hung=0
    if grep -aq "^timeout: sending signal" "$log"; then
        hung=1
        [ -s "$log.stacks" ] && echo "run-campaign: the stacks of the hung processes: $log.stacks" >>"$log"
    fi
    local left
    left=$(pgrep -f "$prog_pattern" || true)
    if [ -n "$left" ]; then
        echo "run-campaign: processes left after the job, ended: $(echo $left)" >>"$log"
        kill -9 $left 2>/dev/null || true
    fi
    return 0
}
fingerprints() { sed -n 's/^campaign rank .* final fingerprint \([0-9a-f]*\) on .*/\1/p' "$1"; }
ranks_reported() { sed -n 's/^campaign rank .* on \([0-9]*\) ranks$/\1/p' "$1" | sort -u; }

# The failure-free fingerprint of (app, type, bytes), kept in $logs/references.tsv.
reference_of() {
    local key="$app $type $bytes" ref cmd=()
    ref=$(awk -v k="$key" -F'\t' '$1 == k { print $2; exit }' "$logs/references.tsv" 2>/dev/null)
    if [ -z "$ref" ]; then
        local log=$logs/reference-$app-$type-$bytes.log
        scenario_command cmd 0 ""
        run_job "$log" "${cmd[@]}"
        ref=$(fingerprints "$log" | sort -u)
        if [ $hung = 1 ] || [ $rc -ne 0 ] || [ "$(echo "$ref" | wc -l)" != 1 ] \
               || [ "$(fingerprints "$log" | wc -l)" != "$app" ]; then
            echo "reference run failed: $log" >&2
            return 1
        fi
        printf '%s\t%s\n' "$key" "$ref" >>"$logs/references.tsv"
    fi
    echo "$ref"
}

# The errors FTR_* documents for recovery that cannot be done (README, FTR_Init(3),
# FTR_Bcast(3)): lost results or checkpoints, replacements that never join, a shrink
# broadcast whose root died before anybody got its data (every rank gets MPI_ERR_ROOT and
# one of them prints the message, unless mpirun ended it first: the others exit at once).
documented_errors="recovery is not possible|recovery made no progress for coll_ftrabit_recovery_timeout|its root died before any survivor|FTR_Bcast failed: MPI_ERR_ROOT"

# complete LOG EXPECTED: every rank that must end printed its result. Under respawn each
# rank 0..EXPECTED-1 printed (and said so on EXPECTED ranks); a process may also print and
# then die in FTR_Finalize's recovery, its replacement printing again. Under shrink at
# least EXPECTED distinct original ranks printed, on EXPECTED to np ranks: a rank that
# completed the job's last collective before a failure there was noticed prints the size it
# had then (it recovers with the others inside FTR_Finalize, after its result was printed).
complete() {
    local log=$1 expected=$2 r s
    if [ "$policy" = shrink ]; then
        [ "$(sed -n 's/^campaign rank .* original \([0-9]*\) final .*/\1/p' "$log" | sort -u | wc -l)" -ge "$expected" ] || return 1
        for s in $(ranks_reported "$log"); do
            [ "$s" -ge "$expected" ] && [ "$s" -le "$np" ] || return 1
        done
    else
        for ((r = 0; r < expected; r++)); do
            grep -aq "^campaign rank $r original .* on $expected ranks$" "$log" || return 1
        done
        [ "$(ranks_reported "$log")" = "$expected" ] || return 1
    fi
}

# judge LOG REFERENCE EXPECTED_RANKS: sets verdict and why.
judge() {
    local log=$1 reference=$2 expected=$3 got n ranks
    got=$(fingerprints "$log" | sort -u)
    n=$(fingerprints "$log" | wc -l)
    ranks=$(ranks_reported "$log")
    if [ $hung = 1 ]; then
        verdict=hung why="no end after ${timeout_s}s; ranks that printed their result: $n"
    elif grep -aq "WRONG:" "$log"; then
        verdict=wrong why=$(grep -a -m1 "WRONG:" "$log")
    elif grep -aqE "terminated with signal [0-9]+ at PC=" "$log"; then
        # Open MPI's handler for a fatal signal (SIGSEGV, SIGBUS, SIGABRT...); the victims die
        # of SIGKILL, which no handler sees. A crash is wrong even when the job then ends
        # with a documented error: the crashed process may have held what recovery needed.
        verdict=wrong why="a process crashed: $(grep -aoE -m1 "terminated with signal [0-9]+" "$log")"
    elif [ -n "$got" ] && [ "$got" != "$reference" ] \
         && ! { [ "$policy" = shrink ] && [ "$(wc -l <<<"$got")" = 1 ]; }; then
        # (under shrink one fingerprint on every rank is enough: the program checked each
        # result against the ranks that may have contributed, see ft_campaign.c)
        verdict=wrong why="fingerprint(s) $(echo $got), reference $reference"
    elif [ $rc -ne 0 ] && ! complete "$log" "$expected" && grep -aqE "$documented_errors" "$log"; then
        verdict=error why=$(grep -aoE -m1 "($documented_errors)[^;(:]*" "$log" | head -n 1)
        local root=""
        grep -aqE "its root died before any survivor|FTR_Bcast failed: MPI_ERR_ROOT" "$log" \
            && root=$(sed -n 's/.*FTR_Bcast from original root \([0-9]*\) failed.*/\1/p' "$log" | head -n 1)
        if [ -n "$root" ] && [[ " $kills $extra " != *" $root:"* ]] \
               && [[ "$extra" != *"test_kill_in_"*" $root" ]]; then
            verdict=wrong why="FTR_Bcast says its root died, but original rank $root was not killed"
        fi
    elif ! complete "$log" "$expected"; then
        verdict=wrong why="$n rank(s) printed the result, on $(echo $ranks) ranks; expected $expected (exit $rc)"
    else
        verdict=right why=""
        if [ "$policy" != shrink ] && ! grep -aEq "replacement starts|spare takes over" "$log"; then
            verdict=wrong why="no replacement process ran"
        elif [ "$got" != "$reference" ]; then
            why="other contributions than the second run, each result checked"
        fi
    fi
}

# restart_scenario I LOG DIR REFERENCE: the run LOG ended with "recovery is not possible":
# the job started again from DIR, without kills, on the ranks the message names (spares are
# not needed: the checkpoint is of the application's ranks). Appends a line to restarts.tsv.
restart_scenario() {
    local i=$1 first=$2 dir=$3 reference=$4 log=$2.restart cmd=() n start took resumed
    local rverdict rwhy got
    n=$(sed -n 's/.*start it again with the same number of ranks (\([0-9]*\)).*/\1/p' "$first" | head -n 1)
    if [ -z "$n" ]; then
        rverdict=wrong rwhy="no restart command was printed" took=0 resumed=""
    else
        scenario_dir=$dir scenario_np=$n scenario_command cmd 0 ""
        printf '# restart of scenario %d of seed %d: %s\n' "$i" "$seed" "${cmd[*]}" >"$log.cmd"
        start=$(date +%s)
        run_job "$log" "${cmd[@]}"
        took=$(($(date +%s) - start))
        resumed=$(sed -n 's/.*restarting from durable checkpoint version \([0-9]*\) .*/\1/p' "$log" | head -n 1)
        got=$(fingerprints "$log" | sort -u)
        rverdict=right rwhy=""
        if [ $hung = 1 ]; then
            rverdict=hung rwhy="no end after ${timeout_s}s"
        elif grep -aq "WRONG:" "$log"; then
            rverdict=wrong rwhy=$(grep -a -m1 "WRONG:" "$log")
        elif [ $rc -ne 0 ]; then
            rverdict=wrong rwhy="exit $rc"
        elif [ "$policy" = shrink ]; then
            [ "$(wc -l <<<"$got")" = 1 ] && [ -n "$got" ] && [ "$(ranks_reported "$log")" = "$n" ] \
                && [ "$(fingerprints "$log" | wc -l)" = "$n" ] \
                || rverdict=wrong rwhy="fingerprints $(echo $got) on $(echo $(ranks_reported "$log")) ranks"
        elif [ "$got" != "$reference" ] || ! complete "$log" "$n"; then
            rverdict=wrong rwhy="fingerprint(s) $(echo $got), reference $reference"
        fi
    fi
    printf '%d\t%s\t%s\t%d\t%s\n' "$i" "$rverdict" "${resumed:-0}" "$took" "$rwhy" >>"$restarts"
    printf '    restart: %-6s %3ds  from version %s%s\n' "$rverdict" "$took" "${resumed:-0 (the start)}" \
        "${rwhy:+  ($rwhy)}"
    case "$rverdict" in right) ;; *) echo "    log: $log   command: $log.cmd" ;; esac
}

# run_scenario I: draws it, runs it (and its reference), appends a line to results.tsv.
run_scenario() {
    local i=$1 cmd=() reference marks log start took
    draw_scenario "$i"
    log=$logs/$(printf '%03d' "$i").log
    local expected=$app
    [ "$policy" = shrink ] && expected=$((app - deaths))
    if [ "$policy" = shrink ]; then
        marks=$(mktemp -d)
        scenario_command cmd 1 "$marks"
        run_job "$log.reference" "${cmd[@]}"
        rm -rf "$marks"
        reference=$(fingerprints "$log.reference" | sort -u | head -n 1)
    else
        reference=$(reference_of) || reference=""
    fi
    marks=$(mktemp -d)
    local dir=""
    [ $restart = 1 ] && dir=$(mktemp -d)
    scenario_dir=$dir scenario_command cmd 1 "$marks"
    printf '# scenario %d of seed %d: %s\n' "$i" "$seed" "${cmd[*]}" >"$log.cmd"
    start=$(date +%s)
    run_job "$log" "${cmd[@]}"
    took=$(($(date +%s) - start))
    rm -rf "$marks"
    if [ -z "$reference" ] && [ "$policy" != shrink ]; then
        verdict=wrong why="the failure-free run failed (logs/reference-$app-$type-$bytes.log)"
    elif [ -z "$reference" ]; then
        # Under shrink the reference is a run with the same kills: if that one ended with a
        # documented error, so must this one.
        judge "$log" "none" "$expected"
        [ "$verdict" = right ] && verdict=wrong why="the reference run printed no result"
    else
        judge "$log" "$reference" "$expected"
    fi
    printf '%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n' "$i" "$seed" "$class" \
        "$policy" "$np" "$spares" "$type" "$bytes" "$replicas" "$keep" "$kills" "$extra" \
        "$verdict" "$took" "$why" "$shape" >>"$results"
    printf '%3d %-6s %3ds  %-16s %-7s np %-2d %-10s %8s B  replicas %s keep-comm %s  kills %s %s%s\n' \
        "$i" "$verdict" "$took" "$class" "$policy" "$np" "$type" "$bytes" "$replicas" "$keep" \
        "$kills" "$extra" "${why:+  ($why)}"
    case "$verdict" in
        right | error) rm -f "$log.reference" ;;
        *) echo "    log: $log   command: $log.cmd" ;;
    esac
    if [ -n "$dir" ] && [ "$verdict" = error ] && grep -aq "recovery is not possible" "$log"; then
        restart_scenario "$i" "$log" "$dir" "$reference"
    fi
    [ -n "$dir" ] && rm -rf "$dir"
    return 0
}

# ---- the report ----------------------------------------------------------------------------
# table TITLE COLUMN(awk expression over the fields of results.tsv)
table() {
    printf '\n| %s | runs | right | documented error | wrong | hung |\n|---|---:|---:|---:|---:|---:|\n' "$1"
    awk -F'\t' -v OFS='\t' "{ print $2, \$13 }" "$results" | awk -F'\t' '
        { runs[$1]++; n[$1, $2]++; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        END { for (i = 1; i <= k; i++) { c = order[i]
                  printf "| %s | %d | %d | %d | %d | %d |\n", c, runs[c], n[c, "right"],
                         n[c, "error"], n[c, "wrong"], n[c, "hung"] } }' | sort -V
    awk -F'\t' '{ t[$13]++; r++ } END { printf "| **all** | %d | %d | %d | %d | %d |\n", r,
        t["right"], t["error"], t["wrong"], t["hung"] }' "$results"
}
write_report() {
    local commit dirty=""
    commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$src" diff --quiet HEAD 2>/dev/null || dirty=" (with uncommitted changes)"
    if [ -f "$logs/commit" ]; then # the commit the runs were made at
        local then
        then=$(cat "$logs/commit")
        [ "$then" != "$commit$dirty" ] && commit="$then (judged again at $commit)" dirty=""
    fi
    local end=${campaign_end:-$(date +%s)}
    {
        echo "# Kill campaign of coll/ftrabit"
        echo
        echo "Measured $(date -u -d "@$end" '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(nproc) cores," \
             "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), Linux $(uname -r))," \
             "at commit $commit$dirty, Open MPI 5.0.7 with ULFM."
        local how="make campaign CAMPAIGN_RUNS=$runs CAMPAIGN_SEED=$seed"
        [ -n "$pml" ] && how="$how CAMPAIGN_PML=$pml"
        echo "\`$how\`${pml:+, every job over pml/$pml}" \
             "(test/campaign/run-campaign.sh: scenarios, verdicts and how to run one again are" \
             "described at its top), one mpirun at a time, ${timeout_s} s timeout per run;" \
             "$(((end - campaign_start + 30) / 60)) minutes in all, failure-free" \
             "references included."
        echo
        echo "Each scenario runs test/mpi/ft_campaign ($iterations iterations of FTR_Allreduce" \
             "then FTR_Bcast from a moving root - under shrink one the scenario does not kill," \
             "chosen by process -, FTR_Checkpoint every $every; real SIGKILLs) and" \
             "compares every rank's final fingerprint, bit for bit, with the failure-free run on" \
             "the same ranks, size and type (under shrink: with a second run with the same kills)."
        echo
        echo "A run is **right** when every line printed holds the reference fingerprint (under" \
             "shrink: one same fingerprint, every allreduce result checked by the program against" \
             "the sets of ranks that may have contributed: the living and any of the dead), every" \
             "rank that must end printed one (respawn: all, on np ranks; shrink: all but the dead," \
             "on np-dead ranks, or on more for a rank that finished the last collective before" \
             "the failure there was noticed) and, under respawn, a" \
             "replacement or spare ran; a **documented error** when the job ended with an error" \
             "FTR_* documents (\"recovery is not possible\": results or a checkpoint died with all" \
             "their holders; \"recovery made no progress for coll_ftrabit_recovery_timeout\": a" \
             "replacement never joined; a shrink broadcast whose root, one of the killed ranks," \
             "died before anybody got its data) before every rank printed a result and no process" \
             "crashed (Open MPI's fatal-signal handler printed nothing); **wrong** otherwise;" \
             "**hung** when the timeout ended it. The program also checks, on every rank, that" \
             "no hole or padding byte of a result is written, that every broadcast carries its" \
             "root's values, and that a replacement gets its own rank's local checkpoint back."
        table "phase class" '$3'
        table "recovery policy" '$4 ($6 > 0 ? " (" $6 " spare" ($6 > 1 ? "s" : "") ")" : "")'
        table "datatype" '$7'
        table "data bytes per collective" '$8'
        table "coll_ftrabit_result_replicas" '$9'
        table "program" '($10 ? "keeps its communicator" : "frees its communicator")'
        table "processes (np)" '$5'
        table "victims" '$16'
        if [ -s "$restarts" ]; then
            echo
            echo "## Restarts from coll_ftrabit_checkpoint_dir"
            echo
            echo "Every run wrote durable checkpoints to a directory of its own (\`--restart\`);" \
                 "each that ended with \"recovery is not possible\" was started again from it," \
                 "without kills, on the ranks its message named, and must end as the" \
                 "failure-free run: $(awk -F'\t' '$2 == "right" { n++ } END { print n + 0 }' "$restarts")" \
                 "of $(wc -l <"$restarts") did."
            echo
            echo "| scenario | restart | resumed from version | seconds | why |"
            echo "|---:|---|---:|---:|---|"
            awk -F'\t' '{ printf "| %d | %s | %s | %d | %s |\n", $1, $2, ($3 == 0 ? "0 (the start)" : $3), $4, $5 }' "$restarts"
        fi
        echo
        if awk -F'\t' '$13 != "right" { f = 1 } END { exit !f }' "$results"; then
            echo "## Runs that did not end right"
            echo
            echo "Run one again with \`test/campaign/run-campaign.sh --build BUILD --seed $seed --only I\`."
            echo
            awk -F'\t' '$13 != "right" { printf "- %d (%s): %s, %s, np %d, %s, %s B, replicas %s, keep-comm %s, kills `%s` %s: %s\n", $1, $13, $3, $4, $5, $7, $8, $9, $10, $11, ($12 == "" ? "" : "`" $12 "`"), $15 }' "$results"
        fi
    } >"$out"
}

# ---- main ----------------------------------------------------------------------------------
indices=("${only[@]}")
[ ${#indices[@]} -eq 0 ] && indices=($(seq 1 "$runs"))
results=$logs/results.tsv restarts=$logs/restarts.tsv
[ ${#only[@]} -gt 0 ] && results=$logs/results-only.tsv restarts=$logs/restarts-only.tsv
[ $rejudge = 1 ] || rm -f "$results" "$restarts"
if [ $list = 1 ]; then
    for i in "${indices[@]}"; do
        draw_scenario "$i"
        printf '%3d %-16s %-7s np %-2d %-10s %8s B replicas %s keep %s kills %s %s\n' "$i" \
            "$class" "$policy" "$np" "$type" "$bytes" "$replicas" "$keep" "$kills" "$extra"
    done
    exit 0
fi
# rejudge_all: each line of results.tsv judged again from its log (the exit code from
# LOG.rc, or from the reason recorded); a shrink run whose reference log was removed (it was
# right or a documented error) keeps its verdict, as the rules only ever became less strict.
rejudge_all() {
    local line i log reference expected fields new=$results.new
    : >"$new"
    while IFS= read -r line; do
        # tabs are whitespace to read: empty fields would vanish, so split on another byte
        IFS=$'\x1f' read -r -a fields <<<"${line//$'\t'/$'\x1f'}"
        i=${fields[0]} verdict=${fields[12]} why=${fields[14]}
        draw_scenario "$i"
        log=$logs/$(printf '%03d' "$i").log
        expected=$app
        [ "$policy" = shrink ] && expected=$((app - deaths))
        if [ -f "$log.rc" ]; then rc=$(cat "$log.rc")
        elif [[ "$why" =~ \(exit\ ([0-9]+)\) ]]; then rc=${BASH_REMATCH[1]}
        elif [ "$verdict" = right ]; then rc=0
        else rc=1; fi
        hung=0
        grep -aq "^timeout: sending signal" "$log" && hung=1
        reference=""
        if [ "$policy" = shrink ]; then
            [ -f "$log.reference" ] && reference=$(fingerprints "$log.reference" | sort -u | head -n 1)
        else
            reference=$(awk -v k="$app $type $bytes" -F'\t' '$1 == k { print $2; exit }' "$logs/references.tsv")
        fi
        if [ -n "$reference" ]; then
            local old=$verdict
            judge "$log" "$reference" "$expected"
            [ "$old" != "$verdict" ] && echo "rejudged $i: $old -> $verdict ${why:+($why)}"
            fields[12]=$verdict fields[14]=$why
        fi
        (IFS=$'\t'; echo "${fields[*]}") >>"$new"
    done <"$results"
    mv "$new" "$results"
}

if [ $rejudge = 1 ]; then
    campaign_start=$(stat -c %Y "$(ls -tr "$logs"/*.log.cmd | head -n 1)")
    campaign_end=$(stat -c %Y "$results")
    runs=$(wc -l <"$results")
    rejudge_all
else
campaign_start=$(date +%s)
if [ ${#only[@]} -eq 0 ]; then
    c=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$src" diff --quiet HEAD 2>/dev/null || c="$c (with uncommitted changes)"
    echo "$c" >"$logs/commit"
fi
echo "kill campaign: ${#indices[@]} scenario(s) of seed $seed, logs in $logs"
for i in "${indices[@]}"; do run_scenario "$i"; done
fi
if [ ${#only[@]} -gt 0 ]; then
    for i in "${only[@]}"; do cat "$logs/$(printf '%03d' "$i").log.cmd"; done
fi
summary=$(awk -F'\t' '{ t[$13]++; r++ } END { printf "%d runs: %d right, %d documented error, %d wrong, %d hung", r, t["right"], t["error"], t["wrong"], t["hung"] }' "$results")
[ -s "$restarts" ] && summary="$summary; $(awk -F'\t' '{ t[$2]++; r++ } END { printf "%d restarts: %d right, %d wrong, %d hung", r, t["right"], t["wrong"], t["hung"] }' "$restarts")"
echo "$summary"
[ -n "$out" ] && [ ${#only[@]} -eq 0 ] && write_report && echo "report: $out"
! awk -F'\t' '$13 == "wrong" || $13 == "hung" { f = 1 } END { exit !f }' "$results" \
    && ! awk -F'\t' '$2 != "right" { f = 1 } END { exit !f }' "$restarts" 2>/dev/null
