/*
 * ompi-resilience: libftrabit catch-up after a rebuild.
 *
 * Every rank of the rebuilt communicator contributes one fixed-size record (sequence
 * numbers, checkpoint version, which cached results it keeps); every rank computes the
 * same plan from the same records (ftrabit_recovery.c) and the transfers run point to
 * point. All sends are posted nonblocking first, so the order of the plan cannot deadlock.
 * Afterwards every rank is at the plan's target sequence number: results it missed sit in
 * its cache, and a replacement holds the checkpoint FTR_Load_checkpoint will hand out.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_rebuild.h"

#define FTRABIT_TAG_BOOTSTRAP 7799
#define FTRABIT_TAG_RESEED 7798
#define FTRABIT_TAG_XFER_BASE 7800

static void ftrabit_fill_record(ftrabit_state_t *st, ftrabit_rank_state_t *rec)
{
    uint64_t lo = 1, hi = 0;

    memset(rec, 0, sizeof(*rec));
    /* Into the cache first, so that a RESULTS transfer finds them there. */
    if (st->replacement || !ftrabit_held_offer(st, &rec->held_lo, &rec->held_hi)) {
        rec->held_lo = 1;
        rec->held_hi = 0;
    }
    rec->orig_rank = st->orig_rank;
    rec->first_rank = st->first_rank;
    rec->replacement = st->replacement;
    rec->served_until = st->served_until;
    rec->stalled_recoveries = st->stalled_recoveries;
    rec->version = st->version;
    rec->has_prev = 0; /* checkpoints commit on every rank or on none (FTR_Checkpoint) */
    rec->ckpt_seq = st->ckpt_seq;
    rec->completed_seq = st->completed_seq;
    if (!st->replacement && ftrabit_cache_range(&st->results, &lo, &hi)) {
        rec->cache_lo = lo;
        rec->cache_hi = hi;
    } else {
        rec->cache_lo = 1;
        rec->cache_hi = 0;
    }
}

/* A crash loop (ftrabit_recoveries_without_progress): at
 * coll_ftrabit_recoveries_without_progress the recovery fails everywhere (0 returned)
 * instead of replacing processes for ever. */
static int ftrabit_count_progress(ftrabit_state_t *st, const ftrabit_rank_state_t *all,
                                  int size, uint64_t target)
{
    uint64_t stalled = ftrabit_recoveries_without_progress(all, size, target);
    int limit = ftrabit_settings.recoveries_without_progress;
    if (limit > 0 && stalled >= (uint64_t) limit) {
        /* on every rank, as a failed plan (ftrabit_catch_up) */
        fprintf(stderr, "ftrabit: recovery is not possible: %d recoveries in a row found "
                        "no collective completed since the one before (a process fails "
                        "again each time it is replaced: see its messages above; "
                        "coll_ftrabit_recoveries_without_progress)\n", limit);
        ftrabit_durable_say_restart(st);
        return 0;
    }
    st->stalled_recoveries = stalled; /* and served_until becomes the target, below */
    return 1;
}

/* The records a failed plan was made from, for its diagnosis (coll_ftrabit_verbose). */
static void ftrabit_log_records(const ftrabit_rank_state_t *all, int size)
{
    for (int r = 0; r < size; r++) {
        const ftrabit_rank_state_t *x = &all[r];
        ftrabit_log(1, "record %d: orig rank %d%s, version %d (seq %llu), completed %llu, "
                       "keeps [%llu, %llu], holds [%llu, %llu]", r, (int) x->orig_rank,
                    x->replacement ? " (replacement)" : "", (int) x->version,
                    (unsigned long long) x->ckpt_seq, (unsigned long long) x->completed_seq,
                    (unsigned long long) x->cache_lo, (unsigned long long) x->cache_hi,
                    (unsigned long long) x->held_lo, (unsigned long long) x->held_hi);
    }
}

