/*
 * Unit tests of coll/ftrabit's result buffer pool: size classes (never too small, at most
 * a quarter wasted, exact for powers of two), reuse within a class and never across
 * classes, the interval rule (a buffer unused for a whole checkpoint interval is freed at
 * the next checkpoint), the bound on idle bytes, and exact byte accounting.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_pool.h"
#include "unit.h"

static void classes_fit_and_waste_at_most_a_quarter(void)
{
    CHECK(64 == ftrabit_pool_class_bytes(0));
    CHECK(64 == ftrabit_pool_class_bytes(1));
    CHECK(64 == ftrabit_pool_class_bytes(64));
    CHECK(80 == ftrabit_pool_class_bytes(65));
    CHECK(128 == ftrabit_pool_class_bytes(113));
    CHECK(160 == ftrabit_pool_class_bytes(129));
    size_t prev = 0;
    for (size_t len = 0; len < 70000; len++) {
        size_t c = ftrabit_pool_class_bytes(len);
        CHECK(c >= len && c >= prev);
        CHECK(len <= 64 || 4 * c <= 5 * len + 4 * 3); /* < 1.25 len, rounding aside */
        prev = c;
    }
    for (int e = 6; e <= 61; e++) {
        size_t p = (size_t) 1 << e;
        CHECK(p == ftrabit_pool_class_bytes(p)); /* powers of two waste nothing */
        CHECK(p + p / 4 == ftrabit_pool_class_bytes(p + 1));
        CHECK(2 * p == ftrabit_pool_class_bytes(2 * p - 1));
    }
    CHECK(((size_t) 1 << 62) == ftrabit_pool_class_bytes((size_t) 1 << 62));
    CHECK(0 == ftrabit_pool_class_bytes(((size_t) 1 << 62) + 1)); /* too large: no class */
    CHECK(0 == ftrabit_pool_class_bytes(SIZE_MAX));
}

static void reuse_within_a_class_only(void)
{
    ftrabit_pool_t p;
    ftrabit_slot_t a, b, c;
    ftrabit_pool_init(&p, FTRABIT_POOL_NO_LIMIT);

    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 1000, &a));
    CHECK(NULL != a.data && 1024 == a.capacity && 1024 == p.lent_bytes);
    memset(a.data, 7, a.capacity); /* all of it is usable */
    unsigned char *first = a.data;
    ftrabit_pool_put(&p, &a);
    CHECK(NULL == a.data && 0 == a.capacity);
    CHECK(0 == p.lent_bytes && 1024 == p.idle_bytes);

    /* Same class (1000 and 1024 both round to 1024): the same buffer, no new allocation. */
    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 1024, &b));
    CHECK(first == b.data && 1 == p.allocations && 0 == p.idle_bytes);
    /* A smaller result never takes a much larger idle buffer. */
    ftrabit_pool_put(&p, &b);
    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 8, &c));
    CHECK(64 == c.capacity && 2 == p.allocations && 1024 == p.idle_bytes);
    ftrabit_pool_put(&p, &c);

    /* Last given back, first lent. */
    ftrabit_slot_t x[3];
    for (int i = 0; i < 3; i++) {
        CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 4096, &x[i]));
    }
    unsigned char *last = x[2].data;
    for (int i = 0; i < 3; i++) {
        ftrabit_pool_put(&p, &x[i]);
    }
    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 4096, &x[0]));
    CHECK(last == x[0].data);
    ftrabit_pool_put(&p, &x[0]);

    /* Zero bytes still gives a valid buffer; too large a request fails cleanly. */
    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 0, &a) && NULL != a.data);
    ftrabit_pool_put(&p, &a);
    size_t lent = p.lent_bytes;
    CHECK(FTRABIT_POOL_NOMEM == ftrabit_pool_get(&p, SIZE_MAX, &a));
    CHECK(lent == p.lent_bytes);
    ftrabit_pool_put(&p, &a); /* a cleared slot: ignored */
    ftrabit_pool_fini(&p);
    CHECK(0 == p.idle_bytes);
}

/* An application doing the same collectives in every interval: after the first, nothing
 * is allocated, and what the pool holds stays the same. */
static void steady_state_allocates_nothing(void)
{
    const size_t sizes[] = {8, 8, 4096, 1 << 20, 8, 100000};
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    ftrabit_pool_t p;
    ftrabit_slot_t kept[N];
    ftrabit_pool_init(&p, FTRABIT_POOL_NO_LIMIT);
    uint64_t after_first = 0;
    size_t held_first = 0;
    for (int interval = 0; interval < 6; interval++) {
        for (int i = 0; i < N; i++) {
            CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, sizes[i], &kept[i]));
            memset(kept[i].data, interval, sizes[i]); /* pages are touched, as results do */
        }
        for (int i = 0; i < N; i++) {
            ftrabit_pool_put(&p, &kept[i]);
        }
        ftrabit_pool_end_interval(&p);
        if (0 == interval) {
            after_first = p.allocations;
            held_first = p.idle_bytes;
            CHECK(N == after_first);
        }
        CHECK(after_first == p.allocations && held_first == p.idle_bytes);
    }
    ftrabit_pool_fini(&p);
}

