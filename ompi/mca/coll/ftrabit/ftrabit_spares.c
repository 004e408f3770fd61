/*
 * ompi-resilience: libftrabit warm spares (coll_ftrabit_spares N).
 *
 * The job is started with N processes more than the application gets. FTR_Init places the
 * spares over the nodes (ftrabit_spare_plan.c) and splits MPI_COMM_WORLD: the others get
 * the application's communicator, numbered in world-rank order; the spares stay inside
 * FTR_Init. Everybody keeps the standby communicator, a duplicate of MPI_COMM_WORLD that
 * holds the application processes of the job and the spares still waiting.
 *
 * A spare waits for one message on the standby communicator from one application process,
 * testing for it once a millisecond and sleeping in between: MPI's blocking calls would
 * poll a core for as long as the application runs. It wakes for one of three reasons:
 * - the message (FTR_Finalize sends it from every application process): the job is done;
 *   the spare calls MPI_Finalize and exits with status 0 without returning from FTR_Init;
 * - the standby communicator was revoked: survivors are recovering (below);
 * - the process it listens to died: it listens to the next one (the survivors revoke the
 *   standby communicator as soon as they recover). When none is left, the spare exits.
 * A spare never listens to another spare, so a spare that dies wakes nobody; the next
 * recovery's shrink drops it.
 *
 * Recovery (a "standby round"): the survivors revoke the standby communicator instead of
 * shrinking their own. Every live member shrinks it and contributes (rank held or -1, host)
 * to an allgather; every member computes the same assignment of spares to dead ranks; a
 * split with the rank as key gives the survivors and the chosen spares in rank order, which
 * ftrabit_rebuild.c completes by spawning what no spare could fill. One agreement on the
 * shrunk standby communicator makes the round succeed everywhere or be redone everywhere.
 * A chosen spare then does what a spawned replacement does: it catches up with the
 * survivors (ftrabit_catchup.c) and FTR_Init returns the rebuilt communicator. Once no spare
 * is left, the standby communicator is freed and recovery is what it is without spares.
 *
 * Invariant while spares are left: every application process is a member of the standby
 * communicator (processes are spawned only once spares ran out), so a round reaches them
 * all.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "ftrabit_internal.h"
#include "ftrabit_notice.h"
#include "ftrabit_spare_plan.h"

#define FTRABIT_TAG_STANDBY 7710
#define FTRABIT_SPARE_RELEASE 1
/* How often a waiting spare looks for news: the delay a recovery starts with, against the
 * cost of one MPI_Test (a few microseconds) per period. */
#define FTRABIT_SPARE_POLL_NS 1000000L
#define FTRABIT_MAX_STANDBY_ROUNDS 16

typedef struct {
    MPI_Comm comm;     /* the standby communicator (MPI_COMM_NULL: no spares any more) */
    int app_size;      /* ranks of the application's communicator */
    int my_host;       /* this process's node (ftrabit_host_key) */
    int n;             /* members of comm, as of the last round */
    int *held;         /* [n]: application rank each member holds, -1 for a spare */
    int *host;         /* [n]: each member's node */
    int *last_host;    /* [app_size]: node of the process that last held each rank */
    int spares_left;
} ftrabit_standby_t;

static ftrabit_standby_t standby = {.comm = MPI_COMM_NULL};

enum { FTRABIT_SPARE_RELEASED, FTRABIT_SPARE_CALLED, FTRABIT_SPARE_ORPHANED };

int ftrabit_spares_active(void)
{
    return MPI_COMM_NULL != standby.comm && standby.spares_left > 0;
}

/* keep_comm: at the end of the job a spare leaves the communicator to MPI_Finalize instead.
 * Every application process sends each spare a release and a spare receives only one of
 * them; the others may still arrive after a free. Open MPI's ob1 keeps messages for a
 * context id that has no communicator and delivers them to the next communicator that gets
 * the id: the one MPI_Finalize builds itself (ULFM shrinks MPI_COMM_WORLD and runs a
 * barrier on the result), whose matching they would then throw out of step (seen: a hang
 * in that barrier in 3 runs of 8 when a spare had died).
 * An application process receives nothing on it after the releases and frees it: Open
 * MPI's finalize releases the communicators left to it in index order, and one spanning
 * nodes that ran a collective of coll/han (every standby round's allgather and split) has
 * han sub-communicators that may come first; han's destructor then frees them again (seen
 * on 3 hosts, one rank killed, 2 spares: "corrupted double-linked list" in MPI_Finalize in
 * 3 processes, 2 runs of 2; MPI_Comm_free releases them in order). */
