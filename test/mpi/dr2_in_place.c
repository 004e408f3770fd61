/*
 * ompi-resilience: fragments sent in place (pml_dr2_txfrag.c, goes_in_place).
 *
 * Over btl/tcp, pml/dr2 has the BTL send fragments of 32 KiB and more straight from the
 * user's buffer when they carry a checksum; otherwise (no checksum, fault injection, sm, a
 * buffer dr2 packed itself) it copies them into the BTL's buffer first. Both ways must
 * deliver the same bytes, and a completed send must leave the buffer to the application.
 * Between ranks 0 and 1, in both directions, every byte verified:
 *  1. MPI_Send of sizes around the 32 KiB threshold, btl/tcp's 128 KiB fragments and
 *     larger (up to 3 MB, odd sizes: a short last fragment), each send buffer overwritten
 *     as soon as its send returned;
 *  2. several MPI_Isend of 1 MiB in flight from distinct buffers, overwritten after
 *     MPI_Waitall;
 *  3. MPI_Ssend and a persistent send (MPI_Send_init, started 3 times, the buffer changed
 *     in between);
 *  4. a non-contiguous send (a vector type, packed by dr2 and so sent by copy);
 *  5. MPI_Send from buffers of their own pages, unmapped as soon as the send returned: a
 *     fragment dr2 still had the BTL send from one would make btl/tcp's write fail
 *     (EFAULT) and cost the connection. Run with tiny ACK timeouts, fragments are resent
 *     while their first transmission is being acknowledged: the resends must be copies.
 * Then the job-wide MPI_T counter pml_dr2_frags_in_place: with "in-place" it must count
 * fragments, with "copy" it must be 0.
 *
 * With "resends" after the mode, fragments must also have been retransmitted (the run
 * with tiny ACK timeouts shows it tested what it meant to).
 *
 *   mpirun -np 2 --mca pml dr2 --mca btl tcp,self dr2_in_place in-place|copy [resends]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mpitest.h"

#define MAX_LEN 3000000
#define IN_FLIGHT 4
#define ONE_MIB (1 << 20)

static const size_t sizes[] = {32767, 32768, 65536 + 3, 131072, 131072 * 3 + 5, 300000,
                               ONE_MIB, MAX_LEN};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* 1: blocking sends, the buffer overwritten right after each returned. */
