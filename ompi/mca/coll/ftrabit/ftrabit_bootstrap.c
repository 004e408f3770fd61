/*
 * ompi-resilience: coll/ftrabit bootstrap cache (pure logic; see the header).
 *
 * Two sorted arrays: the entries by key (file, line, function, occurrence) and the call
 * sites by (file, line, function) with their occurrence counters. Both orders compare
 * strings as unsigned bytes, exactly as strcmp does, so that a table packed by one process
 * is in the order the receiver checks, whatever the hosts.
 */
#include "ftrabit_bootstrap.h"

#include <stdlib.h>
#include <string.h>

struct ftrabit_bootstrap_entry {
    ftrabit_bootstrap_key_t key;
    ftrabit_bootstrap_signature_t sig;
    size_t len;
    unsigned char *data; /* never NULL, even for an empty result */
};

struct ftrabit_bootstrap_site {
    char *file, *function;
    int line;
    uint32_t next; /* occurrence number of the next run */
};

/* A key that is not stored (yet): strings by pointer and length. */
typedef struct ftrabit_bootstrap_view {
    const char *file, *function;
    size_t file_len, function_len;
    int line;
    uint32_t occurrence;
} ftrabit_bootstrap_view_t;

#define FTRABIT_BOOTSTRAP_HEADER_BYTES 8
/* The fixed part of an entry: two string lengths, line, occurrence, kind, four signature
 * words, the result length. */
#define FTRABIT_BOOTSTRAP_FIXED_BYTES (4 + 4 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 8)
#define FTRABIT_BOOTSTRAP_MIN_CAPACITY 8

/* ---- little-endian encoding ---------------------------------------------------------- */

static unsigned char *ftrabit_bootstrap_put_le(unsigned char *p, uint64_t v, int nbytes)
{
    for (int i = 0; i < nbytes; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
    return p + nbytes;
}

static uint64_t ftrabit_bootstrap_get_le(const unsigned char *p, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++) {
        v |= (uint64_t) p[i] << (8 * i);
    }
    return v;
}

/* Bytes of untrusted input, consumed front to back; every read is bounds-checked. */
typedef struct ftrabit_bootstrap_reader {
    const unsigned char *p;
    size_t left;
} ftrabit_bootstrap_reader_t;

static int ftrabit_bootstrap_read_le(ftrabit_bootstrap_reader_t *r, int nbytes, uint64_t *v)
{
    if (r->left < (size_t) nbytes) {
        return 0;
    }
    *v = ftrabit_bootstrap_get_le(r->p, nbytes);
    r->p += nbytes;
    r->left -= (size_t) nbytes;
    return 1;
}

/* A length-prefixed name: no NUL inside, since it becomes a C string. */
static int ftrabit_bootstrap_read_name(ftrabit_bootstrap_reader_t *r, const char **s,
                                       size_t *len)
{
    uint64_t n;
    if (!ftrabit_bootstrap_read_le(r, 4, &n) || n > r->left || memchr(r->p, '\0', (size_t) n)) {
        return 0;
    }
    *s = (const char *) r->p;
    *len = (size_t) n;
    r->p += n;
    r->left -= (size_t) n;
    return 1;
}

/* ---- keys and sites ------------------------------------------------------------------- */

static int ftrabit_bootstrap_compare_names(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (0 != c) {
        return c;
    }
    return alen < blen ? -1 : alen > blen;
}

/* Order of call sites: file, line, function. */
static int ftrabit_bootstrap_compare_site(const ftrabit_bootstrap_view_t *a,
                                          const ftrabit_bootstrap_view_t *b)
{
    int c = ftrabit_bootstrap_compare_names(a->file, a->file_len, b->file, b->file_len);
    if (0 != c) {
        return c;
    }
    if (a->line != b->line) {
        return a->line < b->line ? -1 : 1;
    }
    return ftrabit_bootstrap_compare_names(a->function, a->function_len, b->function,
                                           b->function_len);
}

/* Order of entries: call site, then occurrence. */
static int ftrabit_bootstrap_compare_key(const ftrabit_bootstrap_view_t *a,
                                         const ftrabit_bootstrap_view_t *b)
{
    int c = ftrabit_bootstrap_compare_site(a, b);
    if (0 != c) {
        return c;
    }
    return a->occurrence < b->occurrence ? -1 : a->occurrence > b->occurrence;
}

