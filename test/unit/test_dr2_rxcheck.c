/*
 * Unit tests of pml/dr2's receive-side decisions (pml_dr2_rxcheck.{c,h}): every verdict
 * and reason of pml_dr2_rx_classify, the vfrag bookkeeping, the ACKs and NACKs, and whole
 * messages driven through the steps as pml_dr2_recvfrag.c drives them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_ackmask.h"
#include "ompi/mca/pml/dr2/pml_dr2_rxcheck.h"
#include "unit.h"

#define LIMIT 4096u

static pml_dr2_hdr_t match_hdr(int type, uint32_t vfrag, uint8_t nfrags, uint32_t len,
                               uint64_t msg_len)
{
    pml_dr2_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t) type;
    h.match.vfrag = vfrag;
    h.match.frag_count = nfrags;
    h.match.tag = 7;
    h.match.msg_len = msg_len;
    h.frag_len = len;
    return h;
}

static pml_dr2_hdr_t frag_hdr(uint32_t msg_id, uint32_t vfrag, uint8_t index, uint8_t nfrags,
                              uint32_t len, uint64_t offset, uint64_t msg_len)
{
    pml_dr2_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = PML_DR2_HDR_FRAG;
    h.frag.msg_id = msg_id;
    h.frag.vfrag = vfrag;
    h.frag.frag_index = index;
    h.frag.frag_count = nfrags;
    h.frag.offset = offset;
    h.frag.msg_len = msg_len;
    h.frag_len = len;
    return h;
}

static pml_dr2_rx_msg_view_t view(uint32_t id, uint64_t msg_len, int rndv, int has_req)
{
    pml_dr2_rx_msg_view_t v;

    memset(&v, 0, sizeof(v));
    v.msg_id = id;
    v.msg_len = msg_len;
    v.tag = 7;
    v.rndv = (uint8_t) rndv;
    v.has_req = (uint8_t) has_req;
    return v;
}

static void msg_key_is_the_message_id(void)
{
    pml_dr2_hdr_t m = match_hdr(PML_DR2_HDR_MATCH, 11, 1, 0, 0);
    pml_dr2_hdr_t f = frag_hdr(11, 12, 0, 1, 1, 0, 1);

    CHECK(pml_dr2_rx_msg_key(&m) == 11);
    CHECK(pml_dr2_rx_msg_key(&f) == 11);
}

static void new_messages(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_hdr_t h;

    pml_dr2_window_init(&w, 64, 10);
    h = match_hdr(PML_DR2_HDR_MATCH, 10, 3, 100, 300);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_NEW_MSG && d.reason == PML_DR2_RX_WHY_OK);
    CHECK(d.vfrag == 10 && d.msg_id == 10 && d.index == 0 && d.nfrags == 3 && d.offset == 0);
    CHECK(d.len == 100);
    pml_dr2_rx_new_msg_accept(&d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT);
    /* an eager message just at and past the limit */
    h = match_hdr(PML_DR2_HDR_MATCH, 10, 1, 0, LIMIT);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_NEW_MSG);
    h.match.msg_len = LIMIT + 1;
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_EAGER_TOO_LONG);
    /* a rendezvous: any length, one fragment with at most an eager message's data */
    h = match_hdr(PML_DR2_HDR_RNDV, 10, 1, 0, UINT64_MAX);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_NEW_MSG);
    h.frag_len = LIMIT;
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_NEW_MSG && d.len == LIMIT && d.offset == 0);
    h.frag_len = LIMIT + 1;
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_RNDV_LAYOUT);
    h = match_hdr(PML_DR2_HDR_RNDV, 10, 2, 0, 100);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_RNDV_LAYOUT);
}

static void duplicates_of_complete_vfrags(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_hdr_t h;
    pml_dr2_rx_msg_view_t v = view(5, 1000, 1, 0);

    pml_dr2_window_init(&w, 64, 10); /* ids before 10 count as seen */
    h = match_hdr(PML_DR2_HDR_MATCH, 9, 5, 10, 100);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.reason == PML_DR2_RX_WHY_WINDOW);
    CHECK(d.ack_mask == pml_dr2_ackmask_full(5) && d.ack_flags == 0);
    /* a RNDV seen before: MATCHED once the go-ahead was given or the message is gone */
    h = match_hdr(PML_DR2_HDR_RNDV, 5, 1, 0, 1000);
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.ack_mask == 1 && d.ack_flags == 0);
    v.has_req = 1;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.ack_mask == 1 && d.ack_flags == PML_DR2_HDR_FLAG_MATCHED);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.ack_mask == 1 && d.ack_flags == PML_DR2_HDR_FLAG_MATCHED);
    /* too old counts as a duplicate */
    h = frag_hdr(5, 10u - 65, 2, 3, 1, 0, 1000);
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.ack_mask == pml_dr2_ackmask_full(3));
}

