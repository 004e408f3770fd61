/*
 * ompi-resilience: the failure-free cost of the FTR_* layer.
 *
 * Usage: ftr_bench allreduce|bcast [MAX_BYTES [TRIALS [TRIAL_SECONDS [CHECKPOINT_EVERY]]]]
 *   MAX_BYTES         largest message (default 16 MiB); sizes are 8, 16, 32, ... bytes
 *   TRIALS            timed trials per size and variant; medians are reported (default 7)
 *   TRIAL_SECONDS     about how long one trial should take (default 0.06)
 *   CHECKPOINT_EVERY  FTR_Checkpoint after this many FTR calls, outside the timed
 *                     loop (default 0: after every trial). Before the trials of each
 *                     size, two untimed intervals of that many calls: the first interval
 *                     with a new size fills the result pool (its pages fault in once),
 *                     the second is the steady state, where the memory is reported; the
 *                     trials measure the steady state an application sees from its
 *                     second checkpoint interval on.
 *
 * In one job, on the communicator FTR_Init returns, it times the same in-place operation
 * on the same buffer two ways:
 *   mpi  MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, world)
 *        (or MPI_Bcast(buf, n, MPI_DOUBLE, 0, world))
 *   ftr  FTR_Allreduce(buf, n, MPI_DOUBLE, MPI_SUM, &world) (or FTR_Bcast): the same call
 *        plus what makes recovery possible: a sequence number, the input kept for a retry,
 *        a copy of the result in the cache until the next checkpoint;
 *   copy the mpi call followed by a memcpy of the result into one other buffer: the least
 *        that any way of keeping results adds (the result must be in a second place), a
 *        floor for ftr.
 * Whichever coll component Open MPI selects serves both (ftrabit under bench/run-recovery.sh),
 * so the difference is the FTR_* layer alone. Trials alternate between the two variants
 * (the order rotates every trial) with the same iteration count, so machine noise hits all
 * alike. The cache grows by one result per call until FTR_Checkpoint empties it, as in an
 * application that checkpoints; the checkpoints (an agreement each) are not timed, and the
 * other variants run the same agreement at the same points, untimed too (take_break). What
 * a checkpoint costs is reported on its own (CKPT_USEC); an application amortises it over
 * its checkpoint interval.
 *
 * Rank 0 prints comment lines starting with '#', then one line per size:
 *   BYTES MPI_USEC FTR_USEC RATIO RATIO_MIN RATIO_MAX RATIO_PAIRED KEPT HELD_KEPT HELD_BETWEEN
 *   COPY_USEC COPY_RATIO COPY_RATIO_PAIRED CKPT_USEC FLOOR_RATIO_PAIRED
 * per trial the slowest rank's mean time per call; per variant the median over trials;
 * RATIO = FTR_USEC / MPI_USEC; RATIO_MIN/MAX/PAIRED: lowest, highest and median of the
 * trials' paired ratios. Memory (FTR_Cache_memory, the largest over the ranks, at the end of
 * the second untimed interval, or with CHECKPOINT_EVERY 0 at the checkpoints after the
 * trials): KEPT, the results held right before the checkpoint; HELD_KEPT, the bytes held
 * then (results, pool, index); HELD_BETWEEN, the bytes held right after it, until the next
 * interval's results reuse them. COPY_*: the copy variant's median, its ratio to MPI_USEC
 * and its median paired ratio. CKPT_USEC: the mean time of one FTR_Checkpoint in the
 * trials (each batch's mean on the slowest rank, the median over the batches that had
 * one; -1 where none had: CHECKPOINT_EVERY 0, or fewer calls per trial than it).
 * FLOOR_RATIO_PAIRED: FTR over the floor (the copy variant: MPI plus one memcpy of the
 * result), the median of the trials' ratios of the two measured next to each other
 * (0 for bcast, which has no copy variant).
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"

#define MAX_TRIALS 101
#define CALIBRATION_SEC 0.01

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int check_rc_ = (call);                                                            \
        if (MPI_SUCCESS != check_rc_) {                                                    \
            char msg_[MPI_MAX_ERROR_STRING];                                               \
            int len_ = 0;                                                                  \
            MPI_Error_string(check_rc_, msg_, &len_);                                      \
            fprintf(stderr, "ftr_bench: %s failed at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, msg_);                                                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

static int is_bcast;
static MPI_Comm world;
static double *buf, *copy_dst;
static long since_checkpoint, checkpoint_every;

/* What the cache held at the checkpoints of the current size (largest seen). */
static unsigned long mem_kept, mem_held_kept, mem_held_between;
static int mem_sampling = 1;

