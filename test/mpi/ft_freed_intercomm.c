/*
 * ompi-resilience: a process dies that belongs to an intercommunicator the application
 * has already freed, while a send on it is still pending.
 *
 * MPI allows both: MPI_Request_free on a send that has not completed, then MPI_Comm_free
 * of its communicator. Open MPI keeps such an intercommunicator in its table until the
 * send lets go of it, but frees its local communicator at once. When the remote process
 * dies, ULFM's failure handler revokes every communicator that holds it, this one too,
 * and pml/ob1 followed the intercommunicator's local communicator, MPI_COMM_NULL by then,
 * and died of SIGSEGV (Open MPI patch 0016). coll/ftrabit does exactly this when a
 * replacement dies before it joins: its join record is left to a send that may never
 * complete and the replacement's intercommunicator is freed (the cluster test
 * ft/cluster/replacement-dies-before-joining crashed the survivors' rank 0 that way).
 *
 * np 3: ranks 0 and 1 on one side, rank 2 on the other. Rank 0 starts a rendezvous send
 * to rank 2 that rank 2 never receives, lets the request go, frees the intercommunicator
 * and tells rank 2, which then kills itself. Ranks 0 and 1 see the failure, give its
 * handler time to run, shrink MPI_COMM_WORLD and sum over the result. Each survivor prints
 * "ft_freed_intercomm: rank R: PASS"; a crash or a hang fails the test (the harness).
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PENDING_BYTES (4 << 20) /* a rendezvous on every BTL */
#define TAG_FREED 7

static int survive(int rank)
{
    MPI_Comm shrunk;
    int dummy, sum = 0, one = 1, rc;

    /* Blocks until the failure of rank 2 is known here. */
    rc = MPI_Recv(&dummy, 1, MPI_INT, 2, TAG_FREED + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (MPIX_ERR_PROC_FAILED != rc) {
        printf("ft_freed_intercomm: rank %d: FAIL: a receive from the dead rank returned %d\n",
               rank, rc);
        return 1;
    }
    usleep(300000); /* the failure handler runs in the progress engine meanwhile */
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk);
        MPI_Comm_free(&shrunk);
    }
    if (MPI_SUCCESS != rc || 2 != sum) {
        printf("ft_freed_intercomm: rank %d: FAIL: shrink and allreduce: rc %d, sum %d\n", rank,
               rc, sum);
        return 1;
    }
    printf("ft_freed_intercomm: rank %d: PASS\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Comm local, inter;
    int rank, size, side, freed = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (3 != size) {
        if (0 == rank) {
            fprintf(stderr, "ft_freed_intercomm: run with -np 3\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    side = 2 == rank;
    MPI_Comm_split(MPI_COMM_WORLD, side, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : 2, TAG_FREED, &inter);

    if (2 == rank) {
        MPI_Recv(&freed, 1, MPI_INT, 0, TAG_FREED, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        raise(SIGKILL);
    }
    if (0 == rank) {
        char *data = calloc(PENDING_BYTES, 1);
        MPI_Request req;
        MPI_Isend(data, PENDING_BYTES, MPI_BYTE, 0, TAG_FREED, inter, &req);
        MPI_Request_free(&req); /* data stays allocated: the send may still read it */
        MPI_Comm_free(&inter);
        MPI_Send(&freed, 1, MPI_INT, 2, TAG_FREED, MPI_COMM_WORLD);
    } else {
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&local);
    int failed = survive(rank);
    MPI_Finalize();
    return failed;
}
