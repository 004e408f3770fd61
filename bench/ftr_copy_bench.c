/*
 * ompi-resilience: where streaming a kept result (ftrabit_copy_stream, non-temporal
 * stores) beats memcpy, one process, no MPI.
 *
 * Usage: ftr_copy_bench [KEPT [MAX_BYTES [TRIALS]]]
 *   KEPT       results kept between two checkpoints: the copies go to KEPT buffers in
 *              turn, as an interval's kept results do (default 10)
 *   MAX_BYTES  largest size (default 16 MiB); sizes are 1 KiB, 2 KiB, 4 KiB, ...
 *   TRIALS     per size and way, alternating; the medians are reported (default 15)
 * Per call the source (one buffer, as the user's buffer holding the result) is rewritten,
 * as the collective that made the result did, then copied into the next kept buffer.
 * Prints: BYTES MEMCPY_NS STREAM_NS STREAM/MEMCPY (the median of the paired ratios).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_median.h"
#include "ftrabit_copy.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Seconds per call of `calls` calls: rewrite src, copy it into the next kept buffer. */
static double run(int stream, unsigned char *src, unsigned char **kept, int nkept, size_t len,
                  long calls)
{
    double t0 = now();
    for (long i = 0; i < calls; i++) {
        memset(src, (int) (i & 0xff), len);
        if (stream) {
            ftrabit_copy_stream(kept[i % nkept], src, len);
        } else {
            memcpy(kept[i % nkept], src, len);
        }
    }
    return (now() - t0) / (double) calls;
}

int main(int argc, char **argv)
{
    int nkept = argc > 1 ? atoi(argv[1]) : 10;
    size_t max = argc > 2 ? strtoul(argv[2], NULL, 0) : (size_t) 16 << 20;
    int trials = argc > 3 ? atoi(argv[3]) : 15;
    if (nkept < 1 || max < 1024 || trials < 1 || trials > 1001) {
        fprintf(stderr, "usage: ftr_copy_bench [KEPT [MAX_BYTES [TRIALS]]]\n");
        return 2;
    }
    unsigned char *src = aligned_alloc(64, max), **kept = calloc((size_t) nkept, sizeof(*kept));
    double *t_copy = calloc((size_t) trials, sizeof(double));
    double *t_stream = calloc((size_t) trials, sizeof(double));
    double *ratio = calloc((size_t) trials, sizeof(double));
    if (!src || !kept || !t_copy || !t_stream || !ratio) {
        return 1;
    }
    for (int k = 0; k < nkept; k++) {
        kept[k] = aligned_alloc(64, max); /* as pool buffers: line-aligned (malloc: 16) */
        if (!kept[k]) {
            return 1;
        }
        memset(kept[k], 0, max); /* faulted in before timing */
    }
    printf("# ftr_copy_bench: %d kept buffers in turn, %s, median of %d paired trials\n",
           nkept, ftrabit_copy_can_stream() ? "non-temporal stores" : "no streaming on this CPU",
           trials);
    printf("# bytes memcpy_ns stream_ns stream_over_memcpy\n");
    for (size_t len = 1024; len <= max; len *= 2) {
        /* about 20 ms per trial, and every kept buffer written a few times */
        long calls = (long) (20e-3 / (1e-9 * (double) len / 4.0 + 20e-9));
        calls = calls < 4L * nkept ? 4L * nkept : calls;
        run(0, src, kept, nkept, len, nkept);
        run(1, src, kept, nkept, len, nkept);
        for (int t = 0; t < trials; t++) {
            int first = t % 2;
            double a = run(first, src, kept, nkept, len, calls);
            double b = run(!first, src, kept, nkept, len, calls);
            t_stream[t] = first ? a : b;
            t_copy[t] = first ? b : a;
            ratio[t] = t_stream[t] / t_copy[t];
        }
        printf("%zu %.1f %.1f %.3f\n", len, 1e9 * bench_median(t_copy, trials),
               1e9 * bench_median(t_stream, trials), bench_median(ratio, trials));
        fflush(stdout);
    }
    return 0;
}