static void sample_memory(int before_checkpoint)
{
    size_t results, bytes, held;
    if (!mem_sampling) {
        return;
    }
    CHECK(FTR_Cache_memory(world, &results, &bytes, &held));
    if (before_checkpoint) {
        mem_kept = results > mem_kept ? results : mem_kept;
        mem_held_kept = held > mem_held_kept ? held : mem_held_kept;
    } else {
        mem_held_between = held > mem_held_between ? held : mem_held_between;
    }
}

enum { VARIANT_MPI = 0, VARIANT_FTR = 1, VARIANT_COPY = 2 };

static void run_once(int ftr, int n)
{
    if (VARIANT_COPY == ftr) {
        run_once(VARIANT_MPI, n);
        memcpy(copy_dst, buf, sizeof(double) * (size_t) n);
    } else if (ftr) {
        if (is_bcast) {
            CHECK(FTR_Bcast(buf, n, MPI_DOUBLE, 0, &world));
        } else {
            CHECK(FTR_Allreduce(buf, n, MPI_DOUBLE, MPI_SUM, &world));
        }
        since_checkpoint++;
    } else if (is_bcast) {
        CHECK(MPI_Bcast(buf, n, MPI_DOUBLE, 0, world));
    } else {
        CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, world));
    }
}

/* Drop the result cache the way an application does: with a checkpoint (untimed). */
static void maybe_checkpoint(int force)
{
    static long model;
    if (since_checkpoint > 0 && (force || (checkpoint_every > 0 && since_checkpoint >= checkpoint_every))) {
        model++;
        sample_memory(1);
        CHECK(FTR_Checkpoint(&world, &model, sizeof(model), &model, sizeof(model)));
        sample_memory(0);
        since_checkpoint = 0;
    }
}

/* Seconds spent in the timed FTR_Checkpoint calls of the current ftr batch, and how many. */
static double ckpt_sec;
static long ckpt_count;

/* The break after every CHECKPOINT_EVERY calls, outside the clock: the ftr variant
 * checkpoints; the others run the agreement a checkpoint runs (MPIX_Comm_agree), whose
 * aftermath lands on the calls after it (measured on 2 ranks, 8 B: the next calls take
 * 0.15 us more in all, MPI_Allreduce as much as FTR_Allreduce); so every variant's time
 * carries it, and FTR / MPI is the per-call cost of the FTR_* layer. What the checkpoint
 * itself costs is reported apart (ckpt_usec). Then a barrier: ranks leave it at different
 * times, the same way in every variant. */
static void take_break(int ftr)
{
    if (VARIANT_FTR == ftr) {
        double t0 = MPI_Wtime();
        maybe_checkpoint(0);
        ckpt_sec += MPI_Wtime() - t0;
        ckpt_count++;
    } else {
        int flag = 1;
        CHECK(MPIX_Comm_agree(world, &flag));
    }
    CHECK(MPI_Barrier(world));
}

/* Slowest rank's seconds per call over `iters` calls of one variant, the breaks (every
 * CHECKPOINT_EVERY calls) taken out of the time. The calls since the last break are
 * counted across batches: by since_checkpoint for the ftr variant (run_once counts), in
 * since_break for the others. */
