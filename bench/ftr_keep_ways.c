/*
 * ompi-resilience: ways of making an allreduce's result and keeping a copy of it, timed
 * side by side against MPI_Allreduce in place (the question: which way brings the kept
 * copy of a large result to the floor, MPI_Allreduce plus one memcpy).
 *
 * Usage: ftr_keep_ways [KEPT [MIN_BYTES [MAX_BYTES [TRIALS [BATCH_SECONDS]]]]]
 *   KEPT  kept buffers used in turn, as an interval of KEPT calls between checkpoints
 *         (default 10); sizes from MIN_BYTES (256 KiB) to MAX_BYTES (16 MiB), doubling;
 *         TRIALS (default 11, at most 101) of about BATCH_SECONDS (0.02) per way, but never
 *         fewer calls than KEPT (short batches: more of them run undisturbed on a busy
 *         machine, which the best trials show)
 * Ways (MPI_SUM of MPI_DOUBLE, coll/ftrabit or whichever coll Open MPI selects):
 *   mpi         MPI_Allreduce(MPI_IN_PLACE, buf)
 *   floor       mpi, then memcpy(buf -> one other buffer)
 *   ftr         MPI_Allreduce(buf -> kept[i]), memcpy(kept[i] -> buf)   (libftrabit's way
 *               for a contiguous type outside 2-8 MiB: the input survives a failed attempt)
 *   scratch     MPI_Allreduce(buf -> scratch), memcpy(scratch -> buf), streamed copy
 *               (ftrabit_copy_stream) scratch -> kept[i]
 *   scratch_cp  MPI_Allreduce(buf -> scratch), memcpy(scratch -> buf), memcpy(scratch ->
 *               kept[i]) (ordinary stores for the kept copy)
 *   scratch_2x  MPI_Allreduce(buf -> scratch), then one pass over scratch writing buf and
 *               streaming kept[i] (ftrabit_copy_twice: libftrabit's way from 2 to 8 MiB)
 *   inplace_nt  mpi, then streamed copy buf -> kept[i] (loses the input a retry needs:
 *               shown as the cheapest keeping there is)
 *   inplace_cp  mpi, then memcpy buf -> kept[i] (the same, ordinary stores)
 * Per size: each way's median time per call over TRIALS, the median of its paired ratios
 * to mpi and the median of its paired ratios to floor (trials rotate the order of the
 * ways), its best trial over floor's best (other jobs only ever add time, so on a
 * loaded machine the best trials are the least disturbed), and the median of its paired
 * ratios to ftr.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_median.h"
#include "ftrabit_copy.h"

enum { MPI_WAY, FLOOR, FTR, SCRATCH, SCRATCH_CP, SCRATCH_2X, INPLACE_NT, INPLACE_CP, NWAYS };
static const char *names[NWAYS] = {"mpi",     "floor",      "ftr",        "scratch",
                                  "scratch_cp", "scratch_2x", "inplace_nt", "inplace_cp"};

static double *buf, *other, *scratch, **kept;
static int nkept;

static void call(int way, int n, long i)
{
    size_t len = sizeof(double) * (size_t) n;
    double *k = kept[i % nkept];
    switch (way) {
    case FTR:
        MPI_Allreduce(buf, k, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        memcpy(buf, k, len);
        break;
    case SCRATCH:
        MPI_Allreduce(buf, scratch, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        memcpy(buf, scratch, len);
        ftrabit_copy_stream(k, scratch, len);
        break;
    case SCRATCH_CP:
        MPI_Allreduce(buf, scratch, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        memcpy(buf, scratch, len);
        memcpy(k, scratch, len);
        break;
    case SCRATCH_2X:
        MPI_Allreduce(buf, scratch, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ftrabit_copy_twice(buf, k, scratch, len);
        break;
    default:
        MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (FLOOR == way) {
            memcpy(other, buf, len);
        } else if (INPLACE_NT == way) {
            ftrabit_copy_stream(k, buf, len);
        } else if (INPLACE_CP == way) {
            memcpy(k, buf, len);
        }
    }
}

static double best(const double *t, int n)
{
    double b = t[0];
    for (int i = 1; i < n; i++) {
        b = t[i] < b ? t[i] : b;
    }
    return b;
}

static double batch(int way, int n, long iters)
{
    double t, slowest;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        call(way, n, i);
    }
    t = (MPI_Wtime() - t) / (double) iters;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nkept = argc > 1 ? atoi(argv[1]) : 10;
    size_t min = argc > 2 ? strtoul(argv[2], NULL, 0) : (size_t) 256 << 10;
    size_t max = argc > 3 ? strtoul(argv[3], NULL, 0) : (size_t) 16 << 20;
    int trials = argc > 4 ? atoi(argv[4]) : 11;
    double batch_sec = argc > 5 ? atof(argv[5]) : 0.02;
    if (nkept < 1 || min < 8 || max < min || trials < 1 || trials > 101 || !(batch_sec > 0)) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf = aligned_alloc(64, max);
    other = aligned_alloc(64, max);
    scratch = aligned_alloc(64, max);
    kept = calloc((size_t) nkept, sizeof(*kept));
    for (int k = 0; k < nkept; k++) {
        kept[k] = aligned_alloc(64, max);
        memset(kept[k], 0, max);
    }
    memset(buf, 0, max);
    memset(other, 0, max);
    memset(scratch, 0, max);
    if (0 == rank) {
        printf("# ftr_keep_ways: %d ranks, %d kept buffers in turn, %d trials; per way: median "
               "us per call, median paired ratios to mpi and to floor, best trial over floor's "
               "best, median paired ratio to ftr\n# bytes", size, nkept, trials);
        for (int w = 0; w < NWAYS; w++) {
            printf(" %s_us %s_ratio %s_floor %s_best %s_ftr", names[w], names[w], names[w],
                   names[w], names[w]);
        }
        printf("\n");
    }
    for (size_t bytes = min; bytes <= max; bytes *= 2) {
        int n = (int) (bytes / sizeof(double));
        double t[NWAYS][101], r[NWAYS][101], rf[NWAYS][101], rk[NWAYS][101];
        long iters = 1;
        while (batch(MPI_WAY, n, iters) * (double) iters < batch_sec) {
            iters *= 2;
        }
        iters = iters < nkept ? nkept : iters;
        for (int w = 0; w < NWAYS; w++) {
            batch(w, n, nkept); /* every kept buffer touched once */
        }
        for (int tr = 0; tr < trials; tr++) {
            for (int k = 0; k < NWAYS; k++) {
                int w = (k + tr) % NWAYS;
                t[w][tr] = batch(w, n, iters);
            }
            for (int w = 0; w < NWAYS; w++) {
                r[w][tr] = t[w][tr] / t[MPI_WAY][tr];
                rf[w][tr] = t[w][tr] / t[FLOOR][tr];
                rk[w][tr] = t[w][tr] / t[FTR][tr];
            }
        }
        if (0 == rank) {
            printf("%zu", bytes);
            for (int w = 0; w < NWAYS; w++) {
                printf(" %.1f %.3f %.3f %.3f %.3f", 1e6 * bench_median(t[w], trials),
                       bench_median(r[w], trials), bench_median(rf[w], trials),
                       best(t[w], trials) / best(t[FLOOR], trials), bench_median(rk[w], trials));
            }
            printf("\n");
            fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}
