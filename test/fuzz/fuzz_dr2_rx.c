/*
 * libFuzzer target: pml/dr2's receive state machine without an MPI runtime; see
 * docs/fuzzing.md and the input format in fuzz_dr2.h.
 *
 * A model receiver drives the real pure logic exactly as pml_dr2_recvfrag.c does: segments
 * are walked with the codec (pml_dr2_hdr_decode_header), data headers go through
 * pml_dr2_rx_classify / pml_dr2_rx_vfrag_check / pml_dr2_rx_frag_intact|corrupt and the
 * duplicate window; the model only supplies what Open MPI supplies there (message and vfrag
 * tables, buffers, the matching of receives). Messages' buffers are allocated at their
 * exact length so that AddressSanitizer catches any payload placed out of bounds.
 *
 * Besides "no crash, no out-of-bounds access, no undefined behaviour", every decision is
 * checked against the guarantees of pml_dr2_rxcheck.h (FUZZ_CHECK aborts on a violation).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_dr2.h"
#include "ompi/mca/pml/dr2/pml_dr2_ackmask.h"
#include "ompi/mca/pml/dr2/pml_dr2_rxcheck.h"
#include "ompi/mca/pml/dr2/pml_dr2_window.h"

#define MAX_MSGS 32
#define MAX_RECS 128
#define DONE_RING 256
#define EAGER_LIMIT 65536u
#define RNDV_CAPACITY 8192u /* the receive buffer a rendezvous is matched with */
#define MAX_FRAG 2048u

typedef struct {
    int used;
    pml_dr2_rx_msg_view_t v;
    unsigned char *buf; /* eager: msg_len bytes; rendezvous: cap bytes once matched */
    uint64_t cap;
    unsigned char *rndv_data; /* rendezvous: what its RNDV carried, until matched */
    uint32_t rndv_len;
} model_msg_t;

typedef struct {
    int used;
    pml_dr2_rx_vfrag_t r;
} model_rec_t;

static int trace;

static struct {
    uint32_t first_id;
    pml_dr2_window_t win;
    model_msg_t msgs[MAX_MSGS];
    model_rec_t recs[MAX_RECS];
    /* Vfrags completed, by unwrapped position: ids wrap around 2^32, so the same 32-bit id
     * is another vfrag once the window moved 2^32 forward (it may, in a few big jumps). */
    uint64_t top64;    /* the window's top, unwrapped */
    uint32_t last_top; /* the window's top when top64 was last updated */
    uint64_t done[DONE_RING];
    unsigned ndone;
} S;

static model_msg_t *find_msg(uint32_t id)
{
    for (int i = 0; i < MAX_MSGS; i++) {
        if (S.msgs[i].used && S.msgs[i].v.msg_id == id) {
            return &S.msgs[i];
        }
    }
    return NULL;
}

static model_msg_t *nth_msg(unsigned n)
{
    unsigned used = 0;

    for (int i = 0; i < MAX_MSGS; i++) {
        used += S.msgs[i].used;
    }
    if (0 == used) {
        return NULL;
    }
    n %= used;
    for (int i = 0; i < MAX_MSGS; i++) {
        if (S.msgs[i].used && 0 == n--) {
            return &S.msgs[i];
        }
    }
    return NULL;
}

static model_rec_t *find_rec(uint32_t id)
{
    for (int i = 0; i < MAX_RECS; i++) {
        if (S.recs[i].used && S.recs[i].r.id == id) {
            return &S.recs[i];
        }
    }
    return NULL;
}

static void release_msg(model_msg_t *m)
{
    free(m->buf);
    free(m->rndv_data);
    memset(m, 0, sizeof(*m));
}

/* mca_pml_dr2_rxmsg_place_rndv_data: at the match, what the RNDV carried (the message's
 * last bytes) goes into the receive, as far as it holds them, and counts as received. */
