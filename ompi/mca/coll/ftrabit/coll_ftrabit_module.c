/*
 * ompi-resilience: coll/ftrabit module: which communicators we serve, and keeping hold of
 * the collectives of the module below ours.
 */
#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

static void ftrabit_module_construct(mca_coll_ftrabit_module_t *module)
{
    module->previous_allreduce = NULL;
    module->previous_allreduce_module = NULL;
    module->previous_bcast = NULL;
    module->previous_bcast_module = NULL;
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
}

OBJ_CLASS_INSTANCE(mca_coll_ftrabit_module_t, mca_coll_base_module_t,
                   ftrabit_module_construct, ftrabit_module_destruct);

int mca_coll_ftrabit_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
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
