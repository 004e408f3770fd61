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
 * The vector is cut in elements of the datatype: an allreduce has the same count and
 * datatype on every rank (MPI-4.1, 6.9.1), so an element boundary is the same byte of the
 * type signature everywhere (a broadcast needs only equal signatures: coll_ftrabit_packed.c).
 */
#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

#define FTRABIT_TAG MCA_COLL_BASE_TAG_ALLREDUCE

/*
 * The vector being reduced. Until its first exchange a rank's data is in the user's send
 * buffer `sbuf`, which is only read: the first exchange leaves its result in `buf`, the
 * receive buffer, so MPI_Allreduce never copies the whole send buffer first. From then on
 * (or from the start with MPI_IN_PLACE) `sbuf` is NULL and the data is in `buf`.
 * `scratch` has the layout of `buf` but holds only the elements the algorithm receives into
 * it, from `scratch_first` on (see ftrabit_scratch_for).
 */
typedef struct {
    const char *sbuf;
    char *buf;
    char *scratch;
    char *scratch_mem;
    size_t scratch_first;
    size_t count;
    ptrdiff_t extent;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
    ompi_communicator_t *comm;
    mca_coll_ftrabit_module_t *module;
} ftrabit_vector_t;

static inline size_t ftrabit_len(ftrabit_range_t r)
{
    return r.hi - r.lo;
}

static inline char *ftrabit_at(const ftrabit_vector_t *v, const char *base, size_t index)
{
    return (char *) base + (ptrdiff_t) index * v->extent;
}

/* Element `index` in the scratch buffer (if in_scratch) or in the receive buffer. */
static inline char *ftrabit_elem(const ftrabit_vector_t *v, int in_scratch, size_t index)
{
    if (in_scratch) {
        return v->scratch + (ptrdiff_t) (index - v->scratch_first) * v->extent;
    }
    return ftrabit_at(v, v->buf, index);
}

