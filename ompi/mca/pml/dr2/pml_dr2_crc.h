/*
 * ompi-resilience: pml/dr2 CRC32C (Castagnoli).
 *
 * Pure logic, no MPI. Every dr2 fragment carries CRC32C checksums (see pml_dr2_hdr.h), so
 * the checksum sits on the data path of every byte sent: it has to run at memory speed and
 * be fused with the copy that packs or unpacks the data, so that the data is read once.
 *
 * Two implementations, chosen once at load time from cpuid:
 *  - portable: slicing-by-8 tables (any CPU, either byte order);
 *  - sse42: the SSE4.2 `crc32` instruction on three interleaved streams (its latency is
 *    three times its throughput), the three partial CRCs combined by shifting them over
 *    the following bytes with precomputed tables (no carry-less multiply needed).
 * Both compute the same function; pml_dr2_crc32c_select() forces one (tests, benchmarks).
 *
 * Conventions are those of zlib's crc32(): the CRC register is preset to ~0 and inverted
 * at the end inside every call, so the value a call returns is the standard CRC32C of the
 * bytes seen so far and is what the next call takes to continue:
 *
 *     uint32_t crc = pml_dr2_crc32c(PML_DR2_CRC32C_INIT, a, alen);
 *     crc = pml_dr2_crc32c(crc, b, blen);       == pml_dr2_crc32c(0, a||b, alen + blen)
 *
 * pml_dr2_crc32c(0, "123456789", 9) == 0xE3069283 (the standard check value).
 */
#ifndef PML_DR2_CRC_H
#define PML_DR2_CRC_H

#include <stddef.h>
#include <stdint.h>

/* The value to start a CRC with: the CRC of zero bytes. */
#define PML_DR2_CRC32C_INIT 0u

typedef enum {
    PML_DR2_CRC32C_AUTO = 0,      /* the fastest this CPU supports (the default) */
    PML_DR2_CRC32C_PORTABLE = 1,  /* slicing-by-8 tables */
    PML_DR2_CRC32C_SSE42_1WAY = 2, /* crc32 instruction, one stream (benchmarks, tests) */
    PML_DR2_CRC32C_SSE42 = 3,     /* crc32 instruction, three interleaved streams */
    PML_DR2_CRC32C_VPCLMUL = 4,   /* long buffers folded by carry-less multiplication on
                                   * 512-bit registers (AVX-512 VPCLMULQDQ), the rest as
                                   * SSE42 */
} pml_dr2_crc32c_impl_t;

/* Continue `crc` over `len` bytes at `buf` (buf may be NULL when len is 0). */
uint32_t pml_dr2_crc32c(uint32_t crc, const void *buf, size_t len);

/* Copy `len` bytes from `src` to `dst` (which must not overlap) and continue `crc` over
 * them, reading each byte of `src` once. Writes exactly dst[0 .. len-1]. */
uint32_t pml_dr2_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* CRC32C of a dr2 header: the `len` bytes at `buf` (len >= 8) with bytes 4..7, where the
 * header keeps its own checksum, read as zeros; `buf` is never written. Equal to
 * pml_dr2_crc32c(PML_DR2_CRC32C_INIT, copy, len) over a copy whose bytes 4..7 are zero, but
 * without the copy: it runs twice per fragment (send and receive), on the latency path. */
uint32_t pml_dr2_crc32c_header(const void *buf, size_t len);

/* One CRC32C over a header and the payload right behind it on the wire, as one call (the
 * EAGER header's one checksum, on the latency path of every small message): the header as
 * pml_dr2_crc32c_header(hdr, hdr_len) (hdr_len >= 8), continued over src[0 .. len-1],
 * which is copied to dst (not overlapping it) on the way when dst is not NULL. Equal to
 * pml_dr2_crc32c_copy (or pml_dr2_crc32c) continued from pml_dr2_crc32c_header. */
uint32_t pml_dr2_crc32c_header_payload(const void *hdr, size_t hdr_len, void *dst,
                                       const void *src, size_t len);

/* pml_dr2_checksum: whether payloads get a CRC32C. */
typedef enum {
    PML_DR2_CHECKSUM_NONE = 0,   /* nowhere */
    PML_DR2_CHECKSUM_CRC32C = 1, /* on every path */
    PML_DR2_CHECKSUM_AUTO = 2,   /* where a wire or a bus is crossed (the default) */
} pml_dr2_checksum_policy_t;

/* Does a path over the BTL component named `btl` ("tcp", "sm", ...) checksum payloads
 * under `policy`? AUTO: yes on every BTL that crosses a wire or a bus (tcp, ofi, and any
 * BTL not known to stay inside the node), no on sm (shared memory) and self (the same
 * process), where nothing crosses a wire -- as Linux skips the TCP checksum on loopback.
 * Headers are always checksummed, whatever this says. */
int pml_dr2_checksum_on_btl(pml_dr2_checksum_policy_t policy, const char *btl);

/* Use implementation `impl` from now on. Returns 0, or -1 (and changes nothing) if this
 * CPU or build cannot run it. Not thread safe: call it only while no other thread
 * computes a CRC (component open, tests). The AUTO choice is made at load time. */
int pml_dr2_crc32c_select(pml_dr2_crc32c_impl_t impl);

/* The implementation in use, and a short name for it ("portable", "sse42", ...). */
pml_dr2_crc32c_impl_t pml_dr2_crc32c_selected(void);
const char *pml_dr2_crc32c_impl_name(pml_dr2_crc32c_impl_t impl);

#endif /* PML_DR2_CRC_H */
