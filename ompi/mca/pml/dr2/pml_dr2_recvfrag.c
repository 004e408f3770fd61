/*
 * ompi-resilience: pml/dr2 receive path (see pml_dr2_recvfrag.h).
 *
 * Every header is decoded and checked by the codec (pml_dr2_hdr.c) before anything is done
 * with it; then checked again against our own state (does the message exist, does the
 * vfrag agree with what we saw of it, does the sender's rank belong to the peer the BTL
 * says the segment came from). Anything inconsistent is counted and dropped. A payload is
 * checked while it is copied to its place and only counted as received if intact.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/params.h"

#include "pml_dr2.h"
#include "pml_dr2_ackmask.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_crc.h"
#include "pml_dr2_from.h"
#include "pml_dr2_inject.h"
#include "pml_dr2_local.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_recvreq.h"
#include "pml_dr2_rxcheck.h"
#include "pml_dr2_vfrag.h"

static void rxmsg_construct(mca_pml_dr2_rxmsg_t *msg)
{
    msg->refs = 1;
    msg->peer = NULL;
    msg->has_epoch = false;
    msg->buf = NULL;
    msg->req = NULL;
    msg->matched = false;
    msg->in_hash = false;
    msg->dropped = false;
    msg->bytes_received = 0;
    msg->rndv = false;
    msg->rndv_data = NULL;
    msg->rndv_len = 0;
    msg->rndv_own = MCA_PML_DR2_OWN_NONE;
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_rxmsg_t, opal_free_list_item_t, rxmsg_construct, NULL);

mca_pml_dr2_rxmsg_t *mca_pml_dr2_rxmsg_alloc(void)
{
    mca_pml_dr2_rxmsg_t *msg = (mca_pml_dr2_rxmsg_t *) opal_free_list_get_st(&mca_pml_dr2.rxmsgs);

    if (OPAL_LIKELY(NULL != msg)) {
        rxmsg_construct(msg); /* a recycled one keeps its last state */
    }
    return msg;
}

static inline void rxmsg_hold(mca_pml_dr2_rxmsg_t *msg)
{
    msg->refs++;
}

/* Drop a reference; the last one gives the object back to the free list. */
static inline void rxmsg_put(mca_pml_dr2_rxmsg_t *msg)
{
    if (0 == --msg->refs) {
        opal_free_list_return_st(&mca_pml_dr2.rxmsgs, &msg->super);
    }
}

void *mca_pml_dr2_rx_buffer_alloc(uint64_t len)
{
    if (OPAL_UNLIKELY(mca_pml_dr2.inject_nomem > 0.0)
        && mca_pml_dr2_inject_roll(mca_pml_dr2.inject_nomem)) {
        mca_pml_dr2.counters.injected_nomem++;
        return NULL;
    }
    return len > SIZE_MAX ? NULL : malloc((size_t) len);
}

static void rndv_data_release(mca_pml_dr2_rxmsg_t *msg)
{
    if (NULL != msg->rndv_data) {
        mca_pml_dr2_copy_release(msg->rndv_own, msg->rndv_data);
        msg->rndv_data = NULL;
    }
}

static void rxmsg_index(mca_pml_dr2_rxmsg_t *msg);

/* While the first fragment of a new message is being placed, its request must not
 * complete under our feet (the message would be freed while still in use). */
static mca_pml_dr2_rxmsg_t *delivering = NULL;

/* Forget the records of the message's vfrags still being received: nothing more of it
 * will be placed. Left behind, a record would outlive its id, and 2^32 vfrags later the
 * peer's vfrag with the same id would be rejected as contradicting it, for ever. */
static void forget_vfrag_records(mca_pml_dr2_rxmsg_t *msg)
{
    opal_hash_table_t *records = &msg->peer->rx_vfrags;

    /* a removal may move other entries of the (open-addressing) table: scan again after
     * each; a message has at most a few vfrags being received */
    for (;;) {
        mca_pml_dr2_rx_vfrag_t *found = NULL;
        uint32_t key;
        void *value, *node;
        int rc = opal_hash_table_get_first_key_uint32(records, &key, &value, &node);
        while (OPAL_SUCCESS == rc && NULL == found) {
            if (((mca_pml_dr2_rx_vfrag_t *) value)->msg_id == msg->msg_id) {
                found = value;
            } else {
                rc = opal_hash_table_get_next_key_uint32(records, &key, &value, node, &node);
            }
        }
        if (NULL == found) {
            return;
        }
        opal_hash_table_remove_value_uint32(records, key);
        free(found);
    }
}

/* All of the message is in: no fragment of it can come any more that the window would
 * not recognise as a duplicate, so it need not be found by id. An unexpected message can
 * wait for its receive for any time, during which its id comes round again (2^32 vfrags
 * later) and must find nothing. */
static inline void rxmsg_unindex_if_complete(mca_pml_dr2_rxmsg_t *msg)
{
    if (msg->in_hash && msg->bytes_received == msg->msg_len) {
        opal_hash_table_remove_value_uint32(&msg->peer->rx_msgs, msg->msg_id);
        msg->in_hash = false;
    }
}

void mca_pml_dr2_rxmsg_release(mca_pml_dr2_rxmsg_t *msg)
{
    if (msg->in_hash) {
        opal_hash_table_remove_value_uint32(&msg->peer->rx_msgs, msg->msg_id);
        msg->in_hash = false;
    }
    if (OPAL_UNLIKELY(msg->bytes_received < msg->msg_len)) {
        forget_vfrag_records(msg);
    }
    free(msg->buf);
    msg->buf = NULL;
    rndv_data_release(msg);
    rxmsg_put(msg);
}

