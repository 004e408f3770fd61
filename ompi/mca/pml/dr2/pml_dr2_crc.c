/*
 * ompi-resilience: pml/dr2 CRC32C, portable and SSE4.2 (pure logic; see the header).
 *
 * Inside this file a CRC is the raw register: the public functions invert it on the way in
 * and out, the implementations below never do. The register after bytes D from state s is
 * then linear: crc(s, D) = shift(s, |D|) ^ crc(0, D), where shift(s, n) is the register
 * after n zero bytes. That identity is what lets three streams run independently over
 * consecutive blocks A, B, C and be joined afterwards:
 *     crc(s, A B C) = shift(shift(crc(s, A), |B|) ^ crc(0, B), |C|) ^ crc(0, C)
 * shift() over a fixed n is a 32x32 matrix over GF(2); we expand it into four 256-entry
 * tables (one per byte of the register) so that applying it costs four loads.
 */
#include "pml_dr2_crc.h"

#include <string.h>

#if !defined(__GNUC__)
#error "pml/dr2 needs a GNU C compatible compiler (constructor and target attributes)"
#endif

#if defined(__x86_64__)
#define PML_DR2_CRC_HAVE_SSE42 1
#include <cpuid.h>
#include <immintrin.h>
#include <nmmintrin.h>
#endif /* PML_DR2_CRC_HAVE_SSE42 */

#define CRC32C_POLY 0x82F63B78u /* Castagnoli, bit-reflected */

/* Bytes per stream in the interleaved loops, tried in turn: a long block amortises the
 * joins on big buffers, the shorter ones keep three streams busy down to a few hundred
 * bytes, so that only a tail of less than 3 * 64 bytes runs on one stream. */
#define CRC32C_LONG_BLOCK 8192
#define CRC32C_SHORT_BLOCK 256
#define CRC32C_TINY_BLOCK 64
/* The fused copy checksums one cache line of each stream, then copies those lines. */
#define CRC32C_COPY_CHUNK 64

typedef uint32_t (*crc32c_update_fn_t)(uint32_t crc, const unsigned char *buf, size_t len);
typedef uint32_t (*crc32c_copy_fn_t)(uint32_t crc, unsigned char *dst, const unsigned char *src,
                                      size_t len);
typedef uint32_t (*crc32c_header_fn_t)(const unsigned char *buf, size_t len);
typedef uint32_t (*crc32c_header_payload_fn_t)(const unsigned char *hdr, size_t hdr_len,
                                               unsigned char *dst, const unsigned char *src,
                                               size_t len);

static struct {
    pml_dr2_crc32c_impl_t impl;
    crc32c_update_fn_t update;
    crc32c_copy_fn_t copy;
    crc32c_header_fn_t header;
    crc32c_header_payload_fn_t header_payload;
} crc32c_ops;

/* Bytes 4..7 of a header (its checksum field) count as zeros in its CRC. */
#define CRC32C_HEADER_HOLE_OFF 4
#define CRC32C_HEADER_HOLE_LEN 4

/* slicing_table[k][b]: the register after byte b followed by k zero bytes, from state 0. */
static uint32_t slicing_table[8][256];

#ifdef PML_DR2_CRC_HAVE_SSE42
/* shift(crc, n) for one n: byte[k][b] is the shift of b placed in byte k of the register,
 * and the shift of a register is the XOR of the shifts of its four bytes. */
typedef struct {
    uint32_t byte[4][256];
} crc32c_shift_table_t;

static crc32c_shift_table_t shift_long;  /* n = CRC32C_LONG_BLOCK */
static crc32c_shift_table_t shift_short; /* n = CRC32C_SHORT_BLOCK */
static crc32c_shift_table_t shift_tiny;  /* n = CRC32C_TINY_BLOCK */
#endif /* PML_DR2_CRC_HAVE_SSE42 */

/* ---- byte order helpers ------------------------------------------------------------- */

static inline int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;

    memcpy(&first, &one, 1);
    return first == 1; /* folded to a constant by the compiler */
}

static inline uint64_t byteswap64(uint64_t w)
{
    w = ((w & 0x00FF00FF00FF00FFull) << 8) | ((w >> 8) & 0x00FF00FF00FF00FFull);
    w = ((w & 0x0000FFFF0000FFFFull) << 16) | ((w >> 16) & 0x0000FFFF0000FFFFull);
    return (w << 32) | (w >> 32);
}

/* A CRC eats the first byte in memory first: give it the word in little-endian order. */
static inline uint64_t native_to_le64(uint64_t w)
{
    return host_is_little_endian() ? w : byteswap64(w);
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;

    memcpy(&w, p, sizeof(w));
    return w;
}

static inline void store64(unsigned char *p, uint64_t w)
{
    memcpy(p, &w, sizeof(w));
}

/* ---- portable: slicing-by-8 --------------------------------------------------------- */