static void place_rndv_data(model_msg_t *m)
{
    uint64_t offset;

    if (NULL == m->rndv_data) {
        return;
    }
    FUZZ_CHECK(m->rndv_len <= m->v.msg_len && 0 == m->v.bytes_received);
    offset = m->v.msg_len - m->rndv_len;
    if (offset < m->cap) {
        uint64_t fit = m->cap - offset < m->rndv_len ? m->cap - offset : m->rndv_len;
        memcpy(m->buf + offset, m->rndv_data, fit);
    }
    m->v.bytes_received += m->rndv_len;
    free(m->rndv_data);
    m->rndv_data = NULL;
}

/* mca_pml_dr2_rxmsg_try_complete: a matched message with all its bytes is done. */
static void try_complete(model_msg_t *m)
{
    if (m->v.has_req && m->v.bytes_received >= m->v.msg_len) {
        release_msg(m);
    }
}

/* An ACK or NACK the receiver would send: non-empty, only fragments of the vfrag, and one
 * the peer's codec accepts. */
static void check_ack(uint8_t type, uint32_t vfrag, uint64_t mask, unsigned nfrags, uint8_t flags)
{
    pml_dr2_hdr_t a, back;
    unsigned char buf[PML_DR2_HDR_ACK_LEN];

    FUZZ_CHECK(0 != mask);
    FUZZ_CHECK(pml_dr2_ackmask_valid(mask, nfrags));
    memset(&a, 0, sizeof(a));
    a.type = type;
    a.flags = flags;
    a.ack.vfrag = vfrag;
    a.ack.mask = mask;
    FUZZ_CHECK(pml_dr2_hdr_encode(&a, buf, sizeof(buf)) == sizeof(buf));
    FUZZ_CHECK(pml_dr2_hdr_decode(buf, sizeof(buf), 0, &back) == PML_DR2_HDR_OK);
    FUZZ_CHECK(back.ack.mask == mask && back.ack.vfrag == vfrag && back.type == type);
}

/* Follow the window's top (it only moves forward, by less than 2^31 at a time). */
static void sync_top(void)
{
    S.top64 += (uint32_t) (S.win.top - S.last_top);
    S.last_top = S.win.top;
}

/* Vfrag `id` was just marked complete in the window. */
static void completed(uint32_t id)
{
    sync_top();
    FUZZ_CHECK((uint32_t) (S.win.top - id) < S.win.size);
    S.done[S.ndone++ % DONE_RING] = S.top64 - (uint32_t) (S.win.top - id);
}

/* A vfrag completed (marked in the window) and still within the window's reach: the same
 * vfrag, not another one with the same 32-bit id, within `size` of the top. */
static int completed_recently(uint32_t id)
{
    unsigned n = S.ndone < DONE_RING ? S.ndone : DONE_RING;
    uint32_t behind = S.win.top - id;
    uint64_t pos;

    sync_top();
    if (behind >= S.win.size) {
        return 0; /* ahead of top, or too old: the window cannot say */
    }
    pos = S.top64 - behind;
    for (unsigned i = 0; i < n; i++) {
        if (S.done[i] == pos) {
            return 1;
        }
    }
    return 0;
}

