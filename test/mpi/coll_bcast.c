/*
 * MPI_Bcast correctness under coll ftrabit: every root, counts from 0 to 16 MiB,
 * predefined types of several sizes, and a derived non-contiguous datatype whose gaps
 * must stay untouched.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

static uint8_t pattern(int root, size_t byte)
{
    return (uint8_t) mt_hash64(((uint64_t) root << 50) ^ byte);
}

static void check_bytes_of(MPI_Datatype type, const char *name, size_t elem_size, size_t count,
                           int root)
{
    size_t n = count * elem_size;
    uint8_t *buf = malloc(n + 1);
    for (size_t b = 0; b < n; b++) buf[b] = mt_rank == root ? pattern(root, b) : 0x5A;
    int err = MPI_Bcast(buf, (int) count, type, root, MPI_COMM_WORLD);
    MT_CHECK(err == MPI_SUCCESS, "%s count %zu root %d: error %d", name, count, root, err);
    size_t bad = 0;
    for (size_t b = 0; b < n; b++) bad += buf[b] != pattern(root, b);
    MT_CHECK(bad == 0, "%s count %zu root %d: %zu wrong bytes", name, count, root, bad);
    free(buf);
}

/* 4 blocks of 3 doubles, stride 5: 12 data doubles and 8 gap doubles per element. */
static void check_vector(size_t count, int root)
{
    MPI_Datatype vec;
    MPI_Type_vector(4, 3, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(vec, &lb, &extent);
    size_t per = (size_t) extent / sizeof(double); /* 18: the last gap is not in the extent */
    size_t n = count * per + 2;
    double *buf = malloc(n * sizeof(double));
    for (size_t k = 0; k < n; k++) {
        bool data = k < count * per && (k % per) % 5 < 3;
        buf[k] = data && mt_rank == root ? (double) (k * 3 + root) : -1.0;
    }
    int err = MPI_Bcast(buf, (int) count, vec, root, MPI_COMM_WORLD);
    MT_CHECK(err == MPI_SUCCESS, "vector count %zu root %d: error %d", count, root, err);
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        bool data = k < count * per && (k % per) % 5 < 3;
        double expect = data ? (double) (k * 3 + root) : -1.0;
        bad += buf[k] != expect;
    }
    MT_CHECK(bad == 0, "vector(4,3,5) of MPI_DOUBLE count %zu root %d: %zu wrong (data or gaps)",
             count, root, bad);
    MPI_Type_free(&vec);
    free(buf);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_bcast");
    long before = mt_ftrabit_counter("bcast_calls");
    long calls = 0;

    const size_t counts[] = {0, 1, 7, 1000, 20000, 300000};
    for (int root = 0; root < mt_size; root++) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            check_bytes_of(MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), counts[ci], root);
            check_vector(counts[ci] / 10, root);
            calls += (counts[ci] > 0) + (counts[ci] / 10 > 0); /* count 0 never reaches coll */
        }
        check_bytes_of(MPI_BYTE, "MPI_BYTE", 1, 12345, root);
        check_bytes_of(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 16, 777, root);
        check_bytes_of(MPI_SHORT, "MPI_SHORT", sizeof(short), 99999, root);
        calls += 3;
    }
    check_bytes_of(MPI_BYTE, "MPI_BYTE", 1, 16u << 20, mt_size - 1);
    check_bytes_of(MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), (16u << 20) / 8, 0);
    calls += 2;

    long after = mt_ftrabit_counter("bcast_calls");
    if (mt_size > 1) {
        MT_CHECK(before >= 0, "coll ftrabit is not loaded");
        MT_CHECK(after - before == calls, "coll ftrabit served %ld of %ld MPI_Bcast calls",
                 after - before, calls);
    }
    return mt_finish();
}
