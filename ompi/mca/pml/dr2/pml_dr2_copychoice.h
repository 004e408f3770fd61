/*
 * ompi-resilience: pml/dr2 -- how a sender copies a fragment's payload and checksums it
 * (pure logic, no MPI: unit tests reach it directly).
 *
 * FUSED copies and checksums in one pass: the data is read once. SEPARATE checksums the
 * source, then copies it with memcpy. Which is cheaper depends on where the receiver runs,
 * not on the data: on an AMD EPYC (Zen 5) VM, with the two ranks' cores sharing a cache (a
 * cache line's round trip 80 ns), FUSED sends 1 MiB over btl/sm in 24-25 us and SEPARATE
 * in 26-28; on cores further apart (round trip 360 ns), FUSED takes 150-160 us and
 * SEPARATE 48-49 -- the vector stores into the shared-memory buffer the receiver has just
 * read stall, where memcpy's string moves do not. The place of a process can change (the
 * VM above moved between both), so the choice is measured, per peer, again and again:
 *
 *   probe: PML_DR2_COPY_PROBE_SAMPLES fragments each way, alternating; the least cost
 *          per byte of each way counts (one interrupted copy does not decide)
 *   then:  the cheaper way for PML_DR2_COPY_REPROBE_AFTER fragments; SEPARATE must win by
 *          PML_DR2_COPY_MARGIN_PCT percent, FUSED wins ties (it is the way when in doubt)
 *
 * Only fragments of at least PML_DR2_COPY_CHOICE_MIN bytes are counted; smaller ones go
 * FUSED, untimed.
 */
#ifndef PML_DR2_COPYCHOICE_H
#define PML_DR2_COPYCHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PML_DR2_COPY_FUSED = 0,    /* one pass: pml_dr2_crc32c_copy */
    PML_DR2_COPY_SEPARATE = 1, /* pml_dr2_crc32c over the source, then memcpy */
    PML_DR2_COPY_AUTO = 2      /* measured: the pml_dr2_copy parameter's default */
} pml_dr2_copy_way_t;

#define PML_DR2_COPY_CHOICE_MIN 4096
#define PML_DR2_COPY_PROBE_SAMPLES 8
#define PML_DR2_COPY_REPROBE_AFTER 4096
#define PML_DR2_COPY_MARGIN_PCT 10

typedef struct {
    uint8_t way;            /* pml_dr2_copy_way_t: the way for the next counted fragment */
    bool probing;           /* the next counted fragment is timed */
    uint32_t left;          /* counted fragments left in this probe, or before the next */
    uint64_t best_cost[2];  /* per way, the least time per KiB seen in this probe */
} pml_dr2_copy_choice_t;

/* Starts with a probe. */
void pml_dr2_copy_choice_init(pml_dr2_copy_choice_t *choice);

/* After a counted fragment went the way choice->way: `ticks` (any monotonic unit, the same
 * every time) is what it took when choice->probing, ignored otherwise. */
void pml_dr2_copy_choice_record(pml_dr2_copy_choice_t *choice, uint64_t ticks, size_t bytes);

#endif /* PML_DR2_COPYCHOICE_H */
