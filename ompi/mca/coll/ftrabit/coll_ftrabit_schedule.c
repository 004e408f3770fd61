/*
 * ompi-resilience: coll/ftrabit communication schedules (pure logic; see the header).
 */
#include "coll_ftrabit_schedule.h"

int ftrabit_pow2_floor(int n)
{
    int p = 1;
    while (p <= n / 2) {
        p <<= 1;
    }
    return p;
}

void ftrabit_fold(int size, int rank, ftrabit_fold_t *fold)
{
    fold->p2 = ftrabit_pow2_floor(size);
    fold->rem = size - fold->p2;
    if (rank < 2 * fold->rem) {
        /* Pairs (2i, 2i+1): the odd rank carries the pair's partial result. */
        fold->fold_peer = rank ^ 1;
        fold->vrank = (rank & 1) ? rank / 2 : -1;
    } else {
        fold->fold_peer = -1;
        fold->vrank = rank - fold->rem;
    }
}

int ftrabit_fold_real_rank(const ftrabit_fold_t *fold, int vrank)
{
    return vrank < fold->rem ? 2 * vrank + 1 : vrank + fold->rem;
}

int ftrabit_rsag_schedule(int p2, int vrank, size_t count, ftrabit_rsag_step_t *steps)
{
    ftrabit_range_t cur = {0, count};
    int nsteps = 0;

    for (int mask = 1; mask < p2; mask <<= 1, nsteps++) {
        size_t mid = cur.lo + (cur.hi - cur.lo) / 2;
        ftrabit_rsag_step_t *s = &steps[nsteps];
        ftrabit_range_t low = {cur.lo, mid}, high = {mid, cur.hi};

        s->partner_vrank = vrank ^ mask;
        s->lower = (vrank & mask) == 0;
        s->keep = s->lower ? low : high;
        s->give = s->lower ? high : low;
        cur = s->keep;
    }
    return nsteps;
}

/* A radix that is a power of two (2 and 4, the ones the broadcasts use) takes its digits
 * with shifts and masks rather than integer divisions, which a broadcast of a few bytes
 * pays on every call: 8 bytes on 2 ranks took 0.165 us by shifts against 0.189 by
 * divisions (coll/tuned 0.140; medians of 6 interleaved jobs). Same trees either way
 * (test_schedule). */
static inline bool radix_is_power_of_two(int radix)
{
    return radix >= 2 && 0 == (radix & (radix - 1));
}

/* The shift of the lowest nonzero digit of vrank > 0 in base 2^bits. */
static inline int lowest_digit_shift(unsigned vrank, int bits)
{
    unsigned mask = (1u << bits) - 1;
    int shift = 0;

    while (0 == ((vrank >> shift) & mask)) {
        shift += bits;
    }
    return shift;
}

int ftrabit_knomial_parent(int vrank, int radix)
{
    int place = 1;

    if (vrank <= 0) {
        return 0; /* the root has none */
    }
    /* The parent clears the lowest nonzero base-radix digit. */
    if (radix_is_power_of_two(radix)) {
        int shift = lowest_digit_shift((unsigned) vrank, __builtin_ctz((unsigned) radix));

        return vrank - (int) ((((unsigned) vrank >> shift) & ((unsigned) radix - 1)) << shift);
    }
    while ((vrank / place) % radix == 0) {
        place *= radix;
    }
    return vrank - ((vrank / place) % radix) * place;
}

/* Power-of-two radix: the children of ftrabit_knomial_children, by shifts. */
static int knomial_children_by_shifts(int size, int vrank, int radix, int *children,
                                      int max_children)
{
    int bits = __builtin_ctz((unsigned) radix), n = 0, top = 0; /* top: a shift */

    if (0 == vrank) {
        while ((1L << top) < size) {
            top += bits;
        }
    } else {
        top = lowest_digit_shift((unsigned) vrank, bits);
    }
    for (int shift = top - bits; shift >= 0; shift -= bits) {
        for (int digit = 1; digit < radix; digit++) {
            long child = vrank + ((long) digit << shift);
            if (child < size && n < max_children) {
                children[n++] = (int) child;
            }
        }
    }
    return n;
}

