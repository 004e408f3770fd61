/*
 * Unit tests of pml/dr2's duplicate suppression window and ACK bitmasks.
 *
 * The window is checked against a naive model: ids unwrapped to 64 bits (so wrap-around
 * cannot fool it), a plain set of every id ever marked, and the rule "ahead of the highest
 * id: new; `size` or more behind it: too old; otherwise: duplicate iff in the set". The
 * model is compared exhaustively over all short id sequences for small windows, and over
 * long random runs (with jumps) for the real window size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_ackmask.h"
#include "ompi/mca/pml/dr2/pml_dr2_window.h"
#include "unit.h"

#define NEW PML_DR2_WINDOW_NEW
#define DUP PML_DR2_WINDOW_DUPLICATE
#define OLD PML_DR2_WINDOW_TOO_OLD

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t rng_next(void)
{
    return unit_xorshift64s(&rng_state);
}

/* ---- direct cases -------------------------------------------------------------------- */

static void init_rejects_bad_sizes(void)
{
    pml_dr2_window_t w;

    CHECK(pml_dr2_window_init(&w, 0, 0) == -1);
    CHECK(pml_dr2_window_init(&w, 3, 0) == -1);
    CHECK(pml_dr2_window_init(&w, 1000, 0) == -1);
    CHECK(pml_dr2_window_init(&w, 2048, 0) == -1);
    for (uint32_t size = 1; size <= PML_DR2_WINDOW_MAX; size <<= 1) {
        CHECK(pml_dr2_window_init(&w, size, 0) == 0);
    }
}

/* Ids before the first expected one count as received: a stale packet from before the
 * window was set up is never taken for new data. */
static void ids_before_the_first_are_old(void)
{
    pml_dr2_window_t w;

    pml_dr2_window_init(&w, PML_DR2_WINDOW_MAX, 5000);
    CHECK(pml_dr2_window_check(&w, 5000) == NEW);
    CHECK(pml_dr2_window_check(&w, 4999) == DUP);
    CHECK(pml_dr2_window_check(&w, 5000 - PML_DR2_WINDOW_MAX) == DUP);
    CHECK(pml_dr2_window_check(&w, 5000 - PML_DR2_WINDOW_MAX - 1) == OLD);
    CHECK(pml_dr2_window_check(&w, 0) == OLD);
    pml_dr2_window_init(&w, 8, 3);
    CHECK(pml_dr2_window_check(&w, 0) == DUP);
    CHECK(pml_dr2_window_check(&w, 0xFFFFFFFBu) == DUP); /* 3 - 8 */
    CHECK(pml_dr2_window_check(&w, 0xFFFFFFFAu) == OLD);
}

static void in_order_and_duplicates(void)
{
    pml_dr2_window_t w;
    int wrong = 0;

    pml_dr2_window_init(&w, PML_DR2_WINDOW_MAX, 0);
    for (uint32_t id = 0; id < 5000; id++) {
        wrong += pml_dr2_window_check(&w, id) != NEW;
        wrong += pml_dr2_window_check_and_mark(&w, id) != NEW;
        wrong += pml_dr2_window_check_and_mark(&w, id) != DUP; /* immediate duplicate */
        if (id >= 10) {
            wrong += pml_dr2_window_check_and_mark(&w, id - 10) != DUP; /* late duplicate */
        }
    }
    CHECK(wrong == 0);
    for (uint32_t id = 5000 - PML_DR2_WINDOW_MAX; id < 5000; id++) {
        wrong += pml_dr2_window_check(&w, id) != DUP;
    }
    for (uint32_t id = 0; id < 5000 - PML_DR2_WINDOW_MAX; id++) {
        wrong += pml_dr2_window_check(&w, id) != OLD;
    }
    CHECK(wrong == 0);
    CHECK(pml_dr2_window_check(&w, 5000) == NEW);
}

