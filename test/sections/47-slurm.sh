# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# Real Slurm on the simulated hosts (test/cluster/slurm.sh, docs/slurm.md): jobs in an
# allocation (sbatch, salloc) with mpirun --with-ft ulfm inside, a node lost under Slurm,
# a preemption notice to a node's processes, and direct launch with srun --mpi=pmix.

slurm_timeout_s=${OMPIRES_SLURM_TIMEOUT:-120} # a job that waits for Slurm to mark a node down
echo "== Slurm on the multi-host cluster (timeout ${slurm_timeout_s}s each)"
# shellcheck source=test/cluster/slurm.sh
. "$src/test/cluster/slurm.sh"
if slurm_why_not=$(slurm_unavailable); then :; else slurm_why_not=""; fi
slurm_jobs=() # output files of this section's jobs, for the logs of a failed test

# in_slurm NAME FUNCTION [ARGS...]: a check run with Slurm up on the cluster (brought up for
# the first selected test); every job cancelled and every node idle again after it.
in_slurm() {
    local name=$1
    selected "$name" || return 0
    if [ -n "$slurm_why_not" ]; then skip "$name" "$slurm_why_not"; return 0; fi
    cluster_for "$name" || return 0
    if [ ! -e "$(slurm_dir)" ] && ! slurm_up; then
        slurm_why_not="Slurm did not come up on the cluster"
        fail "$name" "$slurm_why_not"
        return 0
    fi
    hang_more_pids=cluster_all_pids
    check "$@"
    hang_more_pids=
    slurm_reset || fail "$name/reset" "Slurm could not be reset (a node did not come back)"
}

# The mpirun options of a job in the allocation: PRRTE's daemons on the management network
# (started by its slurm launcher through srun), MPI on the data networks, no binding (the
# hosts share 2 cores), 2 processes per node. plm_slurm_args --no-kill: the srun that holds
# PRRTE's daemons survives a lost node (see slurm_node_lost below).
slurm_mpirun=(--prtemca oob_tcp_if_include netc --mca btl_tcp_if_include neta,netb
              --bind-to none --mca mpi_yield_when_idle 1 --map-by ppr:2:node)
slurm_survives_node_loss=(--prtemca plm_slurm_args --no-kill)

# slurm_script FILE MPIRUN-ARGS...: a batch script that runs mpirun with the test runner's
# options, slurm_mpirun and MPIRUN-ARGS.
slurm_script() {
    local file=$1
    shift
    { echo '#!/bin/sh'
      printf '%q ' exec "${mpirun[@]}" "${slurm_mpirun[@]}" "$@"
      echo; } >"$file"
    chmod +x "$file"
}

# slurm_sbatch NAME [SBATCH OPTIONS...] -- MPIRUN-ARGS...: submit a batch job of 3 whole
# nodes from h0 and start waiting for it (sbatch --wait) in the background: $job, $out (the
# job's output), $log (sbatch's).
slurm_sbatch() {
    local name=$1 opts=()
    shift
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    log=$logs/slurm-$name.sbatch.log out=$logs/slurm-$name.log
    slurm_jobs+=("$out")
    slurm_script "$logs/slurm-$name.sh" "$@"
    rm -f "$out"
    start_timed "$slurm_timeout_s" "$log" "$SLURM_SELF" run h0 sbatch --wait -N 3 --exclusive \
        -J "$name" -o "$out" "${opts[@]}" "$logs/slurm-$name.sh"
}

# slurm_marks_appear DIR MARK...: until every MARK (ftr_kmeans --hold, --pause) is in DIR;
# 1 if not within the job's time.
slurm_marks_appear() {
    local dir=$1 t m missing
    shift
    for ((t = 0; t < slurm_timeout_s * 10; t++)); do
        missing=0
        for m in "$@"; do [ -e "$dir/$m" ] || missing=1; done
        [ $missing = 0 ] && return 0
        sleep 0.1
    done
    echo "marks not there: $*"
    return 1
}

