/*
 * ompi-resilience: coll/ftrabit recovery planning (pure logic; see the header).
 *
 * Every rank runs this on the same records and must get the same plan, so everything here
 * is a function of the records alone: ties are broken by original rank, never by the order
 * of the records, memory addresses or anything local.
 *
 * Records are untrusted and seq numbers are 64-bit, so nothing iterates over seqs one by
 * one: availability is computed on segments of the seq line (bounded by the records' cache
 * ranges, where the keeper pattern is periodic in orig_size), and RESULTS transfers are
 * computed run by run (one iteration per transfer, bounded by max_xfers).
 */
#include "ftrabit_recovery.h"

#include <stdlib.h>
#include <string.h>

#include "ftrabit_cache.h"

/* A checkpoint version held by some survivor and the seq of its checkpoint call. */
typedef struct ftrabit_plan_version {
    int32_t version;
    uint64_t seq;
} ftrabit_plan_version_t;

typedef struct ftrabit_planner {
    const ftrabit_rank_state_t *states;
    int size, orig_size, result_replicas, local_replicas;
    int all_keep;                     /* every rank keeps every result */
    int *index_of;                    /* [orig_size]: rebuilt rank of an orig rank, or -1 */
    ftrabit_plan_version_t *versions; /* versions >= 1 survivors hold, newest first */
    int nversions;
    uint64_t target;
    uint64_t last_lost;               /* highest seq in [1, target] nobody alive holds; 0: none */
    ftrabit_plan_t *plan;
} ftrabit_planner_t;

/* ---- who holds what ----------------------------------------------------------------- */

/* The record of a living process with state at orig rank `orig`, or NULL. */
static const ftrabit_rank_state_t *ftrabit_plan_survivor(const ftrabit_planner_t *p, int orig)
{
    int idx = p->index_of[orig];
    if (idx < 0 || p->states[idx].replacement) {
        return NULL;
    }
    return &p->states[idx];
}

static int ftrabit_plan_holds_version(const ftrabit_rank_state_t *st, int32_t version)
{
    return version >= 1 && (st->version == version || (st->has_prev && st->version - 1 == version));
}

/* Held as a keeper: within its cache range, where it kept every result it keeps. */
static int ftrabit_plan_keeps_result(const ftrabit_planner_t *p, int orig, uint64_t seq)
{
    const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, orig);
    return NULL != st && st->cache_lo <= seq && seq <= st->cache_hi
           && ftrabit_cache_is_keeper(seq, orig, p->orig_size, p->result_replicas);
}

/* Does it hold results since the last allreduce it completed (held_lo 0: none)? */
static int ftrabit_plan_has_held_range(const ftrabit_rank_state_t *st)
{
    return 0 != st->held_lo && st->held_lo <= st->held_hi;
}

static int ftrabit_plan_held_range_has(const ftrabit_rank_state_t *st, uint64_t seq)
{
    return ftrabit_plan_has_held_range(st) && st->held_lo <= seq && seq <= st->held_hi;
}

static int ftrabit_plan_holds_result(const ftrabit_planner_t *p, int orig, uint64_t seq)
{
    const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, orig);
    return NULL != st
           && (ftrabit_plan_keeps_result(p, orig, seq) || ftrabit_plan_held_range_has(st, seq));
}

/* (a - b) mod n for an orig rank a and any seq b: how far b is behind a on the ring. */
static uint64_t ftrabit_plan_ring_distance(int a, uint64_t b, int n)
{
    uint64_t un = (uint64_t) n;
    return ((uint64_t) a + un - b % un) % un;
}

/* ---- checking the records ----------------------------------------------------------- */

/* One record on its own. A replacement has no state: only its orig_rank is used. */
static int ftrabit_plan_record_is_valid(const ftrabit_rank_state_t *st, int orig_size)
{
    if (st->orig_rank < 0 || st->orig_rank >= orig_size || (st->replacement & ~1)) {
        return 0;
    }
    if (st->replacement) {
        return 1;
    }
    if (st->version < 0 || (st->has_prev & ~1) || (st->has_prev && st->version < 1)
        || UINT64_MAX == st->completed_seq || st->ckpt_seq > st->completed_seq
        || (ftrabit_plan_has_held_range(st) && st->held_hi > st->completed_seq)
        || (0 == st->version) != (0 == st->ckpt_seq)) {
        return 0;
    }
    /* Version V-1 = 0 is "the start", whose seq is 0; any other one precedes V's call. */
    /* cache_hi may exceed completed_seq: a rank still replaying holds what it was served. */
    return !st->has_prev
           || (st->prev_ckpt_seq < st->ckpt_seq && (1 == st->version) == (0 == st->prev_ckpt_seq));
}

