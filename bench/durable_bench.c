/*
 * ompi-resilience: what durable checkpoints cost (bench/run-durable.sh runs it).
 *
 * Usage: durable_bench [--model-mib M] [--iterations N] [--every K] [--local-kib L]
 *
 * A data-parallel training loop on a model of M MiB of doubles (default 64): each
 * iteration every rank computes a gradient from the model (one pass over it), FTR_Allreduce
 * sums the ranks' gradients (M MiB), and every rank applies the sum to its model; every K
 * iterations (default 10) FTR_Checkpoint takes the model as global state and L KiB
 * (default 1024) of rank-local state (an optimizer's per-rank share, say). Started with
 * coll_ftrabit_checkpoint_dir, the checkpoints are also written there, and a job started
 * again resumes from them in FTR_Init.
 *
 * Rank 0 prints, one "key value" per line:
 *   init_s        FTR_Init's duration on the slowest rank (with a directory that holds a
 *                 checkpoint: the restart from it)
 *   start_version the version FTR_Load_checkpoint returned (0: a fresh start)
 *   iterations    iterations run
 *   iter_mean_s   the loop's time on the slowest rank over its iterations: what a user sees
 *   iter_median_s the median iteration (each the slowest rank's time of it)
 *   ckpt_mean_s   the mean time of an iteration that ended with FTR_Checkpoint, the
 *                 checkpoint included (slowest rank)
 *   cpu_iter_s    (every rank, after FTR_Finalize, as "cpu_iter_s S rank R") the
 *                 process's CPU time (user and system, every thread: the writer's too,
 *                 the last version's write included) from the loop's start to the end of
 *                 FTR_Finalize, over the iterations: less disturbed by other jobs than
 *                 wall-clock times, and what the writer costs where no core is idle
 *   fingerprint   of the final model, the same whatever was restarted from where
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ftrabit.h"

static void check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "durable_bench: %s failed (%d)\n", what, err);
        exit(3);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double) ru.ru_utime.tv_sec + 1e-6 * (double) ru.ru_utime.tv_usec
           + (double) ru.ru_stime.tv_sec + 1e-6 * (double) ru.ru_stime.tv_usec;
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
    size_t model_mib = 64, local_kib = 1024;
    int iterations = 100, every = 10, rank, size, version;
    MPI_Comm world;

    for (int i = 1; i < argc; i++) {
        int ok = i + 1 < argc;
        if (ok && !strcmp(argv[i], "--model-mib")) model_mib = strtoull(argv[++i], NULL, 10);
        else if (ok && !strcmp(argv[i], "--iterations")) iterations = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--every")) every = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--local-kib")) local_kib = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "durable_bench: bad argument '%s' (see bench/durable_bench.c)\n",
                    argv[i]);
            return 2;
        }
    }
    if (model_mib < 1 || iterations < 1 || every < 1) {
        fprintf(stderr, "durable_bench: sizes and counts must be positive\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    double t0 = MPI_Wtime();
    check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    double init_s = MPI_Wtime() - t0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);

    /* global: the iteration, then the model */
    size_t n = model_mib * 1048576 / sizeof(double);
    double *global = malloc(sizeof(double) * (n + 1)), *model = global + 1;
    double *grad = malloc(sizeof(double) * n);
    size_t local_len = local_kib * 1024;
    unsigned char *local = malloc(local_len ? local_len : 1);
    if (NULL == global || NULL == grad || NULL == local) {
        fprintf(stderr, "durable_bench: out of memory\n");
        return 3;
    }
    global[0] = 0;
    for (size_t i = 0; i < n; i++) {
        model[i] = 1.0 / (double) (1 + i % 1000);
    }
    memset(local, rank, local_len);
    check(FTR_Load_checkpoint(&world, global, sizeof(double) * (n + 1), local, local_len,
                              &version),
          "FTR_Load_checkpoint");

    int start = (int) global[0], ran = iterations - start;
    double *took = calloc((size_t) (ran > 0 ? ran : 1), sizeof(double));
    double loop_start = MPI_Wtime(), cpu_start = cpu_seconds();
    for (int it = start; it < iterations; it++) {
        double t = MPI_Wtime();
        for (size_t i = 0; i < n; i++) {
            grad[i] = 1e-3 * model[i] + 1e-6 * (double) ((rank + 1) * (int) (i % 7) - 3);
        }
        check(FTR_Allreduce(grad, (int) n, MPI_DOUBLE, MPI_SUM, &world), "FTR_Allreduce");
        for (size_t i = 0; i < n; i++) {
            model[i] -= grad[i] / (double) size;
        }
        global[0] = it + 1;
        local[it % (local_len ? local_len : 1)] ^= (unsigned char) it;
        if ((it + 1) % every == 0) {
            check(FTR_Checkpoint(&world, global, sizeof(double) * (n + 1), local, local_len),
                  "FTR_Checkpoint");
        }
        took[it - start] = MPI_Wtime() - t;
    }
    double loop_s = MPI_Wtime() - loop_start;

    /* the slowest rank's figures (plain MPI on the FTR communicator: nothing fails now) */
    MPI_Allreduce(MPI_IN_PLACE, &init_s, 1, MPI_DOUBLE, MPI_MAX, world);
    MPI_Allreduce(MPI_IN_PLACE, &loop_s, 1, MPI_DOUBLE, MPI_MAX, world);
    if (ran > 0) {
        MPI_Allreduce(MPI_IN_PLACE, took, ran, MPI_DOUBLE, MPI_MAX, world);
    }
    if (0 == rank) {
        double ckpt = 0;
        int nckpt = 0;
        for (int it = start; it < iterations; it++) {
            if ((it + 1) % every == 0) {
                ckpt += took[it - start];
                nckpt++;
            }
        }
        qsort(took, (size_t) (ran > 0 ? ran : 0), sizeof(double), cmp_double);
        printf("init_s %.6f\nstart_version %d\niterations %d\n", init_s, version, ran);
        printf("iter_mean_s %.6f\niter_median_s %.6f\nckpt_mean_s %.6f\n",
               ran > 0 ? loop_s / ran : 0.0, ran > 0 ? took[ran / 2] : 0.0,
               nckpt > 0 ? ckpt / nckpt : 0.0);
        printf("fingerprint %016llx\n",
               (unsigned long long) fingerprint(model, sizeof(double) * n));
        fflush(stdout);
    }
    free(took);
    free(global);
    free(grad);
    free(local);
    MPI_Comm_free(&world);
    FTR_Finalize(); /* the last version's write ends here */
    printf("cpu_iter_s %.6f rank %d\n", ran > 0 ? (cpu_seconds() - cpu_start) / ran : 0.0, rank);
    fflush(stdout);
    return 0;
}
