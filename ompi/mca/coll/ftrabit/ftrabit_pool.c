/*
 * ompi-resilience: coll/ftrabit result buffer pool (pure logic; see the header).
 *
 * One LIFO stack of idle buffers per size class: lending and giving back are O(1), and the
 * buffer lent is the one given back last, the likeliest to still be in the CPU's caches.
 * A stack is ordered by `last_used` (pushes carry the current interval, which only grows),
 * so the buffers a checkpoint frees are a prefix of it.
 */
#include "ftrabit_pool.h"

#include <stdlib.h>
#include <string.h>

/* Index of the class of a result of `len` bytes; -1 if larger than the largest class. */
static int ftrabit_pool_class_of(size_t len)
{
    if (len <= FTRABIT_POOL_MIN_BYTES) {
        return 0;
    }
    uint64_t below = (uint64_t) len - 1; /* 2^e <= below < 2^(e+1), so 2^e < len <= 2^(e+1) */
    int e = 63 - __builtin_clzll(below);
    if (e > 61) {
        return -1;
    }
    uint64_t step = (uint64_t) 1 << (e - 2);
    /* 1..4; a shift, not a division by step: this runs twice per FTR call */
    uint64_t quarters = ((uint64_t) len - ((uint64_t) 1 << e) + step - 1) >> (e - 2);
    return 1 + (e - 6) * 4 + (int) (quarters - 1);
}

size_t ftrabit_pool_class_size(int index)
{
    if (0 == index) {
        return FTRABIT_POOL_MIN_BYTES;
    }
    int e = 6 + (index - 1) / 4;
    uint64_t quarters = (uint64_t) ((index - 1) % 4 + 1);
    return (size_t) (((uint64_t) 1 << e) + quarters * ((uint64_t) 1 << (e - 2)));
}

size_t ftrabit_pool_class_bytes(size_t len)
{
    int index = ftrabit_pool_class_of(len);
    return index < 0 ? 0 : ftrabit_pool_class_size(index);
}

void ftrabit_pool_init(ftrabit_pool_t *pool, size_t max_idle_bytes)
{
    memset(pool, 0, sizeof(*pool));
    pool->max_idle_bytes = max_idle_bytes;
}

/* Free the `n` oldest idle buffers of class `index`. */
static void ftrabit_pool_free_oldest(ftrabit_pool_t *pool, int index, size_t n)
{
    ftrabit_pool_class_t *c = &pool->classes[index];
    for (size_t i = 0; i < n; i++) {
        free(c->idle[i].data);
    }
    memmove(&c->idle[0], &c->idle[n], (c->count - n) * sizeof(c->idle[0]));
    c->count -= n;
    pool->idle_bytes -= n * ftrabit_pool_class_size(index);
}

int ftrabit_pool_next_class(const ftrabit_pool_t *pool, int after)
{
    for (int w = (after + 1) / 64; w < FTRABIT_POOL_MASK_WORDS; w++) {
        uint64_t bits = pool->with_stack[w];
        if (w == (after + 1) / 64) {
            bits &= ~(uint64_t) 0 << ((after + 1) % 64);
        }
        if (bits) {
            return w * 64 + __builtin_ctzll(bits);
        }
    }
    return -1;
}

static void ftrabit_pool_free_stack(ftrabit_pool_t *pool, int index)
{
    free(pool->classes[index].idle);
    pool->classes[index].idle = NULL;
    pool->classes[index].capacity = 0;
    pool->with_stack[index / 64] &= ~((uint64_t) 1 << (index % 64));
}

size_t ftrabit_pool_index_bytes(const ftrabit_pool_t *pool)
{
    size_t bytes = 0;
    for (int i = ftrabit_pool_next_class(pool, -1); i >= 0; i = ftrabit_pool_next_class(pool, i)) {
        bytes += pool->classes[i].capacity * sizeof(ftrabit_pool_idle_t);
    }
    return bytes;
}

