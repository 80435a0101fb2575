/* tests/test_selfcheck.c — the megakernel self-check (kernel/selfcheck.c) and its use by kernel/backend.c,
 * on the CPU: the cpu backend stands in for both the megakernel and the portable reference.
 *
 * What is checked, against independent expectations rather than the code's own output:
 *   - the fixed input set: deterministic, pinned by a hash (changing it must bump SG_SELFCHECK_VERSION), every
 *     image distinct, no flat or saturated images or patches;
 *   - the comparison on the tiny196 / tiny16 fixtures: the cpu backend against itself passes with cosine 1; the
 *     break wrapper at amplitude a gives the predicted cosine 1/sqrt(1 + a^2) and fails or passes on the right
 *     side of each tolerance; NaN, a scaled output, two swapped rows, a dimension mismatch fail; backend
 *     errors give ERROR and leave both backends usable;
 *   - the cache: folder from the environment, keys that change with every identity field, exact round trip,
 *     no temporary file left, corrupt / truncated / foreign / oversized files read as misses and rewritten,
 *     an unwritable folder still gives a verdict;
 *   - the policy (sg_selfcheck_vet): first run checks, second hits the cache without building a reference,
 *     another binary or device misses, a failing candidate is replaced by the reference whose output equals
 *     the plain cpu backend's bit for bit, ALWAYS / OFF, reference or candidate errors;
 *   - SIGLIP2_TEST_BREAK_BACKEND parsing, and that sg_backend_create wraps the named backend;
 *   - kernel/backend.c's auto path (sg_backend_create_with) on a fake sm_90 / sm_100 device whose "sm90",
 *     "sm100" and "cuda" constructors make cpu backends: a broken megakernel is replaced by "cuda" with the
 *     reason in the why line and a warning on stderr, and its output is the plain backend's bit for bit; a
 *     good one is kept and cached; --backend sm90 is forced and warns about a cached failure; a megakernel that
 *     cannot be created, or whose check cannot run, falls back; the MXFP8 gate applies to sm100.
 * `test_selfcheck --measure DIR` instead prints the figures behind the tolerances for the checkpoint in DIR
 * (docs/perf-notes.d/selfcheck.md).
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "kernel/backend.h"
#include "kernel/cpu/cpu_encoder.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/gpu.h"
#include "kernel/selfcheck.h"
#include "weights/model_load.h"

/* ------------------------------------------------------------------------------------------------------------
 * Helpers
 */

static const char *g_tmp;

typedef struct {
    const sg_model *m;
    int max_batch;
    int calls;
    int fail; /* 1: creation fails */
} cpu_maker;

static sg_backend *make_cpu(void *ctx, char *err, size_t errlen) {
    cpu_maker *c = ctx;
    c->calls++;
    if (c->fail) {
        snprintf(err, errlen, "reference creation refused on purpose");
        return NULL;
    }
    sg_backend_opts o = {.kind = SG_BACKEND_CPU, .max_batch = c->max_batch, .threads = 2};
    return sg_cpu_backend_create(c->m, &o, err, errlen);
}

static sg_backend *cpu(const sg_model *m, int max_batch) {
    char err[512];
    cpu_maker c = {m, max_batch, 0, 0};
    sg_backend *b = make_cpu(&c, err, sizeof err);
    if (!b) printf("cannot create the cpu backend: %s\n", err);
    return b;
}

static sg_backend *broken_cpu(const sg_model *m, int max_batch, double amp) {
    char err[512];
    sg_backend *b = sg_selfcheck_break_wrap(cpu(m, max_batch), amp, err, sizeof err);
    if (!b) printf("cannot wrap: %s\n", err);
    return b;
}

/* A misbehaving backend around the cpu backend, for faults the break wrapper does not make. */
typedef enum { EVIL_NAN, EVIL_SCALE, EVIL_SWAP, EVIL_SUBMIT_ERR, EVIL_COLLECT_ERR } evil_mode;
typedef struct {
    sg_backend *inner;
    evil_mode mode;
    int pending[SG_BACKEND_MAX_INFLIGHT], npending, batches;
} evil;

static int evil_submit(sg_backend *b, const uint8_t *px, int n, char *err, size_t errlen) {
    evil *e = b->impl;
    if (e->mode == EVIL_SUBMIT_ERR && ++e->batches == 2) {
        snprintf(err, errlen, "submit refused on purpose");
        return -1;
    }
    if (e->inner->submit(e->inner, px, n, err, errlen) != 0) return -1;
    e->pending[e->npending++] = n;
    return 0;
}

static int evil_collect(sg_backend *b, float *out, char *err, size_t errlen) {
    evil *e = b->impl;
    int rc = e->inner->collect(e->inner, out, err, errlen);
    int n = e->pending[0];
    e->pending[0] = e->pending[1];
    e->npending--;
    if (rc != 0) return rc;
    if (e->mode == EVIL_COLLECT_ERR) {
        snprintf(err, errlen, "collect failed on purpose");
        return -1;
    }
    const int D = b->dim;
    if (e->mode == EVIL_NAN && n > 1) out[(size_t)(n - 1) * D + 3] = NAN;
    if (e->mode == EVIL_SCALE)
        for (int i = 0; i < n * D; i++) out[i] *= 2.0f;
    if (e->mode == EVIL_SWAP && n > 1)
        for (int j = 0; j < D; j++) {
            float t = out[j];
            out[j] = out[D + j];
            out[D + j] = t;
        }
    return 0;
}

static void evil_destroy(sg_backend *b) {
    evil *e = b->impl;
    sg_backend_destroy(e->inner);
    free(e);
    free(b);
}

static sg_backend *evil_cpu(const sg_model *m, int max_batch, evil_mode mode) {
    sg_backend *inner = cpu(m, max_batch);
    sg_backend *b = calloc(1, sizeof *b);
    evil *e = calloc(1, sizeof *e);
    e->inner = inner;
    e->mode = mode;
    *b = *inner;
    b->impl = e;
    b->submit = evil_submit;
    b->collect = evil_collect;
    b->destroy = evil_destroy;
    return b;
}

/* Embeds check images 0..n-1 one batch at a time into out. 0 or -1. */
static int embed_fixed(sg_backend *b, int n, float *out) {
    size_t img = (size_t)b->image_size * b->image_size * 3;
    uint8_t *px = malloc(img);
    char err[512];
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        sg_selfcheck_image(i, b->image_size, px);
        rc = sg_backend_embed(b, px, 1, out + (size_t)i * b->dim, err, sizeof err);
    }
    free(px);
    return rc;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void write_text(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(s, 1, n, f);
        fclose(f);
    }
}

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------------------------------------------------
 * The fixed input set
 */

