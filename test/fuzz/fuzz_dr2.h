/*
 * ompi-resilience: shared helpers of the pml/dr2 fuzz targets (docs/fuzzing.md).
 *
 *  - FUZZ_CHECK: an invariant; a violation prints it and aborts (libFuzzer saves the input);
 *  - a reader that takes fields from the fuzzer's input (zeros once it is exhausted);
 *  - a reference encoder written from the layout documented in pml_dr2_hdr.h, independent
 *    of pml_dr2_hdr.c, so the codec is checked against the documentation, not itself;
 *  - the operation format of fuzz_dr2_rx, shared with the seed generator.
 */
#ifndef FUZZ_DR2_H
#define FUZZ_DR2_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_crc.h"
#include "ompi/mca/pml/dr2/pml_dr2_hdr.h"

#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz invariant violated: %s:%d: %s\n", __FILE__, __LINE__, \
                    #cond);                                                               \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* ---- input reader ----------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t left;
} fuzz_in_t;

static inline int fuzz_more(const fuzz_in_t *in)
{
    return in->left > 0;
}

static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    if (0 == in->left) {
        return 0;
    }
    in->left--;
    return *in->p++;
}

static inline uint16_t fuzz_u16(fuzz_in_t *in)
{
    uint16_t lo = fuzz_u8(in);
    return (uint16_t) (lo | (fuzz_u8(in) << 8));
}

static inline uint32_t fuzz_u32(fuzz_in_t *in)
{
    uint32_t lo = fuzz_u16(in);
    return lo | ((uint32_t) fuzz_u16(in) << 16);
}

static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t lo = fuzz_u32(in);
    return lo | ((uint64_t) fuzz_u32(in) << 32);
}

/* ---- reference encoder (from the documented layout) -------------------------------------- */

static inline void ref_put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

static inline uint64_t ref_get(const unsigned char *p, int n)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++) {
        v |= (uint64_t) p[i] << (8 * i);
    }
    return v;
}

/* The header length the documentation gives for `type`, 0 if unknown. */
static inline size_t ref_hdr_len(int type)
{
    switch (type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
    case PML_DR2_HDR_FRAG:
    case PML_DR2_HDR_EAGER:
        return 48;
    case PML_DR2_HDR_ACK:
    case PML_DR2_HDR_NACK:
        return 20;
    default:
        return 0;
    }
}

/* CRC32C of the header bytes with the hdr_crc field (offset 4) taken as zero. */
static inline uint32_t ref_hdr_crc(const unsigned char *p, size_t hdr_len)
{
    unsigned char copy[64];

    memcpy(copy, p, hdr_len);
    memset(copy + 4, 0, 4);
    return pml_dr2_crc32c(PML_DR2_CRC32C_INIT, copy, hdr_len);
}

/* EAGER's one checksum: its 48 header bytes (hdr_crc as zero), then its payload. */
static inline uint32_t ref_eager_crc(const unsigned char *p, uint32_t frag_len)
{
    return pml_dr2_crc32c(ref_hdr_crc(p, 48), p + 48, frag_len);
}

/* Write the header fields of h at p (ref_hdr_len(h->type) bytes), reserved bytes as given,
 * a correct header CRC. Does not check anything: invalid headers are what it is for.
 * EAGER: its h->frag_len payload bytes must already be at p + 48 (the CRC covers them). */
static inline void ref_encode(const pml_dr2_hdr_t *h, unsigned char *p, uint8_t reserved)
{
    size_t len = ref_hdr_len(h->type);

    memset(p, 0, len);
    p[0] = h->type;
    p[1] = h->flags;
    p[2] = PML_DR2_HDR_VERSION;
    p[3] = (unsigned char) len;
    switch (h->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        ref_put(p + 8, h->match.ctx, 4);
        ref_put(p + 12, (uint32_t) h->match.src, 4);
        ref_put(p + 16, (uint32_t) h->match.tag, 4);
        ref_put(p + 20, h->match.seq, 2);
        p[22] = h->match.frag_count;
        p[23] = reserved;
        ref_put(p + 24, h->match.vfrag, 4);
        ref_put(p + 28, h->frag_len, 4);
        ref_put(p + 32, h->match.msg_len, 8);
        ref_put(p + 40, h->data_crc, 4);
        ref_put(p + 44, h->match.epoch, 4);
        break;
    case PML_DR2_HDR_FRAG:
        ref_put(p + 8, h->frag.msg_id, 4);
        ref_put(p + 12, h->frag.vfrag, 4);
        p[16] = h->frag.frag_index;
        p[17] = h->frag.frag_count;
        p[18] = reserved;
        ref_put(p + 20, h->frag_len, 4);
        ref_put(p + 24, h->frag.offset, 8);
        ref_put(p + 32, h->frag.msg_len, 8);
        ref_put(p + 40, h->data_crc, 4);
        break;
    case PML_DR2_HDR_ACK:
    case PML_DR2_HDR_NACK:
        ref_put(p + 8, h->ack.vfrag, 4);
        ref_put(p + 12, h->ack.mask, 8);
        break;
    case PML_DR2_HDR_EAGER:
        ref_put(p + 8, h->match.ctx, 4);
        ref_put(p + 12, (uint32_t) h->match.src, 4);
        ref_put(p + 16, (uint32_t) h->match.tag, 4);
        ref_put(p + 20, h->match.seq, 2);
        p[22] = reserved;
        ref_put(p + 24, h->match.vfrag, 4);
        ref_put(p + 28, h->frag_len, 4);
        ref_put(p + 32, h->piggy_ack.vfrag, 4);
        ref_put(p + 36, h->piggy_ack.mask, 8);
        ref_put(p + 44, h->match.epoch, 4);
        ref_put(p + 4, ref_eager_crc(p, h->frag_len), 4);
        return;
    default:
        return;
    }
    ref_put(p + 4, ref_hdr_crc(p, len), 4);
}

