/*
 * ompi-resilience: libftrabit durable checkpoints, the restart from disk agreed by all
 * ranks (FTR_Init; see ftrabit_durable.h and docs/durable-checkpoints.md).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit.h"
#include "ftrabit_durable.h"
#include "ftrabit_internal.h"
#include "ftrabit_store.h"
#include "ftrabit_store_writer.h"

#define FTRABIT_TAG_RESTORE 7760
/* A restart reads the files of the version it chose; one found damaged then is left out
 * and the choice made again, at most this many times. */
#define FTRABIT_RESTORE_ROUNDS 8
/* Problems with files a rank reports one by one before it only counts them. */
#define FTRABIT_RESTORE_SAY_MAX 20

static int my_rank(const ftrabit_state_t *st)
{
    int rank = -1;
    MPI_Comm_rank(st->comm, &rank);
    return rank;
}

/* A file this rank read the header of, for the restart. */
typedef struct {
    char name[256];
    uint32_t kind, version, owner;
    uint64_t epoch;
    int bad; /* found damaged when loaded: left out */
} ftrabit_restore_file_t;

typedef struct {
    ftrabit_restore_file_t *files;
    int nfiles;
    uint32_t top;            /* newest version of this program and size read here */
    uint64_t other_shape;    /* newest file of another number of ranks: version << 32 | ranks */
    int foreign;             /* a file of another program, or of an unknown format */
    int seen;                /* any file of ours at all */
    int said;                /* problems reported one by one */
} ftrabit_restore_scan_t;

static void ftrabit_restore_say(ftrabit_restore_scan_t *s, const char *fmt, const char *dir,
                                const char *name, const char *what)
{
    if (s->said++ < FTRABIT_RESTORE_SAY_MAX) {
        fprintf(stderr, fmt, dir, name, what);
    }
}

/* Does this rank read the header of `e` in its directory? Each file is read by one rank:
 * a local state by its owner when the owner shares the directory, everything else by the
 * directory's leader. */
static int ftrabit_restore_reads(const ftrabit_durable_t *d, int rank, int size,
                                 const ftrabit_store_entry_t *e)
{
    if (FTRABIT_STORE_LOCAL == e->kind && e->owner < (uint32_t) size
        && d->leader[e->owner] == d->leader[rank]) {
        return (int) e->owner == rank;
    }
    return d->leader[rank] == rank;
}

static int ftrabit_restore_scan(ftrabit_state_t *st, ftrabit_restore_scan_t *s)
{
    ftrabit_durable_t *d = st->durable;
    ftrabit_store_entry_t *entries;
    int n, rank, size;

    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    memset(s, 0, sizeof(*s));
    if (0 != ftrabit_store_list(d->dir, &entries, &n)) {
        fprintf(stderr, "ftrabit: rank %d: cannot list %s: %s\n", rank, d->dir, strerror(errno));
        return 0;
    }
    s->files = calloc((size_t) (n > 0 ? n : 1), sizeof(*s->files));
    if (NULL == s->files) {
        free(entries);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        ftrabit_store_header_t h;
        const ftrabit_store_entry_t *e = &entries[i];
        if (e->temporary || !ftrabit_restore_reads(d, rank, size, e)) {
            continue;
        }
        s->seen = 1;
        int rc = ftrabit_store_read_header(d->dir, e->name, &h);
        if (FTRABIT_STORE_FORMAT_UNKNOWN == rc) {
            s->foreign = 1;
        }
        if (FTRABIT_STORE_OK != rc) {
            ftrabit_restore_say(s, "ftrabit: durable checkpoint %s/%s: %s: left out\n", d->dir,
                                e->name, ftrabit_store_status_name(rc));
            continue;
        }
        if (h.kind != e->kind || h.version != e->version || h.owner != e->owner) {
            ftrabit_restore_say(s, "ftrabit: durable checkpoint %s/%s: %s: left out\n", d->dir,
                                e->name, "its header names another piece than its file name");
            continue;
        }
        if (0 != strcmp(h.program, d->program)) {
            fprintf(stderr, "ftrabit: durable checkpoint %s/%s was written by program %s, not "
                            "by %s\n", d->dir, e->name, h.program, d->program);
            s->foreign = 1;
            continue;
        }
        if ((int) h.nranks != size) {
            uint64_t shape = (uint64_t) h.version << 32 | h.nranks;
            if (shape > s->other_shape) {
                s->other_shape = shape;
            }
            ftrabit_log(1, "durable checkpoint %s/%s is of a job of %u ranks", d->dir, e->name,
                        h.nranks);
            continue;
        }
        s->files[s->nfiles++] = (ftrabit_restore_file_t){
            .kind = h.kind, .version = h.version, .owner = h.owner, .epoch = h.epoch};
        snprintf(s->files[s->nfiles - 1].name, sizeof(s->files[0].name), "%s", e->name);
        if (h.version > s->top) {
            s->top = h.version;
        }
    }
    if (s->said > FTRABIT_RESTORE_SAY_MAX) {
        fprintf(stderr, "ftrabit: rank %d: %d more damaged checkpoint files in %s\n", rank,
                s->said - FTRABIT_RESTORE_SAY_MAX, d->dir);
    }
    free(entries);
    return 1;
}

