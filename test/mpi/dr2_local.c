/*
 * ompi-resilience: small messages to a process reached through no wire (pml_dr2_local.h).
 *
 * Over sm and self, pml/dr2 sends messages of up to pml_dr2_local_max bytes without vfrag,
 * checksum or ACK (LOCAL), and every other message with the whole protocol. Both kinds
 * share one matching order per sender and communicator, so this checks MPI's rules where
 * the two meet, every byte verified:
 *  1. a ping-pong of every size from 0 to 300 bytes and of sizes around 8192 bytes
 *     (LOCAL up to pml_dr2_local_max, 8192 by default, then EAGER);
 *  2. messages that arrive before their receive is posted (unexpected), received by tag
 *     in another order, then by MPI_ANY_TAG in the order sent;
 *  3. a rendezvous of 1 MiB followed at once by small messages with the same tag: the
 *     small ones (sent at once, while the rendezvous waits for its go-ahead) match after
 *     it, in the order sent; the same with MPI_Isend;
 *  4. MPI_ANY_SOURCE receives at rank 0 from every other rank, each sender's messages in
 *     its order;
 *  5. a message sent on a communicator right after MPI_Comm_dup (the receiver may not have
 *     created it yet), 50 times.
 * Then the job-wide MPI_T counter pml_dr2_local_sent: with the argument "local" it must
 * count messages, with "none" (pml_dr2_local_max 0, a network BTL, checksums forced, fault
 * injection) it must be 0.
 *
 *   mpirun -np 3 --mca pml dr2 --mca btl sm,self dr2_local local|none
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define MAX_SMALL 300
#define MAX_LEN 8300 /* above pml_dr2_local_max's default, 8192 */
#define BIG (1 << 20)
#define BURST 64