static int ftrabit_plan_map_ranks(ftrabit_planner_t *p)
{
    for (int o = 0; o < p->orig_size; o++) {
        p->index_of[o] = -1;
    }
    for (int i = 0; i < p->size; i++) {
        const ftrabit_rank_state_t *st = &p->states[i];
        if (!ftrabit_plan_record_is_valid(st, p->orig_size) || p->index_of[st->orig_rank] >= 0) {
            return FTRABIT_PLAN_INVALID;
        }
        p->index_of[st->orig_rank] = i;
    }
    return FTRABIT_PLAN_OK;
}

static int ftrabit_plan_compare_versions(const void *a, const void *b)
{
    const ftrabit_plan_version_t *x = a, *y = b;
    if (x->version != y->version) {
        return x->version > y->version ? -1 : 1;
    }
    return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* The versions the survivors hold, newest first. All records must agree on each version's
 * seq, and newer versions must have later seqs. */
static int ftrabit_plan_collect_versions(ftrabit_planner_t *p)
{
    int n = 0;
    for (int i = 0; i < p->size; i++) {
        const ftrabit_rank_state_t *st = &p->states[i];
        if (st->replacement) {
            continue;
        }
        if (st->version >= 1) {
            p->versions[n++] = (ftrabit_plan_version_t){st->version, st->ckpt_seq};
        }
        if (st->has_prev && st->version >= 2) {
            p->versions[n++] = (ftrabit_plan_version_t){st->version - 1, st->prev_ckpt_seq};
        }
    }
    qsort(p->versions, (size_t) n, sizeof(*p->versions), ftrabit_plan_compare_versions);
    p->nversions = 0;
    for (int i = 0; i < n; i++) {
        ftrabit_plan_version_t *last = p->nversions ? &p->versions[p->nversions - 1] : NULL;
        if (NULL != last && last->version == p->versions[i].version) {
            if (last->seq != p->versions[i].seq) {
                return FTRABIT_PLAN_INVALID;
            }
            continue;
        }
        if (NULL != last && last->seq <= p->versions[i].seq) {
            return FTRABIT_PLAN_INVALID;
        }
        p->versions[p->nversions++] = p->versions[i];
    }
    return FTRABIT_PLAN_OK;
}

static int ftrabit_plan_find_target(ftrabit_planner_t *p)
{
    int any = 0;
    p->target = 0;
    for (int i = 0; i < p->size; i++) {
        if (!p->states[i].replacement) {
            any = 1;
            if (p->states[i].completed_seq > p->target) {
                p->target = p->states[i].completed_seq;
            }
        }
    }
    /* Without a survivor there is no state to recover from (nor anyone to run this). */
    return any ? FTRABIT_PLAN_OK : FTRABIT_PLAN_INVALID;
}

/* ---- which results survived --------------------------------------------------------- */

static int ftrabit_plan_compare_seqs(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

/* The highest seq in [x, y] (x >= 1) that no survivor whose cache covers all of [x, y]
 * keeps and no survivor's held range has, 0 if none. [x, y] lies in or out of each held
 * range (the segments are cut at their ends), so one holding all of it settles it. Keeping
 * is periodic in orig_size: once we know which residues mod orig_size are kept (cover,
 * orig_size + 1 entries of room), the candidates are the highest seq of each residue. */
static uint64_t ftrabit_plan_last_lost_in(const ftrabit_planner_t *p, uint64_t x, uint64_t y,
                                          int *cover)
{
    int n = p->orig_size, r = p->result_replicas, any = 0;
    memset(cover, 0, (size_t) (n + 1) * sizeof(int));
    for (int o = 0; o < n; o++) {
        const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, o);
        if (NULL != st && ftrabit_plan_held_range_has(st, x) && ftrabit_plan_held_range_has(st, y)) {
            return 0;
        }
    }
    for (int o = 0; o < n; o++) {
        const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, o);
        if (NULL == st || st->cache_lo > x || st->cache_hi < y) {
            continue;
        }
        any = 1;
        if (p->all_keep) {
            break;
        }
        /* o keeps the residues o-r+1 .. o (mod n): a difference array, maybe wrapped. */
        int first = (o - r + 1 + n) % n;
        cover[first]++;
        cover[o + 1]--;
        if (first > o) {
            cover[0]++;
            cover[n]--;
        }
    }
    if (p->all_keep && any) {
        return 0;
    }
    for (int i = 1; i < n && !p->all_keep; i++) { /* all_keep: nobody covers any residue */
        cover[i] += cover[i - 1];
    }
    uint64_t un = (uint64_t) n, lost = 0;
    for (int res = 0; res < n; res++) {
        uint64_t back = (y % un + un - (uint64_t) res) % un; /* y - back: res's highest */
        if (0 != cover[res] || back > y - x) {
            continue;
        }
        uint64_t s = y - back;
        if (s > lost) {
            lost = s;
        }
    }
    return lost;
}

