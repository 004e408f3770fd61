/*
 * ompi-resilience: libftrabit, the FTR_* entry points and the collective path.
 *
 * Every FTR collective gets the next sequence number of its communicator. If the result
 * of that number is already known (a replacement replaying, or a rank that was behind when
 * a failure struck), the cached bytes are returned without communication. Otherwise the
 * collective runs through MPI (coll/ftrabit's deterministic algorithms when loaded); a
 * process failure leads to recovery and a retry, from a copy of the input, so the
 * application never sees the failure.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "ftrabit_copy.h"
#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_notice.h"
#include "../../common/ompires/ompires_sigpipe.h"

char *ftrabit_program;
char **ftrabit_program_argv;
int ftrabit_spawned;

void ftrabit_log(int level, const char *fmt, ...)
{
    if (ftrabit_settings.verbose < level) {
        return;
    }
    int rank = -1;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    /* One write per line: stderr is unbuffered, and the lines of processes sharing a pipe
     * to the launcher were seen cut in two by another's when written in three parts. */
    char line[1024];
    int len = snprintf(line, sizeof(line), "[ftrabit pid %d world rank %d] ", (int) getpid(),
                       rank);
    va_list ap;
    va_start(ap, fmt);
    len += vsnprintf(line + len, sizeof(line) - (size_t) len - 1, fmt, ap);
    va_end(ap);
    if (len > (int) sizeof(line) - 2) {
        len = (int) sizeof(line) - 2; /* truncated */
    }
    line[len] = '\n';
    fwrite(line, 1, (size_t) len + 1, stderr);
}

int ftrabit_is_process_failure(int err)
{
    int cls = err;
    if (MPI_SUCCESS != err) {
        MPI_Error_class(err, &cls);
    }
    return MPIX_ERR_PROC_FAILED == cls || MPIX_ERR_PROC_FAILED_PENDING == cls
        || MPIX_ERR_REVOKED == cls;
}

/* Remember how this program was started: replacements are started the same way. */
static void ftrabit_remember_program(int *argc, char ***argv)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    int nargs = (argc && argv && *argv) ? *argc - 1 : 0;

    if (n > 0) {
        path[n] = '\0';
        ftrabit_program = strdup(path);
    } else if (argc && argv && *argv && (*argv)[0]) {
        ftrabit_program = strdup((*argv)[0]);
    }
    ftrabit_program_argv = calloc((size_t) (nargs > 0 ? nargs : 0) + 1, sizeof(char *));
    for (int i = 0; i < nargs; i++) {
        ftrabit_program_argv[i] = strdup((*argv)[i + 1]);
    }
}

/* FTR_Init in a process started with the job, without spares: its state on a dup of
 * MPI_COMM_WORLD. */
static int ftrabit_init_original(MPI_Comm *world)
{
    int rank, size, err;
    MPI_Comm own;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    err = MPI_Comm_dup(MPI_COMM_WORLD, &own);
    if (MPI_SUCCESS != err) {
        return err;
    }
    MPI_Comm_set_errhandler(own, MPI_ERRORS_RETURN);
    ftrabit_state_t *st = ftrabit_state_new(own, rank, size);
    if (NULL == st) {
        MPI_Comm_free(&own);
        return MPI_ERR_NO_MEM;
    }
    return ftrabit_state_hand_out(st, world);
}

int FTR_Init(int *argc, char ***argv, MPI_Comm *world)
{
    int initialized, provided, err;
    MPI_Comm parent;

    MPI_Initialized(&initialized);
    if (!initialized) {
        err = MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
        if (MPI_SUCCESS != err) {
            return err;
        }
    }
    ftrabit_read_settings();
    ftrabit_notice_install(); /* a SIGTERM becomes a preemption notice */
    ftrabit_remember_program(argc, argv);
    /* A survivor writing to a process that just died must not die of SIGPIPE. */
    (void) ompires_ignore_sigpipe_if_default();

    MPI_Comm_get_parent(&parent);
    if (MPI_COMM_NULL != parent) {
        return ftrabit_join_as_replacement(parent, world);
    }
    if (ftrabit_settings.spares > 0) {
        err = ftrabit_spares_init(world); /* in a spare: once it replaces a dead rank */
    } else {
        err = ftrabit_init_original(world);
    }
    /* A job started with coll_ftrabit_checkpoint_dir resumes from disk, all ranks together
     * before any collective of theirs (a replacement gets the version from its peers). */
    if (MPI_SUCCESS == err && FTR_ORIGIN_ORIGINAL == ftrabit_origin) {
        ftrabit_state_t *st = ftrabit_state_of(*world);
        if (NULL != st && ftrabit_durable_enabled(st)) {
            err = ftrabit_durable_restore(st);
        }
    }
    return err;
}

