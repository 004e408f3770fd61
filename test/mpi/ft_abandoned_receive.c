/*
 * ompi-resilience: an MPI_Allreduce that fails writes nothing into the receive buffer once
 * it has returned (issue 45).
 *
 * coll/ftrabit exchanges data with a receive posted before the send of the same step. When
 * that send fails (here: MPIX_ERR_REVOKED, the partner having learned of an unrelated
 * process failure first) while the receive has already matched the partner's message, the
 * partner, alive, goes on sending it. A receive abandoned by freeing it stays active in the
 * PML: the rest of the message then lands in the caller's buffer after MPI_Allreduce
 * returned (or in scratch memory already freed, or in a result libftrabit keeps).
 *
 * The run, np 4, --with-ft ulfm --mca pml dr2, coll_ftrabit_allreduce_algorithm
 * recursive_doubling (ranks 0 and 1 exchange first). pml/ob1 never shows it: over one
 * connection per pair of processes, rank 1's refusal of rank 0's message travels behind
 * the data of rank 1's own message, so rank 0's send fails only once that data is in;
 * pml/dr2 ends a send to a revoked communicator at once. Before the fix, 48-65 MB of the
 * 64 MiB were written after MPI_Allreduce returned, in 4 runs of 4 (sm and tcp).
 *   rank 1: enters MPI_Allreduce of BYTES at once, so its message to rank 0 (their first
 *           exchange) is announced while rank 0 is still in an MPI_Recv;
 *   rank 2: sends rank 0 a "go" after 0.2 s, and kills itself 0.3 s later;
 *   rank 0: receives the go (its progress queues rank 1's message), then computes for
 *           1 s without calling MPI (so it learns of the death only later), then enters
 *           MPI_Allreduce: its receive matches rank 1's message at once, its own message
 *           reaches rank 1 after rank 1 learned of the death and is refused; the allreduce
 *           fails. Rank 0 then fills its receive buffer with a mark, keeps MPI progressing
 *           for 1 s, and checks that the mark is intact;
 *   rank 3: waits in a barrier that the death ends.
 * The survivors then shrink, agree and check an allreduce on the shrunk communicator.
 *
 * Usage: ft_abandoned_receive [BYTES]   (default 64 MiB)
 * Output: "mpitest: rank R done" per survivor; rank 0 prints the verdict.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include "mpitest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MARK 0x5a
#define TAG_GO 11

static void progress_for(double seconds)
{
    double end = MPI_Wtime() + seconds;
    while (MPI_Wtime() < end) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_GO, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
        usleep(100);
    }
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : (size_t) 64 << 20;
    size_t count = bytes / sizeof(double);
    MPI_Comm comm, shrunk;
    int rc;

    mt_init(&argc, &argv, "ft_abandoned_receive");
    if (4 != mt_size) {
        if (0 == mt_rank) fprintf(stderr, "ft_abandoned_receive: run on 4 ranks\n");
        MPI_Finalize();
        return 2;
    }
    double *in = malloc(count * sizeof(double)), *out = malloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++) in[i] = (double) (i % 1000 + mt_rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Connections up and the ranks' placement agreed before the race. */
    rc = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, comm);
    MT_CHECK(MPI_SUCCESS == rc, "first allreduce: error %d", rc);
    MPI_Barrier(MPI_COMM_WORLD);

    switch (mt_rank) {
    case 0: {
        char go;
        MPI_Recv(&go, 1, MPI_CHAR, 2, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep(1); /* computing: no MPI progress */
        double t0 = MPI_Wtime();
        rc = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, comm);
        printf("mpitest %s: rank 0: allreduce took %.3f s\n", mt_name, MPI_Wtime() - t0);
        MT_CHECK(MPI_SUCCESS != rc, "the allreduce succeeded although rank 2 died");
        memset(out, MARK, count * sizeof(double));
        progress_for(1.0);
        size_t changed = 0;
        for (size_t i = 0; i < count * sizeof(double); i++) {
            changed += MARK != ((unsigned char *) out)[i];
        }
        printf("mpitest %s: rank 0: allreduce returned %d; %zu bytes of its receive buffer "
               "written after it returned\n", mt_name, rc, changed);
        MT_CHECK(0 == changed, "%zu bytes written into the receive buffer after "
                 "MPI_Allreduce returned", changed);
        break;
    }
    case 1:
        rc = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, comm);
        MT_CHECK(MPI_SUCCESS != rc, "the allreduce succeeded although rank 2 died");
        break;
    case 2: {
        char go = 1;
        usleep(200000);
        MPI_Send(&go, 1, MPI_CHAR, 0, TAG_GO, MPI_COMM_WORLD);
        usleep(300000);
        raise(SIGKILL);
        pause();
        break;
    }
    default:
        rc = MPI_Barrier(comm);
        MT_CHECK(MPI_SUCCESS != rc, "the barrier succeeded although rank 2 died");
    }

    MPIX_Comm_revoke(comm);
    rc = MPIX_Comm_shrink(comm, &shrunk);
    MT_CHECK(MPI_SUCCESS == rc, "shrink: error %d", rc);
    if (MPI_SUCCESS == rc) {
        int flag = 1, size;
        MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
        rc = MPIX_Comm_agree(shrunk, &flag);
        MPI_Comm_size(shrunk, &size);
        MT_CHECK(MPI_SUCCESS == rc && 3 == size, "agree: error %d, %d ranks", rc, size);
        long one = 1, sum = 0;
        rc = MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, shrunk);
        MT_CHECK(MPI_SUCCESS == rc && 3 == sum, "allreduce after shrink: error %d, sum %ld",
                 rc, sum);
        MPI_Comm_free(&shrunk);
    }
    MPI_Comm_free(&comm);
    free(in);
    free(out);
    MPI_Finalize();
    printf("mpitest: rank %d done\n", mt_rank);
    if (0 == mt_rank) {
        printf("mpitest %s: np %d: %s (%ld failed checks)\n", mt_name, mt_size,
               mt_failures ? "FAIL" : "PASS", mt_failures);
    }
    return mt_failures ? 1 : 0;
}
