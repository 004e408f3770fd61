/*
 * ompi-resilience: pml/dr2 per-communicator matching state (see pml_dr2_comm.h).
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "pml_dr2.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_recvreq.h"

static void comm_construct(mca_pml_dr2_comm_t *dcomm)
{
    OBJ_CONSTRUCT(&dcomm->posted, opal_list_t);
    OBJ_CONSTRUCT(&dcomm->unexpected, opal_list_t);
    dcomm->nprocs = 0;
    dcomm->procs = NULL;
}

static void drop_msgs(opal_list_t *list)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(list))) {
        mca_pml_dr2_rxmsg_drop((mca_pml_dr2_rxmsg_t *) item);
    }
}

static void comm_destruct(mca_pml_dr2_comm_t *dcomm)
{
    /* posted receives belong to the MPI layer; unmatched messages die with us, but what
     * their senders still send of them is acknowledged (mca_pml_dr2_rxmsg_drop) */
    drop_msgs(&dcomm->unexpected);
    OBJ_DESTRUCT(&dcomm->unexpected);
    OBJ_DESTRUCT(&dcomm->posted);
    for (int i = 0; i < dcomm->nprocs; i++) {
        drop_msgs(&dcomm->procs[i].out_of_order);
        OBJ_DESTRUCT(&dcomm->procs[i].out_of_order);
    }
    free(dcomm->procs);
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_comm_t, opal_object_t, comm_construct, comm_destruct);

mca_pml_dr2_peer_t *mca_pml_dr2_comm_peer_lookup(ompi_communicator_t *comm, int rank)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_comm_proc_t *cp;

    if (rank < 0 || rank >= dcomm->nprocs) {
        return NULL;
    }
    cp = &dcomm->procs[rank];
    if (OPAL_UNLIKELY(NULL == cp->peer)) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
        if (NULL != proc) {
            cp->peer = mca_pml_dr2_peer_get(proc);
        }
    }
    return cp->peer;
}

