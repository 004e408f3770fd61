/*
 * ompi-resilience: a message of a freed communicator is never delivered into the next one
 * that takes its context id (mpirun --with-ft ulfm, 2 ranks; for pml/dr2 under injected
 * loss, which makes its senders resend late).
 *
 *   dr2_cid_reuse ROUNDS COUNT BYTES [expect-stale]
 *
 * Each round: both ranks duplicate a communicator A; rank 0 starts COUNT sends of BYTES on
 * it that rank 1 never receives: rank 1 revokes A (ULFM: nobody may receive on it any
 * more) and both free it (rank 0 once its sends have ended, in success or MPIX_ERR_REVOKED:
 * a rendezvous is answered REVOKED). They duplicate B, which takes A's context id (the
 * lowest free one, the same on both ranks: communicators are created and freed in strict
 * alternation), and rank 0 sends COUNT messages of BYTES on B that rank 1 receives and
 * checks: each must be B's, in order. Under injected loss some of A's messages are still
 * being resent when B exists: the receiver must tell them from B's and drop them
 * (acknowledged, so that their sender stops). With expect-stale, rank 1 must have dropped
 * at least one message of a freed communicator (pml/dr2's MPI_T counter
 * pml_dr2_stale_msgs): the case under test happened.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define TAG 7
#define TAG_SENT 8

typedef struct {
    int round;
    int index;
    int stale; /* 1 on A, 0 on B */
} note_t;

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

static unsigned char *buf;
static int bytes;

static void round_on_a(MPI_Comm world, int round, int count)
{
    MPI_Comm a;
    MPI_Request *reqs = malloc(count * sizeof(MPI_Request));
    int token = 0;

    MPI_Comm_dup(world, &a);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    if (0 == mt_rank) {
        note_t n = {round, 0, 1};
        memcpy(buf, &n, sizeof(n));
        for (int i = 0; i < count; i++) {
            MPI_Isend(buf, bytes, MPI_BYTE, 1, TAG, a, &reqs[i]);
        }
        MPI_Send(&token, 1, MPI_INT, 1, TAG_SENT, world);
        for (int i = 0; i < count; i++) {
            int rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            MT_CHECK(MPI_SUCCESS == rc || MPIX_ERR_REVOKED == error_class(rc),
                     "round %d: send %d on A: class %d", round, i, error_class(rc));
        }
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, TAG_SENT, world, MPI_STATUS_IGNORE);
        MPIX_Comm_revoke(a);
    }
    MPI_Comm_free(&a);
    free(reqs);
}

static void round_on_b(MPI_Comm world, int round, int count)
{
    MPI_Comm b;

    MPI_Comm_dup(world, &b);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    for (int i = 0; i < count && 0 == mt_failures; i++) {
        note_t n = {round, i, 0};
        if (0 == mt_rank) {
            memcpy(buf, &n, sizeof(n));
            MPI_Send(buf, bytes, MPI_BYTE, 1, TAG, b);
        } else {
            note_t got = {-1, -1, -1};
            MPI_Status st;
            int rc, len = -1;
            memset(buf, 0xff, sizeof(got));
            rc = MPI_Recv(buf, bytes, MPI_BYTE, 0, TAG, b, &st);
            memcpy(&got, buf, sizeof(got));
            MPI_Get_count(&st, MPI_BYTE, &len);
            MT_CHECK(MPI_SUCCESS == rc && got.round == round && got.index == i && 0 == got.stale
                         && len == bytes,
                     "round %d: message %d on B: class %d, %d bytes, got round %d index %d%s",
                     round, i, error_class(rc), len, got.round, got.index,
                     got.stale > 0 ? " sent on the freed communicator A" : "");
        }
    }
    MPI_Comm_free(&b);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200, count = argc > 2 ? atoi(argv[2]) : 8;
    int expect_stale = argc > 4 && 0 == strcmp(argv[4], "expect-stale");
    MPI_Comm world;

    mt_init(&argc, &argv, "dr2_cid_reuse");
    if (2 != mt_size) {
        MT_CHECK(0, "needs exactly 2 ranks, got %d", mt_size);
        return mt_finish();
    }
    bytes = argc > 3 ? atoi(argv[3]) : (int) sizeof(note_t);
    if (bytes < (int) sizeof(note_t)) {
        bytes = (int) sizeof(note_t);
    }
    buf = calloc(1, bytes);
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    mt_dr2_counters_start();
    for (int r = 0; r < rounds && 0 == mt_failures; r++) {
        round_on_a(world, r, count);
        round_on_b(world, r, count);
    }
    if (0 == mt_rank) {
        printf("dr2_cid_reuse: rank 0: %ld segments injected, %ld fragments resent\n",
               mt_dr2_injected(), mt_dr2_resent());
    } else {
        printf("dr2_cid_reuse: rank 1: %ld messages of freed communicators dropped\n",
               mt_dr2_stale_msgs());
        MT_CHECK(!expect_stale || mt_dr2_stale_msgs() > 0,
                 "no message of a freed communicator arrived late: the case was not tested");
    }
    mt_dr2_counters_stop();
    MPI_Comm_free(&world);
    free(buf);
    return mt_finish();
}
