/*
 * Unit tests of coll/ftrabit's result cache: ordering, idempotent puts, exact byte
 * accounting, dropping at a checkpoint, the packed wire format (explicit little-endian
 * layout, and every malformed input refused with nothing added), keeper placement, and
 * the memory behaviour: results built in borrowed pool buffers, nothing allocated at
 * steady state across checkpoints, memory reported exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_cache.h"
#include "unit.h"

/* Deterministic pseudo-random numbers (xorshift64*), so that failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    return unit_xorshift64s(&rng_state);
}

/* The result a test stores for `seq`: its length and bytes both depend on seq. */
static size_t result_len(uint64_t seq)
{
    return (size_t) (seq * 7 % 23);
}

static void result_bytes(uint64_t seq, unsigned char *out)
{
    for (size_t i = 0; i < result_len(seq); i++) {
        out[i] = (unsigned char) (seq * 31 + i);
    }
}

/* The key a test result is stored under: broadcasts from varying roots, so that a key
 * that does not travel with its result through pack and unpack shows. */
static uint64_t key_of(uint64_t seq)
{
    return ftrabit_key(FTRABIT_KEY_BCAST, (uint32_t) (seq % 7));
}

#define KEY ftrabit_key(FTRABIT_KEY_ALLREDUCE, 3)
static uint64_t got_key; /* what ftrabit_cache_get says an entry's key is */

static int put_result(ftrabit_cache_t *c, uint64_t seq)
{
    unsigned char b[32];
    result_bytes(seq, b);
    return ftrabit_cache_put(c, seq, key_of(seq), b, result_len(seq));
}

static int holds_result(const ftrabit_cache_t *c, uint64_t seq)
{
    unsigned char want[32];
    const void *data;
    size_t len;
    result_bytes(seq, want);
    return FTRABIT_CACHE_OK == ftrabit_cache_get(c, seq, &got_key, &data, &len)
           && got_key == key_of(seq) && len == result_len(seq) && 0 == memcmp(data, want, len);
}

/* Sorted, distinct, and `bytes` is the exact sum of the lengths. */
static int invariants_hold(const ftrabit_cache_t *c)
{
    size_t sum = 0;
    for (size_t i = 0; i < c->count; i++) {
        if ((i > 0 && c->entries[i - 1].seq >= c->entries[i].seq) || NULL == c->entries[i].data) {
            return 0;
        }
        sum += c->entries[i].len;
    }
    return sum == c->bytes && c->count <= c->capacity;
}

static int same_contents(const ftrabit_cache_t *a, const ftrabit_cache_t *b)
{
    if (a->count != b->count || a->bytes != b->bytes) {
        return 0;
    }
    for (size_t i = 0; i < a->count; i++) {
        const ftrabit_cache_entry_t *x = &a->entries[i], *y = &b->entries[i];
        if (x->seq != y->seq || x->key != y->key || x->len != y->len
            || (x->len && memcmp(x->data, y->data, x->len))) {
            return 0;
        }
    }
    return 1;
}

static void empty_cache(void)
{
    ftrabit_cache_t c;
    uint64_t lo = 7, hi = 7;
    const void *data = NULL;
    size_t len = 0;

    ftrabit_cache_init(&c);
    CHECK(0 == c.count && 0 == c.bytes);
    CHECK(0 == ftrabit_cache_range(&c, &lo, &hi));
    CHECK(7 == lo && 7 == hi);
    CHECK(FTRABIT_CACHE_MISSING == ftrabit_cache_get(&c, 0, &got_key, &data, &len));
    CHECK(ftrabit_cache_holds(&c, 5, 4));
    CHECK(!ftrabit_cache_holds(&c, 1, 1));
    ftrabit_cache_drop_through(&c, UINT64_MAX);
    CHECK(0 == c.count);
    ftrabit_cache_fini(&c);
    ftrabit_cache_fini(&c); /* fini leaves an empty cache: a second one is harmless */
}

