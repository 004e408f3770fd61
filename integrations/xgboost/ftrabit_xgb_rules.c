/*
 * ompi-resilience: XGBoost on libftrabit, the engine's pure decisions (see the header).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ftrabit_xgb_rules.h"

const char *ftrabit_xgb_param(const ftrabit_xgb_param_t *params, int n, const char *key)
{
    const char *value = NULL;

    for (int i = 0; i < n; i++) {
        if (0 == strcmp(params[i].key, key)) {
            value = params[i].value;
        }
    }
    return value;
}

/* XGBoost reads booleans as "true"/"false" or numbers. */
static int is_true(const char *value)
{
    return NULL != value && (0 == strcasecmp(value, "true") || atoi(value) != 0);
}

/* Is `key` given as a number below 1? A value that is not a number is left to XGBoost,
 * which refuses it itself. */
static int below_one(const ftrabit_xgb_param_t *params, int n, const char *key)
{
    const char *value = ftrabit_xgb_param(params, n, key);
    char *end;
    double x;

    if (NULL == value) {
        return 0;
    }
    x = strtod(value, &end);
    return end != value && x < 1.0;
}

static int nthread_given(const ftrabit_xgb_param_t *params, int n)
{
    const char *value = ftrabit_xgb_param(params, n, "nthread");
    char *end;
    long threads;

    if (NULL == value) {
        return 0;
    }
    errno = 0;
    threads = strtol(value, &end, 10);
    return 0 == errno && end != value && '\0' == *end && threads >= 1;
}

int ftrabit_xgb_replay_refusal(const ftrabit_xgb_param_t *params, int n, char *why, size_t len)
{
    static const char *const column_sampling[] = {"colsample_bytree", "colsample_bylevel",
                                                  "colsample_bynode"};
    const char *selector = ftrabit_xgb_param(params, n, "feature_selector");
    int reseeded = is_true(ftrabit_xgb_param(params, n, "seed_per_iteration"));

    if (!nthread_given(params, n)) {
        snprintf(why, len, "nthread is not set to a number of threads: a replacement would "
                           "use as many threads as its node has cores, and the sums XGBoost "
                           "makes over threads would change; set nthread=N (N >= 1)");
        return 1;
    }
    for (size_t i = 0; i < sizeof(column_sampling) / sizeof(column_sampling[0]); i++) {
        if (below_one(params, n, column_sampling[i])) {
            snprintf(why, len, "%s below 1: the column sampler's random state is not part of "
                               "the model, so a replacement would sample other columns; "
                               "leave it at 1", column_sampling[i]);
            return 1;
        }
    }
    if (below_one(params, n, "subsample") && !reseeded) {
        snprintf(why, len, "subsample below 1 without seed_per_iteration: a replacement "
                           "would draw other rows; set seed_per_iteration=1");
        return 1;
    }
    if (NULL != selector && (0 == strcmp(selector, "shuffle") || 0 == strcmp(selector, "random"))
        && !reseeded) {
        snprintf(why, len, "feature_selector=%s without seed_per_iteration: a replacement "
                           "would pick other features; set seed_per_iteration=1", selector);
        return 1;
    }
    return 0;
}

size_t ftrabit_xgb_chunks(size_t count, size_t max)
{
    return count / max + (0 != count % max);
}

void ftrabit_xgb_chunk(size_t count, size_t max, size_t i, size_t *first, size_t *n)
{
    *first = i * max;
    *n = count - *first < max ? count - *first : max;
}

int ftrabit_xgb_checkpoint_due(int rounds_done, int every)
{
    return rounds_done > 0 && every > 0 && 0 == rounds_done % every;
}

/* "FXGB", then the rounds done as 4 bytes little-endian. */
static const unsigned char ftrabit_xgb_magic[4] = {'F', 'X', 'G', 'B'};

void ftrabit_xgb_header_write(unsigned char *header, int rounds_done)
{
    uint32_t r = (uint32_t) rounds_done;
    memcpy(header, ftrabit_xgb_magic, sizeof(ftrabit_xgb_magic));
    for (int i = 0; i < 4; i++) {
        header[4 + i] = (unsigned char) (r >> (8 * i));
    }
}

int ftrabit_xgb_header_read(const unsigned char *bytes, size_t size)
{
    uint32_t r = 0;
    if (size < FTRABIT_XGB_HEADER_SIZE
        || 0 != memcmp(bytes, ftrabit_xgb_magic, sizeof(ftrabit_xgb_magic))) {
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        r |= (uint32_t) bytes[4 + i] << (8 * i);
    }
    return r > INT_MAX ? -1 : (int) r;
}
