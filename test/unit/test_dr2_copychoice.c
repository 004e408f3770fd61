/*
 * pml/dr2 copy-way choice: probes alternate the ways, the cheaper one is kept (SEPARATE only
 * by a margin), the choice is measured again after PML_DR2_COPY_REPROBE_AFTER fragments.
 */
#include "ompi/mca/pml/dr2/pml_dr2_copychoice.h"
#include "unit.h"

/* Runs one probe where a 32 KiB fragment costs `fused` or `separate` ticks (plus `noise`
 * on every other sample of each way); returns the way chosen. */
static pml_dr2_copy_way_t probe(pml_dr2_copy_choice_t *c, uint64_t fused, uint64_t separate,
                                uint64_t noise)
{
    int fused_seen = 0, separate_seen = 0;

    CHECK(c->probing);
    for (int i = 0; i < 2 * PML_DR2_COPY_PROBE_SAMPLES; i++) {
        uint64_t t;

        CHECK(c->probing);
        if (PML_DR2_COPY_FUSED == c->way) {
            t = fused + (fused_seen++ % 2 ? noise : 0);
        } else {
            t = separate + (separate_seen++ % 2 ? noise : 0);
        }
        pml_dr2_copy_choice_record(c, t, 32768);
    }
    CHECK(fused_seen == PML_DR2_COPY_PROBE_SAMPLES);
    CHECK(separate_seen == PML_DR2_COPY_PROBE_SAMPLES);
    CHECK(!c->probing);
    return (pml_dr2_copy_way_t) c->way;
}

static void starts_probing_fused(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(c.probing);
    CHECK(PML_DR2_COPY_FUSED == c.way);
}

static void keeps_the_cheaper_way(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_SEPARATE == probe(&c, 16000, 5000, 0)); /* the far-apart cores case */
    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, 2500, 3600, 0)); /* the shared-cache case */
}

static void separate_needs_a_margin(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, 10000, 10000, 0));
    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, 10000, 9500, 0)); /* 5 %: not enough */
    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_SEPARATE == probe(&c, 10000, 8500, 0));
}

/* The least cost counts: interrupts that stretch half of the samples change nothing. */
static void spikes_do_not_decide(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, 2500, 3600, 1000000));
    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_SEPARATE == probe(&c, 16000, 5000, 1000000));
}

/* After REPROBE_AFTER counted fragments the next probe starts, and it can change the way
 * (the process, or its peer, moved). */
static void measures_again(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_SEPARATE == probe(&c, 16000, 5000, 0));
    for (int i = 0; i < PML_DR2_COPY_REPROBE_AFTER - 1; i++) {
        pml_dr2_copy_choice_record(&c, 0, 32768);
        CHECK(!c.probing);
        CHECK(PML_DR2_COPY_SEPARATE == c.way);
    }
    pml_dr2_copy_choice_record(&c, 0, 32768);
    CHECK(c.probing);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, 2500, 3600, 0));
}

/* Tick counts near the top of the range: no overflow turns the comparison around. */
static void huge_tick_counts(void)
{
    pml_dr2_copy_choice_t c;

    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_SEPARATE == probe(&c, UINT64_MAX - 1, UINT64_MAX / 2, 0));
    pml_dr2_copy_choice_init(&c);
    CHECK(PML_DR2_COPY_FUSED == probe(&c, UINT64_MAX / 2, UINT64_MAX - 1, 0));
    pml_dr2_copy_choice_init(&c);
    pml_dr2_copy_choice_record(&c, 123, 0); /* an empty fragment: no cost to divide */
    CHECK(c.probing);
}

int main(void)
{
    RUN(starts_probing_fused);
    RUN(keeps_the_cheaper_way);
    RUN(separate_needs_a_margin);
    RUN(spikes_do_not_decide);
    RUN(measures_again);
    RUN(huge_tick_counts);
    UNIT_EXIT();
}
