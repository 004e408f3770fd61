/*
 * Seed corpora of the pml/dr2 fuzz targets (docs/fuzzing.md), written at run time by
 * `make fuzz-run`:
 *   DIR/hdr/  valid headers of every type (with payloads), and segments of several;
 *   DIR/rx/   operation sequences of fuzz_dr2_rx (format in fuzz_dr2.h) that replay what
 *             honest senders send: eager messages of one and of many fragments and vfrags,
 *             a rendezvous, duplicates, a corrupt fragment and its resend, ids that wrap.
 * Usage: fuzz_dr2_seeds DIR
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_dr2.h"

static const char *dir;

static void write_seed(const char *sub, const char *name, const unsigned char *p, size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
    f = fopen(path, "wb");
    if (NULL == f || fwrite(p, 1, len, f) != len || 0 != fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void make_dir(const char *sub)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
    if (0 != mkdir(path, 0755) && EEXIST != errno) {
        perror(path);
        exit(1);
    }
}

/* ---- hdr ------------------------------------------------------------------------------- */

static size_t pack(pml_dr2_hdr_t *h, unsigned char *buf, size_t room, uint32_t payload_len)
{
    unsigned char payload[512];

    for (uint32_t i = 0; i < payload_len; i++) {
        payload[i] = (unsigned char) (i * 7 + 3);
    }
    if (h->type >= PML_DR2_HDR_ACK) {
        return pml_dr2_hdr_encode(h, buf, room);
    }
    return pml_dr2_hdr_pack(h, buf, room, payload, payload_len);
}

static void hdr_seeds(void)
{
    unsigned char seg[4096];
    size_t len = 0, n;
    pml_dr2_hdr_t h;
    char name[64];

    make_dir("hdr");
    for (int type = PML_DR2_HDR_MATCH; type <= PML_DR2_HDR_NACK; type++) {
        for (uint32_t plen = 0; plen <= 300; plen += 100) {
            memset(&h, 0, sizeof(h));
            h.type = (uint8_t) type;
            switch (type) {
            case PML_DR2_HDR_MATCH:
            case PML_DR2_HDR_RNDV:
                h.flags = PML_DR2_HDR_FLAG_ACK_NOW | (plen ? PML_DR2_HDR_FLAG_SYNC : 0);
                h.match.ctx = 3;
                h.match.src = 1;
                h.match.tag = plen ? 42 : -5;
                h.match.seq = 7;
                h.match.frag_count = (uint8_t) (1 + plen / 100);
                h.match.vfrag = 100 + plen;
                h.match.msg_len = plen * 4 + 1;
                break;
            case PML_DR2_HDR_FRAG:
                if (0 == plen) {
                    continue; /* a FRAG carries data */
                }
                h.flags = PML_DR2_HDR_FLAG_RETRANSMIT;
                h.frag.msg_id = 100;
                h.frag.vfrag = 101;
                h.frag.frag_index = (uint8_t) (plen / 100);
                h.frag.frag_count = 64;
                h.frag.offset = plen * 3;
                h.frag.msg_len = plen * 4;
                break;
            default:
                h.flags = PML_DR2_HDR_ACK == type && plen ? PML_DR2_HDR_FLAG_MATCHED : 0;
                h.ack.vfrag = 0xFFFFFFF0u + plen;
                h.ack.mask = plen ? UINT64_MAX >> (plen / 10) : 1;
                break;
            }
            n = pack(&h, seg, sizeof(seg), type >= PML_DR2_HDR_ACK ? 0 : plen);
            if (0 == n) {
                fprintf(stderr, "seed header type %d len %u did not encode\n", type, plen);
                exit(1);
            }
            snprintf(name, sizeof(name), "type%d-len%u", type, plen);
            write_seed("hdr", name, seg, n);
        }
    }
    /* a segment: FRAG + piggybacked ACKs, as the sender packs them */
    memset(&h, 0, sizeof(h));
    h.type = PML_DR2_HDR_FRAG;
    h.frag.msg_id = h.frag.vfrag = 9;
    h.frag.frag_index = 1;
    h.frag.frag_count = 2;
    h.frag.offset = 50;
    h.frag.msg_len = 100;
    len += pack(&h, seg + len, sizeof(seg) - len, 50);
    for (int i = 0; i < 3; i++) {
        memset(&h, 0, sizeof(h));
        h.type = PML_DR2_HDR_ACK;
        h.ack.vfrag = (uint32_t) i;
        h.ack.mask = 1;
        len += pack(&h, seg + len, sizeof(seg) - len, 0);
    }
    write_seed("hdr", "segment-frag-acks", seg, len);
    /* TINY, the short EAGER, with 0 and 8 bytes of payload; then an ACK followed by one */
    for (uint32_t plen = 0; plen <= 8; plen += 8) {
        memset(&h, 0, sizeof(h));
        h.type = PML_DR2_HDR_EAGER;
        h.flags = PML_DR2_HDR_FLAG_ACK_NOW;
        h.match.ctx = 3;
        h.match.tag = -12;
        h.match.seq = 7;
        h.match.vfrag = 0x12345678u;
        n = pml_dr2_hdr_pack_tiny(&h, seg, sizeof(seg), "payload!", plen);
        snprintf(name, sizeof(name), "tiny-len%u", plen);
        write_seed("hdr", name, seg, n);
        /* the same envelope as a LOCAL (sm and self only: no vfrag, no checksum) */
        n = pml_dr2_hdr_pack_local(&h.match, seg, sizeof(seg), "payload!", plen);
        snprintf(name, sizeof(name), "local-len%u", plen);
        write_seed("hdr", name, seg, n);
    }
    memset(&h, 0, sizeof(h));
    h.type = PML_DR2_HDR_ACK;
    h.ack.vfrag = 4;
    h.ack.mask = 1;
    len = pack(&h, seg, sizeof(seg), 0);
    memset(&h, 0, sizeof(h));
    h.type = PML_DR2_HDR_EAGER;
    h.flags = PML_DR2_HDR_FLAG_ACK_NOW;
    h.match.vfrag = 5;
    len += pml_dr2_hdr_pack_tiny(&h, seg + len, sizeof(seg) - len, "abcd", 4);
    write_seed("hdr", "segment-ack-tiny", seg, len);
}

