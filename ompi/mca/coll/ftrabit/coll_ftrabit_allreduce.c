/*
 * ompi-resilience: coll/ftrabit MPI_Allreduce.
 *
 * Two algorithms, both over the folded power-of-two set of virtual ranks
 * (coll_ftrabit_schedule.c):
 *   - recursive doubling: log2(p) exchanges of the whole vector; latency-optimal;
 *   - reduce-scatter (recursive halving) + allgather (recursive doubling): each rank
 *     moves about 2n bytes in all; bandwidth-optimal (Rabenseifner).
 * At every combination the partial result of the lower virtual ranks is the left operand,
 * so the reduction is computed in rank order: non-commutative operations are correct,
 * and since every partial result is computed by one fixed expression, every rank ends
 * with the same bits, in every run of the same size.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

#define FTRABIT_TAG MCA_COLL_BASE_TAG_ALLREDUCE

/* A vector of `count` elements of `dtype`, and a scratch vector with the same layout. */
typedef struct {
    char *buf;
    char *scratch;
    char *scratch_alloc;
    size_t count;
    ptrdiff_t extent;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
    ompi_communicator_t *comm;
} ftrabit_vector_t;

static int ftrabit_vector_init(ftrabit_vector_t *v, void *buf, size_t count,
                               ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm)
{
    ptrdiff_t lb, extent, true_lb, true_extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    v->buf = buf;
    v->count = count;
    v->extent = extent;
    v->dtype = dtype;
    v->op = op;
    v->comm = comm;
    v->scratch_alloc = malloc(true_extent + (count - 1) * extent);
    if (NULL == v->scratch_alloc) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    v->scratch = v->scratch_alloc - true_lb;
    return MPI_SUCCESS;
}

static inline char *ftrabit_at(const ftrabit_vector_t *v, char *base, size_t index)
{
    return base + (ptrdiff_t) index * v->extent;
}

static inline size_t ftrabit_len(ftrabit_range_t r)
{
    return r.hi - r.lo;
}

