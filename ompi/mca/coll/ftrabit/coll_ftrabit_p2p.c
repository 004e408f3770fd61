/*
 * ompi-resilience: coll/ftrabit point-to-point helpers.
 *
 * Every message an ftrabit algorithm receives has a size both sides computed from the
 * collective's arguments, so a shorter message means the ranks called the collective with
 * different arguments. That is reported here, by the rank that sees it, instead of
 * silently leaving part of a buffer unreduced.
 */
#include "ompi_config.h"

#include "opal/util/show_help.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "ompi/runtime/params.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"
#include "ompi/mca/common/ompires/ompires_abi.h"

static const char *ftrabit_tag_name(int tag)
{
    return MCA_COLL_BASE_TAG_BCAST == tag ? "MPI_Bcast" : "MPI_Allreduce";
}

int ftrabit_check_received(const ompi_status_public_t *status, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_communicator_t *comm,
                           int tag)
{
    size_t type_size, expected, got = status->_ucount;

    ompi_datatype_type_size(dtype, &type_size);
    expected = count * type_size;
    if (OPAL_LIKELY(got == expected)) {
        return MPI_SUCCESS;
    }
    ompires_add_help_dir();
    opal_show_help("help-coll-ftrabit.txt", "mismatched-arguments", true,
                   ftrabit_tag_name(tag), ompi_comm_rank(comm), ompi_comm_print_cid(comm), got,
                   status->MPI_SOURCE, expected);
    return MPI_ERR_TRUNCATE;
}

/* Finish with a request that is not needed any more after an error: cancelled, then
 * waited for, never just freed. A receive that already matched its message cannot be
 * cancelled while its sender lives, and the PML goes on placing the message's data in
 * the buffer: freed, it would still write there after the collective returned (into the
 * caller's buffer, scratch memory freed by then, or a result libftrabit keeps). Seen under
 * pml/dr2 when the send of the same step failed with MPI_ERR_REVOKED: 50-65 MB of a
 * 64 MiB message arrived after MPI_Allreduce returned (test/mpi/ft_abandoned_receive).
 * The wait ends when the data is in, the sender is found dead, or the PML completes the
 * request in error; a request that ended in error is freed here too, since
 * ompi_request_wait leaves it allocated (it holds its communicator). */
void ftrabit_request_abandon(ompi_request_t **req)
{
    if (MPI_REQUEST_NULL == *req) {
        return;
    }
    ompi_request_cancel(*req);
    ompi_request_wait(req, MPI_STATUS_IGNORE);
    if (MPI_REQUEST_NULL != *req) {
        ompi_request_free(req);
    }
}

int ftrabit_wait_all(size_t n, ompi_request_t **reqs)
{
    int err = ompi_request_wait_all(n, reqs, MPI_STATUSES_IGNORE);

    if (MPI_SUCCESS != err) {
        /* the failed ones and those left pending (MPI_ERR_PENDING) */
        for (size_t i = 0; i < n; i++) {
            ftrabit_request_abandon(&reqs[i]);
        }
    }
    return err;
}

static int ftrabit_copy(const ftrabit_copy_t *copy, struct ompi_datatype_t *dtype)
{
    if (NULL == copy || 0 == copy->count) {
        return MPI_SUCCESS;
    }
    return ompi_datatype_copy_content_same_ddt(dtype, copy->count, copy->dst,
                                               (char *) copy->src);
}

/* The end of a receive: a process-failure error pending on a receive is a failure. */
static int ftrabit_recv_complete(ompi_request_t **req, size_t count,
                                 struct ompi_datatype_t *dtype, int tag,
                                 struct ompi_communicator_t *comm)
{
    ompi_status_public_t status;
    int err = ompi_request_wait(req, &status);

    if (MPI_SUCCESS != err) {
        ftrabit_request_abandon(req); /* a pending one (PROC_FAILED_PENDING) too */
        return MPI_ERR_PROC_FAILED_PENDING == err ? MPI_ERR_PROC_FAILED : err;
    }
    return ftrabit_check_received(&status, count, dtype, comm, tag);
}

/* The send half of a sendrecv. Without a copy to overlap, a blocking send is the cheapest;
 * with one, the send is started, the copy done, and the send waited for. */
