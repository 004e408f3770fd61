/*
 * ompi-resilience: pml/dr2 receive requests, receive and probe entry points
 * (see pml_dr2_recvreq.h).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/params.h"

#include "pml_dr2.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_crc.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_recvreq.h"
#include "pml_dr2_sendreq.h"

static void recv_request_release(mca_pml_dr2_recv_request_t *req)
{
    MCA_PML_BASE_RECV_REQUEST_FINI(&req->req_recv);
    /* always under the dr2 lock: the single-threaded free list is enough */
    opal_free_list_return_st(&mca_pml_dr2.recv_requests, (opal_free_list_item_t *) req);
}

static int recv_request_free(struct ompi_request_t **request)
{
    mca_pml_dr2_recv_request_t *req = *(mca_pml_dr2_recv_request_t **) request;

    mca_pml_dr2_enter();
    req->req_recv.req_base.req_free_called = true;
    if (req->req_recv.req_base.req_pml_complete) {
        recv_request_release(req);
    }
    mca_pml_dr2_leave();
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

void mca_pml_dr2_recv_request_complete(mca_pml_dr2_recv_request_t *req, int error)
{
    req->req_recv.req_base.req_ompi.req_status.MPI_ERROR = error;
    req->req_recv.req_base.req_pml_complete = true;
    if (req->req_recv.req_base.req_free_called) {
        recv_request_release(req);
        return;
    }
    ompi_request_complete(&req->req_recv.req_base.req_ompi, true);
}

/* A posted receive that has not matched can always be cancelled. A matched one only when
 * its sender failed (ULFM): nobody will ever send the rest. Its sender is req_peer, also
 * for a receive posted for any source (mca_pml_dr2_recv_request_bind): the failure of
 * another process leaves it to complete with its message, as ULFM wants (MPI_ERR_PROC_
 * FAILED_PENDING is for receives that have not matched). */
static int recv_request_cancel(struct ompi_request_t *request, int flag)
{
    mca_pml_dr2_recv_request_t *req = (mca_pml_dr2_recv_request_t *) request;
    ompi_communicator_t *comm = req->req_recv.req_base.req_comm;

    mca_pml_dr2_enter();
    if (REQUEST_COMPLETE(request) || req->req_recv.req_base.req_pml_complete) {
        mca_pml_dr2_leave();
        return OMPI_SUCCESS;
    }
    if (req->posted) {
        opal_list_remove_item(&((mca_pml_dr2_comm_t *) comm->c_pml_comm)->posted,
                              (opal_list_item_t *) req);
        req->posted = false;
        request->req_status._cancelled = true;
        request->req_status._ucount = 0;
        mca_pml_dr2_recv_request_complete(req, request->req_status.MPI_ERROR);
    } else if (NULL != req->msg
               && !ompi_comm_is_proc_active(comm, req->req_recv.req_base.req_peer,
                                            OMPI_COMM_IS_INTER(comm))) {
        int error = request->req_status.MPI_ERROR;
        mca_pml_dr2_rxmsg_t *msg = req->msg;
        msg->req = NULL;
        req->msg = NULL;
        mca_pml_dr2_rxmsg_release(msg);
        request->req_status._cancelled = true;
        mca_pml_dr2_recv_request_complete(req, MPI_SUCCESS == error ? MPI_ERR_PROC_FAILED : error);
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

static void recv_request_construct(mca_pml_dr2_recv_request_t *req)
{
    req->req_recv.req_base.req_type = MCA_PML_REQUEST_RECV;
    req->req_recv.req_base.req_ompi.req_start = mca_pml_dr2_start;
    req->req_recv.req_base.req_ompi.req_free = recv_request_free;
    req->req_recv.req_base.req_ompi.req_cancel = recv_request_cancel;
    req->msg = NULL;
    req->capacity = 0;
    req->contiguous = false;
    req->posted = false;
    req->prepared_with = NULL;
    req->any_source_matched = false;
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_recv_request_t, mca_pml_base_recv_request_t,
                   recv_request_construct, NULL);

static void recv_request_init(mca_pml_dr2_recv_request_t *req, void *buf, size_t count,
                              ompi_datatype_t *datatype, int src, int tag,
                              ompi_communicator_t *comm, bool persistent)
{
    req->req_recv.req_base.req_type = MCA_PML_REQUEST_RECV;
    req->msg = NULL;
    req->posted = false;
    req->capacity = 0;
    req->prepared_with = NULL;
    req->any_source_matched = false;
    MCA_PML_BASE_RECV_REQUEST_INIT(&req->req_recv, buf, count, datatype, src, tag, comm,
                                   persistent);
}

static mca_pml_dr2_recv_request_t *recv_request_alloc(void *buf, size_t count,
                                                      ompi_datatype_t *datatype, int src,
                                                      int tag, ompi_communicator_t *comm,
                                                      bool persistent)
{
    mca_pml_dr2_recv_request_t *req;

    mca_pml_dr2_enter();
    req = (mca_pml_dr2_recv_request_t *) opal_free_list_get_st(&mca_pml_dr2.recv_requests);
    mca_pml_dr2_leave();
    if (NULL != req) {
        recv_request_init(req, buf, count, datatype, src, tag, comm, persistent);
    }
    return req;
}

/* ---- matching --------------------------------------------------------------------------- */

/* Set up the convertor, capacity and contiguity of the request's buffer for data packed by
 * a process whose master convertor is `master`. Done when the receive is posted whenever the
 * sender's convertor is known then (a named source; with ANY_SOURCE in a homogeneous build
 * every process shares the local one): matching a message then only has to compare. */
static void recv_request_prepare(mca_pml_dr2_recv_request_t *req, opal_convertor_t *master)
{
    mca_pml_base_request_t *base = &req->req_recv.req_base;

    req->prepared_with = master;
    req->capacity = 0;
    req->contiguous = true;
    if (base->req_count > 0 && base->req_datatype->super.size > 0) {
        opal_convertor_copy_and_prepare_for_recv(master, &base->req_datatype->super,
                                                 base->req_count, base->req_addr, 0,
                                                 &base->req_convertor);
        opal_convertor_get_packed_size(&base->req_convertor, &req->capacity);
        req->contiguous = !opal_convertor_need_buffers(&base->req_convertor);
    }
}

void mca_pml_dr2_recv_request_bind(mca_pml_dr2_recv_request_t *req, int src, int tag,
                                   ompi_proc_t *proc)
{
    mca_pml_base_request_t *base = &req->req_recv.req_base;

    req->posted = false;
    if (OMPI_ANY_SOURCE == base->req_peer) {
        base->req_peer = src;
        req->any_source_matched = true;
    }
    base->req_ompi.req_status.MPI_SOURCE = src;
    base->req_ompi.req_status.MPI_TAG = tag;
    base->req_proc = proc;
    if (req->prepared_with != proc->super.proc_convertor) {
        recv_request_prepare(req, proc->super.proc_convertor);
    }
}

void mca_pml_dr2_recv_request_matched(mca_pml_dr2_recv_request_t *req,
                                      struct mca_pml_dr2_rxmsg_t *msg)
{
    req->msg = msg;
    msg->req = req;
    msg->matched = true;
    mca_pml_dr2_recv_request_bind(req, msg->src, msg->tag, msg->peer->proc);
    if (!req->contiguous && NULL == msg->buf && msg->msg_len > 0) {
        /* A non-contiguous buffer gets the message through a contiguous staging copy,
         * unpacked once complete: fragments arrive in any order under loss, and the
         * convertor cannot start unpacking inside a basic element. Nothing of the message
         * has been placed yet (matching happens before any data is accepted). */
        msg->buf = mca_pml_dr2_rx_buffer_alloc(msg->msg_len);
        if (OPAL_UNLIKELY(NULL == msg->buf)) {
            /* no memory to receive it through: the receive fails, the message is
             * consumed (its sender must not wait for it for ever) */
            req->msg = NULL;
            msg->req = NULL;
            mca_pml_dr2_rxmsg_discard_matched(msg);
            req->req_recv.req_base.req_ompi.req_status._ucount = 0;
            mca_pml_dr2_recv_request_complete(req, MPI_ERR_NO_MEM);
            return;
        }
    }
    if (msg->rndv) {
        /* the go-ahead first: the sender's next data crosses while we place the RNDV's */
        mca_pml_dr2_rxmsg_send_matched(msg);
        mca_pml_dr2_rxmsg_place_rndv_data(msg);
    }
    mca_pml_dr2_rxmsg_try_complete(msg);
}

bool mca_pml_dr2_recv_request_unpack(mca_pml_dr2_recv_request_t *req, uint64_t offset,
                                     const unsigned char *data, size_t len, bool check,
                                     uint32_t crc)
{
    opal_convertor_t *conv = &req->req_recv.req_base.req_convertor;
    size_t fit = 0;

    if (offset < req->capacity) {
        fit = req->capacity - offset < len ? req->capacity - offset : len;
    }
    if (req->contiguous) {
        uint32_t c = PML_DR2_CRC32C_INIT;
        if (fit > 0) {
            void *dst;
            opal_convertor_get_offset_pointer(conv, offset, &dst);
            if (check) {
                /* fused: the payload is read once, checked while it is written */
                c = pml_dr2_crc32c_copy(c, dst, data, fit);
            } else {
                memcpy(dst, data, fit);
            }
        }
        if (check && fit < len) {
            c = pml_dr2_crc32c(c, data + fit, len - fit); /* truncated: check, discard */
        }
        return !check || c == crc;
    }
    /* Non-contiguous: check first (the convertor's scatter cannot be undone), then let
     * the convertor place the bytes. */
    if (check && pml_dr2_crc32c(PML_DR2_CRC32C_INIT, data, len) != crc) {
        return false;
    }
    if (fit > 0) {
        size_t pos = offset, max_data = fit;
        uint32_t iov_count = 1;
        struct iovec iov = {.iov_base = (void *) data, .iov_len = fit};
        opal_convertor_set_position(conv, &pos);
        opal_convertor_unpack(conv, &iov, &iov_count, &max_data);
    }
    return true;
}

int mca_pml_dr2_recv_request_start(mca_pml_dr2_recv_request_t *req)
{
    mca_pml_base_request_t *base = &req->req_recv.req_base;
    ompi_communicator_t *comm = base->req_comm;
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_rxmsg_t *msg;

    MCA_PML_BASE_RECV_START(&req->req_recv);
    req->msg = NULL;
    req->posted = false;
    if (req->any_source_matched) { /* a persistent receive started again */
        base->req_peer = OMPI_ANY_SOURCE;
        req->any_source_matched = false;
    }

    /* ULFM (ob1 recvreq.c): no receive waits on a revoked communicator or a dead sender */
    if (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(base->req_tag)) {
        mca_pml_dr2_recv_request_complete(req, MPI_ERR_REVOKED);
        return OMPI_SUCCESS;
    }
    if (ompi_comm_coll_revoked(comm) && ompi_request_tag_is_collective(base->req_tag)) {
        mca_pml_dr2_recv_request_complete(req, MPI_ERR_PROC_FAILED);
        return OMPI_SUCCESS;
    }
    if (OMPI_ANY_SOURCE != base->req_peer
        && !ompi_comm_is_proc_active(comm, base->req_peer, OMPI_COMM_IS_INTER(comm))) {
        base->req_ompi.req_status.MPI_SOURCE = base->req_peer;
        mca_pml_dr2_recv_request_complete(req, MPI_ERR_PROC_FAILED);
        return OMPI_SUCCESS;
    }
    /* off the path of the message that will match: see recv_request_prepare */
    if (OMPI_ANY_SOURCE != base->req_peer) {
        recv_request_prepare(req, ompi_comm_peer_lookup(comm, base->req_peer)->super.proc_convertor);
    } else {
        recv_request_prepare(req, ompi_mpi_local_convertor);
    }
    OPAL_LIST_FOREACH (msg, &dcomm->unexpected, mca_pml_dr2_rxmsg_t) {
        if (mca_pml_dr2_tag_matches(base->req_peer, base->req_tag, msg->src, msg->tag)) {
            opal_list_remove_item(&dcomm->unexpected, &msg->super.super);
            mca_pml_dr2_recv_request_matched(req, msg);
            return OMPI_SUCCESS;
        }
    }
    opal_list_append(&dcomm->posted, (opal_list_item_t *) req);
    req->posted = true;
    return OMPI_SUCCESS;
}

/* ---- entry points ------------------------------------------------------------------------ */

static int check_source(int src, ompi_communicator_t *comm)
{
    if (OMPI_ANY_SOURCE != src && (src < 0 || src >= comm->c_remote_group->grp_proc_count)) {
        return OMPI_ERR_BAD_PARAM;
    }
    return OMPI_SUCCESS;
}

int mca_pml_dr2_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_dr2_recv_request_t *req;

    if (OMPI_SUCCESS != check_source(src, comm)) {
        return OMPI_ERR_BAD_PARAM;
    }
    req = recv_request_alloc(buf, count, datatype, src, tag, comm, true);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->req_recv.req_base.req_pml_complete = true; /* inactive until MPI_Start */
    *request = &req->req_recv.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int mca_pml_dr2_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                      struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_dr2_recv_request_t *req;

    if (OMPI_SUCCESS != check_source(src, comm)) {
        return OMPI_ERR_BAD_PARAM;
    }
    req = recv_request_alloc(buf, count, datatype, src, tag, comm, false);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_dr2_enter();
    (void) mca_pml_dr2_recv_request_start(req);
    mca_pml_dr2_leave();
    *request = &req->req_recv.req_base.req_ompi;
    return OMPI_SUCCESS;
}

/* Wait for a receive that only this caller holds; returns its error, the status filled in.
 * Under ULFM an ANY_SOURCE receive whose wait was interrupted by a failure
 * (PROC_FAILED_PENDING) is taken back and reported as PROC_FAILED, as ob1 does for
 * blocking receives. One that matched a live sender meanwhile (another thread's progress)
 * refuses the cancel and is waited for to the end, with the error it ends with. */
static int wait_recv_complete(ompi_request_t *request, ompi_status_public_t *status)
{
    int rc;

    ompi_request_wait_completion(request);
    if (!REQUEST_COMPLETE(request)) {
        ompi_request_cancel(request);
        ompi_request_wait_completion(request);
        if (MPI_ERR_PROC_FAILED_PENDING == request->req_status.MPI_ERROR) {
            request->req_status.MPI_ERROR = MPI_ERR_PROC_FAILED;
        }
    }
    rc = request->req_status.MPI_ERROR;
    if (MPI_STATUS_IGNORE != status) {
        /* MPI_ERROR stays as the caller left it: a single-completion call returns its
         * error (MPI 4.0 section 3.2.5; MPICH's pt2pt/mprobe checks it, ob1 does the same) */
        OMPI_COPY_STATUS(status, request->req_status, false);
    }
    return rc;
}

static int wait_recv(ompi_request_t *request, ompi_status_public_t *status)
{
    int rc = wait_recv_complete(request, status);

    ompi_request_free(&request);
    return rc;
}

/* MPI_Recv: the request never leaves this call. Without MPI_THREAD_MULTIPLE the last one
 * is kept for the next call (as ob1 does): no trip through the free list and its lock, and
 * no request free, between the message's arrival and the return. */
int mca_pml_dr2_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                     struct ompi_communicator_t *comm, ompi_status_public_t *status)
{
    mca_pml_dr2_recv_request_t *req = NULL;
    ompi_request_t *request;
    int rc;

    if (OMPI_SUCCESS != check_source(src, comm)) {
        return OMPI_ERR_BAD_PARAM;
    }
    if (OPAL_LIKELY(!ompi_mpi_thread_multiple)) {
        req = mca_pml_dr2.recv_kept;
        mca_pml_dr2.recv_kept = NULL;
    }
    if (NULL != req) {
        recv_request_init(req, buf, count, datatype, src, tag, comm, false);
    } else if (NULL == (req = recv_request_alloc(buf, count, datatype, src, tag, comm, false))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_dr2_enter();
    (void) mca_pml_dr2_recv_request_start(req);
    mca_pml_dr2_leave();
    request = &req->req_recv.req_base.req_ompi;
    rc = wait_recv_complete(request, status);
    if (OPAL_LIKELY(!ompi_mpi_thread_multiple && NULL == mca_pml_dr2.recv_kept
                    && req->req_recv.req_base.req_pml_complete)) {
        MCA_PML_BASE_RECV_REQUEST_FINI(&req->req_recv);
        mca_pml_dr2.recv_kept = req;
    } else {
        ompi_request_free(&request);
    }
    return rc;
}

int mca_pml_dr2_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                       struct ompi_message_t **message, struct ompi_request_t **request)
{
    mca_pml_dr2_rxmsg_t *msg = (*message)->req_ptr;
    ompi_communicator_t *comm = (*message)->comm;
    mca_pml_dr2_recv_request_t *req;

    req = recv_request_alloc(buf, count, datatype, msg->src, msg->tag, comm, false);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_dr2_enter();
    MCA_PML_BASE_RECV_START(&req->req_recv);
    *request = &req->req_recv.req_base.req_ompi;
    /* the message was taken out of the matching queues by the matched probe */
    mca_pml_dr2_recv_request_matched(req, msg);
    mca_pml_dr2_leave();
    OBJ_RELEASE(comm); /* the message's hold (do_improbe); the request holds it now */
    ompi_message_return(*message);
    *message = MPI_MESSAGE_NULL;
    return OMPI_SUCCESS;
}

int mca_pml_dr2_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    ompi_request_t *request = NULL;
    int rc = mca_pml_dr2_imrecv(buf, count, datatype, message, &request);

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return wait_recv(request, status);
}

