/*
 * ompi-resilience: over a network BTL, the ACKs of a ping-pong of small messages ride on the
 * replies instead of going as segments of their own.
 *
 * Ranks 0 and 1 exchange ROUND_TRIPS ping-pongs of 8 to 64 bytes (the sizes pml/dr2 could
 * send as a TINY, which has no room for an ACK), every byte checked. Each rank then reads
 * how many ACK segments it sent (MPI_T pml_dr2_path_acks_sent, summed over paths): with the
 * ACK inside the reply's EAGER header, almost none; with TINYs, about one per message. Over
 * tcp an ACK segment of its own is a send of its own (a system call, the stack, a wakeup at
 * the peer): 8-64 B took 6.5 us as TINY against 5.2-5.35 us as EAGER across two simulated
 * hosts (docs/bench/dr2-cluster-analysis.md). The count depends on the protocol, not on
 * time: a lazy ACK waits a number of progress calls, not microseconds.
 *
 * With the argument "corrupt", run under injected corruption on any BTL: the ACKs are not
 * counted; instead every byte must still arrive intact and the receivers must have dropped
 * corrupt headers. Under fault injection messages of up to 256 bytes travel as TINY or
 * EAGER, whose one checksum covers the payload, so this holds on sm under
 * pml_dr2_checksum auto too (which leaves larger payloads unchecked there, and sends small
 * ones as LOCAL, unchecked, when nothing is injected: pml_dr2_local.h).
 *
 *   mpirun -np 2 --mca pml dr2 --mca btl tcp,self dr2_ack_ride
 *   mpirun -np 2 --mca pml dr2 --mca btl sm,self --mca pml_dr2_inject_corrupt 0.02 \
 *          dr2_ack_ride corrupt
 */
#include <stdint.h>
#include <string.h>

#include "mpitest.h"

#define ROUND_TRIPS 2000
#define NPATHS 4 /* PML_DR2_PATH_MAX: the length of each per-path counter */

static const int sizes[] = {8, 16, 32, 64};
#define NSIZES (int) (sizeof(sizes) / sizeof(sizes[0]))

static unsigned char pattern(int from, int n, int i)
{
    return (unsigned char) mt_hash64(((uint64_t) from << 40) ^ ((uint64_t) n << 8) ^ (uint64_t) i);
}

static void fill(unsigned char *buf, int len, int n)
{
    for (int i = 0; i < len; i++) {
        buf[i] = pattern(mt_rank, n, i);
    }
}

/* A handle on the dr2 counter `name` (one value per process); Open MPI counts from the
 * handle's allocation. */
static int counter_open(MPI_T_pvar_session session, const char *name, MPI_T_pvar_handle *handle)
{
    int index, count = 0;

    if (MPI_SUCCESS != MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index)
        || MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, index, NULL, handle, &count)
        || 1 != count) {
        MT_CHECK(0, "no MPI_T counter %s", name);
        return 0;
    }
    return 1;
}

/* The job-wide sum of a counter opened with counter_open (0 where it was not). */
static unsigned long counter_sum(MPI_T_pvar_session session, MPI_T_pvar_handle *handle, int open)
{
    unsigned long mine = 0, sum = 0;

    if (open) {
        MPI_T_pvar_read(session, *handle, &mine);
        MPI_T_pvar_handle_free(session, handle);
    }
    MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

static void check(const unsigned char *buf, int len, int n)
{
    for (int i = 0; i < len; i++) {
        if (buf[i] != pattern(1 - mt_rank, n, i)) {
            MT_CHECK(0, "message %d: byte %d of %d arrived corrupt", n, i, len);
            return;
        }
    }
}

int main(int argc, char **argv)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle, dropped_handle;
    unsigned long acks[NPATHS] = {0}, total = 0;
    unsigned char out[64], in[64];
    int provided, index, count = 0, peer, corrupt, dropped_open = 0;

    mt_init(&argc, &argv, "dr2_ack_ride");
    corrupt = argc > 1 && 0 == strcmp(argv[1], "corrupt");
    if (2 != mt_size) {
        MT_CHECK(0, "usage: mpirun -np 2 --mca pml dr2 --mca btl tcp,self dr2_ack_ride");
        return mt_finish();
    }
    peer = 1 - mt_rank;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    if (MPI_SUCCESS != MPI_T_pvar_get_index("pml_dr2_path_acks_sent", MPI_T_PVAR_CLASS_COUNTER, &index)
        || MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count)
        || NPATHS != count) {
        MT_CHECK(0, "no MPI_T counter pml_dr2_path_acks_sent of %d values (is pml dr2 selected?)",
                 NPATHS);
        return mt_finish();
    }
    MPI_T_pvar_start(session, handle);
    if (corrupt) {
        dropped_open = counter_open(session, "pml_dr2_hdr_crc_errors", &dropped_handle);
    }
    for (int n = 0; n < ROUND_TRIPS; n++) {
        int len = sizes[n % NSIZES];

        fill(out, len, n);
        if (0 == mt_rank) {
            MPI_Send(out, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(in, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(out, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
        check(in, len, n);
    }
    MPI_T_pvar_read(session, handle, acks);
    MPI_T_pvar_stop(session, handle);
    MPI_T_pvar_handle_free(session, &handle);
    for (int i = 0; i < NPATHS; i++) {
        total += acks[i];
    }
    printf("dr2_ack_ride: rank %d: %lu ACK segments sent for %d messages received\n", mt_rank,
           total, ROUND_TRIPS);
    if (corrupt) {
        unsigned long dropped = counter_sum(session, &dropped_handle, dropped_open);
        if (0 == mt_rank) {
            printf("dr2_ack_ride: %lu corrupt segments dropped\n", dropped);
        }
        MT_CHECK(dropped > 0, "no corrupt segment was dropped: was corruption injected?");
        MPI_T_pvar_session_free(&session);
        return mt_finish();
    }
    /* a few go alone (the last message's, ACKs after a resend); one per message would be
     * every ACK alone */
    MT_CHECK(total <= ROUND_TRIPS / 10,
             "%lu ACK segments of their own for %d small messages: the ACKs did not ride on "
             "the replies", total, ROUND_TRIPS);
    MPI_T_pvar_session_free(&session);
    return mt_finish();
}
