/*
 * ompi-resilience: MPI_Allreduce / MPI_Bcast latency benchmark.
 *
 * Usage: coll_bench allreduce|bcast [MAX_BYTES [TRIALS [TRIAL_SECONDS]]]
 *   MAX_BYTES      largest message, in bytes (default 16 MiB); sizes are 8, 16, 32, ...
 *   TRIALS         timed trials per size; the median is reported (default 5)
 *   TRIAL_SECONDS  about how long one trial should take (default 0.06)
 *
 * The program does not choose the collective implementation: whichever coll component
 * Open MPI selects serves the calls (bench/run-coll.sh runs it with and without
 * --mca coll ^ftrabit). Messages are vectors of MPI_DOUBLE: MPI_Allreduce sums them,
 * MPI_Bcast sends them from rank 0.
 *
 * Rank 0 prints comment lines starting with '#', then one line per size:
 *   BYTES USEC
 * where USEC is the time of one call in microseconds: per trial, the slowest rank's
 * average over the trial's iterations (a collective is done when its last rank is
 * done), and over the trials, the median (robust to the odd trial a noisy machine
 * spoils).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES   (16UL << 20)
#define DEFAULT_TRIALS      5
#define DEFAULT_TRIAL_SEC   0.06
#define MAX_TRIALS          101
/* Calibration stops growing its batch once a batch takes this long: long enough that
 * MPI_Wtime's resolution and one-off hiccups do not dominate the estimate. */
#define CALIBRATION_SEC     0.01

/* Abort with a readable message if an MPI call fails. MPI_COMM_WORLD is set to
 * MPI_ERRORS_RETURN below, so failures come back here instead of killing the job
 * before saying which call failed. */