/* ---- rx -------------------------------------------------------------------------------- */

static unsigned char rx[65536];
static size_t rx_len;

static void rx_start(uint32_t first_id)
{
    rx_len = 0;
    ref_put(rx, first_id, 4);
    rx_len = 4;
}

static int rndv_with_data; /* a RNDV keeps its frag_len (else: none, one fragment) */

/* A data header: type, vfrag (relative to first_id, < 128), msg (0xFF new, 0x80 the
 * current message), index, count, frag_len, vfrag base (in units of 64 fragments), msg_len */
static void rx_data(int op, uint8_t type, uint8_t vfrag_rel, uint8_t msg_sel, uint8_t index,
                    uint8_t count, uint16_t frag_len, uint32_t base, uint32_t msg_len,
                    uint8_t flags)
{
    fuzz_rx_fields_t f;

    memset(&f, 0, sizeof(f));
    f.type = (uint8_t) (type - 1);
    f.flags = flags;
    f.msg_sel = msg_sel;
    f.vfrag_sel = vfrag_rel;
    f.index = index;
    f.count = (uint8_t) (count - 1);
    f.tag = 5;
    f.layout = PML_DR2_HDR_RNDV == type && !rndv_with_data ? 8 : 0;
    f.frag_len = frag_len;
    f.offset_raw = base;
    f.msg_len = msg_len;
    rx[rx_len++] = (unsigned char) op;
    rx_len += fuzz_rx_write_fields(rx + rx_len, &f);
    if (FUZZ_RX_OP_CORRUPT == op) {
        ref_put(rx + rx_len, 8 * PML_DR2_HDR_MAX_LEN + 13, 2); /* a payload bit */
        rx_len += 2;
    }
}

static void rx_match(uint8_t slot)
{
    rx[rx_len++] = FUZZ_RX_OP_MATCH;
    rx[rx_len++] = slot;
}