/* Ids shuffled within blocks of the window size all arrive as new, once. */
static void reordered_within_the_window(void)
{
    enum { BLOCKS = 20 };
    const uint32_t size = PML_DR2_WINDOW_MAX;
    uint32_t *ids = malloc(sizeof(uint32_t) * size * BLOCKS);
    pml_dr2_window_t w;
    int wrong = 0;

    for (uint32_t i = 0; i < size * BLOCKS; i++) {
        ids[i] = 0xFFFFE000u + i; /* crosses 2^32 on the way */
    }
    for (uint32_t b = 0; b < BLOCKS; b++) {
        uint32_t *block = ids + b * size;

        for (uint32_t i = size - 1; i > 0; i--) {
            uint32_t j = (uint32_t) (rng_next() % (i + 1)), t = block[i];

            block[i] = block[j];
            block[j] = t;
        }
    }
    pml_dr2_window_init(&w, size, 0xFFFFE000u);
    for (uint32_t i = 0; i < size * BLOCKS; i++) {
        wrong += pml_dr2_window_check_and_mark(&w, ids[i]) != NEW;
        /* a copy of an id from a little earlier in the stream: a duplicate, or too old
         * when the next block already moved the window past it; never new */
        if (i >= 100) {
            wrong += pml_dr2_window_check_and_mark(&w, ids[i - 1 - rng_next() % 100]) == NEW;
        }
    }
    CHECK(wrong == 0);
    free(ids);
}

static void wrap_around_at_2_32(void)
{
    pml_dr2_window_t w;
    int wrong = 0;

    pml_dr2_window_init(&w, PML_DR2_WINDOW_MAX, 0xFFFFFF00u);
    for (uint32_t id = 0xFFFFFF00u; id != 0x300; id++) {
        wrong += pml_dr2_window_check_and_mark(&w, id) != NEW;
    }
    CHECK(wrong == 0);
    /* top is 0x2FF: 0xFFFFFFFF is 0x300 behind, inside the window */
    CHECK(pml_dr2_window_check(&w, 0xFFFFFFFFu) == DUP);
    CHECK(pml_dr2_window_check(&w, 0) == DUP);
    CHECK(pml_dr2_window_check(&w, 0xFFFFFF00u) == DUP); /* 0x2FF - 1023 */
    CHECK(pml_dr2_window_check(&w, 0xFFFFFEFFu) == OLD); /* 0x2FF - 1024 */
    CHECK(pml_dr2_window_check(&w, 0x300) == NEW);
    /* serial order: 2^31 - 1 ahead is ahead, 2^31 ahead counts as behind */
    CHECK(pml_dr2_window_check(&w, 0x2FFu + 0x7FFFFFFFu) == NEW);
    CHECK(pml_dr2_window_check(&w, 0x2FFu + 0x80000000u) == OLD);
}

/* A jump further than the window forgets everything behind; a jump just short of it keeps
 * what is still in range. */
static void jumps_larger_than_the_window(void)
{
    pml_dr2_window_t w;

    pml_dr2_window_init(&w, 64, 100);
    for (uint32_t id = 100; id < 200; id++) {
        pml_dr2_window_check_and_mark(&w, id);
    }
    CHECK(pml_dr2_window_check_and_mark(&w, 199 + 64) == NEW); /* exactly one window */
    CHECK(pml_dr2_window_check(&w, 199) == OLD);
    CHECK(pml_dr2_window_check(&w, 200) == NEW); /* skipped, still in range */
    CHECK(pml_dr2_window_check(&w, 262) == NEW);
    CHECK(pml_dr2_window_check_and_mark(&w, 263 + 5000) == NEW);
    CHECK(pml_dr2_window_check(&w, 263) == OLD);
    for (uint32_t id = 263 + 5000 - 63; id < 263 + 5000; id++) {
        CHECK(pml_dr2_window_check(&w, id) == NEW);
    }
    CHECK(pml_dr2_window_check_and_mark(&w, 263 + 5000 + 63) == NEW); /* one short */
    CHECK(pml_dr2_window_check(&w, 263 + 5000) == DUP);
    CHECK(pml_dr2_window_check(&w, 263 + 5000 - 1) == OLD);
    CHECK(pml_dr2_window_check_and_mark(&w, 0x40000000u) == NEW); /* far, but ahead */
    CHECK(pml_dr2_window_check(&w, 263 + 5000 + 63) == OLD);
    CHECK(pml_dr2_window_check_and_mark(&w, 0x40000000u) == DUP);
}

