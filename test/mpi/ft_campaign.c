/*
 * ompi-resilience kill campaign: one program whose options choose the message size, the
 * datatype, the program's shape and where processes die (test/campaign/run-campaign.sh
 * draws them from a seed; docs/campaign.md has the results).
 *
 * Each iteration runs FTR_Allreduce on BYTES of data of the chosen type, then FTR_Bcast of
 * the same buffer from a root that moves with the iteration (original rank (7 it + 3) mod
 * np; under shrink, chosen the same way among the original ranks that no --kill or
 * --not-root names, and by process, never by a number that renumbering changes, as the
 * README asks of shrink programs: a root that dies under shrink takes its data with it, a
 * documented error that test ft/types/shrink-bcast-root-died covers); every EVERY
 * iterations
 * FTR_Checkpoint. The data bytes of every result (never the padding) are
 * folded into a running hash kept in the global checkpoint, so a replacement that replays
 * must be served exactly the results the others got. There is no collective after the last
 * iteration: when ITERATIONS is not a multiple of EVERY, the last broadcast is the job's
 * last collective with no checkpoint after it. Each rank prints
 *   "campaign rank R original O final fingerprint H on S ranks"
 * and the driver checks that every rank printed the same H as the failure-free run.
 *
 * Usage: mpirun --with-ft ulfm -np N ft_campaign [options]
 *   --iterations N (10)  --every N (3)  --bytes B (data bytes per collective, 8)
 *   --type contiguous|strided|padded
 *        contiguous: MPI_DOUBLE, MPI_SUM;
 *        strided: a vector of doubles, every other one, with a user-defined sum (the holes
 *                 must never be written);
 *        padded: MPI_DOUBLE_INT with MPI_MINLOC (12 data bytes in an extent of 16) for the
 *                allreduce, an MPI_INT resized to 8 bytes for the broadcast.
 *   --keep-comm          do not free the communicator FTR_Init gave
 *   --kill R:I:WHERE     original rank R kills itself (SIGKILL) at iteration I. WHERE:
 *                        before-allreduce, after-allreduce, before-bcast,
 *                        checkpoint-send (inside FTR_Checkpoint, right after its first
 *                        replica send was posted), checkpoint-agree (inside FTR_Checkpoint,
 *                        entering its commit agreement). Repeatable. Each kill happens once
 *                        in the job (a mark in --kill-marks' DIR), so a replacement replaying
 *                        the iteration does not die again, but a later kill of the same
 *                        rank does happen.
 *   --kill-replacement N the N-th process started by recovery (MPI_Comm_spawn) dies after
 *                        MPI_Init, before FTR_Init: a replacement dying before it joins.
 *   --stall-replacement N:S the N-th process started by recovery sleeps S seconds after
 *                        MPI_Init, before FTR_Init: a replacement that does not answer.
 *   --kill-marks DIR     required with --kill, --kill-replacement and --stall-replacement.
 *   --shrink             the job runs with coll_ftrabit_recovery shrink: roots as said above
 *   --not-root R         under shrink, original rank R is never a broadcast root (the driver
 *                        names the processes that coll_ftrabit_test_kill_* kill). Repeatable.
 * The kills inside FTR_Checkpoint intercept MPI_Isend and MPIX_Comm_agree (the MPI
 * profiling interface) while the program is inside FTR_Checkpoint.
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrabit.h"
#include "mpitest.h"

enum where { BEFORE_ALLREDUCE, AFTER_ALLREDUCE, BEFORE_BCAST, CHECKPOINT_SEND, CHECKPOINT_AGREE,
             NWHERE };
static const char *where_names[NWHERE] = {"before-allreduce", "after-allreduce", "before-bcast",
                                          "checkpoint-send", "checkpoint-agree"};
enum type_kind { CONTIGUOUS, STRIDED, PADDED };

typedef struct {
    int rank, iteration;
    enum where where;
} kill_t;

static kill_t kills[32];
static int nkills;
static int not_roots[32], nnot_roots, shrink_policy;
static const char *kill_marks;
static int original_rank = -1, current_iteration = -1, in_checkpoint;

/* ---- dying on purpose ---------------------------------------------------------------- */

/* Creates DIR/NAME; 1 if this call created it (the first in the whole job to ask). */
static int first_mark(const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", kill_marks, name);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
        return 0;
    }
    close(fd);
    return 1;
}

