/*
 * ompi-resilience: revoke, shrink and agree in a loop, with communication in flight
 * (mpirun --with-ft ulfm, any number of ranks >= 3; written for pml/dr2, passes over ob1).
 *
 *   dr2_ulfm_loop ITERATIONS
 *
 * Each iteration, on a fresh duplicate of MPI_COMM_WORLD:
 *  1. every rank but the revoker starts a ring exchange: a rendezvous-sized MPI_Isend to
 *     the next rank, an MPI_Irecv from the previous one, and a burst of small eager sends
 *     to the next rank that nobody receives. The revoker (a different rank each time)
 *     posts nothing and revokes the communicator; the others enter MPI_Barrier on it.
 *  2. Checks: the barrier ends with MPIX_ERR_REVOKED; the receive from the revoker (no
 *     message can match it) ends with MPIX_ERR_REVOKED; every other ring request ends with
 *     MPI_SUCCESS (matched in time; for the standard-mode send to the revoker, which
 *     nobody receives, success only says its buffer is free again) or MPIX_ERR_REVOKED,
 *     nothing else; a receive posted after the revoke ends with MPIX_ERR_REVOKED.
 * Every rank runs every iteration, failed checks or not, so that none waits for another
 * in a later one.
 *  3. MPIX_Comm_shrink gives a communicator of the same size (nobody failed), the revoked
 *     one is freed at once; MPIX_Comm_agree over the new one returns the AND of every
 *     rank's flag, a ring exchange over it delivers every value, a barrier completes.
 * A hang (the runner's timeout) is the failure the test is mostly about: messages dropped
 * by revoked communicators, left unacknowledged or with holes in their sequence, end up
 * blocking the traffic of the later iterations.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define RING_INTS (1024 * 1024) /* 4 MiB: a rendezvous on every transport */
#define BURST 20

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

static int success_or_revoked(int rc)
{
    return MPI_SUCCESS == rc || MPIX_ERR_REVOKED == error_class(rc);
}

static void one_iteration(int it, int *sbuf, int *rbuf)
{
    int size = mt_size, rank = mt_rank, revoker = it % size;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, rc, flag, v;
    MPI_Comm comm, shrunk;
    MPI_Request ring[2], burst[BURST];

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    if (rank == revoker) {
        MPIX_Comm_revoke(comm);
    } else {
        sbuf[0] = it;
        MPI_Isend(sbuf, RING_INTS, MPI_INT, next, 1, comm, &ring[0]);
        MPI_Irecv(rbuf, RING_INTS, MPI_INT, prev, 1, comm, &ring[1]);
        for (int i = 0; i < BURST; i++) {
            MPI_Isend(&sbuf[1 + i], 1, MPI_INT, next, 2, comm, &burst[i]);
        }
        rc = MPI_Barrier(comm);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc), "iteration %d: barrier: error class %d", it,
                 error_class(rc));
        for (int i = 0; i < 2; i++) {
            rc = MPI_Wait(&ring[i], MPI_STATUS_IGNORE);
            if (1 == i && prev == revoker) {
                MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                         "iteration %d: a receive from the revoker ended with error class %d", it,
                         error_class(rc));
            } else {
                MT_CHECK(success_or_revoked(rc), "iteration %d: ring %s: error class %d", it,
                         0 == i ? "send" : "receive", error_class(rc));
            }
        }
        for (int i = 0; i < BURST; i++) {
            rc = MPI_Wait(&burst[i], MPI_STATUS_IGNORE);
            MT_CHECK(success_or_revoked(rc), "iteration %d: burst send %d: error class %d", it, i,
                     error_class(rc));
        }
    }
    rc = MPI_Recv(&v, 1, MPI_INT, prev, 3, comm, MPI_STATUS_IGNORE);
    MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
             "iteration %d: a receive posted after the revoke: error class %d", it, error_class(rc));

    rc = MPIX_Comm_shrink(comm, &shrunk);
    MT_CHECK(MPI_SUCCESS == rc, "iteration %d: shrink: error class %d", it, error_class(rc));
    /* freed at once, as ULFM programs do: what is still in flight on it (the revoker is
     * here first, with the others' messages to it on their way) arrives for a
     * communicator that is gone */
    MPI_Comm_free(&comm);
    if (MPI_SUCCESS == rc) {
        int n = -1, me = -1, got = -1;
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        MPI_Comm_size(shrunk, &n);
        MPI_Comm_rank(shrunk, &me);
        MT_CHECK(n == size, "iteration %d: the shrunk communicator has %d ranks of %d", it, n, size);
        flag = (rank != revoker) ? 1 : ((it & 1) ? 1 : 0); /* AND: it & 1 */
        rc = MPIX_Comm_agree(shrunk, &flag);
        MT_CHECK(MPI_SUCCESS == rc && flag == (it & 1), "iteration %d: agree: error class %d, %d",
                 it, error_class(rc), flag);
        v = 1000 * it + me;
        rc = MPI_Sendrecv(&v, 1, MPI_INT, (me + 1) % n, 4, &got, 1, MPI_INT, (me + n - 1) % n, 4,
                          shrunk, MPI_STATUS_IGNORE);
        MT_CHECK(MPI_SUCCESS == rc && got == 1000 * it + (me + n - 1) % n,
                 "iteration %d: exchange over the shrunk communicator: error class %d, got %d", it,
                 error_class(rc), got);
        rc = MPI_Barrier(shrunk);
        MT_CHECK(MPI_SUCCESS == rc, "iteration %d: barrier over the shrunk communicator: error "
                 "class %d", it, error_class(rc));
        MPI_Comm_free(&shrunk);
    }
}

int main(int argc, char **argv)
{
    int iterations;
    int *sbuf, *rbuf;

    mt_init(&argc, &argv, "dr2_ulfm_loop");
    iterations = argc > 1 ? atoi(argv[1]) : 100;
    sbuf = calloc(RING_INTS, sizeof(int));
    rbuf = calloc(RING_INTS, sizeof(int));
    if (mt_size < 3) {
        MT_CHECK(0, "needs 3 or more ranks, got %d", mt_size);
    }
    for (int it = 0; it < iterations && mt_size >= 3; it++) {
        one_iteration(it, sbuf, rbuf);
    }
    free(sbuf);
    free(rbuf);
    return mt_finish();
}