static void check_does_not_mark(void)
{
    pml_dr2_window_t w, before;

    pml_dr2_window_init(&w, 16, 7);
    pml_dr2_window_check_and_mark(&w, 9);
    before = w;
    CHECK(pml_dr2_window_check(&w, 8) == NEW);
    CHECK(pml_dr2_window_check(&w, 40) == NEW);
    CHECK(pml_dr2_window_check(&w, 9) == DUP);
    CHECK(memcmp(&w, &before, sizeof(w)) == 0);
}

/* ---- the naive model ---------------------------------------------------------------- */

/* Exhaustive runs: unwrapped ids are small offsets from the first id, and the set of ids
 * ever marked is a bitmask over the offsets [OFF_LO, OFF_LO + 64). */
typedef struct {
    int64_t top;
    uint64_t seen;
    int64_t size;
} small_model_t;

#define OFF_LO (-18)

static void small_model_init(small_model_t *m, uint32_t size)
{
    m->top = -1;
    m->size = size;
    m->seen = 0;
    for (int64_t off = -(int64_t) size; off < 0; off++) {
        m->seen |= UINT64_C(1) << (off - OFF_LO);
    }
}

static pml_dr2_window_verdict_t small_model_step(small_model_t *m, int64_t off, int mark)
{
    uint64_t bit = UINT64_C(1) << (off - OFF_LO);

    if (off > m->top) {
        if (mark) {
            m->top = off;
            m->seen |= bit;
        }
        return NEW;
    }
    if (m->top - off >= m->size) {
        return OLD;
    }
    if (m->seen & bit) {
        return DUP;
    }
    if (mark) {
        m->seen |= bit;
    }
    return NEW;
}

typedef struct {
    uint32_t base;    /* the first id, as the window sees it */
    int64_t off_min;  /* offsets tried at each step */
    int64_t off_max;
    long mismatches;
    long sequences;
} exhaustive_t;

static void explore(exhaustive_t *x, const pml_dr2_window_t *win, const small_model_t *model,
                    int depth)
{
    if (depth == 0) {
        /* the whole state, as far as any next id can tell */
        for (int64_t off = x->off_min; off <= x->off_max; off++) {
            small_model_t m = *model;

            x->mismatches += pml_dr2_window_check(win, x->base + (uint32_t) off)
                             != small_model_step(&m, off, 0);
        }
        x->sequences++;
        return;
    }
    for (int64_t off = x->off_min; off <= x->off_max; off++) {
        pml_dr2_window_t w = *win;
        small_model_t m = *model;

        x->mismatches += pml_dr2_window_check_and_mark(&w, x->base + (uint32_t) off)
                         != small_model_step(&m, off, 1);
        explore(x, &w, &m, depth - 1);
    }
}

/* Every sequence of `depth` ids drawn from a range a few windows wide, for windows of 1 to
 * 16, starting at 0 (the ids before it wrap), just below 2^32 and around 2^31. */
static void exhaustive_small_windows_match_the_model(void)
{
    static const uint32_t bases[] = {0, 0xFFFFFFF8u, 0x7FFFFFFCu};
    static const int depth_for_size[] = {[1] = 6, [2] = 5, [4] = 5, [8] = 4, [16] = 3};
    long sequences = 0;

    for (uint32_t size = 1; size <= 16; size <<= 1) {
        for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
            exhaustive_t x = {bases[b], -(int64_t) size - 2, 2 * (int64_t) size + 2, 0, 0};
            pml_dr2_window_t w;
            small_model_t m;

            pml_dr2_window_init(&w, size, bases[b]);
            small_model_init(&m, size);
            explore(&x, &w, &m, depth_for_size[size]);
            CHECK(x.mismatches == 0);
            sequences += x.sequences;
        }
    }
    printf("# window model check: %ld id sequences, every verdict and final state agree\n",
           sequences);
}

