/*
 * ompi-resilience: libftrabit internals, shared by the files of the FTR_* implementation.
 *
 * One ftrabit_state_t follows each logical communicator the application uses through the
 * API. It owns the communicator every FTR collective, agreement and rebuild runs on
 * (st->comm); the application holds a duplicate of it (st->app_comm), to which the state is
 * attached as an attribute. The application may free its handle whenever MPI allows (before
 * FTR_Finalize or not at all): the state and its communicator live on until FTR_Finalize,
 * whose final agreement every process reaches, so that processes that are done still take
 * part in the recovery of those that are not. Recovery rebuilds st->comm and hands the
 * application a duplicate of the rebuilt one. Sequence numbers count the collectives made through FTR_* calls
 * (bootstrap ones included); the result of each is cached until the next checkpoint, so
 * that ranks that are behind after a failure can be served the exact bytes.
 */
#ifndef FTRABIT_INTERNAL_H
#define FTRABIT_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

#include "ftrabit_bootstrap.h"
#include "ftrabit_cache.h"
#include "ftrabit_recovery.h"

typedef enum {
    FTRABIT_RECOVER_RESPAWN = 0,
    FTRABIT_RECOVER_SHRINK = 1,
    FTRABIT_RECOVER_ABORT = 2,
} ftrabit_recovery_policy_t;

/* Settings, read once from coll/ftrabit's MCA parameters through MPI_T. */
typedef struct {
    ftrabit_recovery_policy_t policy;
    int local_replicas;    /* ring neighbours holding each rank's local checkpoint */
    int result_replicas;   /* ranks keeping each cached result (0: all) */
    int result_pool_mib;   /* idle result buffers kept for reuse (-1: no bound in MiB) */
    int recovery_timeout;  /* seconds the survivors wait for replacements (0: forever) */
    int join_timeout;      /* seconds a replacement has to answer its join record (0: no limit) */
    int recoveries_without_progress; /* the job ends at this many in a row (0: no limit) */
    ftrabit_recovery_policy_t recovery_fallback; /* when they do not come: shrink or abort */
    int test_kill_in_recovery; /* original rank that dies in its first recovery (-1: none) */
    int test_kill_in_recovery_step; /* ... there: FTRABIT_TEST_STEP_* (ftrabit_rebuild.c) */
    int test_kill_in_catch_up; /* ... in a catch-up with a replacement in it (-1: none) */
    int spares;                /* warm spares the job was started with (ftrabit_spares.c) */
    int test_kill_spare;       /* world rank of a spare that dies while waiting (-1: none) */
    int notice;                /* a SIGTERM is a preemption notice (ftrabit_notice.c) */
    int test_message_limit;    /* bytes per part of a message (0: 4 MiB) */
    char *checkpoint_dir;      /* durable checkpoints go there (NULL: none; ftrabit_durable.c) */
    int checkpoint_keep;       /* versions known complete that are kept there */
    int test_kill_in_write;    /* original rank whose writer dies in the middle of a file */
    int test_kill_in_write_version; /* ... of this version */
    int verbose;
} ftrabit_settings_t;

extern ftrabit_settings_t ftrabit_settings;

/* The longest coll_ftrabit_checkpoint_dir accepted (its files' paths must fit PATH_MAX). */
#define FTRABIT_CVAR_STRING_MAX 1024

/* A replica of a ring predecessor's local checkpoint. */
typedef struct {
    int owner;             /* original rank of the owner */
    size_t size;
    void *data;
} ftrabit_replica_t;

/* A result this process holds without keeping it (see ftrabit_held_restart). */
typedef struct ftrabit_held_result {
    uint64_t seq;
    uint64_t key;
    size_t len;
    ftrabit_slot_t slot;
} ftrabit_held_result_t;

