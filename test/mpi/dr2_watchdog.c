/*
 * ompi-resilience: pml/dr2's local-completion watchdog, over btl/tcp.
 *
 * Rank 0 sends more eager data to rank 1 than the loopback TCP buffers hold, while rank 1
 * does not call MPI for a while (it "computes"): btl/tcp keeps our segments queued behind a
 * full socket and completes none of them. With a short pml_dr2_local_timeout_us the
 * watchdog must notice (MPI_T counter local_timeouts), and nothing else may go wrong:
 * without a retry limit nobody is given up on, and once rank 1 receives, every byte of
 * every message arrives intact and in order.
 *
 *   mpirun -np 2 --mca pml dr2 --mca btl tcp,self --mca pml_dr2_eager_limit 1048576 \
 *          --mca pml_dr2_local_timeout_us 200000 dr2_watchdog [SLEEP_MS]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpitest.h"

#define MESSAGES 40
#define BYTES (1024 * 1024) /* eager with pml_dr2_eager_limit 1048576 */

static void fill(unsigned char *buf, int message)
{
    for (size_t i = 0; i < BYTES; i += 8) {
        uint64_t v = mt_hash64(((uint64_t) message << 32) | i);
        memcpy(buf + i, &v, 8);
    }
}

int main(int argc, char **argv)
{
    unsigned char *buf, *expect;
    int sleep_ms;

    mt_init(&argc, &argv, "dr2_watchdog");
    sleep_ms = argc > 1 ? atoi(argv[1]) : 1500;
    buf = malloc(BYTES);
    expect = malloc(BYTES);
    MT_CHECK(NULL != buf && NULL != expect, "out of memory");
    if (NULL == buf || NULL == expect || 2 != mt_size) {
        MT_CHECK(2 == mt_size, "needs exactly 2 ranks");
        return mt_finish();
    }
    mt_dr2_counters_start();
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == mt_rank) {
        int reply = 0;
        for (int m = 0; m < MESSAGES; m++) {
            fill(buf, m);
            MPI_Send(buf, BYTES, MPI_BYTE, 1, m, MPI_COMM_WORLD); /* complete at buffering */
        }
        MPI_Recv(&reply, 1, MPI_INT, 1, MESSAGES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MT_CHECK(MESSAGES == reply, "rank 1 received %d intact messages of %d", reply, MESSAGES);
        MT_CHECK(mt_dr2_local_timeouts() >= 1,
                 "the watchdog never fired while rank 1 slept %d ms (local_timeouts %ld)",
                 sleep_ms, mt_dr2_local_timeouts());
    } else if (1 == mt_rank) {
        struct timespec nap = {sleep_ms / 1000, (long) (sleep_ms % 1000) * 1000000L};
        int intact = 0;
        nanosleep(&nap, NULL); /* no MPI call: nothing is read from the socket */
        for (int m = 0; m < MESSAGES; m++) {
            MPI_Status status;
            MPI_Recv(buf, BYTES, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
            fill(expect, m);
            MT_CHECK(status.MPI_TAG == m, "message %d arrived as number %d", status.MPI_TAG, m);
            if (status.MPI_TAG == m && 0 == memcmp(buf, expect, BYTES)) {
                intact++;
            } else {
                MT_CHECK(0, "message %d is corrupt", m);
            }
        }
        MPI_Send(&intact, 1, MPI_INT, 0, MESSAGES, MPI_COMM_WORLD);
    }
    mt_dr2_counters_stop();
    free(buf);
    free(expect);
    return mt_finish();
}