static void die(const char *why)
{
    fprintf(stderr, "ft_campaign: original rank %d killing itself at iteration %d (%s)\n",
            original_rank, current_iteration, why);
    fflush(stderr);
    raise(SIGKILL);
}

static void maybe_die(enum where where)
{
    for (int i = 0; i < nkills; i++) {
        char name[64];
        snprintf(name, sizeof(name), "kill-%d", i);
        if (kills[i].rank == original_rank && kills[i].iteration == current_iteration
            && kills[i].where == where && first_mark(name)) {
            die(where_names[where]);
        }
    }
}

/* Inside FTR_Checkpoint: its ring exchange posts MPI_Isend, its commit is an agreement. */
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    int err = PMPI_Isend(buf, count, type, dest, tag, comm, request);
    if (in_checkpoint) {
        maybe_die(CHECKPOINT_SEND);
    }
    return err;
}

int MPIX_Comm_agree(MPI_Comm comm, int *flag)
{
    if (in_checkpoint) {
        maybe_die(CHECKPOINT_AGREE);
    }
    return PMPIX_Comm_agree(comm, flag);
}

/* The N-th replacement the job spawns dies before it joins (before FTR_Init), or, with
 * stall_seconds > 0, sleeps that long there. */
static void maybe_hold_up_replacement(int nth, int stall_seconds)
{
    MPI_Comm parent;
    MPI_Init(NULL, NULL);
    MPI_Comm_get_parent(&parent);
    if (MPI_COMM_NULL == parent) {
        return;
    }
    for (int n = 1; n <= nth; n++) {
        char name[64];
        snprintf(name, sizeof(name), "replacement-%d", n);
        if (first_mark(name)) {
            if (n != nth) {
                return;
            }
            if (stall_seconds > 0) {
                fprintf(stderr, "ft_campaign: replacement %d sleeping %d s before it joins\n",
                        n, stall_seconds);
                fflush(stderr);
                sleep((unsigned) stall_seconds);
                return;
            }
            fprintf(stderr, "ft_campaign: replacement %d killing itself before it joins\n", n);
            fflush(stderr);
            raise(SIGKILL);
        }
    }
}

/* ---- data ------------------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* A value in [0, 1) of (rank, iteration, index): sums of these round, so the order of a
 * reduction shows in its bits. */
static double value_of(int rank, int it, size_t i)
{
    uint64_t x = mix(((uint64_t) rank << 48) ^ ((uint64_t) it << 32) ^ (uint64_t) i);
    return (double) (x >> 11) * 0x1.0p-53;
}

#define HOLE (-7.0)
#define PAD_BYTE 0xee

typedef struct {
    double value;
    int index;
} pair_t;

static MPI_Datatype strided_type, resized_int;

/* The sum over the elements of the strided type (every other double). */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    MPI_Aint lb, extent;
    int size;
    MPI_Type_get_extent(*type, &lb, &extent);
    MPI_Type_size(*type, &size);
    size_t per = (size_t) extent / sizeof(double), n = (size_t) size / sizeof(double);
    for (int k = 0; k < *len; k++) {
        double *a = (double *) in + k * per, *b = (double *) inout + k * per;
        for (size_t i = 0; i < n; i++) {
            b[2 * i] += a[2 * i];
        }
    }
}

typedef struct {
    enum type_kind kind;
    size_t elements;     /* data elements: doubles, pairs or ints */
    size_t buffer_bytes; /* with holes and padding */
    void *buf;
    MPI_Op strided_op;
} data_t;

static void data_setup(data_t *d, enum type_kind kind, size_t bytes)
{
    d->kind = kind;
    switch (kind) {
    case CONTIGUOUS:
        d->elements = bytes / sizeof(double);
        d->buffer_bytes = d->elements * sizeof(double);
        break;
    case STRIDED:
        d->elements = bytes / sizeof(double);
        d->buffer_bytes = 2 * d->elements * sizeof(double);
        MPI_Type_vector((int) d->elements, 1, 2, MPI_DOUBLE, &strided_type);
        MPI_Type_commit(&strided_type);
        MPI_Op_create(strided_sum, 1, &d->strided_op);
        break;
    case PADDED:
        d->elements = bytes / 12; /* 12 data bytes per MPI_DOUBLE_INT */
        d->buffer_bytes = d->elements * sizeof(pair_t);
        MPI_Type_create_resized(MPI_INT, 0, 8, &resized_int);
        MPI_Type_commit(&resized_int);
        break;
    }
    if (0 == d->elements) {
        d->elements = 1;
        d->buffer_bytes = CONTIGUOUS == kind ? 8 : 16;
    }
    d->buf = malloc(d->buffer_bytes);
}

