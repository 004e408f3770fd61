# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ...).
# Distributed XGBoost 1.7.4 (Debian bookworm's source, our patches) on coll/ftrabit
# (integrations/xgboost/, docs/xgboost.md): a run with killed ranks saves the same model,
# bit for bit, as the run without.

echo "== XGBoost on coll/ftrabit (timeout ${timeout_s}s each)"
unit test_ftrabit_xgb_rules

xgb_rounds=20
xgb_dir=
xgb_state=unknown # unknown, ready, skip:WHY, fail:WHY
declare -A xgb_reference

# The cached XGBoost build (integrations/xgboost/build.sh), made the first time a test
# needs it: on a fresh machine this is the section's longest step.
xgb_ready() {
    local log=$logs/xgboost-build.log
    if [ "$xgb_state" = unknown ]; then
        if [ "$(id -u)" != 0 ] && ! command -v cmake >/dev/null; then
            xgb_state="skip:building XGBoost needs cmake and libdmlc-dev (run the tests once as root)"
        elif xgb_dir=$(timeout -k 10 3600 "$src/integrations/xgboost/build.sh" "$build" 2>"$log"); then
            xgb_state=ready
        else
            xgb_state="fail:XGBoost did not build (log: $log)"
        fi
    fi
    case "$xgb_state" in
        ready) return 0 ;;
        skip:*) skip "$1" "${xgb_state#skip:}" ;;
        fail:*) fail "$1" "${xgb_state#fail:}" "$log" ;;
    esac
    return 1
}

# xgb_train LOG NP KILLS [mpirun options...] [-- xgboost parameters...]: one training of
# integrations/xgboost/agaricus.conf, KILLS as the engine's ftrabit_test_kill parameter
# takes them (R:ROUND:round|checkpoint, comma-separated; "" for none);
# sets $rc, $timed_out and $xgb_sha (empty when no model was saved).
xgb_train() {
    local log=$1 np=$2 kills=$3
    shift 3
    local opts=() params=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    params=("$@")
    local run=$log.run
    rm -rf "$run"
    mkdir -p "$run"
    sed -e "s|@DATA@|$xgb_dir/src/demo/data|g" "$src/integrations/xgboost/agaricus.conf" \
        >"$run/agaricus.conf"
    run_timed "$timeout_s" "$log" "${mpirun[@]}" --with-ft ulfm \
        -x "LD_LIBRARY_PATH=$build/stage/lib" "${opts[@]}" \
        -np "$np" "$xgb_dir/bin/xgboost" "$run/agaricus.conf" "num_round=$xgb_rounds" \
        "model_out=$run/model" ${kills:+"ftrabit_test_kill=$kills"} "${params[@]}"
    xgb_sha=
    [ -s "$run/model" ] && xgb_sha=$(sha256sum "$run/model" | cut -d' ' -f1)
    rm -rf "$run"
}