static void check_images(void) {
    const int S = 224, N = 1 + SG_SELFCHECK_BIG_BATCH, P = 16;
    const size_t img = (size_t)S * S * 3;
    uint8_t *a = malloc(img * N), *b = malloc(img);
    uint64_t h = 0xcbf29ce484222325ull;
    int flat_patches = 0, bad_stats = 0, same_pairs = 0;
    double min_sd = 1e9, max_clip = 0;
    for (int i = 0; i < N; i++) {
        uint8_t *p = a + (size_t)i * img;
        sg_selfcheck_image(i, S, p);
        h = sg_test_fnv1a64_from(p, img, h);
        double sum = 0, sq = 0;
        size_t clip = 0;
        for (size_t j = 0; j < img; j++) {
            sum += p[j];
            sq += (double)p[j] * p[j];
            clip += p[j] == 0 || p[j] == 255;
        }
        double mean = sum / img, sd = sqrt(sq / img - mean * mean);
        if (sd < min_sd) min_sd = sd;
        if ((double)clip / img > max_clip) max_clip = (double)clip / img;
        if (mean < 40 || mean > 215 || sd < 15) bad_stats++;
        for (int py = 0; py < S / P; py++) /* every 16x16 patch must carry texture or noise */
            for (int px = 0; px < S / P; px++) {
                double s1 = 0, s2 = 0;
                for (int y = py * P; y < py * P + P; y++)
                    for (int x = px * P; x < px * P + P; x++) {
                        double v = p[((size_t)y * S + x) * 3 + 1];
                        s1 += v;
                        s2 += v * v;
                    }
                if (s2 / (P * P) - (s1 / (P * P)) * (s1 / (P * P)) < 4.0) flat_patches++;
            }
        for (int j = 0; j < i; j++) {
            size_t diff = 0;
            for (size_t q = 0; q < img; q++) diff += a[(size_t)j * img + q] != p[q];
            if (diff < img / 2) same_pairs++;
        }
    }
    sg_selfcheck_image(5, S, b);
    CHECK(memcmp(b, a + 5 * img, img) == 0, "images: image 5 generated twice gives the same bytes");
    CHECK(bad_stats == 0 && flat_patches == 0,
          "images: %d images at S=224 have means in 40..215 and sd >= 15 (min sd %.1f, max clipped %.2f%%), "
          "no 16x16 patch with green variance < 4 (%d found)", N, min_sd, 100 * max_clip, flat_patches);
    CHECK(max_clip < 0.01, "images: under 1%% of the bytes sit at 0 or 255 (worst %.2f%%)", 100 * max_clip);
    CHECK(same_pairs == 0, "images: every pair of the %d images differs in over half its bytes (%d pairs do not)",
          N, same_pairs);
    /* Pin of the generator: if it changes, bump SG_SELFCHECK_VERSION (cached verdicts were made on the old
     * images) and update this value. */
    const uint64_t golden = 0xa334715fd53ea2a6ull;
    CHECK(h == golden, "images: FNV-1a of images 0..%d at S=224 is %016llx (pinned %016llx)", N - 1,
          (unsigned long long)h, (unsigned long long)golden);
    /* Degenerate sizes: exactly S*S*3 bytes written (the canary after them survives), same bytes twice. */
    uint8_t t1[27 + 8], t2[27 + 8];
    memset(t1, 0xA5, sizeof t1);
    memset(t2, 0xA5, sizeof t2);
    sg_selfcheck_image(0, 1, t1);
    sg_selfcheck_image(7, 3, t1 + 3);
    sg_selfcheck_image(0, 1, t2);
    sg_selfcheck_image(7, 3, t2 + 3);
    int canary = 1;
    for (size_t i = 30; i < sizeof t1; i++) canary &= t1[i] == 0xA5;
    CHECK(canary && memcmp(t1, t2, sizeof t1) == 0, "images: S = 1 and S = 3 write exactly S*S*3 bytes, "
          "deterministically");
    free(a);
    free(b);
}

static void check_tolerances(void) {
    double bf = sg_selfcheck_tolerance(SG_BACKEND_SM90, SG_PRECISION_AUTO);
    double fp = sg_selfcheck_tolerance(SG_BACKEND_SM100, SG_PRECISION_AUTO);
    CHECK(bf == sg_selfcheck_tolerance(SG_BACKEND_SM90, SG_PRECISION_BF16) &&
              bf == sg_selfcheck_tolerance(SG_BACKEND_SM100, SG_PRECISION_BF16) &&
              fp == sg_selfcheck_tolerance(SG_BACKEND_SM90, SG_PRECISION_FP8) &&
              fp == sg_selfcheck_tolerance(SG_BACKEND_SM100, SG_PRECISION_FP8),
          "tolerance: bf16 gate %.6g for sm90 (auto, bf16) and sm100 bf16; MXFP8 gate %.6g for sm100 auto and fp8",
          bf, fp);
    /* Measured on the 33 check images, full-size random checkpoint (test_selfcheck --measure, perf-notes.d):
     * bf16 numerics 1-cos <= 2.42e-5 to fp32, so two bf16 paths differ by <= 4 x 2.42e-5 ~ 1e-4 (angles add);
     * every Linear in MXFP8 6.04e-3; two different check images' embeddings have cosine up to 0.9855, which
     * both gates must reject so that swapped rows are caught. */
    CHECK(1 - bf > 1e-4 * 2 && 1 - fp > 6.04e-3 * 1.4 && fp > 0.9855 && bf > fp,
          "tolerance: gates leave margin over the measured numerics (bf16 1-cos %.1e > 2e-4; MXFP8 %.1e > 8.5e-3) "
          "and stay above the 0.9855 cosine of two different check images", 1 - bf, 1 - fp);
}

/* ------------------------------------------------------------------------------------------------------------
 * The comparison
 */

/* full = 0: only the checks that need S = 224 (cpu vs cpu, one break, row swap, other shape); the rest runs on
 * the 32-pixel fixture, where a check costs milliseconds instead of a second (and minutes under ASan). */
