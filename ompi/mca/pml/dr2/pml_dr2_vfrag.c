/*
 * ompi-resilience: pml/dr2 sender side of the reliability protocol (see pml_dr2_vfrag.h):
 * messages cut into vfrags, the window, scheduling over paths, ACKs and NACKs. Fragments
 * on the wire are in pml_dr2_txfrag.c, timers and failover in pml_dr2_vfrag_timer.c.
 */
#include "ompi_config.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "ompi/mca/pml/base/pml_base_bsend.h"

#include "pml_dr2.h"
#include "pml_dr2_ackmask.h"
#include "pml_dr2_crc.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_sendreq.h"
#include "pml_dr2_vfrag_shared.h"

/* An EAGER segment is built whole in a stack buffer (txmsg_send_eager_now). */
_Static_assert(PML_DR2_HDR_EAGER_LEN + MCA_PML_DR2_EAGER_HDR_MAX <= MCA_PML_DR2_SMALL_SEGMENT_MAX,
               "an EAGER header and its largest payload must fit a small segment");
/* A TINY checks its payload with its header, on every path (mca_pml_dr2_txmsg_send_tiny). */
_Static_assert(MCA_PML_DR2_TINY_SEND_MAX <= MCA_PML_DR2_SMALL_CHECKED_MAX,
               "a TINY is a small message whose payload may be checked on any path");

static void txmsg_construct(mca_pml_dr2_txmsg_t *msg)
{
    msg->peer = NULL;
    msg->state = MCA_PML_DR2_TX_SCHEDULING;
    msg->rndv = false;
    msg->in_list = false;
    msg->has_id = false;
    msg->msg_id = 0;
    msg->next_offset = 0;
    msg->rndv_tail = 0;
    msg->vfrags_live = 0;
    msg->contig = NULL;
    msg->owned = NULL;
    msg->own = MCA_PML_DR2_OWN_NONE;
    msg->req = NULL;
    msg->match_retries = 0;
    msg->match_unanswered = 0;
    msg->match_flags = 0;
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_txmsg_t, opal_free_list_item_t, txmsg_construct, NULL);
OBJ_CLASS_INSTANCE(mca_pml_dr2_vfrag_t, opal_free_list_item_t, NULL, NULL);

mca_pml_dr2_txmsg_t *mca_pml_dr2_txmsg_alloc(void)
{
    mca_pml_dr2_txmsg_t *msg = (mca_pml_dr2_txmsg_t *) opal_free_list_get_st(&mca_pml_dr2.txmsgs);

    if (OPAL_LIKELY(NULL != msg)) {
        txmsg_construct(msg); /* a recycled one keeps its last state */
    }
    return msg;
}

void *mca_pml_dr2_copy_buffer_get(void)
{
    opal_free_list_item_t *item = opal_free_list_get_st(&mca_pml_dr2.copy_buffers);

    return NULL != item ? ((mca_pml_dr2_copy_buffer_t *) item)->data : NULL;
}

void *mca_pml_dr2_copy_alloc(size_t len, mca_pml_dr2_own_t *own)
{
    void *copy = len <= MCA_PML_DR2_COPY_BUFFER_SIZE ? mca_pml_dr2_copy_buffer_get() : NULL;

    if (NULL != copy) {
        *own = MCA_PML_DR2_OWN_POOL;
        return copy;
    }
    *own = MCA_PML_DR2_OWN_MALLOC;
    return malloc(len);
}

void mca_pml_dr2_copy_release(mca_pml_dr2_own_t own, void *copy)
{
    if (MCA_PML_DR2_OWN_MALLOC == own) {
        free(copy);
    } else if (MCA_PML_DR2_OWN_POOL == own) {
        opal_free_list_return_st(&mca_pml_dr2.copy_buffers,
                                 (opal_free_list_item_t *) ((unsigned char *) copy
                                     - offsetof(mca_pml_dr2_copy_buffer_t, data)));
    } else if (MCA_PML_DR2_OWN_BSEND == own) {
        mca_pml_base_bsend_request_free(copy);
    }
}

void mca_pml_dr2_txmsg_free(mca_pml_dr2_txmsg_t *msg)
{
    opal_free_list_return_st(&mca_pml_dr2.txmsgs, &msg->super);
}


/* ---- vfrags ---------------------------------------------------------------------------- */

static bool window_has_room(mca_pml_dr2_peer_t *peer)
{
    mca_pml_dr2_vfrag_t *oldest;

    if (opal_list_is_empty(&peer->tx_unacked)) {
        return true;
    }
    oldest = (mca_pml_dr2_vfrag_t *) opal_list_get_first(&peer->tx_unacked);
    return (uint32_t) (peer->tx_next_id - oldest->id) < mca_pml_dr2.window;
}

