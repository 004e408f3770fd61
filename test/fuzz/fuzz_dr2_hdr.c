/*
 * libFuzzer target: pml/dr2's wire header codec (pml_dr2_hdr.{c,h}); see docs/fuzzing.md.
 *
 * Two uses of every input:
 *  1. as bytes off the wire, in a heap buffer of exactly its length (AddressSanitizer
 *     catches any read past it): decoded with several payload bounds, then walked as a
 *     segment of headers packed back to back, as the receive path walks it. Whatever
 *     decodes must obey every documented rule (checked here independently of the codec),
 *     re-encode to the very same bytes, unpack to the same payload, and stop decoding
 *     after any single-bit flip or any truncation.
 *  2. as header fields (any values, valid or not): written with a reference encoder that
 *     follows the documented layout; the codec must accept exactly the headers the
 *     documented rules allow, with the same fields, and pml_dr2_hdr_pack must produce the
 *     same bytes for them and refuse the others.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_dr2.h"

/* Every documented rule for a header the codec accepted from p[0 .. len-1]. */
static void check_accepted(const unsigned char *p, size_t len, uint32_t max_payload,
                           const pml_dr2_hdr_t *h)
{
    size_t hl = ref_hdr_len(h->type);

    FUZZ_CHECK(0 != hl && h->hdr_len == hl && pml_dr2_hdr_size(h->type) == hl);
    FUZZ_CHECK(len >= hl && p[0] == h->type && p[1] == h->flags && p[3] == hl);
    FUZZ_CHECK(p[2] == PML_DR2_HDR_VERSION);
    FUZZ_CHECK(h->frag_len <= len - hl && h->frag_len <= max_payload);
    /* never a wrong header CRC (EAGER: over header and payload) */
    FUZZ_CHECK(ref_get(p + 4, 4) == (PML_DR2_HDR_EAGER == h->type ? ref_eager_crc(p, h->frag_len)
                                                                   : ref_hdr_crc(p, hl)));
    FUZZ_CHECK(pml_dr2_hdr_wire_len(h) <= len);
    FUZZ_CHECK((h->flags & ~ref_allowed_flags(h->type)) == 0);
    switch (h->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        FUZZ_CHECK(0 == p[23]);
        FUZZ_CHECK(h->match.ctx == ref_get(p + 8, 4));
        FUZZ_CHECK((uint32_t) h->match.src == ref_get(p + 12, 4) && h->match.src >= 0);
        FUZZ_CHECK((uint32_t) h->match.tag == ref_get(p + 16, 4));
        FUZZ_CHECK(h->match.seq == ref_get(p + 20, 2));
        FUZZ_CHECK(h->match.frag_count == p[22]);
        FUZZ_CHECK(h->match.frag_count >= 1 && h->match.frag_count <= 64);
        FUZZ_CHECK(h->match.vfrag == ref_get(p + 24, 4));
        FUZZ_CHECK(h->frag_len == ref_get(p + 28, 4));
        FUZZ_CHECK(h->match.msg_len == ref_get(p + 32, 8));
        FUZZ_CHECK(h->data_crc == ref_get(p + 40, 4));
        FUZZ_CHECK(h->match.epoch == ref_get(p + 44, 4) && h->match.has_epoch);
        FUZZ_CHECK(h->frag_len <= h->match.msg_len);
        break;
    case PML_DR2_HDR_FRAG:
        FUZZ_CHECK(0 == p[18] && 0 == p[19]);
        FUZZ_CHECK(h->frag.msg_id == ref_get(p + 8, 4));
        FUZZ_CHECK(h->frag.vfrag == ref_get(p + 12, 4));
        FUZZ_CHECK(h->frag.frag_index == p[16] && h->frag.frag_count == p[17]);
        FUZZ_CHECK(h->frag.frag_count >= 1 && h->frag.frag_count <= 64);
        FUZZ_CHECK(h->frag.frag_index < h->frag.frag_count);
        FUZZ_CHECK(h->frag_len == ref_get(p + 20, 4) && h->frag_len > 0);
        FUZZ_CHECK(h->frag.offset == ref_get(p + 24, 8));
        FUZZ_CHECK(h->frag.msg_len == ref_get(p + 32, 8));
        FUZZ_CHECK(h->data_crc == ref_get(p + 40, 4));
        FUZZ_CHECK(0 == ref_get(p + 44, 4));
        FUZZ_CHECK(h->frag.offset <= UINT64_MAX - h->frag_len);
        FUZZ_CHECK(h->frag.offset + h->frag_len <= h->frag.msg_len);
        break;
    case PML_DR2_HDR_EAGER:
        FUZZ_CHECK(0 == p[22] && 0 == p[23]);
        FUZZ_CHECK(h->match.ctx == ref_get(p + 8, 4));
        FUZZ_CHECK((uint32_t) h->match.src == ref_get(p + 12, 4) && h->match.src >= 0);
        FUZZ_CHECK((uint32_t) h->match.tag == ref_get(p + 16, 4));
        FUZZ_CHECK(h->match.seq == ref_get(p + 20, 2));
        FUZZ_CHECK(h->match.vfrag == ref_get(p + 24, 4));
        FUZZ_CHECK(h->frag_len == ref_get(p + 28, 4));
        FUZZ_CHECK(h->match.frag_count == 1 && h->match.msg_len == h->frag_len);
        FUZZ_CHECK(h->piggy_ack.vfrag == ref_get(p + 32, 4));
        FUZZ_CHECK(h->piggy_ack.mask == ref_get(p + 36, 8));
        FUZZ_CHECK(h->match.epoch == ref_get(p + 44, 4) && h->match.has_epoch);
        FUZZ_CHECK(0 != h->piggy_ack.mask
                   || (0 == h->piggy_ack.vfrag && 0 == (h->flags & PML_DR2_HDR_FLAG_MATCHED)));
        FUZZ_CHECK(h->data_crc == ref_get(p + 4, 4));
        break;
    default:
        FUZZ_CHECK(h->type == PML_DR2_HDR_ACK || h->type == PML_DR2_HDR_NACK);
        FUZZ_CHECK(h->ack.vfrag == ref_get(p + 8, 4));
        FUZZ_CHECK(h->ack.mask == ref_get(p + 12, 8) && 0 != h->ack.mask);
        FUZZ_CHECK(0 == h->frag_len && 0 == h->data_crc);
        break;
    }
}

