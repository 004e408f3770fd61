/*
 * ompi-resilience: pml/dr2 copy-way choice (see the header).
 */
#include "pml_dr2_copychoice.h"

static void start_probe(pml_dr2_copy_choice_t *choice)
{
    choice->probing = true;
    choice->left = 2 * PML_DR2_COPY_PROBE_SAMPLES;
    choice->best_cost[PML_DR2_COPY_FUSED] = UINT64_MAX;
    choice->best_cost[PML_DR2_COPY_SEPARATE] = UINT64_MAX;
    choice->way = PML_DR2_COPY_FUSED;
}

/* SEPARATE only when it is clearly cheaper: a copy way that flips on noise costs more than
 * it saves. */
static pml_dr2_copy_way_t cheaper_way(const pml_dr2_copy_choice_t *choice)
{
    uint64_t fused = choice->best_cost[PML_DR2_COPY_FUSED];
    uint64_t separate = choice->best_cost[PML_DR2_COPY_SEPARATE];

    if (UINT64_MAX == separate || UINT64_MAX == fused) {
        return PML_DR2_COPY_FUSED;
    }
    /* separate < fused * (100 - margin) / 100, without overflow for any tick count */
    if (separate < fused - fused / 100 * PML_DR2_COPY_MARGIN_PCT) {
        return PML_DR2_COPY_SEPARATE;
    }
    return PML_DR2_COPY_FUSED;
}

void pml_dr2_copy_choice_init(pml_dr2_copy_choice_t *choice)
{
    start_probe(choice);
}

void pml_dr2_copy_choice_record(pml_dr2_copy_choice_t *choice, uint64_t ticks, size_t bytes)
{
    if (!choice->probing) {
        if (--choice->left == 0) {
            start_probe(choice);
        }
        return;
    }
    if (bytes > 0) {
        uint64_t kib = (bytes + 1023) / 1024;
        uint64_t cost = ticks / kib;

        if (cost < choice->best_cost[choice->way]) {
            choice->best_cost[choice->way] = cost;
        }
    }
    choice->way ^= 1; /* alternate: a drift in the machine's state hits both ways alike */
    if (--choice->left > 0) {
        return;
    }
    choice->probing = false;
    choice->way = cheaper_way(choice);
    choice->left = PML_DR2_COPY_REPROBE_AFTER;
}
