/*
 * ompi-resilience: pml/dr2 keepalive (see pml_dr2_keepalive.h).
 */
#include "ompi_config.h"

#include "ompi/communicator/communicator.h"

#include "pml_dr2.h"
#include "pml_dr2_btlpath.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_keepalive.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_recvreq.h"

/* Mark the peers a posted receive of `comm` names. A receive from any source names none:
 * it waits for whoever sends first, not for a given peer (probing every silent process of
 * the communicator would declare failed those that compute for a while). */
static void mark_awaited_in(ompi_communicator_t *comm)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_recv_request_t *req;

    OPAL_LIST_FOREACH (req, &dcomm->posted, mca_pml_dr2_recv_request_t) {
        int src = req->req_recv.req_base.req_peer;
        if (src >= 0 && src < dcomm->nprocs) {
            mca_pml_dr2_peer_t *peer = mca_pml_dr2_comm_peer(comm, src);
            if (NULL != peer) {
                peer->ka_awaited = true;
            }
        }
    }
}

static void mark_awaited(void)
{
    int n = ompi_comm_get_num_communicators();

    for (int i = 0; i < n; i++) {
        ompi_communicator_t *comm = ompi_comm_lookup(i);
        if (NULL != comm && NULL != comm->c_pml_comm
            && !opal_list_is_empty(&((mca_pml_dr2_comm_t *) comm->c_pml_comm)->posted)) {
            mark_awaited_in(comm);
        }
    }
}

/* The ACK timeout of the peer after `retries` expiries, on its slowest path up (as a
 * vfrag's, pml_dr2_vfrag.c). */
static uint64_t peer_backoff_us(const mca_pml_dr2_peer_t *peer, uint32_t retries)
{
    int path = pml_dr2_path_slowest(peer->path_state, peer->npaths, 0);

    return pml_dr2_path_backoff_us(&peer->path_state[path], retries, &mca_pml_dr2.path_params);
}

/* A probe on every path up: one that is silently dead (nothing of ours crossed it since)
 * must not make a peer that answers on another look unreachable. */
static void probe(mca_pml_dr2_peer_t *peer)
{
    for (int path = 0; path < peer->npaths; path++) {
        unsigned char buf[PML_DR2_HDR_ACK_LEN];
        /* the id of the path's latest probe, from a down period that is over: its answer
         * changes no path's health (pml_dr2_path_probe_answered) */
        pml_dr2_ack_hdr_t ack = {.vfrag = peer->path_state[path].probe_seq,
                                 .mask = (uint64_t) path + 1};
        size_t len;

        if (!peer->path_state[path].up) {
            continue; /* probed as a down path already */
        }
        len = pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, PML_DR2_HDR_FLAG_PROBE, &ack, buf, sizeof(buf));
        if (0 != len && OMPI_SUCCESS == mca_pml_dr2_peer_send_small(peer, path, buf, len)) {
            mca_pml_dr2.path_counters.probes[path]++;
        }
    }
}

/* One peer; returns 1 if a probe went out. */
static int keepalive_peer(mca_pml_dr2_peer_t *peer, uint64_t now)
{
    bool waiting = peer->ka_awaited || opal_hash_table_get_size(&peer->rx_msgs) > 0;

    peer->ka_awaited = false;
    if (peer->failed || peer->closing || !waiting || !opal_list_is_empty(&peer->tx_unacked)
        || peer->ka_heard) {
        /* not waited for, or its own timers watch it, or it was heard: start over */
        peer->ka_heard = false;
        peer->ka_probes = 0;
        peer->ka_next_us = now + peer_backoff_us(peer, 0);
        return 0;
    }
    if (now < peer->ka_next_us) {
        return 0;
    }
    if (peer->ka_probes >= (uint32_t) mca_pml_dr2.retry_limit) {
        mca_pml_dr2_peer_unreachable(peer->proc,
                                     "awaited, silent, and no answer to pml_dr2_retry_limit "
                                     "keepalive probes");
        return 0;
    }
    probe(peer);
    peer->ka_probes++;
    peer->ka_next_us = now + peer_backoff_us(peer, peer->ka_probes);
    return 1;
}

int mca_pml_dr2_keepalive_check(uint64_t now)
{
    mca_pml_dr2_peer_t *peer;
    int sent = 0;

    mca_pml_dr2.next_keepalive_us = now + MCA_PML_DR2_KEEPALIVE_TICK_US;
    if (mca_pml_dr2.retry_limit <= 0) {
        return 0;
    }
    mark_awaited();
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        sent += keepalive_peer(peer, now);
    }
    return sent;
}