typedef struct ftrabit_state {
    MPI_Comm comm;             /* ours: the FTR collectives, agreements and rebuilds run on it */
    MPI_Comm app_comm;         /* the duplicate the application holds; MPI_COMM_NULL once the
                                  application freed it */
    struct ftrabit_state *next; /* every state of this process, for FTR_Finalize */
    int orig_rank, orig_size;  /* identity in the original job (kept by respawn; shrink
                                  renumbers it, see ftrabit_adopt_shrunk_numbering) */
    int first_rank;            /* rank in the communicator FTR_Init returned, never renumbered:
                                  which process this is, for a broadcast's root */
    int *first_rank_of;        /* [first_rank_of_size]: the first_rank of each rank of comm, as
                                  the last catch-up saw them (NULL: ranks are first ranks) */
    int first_rank_of_size;
    uint64_t completed_seq;    /* last collective completed by this process */
    uint64_t served_until;     /* results up to here are in the cache for replay */
    ftrabit_cache_t results;   /* results since the last checkpoint, and replay results */
    ftrabit_held_result_t *held; /* results since held_from that it does not keep, in seq */
    int nheld, held_room;        /* order (ftrabit_api.c); a slot is empty once offered to */
    uint64_t held_from;          /* the catch-up (then cached). Every result in [held_from, */
                                 /* completed_seq] is held: here, or in the cache */
    ftrabit_bootstrap_t bootstrap;
    int bootstrap_over;        /* this process called FTR_Load_checkpoint or FTR_Checkpoint on
                                  it: bootstrap calls are refused from then on (ftrabit_api.c) */

    int version;               /* last committed checkpoint (0: none) */
    uint64_t ckpt_seq;         /* seq of that checkpoint's FTR_Checkpoint call */
    void *global;
    size_t global_size;
    void *local;
    size_t local_size;
    ftrabit_replica_t *replicas; /* of the `nreplicas` ring predecessors */
    int nreplicas;

    void *scratch;             /* reused by allreduces: a non-contiguous one's input, kept
                                  for a retry, or a large contiguous one's result before it
                                  is copied out (ftrabit_api.c) */
    size_t scratch_size;

    int replacement;           /* started by recovery; cleared once caught up */
    int announces_recovery;    /* rank 0 of the survivors in the last rebuild */
    int restart_version;       /* what FTR_Load_checkpoint hands a replacement */
    int spares_taken;          /* spares that took dead ranks in the last recovery */
    int respawned;             /* processes spawned in the last recovery */
    int recoveries;            /* how many recoveries this process took part in */
    struct ftrabit_durable *durable; /* durable checkpoints (NULL: none; ftrabit_durable.c) */
    uint64_t stalled_recoveries; /* how many in a row, up to the last of them, got no further
                                    than served_until */
    double last_recovery_seconds;
} ftrabit_state_t;

/* Process-wide: the program and arguments a replacement is started with. */
extern char *ftrabit_program;
extern char **ftrabit_program_argv;
/* Process-wide: this process was started by a recovery (it joined as a replacement). */
extern int ftrabit_spawned;
/* Process-wide: FTR_ORIGIN_* (FTR_Origin). */
extern int ftrabit_origin;

/* The state of an application handle (FTR_Init's or recovery's), or NULL. */
ftrabit_state_t *ftrabit_state_of(MPI_Comm comm);
/* A new state owning `comm`; no application handle yet. */
ftrabit_state_t *ftrabit_state_new(MPI_Comm comm, int orig_rank, int orig_size);
/* Give the application a duplicate of st->comm in *app, the state attached to it. */
int ftrabit_state_hand_out(ftrabit_state_t *st, MPI_Comm *app);
/* FTR_Finalize: free every state, its communicator and the application's handle if the
 * application kept it. */
void ftrabit_state_release_all(void);
/* The first state of this process (the list FTR_Finalize walks), or NULL. */
ftrabit_state_t *ftrabit_state_first(void);
void ftrabit_read_settings(void);

/* A digest of a datatype's type signature, the same in every process for types built
 * alike (ftrabit_datatype.c). */
int ftrabit_type_signature(MPI_Datatype type, uint64_t *digest);

/* The results this process holds whether it keeps them or not (ftrabit_api.c): every one
 * since the last allreduce it completed (Rabit holds the last result; broadcasts after it
 * are held too, since a broadcast does not wait for everybody). Restart: hold nothing
 * before `from` (an allreduce completed: its seq; a checkpoint committed, or a replacement
 * caught up to it: the seq after it; 0: free everything). Offer: move them into the cache
 * for a catch-up to send; returns 1 and the range held, [*lo, *hi], if there is one. */
void ftrabit_held_restart(ftrabit_state_t *st, uint64_t from);
int ftrabit_held_offer(ftrabit_state_t *st, uint64_t *lo, uint64_t *hi);

/* Is this error code one that recovery can handle? */
int ftrabit_is_process_failure(int err);

/* Rebuild st->comm after a failure and bring every rank to the same sequence number.
 * On success *comm (the application's handle) is a duplicate of the rebuilt communicator
 * and the old handle is freed; with comm NULL nothing is handed out. */
int ftrabit_recover(ftrabit_state_t *st, MPI_Comm *comm);
/* The same, for a rank that has just taken part in an agreement on st->comm that decided a
 * failure (FTR_Checkpoint's commit vote, FTR_Finalize's): that agreement stands for
 * recovery's own. */
int ftrabit_rebuild_after_agreement(ftrabit_state_t *st, MPI_Comm *comm);
/* FTR_Finalize's agreement on st->comm: returns once every living process has reached it,
 * after taking part in the recoveries of those that had not. */
int ftrabit_final_agreement(ftrabit_state_t *st);
/* In a replacement: join the survivors' rebuilt communicator and catch up. */
int ftrabit_join_as_replacement(MPI_Comm parent, MPI_Comm *world);