/* The bytes this rank sends for transfer `x`. */
static int ftrabit_xfer_payload(const ftrabit_state_t *st, const ftrabit_transfer_t *x,
                                int to_orig_rank, void **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    switch (x->kind) {
    case FTRABIT_XFER_RESULTS:
        *len = ftrabit_cache_pack(&st->results, x->lo, x->hi, NULL, 0);
        *buf = malloc(*len ? *len : 1);
        if (NULL == *buf) {
            return MPI_ERR_NO_MEM;
        }
        ftrabit_cache_pack(&st->results, x->lo, x->hi, *buf, *len);
        return MPI_SUCCESS;
    case FTRABIT_XFER_GLOBAL:
        if (x->version != st->version) {
            ftrabit_log(1, "catch-up: asked for the global checkpoint of version %d, holds %d",
                        (int) x->version, st->version);
            return MPI_ERR_INTERN;
        }
        *buf = st->global;
        *len = st->global_size;
        return MPI_SUCCESS;
    case FTRABIT_XFER_LOCAL:
        for (int i = 0; i < st->nreplicas; i++) {
            if (st->replicas[i].owner == to_orig_rank) {
                *buf = st->replicas[i].data;
                *len = st->replicas[i].size;
                return MPI_SUCCESS;
            }
        }
        ftrabit_log(1, "catch-up: asked for the local checkpoint of original rank %d, holds "
                       "no replica of it", to_orig_rank);
        return MPI_ERR_INTERN;
    }
    return MPI_ERR_INTERN;
}

/* A received range holds a result other than the one this rank has for the same seq: both,
 * for the diagnosis (coll_ftrabit_verbose). */
static void ftrabit_log_conflict(const ftrabit_cache_t *cache, const void *buf, size_t len)
{
    uint64_t seq, key, mine_key;
    size_t bytes, mine_len;
    const void *mine;

    if (ftrabit_cache_conflict(cache, buf, len, &seq, &key, &bytes)
        && FTRABIT_CACHE_OK == ftrabit_cache_get(cache, seq, &mine_key, &mine, &mine_len)) {
        ftrabit_log(1, "catch-up: seq %llu received with key %016llx, %zu bytes; held with key "
                       "%016llx, %zu bytes", (unsigned long long) seq, (unsigned long long) key,
                    bytes, (unsigned long long) mine_key, mine_len);
    }
}

/* Receive the bytes of transfer `x` (any size) and put them where they belong. */
static int ftrabit_xfer_receive(ftrabit_state_t *st, const ftrabit_transfer_t *x, int tag)
{
    void *buf;
    size_t count;
    int err = ftrabit_recv_blob(x->from, tag, st->comm, &buf, &count);

    if (MPI_SUCCESS != err) {
        return err;
    }
    switch (x->kind) {
    case FTRABIT_XFER_RESULTS: {
        int rc = ftrabit_cache_unpack(&st->results, buf, count);
        if (FTRABIT_CACHE_OK != rc) {
            ftrabit_log(1, "catch-up: results %llu-%llu from rank %d not taken (cache error %d)",
                        (unsigned long long) x->lo, (unsigned long long) x->hi, x->from, rc);
            if (FTRABIT_CACHE_EXISTS == rc) {
                ftrabit_log_conflict(&st->results, buf, count);
            }
            err = FTRABIT_CACHE_NOMEM == rc ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
        }
        free(buf);
        return err;
    }
    case FTRABIT_XFER_GLOBAL:
        free(st->global);
        st->global = buf;
        st->global_size = count;
        return MPI_SUCCESS;
    case FTRABIT_XFER_LOCAL:
        free(st->local);
        st->local = buf;
        st->local_size = count;
        return MPI_SUCCESS;
    }
    free(buf);
    return MPI_ERR_INTERN;
}

/* The bootstrap table goes to the replacements from the survivor that completed the most
 * collectives: one still inside a bootstrap call when the failure struck lacks that call's
 * entry, which another has. -1: no survivor. */
