/* kernel/lab/test_sm90_lean.c — the lean batch-1 schedule (kernel/lab/sm90_lean_lab.cu): checked against a CPU
 * reference of the same layers, then timed.
 *
 * Every layer gets its own random parameters (the matrices rounded to bf16 here, so the GPU's copies are exact),
 * the input is a random residual stream of 196 tokens. The reference rounds to bf16 where the kernel stores bf16
 * (LayerNorm outputs, q / k / v, the attention's output, H) and sums in double elsewhere (on OpenMP threads); the
 * kernel's launch starts with every intermediate buffer poisoned (NaN). Checks: every value finite, each token's
 * row against the reference (min cosine, and the largest difference against the largest value), every timed launch
 * bit-identical to the first (the counters' hand-offs leave nothing to chance), and bad configurations refused.
 *   test_sm90_lean              2 layers, checked; a short timing
 *   test_sm90_lean --bench      1 layer, then 12 layers twice (each stage's weight copies issued before its wait,
 *                               then after it), checked and timed: us a forward of the 12 layers, and a table of
 *                               each stage kind's share of a layer and its phases; then two diagnostics, timed
 *                               only (their outputs are wrong): no weight copies, and no A copies or LayerNorm
 *   test_sm90_lean --quick      1 layer, 1 timed launch (for compute-sanitizer)
 * Without CUDA in the build or without a compute capability 9.x GPU of >= 128 SMs it prints SKIP.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check.h"
#include "kernel/lab/sm90_lean_lab.h"

#define T SG_LEAN_T
#define D SG_LEAN_D
#define F SG_LEAN_F
#define NH 12
#define HD 64

static uint64_t g_rng = 0x5EED1EA4ull;
static const char *k_stage[SG_LEAN_STAGES] = {"QKV (+LN1)", "attention", "out-proj", "FC1 (+LN2, GELU)", "FC2"};

static float bf16r(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}
static float *rand_array(size_t n, float lo, float hi, int round) {
    float *a = sg_test_xmalloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = sg_test_frand(&g_rng, lo, hi);
    if (round)
        for (size_t i = 0; i < n; i++) a[i] = bf16r(a[i]);
    return a;
}

/* One layer's parameters: matrices uniform with standard deviation 0.02 (bf16 values), biases +-0.02, gamma 1
 * +- 0.1, beta +- 0.05. */
static void make_layer(sg_lean_layer *L) {
    const float w = 0.02f * 1.7320508f;
    L->ln1_g = rand_array(D, 0.9f, 1.1f, 0), L->ln1_b = rand_array(D, -0.05f, 0.05f, 0);
    L->ln2_g = rand_array(D, 0.9f, 1.1f, 0), L->ln2_b = rand_array(D, -0.05f, 0.05f, 0);
    L->wqkv = rand_array((size_t)3 * D * D, -w, w, 1), L->bqkv = rand_array(3 * D, -0.02f, 0.02f, 0);
    L->wo = rand_array((size_t)D * D, -w, w, 1), L->bo = rand_array(D, -0.02f, 0.02f, 0);
    L->w1 = rand_array((size_t)F * D, -w, w, 1), L->b1 = rand_array(F, -0.02f, 0.02f, 0);
    L->w2 = rand_array((size_t)D * F, -w, w, 1), L->b2 = rand_array(D, -0.02f, 0.02f, 0);
}
static void free_layer(sg_lean_layer *L) {
    const float *p[] = {L->ln1_g, L->ln1_b, L->ln2_g, L->ln2_b, L->wqkv, L->bqkv, L->wo, L->bo, L->w1, L->b1, L->w2,
                        L->b2};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) free((void *)p[i]);
}

