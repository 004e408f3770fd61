/*
 * Unit tests of pml/dr2's wire headers with a separate payload check (MATCH, RNDV, FRAG)
 * and the ACK/NACK headers: the byte layout, round trips of every type, every single-bit
 * error caught, every truncation rejected, one distinct status per malformed field (with a
 * valid checksum, so the field check itself is what rejects it), random input that never
 * crashes and never decodes, the ACK packer and path probes. EAGER and TINY, one checksum
 * over header and payload, are in test_dr2_hdr_eager.c. Buffers are allocated at their
 * exact length, so that AddressSanitizer or valgrind catch any read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_dr2_hdr.h"

/* ---- sample headers ------------------------------------------------------------------ */

static pml_dr2_hdr_t sample_frag(void)
{
    pml_dr2_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = PML_DR2_HDR_FRAG;
    h.flags = PML_DR2_HDR_FLAG_RETRANSMIT;
    h.frag.msg_id = 0xFFFFFFF0u;
    h.frag.vfrag = 7;
    h.frag.frag_index = 63;
    h.frag.frag_count = 64;
    h.frag.offset = 0xFFFFFF0000ull; /* beyond 32 bits: no 16- or 32-bit truncation */
    h.frag.msg_len = 0x10000000000ull;
    return h;
}

static pml_dr2_hdr_t sample_ack(int type)
{
    pml_dr2_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t) type;
    h.flags = type == PML_DR2_HDR_ACK ? PML_DR2_HDR_FLAG_MATCHED : 0;
    h.ack.vfrag = 0x80000001u;
    h.ack.mask = 0x8000000000000001ull;
    return h;
}

/* Every type, with payload lengths that exercise the empty, small and multi-block cases. */
static int sample_wires(wire_t *wires)
{
    int n = 0;

    wires[n++] = make_wire(sample_match(PML_DR2_HDR_MATCH), 8);
    wires[n++] = make_wire(sample_match(PML_DR2_HDR_MATCH), 0);
    wires[n++] = make_wire(sample_match(PML_DR2_HDR_RNDV), 1000);
    wires[n++] = make_wire(sample_frag(), 1);
    wires[n++] = make_wire(sample_frag(), 4096);
    wires[n++] = make_wire(sample_ack(PML_DR2_HDR_ACK), 0);
    wires[n++] = make_wire(sample_ack(PML_DR2_HDR_NACK), 0);
    return n;
}

static void free_wires(wire_t *wires, int n)
{
    for (int i = 0; i < n; i++) {
        free(wires[i].buf);
    }
}

/* Recompute hdr_crc after a test changed header bytes on purpose. */
static void reseal(unsigned char *buf, size_t hdr_len)
{
    uint32_t crc;

    memset(buf + 4, 0, 4);
    crc = pml_dr2_crc32c(0, buf, hdr_len);
    for (int i = 0; i < 4; i++) {
        buf[4 + i] = (unsigned char) (crc >> (8 * i));
    }
}

/* ---- tests --------------------------------------------------------------------------- */

static void sizes_per_type(void)
{
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_MATCH) == 48);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_RNDV) == 48);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_FRAG) == 48);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_ACK) == 20);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_NACK) == 20);
    CHECK(pml_dr2_hdr_size(0) == 0);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_EAGER) == 48);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_TINY) == 16);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_LOCAL) == 12);
    CHECK(pml_dr2_hdr_size(9) == 0);
    CHECK(pml_dr2_hdr_size(-1) == 0);
    CHECK(pml_dr2_hdr_size(256 + PML_DR2_HDR_ACK) == 0);
    for (int t = PML_DR2_HDR_MATCH; t <= PML_DR2_HDR_EAGER; t++) {
        CHECK(pml_dr2_hdr_size(t) <= PML_DR2_HDR_MAX_LEN);
    }
}