/* TINY, as documented: 16 header bytes, then the payload (already at p + 16), one CRC. */
static inline void ref_encode_tiny(const pml_dr2_hdr_t *h, unsigned char *p)
{
    memset(p, 0, 16);
    p[0] = PML_DR2_HDR_TINY;
    ref_put(p + 1, h->match.vfrag, 3);
    ref_put(p + 8, h->match.ctx, 2);
    ref_put(p + 10, (uint32_t) h->match.src, 2);
    ref_put(p + 12, (uint32_t) h->match.tag, 2);
    ref_put(p + 14, h->match.seq, 2);
    ref_put(p + 4, pml_dr2_crc32c(ref_hdr_crc(p, 16), p + 16, h->frag_len), 4);
}

/* What the documentation lets a TINY carry: an EAGER without ACK, 16-bit envelope. */
static inline int ref_tiny_fits(const pml_dr2_hdr_t *h, size_t payload_len)
{
    return PML_DR2_HDR_EAGER == h->type && payload_len <= 256 && 0 == h->piggy_ack.mask
           && 0 == h->piggy_ack.vfrag && 0 == (h->flags & ~PML_DR2_HDR_FLAG_ACK_NOW)
           && h->match.ctx <= 0xFFFF && h->match.src >= 0 && h->match.src <= 0xFFFF
           && h->match.tag >= -32768 && h->match.tag <= 32767;
}

/* Flags the documentation allows for a type. */
static inline uint8_t ref_allowed_flags(int type)
{
    switch (type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        return PML_DR2_HDR_FLAG_RETRANSMIT | PML_DR2_HDR_FLAG_ACK_NOW | PML_DR2_HDR_FLAG_SYNC
               | PML_DR2_HDR_FLAG_NO_DATA_CRC;
    case PML_DR2_HDR_FRAG:
        return PML_DR2_HDR_FLAG_RETRANSMIT | PML_DR2_HDR_FLAG_ACK_NOW | PML_DR2_HDR_FLAG_NO_DATA_CRC;
    case PML_DR2_HDR_ACK:
        return PML_DR2_HDR_FLAG_MATCHED | PML_DR2_HDR_FLAG_REVOKED | PML_DR2_HDR_FLAG_PROBE
               | PML_DR2_HDR_FLAG_PROBE_REPLY;
    case PML_DR2_HDR_EAGER:
        return PML_DR2_HDR_FLAG_RETRANSMIT | PML_DR2_HDR_FLAG_ACK_NOW | PML_DR2_HDR_FLAG_MATCHED;
    default:
        return 0;
    }
}

/* Are these fields a valid header by the documented rules (payload bound max_payload)? */
static inline int ref_fields_valid(const pml_dr2_hdr_t *h, uint8_t reserved, uint32_t max_payload)
{
    if (0 == ref_hdr_len(h->type) || (h->flags & ~ref_allowed_flags(h->type)) != 0) {
        return 0;
    }
    switch (h->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        return 0 == reserved && h->match.src >= 0 && h->match.frag_count >= 1
               && h->match.frag_count <= 64 && h->frag_len <= max_payload
               && h->frag_len <= h->match.msg_len;
    case PML_DR2_HDR_FRAG:
        return 0 == reserved && h->frag.frag_count >= 1 && h->frag.frag_count <= 64
               && h->frag.frag_index < h->frag.frag_count && h->frag_len > 0
               && h->frag_len <= max_payload && h->frag.offset <= UINT64_MAX - h->frag_len
               && h->frag.offset + h->frag_len <= h->frag.msg_len;
    case PML_DR2_HDR_EAGER:
        /* frag_count 1 and msg_len == frag_len are implied by the layout */
        return 0 == reserved && h->match.src >= 0 && h->frag_len <= max_payload
               && 1 == h->match.frag_count && h->match.msg_len == h->frag_len
               && (0 != h->piggy_ack.mask
                   || (0 == h->piggy_ack.vfrag && 0 == (h->flags & PML_DR2_HDR_FLAG_MATCHED)));
    default: /* ACK, NACK: a probe flag (PROBE, PROBE_REPLY) comes alone */
        if ((h->flags & (PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_PROBE_REPLY))
            && h->flags != PML_DR2_HDR_FLAG_PROBE && h->flags != PML_DR2_HDR_FLAG_PROBE_REPLY) {
            return 0;
        }
        return 0 != h->ack.mask;
    }
}