static void put_get_in_any_order(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    const uint64_t seqs[] = {5, 1, 9, 3, 7, 2, 8, 4, 6, 0, UINT64_MAX};
    size_t bytes = 0;
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        CHECK(FTRABIT_CACHE_OK == put_result(&c, seqs[i]));
        bytes += result_len(seqs[i]);
        CHECK(c.bytes == bytes);
        CHECK(invariants_hold(&c));
    }
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        CHECK(holds_result(&c, seqs[i]));
    }
    uint64_t lo, hi;
    CHECK(ftrabit_cache_range(&c, &lo, &hi) && 0 == lo && UINT64_MAX == hi);
    const void *data;
    size_t len;
    CHECK(FTRABIT_CACHE_MISSING == ftrabit_cache_get(&c, 10, &got_key, &data, &len));
    CHECK(FTRABIT_CACHE_MISSING == ftrabit_cache_get(&c, UINT64_MAX - 1, &got_key, &data, &len));
    ftrabit_cache_fini(&c);
}

static void put_is_idempotent_and_refuses_other_results(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    const unsigned char a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5};
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, 10, KEY, a, 4));
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, 10, KEY, a, 4));
    CHECK(1 == c.count && 4 == c.bytes);
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put(&c, 10, KEY, b, 4));
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put(&c, 10, KEY, a, 3));
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put(&c, 10, KEY, NULL, 0));
    /* The same bytes from another root or op are another result. */
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put(&c, 10, KEY + 1, a, 4));
    CHECK(FTRABIT_CACHE_EXISTS
          == ftrabit_cache_put(&c, 10, ftrabit_key(FTRABIT_KEY_BCAST, 3), a, 4));
    CHECK(1 == c.count && 4 == c.bytes);
    const void *kept;
    size_t kept_len;
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_get(&c, 10, &got_key, &kept, &kept_len));
    CHECK(KEY == got_key && 4 == kept_len);

    /* An empty result is a result: stored, gettable with a valid pointer, idempotent. */
    const void *data = NULL;
    size_t len = 99;
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, 11, KEY, NULL, 0));
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, 11, KEY, a, 0));
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put(&c, 11, KEY, a, 1));
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_get(&c, 11, &got_key, &data, &len));
    CHECK(NULL != data && 0 == len);
    CHECK(2 == c.count && 4 == c.bytes);

    /* The cache holds a copy: changing the caller's buffer changes nothing. */
    unsigned char mine[3] = {7, 8, 9};
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, 12, KEY, mine, 3));
    mine[0] = 0;
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_get(&c, 12, &got_key, &data, &len));
    CHECK(3 == len && 7 == ((const unsigned char *) data)[0]);
    ftrabit_cache_fini(&c);
}

static void drop_through_frees_and_accounts(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    for (uint64_t s = 1; s <= 1000; s++) {
        CHECK(FTRABIT_CACHE_OK == put_result(&c, s));
    }
    size_t cap_before = c.capacity;
    ftrabit_cache_drop_through(&c, 0);
    CHECK(1000 == c.count);
    ftrabit_cache_drop_through(&c, 990);
    CHECK(10 == c.count && invariants_hold(&c));
    CHECK(c.capacity == cap_before); /* the interval that just ended needed it all */
    size_t bytes = 0;
    for (uint64_t s = 991; s <= 1000; s++) {
        bytes += result_len(s);
        CHECK(holds_result(&c, s));
    }
    CHECK(c.bytes == bytes);
    uint64_t lo, hi;
    CHECK(ftrabit_cache_range(&c, &lo, &hi) && 991 == lo && 1000 == hi);
    ftrabit_cache_drop_through(&c, 995);
    CHECK(ftrabit_cache_range(&c, &lo, &hi) && 996 == lo && 1000 == hi);
    CHECK(c.capacity < cap_before); /* two intervals needed 10: the array shrinks */
    ftrabit_cache_drop_through(&c, UINT64_MAX);
    CHECK(0 == c.count && 0 == c.bytes);
    ftrabit_cache_drop_through(&c, UINT64_MAX);
    ftrabit_cache_drop_through(&c, UINT64_MAX);
    ftrabit_cache_memory_t m;
    ftrabit_cache_memory(&c, &m);
    CHECK(0 == m.idle_bytes && 0 == m.result_bytes); /* idle intervals give buffers back */
    CHECK(!ftrabit_cache_range(&c, &lo, &hi));
    /* Still usable afterwards. */
    CHECK(FTRABIT_CACHE_OK == put_result(&c, 2000) && holds_result(&c, 2000));
    ftrabit_cache_fini(&c);
}

