/* tests/check.h — the few macros the C tests use to report to tests/run.sh.
 *
 * CHECK(cond, fmt, ...) prints "PASS: <what>" or "FAIL: <file>:<line>: <what>" and counts failures;
 * SKIP(fmt, ...) records a check that could not run here; CHECK_DONE() returns the exit status for main;
 * sg_test_read_file / sg_test_read_floats / sg_test_read_i32 read a test input whole; sg_test_clock_s reads a
 * clock (wall or CPU time) for the timing lines and sg_test_sort_doubles sorts timings for their medians; sg_test_poisoned makes a NaN-filled output buffer;
 * sg_test_cos_min compares two sets of embeddings; sg_test_splitmix64 / sg_test_normal / sg_test_frand are the
 * seeded generators the tests draw their data from (each test keeps its own state, so a
 * printed seed reproduces a run); sg_test_lab_ready SKIPs a GPU lab that is not linked or has no GPU here;
 * sg_test_xmalloc allocates or ends the test (exit 2) saying how much it could not get; sg_test_fnv1a64 hashes
 * decoded pixels as the golden and fixture lists record them.
 * The helper programs in tests/tools include it too, for the readers and the clock.
 */
#ifndef SG_TEST_CHECK_H
#define SG_TEST_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* unused: in tests/tools, which include this header only for its helpers */
static int sg_check_failures __attribute__((unused));

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

/* malloc(bytes) (at least 1 byte), or the test ends here: exit status 2, the size on stderr. */
static inline void *sg_test_xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

/* The whole file at path in a malloc'd buffer (free it), its size in bytes in *len. NULL, and *len 0, if it
 * cannot be opened, sized or read in full; an empty file gives a (1-byte) buffer and *len 0. */
static inline void *sg_test_read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    uint8_t *b = NULL;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) *len = (size_t)n;
    return b;
}
/* sg_test_read_file for a file of float32 values: their number in *count. */
static inline float *sg_test_read_floats(const char *path, size_t *count) {
    float *p = sg_test_read_file(path, count);
    *count /= sizeof(float);
    return p;
}
/* sg_test_read_file for the file of int32 values DIR/NAME: their number in *count. */
static inline int32_t *sg_test_read_i32(const char *dir, const char *name, size_t *count) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int32_t *v = sg_test_read_file(p, count);
    *count /= sizeof(int32_t);
    return v;
}
/* Seconds on clock id: CLOCK_MONOTONIC for wall time, CLOCK_THREAD_CPUTIME_ID / CLOCK_PROCESS_CPUTIME_ID for CPU time. */
static inline double sg_test_clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
/* Sorts n doubles in increasing order (timings, for medians and percentiles). */
static inline int sg_test_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static inline void sg_test_sort_doubles(double *v, size_t n) { qsort(v, n, sizeof *v, sg_test_cmp_double); }
/* FNV-1a 64 of p[0 .. n): sg_test_fnv1a64 from FNV's offset basis (the hash the goldens and the codec fixture
 * lists record: scripts/pillow_oracle.py's fnv1a64), sg_test_fnv1a64_from from h (a running hash, or another
 * starting value: tests/fuzz/dump.h). */
static inline uint64_t sg_test_fnv1a64_from(const uint8_t *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
static inline uint64_t sg_test_fnv1a64(const uint8_t *p, size_t n) {
    return sg_test_fnv1a64_from(p, n, 0xcbf29ce484222325ull);
}
/* n floats, all NaN, in a malloc'd buffer (free it): an output buffer that shows any element left unwritten. */
static inline float *sg_test_poisoned(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
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

/* splitmix64: the next 64 random bits from *state. */
static inline uint64_t sg_test_splitmix64(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* A standard normal draw (Box-Muller on two splitmix64 draws: u in (0, 1], so log(u) is finite). */
static inline double sg_test_normal(uint64_t *state) {
    double u = ((sg_test_splitmix64(state) >> 11) + 1.0) / 9007199254740993.0;
    double v = (sg_test_splitmix64(state) >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
/* Uniform in [lo, hi) from 24 bits of xorshift64* on *state (which must not be 0). */
static inline float sg_test_frand(uint64_t *state, float lo, float hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 0x2545F4914F6CDD1Dull;
    return lo + (hi - lo) * (float)((r >> 40) * (1.0 / 16777216.0));
}

/* Whether a GPU lab can run here: available is its probe (kernel/lab; in builds without CUDA the stub's answer
 * is no, with the reason; NULL is read as "built without CUDA"). If not, records
 * "SKIP: <what>: <reason>" and returns 0. */
static inline int sg_test_lab_ready(const char *what, int (*available)(char *err, size_t errlen)) {
    char why[512] = "built without CUDA";
    if (available) {
        why[0] = 0;
        if (available(why, sizeof why)) return 1;
    }
    SKIP("%s: %s", what, why);
    return 0;
}
#endif
