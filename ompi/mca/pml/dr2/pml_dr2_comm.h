/*
 * ompi-resilience: pml/dr2 per-communicator matching state.
 *
 * MPI's ordering rule (messages from one sender on one communicator match in the order
 * they were sent) is kept with a 16-bit sequence number per (communicator, peer): a
 * message that arrives ahead of its turn waits in that peer's out-of-order list. Posted
 * receives are kept in one list in posting order, ANY_SOURCE ones included, and messages
 * that found no receive in one list in matching order: scanning either in order gives
 * MPI's semantics for wildcards without per-source bookkeeping.
 */
#ifndef MCA_PML_DR2_COMM_H
#define MCA_PML_DR2_COMM_H

#include "pml_dr2.h"
#include "pml_dr2_peer.h"

BEGIN_C_DECLS

typedef struct {
    uint16_t expected_seq;  /* next sequence number to match from this rank */
    uint16_t send_seq;      /* next sequence number to send to this rank */
    opal_list_t out_of_order; /* rxmsgs ahead of expected_seq, sorted */
    mca_pml_dr2_peer_t *peer; /* cached, NULL until first used */
} mca_pml_dr2_comm_proc_t;

typedef struct mca_pml_dr2_comm_t {
    opal_object_t super;
    opal_list_t posted;     /* mca_pml_dr2_recv_request_t in posting order */
    opal_list_t unexpected; /* mca_pml_dr2_rxmsg_t in matching order */
    int nprocs;             /* size of the remote group */
    mca_pml_dr2_comm_proc_t *procs;
} mca_pml_dr2_comm_t;

OBJ_CLASS_DECLARATION(mca_pml_dr2_comm_t);

/* Does a receive (src, tag) accept a message (msg_src, msg_tag)? ANY_TAG never matches
 * negative (internal) tags. */
static inline bool mca_pml_dr2_tag_matches(int src, int tag, int msg_src, int msg_tag)
{
    return (src == OMPI_ANY_SOURCE || src == msg_src)
           && (tag == msg_tag || (tag == OMPI_ANY_TAG && msg_tag >= 0));
}

/* ULFM: the error an operation with `tag` on comm ends with now that comm is revoked for
 * it (MPI_ERR_REVOKED; MPI_ERR_PROC_FAILED for a collective's message once a process of
 * comm failed, as ompi_request_is_failed says), MPI_SUCCESS while it is not. */
static inline int mca_pml_dr2_comm_revoked_error(ompi_communicator_t *comm, int tag)
{
    if (ompi_comm_is_revoked(comm) && !ompi_request_tag_is_ft(tag)) {
        return MPI_ERR_REVOKED;
    }
    if (ompi_comm_coll_revoked(comm) && ompi_request_tag_is_collective(tag)) {
        return MPI_ERR_PROC_FAILED;
    }
    return MPI_SUCCESS;
}

/* The communicator's generation on its context id, sent with every message that names the
 * id (pml_dr2_hdr.h): its ULFM epoch, which every member got from the agreement that
 * allocated the id (ompi/communicator/comm_cid.c); 0 for MPI_COMM_WORLD and MPI_COMM_SELF.
 * Communicators created one after another on one id get different epochs whenever their
 * members created communicators alike (the epoch is one more than the most any member had
 * created); only members that created different numbers of communicators elsewhere can
 * give two of them the same epoch. */
static inline uint32_t mca_pml_dr2_comm_epoch(const ompi_communicator_t *comm)
{
    return comm->c_epoch;
}

/* Was the last communicator freed here on context id `cid` the one of epoch `epoch`? If
 * so, *revoked says whether it was revoked for `tag` by then. A message for an id no
 * communicator has here now is either early (its communicator is being created here) or
 * late, for one freed here since: kept for the first, dropped for the second, whose
 * sender may be waiting for an answer (a rendezvous under ULFM) that nothing else would
 * give. Only the last one freed is remembered per id (a resend that misses the whole life
 * of the next communicator on its id waits for the one after that). */
bool mca_pml_dr2_comm_freed(uint32_t cid, uint32_t epoch, int tag, bool *revoked);

/* The peer of a rank looked up and cached (first use of the rank). */
mca_pml_dr2_peer_t *mca_pml_dr2_comm_peer_lookup(ompi_communicator_t *comm, int rank);

/* The peer behind a rank of the communicator's remote group, cached; NULL for a rank out
 * of range. Inline: every send and every arriving message asks. */
static inline mca_pml_dr2_peer_t *mca_pml_dr2_comm_peer(ompi_communicator_t *comm, int rank)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;

    if (OPAL_UNLIKELY(rank < 0 || rank >= dcomm->nprocs)) {
        return NULL;
    }
    if (OPAL_LIKELY(NULL != dcomm->procs[rank].peer)) {
        return dcomm->procs[rank].peer;
    }
    return mca_pml_dr2_comm_peer_lookup(comm, rank);
}

END_C_DECLS

#endif /* MCA_PML_DR2_COMM_H */