static int ftrabit_bootstrap_source(const ftrabit_rank_state_t *all, int size)
{
    int source = -1;
    for (int r = 0; r < size; r++) {
        if (!all[r].replacement && (source < 0 || all[r].completed_seq > all[source].completed_seq)) {
            source = r;
        }
    }
    return source;
}

/* The source's sends of the table to every replacement, posted with the transfers so that
 * it waits for nobody; *packed is freed by the caller (ftrabit_free_sent). */
static int ftrabit_post_bootstrap(ftrabit_state_t *st, const ftrabit_rank_state_t *all, int size,
                                  ftrabit_sends_t *sends, void **packed)
{
    size_t len = ftrabit_bootstrap_pack(&st->bootstrap, NULL, 0);
    int err = MPI_SUCCESS;

    *packed = malloc(len ? len : 1);
    if (NULL == *packed) {
        return MPI_ERR_NO_MEM;
    }
    ftrabit_bootstrap_pack(&st->bootstrap, *packed, len);
    for (int r = 0; r < size && MPI_SUCCESS == err; r++) {
        if (all[r].replacement) {
            err = ftrabit_sends_post(sends, *packed, len, r, FTRABIT_TAG_BOOTSTRAP, st->comm);
        }
    }
    return err;
}

static int ftrabit_receive_bootstrap(ftrabit_state_t *st, int source)
{
    void *buf;
    size_t count;
    int err = ftrabit_recv_blob(source, FTRABIT_TAG_BOOTSTRAP, st->comm, &buf, &count);

    if (MPI_SUCCESS == err
        && FTRABIT_BOOTSTRAP_OK != ftrabit_bootstrap_unpack(&st->bootstrap, buf, count)) {
        err = MPI_ERR_INTERN;
    }
    free(buf);
    return err;
}

/* A replacement holds nobody's replica yet, but the planner of the next recovery will
 * count on it holding those of its ring predecessors. Each rank sends its committed local
 * checkpoint to the replacements among its `local_replicas` successors (a replacement that
 * is itself a predecessor got its own local checkpoint back by now). Respawn only: rank
 * and original rank are the same there. */
static int ftrabit_reseed_replicas(ftrabit_state_t *st, const ftrabit_rank_state_t *all,
                                   int size, int rank)
{
    int k = ftrabit_settings.local_replicas < size - 1 ? ftrabit_settings.local_replicas
                                                        : size - 1;
    ftrabit_sends_t sends;
    int err = ftrabit_sends_open(&sends, k);

    if (MPI_SUCCESS != err) {
        return err;
    }
    for (int i = 1; i <= k && MPI_SUCCESS == err; i++) {
        int to = (rank + i) % size;
        if (all[to].replacement) {
            err = ftrabit_sends_post(&sends, st->local, st->local_size, to, FTRABIT_TAG_RESEED,
                                     st->comm);
        }
    }
    if (all[rank].replacement && MPI_SUCCESS == err) {
        ftrabit_replica_t *replicas = calloc((size_t) (k > 0 ? k : 1), sizeof(*replicas));
        int n = 0;
        err = replicas ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        for (int i = 1; i <= k && MPI_SUCCESS == err; i++) {
            int from = (rank - i + size) % size;
            err = ftrabit_recv_blob(from, FTRABIT_TAG_RESEED, st->comm, &replicas[n].data,
                                    &replicas[n].size);
            if (MPI_SUCCESS != err) {
                break;
            }
            replicas[n].owner = from;
            n++;
        }
        if (MPI_SUCCESS == err) {
            ftrabit_replicas_replace(st, replicas, n);
        } else {
            ftrabit_replicas_free(replicas, n);
        }
    }
    int send_err = ftrabit_sends_wait(&sends);
    return MPI_SUCCESS == err ? send_err : err;
}

/* The packed results of this rank's transfers, once they are sent. A send that did not
 * succeed may still be reading its buffer: on a revoked communicator MPI_Wait reports an
 * unfinished request as failed at once (MPI_ERR_REVOKED), while the PML goes on sending
 * what it started (btl/tcp's queued fragments come from the buffer; ftrabit_sends_wait
 * lets such requests go). Freed then, the memory would reach a peer as a result, with no
 * error, once reused: seen in the kill campaign (seed 5, scenario 121) as two copies of
 * one result that differed. Such buffers are left allocated: a failed catch-up is rare,
 * and its results are few. */
