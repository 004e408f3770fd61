/*
 * ompi-resilience: what the unit tests of pml/dr2's wire headers share: deterministic
 * random bytes, a sample MATCH envelope, encoded images in buffers of their exact length,
 * and header comparison.
 */
#ifndef OMPIRES_TEST_DR2_HDR_H
#define OMPIRES_TEST_DR2_HDR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_crc.h"
#include "ompi/mca/pml/dr2/pml_dr2_hdr.h"
#include "unit.h"

#define MAX_PAYLOAD 65536u

static uint64_t rng_state = 0xD1B54A32D192ED03ull;

static inline uint64_t rng_next(void)
{
    return unit_xorshift64s(&rng_state);
}

static inline void rng_fill(unsigned char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (unsigned char) rng_next();
    }
}

/* A header of the MATCH family (MATCH, RNDV; EAGER starts from it), fields at their edges. */
static inline pml_dr2_hdr_t sample_match(int type)
{
    pml_dr2_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t) type;
    h.flags = PML_DR2_HDR_FLAG_SYNC | PML_DR2_HDR_FLAG_ACK_NOW;
    h.match.ctx = 0xC0DE1234u;
    h.match.src = 0x7FFFFFFE;
    h.match.tag = -17; /* Open MPI's collectives use negative tags */
    h.match.seq = 0xFFFF;
    h.match.frag_count = 3;
    h.match.vfrag = 0xFFFFFFFFu;
    h.match.msg_len = 0x123456789ull;
    h.match.epoch = 0xE90C4A11u;
    return h;
}

/* An encoded fragment (header + payload) in a buffer of exactly its length. */
typedef struct {
    unsigned char *buf;
    size_t len;
    pml_dr2_hdr_t hdr;
} wire_t;

static inline wire_t make_wire(pml_dr2_hdr_t hdr, uint32_t payload_len)
{
    wire_t w;
    unsigned char *payload = malloc(payload_len + 1);

    rng_fill(payload, payload_len);
    w.hdr = hdr;
    w.len = pml_dr2_hdr_size(hdr.type) + payload_len;
    w.buf = malloc(w.len);
    if (hdr.type == PML_DR2_HDR_ACK || hdr.type == PML_DR2_HDR_NACK) {
        CHECK(pml_dr2_hdr_encode(&w.hdr, w.buf, w.len) == w.len);
    } else {
        CHECK(pml_dr2_hdr_pack(&w.hdr, w.buf, w.len, payload, payload_len) == w.len);
        CHECK(memcmp(w.buf + w.len - payload_len, payload, payload_len) == 0);
    }
    free(payload);
    return w;
}

/* Decode a copy of buf[0 .. len-1] held in a buffer of exactly len bytes. */
static inline pml_dr2_hdr_status_t decode_exact(const unsigned char *buf, size_t len, uint32_t max,
                                                pml_dr2_hdr_t *out)
{
    unsigned char *copy = malloc(len ? len : 1);
    pml_dr2_hdr_status_t status;

    memcpy(copy, buf, len);
    status = pml_dr2_hdr_decode(copy, len, max, out);
    free(copy);
    return status;
}

static inline void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

/* The same header, field by field (the fields of its type). */
static inline int same_header(const pml_dr2_hdr_t *a, const pml_dr2_hdr_t *b)
{
    if (a->type != b->type || a->flags != b->flags || a->hdr_len != b->hdr_len
        || a->frag_len != b->frag_len || a->data_crc != b->data_crc) {
        return 0;
    }
    switch (a->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        return a->match.ctx == b->match.ctx && a->match.src == b->match.src
               && a->match.tag == b->match.tag && a->match.seq == b->match.seq
               && a->match.frag_count == b->match.frag_count
               && a->match.vfrag == b->match.vfrag && a->match.msg_len == b->match.msg_len
               && a->match.epoch == b->match.epoch;
    case PML_DR2_HDR_FRAG:
        return a->frag.msg_id == b->frag.msg_id && a->frag.vfrag == b->frag.vfrag
               && a->frag.frag_index == b->frag.frag_index
               && a->frag.frag_count == b->frag.frag_count
               && a->frag.offset == b->frag.offset && a->frag.msg_len == b->frag.msg_len;
    default:
        return a->ack.vfrag == b->ack.vfrag && a->ack.mask == b->ack.mask;
    }
}

#endif
