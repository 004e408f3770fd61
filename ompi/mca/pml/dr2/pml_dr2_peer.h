/*
 * ompi-resilience: pml/dr2 peers.
 *
 * One peer per remote process (not per communicator): vfrag ids, the duplicate window and
 * the ACK queue are properties of the process, whichever path (BTL, pml_dr2_btlpath.h) a
 * fragment or ACK travels on; round trips, timers and health are the paths'. Communicators
 * only add matching state on top (pml_dr2_comm.h).
 */
#ifndef MCA_PML_DR2_PEER_H
#define MCA_PML_DR2_PEER_H

#include "pml_dr2.h"
#include "pml_dr2_btlpath.h"
#include "pml_dr2_copychoice.h"
#include "pml_dr2_window.h"

BEGIN_C_DECLS

/* A pending ACK or NACK to this peer, merged with others for the same vfrag until the next
 * flush (coalescing: ACK masks only ever grow, so merging is a union). */
typedef struct {
    uint32_t vfrag;
    uint64_t mask;
    uint8_t type;  /* PML_DR2_HDR_ACK or PML_DR2_HDR_NACK */
    uint8_t flags; /* PML_DR2_HDR_FLAG_MATCHED */
    uint8_t path;  /* sent alone, it goes back on the path the acknowledged fragment came
                    * on (which delivered it), while that path is up */
} mca_pml_dr2_pending_ack_t;

typedef struct mca_pml_dr2_peer_t {
    opal_list_item_t super;
    struct ompi_proc_t *proc;
    mca_bml_base_endpoint_t *bml_endpoint;
    bool failed; /* declared unreachable: nothing is sent any more */
    bool failure_handled; /* its messages abandoned, ULFM told */
    bool closing; /* MPI_Finalize: del_procs is tearing the peer down */
    bool gone;    /* during teardown, a BTL failed a send to it: it has left already */
    /* ---- paths: one per BTL that reaches it (pml_dr2_btlpath.h) ---- */
    mca_pml_dr2_path_t paths[PML_DR2_PATH_MAX];
    pml_dr2_path_state_t path_state[PML_DR2_PATH_MAX];
    int npaths;
    int rx_path;           /* the path the segment being received came on */
    size_t eager_limit_min;/* the smallest eager limit of its BTLs: a segment sent eagerly
                            * must fit any path, it may be resent on another */
    size_t max_send_min;   /* the same for the largest send */
    uint32_t max_payload;  /* mca_pml_dr2_peer_max_payload, fixed once the paths are set up */
    size_t eager_limit;    /* mca_pml_dr2_peer_eager_limit, likewise */

    /* ---- sending ---- */
    bool tx_crc;               /* payloads we send it carry a CRC32C (pml_dr2_checksum_on_btl);
                                * those of small messages always do (TINY, EAGER:
                                * MCA_PML_DR2_SMALL_CHECKED_MAX) */
    bool crosses_wire;         /* one of its paths crosses a wire (not sm or self); if none
                                * does, small messages may go as TINY (peer_choose_checksum) */
    bool tx_local;             /* small messages go as LOCAL (no path crosses a wire:
                                * pml_dr2_local.h) */
    uint32_t tx_next_id;       /* next vfrag id */
    pml_dr2_id_guard_t tx_id_guard; /* ids of tx_await_match ahead (pml_dr2_window.h) */
    opal_list_t tx_unacked;    /* mca_pml_dr2_vfrag_t not fully acknowledged, by id */
    size_t tx_pending;         /* vfrags in tx_unacked with fragments waiting to be sent */
    opal_list_t tx_blocked;    /* mca_pml_dr2_txmsg_t waiting for window space */
    opal_list_t tx_await_match;/* rendezvous delivered, waiting for the receiver's match */
    /* id -> vfrag, for ACK lookup: slot id % window. The window check before every new
     * vfrag keeps the ids in flight within one window of each other, so no two share a
     * slot; an ACK for an id no longer in flight finds a slot that is empty or holds
     * another id. Cheaper than a hash table on the path of every ACK. */
    struct mca_pml_dr2_vfrag_t **tx_slots;
    pml_dr2_copy_choice_t tx_copy; /* how fragment payloads are copied (pml_dr2_copy auto) */

    /* ---- receiving ---- */
    pml_dr2_window_t rx_window;  /* completed vfrag ids */
    opal_hash_table_t rx_vfrags; /* id -> mca_pml_dr2_rx_vfrag_t, vfrags being received */
    opal_hash_table_t rx_msgs;   /* msg id -> mca_pml_dr2_rxmsg_t, messages being received */

    mca_pml_dr2_pending_ack_t acks[MCA_PML_DR2_MAX_PENDING_ACKS];
    int nacks;
    uint64_t acks_since; /* progress pass in which the oldest pending ACK was queued */
    bool acks_lazy;      /* every pending ACK was queued lazily: they may wait longer */

    /* ACKs from the peer (inside its EAGER headers or alone), not handled yet: releasing
     * what they acknowledge waits for a later progress call (mca_pml_dr2_peer_defer_ack) */
    mca_pml_dr2_pending_ack_t acks_in[MCA_PML_DR2_MAX_DEFERRED_ACKS];
    int nacks_in;
    uint64_t acks_in_since; /* progress pass in which the oldest of them arrived */

    /* ---- keepalive (pml_dr2_keepalive.h) ---- */
    bool ka_awaited;     /* a posted receive may wait for it (set by the last check) */
    bool ka_heard;       /* something arrived from it since the last check */
    uint32_t ka_probes;  /* keepalive probes unanswered */
    uint64_t ka_next_us; /* next keepalive probe, while it is silent */

    /* ---- timers ---- */
    uint32_t to_arm;     /* vfrags in tx_unacked with deadline 0 (to be armed) */
    bool on_arm_list;
    struct mca_pml_dr2_peer_t *arm_next;
    bool has_work; /* on mca_pml_dr2.work_list, counted in mca_pml_dr2.peers_with_work */
    struct mca_pml_dr2_peer_t *work_prev, *work_next;
} mca_pml_dr2_peer_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_peer_t);

