/*
 * ompi-resilience: the data a rendezvous request (RNDV) carries.
 *
 * A rendezvous message whose length is not a whole number of fragments ends in a rest;
 * when the rest fits the BTL's eager send, less dr2's 48-byte header, the RNDV carries
 * it (the message's last bytes) and the receiver keeps it until a receive matches. Run
 * with --mca pml_dr2_frag_size 8192 and btl/sm's eager limit 4096: fragments of F = 8192
 * bytes, RNDV data up to 4048 bytes. Rank 0 sends 3F + r bytes, r in 0, 1, 100, 4048 and
 * 4049, to rank 1, which receives each of them
 *   posted      with the receive posted before the send starts; rank 0 counts the data
 *               segments it handed to the BTL (pml_dr2_frags_sent, resends taken off):
 *               the RNDV and the fragments of what it did not carry
 *   unexpected  with the receive posted after the RNDV arrived (the RNDV precedes rank
 *               0's later message in matching order, so it has arrived when that has)
 *   truncate    into 50 bytes fewer, posted and unexpected: MPI_ERR_TRUNCATE, the bytes
 *               that fit intact, nothing written past them
 *   vector      into every other byte of a buffer twice the size (non-contiguous)
 *   mprobe      by MPI_Mprobe and MPI_Mrecv after the RNDV arrived
 * and a synchronous send of 8, 4048 and 4049 bytes, which must not complete before rank 1
 * posts its receive: the first two go whole in their RNDV (one segment), 4049 does not.
 * Every byte is checked.
 *
 *   mpirun -np 2 --mca pml dr2 --mca pml_dr2_frag_size 8192 dr2_rndv
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define FRAG 8192
#define RNDV_DATA_MAX (4096 - 48) /* PML_DR2_HDR_MATCH_LEN */
#define GUARD 64
#define GUARD_BYTE 0xEE
#define SSEND_WAIT_SECONDS 0.5

enum { POSTED, UNEXPECTED, TRUNCATE_POSTED, TRUNCATE_UNEXPECTED, VECTOR, MPROBE, NWAYS };
static const char *const way_name[NWAYS] = {"posted",  "unexpected", "truncate-posted",
                                            "truncate-unexpected", "vector", "mprobe"};

static MPI_Comm comm; /* MPI_COMM_WORLD's duplicate, errors returned */

static unsigned char expected_byte(size_t i, int n)
{
    return (unsigned char) mt_hash64(i * 131 + (uint64_t) n);
}

/* Segments rank 0 hands the BTL for one message of n bytes: the RNDV, then fragments of
 * what it did not carry. */
static long expected_segments(int n)
{
    int rest = n % FRAG;
    int tail = rest <= RNDV_DATA_MAX ? rest : 0;

    return 1 + (n - tail + FRAG - 1) / FRAG;
}

