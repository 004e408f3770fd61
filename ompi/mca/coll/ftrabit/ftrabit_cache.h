/*
 * ompi-resilience: coll/ftrabit result cache (pure logic, no MPI).
 *
 * Results of collectives since the last checkpoint, by sequence number, so that a rank that
 * restarted from that checkpoint (or fell behind) can be served the exact bytes the others
 * got. Entries are copies; the cache owns its memory.
 */
#ifndef FTRABIT_CACHE_H
#define FTRABIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ftrabit_cache_entry {
    uint64_t seq;
    size_t len;
    unsigned char *data;
} ftrabit_cache_entry_t;

typedef struct ftrabit_cache {
    ftrabit_cache_entry_t *entries; /* sorted by seq, no duplicates */
    size_t count, capacity;
    size_t bytes;                   /* sum of entry lengths */
} ftrabit_cache_t;

enum {
    FTRABIT_CACHE_OK = 0,
    FTRABIT_CACHE_NOMEM = -1,
    FTRABIT_CACHE_EXISTS = -2,   /* put: a different result is already stored for this seq */
    FTRABIT_CACHE_MISSING = -3,  /* get: no entry */
    FTRABIT_CACHE_MALFORMED = -4 /* unpack: input is not a well-formed packed range */
};

void ftrabit_cache_init(ftrabit_cache_t *cache);
void ftrabit_cache_fini(ftrabit_cache_t *cache);

/* Store a copy. Storing identical bytes again for the same seq is OK (idempotent). */
int ftrabit_cache_put(ftrabit_cache_t *cache, uint64_t seq, const void *data, size_t len);
/* Borrow a stored entry (valid until the next change of the cache). */
int ftrabit_cache_get(const ftrabit_cache_t *cache, uint64_t seq, const void **data, size_t *len);
/* Forget every entry with seq <= upto (at a checkpoint). */
void ftrabit_cache_drop_through(ftrabit_cache_t *cache, uint64_t upto);
/* Lowest and highest seq held; returns 0 if empty. */
int ftrabit_cache_range(const ftrabit_cache_t *cache, uint64_t *lo, uint64_t *hi);
/* True if every seq in [lo, hi] is held (an empty range, lo > hi, is always held). */
int ftrabit_cache_holds(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi);

/* Serialise the entries with lo <= seq <= hi into one buffer for sending: returns the
 * number of bytes needed (0 only if that does not fit in a size_t); writes them only if
 * `buf` is not NULL and `cap` is large enough. Little-endian, self-describing (u64 count,
 * then per entry u64 seq, u64 len, the bytes; seqs strictly increasing). */
size_t ftrabit_cache_pack(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi, void *buf,
                          size_t cap);
/* Add the entries of a packed buffer (received from another rank: validated, never trusted;
 * on error nothing is added). MALFORMED unless `len` is exactly one packed range as pack
 * writes it; entries already stored with identical bytes are skipped, one stored with
 * different bytes gives FTRABIT_CACHE_EXISTS. */
int ftrabit_cache_unpack(ftrabit_cache_t *cache, const void *buf, size_t len);

/* Which ranks keep the result of `seq` when each result is kept by `replicas` ranks out of
 * `size` (replicas <= 0 or >= size: every rank): ranks (seq + i) mod size, i < replicas,
 * so the memory is spread evenly. */
int ftrabit_cache_is_keeper(uint64_t seq, int rank, int size, int replicas);

#endif