static inline uint32_t portable_byte(uint32_t crc, unsigned char b)
{
    return (crc >> 8) ^ slicing_table[0][(crc ^ b) & 0xFF];
}

/* `w` holds eight message bytes, the first one in its low byte. */
static inline uint32_t portable_word(uint32_t crc, uint64_t w)
{
    w ^= crc;
    return slicing_table[7][w & 0xFF] ^ slicing_table[6][(w >> 8) & 0xFF]
           ^ slicing_table[5][(w >> 16) & 0xFF] ^ slicing_table[4][(w >> 24) & 0xFF]
           ^ slicing_table[3][(w >> 32) & 0xFF] ^ slicing_table[2][(w >> 40) & 0xFF]
           ^ slicing_table[1][(w >> 48) & 0xFF] ^ slicing_table[0][w >> 56];
}

static uint32_t portable_update(uint32_t crc, const unsigned char *p, size_t len)
{
    for (; len > 0 && ((uintptr_t) p & 7) != 0; len--) {
        crc = portable_byte(crc, *p++);
    }
    for (; len >= 8; len -= 8, p += 8) {
        crc = portable_word(crc, native_to_le64(load64(p)));
    }
    for (; len > 0; len--) {
        crc = portable_byte(crc, *p++);
    }
    return crc;
}

static uint32_t portable_copy(uint32_t crc, unsigned char *dst, const unsigned char *src,
                              size_t len)
{
    for (; len > 0 && ((uintptr_t) src & 7) != 0; len--) {
        crc = portable_byte(crc, *dst++ = *src++);
    }
    for (; len >= 8; len -= 8, src += 8, dst += 8) {
        uint64_t w = load64(src);

        store64(dst, w);
        crc = portable_word(crc, native_to_le64(w));
    }
    for (; len > 0; len--) {
        crc = portable_byte(crc, *dst++ = *src++);
    }
    return crc;
}

/* Raw register in and out, like the other implementations: the caller inverts. */
static uint32_t portable_header(const unsigned char *p, size_t len)
{
    static const unsigned char zeros[CRC32C_HEADER_HOLE_LEN];
    uint32_t crc = portable_update(~0u, p, CRC32C_HEADER_HOLE_OFF);

    crc = portable_update(crc, zeros, CRC32C_HEADER_HOLE_LEN);
    return portable_update(crc, p + CRC32C_HEADER_HOLE_OFF + CRC32C_HEADER_HOLE_LEN,
                           len - CRC32C_HEADER_HOLE_OFF - CRC32C_HEADER_HOLE_LEN);
}

/* ---- SSE4.2: the crc32 instruction -------------------------------------------------- */

#ifdef PML_DR2_CRC_HAVE_SSE42

#define SSE42_FN __attribute__((target("sse4.2")))
#define SSE42_INLINE static inline __attribute__((always_inline, target("sse4.2")))

static inline uint32_t shift_by_table(const crc32c_shift_table_t *t, uint32_t crc)
{
    return t->byte[0][crc & 0xFF] ^ t->byte[1][(crc >> 8) & 0xFF]
           ^ t->byte[2][(crc >> 16) & 0xFF] ^ t->byte[3][crc >> 24];
}

/* One stream over src[0 .. len-1], copying to dst when `copy` (dst is not touched, and may
 * be NULL, otherwise). `copy` is a constant at every call site, so the copying and the
 * checking variants each compile without a branch. The tail takes 4, 2, 1 bytes at a time:
 * each crc32 has a 3-cycle latency, and short buffers (headers) are mostly tail. */
SSE42_INLINE uint32_t sse42_one_stream(uint32_t crc, unsigned char *dst,
                                       const unsigned char *src, size_t len, int copy)
{
    uint64_t crc64 = crc;
    size_t i = 0;

    for (; len - i >= 8; i += 8) {
        uint64_t w = load64(src + i);

        if (copy) {
            store64(dst + i, w);
        }
        crc64 = _mm_crc32_u64(crc64, w);
    }
    crc = (uint32_t) crc64;
    if (len - i >= 4) {
        uint32_t w;

        memcpy(&w, src + i, 4);
        if (copy) {
            memcpy(dst + i, &w, 4);
        }
        crc = _mm_crc32_u32(crc, w);
        i += 4;
    }
    if (len - i >= 2) {
        uint16_t w;

        memcpy(&w, src + i, 2);
        if (copy) {
            memcpy(dst + i, &w, 2);
        }
        crc = _mm_crc32_u16(crc, w);
        i += 2;
    }
    if (len - i >= 1) {
        if (copy) {
            dst[i] = src[i];
        }
        crc = _mm_crc32_u8(crc, src[i]);
    }
    return crc;
}

/* From offset *done, consume as many blocks of 3 * `block` bytes as fit in len, three
 * streams at a time, and advance *done. `block` is a constant at every call site and a
 * multiple of CRC32C_COPY_CHUNK. */
