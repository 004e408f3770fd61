/*
 * ompi-resilience: coll/ftrabit module: which communicators we serve, and keeping hold of
 * the collectives of the module below ours.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"
#include "ompi/mca/common/ompires/ompires_sigpipe.h"
#include "ompi/runtime/params.h"

static void ftrabit_module_construct(mca_coll_ftrabit_module_t *module)
{
    module->previous_allreduce = NULL;
    module->previous_allreduce_module = NULL;
    module->previous_bcast = NULL;
    module->previous_bcast_module = NULL;
    module->scratch = NULL;
    module->scratch_size = 0;
    module->placement_known = false;
}

/*
 * Scratch memory. The policy, with no parameter to tune: the module keeps one buffer, the
 * largest any collective on its communicator has needed so far, as long as that is at most
 * FTRABIT_SCRATCH_KEEP_MAX (16 MiB); it is freed with the module, when the communicator is
 * freed. A larger need gets its own memory for the one call. So a communicator holds at
 * most 16 MiB of scratch, and repeated collectives of up to that size neither call malloc
 * nor take page faults on fresh memory (for large vectors those cost as much as a good part
 * of the transfer). Collectives on one communicator never overlap (MPI orders them), so
 * one buffer per module is enough, even with threads.
 */
void *ftrabit_scratch_get(mca_coll_ftrabit_module_t *module, size_t bytes)
{
    if (bytes <= module->scratch_size) {
        return module->scratch;
    }
    if (bytes > FTRABIT_SCRATCH_KEEP_MAX) {
        return malloc(bytes);
    }
    free(module->scratch);
    module->scratch = malloc(bytes);
    module->scratch_size = NULL == module->scratch ? 0 : bytes;
    return module->scratch;
}

void ftrabit_scratch_put(mca_coll_ftrabit_module_t *module, void *mem)
{
    if (mem != module->scratch) {
        free(mem);
    }
}

static void ftrabit_module_release_previous(mca_coll_ftrabit_module_t *module)
{
    /* OBJ_RELEASE only clears the pointer when it frees the object. */
    if (NULL != module->previous_allreduce_module) {
        OBJ_RELEASE(module->previous_allreduce_module);
        module->previous_allreduce_module = NULL;
    }
    if (NULL != module->previous_bcast_module) {
        OBJ_RELEASE(module->previous_bcast_module);
        module->previous_bcast_module = NULL;
    }
    module->previous_allreduce = NULL;
    module->previous_bcast = NULL;
}

static void ftrabit_module_destruct(mca_coll_ftrabit_module_t *module)
{
    ftrabit_module_release_previous(module);
    free(module->scratch);
    module->scratch = NULL;
    module->scratch_size = 0;
}

OBJ_CLASS_INSTANCE(mca_coll_ftrabit_module_t, mca_coll_base_module_t,
                   ftrabit_module_construct, ftrabit_module_destruct);

int mca_coll_ftrabit_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    /* Under ULFM the job is meant to outlive its failed processes (ompires_sigpipe.h). */
    if (ompi_ftmpi_enabled && ompires_ignore_sigpipe_if_default()) {
        FTRABIT_VERBOSE(1, "coll:ftrabit: SIGPIPE ignored, so that writing to a dead TCP "
                           "peer fails instead of ending this process");
    }
    return OMPI_SUCCESS;
}

static int ftrabit_module_enable(mca_coll_base_module_t *base, struct ompi_communicator_t *comm)
{
    mca_coll_ftrabit_module_t *module = (mca_coll_ftrabit_module_t *) base;
    mca_coll_base_comm_coll_t *below = comm->c_coll;

    /* Lower-priority modules are enabled first, so c_coll holds what we sit on. */
    if (NULL == below->coll_allreduce_module || NULL == below->coll_bcast_module) {
        FTRABIT_VERBOSE(1, "coll:ftrabit: no underlying allreduce/bcast on communicator %s; "
                           "not used there", ompi_comm_print_cid(comm));
        return OMPI_ERROR;
    }
    module->previous_allreduce = below->coll_allreduce;
    module->previous_allreduce_module = below->coll_allreduce_module;
    OBJ_RETAIN(module->previous_allreduce_module);
    module->previous_bcast = below->coll_bcast;
    module->previous_bcast_module = below->coll_bcast_module;
    OBJ_RETAIN(module->previous_bcast_module);

    FTRABIT_VERBOSE(1, "coll:ftrabit: serving MPI_Allreduce and MPI_Bcast on communicator %s "
                       "(%s, %d ranks)", ompi_comm_print_cid(comm), comm->c_name,
                    ompi_comm_size(comm));
    return OMPI_SUCCESS;
}

static int ftrabit_module_disable(mca_coll_base_module_t *base, struct ompi_communicator_t *comm)
{
    (void) comm;
    ftrabit_module_release_previous((mca_coll_ftrabit_module_t *) base);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_ftrabit_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    mca_coll_ftrabit_module_t *module;

    *priority = mca_coll_ftrabit_component.priority;
    /* Intercommunicators and single-rank communicators are left to others (self has the
     * latter at a higher priority anyway). */
    if (*priority <= 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) {
        return NULL;
    }
    module = OBJ_NEW(mca_coll_ftrabit_module_t);
    if (NULL == module) {
        return NULL;
    }
    module->super.coll_module_enable = ftrabit_module_enable;
    module->super.coll_module_disable = ftrabit_module_disable;
    module->super.coll_allreduce = mca_coll_ftrabit_allreduce;
    module->super.coll_bcast = mca_coll_ftrabit_bcast;
    return &module->super;
}