# slurm_job_id LOG: the job's id, from sbatch's "Submitted batch job N".
slurm_job_id() { sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$1" | head -n 1; }

# slurm_ended: wait for the job of slurm_sbatch; print its output and Slurm's record of it;
# 0 if it ended in time with exit code 0.
slurm_ended() {
    wait_timed "$log"
    cat "$log"
    echo "---- job output ($out)"
    cat "$out" 2>/dev/null
    echo "---- Slurm's record"
    slurm_client h0 scontrol show job "$(slurm_job_id "$log")" 2>&1 | grep -E "JobState|NodeList="
    [ "$timed_out" = 0 ] || { echo "HANG"; return 1; }
    [ "$rc" = 0 ] || { echo "sbatch --wait exited with $rc"; return 1; }
}

# slurm_same_as APP: the job's centroids are those of ftr_kmeans on APP ranks without
# failures (on this host: where ranks run does not change them).
slurm_same_as() {
    local reference got
    reference=$(preemption_reference "$1")
    got=$(ft_fingerprint "$out")
    [ -n "$reference" ] && [ "$got" = "$reference" ] \
        || { echo "fingerprint ${got:-missing}, reference ${reference:-missing}"; return 1; }
}

# slurm_replaced_on HOSTS: the replacements of the job were on HOSTS ("h0 h1 ": sorted)
slurm_replaced_on() {
    local hosts
    hosts=$(sed -n 's/^rank [0-9]*: \(replacement starts\|spare takes over\) .* on \(h[0-9]*\)$/\2/p' \
            "$out" | sort | tr '\n' ' ')
    [ "$hosts" = "$1" ] || { echo "replacements on '${hosts}', expected '$1'"; return 1; }
}

# Slurm is up: three idle nodes named after their hosts with 4 CPUs each, one slurmd per
# host (each with its own pid file), one munged and one slurmctld on the management side
# serving them all, and a step across them.
slurm_nodes_up() {
    local out i
    slurm_client h0 sinfo -N -o '%N %T %c' | tee "$logs/slurm-sinfo.out"
    [ "$(grep -c ' idle 4$' "$logs/slurm-sinfo.out")" = "$cluster_hosts" ] || return 1
    for ((i = 0; i < cluster_hosts; i++)); do
        [ "$(ip netns pids "$(cluster_ns "h$i")" | xargs -r -n1 sh -c 'cat /proc/$0/comm' \
            | grep -c '^slurmd$')" = 1 ] || { echo "not one slurmd on h$i"; return 1; }
        slurm_daemon_alive "$(slurm_dir)/run/slurmd-h$i.pid" || { echo "h$i: no pid file"; return 1; }
    done
    [ "$(slurm_daemon_pids | grep -c ' munged$')" = 1 ] \
        && [ "$(slurm_daemon_pids | grep -c ' slurmctld$')" = 1 ] || return 1
    out=$(timeout 60 "$SLURM_SELF" run h0 srun -N "$cluster_hosts" hostname | sort | tr '\n' ' ')
    echo "srun -N $cluster_hosts hostname: $out"
    [ "$out" = "h0 h1 h2 " ]
}

# A batch job of 3 nodes runs ftr_kmeans with mpirun --with-ft ulfm (PRRTE's slurm launcher
# starts its daemons with srun); rank 3 (on h1) killed at iteration 7 is respawned on a
# node of the allocation, and the centroids are those of a run without failures.
slurm_sbatch_respawns() {
    local job log out rc timed_out
    slurm_sbatch kmeans-respawn -- --with-ft ulfm -np 6 "$build/examples/ftr_kmeans" --kill 3:7
    slurm_ended && slurm_same_as 6 && grep -q "^rank 3: replacement starts" "$out"
}

# salloc, pml/dr2 and warm spares: 4 ranks and 2 spares; rank 1 killed, a spare takes over.
slurm_salloc_dr2_spares() {
    local rc timed_out log=$logs/slurm-salloc-dr2.log out=$logs/slurm-salloc-dr2.log
    slurm_jobs+=("$out")
    run_timed "$ft_timeout_s" "$log" "$SLURM_SELF" run h0 salloc -N 3 --exclusive \
        "${mpirun[@]}" "${slurm_mpirun[@]}" --with-ft ulfm --mca pml dr2 \
        --mca coll_ftrabit_spares 2 -np 6 "$build/examples/ftr_kmeans" --kill 1:7
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] || { echo "salloc: exit $rc, timed out $timed_out"; return 1; }
    slurm_same_as 4 && [ "$(ft_takeovers "$out")" = "1 spare(s), 0 respawned" ] \
        && grep -q "Granted job allocation" "$log"
}

