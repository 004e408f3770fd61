/*
 * ompi-resilience: the receive paths of a PML under ULFM when a process that takes no part
 * in them dies (mpirun --with-ft ulfm; written for pml/dr2, run over ob1 as well to show
 * that what it checks is what ULFM promises).
 *
 *   dr2_ulfm_recv failure      np 2 + one process per scenario (11)
 *
 * Rank 0 receives, rank 1 sends, and every scenario kills one more process (ranks 2, 3, ...
 * in turn), which never takes part in the operation under test. ULFM says (MPI 4 FT
 * proposal; ompi/request/req_ft.c): a receive from MPI_ANY_SOURCE that has not matched
 * when a failure is noticed ends with MPIX_ERR_PROC_FAILED_PENDING (non-blocking: the
 * request stays active and may still match) or MPIX_ERR_PROC_FAILED (blocking); one that
 * has matched the message of a live process is no longer "any source": it completes with
 * that message. Before each scenario rank 0 acknowledges the failures so far
 * (MPIX_Comm_failure_ack), which lets ANY_SOURCE receives wait again.
 *
 *   recv-any-matched     MPI_Recv(ANY_SOURCE) matched to a 64 MiB rendezvous from rank 1
 *                        when the victim dies: the data arrives, rank 1's send completes
 *   irecv-any-matched    the same through MPI_Irecv + MPI_Wait
 *   recv-any-unmatched   MPI_Recv(ANY_SOURCE) with nothing sent: MPIX_ERR_PROC_FAILED;
 *                        after the acknowledgement the next one receives rank 1's message
 *   irecv-any-unmatched  MPI_Irecv(ANY_SOURCE) + MPI_Wait: MPIX_ERR_PROC_FAILED_PENDING,
 *                        the request still active; after the acknowledgement rank 1's
 *                        message completes it
 *   probe-any            MPI_Probe(ANY_SOURCE) with nothing sent: MPIX_ERR_PROC_FAILED;
 *                        a message waiting from rank 1 is found by probe, iprobe and
 *                        improbe (ANY_SOURCE, ANY_TAG) and received with MPI_Mrecv
 *   persistent-any       a persistent ANY_SOURCE receive matched to rank 1's rendezvous
 *                        when the victim dies completes with it; started again, it still
 *                        takes any source (a message rank 0 sends itself)
 *   any-tag-named        MPI_Recv(1, ANY_TAG) of rank 1's rendezvous across a failure
 *   cancel-any           an MPI_Irecv(ANY_SOURCE) cancelled after a failure: cancelled, and
 *                        MPI_Wait returns MPI_SUCCESS
 *   proc-null            MPI_Recv, MPI_Irecv and MPI_Probe from MPI_PROC_NULL after a
 *                        failure: at once, source MPI_PROC_NULL, no data
 *
 * Rank 1 tells a scenario's victim to die only once rank 0 has matched its rendezvous (its
 * data fragments are being sent: pml/dr2's MPI_T counter pml_dr2_frags_sent; over another
 * PML after 200 ms of progress), then stays out of MPI for a second, so that the failure
 * is known at rank 0 before the message can be complete (over pml/dr2; ob1 may pull the
 * whole message through single-copy shared memory meanwhile). Survivors print one line
 * per scenario and exchange their failure counts at the end; victims print nothing.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

#define BIG (64u << 20)
#define TAG_GO 1
#define TAG_DIE 2
#define TAG_DATA 3
#define TAG_VERDICT 4
#define TAG_NEXT 5

static MPI_Comm world;
static unsigned char *big;
static int next_victim = 2;

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

static void scenario_verdict(const char *name, long failures_before)
{
    printf("dr2_ulfm_recv: rank %d: %s: %s\n", mt_rank, name,
           mt_failures == failures_before ? "PASS" : "FAIL");
    fflush(stdout);
}

/* ---- the victims ------------------------------------------------------------------------ */

static void victim(void)
{
    int token;

    /* the victims before die while this one waits: ANY_SOURCE fails then, until acknowledged */
    while (MPI_SUCCESS != MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DIE, world,
                                   MPI_STATUS_IGNORE)) {
        MPIX_Comm_failure_ack(world);
    }
    raise(SIGKILL);
}