#define CHECK(call)                                                                        \
    do {                                                                                   \
        int check_rc_ = (call);                                                            \
        if (MPI_SUCCESS != check_rc_) {                                                    \
            die_mpi(#call, check_rc_, __FILE__, __LINE__);                                 \
        }                                                                                  \
    } while (0)

static void die_mpi(const char *what, int rc, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, rank = -1;

    if (MPI_SUCCESS != MPI_Error_string(rc, msg, &len)) {
        snprintf(msg, sizeof(msg), "error code %d", rc);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "coll_bench: rank %d: %s failed at %s:%d: %s\n", rank, what, file, line,
            msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

/* The value of an integer or boolean MCA parameter read through MPI_T, or -1 if there is
 * no such parameter (the component is not loaded). bench/run-uniform.sh checks from the
 * output that coll_ftrabit_uniform really is what it asked for. */
static int read_int_cvar(const char *name)
{
    int provided, idx, count, value = -1;
    MPI_T_cvar_handle handle;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return -1;
    }
    if (MPI_SUCCESS == MPI_T_cvar_get_index(name, &idx)
        && MPI_SUCCESS == MPI_T_cvar_handle_alloc(idx, NULL, &handle, &count)) {
        char cname[256], desc[1024];
        int name_len = sizeof(cname), desc_len = sizeof(desc), verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        _Bool b = 0; /* Open MPI exposes boolean parameters as MPI_C_BOOL */
        int i = 0;
        if (1 == count
            && MPI_SUCCESS == MPI_T_cvar_get_info(idx, cname, &name_len, &verbosity, &type,
                                                  &enumtype, desc, &desc_len, &bind, &scope)) {
            if (MPI_C_BOOL == type && MPI_SUCCESS == MPI_T_cvar_read(handle, &b)) {
                value = b;
            } else if (MPI_INT == type && MPI_SUCCESS == MPI_T_cvar_read(handle, &i)) {
                value = i;
            }
        }
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return value;
}

static void usage_and_exit(int rank)
{
    if (0 == rank) {
        fprintf(stderr,
                "usage: coll_bench allreduce|bcast [MAX_BYTES [TRIALS [TRIAL_SECONDS]]]\n");
    }
    MPI_Finalize();
    exit(2);
}

typedef enum { OP_ALLREDUCE, OP_BCAST } bench_op_t;

typedef struct {
    bench_op_t op;
    double *sbuf; /* allreduce input; untouched by the calls, so every call sums the same */
    double *rbuf; /* allreduce output, or the broadcast buffer */
} bench_t;

/* One call of the collective under test on `count` doubles. */
static void run_once(const bench_t *b, int count)
{
    if (OP_ALLREDUCE == b->op) {
        CHECK(MPI_Allreduce(b->sbuf, b->rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    } else {
        CHECK(MPI_Bcast(b->rbuf, count, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    }
}

/* Seconds per call of `iters` back-to-back calls, on the slowest rank, known to every
 * rank. All ranks start together after a barrier, so the slowest rank's time is the time
 * of the collective, not of one rank's share of it. */
static double time_batch_all(const bench_t *b, int count, long iters)
{
    double t0, mine, slowest;

    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        run_once(b, count);
    }
    mine = (MPI_Wtime() - t0) / (double) iters;
    /* Every rank needs the answer to take the same decision about the next batch; which
     * component serves this one-double MPI_Allreduce does not matter. */
    CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return slowest;
}

/* How many iterations make one trial last about `trial_sec`. The number must be the same
 * on every rank (or the ranks would call different numbers of collectives and hang), so it
 * comes from times agreed by MPI_Allreduce, never from a rank's own clock. The batches
 * also serve as warmup: the first call pays for page faults and connection setup. */
static long calibrate(const bench_t *b, int count, double trial_sec)
{
    long iters = 1;
    double per_call;

    run_once(b, count); /* warmup: first-touch costs stay out of the estimate */
    for (;;) {
        per_call = time_batch_all(b, count, iters);
        if (per_call * (double) iters >= CALIBRATION_SEC || iters >= (1L << 24)) {
            break;
        }
        iters *= 4;
    }
    long n = (long) (trial_sec / (per_call > 0.0 ? per_call : 1e-9));
    return n < 1 ? 1 : n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Fill the inputs so that the result is known exactly (small integers are exact in
 * doubles), then check a few elements of the last result: a benchmark of a collective
 * that computes the wrong thing would be worthless. */
static void fill(const bench_t *b, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++) {
        b->sbuf[i] = (double) (rank + 1) + (double) (i % 7);
        b->rbuf[i] = 0 == rank ? (double) (i % 11) : -1.0;
    }
}

static void verify(const bench_t *b, int count, int rank, int size)
{
    int idx[3] = {0, count / 2, count - 1};

    for (int k = 0; k < 3; k++) {
        int i = idx[k];
        double want = OP_ALLREDUCE == b->op
                          ? (double) size * (size + 1) / 2.0 + (double) size * (double) (i % 7)
                          : (double) (i % 11);
        if (b->rbuf[i] != want) {
            fprintf(stderr, "coll_bench: rank %d: wrong result at element %d of %d: %g, want %g\n",
                    rank, i, count, b->rbuf[i], want);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    bench_t b = {0};
    unsigned long max_bytes = DEFAULT_MAX_BYTES;
    int trials = DEFAULT_TRIALS;
    double trial_sec = DEFAULT_TRIAL_SEC;
    double times[MAX_TRIALS];

    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));

    if (argc < 2 || argc > 5) {
        usage_and_exit(rank);
    }
    if (0 == strcmp(argv[1], "allreduce")) {
        b.op = OP_ALLREDUCE;
    } else if (0 == strcmp(argv[1], "bcast")) {
        b.op = OP_BCAST;
    } else {
        usage_and_exit(rank);
    }
    if (argc > 2) {
        char *end;
        max_bytes = strtoul(argv[2], &end, 0);
        /* The count argument of MPI calls is an int. */
        if ('\0' != *end || max_bytes < sizeof(double)
            || max_bytes / sizeof(double) > (unsigned long) 0x7fffffff) {
            usage_and_exit(rank);
        }
    }
    if (argc > 3) {
        trials = atoi(argv[3]);
        if (trials < 1 || trials > MAX_TRIALS) {
            usage_and_exit(rank);
        }
    }
    if (argc > 4) {
        trial_sec = atof(argv[4]);
        if (!(trial_sec > 0.0)) {
            usage_and_exit(rank);
        }
    }

    size_t max_count = max_bytes / sizeof(double);
    b.sbuf = malloc(max_count * sizeof(double));
    b.rbuf = malloc(max_count * sizeof(double));
    if (NULL == b.sbuf || NULL == b.rbuf) {
        fprintf(stderr, "coll_bench: rank %d: cannot allocate 2 x %lu bytes\n", rank, max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Touch every page now, so page faults are not timed at the first large size. */
    fill(&b, max_count, rank);

    if (0 == rank) {
        printf("# coll_bench %s: %d ranks, MPI_DOUBLE%s, %d trials of ~%.3f s per size\n",
               argv[1], size, OP_ALLREDUCE == b.op ? " MPI_SUM" : " from root 0", trials,
               trial_sec);
        int uniform = read_int_cvar("coll_ftrabit_uniform");
        if (uniform >= 0) {
            printf("# coll_ftrabit_uniform = %d\n", uniform);
        }
        printf("# bytes usec (median trial of the slowest rank's time per call)\n");
        fflush(stdout);
    }

    for (size_t count = 1; count <= max_count; count *= 2) {
        int n = (int) count;
        long iters = calibrate(&b, n, trial_sec);

        for (int t = 0; t < trials; t++) {
            double t0, mine, slowest = 0.0;

            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                run_once(&b, n);
            }
            mine = (MPI_Wtime() - t0) / (double) iters;
            /* Only rank 0 reports, so a reduce (not served by ftrabit) is enough here. */
            CHECK(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
            times[t] = slowest;
        }
        verify(&b, n, rank, size);
        if (0 == rank) {
            printf("%zu %.3f\n", count * sizeof(double), 1e6 * median(times, trials));
            fflush(stdout); /* progress is visible while a long run goes on */
        }
    }

    free(b.sbuf);
    free(b.rbuf);
    CHECK(MPI_Finalize());
    return 0;
}