static void match_again(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_hdr_t h = match_hdr(PML_DR2_HDR_MATCH, 10, 3, 100, 300);
    pml_dr2_rx_msg_view_t v = view(10, 300, 0, 0);

    pml_dr2_window_init(&w, 64, 10);
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && d.index == 0 && d.nfrags == 3);
    h.match.msg_len = 301;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_MSG_MISMATCH);
    h.match.msg_len = 300;
    h.match.tag = 8;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT);
    h.match.tag = 7;
    h.type = PML_DR2_HDR_RNDV;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT);
    v.rndv = 1; /* a RNDV again, its vfrag not marked: never data */
    h.frag_len = 0;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT);
}

static void frags(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_hdr_t h = frag_hdr(10, 11, 2, 4, 100, 200, 1000);
    pml_dr2_rx_msg_view_t v = view(10, 1000, 0, 0);

    pml_dr2_window_init(&w, 64, 10);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_UNKNOWN_MSG && d.reason == PML_DR2_RX_WHY_NO_MSG);
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT);
    CHECK(d.vfrag == 11 && d.msg_id == 10 && d.index == 2 && d.nfrags == 4);
    CHECK(d.offset == 200 && d.len == 100);
    h.frag.msg_len = 999;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_MSG_MISMATCH);
    h.frag.msg_len = 1000;
    /* rendezvous data before the go-ahead */
    v.rndv = 1;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_NOT_ASKED);
    v.has_req = 1;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT);
    /* data in the RNDV's own vfrag */
    h.frag.vfrag = 10;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_BAD_LAYOUT);
    /* a FRAG in the place of the MATCH (index 0 of the MATCH's vfrag) */
    v.rndv = 0;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT);
    h.frag.frag_index = 0;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_BAD_LAYOUT);
    /* ACK and NACK are not data */
    h.type = PML_DR2_HDR_ACK;
    pml_dr2_rx_classify(&w, &h, &v, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT);
}

static void vfrag_records(void)
{
    pml_dr2_rx_decision_t d;
    pml_dr2_rx_vfrag_t rv;

    memset(&d, 0, sizeof(d));
    d.vfrag = 20;
    d.msg_id = 10;
    d.nfrags = 1;
    pml_dr2_rx_vfrag_check(NULL, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && !d.need_record);
    d.nfrags = 3;
    d.index = 1;
    pml_dr2_rx_vfrag_check(NULL, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && d.need_record);
    pml_dr2_rx_vfrag_init(&rv, &d);
    CHECK(rv.id == 20 && rv.msg_id == 10 && rv.nfrags == 3 && rv.mask == 0);
    pml_dr2_rx_vfrag_check(&rv, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && !d.need_record);
    rv.mask = 2;
    pml_dr2_rx_vfrag_check(&rv, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.reason == PML_DR2_RX_WHY_FRAG_HELD);
    CHECK(d.ack_mask == 2);
    d.nfrags = 4;
    pml_dr2_rx_vfrag_check(&rv, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_VFRAG_MISMATCH);
    d.nfrags = 3;
    d.msg_id = 11;
    pml_dr2_rx_vfrag_check(&rv, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_VFRAG_MISMATCH);
    d.nfrags = 1;
    d.index = 0;
    pml_dr2_rx_vfrag_check(&rv, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_VFRAG_SINGLE);
}