/* ---- fuzz_dr2_rx's input: a configuration, then operations -------------------------------
 *
 *   u32 first_id        the first vfrag id the receiver expects (wrap-around is reachable)
 *   then operations, each one byte of code (taken modulo FUZZ_RX_NUM_OPS) and its fields:
 *     DATA      a data header built from FUZZ_RX_HDR_BYTES of fields, sent intact
 *     CORRUPT   the same, then u16 bit: that bit of header + payload flipped
 *     MATCH     u8 slot: a receive matches message slot (a rendezvous gets its go-ahead)
 *     RAW       u8 n, then n bytes: a segment as it came off the wire
 *     SEGMENT   u8 k, then 1 + k % 4 data headers packed back to back in one segment
 *
 * Data header fields (FUZZ_RX_HDR_BYTES):
 *   u8 type       1 + type % 3: MATCH, RNDV, FRAG
 *   u8 flags      & 0x07 (and SYNC dropped for FRAG) unless bit 7: as is
 *   u8 msg_sel    < 0xC0 and a message exists: that message (id, length, tag), else new
 *   u8 vfrag_sel  bit 7: vfrag_raw; else first_id + vfrag_sel. A MATCH/RNDV with
 *                 msg_sel < 0x40 resends the selected message's own header instead
 *   u32 vfrag_raw
 *   u8 index      layout bit 0: as is; else index % count
 *   u8 count      layout bit 1: as is; else 1 + count % 64
 *   u8 tag
 *   u8 layout     bit 2: offset_raw as is; else the sender's layout (vfrag base + index *
 *                 frag_len); bit 3: a RNDV as a sender makes it (no data, one fragment)
 *   u16 frag_len  % 2049
 *   u32 offset_raw
 *   u32 msg_len   for a new message
 */
enum {
    FUZZ_RX_OP_DATA = 0,
    FUZZ_RX_OP_CORRUPT,
    FUZZ_RX_OP_MATCH,
    FUZZ_RX_OP_RAW,
    FUZZ_RX_OP_SEGMENT,
    FUZZ_RX_NUM_OPS
};

#define FUZZ_RX_HDR_BYTES 22

typedef struct {
    uint8_t type, flags, msg_sel, vfrag_sel;
    uint32_t vfrag_raw;
    uint8_t index, count, tag, layout;
    uint16_t frag_len;
    uint32_t offset_raw;
    uint32_t msg_len;
} fuzz_rx_fields_t;

static inline void fuzz_rx_read_fields(fuzz_in_t *in, fuzz_rx_fields_t *f)
{
    f->type = fuzz_u8(in);
    f->flags = fuzz_u8(in);
    f->msg_sel = fuzz_u8(in);
    f->vfrag_sel = fuzz_u8(in);
    f->vfrag_raw = fuzz_u32(in);
    f->index = fuzz_u8(in);
    f->count = fuzz_u8(in);
    f->tag = fuzz_u8(in);
    f->layout = fuzz_u8(in);
    f->frag_len = fuzz_u16(in);
    f->offset_raw = fuzz_u32(in);
    f->msg_len = fuzz_u32(in);
}

/* The seed generator's side: append the fields to out (FUZZ_RX_HDR_BYTES bytes). */
static inline size_t fuzz_rx_write_fields(unsigned char *out, const fuzz_rx_fields_t *f)
{
    unsigned char *p = out;

    *p++ = f->type;
    *p++ = f->flags;
    *p++ = f->msg_sel;
    *p++ = f->vfrag_sel;
    ref_put(p, f->vfrag_raw, 4), p += 4;
    *p++ = f->index;
    *p++ = f->count;
    *p++ = f->tag;
    *p++ = f->layout;
    ref_put(p, f->frag_len, 2), p += 2;
    ref_put(p, f->offset_raw, 4), p += 4;
    ref_put(p, f->msg_len, 4), p += 4;
    return (size_t) (p - out);
}

#endif /* FUZZ_DR2_H */
