/*
 * ompi-resilience: the median of a benchmark's trials (sorts them in place).
 */
#ifndef BENCH_MEDIAN_H
#define BENCH_MEDIAN_H

#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