void mca_pml_dr2_rxmsg_send_matched(mca_pml_dr2_rxmsg_t *msg)
{
    /* The go-ahead acknowledges the RNDV's vfrag (one fragment) and says "matched". It is
     * sent at once: the sender waits for it before sending any data. */
    mca_pml_dr2_peer_queue_ack(msg->peer, PML_DR2_HDR_ACK, msg->msg_id, 1,
                               PML_DR2_HDR_FLAG_MATCHED);
    mca_pml_dr2_peer_flush_acks(msg->peer);
}

/* Every one of the message's msg_len bytes is in the request's buffer (as far as it
 * holds them): complete the receive. */
static void complete_received(mca_pml_dr2_recv_request_t *req, uint64_t msg_len)
{
    int error = MPI_SUCCESS;

    if (OPAL_UNLIKELY(ompi_ftmpi_enabled)) {
        /* ULFM: a receive that matched before its communicator was revoked and completes
         * after: never MPI_SUCCESS on a revoked communicator (ob1 keeps the error that
         * ompi_request_is_failed set) */
        error = mca_pml_dr2_comm_revoked_error(req->req_recv.req_base.req_comm,
                                               req->req_recv.req_base.req_ompi.req_status.MPI_TAG);
    }
    if (msg_len > req->capacity) {
        error = MPI_SUCCESS == error ? MPI_ERR_TRUNCATE : error;
        req->req_recv.req_base.req_ompi.req_status._ucount = req->capacity;
    } else {
        req->req_recv.req_base.req_ompi.req_status._ucount = msg_len;
    }
    mca_pml_dr2_recv_request_complete(req, error);
}

void mca_pml_dr2_rxmsg_try_complete(mca_pml_dr2_rxmsg_t *msg)
{
    mca_pml_dr2_recv_request_t *req = msg->req;
    uint64_t msg_len = msg->msg_len;

    if (msg == delivering || msg->bytes_received < msg->msg_len) {
        return;
    }
    if (OPAL_UNLIKELY(msg->dropped)) {
        mca_pml_dr2_rxmsg_release(msg); /* all of it acknowledged: nothing more can come */
        return;
    }
    if (NULL == req) {
        return;
    }
    if (NULL != msg->buf) {
        /* an unexpected eager message, or a non-contiguous receive's staging copy of a
         * message of any size (its buffer was allocated, so msg_len fits a size_t): its
         * data was checked on arrival */
        (void) mca_pml_dr2_recv_request_unpack(req, 0, msg->buf, (size_t) msg->msg_len, false, 0);
    }
    req->msg = NULL;
    msg->req = NULL;
    mca_pml_dr2_rxmsg_release(msg);
    complete_received(req, msg_len);
}

void mca_pml_dr2_rxmsg_place_rndv_data(mca_pml_dr2_rxmsg_t *msg)
{
    uint64_t offset = msg->msg_len - msg->rndv_len; /* the RNDV carries the end */

    if (NULL == msg->rndv_data) {
        return;
    }
    if (NULL != msg->buf) {
        /* a non-contiguous receive's staging copy of the whole message */
        memcpy(msg->buf + offset, msg->rndv_data, msg->rndv_len);
    } else {
        (void) mca_pml_dr2_recv_request_unpack(msg->req, offset, msg->rndv_data,
                                               msg->rndv_len, false, 0); /* checked on arrival */
    }
    msg->bytes_received += msg->rndv_len;
    rndv_data_release(msg);
}

/* ---- matching ---------------------------------------------------------------------------- */

static bool tag_revoked(ompi_communicator_t *comm, int tag)
{
    return (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(tag))
           || (ompi_comm_coll_revoked(comm) && ompi_request_tag_is_collective(tag));
}

/* The first posted receive of the communicator that accepts a message from `src` with
 * `tag`, taken off the posted list; NULL if none does. */
static mca_pml_dr2_recv_request_t *take_posted(mca_pml_dr2_comm_t *dcomm, int src, int tag)
{
    mca_pml_dr2_recv_request_t *req;

    OPAL_LIST_FOREACH (req, &dcomm->posted, mca_pml_dr2_recv_request_t) {
        if (mca_pml_dr2_tag_matches(req->req_recv.req_base.req_peer,
                                    req->req_recv.req_base.req_tag, src, tag)) {
            opal_list_remove_item(&dcomm->posted, (opal_list_item_t *) req);
            return req;
        }
    }
    return NULL;
}

bool mca_pml_dr2_rx_rank_is_peer(ompi_communicator_t *comm, int32_t src,
                                 mca_pml_dr2_peer_t *peer)
{
    return src < comm->c_remote_group->grp_proc_count && mca_pml_dr2_comm_peer(comm, src) == peer;
}

/* The message's turn has come: hand it to the first posted receive that accepts it, or
 * queue it as unexpected. */
void mca_pml_dr2_rxmsg_drop(mca_pml_dr2_rxmsg_t *msg)
{
    if (msg->rndv) {
        /* the RNDV's vfrag is in the window already: a copy of it is answered the same
         * way (handle_match), as long as the communicator is revoked here */
        mca_pml_dr2_peer_queue_ack(msg->peer, PML_DR2_HDR_ACK, msg->msg_id, 1,
                                   PML_DR2_HDR_FLAG_REVOKED);
        mca_pml_dr2_peer_flush_acks(msg->peer);
        mca_pml_dr2_rxmsg_release(msg);
        return;
    }
    free(msg->buf);
    msg->buf = NULL;
    msg->dropped = true;
    if (!msg->in_hash && msg->bytes_received < msg->msg_len) {
        rxmsg_index(msg); /* its other fragments, or a resend of its only one, find it */
    }
    mca_pml_dr2_rxmsg_try_complete(msg);
}

