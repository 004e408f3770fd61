/*
 * ompi-resilience: MPI_Bcast and MPI_Allreduce called as MPI allows, with datatypes that
 * differ from rank to rank.
 *
 * MPI_Bcast needs only equal type signatures on all ranks (MPI-4.1, 6.1: "distinct type
 * maps between sender and receiver are still allowed"): the root may send n elements of
 * MPI_Type_contiguous(3, MPI_DOUBLE) to ranks that receive 3n MPI_DOUBLE, or a struct with
 * padding to ranks that describe the same int, double, char sequence without it. Each
 * broadcast here gives every rank a layout of its own (rotating through a family of
 * layouts of one signature), at sizes that cross any segment boundary, and checks every
 * byte of every rank's buffer: data in place, holes untouched.
 *
 * MPI_Allreduce is stricter (MPI-4.1, 6.9.1): the same count and datatype on all ranks,
 * and for a predefined operation the same predefined datatype. What may still vary is
 * checked: predefined pair types whose extent is not their size (MPI_DOUBLE_INT,
 * MPI_SHORT_INT, MPI_LONG_DOUBLE_INT with MINLOC/MAXLOC); derived datatypes with holes,
 * padding, unaligned members and a true lower bound that is not 0, under a user-defined
 * operation; and one type map built with different constructors on different ranks. One
 * more case goes beyond the letter of the standard (ranks with different type maps of
 * the same signature and count, user-defined operation), as implementations handle it
 * alike; the test section compares every run with coll/tuned's.
 *
 * Every rank folds what it received (packed, so layout-independent) into a digest; rank 0
 * prints it ("coll_legal digest HEX"), and the section requires the same digest from
 * coll/ftrabit's algorithms as from coll/tuned. With --ftrabit, coll/ftrabit must have
 * served every call.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define MARK 0xA5 /* every byte MPI must not write */
#define MAX_LAYOUTS 8
#define MAX_UNITS 6

/* A signature unit: one double, or (int, double, char). */
enum { KIND_INT, KIND_DOUBLE, KIND_CHAR, NKINDS };

typedef struct {
    const char *name;
    MPI_Datatype type;
    int units;                    /* signature units per element */
    int off[MAX_UNITS][NKINDS];   /* byte offset of each member of each unit (-1: none) */
} layout_t;

typedef struct {
    const char *name;
    int unit_bytes;
    int nlayouts;
    layout_t layouts[MAX_LAYOUTS];
} family_t;

static family_t families[2];
static uint64_t digest = 0xcbf29ce484222325ULL;
static long bcast_calls, allreduce_calls; /* made by this test */

static MPI_Datatype resized(MPI_Datatype t, MPI_Aint extent)
{
    MPI_Datatype r;
    MPI_Type_create_resized(t, 0, extent, &r);
    MPI_Type_free(&t);
    return r;
}

/* A struct of `units` units of the family's kinds at the given offsets, resized. */
static MPI_Datatype struct_of(int units, int with_int, const int off[][NKINDS], MPI_Aint extent)
{
    int blocklens[MAX_UNITS * NKINDS];
    MPI_Aint displs[MAX_UNITS * NKINDS];
    MPI_Datatype types[MAX_UNITS * NKINDS], t;
    int n = 0;

    for (int u = 0; u < units; u++) {
        for (int k = with_int ? KIND_INT : KIND_DOUBLE; k <= (with_int ? KIND_CHAR : KIND_DOUBLE);
             k++) {
            blocklens[n] = 1;
            displs[n] = off[u][k];
            types[n] = KIND_INT == k ? MPI_INT : KIND_DOUBLE == k ? MPI_DOUBLE : MPI_CHAR;
            n++;
        }
    }
    MPI_Type_create_struct(n, blocklens, displs, types, &t);
    return resized(t, extent);
}

static void add_layout(family_t *f, const char *name, MPI_Datatype type, int units,
                       const int off[][NKINDS])
{
    layout_t *l = &f->layouts[f->nlayouts++];
    l->name = name;
    l->type = type;
    l->units = units;
    memcpy(l->off, off, sizeof(int) * NKINDS * (size_t) units);
    MPI_Type_commit(&l->type);
}

/* Offsets of `units` consecutive doubles at the given double indexes. */
static void double_offsets(int units, const int *index, int off[][NKINDS])
{
    for (int u = 0; u < units; u++) {
        off[u][KIND_INT] = off[u][KIND_CHAR] = -1;
        off[u][KIND_DOUBLE] = 8 * index[u];
    }
}