/* The peer of proc, created on first use. NULL if the BML cannot reach it. */
mca_pml_dr2_peer_t *mca_pml_dr2_peer_get(struct ompi_proc_t *proc);
/* Map the BTL endpoints of the peer's BML endpoint to the peer (idempotent). */
void mca_pml_dr2_peer_map_endpoints(mca_pml_dr2_peer_t *peer);
/* The peer that owns a receive descriptor's endpoint, or NULL. */
mca_pml_dr2_peer_t *mca_pml_dr2_peer_from_endpoint(struct mca_btl_base_endpoint_t *ep);
mca_pml_dr2_peer_t *mca_pml_dr2_peer_lookup_endpoint(struct mca_btl_base_endpoint_t *ep);

/* Queue an ACK/NACK (merged with one already queued for the same vfrag). */
void mca_pml_dr2_peer_queue_ack(mca_pml_dr2_peer_t *peer, uint8_t type, uint32_t vfrag,
                                uint64_t mask, uint8_t flags);
/* Send the queued ACKs/NACKs, packed back to back in as few segments as possible. */
void mca_pml_dr2_peer_flush_acks(mca_pml_dr2_peer_t *peer);

/* Piggybacking: how many queued ACKs fit in `room` bytes; write the first `n` of them at
 * `buf` (returns the bytes written); forget the first `n` once they were sent. */
static inline int mca_pml_dr2_peer_acks_fitting(const mca_pml_dr2_peer_t *peer, size_t room)
{
    size_t n = room / PML_DR2_HDR_ACK_LEN;
    return n < (size_t) peer->nacks ? (int) n : peer->nacks;
}
size_t mca_pml_dr2_peer_encode_acks(mca_pml_dr2_peer_t *peer, int first, int n,
                                    unsigned char *buf, size_t len);
void mca_pml_dr2_peer_acks_sent(mca_pml_dr2_peer_t *peer, int n);

