/*
 * ompi-resilience: support for tests that run under mpirun (see mpitest.h).
 */
#include "mpitest.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int mt_rank, mt_size;
long mt_failures;
const char *mt_name;

#define MT_TAG 4242
#define MT_MAX_REPORTED 20

void mt_init(int *argc, char ***argv, const char *name)
{
    int provided;

    mt_init_thread(argc, argv, name, MPI_THREAD_SINGLE, &provided);
}

void mt_init_thread(int *argc, char ***argv, const char *name, int required, int *provided)
{
    MPI_Init_thread(argc, argv, required, provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    int t_provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &t_provided);
    mt_name = name;
}

void mt_fail(const char *file, int line, const char *fmt, ...)
{
    if (mt_failures++ < MT_MAX_REPORTED) {
        va_list ap;
        char msg[512];
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        printf("mpitest %s: rank %d: FAIL %s:%d: %s\n", mt_name, mt_rank, file, line, msg);
        fflush(stdout);
    }
}

/* MPI_T counters count from the moment a handle is allocated, so the handles are kept
 * from first use to MPI_T_finalize. */
#define MT_MAX_COUNTERS 4
static MPI_T_pvar_session mt_session = MPI_T_PVAR_SESSION_NULL;
static struct {
    char name[64];
    int found;
    MPI_T_pvar_handle handle;
} mt_counters[MT_MAX_COUNTERS];

long mt_ftrabit_counter(const char *name)
{
    int i, index, count;
    unsigned long value = 0;

    for (i = 0; i < MT_MAX_COUNTERS && mt_counters[i].name[0]; i++) {
        if (0 == strcmp(mt_counters[i].name + strlen("coll_ftrabit_"), name)) {
            break;
        }
    }
    if (MT_MAX_COUNTERS == i) {
        return -1;
    }
    if (!mt_counters[i].name[0]) {
        snprintf(mt_counters[i].name, sizeof(mt_counters[i].name), "coll_ftrabit_%s", name);
        if (MPI_T_PVAR_SESSION_NULL == mt_session) {
            MPI_T_pvar_session_create(&mt_session);
        }
        mt_counters[i].found =
            MPI_SUCCESS == MPI_T_pvar_get_index(mt_counters[i].name, MPI_T_PVAR_CLASS_COUNTER, &index)
            && MPI_SUCCESS == MPI_T_pvar_handle_alloc(mt_session, index, NULL,
                                                      &mt_counters[i].handle, &count);
    }
    if (!mt_counters[i].found) {
        return -1;
    }
    MPI_T_pvar_read(mt_session, mt_counters[i].handle, &value);
    return (long) value;
}

