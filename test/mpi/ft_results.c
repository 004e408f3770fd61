/*
 * ompi-resilience: the result cache as the FTR_* collectives fill it.
 *
 * Every iteration makes four kinds of result, each filled into the cache a different way:
 *   - FTR_Allreduce of one MPI_DOUBLE              (contiguous: reduced straight into a
 *   - FTR_Allreduce of 1 MiB of MPI_DOUBLE          pool buffer, then copied to the user;
 *     (--big-mib: another size)                     from 2 MiB reduced into a scratch
 *                                                   buffer, then copied to both)
 *   - FTR_Allreduce of a strided vector type, with  (non-contiguous: packed into the pool)
 *     a user-defined sum (Open MPI takes predefined
 *     operations on predefined types only)
 *   - FTR_Bcast of ints from a root that rotates    (copied into the pool)
 * Contributions are integers computed from (rank, iteration, index), so every rank checks
 * every result exactly against the sums it computes itself, and checks that the holes of
 * the strided buffer are never written. FTR_Checkpoint every EVERY iterations.
 *
 * Options:
 *   --iterations N (12)  --every N (4)  --big-mib N (1): the big allreduce's size
 *   --kill R:I[:after-big]  original rank R kills itself (SIGKILL) at iteration I, before
 *                    its first collective there (after-big: right after the big allreduce);
 *                    its replacement replays from the last checkpoint and must be served
 *                    exactly the results checked above (it never dies again). Repeatable.
 *   --memory         check what FTR_Cache_memory reports (runs without --kill): no result
 *                    kept right after a checkpoint; before one, results kept on exactly
 *                    coll_ftrabit_result_replicas ranks each (all ranks if 0: pass the same
 *                    value as the argument of --memory); with every rank keeping, the memory
 *                    held between checkpoints holds at least the last interval's results
 *                    (kept for reuse) and is the same at every checkpoint after the first
 *                    (the pool reuses it: steady state allocates nothing)
 *   --replay-differs root|op   with --kill: the replacement replays with another broadcast
 *                    root (root + 1), or with MPI_MAX instead of MPI_SUM in the 8-byte
 *                    allreduce; the cached result must be refused (MPI_ERR_ROOT, MPI_ERR_OP),
 *                    not served: the replacement says "replay refused" and aborts the job
 *
 * Output: "mpitest: rank R done" per rank, and from rank 0 "mpitest ft_results: np N: PASS"
 * (or FAIL). Run with --with-ft ulfm.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

static int big_count = 131072; /* 1 MiB of doubles (--big-mib): a rendezvous message */
#define STRIDED_COUNT 1000  /* elements of the vector type, every other double */
#define BCAST_COUNT 2000
#define HOLE (-7.0)

static int failures, rank, size, original_rank, is_replacement;
static const char *replay_differs = ""; /* "root", "op" or "" */

#define MAX_KILLS 8
static struct {
    int rank, iteration, after_big;
} kills[MAX_KILLS];
static int nkills;

static void maybe_die(int it, int after_big)
{
    for (int k = 0; k < nkills && !is_replacement; k++) {
        if (kills[k].rank == original_rank && kills[k].iteration == it
            && kills[k].after_big == after_big) {
            fprintf(stderr, "ft_results: rank %d killing itself at iteration %d%s\n", rank, it,
                    after_big ? " after the big allreduce" : "");
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

static void check(int cond, const char *what, int it)
{
    if (!cond) {
        failures++;
        printf("mpitest ft_results: rank %d: FAIL %s at iteration %d\n", original_rank, what, it);
        fflush(stdout);
    }
}

/* The sum over the elements of the strided type (every other double). */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const double *a = in;
    double *b = inout;
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*type, &lb, &extent);
    size_t per = (size_t) extent / sizeof(double);
    for (int k = 0; k < *len; k++) {
        for (int i = 0; i < STRIDED_COUNT; i++) {
            b[k * per + 2 * (size_t) i] += a[k * per + 2 * (size_t) i];
        }
    }
}

static double contribution(int r, int it, int i)
{
    return (double) ((r + 1) * (it + 1)) + (double) (i % 17);
}

/* The sum over the original ranks, computed here: exact for these small integers. */
static double expected_sum(int it, int i)
{
    double s = 0;
    for (int r = 0; r < size; r++) {
        s += contribution(r, it, i);
    }
    return s;
}

static void ftr_check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        printf("mpitest ft_results: rank %d: FAIL %s returned %d\n", original_rank, what, err);
        fflush(stdout);
        exit(1);
    }
}

/* The replacement's replay with other arguments than the first run (--replay-differs):
 * the call must be refused with `want`; then the job ends. */