static void holds_ranges(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    for (uint64_t s = 10; s <= 20; s++) {
        if (15 != s) {
            put_result(&c, s);
        }
    }
    CHECK(ftrabit_cache_holds(&c, 10, 14));
    CHECK(ftrabit_cache_holds(&c, 16, 20));
    CHECK(ftrabit_cache_holds(&c, 12, 12));
    CHECK(!ftrabit_cache_holds(&c, 10, 15));
    CHECK(!ftrabit_cache_holds(&c, 14, 16));
    CHECK(!ftrabit_cache_holds(&c, 9, 10));
    CHECK(!ftrabit_cache_holds(&c, 20, 21));
    CHECK(!ftrabit_cache_holds(&c, 16, UINT64_MAX));
    CHECK(!ftrabit_cache_holds(&c, 0, UINT64_MAX));
    CHECK(ftrabit_cache_holds(&c, 21, 20));
    CHECK(ftrabit_cache_holds(&c, UINT64_MAX, 0));
    put_result(&c, UINT64_MAX);
    CHECK(ftrabit_cache_holds(&c, UINT64_MAX, UINT64_MAX));
    CHECK(!ftrabit_cache_holds(&c, 20, UINT64_MAX));
    ftrabit_cache_fini(&c);
}

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

/* The layout is fixed byte by byte, whatever the host. */
static void pack_layout_is_little_endian(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    const unsigned char x[3] = {0xaa, 0xbb, 0xcc};
    ftrabit_cache_put(&c, 0x0102030405060708ull, KEY, x, 3);
    ftrabit_cache_put(&c, 0x0102030405060709ull, KEY, x, 0);
    unsigned char buf[80];
    memset(buf, 0xee, sizeof(buf));
    size_t need = ftrabit_cache_pack(&c, 0, UINT64_MAX, buf, sizeof(buf));
    CHECK(8 + 24 + 3 + 24 == need);
    const unsigned char expect[] = {2, 0, 0, 0, 0, 0, 0, 0,                   /* count */
                                    8, 7, 6, 5, 4, 3, 2, 1, 3, 0, 0, 0, 1, 0, 0, 0, /* seq, key */
                                    3, 0, 0, 0, 0, 0, 0, 0,                   /* len */
                                    0xaa, 0xbb, 0xcc,                         /* bytes */
                                    9, 7, 6, 5, 4, 3, 2, 1, 3, 0, 0, 0, 1, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 0};
    CHECK(sizeof(expect) == need && 0 == memcmp(buf, expect, need));
    CHECK(0xee == buf[need]); /* nothing written past the end */
    CHECK(2 == read_le64(buf));
    ftrabit_cache_fini(&c);
}

static void pack_size_query_and_short_buffer(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    for (uint64_t s = 1; s <= 10; s++) {
        put_result(&c, s);
    }
    size_t need = ftrabit_cache_pack(&c, 3, 6, NULL, 0);
    size_t expect = 8;
    for (uint64_t s = 3; s <= 6; s++) {
        expect += 24 + result_len(s);
    }
    CHECK(need == expect);
    unsigned char *buf = malloc(need);
    memset(buf, 0x5a, need);
    CHECK(need == ftrabit_cache_pack(&c, 3, 6, buf, need - 1));
    for (size_t i = 0; i < need; i++) {
        CHECK(0x5a == buf[i]); /* too small: untouched */
    }
    CHECK(need == ftrabit_cache_pack(&c, 3, 6, buf, need));
    CHECK(4 == read_le64(buf));
    free(buf);
    /* Empty ranges pack to a bare count. */
    unsigned char small[8];
    CHECK(8 == ftrabit_cache_pack(&c, 6, 3, small, sizeof(small)) && 0 == read_le64(small));
    CHECK(8 == ftrabit_cache_pack(&c, 11, 100, small, sizeof(small)) && 0 == read_le64(small));
    CHECK(8 + 24 + result_len(10) == ftrabit_cache_pack(&c, 10, UINT64_MAX, NULL, 0));
    ftrabit_cache_fini(&c);
}