void mca_pml_dr2_rxmsg_discard_matched(mca_pml_dr2_rxmsg_t *msg)
{
    if (msg->rndv) {
        mca_pml_dr2_rxmsg_send_matched(msg);
        msg->bytes_received += msg->rndv_len; /* the RNDV's data: discarded */
        rndv_data_release(msg);
    }
    free(msg->buf);
    msg->buf = NULL;
    msg->dropped = true;
    if (!msg->in_hash && msg->bytes_received < msg->msg_len) {
        rxmsg_index(msg);
    }
    mca_pml_dr2_rxmsg_try_complete(msg);
}

static void match_one(ompi_communicator_t *comm, mca_pml_dr2_rxmsg_t *msg)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_recv_request_t *req;

    if (tag_revoked(comm, msg->tag)) {
        mca_pml_dr2_rxmsg_drop(msg); /* nobody may receive it any more */
        return;
    }
    req = take_posted(dcomm, msg->src, msg->tag);
    if (NULL != req) {
        mca_pml_dr2_recv_request_matched(req, msg);
        return;
    }
    if (!msg->rndv && msg->msg_len > 0 && NULL == msg->buf) {
        /* Without memory it is queued all the same, with no data: its sequence number is
         * taken (forgetting it would leave a hole that every later message from its sender
         * waits behind), its fragments are left unacknowledged, and their resends find it
         * (indexed) and are placed once there is memory or a receive that matches it. */
        msg->buf = mca_pml_dr2_rx_buffer_alloc(msg->msg_len);
        if (NULL == msg->buf && !msg->in_hash) {
            rxmsg_index(msg);
        }
    }
    opal_list_append(&dcomm->unexpected, &msg->super.super);
}

/* A message (a late resend, or under ULFM a first transmission) for a communicator freed
 * here since (under ULFM: revoked and given up): nobody will receive it, and if another
 * communicator took its context id, its sequence number belongs to the old one. Dropped,
 * its sender answered (mca_pml_dr2_rxmsg_drop), so that it stops resending. */
static void rxmsg_drop_stale(mca_pml_dr2_rxmsg_t *msg)
{
    mca_pml_dr2.counters.stale_msgs++;
    DR2_VERBOSE(20, "pml:dr2: dropped a message of a freed communicator (cid %u, epoch %u)",
                msg->ctx, msg->epoch);
    mca_pml_dr2_rxmsg_drop(msg);
}

void mca_pml_dr2_rxmsg_deliver(ompi_communicator_t *comm, mca_pml_dr2_rxmsg_t *msg)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_comm_proc_t *cp;
    uint16_t ahead;

    if (OPAL_UNLIKELY(!mca_pml_dr2_rx_epoch_is(comm, msg->has_epoch, msg->epoch))) {
        rxmsg_drop_stale(msg);
        return;
    }
    cp = &dcomm->procs[msg->src];
    ahead = (uint16_t) (msg->seq - cp->expected_seq);
    if (0 != ahead) {
        mca_pml_dr2_rxmsg_t *other;
        if (ahead >= 0x8000) {
            /* behind: its sequence number was used already; cannot be legitimate */
            mca_pml_dr2.counters.malformed++;
            mca_pml_dr2_rxmsg_release(msg);
            return;
        }
        OPAL_LIST_FOREACH (other, &cp->out_of_order, mca_pml_dr2_rxmsg_t) {
            uint16_t other_ahead = (uint16_t) (other->seq - cp->expected_seq);
            if (other_ahead == ahead) {
                mca_pml_dr2.counters.malformed++; /* two messages with one number */
                mca_pml_dr2_rxmsg_release(msg);
                return;
            }
            if (other_ahead > ahead) {
                opal_list_insert_pos(&cp->out_of_order, &other->super.super, &msg->super.super);
                return;
            }
        }
        opal_list_append(&cp->out_of_order, &msg->super.super);
        return;
    }
    match_one(comm, msg);
    cp->expected_seq++;
    while (!opal_list_is_empty(&cp->out_of_order)) {
        mca_pml_dr2_rxmsg_t *next = (mca_pml_dr2_rxmsg_t *) opal_list_get_first(&cp->out_of_order);
        if (next->seq != cp->expected_seq) {
            break;
        }
        opal_list_remove_first(&cp->out_of_order);
        match_one(comm, next);
        cp->expected_seq++;
    }
}

/* ---- data ------------------------------------------------------------------------------- */

typedef enum {
    PLACED_INTACT = 0,
    PLACED_CORRUPT,  /* failed its checksum: NACK it */
    NOT_PLACED,      /* no memory to keep it: leave it unacknowledged (resent on a timer) */
} place_result_t;

static inline place_result_t intact_if(bool ok)
{
    return ok ? PLACED_INTACT : PLACED_CORRUPT;
}

/* Place one fragment's payload. */
static place_result_t place_payload(mca_pml_dr2_rxmsg_t *msg, uint64_t offset,
                                    const unsigned char *payload, const pml_dr2_hdr_t *hdr)
{
    /* EAGER: checked with its header by the codec already */
    bool check = !pml_dr2_hdr_payload_checked(hdr)
                 && 0 == (hdr->flags & PML_DR2_HDR_FLAG_NO_DATA_CRC);

    if (0 == hdr->frag_len) {
        return intact_if(!check || 0 == hdr->data_crc);
    }
    if (OPAL_UNLIKELY(msg->dropped)) {
        return PLACED_INTACT; /* counted and acknowledged, never kept */
    }
    if (NULL == msg->buf && NULL == msg->req) {
        /* unexpected (its buffer could not be had when it was queued), or taken by a
         * matched probe and not received yet: keep the data until it is received */
        msg->buf = mca_pml_dr2_rx_buffer_alloc(msg->msg_len);
        if (NULL == msg->buf) {
            return NOT_PLACED;
        }
    }
    if (NULL != msg->buf) {
        /* the codec checked offset + frag_len <= msg_len == size of buf */
        if (check) {
            return intact_if(pml_dr2_crc32c_copy(PML_DR2_CRC32C_INIT, msg->buf + offset, payload,
                                                 hdr->frag_len)
                             == hdr->data_crc);
        }
        memcpy(msg->buf + offset, payload, hdr->frag_len);
        return PLACED_INTACT;
    }
    return intact_if(mca_pml_dr2_recv_request_unpack(msg->req, offset, payload, hdr->frag_len,
                                                     check, hdr->data_crc));
}