static void ftrabit_standby_free(int keep_comm)
{
    if (MPI_COMM_NULL != standby.comm && !keep_comm) {
        MPI_Comm_free(&standby.comm);
    }
    standby.comm = MPI_COMM_NULL;
    free(standby.held);
    free(standby.host);
    free(standby.last_host);
    standby.held = standby.host = standby.last_host = NULL;
    standby.n = 0;
    standby.spares_left = 0;
}

/* This process's node: the lowest MPI_COMM_WORLD rank among the processes that share its
 * memory, as the runtime sees them (the unit a node failure takes down). */
static int ftrabit_host_key(int *key)
{
    MPI_Comm node;
    int wrank, err;

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    err = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (MPI_SUCCESS != err) {
        return err;
    }
    err = MPI_Allreduce(&wrank, key, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    return err;
}

static int ftrabit_spares_refuse(int wrank, const char *why)
{
    if (0 == wrank) {
        fprintf(stderr, "ftrabit: coll_ftrabit_spares %d: %s\n", ftrabit_settings.spares, why);
        fflush(stderr);
    }
    return MPI_ERR_ARG;
}

/* ---- a spare waiting ------------------------------------------------------------------ */

/* Wait for the release message from standby member `source`: MPI_SUCCESS when it came,
 * otherwise the error that ended the wait (revoked, or the source failed). */
static int ftrabit_spare_listen(int source)
{
    static int message;
    const struct timespec pause = {0, FTRABIT_SPARE_POLL_NS};
    MPI_Request req;
    int err = MPI_Irecv(&message, 1, MPI_INT, source, FTRABIT_TAG_STANDBY, standby.comm, &req);

    if (MPI_SUCCESS != err) {
        return err;
    }
    for (;;) {
        int done = 0;
        err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (MPI_SUCCESS != err || done) {
            break;
        }
        nanosleep(&pause, NULL);
    }
    if (MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req); /* MPI_Test leaves a request that ended in error allocated */
    }
    return err;
}

/* Listen to the application processes in turn until one of them speaks, the standby
 * communicator is revoked, or none is left. */
static int ftrabit_spare_wait(int *outcome)
{
    for (int i = 0; i < standby.n; i++) {
        if (standby.held[i] < 0) {
            continue;
        }
        int err = ftrabit_spare_listen(i), cls = err;
        if (MPI_SUCCESS == err) {
            *outcome = FTRABIT_SPARE_RELEASED;
            return MPI_SUCCESS;
        }
        MPI_Error_class(err, &cls);
        if (MPIX_ERR_REVOKED == cls) {
            *outcome = FTRABIT_SPARE_CALLED;
            return MPI_SUCCESS;
        }
        if (MPIX_ERR_PROC_FAILED != cls) {
            return err;
        }
        ftrabit_log(1, "spare: the application process it listened to (standby rank %d) "
                       "failed; listening to the next", i);
    }
    *outcome = FTRABIT_SPARE_ORPHANED;
    return MPI_SUCCESS;
}

/* CPU time of this process (all its threads) and wall-clock time, in seconds. */
static void ftrabit_spare_clocks(double *cpu, double *wall)
{
    struct rusage usage;

    getrusage(RUSAGE_SELF, &usage);
    *cpu = (double) usage.ru_utime.tv_sec + 1e-6 * (double) usage.ru_utime.tv_usec
           + (double) usage.ru_stime.tv_sec + 1e-6 * (double) usage.ru_stime.tv_usec;
    *wall = MPI_Wtime();
}

/* An unused spare at the end of the job: it never returns to the application. What its
 * wait cost is logged (coll_ftrabit_verbose 1; a test checks it). */
