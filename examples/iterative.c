/*
 * ompi-resilience example: distributed k-means, the kind of iterative job ftrabit is for.
 *
 * Every rank holds its own shard of points. Rank 0 picks the initial centroids and
 * broadcasts them (MPI_Bcast); each iteration every rank assigns its points to the
 * nearest centroid and one MPI_Allreduce sums the per-cluster coordinates and counts
 * over all ranks, from which every rank computes the same new centroids.
 *
 * Because coll/ftrabit reduces in a fixed order, every rank holds bit-identical
 * centroids, and the same run gives the same bits every time: the printed fingerprint
 * is a stable answer to compare runs with.
 *
 * Usage: mpirun -np 4 ./iterative [points_per_rank] [clusters] [dims] [iterations]
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_random(uint64_t *state)
{
    /* xorshift64*: a small, reproducible generator */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1DULL;
}

static double uniform(uint64_t *state)
{
    return (double) (next_random(state) >> 11) / (double) (1ULL << 53);
}

/* Points scattered around `clusters` hidden centres; each rank draws its own shard. */
static void make_points(double *pts, int n, int dims, int clusters, int rank)
{
    uint64_t centre_state = 12345, state = 0x9E3779B97F4A7C15ULL ^ (uint64_t) (rank + 1);
    double *centres = malloc(sizeof(double) * clusters * dims);
    for (int c = 0; c < clusters * dims; c++) {
        centres[c] = 100.0 * uniform(&centre_state);
    }
    for (int i = 0; i < n; i++) {
        int c = (int) (next_random(&state) % (uint64_t) clusters);
        for (int d = 0; d < dims; d++) {
            pts[i * dims + d] = centres[c * dims + d] + 8.0 * (uniform(&state) - 0.5);
        }
    }
    free(centres);
}

static uint64_t fingerprint(const double *v, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *p = (const unsigned char *) v;
    for (size_t i = 0; i < n * sizeof(double); i++) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* How many collectives coll/ftrabit served in this process (an MPI_T counter). */
static long ftrabit_served(const char *counter)
{
    int index, count;
    unsigned long value = 0;
    static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    static MPI_T_pvar_handle handles[2];
    static int found[2] = {-1, -1};
    int which = strcmp(counter, "coll_ftrabit_bcast_calls") == 0;

    if (found[which] < 0) {
        if (MPI_T_PVAR_SESSION_NULL == session) {
            MPI_T_pvar_session_create(&session);
        }
        found[which] = MPI_SUCCESS == MPI_T_pvar_get_index(counter, MPI_T_PVAR_CLASS_COUNTER, &index)
                       && MPI_SUCCESS == MPI_T_pvar_handle_alloc(session, index, NULL,
                                                                 &handles[which], &count);
    }
    if (!found[which]) {
        return -1;
    }
    MPI_T_pvar_read(session, handles[which], &value);
    return (long) value;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int clusters = argc > 2 ? atoi(argv[2]) : 8;
    int dims = argc > 3 ? atoi(argv[3]) : 4;
    int iterations = argc > 4 ? atoi(argv[4]) : 20;
    int rank, size, provided;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (n < 1 || clusters < 1 || dims < 1 || iterations < 1) {
        if (0 == rank) {
            fprintf(stderr, "usage: %s [points_per_rank>0] [clusters>0] [dims>0] [iterations>0]\n",
                    argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    ftrabit_served("coll_ftrabit_allreduce_calls"); /* start counting */
    ftrabit_served("coll_ftrabit_bcast_calls");

    double *pts = malloc(sizeof(double) * n * dims);
    double *centroids = malloc(sizeof(double) * clusters * dims);
    /* per cluster: dims coordinate sums, then the count, then the squared distances */
    int stride = dims + 2;
    double *sums = malloc(sizeof(double) * clusters * stride);
    make_points(pts, n, dims, clusters, rank);

    if (0 == rank) {
        memcpy(centroids, pts, sizeof(double) * clusters * dims); /* first points of rank 0 */
    }
    MPI_Bcast(centroids, clusters * dims, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    double start = MPI_Wtime();
    for (int it = 0; it < iterations; it++) {
        memset(sums, 0, sizeof(double) * clusters * stride);
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
            for (int k = 0; k < dims; k++) {
                sums[best * stride + k] += pts[i * dims + k];
            }
            sums[best * stride + dims] += 1.0;
            sums[best * stride + dims + 1] += best_d;
        }
        MPI_Allreduce(MPI_IN_PLACE, sums, clusters * stride, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

        double inertia = 0;
        for (int c = 0; c < clusters; c++) {
            double count = sums[c * stride + dims];
            inertia += sums[c * stride + dims + 1];
            if (count > 0) {
                for (int k = 0; k < dims; k++) {
                    centroids[c * dims + k] = sums[c * stride + k] / count;
                }
            }
        }
        if (0 == rank && (it < 3 || it == iterations - 1 || it % 5 == 4)) {
            printf("iteration %3d  mean squared distance %.6f\n", it + 1,
                   inertia / ((double) n * size));
        }
    }
    double elapsed = MPI_Wtime() - start;

    /* All ranks must hold the same bits: compare fingerprints (point-to-point, so the
     * check does not rely on the collectives it checks). */
    uint64_t mine = fingerprint(centroids, (size_t) clusters * dims), other;
    int agree = 1;
    if (0 == rank) {
        for (int r = 1; r < size; r++) {
            MPI_Recv(&other, 1, MPI_UINT64_T, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            agree &= other == mine;
        }
    } else {
        MPI_Send(&mine, 1, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD);
    }
    long allreduces = ftrabit_served("coll_ftrabit_allreduce_calls");
    long bcasts = ftrabit_served("coll_ftrabit_bcast_calls");
    if (0 == rank) {
        printf("ranks %d, points %d, clusters %d, dims %d, iterations %d: %.3f s\n", size,
               n * size, clusters, dims, iterations, elapsed);
        printf("centroid fingerprint %016llx, %s on every rank\n", (unsigned long long) mine,
               agree ? "identical" : "DIFFERENT");
        if (allreduces < 0) {
            printf("coll/ftrabit is not loaded: collectives were served by another component\n");
        } else {
            printf("coll/ftrabit served %ld MPI_Allreduce and %ld MPI_Bcast calls on rank 0\n",
                   allreduces, bcasts);
        }
    }
    free(pts);
    free(centroids);
    free(sums);
    MPI_T_finalize();
    MPI_Finalize();
    return agree ? 0 : 1;
}