/* The parts of a message the receive checks look at (pml_dr2_rxcheck.h). */
static const pml_dr2_rx_msg_view_t *msg_view(const mca_pml_dr2_rxmsg_t *msg,
                                             pml_dr2_rx_msg_view_t *view)
{
    if (NULL == msg) {
        return NULL;
    }
    view->msg_id = msg->msg_id;
    view->msg_len = msg->msg_len;
    view->bytes_received = msg->bytes_received;
    view->tag = msg->tag;
    view->rndv = msg->rndv;
    /* a message discarded after its go-ahead takes its data like a matched one */
    view->has_req = NULL != msg->req || msg->dropped;
    return view;
}

/* A fragment of message `msg` that pml_dr2_rx_classify() accepted: check it against its
 * vfrag's record, place it, acknowledge it. */
static void deliver_fragment(mca_pml_dr2_peer_t *peer, mca_pml_dr2_rxmsg_t *msg,
                             pml_dr2_rx_decision_t *d, const unsigned char *payload,
                             const pml_dr2_hdr_t *hdr)
{
    mca_pml_dr2_rx_vfrag_t *rv = NULL;
    pml_dr2_rx_outcome_t out;
    place_result_t placed;

    /* single-fragment vfrags never have a record: skip the lookup while there are none */
    if (1 != d->nfrags || opal_hash_table_get_size(&peer->rx_vfrags) > 0) {
        void *found = NULL;
        if (OPAL_SUCCESS == opal_hash_table_get_value_uint32(&peer->rx_vfrags, d->vfrag, &found)) {
            rv = found;
        }
    }
    pml_dr2_rx_vfrag_check(rv, d);
    if (PML_DR2_RX_REJECT == d->verdict) {
        mca_pml_dr2.counters.malformed++; /* contradicts what we saw of this vfrag */
        return;
    }
    if (PML_DR2_RX_DUPLICATE == d->verdict) {
        mca_pml_dr2.counters.duplicates++;
        mca_pml_dr2_peer_queue_ack(peer, PML_DR2_HDR_ACK, d->vfrag, d->ack_mask, 0);
        return;
    }
    if (d->need_record) {
        rv = malloc(sizeof(*rv));
        if (NULL == rv) {
            return; /* unacknowledged: resent later */
        }
        pml_dr2_rx_vfrag_init(rv, d);
        opal_hash_table_set_value_uint32(&peer->rx_vfrags, d->vfrag, rv);
    }
    placed = place_payload(msg, d->offset, payload, hdr);
    if (OPAL_UNLIKELY(NOT_PLACED == placed)) {
        return; /* unacknowledged: resent later (its vfrag record, if new, stays) */
    }
    if (PLACED_CORRUPT == placed) {
        /* corrupt payload: never counted; a NACK gets it resent at once */
        mca_pml_dr2.counters.data_crc_errors++;
        pml_dr2_rx_frag_corrupt(d, &out);
        mca_pml_dr2_peer_queue_ack(peer, out.ack_type, d->vfrag, out.ack_mask, 0);
        return;
    }
    msg->bytes_received += hdr->frag_len;
    rxmsg_unindex_if_complete(msg);
    pml_dr2_rx_frag_intact(&peer->rx_window, rv, d, hdr->flags, &out);
    if (out.vfrag_complete && NULL != rv) {
        opal_hash_table_remove_value_uint32(&peer->rx_vfrags, d->vfrag);
        free(rv);
    }
    if (0 != out.ack_type) {
        mca_pml_dr2_peer_queue_ack(peer, out.ack_type, d->vfrag, out.ack_mask, 0);
    }
    mca_pml_dr2_rxmsg_try_complete(msg);
}

static mca_pml_dr2_rxmsg_t *rxmsg_lookup(mca_pml_dr2_peer_t *peer, uint32_t msg_id)
{
    void *msg = NULL;

    /* small messages received at once are never indexed: the table is mostly empty */
    if (0 == opal_hash_table_get_size(&peer->rx_msgs)) {
        return NULL;
    }
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint32(&peer->rx_msgs, msg_id, &msg)) {
        return NULL;
    }
    return msg;
}

/* A message is found by id (peer->rx_msgs) while fragments of it may still come. */
static void rxmsg_index(mca_pml_dr2_rxmsg_t *msg)
{
    opal_hash_table_set_value_uint32(&msg->peer->rx_msgs, msg->msg_id, msg);
    msg->in_hash = true;
}

/* Still held by the protocol, besides handle_match's own hold (see rxmsg_hold). */
static inline bool rxmsg_alive(const mca_pml_dr2_rxmsg_t *msg)
{
    return msg->refs > 1;
}

/* The data a new RNDV carries, checked while it is copied into a buffer of the message's
 * own, where it waits for the receive that matches (even one posted already: it is
 * matched only after the RNDV has been accepted, and the copy is of an eager message's
 * size at most). Before anything else is done with the message: a corrupt one is NACKed
 * (the sender resends the RNDV at once), and without memory it stays unacknowledged
 * (resent on the sender's timer); either way the message is dropped here, unmatched. */