static void check_compare(const sg_model *m, const sg_model *m_other, const char *name, int full) {
    sg_selfcheck_result r;
    const double bf = sg_selfcheck_tolerance(SG_BACKEND_SM90, SG_PRECISION_AUTO);
    const double fp = sg_selfcheck_tolerance(SG_BACKEND_SM100, SG_PRECISION_AUTO);
    sg_backend *ref = cpu(m, 40), *c = cpu(m, 40);
    if (!ref || !c) {
        CHECK(0, "%s: cpu backends", name);
        return;
    }
    sg_selfcheck_compare(c, ref, bf, &r);
    CHECK(r.verdict == SG_SELFCHECK_PASS && r.images == 1 + SG_SELFCHECK_BIG_BATCH && r.worst_cos > 1 - 1e-12 &&
              fabs(r.worst_norm_ratio - 1) < 1e-12,
          "%s: cpu vs cpu, max batch 40: pass on %d images (1 + 32), worst cos %.15f, length ratio %.15f: %s", name,
          r.images, r.worst_cos, r.worst_norm_ratio, r.reason);
    sg_backend_destroy(c);

    int mbs[] = {1, 5};
    for (int t = 0; full && t < 2; t++) {
        c = cpu(m, mbs[t]);
        sg_selfcheck_compare(c, ref, bf, &r);
        CHECK(r.verdict == SG_SELFCHECK_PASS && r.images == 1 + mbs[t],
              "%s: candidate max batch %d: the check uses batches 1 and %d (%d images): %s", name, mbs[t], mbs[t],
              r.images, r.reason);
        sg_backend_destroy(c);
    }

    struct {
        double amp, tol;
        int pass;
    } cases[] = {{0.5, bf, 0}, {0.5, fp, 0}, {0.05, bf, 0}, {0.05, fp, 1}, {0.01, bf, 1}};
    for (size_t t = 0; t < (full ? sizeof cases / sizeof cases[0] : 1); t++) {
        c = broken_cpu(m, 40, cases[t].amp);
        sg_selfcheck_compare(c, ref, cases[t].tol, &r);
        double want = 1 / sqrt(1 + cases[t].amp * cases[t].amp);
        int ok = (r.verdict == SG_SELFCHECK_PASS) == cases[t].pass &&
                 (cases[t].pass ? 1 : r.verdict == SG_SELFCHECK_FAIL && strstr(r.reason, "cosine") != NULL);
        /* per-row cosine: the sign pattern is not orthogonal to a given row, so allow 1 - cos within 30 % */
        int near = fabs((1 - r.worst_cos) - (1 - want)) < 0.3 * (1 - want);
        CHECK(ok && near,
              "%s: break amplitude %.2g at tolerance %.6g: %s as predicted (worst cos %.6f, predicted %.6f): %s",
              name, cases[t].amp, cases[t].tol, cases[t].pass ? "pass" : "fail", r.worst_cos, want, r.reason);
        sg_backend_destroy(c);
    }

    const struct {
        evil_mode mode;
        sg_selfcheck_verdict want;
        const char *what, *word;
    } ev[] = {{EVIL_NAN, SG_SELFCHECK_FAIL, "a NaN in the last row of the big batch", "non-finite"},
              {EVIL_SCALE, SG_SELFCHECK_FAIL, "every output doubled (cosine 1)", "length ratio"},
              {EVIL_SWAP, SG_SELFCHECK_FAIL, "rows 0 and 1 of the big batch swapped", "cosine"},
              {EVIL_SUBMIT_ERR, SG_SELFCHECK_ERROR, "an error on the second submit", "could not embed"},
              {EVIL_COLLECT_ERR, SG_SELFCHECK_ERROR, "an error on collect", "could not embed"}};
    for (size_t t = 0; t < sizeof ev / sizeof ev[0]; t++) {
        if (!full && ev[t].mode != EVIL_SWAP) continue;
        c = evil_cpu(m, 40, ev[t].mode);
        sg_selfcheck_compare(c, ref, fp, &r);
        CHECK(r.verdict == ev[t].want && strstr(r.reason, ev[t].word), "%s: candidate with %s: %s, reason names '%s': %s",
              name, ev[t].what, ev[t].want == SG_SELFCHECK_FAIL ? "FAIL" : "ERROR", ev[t].word, r.reason);
        /* the reference is left idle: it still embeds */
        float out[1024];
        CHECK(ref->dim <= 1024 && embed_fixed(ref, 1, out) == 0, "%s: the reference is usable after that", name);
        sg_backend_destroy(c);
    }
    /* reference errors are ERROR, not FAIL: the candidate is not to blame */
    c = cpu(m, 40);
    if (full) {
        sg_backend *bad_ref = evil_cpu(m, 40, EVIL_COLLECT_ERR);
        sg_selfcheck_compare(c, bad_ref, bf, &r);
        CHECK(r.verdict == SG_SELFCHECK_ERROR && strstr(r.reason, "reference"),
              "%s: a reference that errors: ERROR: %s", name, r.reason);
        sg_backend_destroy(bad_ref);
    }
    if (m_other) {
        sg_backend *o = cpu(m_other, 4);
        sg_selfcheck_compare(o, ref, bf, &r);
        CHECK(r.verdict == SG_SELFCHECK_FAIL && strstr(r.reason, "dim"), "%s: a candidate of another shape: FAIL: %s",
              name, r.reason);
        sg_backend_destroy(o);
    }
    sg_backend_destroy(c);
    sg_backend_destroy(ref);
}

/* ------------------------------------------------------------------------------------------------------------
 * Cache
 */

static sg_gpu_info fake_gpu(void) {
    sg_gpu_info g;
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "NVIDIA H100 80GB HBM3");
    g.cc_major = 9;
    g.device_count = 1;
    g.driver_version = 13000;
    g.runtime_version = 13000;
    snprintf(g.uuid, sizeof g.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    snprintf(g.pci_bus_id, sizeof g.pci_bus_id, "0000:1e:00.0");
    return g;
}

static void check_env_dirs(void) {
    char d[4096], want[4096];
    const char *home = getenv("HOME");
    char *save_home = home ? strdup(home) : NULL;
    setenv("SIGLIP2_CACHE_DIR", "/some/where", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    CHECK(sg_selfcheck_cache_dir(d, sizeof d) == 0 && strcmp(d, "/some/where") == 0,
          "cache dir: SIGLIP2_CACHE_DIR wins (%s)", d);
    unsetenv("SIGLIP2_CACHE_DIR");
    CHECK(sg_selfcheck_cache_dir(d, sizeof d) == 0 && strcmp(d, "/xdg/siglip2-embed") == 0,
          "cache dir: else $XDG_CACHE_HOME/siglip2-embed (%s)", d);
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "/home/u", 1);
    snprintf(want, sizeof want, "/home/u/.cache/siglip2-embed");
    CHECK(sg_selfcheck_cache_dir(d, sizeof d) == 0 && strcmp(d, want) == 0,
          "cache dir: a relative XDG_CACHE_HOME is ignored (XDG spec): %s", d);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK(sg_selfcheck_cache_dir(d, sizeof d) == -1 && d[0] == 0, "cache dir: none without SIGLIP2_CACHE_DIR, "
          "XDG_CACHE_HOME and HOME");
    char small[8];
    setenv("SIGLIP2_CACHE_DIR", "/a/long/path", 1);
    CHECK(sg_selfcheck_cache_dir(small, sizeof small) == -1, "cache dir: a name too long for the buffer is refused");
    setenv("SIGLIP2_CACHE_DIR", g_tmp, 1);
    if (save_home) setenv("HOME", save_home, 1);
    free(save_home);
}

