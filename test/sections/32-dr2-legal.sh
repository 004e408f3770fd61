# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ...).
# pml/dr2 and legal programs under ULFM: receive paths across the failure of a process
# that takes no part in them, revoked and freed communicators (issue 45).

echo "== pml/dr2: legal programs under ULFM (timeout ${timeout_s}s each)"
# Receives across the failure of an unrelated process (dr2_ulfm_recv failure: one process
# killed per scenario). An MPI_Recv(ANY_SOURCE) matched to a live sender's rendezvous
# completes with it and the sender's send completes (before: MPIX_ERR_PROC_FAILED, the
# message thrown away, the send never completed); MPI_Wait on such an MPI_Irecv and a
# persistent ANY_SOURCE receive likewise (before: MPIX_ERR_PROC_FAILED_PENDING); unmatched
# ANY_SOURCE receives and probes fail as ULFM says and match again once acknowledged.
mpi dr2/ulfm-recv-unrelated-failure 9 pass test/mpi/dr2_ulfm_recv "${DR2[@]}" "${FT[@]}" -- failure
# Context ids reused (dr2_cid_reuse): messages of a communicator that rank 1 revoked and
# freed unreceived are still being resent (30 % injected loss) when the next communicator
# takes its context id; they must be dropped there, never received on the new one (before:
# one was received in place of the new one's message, eager run 2 of 2), and a rendezvous
# among them must be answered so that its send ends (before: it waited for ever, 2 of 2).
# Each run checks that such late messages arrived (pml_dr2_stale_msgs).
CID_REUSE=(--mca pml_dr2_inject_drop 0.3 --mca pml_dr2_ack_timeout_us 2000
           --mca pml_dr2_ack_timeout_max_us 20000)
mpi dr2/cid-reuse-eager 2 pass test/mpi/dr2_cid_reuse "${DR2[@]}" "${FT[@]}" "${CID_REUSE[@]}" \
    -- 50 8 12 expect-stale
mpi dr2/cid-reuse-rndv 2 pass test/mpi/dr2_cid_reuse "${DR2[@]}" "${FT[@]}" "${CID_REUSE[@]}" \
    -- 20 8 65536 expect-stale