static unsigned char *pack_all(const ftrabit_cache_t *c, uint64_t lo, uint64_t hi, size_t *len)
{
    *len = ftrabit_cache_pack(c, lo, hi, NULL, 0);
    unsigned char *buf = malloc(*len);
    ftrabit_cache_pack(c, lo, hi, buf, *len);
    return buf;
}

static void pack_unpack_round_trip_and_merge(void)
{
    ftrabit_cache_t src, dst;
    ftrabit_cache_init(&src);
    ftrabit_cache_init(&dst);
    for (uint64_t s = 1; s <= 40; s++) {
        put_result(&src, s);
    }
    size_t len;
    unsigned char *buf = pack_all(&src, 0, UINT64_MAX, &len);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&dst, buf, len));
    CHECK(same_contents(&src, &dst) && invariants_hold(&dst));
    /* Unpacking it again is idempotent. */
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&dst, buf, len));
    CHECK(same_contents(&src, &dst));
    free(buf);

    /* Interleaving merge: dst holds odd seqs and some beyond, src's even range fills in. */
    ftrabit_cache_fini(&dst);
    ftrabit_cache_init(&dst);
    for (uint64_t s = 1; s <= 50; s += 2) {
        put_result(&dst, s);
    }
    put_result(&dst, 1000);
    buf = pack_all(&src, 10, 30, &len);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&dst, buf, len));
    CHECK(invariants_hold(&dst));
    for (uint64_t s = 1; s <= 50; s++) {
        CHECK(holds_result(&dst, s) == ((s & 1) || (s >= 10 && s <= 30)));
    }
    CHECK(holds_result(&dst, 1000));
    CHECK(26 + 11 == dst.count);
    free(buf);
    ftrabit_cache_fini(&src);
    ftrabit_cache_fini(&dst);
}

/* Unpacking src's results 1..10 into a cache that holds `seq` as another result (other
 * bytes, or the same bytes under another key) is refused and adds nothing. */
static int unpack_conflict_is_refused(uint64_t seq, uint64_t key, const void *bytes, size_t n)
{
    ftrabit_cache_t src, dst, before;
    ftrabit_cache_init(&src);
    ftrabit_cache_init(&dst);
    ftrabit_cache_init(&before);
    for (uint64_t s = 1; s <= 10; s++) {
        put_result(&src, s);
    }
    ftrabit_cache_put(&dst, seq, key, bytes, n);
    ftrabit_cache_put(&before, seq, key, bytes, n);
    size_t len;
    unsigned char *buf = pack_all(&src, 1, 10, &len);
    int refused = FTRABIT_CACHE_EXISTS == ftrabit_cache_unpack(&dst, buf, len)
                  && same_contents(&dst, &before);
    /* the diagnosis names the received entry that differs; none differs from its source */
    uint64_t conflict_seq, conflict_key;
    size_t conflict_len;
    refused = refused
              && ftrabit_cache_conflict(&dst, buf, len, &conflict_seq, &conflict_key,
                                        &conflict_len)
              && seq == conflict_seq && key_of(seq) == conflict_key
              && result_len(seq) == conflict_len
              && !ftrabit_cache_conflict(&src, buf, len, &conflict_seq, &conflict_key,
                                         &conflict_len);
    free(buf);
    ftrabit_cache_fini(&src);
    ftrabit_cache_fini(&dst);
    ftrabit_cache_fini(&before);
    return refused;
}