/* Split [1, target] where some survivor's cache range or held range starts or ends; within
 * a segment the set of covering survivors is fixed. Scan the segments from the top. */
static int ftrabit_plan_find_last_lost(ftrabit_planner_t *p)
{
    p->last_lost = 0;
    if (0 == p->target) {
        return FTRABIT_PLAN_OK;
    }
    uint64_t *bounds = malloc((4 * (size_t) p->size + 2) * sizeof(uint64_t));
    int *cover = malloc(((size_t) p->orig_size + 1) * sizeof(int));
    if (NULL == bounds || NULL == cover) {
        free(bounds);
        free(cover);
        return FTRABIT_PLAN_NOMEM;
    }
    size_t nb = 0;
    bounds[nb++] = 1;
    bounds[nb++] = p->target + 1;
    for (int i = 0; i < p->size; i++) {
        const ftrabit_rank_state_t *st = &p->states[i];
        /* Clipped to [1, target]: seqs past the target are never needed. */
        if (!st->replacement && st->cache_lo <= st->cache_hi && st->cache_hi >= 1
            && st->cache_lo <= p->target) {
            bounds[nb++] = st->cache_lo < 1 ? 1 : st->cache_lo;
            bounds[nb++] = (st->cache_hi < p->target ? st->cache_hi : p->target) + 1;
        }
        if (!st->replacement && ftrabit_plan_has_held_range(st)) {
            bounds[nb++] = st->held_lo; /* hi <= completed <= target: a valid record */
            bounds[nb++] = st->held_hi + 1;
        }
    }
    qsort(bounds, nb, sizeof(uint64_t), ftrabit_plan_compare_seqs);
    for (size_t i = nb - 1; i > 0 && 0 == p->last_lost; i--) {
        if (bounds[i - 1] < bounds[i]) {
            p->last_lost = ftrabit_plan_last_lost_in(p, bounds[i - 1], bounds[i] - 1, cover);
        }
    }
    free(bounds);
    free(cover);
    return FTRABIT_PLAN_OK;
}

/* ---- restart points ----------------------------------------------------------------- */

/* How many ring successors hold each rank's local checkpoint, and the i-th of them: the
 * one definition behind ftrabit_local_replica_holders and the planner. */
static int ftrabit_plan_nholders(int orig_size, int k)
{
    return k < orig_size - 1 ? k : orig_size - 1;
}

static int ftrabit_plan_holder(int r, int i, int orig_size)
{
    return (int) (((int64_t) r + 1 + i) % orig_size);
}

/* The first living ring successor of `orig` (within its replica holders) holding its local
 * checkpoint of `version`; -1 if none. */
static int ftrabit_plan_local_source(const ftrabit_planner_t *p, int orig, int32_t version)
{
    int n = ftrabit_plan_nholders(p->orig_size, p->local_replicas);
    for (int i = 0; i < n; i++) {
        int holder = ftrabit_plan_holder(orig, i, p->orig_size);
        const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, holder);
        if (NULL != st && ftrabit_plan_holds_version(st, version)) {
            return holder;
        }
    }
    return -1;
}