/* Warm spares (ftrabit_spares.c). The outcome of a standby round, in one process. */
typedef struct {
    int rank;          /* the application rank it holds afterwards (-1: a spare still) */
    MPI_Comm filled;   /* survivors and the spares that took dead ranks, in rank order */
    int unfilled;      /* dead ranks no spare took: to respawn */
    int taken;         /* spares that took dead ranks */
    double started;    /* MPI_Wtime when this process entered the round */
} ftrabit_spares_round_t;
/* FTR_Init with coll_ftrabit_spares > 0: in an application process, *world is its
 * communicator; a spare returns only once it took a dead rank's place (*world is then the
 * rebuilt communicator), or never (released by FTR_Finalize, it exits). */
int ftrabit_spares_init(MPI_Comm *world);
/* Spares are waiting: recoveries go through a standby round. */
int ftrabit_spares_active(void);
/* Every live member of the standby communicator (survivors: my_rank is their rank;
 * spares: -1) takes part; recovery runs it instead of shrinking its communicator. */
int ftrabit_spares_round(int my_rank, ftrabit_spares_round_t *out);
/* FTR_Finalize: waiting spares leave. */
void ftrabit_spares_release(void);
/* A process whose rank a standby round handed over after a preemption notice: it waits
 * as a spare that never takes a rank, until FTR_Finalize releases it; never returns. */
void ftrabit_spares_wait_out(void) __attribute__((noreturn));
/* In a spare chosen by a round: complete the rebuild with the survivors and catch up. */
int ftrabit_join_as_spare(const ftrabit_spares_round_t *round, int app_size, MPI_Comm *world);

/* The catch-up exchange over a rebuilt communicator (both sides). */
/* *plan_failed: the error is the plan's (every rank computed the same one, no transfer
 * started), not a transfer's. */
int ftrabit_catch_up(ftrabit_state_t *st, int *plan_failed);

/* Checkpoint storage (ftrabit_checkpoint.c). */
/* The bits of FTR_Checkpoint's agreement flag (combined by bitwise AND), all here so that
 * no two share a value: a version commits only where every rank sets EXCHANGED. */
#define FTRABIT_AGREE_EXCHANGED 1    /* this rank has its predecessors' replicas */
#define FTRABIT_AGREE_PREV_WRITTEN 2 /* its durable write of the previous version is complete */
#define FTRABIT_AGREE_DURABLE_OK 4   /* it had no durable write error (ftrabit_durable.h) */
#define FTRABIT_AGREE_NO_NOTICE 8    /* it got no preemption notice (ftrabit_notice.h) */
int ftrabit_checkpoint_exchange(ftrabit_state_t *st, const void *global, size_t global_size,
                                const void *local, size_t local_size);
/* Collective: commit `version` (read back from disk, ftrabit_durable.c) as if FTR_Checkpoint
 * had just committed it: the state takes the buffers (freed on an error), the ring
 * exchange gives each rank its predecessors' replicas again. */
int ftrabit_checkpoint_adopt(ftrabit_state_t *st, int version, void *global, size_t global_size,
                             void *local, size_t local_size);

/* Messages of any size (ftrabit_message.c): a length, then parts of a few MiB, each part
 * that completes counting as a recovery's progress. Sends are posted into a set and
 * waited for together; ftrabit_recv_blob receives one message from `from` into a new
 * buffer (freed by the caller). */
typedef struct {
    MPI_Request *reqs;
    int n, room;
    unsigned char *headers; /* each message's length, kept until sent */
    int nmessages, max_messages;
} ftrabit_sends_t;
int ftrabit_sends_open(ftrabit_sends_t *s, int max_messages);
int ftrabit_sends_post(ftrabit_sends_t *s, const void *buf, size_t len, int to, int tag,
                       MPI_Comm comm);
/* Waits for every send posted, and closes the set. On an error (a process failure first,
 * if any) the sends left are let go: Open MPI's waits leave a request that ended in error
 * allocated and, under ULFM, others pending, and each holds its communicator. A send let
 * go may still read its buffer: the caller keeps it allocated. */
int ftrabit_sends_wait(ftrabit_sends_t *s);
int ftrabit_send_bytes(const void *buf, size_t len, int to, int tag, MPI_Comm comm);
int ftrabit_recv_blob(int from, int tag, MPI_Comm comm, void **buf, size_t *len);

/* Replicas of ring predecessors' local checkpoints (ftrabit_checkpoint.c). */
void ftrabit_replicas_free(ftrabit_replica_t *replicas, int n);
void ftrabit_replicas_replace(ftrabit_state_t *st, ftrabit_replica_t *replicas, int n);

void ftrabit_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