/* The census of one round: what every rank can read, combined; the choice. */
static int ftrabit_restore_choose(ftrabit_state_t *st, const ftrabit_restore_scan_t *s,
                                  uint32_t top, ftrabit_store_choice_t *choice)
{
    int size, err;
    MPI_Comm_size(st->comm, &size);
    uint64_t *avail = calloc((size_t) size + 1, sizeof(uint64_t)); /* [size]: the global */
    uint64_t epochs[2 * FTRABIT_STORE_WINDOW] = {0};               /* max, then ~min */

    if (NULL == avail) {
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < FTRABIT_STORE_WINDOW; i++) {
        epochs[FTRABIT_STORE_WINDOW + i] = 0; /* ~UINT64_MAX: no epoch seen yet */
    }
    for (int i = 0; i < s->nfiles; i++) {
        const ftrabit_restore_file_t *f = &s->files[i];
        uint64_t bit = ftrabit_store_bit(top, f->version);
        if (f->bad || 0 == bit) {
            continue;
        }
        avail[FTRABIT_STORE_GLOBAL == f->kind ? size : (int) f->owner] |= bit;
        int slot = (int) (top - f->version);
        if (f->epoch > epochs[slot]) {
            epochs[slot] = f->epoch;
        }
        if (~f->epoch > epochs[FTRABIT_STORE_WINDOW + slot]) {
            epochs[FTRABIT_STORE_WINDOW + slot] = ~f->epoch;
        }
    }
    err = MPI_Allreduce(MPI_IN_PLACE, avail, size + 1, MPI_UINT64_T, MPI_BOR, st->comm);
    if (MPI_SUCCESS == err) {
        err = MPI_Allreduce(MPI_IN_PLACE, epochs, 2 * FTRABIT_STORE_WINDOW, MPI_UINT64_T,
                            MPI_MAX, st->comm);
    }
    if (MPI_SUCCESS == err) {
        ftrabit_store_choose(top, avail, size, avail[size], epochs,
                             epochs + FTRABIT_STORE_WINDOW, choice);
    }
    free(avail);
    return err;
}

static ftrabit_restore_file_t *ftrabit_restore_find(ftrabit_restore_scan_t *s, uint32_t kind,
                                                    uint32_t version, int owner)
{
    for (int i = 0; i < s->nfiles; i++) {
        ftrabit_restore_file_t *f = &s->files[i];
        if (!f->bad && f->kind == kind && f->version == version
            && (FTRABIT_STORE_GLOBAL == kind || (int) f->owner == owner)) {
            return f;
        }
    }
    return NULL;
}

/* Broadcast `len` bytes (any size) from root. */
static int ftrabit_bcast_bytes(void *buf, size_t len, int root, MPI_Comm comm)
{
    const size_t piece = (size_t) 1 << 30;
    int err = MPI_SUCCESS;
    for (size_t done = 0; done < len && MPI_SUCCESS == err; done += piece) {
        size_t n = len - done < piece ? len - done : piece;
        err = MPI_Bcast((char *) buf + done, (int) n, MPI_BYTE, root, comm);
    }
    return err;
}

/* What a restart round loads: the chosen version's global state and this rank's local
 * state, and the payloads this rank provides to others. */
typedef struct {
    int *provider;           /* [size + 1]: who reads owner o's state (and [size]: the global) */
    void **payload;          /* [size + 1]: the payloads this rank read, by the same index */
    uint64_t *payload_size;
    void *global, *local;
    size_t global_size, local_size;
} ftrabit_restore_load_t;

static void ftrabit_restore_load_free(ftrabit_restore_load_t *l, int size)
{
    if (NULL != l->payload) {
        for (int i = 0; i <= size; i++) {
            free(l->payload[i]);
        }
    }
    free(l->payload);
    free(l->payload_size);
    free(l->provider);
    free(l->global);
    free(l->local);
    memset(l, 0, sizeof(*l));
}

