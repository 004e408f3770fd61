/*
 * ompi-resilience: a one-way stream from rank 0 to rank 1 whose delivered bandwidth is
 * sampled over time by the receiver itself: the DR paper's "bandwidth through a network
 * fault" figure (bench/run-dr2-cluster.sh cuts and heals a network under it), and steady
 * streaming bandwidth for a PML over one or several networks.
 *
 * Rank 0 keeps WINDOW messages of BYTES in flight (MPI_Isend, each one refilled as soon as
 * the oldest completes) for SECONDS, then sends WINDOW short stop messages; rank 1 keeps
 * WINDOW receives posted and completes them in order (MPI matches them in order: same
 * source and tag), checking each message's number. A sampling thread of rank 1, which makes
 * no MPI call, records every SAMPLE_MS the bytes delivered so far and, for each network
 * interface named, the bytes the kernel received on it (/sys/class/net/IF/statistics): so
 * a PML that stalls in an MPI call still has its (flat) line, up to the end of the stream
 * time. A stalled PML never finishes: whoever runs this bounds it with a timeout.
 *
 * Usage: mpirun -np 2 dr2_stream SECONDS BYTES WINDOW SAMPLE_MS [IF[,IF...]]
 * Output (rank 1, stdout), times in seconds since the Unix epoch (CLOCK_REALTIME, the clock
 * a script outside the job reads with `date +%s.%N`):
 *   start T0
 *   sample T DELIVERED_BYTES [IF_RX_BYTES ...]   cumulative; -1 for an unreadable counter
 *   end T MESSAGES BYTES                          after the stop messages arrived
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IFS 4
#define HDR 16 /* message number (8 bytes), stop flag (8 bytes) */
#define TAG 11

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

struct sampler {
    double t_end; /* sample until then, or until `done` */
    double period;
    int nifs;
    char ifs[MAX_IFS][64];
    atomic_ullong delivered;
    atomic_int done;
};

static long long if_rx_bytes(const char *ifname)
{
    char path[256];
    long long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_bytes", ifname);
    f = fopen(path, "r");
    if (NULL != f) {
        if (1 != fscanf(f, "%lld", &v)) {
            v = -1;
        }
        fclose(f);
    }
    return v;
}

static void sample(struct sampler *s)
{
    printf("sample %.6f %llu", now(), (unsigned long long) atomic_load(&s->delivered));
    for (int i = 0; i < s->nifs; i++) {
        printf(" %lld", if_rx_bytes(s->ifs[i]));
    }
    printf("\n");
    fflush(stdout);
}

