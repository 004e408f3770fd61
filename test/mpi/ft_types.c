/*
 * ompi-resilience fault test: FTR_* collectives on datatypes whose elements are not packed
 * end to end, replayed to a replacement.
 *
 * Each iteration runs, through FTR_Allreduce / FTR_Bcast:
 *   - MPI_DOUBLE_INT with MPI_MINLOC, count 3 (12 bytes of data in an extent of 16);
 *   - a resized MPI_INT (4 bytes of data, extent 8) with a user-defined sum, count 5;
 *   - a strided vector of doubles (every other one) with a user-defined sum;
 *   - a broadcast of the resized type from a root that moves with the iteration;
 * and folds the data bytes of every result (never the padding) into a running hash that is
 * part of the global checkpoint (every --every iterations). At the end the ranks compare
 * their hashes and rank 0 prints "final types fingerprint H" (or says they differ): a run
 * with failures must print the same H as one without.
 * The first bootstrap allreduce uses the padded type too (kept for the job's life).
 *
 * Usage: mpirun --with-ft ulfm -np N ft_types [--iterations N] [--every N] [--kill R:I]...
 *   --kill R:I[:bcast]  original rank R kills itself (SIGKILL) before iteration I's first
 *                collective (or before its broadcast, whose root is the iteration modulo the
 *                current size); a replacement never does.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrabit.h"
#include "mpitest.h"

#define NPAIRS 3
#define NPADDED 5
#define NSTRIDED 6

typedef struct {
    double value;
    int index;
} pair_t;

static struct {
    int rank, iteration, before_bcast;
} kills[32];
static int nkills;

/* A value that differs by rank and iteration, with ties between ranks now and then (MINLOC
 * then picks the lower index). */
static double value_of(int rank, int it, int k)
{
    return (double) (((rank * 7 + it * 3 + k * 5) % 11) - 5) + 0.25 * (double) (it % 3);
}

/* Sums for the two derived types (predefined operations take predefined types only). */
static MPI_Datatype padded, strided;

static void sum_typed(void *in, void *inout, int *len, MPI_Datatype *type)
{
    if (*type == padded) {
        for (int i = 0; i < *len; i++) {
            int a, b;
            memcpy(&a, (char *) in + 8 * i, sizeof(int));
            memcpy(&b, (char *) inout + 8 * i, sizeof(int));
            b += a;
            memcpy((char *) inout + 8 * i, &b, sizeof(int));
        }
    } else {
        for (int i = 0; i < *len * NSTRIDED; i++) {
            ((double *) inout)[2 * i] += ((double *) in)[2 * i];
        }
    }
}

static void maybe_die(int original_rank, int it, int before_bcast, int is_replacement)
{
    for (int i = 0; i < nkills && !is_replacement; i++) {
        if (kills[i].rank == original_rank && kills[i].iteration == it
            && kills[i].before_bcast == before_bcast) {
            fprintf(stderr, "ft_types: rank %d killing itself at iteration %d%s\n",
                    original_rank, it, before_bcast ? " before the broadcast" : "");
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

/* The original rank of `root` in comm: its rank in this process's MPI_COMM_WORLD (the
 * shrink policy keeps the original processes, renumbered), or `root` itself when it is not
 * in it or this process is a replacement (respawn keeps the ranks, and a replacement's
 * MPI_COMM_WORLD is the job that recovery spawned). */
static int root_original_rank(MPI_Comm comm, int root, int is_replacement)
{
    int orig = is_replacement ? MPI_UNDEFINED : mt_world_rank_of(comm, root);
    return MPI_UNDEFINED == orig ? root : orig;
}

static void check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "ft_types: %s failed (%d); exiting\n", what, err);
        fflush(stderr);
        _exit(3);
    }
}