static void ftrabit_spare_leave(double cpu0, double wall0)
{
    double cpu, wall;

    ftrabit_spare_clocks(&cpu, &wall);
    ftrabit_log(1, "spare released by FTR_Finalize after %.3f s of waiting, %.3f s of CPU time: "
                   "leaving", wall - wall0, cpu - cpu0);
    ftrabit_standby_free(1);
    MPI_Finalize();
    exit(0);
}

static void ftrabit_spare_maybe_die_for_test(void)
{
    int wrank;

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (wrank == ftrabit_settings.test_kill_spare) {
        fprintf(stderr, "ftrabit: spare (world rank %d) killing itself while it waits "
                        "(coll_ftrabit_test_kill_spare)\n", wrank);
        fflush(stderr);
        raise(SIGKILL);
    }
}

/* A spare inside FTR_Init: wait, take part in recoveries, and either take a dead rank's
 * place (return with *world) or leave at the end of the job. A process whose rank was
 * handed over after a preemption notice (`handed_over`) waits the same way; like a spare
 * that got a notice, it takes part in rounds as leaving and is never chosen. */
static int ftrabit_spare_serve(MPI_Comm *world, int handed_over)
{
    double cpu0, wall0;

    ftrabit_spare_clocks(&cpu0, &wall0);
    if (handed_over) {
        ftrabit_log(1, "waiting with the spares, taking no rank, until FTR_Finalize");
    } else {
        ftrabit_log(1, "waiting as a spare");
        ftrabit_spare_maybe_die_for_test();
    }
    for (;;) {
        int outcome, err;
        ftrabit_spares_round_t round;

        err = ftrabit_spare_wait(&outcome);
        if (MPI_SUCCESS != err) {
            fprintf(stderr, "ftrabit: a spare's wait failed (error %d)\n", err);
            return err;
        }
        if (FTRABIT_SPARE_RELEASED == outcome) {
            ftrabit_spare_leave(cpu0, wall0);
        }
        if (FTRABIT_SPARE_ORPHANED == outcome) {
            /* The application ended without FTR_Finalize (every process of it failed or
             * exited): nobody will release or call this spare. */
            fprintf(stderr, "ftrabit: every application process is gone; a spare leaves\n");
            fflush(stderr);
            _exit(1);
        }
        err = ftrabit_spares_round(ftrabit_notice_pending() ? FTRABIT_SPARE_LEAVING : -1,
                                   &round);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (round.rank >= 0) {
            return ftrabit_join_as_spare(&round, standby.app_size, world);
        }
        ftrabit_log(1, "spare: recovery did not need this spare; waiting again");
    }
}

/* ---- FTR_Init and FTR_Finalize --------------------------------------------------------- */

/* Place the spares, build the standby and the application's communicators (*own:
 * MPI_COMM_NULL in a spare). */
static int ftrabit_spares_setup(int wrank, int wsize, int *app_rank, MPI_Comm *own)
{
    int err, *hosts = malloc(sizeof(int) * (size_t) wsize);

    standby.held = malloc(sizeof(int) * (size_t) wsize);
    standby.host = hosts;
    standby.last_host = malloc(sizeof(int) * (size_t) wsize);
    if (!hosts || !standby.held || !standby.last_host) {
        return MPI_ERR_NO_MEM;
    }
    err = ftrabit_host_key(&standby.my_host);
    if (MPI_SUCCESS == err) {
        err = MPI_Allgather(&standby.my_host, 1, MPI_INT, hosts, 1, MPI_INT, MPI_COMM_WORLD);
    }
    if (MPI_SUCCESS != err) {
        return err;
    }
    if (FTRABIT_SPARE_PLAN_OK
        != ftrabit_spare_place(hosts, wsize, ftrabit_settings.spares, standby.held)) {
        return MPI_ERR_NO_MEM; /* the arguments were checked by the caller */
    }
    standby.n = wsize;
    standby.app_size = wsize - ftrabit_settings.spares;
    standby.spares_left = ftrabit_settings.spares;
    for (int w = 0; w < wsize; w++) {
        if (standby.held[w] >= 0) {
            standby.last_host[standby.held[w]] = hosts[w];
        }
    }
    *app_rank = standby.held[wrank];
    err = MPI_Comm_dup(MPI_COMM_WORLD, &standby.comm);
    if (MPI_SUCCESS != err) {
        return err;
    }
    MPI_Comm_set_errhandler(standby.comm, MPI_ERRORS_RETURN);
    return MPI_Comm_split(MPI_COMM_WORLD, *app_rank >= 0 ? 0 : MPI_UNDEFINED, wrank, own);
}

