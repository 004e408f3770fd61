/*
 * ompi-resilience: coll/ftrabit bootstrap cache (pure logic, no MPI).
 *
 * Results of the collectives an application runs before its first checkpoint (reading a
 * data set's size, broadcasting a seed...) are kept for the whole job, keyed by call site
 * (file, line, function) and by how many times that call site has run in this process:
 * one call site run twice stays two entries, so a restarted process that runs them again,
 * in any order, gets the original results. The signature (datatype size and type
 * signature, count, op, root) is stored too: a replay that asks with a different signature
 * is an error, not a wrong answer.
 */
#ifndef FTRABIT_BOOTSTRAP_H
#define FTRABIT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ftrabit_bootstrap_key {
    char *file;        /* owned copies */
    char *function;
    int line;
    uint32_t occurrence; /* 0 for the first run of this call site in this process */
} ftrabit_bootstrap_key_t;

typedef struct ftrabit_bootstrap_signature {
    uint32_t kind;       /* FTRABIT_KEY_ALLREDUCE or FTRABIT_KEY_BCAST (ftrabit_cache.h) */
    uint64_t type_size;  /* bytes per element */
    uint64_t type_signature; /* digest of the element's type signature (ftrabit_typesig.h):
                                MPI_FLOAT and MPI_INT differ, equal derived types do not */
    uint64_t count;
    uint64_t op_or_root; /* the call key's value: the op's id, or the root's first rank */
} ftrabit_bootstrap_signature_t;

/* Both defined in ftrabit_bootstrap.c: users go through the functions below. */
typedef struct ftrabit_bootstrap_entry ftrabit_bootstrap_entry_t;
typedef struct ftrabit_bootstrap_site ftrabit_bootstrap_site_t;

typedef struct ftrabit_bootstrap {
    ftrabit_bootstrap_entry_t *entries; /* sorted by key, no duplicates */
    size_t count, capacity;
    ftrabit_bootstrap_site_t *sites;    /* per call site occurrence counters, sorted */
    size_t nsites, sites_capacity;
} ftrabit_bootstrap_t;

enum {
    FTRABIT_BOOTSTRAP_OK = 0,
    FTRABIT_BOOTSTRAP_NOMEM = -1,
    FTRABIT_BOOTSTRAP_MISSING = -2,
    FTRABIT_BOOTSTRAP_MISMATCH = -3, /* same key, different signature */
    FTRABIT_BOOTSTRAP_MALFORMED = -4,
    FTRABIT_BOOTSTRAP_EXISTS = -5    /* same key and signature, different result bytes */
};

/* What next_occurrence returns when it cannot count (out of memory, or 2^32 - 1 runs). */
#define FTRABIT_BOOTSTRAP_NO_OCCURRENCE UINT32_MAX

void ftrabit_bootstrap_init(ftrabit_bootstrap_t *table);
void ftrabit_bootstrap_fini(ftrabit_bootstrap_t *table);

/* The occurrence number for the next run of a call site in this process (0, 1, 2, ...);
 * each call advances that site's counter. FTRABIT_BOOTSTRAP_NO_OCCURRENCE if it cannot. */
uint32_t ftrabit_bootstrap_next_occurrence(ftrabit_bootstrap_t *table, const char *file,
                                           int line, const char *function);

/* Undo the last next_occurrence of a call site: a call that was refused (a signature
 * mismatch) did not run, so the site's next run takes its place. */
void ftrabit_bootstrap_retract_occurrence(ftrabit_bootstrap_t *table, const char *file,
                                          int line, const char *function);

/* Store a copy. Storing the same signature and bytes again is OK (idempotent); another
 * signature gives MISMATCH, other bytes EXISTS. NULL file or function means "". */
int ftrabit_bootstrap_put(ftrabit_bootstrap_t *table, const char *file, int line,
                          const char *function, uint32_t occurrence,
                          const ftrabit_bootstrap_signature_t *sig, const void *data, size_t len);
/* On MISMATCH, *stored (if non-NULL) receives the signature that was stored. */
int ftrabit_bootstrap_get(const ftrabit_bootstrap_t *table, const char *file, int line,
                          const char *function, uint32_t occurrence,
                          const ftrabit_bootstrap_signature_t *sig, const void **data,
                          size_t *len, ftrabit_bootstrap_signature_t *stored);

/* Serialise the whole table (for a replacement process); same contract as the cache's
 * pack/unpack: returns the size needed (0 only if the table cannot be encoded: size_t
 * overflow, or a name of 4 GiB), writes only if buf is not NULL and it fits; unpack
 * validates everything and adds nothing on error (MALFORMED; MISMATCH or EXISTS if an
 * entry contradicts a stored one; identical entries are skipped). Occurrence counters are
 * not transferred. Wire format, little-endian: u64 count, then per entry, in strictly
 * increasing key order (file, line, function, occurrence; names compared as unsigned bytes
 * like strcmp): u32 file length, file bytes, u32 function length, function bytes (no NUL
 * in either), i32 line, u32 occurrence, u32 kind, u64 type_size, u64 type_signature,
 * u64 count, u64 op_or_root, u64 length, the result bytes. */
size_t ftrabit_bootstrap_pack(const ftrabit_bootstrap_t *table, void *buf, size_t cap);
int ftrabit_bootstrap_unpack(ftrabit_bootstrap_t *table, const void *buf, size_t len);

#endif
