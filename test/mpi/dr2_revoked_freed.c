/*
 * ompi-resilience: the receive paths of a PML on a communicator that is revoked under them
 * (mpirun --with-ft ulfm) or freed while they are pending (any MPI). Two ranks: rank 0
 * receives, rank 1 sends. Written for pml/dr2; run over ob1 as well, to show that what it
 * checks is what MPI and ULFM promise.
 *
 *   dr2_revoked_freed revoke     each scenario on a communicator of its own, revoked in it:
 *     posted             MPI_Irecv from ANY_SOURCE/ANY_TAG and from rank 1, pending when
 *                        rank 1 revokes: both end with MPIX_ERR_REVOKED
 *     matched            MPI_Irecv(ANY_SOURCE) matched to rank 1's 64 MiB rendezvous when
 *                        rank 1 revokes: both requests end (the receive in MPIX_ERR_REVOKED
 *                        or with every byte right; the send in success or REVOKED)
 *     probe              MPI_Probe, MPI_Iprobe, MPI_Improbe and MPI_Mprobe (ANY_SOURCE) on
 *                        the revoked communicator: MPIX_ERR_REVOKED
 *     mprobed            a rendezvous taken by MPI_Mprobe before the revoke and received by
 *                        MPI_Mrecv after it: both ends complete (REVOKED, or every byte
 *                        right), and the sender's send ends
 *     persistent         MPI_Start of a persistent receive and a persistent send on the
 *                        revoked communicator: MPIX_ERR_REVOKED, no hang
 *     cancel             a receive pending when the communicator is revoked, then cancelled:
 *                        MPI_Wait ends (cancelled, or REVOKED)
 *   dr2_revoked_freed freed      each scenario frees its communicator while requests on it
 *                                are pending; MPI says they complete normally:
 *     irecv              MPI_Irecv, MPI_Comm_free, then rank 1 sends: every byte right
 *     persistent         MPI_Recv_init/MPI_Send_init, free, MPI_Start twice: both messages
 *     mprobed            MPI_Mprobe, free, MPI_Mrecv of a rendezvous
 *     isend              a 64 MiB MPI_Isend and its MPI_Irecv, both communicators freed
 *                        before MPI_Wait
 *     cancel-send        an eager MPI_Isend (1 KiB) nobody has matched, cancelled, then its
 *                        communicator freed: if the cancel took, rank 0 never receives it;
 *                        if not, rank 0 receives it whole (a rendezvous that is not
 *                        cancelled completes only once received: neither PML cancels
 *                        sends, and MPICH's scancel hangs with both, docs/mpich-pt2pt.md)
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

#define BIG (64u << 20)
#define SMALL 1024 /* eager with every BTL */
#define TAG_DATA 3
#define TAG_CTL 4

static MPI_Comm world;
static unsigned char *big;

/* -1: a request that never ended (wait_bounded) */
static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc && -1 != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

static void scenario_verdict(const char *mode, const char *name, long failures_before)
{
    printf("dr2_revoked_freed: rank %d: %s/%s: %s\n", mt_rank, mode, name,
           mt_failures == failures_before ? "PASS" : "FAIL");
    fflush(stdout);
}