SSE42_INLINE uint32_t sse42_three_streams(uint32_t crc, unsigned char *dst,
                                          const unsigned char *src, size_t len, size_t *done,
                                          size_t block, const crc32c_shift_table_t *shift,
                                          int copy)
{
    size_t at = *done;

    for (; len - at >= 3 * block; at += 3 * block) {
        const unsigned char *s = src + at;
        uint64_t crc0 = crc, crc1 = 0, crc2 = 0;

        for (size_t i = 0; i < block; i += CRC32C_COPY_CHUNK) {
            for (size_t j = i; j < i + CRC32C_COPY_CHUNK; j += 8) {
                crc0 = _mm_crc32_u64(crc0, load64(s + j));
                crc1 = _mm_crc32_u64(crc1, load64(s + block + j));
                crc2 = _mm_crc32_u64(crc2, load64(s + 2 * block + j));
            }
            if (copy) {
                /* The chunks were just loaded into L1: copying them now with wide moves
                 * beats storing each 8-byte word, once the buffers spill out of L1. */
                unsigned char *d = dst + at;

                memcpy(d + i, s + i, CRC32C_COPY_CHUNK);
                memcpy(d + block + i, s + block + i, CRC32C_COPY_CHUNK);
                memcpy(d + 2 * block + i, s + 2 * block + i, CRC32C_COPY_CHUNK);
            }
        }
        crc = shift_by_table(shift, (uint32_t) crc0) ^ (uint32_t) crc1;
        crc = shift_by_table(shift, crc) ^ (uint32_t) crc2;
    }
    *done = at;
    return crc;
}

/* A buffer long enough for three streams: the block loops, then the rest as one stream.
 * Out of line, so that the short buffers of small messages (the common case on the
 * latency path) run in callers that save no registers for these loops. */
static __attribute__((noinline, target("sse4.2"))) uint32_t
sse42_interleaved_long(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t len,
                       int copy)
{
    /* Align the source for the block loops: a load that straddles two cache lines costs
     * more. Not worth it for the single stream of a short buffer. */
    size_t done = (8 - ((uintptr_t) src & 7)) & 7;

    crc = sse42_one_stream(crc, dst, src, done, copy);
    crc = sse42_three_streams(crc, dst, src, len, &done, CRC32C_LONG_BLOCK, &shift_long, copy);
    crc = sse42_three_streams(crc, dst, src, len, &done, CRC32C_SHORT_BLOCK, &shift_short,
                              copy);
    crc = sse42_three_streams(crc, dst, src, len, &done, CRC32C_TINY_BLOCK, &shift_tiny, copy);
    return sse42_one_stream(crc, copy ? dst + done : NULL, src + done, len - done, copy);
}

SSE42_INLINE uint32_t sse42_interleaved(uint32_t crc, unsigned char *dst,
                                        const unsigned char *src, size_t len, int copy)
{
    if (len >= 3 * CRC32C_TINY_BLOCK + 7) {
        return sse42_interleaved_long(crc, dst, src, len, copy);
    }
    return sse42_one_stream(crc, dst, src, len, copy);
}

static SSE42_FN uint32_t sse42_1way_update(uint32_t crc, const unsigned char *buf, size_t len)
{
    return sse42_one_stream(crc, NULL, buf, len, 0);
}

static SSE42_FN uint32_t sse42_1way_copy(uint32_t crc, unsigned char *dst,
                                         const unsigned char *src, size_t len)
{
    return sse42_one_stream(crc, dst, src, len, 1);
}

/* A header is short (16, 20, 44 or 48 bytes): one stream, the first word loaded with its checksum
 * bytes masked off (x86 is little-endian: bytes 4..7 are the word's high half). Inline, so
 * that a constant length unrolls the stream. */
SSE42_INLINE uint32_t sse42_header_inline(const unsigned char *p, size_t len)
{
    uint64_t first = load64(p) & UINT64_C(0x00000000FFFFFFFF);

    return sse42_one_stream((uint32_t) _mm_crc32_u64(~0u, first), NULL, p + 8, len - 8, 0);
}

static SSE42_FN uint32_t sse42_header(const unsigned char *p, size_t len)
{
    /* ACK and NACK, the headers that travel alone, without a loop */
    return 20 == len ? sse42_header_inline(p, 20) : sse42_header_inline(p, len);
}

/* The header of a header-and-payload checksum: the EAGER and TINY headers' lengths as
 * constants, so that their words are checksummed without a loop. */
SSE42_INLINE uint32_t sse42_data_header(const unsigned char *hdr, size_t hdr_len)
{
    return 48 == hdr_len   ? sse42_header_inline(hdr, 48)
           : 16 == hdr_len ? sse42_header_inline(hdr, 16)
                           : sse42_header_inline(hdr, hdr_len);
}