/* The layout is a contract between processes (and versions): pin it byte for byte. */
static void golden_bytes(void)
{
    static const unsigned char ack_body[] = {
        0x04, 0x08, 0x02, 0x14,                        /* type ACK, MATCHED, v2, 20 bytes */
        0, 0, 0, 0,                                    /* hdr_crc, checked below */
        0x01, 0x00, 0x00, 0x80,                        /* vfrag 0x80000001 */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 /* mask */
    };
    static const unsigned char match_body[] = {
        0x01, 0x06, 0x02, 0x30, 0, 0, 0, 0, /* MATCH, SYNC|ACK_NOW, v2, 48 bytes, crc */
        0x34, 0x12, 0xDE, 0xC0,             /* ctx */
        0xFE, 0xFF, 0xFF, 0x7F,             /* src */
        0xEF, 0xFF, 0xFF, 0xFF,             /* tag -17 */
        0xFF, 0xFF,                         /* seq */
        0x03, 0x00,                         /* frag_count, reserved */
        0xFF, 0xFF, 0xFF, 0xFF,             /* vfrag */
        0x00, 0x00, 0x00, 0x00,             /* frag_len 0 */
        0x89, 0x67, 0x45, 0x23, 0x01, 0, 0, 0, /* msg_len */
        0x00, 0x00, 0x00, 0x00,             /* data_crc of nothing */
        0x11, 0x4A, 0x0C, 0xE9,             /* epoch */
    };
    unsigned char buf[64], expect[64];
    pml_dr2_hdr_t h = sample_ack(PML_DR2_HDR_ACK);

    memcpy(expect, ack_body, sizeof(ack_body));
    reseal(expect, sizeof(ack_body));
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == sizeof(ack_body));
    CHECK(memcmp(buf, expect, sizeof(ack_body)) == 0);

    h = sample_match(PML_DR2_HDR_MATCH);
    memcpy(expect, match_body, sizeof(match_body));
    reseal(expect, sizeof(match_body));
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), NULL, 0) == sizeof(match_body));
    CHECK(memcmp(buf, expect, sizeof(match_body)) == 0);
}

static void round_trip_every_type(void)
{
    wire_t wires[8];
    int n = sample_wires(wires);

    for (int i = 0; i < n; i++) {
        pml_dr2_hdr_t out;
        unsigned char *dst = malloc(wires[i].hdr.frag_len + 1);

        CHECK(decode_exact(wires[i].buf, wires[i].len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
        CHECK(same_header(&out, &wires[i].hdr));
        CHECK(out.match.has_epoch
              == (PML_DR2_HDR_MATCH == out.type || PML_DR2_HDR_RNDV == out.type));
        CHECK(pml_dr2_hdr_wire_len(&out) == wires[i].len);
        /* the fused path: header first, then the payload checked while copied out */
        CHECK(pml_dr2_hdr_decode_header(wires[i].buf, wires[i].len, MAX_PAYLOAD, &out)
              == PML_DR2_HDR_OK);
        CHECK(pml_dr2_hdr_unpack(&out, wires[i].buf, dst) == PML_DR2_HDR_OK);
        CHECK(memcmp(dst, wires[i].buf + out.hdr_len, out.frag_len) == 0);
        free(dst);
    }
    /* extreme values survive too */
    {
        pml_dr2_hdr_t h = sample_frag(), out;
        unsigned char buf[PML_DR2_HDR_FRAG_LEN + 1];

        h.frag.offset = UINT64_MAX - 1;
        h.frag.msg_len = UINT64_MAX;
        h.frag.frag_index = 0;
        h.frag.frag_count = 1;
        CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == sizeof(buf));
        CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), 1, &out) == PML_DR2_HDR_OK);
        CHECK(same_header(&out, &h));

        h = sample_match(PML_DR2_HDR_RNDV);
        h.match.src = 0;
        h.match.tag = INT32_MIN;
        h.match.frag_count = 64;
        h.match.msg_len = 0;
        CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), NULL, 0) == PML_DR2_HDR_MATCH_LEN);
        CHECK(pml_dr2_hdr_decode(buf, PML_DR2_HDR_MATCH_LEN, 0, &out) == PML_DR2_HDR_OK);
        CHECK(same_header(&out, &h));
    }
    free_wires(wires, n);
}

/* Several headers back to back in one segment, walked with pml_dr2_hdr_wire_len. */
static void back_to_back_in_one_segment(void)
{
    wire_t wires[8];
    int n = sample_wires(wires);
    size_t total = 0, at = 0;
    unsigned char *segment;
    int seen = 0;

    for (int i = 0; i < n; i++) {
        total += wires[i].len;
    }
    segment = malloc(total);
    for (int i = 0; i < n; i++) {
        memcpy(segment + at, wires[i].buf, wires[i].len);
        at += wires[i].len;
    }
    for (at = 0; at < total && seen < n; seen++) {
        pml_dr2_hdr_t out;

        if (pml_dr2_hdr_decode(segment + at, total - at, MAX_PAYLOAD, &out)
            != PML_DR2_HDR_OK) {
            break;
        }
        CHECK(same_header(&out, &wires[seen].hdr));
        at += pml_dr2_hdr_wire_len(&out);
    }
    CHECK(seen == n && at == total);
    free(segment);
    free_wires(wires, n);
}

