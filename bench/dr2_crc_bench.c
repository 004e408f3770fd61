/*
 * pml/dr2 CRC32C throughput: memcpy against every CRC32C implementation, checksum only
 * and fused with the copy, at fragment-like buffer sizes. No MPI.
 *
 *   bench/dr2_crc_bench [seconds-per-cell]      (default 0.2)
 *
 * Prints one row per buffer size, in GB/s (10^9 bytes per second) of data processed. The
 * buffers stay in cache (the checksum runs on data the PML has just touched): this is the
 * cost the CRC adds to a copy, not a memory bandwidth test. Then the cost per call, in ns,
 * at header sizes (a 48-byte dr2 header, its 8-byte eager payload): what a small message
 * pays. Take ratios from one run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/mca/pml/dr2/pml_dr2_crc.h"

typedef enum { OP_MEMCPY, OP_CRC, OP_COPY } bench_op_t;

typedef struct {
    const char *label;
    bench_op_t op;
    pml_dr2_crc32c_impl_t impl;
} bench_column_t;

static const bench_column_t columns[] = {
    {"memcpy", OP_MEMCPY, PML_DR2_CRC32C_AUTO},
    {"portable", OP_CRC, PML_DR2_CRC32C_PORTABLE},
    {"port+copy", OP_COPY, PML_DR2_CRC32C_PORTABLE},
    {"hw-1way", OP_CRC, PML_DR2_CRC32C_SSE42_1WAY},
    {"hw1+copy", OP_COPY, PML_DR2_CRC32C_SSE42_1WAY},
    {"hw-3way", OP_CRC, PML_DR2_CRC32C_SSE42},
    {"hw3+copy", OP_COPY, PML_DR2_CRC32C_SSE42},
    {"vpclmul", OP_CRC, PML_DR2_CRC32C_VPCLMUL},
    {"vpcl+copy", OP_COPY, PML_DR2_CRC32C_VPCLMUL},
};
#define NUM_COLUMNS (sizeof(columns) / sizeof(columns[0]))

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Keeps the compiler from dropping work whose result is unused. */
static volatile uint32_t sink;

static void run_once(bench_op_t op, void *dst, const void *src, size_t len)
{
    switch (op) {
    case OP_MEMCPY:
        memcpy(dst, src, len);
        sink ^= ((const unsigned char *) dst)[len - 1];
        break;
    case OP_CRC:
        sink ^= pml_dr2_crc32c(0, src, len);
        break;
    case OP_COPY:
        sink ^= pml_dr2_crc32c_copy(0, dst, src, len);
        break;
    }
}

/* Best of timed batches of about a millisecond each, over `seconds`: seconds per call. */
static double measure(bench_op_t op, void *dst, const void *src, size_t len, double seconds)
{
    double best = 1e30;
    size_t reps = 1;

    /* Grow the batch until it takes about a millisecond. */
    for (;;) {
        double t0 = now();

        for (size_t i = 0; i < reps; i++) {
            run_once(op, dst, src, len);
        }
        if (now() - t0 > 1e-3) {
            break;
        }
        reps *= 2;
    }
    for (double start = now(); now() - start < seconds;) {
        double t0 = now(), t;

        for (size_t i = 0; i < reps; i++) {
            run_once(op, dst, src, len);
        }
        t = (now() - t0) / reps;
        if (t < best) {
            best = t;
        }
    }
    return best;
}

static void print_header(const char *unit)
{
    printf("%8s", unit);
    for (size_t c = 0; c < NUM_COLUMNS; c++) {
        printf(" %10s", columns[c].label);
    }
    printf("\n");
}

/* One row: GB/s, or ns per call. */
static void print_row(size_t len, int per_call, void *dst, const void *src, double seconds)
{
    printf("%8zu", len);
    for (size_t c = 0; c < NUM_COLUMNS; c++) {
        double t;

        if (columns[c].op != OP_MEMCPY && pml_dr2_crc32c_select(columns[c].impl) != 0) {
            printf(" %10s", "n/a");
            continue;
        }
        t = measure(columns[c].op, dst, src, len, seconds);
        printf(" %10.1f", per_call ? t * 1e9 : len / t / 1e9);
        fflush(stdout);
    }
    printf("\n");
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
}

int main(int argc, char **argv)
{
    const size_t sizes[] = {4096, 65536, 1 << 20};
    const size_t small_sizes[] = {8, 48, 56, 256};
    const size_t max = 1 << 20;
    double seconds = argc > 1 ? atof(argv[1]) : 0.2;
    unsigned char *src = aligned_alloc(64, max), *dst = aligned_alloc(64, max);

    if (src == NULL || dst == NULL || seconds <= 0) {
        fprintf(stderr, "usage: %s [seconds-per-cell > 0]\n", argv[0]);
        return 1;
    }
    for (size_t i = 0; i < max; i++) {
        src[i] = (unsigned char) (i * 131 + 7);
    }
    memset(dst, 0, max);
    printf("CRC32C throughput, GB/s (default implementation: %s)\n",
           pml_dr2_crc32c_impl_name(pml_dr2_crc32c_selected()));
    print_header("bytes");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        print_row(sizes[s], 0, dst, src, seconds);
    }
    printf("\nCost per call at header sizes, ns\n");
    print_header("bytes");
    for (size_t s = 0; s < sizeof(small_sizes) / sizeof(small_sizes[0]); s++) {
        print_row(small_sizes[s], 1, dst, src, seconds);
    }
    free(src);
    free(dst);
    return 0;
}