/* Long runs: a hash set of every unwrapped id ever marked, never pruned. */
typedef struct {
    int64_t *slots; /* INT64_MIN: empty */
    size_t mask;
} id_set_t;

static void id_set_init(id_set_t *s, size_t capacity_pow2)
{
    s->slots = malloc(capacity_pow2 * sizeof(int64_t));
    s->mask = capacity_pow2 - 1;
    for (size_t i = 0; i < capacity_pow2; i++) {
        s->slots[i] = INT64_MIN;
    }
}

static int64_t *id_set_slot(id_set_t *s, int64_t id)
{
    size_t i = (size_t) ((uint64_t) id * 0x9E3779B97F4A7C15ull >> 20) & s->mask;

    while (s->slots[i] != INT64_MIN && s->slots[i] != id) {
        i = (i + 1) & s->mask;
    }
    return &s->slots[i];
}

typedef struct {
    int64_t top;
    int64_t size;
    id_set_t seen;
} big_model_t;

static pml_dr2_window_verdict_t big_model_step(big_model_t *m, int64_t id)
{
    int64_t *slot = id_set_slot(&m->seen, id);

    if (id <= m->top && m->top - id >= m->size) {
        return OLD;
    }
    if (*slot == id || id < 0) { /* negative: before the first id, counts as seen */
        return DUP;
    }
    *slot = id;
    if (id > m->top) {
        m->top = id;
    }
    return NEW;
}

/* A sender that mostly moves forward, reorders within about a window, resends, and now
 * and then jumps far ahead; started close to 2^32 so that it wraps several times. */
static void random_runs_match_the_model(void)
{
    static const uint32_t sizes[] = {8, 64, PML_DR2_WINDOW_MAX};

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        /* Under valgrind (the runner sets OMPIRES_UNIT_QUICK) a tenth of the steps, with
         * jumps ten times as often so that the ids still wrap. */
        const int quick = getenv("OMPIRES_UNIT_QUICK") != NULL;
        const int steps = quick ? 40000 : 400000;
        const uint64_t jump_every = (uint64_t) steps / 20;
        const uint32_t base = 0xFFFFF000u;
        pml_dr2_window_t w;
        big_model_t m = {-1, sizes[k], {NULL, 0}};
        int64_t head = 0;
        long mismatches = 0, verdicts[3] = {0, 0, 0};

        id_set_init(&m.seen, (size_t) 1 << 20);
        pml_dr2_window_init(&w, sizes[k], base);
        for (int i = 0; i < steps; i++) {
            int64_t spread = 3 * (int64_t) sizes[k] / 2 + 2;
            int64_t id = head - spread + (int64_t) (rng_next() % (uint64_t) (spread + 3));
            pml_dr2_window_verdict_t expect, got;

            if (rng_next() % jump_every == 0) {
                head += (int64_t) (rng_next() % 0x40000000u); /* a big jump ahead */
            } else {
                head += (int64_t) (rng_next() % 3);
            }
            if (id < -(int64_t) sizes[k] - 1) {
                id = -(int64_t) sizes[k] - 1;
            }
            expect = big_model_step(&m, id);
            got = pml_dr2_window_check_and_mark(&w, base + (uint32_t) id);
            mismatches += got != expect;
            verdicts[got]++;
        }
        CHECK(mismatches == 0);
        CHECK(verdicts[NEW] > 0 && verdicts[DUP] > 0 && verdicts[OLD] > 0);
        CHECK(head > (int64_t) 1 << 32); /* wrapped around, and more than once */
        free(m.seen.slots);
    }
}

/* ---- ACK bitmasks ------------------------------------------------------------------- */

