/*
 * ompi-resilience: coll/ftrabit, checkpoint-aware collectives in the style of Rabit.
 *
 * This release provides the failure-free path: MPI_Allreduce and MPI_Bcast on
 * intra-communicators with deterministic reduction order (same bits on every rank and in
 * every run of the same size). Every other collective stays with the module below ours.
 */
#ifndef MCA_COLL_FTRABIT_H
#define MCA_COLL_FTRABIT_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit_schedule.h"

BEGIN_C_DECLS

typedef struct {
    mca_coll_base_component_2_4_0_t super;

    int priority;
    int verbose;
    int output;                    /* opal_output stream for our verbose messages */

    int allreduce_algorithm;       /* ftrabit_allreduce_alg_t */
    size_t allreduce_rsag_min_bytes;
    int bcast_algorithm;           /* ftrabit_bcast_alg_t */
    size_t bcast_pipeline_min_bytes;
    size_t bcast_segment_bytes;

    /* Read by libftrabit through MPI_T (the FTR_* API). */
    int recovery;                  /* ftrabit_recovery_policy_t */
    int recovery_timeout;          /* seconds; 0: forever */
    int join_timeout;              /* seconds; 0: no limit */
    int recoveries_without_progress; /* in a row before the job ends; 0: no limit */
    int recovery_fallback;         /* shrink or abort, same values as `recovery` */
    int test_kill_in_recovery;     /* original rank that dies in its first recovery, or -1 */
    int test_kill_in_recovery_step; /* where: 0 start, 1 before spawn, 2 before merge */
    int test_kill_in_catch_up;     /* original rank that dies while a replacement catches up */
    bool uniform;                  /* agree on each collective's outcome */
    int local_replicas;
    int result_replicas;
    int result_pool_mib;           /* idle result buffers kept for reuse; -1: no bound */
    int spares;                    /* warm spare processes started with the job */
    int test_kill_spare;           /* world rank of a spare that dies while waiting, or -1 */
    int notice;                    /* 1: a SIGTERM is a preemption notice (ftrabit_notice.c) */
    int test_message_limit;        /* bytes per part of libftrabit's messages; 0: 4 MiB */
    char *checkpoint_dir;          /* durable checkpoints go there; NULL or "": none */
    int checkpoint_keep;           /* versions known complete kept there */
    int test_kill_in_write;        /* original rank whose writer dies in a file, or -1 */
    int test_kill_in_write_version; /* ... of this checkpoint version */

    /* Counters exported as MPI_T performance variables. */
    unsigned long allreduce_calls;
    unsigned long bcast_calls;
} mca_coll_ftrabit_component_t;

OMPI_DECLSPEC extern mca_coll_ftrabit_component_t mca_coll_ftrabit_component;

/* Where a communicator's ranks run, as all of them agree (coll_ftrabit_placement.c). */
typedef struct {
    bool spans_nodes;  /* the ranks run on more than one node */
    bool cores_shared; /* a node of theirs has more ranks than cores */
} ftrabit_placement_t;

typedef struct {
    mca_coll_base_module_2_4_0_t super;

    /* The collectives of the module below ours, kept for what we do not take over. */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;
    mca_coll_base_module_bcast_fn_t previous_bcast;
    mca_coll_base_module_t *previous_bcast_module;

    /* Scratch memory kept from one collective to the next (see ftrabit_scratch_get). */
    void *scratch;
    size_t scratch_size;

    /* Agreed the first time an algorithm choice depends on it (ftrabit_placement). */
    bool placement_known;
    ftrabit_placement_t placement;
} mca_coll_ftrabit_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ftrabit_module_t);

/* Scratch memory for one collective on the module's communicator: `bytes` bytes, or NULL
 * if memory is short; give it back with ftrabit_scratch_put before the collective returns.
 * Needs of up to FTRABIT_SCRATCH_KEEP_MAX bytes are served from one buffer that the module
 * keeps (so that repeated collectives neither allocate nor fault pages in); larger needs
 * get memory of their own, freed by ftrabit_scratch_put. */
#define FTRABIT_SCRATCH_KEEP_MAX ((size_t) 16 << 20)
void *ftrabit_scratch_get(mca_coll_ftrabit_module_t *module, size_t bytes);
void ftrabit_scratch_put(mca_coll_ftrabit_module_t *module, void *mem);

/* A collective's data as the packed bytes of its type signature, which every rank agrees
 * on whatever datatype and count it passed (coll_ftrabit_packed.c): where an algorithm cuts
 * a message, it cuts these bytes. In place when the data is contiguous in memory; else
 * staged through scratch, packed by a sender and unpacked by a receiver as it goes. */
typedef struct {
    char *bytes;    /* the packed bytes: the user's data in place, or the staging buffer */
    size_t len;
    size_t converted; /* staged: bytes packed (sender) or unpacked (receiver) so far */
    bool staged;
    opal_convertor_t convertor; /* staged only */
} ftrabit_packed_t;

/* `count` elements of dtype at buf, to send (`sender`) or to receive. */
int ftrabit_packed_open(ftrabit_packed_t *p, char *buf, size_t count,
                        struct ompi_datatype_t *dtype, bool sender,
                        mca_coll_ftrabit_module_t *module);