/* Who provides each piece of version v: an owner that read its own file, else the lowest
 * rank that read a copy; the global from the lowest rank that read it. */
static int ftrabit_restore_providers(ftrabit_state_t *st, ftrabit_restore_scan_t *s,
                                     uint32_t v, ftrabit_restore_load_t *l)
{
    int rank, size;
    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    for (int o = 0; o <= size; o++) {
        int global = o == size;
        int has = NULL != ftrabit_restore_find(s, global ? FTRABIT_STORE_GLOBAL
                                                         : FTRABIT_STORE_LOCAL, v, o);
        /* 0 for the owner itself, 1 + rank for any other, so that the minimum prefers it */
        l->provider[o] = !has ? INT32_MAX : (!global && o == rank) ? 0 : 1 + rank;
    }
    int err = MPI_Allreduce(MPI_IN_PLACE, l->provider, size + 1, MPI_INT, MPI_MIN, st->comm);
    for (int o = 0; o <= size && MPI_SUCCESS == err; o++) {
        l->provider[o] = 0 == l->provider[o] ? o : l->provider[o] - 1;
    }
    return err;
}

/* Read what this rank provides; a file found damaged now is reported, marked and makes the
 * round fail everywhere (*failed). */
static int ftrabit_restore_read(ftrabit_state_t *st, ftrabit_restore_scan_t *s, uint32_t v,
                                ftrabit_restore_load_t *l, int *failed)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    for (int o = 0; o <= size; o++) {
        if (l->provider[o] != rank) {
            continue;
        }
        ftrabit_restore_file_t *f = ftrabit_restore_find(
            s, o == size ? FTRABIT_STORE_GLOBAL : FTRABIT_STORE_LOCAL, v, o);
        ftrabit_store_header_t h;
        int rc = NULL == f ? FTRABIT_STORE_IO
                           : ftrabit_store_read(st->durable->dir, f->name, &h, &l->payload[o]);
        if (FTRABIT_STORE_OK == rc && (h.version != v || h.epoch != f->epoch)) {
            rc = FTRABIT_STORE_DAMAGED; /* changed since its header was read */
            free(l->payload[o]);
            l->payload[o] = NULL;
        }
        if (FTRABIT_STORE_OK != rc) {
            fprintf(stderr, "ftrabit: durable checkpoint %s/%s: %s: left out, the choice of "
                            "the version to resume is made again\n", st->durable->dir,
                    NULL != f ? f->name : "?", ftrabit_store_status_name(rc));
            if (NULL != f) {
                f->bad = 1;
            }
            bad = 1;
            continue;
        }
        l->payload_size[o] = h.payload_size;
    }
    *failed = bad;
    return MPI_Allreduce(MPI_IN_PLACE, failed, 1, MPI_INT, MPI_MAX, st->comm);
}

/* The global state to every rank, each local state to its owner. */
static int ftrabit_restore_transfer(ftrabit_state_t *st, ftrabit_restore_load_t *l)
{
    int rank, size, err;
    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    uint64_t gsize = l->provider[size] == rank ? l->payload_size[size] : 0;
    ftrabit_sends_t sends;
    int sends_open = MPI_SUCCESS == ftrabit_sends_open(&sends, size);

    err = MPI_Bcast(&gsize, 1, MPI_UINT64_T, l->provider[size], st->comm);
    if (MPI_SUCCESS == err) {
        if (l->provider[size] == rank) {
            l->global = l->payload[size];
            l->payload[size] = NULL;
        } else {
            l->global = gsize < SIZE_MAX ? malloc(gsize ? (size_t) gsize : 1) : NULL;
        }
        l->global_size = (size_t) gsize;
        /* nobody waits in a broadcast that a rank out of memory would not join */
        int ok = sends_open && NULL != l->global;
        err = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, st->comm);
        if (MPI_SUCCESS == err && !ok) {
            err = MPI_ERR_NO_MEM;
        }
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_bcast_bytes(l->global, l->global_size, l->provider[size], st->comm);
    }
    for (int o = 0; o < size && MPI_SUCCESS == err; o++) {
        if (l->provider[o] == rank && o != rank) {
            err = ftrabit_sends_post(&sends, l->payload[o], (size_t) l->payload_size[o], o,
                                     FTRABIT_TAG_RESTORE, st->comm);
        }
    }
    if (MPI_SUCCESS == err) {
        if (l->provider[rank] == rank) {
            l->local = l->payload[rank];
            l->local_size = (size_t) l->payload_size[rank];
            l->payload[rank] = NULL;
        } else {
            err = ftrabit_recv_blob(l->provider[rank], FTRABIT_TAG_RESTORE, st->comm, &l->local,
                                    &l->local_size);
        }
    }
    /* the payloads sent stay allocated until the caller frees the load */
    int send_err = sends_open ? ftrabit_sends_wait(&sends) : MPI_SUCCESS;
    return MPI_SUCCESS != err ? err : send_err;
}

