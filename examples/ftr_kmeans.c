/*
 * ompi-resilience example: a Rabit-style fault-tolerant k-means trainer with the FTR_* API.
 *
 * The model (the centroids) is the global checkpoint; each rank's local state (how many
 * points it moved in the last iteration) is its local checkpoint. If a process dies, the
 * survivors start a replacement; it reloads the last checkpoint, replays the iterations
 * since then (its collectives are served the results the others got) and the job ends
 * with exactly the centroids of a run without failures.
 *
 * Usage: mpirun --with-ft ulfm -np 4 ./ftr_kmeans [options]
 *    or: mpirun --with-ft ulfm --mca coll_ftrabit_spares 2 -np 6 ./ftr_kmeans [options]
 *        (4 ranks and 2 warm spares; a spare that takes a dead rank's place prints
 *        "rank R: spare takes over", a spawned replacement "rank R: replacement starts")
 *   --iterations N     (default 30)     --checkpoint-every N (default 5)
 *   --points N         per rank (20000) --clusters K (8)     --dims D (4)
 *   --kill R:I[:WHERE]  kill original rank R (SIGKILL) at iteration I; WHERE is
 *                       before-allreduce (default), after-allreduce, before-bcast or
 *                       before-checkpoint. Repeatable.
 *   --replacement-stalls S  a replacement waits S seconds before it joins (a
 *                       replacement slower than coll_ftrabit_recovery_timeout).
 *   --hold R:I          original rank R stops at iteration I (before its allreduce), leaves
 *                       the mark "held-R" in --kill-marks' DIR and waits to be killed from
 *                       outside (a test killing a whole host while the job runs). Repeatable.
 *   --pause R:I         original rank R stops at iteration I (before its allreduce), leaves
 *                       the mark "paused-R" (holding its pid) in --kill-marks' DIR and goes on
 *                       once the mark is removed (a test sending it a signal, or waiting for
 *                       something outside, at a known point). Repeatable.
 *   --notice R:I        original rank R sends itself SIGTERM at iteration I (before its
 *                       allreduce), as a preemption notice would, and goes on if it lives.
 *                       Repeatable.
 *   --kill-marks DIR    each kill happens once: the dying process leaves a mark in DIR, so
 *                       its replacement replaying that iteration does not die again, but a
 *                       later kill of the same rank still happens. Without it, replacements
 *                       never kill themselves.
 * For measurements (bench/run-recovery.sh):
 *   --timeline          print wall-clock times (CLOCK_REALTIME, seconds) on stdout:
 *                       "timeline rank R start T iteration I", "timeline rank R done I T" after
 *                       each iteration's collectives (and checkpoint), and "timeline rank R
 *                       kill I T" just before a --kill.
 *   --checkpoint-file PATH  at each checkpoint rank 0 also writes the global model to PATH
 *                       (written to PATH.tmp, then renamed: a file is always complete).
 *   --restart-from-file  start from the model in --checkpoint-file's PATH if it exists: the
 *                       classic restart of a whole job after a failure killed it.
 *   --keep-comm         do not free the communicator FTR_Init gave (MPI allows that; the
 *                       job must still end).
 *   --local-assignments the local checkpoint also holds each point's cluster and the moves
 *                       counted since the start, so that a rank resuming from a checkpoint
 *                       counts the same moves as a run without failures; each rank prints
 *                       "rank R local fingerprint F" of it at the end (tests of restarts).
 * Durable checkpoints: with --mca coll_ftrabit_checkpoint_dir DIR the checkpoints are also
 * written under DIR, and the job started again the same way resumes from them.
 */
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftrabit.h"

enum where { BEFORE_ALLREDUCE, AFTER_ALLREDUCE, BEFORE_BCAST, BEFORE_CHECKPOINT };
static const char *where_names[] = {"before-allreduce", "after-allreduce", "before-bcast",
                                    "before-checkpoint"};

/* What happens at a --kill, --hold, --pause or --notice point. */
enum how { KILL, HOLD, PAUSE, NOTICE };

typedef struct {
    int rank, iteration;
    enum where where;
    enum how how;
} kill_t;

static kill_t kills[64];
static int nkills;
static int is_replacement;

static const char *kill_marks;
static int timeline;

/* Wall-clock time in seconds: comparable between the processes of one machine, and between
 * two jobs (a whole-job restart). */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* True the first time this kill is reached in the whole job (see --kill-marks). */
static int first_time(int i)
{
    char path[4096];
    if (NULL == kill_marks) {
        return !is_replacement;
    }
    snprintf(path, sizeof(path), "%s/kill-%d", kill_marks, i);
    FILE *f = fopen(path, "wx"); /* fails if it exists */
    if (NULL == f) {
        return 0;
    }
    fclose(f);
    return 1;
}

