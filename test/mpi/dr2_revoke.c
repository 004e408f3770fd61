/*
 * ompi-resilience: pml/dr2 under MPIX_Comm_revoke, two ranks (mpirun --with-ft ulfm).
 *
 * Messages that reach a process after it revoked their communicator are dropped there;
 * the protocol must still finish them, or their sender resends them for ever and, once
 * about a window (1024 vfrags) of newer ones has gone out behind them, stops sending to
 * that process on every communicator. And nothing on a revoked communicator may complete
 * as if it had been received.
 *
 *   dr2_revoke inflight BYTES COUNT
 *       Rank 0 sends COUNT eager messages of BYTES on communicator A while rank 1 is not
 *       in MPI (it sleeps: the messages wait in the transport), then rank 1 revokes A and
 *       only then takes them in. Its receive posted on A before (unmatched) and one posted
 *       after both end with MPIX_ERR_REVOKED. Then rank 0 sends 3,000 messages to rank 1
 *       on communicator B, each checked.
 *   dr2_revoke ssend
 *       Rank 0 starts a small MPI_Issend on A, which reaches rank 1 while it sleeps; rank 1
 *       revokes A, then takes the message in. The synchronous send must not complete
 *       with MPI_SUCCESS (no receive matched it); then traffic on B as above.
 *
 * The sleep only decides whether the messages arrive after the revoke (what the test is
 * about); the verdict never depends on it: each check holds whatever the timing.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

#define AFTER_MESSAGES 3000
#define TAG_A 5
#define TAG_B 6

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

/* Both ranks: rank 0 sends AFTER_MESSAGES numbered messages on b, rank 1 checks them. */
static void traffic_after(MPI_Comm b)
{
    for (int i = 0; i < AFTER_MESSAGES; i++) {
        int v = i, got = -1, rc;
        if (0 == mt_rank) {
            rc = MPI_Send(&v, 1, MPI_INT, 1, TAG_B, b);
            MT_CHECK(MPI_SUCCESS == rc, "send %d on the other communicator: error class %d", i,
                     error_class(rc));
        } else {
            rc = MPI_Recv(&got, 1, MPI_INT, 0, TAG_B, b, MPI_STATUS_IGNORE);
            MT_CHECK(MPI_SUCCESS == rc && got == i,
                     "receive %d on the other communicator: error class %d, value %d", i,
                     error_class(rc), got);
        }
        if (mt_failures > 0) {
            return;
        }
    }
}

static void inflight(MPI_Comm a, MPI_Comm b, int bytes, int count)
{
    unsigned char *buf = calloc(1, bytes > 0 ? bytes : 1);
    int rc;

    MPI_Barrier(b);
    if (0 == mt_rank) {
        for (int i = 0; i < count; i++) {
            memset(buf, i, bytes);
            rc = MPI_Send(buf, bytes, MPI_BYTE, 1, TAG_A, a);
            if (MPI_SUCCESS != rc) {
                MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                         "send %d on the revoked communicator: error class %d", i,
                         error_class(rc));
                break; /* the revoke reached us */
            }
        }
    } else {
        MPI_Request early;
        MPI_Irecv(buf, bytes, MPI_BYTE, 0, TAG_A + 1, a, &early); /* nothing matches it */
        sleep(1); /* out of MPI: rank 0's messages wait in the transport */
        MPIX_Comm_revoke(a);
        rc = MPI_Wait(&early, MPI_STATUS_IGNORE);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                 "a receive posted before the revoke ended with error class %d", error_class(rc));
        rc = MPI_Recv(buf, bytes, MPI_BYTE, 0, TAG_A, a, MPI_STATUS_IGNORE);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                 "a receive on the revoked communicator ended with error class %d",
                 error_class(rc));
    }
    traffic_after(b);
    free(buf);
}

static void ssend(MPI_Comm a, MPI_Comm b)
{
    int v = 42, rc;

    MPI_Barrier(b);
    if (0 == mt_rank) {
        MPI_Request req;
        MPI_Issend(&v, 1, MPI_INT, 1, TAG_A, a, &req);
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                 "a synchronous send no receive matched ended with error class %d",
                 error_class(rc));
    } else {
        sleep(1);
        MPIX_Comm_revoke(a);
    }
    traffic_after(b);
}

int main(int argc, char **argv)
{
    MPI_Comm a, b;
    const char *mode = argc > 1 ? argv[1] : "inflight";

    mt_init(&argc, &argv, "dr2_revoke");
    if (2 != mt_size) {
        MT_CHECK(0, "needs exactly 2 ranks, got %d", mt_size);
        return mt_finish();
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    if (0 == strcmp(mode, "inflight")) {
        inflight(a, b, argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 200);
    } else if (0 == strcmp(mode, "ssend")) {
        ssend(a, b);
    } else {
        MT_CHECK(0, "unknown mode %s", mode);
    }
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    return mt_finish();
}