/* Header and payload in one function: no indirect call in between, and a short payload
 * goes straight to the single stream. */
static SSE42_FN uint32_t sse42_header_payload(const unsigned char *hdr, size_t hdr_len,
                                              unsigned char *dst, const unsigned char *src,
                                              size_t len)
{
    uint32_t crc = sse42_data_header(hdr, hdr_len);

    if (NULL != dst) {
        return sse42_interleaved(crc, dst, src, len, 1);
    }
    return sse42_interleaved(crc, NULL, src, len, 0);
}

static SSE42_FN uint32_t sse42_update(uint32_t crc, const unsigned char *buf, size_t len)
{
    return sse42_interleaved(crc, NULL, buf, len, 0);
}

static SSE42_FN uint32_t sse42_copy(uint32_t crc, unsigned char *dst, const unsigned char *src,
                                    size_t len)
{
    return sse42_interleaved(crc, dst, src, len, 1);
}

static int cpu_has_sse42(void)
{
    unsigned int eax, ebx, ecx, edx;

    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        return 0;
    }
    return (ecx & bit_SSE4_2) != 0;
}

/* ---- AVX-512 VPCLMULQDQ: folding by carry-less multiplication -------------------------
 * The crc32 instruction retires 8 bytes a cycle at best; on machines that copy from cache
 * at 50 GB/s and more that makes the checksum, not the copy, the limit. Folding instead
 * multiplies the running remainder, 128 bits per lane, by x^D mod P (D the distance it
 * moves) and adds the data D bits further on: four 512-bit accumulators take 256 bytes a
 * step, four 128-bit lanes each. At the end the accumulators are folded into one 128-bit
 * value, whose CRC (crc32 instruction, from 0) is the running CRC; the rest of the buffer
 * goes on as SSE42. Bit-reflected throughout, as the crc32 instruction: a lane's low 64
 * bits come first in the message, so they move D + 64 bits and the high ones D. */

#define VPCLMUL_FN __attribute__((target("sse4.2,pclmul,avx512f,vpclmulqdq")))
#define VPCLMUL_BLOCK 256 /* bytes per step: four 64-byte accumulators */
/* Unrolls a loop over the four accumulators (or a round's steps and words). At -O2 GCC
 * leaves such loops rolled, and then keeps the accumulator array in memory instead of in
 * zmm registers: 60 GB/s instead of 80. */
#define UNROLL_FULLY _Pragma("GCC unroll 8")

/* x^n mod P, bit-reflected (bit 31 is x^0) */
static uint32_t xpow_mod_p(unsigned n)
{
    uint32_t r = 0x80000000u;

    while (n-- > 0) {
        r = (r & 1) ? (r >> 1) ^ CRC32C_POLY : r >> 1;
    }
    return r;
}

/* The multipliers that move a 128-bit lane by `bits`: low half x^(bits+31), high half
 * x^(bits-33) (the 32 and the reflection's one-bit offset of the 64-bit product). */
typedef struct {
    uint64_t lo, hi;
} fold_key_t;

static fold_key_t fold_key(unsigned bits)
{
    fold_key_t k = {xpow_mod_p(bits + 31), xpow_mod_p(bits - 64 + 31)};
    return k;
}

static fold_key_t key_2048, key_1536, key_1024, key_512, key_384, key_256, key_128;

/* ---- the folds and the crc32 instruction side by side ----------------------------------
 * The folds keep the carry-less multiplier busy; the crc32 instruction runs on an integer
 * port they leave idle. A hybrid block gives both work in the same loop: its first
 * HYBRID_FOLDED bytes are folded, the three slices of HYBRID_SLICE bytes after them run as
 * three crc32 streams. The fold accumulators go on from block to block, jumping over the
 * slices with a longer fold (key_hybrid_hop); the slices' CRCs, joined per block, go into
 * a second register that starts from the caller's CRC. At the end the folded stream is
 * moved past the last block's slices and the two registers are added (the identity at the
 * top of this file). On the AMD EPYC (Zen 5) this was tuned on: 68 GB/s folding alone, 80
 * with the slices (64 KiB in cache, bench/dr2_crc_bench); 3 x 64 crc32 bytes per 768
 * folded measured best among 32 to 160 bytes per stream and round. Used for checksums
 * without a copy (see vpclmul_long). */
#define HYBRID_ROUNDS 8                                   /* loop rounds per block */
#define HYBRID_ROUND_FOLDED (3 * VPCLMUL_BLOCK)           /* folded bytes per round */
#define HYBRID_ROUND_SLICE 64                             /* bytes per stream per round */
#define HYBRID_FOLDED (HYBRID_ROUNDS * HYBRID_ROUND_FOLDED)    /* 6144 */
#define HYBRID_SLICE (HYBRID_ROUNDS * HYBRID_ROUND_SLICE)      /* 512 */
#define HYBRID_BLOCK (HYBRID_FOLDED + 3 * HYBRID_SLICE)        /* 7680 */

