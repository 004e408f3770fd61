/*
 * ompi-resilience: pml/dr2 gives up on a receiver that goes silent after acknowledging a
 * rendezvous' RNDV, after pml_dr2_retry_limit unanswered resends of the RNDV (two ranks,
 * mpirun --with-ft ulfm, a small retry limit and ACK timeouts).
 *
 * Rank 0 sends 1 MiB (a rendezvous) to rank 1. Rank 1 lets MPI run until the RNDV is
 * there (MPI_Iprobe sees it) and a little longer, so that it is acknowledged, then leaves
 * MPI for good without receiving it (it sleeps): to rank 0 the path to rank 1 died after
 * the RNDV got through. Rank 0's MPI_Send must end with MPIX_ERR_PROC_FAILED within a
 * bounded time, not wait for a go-ahead for ever. ULFM's fail-stop rule then ends rank 1
 * (reported dead), or its sleep ends. Rank 0 prints the verdict line.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BYTES (1 << 20)
/* Generous: with the runner's ACK timeouts the peer is given up on well within a second
 * (the RNDV's resend timer backs off from 4 RTOs); a loaded machine takes longer. */
#define GIVE_UP_WITHIN_SECONDS 20.0
/* Longer than that, shorter than the runner's timeout. */
#define SILENT_SECONDS 25

int main(int argc, char **argv)
{
    int rank, size, rc, eclass = MPI_SUCCESS;
    unsigned char *buf = calloc(1, BYTES);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (2 != size) {
        printf("dr2_silent: FAIL: needs exactly 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (0 == rank) {
        double t0 = MPI_Wtime(), elapsed;
        int ok;
        rc = MPI_Send(buf, BYTES, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        elapsed = MPI_Wtime() - t0;
        if (MPI_SUCCESS != rc) {
            MPI_Error_class(rc, &eclass);
        }
        ok = MPIX_ERR_PROC_FAILED == eclass && elapsed < GIVE_UP_WITHIN_SECONDS;
        printf("dr2_silent: rank 0: %s: a rendezvous to a receiver silent after its RNDV ended in "
               "MPIX_ERR_PROC_FAILED (error class %d after %.3f s)\n",
               ok ? "PASS" : "FAIL", eclass, elapsed);
        fflush(stdout);
        MPI_Finalize();
        free(buf);
        return ok ? 0 : 1;
    }
    int there = 0;
    while (!there) {
        MPI_Iprobe(0, 1, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE);
    }
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.2) { /* the RNDV's ACK leaves */
        MPI_Iprobe(0, 2, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE);
    }
    sleep(SILENT_SECONDS); /* out of MPI: nothing of rank 0's is answered any more */
    printf("dr2_silent: rank 1: still here after %d s\n", SILENT_SECONDS);
    fflush(stdout);
    free(buf);
    return 0; /* never finalizes: rank 0 may have declared it dead */
}
