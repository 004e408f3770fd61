/*
 * Unit tests of coll/ftrabit's bootstrap cache: occurrence counting per call site, keys
 * that tell apart repeated runs of one call site, signature mismatches reported with the
 * stored signature, replay in another order, and the wire format (round trip, counters not
 * carried, every malformed input refused with nothing added).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_bootstrap.h"
#include "unit.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
    return unit_xorshift64s(&rng_state);
}

static const ftrabit_bootstrap_signature_t sum8 = {.kind = 1, .type_size = 8, .count = 1,
                                                   .op_or_root = 3};
static const ftrabit_bootstrap_signature_t bcast_root0 = {.kind = 2, .type_size = 4,
                                                          .count = 16, .op_or_root = 0};

static int same_sig(const ftrabit_bootstrap_signature_t *a, const ftrabit_bootstrap_signature_t *b)
{
    return a->kind == b->kind && a->type_size == b->type_size
           && a->type_signature == b->type_signature && a->count == b->count
           && a->op_or_root == b->op_or_root;
}

/* get, expecting exactly these bytes */
static int has(const ftrabit_bootstrap_t *t, const char *file, int line, const char *fn,
               uint32_t occ, const ftrabit_bootstrap_signature_t *sig, const void *want,
               size_t want_len)
{
    const void *data = NULL;
    size_t len = 0;
    return FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_get(t, file, line, fn, occ, sig, &data, &len,
                                                         NULL)
           && len == want_len && NULL != data && (0 == len || 0 == memcmp(data, want, len));
}

/* Shorter to read in the checks below. */
static int put(ftrabit_bootstrap_t *t, const char *file, int line, const char *fn, uint32_t occ,
               const ftrabit_bootstrap_signature_t *sig, const void *data, size_t len)
{
    return ftrabit_bootstrap_put(t, file, line, fn, occ, sig, data, len);
}

static void occurrences_count_per_call_site(void)
{
    ftrabit_bootstrap_t t;
    ftrabit_bootstrap_init(&t);
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 10, "main"));
    CHECK(1 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 10, "main"));
    /* Any part of the call site differing makes another site. */
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 11, "main"));
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "b.c", 10, "main"));
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 10, "setup"));
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "a.c", -10, "main"));
    CHECK(0 == ftrabit_bootstrap_next_occurrence(&t, "a.c0", 10, "main"));
    CHECK(2 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 10, "main"));
    CHECK(1 == ftrabit_bootstrap_next_occurrence(&t, "a.c", 11, "main"));
    CHECK(6 == t.nsites);
    /* Many sites in shuffled order stay independent. */
    char name[32];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 200; i++) {
            int site = (i * 37) % 200;
            snprintf(name, sizeof(name), "f%d.c", site % 13);
            CHECK((uint32_t) round == ftrabit_bootstrap_next_occurrence(&t, name, site, "g"));
        }
    }
    CHECK(0 == t.count); /* counting stores no entry */
    ftrabit_bootstrap_fini(&t);
}

