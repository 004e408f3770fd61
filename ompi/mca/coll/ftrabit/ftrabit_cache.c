/*
 * ompi-resilience: coll/ftrabit result cache (pure logic; see the header).
 *
 * A sorted array: results arrive in seq order almost always, so a put is an append in the
 * common case, and lookups are a binary search. Result bytes live in pool buffers; the
 * array keeps its capacity across checkpoints too, and shrinks only when the intervals
 * need much less of it.
 *
 * Wire format of a packed range (all integers little-endian, written byte by byte so that
 * the layout does not depend on the host):
 *   u64 count, then count times { u64 seq, u64 key, u64 len, len bytes }, seqs strictly
 *   increasing.
 */
#include "ftrabit_cache.h"

#include <stdlib.h>
#include <string.h>

#define FTRABIT_CACHE_HEADER_BYTES 8  /* count */
#define FTRABIT_CACHE_ENTRY_BYTES 24  /* seq, key, len: the fixed part of each entry */
#define FTRABIT_CACHE_MIN_CAPACITY 16

static void ftrabit_cache_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

static uint64_t ftrabit_cache_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t) p[i] << (8 * i);
    }
    return v;
}

/* Index of the first entry with seq >= `seq` (count if none). */
static size_t ftrabit_cache_lower_bound(const ftrabit_cache_t *cache, uint64_t seq)
{
    size_t lo = 0, hi = cache->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cache->entries[mid].seq < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Index of the first entry with seq > `seq` (count if none). */
static size_t ftrabit_cache_upper_bound(const ftrabit_cache_t *cache, uint64_t seq)
{
    return UINT64_MAX == seq ? cache->count : ftrabit_cache_lower_bound(cache, seq + 1);
}

static int ftrabit_cache_reserve(ftrabit_cache_t *cache, size_t extra)
{
    if (extra > SIZE_MAX / sizeof(ftrabit_cache_entry_t) - cache->count) {
        return FTRABIT_CACHE_NOMEM;
    }
    size_t need = cache->count + extra;
    if (need <= cache->capacity) {
        return FTRABIT_CACHE_OK;
    }
    size_t cap = cache->capacity ? cache->capacity : FTRABIT_CACHE_MIN_CAPACITY;
    while (cap < need) {
        cap = cap > SIZE_MAX / sizeof(ftrabit_cache_entry_t) / 2 ? need : cap * 2;
    }
    ftrabit_cache_entry_t *grown = realloc(cache->entries, cap * sizeof(*grown));
    if (NULL == grown) {
        return FTRABIT_CACHE_NOMEM;
    }
    cache->entries = grown;
    cache->capacity = cap;
    return FTRABIT_CACHE_OK;
}

/* A pool buffer holding a copy of `len` bytes (never NULL data on success, even for an
 * empty result, so that get hands out a valid pointer). */
static int ftrabit_cache_copy_bytes(ftrabit_cache_t *cache, const void *data, size_t len,
                                    ftrabit_slot_t *slot)
{
    if (FTRABIT_POOL_OK != ftrabit_pool_get(&cache->pool, len, slot)) {
        return FTRABIT_CACHE_NOMEM;
    }
    if (len) {
        memcpy(slot->data, data, len);
    }
    return FTRABIT_CACHE_OK;
}

static void ftrabit_cache_release(ftrabit_cache_t *cache, ftrabit_cache_entry_t *e)
{
    ftrabit_slot_t slot = {.data = e->data, .capacity = e->capacity};
    ftrabit_pool_put(&cache->pool, &slot);
    e->data = NULL;
}

static int ftrabit_cache_same_result(const ftrabit_cache_entry_t *e, uint64_t key,
                                     const void *data, size_t len)
{
    return e->key == key && e->len == len && (0 == len || 0 == memcmp(e->data, data, len));
}

void ftrabit_cache_init(ftrabit_cache_t *cache)
{
    memset(cache, 0, sizeof(*cache));
    ftrabit_pool_init(&cache->pool, FTRABIT_POOL_NO_LIMIT);
}

void ftrabit_cache_fini(ftrabit_cache_t *cache)
{
    for (size_t i = 0; i < cache->count; i++) {
        free(cache->entries[i].data);
    }
    free(cache->entries);
    ftrabit_pool_fini(&cache->pool);
    ftrabit_cache_init(cache);
}

void ftrabit_cache_set_pool_limit(ftrabit_cache_t *cache, size_t max_idle_bytes)
{
    ftrabit_pool_set_max_idle(&cache->pool, max_idle_bytes);
}

int ftrabit_cache_slot(ftrabit_cache_t *cache, size_t len, ftrabit_slot_t *slot)
{
    return FTRABIT_POOL_OK == ftrabit_pool_get(&cache->pool, len, slot) ? FTRABIT_CACHE_OK
                                                                        : FTRABIT_CACHE_NOMEM;
}

void ftrabit_cache_return_slot(ftrabit_cache_t *cache, ftrabit_slot_t *slot)
{
    ftrabit_pool_put(&cache->pool, slot);
}

/* Insert a new entry at index `at` (where lower_bound put it); capacity is reserved. */
static void ftrabit_cache_insert_at(ftrabit_cache_t *cache, size_t at, uint64_t seq,
                                    uint64_t key, ftrabit_slot_t *slot, size_t len)
{
    if (at < cache->count) { /* results mostly come in order: an append moves nothing */
        memmove(&cache->entries[at + 1], &cache->entries[at],
                (cache->count - at) * sizeof(ftrabit_cache_entry_t));
    }
    cache->entries[at] = (ftrabit_cache_entry_t){
        .seq = seq, .key = key, .len = len, .data = slot->data, .capacity = slot->capacity};
    slot->data = NULL;
    slot->capacity = 0;
    cache->count++;
    cache->bytes += len;
    if (cache->count > cache->peak_count) {
        cache->peak_count = cache->count;
    }
}

int ftrabit_cache_put_slot(ftrabit_cache_t *cache, uint64_t seq, uint64_t key,
                           ftrabit_slot_t *slot, size_t len)
{
    /* Results come in seq order: the common case appends, without a search. */
    size_t at = 0 == cache->count || cache->entries[cache->count - 1].seq < seq
                    ? cache->count
                    : ftrabit_cache_lower_bound(cache, seq);
    int rc = FTRABIT_CACHE_OK;
    if (NULL == slot->data || len > slot->capacity) {
        rc = FTRABIT_CACHE_MALFORMED;
    } else if (at < cache->count && cache->entries[at].seq == seq) {
        /* Served twice (e.g. by replay and by a keeper): harmless if it is the same result. */
        rc = ftrabit_cache_same_result(&cache->entries[at], key, slot->data, len)
                 ? FTRABIT_CACHE_OK : FTRABIT_CACHE_EXISTS;
    } else if (cache->count == cache->capacity
               && FTRABIT_CACHE_OK != ftrabit_cache_reserve(cache, 1)) {
        rc = FTRABIT_CACHE_NOMEM;
    } else {
        ftrabit_cache_insert_at(cache, at, seq, key, slot, len);
        return FTRABIT_CACHE_OK;
    }
    ftrabit_pool_put(&cache->pool, slot);
    return rc;
}

int ftrabit_cache_put(ftrabit_cache_t *cache, uint64_t seq, uint64_t key, const void *data,
                      size_t len)
{
    size_t at = ftrabit_cache_lower_bound(cache, seq);
    ftrabit_slot_t slot;
    if (at < cache->count && cache->entries[at].seq == seq) {
        return ftrabit_cache_same_result(&cache->entries[at], key, data, len)
                   ? FTRABIT_CACHE_OK : FTRABIT_CACHE_EXISTS;
    }
    if (FTRABIT_CACHE_OK != ftrabit_cache_copy_bytes(cache, data, len, &slot)) {
        return FTRABIT_CACHE_NOMEM;
    }
    return ftrabit_cache_put_slot(cache, seq, key, &slot, len);
}

int ftrabit_cache_get(const ftrabit_cache_t *cache, uint64_t seq, uint64_t *key,
                      const void **data, size_t *len)
{
    size_t at = ftrabit_cache_lower_bound(cache, seq);
    if (at == cache->count || cache->entries[at].seq != seq) {
        return FTRABIT_CACHE_MISSING;
    }
    *key = cache->entries[at].key;
    *data = cache->entries[at].data;
    *len = cache->entries[at].len;
    return FTRABIT_CACHE_OK;
}

/* At a checkpoint: keep the array's capacity for the next interval (no allocation per
 * interval), unless neither the interval that just ended nor what is left needed even a
 * quarter of it. */
static void ftrabit_cache_shrink(ftrabit_cache_t *cache)
{
    size_t need = cache->peak_count > cache->count ? cache->peak_count : cache->count;
    cache->peak_count = cache->count;
    if (cache->capacity <= FTRABIT_CACHE_MIN_CAPACITY || need > cache->capacity / 4) {
        return;
    }
    size_t cap = need * 2 < FTRABIT_CACHE_MIN_CAPACITY ? FTRABIT_CACHE_MIN_CAPACITY : need * 2;
    ftrabit_cache_entry_t *smaller = realloc(cache->entries, cap * sizeof(*smaller));
    if (NULL != smaller) { /* if not, keeping the larger array is fine */
        cache->entries = smaller;
        cache->capacity = cap;
    }
}

void ftrabit_cache_drop_through(ftrabit_cache_t *cache, uint64_t upto)
{
    size_t n = ftrabit_cache_upper_bound(cache, upto);
    for (size_t i = 0; i < n; i++) {
        cache->bytes -= cache->entries[i].len;
        ftrabit_cache_release(cache, &cache->entries[i]);
    }
    if (n > 0) {
        memmove(&cache->entries[0], &cache->entries[n],
                (cache->count - n) * sizeof(ftrabit_cache_entry_t));
        cache->count -= n;
    }
    ftrabit_cache_shrink(cache);
    ftrabit_pool_end_interval(&cache->pool);
}

void ftrabit_cache_memory(const ftrabit_cache_t *cache, ftrabit_cache_memory_t *out)
{
    const ftrabit_pool_t *pool = &cache->pool;
    size_t index_bytes = cache->capacity * sizeof(ftrabit_cache_entry_t)
                         + ftrabit_pool_index_bytes(pool);
    out->results = cache->count;
    out->result_bytes = cache->bytes;
    out->idle_bytes = pool->idle_bytes;
    out->held_bytes = pool->lent_bytes + pool->idle_bytes + index_bytes;
}

int ftrabit_cache_range(const ftrabit_cache_t *cache, uint64_t *lo, uint64_t *hi)
{
    if (0 == cache->count) {
        return 0;
    }
    *lo = cache->entries[0].seq;
    *hi = cache->entries[cache->count - 1].seq;
    return 1;
}

int ftrabit_cache_holds(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi)
{
    if (lo > hi) {
        return 1;
    }
    size_t at = ftrabit_cache_lower_bound(cache, lo);
    if (at == cache->count || cache->entries[at].seq != lo) {
        return 0;
    }
    /* Seqs are distinct and sorted: [lo, hi] is all there iff hi sits hi - lo places on. */
    uint64_t span = hi - lo;
    if (span >= (uint64_t) (cache->count - at)) {
        return 0;
    }
    return cache->entries[at + (size_t) span].seq == hi;
}

size_t ftrabit_cache_pack(const ftrabit_cache_t *cache, uint64_t lo, uint64_t hi, void *buf,
                          size_t cap)
{
    size_t first = ftrabit_cache_lower_bound(cache, lo);
    size_t end = lo > hi ? first : ftrabit_cache_upper_bound(cache, hi);
    size_t need = FTRABIT_CACHE_HEADER_BYTES;

    for (size_t i = first; i < end; i++) {
        size_t len = cache->entries[i].len;
        if (len > SIZE_MAX - FTRABIT_CACHE_ENTRY_BYTES - need) {
            return 0;
        }
        need += FTRABIT_CACHE_ENTRY_BYTES + len;
    }
    if (NULL == buf || cap < need) {
        return need;
    }
    unsigned char *p = buf;
    ftrabit_cache_put_u64(p, (uint64_t) (end - first));
    p += FTRABIT_CACHE_HEADER_BYTES;
    for (size_t i = first; i < end; i++) {
        const ftrabit_cache_entry_t *e = &cache->entries[i];
        ftrabit_cache_put_u64(p, e->seq);
        ftrabit_cache_put_u64(p + 8, e->key);
        ftrabit_cache_put_u64(p + 16, (uint64_t) e->len);
        p += FTRABIT_CACHE_ENTRY_BYTES;
        if (e->len) {
            memcpy(p, e->data, e->len);
        }
        p += e->len;
    }
    return need;
}

/* One entry of a packed buffer, pointing into that buffer. */
typedef struct ftrabit_cache_wire_entry {
    uint64_t seq, key;
    size_t len;
    const unsigned char *data;
    int is_new; /* not stored yet (as opposed to an identical copy of a stored entry) */
} ftrabit_cache_wire_entry_t;

/* Parse and check the structure of a packed buffer; *out (allocated) gets the entries.
 * Every length is checked against what is left before it is used. */
static int ftrabit_cache_parse(const unsigned char *p, size_t len,
                               ftrabit_cache_wire_entry_t **out, size_t *out_count)
{
    *out = NULL;
    *out_count = 0;
    if (len < FTRABIT_CACHE_HEADER_BYTES) {
        return FTRABIT_CACHE_MALFORMED;
    }
    uint64_t count = ftrabit_cache_get_u64(p);
    size_t left = len - FTRABIT_CACHE_HEADER_BYTES;
    /* Bounds the allocation below by the input size, whatever the count claims. */
    if (count > left / FTRABIT_CACHE_ENTRY_BYTES) {
        return FTRABIT_CACHE_MALFORMED;
    }
    if (0 == count) {
        return 0 == left ? FTRABIT_CACHE_OK : FTRABIT_CACHE_MALFORMED;
    }
    ftrabit_cache_wire_entry_t *w = malloc((size_t) count * sizeof(*w));
    if (NULL == w) {
        return FTRABIT_CACHE_NOMEM;
    }
    p += FTRABIT_CACHE_HEADER_BYTES;
    for (size_t i = 0; i < count; i++) {
        if (left < FTRABIT_CACHE_ENTRY_BYTES) {
            free(w);
            return FTRABIT_CACHE_MALFORMED;
        }
        uint64_t seq = ftrabit_cache_get_u64(p);
        uint64_t key = ftrabit_cache_get_u64(p + 8);
        uint64_t elen = ftrabit_cache_get_u64(p + 16);
        p += FTRABIT_CACHE_ENTRY_BYTES;
        left -= FTRABIT_CACHE_ENTRY_BYTES;
        if (elen > left || (i > 0 && seq <= w[i - 1].seq)) {
            free(w);
            return FTRABIT_CACHE_MALFORMED;
        }
        w[i] = (ftrabit_cache_wire_entry_t){
            .seq = seq, .key = key, .len = (size_t) elen, .data = p};
        p += elen;
        left -= (size_t) elen;
    }
    if (0 != left) {
        free(w);
        return FTRABIT_CACHE_MALFORMED;
    }
    *out = w;
    *out_count = (size_t) count;
    return FTRABIT_CACHE_OK;
}

/* Mark which wire entries are new; fail if one contradicts a stored entry. */
static int ftrabit_cache_classify(const ftrabit_cache_t *cache, ftrabit_cache_wire_entry_t *w,
                                  size_t n, size_t *nnew)
{
    *nnew = 0;
    for (size_t i = 0; i < n; i++) {
        size_t at = ftrabit_cache_lower_bound(cache, w[i].seq);
        w[i].is_new = at == cache->count || cache->entries[at].seq != w[i].seq;
        if (!w[i].is_new
            && !ftrabit_cache_same_result(&cache->entries[at], w[i].key, w[i].data, w[i].len)) {
            return FTRABIT_CACHE_EXISTS;
        }
        *nnew += w[i].is_new ? 1 : 0;
    }
    return FTRABIT_CACHE_OK;
}

/* Merge the new wire entries (sorted, copies in `copies`) into the sorted array, from the
 * back so that nothing is overwritten before it moved; capacity is already reserved. */
static void ftrabit_cache_merge(ftrabit_cache_t *cache, const ftrabit_cache_wire_entry_t *w,
                                size_t n, ftrabit_slot_t *copies, size_t nnew)
{
    size_t old = cache->count, dst = old + nnew, wi = n, ci = nnew;
    while (ci > 0) {
        do {
            wi--;
        } while (!w[wi].is_new);
        while (old > 0 && cache->entries[old - 1].seq > w[wi].seq) {
            cache->entries[--dst] = cache->entries[--old];
        }
        ci--;
        cache->entries[--dst] = (ftrabit_cache_entry_t){.seq = w[wi].seq, .key = w[wi].key,
                                                        .len = w[wi].len,
                                                        .data = copies[ci].data,
                                                        .capacity = copies[ci].capacity};
        cache->bytes += w[wi].len;
    }
    cache->count += nnew;
    if (cache->count > cache->peak_count) {
        cache->peak_count = cache->count;
    }
}

int ftrabit_cache_conflict(const ftrabit_cache_t *cache, const void *buf, size_t len,
                           uint64_t *seq, uint64_t *key, size_t *bytes)
{
    ftrabit_cache_wire_entry_t *w;
    size_t n, i;

    if (NULL == buf || FTRABIT_CACHE_OK != ftrabit_cache_parse(buf, len, &w, &n)) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        size_t at = ftrabit_cache_lower_bound(cache, w[i].seq);
        if (at < cache->count && cache->entries[at].seq == w[i].seq
            && !ftrabit_cache_same_result(&cache->entries[at], w[i].key, w[i].data, w[i].len)) {
            *seq = w[i].seq;
            *key = w[i].key;
            *bytes = w[i].len;
            break;
        }
    }
    free(w);
    return i < n;
}

