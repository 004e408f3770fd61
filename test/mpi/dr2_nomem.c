/*
 * ompi-resilience: pml/dr2 when the receiver runs out of memory for a message, simulated
 * with pml_dr2_inject_nomem (the probability that a receive buffer is refused). Two
 * ranks.
 *
 *   dr2_nomem unexpected COUNT
 *       Rank 0 sends COUNT eager messages of various sizes (0 to 12,000 bytes) while rank
 *       1 is out of MPI, so that they all arrive unexpected and rank 1 must buffer them.
 *       A message it found no memory for must neither be lost nor hold up the ones
 *       behind it: rank 1 then receives all of them, in order, every byte checked, and
 *       counts the refused buffers (MPI_T) to show the fault was there.
 *   dr2_nomem noncontig
 *       Run with pml_dr2_inject_nomem 1 (no receive buffer at all) and fragments smaller
 *       than the eager message (one that fits a fragment is unpacked whole, with no
 *       staging copy). A non-contiguous receive, which needs a staging copy, ends with
 *       MPI_ERR_NO_MEM, for an eager message and for a rendezvous one; the traffic behind them, received into
 *       contiguous buffers, arrives intact.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

static const int sizes[] = {0, 1, 100, 1000, 5000, 12000};
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))
#define MAX_SIZE 12000
#define RNDV_INTS (256 * 1024)

static void fill(unsigned char *buf, int len, int seed)
{
    for (int i = 0; i < len; i++) {
        buf[i] = (unsigned char) mt_hash64((uint64_t) seed * 1000003 + i);
    }
}

static int error_class(int rc)
{
    int eclass = rc;

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &eclass);
    }
    return eclass;
}

static void unexpected(int count)
{
    unsigned char *buf = malloc(MAX_SIZE), *expect = malloc(MAX_SIZE);

    if (0 == mt_rank) {
        for (int i = 0; i < count; i++) {
            fill(buf, sizes[i % NSIZES], i);
            MPI_Send(buf, sizes[i % NSIZES], MPI_BYTE, 1, i % 7, MPI_COMM_WORLD);
        }
    } else {
        mt_dr2_counters_start();
        sleep(1); /* out of MPI: everything arrives unexpected */
        for (int i = 0; i < count; i++) {
            MPI_Status status;
            int got = -1, rc;
            rc = MPI_Recv(buf, MAX_SIZE, MPI_BYTE, 0, i % 7, MPI_COMM_WORLD, &status);
            MPI_Get_count(&status, MPI_BYTE, &got);
            fill(expect, sizes[i % NSIZES], i);
            MT_CHECK(MPI_SUCCESS == rc && got == sizes[i % NSIZES]
                         && 0 == memcmp(buf, expect, sizes[i % NSIZES]),
                     "message %d: error class %d, %d bytes of %d, %s", i, error_class(rc), got,
                     sizes[i % NSIZES], 0 == memcmp(buf, expect, got > 0 ? got : 0) ? "intact" : "corrupt");
        }
        MT_CHECK(mt_dr2_injected_nomem() > 0, "no receive buffer was refused: nothing tested");
        mt_dr2_counters_stop();
    }
    free(buf);
    free(expect);
}

/* Rank 1: receive `ints` ints from rank 0 with `tag` into every other int of a buffer. */
static int recv_noncontig(int ints, int tag)
{
    MPI_Datatype every_other;
    int *buf = malloc(2 * sizeof(int) * ints), rc;

    MPI_Type_vector(ints, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    rc = MPI_Recv(buf, 1, every_other, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Type_free(&every_other);
    free(buf);
    return error_class(rc);
}

static void noncontig(void)
{
    int *data = malloc(sizeof(int) * RNDV_INTS), *got = malloc(sizeof(int) * RNDV_INTS);

    for (int i = 0; i < RNDV_INTS; i++) {
        data[i] = (int) mt_hash64(i);
    }
    if (0 == mt_rank) {
        MPI_Send(data, 1000, MPI_INT, 1, 1, MPI_COMM_WORLD);      /* eager */
        MPI_Send(data, RNDV_INTS, MPI_INT, 1, 2, MPI_COMM_WORLD); /* rendezvous */
        MPI_Send(data, 1000, MPI_INT, 1, 3, MPI_COMM_WORLD);
        MPI_Send(data, RNDV_INTS, MPI_INT, 1, 4, MPI_COMM_WORLD);
    } else {
        int eclass, rc;
        eclass = recv_noncontig(1000, 1);
        MT_CHECK(MPI_ERR_NO_MEM == eclass, "non-contiguous eager receive: error class %d", eclass);
        eclass = recv_noncontig(RNDV_INTS, 2);
        MT_CHECK(MPI_ERR_NO_MEM == eclass, "non-contiguous rendezvous receive: error class %d",
                 eclass);
        rc = MPI_Recv(got, 1000, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MT_CHECK(MPI_SUCCESS == rc && 0 == memcmp(got, data, 1000 * sizeof(int)),
                 "the eager message behind them: error class %d", error_class(rc));
        rc = MPI_Recv(got, RNDV_INTS, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MT_CHECK(MPI_SUCCESS == rc && 0 == memcmp(got, data, RNDV_INTS * sizeof(int)),
                 "the rendezvous message behind them: error class %d", error_class(rc));
    }
    free(data);
    free(got);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "unexpected";

    mt_init(&argc, &argv, "dr2_nomem");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (2 != mt_size) {
        MT_CHECK(0, "needs exactly 2 ranks, got %d", mt_size);
    } else if (0 == strcmp(mode, "unexpected")) {
        unexpected(argc > 2 ? atoi(argv[2]) : 300);
    } else if (0 == strcmp(mode, "noncontig")) {
        noncontig();
    } else {
        MT_CHECK(0, "unknown mode %s", mode);
    }
    return mt_finish();
}