/* --hold: tell the outside we are here (the mark), then wait for its SIGKILL */
static void hold_until_killed(int rank, int iteration)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/held-%d", kill_marks, rank);
    FILE *f = fopen(path, "w");
    if (NULL != f) {
        fclose(f);
    }
    fprintf(stderr, "ftr_kmeans: rank %d held at iteration %d, waiting to be killed\n", rank,
            iteration);
    fflush(stderr);
    for (;;) {
        pause();
    }
}

/* --pause: tell the outside we are here (the mark, with our pid), go on once it is gone */
static void pause_until_released(int rank, int iteration)
{
    char path[4096];
    const struct timespec tick = {0, 10000000};
    snprintf(path, sizeof(path), "%s/paused-%d", kill_marks, rank);
    FILE *f = fopen(path, "w");
    if (NULL != f) {
        fprintf(f, "%d\n", (int) getpid());
        fclose(f);
    }
    fprintf(stderr, "ftr_kmeans: rank %d paused at iteration %d\n", rank, iteration);
    fflush(stderr);
    while (0 == access(path, F_OK)) {
        nanosleep(&tick, NULL);
    }
}

static void maybe_die(int rank, int iteration, enum where where)
{
    for (int i = 0; i < nkills; i++) {
        if (kills[i].rank == rank && kills[i].iteration == iteration && kills[i].where == where
            && first_time(i)) {
            if (PAUSE == kills[i].how) {
                pause_until_released(rank, iteration);
                continue;
            }
            if (timeline) {
                printf("timeline rank %d %s %d %.6f\n", rank,
                       NOTICE == kills[i].how ? "notice" : "kill", iteration, wall_now());
                fflush(stdout);
            }
            if (NOTICE == kills[i].how) {
                fprintf(stderr, "ftr_kmeans: rank %d sends itself SIGTERM at iteration %d\n",
                        rank, iteration);
                fflush(stderr);
                raise(SIGTERM);
                continue;
            }
            if (HOLD == kills[i].how) {
                hold_until_killed(rank, iteration);
            }
            fprintf(stderr, "ftr_kmeans: rank %d killing itself at iteration %d (%s)\n", rank,
                    iteration, where_names[where]);
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

static int parse_kill(const char *spec, enum how how)
{
    char where[64] = "before-allreduce";
    kill_t k = {.how = how};
    if (nkills == 64 || sscanf(spec, "%d:%d:%63s", &k.rank, &k.iteration, where) < 2) {
        return -1;
    }
    for (k.where = 0; k.where < 4 && strcmp(where, where_names[k.where]) != 0; k.where++) {
    }
    if (k.where == 4) {
        return -1;
    }
    kills[nkills++] = k;
    return 0;
}

/* An FTR_* call returns an error only when recovery was impossible (the message says why):
 * nothing sensible is left to do but to stop. Every rank gets the same error, and each
 * ends its own process: under --with-ft ulfm, MPI_Abort would end only the caller. */
static void ftr_check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, msg, &len);
        fprintf(stderr, "ftr_kmeans: %s failed: %s; exiting\n", what, msg);
        fflush(stderr);
        _exit(3);
    }
}

/* The model file of --checkpoint-file: a header, then the model (iteration, centroids). */
#define MODEL_FILE_MAGIC 0x4654524b4d45414eULL /* "FTRKMEAN" */