/* The vfrags of the peer need their ACK timer (re)armed at the next progress call. */
static inline void mca_pml_dr2_peer_need_arming(mca_pml_dr2_peer_t *peer)
{
    if (!peer->on_arm_list) {
        peer->on_arm_list = true;
        peer->arm_next = mca_pml_dr2.arm_list;
        mca_pml_dr2.arm_list = peer;
    }
}

/* Handle the peer's deferred ACKs (mca_pml_dr2_peer_defer_ack); pml_dr2_vfrag.c. */
void mca_pml_dr2_vfrag_ack_deferred(mca_pml_dr2_peer_t *peer);

/* Put the peer on, or take it off, the progress loop's list of peers with work. */
void mca_pml_dr2_peer_work_changed(mca_pml_dr2_peer_t *peer, bool work);

/* Progress calls the peer's pending ACKs may still wait for a segment to ride on. */
static inline uint64_t mca_pml_dr2_peer_ack_wait(const mca_pml_dr2_peer_t *peer)
{
    return peer->acks_lazy ? MCA_PML_DR2_LAZY_ACK_WAIT_PASSES : MCA_PML_DR2_ACK_WAIT_PASSES;
}

/* The first progress pass at which progress has something to do for the peer: fragments
 * to push at once; its deferred ACKs one full pass after the oldest arrived
 * (mca_pml_dr2_peer_defer_ack); its queued ACKs when they have waited long enough. */
static inline uint64_t mca_pml_dr2_peer_work_due(const mca_pml_dr2_peer_t *peer)
{
    uint64_t due = UINT64_MAX;

    if (peer->tx_pending > 0) {
        return 0;
    }
    if (peer->nacks_in > 0) {
        due = peer->acks_in_since + 2;
    }
    if (peer->nacks > 0 && peer->acks_since + mca_pml_dr2_peer_ack_wait(peer) < due) {
        due = peer->acks_since + mca_pml_dr2_peer_ack_wait(peer);
    }
    return due;
}

/* Progress must not skip its work list past the pass the peer's work is due at. */
static inline void mca_pml_dr2_peer_note_work_due(const mca_pml_dr2_peer_t *peer)
{
    uint64_t due = mca_pml_dr2_peer_work_due(peer);

    if (due < mca_pml_dr2.work_due_pass) {
        mca_pml_dr2.work_due_pass = due;
    }
}

/* Mark/unmark the peer as having work for the progress loop. Called after every change of
 * its ACK queue or pending fragments: inline, since the state rarely changes. */
static inline void mca_pml_dr2_peer_set_work(mca_pml_dr2_peer_t *peer)
{
    bool work = peer->nacks > 0 || peer->tx_pending > 0 || peer->nacks_in > 0;

    if (work != peer->has_work) {
        mca_pml_dr2_peer_work_changed(peer, work);
    }
    if (work) {
        mca_pml_dr2_peer_note_work_due(peer);
    }
}

/* Append an ACK/NACK to the peer's queue, which has room (mca_pml_dr2_peer_queue_ack
 * merges, and makes room, first). */
static inline void mca_pml_dr2_peer_append_ack(mca_pml_dr2_peer_t *peer, uint8_t type,
                                               uint32_t vfrag, uint64_t mask, uint8_t flags,
                                               bool lazy)
{
    mca_pml_dr2_pending_ack_t *a = &peer->acks[peer->nacks];

    if (0 == peer->nacks) {
        peer->acks_since = mca_pml_dr2.progress_pass;
        peer->acks_lazy = lazy;
    } else {
        peer->acks_lazy = peer->acks_lazy && lazy;
    }
    a->vfrag = vfrag;
    a->mask = mask;
    a->type = type;
    a->flags = flags;
    a->path = (uint8_t) peer->rx_path;
    peer->nacks++;
    mca_pml_dr2_peer_set_work(peer);
}

/* Queue the ACK of a small message's vfrag just received whole for the first time, whose
 * sender waits for nothing (it completed at buffering): nothing queued can be for the same
 * vfrag, so no merge to look for, and it may wait MCA_PML_DR2_LAZY_ACK_WAIT_PASSES. */
