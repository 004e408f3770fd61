/*
 * Unit tests of coll/ftrabit's recovery planning: hand-made scenarios for each rule and
 * error, then a randomized property test. That one simulates jobs (collectives,
 * checkpoints, failures at random points, respawn or shrink) tracking what every process
 * really holds, plans each recovery from the records, carries the transfers out, and checks
 * that every rank reaches the target with everything it needs from senders that really
 * had it, and that LOST_* is returned exactly when brute force finds no way to recover.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_cache.h"
#include "ompi/mca/coll/ftrabit/ftrabit_recovery.h"
#include "unit.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static int chance(int one_in)
{
    return 0 == rng() % (uint64_t) one_in;
}

/* ---- helpers for hand-made scenarios ------------------------------------------------ */

enum { MAX_RANKS = 64, MAX_XFERS = 4096 };

typedef struct test_plan {
    int32_t restart_version[MAX_RANKS];
    uint64_t restart_seq[MAX_RANKS];
    ftrabit_transfer_t xfers[MAX_XFERS];
    ftrabit_plan_t plan;
} test_plan_t;

static test_plan_t *new_plan(int max_xfers)
{
    test_plan_t *tp = malloc(sizeof(*tp));
    memset(tp, 0xa5, sizeof(*tp)); /* garbage: the planner must not read its outputs */
    tp->plan.restart_version = tp->restart_version;
    tp->plan.restart_seq = tp->restart_seq;
    tp->plan.xfers = tp->xfers;
    tp->plan.max_xfers = max_xfers;
    return tp;
}

static int plan(const ftrabit_rank_state_t *st, int size, int orig_size, int result_replicas,
                int local_replicas, test_plan_t *tp)
{
    return ftrabit_plan_recovery(st, size, orig_size, result_replicas, local_replicas, &tp->plan);
}

/* A survivor whose results are cached since `lo` (through its completed seq). */
static ftrabit_rank_state_t alive(int orig, int version, int has_prev, uint64_t ckpt_seq,
                                  uint64_t prev_ckpt_seq, uint64_t completed, uint64_t lo)
{
    return (ftrabit_rank_state_t){.orig_rank = orig, .replacement = 0, .version = version,
                                  .has_prev = has_prev, .ckpt_seq = ckpt_seq,
                                  .prev_ckpt_seq = prev_ckpt_seq, .completed_seq = completed,
                                  .cache_lo = lo, .cache_hi = completed};
}

static ftrabit_rank_state_t fresh(int orig)
{
    return (ftrabit_rank_state_t){.orig_rank = orig, .replacement = 1};
}

static int is_xfer(const ftrabit_transfer_t *x, int kind, int from, int to, int version,
                   uint64_t lo, uint64_t hi)
{
    if (x->kind != kind || x->from != from || x->to != to) {
        return 0;
    }
    if (FTRABIT_XFER_RESULTS == kind) {
        return x->lo == lo && x->hi == hi;
    }
    return x->version == version;
}

#define XFER(tp, i, kind, from, to, version, lo, hi) \
    ((i) < (tp)->plan.nxfers && is_xfer(&(tp)->xfers[i], kind, from, to, version, lo, hi))

/* ---- hand-made scenarios ------------------------------------------------------------ */

static void replica_holders(void)
{
    int out[8];
    CHECK(2 == ftrabit_local_replica_holders(0, 4, 2, out, 8) && 1 == out[0] && 2 == out[1]);
    CHECK(2 == ftrabit_local_replica_holders(3, 4, 2, out, 8) && 0 == out[0] && 1 == out[1]);
    CHECK(3 == ftrabit_local_replica_holders(2, 4, 9, out, 8)); /* never itself */
    CHECK(3 == out[0] && 0 == out[1] && 1 == out[2]);
    CHECK(1 == ftrabit_local_replica_holders(2, 4, 9, out, 1) && 3 == out[0]);
    CHECK(0 == ftrabit_local_replica_holders(0, 1, 2, out, 8));
    CHECK(0 == ftrabit_local_replica_holders(0, 4, 0, out, 8));
    CHECK(0 == ftrabit_local_replica_holders(0, 4, -1, out, 8));
    CHECK(0 == ftrabit_local_replica_holders(4, 4, 2, out, 8));
    CHECK(0 == ftrabit_local_replica_holders(-1, 4, 2, out, 8));
    /* r + 1 wraps to 0 without overflowing an int */
    CHECK(1 == ftrabit_local_replica_holders(0x7ffffffe, 0x7fffffff, 1, out, 8) && 0 == out[0]);
}

static void no_failure_needs_nothing(void)
{
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 2, 1, 8, 4, 10, 5);
    }
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp));
    CHECK(10 == tp->plan.target_seq && 0 == tp->plan.nxfers);
    for (int i = 0; i < 4; i++) {
        CHECK(-1 == tp->restart_version[i] && 10 == tp->restart_seq[i]);
    }
    /* No room needed when nothing moves; a single rank is fine too. */
    tp->plan.max_xfers = 0;
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 1, 2, tp) && 0 == tp->plan.nxfers);
    CHECK(FTRABIT_PLAN_OK == plan(st, 1, 1, 0, 2, tp) && 10 == tp->plan.target_seq);
    /* A fresh job: nothing completed yet. */
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 0, 0, 0, 0, 0, 1);
    }
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp) && 0 == tp->plan.target_seq);
    free(tp);
}

/* The last collective's outcome was not uniform: rank 2 has not completed seq 10. */
static void survivor_behind_by_one(void)
{
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 1, 0, 3, 0, 10, 1);
    }
    st[2].completed_seq = st[2].cache_hi = 9;
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp));
    CHECK(10 == tp->plan.target_seq && 1 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 3, 2, 0, 10, 10)); /* first keeper after 2 */
    CHECK(-1 == tp->restart_version[2] && 9 == tp->restart_seq[2]);

    /* One keeper per result: seq 10's keeper is rank 2 itself, which does not have it. */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 2, tp));
    /* Two keepers: ranks 2 and 3; 3 has it. */
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 2, tp));
    CHECK(1 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 3, 2, 0, 10, 10));

    /* Rank 1 behind by three. One keeper per seq: seq 9's is rank 1 itself: lost. */
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 1, 0, 3, 0, 11, 1);
    }
    st[1].completed_seq = st[1].cache_hi = 8;
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 2, tp));
    /* R=2: 9 -> {1, 2}, 10 -> {2, 3}, 11 -> {3, 0}: from rank 1, 2 comes first for 9 and 10,
     * then 3 for 11. */
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 2, tp));
    CHECK(2 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 9, 10));
    CHECK(XFER(tp, 1, FTRABIT_XFER_RESULTS, 3, 1, 0, 11, 11));
    free(tp);
}

/* A replacement before any checkpoint replays everything: results (0, target]. */
static void replacement_without_checkpoint(void)
{
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 0, 0, 0, 0, 7, 1);
    }
    st[1] = fresh(1);
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp));
    CHECK(7 == tp->plan.target_seq);
    CHECK(0 == tp->restart_version[1] && 0 == tp->restart_seq[1]);
    CHECK(1 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 1, 7));
    /* One keeper each: seq s kept by s mod 4; seqs 1 and 5 were kept by the dead rank. */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 2, tp));
    /* Two keepers each: every seq survives; sources rotate and runs merge. */
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 2, tp));
    /* 1:{1,2} 2:{2,3} 3:{3,0} 4:{0,1} 5:{1,2} 6:{2,3} 7:{3,0}; first after 1: 2, 3, 0 */
    CHECK(5 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 1, 2));
    CHECK(XFER(tp, 1, FTRABIT_XFER_RESULTS, 3, 1, 0, 3, 3));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 0, 1, 0, 4, 4));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 2, 1, 0, 5, 6));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 3, 1, 0, 7, 7));
    /* Room for four only: NOROOM, with the first four in place. */
    tp->plan.max_xfers = 4;
    CHECK(FTRABIT_PLAN_NOROOM == plan(st, 4, 4, 2, 2, tp));
    CHECK(4 == tp->plan.nxfers && XFER(tp, 3, FTRABIT_XFER_RESULTS, 2, 1, 0, 5, 6));
    CHECK(7 == tp->plan.target_seq && 0 == tp->restart_version[1]);
    tp->plan.max_xfers = 5;
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 2, tp) && 5 == tp->plan.nxfers);
    /* A lost result is reported as such even when there is no room either. */
    tp->plan.max_xfers = 0;
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 2, tp));
    CHECK(FTRABIT_PLAN_NOROOM == plan(st, 4, 4, 2, 2, tp) && 0 == tp->plan.nxfers);
    free(tp);
}

