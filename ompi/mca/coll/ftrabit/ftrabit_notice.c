/*
 * ompi-resilience: libftrabit preemption notices.
 *
 * A process that will be taken away is often told first: Slurm preempts with SIGTERM and
 * sends SIGKILL after the partition's GraceTime, a cloud gives a spot VM a notice that an
 * agent on the node can turn into a SIGTERM, a user runs kill. Left alone, SIGTERM ends the
 * process at once and recovery replaces it from the last checkpoint, which redoes every
 * iteration since. With coll_ftrabit_notice (1 by default) FTR_Init makes the first
 * SIGTERM only set a flag; the process goes on, and the next FTR_Checkpoint hands its rank
 * over:
 *
 * - the flag rides on the agreement the checkpoint makes anyway (one bit more of its vote,
 *   no message more): once the version is committed everywhere, every rank knows that some
 *   process got a notice;
 * - the ranks count the notified ones (an allreduce, ended by an agreement), and unless
 *   all of them are (nobody left to hand over to) they rebuild as after a failure, with the
 *   notified ranks taken out as if they had died: in a standby round they hold nothing
 *   (FTRABIT_SPARE_LEAVING, so a spare takes their rank), without spares a split after the
 *   shrink leaves them out and the respawn replaces them;
 * - the replacement starts from the checkpoint just committed, and the results cached
 *   before it were dropped by the commit: nothing is replayed, no iteration is redone, and
 *   the result is bit-identical as after any recovery;
 * - the notified process then leaves without anyone noticing: with spares it waits among
 *   them, never chosen, until FTR_Finalize releases it; without spares it enters
 *   MPI_Finalize at once and waits there for the others. A process that no live
 *   communicator holds can end, or be killed when the grace time is over, without starting
 *   a recovery.
 *
 * A notice that arrives after the last checkpoint, or too close to the SIGKILL, changes
 * nothing: the process dies and is replaced as without a notice. A second SIGTERM gets what
 * SIGTERM had before (its default action, or a library's handler: the end of the process),
 * and a program that handles or ignores SIGTERM itself keeps it. Notified spares
 * take part in standby rounds as FTRABIT_SPARE_LEAVING (ftrabit_spares.c): never chosen.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_notice.h"
#include "ftrabit_rebuild.h"
#include "ftrabit_spare_plan.h"

static volatile sig_atomic_t ftrabit_notices; /* SIGTERMs received */
static struct sigaction ftrabit_sigterm_before; /* what a second SIGTERM gets */

/* How the process of a handed-over rank leaves (ftrabit_notice_leave). */
enum { FTRABIT_STAYS = 0, FTRABIT_LEAVES_AS_SPARE, FTRABIT_LEAVES_BY_FINALIZE };

static int ftrabit_handing_over;   /* the rebuild in progress hands notified ranks over */
static int ftrabit_handed_over;    /* the last rebuild did (for its announcement) */
static int ftrabit_leaving = FTRABIT_STAYS;

/* Async-signal-safe: a flag; the second SIGTERM gets what was there before. */
static void ftrabit_notice_handler(int sig)
{
    if (ftrabit_notices > 0) {
        (void) sigaction(sig, &ftrabit_sigterm_before, NULL);
        (void) raise(sig);
        return;
    }
    ftrabit_notices = 1;
}

/* Is `code` in the program's own executable (rather than in a library)? */
static int ftrabit_in_executable(const void *code)
{
    char exe[PATH_MAX], line[PATH_MAX + 128], path[PATH_MAX];
    unsigned long lo, hi, at = (unsigned long) code;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    FILE *maps = fopen("/proc/self/maps", "r");
    int found = 0;

    if (n <= 0 || NULL == maps) {
        if (maps) {
            fclose(maps);
        }
        return 1; /* cannot tell: leave it alone */
    }
    exe[n] = '\0';
    while (!found && NULL != fgets(line, sizeof(line), maps)) {
        path[0] = '\0';
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) >= 2 && lo <= at
            && at < hi) {
            found = 1 + (0 == strcmp(path, exe));
        }
    }
    fclose(maps);
    return 2 == found;
}

void ftrabit_notice_install(void)
{
    static int installed;
    struct sigaction now, mine;

    if (installed || !ftrabit_settings.notice || 0 != sigaction(SIGTERM, NULL, &now)) {
        return;
    }
    /* A library's handler (libfabric's psm provider, libpsm-infinipath, installs one that
     * ends the process) is kept for the second SIGTERM; the program's own, or SIGTERM
     * ignored, is left alone. */
    void *handler = (now.sa_flags & SA_SIGINFO) ? (void *) now.sa_sigaction
                                                : (void *) now.sa_handler;
    if (SIG_IGN == now.sa_handler
        || (SIG_DFL != now.sa_handler && ftrabit_in_executable(handler))) {
        ftrabit_log(1, "SIGTERM is the program's: no preemption notices");
        return;
    }
    memset(&mine, 0, sizeof(mine));
    mine.sa_handler = ftrabit_notice_handler;
    sigemptyset(&mine.sa_mask);
    mine.sa_flags = SA_RESTART; /* MPI's system calls go on where they were */
    installed = 0 == sigaction(SIGTERM, &mine, &ftrabit_sigterm_before);
}

int ftrabit_notice_pending(void)
{
    return ftrabit_notices > 0;
}

