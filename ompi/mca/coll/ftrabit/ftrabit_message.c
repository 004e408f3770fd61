/*
 * ompi-resilience: libftrabit's messages of any size: checkpoints (the ring's local states,
 * a replacement's global and local state) and the cached results a replacement is sent.
 *
 * MPI counts are ints, so one message of MPI_BYTEs holds at most INT_MAX bytes, and an
 * application's model is often larger (a model of 600 million floats is 2.4 GB). A
 * message above the limit goes as one element of a derived datatype made of 1 MiB blocks
 * and the rest; the receiver learns its size with MPI_Get_elements_x, which counts in
 * MPI_Count. Both forms are a sequence of bytes (the same type signature), so sender and
 * receiver choose theirs independently, and one message stays one message: MPI's order
 * and the tags of the callers are unchanged.
 */
#include <limits.h>
#include <stdlib.h>

#include "ftrabit_internal.h"

#define FTRABIT_MESSAGE_BLOCK ((size_t) 1 << 20)

/* Above this many bytes a message takes the derived datatype (coll_ftrabit_test_message_limit
 * lowers it, so that tests reach that form without gigabytes). */
static size_t ftrabit_message_limit(void)
{
    if (ftrabit_settings.test_message_limit > 0
        && (size_t) ftrabit_settings.test_message_limit < (size_t) INT_MAX) {
        return (size_t) ftrabit_settings.test_message_limit;
    }
    return (size_t) INT_MAX;
}

/* `len` bytes as one element: whole blocks, then the rest. Freed by the caller (MPI lets a
 * datatype be freed while operations that use it are pending). */
static int ftrabit_bytes_type(size_t len, MPI_Datatype *type)
{
    size_t blocks = len / FTRABIT_MESSAGE_BLOCK, rest = len % FTRABIT_MESSAGE_BLOCK;
    MPI_Datatype block;
    int lengths[2] = {(int) blocks, (int) rest};
    MPI_Aint displacements[2] = {0, (MPI_Aint) (blocks * FTRABIT_MESSAGE_BLOCK)};
    MPI_Datatype types[2];
    int err;

    *type = MPI_DATATYPE_NULL; /* unless made */
    if (blocks > (size_t) INT_MAX) {
        return MPI_ERR_COUNT;
    }
    err = MPI_Type_contiguous((int) FTRABIT_MESSAGE_BLOCK, MPI_BYTE, &block);
    if (MPI_SUCCESS != err) {
        return err;
    }
    types[0] = block;
    types[1] = MPI_BYTE;
    err = MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displacements, types, type);
    MPI_Type_free(&block);
    if (MPI_SUCCESS != err) {
        *type = MPI_DATATYPE_NULL;
    } else if (MPI_SUCCESS != (err = MPI_Type_commit(type))) {
        MPI_Type_free(type); /* sets it to MPI_DATATYPE_NULL */
    }
    return err;
}

int ftrabit_isend_bytes(const void *buf, size_t len, int to, int tag, MPI_Comm comm,
                        MPI_Request *req)
{
    MPI_Datatype type;
    int err;

    if (len <= ftrabit_message_limit()) {
        return MPI_Isend(buf, (int) len, MPI_BYTE, to, tag, comm, req);
    }
    err = ftrabit_bytes_type(len, &type);
    if (MPI_SUCCESS != err) {
        return err;
    }
    ftrabit_log(2, "%zu bytes to rank %d (tag %d) as one element of a derived datatype", len,
                to, tag);
    err = MPI_Isend(buf, 1, type, to, tag, comm, req);
    MPI_Type_free(&type);
    return err;
}

int ftrabit_send_bytes(const void *buf, size_t len, int to, int tag, MPI_Comm comm)
{
    MPI_Request req;
    int err = ftrabit_isend_bytes(buf, len, to, tag, comm, &req);

    return MPI_SUCCESS == err ? ftrabit_wait_sends(1, &req) : err;
}

/* MPI_Waitall that says why it failed. When one request fails, MPI_Waitall returns
 * MPI_ERR_IN_STATUS (even with MPI_STATUSES_IGNORE), which would hide a process failure
 * that a rebuild can handle behind an error that ends the recovery: the per-request
 * errors are looked at instead, a process failure first. */
static int ftrabit_waitall_error(int n, MPI_Request *reqs, MPI_Status *statuses)
{
    int err = MPI_Waitall(n, reqs, statuses), first_other = MPI_SUCCESS;

    if (MPI_ERR_IN_STATUS != err) {
        return err;
    }
    err = MPI_SUCCESS;
    for (int i = 0; i < n && !ftrabit_is_process_failure(err); i++) {
        int e = statuses[i].MPI_ERROR;
        if (ftrabit_is_process_failure(e)) {
            err = e;
        } else if (MPI_SUCCESS != e && MPI_ERR_PENDING != e && MPI_SUCCESS == first_other) {
            first_other = e;
        }
    }
    if (MPI_SUCCESS == err) {
        /* Requests left pending by another's failure: the peer is alive, nothing was
         * wrong with them; the failure that stopped them counts. */
        err = MPI_SUCCESS != first_other ? first_other : MPI_ERR_PROC_FAILED;
    }
    return err;
}

int ftrabit_wait_sends(int n, MPI_Request *reqs)
{
    MPI_Status *statuses = malloc(sizeof(MPI_Status) * (size_t) (n > 0 ? n : 1));
    int err = NULL == statuses ? MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE)
                               : ftrabit_waitall_error(n, reqs, statuses);

    free(statuses);
    if (MPI_SUCCESS != err) {
        for (int i = 0; i < n; i++) {
            if (MPI_REQUEST_NULL != reqs[i]) {
                MPI_Request_free(&reqs[i]);
            }
        }
    }
    return err;
}

int ftrabit_recv_blob(int from, int tag, MPI_Comm comm, void **buf, size_t *len)
{
    MPI_Message msg;
    MPI_Status status;
    MPI_Datatype type = MPI_BYTE;
    MPI_Count bytes = 0;
    int count, err = MPI_Mprobe(from, tag, comm, &msg, &status);

    *buf = NULL;
    *len = 0;
    if (MPI_SUCCESS != err) {
        return err;
    }
    MPI_Get_elements_x(&status, MPI_BYTE, &bytes);
    if (bytes < 0) { /* MPI_UNDEFINED: not a whole number of bytes, impossible here */
        (void) MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        return MPI_ERR_TRUNCATE;
    }
    *buf = malloc(bytes > 0 ? (size_t) bytes : 1);
    if (NULL == *buf) {
        /* the message is still received (truncated, into nothing): it must not stay queued
         * for whichever receive comes next on this tag */
        (void) MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        return MPI_ERR_NO_MEM;
    }
    if ((size_t) bytes <= ftrabit_message_limit()) {
        count = (int) bytes;
    } else {
        err = ftrabit_bytes_type((size_t) bytes, &type);
        count = 1;
    }
    if (MPI_SUCCESS == err) {
        err = MPI_Mrecv(*buf, count, type, &msg, MPI_STATUS_IGNORE);
    } else {
        (void) MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    }
    if (MPI_BYTE != type && MPI_DATATYPE_NULL != type) {
        MPI_Type_free(&type);
    }
    if (MPI_SUCCESS != err) {
        free(*buf);
        *buf = NULL;
        return err;
    }
    *len = (size_t) bytes;
    return MPI_SUCCESS;
}