/* The normal case: survivors at V (with V-1), a replacement restarts from V. */
static void replacement_from_the_latest_checkpoint(void)
{
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 3, 1, 20, 12, 25, 13);
    }
    st[1] = fresh(1);
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp));
    CHECK(25 == tp->plan.target_seq);
    CHECK(3 == tp->restart_version[1] && 20 == tp->restart_seq[1]);
    CHECK(-1 == tp->restart_version[0] && 25 == tp->restart_seq[0]);
    CHECK(3 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 2, 1, 3, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 2, 1, 3, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 2, 1, 0, 21, 25));
    /* Right after the checkpoint call: nothing to replay. */
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 3, 1, 20, 12, 20, 13);
    }
    st[3] = fresh(3);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 2, tp));
    CHECK(2 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 0, 3, 3, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 0, 3, 3, 0, 0));
    /* Without local replicas only the start is left, and its results are gone. */
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st, 4, 4, 0, 0, tp));
    free(tp);
}

/*
 * Rank 1 died during checkpoint 3 (seq 30) before sending its local checkpoint; with 2
 * replicas, its successors 2 and 3 could not commit (version 2, completed 29), ranks 4 and
 * 0 did (version 3, has 2 as prev, completed 30). Rank 1 must restart from version 2,
 * replaying (20, 30]: 21..29 from rank 2, then the checkpoint call's own seq 30 from 4,
 * the first rank after 1 that has it. Rank 2 and 3 catch up on seq 30.
 */
static void failure_during_a_checkpoint(void)
{
    ftrabit_rank_state_t st[5];
    st[0] = alive(0, 3, 1, 30, 20, 30, 21);
    st[1] = fresh(1);
    st[2] = alive(2, 2, 1, 20, 10, 29, 11);
    st[3] = alive(3, 2, 1, 20, 10, 29, 11);
    st[4] = alive(4, 3, 1, 30, 20, 30, 21);
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 5, 5, 0, 2, tp));
    CHECK(30 == tp->plan.target_seq);
    CHECK(2 == tp->restart_version[1] && 20 == tp->restart_seq[1]);
    CHECK(6 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 2, 1, 2, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 2, 1, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 2, 1, 0, 21, 29));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 4, 1, 0, 30, 30));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 4, 2, 0, 30, 30));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 4, 3, 0, 30, 30));

    /* Had rank 1 sent to rank 3 before dying, 3 would have committed: version 3 from it. */
    st[3] = alive(3, 3, 1, 30, 20, 30, 21);
    CHECK(FTRABIT_PLAN_OK == plan(st, 5, 5, 0, 2, tp));
    CHECK(3 == tp->restart_version[1] && 30 == tp->restart_seq[1]);
    CHECK(3 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 3, 1, 3, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 3, 1, 3, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 3, 2, 0, 30, 30));

    /* Version 1 = prev of the uncommitted ranks: only used when 2 is not available. With
     * rank 2 dead too, rank 1's holders are 2 (dead) and 3 (version 2): still version 2. */
    st[2] = fresh(2);
    st[3] = alive(3, 2, 1, 20, 10, 29, 11);
    CHECK(FTRABIT_PLAN_OK == plan(st, 5, 5, 0, 2, tp));
    CHECK(2 == tp->restart_version[1] && 3 == tp->restart_version[2]);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 3, 1, 2, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 3, 1, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 3, 1, 0, 21, 29));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 4, 1, 0, 30, 30));
    CHECK(XFER(tp, 4, FTRABIT_XFER_GLOBAL, 4, 2, 3, 0, 0));
    CHECK(XFER(tp, 5, FTRABIT_XFER_LOCAL, 4, 2, 3, 0, 0));
    CHECK(XFER(tp, 6, FTRABIT_XFER_RESULTS, 4, 3, 0, 30, 30));
    CHECK(7 == tp->plan.nxfers);
    free(tp);
}

/* The restart version is what the replica holders have, not what most survivors have. */
static void restart_from_what_the_holder_has(void)
{
    /* Rank 3, rank 2's only replica holder, was itself a replacement restarted from version
     * 3: no prev, results only since then. Version 3 it is, results from 3. */
    ftrabit_rank_state_t st[4];
    st[0] = alive(0, 3, 1, 30, 20, 32, 21);
    st[1] = alive(1, 3, 1, 30, 20, 32, 21);
    st[2] = fresh(2);
    st[3] = alive(3, 3, 0, 30, 0, 32, 31);
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 1, tp));
    CHECK(3 == tp->restart_version[2] && 30 == tp->restart_seq[2]);
    CHECK(3 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 3, 2, 3, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 3, 2, 3, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 3, 2, 0, 31, 32));

    /* Rank 3 did not commit 3 (version 2, prev 1); everyone else did and holds 2 as prev.
     * Version 2 it is; results (20, 32]: 21..29 from rank 3 (first after 2), 30..32 from
     * rank 0; rank 3 catches up on 30..32 from rank 0. */
    st[3] = alive(3, 2, 1, 20, 10, 29, 11);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 1, tp));
    CHECK(2 == tp->restart_version[2] && 20 == tp->restart_seq[2]);
    CHECK(5 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 3, 2, 2, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 3, 2, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 3, 2, 0, 21, 29));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 0, 2, 0, 30, 32));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 0, 3, 0, 30, 32));

    /* Two replacements restarting from different versions: 0 (holder 1 at version 2) and
     * 2 (holder 3 at version 3). */
    st[0] = fresh(0);
    st[1] = alive(1, 2, 1, 20, 10, 29, 11);
    st[2] = fresh(2);
    st[3] = alive(3, 3, 1, 30, 20, 32, 21);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 1, tp));
    CHECK(2 == tp->restart_version[0] && 20 == tp->restart_seq[0]);
    CHECK(3 == tp->restart_version[2] && 30 == tp->restart_seq[2]);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 1, 0, 2, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 1, 0, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 1, 0, 0, 21, 29));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 3, 0, 0, 30, 32));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 3, 1, 0, 30, 32));
    CHECK(XFER(tp, 5, FTRABIT_XFER_GLOBAL, 3, 2, 3, 0, 0));
    CHECK(XFER(tp, 6, FTRABIT_XFER_LOCAL, 3, 2, 3, 0, 0));
    CHECK(XFER(tp, 7, FTRABIT_XFER_RESULTS, 3, 2, 0, 31, 32));
    CHECK(8 == tp->plan.nxfers);
    free(tp);
}

/* Several replacements at once, including neighbours on the ring. */
static void adjacent_replacements(void)
{
    ftrabit_rank_state_t st[6];
    for (int i = 0; i < 6; i++) {
        st[i] = alive(i, 2, 1, 10, 5, 12, 6);
    }
    st[2] = fresh(2);
    st[3] = fresh(3);
    test_plan_t *tp = new_plan(MAX_XFERS);
    /* Two replicas: rank 4 still holds rank 2's (and rank 3's). */
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 0, 2, tp));
    CHECK(2 == tp->restart_version[2] && 2 == tp->restart_version[3]);
    CHECK(6 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_GLOBAL, 4, 2, 2, 0, 0));
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 4, 2, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 4, 2, 0, 11, 12));
    CHECK(XFER(tp, 3, FTRABIT_XFER_GLOBAL, 4, 3, 2, 0, 0));
    CHECK(XFER(tp, 4, FTRABIT_XFER_LOCAL, 4, 3, 2, 0, 0));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 4, 3, 0, 11, 12));
    /* One replica: rank 2's only holder, 3, is dead; results since the start are gone. */
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st, 6, 6, 0, 1, tp));
    /* Three neighbours dead with two replicas: rank 2's holders 3 and 4 are both gone. */
    st[4] = fresh(4);
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st, 6, 6, 0, 2, tp));
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 0, 3, tp));
    CHECK(2 == tp->restart_version[2] && 2 == tp->restart_version[3]);
    CHECK(2 == tp->restart_version[4]);
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 5, 2, 2, 0, 0));
    /* Everyone but one dead. */
    for (int i = 1; i < 6; i++) {
        st[i] = fresh(i);
    }
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st, 6, 6, 0, 4, tp)); /* 1's holders 2..5 */
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 0, 5, tp));
    for (int i = 1; i < 6; i++) {
        CHECK(2 == tp->restart_version[i]);
    }

    /* Version 1, whose results since the start are still cached: with the replica of 2 gone
     * (one replica, 3 dead), rank 2 starts over from the start instead. */
    for (int i = 0; i < 6; i++) {
        st[i] = alive(i, 1, 0, 5, 0, 8, 1);
    }
    st[2] = fresh(2);
    st[3] = fresh(3);
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 0, 1, tp));
    CHECK(0 == tp->restart_version[2] && 0 == tp->restart_seq[2]);
    CHECK(1 == tp->restart_version[3] && 5 == tp->restart_seq[3]);
    CHECK(4 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 4, 2, 0, 1, 8));
    CHECK(XFER(tp, 1, FTRABIT_XFER_GLOBAL, 4, 3, 1, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_LOCAL, 4, 3, 1, 0, 0));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 4, 3, 0, 6, 8));
    free(tp);
}

/* Of 4 ranks, 1 is gone and 3 survive, shrunk: 0 and 3 completed seq 25, 2 is still inside
 * it (completed 24). */
static void keeper_still_inside(ftrabit_rank_state_t sh[3])
{
    sh[0] = alive(0, 3, 1, 20, 12, 25, 13);
    sh[1] = alive(2, 3, 1, 20, 12, 24, 13);
    sh[2] = alive(3, 3, 1, 20, 12, 25, 13);
}

