/*
 * ompi-resilience: coll_ftrabit_uniform gives every survivor the same outcome.
 *
 * Plain MPI + ULFM under coll/ftrabit. The ranks run a series of MPI_Bcast and
 * MPI_Allreduce calls; one rank (argv[1], default the last) kills itself (SIGKILL) just
 * before call number 5. Each survivor stops at its first failed call. With
 * coll_ftrabit_uniform=true every survivor must stop at the same call, and that call must
 * be number 5: the dead rank took no part in it, so it cannot have succeeded anywhere.
 * The survivors then shrink and compare where they stopped.
 *
 * Output: "mpitest: rank R done" per survivor, then from the lowest survivor
 * "mpitest ft_uniform: np N: PASS" (or FAIL). Run with --with-ft ulfm.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define CALLS 12
#define VICTIM_CALL 5

int main(int argc, char **argv)
{
    int rank, size, rc = MPI_SUCCESS, first_failed = CALLS, failures = 0;
    MPI_Comm shrunk;
    long buf[1024];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int victim = argc > 1 ? atoi(argv[1]) : size - 1;

    for (int call = 0; call < CALLS; call++) {
        if (rank == victim && call == VICTIM_CALL) {
            raise(SIGKILL);
        }
        for (int i = 0; i < 1024; i++) {
            buf[i] = rank + i + call;
        }
        rc = call % 2 ? MPI_Bcast(buf, 1024, MPI_LONG, call % size, MPI_COMM_WORLD)
                      : MPI_Allreduce(MPI_IN_PLACE, buf, 1024, MPI_LONG, MPI_SUM,
                                      MPI_COMM_WORLD);
        if (MPI_SUCCESS != rc) {
            first_failed = call;
            break;
        }
    }

    /* Compare among the survivors. */
    MPIX_Comm_revoke(MPI_COMM_WORLD);
    MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk);
    int srank, ssize;
    MPI_Comm_rank(shrunk, &srank);
    MPI_Comm_size(shrunk, &ssize);
    int *all = malloc(sizeof(int) * (size_t) ssize);
    MPI_Allgather(&first_failed, 1, MPI_INT, all, 1, MPI_INT, shrunk);
    if (0 == srank) {
        for (int r = 0; r < ssize; r++) {
            if (all[r] != VICTIM_CALL) {
                printf("mpitest ft_uniform: survivor %d stopped at call %d, expected %d\n", r,
                       all[r], VICTIM_CALL);
                failures++;
            }
        }
    }
    free(all);
    MPI_Comm_free(&shrunk);
    MPI_Finalize();
    printf("mpitest: rank %d done\n", rank);
    if (0 == srank) {
        printf("mpitest ft_uniform: np %d: %s\n", size, failures ? "FAIL" : "PASS");
    }
    return failures ? 1 : 0;
}
