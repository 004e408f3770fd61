/*
 * ompi-resilience: coll/ftrabit durable checkpoints, the writer thread (no MPI).
 *
 * FTR_Checkpoint hands a committed version to one background thread per process and
 * returns: the application computes while the files are written. A job is the pieces this
 * process writes for one version (its local state, the copies of ring predecessors' local
 * states it is the designated writer of, the global state if it leads its directory), then
 * the removal of versions that are no longer kept. One job at a time: the next checkpoint
 * waits for the previous job only if it still runs (ftrabit_store_writer_wait).
 *
 * The payloads are borrowed, not copied: the caller keeps them unchanged and allocated
 * until the job is over (ftrabit_store_writer_wait returns). The thread calls no MPI
 * function and writes its own messages, one line each, on stderr.
 */
#ifndef FTRABIT_STORE_WRITER_H
#define FTRABIT_STORE_WRITER_H

#include "ftrabit_store.h"

typedef struct {
    ftrabit_store_header_t h; /* payload_crc is computed by the writer */
    const void *payload;
} ftrabit_store_piece_t;

typedef struct {
    char dir[4096];
    char who[64];              /* "rank 3", for messages */
    char tmp_tag[96];          /* temporary names: unique to this process (host-pid) */
    uint32_t version;
    ftrabit_store_piece_t *pieces; /* owned by the writer once submitted */
    int npieces;
    /* Removal after the writes (the directory's leader): temporary files of versions
     * before `version` (writes that a dead process left) and versions `history` does not
     * keep under `keep`. */
    int prune;
    ftrabit_store_history_t history;
    int keep;
    /* Tests: the process kills itself once half of its first piece is written. */
    void (*half_written)(const char *tmp_path, void *arg);
    void *arg;
} ftrabit_store_job_t;

typedef struct {
    int ran;                 /* a job ran since the last wait */
    int failed;              /* one of its writes failed (it said so) */
    ftrabit_store_error_t error;
    uint32_t version;
    size_t bytes;            /* written, headers included */
    double seconds;          /* from submit to the end of the job */
    double cpu_seconds;      /* the writer thread's CPU time for it (checksums, copies) */
} ftrabit_store_result_t;

typedef struct ftrabit_store_writer ftrabit_store_writer_t;

/* NULL when out of memory. The thread starts with the first job. */
ftrabit_store_writer_t *ftrabit_store_writer_new(void);
/* Start `job` (copied; its pieces array is the writer's from now on). The previous job
 * must be over (waited for). 0, or -1 (no thread could be started: the job is not run). */
int ftrabit_store_writer_submit(ftrabit_store_writer_t *w, const ftrabit_store_job_t *job);
/* Block until no job runs; *res: the outcome of the job submitted last, if it was not
 * reported by an earlier wait (res NULL: it stays to be reported). */
void ftrabit_store_writer_wait(ftrabit_store_writer_t *w, ftrabit_store_result_t *res);
int ftrabit_store_writer_busy(ftrabit_store_writer_t *w);
/* Waits for the job, ends the thread, frees everything. */
void ftrabit_store_writer_free(ftrabit_store_writer_t *w);

/* The removals of a pruning job, done here (also used by the restart, with prune_above:
 * every version above it goes, and every temporary file). Returns how many files could not
 * be removed. */
int ftrabit_store_prune(const char *dir, const ftrabit_store_history_t *history, int keep,
                        uint32_t current);
int ftrabit_store_remove_above(const char *dir, uint32_t version);

#endif /* FTRABIT_STORE_WRITER_H */