/* deliver_fragment() of pml_dr2_recvfrag.c */
static void deliver(model_msg_t *m, pml_dr2_rx_decision_t *d, const unsigned char *payload,
                    const pml_dr2_hdr_t *hdr)
{
    model_rec_t *rec;
    pml_dr2_rx_outcome_t out;
    uint64_t full = pml_dr2_ackmask_full(d->nfrags), bit;
    int intact;

    /* what classify promised for an accepted fragment */
    FUZZ_CHECK(PML_DR2_RX_ACCEPT == d->verdict);
    FUZZ_CHECK(d->nfrags >= 1 && d->nfrags <= 64 && d->index < d->nfrags);
    FUZZ_CHECK(d->len == hdr->frag_len);
    FUZZ_CHECK(d->offset <= m->v.msg_len && d->len <= m->v.msg_len - d->offset);
    FUZZ_CHECK(!(m->v.rndv && !m->v.has_req)); /* no data before the go-ahead */
    FUZZ_CHECK(PML_DR2_WINDOW_NEW == pml_dr2_window_check(&S.win, d->vfrag));
    FUZZ_CHECK(!completed_recently(d->vfrag));
    bit = pml_dr2_ackmask_bit(d->index);

    rec = find_rec(d->vfrag);
    pml_dr2_rx_vfrag_check(rec ? &rec->r : NULL, d);
    if (trace) {
        fprintf(stderr, "  vfrag %u record %s mask %llx: %s (%s)\n", d->vfrag, rec ? "yes" : "no",
                rec ? (unsigned long long) rec->r.mask : 0ull, pml_dr2_rx_verdict_name(d->verdict),
                pml_dr2_rx_reason_name(d->reason));
    }
    if (PML_DR2_RX_REJECT == d->verdict) {
        if (PML_DR2_RX_WHY_OVERCOUNT == d->reason) {
            FUZZ_CHECK(d->len > m->v.msg_len - m->v.bytes_received);
        } else {
            FUZZ_CHECK(NULL != rec);
        }
        return;
    }
    if (PML_DR2_RX_DUPLICATE == d->verdict) {
        FUZZ_CHECK(NULL != rec && (rec->r.mask & bit) && d->ack_mask == rec->r.mask);
        check_ack(PML_DR2_HDR_ACK, d->vfrag, d->ack_mask, d->nfrags, 0);
        return;
    }
    FUZZ_CHECK(PML_DR2_RX_ACCEPT == d->verdict);
    if (1 == d->nfrags) {
        FUZZ_CHECK(NULL == rec && !d->need_record);
    }
    if (d->need_record) {
        FUZZ_CHECK(NULL == rec && d->nfrags > 1);
        for (int i = 0; i < MAX_RECS && NULL == rec; i++) {
            if (!S.recs[i].used) {
                rec = &S.recs[i];
            }
        }
        if (NULL == rec) {
            return; /* out of memory: unacknowledged, resent later */
        }
        rec->used = 1;
        pml_dr2_rx_vfrag_init(&rec->r, d);
        FUZZ_CHECK(rec->r.mask == 0 && rec->r.id == d->vfrag);
    }
    if (NULL != rec) {
        FUZZ_CHECK(rec->r.nfrags == d->nfrags && rec->r.msg_id == d->msg_id);
        FUZZ_CHECK(0 == (rec->r.mask & bit) && rec->r.mask != full);
    }

    /* place_payload: checked while copied to its place */
    intact = pml_dr2_hdr_payload_checked(hdr) /* EAGER: checked with its header */
             || pml_dr2_crc32c(PML_DR2_CRC32C_INIT, payload, d->len) == hdr->data_crc;
    if (d->len > 0) {
        if (m->v.rndv) {
            if (d->offset < m->cap) {
                uint64_t fit = m->cap - d->offset < d->len ? m->cap - d->offset : d->len;
                memcpy(m->buf + d->offset, payload, fit);
            }
        } else {
            memcpy(m->buf + d->offset, payload, d->len);
        }
    }
    if (!intact) {
        pml_dr2_rx_frag_corrupt(d, &out);
        FUZZ_CHECK(PML_DR2_HDR_NACK == out.ack_type && out.ack_mask == bit && !out.vfrag_complete);
        check_ack(out.ack_type, d->vfrag, out.ack_mask, d->nfrags, 0);
        return;
    }
    m->v.bytes_received += d->len;
    /* a message never counts more bytes than it holds */
    FUZZ_CHECK(m->v.bytes_received <= m->v.msg_len);
    pml_dr2_rx_frag_intact(&S.win, rec ? &rec->r : NULL, d, hdr->flags, &out);
    if (out.vfrag_complete) {
        FUZZ_CHECK(NULL == rec || rec->r.mask == full);
        FUZZ_CHECK(PML_DR2_HDR_ACK == out.ack_type && out.ack_mask == full);
        FUZZ_CHECK(PML_DR2_WINDOW_NEW != pml_dr2_window_check(&S.win, d->vfrag));
        completed(d->vfrag);
        if (NULL != rec) {
            memset(rec, 0, sizeof(*rec));
        }
    } else {
        FUZZ_CHECK(NULL != rec && (rec->r.mask & bit) && rec->r.mask != full);
        FUZZ_CHECK(PML_DR2_WINDOW_NEW == pml_dr2_window_check(&S.win, d->vfrag));
        FUZZ_CHECK(0 == out.ack_type || out.ack_mask == rec->r.mask);
        FUZZ_CHECK(0 != out.ack_type || 0 == (hdr->flags & PML_DR2_HDR_FLAG_ACK_NOW));
    }
    if (0 != out.ack_type) {
        check_ack(out.ack_type, d->vfrag, out.ack_mask, d->nfrags, 0);
    }
    try_complete(m);
}