static void acks_and_nacks(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_rx_vfrag_t rv;
    pml_dr2_rx_outcome_t out;

    pml_dr2_window_init(&w, 64, 0);
    memset(&d, 0, sizeof(d));
    d.vfrag = 3;
    d.nfrags = 1;
    pml_dr2_rx_frag_corrupt(&d, &out);
    CHECK(out.ack_type == PML_DR2_HDR_NACK && out.ack_mask == 1 && !out.vfrag_complete);
    CHECK(pml_dr2_window_check(&w, 3) == PML_DR2_WINDOW_NEW);
    pml_dr2_rx_frag_intact(&w, NULL, &d, 0, &out);
    CHECK(out.ack_type == PML_DR2_HDR_ACK && out.ack_mask == 1 && out.vfrag_complete);
    CHECK(pml_dr2_window_check(&w, 3) == PML_DR2_WINDOW_DUPLICATE);

    d.vfrag = 4;
    d.nfrags = 3;
    pml_dr2_rx_vfrag_init(&rv, &d);
    d.index = 2;
    pml_dr2_rx_frag_intact(&w, &rv, &d, 0, &out);
    CHECK(out.ack_type == 0 && !out.vfrag_complete && rv.mask == 4);
    d.index = 0;
    pml_dr2_rx_frag_intact(&w, &rv, &d, PML_DR2_HDR_FLAG_ACK_NOW, &out);
    CHECK(out.ack_type == PML_DR2_HDR_ACK && out.ack_mask == 5 && !out.vfrag_complete);
    CHECK(pml_dr2_window_check(&w, 4) == PML_DR2_WINDOW_NEW);
    d.index = 1;
    pml_dr2_rx_frag_corrupt(&d, &out);
    CHECK(out.ack_type == PML_DR2_HDR_NACK && out.ack_mask == 2);
    pml_dr2_rx_frag_intact(&w, &rv, &d, 0, &out);
    CHECK(out.ack_type == PML_DR2_HDR_ACK && out.ack_mask == 7 && out.vfrag_complete);
    CHECK(pml_dr2_window_check(&w, 4) == PML_DR2_WINDOW_DUPLICATE);
    /* 64 fragments: the full mask */
    d.vfrag = 5;
    d.nfrags = 64;
    pml_dr2_rx_vfrag_init(&rv, &d);
    rv.mask = UINT64_MAX >> 1;
    d.index = 63;
    pml_dr2_rx_frag_intact(&w, &rv, &d, 0, &out);
    CHECK(out.vfrag_complete && out.ack_mask == UINT64_MAX);
}

static void names(void)
{
    for (int v = PML_DR2_RX_ACCEPT; v <= PML_DR2_RX_REJECT; v++) {
        CHECK(strcmp(pml_dr2_rx_verdict_name((pml_dr2_rx_verdict_t) v), "unknown") != 0);
    }
    for (int r = 0; r < PML_DR2_RX_NUM_WHY; r++) {
        CHECK(pml_dr2_rx_reason_name((pml_dr2_rx_reason_t) r) != NULL);
        CHECK(strcmp(pml_dr2_rx_reason_name((pml_dr2_rx_reason_t) r), "unknown") != 0);
    }
    CHECK(strcmp(pml_dr2_rx_reason_name(PML_DR2_RX_NUM_WHY), "unknown") == 0);
    CHECK(strcmp(pml_dr2_rx_verdict_name((pml_dr2_rx_verdict_t) 99), "unknown") == 0);
}

/* ---- whole messages, driven as pml_dr2_recvfrag.c drives the steps ------------------- */

typedef struct {
    pml_dr2_window_t win;
    pml_dr2_rx_msg_view_t msg;
    int have_msg;
    pml_dr2_rx_vfrag_t rec;
    int have_rec;
    int placed, acks, nacks, dups;
} rx_t;

static pml_dr2_rx_verdict_t rx_one(rx_t *rx, const pml_dr2_hdr_t *h, int intact)
{
    pml_dr2_rx_decision_t d;
    pml_dr2_rx_outcome_t out;

    pml_dr2_rx_classify(&rx->win, h, rx->have_msg ? &rx->msg : NULL, LIMIT, &d);
    if (PML_DR2_RX_NEW_MSG == d.verdict) {
        memset(&rx->msg, 0, sizeof(rx->msg));
        rx->msg.msg_id = d.vfrag;
        rx->msg.msg_len = h->match.msg_len;
        rx->msg.tag = h->match.tag;
        rx->have_msg = 1;
        pml_dr2_rx_new_msg_accept(&d);
    }
    if (PML_DR2_RX_ACCEPT != d.verdict) {
        rx->dups += PML_DR2_RX_DUPLICATE == d.verdict;
        return d.verdict;
    }
    pml_dr2_rx_vfrag_check(rx->have_rec && rx->rec.id == d.vfrag ? &rx->rec : NULL, &d);
    if (PML_DR2_RX_ACCEPT != d.verdict) {
        rx->dups += PML_DR2_RX_DUPLICATE == d.verdict;
        return d.verdict;
    }
    if (d.need_record) {
        pml_dr2_rx_vfrag_init(&rx->rec, &d);
        rx->have_rec = 1;
    }
    if (!intact) {
        pml_dr2_rx_frag_corrupt(&d, &out);
        rx->nacks++;
        return PML_DR2_RX_ACCEPT;
    }
    rx->placed++;
    rx->msg.bytes_received += d.len;
    pml_dr2_rx_frag_intact(&rx->win, d.nfrags > 1 ? &rx->rec : NULL, &d, h->flags, &out);
    if (out.vfrag_complete && d.nfrags > 1) {
        rx->have_rec = 0;
    }
    rx->acks += 0 != out.ack_type;
    return PML_DR2_RX_ACCEPT;
}

