/*
 * ompi-resilience: a completed send has left the sender: when MPI_Send returns, or
 * MPI_Wait on an MPI_Isend, the message is no longer held in the sending process (pml/dr2,
 * two ranks on one host, over btl/tcp).
 *
 * Rank 0's send of BYTES to rank 1 (MPI_Send, or MPI_Isend and MPI_Wait with `isend`) is
 * the first message between the two: btl/tcp still has to set up the connection and holds
 * the fragment until it has. Rank 0 then waits outside MPI (no progress) until rank 1
 * tells it, through a file, that the message arrived, as Open MPI itself waits in
 * PMIx_Connect inside MPI_Comm_spawn right after broadcasting the port to the processes
 * that must join it. A message still inside rank 0's process when its send completed is
 * moved on by nobody: rank 1 waits for it, rank 0 gives up after WAIT_SECONDS and the test
 * fails (before pml/dr2 completed an eager send only once it had left: 3 runs of 3 with
 * each of the two; with pml/ob1, whose eager send completes when the BTL has written it,
 * the message arrives).
 *
 * With COUNT > 1, rank 0 sends COUNT messages while rank 1 stays out of MPI for a second
 * first: the receiver's queue in the transport (btl/sm's FIFO) fills, and a send the
 * transport could not take at once waits in rank 0's process for its progress.
 *
 *   mpirun -np 2 --mca pml dr2 --mca btl tcp,self dr2_send_then_block BYTES [send|isend [COUNT]]
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

#define WAIT_SECONDS 30

/* The file rank 1 creates once the message is in: named after the job, the same in both
 * ranks without a message between them (which would set the connection up). */
static void arrival_file(char *path, size_t room)
{
    const char *job = getenv("PMIX_NAMESPACE");
    char name[128];
    size_t i;

    snprintf(name, sizeof(name), "%s", NULL != job ? job : "nojob");
    for (i = 0; name[i]; i++) {
        if ('/' == name[i]) {
            name[i] = '_';
        }
    }
    snprintf(path, room, "/tmp/dr2_send_then_block.%s.%ld", name, (long) getppid());
}

/* Rank 0: send `count` times, then wait outside MPI for the arrival file; 1 if it came. */
static int send_then_block(const unsigned char *buf, int bytes, int nonblocking, int count,
                           const char *path)
{
    MPI_Request req;
    int waited;

    for (int i = 0; i < count; i++) {
        if (nonblocking) {
            MPI_Isend(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        }
    }
    for (waited = 0; waited < WAIT_SECONDS * 100; waited++) {
        if (0 == access(path, F_OK)) {
            unlink(path);
            return 1;
        }
        usleep(10000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    char path[512];
    unsigned char *buf;
    int bytes, nonblocking, count;

    mt_init(&argc, &argv, "dr2_send_then_block");
    bytes = argc > 1 ? atoi(argv[1]) : 8;
    nonblocking = argc > 2 && 0 == strcmp(argv[2], "isend");
    count = argc > 3 ? atoi(argv[3]) : 1;
    MT_CHECK(2 == mt_size, "needs 2 ranks, has %d", mt_size);
    MT_CHECK(bytes > 0, "BYTES must be positive, is %d", bytes);
    MT_CHECK(argc <= 2 || nonblocking || 0 == strcmp(argv[2], "send"),
             "the mode is send or isend, not %s", argv[2]);
    MT_CHECK(count > 0, "COUNT must be positive, is %d", count);
    if (2 == mt_size && bytes > 0 && count > 0) {
        buf = malloc((size_t) bytes);
        arrival_file(path, sizeof(path));
        if (0 == mt_rank) {
            mt_fill(buf, (size_t) bytes, 0, 1);
            MT_CHECK(send_then_block(buf, bytes, nonblocking, count, path),
                     "rank 1 did not receive the %d message(s) of %d bytes within %d s of the "
                     "last %s's completion while rank 0 stayed out of MPI: a message had not "
                     "left rank 0",
                     count, bytes, WAIT_SECONDS, nonblocking ? "MPI_Isend" : "MPI_Send");
        } else {
            FILE *f;

            if (count > 1) {
                sleep(1); /* out of MPI while rank 0 sends */
            }
            for (int i = 0; i < count; i++) {
                memset(buf, 0, (size_t) bytes);
                MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                mt_intact(buf, (size_t) bytes, 0, 1, "the message");
            }
            f = fopen(path, "w");
            MT_CHECK(NULL != f, "cannot create %s", path);
            if (NULL != f) {
                fclose(f);
            }
        }
        free(buf);
    }
    return mt_finish();
}
