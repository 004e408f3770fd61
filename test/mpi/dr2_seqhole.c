/*
 * ompi-resilience: a send that ULFM interrupts must not leave a hole in the matching
 * sequence of its communicator (pml/dr2, three ranks, mpirun --with-ft ulfm,
 * pml_dr2_window 1, the linear bcast).
 *
 * Rank 0 sends a message to rank 1 while rank 1 is out of MPI (it sleeps): with a window
 * of one vfrag, rank 0 can send nothing more to rank 1 until rank 1 acknowledges it.
 * Rank 0 then starts an MPI_Bcast of 1 MiB (a rendezvous to each of ranks 1 and 2; the
 * one to rank 1 waits for the window, with its sequence number on MPI_COMM_WORLD already
 * taken), and rank 2 dies (SIGKILL) without taking part. The failure makes the bcast end
 * in error on rank 0 (collectives on MPI_COMM_WORLD are revoked). Point-to-point between
 * the survivors goes on: rank 0 sends rank 1 one more message, rank 1 receives both.
 * The bcast's message to rank 1 must reach rank 1 to be dropped there: abandoned on rank
 * 0 it leaves a sequence number rank 1 never sees, and rank 1 waits for it for ever
 * before matching the message behind it.
 *
 * The sleep only makes the bcast's send wait for the window when the failure strikes
 * (what the test is about); no verdict depends on it. Each survivor prints one verdict
 * line; rank 2 prints nothing.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BCAST_BYTES (1 << 20)

static int verdict(int rank, int ok, const char *what, int eclass)
{
    printf("dr2_seqhole: rank %d: %s: %s (error class %d)\n", rank, ok ? "PASS" : "FAIL", what,
           eclass);
    fflush(stdout);
    return ok ? 0 : 1;
}

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

int main(int argc, char **argv)
{
    int rank, size, failures = 0, first = 1, second = 2, got1 = 0, got2 = 0, token = 3, rc1, rc2;
    unsigned char *buf = calloc(1, BCAST_BYTES);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (3 != size) {
        printf("dr2_seqhole: FAIL: needs exactly 3 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (0 == rank) {
        MPI_Send(&first, 1, MPI_INT, 1, 1, MPI_COMM_WORLD); /* fills the window to rank 1 */
        MPI_Send(&token, 1, MPI_INT, 2, 9, MPI_COMM_WORLD); /* rank 2 may die now */
        double t0 = MPI_Wtime();
        rc1 = MPI_Bcast(buf, BCAST_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        printf("dr2_seqhole: rank 0: the bcast returned after %.3f s\n", MPI_Wtime() - t0);
        failures += verdict(rank, MPI_SUCCESS != rc1, "the bcast a rank died in ended in error",
                            error_class(rc1));
        rc2 = MPI_Send(&second, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        failures += verdict(rank, MPI_SUCCESS == rc2, "a message to a survivor after it",
                            error_class(rc2));
    } else if (1 == rank) {
        sleep(3); /* out of MPI: rank 0's window to us stays full */
        rc1 = MPI_Recv(&got1, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        rc2 = MPI_Recv(&got2, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        failures += verdict(rank, MPI_SUCCESS == rc1 && MPI_SUCCESS == rc2 && 1 == got1 && 2 == got2,
                            "both messages from rank 0 received, around the interrupted bcast",
                            error_class(MPI_SUCCESS != rc1 ? rc1 : rc2));
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        raise(SIGKILL);
    }
    MPI_Finalize();
    free(buf);
    return failures ? 1 : 0;
}