/* Every rank got its pieces (out of memory on one: every rank fails). */
static int ftrabit_restore_loaded_everywhere(ftrabit_state_t *st, const ftrabit_restore_load_t *l)
{
    int ok = NULL != l->global && NULL != l->local;
    int err = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, st->comm);
    return MPI_SUCCESS != err ? err : ok ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Why no version in the window is complete, or why not the newest: said once, by rank 0. */
static void ftrabit_restore_explain(const ftrabit_state_t *st, uint32_t top,
                                    const ftrabit_store_choice_t *c)
{
    char why[160];
    if (FTRABIT_STORE_NO_GLOBAL == c->top_missing) {
        snprintf(why, sizeof(why), "its global state is in no readable file");
    } else if (FTRABIT_STORE_MIXED_RUNS == c->top_missing) {
        snprintf(why, sizeof(why), "its files were written by different runs");
    } else {
        snprintf(why, sizeof(why), "rank %d's local state is in no readable file",
                 c->top_missing);
    }
    if (0 == c->version) {
        fprintf(stderr, "ftrabit: no checkpoint version in %s is complete (the newest, %u: %s): "
                        "the job starts from the beginning, and the files of the incomplete "
                        "versions are removed\n", st->durable->dir, top, why);
    } else {
        fprintf(stderr, "ftrabit: durable checkpoint version %u in %s is incomplete (%s): "
                        "version %u is used\n", top, st->durable->dir, why, c->version);
    }
}

/* Rounds of choice and load, until the files of the version chosen all read back whole. */
static int ftrabit_restore_rounds(ftrabit_state_t *st, ftrabit_restore_scan_t *s, uint32_t top,
                                  ftrabit_store_choice_t *choice, ftrabit_restore_load_t *l)
{
    int size, err = MPI_SUCCESS, rank = my_rank(st);
    MPI_Comm_size(st->comm, &size);
    l->provider = malloc(sizeof(int) * ((size_t) size + 1));
    l->payload = calloc((size_t) size + 1, sizeof(void *));
    l->payload_size = calloc((size_t) size + 1, sizeof(uint64_t));
    if (NULL == l->provider || NULL == l->payload || NULL == l->payload_size) {
        return MPI_ERR_NO_MEM;
    }
    for (int round = 0; round < FTRABIT_RESTORE_ROUNDS; round++) {
        int failed = 0;
        err = ftrabit_restore_choose(st, s, top, choice);
        if (MPI_SUCCESS != err) {
            return err;
        }
        if (0 == rank && choice->version != top && 0 == round) {
            ftrabit_restore_explain(st, top, choice);
        }
        if (0 == choice->version) {
            return MPI_SUCCESS;
        }
        err = ftrabit_restore_providers(st, s, choice->version, l);
        if (MPI_SUCCESS == err) {
            err = ftrabit_restore_read(st, s, choice->version, l, &failed);
        }
        if (MPI_SUCCESS != err || !failed) {
            return err;
        }
        for (int o = 0; o <= size; o++) {
            free(l->payload[o]);
            l->payload[o] = NULL;
        }
        if (0 == rank) {
            fprintf(stderr, "ftrabit: version %u in %s has a damaged file (said above): "
                            "choosing again\n", choice->version, st->durable->dir);
        }
    }
    choice->version = 0; /* damage everywhere: give up, the same on every rank */
    return MPI_SUCCESS;
}

/* Files of another program, or of another number of ranks newer than what this job can
 * resume: nothing is resumed, every rank returns the error. */