/* A message of one vfrag may go out at once, ahead of peer_push: nothing of the peer waits
 * to be sent before it, and the window has room for its vfrag. */
static inline bool peer_takes_single_now(mca_pml_dr2_peer_t *peer)
{
    return 0 == peer->tx_pending && !peer->failed && opal_list_is_empty(&peer->tx_blocked)
           && window_has_room(peer);
}

/* A vfrag object, not initialised (vfrag_start does that); NULL if out of memory. */
static inline mca_pml_dr2_vfrag_t *vfrag_get(void)
{
    return (mca_pml_dr2_vfrag_t *) opal_free_list_get_st(&mca_pml_dr2.vfrags);
}

/* Rebuild the peer's id guard for tx_next_id from the ids rendezvous waiting for their
 * go-ahead go by (pml_dr2_id_guard_t). */
static void id_guard_rebuild(mca_pml_dr2_peer_t *peer)
{
    mca_pml_dr2_txmsg_t *msg;

    pml_dr2_id_guard_clear(&peer->tx_id_guard);
    OPAL_LIST_FOREACH (msg, &peer->tx_await_match, mca_pml_dr2_txmsg_t) {
        pml_dr2_id_guard_consider(&peer->tx_id_guard, peer->tx_next_id, msg->msg_id);
    }
}

/* The id after the one just given out, skipping those still in use after 2^32 ids. */
static inline void id_advance(mca_pml_dr2_peer_t *peer)
{
    if (OPAL_UNLIKELY(pml_dr2_id_guard_due(++peer->tx_next_id))) {
        id_guard_rebuild(peer);
    }
    while (OPAL_UNLIKELY(pml_dr2_id_guard_hits(&peer->tx_id_guard, peer->tx_next_id))) {
        peer->tx_next_id++;
        id_guard_rebuild(peer);
    }
}

/* v becomes the message's next vfrag, with the peer's next id, in flight (indexed, timed)
 * on path `path` but not yet counted as pending: the caller either sends it at once or
 * counts it (vfrag_create). */
static void vfrag_start(mca_pml_dr2_vfrag_t *v, mca_pml_dr2_txmsg_t *msg, uint8_t kind,
                        uint64_t offset, uint64_t len, int path)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    uint64_t n = PML_DR2_HDR_RNDV == kind ? 1 : (len + msg->frag_len - 1) / msg->frag_len;

    if (0 == n) {
        n = 1; /* an empty message still has its MATCH */
    }
    v->msg = msg;
    v->id = peer->tx_next_id;
    id_advance(peer);
    v->kind = kind;
    v->nfrags = (uint8_t) n;
    v->offset = offset;
    v->len = len;
    v->pending = pml_dr2_ackmask_full(v->nfrags);
    v->sent = v->acked = v->fast_resent = 0;
    v->sent_at_us = v->armed_at_us = 0;
    v->deadline_us = UINT64_MAX;
    v->retries = 0;
    v->retransmitted = false;
    v->path = (uint8_t) path;
    pml_dr2_path_assign(&peer->path_state[path], vfrag_wire_bytes(v));
    opal_list_append(&peer->tx_unacked, &v->super.super);
    vfrag_index(peer, v);
    msg->vfrags_live++;
    mca_pml_dr2.timers_armed++;
}

static mca_pml_dr2_vfrag_t *vfrag_new(mca_pml_dr2_txmsg_t *msg, uint8_t kind, uint64_t offset,
                                      uint64_t len)
{
    mca_pml_dr2_vfrag_t *v = vfrag_get();

    if (NULL != v) {
        /* striping: the vfrag goes to the path expected to deliver it first */
        uint64_t frags = PML_DR2_HDR_RNDV == kind ? 1 : len / msg->frag_len + 1;
        vfrag_start(v, msg, kind, offset, len,
                    mca_pml_dr2_path_pick(msg->peer, len + frags * PML_DR2_HDR_MAX_LEN));
    }
    return v;
}

/* Its fragments wait for peer_push (now, or from progress when the BTL is full). */
static inline void vfrag_count_pending(mca_pml_dr2_peer_t *peer)
{
    peer->tx_pending++;
    mca_pml_dr2_peer_set_work(peer);
}

static mca_pml_dr2_vfrag_t *vfrag_create(mca_pml_dr2_txmsg_t *msg, uint8_t kind,
                                         uint64_t offset, uint64_t len)
{
    mca_pml_dr2_vfrag_t *v = vfrag_new(msg, kind, offset, len);

    if (NULL != v) {
        vfrag_count_pending(msg->peer);
    }
    return v;
}

