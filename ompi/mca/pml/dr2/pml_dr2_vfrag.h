/*
 * ompi-resilience: pml/dr2 sender side of the reliability protocol.
 *
 * A message being sent (mca_pml_dr2_txmsg_t) is cut into fragments of at most
 * txmsg->frag_len payload bytes, grouped into vfrags of up to 64 fragments. A vfrag is
 * the unit of acknowledgement: the receiver answers with a 64-bit mask of the fragments it
 * holds intact, the sender resends what is missing (on a NACK, on a gap an ACK shows, or
 * when the vfrag's ACK timer expires). The data a vfrag covers stays readable until it is
 * acknowledged: either a copy the message owns (eager, buffered) or the user buffer of a
 * send request that is not complete yet (rendezvous).
 *
 * Message kinds:
 *  - eager: first vfrag starts with a MATCH header; the request completed when the data
 *    was copied;
 *  - rendezvous: a RNDV header alone (vfrag of one fragment, no data); after an ACK flagged
 *    MATCHED the data follows as FRAG vfrags; the request completes when all are acked.
 */
#ifndef MCA_PML_DR2_VFRAG_H
#define MCA_PML_DR2_VFRAG_H

#include "pml_dr2.h"
#include "pml_dr2_peer.h"

BEGIN_C_DECLS

struct mca_pml_dr2_send_request_t;

typedef enum {
    MCA_PML_DR2_TX_SCHEDULING = 0, /* vfrags still to be created (window permitting) */
    MCA_PML_DR2_TX_AWAIT_MATCH,    /* rendezvous delivered, receiver has not matched it */
    MCA_PML_DR2_TX_DRAINING,       /* every byte is in a vfrag; waiting for their ACKs */
} mca_pml_dr2_tx_state_t;

typedef enum {
    MCA_PML_DR2_OWN_NONE = 0, /* user buffer of the send request */
    MCA_PML_DR2_OWN_MALLOC,   /* a copy in malloc()ed memory */
    MCA_PML_DR2_OWN_BSEND,    /* a copy in the MPI_Buffer_attach buffer */
    MCA_PML_DR2_OWN_INLINE,   /* a copy in the message's own inline_data */
    MCA_PML_DR2_OWN_POOL,     /* a copy in one of mca_pml_dr2.copy_buffers */
    MCA_PML_DR2_OWN_BORROWED, /* the caller's contiguous buffer, only until
                               * mca_pml_dr2_txmsg_start returns: copied into inline_data, or
                               * into the copy buffer `owned` if there is one, there, after
                               * the first transmission if that goes at once (the copy is
                               * then off the latency path) */
} mca_pml_dr2_own_t;

/* Eager messages up to this size keep their copy inside the message object (which comes
 * from a free list): no allocation on the small-message path. 1 KiB: the sizes where
 * latency, not bandwidth, dominates; a message object then takes about 1.2 KiB, held until
 * its ACK (many outstanding small messages must not cost more). */
#define MCA_PML_DR2_INLINE_MAX 1024

/* Larger eager messages up to this size keep their copy in a buffer of this size from a
 * free list of their own (mca_pml_dr2_copy_buffer_t), not malloc()ed: a malloc and free
 * per message cost 1-4 KiB messages 10-13 % of their time on sm (2 KiB 0.33 against 0.39
 * us, 4 KiB 0.42 against 0.47 where the cores share a cache). Beyond it, or if the list
 * cannot grow, malloc. Like the message objects, the list keeps its peak size until
 * MPI_Finalize. */
#define MCA_PML_DR2_COPY_BUFFER_SIZE 8192

typedef struct {
    opal_free_list_item_t super;
    unsigned char data[MCA_PML_DR2_COPY_BUFFER_SIZE];
} mca_pml_dr2_copy_buffer_t;

/* Messages up to this size that fit one fragment go as one EAGER header (pml_dr2_hdr.h):
 * the receiver checks header and payload in one pass before placing the payload with a
 * plain copy, which pays while the payload is small. Measured on sm against the MATCH path
 * (1 KiB here before): 2 KiB 0.27 against 0.35 us where the cores share a cache, 0.78
 * against 1.28 where they do not (ob1 copy-in/out 0.21 and 0.84); 8 KiB 0.58 against
 * 0.68, 1.74 against 1.88 (segments over the BTL's immediate-send limit, 4 KiB on sm, go
 * through a descriptor). The segment is built in a stack buffer of
 * MCA_PML_DR2_SMALL_SEGMENT_MAX bytes. */
#define MCA_PML_DR2_EAGER_HDR_MAX 8000