int ftrabit_notice_vote(void)
{
    static int said;

    if (!ftrabit_notice_pending()) {
        return FTRABIT_AGREE_NO_NOTICE;
    }
    if (!said) {
        said = 1;
        ftrabit_log(1, "got a preemption notice (SIGTERM): handing its rank over once this "
                       "checkpoint is committed");
    }
    return 0;
}

/* The process of a handed-over rank, out of every communicator the ranks use now. With
 * durable checkpoints its files of the version just committed are written first (the writer
 * ends), so that a grace time long enough leaves that version complete on disk. */
static void ftrabit_notice_leave(ftrabit_state_t *st)
{
    int wrank;

    ftrabit_durable_free(st);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    fprintf(stderr, "ftrabit: rank %d (world rank %d) handed over after a preemption notice; "
                    "this process leaves\n", st->orig_rank, wrank);
    fflush(stderr);
    if (FTRABIT_LEAVES_AS_SPARE == ftrabit_leaving) {
        ftrabit_spares_wait_out(); /* does not return */
    }
    MPI_Finalize(); /* waits for the others' (ULFM's finalize agrees over MPI_COMM_WORLD) */
    exit(0);
}

/* How many ranks of st->comm got a notice, agreed: MPI_SUCCESS or the step's error. */
static int ftrabit_notice_count(ftrabit_state_t *st, int *notified)
{
    int mine = ftrabit_notice_pending();
    int err = MPI_Allreduce(&mine, notified, 1, MPI_INT, MPI_SUM, st->comm);

    return ftrabit_step_agreed(st->comm, err, "count of preemption notices");
}

int ftrabit_notice_after_commit(ftrabit_state_t *st, MPI_Comm *comm, int vote)
{
    static int said_all;
    int size, rank, notified = 0, err;

    if ((vote & FTRABIT_AGREE_NO_NOTICE) || FTRABIT_RECOVER_ABORT == ftrabit_settings.policy) {
        return MPI_SUCCESS; /* under abort the SIGKILL will end the job, as a failure would */
    }
    err = ftrabit_notice_count(st, &notified);
    if (MPI_SUCCESS != err) {
        /* a process died: an ordinary recovery; the notices wait for the next checkpoint */
        return ftrabit_is_process_failure(err) ? ftrabit_rebuild_after_agreement(st, comm) : err;
    }
    MPI_Comm_size(st->comm, &size);
    MPI_Comm_rank(st->comm, &rank);
    if (notified == size) {
        if (0 == rank && !said_all) {
            fprintf(stderr, "ftrabit: every rank got a preemption notice: nobody is left to "
                            "hand them over to, so they go on until they are ended\n");
            said_all = 1;
        }
        return MPI_SUCCESS;
    }
    if (0 == notified) {
        return MPI_SUCCESS;
    }
    ftrabit_log(1, "%d of %d ranks got a preemption notice: handing them over", notified, size);
    ftrabit_handing_over = 1;
    err = ftrabit_rebuild_after_agreement(st, comm);
    ftrabit_handing_over = 0;
    if (FTRABIT_STAYS != ftrabit_leaving) {
        ftrabit_notice_leave(st);
    }
    return err;
}

int ftrabit_notice_standby_rank(const ftrabit_state_t *st)
{
    return ftrabit_handing_over && ftrabit_notice_pending() ? FTRABIT_SPARE_LEAVING
                                                            : st->orig_rank;
}

/* The notified ranks are out of the communicators the ranks go on with. */
static int ftrabit_notice_taken_out(int leaves)
{
    ftrabit_handing_over = 0;
    ftrabit_handed_over = 1;
    if (FTRABIT_STAYS != leaves) {
        ftrabit_leaving = leaves;
        return MPI_ERR_OTHER; /* unwinds the rebuild in this process: it leaves */
    }
    return MPI_SUCCESS;
}

int ftrabit_notice_after_round(int new_rank)
{
    if (!ftrabit_handing_over) {
        return MPI_SUCCESS;
    }
    return ftrabit_notice_taken_out(FTRABIT_SPARE_LEAVING == new_rank ? FTRABIT_LEAVES_AS_SPARE
                                                                      : FTRABIT_STAYS);
}

int ftrabit_notice_split_out(MPI_Comm *shrunk)
{
    MPI_Comm present = MPI_COMM_NULL;
    int rank, err, leaves = ftrabit_notice_pending();

    if (!ftrabit_handing_over) {
        return MPI_SUCCESS;
    }
    MPI_Comm_rank(*shrunk, &rank);
    err = MPI_Comm_split(*shrunk, leaves ? MPI_UNDEFINED : 0, rank, &present);
    err = ftrabit_step_agreed(*shrunk, err, "handover");
    if (MPI_SUCCESS != err) {
        if (MPI_COMM_NULL != present) {
            MPI_Comm_free(&present);
        }
        MPI_Comm_free(shrunk);
        return err;
    }
    if (leaves) {
        return ftrabit_notice_taken_out(FTRABIT_LEAVES_BY_FINALIZE);
    }
    MPI_Comm_free(shrunk);
    *shrunk = present;
    return ftrabit_notice_taken_out(FTRABIT_STAYS);
}

int ftrabit_notice_take_handed_over(void)
{
    int was = ftrabit_handed_over;

    ftrabit_handed_over = 0;
    return was;
}