/* The first survivor after `orig` in ring order holding the global checkpoint of `version`. */
static int ftrabit_plan_global_source(const ftrabit_planner_t *p, int orig, int32_t version)
{
    for (int d = 1; d < p->orig_size; d++) {
        int o = (orig + d) % p->orig_size;
        const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, o);
        if (NULL != st && ftrabit_plan_holds_version(st, version)) {
            return o;
        }
    }
    return -1;
}

/* The newest version a replacement of `orig` can restart from (see the header for the
 * rules and for which error says what). */
static int ftrabit_plan_choose_version(const ftrabit_planner_t *p, int orig, int32_t *version,
                                       uint64_t *seq)
{
    int state_survived = 0;
    for (int i = 0; i < p->nversions; i++) {
        const ftrabit_plan_version_t *v = &p->versions[i];
        /* Any listed version has its global on a survivor; the replica is the question. */
        if (ftrabit_plan_local_source(p, orig, v->version) < 0) {
            continue;
        }
        state_survived = 1;
        if (p->last_lost <= v->seq) {
            *version = v->version;
            *seq = v->seq;
            return FTRABIT_PLAN_OK;
        }
    }
    if (0 == p->last_lost) {
        *version = 0;
        *seq = 0;
        return FTRABIT_PLAN_OK;
    }
    return state_survived || 0 == p->nversions ? FTRABIT_PLAN_LOST_RESULTS
                                               : FTRABIT_PLAN_LOST_CHECKPOINT;
}

/* Restart points for replacements, and a check that every rank can reach the target;
 * in orig rank order, so that the error reported does not depend on the records' order. */
static int ftrabit_plan_restart_points(ftrabit_planner_t *p)
{
    ftrabit_plan_t *plan = p->plan;
    for (int o = 0; o < p->orig_size; o++) {
        int idx = p->index_of[o];
        if (idx < 0) {
            continue;
        }
        const ftrabit_rank_state_t *st = &p->states[idx];
        if (st->replacement) {
            int rc = ftrabit_plan_choose_version(p, o, &plan->restart_version[idx],
                                                 &plan->restart_seq[idx]);
            if (FTRABIT_PLAN_OK != rc) {
                return rc;
            }
        } else {
            plan->restart_version[idx] = -1;
            plan->restart_seq[idx] = st->completed_seq;
            if (p->last_lost > st->completed_seq) {
                return FTRABIT_PLAN_LOST_RESULTS;
            }
        }
    }
    return FTRABIT_PLAN_OK;
}

/* ---- transfers ---------------------------------------------------------------------- */

static int ftrabit_plan_add(ftrabit_planner_t *p, int kind, int from_orig, int to_orig,
                            int32_t version, uint64_t lo, uint64_t hi)
{
    ftrabit_plan_t *plan = p->plan;
    if (from_orig < 0) { /* no source: excluded by the checks before, never trusted blindly */
        return FTRABIT_PLAN_INVALID;
    }
    ftrabit_transfer_t *prev = plan->nxfers > 0 ? &plan->xfers[plan->nxfers - 1] : NULL;
    if (FTRABIT_XFER_RESULTS == kind && NULL != prev && FTRABIT_XFER_RESULTS == prev->kind
        && prev->from == p->index_of[from_orig] && prev->to == p->index_of[to_orig]
        && prev->hi + 1 == lo) {
        /* A last result next to kept ones of the same source: one run. */
        prev->hi = hi;
        return FTRABIT_PLAN_OK;
    }
    if (plan->nxfers >= plan->max_xfers) {
        return FTRABIT_PLAN_NOROOM;
    }
    plan->xfers[plan->nxfers++] = (ftrabit_transfer_t){
        .kind = kind, .from = p->index_of[from_orig], .to = p->index_of[to_orig],
        .version = version, .lo = lo, .hi = hi};
    return FTRABIT_PLAN_OK;
}

/* The first seq in [from, to] for which orig rank `o` is an eligible keeper; 0 if none
 * (0 is never a seq that needs serving). */