static void kill_victim(int v)
{
    int token = 0;

    MPI_Send(&token, 1, MPI_INT, v, TAG_DIE, world);
}

/* Is world rank v known to have failed here? */
static int failure_known(int v)
{
    MPI_Group failed, wgroup;
    int n = 0, found = 0;

    MPIX_Comm_get_failed(world, &failed);
    MPI_Group_size(failed, &n);
    if (n > 0) {
        int *ranks = malloc(n * sizeof(int)), *in_world = malloc(n * sizeof(int));
        MPI_Comm_group(world, &wgroup);
        for (int i = 0; i < n; i++) {
            ranks[i] = i;
        }
        MPI_Group_translate_ranks(failed, n, ranks, wgroup, in_world);
        for (int i = 0; i < n; i++) {
            found |= in_world[i] == v;
        }
        MPI_Group_free(&wgroup);
        free(ranks);
        free(in_world);
    }
    MPI_Group_free(&failed);
    return found;
}

/* Wait (progressing) until the failure of v is known here; 60 s at most. */
static void wait_failure_known(int v)
{
    double t0 = MPI_Wtime();
    int flag;

    while (!failure_known(v)) {
        MT_CHECK(MPI_Wtime() - t0 < 60.0, "the failure of rank %d never became known", v);
        if (MPI_Wtime() - t0 >= 60.0) {
            return;
        }
        MPI_Iprobe(1, TAG_NEXT, world, &flag, MPI_STATUS_IGNORE);
        usleep(1000);
    }
}

/* ---- rank 1's side of a rendezvous ------------------------------------------------------- */

/* Rank 1: once rank 0 says go, send it the big message n; when rank 0 has matched it, kill
 * the victim and stay out of MPI for a second; then the send must complete. */
static void send_big_across_a_failure(int n, int tag, int v)
{
    MPI_Request req;
    int go, flag = 0, rc;
    long frags_before = mt_dr2_frags_sent();
    double t0;

    MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, world, MPI_STATUS_IGNORE);
    mt_fill(big, BIG, 1, n);
    MPI_Isend(big, BIG, MPI_BYTE, 0, tag, world, &req);
    t0 = MPI_Wtime();
    /* data fragments go only after the receiver's go-ahead (its match) */
    while (!flag && MPI_Wtime() - t0 < 30.0
           && (mt_dr2_selected() ? mt_dr2_frags_sent() - frags_before < 3
                                 : MPI_Wtime() - t0 < 0.2)) {
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    kill_victim(v);
    sleep(1);
    /* bounded, so that a message lost at the receiver fails this scenario, not the rest */
    for (t0 = MPI_Wtime(), rc = MPI_SUCCESS; !flag && MPI_SUCCESS == rc && MPI_Wtime() - t0 < 20.0;) {
        rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    MT_CHECK(flag || MPI_SUCCESS != rc, "message %d: rank 1's send to rank 0 never completed", n);
    MT_CHECK(MPI_SUCCESS == rc, "message %d: rank 1's send to rank 0 ended with error class %d",
             n, error_class(rc));
}

static void say_go(void)
{
    int go = 1;

    MPI_Send(&go, 1, MPI_INT, 1, TAG_GO, world);
}

static void check_big(int rc, const MPI_Status *st, int n, const char *what)
{
    int count = -1;

    MT_CHECK(MPI_SUCCESS == rc, "%s: error class %d", what, error_class(rc));
    if (MPI_SUCCESS != rc) {
        return;
    }
    MPI_Get_count(st, MPI_BYTE, &count);
    MT_CHECK(1 == st->MPI_SOURCE && (int) BIG == count, "%s: source %d, %d bytes", what,
             st->MPI_SOURCE, count);
    mt_intact(big, BIG, 1, n, what);
}

/* ---- the scenarios: rank 0 and rank 1; victim v dies in each ------------------------------ */

static void recv_any_matched(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        say_go();
        memset(big, 0, BIG);
        check_big(MPI_Recv(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, world, &st), &st, 1,
                  "MPI_Recv(ANY_SOURCE) matched before the failure");
    } else {
        send_big_across_a_failure(1, TAG_DATA, v);
    }
}