static void check(int err, const char *what)
{
    if (MPI_SUCCESS != err) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, msg, &len);
        fprintf(stderr, "ft_campaign: original rank %d: %s failed: %s; exiting\n", original_rank,
                what, msg);
        fflush(stderr);
        _exit(3);
    }
}

static void fail(const char *what, int it)
{
    fprintf(stderr, "ft_campaign: original rank %d, iteration %d: %s\n", original_rank, it, what);
    printf("campaign rank ? original %d WRONG: %s at iteration %d\n", original_rank, what, it);
    fflush(stdout);
    fflush(stderr);
    _exit(4);
}

/* The padded allreduce's value of (rank, iteration, index): small integers, so that ranks
 * tie now and then and MINLOC picks the lower index. */
static double padded_value(int rank, int it, size_t i)
{
    return (double) (mix(((uint64_t) rank << 40) ^ ((uint64_t) it << 24) ^ i) % 5);
}

/* ---- the shrink oracle ------------------------------------------------------------------
 * Under shrink a result depends on timing: an allreduce in progress when a rank died counts
 * the dead rank's contribution if a survivor completed it before the failure was noticed,
 * and is redone by the survivors alone otherwise. Either way every process alive now
 * contributed, so each result is checked against a set S of original ranks with
 * (the ranks of comm now) <= S <= (all ranks): sums are within rounding of the sum over
 * some such S, the same S for every element; a MINLOC is the contribution of its own index
 * and no larger than any contribution of a rank alive now. */

/* The original ranks in comm now, as a bit set; *world_size gets their number in all. */
static unsigned alive_now(MPI_Comm comm, int *world_size)
{
    MPI_Group group, world_group;
    unsigned alive = 0;
    MPI_Comm_size(MPI_COMM_WORLD, world_size);
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int w = 0; w < *world_size && w < 32; w++) {
        int r;
        MPI_Group_translate_ranks(world_group, 1, &w, group, &r);
        alive |= MPI_UNDEFINED != r ? 1u << w : 0;
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return alive;
}

/* Element i (of a sum over S, rank r in S when bit r of `set` is set) within rounding? */
static int sum_matches(double got, int it, size_t i, unsigned set, int world_size)
{
    double want = 0;
    for (int r = 0; r < world_size; r++) {
        if (set & (1u << r)) {
            want += value_of(r, it, i);
        }
    }
    return fabs(got - want) <= 1e-12;
}

/* Does every element of x equal the sum over `set`? */
static int sums_match_set(const double *x, size_t stride, size_t n, int it, unsigned set,
                          int world_size)
{
    for (size_t i = 0; i < n; i++) {
        if (!sum_matches(x[i * stride], it, i, set, world_size)) {
            return 0;
        }
    }
    return 1;
}

/* Every subset of the dead, added to the living, is tried against all the elements: one
 * element alone does not tell the set (a dead rank's contribution to it may be 0, as
 * value_of(0, 0, 0) is). */
static void check_shrink_sums(const double *x, size_t stride, size_t n, MPI_Comm comm, int it)
{
    int world_size;
    unsigned alive = alive_now(comm, &world_size);
    unsigned dead = ((1u << world_size) - 1) & ~alive;
    for (unsigned t = dead;; t = (t - 1) & dead) {
        if (sums_match_set(x, stride, n, it, alive | t, world_size)) {
            return;
        }
        if (0 == t) break;
    }
    fail("an allreduce result is not the sum over one set of ranks that includes the living",
         it);
}

static void check_shrink_minloc(const pair_t *p, size_t n, MPI_Comm comm, int it)
{
    int world_size;
    unsigned alive = alive_now(comm, &world_size);
    for (size_t i = 0; i < n; i++) {
        if (p[i].index < 0 || p[i].index >= world_size
            || p[i].value != padded_value(p[i].index, it, i)) {
            fail("a MINLOC result is not the contribution of the rank it names", it);
        }
        for (int r = 0; r < world_size; r++) {
            double v = padded_value(r, it, i);
            if ((alive & (1u << r)) && (v < p[i].value || (v == p[i].value && r < p[i].index))) {
                fail("a MINLOC result is larger than the contribution of a living rank", it);
            }
        }
    }
}