void mca_pml_dr2_txmsg_finish(mca_pml_dr2_txmsg_t *msg, int error)
{
    mca_pml_dr2_peer_t *peer = msg->peer;

    if (msg->in_list) {
        opal_list_remove_item(MCA_PML_DR2_TX_AWAIT_MATCH == msg->state ? &peer->tx_await_match
                                                                        : &peer->tx_blocked,
                              &msg->super.super);
        if (MCA_PML_DR2_TX_AWAIT_MATCH == msg->state) {
            mca_pml_dr2.timers_armed--;
        }
        msg->in_list = false;
    }
    mca_pml_dr2_copy_release(msg->own, msg->owned);
    msg->owned = NULL;
    if (NULL != msg->req) {
        mca_pml_dr2_send_request_t *req = msg->req;
        msg->req = NULL;
        req->msg = NULL;
        mca_pml_dr2_send_request_complete(req, error);
    }
    mca_pml_dr2_txmsg_free(msg);
}

static void txmsg_maybe_done(mca_pml_dr2_txmsg_t *msg)
{
    if (MCA_PML_DR2_TX_DRAINING == msg->state && 0 == msg->vfrags_live) {
        mca_pml_dr2_txmsg_finish(msg, MPI_SUCCESS);
    }
}

/* How much of a rendezvous message its RNDV carries, from the message's end: what whole
 * fragments leave over, if that fits what the BTL sends eagerly (less our header, as
 * ob1's RNDV). Otherwise a 2^k-byte message ends in a short fragment of its own (1 MiB in
 * 32 KiB segments: 32 fragments of 32724 bytes and one of 1408), which costs a
 * fragment's overhead on both sides for a few bytes; in the RNDV they are placed while the
 * go-ahead travels. The end rather than the start, so that the fragments keep their
 * offsets (k * fragment) in the source: starting them 352 bytes in, 2 of the 8 fragments
 * of 256 KiB took 4 us instead of 1.1 to copy, where the two cores share no cache.
 * Nothing when the message is a whole number of fragments or its rest is larger: every
 * byte in the RNDV lengthens the round trip before the data flows (24-48 KiB over sm took
 * 5-9 % longer with 4 KiB in every RNDV). A synchronous send that fits goes whole. */
static uint64_t rndv_data_len(const mca_pml_dr2_txmsg_t *msg)
{
    uint64_t rest = msg->msg_len % msg->frag_len;

    return rest <= mca_pml_dr2_peer_rndv_data_max(msg->peer) ? rest : 0;
}

/* Fragments per vfrag: as many as an ACK mask covers; with several paths up, fewer, so that
 * a large message spreads over them (a vfrag travels on one path). */
static inline unsigned vfrag_max_frags(mca_pml_dr2_peer_t *peer)
{
    if (OPAL_UNLIKELY(peer->npaths > 1) && mca_pml_dr2_paths_up(peer) > 1) {
        return MCA_PML_DR2_STRIPE_FRAGS;
    }
    return PML_DR2_MAX_FRAGS_PER_VFRAG;
}

/* Create vfrags for what the message still has to send, as far as the window allows;
 * a message that does not fit waits on the peer's blocked list, in order. */
static void txmsg_schedule(mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    uint64_t per_vfrag = (uint64_t) msg->frag_len * vfrag_max_frags(peer);

    if (!msg->has_id) {
        mca_pml_dr2_vfrag_t *v;
        if (!window_has_room(peer)) {
            goto blocked;
        }
        if (msg->rndv) {
            msg->rndv_tail = (uint32_t) rndv_data_len(msg);
            v = vfrag_create(msg, PML_DR2_HDR_RNDV, msg->msg_len - msg->rndv_tail,
                             msg->rndv_tail);
        } else {
            uint64_t len = msg->msg_len < per_vfrag ? msg->msg_len : per_vfrag;
            v = vfrag_create(msg, PML_DR2_HDR_MATCH, 0, len);
            msg->next_offset = len;
        }
        if (NULL == v) {
            goto blocked;
        }
        msg->msg_id = v->id;
        msg->has_id = true;
        if (msg->rndv) {
            /* the rest of the data waits for the receiver's go-ahead */
            if (msg->in_list) {
                opal_list_remove_item(&peer->tx_blocked, &msg->super.super);
                msg->in_list = false;
            }
            return;
        }
    }
    while (msg->next_offset < msg->msg_len - msg->rndv_tail) {
        uint64_t left = msg->msg_len - msg->rndv_tail - msg->next_offset;
        uint64_t len = left < per_vfrag ? left : per_vfrag;
        if (!window_has_room(peer) || NULL == vfrag_create(msg, PML_DR2_HDR_FRAG, msg->next_offset, len)) {
            goto blocked;
        }
        msg->next_offset += len;
    }
    if (msg->in_list) {
        opal_list_remove_item(&peer->tx_blocked, &msg->super.super);
        msg->in_list = false;
    }
    msg->state = MCA_PML_DR2_TX_DRAINING;
    return;

blocked:
    if (!msg->in_list) {
        opal_list_append(&peer->tx_blocked, &msg->super.super);
        msg->in_list = true;
    }
}

