/*
 * ompi-resilience: pml/dr2 sender side, what its files share (pml_dr2_vfrag.c: vfrags and
 * their ACKs; pml_dr2_txfrag.c: fragments on the wire; pml_dr2_vfrag_timer.c: timers,
 * failover, abandoned messages). Not for the rest of the PML: pml_dr2_vfrag.h is.
 */
#ifndef PML_DR2_VFRAG_SHARED_H
#define PML_DR2_VFRAG_SHARED_H

#include <assert.h>

#include "pml_dr2.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_vfrag.h"

static inline void vfrag_free(mca_pml_dr2_vfrag_t *v)
{
    opal_free_list_return_st(&mca_pml_dr2.vfrags, &v->super);
}

/* ---- vfrags in flight by id (peer->tx_slots) ----------------------------------------- */

static inline mca_pml_dr2_vfrag_t **vfrag_slot(mca_pml_dr2_peer_t *peer, uint32_t id)
{
    return &peer->tx_slots[id & (mca_pml_dr2.window - 1)];
}

static inline void vfrag_index(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_vfrag_t **slot = vfrag_slot(peer, v->id);

    assert(NULL == *slot); /* the window check keeps ids in flight apart */
    *slot = v;
}

static inline void vfrag_unindex(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_vfrag_t **slot = vfrag_slot(peer, v->id);

    if (*slot == v) {
        *slot = NULL;
    }
}

/* ---- timers -------------------------------------------------------------------------- */

static inline void arm_deadline(uint64_t deadline)
{
    if (deadline < mca_pml_dr2.next_deadline_us) {
        mca_pml_dr2.next_deadline_us = deadline;
    }
}

/* (Re)start the vfrag's ACK timer: lazily, once the BTL has completed what was handed to
 * it so far, the next progress call stamps it with the clock (mca_pml_dr2_t.now_us). */
static inline void vfrag_rearm(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    v->local_mark = peer->paths[v->path].tx_handed;
    if (0 != v->deadline_us) {
        v->deadline_us = 0;
        peer->to_arm++;
        mca_pml_dr2_peer_need_arming(peer);
    }
}

static inline void vfrag_forget_timer(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    if (0 == v->deadline_us) {
        peer->to_arm--;
    }
}

/* Exponential backoff on the ACK timeout of a vfrag on one of the peer's paths, capped:
 * the longest of the paths up (pml_dr2_path_slowest says why). */
static inline uint64_t path_backoff_us(const mca_pml_dr2_peer_t *peer, int path,
                                       uint32_t retries)
{
    if (OPAL_UNLIKELY(peer->npaths > 1)) {
        path = pml_dr2_path_slowest(peer->path_state, peer->npaths, path);
    }
    return pml_dr2_path_backoff_us(&peer->path_state[path], retries, &mca_pml_dr2.path_params);
}

/* The same for a timer of the peer that no path carries (a rendezvous waiting for its
 * match): on the path a small segment would take now. */
static inline uint64_t backoff_us(mca_pml_dr2_peer_t *peer, uint32_t retries)
{
    return path_backoff_us(peer, mca_pml_dr2_path_live(peer, 0), retries);
}

/* The vfrag's first transmission was just handed to the BTL: its ACK timer starts now,
 * from a fresh clock reading, if the path's BTL has completed every descriptor of ours
 * (the fragment went by the immediate send, which completes at once), as the next
 * progress call would have armed it (vfrag_rearm), without that call's clock reading and
 * walk of the peer's list; otherwise lazily. */
static inline void vfrag_arm_sent(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    mca_pml_dr2_path_t *path = &peer->paths[v->path];
    uint64_t now;

    if (OPAL_UNLIKELY(0 == v->deadline_us || 0 != v->retries)
        || !mca_pml_dr2_path_locally_complete(path, path->tx_handed)) {
        vfrag_rearm(peer, v);
        return;
    }
    v->local_mark = path->tx_handed;
    now = mca_pml_dr2.now_us = mca_pml_dr2_now_us();
    if (0 == v->sent_at_us) {
        v->sent_at_us = now; /* the RTT sample's start */
    }
    v->armed_at_us = now;
    v->deadline_us = now + path_backoff_us(peer, v->path, 0);
    arm_deadline(v->deadline_us);
}