static void ftrabit_free_sent(void **owned, int n, int all_sent)
{
    size_t kept = 0;

    for (int i = 0; i < n; i++) {
        if (all_sent) {
            free(owned[i]);
        } else {
            kept += NULL != owned[i];
        }
    }
    if (kept > 0) {
        ftrabit_log(1, "catch-up: %zu transfer buffer(s) left allocated: a send that failed "
                       "may still read its buffer", kept);
    }
}

/* coll_ftrabit_test_kill_in_catch_up: a survivor dies while a replacement is joining. */
static void ftrabit_maybe_die_for_test(const ftrabit_state_t *st,
                                       const ftrabit_rank_state_t *all, int size)
{
    int has_replacement = 0;

    for (int r = 0; r < size; r++) {
        has_replacement |= all[r].replacement;
    }
    if (has_replacement && !st->replacement
        && st->orig_rank == ftrabit_settings.test_kill_in_catch_up) {
        fprintf(stderr, "ftrabit: original rank %d killing itself while a replacement catches "
                        "up (coll_ftrabit_test_kill_in_catch_up)\n", st->orig_rank);
        fflush(stderr);
        raise(SIGKILL);
    }
}

/* A nonblocking collective that a process failure or a revoke broke ends in Open MPI
 * 5.0.7 with MPI_ERR_OTHER ("an error 77 was found during schedule", "Error in
 * NBC_Start_round() (-1)": libnbc keeps no error class), not MPIX_ERR_PROC_FAILED, and the
 * failure may not be known here yet when it does. The barrier below only waits for the
 * other ranks' transfers: its failure means one of them failed, so the recovery starts
 * again (bounded by coll_ftrabit_recoveries_without_progress). */
static int ftrabit_nbc_error(int err)
{
    if (!ftrabit_is_process_failure(err)) {
        ftrabit_log(1, "catch-up: the wait for the other ranks' transfers failed (error %d): "
                       "taken for a process failure", err);
        err = MPI_ERR_PROC_FAILED;
    }
    return err;
}

/* The end of this rank's transfers: it waits for the other ranks' (an MPI_Ibarrier),
 * polled. That wait is not a lack of progress (coll_ftrabit_recovery_timeout): the ranks
 * still transferring count their own progress, part by part, and one that stalls ends
 * itself, which ends this wait with its failure. Once everybody is here, the catch-up's
 * agreement is bounded again. */
static int ftrabit_wait_for_transfers(MPI_Comm comm)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int done = 0, err = MPI_Ibarrier(comm, &req);

    ftrabit_recovery_doing("waiting for the other ranks' catch-up transfers");
    while (MPI_SUCCESS == err && !done) {
        struct timespec pause = {0, 1000000};
        err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        ftrabit_recovery_progress();
        if (MPI_SUCCESS == err && !done) {
            nanosleep(&pause, NULL);
        }
    }
    if (MPI_SUCCESS != err && MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req); /* MPI_Test leaves a request that ended in error allocated */
    }
    return MPI_SUCCESS == err ? err : ftrabit_nbc_error(err);
}

static const char *ftrabit_plan_error(int rc)
{
    switch (rc) {
    case FTRABIT_PLAN_LOST_RESULTS:
        return "results needed by a recovering rank were kept only by processes that died "
               "(raise coll_ftrabit_result_replicas)";
    case FTRABIT_PLAN_LOST_CHECKPOINT:
        return "the checkpoint of a replaced rank died with every rank holding a replica "
               "(raise coll_ftrabit_local_replicas)";
    case FTRABIT_PLAN_NOROOM:
        return "too many transfers";
    case FTRABIT_PLAN_NOMEM:
        return "out of memory while planning the transfers";
    default:
        return "inconsistent state records";
    }
}

