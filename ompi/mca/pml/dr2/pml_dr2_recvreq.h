/*
 * ompi-resilience: pml/dr2 receive requests.
 *
 * A receive request is posted on its communicator (pml_dr2_comm.h) until a message
 * matches it; from then on it is bound to that message (mca_pml_dr2_rxmsg_t) and data
 * fragments land in its buffer, checked while copied. Data beyond the buffer is checked
 * and discarded, and the request ends with MPI_ERR_TRUNCATE.
 */
#ifndef MCA_PML_DR2_RECVREQ_H
#define MCA_PML_DR2_RECVREQ_H

#include <string.h>

#include "pml_dr2.h"

BEGIN_C_DECLS

struct mca_pml_dr2_rxmsg_t;

typedef struct mca_pml_dr2_recv_request_t {
    mca_pml_base_recv_request_t req_recv;
    struct mca_pml_dr2_rxmsg_t *msg; /* the matched message */
    size_t capacity;                 /* packed bytes the user buffer holds */
    bool contiguous;                 /* the buffer can be written directly */
    opal_convertor_t *prepared_with; /* master convertor the request's convertor was set up
                                      * from (capacity, contiguous valid); NULL: not yet */
    bool posted;                     /* on the communicator's posted list */
    /* Posted for MPI_ANY_SOURCE and matched: req_peer names the sender from the match on
     * (ULFM judges a request by req_peer: a matched receive waits for its sender only, not
     * for "any source", which the failure of an unrelated process stops), and becomes
     * MPI_ANY_SOURCE again when the request is started again. */
    bool any_source_matched;
} mca_pml_dr2_recv_request_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_recv_request_t);

/* Start (match against unexpected messages, else post) an initialised receive. */
int mca_pml_dr2_recv_request_start(mca_pml_dr2_recv_request_t *req);

/* A message from `src` (rank), `tag`, sent by `proc`, is for this request (no longer
 * posted): status set, req_peer set to src (see any_source_matched), and convertor and
 * capacity set up for its data unless that was done for the same sender's representation
 * when the receive was posted. */
void mca_pml_dr2_recv_request_bind(mca_pml_dr2_recv_request_t *req, int src, int tag,
                                   ompi_proc_t *proc);

/* Bind a matched message to the request: status envelope, convertor, and the message's
 * data so far. May complete the request. */
void mca_pml_dr2_recv_request_matched(mca_pml_dr2_recv_request_t *req,
                                      struct mca_pml_dr2_rxmsg_t *msg);

/* Write payload bytes [offset, offset+len) of the matched message into the user buffer,
 * checking them against `crc` on the way when `check`. Returns true if they are intact
 * (the bytes beyond the buffer's capacity are checked but not stored). */
bool mca_pml_dr2_recv_request_unpack(mca_pml_dr2_recv_request_t *req, uint64_t offset,
                                     const unsigned char *data, size_t len, bool check,
                                     uint32_t crc);

/* A whole small message's payload, already checked, into the bound request's buffer (as
 * far as it holds it): a plain copy when the buffer is contiguous. */
static inline void mca_pml_dr2_recv_request_place_small(mca_pml_dr2_recv_request_t *req,
                                                        const unsigned char *data, uint32_t len)
{
    if (OPAL_LIKELY(req->contiguous)) {
        size_t fit = len < req->capacity ? len : req->capacity;
        if (fit > 0) {
            void *dst;
            opal_convertor_get_offset_pointer(&req->req_recv.req_base.req_convertor, 0, &dst);
            memcpy(dst, data, fit);
        }
        return;
    }
    (void) mca_pml_dr2_recv_request_unpack(req, 0, data, len, false, 0);
}

/* Complete the request with `error` (MPI_SUCCESS, or the error to report). */
void mca_pml_dr2_recv_request_complete(mca_pml_dr2_recv_request_t *req, int error);

END_C_DECLS

#endif /* MCA_PML_DR2_RECVREQ_H */
