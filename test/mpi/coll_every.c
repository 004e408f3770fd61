/*
 * Every kind of collective a program may call, each result checked: blocking,
 * non-blocking and persistent collectives on MPI_COMM_WORLD, collectives on
 * MPI_COMM_SELF, on an intercommunicator and neighbourhood collectives on a Cartesian
 * communicator. Run with `--mca coll ftrabit` (an include list naming a component that
 * provides only allreduce and bcast), the job must run, ftrabit must serve its two
 * collectives on MPI_COMM_WORLD and the other components the rest.
 *
 * Arguments: "ftrabit-serves" additionally checks ftrabit's MPI_T counters.
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

static int sum_0_to(int n) { return n * (n - 1) / 2; }

static void blocking(MPI_Comm comm, int rank, int size)
{
    int v = rank, r = -1, *all = malloc(sizeof(int) * (size_t) size);
    int *counts = malloc(sizeof(int) * (size_t) size), *displs = malloc(sizeof(int) * (size_t) size);
    for (int i = 0; i < size; i++) {
        counts[i] = 1;
        displs[i] = i;
    }

    MPI_Barrier(comm);
    MPI_Reduce(&v, &r, 1, MPI_INT, MPI_SUM, 0, comm);
    MT_CHECK(rank != 0 || r == sum_0_to(size), "MPI_Reduce gave %d", r);
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    MT_CHECK(r == sum_0_to(size), "MPI_Allreduce gave %d", r);
    r = rank == 0 ? 77 : 0;
    MPI_Bcast(&r, 1, MPI_INT, 0, comm);
    MT_CHECK(r == 77, "MPI_Bcast gave %d", r);
    MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, comm);
    for (int i = 0; i < size; i++) MT_CHECK(all[i] == i, "MPI_Allgather [%d] = %d", i, all[i]);
    memset(all, 0xff, sizeof(int) * (size_t) size);
    MPI_Allgatherv(&v, 1, MPI_INT, all, counts, displs, MPI_INT, comm);
    for (int i = 0; i < size; i++) MT_CHECK(all[i] == i, "MPI_Allgatherv [%d] = %d", i, all[i]);
    MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, comm);
    MPI_Gatherv(&v, 1, MPI_INT, all, counts, displs, MPI_INT, 0, comm);
    for (int i = 0; rank == 0 && i < size; i++) MT_CHECK(all[i] == i, "MPI_Gather(v) [%d]", i);
    for (int i = 0; i < size; i++) all[i] = 10 * i;
    MPI_Scatter(all, 1, MPI_INT, &r, 1, MPI_INT, 0, comm);
    MT_CHECK(r == 10 * rank, "MPI_Scatter gave %d", r);
    MPI_Scatterv(all, counts, displs, MPI_INT, &r, 1, MPI_INT, 0, comm);
    MT_CHECK(r == 10 * rank, "MPI_Scatterv gave %d", r);

    int *send = malloc(sizeof(int) * (size_t) size), *recv = malloc(sizeof(int) * (size_t) size);
    for (int i = 0; i < size; i++) send[i] = rank * 100 + i;
    MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, comm);
    for (int i = 0; i < size; i++) MT_CHECK(recv[i] == i * 100 + rank, "MPI_Alltoall [%d]", i);
    MPI_Alltoallv(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, comm);
    for (int i = 0; i < size; i++) MT_CHECK(recv[i] == i * 100 + rank, "MPI_Alltoallv [%d]", i);
    int *bdispls = malloc(sizeof(int) * (size_t) size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t) size);
    for (int i = 0; i < size; i++) {
        bdispls[i] = i * (int) sizeof(int);
        types[i] = MPI_INT;
    }
    MPI_Alltoallw(send, counts, bdispls, types, recv, counts, bdispls, types, comm);
    for (int i = 0; i < size; i++) MT_CHECK(recv[i] == i * 100 + rank, "MPI_Alltoallw [%d]", i);

    for (int i = 0; i < size; i++) send[i] = i + rank;
    MPI_Reduce_scatter_block(send, &r, 1, MPI_INT, MPI_SUM, comm);
    MT_CHECK(r == size * rank + sum_0_to(size), "MPI_Reduce_scatter_block gave %d", r);
    MPI_Reduce_scatter(send, &r, counts, MPI_INT, MPI_SUM, comm);
    MT_CHECK(r == size * rank + sum_0_to(size), "MPI_Reduce_scatter gave %d", r);
    MPI_Scan(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    MT_CHECK(r == sum_0_to(rank + 1), "MPI_Scan gave %d", r);
    MPI_Exscan(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    MT_CHECK(rank == 0 || r == sum_0_to(rank), "MPI_Exscan gave %d", r);
    int a[4] = {1, 2, 3, 4}, b[4];
    MPI_Reduce_local(a, b, 4, MPI_INT, MPI_MAX);
    free(send), free(recv), free(bdispls), free(types), free(all), free(counts), free(displs);
}

static void nonblocking_and_persistent(MPI_Comm comm, int rank, int size)
{
    MPI_Request reqs[4];
    int v = rank, sum = -1, bval = rank == 0 ? 5 : 0, *all = malloc(sizeof(int) * (size_t) size);
    MPI_Ibarrier(comm, &reqs[0]);
    MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm, &reqs[1]);
    MPI_Ibcast(&bval, 1, MPI_INT, 0, comm, &reqs[2]);
    MPI_Iallgather(&v, 1, MPI_INT, all, 1, MPI_INT, comm, &reqs[3]);
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    MT_CHECK(sum == sum_0_to(size), "MPI_Iallreduce gave %d", sum);
    MT_CHECK(bval == 5, "MPI_Ibcast gave %d", bval);
    for (int i = 0; i < size; i++) MT_CHECK(all[i] == i, "MPI_Iallgather [%d]", i);

    MPI_Request persistent;
    MPI_Allreduce_init(&v, &sum, 1, MPI_INT, MPI_MAX, comm, MPI_INFO_NULL, &persistent);
    for (int round = 0; round < 3; round++) {
        v = rank + round;
        MPI_Start(&persistent);
        MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        MT_CHECK(sum == size - 1 + round, "MPI_Allreduce_init round %d gave %d", round, sum);
    }
    MPI_Request_free(&persistent);
    free(all);
}

static void intercommunicator(int rank, int size)
{
    if (size < 2) {
        return;
    }
    MPI_Comm half, inter;
    int color = rank % 2, remote_size, v = 1, sum = -1;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 9, &inter);
    MPI_Comm_remote_size(inter, &remote_size);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter);
    MT_CHECK(sum == remote_size, "MPI_Allreduce on an intercommunicator gave %d", sum);
    MPI_Barrier(inter);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

static void neighbourhood(int rank, int size)
{
    MPI_Comm ring;
    int periodic = 1, got[2] = {-1, -1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring);
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, ring);
    MT_CHECK(got[0] == (rank - 1 + size) % size && got[1] == (rank + 1) % size,
             "MPI_Neighbor_allgather gave %d %d", got[0], got[1]);
    MPI_Comm_free(&ring);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_every");
    int check_ftrabit = argc > 1 && 0 == strcmp(argv[1], "ftrabit-serves");
    if (check_ftrabit && mt_size > 1) {
        /* one call each (other collectives may call bcast inside: counted apart) */
        long a0 = mt_ftrabit_counter("allreduce_calls"), b0 = mt_ftrabit_counter("bcast_calls");
        int x = 1, sum = 0, v = mt_rank == 0 ? 3 : 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        long a1 = mt_ftrabit_counter("allreduce_calls");
        MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
        long b1 = mt_ftrabit_counter("bcast_calls");
        MT_CHECK(a1 - a0 == 1 && b1 - b0 == 1,
                 "ftrabit served %ld of 1 MPI_Allreduce and %ld of 1 MPI_Bcast on MPI_COMM_WORLD",
                 a1 - a0, b1 - b0);
        MT_CHECK(sum == mt_size && v == 3, "allreduce %d, bcast %d", sum, v);
    }
    blocking(MPI_COMM_WORLD, mt_rank, mt_size);
    blocking(MPI_COMM_SELF, 0, 1);
    nonblocking_and_persistent(MPI_COMM_WORLD, mt_rank, mt_size);
    intercommunicator(mt_rank, mt_size);
    neighbourhood(mt_rank, mt_size);
    return mt_finish();
}