int ftrabit_cache_unpack(ftrabit_cache_t *cache, const void *buf, size_t len)
{
    ftrabit_cache_wire_entry_t *w;
    size_t n, nnew;
    int rc = NULL == buf ? FTRABIT_CACHE_MALFORMED : ftrabit_cache_parse(buf, len, &w, &n);
    if (FTRABIT_CACHE_OK != rc) {
        return rc;
    }
    rc = ftrabit_cache_classify(cache, w, n, &nnew);
    if (FTRABIT_CACHE_OK != rc || 0 == nnew) {
        free(w);
        return rc;
    }
    /* Everything that can fail happens before the cache changes: all or nothing. */
    ftrabit_slot_t *copies = calloc(nnew, sizeof(*copies));
    size_t made = 0;
    for (size_t i = 0; NULL != copies && i < n; i++) {
        if (w[i].is_new) {
            if (FTRABIT_CACHE_OK
                != ftrabit_cache_copy_bytes(cache, w[i].data, w[i].len, &copies[made])) {
                break;
            }
            made++;
        }
    }
    if (made == nnew && FTRABIT_CACHE_OK == ftrabit_cache_reserve(cache, nnew)) {
        ftrabit_cache_merge(cache, w, n, copies, nnew);
    } else {
        for (size_t i = 0; i < made; i++) {
            ftrabit_pool_put(&cache->pool, &copies[i]);
        }
        rc = FTRABIT_CACHE_NOMEM;
    }
    free(copies);
    free(w);
    return rc;
}

int ftrabit_cache_is_keeper(uint64_t seq, int rank, int size, int replicas)
{
    if (size <= 0 || rank < 0 || rank >= size) {
        return 0;
    }
    if (replicas <= 0 || replicas >= size) {
        return 1;
    }
    /* rank == (seq + i) mod size for some i < replicas  <=>  (rank - seq) mod size < replicas */
    uint64_t n = (uint64_t) size;
    uint64_t distance = ((uint64_t) rank + n - seq % n) % n;
    return distance < (uint64_t) replicas;
}
