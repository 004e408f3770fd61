/*
 * ompi-resilience: coll/ftrabit recovery planning (pure logic, no MPI).
 *
 * After a failure the survivors and the replacements (or only the survivors, under the
 * shrink policy) exchange one fixed-size state record each (an allgather over the rebuilt
 * communicator). From the same records every rank computes the same plan, so no further
 * agreement is needed: the sequence number everybody catches up to, the checkpoint version
 * each replacement restarts from, and the list of transfers (who sends what to whom).
 *
 * Model (see ftrabit_engine.c for the protocol that maintains it):
 * - Ranks are identified by their original rank in the job (respawn gives a replacement
 *   the rank it replaces), on a ring of `orig_size`.
 * - A checkpoint commits locally once a rank's ring exchange finished. Every rank keeps two
 *   generations: its committed version V and (if has_prev) V-1, with their global state,
 *   the local-checkpoint replicas of its `replicas` ring predecessors at those versions,
 *   and the results of every collective since the checkpoint V-1 (or since the start).
 * - The result of collective `seq` is kept by ftrabit_cache_is_keeper(seq, orig_rank,
 *   orig_size, result_replicas) ranks, within [cache_lo, cache_hi] of their record.
 *   Besides, every rank holds every result since the last allreduce it completed, keeper
 *   or not ([held_lo, held_hi] of its record): the last result, as Rabit holds it, and the
 *   broadcasts after it. Completing an allreduce means every rank entered it, so every
 *   rank completed all before it; a broadcast synchronises nobody, and ranks can complete
 *   several while another is still inside the allreduce before them. So a result whose
 *   keepers all died, or had not completed it, is still held by the survivors that did.
 * - Seqs start at 1. A checkpoint call has a seq like a collective, and its keepers cache
 *   an entry for it (a marker), so a range of results may span checkpoint calls.
 */
#ifndef FTRABIT_RECOVERY_H
#define FTRABIT_RECOVERY_H

#include <stdint.h>

/* One rank's record, indexed by its rank in the rebuilt communicator. Treated as untrusted
 * input: inconsistent records give FTRABIT_PLAN_INVALID, never a crash. A replacement's
 * record is used for its orig_rank only. A survivor's must satisfy: version >= 0; has_prev
 * only if version >= 1; ckpt_seq <= completed_seq < UINT64_MAX; ckpt_seq == 0 exactly when
 * version == 0; with has_prev, prev_ckpt_seq < ckpt_seq and prev_ckpt_seq == 0 exactly when
 * version == 1. Across records each version has one ckpt_seq, and newer versions have
 * larger ones. cache_hi may exceed completed_seq (a rank replaying after a recovery holds
 * the results it was served); seqs past the target are never needed. */
typedef struct ftrabit_rank_state {
    int32_t orig_rank;        /* rank in the original job (a replacement: the one it replaces) */
    int32_t replacement;      /* 1: a new process with no state, restarting from a checkpoint */
    int32_t version;          /* committed checkpoint version V (0: none yet) */
    int32_t has_prev;         /* holds version V-1 too */
    uint64_t ckpt_seq;        /* sequence number of the checkpoint call of version V */
    uint64_t prev_ckpt_seq;   /* ... of version V-1 (when has_prev) */
    uint64_t completed_seq;   /* last collective this rank completed */
    uint64_t cache_lo, cache_hi; /* results held, as keeper, for seqs in [lo, hi] (lo > hi: none) */
    uint64_t held_lo, held_hi; /* every result in [lo, hi] is held, kept or not: those since
                                  the last allreduce this rank completed (lo 0, or lo > hi:
                                  none; else hi <= completed_seq) */
    uint64_t served_until;    /* the furthest catch-up target of the recoveries it took
                                 part in (0: none) */
    uint64_t stalled_recoveries; /* recoveries in a row, up to the last, whose target got
                                    no further than served_until then */
    int32_t first_rank;       /* rank in the communicator FTR_Init returned (orig_rank is
                                 renumbered by shrink, this is not) */
} ftrabit_rank_state_t;

typedef enum {
    FTRABIT_XFER_RESULTS = 1, /* cached results for seqs lo..hi that the sender keeps */
    FTRABIT_XFER_GLOBAL = 2,  /* the global checkpoint of `version` */
    FTRABIT_XFER_LOCAL = 3    /* the receiver's own local checkpoint of `version` (a replica) */
} ftrabit_xfer_kind_t;