static void irecv_any_matched(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Request req;
        int rc;
        say_go();
        memset(big, 0, BIG);
        MPI_Irecv(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, world, &req);
        rc = MPI_Wait(&req, &st);
        check_big(rc, &st, 2, "MPI_Irecv(ANY_SOURCE) + MPI_Wait matched before the failure");
        if (MPIX_ERR_PROC_FAILED_PENDING == error_class(rc)) {
            /* still active: finish it so that the next scenarios run */
            MPIX_Comm_failure_ack(world);
            MPI_Wait(&req, &st);
        }
    } else {
        send_big_across_a_failure(2, TAG_DATA, v);
    }
}

/* Rank 1: send rank 0 the small message `value` once rank 0 says go. */
static void send_small_on_go(int value, int tag)
{
    int go;

    MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, world, MPI_STATUS_IGNORE);
    MPI_Send(&value, 1, MPI_INT, 0, tag, world);
}

static void recv_any_unmatched(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        int got = -1, rc;
        kill_victim(v);
        rc = MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, world, &st);
        MT_CHECK(MPIX_ERR_PROC_FAILED == error_class(rc),
                 "MPI_Recv(ANY_SOURCE) unmatched across a failure: error class %d, value %d",
                 error_class(rc), got);
        MPIX_Comm_failure_ack(world);
        say_go();
        rc = MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, world, &st);
        MT_CHECK(MPI_SUCCESS == rc && 31 == got && 1 == st.MPI_SOURCE,
                 "MPI_Recv(ANY_SOURCE) after the acknowledgement: error class %d, value %d",
                 error_class(rc), got);
    } else {
        send_small_on_go(31, TAG_DATA);
    }
}

static void irecv_any_unmatched(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Request req;
        int got = -1, rc;
        MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, world, &req);
        kill_victim(v);
        rc = MPI_Wait(&req, &st);
        MT_CHECK(MPIX_ERR_PROC_FAILED_PENDING == error_class(rc),
                 "MPI_Wait on an unmatched MPI_Irecv(ANY_SOURCE) across a failure: error class %d",
                 error_class(rc));
        if (MPIX_ERR_PROC_FAILED_PENDING == error_class(rc)) {
            MT_CHECK(MPI_REQUEST_NULL != req, "the pending request was freed");
            MPIX_Comm_failure_ack(world);
            say_go();
            rc = MPI_Wait(&req, &st);
            MT_CHECK(MPI_SUCCESS == rc && 41 == got && 1 == st.MPI_SOURCE,
                     "the pending MPI_Irecv(ANY_SOURCE) after the acknowledgement: error class "
                     "%d, value %d, source %d", error_class(rc), got, st.MPI_SOURCE);
        } else {
            /* wrong already; still take rank 1's message so that the next scenarios run */
            MPIX_Comm_failure_ack(world);
            say_go();
            MPI_Recv(&got, 1, MPI_INT, 1, TAG_DATA, world, MPI_STATUS_IGNORE);
        }
    } else {
        send_small_on_go(41, TAG_DATA);
    }
}

