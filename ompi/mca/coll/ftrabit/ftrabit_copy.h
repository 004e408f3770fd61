/*
 * ompi-resilience: coll/ftrabit's copies of a large allreduce result (pure logic, no MPI).
 *
 * A kept result is read again only if a process fails, so its copy should neither read
 * the destination's cache lines from memory before overwriting them (what ordinary stores
 * into a buffer out of the caches do) nor push the application's data out of the caches:
 * it is written with non-temporal stores (x86-64's SSE2 movntdq, present on every x86-64
 * CPU); other CPUs use memcpy. The bytes are memcpy's in every case.
 *
 * libftrabit makes a large contiguous allreduce's result in one reused, cache-hot buffer
 * and then copies it once to the user's buffer and streams it to the kept buffer in the
 * same pass (ftrabit_copy_twice; measured in docs/bench/ftr-floor2-2026-11-29.md); the
 * benchmarks bench/ftr_copy_bench and bench/ftr_keep_ways also time the streamed copy
 * alone.
 */
#ifndef FTRABIT_COPY_H
#define FTRABIT_COPY_H

#include <stddef.h>

/* 1 if this build streams (non-temporal stores), 0 if the copies below are memcpy. */
int ftrabit_copy_can_stream(void);

/* memcpy's result, with non-temporal stores where the CPU has them, whatever the size and
 * alignment (dst and src must not overlap). Ordered before the caller's later stores. */
void ftrabit_copy_stream(void *dst, const void *src, size_t len);

/* memcpy(dst, src, len) and memcpy(kept, src, len) in one pass over src: dst with ordinary
 * stores (the caller reads it next), kept streamed as ftrabit_copy_stream does (read only
 * after a failure). None of the three may overlap another. */
void ftrabit_copy_twice(void *dst, void *kept, const void *src, size_t len);

#endif
