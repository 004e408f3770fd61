/*
 * ompi-resilience: what the unit tests of coll/ftrabit's recovery planning share: their
 * deterministic random numbers, a plan with room for its outputs, and plan comparison.
 */
#ifndef OMPIRES_TEST_FTRABIT_RECOVERY_H
#define OMPIRES_TEST_FTRABIT_RECOVERY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_recovery.h"
#include "unit.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;

static inline uint64_t rng(void)
{
    return unit_xorshift64s(&rng_state);
}

static inline int chance(int one_in)
{
    return 0 == rng() % (uint64_t) one_in;
}

enum { MAX_RANKS = 64, MAX_XFERS = 4096 };

typedef struct test_plan {
    int32_t restart_version[MAX_RANKS];
    uint64_t restart_seq[MAX_RANKS];
    ftrabit_transfer_t xfers[MAX_XFERS];
    ftrabit_plan_t plan;
} test_plan_t;

static inline test_plan_t *new_plan(int max_xfers)
{
    test_plan_t *tp = malloc(sizeof(*tp));
    memset(tp, 0xa5, sizeof(*tp)); /* garbage: the planner must not read its outputs */
    tp->plan.restart_version = tp->restart_version;
    tp->plan.restart_seq = tp->restart_seq;
    tp->plan.xfers = tp->xfers;
    tp->plan.max_xfers = max_xfers;
    return tp;
}

static inline int plan(const ftrabit_rank_state_t *st, int size, int orig_size,
                       int result_replicas, int local_replicas, test_plan_t *tp)
{
    return ftrabit_plan_recovery(st, size, orig_size, result_replicas, local_replicas, &tp->plan);
}

/* The same outputs: target, restart points and transfers. */
static inline int same_plan(const test_plan_t *a, const test_plan_t *b, int size)
{
    return a->plan.target_seq == b->plan.target_seq && a->plan.nxfers == b->plan.nxfers
           && 0 == memcmp(a->restart_version, b->restart_version, size * sizeof(int32_t))
           && 0 == memcmp(a->restart_seq, b->restart_seq, size * sizeof(uint64_t))
           && 0 == memcmp(a->xfers, b->xfers, a->plan.nxfers * sizeof(ftrabit_transfer_t));
}

#endif
