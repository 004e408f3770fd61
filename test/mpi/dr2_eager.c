/*
 * ompi-resilience: which protocol a standard send takes, seen from the application.
 *
 * An eager send completes at buffering, before the receiver has matched it; a rendezvous
 * send cannot complete until the receiver has. Rank 0 starts an MPI_Isend of BYTES while
 * rank 1 has posted no receive for it, and tests it for up to a few seconds; only then
 * does it tell rank 1 (tag 2) to receive. The send completing in that time means eager,
 * not completing means rendezvous -- which the test expects as its argument. Every byte
 * is checked at the receiver either way.
 *
 *   mpirun -np 2 --mca pml dr2 [--mca btl tcp,self] dr2_eager BYTES eager|rendezvous
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

/* How long rank 0 waits for the send to complete without a matching receive. A
 * rendezvous never completes in it; an eager send completes in microseconds. */
#define WAIT_SECONDS 3.0

static void fill(unsigned char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (unsigned char) mt_hash64(i);
    }
}

/* Rank 0: did the send complete before the receiver matched it? */
static int send_completes_unmatched(unsigned char *buf, int bytes)
{
    MPI_Request req;
    int done = 0, go = 1;
    double start;

    MPI_Isend(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req);
    start = MPI_Wtime();
    while (!done && MPI_Wtime() - start < WAIT_SECONDS) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    if (!done) {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    return done;
}

/* Rank 1: nothing posted for tag 1 until rank 0 says so; then every byte checked. */
static void receive_when_told(unsigned char *buf, unsigned char *expect, int bytes)
{
    int go = 0;
    MPI_Status status;
    int count = -1;

    MPI_Recv(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_BYTE, &count);
    MT_CHECK(count == bytes, "received %d bytes of %d", count, bytes);
    MT_CHECK(0 == memcmp(buf, expect, bytes), "the %d bytes arrived corrupt", bytes);
}

int main(int argc, char **argv)
{
    unsigned char *buf = NULL, *expect = NULL;
    int bytes, want_eager;

    mt_init(&argc, &argv, "dr2_eager");
    bytes = argc > 1 ? atoi(argv[1]) : 0;
    want_eager = argc > 2 && 0 == strcmp(argv[2], "eager");
    if (2 != mt_size || bytes <= 0 || argc < 3
        || (!want_eager && 0 != strcmp(argv[2], "rendezvous"))) {
        MT_CHECK(0, "usage: mpirun -np 2 dr2_eager BYTES eager|rendezvous");
        return mt_finish();
    }
    buf = malloc(bytes);
    expect = malloc(bytes);
    MT_CHECK(NULL != buf && NULL != expect, "out of memory");
    if (NULL != buf && NULL != expect) {
        fill(expect, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == mt_rank) {
            int eager;

            memcpy(buf, expect, bytes);
            eager = send_completes_unmatched(buf, bytes);
            MT_CHECK(eager == want_eager, "a %d-byte send went %s, expected %s", bytes,
                     eager ? "eagerly" : "by rendezvous", argv[2]);
        } else {
            receive_when_told(buf, expect, bytes);
        }
    }
    free(buf);
    free(expect);
    return mt_finish();
}