static void blocking_sends(unsigned char *sbuf, unsigned char *rbuf)
{
    int peer = 1 - mt_rank;

    for (int dir = 0; dir < 2; dir++) {
        for (int k = 0; k < (int) NSIZES; k++) {
            int n = dir * 100 + k;
            if (dir == mt_rank) {
                mt_fill(sbuf, sizes[k], mt_rank, n);
                MPI_Send(sbuf, (int) sizes[k], MPI_BYTE, peer, n, MPI_COMM_WORLD);
                memset(sbuf, 0xa5, sizes[k]);
            } else {
                memset(rbuf, 0, sizes[k]);
                MPI_Recv(rbuf, (int) sizes[k], MPI_BYTE, peer, n, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                mt_intact(rbuf, sizes[k], peer, n, "MPI_Send");
            }
        }
    }
}

/* 2: IN_FLIGHT nonblocking sends of 1 MiB at once, from distinct buffers. */
static void nonblocking_sends(unsigned char *bufs[IN_FLIGHT])
{
    MPI_Request reqs[IN_FLIGHT];
    int peer = 1 - mt_rank;

    for (int i = 0; i < IN_FLIGHT; i++) {
        if (0 == mt_rank) {
            mt_fill(bufs[i], ONE_MIB, 0, 200 + i);
            MPI_Isend(bufs[i], ONE_MIB, MPI_BYTE, peer, 200 + i, MPI_COMM_WORLD, &reqs[i]);
        } else {
            MPI_Irecv(bufs[i], ONE_MIB, MPI_BYTE, peer, 200 + i, MPI_COMM_WORLD, &reqs[i]);
        }
    }
    MPI_Waitall(IN_FLIGHT, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < IN_FLIGHT; i++) {
        if (0 == mt_rank) {
            memset(bufs[i], 0x5a, ONE_MIB);
        } else {
            mt_intact(bufs[i], ONE_MIB, 0, 200 + i, "MPI_Isend");
        }
    }
}

/* 3: a synchronous send, then one persistent send started three times. */
static void synchronous_and_persistent(unsigned char *buf)
{
    int peer = 1 - mt_rank;
    MPI_Request req;

    if (0 == mt_rank) {
        mt_fill(buf, ONE_MIB + 1, 0, 300);
        MPI_Ssend(buf, ONE_MIB + 1, MPI_BYTE, peer, 300, MPI_COMM_WORLD);
        MPI_Send_init(buf, ONE_MIB + 1, MPI_BYTE, peer, 301, MPI_COMM_WORLD, &req);
    } else {
        MPI_Recv(buf, ONE_MIB + 1, MPI_BYTE, peer, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        mt_intact(buf, ONE_MIB + 1, 0, 300, "MPI_Ssend");
        MPI_Recv_init(buf, ONE_MIB + 1, MPI_BYTE, peer, 301, MPI_COMM_WORLD, &req);
    }
    for (int round = 0; round < 3; round++) {
        if (0 == mt_rank) {
            mt_fill(buf, ONE_MIB + 1, 0, 310 + round);
        }
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (0 != mt_rank) {
            mt_intact(buf, ONE_MIB + 1, 0, 310 + round, "persistent send");
        }
    }
    MPI_Request_free(&req);
}

/* 4: every other 4 KiB block of a 2 MiB buffer: dr2 packs it and sends its own copy. */
static void noncontiguous_send(unsigned char *buf, unsigned char *packed)
{
    const int block = 4096, count = 256;
    MPI_Datatype vector;

    MPI_Type_vector(count, block, 2 * block, MPI_BYTE, &vector);
    MPI_Type_commit(&vector);
    if (0 == mt_rank) {
        mt_fill(buf, (size_t) 2 * block * count, 0, 400);
        MPI_Send(buf, 1, vector, 1, 400, MPI_COMM_WORLD);
    } else {
        MPI_Recv(packed, block * count, MPI_BYTE, 0, 400, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int b = 0; b < count; b++) {
            for (int i = 0; i < block; i++) {
                size_t at = (size_t) b * 2 * block + (size_t) i;
                if (packed[(size_t) b * block + (size_t) i] != mt_pattern(0, 400, at)) {
                    MT_CHECK(0, "vector send: block %d byte %d wrong", b, i);
                    b = count;
                    break;
                }
            }
        }
    }
    MPI_Type_free(&vector);
}

/* 5: each send buffer mapped for its send and unmapped once MPI_Send returned. */
static void sends_from_unmapped_buffers(unsigned char *rbuf)
{
    static const size_t lens[] = {131072 * 3 + 5, ONE_MIB, MAX_LEN};
    int peer = 1 - mt_rank;

    for (int round = 0; round < 8; round++) {
        for (int k = 0; k < 3; k++) {
            int tag = 500 + round * 3 + k;
            if (0 == mt_rank) {
                unsigned char *buf = mmap(NULL, lens[k], PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (MAP_FAILED == buf) {
                    MT_CHECK(0, "mmap of %zu bytes failed", lens[k]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                mt_fill(buf, lens[k], mt_rank, tag);
                MPI_Send(buf, (int) lens[k], MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                munmap(buf, lens[k]);
            } else {
                memset(rbuf, 0, lens[k]);
                MPI_Recv(rbuf, (int) lens[k], MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                mt_intact(rbuf, lens[k], peer, tag, "MPI_Send from an unmapped buffer");
            }
        }
    }
}

int main(int argc, char **argv)
{
    long mine[2], total[2] = {0, 0};
    int expect_in_place, expect_resends;
    unsigned char *sbuf, *rbuf, *bufs[IN_FLIGHT];

    mt_init(&argc, &argv, "dr2_in_place");
    if (2 != mt_size || argc < 2 || (strcmp(argv[1], "in-place") && strcmp(argv[1], "copy"))) {
        MT_CHECK(0, "usage: mpirun -np 2 --mca pml dr2 dr2_in_place in-place|copy [resends]");
        return mt_finish();
    }
    expect_in_place = 0 == strcmp(argv[1], "in-place");
    expect_resends = argc > 2 && 0 == strcmp(argv[2], "resends");
    mt_dr2_counters_start();
    if (!mt_dr2_selected()) {
        MT_CHECK(0, "no MPI_T counters of pml/dr2 (is it selected?)");
        return mt_finish();
    }
    sbuf = malloc(MAX_LEN);
    rbuf = malloc(MAX_LEN);
    for (int i = 0; i < IN_FLIGHT; i++) {
        bufs[i] = malloc(ONE_MIB);
        if (NULL == bufs[i]) {
            sbuf = NULL;
        }
    }
    if (NULL == sbuf || NULL == rbuf) {
        MT_CHECK(0, "out of memory");
        return mt_finish();
    }
    blocking_sends(sbuf, rbuf);
    nonblocking_sends(bufs);
    synchronous_and_persistent(sbuf);
    noncontiguous_send(sbuf, rbuf);
    sends_from_unmapped_buffers(rbuf);
    mine[0] = mt_dr2_frags_in_place();
    mine[1] = mt_dr2_resent();
    mt_dr2_counters_stop();
    MPI_Allreduce(mine, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == mt_rank) {
        printf("dr2_in_place: %ld fragments sent in place, %ld resent\n", total[0], total[1]);
    }
    if (expect_in_place) {
        MT_CHECK(total[0] > 0, "no fragment went in place");
    } else {
        MT_CHECK(0 == total[0], "%ld fragments went in place, none expected", total[0]);
    }
    if (expect_resends) {
        MT_CHECK(total[1] > 0, "no fragment was resent");
    }
    for (int i = 0; i < IN_FLIGHT; i++) {
        free(bufs[i]);
    }
    free(sbuf);
    free(rbuf);
    return mt_finish();
}
