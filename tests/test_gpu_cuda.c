/* tests/test_gpu_cuda.c — the portable CUDA backend against HF fp32 outputs and the CPU reference.
 *
 * Needs a GPU: without one (CI) every check prints SKIP with the reason sg_gpu_query gives. With one:
 *   1. each fixture (tests/fixtures/tiny196: 196 tokens, head_dim 16; tiny16: 16 tokens, patch 8) embeds its
 *      uint8 image image0_u8.raw, compared with HF transformers' fp32 pooler_output (pooled.f32 row 0);
 *   2. fresh random uint8 images (seed printed) through the fixture models, vs the CPU fp32 reference;
 *   3. a full-size random SigLIP2-base (768/3072/12 heads/12 layers, weights drawn here with magnitudes like
 *      a trained ViT's) on random images vs the CPU reference: this is the shape the kernels are tuned for;
 *   4. batching: the same image alone and inside a batch, and two batches in flight, give the same rows;
 *   5. misuse (batch 0, batch > max, collect with nothing in flight) returns an error, not a crash.
 * Tolerance: cosine >= 0.9999 per image (the target for bf16 GEMMs with fp32 accumulation and fp32
 * LayerNorm/softmax/residual stream); max |d| is printed for the record. Outputs are poisoned (NaN) first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/backend.h"
#include "kernel/gpu.h"
#include "kernel/cpu/cpu_encoder.h"
#include "weights/model_load.h"

static const double k_min_cos = 0.9999;

static uint64_t rng_state;
static uint64_t rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static float rng_normal(void) {
    double u1 = ((rng_next() >> 11) + 1.0) / 9007199254740993.0, u2 = (rng_next() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static int read_file(const char *path, void *buf, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(buf, 1, len, f);
    fclose(f);
    return got == len ? 0 : -1;
}

/* Runs b on n images in batches of at most b->max_batch, two in flight. */
static int embed_all(sg_backend *b, const uint8_t *pix, int n, float *out, char *err, size_t errlen) {
    const size_t img = (size_t)b->image_size * b->image_size * 3;
    int sub = 0, col = 0;
    while (col < n) {
        while (sub < n && sub - col < 2 * b->max_batch) {
            int k = n - sub < b->max_batch ? n - sub : b->max_batch;
            if (b->submit(b, pix + (size_t)sub * img, k, err, errlen)) return -1;
            sub += k;
        }
        int k = n - col < b->max_batch ? n - col : b->max_batch;
        if (b->collect(b, out + (size_t)col * b->dim, err, errlen)) return -1;
        col += k;
    }
    return 0;
}

static sg_backend *make_cuda(const sg_model *m, int max_batch, char *err, size_t errlen) {
    sg_backend_opts o = {SG_BACKEND_CUDA, 0, max_batch, 0, SG_PRECISION_AUTO};
    char why[512];
    return sg_backend_create(m, &o, why, sizeof why, err, errlen);
}

/* GPU vs CPU reference on n fresh random images (uint8 → the same normalisation on both sides). */
static void vs_cpu(const char *name, const sg_model *m, int n, int max_batch) {
    char err[1024];
    const int S = m->cfg.image_size, D = m->cfg.hidden_size;
    const size_t img = (size_t)S * S * 3;
    uint8_t *pix = malloc(img * n);
    for (size_t i = 0; i < img * n; i++) pix[i] = (uint8_t)(rng_next() >> 32);
    float *chw = malloc(img * n * sizeof(float)), *ref = sg_test_poisoned((size_t)n * D);
    float *got = sg_test_poisoned((size_t)n * D);
    for (int i = 0; i < n; i++) sg_pixels_to_chw(pix + i * img, S, chw + i * img);
    int rc = sg_cpu_forward(m, chw, n, ref, NULL, 0, err, sizeof err);
    CHECK(rc == 0, "%s: CPU reference ran (%s)", name, rc ? err : "ok");
    sg_backend *b = make_cuda(m, max_batch, err, sizeof err);
    CHECK(b != NULL, "%s: cuda backend created (max_batch %d)%s%s", name, max_batch, b ? "" : ": ", b ? "" : err);
    if (b && rc == 0) {
        rc = embed_all(b, pix, n, got, err, sizeof err);
        CHECK(rc == 0, "%s: %d random images embedded%s%s", name, n, rc ? ": " : "", rc ? err : "");
        double a, c = sg_test_cos_min(got, ref, n, D, &a);
        CHECK(c >= k_min_cos, "%s: cuda vs CPU fp32 on %d random images: min cosine %.7f (>= %.4f), max |d| %.3g", name,
              n, c, k_min_cos, a);
        /* image 0 alone must match its row in the batch (GEMM algorithms may differ by M: tight, not exact) */
        float *one = sg_test_poisoned(D);
        rc = sg_backend_embed(b, pix, 1, one, err, sizeof err);
        c = sg_test_cos_min(one, got, 1, D, &a);
        CHECK(rc == 0 && c >= 0.99999, "%s: image 0 alone vs in its batch: cosine %.8f, max |d| %.3g", name, c, a);
        free(one);
    }
    sg_backend_destroy(b);
    free(pix);
    free(chw);
    free(ref);
    free(got);
}

