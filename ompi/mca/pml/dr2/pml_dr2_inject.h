/*
 * ompi-resilience: pml/dr2 fault injection between dr2 and the BTL.
 *
 * Used only when one of pml_dr2_inject_{drop,corrupt,dup} is non-zero; the send path
 * tests mca_pml_dr2.inject_enabled once per segment (a branch that is always predicted
 * right when injection is off). A seeded xorshift64* generator, per process (seed mixed
 * with the rank's vpid), so that a failing run can be replayed.
 */
#ifndef MCA_PML_DR2_INJECT_H
#define MCA_PML_DR2_INJECT_H

#include "pml_dr2.h"

static inline uint64_t mca_pml_dr2_inject_next(void)
{
    uint64_t x = mca_pml_dr2.rng_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    mca_pml_dr2.rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* True with probability p. */
static inline bool mca_pml_dr2_inject_roll(double p)
{
    if (p <= 0.0) {
        return false;
    }
    /* 53 random bits as a double in [0, 1) */
    return (double) (mca_pml_dr2_inject_next() >> 11) * (1.0 / 9007199254740992.0) < p;
}

static inline void mca_pml_dr2_inject_seed(uint64_t seed, uint64_t salt)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + salt + 1;

    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    mca_pml_dr2.rng_state = x ? x : 0x853c49e6748fea9bULL;
}

#endif /* MCA_PML_DR2_INJECT_H */
