/*
 * ompi-resilience: pml/dr2 receive-side decisions (pure logic; see the header).
 */
#include "pml_dr2_rxcheck.h"

#include <string.h>

#include "pml_dr2_ackmask.h"

uint32_t pml_dr2_rx_msg_key(const pml_dr2_hdr_t *hdr)
{
    return PML_DR2_HDR_FRAG == hdr->type ? hdr->frag.msg_id : hdr->match.vfrag;
}

static void verdict(pml_dr2_rx_decision_t *d, pml_dr2_rx_verdict_t v, pml_dr2_rx_reason_t why)
{
    d->verdict = v;
    d->reason = why;
}

static void classify_match(const pml_dr2_window_t *win, const pml_dr2_hdr_t *hdr,
                           const pml_dr2_rx_msg_view_t *msg, uint64_t eager_limit,
                           pml_dr2_rx_decision_t *d)
{
    int rndv = PML_DR2_HDR_RNDV == hdr->type;

    d->vfrag = d->msg_id = hdr->match.vfrag;
    d->index = 0;
    d->nfrags = hdr->match.frag_count;
    d->offset = 0;
    if (PML_DR2_WINDOW_NEW != pml_dr2_window_check(win, d->vfrag)) {
        verdict(d, PML_DR2_RX_DUPLICATE, PML_DR2_RX_WHY_WINDOW);
        if (rndv) {
            /* MATCHED once the go-ahead was given: the message is bound to a receive, or
             * already complete and gone */
            d->ack_mask = 1;
            d->ack_flags = (NULL == msg || msg->has_req) ? PML_DR2_HDR_FLAG_MATCHED : 0;
        } else {
            d->ack_mask = pml_dr2_ackmask_full(d->nfrags);
        }
        return;
    }
    if (NULL != msg) {
        /* fragment 0 again, its vfrag still incomplete (it was corrupt or is a copy) */
        if (msg->rndv || rndv || msg->msg_len != hdr->match.msg_len || msg->tag != hdr->match.tag) {
            verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_MSG_MISMATCH);
            return;
        }
        verdict(d, PML_DR2_RX_ACCEPT, PML_DR2_RX_WHY_OK);
        d->room = msg->bytes_received < msg->msg_len ? msg->msg_len - msg->bytes_received : 0;
        return;
    }
    /* A new message: a size we are willing to buffer (eager), or a rendezvous, whose one
     * fragment carries at most as much of the message (its end) as we would buffer of an
     * eager one; the rest comes after our go-ahead. */
    if (rndv && (1 != hdr->match.frag_count || hdr->frag_len > eager_limit)) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_RNDV_LAYOUT);
        return;
    }
    if (!rndv && hdr->match.msg_len > eager_limit) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_EAGER_TOO_LONG);
        return;
    }
    verdict(d, PML_DR2_RX_NEW_MSG, PML_DR2_RX_WHY_OK);
    d->room = hdr->match.msg_len;
}

static void classify_frag(const pml_dr2_window_t *win, const pml_dr2_hdr_t *hdr,
                          const pml_dr2_rx_msg_view_t *msg, pml_dr2_rx_decision_t *d)
{
    d->vfrag = hdr->frag.vfrag;
    d->msg_id = hdr->frag.msg_id;
    d->index = hdr->frag.frag_index;
    d->nfrags = hdr->frag.frag_count;
    d->offset = hdr->frag.offset;
    if (PML_DR2_WINDOW_NEW != pml_dr2_window_check(win, d->vfrag)) {
        verdict(d, PML_DR2_RX_DUPLICATE, PML_DR2_RX_WHY_WINDOW);
        d->ack_mask = pml_dr2_ackmask_full(d->nfrags);
        return;
    }
    if (NULL == msg) {
        /* its MATCH was lost (or the message was abandoned): the sender resends both */
        verdict(d, PML_DR2_RX_UNKNOWN_MSG, PML_DR2_RX_WHY_NO_MSG);
        return;
    }
    if (msg->msg_len != hdr->frag.msg_len) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_MSG_MISMATCH);
        return;
    }
    if (msg->rndv && !msg->has_req) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_NOT_ASKED);
        return;
    }
    if (d->vfrag == d->msg_id && (msg->rndv || 0 == d->index)) {
        /* index 0 of the MATCH's vfrag is the MATCH; a RNDV's vfrag has no data */
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_BAD_LAYOUT);
        return;
    }
    verdict(d, PML_DR2_RX_ACCEPT, PML_DR2_RX_WHY_OK);
    d->room = msg->bytes_received < msg->msg_len ? msg->msg_len - msg->bytes_received : 0;
}

void pml_dr2_rx_classify(const pml_dr2_window_t *win, const pml_dr2_hdr_t *hdr,
                         const pml_dr2_rx_msg_view_t *msg, uint64_t eager_limit,
                         pml_dr2_rx_decision_t *d)
{
    memset(d, 0, sizeof(*d));
    d->len = hdr->frag_len;
    switch (hdr->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
    case PML_DR2_HDR_EAGER: /* a MATCH of one fragment holding the whole message */
        classify_match(win, hdr, msg, eager_limit, d);
        break;
    case PML_DR2_HDR_FRAG:
        classify_frag(win, hdr, msg, d);
        break;
    default: /* not a data header: nothing to place */
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_BAD_LAYOUT);
        break;
    }
}