/* With fewer keepers than ranks, losing all keepers of a needed seq loses it. */
static void lost_results(void)
{
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 3, 1, 20, 12, 25, 13);
    }
    st[1] = fresh(1);
    test_plan_t *tp = new_plan(MAX_XFERS);
    /* R=1: seq 21 and 25 were kept by rank 1 only: the checkpoint survived, results not. */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 2, tp));
    /* R=2: keepers of s are s mod 4 and the next: 21:{1,2} 22:{2,3} 23:{3,0} 24:{0,1} 25:{1,2} */
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 2, tp));
    CHECK(6 == tp->plan.nxfers);
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 2, 1, 0, 21, 22));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 3, 1, 0, 23, 23));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 0, 1, 0, 24, 24));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 2, 1, 0, 25, 25));
    /* R=2, ranks 1 and 2 dead: seq 21 and 25 are gone again. */
    st[2] = fresh(2);
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 2, 2, tp));
    /* A survivor behind needing a lost seq (no replacement at all, shrink). */
    ftrabit_rank_state_t sh[3];
    keeper_still_inside(sh);
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(sh, 3, 4, 1, 2, tp)); /* 25 kept by 1: gone */
    /* kept by {1, 2}: 1 is gone and 2 is the one that has not completed it */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(sh, 3, 4, 2, 2, tp));
    CHECK(FTRABIT_PLAN_OK == plan(sh, 3, 4, 3, 2, tp)); /* {1, 2, 3}: rank 3 has it */
    CHECK(1 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 25, 25));
    free(tp);
}

/* Results no living keeper holds, held by the survivors that completed them last. */
static void last_results_survive_their_keepers(void)
{
    test_plan_t *tp = new_plan(MAX_XFERS);
    /* np 6, R=2, checkpoint at 13; ranks 2 and 3, the keepers of 14, die right after it. */
    ftrabit_rank_state_t st[6];
    for (int i = 0; i < 6; i++) {
        st[i] = alive(i, 1, 0, 13, 0, 14, 14);
        st[i].cache_hi = 13; /* kept nothing since the checkpoint */
    }
    st[2] = fresh(2);
    st[3] = fresh(3);
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 6, 6, 2, 2, tp)); /* nobody says it holds 14 */
    for (int i = 0; i < 6; i++) {
        st[i].held_lo = st[i].held_hi = st[i].replacement ? 0 : 14;
    }
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 2, 2, tp));
    CHECK(14 == tp->plan.target_seq && 1 == tp->restart_version[2] && 1 == tp->restart_version[3]);
    CHECK(6 == tp->plan.nxfers); /* GLOBAL, LOCAL, RESULTS each; 14 from the next holder */
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 4, 2, 0, 14, 14));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 4, 3, 0, 14, 14));
    /* Only rank 5 completed it: the others are served by 5 too. */
    for (int i = 0; i < 6; i++) {
        if (!st[i].replacement && 5 != i) {
            st[i].completed_seq = 13;
            st[i].held_lo = st[i].held_hi = 0;
        }
    }
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 2, 2, tp) && 14 == tp->plan.target_seq);
    for (int k = 0; k < tp->plan.nxfers; k++) {
        CHECK(FTRABIT_XFER_RESULTS != tp->xfers[k].kind || 5 == tp->xfers[k].from);
    }
    /* A living keeper still inside the call that others completed (seq 25 of 4 ranks, kept
     * by 1 and 2; 1 is gone, 2 has not completed it): 0 and 3 hold it as their last. */
    ftrabit_rank_state_t sh[3];
    keeper_still_inside(sh);
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(sh, 3, 4, 2, 2, tp));
    sh[0].held_lo = sh[0].held_hi = sh[2].held_lo = sh[2].held_hi = 25;
    CHECK(FTRABIT_PLAN_OK == plan(sh, 3, 4, 2, 2, tp));
    CHECK(1 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 25, 25));
    /* A held range ends at its holder's last collective, never later. */
    sh[0].held_hi = 26;
    CHECK(FTRABIT_PLAN_INVALID == plan(sh, 3, 4, 2, 2, tp));
    free(tp);
}

/* Seen under load (np 6, R=2, checkpoint at 13): ranks 2 and 3, the keepers of allreduce
 * 14, were still inside it when 0, 1 and 5 had completed it and broadcast 15 (a broadcast
 * waits for nobody); 4 died before 16. 0, 1 and 5 hold 14 and 15, the results since the
 * last allreduce they completed; holding only their last result, 15, lost 14. */
static void results_since_the_last_allreduce_are_held(void)
{
    test_plan_t *tp = new_plan(MAX_XFERS);
    ftrabit_rank_state_t st[6];
    for (int i = 0; i < 6; i++) {
        st[i] = alive(i, 1, 0, 13, 0, 15, 14);
        st[i].held_lo = 14;
        st[i].held_hi = 15;
    }
    st[2] = alive(2, 1, 0, 13, 0, 13, 14); /* nothing since the checkpoint */
    st[3] = alive(3, 1, 0, 13, 0, 13, 14);
    st[4] = fresh(4);
    CHECK(FTRABIT_PLAN_OK == plan(st, 6, 6, 2, 2, tp));
    CHECK(15 == tp->plan.target_seq && 1 == tp->restart_version[4]);
    /* 2 and 3 get 14 and 15 in one run from 5, the first holder after them; 4 from 5. */
    CHECK(5 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 5, 2, 0, 14, 15));
    CHECK(XFER(tp, 1, FTRABIT_XFER_RESULTS, 5, 3, 0, 14, 15));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 5, 4, 0, 14, 15));
    /* Holding the last result only: 14 is gone (the failure seen). */
    for (int i = 0; i < 6; i++) {
        st[i].held_lo = 2 == i || 3 == i || 4 == i ? 0 : 15;
    }
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 6, 6, 2, 2, tp));
    /* A nearer rank's held range starting inside a source's run takes over there (R=1):
     * 5 needs 12..14; 1 holds 12..14, 0 (nearer to 5) holds 13..14 and keeps none. */
    ftrabit_rank_state_t r[3] = {alive(0, 1, 0, 6, 0, 14, 13), alive(1, 1, 0, 6, 0, 14, 7),
                                 alive(5, 1, 0, 6, 0, 11, 7)};
    r[0].held_lo = 13;
    r[0].held_hi = 14;
    r[1].held_lo = 12;
    r[1].held_hi = 14;
    CHECK(FTRABIT_PLAN_OK == plan(r, 3, 6, 1, 2, tp));
    CHECK(2 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 1, 2, 0, 12, 12)
          && XFER(tp, 1, FTRABIT_XFER_RESULTS, 0, 2, 0, 13, 14));
    free(tp);
}

static void lost_results_vs_lost_checkpoint(void)
{
    test_plan_t *tp = new_plan(MAX_XFERS);
    /* No checkpoint ever taken and a result lost: nothing checkpoint-related was lost. */
    ftrabit_rank_state_t st[3] = {alive(0, 0, 0, 0, 0, 6, 1), fresh(1), alive(2, 0, 0, 0, 0, 6, 1)};
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 3, 3, 1, 1, tp));
    /* A checkpoint whose replica is gone (K=0) and results since the start dropped. */
    ftrabit_rank_state_t st2[3] = {alive(0, 2, 1, 4, 2, 6, 3), fresh(1),
                                   alive(2, 2, 1, 4, 2, 6, 3)};
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st2, 3, 3, 0, 0, tp));
    /* Errors are reported in orig rank order, whatever the order of the records. Two keepers
     * per seq, no replicas: rank 0, one behind, is fine (seq 6 is kept by 2); replacement 1
     * cannot restart (no replica, seqs 1-2 dropped): LOST_CHECKPOINT. */
    ftrabit_rank_state_t st3[4] = {fresh(3), alive(0, 2, 1, 4, 2, 5, 3), fresh(1),
                                   alive(2, 2, 1, 4, 2, 6, 3)};
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st3, 4, 4, 2, 0, tp));
    /* Now seq 6 is lost too: rank 0 comes first and says LOST_RESULTS. */
    st3[3].cache_lo = 7;
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st3, 4, 4, 2, 0, tp));
    /* Rank 0 not behind any more: back to rank 1's LOST_CHECKPOINT. */
    st3[1].completed_seq = st3[1].cache_hi = 6;
    st3[1].cache_lo = 7;
    CHECK(FTRABIT_PLAN_LOST_CHECKPOINT == plan(st3, 4, 4, 2, 0, tp));
    free(tp);
}