static void put_get_and_mismatch(void)
{
    ftrabit_bootstrap_t t;
    ftrabit_bootstrap_init(&t);
    const double n_rows = 12345.0, seed = 42.0;
    CHECK(FTRABIT_BOOTSTRAP_OK == put(&t, "io.c", 7, "load", 0, &sum8, &n_rows, 8));
    CHECK(FTRABIT_BOOTSTRAP_OK == put(&t, "io.c", 7, "load", 1, &sum8, &seed, 8));
    CHECK(2 == t.count);
    CHECK(has(&t, "io.c", 7, "load", 0, &sum8, &n_rows, 8));
    CHECK(has(&t, "io.c", 7, "load", 1, &sum8, &seed, 8));

    const void *data = NULL;
    size_t len = 0;
    CHECK(FTRABIT_BOOTSTRAP_MISSING
          == ftrabit_bootstrap_get(&t, "io.c", 7, "load", 2, &sum8, &data, &len, NULL));
    CHECK(FTRABIT_BOOTSTRAP_MISSING
          == ftrabit_bootstrap_get(&t, "io.c", 8, "load", 0, &sum8, &data, &len, NULL));
    CHECK(FTRABIT_BOOTSTRAP_MISSING
          == ftrabit_bootstrap_get(&t, "io.c", 7, "loader", 0, &sum8, &data, &len, NULL));

    /* Each field of the signature counts, and the stored one comes back. */
    ftrabit_bootstrap_signature_t variants[5] = {sum8, sum8, sum8, sum8, sum8};
    variants[0].kind = 2;
    variants[1].type_size = 4;
    variants[2].count = 2;
    variants[3].op_or_root = 4;
    variants[4].type_signature = 99; /* another type of the same size */
    for (int i = 0; i < 5; i++) {
        ftrabit_bootstrap_signature_t stored = {0};
        data = NULL;
        CHECK(FTRABIT_BOOTSTRAP_MISMATCH == ftrabit_bootstrap_get(&t, "io.c", 7, "load", 1,
                                                                  &variants[i], &data, &len,
                                                                  &stored));
        CHECK(same_sig(&stored, &sum8) && NULL == data);
        CHECK(FTRABIT_BOOTSTRAP_MISMATCH == ftrabit_bootstrap_get(&t, "io.c", 7, "load", 1,
                                                                  &variants[i], &data, &len, NULL));
        CHECK(FTRABIT_BOOTSTRAP_MISMATCH
              == ftrabit_bootstrap_put(&t, "io.c", 7, "load", 1, &variants[i], &seed, 8));
    }

    /* Idempotent put; other bytes under the same key and signature are refused. */
    const double other = 43.0;
    CHECK(FTRABIT_BOOTSTRAP_OK == put(&t, "io.c", 7, "load", 1, &sum8, &seed, 8));
    CHECK(FTRABIT_BOOTSTRAP_EXISTS == put(&t, "io.c", 7, "load", 1, &sum8, &other, 8));
    CHECK(FTRABIT_BOOTSTRAP_EXISTS == put(&t, "io.c", 7, "load", 1, &sum8, &seed, 4));
    CHECK(2 == t.count && has(&t, "io.c", 7, "load", 1, &sum8, &seed, 8));

    /* Empty results, NULL names (as ""), copies not references. */
    CHECK(FTRABIT_BOOTSTRAP_OK == put(&t, NULL, 0, NULL, 0, &bcast_root0, NULL, 0));
    CHECK(has(&t, "", 0, "", 0, &bcast_root0, NULL, 0));
    char file[] = "tmp.c";
    unsigned char bytes[3] = {1, 2, 3};
    CHECK(FTRABIT_BOOTSTRAP_OK == put(&t, file, 1, "f", 0, &bcast_root0, bytes, 3));
    file[0] = 'x';
    bytes[0] = 9;
    const unsigned char orig[3] = {1, 2, 3};
    CHECK(has(&t, "tmp.c", 1, "f", 0, &bcast_root0, orig, 3));
    ftrabit_bootstrap_fini(&t);
}

/* A process runs call sites in one order; a restarted one runs them in another order (with
 * the same per-site occurrence numbering) and gets the original results. */
static void replay_in_another_order(void)
{
    enum { NSITES = 5, RUNS = 4 };
    const char *files[NSITES] = {"a.c", "a.c", "b.c", "c.c", "a.c"};
    const int lines[NSITES] = {10, 20, 10, 5, 10};
    const char *fns[NSITES] = {"f", "f", "f", "g", "h"};
    ftrabit_bootstrap_t orig, restarted;
    ftrabit_bootstrap_init(&orig);
    ftrabit_bootstrap_init(&restarted);

    uint64_t value[NSITES][RUNS];
    for (int run = 0; run < RUNS; run++) {
        for (int s = 0; s < NSITES; s++) {
            uint32_t occ = ftrabit_bootstrap_next_occurrence(&orig, files[s], lines[s], fns[s]);
            CHECK(occ == (uint32_t) run);
            value[s][run] = rng();
            CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_put(&orig, files[s], lines[s], fns[s],
                                                                occ, &sum8, &value[s][run], 8));
        }
    }
    CHECK(NSITES * RUNS == orig.count);

    size_t len = ftrabit_bootstrap_pack(&orig, NULL, 0);
    unsigned char *buf = malloc(len);
    CHECK(len == ftrabit_bootstrap_pack(&orig, buf, len));
    CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_unpack(&restarted, buf, len));
    free(buf);
    CHECK(0 == restarted.nsites); /* counters are the replaying process's own */

    for (int s = NSITES - 1; s >= 0; s--) {
        for (int run = 0; run < RUNS; run++) {
            uint32_t occ =
                ftrabit_bootstrap_next_occurrence(&restarted, files[s], lines[s], fns[s]);
            CHECK(occ == (uint32_t) run);
            CHECK(has(&restarted, files[s], lines[s], fns[s], occ, &sum8, &value[s][run], 8));
        }
    }
    ftrabit_bootstrap_fini(&orig);
    ftrabit_bootstrap_fini(&restarted);
}

