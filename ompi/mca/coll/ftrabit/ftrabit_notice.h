/*
 * ompi-resilience: libftrabit preemption notices (ftrabit_notice.c): a SIGTERM taken as the
 * notice that this process will be gone soon, and the handover of its rank that it starts
 * at the next FTR_Checkpoint.
 */
#ifndef FTRABIT_NOTICE_H
#define FTRABIT_NOTICE_H

#include <mpi.h>

#include "ftrabit_internal.h"

/* FTR_Init, with coll_ftrabit_notice 1: SIGTERM becomes a notice, unless the program
 * handles or ignores it itself. */
void ftrabit_notice_install(void);
/* This process got a notice. */
int ftrabit_notice_pending(void);
/* Its part of the commit vote: FTRABIT_AGREE_NO_NOTICE unless it got a notice. */
int ftrabit_notice_vote(void);
/* FTR_Checkpoint, once version st->version is committed everywhere, with the agreed vote:
 * if some rank got a notice, every rank takes part in handing the notified ranks over
 * (the notified processes never return from here). MPI_SUCCESS, or recovery's error. */
int ftrabit_notice_after_commit(ftrabit_state_t *st, MPI_Comm *comm, int vote);

/* For the rebuild (ftrabit_rebuild.c), the same on every process of it. The rank this
 * process brings to a standby round: FTRABIT_SPARE_LEAVING when it is handed over. */
int ftrabit_notice_standby_rank(const ftrabit_state_t *st);
/* After a successful standby round: the notified ranks are out. MPI_ERR_OTHER in a process
 * handed over (it leaves once the rebuild is unwound: ftrabit_notice_after_commit). */
int ftrabit_notice_after_round(int new_rank);
/* After the shrink of a rebuild without spares: a handover takes the notified ranks out of
 * *shrunk (a split, then an agreement on it). MPI_ERR_PROC_FAILED: a process died, rebuild
 * again (*shrunk freed); MPI_ERR_OTHER: this process was handed over (*shrunk kept). */
int ftrabit_notice_split_out(MPI_Comm *shrunk);
/* What recovery announces: whether the last rebuild handed notified ranks over (read once). */
int ftrabit_notice_take_handed_over(void);

#endif