static bool rxmsg_keep_rndv_data(mca_pml_dr2_peer_t *peer, mca_pml_dr2_rxmsg_t *msg,
                                 const pml_dr2_rx_decision_t *d, const pml_dr2_hdr_t *hdr,
                                 const unsigned char *payload)
{
    unsigned char *copy = mca_pml_dr2_copy_alloc(hdr->frag_len, &msg->rndv_own);
    pml_dr2_rx_outcome_t out;

    if (NULL == copy) {
        mca_pml_dr2_rxmsg_release(msg);
        return false;
    }
    if (hdr->flags & PML_DR2_HDR_FLAG_NO_DATA_CRC) {
        memcpy(copy, payload, hdr->frag_len);
    } else if (pml_dr2_crc32c_copy(PML_DR2_CRC32C_INIT, copy, payload, hdr->frag_len)
               != hdr->data_crc) {
        mca_pml_dr2_copy_release(msg->rndv_own, copy);
        mca_pml_dr2.counters.data_crc_errors++;
        pml_dr2_rx_frag_corrupt(d, &out);
        mca_pml_dr2_peer_queue_ack(peer, out.ack_type, d->vfrag, out.ack_mask, 0);
        mca_pml_dr2_rxmsg_release(msg);
        return false;
    }
    msg->rndv_data = copy;
    msg->rndv_len = hdr->frag_len;
    return true;
}

/* The flags of the ACK that answers a copy of a RNDV already in the window. With no
 * message left for it, the classification says MATCHED: the message was received and is
 * gone, and the copy comes from a sender that lost our go-ahead. Unless its communicator
 * is revoked here for its tag, or was when it was freed: then it may as well have been
 * dropped unmatched (mca_pml_dr2_rxmsg_drop), and MATCHED would complete a synchronous
 * send that no receive matched, or start the data of a message nobody has (resent for
 * ever); REVOKED completes it in error, which a revoked communicator allows either way. */
static uint8_t rndv_duplicate_flags(const pml_dr2_hdr_t *hdr, const mca_pml_dr2_rxmsg_t *msg,
                                    uint8_t flags)
{
    ompi_communicator_t *comm;
    bool revoked = false;

    if (PML_DR2_HDR_RNDV != hdr->type || NULL != msg || 0 == (flags & PML_DR2_HDR_FLAG_MATCHED)) {
        return flags;
    }
    comm = ompi_comm_lookup(hdr->match.ctx);
    if (NULL != comm && NULL != comm->c_pml_comm
        && mca_pml_dr2_rx_epoch_is(comm, hdr->match.has_epoch, hdr->match.epoch)) {
        revoked = tag_revoked(comm, hdr->match.tag);
    } else {
        (void) mca_pml_dr2_comm_freed(hdr->match.ctx, hdr->match.epoch, hdr->match.tag, &revoked);
    }
    return revoked ? PML_DR2_HDR_FLAG_REVOKED : flags;
}

static void handle_match(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                         const unsigned char *payload)
{
    bool rndv = PML_DR2_HDR_RNDV == hdr->type;
    /* An eager message that this one fragment holds entirely (every small message) is
     * only indexed by id if that fragment turns out corrupt: nothing else of it can come,
     * a copy of its intact fragment is a duplicate for the window, and most are received
     * at once. That saves a hash insertion and removal per small message. */
    bool whole = !rndv && hdr->frag_len == hdr->match.msg_len;
    mca_pml_dr2_rxmsg_t *msg = rxmsg_lookup(peer, pml_dr2_rx_msg_key(hdr));
    pml_dr2_rx_msg_view_t view;
    pml_dr2_rx_decision_t d;
    uint32_t id;
    ompi_communicator_t *comm;
    bool revoked;

    pml_dr2_rx_classify(&peer->rx_window, hdr, msg_view(msg, &view), MCA_PML_DR2_EAGER_LIMIT_MAX,
                        &d);
    id = d.vfrag;
    switch (d.verdict) {
    case PML_DR2_RX_DUPLICATE:
        /* a RNDV is answered with MATCHED once the go-ahead was given, with REVOKED if it
         * was dropped unmatched (see rndv_duplicate_flags) */
        mca_pml_dr2.counters.duplicates++;
        mca_pml_dr2_peer_queue_ack(peer, PML_DR2_HDR_ACK, id, d.ack_mask,
                                   rndv_duplicate_flags(hdr, msg, d.ack_flags));
        return;
    case PML_DR2_RX_ACCEPT:
        /* fragment 0 again, its vfrag still incomplete (it was corrupt or is a copy) */
        deliver_fragment(peer, msg, &d, payload, hdr);
        return;
    case PML_DR2_RX_NEW_MSG:
        break;
    default:
        mca_pml_dr2.counters.malformed++;
        return;
    }
    /* A new message (a size we buffer if eager; if rendezvous, what its RNDV carries). The
     * sender's rank is checked against the communicator it was sent on: one that another
     * took the id of is dropped by mca_pml_dr2_rxmsg_deliver. */
    comm = ompi_comm_lookup(hdr->match.ctx);
    if (NULL != comm && NULL != comm->c_pml_comm
        && mca_pml_dr2_rx_epoch_is(comm, hdr->match.has_epoch, hdr->match.epoch)
        && !mca_pml_dr2_rx_rank_is_peer(comm, hdr->match.src, peer)) {
        mca_pml_dr2.counters.malformed++; /* the rank is not the process that sent it */
        DR2_VERBOSE(20, "pml:dr2: dropped a message for cid %u: rank %d is not its sender",
                    hdr->match.ctx, hdr->match.src);
        return;
    }
    msg = mca_pml_dr2_rxmsg_alloc();
    if (NULL == msg) {
        return;
    }
    msg->peer = peer;
    msg->ctx = hdr->match.ctx;
    msg->epoch = hdr->match.epoch;
    msg->has_epoch = hdr->match.has_epoch;
    msg->src = hdr->match.src;
    msg->tag = hdr->match.tag;
    msg->seq = hdr->match.seq;
    msg->rndv = rndv;
    msg->msg_id = id;
    msg->msg_len = hdr->match.msg_len;
    if (rndv && hdr->frag_len > 0 && !rxmsg_keep_rndv_data(peer, msg, &d, hdr, payload)) {
        return;
    }
    if (!whole) {
        rxmsg_index(msg);
    }
    if (rndv) {
        /* its vfrag (the RNDV alone) is complete */
        (void) pml_dr2_window_check_and_mark(&peer->rx_window, id);
    }

    rxmsg_hold(msg); /* matching may complete and release it; we still use it below */
    delivering = msg;
    if (NULL != comm && NULL != comm->c_pml_comm) {
        mca_pml_dr2_rxmsg_deliver(comm, msg);
    } else if (msg->has_epoch && mca_pml_dr2_comm_freed(msg->ctx, msg->epoch, msg->tag, &revoked)) {
        rxmsg_drop_stale(msg);
    } else {
        /* the communicator does not exist here yet: keep it for add_comm */
        if (!rndv && msg->msg_len > 0) {
            msg->buf = mca_pml_dr2_rx_buffer_alloc(msg->msg_len);
        }
        if (!rndv && msg->msg_len > 0 && NULL == msg->buf) {
            delivering = NULL;
            mca_pml_dr2_rxmsg_release(msg);
            rxmsg_put(msg);
            return;
        }
        opal_list_append(&mca_pml_dr2.nocomm, &msg->super.super);
    }
    delivering = NULL;
    if (rxmsg_alive(msg)) { /* not a rendezvous dropped by a revoke */
        if (rndv) {
            if (NULL == msg->req) {
                mca_pml_dr2_peer_queue_ack(peer, PML_DR2_HDR_ACK, id, 1, 0);
            }
            mca_pml_dr2_rxmsg_try_complete(msg);
        } else {
            pml_dr2_rx_new_msg_accept(&d);
            deliver_fragment(peer, msg, &d, payload, hdr);
            if (rxmsg_alive(msg)) {
                if (whole && msg->bytes_received < msg->msg_len) {
                    rxmsg_index(msg); /* its fragment was corrupt: the resend must find it */
                }
                mca_pml_dr2_rxmsg_try_complete(msg);
            }
        }
    }
    rxmsg_put(msg);
}