/* Fills this rank's contribution, runs the allreduce, folds the result into h. */
static uint64_t allreduce_step(data_t *d, MPI_Comm *comm, int it, uint64_t h)
{
    size_t n = d->elements;
    double *x = d->buf;
    pair_t *p = d->buf;

    switch (d->kind) {
    case CONTIGUOUS:
        for (size_t i = 0; i < n; i++) x[i] = value_of(original_rank, it, i);
        break;
    case STRIDED:
        for (size_t i = 0; i < n; i++) {
            x[2 * i] = value_of(original_rank, it, i);
            x[2 * i + 1] = HOLE;
        }
        break;
    case PADDED:
        memset(p, PAD_BYTE, n * sizeof(pair_t));
        for (size_t i = 0; i < n; i++) {
            p[i].value = padded_value(original_rank, it, i);
            p[i].index = original_rank;
        }
        break;
    }
    maybe_die(BEFORE_ALLREDUCE);
    switch (d->kind) {
    case CONTIGUOUS:
        check(FTR_Allreduce(x, (int) n, MPI_DOUBLE, MPI_SUM, comm), "FTR_Allreduce");
        if (shrink_policy) check_shrink_sums(x, 1, n, *comm, it);
        h = mt_fnv1a(x, n * sizeof(double), h);
        break;
    case STRIDED:
        check(FTR_Allreduce(x, 1, strided_type, d->strided_op, comm), "FTR_Allreduce");
        if (shrink_policy) check_shrink_sums(x, 2, n, *comm, it);
        for (size_t i = 0; i < n; i++) {
            if (HOLE != x[2 * i + 1]) fail("a hole of the strided buffer was written", it);
            h = mt_fnv1a(&x[2 * i], sizeof(double), h);
        }
        break;
    case PADDED:
        check(FTR_Allreduce(p, (int) n, MPI_DOUBLE_INT, MPI_MINLOC, comm), "FTR_Allreduce");
        if (shrink_policy) check_shrink_minloc(p, n, *comm, it);
        for (size_t i = 0; i < n; i++) {
            h = mt_fnv1a(&p[i].value, sizeof(double), h);
            h = mt_fnv1a(&p[i].index, sizeof(int), h);
        }
        break;
    }
    maybe_die(AFTER_ALLREDUCE);
    return h;
}

static int bcast_value(int root_orig, int it, size_t i)
{
    return (int) (mix(((uint64_t) root_orig << 40) ^ ((uint64_t) it << 24) ^ i) & 0x7fffffff);
}

/* May original rank r be a broadcast root under shrink? Not if the scenario kills it. */
static int may_be_root(int r)
{
    for (int i = 0; i < nkills; i++) {
        if (kills[i].rank == r) {
            return 0;
        }
    }
    for (int i = 0; i < nnot_roots; i++) {
        if (not_roots[i] == r) {
            return 0;
        }
    }
    return 1;
}

/* The root of iteration `it` in comm. Respawn (spares included) keeps the numbers: rank
 * (7 it + 3) mod size. Under shrink the same rule picks an original rank among those that
 * may be roots (the same list on every process, failures or not), and the root is that
 * process's rank in comm now; -1 if it is gone all the same. */
static int root_of_iteration(MPI_Comm comm, int it, int shrinking, int *root_orig)
{
    int size, world_size, candidates[64], n = 0, root;
    MPI_Comm_size(comm, &size);
    if (!shrinking) {
        *root_orig = (it * 7 + 3) % size;
        return *root_orig;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int r = 0; r < world_size && n < 64; r++) {
        if (may_be_root(r)) {
            candidates[n++] = r;
        }
    }
    *root_orig = n > 0 ? candidates[(it * 7 + 3) % n] : 0;
    MPI_Group group, world_group;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(world_group, 1, root_orig, group, &root);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return MPI_UNDEFINED == root ? -1 : root;
}

/* The root (moving with the iteration) sends values of its original rank; every rank
 * checks them, and folds them into h. */