/* Scratch for elements [first, first + count) from the module's reusable buffer. */
static int ftrabit_scratch_acquire(ftrabit_vector_t *v, size_t first, size_t count)
{
    ptrdiff_t true_lb, true_extent;

    ompi_datatype_get_true_extent(v->dtype, &true_lb, &true_extent);
    v->scratch_mem = ftrabit_scratch_get(v->module, true_extent + (count - 1) * v->extent);
    if (NULL == v->scratch_mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    v->scratch = v->scratch_mem - true_lb;
    v->scratch_first = first;
    return MPI_SUCCESS;
}

/* Elements `r` into buf, from scratch or from the send buffer. */
static int ftrabit_copy_to_buf(ftrabit_vector_t *v, int from_scratch, ftrabit_range_t r)
{
    const char *src = from_scratch ? ftrabit_elem(v, 1, r.lo) : ftrabit_at(v, v->sbuf, r.lo);
    return ompi_datatype_copy_content_same_ddt(v->dtype, ftrabit_len(r),
                                               ftrabit_at(v, v->buf, r.lo), (char *) src);
}

/* left op right over `n` elements, the result in `right`: the one reduction expression
 * every algorithm uses, so that a value has the same bits whichever rank computes it. */
static inline void ftrabit_combine(const ftrabit_vector_t *v, const char *left, char *right,
                                   size_t n)
{
    ompi_op_reduce(v->op, (void *) left, right, n, v->dtype);
}

/*
 * The first exchange while this rank's data is still in the send buffer: send `give` from
 * it, receive the partner's `keep`, and leave the combination over `keep` (this rank's data
 * on the left if `lower`) in buf. The lower rank receives straight into buf and combines
 * there; the upper rank, whose data is the right operand and so must be writable, copies
 * its part of `keep` into buf while the messages are in flight.
 */
static int ftrabit_first_exchange(ftrabit_vector_t *v, int peer, int lower, ftrabit_range_t give,
                                  ftrabit_range_t keep)
{
    size_t klen = ftrabit_len(keep);
    const char *mine = ftrabit_at(v, v->sbuf, keep.lo);
    char *dst = ftrabit_at(v, v->buf, keep.lo);
    char *theirs = lower ? dst : ftrabit_elem(v, 1, keep.lo);
    ftrabit_copy_t copy = {dst, mine, klen};
    int err;

    err = ftrabit_sendrecv(ftrabit_at(v, v->sbuf, give.lo), ftrabit_len(give), peer, theirs,
                           klen, peer, v->dtype, FTRABIT_TAG, v->comm, lower ? NULL : &copy);
    if (MPI_SUCCESS != err) {
        return err;
    }
    if (klen > 0) {
        if (lower) {
            ftrabit_combine(v, mine, dst, klen);
        } else {
            ftrabit_combine(v, theirs, dst, klen);
        }
    }
    v->sbuf = NULL;
    return MPI_SUCCESS;
}

/* The latency-optimal algorithm: every step exchanges and combines the whole vector. */
static int ftrabit_allreduce_recursive_doubling(ftrabit_vector_t *v, const ftrabit_fold_t *fold)
{
    ftrabit_range_t all = {0, v->count};
    int mine_in_scratch = 0, mask = 1, err;

    if (NULL != v->sbuf && fold->p2 > 1) {
        int partner = fold->vrank ^ mask;
        err = ftrabit_first_exchange(v, ftrabit_fold_real_rank(fold, partner),
                                     fold->vrank < partner, all, all);
        if (MPI_SUCCESS != err) {
            return err;
        }
        mask <<= 1;
    }
    for (; mask < fold->p2; mask <<= 1) {
        int partner = fold->vrank ^ mask;
        int peer = ftrabit_fold_real_rank(fold, partner);
        char *mine = ftrabit_elem(v, mine_in_scratch, 0);
        char *theirs = ftrabit_elem(v, !mine_in_scratch, 0);

        err = ftrabit_sendrecv(mine, v->count, peer, theirs, v->count, peer, v->dtype,
                               FTRABIT_TAG, v->comm, NULL);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (partner < fold->vrank) {
            ftrabit_combine(v, theirs, mine, v->count);
        } else {
            ftrabit_combine(v, mine, theirs, v->count);
            mine_in_scratch = !mine_in_scratch;
        }
    }
    return mine_in_scratch ? ftrabit_copy_to_buf(v, 1, all) : MPI_SUCCESS;
}

/* Recursive halving. The current partial result lives in buf or in scratch; the partner's
 * half is received into the other one, where the lower rank's result lands, so no step
 * copies. Ends with this rank's block of the result in buf. */
static int ftrabit_reduce_scatter(ftrabit_vector_t *v, const ftrabit_fold_t *fold,
                                  const ftrabit_rsag_step_t *steps, int nsteps)
{
    int cur_in_scratch = 0, first = 0, err;

    if (NULL != v->sbuf && nsteps > 0) {
        err = ftrabit_first_exchange(v, ftrabit_fold_real_rank(fold, steps[0].partner_vrank),
                                     steps[0].lower, steps[0].give, steps[0].keep);
        if (MPI_SUCCESS != err) {
            return err;
        }
        first = 1;
    }
    for (int i = first; i < nsteps; i++) {
        const ftrabit_rsag_step_t *s = &steps[i];
        size_t klen = ftrabit_len(s->keep);
        char *cur = ftrabit_elem(v, cur_in_scratch, s->keep.lo);
        char *other = ftrabit_elem(v, !cur_in_scratch, s->keep.lo);

        err = ftrabit_sendrecv(ftrabit_elem(v, cur_in_scratch, s->give.lo), ftrabit_len(s->give),
                               ftrabit_fold_real_rank(fold, s->partner_vrank), other, klen,
                               ftrabit_fold_real_rank(fold, s->partner_vrank), v->dtype,
                               FTRABIT_TAG, v->comm, NULL);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (0 == klen) {
            continue;
        }
        if (s->lower) {
            ftrabit_combine(v, cur, other, klen);
            cur_in_scratch = !cur_in_scratch;
        } else {
            ftrabit_combine(v, other, cur, klen);
        }
    }
    if (nsteps > 0 && cur_in_scratch) {
        return ftrabit_copy_to_buf(v, 1, steps[nsteps - 1].keep);
    }
    return MPI_SUCCESS;
}

/* Recursive doubling over the halving's steps backwards: my block and the partner's make
 * the previous range, until buf holds the whole result. */
static int ftrabit_allgather(ftrabit_vector_t *v, const ftrabit_fold_t *fold,
                             const ftrabit_rsag_step_t *steps, int nsteps)
{
    for (int i = nsteps - 1; i >= 0; i--) {
        const ftrabit_rsag_step_t *s = &steps[i];
        int peer = ftrabit_fold_real_rank(fold, s->partner_vrank);
        int err = ftrabit_sendrecv(ftrabit_at(v, v->buf, s->keep.lo), ftrabit_len(s->keep), peer,
                                   ftrabit_at(v, v->buf, s->give.lo), ftrabit_len(s->give),
                                   peer, v->dtype, FTRABIT_TAG, v->comm, NULL);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
    return MPI_SUCCESS;
}

/* The bandwidth-optimal algorithm (Rabenseifner): each rank moves about 2n bytes in all. */
static int ftrabit_allreduce_rsag(ftrabit_vector_t *v, const ftrabit_fold_t *fold,
                                  const ftrabit_rsag_step_t *steps, int nsteps)
{
    int err = ftrabit_reduce_scatter(v, fold, steps, nsteps);
    return MPI_SUCCESS == err ? ftrabit_allgather(v, fold, steps, nsteps) : err;
}

/*
 * Folding onto a power of two: the even rank of a pair sends its vector (from wherever it
 * is) to the odd one and later receives the result; the odd one computes even op odd in
 * buf, copying its own data there from the send buffer while the vector arrives.
 */
static int ftrabit_fold_in(ftrabit_vector_t *v, const ftrabit_fold_t *fold)
{
    const char *mine = NULL != v->sbuf ? v->sbuf : v->buf;
    int err;

    if (fold->vrank < 0) {
        v->sbuf = NULL; /* buf receives the result; nothing needs to be copied there */
        return ftrabit_send(mine, v->count, v->dtype, fold->fold_peer, FTRABIT_TAG, v->comm);
    }
    ftrabit_copy_t copy = {v->buf, mine, v->count};
    err = ftrabit_recv_overlapped(v->scratch, v->count, v->dtype, fold->fold_peer, FTRABIT_TAG,
                                  v->comm, NULL != v->sbuf ? &copy : NULL);
    if (MPI_SUCCESS != err) {
        return err;
    }
    ftrabit_combine(v, v->scratch, v->buf, v->count); /* even op odd */
    v->sbuf = NULL;
    return MPI_SUCCESS;
}

static int ftrabit_fold_out(ftrabit_vector_t *v, const ftrabit_fold_t *fold)
{
    if (fold->vrank < 0) {
        return ftrabit_recv(v->buf, v->count, v->dtype, fold->fold_peer, FTRABIT_TAG, v->comm);
    }
    return ftrabit_send(v->buf, v->count, v->dtype, fold->fold_peer, FTRABIT_TAG, v->comm);
}

/* What a rank receives into scratch: the whole vector in the fold and in recursive
 * doubling; in the halving, only the first step's kept half (later steps keep parts of
 * it), so a reduce-scatter/allgather needs half a vector of scratch. */
static int ftrabit_scratch_for(ftrabit_vector_t *v, const ftrabit_fold_t *fold,
                               ftrabit_allreduce_alg_t alg, const ftrabit_rsag_step_t *steps,
                               int nsteps)
{
    if (fold->vrank < 0) {
        return MPI_SUCCESS; /* sits out: sends and receives from its own buffers */
    }
    if (fold->fold_peer >= 0 || FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER != alg
        || 0 == nsteps) {
        return ftrabit_scratch_acquire(v, 0, v->count);
    }
    return ftrabit_scratch_acquire(v, steps[0].keep.lo, ftrabit_len(steps[0].keep));
}

static int ftrabit_allreduce_run(ftrabit_vector_t *v, const ftrabit_fold_t *fold,
                                 ftrabit_allreduce_alg_t alg)
{
    ftrabit_rsag_step_t steps[FTRABIT_MAX_STEPS];
    int nsteps = 0, err;

    if (FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER == alg && fold->vrank >= 0) {
        nsteps = ftrabit_rsag_schedule(fold->p2, fold->vrank, v->count, steps);
    }
    err = ftrabit_scratch_for(v, fold, alg, steps, nsteps);
    if (MPI_SUCCESS != err) {
        return err;
    }
    if (fold->fold_peer >= 0) {
        err = ftrabit_fold_in(v, fold);
    }
    if (MPI_SUCCESS == err && fold->vrank >= 0) {
        err = FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER == alg
                  ? ftrabit_allreduce_rsag(v, fold, steps, nsteps)
                  : ftrabit_allreduce_recursive_doubling(v, fold);
    }
    if (MPI_SUCCESS == err && NULL != v->sbuf) {
        /* No exchange took the data out of the send buffer (a single virtual rank). */
        ftrabit_range_t all = {0, v->count};
        err = ftrabit_copy_to_buf(v, 0, all);
    }
    if (MPI_SUCCESS == err && fold->fold_peer >= 0) {
        err = ftrabit_fold_out(v, fold);
    }
    ftrabit_scratch_put(v->module, v->scratch_mem);
    return err;
}

/* What the allreduce's algorithm depends on, besides where the ranks run. */
typedef struct {
    size_t bytes, count;
    int size;
} ftrabit_allreduce_call_t;

/* By size, and with the threshold left to auto, by whether the ranks span nodes. */
static int ftrabit_allreduce_choice(const ftrabit_placement_t *where, const void *call)
{
    const mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;
    const ftrabit_allreduce_call_t *a = call;

    return ftrabit_choose_allreduce(c->allreduce_algorithm, a->bytes, a->count, a->size,
                                    ftrabit_rsag_min_bytes(c->allreduce_rsag_min_bytes,
                                                           where->spans_nodes));
}

int ftrabit_allreduce_vector(const void *sbuf, void *buf, size_t count, ompi_datatype_t *dtype,
                             ompi_op_t *op, ompi_communicator_t *comm,
                             mca_coll_ftrabit_module_t *module)
{
    int size = ompi_comm_size(comm);
    ptrdiff_t lb;
    size_t type_size;
    ftrabit_fold_t fold;
    ftrabit_allreduce_alg_t alg;
    int choice, err;
    /* A send buffer that is the receive buffer (erroneous without MPI_IN_PLACE) is
     * treated as MPI_IN_PLACE rather than read after being written. */
    ftrabit_vector_t v = {.sbuf = (MPI_IN_PLACE == sbuf || sbuf == buf) ? NULL : sbuf,
                          .buf = buf,
                          .count = count, .dtype = dtype, .op = op, .comm = comm,
                          .module = module};

    ompi_datatype_get_extent(dtype, &lb, &v.extent);
    ompi_datatype_type_size(dtype, &type_size);
    ftrabit_fold(size, ompi_comm_rank(comm), &fold);
    ftrabit_allreduce_call_t call = {.bytes = count * type_size, .count = count, .size = size};
    err = ftrabit_choose(module, comm, ftrabit_allreduce_choice, &call, &choice);
    if (MPI_SUCCESS != err) {
        return err;
    }
    alg = (ftrabit_allreduce_alg_t) choice;
    FTRABIT_VERBOSE(10, "coll:ftrabit: allreduce of %zu elements on %s: %s", count,
                    ompi_comm_print_cid(comm),
                    FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING == alg ? "recursive_doubling"
                                                                : "reduce_scatter_allgather");
    return ftrabit_allreduce_run(&v, &fold, alg);
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
    mca_coll_ftrabit_module_t *m = (mca_coll_ftrabit_module_t *) module;
    size_t type_size;
    int err;

    __atomic_fetch_add(&mca_coll_ftrabit_component.allreduce_calls, 1, __ATOMIC_RELAXED);
    ompi_datatype_type_size(dtype, &type_size);
    if (count <= 0 || 0 == type_size) {
        return MPI_SUCCESS;
    }
    /* The MPI layer admits predefined operations on predefined datatypes only; user
     * operations see the user's datatype and layout. */
    if (ompi_op_is_intrinsic(op)) {
        dtype = ftrabit_reduction_type(dtype);
    }
    err = ftrabit_allreduce_vector(sbuf, rbuf, count, dtype, op, comm, m);
    return ftrabit_collective_outcome(err, comm);
}