static void unpack_conflict_adds_nothing(void)
{
    const unsigned char other[2] = {0xff, 0xff};
    CHECK(unpack_conflict_is_refused(9, key_of(9), other, 2)); /* other bytes */
    /* the same bytes from another root: another result too */
    unsigned char b[32];
    result_bytes(4, b);
    uint64_t other_root = ftrabit_key(FTRABIT_KEY_BCAST, 1 + ftrabit_key_value(key_of(4)));
    CHECK(unpack_conflict_is_refused(4, other_root, b, result_len(4)));
}

static void keys_name_kind_and_value(void)
{
    uint64_t k = ftrabit_key(FTRABIT_KEY_BCAST, 4000000000u);
    CHECK(FTRABIT_KEY_BCAST == ftrabit_key_kind(k) && 4000000000u == ftrabit_key_value(k));
    k = ftrabit_key(FTRABIT_KEY_ALLREDUCE, 0);
    CHECK(FTRABIT_KEY_ALLREDUCE == ftrabit_key_kind(k) && 0 == ftrabit_key_value(k));
    CHECK(ftrabit_key(FTRABIT_KEY_BCAST, 2) != ftrabit_key(FTRABIT_KEY_ALLREDUCE, 2));
}

static void write_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

/* Unpack `buf` into a cache that already holds seq 500; it must fail with `expect` and
 * leave that cache exactly as it was. */
static int refused_without_change(const unsigned char *buf, size_t len, int expect)
{
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    put_result(&c, 500);
    int rc = ftrabit_cache_unpack(&c, buf, len);
    int ok = rc == expect && 1 == c.count && holds_result(&c, 500) && c.bytes == result_len(500);
    ftrabit_cache_fini(&c);
    return ok;
}

static void unpack_refuses_malformed_input(void)
{
    ftrabit_cache_t src;
    ftrabit_cache_init(&src);
    for (uint64_t s = 1; s <= 6; s++) {
        put_result(&src, s);
    }
    size_t len;
    unsigned char *good = pack_all(&src, 1, 6, &len);
    unsigned char *bad = malloc(len + 1);

    /* Every truncation, and one byte too many. */
    for (size_t cut = 0; cut < len; cut++) {
        CHECK(refused_without_change(good, cut, FTRABIT_CACHE_MALFORMED));
    }
    memcpy(bad, good, len);
    bad[len] = 0;
    CHECK(refused_without_change(bad, len + 1, FTRABIT_CACHE_MALFORMED));
    CHECK(FTRABIT_CACHE_MALFORMED == ftrabit_cache_unpack(&src, NULL, 8));

    /* Counts that claim more entries than the bytes could hold (no huge allocation). */
    const uint64_t counts[] = {7, 5, UINT64_MAX, UINT64_MAX / 16 + 1, 1ull << 60};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        memcpy(bad, good, len);
        write_le64(bad, counts[i]);
        CHECK(refused_without_change(bad, len, FTRABIT_CACHE_MALFORMED));
    }
    /* Entry lengths past the end, including ones that would overflow pointer arithmetic. */
    const uint64_t lens[] = {UINT64_MAX, UINT64_MAX - 7, (uint64_t) SIZE_MAX, 1u << 20,
                             result_len(1) + 1};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        memcpy(bad, good, len);
        write_le64(bad + 8 + 16, lens[i]);
        CHECK(refused_without_change(bad, len, FTRABIT_CACHE_MALFORMED));
    }
    /* Seqs out of order or repeated (the second entry starts after the first's bytes). */
    size_t second = 8 + 24 + result_len(1);
    memcpy(bad, good, len);
    write_le64(bad + second, 1);
    CHECK(refused_without_change(bad, len, FTRABIT_CACHE_MALFORMED));
    write_le64(bad + second, 0);
    CHECK(refused_without_change(bad, len, FTRABIT_CACHE_MALFORMED));

    /* An empty packed range is fine; with trailing garbage it is not. */
    unsigned char zero[9] = {0};
    ftrabit_cache_t c;
    ftrabit_cache_init(&c);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&c, zero, 8) && 0 == c.count);
    ftrabit_cache_fini(&c);
    CHECK(refused_without_change(zero, 9, FTRABIT_CACHE_MALFORMED));

    free(bad);
    free(good);
    ftrabit_cache_fini(&src);
}

