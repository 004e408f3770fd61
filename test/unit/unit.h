/*
 * ompi-resilience: a minimal unit-test harness (no MPI). Each CHECK prints nothing when it
 * holds; each test case prints "ok NAME" or "not ok NAME: reason" and the runner counts them.
 */
#ifndef OMPIRES_UNIT_H
#define OMPIRES_UNIT_H

#include <stdint.h>
#include <stdio.h>

static int unit_case_failed;
static int unit_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            if (!unit_case_failed) {                                                 \
                printf("not ok %s: %s:%d: %s\n", unit_case_name, __FILE__, __LINE__, \
                       #cond);                                                       \
            }                                                                        \
            unit_case_failed = 1;                                                    \
        }                                                                            \
    } while (0)

static const char *unit_case_name;

/* xorshift64*: deterministic pseudo-random numbers for tests, so that a failure reproduces
 * (each test keeps its own state and seed). */
static inline uint64_t unit_xorshift64s(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1Dull;
}

#define RUN(fn)                                  \
    do {                                         \
        unit_case_name = #fn;                    \
        unit_case_failed = 0;                    \
        fn();                                    \
        if (unit_case_failed) {                  \
            unit_failures++;                     \
        } else {                                 \
            printf("ok %s\n", #fn);              \
        }                                        \
    } while (0)

#define UNIT_EXIT() return unit_failures ? 1 : 0

#endif