/* What a vfrag weighs on its path: payload and headers. */
static inline uint64_t vfrag_wire_bytes(const mca_pml_dr2_vfrag_t *v)
{
    return v->len + (uint64_t) v->nfrags * PML_DR2_HDR_MAX_LEN;
}

static inline void vfrag_add_pending(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v,
                                     uint64_t bits)
{
    if (0 == bits) {
        return;
    }
    if (0 == v->pending) {
        peer->tx_pending++;
    }
    v->pending |= bits;
    v->retransmitted = true;
    mca_pml_dr2_peer_set_work(peer);
}

/* The vfrag leaves flight (acknowledged whole, or its message abandoned): off the peer's
 * list, index, pending count and timers, and its message's count. The caller settles its
 * path's accounting (acknowledged or unassigned) and frees it. */
static inline void vfrag_leave_flight(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v)
{
    opal_list_remove_item(&peer->tx_unacked, &v->super.super);
    vfrag_unindex(peer, v);
    if (0 != v->pending) {
        peer->tx_pending--;
    }
    vfrag_forget_timer(peer, v);
    mca_pml_dr2.timers_armed--;
    v->msg->vfrags_live--;
}

/* ---- across the sender's files ------------------------------------------------------------ */

/* The vfrag moves from its path to path `to` (its old path went down). */
void mca_pml_dr2_vfrag_move(mca_pml_dr2_peer_t *peer, mca_pml_dr2_vfrag_t *v, int to);

/* The message is over: off its lists, its copy released, its request completed with
 * `error` (MPI_SUCCESS or not), the message freed. */
void mca_pml_dr2_txmsg_finish(mca_pml_dr2_txmsg_t *msg, int error);

/* Messages waiting for window space go, in order, while there is room. */
void mca_pml_dr2_txmsg_schedule_blocked(mca_pml_dr2_peer_t *peer);

/* A small message whose one fragment holds it whole goes as an EAGER header: one checksum
 * over header and payload, and the first ACK we owe the peer inside the header. On a path
 * without payload checksums (pml_dr2_checksum) only up to MCA_PML_DR2_SMALL_CHECKED_MAX:
 * EAGER's checksum always covers the payload. */
static inline bool mca_pml_dr2_txmsg_is_eager(const mca_pml_dr2_txmsg_t *msg)
{
    return !msg->rndv && msg->msg_len <= msg->frag_len && msg->msg_len <= MCA_PML_DR2_EAGER_HDR_MAX
           && 0 == msg->match_flags
           && (msg->peer->tx_crc || msg->msg_len <= MCA_PML_DR2_SMALL_CHECKED_MAX);
}

/* Fragment `index` of vfrag v (header, payload, piggybacked ACKs) to the BTL of its path. */
int mca_pml_dr2_txfrag_send(mca_pml_dr2_peer_t *peer, const mca_pml_dr2_vfrag_t *v,
                            unsigned index, uint8_t flags);

/* The EAGER segment of message `msg` (vfrag `id`): header, payload, then the peer's queued
 * ACKs 0..acks-1, the first inside the header if `inline_ack`. Returns its length. */
size_t mca_pml_dr2_txfrag_pack_eager(const mca_pml_dr2_txmsg_t *msg, uint32_t id, uint8_t flags,
                                     int inline_ack, int acks, unsigned char *buf, size_t len);

/* The same message as a TINY (pml_dr2_hdr.h), when its envelope fits one; 0 if not. */
size_t mca_pml_dr2_txfrag_pack_tiny(const mca_pml_dr2_txmsg_t *msg, uint32_t id,
                                    unsigned char *buf, size_t len);

/* How many of the ACKs we owe the peer ride on a data segment of `len` bytes (`eager`: an
 * EAGER header, which holds one of them itself, in *inline_ack). */
int mca_pml_dr2_txfrag_acks_to_piggyback(mca_pml_dr2_peer_t *peer, size_t len, bool eager,
                                         int *inline_ack);

#endif /* PML_DR2_VFRAG_SHARED_H */
