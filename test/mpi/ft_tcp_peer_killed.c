/*
 * ompi-resilience: a process that sends to a TCP peer that was just killed gets
 * MPIX_ERR_PROC_FAILED and goes on; it is not killed by SIGPIPE.
 *
 * Plain MPI plus the ULFM extension (mpi-ext.h, MPIX_*), no ompi-resilience component, and
 * SIGPIPE left at its default action, as in any program that does not think of it. Run with
 * `mpirun --with-ft ulfm --mca btl tcp,self` (any number of processes >= 2).
 *
 * Rank 1 receives a few messages of BYTES, all that rank 0 sent so far (MPI_Ssend), and
 * kills itself with SIGKILL; its socket is empty, so its kernel closes it with a FIN. Rank
 * 0 then streams more messages to it with several sends in flight: the first write on the
 * half-closed connection succeeds and draws a reset, the next fails with EPIPE. Open MPI
 * 5.0.7's btl/tcp writes with writev() and suppresses SIGPIPE only where SO_NOSIGPIPE
 * exists (not on Linux), so that write raised SIGPIPE and killed rank 0: a second process
 * lost to the first one's failure. Open MPI patch 0015 sends with MSG_NOSIGNAL
 * (docs/ompi-patches.md). The other ranks (np > 2) wait in a barrier that fails.
 *
 * Afterwards the survivors revoke, shrink and agree, check an allreduce over the shrunk
 * communicator and end with MPI_Finalize.
 *
 * Usage: ft_tcp_peer_killed [BYTES [ROUNDS]]   defaults 1048576 and 1 (ROUNDS: how many
 *        times the stream and the kill are repeated with a fresh pair of ranks: rank 0
 *        streams to rank 1, then to rank 2, ...; np must be at least ROUNDS + 1)
 *
 * Output: "mpitest: rank R done" after MPI_Finalize returned; rank 0 prints the verdict
 * "mpitest ft_tcp_peer_killed: np N: PASS" (or FAIL) after that.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include "mpitest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef OMPI_HAVE_MPI_EXT_FTMPI
#error "this test needs Open MPI's ULFM extension (mpi-ext.h with MPIX_Comm_shrink)"
#endif

#define IN_FLIGHT 8
#define RECEIVED_BEFORE_DEATH 3
/* rank 0 gives up streaming after this long without learning of the death */
#define STREAM_LIMIT_S 60.0

static int error_class(int rc)
{
    int cls = MPI_ERR_UNKNOWN;
    MPI_Error_class(rc, &cls);
    return cls;
}

static int is_failure_class(int cls)
{
    return MPIX_ERR_PROC_FAILED == cls || MPIX_ERR_PROC_FAILED_PENDING == cls
           || MPIX_ERR_REVOKED == cls;
}

/* The victim: receive a few messages, all of what was sent, then die. Its socket is empty
 * when it dies, so the kernel closes it with a FIN, not a reset. */
static void receive_then_die(MPI_Comm comm, char *buf, int bytes)
{
    for (int i = 0; i < RECEIVED_BEFORE_DEATH; i++) {
        MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, comm, MPI_STATUS_IGNORE);
    }
    raise(SIGKILL);
    pause();
}

/* Rank 0: stream to `victim` until a send fails. Returns the error class seen. */
static int stream_until_failure(MPI_Comm comm, int victim, char *buf, int bytes)
{
    MPI_Request reqs[IN_FLIGHT];
    double start = MPI_Wtime();
    int cls = MPI_SUCCESS, sent = 0;

    for (int i = 0; i < RECEIVED_BEFORE_DEATH; i++) {
        MPI_Ssend(buf, bytes, MPI_BYTE, victim, 0, comm);
    }
    /* let the victim die and its FIN arrive; the next write on the half-closed connection
     * succeeds and draws a reset, the one after it fails with EPIPE */
    usleep(200 * 1000);
    for (int i = 0; i < IN_FLIGHT; i++) reqs[i] = MPI_REQUEST_NULL;
    while (MPI_SUCCESS == cls && MPI_Wtime() - start < STREAM_LIMIT_S) {
        int slot = sent % IN_FLIGHT, rc;
        if (MPI_REQUEST_NULL != reqs[slot]) {
            rc = MPI_Wait(&reqs[slot], MPI_STATUS_IGNORE);
            cls = error_class(rc);
            if (MPI_SUCCESS != cls) break;
        }
        rc = MPI_Isend(buf, bytes, MPI_BYTE, victim, 0, comm, &reqs[slot]);
        cls = error_class(rc);
        sent++;
    }
    for (int i = 0; i < IN_FLIGHT; i++) {
        if (MPI_REQUEST_NULL != reqs[i]) {
            int rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            if (MPI_SUCCESS == cls) cls = error_class(rc);
        }
    }
    printf("mpitest %s: rank %d: streamed %d messages to rank %d, then error class %d\n",
           mt_name, mt_rank, sent, victim, cls);
    return cls;
}