static int ftrabit_send_overlapped(const void *buf, size_t count, struct ompi_datatype_t *dtype,
                                   int dest, int tag, struct ompi_communicator_t *comm,
                                   const ftrabit_copy_t *overlap)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int err;

    if (NULL == overlap) {
        return MCA_PML_CALL(send(buf, count, dtype, dest, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    }
    err = MCA_PML_CALL(isend(buf, count, dtype, dest, tag, MCA_PML_BASE_SEND_STANDARD, comm, &req));
    if (MPI_SUCCESS != err) {
        return err;
    }
    int copy_err = ftrabit_copy(overlap, dtype);
    err = ompi_request_wait(&req, MPI_STATUS_IGNORE);
    if (MPI_SUCCESS != err) {
        ftrabit_request_abandon(&req);
        return err;
    }
    return copy_err;
}

int ftrabit_sendrecv(const void *sbuf, size_t scount, int dest, void *rbuf, size_t rcount,
                     int source, struct ompi_datatype_t *dtype, int tag,
                     struct ompi_communicator_t *comm, const ftrabit_copy_t *overlap)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int err;

    err = MCA_PML_CALL(irecv(rbuf, rcount, dtype, source, tag, comm, &req));
    if (MPI_SUCCESS != err) {
        return err;
    }
    err = ftrabit_send_overlapped(sbuf, scount, dtype, dest, tag, comm, overlap);
    if (MPI_SUCCESS != err) {
        ftrabit_request_abandon(&req);
        return err;
    }
    return ftrabit_recv_complete(&req, rcount, dtype, tag, comm);
}

int ftrabit_recv_overlapped(void *buf, size_t count, struct ompi_datatype_t *dtype, int source,
                            int tag, struct ompi_communicator_t *comm,
                            const ftrabit_copy_t *overlap)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int err = MCA_PML_CALL(irecv(buf, count, dtype, source, tag, comm, &req));

    if (MPI_SUCCESS != err) {
        return err;
    }
    int copy_err = ftrabit_copy(overlap, dtype);
    err = ftrabit_recv_complete(&req, count, dtype, tag, comm);
    return MPI_SUCCESS != err ? err : copy_err;
}

int ftrabit_send(const void *buf, size_t count, struct ompi_datatype_t *dtype, int dest, int tag,
                 struct ompi_communicator_t *comm)
{
    return MCA_PML_CALL(send(buf, count, dtype, dest, tag, MCA_PML_BASE_SEND_STANDARD, comm));
}

int ftrabit_recv(void *buf, size_t count, struct ompi_datatype_t *dtype, int source, int tag,
                 struct ompi_communicator_t *comm)
{
    ompi_status_public_t status;
    int err = MCA_PML_CALL(recv(buf, count, dtype, source, tag, comm, &status));

    if (MPI_SUCCESS != err) {
        return err;
    }
    return ftrabit_check_received(&status, count, dtype, comm, tag);
}

int ftrabit_collective_failed(int err, struct ompi_communicator_t *comm)
{
    if (MPI_ERR_TRUNCATE == err && ompi_ftmpi_enabled && !ompi_comm_is_revoked(comm)) {
        FTRABIT_VERBOSE(1, "coll:ftrabit: revoking communicator %s after mismatched arguments",
                        ompi_comm_print_cid(comm));
        ompi_comm_revoke_internal(comm);
    }
    return err;
}

/* coll_ftrabit_uniform: one agreement after the collective so that every survivor leaves
 * it with the same outcome (all succeed, or all get an error), which plain ULFM cannot
 * promise: a rank whose part finished before a peer died would otherwise succeed while
 * its peers fail. A rank that failed revokes first, so that nobody stays blocked waiting
 * for it inside the collective. Failures the application already acknowledged are
 * ignored, as in MPIX_Comm_agree. */
static int ftrabit_agree_on_outcome(int err, struct ompi_communicator_t *comm)
{
    ompi_group_t *acked = NULL;
    int flag = MPI_SUCCESS == err;

    if (!flag && !ompi_comm_is_revoked(comm)) {
        ompi_comm_revoke_internal(comm);
    }
    ompi_comm_failure_get_acked_internal(comm, &acked);
    int agree_err = comm->c_coll->coll_agree(&flag, 1, &ompi_mpi_int.dt, &ompi_mpi_op_band.op,
                                             &acked, false, comm,
                                             comm->c_coll->coll_agree_module);
    OBJ_RELEASE(acked);
    if (MPI_SUCCESS == agree_err && flag) {
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS != err) {
        return err;
    }
    return MPI_SUCCESS != agree_err ? agree_err : MPI_ERR_PROC_FAILED;
}

int ftrabit_collective_outcome(int err, struct ompi_communicator_t *comm)
{
    if (MPI_SUCCESS != err) {
        err = ftrabit_collective_failed(err, comm);
    }
    if (mca_coll_ftrabit_component.uniform && ompi_ftmpi_enabled && ompi_comm_size(comm) > 1) {
        err = ftrabit_agree_on_outcome(err, comm);
    }
    return err;
}