static uint64_t ftrabit_plan_first_kept(const ftrabit_planner_t *p, int o, uint64_t from,
                                        uint64_t to)
{
    const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, o);
    if (NULL == st) {
        return 0;
    }
    uint64_t x = from > st->cache_lo ? from : st->cache_lo;
    uint64_t limit = to < st->cache_hi ? to : st->cache_hi;
    if (x > limit) {
        return 0;
    }
    uint64_t d = ftrabit_plan_ring_distance(o, x, p->orig_size);
    if (p->all_keep || d < (uint64_t) p->result_replicas) {
        return x;
    }
    /* o's next keeper window starts where the distance comes down to replicas - 1. */
    uint64_t skip = d - (uint64_t) p->result_replicas + 1;
    return skip > limit - x ? 0 : x + skip;
}

/* The first holder of `seq` in ring order after `to`; *dist is its distance from `to`. */
static int ftrabit_plan_first_holder(const ftrabit_planner_t *p, int to, uint64_t seq, int *dist)
{
    for (int d = 1; d < p->orig_size; d++) {
        int o = (to + d) % p->orig_size;
        if (ftrabit_plan_holds_result(p, o, seq)) {
            *dist = d;
            return o;
        }
    }
    return -1;
}

/* The last seq of the run starting at `s` that `source` (the first holder after `to`, at
 * distance `dist`) serves: until it stops holding, or a holder nearer to `to` starts. */
static uint64_t ftrabit_plan_run_end(const ftrabit_planner_t *p, int to, int source, int dist,
                                     uint64_t s, uint64_t b)
{
    const ftrabit_rank_state_t *st = ftrabit_plan_survivor(p, source);
    uint64_t end;
    if (ftrabit_plan_held_range_has(st, s)) {
        end = b < st->held_hi ? b : st->held_hi; /* it holds all of its held range */
    } else {
        end = b < st->cache_hi ? b : st->cache_hi;
    }
    if (!ftrabit_plan_held_range_has(st, s) && !p->all_keep) {
        uint64_t window_left = ftrabit_plan_ring_distance(source, s, p->orig_size);
        if (window_left < end - s) {
            end = s + window_left;
        }
    }
    for (int d = 1; d < dist && end > s; d++) {
        int nearer = (to + d) % p->orig_size;
        uint64_t takeover = ftrabit_plan_first_kept(p, nearer, s + 1, end);
        if (0 != takeover) {
            end = takeover - 1;
        }
        const ftrabit_rank_state_t *other = ftrabit_plan_survivor(p, nearer);
        if (NULL != other && ftrabit_plan_has_held_range(other) && s < other->held_lo
            && other->held_lo <= end) {
            end = other->held_lo - 1; /* its held range starts there */
        }
    }
    return end;
}

/* RESULTS (a, b] for orig rank `to`, as maximal runs from the same source. */
static int ftrabit_plan_add_results(ftrabit_planner_t *p, int to, uint64_t a, uint64_t b)
{
    for (uint64_t s = a + 1; a < b && s <= b;) {
        int dist;
        int source = ftrabit_plan_first_holder(p, to, s, &dist);
        if (source < 0) {
            return FTRABIT_PLAN_LOST_RESULTS; /* excluded by the availability check */
        }
        uint64_t end = ftrabit_plan_run_end(p, to, source, dist, s, b);
        int rc = ftrabit_plan_add(p, FTRABIT_XFER_RESULTS, source, to, 0, s, end);
        if (FTRABIT_PLAN_OK != rc || end == b) {
            return rc;
        }
        s = end + 1;
    }
    return FTRABIT_PLAN_OK;
}

static int ftrabit_plan_add_replacement(ftrabit_planner_t *p, int orig, int idx)
{
    int32_t version = p->plan->restart_version[idx];
    int rc = FTRABIT_PLAN_OK;
    if (version > 0) {
        rc = ftrabit_plan_add(p, FTRABIT_XFER_GLOBAL, ftrabit_plan_global_source(p, orig, version),
                              orig, version, 0, 0);
        if (FTRABIT_PLAN_OK == rc) {
            rc = ftrabit_plan_add(p, FTRABIT_XFER_LOCAL,
                                  ftrabit_plan_local_source(p, orig, version), orig, version, 0, 0);
        }
    }
    return FTRABIT_PLAN_OK == rc
               ? ftrabit_plan_add_results(p, orig, p->plan->restart_seq[idx], p->target)
               : rc;
}