static void check_keys(const sg_model *m) {
    char bin[1600], k0[8192], k1[8192];
    int rc = sg_selfcheck_binary_id(bin, sizeof bin);
    CHECK(rc == 0 && strstr(bin, "test_selfcheck") && strstr(bin, "inode"), "binary id: %s", bin);
    sg_gpu_info g = fake_gpu();
    sg_selfcheck_key(&g, bin, m, "sm90", SG_PRECISION_AUTO, 32, k0, sizeof k0);
    int differ = 0, total = 0;
#define KEY_DIFFERS(mutate, label, prec, mb)                                                            \
    do {                                                                                                \
        sg_gpu_info g2 = fake_gpu();                                                                    \
        char b2[1600];                                                                                  \
        snprintf(b2, sizeof b2, "%s", bin);                                                             \
        mutate;                                                                                         \
        sg_selfcheck_key(&g2, b2, m, label, prec, mb, k1, sizeof k1);                                   \
        total++;                                                                                        \
        if (strcmp(k0, k1) != 0) differ++;                                                              \
        else printf("key did not change with: %s\n", #mutate " " #label " " #prec " " #mb);             \
    } while (0)
    KEY_DIFFERS(g2.name[0] = 'X', "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS(g2.cc_minor = 1, "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS(g2.uuid[5] = 'f', "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS(g2.pci_bus_id[6] = '2', "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS(g2.driver_version = 13010, "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS(b2[strlen(b2) - 1] ^= 1, "sm90", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS((void)0, "sm100", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS((void)0, "sm90+break0.5", SG_PRECISION_AUTO, 32);
    KEY_DIFFERS((void)0, "sm90", SG_PRECISION_FP8, 32);
    KEY_DIFFERS((void)0, "sm90", SG_PRECISION_BF16, 32);
    KEY_DIFFERS((void)0, "sm90", SG_PRECISION_AUTO, 8);
#undef KEY_DIFFERS
    CHECK(differ == total, "key: changes with device name, cc, UUID, PCI id, driver, binary, backend label, "
          "precision, batch plan (%d of %d)", differ, total);
    sg_selfcheck_key(&g, bin, m, "sm90", SG_PRECISION_AUTO, 256, k1, sizeof k1);
    CHECK(strcmp(k0, k1) == 0, "key: max batch 32 and 256 share a key (both check batches 1 and 32)");
    sg_gpu_info g3 = fake_gpu();
    snprintf(g3.name, sizeof g3.name, "evil\nname\x7f");
    sg_selfcheck_key(&g3, bin, m, "sm90", SG_PRECISION_AUTO, 32, k1, sizeof k1);
    CHECK(!strchr(k1, '\n') && !strchr(k1, 0x7f) && strstr(k1, "evil?name?"), "key: control characters become '?'");
    sg_model m2 = *m;
    snprintf(m2.path, sizeof m2.path, "%s/no-such-file.safetensors", g_tmp);
    CHECK(sg_selfcheck_key(&g, bin, &m2, "sm90", SG_PRECISION_AUTO, 32, k1, sizeof k1) == -1,
          "key: refused when the weights file cannot be stat'ed");
    char tiny[64];
    CHECK(sg_selfcheck_key(&g, bin, m, "sm90", SG_PRECISION_AUTO, 32, tiny, sizeof tiny) == -1,
          "key: refused when it does not fit (a cut key could match another)");
}

static void check_store_load(void) {
    char dir[4096], path[4200], note[1024], err[512];
    snprintf(dir, sizeof dir, "%s/cache-a/deeper", g_tmp);
    const char *key = "v1 device [test] | backend sm90";
    sg_selfcheck_result w, r;
    memset(&w, 0, sizeof w);
    w.verdict = SG_SELFCHECK_FAIL;
    w.images = 33;
    w.worst_image = 7;
    w.worst_cos = 0.93123456789012345;
    w.worst_norm_ratio = 1.0000123456789;
    w.tolerance = 0.9995;
    snprintf(w.reason, sizeof w.reason, "image 7 cosine 0.931235 < 0.9995\nsecond line");
    CHECK(sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0, "cache: miss before anything is stored: %s",
          note);
    int rc = sg_selfcheck_cache_store(dir, key, &w, err, sizeof err);
    CHECK(rc == 0, "cache: store creates missing folders and writes%s%s", rc ? ": " : "", rc ? err : "");
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "cache: the folder it made is private (mode %o)",
          st.st_mode & 0777);
    CHECK(count_files(dir, ".selfcheck-tmp") == 0 && count_files(dir, "selfcheck-") == 1,
          "cache: one verdict file, no temporary file left behind");
    memset(&r, 0x55, sizeof r);
    int hit = sg_selfcheck_cache_load(dir, key, &r, note, sizeof note);
    CHECK(hit == 1 && r.cached == 1 && r.verdict == SG_SELFCHECK_FAIL && r.images == 33 && r.worst_image == 7 &&
              r.worst_cos == w.worst_cos && r.worst_norm_ratio == w.worst_norm_ratio && r.tolerance == w.tolerance &&
              strcmp(r.reason, "image 7 cosine 0.931235 < 0.9995 second line") == 0,
          "cache: exact round trip of verdict, counts and doubles; newline in the reason flattened (%s)", r.reason);
    CHECK(sg_selfcheck_cache_load(dir, "v1 another key", &r, note, sizeof note) == 0,
          "cache: another key misses: %s", note);

    /* A file at key's name that holds another key (as after a hash collision) is a miss. */
    sg_selfcheck_cache_path(dir, key, path, sizeof path);
    size_t len = 0;
    uint8_t *good = sg_test_read_file(path, &len);
    char other[4096];
    int n = snprintf(other, sizeof other, "siglip2-embed self-check verdict\nkey v1 other\nverdict pass\nimages 33\n"
                     "worst_image 1\nworst_cos 1\nworst_norm_ratio 1\ntolerance 0.9995\nreason x\nend\n");
    write_text(path, other, (size_t)n);
    CHECK(sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0 && strstr(note, "another key"),
          "cache: a file holding another key is a miss: %s", note);

    /* Corrupt versions of the good file: each must be a miss, never a crash or a wrong hit. */
    const char *edits[][2] = {{"verdict fail", "verdict maybe"},   {"worst_cos 0.93", "worst_cos abc0.93"},
                              {"images 33", "images 3.5"},         {"siglip2-embed self", "siglip2-embed SELF"},
                              {"tolerance ", "tolerance"},         {"worst_image 7", "worst_image 7x"}};
    int misses = 0, cases = 0;
    for (size_t t = 0; good && t < sizeof edits / sizeof edits[0]; t++) {
        char buf[8192];
        snprintf(buf, sizeof buf, "%.*s", (int)len, (const char *)good);
        char *at = strstr(buf, edits[t][0]);
        if (!at) {
            printf("edit %zu: '%s' not in the file\n", t, edits[t][0]);
            continue;
        }
        char out[8300];
        int k = snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, edits[t][1], at + strlen(edits[t][0]));
        write_text(path, out, (size_t)k);
        cases++;
        if (sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0) misses++;
        else printf("edit %zu was read as a hit\n", t);
    }
    for (size_t cut = 0; good && cut < len; cut += len / 7 + 1) { /* truncations, the empty file included */
        write_text(path, (const char *)good, cut);
        cases++;
        if (sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0) misses++;
        else printf("truncation at %zu was read as a hit\n", cut);
    }
    if (good) {
        char bin[64];
        memcpy(bin, good, 32);
        bin[10] = 0;
        write_text(path, bin, 32);
        cases++;
        misses += sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0;
        char *big = malloc(20000);
        memset(big, 'a', 20000);
        memcpy(big, good, len);
        write_text(path, big, 20000);
        cases++;
        misses += sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 0;
        free(big);
    }
    CHECK(good && cases == misses && cases >= 14, "cache: %d corrupt, truncated, binary or oversized files: all "
          "read as misses (%d)", cases, misses);
    write_text(path, (const char *)good, len);
    CHECK(sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) == 1, "cache: the good file restored is a hit");
    free(good);

    w.verdict = SG_SELFCHECK_ERROR;
    CHECK(sg_selfcheck_cache_store(dir, key, &w, err, sizeof err) == -1, "cache: ERROR verdicts are not stored: %s",
          err);
    char blocked[4200];
    snprintf(blocked, sizeof blocked, "%s/a-file", g_tmp);
    write_text(blocked, "x", 1);
    snprintf(blocked, sizeof blocked, "%s/a-file/sub", g_tmp);
    w.verdict = SG_SELFCHECK_PASS;
    err[0] = 0;
    CHECK(sg_selfcheck_cache_store(blocked, key, &w, err, sizeof err) == -1 && err[0],
          "cache: a folder that cannot be made fails cleanly: %s", err);
}

/* ------------------------------------------------------------------------------------------------------------
 * Policy
 */

static void check_vet(const sg_model *m) {
    char dir[4096], path[4200], k_a[] = "v1 test key A", k_b[] = "v1 test key B (other binary)",
                                k_c[] = "v1 test key C (broken candidate)";
    snprintf(dir, sizeof dir, "%s/vet-cache", g_tmp);
    const double bf = sg_selfcheck_tolerance(SG_BACKEND_SM90, SG_PRECISION_AUTO);
    cpu_maker mk = {m, 40, 0, 0};
    sg_selfcheck_ctx c = {dir, k_a, SG_SELFCHECK_CACHED, bf, make_cpu, &mk};
    sg_selfcheck_result r;

    sg_backend *cand = cpu(m, 40);
    sg_backend *got = sg_selfcheck_vet(cand, &c, &r);
    sg_selfcheck_cache_path(dir, k_a, path, sizeof path);
    CHECK(got == cand && r.verdict == SG_SELFCHECK_PASS && !r.cached && mk.calls == 1 && file_exists(path) &&
              strstr(r.cache_note, "written"),
          "vet: first run checks against one reference, passes, keeps the candidate, writes the verdict (%s; %s)",
          r.reason, r.cache_note);
    sg_backend_destroy(got);

    cand = cpu(m, 40);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got == cand && r.verdict == SG_SELFCHECK_PASS && r.cached && r.seconds == 0 && mk.calls == 1,
          "vet: second run hits the cache: no reference built, no embedding (%s)", r.cache_note);
    sg_backend_destroy(got);

    c.key = k_b;
    cand = cpu(m, 40);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got == cand && !r.cached && mk.calls == 2, "vet: another key (binary or device) misses and checks again");
    sg_backend_destroy(got);

    c.key = k_a;
    c.mode = SG_SELFCHECK_ALWAYS;
    cand = cpu(m, 40);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got == cand && !r.cached && mk.calls == 3, "vet: SIGLIP2_SELFCHECK=always checks despite a cached pass");
    sg_backend_destroy(got);

    c.mode = SG_SELFCHECK_OFF;
    cand = broken_cpu(m, 40, 0.5);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got == cand && r.verdict == SG_SELFCHECK_SKIPPED && mk.calls == 3,
          "vet: SIGLIP2_SELFCHECK=off keeps even a broken candidate, unchecked: %s", r.reason);
    sg_backend_destroy(got);

    /* A broken candidate: the reference replaces it, and it is exactly the plain cpu backend. */
    c.mode = SG_SELFCHECK_CACHED;
    c.key = k_c;
    const int N = 3;
    float *want = malloc((size_t)N * m->cfg.hidden_size * sizeof(float));
    float *have = malloc((size_t)N * m->cfg.hidden_size * sizeof(float));
    sg_backend *plain = cpu(m, 40);
    embed_fixed(plain, N, want);
    sg_backend_destroy(plain);
    cand = broken_cpu(m, 40, 0.5);
    got = sg_selfcheck_vet(cand, &c, &r);
    int same = got && got != cand && embed_fixed(got, N, have) == 0 &&
               memcmp(have, want, (size_t)N * m->cfg.hidden_size * sizeof(float)) == 0;
    CHECK(r.verdict == SG_SELFCHECK_FAIL && !r.cached && same && mk.calls == 4 && strstr(r.reason, "cosine"),
          "vet: a broken candidate fails (%s); the backend returned is the reference, bit-identical to a plain cpu "
          "backend", r.reason);
    sg_backend_destroy(got);
    cand = broken_cpu(m, 40, 0.5);
    got = sg_selfcheck_vet(cand, &c, &r);
    /* (cand is freed by now, and the reference may reuse its address: only the output tells them apart) */
    same = got && embed_fixed(got, N, have) == 0 &&
           memcmp(have, want, (size_t)N * m->cfg.hidden_size * sizeof(float)) == 0;
    CHECK(r.verdict == SG_SELFCHECK_FAIL && r.cached && r.seconds == 0 && same && mk.calls == 5,
          "vet: the cached FAIL is used: the candidate is dropped, a fresh reference returned, no embedding run (%s)",
          r.cache_note);
    sg_backend_destroy(got);

    /* A corrupt verdict file: checked again and rewritten. */
    c.key = k_a;
    sg_selfcheck_cache_path(dir, k_a, path, sizeof path);
    write_text(path, "siglip2-embed self-check verdict\nkey v1 test key A\nverdict pa", 60);
    cand = cpu(m, 40);
    got = sg_selfcheck_vet(cand, &c, &r);
    sg_selfcheck_result again;
    CHECK(got == cand && !r.cached && r.verdict == SG_SELFCHECK_PASS && mk.calls == 6 &&
              sg_selfcheck_cache_load(dir, k_a, &again, NULL, 0) == 1,
          "vet: a corrupt verdict file means check again and rewrite (%s)", r.cache_note);
    sg_backend_destroy(got);

    /* No usable cache: still a verdict. */
    char blocked[4200];
    snprintf(blocked, sizeof blocked, "%s/blocker", g_tmp);
    write_text(blocked, "x", 1);
    snprintf(blocked, sizeof blocked, "%s/blocker/cache", g_tmp);
    c.cache_dir = blocked;
    cand = broken_cpu(m, 40, 0.5);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got && got != cand && r.verdict == SG_SELFCHECK_FAIL && strstr(r.cache_note, "not cached"),
          "vet: an unwritable cache folder still gives a verdict and the fallback (%s)", r.cache_note);
    sg_backend_destroy(got);
    c.cache_dir = NULL;
    cand = cpu(m, 40);
    got = sg_selfcheck_vet(cand, &c, &r);
    CHECK(got == cand && r.verdict == SG_SELFCHECK_PASS && strstr(r.cache_note, "not cached"),
          "vet: no cache folder at all: checks every time (%s)", r.cache_note);
    sg_backend_destroy(got);

    /* Errors: nothing cached, NULL returned, everything freed (LeakSanitizer checks the last part). */
    c.cache_dir = dir;
    c.key = "v1 test key D (errors)";
    mk.fail = 1;
    got = sg_selfcheck_vet(cpu(m, 40), &c, &r);
    CHECK(!got && r.verdict == SG_SELFCHECK_ERROR && strstr(r.reason, "refused on purpose"),
          "vet: the reference cannot be created: ERROR, no backend: %s", r.reason);
    mk.fail = 0;
    got = sg_selfcheck_vet(evil_cpu(m, 40, EVIL_SUBMIT_ERR), &c, &r);
    sg_selfcheck_cache_path(dir, c.key, path, sizeof path);
    CHECK(!got && r.verdict == SG_SELFCHECK_ERROR && !file_exists(path),
          "vet: the candidate errors: ERROR, no backend, nothing cached: %s", r.reason);
    free(want);
    free(have);
}