/* The signature of doubles: one element per rank may be 1, 2, 3 or 6 doubles, with holes
 * inside (vector, indexed), after (resized) or before the first (struct-gap). */
static void make_doubles(family_t *f)
{
    int off[MAX_UNITS][NKINDS];
    MPI_Datatype t;

    f->name = "doubles";
    f->unit_bytes = 8;
    double_offsets(1, (int[]){0}, off);
    add_layout(f, "double", MPI_DOUBLE, 1, off);
    MPI_Type_contiguous(3, MPI_DOUBLE, &t);
    double_offsets(3, (int[]){0, 1, 2}, off);
    add_layout(f, "contiguous(3)", t, 3, off);
    MPI_Type_vector(2, 3, 4, MPI_DOUBLE, &t); /* extent 7 doubles, hole at 3 */
    double_offsets(6, (int[]){0, 1, 2, 4, 5, 6}, off);
    add_layout(f, "vector(2,3,4)", t, 6, off);
    MPI_Type_indexed(3, (int[]){2, 1, 3}, (int[]){0, 3, 5}, MPI_DOUBLE, &t);
    double_offsets(6, (int[]){0, 1, 3, 5, 6, 7}, off);
    add_layout(f, "indexed", t, 6, off);
    MPI_Type_contiguous(2, MPI_DOUBLE, &t);
    double_offsets(2, (int[]){0, 1}, off);
    add_layout(f, "resized(2 in 3)", resized(t, 24), 2, off);
    double_offsets(2, (int[]){1, 3}, off); /* true lower bound 8, extent 40 */
    add_layout(f, "struct-gap", struct_of(2, 0, off, 40), 2, off);
}

/* The signature of (int, double, char) units: a C struct with padding, the same packed
 * (unaligned doubles), two units with other padding, a true lower bound of 8, and three
 * packed units one after the other. */
static void make_int_double_char(family_t *f)
{
    MPI_Datatype t;

    f->name = "int-double-char";
    f->unit_bytes = 4 + 8 + 1;
    const int c_struct[1][NKINDS] = {{0, 8, 16}};
    add_layout(f, "c-struct", struct_of(1, 1, c_struct, 24), 1, c_struct);
    const int packed[1][NKINDS] = {{0, 4, 12}};
    add_layout(f, "packed", struct_of(1, 1, packed, 13), 1, packed);
    const int pair[2][NKINDS] = {{0, 4, 12}, {16, 24, 32}};
    add_layout(f, "pair", struct_of(2, 1, pair, 40), 2, pair);
    const int shifted[1][NKINDS] = {{8, 16, 28}};
    add_layout(f, "shifted", struct_of(1, 1, shifted, 32), 1, shifted);
    MPI_Type_contiguous(3, f->layouts[1].type, &t);
    const int three[3][NKINDS] = {{0, 4, 12}, {13, 17, 25}, {26, 30, 38}};
    add_layout(f, "contiguous(3 packed)", t, 3, three);
}

/* Bytes from the first byte of the buffer to the end of `count` elements (lower bound 0). */
static size_t span_of(const layout_t *l, size_t count)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    MPI_Type_get_extent(l->type, &lb, &extent);
    MPI_Type_get_true_extent(l->type, &true_lb, &true_extent);
    return count ? (size_t) (true_lb + true_extent) + (count - 1) * (size_t) extent : 0;
}

#define SLACK 64 /* bytes after the last element, which must stay untouched too */

/* A buffer of `count` elements of `l` holding the packed bytes `packed`, holes MARK. */
static unsigned char *image_of(const layout_t *l, size_t count, const unsigned char *packed,
                               size_t packed_len)
{
    size_t span = span_of(l, count);
    unsigned char *img = malloc(span + SLACK);
    int pos = 0;
    memset(img, MARK, span + SLACK);
    MPI_Unpack(packed, (int) packed_len, &pos, img, (int) count, l->type, MPI_COMM_SELF);
    return img;
}

static void fold_packed(const layout_t *l, size_t count, const void *buf, size_t packed_len)
{
    unsigned char *packed = malloc(packed_len ? packed_len : 1);
    int pos = 0;
    MPI_Pack(buf, (int) count, l->type, packed, (int) packed_len, &pos, MPI_COMM_SELF);
    digest = mt_fnv1a(packed, packed_len, digest);
    free(packed);
}

static size_t wrong_bytes(const unsigned char *got, const unsigned char *want, size_t len)
{
    size_t bad = 0;
    for (size_t i = 0; i < len; i++) {
        bad += got[i] != want[i];
    }
    return bad;
}