/* Flip each bit of header and payload in turn: never accepted. The fused path must agree:
 * decode_header rejects a damaged header, unpack a damaged payload. */
static void every_single_bit_flip_is_detected(void)
{
    wire_t wires[8];
    int n = sample_wires(wires);

    for (int i = 0; i < n; i++) {
        unsigned char *dst = malloc(wires[i].hdr.frag_len + 1);
        size_t hdr_len = pml_dr2_hdr_size(wires[i].hdr.type);
        int undetected = 0;

        for (size_t bit = 0; bit < wires[i].len * 8; bit++) {
            pml_dr2_hdr_t out;
            pml_dr2_hdr_status_t st;

            wires[i].buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
            undetected += pml_dr2_hdr_decode(wires[i].buf, wires[i].len, MAX_PAYLOAD, &out)
                          == PML_DR2_HDR_OK;
            st = pml_dr2_hdr_decode_header(wires[i].buf, wires[i].len, MAX_PAYLOAD, &out);
            if (bit / 8 < hdr_len) {
                undetected += st == PML_DR2_HDR_OK;
            } else {
                undetected += st != PML_DR2_HDR_OK;
                undetected += pml_dr2_hdr_unpack(&out, wires[i].buf, dst)
                              != PML_DR2_HDR_ERR_DATA_CRC;
            }
            wires[i].buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        }
        CHECK(undetected == 0);
        free(dst);
    }
    free_wires(wires, n);
}

/* Every proper prefix is rejected, as truncated, without reading past it. */
static void every_truncation_is_rejected(void)
{
    wire_t wires[8];
    int n = sample_wires(wires);

    for (int i = 0; i < n; i++) {
        size_t hdr_len = pml_dr2_hdr_size(wires[i].hdr.type);

        for (size_t len = 0; len < wires[i].len; len++) {
            pml_dr2_hdr_t out;
            pml_dr2_hdr_status_t st = decode_exact(wires[i].buf, len, MAX_PAYLOAD, &out);

            CHECK(st == (len < hdr_len ? PML_DR2_HDR_ERR_TRUNCATED
                                       : PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED));
        }
    }
    free_wires(wires, n);
}

/* Mutate a valid wire image, optionally reseal its header CRC, decode it. */
static pml_dr2_hdr_status_t decode_mutated(const wire_t *w, size_t at, uint64_t value,
                                           int bytes, int do_reseal, uint32_t max)
{
    unsigned char *copy = malloc(w->len);
    pml_dr2_hdr_t out;
    pml_dr2_hdr_status_t st;

    memcpy(copy, w->buf, w->len);
    put_le(copy + at, value, bytes);
    if (do_reseal) {
        reseal(copy, pml_dr2_hdr_size(w->hdr.type));
    }
    st = pml_dr2_hdr_decode(copy, w->len, max, &out);
    free(copy);
    return st;
}

/* Each malformed field is reported with its own status, even with a correct checksum (a
 * buggy or hostile sender); the damage a corrupt link does shows as a checksum error. */
