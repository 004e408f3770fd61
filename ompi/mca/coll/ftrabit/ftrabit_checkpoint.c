/*
 * ompi-resilience: libftrabit in-memory checkpoints.
 *
 * FTR_Checkpoint is a collective with its own sequence number. Each rank sends its local
 * state to its `local_replicas` ring successors and receives its predecessors'; then one
 * MPIX_Comm_agree decides whether every rank got everything. Only then does every rank
 * commit the new version (global copy, own local copy, the replicas) and drop the cached
 * results it no longer needs. If anything failed, no rank commits: recovery runs and the
 * checkpoint is taken again. Because a version is committed everywhere or nowhere, a
 * replacement never has to replay across a checkpoint.
 *
 * Every copy of a version (the global and local copies, the replicas, what a catch-up sends
 * a replacement) carries its own size, so the state may grow or shrink between versions;
 * the three load entry points hand out the version through ftrabit_checkpoint_to_load.
 * With coll_ftrabit_checkpoint_dir the
 * agreement's flag also says what is on disk, and a committed version goes to the durable
 * writer (ftrabit_durable.h). The flag also carries preemption notices: once a version is
 * committed, notified ranks are handed over (ftrabit_notice.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_notice.h"

#define FTRABIT_TAG_RING 7750

void ftrabit_replicas_free(ftrabit_replica_t *replicas, int n)
{
    for (int i = 0; i < n; i++) {
        free(replicas[i].data);
    }
    free(replicas);
}

void ftrabit_replicas_replace(ftrabit_state_t *st, ftrabit_replica_t *replicas, int n)
{
    ftrabit_durable_wait(st); /* the writer may be reading them */
    ftrabit_replicas_free(st->replicas, st->nreplicas);
    st->replicas = replicas;
    st->nreplicas = n;
}

/* Ring exchange of local states: returns the predecessors' states in *received. */
static int ftrabit_ring_exchange(ftrabit_state_t *st, const void *local, size_t local_size,
                                 ftrabit_replica_t **received, int *nreceived)
{
    int size, rank;
    MPI_Comm_size(st->comm, &size);
    MPI_Comm_rank(st->comm, &rank);
    int k = ftrabit_settings.local_replicas < size - 1 ? ftrabit_settings.local_replicas : size - 1;
    ftrabit_sends_t sends;
    ftrabit_replica_t *got = calloc((size_t) (k > 0 ? k : 1), sizeof(*got));
    int ngot = 0, err = ftrabit_sends_open(&sends, k);

    if (MPI_SUCCESS != err || NULL == got) {
        if (MPI_SUCCESS == err) {
            (void) ftrabit_sends_wait(&sends);
        }
        free(got);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 1; i <= k && MPI_SUCCESS == err; i++) {
        err = ftrabit_sends_post(&sends, local, local_size, (rank + i) % size, FTRABIT_TAG_RING,
                                 st->comm);
    }
    for (int i = 1; i <= k && MPI_SUCCESS == err; i++) {
        int from = (rank - i + size) % size;
        err = ftrabit_recv_blob(from, FTRABIT_TAG_RING, st->comm, &got[ngot].data,
                                &got[ngot].size);
        if (MPI_SUCCESS != err) {
            break;
        }
        got[ngot].owner = from; /* ranks equal original ranks under respawn */
        ngot++;
    }
    int send_err = ftrabit_sends_wait(&sends);
    if (MPI_SUCCESS == err) {
        err = send_err;
    }
    if (MPI_SUCCESS != err) {
        ftrabit_replicas_free(got, ngot);
        return err;
    }
    *received = got;
    *nreceived = ngot;
    return MPI_SUCCESS;
}

static void *ftrabit_dup_bytes(const void *src, size_t len)
{
    void *p = malloc(len ? len : 1);
    if (p && len) {
        memcpy(p, src, len);
    }
    return p;
}

/* Make `version` at `seq` the committed checkpoint: the state takes the buffers. */
static void ftrabit_commit_owned(ftrabit_state_t *st, uint64_t seq, int version, void *global,
                                 size_t global_size, void *local, size_t local_size,
                                 ftrabit_replica_t *replicas, int nreplicas)
{
    st->global = global;
    st->global_size = global_size;
    st->local = local;
    st->local_size = local_size;
    ftrabit_replicas_replace(st, replicas, nreplicas);
    st->version = version;
    st->ckpt_seq = seq;
    st->completed_seq = seq;
    /* Nobody restarts before this version any more. */
    ftrabit_held_restart(st, seq + 1);
    ftrabit_cache_drop_through(&st->results, seq);
}

