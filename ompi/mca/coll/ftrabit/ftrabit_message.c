/*
 * ompi-resilience: libftrabit's messages of any size: checkpoints (the ring's local states,
 * a replacement's global and local state) and the cached results a replacement is sent.
 *
 * A message is its length (8 bytes, little-endian), then its bytes in parts of at most
 * FTRABIT_MESSAGE_PART bytes, each one MPI message of MPI_BYTEs on the message's tag. Parts
 * keep every count far below MPI's int limit (an application's model is often larger
 * than INT_MAX bytes: 600 million floats are 2.4 GB), and each part that completes is
 * progress a recovery can see (ftrabit_recovery_progress): coll_ftrabit_recovery_timeout
 * bounds a lack of progress, not how long a checkpoint takes over a slow network. MPI keeps
 * the order of messages from one process on one tag, so parts arrive in order.
 */
#include <limits.h>
#include <stdlib.h>

#include "ftrabit_internal.h"
#include "ftrabit_rebuild.h"

/* A part takes a third of a second at 100 Mbit/s, and its rendezvous (a round trip) is
 * little next to copying 4 MiB. */
#define FTRABIT_MESSAGE_PART ((size_t) 4 << 20)
#define FTRABIT_MESSAGE_HEADER 8

/* Bytes per part (coll_ftrabit_test_message_limit makes them small, so that tests reach
 * messages of many parts without gigabytes). */
static size_t ftrabit_message_part(void)
{
    if (ftrabit_settings.test_message_limit > 0) {
        return (size_t) ftrabit_settings.test_message_limit;
    }
    return FTRABIT_MESSAGE_PART;
}

static size_t ftrabit_parts(size_t len)
{
    size_t part = ftrabit_message_part();
    return (len + part - 1) / part;
}

static void ftrabit_put_length(unsigned char *header, uint64_t len)
{
    for (int i = 0; i < FTRABIT_MESSAGE_HEADER; i++) {
        header[i] = (unsigned char) (len >> (8 * i));
    }
}

static uint64_t ftrabit_get_length(const unsigned char *header)
{
    uint64_t len = 0;
    for (int i = 0; i < FTRABIT_MESSAGE_HEADER; i++) {
        len |= (uint64_t) header[i] << (8 * i);
    }
    return len;
}

/* The error in `statuses` that counts: a process failure first (a rebuild handles it),
 * else the first other error; MPI_ERR_PENDING (a request left pending by another's
 * failure) is none. */
static int ftrabit_status_error(int n, const MPI_Status *statuses)
{
    int err = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        int e = statuses[i].MPI_ERROR;
        if (ftrabit_is_process_failure(e)) {
            return e;
        }
        if (MPI_SUCCESS == err && MPI_ERR_PENDING != e) {
            err = e;
        }
    }
    return err;
}

/* Waits for `n` sends. Their receivers bound a transfer's lack of progress (each part they
 * receive counts, ftrabit_recv_parts), and a receiver may take other messages first, so
 * waiting here is not a lack of progress: the receiving side ends itself if the transfer
 * stalls, and its failure ends this wait. Returns at the first error (the per-request
 * errors looked at: MPI_ERR_IN_STATUS would hide a process failure behind an error that
 * ends the recovery), leaving the requests not completed successfully to the caller. */
static int ftrabit_wait_for_receivers(int n, MPI_Request *reqs)
{
    MPI_Status *statuses = malloc(sizeof(MPI_Status) * (size_t) (n > 0 ? n : 1));
    int done = 0, err = MPI_SUCCESS;

    if (NULL == statuses) {
        return MPI_ERR_NO_MEM;
    }
    while (!done) {
        int rc = MPI_Testall(n, reqs, &done, statuses);
        if (MPI_SUCCESS != rc) {
            err = MPI_ERR_IN_STATUS == rc ? ftrabit_status_error(n, statuses) : rc;
            err = MPI_SUCCESS == err ? MPI_ERR_PROC_FAILED : err;
            break;
        }
        ftrabit_recovery_progress();
    }
    free(statuses);
    return err;
}

