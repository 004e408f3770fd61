/*
 * ompi-resilience: libftrabit recovery: rebuilding a communicator after process failures.
 *
 * The first rank that sees a failure revokes the communicator, so every survivor's pending
 * operation fails too and all of them come here. Survivors shrink (ULFM's agreement on the
 * failed set happens inside MPIX_Comm_shrink), then, with the respawn policy, spawn one
 * replacement per dead rank, merge with them and split back into the original rank order
 * (ftrabit_respawn.c);
 * with the shrink policy they simply carry on with fewer ranks. Then every rank takes part
 * in the catch-up exchange, whose outcome they agree on. A failure during any of this
 * starts the rebuild again, with the replacements that had already joined.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_notice.h"
#include "ftrabit_rebuild.h"

#define FTRABIT_MAX_REBUILDS 16

/* The hand-out's victim dies 0.1 s after it entered MPI_Comm_dup: inside the context-id
 * allocation, with the others in it. */
static void *ftrabit_die_later(void *unused)
{
    (void) unused;
    usleep(100000);
    raise(SIGKILL);
    return NULL;
}

void ftrabit_maybe_die_in_recovery(const ftrabit_state_t *st, int step)
{
    static int recoveries_seen;

    if (step == ftrabit_settings.test_kill_in_recovery_step
        && st->first_rank == ftrabit_settings.test_kill_in_recovery && 0 == recoveries_seen++
        && FTR_ORIGIN_ORIGINAL == ftrabit_origin) {
        /* first_rank: under shrink orig_rank is renumbered, and another process would
         * take this one's number (and die) in a later recovery */
        fprintf(stderr, "ftrabit: original rank %d killing itself during recovery, step %d "
                        "(coll_ftrabit_test_kill_in_recovery)\n", st->first_rank, step);
        fflush(stderr);
        pthread_t killer;
        if (FTRABIT_TEST_STEP_HAND_OUT == step
            && 0 == pthread_create(&killer, NULL, ftrabit_die_later, NULL)) {
            pthread_detach(killer);
            return;
        }
        raise(SIGKILL);
    }
}

/* ---- uniform steps ---------------------------------------------------------------------
 * The steps of a respawn (the exchange of the dead ranks, the spawn, the merge) are
 * collectives that a failure in the middle of them ends on some processes only: those
 * that exchanged messages with the dead one see the error, the others complete or wait on
 * them. Each step therefore ends in one agreement on its outcome over the communicator it
 * ran on, and the flag decides for everybody: the step holds, or every survivor leaves
 * the rebuild and starts it again (a process failure), or every survivor fails with the
 * same error (anything else). A process that saw an error revokes first, so that those
 * still blocked in the step come out to the agreement.
 * A step also fails when a process of its communicator died before the agreement, even if
 * everybody completed it: MPI_Comm_spawn and MPI_Intercomm_merge of Open MPI 5.0.7 never
 * return when a member of their communicator is dead (PMIx's connect waits for it; the
 * merge's context id allocation retries for ever), so none is started with a dead member
 * known: the merge waits for every replacement to answer (ftrabit_introduce_replacements).
 * The agreement reports such a death alike everywhere (it agrees on the failed processes,
 * and nothing here acknowledges failures). A death inside those two calls is beyond
 * reach: the watchdog (coll_ftrabit_recovery_timeout) ends the job then. */
#define FTRABIT_STEP_DONE 1
#define FTRABIT_STEP_RETRYABLE 2

/* Did the step fail because a process failed? Also when the error itself says otherwise
 * but `comm` is revoked: Open MPI 5.0.7's communicator creation (MPI_Comm_dup,
 * MPI_Comm_split, the merge) returns MPI_ERR_OTHER when the communicator is revoked during
 * its context-id allocation (the nonblocking allreduce fails with MPIX_ERR_REVOKED and the
 * allocation with OMPI_ERROR). The process that revoked it after an error of another kind
 * still ends the step for everybody: the agreement keeps a flag only if all set it. */
static int ftrabit_step_failed_by_failure(MPI_Comm comm, int err)
{
    int revoked = 0;

    if (ftrabit_is_process_failure(err)) {
        return 1;
    }
    return MPI_SUCCESS == MPIX_Comm_is_revoked(comm, &revoked) && revoked;
}