static void recv_checked(unsigned char *buf, int len, int from, int tag, int n, MPI_Comm comm,
                         const char *what)
{
    MPI_Status st;
    int count;

    MPI_Recv(buf, MAX_LEN, MPI_BYTE, from, tag, comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    MT_CHECK(count == len, "%s: message %d from rank %d: %d bytes, expected %d", what, n, from,
             count, len);
    mt_intact(buf, len, from, n, what);
}

/* 1. */
static void ping_pong_every_size(void)
{
    static const int larger[] = {511, 1024, 4084, 4096, 8191, 8192, 8193, MAX_LEN};
    static unsigned char out[MAX_LEN], in[MAX_LEN];
    int nlarger = (int) (sizeof(larger) / sizeof(larger[0]));

    if (mt_rank > 1) {
        return;
    }
    for (int k = 0; k <= MAX_SMALL + nlarger; k++) {
        int len = k <= MAX_SMALL ? k : larger[k - MAX_SMALL - 1];
        mt_fill(out, len, mt_rank, len);
        if (0 == mt_rank) {
            MPI_Send(out, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            recv_checked(in, len, 1, 1, len, MPI_COMM_WORLD, "ping-pong");
        } else {
            recv_checked(in, len, 0, 1, len, MPI_COMM_WORLD, "ping-pong");
            MPI_Send(out, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
}

/* 2. Rank 0 sends BURST messages (tag i, 130 i bytes) before rank 1 posts anything; rank 1
 * takes the odd tags first, highest first, then the rest with MPI_ANY_TAG: they must
 * come in the order sent. */
static void unexpected_then_by_tag(void)
{
    static unsigned char buf[MAX_LEN];

    if (0 == mt_rank) {
        for (int i = 0; i < BURST; i++) {
            mt_fill(buf, i * 130, 0, 1000 + i);
            MPI_Send(buf, i * 130, MPI_BYTE, 1, i, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == mt_rank) {
        MPI_Status st;
        for (int i = BURST - 1; i >= 0; i -= 2) {
            recv_checked(buf, i * 130, 0, i, 1000 + i, MPI_COMM_WORLD, "unexpected by tag");
        }
        for (int i = 0; i < BURST; i += 2) {
            MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MT_CHECK(st.MPI_TAG == i, "unexpected: MPI_ANY_TAG found tag %d, expected %d",
                     st.MPI_TAG, i);
            recv_checked(buf, i * 130, 0, MPI_ANY_TAG, 1000 + i, MPI_COMM_WORLD,
                         "unexpected in order");
        }
    }
}

/* 3. A rendezvous, then small messages with the same tag that leave before it completes. */
static void small_after_rendezvous(int nonblocking)
{
    unsigned char *big = malloc(BIG);
    static unsigned char small[MAX_LEN];
    MPI_Request reqs[1 + BURST];
    int base = nonblocking ? 3000 : 2000;

    if (NULL == big) {
        MT_CHECK(0, "no memory for %d bytes", BIG);
        return;
    }
    if (0 == mt_rank) {
        mt_fill(big, BIG, 0, base);
        MPI_Isend(big, BIG, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &reqs[0]);
        for (int i = 1; i <= BURST; i++) {
            mt_fill(small, i * 128, 0, base + i);
            if (nonblocking) {
                MPI_Isend(small, i * 128, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &reqs[i]);
                MPI_Wait(&reqs[i], MPI_STATUS_IGNORE); /* small is refilled next */
            } else {
                MPI_Send(small, i * 128, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            }
        }
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    } else if (1 == mt_rank) {
        MPI_Status st;
        int count;
        MPI_Recv(big, BIG, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == BIG, "after rendezvous: the first message has %d bytes, expected %d",
                 count, BIG);
        mt_intact(big, count < BIG ? count : BIG, 0, base, "rendezvous");
        for (int i = 1; i <= BURST; i++) {
            recv_checked(small, i * 128, 0, 7, base + i, MPI_COMM_WORLD, "after rendezvous");
        }
    }
    free(big);
}

/* 4. Every other rank sends BURST messages to rank 0, which takes them from any source. */
static void any_source(void)
{
    static unsigned char buf[MAX_LEN];

    if (0 != mt_rank) {
        for (int i = 0; i < BURST; i++) {
            mt_fill(buf, 1 + i % 200, mt_rank, 4000 + i);
            MPI_Send(buf, 1 + i % 200, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
        }
        return;
    }
    int *next = calloc(mt_size, sizeof(int));
    for (int k = 0; k < (mt_size - 1) * BURST; k++) {
        MPI_Status st;
        int from;
        MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
        from = st.MPI_SOURCE;
        if (from < 1 || from >= mt_size || next[from] >= BURST) {
            MT_CHECK(0, "any source: a message from rank %d, unexpected", from);
            break;
        }
        recv_checked(buf, 1 + next[from] % 200, from, 9, 4000 + next[from], MPI_COMM_WORLD,
                     "any source");
        next[from]++;
    }
    free(next);
}

/* 5. */
static void right_after_dup(void)
{
    static unsigned char buf[MAX_LEN];

    for (int i = 0; i < 50; i++) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        if (0 == mt_rank) {
            mt_fill(buf, 16, 0, 5000 + i);
            MPI_Send(buf, 16, MPI_BYTE, 1, 3, dup);
        } else if (1 == mt_rank) {
            recv_checked(buf, 16, 0, 3, 5000 + i, dup, "after MPI_Comm_dup");
        }
        MPI_Comm_free(&dup);
    }
}

int main(int argc, char **argv)
{
    long mine, total = 0;
    int expect_local;

    mt_init(&argc, &argv, "dr2_local");
    if (mt_size < 2 || argc < 2 || (strcmp(argv[1], "local") && strcmp(argv[1], "none"))) {
        MT_CHECK(0, "usage: mpirun -np N>=2 --mca pml dr2 dr2_local local|none");
        return mt_finish();
    }
    expect_local = 0 == strcmp(argv[1], "local");
    mt_dr2_counters_start();
    if (!mt_dr2_selected()) {
        MT_CHECK(0, "no MPI_T counters of pml/dr2 (is it selected?)");
        return mt_finish();
    }
    ping_pong_every_size();
    unexpected_then_by_tag();
    small_after_rendezvous(0);
    small_after_rendezvous(1);
    any_source();
    right_after_dup();
    mine = mt_dr2_local_sent();
    mt_dr2_counters_stop();
    MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == mt_rank) {
        printf("dr2_local: %ld messages sent as LOCAL\n", total);
    }
    if (expect_local) {
        MT_CHECK(total > 0, "no message went as LOCAL");
    } else {
        MT_CHECK(0 == total, "%ld messages went as LOCAL, none expected", total);
    }
    return mt_finish();
}