static void fixture(const char *dir) {
    char err[1024], path[1024];
    sg_model *m = sg_model_load(dir, err, sizeof err);
    CHECK(m != NULL, "%s loaded%s%s", dir, m ? "" : ": ", m ? "" : err);
    if (!m) return;
    const int S = m->cfg.image_size, D = m->cfg.hidden_size;
    uint8_t *pix = malloc((size_t)S * S * 3);
    float *want = malloc((size_t)D * sizeof(float)), *got = sg_test_poisoned(D);
    snprintf(path, sizeof path, "%s/image0_u8.raw", dir);
    int ok = read_file(path, pix, (size_t)S * S * 3) == 0;
    snprintf(path, sizeof path, "%s/pooled.f32", dir);
    ok = ok && read_file(path, want, (size_t)D * sizeof(float)) == 0;
    CHECK(ok, "%s: image0_u8.raw and pooled.f32 read", dir);
    sg_backend *b = ok ? make_cuda(m, 4, err, sizeof err) : NULL;
    CHECK(b != NULL, "%s: cuda backend created%s%s", dir, b ? "" : ": ", b ? "" : err);
    if (b) {
        int rc = sg_backend_embed(b, pix, 1, got, err, sizeof err);
        double a, c = sg_test_cos_min(got, want, 1, D, &a);
        CHECK(rc == 0 && c >= k_min_cos, "%s: cuda vs HF fp32 pooler_output: cosine %.7f (>= %.4f), max |d| %.3g%s%s",
              dir, c, k_min_cos, a, rc ? ": " : "", rc ? err : "");
        /* misuse */
        CHECK(b->submit(b, pix, 0, err, sizeof err) != 0, "%s: submit of 0 images refused (%s)", dir, err);
        CHECK(b->submit(b, pix, b->max_batch + 1, err, sizeof err) != 0, "%s: submit over max_batch refused (%s)", dir,
              err);
        CHECK(b->collect(b, got, err, sizeof err) != 0, "%s: collect with nothing in flight refused (%s)", dir, err);
        sg_backend_destroy(b);
    }
    char name[1100];
    snprintf(name, sizeof name, "%s", dir);
    vs_cpu(name, m, 7, 3);
    free(pix);
    free(want);
    free(got);
    sg_model_free(m);
}

/* A full-size random model built in memory (no file): every tensor drawn from N(0, 1) and scaled as
 * scripts/make_fixtures.py does (LN weight 1 +- 0.25, biases 0.1, positions and probe 0.5, weights 1/sqrt(fan_in)). */
static float *fill(float **pool, size_t count, float mean, float scale) {
    float *p = *pool;
    for (size_t i = 0; i < count; i++) p[i] = mean + scale * rng_normal();
    *pool += count;
    return p;
}