static void invalid_records(void)
{
    test_plan_t *tp = new_plan(MAX_XFERS);
    ftrabit_rank_state_t good[3] = {alive(0, 2, 1, 10, 5, 12, 6), alive(1, 2, 1, 10, 5, 12, 6),
                                    fresh(2)};
    ftrabit_rank_state_t st[3];
    CHECK(FTRABIT_PLAN_OK == plan(good, 3, 3, 0, 2, tp));

#define EXPECT_INVALID(change)                                     \
    do {                                                           \
        memcpy(st, good, sizeof(st));                              \
        change;                                                    \
        CHECK(FTRABIT_PLAN_INVALID == plan(st, 3, 3, 0, 2, tp));   \
    } while (0)

    EXPECT_INVALID(st[1].orig_rank = 0);             /* duplicate */
    EXPECT_INVALID(st[2].orig_rank = 0);             /* duplicate with a replacement */
    EXPECT_INVALID(st[1].orig_rank = 3);             /* out of range */
    EXPECT_INVALID(st[1].orig_rank = -1);
    EXPECT_INVALID(st[0].version = -1);
    EXPECT_INVALID(st[0].version = INT32_MIN);
    EXPECT_INVALID(st[0].completed_seq = 9);         /* completed before its checkpoint */
    EXPECT_INVALID(st[0].replacement = 2);
    EXPECT_INVALID(st[0].has_prev = -1);
    EXPECT_INVALID(st[0].prev_ckpt_seq = 10);        /* prev not before current */
    EXPECT_INVALID(st[0].prev_ckpt_seq = 0);         /* version 1 cannot be at the start */
    EXPECT_INVALID((st[0].version = 0, st[0].has_prev = 0)); /* version 0 at seq 10 */
    EXPECT_INVALID((st[0].version = 0, st[0].ckpt_seq = 0)); /* version 0 with a prev */
    EXPECT_INVALID(st[0].ckpt_seq = 0);              /* version 2 at the start */
    EXPECT_INVALID((st[0].completed_seq = UINT64_MAX, st[0].cache_hi = 0));
    EXPECT_INVALID(st[1].ckpt_seq = 11);             /* records disagree on version 2's seq */
    EXPECT_INVALID(st[1].prev_ckpt_seq = 4);         /* ... on version 1's */
    EXPECT_INVALID((st[1].version = 3, st[1].ckpt_seq = 9, st[1].prev_ckpt_seq = 5));
    EXPECT_INVALID((st[1].version = 3, st[1].ckpt_seq = 10, st[1].prev_ckpt_seq = 5));
    /* version 1 with a prev: the start, seq 0 */
    memcpy(st, good, sizeof(st));
    st[0] = alive(0, 1, 1, 3, 0, 12, 1);
    st[1] = alive(1, 1, 0, 3, 0, 12, 1);
    CHECK(FTRABIT_PLAN_OK == plan(st, 3, 3, 0, 2, tp));
    st[0].prev_ckpt_seq = 1;
    CHECK(FTRABIT_PLAN_INVALID == plan(st, 3, 3, 0, 2, tp));

    /* A replacement's other fields are ignored, whatever they say. */
    memcpy(st, good, sizeof(st));
    st[2].version = -7;
    st[2].completed_seq = UINT64_MAX;
    st[2].cache_lo = 0;
    st[2].cache_hi = UINT64_MAX;
    CHECK(FTRABIT_PLAN_OK == plan(st, 3, 3, 0, 2, tp) && 12 == tp->plan.target_seq);

    /* Arguments. */
    CHECK(FTRABIT_PLAN_INVALID == plan(good, 3, 2, 0, 2, tp));  /* more records than ranks */
    CHECK(FTRABIT_PLAN_INVALID == plan(good, 0, 3, 0, 2, tp));
    CHECK(FTRABIT_PLAN_INVALID == plan(NULL, 3, 3, 0, 2, tp));
    CHECK(FTRABIT_PLAN_INVALID == ftrabit_plan_recovery(good, 3, 3, 0, 2, NULL));
    ftrabit_rank_state_t only_fresh[2] = {fresh(0), fresh(1)};
    CHECK(FTRABIT_PLAN_INVALID == plan(only_fresh, 2, 2, 0, 1, tp)); /* no survivor */
    tp->plan.max_xfers = -1;
    CHECK(FTRABIT_PLAN_INVALID == plan(good, 3, 3, 0, 2, tp));
    tp->plan.max_xfers = 4;
    tp->plan.xfers = NULL;
    CHECK(FTRABIT_PLAN_INVALID == plan(good, 3, 3, 0, 2, tp));
    tp->plan.xfers = tp->xfers;
    tp->plan.restart_seq = NULL;
    CHECK(FTRABIT_PLAN_INVALID == plan(good, 3, 3, 0, 2, tp));
    free(tp);
#undef EXPECT_INVALID
}

/* A rank still replaying after an earlier recovery holds the results it was served, past
 * its completed seq, and serves them like any keeper. Rank 1 replays (completed 14, holds
 * 11..20); rank 3 is replaced; two keepers per seq: s mod 4 and the next. */
static void replaying_rank_serves_what_it_was_served(void)
{
    ftrabit_rank_state_t st[4] = {alive(0, 1, 0, 10, 0, 20, 11), alive(1, 1, 0, 10, 0, 14, 11),
                                  alive(2, 1, 0, 10, 0, 20, 11), fresh(3)};
    st[1].cache_hi = 20;
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 1, tp));
    CHECK(20 == tp->plan.target_seq && 1 == tp->restart_version[3]);
    CHECK(12 == tp->plan.nxfers);
    /* rank 1 catches up on (14, 20]: first keeper after it among 2, (3), 0 */
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 0, 1, 0, 15, 16));
    CHECK(XFER(tp, 1, FTRABIT_XFER_RESULTS, 2, 1, 0, 17, 18));
    CHECK(XFER(tp, 2, FTRABIT_XFER_RESULTS, 0, 1, 0, 19, 20));
    /* rank 3 restarts from 1 and replays (10, 20]; rank 1 serves 13 and 17 */
    CHECK(XFER(tp, 3, FTRABIT_XFER_GLOBAL, 0, 3, 1, 0, 0));
    CHECK(XFER(tp, 4, FTRABIT_XFER_LOCAL, 0, 3, 1, 0, 0));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 0, 3, 0, 11, 12));
    CHECK(XFER(tp, 6, FTRABIT_XFER_RESULTS, 1, 3, 0, 13, 13));
    CHECK(XFER(tp, 7, FTRABIT_XFER_RESULTS, 2, 3, 0, 14, 14));
    CHECK(XFER(tp, 8, FTRABIT_XFER_RESULTS, 0, 3, 0, 15, 16));
    CHECK(XFER(tp, 9, FTRABIT_XFER_RESULTS, 1, 3, 0, 17, 17));
    CHECK(XFER(tp, 10, FTRABIT_XFER_RESULTS, 2, 3, 0, 18, 18));
    CHECK(XFER(tp, 11, FTRABIT_XFER_RESULTS, 0, 3, 0, 19, 20));
    /* Claims past the target (or absurd ones) are harmless: never needed, no overflow. */
    st[1].cache_hi = UINT64_MAX;
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 1, tp) && 12 == tp->plan.nxfers);
    /* Without rank 1's served results, rank 2, the other keeper of 13 and 17, serves them. */
    st[1].cache_lo = 21;
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 2, 1, tp) && 10 == tp->plan.nxfers);
    CHECK(XFER(tp, 6, FTRABIT_XFER_RESULTS, 2, 3, 0, 13, 14));
    CHECK(XFER(tp, 8, FTRABIT_XFER_RESULTS, 2, 3, 0, 17, 18));
    /* ... unless rank 2 dropped them: then 13 is lost (the checkpoint itself survived). */
    st[2].cache_lo = 15;
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 2, 1, tp));
    free(tp);
}

/* Shrink: fewer records than original ranks, no replacements, gaps in the orig ranks. */
static void shrink_catch_up(void)
{
    ftrabit_rank_state_t st[3] = {alive(5, 1, 0, 3, 0, 9, 1), alive(1, 1, 0, 3, 0, 7, 1),
                                  alive(3, 1, 0, 3, 0, 9, 1)};
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 3, 6, 0, 1, tp));
    CHECK(9 == tp->plan.target_seq && 1 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 2, 1, 0, 8, 9)); /* first after 1 alive: 3 */
    free(tp);
}

