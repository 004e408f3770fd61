/*
 * ompi-resilience: coll/ftrabit durable checkpoints, the store (pure logic and POSIX file
 * I/O, no MPI).
 *
 * A checkpoint version committed by FTR_Checkpoint is also written under the directory of
 * coll_ftrabit_checkpoint_dir, one file per piece, so that a job killed whole (or one that
 * lost every in-memory copy of a rank's state) restarts from disk:
 *
 *     ftrabit-v<VERSION>-global.ckpt      the global state (the same on every rank)
 *     ftrabit-v<VERSION>-r<RANK>.ckpt     the local state of rank RANK
 *
 * Each file is a 256-byte header, then the payload. The header, little-endian at fixed
 * offsets, is checked field by field before anything in it is used:
 *
 *     0  magic "FTRCKPT\0"       32  epoch (u64): the run that wrote it
 *     8  format (u32) = 1        40  payload bytes (u64)
 *    12  header bytes (u32)=256  48  payload CRC32C (u32)
 *    16  kind (u32): 1 global,   52  program name bytes (u32), <= 128
 *        2 local                 56  program name (128 bytes, zero padded): which
 *    20  owner rank (u32)            program wrote it (its executable's base name)
 *    24  ranks of the job (u32) 184  zero up to 252
 *    28  version (u32), >= 1    252  header CRC32C (u32) of bytes 0..251
 *
 * Crash safety: a file is written under a temporary name in the same directory (the
 * final name + ".tmp-" + a tag unique to the writer), fsync'ed, renamed to its final name,
 * and the directory fsync'ed: a name that exists is a complete file, or the disk broke it
 * afterwards, which the checksums tell. A write that would not fit in the file system's
 * free space is refused before it starts: it never fills the disk.
 *
 * Which version a restart resumes, and which versions are kept, are decided here from
 * bitmasks over a window of FTRABIT_STORE_WINDOW versions (bit i: version top - i) that
 * the MPI side combines over the ranks.
 */
#ifndef FTRABIT_STORE_H
#define FTRABIT_STORE_H

#include <stddef.h>
#include <stdint.h>

#define FTRABIT_STORE_FORMAT 1
#define FTRABIT_STORE_HEADER_BYTES 256
#define FTRABIT_STORE_PROGRAM_MAX 128
#define FTRABIT_STORE_WINDOW 64
#define FTRABIT_STORE_NAME_MAX 64 /* a file name of ours, temporary suffix excluded */

typedef enum {
    FTRABIT_STORE_GLOBAL = 1,
    FTRABIT_STORE_LOCAL = 2,
} ftrabit_store_kind_t;

typedef struct {
    uint32_t kind;         /* ftrabit_store_kind_t */
    uint32_t owner;        /* local: the rank whose state it is; global: 0 */
    uint32_t nranks;       /* ranks of the job that wrote it */
    uint32_t version;      /* checkpoint version, >= 1 */
    uint64_t epoch;        /* the run that wrote it (random, the same on every rank) */
    uint64_t payload_size;
    uint32_t payload_crc;
    char program[FTRABIT_STORE_PROGRAM_MAX + 1]; /* NUL-terminated */
} ftrabit_store_header_t;

/* What a header or a file is. */
typedef enum {
    FTRABIT_STORE_OK = 0,
    FTRABIT_STORE_NOT_OURS = 1,  /* no magic: not a checkpoint file */
    FTRABIT_STORE_FORMAT_UNKNOWN = 2, /* a format this build does not read */
    FTRABIT_STORE_DAMAGED = 3,   /* header checksum or a field wrong */
    FTRABIT_STORE_TORN = 4,      /* shorter or longer than its header says */
    FTRABIT_STORE_CORRUPT = 5,   /* payload checksum wrong */
    FTRABIT_STORE_IO = 6,        /* open/read failed: errno says why */
    FTRABIT_STORE_NOMEM = 7,
} ftrabit_store_status_t;

const char *ftrabit_store_status_name(int status);

/* ---- header codec ------------------------------------------------------------------- */
void ftrabit_store_header_encode(const ftrabit_store_header_t *h,
                                 unsigned char out[FTRABIT_STORE_HEADER_BYTES]);
/* `len` bytes at buf; FTRABIT_STORE_OK and *h filled, or why not. */
int ftrabit_store_header_decode(const unsigned char *buf, size_t len, ftrabit_store_header_t *h);

/* ---- names -------------------------------------------------------------------------- */
/* The final name of a piece (owner ignored for a global one) into out (room >=
 * FTRABIT_STORE_NAME_MAX). */
void ftrabit_store_name(uint32_t kind, uint32_t version, uint32_t owner, char *out, size_t room);
/* Is `name` one of ours? 1 and the fields (temporary: 1 for a temporary file of a write
 * that has not completed), else 0. */
int ftrabit_store_parse_name(const char *name, uint32_t *kind, uint32_t *version,
                             uint32_t *owner, int *temporary);