mca_pml_dr2_recv_request_t *mca_pml_dr2_rx_take_in_order(mca_pml_dr2_peer_t *peer,
                                                         const pml_dr2_hdr_t *hdr)
{
    ompi_communicator_t *comm = ompi_comm_lookup(hdr->match.ctx);
    mca_pml_dr2_comm_t *dcomm;
    mca_pml_dr2_comm_proc_t *cp;
    mca_pml_dr2_recv_request_t *req;

    if (NULL == comm || NULL == comm->c_pml_comm
        || !mca_pml_dr2_rx_epoch_is(comm, hdr->match.has_epoch, hdr->match.epoch)
        || !mca_pml_dr2_rx_rank_is_peer(comm, hdr->match.src, peer)
        || tag_revoked(comm, hdr->match.tag)) {
        return NULL;
    }
    dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    cp = &dcomm->procs[hdr->match.src];
    if (hdr->match.seq != cp->expected_seq || !opal_list_is_empty(&cp->out_of_order)) {
        return NULL;
    }
    req = take_posted(dcomm, hdr->match.src, hdr->match.tag);
    if (NULL != req) {
        cp->expected_seq++;
    }
    return req;
}

void mca_pml_dr2_rx_receive_small(mca_pml_dr2_recv_request_t *req, mca_pml_dr2_peer_t *peer,
                                  const pml_dr2_hdr_t *hdr, const unsigned char *payload)
{
    mca_pml_dr2_recv_request_bind(req, hdr->match.src, hdr->match.tag, peer->proc);
    mca_pml_dr2_recv_request_place_small(req, payload, hdr->frag_len);
    complete_received(req, hdr->match.msg_len);
}

/* The common small message: an EAGER (checked whole by the codec) with no message or vfrag
 * of the peer half received, that a posted receive takes now
 * (mca_pml_dr2_rx_take_in_order). Its payload goes straight into the receive, its vfrag is
 * marked and acknowledged: no message object, no index. The decisions are the general
 * path's (the duplicate window, the sender's rank, revoked tags, matching order); anything
 * else, and an EAGER no posted receive takes, returns false for handle_match. */
static bool eager_receive_now(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                              const unsigned char *payload)
{
    uint32_t id = hdr->match.vfrag;
    bool in_order = pml_dr2_window_is_next(&peer->rx_window, id);
    mca_pml_dr2_recv_request_t *req;

    if (0 != opal_hash_table_get_size(&peer->rx_msgs)
        || 0 != opal_hash_table_get_size(&peer->rx_vfrags)
        || hdr->match.msg_len > MCA_PML_DR2_EAGER_LIMIT_MAX
        || (!in_order && PML_DR2_WINDOW_NEW != pml_dr2_window_check(&peer->rx_window, id))) {
        return false;
    }
    req = mca_pml_dr2_rx_take_in_order(peer, hdr);
    if (NULL == req) {
        return false;
    }
    if (in_order) {
        pml_dr2_window_mark_next(&peer->rx_window);
    } else {
        (void) pml_dr2_window_check_and_mark(&peer->rx_window, id);
    }
    /* a vfrag never seen before: no ACK of it can be queued to merge with */
    mca_pml_dr2_peer_queue_lazy_ack(peer, id);
    mca_pml_dr2_rx_receive_small(req, peer, hdr, payload);
    return true;
}