static fold_key_t key_hybrid_hop; /* from the last folded step of a block to the next block */

/* Multipliers for vpclmul_shift: x^(8n - 33) mod P moves a register over n zero bytes. */
static uint64_t shift_key_slice, shift_key_slices, shift_key_block;

static void fold_keys_init(void)
{
    key_2048 = fold_key(2048);
    key_1536 = fold_key(1536);
    key_1024 = fold_key(1024);
    key_512 = fold_key(512);
    key_384 = fold_key(384);
    key_256 = fold_key(256);
    key_128 = fold_key(128);
    key_hybrid_hop = fold_key(8 * (VPCLMUL_BLOCK + 3 * HYBRID_SLICE));
    shift_key_slice = xpow_mod_p(8 * HYBRID_SLICE - 33);
    shift_key_slices = xpow_mod_p(8 * 3 * HYBRID_SLICE - 33);
    shift_key_block = xpow_mod_p(8 * HYBRID_BLOCK - 33);
}

static inline VPCLMUL_FN __m512i zkey(fold_key_t k)
{
    return _mm512_set_epi64((long long) k.hi, (long long) k.lo, (long long) k.hi,
                            (long long) k.lo, (long long) k.hi, (long long) k.lo,
                            (long long) k.hi, (long long) k.lo);
}

static inline VPCLMUL_FN __m512i zfold(__m512i x, __m512i k)
{
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}

static inline VPCLMUL_FN __m128i xfold(__m128i x, fold_key_t key)
{
    __m128i k = _mm_set_epi64x((long long) key.hi, (long long) key.lo);

    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* x folded forward by the key's distance, plus the data d there (one three-way XOR) */
static inline VPCLMUL_FN __m512i zfold_add(__m512i x, __m512i k, __m512i d)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96);
}

/* One step: the four accumulators folded by k onto the 256 bytes at src (copied to dst
 * when `copy`). */
static inline __attribute__((always_inline)) VPCLMUL_FN void
vpclmul_step(__m512i x[4], __m512i k, unsigned char *dst, const unsigned char *src, int copy)
{
    UNROLL_FULLY for (int i = 0; i < 4; i++) {
        __m512i d = _mm512_loadu_si512(src + 64 * i);

        if (copy) {
            _mm512_storeu_si512(dst + 64 * i, d);
        }
        x[i] = zfold_add(x[i], k, d);
    }
}

/* The CRC (from 0) of the data the four accumulators hold, up to the end of their last
 * step: four accumulators into one, then its four lanes into one, then crc32 from 0. */
static inline VPCLMUL_FN uint32_t vpclmul_reduce(const __m512i x[4])
{
    __m512i all = _mm512_ternarylogic_epi64(zfold(x[0], zkey(key_1536)),
                                            zfold(x[1], zkey(key_1024)),
                                            zfold(x[2], zkey(key_512)), 0x96);
    __m128i l0, l1, l2, l3, l;

    all = _mm512_xor_si512(all, x[3]);
    l0 = _mm512_extracti32x4_epi32(all, 0);
    l1 = _mm512_extracti32x4_epi32(all, 1);
    l2 = _mm512_extracti32x4_epi32(all, 2);
    l3 = _mm512_extracti32x4_epi32(all, 3);
    l = _mm_xor_si128(_mm_xor_si128(xfold(l0, key_384), xfold(l1, key_256)),
                      _mm_xor_si128(xfold(l2, key_128), l3));
    return (uint32_t) _mm_crc32_u64(_mm_crc32_u64(0, (uint64_t) _mm_cvtsi128_si64(l)),
                                    (uint64_t) _mm_extract_epi64(l, 1));
}

/* The register crc moved over the zero bytes whose multiplier is `key` (a shift_key_*):
 * the 64-bit product, reduced by the crc32 instruction (which multiplies by x^33 more). */
static inline VPCLMUL_FN uint32_t vpclmul_shift(uint32_t crc, uint64_t key)
{
    __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int) crc),
                                           _mm_cvtsi64_si128((long long) key), 0x00);

    return (uint32_t) _mm_crc32_u64(0, (uint64_t) _mm_cvtsi128_si64(product));
}

/* The CRC of src[0 .. *done-1] continued from crc, *done the largest multiple of
 * VPCLMUL_BLOCK in len (len >= 2 * VPCLMUL_BLOCK), copying to dst when `copy`. */