int ftrabit_spares_init(MPI_Comm *world)
{
    int wrank, wsize, app_rank = -1, err;
    MPI_Comm own = MPI_COMM_NULL;
    ftrabit_state_t *st;

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (FTRABIT_RECOVER_RESPAWN != ftrabit_settings.policy) {
        return ftrabit_spares_refuse(wrank, "spares replace dead processes, so they need "
                                            "coll_ftrabit_recovery respawn (the default)");
    }
    if (ftrabit_settings.spares >= wsize) {
        return ftrabit_spares_refuse(wrank, "the job has no process left for the application: "
                                            "start it with more processes than spares");
    }
    err = ftrabit_spares_setup(wrank, wsize, &app_rank, &own);
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "ftrabit: could not set up the spares (error %d)\n", err);
        ftrabit_standby_free(0);
        return err;
    }
    if (app_rank < 0) {
        return ftrabit_spare_serve(world, 0);
    }
    MPI_Comm_set_errhandler(own, MPI_ERRORS_RETURN);
    if (NULL == (st = ftrabit_state_new(own, app_rank, standby.app_size))) {
        MPI_Comm_free(&own);
        return MPI_ERR_NO_MEM;
    }
    ftrabit_log(1, "application rank %d of %d; %d spare(s) waiting", app_rank,
                standby.app_size, standby.spares_left);
    return ftrabit_state_hand_out(st, world);
}

void ftrabit_spares_wait_out(void)
{
    MPI_Comm unused;
    int err = ftrabit_spare_serve(&unused, 1); /* returns only on an error */

    fprintf(stderr, "ftrabit: a process handed over after a preemption notice could not wait "
                    "for the end of the job (error %d); it leaves now\n", err);
    fflush(stderr);
    _exit(1);
}

/* In FTR_Finalize of an application process: every waiting spare may leave. Sent by every
 * application process, so that a spare hears it whichever of them it listens to. */
void ftrabit_spares_release(void)
{
    static const int release = FTRABIT_SPARE_RELEASE;

    if (MPI_COMM_NULL == standby.comm) {
        return;
    }
    for (int i = 0; i < standby.n; i++) {
        MPI_Request req;
        if (standby.held[i] >= 0
            || MPI_SUCCESS != MPI_Isend(&release, 1, MPI_INT, i, FTRABIT_TAG_STANDBY,
                                        standby.comm, &req)) {
            continue;
        }
        /* One int: sent eagerly, so this returns at once even if the spare died unseen. */
        if (MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE) && MPI_REQUEST_NULL != req) {
            MPI_Request_free(&req);
        }
    }
    ftrabit_standby_free(0);
}

/* ---- the standby round ------------------------------------------------------------------ */

typedef struct {
    int32_t held;
    int32_t host;
} ftrabit_member_t;

/* On the freshly shrunk standby communicator: who is who, the assignment, the split. The
 * new table goes to *next (committed by the caller once the round is agreed). */
