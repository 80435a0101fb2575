/* tests/test_fp8.c — the CPU emulation of the SM90 FP8 recipes (kernel/cpu/cpu_mxfp8.c: sg_fp8_quantize,
 * sg_fp8_dequantize, sg_fp8_gemm_ref and the SG_MX_FP8* formats of the emulated forward).
 *
 *   1. Hand cases of the quantiser: amax 448 (scale exactly 1), amax 1 (scale 1/448 in fp32, elements
 *      e4m3(x * 448)), an all-zero block (the 2^-64 amax floor), a NaN element (left out of amax, code 0x7F),
 *      power-of-two scales (2^ceil(log2(amax/448))).
 *   2. Fresh random matrices with partial blocks (rows 200 = 128 + 72, k 300 = 128 + 128 + 44) and row
 *      magnitudes over 2^-20..2^20, in 1 x 128, 128 x 128 and 1 x k blocks: every scale equals an independent
 *      per-block amax / 448, every code equals e4m3(x * (448 / amax)), nothing saturates beyond 448, and
 *      dequantise(quantise(x)) is within half an E4M3 step of x.
 *   3. sg_fp8_gemm_ref against an exact double reference (fp32 per-block promotion bound).
 *   4. The emulated forward on the tiny fixtures with FP8 QKV/out/FC1/FC2: the weight path equals weights
 *      quantised by hand in 128 x 128 blocks (identical bits), it differs from HF but stays close, 1 and 2
 *      threads agree bit for bit, and a bad format is refused.
 *   5. FC2 per layer (sg_mx_model_create_fc2): an empty plan is sg_mx_model_create's bits; a plan of every layer
 *      with per-token inputs is the same bits as FC2 taken out of bf16_linears; the a-priori bound
 *      (SG_MX_FP8_BOUND) is >= max |H_r| for every token and layer (the bound log) and stays close to HF;
 *      a layer past the model or an unknown format is refused.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/sm100/sm100_desc.h"
#include "weights/model_load.h"

static uint64_t rng_state;
static uint64_t rng_next(void) { return sg_test_splitmix64(&rng_state); }
static double rng_unit(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

static void test_hand(void) {
    float x[128];
    uint8_t q[128];
    float s;
    for (int i = 0; i < 128; i++) x[i] = (float)(i - 64) * (448.0f / 64.0f); /* amax 448 at i = 0 */
    sg_fp8_quantize(x, 128, 1, 128, 1, 128, 0, q, &s);
    int same = 1;
    for (int i = 0; i < 128; i++) same &= q[i] == sg_e4m3_encode(x[i]);
    CHECK(s == 1.0f && same, "fp8 quantize: amax 448 -> scale 1 exactly, codes = e4m3(x) (scale %g)", s);

    for (int i = 0; i < 128; i++) x[i] = (float)(i % 17) / 16.0f - 0.5f;
    x[5] = -1.0f; /* amax 1 */
    sg_fp8_quantize(x, 128, 1, 128, 1, 128, 0, q, &s);
    same = 1;
    for (int i = 0; i < 128; i++) same &= q[i] == sg_e4m3_encode(x[i] * (448.0f / 1.0f));
    CHECK(s == 1.0f / 448.0f && q[5] == 0xFE && same, "fp8 quantize: amax 1 -> scale fp32(1/448), codes e4m3(x * 448), "
          "the amax element -> -448 (0xFE; got 0x%02X)", q[5]);

    memset(x, 0, sizeof x);
    sg_fp8_quantize(x, 128, 1, 128, 1, 128, 0, q, &s);
    int zero = 1;
    for (int i = 0; i < 128; i++) zero &= q[i] == 0;
    CHECK(zero && s == SG_FP8_AMAX_MIN / 448.0f && s > 0, "fp8 quantize: all-zero block -> codes 0, finite scale "
          "2^-64/448 (%g)", s);

    for (int i = 0; i < 128; i++) x[i] = 0.25f * (float)((i % 7) - 3);
    x[9] = NAN;
    sg_fp8_quantize(x, 128, 1, 128, 1, 128, 0, q, &s);
    CHECK(q[9] == 0x7F && s == 0.75f / 448.0f, "fp8 quantize: a NaN element -> 0x7F and left out of amax (scale %g)",
          s);

    x[9] = 0.0f;
    x[3] = 3.0f; /* amax 3: 3/448 = 2^-7.22 -> 2^-7 */
    sg_fp8_quantize(x, 128, 1, 128, 1, 128, 1, q, &s);
    same = 1;
    for (int i = 0; i < 128; i++) same &= q[i] == sg_e4m3_encode(x[i] * 128.0f);
    CHECK(s == ldexpf(1.0f, -7) && same, "fp8 quantize pow2: amax 3 -> scale 2^-7, codes e4m3(x * 2^7) (scale %g)", s);
}