/* Messages up to this size go as TINY (pml_dr2_hdr.h) when their envelope fits one; the
 * wire allows PML_DR2_HDR_TINY_MAX_PAYLOAD. A TINY carries no ACK, so the ACKs owed to the
 * peer then go in a segment of their own: TINY pays where it saves btl/sm fast-box cache
 * lines over EAGER (up to 40 bytes it fits one with the 8-byte fast-box header, where an
 * EAGER takes two). Measured on sm with dr2_pingpong: 16-32 B TINY faster, 64 B even,
 * 128 B 0.55-0.58 us against EAGER's 0.46-0.48 (ob1 0.43) in the VM state where a cache
 * line costs the most (in the other, 128 B TINY 0.19 against 0.21: the loss weighs more). */
#define MCA_PML_DR2_TINY_SEND_MAX 64

/* On a path without payload checksums (pml_dr2_checksum auto over sm and self, or none),
 * messages up to this size still go as TINY or EAGER, whose one checksum covers the
 * payload with the header: a few more CRC instructions than the header alone, where the
 * general path (a MATCH header flagged NO_DATA_CRC, a separate 20-byte ACK header with a
 * checksum of its own riding behind it, each decoded and checked) cost far more. 8-byte
 * ping-pong over sm, callgrind: send 1240 -> 720 instructions per message, receive callback
 * 1220 -> 570. Larger payloads keep the policy: no checksum. */
#define MCA_PML_DR2_SMALL_CHECKED_MAX 256

/* Fragments per vfrag when several paths to the peer are up (otherwise up to 64): a vfrag
 * travels on one path, so a message is striped over the paths vfrag by vfrag. 4 fragments
 * (512 KiB with the default pml_dr2_frag_size) spread a 1 MiB message over two paths and
 * cost one ACK per 512 KiB. */
#define MCA_PML_DR2_STRIPE_FRAGS 4

typedef struct mca_pml_dr2_txmsg_t {
    opal_free_list_item_t super; /* from mca_pml_dr2.txmsgs; on peer->tx_blocked or
                                  * peer->tx_await_match */
    mca_pml_dr2_peer_t *peer;
    mca_pml_dr2_tx_state_t state;
    bool rndv;
    bool in_list;
    /* the matching envelope */
    uint32_t ctx;
    uint32_t epoch; /* the communicator's (mca_pml_dr2_comm_epoch) */
    int32_t src;
    int32_t tag;
    uint16_t seq;
    uint8_t match_flags; /* flags for the MATCH/RNDV header; none used today (see FLAG_SYNC) */
    uint32_t msg_id;     /* vfrag id of the MATCH or RNDV; 0 until assigned */
    bool has_id;
    uint64_t msg_len;
    uint64_t next_offset;   /* first byte not yet in a vfrag */
    uint32_t rndv_tail;     /* a rendezvous: the last bytes, which its RNDV carries */
    uint32_t frag_len;      /* payload per fragment */
    uint32_t vfrags_live;   /* vfrags created and not yet acknowledged */
    /* the data */
    const unsigned char *contig; /* the packed bytes (user buffer or a copy) */
    void *owned;
    mca_pml_dr2_own_t own;
    /* the request completed when the last ACK arrives (rendezvous); NULL otherwise */
    struct mca_pml_dr2_send_request_t *req;
    /* rendezvous waiting for its match: RNDV resend timer */
    uint64_t match_deadline_us;
    uint32_t match_retries;
    /* of those, resends in a row the receiver did not answer at all (its plain ACK says
     * it holds the RNDV, unmatched): counted against pml_dr2_retry_limit */
    uint32_t match_unanswered;
    unsigned char inline_data[MCA_PML_DR2_INLINE_MAX];
} mca_pml_dr2_txmsg_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_txmsg_t);

typedef struct mca_pml_dr2_vfrag_t {
    opal_free_list_item_t super; /* from mca_pml_dr2.vfrags; on peer->tx_unacked */
    mca_pml_dr2_txmsg_t *msg;
    uint32_t id;
    uint8_t kind;    /* header type of fragment 0: MATCH, RNDV or FRAG */
    uint8_t nfrags;
    uint64_t offset; /* message offset of fragment 0's payload */
    uint64_t len;    /* payload bytes of the whole vfrag */
    uint64_t pending;  /* fragments to (re)send */
    uint64_t sent;     /* fragments sent at least once */
    uint64_t acked;    /* fragments the receiver holds */
    uint64_t fast_resent; /* resent on a gap since the last timer expiry */
    uint64_t sent_at_us;  /* first transmission, for the RTT sample */
    uint64_t armed_at_us; /* when its ACK timer last started: its latest transmission had
                           * left (pml_dr2_path_timeout_says_down) */
    uint64_t deadline_us; /* ACK timer */
    uint64_t local_mark;  /* its path's tx_handed after its last transmission: the timer
                           * starts once the BTL completed that many (pml_dr2_btlpath.h) */
    uint32_t retries;
    bool retransmitted;   /* Karn: no RTT sample from this vfrag any more */
    uint8_t path;         /* the peer's path that carries it (pml_dr2_btlpath.h) */
} mca_pml_dr2_vfrag_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_vfrag_t);