/* Every process, survivor or replacement, leaves through one agreement per communicator
 * (Rabit's Shutdown): a process that completed its last collective must not be gone while
 * others still recover from a failure in it, since their rebuild needs it (ULFM's shrink
 * and agreement include every living process) and so may the results it keeps. Then
 * everything ftrabit created is freed, the communicator connecting a replacement to the
 * job that spawned it included: MPI_Finalize disconnects from every other job still
 * connected, and waits there for processes that would never come (ompi_dpm_dyn_finalize). */
int FTR_Finalize(void)
{
    int err = MPI_SUCCESS;

    for (ftrabit_state_t *st = ftrabit_state_first(); NULL != st; st = st->next) {
        int e = ftrabit_final_agreement(st);
        if (MPI_SUCCESS == err) {
            err = e;
        }
    }
    ftrabit_spares_release(); /* agreed: no recovery will need them */
    ftrabit_state_release_all();
    if (ftrabit_spawned) {
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        if (MPI_COMM_NULL != parent) {
            MPI_Comm_free(&parent);
        }
    }
    free(ftrabit_program);
    ftrabit_program = NULL;
    if (ftrabit_program_argv) {
        for (char **a = ftrabit_program_argv; *a; a++) {
            free(*a);
        }
        free(ftrabit_program_argv);
        ftrabit_program_argv = NULL;
    }
    int fin = MPI_Finalize();
    return MPI_SUCCESS != err ? err : fin;
}

/* ---- typed copies (the datatype may be non-contiguous) ----------------------------- */

/* The size of `type` if it is one of the predefined types applications reduce and broadcast
 * most, each element dense and its size apart; 0 for any other. Asking MPI for a type's
 * size and both extents on every call was a quarter of what FTR_Allreduce adds to an
 * 8-byte MPI_Allreduce (about 130 of 500 instructions, valgrind --tool=callgrind). Only
 * predefined handles may be remembered: a derived type's handle can be freed and come back
 * for another layout. */
static struct ftrabit_basic_entry {
    MPI_Datatype type;
    int size; /* 0 until first asked */
} ftrabit_basic[] = {{MPI_DOUBLE, 0},        {MPI_FLOAT, 0},         {MPI_INT, 0},
                     {MPI_LONG, 0},          {MPI_LONG_LONG, 0},     {MPI_UNSIGNED, 0},
                     {MPI_UNSIGNED_LONG, 0}, {MPI_UNSIGNED_LONG_LONG, 0},
                     {MPI_INT64_T, 0},       {MPI_UINT64_T, 0},      {MPI_INT32_T, 0},
                     {MPI_UINT32_T, 0},      {MPI_BYTE, 0},          {MPI_CHAR, 0},
                     {MPI_UNSIGNED_CHAR, 0}, {MPI_SIGNED_CHAR, 0},   {MPI_SHORT, 0},
                     {MPI_UNSIGNED_SHORT, 0}, {MPI_INT8_T, 0},       {MPI_UINT8_T, 0},
                     {MPI_INT16_T, 0},       {MPI_UINT16_T, 0},      {MPI_C_BOOL, 0}};

/* The entry found last: a program mostly calls with one type, found with one compare (an
 * entry, once its size is set, never changes). */
static const struct ftrabit_basic_entry *ftrabit_basic_last;

static __attribute__((noinline)) int ftrabit_basic_search(MPI_Datatype type)
{
    for (size_t i = 0; i < sizeof(ftrabit_basic) / sizeof(ftrabit_basic[0]); i++) {
        if (ftrabit_basic[i].type == type) {
            if (0 == ftrabit_basic[i].size) {
                MPI_Type_size(type, &ftrabit_basic[i].size); /* the same value from every thread */
            }
            ftrabit_basic_last = &ftrabit_basic[i];
            return ftrabit_basic[i].size;
        }
    }
    return 0;
}

static inline int ftrabit_dense_basic_size(MPI_Datatype type)
{
    const struct ftrabit_basic_entry *last = ftrabit_basic_last;
    return NULL != last && last->type == type ? last->size : ftrabit_basic_search(type);
}

/* ftrabit_is_contiguous for any other type: asks MPI. */
static __attribute__((noinline)) int ftrabit_layout_is_contiguous(int count, MPI_Datatype type,
                                                                  size_t *bytes)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    int size;

    MPI_Type_size(type, &size);
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &true_lb, &true_extent);
    *bytes = (size_t) size * (size_t) count;
    return 0 == true_lb && true_extent == size && (count <= 1 || extent == size);
}

/* Are `count` elements of `type` at buf exactly the *bytes bytes from buf on? Each element
 * must be dense (its true extent is its size, starting at buf) and, with more than one, the
 * next one must start where it ends: elements are `extent` apart, not `true extent` (a
 * struct such as MPI_DOUBLE_INT has 12 bytes of data in an extent of 16). Inline, with
 * the questions to MPI out of line: a call with a predefined type costs a few
 * instructions, not the saving and restoring of six registers. */
static inline int ftrabit_is_contiguous(int count, MPI_Datatype type, size_t *bytes)
{
    int size = ftrabit_dense_basic_size(type);

    if (size > 0) {
        *bytes = (size_t) size * (size_t) (count > 0 ? count : 0);
        return 1;
    }
    return ftrabit_layout_is_contiguous(count, type, bytes);
}

