/*
 * ompi-resilience: coll/ftrabit durable checkpoints, the store: file format, crash-safe
 * writes, checked reads, the directory's files, and the decisions of which version to
 * resume and which to keep (ftrabit_store.h). No MPI: unit-tested in
 * test/unit/test_ftrabit_store.c.
 */
#include "ftrabit_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../../pml/dr2/pml_dr2_crc.h"

static const char ftrabit_store_magic[8] = {'F', 'T', 'R', 'C', 'K', 'P', 'T', '\0'};

/* Payload written and read in pieces of this size: each piece is checksummed while it is
 * in the cache, and no piece is larger than one write(2) moves. */
#define FTRABIT_STORE_CHUNK ((size_t) 8 << 20)

const char *ftrabit_store_status_name(int status)
{
    switch (status) {
    case FTRABIT_STORE_OK: return "ok";
    case FTRABIT_STORE_NOT_OURS: return "not a checkpoint file (no magic)";
    case FTRABIT_STORE_FORMAT_UNKNOWN: return "written in a format this build does not read";
    case FTRABIT_STORE_DAMAGED: return "damaged header (checksum or field)";
    case FTRABIT_STORE_TORN: return "torn (its size differs from what its header says)";
    case FTRABIT_STORE_CORRUPT: return "corrupt (payload checksum mismatch)";
    case FTRABIT_STORE_IO: return "unreadable";
    case FTRABIT_STORE_NOMEM: return "out of memory";
    }
    return "?";
}

/* ---- header codec ------------------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

enum {
    OFF_MAGIC = 0, OFF_FORMAT = 8, OFF_HDR_LEN = 12, OFF_KIND = 16, OFF_OWNER = 20,
    OFF_NRANKS = 24, OFF_VERSION = 28, OFF_EPOCH = 32, OFF_PAYLOAD_SIZE = 40,
    OFF_PAYLOAD_CRC = 48, OFF_PROGRAM_LEN = 52, OFF_PROGRAM = 56,
    OFF_HDR_CRC = FTRABIT_STORE_HEADER_BYTES - 4,
};

void ftrabit_store_header_encode(const ftrabit_store_header_t *h,
                                 unsigned char out[FTRABIT_STORE_HEADER_BYTES])
{
    size_t plen = strnlen(h->program, FTRABIT_STORE_PROGRAM_MAX);

    memset(out, 0, FTRABIT_STORE_HEADER_BYTES);
    memcpy(out + OFF_MAGIC, ftrabit_store_magic, sizeof(ftrabit_store_magic));
    put32(out + OFF_FORMAT, FTRABIT_STORE_FORMAT);
    put32(out + OFF_HDR_LEN, FTRABIT_STORE_HEADER_BYTES);
    put32(out + OFF_KIND, h->kind);
    put32(out + OFF_OWNER, h->owner);
    put32(out + OFF_NRANKS, h->nranks);
    put32(out + OFF_VERSION, h->version);
    put64(out + OFF_EPOCH, h->epoch);
    put64(out + OFF_PAYLOAD_SIZE, h->payload_size);
    put32(out + OFF_PAYLOAD_CRC, h->payload_crc);
    put32(out + OFF_PROGRAM_LEN, (uint32_t) plen);
    memcpy(out + OFF_PROGRAM, h->program, plen);
    put32(out + OFF_HDR_CRC, pml_dr2_crc32c(PML_DR2_CRC32C_INIT, out, OFF_HDR_CRC));
}

/* Checked in the order dr2's headers are (pml_dr2_hdr.c): length, magic, format, header
 * length, checksum, then the fields. */
