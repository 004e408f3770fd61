/*
 * MPI_Allreduce correctness under coll ftrabit: every predefined datatype with every
 * operation MPI defines on it, user operations (commutative and not), derived
 * non-contiguous datatypes, MPI_IN_PLACE, count 0, and sizes up to 16 MiB. Each rank
 * computes every rank's input itself and reduces them in rank order with this file's own
 * implementation of the operation: the reference owes nothing to Open MPI.
 */
#include <complex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

typedef enum { K_SINT, K_UINT, K_FLOAT, K_COMPLEX, K_BOOL, K_BYTE, K_PAIR } kind_t;

typedef struct {
    const char *name;
    MPI_Datatype type;
    kind_t kind;
    size_t size;       /* of the value part (for pairs: of the value, the int follows) */
    size_t elem_size;  /* sizeof one element */
    size_t index_off;  /* pairs: offset of the int index */
} type_desc_t;

#define T(name, type, kind, ctype) {name, type, kind, sizeof(ctype), sizeof(ctype), 0}
#define P(name, type, vtype)                                                            \
    {name, type, K_PAIR, sizeof(vtype), sizeof(struct { vtype v; int i; }),            \
     offsetof(struct { vtype v; int i; }, i)}

#include <stddef.h>

static type_desc_t types[] = {
    T("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, K_SINT, signed char),
    T("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, K_UINT, unsigned char),
    T("MPI_SHORT", MPI_SHORT, K_SINT, short),
    T("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, K_UINT, unsigned short),
    T("MPI_INT", MPI_INT, K_SINT, int),
    T("MPI_UNSIGNED", MPI_UNSIGNED, K_UINT, unsigned),
    T("MPI_LONG", MPI_LONG, K_SINT, long),
    T("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, K_UINT, unsigned long),
    T("MPI_LONG_LONG", MPI_LONG_LONG, K_SINT, long long),
    T("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, K_UINT, unsigned long long),
    T("MPI_INT8_T", MPI_INT8_T, K_SINT, int8_t),
    T("MPI_UINT8_T", MPI_UINT8_T, K_UINT, uint8_t),
    T("MPI_INT16_T", MPI_INT16_T, K_SINT, int16_t),
    T("MPI_UINT16_T", MPI_UINT16_T, K_UINT, uint16_t),
    T("MPI_INT32_T", MPI_INT32_T, K_SINT, int32_t),
    T("MPI_UINT32_T", MPI_UINT32_T, K_UINT, uint32_t),
    T("MPI_INT64_T", MPI_INT64_T, K_SINT, int64_t),
    T("MPI_UINT64_T", MPI_UINT64_T, K_UINT, uint64_t),
    T("MPI_AINT", MPI_AINT, K_SINT, MPI_Aint),
    T("MPI_OFFSET", MPI_OFFSET, K_SINT, MPI_Offset),
    T("MPI_COUNT", MPI_COUNT, K_SINT, MPI_Count),
    T("MPI_FLOAT", MPI_FLOAT, K_FLOAT, float),
    T("MPI_DOUBLE", MPI_DOUBLE, K_FLOAT, double),
    T("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLOAT, long double),
    T("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_COMPLEX, float _Complex),
    T("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_COMPLEX, double _Complex),
    T("MPI_C_BOOL", MPI_C_BOOL, K_BOOL, _Bool),
    T("MPI_BYTE", MPI_BYTE, K_BYTE, unsigned char),
    P("MPI_2INT", MPI_2INT, int),
    P("MPI_SHORT_INT", MPI_SHORT_INT, short),
    P("MPI_LONG_INT", MPI_LONG_INT, long),
    P("MPI_FLOAT_INT", MPI_FLOAT_INT, float),
    P("MPI_DOUBLE_INT", MPI_DOUBLE_INT, double),
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

typedef struct {
    const char *name;
    MPI_Op op;
} op_desc_t;

static const op_desc_t ops[] = {
    {"MPI_MAX", MPI_MAX}, {"MPI_MIN", MPI_MIN}, {"MPI_SUM", MPI_SUM},
    {"MPI_PROD", MPI_PROD}, {"MPI_LAND", MPI_LAND}, {"MPI_LOR", MPI_LOR},
    {"MPI_LXOR", MPI_LXOR}, {"MPI_BAND", MPI_BAND}, {"MPI_BOR", MPI_BOR},
    {"MPI_BXOR", MPI_BXOR}, {"MPI_MAXLOC", MPI_MAXLOC}, {"MPI_MINLOC", MPI_MINLOC},
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* Which (kind, op) pairs MPI defines. */
static bool op_valid(kind_t k, MPI_Op op)
{
    bool integer = k == K_SINT || k == K_UINT;
    if (op == MPI_MAX || op == MPI_MIN) return integer || k == K_FLOAT;
    if (op == MPI_SUM || op == MPI_PROD) return integer || k == K_FLOAT || k == K_COMPLEX;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return integer || k == K_BOOL;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return integer || k == K_BYTE;
    return k == K_PAIR; /* MAXLOC, MINLOC */
}

/* ---- element access as int64 / long double --------------------------------------- */

static int64_t get_int(const type_desc_t *t, const char *p)
{
    /* each branch converted on its own: a ?: of int32_t and uint32_t would be unsigned */
    bool sign = t->kind == K_SINT;
    switch (t->size) {
    case 1: return sign ? (int64_t) *(const int8_t *) p : (int64_t) *(const uint8_t *) p;
    case 2: return sign ? (int64_t) *(const int16_t *) p : (int64_t) *(const uint16_t *) p;
    case 4: return sign ? (int64_t) *(const int32_t *) p : (int64_t) *(const uint32_t *) p;
    default: return *(const int64_t *) p;
    }
}

static void put_int(const type_desc_t *t, char *p, int64_t v)
{
    switch (t->size) {
    case 1: *(uint8_t *) p = (uint8_t) v; break;
    case 2: *(uint16_t *) p = (uint16_t) v; break;
    case 4: *(uint32_t *) p = (uint32_t) v; break;
    default: *(int64_t *) p = v; break;
    }
}

static long double get_real(const type_desc_t *t, const char *p, int part)
{
    size_t s = t->kind == K_COMPLEX ? t->size / 2 : t->size;
    p += part * s;
    if (s == sizeof(float)) return *(const float *) p;
    if (s == sizeof(double)) return *(const double *) p;
    return *(const long double *) p;
}

static void put_real(const type_desc_t *t, char *p, int part, long double v)
{
    size_t s = t->kind == K_COMPLEX ? t->size / 2 : t->size;
    p += part * s;
    if (s == sizeof(float)) *(float *) p = (float) v;
    else if (s == sizeof(double)) *(double *) p = (double) v;
    else *(long double *) p = v;
}

/* Input of `rank` at element `i`: small integers, so that every reduction is exact in
 * every type and no order of evaluation can change a bit. */
static void make_input(const type_desc_t *t, MPI_Op op, int rank, size_t i, char *p)
{
    /* keyed by the type's name: an address would differ between processes */
    uint64_t h = mt_hash64(((uint64_t) rank << 40) ^ i
                           ^ (mt_fnv1a(t->name, strlen(t->name), 0) << 8));
    int64_t small = (int64_t) (h % 7);            /* 0..6 */
    int64_t factor = (h % 5 == 0) ? 2 : 1;        /* products stay below 2^8 for np <= 8 */
    int64_t v = (op == MPI_PROD) ? factor : small;
    if (op == MPI_PROD && t->kind == K_SINT && (h >> 20) % 4 == 0) v = -v;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) v = (int64_t) (h >> 3);

    memset(p, 0, t->elem_size);
    switch (t->kind) {
    case K_SINT:
        put_int(t, p, (op == MPI_MAX || op == MPI_MIN) ? small - 3 : v);
        break;
    case K_UINT: case K_BYTE:
        put_int(t, p, v);
        break;
    case K_FLOAT:
        put_real(t, p, 0, (long double) ((op == MPI_MAX || op == MPI_MIN) ? small - 3 : v));
        break;
    case K_COMPLEX:
        put_real(t, p, 0, (long double) v);
        put_real(t, p, 1, (long double) (op == MPI_PROD ? (h >> 30) % 2 : small - 2));
        break;
    case K_BOOL:
        *(_Bool *) p = (h >> 7) % 3 == 0;
        break;
    case K_PAIR:
        if (t->size == sizeof(float) && t->name[4] == 'F') put_real(t, p, 0, (long double) small);
        else if (strcmp(t->name, "MPI_DOUBLE_INT") == 0) *(double *) p = (double) small;
        else put_int(t, p, small);
        *(int *) (p + t->index_off) = (int) (h >> 33) % 50 + rank;
        break;
    }
}

static int64_t int_op(MPI_Op op, int64_t a, int64_t b)
{
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_LAND) return a && b;
    if (op == MPI_LOR) return a || b;
    if (op == MPI_LXOR) return !a != !b;
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    return a ^ b; /* BXOR */
}

static long double pair_value(const type_desc_t *t, const char *p)
{
    if (strcmp(t->name, "MPI_FLOAT_INT") == 0) return *(const float *) p;
    if (strcmp(t->name, "MPI_DOUBLE_INT") == 0) return *(const double *) p;
    return (long double) get_int(t, p);
}

/* acc = acc op x, one element. */
static void ref_op(const type_desc_t *t, MPI_Op op, char *acc, const char *x)
{
    switch (t->kind) {
    case K_SINT: case K_UINT: case K_BYTE:
        put_int(t, acc, int_op(op, get_int(t, acc), get_int(t, x)));
        break;
    case K_FLOAT: {
        long double a = get_real(t, acc, 0), b = get_real(t, x, 0);
        long double r = op == MPI_MAX ? (a > b ? a : b) : op == MPI_MIN ? (a < b ? a : b)
                      : op == MPI_SUM ? a + b : a * b;
        put_real(t, acc, 0, r);
        break;
    }
    case K_COMPLEX: {
        long double ar = get_real(t, acc, 0), ai = get_real(t, acc, 1);
        long double br = get_real(t, x, 0), bi = get_real(t, x, 1);
        if (op == MPI_SUM) {
            put_real(t, acc, 0, ar + br);
            put_real(t, acc, 1, ai + bi);
        } else {
            put_real(t, acc, 0, ar * br - ai * bi);
            put_real(t, acc, 1, ar * bi + ai * br);
        }
        break;
    }
    case K_BOOL:
        *(_Bool *) acc = (_Bool) int_op(op, *(_Bool *) acc, *(const _Bool *) x);
        break;
    case K_PAIR: {
        long double a = pair_value(t, acc), b = pair_value(t, x);
        int ai = *(int *) (acc + t->index_off), bi = *(const int *) (x + t->index_off);
        bool take = op == MPI_MAXLOC ? (b > a || (b == a && bi < ai))
                                     : (b < a || (b == a && bi < ai));
        if (take) memcpy(acc, x, t->elem_size);
        break;
    }
    }
}

/* Compare only the bytes that carry data (pairs have padding). */
static bool elem_equal(const type_desc_t *t, const char *a, const char *b)
{
    if (t->kind == K_PAIR) {
        return memcmp(a, b, t->size) == 0
            && *(const int *) (a + t->index_off) == *(const int *) (b + t->index_off);
    }
    if (t->kind == K_BOOL) return (*(const _Bool *) a) == (*(const _Bool *) b);
    if (t->kind == K_FLOAT || t->kind == K_COMPLEX) {
        for (int part = 0; part < (t->kind == K_COMPLEX ? 2 : 1); part++) {
            if (get_real(t, a, part) != get_real(t, b, part)) return false;
        }
        return true;
    }
    return memcmp(a, b, t->size) == 0;
}

/* "got XX.. expected YY.." for a failure message */
static const char *hex(const char *got, const char *expect, size_t n)
{
    static char text[200];
    size_t k = 0;
    k += snprintf(text + k, sizeof(text) - k, "got ");
    for (size_t i = 0; i < n && i < 16; i++) k += snprintf(text + k, sizeof(text) - k, "%02x", (unsigned char) got[i]);
    k += snprintf(text + k, sizeof(text) - k, " expected ");
    for (size_t i = 0; i < n && i < 16; i++) k += snprintf(text + k, sizeof(text) - k, "%02x", (unsigned char) expect[i]);
    return text;
}

static void check_predefined(const type_desc_t *t, const op_desc_t *o, size_t count, bool in_place)
{
    size_t es = t->elem_size;
    char *in = malloc(count * es + 1), *out = malloc(count * es + 1);
    char *ref = malloc(count * es + 1), *x = malloc(es);

    for (size_t i = 0; i < count; i++) {
        make_input(t, o->op, 0, i, ref + i * es);
        for (int r = 1; r < mt_size; r++) {
            make_input(t, o->op, r, i, x);
            ref_op(t, o->op, ref + i * es, x);
        }
        make_input(t, o->op, mt_rank, i, in + i * es);
    }
    int err;
    if (in_place) {
        memcpy(out, in, count * es);
        err = MPI_Allreduce(MPI_IN_PLACE, out, (int) count, t->type, o->op, MPI_COMM_WORLD);
    } else {
        memset(out, 0xA5, count * es);
        err = MPI_Allreduce(in, out, (int) count, t->type, o->op, MPI_COMM_WORLD);
    }
    MT_CHECK(err == MPI_SUCCESS, "%s %s count %zu: error %d", t->name, o->name, count, err);
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < count; i++) {
        if (!elem_equal(t, out + i * es, ref + i * es) && bad++ == 0) first_bad = i;
    }
    MT_CHECK(bad == 0, "%s %s count %zu%s: %zu wrong elements, first at %zu (bytes %s)",
             t->name, o->name, count, in_place ? " in place" : "", bad, first_bad,
             bad ? hex(out + first_bad * es, ref + first_bad * es, t->elem_size) : "");
    free(in); free(out); free(ref); free(x);
}

/* ---- a non-commutative user operation: 2x2 matrix product mod 2^32 ---------------- */

typedef struct { uint32_t m[4]; } mat_t;

static mat_t mat_mul(mat_t a, mat_t b)
{
    mat_t c;
    c.m[0] = a.m[0] * b.m[0] + a.m[1] * b.m[2];
    c.m[1] = a.m[0] * b.m[1] + a.m[1] * b.m[3];
    c.m[2] = a.m[2] * b.m[0] + a.m[3] * b.m[2];
    c.m[3] = a.m[2] * b.m[1] + a.m[3] * b.m[3];
    return c;
}

static mat_t mat_input(int rank, size_t i)
{
    mat_t a;
    for (int k = 0; k < 4; k++) a.m[k] = (uint32_t) mt_hash64(((uint64_t) rank << 48) ^ (i << 2) ^ k);
    return a;
}

/* Element layout for the user-op tests: contiguous matrices, or matrices with a gap
 * after each one (a derived non-contiguous datatype; the op must keep the layout). */
static MPI_Aint mat_stride;

static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int i = 0; i < *len; i++) {
        mat_t *a = (mat_t *) ((char *) in + i * mat_stride);
        mat_t *b = (mat_t *) ((char *) inout + i * mat_stride);
        *b = mat_mul(*a, *b); /* inout = in op inout */
    }
}

static void check_user_op(MPI_Datatype type, MPI_Aint stride, int commute, size_t count,
                          bool in_place, const char *what)
{
    MPI_Op op;
    char *in = calloc(count + 1, stride), *out = calloc(count + 1, stride);
    const uint32_t gap_marker = 0xDEADBEEF;

    mat_stride = stride;
    MPI_Op_create(mat_op, commute, &op);
    for (size_t i = 0; i < count; i++) {
        *(mat_t *) (in + i * stride) = mat_input(mt_rank, i);
        if (stride > (MPI_Aint) sizeof(mat_t)) {
            memcpy(in + i * stride + sizeof(mat_t), &gap_marker, 4);
            memcpy(out + i * stride + sizeof(mat_t), &gap_marker, 4);
        }
    }
    if (in_place) memcpy(out, in, count * stride);
    int err = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int) count, type, op, MPI_COMM_WORLD);
    MT_CHECK(err == MPI_SUCCESS, "%s count %zu: error %d", what, count, err);
    size_t bad = 0, bad_gap = 0;
    for (size_t i = 0; i < count; i++) {
        mat_t ref = mat_input(0, i);
        for (int r = 1; r < mt_size; r++) ref = mat_mul(ref, mat_input(r, i)); /* rank order */
        if (memcmp(&ref, out + i * stride, sizeof(mat_t)) != 0) bad++;
        if (stride > (MPI_Aint) sizeof(mat_t)
            && memcmp(out + i * stride + sizeof(mat_t), &gap_marker, 4) != 0) bad_gap++;
    }
    MT_CHECK(bad == 0, "%s count %zu%s: %zu results not the rank-order product", what, count,
             in_place ? " in place" : "", bad);
    MT_CHECK(bad_gap == 0, "%s count %zu: %zu gaps overwritten", what, count, bad_gap);
    MPI_Op_free(&op);
    free(in); free(out);
}

/* ---- a user op on a vector datatype with gaps ------------------------------------- */

/* Each element: MPI_Type_vector(3, 2, 3, MPI_INT) resized to 9 ints: data at positions
 * 0,1,3,4,6,7 and gaps at 2,5,8. The op walks that layout itself, as MPI asks of it. */
static bool vec_data(size_t pos) { return pos % 3 != 2; }

static void vec_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    int *a = in, *b = inout;
    for (int e = 0; e < *len; e++) {
        for (size_t pos = 0; pos < 9; pos++) {
            if (vec_data(pos)) b[e * 9 + pos] += a[e * 9 + pos];
        }
    }
}

static int vec_input(int rank, size_t k) { return (int) (mt_hash64(rank * 1000003ULL + k) % 1000); }

static void check_vector_sum(size_t count, bool in_place)
{
    MPI_Datatype vec, vec_resized;
    MPI_Op op;
    MPI_Type_vector(3, 2, 3, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 9 * sizeof(int), &vec_resized);
    MPI_Type_commit(&vec_resized);
    MPI_Op_create(vec_sum, 1, &op);
    size_t n = count * 9;
    int *in = malloc(n * sizeof(int) + 1), *out = malloc(n * sizeof(int) + 1);
    for (size_t k = 0; k < n; k++) {
        in[k] = vec_data(k % 9) ? vec_input(mt_rank, k) : -7;
        out[k] = vec_data(k % 9) ? 0 : -7;
    }
    if (in_place) memcpy(out, in, n * sizeof(int));
    int err = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int) count, vec_resized, op,
                            MPI_COMM_WORLD);
    MT_CHECK(err == MPI_SUCCESS, "vector user SUM count %zu: error %d", count, err);
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        long expect = -7;
        if (vec_data(k % 9)) {
            expect = 0;
            for (int r = 0; r < mt_size; r++) expect += vec_input(r, k);
        }
        bad += out[k] != expect;
    }
    MT_CHECK(bad == 0, "user SUM on vector(3,2,3) of MPI_INT count %zu%s: %zu wrong ints "
             "(data or gaps)", count, in_place ? " in place" : "", bad);
    MPI_Op_free(&op);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec_resized);
    free(in); free(out);
}

