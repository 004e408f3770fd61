/*
 * ompi-resilience: pml/dr2 gives up on a peer it cannot reach, after pml_dr2_retry_limit.
 *
 * The last rank loses its network: everything it sends is dropped between dr2 and the BTL
 * (it sets pml_dr2_inject_drop to 1 for itself, in its environment, before MPI_Init). The
 * other ranks send to it and never see an ACK; after pml_dr2_retry_limit timer expiries
 * they declare it unreachable. The isolated rank only receives (it has no timer of its
 * own running, so it never declares the others unreachable first).
 *  - Under ULFM (mpirun --with-ft ulfm, argument "ulfm"): the survivors' receive from the
 *    isolated rank ends with MPIX_ERR_PROC_FAILED within a bounded time; they shrink the
 *    communicator and exchange a message over it; ULFM's fail-stop rule ends the isolated
 *    rank (it learns it was reported dead). Each survivor prints a verdict line.
 *  - Without ULFM the job ends with dr2's message (the runner looks for it).
 * No mt_finish(): the isolated rank can take part in nothing.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generous: with the runner's ACK timeouts (2, 4, 8, 16 ms, capped) the peer is given up
 * on after a few tens of milliseconds; a loaded machine takes longer; a hang never ends. */
#define GIVE_UP_WITHIN_SECONDS 20.0

static int verdict(int rank, int ok, const char *what, int eclass, double elapsed)
{
    printf("dr2_unreachable: rank %d: %s: %s (error class %d after %.3f s)\n", rank,
           ok ? "PASS" : "FAIL", what, eclass, elapsed);
    fflush(stdout);
    return ok ? 0 : 1;
}

/* The isolated rank: receives what the others send, then waits for a message that never
 * comes, until ULFM ends it (or, without ULFM, the job ends). */
static void isolated_rank(int size)
{
    int value;

    for (int src = 0; src < size - 1; src++) {
        MPI_Recv(&value, 1, MPI_INT, src, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Recv(&value, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("dr2_unreachable: rank %d: FAIL: the isolated rank was never ended\n", size - 1);
    fflush(stdout);
}

static int surviving_rank(int rank, int size, int ulfm)
{
    int payload = rank, incoming = -1, rc, eclass = MPI_SUCCESS, failures = 0;
    double t0 = MPI_Wtime(), elapsed;
    MPI_Comm survivors;

    /* an eager send completes at once; dr2 keeps its copy until acknowledged: this is the
     * message whose ACK never comes */
    MPI_Send(&payload, 1, MPI_INT, size - 1, 1, MPI_COMM_WORLD);
    rc = MPI_Recv(&incoming, 1, MPI_INT, size - 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    elapsed = MPI_Wtime() - t0;
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    if (!ulfm) {
        /* without ULFM dr2 ends the job before the receive could return */
        return verdict(rank, 0, "the receive returned instead of the job ending", eclass, elapsed);
    }
    failures += verdict(rank, MPIX_ERR_PROC_FAILED == eclass && elapsed < GIVE_UP_WITHIN_SECONDS,
                        "receive from the unreachable rank ended in MPIX_ERR_PROC_FAILED",
                        eclass, elapsed);

    /* the survivors go on without it */
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &survivors);
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
        return failures + verdict(rank, 0, "MPIX_Comm_shrink failed", eclass, MPI_Wtime() - t0);
    }
    int n, me, next, prev, token = -1;
    MPI_Comm_size(survivors, &n);
    MPI_Comm_rank(survivors, &me);
    next = (me + 1) % n;
    prev = (me + n - 1) % n;
    rc = MPI_Sendrecv(&me, 1, MPI_INT, next, 4, &token, 1, MPI_INT, prev, 4, survivors,
                      MPI_STATUS_IGNORE);
    eclass = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    failures += verdict(rank, MPI_SUCCESS == rc && n == size - 1 && token == prev,
                        "the survivors exchange messages after shrinking", eclass,
                        MPI_Wtime() - t0);
    MPI_Comm_free(&survivors);
    return failures;
}

int main(int argc, char **argv)
{
    int rank, size, failures = 0, ulfm = argc > 1 && 0 == strcmp(argv[1], "ulfm");
    const char *world_rank = getenv("OMPI_COMM_WORLD_RANK");
    const char *world_size = getenv("OMPI_COMM_WORLD_SIZE");

    if (NULL != world_rank && NULL != world_size && atoi(world_rank) == atoi(world_size) - 1) {
        setenv("OMPI_MCA_pml_dr2_inject_drop", "1", 1); /* this rank's network is gone */
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        printf("dr2_unreachable: FAIL: needs 2 or more ranks\n");
        MPI_Finalize();
        return 1;
    }

    if (rank == size - 1) {
        isolated_rank(size);
        failures = 1;
    } else {
        failures = surviving_rank(rank, size, ulfm);
    }
    MPI_Finalize();
    if (0 == failures) {
        printf("dr2_unreachable: rank %d: finalized\n", rank);
        fflush(stdout); /* the launcher may end the job as soon as every process left MPI */
    }
    return failures ? 1 : 0;
}