void mca_pml_dr2_txmsg_schedule_blocked(mca_pml_dr2_peer_t *peer)
{
    while (!opal_list_is_empty(&peer->tx_blocked) && window_has_room(peer)) {
        mca_pml_dr2_txmsg_t *msg = (mca_pml_dr2_txmsg_t *) opal_list_get_first(&peer->tx_blocked);
        txmsg_schedule(msg);
        if (msg->in_list) {
            break; /* still blocked: keep the order */
        }
        txmsg_maybe_done(msg);
    }
}

/* The message's data (msg_len bytes at `data`) becomes its own copy, in inline_data. */
static inline void txmsg_copy_inline(mca_pml_dr2_txmsg_t *msg, const void *data)
{
    assert(msg->msg_len <= MCA_PML_DR2_INLINE_MAX);
    memcpy(msg->inline_data, data, msg->msg_len);
    msg->contig = msg->inline_data;
    msg->owned = msg->inline_data;
    msg->own = MCA_PML_DR2_OWN_INLINE;
}

/* A borrowed payload (MCA_PML_DR2_OWN_BORROWED) becomes the message's own copy: in the
 * copy buffer taken before it was sent, if it has one (`owned`), else in inline_data. */
static inline void txmsg_keep_copy(mca_pml_dr2_txmsg_t *msg)
{
    if (MCA_PML_DR2_OWN_BORROWED != msg->own) {
        return;
    }
    if (NULL != msg->owned) {
        memcpy(msg->owned, msg->contig, msg->msg_len);
        msg->contig = msg->owned;
        msg->own = MCA_PML_DR2_OWN_POOL;
        return;
    }
    txmsg_copy_inline(msg, msg->contig);
}

/* The message is all in one vfrag, `id`, about to be in flight: only its ACK is awaited. */
static inline void txmsg_single_vfrag(mca_pml_dr2_txmsg_t *msg, uint32_t id)
{
    msg->msg_id = id;
    msg->has_id = true;
    msg->next_offset = msg->msg_len;
    msg->state = MCA_PML_DR2_TX_DRAINING;
}

/* The message's only fragment was handed to the BTL: in flight, as after peer_push. */
static void vfrag_sent_whole(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    v->pending = 0;
    v->sent = 1;
    vfrag_arm_sent(peer, v);
}

/* After the first transmission of a message of one fragment: in flight if it went (the
 * ACKs it carried, `with_acks`, may have been all the peer's work; a TINY carries none),
 * otherwise pending, for peer_push (from progress), as any other fragment. */
static void vfrag_first_send_done(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v, int rc,
                                  bool with_acks)
{
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        vfrag_sent_whole(peer, v);
        if (with_acks) {
            mca_pml_dr2_peer_set_work(peer);
        }
        return;
    }
    vfrag_count_pending(peer);
    if (OMPI_ERR_UNREACH == rc) {
        mca_pml_dr2_path_unreachable(peer, v->path);
    }
}

/* The common small message as one EAGER segment, built and handed to the BTL before any
 * of the sender's bookkeeping: its vfrag is filled in, and the message's copy taken
 * (txmsg_keep_copy), while the segment is on its way. */