int ftrabit_store_header_decode(const unsigned char *buf, size_t len, ftrabit_store_header_t *h)
{
    if (len < sizeof(ftrabit_store_magic)
        || 0 != memcmp(buf + OFF_MAGIC, ftrabit_store_magic, sizeof(ftrabit_store_magic))) {
        return FTRABIT_STORE_NOT_OURS;
    }
    if (len < OFF_HDR_LEN + 4) {
        return FTRABIT_STORE_TORN;
    }
    if (FTRABIT_STORE_FORMAT != get32(buf + OFF_FORMAT)) {
        return FTRABIT_STORE_FORMAT_UNKNOWN;
    }
    if (FTRABIT_STORE_HEADER_BYTES != get32(buf + OFF_HDR_LEN)) {
        return FTRABIT_STORE_DAMAGED;
    }
    if (len < FTRABIT_STORE_HEADER_BYTES) {
        return FTRABIT_STORE_TORN;
    }
    if (get32(buf + OFF_HDR_CRC) != pml_dr2_crc32c(PML_DR2_CRC32C_INIT, buf, OFF_HDR_CRC)) {
        return FTRABIT_STORE_DAMAGED;
    }
    uint32_t plen = get32(buf + OFF_PROGRAM_LEN);
    h->kind = get32(buf + OFF_KIND);
    h->owner = get32(buf + OFF_OWNER);
    h->nranks = get32(buf + OFF_NRANKS);
    h->version = get32(buf + OFF_VERSION);
    h->epoch = get64(buf + OFF_EPOCH);
    h->payload_size = get64(buf + OFF_PAYLOAD_SIZE);
    h->payload_crc = get32(buf + OFF_PAYLOAD_CRC);
    if (plen > FTRABIT_STORE_PROGRAM_MAX || h->version < 1 || h->nranks < 1
        || (FTRABIT_STORE_GLOBAL != h->kind && FTRABIT_STORE_LOCAL != h->kind)
        || (FTRABIT_STORE_LOCAL == h->kind && h->owner >= h->nranks)
        || (FTRABIT_STORE_GLOBAL == h->kind && 0 != h->owner)
        || h->payload_size > UINT64_MAX - FTRABIT_STORE_HEADER_BYTES) {
        return FTRABIT_STORE_DAMAGED;
    }
    memcpy(h->program, buf + OFF_PROGRAM, plen);
    h->program[plen] = '\0';
    return FTRABIT_STORE_OK;
}

/* ---- names -------------------------------------------------------------------------- */

void ftrabit_store_name(uint32_t kind, uint32_t version, uint32_t owner, char *out, size_t room)
{
    if (FTRABIT_STORE_GLOBAL == kind) {
        snprintf(out, room, "ftrabit-v%u-global.ckpt", version);
    } else {
        snprintf(out, room, "ftrabit-v%u-r%u.ckpt", version, owner);
    }
}

/* A decimal number of at most 10 digits without leading zeros at *p; advances *p. */
static int parse_u32(const char **p, uint32_t *value)
{
    const char *s = *p;
    uint64_t v = 0;
    int digits = 0;

    while (*s >= '0' && *s <= '9' && digits < 11) {
        v = v * 10 + (uint64_t) (*s - '0');
        s++;
        digits++;
    }
    if (0 == digits || digits > 10 || v > UINT32_MAX || (digits > 1 && '0' == **p)) {
        return 0;
    }
    *value = (uint32_t) v;
    *p = s;
    return 1;
}

int ftrabit_store_parse_name(const char *name, uint32_t *kind, uint32_t *version,
                             uint32_t *owner, int *temporary)
{
    static const char prefix[] = "ftrabit-v", suffix[] = ".ckpt", tmp[] = ".tmp-";
    const char *p = name;

    if (0 != strncmp(p, prefix, sizeof(prefix) - 1)) {
        return 0;
    }
    p += sizeof(prefix) - 1;
    if (!parse_u32(&p, version) || 0 == *version || '-' != *p++) {
        return 0;
    }
    if (0 == strncmp(p, "global", 6)) {
        *kind = FTRABIT_STORE_GLOBAL;
        *owner = 0;
        p += 6;
    } else if ('r' == *p) {
        p++;
        if (!parse_u32(&p, owner)) {
            return 0;
        }
        *kind = FTRABIT_STORE_LOCAL;
    } else {
        return 0;
    }
    if (0 != strncmp(p, suffix, sizeof(suffix) - 1)) {
        return 0;
    }
    p += sizeof(suffix) - 1;
    if ('\0' == *p) {
        *temporary = 0;
        return 1;
    }
    if (0 == strncmp(p, tmp, sizeof(tmp) - 1)) {
        *temporary = 1;
        return 1;
    }
    return 0;
}

/* ---- files ---------------------------------------------------------------------------- */

static int store_fail(ftrabit_store_error_t *e, const char *step, const char *path, int err)
{
    e->err = err;
    e->step = step;
    snprintf(e->path, sizeof(e->path), "%s", path);
    return -1;
}