/* MPI_Pack_size, refusing what its int cannot hold: Open MPI 5.0.7 cuts the size to an int
 * without a word. */
static int ftrabit_pack_size(int count, MPI_Datatype type, MPI_Comm comm, int *size)
{
    MPI_Count bytes;
    int err = MPI_Type_size_x(type, &bytes);

    if (MPI_SUCCESS != err) {
        return err;
    }
    if (bytes < 0 || count < 0 || (uint64_t) bytes * (uint64_t) count > (uint64_t) INT_MAX) {
        return MPI_ERR_COUNT;
    }
    return MPI_Pack_size(count, type, comm, size);
}

/* Pack `count` elements of `type` at buf into a new contiguous blob. */
static int ftrabit_pack(const void *buf, int count, MPI_Datatype type, MPI_Comm comm,
                        void **blob, size_t *len)
{
    int size, pos = 0;
    if (ftrabit_is_contiguous(count, type, len)) {
        *blob = malloc(*len ? *len : 1);
        if (NULL == *blob) {
            return MPI_ERR_NO_MEM;
        }
        memcpy(*blob, buf, *len);
        return MPI_SUCCESS;
    }
    int err = ftrabit_pack_size(count, type, comm, &size);
    if (MPI_SUCCESS != err) {
        return err;
    }
    *blob = malloc(size ? (size_t) size : 1);
    if (NULL == *blob) {
        return MPI_ERR_NO_MEM;
    }
    err = MPI_Pack(buf, count, type, *blob, size, &pos, comm);
    *len = (size_t) pos;
    return err;
}

static int ftrabit_unpack(const void *blob, size_t len, void *buf, int count, MPI_Datatype type,
                          MPI_Comm comm)
{
    size_t bytes;
    int pos = 0;
    if (ftrabit_is_contiguous(count, type, &bytes)) {
        if (bytes != len) {
            return MPI_ERR_TRUNCATE;
        }
        memcpy(buf, blob, len);
        return MPI_SUCCESS;
    }
    return MPI_Unpack(blob, (int) len, &pos, buf, count, type, comm);
}

/* ---- the collective path ------------------------------------------------------------ */

typedef struct {
    int is_bcast;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int root;
} ftrabit_call_t;

/*
 * Where a call's result is made and kept. Kept results live in pool buffers that are
 * reused across checkpoints (ftrabit_pool.h): the steady state allocates and first-touches
 * no memory, and ranks that do not keep a result (coll_ftrabit_result_replicas) copy
 * nothing into the cache.
 *  - contiguous allreduce (`direct`): MPI reduces from the user's buffer, which it only
 *    reads (so a retry after a failure starts from the same input, with no copy of it),
 *    into `out`; the result is copied to the user's buffer, and the slot becomes the
 *    cached result on a keeper or goes back to the pool elsewhere: one copy per call.
 *    `out` is the slot itself, except for the sizes of ftrabit_stages_result: there it
 *    is the state's scratch buffer, reused by every call and so still in the caches, and
 *    one pass over it writes the user's buffer and streams the slot (ftrabit_copy_twice):
 *    the interval's slots (one per call until the next checkpoint) no longer pass through
 *    the caches, where they evicted the working set the reduction uses;
 *  - bcast (the root's buffer is only read too) and non-contiguous allreduce (from
 *    `input`, a copy of the user's data): the result is made in the user's buffer and a
 *    keeper copies or packs it into a pool buffer.
 */
typedef struct {
    int keeper;
    int direct;
    size_t len;        /* bytes of a direct result */
    void *out;         /* where MPI makes a direct result: slot.data or the scratch buffer */
    const void *input; /* send buffer of a non-direct allreduce */
    ftrabit_slot_t slot;
} ftrabit_result_t;

/* The sizes whose result a contiguous allreduce makes in the scratch buffer (see above).
 * Below FTRABIT_STAGE_MIN an interval of 10 kept results fits in the last-level cache
 * beside the working set, and memcpy into a cached slot beats a streamed copy; from
 * FTRABIT_STAGE_MAX on the working set itself (buffer, scratch, the reduction's half
 * vector) no longer fits, the scratch is cold too, and reducing straight into the slot
 * moves less memory. On an idle 2-core VM (np 2, 10 kept results; docs/bench/
 * ftr-floor3-2026-11-29.md) the direct way was the faster at 1 MiB in every run of both
 * bench/ftr_keep_ways and bench/run-ftr-overhead.sh, and at 8 MiB in every run of the
 * latter (the former said the opposite there); from 2 to 4 MiB run-to-run noise (1.10-1.49x
 * the floor for the same code) was larger than any difference. Bounding the sizes also
 * bounds the scratch buffer a communicator holds. */
#define FTRABIT_STAGE_MIN ((size_t) 2 << 20)
#define FTRABIT_STAGE_MAX ((size_t) 8 << 20)