/* A header the codec accepted: round trips, payload, bit flips, truncations. */
static void check_round_trip(const unsigned char *p, size_t len, uint32_t max_payload,
                             const pml_dr2_hdr_t *h, pml_dr2_hdr_status_t full_status,
                             uint16_t flip_seed)
{
    size_t hl = h->hdr_len, wire = pml_dr2_hdr_wire_len(h);
    uint32_t pcrc = pml_dr2_crc32c(PML_DR2_CRC32C_INIT, p + hl, h->frag_len);
    pml_dr2_hdr_t again = *h, h2;
    int eager = PML_DR2_HDR_EAGER == h->type;
    unsigned char *enc = malloc(wire), *dst = malloc(h->frag_len ? h->frag_len : 1);
    unsigned char *copy = malloc(wire);
    size_t enc_len = eager ? wire : hl; /* EAGER's checksum needs its payload in place */

    /* the payload check of pml_dr2_hdr_decode is exactly the CRC of the payload (EAGER:
     * done by decode_header already, with the header) */
    FUZZ_CHECK(full_status == (eager || pcrc == h->data_crc ? PML_DR2_HDR_OK
                                                           : PML_DR2_HDR_ERR_DATA_CRC));
    FUZZ_CHECK(pml_dr2_hdr_unpack(h, p, dst) == full_status);
    FUZZ_CHECK(0 == h->frag_len || 0 == memcmp(dst, p + hl, h->frag_len));

    /* encode(decode(x)) is x, byte for byte (every byte is a field or a zero), and decodes
     * to the same header */
    memcpy(enc, p, wire);
    memset(enc, 0, hl);
    FUZZ_CHECK(pml_dr2_hdr_encode(&again, enc, enc_len) == hl);
    FUZZ_CHECK(0 == memcmp(enc, p, hl));
    FUZZ_CHECK(pml_dr2_hdr_encode(&again, enc, enc_len - 1) == 0); /* never past buf_len */
    memcpy(copy, p, wire);
    FUZZ_CHECK(pml_dr2_hdr_decode_header(copy, wire, max_payload, &h2) == PML_DR2_HDR_OK);
    FUZZ_CHECK(0 == memcmp(&h2, h, sizeof(h2)));

    /* any truncation of header + payload is refused (exact-size buffers: no over-read) */
    if (wire > 0) {
        size_t cut = flip_seed % wire;
        unsigned char *t = malloc(cut ? cut : 1);
        memcpy(t, p, cut);
        FUZZ_CHECK(pml_dr2_hdr_decode_header(t, cut, max_payload, &h2) != PML_DR2_HDR_OK);
        free(t);
    }

    /* one bit flipped anywhere: the header check or the payload check fails (CRC32C
     * detects every single-bit error) */
    if (PML_DR2_HDR_OK == full_status) {
        size_t bit = ((size_t) flip_seed * 2654435761u) % (wire * 8);
        pml_dr2_hdr_status_t st;
        copy[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        st = pml_dr2_hdr_decode(copy, wire, max_payload, &h2);
        FUZZ_CHECK(PML_DR2_HDR_OK != st);
        if (bit / 8 >= hl) {
            FUZZ_CHECK((eager ? PML_DR2_HDR_ERR_HDR_CRC : PML_DR2_HDR_ERR_DATA_CRC) == st);
        }
    }
    free(copy);
    free(enc);
    free(dst);
}

/* A TINY the codec accepted from p[0 .. len-1]: every documented rule, the same bytes
 * from pml_dr2_hdr_pack_tiny, and no decode after a bit flip or a cut. */
static void check_tiny(const unsigned char *p, size_t len, uint32_t max_payload,
                       const pml_dr2_hdr_t *h, uint16_t flip_seed)
{
    pml_dr2_hdr_t eager = *h, h2;
    unsigned char *copy = malloc(len);
    size_t bit = ((size_t) flip_seed * 2654435761u) % (len * 8), cut = flip_seed % len;

    FUZZ_CHECK(len >= 16 && h->hdr_len == 16 && pml_dr2_hdr_size(h->type) == 16);
    FUZZ_CHECK(h->frag_len == len - 16 && h->frag_len <= max_payload && h->frag_len <= 256);
    FUZZ_CHECK(h->data_crc == ref_get(p + 4, 4));
    FUZZ_CHECK(h->data_crc == pml_dr2_crc32c(ref_hdr_crc(p, 16), p + 16, h->frag_len));
    FUZZ_CHECK(h->match.vfrag == ref_get(p + 1, 3) && h->match.ctx == ref_get(p + 8, 2));
    FUZZ_CHECK((uint32_t) h->match.src == ref_get(p + 10, 2));
    FUZZ_CHECK((uint16_t) h->match.tag == ref_get(p + 12, 2));
    FUZZ_CHECK(h->match.tag >= -32768 && h->match.tag <= 32767);
    FUZZ_CHECK(h->match.seq == ref_get(p + 14, 2));
    FUZZ_CHECK(h->match.frag_count == 1 && h->match.msg_len == h->frag_len);
    FUZZ_CHECK(h->flags == PML_DR2_HDR_FLAG_ACK_NOW && 0 == h->piggy_ack.mask);
    FUZZ_CHECK(pml_dr2_hdr_payload_checked(h) && pml_dr2_hdr_wire_len(h) == len);
    eager.type = PML_DR2_HDR_EAGER;
    FUZZ_CHECK(pml_dr2_hdr_pack_tiny(&eager, copy, len, p + 16, h->frag_len) == len);
    FUZZ_CHECK(0 == memcmp(copy, p, len));
    memset(copy, 0, len); /* the sender's direct path: the same bytes from the envelope */
    FUZZ_CHECK(pml_dr2_hdr_pack_tiny_envelope(&h->match, copy, len, p + 16, h->frag_len) == len);
    FUZZ_CHECK(0 == memcmp(copy, p, len));
    copy[bit / 8] ^= (unsigned char) (1u << (bit % 8));
    FUZZ_CHECK(pml_dr2_hdr_decode(copy, len, max_payload, &h2) != PML_DR2_HDR_OK);
    FUZZ_CHECK(pml_dr2_hdr_decode_header(p, cut, max_payload, &h2) != PML_DR2_HDR_OK);
    free(copy);
}

/* A LOCAL the codec accepted from p[0 .. len-1]: every documented rule, the same bytes
 * from pml_dr2_hdr_pack_local, and no decode after a cut into its header or a reserved
 * byte set (it has no checksum: a flipped field is another envelope). */
static void check_local(const unsigned char *p, size_t len, uint32_t max_payload,
                        const pml_dr2_hdr_t *h, uint16_t cut_seed)
{
    unsigned char *copy = malloc(len);
    pml_dr2_hdr_t h2;

    FUZZ_CHECK(len >= 12 && h->hdr_len == 12 && pml_dr2_hdr_size(h->type) == 12);
    FUZZ_CHECK(0 == p[1] && 0 == p[10] && 0 == p[11]);
    FUZZ_CHECK(h->frag_len == len - 12 && h->frag_len <= max_payload && h->frag_len <= 8192);
    FUZZ_CHECK(h->match.ctx == ref_get(p + 2, 2) && (uint32_t) h->match.src == ref_get(p + 4, 2));
    FUZZ_CHECK((uint16_t) h->match.tag == ref_get(p + 6, 2));
    FUZZ_CHECK(h->match.tag >= -32768 && h->match.tag <= 32767);
    FUZZ_CHECK(h->match.seq == ref_get(p + 8, 2) && 0 == h->match.vfrag);
    FUZZ_CHECK(h->match.frag_count == 1 && h->match.msg_len == h->frag_len);
    FUZZ_CHECK(0 == h->flags && 0 == h->data_crc && 0 == h->piggy_ack.mask);
    FUZZ_CHECK(pml_dr2_hdr_payload_checked(h) && pml_dr2_hdr_wire_len(h) == len);
    memset(copy, 0, len);
    FUZZ_CHECK(pml_dr2_hdr_pack_local(&h->match, copy, len, p + 12, h->frag_len) == len);
    FUZZ_CHECK(0 == memcmp(copy, p, len));
    FUZZ_CHECK(pml_dr2_hdr_decode_header(p, cut_seed % 12, max_payload, &h2) != PML_DR2_HDR_OK);
    copy[10 + cut_seed % 2] |= (unsigned char) (1u << (cut_seed % 8));
    FUZZ_CHECK(pml_dr2_hdr_decode(copy, len, max_payload, &h2) == PML_DR2_HDR_ERR_RESERVED);
    free(copy);
}

/* 1. the input as wire bytes */
static void fuzz_wire(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    static const uint32_t bounds[] = {0, 1, 64, 4096, UINT32_MAX};
    size_t off = 0;

    memcpy(buf, data, size);
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        pml_dr2_hdr_t h, full;
        pml_dr2_hdr_status_t st = pml_dr2_hdr_decode_header(buf, size, bounds[i], &h);
        pml_dr2_hdr_status_t st_full = pml_dr2_hdr_decode(buf, size, bounds[i], &full);

        FUZZ_CHECK((unsigned) st < PML_DR2_HDR_NUM_STATUS);
        FUZZ_CHECK(0 != strcmp(pml_dr2_hdr_status_name(st), "unknown"));
        if (PML_DR2_HDR_OK != st) {
            FUZZ_CHECK(st_full == st); /* the full decode fails the same way first */
            continue;
        }
        FUZZ_CHECK(PML_DR2_HDR_OK == st_full || PML_DR2_HDR_ERR_DATA_CRC == st_full);
        if (PML_DR2_HDR_OK == st_full) {
            FUZZ_CHECK(0 == memcmp(&h, &full, sizeof(h)));
        }
        if (PML_DR2_HDR_TINY == h.type) {
            check_tiny(buf, size, bounds[i], &h, (uint16_t) (data[size - 1] << 8 | data[0]));
            continue;
        }
        if (PML_DR2_HDR_LOCAL == h.type) {
            check_local(buf, size, bounds[i], &h, (uint16_t) (data[size - 1] << 8 | data[0]));
            continue;
        }
        check_accepted(buf, size, bounds[i], &h);
        check_round_trip(buf, size, bounds[i], &h, st_full,
                         (uint16_t) (size > 1 ? data[size - 1] << 8 | data[size - 2] : 0));
    }
    /* the receive path's walk over headers packed back to back in one segment */
    while (off < size) {
        pml_dr2_hdr_t h;
        size_t left = size - off;
        uint32_t max = left > UINT32_MAX ? UINT32_MAX : (uint32_t) left;
        if (PML_DR2_HDR_OK != pml_dr2_hdr_decode_header(buf + off, left, max, &h)) {
            break;
        }
        if (PML_DR2_HDR_TINY != h.type && PML_DR2_HDR_LOCAL != h.type) {
            check_accepted(buf + off, left, max, &h);
        }
        FUZZ_CHECK(pml_dr2_hdr_wire_len(&h) > 0 && pml_dr2_hdr_wire_len(&h) <= left);
        off += pml_dr2_hdr_wire_len(&h);
    }
    FUZZ_CHECK(off <= size);
    free(buf);
}