static void ftrabit_commit(ftrabit_state_t *st, uint64_t seq, const void *global,
                           size_t global_size, const void *local, size_t local_size,
                           ftrabit_replica_t *replicas, int nreplicas)
{
    void *global_copy, *local_copy;

    ftrabit_durable_wait(st); /* the writer may still be reading the version before */
    free(st->global); /* first: a state of gigabytes is not held three times */
    free(st->local);
    st->global = st->local = NULL;
    global_copy = ftrabit_dup_bytes(global, global_size);
    local_copy = ftrabit_dup_bytes(local, local_size);
    if (NULL == global_copy || NULL == local_copy) {
        /* every other rank commits this version: one that cannot hold it would serve
         * replacements a checkpoint it does not have */
        fprintf(stderr, "ftrabit: FTR_Checkpoint: no memory for a copy of the state (%zu and "
                        "%zu bytes): ending the job\n", global_size, local_size);
        MPI_Abort(st->comm, MPI_ERR_NO_MEM);
    }
    ftrabit_commit_owned(st, seq, st->version + 1, global_copy, global_size, local_copy,
                         local_size, replicas, nreplicas);
}

int ftrabit_checkpoint_adopt(ftrabit_state_t *st, int version, void *global, size_t global_size,
                             void *local, size_t local_size)
{
    ftrabit_replica_t *received = NULL;
    int nreceived = 0;
    int err = ftrabit_ring_exchange(st, local, local_size, &received, &nreceived);

    if (MPI_SUCCESS != err) {
        free(global);
        free(local);
        return err;
    }
    /* one sequence number, as FTR_Checkpoint takes: a replacement restarting from this
     * version later resumes its numbering right after it, as the others did */
    ftrabit_commit_owned(st, st->completed_seq + 1, version, global, global_size, local,
                         local_size, received, nreceived);
    return MPI_SUCCESS;
}

/* After a rebuild inside the checkpoint of `seq`: can the replacements reach this call by
 * replay? They restart from the last committed version and replay what the cache serves:
 * the FTR collectives since that version. With none since it, the application did no
 * collective in between or only plain MPI ones (the FTR_Comm_recover way), which the
 * survivors must run again with them: retrying here would leave the survivors waiting in
 * the ring exchange while the replacements wait in those collectives. Then the checkpoint
 * returns a process failure (the communicator already rebuilt, nothing committed), and the
 * application rolls back to FTR_Load_checkpoint as after any failed collective. Under
 * shrink nobody replays, and the checkpoint is simply retried. */
static int ftrabit_replacement_cannot_replay_to(const ftrabit_state_t *st, uint64_t seq)
{
    return FTRABIT_RECOVER_RESPAWN == ftrabit_settings.policy && seq == st->ckpt_seq + 1;
}

