/*
 * ompi-resilience: coll/ftrabit's copies of a large allreduce result (pure logic; see the
 * header).
 *
 * The streamed copy: memcpy up to the first 16-byte boundary of the streamed destination,
 * then 64 bytes per step as four unaligned 16-byte loads and four aligned non-temporal
 * stores (and, copying twice, four unaligned ordinary stores), then 16-byte steps, then
 * memcpy for the last bytes. A non-temporal store goes to memory through a write-combining
 * buffer without the line being read first; the fence at the end orders those stores
 * before anything this process stores afterwards, as ordinary stores are.
 */
#include "ftrabit_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define FTRABIT_COPY_SSE2 1
#else
#define FTRABIT_COPY_SSE2 0
#endif

int ftrabit_copy_can_stream(void)
{
    return FTRABIT_COPY_SSE2;
}

#if FTRABIT_COPY_SSE2
/* 16 bytes loaded once, streamed to k (16-byte aligned) and, if `both`, stored to d too. */
static inline __attribute__((always_inline)) void
ftrabit_copy_16(unsigned char *d, unsigned char *k, const unsigned char *s, const int both)
{
    __m128i v = _mm_loadu_si128((const __m128i *) s);
    if (both) {
        _mm_storeu_si128((__m128i *) d, v);
    }
    _mm_stream_si128((__m128i *) k, v);
}

/* The streamed copy to k and, if `both`, the ordinary one to d (not read otherwise).
 * Inlined into both callers with `both` a constant, so neither tests it per block. */
static inline __attribute__((always_inline)) void
ftrabit_copy_streamed(unsigned char *d, unsigned char *k, const unsigned char *s, size_t len,
                      const int both)
{
    size_t head = (size_t) (-(uintptr_t) k & 15);

    if (len < head + 16) { /* not one aligned 16-byte store: nothing to stream */
        head = len;
    }
    if (both) {
        memcpy(d, s, head);
    }
    memcpy(k, s, head);
    if (head == len) {
        return;
    }
    size_t i = head;
    for (; len - i >= 64; i += 64) {
        ftrabit_copy_16(d + i, k + i, s + i, both);
        ftrabit_copy_16(d + i + 16, k + i + 16, s + i + 16, both);
        ftrabit_copy_16(d + i + 32, k + i + 32, s + i + 32, both);
        ftrabit_copy_16(d + i + 48, k + i + 48, s + i + 48, both);
    }
    for (; len - i >= 16; i += 16) {
        ftrabit_copy_16(d + i, k + i, s + i, both);
    }
    _mm_sfence();
    if (both) {
        memcpy(d + i, s + i, len - i);
    }
    memcpy(k + i, s + i, len - i);
}

void ftrabit_copy_stream(void *dst, const void *src, size_t len)
{
    ftrabit_copy_streamed(dst, dst, src, len, 0);
}

void ftrabit_copy_twice(void *dst, void *kept, const void *src, size_t len)
{
    ftrabit_copy_streamed(dst, kept, src, len, 1);
}
#else
void ftrabit_copy_stream(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}

void ftrabit_copy_twice(void *dst, void *kept, const void *src, size_t len)
{
    memcpy(dst, src, len);
    memcpy(kept, src, len);
}
#endif