static inline int ftrabit_stages_result(size_t len)
{
    return len >= FTRABIT_STAGE_MIN && len < FTRABIT_STAGE_MAX;
}

static int ftrabit_run_once(const ftrabit_call_t *call, void *buf, const ftrabit_result_t *r,
                            MPI_Comm comm)
{
    if (call->is_bcast) {
        return MPI_Bcast(buf, call->count, call->type, call->root, comm);
    }
    if (r->direct) {
        return MPI_Allreduce(buf, r->out, call->count, call->type, call->op, comm);
    }
    return MPI_Allreduce(r->input, buf, call->count, call->type, call->op, comm);
}

static uint32_t ftrabit_op_id(MPI_Op op)
{
    /* Fortran handles of predefined ops are the same in every process; user ops get
     * theirs in creation order, the same in every process of an SPMD program. */
    return (uint32_t) MPI_Op_c2f(op);
}

/* The name of a predefined op from its id, or NULL for a user-defined one. */
static const char *ftrabit_op_name(uint32_t id)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } predefined[] = {{MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"},     {MPI_MAX, "MPI_MAX"},
                      {MPI_MIN, "MPI_MIN"},   {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
                      {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},       {MPI_LXOR, "MPI_LXOR"},
                      {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},       {MPI_BXOR, "MPI_BXOR"}};
    for (size_t i = 0; i < sizeof(predefined) / sizeof(predefined[0]); i++) {
        if (ftrabit_op_id(predefined[i].op) == id) {
            return predefined[i].name;
        }
    }
    return NULL;
}

/* The last predefined op an allreduce named, and its key: a predefined op is never freed,
 * so its Fortran handle need not be asked for again (a user op's handle can be freed and
 * come back as another op with another Fortran handle). As ftrabit_state_of's last
 * communicator, this assumes one thread at a time in the FTR calls. */
static MPI_Op ftrabit_keyed_op = MPI_OP_NULL;
static uint64_t ftrabit_keyed_op_key;

/* The key a call's result is cached under (ftrabit_cache.h), out of line: an allreduce
 * whose op is not the last predefined one, and a broadcast, whose root is the process's
 * rank in FTR_Init's communicator (its first_rank), so that a call retried or replayed on
 * a communicator that shrink renumbered names the same. */
static __attribute__((noinline)) uint64_t ftrabit_call_key_slow(const ftrabit_state_t *st,
                                                                const ftrabit_call_t *call)
{
    if (!call->is_bcast) {
        uint32_t id = ftrabit_op_id(call->op);
        uint64_t key = ftrabit_key(FTRABIT_KEY_ALLREDUCE, id);
        if (NULL != ftrabit_op_name(id)) {
            ftrabit_keyed_op = call->op;
            ftrabit_keyed_op_key = key;
        }
        return key;
    }
    int root = call->root;
    if (NULL != st->first_rank_of && root >= 0 && root < st->first_rank_of_size) {
        root = st->first_rank_of[root];
    }
    return ftrabit_key(FTRABIT_KEY_BCAST, (uint32_t) root);
}

static inline uint64_t ftrabit_call_key(const ftrabit_state_t *st, const ftrabit_call_t *call)
{
    if (!call->is_bcast && call->op == ftrabit_keyed_op && MPI_OP_NULL != call->op) {
        return ftrabit_keyed_op_key;
    }
    return ftrabit_call_key_slow(st, call);
}

static void ftrabit_key_describe(uint64_t key, char *out, size_t room)
{
    uint32_t value = ftrabit_key_value(key);
    const char *op;
    if (FTRABIT_KEY_BCAST == ftrabit_key_kind(key)) {
        snprintf(out, room, "a broadcast from original rank %d", (int) value);
    } else if (NULL != (op = ftrabit_op_name(value))) {
        snprintf(out, room, "an allreduce with %s", op);
    } else {
        snprintf(out, room, "an allreduce with a user-defined op (Fortran handle %u)", value);
    }
}

/* A call served from the cache that names another root, op or kind of collective than
 * the call that made the result: a program whose replay differs from its first run, or
 * (under shrink) one that computes a root from the new rank numbers or size. Serving the
 * result would hand it another root's data; it gets an error instead. */
static int ftrabit_refuse_cached(uint64_t seq, uint64_t want, uint64_t have)
{
    char wanted[96], made[96];
    ftrabit_key_describe(want, wanted, sizeof(wanted));
    ftrabit_key_describe(have, made, sizeof(made));
    fprintf(stderr, "ftrabit: collective %llu is %s here, but its result was made by %s: the "
                    "collectives must be called with the same arguments when they are replayed "
                    "(under shrink: roots must not depend on the new rank numbers or size)\n",
            (unsigned long long) seq, wanted, made);
    if (ftrabit_key_kind(want) != ftrabit_key_kind(have)) {
        return MPI_ERR_ARG;
    }
    return FTRABIT_KEY_BCAST == ftrabit_key_kind(want) ? MPI_ERR_ROOT : MPI_ERR_OP;
}

/* Serve a cached result for `seq` if there is one; returns 1 if served (or refused). */
static int ftrabit_serve_cached(ftrabit_state_t *st, uint64_t seq, uint64_t key, void *buf,
                                const ftrabit_call_t *call, int *err)
{
    const void *data;
    size_t len;
    uint64_t made_by;

    if (seq > st->served_until
        || FTRABIT_CACHE_OK != ftrabit_cache_get(&st->results, seq, &made_by, &data, &len)) {
        return 0;
    }
    if (made_by != key) {
        *err = ftrabit_refuse_cached(seq, key, made_by);
        return 1;
    }
    *err = ftrabit_unpack(data, len, buf, call->count, call->type, st->comm);
    if (MPI_SUCCESS != *err) {
        ftrabit_log(0, "the cached result of collective %llu has %zu bytes, but this call "
                       "asks for a different size: was the replay different from the original run?",
                    (unsigned long long) seq, len);
        return 1;
    }
    st->completed_seq = seq;
    return 1;
}

/* ---- held results ----------------------------------------------------------------------
 * Rabit's rule, for allreduce and broadcast alike: a rank holds the result of its last
 * collective, keeper or not, so that a result whose keepers all died right after it, or
 * are still inside the call that others completed, lives on in the survivors that
 * completed it. Holding only the very last one is not enough here: a broadcast does not
 * wait for everybody, so ranks can complete an allreduce and the broadcasts after it
 * while its keepers are still inside that allreduce (seen under load: both keepers of
 * collective 14 still in it while the others completed broadcast 15, gone on to 16 and
 * dropped 14). An allreduce does wait for everybody: once one completes here, every rank
 * has completed all before it, and no survivor needs them any more. So a rank holds every
 * result since the last allreduce it completed; a keeper's are in the cache already. */

void ftrabit_held_restart(ftrabit_state_t *st, uint64_t from)
{
    for (int i = 0; i < st->nheld; i++) {
        ftrabit_cache_return_slot(&st->results, &st->held[i].slot); /* if still held here */
    }
    st->nheld = 0;
    st->held_from = from;
    if (0 == from) {
        free(st->held);
        st->held = NULL;
        st->held_room = 0;
    }
}

/* `slot` (its first `len` bytes) is the result of `seq`, which this rank does not keep. */
static void ftrabit_held_add(ftrabit_state_t *st, uint64_t seq, uint64_t key,
                             ftrabit_slot_t *slot, size_t len)
{
    if (st->nheld == st->held_room) {
        int room = st->held_room ? 2 * st->held_room : 4;
        ftrabit_held_result_t *more = realloc(st->held, (size_t) room * sizeof(*more));
        if (NULL == more) { /* out of memory: hold nothing up to here */
            ftrabit_cache_return_slot(&st->results, slot);
            ftrabit_held_restart(st, seq + 1);
            return;
        }
        st->held = more;
        st->held_room = room;
    }
    st->held[st->nheld++] = (ftrabit_held_result_t){
        .seq = seq, .key = key, .len = len, .slot = *slot};
    slot->data = NULL;
    slot->capacity = 0;
}

int ftrabit_held_offer(ftrabit_state_t *st, uint64_t *lo, uint64_t *hi)
{
    for (int i = 0; i < st->nheld; i++) {
        ftrabit_held_result_t *h = &st->held[i];
        if (NULL != h->slot.data
            && FTRABIT_CACHE_OK
                   != ftrabit_cache_put_slot(&st->results, h->seq, h->key, &h->slot, h->len)) {
            st->held_from = h->seq + 1; /* the slot went back to the pool */
        }
    }
    *lo = st->held_from;
    *hi = st->completed_seq;
    return 0 != *lo && *lo <= *hi;
}

/* A copy of a result made in the user's buffer, packed straight into a pool buffer; 0 if
 * it cannot be made (out of memory). That is not fatal here: recovery finds the result
 * missing and says so if it is ever needed. */
static int ftrabit_copy_result(ftrabit_state_t *st, const void *buf, const ftrabit_call_t *call,
                               ftrabit_slot_t *slot, size_t *len)
{
    int size, pos = 0;

    if (ftrabit_is_contiguous(call->count, call->type, len)) {
        if (FTRABIT_CACHE_OK != ftrabit_cache_slot(&st->results, *len, slot)) {
            return 0;
        }
        memcpy(slot->data, buf, *len);
        return 1;
    }
    int err = ftrabit_pack_size(call->count, call->type, st->comm, &size);
    if (MPI_ERR_COUNT == err) {
        static int said;
        if (!said) {
            said = 1;
            fprintf(stderr, "ftrabit: results of more than 2 GiB in a non-contiguous datatype "
                            "are not kept (MPI_Pack counts in int): a rank that must replay one "
                            "cannot recover\n");
        }
    }
    if (MPI_SUCCESS != err
        || FTRABIT_CACHE_OK != ftrabit_cache_slot(&st->results, (size_t) size, slot)) {
        return 0;
    }
    if (MPI_SUCCESS != MPI_Pack(buf, call->count, call->type, slot->data, size, &pos, st->comm)) {
        ftrabit_cache_return_slot(&st->results, slot);
        return 0;
    }
    *len = (size_t) pos;
    return 1;
}

/* After a successful run: the result into the user's buffer, and into the cache (a
 * keeper) or among the held results (anyone else). */
static void ftrabit_result_complete(ftrabit_state_t *st, uint64_t seq, uint64_t key, void *buf,
                                    const ftrabit_call_t *call, ftrabit_result_t *r)
{
    ftrabit_slot_t copy = {NULL, 0}, *slot = &copy;
    size_t len;

    if (!call->is_bcast) {
        ftrabit_held_restart(st, seq); /* every rank completed the collectives before it */
    }
    if (r->direct) {
        if (r->out == r->slot.data) {
            memcpy(buf, r->out, r->len);
        } else {
            ftrabit_copy_twice(buf, r->slot.data, r->out, r->len);
        }
        slot = &r->slot;
        len = r->len;
    } else if (!ftrabit_copy_result(st, buf, call, &copy, &len)) {
        ftrabit_held_restart(st, seq + 1); /* this one is not held: nothing up to it is */
        return;
    }
    if (r->keeper) {
        (void) ftrabit_cache_put_slot(&st->results, seq, key, slot, len);
    } else {
        ftrabit_held_add(st, seq, key, slot, len);
    }
}

/* At least `span` bytes of the state's scratch buffer, kept with the communicator's state:
 * a fresh allocation per call costs page faults on large vectors. NULL if out of memory. */
static void *ftrabit_scratch(ftrabit_state_t *st, size_t span)
{
    if (span > st->scratch_size) {
        void *bigger = realloc(st->scratch, span);
        if (NULL == bigger) {
            return NULL;
        }
        st->scratch = bigger;
        st->scratch_size = span;
    }
    return st->scratch;
}

/* The copy of an allreduce's input that a retry starts from, in the scratch buffer. */
static void *ftrabit_input_copy(ftrabit_state_t *st, const void *buf, const ftrabit_call_t *call,
                                int *err)
{
    MPI_Aint lb, extent, true_lb, true_extent;

    MPI_Type_get_extent(call->type, &lb, &extent);
    MPI_Type_get_true_extent(call->type, &true_lb, &true_extent);
    size_t span = call->count > 0 ? (size_t) (true_extent + (call->count - 1) * extent) : 1;
    char *scratch = ftrabit_scratch(st, span);
    if (NULL == scratch) {
        *err = MPI_ERR_NO_MEM;
        return NULL;
    }
    void *input = scratch - true_lb;
    *err = MPI_Sendrecv(buf, call->count, call->type, 0, 0, input, call->count, call->type, 0, 0,
                        MPI_COMM_SELF, MPI_STATUS_IGNORE);
    return MPI_SUCCESS == *err ? input : NULL;
}

/* A broadcast retried after a recovery that renumbered the ranks (shrink): *root, a rank
 * of the communicator the call started on (`before`), becomes the rank of the same process
 * in the rebuilt one. Under respawn every rank keeps its number (a dead root's replacement
 * replays up to this call and sends the same data). A root that died under shrink took
 * the data with it: every rank translates the same groups, so every rank fails alike. */
static int ftrabit_follow_root(const ftrabit_state_t *st, MPI_Group before, uint64_t seq,
                               int *root)
{
    MPI_Group after;
    int moved;

    if (FTRABIT_RECOVER_SHRINK != ftrabit_settings.policy) {
        return MPI_SUCCESS;
    }
    MPI_Comm_group(st->comm, &after);
    MPI_Group_translate_ranks(before, 1, root, after, &moved);
    MPI_Group_free(&after);
    if (MPI_UNDEFINED == moved) {
        if (st->announces_recovery) {
            fprintf(stderr, "ftrabit: FTR_Bcast (collective %llu): its root died before any "
                            "survivor received the data, which is lost under the shrink "
                            "policy\n", (unsigned long long) seq);
        }
        return MPI_ERR_ROOT;
    }
    *root = moved;
    return MPI_SUCCESS;
}

static int ftrabit_collective(const ftrabit_call_t *call, void *buf, MPI_Comm *comm)
{
    ftrabit_state_t *st = ftrabit_state_of(*comm);
    int err;

    if (NULL == st) {
        /* Not a communicator from FTR_Init or recovery: plain MPI, no fault tolerance. */
        return call->is_bcast ? MPI_Bcast(buf, call->count, call->type, call->root, *comm)
                              : MPI_Allreduce(MPI_IN_PLACE, buf, call->count, call->type,
                                              call->op, *comm);
    }
    uint64_t seq = st->completed_seq + 1, key = ftrabit_call_key(st, call);
    if (ftrabit_serve_cached(st, seq, key, buf, call, &err)) {
        return err;
    }

    ftrabit_result_t result = {
        .keeper = ftrabit_cache_is_keeper(seq, st->orig_rank, st->orig_size,
                                          ftrabit_settings.result_replicas)};
    if (!call->is_bcast) {
        result.direct = ftrabit_is_contiguous(call->count, call->type, &result.len);
        if (result.direct) {
            if (FTRABIT_CACHE_OK != ftrabit_cache_slot(&st->results, result.len, &result.slot)) {
                return MPI_ERR_NO_MEM;
            }
            void *scratch =
                ftrabit_stages_result(result.len) ? ftrabit_scratch(st, result.len) : NULL;
            result.out = NULL != scratch ? scratch : result.slot.data; /* NULL: no memory */
        } else {
            /* The input survives a failed attempt in this copy (an allreduce that failed
             * halfway leaves buf undefined). */
            result.input = ftrabit_input_copy(st, buf, call, &err);
            if (NULL == result.input) {
                return err;
            }
        }
    }

    ftrabit_call_t now = *call; /* the root follows its process when ranks are renumbered */
    for (;;) {
        err = ftrabit_run_once(&now, buf, &result, st->comm);
        if (MPI_SUCCESS == err) {
            ftrabit_result_complete(st, seq, key, buf, &now, &result);
            st->completed_seq = seq;
            break;
        }
        if (!ftrabit_is_process_failure(err)) {
            break;
        }
        ftrabit_log(1, "collective %llu failed (%d): recovering", (unsigned long long) seq, err);
        MPI_Group before = MPI_GROUP_NULL;
        if (now.is_bcast) {
            MPI_Comm_group(st->comm, &before);
        }
        err = ftrabit_recover(st, comm);
        if (MPI_SUCCESS == err && ftrabit_serve_cached(st, seq, key, buf, &now, &err)) {
            /* someone completed it before the failure: take their result */
        } else if (MPI_SUCCESS == err && now.is_bcast) {
            err = ftrabit_follow_root(st, before, seq, &now.root);
        }
        if (MPI_GROUP_NULL != before) {
            MPI_Group_free(&before);
        }
        if (MPI_SUCCESS != err || st->completed_seq == seq) {
            break;
        }
    }
    ftrabit_cache_return_slot(&st->results, &result.slot); /* if not kept */
    return err;
}

int FTR_Allreduce(void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm *comm)
{
    ftrabit_call_t call = {.is_bcast = 0, .count = count, .type = type, .op = op};
    return ftrabit_collective(&call, buf, comm);
}

int FTR_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm *comm)
{
    ftrabit_call_t call = {.is_bcast = 1, .count = count, .type = type, .root = root};
    return ftrabit_collective(&call, buf, comm);
}

