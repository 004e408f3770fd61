/*
 * ompi-resilience: coll/ftrabit durable checkpoints, the writer thread (see
 * ftrabit_store_writer.h). No MPI.
 */
#include "ftrabit_store_writer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ftrabit_store_writer {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    int started;
    int quit;
    int pending;                /* a job waits for the thread or runs */
    ftrabit_store_job_t job;
    ftrabit_store_result_t result;
    double submitted;
};

static double clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static double now_seconds(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}

static int remove_where(const char *dir, int (*doomed)(const ftrabit_store_entry_t *, const void *),
                        const void *arg)
{
    ftrabit_store_entry_t *entries;
    int n, left = 0;

    if (0 != ftrabit_store_list(dir, &entries, &n)) {
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (doomed(&entries[i], arg) && 0 != ftrabit_store_remove(dir, entries[i].name)) {
            left++;
        }
    }
    free(entries);
    return left;
}

typedef struct {
    const ftrabit_store_history_t *history;
    int keep;
    uint32_t current;
} prune_rule_t;

static int prune_doomed(const ftrabit_store_entry_t *e, const void *arg)
{
    const prune_rule_t *rule = arg;
    if (e->temporary) {
        /* every rank finished its writes of versions before `current` before this one was
         * committed (FTR_Checkpoint waits for them): what is left of them is a dead
         * process's */
        return e->version < rule->current;
    }
    return e->version < rule->current
           && !ftrabit_store_history_keeps(rule->history, rule->keep, e->version);
}

int ftrabit_store_prune(const char *dir, const ftrabit_store_history_t *history, int keep,
                        uint32_t current)
{
    prune_rule_t rule = {history, keep, current};
    return remove_where(dir, prune_doomed, &rule);
}

static int above_doomed(const ftrabit_store_entry_t *e, const void *arg)
{
    return e->temporary || e->version > *(const uint32_t *) arg;
}

int ftrabit_store_remove_above(const char *dir, uint32_t version)
{
    return remove_where(dir, above_doomed, &version);
}

static void run_job(ftrabit_store_job_t *job, ftrabit_store_result_t *res)
{
    ftrabit_store_write_options_t opt = {.tmp_tag = job->tmp_tag,
                                         .half_written = job->half_written,
                                         .arg = job->arg};
    for (int i = 0; i < job->npieces && !res->failed; i++) {
        size_t bytes;
        if (0 != ftrabit_store_write(job->dir, &job->pieces[i].h, job->pieces[i].payload, &opt,
                                     &bytes, &res->error)) {
            res->failed = 1;
            fprintf(stderr, "ftrabit: %s: durable checkpoint version %u not written: %s: %s: "
                            "%s\n", job->who, job->version, res->error.path, res->error.step,
                    strerror(res->error.err));
            break;
        }
        res->bytes += bytes;
        opt.half_written = NULL; /* the first piece only */
    }
    if (job->prune && !res->failed) {
        int left = ftrabit_store_prune(job->dir, &job->history, job->keep, job->version);
        if (left > 0) {
            fprintf(stderr, "ftrabit: %s: %d old checkpoint file(s) in %s could not be removed\n",
                    job->who, left, job->dir);
        }
    }
}

static void *writer_main(void *arg)
{
    ftrabit_store_writer_t *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->quit && !w->pending) {
            pthread_cond_wait(&w->changed, &w->lock);
        }
        if (w->pending) {
            ftrabit_store_job_t job = w->job;
            ftrabit_store_result_t res = {.ran = 1, .version = job.version};
            pthread_mutex_unlock(&w->lock);
            double cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
            run_job(&job, &res);
            res.cpu_seconds = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
            pthread_mutex_lock(&w->lock);
            res.seconds = now_seconds() - w->submitted;
            w->result = res;
            w->pending = 0;
            free(w->job.pieces);
            w->job.pieces = NULL;
            pthread_cond_broadcast(&w->changed);
            continue;
        }
        break; /* quit, nothing left to do */
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

ftrabit_store_writer_t *ftrabit_store_writer_new(void)
{
    ftrabit_store_writer_t *w = calloc(1, sizeof(*w));
    if (NULL == w) {
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    return w;
}

int ftrabit_store_writer_submit(ftrabit_store_writer_t *w, const ftrabit_store_job_t *job)
{
    pthread_mutex_lock(&w->lock);
    if (!w->started) {
        if (0 != pthread_create(&w->thread, NULL, writer_main, w)) {
            pthread_mutex_unlock(&w->lock);
            free(job->pieces);
            return -1;
        }
        w->started = 1;
    }
    w->job = *job;
    w->result = (ftrabit_store_result_t){0};
    w->submitted = now_seconds();
    w->pending = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void ftrabit_store_writer_wait(ftrabit_store_writer_t *w, ftrabit_store_result_t *res)
{
    pthread_mutex_lock(&w->lock);
    while (w->pending) {
        pthread_cond_wait(&w->changed, &w->lock);
    }
    if (NULL != res) {
        *res = w->result;
        w->result.ran = 0; /* reported */
    }
    pthread_mutex_unlock(&w->lock);
}

int ftrabit_store_writer_busy(ftrabit_store_writer_t *w)
{
    pthread_mutex_lock(&w->lock);
    int busy = w->pending;
    pthread_mutex_unlock(&w->lock);
    return busy;
}

void ftrabit_store_writer_free(ftrabit_store_writer_t *w)
{
    if (NULL == w) {
        return;
    }
    ftrabit_store_writer_wait(w, NULL);
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    if (w->started) {
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w);
}
