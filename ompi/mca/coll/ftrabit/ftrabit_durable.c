/*
 * ompi-resilience: libftrabit durable checkpoints, the MPI side (see ftrabit_durable.h):
 * which ranks share a directory, what each rank writes after a commit, what is said when
 * the job cannot recover. The restart is in ftrabit_durable_restart.c.
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
        ftrabit_store_writer_wait(st->durable->writer, NULL);
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
    ftrabit_log(1, "durable checkpoint version %u written: %zu bytes in %.3f s, %.3f s of CPU",
                res.version, res.bytes, res.seconds, res.cpu_seconds);
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
        any_off |= FTRABIT_DURABLE_OFF == all[r].state;
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
        if (FTRABIT_DURABLE_OFF != d->state && !any_off && 0 == my_rank(st)) {
            fprintf(stderr, "ftrabit: durable checkpoints are off: a rank cannot use "
                            "coll_ftrabit_checkpoint_dir %s (its message says why); the job "
                            "goes on with in-memory checkpoints only\n", d->dir);
        }
        d->state = FTRABIT_DURABLE_OFF;
    } else {
        d->state = FTRABIT_DURABLE_ON;
    }
}

int ftrabit_durable_probe(ftrabit_state_t *st)
{
    ftrabit_durable_t *d = st->durable;
    int rank, size, err, dir_ok = 1;
    uint64_t head[2] = {0, 0}; /* rank 0's token; whether it left its marker */
    char marker[4200];

    MPI_Comm_rank(st->comm, &rank);
    MPI_Comm_size(st->comm, &size);
    if (FTRABIT_DURABLE_OFF != d->state && 0 != make_dir(d->dir)) {
        fprintf(stderr, "ftrabit: rank %d: coll_ftrabit_checkpoint_dir %s: %s\n", rank, d->dir,
                strerror(errno));
        dir_ok = 0;
    }
    if (0 == rank) {
        head[0] = fresh_random();
        marker_path(d, head[0], marker, sizeof(marker));
        int fd = dir_ok && FTRABIT_DURABLE_OFF != d->state
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
                    d->leader[rank], FTRABIT_DURABLE_ON == d->state ? "on" : "off");
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

    if (NULL == d || FTRABIT_DURABLE_ON != d->state) {
        return;
    }
    if (!(agreed & FTRABIT_AGREE_DURABLE_OK)) {
        d->state = FTRABIT_DURABLE_OFF;
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
    if (FTRABIT_DURABLE_OFF == d->state) {
        fprintf(stderr, "ftrabit: no durable checkpoint to restart from in %s: durable "
                        "checkpoints were off (see above)\n", d->dir);
        return;
    }
    if (FTRABIT_DURABLE_ON == d->state && !d->failed) {
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