static MPI_Comm fresh_comm(void)
{
    MPI_Comm c;

    MPI_Comm_dup(world, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

/* Control messages between the two ranks on world (never revoked, never freed). */
static void ctl_send(int value)
{
    MPI_Send(&value, 1, MPI_INT, 1 - mt_rank, TAG_CTL, world);
}

static int ctl_recv(void)
{
    int value = -1;

    MPI_Recv(&value, 1, MPI_INT, 1 - mt_rank, TAG_CTL, world, MPI_STATUS_IGNORE);
    return value;
}

/* Wait for a request for at most 30 s, progressing: its error, or -1 if it never ended. */
static int wait_bounded(MPI_Request *req, MPI_Status *st)
{
    double t0 = MPI_Wtime();
    int flag = 0, rc = MPI_SUCCESS;

    while (!flag && MPI_SUCCESS == rc && MPI_Wtime() - t0 < 30.0) {
        rc = MPI_Test(req, &flag, st);
    }
    return flag || MPI_SUCCESS != rc ? rc : -1;
}

/* Rank 1: once its data fragments go (rank 0 matched: pml/dr2's pml_dr2_frags_sent grew;
 * over another PML after 200 ms of progress), return. */
static void progress_until_matched(MPI_Request *req, long frags_before, int *done)
{
    double t0 = MPI_Wtime();

    while (!*done && MPI_Wtime() - t0 < 30.0
           && (mt_dr2_selected() ? mt_dr2_frags_sent() - frags_before < 3
                                 : MPI_Wtime() - t0 < 0.2)) {
        MPI_Test(req, done, MPI_STATUS_IGNORE);
    }
}

/* A receive of the big message `n` from rank 1 ended with rc: REVOKED, or every byte. */
static void check_revoked_or_whole(int rc, int n, const char *what)
{
    MT_CHECK(-1 != rc, "%s: never ended", what);
    MT_CHECK(MPI_SUCCESS == rc || MPIX_ERR_REVOKED == error_class(rc), "%s: error class %d",
             what, error_class(rc));
    if (MPI_SUCCESS == rc) {
        mt_intact(big, BIG, 1, n, what);
    }
}

static void check_send_ended(int rc, const char *what)
{
    MT_CHECK(-1 != rc, "%s: the send never ended", what);
    MT_CHECK(MPI_SUCCESS == rc || MPIX_ERR_REVOKED == error_class(rc),
             "%s: the send ended with error class %d", what, error_class(rc));
}

/* ---- revoke ------------------------------------------------------------------------------ */

static void revoke_posted(MPI_Comm c)
{
    if (0 == mt_rank) {
        MPI_Request any, named;
        int a = -1, b = -1, rc;
        MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &any);
        MPI_Irecv(&b, 1, MPI_INT, 1, TAG_DATA, c, &named);
        ctl_send(1); /* posted: revoke */
        rc = wait_bounded(&any, MPI_STATUS_IGNORE);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                 "a pending MPI_Irecv(ANY_SOURCE, ANY_TAG): error class %d", error_class(rc));
        rc = wait_bounded(&named, MPI_STATUS_IGNORE);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
                 "a pending MPI_Irecv(1, tag): error class %d", error_class(rc));
    } else {
        (void) ctl_recv();
        MPIX_Comm_revoke(c);
    }
}

static void revoke_matched(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int rc;

    if (0 == mt_rank) {
        memset(big, 0, BIG);
        MPI_Irecv(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, c, &req);
        ctl_send(1);
        rc = wait_bounded(&req, &st);
        check_revoked_or_whole(rc, 11, "a receive matched when its communicator was revoked");
    } else {
        long before = mt_dr2_frags_sent();
        int done = 0;
        (void) ctl_recv();
        mt_fill(big, BIG, 1, 11);
        MPI_Isend(big, BIG, MPI_BYTE, 0, TAG_DATA, c, &req);
        progress_until_matched(&req, before, &done);
        MPIX_Comm_revoke(c);
        rc = done ? MPI_SUCCESS : wait_bounded(&req, &st);
        check_send_ended(rc, "a rendezvous matched when its communicator was revoked");
    }
}

static void revoke_probe(MPI_Comm c)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Message msg;
        int flag = 0, rc;
        (void) ctl_recv(); /* revoked by rank 1 */
        rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc), "MPI_Probe: error class %d",
                 error_class(rc));
        rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &st);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc), "MPI_Iprobe: error class %d",
                 error_class(rc));
        rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &msg, &st);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc), "MPI_Improbe: error class %d",
                 error_class(rc));
        rc = MPI_Mprobe(1, TAG_DATA, c, &msg, &st);
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc), "MPI_Mprobe: error class %d",
                 error_class(rc));
    } else {
        MPIX_Comm_revoke(c);
        ctl_send(1);
    }
}

static void revoke_mprobed(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int rc;

    if (0 == mt_rank) {
        MPI_Message msg;
        rc = MPI_Mprobe(1, TAG_DATA, c, &msg, &st);
        MT_CHECK(MPI_SUCCESS == rc, "MPI_Mprobe before the revoke: error class %d",
                 error_class(rc));
        ctl_send(1); /* probed: revoke */
        (void) ctl_recv();
        if (MPI_SUCCESS == rc) {
            memset(big, 0, BIG);
            MPI_Imrecv(big, BIG, MPI_BYTE, &msg, &req);
            rc = wait_bounded(&req, &st);
            check_revoked_or_whole(rc, 12, "MPI_Mrecv after the revoke of a message probed before");
        }
    } else {
        mt_fill(big, BIG, 1, 12);
        MPI_Isend(big, BIG, MPI_BYTE, 0, TAG_DATA, c, &req);
        (void) ctl_recv(); /* probed */
        MPIX_Comm_revoke(c);
        ctl_send(1);
        rc = wait_bounded(&req, &st);
        check_send_ended(rc, "a rendezvous probed before its communicator was revoked");
    }
}

/* A persistent request may already be refused at its creation (MPI_Recv_init,
 * MPI_Send_init): that is an answer too. */
