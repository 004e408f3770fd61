/*
 * ompi-resilience: coll/ftrabit, a collective's data as the packed bytes of its type
 * signature.
 *
 * MPI requires the ranks of a broadcast to pass equal type signatures, not equal datatypes
 * or counts: the root may send n elements of MPI_Type_contiguous(3, MPI_DOUBLE) to ranks
 * that receive 3n MPI_DOUBLE, or a padded struct to ranks that describe the same members
 * without the padding. What every rank agrees on is the sequence of bytes of that
 * signature, packed. An algorithm that cuts a message into segments therefore cuts those
 * bytes: segments counted in elements of each rank's own datatype end at different places
 * on different ranks (a 1 MiB broadcast failed with MPI_ERR_TRUNCATE that way).
 *
 * Data contiguous in memory is its own packed form and moves in place. Other data goes
 * through a staging buffer of the whole message, packed by the sender and unpacked by the
 * receivers segment by segment as the algorithm goes, so that the copies overlap the
 * transfers. Open MPI's convertor packs whole predefined elements only, so a sender packs
 * a little past the end of the segment it needs; it unpacks any range of bytes, keeping an
 * element cut between two segments until the rest arrives. The packed form is the local
 * representation, as everything in an Open MPI built homogeneous (its default).
 */
#include "ompi_config.h"

#include <sys/uio.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"

/* More than the largest predefined element (MPI_C_LONG_DOUBLE_COMPLEX, 32 bytes): asked for
 * this much beyond a segment's end, the convertor always reaches it. */
#define FTRABIT_PACK_SLACK 64

int ftrabit_packed_open(ftrabit_packed_t *p, char *buf, size_t count,
                        struct ompi_datatype_t *dtype, bool sender,
                        mca_coll_ftrabit_module_t *module)
{
    size_t type_size;
    ptrdiff_t true_lb, true_extent;

    ompi_datatype_type_size(dtype, &type_size);
    p->len = count * type_size;
    p->converted = 0;
    p->staged = !ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t) count);
    if (!p->staged) {
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        p->bytes = buf + true_lb;
        return MPI_SUCCESS;
    }
    p->bytes = ftrabit_scratch_get(module, p->len);
    if (NULL == p->bytes) {
        p->staged = false;
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(&p->convertor, opal_convertor_t);
    int err = sender ? opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor,
                                                                &dtype->super, count, buf, 0,
                                                                &p->convertor)
                     : opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor,
                                                                &dtype->super, count, buf, 0,
                                                                &p->convertor);
    if (OPAL_SUCCESS != err) {
        ftrabit_packed_close(p, module);
        return err;
    }
    return MPI_SUCCESS;
}

int ftrabit_packed_ready(ftrabit_packed_t *p, size_t upto)
{
    while (p->staged && p->converted < upto) {
        size_t room = p->len - p->converted, want = upto - p->converted + FTRABIT_PACK_SLACK;
        struct iovec iov = {.iov_base = p->bytes + p->converted, .iov_len = want < room ? want
                                                                                       : room};
        uint32_t niov = 1;
        size_t packed = iov.iov_len;

        if (opal_convertor_pack(&p->convertor, &iov, &niov, &packed) < 0 || 0 == packed) {
            return OMPI_ERROR;
        }
        p->converted += packed;
    }
    return MPI_SUCCESS;
}

int ftrabit_packed_arrived(ftrabit_packed_t *p, size_t upto)
{
    if (!p->staged || upto <= p->converted) {
        return MPI_SUCCESS;
    }
    struct iovec iov = {.iov_base = p->bytes + p->converted, .iov_len = upto - p->converted};
    uint32_t niov = 1;
    size_t unpacked = iov.iov_len;

    if (opal_convertor_unpack(&p->convertor, &iov, &niov, &unpacked) < 0
        || unpacked != iov.iov_len) {
        return OMPI_ERROR;
    }
    p->converted = upto;
    return MPI_SUCCESS;
}

void ftrabit_packed_close(ftrabit_packed_t *p, mca_coll_ftrabit_module_t *module)
{
    if (p->staged) {
        OBJ_DESTRUCT(&p->convertor);
        ftrabit_scratch_put(module, p->bytes);
        p->staged = false;
    }
}