/* ---- probes ------------------------------------------------------------------------------ */

/* First unexpected message a receive (src, tag) would match, or NULL. */
static mca_pml_dr2_rxmsg_t *probe_find(int src, int tag, ompi_communicator_t *comm)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_rxmsg_t *msg;

    OPAL_LIST_FOREACH (msg, &dcomm->unexpected, mca_pml_dr2_rxmsg_t) {
        if (mca_pml_dr2_tag_matches(src, tag, msg->src, msg->tag)) {
            return msg;
        }
    }
    return NULL;
}

static void probe_status(mca_pml_dr2_rxmsg_t *msg, ompi_status_public_t *status)
{
    if (MPI_STATUS_IGNORE != status) {
        status->MPI_SOURCE = msg->src;
        status->MPI_TAG = msg->tag;
        /* MPI_ERROR is not set by (m)probe: it stays as the caller left it (MPI 4.0
         * section 3.2.5), as with ob1 */
        status->_ucount = msg->msg_len;
        status->_cancelled = 0;
    }
}

/* ULFM: a probe that can never be satisfied any more. */
static int probe_failed(int src, int tag, ompi_communicator_t *comm)
{
    if (!ompi_ftmpi_enabled) {
        return OMPI_SUCCESS;
    }
    if (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(tag)) {
        return MPI_ERR_REVOKED;
    }
    if (OMPI_ANY_SOURCE == src) {
        return ompi_comm_is_any_source_enabled(comm) ? OMPI_SUCCESS : MPI_ERR_PROC_FAILED;
    }
    if (!ompi_comm_is_proc_active(comm, src, OMPI_COMM_IS_INTER(comm))) {
        return MPI_ERR_PROC_FAILED;
    }
    return OMPI_SUCCESS;
}