static int write_all(int fd, const void *buf, size_t len, uint64_t offset)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t) offset);
        if (n < 0) {
            if (EINTR == errno) {
                continue;
            }
            return -1;
        }
        if (0 == n) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t) n;
        offset += (uint64_t) n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len, uint64_t offset)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t) offset);
        if (n < 0) {
            if (EINTR == errno) {
                continue;
            }
            return -1;
        }
        if (0 == n) {
            errno = EIO; /* the file shrank under us */
            return -1;
        }
        p += n;
        len -= (size_t) n;
        offset += (uint64_t) n;
    }
    return 0;
}

/* The payload into fd after the header, its CRC32C into *crc; the test hook once half of
 * it is in the file. */
static int write_payload(int fd, const void *payload, uint64_t size,
                         const ftrabit_store_write_options_t *opt, const char *tmp,
                         uint32_t *crc)
{
    const char *p = payload;
    uint64_t done = 0, half = size / 2;
    int hooked = NULL == opt || NULL == opt->half_written;

    *crc = PML_DR2_CRC32C_INIT;
    while (done < size || !hooked) {
        uint64_t piece = size - done;
        if (piece > FTRABIT_STORE_CHUNK) {
            piece = FTRABIT_STORE_CHUNK;
        }
        if (!hooked && done + piece > half) {
            piece = half - done; /* stop at the middle */
        }
        if (piece > 0) {
            *crc = pml_dr2_crc32c(*crc, p + done, (size_t) piece);
            if (0 != write_all(fd, p + done, (size_t) piece, FTRABIT_STORE_HEADER_BYTES + done)) {
                return -1;
            }
            done += piece;
        }
        if (!hooked && done == half) {
            hooked = 1;
            (void) fdatasync(fd); /* the half really is in the file */
            opt->half_written(tmp, opt->arg);
        }
    }
    return 0;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int ftrabit_store_write(const char *dir, const ftrabit_store_header_t *h, const void *payload,
                        const ftrabit_store_write_options_t *opt, size_t *bytes,
                        ftrabit_store_error_t *e)
{
    char name[FTRABIT_STORE_NAME_MAX], final[4200], tmp[4300];
    unsigned char header[FTRABIT_STORE_HEADER_BYTES];
    ftrabit_store_header_t out = *h;
    uint64_t total = FTRABIT_STORE_HEADER_BYTES + h->payload_size;
    struct statvfs fs;

    *bytes = 0;
    ftrabit_store_name(h->kind, h->version, h->owner, name, sizeof(name));
    snprintf(final, sizeof(final), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp-%s", final,
             NULL != opt && NULL != opt->tmp_tag ? opt->tmp_tag : "0");
    /* Refused before the first byte rather than filling the disk and failing at its end
     * (the space a file of that name holds now is freed only by the rename). */
    if (0 == statvfs(dir, &fs) && (uint64_t) fs.f_bavail * fs.f_frsize < total) {
        return store_fail(e, "free space (the file system has less room than the file needs)",
                          final, ENOSPC);
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        return store_fail(e, "open", tmp, errno);
    }
    const char *step = "write";
    /* The header goes in last, with the payload's checksum: until then the file has no
     * magic, and a reader takes it for what it is, not a checkpoint. */
    memset(header, 0, sizeof(header));
    if (0 != write_all(fd, header, sizeof(header), 0)
        || 0 != write_payload(fd, payload, h->payload_size, opt, tmp, &out.payload_crc)) {
        goto fail;
    }
    ftrabit_store_header_encode(&out, header);
    if (0 != write_all(fd, header, sizeof(header), 0)) {
        goto fail;
    }
    step = "fsync";
    if (0 != fsync(fd)) {
        goto fail;
    }
    /* Written and on disk: the page cache need not keep it (a restart reads it anew). */
    (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    step = "close";
    if (0 != close(fd)) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    step = "rename";
    if (0 != rename(tmp, final)) {
        goto fail;
    }
    if (0 != sync_dir(dir)) {
        return store_fail(e, "fsync of the directory", dir, errno);
    }
    *bytes = (size_t) total;
    return 0;

fail: {
        int err = errno;
        if (fd >= 0) {
            close(fd);
        }
        unlink(tmp);
        return store_fail(e, step, tmp, err);
    }
}

/* Open dir/name and check its header against its size. */
static int open_checked(const char *dir, const char *name, ftrabit_store_header_t *h, int *fd_out)
{
    char path[4200];
    unsigned char header[FTRABIT_STORE_HEADER_BYTES];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || 0 != fstat(fd, &sb)) {
        if (fd >= 0) {
            close(fd);
        }
        return FTRABIT_STORE_IO;
    }
    size_t len = (uint64_t) sb.st_size < sizeof(header) ? (size_t) sb.st_size : sizeof(header);
    int rc = 0 != read_all(fd, header, len, 0) ? FTRABIT_STORE_IO
                                                 : ftrabit_store_header_decode(header, len, h);
    if (FTRABIT_STORE_OK == rc
        && (uint64_t) sb.st_size != FTRABIT_STORE_HEADER_BYTES + h->payload_size) {
        rc = FTRABIT_STORE_TORN;
    }
    if (FTRABIT_STORE_OK != rc) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return FTRABIT_STORE_OK;
}

int ftrabit_store_read_header(const char *dir, const char *name, ftrabit_store_header_t *h)
{
    int fd;
    int rc = open_checked(dir, name, h, &fd);
    if (FTRABIT_STORE_OK == rc) {
        close(fd);
    }
    return rc;
}

int ftrabit_store_read(const char *dir, const char *name, ftrabit_store_header_t *h,
                       void **payload)
{
    int fd;
    int rc = open_checked(dir, name, h, &fd);

    *payload = NULL;
    if (FTRABIT_STORE_OK != rc) {
        return rc;
    }
    if (h->payload_size > SIZE_MAX - 1) {
        close(fd);
        return FTRABIT_STORE_NOMEM;
    }
    char *data = malloc(h->payload_size ? (size_t) h->payload_size : 1);
    if (NULL == data) {
        close(fd);
        return FTRABIT_STORE_NOMEM;
    }
    uint32_t crc = PML_DR2_CRC32C_INIT;
    for (uint64_t done = 0; done < h->payload_size;) {
        size_t piece = h->payload_size - done > FTRABIT_STORE_CHUNK ? FTRABIT_STORE_CHUNK
                                                                   : (size_t) (h->payload_size - done);
        if (0 != read_all(fd, data + done, piece, FTRABIT_STORE_HEADER_BYTES + done)) {
            free(data);
            close(fd);
            return FTRABIT_STORE_IO;
        }
        crc = pml_dr2_crc32c(crc, data + done, piece);
        done += piece;
    }
    close(fd);
    if (crc != h->payload_crc) {
        free(data);
        return FTRABIT_STORE_CORRUPT;
    }
    *payload = data;
    return FTRABIT_STORE_OK;
}

int ftrabit_store_list(const char *dir, ftrabit_store_entry_t **entries, int *n)
{
    ftrabit_store_entry_t *list = NULL;
    int count = 0, room = 0;
    struct dirent *d;

    *entries = NULL;
    *n = 0;
    DIR *dp = opendir(dir);
    if (NULL == dp) {
        return ENOENT == errno ? 0 : -1;
    }
    while (NULL != (d = readdir(dp))) {
        ftrabit_store_entry_t x;
        if (strlen(d->d_name) >= sizeof(x.name)
            || !ftrabit_store_parse_name(d->d_name, &x.kind, &x.version, &x.owner, &x.temporary)) {
            continue;
        }
        if (count == room) {
            room = room ? 2 * room : 16;
            ftrabit_store_entry_t *more = realloc(list, sizeof(*more) * (size_t) room);
            if (NULL == more) {
                free(list);
                closedir(dp);
                errno = ENOMEM;
                return -1;
            }
            list = more;
        }
        snprintf(x.name, sizeof(x.name), "%s", d->d_name);
        list[count++] = x;
    }
    closedir(dp);
    *entries = list;
    *n = count;
    return 0;
}

int ftrabit_store_remove(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return 0 == unlink(path) || ENOENT == errno ? 0 : -1;
}

/* ---- which directory a rank writes to ---------------------------------------------------- */

typedef struct {
    int sees;
    uint64_t host;
    int rank;
} dir_key_t;

static int dir_key_cmp(const void *a, const void *b)
{
    const dir_key_t *x = a, *y = b;
    if (x->sees != y->sees) {
        return x->sees > y->sees ? -1 : 1;
    }
    if (!x->sees && x->host != y->host) {
        return x->host < y->host ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int ftrabit_store_dir_groups(int n, const int *sees_marker, const uint64_t *host, int *leader)
{
    dir_key_t *keys = malloc(sizeof(*keys) * (size_t) (n > 0 ? n : 1));
    if (NULL == keys) {
        return -1;
    }
    /* Rank 0 that did not see its own marker could not write it: nobody shares its
     * directory knowingly, and every rank is grouped by node. */
    int shared = n > 0 && sees_marker[0];
    for (int r = 0; r < n; r++) {
        keys[r] = (dir_key_t){.sees = shared && sees_marker[r], .host = host[r], .rank = r};
    }
    /* Sorted, each group is a run whose first entry is its lowest rank. */
    qsort(keys, (size_t) n, sizeof(*keys), dir_key_cmp);
    for (int i = 0, first = 0; i < n; i++) {
        if (i > 0 && 0 != dir_key_cmp(&(dir_key_t){keys[i].sees, keys[i].host, 0},
                                      &(dir_key_t){keys[i - 1].sees, keys[i - 1].host, 0})) {
            first = i;
        }
        leader[keys[i].rank] = keys[first].rank;
    }
    free(keys);
    return 0;
}

int ftrabit_store_writes_local(int n, int k, const int *leader, int r, int owner)
{
    if (n < 1 || r < 0 || r >= n || owner < 0 || owner >= n) {
        return 0;
    }
    if (k > n - 1) {
        k = n - 1;
    }
    int distance = (r - owner + n) % n;
    if (distance > k) {
        return 0; /* r holds no replica of owner */
    }
    for (int j = 0; j < distance; j++) {
        if (leader[(owner + j) % n] == leader[r]) {
            return 0; /* an earlier holder writes it into this directory */
        }
    }
    return 1;
}

/* ---- the version to resume ---------------------------------------------------------------- */

uint64_t ftrabit_store_bit(uint32_t top, uint32_t v)
{
    return v >= 1 && v <= top && top - v < FTRABIT_STORE_WINDOW ? (uint64_t) 1 << (top - v) : 0;
}

void ftrabit_store_choose(uint32_t top, const uint64_t *avail, int nranks, uint64_t global,
                          const uint64_t *epoch_max, const uint64_t *epoch_min_not,
                          ftrabit_store_choice_t *out)
{
    *out = (ftrabit_store_choice_t){.version = 0, .complete = 0, .top_missing = 0};
    for (int i = 0; i < FTRABIT_STORE_WINDOW && (uint32_t) i < top; i++) {
        uint64_t bit = (uint64_t) 1 << i;
        int missing = 0;
        if (!(global & bit)) {
            missing = FTRABIT_STORE_NO_GLOBAL;
        }
        for (int o = 0; o < nranks && 0 == missing; o++) {
            if (!(avail[o] & bit)) {
                missing = o + 1;
            }
        }
        if (0 == missing && epoch_max[i] != ~epoch_min_not[i]) {
            missing = FTRABIT_STORE_MIXED_RUNS;
        }
        if (0 == i) {
            out->top_missing = missing > 0 ? missing - 1 : missing;
        }
        if (0 == missing) {
            out->complete |= bit;
            if (0 == out->version) {
                out->version = top - (uint32_t) i;
            }
        }
    }
}

/* ---- which versions are kept --------------------------------------------------------------- */

void ftrabit_store_history_mark(ftrabit_store_history_t *h, uint32_t version)
{
    if (0 == h->top || 0 == h->complete) {
        h->top = version;
        h->complete = 1;
    } else if (version > h->top) {
        uint32_t shift = version - h->top;
        h->complete = shift >= FTRABIT_STORE_WINDOW ? 0 : h->complete << shift;
        h->top = version;
        h->complete |= 1;
    } else {
        h->complete |= ftrabit_store_bit(h->top, version);
    }
}

int ftrabit_store_history_keeps(const ftrabit_store_history_t *h, int keep, uint32_t v)
{
    int known = __builtin_popcountll(h->complete);
    if (known < keep || 0 == h->complete) {
        return 1;
    }
    uint32_t newest = h->top - (uint32_t) __builtin_ctzll(h->complete);
    if (v > newest) {
        return 1;
    }
    uint64_t bit = ftrabit_store_bit(h->top, v);
    if (!(h->complete & bit)) {
        return 0; /* older than the newest complete, and not complete itself (or older than
                     the window, which holds `keep` complete ones) */
    }
    /* its place among the complete ones, newest first */
    return __builtin_popcountll(h->complete & ((bit << 1) - 1)) <= keep;
}