static void handle_frag(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                        const unsigned char *payload)
{
    mca_pml_dr2_rxmsg_t *msg = rxmsg_lookup(peer, pml_dr2_rx_msg_key(hdr));
    pml_dr2_rx_msg_view_t view;
    pml_dr2_rx_decision_t d;

    pml_dr2_rx_classify(&peer->rx_window, hdr, msg_view(msg, &view), MCA_PML_DR2_EAGER_LIMIT_MAX,
                        &d);
    switch (d.verdict) {
    case PML_DR2_RX_DUPLICATE:
        mca_pml_dr2.counters.duplicates++;
        mca_pml_dr2_peer_queue_ack(peer, PML_DR2_HDR_ACK, d.vfrag, d.ack_mask, 0);
        return;
    case PML_DR2_RX_UNKNOWN_MSG:
        /* its MATCH was lost (or the message was abandoned): the sender resends both */
        mca_pml_dr2.counters.unknown_msg++;
        return;
    case PML_DR2_RX_ACCEPT:
        deliver_fragment(peer, msg, &d, payload, hdr);
        return;
    default:
        mca_pml_dr2.counters.malformed++; /* data we never asked for, or a bad layout */
        return;
    }
}

/* An ACK from the peer, alone or inside an EAGER: a rendezvous' go-ahead (MATCHED) at once,
 * any other one from a later progress call (mca_pml_dr2_peer_defer_ack). */
static inline void ack_arrived(mca_pml_dr2_peer_t *peer, const pml_dr2_ack_hdr_t *ack,
                               uint8_t flags)
{
    if (OPAL_UNLIKELY(flags & PML_DR2_HDR_FLAG_REVOKED)) {
        mca_pml_dr2_vfrag_revoked(peer, ack->vfrag);
    } else if (flags & PML_DR2_HDR_FLAG_MATCHED) {
        mca_pml_dr2_vfrag_ack(peer, ack->vfrag, ack->mask, true);
    } else {
        mca_pml_dr2_peer_defer_ack(peer, ack->vfrag, ack->mask);
    }
}

void mca_pml_dr2_recv_segment(mca_pml_dr2_peer_t *peer, const unsigned char *buf, size_t len)
{
    size_t off = 0;

    while (off < len && !peer->failed) {
        pml_dr2_hdr_t hdr;
        size_t left = len - off;
        uint32_t max_payload = left > UINT32_MAX ? UINT32_MAX : (uint32_t) left;
        pml_dr2_hdr_status_t st = pml_dr2_hdr_decode_header(buf + off, left, max_payload, &hdr);
        const unsigned char *payload = buf + off + PML_DR2_HDR_COMMON_LEN;

        if (PML_DR2_HDR_OK != st) {
            /* cannot tell where the next header starts: drop the rest of the segment */
            mca_pml_dr2.counters.hdr_errors[st]++;
            DR2_VERBOSE(20, "pml:dr2: dropped a segment: %s", pml_dr2_hdr_status_name(st));
            return;
        }
        payload = buf + off + hdr.hdr_len;
        switch (hdr.type) {
        case PML_DR2_HDR_MATCH:
        case PML_DR2_HDR_RNDV:
            mca_pml_dr2.counters.frags_received++;
            handle_match(peer, &hdr, payload);
            break;
        case PML_DR2_HDR_FRAG:
            mca_pml_dr2.counters.frags_received++;
            handle_frag(peer, &hdr, payload);
            break;
        case PML_DR2_HDR_TINY:
            /* an EAGER in short form, without an ACK: its id completed from the window */
            hdr.type = PML_DR2_HDR_EAGER;
            hdr.match.vfrag = pml_dr2_window_expand_id(&peer->rx_window, hdr.match.vfrag,
                                                       PML_DR2_HDR_TINY_VFRAG_BITS);
            /* fall through */
        case PML_DR2_HDR_EAGER:
            mca_pml_dr2.counters.frags_received++;
            if (!eager_receive_now(peer, &hdr, payload)) {
                handle_match(peer, &hdr, payload);
            }
            if (0 != hdr.piggy_ack.mask && !peer->failed) {
                ack_arrived(peer, &hdr.piggy_ack, hdr.flags);
            }
            break;
        case PML_DR2_HDR_LOCAL:
            mca_pml_dr2.counters.frags_received++;
            mca_pml_dr2_local_receive(peer, &hdr, payload);
            break;
        case PML_DR2_HDR_ACK:
            if (OPAL_UNLIKELY(hdr.flags & (PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_PROBE_REPLY))) {
                mca_pml_dr2_path_probe_received(peer, peer->rx_path, &hdr);
                break;
            }
            ack_arrived(peer, &hdr.ack, hdr.flags);
            break;
        case PML_DR2_HDR_NACK:
            mca_pml_dr2_vfrag_nack(peer, &hdr);
            break;
        default:
            mca_pml_dr2.counters.malformed++;
            return;
        }
        off += pml_dr2_hdr_wire_len(&hdr);
    }
}

void mca_pml_dr2_drain_deferred(void)
{
    while (!opal_list_is_empty(&mca_pml_dr2.deferred)) {
        mca_pml_dr2_deferred_t *d = (mca_pml_dr2_deferred_t *) opal_list_remove_first(
            &mca_pml_dr2.deferred);
        d->peer->rx_path = d->path;
        mca_pml_dr2_peer_heard(d->peer, d->path);
        mca_pml_dr2_recv_segment(d->peer, d->data, d->len);
        OBJ_DESTRUCT(&d->super);
        free(d);
    }
}

/* A segment from a BTL endpoint that is not one of the BML endpoints we mapped: a BTL can
 * create endpoints of its own, e.g. btl/tcp when a process of another job (MPI_Comm_spawn)
 * connects before the BML added it. The sender is learnt from a header that names it (MATCH,
 * RNDV, EAGER, TINY, LOCAL: decoded, so its communicator and rank can be trusted as much as
 * any header); other headers carry no sender and are dropped until then (the sender's
 * timers resend them). */