static inline void mca_pml_dr2_peer_queue_lazy_ack(mca_pml_dr2_peer_t *peer, uint32_t vfrag)
{
    if (OPAL_UNLIKELY(peer->nacks == MCA_PML_DR2_MAX_PENDING_ACKS || peer->failed)) {
        mca_pml_dr2_peer_queue_ack(peer, PML_DR2_HDR_ACK, vfrag, 1, 0);
        return;
    }
    mca_pml_dr2_peer_append_ack(peer, PML_DR2_HDR_ACK, vfrag, 1, 0, true);
}

/* An ACK (without the MATCHED flag) that arrived inside an EAGER header or alone: handled
 * from a later progress call (mca_pml_dr2_vfrag_ack_deferred), not now. A receive that
 * completes in the same BTL progress call then does not wait for the sender-side
 * bookkeeping of the ACK (releasing the acknowledged message, timers), which happens while
 * the process waits anyway: in a ping-pong that is the next receive. The ACK timers of the
 * peer are checked only after its deferred ACKs are handled, so a deferral never causes a
 * resend. */
static inline void mca_pml_dr2_peer_defer_ack(mca_pml_dr2_peer_t *peer, uint32_t vfrag,
                                              uint64_t mask)
{
    mca_pml_dr2_pending_ack_t *a;

    if (OPAL_UNLIKELY(MCA_PML_DR2_MAX_DEFERRED_ACKS == peer->nacks_in)) {
        mca_pml_dr2_vfrag_ack_deferred(peer);
    }
    if (0 == peer->nacks_in) {
        peer->acks_in_since = mca_pml_dr2.progress_pass;
    }
    a = &peer->acks_in[peer->nacks_in++];
    a->vfrag = vfrag;
    a->mask = mask;
    mca_pml_dr2_peer_set_work(peer);
}

/* Send one segment of `len` bytes that `fill` writes into, on the peer's path `path`.
 * `may_overtake`: the segment may arrive before segments sent earlier (ACKs; the only
 * fragment of its vfrag): then a small one may take the BTL's immediate send, which on
 * btl/sm is a different queue (fragments of one vfrag must keep their order: a gap below
 * the highest fragment received is taken as a loss, see mca_pml_dr2_vfrag_ack).
 * Returns OMPI_SUCCESS, OMPI_ERR_OUT_OF_RESOURCE (try again later) or an error. */
typedef size_t (*mca_pml_dr2_fill_fn_t)(void *ctx, unsigned char *buf, size_t len);
int mca_pml_dr2_peer_send_segment(mca_pml_dr2_peer_t *peer, int path, size_t len,
                                  bool may_overtake, mca_pml_dr2_fill_fn_t fill, void *ctx);

/* Send a fragment whose payload the BTL writes from where it lies: `head` (hdr_len bytes,
 * dr2's header) goes into the descriptor, the `len` bytes at `payload` are not copied.
 * Only on a path with in_place set (btl/tcp). The BTL reads the payload until it completes
 * the descriptor, which may be after the send completed: goes_in_place in
 * pml_dr2_txfrag.c says which memory that is safe for. Returns as
 * mca_pml_dr2_peer_send_segment, or OMPI_ERR_NOT_SUPPORTED if the BTL would not describe
 * the fragment as one header and its payload (then send it by copy). */
int mca_pml_dr2_peer_send_in_place(mca_pml_dr2_peer_t *peer, int path, const unsigned char *head,
                                   size_t hdr_len, const unsigned char *payload, size_t len);

/* The largest segment sent from a buffer of the caller's (mca_pml_dr2_peer_send_small, and
 * the immediate sends of mca_pml_dr2_peer_send_segment): one small eager message with its
 * header and a few piggybacked ACKs (MCA_PML_DR2_EAGER_HDR_MAX). On the stack: 8 KiB. */
#define MCA_PML_DR2_SMALL_SEGMENT_MAX 8192