int main(int argc, char **argv)
{
    int iterations = 20, every = 5, rank, size, version;
    MPI_Comm world, parent;

    check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    MPI_Comm_get_parent(&parent);
    int is_replacement = MPI_COMM_NULL != parent;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--iterations")) {
            iterations = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--every")) {
            every = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--kill") && nkills < 32
                   && 2 <= sscanf(argv[i + 1], "%d:%d", &kills[nkills].rank,
                                  &kills[nkills].iteration)) {
            kills[nkills].before_bcast = NULL != strstr(argv[i + 1], ":bcast");
            nkills++;
            i++;
        } else {
            fprintf(stderr, "ft_types: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    const int original_rank = rank;

    MPI_Op sum;
    MPI_Op_create(sum_typed, 1, &sum);
    MPI_Type_create_resized(MPI_INT, 0, 8, &padded);
    MPI_Type_commit(&padded);
    MPI_Type_vector(NSTRIDED, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);

    /* Bootstrap: the padded type, kept for the job's life. */
    int64_t boot[NPADDED];
    for (int k = 0; k < NPADDED; k++) {
        boot[k] = (int64_t) 0x5a5a5a5a00000000LL | (uint32_t) (rank + k);
    }
    check(FTR_Allreduce_bootstrap(boot, NPADDED, padded, sum, &world), "bootstrap");
    uint64_t boot_hash = 0xcbf29ce484222325ULL;
    for (int k = 0; k < NPADDED; k++) {
        int v;
        memcpy(&v, &boot[k], sizeof(v));
        boot_hash = mt_fnv1a(&v, sizeof(v), boot_hash);
    }

    /* Global state: the next iteration and the running hash. */
    uint64_t global[2] = {0, 0xcbf29ce484222325ULL};
    int local = rank;
    check(FTR_Load_checkpoint(&world, global, sizeof(global), &local, sizeof(local), &version),
          "FTR_Load_checkpoint");
    if (is_replacement) {
        printf("rank %d: replacement starts at iteration %d (checkpoint version %d)\n", rank,
               (int) global[0], version);
        fflush(stdout);
    }

    for (int it = (int) global[0]; it < iterations; it++) {
        maybe_die(original_rank, it, 0, is_replacement);
        uint64_t h = global[1];

        pair_t pairs[NPAIRS];
        memset(pairs, 0xee, sizeof(pairs)); /* padding: never part of the result */
        for (int k = 0; k < NPAIRS; k++) {
            pairs[k].value = value_of(rank, it, k);
            pairs[k].index = rank;
        }
        check(FTR_Allreduce(pairs, NPAIRS, MPI_DOUBLE_INT, MPI_MINLOC, &world), "MINLOC");
        for (int k = 0; k < NPAIRS; k++) {
            h = mt_fnv1a(&pairs[k].value, sizeof(double), h);
            h = mt_fnv1a(&pairs[k].index, sizeof(int), h);
        }

        int64_t slots[NPADDED];
        for (int k = 0; k < NPADDED; k++) {
            /* the int at offset 0 of each 8-byte slot; the other 4 bytes must stay as they are */
            slots[k] = (int64_t) 0x7b7b7b7b00000000LL | (uint32_t) (rank * 100 + it + k);
        }
        check(FTR_Allreduce(slots, NPADDED, padded, sum, &world), "padded SUM");
        for (int k = 0; k < NPADDED; k++) {
            int v;
            memcpy(&v, &slots[k], sizeof(v));
            h = mt_fnv1a(&v, sizeof(v), h);
            if ((uint64_t) slots[k] >> 32 != 0x7b7b7b7bULL) {
                fprintf(stderr, "ft_types: rank %d: the padding of slot %d was overwritten\n",
                        rank, k);
                h ^= 1;
            }
        }

        double spread[2 * NSTRIDED];
        for (int k = 0; k < 2 * NSTRIDED; k++) {
            spread[k] = k % 2 ? -1.0 : value_of(rank, it, k) * 0.5;
        }
        check(FTR_Allreduce(spread, 1, strided, sum, &world), "strided SUM");
        for (int k = 0; k < 2 * NSTRIDED; k++) {
            h = mt_fnv1a(&spread[k], sizeof(double), h);
        }

        MPI_Comm_rank(world, &rank); /* the shrink policy renumbers the survivors */
        MPI_Comm_size(world, &size);
        int root = it % size;
        maybe_die(original_rank, it, 1, is_replacement);
        /* The root sends its original rank: the data must come from the process that was
         * `root` when the call was made, even if a failure in the call renumbered the ranks. */
        int root_orig = root_original_rank(world, root, is_replacement);
        for (int k = 0; k < NPADDED; k++) {
            int v = rank == root ? original_rank * 1000 + it * 10 + k : -1;
            slots[k] = (int64_t) 0x7b7b7b7b00000000LL | (uint32_t) v;
        }
        check(FTR_Bcast(slots, NPADDED, padded, root, &world), "padded Bcast");
        for (int k = 0; k < NPADDED; k++) {
            int v;
            memcpy(&v, &slots[k], sizeof(v));
            if (v != root_orig * 1000 + it * 10 + k) {
                fprintf(stderr, "ft_types: rank %d, iteration %d: broadcast value %d, expected "
                                "%d from original rank %d\n", original_rank, it, v,
                        root_orig * 1000 + it * 10 + k, root_orig);
                fflush(stderr);
                _exit(4);
            }
            h = mt_fnv1a(&v, sizeof(v), h);
        }

        global[0] = (uint64_t) it + 1;
        global[1] = h;
        if ((it + 1) % every == 0) {
            check(FTR_Checkpoint(&world, global, sizeof(global), &local, sizeof(local)),
                  "FTR_Checkpoint");
        }
    }

    /* Every rank must hold the same hash (a replacement's replayed results included): the
     * maximum of h and of ~h are complements only if all are equal. */
    uint64_t h = mt_fnv1a(&boot_hash, sizeof(boot_hash), global[1]);
    uint64_t both[2] = {h, ~h};
    check(FTR_Allreduce(both, 2, MPI_UINT64_T, MPI_MAX, &world), "final comparison");
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (0 == rank) {
        if (both[0] != ~both[1]) {
            printf("final types fingerprint differs between ranks\n");
        } else {
            printf("final types fingerprint %016llx after %d iterations on %d ranks\n",
                   (unsigned long long) h, iterations, size);
        }
    }
    fflush(stdout);
    MPI_Op_free(&sum);
    MPI_Type_free(&padded);
    MPI_Type_free(&strided);
    MPI_Comm_free(&world);
    FTR_Finalize();
    return 0;
}
