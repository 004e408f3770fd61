# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# The installation: ompi_info, man pages, refused parameters.

ompi_info_lists_ftrabit() {
    local out
    # ompi_info takes the component path from the environment, not from --mca
    out=$(OMPI_MCA_mca_base_component_path="$component_path" timeout -k 5 "$timeout_s" \
          "$OMPI_PREFIX/bin/ompi_info" --param coll ftrabit --level 9) || return 1
    echo "$out"
    for p in priority verbose allreduce_algorithm allreduce_rsag_min_bytes bcast_algorithm \
             bcast_pipeline_min_bytes bcast_segment_bytes result_replicas result_pool_mib spares \
             recoveries_without_progress checkpoint_dir checkpoint_keep notice; do
        grep -q "parameter \"coll_ftrabit_$p\"" <<<"$out" || { echo "missing coll_ftrabit_$p"; return 1; }
    done
}

# A wrong value of a parameter (NAME VALUE): the component refuses to open with a clear
# message; the job still runs on tuned.
param_is_refused() {
    local out=$logs/invalid-$1.out rc
    timeout -k 10 "$timeout_s" "${mpirun[@]}" --mca "$1" "$2" -np 2 \
        "$build/test/mpi/coll_selection" excluded </dev/null >"$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] && grep -aq "$1 has an invalid value" "$out"
}

# `make install` puts a man page for every FTR_* function where man finds it, and each
# renders without a warning (groff -ww: unknown macros, bad escapes, broken .so links).
man_pages_installed() {
    local mandir=$build/stage/share/man f page out
    for f in ftrabit FTR_Init FTR_Finalize FTR_Allreduce FTR_Bcast FTR_Allreduce_bootstrap \
             FTR_Bcast_bootstrap FTR_Checkpoint FTR_Load_checkpoint FTR_Version FTR_Comm_recover \
             FTR_Cache_memory FTR_Origin; do
        page=$(man -M "$mandir" -w 3 "$f") || { echo "man 3 $f: not installed"; return 1; }
        echo "$f: $page"
        out=$(MANWIDTH=80 man --warnings=w -M "$mandir" 3 "$f" 2>&1 >/dev/null)
        [ -z "$out" ] || { echo "man 3 $f warns: $out"; return 1; }
        MANWIDTH=80 man -M "$mandir" 3 "$f" 2>/dev/null | grep -q "^SYNOPSIS" \
            || { echo "man 3 $f: no SYNOPSIS"; return 1; }
    done
    # every function the header exports has its page
    for f in $(grep -o 'FTR_[A-Za-z_]*(' "$build/stage/include/ftrabit.h" | tr -d '(' | sort -u); do
        case "$f" in *_at) f=${f%_at} ;; esac
        man -M "$mandir" -w 3 "$f" >/dev/null 2>&1 || { echo "no man page for $f"; return 1; }
    done
}

echo "== installation and parameters"
check install/ompi_info-lists-ftrabit ompi_info_lists_ftrabit
check install/man-pages man_pages_installed
check params/invalid-segment-size-refused param_is_refused coll_ftrabit_bcast_segment_bytes 0
check params/invalid-pool-bound-refused param_is_refused coll_ftrabit_result_pool_mib -2
check params/invalid-recoveries-without-progress-refused param_is_refused \
    coll_ftrabit_recoveries_without_progress -1
check params/invalid-join-timeout-refused param_is_refused coll_ftrabit_join_timeout -1
check params/invalid-message-limit-refused param_is_refused coll_ftrabit_test_message_limit -1
check params/invalid-checkpoint-keep-refused param_is_refused coll_ftrabit_checkpoint_keep 0
check params/invalid-notice-refused param_is_refused coll_ftrabit_notice 2