static void message_with_loss_corruption_and_duplicates(void)
{
    rx_t rx;
    pml_dr2_hdr_t m = match_hdr(PML_DR2_HDR_MATCH, 100, 3, 100, 250);
    pml_dr2_hdr_t f1 = frag_hdr(100, 100, 1, 3, 100, 100, 250);
    pml_dr2_hdr_t f2 = frag_hdr(100, 100, 2, 3, 50, 200, 250);

    memset(&rx, 0, sizeof(rx));
    pml_dr2_window_init(&rx.win, PML_DR2_WINDOW_MAX, 100);
    /* fragment 2 first (0 and 1 late), corrupt */
    CHECK(rx_one(&rx, &f2, 0) == PML_DR2_RX_UNKNOWN_MSG);
    CHECK(rx_one(&rx, &m, 0) == PML_DR2_RX_ACCEPT && rx.nacks == 1 && rx.placed == 0);
    CHECK(rx.have_msg && rx.have_rec && rx.rec.mask == 0);
    CHECK(rx_one(&rx, &m, 1) == PML_DR2_RX_ACCEPT && rx.placed == 1);
    CHECK(rx_one(&rx, &m, 1) == PML_DR2_RX_DUPLICATE);
    CHECK(rx_one(&rx, &f2, 1) == PML_DR2_RX_ACCEPT);
    CHECK(rx_one(&rx, &f2, 1) == PML_DR2_RX_DUPLICATE);
    CHECK(rx_one(&rx, &f1, 1) == PML_DR2_RX_ACCEPT);
    CHECK(!rx.have_rec && rx.placed == 3 && rx.msg.bytes_received == 250);
    CHECK(pml_dr2_window_check(&rx.win, 100) == PML_DR2_WINDOW_DUPLICATE);
    CHECK(rx_one(&rx, &f1, 1) == PML_DR2_RX_DUPLICATE);
    CHECK(rx_one(&rx, &m, 1) == PML_DR2_RX_DUPLICATE);
    CHECK(rx.dups == 4);
}

/* Found by fuzz_dr2_rx: fragments in different vfrags that cover the same bytes each
 * counted, so a message could count more bytes than its length and complete while some of
 * its bytes never arrived. A fragment is now refused when the message cannot count it. */
static void overlapping_fragments_do_not_overcount(void)
{
    rx_t rx;
    pml_dr2_hdr_t m = match_hdr(PML_DR2_HDR_MATCH, 10, 1, 50, 100);
    pml_dr2_hdr_t again = frag_hdr(10, 11, 0, 1, 50, 0, 100); /* bytes 0..49 again */
    pml_dr2_hdr_t tail = frag_hdr(10, 12, 0, 1, 50, 50, 100);
    pml_dr2_hdr_t big = frag_hdr(10, 13, 0, 2, 60, 40, 100);
    pml_dr2_rx_decision_t d;

    memset(&rx, 0, sizeof(rx));
    pml_dr2_window_init(&rx.win, PML_DR2_WINDOW_MAX, 10);
    CHECK(rx_one(&rx, &m, 1) == PML_DR2_RX_ACCEPT && rx.msg.bytes_received == 50);
    /* 60 bytes where only 50 are left: refused, no record created for its vfrag */
    CHECK(rx_one(&rx, &big, 1) == PML_DR2_RX_REJECT && !rx.have_rec);
    pml_dr2_rx_classify(&rx.win, &big, &rx.msg, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && d.room == 50);
    pml_dr2_rx_vfrag_check(NULL, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_OVERCOUNT);
    CHECK(!d.need_record);
    /* exactly the room left: counted (the codec cannot tell it overlaps) */
    CHECK(rx_one(&rx, &again, 1) == PML_DR2_RX_ACCEPT && rx.msg.bytes_received == 100);
    /* the message is full: nothing more is counted */
    CHECK(rx_one(&rx, &tail, 1) == PML_DR2_RX_REJECT);
    CHECK(rx.msg.bytes_received == 100);
    CHECK(pml_dr2_window_check(&rx.win, 12) == PML_DR2_WINDOW_NEW); /* not marked */
}