static double time_batch(int ftr, int n, long iters)
{
    static long since_break[3];
    long *calls = VARIANT_FTR == ftr ? &since_checkpoint : &since_break[ftr];
    double mine = 0.0, slowest, t0;
    CHECK(MPI_Barrier(world));
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        run_once(ftr, n);
        if (VARIANT_FTR != ftr) {
            since_break[ftr]++;
        }
        if (checkpoint_every > 0 && *calls >= checkpoint_every) {
            mine += MPI_Wtime() - t0;
            take_break(ftr);
            *calls = 0;
            t0 = MPI_Wtime();
        }
    }
    mine += MPI_Wtime() - t0;
    mine /= (double) iters;
    CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (VARIANT_FTR == ftr && checkpoint_every == 0) {
        maybe_checkpoint(1);
    }
    return slowest;
}

static long calibrate(int n, double trial_sec)
{
    long iters = 1;
    double per_call;
    run_once(0, n);
    run_once(1, n);
    maybe_checkpoint(1);
    for (;;) {
        per_call = time_batch(0, n, iters);
        if (per_call * (double) iters >= CALIBRATION_SEC || iters >= (1L << 24)) {
            break;
        }
        iters *= 4;
    }
    long n_iters = (long) (trial_sec / (per_call > 0.0 ? per_call : 1e-9));
    return n_iters < 1 ? 1 : n_iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_TRIALS];
    memcpy(s, v, sizeof(double) * (size_t) n);
    qsort(s, (size_t) n, sizeof(double), cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* Both variants must compute the right thing: one call each on known data. */
static void verify(int n, int rank, int size)
{
    for (int ftr = 0; ftr < 2; ftr++) {
        for (int i = 0; i < n; i++) buf[i] = is_bcast ? (0 == rank ? i % 13 : -1) : rank + 1 + i % 7;
        run_once(ftr, n);
        for (int k = 0; k < 3; k++) {
            int i = k == 0 ? 0 : k == 1 ? n / 2 : n - 1;
            double want = is_bcast ? i % 13 : size * (size + 1) / 2.0 + (double) size * (i % 7);
            if (buf[i] != want) {
                fprintf(stderr, "ftr_bench: rank %d: %s: wrong result at %d of %d: %g, want %g\n",
                        rank, ftr ? "FTR" : "MPI", i, n, buf[i], want);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    }
    maybe_checkpoint(1);
    memset(buf, 0, sizeof(double) * (size_t) n); /* zeros: the sums stay exact and finite */
}

int main(int argc, char **argv)
{
    int rank, size, trials = 7;
    unsigned long max_bytes = 16UL << 20;
    double trial_sec = 0.06, t_mpi[MAX_TRIALS], t_ftr[MAX_TRIALS], ratio[MAX_TRIALS];
    double t_copy[MAX_TRIALS], ratio_copy[MAX_TRIALS], ratio_floor[MAX_TRIALS], t_ckpt[MAX_TRIALS];
    int n_ckpt;

    CHECK(FTR_Init(&argc, &argv, &world));
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (argc < 2 || (strcmp(argv[1], "allreduce") && strcmp(argv[1], "bcast"))) {
        if (0 == rank) {
            fprintf(stderr, "usage: ftr_bench allreduce|bcast [MAX_BYTES [TRIALS [TRIAL_SECONDS "
                            "[CHECKPOINT_EVERY]]]]\n");
        }
        MPI_Finalize();
        return 2;
    }
    is_bcast = !strcmp(argv[1], "bcast");
    if (argc > 2) max_bytes = strtoul(argv[2], NULL, 0);
    if (argc > 3) trials = atoi(argv[3]);
    if (argc > 4) trial_sec = atof(argv[4]);
    if (argc > 5) checkpoint_every = atol(argv[5]);
    if (max_bytes < 8 || trials < 1 || trials > MAX_TRIALS || !(trial_sec > 0) || checkpoint_every < 0) {
        if (0 == rank) fprintf(stderr, "ftr_bench: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t max_count = max_bytes / sizeof(double);
    buf = calloc(max_count, sizeof(double));
    copy_dst = calloc(max_count, sizeof(double));
    if (NULL == buf || NULL == copy_dst) {
        fprintf(stderr, "ftr_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (0 == rank) {
        printf("# ftr_bench %s: %d ranks, MPI_DOUBLE%s, in place, %d paired trials of ~%.3f s, "
               "checkpoint ",
               argv[1], size, is_bcast ? " from root 0" : " MPI_SUM", trials, trial_sec);
        if (checkpoint_every) {
            printf("every %ld FTR calls\n", checkpoint_every);
        } else {
            printf("after every trial\n");
        }
        printf("# bytes mpi_usec ftr_usec ratio ratio_min ratio_max ratio_paired kept "
               "held_kept_bytes held_between_bytes copy_usec copy_ratio copy_ratio_paired "
               "ckpt_usec floor_ratio_paired\n");
        fflush(stdout);
    }
    for (size_t count = 1; count <= max_count; count *= 2) {
        int n = (int) count;
        verify(n, rank, size);
        long iters = calibrate(n, trial_sec);
        for (int interval = 0; interval < 2 && checkpoint_every > 0; interval++) {
            mem_sampling = interval == 1; /* the steady state's memory */
            mem_kept = mem_held_kept = mem_held_between = 0;
            for (long i = 0; i < checkpoint_every; i++) {
                run_once(1, n);
            }
            maybe_checkpoint(1);
        }
        mem_sampling = 0 == checkpoint_every;
        if (mem_sampling) {
            mem_kept = mem_held_kept = mem_held_between = 0;
        }
        n_ckpt = 0;
        for (int t = 0; t < trials; t++) {
            /* mpi next to each of the others, the order rotating from trial to trial */
            static const int orders[4][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}};
            for (int k = 0; k < (is_bcast ? 2 : 3); k++) {
                int v = is_bcast ? (t + k) % 2 : orders[t % 4][k];
                ckpt_sec = 0.0;
                ckpt_count = 0;
                double s = time_batch(v, n, iters);
                if (VARIANT_FTR == v && ckpt_count > 0) { /* the same count on every rank */
                    double mine = ckpt_sec / (double) ckpt_count;
                    CHECK(MPI_Allreduce(&mine, &t_ckpt[n_ckpt++], 1, MPI_DOUBLE, MPI_MAX,
                                        MPI_COMM_WORLD));
                }
                *(VARIANT_MPI == v ? &t_mpi[t] : VARIANT_FTR == v ? &t_ftr[t] : &t_copy[t]) = s;
            }
            ratio[t] = t_ftr[t] / t_mpi[t];
            ratio_copy[t] = is_bcast ? 0 : t_copy[t] / t_mpi[t];
            ratio_floor[t] = is_bcast ? 0 : t_ftr[t] / t_copy[t];
        }
        maybe_checkpoint(1); /* the next size starts with an empty cache */
        unsigned long mem[3] = {mem_kept, mem_held_kept, mem_held_between}, mem_max[3];
        CHECK(MPI_Allreduce(mem, mem_max, 3, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD));
        if (0 == rank) {
            double lo = ratio[0], hi = ratio[0];
            for (int t = 1; t < trials; t++) {
                if (ratio[t] < lo) lo = ratio[t];
                if (ratio[t] > hi) hi = ratio[t];
            }
            double m = median(t_mpi, trials), f = median(t_ftr, trials);
            double c = is_bcast ? 0 : median(t_copy, trials);
            printf("%zu %.3f %.3f %.4f %.4f %.4f %.4f %lu %lu %lu %.3f %.4f %.4f %.3f %.4f\n",
                   count * sizeof(double), 1e6 * m, 1e6 * f, f / m, lo, hi,
                   median(ratio, trials), mem_max[0], mem_max[1], mem_max[2], 1e6 * c, c / m,
                   median(ratio_copy, trials), n_ckpt ? 1e6 * median(t_ckpt, n_ckpt) : -1.0,
                   median(ratio_floor, trials));
            fflush(stdout);
        }
    }
    free(buf);
    free(copy_dst);
    MPI_Comm_free(&world);
    FTR_Finalize();
    return 0;
}
