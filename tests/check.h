/* tests/check.h — the few macros the C tests use to report to tests/run.sh.
 *
 * CHECK(cond, fmt, ...) prints "PASS: <what>" or "FAIL: <file>:<line>: <what>" and counts failures;
 * SKIP(fmt, ...) records a check that could not run here; CHECK_DONE() returns the exit status for main.
 */
#ifndef SG_TEST_CHECK_H
#define SG_TEST_CHECK_H
#include <stdio.h>

static int sg_check_failures;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (cond) {                                                                       \
            printf("PASS: ");                                                             \
        } else {                                                                          \
            printf("FAIL: %s:%d: ", __FILE__, __LINE__);                                  \
            sg_check_failures++;                                                          \
        }                                                                                 \
        printf(__VA_ARGS__);                                                              \
        printf("\n");                                                                     \
        fflush(stdout);                                                                   \
    } while (0)

#define SKIP(...)                                                                         \
    do {                                                                                  \
        printf("SKIP: ");                                                                 \
        printf(__VA_ARGS__);                                                              \
        printf("\n");                                                                     \
        fflush(stdout);                                                                   \
    } while (0)

#define CHECK_DONE() (sg_check_failures ? 1 : 0)
#endif