static uint64_t read_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static void pack_layout_is_little_endian(void)
{
    ftrabit_bootstrap_t t;
    ftrabit_bootstrap_init(&t);
    const ftrabit_bootstrap_signature_t sig = {.kind = 2, .type_size = 0x0102,
                                               .type_signature = 0x08090a0b0c0d0e0full,
                                               .count = 0x030405, .op_or_root = 0x0607};
    const unsigned char data[2] = {0xde, 0xad};
    ftrabit_bootstrap_put(&t, "ab", -2, "f", 0x01020304, &sig, data, 2);
    unsigned char buf[128];
    memset(buf, 0xee, sizeof(buf));
    size_t n = ftrabit_bootstrap_pack(&t, buf, sizeof(buf));
    const unsigned char expect[] = {
        1, 0, 0, 0, 0, 0, 0, 0,                   /* count */
        2, 0, 0, 0, 'a', 'b',                     /* file */
        1, 0, 0, 0, 'f',                          /* function */
        0xfe, 0xff, 0xff, 0xff,                   /* line -2 */
        4, 3, 2, 1,                               /* occurrence */
        2, 0, 0, 0,                               /* kind */
        2, 1, 0, 0, 0, 0, 0, 0,                   /* type_size */
        0xf, 0xe, 0xd, 0xc, 0xb, 0xa, 9, 8,       /* type_signature */
        5, 4, 3, 0, 0, 0, 0, 0,                   /* count */
        7, 6, 0, 0, 0, 0, 0, 0,                   /* op_or_root */
        2, 0, 0, 0, 0, 0, 0, 0, 0xde, 0xad};      /* result */
    CHECK(sizeof(expect) == n && 0 == memcmp(expect, buf, n));
    CHECK(0xee == buf[n]);
    CHECK(1 == read_le(buf, 8));

    /* Too small: nothing written; NULL: size only. */
    memset(buf, 0xee, sizeof(buf));
    CHECK(n == ftrabit_bootstrap_pack(&t, buf, n - 1) && 0xee == buf[0]);
    CHECK(n == ftrabit_bootstrap_pack(&t, NULL, 1000));
    ftrabit_bootstrap_fini(&t);

    /* An empty table is a bare count. */
    ftrabit_bootstrap_init(&t);
    CHECK(8 == ftrabit_bootstrap_pack(&t, buf, sizeof(buf)) && 0 == read_le(buf, 8));
    CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_unpack(&t, buf, 8) && 0 == t.count);
    ftrabit_bootstrap_fini(&t);
}

/* A table with entries of many shapes, including extreme lines and empty names. */
static void fill(ftrabit_bootstrap_t *t, int n)
{
    char file[32], fn[32];
    for (int i = 0; i < n; i++) {
        snprintf(file, sizeof(file), "%s%d.c", i % 3 ? "src/x" : "", i % 5);
        snprintf(fn, sizeof(fn), "fn%d", i % 4);
        int line = i % 7 == 0 ? INT32_MIN + i : i % 7 == 1 ? INT32_MAX - i : i * 3;
        ftrabit_bootstrap_signature_t sig = {.kind = 1 + i % 2, .type_size = (uint64_t) i,
                                             .type_signature = (uint64_t) i * 0x9e3779b97f4a7c15ull,
                                             .count = UINT64_MAX - (uint64_t) i,
                                             .op_or_root = (uint64_t) i * 11};
        unsigned char data[40];
        for (int b = 0; b < i % 40; b++) {
            data[b] = (unsigned char) (i + b);
        }
        ftrabit_bootstrap_put(t, file, line, i % 9 ? fn : "", (uint32_t) (i % 3), &sig, data,
                              (size_t) (i % 40));
    }
}

static unsigned char *pack_all(const ftrabit_bootstrap_t *t, size_t *len)
{
    *len = ftrabit_bootstrap_pack(t, NULL, 0);
    unsigned char *buf = malloc(*len);
    ftrabit_bootstrap_pack(t, buf, *len);
    return buf;
}

static int same_tables(const ftrabit_bootstrap_t *a, const ftrabit_bootstrap_t *b)
{
    size_t la, lb;
    unsigned char *pa = pack_all(a, &la), *pb = pack_all(b, &lb);
    int same = la == lb && 0 == memcmp(pa, pb, la);
    free(pa);
    free(pb);
    return same;
}