static void sender(int way, int n, unsigned char *buf)
{
    int ready = 0, go = 1;
    long before;

    for (int i = 0; i < n; i++) {
        buf[i] = expected_byte(i, n);
    }
    if (UNEXPECTED == way || TRUNCATE_UNEXPECTED == way || MPROBE == way) {
        MPI_Request req;
        MPI_Isend(buf, n, MPI_BYTE, 1, 1, comm, &req);
        MPI_Send(&go, 1, MPI_INT, 1, 2, comm); /* after the RNDV in matching order */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Recv(&ready, 1, MPI_INT, 1, 3, comm, MPI_STATUS_IGNORE); /* its receive is posted */
    before = mt_dr2_frags_sent() - mt_dr2_resent();
    MPI_Send(buf, n, MPI_BYTE, 1, 1, comm);
    if (POSTED == way) {
        long sent = mt_dr2_frags_sent() - mt_dr2_resent() - before;
        MT_CHECK(sent == expected_segments(n), "%d bytes: %ld segments, expected %ld", n, sent,
                 expected_segments(n));
    }
}

/* Rank 1's receive of n bytes into buf (room for n + GUARD bytes, or 2n + GUARD for
 * VECTOR), by `way`; returns the MPI error. */
static int receive(int way, int n, unsigned char *buf, MPI_Status *status)
{
    int go = 0, ready = 1, rc;
    int cap = TRUNCATE_POSTED == way || TRUNCATE_UNEXPECTED == way ? n - 50 : n;
    MPI_Request req;

    if (UNEXPECTED == way || TRUNCATE_UNEXPECTED == way || MPROBE == way) {
        MPI_Recv(&go, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE); /* the RNDV is here */
        if (MPROBE == way) {
            MPI_Message msg;
            MPI_Mprobe(0, 1, comm, &msg, status);
            return MPI_Mrecv(buf, n, MPI_BYTE, &msg, status);
        }
        return MPI_Recv(buf, cap, MPI_BYTE, 0, 1, comm, status);
    }
    if (VECTOR == way) {
        MPI_Datatype every_other;
        MPI_Type_vector(n, 1, 2, MPI_BYTE, &every_other);
        MPI_Type_commit(&every_other);
        MPI_Irecv(buf, 1, every_other, 0, 1, comm, &req);
        MPI_Type_free(&every_other);
    } else {
        MPI_Irecv(buf, cap, MPI_BYTE, 0, 1, comm, &req);
    }
    MPI_Send(&ready, 1, MPI_INT, 0, 3, comm);
    rc = MPI_Wait(&req, status);
    return MPI_SUCCESS != rc ? rc : status->MPI_ERROR;
}

static void receiver(int way, int n, unsigned char *buf)
{
    int truncated = TRUNCATE_POSTED == way || TRUNCATE_UNEXPECTED == way;
    int cap = truncated ? n - 50 : n, stride = VECTOR == way ? 2 : 1, count = -1, bad = -1;
    size_t span = VECTOR == way ? 2 * (size_t) n : (size_t) cap;
    MPI_Status status;
    int rc;

    memset(buf, GUARD_BYTE, span + GUARD);
    status.MPI_ERROR = MPI_SUCCESS;
    rc = receive(way, n, buf, &status);
    if (truncated) {
        int cls = MPI_SUCCESS;
        MPI_Error_class(MPI_SUCCESS != rc ? rc : status.MPI_ERROR, &cls);
        MT_CHECK(MPI_ERR_TRUNCATE == cls, "%s %d bytes: error class %d, not MPI_ERR_TRUNCATE",
                 way_name[way], n, cls);
    } else {
        MT_CHECK(MPI_SUCCESS == rc, "%s %d bytes: receive failed (%d)", way_name[way], n, rc);
        MPI_Get_count(&status, MPI_BYTE, &count);
        MT_CHECK(count == n, "%s %d bytes: count %d", way_name[way], n, count);
    }
    for (int i = 0; i < cap && bad < 0; i++) {
        if (buf[(size_t) i * stride] != expected_byte(i, n)) {
            bad = i;
        }
    }
    MT_CHECK(bad < 0, "%s %d bytes: byte %d wrong", way_name[way], n, bad);
    for (size_t i = 0; i < span + GUARD; i++) {
        int gap = VECTOR == way && i < span && 1 == i % 2;
        if ((i >= span || gap) && GUARD_BYTE != buf[i]) {
            MT_CHECK(0, "%s %d bytes: byte %zu written outside the receive", way_name[way], n, i);
            break;
        }
    }
}

/* A synchronous send completes only once the receiver has matched it. */
static void ssend(int n, unsigned char *buf)
{
    int go = 1, done = 0;

    if (0 == mt_rank) {
        MPI_Request req;
        long before = mt_dr2_frags_sent() - mt_dr2_resent();
        double start;

        for (int i = 0; i < n; i++) {
            buf[i] = expected_byte(i, n);
        }
        MPI_Issend(buf, n, MPI_BYTE, 1, 4, comm, &req);
        start = MPI_Wtime();
        while (!done && MPI_Wtime() - start < SSEND_WAIT_SECONDS) {
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
        MT_CHECK(!done, "ssend %d bytes completed before the receive was posted", n);
        MPI_Send(&go, 1, MPI_INT, 1, 2, comm);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* its segments and the one of `go` */
        long sent = mt_dr2_frags_sent() - mt_dr2_resent() - before - 1;
        long want = n <= RNDV_DATA_MAX ? 1 : 2;
        MT_CHECK(sent == want, "ssend %d bytes: %ld segments, expected %ld", n, sent, want);
    } else {
        int count = -1, bad = -1;
        MPI_Status status;
        MPI_Recv(&go, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
        MPI_Recv(buf, n, MPI_BYTE, 0, 4, comm, &status);
        MPI_Get_count(&status, MPI_BYTE, &count);
        for (int i = 0; i < n && bad < 0; i++) {
            if (buf[i] != expected_byte(i, n)) {
                bad = i;
            }
        }
        MT_CHECK(count == n && bad < 0, "ssend %d bytes: count %d, byte %d wrong", n, count, bad);
    }
}

int main(int argc, char **argv)
{
    static const int rests[] = {0, 1, 100, RNDV_DATA_MAX, RNDV_DATA_MAX + 1};
    static const int ssend_sizes[] = {8, RNDV_DATA_MAX, RNDV_DATA_MAX + 1};
    size_t max = 2 * (3 * FRAG + RNDV_DATA_MAX + 1) + GUARD;
    unsigned char *buf;

    mt_init(&argc, &argv, "dr2_rndv");
    if (2 != mt_size) {
        MT_CHECK(0, "needs exactly 2 processes");
        return mt_finish();
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    mt_dr2_counters_start();
    buf = malloc(max);
    MT_CHECK(NULL != buf, "out of memory");
    for (int w = 0; NULL != buf && w < NWAYS; w++) {
        for (size_t k = 0; k < sizeof(rests) / sizeof(rests[0]); k++) {
            int n = 3 * FRAG + rests[k];
            if (0 == mt_rank) {
                sender(w, n, buf);
            } else {
                receiver(w, n, buf);
            }
        }
    }
    for (size_t k = 0; NULL != buf && k < sizeof(ssend_sizes) / sizeof(ssend_sizes[0]); k++) {
        ssend(ssend_sizes[k], buf);
    }
    free(buf);
    mt_dr2_counters_stop();
    MPI_Comm_free(&comm);
    return mt_finish();
}
