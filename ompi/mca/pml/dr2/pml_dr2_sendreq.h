/*
 * ompi-resilience: pml/dr2 send requests.
 *
 * A send request is MPI-complete and PML-complete at the same moment: eager and buffered
 * sends when their data has been copied (the copy then belongs to the message, which lives
 * on until acknowledged, see pml_dr2_vfrag.h), rendezvous sends when every fragment has
 * been acknowledged. So a persistent request can always be restarted once complete.
 */
#ifndef MCA_PML_DR2_SENDREQ_H
#define MCA_PML_DR2_SENDREQ_H

#include "pml_dr2.h"
#include "pml_dr2_peer.h"

BEGIN_C_DECLS

struct mca_pml_dr2_txmsg_t;

typedef struct mca_pml_dr2_send_request_t {
    mca_pml_base_send_request_t req_send;
    mca_pml_dr2_peer_t *peer;
    struct mca_pml_dr2_txmsg_t *msg; /* rendezvous in flight */
} mca_pml_dr2_send_request_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_send_request_t);

/* Start (or restart, for persistent requests) an initialised send request. */
int mca_pml_dr2_send_request_start(mca_pml_dr2_send_request_t *req);

/* The protocol is done with the request: set its error and complete it. Under ULFM a
 * send that succeeded on a communicator revoked (for its tag) by now completes with the
 * revoke's error, as ob1's does (the error ompi_request_is_failed set is kept there). */
void mca_pml_dr2_send_request_complete(mca_pml_dr2_send_request_t *req, int error);

/* The error a rendezvous ends with when its receiver dropped it unmatched (an ACK flagged
 * REVOKED): the revoke's error as this process sees it, MPI_ERR_REVOKED if the revoke
 * has not reached it yet. `req` may be NULL (a buffered send). */
int mca_pml_dr2_send_request_dropped_error(const mca_pml_dr2_send_request_t *req);

END_C_DECLS

#endif /* MCA_PML_DR2_SENDREQ_H */