/* ---- broadcast ------------------------------------------------------------------------- */

/* `units` signature units from `root`; rank r describes them with layout (r + shift). */
static void check_bcast(const family_t *f, size_t units, int root, int shift)
{
    const layout_t *l = &f->layouts[(mt_rank + shift) % f->nlayouts];
    size_t count = units / (size_t) l->units, len = units * (size_t) f->unit_bytes;
    unsigned char *packed = malloc(len);
    uint64_t seed = mt_hash64(((uint64_t) units << 20) ^ ((uint64_t) root << 8) ^ (uint64_t) shift);

    for (size_t i = 0; i < len; i++) {
        packed[i] = (unsigned char) mt_hash64(seed + i);
    }
    unsigned char *want = image_of(l, count, packed, len);
    size_t span = span_of(l, count);
    unsigned char *buf = malloc(span + SLACK);
    if (mt_rank == root) {
        memcpy(buf, want, span + SLACK);
    } else {
        memset(buf, MARK, span + SLACK);
    }
    int err = MPI_Bcast(buf, (int) count, l->type, root, MPI_COMM_WORLD);
    bcast_calls++;
    MT_CHECK(MPI_SUCCESS == err, "bcast %s: %zu units as %zu x %s, root %d: error %d", f->name,
             units, count, l->name, root, err);
    size_t bad = wrong_bytes(buf, want, span + SLACK);
    MT_CHECK(0 == bad, "bcast %s: %zu units as %zu x %s from root %d (layout %s): %zu wrong bytes "
             "(data or holes)", f->name, units, count, l->name, root,
             f->layouts[(root + shift) % f->nlayouts].name, bad);
    fold_packed(l, count, buf, len);
    free(buf);
    free(want);
    free(packed);
}

static void bcasts(void)
{
    /* 6 units up to about 1 MiB: above any segment and pipeline threshold */
    const size_t sizes[2][3] = {{6, 1002, 131070}, {6, 606, 80658}};
    for (int fi = 0; fi < 2; fi++) {
        for (int si = 0; si < 3; si++) {
            for (int shift = 0; shift < 3; shift++) {
                check_bcast(&families[fi], sizes[fi][si], 0, shift);
                check_bcast(&families[fi], sizes[fi][si], mt_size - 1, shift + 1);
            }
        }
    }
}

/* ---- allreduce with predefined pair types ---------------------------------------------- */

/* Value of element i on rank r: a small integer, exact in every type, with ties. */
static long pair_value(size_t i, int r)
{
    return (long) (mt_hash64(i * 131 + (uint64_t) r) % 7) - 3;
}

typedef struct { double v; int i; } double_int_t;
typedef struct { short v; int i; } short_int_t;
typedef struct { long double v; int i; } long_double_int_t;

#define CHECK_PAIRS(CTYPE, MPITYPE, OP, BETTER)                                               \
    do {                                                                                      \
        CTYPE *in = malloc(sizeof(CTYPE) * count), *out = malloc(sizeof(CTYPE) * count);      \
        memset(in, MARK, sizeof(CTYPE) * count);                                              \
        memset(out, MARK, sizeof(CTYPE) * count);                                             \
        for (size_t i = 0; i < count; i++) {                                                  \
            in[i].v = pair_value(i, mt_rank);                                                 \
            in[i].i = mt_rank;                                                                \
        }                                                                                     \
        int err = MPI_Allreduce(in, out, (int) count, MPITYPE, OP, MPI_COMM_WORLD);           \
        allreduce_calls++;                                                                    \
        MT_CHECK(MPI_SUCCESS == err, "allreduce %s count %zu: error %d", #MPITYPE, count,    \
                 err);                                                                        \
        size_t bad = 0;                                                                       \
        for (size_t i = 0; i < count; i++) {                                                  \
            long best = pair_value(i, 0);                                                     \
            int at = 0;                                                                       \
            for (int r = 1; r < mt_size; r++) {                                               \
                if (pair_value(i, r) BETTER best) {                                           \
                    best = pair_value(i, r);                                                  \
                    at = r;                                                                   \
                }                                                                             \
            }                                                                                 \
            bad += out[i].v != best || out[i].i != at;                                        \
        }                                                                                     \
        MT_CHECK(0 == bad, "allreduce %s %s count %zu: %zu wrong elements", #MPITYPE, #OP,   \
                 count, bad);                                                                 \
        for (size_t i = 0; i < count; i++) {                                                  \
            digest = mt_fnv1a(&out[i].i, sizeof(int), digest);                                \
            long v = (long) out[i].v;                                                         \
            digest = mt_fnv1a(&v, sizeof(v), digest);                                         \
        }                                                                                     \
        free(in);                                                                             \
        free(out);                                                                            \
    } while (0)

