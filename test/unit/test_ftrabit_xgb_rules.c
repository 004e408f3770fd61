/*
 * Unit tests of the XGBoost engine's pure decisions (integrations/xgboost): which training
 * configurations are refused as not replayable, and how a count above MPI's int is cut.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "integrations/xgboost/ftrabit_xgb_rules.h"
#include "unit.h"

#define N(a) ((int) (sizeof(a) / sizeof((a)[0])))

static int refused(const ftrabit_xgb_param_t *params, int n, const char *says)
{
    char why[512] = "";
    int rc = ftrabit_xgb_replay_refusal(params, n, why, sizeof(why));
    return rc && (NULL == says || NULL != strstr(why, says));
}

static void the_last_value_given_wins(void)
{
    ftrabit_xgb_param_t p[] = {{"nthread", "4"}, {"eta", "1"}, {"nthread", "2"}};
    CHECK(0 == strcmp(ftrabit_xgb_param(p, N(p), "nthread"), "2"));
    CHECK(NULL == ftrabit_xgb_param(p, N(p), "seed"));
}

static void nthread_must_be_a_number_of_threads(void)
{
    ftrabit_xgb_param_t none[] = {{"eta", "1"}};
    ftrabit_xgb_param_t zero[] = {{"nthread", "0"}};
    ftrabit_xgb_param_t word[] = {{"nthread", "all"}};
    ftrabit_xgb_param_t trailing[] = {{"nthread", "2x"}};
    ftrabit_xgb_param_t overridden[] = {{"nthread", "2"}, {"nthread", "-1"}};
    ftrabit_xgb_param_t one[] = {{"nthread", "1"}};
    CHECK(refused(none, N(none), "nthread"));
    CHECK(refused(zero, N(zero), "nthread"));
    CHECK(refused(word, N(word), "nthread"));
    CHECK(refused(trailing, N(trailing), "nthread"));
    CHECK(refused(overridden, N(overridden), "nthread"));
    CHECK(!refused(one, N(one), NULL));
}

static void column_sampling_is_refused(void)
{
    const char *keys[] = {"colsample_bytree", "colsample_bylevel", "colsample_bynode"};
    for (int i = 0; i < N(keys); i++) {
        ftrabit_xgb_param_t half[] = {{"nthread", "1"}, {keys[i], "0.5"}};
        ftrabit_xgb_param_t all[] = {{"nthread", "1"}, {keys[i], "1"}};
        ftrabit_xgb_param_t reseeded[] = {{"nthread", "1"}, {"seed_per_iteration", "1"},
                                          {keys[i], "0.9"}};
        CHECK(refused(half, N(half), keys[i]));
        CHECK(!refused(all, N(all), NULL));
        CHECK(refused(reseeded, N(reseeded), keys[i])); /* the sampler is not reseeded */
    }
}

static void row_sampling_needs_a_seed_per_iteration(void)
{
    ftrabit_xgb_param_t plain[] = {{"nthread", "1"}, {"subsample", "0.8"}};
    ftrabit_xgb_param_t reseeded[] = {{"nthread", "1"}, {"subsample", "0.8"},
                                      {"seed_per_iteration", "true"}};
    ftrabit_xgb_param_t off[] = {{"nthread", "1"}, {"subsample", "0.8"},
                                 {"seed_per_iteration", "0"}};
    ftrabit_xgb_param_t whole[] = {{"nthread", "1"}, {"subsample", "1.0"}};
    CHECK(refused(plain, N(plain), "seed_per_iteration=1"));
    CHECK(!refused(reseeded, N(reseeded), NULL));
    CHECK(refused(off, N(off), "subsample"));
    CHECK(!refused(whole, N(whole), NULL));
}

static void random_feature_selection_needs_a_seed_per_iteration(void)
{
    ftrabit_xgb_param_t shuffle[] = {{"nthread", "1"}, {"feature_selector", "shuffle"}};
    ftrabit_xgb_param_t random[] = {{"nthread", "1"}, {"feature_selector", "random"},
                                    {"seed_per_iteration", "1"}};
    ftrabit_xgb_param_t cyclic[] = {{"nthread", "1"}, {"feature_selector", "cyclic"}};
    CHECK(refused(shuffle, N(shuffle), "feature_selector=shuffle"));
    CHECK(!refused(random, N(random), NULL));
    CHECK(!refused(cyclic, N(cyclic), NULL));
}