static void check_env_parsing(const sg_model *m) {
    unsetenv("SIGLIP2_SELFCHECK");
    int ok = sg_selfcheck_mode_from_env() == SG_SELFCHECK_CACHED;
    setenv("SIGLIP2_SELFCHECK", "always", 1);
    ok &= sg_selfcheck_mode_from_env() == SG_SELFCHECK_ALWAYS;
    setenv("SIGLIP2_SELFCHECK", "off", 1);
    ok &= sg_selfcheck_mode_from_env() == SG_SELFCHECK_OFF;
    setenv("SIGLIP2_SELFCHECK", "auto", 1);
    ok &= sg_selfcheck_mode_from_env() == SG_SELFCHECK_CACHED;
    setenv("SIGLIP2_SELFCHECK", "OFF please", 1);
    ok &= sg_selfcheck_mode_from_env() == SG_SELFCHECK_CACHED;
    unsetenv("SIGLIP2_SELFCHECK");
    CHECK(ok, "SIGLIP2_SELFCHECK: unset/auto → cached, always, off; anything else → cached with a warning");

    struct {
        const char *env, *name;
        double want;
    } t[] = {{"sm90", "sm90", SG_SELFCHECK_BREAK_DEFAULT},
             {"sm90", "sm100", 0},
             {"sm900", "sm90", 0},
             {"sm9", "sm90", 0},
             {"sm90:0.05,sm100", "sm90", 0.05},
             {"sm90:0.05,sm100", "sm100", SG_SELFCHECK_BREAK_DEFAULT},
             {"cuda,sm100:2", "sm100", 2},
             {"cpu:abc", "cpu", SG_SELFCHECK_BREAK_DEFAULT},
             {"cpu:-1", "cpu", SG_SELFCHECK_BREAK_DEFAULT},
             {"cpu:", "cpu", SG_SELFCHECK_BREAK_DEFAULT},
             {",,cpu", "cpu", SG_SELFCHECK_BREAK_DEFAULT},
             {"", "cpu", 0}};
    int bad = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        setenv("SIGLIP2_TEST_BREAK_BACKEND", t[i].env, 1);
        double a = sg_selfcheck_break_amplitude(t[i].name);
        if (a != t[i].want) {
            printf("SIGLIP2_TEST_BREAK_BACKEND='%s' for %s: got %g, want %g\n", t[i].env, t[i].name, a, t[i].want);
            bad++;
        }
    }
    unsetenv("SIGLIP2_TEST_BREAK_BACKEND");
    CHECK(bad == 0 && sg_selfcheck_break_amplitude("cpu") == 0,
          "SIGLIP2_TEST_BREAK_BACKEND: names, amplitudes, lists and malformed values parse as documented");

    /* sg_backend_create wraps the backend it names: --backend cpu with the variable set gives other numbers. */
    char why[1024], err[1024];
    const int D = m->cfg.hidden_size;
    float *plain = malloc(2 * (size_t)D * sizeof(float)), *broken = malloc(2 * (size_t)D * sizeof(float));
    sg_backend_opts o = {.kind = SG_BACKEND_CPU, .max_batch = 4, .threads = 2};
    sg_backend *b = sg_backend_create(m, &o, why, sizeof why, err, sizeof err);
    int ok1 = b && embed_fixed(b, 2, plain) == 0;
    sg_backend_destroy(b);
    setenv("SIGLIP2_TEST_BREAK_BACKEND", "cpu", 1);
    b = sg_backend_create(m, &o, why, sizeof why, err, sizeof err);
    int ok2 = b && strcmp(b->name, "cpu") == 0 && embed_fixed(b, 2, broken) == 0;
    sg_backend_destroy(b);
    unsetenv("SIGLIP2_TEST_BREAK_BACKEND");
    double dot = 0, na = 0, nb = 0;
    for (int j = 0; j < D; j++) {
        dot += (double)plain[j] * broken[j];
        na += (double)plain[j] * plain[j];
        nb += (double)broken[j] * broken[j];
    }
    double cs = dot / sqrt(na * nb);
    CHECK(ok1 && ok2 && fabs(cs - 1 / sqrt(1.25)) < 0.05,
          "sg_backend_create(--backend cpu) with SIGLIP2_TEST_BREAK_BACKEND=cpu: named cpu, output perturbed "
          "(cosine to the plain output %.4f, predicted %.4f)", cs, 1 / sqrt(1.25));
    free(plain);
    free(broken);
}