int FTR_Version(MPI_Comm comm, int *version)
{
    ftrabit_state_t *st = ftrabit_state_of(comm);
    if (NULL == st) {
        return MPI_ERR_COMM;
    }
    *version = st->version;
    return MPI_SUCCESS;
}

/* ---- bootstrap collectives ------------------------------------------------------------
 * They are ordinary FTR collectives (they get a sequence number and are cached like the
 * others), and their results are also kept for the job in the bootstrap table, stored as
 * [seq, 8 bytes little-endian][result]. A process that runs a call site again (a
 * replacement re-running its initialisation) is served from the table; the stored seq
 * keeps its numbering aligned with the survivors', who counted that collective once.
 *
 * They belong to the initialisation, before the process's first FTR_Load_checkpoint or
 * FTR_Checkpoint on the communicator (Rabit's bootstrap phase ends at LoadCheckPoint),
 * and are refused after it. A call site run again after that point (in the main loop)
 * would be matched by its run count in this process, which a replacement restarting from
 * a checkpoint counts from 0 again: it would be served an early run's result, and its
 * sequence numbers would drift from the survivors'. The phase is a property of the
 * program's text, the same in every process, so every rank refuses the same call. */

/* A replay that differs from the original run: say how, refuse it, and let the next run
 * of the call site take its place. Another datatype (same size or not) is MPI_ERR_TYPE,
 * anything else MPI_ERR_ARG. */