uint64_t mt_hash64(uint64_t x)
{
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t mt_fnv1a(const void *buf, size_t len, uint64_t h)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

int mt_world_rank_of(MPI_Comm comm, int rank)
{
    MPI_Group group, world_group;
    int world_rank;

    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(group, 1, &rank, world_group, &world_rank);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return world_rank;
}

int mt_all_equal_u64(uint64_t value)
{
    int equal = 1;

    if (0 == mt_rank) {
        for (int r = 1; r < mt_size; r++) {
            uint64_t other;
            MPI_Recv(&other, 1, MPI_UINT64_T, r, MT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            equal &= other == value;
        }
        for (int r = 1; r < mt_size; r++) {
            MPI_Send(&equal, 1, MPI_INT, r, MT_TAG, MPI_COMM_WORLD);
        }
    } else {
        MPI_Send(&value, 1, MPI_UINT64_T, 0, MT_TAG, MPI_COMM_WORLD);
        MPI_Recv(&equal, 1, MPI_INT, 0, MT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return equal;
}

int mt_finish(void)
{
    long total = mt_failures;

    if (0 == mt_rank) {
        for (int r = 1; r < mt_size; r++) {
            long f;
            MPI_Recv(&f, 1, MPI_LONG, r, MT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += f;
        }
        printf("mpitest %s: np %d: %s (%ld failed checks)\n", mt_name, mt_size,
               total ? "FAIL" : "PASS", total);
    } else {
        MPI_Send(&mt_failures, 1, MPI_LONG, 0, MT_TAG, MPI_COMM_WORLD);
    }
    /* Everyone learns the verdict so that every process exits with the same code. */
    if (0 == mt_rank) {
        for (int r = 1; r < mt_size; r++) {
            MPI_Send(&total, 1, MPI_LONG, r, MT_TAG, MPI_COMM_WORLD);
        }
    } else {
        MPI_Recv(&total, 1, MPI_LONG, 0, MT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (MPI_T_PVAR_SESSION_NULL != mt_session) {
        MPI_T_pvar_session_free(&mt_session);
    }
    MPI_T_finalize();
    printf("mpitest: rank %d done\n", mt_rank);
    fflush(stdout);
    MPI_Finalize();
    return total ? 1 : 0;
}

/* ---- pml/dr2's fault counters ---------------------------------------------------------- */

static const char *const mt_dr2_counter_names[] = {"pml_dr2_injected_drop",
                                                   "pml_dr2_injected_corrupt",
                                                   "pml_dr2_injected_dup", "pml_dr2_retransmits",
                                                   "pml_dr2_local_timeouts",
                                                   "pml_dr2_frags_sent",
                                                   "pml_dr2_injected_nomem",
                                                   "pml_dr2_local_sent",
                                                   "pml_dr2_frags_in_place",
                                                   "pml_dr2_stale_msgs"};
#define MT_DR2_NCOUNTERS 10
static MPI_T_pvar_session mt_dr2_session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle mt_dr2_handles[MT_DR2_NCOUNTERS];
static int mt_dr2_have_handle[MT_DR2_NCOUNTERS];

void mt_dr2_counters_start(void)
{
    MPI_T_pvar_session_create(&mt_dr2_session);
    for (int i = 0; i < MT_DR2_NCOUNTERS; i++) {
        int index, count;
        mt_dr2_have_handle[i] =
            MPI_SUCCESS == MPI_T_pvar_get_index(mt_dr2_counter_names[i], MPI_T_PVAR_CLASS_COUNTER,
                                                &index)
            && MPI_SUCCESS == MPI_T_pvar_handle_alloc(mt_dr2_session, index, NULL,
                                                      &mt_dr2_handles[i], &count);
    }
}

static long mt_dr2_counter(int i)
{
    unsigned long value = 0;

    if (mt_dr2_have_handle[i]) {
        MPI_T_pvar_read(mt_dr2_session, mt_dr2_handles[i], &value);
    }
    return (long) value;
}

long mt_dr2_injected(void)
{
    return mt_dr2_counter(0) + mt_dr2_counter(1) + mt_dr2_counter(2);
}

long mt_dr2_resent(void)
{
    return mt_dr2_counter(3);
}

long mt_dr2_local_timeouts(void)
{
    return mt_dr2_counter(4);
}

long mt_dr2_frags_sent(void)
{
    return mt_dr2_counter(5);
}

long mt_dr2_injected_nomem(void)
{
    return mt_dr2_counter(6);
}

long mt_dr2_local_sent(void)
{
    return mt_dr2_counter(7);
}

long mt_dr2_frags_in_place(void)
{
    return mt_dr2_counter(8);
}

long mt_dr2_stale_msgs(void)
{
    return mt_dr2_counter(9);
}

int mt_dr2_selected(void)
{
    return mt_dr2_have_handle[5];
}

void mt_dr2_counters_stop(void)
{
    for (int i = 0; i < MT_DR2_NCOUNTERS; i++) {
        if (mt_dr2_have_handle[i]) {
            MPI_T_pvar_handle_free(mt_dr2_session, &mt_dr2_handles[i]);
            mt_dr2_have_handle[i] = 0;
        }
    }
    if (MPI_T_PVAR_SESSION_NULL != mt_dr2_session) {
        MPI_T_pvar_session_free(&mt_dr2_session);
    }
}

unsigned char mt_pattern(int from, int n, size_t i)
{
    return (unsigned char) mt_hash64(((uint64_t) from << 48) ^ ((uint64_t) n << 32) ^ (uint64_t) i);
}

void mt_fill(unsigned char *buf, size_t len, int from, int n)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = mt_pattern(from, n, i);
    }
}

int mt_intact(const unsigned char *buf, size_t len, int from, int n, const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != mt_pattern(from, n, i)) {
            MT_CHECK(0, "%s: message %d of %zu bytes from rank %d: byte %zu is 0x%02x, expected "
                     "0x%02x", what, n, len, from, i, buf[i], mt_pattern(from, n, i));
            return 0;
        }
    }
    return 1;
}
