/*
 * ompi-resilience: a fixed number of FTR_Allreduce or FTR_Bcast calls, for counting the
 * instructions one call executes outside MPI (bench/run-ftr-callgrind.sh runs it under
 * valgrind --tool=callgrind).
 *
 * Usage: ftr_percall allreduce|bcast BYTES CALLS CHECKPOINT_EVERY
 *   BYTES             message size (MPI_DOUBLEs, rounded down to a multiple of 8)
 *   CALLS             calls counted, after two untimed intervals that fill the result pool
 *   CHECKPOINT_EVERY  FTR_Checkpoint after this many calls (>= 1)
 * Instruction counts do not depend on the machine's load, unlike times: two runs with
 * different CALLS give the steady-state cost of one call as the difference of their
 * counts over the difference of CALLS (warm-up, start and end cancel out).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

static void check(int rc, const char *what)
{
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "ftr_percall: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void calls(int is_bcast, double *buf, int n, long ncalls, long every, MPI_Comm *world)
{
    static long model, since;
    for (long i = 0; i < ncalls; i++) {
        if (is_bcast) {
            check(FTR_Bcast(buf, n, MPI_DOUBLE, 0, world), "FTR_Bcast");
        } else {
            check(FTR_Allreduce(buf, n, MPI_DOUBLE, MPI_SUM, world), "FTR_Allreduce");
        }
        if (++since == every) {
            model++;
            since = 0;
            check(FTR_Checkpoint(world, &model, sizeof(model), &model, sizeof(model)),
                  "FTR_Checkpoint");
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Comm world;

    check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    if (argc != 5 || (strcmp(argv[1], "allreduce") && strcmp(argv[1], "bcast"))) {
        fprintf(stderr, "usage: ftr_percall allreduce|bcast BYTES CALLS CHECKPOINT_EVERY\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int is_bcast = !strcmp(argv[1], "bcast");
    long bytes = atol(argv[2]), ncalls = atol(argv[3]), every = atol(argv[4]);
    int n = (int) (bytes / (long) sizeof(double));
    if (n < 1 || ncalls < 0 || every < 1) {
        fprintf(stderr, "ftr_percall: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *buf = calloc((size_t) n, sizeof(double)); /* zeros: sums stay exact */
    if (NULL == buf) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    calls(is_bcast, buf, n, 2 * every, every, &world); /* the pool's first intervals */
    calls(is_bcast, buf, n, ncalls, every, &world);
    free(buf);
    MPI_Comm_free(&world);
    return FTR_Finalize();
}