/* ---- sizes up to 16 MiB -------------------------------------------------------------- */

static void check_large_sum(size_t bytes, bool in_place)
{
    size_t count = bytes / sizeof(double);
    double *in = malloc(count * sizeof(double) + 8), *out = malloc(count * sizeof(double) + 8);
    for (size_t i = 0; i < count; i++) in[i] = (double) ((i * 7 + mt_rank * 13) % 1024);
    if (in_place) memcpy(out, in, count * sizeof(double));
    int err = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int) count, MPI_DOUBLE, MPI_SUM,
                            MPI_COMM_WORLD);
    MT_CHECK(err == MPI_SUCCESS, "double SUM %zu bytes: error %d", bytes, err);
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        double expect = 0;
        for (int r = 0; r < mt_size; r++) expect += (double) ((i * 7 + r * 13) % 1024);
        if (out[i] != expect) bad++;
    }
    MT_CHECK(bad == 0, "double SUM %zu bytes%s: %zu wrong", bytes, in_place ? " in place" : "", bad);
    free(in); free(out);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_allreduce");
    long calls_before = mt_ftrabit_counter("allreduce_calls");
    long calls = 0;

    const size_t counts[] = {0, 1, 3, 17, 1000};
    for (size_t ti = 0; ti < NTYPES; ti++) {
        for (size_t oi = 0; oi < NOPS; oi++) {
            if (!op_valid(types[ti].kind, ops[oi].op)) continue;
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
                check_predefined(&types[ti], &ops[oi], counts[ci], ci % 2 == 1);
                calls += counts[ci] > 0; /* MPI_Allreduce returns early for count 0 */
            }
        }
    }

    MPI_Datatype mat, mat_gap, mat_gap_resized;
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Type_create_resized(mat, 0, sizeof(mat_t) + 8, &mat_gap_resized);
    MPI_Type_commit(&mat_gap_resized);
    (void) mat_gap;
    const size_t ucounts[] = {0, 1, 5, 100, 20000};
    for (size_t ci = 0; ci < sizeof(ucounts) / sizeof(ucounts[0]); ci++) {
        for (int commute = 0; commute <= 1; commute++) {
            /* commute=1 lies about a non-commutative op: rank order must still hold */
            check_user_op(mat, sizeof(mat_t), commute, ucounts[ci], ci % 2, "matrix product");
            check_user_op(mat_gap_resized, sizeof(mat_t) + 8, commute, ucounts[ci], ci % 2 == 0,
                          "matrix product, non-contiguous");
            calls += 2 * (ucounts[ci] > 0);
        }
        check_vector_sum(ucounts[ci], ci % 2);
        calls += ucounts[ci] > 0;
    }
    MPI_Type_free(&mat);
    MPI_Type_free(&mat_gap_resized);

    for (size_t bytes = 8; bytes <= (16u << 20); bytes *= 8) {
        check_large_sum(bytes, false);
        calls++;
    }
    check_large_sum(16u << 20, true);
    calls++;

    long calls_after = mt_ftrabit_counter("allreduce_calls");
    if (mt_size > 1) {
        MT_CHECK(calls_before >= 0, "coll ftrabit is not loaded");
        MT_CHECK(calls_after - calls_before == calls,
                 "coll ftrabit served %ld of %ld MPI_Allreduce calls", calls_after - calls_before,
                 calls);
    }
    return mt_finish();
}