/* The plan, in a transfer table that grows until it fits: with coll_ftrabit_result_replicas
 * set, a rank behind by n collectives gets its results in about n / replicas runs, each
 * from the next keeper, so the number of transfers grows with the collectives since the
 * checkpoint. Every rank plans from the same records, so every rank ends with the same
 * table or the same error. */
static int ftrabit_plan_with_room(const ftrabit_rank_state_t *all, int size, int orig_size,
                                  ftrabit_plan_t *plan)
{
    int rc = FTRABIT_PLAN_NOROOM;

    for (size_t room = 4 * (size_t) size + 64; FTRABIT_PLAN_NOROOM == rc; room *= 4) {
        free(plan->xfers);
        plan->xfers = room <= INT32_MAX / 4 ? malloc(sizeof(ftrabit_transfer_t) * room) : NULL;
        plan->max_xfers = NULL == plan->xfers ? 0 : (int32_t) room;
        if (NULL == plan->xfers) {
            return FTRABIT_PLAN_NOMEM;
        }
        rc = ftrabit_plan_recovery(all, size, orig_size, ftrabit_settings.result_replicas,
                                   ftrabit_settings.local_replicas, plan);
    }
    return rc;
}

/* The plan's transfers to and from this rank, and the bootstrap table for the
 * replacements. Every send is posted first, so the order of the plan cannot deadlock. */
static int ftrabit_transfers(ftrabit_state_t *st, const ftrabit_plan_t *plan,
                             const ftrabit_rank_state_t *all, const int *orig, int size, int rank)
{
    ftrabit_sends_t sends;
    /* results packed for this rank's transfers and the bootstrap table: freed once sent */
    void **owned = calloc((size_t) plan->nxfers + 1, sizeof(void *));
    int source = ftrabit_bootstrap_source(all, size);
    int err = NULL == owned ? MPI_ERR_NO_MEM : ftrabit_sends_open(&sends, plan->nxfers + size);

    if (MPI_SUCCESS != err) {
        free(owned);
        return err;
    }
    ftrabit_recovery_doing("exchanging checkpoints and cached results (catch-up)");
    for (int i = 0; i < plan->nxfers && MPI_SUCCESS == err; i++) {
        const ftrabit_transfer_t *x = &plan->xfers[i];
        void *buf;
        size_t len;
        if (x->from != rank) {
            continue;
        }
        err = ftrabit_xfer_payload(st, x, orig[x->to], &buf, &len);
        if (MPI_SUCCESS == err) {
            if (FTRABIT_XFER_RESULTS == x->kind) {
                owned[i] = buf;
            }
            err = ftrabit_sends_post(&sends, buf, len, x->to, FTRABIT_TAG_XFER_BASE + i,
                                     st->comm);
        }
    }
    if (rank == source && MPI_SUCCESS == err) {
        err = ftrabit_post_bootstrap(st, all, size, &sends, &owned[plan->nxfers]);
    }
    for (int i = 0; i < plan->nxfers && MPI_SUCCESS == err; i++) {
        if (plan->xfers[i].to == rank) {
            err = ftrabit_xfer_receive(st, &plan->xfers[i], FTRABIT_TAG_XFER_BASE + i);
        }
    }
    if (all[rank].replacement && source >= 0 && MPI_SUCCESS == err) {
        err = ftrabit_receive_bootstrap(st, source);
    }
    /* A rank that stopped receiving leaves peers' sends to it unmatched, and a large send
     * waits for its receiver: without a revoke, two such ranks wait on each other's sends
     * for ever. The revoke ends the wait for them, in error. */
    if (MPI_SUCCESS != err) {
        MPIX_Comm_revoke(st->comm);
    }
    int send_err = ftrabit_sends_wait(&sends);
    if (MPI_SUCCESS != send_err && MPI_SUCCESS == err) {
        MPIX_Comm_revoke(st->comm);
    }
    ftrabit_free_sent(owned, plan->nxfers + 1, MPI_SUCCESS == send_err);
    free(owned);
    return MPI_SUCCESS == err ? send_err : err;
}

