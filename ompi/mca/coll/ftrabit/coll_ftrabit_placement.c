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

int ftrabit_placement(mca_coll_ftrabit_module_t *module, struct ompi_communicator_t *comm,
                      ftrabit_placement_t *placement)
{
    uint64_t mine[3], all[3];
    int err;

    if (!module->placement_known) {
        mine[0] = ompi_mpi_oversubscribed ? 1 : 0;
        mine[1] = ftrabit_host_hash();
        mine[2] = ~mine[1]; /* its maximum is the complement of the hashes' minimum */
        err = ftrabit_allreduce_vector(mine, all, 3, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                                       comm, module);
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
    }
    *placement = module->placement;
    return MPI_SUCCESS;
}
