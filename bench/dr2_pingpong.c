/*
 * ompi-resilience: NetPIPE-style ping-pong between ranks 0 and 1, for comparing PMLs
 * (bench/run-dr2.sh runs it with ob1 and dr2 side by side).
 *
 * For every size (powers of two from MIN to MAX bytes; NetPIPE's perturbations are left
 * out: the PMLs compared here have no size-specific protocol switches besides their eager
 * limits, which fall on powers of two), a calibration round picks a repetition count that
 * takes about TRIAL_SECONDS, then TRIALS trials of that many round trips run; the median
 * trial (or with STAT "best" the fastest, as NetPIPE reports: on a machine shared with other
 * work, the trial least disturbed by it) gives the one-way latency (half a round trip) and
 * the bandwidth (bytes over that one-way time, as NetPIPE reports it). Blocking MPI_Send/MPI_Recv, the same buffers every
 * time (warm cache, as NetPIPE without its cache-invalidation option).
 *
 * Usage: mpirun -np 2 dr2_pingpong [MIN [MAX [TRIALS [TRIAL_SECONDS [median|best]]]]]
 * Output on rank 0, one line per size:  bytes  usec_one_way  MB/s  (MB = 1e6 bytes)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* `reps` round trips of `bytes`; returns the elapsed time on rank 0. */
static double pingpong(int rank, char *buf, size_t bytes, long reps)
{
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long i = 0; i < reps; i++) {
        if (0 == rank) {
            MPI_Send(buf, (int) bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int) bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (1 == rank) {
            MPI_Recv(buf, (int) bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int) bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    int rank, size;
    size_t min = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : 16u << 20;
    int trials = argc > 3 ? atoi(argv[3]) : 5;
    double trial_s = argc > 4 ? atof(argv[4]) : 0.05;
    const char *stat = argc > 5 ? argv[5] : "median";
    int best = 0 == strcmp(stat, "best");
    char *buf;
    double *times;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || min < 1 || max < min || trials < 1 || trial_s <= 0
        || (!best && 0 != strcmp(stat, "median"))) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 dr2_pingpong [MIN [MAX [TRIALS [SECONDS [median|best]]]]]\n");
        }
        MPI_Finalize();
        return 1;
    }
    buf = malloc(max);
    times = calloc((size_t) trials, sizeof(double));
    memset(buf, 0x5a, max);
    if (0 == rank) {
        printf("# dr2_pingpong: %d trials of about %g s per size, %s trial\n", trials, trial_s,
               best ? "fastest" : "median");
        printf("# %10s %14s %12s\n", "bytes", "usec_one_way", "MB/s");
    }
    for (size_t bytes = min; bytes <= max; bytes *= 2) {
        long reps = 2;
        double t;

        /* warm up (connections, registration caches), then calibrate on rank 0 */
        (void) pingpong(rank, buf, bytes, 2);
        for (;;) {
            t = pingpong(rank, buf, bytes, reps);
            MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (t >= trial_s / 4 || reps >= (1L << 30)) {
                break;
            }
            reps *= 4;
        }
        reps = (long) (reps * (trial_s / (t > 0 ? t : 1e-9)));
        if (reps < 2) {
            reps = 2;
        }
        for (int k = 0; k < trials; k++) {
            times[k] = pingpong(rank, buf, bytes, reps);
        }
        if (0 == rank) {
            double one_way;
            qsort(times, (size_t) trials, sizeof(double), cmp_double);
            one_way = times[best ? 0 : trials / 2] / (2.0 * (double) reps);
            printf("%12zu %14.3f %12.2f\n", bytes, one_way * 1e6, (double) bytes / one_way / 1e6);
            fflush(stdout);
        }
        if (bytes > max / 2) {
            break; /* no overflow past max */
        }
    }
    free(buf);
    free(times);
    MPI_Finalize();
    return 0;
}
