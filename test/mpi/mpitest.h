/*
 * ompi-resilience: support for tests that run under mpirun.
 *
 * A test records failures with MT_CHECK; mt_finish() gathers the failure counts with
 * point-to-point messages (never with the collectives under test), prints one verdict
 * line and returns the process exit code. Each rank prints "mpitest: rank R done" last,
 * so that the runner can name the ranks that never got there when a test hangs.
 */
#ifndef OMPIRES_MPITEST_H
#define OMPIRES_MPITEST_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

extern int mt_rank, mt_size;
extern long mt_failures;
extern const char *mt_name;

void mt_init(int *argc, char ***argv, const char *name);
/* The same with MPI_Init_thread(required): *provided is what MPI granted. */
void mt_init_thread(int *argc, char ***argv, const char *name, int required, int *provided);
int mt_finish(void);
void mt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define MT_CHECK(cond, ...)                                    \
    do {                                                       \
        if (!(cond)) {                                         \
            mt_fail(__FILE__, __LINE__, __VA_ARGS__);          \
        }                                                      \
    } while (0)

/* Value of an ftrabit MPI_T counter ("allreduce_calls" or "bcast_calls") counted from the
 * first call for that counter, or -1 when the component is not loaded. */
long mt_ftrabit_counter(const char *name);

/* pml/dr2's fault counters (MPI_T), a test's proof that faults were injected and repaired.
 * An MPI_T handle counts from its allocation: start before the traffic, read after, stop at
 * the end. Without pml/dr2 every count is 0. */
void mt_dr2_counters_start(void);
long mt_dr2_injected(void);  /* segments dropped + corrupted + duplicated by injection */
long mt_dr2_resent(void);    /* fragments retransmitted */
long mt_dr2_local_timeouts(void); /* local-completion watchdog expiries */
long mt_dr2_frags_sent(void); /* data fragments handed to the BTL, resends included */
long mt_dr2_injected_nomem(void); /* receive buffers refused (pml_dr2_inject_nomem) */
long mt_dr2_local_sent(void); /* small messages sent without the protocol (LOCAL) */
long mt_dr2_frags_in_place(void); /* fragments sent from the user's buffer */
long mt_dr2_stale_msgs(void); /* messages of a freed communicator dropped (context id reused) */
int mt_dr2_selected(void); /* 1 if pml/dr2's MPI_T counters exist (its component is loaded) */
void mt_dr2_counters_stop(void);

/* Deterministic pseudo-random numbers: the same on every rank for the same arguments. */
uint64_t mt_hash64(uint64_t x);
uint64_t mt_fnv1a(const void *buf, size_t len, uint64_t h);

/* Message data: byte i of message n from rank `from` is mt_pattern(from, n, i), the same on
 * every rank. mt_intact reports the first wrong byte of a received message (MT_CHECK, with
 * `what` naming the test step) and returns 0 then, 1 if every byte is right. */
unsigned char mt_pattern(int from, int n, size_t i);
void mt_fill(unsigned char *buf, size_t len, int from, int n);
int mt_intact(const unsigned char *buf, size_t len, int from, int n, const char *what);

/* The rank in MPI_COMM_WORLD of process `rank` of comm; MPI_UNDEFINED if it is not in this
 * process's MPI_COMM_WORLD (a process spawned by a recovery). */
int mt_world_rank_of(MPI_Comm comm, int rank);

/* True if every rank passed the same 64-bit value (compared over point-to-point). */
int mt_all_equal_u64(uint64_t value);

#endif