/* Quantises x [rows, k] in block_rows x block_k blocks and checks it against an independent per-block amax. */
static void check_blocks(const float *x, int rows, int k, int br, int bk, int pow2, const char *what) {
    const int nbr = (rows + br - 1) / br, nbk = (k + bk - 1) / bk;
    uint8_t *q = sg_test_xmalloc((size_t)rows * k);
    float *s = sg_test_xmalloc((size_t)nbr * nbk * sizeof(float));
    float *y = sg_test_xmalloc((size_t)rows * k * sizeof(float));
    sg_fp8_quantize(x, (size_t)k, rows, k, br, bk, pow2, q, s);
    sg_fp8_dequantize(q, s, rows, k, br, bk, y, (size_t)k);
    long bad_s = 0, bad_q = 0, bad_rt = 0, top = 0;
    for (int a = 0; a < nbr; a++)
        for (int b = 0; b < nbk; b++) {
            double amax = 0;
            for (int r = a * br; r < rows && r < (a + 1) * br; r++)
                for (int c = b * bk; c < k && c < (b + 1) * bk; c++) amax = fmax(amax, fabs((double)x[(size_t)r * k + c]));
            const float am = (float)amax;
            float want, inv;
            if (pow2) {
                int e = (int)ceil(log2(amax / 448.0)); /* amax is never an exact power-of-two multiple of 448 here */
                want = ldexpf(1.0f, e);
                inv = ldexpf(1.0f, -e);
            } else {
                want = am / 448.0f;
                inv = 448.0f / am;
            }
            if (s[(size_t)a * nbk + b] != want) bad_s++;
            for (int r = a * br; r < rows && r < (a + 1) * br; r++)
                for (int c = b * bk; c < k && c < (b + 1) * bk; c++) {
                    const size_t i = (size_t)r * k + c;
                    if (q[i] != sg_e4m3_encode(x[i] * inv)) bad_q++;
                    if ((q[i] & 0x7F) >= 0x78) top++; /* |code| >= 256: the top binade */
                    /* half an E4M3 step: 2^-4 relative for normals, 2^-10 * scale absolute for subnormals */
                    if (fabs((double)y[i] - x[i]) > fmax(fabs((double)x[i]) * 0.0625, want * ldexp(1.0, -10)))
                        bad_rt++;
                }
        }
    CHECK(bad_s == 0 && bad_q == 0 && bad_rt == 0 && top >= nbr * nbk,
          "fp8 quantize %s (%dx%d in %dx%d blocks%s): scales vs independent amax %ld off, codes %ld off, round trip "
          "beyond half a step %ld, top-binade elements %ld (>= one per block)", what, rows, k, br, bk,
          pow2 ? ", pow2" : "", bad_s, bad_q, bad_rt, top);
    free(q);
    free(s);
    free(y);
}

static void test_random(void) {
    const int rows = 200, k = 300;
    float *x = sg_test_xmalloc((size_t)rows * k * sizeof(float));
    for (int r = 0; r < rows; r++) {
        const double mag = ldexp(1.0, (int)(rng_unit() * 41) - 20);
        for (int c = 0; c < k; c++) x[(size_t)r * k + c] = (float)((2 * rng_unit() - 1) * mag);
    }
    for (int pow2 = 0; pow2 < 2; pow2++) {
        check_blocks(x, rows, k, 1, 128, pow2, "inputs");
        check_blocks(x, rows, k, 128, 128, pow2, "weights");
    }
    check_blocks(x, rows, k, 1, k, 0, "per channel");
    free(x);
}