/* handle_match() / handle_frag() of pml_dr2_recvfrag.c */
static void handle_data(const pml_dr2_hdr_t *hdr, const unsigned char *payload)
{
    model_msg_t *m = find_msg(pml_dr2_rx_msg_key(hdr));
    pml_dr2_rx_decision_t d;
    int rndv = PML_DR2_HDR_RNDV == hdr->type;

    pml_dr2_rx_classify(&S.win, hdr, m ? &m->v : NULL, EAGER_LIMIT, &d);
    if (trace) { /* FUZZ_DR2_TRACE=1: what happens to each header (to read a crash) */
        fprintf(stderr, "type %d vfrag %u msg %u index %u/%u offset %llu len %u flags %x: %s (%s)",
                hdr->type, d.vfrag, d.msg_id, d.index, d.nfrags, (unsigned long long) d.offset,
                d.len, hdr->flags, pml_dr2_rx_verdict_name(d.verdict),
                pml_dr2_rx_reason_name(d.reason));
        if (m) {
            fprintf(stderr, " [msg len %llu got %llu rndv %d req %d]",
                    (unsigned long long) m->v.msg_len, (unsigned long long) m->v.bytes_received,
                    m->v.rndv, m->v.has_req);
        }
        fprintf(stderr, " top %u\n", S.win.top);
    }
    FUZZ_CHECK(0 != strcmp(pml_dr2_rx_verdict_name(d.verdict), "unknown"));
    FUZZ_CHECK(0 != strcmp(pml_dr2_rx_reason_name(d.reason), "unknown"));
    switch (d.verdict) {
    case PML_DR2_RX_DUPLICATE:
        FUZZ_CHECK(PML_DR2_WINDOW_NEW != pml_dr2_window_check(&S.win, d.vfrag));
        if (rndv) {
            FUZZ_CHECK(1 == d.ack_mask);
            FUZZ_CHECK(d.ack_flags == ((NULL == m || m->v.has_req) ? PML_DR2_HDR_FLAG_MATCHED : 0));
        } else {
            FUZZ_CHECK(d.ack_mask == pml_dr2_ackmask_full(d.nfrags) && 0 == d.ack_flags);
        }
        check_ack(PML_DR2_HDR_ACK, d.vfrag, d.ack_mask, rndv ? 1 : d.nfrags, d.ack_flags);
        return;
    case PML_DR2_RX_UNKNOWN_MSG:
        FUZZ_CHECK(NULL == m && PML_DR2_HDR_FRAG == hdr->type);
        return;
    case PML_DR2_RX_REJECT:
        return;
    case PML_DR2_RX_NEW_MSG:
        FUZZ_CHECK(NULL == m && PML_DR2_HDR_FRAG != hdr->type);
        FUZZ_CHECK(PML_DR2_WINDOW_NEW == pml_dr2_window_check(&S.win, d.vfrag));
        FUZZ_CHECK(d.offset == 0 && d.index == 0 && d.msg_id == d.vfrag);
        for (int i = 0; i < MAX_MSGS && NULL == m; i++) {
            if (!S.msgs[i].used) {
                m = &S.msgs[i];
            }
        }
        if (NULL == m) {
            return; /* out of memory: dropped, resent later */
        }
        memset(m, 0, sizeof(*m));
        m->used = 1;
        m->v.msg_id = d.vfrag;
        m->v.msg_len = hdr->match.msg_len;
        m->v.tag = hdr->match.tag;
        m->v.rndv = (uint8_t) rndv;
        if (rndv) {
            FUZZ_CHECK(1 == d.nfrags && hdr->frag_len <= EAGER_LIMIT);
            if (hdr->frag_len > 0) {
                /* rxmsg_keep_rndv_data: checked while kept; corrupt, the message is
                 * dropped and the RNDV NACKed */
                if (pml_dr2_crc32c(PML_DR2_CRC32C_INIT, payload, hdr->frag_len) != hdr->data_crc) {
                    memset(m, 0, sizeof(*m));
                    check_ack(PML_DR2_HDR_NACK, d.vfrag, 1, 1, 0);
                    return;
                }
                m->rndv_data = malloc(hdr->frag_len);
                memcpy(m->rndv_data, payload, hdr->frag_len);
                m->rndv_len = hdr->frag_len;
            }
            (void) pml_dr2_window_check_and_mark(&S.win, d.vfrag); /* its vfrag is complete */
            completed(d.vfrag);
            try_complete(m);
            return;
        }
        FUZZ_CHECK(hdr->match.msg_len <= EAGER_LIMIT);
        m->buf = malloc(m->v.msg_len ? m->v.msg_len : 1);
        pml_dr2_rx_new_msg_accept(&d);
        deliver(m, &d, payload, hdr);
        return;
    case PML_DR2_RX_ACCEPT:
        FUZZ_CHECK(NULL != m);
        deliver(m, &d, payload, hdr);
        return;
    }
    FUZZ_CHECK(0 && "unknown verdict");
}