/* Send a segment of at most MCA_PML_DR2_SMALL_SEGMENT_MAX bytes already built in `buf`
 * (fault injection may change it), which may overtake segments sent earlier (see
 * may_overtake above). Returns as mca_pml_dr2_peer_send_segment. */
int mca_pml_dr2_peer_send_small(mca_pml_dr2_peer_t *peer, int path, unsigned char *buf,
                                size_t len);

/* The same, only if the BTL takes the segment at once (its immediate send): OMPI_SUCCESS
 * when it has left this process, OMPI_ERR_WOULD_BLOCK when nothing was sent because the
 * BTL would have queued it (btl/sm with its fast box to that peer full), OMPI_ERR_UNREACH
 * for a failed peer. No fault injection: for messages outside the protocol. */
int mca_pml_dr2_peer_send_small_now(mca_pml_dr2_peer_t *peer, int path, unsigned char *buf,
                                    size_t len);

/* Its process is not known to have failed: what ompi_comm_is_proc_active says of any rank
 * that is this peer (ULFM marks the process's ompi_proc_t, the object every group and the
 * peer share), without the group lookup, on the path of every small send. */
static inline bool mca_pml_dr2_peer_proc_active(const mca_pml_dr2_peer_t *peer)
{
    return ompi_proc_is_active(peer->proc);
}

/* Descriptors of ours the BTLs of its paths that are up hold and have not completed yet
 * (a path that is down may hold some for ever: a silent cut fills its socket). */
static inline uint64_t mca_pml_dr2_peer_inflight(const mca_pml_dr2_peer_t *peer)
{
    uint64_t n = 0;

    for (int i = 0; i < peer->npaths; i++) {
        if (peer->path_state[i].up) {
            n += mca_pml_dr2_path_inflight(&peer->paths[i]);
        }
    }
    return n;
}

/* A segment of the peer arrived on path `index`: on a peer with several paths, evidence
 * that the peer is alive for the others' failover (pml_dr2_path_others_alive_since). The
 * clock is progress's last reading: older than the truth, which only weakens the evidence. */
static inline void mca_pml_dr2_peer_heard(mca_pml_dr2_peer_t *peer, int index)
{
    if (OPAL_UNLIKELY(peer->npaths > 1)) {
        pml_dr2_path_heard(&peer->path_state[index], mca_pml_dr2.now_us);
    }
}

/* The local-completion watchdog, from progress (every quarter of
 * pml_dr2_path_stall_us): a path whose BTL holds descriptors of ours and has completed
 * none of them for that long is reported (counter local_timeouts, verbose 1) and its ACK
 * timers stop waiting for local completion, so that its losses are recovered (the path
 * taken out, or with a retry limit the peer given up on) as for any other. Returns work
 * done. */
int mca_pml_dr2_watchdog_check(uint64_t now_us);

/* Largest fragment payload towards this peer (fits every path): read on every send. */
static inline uint32_t mca_pml_dr2_peer_max_payload(const mca_pml_dr2_peer_t *peer)
{
    return peer->max_payload;
}

/* Largest message sent eagerly to this peer: pml_dr2_eager_limit, or when that is 0, the
 * larger of MCA_PML_DR2_EAGER_LIMIT_FLOOR and the smallest eager limit of the peer's BTLs,
 * and to a peer across a wire at least MCA_PML_DR2_WIRE_EAGER_LIMIT_MIN. Read on every
 * send. */
static inline size_t mca_pml_dr2_peer_eager_limit(const mca_pml_dr2_peer_t *peer)
{
    return peer->eager_limit;
}

/* Most data a RNDV to this peer carries: the smallest eager limit of the peer's BTLs less
 * dr2's header (also capped by the fragment payload, by the caller). */
size_t mca_pml_dr2_peer_rndv_data_max(mca_pml_dr2_peer_t *peer);

/* Release everything the peer holds (finalize, del_procs). */
void mca_pml_dr2_peer_release(mca_pml_dr2_peer_t *peer);

END_C_DECLS

#endif /* MCA_PML_DR2_PEER_H */