static ftrabit_bootstrap_view_t ftrabit_bootstrap_view(const char *file, int line,
                                                       const char *function, uint32_t occurrence)
{
    file = NULL == file ? "" : file;
    function = NULL == function ? "" : function;
    return (ftrabit_bootstrap_view_t){.file = file, .file_len = strlen(file),
                                      .function = function, .function_len = strlen(function),
                                      .line = line, .occurrence = occurrence};
}

static ftrabit_bootstrap_view_t ftrabit_bootstrap_entry_view(const ftrabit_bootstrap_entry_t *e)
{
    return ftrabit_bootstrap_view(e->key.file, e->key.line, e->key.function, e->key.occurrence);
}

/* Index of the first entry whose key is >= *key; *found says whether it is equal. */
static size_t ftrabit_bootstrap_find_entry(const ftrabit_bootstrap_t *table,
                                           const ftrabit_bootstrap_view_t *key, int *found)
{
    size_t lo = 0, hi = table->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        ftrabit_bootstrap_view_t v = ftrabit_bootstrap_entry_view(&table->entries[mid]);
        if (ftrabit_bootstrap_compare_key(&v, key) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < table->count) {
        ftrabit_bootstrap_view_t v = ftrabit_bootstrap_entry_view(&table->entries[lo]);
        *found = 0 == ftrabit_bootstrap_compare_key(&v, key);
    } else {
        *found = 0;
    }
    return lo;
}