int mca_pml_dr2_add_comm(struct ompi_communicator_t *comm)
{
    mca_pml_dr2_comm_t *dcomm = OBJ_NEW(mca_pml_dr2_comm_t);
    mca_pml_dr2_rxmsg_t *msg, *next;
    uint32_t cid = ompi_comm_get_local_cid(comm);

    if (NULL == dcomm) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    dcomm->nprocs = comm->c_remote_group->grp_proc_count;
    dcomm->procs = calloc(dcomm->nprocs > 0 ? dcomm->nprocs : 1, sizeof(*dcomm->procs));
    if (NULL == dcomm->procs) {
        OBJ_RELEASE(dcomm);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < dcomm->nprocs; i++) {
        OBJ_CONSTRUCT(&dcomm->procs[i].out_of_order, opal_list_t);
    }
    mca_pml_dr2_enter();
    comm->c_pml_comm = (struct mca_pml_comm_t *) dcomm;
    /* Messages that arrived before this communicator existed here, in arrival order
     * (their sequence numbers put them in MPI order). */
    OPAL_LIST_FOREACH_SAFE (msg, next, &mca_pml_dr2.nocomm, mca_pml_dr2_rxmsg_t) {
        if (msg->ctx != cid) {
            continue;
        }
        opal_list_remove_item(&mca_pml_dr2.nocomm, &msg->super.super);
        /* the sender's rank is checked against the communicator the message was sent on
         * (one of an earlier communicator on this id is dropped by deliver) */
        if (mca_pml_dr2_rx_epoch_is(comm, msg->has_epoch, msg->epoch)
            && (msg->src < 0 || msg->src >= dcomm->nprocs
                || mca_pml_dr2_comm_peer(comm, msg->src) != msg->peer)) {
            mca_pml_dr2.counters.malformed++;
            mca_pml_dr2_rxmsg_release(msg);
            continue;
        }
        mca_pml_dr2_rxmsg_deliver(comm, msg);
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

/* A freed communicator as remembered in mca_pml_dr2.freed_comms: its epoch and its two
 * revoked flags in one word (the table holds pointers). */
#define FREED_COMM_REVOKED 1u
#define FREED_COMM_COLL_REVOKED 2u

static void *freed_comm_word(ompi_communicator_t *comm)
{
    uint64_t word = (uint64_t) mca_pml_dr2_comm_epoch(comm) << 2;

    word |= ompi_comm_is_revoked(comm) ? FREED_COMM_REVOKED : 0;
    word |= ompi_comm_coll_revoked(comm) ? FREED_COMM_COLL_REVOKED : 0;
    return (void *) (uintptr_t) word;
}

bool mca_pml_dr2_comm_freed(uint32_t cid, uint32_t epoch, int tag, bool *revoked)
{
    void *found;
    uint64_t word;

    if (OPAL_SUCCESS != opal_hash_table_get_value_uint32(&mca_pml_dr2.freed_comms, cid, &found)) {
        return false;
    }
    word = (uint64_t) (uintptr_t) found;
    if ((uint32_t) (word >> 2) != epoch) {
        return false;
    }
    *revoked = ((word & FREED_COMM_REVOKED) && !ompi_request_tag_is_ft(tag))
               || ((word & FREED_COMM_COLL_REVOKED) && ompi_request_tag_is_collective(tag));
    return true;
}

int mca_pml_dr2_del_comm(struct ompi_communicator_t *comm)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;

    if (NULL == dcomm) {
        return OMPI_SUCCESS;
    }
    mca_pml_dr2_enter();
    (void) opal_hash_table_set_value_uint32(&mca_pml_dr2.freed_comms,
                                            ompi_comm_get_local_cid(comm), freed_comm_word(comm));
    comm->c_pml_comm = NULL;
    OBJ_RELEASE(dcomm);
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

static bool tag_revoked(ompi_communicator_t *comm, int tag)
{
    return (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(tag))
           || (ompi_comm_coll_revoked(comm) && ompi_request_tag_is_collective(tag));
}

static void purge_revoked(ompi_communicator_t *comm, opal_list_t *list)
{
    mca_pml_dr2_rxmsg_t *msg, *next;

    OPAL_LIST_FOREACH_SAFE (msg, next, list, mca_pml_dr2_rxmsg_t) {
        if (tag_revoked(comm, msg->tag)) {
            opal_list_remove_item(list, &msg->super.super);
            mca_pml_dr2_rxmsg_drop(msg);
        }
    }
}

int mca_pml_dr2_revoke_comm(struct ompi_communicator_t *comm, bool coll_only)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;

    /* An intercommunicator freed while a request still holds it has lost its local
     * communicator already (MPI_COMM_NULL): nothing to revoke there (Open MPI patch 0016
     * mends the same walk in pml/ob1). */
    if (OMPI_COMM_IS_INTER(comm) && NULL != comm->c_local_comm
        && MPI_COMM_NULL != comm->c_local_comm) {
        mca_pml_dr2_revoke_comm(comm->c_local_comm, coll_only);
    }
    mca_pml_dr2_enter();
    /* Only the PML sets these (ULFM relies on it); under the matching lock, so that no
     * message is matched on a communicator half revoked. */
    comm->coll_revoked = true;
    if (!coll_only) {
        comm->comm_revoked = true;
    }
    if (NULL != dcomm) {
        /* Unexpected messages nobody may receive any more: dropped, their senders told
         * (a rendezvous) or acknowledged (what is still to come of an eager message).
         * Posted receives are completed in error by the request layer
         * (ompi_request_is_failed -> req_cancel). */
        purge_revoked(comm, &dcomm->unexpected);
        /* Out-of-order messages stay: dropping one would leave a hole in the sequence
         * that FT-tagged messages behind it could never get past; each is dropped when
         * its turn comes (match_one checks the tag). */
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}