static void txmsg_send_eager_now(mca_pml_dr2_txmsg_t *msg, mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    unsigned char seg[MCA_PML_DR2_SMALL_SEGMENT_MAX];
    size_t len = 0;
    int inline_ack, acks = 0, rc;
    int path = mca_pml_dr2_path_pick(peer, msg->msg_len + PML_DR2_HDR_MAX_LEN);

    if (msg->msg_len <= MCA_PML_DR2_TINY_SEND_MAX && !peer->crosses_wire) {
        /* the ACKs we owe the peer wait for another segment, or go alone */
        len = mca_pml_dr2_txfrag_pack_tiny(msg, peer->tx_next_id, seg, sizeof(seg));
    }
    if (0 == len) {
        len = PML_DR2_HDR_EAGER_LEN + msg->msg_len;
        acks = mca_pml_dr2_txfrag_acks_to_piggyback(peer, len, true, &inline_ack);
        if (len + (size_t) (acks - inline_ack) * PML_DR2_HDR_ACK_LEN > sizeof(seg)) {
            acks = inline_ack + (int) ((sizeof(seg) - len) / PML_DR2_HDR_ACK_LEN);
        }
        /* its only fragment is the last one this round sends: ask for the ACK now */
        len = mca_pml_dr2_txfrag_pack_eager(msg, peer->tx_next_id, PML_DR2_HDR_FLAG_ACK_NOW, inline_ack, acks, seg,
                         sizeof(seg));
    }
    rc = mca_pml_dr2_peer_send_small(peer, path, seg, len);
    vfrag_start(v, msg, PML_DR2_HDR_MATCH, 0, msg->msg_len, path);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        mca_pml_dr2.counters.frags_sent++;
        mca_pml_dr2.path_counters.frags_sent[path]++;
        if (acks > 0) {
            mca_pml_dr2_peer_acks_sent(peer, acks);
        }
    }
    vfrag_first_send_done(peer, v, rc, acks > 0);
}

/* The common small message: an eager message of one fragment, with nothing of the peer
 * waiting to be sent before it. Its vfrag is created and its fragment sent at once, as
 * peer_push would send it, without entering the peer's pending count and work list only to
 * leave them again. The vfrag is then in flight exactly as after peer_push: kept until
 * acknowledged, resent on its timer or a NACK. False if the message does not qualify (or
 * no vfrag is available): the general path takes it. */
static bool txmsg_send_single(mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    mca_pml_dr2_vfrag_t *v;

    if (msg->rndv || msg->msg_len > msg->frag_len || !peer_takes_single_now(peer)
        || NULL == (v = vfrag_get())) {
        return false;
    }
    txmsg_single_vfrag(msg, peer->tx_next_id); /* the vfrag's, below */
    if (OPAL_LIKELY(mca_pml_dr2_txmsg_is_eager(msg))) {
        txmsg_send_eager_now(msg, v);
        return true;
    }
    vfrag_start(v, msg, PML_DR2_HDR_MATCH, 0, msg->msg_len,
                mca_pml_dr2_path_pick(peer, msg->msg_len + PML_DR2_HDR_MAX_LEN));
    vfrag_first_send_done(peer, v, mca_pml_dr2_txfrag_send(peer, v, 0, PML_DR2_HDR_FLAG_ACK_NOW),
                          true);
    return true;
}

bool mca_pml_dr2_txmsg_send_tiny(mca_pml_dr2_peer_t *peer, pml_dr2_match_hdr_t *match,
                                 const void *buf, uint32_t len)
{
    unsigned char seg[PML_DR2_HDR_TINY_LEN + MCA_PML_DR2_TINY_SEND_MAX];
    uint32_t frag_len = mca_pml_dr2_peer_max_payload(peer);
    mca_pml_dr2_txmsg_t *msg;
    mca_pml_dr2_vfrag_t *v;
    size_t seg_len;
    int rc, path;

    /* txmsg_send_single's and mca_pml_dr2_txmsg_is_eager's conditions, for this message
     * (no larger than MCA_PML_DR2_TINY_SEND_MAX, below MCA_PML_DR2_SMALL_CHECKED_MAX) */
    if (peer->crosses_wire || len > frag_len
        || !peer_takes_single_now(peer)) {
        return false;
    }
    match->vfrag = peer->tx_next_id; /* the vfrag's, below */
    seg_len = pml_dr2_hdr_pack_tiny_envelope(match, seg, sizeof(seg), buf, len);
    if (0 == seg_len) {
        return false; /* the envelope needs more than TINY's 16-bit fields */
    }
    /* both objects before the send: nothing goes out that could not be resent */
    msg = (mca_pml_dr2_txmsg_t *) opal_free_list_get_st(&mca_pml_dr2.txmsgs);
    v = vfrag_get();
    if (OPAL_UNLIKELY(NULL == msg || NULL == v)) {
        if (NULL != msg) {
            mca_pml_dr2_txmsg_free(msg);
        }
        if (NULL != v) {
            vfrag_free(v);
        }
        return false;
    }
    path = mca_pml_dr2_path_pick(peer, seg_len);
    rc = mca_pml_dr2_peer_send_small(peer, path, seg, seg_len);

    txmsg_construct(msg);
    msg->peer = peer;
    msg->ctx = match->ctx;
    msg->epoch = match->epoch;
    msg->src = match->src;
    msg->tag = match->tag;
    msg->seq = match->seq;
    msg->msg_len = len;
    msg->frag_len = frag_len;
    if (len > 0) {
        txmsg_copy_inline(msg, buf);
    }
    txmsg_single_vfrag(msg, match->vfrag);
    vfrag_start(v, msg, PML_DR2_HDR_MATCH, 0, len, path);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        mca_pml_dr2.counters.frags_sent++;
        mca_pml_dr2.path_counters.frags_sent[path]++;
    }
    vfrag_first_send_done(peer, v, rc, false);
    return true;
}

