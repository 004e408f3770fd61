/*
 * ompi-resilience: a revoke that arrives while a process allocates a context id.
 *
 * Rank 0 enters MPI_Comm_dup of one communicator while rank 1 is still busy elsewhere, so
 * rank 0 waits inside the context-id agreement, with a slot of Open MPI's communicator
 * table reserved by a sentinel value. Rank 1 then revokes another communicator and only
 * then joins the dup. The revoke reaches rank 0 during that wait: the revoke handler looks
 * through the communicator table for sub-communicators made for the revoked one (Open MPI
 * patch 0007) and must skip the reserved slot (it read the sentinel as a communicator and
 * died of SIGSEGV: the kill campaign's run 109 of seed 3, where a recovery's dup met the
 * revoke of a rank that died catching up).
 *
 * Checks: the dup completes on both ranks, the revoked communicator is revoked on both,
 * the one that was dup'ed is not, and both still talk over the new one. ROUNDS rounds
 * (default 20), each with fresh communicators.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpitest.h"

static void one_round(int round)
{
    MPI_Comm revoked, duped, copy;
    int flag = 0, value = mt_rank + 1, sum = 0;

    MPI_Comm_dup(MPI_COMM_WORLD, &revoked);
    MPI_Comm_dup(MPI_COMM_WORLD, &duped);
    MPI_Comm_set_errhandler(revoked, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);

    if (1 == mt_rank) {
        usleep(100000); /* rank 0 is in the dup's context-id agreement by now */
        MT_CHECK(MPI_SUCCESS == MPIX_Comm_revoke(revoked), "round %d: revoke failed", round);
        usleep(50000); /* the revoke travels while rank 0 still waits */
    }
    int rc = MPI_Comm_dup(duped, &copy);
    MT_CHECK(MPI_SUCCESS == rc, "round %d: MPI_Comm_dup returned %d", round, rc);
    if (MPI_SUCCESS != rc) {
        return;
    }
    MPIX_Comm_is_revoked(revoked, &flag);
    MT_CHECK(flag, "round %d: the revoked communicator is not revoked here", round);
    MPIX_Comm_is_revoked(duped, &flag);
    MT_CHECK(!flag, "round %d: the dup'ed communicator is revoked", round);
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, copy);
    MT_CHECK(mt_size * (mt_size + 1) / 2 == sum, "round %d: sum %d over the copy", round, sum);

    MPI_Comm_free(&copy);
    MPI_Comm_free(&duped);
    MPI_Comm_free(&revoked);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;

    mt_init(&argc, &argv, "ft_revoke_during_dup");
    for (int r = 0; r < rounds; r++) {
        one_round(r);
    }
    return mt_finish();
}