/* The latency-optimal algorithm: every step exchanges and combines the whole vector. */
static int ftrabit_allreduce_recursive_doubling(ftrabit_vector_t *v, const ftrabit_fold_t *fold)
{
    char *mine = v->buf, *theirs = v->scratch;

    for (int mask = 1; mask < fold->p2; mask <<= 1) {
        int partner = fold->vrank ^ mask;
        int peer = ftrabit_fold_real_rank(fold, partner);
        int err = ftrabit_sendrecv(mine, v->count, peer, theirs, v->count, peer, v->dtype,
                                   FTRABIT_TAG, v->comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (partner < fold->vrank) {
            ompi_op_reduce(v->op, theirs, mine, v->count, v->dtype); /* theirs op mine */
        } else {
            ompi_op_reduce(v->op, mine, theirs, v->count, v->dtype); /* mine op theirs */
            char *t = mine;
            mine = theirs;
            theirs = t;
        }
    }
    if (mine != v->buf) {
        return ompi_datatype_copy_content_same_ddt(v->dtype, v->count, v->buf, mine);
    }
    return MPI_SUCCESS;
}

/* The bandwidth-optimal algorithm. During the reduce-scatter the current partial result
 * lives in one of two full-size buffers (the user's and the scratch); the partner's half
 * is received into the other, and the lower rank's result lands there, so no step copies. */
static int ftrabit_allreduce_rsag(ftrabit_vector_t *v, const ftrabit_fold_t *fold)
{
    ftrabit_rsag_step_t steps[FTRABIT_MAX_STEPS];
    int nsteps = ftrabit_rsag_schedule(fold->p2, fold->vrank, v->count, steps);
    char *cur = v->buf, *other = v->scratch;
    int err;

    for (int i = 0; i < nsteps; i++) {
        const ftrabit_rsag_step_t *s = &steps[i];
        int peer = ftrabit_fold_real_rank(fold, s->partner_vrank);
        size_t klen = ftrabit_len(s->keep);

        err = ftrabit_sendrecv(ftrabit_at(v, cur, s->give.lo), ftrabit_len(s->give), peer,
                               ftrabit_at(v, other, s->keep.lo), klen, peer, v->dtype,
                               FTRABIT_TAG, v->comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (0 == klen) {
            continue;
        }
        if (s->lower) {
            ompi_op_reduce(v->op, ftrabit_at(v, cur, s->keep.lo), ftrabit_at(v, other, s->keep.lo),
                           klen, v->dtype);
            char *t = cur;
            cur = other;
            other = t;
        } else {
            ompi_op_reduce(v->op, ftrabit_at(v, other, s->keep.lo), ftrabit_at(v, cur, s->keep.lo),
                           klen, v->dtype);
        }
    }

    if (nsteps > 0 && cur != v->buf) {
        ftrabit_range_t last = steps[nsteps - 1].keep;
        err = ompi_datatype_copy_content_same_ddt(v->dtype, ftrabit_len(last),
                                                  ftrabit_at(v, v->buf, last.lo),
                                                  ftrabit_at(v, cur, last.lo));
        if (MPI_SUCCESS != err) {
            return err;
        }
    }

    /* Allgather: undo the halving; my block and the partner's make the previous range. */
    for (int i = nsteps - 1; i >= 0; i--) {
        const ftrabit_rsag_step_t *s = &steps[i];
        int peer = ftrabit_fold_real_rank(fold, s->partner_vrank);

        err = ftrabit_sendrecv(ftrabit_at(v, v->buf, s->keep.lo), ftrabit_len(s->keep), peer,
                               ftrabit_at(v, v->buf, s->give.lo), ftrabit_len(s->give), peer,
                               v->dtype, FTRABIT_TAG, v->comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
    return MPI_SUCCESS;
}

/* Allreduce of a vector already in place in v->buf. */
static int ftrabit_allreduce_vector(ftrabit_vector_t *v)
{
    mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;
    int size = ompi_comm_size(v->comm), rank = ompi_comm_rank(v->comm);
    size_t type_size;
    ftrabit_fold_t fold;
    int err;

    ompi_datatype_type_size(v->dtype, &type_size);
    ftrabit_fold(size, rank, &fold);
    ftrabit_allreduce_alg_t alg = ftrabit_choose_allreduce(c->allreduce_algorithm,
                                                           v->count * type_size, v->count,
                                                           size, c->allreduce_rsag_min_bytes);
    FTRABIT_VERBOSE(10, "coll:ftrabit: allreduce of %zu elements on %s: %s", v->count,
                    ompi_comm_print_cid(v->comm),
                    FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING == alg ? "recursive_doubling"
                                                                : "reduce_scatter_allgather");

    /* Fold: the even rank of a pair hands its vector to the odd one and waits. */
    if (fold.vrank < 0) {
        err = ftrabit_send(v->buf, v->count, v->dtype, fold.fold_peer, FTRABIT_TAG, v->comm);
        if (MPI_SUCCESS == err) {
            err = ftrabit_recv(v->buf, v->count, v->dtype, fold.fold_peer, FTRABIT_TAG, v->comm);
        }
        return err;
    }
    if (fold.fold_peer >= 0) {
        err = ftrabit_recv(v->scratch, v->count, v->dtype, fold.fold_peer, FTRABIT_TAG, v->comm);
        if (MPI_SUCCESS != err) {
            return err;
        }
        ompi_op_reduce(v->op, v->scratch, v->buf, v->count, v->dtype); /* even op odd */
    }

    if (FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER == alg) {
        err = ftrabit_allreduce_rsag(v, &fold);
    } else {
        err = ftrabit_allreduce_recursive_doubling(v, &fold);
    }
    if (MPI_SUCCESS == err && fold.fold_peer >= 0) {
        err = ftrabit_send(v->buf, v->count, v->dtype, fold.fold_peer, FTRABIT_TAG, v->comm);
    }
    return err;
}

static int ftrabit_allreduce_in(void *buf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                                ompi_communicator_t *comm)
{
    ftrabit_vector_t v;
    int err = ftrabit_vector_init(&v, buf, count, dtype, op, comm);

    if (MPI_SUCCESS == err) {
        err = ftrabit_allreduce_vector(&v);
        free(v.scratch_alloc);
    }
    return err;
}

/* The predefined type a predefined operation should run on. Open MPI 5.0.7 maps
 * MPI_OFFSET to its unsigned 64-bit reduction functions (ompi/op/op.c:210) although
 * MPI_Offset is a signed long long, so MAX and MIN of negative offsets come out wrong;
 * we reduce it as the signed type of the same size instead. */
static ompi_datatype_t *ftrabit_reduction_type(ompi_datatype_t *dtype)
{
    if (OMPI_DATATYPE_MPI_OFFSET == dtype->id) {
        return OMPI_OFFSET_DATATYPE;
    }
    return dtype;
}

int mca_coll_ftrabit_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    size_t type_size;
    int err;

    (void) module;
    __atomic_fetch_add(&mca_coll_ftrabit_component.allreduce_calls, 1, __ATOMIC_RELAXED);
    ompi_datatype_type_size(dtype, &type_size);
    if (count <= 0 || 0 == type_size) {
        return MPI_SUCCESS;
    }
    if (MPI_IN_PLACE != sbuf) {
        err = ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, (char *) sbuf);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
    /* The MPI layer admits predefined operations on predefined datatypes only; user
     * operations see the user's datatype and layout. */
    if (ompi_op_is_intrinsic(op)) {
        err = ftrabit_allreduce_in(rbuf, count, ftrabit_reduction_type(dtype), op, comm);
    } else {
        err = ftrabit_allreduce_in(rbuf, count, dtype, op, comm);
    }
    return MPI_SUCCESS == err ? err : ftrabit_collective_failed(err, comm);
}
