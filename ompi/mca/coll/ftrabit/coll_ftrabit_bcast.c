/*
 * ompi-resilience: coll/ftrabit MPI_Bcast.
 *
 *   - binomial tree: log2(p) rounds of the whole message; latency-optimal;
 *   - k-nomial tree of radix 4: log4(p) rounds, each parent sending to up to three
 *     children a round; for 8-15 ranks and messages under 32 KiB (as coll/tuned);
 *   - linear: the root sends the whole message to every rank; for a few ranks, where no
 *     rank should wait for another to forward, and from 32 KiB for 8-15 ranks
 *     (coll_ftrabit_schedule.h);
 *   - pipeline: the message cut into segments that flow down a chain of ranks starting at
 *     the root; each rank forwards segment i while it receives segment i+1, so large
 *     messages take about (n + (p-2) * segment) / bandwidth.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

#define FTRABIT_TAG MCA_COLL_BASE_TAG_BCAST

static inline int ftrabit_real_rank(int vrank, int root, int size)
{
    return (vrank + root) % size;
}

/* Down a k-nomial tree (radix 2: binomial). */
static int ftrabit_bcast_tree(char *buf, size_t count, ompi_datatype_t *dtype, int root,
                              ompi_communicator_t *comm, int radix)
{
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    int vrank = (rank - root + size) % size;
    int children[FTRABIT_MAX_TREE_CHILDREN];
    ompi_request_t *reqs[FTRABIT_MAX_TREE_CHILDREN];
    int err;

    if (0 != vrank) {
        int parent = ftrabit_real_rank(ftrabit_knomial_parent(vrank, radix), root, size);
        err = ftrabit_recv(buf, count, dtype, parent, FTRABIT_TAG, comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
    int nchildren = ftrabit_knomial_children(size, vrank, radix, children,
                                             FTRABIT_MAX_TREE_CHILDREN);
    if (1 == nchildren) {
        /* A blocking send needs no request: the PML may send a small message inline (on 2
         * ranks, the root's only send). */
        return MCA_PML_CALL(send(buf, count, dtype, ftrabit_real_rank(children[0], root, size),
                                 FTRABIT_TAG, MCA_PML_BASE_SEND_STANDARD, comm));
    }
    for (int i = 0; i < nchildren; i++) {
        err = MCA_PML_CALL(isend(buf, count, dtype, ftrabit_real_rank(children[i], root, size),
                                 FTRABIT_TAG, MCA_PML_BASE_SEND_STANDARD, comm, &reqs[i]));
        if (MPI_SUCCESS != err) {
            ftrabit_wait_all(i, reqs);
            return err;
        }
    }
    return ftrabit_wait_all(nchildren, reqs);
}

static int ftrabit_bcast_linear(char *buf, size_t count, ompi_datatype_t *dtype, int root,
                                ompi_communicator_t *comm)
{
    int size = ompi_comm_size(comm), nreqs = 0, err = MPI_SUCCESS;
    ompi_request_t *few[FTRABIT_BCAST_MID_MAX_RANKS], **reqs = few;

    if (ompi_comm_rank(comm) != root) {
        return ftrabit_recv(buf, count, dtype, root, FTRABIT_TAG, comm);
    }
    /* auto picks linear for a few ranks only: no allocation per call then */
    if (size > FTRABIT_BCAST_MID_MAX_RANKS
        && NULL == (reqs = malloc((size_t) size * sizeof(*reqs)))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int peer = 0; peer < size && MPI_SUCCESS == err; peer++) {
        if (peer != root) {
            err = MCA_PML_CALL(isend(buf, count, dtype, peer, FTRABIT_TAG,
                                     MCA_PML_BASE_SEND_STANDARD, comm, &reqs[nreqs]));
            nreqs += MPI_SUCCESS == err ? 1 : 0;
        }
    }
    int wait_err = ftrabit_wait_all(nreqs, reqs);
    if (reqs != few) {
        free(reqs);
    }
    return MPI_SUCCESS != err ? err : wait_err;
}

/* Segment `i` of a message of `len` bytes: its first byte and its length. */
static inline size_t ftrabit_segment(size_t i, size_t len, size_t segbytes, size_t *seglen)
{
    size_t first = i * segbytes;
    *seglen = len - first < segbytes ? len - first : segbytes;
    return first;
}

/* Segments are cut in the packed bytes of the type signature (coll_ftrabit_packed.c), the
 * same on every rank whatever datatype and count each passed: the root may describe the
 * data as n elements of one type and the others as 3n of another. */
static int ftrabit_bcast_pipeline(char *buf, size_t count, ompi_datatype_t *dtype, int root,
                                  ompi_communicator_t *comm, mca_coll_ftrabit_module_t *module)
{
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    int vrank = (rank - root + size) % size;
    int prev = vrank > 0 ? ftrabit_real_rank(vrank - 1, root, size) : -1;
    int next = vrank < size - 1 ? ftrabit_real_rank(vrank + 1, root, size) : -1;
    ftrabit_packed_t data;
    int err = ftrabit_packed_open(&data, buf, count, dtype, prev < 0, module);

    if (MPI_SUCCESS != err) {
        return err;
    }
    size_t segbytes = ftrabit_bcast_segment_bytes(data.len, size,
                                                  mca_coll_ftrabit_component.bcast_segment_bytes);
    size_t nseg = ftrabit_segments(data.len, segbytes);
    /* Receives run two segments ahead; sends are waited for at the end. */
    ompi_request_t *recv_reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    ompi_request_t **send_reqs = calloc(nseg, sizeof(*send_reqs));
    size_t nsent = 0, len;

    if (NULL == send_reqs) {
        ftrabit_packed_close(&data, module);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (prev >= 0) {
        for (size_t i = 0; i < 2 && i < nseg && MPI_SUCCESS == err; i++) {
            size_t first = ftrabit_segment(i, data.len, segbytes, &len);
            err = MCA_PML_CALL(irecv(data.bytes + first, len, MPI_BYTE, prev, FTRABIT_TAG, comm,
                                     &recv_reqs[i]));
        }
    }
    for (size_t i = 0; i < nseg && MPI_SUCCESS == err; i++) {
        size_t first = ftrabit_segment(i, data.len, segbytes, &len);
        if (prev >= 0) {
            ompi_status_public_t status;
            err = ompi_request_wait(&recv_reqs[i % 2], &status);
            if (MPI_SUCCESS == err) {
                err = ftrabit_check_received(&status, len, MPI_BYTE, comm, FTRABIT_TAG);
            }
            if (MPI_SUCCESS == err) {
                err = ftrabit_packed_arrived(&data, first + len);
            }
        } else {
            err = ftrabit_packed_ready(&data, first + len);
        }
        if (MPI_SUCCESS != err) {
            break;
        }
        if (next >= 0) {
            err = MCA_PML_CALL(isend(data.bytes + first, len, MPI_BYTE, next, FTRABIT_TAG,
                                     MCA_PML_BASE_SEND_STANDARD, comm, &send_reqs[nsent]));
            if (MPI_SUCCESS != err) {
                break;
            }
            nsent++;
        }
        if (prev >= 0 && i + 2 < nseg) {
            size_t ahead = ftrabit_segment(i + 2, data.len, segbytes, &len);
            err = MCA_PML_CALL(irecv(data.bytes + ahead, len, MPI_BYTE, prev, FTRABIT_TAG, comm,
                                     &recv_reqs[i % 2]));
        }
    }
    int send_err = ftrabit_wait_all(nsent, send_reqs);
    /* Outstanding receives after an error: nothing may write into the buffer later. */
    for (int i = 0; i < 2; i++) {
        ftrabit_request_abandon(&recv_reqs[i]);
    }
    free(send_reqs);
    ftrabit_packed_close(&data, module);
    return MPI_SUCCESS != err ? err : send_err;
}

/* What the broadcast's algorithm depends on, besides where the ranks run. */
typedef struct {
    size_t bytes;
    int size;
} ftrabit_bcast_call_t;

/* By size and ranks, and by whether a node of the ranks is oversubscribed. */
static int ftrabit_bcast_choice(const ftrabit_placement_t *where, const void *call)
{
    const mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;
    const ftrabit_bcast_call_t *b = call;

    return ftrabit_choose_bcast(c->bcast_algorithm, b->bytes, b->size,
                                c->bcast_pipeline_min_bytes, where->cores_shared);
}

int mca_coll_ftrabit_bcast(void *buff, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;
    ftrabit_bcast_alg_t alg;
    size_t type_size;

    __atomic_fetch_add(&c->bcast_calls, 1, __ATOMIC_RELAXED);
    ompi_datatype_type_size(dtype, &type_size);
    if (count <= 0 || 0 == type_size) {
        return MPI_SUCCESS;
    }
    ftrabit_bcast_call_t call = {.bytes = count * type_size, .size = ompi_comm_size(comm)};
    int choice, err = ftrabit_choose((mca_coll_ftrabit_module_t *) module, comm,
                                     ftrabit_bcast_choice, &call, &choice);
    if (MPI_SUCCESS != err) {
        return ftrabit_collective_outcome(err, comm);
    }
    alg = (ftrabit_bcast_alg_t) choice;
    FTRABIT_VERBOSE(10, "coll:ftrabit: bcast of %d elements from %d on %s: %s", count, root,
                    ompi_comm_print_cid(comm),
                    FTRABIT_BCAST_PIPELINE == alg  ? "pipeline"
                    : FTRABIT_BCAST_LINEAR == alg  ? "linear"
                    : FTRABIT_BCAST_KNOMIAL == alg ? "knomial"
                                                   : "binomial");
    switch (alg) {
    case FTRABIT_BCAST_PIPELINE:
        err = ftrabit_bcast_pipeline(buff, count, dtype, root, comm,
                                     (mca_coll_ftrabit_module_t *) module);
        break;
    case FTRABIT_BCAST_LINEAR:
        err = ftrabit_bcast_linear(buff, count, dtype, root, comm);
        break;
    case FTRABIT_BCAST_KNOMIAL:
        err = ftrabit_bcast_tree(buff, count, dtype, root, comm, FTRABIT_BCAST_KNOMIAL_RADIX);
        break;
    default:
        err = ftrabit_bcast_tree(buff, count, dtype, root, comm, 2);
    }
    return ftrabit_collective_outcome(err, comm);
}