static uint64_t bcast_step(data_t *d, MPI_Comm *comm, int it, uint64_t h, int shrinking)
{
    int rank, root_orig;
    MPI_Comm_rank(*comm, &rank);
    int root = root_of_iteration(*comm, it, shrinking, &root_orig);
    size_t n = d->elements;
    double *x = d->buf;
    int *ints = d->buf; /* padded: an int at the start of every 8 bytes */

    if (root < 0) {
        /* the driver checks that this root is one that died */
        fprintf(stderr, "ft_campaign: FTR_Bcast from original root %d failed\n", root_orig);
        check(MPI_ERR_ROOT, "FTR_Bcast");
    }
    for (size_t i = 0; i < n; i++) {
        int v = rank == root ? bcast_value(original_rank, it, i) : -1;
        switch (d->kind) {
        case CONTIGUOUS: x[i] = (double) v; break;
        case STRIDED: x[2 * i] = (double) v; x[2 * i + 1] = HOLE; break;
        case PADDED: ints[2 * i] = v; ints[2 * i + 1] = 0x7b7b7b7b; break;
        }
    }
    maybe_die(BEFORE_BCAST);
    int err = MPI_SUCCESS;
    switch (d->kind) {
    case CONTIGUOUS: err = FTR_Bcast(x, (int) n, MPI_DOUBLE, root, comm); break;
    case STRIDED: err = FTR_Bcast(x, 1, strided_type, root, comm); break;
    case PADDED: err = FTR_Bcast(ints, (int) n, resized_int, root, comm); break;
    }
    if (MPI_SUCCESS != err) {
        /* the driver checks that this root is one that died (shrink loses its data) */
        fprintf(stderr, "ft_campaign: FTR_Bcast from original root %d failed\n", root_orig);
    }
    check(err, "FTR_Bcast");
    for (size_t i = 0; i < n; i++) {
        int v = CONTIGUOUS == d->kind ? (int) x[i]
                : STRIDED == d->kind  ? (int) x[2 * i]
                                      : ints[2 * i];
        if (STRIDED == d->kind && HOLE != x[2 * i + 1]) {
            fail("a hole of the strided broadcast buffer was written", it);
        }
        if (PADDED == d->kind && 0x7b7b7b7b != ints[2 * i + 1]) {
            fail("the padding of the broadcast buffer was written", it);
        }
        if (v != bcast_value(root_orig, it, i)) {
            char msg[160];
            snprintf(msg, sizeof(msg), "broadcast element %zu is %d, not the value of original "
                     "rank %d (root %d)", i, v, root_orig, root);
            fail(msg, it);
        }
        h = mt_fnv1a(&v, sizeof(v), h);
    }
    return h;
}

/* ---- main ------------------------------------------------------------------------------ */

static int parse_kill(const char *spec)
{
    char where[64];
    kill_t k;
    if (nkills == 32 || 3 != sscanf(spec, "%d:%d:%63s", &k.rank, &k.iteration, where)) {
        return -1;
    }
    for (k.where = 0; k.where < NWHERE && strcmp(where, where_names[k.where]); k.where++) {
    }
    if (NWHERE == k.where) {
        return -1;
    }
    kills[nkills++] = k;
    return 0;
}