static void full_size(void) {
    sg_model m;
    memset(&m, 0, sizeof m);
    m.cfg = sg_config_default();
    snprintf(m.path, sizeof m.path, "(random full-size model built by the test)");
    const size_t D = 768, F = 3072, T = 196, CPP = 768, L = 12;
    const size_t total = D * CPP + D + T * D + L * (4 * D + 4 * D * D + 4 * D + 2 * D * F + F + D) + 2 * D + D +
                         3 * D * D + 3 * D + D * D + D + 2 * D + F * D + F + D * F + D;
    float *base = malloc(total * sizeof(float)), *p = base;
    sg_layer *layers = calloc(L, sizeof *layers);
    m.layers = layers;
    const float wD = 1.0f / sqrtf((float)D), wF = 1.0f / sqrtf((float)F);
    m.patch_w = fill(&p, D * CPP, 0, 1.0f / sqrtf((float)CPP));
    m.patch_b = fill(&p, D, 0, 0.1f);
    m.pos = fill(&p, T * D, 0, 0.5f);
    for (size_t l = 0; l < L; l++) {
        sg_layer *y = &layers[l];
        y->ln1_w = fill(&p, D, 1, 0.25f);
        y->ln1_b = fill(&p, D, 0, 0.1f);
        y->q_w = fill(&p, D * D, 0, wD);
        y->q_b = fill(&p, D, 0, 0.1f);
        y->k_w = fill(&p, D * D, 0, wD);
        y->k_b = fill(&p, D, 0, 0.1f);
        y->v_w = fill(&p, D * D, 0, wD);
        y->v_b = fill(&p, D, 0, 0.1f);
        y->o_w = fill(&p, D * D, 0, wD);
        y->o_b = fill(&p, D, 0, 0.1f);
        y->ln2_w = fill(&p, D, 1, 0.25f);
        y->ln2_b = fill(&p, D, 0, 0.1f);
        y->fc1_w = fill(&p, F * D, 0, wD);
        y->fc1_b = fill(&p, F, 0, 0.1f);
        y->fc2_w = fill(&p, D * F, 0, wF);
        y->fc2_b = fill(&p, D, 0, 0.1f);
    }
    m.post_ln_w = fill(&p, D, 1, 0.25f);
    m.post_ln_b = fill(&p, D, 0, 0.1f);
    m.probe = fill(&p, D, 0, 0.5f);
    m.head_in_w = fill(&p, 3 * D * D, 0, wD);
    m.head_in_b = fill(&p, 3 * D, 0, 0.1f);
    m.head_out_w = fill(&p, D * D, 0, wD);
    m.head_out_b = fill(&p, D, 0, 0.1f);
    m.head_ln_w = fill(&p, D, 1, 0.25f);
    m.head_ln_b = fill(&p, D, 0, 0.1f);
    m.head_fc1_w = fill(&p, F * D, 0, wD);
    m.head_fc1_b = fill(&p, F, 0, 0.1f);
    m.head_fc2_w = fill(&p, D * F, 0, wF);
    m.head_fc2_b = fill(&p, D, 0, 0.1f);
    if ((size_t)(p - base) != total) {
        CHECK(0, "full-size model: %zu floats drawn, %zu allocated", (size_t)(p - base), total);
    } else {
        vs_cpu("full-size random SigLIP2-base", &m, 6, 4);
    }
    free(layers);
    free(base);
}

int main(void) {
    sg_gpu_info g;
    char gerr[512];
    if (sg_gpu_query(0, &g, gerr, sizeof gerr) != 0) {
        SKIP("cuda backend vs HF fixtures and the CPU reference: no usable GPU here (%s)", gerr);
        return 0;
    }
    const char *seed_env = getenv("SG_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed * 2654435761u + 1;
    printf("GPU %s (sm_%d%d); random seed %llu (SG_TEST_SEED=%llu to repeat)\n", g.name, g.cc_major, g.cc_minor,
           (unsigned long long)seed, (unsigned long long)seed);
    const char *root = getenv("SG_ROOT");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny196", root ? root : ".");
    fixture(dir);
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny16", root ? root : ".");
    fixture(dir);
    if (getenv("SG_TEST_QUICK")) SKIP("full-size random model vs CPU: SG_TEST_QUICK is set");
    else full_size();
    return CHECK_DONE();
}
