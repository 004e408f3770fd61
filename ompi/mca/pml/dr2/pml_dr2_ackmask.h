/*
 * ompi-resilience: pml/dr2 ACK bitmasks.
 *
 * Pure logic, no MPI. A vfrag has n <= 64 fragments; bit i of a 64-bit mask stands for
 * fragment i. The receiver accumulates the fragments it received intact and sends them in
 * ACKs; the sender accumulates the ACKs it got. Both only ever add bits: an ACK can be
 * lost, repeated or reordered, and merging two of them is a union (coalescing costs
 * nothing and is always right). A NACK asks for fragments to be resent; the sender resends
 * what is asked for and not acknowledged in the meantime.
 *
 *     uint64_t full = pml_dr2_ackmask_full(n), missing = pml_dr2_ackmask_missing(full, acked);
 *     int i;
 *     while ((i = pml_dr2_ackmask_pop_lowest(&missing)) >= 0) {
 *         resend(i);                           lowest fragment first
 *     }
 */
#ifndef PML_DR2_ACKMASK_H
#define PML_DR2_ACKMASK_H

#include <stdint.h>

#define PML_DR2_ACKMASK_BITS 64

/* All fragments of a vfrag of `nfrags` (0 .. 64) fragments. */
static inline uint64_t pml_dr2_ackmask_full(unsigned nfrags)
{
    return nfrags >= PML_DR2_ACKMASK_BITS ? UINT64_MAX : (UINT64_C(1) << nfrags) - 1;
}

/* Fragment `index` (0 .. 63) alone. */
static inline uint64_t pml_dr2_ackmask_bit(unsigned index)
{
    return UINT64_C(1) << index;
}

static inline uint64_t pml_dr2_ackmask_mark(uint64_t mask, unsigned index)
{
    return mask | pml_dr2_ackmask_bit(index);
}

static inline int pml_dr2_ackmask_is_marked(uint64_t mask, unsigned index)
{
    return (mask >> index) & 1;
}

/* A mask from the wire names only fragments that exist: no bit at or above nfrags. */
static inline int pml_dr2_ackmask_valid(uint64_t mask, unsigned nfrags)
{
    return (mask & ~pml_dr2_ackmask_full(nfrags)) == 0;
}

/* Fragments of `full` not (yet) in `received`. */
static inline uint64_t pml_dr2_ackmask_missing(uint64_t full, uint64_t received)
{
    return full & ~received;
}

static inline int pml_dr2_ackmask_complete(uint64_t full, uint64_t received)
{
    return pml_dr2_ackmask_missing(full, received) == 0;
}

/* Two ACKs for the same vfrag say together what each says alone: their union. */
static inline uint64_t pml_dr2_ackmask_coalesce(uint64_t ack_a, uint64_t ack_b)
{
    return ack_a | ack_b;
}

/* What a NACK makes the sender resend: asked for, existing, and not acknowledged since. */
static inline uint64_t pml_dr2_ackmask_to_resend(uint64_t full, uint64_t acked, uint64_t nack)
{
    return nack & pml_dr2_ackmask_missing(full, acked);
}

static inline unsigned pml_dr2_ackmask_count(uint64_t mask)
{
#if defined(__GNUC__)
    return (unsigned) __builtin_popcountll(mask);
#else
    unsigned n = 0;

    for (; mask != 0; mask &= mask - 1) {
        n++;
    }
    return n;
#endif
}

/* Index of the lowest fragment in `mask`, or -1 if it is empty. */
static inline int pml_dr2_ackmask_lowest(uint64_t mask)
{
    if (mask == 0) {
        return -1;
    }
#if defined(__GNUC__)
    return __builtin_ctzll(mask);
#else
    int index = 0;

    for (; (mask & 1) == 0; mask >>= 1) {
        index++;
    }
    return index;
#endif
}

/* Take the lowest fragment out of *mask and return its index, or -1 once *mask is empty:
 * iterates over a mask lowest first. */
static inline int pml_dr2_ackmask_pop_lowest(uint64_t *mask)
{
    int index = pml_dr2_ackmask_lowest(*mask);

    *mask &= *mask - 1; /* clears the lowest bit; 0 stays 0 */
    return index;
}

#endif /* PML_DR2_ACKMASK_H */
