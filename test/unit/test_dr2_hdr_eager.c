/*
 * Unit tests of pml/dr2's EAGER and TINY headers, one checksum over header and payload:
 * the byte layout, round trips with and without an ACK inside, every single-bit error
 * caught before anything is acted on, truncations and malformed fields rejected, and what
 * a sender must not or cannot put in them refused. And of LOCAL, the envelope alone: its
 * layout, round trips, what it cannot carry, and its shape checked on decode. Buffers are allocated at their exact
 * length, so that AddressSanitizer or valgrind catch any read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_dr2_hdr.h"

/* ---- EAGER: one header, one checksum over header and payload, an ACK inside ------------ */

/* MATCH's envelope; frag_count and msg_len left to the codec, which implies them */
static pml_dr2_hdr_t sample_eager(int with_ack)
{
    pml_dr2_hdr_t h = sample_match(PML_DR2_HDR_EAGER);

    h.flags = PML_DR2_HDR_FLAG_ACK_NOW;
    h.match.frag_count = 0;
    h.match.msg_len = 0;
    if (with_ack) {
        h.flags |= PML_DR2_HDR_FLAG_MATCHED;
        h.piggy_ack.vfrag = 0x80000001u;
        h.piggy_ack.mask = 0x8000000000000001ull;
    }
    return h;
}

/* Reseal an EAGER image: its checksum covers header (field as zero) and payload. */
static void reseal_eager(unsigned char *buf, size_t len)
{
    uint32_t crc;

    memset(buf + 4, 0, 4);
    crc = pml_dr2_crc32c(0, buf, len);
    put_le(buf + 4, crc, 4);
}

static void eager_golden_bytes(void)
{
    static const unsigned char eager_body[] = {
        0x06, 0x0A, 0x02, 0x30, 0, 0, 0, 0, /* EAGER, ACK_NOW|MATCHED, v2, 48 bytes, crc */
        0x34, 0x12, 0xDE, 0xC0,             /* ctx */
        0xFE, 0xFF, 0xFF, 0x7F,             /* src */
        0xEF, 0xFF, 0xFF, 0xFF,             /* tag -17 */
        0xFF, 0xFF,                         /* seq */
        0x00, 0x00,                         /* reserved */
        0xFF, 0xFF, 0xFF, 0xFF,             /* vfrag */
        0x03, 0x00, 0x00, 0x00,             /* frag_len 3 */
        0x01, 0x00, 0x00, 0x80,             /* ack_vfrag */
        0x01, 0, 0, 0, 0, 0, 0, 0x80,       /* ack_mask */
        0x11, 0x4A, 0x0C, 0xE9,             /* epoch */
        'a', 'b', 'c',                      /* payload */
    };
    unsigned char buf[64], expect[64];
    pml_dr2_hdr_t h = sample_eager(1);

    memcpy(expect, eager_body, sizeof(eager_body));
    reseal_eager(expect, sizeof(eager_body));
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "abc", 3) == sizeof(eager_body));
    CHECK(memcmp(buf, expect, sizeof(eager_body)) == 0);
    CHECK(h.match.msg_len == 3 && h.match.frag_count == 1 && h.hdr_len == 48);
    /* encode over a payload already in place writes the same bytes */
    memset(buf, 0, 48);
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(eager_body)) == 48);
    CHECK(memcmp(buf, expect, sizeof(eager_body)) == 0);
    /* ...and refuses when the payload is not all within buf_len */
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(eager_body) - 1) == 0);
}