static void revoke_persistent(MPI_Comm c)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int v = 0, rc;

    if (1 == mt_rank) {
        MPIX_Comm_revoke(c);
    }
    if (0 == mt_rank) {
        (void) ctl_recv();
        rc = MPI_Recv_init(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, c, &req);
    } else {
        ctl_send(1);
        rc = MPI_Send_init(&v, 1, MPI_INT, 0, TAG_DATA, c, &req);
    }
    if (MPI_SUCCESS == rc) {
        rc = MPI_Start(&req);
    }
    if (MPI_SUCCESS == rc) {
        rc = wait_bounded(&req, MPI_STATUS_IGNORE);
    }
    MT_CHECK(MPIX_ERR_REVOKED == error_class(rc),
             "a persistent %s on a revoked communicator: error class %d",
             0 == mt_rank ? "receive" : "send", error_class(rc));
    if (MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req);
    }
}

static void revoke_cancel(MPI_Comm c)
{
    if (0 == mt_rank) {
        MPI_Request req;
        MPI_Status st;
        int v = -1, cancelled = 0, rc;
        MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, c, &req);
        ctl_send(1);
        (void) ctl_recv(); /* revoked */
        MPI_Cancel(&req);
        rc = wait_bounded(&req, &st);
        if (MPI_SUCCESS == rc) {
            MPI_Test_cancelled(&st, &cancelled);
        }
        MT_CHECK(MPIX_ERR_REVOKED == error_class(rc) || (MPI_SUCCESS == rc && cancelled),
                 "a receive cancelled after the revoke: error class %d, cancelled %d",
                 error_class(rc), cancelled);
    } else {
        (void) ctl_recv();
        MPIX_Comm_revoke(c);
        ctl_send(1);
    }
}

/* ---- freed ------------------------------------------------------------------------------- */

static void freed_irecv(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int rc;

    if (0 == mt_rank) {
        memset(big, 0, BIG);
        MPI_Irecv(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, c, &req);
        MPI_Comm_free(&c);
        ctl_send(1);
        rc = wait_bounded(&req, &st);
        MT_CHECK(MPI_SUCCESS == rc, "a receive on a freed communicator: error class %d",
                 error_class(rc));
        if (MPI_SUCCESS == rc) {
            mt_intact(big, BIG, 1, 21, "a receive on a freed communicator");
        }
    } else {
        (void) ctl_recv();
        mt_fill(big, BIG, 1, 21);
        rc = MPI_Send(big, BIG, MPI_BYTE, 0, TAG_DATA, c);
        MT_CHECK(MPI_SUCCESS == rc, "a send to a receive on a freed communicator: class %d",
                 error_class(rc));
        MPI_Comm_free(&c);
    }
}

static void freed_persistent(MPI_Comm c)
{
    MPI_Request req;
    int v = -1, rc;

    if (0 == mt_rank) {
        MPI_Recv_init(&v, 1, MPI_INT, 1, TAG_DATA, c, &req);
    } else {
        MPI_Send_init(&v, 1, MPI_INT, 0, TAG_DATA, c, &req);
    }
    MPI_Comm_free(&c);
    for (int i = 0; i < 2; i++) {
        v = 1 == mt_rank ? 30 + i : -1;
        MPI_Start(&req);
        rc = wait_bounded(&req, MPI_STATUS_IGNORE);
        MT_CHECK(MPI_SUCCESS == rc && v == 30 + i,
                 "persistent %s %d on a freed communicator: error class %d, value %d",
                 0 == mt_rank ? "receive" : "send", i, error_class(rc), v);
    }
    MPI_Request_free(&req);
}

static void freed_mprobed(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int rc;

    if (0 == mt_rank) {
        MPI_Message msg;
        rc = MPI_Mprobe(1, TAG_DATA, c, &msg, &st);
        MPI_Comm_free(&c);
        MT_CHECK(MPI_SUCCESS == rc, "MPI_Mprobe: error class %d", error_class(rc));
        if (MPI_SUCCESS == rc) {
            memset(big, 0, BIG);
            MPI_Imrecv(big, BIG, MPI_BYTE, &msg, &req);
            rc = wait_bounded(&req, &st);
            MT_CHECK(MPI_SUCCESS == rc, "MPI_Mrecv after the communicator was freed: class %d",
                     error_class(rc));
            if (MPI_SUCCESS == rc) {
                mt_intact(big, BIG, 1, 23, "MPI_Mrecv after the communicator was freed");
            }
        }
    } else {
        mt_fill(big, BIG, 1, 23);
        rc = MPI_Send(big, BIG, MPI_BYTE, 0, TAG_DATA, c);
        MT_CHECK(MPI_SUCCESS == rc, "a send taken by MPI_Mprobe: class %d", error_class(rc));
        MPI_Comm_free(&c);
    }
}