static size_t ftrabit_bootstrap_find_site(const ftrabit_bootstrap_t *table,
                                          const ftrabit_bootstrap_view_t *site, int *found)
{
    size_t lo = 0, hi = table->nsites;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ftrabit_bootstrap_site_t *s = &table->sites[mid];
        ftrabit_bootstrap_view_t v = ftrabit_bootstrap_view(s->file, s->line, s->function, 0);
        int c = ftrabit_bootstrap_compare_site(&v, site);
        if (0 == c) {
            *found = 1;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int ftrabit_bootstrap_same_signature(const ftrabit_bootstrap_signature_t *a,
                                            const ftrabit_bootstrap_signature_t *b)
{
    return a->kind == b->kind && a->type_size == b->type_size
           && a->type_signature == b->type_signature && a->count == b->count
           && a->op_or_root == b->op_or_root;
}

/* OK if the stored entry says the same, else why not. */
static int ftrabit_bootstrap_compare_stored(const ftrabit_bootstrap_entry_t *e,
                                            const ftrabit_bootstrap_signature_t *sig,
                                            const void *data, size_t len)
{
    if (!ftrabit_bootstrap_same_signature(&e->sig, sig)) {
        return FTRABIT_BOOTSTRAP_MISMATCH;
    }
    if (e->len != len || (len && 0 != memcmp(e->data, data, len))) {
        return FTRABIT_BOOTSTRAP_EXISTS;
    }
    return FTRABIT_BOOTSTRAP_OK;
}

/* ---- memory --------------------------------------------------------------------------- */

/* Make room for `extra` more elements of `elem` bytes in *array. */
static int ftrabit_bootstrap_reserve(void **array, size_t *capacity, size_t count, size_t extra,
                                     size_t elem)
{
    if (extra > SIZE_MAX / elem - count) {
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    size_t need = count + extra;
    if (need <= *capacity) {
        return FTRABIT_BOOTSTRAP_OK;
    }
    size_t cap = *capacity ? *capacity : FTRABIT_BOOTSTRAP_MIN_CAPACITY;
    while (cap < need) {
        cap = cap > SIZE_MAX / elem / 2 ? need : cap * 2;
    }
    void *grown = realloc(*array, cap * elem);
    if (NULL == grown) {
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    *array = grown;
    *capacity = cap;
    return FTRABIT_BOOTSTRAP_OK;
}

static int ftrabit_bootstrap_reserve_entries(ftrabit_bootstrap_t *table, size_t extra)
{
    void *array = table->entries;
    int rc = ftrabit_bootstrap_reserve(&array, &table->capacity, table->count, extra,
                                       sizeof(ftrabit_bootstrap_entry_t));
    table->entries = array;
    return rc;
}

static char *ftrabit_bootstrap_copy_name(const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (NULL != copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

static void ftrabit_bootstrap_free_entry(ftrabit_bootstrap_entry_t *e)
{
    free(e->key.file);
    free(e->key.function);
    free(e->data);
}

/* A stored entry made of copies of the key, signature and result; 0 if out of memory. */
static int ftrabit_bootstrap_make_entry(ftrabit_bootstrap_entry_t *e,
                                        const ftrabit_bootstrap_view_t *key,
                                        const ftrabit_bootstrap_signature_t *sig,
                                        const void *data, size_t len)
{
    e->key.file = ftrabit_bootstrap_copy_name(key->file, key->file_len);
    e->key.function = ftrabit_bootstrap_copy_name(key->function, key->function_len);
    e->key.line = key->line;
    e->key.occurrence = key->occurrence;
    e->sig = *sig;
    e->len = len;
    e->data = malloc(len ? len : 1);
    if (NULL == e->key.file || NULL == e->key.function || NULL == e->data) {
        ftrabit_bootstrap_free_entry(e);
        return 0;
    }
    if (len) {
        memcpy(e->data, data, len);
    }
    return 1;
}

/* ---- the table ------------------------------------------------------------------------ */

void ftrabit_bootstrap_init(ftrabit_bootstrap_t *table)
{
    memset(table, 0, sizeof(*table));
}

void ftrabit_bootstrap_fini(ftrabit_bootstrap_t *table)
{
    for (size_t i = 0; i < table->count; i++) {
        ftrabit_bootstrap_free_entry(&table->entries[i]);
    }
    for (size_t i = 0; i < table->nsites; i++) {
        free(table->sites[i].file);
        free(table->sites[i].function);
    }
    free(table->entries);
    free(table->sites);
    ftrabit_bootstrap_init(table);
}

static int ftrabit_bootstrap_add_site(ftrabit_bootstrap_t *table, size_t at,
                                      const ftrabit_bootstrap_view_t *v)
{
    void *array = table->sites;
    int rc = ftrabit_bootstrap_reserve(&array, &table->sites_capacity, table->nsites, 1,
                                       sizeof(ftrabit_bootstrap_site_t));
    table->sites = array;
    char *file = ftrabit_bootstrap_copy_name(v->file, v->file_len);
    char *function = ftrabit_bootstrap_copy_name(v->function, v->function_len);
    if (FTRABIT_BOOTSTRAP_OK != rc || NULL == file || NULL == function) {
        free(file);
        free(function);
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    memmove(&table->sites[at + 1], &table->sites[at],
            (table->nsites - at) * sizeof(ftrabit_bootstrap_site_t));
    table->sites[at] = (ftrabit_bootstrap_site_t){
        .file = file, .function = function, .line = v->line, .next = 0};
    table->nsites++;
    return FTRABIT_BOOTSTRAP_OK;
}

uint32_t ftrabit_bootstrap_next_occurrence(ftrabit_bootstrap_t *table, const char *file,
                                           int line, const char *function)
{
    ftrabit_bootstrap_view_t v = ftrabit_bootstrap_view(file, line, function, 0);
    int found;
    size_t at = ftrabit_bootstrap_find_site(table, &v, &found);
    if (!found && FTRABIT_BOOTSTRAP_OK != ftrabit_bootstrap_add_site(table, at, &v)) {
        return FTRABIT_BOOTSTRAP_NO_OCCURRENCE;
    }
    ftrabit_bootstrap_site_t *site = &table->sites[at];
    /* Saturate rather than wrap: a wrapped counter would silently reuse keys. */
    if (FTRABIT_BOOTSTRAP_NO_OCCURRENCE == site->next) {
        return FTRABIT_BOOTSTRAP_NO_OCCURRENCE;
    }
    return site->next++;
}

void ftrabit_bootstrap_retract_occurrence(ftrabit_bootstrap_t *table, const char *file,
                                          int line, const char *function)
{
    ftrabit_bootstrap_view_t v = ftrabit_bootstrap_view(file, line, function, 0);
    int found;
    size_t at = ftrabit_bootstrap_find_site(table, &v, &found);
    if (found && table->sites[at].next > 0
        && FTRABIT_BOOTSTRAP_NO_OCCURRENCE != table->sites[at].next) {
        table->sites[at].next--;
    }
}

int ftrabit_bootstrap_put(ftrabit_bootstrap_t *table, const char *file, int line,
                          const char *function, uint32_t occurrence,
                          const ftrabit_bootstrap_signature_t *sig, const void *data, size_t len)
{
    ftrabit_bootstrap_view_t key = ftrabit_bootstrap_view(file, line, function, occurrence);
    int found;
    size_t at = ftrabit_bootstrap_find_entry(table, &key, &found);
    if (found) {
        return ftrabit_bootstrap_compare_stored(&table->entries[at], sig, data, len);
    }
    ftrabit_bootstrap_entry_t e;
    if (FTRABIT_BOOTSTRAP_OK != ftrabit_bootstrap_reserve_entries(table, 1)) {
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    if (!ftrabit_bootstrap_make_entry(&e, &key, sig, data, len)) {
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    memmove(&table->entries[at + 1], &table->entries[at],
            (table->count - at) * sizeof(ftrabit_bootstrap_entry_t));
    table->entries[at] = e;
    table->count++;
    return FTRABIT_BOOTSTRAP_OK;
}

int ftrabit_bootstrap_get(const ftrabit_bootstrap_t *table, const char *file, int line,
                          const char *function, uint32_t occurrence,
                          const ftrabit_bootstrap_signature_t *sig, const void **data,
                          size_t *len, ftrabit_bootstrap_signature_t *stored)
{
    ftrabit_bootstrap_view_t key = ftrabit_bootstrap_view(file, line, function, occurrence);
    int found;
    size_t at = ftrabit_bootstrap_find_entry(table, &key, &found);
    if (!found) {
        return FTRABIT_BOOTSTRAP_MISSING;
    }
    const ftrabit_bootstrap_entry_t *e = &table->entries[at];
    if (!ftrabit_bootstrap_same_signature(&e->sig, sig)) {
        /* The replay diverged from the original run: say how, never hand out bytes. */
        if (NULL != stored) {
            *stored = e->sig;
        }
        return FTRABIT_BOOTSTRAP_MISMATCH;
    }
    *data = e->data;
    *len = e->len;
    return FTRABIT_BOOTSTRAP_OK;
}

/* ---- wire format ---------------------------------------------------------------------- */

/* Bytes one entry takes on the wire; 0 if it cannot be encoded. */
static size_t ftrabit_bootstrap_wire_size(const ftrabit_bootstrap_entry_t *e)
{
    size_t flen = strlen(e->key.file), fnlen = strlen(e->key.function);
    if (flen > UINT32_MAX || fnlen > UINT32_MAX) {
        return 0;
    }
    size_t need = FTRABIT_BOOTSTRAP_FIXED_BYTES;
    if (flen > SIZE_MAX - need || fnlen > SIZE_MAX - need - flen
        || e->len > SIZE_MAX - need - flen - fnlen) {
        return 0;
    }
    return need + flen + fnlen + e->len;
}

static unsigned char *ftrabit_bootstrap_write_entry(unsigned char *p,
                                                    const ftrabit_bootstrap_entry_t *e)
{
    size_t flen = strlen(e->key.file), fnlen = strlen(e->key.function);
    p = ftrabit_bootstrap_put_le(p, flen, 4);
    memcpy(p, e->key.file, flen);
    p = ftrabit_bootstrap_put_le(p + flen, fnlen, 4);
    memcpy(p, e->key.function, fnlen);
    /* Two's complement of the line, whatever the host's int. */
    p = ftrabit_bootstrap_put_le(p + fnlen, (uint32_t) (int64_t) e->key.line, 4);
    p = ftrabit_bootstrap_put_le(p, e->key.occurrence, 4);
    p = ftrabit_bootstrap_put_le(p, e->sig.kind, 4);
    p = ftrabit_bootstrap_put_le(p, e->sig.type_size, 8);
    p = ftrabit_bootstrap_put_le(p, e->sig.type_signature, 8);
    p = ftrabit_bootstrap_put_le(p, e->sig.count, 8);
    p = ftrabit_bootstrap_put_le(p, e->sig.op_or_root, 8);
    p = ftrabit_bootstrap_put_le(p, e->len, 8);
    if (e->len) {
        memcpy(p, e->data, e->len);
    }
    return p + e->len;
}

size_t ftrabit_bootstrap_pack(const ftrabit_bootstrap_t *table, void *buf, size_t cap)
{
    size_t need = FTRABIT_BOOTSTRAP_HEADER_BYTES;
    for (size_t i = 0; i < table->count; i++) {
        size_t one = ftrabit_bootstrap_wire_size(&table->entries[i]);
        if (0 == one || one > SIZE_MAX - need) {
            return 0;
        }
        need += one;
    }
    if (NULL == buf || cap < need) {
        return need;
    }
    unsigned char *p = ftrabit_bootstrap_put_le(buf, table->count, 8);
    for (size_t i = 0; i < table->count; i++) {
        p = ftrabit_bootstrap_write_entry(p, &table->entries[i]);
    }
    return need;
}

/* One entry of a packed buffer, pointing into that buffer. */
typedef struct ftrabit_bootstrap_wire_entry {
    ftrabit_bootstrap_view_t key;
    ftrabit_bootstrap_signature_t sig;
    const unsigned char *data;
    size_t len;
    int is_new;
} ftrabit_bootstrap_wire_entry_t;

static int ftrabit_bootstrap_line_from_wire(uint64_t v)
{
    /* A 32-bit two's complement value, converted without implementation-defined casts. */
    return v <= INT32_MAX ? (int) v : (int) ((int64_t) v - ((int64_t) 1 << 32));
}

static int ftrabit_bootstrap_read_entry(ftrabit_bootstrap_reader_t *r,
                                        ftrabit_bootstrap_wire_entry_t *w)
{
    uint64_t line, occurrence, kind, len;
    if (!ftrabit_bootstrap_read_name(r, &w->key.file, &w->key.file_len)
        || !ftrabit_bootstrap_read_name(r, &w->key.function, &w->key.function_len)
        || !ftrabit_bootstrap_read_le(r, 4, &line) || !ftrabit_bootstrap_read_le(r, 4, &occurrence)
        || !ftrabit_bootstrap_read_le(r, 4, &kind)
        || !ftrabit_bootstrap_read_le(r, 8, &w->sig.type_size)
        || !ftrabit_bootstrap_read_le(r, 8, &w->sig.type_signature)
        || !ftrabit_bootstrap_read_le(r, 8, &w->sig.count)
        || !ftrabit_bootstrap_read_le(r, 8, &w->sig.op_or_root)
        || !ftrabit_bootstrap_read_le(r, 8, &len) || len > r->left) {
        return 0;
    }
    w->key.line = ftrabit_bootstrap_line_from_wire(line);
    w->key.occurrence = (uint32_t) occurrence;
    w->sig.kind = (uint32_t) kind;
    w->data = r->p;
    w->len = (size_t) len;
    r->p += len;
    r->left -= (size_t) len;
    return 1;
}

/* Parse and check the structure; *out (allocated) gets the entries, in strictly
 * increasing key order or the input is refused. */
static int ftrabit_bootstrap_parse(const unsigned char *buf, size_t len,
                                   ftrabit_bootstrap_wire_entry_t **out, size_t *out_count)
{
    ftrabit_bootstrap_reader_t r = {.p = buf, .left = len};
    uint64_t count;
    *out = NULL;
    *out_count = 0;
    /* The count is bounded by the input size before anything is allocated for it. */
    if (!ftrabit_bootstrap_read_le(&r, 8, &count)
        || count > r.left / FTRABIT_BOOTSTRAP_FIXED_BYTES) {
        return FTRABIT_BOOTSTRAP_MALFORMED;
    }
    if (0 == count) {
        return 0 == r.left ? FTRABIT_BOOTSTRAP_OK : FTRABIT_BOOTSTRAP_MALFORMED;
    }
    ftrabit_bootstrap_wire_entry_t *w = malloc((size_t) count * sizeof(*w));
    if (NULL == w) {
        return FTRABIT_BOOTSTRAP_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        if (!ftrabit_bootstrap_read_entry(&r, &w[i])
            || (i > 0 && ftrabit_bootstrap_compare_key(&w[i - 1].key, &w[i].key) >= 0)) {
            free(w);
            return FTRABIT_BOOTSTRAP_MALFORMED;
        }
    }
    if (0 != r.left) {
        free(w);
        return FTRABIT_BOOTSTRAP_MALFORMED;
    }
    *out = w;
    *out_count = (size_t) count;
    return FTRABIT_BOOTSTRAP_OK;
}

/* Mark which wire entries are new; fail if one contradicts a stored entry. */
static int ftrabit_bootstrap_classify(const ftrabit_bootstrap_t *table,
                                      ftrabit_bootstrap_wire_entry_t *w, size_t n, size_t *nnew)
{
    *nnew = 0;
    for (size_t i = 0; i < n; i++) {
        int found;
        size_t at = ftrabit_bootstrap_find_entry(table, &w[i].key, &found);
        if (found) {
            int rc = ftrabit_bootstrap_compare_stored(&table->entries[at], &w[i].sig, w[i].data,
                                                      w[i].len);
            if (FTRABIT_BOOTSTRAP_OK != rc) {
                return rc;
            }
        }
        w[i].is_new = !found;
        *nnew += found ? 0 : 1;
    }
    return FTRABIT_BOOTSTRAP_OK;
}

/* Merge the new entries (sorted, already built in `made`) into the sorted array, from the
 * back; capacity is already reserved, so this cannot fail. */
static void ftrabit_bootstrap_merge(ftrabit_bootstrap_t *table, ftrabit_bootstrap_entry_t *made,
                                    size_t nnew)
{
    size_t old = table->count, dst = old + nnew, mi = nnew;
    while (mi > 0) {
        ftrabit_bootstrap_view_t v = ftrabit_bootstrap_entry_view(&made[mi - 1]);
        while (old > 0) {
            ftrabit_bootstrap_view_t o = ftrabit_bootstrap_entry_view(&table->entries[old - 1]);
            if (ftrabit_bootstrap_compare_key(&o, &v) < 0) {
                break;
            }
            table->entries[--dst] = table->entries[--old];
        }
        table->entries[--dst] = made[--mi];
    }
    table->count += nnew;
}

int ftrabit_bootstrap_unpack(ftrabit_bootstrap_t *table, const void *buf, size_t len)
{
    ftrabit_bootstrap_wire_entry_t *w;
    size_t n, nnew;
    int rc = NULL == buf ? FTRABIT_BOOTSTRAP_MALFORMED : ftrabit_bootstrap_parse(buf, len, &w, &n);
    if (FTRABIT_BOOTSTRAP_OK != rc) {
        return rc;
    }
    rc = ftrabit_bootstrap_classify(table, w, n, &nnew);
    if (FTRABIT_BOOTSTRAP_OK != rc || 0 == nnew) {
        free(w);
        return rc;
    }
    /* Build every copy before touching the table: all or nothing. */
    ftrabit_bootstrap_entry_t *made = malloc(nnew * sizeof(*made));
    size_t nmade = 0;
    for (size_t i = 0; NULL != made && i < n; i++) {
        if (w[i].is_new) {
            if (!ftrabit_bootstrap_make_entry(&made[nmade], &w[i].key, &w[i].sig, w[i].data,
                                              w[i].len)) {
                break;
            }
            nmade++;
        }
    }
    if (nmade == nnew && FTRABIT_BOOTSTRAP_OK == ftrabit_bootstrap_reserve_entries(table, nnew)) {
        ftrabit_bootstrap_merge(table, made, nnew);
    } else {
        for (size_t i = 0; i < nmade; i++) {
            ftrabit_bootstrap_free_entry(&made[i]);
        }
        rc = FTRABIT_BOOTSTRAP_NOMEM;
    }
    free(made);
    free(w);
    return rc;
}