static void probe_any(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Message msg;
        int got = -1, flag = 0, rc;
        kill_victim(v);
        rc = MPI_Probe(MPI_ANY_SOURCE, TAG_DATA, world, &st);
        MT_CHECK(MPIX_ERR_PROC_FAILED == error_class(rc),
                 "MPI_Probe(ANY_SOURCE) with nothing sent across a failure: error class %d",
                 error_class(rc));
        MPIX_Comm_failure_ack(world);
        say_go();
        /* named source: waits for rank 1's message whatever the failures */
        rc = MPI_Probe(1, TAG_DATA, world, &st);
        MT_CHECK(MPI_SUCCESS == rc, "MPI_Probe(1): error class %d", error_class(rc));
        rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &st);
        MT_CHECK(MPI_SUCCESS == rc && 1 == st.MPI_SOURCE && TAG_DATA == st.MPI_TAG,
                 "MPI_Probe(ANY_SOURCE, ANY_TAG) of a waiting message: error class %d, source %d",
                 error_class(rc), st.MPI_SOURCE);
        rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &flag, &st);
        MT_CHECK(MPI_SUCCESS == rc && flag && 1 == st.MPI_SOURCE,
                 "MPI_Iprobe(ANY_SOURCE, ANY_TAG) of a waiting message: error class %d, flag %d",
                 error_class(rc), flag);
        flag = 0;
        rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &flag, &msg, &st);
        MT_CHECK(MPI_SUCCESS == rc && flag && 1 == st.MPI_SOURCE,
                 "MPI_Improbe(ANY_SOURCE, ANY_TAG) of a waiting message: error class %d, flag %d",
                 error_class(rc), flag);
        if (MPI_SUCCESS == rc && flag) {
            rc = MPI_Mrecv(&got, 1, MPI_INT, &msg, &st);
        } else {
            rc = MPI_Recv(&got, 1, MPI_INT, 1, TAG_DATA, world, &st);
        }
        MT_CHECK(MPI_SUCCESS == rc && 51 == got, "MPI_Mrecv: error class %d, value %d",
                 error_class(rc), got);
    } else {
        send_small_on_go(51, TAG_DATA);
    }
}

static void persistent_any(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Request req, self;
        int mine = 61, got = -1, rc;
        MPI_Recv_init(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, world, &req);
        memset(big, 0, BIG);
        MPI_Start(&req);
        say_go();
        rc = MPI_Wait(&req, &st);
        check_big(rc, &st, 6, "a persistent MPI_Recv_init(ANY_SOURCE) matched before the failure");
        if (MPIX_ERR_PROC_FAILED_PENDING == error_class(rc)) {
            MPIX_Comm_failure_ack(world);
            MPI_Wait(&req, &st);
        }
        MPIX_Comm_failure_ack(world);
        /* started again it must match any source: here rank 0 itself */
        MPI_Isend(&mine, sizeof(mine), MPI_BYTE, 0, TAG_DATA, world, &self);
        MPI_Start(&req);
        rc = MPI_Wait(&req, &st);
        memcpy(&got, big, sizeof(got));
        MT_CHECK(MPI_SUCCESS == rc && 0 == st.MPI_SOURCE && 61 == got,
                 "the persistent ANY_SOURCE receive started again: error class %d, source %d, "
                 "value %d", error_class(rc), st.MPI_SOURCE, got);
        MPI_Wait(&self, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
    } else {
        send_big_across_a_failure(6, TAG_DATA, v);
    }
}

static void any_tag_named(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        say_go();
        memset(big, 0, BIG);
        check_big(MPI_Recv(big, BIG, MPI_BYTE, 1, MPI_ANY_TAG, world, &st), &st, 7,
                  "MPI_Recv(1, ANY_TAG) across a failure");
    } else {
        send_big_across_a_failure(7, TAG_DATA + 1, v);
    }
}

static void cancel_any(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Request req;
        int got = -1, cancelled = 0, rc;
        MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, TAG_DATA, world, &req);
        kill_victim(v);
        wait_failure_known(v);
        MPI_Cancel(&req);
        rc = MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &cancelled);
        MT_CHECK(MPI_SUCCESS == rc && cancelled,
                 "an MPI_Irecv(ANY_SOURCE) cancelled after a failure: error class %d, "
                 "cancelled %d", error_class(rc), cancelled);
    }
}