/* A sender: bytes [0, upto) are in p->bytes. */
int ftrabit_packed_ready(ftrabit_packed_t *p, size_t upto);
/* A receiver: bytes [0, upto) arrived in p->bytes; they are put in the user's buffer. */
int ftrabit_packed_arrived(ftrabit_packed_t *p, size_t upto);
void ftrabit_packed_close(ftrabit_packed_t *p, mca_coll_ftrabit_module_t *module);

/* An algorithm choice of a collective's call (`call`: what the choice reads of it) for
 * ranks placed as `where`. A pure function of its arguments and the component's
 * parameters, the same on every rank for the same arguments. */
typedef int (*ftrabit_choice_fn_t)(const ftrabit_placement_t *where, const void *call);

/* The choice before the placement is agreed: if `choose` gives the same answer wherever the
 * ranks run, that answer and nothing else; otherwise the ranks agree on where they run (a
 * small allreduce, on every rank at the same call, since every rank sees the same
 * difference) and the choice follows. Returns that allreduce's error if it fails (the
 * caller's collective fails; the next one tries again). */
int ftrabit_choose_before_placement(mca_coll_ftrabit_module_t *module,
                                    struct ompi_communicator_t *comm, ftrabit_choice_fn_t choose,
                                    const void *call, int *choice);

/* `choose` for the ranks of the module's communicator, as they agree they are placed. Once
 * agreed, one inlined call per collective. */
static inline int ftrabit_choose(mca_coll_ftrabit_module_t *module,
                                 struct ompi_communicator_t *comm, ftrabit_choice_fn_t choose,
                                 const void *call, int *choice)
{
    if (OPAL_LIKELY(module->placement_known)) {
        *choice = choose(&module->placement, call);
        return MPI_SUCCESS;
    }
    return ftrabit_choose_before_placement(module, comm, choose, call, choice);
}

/* The allreduce of `count` elements from sbuf (MPI_IN_PLACE: buf) into buf, without the
 * call counting of mca_coll_ftrabit_allreduce or its error handling: the caller's. */
int ftrabit_allreduce_vector(const void *sbuf, void *buf, size_t count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_ftrabit_module_t *module);

int mca_coll_ftrabit_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_ftrabit_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

int mca_coll_ftrabit_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_ftrabit_bcast(void *buff, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Point-to-point helpers shared by the algorithms (coll_ftrabit_p2p.c). A received
 * message that is shorter than expected is a collective called with mismatched
 * arguments: reported, and MPI_ERR_TRUNCATE returned. */

/* A local copy of `count` elements (of the messages' datatype) to do while messages are in
 * flight, so that it costs no extra time when the transfer is the bottleneck. */
typedef struct {
    char *dst;
    const char *src;
    size_t count;
} ftrabit_copy_t;

/* `overlap` (NULL for none) is copied after both messages are posted. */
int ftrabit_sendrecv(const void *sbuf, size_t scount, int dest, void *rbuf, size_t rcount,
                     int source, struct ompi_datatype_t *dtype, int tag,
                     struct ompi_communicator_t *comm, const ftrabit_copy_t *overlap);
int ftrabit_recv_overlapped(void *buf, size_t count, struct ompi_datatype_t *dtype, int source,
                            int tag, struct ompi_communicator_t *comm,
                            const ftrabit_copy_t *overlap);
int ftrabit_send(const void *buf, size_t count, struct ompi_datatype_t *dtype, int dest, int tag,
                 struct ompi_communicator_t *comm);
int ftrabit_recv(void *buf, size_t count, struct ompi_datatype_t *dtype, int source, int tag,
                 struct ompi_communicator_t *comm);
/* After an error: a request no longer needed is cancelled, waited for (a matched receive
 * until its data is in) and freed, whether it ended in error or is still pending: Open MPI
 * frees neither, and each holds its communicator (and so this module and its scratch). */
void ftrabit_request_abandon(ompi_request_t **req);
/* ompi_request_wait_all, and on an error every request left is abandoned as above. */
int ftrabit_wait_all(size_t n, ompi_request_t **reqs);
int ftrabit_check_received(const ompi_status_public_t *status, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_communicator_t *comm,
                           int tag);

/* After a collective failed on this rank: a mismatch of arguments leaves the other ranks
 * waiting for messages that will never come, so with ULFM enabled the communicator is
 * revoked and every rank's collective ends with an error instead of a hang. */
int ftrabit_collective_failed(int err, struct ompi_communicator_t *comm);
/* What a collective returns: the error handling above, then, with coll_ftrabit_uniform,
 * the agreement that makes the outcome the same on every survivor. */
int ftrabit_collective_outcome(int err, struct ompi_communicator_t *comm);

/* The test comes first so that the arguments (such as ompi_comm_print_cid, which formats a
 * string) cost nothing on the fast path when nobody asked for the message. */
#define FTRABIT_VERBOSE(level, ...)                                                      \
    do {                                                                                 \
        if (OPAL_UNLIKELY(mca_coll_ftrabit_component.verbose >= (level))) {              \
            opal_output_verbose(level, mca_coll_ftrabit_component.output, __VA_ARGS__); \
        }                                                                                \
    } while (0)

END_C_DECLS

#endif /* MCA_COLL_FTRABIT_H */
