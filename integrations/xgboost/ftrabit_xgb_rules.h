/*
 * ompi-resilience: XGBoost on libftrabit, the engine's pure decisions (no MPI, no XGBoost):
 * which training configurations a replacement can replay bit for bit, how a collective of
 * more elements than MPI's int count is cut into several, after which rounds the learner
 * is checkpointed and the header that says the round in a checkpoint.
 */
#ifndef FTRABIT_XGB_RULES_H
#define FTRABIT_XGB_RULES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One training parameter as XGBoost hands it to the engine ("key=value"). */
typedef struct {
    const char *key;
    const char *value;
} ftrabit_xgb_param_t;

/* The value of `key` among params[0..n): the last one given wins, as in XGBoost (a
 * command-line argument overrides the configuration file). NULL if not given. */
const char *ftrabit_xgb_param(const ftrabit_xgb_param_t *params, int n, const char *key);

/* 0 when a replacement that loads a checkpoint and replays the rest trains the same
 * model, bit for bit, as the process it replaces would have. Otherwise 1 and, in why
 * (len bytes), what is wrong and what to set. The rules (docs/xgboost.md):
 *   nthread given, a whole number >= 1: a replacement started on another node would
 *     otherwise take that node's core count, and sums over threads change with it;
 *   no colsample_bytree/_bylevel/_bynode below 1: the column sampler's random state lives
 *     in the process and is not part of the model;
 *   subsample below 1, or gblinear's feature_selector shuffle or random, only with
 *     seed_per_iteration: the random generator is then reseeded from the round number. */
int ftrabit_xgb_replay_refusal(const ftrabit_xgb_param_t *params, int n, char *why, size_t len);

/* A collective of `count` elements with at most `max` (>= 1) per call: how many calls,
 * and the first element and element count of call i. */
size_t ftrabit_xgb_chunks(size_t count, size_t max);
void ftrabit_xgb_chunk(size_t count, size_t max, size_t i, size_t *first, size_t *n);

/* The learner is checkpointed after boosting round `rounds_done` (1 after the first round)
 * when this returns 1: every `every` rounds (every >= 1). Between two checkpoints a
 * replacement replays the rounds since the last one, its collectives served from the
 * survivors' result caches. The same answer on every process: a checkpoint is collective. */
int ftrabit_xgb_checkpoint_due(int rounds_done, int every);

/* A checkpoint of the learner starts with this header: FTR's version counts checkpoints,
 * while a replacement resumes after the boosting round the checkpoint was taken at. */
#define FTRABIT_XGB_HEADER_SIZE 8
void ftrabit_xgb_header_write(unsigned char *header, int rounds_done);
/* The rounds done a header says; -1 if these bytes are no header of ours (a checkpoint of
 * another program, or too short). */
int ftrabit_xgb_header_read(const unsigned char *bytes, size_t size);

#ifdef __cplusplus
}
#endif

#endif