static void eager_round_trip_with_and_without_ack(void)
{
    static const uint32_t lens[] = {0, 1, 8, 1024};

    for (int with_ack = 0; with_ack < 2; with_ack++) {
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            pml_dr2_hdr_t h = sample_eager(with_ack), out;
            wire_t w = make_wire(h, lens[i]);
            unsigned char *dst = malloc(lens[i] + 1);

            CHECK(w.hdr.match.msg_len == lens[i] && w.hdr.match.frag_count == 1);
            CHECK(decode_exact(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
            CHECK(same_header(&out, &w.hdr));
            CHECK(out.piggy_ack.vfrag == w.hdr.piggy_ack.vfrag);
            CHECK(out.piggy_ack.mask == w.hdr.piggy_ack.mask);
            CHECK(out.match.msg_len == lens[i] && out.match.frag_count == 1);
            CHECK(out.match.has_epoch && out.match.epoch == w.hdr.match.epoch);
            CHECK(pml_dr2_hdr_wire_len(&out) == w.len);
            CHECK(pml_dr2_hdr_payload_checked(&out));
            CHECK(pml_dr2_hdr_decode_header(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
            CHECK(pml_dr2_hdr_unpack(&out, w.buf, dst) == PML_DR2_HDR_OK);
            CHECK(memcmp(dst, w.buf + 48, lens[i]) == 0);
            free(dst);
            free(w.buf);
        }
    }
    /* other types never carry an ACK inside and keep their separate payload check */
    {
        wire_t w = make_wire(sample_match(PML_DR2_HDR_MATCH), 8);
        pml_dr2_hdr_t out;
        CHECK(decode_exact(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
        CHECK(0 == out.piggy_ack.mask && 0 == out.piggy_ack.vfrag);
        CHECK(!pml_dr2_hdr_payload_checked(&out));
        free(w.buf);
    }
}

/* Any single bit flipped, in the header or in the payload, fails decode_header already:
 * nothing of a damaged EAGER is ever acted on. */
static void eager_one_checksum_covers_payload(void)
{
    wire_t w = make_wire(sample_eager(1), 100);
    int undetected = 0;

    for (size_t bit = 0; bit < w.len * 8; bit++) {
        pml_dr2_hdr_t out;
        w.buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        undetected += pml_dr2_hdr_decode_header(w.buf, w.len, MAX_PAYLOAD, &out)
                      == PML_DR2_HDR_OK;
        undetected += pml_dr2_hdr_decode(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK;
        w.buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
    }
    CHECK(undetected == 0);
    /* a flip in the payload is reported as the (one) checksum failing */
    w.buf[50] ^= 0x10;
    CHECK(decode_exact(w.buf, w.len, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_ERR_HDR_CRC);
    free(w.buf);
}

static pml_dr2_hdr_status_t decode_eager_mutated(const wire_t *w, size_t at, uint64_t value,
                                                 int bytes, uint32_t max)
{
    unsigned char *copy = malloc(w->len);
    pml_dr2_hdr_t out;
    pml_dr2_hdr_status_t st;

    memcpy(copy, w->buf, w->len);
    put_le(copy + at, value, bytes);
    reseal_eager(copy, w->len);
    st = pml_dr2_hdr_decode(copy, w->len, max, &out);
    free(copy);
    return st;
}

static void eager_truncation_and_malformed_fields(void)
{
    wire_t w = make_wire(sample_eager(1), 16);
    wire_t plain = make_wire(sample_eager(0), 16);

    for (size_t len = 0; len < w.len; len++) {
        pml_dr2_hdr_t out;
        CHECK(decode_exact(w.buf, len, MAX_PAYLOAD, &out)
              == (len < 48 ? PML_DR2_HDR_ERR_TRUNCATED : PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED));
    }
    /* a length beyond the buffer is refused before any checksum is computed over it */
    CHECK(decode_eager_mutated(&w, 28, 0xFFFFFFFF, 4, UINT32_MAX)
          == PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED);
    CHECK(decode_eager_mutated(&w, 28, 17, 4, MAX_PAYLOAD) == PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED);
    CHECK(decode_eager_mutated(&w, 0, 0, 0, 15) == PML_DR2_HDR_ERR_TOO_LONG);
    CHECK(decode_eager_mutated(&w, 22, 1, 2, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    CHECK(decode_eager_mutated(&w, 12, 0xFFFFFFFF, 4, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RANK);
    CHECK(decode_eager_mutated(&w, 1, PML_DR2_HDR_FLAG_SYNC, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_eager_mutated(&w, 1, PML_DR2_HDR_FLAG_NO_DATA_CRC, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_eager_mutated(&w, 3, 20, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_eager_mutated(&w, 3, 44, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_HDR_LEN);
    CHECK(decode_eager_mutated(&w, 2, 1, 1, MAX_PAYLOAD) == PML_DR2_HDR_ERR_VERSION);
    /* the epoch is any value (pml_dr2_hdr.h) */
    CHECK(decode_eager_mutated(&w, 44, 0, 4, MAX_PAYLOAD) == PML_DR2_HDR_OK);
    /* MATCHED only flags an ACK that is there; no ACK vfrag without a mask */
    CHECK(decode_eager_mutated(&plain, 1, PML_DR2_HDR_FLAG_MATCHED, 1, MAX_PAYLOAD)
          == PML_DR2_HDR_ERR_FLAGS);
    CHECK(decode_eager_mutated(&plain, 32, 5, 4, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    CHECK(decode_eager_mutated(&w, 36, 0, 8, MAX_PAYLOAD) == PML_DR2_HDR_ERR_RESERVED);
    /* unchanged but resealed: still fine (the mutation helper itself is sound) */
    CHECK(decode_eager_mutated(&w, 0, PML_DR2_HDR_EAGER, 1, MAX_PAYLOAD) == PML_DR2_HDR_OK);
    free(w.buf);
    free(plain.buf);
}

static void eager_encode_refuses_invalid_headers(void)
{
    unsigned char buf[128];
    pml_dr2_hdr_t h;

    h = sample_eager(0);
    h.flags |= PML_DR2_HDR_FLAG_MATCHED;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_eager(0);
    h.piggy_ack.vfrag = 3;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_eager(1);
    h.match.src = -1;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_eager(1);
    h.flags |= PML_DR2_HDR_FLAG_SYNC;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == 0);
    /* its one checksum always covers the payload: no NO_DATA_CRC */
    h = sample_eager(1);
    h.flags |= PML_DR2_HDR_FLAG_NO_DATA_CRC;
    CHECK(pml_dr2_hdr_pack(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_eager(1);
    CHECK(pml_dr2_hdr_pack(&h, buf, 48, "x", 1) == 0); /* no room for the payload */
    /* encode: the host form must say what EAGER implies */
    h = sample_eager(1);
    h.frag_len = 1;
    h.match.msg_len = 2;
    h.match.frag_count = 1;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h.match.msg_len = 1;
    h.match.frag_count = 2;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 0);
    h.match.frag_count = 1;
    CHECK(pml_dr2_hdr_encode(&h, buf, sizeof(buf)) == 48);
}

/* ---- TINY: an EAGER without ACK in 16 bytes ----------------------------------------- */

/* An envelope that fits TINY's 16-bit fields, at their edges. */
static pml_dr2_hdr_t sample_tiny(void)
{
    pml_dr2_hdr_t h = sample_eager(0);

    h.match.ctx = 0xFFFF;
    h.match.src = 0xFFFE;
    h.match.tag = -32768;
    h.match.seq = 0x8001;
    h.match.vfrag = 0xA1B2C3D4u; /* only 0xB2C3D4 goes on the wire */
    return h;
}

/* A TINY image of the sample with `len` random payload bytes, in a buffer of its length. */
static wire_t make_tiny(pml_dr2_hdr_t hdr, uint32_t len)
{
    wire_t w;
    unsigned char *payload = calloc(len + 1, 1);

    rng_fill(payload, len);
    w.hdr = hdr;
    w.len = PML_DR2_HDR_TINY_LEN + len;
    w.buf = malloc(w.len);
    CHECK(pml_dr2_hdr_pack_tiny(&hdr, w.buf, w.len, payload, len) == w.len);
    CHECK(memcmp(w.buf + PML_DR2_HDR_TINY_LEN, payload, len) == 0);
    free(payload);
    return w;
}

static void tiny_golden_bytes(void)
{
    static const unsigned char tiny_body[] = {
        0x07, 0xD4, 0xC3, 0xB2, /* TINY, vfrag low 24 bits */
        0, 0, 0, 0,             /* crc */
        0xFF, 0xFF,             /* ctx */
        0xFE, 0xFF,             /* src */
        0x00, 0x80,             /* tag -32768 */
        0x01, 0x80,             /* seq */
        'a', 'b', 'c',          /* payload */
    };
    unsigned char buf[64], expect[64];
    pml_dr2_hdr_t h = sample_tiny();

    memcpy(expect, tiny_body, sizeof(tiny_body));
    reseal_eager(expect, sizeof(tiny_body)); /* the same rule: header, field as 0, payload */
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "abc", 3) == sizeof(tiny_body));
    CHECK(memcmp(buf, expect, sizeof(tiny_body)) == 0);
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(tiny_body) - 1, "abc", 3) == 0);
    /* the sender's direct path: the same bytes from the envelope alone */
    memset(buf, 0x5A, sizeof(buf));
    CHECK(pml_dr2_hdr_pack_tiny_envelope(&h.match, buf, sizeof(buf), "abc", 3)
          == sizeof(tiny_body));
    CHECK(memcmp(buf, expect, sizeof(tiny_body)) == 0);
    CHECK(pml_dr2_hdr_pack_tiny_envelope(&h.match, buf, sizeof(tiny_body) - 1, "abc", 3) == 0);
}

static void tiny_round_trip(void)
{
    static const uint32_t lens[] = {0, 1, 8, PML_DR2_HDR_TINY_MAX_PAYLOAD};
    static const int32_t tags[] = {-32768, -17, 0, 32767};

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        pml_dr2_hdr_t h = sample_tiny(), out;
        wire_t w;
        unsigned char *dst = malloc(lens[i] + 1);

        h.match.tag = tags[i];
        w = make_tiny(h, lens[i]);
        CHECK(decode_exact(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
        CHECK(out.type == PML_DR2_HDR_TINY && out.hdr_len == PML_DR2_HDR_TINY_LEN);
        CHECK(out.flags == PML_DR2_HDR_FLAG_ACK_NOW);
        CHECK(out.match.ctx == h.match.ctx && out.match.src == h.match.src);
        CHECK(out.match.tag == tags[i] && out.match.seq == h.match.seq);
        CHECK(out.match.vfrag == (h.match.vfrag & 0xFFFFFFu));
        CHECK(out.frag_len == lens[i] && out.match.msg_len == lens[i]);
        CHECK(out.match.frag_count == 1);
        CHECK(!out.match.has_epoch && 0 == out.match.epoch); /* none on the wire */
        CHECK(0 == out.piggy_ack.mask && 0 == out.piggy_ack.vfrag);
        CHECK(pml_dr2_hdr_wire_len(&out) == w.len);
        CHECK(pml_dr2_hdr_payload_checked(&out));
        CHECK(pml_dr2_hdr_decode_header(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
        CHECK(pml_dr2_hdr_unpack(&out, w.buf, dst) == PML_DR2_HDR_OK);
        CHECK(memcmp(dst, w.buf + PML_DR2_HDR_TINY_LEN, lens[i]) == 0);
        free(dst);
        free(w.buf);
    }
}

/* What TINY cannot carry is refused, and the sender then uses EAGER. */
static void tiny_refuses_what_does_not_fit(void)
{
    unsigned char buf[PML_DR2_HDR_TINY_LEN + PML_DR2_HDR_TINY_MAX_PAYLOAD + 1];
    static const unsigned char payload[PML_DR2_HDR_TINY_MAX_PAYLOAD + 1] = {1};
    pml_dr2_hdr_t h;

    h = sample_tiny();
    CHECK(pml_dr2_hdr_fits_tiny(&h, PML_DR2_HDR_TINY_MAX_PAYLOAD));
    CHECK(!pml_dr2_hdr_fits_tiny(&h, PML_DR2_HDR_TINY_MAX_PAYLOAD + 1));
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), payload, sizeof(payload)) == 0);
    h.match.ctx = 0x10000;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.match.src = 0x10000;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    h.match.src = -1;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    CHECK(pml_dr2_hdr_pack_tiny_envelope(&h.match, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.match.tag = 32768;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    CHECK(pml_dr2_hdr_pack_tiny_envelope(&h.match, buf, sizeof(buf), "x", 1) == 0);
    h.match.tag = -32769;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    CHECK(!pml_dr2_hdr_envelope_fits_tiny(&h.match, 1));
    h = sample_tiny();
    CHECK(pml_dr2_hdr_envelope_fits_tiny(&h.match, PML_DR2_HDR_TINY_MAX_PAYLOAD));
    CHECK(pml_dr2_hdr_pack_tiny_envelope(&h.match, buf, sizeof(buf), payload, sizeof(payload))
          == 0);
    h = sample_eager(1); /* an ACK to carry: only EAGER has room */
    h.match.ctx = h.match.src = 1;
    h.match.tag = 1;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.flags |= PML_DR2_HDR_FLAG_RETRANSMIT; /* resends go as EAGER */
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.type = PML_DR2_HDR_MATCH;
    CHECK(pml_dr2_hdr_pack_tiny(&h, buf, sizeof(buf), "x", 1) == 0);
}

/* One checksum over all of it: any single bit flipped fails the decode; a buffer shorter
 * than the header is truncated; a payload longer than TINY's or the caller's maximum is
 * refused before any checksum is computed over it. */
static void tiny_damage_and_lengths(void)
{
    wire_t w = make_tiny(sample_tiny(), 8);
    unsigned char big[PML_DR2_HDR_TINY_LEN + PML_DR2_HDR_TINY_MAX_PAYLOAD + 1];
    int undetected = 0;

    for (size_t bit = 0; bit < w.len * 8; bit++) {
        pml_dr2_hdr_t out;
        w.buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        undetected += pml_dr2_hdr_decode(w.buf, w.len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK;
        w.buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
    }
    CHECK(undetected == 0);
    for (size_t len = 1; len < PML_DR2_HDR_TINY_LEN; len++) {
        CHECK(decode_exact(w.buf, len, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
              == PML_DR2_HDR_ERR_TRUNCATED);
    }
    /* a shorter segment is another payload length: the checksum catches the cut */
    CHECK(decode_exact(w.buf, w.len - 1, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_ERR_HDR_CRC);
    CHECK(decode_exact(w.buf, w.len, 7, &(pml_dr2_hdr_t){0}) == PML_DR2_HDR_ERR_TOO_LONG);
    memset(big, 0, sizeof(big));
    big[0] = PML_DR2_HDR_TINY;
    reseal_eager(big, sizeof(big));
    CHECK(decode_exact(big, sizeof(big), MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_ERR_TOO_LONG);
    CHECK(decode_exact(big, sizeof(big) - 1, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_ERR_HDR_CRC);
    free(w.buf);
}

/* ---- LOCAL: a message's envelope and payload, nothing else (sm and self only) ---------- */

static void local_golden_bytes(void)
{
    static const unsigned char local_body[] = {
        0x08, 0x00, /* LOCAL, reserved */
        0xFF, 0xFF, /* ctx */
        0xFE, 0xFF, /* src */
        0x00, 0x80, /* tag -32768 */
        0x01, 0x80, /* seq */
        0x00, 0x00, /* reserved */
        'a', 'b', 'c',
    };
    unsigned char buf[64];
    pml_dr2_hdr_t h = sample_tiny(), out;

    memset(buf, 0x5A, sizeof(buf));
    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), "abc", 3) == sizeof(local_body));
    CHECK(memcmp(buf, local_body, sizeof(local_body)) == 0);
    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(local_body) - 1, "abc", 3) == 0);
    CHECK(pml_dr2_hdr_size(PML_DR2_HDR_LOCAL) == PML_DR2_HDR_LOCAL_LEN);
    CHECK(decode_exact(local_body, sizeof(local_body), MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
    CHECK(out.type == PML_DR2_HDR_LOCAL && out.hdr_len == PML_DR2_HDR_LOCAL_LEN);
    CHECK(out.match.ctx == 0xFFFF && out.match.src == 0xFFFE && out.match.tag == -32768);
    CHECK(out.match.seq == 0x8001 && out.match.vfrag == 0 && 0 == out.flags);
    CHECK(out.frag_len == 3 && out.match.msg_len == 3 && out.match.frag_count == 1);
    CHECK(0 == out.data_crc && 0 == out.piggy_ack.mask);
    CHECK(pml_dr2_hdr_payload_checked(&out) && pml_dr2_hdr_wire_len(&out) == sizeof(local_body));
}

static void local_round_trip(void)
{
    static const uint32_t lens[] = {0, 1, 8, 257, PML_DR2_HDR_LOCAL_MAX_PAYLOAD};
    static const int32_t tags[] = {-32768, -17, 0, 1, 32767};

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        pml_dr2_hdr_t h = sample_tiny(), out;
        unsigned char *payload = calloc(lens[i] + 1, 1), *dst = malloc(lens[i] + 1);
        size_t len = PML_DR2_HDR_LOCAL_LEN + lens[i];
        unsigned char *buf = malloc(len);

        rng_fill(payload, lens[i]);
        h.match.tag = tags[i];
        CHECK(pml_dr2_hdr_pack_local(&h.match, buf, len, payload, lens[i]) == len);
        CHECK(decode_exact(buf, len, MAX_PAYLOAD, &out) == PML_DR2_HDR_OK);
        CHECK(out.type == PML_DR2_HDR_LOCAL && out.match.tag == tags[i]);
        CHECK(out.match.ctx == h.match.ctx && out.match.src == h.match.src);
        CHECK(out.match.seq == h.match.seq && out.frag_len == lens[i]);
        CHECK(pml_dr2_hdr_unpack(&out, buf, dst) == PML_DR2_HDR_OK);
        CHECK(memcmp(dst, payload, lens[i]) == 0);
        free(buf);
        free(dst);
        free(payload);
    }
}

/* What the envelope's 16-bit fields cannot carry is refused (the sender then uses the
 * protocol); on the receiving side a cut, a payload too long and a reserved byte set. */
static void local_refuses_and_rejects(void)
{
    unsigned char buf[PML_DR2_HDR_LOCAL_LEN + PML_DR2_HDR_LOCAL_MAX_PAYLOAD + 1];
    static const unsigned char payload[PML_DR2_HDR_LOCAL_MAX_PAYLOAD + 1] = {1};
    pml_dr2_hdr_t h = sample_tiny();
    size_t len;

    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), payload, sizeof(payload)) == 0);
    h.match.ctx = 0x10000;
    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.match.src = -1;
    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), "x", 1) == 0);
    h = sample_tiny();
    h.match.tag = 32768;
    CHECK(pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), "x", 1) == 0);

    h = sample_tiny();
    len = pml_dr2_hdr_pack_local(&h.match, buf, sizeof(buf), payload, 8);
    CHECK(len == PML_DR2_HDR_LOCAL_LEN + 8);
    for (size_t cut = 1; cut < PML_DR2_HDR_LOCAL_LEN; cut++) {
        CHECK(decode_exact(buf, cut, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
              == PML_DR2_HDR_ERR_TRUNCATED);
    }
    CHECK(decode_exact(buf, len, 7, &(pml_dr2_hdr_t){0}) == PML_DR2_HDR_ERR_TOO_LONG);
    buf[1] = 1;
    CHECK(decode_exact(buf, len, MAX_PAYLOAD, &(pml_dr2_hdr_t){0}) == PML_DR2_HDR_ERR_RESERVED);
    buf[1] = 0;
    buf[11] = 0x80;
    CHECK(decode_exact(buf, len, MAX_PAYLOAD, &(pml_dr2_hdr_t){0}) == PML_DR2_HDR_ERR_RESERVED);
    memset(buf, 0, sizeof(buf));
    buf[0] = PML_DR2_HDR_LOCAL;
    CHECK(decode_exact(buf, sizeof(buf), MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_ERR_TOO_LONG);
    CHECK(decode_exact(buf, sizeof(buf) - 1, MAX_PAYLOAD, &(pml_dr2_hdr_t){0})
          == PML_DR2_HDR_OK);
}

int main(void)
{
    RUN(eager_golden_bytes);
    RUN(eager_round_trip_with_and_without_ack);
    RUN(eager_one_checksum_covers_payload);
    RUN(eager_truncation_and_malformed_fields);
    RUN(eager_encode_refuses_invalid_headers);
    RUN(tiny_golden_bytes);
    RUN(tiny_round_trip);
    RUN(tiny_refuses_what_does_not_fit);
    RUN(tiny_damage_and_lengths);
    RUN(local_golden_bytes);
    RUN(local_round_trip);
    RUN(local_refuses_and_rejects);
    UNIT_EXIT();
}