static void proc_null(int v)
{
    if (0 == mt_rank) {
        MPI_Status st;
        MPI_Request req;
        int got = -1, count = -1, rc;
        kill_victim(v);
        wait_failure_known(v);
        rc = MPI_Recv(&got, 1, MPI_INT, MPI_PROC_NULL, TAG_DATA, world, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        MT_CHECK(MPI_SUCCESS == rc && MPI_PROC_NULL == st.MPI_SOURCE && 0 == count && -1 == got,
                 "MPI_Recv(MPI_PROC_NULL): error class %d, source %d, count %d",
                 error_class(rc), st.MPI_SOURCE, count);
        MPI_Irecv(&got, 1, MPI_INT, MPI_PROC_NULL, TAG_DATA, world, &req);
        rc = MPI_Wait(&req, &st);
        MT_CHECK(MPI_SUCCESS == rc && MPI_PROC_NULL == st.MPI_SOURCE,
                 "MPI_Irecv(MPI_PROC_NULL): error class %d, source %d", error_class(rc),
                 st.MPI_SOURCE);
        rc = MPI_Probe(MPI_PROC_NULL, TAG_DATA, world, &st);
        MT_CHECK(MPI_SUCCESS == rc && MPI_PROC_NULL == st.MPI_SOURCE,
                 "MPI_Probe(MPI_PROC_NULL): error class %d, source %d", error_class(rc),
                 st.MPI_SOURCE);
    }
}

typedef struct {
    const char *name;
    void (*run)(int victim);
} scenario_t;

static const scenario_t failure_scenarios[] = {
    {"recv-any-matched", recv_any_matched},   {"irecv-any-matched", irecv_any_matched},
    {"recv-any-unmatched", recv_any_unmatched}, {"irecv-any-unmatched", irecv_any_unmatched},
    {"probe-any", probe_any},                 {"persistent-any", persistent_any},
    {"any-tag-named", any_tag_named},         {"cancel-any", cancel_any},
    {"proc-null", proc_null},
};
#define NSCENARIOS ((int) (sizeof(failure_scenarios) / sizeof(failure_scenarios[0])))

/* Rank 0 and rank 1 start each scenario together (named-source messages, which failures
 * elsewhere do not disturb). */
static void step_together(void)
{
    int token = 0;

    if (0 == mt_rank) {
        MPI_Send(&token, 1, MPI_INT, 1, TAG_NEXT, world);
        MPI_Recv(&token, 1, MPI_INT, 1, TAG_NEXT, world, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, TAG_NEXT, world, MPI_STATUS_IGNORE);
        MPI_Send(&token, 1, MPI_INT, 0, TAG_NEXT, world);
    }
}

static void run_failures(void)
{
    for (int s = 0; s < NSCENARIOS; s++) {
        int v = next_victim++;
        long before = mt_failures;
        if (0 == mt_rank) {
            MPIX_Comm_failure_ack(world);
        }
        step_together();
        failure_scenarios[s].run(v);
        if (0 == mt_rank) {
            wait_failure_known(v); /* the next scenario's failure must be its own */
        }
        scenario_verdict(failure_scenarios[s].name, before);
    }
}

/* The verdict between the survivors (ranks 0 and 1): mpitest's, without the dead. */
static int finish_survivors(void)
{
    long total = mt_failures, other = 0;

    if (0 == mt_rank) {
        MPI_Recv(&other, 1, MPI_LONG, 1, TAG_VERDICT, world, MPI_STATUS_IGNORE);
        total += other;
        printf("mpitest %s: np %d: %s (%ld failed checks)\n", mt_name, mt_size,
               total ? "FAIL" : "PASS", total);
        MPI_Send(&total, 1, MPI_LONG, 1, TAG_VERDICT, world);
    } else {
        MPI_Send(&total, 1, MPI_LONG, 0, TAG_VERDICT, world);
        MPI_Recv(&total, 1, MPI_LONG, 0, TAG_VERDICT, world, MPI_STATUS_IGNORE);
    }
    mt_dr2_counters_stop();
    MPI_T_finalize();
    printf("mpitest: rank %d done\n", mt_rank);
    fflush(stdout);
    MPI_Finalize();
    return total ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "failure";

    mt_init(&argc, &argv, "dr2_ulfm_recv");
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    mt_dr2_counters_start();
    if (0 != strcmp(mode, "failure") || mt_size != 2 + NSCENARIOS) {
        MT_CHECK(0, "usage: dr2_ulfm_recv failure, on %d ranks (got %s on %d)", 2 + NSCENARIOS,
                 mode, mt_size);
        return mt_finish();
    }
    if (mt_rank >= 2) {
        victim();
        return 1; /* not reached */
    }
    big = malloc(BIG);
    run_failures();
    free(big);
    return finish_survivors();
}