static void *sampler_main(void *arg)
{
    struct sampler *s = arg;
    double next = now();

    while (!atomic_load(&s->done) && next <= s->t_end) {
        double wait;
        struct timespec ts;

        sample(s);
        next += s->period;
        wait = next - now();
        if (wait > 0) {
            ts.tv_sec = (time_t) wait;
            ts.tv_nsec = (long) ((wait - (double) ts.tv_sec) * 1e9);
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void send_stream(unsigned char **bufs, size_t bytes, int window, double t_stop)
{
    MPI_Request *reqs = calloc((size_t) window, sizeof(MPI_Request));
    uint64_t n = 0, stop = 1;

    for (int i = 0; i < window; i++, n++) {
        memcpy(bufs[i], &n, 8);
        MPI_Isend(bufs[i], (int) bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &reqs[i]);
    }
    /* The oldest send completes first in practice; waiting for it keeps the ring simple. */
    for (int i = 0; now() < t_stop; i = (i + 1) % window, n++) {
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        memcpy(bufs[i], &n, 8);
        MPI_Isend(bufs[i], (int) bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &reqs[i]);
    }
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    /* one stop message for every receive the receiver keeps posted */
    for (int i = 0; i < window; i++, n++) {
        memcpy(bufs[i], &n, 8);
        memcpy(bufs[i] + 8, &stop, 8);
        MPI_Isend(bufs[i], HDR, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &reqs[i]);
    }
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    free(reqs);
}

/* Returns 0, or 1 when a message came out of order (a broken PML: reported, not hidden). */
static int receive_stream(unsigned char **bufs, size_t bytes, int window, struct sampler *s)
{
    MPI_Request *reqs = calloc((size_t) window, sizeof(MPI_Request));
    uint64_t n = 0, got, stop;
    unsigned long long total = 0;
    int stops = 0, bad = 0;

    for (int i = 0; i < window; i++) {
        MPI_Irecv(bufs[i], (int) bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &reqs[i]);
    }
    for (int i = 0; stops < window; i = (i + 1) % window, n++) {
        MPI_Status st;
        int count;

        MPI_Wait(&reqs[i], &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        memcpy(&got, bufs[i], 8);
        memcpy(&stop, bufs[i] + 8, 8);
        if (got != n && !bad) {
            fprintf(stderr, "dr2_stream: message %llu arrived as number %llu\n",
                    (unsigned long long) n, (unsigned long long) got);
            bad = 1;
        }
        if (stop) {
            stops++;
            continue; /* the sender posts no more than `window` of them */
        }
        total += (unsigned long long) count;
        atomic_store(&s->delivered, total);
        MPI_Irecv(bufs[i], (int) bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &reqs[i]);
    }
    atomic_store(&s->done, 1);
    printf("end %.6f %llu %llu\n", now(), (unsigned long long) (n - (uint64_t) window), total);
    fflush(stdout);
    free(reqs);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size, window, bad = 0;
    double seconds, t0;
    size_t bytes;
    struct sampler s;
    unsigned char **bufs;
    pthread_t thread;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    seconds = argc > 1 ? atof(argv[1]) : 0;
    bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
    window = argc > 3 ? atoi(argv[3]) : 0;
    memset(&s, 0, sizeof(s));
    s.period = argc > 4 ? atof(argv[4]) / 1000.0 : 0;
    if (2 != size || seconds <= 0 || bytes < HDR || bytes > (1u << 30) || window < 1
        || window > 1024 || s.period <= 0) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 dr2_stream SECONDS BYTES WINDOW SAMPLE_MS "
                            "[IF[,IF...]]  (BYTES 16 .. 1 GiB, WINDOW 1 .. 1024)\n");
        }
        MPI_Finalize();
        return 2;
    }
    if (argc > 5) {
        char *list = strdup(argv[5]), *save = NULL;
        for (char *t = strtok_r(list, ",", &save); NULL != t && s.nifs < MAX_IFS;
             t = strtok_r(NULL, ",", &save)) {
            snprintf(s.ifs[s.nifs++], sizeof(s.ifs[0]), "%s", t);
        }
        free(list);
    }
    bufs = calloc((size_t) window, sizeof(*bufs));
    for (int i = 0; i < window; i++) {
        bufs[i] = calloc(1, bytes);
        if (NULL == bufs[i]) {
            fprintf(stderr, "dr2_stream: out of memory for %d buffers of %zu bytes\n", window, bytes);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        memset(bufs[i], 0x5a, bytes);
        memset(bufs[i], 0, HDR); /* number 0, no stop flag */
    }
    /* Connections and first-touch costs before the clock starts. */
    MPI_Sendrecv_replace(bufs[0], (int) bytes, MPI_BYTE, 1 - rank, TAG + 1, 1 - rank, TAG + 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    memset(bufs[0], 0, HDR);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    MPI_Bcast(&t0, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD); /* one start time for both */
    if (0 == rank) {
        send_stream(bufs, bytes, window, t0 + seconds);
    } else {
        printf("start %.6f\n", t0);
        fflush(stdout);
        s.t_end = t0 + seconds + 0.5;
        pthread_create(&thread, NULL, sampler_main, &s);
        bad = receive_stream(bufs, bytes, window, &s);
        pthread_join(thread, NULL);
    }
    for (int i = 0; i < window; i++) {
        free(bufs[i]);
    }
    free(bufs);
    MPI_Finalize();
    return bad;
}
