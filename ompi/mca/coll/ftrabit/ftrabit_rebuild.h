/*
 * ompi-resilience: libftrabit recovery, what the rebuild (ftrabit_rebuild.c) and the
 * respawn (ftrabit_respawn.c) share: the join record, the steps that end in an agreement,
 * the test hook that kills a process in the middle of a recovery.
 */
#ifndef FTRABIT_REBUILD_H
#define FTRABIT_REBUILD_H

#include <stdint.h>

#include <mpi.h>

#include "ftrabit_internal.h"

#define FTRABIT_TAG_JOIN 7701

/* What a replacement learns from the survivors before it joins. */
typedef struct {
    int32_t orig_rank;
    int32_t orig_size;
} ftrabit_join_t;

/* coll_ftrabit_test_kill_in_recovery: a failure in the middle of a recovery, on demand,
 * at the step coll_ftrabit_test_kill_in_recovery_step names. */
enum {
    FTRABIT_TEST_STEP_START = 0,  /* the failed set is agreed */
    FTRABIT_TEST_STEP_SPAWN = 1,  /* the dead ranks were exchanged; the spawn comes next */
    FTRABIT_TEST_STEP_MERGE = 2,  /* MPI_Comm_spawn returned; the merge comes next */
    FTRABIT_TEST_STEP_HAND_OUT = 3 /* caught up: dies inside the application's duplicate */
};
void ftrabit_maybe_die_in_recovery(const ftrabit_state_t *st, int step);

/* One step of a rebuild over `comm`, decided by one agreement (ftrabit_rebuild.c):
 * MPI_SUCCESS, MPI_ERR_PROC_FAILED (every survivor starts the rebuild again) or another
 * error (every survivor gives up). */
int ftrabit_step_agreed(MPI_Comm comm, int err, const char *step);

/* coll_ftrabit_recovery_timeout bounds how long a recovery makes no progress
 * (ftrabit_rebuild.c). Progress: a step done, a part of a message transferred. `what`, a
 * string constant, says what the recovery does from now on ("waiting for ..."), for the
 * message that ends a process if nothing moves. */
void ftrabit_recovery_progress(void);
void ftrabit_recovery_doing(const char *what);

/* Merge with the replacements over `inter` and take the original rank order (`key`);
 * `high` as MPI_Intercomm_merge's. */
int ftrabit_merge_with_replacements(MPI_Comm inter, int key, int high, MPI_Comm *rebuilt);

/* Survivors: start a replacement for each dead original rank and build the communicator
 * in which everybody holds its original rank again (ftrabit_respawn.c). */
int ftrabit_respawn(ftrabit_state_t *st, MPI_Comm shrunk, MPI_Comm *rebuilt);

#endif
