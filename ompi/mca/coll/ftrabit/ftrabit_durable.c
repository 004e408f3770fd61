/*
 * ompi-resilience: libftrabit durable checkpoints, the MPI side (see ftrabit_durable.h):
 * which ranks share a directory, what each rank writes after a commit, and the restart
 * from disk agreed by all ranks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

typedef enum { DURABLE_UNKNOWN = 0, DURABLE_ON = 1, DURABLE_OFF = 2 } ftrabit_durable_state_t;

typedef struct ftrabit_durable {
    char dir[4096];
    char program[FTRABIT_STORE_PROGRAM_MAX + 1];
    char tmp_tag[96];
    uint64_t host;           /* a hash of the host name */
    int state;               /* ftrabit_durable_state_t: the same on every rank once probed */
    int probed;              /* leader[] is known, for probed_size ranks */
    int probed_recoveries;   /* st->recoveries then: a recovery moves processes */
    int probed_size;
    int *leader;             /* [probed_size]: the lowest rank sharing each rank's directory */
    uint64_t epoch;          /* this run's, in every file it writes */
    ftrabit_store_history_t history; /* versions known complete on every rank */
    ftrabit_store_writer_t *writer;
    uint32_t written;        /* newest version whose files this rank wrote (or restored) */
    uint32_t restored;       /* the version the restart read back (0: none) */
    int failed;              /* a write of this rank failed */
    int said_restart;
} ftrabit_durable_t;

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((const unsigned char *) p)[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* 64 random bits, never 0: marker names and a run's epoch. */
static uint64_t fresh_random(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (sizeof(v) != read(fd, &v, sizeof(v))) {
            v = 0;
        }
        close(fd);
    }
    if (0 == v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = fnv1a(&ts, sizeof(ts), 0xcbf29ce484222325ULL) ^ (uint64_t) getpid();
    }
    return v ? v : 1;
}

static int my_rank(const ftrabit_state_t *st)
{
    int rank = -1;
    MPI_Comm_rank(st->comm, &rank);
    return rank;
}

/* ---- set-up -------------------------------------------------------------------------- */

int ftrabit_durable_enabled(const ftrabit_state_t *st)
{
    return NULL != st->durable;
}

const char *ftrabit_durable_restored_from(const ftrabit_state_t *st)
{
    const ftrabit_durable_t *d = st->durable;
    return NULL != d && 0 != d->restored && d->restored == (uint32_t) st->version ? d->dir : NULL;
}

int ftrabit_durable_attach(ftrabit_state_t *st)
{
    const char *dir = ftrabit_settings.checkpoint_dir;
    char host[256] = "";

    if (NULL == dir || '\0' == dir[0]) {
        return MPI_SUCCESS;
    }
    ftrabit_durable_t *d = calloc(1, sizeof(*d));
    if (NULL == d) {
        return MPI_ERR_NO_MEM;
    }
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    const char *base = NULL != ftrabit_program ? strrchr(ftrabit_program, '/') : NULL;
    base = NULL != base ? base + 1 : NULL != ftrabit_program ? ftrabit_program : "?";
    /* libtool's wrapper runs a program as .libs/lt-NAME: the same program as NAME */
    if (0 == strncmp(base, "lt-", 3)) {
        base += 3;
    }
    snprintf(d->program, sizeof(d->program), "%s", base);
    gethostname(host, sizeof(host) - 1);
    d->host = fnv1a(host, strlen(host), 0xcbf29ce484222325ULL);
    snprintf(d->tmp_tag, sizeof(d->tmp_tag), "%.64s-%d", host, (int) getpid());
    st->durable = d;
    return MPI_SUCCESS;
}