/* 2. the input as header fields */
/* The matching envelope MATCH, RNDV and EAGER share, from the input. */
static void fuzz_envelope(pml_dr2_hdr_t *h, fuzz_in_t *in)
{
    h->match.ctx = fuzz_u32(in);
    h->match.src = (int32_t) fuzz_u32(in);
    h->match.tag = (int32_t) fuzz_u32(in);
    h->match.seq = fuzz_u16(in);
    h->match.epoch = fuzz_u32(in);
}

static void fuzz_fields(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    pml_dr2_hdr_t h, dec, packed;
    uint8_t reserved, mode;
    uint32_t max_payload, payload_len;
    unsigned char *wire, *pk;
    const unsigned char *payload;
    size_t hl, plen;

    memset(&h, 0, sizeof(h));
    mode = fuzz_u8(&in);
    h.type = (uint8_t) (mode & 0x80 ? fuzz_u8(&in) : 1 + fuzz_u8(&in) % 6);
    h.flags = fuzz_u8(&in);
    if (0 == (mode & 0x40)) {
        h.flags &= ref_allowed_flags(h.type); /* mostly valid flags */
    }
    reserved = mode & 0x20 ? fuzz_u8(&in) : 0;
    max_payload = mode & 0x10 ? fuzz_u32(&in) : UINT32_MAX;
    switch (h.type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        fuzz_envelope(&h, &in);
        h.match.frag_count = fuzz_u8(&in);
        h.match.vfrag = fuzz_u32(&in);
        h.match.msg_len = mode & 0x08 ? fuzz_u64(&in) : fuzz_u16(&in);
        break;
    case PML_DR2_HDR_FRAG:
        h.frag.msg_id = fuzz_u32(&in);
        h.frag.vfrag = fuzz_u32(&in);
        h.frag.frag_index = fuzz_u8(&in);
        h.frag.frag_count = fuzz_u8(&in);
        h.frag.offset = mode & 0x08 ? fuzz_u64(&in) : fuzz_u16(&in);
        h.frag.msg_len = mode & 0x08 ? fuzz_u64(&in) : fuzz_u16(&in);
        break;
    case PML_DR2_HDR_EAGER:
        fuzz_envelope(&h, &in);
        h.match.vfrag = fuzz_u32(&in);
        h.piggy_ack.vfrag = fuzz_u32(&in);
        h.piggy_ack.mask = mode & 0x08 ? 0 : fuzz_u64(&in);
        break;
    default:
        h.ack.vfrag = fuzz_u32(&in);
        h.ack.mask = fuzz_u64(&in);
        break;
    }
    /* the payload is the rest of the input, cut to the length asked for */
    payload_len = fuzz_u16(&in);
    if (h.type >= PML_DR2_HDR_ACK && h.type <= PML_DR2_HDR_NACK) {
        payload_len = 0;
    }
    payload = in.p;
    plen = payload_len < in.left ? payload_len : in.left;
    h.frag_len = (uint32_t) plen;
    h.data_crc = pml_dr2_crc32c(PML_DR2_CRC32C_INIT, payload, plen);
    if (PML_DR2_HDR_EAGER == h.type) {
        h.match.frag_count = 1; /* implied by the layout */
        h.match.msg_len = plen;
    }
    if (PML_DR2_HDR_EAGER == h.type && plen <= 256) {
        /* the same header as a TINY: written as documented where it fits, refused if not */
        unsigned char *tw = malloc(16 + plen), *tp = malloc(16 + plen);
        memcpy(tw + 16, payload, plen);
        ref_encode_tiny(&h, tw);
        if (ref_tiny_fits(&h, plen)) {
            FUZZ_CHECK(pml_dr2_hdr_pack_tiny(&h, tp, 16 + plen, payload, (uint32_t) plen) == 16 + plen);
            FUZZ_CHECK(0 == memcmp(tp, tw, 16 + plen));
            FUZZ_CHECK(pml_dr2_hdr_decode(tw, 16 + plen, max_payload, &dec)
                       == (plen <= max_payload ? PML_DR2_HDR_OK : PML_DR2_HDR_ERR_TOO_LONG));
        } else {
            FUZZ_CHECK(pml_dr2_hdr_pack_tiny(&h, tp, 16 + plen, payload, (uint32_t) plen) == 0);
        }
        free(tw);
        free(tp);
    }
    hl = ref_hdr_len(h.type);
    if (0 == hl) {
        unsigned char tiny[PML_DR2_HDR_MAX_LEN] = {0};
        packed = h;
        FUZZ_CHECK(pml_dr2_hdr_encode(&packed, tiny, sizeof(tiny)) == 0);
        return;
    }
    wire = malloc(hl + plen);
    memcpy(wire + hl, payload, plen); /* first: EAGER's checksum covers it */
    ref_encode(&h, wire, reserved);
    if (PML_DR2_HDR_EAGER == h.type) {
        h.data_crc = (uint32_t) ref_get(wire + 4, 4); /* its host form: the one checksum */
    }
    /* the codec accepts exactly what the documentation allows */
    if (ref_fields_valid(&h, reserved, max_payload)) {
        FUZZ_CHECK(pml_dr2_hdr_decode(wire, hl + plen, max_payload, &dec) == PML_DR2_HDR_OK);
        h.hdr_len = (uint8_t) hl;
        /* decode says which headers carry an epoch */
        if (h.type <= PML_DR2_HDR_RNDV || PML_DR2_HDR_EAGER == h.type) {
            h.match.has_epoch = 1;
        }
        FUZZ_CHECK(0 == memcmp(&dec, &h, sizeof(h)));
    } else {
        FUZZ_CHECK(pml_dr2_hdr_decode(wire, hl + plen, max_payload, &dec) != PML_DR2_HDR_OK);
    }
    /* pml_dr2_hdr_pack writes the same bytes for a valid header, refuses an invalid one */
    pk = malloc(hl + plen);
    packed = h;
    if (h.type <= PML_DR2_HDR_FRAG || PML_DR2_HDR_EAGER == h.type) {
        size_t n = pml_dr2_hdr_pack(&packed, pk, hl + plen, payload, (uint32_t) plen);
        if (0 == reserved && ref_fields_valid(&h, 0, UINT32_MAX)) {
            FUZZ_CHECK(n == hl + plen && 0 == memcmp(pk, wire, hl + plen));
            FUZZ_CHECK(pml_dr2_hdr_pack(&packed, pk, hl + plen - 1, payload, (uint32_t) plen) == 0);
        } else if (!ref_fields_valid(&h, 0, UINT32_MAX)) {
            FUZZ_CHECK(0 == n);
        }
    } else {
        size_t n = pml_dr2_hdr_encode(&packed, pk, hl);
        FUZZ_CHECK(n == (ref_fields_valid(&h, 0, UINT32_MAX) ? hl : 0));
        if (n) {
            FUZZ_CHECK(0 == memcmp(pk, wire, hl));
        }
    }
    free(pk);
    free(wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_wire(data, size);
    fuzz_fields(data, size);
    return 0;
}