static void usage_error(const char *what)
{
    fprintf(stderr, "ft_campaign: %s (see the comment at the top of test/mpi/ft_campaign.c)\n",
            what);
    fflush(stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    int iterations = 10, every = 3, keep_comm = 0, kill_replacement = 0, version;
    int stall_seconds = 0;
    size_t bytes = 8;
    enum type_kind kind = CONTIGUOUS;
    MPI_Comm world;

    for (int i = 1; i < argc; i++) {
        int ok = i + 1 < argc;
        if (ok && !strcmp(argv[i], "--iterations")) iterations = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--every")) every = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--bytes")) bytes = strtoull(argv[++i], NULL, 10);
        else if (ok && !strcmp(argv[i], "--type")) {
            const char *t = argv[++i];
            if (!strcmp(t, "contiguous")) kind = CONTIGUOUS;
            else if (!strcmp(t, "strided")) kind = STRIDED;
            else if (!strcmp(t, "padded")) kind = PADDED;
            else ok = 0;
        } else if (!strcmp(argv[i], "--keep-comm")) ok = keep_comm = 1;
        else if (ok && !strcmp(argv[i], "--kill")) ok = 0 == parse_kill(argv[++i]);
        else if (ok && !strcmp(argv[i], "--kill-replacement")) kill_replacement = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--stall-replacement")) {
            if (2 != sscanf(argv[++i], "%d:%d", &kill_replacement, &stall_seconds)
                || kill_replacement < 1 || stall_seconds < 1) {
                usage_error("--stall-replacement N:SECONDS, both positive");
            }
        }
        else if (!strcmp(argv[i], "--shrink")) ok = shrink_policy = 1;
        else if (ok && !strcmp(argv[i], "--not-root") && nnot_roots < 32)
            not_roots[nnot_roots++] = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--kill-marks")) kill_marks = argv[++i];
        else ok = 0;
        if (!ok) {
            usage_error("bad argument");
        }
    }
    if (iterations < 1 || every < 1 || bytes < 1 || bytes > ((size_t) 1 << 30)) {
        usage_error("--iterations and --every must be positive, --bytes 1 to 2^30");
    }
    if ((nkills > 0 || kill_replacement > 0) && NULL == kill_marks) {
        usage_error("--kill, --kill-replacement and --stall-replacement need --kill-marks DIR");
    }
    if (kill_replacement > 0) {
        maybe_hold_up_replacement(kill_replacement, stall_seconds);
    }

    check(FTR_Init(&argc, &argv, &world), "FTR_Init");
    int origin, rank, size;
    check(FTR_Origin(&origin), "FTR_Origin");
    MPI_Comm_rank(world, &rank);
    original_rank = rank; /* kills name ranks of the original job; a replacement has its rank */
    MPI_Comm_size(world, &size);

    data_t d;
    data_setup(&d, kind, bytes);

    /* Before the first checkpoint: a bootstrap result kept for the job's life. */
    double boot = value_of(original_rank, -1, 0);
    check(FTR_Allreduce_bootstrap(&boot, 1, MPI_DOUBLE, MPI_SUM, &world),
          "FTR_Allreduce_bootstrap");

    /* Global state: the next iteration and the running hash; local: who owns it. */
    const uint64_t initial_global[2] = {0, mt_fnv1a(&boot, sizeof(boot), 0xcbf29ce484222325ULL)};
    const int64_t initial_local[2] = {original_rank, 0};
    uint64_t global[2] = {initial_global[0], initial_global[1]};
    int64_t local[2] = {initial_local[0], initial_local[1]};
    check(FTR_Load_checkpoint(&world, global, sizeof(global), local, sizeof(local), &version),
          "FTR_Load_checkpoint");
    if (FTR_ORIGIN_ORIGINAL != origin) {
        printf("rank %d: %s at iteration %d (checkpoint version %d)\n", rank,
               FTR_ORIGIN_SPARE == origin ? "spare takes over" : "replacement starts",
               (int) global[0], version);
        fflush(stdout);
        if (local[0] != original_rank || (version > 0 && local[1] != (int64_t) global[0])) {
            fail("the local checkpoint given back is another rank's or another version's",
                 (int) global[0]);
        }
    }

    for (int it = (int) global[0]; it < iterations;) {
        current_iteration = it;
        uint64_t h = allreduce_step(&d, &world, it, global[1]);
        MPI_Comm_size(world, &size); /* the shrink policy leaves fewer, renumbered ranks */
        h = bcast_step(&d, &world, it, h, shrink_policy);
        uint64_t next[2] = {(uint64_t) it + 1, h};
        if ((it + 1) % every == 0) {
            int64_t next_local[2] = {original_rank, it + 1};
            in_checkpoint = 1;
            int err = FTR_Checkpoint(&world, next, sizeof(next), next_local, sizeof(next_local));
            in_checkpoint = 0;
            if (MPIX_ERR_PROC_FAILED == err) {
                /* Documented: nothing committed, *comm rebuilt; roll back as after a failed
                 * collective (version 0 leaves the buffers as they are: the initial state). */
                memcpy(global, initial_global, sizeof(global));
                memcpy(local, initial_local, sizeof(local));
                check(FTR_Load_checkpoint(&world, global, sizeof(global), local, sizeof(local),
                                          &version),
                      "FTR_Load_checkpoint");
                it = (int) global[0];
                continue;
            }
            check(err, "FTR_Checkpoint");
            local[1] = it + 1;
        }
        global[0] = next[0];
        global[1] = next[1];
        it++;
    }

    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    printf("campaign rank %d original %d final fingerprint %016llx on %d ranks\n", rank,
           original_rank, (unsigned long long) global[1], size);
    fflush(stdout);
    free(d.buf);
    if (!keep_comm) {
        MPI_Comm_free(&world);
    }
    FTR_Finalize();
    return 0;
}