int ftrabit_sends_open(ftrabit_sends_t *s, int max_messages)
{
    s->n = s->room = s->nmessages = 0;
    s->reqs = NULL;
    s->max_messages = max_messages;
    s->headers = malloc(FTRABIT_MESSAGE_HEADER * (size_t) (max_messages > 0 ? max_messages : 1));
    return NULL == s->headers ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

static int ftrabit_sends_room(ftrabit_sends_t *s, size_t more)
{
    if ((size_t) s->n + more <= (size_t) s->room) {
        return MPI_SUCCESS;
    }
    if ((size_t) s->n + more > (size_t) INT_MAX / 2) {
        return MPI_ERR_COUNT;
    }
    int room = 2 * (s->n + (int) more);
    MPI_Request *reqs = realloc(s->reqs, sizeof(MPI_Request) * (size_t) room);
    if (NULL == reqs) {
        return MPI_ERR_NO_MEM;
    }
    s->reqs = reqs;
    s->room = room;
    return MPI_SUCCESS;
}

int ftrabit_sends_post(ftrabit_sends_t *s, const void *buf, size_t len, int to, int tag,
                       MPI_Comm comm)
{
    size_t parts = ftrabit_parts(len), part = ftrabit_message_part();
    int err = s->nmessages < s->max_messages ? ftrabit_sends_room(s, 1 + parts)
                                             : MPI_ERR_INTERN;

    if (MPI_SUCCESS != err) {
        return err;
    }
    unsigned char *header = s->headers + FTRABIT_MESSAGE_HEADER * (size_t) s->nmessages++;
    ftrabit_put_length(header, len);
    err = MPI_Isend(header, FTRABIT_MESSAGE_HEADER, MPI_BYTE, to, tag, comm, &s->reqs[s->n]);
    s->n += MPI_SUCCESS == err;
    for (size_t i = 0; i < parts && MPI_SUCCESS == err; i++) {
        size_t first = i * part, bytes = len - first < part ? len - first : part;
        err = MPI_Isend((const char *) buf + first, (int) bytes, MPI_BYTE, to, tag, comm,
                        &s->reqs[s->n]);
        s->n += MPI_SUCCESS == err;
    }
    return err;
}

int ftrabit_sends_wait(ftrabit_sends_t *s)
{
    int err = ftrabit_wait_for_receivers(s->n, s->reqs);

    /* Sends that ended in error or are still going: let go (MPI_Testall frees neither, and
     * each holds its communicator). A send let go may still read its buffer. */
    for (int i = 0; i < s->n; i++) {
        if (MPI_REQUEST_NULL != s->reqs[i]) {
            MPI_Request_free(&s->reqs[i]);
        }
    }
    free(s->reqs);
    free(s->headers);
    s->reqs = NULL;
    s->headers = NULL;
    s->n = s->room = 0;
    return err;
}

int ftrabit_send_bytes(const void *buf, size_t len, int to, int tag, MPI_Comm comm)
{
    ftrabit_sends_t sends;
    int err = ftrabit_sends_open(&sends, 1);

    if (MPI_SUCCESS == err) {
        int post_err = ftrabit_sends_post(&sends, buf, len, to, tag, comm);
        err = ftrabit_sends_wait(&sends);
        err = MPI_SUCCESS != post_err ? post_err : err;
    }
    return err;
}

/* The parts of a message that cannot be kept, received into nothing (truncated). */
static void ftrabit_drop_parts(size_t len, int from, int tag, MPI_Comm comm)
{
    for (size_t i = ftrabit_parts(len); i > 0; i--) {
        (void) MPI_Recv(NULL, 0, MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE);
    }
}

/* Parts posted ahead of the one waited for. Rendezvous parts move only once their receive
 * is posted: with all posted, they would share the bandwidth and complete together at the
 * end, and no progress would show until then. */
#define FTRABIT_PARTS_AHEAD 2

/* Receives the parts of a message of `len` bytes into buf, in order, a few posted ahead;
 * after an error those posted are cancelled and waited for, so that nothing writes into
 * buf later. */
static int ftrabit_recv_parts(void *buf, size_t len, int from, int tag, MPI_Comm comm)
{
    size_t parts = ftrabit_parts(len), part = ftrabit_message_part(), posted = 0;
    MPI_Request window[FTRABIT_PARTS_AHEAD];
    int err = MPI_SUCCESS;

    for (int i = 0; i < FTRABIT_PARTS_AHEAD; i++) {
        window[i] = MPI_REQUEST_NULL;
    }
    for (size_t i = 0; i < parts && MPI_SUCCESS == err; i++) {
        for (; posted < parts && posted < i + FTRABIT_PARTS_AHEAD && MPI_SUCCESS == err;
             posted++) {
            size_t first = posted * part, bytes = len - first < part ? len - first : part;
            err = MPI_Irecv((char *) buf + first, (int) bytes, MPI_BYTE, from, tag, comm,
                            &window[posted % FTRABIT_PARTS_AHEAD]);
        }
        if (MPI_SUCCESS == err) {
            err = MPI_Wait(&window[i % FTRABIT_PARTS_AHEAD], MPI_STATUS_IGNORE);
            ftrabit_recovery_progress();
        }
    }
    for (int i = 0; i < FTRABIT_PARTS_AHEAD; i++) {
        if (MPI_REQUEST_NULL != window[i]) {
            MPI_Cancel(&window[i]);
            if (MPI_SUCCESS != MPI_Wait(&window[i], MPI_STATUS_IGNORE)
                && MPI_REQUEST_NULL != window[i]) {
                MPI_Request_free(&window[i]);
            }
        }
    }
    return err;
}

int ftrabit_recv_blob(int from, int tag, MPI_Comm comm, void **buf, size_t *len)
{
    unsigned char header[FTRABIT_MESSAGE_HEADER];
    MPI_Status status;
    int count, err = MPI_Recv(header, FTRABIT_MESSAGE_HEADER, MPI_BYTE, from, tag, comm, &status);

    *buf = NULL;
    *len = 0;
    if (MPI_SUCCESS != err) {
        return err;
    }
    MPI_Get_count(&status, MPI_BYTE, &count);
    uint64_t bytes = ftrabit_get_length(header);
    if (FTRABIT_MESSAGE_HEADER != count || bytes > (uint64_t) SIZE_MAX / 2) {
        return MPI_ERR_TRUNCATE; /* not one of our messages */
    }
    *buf = malloc(bytes > 0 ? (size_t) bytes : 1);
    if (NULL == *buf) {
        /* the parts must not stay queued for whichever receive comes next on this tag */
        ftrabit_drop_parts((size_t) bytes, from, tag, comm);
        return MPI_ERR_NO_MEM;
    }
    err = ftrabit_recv_parts(*buf, (size_t) bytes, from, tag, comm);
    if (MPI_SUCCESS != err) {
        free(*buf);
        *buf = NULL;
        return err;
    }
    *len = (size_t) bytes;
    return MPI_SUCCESS;
}