typedef struct ftrabit_transfer {
    int32_t kind;             /* ftrabit_xfer_kind_t */
    int32_t from, to;         /* ranks in the rebuilt communicator */
    int32_t version;          /* GLOBAL, LOCAL */
    uint64_t lo, hi;          /* RESULTS: inclusive seq range (only seqs `from` holds) */
} ftrabit_transfer_t;

typedef struct ftrabit_plan {
    uint64_t target_seq;      /* every rank has completed this seq after the transfers */
    int32_t *restart_version; /* [size]: version a replacement restarts from (0: from the start);
                                 -1 for ranks that keep their state */
    uint64_t *restart_seq;    /* [size]: seq a replacement restarts from (ckpt seq of that
                                 version); for a rank that keeps its state, its completed_seq */
    ftrabit_transfer_t *xfers;/* caller-provided room for max_xfers entries */
    int32_t nxfers, max_xfers;
} ftrabit_plan_t;

enum {
    FTRABIT_PLAN_OK = 0,
    FTRABIT_PLAN_LOST_RESULTS = -1,    /* a needed result is kept by no one alive */
    FTRABIT_PLAN_LOST_CHECKPOINT = -2, /* no version whose global, local replica and results
                                          all survived, for some replacement */
    FTRABIT_PLAN_INVALID = -3,         /* inconsistent records (e.g. duplicate orig_rank) */
    FTRABIT_PLAN_NOROOM = -4,          /* more transfers than max_xfers */
    FTRABIT_PLAN_NOMEM = -5            /* no memory for the planner's scratch space */
};

/*
 * Compute the plan. Rules:
 * - target_seq = the highest completed_seq among non-replacements (ranks that are behind
 *   are served the results they miss; nobody re-runs a collective someone completed).
 * - A survivor behind the target gets RESULTS (completed_seq, target] from keepers.
 * - A replacement restarts from the highest version V for which: some non-replacement
 *   holds the global of V, some living ring successor holds its local replica of V (holders
 *   of orig rank r are orig ranks r+1..r+local_replicas on the ring of orig_size, holding
 *   their version and, if has_prev, version-1), and every result in (ckpt_seq(V), target]
 *   is held by someone alive. V = 0 (no checkpoint) needs no global/local, only results
 *   (0, target]. It gets GLOBAL, LOCAL (when V > 0) and RESULTS transfers.
 * - Sources are chosen deterministically, spreading the load: for each seq, the first
 *   eligible holder (a keeper, or a rank whose held range has it) in ring order after
 *   the receiver; consecutive seqs from the same source are merged into one RESULTS
 *   transfer. GLOBAL: the first survivor after the
 *   receiver holding that version; LOCAL: the first of its replica holders holding it.
 *   Rings and "first after" are in original ranks, never in the order of the records.
 * - Transfers are listed by receiver, receivers in original rank order; per receiver
 *   GLOBAL, LOCAL, then RESULTS by increasing seq. A sender only ever sends what its own
 *   record says it holds: nothing is relayed, so all transfers can run at once.
 * - Errors: INVALID (arguments or records) first; then, going through the ranks in
 *   original rank order, the first that cannot reach the target: a survivor missing a
 *   result gives LOST_RESULTS; a replacement with no version to restart from gives
 *   LOST_RESULTS if the state (global and local replica) of some version survived, or if
 *   there is no checkpoint at all, and LOST_CHECKPOINT otherwise; NOROOM last (xfers then
 *   holds the first max_xfers transfers, target_seq and the restart arrays are complete).
 *   After any other error the contents of *plan are unspecified.
 */
int ftrabit_plan_recovery(const ftrabit_rank_state_t *states, int size, int orig_size,
                          int result_replicas, int local_replicas, ftrabit_plan_t *plan);

/* A crash loop: each recovery ends with a process that fails again before any collective
 * completes (a replacement with a deterministic error in its replay, a host that kills
 * what runs on it). From the records of a recovery whose plan reaches `target`: how many
 * recoveries in a row, this one included, had a target no later than the furthest one
 * before (the records' served_until; 0: this one made progress). The same on every rank,
 * since every rank has the same records; the caller gives up at
 * coll_ftrabit_recoveries_without_progress. */
uint64_t ftrabit_recoveries_without_progress(const ftrabit_rank_state_t *states, int size,
                                             uint64_t target);

/* Orig ranks holding orig rank r's local checkpoint: (r + 1 + i) mod orig_size for
 * i < min(k, orig_size - 1). Returns how many were written to out. */
int ftrabit_local_replica_holders(int r, int orig_size, int k, int *out, int max_out);

#endif