/* Revoke, shrink, agree; *comm becomes the shrunk communicator. Returns whether it has
 * the expected size (a smaller one: a survivor died too, rank 0 by SIGPIPE before 0015). */
static int shrink_round(MPI_Comm *comm, int expected_size)
{
    MPI_Comm shrunk;
    int rc, flag = 1, size;

    MPIX_Comm_revoke(*comm);
    rc = MPIX_Comm_shrink(*comm, &shrunk);
    MT_CHECK(MPI_SUCCESS == rc, "shrink returned class %d", error_class(rc));
    if (MPI_SUCCESS != rc) return 0;
    MPI_Comm_free(comm);
    *comm = shrunk;
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    rc = MPIX_Comm_agree(*comm, &flag);
    MT_CHECK(MPI_SUCCESS == rc && 1 == flag, "agree returned class %d, flag %d", error_class(rc),
          flag);
    MPI_Comm_size(*comm, &size);
    MT_CHECK(size == expected_size, "shrunk communicator has %d ranks, expected %d", size,
          expected_size);
    return size == expected_size;
}

int main(int argc, char **argv)
{
    int bytes = argc > 1 ? atoi(argv[1]) : 1 << 20, rounds = argc > 2 ? atoi(argv[2]) : 1;
    MPI_Comm comm;
    char *buf;

    mt_init(&argc, &argv, "ft_tcp_peer_killed");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (bytes < 1 || rounds < 1 || mt_size < rounds + 1) {
        if (0 == mt_rank) fprintf(stderr, "usage: %s [BYTES [ROUNDS]], np > ROUNDS\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    buf = malloc(bytes);
    memset(buf, mt_rank, bytes);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Barrier(comm);

    for (int victim = 1; victim <= rounds; victim++) {
        /* after each round the shrunk communicator has lost one rank, so the next victim,
         * world rank `victim`, is rank 1 of it */
        if (mt_rank == victim) {
            receive_then_die(comm, buf, bytes);
        } else if (0 == mt_rank) {
            int cls = stream_until_failure(comm, 1, buf, bytes);
            MT_CHECK(is_failure_class(cls), "the stream to dead rank %d ended with class %d",
                  victim, cls);
        } else {
            int rc = MPI_Barrier(comm);
            MT_CHECK(is_failure_class(error_class(rc)), "barrier returned class %d",
                  error_class(rc));
        }
        if (!shrink_round(&comm, mt_size - victim)) break;
    }

    if (0 == mt_failures) {
        long in = 1 + mt_rank, out = 0, expect = 1;
        for (int r = rounds + 1; r < mt_size; r++) expect += 1 + r;
        int rc = MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, comm);
        MT_CHECK(MPI_SUCCESS == rc && out == expect,
              "allreduce returned class %d, sum %ld, expected %ld", error_class(rc), out, expect);
    }

    MPI_Comm_free(&comm);
    free(buf);
    MPI_Finalize();
    printf("mpitest: rank %d done\n", mt_rank);
    if (0 == mt_rank) {
        printf("mpitest %s: np %d: %s (%ld failed checks, %d victims)\n", mt_name, mt_size,
               mt_failures ? "FAIL" : "PASS", mt_failures, rounds);
    }
    return mt_failures ? 1 : 0;
}
