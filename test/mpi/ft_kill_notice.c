/*
 * The least a ULFM job needs from its launcher: the last rank kills itself (SIGKILL) after
 * a barrier, rank 0 waits in MPI_Recv for a message from it and must get
 * MPIX_ERR_PROC_FAILED, then every survivor finalizes. Plain MPI + ULFM, no
 * ompi-resilience component needed; for the spellings that enable fault tolerance
 * (--with-ft ulfm, -am ft-enable-mpi, --tune ft-mpi...).
 *
 * Rank 0 prints "survivor got MPI_ERR_PROC_FAILED" and the verdict; a launcher that ends
 * the job at the failure leaves neither.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, eclass = MPI_SUCCESS, value = 0, ok = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        raise(SIGKILL);
    }
    if (rank == 0) {
        int err = MPI_Recv(&value, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Error_class(err, &eclass);
        ok = MPIX_ERR_PROC_FAILED == eclass;
        printf("rank 0: MPI_Recv from the dead rank returned error class %d (%s)\n", eclass,
               ok ? "MPIX_ERR_PROC_FAILED" : "not MPIX_ERR_PROC_FAILED");
        if (ok) {
            printf("survivor got MPI_ERR_PROC_FAILED\n");
        }
        fflush(stdout);
    }
    MPI_Finalize();
    printf("mpitest: rank %d done\n", rank);
    if (rank == 0) {
        printf("mpitest ft_kill_notice: np %d: %s\n", size, ok ? "PASS" : "FAIL");
    }
    return ok ? 0 : 1;
}