static mca_pml_dr2_peer_t *learn_endpoint(struct mca_btl_base_endpoint_t *ep,
                                          const mca_btl_base_receive_descriptor_t *desc)
{
    const mca_btl_base_segment_t *seg = &desc->des_segments[0];
    pml_dr2_hdr_t hdr;
    ompi_communicator_t *comm;
    mca_pml_dr2_peer_t *peer;
    uint32_t max = seg->seg_len > UINT32_MAX ? UINT32_MAX : (uint32_t) seg->seg_len;

    if (NULL == ep || 1 != desc->des_segment_count
        || PML_DR2_HDR_OK != pml_dr2_hdr_decode_header(seg->seg_addr.pval, seg->seg_len, max, &hdr)
        || (PML_DR2_HDR_MATCH != hdr.type && PML_DR2_HDR_RNDV != hdr.type
            && PML_DR2_HDR_EAGER != hdr.type && PML_DR2_HDR_TINY != hdr.type
            && PML_DR2_HDR_LOCAL != hdr.type)) {
        return NULL;
    }
    comm = ompi_comm_lookup(hdr.match.ctx);
    if (NULL == comm || NULL == comm->c_pml_comm
        || !mca_pml_dr2_rx_epoch_is(comm, hdr.match.has_epoch, hdr.match.epoch)
        || hdr.match.src >= comm->c_remote_group->grp_proc_count) {
        return NULL;
    }
    peer = mca_pml_dr2_comm_peer(comm, hdr.match.src);
    if (NULL != peer) {
        (void) opal_hash_table_set_value_uint64(&mca_pml_dr2.peer_by_endpoint,
                                                (uint64_t) (uintptr_t) ep, peer);
        DR2_VERBOSE(10, "pml:dr2: endpoint %p is %s", (void *) ep,
                    OMPI_NAME_PRINT(&peer->proc->super.proc_name));
    }
    return peer;
}

/* The peer a segment on a BTL that gives no endpoint comes from, named by the FROM header
 * that starts it (pml_dr2_from.h); *skip is that header's length. */
static mca_pml_dr2_peer_t *named_sender(const mca_btl_base_receive_descriptor_t *desc, size_t *skip)
{
    const mca_btl_base_segment_t *seg = &desc->des_segments[0];

    *skip = PML_DR2_HDR_FROM_LEN;
    if (OPAL_UNLIKELY(0 == desc->des_segment_count)) {
        return NULL;
    }
    return mca_pml_dr2_from_sender(seg->seg_addr.pval, seg->seg_len);
}

void mca_pml_dr2_recv_frag_callback(mca_btl_base_module_t *btl,
                                    const mca_btl_base_receive_descriptor_t *desc)
{
    mca_pml_dr2_peer_t *peer;
    size_t len = 0, skip = 0; /* bytes of the first segment before dr2's headers */
    bool named;

    if (OPAL_UNLIKELY(mca_pml_dr2.closed)) {
        return; /* a late segment after finalize (the BTLs close after us): ignored */
    }
    mca_pml_dr2_enter();
    named = mca_pml_dr2_btl_names_sender(btl);
    if (OPAL_UNLIKELY(named)) {
        peer = named_sender(desc, &skip);
    } else {
        peer = mca_pml_dr2_peer_from_endpoint(desc->endpoint);
        if (NULL == peer) {
            peer = learn_endpoint(desc->endpoint, desc);
        }
        if (NULL == peer) {
            mca_pml_dr2.counters.unknown_endpoint++;
            DR2_VERBOSE(20, "pml:dr2: dropped a segment from an unknown endpoint %p",
                        (void *) desc->endpoint);
        }
    }
    if (NULL == peer) {
        mca_pml_dr2_leave();
        return;
    }
    peer->ka_heard = true; /* it is alive (pml_dr2_keepalive.h) */
    for (size_t i = 0; i < desc->des_segment_count; i++) {
        len += desc->des_segments[i].seg_len;
    }
    len -= skip; /* named_sender decoded that much */
    if (mca_pml_dr2.depth > 1 || desc->des_segment_count > 1) {
        /* nested in another dr2 frame (or scattered): copy, process when it is safe */
        mca_pml_dr2_deferred_t *d = malloc(sizeof(*d) + len);
        if (NULL != d) {
            size_t off = 0;
            OBJ_CONSTRUCT(&d->super, opal_list_item_t);
            d->peer = peer;
            d->path = named ? mca_pml_dr2_path_of_btl(peer, btl)
                            : mca_pml_dr2_path_of_endpoint(peer, desc->endpoint);
            d->len = len;
            for (size_t i = 0; i < desc->des_segment_count; i++) {
                size_t from = 0 == i ? skip : 0;
                memcpy(d->data + off, (const unsigned char *) desc->des_segments[i].seg_addr.pval + from,
                       desc->des_segments[i].seg_len - from);
                off += desc->des_segments[i].seg_len - from;
            }
            opal_list_append(&mca_pml_dr2.deferred, &d->super);
        }
    } else if (1 == desc->des_segment_count) {
        /* ACKs sent alone go back on the path that delivered (pml_dr2_pending_ack_t) */
        if (OPAL_LIKELY(1 == peer->npaths)) {
            peer->rx_path = 0;
        } else {
            peer->rx_path = named ? mca_pml_dr2_path_of_btl(peer, btl)
                                  : mca_pml_dr2_path_of_endpoint(peer, desc->endpoint);
        }
        mca_pml_dr2_peer_heard(peer, peer->rx_path);
        mca_pml_dr2_recv_segment(peer, (const unsigned char *) desc->des_segments[0].seg_addr.pval + skip,
                                 len);
    }
    mca_pml_dr2_leave();
}
