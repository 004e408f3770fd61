/*
 * ompi-resilience: how far apart two CPUs are, as the round trip of one cache line
 * bounced between two threads pinned to them. No MPI.
 *
 *   bench/cacheline_rtt [CPU_A CPU_B [ROUND_TRIPS]]   (default: the first two CPUs this
 *                                                       process may run on, 200000)
 *
 * Prints "cacheline_rtt CPU_A CPU_B NS" (nanoseconds per round trip, the best of 5 batches).
 * Cores sharing a cache (one CCX) bounce a line in well under 150 ns; cores further apart
 * take several times that. Shared-memory bandwidth between two ranks on those cores differs
 * as much (pml/dr2: pml_dr2_copychoice.h), so bench/run-dr2.sh measures this before and
 * after every run: on a VM, where the vCPUs land can change from one minute to the next.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) _Atomic long line;
static long round_trips = 200000;

static int pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Answers every odd value with the next even one, batches of round_trips. */
static void *answer(void *arg)
{
    int cpu = *(int *) arg;

    void *rc = 0 == pin(cpu) ? NULL : (void *) 1; /* answers anyway: nobody hangs */

    for (int batch = 0; batch < 5; batch++) {
        for (long i = 0; i < round_trips; i++) {
            long want = 2 * (batch * round_trips + i) + 1;

            while (atomic_load_explicit(&line, memory_order_acquire) != want) {
            }
            atomic_store_explicit(&line, want + 1, memory_order_release);
        }
    }
    return rc;
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int cpu[2] = {-1, -1};
    double best = 1e30;
    cpu_set_t allowed;
    pthread_t peer;
    void *peer_rc;

    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof(allowed), &allowed);
    if (argc >= 3) {
        cpu[0] = atoi(argv[1]);
        cpu[1] = atoi(argv[2]);
    } else {
        for (int c = 0, n = 0; c < CPU_SETSIZE && n < 2; c++) {
            if (CPU_ISSET(c, &allowed)) {
                cpu[n++] = c;
            }
        }
    }
    if (argc >= 4) {
        round_trips = atol(argv[3]);
    }
    for (int i = 0; i < 2; i++) {
        /* checked up front: a thread that cannot run where asked would leave the other
         * waiting for its answer forever */
        if (cpu[i] < 0 || cpu[i] >= CPU_SETSIZE || !CPU_ISSET(cpu[i], &allowed)) {
            fprintf(stderr, "cacheline_rtt: CPU %d is not one this process may run on\n",
                    cpu[i]);
            return 2;
        }
    }
    if (cpu[0] == cpu[1] || round_trips <= 0) {
        fprintf(stderr, "cacheline_rtt: need two distinct CPUs and a positive count\n");
        return 2;
    }
    if (0 != pin(cpu[0]) || 0 != pthread_create(&peer, NULL, answer, &cpu[1])) {
        fprintf(stderr, "cacheline_rtt: cannot run on CPUs %d and %d\n", cpu[0], cpu[1]);
        return 1;
    }
    for (int batch = 0; batch < 5; batch++) {
        double t0 = now_ns();

        for (long i = 0; i < round_trips; i++) {
            long send = 2 * (batch * round_trips + i) + 1;

            atomic_store_explicit(&line, send, memory_order_release);
            while (atomic_load_explicit(&line, memory_order_acquire) != send + 1) {
            }
        }
        if ((now_ns() - t0) / round_trips < best) {
            best = (now_ns() - t0) / round_trips;
        }
    }
    pthread_join(peer, &peer_rc);
    if (NULL != peer_rc) {
        fprintf(stderr, "cacheline_rtt: cannot run on CPU %d\n", cpu[1]);
        return 1;
    }
    printf("cacheline_rtt %d %d %.0f\n", cpu[0], cpu[1], best);
    return 0;
}
