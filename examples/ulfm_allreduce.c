/*
 * ompi-resilience example: a plain MPI + ULFM program that uses MPI_Allreduce and MPI_Bcast
 * itself (served by coll/ftrabit) and recovers from process failures with
 * MPIX_Comm_agree and FTR_Comm_recover.
 *
 * The pattern: after each step, every rank agrees on whether the step succeeded
 * everywhere. If not, FTR_Comm_recover rebuilds the communicator (a replacement is
 * started for each dead rank under the default respawn policy), and every rank rolls back
 * to the last checkpoint with FTR_Load_checkpoint. FTR_Checkpoint recovers by itself from
 * a failure inside it and then returns MPIX_ERR_PROC_FAILED: the same roll back follows. Plain MPI collectives are not replayed
 * from a cache (only FTR_* collectives are), so survivors roll back together with the
 * replacement. The run ends with the same bits as a run without failures.
 *
 * Usage: mpirun --with-ft ulfm --mca coll ftrabit,basic,libnbc -np 4 ./ulfm_allreduce
 *   --steps N (default 40)  --checkpoint-every N (default 4)  --length N (doubles, 4096)
 *   --kill R:S[:checkpoint]  original rank R kills itself (SIGKILL) before its allreduce
 *                of step S (or before the FTR_Checkpoint that ends step S). Repeatable. A
 *                replacement never kills itself.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

typedef struct {
    int rank, step, in_checkpoint;
} kill_t;

static kill_t kills[64];
static int nkills;

static int parse_args(int argc, char **argv, int *steps, int *every, int *length)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            return -1;
        }
        if (!strcmp(argv[i], "--steps")) {
            *steps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--checkpoint-every")) {
            *every = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--length")) {
            *length = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--kill") && nkills < 64
                   && 2 <= sscanf(argv[++i], "%d:%d", &kills[nkills].rank, &kills[nkills].step)) {
            kills[nkills].in_checkpoint = NULL != strstr(argv[i], ":checkpoint");
            nkills++;
        } else {
            return -1;
        }
    }
    return *steps > 0 && *every > 0 && *length > 0 ? 0 : -1;
}

static void maybe_die(int rank, int step, int in_checkpoint, int is_replacement)
{
    for (int i = 0; i < nkills && !is_replacement; i++) {
        if (kills[i].rank == rank && kills[i].step == step
            && kills[i].in_checkpoint == in_checkpoint) {
            fprintf(stderr, "ulfm_allreduce: rank %d killing itself at step %d\n", rank, step);
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

/* This rank's contribution at a step: depends on rank, step and the current model. */
static void contribution(double *out, const double *model, int length, int rank, int step)
{
    for (int i = 0; i < length; i++) {
        out[i] = 0.5 * model[i] / (1.0 + rank) + (double) ((rank + 1) * (i + step) % 97) / 7.0;
    }
}

static uint64_t fingerprint(const void *v, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((const unsigned char *) v)[i]) * 0x100000001b3ULL;
    }
    return h;
}

int main(int argc, char **argv)
{
    int steps = 40, every = 4, length = 4096, rank, size, version, recoveries = 0;
    MPI_Comm world;
    int origin;

    FTR_Init(&argc, &argv, &world);
    FTR_Origin(&origin);
    /* respawned, or a warm spare that took a dead rank (coll_ftrabit_spares) */
    int is_replacement = FTR_ORIGIN_ORIGINAL != origin;
    if (parse_args(argc, argv, &steps, &every, &length)) {
        fprintf(stderr, "ulfm_allreduce: bad arguments (see the comment at the top of "
                        "examples/ulfm_allreduce.c)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    /* Kill specs name ranks of the original job: the shrink policy renumbers survivors. */
    const int original_rank = rank;

    /* Global checkpoint: the step it belongs to, then the model. */
    double *state = calloc((size_t) length + 1, sizeof(double));
    double *model = state + 1;
    double *work = malloc(sizeof(double) * (size_t) length);
    int step_of_rank = 0; /* local checkpoint: nothing of use, but every rank has one */

    FTR_Load_checkpoint(&world, state, sizeof(double) * ((size_t) length + 1), &step_of_rank,
                        sizeof(step_of_rank), &version);
    if (is_replacement) {
        printf("rank %d: %s at step %d (checkpoint version %d)\n", rank,
               FTR_ORIGIN_SPARE == origin ? "spare takes over" : "replacement starts",
               (int) state[0], version);
        fflush(stdout);
    }
    double t0 = MPI_Wtime();
    while ((int) state[0] < steps) {
        int step = (int) state[0];
        maybe_die(original_rank, step, 0, is_replacement);
        contribution(work, model, length, rank, step);
        int rc = MPI_Allreduce(MPI_IN_PLACE, work, length, MPI_DOUBLE, MPI_SUM, world);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Bcast(work, 1, MPI_DOUBLE, step % size, world);
        }
        /* Did the step succeed on every rank? One agreement per step: the price of plain
         * MPI collectives (FTR_* collectives need none). */
        int ok = MPI_SUCCESS == rc;
        int agree_rc = MPIX_Comm_agree(world, &ok);
        int recovered = 0;
        double r0 = MPI_Wtime();
        if (MPI_SUCCESS != agree_rc || !ok) {
            if (MPI_SUCCESS != FTR_Comm_recover(&world)) {
                fprintf(stderr, "ulfm_allreduce: recovery failed\n");
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            recovered = 1;
        } else {
            memcpy(model, work, sizeof(double) * (size_t) length);
            state[0] = step + 1;
            step_of_rank = step + 1;
            if ((step + 1) % every == 0) {
                maybe_die(original_rank, step, 1, is_replacement);
                /* A failure inside: the checkpoint has rebuilt the communicator already and
                 * says so with an error; the replacement restarts from the previous version
                 * and replays plain collectives, so everybody goes back with it. */
                rc = FTR_Checkpoint(&world, state, sizeof(double) * ((size_t) length + 1),
                                    &step_of_rank, sizeof(step_of_rank));
                if (MPI_SUCCESS != rc) {
                    int cls;
                    MPI_Error_class(rc, &cls);
                    if (MPIX_ERR_PROC_FAILED != cls) {
                        fprintf(stderr, "ulfm_allreduce: FTR_Checkpoint failed\n");
                        MPI_Abort(MPI_COMM_WORLD, 3);
                    }
                    recovered = 1;
                }
            }
        }
        if (recovered) {
            /* Everybody goes back to the last checkpoint; before the first one that is the
             * initial state (FTR_Load_checkpoint leaves the buffers alone for version 0). */
            memset(state, 0, sizeof(double) * ((size_t) length + 1));
            step_of_rank = 0;
            FTR_Load_checkpoint(&world, state, sizeof(double) * ((size_t) length + 1),
                                &step_of_rank, sizeof(step_of_rank), &version);
            MPI_Comm_rank(world, &rank);
            MPI_Comm_size(world, &size);
            recoveries++;
            if (0 == rank) {
                printf("rank 0: recovered in %.3f s, back to step %d (checkpoint version %d)\n",
                       MPI_Wtime() - r0, (int) state[0], version);
                fflush(stdout);
            }
        }
    }
    if (0 == rank) {
        printf("final model fingerprint %016llx after %d steps on %d ranks, %d recoveries "
               "(%.2f s)\n",
               (unsigned long long) fingerprint(model, sizeof(double) * (size_t) length), steps,
               size, recoveries, MPI_Wtime() - t0);
    }
    fflush(stdout);
    free(state);
    free(work);
    MPI_Comm_free(&world);
    FTR_Finalize();
    return 0;
}