/* 16 MiB reduced once, 8 bytes ever since: the 16 MiB go back at the second checkpoint. */
static void a_buffer_unused_for_an_interval_is_freed(void)
{
    ftrabit_pool_t p;
    ftrabit_slot_t big, small;
    ftrabit_pool_init(&p, FTRABIT_POOL_NO_LIMIT);

    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 16u << 20, &big));
    ftrabit_pool_put(&p, &big);    /* dropped at the checkpoint */
    ftrabit_pool_end_interval(&p); /* used in the interval that ends: kept */
    CHECK((16u << 20) == p.idle_bytes);
    int big_class = ftrabit_pool_next_class(&p, -1); /* past the first word of the mask */
    CHECK(big_class >= 64 && (16u << 20) == ftrabit_pool_class_size(big_class));
    CHECK(-1 == ftrabit_pool_next_class(&p, big_class));

    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 8, &small));
    CHECK(64 == small.capacity && (16u << 20) == p.idle_bytes); /* not the big one */
    ftrabit_pool_put(&p, &small);
    CHECK(0 == ftrabit_pool_next_class(&p, -1) && big_class == ftrabit_pool_next_class(&p, 0));
    ftrabit_pool_end_interval(&p); /* the big one sat idle all interval: freed */
    CHECK(64 == p.idle_bytes && -1 == ftrabit_pool_next_class(&p, 0));
    for (int i = 0; i < 3; i++) {
        CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 8, &small));
        ftrabit_pool_put(&p, &small);
        ftrabit_pool_end_interval(&p);
        CHECK(64 == p.idle_bytes && 2 == p.allocations);
    }
    /* An interval with no results at all frees everything. */
    ftrabit_pool_end_interval(&p);
    CHECK(0 == p.idle_bytes);
    ftrabit_pool_fini(&p);
}

static void the_bound_on_idle_bytes_holds(void)
{
    ftrabit_pool_t p;
    ftrabit_slot_t s[8];
    ftrabit_pool_init(&p, 3 * 4096);
    for (int i = 0; i < 8; i++) {
        CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 4096, &s[i]));
    }
    for (int i = 0; i < 8; i++) {
        ftrabit_pool_put(&p, &s[i]);
        CHECK(p.idle_bytes <= 3 * 4096);
    }
    CHECK(3 * 4096 == p.idle_bytes && 0 == p.lent_bytes);

    /* Lowering the bound frees at once, largest classes first. */
    CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 64, &s[0]));
    ftrabit_pool_set_max_idle(&p, FTRABIT_POOL_NO_LIMIT);
    ftrabit_pool_put(&p, &s[0]);
    CHECK(3 * 4096 + 64 == p.idle_bytes);
    ftrabit_pool_set_max_idle(&p, 4096 + 64);
    CHECK(4096 + 64 == p.idle_bytes);
    ftrabit_pool_set_max_idle(&p, 100);
    CHECK(64 == p.idle_bytes);

    /* 0: no pool; every buffer goes back to the system, every get allocates. */
    ftrabit_pool_set_max_idle(&p, 0);
    CHECK(0 == p.idle_bytes);
    uint64_t before = p.allocations;
    for (int i = 0; i < 4; i++) {
        CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, 4096, &s[0]));
        ftrabit_pool_put(&p, &s[0]);
        CHECK(0 == p.idle_bytes);
    }
    CHECK(before + 4 == p.allocations);
    ftrabit_pool_fini(&p);
}

/* Deterministic pseudo-random numbers (xorshift64*), so that failures reproduce. */
static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
    return unit_xorshift64s(&rng_state);
}

/* Random gets, puts and checkpoints: the byte counts always add up, every lent buffer is
 * writable over its whole capacity (valgrind checks), and the idle bytes never exceed
 * the bound. */
static void random_use_keeps_the_accounts(void)
{
    enum { MAXLENT = 64 };
    ftrabit_pool_t p;
    ftrabit_slot_t lent[MAXLENT];
    int n = 0;
    const size_t bound = 200000;
    ftrabit_pool_init(&p, bound);
    memset(lent, 0, sizeof(lent));
    for (int op = 0; op < 20000; op++) {
        uint64_t r = rng() % 16;
        if (r < 7 && n < MAXLENT) {
            size_t len = (size_t) (rng() % (rng() % 2 ? 200 : 70000));
            CHECK(FTRABIT_POOL_OK == ftrabit_pool_get(&p, len, &lent[n]));
            CHECK(lent[n].capacity >= len);
            memset(lent[n].data, (int) op, lent[n].capacity);
            n++;
        } else if (r < 15 && n > 0) {
            int i = (int) (rng() % (uint64_t) n);
            ftrabit_pool_put(&p, &lent[i]);
            lent[i] = lent[--n];
        } else {
            ftrabit_pool_end_interval(&p);
        }
        size_t sum = 0, idle = 0;
        for (int i = 0; i < n; i++) {
            sum += lent[i].capacity;
        }
        int with_stack = 0, visited = 0, prev = -1;
        for (int k = 0; k < FTRABIT_POOL_NCLASSES; k++) {
            idle += p.classes[k].count * ftrabit_pool_class_size(k);
            with_stack += p.classes[k].capacity > 0;
        }
        /* The checkpoint's walk visits exactly the classes with a stack, in order. */
        for (int k = ftrabit_pool_next_class(&p, -1); k >= 0; k = ftrabit_pool_next_class(&p, k)) {
            CHECK(k > prev && p.classes[k].capacity > 0);
            prev = k;
            visited++;
        }
        CHECK(with_stack == visited);
        CHECK(sum == p.lent_bytes);
        CHECK(idle == p.idle_bytes && p.idle_bytes <= bound);
    }
    while (n > 0) {
        ftrabit_pool_put(&p, &lent[--n]);
    }
    CHECK(0 == p.lent_bytes);
    ftrabit_pool_fini(&p);
}

int main(void)
{
    RUN(classes_fit_and_waste_at_most_a_quarter);
    RUN(reuse_within_a_class_only);
    RUN(steady_state_allocates_nothing);
    RUN(a_buffer_unused_for_an_interval_is_freed);
    RUN(the_bound_on_idle_bytes_holds);
    RUN(random_use_keeps_the_accounts);
    UNIT_EXIT();
}
