/*
 * Unit tests of coll/ftrabit's recovery planning, a randomized property test: simulated
 * jobs (collectives, checkpoints, failures at random points, respawn or shrink) tracking
 * what every process really holds, each recovery planned from the records and its transfers
 * carried out, checking that every rank reaches the target with everything it needs from
 * senders that really had it, and that LOST_* is returned exactly when brute force finds no
 * way to recover. The hand-made scenarios are in test_ftrabit_recovery.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_ftrabit_recovery.h"

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
    RUN(simulated_jobs);
    UNIT_EXIT();
}
