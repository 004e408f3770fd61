/*
 * ompi-resilience: memory stays bounded across many recoveries (issue 45).
 *
 * A recovery leaves requests that ended in error behind it: the collective that failed
 * (its receives from a rank that will never send, its sends cancelled), and the catch-up's
 * transfers when a recovery fails. Open MPI frees a request that completed in error only
 * when asked to (MPI_Wait and MPI_Waitall leave it allocated, and MPI_Waitall leaves the
 * others pending), and every request holds its communicator: the communicator, and with it
 * coll/ftrabit's scratch memory kept per communicator, then outlives MPI_Comm_free.
 *
 * The run: np N >= 2 under --with-ft ulfm, a plain MPI + ULFM program (as
 * examples/ulfm_allreduce.c) on FTR_Init's communicator. In each of ROUNDS rounds every
 * rank but 0 enters an MPI_Allreduce of BYTES while rank 0 revokes the communicator
 * instead (after a pause, so that the others are inside); the allreduce fails, and all
 * rebuild with FTR_Comm_recover, a recovery with nothing to respawn. Every rank reads its
 * resident memory (VmRSS) after round WARMUP and after the last round, and the growth
 * must stay under LIMIT_MIB; a final allreduce must succeed.
 *
 * Usage: ft_recovery_memory [ROUNDS [BYTES [LIMIT_MIB]]]   defaults 50, 4 MiB, 8
 * Output: "mpitest: rank R done" per rank, the verdict from rank 0.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "mpitest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WARMUP 10

/* Resident memory of this process in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (NULL != f && fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmRSS: %ld kB", &kib)) {
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return kib;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : (size_t) 4 << 20;
    long limit_kib = (argc > 3 ? atol(argv[3]) : 8) * 1024;
    size_t count = bytes / sizeof(double);
    MPI_Comm comm;
    long rss_warm = -1, rss_end = -1;

    FTR_Init(&argc, &argv, &comm);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    mt_name = "ft_recovery_memory";
    if (mt_size < 2 || rounds <= WARMUP) {
        if (0 == mt_rank) fprintf(stderr, "ft_recovery_memory: np >= 2, ROUNDS > %d\n", WARMUP);
        FTR_Finalize();
        return 2;
    }
    double *in = malloc(count * sizeof(double)), *out = malloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++) in[i] = (double) (i % 100);

    for (int round = 0; round < rounds; round++) {
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        if (0 == mt_rank) {
            usleep(20000);
            MPIX_Comm_revoke(comm);
        } else {
            int rc = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, comm);
            MT_CHECK(MPI_SUCCESS != rc, "round %d: the allreduce succeeded on a revoked "
                     "communicator", round);
        }
        int rc = FTR_Comm_recover(&comm);
        MT_CHECK(MPI_SUCCESS == rc, "round %d: FTR_Comm_recover: error %d", round, rc);
        if (MPI_SUCCESS != rc) {
            break;
        }
        if (WARMUP == round) {
            rss_warm = rss_kib();
        }
    }
    rss_end = rss_kib();
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = MPI_Allreduce(in, out, (int) count, MPI_DOUBLE, MPI_SUM, comm);
    MT_CHECK(MPI_SUCCESS == rc && out[1] == (double) mt_size, "final allreduce: error %d", rc);
    long grew = rss_end - rss_warm;
    printf("mpitest %s: rank %d: resident memory %ld KiB after round %d, %ld KiB after round "
           "%d (%+ld KiB)\n", mt_name, mt_rank, rss_warm, WARMUP, rss_end, rounds - 1, grew);
    MT_CHECK(rss_warm > 0 && grew < limit_kib, "resident memory grew by %ld KiB over %d "
             "recoveries (limit %ld KiB)", grew, rounds - 1 - WARMUP, limit_kib);

    free(in);
    free(out);
    /* The verdict over point-to-point on the last communicator, before it goes. */
    long total = mt_failures;
    if (0 == mt_rank) {
        for (int r = 1; r < mt_size; r++) {
            long f = 0;
            MPI_Recv(&f, 1, MPI_LONG, r, 0, comm, MPI_STATUS_IGNORE);
            total += f;
        }
    } else {
        MPI_Send(&mt_failures, 1, MPI_LONG, 0, 0, comm);
    }
    MPI_Comm_free(&comm);
    FTR_Finalize();
    printf("mpitest: rank %d done\n", mt_rank);
    if (0 == mt_rank) {
        printf("mpitest %s: np %d: %s (%ld failed checks)\n", mt_name, mt_size,
               total ? "FAIL" : "PASS", total);
    }
    return total ? 1 : 0;
}