/* Random corruption of valid buffers: never a crash, and either refused with no change or
 * accepted as a well-formed buffer (whose entries are then all present). */
static void unpack_survives_random_corruption(void)
{
    ftrabit_cache_t src;
    ftrabit_cache_init(&src);
    for (uint64_t s = 1; s <= 8; s++) {
        put_result(&src, s);
    }
    size_t len;
    unsigned char *good = pack_all(&src, 1, 8, &len);
    unsigned char *bad = malloc(len);
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(bad, good, len);
        int flips = 1 + (int) (rng() % 4);
        for (int f = 0; f < flips; f++) {
            bad[rng() % len] ^= (unsigned char) (1u << (rng() % 8));
        }
        size_t cut = (rng() % 4) ? len : (size_t) (rng() % (len + 1));
        ftrabit_cache_t c;
        ftrabit_cache_init(&c);
        int rc = ftrabit_cache_unpack(&c, bad, cut);
        CHECK(FTRABIT_CACHE_OK == rc || FTRABIT_CACHE_MALFORMED == rc);
        CHECK(invariants_hold(&c));
        if (FTRABIT_CACHE_OK == rc) {
            /* Accepted: repacking gives back exactly the accepted bytes. */
            size_t again = ftrabit_cache_pack(&c, 0, UINT64_MAX, NULL, 0);
            unsigned char *re = malloc(again);
            ftrabit_cache_pack(&c, 0, UINT64_MAX, re, again);
            CHECK(again == cut && 0 == memcmp(re, bad, cut));
            free(re);
        } else {
            CHECK(0 == c.count && 0 == c.bytes);
        }
        ftrabit_cache_fini(&c);
    }
    free(bad);
    free(good);
    ftrabit_cache_fini(&src);
}

/* Against a simple model: random puts, drops, packs and unpacks. */
static void random_operations_match_a_model(void)
{
    enum { MAXSEQ = 300 };
    static int model[MAXSEQ]; /* 1: held */
    ftrabit_cache_t c, peer;
    ftrabit_cache_init(&c);
    ftrabit_cache_init(&peer);
    memset(model, 0, sizeof(model));
    for (int op = 0; op < 4000; op++) {
        uint64_t s = rng() % MAXSEQ;
        switch (rng() % 8) {
        case 0: {
            uint64_t upto = rng() % MAXSEQ;
            ftrabit_cache_drop_through(&c, upto);
            for (uint64_t i = 0; i <= upto; i++) {
                model[i] = 0;
            }
            break;
        }
        case 1: { /* ship a range to a peer and back */
            uint64_t lo = rng() % MAXSEQ, hi = rng() % MAXSEQ;
            size_t len;
            unsigned char *buf = pack_all(&c, lo, hi, &len);
            ftrabit_cache_fini(&peer);
            ftrabit_cache_init(&peer);
            CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&peer, buf, len));
            for (uint64_t i = 0; i < MAXSEQ; i++) {
                CHECK(holds_result(&peer, i) == (model[i] && i >= lo && i <= hi));
            }
            CHECK(FTRABIT_CACHE_OK == ftrabit_cache_unpack(&c, buf, len));
            free(buf);
            break;
        }
        default:
            CHECK(FTRABIT_CACHE_OK == put_result(&c, s));
            model[s] = 1;
        }
        CHECK(invariants_hold(&c));
    }
    size_t bytes = 0, count = 0;
    for (uint64_t i = 0; i < MAXSEQ; i++) {
        CHECK(holds_result(&c, i) == model[i]);
        bytes += model[i] ? result_len(i) : 0;
        count += model[i];
    }
    CHECK(c.bytes == bytes && c.count == count);
    ftrabit_cache_fini(&c);
    ftrabit_cache_fini(&peer);
}

