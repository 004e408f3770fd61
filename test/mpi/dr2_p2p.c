/*
 * Point-to-point semantics over pml/dr2 (run with --mca pml dr2): blocking and
 * non-blocking send/recv from 0 bytes to 16 MiB (eager and rendezvous), ordering across
 * protocols, ANY_SOURCE/ANY_TAG, probe/iprobe, mprobe/improbe with mrecv/imrecv, cancel of
 * receives, persistent requests, synchronous and buffered sends, derived datatypes on
 * either side, truncation, self messages. Every byte is checked against a pattern that
 * depends on (sender, tag, position), so a misplaced or mismatched message shows.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

static unsigned char pattern(int src, int tag, size_t i)
{
    return (unsigned char) mt_hash64(((uint64_t) src << 48) ^ ((uint64_t) (unsigned) tag << 32) ^ i);
}

static void fill(unsigned char *buf, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = pattern(src, tag, i);
    }
}

/* Number of bytes of buf[0..n) that differ from the pattern. */
static size_t check(const unsigned char *buf, size_t n, int src, int tag)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += buf[i] != pattern(src, tag, i);
    }
    return bad;
}

static const size_t sizes[] = {0, 1, 7, 64, 1000, 4095, 4096, 16383, 16384, 16385, 32768,
                               65536, 100000, 262144, 1048576, 4194304, 16777216};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Pairs (0,1), (2,3), ...; an odd last rank talks to itself. */
static int partner(void)
{
    int p = mt_rank ^ 1;
    return p < mt_size ? p : mt_rank;
}

static void test_blocking(void)
{
    int peer = partner();
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = sizes[s];
        unsigned char *sbuf = malloc(n + 1), *rbuf = malloc(n + 1);
        MPI_Status st;
        int count, tag = 100 + (int) s;
        fill(sbuf, n, mt_rank, tag);
        memset(rbuf, 0, n + 1);
        if (peer == mt_rank) {
            MPI_Sendrecv(sbuf, (int) n, MPI_BYTE, peer, tag, rbuf, (int) n, MPI_BYTE, peer, tag,
                         MPI_COMM_WORLD, &st);
        } else if (mt_rank < peer) {
            MPI_Send(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            MPI_Send(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == (int) n, "blocking %zu bytes: count %d", n, count);
        MT_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag, "blocking %zu: status %d/%d", n,
                 st.MPI_SOURCE, st.MPI_TAG);
        MT_CHECK(0 == check(rbuf, n, peer, tag), "blocking %zu bytes: %zu bytes wrong", n,
                 check(rbuf, n, peer, tag));
        free(sbuf);
        free(rbuf);
    }
}

/* Many messages in flight both ways, sizes alternating between eager and rendezvous, all
 * with the same tag: they must match in the order they were sent. */
static void test_nonblocking_order(void)
{
    enum { N = 40 };
    int peer = partner();
    MPI_Request reqs[2 * N];
    unsigned char *sbuf[N], *rbuf[N];
    size_t len[N];

    for (int i = 0; i < N; i++) {
        len[i] = (i % 3 == 0) ? 70000 + i : (i % 3 == 1) ? (size_t) i : 5000 + 13 * i;
        sbuf[i] = malloc(len[i] + 1);
        rbuf[i] = malloc(len[i] + 1);
        fill(sbuf[i], len[i], mt_rank, 7 + i); /* pattern by index, tag on the wire is 7 */
        memset(rbuf[i], 0, len[i]);
    }
    for (int i = 0; i < N; i++) {
        MPI_Irecv(rbuf[i], (int) len[i], MPI_BYTE, peer, 7, MPI_COMM_WORLD, &reqs[i]);
    }
    for (int i = 0; i < N; i++) {
        MPI_Isend(sbuf[i], (int) len[i], MPI_BYTE, peer, 7, MPI_COMM_WORLD, &reqs[N + i]);
    }
    MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++) {
        MT_CHECK(0 == check(rbuf[i], len[i], peer, 7 + i), "ordering: message %d (%zu bytes) "
                 "out of order or damaged", i, len[i]);
        free(sbuf[i]);
        free(rbuf[i]);
    }
}