int ftrabit_step_agreed(MPI_Comm comm, int err, const char *step)
{
    int flag = MPI_SUCCESS == err ? FTRABIT_STEP_DONE | FTRABIT_STEP_RETRYABLE
               : ftrabit_step_failed_by_failure(comm, err) ? FTRABIT_STEP_RETRYABLE
                                                          : 0;
    if (MPI_SUCCESS != err) {
        MPIX_Comm_revoke(comm);
    }
    int rc = MPIX_Comm_agree(comm, &flag);
    if (MPI_SUCCESS != rc && ftrabit_is_process_failure(rc)) {
        flag &= ~FTRABIT_STEP_DONE; /* someone died: the next step would wait for it */
    }
    if (flag & FTRABIT_STEP_DONE) {
        ftrabit_recovery_progress();
        return MPI_SUCCESS;
    }
    ftrabit_log(1, "rebuild step '%s' failed somewhere (here: error %d): %s", step, err,
                flag & FTRABIT_STEP_RETRYABLE ? "rebuilding again" : "giving up");
    if (flag & FTRABIT_STEP_RETRYABLE) {
        return MPI_ERR_PROC_FAILED;
    }
    return MPI_SUCCESS == err || ftrabit_is_process_failure(err) ? MPI_ERR_OTHER : err;
}

/* ---- the recovery watchdog ------------------------------------------------------------
 * MPI_Comm_spawn and the merge that follows block until the replacements run MPI_Init and
 * join; nothing in MPI can cancel them, and a transfer to a peer that went silent can wait
 * as long. A thread watches the rebuild and, if it makes no progress for
 * coll_ftrabit_recovery_timeout, ends the process with a message saying what it was doing,
 * instead of letting the job hang. Progress is a step done (ftrabit_recovery_doing) or a
 * part of a checkpoint or result transferred (ftrabit_message.c): a recovery that moves
 * gigabytes over a slow network takes as long as it must. */
static pthread_mutex_t ftrabit_watchdog_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ftrabit_watchdog_cond = PTHREAD_COND_INITIALIZER;
static int ftrabit_watchdog_done;
static uint64_t ftrabit_progress_ns;   /* CLOCK_MONOTONIC of the latest progress */
static const char *ftrabit_doing = "starting"; /* a string constant */

static uint64_t ftrabit_monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

void ftrabit_recovery_progress(void)
{
    __atomic_store_n(&ftrabit_progress_ns, ftrabit_monotonic_ns(), __ATOMIC_RELAXED);
}

void ftrabit_recovery_doing(const char *what)
{
    __atomic_store_n(&ftrabit_doing, what, __ATOMIC_RELAXED);
    ftrabit_recovery_progress();
}

typedef struct {
    int seconds;
    int orig_rank;    /* of the survivor waiting, or -1 in a replacement */
} ftrabit_watchdog_arg_t;

/* Sleeps until `seconds` pass without progress (returns 1) or the rebuild ends (0). */
static int ftrabit_watchdog_expired(int seconds)
{
    uint64_t limit = (uint64_t) seconds * 1000000000u;
    int expired = 0;

    pthread_mutex_lock(&ftrabit_watchdog_lock);
    while (!ftrabit_watchdog_done) {
        /* the progress first: read after it, the clock is never behind it */
        uint64_t last = __atomic_load_n(&ftrabit_progress_ns, __ATOMIC_RELAXED);
        uint64_t idle = ftrabit_monotonic_ns() - last;
        if (idle >= limit) {
            expired = 1;
            break;
        }
        struct timespec deadline;
        uint64_t wait = limit - idle;
        clock_gettime(CLOCK_REALTIME, &deadline); /* the condition's clock */
        deadline.tv_sec += (time_t) (wait / 1000000000u);
        deadline.tv_nsec += (long) (wait % 1000000000u);
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ftrabit_watchdog_cond, &ftrabit_watchdog_lock, &deadline);
    }
    pthread_mutex_unlock(&ftrabit_watchdog_lock);
    return expired;
}

