/*
 * ompi-resilience: libftrabit durable checkpoints, the MPI side (ftrabit_durable.c; the
 * restart: ftrabit_durable_restart.c).
 *
 * With coll_ftrabit_checkpoint_dir DIR, every version FTR_Checkpoint commits is also
 * written under DIR by a writer thread (ftrabit_store_writer.h), in the format of
 * ftrabit_store.h, and a job started again with the same DIR and number of ranks resumes
 * from the newest version complete on disk, agreed by all ranks, in FTR_Init (what
 * FTR_Load_checkpoint then returns).
 *
 * Which ranks share a directory is found out, not assumed: rank 0 leaves a marker file in
 * its DIR and every rank looks for it (a "probe"); those that see it share rank 0's
 * directory (a shared file system), the others are grouped by node. The probe runs at the
 * restart in FTR_Init and again at the first checkpoint after each recovery (processes
 * moved), inside the checkpoint's attempt; it also gives a replacement the run's epoch and
 * whether durable writes are still on.
 *
 * What the agreement of FTR_Checkpoint says about the disk: besides "the replicas were
 * exchanged", each rank contributes whether its write of the previous version completed,
 * and whether it has had no durable write error; the bitwise AND tells every rank that the
 * previous version is complete on disk (then older ones can go), or that some write failed
 * (then every rank stops writing, and the job goes on with in-memory checkpoints).
 */
#ifndef FTRABIT_DURABLE_H
#define FTRABIT_DURABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ftrabit_store.h"
#include "ftrabit_store_writer.h"

struct ftrabit_state;

/* ---- shared by ftrabit_durable.c and ftrabit_durable_restart.c ---------------------- */
typedef enum {
    FTRABIT_DURABLE_UNKNOWN = 0, /* not probed yet (a replacement, a spare) */
    FTRABIT_DURABLE_ON = 1,
    FTRABIT_DURABLE_OFF = 2      /* a write failed somewhere, or a directory is unusable */
} ftrabit_durable_state_t;

/* The durable side of one state (st->durable). */
typedef struct ftrabit_durable {
    char dir[4096];
    char program[FTRABIT_STORE_PROGRAM_MAX + 1];
    char tmp_tag[96];
    uint64_t host;           /* a hash of the host name */
    int state;               /* ftrabit_durable_state_t: the same on every rank once probed */
    int probed;              /* leader[] is known, for probed_size ranks */
    int probed_recoveries;   /* st->recoveries then: a recovery moves processes */
    int probed_size;
    int *leader;             /* [probed_size]: the lowest rank sharing each rank's directory */
    uint64_t epoch;          /* this run's, in every file it writes */
    ftrabit_store_history_t history; /* versions known complete on every rank */
    ftrabit_store_writer_t *writer;
    uint32_t written;        /* newest version whose files this rank wrote (or restored) */
    uint32_t restored;       /* the version the restart read back (0: none) */
    int failed;              /* a write of this rank failed */
    int said_restart;
} ftrabit_durable_t;

/* Collective: who shares which directory (leader[]), the run's epoch and history, and
 * whether durable writes are on, the same on every rank. */
int ftrabit_durable_probe(struct ftrabit_state *st);

/* ---- what the rest of libftrabit calls ------------------------------------------------ */

/* The durable bits of FTR_Checkpoint's agreement flag: FTRABIT_AGREE_* in ftrabit_internal.h. */

/* FTR_Init: durable checkpoints for this state when coll_ftrabit_checkpoint_dir is set.
 * Returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
int ftrabit_durable_attach(struct ftrabit_state *st);
/* Whether `st` keeps durable checkpoints (a directory is set). */
int ftrabit_durable_enabled(const struct ftrabit_state *st);

/* FTR_Init, in the processes started with the job (the application's ranks; not
 * replacements, not spares), before any collective of the application: restore from DIR
 * the newest version complete on every rank, agreed by all, and commit it as the state's
 * version (its replicas exchanged again), which FTR_Load_checkpoint then returns; nothing
 * when there is none. Collective over st->comm. Files of another program, or of another
 * number of ranks newer than what this job could resume, are an error (MPI_ERR_OTHER) on
 * every rank, said with their paths; a process failure during it ends it with an error
 * (the job is restarted again). */
int ftrabit_durable_restore(struct ftrabit_state *st);
/* The directory the state's current version was read back from, or NULL. */
const char *ftrabit_durable_restored_from(const struct ftrabit_state *st);

/* FTR_Checkpoint, at the start of each attempt: wait for the previous version's write if it
 * still runs, and probe the directories when needed (collective). *bits: this rank's
 * FTRABIT_AGREE_PREV_WRITTEN and FTRABIT_AGREE_DURABLE_OK. An error is a failed probe: the
 * caller revokes and contributes a failure to the agreement. */
int ftrabit_durable_prepare(struct ftrabit_state *st, int *bits);
/* FTR_Checkpoint, right after a version was committed with the agreement flag `agreed`:
 * learn what it says about the disk and hand the new version to the writer. */
void ftrabit_durable_committed(struct ftrabit_state *st, int agreed);

/* Before st's committed global, local or replica buffers are freed or replaced: the
 * writer may be reading them. */
void ftrabit_durable_wait(struct ftrabit_state *st);

/* After "recovery is not possible": let the running write complete, then say where the
 * durable checkpoints are and how to restart the job from them. */
void ftrabit_durable_say_restart(struct ftrabit_state *st);

/* FTR_Finalize: the last write completes, the writer ends. */
void ftrabit_durable_free(struct ftrabit_state *st);

#endif /* FTRABIT_DURABLE_H */