static int do_improbe(int src, int tag, ompi_communicator_t *comm, int *matched,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    mca_pml_dr2_rxmsg_t *msg;

    *matched = 0;
    mca_pml_dr2_enter();
    msg = probe_find(src, tag, comm);
    if (NULL == msg) {
        /* nothing to report: fail only if nothing can ever come (ULFM) */
        mca_pml_dr2_leave();
        return probe_failed(src, tag, comm);
    }
    {
        *matched = 1;
        probe_status(msg, status);
        if (NULL != message) {
            ompi_message_t *m = ompi_message_alloc();
            if (NULL == m) {
                mca_pml_dr2_leave();
                return OMPI_ERR_TEMP_OUT_OF_RESOURCE;
            }
            /* take it out of matching: only an MPI_(I)mrecv on this handle receives it */
            opal_list_remove_item(&((mca_pml_dr2_comm_t *) comm->c_pml_comm)->unexpected,
                                  &msg->super.super);
            msg->matched = true;
            /* the communicator may be freed before MPI_Mrecv (MPI_Comm_free leaves pending
             * operations to complete): the message holds it, as a request would */
            OBJ_RETAIN(comm);
            m->comm = comm;
            m->req_ptr = msg;
            m->peer = msg->src;
            m->count = msg->msg_len;
            *message = m;
        }
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

int mca_pml_dr2_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                       ompi_status_public_t *status)
{
    int rc = do_improbe(src, tag, comm, matched, NULL, status);

    if (OMPI_SUCCESS == rc && !*matched) {
        opal_progress(); /* as ob1: an iprobe loop must make progress */
    }
    return rc;
}

int mca_pml_dr2_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                        struct ompi_message_t **message, ompi_status_public_t *status)
{
    int rc = do_improbe(src, tag, comm, matched, message, status);

    if (OMPI_SUCCESS == rc && !*matched) {
        *message = MPI_MESSAGE_NULL;
        opal_progress();
    }
    return rc;
}

