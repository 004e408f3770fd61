/*
 * Which communicators coll ftrabit serves: intra-communicators of two or more ranks
 * (world, dups, splits, groups), not single-rank ones; other collectives keep working
 * through the module below and are not counted. With the argument "excluded" (run with
 * --mca coll ^ftrabit) the component must not be there at all.
 */
#include <string.h>

#include "mpitest.h"

static void expect_served(MPI_Comm comm, const char *what, int served)
{
    int size;
    MPI_Comm_size(comm, &size);
    long a0 = mt_ftrabit_counter("allreduce_calls"), b0 = mt_ftrabit_counter("bcast_calls");
    int x = mt_rank + 1, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm);
    int v = mt_rank == 0 ? 42 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, comm);
    long a1 = mt_ftrabit_counter("allreduce_calls"), b1 = mt_ftrabit_counter("bcast_calls");
    MT_CHECK(a1 - a0 == served && b1 - b0 == served,
             "%s (%d ranks): ftrabit served %ld allreduce and %ld bcast, expected %d each", what,
             size, a1 - a0, b1 - b0, served);
    MT_CHECK(sum > 0, "%s: allreduce result %d", what, sum);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_selection");
    int excluded = argc > 1 && strcmp(argv[1], "excluded") == 0;

    if (excluded) {
        MT_CHECK(mt_ftrabit_counter("allreduce_calls") == -1,
                 "coll ftrabit is loaded although it was excluded");
        int x = 1, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MT_CHECK(sum == mt_size, "tuned allreduce gave %d", sum);
        return mt_finish();
    }

    int multi = mt_size > 1;
    expect_served(MPI_COMM_WORLD, "MPI_COMM_WORLD", multi);
    expect_served(MPI_COMM_SELF, "MPI_COMM_SELF", 0);

    MPI_Comm dup, half, group_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    expect_served(dup, "a dup of MPI_COMM_WORLD", multi);

    MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_size - mt_rank, &half);
    int half_size;
    MPI_Comm_size(half, &half_size);
    expect_served(half, "a split by parity", half_size > 1);

    MPI_Group world_group, first_three;
    int ranks[3] = {0, 1, 2};
    int n = mt_size < 3 ? mt_size : 3;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, n, ranks, &first_three);
    if (mt_rank < n) {
        MPI_Comm_create_group(MPI_COMM_WORLD, first_three, 7, &group_comm);
        expect_served(group_comm, "a group communicator", n > 1);
        MPI_Comm_free(&group_comm);
    }

    /* Other collectives are not ours and still work. */
    long a0 = mt_ftrabit_counter("allreduce_calls");
    int x = mt_rank, total = -1, gathered[64];
    MPI_Reduce(&x, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allgather(&x, 1, MPI_INT, gathered, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MT_CHECK(mt_rank != 0 || total == mt_size * (mt_size - 1) / 2, "MPI_Reduce gave %d", total);
    for (int r = 0; r < mt_size && r < 64; r++) {
        MT_CHECK(gathered[r] == r, "MPI_Allgather slot %d holds %d", r, gathered[r]);
    }
    MT_CHECK(mt_ftrabit_counter("allreduce_calls") == a0,
             "other collectives were counted as ftrabit allreduces");

    MPI_Group_free(&first_three);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    return mt_finish();
}