static void ackmask_for(unsigned n)
{
    uint64_t full = pml_dr2_ackmask_full(n), received = 0, missing, acked, resend;
    unsigned order[64];
    int index, prev = -1;

    CHECK(pml_dr2_ackmask_count(full) == n);
    CHECK(pml_dr2_ackmask_valid(full, n));
    CHECK(n == 64 || !pml_dr2_ackmask_valid(pml_dr2_ackmask_bit(n), n));
    CHECK(!pml_dr2_ackmask_complete(full, 0));
    CHECK(pml_dr2_ackmask_missing(full, 0) == full);

    /* receive in a shuffled order; complete only after the last one */
    for (unsigned i = 0; i < n; i++) {
        order[i] = i;
    }
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned) (rng_next() % (i + 1)), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < n; i++) {
        CHECK(!pml_dr2_ackmask_is_marked(received, order[i]));
        CHECK(!pml_dr2_ackmask_complete(full, received));
        received = pml_dr2_ackmask_mark(received, order[i]);
        CHECK(pml_dr2_ackmask_is_marked(received, order[i]));
        CHECK(pml_dr2_ackmask_mark(received, order[i]) == received); /* idempotent */
        CHECK(pml_dr2_ackmask_count(received) == i + 1);
    }
    CHECK(received == full && pml_dr2_ackmask_complete(full, received));
    CHECK(pml_dr2_ackmask_missing(full, received) == 0);

    /* iterate over the missing ones of an even-only ACK: odd indices, lowest first */
    acked = 0;
    for (unsigned i = 0; i < n; i += 2) {
        acked = pml_dr2_ackmask_mark(acked, i);
    }
    missing = pml_dr2_ackmask_missing(full, acked);
    CHECK(pml_dr2_ackmask_lowest(missing) == (n > 1 ? 1 : -1));
    while ((index = pml_dr2_ackmask_pop_lowest(&missing)) >= 0) {
        CHECK(index > prev && index % 2 == 1 && (unsigned) index < n);
        prev = index;
    }
    CHECK(prev == (n % 2 == 0 ? (int) n - 1 : (int) n - 2)); /* the last odd index, if any */
    CHECK(missing == 0 && pml_dr2_ackmask_pop_lowest(&missing) == -1);

    /* coalescing two ACKs is their union, in either order, and repeatable */
    {
        uint64_t a = full & 0x5555555555555555ull, b = full & 0xF0F0F0F0F0F0F0F0ull;
        uint64_t ab = pml_dr2_ackmask_coalesce(a, b);

        CHECK(ab == pml_dr2_ackmask_coalesce(b, a) && ab == (a | b));
        CHECK(pml_dr2_ackmask_coalesce(ab, a) == ab);
        CHECK(pml_dr2_ackmask_missing(full, ab) == (full & ~(a | b)));
    }
    /* a NACK resends only what exists and was not acknowledged since */
    resend = pml_dr2_ackmask_to_resend(full, acked, UINT64_MAX);
    CHECK(resend == pml_dr2_ackmask_missing(full, acked));
    CHECK(pml_dr2_ackmask_to_resend(full, full, full) == 0);
    CHECK(pml_dr2_ackmask_to_resend(full, 0, pml_dr2_ackmask_bit(n - 1))
          == pml_dr2_ackmask_bit(n - 1));
}

static void ackmask_1(void)
{
    CHECK(pml_dr2_ackmask_full(1) == 1);
    ackmask_for(1);
}

static void ackmask_63(void)
{
    CHECK(pml_dr2_ackmask_full(63) == 0x7FFFFFFFFFFFFFFFull);
    ackmask_for(63);
}

static void ackmask_64(void)
{
    CHECK(pml_dr2_ackmask_full(64) == UINT64_MAX);
    CHECK(pml_dr2_ackmask_lowest(pml_dr2_ackmask_bit(63)) == 63);
    CHECK(pml_dr2_ackmask_full(0) == 0 && pml_dr2_ackmask_lowest(0) == -1);
    ackmask_for(64);
}

/* The inline in-order path leaves the window exactly as check_and_mark would, across
 * wrap-around of ids and of the ring, with duplicates and gaps in between. */