static void test_gemm(void) {
    const int m = 7, n = 200, k = 384, nb = k / 128;
    float *a = sg_test_xmalloc((size_t)m * k * 4), *b = sg_test_xmalloc((size_t)n * k * 4);
    float *y = sg_test_xmalloc((size_t)m * n * 4);
    float *sa = sg_test_xmalloc((size_t)m * nb * 4), *sb = sg_test_xmalloc((size_t)2 * nb * 4);
    uint8_t *qa = sg_test_xmalloc((size_t)m * k), *qb = sg_test_xmalloc((size_t)n * k);
    for (size_t i = 0; i < (size_t)m * k; i++) a[i] = (float)ldexp(2 * rng_unit() - 1, (int)(i / 128 % 9) - 4);
    for (size_t i = 0; i < (size_t)n * k; i++) b[i] = (float)ldexp(2 * rng_unit() - 1, (int)(i % 3) * 5 - 5);
    sg_fp8_quantize(a, (size_t)k, m, k, 1, 128, 0, qa, sa);
    sg_fp8_quantize(b, (size_t)k, n, k, 128, 128, 0, qb, sb);
    for (size_t i = 0; i < (size_t)m * n; i++) y[i] = NAN;
    sg_fp8_gemm_ref(qa, sa, qb, sb, m, n, k, y);
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double exact = 0, mag = 0;
            for (int bb = 0; bb < nb; bb++) {
                double d = 0, dm = 0;
                for (int t = bb * 128; t < (bb + 1) * 128; t++) {
                    const double p = (double)sg_e4m3_decode(qa[(size_t)i * k + t]) * sg_e4m3_decode(qb[(size_t)j * k + t]);
                    d += p;
                    dm += fabs(p);
                }
                const double sc = (double)sa[(size_t)i * nb + bb] * sb[(size_t)(j / 128) * nb + bb];
                exact += d * sc;
                mag += dm * sc;
            }
            /* per block: fp32 rounding of the block sum, of sa * sb, and of the fma: 3 * 2^-24 of its magnitude,
             * plus the accumulator's growth; 2 * nb * 2^-24 * sum |products| bounds it. */
            const double bound = 2.0 * (nb + 2) * ldexp(1.0, -24) * mag;
            const double e = fabs((double)y[(size_t)i * n + j] - exact) / (bound > 0 ? bound : 1);
            if (!(e <= worst)) worst = e;
        }
    CHECK(worst <= 1.0, "fp8 GEMM ref (1x128 x 128x128 blocks, partial last weight block) vs exact double: within the "
          "fp32 promotion bound (worst %.3f of it)", worst);
    free(a); free(b); free(y); free(sa); free(sb); free(qa); free(qb);
}

/* dequantise(quantise(w)) of the [n, k] matrix stacked from nseg segments, in 128 x 128 blocks; returns the
 * copy (kept for freeing) and writes segment pointers into seg_out. */
static float *fp8_copy(const float *const *seg, int nseg, int n, int k, float **keep, int *nkeep) {
    const int per = n / nseg, nbr = (n + 127) / 128, nbk = (k + 127) / 128;
    float *w = sg_test_xmalloc((size_t)n * k * 4), *y = sg_test_xmalloc((size_t)n * k * 4);
    float *s = sg_test_xmalloc((size_t)nbr * nbk * 4);
    uint8_t *q = sg_test_xmalloc((size_t)n * k);
    for (int i = 0; i < nseg; i++) memcpy(w + (size_t)i * per * k, seg[i], (size_t)per * k * 4);
    sg_fp8_quantize(w, (size_t)k, n, k, 128, 128, 0, q, s);
    sg_fp8_dequantize(q, s, n, k, 128, 128, y, (size_t)k);
    free(w);
    free(q);
    free(s);
    keep[(*nkeep)++] = y;
    return y;
}