int mca_pml_dr2_probe(int src, int tag, struct ompi_communicator_t *comm,
                      ompi_status_public_t *status)
{
    int matched = 0, rc;

    while (OMPI_SUCCESS == (rc = do_improbe(src, tag, comm, &matched, NULL, status)) && !matched) {
        opal_progress();
    }
    return rc;
}

int mca_pml_dr2_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                       struct ompi_message_t **message, ompi_status_public_t *status)
{
    int matched = 0, rc;

    while (OMPI_SUCCESS == (rc = do_improbe(src, tag, comm, &matched, message, status))
           && !matched) {
        opal_progress();
    }
    return rc;
}

/* ---- persistent requests ------------------------------------------------------------------ */

int mca_pml_dr2_start(size_t count, ompi_request_t **requests)
{
    int rc = OMPI_SUCCESS;

    mca_pml_dr2_enter();
    for (size_t i = 0; i < count && OMPI_SUCCESS == rc; i++) {
        mca_pml_base_request_t *base = (mca_pml_base_request_t *) requests[i];
        if (NULL == base || OMPI_REQUEST_PML != requests[i]->req_type) {
            continue;
        }
        switch (base->req_type) {
        case MCA_PML_REQUEST_SEND:
            rc = mca_pml_dr2_send_request_start((struct mca_pml_dr2_send_request_t *) base);
            break;
        case MCA_PML_REQUEST_RECV:
            rc = mca_pml_dr2_recv_request_start((mca_pml_dr2_recv_request_t *) base);
            break;
        default:
            rc = OMPI_ERR_REQUEST;
            break;
        }
    }
    mca_pml_dr2_leave();
    return rc;
}