static void mark_next_equals_check_and_mark(void)
{
    static const uint32_t sizes[] = {2, 64, 128, PML_DR2_WINDOW_MAX};

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        pml_dr2_window_t a, b;
        uint32_t id = UINT32_MAX - 3 * sizes[k];

        /* the first id expected is the one after `id` */
        CHECK(pml_dr2_window_init(&a, sizes[k], id + 1) == 0);
        CHECK(pml_dr2_window_init(&b, sizes[k], id + 1) == 0);
        for (int i = 0; i < 20000; i++) {
            uint64_t r = rng_next();
            if (r % 7 == 0) {
                id += 1 + (uint32_t) (r >> 8) % 5; /* a gap: the general path for both */
                CHECK(pml_dr2_window_check_and_mark(&a, id) == pml_dr2_window_check_and_mark(&b, id));
            } else if (r % 7 == 1) {
                uint32_t old = id - (uint32_t) (r >> 8) % (2 * sizes[k]);
                CHECK(pml_dr2_window_check(&a, old) == pml_dr2_window_check(&b, old));
            } else {
                id++;
                CHECK(pml_dr2_window_is_next(&a, id));
                pml_dr2_window_mark_next(&a);
                CHECK(pml_dr2_window_check_and_mark(&b, id) == NEW);
            }
            CHECK(a.top == b.top && memcmp(a.marked, b.marked, sizeof(a.marked)) == 0);
        }
    }
    /* a window of one remembers only its top: never the inline path */
    {
        pml_dr2_window_t w;
        CHECK(pml_dr2_window_init(&w, 1, 5) == 0);
        CHECK(!pml_dr2_window_is_next(&w, 5));
    }
}

/* A TINY's 24-bit vfrag id completed from the window: every id from 2^23 before the one
 * expected next to 2^23 - 1 after it comes back whole, across the wrap-around of 32-bit
 * ids; a window's marks do not matter, only its top. */
static void expand_id_recovers_ids_near_the_next(void)
{
    static const uint32_t tops[] = {0, 5, 0x7FFFFF, 0x800000, 0xFFFFFF, 0x1000000,
                                    0x80000000u, UINT32_MAX - 0x7FFFFF, UINT32_MAX - 1, UINT32_MAX};
    static const int32_t deltas[] = {0, 1, -1, 1023, -1024, 0x7FFFFF, -0x800000, 12345, -54321};

    for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]); t++) {
        pml_dr2_window_t w;
        CHECK(pml_dr2_window_init(&w, PML_DR2_WINDOW_MAX, tops[t] + 1) == 0);
        CHECK(w.top == tops[t]);
        for (size_t d = 0; d < sizeof(deltas) / sizeof(deltas[0]); d++) {
            uint32_t id = tops[t] + 1 + (uint32_t) deltas[d];
            CHECK(pml_dr2_window_expand_id(&w, id & 0xFFFFFFu, 24) == id);
        }
        /* just outside the range: taken for the nearer id with the same low bits */
        CHECK(pml_dr2_window_expand_id(&w, (tops[t] + 1 + 0x800000u) & 0xFFFFFFu, 24)
              == tops[t] + 1 - 0x800000u);
    }
    for (int i = 0; i < 100000; i++) {
        pml_dr2_window_t w;
        uint32_t top = (uint32_t) rng_next();
        int32_t delta = (int32_t) (rng_next() % 0x1000000u) - 0x800000;
        uint32_t id = top + 1 + (uint32_t) delta;
        CHECK(pml_dr2_window_init(&w, 64, top + 1) == 0);
        CHECK(pml_dr2_window_expand_id(&w, id & 0xFFFFFFu, 24) == id);
        /* fewer bits: the nearest id with those bits, whichever that is */
        int32_t near = ((delta % 4096) + 4096) % 4096;
        near = near >= 2048 ? near - 4096 : near;
        CHECK(pml_dr2_window_expand_id(&w, id & 0xFFFu, 12) == top + 1 + (uint32_t) near);
    }
}