static void *ftrabit_watchdog_main(void *p)
{
    ftrabit_watchdog_arg_t arg = *(ftrabit_watchdog_arg_t *) p;

    free(p);
    if (ftrabit_watchdog_expired(arg.seconds)) {
        /* write(2), not stdio: the thread blocked in MPI may be printing to stderr without
         * end (Open MPI 5.0.7's MPI_Intercomm_merge with a dead replacement spins in
         * NBC_Progress, printing an error at each turn), and then holds stderr's lock almost
         * all the time: fprintf here waited for it for ever and the job hung. */
        char msg[400];
        const char *doing = __atomic_load_n(&ftrabit_doing, __ATOMIC_RELAXED);
        int len;
        if (arg.orig_rank >= 0) {
            len = snprintf(msg, sizeof(msg), "ftrabit: recovery made no progress for "
                           "coll_ftrabit_recovery_timeout (%d s) while %s (original rank %d). "
                           "Ending this process.\n", arg.seconds, doing, arg.orig_rank);
        } else {
            len = snprintf(msg, sizeof(msg), "ftrabit: this replacement process made no "
                           "progress for coll_ftrabit_recovery_timeout (%d s) while %s. Ending "
                           "it.\n", arg.seconds, doing);
        }
        if (len > 0) {
            ssize_t ignored = write(STDERR_FILENO, msg, (size_t) len < sizeof(msg) ? (size_t) len
                                                                                   : sizeof(msg) - 1);
            (void) ignored;
        }
        /* Not MPI_Abort: in a job launched --with-ft ulfm, prterun treats an abort as the
         * failure of the calling process only (prrte errmgr_dvm.c, CALLED_ABORT of a
         * recoverable job), and here MPI is blocked in another thread anyway. Every
         * survivor's watchdog ends its own process; the launcher ends when all are gone. */
        _exit(1);
    }
    return NULL;
}

static int ftrabit_watchdog_arm(int orig_rank, pthread_t *thread)
{
    ftrabit_watchdog_arg_t *arg;

    if (ftrabit_settings.recovery_timeout <= 0
        || NULL == (arg = malloc(sizeof(*arg)))) {
        return 0;
    }
    arg->seconds = ftrabit_settings.recovery_timeout;
    arg->orig_rank = orig_rank;
    ftrabit_watchdog_done = 0;
    ftrabit_recovery_doing("starting the rebuild");
    if (0 != pthread_create(thread, NULL, ftrabit_watchdog_main, arg)) {
        free(arg);
        return 0;
    }
    return 1;
}

static void ftrabit_watchdog_disarm(pthread_t thread)
{
    pthread_mutex_lock(&ftrabit_watchdog_lock);
    ftrabit_watchdog_done = 1;
    pthread_cond_signal(&ftrabit_watchdog_cond);
    pthread_mutex_unlock(&ftrabit_watchdog_lock);
    pthread_join(thread, NULL);
}

/* A replacement whose spawn or merge failed somewhere: the survivors revoked its
 * communicator and start others. It has no state and holds no rank, so it leaves at once
 * (its exit is, to the survivors, one more failed process of a communicator they left);
 * returning an error to the application would only make it fail the job. */
static void ftrabit_abandoned(int err)
{
    fprintf(stderr, "ftrabit: this replacement process was abandoned by the survivors (error "
                    "%d: a failure while it was being started); they start another\n", err);
    fflush(stderr);
    _exit(0);
}

/* Receive who we replace, merge with the survivors and take the dead rank's place: the
 * new state owns the communicator in which it holds that rank. */
static int ftrabit_join(MPI_Comm parent, ftrabit_state_t **state)
{
    ftrabit_join_t join;
    MPI_Comm own = MPI_COMM_NULL;
    int err;

    *state = NULL;
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    ftrabit_recovery_doing("joining the survivors");
    /* The survivors send the join record only once the spawn held on all of them; the
     * answer tells them this process is alive, and "go" that they all agreed on it
     * (ftrabit_introduce_replacements): from here on they take part in the merge. */
    err = MPI_Recv(&join, sizeof(join), MPI_BYTE, 0, FTRABIT_TAG_JOIN, parent, MPI_STATUS_IGNORE);
    if (MPI_SUCCESS == err) {
        err = MPI_Send(NULL, 0, MPI_BYTE, 0, FTRABIT_TAG_JOIN, parent);
    }
    if (MPI_SUCCESS == err) {
        err = MPI_Recv(NULL, 0, MPI_BYTE, 0, FTRABIT_TAG_JOIN, parent, MPI_STATUS_IGNORE);
    }
    if (MPI_SUCCESS != err) {
        ftrabit_abandoned(err);
    }
    err = ftrabit_merge_with_replacements(parent, join.orig_rank, 1, &own);
    if (MPI_SUCCESS != err) {
        ftrabit_abandoned(err);
    }
    MPI_Comm_set_errhandler(own, MPI_ERRORS_RETURN);
    *state = ftrabit_state_new(own, join.orig_rank, join.orig_size);
    if (NULL == *state) {
        MPI_Comm_free(&own);
        return MPI_ERR_NO_MEM;
    }
    (*state)->replacement = 1;
    ftrabit_log(1, "replacement for original rank %d joined", join.orig_rank);
    return MPI_SUCCESS;
}