static void rx_seeds(void)
{
    const uint8_t ack_now = PML_DR2_HDR_FLAG_ACK_NOW;

    make_dir("rx");
    /* eager, one fragment, received before and after its receive is posted */
    rx_start(0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, 0, 0xFF, 0, 1, 100, 0, 100, ack_now);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, 0, 0x00, 0, 1, 100, 0, 100, ack_now); /* dup */
    rx_match(0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, 1, 0xFF, 0, 1, 0, 0, 0, 0); /* empty */
    rx_match(0);
    write_seed("rx", "eager-single", rx, rx_len);

    /* eager, one vfrag of 4 fragments, out of order, a duplicate, a corrupt one resent */
    rx_start(1000);
    rx_match(0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, 0, 0xFF, 0, 4, 512, 0, 1900, 0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 0, 0x80, 2, 4, 512, 0, 0, 0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 0, 0x80, 2, 4, 512, 0, 0, 0);
    rx_data(FUZZ_RX_OP_CORRUPT, PML_DR2_HDR_FRAG, 0, 0x80, 1, 4, 512, 0, 0, 0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 0, 0x80, 3, 4, 512, 0, 0, ack_now);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 0, 0x80, 1, 4, 512, 0, 0, 0);
    rx_match(0);
    write_seed("rx", "eager-vfrag-4", rx, rx_len);

    /* eager of three vfrags: 64 + 64 + 1 fragments of 16 bytes */
    rx_start(0x7FFFFFF0u);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, 0, 0xFF, 0, 64, 16, 0, 16 * 128 + 5, 0);
    for (uint8_t v = 0; v < 3; v++) {
        uint8_t n = v < 2 ? 64 : 1;
        for (uint8_t i = v == 0 ? 1 : 0; i < n; i++) {
            rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, v, 0x80, i, n, 16, v, 0,
                    i + 1 == n ? ack_now : 0);
        }
    }
    rx_match(0);
    write_seed("rx", "eager-3-vfrags", rx, rx_len);

    /* rendezvous: RNDV, a resend before and after the go-ahead, then 3 fragments */
    rx_start(500);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_RNDV, 0, 0xFF, 0, 1, 0, 0, 3000, PML_DR2_HDR_FLAG_SYNC);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_RNDV, 0, 0x00, 0, 1, 0, 0, 3000, 1);
    rx_match(0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_RNDV, 0, 0x00, 0, 1, 0, 0, 3000, 1);
    for (uint8_t i = 0; i < 3; i++) {
        rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 1, 0x80, i, 3, 1024, 0, 0, 0);
    }
    write_seed("rx", "rndv", rx, rx_len);

    /* rendezvous whose RNDV carries the last 1000 of 3000 bytes: corrupt (NACKed, the
     * message dropped), then intact; matched; then the 2 fragments before it */
    rx_start(600);
    rndv_with_data = 1;
    rx_data(FUZZ_RX_OP_CORRUPT, PML_DR2_HDR_RNDV, 0, 0xFF, 0, 1, 1000, 0, 3000, 0);
    rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_RNDV, 0, 0xFF, 0, 1, 1000, 0, 3000, 0);
    rndv_with_data = 0;
    rx_match(0);
    for (uint8_t i = 0; i < 2; i++) {
        rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_FRAG, 1, 0x80, i, 2, 1000, 0, 0, 0);
    }
    write_seed("rx", "rndv-data", rx, rx_len);

    /* ids wrapping around 2^32: single-fragment messages */
    rx_start(0xFFFFFFF0u);
    for (uint8_t v = 0; v < 32; v++) {
        rx_data(FUZZ_RX_OP_DATA, PML_DR2_HDR_MATCH, v, 0xFF, 0, 1, 8, 0, 8, 0);
        rx_match(0);
    }
    write_seed("rx", "wrap", rx, rx_len);

    /* one segment of three headers */
    rx_start(0);
    rx[rx_len++] = FUZZ_RX_OP_SEGMENT;
    rx[rx_len++] = 2; /* 3 headers */
    {
        fuzz_rx_fields_t f;
        memset(&f, 0, sizeof(f));
        f.msg_sel = 0xFF;
        f.count = 2;
        f.frag_len = 40;
        f.msg_len = 120;
        rx_len += fuzz_rx_write_fields(rx + rx_len, &f); /* MATCH, 3 fragments */
        f.type = 2;                                       /* FRAG */
        f.msg_sel = 0x80;
        f.index = 1;
        rx_len += fuzz_rx_write_fields(rx + rx_len, &f);
        f.index = 2;
        rx_len += fuzz_rx_write_fields(rx + rx_len, &f);
    }
    rx_match(0);
    write_seed("rx", "segment", rx, rx_len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    make_dir(NULL);
    hdr_seeds();
    rx_seeds();
    return 0;
}
