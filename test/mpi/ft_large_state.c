/*
 * ompi-resilience: checkpoints of any size, up to and beyond MPI's int counts (2 GiB), as
 * the model of a machine-learning job often is.
 *
 * Every rank checkpoints a global state of G bytes (the same on every rank) and a local
 * state of L bytes (its own) every EVERY iterations; their bytes are a function of
 * (iteration, original rank), so a process that loads a checkpoint checks every byte it
 * was given. A rank killed at iteration I is replaced; the replacement is sent the global
 * state by a survivor and its local state by a ring neighbour (the replicas of local
 * states travel in every checkpoint), and the new ring neighbours of the replacement are
 * reseeded: each of those messages is G or L bytes long. Each iteration also makes one
 * FTR_Allreduce of A bytes (a sum of 64-bit words, each a function of (word, iteration,
 * rank)), which the replacement replays: it is sent the results since the checkpoint, so
 * with A over 2 GiB one result travels in one message of more than INT_MAX bytes.
 *
 * Options:
 *   --global-bytes G (1 MiB)  --local-bytes L (1 MiB)  --iterations N (6)  --every N (2)
 *   --allreduce-bytes A (8; a multiple of 8, at most 8 * INT_MAX)
 *   --kill R:I   original rank R kills itself (SIGKILL) at iteration I (repeatable)
 *
 * Output: "mpitest: rank R done" per rank, and from rank 0 "mpitest ft_large_state: np N:
 * PASS" (or FAIL). Run with --with-ft ulfm.
 */
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

#define MAX_KILLS 8
static struct {
    int rank, iteration;
} kills[MAX_KILLS];
static int nkills, failures, original_rank, is_replacement;

static void ftr_check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "ft_large_state: rank %d: %s failed (error %d)\n", original_rank, what,
                err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Word w of a state made at iteration `it` by `owner` (-1: the global state). */
static uint64_t word_of(uint64_t w, int it, int owner)
{
    uint64_t x = w * 0x9E3779B97F4A7C15ULL ^ ((uint64_t) (it + 1) << 40) ^ (uint64_t) (owner + 2);
    return x ^ (x >> 29);
}

static void fill(unsigned char *buf, size_t len, int it, int owner)
{
    size_t words = len / 8;
    uint64_t last;

    for (size_t w = 0; w < words; w++) {
        uint64_t x = word_of(w, it, owner);
        memcpy(buf + 8 * w, &x, 8);
    }
    last = word_of(words, it, owner);
    memcpy(buf + 8 * words, &last, len % 8);
}

/* The first byte that differs from the state of (it, owner), or -1. */
static long long first_difference(const unsigned char *buf, size_t len, int it, int owner)
{
    size_t words = len / 8;
    uint64_t x;

    for (size_t w = 0; w < words; w++) {
        x = word_of(w, it, owner);
        if (0 != memcmp(buf + 8 * w, &x, 8)) {
            return (long long) (8 * w);
        }
    }
    x = word_of(words, it, owner);
    return 0 == memcmp(buf + 8 * words, &x, len % 8) ? -1 : (long long) (8 * words);
}

/* One allreduce of `words` 64-bit words at iteration `it` over `comm`: every word checked
 * against the sum over the ranks, computed here. */
static void allreduce_and_check(uint64_t *buf, size_t words, int it, MPI_Comm *comm)
{
    int size;

    for (size_t w = 0; w < words; w++) {
        buf[w] = word_of(w, it, original_rank);
    }
    ftr_check(FTR_Allreduce(buf, (int) words, MPI_UINT64_T, MPI_SUM, comm), "FTR_Allreduce");
    MPI_Comm_size(*comm, &size);
    for (size_t w = 0; w < words; w++) {
        uint64_t sum = 0;
        for (int r = 0; r < size; r++) {
            sum += word_of(w, it, r);
        }
        if (buf[w] != sum) {
            failures++;
            printf("mpitest ft_large_state: rank %d: FAIL allreduce of iteration %d: word %zu "
                   "of %zu is %llu, expected %llu\n", original_rank, it, w, words,
                   (unsigned long long) buf[w], (unsigned long long) sum);
            fflush(stdout);
            return;
        }
    }
}

static void check_loaded(const unsigned char *global, size_t global_bytes,
                         const unsigned char *local, size_t local_bytes, int it)
{
    long long g = first_difference(global, global_bytes, it, -1);
    long long l = first_difference(local, local_bytes, it, original_rank);

    if (g >= 0 || l >= 0) {
        failures++;
        printf("mpitest ft_large_state: rank %d: FAIL the checkpoint of iteration %d differs "
               "(global from byte %lld, local from byte %lld; -1: equal)\n",
               original_rank, it, g, l);
    } else {
        printf("mpitest ft_large_state: rank %d: checkpoint of iteration %d loaded, %zu + %zu "
               "bytes checked\n", original_rank, it, global_bytes, local_bytes);
    }
    fflush(stdout);
}

