# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# coll/ftrabit against what MPI allows and what a recovery must not leak or cut short
# (issue 45): datatypes that differ between ranks, requests abandoned after an error, a
# recovery that takes long but progresses, memory across many recoveries.

echo "== coll/ftrabit: legal programs (timeout ${timeout_s}s each)"
# test/mpi/coll_legal: broadcasts whose ranks describe one type signature with different
# datatypes and counts, allreduces with padded and derived datatypes, every byte checked.
# With coll/tuned, then with every algorithm of ftrabit (forced, segments cut inside
# elements); each must pass and receive the same bytes (digest) as coll/tuned on as many
# ranks (the data depends on the number of ranks).
for np in 4 5; do mpi legal/tuned "$np" pass test/mpi/coll_legal --with-ft ulfm --mca coll ^ftrabit; done
legal_algorithms=(
    "pipeline-997-rsag 5 --mca coll_ftrabit_bcast_algorithm pipeline
        --mca coll_ftrabit_bcast_segment_bytes 997
        --mca coll_ftrabit_allreduce_algorithm reduce_scatter_allgather"
    "pipeline-recursive-doubling 4 --mca coll_ftrabit_bcast_algorithm pipeline
        --mca coll_ftrabit_allreduce_algorithm recursive_doubling"
    "binomial-rsag 4 --mca coll_ftrabit_bcast_algorithm binomial
        --mca coll_ftrabit_allreduce_algorithm reduce_scatter_allgather"
    "knomial 5 --mca coll_ftrabit_bcast_algorithm knomial"
    "linear 4 --mca coll_ftrabit_bcast_algorithm linear"
)
for spec in "${legal_algorithms[@]}"; do
    read -r -a words <<<"$spec"
    mpi "legal/${words[0]}" "${words[1]}" pass test/mpi/coll_legal --with-ft ulfm \
        "${words[@]:2}" -- --ftrabit
done
legal_digest() { sed -n 's/^coll_legal digest //p' "$1" | head -n 1; }
legal_same_bytes_as_tuned() {
    local want spec words got rc=0
    for spec in "${legal_algorithms[@]}"; do
        read -r -a words <<<"$spec"
        want=$(legal_digest "$logs/legal_tuned-np${words[1]}.log")
        got=$(legal_digest "$logs/legal_${words[0]}-np${words[1]}.log")
        echo "${words[0]} on ${words[1]} ranks: ${got:-no digest}, coll/tuned: ${want:-no digest}"
        [ -n "$want" ] && [ "$got" = "$want" ] || rc=1
    done
    return $rc
}
check mpi/legal/same-bytes-as-tuned legal_same_bytes_as_tuned

echo "== coll/ftrabit: requests after an error (timeout ${timeout_s}s each)"
# An allreduce whose send fails (MPIX_ERR_REVOKED) while its receive has matched the live
# partner's message must not return before that message is in: its buffer is checked
# after the return (test/mpi/ft_abandoned_receive.c says why pml/dr2 shows it).
mpi ft/abandoned-receive-no-late-data 4 pass test/mpi/ft_abandoned_receive --with-ft ulfm \
    --mca pml dr2 --mca coll_ftrabit_allreduce_algorithm recursive_doubling
# 50 recoveries (a revoke in the middle of an allreduce, then FTR_Comm_recover): the
# requests that ended in error are freed, so each recovery's communicators and their
# scratch go; resident memory may not grow by 8 MiB from round 10 to round 50 (it grew by
# 35 MiB before, on the rank whose requests failed).
mpi ft/recovery-memory-bounded 4 pass test/mpi/ft_recovery_memory --with-ft ulfm

echo "== coll/ftrabit: a recovery over a slow network (timeout ${ft_timeout_s}s)"
# A recovery that sends a 48 MiB checkpoint over 100 Mbit/s, for longer than its
# coll_ftrabit_recovery_timeout of 2 s, progressing all the while, must finish: the
# timeout bounds a lack of progress, not a transfer (it ended such recoveries before, with
# a message blaming the replacements). The network: the loopback of a network namespace
# of its own, limited by tc's token bucket filter; btl/tcp over it, one spare.
slow_ns=ompires-slow-$$
slow_net_why_not() {
    [ "$(id -u)" = 0 ] || { echo "needs root (a network namespace and tc)"; return; }
    command -v ip >/dev/null && command -v tc >/dev/null || { echo "needs ip and tc (iproute2)"; return; }
    ip netns add "$slow_ns" 2>/dev/null || { echo "cannot create a network namespace"; return; }
    ip -n "$slow_ns" link set lo mtu 1500 up \
        && tc -n "$slow_ns" qdisc add dev lo root tbf rate 100mbit burst 32kb latency 100ms \
        || echo "tc cannot limit a namespace's loopback (no sch_tbf?)"
}
slow_net_down() {
    local pid
    for pid in $(ip netns pids "$slow_ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$slow_ns" 2>/dev/null
    return 0
}
slow_recovery_progresses() {
    local log=$logs/ft-slow-recovery.log rc timed_out secs
    run_timed "$ft_timeout_s" "$log" ip netns exec "$slow_ns" "${mpirun[@]}" --with-ft ulfm \
        --mca btl tcp,self --mca btl_tcp_if_include lo --mca coll_ftrabit_spares 1 \
        --mca coll_ftrabit_recovery_timeout 2 -np 4 "$build/test/mpi/ft_large_state" \
        --global-bytes 50331648 --kill 1:3
    secs=$(sed -n 's/^ftrabit: recovered from a process failure in \([0-9.]*\) s.*/\1/p' "$log" | head -n 1)
    echo "exit $rc, recovery took ${secs:-no} s (coll_ftrabit_recovery_timeout 2 s)"
    [ $timed_out = 0 ] && [ $rc = 0 ] && grep -q "^mpitest ft_large_state: np 3: PASS" "$log" \
        && awk -v s="${secs:-0}" 'BEGIN { exit !(s > 2) }'
}
if selected ft/recovery-progresses-over-slow-network; then
    why=$(slow_net_why_not)
    if [ -n "$why" ]; then
        skip ft/recovery-progresses-over-slow-network "$why"
    else
        check ft/recovery-progresses-over-slow-network slow_recovery_progresses
    fi
    slow_net_down
fi