/* Huge seq numbers and ranges: no iteration over seqs, no overflow, no hang. */
static void huge_seqs(void)
{
    const uint64_t big = UINT64_MAX - 1;
    ftrabit_rank_state_t st[4];
    for (int i = 0; i < 4; i++) {
        st[i] = alive(i, 0, 0, 0, 0, big, 1);
    }
    st[2] = fresh(2);
    test_plan_t *tp = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 1, tp));
    CHECK(1 == tp->plan.nxfers && XFER(tp, 0, FTRABIT_XFER_RESULTS, 3, 2, 0, 1, big));
    /* Two keepers out of four: sources alternate forever, so there is never room. */
    CHECK(FTRABIT_PLAN_NOROOM == plan(st, 4, 4, 2, 1, tp));
    CHECK(MAX_XFERS == tp->plan.nxfers);
    /* Three keepers out of four: every seq survives, runs of three, still no room. */
    CHECK(FTRABIT_PLAN_NOROOM == plan(st, 4, 4, 3, 1, tp));
    /* One keeper: the dead rank's seqs are lost; found without scanning 2^64 seqs. */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 1, 1, tp));
    /* Staggered huge cache ranges with one gap at the very top. */
    st[0] = alive(0, 2, 1, big - 5, 7, big, 8);
    st[1] = alive(1, 2, 1, big - 5, 7, big - 1, 8);
    st[3] = alive(3, 2, 1, big - 5, 7, big - 1, 8);
    CHECK(FTRABIT_PLAN_OK == plan(st, 4, 4, 0, 1, tp));
    CHECK(2 == tp->restart_version[2] && big - 5 == tp->restart_seq[2]);
    /* receivers in orig order: 1 (behind), 2 (replacement), 3 (behind) */
    CHECK(6 == tp->plan.nxfers);
    CHECK(XFER(tp, 0, FTRABIT_XFER_RESULTS, 0, 1, 0, big, big));
    CHECK(XFER(tp, 1, FTRABIT_XFER_GLOBAL, 3, 2, 2, 0, 0));
    CHECK(XFER(tp, 2, FTRABIT_XFER_LOCAL, 3, 2, 2, 0, 0));
    CHECK(XFER(tp, 3, FTRABIT_XFER_RESULTS, 3, 2, 0, big - 4, big - 1));
    CHECK(XFER(tp, 4, FTRABIT_XFER_RESULTS, 0, 2, 0, big, big));
    CHECK(XFER(tp, 5, FTRABIT_XFER_RESULTS, 0, 3, 0, big, big));
    st[0].cache_lo = big + 1; /* empty: nobody keeps `big` now */
    st[0].cache_hi = big;
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, 4, 4, 0, 1, tp));
    free(tp);
}

/* Larger jobs: many survivors, one keeper per seq, a replacement far behind. */
static void large_job(void)
{
    enum { N = 64 };
    ftrabit_rank_state_t st[N];
    for (int i = 0; i < N; i++) {
        st[i] = alive(i, 5, 1, 1000, 900, 1500, 901);
    }
    st[10] = fresh(10);
    st[11] = fresh(11);
    test_plan_t *tp = new_plan(MAX_XFERS);
    /* R=2: the seqs kept by 10 and 11 only ((s mod 64) == 10) are lost. */
    CHECK(FTRABIT_PLAN_LOST_RESULTS == plan(st, N, N, 2, 2, tp));
    CHECK(FTRABIT_PLAN_OK == plan(st, N, N, 3, 2, tp));
    CHECK(5 == tp->restart_version[10] && 5 == tp->restart_version[11]);
    CHECK(XFER(tp, 1, FTRABIT_XFER_LOCAL, 12, 10, 5, 0, 0));
    CHECK(XFER(tp, 1 + tp->plan.nxfers / 2, FTRABIT_XFER_LOCAL, 12, 11, 5, 0, 0));
    free(tp);
}

/* ---- determinism -------------------------------------------------------------------- */

static int same_plan(const test_plan_t *a, const test_plan_t *b, int size)
{
    return a->plan.target_seq == b->plan.target_seq && a->plan.nxfers == b->plan.nxfers
           && 0 == memcmp(a->restart_version, b->restart_version, size * sizeof(int32_t))
           && 0 == memcmp(a->restart_seq, b->restart_seq, size * sizeof(uint64_t))
           && 0 == memcmp(a->xfers, b->xfers, a->plan.nxfers * sizeof(ftrabit_transfer_t));
}

/* The plan for records in another order is the same plan, renumbered. */
static int same_plan_permuted(const test_plan_t *a, const int *perm, const test_plan_t *b,
                              int size)
{
    /* record i of the permuted run is record perm[i] of the original */
    int inv[MAX_RANKS];
    for (int i = 0; i < size; i++) {
        inv[perm[i]] = i;
    }
    if (a->plan.target_seq != b->plan.target_seq || a->plan.nxfers != b->plan.nxfers) {
        return 0;
    }
    for (int i = 0; i < size; i++) {
        if (a->restart_version[perm[i]] != b->restart_version[i]
            || a->restart_seq[perm[i]] != b->restart_seq[i]) {
            return 0;
        }
    }
    for (int k = 0; k < a->plan.nxfers; k++) {
        ftrabit_transfer_t x = a->xfers[k], y = b->xfers[k];
        x.from = inv[x.from];
        x.to = inv[x.to];
        if (x.kind != y.kind || x.from != y.from || x.to != y.to || x.version != y.version
            || x.lo != y.lo || x.hi != y.hi) {
            return 0;
        }
    }
    return 1;
}