/* Part 5: FC2's format per layer and the bound of SG_MX_FP8_BOUND. */
static void test_fc2_plan(const sg_model *m, const float *px, const float *ref, int n, const char *name) {
    const int D = m->cfg.hidden_size, L = m->cfg.num_layers;
    char err[512];
    float *a = sg_test_xmalloc((size_t)n * D * 4), *b = sg_test_xmalloc((size_t)n * D * 4);
    const unsigned others = SG_MX_LIN_PATCH | SG_MX_LIN_QKV | SG_MX_LIN_OUT | SG_MX_LIN_HEAD;
    sg_mx_numerics fc1 = {SG_MX_FP8_CHAN, SG_MX_FP8_CHAN, SG_MX_BF16, others | SG_MX_LIN_FC2};
    sg_mx_numerics both = {SG_MX_FP8_CHAN, SG_MX_FP8_CHAN, SG_MX_BF16, others};
    const unsigned all = L < 32 ? (1u << L) - 1u : ~0u;
    sg_mx_fc2_plan none = {0, SG_MX_FP32}, chan = {all, SG_MX_FP8_CHAN}, bound = {all, SG_MX_FP8_BOUND};

    sg_mx_model *x = sg_mx_model_create(m, fc1, 2, err, sizeof err), *y = sg_mx_model_create_fc2(m, fc1, none, 2, err,
                                                                                                 sizeof err);
    int ok = x && y && !sg_mx_forward(x, px, n, a, NULL, 2, err, sizeof err) &&
             !sg_mx_forward(y, px, n, b, NULL, 2, err, sizeof err) && !memcmp(a, b, (size_t)n * D * 4);
    CHECK(ok, "%s: an empty FC2 plan == sg_mx_model_create (identical bits)", name);
    sg_mx_model_free(x);
    sg_mx_model_free(y);

    x = sg_mx_model_create(m, both, 2, err, sizeof err);
    y = sg_mx_model_create_fc2(m, fc1, chan, 2, err, sizeof err);
    ok = x && y && !sg_mx_forward(x, px, n, a, NULL, 2, err, sizeof err) &&
         !sg_mx_forward(y, px, n, b, NULL, 2, err, sizeof err) && !memcmp(a, b, (size_t)n * D * 4);
    CHECK(ok, "%s: FC2 plan of every layer, per-token inputs == FC2 out of bf16_linears (identical bits)", name);
    sg_mx_model_free(x);
    sg_mx_model_free(y);

    y = sg_mx_model_create_fc2(m, fc1, bound, 2, err, sizeof err);
    FILE *f = tmpfile();
    if (y && f) sg_mx_set_bound_log(y, f);
    double mab = 0, c = 0;
    ok = y && f && !sg_mx_forward(y, px, n, b, NULL, 2, err, sizeof err);
    if (ok) c = sg_test_cos_min(b, ref, n, D, &mab);
    long recs = 0, below = 0;
    float rmin = INFINITY;
    if (ok) {
        rewind(f);
        struct { int32_t layer; float ratio; } r;
        while (fread(&r, sizeof r, 1, f) == 1) {
            recs++;
            if (!(r.ratio >= 1.0f) || r.layer < 0 || r.layer >= L) below++;
            if (r.ratio < rmin) rmin = r.ratio;
        }
    }
    const long want = (long)n * L * sg_config_tokens(&m->cfg);
    CHECK(ok && recs == want && below == 0, "%s: bound_r >= max|H_r| for all %ld (token, layer) pairs (%ld records, "
          "%ld below, smallest ratio %.3f)", name, want, recs, below, rmin);
    CHECK(ok && c >= 0.98, "%s: FC2 FP8 with the bound on every layer vs HF fp32: cos %.5f", name, c);
    if (f) fclose(f);
    sg_mx_model_free(y);

    sg_mx_fc2_plan past = {1u << L, SG_MX_FP8_CHAN}, badx = {1, (sg_mx_format)7};
    err[0] = 0;
    y = L < 32 ? sg_mx_model_create_fc2(m, fc1, past, 1, err, sizeof err) : NULL;
    CHECK(y == NULL && (L >= 32 || strstr(err, "FC2")), "%s: an FC2 layer past the model is refused: %s", name, err);
    y = sg_mx_model_create_fc2(m, fc1, badx, 1, err, sizeof err);
    CHECK(y == NULL && strstr(err, "FC2"), "%s: an unknown FC2 input format is refused: %s", name, err);
    free(a);
    free(b);
}

