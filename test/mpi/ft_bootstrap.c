/*
 * ompi-resilience: the bootstrap cache under a real failure.
 *
 * Every rank runs bootstrap collectives from four call sites, one of them twice (a loop):
 * site A (allreduce, twice), site B (broadcast), site C (allreduce of a larger vector),
 * site D (broadcast of a derived type). Then rank 1 kills itself (SIGKILL) in the first
 * FTR_Allreduce after them. Its replacement runs the bootstrap sites again, in reverse
 * order (D, C, B, A, A), and with contributions of its own that differ from the original
 * process's: it must get the
 * results the original run computed, without the survivors re-running anything.
 * Everybody checks those results against values computed independently of ftrabit.
 *
 * argv[1] == "mismatch": the replacement first calls site B with a different count and
 * must get an error (with a message naming the call site), then calls it right: the
 * refused call must not have used up that run of the site.
 *
 * argv[1] == "type-mismatch": the same with another datatype of the same size and count
 * (MPI_FLOAT for MPI_INT at site B; at site D, a struct {float, int} for the original's
 * struct {int, float}): MPI_ERR_TYPE, never the original's bytes read as another type.
 * Site D (a broadcast of structs, in every mode) is replayed with a derived type the
 * replacement builds again: another handle, the same type signature, served.
 *
 * argv[1] == "after-checkpoint": after the bootstrap sites, FTR_Load_checkpoint and a loop
 * whose every iteration runs a bootstrap call (site E) and an FTR_Allreduce, with a
 * checkpoint after every other iteration; rank 1 dies at iteration 3, so its replacement
 * restarts at iteration 2. Site E must be refused (MPI_ERR_OTHER) in every process, the
 * replacement included, and the program makes the same sum with FTR_Allreduce instead.
 * It used to be accepted: the replacement, whose site E counts its runs from 0 again, was
 * served iteration 0's sum at iteration 2, and numbered its collectives behind the
 * survivors'.
 *
 * Output: "mpitest: rank R done" per rank at the end, and from rank 0
 * "mpitest ft_bootstrap: np N: PASS" (or FAIL). Run with --with-ft ulfm.
 */
#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

#define VLEN 300

static int failures;

static void check(int cond, int rank, const char *what)
{
    if (!cond) {
        failures++;
        printf("mpitest ft_bootstrap: rank %d: FAIL %s\n", rank, what);
        fflush(stdout);
    }
}

/* What rank r contributes at site A's k-th run; `fresh` adds what a new process would. */
static long site_a_value(int r, int k, int fresh)
{
    return 1000L * (k + 1) + r + (fresh ? 7777 : 0);
}

static void site_a(MPI_Comm *world, int rank, int size, int fresh)
{
    for (int k = 0; k < 2; k++) {
        long v = site_a_value(rank, k, fresh), expect = 0;
        int err = FTR_Allreduce_bootstrap(&v, 1, MPI_LONG, MPI_SUM, world);
        for (int r = 0; r < size; r++) {
            expect += site_a_value(r, k, 0);
        }
        check(MPI_SUCCESS == err && v == expect, rank, "site A result");
    }
}

/* mismatch: 1 another count, 2 another type of the same size (float for int). */
static int site_b(MPI_Comm *world, int rank, int fresh, int mismatch)
{
    int v[2] = {fresh ? -1 : 4242, fresh ? -1 : 17};
    int count = 1 == mismatch ? 2 : 1;
    int err = FTR_Bcast_bootstrap(v, count, 2 == mismatch ? MPI_FLOAT : MPI_INT, 0, world);
    if (mismatch) {
        return err;
    }
    check(MPI_SUCCESS == err && 4242 == v[0], rank, "site B result");
    return err;
}

/* Site D's element: a struct of an int and a float (8 bytes), or the same fields swapped. */
typedef struct {
    int i;
    float f;
} pair_t;

static MPI_Datatype pair_type(int swapped)
{
    int lens[2] = {1, 1};
    MPI_Aint displs[2] = {offsetof(pair_t, i), offsetof(pair_t, f)};
    MPI_Datatype types[2] = {MPI_INT, MPI_FLOAT}, t;
    if (swapped) { /* {float, int}: same size and extent, another signature */
        types[0] = MPI_FLOAT;
        types[1] = MPI_INT;
    }
    MPI_Type_create_struct(2, lens, displs, types, &t);
    MPI_Type_commit(&t);
    return t;
}

#define DLEN 3

static int site_d(MPI_Comm *world, int rank, int fresh, int swapped)
{
    pair_t v[DLEN];
    for (int k = 0; k < DLEN; k++) {
        v[k].i = fresh ? -1 : 100 + k;
        v[k].f = fresh ? -1.0f : 0.5f * (float) k;
    }
    MPI_Datatype t = pair_type(swapped);
    int err = FTR_Bcast_bootstrap(v, DLEN, t, 0, world);
    MPI_Type_free(&t);
    if (swapped) {
        return err;
    }
    int ok = MPI_SUCCESS == err;
    for (int k = 0; k < DLEN; k++) {
        ok &= v[k].i == 100 + k && v[k].f == 0.5f * (float) k;
    }
    check(ok, rank, "site D result");
    return err;
}

