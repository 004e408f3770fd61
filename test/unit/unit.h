/*
 * ompi-resilience: a minimal unit-test harness (no MPI). Each CHECK prints nothing when it
 * holds; each test case prints "ok NAME" or "not ok NAME: reason" and the runner counts them.
 */
#ifndef OMPIRES_UNIT_H
#define OMPIRES_UNIT_H

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