/* ------------------------------------------------------------------------------------------------------------
 * kernel/backend.c's auto path on a fake GPU
 */

static int g_fake_fail; /* bit k set: constructor of kind k refuses */

/* "sm90", "sm100" and "cuda" are cpu backends under those names (the name field is the backend's own). */
static sg_backend *fake_ctor(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, char *err,
                             size_t errlen) {
    static const char *const names[] = {"auto", "cpu", "cuda", "sm90", "sm100"};
    if (g_fake_fail & (1 << k)) {
        snprintf(err, errlen, "fake %s refuses on purpose", names[k]);
        return NULL;
    }
    sg_backend_opts c = *o;
    c.threads = 2;
    sg_backend *b = sg_cpu_backend_create(m, &c, err, errlen);
    if (b) b->name = names[k];
    return b;
}

/* Redirects stderr into a file until stderr_end, which returns what was written (malloc'd). */
static int stderr_begin(const char *path) {
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static char *stderr_end(int saved, const char *path) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t n = 0;
    uint8_t *b = sg_test_read_file(path, &n);
    char *s = malloc(n + 1);
    if (b) memcpy(s, b, n);
    s[n] = 0;
    free(b);
    return s;
}

typedef struct {
    sg_backend *b;
    char why[2048], err[1024];
    char *log; /* stderr during creation */
} created;