void ftrabit_durable_wait(ftrabit_state_t *st)
{
    if (NULL != st->durable && NULL != st->durable->writer) {
        /* the outcome stays to be collected by the next ftrabit_durable_prepare */
        while (ftrabit_store_writer_busy(st->durable->writer)) {
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
}

/* What the last job of the writer did, now that it is over. */
static void ftrabit_durable_collect(ftrabit_durable_t *d)
{
    ftrabit_store_result_t res;

    if (NULL == d->writer) {
        return;
    }
    ftrabit_store_writer_wait(d->writer, &res);
    if (!res.ran) {
        return;
    }
    if (res.failed) {
        d->failed = 1; /* the writer said why */
        return;
    }
    d->written = res.version;
    ftrabit_log(1, "durable checkpoint version %u written: %zu bytes in %.3f s", res.version,
                res.bytes, res.seconds);
}

void ftrabit_durable_free(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    if (NULL == d) {
        return;
    }
    ftrabit_durable_collect(d);
    ftrabit_store_writer_free(d->writer);
    free(d->leader);
    free(d);
    st->durable = NULL;
}

/* ---- which ranks share a directory ------------------------------------------------------ */

/* mkdir -p; 0 or -1 with errno. */
static int make_dir(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if ('/' == *p) {
            *p = '\0';
            if (0 != mkdir(path, 0777) && EEXIST != errno) {
                return -1;
            }
            *p = '/';
        }
    }
    if (0 != mkdir(path, 0777) && EEXIST != errno) {
        return -1;
    }
    struct stat sb;
    if (0 != stat(path, &sb)) {
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static void marker_path(const ftrabit_durable_t *d, uint64_t token, char *out, size_t room)
{
    snprintf(out, room, "%s/.ftrabit-probe-%016llx", d->dir, (unsigned long long) token);
}

/* What each rank says in a probe. */
typedef struct {
    uint64_t host;
    uint64_t epoch;
    uint64_t history_mask;
    uint32_t history_top;
    int32_t sees_marker;
    int32_t state;          /* ftrabit_durable_state_t */
    int32_t dir_ok;
} ftrabit_probe_record_t;

/* The probe's records, merged the same way on every rank. */
static void ftrabit_probe_merge(ftrabit_state_t *st, const ftrabit_probe_record_t *all, int size,
                                uint64_t token)
{
    ftrabit_durable_t *d = st->durable;
    int any_off = 0, all_dirs = 1;
    uint64_t epoch = 0;
    ftrabit_store_history_t history = {0, 0};

    for (int r = 0; r < size; r++) {
        any_off |= DURABLE_OFF == all[r].state;
        all_dirs &= all[r].dir_ok;
        if (0 == epoch) {
            epoch = all[r].epoch; /* survivors all have the run's; replacements none */
        }
        if (all[r].history_top > history.top) {
            history = (ftrabit_store_history_t){all[r].history_top, all[r].history_mask};
        } else if (all[r].history_top == history.top) {
            history.complete |= all[r].history_mask;
        }
    }
    d->epoch = 0 != epoch ? epoch : token; /* a new run: rank 0's token */
    d->history = history;
    if (any_off || !all_dirs) {
        if (DURABLE_OFF != d->state && !any_off && 0 == my_rank(st)) {
            fprintf(stderr, "ftrabit: durable checkpoints are off: a rank cannot use "
                            "coll_ftrabit_checkpoint_dir %s (its message says why); the job "
                            "goes on with in-memory checkpoints only\n", d->dir);
        }
        d->state = DURABLE_OFF;
    } else {
        d->state = DURABLE_ON;
    }
}

/* Collective: who shares which directory (leader[]), the run's epoch and history, and
 * whether durable writes are on, the same on every rank. */
static int ftrabit_durable_probe(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    int rank, size, err, dir_ok = 1;
    uint64_t head[2] = {0, 0}; /* rank 0's token; whether it left its marker */
    char marker[4200];

    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    if (DURABLE_OFF != d->state && 0 != make_dir(d->dir)) {
        fprintf(stderr, "ftrabit: rank %d: coll_ftrabit_checkpoint_dir %s: %s\n", rank, d->dir,
                strerror(errno));
        dir_ok = 0;
    }
    if (0 == rank) {
        head[0] = fresh_random();
        marker_path(d, head[0], marker, sizeof(marker));
        int fd = dir_ok && DURABLE_OFF != d->state
                     ? open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
        if (fd >= 0) {
            close(fd);
            head[1] = 1;
        }
    }
    err = MPI_Bcast(head, 2, MPI_UINT64_T, 0, st->comm);
    if (MPI_SUCCESS != err) {
        if (0 == rank && head[1]) {
            unlink(marker);
        }
        return err;
    }
    marker_path(d, head[0], marker, sizeof(marker));
    ftrabit_probe_record_t mine = {
        .host = d->host, .epoch = d->epoch, .history_mask = d->history.complete,
        .history_top = d->history.top, .sees_marker = head[1] && 0 == access(marker, F_OK),
        .state = d->state, .dir_ok = dir_ok};
    ftrabit_probe_record_t *all = malloc(sizeof(*all) * (size_t) size);
    int *sees = malloc(sizeof(int) * (size_t) size);
    uint64_t *hosts = malloc(sizeof(uint64_t) * (size_t) size);
    int *leader = malloc(sizeof(int) * (size_t) size);
    /* everyone takes part in the allgather, out of memory or not (then it fails below) */
    err = MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, NULL != all ? (void *) all : (void *) &mine,
                        NULL != all ? (int) sizeof(mine) : 0, MPI_BYTE, st->comm);
    if (0 == rank && head[1]) {
        unlink(marker);
    }
    if (MPI_SUCCESS == err && (NULL == all || NULL == sees || NULL == hosts || NULL == leader)) {
        err = MPI_ERR_NO_MEM;
    }
    if (MPI_SUCCESS == err) {
        for (int r = 0; r < size; r++) {
            sees[r] = all[r].sees_marker;
            hosts[r] = all[r].host;
        }
        if (0 != ftrabit_store_dir_groups(size, sees, hosts, leader)) {
            err = MPI_ERR_NO_MEM;
        }
    }
    if (MPI_SUCCESS == err) {
        ftrabit_probe_merge(st, all, size, head[0]);
        free(d->leader);
        d->leader = leader;
        leader = NULL;
        d->probed = 1;
        d->probed_size = size;
        d->probed_recoveries = st->recoveries;
        ftrabit_log(1, "durable checkpoints in %s: %s directory (leader rank %d), %s", d->dir,
                    0 == d->leader[size - 1] ? "one shared" : "node-local",
                    d->leader[rank], DURABLE_ON == d->state ? "on" : "off");
    }
    free(all);
    free(sees);
    free(hosts);
    free(leader);
    return err;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* Test knob coll_ftrabit_test_kill_in_write: the process dies with half a file written. */
static void ftrabit_durable_die_midway(const char *tmp_path, void *arg)
{
    (void) arg;
    fprintf(stderr, "ftrabit: test: killing this process in the middle of writing %s\n",
            tmp_path);
    fflush(stderr);
    raise(SIGKILL);
}

static ftrabit_store_header_t ftrabit_durable_header(const ftrabit_state_t *st, uint32_t kind,
                                                     int owner, size_t size)
{
    ftrabit_store_header_t h = {.kind = kind, .owner = (uint32_t) owner,
                                .version = (uint32_t) st->version,
                                .epoch = st->durable->epoch, .payload_size = size};
    int n;
    MPI_Comm_size(st->comm, &n);
    h.nranks = (uint32_t) n;
    snprintf(h.program, sizeof(h.program), "%s", st->durable->program);
    return h;
}

/* Hand the version just committed to the writer: this rank's local state, the copies of
 * its predecessors' it is the designated writer of, and the global state if it leads its
 * directory. */
static void ftrabit_durable_submit(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    int rank = my_rank(st), n = 0;
    int leads = d->leader[rank] == rank;
    ftrabit_store_job_t job = {.version = (uint32_t) st->version, .prune = leads,
                               .history = d->history, .keep = ftrabit_settings.checkpoint_keep};

    job.pieces = calloc((size_t) st->nreplicas + 2, sizeof(*job.pieces));
    if (NULL == d->writer) {
        d->writer = ftrabit_store_writer_new();
    }
    if (NULL == job.pieces || NULL == d->writer) {
        fprintf(stderr, "ftrabit: rank %d: durable checkpoint version %d not written: out of "
                        "memory\n", rank, st->version);
        free(job.pieces);
        d->failed = 1;
        return;
    }
    if (leads) {
        job.pieces[n].h = ftrabit_durable_header(st, FTRABIT_STORE_GLOBAL, 0, st->global_size);
        job.pieces[n++].payload = st->global;
    }
    job.pieces[n].h = ftrabit_durable_header(st, FTRABIT_STORE_LOCAL, rank, st->local_size);
    job.pieces[n++].payload = st->local;
    for (int i = 0; i < st->nreplicas; i++) {
        const ftrabit_replica_t *r = &st->replicas[i];
        if (ftrabit_store_writes_local(d->probed_size, ftrabit_settings.local_replicas,
                                       d->leader, rank, r->owner)) {
            job.pieces[n].h = ftrabit_durable_header(st, FTRABIT_STORE_LOCAL, r->owner, r->size);
            job.pieces[n++].payload = r->data;
        }
    }
    job.npieces = n;
    snprintf(job.dir, sizeof(job.dir), "%s", d->dir);
    snprintf(job.who, sizeof(job.who), "rank %d", rank);
    snprintf(job.tmp_tag, sizeof(job.tmp_tag), "%s", d->tmp_tag);
    if (ftrabit_settings.test_kill_in_write == st->orig_rank
        && ftrabit_settings.test_kill_in_write_version == st->version
        && FTR_ORIGIN_ORIGINAL == ftrabit_origin) {
        job.half_written = ftrabit_durable_die_midway;
    }
    if (0 != ftrabit_store_writer_submit(d->writer, &job)) {
        fprintf(stderr, "ftrabit: rank %d: durable checkpoint version %d not written: no "
                        "writer thread could be started\n", rank, st->version);
        d->failed = 1;
    }
}

int ftrabit_durable_prepare(ftrabit_state_t *st, int *bits)
{
    ftrabit_durable_t *d = st->durable;
    int size;

    *bits = FTRABIT_AGREE_PREV_WRITTEN | FTRABIT_AGREE_DURABLE_OK;
    if (NULL == d) {
        return MPI_SUCCESS;
    }
    if (NULL != d->writer && ftrabit_store_writer_busy(d->writer)) {
        double start = MPI_Wtime();
        ftrabit_durable_collect(d);
        ftrabit_log(1, "checkpoint waited %.3f s for the write of the previous version",
                    MPI_Wtime() - start);
    } else {
        ftrabit_durable_collect(d);
    }
    if (d->failed) {
        *bits &= ~FTRABIT_AGREE_DURABLE_OK;
    }
    if (st->version >= 1 && d->written != (uint32_t) st->version) {
        *bits &= ~FTRABIT_AGREE_PREV_WRITTEN; /* a replacement, or a write that failed */
    }
    MPI_Comm_size(st->comm, &size);
    if (!d->probed || d->probed_recoveries != st->recoveries || d->probed_size != size) {
        return ftrabit_durable_probe(st);
    }
    return MPI_SUCCESS;
}

static uint32_t ftrabit_durable_newest_complete(const ftrabit_durable_t *d)
{
    return 0 == d->history.complete
               ? 0 : d->history.top - (uint32_t) __builtin_ctzll(d->history.complete);
}

void ftrabit_durable_committed(ftrabit_state_t *st, int agreed)
{
    ftrabit_durable_t *d = st->durable;

    if (NULL == d || DURABLE_ON != d->state) {
        return;
    }
    if (!(agreed & FTRABIT_AGREE_DURABLE_OK)) {
        d->state = DURABLE_OFF;
        if (0 == my_rank(st)) {
            uint32_t newest = ftrabit_durable_newest_complete(d);
            fprintf(stderr, "ftrabit: durable checkpoints in %s are off from version %d on: a "
                            "rank could not write its files (its message above says why); the "
                            "job goes on with in-memory checkpoints only. Newest version known "
                            "complete on disk: %u%s\n", d->dir, st->version, newest,
                    0 == newest ? " (none)" : "");
        }
        return;
    }
    if ((agreed & FTRABIT_AGREE_PREV_WRITTEN) && st->version >= 2) {
        ftrabit_store_history_mark(&d->history, (uint32_t) st->version - 1);
    }
    ftrabit_durable_submit(st);
}

/* The job ends ("recovery is not possible"): the pieces of the committed version that a
 * dead process did not get to write (its file is missing here: a rename is the last step
 * of a write) are written from the replicas and the global state this rank holds, so that
 * the version is complete on disk whenever someone holding each piece is alive. Several
 * ranks may write one piece: each under its own temporary name, the same bytes. */
static void ftrabit_durable_write_missing(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    ftrabit_store_write_options_t opt = {.tmp_tag = d->tmp_tag};
    ftrabit_store_error_t e;
    ftrabit_store_header_t h;
    char name[FTRABIT_STORE_NAME_MAX], path[4200];
    size_t bytes;

    if (!d->probed || st->version < 1 || d->written != (uint32_t) st->version) {
        return; /* nothing of this version written here: not a survivor of its writes */
    }
    for (int i = -1; i < st->nreplicas; i++) {
        const ftrabit_replica_t *r = i < 0 ? NULL : &st->replicas[i];
        h = NULL == r ? ftrabit_durable_header(st, FTRABIT_STORE_GLOBAL, 0, st->global_size)
                      : ftrabit_durable_header(st, FTRABIT_STORE_LOCAL, r->owner, r->size);
        h.nranks = (uint32_t) d->probed_size;
        ftrabit_store_name(h.kind, h.version, h.owner, name, sizeof(name));
        snprintf(path, sizeof(path), "%s/%s", d->dir, name);
        if (0 == access(path, F_OK)) {
            continue;
        }
        if (0 == ftrabit_store_write(d->dir, &h, NULL == r ? st->global : r->data, &opt, &bytes,
                                     &e)) {
            fprintf(stderr, "ftrabit: rank %d: wrote %s, which a process that died did not\n",
                    my_rank(st), path);
        }
    }
}

void ftrabit_durable_say_restart(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    char command[2048];
    size_t len = 0;

    if (NULL == d || d->said_restart) {
        return;
    }
    d->said_restart = 1;
    ftrabit_durable_collect(d); /* the version being written is worth finishing */
    if (DURABLE_OFF == d->state) {
        fprintf(stderr, "ftrabit: no durable checkpoint to restart from in %s: durable "
                        "checkpoints were off (see above)\n", d->dir);
        return;
    }
    if (DURABLE_ON == d->state && !d->failed) {
        ftrabit_durable_write_missing(st);
    }
    int nranks = d->probed ? d->probed_size : st->orig_size;
    len += (size_t) snprintf(command, sizeof(command), "mpirun --with-ft ulfm -np %d",
                             nranks + ftrabit_settings.spares);
    if (ftrabit_settings.spares > 0 && len < sizeof(command)) {
        len += (size_t) snprintf(command + len, sizeof(command) - len,
                                 " --mca coll_ftrabit_spares %d", ftrabit_settings.spares);
    }
    if (len < sizeof(command)) {
        len += (size_t) snprintf(command + len, sizeof(command) - len,
                                 " --mca coll_ftrabit_checkpoint_dir %s %s", d->dir,
                                 NULL != ftrabit_program ? ftrabit_program : d->program);
    }
    for (char **a = ftrabit_program_argv; NULL != a && NULL != *a && len < sizeof(command); a++) {
        len += (size_t) snprintf(command + len, sizeof(command) - len, " %s", *a);
    }
    /* (a replacement has written nothing yet: only the others' versions are named) */
    char mine[64] = "";
    if (0 != d->written) {
        snprintf(mine, sizeof(mine), "; this rank wrote up to version %u", d->written);
    }
    fprintf(stderr, "ftrabit: the job can restart from its durable checkpoints in %s: start it "
                    "again with the same number of ranks (%d) and the same "
                    "coll_ftrabit_checkpoint_dir, and it resumes from the newest version "
                    "complete on every rank%s; e.g. %s\n", d->dir, nranks, mine, command);
}

/* ---- restart ----------------------------------------------------------------------------- */

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
    int rank, size, err, nreqs = 0;
    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    uint64_t gsize = l->provider[size] == rank ? l->payload_size[size] : 0;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) size);

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
        int ok = NULL != reqs && NULL != l->global;
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
            err = ftrabit_isend_bytes(l->payload[o], (size_t) l->payload_size[o], o,
                                      FTRABIT_TAG_RESTORE, st->comm, &reqs[nreqs++]);
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
    int send_err = nreqs > 0 ? MPI_Waitall(nreqs, reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    free(reqs);
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
    if (MPI_SUCCESS == err && DURABLE_ON != d->state) {
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