void mca_pml_dr2_txmsg_start(mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    bool sent;

    msg->state = MCA_PML_DR2_TX_SCHEDULING;
    sent = txmsg_send_single(msg);
    txmsg_keep_copy(msg); /* on every path: the caller's buffer is theirs again */
    if (sent) {
        return;
    }
    if (!opal_list_is_empty(&peer->tx_blocked)) {
        /* others are waiting for window space: queue behind them */
        opal_list_append(&peer->tx_blocked, &msg->super.super);
        msg->in_list = true;
    } else {
        txmsg_schedule(msg);
    }
    mca_pml_dr2_peer_push(peer);
}

bool mca_pml_dr2_txmsg_has_left(const mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    uint32_t seen = 0;
    opal_list_item_t *it;

    if (msg->in_list || MCA_PML_DR2_TX_DRAINING != msg->state) {
        return false;
    }
    /* its vfrags are the peer's newest: the last ones on tx_unacked */
    for (it = opal_list_get_last(&peer->tx_unacked);
         seen < msg->vfrags_live && it != opal_list_get_end(&peer->tx_unacked);
         it = opal_list_get_prev(it)) {
        const mca_pml_dr2_vfrag_t *v = (const mca_pml_dr2_vfrag_t *) it;

        if (v->msg != msg || v->pending > 0 || v->sent < v->nfrags
            || !mca_pml_dr2_path_has_sent(&peer->paths[v->path], v->local_mark)) {
            return false;
        }
        seen++;
    }
    return seen == msg->vfrags_live;
}

/* The receiver matched a rendezvous: send the data. */
static void txmsg_matched(mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_peer_t *peer = msg->peer;

    if (!msg->rndv || !msg->has_id) {
        return; /* a duplicate go-ahead: the data is already on its way */
    }
    if (msg->in_list && MCA_PML_DR2_TX_AWAIT_MATCH == msg->state) {
        opal_list_remove_item(&peer->tx_await_match, &msg->super.super);
        msg->in_list = false;
        mca_pml_dr2.timers_armed--;
    }
    msg->rndv = false; /* from now on: a message whose data is scheduled */
    msg->state = MCA_PML_DR2_TX_SCHEDULING;
    txmsg_schedule(msg);
    txmsg_maybe_done(msg);
}

static void vfrag_done(mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_txmsg_t *msg = v->msg;
    mca_pml_dr2_peer_t *peer = msg->peer;

    vfrag_leave_flight(peer, v);
    pml_dr2_path_acked(&peer->path_state[v->path], vfrag_wire_bytes(v), mca_pml_dr2.now_us);
    if (PML_DR2_HDR_RNDV == v->kind && msg->rndv) {
        /* delivered but not matched yet: wait for the receiver's go-ahead, with a slow
         * timer that resends the RNDV in case the go-ahead is lost */
        msg->state = MCA_PML_DR2_TX_AWAIT_MATCH;
        msg->match_retries = 0;
        msg->match_unanswered = 0;
        msg->match_deadline_us = mca_pml_dr2.now_us + path_backoff_us(peer, v->path, 2);
        arm_deadline(msg->match_deadline_us);
        opal_list_append(&peer->tx_await_match, &msg->super.super);
        msg->in_list = true;
        mca_pml_dr2.timers_armed++;
    }
    vfrag_free(v);
    txmsg_maybe_done(msg);
    if (!opal_list_is_empty(&peer->tx_blocked)) {
        mca_pml_dr2_txmsg_schedule_blocked(peer); /* the window has room again */
    }
    mca_pml_dr2_peer_set_work(peer);
}

void mca_pml_dr2_vfrag_move(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v, int to)
{
    uint64_t bytes = vfrag_wire_bytes(v);

    pml_dr2_path_unassign(&peer->path_state[v->path], bytes);
    pml_dr2_path_assign(&peer->path_state[to], bytes);
    v->path = (uint8_t) to;
    v->local_mark = peer->paths[to].tx_handed;
}