static void a_long_message_is_cut_not_overrun(void)
{
    ftrabit_xgb_param_t none[] = {{"eta", "1"}};
    char why[16];
    memset(why, 'x', sizeof(why));
    CHECK(1 == ftrabit_xgb_replay_refusal(none, N(none), why, 8));
    CHECK('\0' == why[7] && 'x' == why[8]);
}

/* Every element in exactly one chunk, in order, none larger than the limit. */
static void chunks_cover_the_count(void)
{
    size_t counts[] = {0, 1, 7, 8, 9, 1000, (size_t) INT_MAX, (size_t) INT_MAX + 1,
                       (size_t) 3 * INT_MAX + 5};
    size_t maxes[] = {1, 3, 8, 1000, (size_t) INT_MAX};
    for (int c = 0; c < N(counts); c++) {
        for (int m = 0; m < N(maxes); m++) {
            size_t count = counts[c], max = maxes[m], chunks = ftrabit_xgb_chunks(count, max);
            size_t next = 0;
            if (count / max > 1000000) {
                continue; /* would take long, and is covered by the formula below */
            }
            for (size_t i = 0; i < chunks; i++) {
                size_t first, n;
                ftrabit_xgb_chunk(count, max, i, &first, &n);
                CHECK(first == next && n >= 1 && n <= max);
                next = first + n;
            }
            CHECK(next == count);
            CHECK(chunks == (count + max - 1) / max);
        }
    }
    CHECK(4 == ftrabit_xgb_chunks((size_t) 3 * INT_MAX + 5, (size_t) INT_MAX));
}

/* A checkpoint every `every` rounds, never before the first round, and none with every < 1. */
static void checkpoints_every_k_rounds(void)
{
    int taken = 0;
    for (int r = 0; r <= 100; r++) {
        taken += ftrabit_xgb_checkpoint_due(r, 10);
    }
    CHECK(10 == taken);
    CHECK(!ftrabit_xgb_checkpoint_due(0, 1) && ftrabit_xgb_checkpoint_due(1, 1));
    CHECK(ftrabit_xgb_checkpoint_due(7, 7) && !ftrabit_xgb_checkpoint_due(8, 7));
    CHECK(!ftrabit_xgb_checkpoint_due(5, 0) && !ftrabit_xgb_checkpoint_due(5, -1));
}

/* The round survives the header both ways; anything else is not read as one. */
static void the_header_says_the_round(void)
{
    unsigned char h[FTRABIT_XGB_HEADER_SIZE + 1];
    int rounds[] = {0, 1, 255, 256, 65537, INT_MAX};
    for (int i = 0; i < N(rounds); i++) {
        ftrabit_xgb_header_write(h, rounds[i]);
        CHECK(rounds[i] == ftrabit_xgb_header_read(h, FTRABIT_XGB_HEADER_SIZE));
        CHECK(-1 == ftrabit_xgb_header_read(h, FTRABIT_XGB_HEADER_SIZE - 1));
    }
    ftrabit_xgb_header_write(h, 3);
    h[0] = '{'; /* a learner serialized without our header */
    CHECK(-1 == ftrabit_xgb_header_read(h, sizeof(h)));
    ftrabit_xgb_header_write(h, 3);
    h[7] = 0x80; /* above INT_MAX */
    CHECK(-1 == ftrabit_xgb_header_read(h, sizeof(h)));
}

int main(void)
{
    RUN(the_last_value_given_wins);
    RUN(nthread_must_be_a_number_of_threads);
    RUN(column_sampling_is_refused);
    RUN(row_sampling_needs_a_seed_per_iteration);
    RUN(random_feature_selection_needs_a_seed_per_iteration);
    RUN(a_long_message_is_cut_not_overrun);
    RUN(chunks_cover_the_count);
    RUN(checkpoints_every_k_rounds);
    RUN(the_header_says_the_round);
    UNIT_EXIT();
}
