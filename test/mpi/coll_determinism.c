/*
 * Reduction order is deterministic: with inputs whose floating-point sum depends on the
 * order of evaluation, every rank gets the same bits, and calling again gives the same
 * bits again. The result is also compared with this file's own reduction in ftrabit's
 * documented order when the communicator is a power of two with recursive doubling
 * (pairwise by rank: ((x0+x1)+(x2+x3))...).
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

static double input(int rank, size_t i)
{
    uint64_t h = mt_hash64(((uint64_t) rank << 44) ^ i);
    /* wide range of magnitudes: sums are far from associative */
    return (double) (int64_t) (h >> 11) * 1e-10 * (double) (1 + (h & 0xff));
}

static double pairwise(size_t i, int lo, int n)
{
    if (n == 1) return input(lo, i);
    return pairwise(i, lo, n / 2) + pairwise(i, lo + n / 2, n / 2);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_determinism");
    const size_t counts[] = {1, 3, 1000, 65536, (16u << 20) / sizeof(double)};
    int pow2 = (mt_size & (mt_size - 1)) == 0;
    const char *alg = getenv("OMPI_MCA_coll_ftrabit_allreduce_algorithm");
    int rd = alg && strcmp(alg, "recursive_doubling") == 0;

    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t count = counts[ci];
        double *in = malloc(count * sizeof(double)), *out = malloc(count * sizeof(double));
        for (size_t i = 0; i < count; i++) in[i] = input(mt_rank, i);
        uint64_t first = 0;
        for (int round = 0; round < 3; round++) {
            int err = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            MT_CHECK(err == MPI_SUCCESS, "count %zu: error %d", count, err);
            uint64_t h = mt_fnv1a(out, count * sizeof(double), 0xcbf29ce484222325ULL);
            if (round == 0) first = h;
            MT_CHECK(h == first, "count %zu: round %d gave other bits than round 0", count, round);
            MT_CHECK(mt_all_equal_u64(h), "count %zu round %d: ranks hold different bits", count,
                     round);
        }
        if (pow2 && rd) {
            size_t bad = 0;
            for (size_t i = 0; i < count; i++) bad += out[i] != pairwise(i, 0, mt_size);
            MT_CHECK(bad == 0, "count %zu: %zu results differ from pairwise rank order", count, bad);
        }
        free(in);
        free(out);
    }
    return mt_finish();
}
