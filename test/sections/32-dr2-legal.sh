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