int ftrabit_catch_up(ftrabit_state_t *st, int *plan_failed)
{
    int size, rank, err;
    *plan_failed = 0;
    MPI_Comm_size(st->comm, &size);
    MPI_Comm_rank(st->comm, &rank);

    ftrabit_rank_state_t mine, *all = malloc(sizeof(*all) * (size_t) size);
    ftrabit_plan_t plan = {
        .restart_version = malloc(sizeof(int32_t) * (size_t) size),
        .restart_seq = malloc(sizeof(uint64_t) * (size_t) size),
    };
    int *orig = malloc(sizeof(int) * (size_t) size), *first = malloc(sizeof(int) * (size_t) size);
    if (!all || !plan.restart_version || !plan.restart_seq || !orig || !first) {
        err = MPI_ERR_NO_MEM;
        goto out;
    }
    ftrabit_fill_record(st, &mine);
    ftrabit_recovery_doing("exchanging the ranks' states (catch-up)");
    err = MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, st->comm);
    if (MPI_SUCCESS != err) {
        goto out;
    }
    ftrabit_maybe_die_for_test(st, all, size);
    int rc = ftrabit_plan_with_room(all, size, st->orig_size, &plan);
    if (FTRABIT_PLAN_OK != rc) {
        /* Every rank computed the same plan and says so: a rank chosen to speak for all
         * may be one that died right after the records were exchanged, and nothing after
         * this tells the others (the job then ended with no word of why). */
        fprintf(stderr, "ftrabit: recovery is not possible: %s\n", ftrabit_plan_error(rc));
        ftrabit_durable_say_restart(st);
        if (0 == rank) {
            ftrabit_log_records(all, size);
        }
        *plan_failed = 1;
        err = MPI_ERR_OTHER;
        goto out;
    }
    if (!ftrabit_count_progress(st, all, size, plan.target_seq)) {
        *plan_failed = 1;
        err = MPI_ERR_OTHER;
        goto out;
    }
    for (int r = 0; r < size; r++) {
        orig[r] = all[r].orig_rank;
        first[r] = all[r].first_rank;
    }

    err = ftrabit_transfers(st, &plan, all, orig, size, rank);
    /* The reseed's senders may be replacements that received their own local state just
     * now: everybody's transfers end first. */
    if (MPI_SUCCESS == err) {
        err = ftrabit_wait_for_transfers(st->comm);
    }
    if (MPI_SUCCESS == err && FTRABIT_RECOVER_RESPAWN == ftrabit_settings.policy) {
        err = ftrabit_reseed_replicas(st, all, size, rank);
        if (MPI_SUCCESS == err) {
            err = ftrabit_wait_for_transfers(st->comm);
        }
    }
    if (MPI_SUCCESS != err) {
        goto out;
    }

    /* Everybody is at the target now. */
    if (st->replacement && plan.restart_version[rank] >= 0) {
        st->version = plan.restart_version[rank];
        st->restart_version = st->version;
        st->ckpt_seq = plan.restart_seq[rank];
        st->completed_seq = plan.restart_seq[rank];
        /* What it replays from here on is in its cache: it holds it as it goes. */
        ftrabit_held_restart(st, st->completed_seq + 1);
    }
    if (plan.target_seq > st->served_until) {
        st->served_until = plan.target_seq;
    }
    st->replacement = 0; /* it holds a state now: its checkpoint and the results to replay */
    free(st->first_rank_of); /* who is who now: a broadcast's root is cached by first rank */
    st->first_rank_of = first;
    st->first_rank_of_size = size;
    first = NULL;
    ftrabit_log(1, "caught up: target seq %llu, %d transfers", (unsigned long long) plan.target_seq,
                plan.nxfers);

out:
    free(all);
    free(orig);
    free(first);
    free(plan.restart_version);
    free(plan.restart_seq);
    free(plan.xfers);
    return err;
}