static int ftrabit_restore_refuse(const ftrabit_state_t *st, const uint64_t *flags, uint32_t v)
{
    int rank = my_rank(st), size;
    MPI_Comm_size(st->comm, &size);
    uint32_t other_version = (uint32_t) (flags[2] >> 32), other_ranks = (uint32_t) flags[2];

    if (flags[1]) {
        if (0 == rank) {
            fprintf(stderr, "ftrabit: FTR_Init: %s holds checkpoints this program "
                            "(%s) did not write, or in a format it does not read (said above "
                            "with their paths): nothing is resumed; give each program its own "
                            "coll_ftrabit_checkpoint_dir\n", st->durable->dir,
                    st->durable->program);
        }
        return MPI_ERR_OTHER;
    }
    if (0 != flags[2] && other_version >= v) {
        if (0 == rank) {
            fprintf(stderr, "ftrabit: FTR_Init: the newest checkpoint in %s "
                            "(version %u) is of a job of %u ranks, and this job has %d: "
                            "nothing is resumed; start it with %u ranks, or give another "
                            "coll_ftrabit_checkpoint_dir\n", st->durable->dir, other_version,
                    other_ranks, size, other_ranks);
        }
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int ftrabit_restore_with(ftrabit_state_t *st, ftrabit_restore_scan_t *s)
{
    ftrabit_durable_t *d = st->durable;
    ftrabit_store_choice_t choice = {0, 0, 0};
    ftrabit_restore_load_t l;
    int rank = my_rank(st), size, err;
    MPI_Comm_size(st->comm, &size);
    /* the newest version read, files of another shape or program, anything seen at all */
    uint64_t flags[4] = {s->top, (uint64_t) s->foreign, s->other_shape, (uint64_t) s->seen};

    memset(&l, 0, sizeof(l));
    err = MPI_Allreduce(MPI_IN_PLACE, flags, 4, MPI_UINT64_T, MPI_MAX, st->comm);
    if (MPI_SUCCESS != err) {
        return err;
    }
    uint32_t top = (uint32_t) flags[0];
    if (top > 0) {
        err = ftrabit_restore_rounds(st, s, top, &choice, &l);
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_restore_refuse(st, flags, choice.version);
    }
    if (MPI_SUCCESS == err && 0 == choice.version) {
        if (0 == rank && 0 == top && flags[3]) {
            fprintf(stderr, "ftrabit: no readable checkpoint of this job in %s (said above): "
                            "the job starts from the beginning\n", d->dir);
        }
        if (d->leader[rank] == rank) {
            (void) ftrabit_store_remove_above(d->dir, 0);
        }
        ftrabit_restore_load_free(&l, size);
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_restore_transfer(st, &l);
        /* a rank out of memory above has not failed the others yet: they learn it here */
        if (MPI_SUCCESS == err || MPI_ERR_NO_MEM == err) {
            int e = ftrabit_restore_loaded_everywhere(st, &l);
            err = MPI_SUCCESS == err ? e : err;
        }
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_checkpoint_adopt(st, (int) choice.version, l.global, l.global_size,
                                       l.local, l.local_size);
        l.global = l.local = NULL; /* the state's now (or freed) */
    }
    if (MPI_SUCCESS == err) {
        d->history = (ftrabit_store_history_t){top, choice.complete};
        d->written = choice.version;
        d->restored = choice.version;
        if (d->leader[rank] == rank) {
            (void) ftrabit_store_remove_above(d->dir, choice.version);
        }
        if (0 == rank) {
            fprintf(stderr, "ftrabit: restarting from durable checkpoint version %u in %s (%d "
                            "ranks, %zu bytes of global state)\n", choice.version, d->dir, size,
                    st->global_size);
        }
    }
    ftrabit_restore_load_free(&l, size);
    return err;
}

int ftrabit_durable_restore(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    ftrabit_restore_scan_t scan = {0};
    int err;

    err = ftrabit_durable_probe(st);
    if (MPI_SUCCESS == err && FTRABIT_DURABLE_ON != d->state) {
        return MPI_SUCCESS; /* a directory it cannot use: said, a fresh start */
    }
    int scanned = MPI_SUCCESS == err && ftrabit_restore_scan(st, &scan);
    if (MPI_SUCCESS == err) {
        /* a rank that could not read its directory stops everyone: it may hold the only
         * copy of something */
        err = MPI_Allreduce(MPI_IN_PLACE, &scanned, 1, MPI_INT, MPI_MIN, st->comm);
        if (MPI_SUCCESS == err && !scanned) {
            err = MPI_ERR_OTHER;
        }
    }
    if (MPI_SUCCESS == err) {
        err = ftrabit_restore_with(st, &scan);
    }
    free(scan.files);
    if (ftrabit_is_process_failure(err)) {
        MPIX_Comm_revoke(st->comm);
        fprintf(stderr, "ftrabit: a process failed while the job restarted from %s: start it "
                        "again\n", d->dir);
    }
    return err;
}