static void write_model_file(const char *path, const double *model, size_t len)
{
    char tmp[4096];
    uint64_t header[2] = {MODEL_FILE_MAGIC, (uint64_t) len};
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (NULL == f || 1 != fwrite(header, sizeof(header), 1, f)
        || len != fwrite(model, sizeof(double), len, f) || 0 != fclose(f)
        || 0 != rename(tmp, path)) {
        fprintf(stderr, "ftr_kmeans: cannot write the checkpoint file %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
}

/* 1 if the model was read from path, 0 if there is no such file. */
static int read_model_file(const char *path, double *model, size_t len)
{
    uint64_t header[2];
    FILE *f = fopen(path, "rb");
    if (NULL == f) {
        return 0;
    }
    if (1 != fread(header, sizeof(header), 1, f) || MODEL_FILE_MAGIC != header[0]
        || len != header[1] || len != fread(model, sizeof(double), len, f)) {
        fprintf(stderr, "ftr_kmeans: %s is not a checkpoint of this model (other --clusters or "
                        "--dims?)\n", path);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    fclose(f);
    return 1;
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static double uniform(uint64_t *s)
{
    return (double) (next_random(s) >> 11) / (double) (1ULL << 53);
}

static uint64_t fingerprint(const void *v, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((const unsigned char *) v)[i]) * 0x100000001b3ULL;
    }
    return h;
}

int main(int argc, char **argv)
{
    int iterations = 30, every = 5, n = 20000, clusters = 8, dims = 4;
    MPI_Comm world, parent;
    int rank, size, version;
    const char *checkpoint_file = NULL;
    int restart_from_file = 0, keep_comm = 0, local_assignments = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--replacement-stalls") && i + 1 < argc) {
            MPI_Init(&argc, &argv);
            MPI_Comm_get_parent(&parent);
            if (MPI_COMM_NULL != parent) {
                sleep((unsigned) atoi(argv[i + 1]));
            }
        }
    }
    ftr_check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    int origin;
    ftr_check(FTR_Origin(&origin), "FTR_Origin");
    is_replacement = FTR_ORIGIN_ORIGINAL != origin; /* respawned, or a spare (see FTR_Init) */
    for (int i = 1; i < argc; i++) {
        int ok = i + 1 < argc;
        if (ok && !strcmp(argv[i], "--iterations")) iterations = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--checkpoint-every")) every = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--points")) n = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--clusters")) clusters = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--dims")) dims = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--kill")) ok = parse_kill(argv[++i], KILL) == 0;
        else if (ok && !strcmp(argv[i], "--hold")) ok = parse_kill(argv[++i], HOLD) == 0;
        else if (ok && !strcmp(argv[i], "--pause")) ok = parse_kill(argv[++i], PAUSE) == 0;
        else if (ok && !strcmp(argv[i], "--notice")) ok = parse_kill(argv[++i], NOTICE) == 0;
        else if (ok && !strcmp(argv[i], "--kill-marks")) kill_marks = argv[++i];
        else if (ok && !strcmp(argv[i], "--replacement-stalls")) ++i;
        else if (!strcmp(argv[i], "--timeline")) ok = timeline = 1;
        else if (ok && !strcmp(argv[i], "--checkpoint-file")) checkpoint_file = argv[++i];
        else if (!strcmp(argv[i], "--restart-from-file")) ok = restart_from_file = 1;
        else if (!strcmp(argv[i], "--keep-comm")) ok = keep_comm = 1;
        else if (!strcmp(argv[i], "--local-assignments")) ok = local_assignments = 1;
        else ok = 0;
        if (!ok) {
            fprintf(stderr, "ftr_kmeans: bad argument '%s' (see the comment at the top of "
                            "examples/ftr_kmeans.c)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (iterations < 1 || every < 1 || n < 1 || clusters < 1 || dims < 1) {
        fprintf(stderr, "ftr_kmeans: every size must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < nkills; i++) {
        if ((HOLD == kills[i].how || PAUSE == kills[i].how) && NULL == kill_marks) {
            fprintf(stderr, "ftr_kmeans: --hold and --pause need --kill-marks DIR (where they "
                            "leave their mark)\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (restart_from_file && NULL == checkpoint_file) {
        fprintf(stderr, "ftr_kmeans: --restart-from-file needs --checkpoint-file PATH\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    /* Kill specs name ranks of the original job (the shrink policy renumbers the survivors;
     * a replacement has the rank it replaces and never dies again). */
    const int original_rank = rank;

    /* This rank's shard: drawn from its rank, so a replacement has the same points. */
    double *pts = malloc(sizeof(double) * (size_t) n * dims);
    uint64_t centre_state = 12345, state = 0x9E3779B97F4A7C15ULL ^ (uint64_t) (rank + 1);
    double *centres = malloc(sizeof(double) * (size_t) clusters * dims);
    for (int c = 0; c < clusters * dims; c++) centres[c] = 100.0 * uniform(&centre_state);
    for (int i = 0; i < n; i++) {
        int c = (int) (next_random(&state) % (uint64_t) clusters);
        for (int d = 0; d < dims; d++) {
            pts[i * dims + d] = centres[c * dims + d] + 8.0 * (uniform(&state) - 0.5);
        }
    }

    /* Global model: the iteration it belongs to, then the centroids. */
    size_t model_len = 1 + (size_t) clusters * dims;
    double *model = calloc(model_len, sizeof(double));
    double *centroids = model + 1;
    /* Local state: points that changed cluster in the last iteration; with
     * --local-assignments, those since the start and each point's cluster. */
    size_t local_len = sizeof(long) + (local_assignments ? sizeof(int) * (size_t) n : 0);
    long *local = calloc(1, local_len), *moved = local;
    int *assignment = local_assignments ? (int *) (local + 1) : calloc((size_t) n, sizeof(int));

    /* Initialisation before the first checkpoint: kept for the job by call site. */
    long total = n;
    ftr_check(FTR_Allreduce_bootstrap(&total, 1, MPI_LONG, MPI_SUM, &world),
              "FTR_Allreduce_bootstrap");
    if (0 == rank) memcpy(centroids, pts, sizeof(double) * (size_t) clusters * dims);
    ftr_check(FTR_Bcast_bootstrap(centroids, clusters * dims, MPI_DOUBLE, 0, &world),
              "FTR_Bcast_bootstrap");

    ftr_check(FTR_Load_checkpoint(&world, model, sizeof(double) * model_len, local, local_len,
                                  &version),
              "FTR_Load_checkpoint");
    /* A whole-job restart: a fresh job (version 0) that continues from the file. */
    if (restart_from_file && 0 == version && !is_replacement) {
        (void) read_model_file(checkpoint_file, model, model_len);
    }
    int start = (int) model[0];
    if (timeline) {
        printf("timeline rank %d start %.6f iteration %d\n", original_rank, wall_now(), start);
        fflush(stdout);
    }
    if (0 == rank || is_replacement) {
        char host[MPI_MAX_PROCESSOR_NAME];
        int host_len;
        MPI_Get_processor_name(host, &host_len);
        printf("rank %d: %s at iteration %d (checkpoint version %d), %ld points in all, on %s\n",
               rank,
               FTR_ORIGIN_SPARE == origin       ? "spare takes over"
               : FTR_ORIGIN_RESPAWNED == origin ? "replacement starts"
                                                : "starts",
               start, version, total, host);
        fflush(stdout);
    }

    int stride = dims + 1;
    double *sums = malloc(sizeof(double) * (size_t) clusters * stride);
    double t0 = MPI_Wtime();
    for (int it = start; it < iterations; it++) {
        memset(sums, 0, sizeof(double) * (size_t) clusters * stride);
        if (!local_assignments) {
            *moved = 0;
        }
        for (int i = 0; i < n; i++) {
            int best = 0;
            double best_d = INFINITY;
            for (int c = 0; c < clusters; c++) {
                double d = 0;
                for (int k = 0; k < dims; k++) {
                    double x = pts[i * dims + k] - centroids[c * dims + k];
                    d += x * x;
                }
                if (d < best_d) {
                    best_d = d;
                    best = c;
                }
            }
            *moved += assignment[i] != best;
            assignment[i] = best;
            for (int k = 0; k < dims; k++) sums[best * stride + k] += pts[i * dims + k];
            sums[best * stride + dims] += 1.0;
        }
        maybe_die(original_rank, it, BEFORE_ALLREDUCE);
        ftr_check(FTR_Allreduce(sums, clusters * stride, MPI_DOUBLE, MPI_SUM, &world),
                  "FTR_Allreduce");
        maybe_die(original_rank, it, AFTER_ALLREDUCE);
        for (int c = 0; c < clusters; c++) {
            double count = sums[c * stride + dims];
            if (count > 0) {
                for (int k = 0; k < dims; k++) centroids[c * dims + k] = sums[c * stride + k] / count;
            }
        }
        /* Rank 0 decides whether to keep going (exercises FTR_Bcast). */
        int keep_going = 1;
        maybe_die(original_rank, it, BEFORE_BCAST);
        ftr_check(FTR_Bcast(&keep_going, 1, MPI_INT, 0, &world), "FTR_Bcast");
        model[0] = it + 1;
        if ((it + 1) % every == 0) {
            maybe_die(original_rank, it, BEFORE_CHECKPOINT);
            ftr_check(FTR_Checkpoint(&world, model, sizeof(double) * model_len, local, local_len),
                      "FTR_Checkpoint");
            if (NULL != checkpoint_file) {
                int now_rank;
                MPI_Comm_rank(world, &now_rank); /* recovery may have replaced world */
                if (0 == now_rank) write_model_file(checkpoint_file, model, model_len);
            }
        }
        if (timeline) {
            printf("timeline rank %d done %d %.6f\n", original_rank, it, wall_now());
            fflush(stdout);
        }
    }
    double elapsed = MPI_Wtime() - t0;

    uint64_t fp = fingerprint(centroids, sizeof(double) * (size_t) clusters * dims);
    MPI_Comm_rank(world, &rank); /* the shrink policy renumbers the survivors */
    MPI_Comm_size(world, &size);
    if (0 == rank) {
        printf("final centroids fingerprint %016llx after %d iterations on %d ranks (%.2f s)\n",
               (unsigned long long) fp, iterations, size, elapsed);
    }
    if (local_assignments) {
        printf("rank %d local fingerprint %016llx\n", original_rank,
               (unsigned long long) fingerprint(local, local_len));
    }
    fflush(stdout);
    free(pts);
    free(centres);
    free(model);
    if (!local_assignments) {
        free(assignment);
    }
    free(local);
    free(sums);
    if (!keep_comm) {
        MPI_Comm_free(&world);
    }
    FTR_Finalize();
    return 0;
}