static void allreduce_pairs(void)
{
    const size_t counts[] = {1, 3, 1001, 65537};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t count = counts[ci];
        CHECK_PAIRS(double_int_t, MPI_DOUBLE_INT, MPI_MINLOC, <);
        CHECK_PAIRS(short_int_t, MPI_SHORT_INT, MPI_MAXLOC, >);
        CHECK_PAIRS(long_double_int_t, MPI_LONG_DOUBLE_INT, MPI_MINLOC, <);
    }
}

/* ---- allreduce with derived datatypes under a user-defined operation --------------------- */

/* The layout a datatype handle stands for in this process. */
static const layout_t *layout_of(MPI_Datatype type)
{
    for (int fi = 0; fi < 2; fi++) {
        for (int li = 0; li < families[fi].nlayouts; li++) {
            if (families[fi].layouts[li].type == type) {
                return &families[fi].layouts[li];
            }
        }
    }
    return NULL;
}

/* Unit members: ints and doubles add up, chars are xored. */
static void unit_combine(void *invec, void *inoutvec, int *len, MPI_Datatype *type)
{
    const layout_t *l = layout_of(*type);
    MPI_Aint lb, extent;

    if (NULL == l) {
        MPI_Abort(MPI_COMM_WORLD, 3); /* never: the test only reduces its own layouts */
    }
    MPI_Type_get_extent(*type, &lb, &extent);
    for (int e = 0; e < *len; e++) {
        const char *in = (const char *) invec + e * extent;
        char *io = (char *) inoutvec + e * extent;
        for (int u = 0; u < l->units; u++) {
            const int *off = l->off[u];
            if (off[KIND_INT] >= 0) {
                uint32_t a, b;
                memcpy(&a, in + off[KIND_INT], 4);
                memcpy(&b, io + off[KIND_INT], 4);
                b += a;
                memcpy(io + off[KIND_INT], &b, 4);
            }
            double x, y;
            memcpy(&x, in + off[KIND_DOUBLE], 8);
            memcpy(&y, io + off[KIND_DOUBLE], 8);
            y += x;
            memcpy(io + off[KIND_DOUBLE], &y, 8);
            if (off[KIND_CHAR] >= 0) {
                io[off[KIND_CHAR]] ^= in[off[KIND_CHAR]];
            }
        }
    }
}

/* Member values of signature unit u on rank r, and their combination over all ranks. */
static void unit_values(size_t u, int r, uint32_t *i, double *d, unsigned char *c)
{
    uint64_t h = mt_hash64(u * 977 + (uint64_t) r);
    *i = (uint32_t) h;
    *d = (double) (int32_t) (h >> 32) / 4.0; /* exact sums */
    *c = (unsigned char) (h >> 16);
}

static void unit_result(size_t u, uint32_t *i, double *d, unsigned char *c)
{
    *i = 0;
    *d = 0;
    *c = 0;
    for (int r = 0; r < mt_size; r++) {
        uint32_t ri;
        double rd;
        unsigned char rc;
        unit_values(u, r, &ri, &rd, &rc);
        *i += ri;
        *d += rd;
        *c ^= rc;
    }
}

/* The packed bytes of `units` units, from one rank's values or from the result. */
static unsigned char *units_packed(const family_t *f, size_t units, int r)
{
    unsigned char *p = malloc(units * (size_t) f->unit_bytes), *q = p;
    for (size_t u = 0; u < units; u++) {
        uint32_t i;
        double d;
        unsigned char c;
        if (r >= 0) {
            unit_values(u, r, &i, &d, &c);
        } else {
            unit_result(u, &i, &d, &c);
        }
        if (8 != f->unit_bytes) {
            memcpy(q, &i, 4);
            q += 4;
        }
        memcpy(q, &d, 8);
        q += 8;
        if (8 != f->unit_bytes) {
            *q++ = c;
        }
    }
    return p;
}