static void test_forward(const char *root, const char *name) {
    char path[1100], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s/model.safetensors", root, name);
    sg_model *m = sg_model_load(path, err, sizeof err);
    if (!m) {
        CHECK(0, "%s: load: %s", name, err);
        return;
    }
    size_t pb = 0, rb = 0;
    snprintf(path, sizeof path, "%s/tests/fixtures/%s/pixels.f32", root, name);
    float *px = sg_test_read_file(path, &pb);
    snprintf(path, sizeof path, "%s/tests/fixtures/%s/pooled.f32", root, name);
    float *ref = sg_test_read_file(path, &rb);
    const int D = m->cfg.hidden_size, S = m->cfg.image_size, n = (int)(pb / (sizeof(float) * 3 * S * S));
    if (!px || !ref || n < 1 || rb != (size_t)n * D * sizeof(float)) {
        CHECK(0, "%s: pixels.f32 / pooled.f32 unreadable or inconsistent", name);
        free(px);
        free(ref);
        sg_model_free(m);
        return;
    }
    float *out = sg_test_xmalloc((size_t)n * D * 4), *out2 = sg_test_xmalloc((size_t)n * D * 4);
    double mab = 0;
    /* The SM90 FP8 layer: QKV, out-proj, FC1, FC2 in FP8, patch embedding and head in bf16, attention bf16. */
    sg_mx_numerics num = {SG_MX_FP8, SG_MX_FP8, SG_MX_BF16, SG_MX_LIN_PATCH | SG_MX_LIN_HEAD};
    sg_mx_model *mx = sg_mx_model_create(m, num, 2, err, sizeof err);
    for (int i = 0; i < n * D; i++) out[i] = out2[i] = NAN;
    int rc = mx ? sg_mx_forward(mx, px, n, out, NULL, 2, err, sizeof err) : -1;
    int rc1 = mx ? sg_mx_forward(mx, px, n, out2, NULL, 1, err, sizeof err) : -1;
    double c = rc == 0 ? sg_test_cos_min(out, ref, n, D, &mab) : 0;
    CHECK(rc == 0 && c >= 0.98 && mab > 1e-4, "%s: emulated SM90 FP8 vs HF fp32: cos %.5f max|d| %.3g (must differ, "
          "cos >= 0.98)", name, c, mab);
    CHECK(rc1 == 0 && memcmp(out, out2, (size_t)n * D * 4) == 0, "%s: emulated FP8 with 1 and 2 threads: identical "
          "bits", name);

    /* The weight path equals quantising the weights by hand in 128 x 128 blocks (QKV as one stacked matrix,
     * as the kernel holds it). */
    sg_model mq = *m;
    const int L = m->cfg.num_layers, F = m->cfg.intermediate_size;
    sg_layer *ly = sg_test_xmalloc((size_t)L * sizeof *ly);
    float *keep[256];
    int nk = 0;
    mq.layers = ly;
    for (int l = 0; l < L && nk < 250; l++) {
        const sg_layer *s = &m->layers[l];
        ly[l] = *s;
        const float *qkv[3] = {s->q_w, s->k_w, s->v_w};
        float *w = fp8_copy(qkv, 3, 3 * D, D, keep, &nk);
        ly[l].q_w = w;
        ly[l].k_w = w + (size_t)D * D;
        ly[l].v_w = w + (size_t)2 * D * D;
        ly[l].o_w = fp8_copy(&s->o_w, 1, D, D, keep, &nk);
        ly[l].fc1_w = fp8_copy(&s->fc1_w, 1, F, D, keep, &nk);
        ly[l].fc2_w = fp8_copy(&s->fc2_w, 1, D, F, keep, &nk);
    }
    sg_mx_numerics pre = num;
    pre.linear_w = SG_MX_FP32;
    sg_mx_model *mx2 = sg_mx_model_create(&mq, pre, 2, err, sizeof err);
    for (int i = 0; i < n * D; i++) out2[i] = NAN;
    rc = mx2 ? sg_mx_forward(mx2, px, n, out2, NULL, 2, err, sizeof err) : -1;
    CHECK(rc == 0 && memcmp(out, out2, (size_t)n * D * 4) == 0,
          "%s: FP8 weights inside the emulation == weights quantised by hand in 128x128 blocks (identical bits)", name);
    sg_mx_model_free(mx2);
    for (int i = 0; i < nk; i++) free(keep[i]);
    free(ly);

    test_fc2_plan(m, px, ref, n, name);

    sg_mx_numerics badn = {(sg_mx_format)6, SG_MX_FP8, SG_MX_BF16, 0};
    err[0] = 0;
    mx2 = sg_mx_model_create(m, badn, 1, err, sizeof err);
    CHECK(mx2 == NULL && strstr(err, "bad numerics"), "%s: an unknown weight format is refused: %s", name, err);
    sg_mx_numerics bada = {SG_MX_FP8, SG_MX_FP8, SG_MX_FP8, 0};
    mx2 = sg_mx_model_create(m, bada, 1, err, sizeof err);
    CHECK(mx2 == NULL && strstr(err, "attention"), "%s: FP8 attention operands are refused: %s", name, err);
    sg_mx_model_free(mx);
    free(out);
    free(out2);
    free(px);
    free(ref);
    sg_model_free(m);
}

int main(void) {
    rng_state = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull;
    printf("seed %llu\n", (unsigned long long)rng_state);
    test_hand();
    test_random();
    test_gemm();
    const char *root = getenv("SG_ROOT");
    if (!root) root = ".";
    test_forward(root, "tiny16");
    test_forward(root, "tiny196");
    return CHECK_DONE();
}