/* Transfers grouped by receiver, receivers in orig rank order; per receiver GLOBAL, LOCAL,
 * then RESULTS by increasing seq. */
static int ftrabit_plan_transfers(ftrabit_planner_t *p)
{
    for (int o = 0; o < p->orig_size; o++) {
        int idx = p->index_of[o];
        int rc = FTRABIT_PLAN_OK;
        if (idx < 0) {
            continue;
        }
        if (p->states[idx].replacement) {
            rc = ftrabit_plan_add_replacement(p, o, idx);
        } else {
            rc = ftrabit_plan_add_results(p, o, p->states[idx].completed_seq, p->target);
        }
        if (FTRABIT_PLAN_OK != rc) {
            return rc;
        }
    }
    return FTRABIT_PLAN_OK;
}

/* ---- entry points ------------------------------------------------------------------- */

static int ftrabit_plan_arguments_are_valid(const ftrabit_rank_state_t *states, int size,
                                            int orig_size, const ftrabit_plan_t *plan)
{
    return NULL != states && NULL != plan && size >= 1 && orig_size >= size
           && NULL != plan->restart_version && NULL != plan->restart_seq && plan->max_xfers >= 0
           && (NULL != plan->xfers || 0 == plan->max_xfers);
}

int ftrabit_plan_recovery(const ftrabit_rank_state_t *states, int size, int orig_size,
                          int result_replicas, int local_replicas, ftrabit_plan_t *plan)
{
    if (!ftrabit_plan_arguments_are_valid(states, size, orig_size, plan)) {
        return FTRABIT_PLAN_INVALID;
    }
    ftrabit_planner_t p = {
        .states = states, .size = size, .orig_size = orig_size,
        .result_replicas = result_replicas, .local_replicas = local_replicas,
        .all_keep = result_replicas <= 0 || result_replicas >= orig_size, .plan = plan};
    plan->nxfers = 0;
    plan->target_seq = 0;
    p.index_of = malloc((size_t) orig_size * sizeof(int));
    p.versions = malloc(2 * (size_t) size * sizeof(ftrabit_plan_version_t));
    int rc = NULL == p.index_of || NULL == p.versions ? FTRABIT_PLAN_NOMEM : FTRABIT_PLAN_OK;

    if (FTRABIT_PLAN_OK == rc) {
        rc = ftrabit_plan_map_ranks(&p);
    }
    if (FTRABIT_PLAN_OK == rc) {
        rc = ftrabit_plan_collect_versions(&p);
    }
    if (FTRABIT_PLAN_OK == rc) {
        rc = ftrabit_plan_find_target(&p);
    }
    if (FTRABIT_PLAN_OK == rc) {
        plan->target_seq = p.target;
        rc = ftrabit_plan_find_last_lost(&p);
    }
    if (FTRABIT_PLAN_OK == rc) {
        rc = ftrabit_plan_restart_points(&p);
    }
    if (FTRABIT_PLAN_OK == rc) {
        rc = ftrabit_plan_transfers(&p);
    }
    free(p.index_of);
    free(p.versions);
    return rc;
}

uint64_t ftrabit_recoveries_without_progress(const ftrabit_rank_state_t *states, int size,
                                             uint64_t target)
{
    uint64_t last = 0, stalled = 0;
    for (int r = 0; r < size; r++) {
        last = states[r].served_until > last ? states[r].served_until : last;
        stalled = states[r].stalled_recoveries > stalled ? states[r].stalled_recoveries : stalled;
    }
    /* no recovery before (last 0), or one that got further than all before: progress */
    return 0 != last && target <= last ? stalled + 1 : 0;
}

int ftrabit_local_replica_holders(int r, int orig_size, int k, int *out, int max_out)
{
    if (orig_size <= 0 || r < 0 || r >= orig_size || NULL == out) {
        return 0;
    }
    int n = ftrabit_plan_nholders(orig_size, k);
    int written = 0;
    for (int i = 0; i < n && written < max_out; i++) {
        out[written++] = ftrabit_plan_holder(r, i, orig_size);
    }
    return written;
}