/* `count` elements of layout l (this rank's), reduced with the user operation. */
static void check_allreduce(const family_t *f, const layout_t *l, size_t count, MPI_Op op,
                            const char *what)
{
    size_t units = count * (size_t) l->units, len = units * (size_t) f->unit_bytes;
    unsigned char *mine = units_packed(f, units, mt_rank), *result = units_packed(f, units, -1);
    unsigned char *in = image_of(l, count, mine, len), *want = image_of(l, count, result, len);
    size_t span = span_of(l, count);
    unsigned char *keep = malloc(span + SLACK), *out = malloc(span + SLACK);

    memcpy(keep, in, span + SLACK);
    memset(out, MARK, span + SLACK);
    int err = MPI_Allreduce(in, out, (int) count, l->type, op, MPI_COMM_WORLD);
    allreduce_calls++;
    MT_CHECK(MPI_SUCCESS == err, "allreduce %s: %zu x %s: error %d", what, count, l->name, err);
    size_t bad = wrong_bytes(out, want, span + SLACK);
    MT_CHECK(0 == bad, "allreduce %s: %zu x %s: %zu wrong bytes (data or holes)", what, count,
             l->name, bad);
    MT_CHECK(0 == wrong_bytes(in, keep, span + SLACK), "allreduce %s: %zu x %s: send buffer "
             "changed", what, count, l->name);
    fold_packed(l, count, out, len);
    free(mine);
    free(result);
    free(in);
    free(want);
    free(keep);
    free(out);
}

static void allreduce_user_op(void)
{
    MPI_Op op;
    const size_t counts[] = {1, 7, 4099};

    MPI_Op_create(unit_combine, 1, &op);
    /* The same layout on every rank. */
    for (int fi = 0; fi < 2; fi++) {
        for (int li = 0; li < families[fi].nlayouts; li++) {
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
                check_allreduce(&families[fi], &families[fi].layouts[li], counts[ci], op,
                                "same layout");
            }
        }
    }
    /* One type map, built with other constructors on every other rank: 6 doubles in a row
     * as contiguous(6) or as vector(3, 2, 2). */
    MPI_Datatype six;
    int off[MAX_UNITS][NKINDS];
    if (mt_rank % 2) {
        MPI_Type_vector(3, 2, 2, MPI_DOUBLE, &six);
    } else {
        MPI_Type_contiguous(6, MPI_DOUBLE, &six);
    }
    family_t *doubles = &families[0];
    double_offsets(6, (int[]){0, 1, 2, 3, 4, 5}, off);
    add_layout(doubles, mt_rank % 2 ? "vector(3,2,2)" : "contiguous(6)", six, 6, off);
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        check_allreduce(doubles, &doubles->layouts[doubles->nlayouts - 1], counts[ci], op,
                        "one type map, other constructors");
    }
    /* Beyond the letter of MPI-4.1 6.9.1 (the same datatype everywhere): type maps that
     * differ, with the same signature per element and the same count. */
    const int same_units[2][3] = {{4, 5, -1}, {0, 1, 3}}; /* 2 doubles; 1 unit each */
    for (int fi = 0; fi < 2; fi++) {
        int n = same_units[fi][2] < 0 ? 2 : 3;
        const layout_t *l = &families[fi].layouts[same_units[fi][mt_rank % n]];
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            check_allreduce(&families[fi], l, counts[ci], op, "type maps differ by rank");
        }
    }
    MPI_Op_free(&op);
}

/* Argument --ftrabit: coll/ftrabit must have served every call (a run meant to test it). */
int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_legal");
    int want_ftrabit = argc > 1 && 0 == strcmp(argv[1], "--ftrabit");
    long bcasts_before = mt_ftrabit_counter("bcast_calls");
    long allreduces_before = mt_ftrabit_counter("allreduce_calls");
    make_doubles(&families[0]);
    make_int_double_char(&families[1]);

    bcasts();
    allreduce_pairs();
    allreduce_user_op();

    if (want_ftrabit) {
        MT_CHECK(mt_ftrabit_counter("bcast_calls") - bcasts_before == bcast_calls
                     && mt_ftrabit_counter("allreduce_calls") - allreduces_before
                            == allreduce_calls,
                 "coll/ftrabit served %ld of %ld broadcasts and %ld of %ld allreduces",
                 mt_ftrabit_counter("bcast_calls") - bcasts_before, bcast_calls,
                 mt_ftrabit_counter("allreduce_calls") - allreduces_before, allreduce_calls);
    }

    MT_CHECK(mt_all_equal_u64(digest), "ranks received different bytes");
    if (0 == mt_rank) {
        printf("coll_legal digest %016llx\n", (unsigned long long) digest);
    }
    for (int fi = 0; fi < 2; fi++) {
        for (int li = 0; li < families[fi].nlayouts; li++) {
            if (families[fi].layouts[li].type != MPI_DOUBLE) {
                MPI_Type_free(&families[fi].layouts[li].type);
            }
        }
    }
    return mt_finish();
}
