/*
 * ompi-resilience benchmarks: a candidate for coll/ftrabit's copy of a kept result (pure
 * logic, no MPI).
 *
 * Every FTR collective copies its result once: into the user's buffer or into the buffer
 * that keeps it for a replay. A kept result is read again only if a process fails, so its
 * copy should neither read the destination's cache lines from memory before overwriting
 * them (what ordinary stores into a buffer out of the caches do) nor push the
 * application's data out of the caches: from ftrabit_copy_stream_min bytes on it is
 * written with non-temporal stores (x86-64's SSE2 movntdq, present on every x86-64 CPU);
 * other CPUs, and smaller copies, use memcpy. The bytes are memcpy's in every case.
 *
 * Not in the library: measured on the 2-core VM, neither streaming the kept copy nor
 * making the result in a reused scratch buffer and streaming it out brought 1-8 MiB to the
 * floor (docs/bench/ftr-floor-2026-11-29.md); bench/ftr_copy_bench and bench/ftr_keep_ways
 * use it to measure that again on a quiet machine.
 */
#ifndef FTR_NT_COPY_H
#define FTR_NT_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* From this many bytes a kept copy streams (bench/ftr_copy_bench.c measures where
 * streaming starts to win; below it the destination is often still in the caches, where
 * ordinary stores are faster). */
#define FTRABIT_COPY_STREAM_MIN ((size_t) 256 * 1024)

/* 1 if this build streams (non-temporal stores), 0 if ftrabit_copy_stream is memcpy. */
int ftrabit_copy_can_stream(void);

/* memcpy's result, with non-temporal stores where the CPU has them, whatever the size and
 * alignment (dst and src must not overlap). Ordered before the caller's later stores. */
void ftrabit_copy_stream(void *dst, const void *src, size_t len);

/* The copy of a result into its kept buffer: streamed from `stream_min` bytes on, memcpy
 * below. */
static inline void ftrabit_copy_kept(void *dst, const void *src, size_t len, size_t stream_min)
{
    if (len >= stream_min) {
        ftrabit_copy_stream(dst, src, len);
    } else {
        memcpy(dst, src, len);
    }
}

#endif
