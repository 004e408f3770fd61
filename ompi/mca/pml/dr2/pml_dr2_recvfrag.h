/*
 * ompi-resilience: pml/dr2 receive path: BTL segments in, headers checked, fragments
 * placed, messages matched.
 *
 * A message being received is an mca_pml_dr2_rxmsg_t, created from its MATCH or RNDV
 * header and found again by (peer, msg id) for its FRAGs: nothing read off the wire is
 * ever used as a pointer. Until a receive matches it, an eager message's data is kept in
 * a buffer of its own; of a rendezvous message only what its RNDV carried (the end of the
 * message that whole fragments leave over, less than the BTL's eager limit), the rest
 * comes once the receiver matched it and told the sender to go ahead.
 */
#ifndef MCA_PML_DR2_RECVFRAG_H
#define MCA_PML_DR2_RECVFRAG_H

#include "pml_dr2.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_rxcheck.h"
#include "pml_dr2_vfrag.h"

BEGIN_C_DECLS

struct mca_pml_dr2_recv_request_t;

typedef struct mca_pml_dr2_rxmsg_t {
    opal_free_list_item_t super; /* from mca_pml_dr2.rxmsgs; on an unexpected,
                                  * out-of-order or no-communicator list */
    int refs; /* the protocol's reference, plus one while handle_match works on it */
    mca_pml_dr2_peer_t *peer;
    uint32_t ctx;
    uint32_t epoch; /* the communicator's generation its header named, if has_epoch */
    bool has_epoch;
    int32_t src;
    int32_t tag;
    uint16_t seq;
    bool rndv;
    bool matched;  /* bound to a receive request (or taken by a matched probe) */
    bool in_hash;  /* in peer->rx_msgs */
    /* dropped unreceived (its communicator was revoked, or it was freed): what still
     * arrives of it is acknowledged and discarded, so that the sender's vfrags complete;
     * released once all of it has come (mca_pml_dr2_rxmsg_drop) */
    bool dropped;
    uint32_t msg_id;
    uint64_t msg_len;
    uint64_t bytes_received;
    unsigned char *buf; /* eager data while unexpected */
    /* a rendezvous: the data its RNDV carried (the message's last rndv_len bytes),
     * checked, kept from its arrival until a receive matches the message */
    unsigned char *rndv_data;
    uint32_t rndv_len;
    mca_pml_dr2_own_t rndv_own;
    struct mca_pml_dr2_recv_request_t *req;
} mca_pml_dr2_rxmsg_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_rxmsg_t);

/* The data the RNDV of `msg` carried, into its receive (matched just now): then it is
 * counted as received and its buffer given back. */
void mca_pml_dr2_rxmsg_place_rndv_data(mca_pml_dr2_rxmsg_t *msg);

/* A vfrag being received: its record (pml_dr2_rxcheck.h). */
typedef pml_dr2_rx_vfrag_t mca_pml_dr2_rx_vfrag_t;

/* A segment delivered while a dr2 frame was active, processed later. */
typedef struct {
    opal_list_item_t super;
    mca_pml_dr2_peer_t *peer;
    int path; /* the peer's path it came on */
    size_t len;
    unsigned char data[];
} mca_pml_dr2_deferred_t;

/* BTL active-message callback for MCA_PML_DR2_BTL_TAG. */
void mca_pml_dr2_recv_frag_callback(mca_btl_base_module_t *btl,
                                    const mca_btl_base_receive_descriptor_t *desc);

/* Process a segment from `peer` (lock held, not nested). */
void mca_pml_dr2_recv_segment(mca_pml_dr2_peer_t *peer, const unsigned char *buf, size_t len);

/* Try to match an incoming message (in sequence order) on its communicator, the one that
 * has its context id here; a message of an earlier communicator on that id is dropped
 * (mca_pml_dr2_rxmsg_drop). */
void mca_pml_dr2_rxmsg_deliver(ompi_communicator_t *comm, mca_pml_dr2_rxmsg_t *msg);

/* Was a message whose header named `epoch` (has_epoch: TINY and LOCAL name none) sent on
 * comm, the communicator that has its context id here now, rather than on an earlier one
 * that had the same id and was freed (pml_dr2_hdr.h, epoch)? */
static inline bool mca_pml_dr2_rx_epoch_is(const ompi_communicator_t *comm, bool has_epoch,
                                           uint32_t epoch)
{
    return !has_epoch || epoch == mca_pml_dr2_comm_epoch(comm);
}

/* A header's sender rank (checked non-negative by the codec) names, in comm, the process
 * the segment came from. */
bool mca_pml_dr2_rx_rank_is_peer(ompi_communicator_t *comm, int32_t src,
                                 mca_pml_dr2_peer_t *peer);

/* The posted receive that takes the whole message `hdr` announces (EAGER, TINY, LOCAL)
 * now, in order: its communicator exists here and is not revoked for its tag, the sender's
 * rank is `peer`, the message is the next in sequence from its sender with nothing of that
 * sender waiting out of order, and a posted receive accepts it: that receive, taken off the
 * posted list, the sequence advanced. NULL otherwise (the general path decides). */
struct mca_pml_dr2_recv_request_t *mca_pml_dr2_rx_take_in_order(mca_pml_dr2_peer_t *peer,
                                                                const pml_dr2_hdr_t *hdr);

/* The whole message `hdr` (payload at `payload`) into the receive
 * mca_pml_dr2_rx_take_in_order gave, which completes. */
void mca_pml_dr2_rx_receive_small(struct mca_pml_dr2_recv_request_t *req,
                                  mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                                  const unsigned char *payload);

/* A message object from the free list (lock held), initialised, one reference; NULL if
 * out of memory. */
mca_pml_dr2_rxmsg_t *mca_pml_dr2_rxmsg_alloc(void);

/* The receive bound to an rxmsg completes, or the message is abandoned: drop it from the
 * peer's tables and free it. */
void mca_pml_dr2_rxmsg_release(mca_pml_dr2_rxmsg_t *msg);

/* Nobody will receive this message (its communicator is revoked for its tag, or gone):
 * a rendezvous is answered with an ACK flagged REVOKED (its sender completes in error, no
 * data follows) and released; an eager message is released once every byte of it has
 * arrived and been acknowledged, its data discarded. Never just forgotten: its sender
 * would resend it for ever, and its unacknowledged vfrags would end up filling the
 * sender's window towards this peer for every communicator. */
void mca_pml_dr2_rxmsg_drop(mca_pml_dr2_rxmsg_t *msg);

/* A receive matched `msg` but cannot take it (no memory for its staging copy) and has
 * been completed in error: the message is consumed as a dropped one, except that a
 * rendezvous is given its go-ahead (MATCHED: a receive did match it) and its data is
 * discarded as it arrives. */
void mca_pml_dr2_rxmsg_discard_matched(mca_pml_dr2_rxmsg_t *msg);

/* A buffer of `len` bytes for a message being received (malloc), NULL if there is no
 * memory -- or if pml_dr2_inject_nomem says so (tests). */
void *mca_pml_dr2_rx_buffer_alloc(uint64_t len);

/* All data of a matched message is in: copy unexpected data out, complete the request. */
void mca_pml_dr2_rxmsg_try_complete(mca_pml_dr2_rxmsg_t *msg);

/* Tell the sender of a matched rendezvous (or synchronous) message to go ahead. */
void mca_pml_dr2_rxmsg_send_matched(mca_pml_dr2_rxmsg_t *msg);

END_C_DECLS

#endif /* MCA_PML_DR2_RECVFRAG_H */
