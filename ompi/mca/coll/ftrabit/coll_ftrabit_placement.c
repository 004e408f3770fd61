/*
 * ompi-resilience: coll/ftrabit, where a communicator's ranks run, as all of them agree.
 *
 * Two facts choose algorithms: whether the ranks span more than one node (from which size
 * the allreduce reduce-scatters) and whether a node of theirs has more ranks than cores
 * (whether a broadcast may use the pipeline). Each process knows them about itself for
 * certain (its own host; whether its own node is oversubscribed), but they differ from
 * process to process, and every rank of a collective must pick the same algorithm or the
 * collective waits for ever: a broadcast on a communicator of three ranks on an
 * oversubscribed host and one on another picked the binomial tree on the first three and
 * the pipeline on the fourth, and hung. So the ranks agree: one small allreduce of
 * (oversubscribed, host hash, ~host hash) with MPI_MAX, per communicator, the first time a
 * choice depends on them. The hash of the host's name rather than Open MPI's view of which
 * peers are local, which a process that joined later (a replacement) need not share.
 */
#include "ompi_config.h"

#include <stdint.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "ompi/runtime/params.h"
#include "opal/util/proc.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

/* FNV-1a, 64 bits, of this process's host name (opal_process_info.nodename). */
static uint64_t ftrabit_host_hash(void)
{
    const char *name = NULL != OPAL_PROC_MY_HOSTNAME ? OPAL_PROC_MY_HOSTNAME : "";
    uint64_t h = 14695981039346656037ULL;

    for (const unsigned char *p = (const unsigned char *) name; '\0' != *p; p++) {
        h = (h ^ *p) * 1099511628211ULL;
    }
    return h;
}

/* Agree on where the ranks run: one allreduce of (oversubscribed, host hash, ~host hash)
 * with MPI_MAX. Its 24 bytes choose an algorithm without the placement under every
 * setting (far below any reduce-scatter threshold), so it never asks for one itself. */
static int ftrabit_agree_placement(mca_coll_ftrabit_module_t *module,
                                   struct ompi_communicator_t *comm)
{
    uint64_t mine[3], all[3];
    int err;

    mine[0] = ompi_mpi_oversubscribed ? 1 : 0;
    mine[1] = ftrabit_host_hash();
    mine[2] = ~mine[1]; /* its maximum is the complement of the hashes' minimum */
    err = ftrabit_allreduce_vector(mine, all, 3, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op, comm,
                                   module);
    if (MPI_SUCCESS != err) {
        return err; /* nothing agreed: the next collective tries again */
    }
    module->placement.cores_shared = 0 != all[0];
    module->placement.spans_nodes = all[1] != ~all[2];
    module->placement_known = true;
    FTRABIT_VERBOSE(5, "coll:ftrabit: communicator %s, agreed by its %d ranks: %s node, %s",
                    ompi_comm_print_cid(comm), ompi_comm_size(comm),
                    module->placement.spans_nodes ? "more than one" : "one",
                    module->placement.cores_shared ? "more ranks than cores on a node"
                                                   : "no node with more ranks than cores");
    return MPI_SUCCESS;
}

int ftrabit_choose_before_placement(mca_coll_ftrabit_module_t *module,
                                    struct ompi_communicator_t *comm, ftrabit_choice_fn_t choose,
                                    const void *call, int *choice)
{
    static const ftrabit_placement_t every[] = {
        {.spans_nodes = false, .cores_shared = false},
        {.spans_nodes = false, .cores_shared = true},
        {.spans_nodes = true, .cores_shared = false},
        {.spans_nodes = true, .cores_shared = true},
    };
    int first = choose(&every[0], call);
    bool differs = false;

    for (size_t i = 1; i < sizeof(every) / sizeof(every[0]); i++) {
        differs = differs || choose(&every[i], call) != first;
    }
    if (!differs) {
        *choice = first; /* the same wherever the ranks run */
        return MPI_SUCCESS;
    }
    int err = ftrabit_agree_placement(module, comm);
    if (MPI_SUCCESS != err) {
        return err;
    }
    *choice = choose(&module->placement, call);
    return MPI_SUCCESS;
}