/* ---- the sender's id guard (ids of rendezvous waiting for their go-ahead) ---------- */

typedef struct {
    pml_dr2_id_guard_t guard;
    uint32_t next;
    const uint32_t *held;
    int nheld;
} id_sender_t;

/* As the sender (vfrag.c): rebuild from every id in use. */
static void id_rebuild(id_sender_t *s)
{
    pml_dr2_id_guard_clear(&s->guard);
    for (int i = 0; i < s->nheld; i++) {
        pml_dr2_id_guard_consider(&s->guard, s->next, s->held[i]);
    }
}

/* Give out one id and advance past the held ones, as vfrag.c's id_advance. */
static uint32_t id_give(id_sender_t *s)
{
    uint32_t id = s->next;

    if (pml_dr2_id_guard_due(++s->next)) {
        id_rebuild(s);
    }
    while (pml_dr2_id_guard_hits(&s->guard, s->next)) {
        s->next++;
        id_rebuild(s);
    }
    return id;
}

static int is_held(const id_sender_t *s, uint32_t id)
{
    for (int i = 0; i < s->nheld; i++) {
        if (s->held[i] == id) {
            return 1;
        }
    }
    return 0;
}

/* Run the sender from `start` (the first id of a block, where a running sender rebuilds
 * its guard) for `n` ids: none given out is held, every other id is given out once, in
 * order, across block edges and 2^32. */
static void id_run(uint32_t start, uint32_t n, const uint32_t *held, int nheld)
{
    id_sender_t s = {.next = start, .held = held, .nheld = nheld};
    uint32_t expect = start, skipped = 0;

    CHECK(pml_dr2_id_guard_due(start));
    id_rebuild(&s);
    while (pml_dr2_id_guard_hits(&s.guard, s.next)) { /* as after the id before start */
        s.next++;
        id_rebuild(&s);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = id_give(&s);
        while (is_held(&s, expect)) {
            expect++;
            skipped++;
        }
        CHECK(!is_held(&s, id));
        CHECK(id == expect);
        if (id != expect) {
            return;
        }
        expect++;
    }
    CHECK(skipped == (uint32_t) nheld); /* each held id lies in the range run */
}

static void id_guard_skips_held_ids(void)
{
    /* two waiting rendezvous a block apart, and two side by side */
    static const uint32_t held[] = {1000000, 1000001, 1000005, 1000000 + 3 * PML_DR2_ID_BLOCK};
    id_run((1000000 - 100000) & ~(PML_DR2_ID_BLOCK - 1), 500000, held, 4);
}

static void id_guard_skips_across_the_wrap(void)
{
    /* held ids on both sides of 2^32 and on block edges: the first and the last of a block */
    static const uint32_t held[] = {UINT32_MAX, 0, 5, PML_DR2_ID_BLOCK - 1, PML_DR2_ID_BLOCK};
    id_run((UINT32_MAX - 200000) & ~(PML_DR2_ID_BLOCK - 1), 400000, held, 5);
}

static void id_guard_nothing_held(void)
{
    id_run(3 * PML_DR2_ID_BLOCK, 200000, NULL, 0);
}

int main(void)
{
    RUN(init_rejects_bad_sizes);
    RUN(ids_before_the_first_are_old);
    RUN(in_order_and_duplicates);
    RUN(reordered_within_the_window);
    RUN(wrap_around_at_2_32);
    RUN(jumps_larger_than_the_window);
    RUN(check_does_not_mark);
    RUN(exhaustive_small_windows_match_the_model);
    RUN(random_runs_match_the_model);
    RUN(mark_next_equals_check_and_mark);
    RUN(expand_id_recovers_ids_near_the_next);
    RUN(ackmask_1);
    RUN(ackmask_63);
    RUN(ackmask_64);
    RUN(id_guard_skips_held_ids);
    RUN(id_guard_skips_across_the_wrap);
    RUN(id_guard_nothing_held);
    UNIT_EXIT();
}
