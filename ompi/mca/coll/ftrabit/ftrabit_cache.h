/*
 * ompi-resilience: coll/ftrabit result cache (pure logic, no MPI).
 *
 * Results of collectives since the last checkpoint, by sequence number, so that a rank that
 * restarted from that checkpoint (or fell behind) can be served the exact bytes the others
 * got. Entries are copies; the cache owns its memory. The buffers holding them come from
 * a pool (ftrabit_pool.h) that keeps them across checkpoints, so that steady state touches
 * no fresh memory; a caller can borrow one of them (ftrabit_cache_slot), write a result
 * straight into it and hand it to the cache (ftrabit_cache_put_slot): one copy fewer.
 */
#ifndef FTRABIT_CACHE_H
#define FTRABIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ftrabit_pool.h"

typedef struct ftrabit_cache_entry {
    uint64_t seq;
    uint64_t key;                   /* what the call was, besides its data (FTRABIT_KEY_*) */
    size_t len;
    unsigned char *data;            /* a pool buffer of `capacity` >= len bytes */
    size_t capacity;
} ftrabit_cache_entry_t;

typedef struct ftrabit_cache {
    ftrabit_cache_entry_t *entries; /* sorted by seq, no duplicates */
    size_t count, capacity;
    size_t bytes;                   /* sum of entry lengths */
    size_t peak_count;              /* most entries held since the last drop_through */
    ftrabit_pool_t pool;            /* buffers of entries, and idle ones for reuse */
} ftrabit_cache_t;

/* What a cache holds in memory: the results, and the memory that holds them. */
typedef struct ftrabit_cache_memory {
    size_t results;      /* entries */
    size_t result_bytes; /* sum of their lengths */
    size_t held_bytes;   /* all of it: entry buffers, idle and lent pool buffers, index */
    size_t idle_bytes;   /* of which idle pool buffers, kept for reuse */
} ftrabit_cache_memory_t;

/* The key of a result: the kind of collective and what decides its result besides the
 * data - the reduction op's id, or the broadcast root's original rank (which renumbering
 * by shrink keeps). A call served from the cache must name the same. */
enum { FTRABIT_KEY_ALLREDUCE = 1, FTRABIT_KEY_BCAST = 2 };

static inline uint64_t ftrabit_key(int kind, uint32_t op_or_root)
{
    return ((uint64_t) kind << 32) | op_or_root;
}

static inline int ftrabit_key_kind(uint64_t key)
{
    return (int) (key >> 32);
}

static inline uint32_t ftrabit_key_value(uint64_t key)
{
    return (uint32_t) key;
}

enum {
    FTRABIT_CACHE_OK = 0,
    FTRABIT_CACHE_NOMEM = -1,
    FTRABIT_CACHE_EXISTS = -2,   /* put: a different result is already stored for this seq */
    FTRABIT_CACHE_MISSING = -3,  /* get: no entry */
    FTRABIT_CACHE_MALFORMED = -4 /* unpack: input is not a well-formed packed range */
};

void ftrabit_cache_init(ftrabit_cache_t *cache);
void ftrabit_cache_fini(ftrabit_cache_t *cache);
/* Bound the idle buffers kept for reuse (FTRABIT_POOL_NO_LIMIT by default, 0: none). */
void ftrabit_cache_set_pool_limit(ftrabit_cache_t *cache, size_t max_idle_bytes);

/* Store a copy. Storing the same key and bytes again for the same seq is OK (idempotent). */
int ftrabit_cache_put(ftrabit_cache_t *cache, uint64_t seq, uint64_t key, const void *data,
                      size_t len);
/* Borrow a buffer of at least `len` bytes from the cache's pool (never NULL on success):
 * to build a result in before ftrabit_cache_put_slot, or as scratch to give back with
 * ftrabit_cache_return_slot. */
int ftrabit_cache_slot(ftrabit_cache_t *cache, size_t len, ftrabit_slot_t *slot);
/* Store the first `len` bytes of a borrowed slot as the result of `seq`, without copying.
 * The cache takes the slot in every case (it is cleared): on NOMEM, or when `seq` is
 * already stored (OK if with the same key and bytes, EXISTS if not), it goes back to the
 * pool. */
int ftrabit_cache_put_slot(ftrabit_cache_t *cache, uint64_t seq, uint64_t key,
                           ftrabit_slot_t *slot, size_t len);
void ftrabit_cache_return_slot(ftrabit_cache_t *cache, ftrabit_slot_t *slot);
/* Borrow a stored entry (valid until the next change of the cache). */
int ftrabit_cache_get(const ftrabit_cache_t *cache, uint64_t seq, uint64_t *key,
                      const void **data, size_t *len);
/* Forget every entry with seq <= upto: at a checkpoint, which also ends an interval of
 * the pool (its buffers unused since the previous checkpoint are freed). */
void ftrabit_cache_drop_through(ftrabit_cache_t *cache, uint64_t upto);
void ftrabit_cache_memory(const ftrabit_cache_t *cache, ftrabit_cache_memory_t *out);
/* Lowest and highest seq held; returns 0 if empty. */
int ftrabit_cache_range(const ftrabit_cache_t *cache, uint64_t *lo, uint64_t *hi);
/* True if every seq in [lo, hi] is held (an empty range, lo > hi, is always held). */
int ftrabit_cache_holds(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi);

/* Serialise the entries with lo <= seq <= hi into one buffer for sending: returns the
 * number of bytes needed (0 only if that does not fit in a size_t); writes them only if
 * `buf` is not NULL and `cap` is large enough. Little-endian, self-describing (u64 count,
 * then per entry u64 seq, u64 key, u64 len, the bytes; seqs strictly increasing). */
size_t ftrabit_cache_pack(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi, void *buf,
                          size_t cap);
/* Add the entries of a packed buffer (received from another rank: validated, never trusted;
 * on error nothing is added). MALFORMED unless `len` is exactly one packed range as pack
 * writes it; entries already stored with the same key and bytes are skipped, one stored
 * with another key or other bytes gives FTRABIT_CACHE_EXISTS. */
int ftrabit_cache_unpack(ftrabit_cache_t *cache, const void *buf, size_t len);
/* After FTRABIT_CACHE_EXISTS from unpack: the first received entry that differs from the
 * one stored for its seq (its seq, key and length), for a diagnosis; 0 if none. */
int ftrabit_cache_conflict(const ftrabit_cache_t *cache, const void *buf, size_t len,
                           uint64_t *seq, uint64_t *key, size_t *bytes);

/* Which ranks keep the result of `seq` when each result is kept by `replicas` ranks out of
 * `size` (replicas <= 0 or >= size: every rank): ranks (seq + i) mod size, i < replicas,
 * so the memory is spread evenly. */
int ftrabit_cache_is_keeper(uint64_t seq, int rank, int size, int replicas);

#endif