/* A message object, initialised, from the free list (lock held); NULL if out of memory.
 * It goes back to the list when its last vfrag is acknowledged or it is abandoned. */
mca_pml_dr2_txmsg_t *mca_pml_dr2_txmsg_alloc(void);

/* Back to the free list: a message that is done, or was never started, owning nothing. */
void mca_pml_dr2_txmsg_free(mca_pml_dr2_txmsg_t *msg);

/* One of mca_pml_dr2.copy_buffers (MCA_PML_DR2_COPY_BUFFER_SIZE bytes), NULL if the list
 * cannot grow. Give it back with mca_pml_dr2_copy_release(MCA_PML_DR2_OWN_POOL). */
void *mca_pml_dr2_copy_buffer_get(void);

/* A buffer for a message's copy of `len` bytes: from mca_pml_dr2.copy_buffers when it
 * fits one (*own MCA_PML_DR2_OWN_POOL), else malloc()ed (*own MCA_PML_DR2_OWN_MALLOC).
 * NULL if out of memory. */
void *mca_pml_dr2_copy_alloc(size_t len, mca_pml_dr2_own_t *own);

/* Give back a message's copy as it was taken (`own`); nothing for NONE, INLINE, BORROWED. */
void mca_pml_dr2_copy_release(mca_pml_dr2_own_t own, void *copy);

/* Queue a message for transmission: creates its vfrags as the window allows and sends. */
void mca_pml_dr2_txmsg_start(mca_pml_dr2_txmsg_t *msg);

/* MPI_Send of a message that fits a TINY (pml_dr2_hdr.h), to a peer with nothing of ours
 * waiting to be sent (lock held). The segment is built from the caller's envelope and
 * buffer and handed to the BTL before anything else; the message object that keeps the
 * copy until the ACK and its vfrag are filled in while the segment is on its way, and end
 * up as mca_pml_dr2_txmsg_start leaves a small message. `match` holds the envelope (ctx,
 * epoch, src, tag, seq); this sets its vfrag. False if the message does not qualify or no object
 * is free: nothing was sent or taken, and the general path takes the message. */
bool mca_pml_dr2_txmsg_send_tiny(mca_pml_dr2_peer_t *peer, pml_dr2_match_hdr_t *match,
                                 const void *buf, uint32_t len);

/* Has the message left this process: every byte in a vfrag, every fragment handed to its
 * path's BTL and every such descriptor completed by it? Right after mca_pml_dr2_txmsg_start (lock held): false while a fragment waits
 * in our queues (window, send depth) or in the BTL's (btl/tcp setting up a connection,
 * a full socket), where only this process's progress moves it. */
bool mca_pml_dr2_txmsg_has_left(const mca_pml_dr2_txmsg_t *msg);

/* Handle an ACK from the peer: `mask` of vfrag `vfrag` received intact; `matched`: the
 * receiver matched the rendezvous whose RNDV that vfrag was (header validated by the codec). */
void mca_pml_dr2_vfrag_ack(mca_pml_dr2_peer_t *peer, uint32_t vfrag, uint64_t mask, bool matched);
/* Handle an ACK flagged REVOKED: the peer dropped, unmatched, the rendezvous whose RNDV
 * was vfrag `vfrag` (its communicator is revoked there): the send completes in error. */
void mca_pml_dr2_vfrag_revoked(mca_pml_dr2_peer_t *peer, uint32_t vfrag);
/* Handle a NACK from the peer (header already validated by the codec). */
void mca_pml_dr2_vfrag_nack(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr);

/* Send whatever fragments of the peer are pending, as far as the BTL takes them. */
void mca_pml_dr2_peer_push(mca_pml_dr2_peer_t *peer);

/* Expire ACK timers and rendezvous timers of every peer; returns work done. */
int mca_pml_dr2_timers_check(uint64_t now_us);

/* Path `from` of the peer went down: its vfrags move to the paths still up, and whatever
 * of them was sent and not acknowledged is resent at once. */
void mca_pml_dr2_vfrag_reroute(mca_pml_dr2_peer_t *peer, int from);

/* Abandon a message (its peer failed, or its communicator was revoked): no more
 * transmissions, resources released, its request (if any) completed with `error`. */
void mca_pml_dr2_txmsg_abort(mca_pml_dr2_txmsg_t *msg, int error);

/* Abandon every message towards a peer (the peer failed). */
void mca_pml_dr2_peer_abort_all(mca_pml_dr2_peer_t *peer, int error);

END_C_DECLS

#endif /* MCA_PML_DR2_VFRAG_H */