static void plans_are_deterministic(void)
{
    ftrabit_rank_state_t st[5] = {alive(0, 3, 1, 30, 20, 30, 21), fresh(1),
                                  alive(2, 2, 1, 20, 10, 29, 11), fresh(3),
                                  alive(4, 3, 1, 30, 20, 30, 21)};
    test_plan_t *a = new_plan(MAX_XFERS), *b = new_plan(MAX_XFERS);
    CHECK(FTRABIT_PLAN_OK == plan(st, 5, 5, 2, 3, a));
    for (int round = 0; round < 20; round++) {
        memset(b, (int) round * 11, sizeof(*b));
        b->plan.restart_version = b->restart_version;
        b->plan.restart_seq = b->restart_seq;
        b->plan.xfers = b->xfers;
        b->plan.max_xfers = MAX_XFERS;
        CHECK(FTRABIT_PLAN_OK == plan(st, 5, 5, 2, 3, b));
        CHECK(same_plan(a, b, 5));
        /* Any order of the records gives the same plan, renumbered. */
        int perm[5] = {0, 1, 2, 3, 4};
        for (int i = 4; i > 0; i--) {
            int j = (int) (rng() % (uint64_t) (i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        ftrabit_rank_state_t shuffled[5];
        for (int i = 0; i < 5; i++) {
            shuffled[i] = st[perm[i]];
        }
        CHECK(FTRABIT_PLAN_OK == plan(shuffled, 5, 5, 2, 3, b));
        CHECK(same_plan_permuted(a, perm, b, 5));
    }
    free(a);
    free(b);
}

/* ---- random garbage records --------------------------------------------------------- */

static uint64_t random_seq(void)
{
    switch (rng() % 4) {
    case 0:
        return rng() % 8;
    case 1:
        return rng() % 64;
    case 2:
        return UINT64_MAX - rng() % 8;
    default:
        return rng();
    }
}

/* Check what an OK plan says against the records only (the model). */
static void check_plan_against_records(const ftrabit_rank_state_t *st, int size, int orig_size,
                                       int R, const test_plan_t *tp)
{
    uint64_t next[MAX_RANKS]; /* next seq each receiver needs */
    for (int i = 0; i < size; i++) {
        next[i] = (st[i].replacement ? tp->restart_seq[i] : st[i].completed_seq) + 1;
        CHECK(st[i].replacement ? tp->restart_version[i] >= 0 : -1 == tp->restart_version[i]);
    }
    for (int k = 0; k < tp->plan.nxfers; k++) {
        const ftrabit_transfer_t *x = &tp->xfers[k];
        CHECK(x->from >= 0 && x->from < size && x->to >= 0 && x->to < size && x->from != x->to);
        if (!(x->from >= 0 && x->from < size && x->to >= 0 && x->to < size)) {
            return;
        }
        const ftrabit_rank_state_t *s = &st[x->from];
        CHECK(!s->replacement);
        if (FTRABIT_XFER_RESULTS == x->kind) {
            CHECK(x->lo == next[x->to] && x->lo <= x->hi && x->hi <= tp->plan.target_seq);
            /* held by the sender, as a keeper or in its held range: check up to
             * orig_size + 1 seqs (the pattern repeats) */
            for (uint64_t q = x->lo, c = 0; c <= (uint64_t) orig_size; q++, c++) {
                CHECK((s->cache_lo <= q && q <= s->cache_hi
                       && ftrabit_cache_is_keeper(q, s->orig_rank, orig_size, R))
                      || (0 != s->held_lo && s->held_lo <= q && q <= s->held_hi));
                if (q == x->hi) {
                    break;
                }
            }
            next[x->to] = x->hi + 1;
        } else {
            CHECK(st[x->to].replacement && x->version == tp->restart_version[x->to]);
            CHECK(s->version == x->version || (s->has_prev && s->version - 1 == x->version));
        }
    }
    for (int i = 0; i < size; i++) {
        CHECK(next[i] == tp->plan.target_seq + 1);
    }
}

static void random_records_never_crash(void)
{
    test_plan_t *tp = new_plan(64);
    int counts[8] = {0};
    for (int trial = 0; trial < 4000; trial++) {
        int orig_size = 1 + (int) (rng() % 9);
        int size = 1 + (int) (rng() % (uint64_t) orig_size);
        int R = (int) (rng() % (uint64_t) (orig_size + 2)) - 1, K = (int) (rng() % 4);
        ftrabit_rank_state_t st[10];
        for (int i = 0; i < size; i++) {
            uint64_t completed = random_seq();
            int32_t version = chance(8) ? -1 : (int32_t) (rng() % 4);
            uint64_t ckpt = version ? (chance(3) ? completed : completed / 2 + 1) : 0;
            st[i] = (ftrabit_rank_state_t){
                .orig_rank = chance(20) ? (int) (rng() % 12) - 1
                                        : (int) ((i * 5 + trial) % orig_size),
                .replacement = chance(4), .version = version,
                .has_prev = version > 1 && chance(2), .ckpt_seq = chance(10) ? random_seq() : ckpt,
                .prev_ckpt_seq = version == 2 ? ckpt / 2 : 0, .completed_seq = completed,
                .cache_lo = chance(2) ? ckpt + 1 : random_seq(),
                .cache_hi = chance(2) ? completed : random_seq(),
                .held_lo = chance(2) ? 0 : chance(2) ? completed / 2 + 1 : random_seq(),
                .held_hi = chance(2) ? completed : random_seq()};
        }
        tp->plan.max_xfers = (int) (rng() % 6);
        int rc = plan(st, size, orig_size, R, K, tp);
        CHECK(rc <= 0 && rc >= FTRABIT_PLAN_NOROOM);
        CHECK(FTRABIT_PLAN_NOROOM != rc || tp->plan.nxfers == tp->plan.max_xfers);
        counts[-rc]++;
        if (FTRABIT_PLAN_OK == rc) {
            check_plan_against_records(st, size, orig_size, R, tp);
        }
    }
    /* The generator reaches every outcome. */
    for (int i = 0; i <= -FTRABIT_PLAN_NOROOM; i++) {
        CHECK(counts[i] > 0);
    }
    free(tp);
}

/* ---- the job simulation ------------------------------------------------------------- */

enum { SIM_MAXN = 8, SIM_MAXSEQ = 62, SIM_MAXV = 31 };

typedef struct sim_rank {
    int gone;                    /* left the job (shrink) */
    int dead;                    /* died: being replaced in this recovery, state lost */
    /* What its record says (the model). */
    int32_t version, has_prev;
    uint64_t ckpt_seq, prev_ckpt_seq, completed, cache_lo;
    /* What it really holds. */
    uint64_t results;            /* bit s: the result of seq s, kept as a keeper */
    uint64_t held_from;          /* it holds every result in [held_from, completed], kept or
                                    not: since the last allreduce it completed */
    uint32_t globals;            /* bit v: the global checkpoint of version v */
    uint32_t replicas[SIM_MAXN]; /* [owner] bit v: owner's local checkpoint of version v */
} sim_rank_t;

typedef struct sim {
    int n, R, K, shrink;
    uint64_t t;                  /* the last seq started */
    int32_t V;                   /* the newest committed version in the job */
    uint64_t bcasts;             /* bit s: seq s is a broadcast (else an allreduce or a
                                    checkpoint call) */
    uint64_t ckpt_of[SIM_MAXV + 2];
    sim_rank_t r[SIM_MAXN];
} sim_t;

typedef struct sim_stats {
    int ok, lost_results, lost_checkpoint, replacements, from_older, from_start_with_ckpt;
    int adjacent, ckpt_failures, merged_runs, several_sources, shrinks, behind, from_held;
} sim_stats_t;

static uint64_t bit64(uint64_t s)
{
    return (uint64_t) 1 << s;
}

/* Seqs (a, b] as a mask. */
static uint64_t seqs_between(uint64_t a, uint64_t b)
{
    uint64_t m = 0;
    for (uint64_t s = a + 1; s <= b; s++) {
        m |= bit64(s);
    }
    return m;
}

/* The definition, independently of ftrabit_cache_is_keeper. */
static int sim_keeps(const sim_t *sim, uint64_t s, int i)
{
    int k = sim->R <= 0 || sim->R >= sim->n ? sim->n : sim->R;
    for (int j = 0; j < k; j++) {
        if ((int) ((s + (uint64_t) j) % (uint64_t) sim->n) == i) {
            return 1;
        }
    }
    return 0;
}

static int sim_holds_replica_of(const sim_t *sim, int holder, int owner)
{
    int d = (holder - owner + sim->n) % sim->n;
    int k = sim->K < sim->n - 1 ? sim->K : sim->n - 1;
    return d >= 1 && d <= k;
}

static int sim_survivor(const sim_t *sim, int i)
{
    return !sim->r[i].gone && !sim->r[i].dead;
}

/* A collective completed by running it: a keeper caches the result, and every rank holds
 * it until an allreduce completes (which every rank entered: nobody needs what came
 * before it). */
static void sim_complete(sim_t *sim, int i, uint64_t s)
{
    sim->r[i].completed = s;
    if (!((sim->bcasts >> s) & 1)) {
        sim->r[i].held_from = s;
    }
    if (sim_keeps(sim, s, i)) {
        sim->r[i].results |= bit64(s);
    }
}

/* A collective completed from the cache (replay, catch-up): it stays there, held. */
static void sim_serve(sim_t *sim, int i, uint64_t s)
{
    sim->r[i].completed = s;
    if (sim_keeps(sim, s, i)) {
        sim->r[i].results |= bit64(s);
    }
}

/* Commit version v at seq s (its ring exchange finished). */
static void sim_commit(sim_t *sim, int i, int32_t v, uint64_t s)
{
    sim_rank_t *x = &sim->r[i];
    uint32_t keep = (1u << v) | (v >= 2 ? 1u << (v - 1) : 0);
    x->globals = (x->globals | 1u << v) & keep;
    for (int o = 0; o < sim->n; o++) {
        if (sim_holds_replica_of(sim, i, o) && !sim->r[o].gone) {
            x->replicas[o] |= 1u << v;
        }
        x->replicas[o] &= keep;
    }
    /* Results since checkpoint v-1 stay. */
    uint64_t prev = sim->ckpt_of[v - 1];
    x->results &= ~seqs_between(0, prev);
    x->cache_lo = x->cache_lo > prev + 1 ? x->cache_lo : prev + 1;
    x->prev_ckpt_seq = v >= 2 ? prev : 0;
    x->has_prev = v >= 2;
    x->ckpt_seq = s;
    x->version = v;
    sim_complete(sim, i, s);
    x->held_from = s + 1; /* nobody restarts before this checkpoint */
}

static void sim_init(sim_t *sim, int n, int R, int K, int shrink)
{
    memset(sim, 0, sizeof(*sim));
    sim->n = n;
    sim->R = R;
    sim->K = K;
    sim->shrink = shrink;
    for (int i = 0; i < n; i++) {
        sim->r[i].cache_lo = 1;
        sim->r[i].held_from = 1;
    }
}

static void sim_normal_step(sim_t *sim, int checkpoint, int bcast)
{
    uint64_t t = ++sim->t;
    if (checkpoint) {
        sim->ckpt_of[++sim->V] = t;
    }
    sim->bcasts |= bcast && !checkpoint ? bit64(t) : 0;
    for (int i = 0; i < sim->n; i++) {
        if (!sim->r[i].gone) {
            if (checkpoint) {
                sim_commit(sim, i, sim->V, t);
            } else {
                sim_complete(sim, i, t);
            }
        }
    }
}

/* A failure during seq t; returns how many died. */
static int sim_failure_step(sim_t *sim, int checkpoint, int bcast, int prev_was_bcast)
{
    uint64_t t = ++sim->t;
    sim->bcasts |= bcast && !checkpoint ? bit64(t) : 0;
    int present[SIM_MAXN], np = 0, dying[SIM_MAXN] = {0}, ndying = 0;
    for (int i = 0; i < sim->n; i++) {
        if (!sim->r[i].gone) {
            present[np++] = i;
        }
    }
    while (0 == ndying || ndying == np) {
        ndying = 0;
        for (int j = 0; j < np; j++) {
            dying[present[j]] = chance(3);
            ndying += dying[present[j]];
        }
    }
    if (checkpoint) {
        int32_t v = sim->V + 1;
        int sent[SIM_MAXN];
        sim->ckpt_of[v] = t;
        for (int i = 0; i < sim->n; i++) {
            sent[i] = !dying[i] || chance(2);
        }
        for (int i = 0; i < sim->n; i++) {
            if (sim->r[i].gone || dying[i]) {
                continue;
            }
            int can_commit = 1;
            for (int o = 0; o < sim->n; o++) {
                if (sim_holds_replica_of(sim, i, o) && !sim->r[o].gone && !sent[o]) {
                    can_commit = 0;
                }
            }
            if (can_commit && chance(2)) {
                sim_commit(sim, i, v, t);
            }
        }
    } else {
        for (int i = 0; i < sim->n; i++) {
            if (sim->r[i].gone || dying[i]) {
                continue;
            }
            int what = (int) (rng() % 4);
            if (what < 2) {
                sim_complete(sim, i, t);
            } else if (3 == what && bcast && prev_was_bcast && t >= 2) {
                /* Two broadcasts in a row: this rank has not even seen seq t-1's result
                 * (its held range stays: it started at or before t-2). */
                sim->r[i].completed = t - 2;
                sim->r[i].results &= ~bit64(t - 1);
            }
        }
    }
    for (int i = 0; i < sim->n; i++) {
        if (dying[i]) {
            uint32_t gone = sim->shrink;
            memset(&sim->r[i], 0, sizeof(sim->r[i]));
            sim->r[i].gone = (int) gone;
            sim->r[i].dead = !gone;
        }
    }
    return ndying;
}

/* Records of the ranks in the job, in a random order; order[idx] = orig rank. */
static int sim_records(const sim_t *sim, ftrabit_rank_state_t *st, int *order)
{
    int size = 0;
    for (int i = 0; i < sim->n; i++) {
        if (!sim->r[i].gone) {
            order[size++] = i;
        }
    }
    if (chance(2)) {
        for (int i = size - 1; i > 0; i--) {
            int j = (int) (rng() % (uint64_t) (i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    for (int idx = 0; idx < size; idx++) {
        const sim_rank_t *x = &sim->r[order[idx]];
        if (x->dead) {
            /* A new process; whatever else its record says is ignored. */
            st[idx] = (ftrabit_rank_state_t){.orig_rank = order[idx], .replacement = 1,
                                             .version = (int32_t) (rng() % 3) - 1,
                                             .completed_seq = rng(), .cache_lo = rng() % 4,
                                             .cache_hi = rng()};
        } else {
            st[idx] = (ftrabit_rank_state_t){
                .orig_rank = order[idx], .replacement = 0, .version = x->version,
                .has_prev = x->has_prev, .ckpt_seq = x->ckpt_seq, .prev_ckpt_seq = x->prev_ckpt_seq,
                .completed_seq = x->completed, .cache_lo = x->cache_lo, .cache_hi = x->completed,
                .held_lo = x->held_from, .held_hi = x->completed};
        }
    }
    return size;
}

/* A survivor's record tells the truth about what it holds (the model holds). */
static void sim_check_model(const sim_t *sim)
{
    for (int i = 0; i < sim->n; i++) {
        const sim_rank_t *x = &sim->r[i];
        if (!sim_survivor(sim, i)) {
            continue;
        }
        uint64_t results = 0;
        for (uint64_t s = x->cache_lo; s <= x->completed; s++) {
            results |= sim_keeps(sim, s, i) ? bit64(s) : 0;
        }
        CHECK(x->results == results);
        uint32_t versions = (x->version >= 1 ? 1u << x->version : 0)
                            | (x->has_prev && x->version >= 2 ? 1u << (x->version - 1) : 0);
        CHECK(x->globals == versions);
        for (int o = 0; o < sim->n; o++) {
            if (sim_holds_replica_of(sim, i, o) && !sim->r[o].gone) {
                CHECK((x->replicas[o] & versions) == versions);
            }
        }
    }
}

/* ---- brute force on what really survived -------------------------------------------- */

static uint64_t truth_available(const sim_t *sim)
{
    uint64_t m = 0;
    for (int i = 0; i < sim->n; i++) {
        m |= sim_survivor(sim, i) ? sim->r[i].results
                                        | seqs_between(sim->r[i].held_from - 1, sim->r[i].completed)
                                  : 0;
    }
    return m;
}

static uint64_t truth_target(const sim_t *sim)
{
    uint64_t t = 0;
    for (int i = 0; i < sim->n; i++) {
        if (sim_survivor(sim, i) && sim->r[i].completed > t) {
            t = sim->r[i].completed;
        }
    }
    return t;
}

/* Global v on a survivor, and r's local of v on one of r's living replica holders. */
static int truth_state_survived(const sim_t *sim, int r, int32_t v)
{
    int global = 0, local = 0;
    for (int i = 0; i < sim->n; i++) {
        if (sim_survivor(sim, i)) {
            global |= (sim->r[i].globals >> v) & 1;
            local |= sim_holds_replica_of(sim, i, r) && ((sim->r[i].replicas[r] >> v) & 1);
        }
    }
    return global && local;
}

/* The newest version rank r can restart from; -1 if none. */
static int32_t truth_best_version(const sim_t *sim, int r, uint64_t target, int *state_survived)
{
    uint64_t avail = truth_available(sim);
    *state_survived = 0;
    for (int32_t v = SIM_MAXV; v >= 1; v--) {
        if (truth_state_survived(sim, r, v)) {
            *state_survived = 1;
            uint64_t need = seqs_between(sim->ckpt_of[v], target);
            if ((avail & need) == need) {
                return v;
            }
        }
    }
    uint64_t need = seqs_between(0, target);
    return (avail & need) == need ? 0 : -1;
}

static int truth_any_checkpoint(const sim_t *sim)
{
    for (int i = 0; i < sim->n; i++) {
        if (sim_survivor(sim, i) && sim->r[i].globals) {
            return 1;
        }
    }
    return 0;
}

static int32_t truth_newest(const sim_t *sim)
{
    int32_t v = 0;
    for (int i = 0; i < sim->n; i++) {
        if (sim_survivor(sim, i) && sim->r[i].version > v) {
            v = sim->r[i].version;
        }
    }
    return v;
}

/* What the planner must answer, and the restart versions (best[orig]). */
static int truth_expected(const sim_t *sim, int32_t *best)
{
    uint64_t target = truth_target(sim), avail = truth_available(sim);
    for (int o = 0; o < sim->n; o++) {
        const sim_rank_t *x = &sim->r[o];
        if (x->gone) {
            continue;
        }
        if (!x->dead) {
            uint64_t need = seqs_between(x->completed, target);
            if ((avail & need) != need) {
                return FTRABIT_PLAN_LOST_RESULTS;
            }
            continue;
        }
        int state_survived;
        best[o] = truth_best_version(sim, o, target, &state_survived);
        if (best[o] < 0) {
            return state_survived || !truth_any_checkpoint(sim) ? FTRABIT_PLAN_LOST_RESULTS
                                                                : FTRABIT_PLAN_LOST_CHECKPOINT;
        }
    }
    return FTRABIT_PLAN_OK;
}

/* The first survivor after `to` (in orig ring order) holding something, by predicate. */
typedef int (*holds_fn)(const sim_t *sim, int o, int arg, uint64_t what);

static int truth_first_after(const sim_t *sim, int to, holds_fn holds, int arg, uint64_t s)
{
    for (int d = 1; d < sim->n; d++) {
        int o = (to + d) % sim->n;
        if (sim_survivor(sim, o) && holds(sim, o, arg, s)) {
            return o;
        }
    }
    return -1;
}

static int holds_result(const sim_t *sim, int o, int unused, uint64_t s)
{
    (void) unused;
    return ((sim->r[o].results >> s) & 1)
           || (sim->r[o].held_from <= s && s <= sim->r[o].completed);
}

static int holds_global(const sim_t *sim, int o, int unused, uint64_t v)
{
    (void) unused;
    return (sim->r[o].globals >> v) & 1;
}

static int holds_local(const sim_t *sim, int o, int owner, uint64_t v)
{
    return sim_holds_replica_of(sim, o, owner) && ((sim->r[o].replicas[owner] >> v) & 1);
}

static int kind_rank(int kind)
{
    return FTRABIT_XFER_GLOBAL == kind ? 0 : FTRABIT_XFER_LOCAL == kind ? 1 : 2;
}

/* Carry the transfers out on what the ranks really hold, checking each one. */
static void sim_check_transfers(const sim_t *sim, const ftrabit_rank_state_t *st, int size,
                                const int *order, const test_plan_t *tp, sim_stats_t *stats)
{
    uint64_t got_results[SIM_MAXN] = {0};
    uint32_t got_global[SIM_MAXN] = {0}, got_local[SIM_MAXN] = {0};
    const ftrabit_transfer_t *prev = NULL;
    int sources[SIM_MAXN][SIM_MAXN] = {{0}};

    for (int k = 0; k < tp->plan.nxfers; k++) {
        const ftrabit_transfer_t *x = &tp->xfers[k];
        CHECK(x->from >= 0 && x->from < size && x->to >= 0 && x->to < size && x->from != x->to);
        if (!(x->from >= 0 && x->from < size && x->to >= 0 && x->to < size)) {
            return;
        }
        int from = order[x->from], to = order[x->to];
        int32_t v = tp->restart_version[x->to];
        CHECK(sim_survivor(sim, from));
        if (NULL != prev) { /* grouped by receiver in orig order; GLOBAL, LOCAL, RESULTS */
            int pto = order[prev->to];
            CHECK(pto < to || (pto == to && kind_rank(prev->kind) <= kind_rank(x->kind)));
            if (pto == to && FTRABIT_XFER_RESULTS == prev->kind
                && FTRABIT_XFER_RESULTS == x->kind) {
                CHECK(prev->hi < x->lo);
                CHECK(prev->hi + 1 != x->lo || prev->from != x->from); /* merged */
            }
        }
        switch (x->kind) {
        case FTRABIT_XFER_GLOBAL:
            CHECK(st[x->to].replacement && x->version == v && v >= 1);
            CHECK((sim->r[from].globals >> v) & 1);
            CHECK(from == truth_first_after(sim, to, holds_global, 0, (uint64_t) v));
            got_global[to] |= 1u << x->version;
            break;
        case FTRABIT_XFER_LOCAL:
            CHECK(st[x->to].replacement && x->version == v && v >= 1);
            CHECK(holds_local(sim, from, to, (uint64_t) v));
            CHECK(from == truth_first_after(sim, to, holds_local, to, (uint64_t) v));
            got_local[to] |= 1u << x->version;
            break;
        case FTRABIT_XFER_RESULTS:
            CHECK(x->lo <= x->hi && x->hi <= SIM_MAXSEQ);
            for (uint64_t s = x->lo; s <= x->hi && s <= SIM_MAXSEQ; s++) {
                CHECK(holds_result(sim, from, 0, s));
                CHECK(from == truth_first_after(sim, to, holds_result, 0, s));
                stats->from_held += !((sim->r[from].results >> s) & 1);
                CHECK(!((got_results[to] >> s) & 1)); /* nothing twice */
                got_results[to] |= bit64(s);
            }
            stats->merged_runs += x->hi > x->lo;
            sources[to][from] = 1;
            break;
        default:
            CHECK(0);
        }
        prev = x;
    }
    /* Everyone got exactly what it needs to reach the target. */
    for (int idx = 0; idx < size; idx++) {
        int o = order[idx];
        uint64_t from_seq = st[idx].replacement ? tp->restart_seq[idx] : st[idx].completed_seq;
        CHECK(got_results[o] == seqs_between(from_seq, tp->plan.target_seq));
        int32_t v = tp->restart_version[idx];
        uint32_t state = st[idx].replacement && v >= 1 ? 1u << v : 0;
        CHECK(got_global[o] == state && got_local[o] == state);
        int nsources = 0;
        for (int s = 0; s < sim->n; s++) {
            nsources += sources[o][s];
        }
        stats->several_sources += nsources > 1;
    }
}

/* Check a plan against brute force; returns the planner's answer. */
static int sim_plan_and_check(const sim_t *sim, sim_stats_t *stats, int32_t *restart)
{
    ftrabit_rank_state_t st[SIM_MAXN];
    int order[SIM_MAXN], best[SIM_MAXN];
    int size = sim_records(sim, st, order);
    test_plan_t *tp = new_plan(MAX_XFERS);
    int rc = plan(st, size, sim->n, sim->R, sim->K, tp);
    int expect = truth_expected(sim, best);
    CHECK(rc == expect);
    if (FTRABIT_PLAN_OK == rc && rc == expect) {
        CHECK(tp->plan.target_seq == truth_target(sim));
        for (int idx = 0; idx < size; idx++) {
            int o = order[idx];
            if (st[idx].replacement) {
                CHECK(tp->restart_version[idx] == best[o]);
                CHECK(tp->restart_seq[idx] == sim->ckpt_of[best[o] > 0 ? best[o] : 0]);
                stats->from_older += best[o] > 0 && best[o] < truth_newest(sim);
                stats->from_start_with_ckpt += 0 == best[o] && truth_any_checkpoint(sim);
            } else {
                CHECK(-1 == tp->restart_version[idx]);
                CHECK(tp->restart_seq[idx] == sim->r[o].completed);
                stats->behind += sim->r[o].completed < tp->plan.target_seq;
            }
            restart[o] = tp->restart_version[idx];
        }
        sim_check_transfers(sim, st, size, order, tp, stats);
        /* Same records, same plan. */
        test_plan_t *again = new_plan(MAX_XFERS);
        CHECK(FTRABIT_PLAN_OK == plan(st, size, sim->n, sim->R, sim->K, again));
        CHECK(same_plan(tp, again, size));
        free(again);
    }
    free(tp);
    return rc;
}

/* After the transfers: replacements restart, everyone replays to the target. What the
 * engine must do for the model to keep holding (see the report): served results are kept
 * by their keepers, a checkpoint call met during catch-up or replay is committed (its ring
 * exchange redone), and a replacement gets back the replicas it holds for its neighbours. */
static void sim_settle(sim_t *sim, const int32_t *restart)
{
    uint64_t target = truth_target(sim);
    int32_t newest = truth_newest(sim);
    for (int i = 0; i < sim->n; i++) {
        sim_rank_t *x = &sim->r[i];
        if (x->gone) {
            continue;
        }
        if (x->dead) {
            int32_t v = restart[i];
            memset(x, 0, sizeof(*x));
            x->version = v;
            x->ckpt_seq = x->completed = sim->ckpt_of[v > 0 ? v : 0];
            x->cache_lo = x->completed + 1;
            x->held_from = x->completed + 1; /* it holds what it replays */
            x->globals = v > 0 ? 1u << v : 0;
            for (int o = 0; o < sim->n; o++) {
                if (v > 0 && sim_holds_replica_of(sim, i, o) && !sim->r[o].gone) {
                    x->replicas[o] = 1u << v;
                }
            }
        }
        for (uint64_t s = x->completed + 1; s <= target; s++) {
            int32_t v = x->version + 1;
            if (v <= newest && sim->ckpt_of[v] == s) {
                sim_commit(sim, i, v, s);
            } else {
                sim_serve(sim, i, s);
            }
        }
    }
    sim->V = newest;
    sim->t = target;
}

static int sim_adjacent_dead(const sim_t *sim)
{
    for (int i = 0; i < sim->n; i++) {
        if (sim->r[i].dead && sim->r[(i + 1) % sim->n].dead) {
            return 1;
        }
    }
    return 0;
}

/* One job: collectives and checkpoints, up to three failures, until done or lost. */
static void sim_run_job(sim_stats_t *stats)
{
    sim_t sim;
    int n = 2 + (int) (rng() % (SIM_MAXN - 1));
    int R = chance(3) ? 0 : 1 + (int) (rng() % (uint64_t) n);
    int K = (int) (rng() % 4);
    sim_init(&sim, n, R, K, chance(5));
    int failures = 0, prev_was_bcast = 0;
    int fail_one_in = 3 + (int) (rng() % 12);

    while (sim.t < SIM_MAXSEQ - 2 && failures < 3) {
        int checkpoint = sim.V < SIM_MAXV - 1 && chance(4);
        int present = 0;
        for (int i = 0; i < n; i++) {
            present += !sim.r[i].gone;
        }
        int bcast = !checkpoint && chance(2);
        if (present < 2 || !chance(fail_one_in)) {
            sim_normal_step(&sim, checkpoint, bcast);
            prev_was_bcast = bcast;
            continue;
        }
        failures++;
        sim_failure_step(&sim, checkpoint, bcast, prev_was_bcast);
        stats->ckpt_failures += checkpoint;
        stats->shrinks += sim.shrink;
        sim_check_model(&sim);
        int32_t restart[SIM_MAXN];
        for (int i = 0; i < n; i++) {
            stats->replacements += sim.r[i].dead;
        }
        stats->adjacent += sim_adjacent_dead(&sim);
        int rc = sim_plan_and_check(&sim, stats, restart);
        if (FTRABIT_PLAN_OK != rc) {
            stats->lost_results += FTRABIT_PLAN_LOST_RESULTS == rc;
            stats->lost_checkpoint += FTRABIT_PLAN_LOST_CHECKPOINT == rc;
            return; /* the job ends here */
        }
        stats->ok++;
        sim_settle(&sim, restart);
        sim_check_model(&sim);
        prev_was_bcast = 0;
    }
}

static void simulated_jobs(void)
{
    sim_stats_t stats = {0};
    for (int job = 0; job < 2000; job++) {
        sim_run_job(&stats);
    }
    /* The generator reaches the interesting cases, many times each. */
    CHECK(stats.ok > 500);
    CHECK(stats.lost_results > 50);
    CHECK(stats.lost_checkpoint > 50);
    CHECK(stats.from_older > 20);
    CHECK(stats.from_start_with_ckpt > 20);
    CHECK(stats.adjacent > 100);
    CHECK(stats.ckpt_failures > 100);
    CHECK(stats.merged_runs > 100);
    CHECK(stats.several_sources > 100);
    CHECK(stats.shrinks > 50);
    CHECK(stats.behind > 100);
    CHECK(stats.from_held > 20);
    printf("# simulated jobs: %d recovered, %d lost results, %d lost checkpoints, %d results "
           "served by a rank that held them without keeping them\n", stats.ok,
           stats.lost_results, stats.lost_checkpoint, stats.from_held);
}

int main(void)
{
    RUN(replica_holders);
    RUN(no_failure_needs_nothing);
    RUN(survivor_behind_by_one);
    RUN(replacement_without_checkpoint);
    RUN(replacement_from_the_latest_checkpoint);
    RUN(failure_during_a_checkpoint);
    RUN(restart_from_what_the_holder_has);
    RUN(adjacent_replacements);
    RUN(lost_results);
    RUN(last_results_survive_their_keepers);
    RUN(results_since_the_last_allreduce_are_held);
    RUN(lost_results_vs_lost_checkpoint);
    RUN(invalid_records);
    RUN(replaying_rank_serves_what_it_was_served);
    RUN(shrink_catch_up);
    RUN(huge_seqs);
    RUN(large_job);
    RUN(plans_are_deterministic);
    RUN(random_records_never_crash);
    RUN(simulated_jobs);
    UNIT_EXIT();
}