static int ftrabit_bootstrap_refuse(ftrabit_state_t *st, const ftrabit_call_t *call,
                                    const ftrabit_bootstrap_signature_t *sig,
                                    const ftrabit_bootstrap_signature_t *stored, const char *file,
                                    int line, const char *func, uint32_t occurrence)
{
    char type_name[MPI_MAX_OBJECT_NAME] = "";
    int name_len = 0;
    int type_differs = sig->type_size != stored->type_size
                       || sig->type_signature != stored->type_signature;

    ftrabit_bootstrap_retract_occurrence(&st->bootstrap, file, line, func);
    MPI_Type_get_name(call->type, type_name, &name_len);
    fprintf(stderr, "ftrabit: bootstrap %s at %s:%d (%s), run %u: called with %llu elements "
                    "of %llu bytes of datatype %s (type signature %016llx, op/root %llu) but "
                    "the original run used %llu elements of %llu bytes (type signature %016llx, "
                    "op/root %llu)%s\n",
            call->is_bcast ? "broadcast" : "allreduce", file, line, func, occurrence,
            (unsigned long long) sig->count, (unsigned long long) sig->type_size,
            name_len > 0 ? type_name : "(unnamed derived type)",
            (unsigned long long) sig->type_signature, (unsigned long long) sig->op_or_root,
            (unsigned long long) stored->count, (unsigned long long) stored->type_size,
            (unsigned long long) stored->type_signature, (unsigned long long) stored->op_or_root,
            type_differs ? ": another datatype" : "");
    return type_differs ? MPI_ERR_TYPE : MPI_ERR_ARG;
}