static int ftrabit_standby_assign(int my_rank, int *new_rank, MPI_Comm *filled, int *unfilled,
                                  int *spares_before, ftrabit_standby_t *next)
{
    int n, me, err;
    ftrabit_member_t mine = {.held = my_rank, .host = standby.my_host}, *all;

    MPI_Comm_size(standby.comm, &n);
    MPI_Comm_rank(standby.comm, &me);
    all = malloc(sizeof(*all) * (size_t) n);
    next->held = malloc(sizeof(int) * (size_t) n);
    next->host = malloc(sizeof(int) * (size_t) n);
    int *was = malloc(sizeof(int) * (size_t) n);
    if (!all || !next->held || !next->host || !was) {
        free(all);
        free(was);
        return MPI_ERR_NO_MEM;
    }
    err = MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                        standby.comm);
    if (MPI_SUCCESS == err) {
        for (int i = 0; i < n; i++) {
            was[i] = all[i].held;
            next->host[i] = all[i].host;
            *spares_before += -1 == was[i];
        }
        next->n = n;
        if (FTRABIT_SPARE_PLAN_OK
            != ftrabit_spare_assign(was, next->host, n, standby.app_size, standby.last_host,
                                    next->held, unfilled, &next->spares_left)) {
            err = MPI_ERR_INTERN; /* the same on every member: they all computed it */
        }
    }
    if (MPI_SUCCESS == err) {
        *new_rank = next->held[me];
        err = MPI_Comm_split(standby.comm, *new_rank >= 0 ? 0 : MPI_UNDEFINED, *new_rank,
                             filled);
    }
    free(all);
    free(was);
    return err;
}

/* Members that left after a preemption notice and wait for the release. */
static int ftrabit_standby_has_leaving(void)
{
    for (int i = 0; i < standby.n; i++) {
        if (FTRABIT_SPARE_LEAVING == standby.held[i]) {
            return 1;
        }
    }
    return 0;
}

/* The round succeeded: the new table replaces the old one. */
static void ftrabit_standby_commit(ftrabit_standby_t *next)
{
    for (int i = 0; i < next->n; i++) {
        if (next->held[i] >= 0) {
            standby.last_host[next->held[i]] = next->host[i];
        }
    }
    free(standby.held);
    free(standby.host);
    standby.held = next->held;
    standby.host = next->host;
    standby.n = next->n;
    standby.spares_left = next->spares_left;
    if (0 == standby.spares_left) {
        /* Recovery goes on without the standby communicator; processes handed over after
         * a preemption notice still wait on it for FTR_Finalize's release. */
        ftrabit_log(1, "the last spare has been used");
        if (!ftrabit_standby_has_leaving()) {
            ftrabit_standby_free(0);
        }
    }
}

int ftrabit_spares_round(int my_rank, ftrabit_spares_round_t *out)
{
    int err = MPI_ERR_PROC_FAILED;

    out->started = MPI_Wtime();
    for (int attempt = 0; attempt < FTRABIT_MAX_STANDBY_ROUNDS; attempt++) {
        ftrabit_standby_t next = {.comm = MPI_COMM_NULL};
        MPI_Comm shrunk;
        int ok, spares_before = 0;

        out->filled = MPI_COMM_NULL;
        MPIX_Comm_revoke(standby.comm);
        err = MPIX_Comm_shrink(standby.comm, &shrunk);
        if (MPI_SUCCESS != err) {
            fprintf(stderr, "ftrabit: shrinking the spares' standby communicator failed "
                            "(error %d)\n", err);
            return err;
        }
        MPI_Comm_free(&standby.comm);
        standby.comm = shrunk;
        MPI_Comm_set_errhandler(standby.comm, MPI_ERRORS_RETURN);

        err = ftrabit_standby_assign(my_rank, &out->rank, &out->filled, &out->unfilled,
                                     &spares_before, &next);
        ok = MPI_SUCCESS == err;
        (void) MPIX_Comm_agree(standby.comm, &ok); /* the flag is agreed even on an error */
        if (ok) {
            out->taken = spares_before - next.spares_left;
            ftrabit_log(1, "standby round: rank %d -> %d; %d spare(s) took dead ranks, %d dead "
                           "rank(s) left to respawn, %d spare(s) left", my_rank, out->rank,
                        out->taken, out->unfilled, next.spares_left);
            ftrabit_standby_commit(&next);
            return MPI_SUCCESS;
        }
        free(next.held);
        free(next.host);
        if (MPI_COMM_NULL != out->filled) {
            MPI_Comm_free(&out->filled);
        }
        if (MPI_SUCCESS != err && !ftrabit_is_process_failure(err)) {
            return err;
        }
        ftrabit_log(1, "standby round failed (%d); again", err);
    }
    fprintf(stderr, "ftrabit: the spares could not be reached: processes kept failing through "
                    "%d attempts\n", FTRABIT_MAX_STANDBY_ROUNDS);
    return err;
}
