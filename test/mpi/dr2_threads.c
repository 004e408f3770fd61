/*
 * Point-to-point under MPI_THREAD_MULTIPLE (run with --mca pml dr2, and with ob1 as a
 * reference): several threads per rank send and receive at the same time between every
 * pair of ranks, each phase with its own tags, every byte checked:
 *   - blocking MPI_Send/MPI_Recv and MPI_Sendrecv, eager and rendezvous sizes;
 *   - non-blocking Isend/Irecv to and from every peer, completed with Waitall/Testsome;
 *   - MPI_ANY_SOURCE receives on a tag of the thread's own;
 *   - one tag shared by all threads: every thread's ANY_SOURCE receives compete for the
 *     same messages, which must each arrive exactly once and intact;
 *   - probe + recv, mprobe + mrecv and improbe + imrecv from ANY_SOURCE;
 *   - ANY_SOURCE + ANY_TAG on a communicator of the thread's own (a dup per thread).
 * Usage: dr2_threads [ROUNDS [THREADS [expect-faults]]] (default 6 rounds, 4 threads).
 * With "expect-faults" (a run with pml_dr2_inject_*) the test also requires that faults
 * were injected and fragments resent (pml/dr2's MPI_T counters moved).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

static int rounds = 6, nthreads = 4;
static MPI_Comm *thread_comms;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* MT_CHECK is not thread-safe (a counter and printf): serialise failures. */
#define TCHECK(cond, ...)                                      \
    do {                                                       \
        if (!(cond)) {                                         \
            pthread_mutex_lock(&fail_lock);                    \
            mt_fail(__FILE__, __LINE__, __VA_ARGS__);          \
            pthread_mutex_unlock(&fail_lock);                  \
        }                                                      \
    } while (0)

/* Sizes: eager (pml_dr2_eager_limit is 16 KiB by default on sm, 64 KiB on tcp; ob1's sm
 * is 4 KiB) and rendezvous, with several fragments (32 KiB on sm, 128 KiB on tcp). */
static const size_t sizes[] = {0, 1, 100, 4000, 16384, 16385, 70000, 300000, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static size_t pick_size(int t, int round, int salt)
{
    return sizes[(size_t) (t * 7 + round * 3 + salt) % NSIZES];
}

/* The bytes of a message depend on (src, tag, round, salt): a message that lands in the
 * wrong receive, or a fragment in the wrong place, shows. One hash per 8 bytes. */
static uint64_t msg_seed(int src, int tag, int round, int salt)
{
    return mt_hash64(((uint64_t) src << 48) ^ ((uint64_t) (unsigned) tag << 24)
                     ^ ((uint64_t) round << 8) ^ (uint64_t) salt);
}

static void fill(unsigned char *buf, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = mt_hash64(seed + i);
        memcpy(buf + i, &w, n - i < 8 ? n - i : 8);
    }
}

static size_t count_bad(const unsigned char *buf, size_t n, uint64_t seed)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = mt_hash64(seed + i);
        bad += 0 != memcmp(buf + i, &w, n - i < 8 ? n - i : 8);
    }
    return bad;
}

/* Tags: a phase, a thread and a round; thread t of every rank talks to thread t of the
 * others, except in the shared-tag phase. */
enum { PH_BLOCK, PH_SENDRECV, PH_NB, PH_ANYSRC, PH_PROBE, PH_MPROBE, PH_IMPROBE, PH_NPHASES };
#define SHARED_TAG 30000
static int tag_of(int phase, int t) { return 1000 + phase * 100 + t; }

