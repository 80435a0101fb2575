/* tests/check.h — the few macros the C tests use to report to tests/run.sh.
 *
 * CHECK(cond, fmt, ...) prints "PASS: <what>" or "FAIL: <file>:<line>: <what>" and counts failures;
 * SKIP(fmt, ...) records a check that could not run here; CHECK_DONE() returns the exit status for main;
 * sg_test_read_file reads a test input whole.
 */
#ifndef SG_TEST_CHECK_H
#define SG_TEST_CHECK_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* The whole file at path in a malloc'd buffer (free it), its size in *len; NULL if it cannot be opened. */
static inline uint8_t *sg_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    *len = b ? fread(b, 1, n > 0 ? (size_t)n : 0, f) : 0;
    fclose(f);
    return b;
}
#endif