/* A fragment to place, unless the message cannot count its bytes any more. */
static void accept_within_room(pml_dr2_rx_decision_t *d, int need_record)
{
    if (d->len > d->room) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_OVERCOUNT);
        return;
    }
    verdict(d, PML_DR2_RX_ACCEPT, PML_DR2_RX_WHY_OK);
    d->need_record = (uint8_t) need_record;
}

void pml_dr2_rx_vfrag_check(const pml_dr2_rx_vfrag_t *rv, pml_dr2_rx_decision_t *d)
{
    d->need_record = 0;
    d->ack_mask = 0;
    d->ack_flags = 0;
    if (1 == d->nfrags) {
        /* A vfrag of one fragment (every small message) is complete or not at once: it
         * never has a record. Once complete, the duplicate window remembers it. */
        if (NULL != rv) {
            verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_VFRAG_SINGLE);
        } else {
            accept_within_room(d, 0);
        }
        return;
    }
    if (NULL == rv) {
        accept_within_room(d, 1);
        return;
    }
    if (rv->nfrags != d->nfrags || rv->msg_id != d->msg_id) {
        verdict(d, PML_DR2_RX_REJECT, PML_DR2_RX_WHY_VFRAG_MISMATCH);
        return;
    }
    if (pml_dr2_ackmask_is_marked(rv->mask, d->index)) {
        verdict(d, PML_DR2_RX_DUPLICATE, PML_DR2_RX_WHY_FRAG_HELD);
        d->ack_mask = rv->mask;
        return;
    }
    accept_within_room(d, 0);
}

void pml_dr2_rx_vfrag_init(pml_dr2_rx_vfrag_t *rv, const pml_dr2_rx_decision_t *d)
{
    rv->id = d->vfrag;
    rv->nfrags = d->nfrags;
    rv->mask = 0;
    rv->msg_id = d->msg_id;
}

void pml_dr2_rx_frag_intact(pml_dr2_window_t *win, pml_dr2_rx_vfrag_t *rv,
                            const pml_dr2_rx_decision_t *d, uint8_t hdr_flags,
                            pml_dr2_rx_outcome_t *out)
{
    uint64_t full = pml_dr2_ackmask_full(d->nfrags);

    memset(out, 0, sizeof(*out));
    if (1 == d->nfrags) {
        (void) pml_dr2_window_check_and_mark(win, d->vfrag);
        out->vfrag_complete = 1;
        out->ack_type = PML_DR2_HDR_ACK;
        out->ack_mask = full;
        return;
    }
    if (NULL == rv) {
        return; /* a caller that did not create the record step 2 asked for */
    }
    rv->mask = pml_dr2_ackmask_mark(rv->mask, d->index);
    if (pml_dr2_ackmask_complete(full, rv->mask)) {
        /* the vfrag is complete: remember it (duplicates of it are dropped from now on) */
        (void) pml_dr2_window_check_and_mark(win, d->vfrag);
        out->vfrag_complete = 1;
        out->ack_type = PML_DR2_HDR_ACK;
        out->ack_mask = full;
    } else if (hdr_flags & PML_DR2_HDR_FLAG_ACK_NOW) {
        out->ack_type = PML_DR2_HDR_ACK;
        out->ack_mask = rv->mask;
    }
}

void pml_dr2_rx_frag_corrupt(const pml_dr2_rx_decision_t *d, pml_dr2_rx_outcome_t *out)
{
    /* never counted; a NACK gets it resent at once */
    memset(out, 0, sizeof(*out));
    out->ack_type = PML_DR2_HDR_NACK;
    out->ack_mask = pml_dr2_ackmask_bit(d->index);
}

const char *pml_dr2_rx_verdict_name(pml_dr2_rx_verdict_t v)
{
    static const char *const names[] = {
        [PML_DR2_RX_ACCEPT] = "accept",       [PML_DR2_RX_NEW_MSG] = "new-msg",
        [PML_DR2_RX_DUPLICATE] = "duplicate", [PML_DR2_RX_UNKNOWN_MSG] = "unknown-msg",
        [PML_DR2_RX_REJECT] = "reject",
    };

    return (unsigned) v < sizeof(names) / sizeof(names[0]) ? names[v] : "unknown";
}

const char *pml_dr2_rx_reason_name(pml_dr2_rx_reason_t why)
{
    static const char *const names[PML_DR2_RX_NUM_WHY] = {
        [PML_DR2_RX_WHY_OK] = "ok",
        [PML_DR2_RX_WHY_WINDOW] = "window",
        [PML_DR2_RX_WHY_FRAG_HELD] = "frag-held",
        [PML_DR2_RX_WHY_NO_MSG] = "no-msg",
        [PML_DR2_RX_WHY_MSG_MISMATCH] = "msg-mismatch",
        [PML_DR2_RX_WHY_RNDV_LAYOUT] = "rndv-layout",
        [PML_DR2_RX_WHY_EAGER_TOO_LONG] = "eager-too-long",
        [PML_DR2_RX_WHY_NOT_ASKED] = "not-asked",
        [PML_DR2_RX_WHY_BAD_LAYOUT] = "bad-layout",
        [PML_DR2_RX_WHY_VFRAG_MISMATCH] = "vfrag-mismatch",
        [PML_DR2_RX_WHY_VFRAG_SINGLE] = "vfrag-single",
        [PML_DR2_RX_WHY_OVERCOUNT] = "overcount",
    };

    return (unsigned) why < PML_DR2_RX_NUM_WHY ? names[why] : "unknown";
}