static void ftrabit_abort_policy(const ftrabit_state_t *st)
{
    fprintf(stderr, "ftrabit: a process failed and coll_ftrabit_recovery is 'abort': "
                    "ending the job (original rank %d)\n", st->orig_rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Shrink: ranks are renumbered among the survivors. Done after the catch-up, whose plan
 * needs the identities under which results were kept. */
static void ftrabit_adopt_shrunk_numbering(ftrabit_state_t *st)
{
    MPI_Comm_rank(st->comm, &st->orig_rank);
    MPI_Comm_size(st->comm, &st->orig_size);
}


/* The failed set is known and `present` holds the survivors (and the spares that took dead
 * ranks), in rank order: respawn what is missing, unless shrinking. `missing`: how many
 * ranks are missing (-1: not known, found by ftrabit_respawn). On success `present` is
 * freed or handed on as *rebuilt. After a standby round (missing >= 0), a process failure
 * hands `present` on too: survivors and spares that took ranks share no older communicator,
 * so the next rebuild must start from this one on every side. */
static int ftrabit_complete_rebuild(ftrabit_state_t *st, MPI_Comm present, int missing,
                                    int *shrinking, MPI_Comm *rebuilt)
{
    int err, rank;

    *rebuilt = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(present, MPI_ERRORS_RETURN);
    ftrabit_maybe_die_in_recovery(st, FTRABIT_TEST_STEP_START);
    MPI_Comm_rank(present, &rank);
    st->announces_recovery = 0 == rank;
    if (*shrinking || 0 == missing) {
        *rebuilt = present;
        return MPI_SUCCESS;
    }
    err = ftrabit_respawn(st, present, rebuilt);
    if (MPI_SUCCESS != err && !ftrabit_is_process_failure(err)
        && FTRABIT_RECOVER_SHRINK == ftrabit_settings.recovery_fallback) {
        fprintf(stderr, "ftrabit: replacement processes could not be started (error %d); "
                        "continuing with the survivors (coll_ftrabit_recovery_fallback=shrink)\n",
                err);
        ftrabit_settings.policy = FTRABIT_RECOVER_SHRINK;
        *shrinking = 1;
        *rebuilt = present;
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS != err && missing >= 0 && ftrabit_is_process_failure(err)) {
        *rebuilt = present;
        return err;
    }
    if (MPI_SUCCESS != err) {
        *rebuilt = MPI_COMM_NULL;
    }
    MPI_Comm_free(&present);
    return err;
}

/* One rebuild of `current`: the new communicator in *rebuilt. While spares wait, they and
 * the survivors agree on the failed set in a standby round (ftrabit_spares.c) instead of a
 * shrink of `current`. */
static int ftrabit_rebuild(ftrabit_state_t *st, MPI_Comm current, int *shrinking,
                           MPI_Comm *rebuilt)
{
    MPI_Comm shrunk = MPI_COMM_NULL;
    int err;

    *rebuilt = MPI_COMM_NULL;
    MPIX_Comm_revoke(current);
    ftrabit_recovery_doing("agreeing on the failed processes");
    if (!*shrinking && ftrabit_spares_active()) {
        ftrabit_spares_round_t round;
        err = ftrabit_spares_round(ftrabit_notice_standby_rank(st), &round);
        if (MPI_SUCCESS == err) {
            err = ftrabit_notice_after_round(round.rank); /* a handed-over rank leaves */
        }
        if (MPI_SUCCESS != err) {
            return err;
        }
        st->spares_taken += round.taken;
        return ftrabit_complete_rebuild(st, round.filled, round.unfilled, shrinking, rebuilt);
    }
    err = MPIX_Comm_shrink(current, &shrunk);
    if (MPI_SUCCESS != err) {
        ftrabit_log(0, "MPIX_Comm_shrink failed (%d)", err);
        return err;
    }
    err = ftrabit_notice_split_out(&shrunk); /* a handover: the notified ranks leave */
    if (MPI_SUCCESS != err) {
        return err;
    }
    return ftrabit_complete_rebuild(st, shrunk, -1, shrinking, rebuilt);
}

/* The catch-up ends in one agreement on its outcome. Ranks whose transfers did not touch
 * a process that died can finish while others fail; left alone, they would go back to the
 * application while the others rebuild. Each bit of the agreed flag is an AND over the
 * ranks: all caught up, or else whether every failure was a process failure (rebuild
 * again) or some rank hit an error no rebuild can fix (the plan itself failed: every rank
 * computed the same one). A rank that saw a process failure revokes first, so that nobody
 * stays blocked in a transfer with it. */
#define FTRABIT_CATCHUP_DONE 1
#define FTRABIT_CATCHUP_RETRYABLE 2

#define FTRABIT_TAG_LEAVE 7702 /* never sent: a receive on it ends with its sender's failure */
/* How long the original job's processes wait for the replacements to be gone when recovery
 * is impossible; past it they leave anyway. */
#define FTRABIT_LEAVE_WAIT_SECONDS 10.0

/* Receives, one from each rank of st->comm that recoveries started (not in this process's
 * MPI_COMM_WORLD, the original job). Returns how many were posted. */
static int ftrabit_post_leave_receives(const ftrabit_state_t *st, MPI_Request *reqs)
{
    static char never_written; /* nothing is sent on FTRABIT_TAG_LEAVE */
    MPI_Group group, world_group;
    int size, n = 0;

    MPI_Comm_size(st->comm, &size);
    if (MPI_SUCCESS != MPI_Comm_group(st->comm, &group)) {
        return 0;
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int r = 0; r < size; r++) {
        int in_world;
        MPI_Group_translate_ranks(group, 1, &r, world_group, &in_world);
        if (MPI_UNDEFINED == in_world
            && MPI_SUCCESS == MPI_Irecv(&never_written, 1, MPI_BYTE, r, FTRABIT_TAG_LEAVE,
                                        st->comm, &reqs[n])) {
            n++;
        }
    }
    MPI_Group_free(&world_group);
    MPI_Group_free(&group);
    return n;
}

/* Recovery is impossible: every rank returns the error to its application, which will most
 * likely end its process. The processes that recoveries started leave at once, and those of
 * the original job wait (at most FTRABIT_LEAVE_WAIT_SECONDS) until each of them is known to
 * have failed, so that no spawned job is still being torn down when the job that spawned it
 * ends: prterun of Open MPI 5.0.x (PRRTE 3.0) can deadlock then, blocked for ever in its
 * cleanup_job (seen about once in 100 runs of ft/lost-results-end-the-job, where one
 * replacement's exit made prterun terminate the replacements' job while the survivors
 * exited). */
static void ftrabit_leave_after_replacements(const ftrabit_state_t *st)
{
    double deadline = MPI_Wtime() + FTRABIT_LEAVE_WAIT_SECONDS;
    MPI_Request *reqs;
    int size, n, pending;

    MPI_Comm_size(st->comm, &size);
    if (ftrabit_spawned || NULL == (reqs = malloc(sizeof(*reqs) * (size_t) size))) {
        return;
    }
    n = ftrabit_post_leave_receives(st, reqs);
    for (pending = n; pending > 0 && MPI_Wtime() < deadline;) {
        struct timespec pause = {0, 1000000};

        for (int i = 0; i < n; i++) {
            int complete = 0;
            /* complete, in error, once its sender is known to have failed (MPI_Test leaves
             * a request that ended in error allocated) */
            if (MPI_REQUEST_NULL != reqs[i]
                && (MPI_SUCCESS != MPI_Test(&reqs[i], &complete, MPI_STATUS_IGNORE)
                    || complete)) {
                if (MPI_REQUEST_NULL != reqs[i]) {
                    MPI_Request_free(&reqs[i]);
                }
                pending--;
            }
        }
        if (pending > 0) {
            nanosleep(&pause, NULL);
        }
    }
    for (int i = 0; i < n; i++) {
        if (MPI_REQUEST_NULL != reqs[i]) {
            MPI_Cancel(&reqs[i]);
            MPI_Request_free(&reqs[i]);
        }
    }
    ftrabit_log(1, "%d of %d replacement(s) seen gone before leaving", n - pending, n);
    free(reqs);
}

static int ftrabit_catch_up_agreed(ftrabit_state_t *st)
{
    int plan_failed;
    int err = ftrabit_catch_up(st, &plan_failed);
    int flag = 0;

    if (MPI_SUCCESS == err) {
        flag = FTRABIT_CATCHUP_DONE | FTRABIT_CATCHUP_RETRYABLE;
    } else if (ftrabit_is_process_failure(err)) {
        flag = FTRABIT_CATCHUP_RETRYABLE;
    }
    /* A failed plan needs no revoke: every rank computes it, and no transfer starts. A
     * revoke would break the record exchange of ranks still in it, and with it their
     * message saying why. Any other error (a process failure, out of memory, a transfer
     * too large) may leave peers waiting for a transfer from this rank: the revoke gets
     * them to the agreement. */
    if (MPI_SUCCESS != err && !plan_failed) {
        MPIX_Comm_revoke(st->comm);
    }
    /* The flag is the same on every survivor even when the agreement reports a failure;
     * a process that died after it is found by the next collective. */
    int local = flag;
    (void) MPIX_Comm_agree(st->comm, &flag);
    ftrabit_log(1, "catch-up: local outcome %d (error %d), agreed %d", local, err, flag);
    if (flag & FTRABIT_CATCHUP_DONE) {
        return MPI_SUCCESS;
    }
    if (flag & FTRABIT_CATCHUP_RETRYABLE) {
        return MPI_ERR_PROC_FAILED;
    }
    ftrabit_leave_after_replacements(st);
    return MPI_SUCCESS == err || ftrabit_is_process_failure(err) ? MPI_ERR_OTHER : err;
}

/* Rebuild, catch up, and again while processes keep failing; each communicator replaced
 * is freed (the application's handle is a duplicate: see ftrabit_finish_recovery).
 * Survivors and replacements that joined a rebuilt communicator all run this loop
 * together. */
static int ftrabit_rebuild_loop(ftrabit_state_t *st, int *shrinking)
{
    MPI_Comm current = st->comm;
    int err = MPI_ERR_PROC_FAILED;

    for (int attempt = 0; attempt < FTRABIT_MAX_REBUILDS; attempt++) {
        MPI_Comm rebuilt = MPI_COMM_NULL;

        err = ftrabit_rebuild(st, current, shrinking, &rebuilt);
        if (MPI_COMM_NULL != rebuilt) { /* also after some failures: see complete_rebuild */
            MPI_Comm_set_errhandler(rebuilt, MPI_ERRORS_RETURN);
            MPI_Comm_free(&current);
            st->comm = rebuilt;
            current = rebuilt;
        }
        if (MPI_SUCCESS == err) {
            err = ftrabit_catch_up_agreed(st);
        }
        if (MPI_SUCCESS == err || !ftrabit_is_process_failure(err)) {
            return err;
        }
        ftrabit_log(1, "another failure during recovery (%d); rebuilding again", err);
    }
    fprintf(stderr, "ftrabit: recovery is not possible: processes kept failing through %d "
                    "rebuilds\n", FTRABIT_MAX_REBUILDS);
    ftrabit_durable_say_restart(st);
    return err;
}

/* One line per recovery, from the first survivor (rank 0 of the last shrunk communicator):
 * a failure the application never sees should still leave a trace in the job's output. */
static void ftrabit_announce_recovery(const ftrabit_state_t *st, int shrinking)
{
    int size;

    const char *how = shrinking ? "shrink"
                      : 0 == st->spares_taken ? "respawn"
                      : 0 == st->respawned ? "spares"
                                           : "spares, then respawn";

    const char *what = ftrabit_notice_take_handed_over()
                           ? "handed over the rank(s) of a preemption notice"
                           : "recovered from a process failure";

    MPI_Comm_size(st->comm, &size);
    if (st->announces_recovery) {
        fprintf(stderr, "ftrabit: %s in %.3f s (%s; %d ranks, catching up to collective "
                        "%llu)\n",
                what, st->last_recovery_seconds, how, size,
                (unsigned long long) st->served_until);
        fflush(stderr);
    }
}

/* Hand the application a duplicate of the rebuilt communicator (*app), as one step of the
 * rebuild: the duplicate is a collective, which a process that died after the catch-up's
 * agreement fails on some ranks or all; the step's agreement then has every process
 * rebuild again (MPI_ERR_PROC_FAILED) instead of handing out a communicator with a dead
 * member, whose next collective would fail everywhere. */
static int ftrabit_hand_out_agreed(ftrabit_state_t *st, MPI_Comm *app)
{
    MPI_Comm kept = st->app_comm;

    ftrabit_maybe_die_in_recovery(st, FTRABIT_TEST_STEP_HAND_OUT);
    ftrabit_recovery_doing("handing the rebuilt communicator out (MPI_Comm_dup)");
    int err = ftrabit_state_hand_out(st, app);

    err = ftrabit_step_agreed(st->comm, err, "hand-out");
    if (MPI_SUCCESS != err && MPI_COMM_NULL != *app) {
        MPI_Comm_free(app);
        st->app_comm = kept;
    }
    return err;
}

/* After a successful rebuild loop: hand the application a duplicate of the rebuilt
 * communicator in *comm, in place of the handle it held, which is freed. The duplicate is
 * collective, so every rank of the rebuild makes one, also in FTR_Finalize (comm NULL),
 * where it replaces the handle the application kept, if any, and is freed at the end. */
static int ftrabit_finish_recovery(ftrabit_state_t *st, MPI_Comm *comm, int shrinking,
                                   double start)
{
    MPI_Comm old = NULL != comm ? *comm : st->app_comm, fresh;

    if (shrinking) {
        ftrabit_adopt_shrunk_numbering(st);
    }
    int err = ftrabit_hand_out_agreed(st, &fresh);
    if (MPI_SUCCESS != err) {
        return err; /* the application's handle stays until a hand-out succeeds */
    }
    if (MPI_COMM_NULL != old) {
        MPI_Comm_free(&old);
    }
    if (NULL != comm) {
        *comm = fresh;
    }
    st->recoveries++;
    st->last_recovery_seconds = MPI_Wtime() - start;
    ftrabit_announce_recovery(st, shrinking);
    return err;
}

/* Rebuild (unless `rebuilt`: the caller just caught up) and hand the rebuilt communicator
 * out, again while a process fails in the hand-out. */
static int ftrabit_rebuild_and_hand_out(ftrabit_state_t *st, MPI_Comm *comm, int *shrinking,
                                        double start, int rebuilt)
{
    int err = MPI_ERR_PROC_FAILED;

    for (int attempt = 0; attempt < FTRABIT_MAX_REBUILDS; attempt++) {
        if (!rebuilt) {
            err = ftrabit_rebuild_loop(st, shrinking);
            if (MPI_SUCCESS != err) {
                return err;
            }
        }
        err = ftrabit_finish_recovery(st, comm, *shrinking, start);
        if (!ftrabit_is_process_failure(err)) {
            return err;
        }
        ftrabit_log(1, "a process failed as the rebuilt communicator was handed out; "
                       "rebuilding again");
        rebuilt = 0;
    }
    return err;
}

/* Every way into a rebuild goes through exactly one agreement on the old communicator
 * first. A rank that failed in a collective may meet ranks that completed it and went on
 * to FTR_Checkpoint, whose commit decision is an MPIX_Comm_agree: an agreement is not
 * interrupted by a revoke, so they would wait there for ever while this rank shrinks.
 * Joining them in an agreement (contributing "failed") lets both sides leave it and
 * shrink together. */
int ftrabit_recover(ftrabit_state_t *st, MPI_Comm *comm)
{
    int failed = 0;

    /* The application's handle too: peers blocked in their own MPI calls on it (the
     * FTR_Comm_recover way) must come out and recover as well. */
    if (MPI_COMM_NULL != st->app_comm) {
        MPIX_Comm_revoke(st->app_comm);
    }
    MPIX_Comm_revoke(st->comm);
    (void) MPIX_Comm_agree(st->comm, &failed);
    return ftrabit_rebuild_after_agreement(st, comm);
}

int ftrabit_final_agreement(ftrabit_state_t *st)
{
    for (int round = 0;; round++) {
        int done = 1;
        int err = MPIX_Comm_agree(st->comm, &done);
        if (MPI_SUCCESS == err && done) {
            ftrabit_log(1, "final agreement reached after %d recoveries", round);
            return MPI_SUCCESS;
        }
        if (MPI_SUCCESS != err && !ftrabit_is_process_failure(err)) {
            return err;
        }
        /* Someone failed, or is recovering from a failure: recover with them. */
        MPIX_Comm_revoke(st->comm);
        err = ftrabit_rebuild_after_agreement(st, NULL);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
}

int ftrabit_rebuild_after_agreement(ftrabit_state_t *st, MPI_Comm *comm)
{
    double start = MPI_Wtime();
    int shrinking = FTRABIT_RECOVER_SHRINK == ftrabit_settings.policy;
    pthread_t watchdog;
    int watched = 0;

    if (FTRABIT_RECOVER_ABORT == ftrabit_settings.policy) {
        ftrabit_abort_policy(st);
    }
    st->spares_taken = 0;
    st->respawned = 0;
    if (!shrinking) {
        watched = ftrabit_watchdog_arm(st->orig_rank, &watchdog);
    }
    int err = ftrabit_rebuild_and_hand_out(st, comm, &shrinking, start, 0);
    if (watched) {
        ftrabit_watchdog_disarm(watchdog);
    }
    return err;
}

/* A replacement joins, then takes part in the catch-up. If another process dies in the
 * meantime, it stays with the survivors through their next rebuilds instead of leaving:
 * leaving would take with it the checkpoint replicas the plan now counts on it holding. */
int ftrabit_join_as_replacement(MPI_Comm parent, MPI_Comm *world)
{
    double start = MPI_Wtime();
    ftrabit_state_t *st;
    /* Survivors that gave up waiting (coll_ftrabit_recovery_timeout) are gone, and joining
     * them can then block for ever inside MPI: the same timeout ends this process. */
    pthread_t watchdog;
    int watched = ftrabit_watchdog_arm(-1, &watchdog);
    int err;

    ftrabit_spawned = 1;
    ftrabit_origin = FTR_ORIGIN_RESPAWNED;
    *world = MPI_COMM_NULL;
    err = ftrabit_join(parent, &st);

    if (MPI_SUCCESS == err) {
        err = ftrabit_catch_up_agreed(st);
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_hand_out_agreed(st, world);
    }
    if (MPI_SUCCESS != err && ftrabit_is_process_failure(err)) {
        int shrinking = FTRABIT_RECOVER_SHRINK == ftrabit_settings.policy;
        ftrabit_log(1, "a failure while this replacement caught up (%d); rebuilding with the "
                       "survivors", err);
        err = ftrabit_rebuild_and_hand_out(st, world, &shrinking, start, 0);
    }
    if (watched) {
        ftrabit_watchdog_disarm(watchdog);
    }
    return err;
}

/* A spare chosen by a standby round: the same steps as the survivors from there on (the
 * rest of the rebuild, the catch-up, further rebuilds), then FTR_Init returns. */
int ftrabit_join_as_spare(const ftrabit_spares_round_t *round, int app_size, MPI_Comm *world)
{
    double start = round->started; /* it was woken for this recovery */
    pthread_t watchdog;
    int watched = ftrabit_watchdog_arm(-1, &watchdog);
    int shrinking = 0, err = MPI_ERR_NO_MEM;
    MPI_Comm rebuilt = MPI_COMM_NULL;
    ftrabit_state_t *st = ftrabit_state_new(round->filled, round->rank, app_size);

    ftrabit_origin = FTR_ORIGIN_SPARE;
    *world = MPI_COMM_NULL;
    if (NULL != st) {
        st->replacement = 1;
        st->spares_taken = round->taken;
        ftrabit_log(1, "spare takes the place of rank %d", round->rank);
        err = ftrabit_complete_rebuild(st, round->filled, round->unfilled, &shrinking, &rebuilt);
        st->comm = rebuilt; /* round->filled was freed, or is rebuilt */
        if (MPI_COMM_NULL != rebuilt) {
            MPI_Comm_set_errhandler(rebuilt, MPI_ERRORS_RETURN);
        }
        if (MPI_SUCCESS == err) {
            err = ftrabit_catch_up_agreed(st);
        }
        if (MPI_SUCCESS != err && ftrabit_is_process_failure(err)) {
            ftrabit_log(1, "a failure while this spare caught up (%d); rebuilding with the "
                           "survivors", err);
        }
        if (MPI_SUCCESS == err || ftrabit_is_process_failure(err)) {
            err = ftrabit_rebuild_and_hand_out(st, world, &shrinking, start, MPI_SUCCESS == err);
        }
    }
    if (watched) {
        ftrabit_watchdog_disarm(watchdog);
    }
    return err;
}

int FTR_Comm_recover(MPI_Comm *comm)
{
    ftrabit_state_t *st = ftrabit_state_of(*comm);
    if (NULL == st) {
        fprintf(stderr, "ftrabit: FTR_Comm_recover needs a communicator from FTR_Init or from "
                        "an earlier recovery\n");
        return MPI_ERR_COMM;
    }
    return ftrabit_recover(st, comm);
}