static void round_trip_and_merge(void)
{
    ftrabit_bootstrap_t a, b, half;
    ftrabit_bootstrap_init(&a);
    ftrabit_bootstrap_init(&b);
    ftrabit_bootstrap_init(&half);
    fill(&a, 60);
    CHECK(60 == a.count);
    size_t len;
    unsigned char *buf = pack_all(&a, &len);
    CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_unpack(&b, buf, len));
    CHECK(same_tables(&a, &b));
    CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_unpack(&b, buf, len)); /* idempotent */
    CHECK(same_tables(&a, &b) && 60 == b.count);

    /* Merge into a table holding a subset plus something else. */
    fill(&half, 30);
    const ftrabit_bootstrap_signature_t sig = sum8;
    ftrabit_bootstrap_put(&half, "zzz.c", 1, "z", 0, &sig, "z", 1);
    ftrabit_bootstrap_put(&half, "", INT32_MIN, "", 0, &sig, "a", 1);
    CHECK(FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_unpack(&half, buf, len));
    CHECK(62 == half.count);
    CHECK(has(&half, "zzz.c", 1, "z", 0, &sig, "z", 1));
    ftrabit_bootstrap_put(&b, "zzz.c", 1, "z", 0, &sig, "z", 1);
    ftrabit_bootstrap_put(&b, "", INT32_MIN, "", 0, &sig, "a", 1);
    CHECK(same_tables(&half, &b));
    free(buf);
    ftrabit_bootstrap_fini(&a);
    ftrabit_bootstrap_fini(&b);
    ftrabit_bootstrap_fini(&half);
}

static void unpack_conflicts_add_nothing(void)
{
    ftrabit_bootstrap_t src, dst, before;
    ftrabit_bootstrap_init(&src);
    ftrabit_bootstrap_init(&dst);
    ftrabit_bootstrap_init(&before);
    const double x = 1.0, y = 2.0;
    ftrabit_bootstrap_put(&src, "a.c", 1, "f", 0, &sum8, &x, 8);
    ftrabit_bootstrap_put(&src, "b.c", 1, "f", 0, &sum8, &x, 8);
    size_t len;
    unsigned char *buf = pack_all(&src, &len);

    ftrabit_bootstrap_put(&dst, "b.c", 1, "f", 0, &bcast_root0, &x, 8);
    ftrabit_bootstrap_put(&before, "b.c", 1, "f", 0, &bcast_root0, &x, 8);
    CHECK(FTRABIT_BOOTSTRAP_MISMATCH == ftrabit_bootstrap_unpack(&dst, buf, len));
    CHECK(same_tables(&dst, &before));
    ftrabit_bootstrap_fini(&dst);
    ftrabit_bootstrap_fini(&before);

    ftrabit_bootstrap_init(&dst);
    ftrabit_bootstrap_init(&before);
    ftrabit_bootstrap_put(&dst, "b.c", 1, "f", 0, &sum8, &y, 8);
    ftrabit_bootstrap_put(&before, "b.c", 1, "f", 0, &sum8, &y, 8);
    CHECK(FTRABIT_BOOTSTRAP_EXISTS == ftrabit_bootstrap_unpack(&dst, buf, len));
    CHECK(same_tables(&dst, &before));
    free(buf);
    ftrabit_bootstrap_fini(&src);
    ftrabit_bootstrap_fini(&dst);
    ftrabit_bootstrap_fini(&before);
}

static void write_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

/* Unpack into a table holding one entry: must fail with `expect`, the table unchanged. */
static int refused_without_change(const unsigned char *buf, size_t len, int expect)
{
    ftrabit_bootstrap_t t;
    const double v = 5.0;
    ftrabit_bootstrap_init(&t);
    ftrabit_bootstrap_put(&t, "keep.c", 1, "k", 0, &sum8, &v, 8);
    int rc = ftrabit_bootstrap_unpack(&t, buf, len);
    int ok = rc == expect && 1 == t.count && has(&t, "keep.c", 1, "k", 0, &sum8, &v, 8);
    ftrabit_bootstrap_fini(&t);
    return ok;
}