static int ftrabit_bootstrap_call(const ftrabit_call_t *call, void *buf, MPI_Comm *comm,
                                  const char *file, int line, const char *func)
{
    ftrabit_state_t *st = ftrabit_state_of(*comm);
    int type_size, err;
    uint64_t type_signature;
    if (NULL == st) {
        return ftrabit_collective(call, buf, comm);
    }
    if (st->bootstrap_over) {
        fprintf(stderr, "ftrabit: FTR_%s_bootstrap at %s:%d (%s) after FTR_Load_checkpoint or "
                        "FTR_Checkpoint on this communicator: bootstrap calls belong to the "
                        "initialisation before them (use FTR_%s)\n",
                call->is_bcast ? "Bcast" : "Allreduce", file, line, func,
                call->is_bcast ? "Bcast" : "Allreduce");
        return MPI_ERR_OTHER;
    }
    err = MPI_Type_size(call->type, &type_size);
    if (MPI_SUCCESS == err) {
        err = ftrabit_type_signature(call->type, &type_signature);
    }
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "ftrabit: bootstrap call at %s:%d (%s): cannot read its datatype's "
                        "type signature (error %d)\n", file, line, func, err);
        return err;
    }
    uint32_t occurrence = ftrabit_bootstrap_next_occurrence(&st->bootstrap, file, line, func);
    if (FTRABIT_BOOTSTRAP_NO_OCCURRENCE == occurrence) {
        fprintf(stderr, "ftrabit: cannot count the runs of the bootstrap call at %s:%d (%s): "
                        "out of memory\n", file, line, func);
        return MPI_ERR_NO_MEM;
    }
    uint64_t key = ftrabit_call_key(st, call);
    ftrabit_bootstrap_signature_t sig = {
        .kind = (uint32_t) ftrabit_key_kind(key),
        .type_size = (uint64_t) type_size,
        .type_signature = type_signature,
        .count = (uint64_t) call->count,
        .op_or_root = ftrabit_key_value(key),
    }, stored;
    const void *data;
    size_t len;

    int rc = ftrabit_bootstrap_get(&st->bootstrap, file, line, func, occurrence, &sig, &data,
                                   &len, &stored);
    if (FTRABIT_BOOTSTRAP_MISMATCH == rc) {
        return ftrabit_bootstrap_refuse(st, call, &sig, &stored, file, line, func, occurrence);
    }
    if (FTRABIT_BOOTSTRAP_OK == rc && len >= 8) {
        const unsigned char *p = data;
        uint64_t seq = 0;
        for (int i = 7; i >= 0; i--) {
            seq = (seq << 8) | p[i];
        }
        err = ftrabit_unpack(p + 8, len - 8, buf, call->count, call->type, st->comm);
        if (MPI_SUCCESS == err && st->completed_seq < seq) {
            st->completed_seq = seq;
        }
        return err;
    }

    err = ftrabit_collective(call, buf, comm);
    if (MPI_SUCCESS != err) {
        return err;
    }
    void *blob;
    size_t blen;
    if (MPI_SUCCESS == ftrabit_pack(buf, call->count, call->type, st->comm, &blob, &blen)) {
        unsigned char *entry = malloc(blen + 8);
        if (entry) {
            uint64_t seq = st->completed_seq;
            for (int i = 0; i < 8; i++) {
                entry[i] = (unsigned char) (seq >> (8 * i));
            }
            memcpy(entry + 8, blob, blen);
            (void) ftrabit_bootstrap_put(&st->bootstrap, file, line, func, occurrence, &sig,
                                         entry, blen + 8);
            free(entry);
        }
        free(blob);
    }
    return MPI_SUCCESS;
}

int FTR_Allreduce_bootstrap_at(void *buf, int count, MPI_Datatype type, MPI_Op op,
                               MPI_Comm *comm, const char *file, int line, const char *func)
{
    ftrabit_call_t call = {.is_bcast = 0, .count = count, .type = type, .op = op};
    return ftrabit_bootstrap_call(&call, buf, comm, file, line, func);
}

int FTR_Bcast_bootstrap_at(void *buf, int count, MPI_Datatype type, int root, MPI_Comm *comm,
                           const char *file, int line, const char *func)
{
    ftrabit_call_t call = {.is_bcast = 1, .count = count, .type = type, .root = root};
    return ftrabit_bootstrap_call(&call, buf, comm, file, line, func);
}
