/*
 * Mismatched collective arguments end in a clear error, never a hang.
 *   (no argument)  run with --with-ft ulfm: every rank's MPI_Allreduce returns an error
 *                  (the rank that sees the mismatch reports it and revokes the
 *                  communicator, the others see the revoke); MPI_Bcast returns an error
 *                  on the rank whose count differs, and nobody hangs.
 *   fatal          run without ULFM, default error handler: the job aborts with the
 *                  message (the runner checks the output and the exit code).
 */
#include <string.h>

#include "mpitest.h"

/* Counts stay below the shared-memory eager limit on purpose: Open MPI 5.0.7's ob1
 * overflows the receive buffer when a rendezvous message over sm with CMA single copy is
 * truncated (seen with plain MPI_Send/MPI_Recv; see README, "Known Open MPI defects"). */
#define SHORT_COUNT 100
#define LONG_COUNT 200

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_mismatch");
    int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
    static double buf[LONG_COUNT];

    if (fatal) {
        MPI_Allreduce(MPI_IN_PLACE, buf, mt_rank == 0 ? SHORT_COUNT : LONG_COUNT, MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD);
        MT_CHECK(0, "a mismatched MPI_Allreduce returned under MPI_ERRORS_ARE_FATAL");
        return mt_finish();
    }

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int err = MPI_Allreduce(MPI_IN_PLACE, buf, mt_rank == 0 ? SHORT_COUNT : LONG_COUNT, MPI_DOUBLE, MPI_SUM,
                            comm);
    MT_CHECK(err != MPI_SUCCESS, "mismatched MPI_Allreduce counts returned success");
    MPI_Comm_free(&comm);

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    err = MPI_Bcast(buf, mt_rank == mt_size - 1 ? SHORT_COUNT : LONG_COUNT, MPI_DOUBLE, 0, comm);
    /* Ranks that finished their part before anyone saw the mismatch may return success;
     * the rank whose count differs always sees it. */
    MT_CHECK(err != MPI_SUCCESS || mt_rank != mt_size - 1 || mt_size == 1,
             "MPI_Bcast with a short count on this rank returned success");
    MPI_Comm_free(&comm);
    return mt_finish();
}
