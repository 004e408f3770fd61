/*
 * Unit tests of coll/ftrabit's recovery planning: hand-made scenarios for each rule and
 * error, determinism, and random garbage records that never crash the planner. The
 * randomized job simulation is in test_ftrabit_recovery_sim.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_cache.h"
#include "test_ftrabit_recovery.h"

/* ---- helpers for hand-made scenarios ------------------------------------------------ */

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

/* Recoveries in a row without a collective completed since the previous one: counted
 * from the records (the largest count and the furthest target any of them carries). */
static void crash_loops_are_counted(void)
{
    ftrabit_rank_state_t st[3];
    memset(st, 0, sizeof(st));
    /* the job's first recovery: no target before it */
    CHECK(0 == ftrabit_recoveries_without_progress(st, 3, 25));
    /* recoveries before reached 25; a replacement (a zero record) does not hide it */
    st[0].served_until = st[1].served_until = 25;
    CHECK(1 == ftrabit_recoveries_without_progress(st, 3, 25));
    CHECK(1 == ftrabit_recoveries_without_progress(st, 3, 24)); /* its completer died */
    CHECK(0 == ftrabit_recoveries_without_progress(st, 3, 26)); /* progress */
    /* the count goes on from the largest any rank carries */
    st[1].stalled_recoveries = 6;
    st[0].stalled_recoveries = 2;
    CHECK(7 == ftrabit_recoveries_without_progress(st, 3, 25));
    CHECK(0 == ftrabit_recoveries_without_progress(st, 3, 30));
    CHECK(0 == ftrabit_recoveries_without_progress(st, 0, 30));
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
    RUN(crash_loops_are_counted);
    UNIT_EXIT();
}