static void freed_isend(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int rc;

    if (0 == mt_rank) {
        memset(big, 0, BIG);
        MPI_Irecv(big, BIG, MPI_BYTE, 1, TAG_DATA, c, &req);
    } else {
        mt_fill(big, BIG, 1, 24);
        MPI_Isend(big, BIG, MPI_BYTE, 0, TAG_DATA, c, &req);
    }
    MPI_Comm_free(&c);
    rc = wait_bounded(&req, &st);
    MT_CHECK(MPI_SUCCESS == rc, "an MPI_I%s whose communicator was freed: error class %d",
             0 == mt_rank ? "recv" : "send", error_class(rc));
    if (0 == mt_rank && MPI_SUCCESS == rc) {
        mt_intact(big, BIG, 1, 24, "an MPI_Irecv whose communicator was freed");
    }
}

static void freed_cancel_send(MPI_Comm c)
{
    MPI_Request req;
    MPI_Status st;
    int cancelled = 0, rc;

    if (1 == mt_rank) {
        mt_fill(big, SMALL, 1, 25);
        MPI_Isend(big, SMALL, MPI_BYTE, 0, TAG_DATA, c, &req);
        MPI_Cancel(&req);
        rc = wait_bounded(&req, &st);
        MT_CHECK(MPI_SUCCESS == rc, "a cancelled MPI_Isend: error class %d", error_class(rc));
        MPI_Test_cancelled(&st, &cancelled);
        ctl_send(cancelled);
        if (!cancelled) {
            (void) ctl_recv(); /* received: the buffer may be reused */
        }
        MPI_Comm_free(&c);
    } else {
        cancelled = ctl_recv();
        if (cancelled) {
            int flag = 1;
            /* a cancelled send must not be received */
            for (int i = 0; i < 100 && flag; i++) {
                MPI_Iprobe(1, TAG_DATA, c, &flag, MPI_STATUS_IGNORE);
                flag = !flag;
                usleep(1000);
            }
            MT_CHECK(flag, "a cancelled send arrived all the same");
        } else {
            memset(big, 0, BIG);
            rc = MPI_Recv(big, SMALL, MPI_BYTE, 1, TAG_DATA, c, &st);
            MT_CHECK(MPI_SUCCESS == rc, "a send whose cancel failed: class %d", error_class(rc));
            if (MPI_SUCCESS == rc) {
                mt_intact(big, SMALL, 1, 25, "a send whose cancel failed");
            }
            ctl_send(1);
        }
        MPI_Comm_free(&c);
    }
    printf("dr2_revoked_freed: rank %d: the send's cancel %s\n", mt_rank,
           cancelled ? "took" : "did not take");
}

typedef struct {
    const char *name;
    void (*run)(MPI_Comm c); /* the revoke scenarios leave c to the caller, the freed ones free it */
} scenario_t;

static const scenario_t revoke_scenarios[] = {
    {"posted", revoke_posted},         {"matched", revoke_matched}, {"probe", revoke_probe},
    {"mprobed", revoke_mprobed},       {"persistent", revoke_persistent},
    {"cancel", revoke_cancel},         {NULL, NULL},
};

static const scenario_t freed_scenarios[] = {
    {"irecv", freed_irecv},   {"persistent", freed_persistent}, {"mprobed", freed_mprobed},
    {"isend", freed_isend},   {"cancel-send", freed_cancel_send}, {NULL, NULL},
};

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const scenario_t *list = NULL;

    mt_init(&argc, &argv, "dr2_revoked_freed");
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    mt_dr2_counters_start();
    if (0 == strcmp(mode, "revoke")) {
        list = revoke_scenarios;
    } else if (0 == strcmp(mode, "freed")) {
        list = freed_scenarios;
    }
    MT_CHECK(NULL != list && 2 == mt_size, "usage: dr2_revoked_freed revoke|freed on 2 ranks");
    big = malloc(BIG);
    for (int s = 0; NULL != list && 2 == mt_size && NULL != list[s].name; s++) {
        long before = mt_failures;
        MPI_Comm c = fresh_comm();
        list[s].run(c);
        if (list == revoke_scenarios) {
            MPI_Comm_free(&c);
        }
        MPI_Barrier(world);
        scenario_verdict(mode, list[s].name, before);
    }
    free(big);
    mt_dr2_counters_stop();
    MPI_Comm_free(&world);
    return mt_finish();
}