static void replay_refused(MPI_Comm world, int err, int want, const char *what)
{
    if (err == want) {
        printf("mpitest ft_results: rank %d: replay refused: %s returned %d as it must\n",
               original_rank, what, err);
        fflush(stdout);
        /* What an application does on an error it cannot handle. From a replacement, Open
         * MPI 5.0.7 ends only the replacement's own job (ompi_rte_abort_peers does nothing),
         * so the survivors replace it again: coll_ftrabit_recoveries_without_progress ends
         * the job. */
        MPI_Abort(world, 3);
    }
    ftr_check(err, what);
    printf("mpitest ft_results: rank %d: FAIL %s with other arguments was served\n",
           original_rank, what);
    fflush(stdout);
    MPI_Abort(world, 4);
}

static void one_iteration(MPI_Comm *world, int it, double *big, double *strided, int *ints,
                          MPI_Datatype vector, MPI_Op sum)
{
    double one = contribution(original_rank, it, 0);
    if (is_replacement && !strcmp(replay_differs, "op")) {
        replay_refused(*world, FTR_Allreduce(&one, 1, MPI_DOUBLE, MPI_MAX, world), MPI_ERR_OP,
                       "FTR_Allreduce (8 B)");
    }
    ftr_check(FTR_Allreduce(&one, 1, MPI_DOUBLE, MPI_SUM, world), "FTR_Allreduce (8 B)");
    check(one == expected_sum(it, 0), "8-byte allreduce result", it);

    for (int i = 0; i < big_count; i++) {
        big[i] = contribution(original_rank, it, i);
    }
    ftr_check(FTR_Allreduce(big, big_count, MPI_DOUBLE, MPI_SUM, world), "FTR_Allreduce (big)");
    int ok = 1;
    for (int i = 0; i < big_count && ok; i++) {
        ok = big[i] == expected_sum(it, i);
    }
    check(ok, "big allreduce result", it);
    maybe_die(it, 1);

    for (int i = 0; i < 2 * STRIDED_COUNT; i++) {
        strided[i] = i % 2 ? HOLE : contribution(original_rank, it, i / 2);
    }
    ftr_check(FTR_Allreduce(strided, 1, vector, sum, world), "FTR_Allreduce (strided)");
    ok = 1;
    for (int i = 0; i < 2 * STRIDED_COUNT && ok; i++) {
        ok = strided[i] == (i % 2 ? HOLE : expected_sum(it, i / 2));
    }
    check(ok, "strided allreduce result (or a hole written)", it);

    int root = it % size;
    for (int i = 0; i < BCAST_COUNT; i++) {
        ints[i] = original_rank == root ? it * 100000 + i : -1;
    }
    if (is_replacement && !strcmp(replay_differs, "root")) {
        replay_refused(*world, FTR_Bcast(ints, BCAST_COUNT, MPI_INT, (root + 1) % size, world),
                       MPI_ERR_ROOT, "FTR_Bcast");
    }
    ftr_check(FTR_Bcast(ints, BCAST_COUNT, MPI_INT, root, world), "FTR_Bcast");
    ok = 1;
    for (int i = 0; i < BCAST_COUNT && ok; i++) {
        ok = ints[i] == it * 100000 + i;
    }
    check(ok, "bcast result", it);
}

/* Right before a checkpoint: every result of the interval is kept by exactly `replicas`
 * ranks (every rank if 0). Right after: none, and (every rank keeping) the memory held
 * is the same at every checkpoint after the first. */
static void check_memory(MPI_Comm world, int replicas, int calls, int before, int it)
{
    static size_t held_first = 0, kept_bytes = 0;
    static int checkpoints = 0;
    size_t results, bytes, held;
    unsigned long mine, all;

    ftr_check(FTR_Cache_memory(world, &results, &bytes, &held), "FTR_Cache_memory");
    if (before) {
        kept_bytes = bytes;
        mine = (unsigned long) results;
        MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, world);
        unsigned long want = (unsigned long) calls * (unsigned long) (replicas > 0 && replicas < size
                                                                          ? replicas : size);
        check(all == want, "results kept before a checkpoint", it);
        return;
    }
    check(0 == results && 0 == bytes, "no result kept after a checkpoint", it);
    if (replicas > 0 && replicas < size) {
        return;
    }
    /* The buffers of the interval's results stay for the next interval's. */
    check(held >= kept_bytes, "result buffers kept for reuse after a checkpoint", it);
    if (++checkpoints == 2) {
        held_first = held;
    } else if (checkpoints > 2) {
        check(held == held_first, "memory held between checkpoints stays the same", it);
    }
    if (0 == rank && checkpoints > 1) {
        printf("mpitest ft_results: after checkpoint %d: %zu bytes held between checkpoints\n",
               checkpoints, held);
    }
}