static inline __attribute__((always_inline)) VPCLMUL_FN uint32_t
vpclmul_fold(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t len,
             size_t *done, int copy)
{
    __m512i k = zkey(key_2048), x[4];
    size_t at;

    UNROLL_FULLY for (int i = 0; i < 4; i++) {
        x[i] = _mm512_loadu_si512(src + 64 * i);
        if (copy) {
            _mm512_storeu_si512(dst + 64 * i, x[i]);
        }
    }
    x[0] = _mm512_xor_si512(x[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int) crc)));
    for (at = VPCLMUL_BLOCK; len - at >= VPCLMUL_BLOCK; at += VPCLMUL_BLOCK) {
        vpclmul_step(x, k, copy ? dst + at : NULL, src + at, copy);
    }
    *done = at;
    return vpclmul_reduce(x);
}

/* The CRC of `nblocks` hybrid blocks at src continued from crc. The accumulators start at
 * zero: the first step of every block folds with the hop key, which on zeros changes
 * nothing. */
static inline __attribute__((always_inline)) VPCLMUL_FN uint32_t
hybrid_blocks(uint32_t crc, const unsigned char *src, size_t nblocks)
{
    __m512i k = zkey(key_2048), hop = zkey(key_hybrid_hop), x[4];
    uint32_t slices_crc = crc; /* the slices so far, as if the folded bytes were zeros */

    UNROLL_FULLY for (int i = 0; i < 4; i++) {
        x[i] = _mm512_setzero_si512();
    }
    for (size_t b = 0; b < nblocks; b++) {
        const unsigned char *folded = src + b * HYBRID_BLOCK, *slice = folded + HYBRID_FOLDED;
        uint64_t crc0 = 0, crc1 = 0, crc2 = 0;

        for (size_t r = 0; r < HYBRID_ROUNDS; r++) {
            size_t f = r * HYBRID_ROUND_FOLDED, s = r * HYBRID_ROUND_SLICE;

            UNROLL_FULLY for (size_t step = 0; step < 3; step++) {
                size_t at = f + step * VPCLMUL_BLOCK;

                vpclmul_step(x, 0 == at ? hop : k, NULL, folded + at, 0);
            }
            UNROLL_FULLY for (size_t j = s; j < s + HYBRID_ROUND_SLICE; j += 8) {
                crc0 = _mm_crc32_u64(crc0, load64(slice + j));
                crc1 = _mm_crc32_u64(crc1, load64(slice + HYBRID_SLICE + j));
                crc2 = _mm_crc32_u64(crc2, load64(slice + 2 * HYBRID_SLICE + j));
            }
        }
        crc0 = vpclmul_shift((uint32_t) crc0, shift_key_slice) ^ (uint32_t) crc1;
        crc0 = vpclmul_shift((uint32_t) crc0, shift_key_slice) ^ (uint32_t) crc2;
        slices_crc = vpclmul_shift(slices_crc, shift_key_block) ^ (uint32_t) crc0;
    }
    return vpclmul_shift(vpclmul_reduce(x), shift_key_slices) ^ slices_crc;
}

/* A buffer of at least 2 * VPCLMUL_BLOCK bytes: whole hybrid blocks (checksum only), then
 * folds over what is left, then the rest (under 256 bytes) as SSE42. Instantiated once
 * copying and once checking, so that neither loop tests `copy`. */
static inline __attribute__((always_inline)) VPCLMUL_FN uint32_t
vpclmul_long(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t len, int copy)
{
    size_t done = 0, folded;

    /* Checksum only: copying, the hybrid block measured slower over btl/sm (a 1 MiB
     * ping-pong 27.9 us against 23.9 with the plain folds, cores sharing a cache), though
     * faster in a single process (80 GB/s against 67): its four read streams 6 KiB apart
     * seem to suit data coming from another core worse. */
    if (!copy && len >= HYBRID_BLOCK) {
        size_t nblocks = len / HYBRID_BLOCK;

        crc = hybrid_blocks(crc, src, nblocks);
        done = nblocks * HYBRID_BLOCK;
    }
    if (len - done >= 2 * VPCLMUL_BLOCK) {
        crc = vpclmul_fold(crc, copy ? dst + done : NULL, src + done, len - done, &folded,
                           copy);
        done += folded;
    }
    return sse42_interleaved(crc, copy ? dst + done : NULL, src + done, len - done, copy);
}

static __attribute__((noinline)) VPCLMUL_FN uint32_t
vpclmul_long_copy(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t len)
{
    return vpclmul_long(crc, dst, src, len, 1);
}

static __attribute__((noinline)) VPCLMUL_FN uint32_t
vpclmul_long_check(uint32_t crc, const unsigned char *src, size_t len)
{
    return vpclmul_long(crc, NULL, src, len, 0);
}

static inline __attribute__((always_inline)) VPCLMUL_FN uint32_t
vpclmul_interleaved(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t len,
                    int copy)
{
    if (len < 2 * VPCLMUL_BLOCK) {
        return sse42_interleaved(crc, dst, src, len, copy);
    }
    return copy ? vpclmul_long_copy(crc, dst, src, len) : vpclmul_long_check(crc, src, len);
}

