/*
 * ompi-resilience: coll/ftrabit's copies of a collective's result (pure logic; see the
 * header).
 *
 * The streamed copy: memcpy up to the first 16-byte boundary of the destination, then
 * 64 bytes (a cache line when dst is line-aligned, which pool buffers are) per step as four
 * unaligned 16-byte loads and four aligned non-temporal stores, then 16-byte steps, then
 * memcpy for the last bytes. A non-temporal store goes to memory through a write-combining
 * buffer without the line being read first; the fence at the end orders those stores
 * before anything this process stores afterwards, as ordinary stores are.
 */
#include "ftr_nt_copy.h"

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
void ftrabit_copy_stream(void *dst, const void *src, size_t len)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (size_t) (-(uintptr_t) d & 15);

    if (len < head + 16) { /* not one aligned 16-byte store: nothing to stream */
        memcpy(d, s, len);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    len -= head;
    for (; len >= 64; d += 64, s += 64, len -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *) s);
        __m128i b = _mm_loadu_si128((const __m128i *) (s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *) (s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *) (s + 48));
        _mm_stream_si128((__m128i *) d, a);
        _mm_stream_si128((__m128i *) (d + 16), b);
        _mm_stream_si128((__m128i *) (d + 32), c);
        _mm_stream_si128((__m128i *) (d + 48), e);
    }
    for (; len >= 16; d += 16, s += 16, len -= 16) {
        _mm_stream_si128((__m128i *) d, _mm_loadu_si128((const __m128i *) s));
    }
    _mm_sfence();
    memcpy(d, s, len);
}
#else
void ftrabit_copy_stream(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}
#endif