static void keepers_spread_evenly(void)
{
    for (int size = 1; size <= 20; size++) {
        for (int replicas = -1; replicas <= size + 1; replicas++) {
            int expect = (replicas <= 0 || replicas >= size) ? size : replicas;
            int *kept = calloc(size, sizeof(int));
            for (uint64_t seq = 0; seq < (uint64_t) size * 3; seq++) {
                int n = 0;
                for (int r = 0; r < size; r++) {
                    int k = ftrabit_cache_is_keeper(seq, r, size, replicas);
                    int by_definition = 0;
                    for (int i = 0; i < expect; i++) {
                        by_definition |= (uint64_t) r == (seq + (uint64_t) i) % (uint64_t) size;
                    }
                    CHECK(k == by_definition);
                    n += k;
                    kept[r] += k;
                }
                CHECK(n == expect);
            }
            for (int r = 0; r < size; r++) {
                CHECK(kept[r] == 3 * expect); /* the same share for everyone */
            }
            free(kept);
        }
    }
    /* Huge seqs: no overflow in the modular arithmetic. */
    CHECK(ftrabit_cache_is_keeper(UINT64_MAX, (int) (UINT64_MAX % 7), 7, 1));
    CHECK(!ftrabit_cache_is_keeper(UINT64_MAX, (int) ((UINT64_MAX - 1) % 7), 7, 1));
    CHECK(ftrabit_cache_is_keeper(UINT64_MAX, 0, 7, 2) == (UINT64_MAX % 7 == 6));
    /* Ranks outside the communicator keep nothing. */
    CHECK(!ftrabit_cache_is_keeper(3, -1, 4, 0));
    CHECK(!ftrabit_cache_is_keeper(3, 4, 4, 0));
    CHECK(!ftrabit_cache_is_keeper(3, 0, 0, 0));
}

/* A result built in a borrowed buffer and handed over: no copy, the same bytes. */
static void slots_become_results(void)
{
    ftrabit_cache_t c;
    ftrabit_slot_t s;
    const void *data;
    size_t len;
    ftrabit_cache_init(&c);

    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, 1000, &s));
    CHECK(NULL != s.data && s.capacity >= 1000);
    memset(s.data, 0x5a, 1000);
    unsigned char *built = s.data;
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put_slot(&c, 4, KEY, &s, 1000));
    CHECK(NULL == s.data); /* the cache took it */
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_get(&c, 4, &got_key, &data, &len));
    CHECK(built == data && 1000 == len && 0x5a == ((const unsigned char *) data)[999]);
    CHECK(invariants_hold(&c) && 1000 == c.bytes);

    /* The same seq again: identical bytes are fine, others refused; the slot goes back. */
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, 1000, &s));
    memset(s.data, 0x5a, 1000);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put_slot(&c, 4, KEY, &s, 1000));
    CHECK(NULL == s.data && 1 == c.count);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, 1000, &s));
    memset(s.data, 0x5b, 1000);
    CHECK(FTRABIT_CACHE_EXISTS == ftrabit_cache_put_slot(&c, 4, KEY, &s, 1000));
    CHECK(NULL == s.data && 1 == c.count);
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_get(&c, 4, &got_key, &data, &len));
    CHECK(0x5a == ((const unsigned char *) data)[0]);

    /* More bytes than the slot holds: refused, not stored, not overrun. */
    CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, 10, &s));
    size_t cap = s.capacity;
    CHECK(FTRABIT_CACHE_MALFORMED == ftrabit_cache_put_slot(&c, 5, KEY, &s, cap + 1));
    CHECK(NULL == s.data && FTRABIT_CACHE_MISSING == ftrabit_cache_get(&c, 5, &got_key, &data, &len));

    /* Scratch borrowed and given back, call after call: one buffer, reused. */
    uint64_t allocations = c.pool.allocations;
    for (int i = 0; i < 100; i++) {
        CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, 300000, &s));
        ftrabit_cache_return_slot(&c, &s);
        CHECK(NULL == s.data);
    }
    CHECK(allocations + 1 == c.pool.allocations);
    ftrabit_cache_fini(&c);
}

