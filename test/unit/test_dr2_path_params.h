/*
 * The path parameters the unit tests of pml/dr2's paths share (test_dr2_path.c,
 * test_dr2_locality.c): small budgets and timeouts, so that verdicts come in a few steps.
 */
#ifndef TEST_DR2_PATH_PARAMS_H
#define TEST_DR2_PATH_PARAMS_H

#include "ompi/mca/pml/dr2/pml_dr2_path.h"

static const pml_dr2_path_params_t params = {
    .retry_budget = 3,
    .evidence_budget = 1,
    .evidence_silence_us = 50000,
    .probe_interval_us = 1000,
    .probe_interval_max_us = 5000,
    .rto_initial_us = 10000,
    .rto_min_us = 2000,
    .rto_max_us = 1000000,
};

#endif