static void create_on(created *c, const sg_model *m, sg_backend_kind kind, sg_precision prec, const sg_gpu_info *g) {
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr.txt", g_tmp);
    sg_backend_opts o = {.kind = kind, .max_batch = 8, .threads = 2, .precision = prec};
    c->why[0] = c->err[0] = 0;
    int saved = stderr_begin(path);
    c->b = sg_backend_create_with(m, &o, g, "no GPU in this test", fake_ctor, c->why, sizeof c->why, c->err,
                                  sizeof c->err);
    c->log = stderr_end(saved, path);
}

static void created_free(created *c) {
    sg_backend_destroy(c->b);
    free(c->log);
}

static void check_auto_policy(const sg_model *m) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/auto-cache", g_tmp);
    setenv("SIGLIP2_CACHE_DIR", dir, 1);
    setenv("SIGLIP2_SELFCHECK_VERBOSE", "1", 1);
    sg_gpu_info h100 = fake_gpu(), b200 = fake_gpu();
    snprintf(b200.name, sizeof b200.name, "NVIDIA B200");
    b200.cc_major = 10;
    const int N = 3, D = m->cfg.hidden_size;
    float *want = malloc((size_t)N * D * sizeof(float)), *have = malloc((size_t)N * D * sizeof(float));
    sg_backend *plain = cpu(m, 8);
    embed_fixed(plain, N, want);

    sg_backend_destroy(plain);
#define SAME_AS_PLAIN(b) ((b) && embed_fixed((b), N, have) == 0 && memcmp(have, want, (size_t)N * D * sizeof(float)) == 0)
    created c;

    setenv("SIGLIP2_TEST_BREAK_BACKEND", "sm90", 1);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "cuda") == 0 && strstr(c.why, "sm90 failed its self-check (image ") &&
              strstr(c.why, "< 0.9995), using cuda") && strstr(c.log, "warning: the sm90 megakernel failed its "
              "self-check") && SAME_AS_PLAIN(c.b),
          "auto on sm_90, sm90 broken: cuda used, output == plain backend bit for bit; why: %s", c.why);
    created_free(&c);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "cuda") == 0 && strstr(c.why, ", cached), using cuda") &&
              strstr(c.log, "self-check of sm90 against cuda: FAILED (cached)") && strstr(c.log, "warning:") &&
              SAME_AS_PLAIN(c.b),
          "auto again: the FAIL comes from the cache, warned again, cuda used");
    created_free(&c);
    create_on(&c, m, SG_BACKEND_SM90, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "sm90") == 0 && !SAME_AS_PLAIN(c.b) &&
              strstr(c.log, "sm90 failed its self-check on this GPU before") &&
              !strstr(c.log, "self-check of sm90 against cuda"),
          "--backend sm90, broken: forced (no check, no fallback, broken output), warns about the cached failure");
    created_free(&c);

    unsetenv("SIGLIP2_TEST_BREAK_BACKEND");
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "sm90") == 0 && strstr(c.why, "self-check passed") &&
              !strstr(c.why, "cached") && strstr(c.log, "self-check of sm90 against cuda: passed (") &&
              strstr(c.log, "verdict written to") && !strstr(c.log, "warning") && SAME_AS_PLAIN(c.b),
          "auto on sm_90, sm90 sound: sm90 kept, check ran and was cached; why: %s", c.why);
    created_free(&c);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "sm90") == 0 && strstr(c.why, "self-check passed (cached)") &&
              strstr(c.log, "passed (cached)"),
          "auto again: sm90, verdict from the cache");
    created_free(&c);
    create_on(&c, m, SG_BACKEND_SM90, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "sm90") == 0 && c.log[0] == 0, "--backend sm90, sound, cached pass: no warning");
    created_free(&c);

    g_fake_fail = 1 << SG_BACKEND_SM90;
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100);
    CHECK(c.b && strcmp(c.b->name, "cuda") == 0 && strstr(c.why, "sm90 unavailable (fake sm90 refuses on purpose), "
          "using cuda") && SAME_AS_PLAIN(c.b), "auto, sm90 cannot be created: cuda, and why says so: %s", c.why);
    created_free(&c);

    g_fake_fail = 1 << SG_BACKEND_CUDA;
    setenv("SIGLIP2_TEST_BREAK_BACKEND", "sm90", 1);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_BF16, &h100);
    CHECK(c.b && strcmp(c.b->name, "cpu") == 0 && strstr(c.why, "sm90 unavailable (its self-check could not run") &&
              strstr(c.why, "cuda unavailable (fake cuda refuses on purpose), using cpu") && SAME_AS_PLAIN(c.b),
          "auto, no reference for the check: the megakernel is not trusted, chain goes on to cpu: %s", c.why);
    created_free(&c);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &h100); /* this key holds a cached FAIL */
    CHECK(c.b && strcmp(c.b->name, "cpu") == 0 && strstr(c.why, "cached), using cuda; cuda unavailable (fake cuda") &&
              SAME_AS_PLAIN(c.b),
          "auto, cached FAIL and no cuda to fall back to: the chain goes on to cpu: %s", c.why);
    created_free(&c);
    g_fake_fail = 0;

    /* The MXFP8 gate on sm100 (precision auto): a 0.05 perturbation (cos 0.99875) passes it, not the bf16 gate. */
    setenv("SIGLIP2_TEST_BREAK_BACKEND", "sm100:0.05", 1);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, &b200);
    int ok1 = c.b && strcmp(c.b->name, "sm100") == 0 && strstr(c.why, "Blackwell") && strstr(c.why, "passed");
    created_free(&c);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_BF16, &b200);
    int ok2 = c.b && strcmp(c.b->name, "cuda") == 0 && strstr(c.why, "sm100 failed its self-check");
    CHECK(ok1 && ok2, "auto on sm_100: a perturbation of cos 0.99875 passes the MXFP8 gate (precision auto) and "
          "fails the bf16 gate (--precision bf16): %s", c.why);
    created_free(&c);

    setenv("SIGLIP2_SELFCHECK", "off", 1);
    setenv("SIGLIP2_TEST_BREAK_BACKEND", "sm90", 1);
    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_BF16, &h100);
    CHECK(c.b && strcmp(c.b->name, "sm90") == 0 && strstr(c.why, "self-check skipped") && !SAME_AS_PLAIN(c.b),
          "SIGLIP2_SELFCHECK=off: the broken sm90 is used unchecked (documented as unsafe)");
    created_free(&c);
    unsetenv("SIGLIP2_SELFCHECK");
    unsetenv("SIGLIP2_TEST_BREAK_BACKEND");

    create_on(&c, m, SG_BACKEND_AUTO, SG_PRECISION_AUTO, NULL);
    CHECK(c.b && strcmp(c.b->name, "cpu") == 0 && strstr(c.why, "no usable GPU (no GPU in this test)"),
          "auto without a GPU: cpu, no check: %s", c.why);
    created_free(&c);