/* ---- files ---------------------------------------------------------------------------- */
/* Where and why a file operation failed. */
typedef struct {
    int err;               /* errno */
    const char *step;      /* "open", "write", "fsync", ... */
    char path[4400];
} ftrabit_store_error_t;

typedef struct {
    const char *tmp_tag;   /* makes the temporary name unique to the writer (host-pid) */
    /* Called once half of the payload is in the temporary file (tests: a writer killed in
     * the middle of a file); NULL: none. */
    void (*half_written)(const char *tmp_path, void *arg);
    void *arg;
} ftrabit_store_write_options_t;

/* Write one piece crash-safely into dir (which must exist): h->payload_crc is computed
 * here. 0, or -1 with *e filled (nothing but a temporary file that is removed again may
 * have been made). *bytes: what was written, header included. */
int ftrabit_store_write(const char *dir, const ftrabit_store_header_t *h, const void *payload,
                        const ftrabit_store_write_options_t *opt, size_t *bytes,
                        ftrabit_store_error_t *e);

/* Read and check the header of dir/name (and that the file's size matches it). */
int ftrabit_store_read_header(const char *dir, const char *name, ftrabit_store_header_t *h);
/* Read the whole file dir/name, checking header and payload: FTRABIT_STORE_OK and the
 * payload in a new buffer *payload (freed by the caller; of h->payload_size bytes). */
int ftrabit_store_read(const char *dir, const char *name, ftrabit_store_header_t *h,
                       void **payload);

/* Our files in dir: their names (each entry FTRABIT_STORE_NAME_MAX + a temporary suffix)
 * in a new array *names of *n entries; 0, or -1 with errno (a missing directory is an
 * empty one). */
typedef struct {
    char name[256];
    uint32_t kind, version, owner;
    int temporary;
} ftrabit_store_entry_t;
int ftrabit_store_list(const char *dir, ftrabit_store_entry_t **entries, int *n);
/* Remove dir/name; 0, or -1 with errno (a file already gone counts as removed). */
int ftrabit_store_remove(const char *dir, const char *name);

/* ---- which directory a rank writes to --------------------------------------------------
 * Ranks that see the same directory form a group; its lowest rank is its leader, which
 * writes the global state there (once per directory: once in all on a shared directory,
 * once per node on node-local ones). sees_marker[r]: rank r saw the marker rank 0 left in
 * its directory (it shares rank 0's directory); host[r]: a number naming r's node. Ranks
 * that do not share rank 0's directory are grouped by node. Out: leader[n]. 0, or -1 out
 * of memory. */
int ftrabit_store_dir_groups(int n, const int *sees_marker, const uint64_t *host, int *leader);
/* Does rank `r` write the copy of owner `owner`'s local state into its directory? Its
 * state goes to the `k` ring successors of the owner (FTR_Checkpoint's replicas); each
 * directory that one of them or the owner sees gets one copy, from the first of
 * owner, owner+1, ..., owner+k in it. */
int ftrabit_store_writes_local(int n, int k, const int *leader, int r, int owner);

/* ---- the version to resume ------------------------------------------------------------
 * Combined over every rank for the window of versions top-63..top: avail[o], the versions
 * of which some rank read owner o's local state (its header: the payload is checked when
 * it is loaded); global, those of which some rank read the global state; per slot i, the
 * largest epoch seen and the complement of the smallest (epoch_min_not), so that both
 * combine by maximum. A version is complete when every owner's state and the global one
 * were read, all of one epoch (one run). */
typedef struct {
    uint32_t version;        /* the newest complete version, 0: none */
    uint64_t complete;       /* every complete version of the window */
    /* Why `top` is not complete (when version != top): the first owner without a copy,
     * FTRABIT_STORE_NO_GLOBAL, or FTRABIT_STORE_MIXED_RUNS. */
    int top_missing;
} ftrabit_store_choice_t;
#define FTRABIT_STORE_NO_GLOBAL (-1)
#define FTRABIT_STORE_MIXED_RUNS (-2)
void ftrabit_store_choose(uint32_t top, const uint64_t *avail, int nranks, uint64_t global,
                          const uint64_t *epoch_max, const uint64_t *epoch_min_not,
                          ftrabit_store_choice_t *out);
/* Bit of version v in a window with top `top` (0 when outside it). */
uint64_t ftrabit_store_bit(uint32_t top, uint32_t v);

/* ---- which versions are kept ----------------------------------------------------------
 * The versions known to be complete on every rank: bit i is version top - i. */
typedef struct {
    uint32_t top;
    uint64_t complete;
} ftrabit_store_history_t;
void ftrabit_store_history_mark(ftrabit_store_history_t *h, uint32_t version);
/* Is version v kept under coll_ftrabit_checkpoint_keep `keep`? The `keep` newest versions
 * known complete are, and every version newer than the newest of them (being written, or
 * not known complete yet); until `keep` versions are known complete, every version is
 * (those before may be needed). */
int ftrabit_store_history_keeps(const ftrabit_store_history_t *h, int keep, uint32_t v);

#endif /* FTRABIT_STORE_H */
