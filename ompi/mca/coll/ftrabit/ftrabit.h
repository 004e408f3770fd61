/*
 * ompi-resilience: the public API of coll/ftrabit (libftrabit).
 *
 *   #include <ftrabit.h>      link with -lftrabit
 *
 * Rabit-style fault tolerance on ULFM: when a process dies, survivors replace it (or carry
 * on without it), the replacement reloads the last in-memory checkpoint and replays, and
 * the collectives it re-runs are served the exact results the others got. Run under
 * `mpirun --with-ft ulfm`.
 *
 * All functions return MPI_SUCCESS or an MPI error code. Communicators are passed by
 * pointer: recovery replaces *comm with the rebuilt communicator.
 */
#ifndef FTRABIT_H
#define FTRABIT_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libftrabit is built with hidden visibility: only this API is exported. */
#if defined(__GNUC__)
#define FTR_EXPORT __attribute__((visibility("default")))
#else
#define FTR_EXPORT
#endif

/* MPI_Init_thread if needed. *world: a dup of MPI_COMM_WORLD in an original process, or,
 * in a replacement started by recovery, the rebuilt communicator in which it holds the
 * rank of the process it replaces. Same size, same ranks.
 * With coll_ftrabit_spares N (start the job with N processes more), N processes of
 * MPI_COMM_WORLD wait inside FTR_Init as spares and *world holds the others (ranks in
 * MPI_COMM_WORLD order). A spare returns from FTR_Init only when it takes a dead rank's
 * place (as a replacement does); an unused spare never returns: when the application calls
 * FTR_Finalize, it calls MPI_Finalize and exit(0) inside FTR_Init. Code before FTR_Init
 * runs in every process, code after it only in those that hold a rank.
 * With coll_ftrabit_checkpoint_dir DIR, the processes started by mpirun resume here, all
 * together, from the newest checkpoint version complete on every rank in DIR (what
 * FTR_Load_checkpoint then returns); MPI_ERR_OTHER on every rank when DIR holds another
 * program's checkpoints, or a newer one of another number of ranks (FTR_Init(3)). */
FTR_EXPORT int FTR_Init(int *argc, char ***argv, MPI_Comm *world);
/* Collective over every FTR communicator: a process that is done still takes part in the
 * recovery of processes that failed before reaching it; then it releases unused spares and
 * calls MPI_Finalize. The application may have freed its FTR communicators before, or not.
 * With spares, end with FTR_Finalize, not with MPI_Finalize alone: the spares would wait
 * for ever. */
FTR_EXPORT int FTR_Finalize(void);

/* How this process came to hold its rank. */
#define FTR_ORIGIN_ORIGINAL 0  /* started by mpirun with the job */
#define FTR_ORIGIN_RESPAWNED 1 /* started by recovery (MPI_Comm_spawn) to replace a dead rank */
#define FTR_ORIGIN_SPARE 2     /* a warm spare (coll_ftrabit_spares) that took a dead rank */
FTR_EXPORT int FTR_Origin(int *origin);

/* In place. While recovery is possible they never return a process-failure error: they
 * recover (replacing *comm by the rebuilt communicator) and complete the operation. */
FTR_EXPORT int FTR_Allreduce(void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm *comm);
FTR_EXPORT int FTR_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm *comm);

/* Results kept for the job's life, keyed by call site and by how many times that call
 * site ran in this process: for the collectives of the initialisation, before this
 * process's first FTR_Load_checkpoint or FTR_Checkpoint on the communicator; refused
 * (MPI_ERR_OTHER) after it. A replay must use the same count, op or root, and a datatype
 * of the same type signature (MPI_ERR_ARG, MPI_ERR_TYPE otherwise). */
#define FTR_Allreduce_bootstrap(buf, count, type, op, comm) \
    FTR_Allreduce_bootstrap_at((buf), (count), (type), (op), (comm), __FILE__, __LINE__, __func__)
#define FTR_Bcast_bootstrap(buf, count, type, root, comm) \
    FTR_Bcast_bootstrap_at((buf), (count), (type), (root), (comm), __FILE__, __LINE__, __func__)
FTR_EXPORT int FTR_Allreduce_bootstrap_at(void *buf, int count, MPI_Datatype type, MPI_Op op,
                                          MPI_Comm *comm, const char *file, int line,
                                          const char *func);
FTR_EXPORT int FTR_Bcast_bootstrap_at(void *buf, int count, MPI_Datatype type, int root,
                                      MPI_Comm *comm, const char *file, int line,
                                      const char *func);

/* Collective. `global` is identical on every rank; `local` is this rank's own state,
 * replicated to ring neighbours. Commits a new version on every rank or on none. A failure
 * inside it is recovered from and the checkpoint retried, except when no FTR collective ran
 * since the last checkpoint under respawn (the replacement could not replay up to here):
 * then it returns MPIX_ERR_PROC_FAILED with *comm already rebuilt and nothing committed,
 * and the application goes back to FTR_Load_checkpoint, as after a failed plain collective.
 * With coll_ftrabit_checkpoint_dir, each committed version is also written to disk by a
 * background thread (FTR_Checkpoint(3)). */
FTR_EXPORT int FTR_Checkpoint(MPI_Comm *comm, const void *global, size_t global_size,
                              const void *local, size_t local_size);
/* version 0: fresh start, buffers untouched (unless FTR_Init resumed from durable
 * checkpoints). In a replacement: the last committed version, global from any survivor,
 * local from a ring neighbour's replica. */
FTR_EXPORT int FTR_Load_checkpoint(MPI_Comm *comm, void *global, size_t global_size,
                                   void *local, size_t local_size, int *version);
FTR_EXPORT int FTR_Version(MPI_Comm comm, int *version);

/* What the result cache of `comm` holds: how many results are kept now (until the next
 * checkpoint, for ranks that may replay), their bytes, and all the memory held for them:
 * their buffers, buffers kept for reuse by the next checkpoint interval (see
 * coll_ftrabit_result_pool_mib), the index. Right after a checkpoint `results` is 0 and
 * `held_bytes` is what the cache holds between checkpoints. */
FTR_EXPORT int FTR_Cache_memory(MPI_Comm comm, size_t *results, size_t *result_bytes,
                                size_t *held_bytes);

/* For applications that call MPI_Allreduce/MPI_Bcast themselves: after one of them failed
 * with MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED, rebuild *comm (per coll_ftrabit_recovery)
 * and carry the ftrabit state (sequence numbers, caches, checkpoints) over to it. */
FTR_EXPORT int FTR_Comm_recover(MPI_Comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* FTRABIT_H */