static void site_c(MPI_Comm *world, int rank, int size, int fresh)
{
    double v[VLEN];
    int ok = 1;
    for (int i = 0; i < VLEN; i++) {
        v[i] = 0.25 * (rank + 1) * (i + 1) + (fresh ? 0.5 : 0.0);
    }
    int err = FTR_Allreduce_bootstrap(v, VLEN, MPI_DOUBLE, MPI_SUM, world);
    for (int i = 0; i < VLEN; i++) {
        double expect = 0;
        for (int r = 0; r < size; r++) {
            expect += 0.25 * (r + 1) * (i + 1);
        }
        /* Sums of quarters of small integers are exact in any order. */
        ok &= v[i] == expect;
    }
    check(MPI_SUCCESS == err && ok, rank, "site C result");
}

/* Site E: a bootstrap call in the main loop, refused; then the same sum, done right. */
static void site_e(MPI_Comm *world, int rank, int size, int it)
{
    long e = 10L * it + rank, expect = 0;
    for (int r = 0; r < size; r++) {
        expect += 10L * it + r;
    }
    int err = FTR_Allreduce_bootstrap(&e, 1, MPI_LONG, MPI_SUM, world);
    check(MPI_ERR_OTHER == err, rank, "a bootstrap call after FTR_Load_checkpoint must be refused");
    if (MPI_SUCCESS != err) {
        e = 10L * it + rank;
        err = FTR_Allreduce(&e, 1, MPI_LONG, MPI_SUM, world);
    }
    check(MPI_SUCCESS == err && e == expect, rank, "site E's sum");
}

static void loop_after_load(MPI_Comm *world, int rank, int size, int fresh)
{
    int next = 0, version = -1;
    int err = FTR_Load_checkpoint(world, &next, sizeof(next), NULL, 0, &version);
    check(MPI_SUCCESS == err && (fresh ? 1 == version && 2 == next : 0 == version), rank,
          "the restart point");
    for (int it = next; it < 6; it++) {
        if (1 == rank && 3 == it && !fresh) {
            raise(SIGKILL);
        }
        site_e(world, rank, size, it);
        long v = rank + 100L * it, expect = 0;
        for (int r = 0; r < size; r++) {
            expect += r + 100L * it;
        }
        err = FTR_Allreduce(&v, 1, MPI_LONG, MPI_SUM, world);
        check(MPI_SUCCESS == err && v == expect, rank, "allreduce in the main loop");
        if (1 == it % 2) {
            next = it + 1;
            check(MPI_SUCCESS == FTR_Checkpoint(world, &next, sizeof(next), NULL, 0), rank,
                  "FTR_Checkpoint");
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Comm world, parent;
    int rank, size;
    int mismatch = argc > 1 && 0 == strcmp(argv[1], "mismatch");
    int type_mismatch = argc > 1 && 0 == strcmp(argv[1], "type-mismatch");
    int after_checkpoint = argc > 1 && 0 == strcmp(argv[1], "after-checkpoint");

    FTR_Init(&argc, &argv, &world);
    MPI_Comm_get_parent(&parent);
    int fresh = MPI_COMM_NULL != parent;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);

    if (!fresh) {
        site_a(&world, rank, size, 0);
        site_b(&world, rank, 0, 0);
        site_c(&world, rank, size, 0);
        site_d(&world, rank, 0, 0);
    } else {
        /* Derived types made here first: the replacement's handles differ from the
         * original's, the type signatures do not. */
        MPI_Datatype unrelated[3];
        for (int k = 0; k < 3; k++) {
            MPI_Type_contiguous(k + 2, MPI_SHORT, &unrelated[k]);
        }
        if (type_mismatch) {
            int err = site_d(&world, rank, 1, 1);
            check(MPI_ERR_TYPE == err, rank,
                  "a bootstrap call with struct {float, int} for {int, float} must fail");
        }
        site_d(&world, rank, 1, 0);
        site_c(&world, rank, size, 1);
        if (mismatch) {
            int err = site_b(&world, rank, 1, 1);
            check(MPI_ERR_ARG == err, rank, "a bootstrap call with another count must fail");
        }
        if (type_mismatch) {
            int err = site_b(&world, rank, 1, 2);
            check(MPI_ERR_TYPE == err, rank, "a bootstrap call with MPI_FLOAT for MPI_INT must fail");
        }
        site_b(&world, rank, 1, 0);
        site_a(&world, rank, size, 1);
        for (int k = 0; k < 3; k++) {
            MPI_Type_free(&unrelated[k]);
        }
    }

    if (after_checkpoint) {
        loop_after_load(&world, rank, size, fresh);
    }
    /* Rank 1 dies in the first collective after the bootstrap phase. */
    for (int it = 0; it < 6 && !after_checkpoint; it++) {
        long v = rank + it, expect = 0;
        if (1 == rank && 0 == it && !fresh) {
            raise(SIGKILL);
        }
        int err = FTR_Allreduce(&v, 1, MPI_LONG, MPI_SUM, &world);
        for (int r = 0; r < size; r++) {
            expect += r + it;
        }
        check(MPI_SUCCESS == err && v == expect, rank, "allreduce after the bootstrap phase");
    }

    /* Gather the verdict over the (rebuilt) communicator. */
    int total = failures;
    FTR_Allreduce(&total, 1, MPI_INT, MPI_SUM, &world);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_free(&world);
    FTR_Finalize();
    printf("mpitest: rank %d done\n", rank);
    if (0 == rank) {
        printf("mpitest ft_bootstrap: np %d: %s\n", size, total ? "FAIL" : "PASS");
    }
    return total ? 1 : 0;
}