/* mca_pml_dr2_recv_segment(): headers back to back, the rest dropped at the first error */
static void receive_segment(const unsigned char *seg, size_t len)
{
    unsigned char *buf = malloc(len ? len : 1); /* exact size: over-reads are caught */
    size_t off = 0;

    memcpy(buf, seg, len);
    while (off < len) {
        pml_dr2_hdr_t hdr;
        size_t left = len - off;
        uint32_t max = left > UINT32_MAX ? UINT32_MAX : (uint32_t) left;

        if (PML_DR2_HDR_OK != pml_dr2_hdr_decode_header(buf + off, left, max, &hdr)) {
            break;
        }
        FUZZ_CHECK(pml_dr2_hdr_wire_len(&hdr) <= left);
        if (hdr.type <= PML_DR2_HDR_FRAG || PML_DR2_HDR_EAGER == hdr.type) {
            handle_data(&hdr, buf + off + hdr.hdr_len);
        }
        off += pml_dr2_hdr_wire_len(&hdr);
    }
    free(buf);
}

/* A data header and its payload as a sender would pack them, from the fields; 0 if the
 * codec refuses to encode it (a sender cannot send it). */
static size_t build(const fuzz_rx_fields_t *f, unsigned char *out, size_t room)
{
    static unsigned char payload[MAX_FRAG];
    pml_dr2_hdr_t h;
    model_msg_t *m = f->msg_sel < 0xC0 ? nth_msg(f->msg_sel) : NULL;
    uint32_t frag_len = f->frag_len % (MAX_FRAG + 1);
    uint8_t count = f->layout & 2 ? f->count : (uint8_t) (1 + f->count % 64);
    uint8_t index = f->layout & 1 ? f->index : (uint8_t) (count ? f->index % count : f->index);
    uint64_t offset = 0, msg_len;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t) (1 + f->type % 3);
    h.flags = f->flags & 0x80 ? f->flags
                              : f->flags & (PML_DR2_HDR_FRAG == h.type ? 0x03 : 0x07);
    if (PML_DR2_HDR_FRAG != h.type) {
        h.match.vfrag = f->vfrag_sel & 0x80 ? f->vfrag_raw : S.first_id + f->vfrag_sel;
        h.match.tag = f->tag;
        msg_len = PML_DR2_HDR_RNDV == h.type ? f->msg_len : f->msg_len % (2 * EAGER_LIMIT);
        if (NULL != m && f->msg_sel < 0x40) { /* resend a known message's header */
            h.match.vfrag = m->v.msg_id;
            h.match.tag = m->v.tag;
            msg_len = m->v.msg_len;
        }
        if (PML_DR2_HDR_RNDV == h.type && (f->layout & 8)) {
            frag_len = 0;
            count = 1;
        }
        if (frag_len > msg_len) {
            frag_len = (uint32_t) msg_len;
        }
        h.match.frag_count = count;
        h.match.msg_len = msg_len;
    } else {
        h.frag.vfrag = f->vfrag_sel & 0x80 ? f->vfrag_raw : S.first_id + f->vfrag_sel;
        h.frag.msg_id = m ? m->v.msg_id : S.first_id + (f->msg_sel & 0x3f);
        msg_len = m ? m->v.msg_len : f->msg_len;
        if (f->layout & 4) {
            offset = f->offset_raw;
        } else { /* the sender's layout: vfrag base + index * frag_len, last one short */
            offset = (uint64_t) (f->offset_raw % 8) * 64 * frag_len + (uint64_t) index * frag_len;
            if (offset < msg_len && offset + frag_len > msg_len) {
                frag_len = (uint32_t) (msg_len - offset);
            }
        }
        h.frag.frag_index = index;
        h.frag.frag_count = count;
        h.frag.offset = offset;
        h.frag.msg_len = msg_len;
    }
    for (uint32_t i = 0; i < frag_len; i++) {
        payload[i] = (unsigned char) ((offset + i) * 131 + (f->tag ^ f->vfrag_sel));
    }
    return pml_dr2_hdr_pack(&h, out, room, payload, frag_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char seg[4 * (PML_DR2_HDR_MAX_LEN + MAX_FRAG)];
    fuzz_in_t in = {data, size};

    trace = NULL != getenv("FUZZ_DR2_TRACE");
    memset(&S, 0, sizeof(S));
    S.first_id = fuzz_u32(&in);
    FUZZ_CHECK(0 == pml_dr2_window_init(&S.win, PML_DR2_WINDOW_MAX, S.first_id));
    S.top64 = UINT64_C(1) << 40;
    S.last_top = S.win.top;
    while (fuzz_more(&in)) {
        fuzz_rx_fields_t f;
        size_t len = 0, n;
        uint8_t op = fuzz_u8(&in) % FUZZ_RX_NUM_OPS;

        switch (op) {
        case FUZZ_RX_OP_DATA:
        case FUZZ_RX_OP_CORRUPT:
            fuzz_rx_read_fields(&in, &f);
            len = build(&f, seg, sizeof(seg));
            if (FUZZ_RX_OP_CORRUPT == op) {
                uint16_t bit = fuzz_u16(&in);
                if (len > 0) {
                    seg[(bit % (len * 8)) / 8] ^= (unsigned char) (1u << (bit % 8));
                }
            }
            if (len > 0) {
                receive_segment(seg, len);
            }
            break;
        case FUZZ_RX_OP_MATCH: {
            model_msg_t *m = nth_msg(fuzz_u8(&in));
            if (NULL != m && !m->v.has_req) {
                m->v.has_req = 1;
                if (m->v.rndv) {
                    m->cap = m->v.msg_len < RNDV_CAPACITY ? m->v.msg_len : RNDV_CAPACITY;
                    m->buf = malloc(m->cap ? m->cap : 1);
                    place_rndv_data(m);
                }
                try_complete(m);
            }
            break;
        }
        case FUZZ_RX_OP_RAW:
            n = fuzz_u8(&in);
            n = n < in.left ? n : in.left;
            receive_segment(in.p, n);
            in.p += n;
            in.left -= n;
            break;
        case FUZZ_RX_OP_SEGMENT:
            n = 1 + fuzz_u8(&in) % 4;
            for (size_t i = 0; i < n; i++) {
                fuzz_rx_read_fields(&in, &f);
                len += build(&f, seg + len, sizeof(seg) - len);
            }
            if (len > 0) {
                receive_segment(seg, len);
            }
            break;
        }
    }
    for (int i = 0; i < MAX_MSGS; i++) {
        free(S.msgs[i].buf);
        free(S.msgs[i].rndv_data);
    }
    return 0;
}