static void unpack_refuses_malformed_input(void)
{
    ftrabit_bootstrap_t src;
    ftrabit_bootstrap_init(&src);
    const unsigned char d1[3] = {1, 2, 3}, d2[1] = {4};
    ftrabit_bootstrap_put(&src, "a.c", 5, "fa", 0, &sum8, d1, 3);
    ftrabit_bootstrap_put(&src, "a.c", 5, "fa", 1, &sum8, d2, 1);
    size_t len;
    unsigned char *good = pack_all(&src, &len);
    unsigned char *bad = malloc(len + 1);
    /* Offsets in the first entry (see the layout test). */
    const size_t file_len_at = 8, file_at = 12, fn_len_at = 15, data_len_at = 15 + 4 + 2 + 4 + 4
                                                                              + 4 + 8 + 8 + 8 + 8;
    const size_t second = data_len_at + 8 + 3, second_occ_at = second + 4 + 3 + 4 + 2 + 4;

    for (size_t cut = 0; cut < len; cut++) {
        CHECK(refused_without_change(good, cut, FTRABIT_BOOTSTRAP_MALFORMED));
    }
    memcpy(bad, good, len);
    bad[len] = 'x';
    CHECK(refused_without_change(bad, len + 1, FTRABIT_BOOTSTRAP_MALFORMED));
    CHECK(refused_without_change(NULL, 0, FTRABIT_BOOTSTRAP_MALFORMED));

    const uint64_t counts[] = {3, 1, UINT64_MAX, 1ull << 62};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        memcpy(bad, good, len);
        write_le(bad, counts[i], 8);
        CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
    }
    const uint64_t name_lens[] = {UINT32_MAX, len, 4};
    for (size_t i = 0; i < sizeof(name_lens) / sizeof(name_lens[0]); i++) {
        memcpy(bad, good, len);
        write_le(bad + file_len_at, name_lens[i], 4);
        CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
        memcpy(bad, good, len);
        write_le(bad + fn_len_at, name_lens[i], 4);
        CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
    }
    const uint64_t data_lens[] = {UINT64_MAX, UINT64_MAX - 10, (uint64_t) SIZE_MAX, 4, 1u << 30};
    for (size_t i = 0; i < sizeof(data_lens) / sizeof(data_lens[0]); i++) {
        memcpy(bad, good, len);
        write_le(bad + data_len_at, data_lens[i], 8);
        CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
    }
    /* A NUL inside a name would change the key once stored as a C string. */
    memcpy(bad, good, len);
    bad[file_at + 1] = '\0';
    CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
    /* Keys not strictly increasing: a duplicate, then reversed order. */
    memcpy(bad, good, len);
    write_le(bad + second_occ_at, 0, 4);
    CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));
    ftrabit_bootstrap_fini(&src);
    ftrabit_bootstrap_init(&src);
    ftrabit_bootstrap_put(&src, "a.c", 5, "fa", 0, &sum8, d1, 3);
    ftrabit_bootstrap_put(&src, "a.c", 5, "fa", 7, &sum8, d2, 1);
    free(good);
    good = pack_all(&src, &len);
    memcpy(bad, good, len);
    write_le(bad + second_occ_at, 7, 4);
    CHECK(0 == memcmp(bad, good, len)); /* the offsets above are right */
    write_le(bad + second_occ_at - 4, 4, 4); /* second line 4 < 5 */
    CHECK(refused_without_change(bad, len, FTRABIT_BOOTSTRAP_MALFORMED));

    free(bad);
    free(good);
    ftrabit_bootstrap_fini(&src);
}

static void unpack_survives_random_corruption(void)
{
    ftrabit_bootstrap_t src;
    ftrabit_bootstrap_init(&src);
    fill(&src, 12);
    size_t len;
    unsigned char *good = pack_all(&src, &len);
    unsigned char *bad = malloc(len);
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(bad, good, len);
        int flips = 1 + (int) (rng() % 4);
        for (int f = 0; f < flips; f++) {
            bad[rng() % len] ^= (unsigned char) (1u << (rng() % 8));
        }
        size_t cut = (rng() % 4) ? len : (size_t) (rng() % (len + 1));
        ftrabit_bootstrap_t t;
        ftrabit_bootstrap_init(&t);
        int rc = ftrabit_bootstrap_unpack(&t, bad, cut);
        CHECK(FTRABIT_BOOTSTRAP_OK == rc || FTRABIT_BOOTSTRAP_MALFORMED == rc);
        if (FTRABIT_BOOTSTRAP_OK == rc) {
            /* Accepted: it was well formed, so packing gives back the same bytes. */
            size_t again;
            unsigned char *re = pack_all(&t, &again);
            CHECK(again == cut && 0 == memcmp(re, bad, cut));
            free(re);
        } else {
            CHECK(0 == t.count);
        }
        ftrabit_bootstrap_fini(&t);
    }
    free(bad);
    free(good);
    ftrabit_bootstrap_fini(&src);
}

int main(void)
{
    RUN(occurrences_count_per_call_site);
    RUN(put_get_and_mismatch);
    RUN(replay_in_another_order);
    RUN(pack_layout_is_little_endian);
    RUN(round_trip_and_merge);
    RUN(unpack_conflicts_add_nothing);
    RUN(unpack_refuses_malformed_input);
    RUN(unpack_survives_random_corruption);
    UNIT_EXIT();
}