/* y = bf16(LayerNorm(x)) for T rows, two-pass statistics in double. */
static void ref_ln(const float *x, const float *g, const float *b, float eps, float *y) {
    for (int r = 0; r < T; r++) {
        const float *xr = x + (size_t)r * D;
        double m = 0, v = 0;
        for (int k = 0; k < D; k++) m += xr[k];
        m /= D;
        for (int k = 0; k < D; k++) v += (xr[k] - m) * (xr[k] - m);
        const double rstd = 1.0 / sqrt(v / D + eps);
        for (int k = 0; k < D; k++) y[(size_t)r * D + k] = bf16r((float)((xr[k] - m) * rstd * g[k] + b[k]));
    }
}
/* y[r][n] = sum_k x[r][k] w[n][k] + bias[n] (double sums) for T rows. */
static void ref_gemm(const float *x, int K, const float *w, const float *bias, int N, double *y) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < T; r++)
        for (int n = 0; n < N; n++) {
            const float *xr = x + (size_t)r * K, *wn = w + (size_t)n * K;
            double s[4] = {0, 0, 0, 0};
            for (int k = 0; k < K; k += 4)
                for (int j = 0; j < 4; j++) s[j] += (double)xr[k + j] * wn[k + j];
            y[(size_t)r * N + n] = (s[0] + s[1]) + (s[2] + s[3]) + bias[n];
        }
}
static double gelu_tanh(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* One layer on h in place. */
static void ref_layer(const sg_lean_layer *L, float eps, float *h) {
    float *y = sg_test_xmalloc((size_t)T * D * 4), *qkv = sg_test_xmalloc((size_t)T * 3 * D * 4);
    float *o = sg_test_xmalloc((size_t)T * D * 4), *hm = sg_test_xmalloc((size_t)T * F * 4);
    double *acc = sg_test_xmalloc((size_t)T * F * 8), *s = sg_test_xmalloc(T * 8);
    ref_ln(h, L->ln1_g, L->ln1_b, eps, y);
    ref_gemm(y, D, L->wqkv, L->bqkv, 3 * D, acc);
    for (size_t i = 0; i < (size_t)T * 3 * D; i++) qkv[i] = bf16r((float)acc[i]);
    for (int hd = 0; hd < NH; hd++)
        for (int i = 0; i < T; i++) {
            const float *q = qkv + (size_t)i * 3 * D + hd * HD;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < T; j++) {
                const float *k = qkv + (size_t)j * 3 * D + D + hd * HD;
                double d = 0;
                for (int e = 0; e < HD; e++) d += (double)q[e] * k[e];
                s[j] = d / 8;
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
            for (int e = 0; e < HD; e++) {
                double v = 0;
                for (int j = 0; j < T; j++) v += s[j] * qkv[(size_t)j * 3 * D + 2 * D + hd * HD + e];
                o[(size_t)i * D + hd * HD + e] = bf16r((float)(v / sum));
            }
        }
    ref_gemm(o, D, L->wo, L->bo, D, acc);
    for (size_t i = 0; i < (size_t)T * D; i++) h[i] = (float)(h[i] + acc[i]);
    ref_ln(h, L->ln2_g, L->ln2_b, eps, y);
    ref_gemm(y, D, L->w1, L->b1, F, acc);
    for (size_t i = 0; i < (size_t)T * F; i++) hm[i] = bf16r((float)gelu_tanh(acc[i]));
    ref_gemm(hm, F, L->w2, L->b2, D, acc);
    for (size_t i = 0; i < (size_t)T * D; i++) h[i] = (float)(h[i] + acc[i]);
    free(y), free(qkv), free(o), free(hm), free(acc), free(s);
}

/* h after the first `layers` layers from h_in, on the CPU (malloc'd; free it). */
static float *reference(const sg_lean_layer *layer, int layers, const float *h_in) {
    float *h = sg_test_xmalloc((size_t)T * D * 4);
    memcpy(h, h_in, (size_t)T * D * 4);
    for (int l = 0; l < layers; l++) ref_layer(&layer[l], 1e-6f, h);
    return h;
}

/* The launch's h (h_gpu) against the reference's (h_ref), and the timed launches' sameness. */
static void check_against_reference(int layers, const float *h_gpu, const float *h_ref, const sg_lean_result *r,
                                    const char *wv, int reps, double min_cos) {
    long bad = 0;
    double cmin = 1, dmax = 0, amax = 0;
    for (int t = 0; t < T; t++) {
        double ab = 0, aa = 0, bb = 0;
        for (int k = 0; k < D; k++) {
            const double a = h_gpu[(size_t)t * D + k], b = h_ref[(size_t)t * D + k];
            if (!isfinite(a)) bad++;
            ab += a * b, aa += a * a, bb += b * b;
            if (fabs(a - b) > dmax) dmax = fabs(a - b);
            if (fabs(b) > amax) amax = fabs(b);
        }
        const double cs = ab / sqrt(aa * bb);
        if (!(cs >= cmin)) cmin = cs;
    }
    CHECK(bad == 0 && cmin >= min_cos, "sm90 lean (%s): %d layers against the CPU reference: %ld non-finite, min "
          "cosine per token %.7f (>= %.4f), max |diff| %.3g of max |h| %.3g", wv, layers, bad, cmin, min_cos, dmax,
          amax);
    CHECK(r->identical, "sm90 lean (%s): %d layers: %d timed launches bit-identical to the first", wv, layers, reps);
}

/* Runs `layers` layers on the GPU; checks them against h_ref (reference()'s for those layers; NULL for the
 * diagnostics, whose outputs are wrong by design) and (bench) prints the timing. */
static void run(sg_lean_layer *layer, int layers, const float *h_in, const float *h_ref, int reps, int bench,
                int w_late, int diag, double min_cos) {
    float *h_gpu = sg_test_poisoned((size_t)T * D);
    sg_lean_cfg c = {layers, layer, h_in, h_gpu, 1e-6f, reps, reps > 1 ? 20 : 0, w_late, diag};
    sg_lean_result r;
    char err[512] = "";
    if (sg_sm90_lean_run(&c, &r, err, sizeof err) != 0) {
        CHECK(0, "sm90 lean: %d layers: %s", layers, err);
        free(h_gpu);
        return;
    }
    const char *wv = diag == 1   ? "diagnostic: no weight copies"
                     : diag == 2 ? "diagnostic: no A copies, no LayerNorm"
                     : w_late    ? "weights after the wait"
                                 : "weights before the wait";
    if (h_ref) check_against_reference(layers, h_gpu, h_ref, &r, wv, reps, min_cos);
    printf("sm90 lean (%s): %d layers on %d CTAs (%d SMs): %.1f us median (min %.1f, max %.1f) over %d launches, "
           "%.2f us a layer; traced launch %.1f us\n", wv, layers, r.ctas, r.sms, r.us_median, r.us_min, r.us_max,
           reps, r.us_median / layers, r.traced_us);
    if (bench) {
        double sum[5] = {0};
        printf("\n%s, traced launch, mean of %d layers, us (phases: the median CTA's)\n\n"
               "| stage | share of a layer | hand-off | operands in | MMAs | stores |\n"
               "|---|---:|---:|---:|---:|---:|\n",
               wv, layers);
        for (int s = 0; s < SG_LEAN_STAGES; s++) {
            printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", k_stage[s], r.stage_us[s], r.handoff_us[s],
                   r.ingest_us[s], r.mma_us[s], r.epi_us[s]);
            sum[0] += r.stage_us[s], sum[1] += r.handoff_us[s], sum[2] += r.ingest_us[s], sum[3] += r.mma_us[s];
            sum[4] += r.epi_us[s];
        }
        printf("| layer | %.2f | %.2f | %.2f | %.2f | %.2f |\n\n", sum[0], sum[1], sum[2], sum[3], sum[4]);
    }
    free(h_gpu);
}