static void maybe_die(int it)
{
    for (int k = 0; k < nkills && !is_replacement; k++) {
        if (kills[k].rank == original_rank && kills[k].iteration == it) {
            fprintf(stderr, "ft_large_state: rank %d killing itself at iteration %d\n",
                    original_rank, it);
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Comm world;
    size_t global_bytes = 1 << 20, local_bytes = 1 << 20, allreduce_bytes = 8;
    int iterations = 6, every = 2, bad_usage = 0, version, rank, size;

    ftr_check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    original_rank = rank;
    int origin;
    FTR_Origin(&origin);
    is_replacement = FTR_ORIGIN_ORIGINAL != origin; /* spawned, or a spare that took a rank */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--global-bytes") && i + 1 < argc) {
            global_bytes = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--local-bytes") && i + 1 < argc) {
            local_bytes = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--allreduce-bytes") && i + 1 < argc) {
            allreduce_bytes = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            iterations = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--every") && i + 1 < argc) {
            every = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--kill") && i + 1 < argc && nkills < MAX_KILLS) {
            bad_usage |= 2 != sscanf(argv[++i], "%d:%d", &kills[nkills].rank,
                                     &kills[nkills].iteration);
            nkills++;
        } else {
            bad_usage = 1;
        }
    }
    if (bad_usage || iterations < 1 || every < 1 || global_bytes < 8 || allreduce_bytes < 8
        || 0 != allreduce_bytes % 8 || allreduce_bytes / 8 > INT_MAX) {
        if (0 == rank) {
            fprintf(stderr, "usage: ft_large_state [--global-bytes G (8 or more)] "
                            "[--local-bytes L] [--allreduce-bytes A (8 * 1..INT_MAX)] "
                            "[--iterations N] [--every N] [--kill R:I]...\n");
        }
        MPI_Finalize();
        return 2;
    }

    /* The state of iteration `it` is the one checkpointed after it-1: 0 is the start. */
    unsigned char *global = malloc(global_bytes ? global_bytes : 1);
    unsigned char *local = malloc(local_bytes ? local_bytes : 1);
    uint64_t *reduced = malloc(allreduce_bytes);
    if (NULL == global || NULL == local || NULL == reduced) {
        fprintf(stderr, "ft_large_state: rank %d: no memory for %zu + %zu + %zu bytes\n",
                original_rank, global_bytes, local_bytes, allreduce_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int next = 0;
    ftr_check(FTR_Load_checkpoint(&world, global, global_bytes, local, local_bytes, &version),
              "FTR_Load_checkpoint");
    if (version > 0) {
        /* the iteration is in the state's first word too, but the bytes must say it all:
         * which iteration's state every byte is of is found by trying each */
        for (next = 0; next <= iterations && first_difference(global, 8, next, -1) >= 0; next++) {
        }
        check_loaded(global, global_bytes, local, local_bytes, next);
    } else {
        fill(global, global_bytes, 0, -1);
        fill(local, local_bytes, 0, original_rank);
    }
    if (is_replacement) {
        printf("mpitest ft_large_state: rank %d: replacement starts at iteration %d (version "
               "%d)\n", original_rank, next, version);
        fflush(stdout);
    }

    for (int it = next; it < iterations; it++) {
        maybe_die(it);
        allreduce_and_check(reduced, allreduce_bytes / 8, it, &world);
        if ((it + 1) % every == 0) {
            fill(global, global_bytes, it + 1, -1);
            fill(local, local_bytes, it + 1, original_rank);
            ftr_check(FTR_Checkpoint(&world, global, global_bytes, local, local_bytes),
                      "FTR_Checkpoint");
        }
    }

    int total = failures;
    ftr_check(FTR_Allreduce(&total, 1, MPI_INT, MPI_SUM, &world), "FTR_Allreduce of failures");
    MPI_Comm_rank(world, &rank);
    printf("mpitest: rank %d done\n", original_rank);
    fflush(stdout);
    if (0 == rank) {
        printf("mpitest ft_large_state: np %d: %s\n", size, total ? "FAIL" : "PASS");
        fflush(stdout);
    }
    free(global);
    free(local);
    free(reduced);
    MPI_Comm_free(&world);
    FTR_Finalize();
    return total ? 1 : 0;
}