/* Everyone sends to rank 0 with its own tag; rank 0 receives with wildcards. Unexpected
 * first (everyone sends before rank 0 posts), then posted. */
static void test_wildcards(void)
{
    int tag_base = 300;
    for (int round = 0; round < 2; round++) {
        size_t n = round ? 50000 : 300;
        if (0 == mt_rank) {
            int seen = 0;
            unsigned char *buf = malloc(n);
            if (0 == round) {
                MPI_Barrier(MPI_COMM_WORLD); /* all sent (eager) before we look */
            }
            for (int i = 1; i < mt_size; i++) {
                MPI_Status st;
                int count;
                MPI_Recv(buf, (int) n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                MT_CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < mt_size, "wildcard source %d",
                         st.MPI_SOURCE);
                MT_CHECK(st.MPI_TAG == tag_base + st.MPI_SOURCE, "wildcard tag %d from %d",
                         st.MPI_TAG, st.MPI_SOURCE);
                MT_CHECK(count == (int) n, "wildcard count %d", count);
                MT_CHECK(0 == check(buf, n, st.MPI_SOURCE, st.MPI_TAG), "wildcard data from %d",
                         st.MPI_SOURCE);
                seen |= 1 << (st.MPI_SOURCE % 30);
            }
            free(buf);
        } else {
            unsigned char *buf = malloc(n);
            fill(buf, n, mt_rank, tag_base + mt_rank);
            MPI_Send(buf, (int) n, MPI_BYTE, 0, tag_base + mt_rank, MPI_COMM_WORLD);
            if (0 == round) {
                MPI_Barrier(MPI_COMM_WORLD);
            }
            free(buf);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_probes(void)
{
    int peer = partner();
    if (peer == mt_rank) {
        return;
    }
    if (mt_rank < peer) {
        for (int i = 0; i < 4; i++) {
            size_t n = i % 2 ? 200000 : 1234;
            unsigned char *buf = malloc(n);
            fill(buf, n, mt_rank, 500 + i);
            MPI_Send(buf, (int) n, MPI_BYTE, peer, 500 + i, MPI_COMM_WORLD);
            free(buf);
        }
    } else {
        MPI_Status st;
        MPI_Message msg;
        MPI_Request req;
        int flag = 0, count;
        unsigned char *buf;

        /* probe (blocking), then receive what it described */
        MPI_Probe(peer, 500, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(1234 == count && 500 == st.MPI_TAG, "probe: count %d tag %d", count, st.MPI_TAG);
        buf = malloc(count);
        MPI_Recv(buf, count, MPI_BYTE, peer, 500, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MT_CHECK(0 == check(buf, count, peer, 500), "probe: data");
        free(buf);

        /* iprobe loop with ANY_TAG: the next message in order is 501 (rendezvous) */
        while (!flag) {
            MPI_Iprobe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(200000 == count && 501 == st.MPI_TAG, "iprobe: count %d tag %d", count, st.MPI_TAG);
        /* matched probe: the message is ours alone */
        MPI_Mprobe(peer, 501, MPI_COMM_WORLD, &msg, &st);
        buf = malloc(200000);
        MPI_Mrecv(buf, 200000, MPI_BYTE, &msg, &st);
        MT_CHECK(MPI_MESSAGE_NULL == msg, "mrecv left the message handle set");
        MT_CHECK(0 == check(buf, 200000, peer, 501), "mprobe/mrecv: data");
        free(buf);

        flag = 0;
        while (!flag) {
            MPI_Improbe(peer, 502, MPI_COMM_WORLD, &flag, &msg, &st);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        buf = malloc(count);
        MPI_Imrecv(buf, count, MPI_BYTE, &msg, &req);
        MPI_Wait(&req, &st);
        MT_CHECK(1234 == count && 0 == check(buf, count, peer, 502), "improbe/imrecv: data");
        free(buf);

        flag = 0;
        while (!flag) {
            MPI_Improbe(MPI_ANY_SOURCE, 503, MPI_COMM_WORLD, &flag, &msg, &st);
        }
        buf = malloc(200000);
        MPI_Imrecv(buf, 200000, MPI_BYTE, &msg, &req);
        MPI_Wait(&req, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(200000 == count && 0 == check(buf, 200000, peer, 503), "improbe/imrecv rndv: data");
        free(buf);
    }
}

/* Single-completion calls (recv, probe, iprobe, mprobe, improbe, mrecv) leave the status's
 * MPI_ERROR as it was: they return their error (MPI 4.0 section 3.2.5). MPICH's
 * pt2pt/mprobe checks it; dr2 used to write MPI_SUCCESS there. */
static void test_status_error_untouched(void)
{
    int peer = partner();
    if (peer == mt_rank) {
        return;
    }
    if (mt_rank < peer) {
        for (int i = 0; i < 6; i++) {
            size_t n = i % 2 ? 200000 : 100;
            unsigned char *buf = malloc(n);
            fill(buf, n, mt_rank, 550 + i);
            MPI_Send(buf, (int) n, MPI_BYTE, peer, 550 + i, MPI_COMM_WORLD);
            free(buf);
        }
    } else {
        unsigned char *buf = malloc(200000);
        MPI_Status st;
        MPI_Message msg;
        int flag = 0;
        /* 550, 551: probe then recv */
        for (int i = 0; i < 2; i++) {
            st.MPI_ERROR = MPI_ERR_DIMS;
            MPI_Probe(peer, 550 + i, MPI_COMM_WORLD, &st);
            MT_CHECK(MPI_ERR_DIMS == st.MPI_ERROR, "probe %d set MPI_ERROR to %d", i, st.MPI_ERROR);
            st.MPI_ERROR = MPI_ERR_TOPOLOGY;
            MPI_Recv(buf, 200000, MPI_BYTE, peer, 550 + i, MPI_COMM_WORLD, &st);
            MT_CHECK(MPI_ERR_TOPOLOGY == st.MPI_ERROR, "recv %d set MPI_ERROR to %d", i, st.MPI_ERROR);
        }
        /* 552, 553: iprobe, then mprobe + mrecv */
        for (int i = 2; i < 4; i++) {
            flag = 0;
            while (!flag) {
                st.MPI_ERROR = MPI_ERR_DIMS;
                MPI_Iprobe(peer, 550 + i, MPI_COMM_WORLD, &flag, &st);
            }
            MT_CHECK(MPI_ERR_DIMS == st.MPI_ERROR, "iprobe %d set MPI_ERROR to %d", i, st.MPI_ERROR);
            st.MPI_ERROR = MPI_ERR_DIMS;
            MPI_Mprobe(peer, 550 + i, MPI_COMM_WORLD, &msg, &st);
            MT_CHECK(MPI_ERR_DIMS == st.MPI_ERROR, "mprobe %d set MPI_ERROR to %d", i, st.MPI_ERROR);
            st.MPI_ERROR = MPI_ERR_TOPOLOGY;
            MPI_Mrecv(buf, 200000, MPI_BYTE, &msg, &st);
            MT_CHECK(MPI_ERR_TOPOLOGY == st.MPI_ERROR, "mrecv %d set MPI_ERROR to %d", i, st.MPI_ERROR);
        }
        /* 554, 555: improbe + mrecv */
        for (int i = 4; i < 6; i++) {
            flag = 0;
            while (!flag) {
                st.MPI_ERROR = MPI_ERR_DIMS;
                MPI_Improbe(peer, 550 + i, MPI_COMM_WORLD, &flag, &msg, &st);
            }
            MT_CHECK(MPI_ERR_DIMS == st.MPI_ERROR, "improbe %d set MPI_ERROR to %d", i, st.MPI_ERROR);
            st.MPI_ERROR = MPI_ERR_TOPOLOGY;
            MPI_Mrecv(buf, 200000, MPI_BYTE, &msg, &st);
            MT_CHECK(MPI_ERR_TOPOLOGY == st.MPI_ERROR, "mrecv %d set MPI_ERROR to %d", i, st.MPI_ERROR);
            MT_CHECK(0 == check(buf, i % 2 ? 200000 : 100, peer, 550 + i), "mrecv %d: data", i);
        }
        free(buf);
    }
}

static void test_cancel(void)
{
    MPI_Request req;
    MPI_Status st;
    int cancelled = 0;
    char buf[16];

    MPI_Irecv(buf, 16, MPI_CHAR, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &cancelled);
    MT_CHECK(cancelled, "a posted receive was not cancelled");

    /* a cancelled receive must not take a later message */
    int peer = partner();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Irecv(buf, 16, MPI_CHAR, peer, 998, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &cancelled);
    MT_CHECK(cancelled, "second receive not cancelled");
    MPI_Barrier(MPI_COMM_WORLD); /* nobody sends 998 before everyone cancelled */
    if (peer != mt_rank) {
        char out[16] = "after-cancel";
        MPI_Sendrecv(out, 16, MPI_CHAR, peer, 998, buf, 16, MPI_CHAR, peer, 998, MPI_COMM_WORLD, &st);
        MT_CHECK(0 == strcmp(buf, "after-cancel"), "message after a cancel went astray");
    }
}

static void test_persistent(void)
{
    int peer = partner();
    enum { ROUNDS = 20 };
    size_t n = 30000;
    unsigned char *sbuf = malloc(n), *rbuf = malloc(n);
    MPI_Request reqs[2];

    MPI_Send_init(sbuf, (int) n, MPI_BYTE, peer, 600, MPI_COMM_WORLD, &reqs[0]);
    MPI_Recv_init(rbuf, (int) n, MPI_BYTE, peer, 600, MPI_COMM_WORLD, &reqs[1]);
    for (int r = 0; r < ROUNDS; r++) {
        size_t bad;
        fill(sbuf, n, mt_rank, 600 + r);
        memset(rbuf, 0, n);
        MPI_Startall(2, reqs);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        bad = check(rbuf, n, peer, 600 + r);
        MT_CHECK(0 == bad, "persistent round %d: %zu bytes wrong", r, bad);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    /* a persistent rendezvous-size send too */
    free(sbuf);
    free(rbuf);
    n = 3 << 20;
    sbuf = malloc(n);
    rbuf = malloc(n);
    MPI_Send_init(sbuf, (int) n, MPI_BYTE, peer, 601, MPI_COMM_WORLD, &reqs[0]);
    MPI_Recv_init(rbuf, (int) n, MPI_BYTE, peer, 601, MPI_COMM_WORLD, &reqs[1]);
    for (int r = 0; r < 3; r++) {
        fill(sbuf, n, mt_rank, 700 + r);
        MPI_Startall(2, reqs);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        MT_CHECK(0 == check(rbuf, n, peer, 700 + r), "persistent rendezvous round %d", r);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    free(sbuf);
    free(rbuf);
}

/* A synchronous send completes only once the receive has matched it. */
static void test_ssend(void)
{
    int peer = partner();
    if (peer == mt_rank) {
        return;
    }
    for (int sz = 0; sz < 2; sz++) {
        size_t n = sz ? 100000 : 10;
        unsigned char *buf = malloc(n);
        if (mt_rank < peer) {
            MPI_Request req;
            int flag = 0;
            double t0 = MPI_Wtime();
            fill(buf, n, mt_rank, 800 + sz);
            MPI_Issend(buf, (int) n, MPI_BYTE, peer, 800 + sz, MPI_COMM_WORLD, &req);
            while (MPI_Wtime() - t0 < 0.2) {
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                MT_CHECK(!flag, "Issend of %zu bytes completed before the receive was posted", n);
                if (flag) {
                    break;
                }
                usleep(1000);
            }
            MPI_Send(NULL, 0, MPI_BYTE, peer, 899, MPI_COMM_WORLD); /* now post it */
            if (!flag) {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, peer, 899, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(buf, (int) n, MPI_BYTE, peer, 800 + sz, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MT_CHECK(0 == check(buf, n, peer, 800 + sz), "ssend data (%zu bytes)", n);
        }
        free(buf);
    }
    /* plain blocking Ssend both ways */
    int v = mt_rank, w = -1;
    if (mt_rank < peer) {
        MPI_Ssend(&v, 1, MPI_INT, peer, 810, MPI_COMM_WORLD);
        MPI_Recv(&w, 1, MPI_INT, peer, 810, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&w, 1, MPI_INT, peer, 810, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ssend(&v, 1, MPI_INT, peer, 810, MPI_COMM_WORLD);
    }
    MT_CHECK(w == peer, "Ssend value %d", w);
}

static void test_bsend(void)
{
    int peer = partner();
    int bufsize = 4 * (1 << 20) + 10 * MPI_BSEND_OVERHEAD;
    void *attached = malloc(bufsize), *detached;
    size_t sizes_b[] = {0, 100, 20000, 1 << 20};
    unsigned char *rbuf = malloc(1 << 20);

    MPI_Buffer_attach(attached, bufsize);
    for (int i = 0; i < 4; i++) {
        size_t n = sizes_b[i];
        unsigned char *sbuf = malloc(n + 1);
        fill(sbuf, n, mt_rank, 900 + i);
        MPI_Bsend(sbuf, (int) n, MPI_BYTE, peer, 900 + i, MPI_COMM_WORLD);
        memset(sbuf, 0xEE, n); /* the buffered copy must not change */
        free(sbuf);
    }
    for (int i = 0; i < 4; i++) {
        size_t n = sizes_b[i];
        MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, 900 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MT_CHECK(0 == check(rbuf, n, peer, 900 + i), "bsend %zu bytes", n);
    }
    MPI_Buffer_detach(&detached, &bufsize);
    free(attached);
    free(rbuf);
}

static void test_datatypes(void)
{
    int peer = partner();
    /* vector of doubles (every other one) -> contiguous, both eager and rendezvous */
    for (int big = 0; big < 2; big++) {
        int count = big ? 300000 : 500;
        MPI_Datatype vec;
        double *strided = malloc(sizeof(double) * 2 * count);
        double *contig = malloc(sizeof(double) * count);
        int bad = 0;

        MPI_Type_vector(count, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < 2 * count; i++) {
            strided[i] = (i % 2) ? -1.0 : mt_rank * 1e6 + i / 2;
        }
        MPI_Sendrecv(strided, 1, vec, peer, 1000 + big, contig, count, MPI_DOUBLE, peer, 1000 + big,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; i++) {
            bad += contig[i] != peer * 1e6 + i;
        }
        MT_CHECK(0 == bad, "vector->contiguous (%d doubles): %d wrong", count, bad);

        /* contiguous -> vector */
        for (int i = 0; i < count; i++) {
            contig[i] = mt_rank * 1e6 + i;
        }
        for (int i = 0; i < 2 * count; i++) {
            strided[i] = -7.0;
        }
        MPI_Sendrecv(contig, count, MPI_DOUBLE, peer, 1010 + big, strided, 1, vec, peer, 1010 + big,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = 0;
        for (int i = 0; i < 2 * count; i++) {
            bad += strided[i] != ((i % 2) ? -7.0 : peer * 1e6 + i / 2);
        }
        MT_CHECK(0 == bad, "contiguous->vector (%d doubles): %d wrong (gaps must stay)", count, bad);
        MPI_Type_free(&vec);
        free(strided);
        free(contig);
    }
    /* a struct with holes, many elements, vector on both sides */
    {
        typedef struct {
            char c;
            double d;
            int i[3];
        } item_t;
        int blocklens[3] = {1, 1, 3};
        MPI_Aint displs[3] = {offsetof(item_t, c), offsetof(item_t, d), offsetof(item_t, i)};
        MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, st, resized;
        int n = 20000, bad = 0;
        item_t *out = calloc(n, sizeof(item_t)), *in = calloc(n, sizeof(item_t));

        MPI_Type_create_struct(3, blocklens, displs, types, &st);
        MPI_Type_create_resized(st, 0, sizeof(item_t), &resized);
        MPI_Type_commit(&resized);
        for (int k = 0; k < n; k++) {
            out[k].c = (char) (k + mt_rank);
            out[k].d = k * 0.5 + mt_rank;
            out[k].i[0] = k;
            out[k].i[1] = -k;
            out[k].i[2] = mt_rank;
        }
        MPI_Sendrecv(out, n, resized, peer, 1020, in, n, resized, peer, 1020, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (int k = 0; k < n; k++) {
            bad += in[k].c != (char) (k + peer) || in[k].d != k * 0.5 + peer || in[k].i[0] != k
                   || in[k].i[1] != -k || in[k].i[2] != peer;
        }
        MT_CHECK(0 == bad, "struct type: %d of %d elements wrong", bad, n);
        MPI_Type_free(&resized);
        MPI_Type_free(&st);
        free(out);
        free(in);
    }
}

static void test_truncate(void)
{
    int peer = partner();
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int big = 0; big < 2; big++) {
        size_t n = big ? 100000 : 100;
        unsigned char *sbuf = malloc(n), *rbuf = malloc(n);
        MPI_Request req;
        MPI_Status st;
        int rc, count, eclass;
        fill(sbuf, n, mt_rank, 1100 + big);
        memset(rbuf, 0, n);
        MPI_Irecv(rbuf, (int) n / 2, MPI_BYTE, peer, 1100 + big, comm, &req);
        MPI_Send(sbuf, (int) n, MPI_BYTE, peer, 1100 + big, comm);
        rc = MPI_Wait(&req, &st);
        MPI_Error_class(MPI_SUCCESS != rc ? rc : st.MPI_ERROR, &eclass);
        MT_CHECK(MPI_ERR_TRUNCATE == eclass, "truncated receive of %zu bytes: error class %d", n,
                 eclass);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == (int) n / 2, "truncated count %d", count);
        MT_CHECK(0 == check(rbuf, n / 2, peer, 1100 + big), "truncated data");
        MT_CHECK(0 == rbuf[n / 2], "truncated receive wrote past the buffer");
        free(sbuf);
        free(rbuf);
    }
    MPI_Comm_free(&comm);
}

/* Messages on a new communicator right after its creation, and on a split one. */
static void test_communicators(void)
{
    MPI_Comm half;
    int hrank, hsize, v, sum = 0;
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    v = hrank + 1;
    for (int r = 0; r < hsize; r++) {
        int x = v;
        MPI_Bcast(&x, 1, MPI_INT, r, half); /* built on our point-to-point */
        sum += x;
    }
    MT_CHECK(sum == hsize * (hsize + 1) / 2, "bcast over split communicator: %d", sum);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "dr2_p2p");
    test_blocking();
    test_nonblocking_order();
    test_wildcards();
    test_probes();
    test_status_error_untouched();
    test_cancel();
    test_persistent();
    test_ssend();
    test_bsend();
    test_datatypes();
    test_truncate();
    test_communicators();
    return mt_finish();
}
