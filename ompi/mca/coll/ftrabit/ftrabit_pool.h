/*
 * ompi-resilience: coll/ftrabit result buffer pool (pure logic, no MPI).
 *
 * Every kept result needs a buffer until the next checkpoint, and large fresh buffers are
 * expensive: each first touch of a page is a page fault (about 20 us per 4 KiB page on a
 * VM, more than the collective itself costs per byte). The pool keeps the buffers that a
 * checkpoint frees and lends them to the results of the next checkpoint interval, so that
 * an application that does the same collectives in every interval touches no fresh memory
 * after its first one (Rabit keeps its result buffer's capacity across checkpoints for
 * the same reason).
 *
 * Buffers come in size classes (64 bytes, then four classes per power of two: 2^e times
 * 1.25, 1.5, 1.75, 2), so that a buffer is reused for any result of its class and wastes
 * at most a quarter of its size; an idle buffer is only lent to a result of its own class,
 * never to a much smaller one.
 *
 * How much memory stays idle in the pool:
 *  - at every checkpoint (ftrabit_pool_end_interval), a buffer that no result used during
 *    the interval that just ended is freed. The pool therefore holds at most what the
 *    previous interval needed: a program that reduced 16 MiB once and 8 bytes ever since
 *    gets the 16 MiB back at the second checkpoint after it;
 *  - `max_idle_bytes` bounds the idle buffers at any time (largest freed first). 0 turns
 *    the pool off: every returned buffer is freed (every result is fresh memory again).
 */
#ifndef FTRABIT_POOL_H
#define FTRABIT_POOL_H

#include <stddef.h>
#include <stdint.h>

/* A buffer lent by the pool: `capacity` bytes at `data` (the size of its class). */
typedef struct ftrabit_slot {
    unsigned char *data;
    size_t capacity;
} ftrabit_slot_t;

typedef struct ftrabit_pool_idle {
    unsigned char *data;
    uint64_t last_used; /* interval in which it was last lent or given back */
} ftrabit_pool_idle_t;

/* The idle buffers of one size class, most recently returned last (lent first). */
typedef struct ftrabit_pool_class {
    ftrabit_pool_idle_t *idle;
    size_t count, capacity;
} ftrabit_pool_class_t;

/* Classes: index 0 is 64 bytes; then four per power of two up to 2^62. */
#define FTRABIT_POOL_MIN_BYTES 64
#define FTRABIT_POOL_NCLASSES (1 + 4 * (62 - 6))
#define FTRABIT_POOL_NO_LIMIT SIZE_MAX

#define FTRABIT_POOL_MASK_WORDS ((FTRABIT_POOL_NCLASSES + 63) / 64)

typedef struct ftrabit_pool {
    ftrabit_pool_class_t classes[FTRABIT_POOL_NCLASSES];
    uint64_t with_stack[FTRABIT_POOL_MASK_WORDS]; /* classes whose idle stack is allocated:
                                                     a checkpoint visits only those */
    size_t idle_bytes;     /* capacity of the idle buffers */
    size_t lent_bytes;     /* capacity of the buffers lent and not given back */
    size_t max_idle_bytes; /* FTRABIT_POOL_NO_LIMIT: only the interval rule bounds it */
    uint64_t interval;     /* checkpoint intervals ended so far */
    uint64_t allocations;  /* buffers obtained from malloc (to check reuse in tests) */
} ftrabit_pool_t;

enum {
    FTRABIT_POOL_OK = 0,
    FTRABIT_POOL_NOMEM = -1,
};

void ftrabit_pool_init(ftrabit_pool_t *pool, size_t max_idle_bytes);
/* Frees the idle buffers; lent ones stay their holders' to give back or free. */
void ftrabit_pool_fini(ftrabit_pool_t *pool);
/* Change the bound on idle bytes (frees what is now over it). */
void ftrabit_pool_set_max_idle(ftrabit_pool_t *pool, size_t max_idle_bytes);

/* The capacity of the class a buffer of `len` bytes comes from (0 if too large). */
size_t ftrabit_pool_class_bytes(size_t len);
/* The capacity of the buffers of class `index` (0 <= index < FTRABIT_POOL_NCLASSES). */
size_t ftrabit_pool_class_size(int index);

/* Lend a buffer of at least `len` bytes (never NULL on success, even for len 0): an idle
 * one of the right class if there is one, else a new one. */
int ftrabit_pool_get(ftrabit_pool_t *pool, size_t len, ftrabit_slot_t *slot);
/* Give a lent buffer back (kept idle for reuse, or freed if over the bound). The slot is
 * cleared. A slot with no data is ignored. */
void ftrabit_pool_put(ftrabit_pool_t *pool, ftrabit_slot_t *slot);
/* A checkpoint: free the idle buffers not used in the interval that ends now. */
void ftrabit_pool_end_interval(ftrabit_pool_t *pool);
/* Bytes of the pool's own bookkeeping (the idle stacks). */
size_t ftrabit_pool_index_bytes(const ftrabit_pool_t *pool);

/* Iterate over the classes with an allocated idle stack, lowest first; -1 at the end. */
int ftrabit_pool_next_class(const ftrabit_pool_t *pool, int after);

#endif