/* An application's checkpoint intervals, each with the same collectives: after the first,
 * neither result buffers nor the index are allocated again, and the memory the cache holds
 * between checkpoints is the last interval's buffers. */
static void steady_intervals_allocate_nothing(void)
{
    const size_t sizes[] = {8, 1 << 20, 8, 64 << 10, 24};
    enum { N = sizeof(sizes) / sizeof(sizes[0]), CALLS = 40 };
    ftrabit_cache_t c;
    ftrabit_cache_memory_t m;
    uint64_t seq = 0, allocations = 0;
    const ftrabit_cache_entry_t *index = NULL;
    size_t between = 0, per_interval = 0;
    ftrabit_cache_init(&c);
    for (int interval = 0; interval < 5; interval++) {
        size_t bytes = 0;
        for (int call = 0; call < CALLS; call++) {
            size_t len = sizes[call % N];
            ftrabit_slot_t s;
            seq++;
            CHECK(FTRABIT_CACHE_OK == ftrabit_cache_slot(&c, len, &s));
            memset(s.data, (int) seq, len);
            CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put_slot(&c, seq, KEY, &s, len));
            bytes += len;
        }
        ftrabit_cache_memory(&c, &m);
        CHECK(CALLS == m.results && bytes == m.result_bytes && 0 == m.idle_bytes);
        CHECK(m.held_bytes >= bytes && m.held_bytes < bytes + bytes / 4 + 64 * CALLS + 4096);
        per_interval = m.held_bytes;
        ftrabit_cache_drop_through(&c, seq); /* the checkpoint */
        ftrabit_cache_memory(&c, &m);
        CHECK(0 == m.results && 0 == m.result_bytes);
        /* All kept for the next interval (plus the pool's small lists of idle buffers). */
        CHECK(m.held_bytes >= per_interval && m.held_bytes < per_interval + 1024);
        if (0 == interval) {
            allocations = c.pool.allocations;
            index = c.entries;
            between = m.held_bytes;
        }
        CHECK(allocations == c.pool.allocations && index == c.entries);
        CHECK(between == m.held_bytes);
    }
    ftrabit_cache_fini(&c);
}

/* The pool limit: 0 gives every buffer back at the checkpoint (as without a pool). */
static void pool_limit_zero_keeps_nothing(void)
{
    ftrabit_cache_t c;
    ftrabit_cache_memory_t m;
    ftrabit_cache_init(&c);
    ftrabit_cache_set_pool_limit(&c, 0);
    for (uint64_t s = 1; s <= 10; s++) {
        unsigned char b[100] = {0};
        CHECK(FTRABIT_CACHE_OK == ftrabit_cache_put(&c, s, KEY, b, sizeof(b)));
    }
    ftrabit_cache_drop_through(&c, 10);
    ftrabit_cache_memory(&c, &m);
    CHECK(0 == m.idle_bytes && 0 == m.results);
    CHECK(m.held_bytes == c.capacity * sizeof(ftrabit_cache_entry_t)); /* the index only */
    ftrabit_cache_fini(&c);
}

int main(void)
{
    RUN(empty_cache);
    RUN(put_get_in_any_order);
    RUN(put_is_idempotent_and_refuses_other_results);
    RUN(drop_through_frees_and_accounts);
    RUN(holds_ranges);
    RUN(pack_layout_is_little_endian);
    RUN(pack_size_query_and_short_buffer);
    RUN(pack_unpack_round_trip_and_merge);
    RUN(unpack_conflict_adds_nothing);
    RUN(keys_name_kind_and_value);
    RUN(unpack_refuses_malformed_input);
    RUN(unpack_survives_random_corruption);
    RUN(random_operations_match_a_model);
    RUN(keepers_spread_evenly);
    RUN(slots_become_results);
    RUN(steady_intervals_allocate_nothing);
    RUN(pool_limit_zero_keeps_nothing);
    UNIT_EXIT();
}