# ---- a node lost under Slurm --------------------------------------------------------------
# h2 dies whole (its slurmd, the slurmstepd and PRRTE daemon of the job, its ranks) while
# ranks 4 and 5 (world 4 and 5 on h2) hold at iteration 7; rank 0 pauses at iteration 20
# until Slurm has marked h2 DOWN (about 25 s: slurm.conf's SlurmdTimeout), so that Slurm's
# handling of the failed node meets the running job. By default Slurm then kills the whole
# allocation ("Killing JobId=N on failed node h2") and, with sbatch --no-kill, the step that
# holds PRRTE's daemons ("Killing JobId=N StepId=0 due to failed node h2"): PRRTE loses
# every daemon and the job ends. The job survives with sbatch --no-kill and srun --no-kill
# for that step (plm_slurm_args; PRRTE leaves out --kill-on-bad-exit itself for a
# recoverable job): Slurm takes h2 out of the job, the job runs on.
slurm_node_lost() { # NAME APP SPARES REPLACEMENTS-ON [mpirun options...]
    local name=$1 app=$2 spares=$3 hosts=$4 job log out rc timed_out marks
    shift 4
    marks=$(mktemp -d)
    slurm_sbatch "$name" --no-kill -- "${slurm_survives_node_loss[@]}" --with-ft ulfm \
        --mca coll_ftrabit_spares "$spares" "$@" -np $((app + spares)) \
        "$build/examples/ftr_kmeans" --kill-marks "$marks" --pause 0:20 "${slurm_holds[@]}"
    if ! slurm_marks_appear "$marks" "${slurm_held[@]/#/held-}"; then
        echo "the ranks on h2 never held"; stop_timed "$log"; slurm_ended; rm -rf "$marks"; return 1
    fi
    cluster_kill_host h2 || return 1
    echo "h2 killed at $(date +%T)"
    # rank 0 waits at iteration 20 for Slurm to mark h2 down
    slurm_marks_appear "$marks" paused-0
    slurm_wait_node_state h2 '^down' 60 && echo "h2 down at $(date +%T)"
    rm -f "$marks/paused-0"
    slurm_ended || { rm -rf "$marks"; return 1; }
    rm -rf "$marks"
    slurm_same_as "$app" && slurm_replaced_on "$hosts" || return 1
    grep -aq "lost daemon .* on node h2" "$out" || { echo "mpirun did not report the lost daemon"; return 1; }
    grep -q "error: Removing failed node h2 from JobId=$(slurm_job_id "$log")" \
        "$(slurm_dir)/log/slurmctld.log" || { echo "Slurm did not take h2 out of the job"; return 1; }
}

# Respawn: both replacements go to the live nodes of the allocation, one on each.
slurm_node_lost_respawn() {
    local slurm_held=(4 5) slurm_holds=(--hold 4:7 --hold 5:7)
    slurm_node_lost node-lost-respawn 6 0 "h0 h1 "
}
# Warm spares (4 ranks, spares world 3 on h1 and 5 on h2): application rank 3 (world 4,
# on h2) held at iteration 7; the spare on h1 takes it, the one on h2 is lost with it.
slurm_node_lost_spares() {
    local slurm_held=(3) slurm_holds=(--hold 3:7)
    slurm_node_lost node-lost-spares 4 2 "h1 "
}

# ---- a preemption notice to a node ---------------------------------------------------------
# A spot VM's notice, relayed by an agent on h2: SIGTERM to the MPI processes of h2 (world 4,
# application rank 3, and the spare world 5; not PRRTE's daemon), at iteration 7; h2 is lost
# whole once the handover happened (the end of the grace time). The spare on h1 takes rank
# 3 from the checkpoint after iteration 9: nothing replayed, no recovery from a failure,
# the centroids of a run without failures.
slurm_notice_then_node_lost() {
    local job log out rc timed_out marks pid
    marks=$(mktemp -d)
    slurm_sbatch notice-node --no-kill -- "${slurm_survives_node_loss[@]}" --with-ft ulfm \
        --mca coll_ftrabit_spares 2 -np 6 "$build/examples/ftr_kmeans" --kill-marks "$marks" \
        --pause 3:7 --pause 0:20
    if ! slurm_marks_appear "$marks" paused-3; then
        echo "rank 3 never paused"; stop_timed "$log"; slurm_ended; rm -rf "$marks"; return 1
    fi
    for pid in $(slurm_app_pids h2); do echo "SIGTERM to $pid on h2"; kill -TERM "$pid"; done
    rm -f "$marks/paused-3"
    slurm_marks_appear "$marks" paused-0
    grep -aq "handed over after a preemption notice" "$out" || echo "no handover seen before the loss"
    cluster_kill_host h2 || return 1
    rm -f "$marks/paused-0"
    slurm_ended || { rm -rf "$marks"; return 1; }
    rm -rf "$marks"
    slurm_same_as 4 && slurm_replaced_on "h1 " \
        && grep -aq "^rank 3: spare takes over at iteration 10 (checkpoint version 2)" "$out" \
        && grep -aq "rank 3 (world rank 4) handed over after a preemption notice" "$out" \
        && ! grep -aq "recovered from a process failure" "$out"
}