#undef SAME_AS_PLAIN
    unsetenv("SIGLIP2_SELFCHECK_VERBOSE");
    setenv("SIGLIP2_CACHE_DIR", g_tmp, 1);
    free(want);
    free(have);
}

/* ------------------------------------------------------------------------------------------------------------
 * --measure DIR: the figures behind the tolerances, on the check's own images (not part of make test; minutes
 * on a full-size checkpoint). For each numerics the CPU can emulate, per-image 1 - cos to the fp32 reference
 * over the 33 check images; and the largest cosine between embeddings of two different check images (a kernel
 * that mixes up rows is caught only if that is below the tolerances).
 */

static double cosd(const float *a, const float *b, int D) {
    double dot = 0, na = 0, nb = 0;
    for (int j = 0; j < D; j++) {
        dot += (double)a[j] * b[j];
        na += (double)a[j] * a[j];
        nb += (double)b[j] * b[j];
    }
    return dot / sqrt(na * nb);
}

static int measure(const char *dir, int threads) {
    char err[1024];
    sg_model *m = sg_model_load(dir, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", dir, err);
        return 1;
    }
    const int S = m->cfg.image_size, D = m->cfg.hidden_size, N = 1 + SG_SELFCHECK_BIG_BATCH;
    const size_t img = (size_t)S * S * 3;
    uint8_t *px = malloc(img);
    float *chw = malloc((size_t)N * img * sizeof(float));
    float *ref = malloc((size_t)N * D * sizeof(float)), *got = malloc((size_t)N * D * sizeof(float));
    for (int i = 0; i < N; i++) {
        sg_selfcheck_image(i, S, px);
        sg_pixels_to_chw(px, S, chw + (size_t)i * img);
    }
    double t0 = (double)clock();
    if (sg_cpu_forward(m, chw, N, ref, NULL, threads, err, sizeof err) != 0) {
        fprintf(stderr, "fp32 forward: %s\n", err);
        return 1;
    }
    printf("fp32 reference: %d images, %.1f CPU s\n", N, ((double)clock() - t0) / CLOCKS_PER_SEC);
    double xmax = -1, xmin = 2;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++) {
            double c = cosd(ref + (size_t)i * D, ref + (size_t)j * D, D);
            if (c > xmax) xmax = c;
            if (c < xmin) xmin = c;
        }
    printf("cosine between embeddings of two different check images: min %.6f max %.6f\n", xmin, xmax);
    const unsigned all_but_fc1 =
        SG_MX_LIN_PATCH | SG_MX_LIN_QKV | SG_MX_LIN_OUT | SG_MX_LIN_FC2 | SG_MX_LIN_HEAD;
    struct {
        const char *what;
        sg_mx_numerics num;
    } cases[] = {{"bf16 weights + inputs + Q/K/V/P (a bf16 GPU path)", {SG_MX_BF16, SG_MX_BF16, SG_MX_BF16, 0}},
                 {"sm100 default: FC1 MXFP8, other Linears bf16", {SG_MX_MXFP8, SG_MX_MXFP8, SG_MX_BF16, all_but_fc1}},
                 {"sm90 fp8: FC1 E4M3, row scales, others bf16",
                  {SG_MX_FP8_CHAN, SG_MX_FP8_CHAN, SG_MX_BF16, all_but_fc1}},
                 {"every Linear MXFP8, bf16 Q/K/V/P", {SG_MX_MXFP8, SG_MX_MXFP8, SG_MX_BF16, 0}}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        sg_mx_model *mx = sg_mx_model_create(m, cases[t].num, threads, err, sizeof err);
        if (!mx || sg_mx_forward(mx, chw, N, got, NULL, threads, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", cases[t].what, err);
            sg_mx_model_free(mx);
            continue;
        }
        double worst = 1, sum = 0;
        for (int i = 0; i < N; i++) {
            double c = cosd(got + (size_t)i * D, ref + (size_t)i * D, D);
            sum += 1 - c;
            if (c < worst) worst = c;
        }
        printf("%-52s vs fp32: worst cos %.6f (1-cos %.2e), mean 1-cos %.2e\n", cases[t].what, worst, 1 - worst,
               sum / N);
        sg_mx_model_free(mx);
    }
    free(px); free(chw); free(ref); free(got);
    sg_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--measure") == 0) return measure(argv[2], 2);
    const char *root = getenv("SG_ROOT");
    if (!root) root = ".";
    g_tmp = getenv("SG_TMP");
    char tmpl[] = "/tmp/sg_selfcheck.XXXXXX";
    if (!g_tmp) g_tmp = mkdtemp(tmpl);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/selfcheck.%d", g_tmp, (int)getpid()); /* fresh per run */
    mkdir(sub, 0700);
    g_tmp = sub;
    /* the test must not write into the user's real cache, whatever sg_backend_create does */
    setenv("SIGLIP2_CACHE_DIR", sub, 1);

    check_images();
    check_tolerances();
    char dir[1024], err[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny196", root);
    sg_model *m = sg_model_load(dir, err, sizeof err);
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny16", root);
    sg_model *m16 = sg_model_load(dir, err, sizeof err);
    CHECK(m && m16, "fixtures tiny196 and tiny16 load");
    if (m && m16) {
        check_compare(m, m16, "tiny196", 0);
        check_compare(m16, NULL, "tiny16", 1);
        check_env_dirs();
        check_keys(m16);
        check_store_load();
        check_vet(m16);
        check_env_parsing(m16);
        check_auto_policy(m16);
    }
    sg_model_free(m);
    sg_model_free(m16);
    return CHECK_DONE();
}
