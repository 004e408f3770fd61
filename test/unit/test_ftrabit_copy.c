/*
 * Unit tests of coll/ftrabit's copies of a large result (ftrabit_copy.h): the streamed copy
 * writes memcpy's bytes, and nothing outside the destination, at every alignment of
 * destination and source and every tail length, for lengths around each of its steps
 * (head, 64-byte blocks, 16-byte steps, tail); the copy to two places does the same into
 * both, whatever the phase of one destination to the other.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_copy.h"
#include "unit.h"

#define GUARD 64
#define MAX_LEN (2 * 4096 + 100)
#define ARRAY (MAX_LEN + 2 * GUARD + 64)

static unsigned char src_mem[ARRAY], dst_mem[ARRAY], kept_mem[ARRAY], pattern[ARRAY];

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char) unit_xorshift64s(&s);
    }
}

/* Copy len bytes from src_mem + soff to dst_mem + GUARD + doff with `copy` into a
 * destination filled with another pattern: the copied bytes must be the source's, and the
 * GUARD bytes on either side untouched. */
static int copies_like_memcpy(void (*copy)(void *, const void *, size_t), size_t doff,
                              size_t soff, size_t len)
{
    unsigned char *d = dst_mem + GUARD + doff;
    memcpy(dst_mem + doff, pattern + doff, len + 2 * GUARD);
    copy(d, src_mem + soff, len);
    return 0 == memcmp(d, src_mem + soff, len) && 0 == memcmp(dst_mem + doff, pattern + doff, GUARD)
           && 0 == memcmp(d + len, pattern + GUARD + doff + len, GUARD);
}

/* Every length up to 300 (every path of a short copy), then the lengths around two page
 * sizes (many 64-byte blocks and every tail after them); every destination alignment
 * within a cache line, and source alignments of every phase to it. */
static void stream_matches_memcpy_at_every_alignment(void)
{
    static const size_t soffs[] = {0, 1, 3, 8, 15, 16, 17, 31, 32, 48, 63};
    const int quick = NULL != getenv("OMPIRES_UNIT_QUICK"); /* under valgrind */
    int bad = 0;
    for (size_t len = 0; len <= MAX_LEN && !bad; len++) {
        if (len > 300 && (len + 70) % 4096 > 140) { /* not within 70 of a multiple of 4096 */
            len = ((len + 70) / 4096 + 1) * 4096 - 71; /* next: 70 below a multiple of 4096 */
            continue;
        }
        for (size_t doff = 0; doff < 64 && !bad; doff += quick ? 3 : 1) {
            for (size_t i = 0; i < sizeof(soffs) / sizeof(soffs[0]) && !bad; i += quick ? 2 : 1) {
                if (!copies_like_memcpy(ftrabit_copy_stream, doff, soffs[i], len)) {
                    printf("# stream: len %zu dst +%zu src +%zu differs from memcpy\n", len, doff,
                           soffs[i]);
                    bad = 1;
                }
            }
        }
    }
    CHECK(!bad);
}

/* len bytes from src_mem + soff to dst_mem + GUARD + doff and kept_mem + GUARD + koff in
 * one ftrabit_copy_twice, both destinations filled with another pattern first: both must
 * hold the source's bytes, and the GUARD bytes on either side of each be untouched. */
static int copies_twice_like_memcpy(size_t doff, size_t koff, size_t soff, size_t len)
{
    unsigned char *d = dst_mem + GUARD + doff, *k = kept_mem + GUARD + koff;
    memcpy(dst_mem + doff, pattern + doff, len + 2 * GUARD);
    memcpy(kept_mem + koff, pattern + koff, len + 2 * GUARD);
    ftrabit_copy_twice(d, k, src_mem + soff, len);
    return 0 == memcmp(d, src_mem + soff, len) && 0 == memcmp(k, src_mem + soff, len)
           && 0 == memcmp(dst_mem + doff, pattern + doff, GUARD)
           && 0 == memcmp(d + len, pattern + GUARD + doff + len, GUARD)
           && 0 == memcmp(kept_mem + koff, pattern + koff, GUARD)
           && 0 == memcmp(k + len, pattern + GUARD + koff + len, GUARD);
}

/* The lengths of the streamed copy's test; every alignment of the streamed destination,
 * the other destination and the source at phases to it. */
static void copy_twice_matches_memcpy_at_every_alignment(void)
{
    static const size_t offs[] = {0, 1, 5, 8, 15, 16, 17, 33, 48, 63};
    const int quick = NULL != getenv("OMPIRES_UNIT_QUICK"); /* under valgrind */
    const size_t n = sizeof(offs) / sizeof(offs[0]);
    int bad = 0;
    for (size_t len = 0; len <= MAX_LEN && !bad; len++) {
        if (len > 300 && (len + 70) % 4096 > 140) {
            len = ((len + 70) / 4096 + 1) * 4096 - 71;
            continue;
        }
        for (size_t koff = 0; koff < 64 && !bad; koff += quick ? 7 : 1) {
            for (size_t i = 0; i < n && !bad; i += quick ? 3 : 1) {
                size_t doff = offs[i], soff = offs[(i + koff) % n];
                if (!copies_twice_like_memcpy(doff, koff, soff, len)) {
                    printf("# twice: len %zu dst +%zu kept +%zu src +%zu differs from memcpy\n",
                           len, doff, koff, soff);
                    bad = 1;
                }
            }
        }
    }
    CHECK(!bad);
}

/* A large copy (many 64-byte blocks) from and to heap buffers of every 16-byte phase,
 * streamed alone and twice (to dst and to a second buffer at another phase). */
static void copies_match_memcpy_for_megabytes(void)
{
    size_t len = (size_t) 3 << 20;
    unsigned char *src = malloc(len + 64), *dst = malloc(len + 128), *want = malloc(len + 128);
    unsigned char *dst2 = malloc(len + 128), *want2 = malloc(len + 128);
    int ok = NULL != src && NULL != dst && NULL != want && NULL != dst2 && NULL != want2;
    CHECK(ok);
    for (size_t off = 0; ok && off < 64; off += 21) {
        unsigned char *d = dst + 32 + off, *d2 = dst2 + 64 - off;
        fill(src, len + 64, 42 + off);
        fill(dst, len + 128, off);
        memcpy(want, dst, len + 128);
        memcpy(want + 32 + off, src + off / 2, len - off);
        ftrabit_copy_stream(d, src + off / 2, len - off);
        CHECK(0 == memcmp(dst, want, len + 128));

        fill(dst, len + 128, off + 1);
        fill(dst2, len + 128, off + 2);
        memcpy(want, dst, len + 128);
        memcpy(want2, dst2, len + 128);
        memcpy(want + 32 + off, src + off / 2, len - off);
        memcpy(want2 + 64 - off, src + off / 2, len - off);
        ftrabit_copy_twice(d, d2, src + off / 2, len - off);
        CHECK(0 == memcmp(dst, want, len + 128));
        CHECK(0 == memcmp(dst2, want2, len + 128));
    }
    free(src);
    free(dst);
    free(want);
    free(dst2);
    free(want2);
}

int main(void)
{
    fill(src_mem, sizeof(src_mem), 0x9e3779b97f4a7c15ull);
    fill(pattern, sizeof(pattern), 0xd1b54a32d192ed03ull);
    printf("# streaming: %s\n", ftrabit_copy_can_stream() ? "non-temporal stores" : "memcpy");
    RUN(stream_matches_memcpy_at_every_alignment);
    RUN(copy_twice_matches_memcpy_at_every_alignment);
    RUN(copies_match_memcpy_for_megabytes);
    UNIT_EXIT();
}