int FTR_Checkpoint(MPI_Comm *comm, const void *global, size_t global_size, const void *local,
                   size_t local_size)
{
    ftrabit_state_t *st = ftrabit_state_of(*comm);
    if (NULL == st) {
        return MPI_ERR_COMM;
    }
    st->bootstrap_over = 1;
    uint64_t seq = st->completed_seq + 1;
    for (;;) {
        ftrabit_replica_t *received = NULL;
        int nreceived = 0, bits;
        int err = ftrabit_durable_prepare(st, &bits);
        if (MPI_SUCCESS != err) {
            MPIX_Comm_revoke(st->comm); /* the others may wait for it in the ring exchange */
        } else {
            err = ftrabit_ring_exchange(st, local, local_size, &received, &nreceived);
        }
        int flag = (MPI_SUCCESS == err ? FTRABIT_AGREE_EXCHANGED : 0) | bits
                   | ftrabit_notice_vote();
        int agree_err = MPIX_Comm_agree(st->comm, &flag);
        if (MPI_SUCCESS == agree_err && (flag & FTRABIT_AGREE_EXCHANGED)) {
            ftrabit_commit(st, seq, global, global_size, local, local_size, received, nreceived);
            ftrabit_log(2, "checkpoint version %d committed at seq %llu", st->version,
                        (unsigned long long) seq);
            ftrabit_durable_committed(st, flag);
            return ftrabit_notice_after_commit(st, comm, flag); /* a preemption notice */
        }
        ftrabit_replicas_free(received, nreceived);
        if (MPI_SUCCESS != err && !ftrabit_is_process_failure(err)) {
            return err;
        }
        if (MPI_SUCCESS != agree_err && !ftrabit_is_process_failure(agree_err)) {
            return agree_err;
        }
        MPIX_Comm_revoke(st->comm);
        err = ftrabit_rebuild_after_agreement(st, comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (ftrabit_replacement_cannot_replay_to(st, seq)) {
            return MPIX_ERR_PROC_FAILED;
        }
    }
}

/* What a load hands out: the last committed version of this process's checkpoint, or
 * version 0 (a fresh start). Every load entry point goes through here, so that whatever
 * restores a checkpoint (from a survivor's copy in a replacement, as now, or from a durable
 * copy on a fresh start) is found in one place. A load ends the bootstrap phase and says
 * the version (0 for a fresh start). */
static int ftrabit_checkpoint_to_load(MPI_Comm *comm, int *version, ftrabit_state_t **out)
{
    ftrabit_state_t *st = NULL == comm ? NULL : ftrabit_state_of(*comm);

    *out = st;
    if (NULL == st) {
        return MPI_ERR_COMM;
    }
    if (NULL == version) {
        return MPI_ERR_ARG;
    }
    st->bootstrap_over = 1;
    *version = st->version;
    return MPI_SUCCESS;
}

int FTR_Load_checkpoint_size(MPI_Comm *comm, size_t *global_size, size_t *local_size,
                             int *version)
{
    ftrabit_state_t *st;
    int err = ftrabit_checkpoint_to_load(comm, version, &st);

    if (MPI_SUCCESS != err) {
        return err;
    }
    if (NULL != global_size) {
        *global_size = st->version > 0 ? st->global_size : 0;
    }
    if (NULL != local_size) {
        *local_size = st->version > 0 ? st->local_size : 0;
    }
    return MPI_SUCCESS;
}

int FTR_Load_checkpoint(MPI_Comm *comm, void *global, size_t global_size, void *local,
                        size_t local_size, int *version)
{
    ftrabit_state_t *st;
    int err = ftrabit_checkpoint_to_load(comm, version, &st);

    if (MPI_SUCCESS != err) {
        return err;
    }
    if (0 == st->version) {
        return MPI_SUCCESS; /* fresh start: buffers untouched */
    }
    if (st->global_size != global_size || st->local_size != local_size) {
        const char *dir = ftrabit_durable_restored_from(st);
        fprintf(stderr, "ftrabit: FTR_Load_checkpoint with buffers of %zu and %zu bytes, but "
                        "version %d was checkpointed with %zu and %zu bytes%s%s%s\n",
                global_size, local_size, st->version, st->global_size, st->local_size,
                NULL != dir ? " (read back from coll_ftrabit_checkpoint_dir "
                            : " (a state whose size changes: FTR_Load_checkpoint_size or "
                              "FTR_Load_checkpoint_alloc)",
                NULL != dir ? dir : "",
                NULL != dir ? ": a checkpoint of another layout, written with other options or "
                              "by another version of the program?)" : "");
        return MPI_ERR_TRUNCATE;
    }
    if (global_size > 0) {
        memcpy(global, st->global, global_size);
    }
    if (local_size > 0) {
        memcpy(local, st->local, local_size);
    }
    return MPI_SUCCESS;
}

int FTR_Load_checkpoint_alloc(MPI_Comm *comm, void **global, size_t *global_size, void **local,
                              size_t *local_size, int *version)
{
    ftrabit_state_t *st;
    int err = ftrabit_checkpoint_to_load(comm, version, &st);
    int want_local = NULL != local;

    if (MPI_SUCCESS != err) {
        return err;
    }
    if (NULL == global || NULL == global_size || want_local != (NULL != local_size)) {
        return MPI_ERR_ARG;
    }
    *global = NULL;
    *global_size = 0;
    if (want_local) {
        *local = NULL;
        *local_size = 0;
    }
    if (0 == st->version) {
        return MPI_SUCCESS; /* fresh start: nothing to hand out */
    }
    /* Never NULL once there is a version, even for 0 bytes: NULL means "fresh start". */
    void *g = ftrabit_dup_bytes(st->global, st->global_size);
    void *l = want_local ? ftrabit_dup_bytes(st->local, st->local_size) : NULL;
    if (NULL == g || (want_local && NULL == l)) {
        free(g);
        free(l);
        fprintf(stderr, "ftrabit: FTR_Load_checkpoint_alloc: no memory for version %d (%zu and "
                        "%zu bytes)\n", st->version, st->global_size,
                want_local ? st->local_size : (size_t) 0);
        return MPI_ERR_NO_MEM;
    }
    *global = g;
    *global_size = st->global_size;
    if (want_local) {
        *local = l;
        *local_size = st->local_size;
    }
    return MPI_SUCCESS;
}