static VPCLMUL_FN uint32_t vpclmul_update(uint32_t crc, const unsigned char *buf, size_t len)
{
    return vpclmul_interleaved(crc, NULL, buf, len, 0);
}

static VPCLMUL_FN uint32_t vpclmul_copy(uint32_t crc, unsigned char *dst,
                                        const unsigned char *src, size_t len)
{
    return vpclmul_interleaved(crc, dst, src, len, 1);
}

static VPCLMUL_FN uint32_t vpclmul_header_payload(const unsigned char *hdr, size_t hdr_len,
                                                  unsigned char *dst, const unsigned char *src,
                                                  size_t len)
{
    uint32_t crc;

    if (len < 2 * VPCLMUL_BLOCK) {
        return sse42_header_payload(hdr, hdr_len, dst, src, len); /* too short to fold */
    }
    crc = sse42_data_header(hdr, hdr_len);
    return NULL != dst ? vpclmul_long_copy(crc, dst, src, len)
                       : vpclmul_long_check(crc, src, len);
}

/* AVX-512F and VPCLMULQDQ, and the operating system saving the 512-bit state. */
static int cpu_has_vpclmul(void)
{
    unsigned int eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;

    if (!cpu_has_sse42() || !__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE)
        || !(ecx & bit_PCLMUL) || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)
        || !(ebx & bit_AVX512F) || !(ecx & bit_VPCLMULQDQ)) {
        return 0;
    }
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void) xcr0_hi;
    return (xcr0_lo & 0xE6) == 0xE6; /* SSE, AVX, opmask, ZMM0-15 upper, ZMM16-31 */
}

#endif /* PML_DR2_CRC_HAVE_SSE42 */

/* ---- tables ------------------------------------------------------------------------- */

#ifdef PML_DR2_CRC_HAVE_SSE42
/* A linear map on 32-bit registers over GF(2): column i is the image of bit i. */
typedef struct {
    uint32_t col[32];
} gf2_matrix_t;

static uint32_t gf2_apply(const gf2_matrix_t *m, uint32_t vec)
{
    uint32_t sum = 0;

    for (int i = 0; vec != 0; i++, vec >>= 1) {
        if (vec & 1) {
            sum ^= m->col[i];
        }
    }
    return sum;
}

/* a then b: the map x -> b(a(x)). */
static gf2_matrix_t gf2_compose(const gf2_matrix_t *a, const gf2_matrix_t *b)
{
    gf2_matrix_t r;

    for (int i = 0; i < 32; i++) {
        r.col[i] = gf2_apply(b, a->col[i]);
    }
    return r;
}

/* The register after `nbytes` zero bytes, as a matrix (square and multiply). */
static gf2_matrix_t zeros_operator(size_t nbytes)
{
    gf2_matrix_t power, result;

    /* One zero bit: shift right, reduce by the polynomial when bit 0 falls out. */
    power.col[0] = CRC32C_POLY;
    for (int i = 1; i < 32; i++) {
        power.col[i] = 1u << (i - 1);
    }
    for (int i = 0; i < 3; i++) { /* 1 -> 2 -> 4 -> 8 bits */
        power = gf2_compose(&power, &power);
    }
    for (int i = 0; i < 32; i++) {
        result.col[i] = 1u << i;
    }
    for (; nbytes != 0; nbytes >>= 1) {
        if (nbytes & 1) {
            result = gf2_compose(&result, &power);
        }
        power = gf2_compose(&power, &power);
    }
    return result;
}

static void shift_table_init(crc32c_shift_table_t *table, size_t nbytes)
{
    gf2_matrix_t op = zeros_operator(nbytes);

    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            table->byte[k][b] = gf2_apply(&op, b << (8 * k));
        }
    }
}
#endif /* PML_DR2_CRC_HAVE_SSE42 */

static void slicing_table_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t crc = b;

        for (int bit = 0; bit < 8; bit++) {
            crc = (crc & 1) ? (crc >> 1) ^ CRC32C_POLY : crc >> 1;
        }
        slicing_table[0][b] = crc;
    }
    for (int k = 1; k < 8; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t prev = slicing_table[k - 1][b];

            slicing_table[k][b] = (prev >> 8) ^ slicing_table[0][prev & 0xFF];
        }
    }
}

/* ---- selection and the public entry points ------------------------------------------ */

/* Header and payload for the implementations without a fused one: the two steps. */
static uint32_t composed_header_payload(const unsigned char *hdr, size_t hdr_len,
                                        unsigned char *dst, const unsigned char *src,
                                        size_t len)
{
    uint32_t crc = crc32c_ops.header(hdr, hdr_len);

    if (0 == len) {
        return crc;
    }
    return NULL != dst ? crc32c_ops.copy(crc, dst, src, len) : crc32c_ops.update(crc, src, len);
}