static unsigned char *xmalloc(size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* An array of n (a rank count) elements, zeroed. */
static void *xcalloc(int n, size_t size)
{
    void *p = calloc(n > 0 ? (size_t) n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Send to `peer` the message (me, tag, round, salt) of size n, blocking or not. */
static void send_msg(int peer, int tag, int round, int salt, size_t n, MPI_Comm comm)
{
    unsigned char *b = xmalloc(n);
    fill(b, n, msg_seed(mt_rank, tag, round, salt));
    MPI_Send(b, (int) n, MPI_BYTE, peer, tag, comm);
    free(b);
}

/* Receive the message (src, tag, round, salt) of size n and check it. */
static void recv_check(int src, int tag, int round, int salt, size_t n, MPI_Comm comm,
                       const char *what, int t)
{
    unsigned char *b = xmalloc(n + 16);
    MPI_Status st;
    int cnt;
    MPI_Recv(b, (int) n + 16, MPI_BYTE, src, tag, comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    TCHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag, "%s thread %d round %d: status %d/%d, want %d/%d",
           what, t, round, st.MPI_SOURCE, st.MPI_TAG, src, tag);
    TCHECK((size_t) cnt == n, "%s thread %d round %d from %d: %d bytes, want %zu", what, t, round,
           src, cnt, n);
    size_t bad = count_bad(b, (size_t) cnt < n ? (size_t) cnt : n, msg_seed(src, tag, round, salt));
    TCHECK(0 == bad, "%s thread %d round %d from %d: %zu bad words of %zu bytes", what, t, round,
           src, bad, n);
    free(b);
}

/* Blocking send/recv in rank order (the lower rank sends first), then MPI_Sendrecv. */
static void phase_blocking(int t, int round)
{
    int tag = tag_of(PH_BLOCK, t);
    for (int p = 0; p < mt_size; p++) {
        if (p == mt_rank) continue;
        size_t n = pick_size(t, round, p + mt_rank);
        if (mt_rank < p) {
            send_msg(p, tag, round, 0, n, MPI_COMM_WORLD);
            recv_check(p, tag, round, 0, n, MPI_COMM_WORLD, "blocking", t);
        } else {
            recv_check(p, tag, round, 0, n, MPI_COMM_WORLD, "blocking", t);
            send_msg(p, tag, round, 0, n, MPI_COMM_WORLD);
        }
    }
    tag = tag_of(PH_SENDRECV, t);
    for (int d = 1; d < mt_size; d++) {
        int to = (mt_rank + d) % mt_size, from = (mt_rank - d + mt_size) % mt_size;
        size_t ns = pick_size(t, round, d + 1), nr = ns; /* same d on both sides */
        unsigned char *sb = xmalloc(ns), *rb = xmalloc(nr);
        MPI_Status st;
        fill(sb, ns, msg_seed(mt_rank, tag, round, d));
        MPI_Sendrecv(sb, (int) ns, MPI_BYTE, to, tag, rb, (int) nr, MPI_BYTE, from, tag,
                     MPI_COMM_WORLD, &st);
        size_t bad = count_bad(rb, nr, msg_seed(from, tag, round, d));
        TCHECK(0 == bad, "sendrecv thread %d round %d from %d: %zu bad words", t, round, from, bad);
        free(sb);
        free(rb);
    }
}

/* Irecv from and Isend to every peer at once; completed with Waitall or a Testsome loop. */
static void phase_nonblocking(int t, int round)
{
    int tag = tag_of(PH_NB, t), np = mt_size;
    MPI_Request *rq = xcalloc(2 * np, sizeof(*rq));
    unsigned char **rb = xcalloc(np, sizeof(*rb)), **sb = xcalloc(np, sizeof(*sb));
    size_t *rn = xcalloc(np, sizeof(*rn));
    int nreq = 0;
    for (int p = 0; p < np; p++) {
        /* the size a peer sends me depends on (peer, me): both sides agree */
        rn[p] = pick_size(t, round, 3 * p + mt_rank);
        rb[p] = xmalloc(rn[p]);
        MPI_Irecv(rb[p], (int) rn[p], MPI_BYTE, p, tag, MPI_COMM_WORLD, &rq[nreq++]);
    }
    for (int p = 0; p < np; p++) {
        size_t n = pick_size(t, round, 3 * mt_rank + p);
        sb[p] = xmalloc(n);
        fill(sb[p], n, msg_seed(mt_rank, tag, round, p));
        if (round & 1) {
            MPI_Issend(sb[p], (int) n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &rq[nreq++]);
        } else {
            MPI_Isend(sb[p], (int) n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &rq[nreq++]);
        }
    }
    if (t & 1) {
        int left = nreq, outcount, *idx = xcalloc(nreq, sizeof(int));
        while (left > 0) {
            MPI_Testsome(nreq, rq, &outcount, idx, MPI_STATUSES_IGNORE);
            if (outcount != MPI_UNDEFINED) left -= outcount;
        }
        free(idx);
    } else {
        MPI_Waitall(nreq, rq, MPI_STATUSES_IGNORE);
    }
    for (int p = 0; p < np; p++) {
        size_t bad = count_bad(rb[p], rn[p], msg_seed(p, tag, round, mt_rank));
        TCHECK(0 == bad, "nonblocking thread %d round %d from %d: %zu bad words of %zu bytes", t,
               round, p, bad, rn[p]);
        free(rb[p]);
        free(sb[p]);
    }
    free(rq);
    free(rb);
    free(sb);
    free(rn);
}

/* Receives from MPI_ANY_SOURCE on the thread's own tag: one message from each rank
 * (itself included), told apart by the status. */
static void phase_anysource(int t, int round)
{
    int tag = tag_of(PH_ANYSRC, t), np = mt_size;
    MPI_Request *sr = xcalloc(np, sizeof(*sr));
    unsigned char **sb = xcalloc(np, sizeof(*sb));
    for (int p = 0; p < np; p++) {
        size_t n = pick_size(t, round, 5 * mt_rank + 2);
        sb[p] = xmalloc(n);
        fill(sb[p], n, msg_seed(mt_rank, tag, round, 7));
        MPI_Isend(sb[p], (int) n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &sr[p]);
    }
    int *seen = xcalloc(np, sizeof(int));
    size_t cap = 1 << 20;
    unsigned char *b = xmalloc(cap);
    for (int i = 0; i < np; i++) {
        MPI_Status st;
        int cnt;
        MPI_Recv(b, (int) cap, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        int src = st.MPI_SOURCE;
        if (src < 0 || src >= np) {
            TCHECK(0, "anysource thread %d round %d: source %d", t, round, src);
            continue;
        }
        seen[src]++;
        size_t want = pick_size(t, round, 5 * src + 2);
        TCHECK((size_t) cnt == want, "anysource thread %d round %d from %d: %d bytes, want %zu", t,
               round, src, cnt, want);
        size_t bad = count_bad(b, (size_t) cnt < want ? (size_t) cnt : want, msg_seed(src, tag, round, 7));
        TCHECK(0 == bad, "anysource thread %d round %d from %d: %zu bad words", t, round, src, bad);
    }
    for (int p = 0; p < np; p++) {
        TCHECK(1 == seen[p], "anysource thread %d round %d: %d messages from %d", t, round, seen[p], p);
    }
    MPI_Waitall(np, sr, MPI_STATUSES_IGNORE);
    for (int p = 0; p < np; p++) free(sb[p]);
    free(sb);
    free(sr);
    free(seen);
    free(b);
}

/* Probe/mprobe/improbe from ANY_SOURCE on the thread's own tags: one message from every
 * rank per flavour, received with recv / mrecv / imrecv into a buffer of the probed size. */
static void phase_probe(int t, int round)
{
    int np = mt_size;
    for (int ph = PH_PROBE; ph <= PH_IMPROBE; ph++) {
        int tag = tag_of(ph, t);
        MPI_Request *sr = xcalloc(np, sizeof(*sr));
        unsigned char **sb = xcalloc(np, sizeof(*sb));
        for (int p = 0; p < np; p++) {
            size_t n = pick_size(t, round, 11 * mt_rank + ph);
            sb[p] = xmalloc(n);
            fill(sb[p], n, msg_seed(mt_rank, tag, round, ph));
            MPI_Isend(sb[p], (int) n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &sr[p]);
        }
        int *seen = xcalloc(np, sizeof(int));
        for (int i = 0; i < np; i++) {
            MPI_Status st;
            MPI_Message msg = MPI_MESSAGE_NULL;
            int cnt, flag = 0;
            if (PH_PROBE == ph) {
                MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
            } else if (PH_MPROBE == ph) {
                MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &msg, &st);
            } else {
                while (!flag) {
                    MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &msg, &st);
                }
            }
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            int src = st.MPI_SOURCE;
            if (src < 0 || src >= np || st.MPI_TAG != tag) {
                TCHECK(0, "probe %d thread %d round %d: status %d/%d", ph, t, round, src, st.MPI_TAG);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            size_t want = pick_size(t, round, 11 * src + ph);
            TCHECK((size_t) cnt == want, "probe %d thread %d round %d from %d: probed %d bytes, want %zu",
                   ph, t, round, src, cnt, want);
            unsigned char *b = xmalloc((size_t) cnt);
            MPI_Status rst;
            if (PH_PROBE == ph) {
                /* only this thread receives (src, tag): the probed message is the one received */
                MPI_Recv(b, cnt, MPI_BYTE, src, tag, MPI_COMM_WORLD, &rst);
            } else if (PH_MPROBE == ph) {
                MPI_Mrecv(b, cnt, MPI_BYTE, &msg, &rst);
            } else {
                MPI_Request r;
                MPI_Imrecv(b, cnt, MPI_BYTE, &msg, &r);
                MPI_Wait(&r, &rst);
            }
            int rcnt;
            MPI_Get_count(&rst, MPI_BYTE, &rcnt);
            TCHECK(rst.MPI_SOURCE == src && rcnt == cnt, "probe %d thread %d round %d: received %d bytes from %d after probing %d from %d",
                   ph, t, round, rcnt, rst.MPI_SOURCE, cnt, src);
            size_t bad = count_bad(b, (size_t) cnt < want ? (size_t) cnt : want, msg_seed(src, tag, round, ph));
            TCHECK(0 == bad, "probe %d thread %d round %d from %d: %zu bad words", ph, t, round, src, bad);
            seen[src]++;
            free(b);
        }
        for (int p = 0; p < np; p++) {
            TCHECK(1 == seen[p], "probe %d thread %d round %d: %d messages from %d", ph, t, round,
                   seen[p], p);
        }
        MPI_Waitall(np, sr, MPI_STATUSES_IGNORE);
        for (int p = 0; p < np; p++) free(sb[p]);
        free(sb);
        free(sr);
        free(seen);
    }
}

/* ANY_SOURCE + ANY_TAG on the thread's own communicator: nothing of other threads can
 * match, so exactly the np messages sent to this thread arrive, in any order. */
static void phase_anytag(int t, int round)
{
    MPI_Comm comm = thread_comms[t];
    int np = mt_size;
    MPI_Request *sr = xcalloc(np, sizeof(*sr));
    unsigned char **sb = xcalloc(np, sizeof(*sb));
    for (int p = 0; p < np; p++) {
        int tag = 50 + p; /* a tag that names the receiver: checked below */
        size_t n = pick_size(t, round, 13 * mt_rank + p);
        sb[p] = xmalloc(n);
        fill(sb[p], n, msg_seed(mt_rank, tag, round, 13));
        MPI_Isend(sb[p], (int) n, MPI_BYTE, p, tag, comm, &sr[p]);
    }
    int *seen = xcalloc(np, sizeof(int));
    unsigned char *b = xmalloc(1 << 20);
    for (int i = 0; i < np; i++) {
        MPI_Status st;
        int cnt;
        MPI_Recv(b, 1 << 20, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        int src = st.MPI_SOURCE;
        if (src < 0 || src >= np || st.MPI_TAG != 50 + mt_rank) {
            TCHECK(0, "anytag thread %d round %d: status %d/%d", t, round, src, st.MPI_TAG);
            continue;
        }
        size_t want = pick_size(t, round, 13 * src + mt_rank);
        seen[src]++;
        TCHECK((size_t) cnt == want, "anytag thread %d round %d from %d: %d bytes, want %zu", t,
               round, src, cnt, want);
        size_t bad = count_bad(b, (size_t) cnt < want ? (size_t) cnt : want,
                               msg_seed(src, st.MPI_TAG, round, 13));
        TCHECK(0 == bad, "anytag thread %d round %d from %d: %zu bad words", t, round, src, bad);
    }
    for (int p = 0; p < np; p++) {
        TCHECK(1 == seen[p], "anytag thread %d round %d: %d messages from %d", t, round, seen[p], p);
    }
    MPI_Waitall(np, sr, MPI_STATUSES_IGNORE);
    for (int p = 0; p < np; p++) free(sb[p]);
    free(sb);
    free(sr);
    free(seen);
    free(b);
}

/* One tag for all threads of all ranks: each thread sends one message to every rank and
 * posts as many ANY_SOURCE receives, so receives of different threads compete for the
 * same messages. Each message says who sent it (rank, thread, round) in its first bytes;
 * the counts are checked by the caller after the threads are joined. */
#define SHARED_HDR 16
static int *shared_seen; /* [round][src][thread], atomically incremented */
static void phase_shared(int t, int round)
{
    int np = mt_size;
    MPI_Request *rr = xcalloc(np, sizeof(*rr)), *sr = xcalloc(np, sizeof(*sr));
    unsigned char **rb = xcalloc(np, sizeof(*rb)), **sb = xcalloc(np, sizeof(*sb));
    size_t cap = SHARED_HDR + 300000;
    for (int i = 0; i < np; i++) {
        rb[i] = xmalloc(cap);
        MPI_Irecv(rb[i], (int) cap, MPI_BYTE, MPI_ANY_SOURCE, SHARED_TAG + round, MPI_COMM_WORLD, &rr[i]);
    }
    for (int p = 0; p < np; p++) {
        size_t n = SHARED_HDR + (pick_size(t, round, 17 * mt_rank + p) % 300000);
        int32_t hdr[4] = {mt_rank, t, round, (int32_t) n};
        sb[p] = xmalloc(n);
        fill(sb[p], n, msg_seed(mt_rank, SHARED_TAG, round, t));
        memcpy(sb[p], hdr, sizeof(hdr));
        MPI_Isend(sb[p], (int) n, MPI_BYTE, p, SHARED_TAG + round, MPI_COMM_WORLD, &sr[p]);
    }
    for (int i = 0; i < np; i++) {
        MPI_Status st;
        int idx, cnt;
        int32_t hdr[4];
        MPI_Waitany(np, rr, &idx, &st);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        memcpy(hdr, rb[idx], sizeof(hdr));
        if (cnt < SHARED_HDR || hdr[0] != st.MPI_SOURCE || hdr[1] < 0 || hdr[1] >= nthreads
            || hdr[2] != round || hdr[3] != cnt) {
            TCHECK(0, "shared thread %d round %d: header %d/%d/%d/%d, status source %d, %d bytes", t,
                   round, hdr[0], hdr[1], hdr[2], hdr[3], st.MPI_SOURCE, cnt);
            continue;
        }
        /* bytes past the header follow the pattern */
        unsigned char *want = xmalloc((size_t) cnt);
        fill(want, (size_t) cnt, msg_seed(hdr[0], SHARED_TAG, round, hdr[1]));
        TCHECK(0 == memcmp(want + SHARED_HDR, rb[idx] + SHARED_HDR, (size_t) cnt - SHARED_HDR),
               "shared thread %d round %d: message of %d thread %d corrupted", t, round, hdr[0], hdr[1]);
        free(want);
        __atomic_fetch_add(&shared_seen[(round * np + hdr[0]) * nthreads + hdr[1]], 1, __ATOMIC_RELAXED);
    }
    MPI_Waitall(np, sr, MPI_STATUSES_IGNORE);
    for (int i = 0; i < np; i++) {
        free(rb[i]);
        free(sb[i]);
    }
    free(rb);
    free(sb);
    free(rr);
    free(sr);
}

static void *thread_main(void *arg)
{
    int t = (int) (intptr_t) arg;
    for (int round = 0; round < rounds; round++) {
        phase_blocking(t, round);
        phase_nonblocking(t, round);
        phase_anysource(t, round);
        phase_probe(t, round);
        phase_anytag(t, round);
        phase_shared(t, round);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    mt_init_thread(&argc, &argv, "dr2_threads", MPI_THREAD_MULTIPLE, &provided);
    if (argc > 1) rounds = atoi(argv[1]);
    if (argc > 2) nthreads = atoi(argv[2]);
    int expect_faults = argc > 3 && 0 == strcmp(argv[3], "expect-faults");
    MT_CHECK(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    if (MPI_THREAD_MULTIPLE != provided || rounds < 1 || nthreads < 1 || nthreads > 64) {
        return mt_finish();
    }
    thread_comms = xcalloc(nthreads, sizeof(MPI_Comm));
    for (int t = 0; t < nthreads; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &thread_comms[t]);
    }
    shared_seen = calloc((size_t) rounds * mt_size * nthreads, sizeof(int));

    mt_dr2_counters_start();
    pthread_t *th = xcalloc(nthreads, sizeof(pthread_t));
    for (int t = 0; t < nthreads; t++) {
        pthread_create(&th[t], NULL, thread_main, (void *) (intptr_t) t);
    }
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
    }
    /* Shared tag: from every (rank, thread), exactly one message per round reached me. */
    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < mt_size; s++) {
            for (int t = 0; t < nthreads; t++) {
                int n = shared_seen[(r * mt_size + s) * nthreads + t];
                MT_CHECK(1 == n, "shared tag round %d: %d messages from rank %d thread %d", r, n, s, t);
            }
        }
    }
    for (int t = 0; t < nthreads; t++) {
        MPI_Comm_free(&thread_comms[t]);
    }
    free(thread_comms);
    free(shared_seen);
    free(th);
    long injected = mt_dr2_injected(), resent = mt_dr2_resent();
    long all_injected = 0, all_resent = 0;
    MPI_Reduce(&injected, &all_injected, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&resent, &all_resent, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == mt_rank) {
        printf("mpitest dr2_threads: %d threads x %d rounds per rank; faults injected %ld, "
               "fragments resent %ld (all ranks)\n", nthreads, rounds, all_injected, all_resent);
        if (expect_faults) {
            MT_CHECK(all_injected > 0 && all_resent > 0,
                     "expected injected faults and retransmissions, got %ld and %ld",
                     all_injected, all_resent);
        }
    }
    mt_dr2_counters_stop();
    return mt_finish();
}