/* Send the pending fragments of one vfrag, lowest first, on its path. Returns false when
 * its path takes no more now (pml_dr2_send_depth reached, or the BTL is full). */
static bool vfrag_push(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_path_t *path;

    if (OPAL_UNLIKELY(!peer->path_state[v->path].up)) {
        mca_pml_dr2_vfrag_move(peer, v, mca_pml_dr2_path_live(peer, v->path));
    } else if (OPAL_UNLIKELY(peer->paths[v->path].wdog_expired)) {
        int to = mca_pml_dr2_path_instead_of_stuck(peer, v->path, vfrag_wire_bytes(v));
        if (to >= 0) {
            mca_pml_dr2_vfrag_move(peer, v, to);
            v->retransmitted = v->retransmitted || 0 != v->sent; /* Karn: either path acks */
        }
    }
    path = &peer->paths[v->path];
    while (0 != v->pending) {
        int index = pml_dr2_ackmask_lowest(v->pending);
        uint64_t bit = pml_dr2_ackmask_bit((unsigned) index);
        uint8_t flags = 0;
        int rc;

        if (0 != mca_pml_dr2.send_depth
            && mca_pml_dr2_path_inflight(path) >= mca_pml_dr2.send_depth) {
            return false; /* the BTL holds enough of ours: the rest goes from progress */
        }
        if (v->sent & bit) {
            flags |= PML_DR2_HDR_FLAG_RETRANSMIT;
        }
        /* Ask for an ACK with the last fragment this round sends of the vfrag: it
         * then shows any gap at once (fast retransmit), not after a timeout. */
        if (0 == (v->pending & ~bit)) {
            flags |= PML_DR2_HDR_FLAG_ACK_NOW;
        }
        rc = mca_pml_dr2_txfrag_send(peer, v, (unsigned) index, flags);
        if (OMPI_SUCCESS != rc) {
            if (OMPI_ERR_UNREACH == rc) {
                mca_pml_dr2_path_unreachable(peer, v->path);
            }
            return false; /* the BTL is full: the rest goes from progress */
        }
        if (v->sent & bit) {
            mca_pml_dr2.counters.retransmits++;
        }
        v->pending &= ~bit;
        v->sent |= bit;
        if (0 == v->pending) {
            peer->tx_pending--;
            vfrag_rearm(peer, v);
        }
    }
    return true;
}

void mca_pml_dr2_peer_push(mca_pml_dr2_peer_t *peer)
{
    mca_pml_dr2_vfrag_t *v, *next;
    unsigned full = 0; /* bit i: path i takes no more now */

    if (0 == peer->tx_pending || peer->failed) {
        return;
    }
    OPAL_LIST_FOREACH_SAFE (v, next, &peer->tx_unacked, mca_pml_dr2_vfrag_t) {
        if (0 == v->pending || (full & (1u << v->path))) {
            continue;
        }
        if (!vfrag_push(peer, v)) {
            if (peer->failed || 1 == peer->npaths) {
                break;
            }
            /* the vfrags of the other paths still go */
            full |= 1u << v->path;
            if (full == (1u << peer->npaths) - 1) {
                break;
            }
        }
        if (0 == peer->tx_pending) {
            break;
        }
    }
    mca_pml_dr2_peer_set_work(peer);
}

/* ---- ACK and NACK ---------------------------------------------------------------------- */

static mca_pml_dr2_vfrag_t *vfrag_lookup(mca_pml_dr2_peer_t *peer, uint32_t id)
{
    mca_pml_dr2_vfrag_t *v = *vfrag_slot(peer, id);

    return NULL != v && v->id == id ? v : NULL;
}