int pml_dr2_crc32c_select(pml_dr2_crc32c_impl_t impl)
{
    switch (impl) {
    case PML_DR2_CRC32C_AUTO:
#ifdef PML_DR2_CRC_HAVE_SSE42
        if (cpu_has_vpclmul()) {
            return pml_dr2_crc32c_select(PML_DR2_CRC32C_VPCLMUL);
        }
        if (cpu_has_sse42()) {
            return pml_dr2_crc32c_select(PML_DR2_CRC32C_SSE42);
        }
#endif /* PML_DR2_CRC_HAVE_SSE42 */
        return pml_dr2_crc32c_select(PML_DR2_CRC32C_PORTABLE);
    case PML_DR2_CRC32C_PORTABLE:
        crc32c_ops.update = portable_update;
        crc32c_ops.copy = portable_copy;
        crc32c_ops.header = portable_header;
        crc32c_ops.header_payload = composed_header_payload;
        break;
#ifdef PML_DR2_CRC_HAVE_SSE42
    case PML_DR2_CRC32C_SSE42_1WAY:
        if (!cpu_has_sse42()) {
            return -1;
        }
        crc32c_ops.update = sse42_1way_update;
        crc32c_ops.copy = sse42_1way_copy;
        crc32c_ops.header = sse42_header;
        crc32c_ops.header_payload = composed_header_payload;
        break;
    case PML_DR2_CRC32C_SSE42:
        if (!cpu_has_sse42()) {
            return -1;
        }
        crc32c_ops.update = sse42_update;
        crc32c_ops.copy = sse42_copy;
        crc32c_ops.header = sse42_header;
        crc32c_ops.header_payload = sse42_header_payload;
        break;
    case PML_DR2_CRC32C_VPCLMUL:
        if (!cpu_has_vpclmul()) {
            return -1;
        }
        crc32c_ops.update = vpclmul_update;
        crc32c_ops.copy = vpclmul_copy;
        crc32c_ops.header = sse42_header;
        crc32c_ops.header_payload = vpclmul_header_payload;
        break;
#endif /* PML_DR2_CRC_HAVE_SSE42 */
    default:
        return -1;
    }
    crc32c_ops.impl = impl;
    return 0;
}

pml_dr2_crc32c_impl_t pml_dr2_crc32c_selected(void)
{
    return crc32c_ops.impl;
}

const char *pml_dr2_crc32c_impl_name(pml_dr2_crc32c_impl_t impl)
{
    switch (impl) {
    case PML_DR2_CRC32C_AUTO:
        return "auto";
    case PML_DR2_CRC32C_PORTABLE:
        return "portable";
    case PML_DR2_CRC32C_SSE42_1WAY:
        return "sse42-1way";
    case PML_DR2_CRC32C_SSE42:
        return "sse42";
    case PML_DR2_CRC32C_VPCLMUL:
        return "vpclmul";
    }
    return "unknown";
}

/* Runs when the library (or the component) is loaded, before any thread can ask for a CRC:
 * the tables are filled and the implementation chosen exactly once, with no lock on the
 * data path and no "forgot to call init" failure mode. */
static void __attribute__((constructor)) crc32c_load(void)
{
    slicing_table_init();
#ifdef PML_DR2_CRC_HAVE_SSE42
    shift_table_init(&shift_long, CRC32C_LONG_BLOCK);
    shift_table_init(&shift_short, CRC32C_SHORT_BLOCK);
    shift_table_init(&shift_tiny, CRC32C_TINY_BLOCK);
    fold_keys_init();
#endif /* PML_DR2_CRC_HAVE_SSE42 */
    (void) pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
}

uint32_t pml_dr2_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (len == 0) {
        return crc;
    }
    return ~crc32c_ops.update(~crc, buf, len);
}

uint32_t pml_dr2_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    if (len == 0) {
        return crc;
    }
    return ~crc32c_ops.copy(~crc, dst, src, len);
}

uint32_t pml_dr2_crc32c_header(const void *buf, size_t len)
{
    return ~crc32c_ops.header(buf, len);
}

uint32_t pml_dr2_crc32c_header_payload(const void *hdr, size_t hdr_len, void *dst,
                                       const void *src, size_t len)
{
    return ~crc32c_ops.header_payload(hdr, hdr_len, dst, src, len);
}

int pml_dr2_checksum_on_btl(pml_dr2_checksum_policy_t policy, const char *btl)
{
    /* BTLs whose segments never leave the node's memory ("vader": sm's name before 5.0) */
    static const char *const in_memory[] = {"sm", "self", "vader"};

    if (PML_DR2_CHECKSUM_AUTO != policy) {
        return PML_DR2_CHECKSUM_CRC32C == policy;
    }
    if (NULL == btl) {
        return 1;
    }
    for (size_t i = 0; i < sizeof(in_memory) / sizeof(in_memory[0]); i++) {
        if (0 == strcmp(btl, in_memory[i])) {
            return 0;
        }
    }
    return 1;
}