static void each_malformed_field_has_its_status(void)
{
    wire_t match = make_wire(sample_match(PML_DR2_HDR_MATCH), 8);
    wire_t frag = make_wire(sample_frag(), 100);
    wire_t ack = make_wire(sample_ack(PML_DR2_HDR_ACK), 0);
    wire_t nack = make_wire(sample_ack(PML_DR2_HDR_NACK), 0);

    CHECK(decode_mutated(&match, 2, 3, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_VERSION);
    /* version 1: MATCH, RNDV, FRAG and EAGER 44 bytes long, without the epoch */
    CHECK(decode_mutated(&match, 2, 1, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_VERSION);
    CHECK(decode_mutated(&frag, 2, 1, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_VERSION);
    CHECK(decode_mutated(&match, 2, 0, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_VERSION);
    CHECK(decode_mutated(&match, 0, 0, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_TYPE);
    CHECK(decode_mutated(&match, 0, 9, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_TYPE);
    /* read as a TINY, the bytes fail its one checksum */
    CHECK(decode_mutated(&match, 0, PML_DR2_HDR_TINY, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_HDR_CRC);
    CHECK(decode_mutated(&match, 0, 255, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_TYPE);
    CHECK(decode_mutated(&match, 3, 44, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_mutated(&match, 3, 47, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_mutated(&match, 3, 49, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_mutated(&frag, 3, 44, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_mutated(&ack, 3, 44, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    /* an ACK claiming to be a FRAG is too short for one */
    CHECK(decode_mutated(&ack, 0, PML_DR2_HDR_FRAG, 1, 0, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_mutated(&match, 4, 0xDEADBEEF, 4, 0, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_CRC);
    CHECK(decode_mutated(&match, 12, 5, 4, 0, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_CRC);
    CHECK(decode_mutated(&match, 1, PML_DR2_HDR_FLAG_MATCHED, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_mutated(&frag, 1, PML_DR2_HDR_FLAG_SYNC, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_mutated(&ack, 1, 0x80, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_mutated(&nack, 1, PML_DR2_HDR_FLAG_MATCHED, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    /* NO_DATA_CRC (a path without payload checksums) belongs to the data headers */
    CHECK(decode_mutated(&match, 1, PML_DR2_HDR_FLAG_NO_DATA_CRC, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&frag, 1, PML_DR2_HDR_FLAG_NO_DATA_CRC, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&ack, 1, PML_DR2_HDR_FLAG_NO_DATA_CRC, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    /* REVOKED (a rendezvous dropped unmatched) is an ACK's flag only */
    CHECK(decode_mutated(&ack, 1, PML_DR2_HDR_FLAG_REVOKED, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&nack, 1, PML_DR2_HDR_FLAG_REVOKED, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_mutated(&match, 1, PML_DR2_HDR_FLAG_REVOKED, 1, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_mutated(&match, 23, 1, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    CHECK(decode_mutated(&frag, 18, 0x100, 2, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    CHECK(decode_mutated(&frag, 44, 0x80000000, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    /* the epoch is any value: only the receiver's communicator can say it is not its own */
    CHECK(decode_mutated(&match, 44, 0, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&match, 44, 0xFFFFFFFF, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&match, 44, 0xFFFFFFFF, 4, 0, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_CRC);
    CHECK(decode_mutated(&match, 12, 0xFFFFFFFF, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RANK);
    CHECK(decode_mutated(&match, 12, 0x80000000, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RANK);
    CHECK(decode_mutated(&frag, 16, 64, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_INDEX);
    CHECK(decode_mutated(&frag, 16, 255, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_INDEX);
    CHECK(decode_mutated(&frag, 17, 0, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_COUNT);
    CHECK(decode_mutated(&frag, 17, 65, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_COUNT);
    CHECK(decode_mutated(&frag, 17, 63, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_COUNT);
    CHECK(decode_mutated(&match, 22, 0, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_COUNT);
    CHECK(decode_mutated(&match, 22, 65, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_FRAG_COUNT);
    CHECK(decode_mutated(&frag, 20, 0, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_EMPTY);
    CHECK(decode_mutated(&ack, 12, 0, 8, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_MASK);
    CHECK(decode_mutated(&nack, 12, 0, 8, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_MASK);
    CHECK(decode_mutated(&frag, 20, 100, 4, 0, 99) == PML_DR2_HDR_ERR_TOO_LONG);
    CHECK(decode_mutated(&frag, 20, 100, 4, 0, 100) == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&match, 28, 8, 4, 0, 7) == PML_DR2_HDR_ERR_TOO_LONG);
    /* offset + length wraps around 2^64 even though the message is "long enough" */
    {
        wire_t big = frag;
        unsigned char *copy = malloc(frag.len);

        memcpy(copy, frag.buf, frag.len);
        put_le(copy + 24, UINT64_MAX - 50, 8);
        put_le(copy + 32, UINT64_MAX, 8);
        big.buf = copy;
        CHECK(decode_mutated(&big, 24, UINT64_MAX - 50, 8, 1, MAX_PAYLOAD)
              == PML_DR2_HDR_ERR_OVERFLOW);
        CHECK(decode_mutated(&big, 24, UINT64_MAX - 100, 8, 1, MAX_PAYLOAD)
              == PML_DR2_HDR_OK);
        free(copy);
    }
    /* offset + length one past the message end; a MATCH longer than its message */
    CHECK(decode_mutated(&frag, 24, 0x10000000000ull - 99, 8, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_BOUNDS);
    CHECK(decode_mutated(&frag, 24, 0x10000000000ull - 100, 8, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_OK);
    CHECK(decode_mutated(&frag, 32, 0, 8, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_BOUNDS);
    CHECK(decode_mutated(&match, 32, 7, 8, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_BOUNDS);
    /* a length beyond the buffer, and a damaged payload */
    CHECK(decode_mutated(&frag, 20, 101, 4, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED);
    CHECK(decode_mutated(&frag, 20, 0xFFFF, 4, 1, UINT32_MAX)
          == PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED);
    CHECK(decode_mutated(&frag, 20, 0xFFFFFFFF, 4, 1, UINT32_MAX) == PML_DR2_HDR_ERR_BOUNDS);
    CHECK(decode_mutated(&frag, 20, 99, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_DATA_CRC);
    CHECK(decode_mutated(&frag, 48, 0x55, 1, 0, MAX_PAYLOAD) == PML_DR2_HDR_ERR_DATA_CRC);
    CHECK(decode_mutated(&match, 40, 1, 4, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_DATA_CRC);
    free(match.buf);
    free(frag.buf);
    free(ack.buf);
    free(nack.buf);
}

/* A sender can never produce what its peer would reject. */
static void encode_refuses_invalid_headers(void)
{
    unsigned char buf[PML_DR2_HDR_MAX_LEN + 16];
    pml_dr2_hdr_t h;

    h = sample_match(PML_DR2_HDR_MATCH);
    CHECK(pml_dr2_hdr_encode(&h, buf, PML_DR2_HDR_MATCH_LEN - 1) == 0);
    CHECK(pml_dr2_hdr_encode(&h, buf, PML_DR2_HDR_MATCH_LEN) == PML_DR2_HDR_MATCH_LEN);
    h.type = 0;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_match(PML_DR2_HDR_MATCH);
    h.match.src = -1;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_match(PML_DR2_HDR_MATCH);
    h.flags = PML_DR2_HDR_FLAG_MATCHED;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_match(PML_DR2_HDR_MATCH);
    h.frag_len = 16; /* longer than the message */
    h.match.msg_len = 15;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), buf, 16) == 0);
    h = sample_frag();
    h.frag.frag_index = 64;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_frag();
    h.frag.frag_count = 0;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_frag();
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), NULL, 0) == 0); /* empty FRAG */
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), buf, 17) == 0);  /* does not fit */
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), buf, 16) == sizeof(buf));
    h.frag.offset = UINT64_MAX;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), buf, 1) == 0);
    h = sample_ack(PML_DR2_HDR_NACK);
    h.ack.mask = 0;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h = sample_ack(PML_DR2_HDR_ACK);
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), NULL, 0) == 0); /* no payload on an ACK */
    h.frag_len = 5;
    h.data_crc = 5;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == PML_DR2_HDR_ACK_LEN);
    CHECK(h.frag_len == 0 && h.data_crc == 0 && pml_dr2_hdr_wire_len(&h) == 20);
}

/* When decode accepts something, what it returns satisfies every documented invariant. */
static void check_invariants(const pml_dr2_hdr_t *h, size_t buf_len, uint32_t max)
{
    CHECK(h->hdr_len == pml_dr2_hdr_size(h->type));
    CHECK(pml_dr2_hdr_wire_len(h) <= buf_len);
    CHECK(h->frag_len <= max);
    switch (h->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        CHECK(h->match.src >= 0 && h->match.frag_count >= 1 && h->match.frag_count <= 64);
        CHECK(h->frag_len <= h->match.msg_len);
        break;
    case PML_DR2_HDR_FRAG:
        CHECK(h->frag.frag_index < h->frag.frag_count && h->frag.frag_count <= 64);
        CHECK(h->frag_len > 0 && h->frag.offset <= h->frag.msg_len
              && h->frag_len <= h->frag.msg_len - h->frag.offset);
        break;
    case PML_DR2_HDR_ACK:
    case PML_DR2_HDR_NACK:
        CHECK(h->ack.mask != 0 && h->frag_len == 0);
        break;
    default:
        CHECK(0);
    }
}

/* 100k random buffers never decode; 100k that look like headers (right version, type and
 * length) still fail the checksum; 100k with random fields under a valid checksum only
 * ever decode into headers that satisfy the invariants. */
static void random_input_never_crashes_or_passes(void)
{
    static const int types[] = {PML_DR2_HDR_MATCH, PML_DR2_HDR_RNDV, PML_DR2_HDR_FRAG,
                                PML_DR2_HDR_ACK, PML_DR2_HDR_NACK};
    int accepted_raw = 0, accepted_plausible = 0, accepted_sealed = 0;
    int statuses[PML_DR2_HDR_NUM_STATUS] = {0};

    for (int i = 0; i < 300000; i++) {
        int kind = i % 3, type = types[rng_next() % 5];
        size_t len = rng_next() % 160;
        unsigned char *buf = malloc(len ? len : 1);
        uint32_t max = (rng_next() & 1) ? MAX_PAYLOAD : (uint32_t) (rng_next() % 128);
        pml_dr2_hdr_t out;
        pml_dr2_hdr_status_t st;

        rng_fill(buf, len);
        if (kind > 0 && len >= pml_dr2_hdr_size(type)) {
            buf[0] = (unsigned char) type;
            buf[2] = PML_DR2_HDR_VERSION;
            buf[3] = (unsigned char) pml_dr2_hdr_size(type);
            if (rng_next() & 1) {
                buf[1] &= 0x0F; /* mostly defined flags */
            }
            if (kind == 2) {
                /* small lengths and counts, so the body checks get exercised */
                if (type != PML_DR2_HDR_ACK && type != PML_DR2_HDR_NACK) {
                    size_t room = len - pml_dr2_hdr_size(type);
                    uint32_t frag_len = (uint32_t) (rng_next() % (room + 2));

                    put_le(buf + (type == PML_DR2_HDR_FRAG ? 20 : 28), frag_len, 4);
                    buf[type == PML_DR2_HDR_FRAG ? 17 : 22] = (unsigned char) (rng_next() % 66);
                    buf[type == PML_DR2_HDR_FRAG ? 16 : 23] = (unsigned char) (rng_next() % 66);
                    if (type == PML_DR2_HDR_FRAG) {
                        put_le(buf + 18, 0, 2);
                        put_le(buf + 24, rng_next() % 300, 8);
                        put_le(buf + 32, rng_next() % 300, 8);
                    } else {
                        put_le(buf + 32, rng_next() % 300, 8);
                        if (rng_next() % 8 != 0) {
                            buf[15] &= 0x7F; /* mostly a valid rank */
                        }
                    }
                    put_le(buf + 40,
                           pml_dr2_crc32c(0, buf + pml_dr2_hdr_size(type),
                                          frag_len <= room ? frag_len : 0)
                               ^ (rng_next() % 16 == 0), /* sometimes a wrong data_crc */
                           4);
                }
                reseal(buf, pml_dr2_hdr_size(type));
            }
        }
        st = pml_dr2_hdr_decode(buf, len, max, &out);
        CHECK((unsigned) st < PML_DR2_HDR_NUM_STATUS);
        if ((unsigned) st < PML_DR2_HDR_NUM_STATUS) {
            statuses[st]++;
        }
        if (st == PML_DR2_HDR_OK) {
            accepted_raw += kind == 0;
            accepted_plausible += kind == 1;
            accepted_sealed += kind == 2;
            check_invariants(&out, len, max);
        }
        free(buf);
    }
    CHECK(accepted_raw == 0);
    CHECK(accepted_plausible == 0);
    CHECK(accepted_sealed > 0); /* the generator does reach valid headers */
    printf("# random input: %d of 100000 sealed buffers valid; statuses:", accepted_sealed);
    for (int s = 0; s < PML_DR2_HDR_NUM_STATUS; s++) {
        printf(" %s=%d", pml_dr2_hdr_status_name((pml_dr2_hdr_status_t) s), statuses[s]);
    }
    printf("\n");
}

static void status_names_are_distinct(void)
{
    for (int a = 0; a < PML_DR2_HDR_NUM_STATUS; a++) {
        const char *name = pml_dr2_hdr_status_name((pml_dr2_hdr_status_t) a);

        CHECK(name != NULL && strcmp(name, "unknown") != 0);
        for (int b = 0; b < a; b++) {
            CHECK(strcmp(name, pml_dr2_hdr_status_name((pml_dr2_hdr_status_t) b)) != 0);
        }
    }
    CHECK(strcmp(pml_dr2_hdr_status_name(PML_DR2_HDR_NUM_STATUS), "unknown") == 0);
}

/* The one-pass ACK/NACK packer (which pml_dr2_hdr_encode uses for these types) writes the
 * wire layout byte for byte, decodes back, and refuses what the codec refuses. */
static void pack_ack_as_encode(void)
{
    static const uint8_t types[] = {PML_DR2_HDR_ACK, PML_DR2_HDR_NACK};
    unsigned char packed[32], encoded[32], expect[PML_DR2_HDR_ACK_LEN];
    pml_dr2_ack_hdr_t ack = {.vfrag = 0xFFFFFFFEu, .mask = UINT64_C(0x8000000000000005)};
    pml_dr2_ack_hdr_t empty = {.vfrag = 7, .mask = 0};
    pml_dr2_hdr_t h, back;

    for (int i = 0; i < 2; i++) {
        uint8_t flags = PML_DR2_HDR_ACK == types[i] ? PML_DR2_HDR_FLAG_MATCHED : 0;

        memset(&h, 0, sizeof(h));
        h.type = types[i];
        h.flags = flags;
        h.ack = ack;
        CHECK(pml_dr2_hdr_encode(&h, encoded, sizeof(encoded)) == PML_DR2_HDR_ACK_LEN);
        CHECK(pml_dr2_hdr_pack_ack(types[i], flags, &ack, packed, sizeof(packed))
              == PML_DR2_HDR_ACK_LEN);
        expect[0] = types[i];
        expect[1] = flags;
        expect[2] = PML_DR2_HDR_VERSION;
        expect[3] = PML_DR2_HDR_ACK_LEN;
        put_le(expect + 8, ack.vfrag, 4);
        put_le(expect + 12, ack.mask, 8);
        reseal(expect, PML_DR2_HDR_ACK_LEN);
        CHECK(memcmp(packed, expect, PML_DR2_HDR_ACK_LEN) == 0);
        CHECK(memcmp(encoded, expect, PML_DR2_HDR_ACK_LEN) == 0);
        CHECK(pml_dr2_hdr_decode(packed, PML_DR2_HDR_ACK_LEN, 0, &back) == PML_DR2_HDR_OK);
        CHECK(back.type == types[i] && back.flags == flags && back.ack.vfrag == ack.vfrag
              && back.ack.mask == ack.mask);
        CHECK(pml_dr2_hdr_pack_ack(types[i], flags, &empty, packed, sizeof(packed)) == 0);
        CHECK(pml_dr2_hdr_pack_ack(types[i], flags, &ack, packed, PML_DR2_HDR_ACK_LEN - 1) == 0);
        CHECK(pml_dr2_hdr_pack_ack(types[i], PML_DR2_HDR_FLAG_RETRANSMIT, &ack, packed,
                                   sizeof(packed))
              == 0);
    }
    /* MATCHED belongs to ACK only; other types are not packed here */
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_NACK, PML_DR2_HDR_FLAG_MATCHED, &ack, packed,
                               sizeof(packed))
          == 0);
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_MATCH, 0, &ack, packed, sizeof(packed)) == 0);
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_TINY, 0, &ack, packed, sizeof(packed)) == 0);
}

/* Path probes ride in ACK headers: PROBE and PROBE_REPLY round-trip, never combined with
 * each other or another flag, never on a NACK. */
static void probe_flags_on_acks_only(void)
{
    unsigned char buf[PML_DR2_HDR_ACK_LEN];
    pml_dr2_ack_hdr_t ack = {.vfrag = 0xFFFFFFF0u, .mask = 2};
    pml_dr2_hdr_t out;
    const uint8_t bad[] = {
        PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_PROBE_REPLY,
        PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_MATCHED,
        PML_DR2_HDR_FLAG_PROBE_REPLY | PML_DR2_HDR_FLAG_MATCHED,
        PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_REVOKED,
    };

    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, PML_DR2_HDR_FLAG_PROBE, &ack, buf, sizeof(buf))
          == PML_DR2_HDR_ACK_LEN);
    CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), 0, &out) == PML_DR2_HDR_OK);
    CHECK(out.type == PML_DR2_HDR_ACK && out.flags == PML_DR2_HDR_FLAG_PROBE);
    CHECK(out.ack.vfrag == 0xFFFFFFF0u && out.ack.mask == 2);
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, PML_DR2_HDR_FLAG_PROBE_REPLY, &ack, buf,
                               sizeof(buf)) == PML_DR2_HDR_ACK_LEN);
    CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), 0, &out) == PML_DR2_HDR_OK);
    CHECK(out.flags == PML_DR2_HDR_FLAG_PROBE_REPLY);
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_NACK, PML_DR2_HDR_FLAG_PROBE, &ack, buf, sizeof(buf))
          == 0);
    for (size_t i = 0; i < sizeof(bad); i++) {
        CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, bad[i], &ack, buf, sizeof(buf)) == 0);
        /* the same combination forged on the wire (checksum recomputed) is refused */
        CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, PML_DR2_HDR_FLAG_PROBE, &ack, buf,
                                   sizeof(buf)) == PML_DR2_HDR_ACK_LEN);
        buf[1] = bad[i];
        reseal(buf, sizeof(buf));
        CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), 0, &out) == PML_DR2_HDR_ERR_FLAGS);
    }
}

/* FROM (the sender of a segment on a BTL that does not say): the golden bytes, a round
 * trip, every bit flip and truncation refused, and no other header taken for one; inside a
 * segment's headers it is no header at all. */
static void from_prefix(void)
{
    static const unsigned char golden[] = {
        0x09, 0x00, 0x02, 0x10, 0, 0, 0, 0, /* FROM, no flags, v2, 16 bytes, crc */
        0x78, 0x56, 0x34, 0x12,             /* jobid */
        0xFE, 0xFF, 0xFF, 0xFF,             /* vpid */
    };
    const pml_dr2_from_hdr_t from = {.jobid = 0x12345678u, .vpid = 0xFFFFFFFEu};
    pml_dr2_from_hdr_t out;
    unsigned char buf[PML_DR2_HDR_FROM_LEN], expect[sizeof(golden)], other[PML_DR2_HDR_ACK_LEN];
    pml_dr2_ack_hdr_t ack = {.vfrag = 1, .mask = 1};
    pml_dr2_hdr_t hdr;

    memcpy(expect, golden, sizeof(golden));
    reseal(expect, sizeof(golden));
    CHECK(pml_dr2_hdr_pack_from(&from, buf, sizeof(buf) - 1) == 0);
    CHECK(pml_dr2_hdr_pack_from(&from, buf, sizeof(buf)) == PML_DR2_HDR_FROM_LEN);
    CHECK(memcmp(buf, expect, sizeof(golden)) == 0);
    CHECK(pml_dr2_hdr_decode_from(buf, sizeof(buf), &out) == PML_DR2_HDR_OK);
    CHECK(out.jobid == from.jobid && out.vpid == from.vpid);
    for (size_t bit = 0; bit < 8 * sizeof(buf); bit++) {
        buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        CHECK(pml_dr2_hdr_decode_from(buf, sizeof(buf), &out) != PML_DR2_HDR_OK);
        buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
    }
    for (size_t len = 0; len < sizeof(buf); len++) {
        CHECK(pml_dr2_hdr_decode_from(buf, len, &out) == PML_DR2_HDR_ERR_TRUNCATED);
    }
    buf[1] = 0x01; /* a flag, the checksum made right: still refused */
    reseal(buf, sizeof(buf));
    CHECK(pml_dr2_hdr_decode_from(buf, sizeof(buf), &out) == PML_DR2_HDR_ERR_FLAGS);
    CHECK(pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, 0, &ack, other, sizeof(other)) == sizeof(other));
    CHECK(pml_dr2_hdr_decode_from(other, sizeof(other), &out) == PML_DR2_HDR_ERR_TYPE);
    CHECK(pml_dr2_hdr_pack_from(&from, buf, sizeof(buf)) == PML_DR2_HDR_FROM_LEN);
    CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), MAX_PAYLOAD, &hdr) == PML_DR2_HDR_ERR_TYPE);
}

int main(void)
{
    RUN(from_prefix);
    RUN(probe_flags_on_acks_only);
    RUN(sizes_per_type);
    RUN(golden_bytes);
    RUN(round_trip_every_type);
    RUN(back_to_back_in_one_segment);
    RUN(every_single_bit_flip_is_detected);
    RUN(every_truncation_is_rejected);
    RUN(each_malformed_field_has_its_status);
    RUN(encode_refuses_invalid_headers);
    RUN(random_input_never_crashes_or_passes);
    RUN(status_names_are_distinct);
    RUN(pack_ack_as_encode);
    UNIT_EXIT();
}
