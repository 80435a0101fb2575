/* tests/check.h — the few macros the C tests use to report to tests/run.sh.
 *
 * CHECK(cond, fmt, ...) prints "PASS: <what>" or "FAIL: <file>:<line>: <what>" and counts failures;
 * SKIP(fmt, ...) records a check that could not run here; CHECK_DONE() returns the exit status for main;
 * sg_test_read_file reads a test input whole; sg_test_cos_min compares two sets of embeddings.
 */
#ifndef SG_TEST_CHECK_H
#define SG_TEST_CHECK_H
#include <math.h>
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
/* The lowest cosine between rows i of a and b (n rows of d floats), and the largest |a - b| in *max_abs; a NaN
 * anywhere makes both fail any >= / <= gate. */
static inline double sg_test_cos_min(const float *a, const float *b, int n, int d, double *max_abs) {
    double mn = 2;
    *max_abs = 0;
    for (int i = 0; i < n; i++) {
        double dot = 0, na = 0, nb = 0;
        for (int j = 0; j < d; j++) {
            double x = a[(size_t)i * d + j], y = b[(size_t)i * d + j];
            dot += x * y;
            na += x * x;
            nb += y * y;
            if (!(fabs(x - y) <= *max_abs)) *max_abs = fabs(x - y);
        }
        double c = dot / sqrt(na * nb);
        if (!(c >= mn)) mn = c;
    }
    return mn;
}
#endif