int main(int argc, char **argv) {
    const int bench = argc > 1 && !strcmp(argv[1], "--bench"), quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (!sg_test_lab_ready("sm90 lean lab", sg_sm90_lean_available)) return 0;
    const int layers = bench ? SG_LEAN_MAX_LAYERS : quick ? 1 : 2;
    sg_lean_layer layer[SG_LEAN_MAX_LAYERS];
    for (int l = 0; l < layers; l++) make_layer(&layer[l]);
    float *h_in = rand_array((size_t)T * D, -1.7320508f, 1.7320508f, 0);
    for (int t = 0; t < T; t++) h_in[(size_t)t * D + 7 * t % D] *= 20;  // one large channel a token, as ViTs have
    {   /* refusals */
        float out;
        sg_lean_cfg c = {0, layer, h_in, &out, 1e-6f, 1, 0, 0, 0};
        sg_lean_result r;
        char err[512] = "";
        CHECK(sg_sm90_lean_run(&c, &r, err, sizeof err) == -1 && err[0], "sm90 lean: 0 layers refused (%s)", err);
        c.layers = SG_LEAN_MAX_LAYERS + 1;
        err[0] = 0;
        CHECK(sg_sm90_lean_run(&c, &r, err, sizeof err) == -1 && err[0], "sm90 lean: %d layers refused",
              SG_LEAN_MAX_LAYERS + 1);
    }
    const int first = quick || bench ? 1 : 2; /* layers of the first (or only) checked run */
    float *ref = reference(layer, first, h_in);
    run(layer, first, h_in, ref, quick ? 1 : 100, 0, 0, 0, 0.9999);
    free(ref);
    if (bench) { /* one reference for both variants */
        ref = reference(layer, layers, h_in);
        for (int w_late = 0; w_late < 2; w_late++) run(layer, layers, h_in, ref, 200, 1, w_late, 0, 0.999);
        for (int diag = 1; diag <= 2; diag++) run(layer, layers, h_in, NULL, 200, 1, 0, diag, 0);
        free(ref);
    }
    for (int l = 0; l < layers; l++) free_layer(&layer[l]);
    free(h_in);
    return CHECK_DONE();
}
