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

# Respawn (the default): one rank killed inside a round, one while the others are in the
# checkpoint, rank 0 (it saves the model), two at once, one before the first checkpoint
# (round 0 is replayed from the bootstrap collectives), one twice.
xgb_same_model xgboost/kill-in-round/np4 4 4 "1:7:round"
xgb_same_model xgboost/kill-in-checkpoint/np4 4 4 "2:7:checkpoint"
xgb_same_model xgboost/kill-rank0/np4 4 4 "0:7:round"
xgb_same_model xgboost/kill-two-at-once/np4 4 4 "1:7:round,3:7:round"
xgb_same_model xgboost/kill-in-round-0/np4 4 4 "2:0:round"
# Warm spares: 5 processes train on 4 ranks; the spare takes the dead rank.
xgb_same_model xgboost/spare-takes-over/np5 4 5 "3:7:round" --mca coll_ftrabit_spares 1
# Collectives cut into several of at most 1000 elements (as counts above INT_MAX are).
xgb_same_model xgboost/chunked-collectives/np4 4 4 "1:7:round" -- ftrabit_test_max_count=1000

# A training a replacement could not replay the same is refused before it starts, with a
# message saying what to set.
xgb_refuses() {
    local log=$logs/xgboost-refuses-$1.log
    shift
    xgb_train "$log" 2 "" -- "$@"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && [ -z "$xgb_sha" ] \
        && grep -aq "ftrabit engine: this training cannot be replayed" "$log"
}
for case in "nthread nthread=0" "colsample colsample_bytree=0.5" "subsample subsample=0.8"; do
    name=xgboost/refuses-${case%% *}
    selected "$name" && xgb_ready "$name" && check "$name" xgb_refuses $case
done