# xgb_same_model NAME APP_NP NP KILLS [mpirun options] [-- parameters]: a training on NP
# processes (APP_NP ranks: the rest are spares) with KILLS saves the model of the training
# on APP_NP ranks without kills.
xgb_same_model() {
    local name=$1 app=$2 np=$3 kills=$4
    shift 4
    selected "$name" || return 0
    xgb_ready "$name" || return 0
    local log=$logs/$(echo "$name" | tr '/ ' '__').log params=() reference
    local i args=("$@")
    for ((i = 0; i < ${#args[@]}; i++)); do
        [ "${args[i]}" = -- ] && params=("${args[@]:i+1}")
    done
    local key="$app ${params[*]}"
    if [ -z "${xgb_reference[$key]:-}" ]; then
        xgb_train "$log.reference" "$app" "" -- "${params[@]}"
        xgb_reference[$key]=${xgb_sha:-none}
    fi
    reference=${xgb_reference[$key]}
    if [ "$reference" = none ]; then
        fail "$name" "the training without kills saved no model" "$log.reference"
        return
    fi
    xgb_train "$log" "$np" "$kills" "$@"
    if [ "$timed_out" = 1 ]; then
        fail "$name" "HANG after ${timeout_s}s (kills: $kills)" "$log"
    elif [ "$xgb_sha" != "$reference" ]; then
        fail "$name" "model ${xgb_sha:-not saved}, without kills $reference (exit $rc)" "$log"
    elif [ -n "$kills" ] && ! grep -aq "killing itself" "$log"; then
        fail "$name" "nobody was killed" "$log"
    else
        pass "$name"
    fi
}

# Respawn (the default). The learner is checkpointed after rounds 9 and 19 (every 10
# rounds, ftrabit_checkpoint_every): a rank killed inside round 7 (before the first
# checkpoint: rounds 1-7 replayed from the result caches, round 0 from the bootstrap
# collectives), one in round 13 (rounds 10-13 replayed after the checkpoint), one while the
# others are in the checkpoint, rank 0 (it saves the model), two at once, one in round 0.
# With a checkpoint after every round (ftrabit_checkpoint_every=1), a rank killed in round 7.
xgb_same_model xgboost/kill-in-round/np4 4 4 "1:7:round"
xgb_same_model xgboost/kill-between-checkpoints/np4 4 4 "1:13:round"
xgb_same_model xgboost/kill-in-checkpoint/np4 4 4 "2:9:checkpoint"
xgb_same_model xgboost/kill-rank0/np4 4 4 "0:12:round"
xgb_same_model xgboost/kill-two-at-once/np4 4 4 "1:15:round,3:15:round"
xgb_same_model xgboost/kill-in-round-0/np4 4 4 "2:0:round"
xgb_same_model xgboost/checkpoint-every-round/np4 4 4 "1:7:round" -- ftrabit_checkpoint_every=1
# Warm spares: 5 processes train on 4 ranks; the spare takes the dead rank.
xgb_same_model xgboost/spare-takes-over/np5 4 5 "3:13:round" --mca coll_ftrabit_spares 1
# Collectives cut into several of at most 1000 elements (as counts above INT_MAX are).
xgb_same_model xgboost/chunked-collectives/np4 4 4 "1:7:round" -- ftrabit_test_max_count=1000

# The engine's kill parameter counts rounds on plain MPI too (FTRABIT_XGB_ENGINE=mpi, the
# benchmark's baseline, which survives nothing): the process dies in the round asked for.
xgb_plain_mpi_kill() {
    local log=$logs/xgboost-plain-mpi-kill.log
    FTRABIT_XGB_ENGINE=mpi xgb_train "$log" 2 "1:5:round" -x FTRABIT_XGB_ENGINE --mca coll ^ftrabit
    cat "$log"
    [ "$timed_out" = 0 ] && [ -z "$xgb_sha" ] \
        && grep -aq "rank 1 killing itself in round 5 " "$log"
}
selected xgboost/plain-mpi-kill && xgb_ready xgboost/plain-mpi-kill \
    && check xgboost/plain-mpi-kill xgb_plain_mpi_kill

# A training a replacement could not replay the same is refused before it starts, with a
# message saying what to set.
# xgb_refuses NAME MESSAGE PARAMETER: the training with PARAMETER saves nothing and says
# MESSAGE.
xgb_refuses() {
    local log=$logs/xgboost-refuses-$1.log
    xgb_train "$log" 2 "" -- "$3"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && [ -z "$xgb_sha" ] && grep -aq "$2" "$log"
}
unreplayable="ftrabit engine: this training cannot be replayed"
for case in "nthread nthread=0" "colsample colsample_bytree=0.5" "subsample subsample=0.8"; do
    name=xgboost/refuses-${case%% *}
    selected "$name" && xgb_ready "$name" \
        && check "$name" xgb_refuses "${case%% *}" "$unreplayable" "${case#* }"
done
# A checkpoint interval that is no whole number >= 1.
selected xgboost/refuses-checkpoint-every && xgb_ready xgboost/refuses-checkpoint-every \
    && check xgboost/refuses-checkpoint-every xgb_refuses checkpoint-every \
        "ftrabit_checkpoint_every=0: expected a whole number >= 1" ftrabit_checkpoint_every=0