void ftrabit_pool_fini(ftrabit_pool_t *pool)
{
    for (int i = ftrabit_pool_next_class(pool, -1); i >= 0; i = ftrabit_pool_next_class(pool, i)) {
        ftrabit_pool_free_oldest(pool, i, pool->classes[i].count);
        ftrabit_pool_free_stack(pool, i);
    }
    size_t lent = pool->lent_bytes;
    ftrabit_pool_init(pool, pool->max_idle_bytes);
    pool->lent_bytes = lent;
}

/* Largest classes first: they give the most memory back for the fewest future faults. */
static void ftrabit_pool_trim_to(ftrabit_pool_t *pool, size_t bound)
{
    for (int i = FTRABIT_POOL_NCLASSES - 1; i >= 0 && pool->idle_bytes > bound; i--) {
        if (0 == pool->classes[i].count) {
            continue;
        }
        size_t bytes = ftrabit_pool_class_size(i);
        size_t over = pool->idle_bytes - bound;
        size_t n = (over + bytes - 1) / bytes;
        ftrabit_pool_free_oldest(pool, i, n < pool->classes[i].count ? n
                                                                    : pool->classes[i].count);
    }
}

void ftrabit_pool_set_max_idle(ftrabit_pool_t *pool, size_t max_idle_bytes)
{
    pool->max_idle_bytes = max_idle_bytes;
    ftrabit_pool_trim_to(pool, max_idle_bytes);
}

int ftrabit_pool_get(ftrabit_pool_t *pool, size_t len, ftrabit_slot_t *slot)
{
    int index = ftrabit_pool_class_of(len);
    if (index < 0) {
        return FTRABIT_POOL_NOMEM;
    }
    size_t bytes = ftrabit_pool_class_size(index);
    ftrabit_pool_class_t *c = &pool->classes[index];
    if (c->count > 0) {
        slot->data = c->idle[--c->count].data;
        pool->idle_bytes -= bytes;
    } else {
        slot->data = malloc(bytes);
        if (NULL == slot->data) {
            return FTRABIT_POOL_NOMEM;
        }
        pool->allocations++;
    }
    slot->capacity = bytes;
    pool->lent_bytes += bytes;
    return FTRABIT_POOL_OK;
}

void ftrabit_pool_put(ftrabit_pool_t *pool, ftrabit_slot_t *slot)
{
    if (NULL == slot->data) {
        return;
    }
    int index = ftrabit_pool_class_of(slot->capacity);
    ftrabit_pool_class_t *c = index >= 0 ? &pool->classes[index] : NULL;
    pool->lent_bytes -= slot->capacity;
    /* Only buffers this pool made (exactly a class's size), and only within the bound. */
    int keep = NULL != c && ftrabit_pool_class_size(index) == slot->capacity
               && pool->idle_bytes <= pool->max_idle_bytes
               && slot->capacity <= pool->max_idle_bytes - pool->idle_bytes;
    if (keep && c->count == c->capacity) {
        size_t cap = c->capacity ? 2 * c->capacity : 8;
        ftrabit_pool_idle_t *grown = realloc(c->idle, cap * sizeof(*grown));
        if (NULL == grown) {
            keep = 0; /* cannot remember it: give it back to the system instead */
        } else {
            c->idle = grown;
            c->capacity = cap;
            pool->with_stack[index / 64] |= (uint64_t) 1 << (index % 64);
        }
    }
    if (keep) {
        c->idle[c->count++] = (ftrabit_pool_idle_t){.data = slot->data,
                                                    .last_used = pool->interval};
        pool->idle_bytes += slot->capacity;
    } else {
        free(slot->data);
    }
    slot->data = NULL;
    slot->capacity = 0;
}

void ftrabit_pool_end_interval(ftrabit_pool_t *pool)
{
    for (int i = ftrabit_pool_next_class(pool, -1); i >= 0; i = ftrabit_pool_next_class(pool, i)) {
        ftrabit_pool_class_t *c = &pool->classes[i];
        size_t stale = 0;
        while (stale < c->count && c->idle[stale].last_used < pool->interval) {
            stale++;
        }
        if (stale > 0) {
            ftrabit_pool_free_oldest(pool, i, stale);
        }
        if (0 == c->count) {
            ftrabit_pool_free_stack(pool, i); /* a class no longer used gives it back too */
        }
    }
    pool->interval++;
}