int main(int argc, char **argv)
{
    MPI_Comm world, parent;
    int iterations = 12, every = 4, bad_usage = 0, memory = 0, replicas = 0;
    int version = 0, next = 0; /* the checkpoint: the next iteration to run */

    ftr_check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    original_rank = rank;
    MPI_Comm_get_parent(&parent);
    is_replacement = MPI_COMM_NULL != parent;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            iterations = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--every") && i + 1 < argc) {
            every = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--big-mib") && i + 1 < argc) {
            int big_mib = atoi(argv[++i]);
            bad_usage |= big_mib < 1 || big_mib > 64;
            big_count = big_mib * 131072;
        } else if (!strcmp(argv[i], "--kill") && i + 1 < argc && nkills < MAX_KILLS) {
            char where[16] = "";
            int n = sscanf(argv[++i], "%d:%d:%15s", &kills[nkills].rank,
                           &kills[nkills].iteration, where);
            kills[nkills].after_big = 3 == n && !strcmp(where, "after-big");
            bad_usage |= n < 2 || (3 == n && !kills[nkills].after_big);
            nkills++;
        } else if (!strcmp(argv[i], "--replay-differs") && i + 1 < argc) {
            replay_differs = argv[++i];
            bad_usage |= strcmp(replay_differs, "root") && strcmp(replay_differs, "op");
        } else if (!strcmp(argv[i], "--memory") && i + 1 < argc) {
            memory = 1;
            replicas = atoi(argv[++i]);
        } else {
            bad_usage = 1;
        }
    }
    if (bad_usage || iterations < 1 || every < 1 || (memory && nkills > 0)
        || (*replay_differs && 0 == nkills)) {
        if (0 == rank) {
            fprintf(stderr, "usage: ft_results [--iterations N] [--every N] [--big-mib N] "
                            "[--kill R:I[:after-big]... [--replay-differs root|op] | "
                            "--memory REPLICAS]\n");
        }
        MPI_Finalize();
        return 2;
    }

    double *big = malloc(sizeof(double) * big_count);
    double *strided = malloc(sizeof(double) * 2 * STRIDED_COUNT);
    int *ints = malloc(sizeof(int) * BCAST_COUNT);
    MPI_Datatype vector;
    MPI_Type_vector(STRIDED_COUNT, 1, 2, MPI_DOUBLE, &vector);
    MPI_Type_commit(&vector);
    MPI_Op sum;
    MPI_Op_create(strided_sum, 1, &sum);

    ftr_check(FTR_Load_checkpoint(&world, &next, sizeof(next), NULL, 0, &version),
              "FTR_Load_checkpoint");
    if (is_replacement) {
        printf("mpitest ft_results: rank %d: replacement starts at iteration %d (version %d)\n",
               original_rank, next, version);
        fflush(stdout);
    }
    for (int it = next; it < iterations; it++) {
        maybe_die(it, 0);
        one_iteration(&world, it, big, strided, ints, vector, sum);
        next = it + 1;
        if ((it + 1) % every == 0) {
            if (memory) {
                check_memory(world, replicas, 4 * every, 1, it);
            }
            ftr_check(FTR_Checkpoint(&world, &next, sizeof(next), NULL, 0), "FTR_Checkpoint");
            if (memory) {
                check_memory(world, replicas, 4 * every, 0, it);
            }
        }
    }

    /* A communicator made after the FTR one was freed (often at the same address, so
     * with the same handle) is a plain one: no state of the freed one may be found. */
    MPI_Comm freed = world, spare, plain;
    size_t results, bytes, held;
    MPI_Comm_dup(world, &spare); /* a plain communicator: the state is not copied */
    MPI_Comm_free(&world);
    MPI_Comm_dup(spare, &plain);
    check(MPI_ERR_COMM == FTR_Cache_memory(plain, &results, &bytes, &held),
          "a new communicator is not an FTR one", iterations);
    if (0 == rank) {
        printf("mpitest ft_results: the new communicator %s the freed one's handle\n",
               plain == freed ? "reuses" : "does not reuse");
    }

    MPI_Comm_rank(plain, &rank);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, plain);
    printf("mpitest: rank %d done\n", original_rank);
    fflush(stdout);
    if (0 == rank) {
        printf("mpitest ft_results: np %d: %s\n", size, total ? "FAIL" : "PASS");
        fflush(stdout);
    }
    MPI_Op_free(&sum);
    MPI_Type_free(&vector);
    free(big);
    free(strided);
    free(ints);
    MPI_Comm_free(&plain);
    MPI_Comm_free(&spare);
    FTR_Finalize();
    return total ? 1 : 0;
}
