/*
 * Unit tests of the benchmarks' streamed copy (bench/ftr_nt_copy.h): it writes
 * memcpy's bytes, and nothing outside the destination, at every alignment of destination
 * and source and every tail length, for lengths around each of its steps (head, 64-byte
 * blocks, 16-byte steps, tail); ftrabit_copy_kept does the same on both sides of its
 * threshold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/ftr_nt_copy.h"
#include "unit.h"

#define GUARD 64
#define MAX_LEN (2 * 4096 + 100)
#define ARRAY (MAX_LEN + 2 * GUARD + 64)

static unsigned char src_mem[ARRAY], dst_mem[ARRAY], pattern[ARRAY];

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

static size_t kept_threshold;

static void copy_kept(void *dst, const void *src, size_t len)
{
    ftrabit_copy_kept(dst, src, len, kept_threshold);
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

static void kept_copy_matches_memcpy_on_both_sides_of_its_threshold(void)
{
    static const size_t thresholds[] = {0, 1, 64, 100, 4096, FTRABIT_COPY_STREAM_MIN};
    int bad = 0;
    for (size_t t = 0; t < sizeof(thresholds) / sizeof(thresholds[0]); t++) {
        kept_threshold = thresholds[t];
        for (size_t len = 0; len <= MAX_LEN && !bad; len += len < 200 ? 1 : 97) {
            for (size_t doff = 0; doff < 64 && !bad; doff += 9) {
                if (!copies_like_memcpy(copy_kept, doff, (doff * 5) % 64, len)) {
                    printf("# kept (threshold %zu): len %zu dst +%zu differs from memcpy\n",
                           kept_threshold, len, doff);
                    bad = 1;
                }
            }
        }
    }
    CHECK(!bad);
}

/* A large copy (many 64-byte blocks) from and to heap buffers of every 16-byte phase. */
static void stream_matches_memcpy_for_megabytes(void)
{
    size_t len = (size_t) 3 << 20;
    unsigned char *src = malloc(len + 64), *dst = malloc(len + 128), *want = malloc(len + 128);
    CHECK(NULL != src && NULL != dst && NULL != want);
    if (NULL == src || NULL == dst || NULL == want) {
        free(src);
        free(dst);
        free(want);
        return;
    }
    fill(src, len + 64, 42);
    for (size_t off = 0; off < 64; off += 21) {
        fill(dst, len + 128, off);
        memcpy(want, dst, len + 128);
        memcpy(want + 32 + off, src + off / 2, len - off);
        ftrabit_copy_stream(dst + 32 + off, src + off / 2, len - off);
        CHECK(0 == memcmp(dst, want, len + 128));
    }
    free(src);
    free(dst);
    free(want);
}

int main(void)
{
    fill(src_mem, sizeof(src_mem), 0x9e3779b97f4a7c15ull);
    fill(pattern, sizeof(pattern), 0xd1b54a32d192ed03ull);
    printf("# streaming: %s\n", ftrabit_copy_can_stream() ? "non-temporal stores" : "memcpy");
    RUN(stream_matches_memcpy_at_every_alignment);
    RUN(kept_copy_matches_memcpy_on_both_sides_of_its_threshold);
    RUN(stream_matches_memcpy_for_megabytes);
    UNIT_EXIT();
}