int ftrabit_knomial_children(int size, int vrank, int radix, int *children, int max_children)
{
    int n = 0;
    long top = 1; /* the place of vrank's lowest nonzero digit: its children are below it */

    if (radix_is_power_of_two(radix)) {
        return knomial_children_by_shifts(size, vrank, radix, children, max_children);
    }
    if (0 == vrank) {
        while (top < size) {
            top *= radix;
        }
    } else {
        while ((vrank / top) % radix == 0) {
            top *= radix;
        }
    }
    /* Largest subtrees first: they have the longest way to go. */
    for (long place = top / radix; place > 0; place /= radix) {
        for (int digit = 1; digit < radix; digit++) {
            long child = vrank + digit * place;
            if (child < size && n < max_children) {
                children[n++] = (int) child;
            }
        }
    }
    return n;
}

/* Integer square root: the largest r with r * r <= n. */
static size_t ftrabit_isqrt(size_t n)
{
    size_t r = 0;

    for (size_t bit = (size_t) 1 << (sizeof(size_t) * 4 - 1); bit > 0; bit >>= 1) {
        size_t t = r | bit;
        if (t <= n / t) {
            r = t;
        }
    }
    return r;
}

#define FTRABIT_MESSAGE_OVERHEAD_BYTES ((size_t) 32 << 10)

size_t ftrabit_bcast_segment_bytes(size_t bytes, int size, size_t min_segment)
{
    size_t hops = size > 3 ? (size_t) size - 2 : 1;
    size_t per_hop = bytes / hops;

    if (per_hop > SIZE_MAX / FTRABIT_MESSAGE_OVERHEAD_BYTES) {
        per_hop = SIZE_MAX / FTRABIT_MESSAGE_OVERHEAD_BYTES;
    }
    size_t best = ftrabit_isqrt(per_hop * FTRABIT_MESSAGE_OVERHEAD_BYTES);

    return best > min_segment ? best : min_segment;
}

size_t ftrabit_segments(size_t total, size_t per_segment)
{
    if (0 == per_segment) {
        return total ? 1 : 0;
    }
    return (total + per_segment - 1) / per_segment;
}

size_t ftrabit_rsag_min_bytes(size_t configured, bool spans_nodes)
{
    if (0 != configured) {
        return configured;
    }
    return spans_nodes ? FTRABIT_RSAG_MIN_ACROSS_NODES : FTRABIT_RSAG_MIN_WITHIN_NODE;
}

ftrabit_allreduce_alg_t ftrabit_choose_allreduce(ftrabit_allreduce_alg_t forced, size_t bytes,
                                                 size_t count, int size, size_t rsag_min_bytes)
{
    int p2 = ftrabit_pow2_floor(size);

    /* Reduce-scatter needs at least one element per virtual rank to pay off. */
    if (FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER == forced) {
        return count >= (size_t) p2 ? forced : FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING;
    }
    if (FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING == forced) {
        return forced;
    }
    if (bytes >= rsag_min_bytes && count >= (size_t) p2 && p2 > 1) {
        return FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER;
    }
    return FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING;
}

ftrabit_bcast_alg_t ftrabit_choose_bcast(ftrabit_bcast_alg_t forced, size_t bytes, int size,
                                         size_t pipeline_min_bytes, bool cores_shared)
{
    if (FTRABIT_BCAST_AUTO != forced) {
        return forced;
    }
    if (size >= FTRABIT_BCAST_LINEAR_MIN_RANKS && size <= FTRABIT_BCAST_LINEAR_MAX_RANKS
        && bytes >= FTRABIT_BCAST_LINEAR_MIN_BYTES && bytes < FTRABIT_BCAST_LINEAR_MAX_BYTES) {
        return FTRABIT_BCAST_LINEAR;
    }
    if (size >= FTRABIT_BCAST_MID_MIN_RANKS && size <= FTRABIT_BCAST_MID_MAX_RANKS
        && bytes >= FTRABIT_BCAST_KNOMIAL_MIN_BYTES) {
        return bytes < FTRABIT_BCAST_MID_LINEAR_MIN_BYTES ? FTRABIT_BCAST_KNOMIAL
                                                          : FTRABIT_BCAST_LINEAR;
    }
    return (bytes >= pipeline_min_bytes && size > 2 && !cores_shared) ? FTRABIT_BCAST_PIPELINE
                                                                      : FTRABIT_BCAST_BINOMIAL;
}