# ---- direct launch: srun --mpi=pmix --------------------------------------------------------
# Slurm's PMIx plugin (Debian's libpmix 4.2.2) serves Open MPI's own PMIx client: MPI runs,
# and ftrabit without failures gives the usual centroids.
slurm_srun_env=(env OMPI_MCA_mca_base_component_path="$component_path"
                OMPI_MCA_btl_tcp_if_include=neta,netb OMPI_MCA_mpi_yield_when_idle=1)
slurm_direct_launch_runs() {
    local rc timed_out log=$logs/slurm-srun-allreduce.log out=$logs/slurm-srun-kmeans.log
    run_timed "$ft_timeout_s" "$log" "$SLURM_SELF" run h0 "${slurm_srun_env[@]}" \
        srun --mpi=pmix -N 3 --ntasks-per-node=2 "$build/test/mpi/coll_allreduce"
    cat "$log"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && grep -aq "^mpitest .*: np 6: PASS" "$log" || return 1
    run_timed "$ft_timeout_s" "$out" "$SLURM_SELF" run h0 "${slurm_srun_env[@]}" \
        OMPI_MCA_mpi_ft_enable=1 srun --mpi=pmix -N 3 --ntasks-per-node=2 \
        "$build/examples/ftr_kmeans"
    cat "$out"
    [ "$timed_out" = 0 ] && [ "$rc" = 0 ] && slurm_same_as 6
}
# ... but a process failure ends the step: a survivor's ULFM reports the failure to its
# PMIx server (PMIX_ERR_PROC_TERM_WO_SYNC), and Slurm 22.05's plugin cancels the step on
# any such event. (MPI_Comm_spawn fails at once under srun, too: no respawn.)
slurm_direct_launch_failure_ends_the_step() {
    local rc timed_out out=$logs/slurm-srun-kill.log
    run_timed "$ft_timeout_s" "$out" "$SLURM_SELF" run h0 "${slurm_srun_env[@]}" \
        OMPI_MCA_mpi_ft_enable=1 srun --mpi=pmix -N 3 --ntasks-per-node=2 \
        "$build/examples/ftr_kmeans" --kill 3:7
    cat "$out"
    [ "$timed_out" = 0 ] && [ "$rc" != 0 ] && grep -aq "CANCELLED" "$out" \
        && ! grep -aq "^final centroids" "$out"
}

# Slurm taken down: no Slurm or MUNGE process left in the cluster's namespaces, no state,
# no controller address; the cluster itself stays for the sections after this one.
slurm_down_leaves_nothing() {
    local dir
    dir=$(slurm_dir)
    slurm_down || return 1
    echo "left: $(slurm_daemon_pids | tr '\n' ' ') state: $(ls -d "$dir" 2>/dev/null)"
    [ -z "$(slurm_daemon_pids)" ] && [ ! -e "$dir" ] || return 1
    ! ip -n "$(cluster_switch_ns)" addr show | grep -q "$(slurm_ctl_addr)/"
}

in_slurm slurm/nodes-up slurm_nodes_up
in_slurm slurm/sbatch-kmeans-respawn slurm_sbatch_respawns
in_slurm slurm/salloc-dr2-spares slurm_salloc_dr2_spares
in_slurm slurm/node-lost-respawn slurm_node_lost_respawn
in_slurm slurm/node-lost-spares slurm_node_lost_spares
in_slurm slurm/notice-then-node-lost slurm_notice_then_node_lost
in_slurm slurm/srun-direct-launch slurm_direct_launch_runs
in_slurm slurm/srun-direct-launch-failure-ends-the-step slurm_direct_launch_failure_ends_the_step
if selected slurm/down-leaves-nothing && [ -n "$CLUSTER_ID" ] && [ -e "$(slurm_dir)" ]; then
    check slurm/down-leaves-nothing slurm_down_leaves_nothing
fi
