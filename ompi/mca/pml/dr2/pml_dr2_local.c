/*
 * ompi-resilience: pml/dr2 small messages to a peer reached through no wire (see
 * pml_dr2_local.h).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/show_help.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/common/ompires/ompires_abi.h"
#include "ompi/runtime/mpiruntime.h"

#include "pml_dr2.h"
#include "pml_dr2_local.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_recvreq.h"

bool mca_pml_dr2_local_send(mca_pml_dr2_peer_t *peer, const pml_dr2_match_hdr_t *match,
                            const void *buf, uint32_t len, bool must_leave)
{
    unsigned char seg[PML_DR2_HDR_LOCAL_LEN + PML_DR2_HDR_LOCAL_MAX_PAYLOAD];
    size_t seg_len;
    int rc;

    if (!mca_pml_dr2_local_fits(peer, len)) {
        return false;
    }
    seg_len = pml_dr2_hdr_pack_local(match, seg, sizeof(seg), buf, len);
    if (0 == seg_len) {
        return false;
    }
    /* one path: a peer with LOCALs is reached by sm or self alone */
    rc = must_leave ? mca_pml_dr2_peer_send_small_now(peer, 0, seg, seg_len)
                    : mca_pml_dr2_peer_send_small(peer, 0, seg, seg_len);
    if (OMPI_SUCCESS != rc) {
        return false;
    }
    mca_pml_dr2.counters.frags_sent++;
    mca_pml_dr2.counters.local_sent++;
    mca_pml_dr2.path_counters.frags_sent[0]++;
    return true;
}

/* No memory to keep a message that will never be sent again: the job cannot go on
 * correctly, and must not go on silently. */
static void local_out_of_memory(mca_pml_dr2_peer_t *peer, uint32_t len)
{
    char what[32];

    snprintf(what, sizeof(what), "%u", len);
    ompires_add_help_dir();
    opal_show_help("help-pml-dr2.txt", "local-no-memory", true, what,
                   OMPI_NAME_PRINT(&peer->proc->super.proc_name));
    ompi_mpi_abort(&ompi_mpi_comm_world.comm, OMPI_ERR_OUT_OF_RESOURCE);
}

/* A LOCAL no posted receive takes now: it waits, with a copy of its payload, for its turn
 * or its receive, as an eager message does (complete: never indexed, never resent). */
static void local_keep(mca_pml_dr2_peer_t *peer, ompi_communicator_t *comm,
                       const pml_dr2_hdr_t *hdr, const unsigned char *payload)
{
    mca_pml_dr2_rxmsg_t *msg = mca_pml_dr2_rxmsg_alloc();
    unsigned char *buf = NULL;

    if (hdr->frag_len > 0 && NULL != msg && NULL == (buf = malloc(hdr->frag_len))) {
        mca_pml_dr2_rxmsg_release(msg);
        msg = NULL;
    }
    if (OPAL_UNLIKELY(NULL == msg)) {
        local_out_of_memory(peer, hdr->frag_len);
        return;
    }
    if (hdr->frag_len > 0) {
        memcpy(buf, payload, hdr->frag_len);
    }
    msg->peer = peer;
    msg->ctx = hdr->match.ctx;
    msg->src = hdr->match.src;
    msg->tag = hdr->match.tag;
    msg->seq = hdr->match.seq;
    msg->msg_len = hdr->frag_len;
    msg->bytes_received = hdr->frag_len;
    msg->buf = buf;
    if (NULL != comm) {
        mca_pml_dr2_rxmsg_deliver(comm, msg);
    } else {
        /* the communicator does not exist here yet: add_comm delivers it */
        opal_list_append(&mca_pml_dr2.nocomm, &msg->super.super);
    }
}

void mca_pml_dr2_local_receive(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                               const unsigned char *payload)
{
    struct mca_pml_dr2_recv_request_t *req;
    ompi_communicator_t *comm;

    if (OPAL_UNLIKELY(!peer->paths[peer->rx_path].no_wire)) {
        mca_pml_dr2.counters.malformed++; /* unchecked data from across a wire */
        return;
    }
    req = mca_pml_dr2_rx_take_in_order(peer, hdr);
    if (OPAL_LIKELY(NULL != req)) {
        mca_pml_dr2_rx_receive_small(req, peer, hdr, payload);
        return;
    }
    comm = ompi_comm_lookup(hdr->match.ctx);
    if (NULL != comm && NULL == comm->c_pml_comm) {
        comm = NULL;
    }
    if (NULL != comm && !mca_pml_dr2_rx_rank_is_peer(comm, hdr->match.src, peer)) {
        mca_pml_dr2.counters.malformed++; /* the rank is not the process that sent it */
        return;
    }
    local_keep(peer, comm, hdr, payload);
}
