/*
 * ompi-resilience: pml/dr2 send requests and the send entry points (see pml_dr2_sendreq.h).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/runtime/params.h"

#include "pml_dr2.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_local.h"
#include "pml_dr2_sendreq.h"
#include "pml_dr2_vfrag.h"

static void send_request_release(mca_pml_dr2_send_request_t *req)
{
    MCA_PML_BASE_SEND_REQUEST_FINI(&req->req_send);
    /* always under the dr2 lock: the single-threaded free list is enough */
    opal_free_list_return_st(&mca_pml_dr2.send_requests, (opal_free_list_item_t *) req);
}

static int send_request_free(struct ompi_request_t **request)
{
    mca_pml_dr2_send_request_t *req = *(mca_pml_dr2_send_request_t **) request;

    mca_pml_dr2_enter();
    req->req_send.req_base.req_free_called = true;
    if (req->req_send.req_base.req_pml_complete) {
        send_request_release(req);
    }
    mca_pml_dr2_leave();
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* Sends cannot be cancelled once started (MPI 4 deprecates it), except that under ULFM a
 * send to a failed process must complete in error (the request's error is already set by
 * ompi_request_is_failed). A send on a revoked communicator to a live process is not
 * abandoned (as with ob1): it already holds a sequence number of the communicator, and a
 * message the receiver never hears of would leave a hole there that every later message
 * from us on it (those the revoke lets through: fault-tolerance tags, or any but a
 * collective's after a process failure) would wait behind for ever. The receiver answers
 * it soon: it is revoked there too (ULFM propagates revokes) and then drops it with an
 * ACK flagged REVOKED, or it matched it first and the data flows; either way the request
 * completes in error (mca_pml_dr2_send_request_complete). */
static int send_request_cancel(struct ompi_request_t *request, int flag)
{
    mca_pml_dr2_send_request_t *req = (mca_pml_dr2_send_request_t *) request;
    ompi_communicator_t *comm = req->req_send.req_base.req_comm;
    int error = request->req_status.MPI_ERROR;
    bool failed;

    mca_pml_dr2_enter();
    if (REQUEST_COMPLETE(request) || req->req_send.req_base.req_pml_complete) {
        mca_pml_dr2_leave();
        return OMPI_SUCCESS;
    }
    failed = !ompi_comm_is_proc_active(comm, req->req_send.req_base.req_peer,
                                       OMPI_COMM_IS_INTER(comm))
             || (NULL != req->peer && req->peer->failed);
    if (ompi_ftmpi_enabled && failed) {
        if (MPI_SUCCESS == error || MPI_ERR_REVOKED == error) {
            error = MPI_ERR_PROC_FAILED;
        }
        if (NULL != req->msg) {
            mca_pml_dr2_txmsg_abort(req->msg, error); /* completes the request */
        } else {
            mca_pml_dr2_send_request_complete(req, error);
        }
        mca_pml_dr2_leave();
        return OMPI_SUCCESS;
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS; /* not cancelled: the send proceeds */
}

static void send_request_construct(mca_pml_dr2_send_request_t *req)
{
    req->req_send.req_base.req_type = MCA_PML_REQUEST_SEND;
    req->req_send.req_base.req_ompi.req_start = mca_pml_dr2_start;
    req->req_send.req_base.req_ompi.req_free = send_request_free;
    req->req_send.req_base.req_ompi.req_cancel = send_request_cancel;
    req->peer = NULL;
    req->msg = NULL;
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_send_request_t, mca_pml_base_send_request_t,
                   send_request_construct, NULL);

int mca_pml_dr2_send_request_dropped_error(const mca_pml_dr2_send_request_t *req)
{
    int error = MPI_ERR_REVOKED;

    if (NULL != req) {
        error = mca_pml_dr2_comm_revoked_error(req->req_send.req_base.req_comm,
                                               req->req_send.req_base.req_tag);
    }
    return MPI_SUCCESS == error ? MPI_ERR_REVOKED : error;
}

void mca_pml_dr2_send_request_complete(mca_pml_dr2_send_request_t *req, int error)
{
    if (OPAL_UNLIKELY(MPI_SUCCESS == error && ompi_ftmpi_enabled)) {
        error = mca_pml_dr2_comm_revoked_error(req->req_send.req_base.req_comm,
                                               req->req_send.req_base.req_tag);
    }
    req->req_send.req_base.req_ompi.req_status.MPI_ERROR = error;
    req->req_send.req_base.req_pml_complete = true;
    if (req->req_send.req_base.req_free_called) {
        send_request_release(req);
        return;
    }
    /* may run a completion callback that frees the request: not touched afterwards */
    ompi_request_complete(&req->req_send.req_base.req_ompi, true);
}

/* Copy the whole message into `dst` (packed). */
static void pack_all(mca_pml_dr2_send_request_t *req, void *dst, size_t len)
{
    if (!opal_convertor_need_buffers(&req->req_send.req_base.req_convertor)) {
        void *src;
        opal_convertor_get_offset_pointer(&req->req_send.req_base.req_convertor, 0, &src);
        memcpy(dst, src, len);
        return;
    }
    struct iovec iov = {.iov_base = dst, .iov_len = len};
    uint32_t iov_count = 1;
    size_t max_data = len, pos = 0;

    opal_convertor_set_position(&req->req_send.req_base.req_convertor, &pos);
    opal_convertor_pack(&req->req_send.req_base.req_convertor, &iov, &iov_count, &max_data);
}

/* The matching envelope of a new message to rank `dst` of comm: takes the next sequence
 * number towards that rank. */
static void txmsg_set_envelope(mca_pml_dr2_txmsg_t *msg, mca_pml_dr2_peer_t *peer,
                               ompi_communicator_t *comm, mca_pml_dr2_comm_t *dcomm, int dst,
                               int tag, size_t len)
{
    msg->peer = peer;
    msg->ctx = ompi_comm_get_local_cid(comm);
    msg->epoch = mca_pml_dr2_comm_epoch(comm);
    msg->src = comm->c_my_rank;
    msg->tag = tag;
    msg->seq = dcomm->procs[dst].send_seq++;
    msg->msg_len = len;
    msg->frag_len = mca_pml_dr2_peer_max_payload(peer);
}

/* The message straight from the caller's buffer as a LOCAL (mca_pml_dr2_local_send) or a
 * TINY (mca_pml_dr2_txmsg_send_tiny), if it qualifies for one; its sequence number is
 * taken only then. With `must_leave` (a request completed on return), only a LOCAL the
 * BTL sends at once: a TINY or a LOCAL the BTL queues could wait in this process after
 * the request completed. */
static bool send_small_now(mca_pml_dr2_peer_t *peer, ompi_communicator_t *comm,
                           mca_pml_dr2_comm_t *dcomm, int dst, int tag, const void *data,
                           size_t len, bool must_leave)
{
    mca_pml_dr2_comm_proc_t *cp = &dcomm->procs[dst];
    pml_dr2_match_hdr_t match;

    match.ctx = ompi_comm_get_local_cid(comm);
    match.epoch = mca_pml_dr2_comm_epoch(comm);
    match.src = comm->c_my_rank;
    match.tag = tag;
    match.seq = cp->send_seq;
    if (!mca_pml_dr2_local_send(peer, &match, data, (uint32_t) len, must_leave)
        && (must_leave || len > MCA_PML_DR2_TINY_SEND_MAX
            || !mca_pml_dr2_txmsg_send_tiny(peer, &match, data, (uint32_t) len))) {
        return false;
    }
    cp->send_seq++;
    return true;
}

/* A message send_small_now may take: one that fits a TINY or a LOCAL to this peer. */
static inline bool small_now_fits(const mca_pml_dr2_peer_t *peer, size_t len)
{
    return len <= MCA_PML_DR2_TINY_SEND_MAX || mca_pml_dr2_local_fits(peer, len);
}

/* A small eager request to a peer that takes LOCALs, contiguous: sent now, gone from this
 * process, and complete; false if the BTL would have queued it (the general path takes it,
 * and its request completes once the message has left). */
static bool send_local_request(mca_pml_dr2_send_request_t *sendreq, mca_pml_dr2_peer_t *peer,
                               ompi_communicator_t *comm, mca_pml_dr2_comm_t *dcomm, size_t len)
{
    mca_pml_base_request_t *base = &sendreq->req_send.req_base;
    void *data = NULL;

    if (len > 0) {
        if (opal_convertor_need_buffers(&base->req_convertor)) {
            return false;
        }
        opal_convertor_get_offset_pointer(&base->req_convertor, 0, &data);
    }
    if (!send_small_now(peer, comm, dcomm, base->req_peer, base->req_tag, data, len, true)) {
        return false;
    }
    mca_pml_dr2_send_request_complete(sendreq, MPI_SUCCESS);
    return true;
}

/* The request completes when its message is done (its last ACK, or its abort), not when
 * it starts. */
static inline void send_request_completes_with(mca_pml_dr2_send_request_t *sendreq,
                                               mca_pml_dr2_txmsg_t *msg)
{
    msg->req = sendreq;
    sendreq->msg = msg;
}

int mca_pml_dr2_send_request_start(mca_pml_dr2_send_request_t *sendreq)
{
    mca_pml_base_request_t *base = &sendreq->req_send.req_base;
    ompi_communicator_t *comm = base->req_comm;
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    size_t len;
    mca_pml_dr2_peer_t *peer;
    mca_pml_dr2_txmsg_t *msg;
    void *copy = NULL;
    mca_pml_dr2_own_t own = MCA_PML_DR2_OWN_NONE;
    bool complete_now = false;
    size_t eager_limit;

    MCA_PML_BASE_SEND_START(&sendreq->req_send);
    len = sendreq->req_send.req_bytes_packed;

    /* ULFM: a send on a revoked communicator or to a failed process completes in error
     * (ob1: isend.c); it must never wait for a peer that will not answer. */
    if (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(base->req_tag)) {
        mca_pml_dr2_send_request_complete(sendreq, MPI_ERR_REVOKED);
        return OMPI_SUCCESS;
    }
    if (ompi_comm_coll_revoked(comm) && ompi_request_tag_is_collective(base->req_tag)) {
        mca_pml_dr2_send_request_complete(sendreq, MPI_ERR_PROC_FAILED);
        return OMPI_SUCCESS;
    }
    if (!ompi_comm_is_proc_active(comm, base->req_peer, OMPI_COMM_IS_INTER(comm))) {
        mca_pml_dr2_send_request_complete(sendreq, MPI_ERR_PROC_FAILED);
        return OMPI_SUCCESS;
    }
    peer = mca_pml_dr2_comm_peer(comm, base->req_peer);
    if (NULL == peer || peer->failed) {
        mca_pml_dr2_send_request_complete(sendreq, MPI_ERR_PROC_FAILED);
        return OMPI_SUCCESS;
    }
    sendreq->peer = peer;
    eager_limit = mca_pml_dr2_peer_eager_limit(peer);

    if (MCA_PML_BASE_SEND_BUFFERED == sendreq->req_send.req_send_mode && len > 0) {
        /* buffered: the copy goes to the user's attached buffer, whatever the size */
        copy = mca_pml_base_bsend_request_alloc_buf(len);
        if (NULL == copy) {
            return OMPI_ERR_BUFFER;
        }
        own = MCA_PML_DR2_OWN_BSEND;
        complete_now = true;
    } else if (MCA_PML_BASE_SEND_SYNCHRONOUS != sendreq->req_send.req_send_mode
               && len <= eager_limit) {
        complete_now = true;
        if (len > 0 && len > MCA_PML_DR2_INLINE_MAX) {
            copy = mca_pml_dr2_copy_alloc(len, &own);
            if (NULL == copy) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
        }
    }

    if (complete_now && NULL == copy && mca_pml_dr2_local_fits(peer, len)
        && send_local_request(sendreq, peer, comm, dcomm, len)) {
        return OMPI_SUCCESS;
    }
    if (NULL == copy && len > 0 && opal_convertor_need_buffers(&base->req_convertor)) {
        /* A non-contiguous rendezvous is packed once, up front: fragments are cut at fixed
         * byte offsets, and the convertor cannot pack a range that starts or ends inside a
         * basic element (it stops short). The request still completes on the last ACK. */
        copy = malloc(len);
        if (NULL == copy) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        own = MCA_PML_DR2_OWN_MALLOC;
    }

    msg = mca_pml_dr2_txmsg_alloc();
    if (NULL == msg) {
        mca_pml_dr2_copy_release(own, copy);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    txmsg_set_envelope(msg, peer, comm, dcomm, base->req_peer, base->req_tag, len);
    if (complete_now && NULL == copy && len > 0) {
        /* small eager message: the copy lives in the message itself */
        copy = msg->inline_data;
        own = MCA_PML_DR2_OWN_INLINE;
    }
    if (NULL != copy) {
        pack_all(sendreq, copy, len);
        msg->contig = copy;
        msg->owned = copy;
        msg->own = own;
    } else if (len > 0) {
        /* contiguous user buffer: fragments are checksummed straight out of it */
        void *p;
        opal_convertor_get_offset_pointer(&base->req_convertor, 0, &p);
        msg->contig = p;
    }
    /* Large messages, synchronous ones of any size, and buffered ones above the eager
     * limit go by rendezvous: nothing but the envelope until the receiver matched. */
    msg->rndv = len > eager_limit
                || MCA_PML_BASE_SEND_SYNCHRONOUS == sendreq->req_send.req_send_mode;
    if (!complete_now) {
        send_request_completes_with(sendreq, msg);
    }
    mca_pml_dr2_txmsg_start(msg);
    if (complete_now && MCA_PML_BASE_SEND_BUFFERED != sendreq->req_send.req_send_mode
        && !mca_pml_dr2_txmsg_has_left(msg)) {
        /* Eager, but still in this process's queues or its BTL's: complete it when the
         * receiver acknowledges it, as a rendezvous, not now. Like ob1's eager send, which
         * completes when the BTL has written it, the request then keeps the application in
         * MPI until the message has left: a process that goes on outside MPI (Open MPI's
         * own MPI_Comm_spawn waits in PMIx_Connect after broadcasting the port) would
         * hold it back. The message cannot have finished inside txmsg_start: ACKs and
         * aborts reach it from progress only. */
        complete_now = false;
        send_request_completes_with(sendreq, msg);
    }
    if (complete_now) {
        /* after the message is queued, so that a completion callback that sends again
         * cannot overtake it */
        mca_pml_dr2_send_request_complete(sendreq, MPI_SUCCESS);
    }
    return OMPI_SUCCESS;
}

static mca_pml_dr2_send_request_t *send_request_alloc(const void *buf, size_t count,
                                                      ompi_datatype_t *datatype, int dst,
                                                      int tag, mca_pml_base_send_mode_t mode,
                                                      ompi_communicator_t *comm, bool persistent)
{
    mca_pml_dr2_send_request_t *sendreq;
    ompi_proc_t *proc;

    if (dst < 0 || dst >= comm->c_remote_group->grp_proc_count) {
        return NULL;
    }
    proc = ompi_comm_peer_lookup(comm, dst);
    if (NULL == proc) {
        return NULL;
    }
    mca_pml_dr2_enter();
    sendreq = (mca_pml_dr2_send_request_t *) opal_free_list_get_st(&mca_pml_dr2.send_requests);
    mca_pml_dr2_leave();
    if (NULL == sendreq) {
        return NULL;
    }
    sendreq->req_send.req_base.req_proc = proc;
    sendreq->req_send.req_base.req_type = MCA_PML_REQUEST_SEND;
    sendreq->req_send.req_base.req_ompi.req_cancel = send_request_cancel;
    sendreq->msg = NULL;
    sendreq->peer = NULL;
    MCA_PML_BASE_SEND_REQUEST_INIT(&sendreq->req_send, buf, count, datatype, dst, tag, comm,
                                   mode, persistent, 0);
    return sendreq;
}

int mca_pml_dr2_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode,
                           struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_dr2_send_request_t *sendreq;

    sendreq = send_request_alloc(buf, count, datatype, dst, tag, mode, comm, true);
    if (NULL == sendreq) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* inactive until MPI_Start: complete for the PML, so that MPI_Request_free works */
    sendreq->req_send.req_base.req_pml_complete = true;
    *request = &sendreq->req_send.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int mca_pml_dr2_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                      struct ompi_request_t **request)
{
    mca_pml_dr2_send_request_t *sendreq;
    int rc;

    sendreq = send_request_alloc(buf, count, datatype, dst, tag, mode, comm, false);
    if (NULL == sendreq) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_dr2_enter();
    rc = mca_pml_dr2_send_request_start(sendreq);
    if (OMPI_SUCCESS != rc) {
        send_request_release(sendreq);
        mca_pml_dr2_leave();
        return rc;
    }
    mca_pml_dr2_leave();
    *request = &sendreq->req_send.req_base.req_ompi;
    return OMPI_SUCCESS;
}

/* Has everything for `peer` gone to its transports: no fragment waiting in our queues, and
 * every path that is up completed the descriptors it had been handed up to marks[i]? A path
 * that went down had its fragments rerouted; a failed peer has nothing more to wait for.
 * Nor is a path waited for whose transport the watchdog gave up on while another path is
 * up: the ACK timers no longer wait for what it holds (their timeouts take the path down,
 * and its vfrags are resent on the others). It may hold nothing of a message at all (ACKs,
 * fragments acknowledged since by their copies on the other path), and then no ACK timeout
 * ever takes it down: btl/ofi's sockets provider holds the segments it had when its network
 * was cut, for ever, and an MPI_Send waited here for them until the job was killed. */
static bool peer_flushed(mca_pml_dr2_peer_t *peer, const uint64_t *marks)
{
    if (peer->failed || peer->gone || !mca_pml_dr2_peer_proc_active(peer)) {
        return true;
    }
    if (peer->tx_pending > 0 || !opal_list_is_empty(&peer->tx_blocked)) {
        return false;
    }
    for (int i = 0; i < peer->npaths; i++) {
        const mca_pml_dr2_path_t *path = &peer->paths[i];
        if (peer->path_state[i].up && !mca_pml_dr2_path_has_sent(path, marks[i])
            && !(path->wdog_expired && mca_pml_dr2_paths_up(peer) > 1)) {
            return false;
        }
    }
    return true;
}

/* After a send without a request (lock held, and held again on return): wait in progress
 * until what it handed the peer's paths has left them, the request-less counterpart of
 * completing a request only once its message has left (mca_pml_dr2_send_request_start):
 * a process that blocks outside MPI after MPI_Send must not hold the message back. The
 * common message has left already: one check.
 * While it waits, the wait counts as an armed timer: progress reads the clock only for
 * timers, and without the clock the watchdog never gives up on a stuck transport. With
 * every vfrag acknowledged (by its copies on another path) nothing else was armed, and an
 * MPI_Send waited for ever for segments btl/ofi's sockets provider held on a cut network. */
static void send_flush_locked(mca_pml_dr2_peer_t *peer)
{
    uint64_t marks[PML_DR2_PATH_MAX];

    for (int i = 0; i < peer->npaths; i++) {
        marks[i] = peer->paths[i].tx_handed;
    }
    if (peer_flushed(peer, marks)) {
        return;
    }
    mca_pml_dr2.timers_armed++;
    do {
        mca_pml_dr2_leave();
        opal_progress();
        mca_pml_dr2_enter();
    } while (!peer_flushed(peer, marks));
    mca_pml_dr2.timers_armed--;
}

/* MPI_Send of a small contiguous message in standard or ready mode, without a request (as
 * ob1's inline send): the message object has its copy before this returns (taken right
 * after the first transmission, see MCA_PML_DR2_OWN_BORROWED) and keeps it until
 * acknowledged; the send is complete on return, once the message has left the process
 * (send_flush_locked), as an eager request is when it completes. One
 * that fits a TINY or a LOCAL goes from these arguments to the wire (send_small_now). Anything unusual (a
 * failed peer, a revoked communicator, a datatype to pack, no message object) is left to
 * the general path, which reports it: OMPI_ERR_NOT_AVAILABLE then. */
static int send_small_without_request(const void *buf, size_t count, ompi_datatype_t *datatype,
                                      int dst, int tag, mca_pml_base_send_mode_t mode,
                                      ompi_communicator_t *comm)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_peer_t *peer;
    mca_pml_dr2_txmsg_t *msg;
    const unsigned char *data;
    size_t len;

#if OPAL_ENABLE_HETEROGENEOUS_SUPPORT
    return OMPI_ERR_NOT_AVAILABLE; /* the data may need converting: the convertor's job */
#endif
    if (MCA_PML_BASE_SEND_SYNCHRONOUS == mode || MCA_PML_BASE_SEND_BUFFERED == mode
        || NULL == dcomm || dst < 0 || dst >= dcomm->nprocs
        || !ompi_datatype_is_contiguous_memory_layout(datatype, count)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    len = datatype->super.size * count;
    /* pml_dr2_eager_limit 0 (per BTL) is at least 16 KiB: above MCA_PML_DR2_COPY_BUFFER_SIZE */
    if (len > MCA_PML_DR2_COPY_BUFFER_SIZE
        || (0 != mca_pml_dr2.eager_limit && len > mca_pml_dr2.eager_limit)
        || ompi_comm_is_revoked(comm) || ompi_comm_coll_revoked(comm)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    mca_pml_dr2_enter();
    peer = mca_pml_dr2_comm_peer(comm, dst);
    if (NULL == peer || peer->failed || !mca_pml_dr2_peer_proc_active(peer)) {
        mca_pml_dr2_leave();
        return OMPI_ERR_NOT_AVAILABLE;
    }
    data = (const unsigned char *) buf + datatype->super.true_lb;
    if (small_now_fits(peer, len)
        && send_small_now(peer, comm, dcomm, dst, tag, data, len, false)) {
        send_flush_locked(peer);
        mca_pml_dr2_leave();
        return OMPI_SUCCESS;
    }
    if (NULL == (msg = mca_pml_dr2_txmsg_alloc())) {
        mca_pml_dr2_leave();
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (len > MCA_PML_DR2_INLINE_MAX) {
        /* the copy's buffer before anything is sent: a message never lacks its copy */
        msg->owned = mca_pml_dr2_copy_buffer_get();
        if (NULL == msg->owned) {
            mca_pml_dr2_txmsg_free(msg);
            mca_pml_dr2_leave();
            return OMPI_ERR_NOT_AVAILABLE;
        }
    }
    txmsg_set_envelope(msg, peer, comm, dcomm, dst, tag, len);
    if (len > 0) {
        /* sent from the user's buffer if it can go at once, copied afterwards */
        msg->contig = data;
        msg->own = MCA_PML_DR2_OWN_BORROWED;
    }
    msg->rndv = false;
    mca_pml_dr2_txmsg_start(msg);
    send_flush_locked(peer);
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

int mca_pml_dr2_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm)
{
    ompi_request_t *request = NULL;
    int rc;

    rc = send_small_without_request(buf, count, datatype, dst, tag, mode, comm);
    if (OMPI_ERR_NOT_AVAILABLE != rc) {
        return rc;
    }

    rc = mca_pml_dr2_isend(buf, count, datatype, dst, tag, mode, comm, &request);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    ompi_request_wait_completion(request);
    rc = request->req_status.MPI_ERROR;
    if (!REQUEST_COMPLETE(request)) {
        /* ULFM: the wait gave up on a failed peer: take the request back */
        ompi_request_cancel(request);
        ompi_request_wait_completion(request);
    }
    ompi_request_free(&request);
    return rc;
}