/* The room check comes after the duplicate check: a fragment held already is answered
 * with its ACK again even when it is longer than what is left to receive. */
static void duplicates_are_answered_whatever_the_room(void)
{
    rx_t rx;
    pml_dr2_hdr_t m = match_hdr(PML_DR2_HDR_MATCH, 10, 3, 100, 250);
    pml_dr2_hdr_t f1 = frag_hdr(10, 10, 1, 3, 100, 100, 250);
    pml_dr2_rx_decision_t d;

    memset(&rx, 0, sizeof(rx));
    pml_dr2_window_init(&rx.win, PML_DR2_WINDOW_MAX, 10);
    CHECK(rx_one(&rx, &m, 1) == PML_DR2_RX_ACCEPT);
    CHECK(rx_one(&rx, &f1, 1) == PML_DR2_RX_ACCEPT && rx.msg.bytes_received == 200);
    pml_dr2_rx_classify(&rx.win, &m, &rx.msg, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && d.room == 50 && d.len == 100);
    pml_dr2_rx_vfrag_check(&rx.rec, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.ack_mask == 3);
}

/* An EAGER is decided exactly as a MATCH of one fragment holding the whole message: new,
 * placed, complete at once (window marked, ACK of fragment 0), then a duplicate. */
static void eager_is_a_whole_single_fragment_match(void)
{
    pml_dr2_window_t w;
    pml_dr2_rx_decision_t d;
    pml_dr2_rx_outcome_t out;
    pml_dr2_hdr_t h = match_hdr(PML_DR2_HDR_EAGER, 20, 1, 8, 8);
    pml_dr2_rx_msg_view_t m = view(20, 8, 0, 0);

    pml_dr2_window_init(&w, 64, 20);
    CHECK(pml_dr2_rx_msg_key(&h) == 20);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_NEW_MSG && d.vfrag == 20 && d.nfrags == 1 && d.room == 8);
    pml_dr2_rx_new_msg_accept(&d);
    pml_dr2_rx_vfrag_check(NULL, &d);
    CHECK(d.verdict == PML_DR2_RX_ACCEPT && !d.need_record);
    pml_dr2_rx_frag_intact(&w, NULL, &d, h.flags, &out);
    CHECK(out.vfrag_complete && out.ack_type == PML_DR2_HDR_ACK && out.ack_mask == 1);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_DUPLICATE && d.ack_mask == 1 && 0 == d.ack_flags);
    /* one larger than we buffer is refused as a MATCH would be */
    h = match_hdr(PML_DR2_HDR_EAGER, 21, 1, LIMIT + 1, LIMIT + 1);
    pml_dr2_rx_classify(&w, &h, NULL, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_EAGER_TOO_LONG);
    /* a known message of another length is a mismatch */
    h = match_hdr(PML_DR2_HDR_EAGER, 22, 1, 4, 4);
    m = view(22, 8, 0, 0);
    pml_dr2_rx_classify(&w, &h, &m, LIMIT, &d);
    CHECK(d.verdict == PML_DR2_RX_REJECT && d.reason == PML_DR2_RX_WHY_MSG_MISMATCH);
}

int main(void)
{
    RUN(msg_key_is_the_message_id);
    RUN(new_messages);
    RUN(duplicates_of_complete_vfrags);
    RUN(match_again);
    RUN(frags);
    RUN(vfrag_records);
    RUN(acks_and_nacks);
    RUN(names);
    RUN(message_with_loss_corruption_and_duplicates);
    RUN(overlapping_fragments_do_not_overcount);
    RUN(duplicates_are_answered_whatever_the_room);
    RUN(eager_is_a_whole_single_fragment_match);
    UNIT_EXIT();
}