void mca_pml_dr2_vfrag_ack(mca_pml_dr2_peer_t *peer, uint32_t vfrag, uint64_t mask, bool matched)
{
    mca_pml_dr2_vfrag_t *v = vfrag_lookup(peer, vfrag);
    uint64_t full, newly;

    mca_pml_dr2.counters.acks_received++;
    if (NULL == v) {
        mca_pml_dr2_txmsg_t *msg;
        OPAL_LIST_FOREACH (msg, &peer->tx_await_match, mca_pml_dr2_txmsg_t) {
            if (msg->msg_id == vfrag) {
                if (matched) {
                    txmsg_matched(msg);
                    mca_pml_dr2_peer_push(peer);
                } else {
                    msg->match_unanswered = 0; /* held, not matched yet: the peer is there */
                }
                return;
            }
        }
        mca_pml_dr2.counters.duplicates++; /* an ACK repeated after the vfrag completed */
        return;
    }
    full = pml_dr2_ackmask_full(v->nfrags);
    if (!pml_dr2_ackmask_valid(mask, v->nfrags) || (mask & ~v->sent) != 0) {
        mca_pml_dr2.counters.malformed++; /* acknowledges fragments never sent */
        return;
    }
    newly = mask & ~v->acked;
    if (0 != newly && !v->retransmitted && 0 != v->deadline_us && UINT64_MAX != v->deadline_us
        && mca_pml_dr2.now_us >= v->sent_at_us) {
        /* armed: sent_at_us is the first clock reading after the send */
        pml_dr2_path_rtt_sample(&peer->path_state[v->path], mca_pml_dr2.now_us - v->sent_at_us,
                                &mca_pml_dr2.path_params);
    }
    if (0 != newly) {
        /* its path delivers (pml_dr2_path_timeout_says_down) */
        pml_dr2_path_acked(&peer->path_state[v->path], 0, mca_pml_dr2.now_us);
    }
    v->acked |= mask;
    if (0 != (v->pending & mask)) {
        v->pending &= ~mask;
        if (0 == v->pending) {
            peer->tx_pending--;
        }
    }
    if (matched && PML_DR2_HDR_RNDV == v->kind) {
        txmsg_matched(v->msg);
    }
    if (pml_dr2_ackmask_complete(full, v->acked)) {
        vfrag_done(v);
    } else {
        /* Fragments below the highest one the receiver holds were sent before it on an
         * ordered path and are missing: lost. Resend them now, once per timer period. */
        int highest = 63 - __builtin_clzll(v->acked);
        uint64_t below = pml_dr2_ackmask_full((unsigned) highest);
        uint64_t holes = below & v->sent & ~v->acked & ~v->pending & ~v->fast_resent;
        if (0 != holes) {
            mca_pml_dr2.counters.fast_retransmits += pml_dr2_ackmask_count(holes);
            v->fast_resent |= holes;
            vfrag_add_pending(peer, v, holes);
        }
        if (0 != newly && 0 == v->pending) {
            /* progress restarts the timer */
            vfrag_rearm(peer, v);
        }
    }
    mca_pml_dr2_peer_push(peer);
}

void mca_pml_dr2_vfrag_revoked(mca_pml_dr2_peer_t *peer, uint32_t vfrag)
{
    mca_pml_dr2_vfrag_t *v = vfrag_lookup(peer, vfrag);
    mca_pml_dr2_txmsg_t *msg = NULL, *m;

    mca_pml_dr2.counters.acks_received++;
    if (NULL != v) {
        if (PML_DR2_HDR_RNDV == v->kind && v->msg->rndv) {
            msg = v->msg; /* its plain ACK was lost or is still to come */
        }
    } else {
        OPAL_LIST_FOREACH (m, &peer->tx_await_match, mca_pml_dr2_txmsg_t) {
            if (m->msg_id == vfrag) {
                msg = m;
                break;
            }
        }
    }
    if (NULL == msg) {
        mca_pml_dr2.counters.duplicates++; /* repeated, or about a message done with */
        return;
    }
    mca_pml_dr2_txmsg_abort(msg, mca_pml_dr2_send_request_dropped_error(msg->req));
}

/* See mca_pml_dr2_peer_defer_ack. */
void mca_pml_dr2_vfrag_ack_deferred(mca_pml_dr2_peer_t *peer)
{
    int n = peer->nacks_in;

    /* emptied first: handling one may fail the peer, which forgets the rest */
    peer->nacks_in = 0;
    for (int i = 0; i < n && !peer->failed; i++) {
        mca_pml_dr2_vfrag_ack(peer, peer->acks_in[i].vfrag, peer->acks_in[i].mask, false);
    }
    mca_pml_dr2_peer_set_work(peer);
}

void mca_pml_dr2_vfrag_nack(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr)
{
    mca_pml_dr2_vfrag_t *v = vfrag_lookup(peer, hdr->ack.vfrag);
    uint64_t resend;

    mca_pml_dr2.counters.nacks_received++;
    if (NULL == v) {
        mca_pml_dr2.counters.duplicates++;
        return;
    }
    if (!pml_dr2_ackmask_valid(hdr->ack.mask, v->nfrags)) {
        mca_pml_dr2.counters.malformed++;
        return;
    }
    resend = pml_dr2_ackmask_to_resend(pml_dr2_ackmask_full(v->nfrags), v->acked, hdr->ack.mask)
             & v->sent & ~v->pending;
    vfrag_add_pending(peer, v, resend);
    mca_pml_dr2_peer_push(peer);
}

