/* tests/test_mxfp8.c — the MXFP8 emulation (kernel/cpu/cpu_mxfp8.c) and its converters
 * (kernel/sm100/sm100_desc.h) against values worked out from the OCP Microscaling Formats spec v1.0.
 *
 *   1. E4M3 decode of all 256 codes against the spec formula evaluated independently (pow in double), plus
 *      hand-derived constants; encode(decode(c)) == c for every finite code.
 *   2. E4M3 encode: ties-to-even and saturation edge cases worked out by hand, then 300k fresh random
 *      floats (and every midpoint between neighbouring codes) against a brute-force nearest-code search.
 *   3. UE8M0 scale selection: hand cases (amax 0, 448, next float above 448, 224, 1, FLT_MAX, inf, NaN,
 *      tiny) and random amax against a brute-force "smallest e with amax <= 448 * 2^e".
 *   4. Quantise / dequantise of blocks: partial blocks, all-zero blocks, NaN elements, and the invariant
 *      that no element saturates and every block uses its top binade.
 *   5. sg_mxfp8_gemm_ref against a double reference on fresh random operands whose 32-blocks span 2^±20,
 *      and the fast path (dequantise + the fp32 packed GEMM) against sg_mxfp8_gemm_ref.
 *   6. The emulated forward on the tiny fixtures: fp32 numerics match HF (1e-4), MXFP8 numerics differ
 *      from HF by a bounded amount, the weight path equals quantising the weights by hand, thread counts
 *      give identical bits, bad numerics are refused.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/cpu/cpu_gemm.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/sm100/sm100_desc.h"
#include "weights/model_load.h"

static uint64_t rng_state;
static uint64_t rng_next(void) { return sg_test_splitmix64(&rng_state); }
static double rng_unit(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }
static double rng_normal(void) {
    double u = rng_unit() + 1e-300, v = rng_unit();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* The spec formula for an E4M3 code, in double, written independently of sg_e4m3_decode. */
static double e4m3_formula(int c) {
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? pow(2.0, -6) * (m / 8.0) : pow(2.0, e - 7) * (1.0 + m / 8.0);
    return s ? -v : v;
}

/* Nearest finite code to x by exhaustive search: ties go to the code with an even mantissa (the OCP
 * round-to-nearest-even), beyond 448 saturate; NaN -> 0x7F. */
static int e4m3_bruteforce(float xf) {
    if (isnan(xf)) return 0x7F;
    double x = xf;
    int best = -1;
    double bd = INFINITY;
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7F) == 0x7F) continue;
        if ((c >> 7) != (signbit(xf) ? 1 : 0)) continue; /* the sign is kept (also for -0 and tiny negatives) */
        double d = fabs(x - e4m3_formula(c));
        if (d < bd || (d == bd && (c & 1) == 0)) {
            bd = d;
            best = c;
        }
    }
    return best;
}

static void test_decode(void) {
    int bad = 0, rt = 0;
    for (int c = 0; c < 256; c++) {
        double want = e4m3_formula(c);
        float got = sg_e4m3_decode((uint8_t)c);
        if (isnan(want) ? !isnan(got) : ((double)got != want || (signbit(got) != 0) != (c >> 7))) bad++;
        if (!isnan(want) && sg_e4m3_encode(got) != c) rt++;
    }
    CHECK(bad == 0, "E4M3 decode of all 256 codes equals the OCP formula (%d mismatches)", bad);
    CHECK(rt == 0, "E4M3 encode(decode(c)) == c for all 254 finite codes incl. -0 (%d mismatches)", rt);
    /* Hand-derived: S.EEEE.MMM, value 2^(E-7)(1 + M/8), subnormal M 2^-9. */
    struct { int c; double v; } k[] = {
        {0x00, 0.0}, {0x01, 0.001953125 /* 2^-9, smallest subnormal */}, {0x07, 0.013671875 /* 7*2^-9 */},
        {0x08, 0.015625 /* 2^-6, smallest normal */}, {0x38, 1.0}, {0x39, 1.125}, {0x3C, 1.5}, {0x40, 2.0},
        {0x77, 240.0 /* 2^7 * 1.875 */}, {0x78, 256.0}, {0x7D, 416.0}, {0x7E, 448.0 /* max */}, {0xB8, -1.0},
        {0xFE, -448.0}};
    int kb = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if ((double)sg_e4m3_decode((uint8_t)k[i].c) != k[i].v) kb++;
    CHECK(kb == 0, "E4M3 decode of 14 hand-worked codes (0x01 = 2^-9, 0x38 = 1, 0x7E = 448, ...)");
    CHECK(isnan(sg_e4m3_decode(0x7F)) && isnan(sg_e4m3_decode(0xFF)), "E4M3 0x7F and 0xFF are NaN (no inf)");
}

static void test_encode(void) {
    struct { float x; int c; const char *why; } k[] = {
        {1.0625f, 0x38, "1.0625 ties between 1 (M=0) and 1.125 (M=1): even -> 0x38"},
        {1.1875f, 0x3A, "1.1875 ties between 1.125 (M=1) and 1.25 (M=2): even -> 0x3A"},
        {1.0626f, 0x39, "just above the tie rounds up -> 0x39"},
        {248.0f, 0x78, "248 ties between 240 (0x77, M=7) and 256 (0x78, M=0) -> 256"},
        {432.0f, 0x7E, "432 ties between 416 (M=5) and 448 (M=6) -> 448"},
        {448.0f, 0x7E, "448 is the max"},
        {449.0f, 0x7E, "449 saturates to 448"},
        {464.0f, 0x7E, "464 (the would-be midpoint to 480) saturates"},
        {1e30f, 0x7E, "1e30 saturates"},
        {INFINITY, 0x7E, "+inf saturates to 448 (satfinite)"},
        {-INFINITY, 0xFE, "-inf saturates to -448"},
        {0.0009765625f, 0x00, "2^-10 ties between 0 and 2^-9: even -> 0"},
        {0.0029296875f, 0x02, "3*2^-10 ties between 2^-9 (M=1) and 2^-8 (M=2) -> M=2"},
        {0.0146484375f, 0x08, "7.5*2^-9 ties between 7*2^-9 (0x07) and 2^-6 (0x08) -> 0x08"},
        {0.00048828125f, 0x00, "2^-11 underflows to +0"},
        {-0.00048828125f, 0x80, "-2^-11 underflows to -0"},
        {-0.0f, 0x80, "-0 keeps its sign"},
        {-1.5f, 0xBC, "-1.5 -> 0xBC"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int got = sg_e4m3_encode(k[i].x);
        CHECK(got == k[i].c, "E4M3 encode: %s (got 0x%02X)", k[i].why, got);
    }
    CHECK(sg_e4m3_encode(NAN) == 0x7F, "E4M3 encode: NaN -> 0x7F");

    int bad = 0;
    const uint64_t seed = 0x5EED0001u ^ (uint64_t)time(NULL);
    rng_state = seed;
    for (int i = 0; i < 300000; i++) {
        float x = (float)(rng_normal() * ldexp(1.0, (int)(rng_next() % 36) - 16)); /* magnitudes 2^-16..2^20 */
        if (sg_e4m3_encode(x) != e4m3_bruteforce(x)) bad++;
    }
    CHECK(bad == 0, "E4M3 encode of 300000 fresh random floats (seed %llu; later checks continue this stream) equals "
          "the brute-force nearest-even search (%d off)", (unsigned long long)seed, bad);
    int badm = 0;
    for (int c = 0; c < 0x7E; c++) { /* every midpoint between neighbouring positive codes, and its negative */
        float mid = (float)((e4m3_formula(c) + e4m3_formula(c + 1)) / 2);
        if (sg_e4m3_encode(mid) != e4m3_bruteforce(mid) || sg_e4m3_encode(-mid) != e4m3_bruteforce(-mid)) badm++;
        float up = nextafterf(mid, INFINITY), dn = nextafterf(mid, 0);
        if (sg_e4m3_encode(up) != c + 1 || sg_e4m3_encode(dn) != c) badm++;
    }
    CHECK(badm == 0, "E4M3 encode at all 126 midpoints (ties to even) and one float either side (%d off)", badm);
}

/* Smallest e in [-127, 127] with amax <= 448 * 2^e, by search. */
static int scale_bruteforce(float amax) {
    for (int e = -127; e < 127; e++)
        if ((double)amax <= 448.0 * ldexp(1.0, e)) return e;
    return 127;
}

static void test_scale(void) {
    CHECK(sg_ue8m0_for_amax(0.0f) == 0, "UE8M0: amax 0 -> e = -127 (code 0): log2(0) = -inf clamps");
    CHECK(sg_ue8m0_for_amax(448.0f) == 127, "UE8M0: amax 448 -> e = 0 (code 127)");
    CHECK(sg_ue8m0_for_amax(nextafterf(448.0f, INFINITY)) == 128, "UE8M0: amax just above 448 -> e = 1 (code 128)");
    CHECK(sg_ue8m0_for_amax(224.0f) == 126, "UE8M0: amax 224 = 448/2 -> e = -1 (code 126)");
    CHECK(sg_ue8m0_for_amax(1.0f) == 119, "UE8M0: amax 1 -> ceil(log2(1/448)) = ceil(-8.81) = -8 (code 119)");
    CHECK(sg_ue8m0_for_amax(FLT_MAX) == 247, "UE8M0: amax FLT_MAX -> ceil(128 - 8.81) = 120 (code 247)");
    CHECK(sg_ue8m0_for_amax(INFINITY) == 254, "UE8M0: amax inf -> clamp 127 (code 254, the largest finite)");
    CHECK(sg_ue8m0_for_amax(NAN) == 255, "UE8M0: amax NaN -> 0xFF (NaN scale)");
    CHECK(sg_ue8m0_for_amax(1e-40f) == 0, "UE8M0: subnormal amax 1e-40 -> clamp -127 (code 0)");
    CHECK(sg_ue8m0_decode(127) == 1.0f && sg_ue8m0_decode(0) == ldexpf(1.0f, -127) && sg_ue8m0_decode(254) == ldexpf(1.0f, 127) &&
              isnan(sg_ue8m0_decode(255)),
          "UE8M0 decode: 127 -> 1, 0 -> 2^-127, 254 -> 2^127, 255 -> NaN");
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        float a = (float)(rng_unit() * ldexp(1.0, (int)(rng_next() % 300) - 150));
        if (i % 7 == 0) a = (float)(448.0 * ldexp(1.0, (int)(rng_next() % 200) - 100)); /* exact boundaries */
        if (sg_ue8m0_for_amax(a) != scale_bruteforce(a) + 127) bad++;
    }
    CHECK(bad == 0, "UE8M0 of 100000 fresh amax (2^-150..2^150, incl. exact 448*2^e) equals the brute-force search");
}

static void test_quantize(void) {
    enum { R = 3, K = 80 }; /* 80 = 2 full blocks of 32 + a partial block of 16 */
    float x[R * K];
    uint8_t q[R * K], s[R * 3];
    for (int i = 0; i < R * K; i++) x[i] = (float)(rng_normal() * ldexp(1.0, (int)(rng_next() % 30) - 15));
    for (int i = 0; i < 32; i++) x[K + i] = 0.0f; /* row 1, block 0: all zero */
    x[2 * K + 40] = NAN;                          /* row 2, block 1: one NaN */
    memset(q, 0xAA, sizeof q);
    memset(s, 0xAA, sizeof s);
    sg_mxfp8_quantize(x, K, R, K, q, s);
    int top = 1, nosat = 1;
    for (int r = 0; r < R; r++)
        for (int b = 0; b < 3; b++) {
            int k0 = 32 * b, k1 = k0 + 32 < K ? k0 + 32 : K, maxmag = 0;
            float amax = 0;
            for (int i = k0; i < k1; i++) {
                if (!isnan(x[r * K + i]) && fabsf(x[r * K + i]) > amax) amax = fabsf(x[r * K + i]);
                int c = q[r * K + i] & 0x7F;
                if (c != 0x7F && c > maxmag) maxmag = c;
            }
            if (amax == 0) continue;
            if (s[r * 3 + b] != scale_bruteforce(amax) + 127) top = 0;
            if (maxmag < 0x70) top = 0;  /* amax/2^e in (224, 448] -> code >= 0x70 (E = 14) */
            for (int i = k0; i < k1; i++) {
                float xi = x[r * K + i];
                if (isnan(xi)) continue;
                double scaled = (double)xi * ldexp(1.0, 127 - s[r * 3 + b]);
                if (fabs(scaled) > 448.0 || q[r * K + i] != e4m3_bruteforce((float)scaled)) nosat = 0;
            }
        }
    CHECK(top, "quantize: each block's scale is the brute-force one and its largest element lands in the top binade");
    CHECK(nosat, "quantize: every element is the nearest E4M3 of x / 2^e and never saturates");
    int zero = s[3] == 0;
    for (int i = 0; i < 32; i++) zero &= q[K + i] == 0;
    CHECK(zero, "quantize: an all-zero block gets scale code 0 and zero elements");
    CHECK(q[2 * K + 40] == 0x7F && s[2 * 3 + 1] != 0xFF, "quantize: a NaN element becomes 0x7F and is left out of amax");
    float y[R * K];
    sg_mxfp8_dequantize(q, s, R, K, y, K);
    double worst = 0;
    for (int i = 0; i < R * K; i++) {
        if (isnan(x[i])) continue;
        int b = (i % K) / 32;
        double step = ldexp(1.0, s[(i / K) * 3 + b] - 127 - 9); /* smallest subnormal step of this block */
        double err = fabs(y[i] - x[i]), rel = err / fmax(fabs(x[i]), 1e-300);
        if (rel > 1.0 / 16 && err > step / 2) worst = rel; /* half an ulp: 2^-4 relative, or half a subnormal step */
    }
    CHECK(worst == 0, "dequantize(quantize(x)) is within half an E4M3 ulp of x everywhere (%g)", worst);
    CHECK(isnan(y[2 * K + 40]), "dequantize: the NaN element stays NaN");
}

static void test_gemm(void) {
    enum { M = 7, N = 21, K = 200 }; /* K: 6 full blocks + a partial one; N: past one 16-wide panel */
    static float a[M * K], b[N * K], ad[M * K], bd[N * K], yref[M * N], yfast[M * N];
    static uint8_t qa[M * K], qb[N * K], sa[M * 7], sb[N * 7];
    for (int i = 0; i < M * K; i++) a[i] = (float)(rng_normal() * ldexp(1.0, (int)((i / 32 * 7919u) % 41) - 20));
    for (int i = 0; i < N * K; i++) b[i] = (float)(rng_normal() * ldexp(1.0, (int)((i / 32 * 104729u) % 41) - 20));
    sg_mxfp8_quantize(a, K, M, K, qa, sa);
    sg_mxfp8_quantize(b, K, N, K, qb, sb);
    sg_mxfp8_dequantize(qa, sa, M, K, ad, K);
    sg_mxfp8_dequantize(qb, sb, N, K, bd, K);
    for (int i = 0; i < M * N; i++) yref[i] = yfast[i] = NAN;
    sg_mxfp8_gemm_ref(qa, sa, qb, sb, M, N, K, yref);
    double worst = 0, worst_fast = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0, mag = 0;
            for (int t = 0; t < K; t++) {
                exact += (double)ad[i * K + t] * bd[j * K + t]; /* exact: products of <=4-bit significands */
                mag += fabs((double)ad[i * K + t] * bd[j * K + t]);
            }
            /* 7 fp32 block additions: error <= 7 * 2^-24 * sum|terms| (+ the block roundings, same bound) */
            double e = fabs(yref[i * N + j] - exact) / (mag * 14 * ldexp(1.0, -24));
            if (!(e <= worst)) worst = e;
        }
    CHECK(worst <= 1.0, "block-scaled GEMM ref vs exact double: error <= 14 * 2^-24 * sum|a*b| (worst %.3f of the bound)",
          worst);
    float *pk = malloc(sg_cpu_pack_size(N, K) * sizeof(float));
    sg_cpu_pack_nk(bd, K, N, K, pk);
    sg_cpu_wpack w = {pk, N, K};
    sg_cpu_gemm(ad, K, M, &w, NULL, yfast, N, SG_GEMM_STORE, 1);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double mag = 0;
            for (int t = 0; t < K; t++) mag += fabs((double)ad[i * K + t] * bd[j * K + t]);
            double e = fabs((double)yfast[i * N + j] - yref[i * N + j]) / (mag * (K + 14) * ldexp(1.0, -24));
            if (!(e <= worst_fast)) worst_fast = e;
        }
    CHECK(worst_fast <= 1.0, "fast path (dequantise + fp32 packed GEMM) vs block-scaled ref: within the fp32 "
          "summation bound (worst %.3f of (K+14) * 2^-24 * sum|a*b|)", worst_fast);
    free(pk);
}

/* A copy of w [n, k] through MXFP8 with the public quantiser (the test's own weight path). */
static float *mx_copy(const float *w, int n, int k, float **keep, int *nkeep) {
    int nb = (k + 31) / 32;
    uint8_t *q = malloc((size_t)n * k), *s = malloc((size_t)n * nb);
    float *y = malloc((size_t)n * k * sizeof(float));
    sg_mxfp8_quantize(w, (size_t)k, n, k, q, s);
    sg_mxfp8_dequantize(q, s, n, k, y, (size_t)k);
    free(q);
    free(s);
    keep[(*nkeep)++] = y;
    return y;
}

static void test_forward(const char *root, const char *name) {
    char dir[1024], path[1100], err[512];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", root, name);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    sg_model *m = sg_model_load(path, err, sizeof err);
    if (!m) {
        CHECK(0, "%s: load: %s", name, err);
        return;
    }
    size_t pb = 0, rb = 0;
    snprintf(path, sizeof path, "%s/pixels.f32", dir);
    float *px = sg_test_read_file(path, &pb);
    snprintf(path, sizeof path, "%s/pooled.f32", dir);
    float *ref = sg_test_read_file(path, &rb);
    const int D = m->cfg.hidden_size, S = m->cfg.image_size, n = (int)(pb / (sizeof(float) * 3 * S * S));
    if (!px || !ref || n < 1 || rb != (size_t)n * D * sizeof(float)) {
        CHECK(0, "%s: pixels.f32 / pooled.f32 unreadable or inconsistent", name);
        return;
    }
    float *out = malloc((size_t)n * D * sizeof(float)), *out2 = malloc((size_t)n * D * sizeof(float));
    double mab;

    sg_mx_numerics f32 = {SG_MX_FP32, SG_MX_FP32, SG_MX_FP32, 0};
    sg_mx_model *mx = sg_mx_model_create(m, f32, 2, err, sizeof err);
    for (int i = 0; i < n * D; i++) out[i] = NAN;
    int rc = mx ? sg_mx_forward(mx, px, n, out, NULL, 2, err, sizeof err) : -1;
    double c = rc == 0 ? sg_test_cos_min(out, ref, n, D, &mab) : 0;
    CHECK(rc == 0 && mab <= 1e-4 && c >= 0.99999, "%s: emulation with fp32 numerics vs HF fp32: max|d| %.2g cos %.7f "
          "(gate 1e-4, 0.99999: the plumbing matches the reference)", name, mab, c);
    sg_mx_model_free(mx);

    sg_mx_numerics num = sg_mx_numerics_sm100();
    mx = sg_mx_model_create(m, num, 2, err, sizeof err);
    for (int i = 0; i < n * D; i++) out[i] = out2[i] = NAN;
    rc = mx ? sg_mx_forward(mx, px, n, out, NULL, 2, err, sizeof err) : -1;
    int rc1 = mx ? sg_mx_forward(mx, px, n, out2, NULL, 1, err, sizeof err) : -1;
    c = rc == 0 ? sg_test_cos_min(out, ref, n, D, &mab) : 0;
    /* MXFP8 must change the result (it rounds every operand) but stay close: a 3-bit mantissa gives about
     * 256x bf16's 1 - cos (see docs/perf-notes.md, kernel/sm100 section); 0.98 leaves room for the tiny model's noise. */
    CHECK(rc == 0 && c >= 0.98 && mab > 1e-4, "%s: emulated MXFP8 vs HF fp32: cos %.5f max|d| %.3g (must differ, "
          "cos >= 0.98)", name, c, mab);
    CHECK(rc1 == 0 && memcmp(out, out2, (size_t)n * D * sizeof(float)) == 0,
          "%s: emulated MXFP8 with 1 and 2 threads: identical bits", name);

    /* The weight path equals quantising the weights by hand with the public quantiser. */
    sg_model mq = *m;
    const int L = m->cfg.num_layers, F = m->cfg.intermediate_size, K = sg_config_patch_dim(&m->cfg);
    sg_layer *ly = malloc((size_t)L * sizeof *ly);
    float *keep[256];
    int nk = 0;
    mq.layers = ly;
    mq.patch_w = mx_copy(m->patch_w, D, K, keep, &nk);
    for (int l = 0; l < L; l++) {
        ly[l] = m->layers[l];
        ly[l].q_w = mx_copy(m->layers[l].q_w, D, D, keep, &nk);
        ly[l].k_w = mx_copy(m->layers[l].k_w, D, D, keep, &nk);
        ly[l].v_w = mx_copy(m->layers[l].v_w, D, D, keep, &nk);
        ly[l].o_w = mx_copy(m->layers[l].o_w, D, D, keep, &nk);
        ly[l].fc1_w = mx_copy(m->layers[l].fc1_w, F, D, keep, &nk);
        ly[l].fc2_w = mx_copy(m->layers[l].fc2_w, D, F, keep, &nk);
    }
    mq.head_in_w = mx_copy(m->head_in_w, 3 * D, D, keep, &nk);
    mq.head_out_w = mx_copy(m->head_out_w, D, D, keep, &nk);
    mq.head_fc1_w = mx_copy(m->head_fc1_w, F, D, keep, &nk);
    mq.head_fc2_w = mx_copy(m->head_fc2_w, D, F, keep, &nk);
    sg_mx_numerics pre = num;
    pre.linear_w = SG_MX_FP32;
    sg_mx_model *mx2 = sg_mx_model_create(&mq, pre, 2, err, sizeof err);
    for (int i = 0; i < n * D; i++) out2[i] = NAN;
    rc = mx2 ? sg_mx_forward(mx2, px, n, out2, NULL, 2, err, sizeof err) : -1;
    CHECK(rc == 0 && memcmp(out, out2, (size_t)n * D * sizeof(float)) == 0,
          "%s: MXFP8 weights inside the emulation == weights quantised by hand, then fp32 (identical bits)", name);
    sg_mx_model_free(mx2);
    for (int i = 0; i < nk; i++) free(keep[i]);
    free(ly);

    /* A bf16 run must land between fp32 and MXFP8 in accuracy. */
    sg_mx_numerics b16 = {SG_MX_BF16, SG_MX_BF16, SG_MX_BF16, 0};
    mx2 = sg_mx_model_create(m, b16, 2, err, sizeof err);
    rc = mx2 ? sg_mx_forward(mx2, px, n, out2, NULL, 2, err, sizeof err) : -1;
    double cb = rc == 0 ? sg_test_cos_min(out2, ref, n, D, &mab) : 0;
    CHECK(rc == 0 && cb > c && cb >= 0.9999, "%s: emulated bf16 vs HF: cos %.6f (>= 0.9999 and better than MXFP8's %.5f)",
          name, cb, c);
    sg_mx_model_free(mx2);

    sg_mx_numerics badn = {SG_MX_MXFP8, SG_MX_MXFP8, SG_MX_MXFP8, 0};
    err[0] = 0;
    mx2 = sg_mx_model_create(m, badn, 1, err, sizeof err);
    CHECK(mx2 == NULL && strstr(err, "attention"), "%s: MXFP8 attention operands are refused: %s", name, err);
    CHECK(sg_mx_forward(mx, px, -1, out, NULL, 1, err, sizeof err) == -1, "%s: negative batch refused: %s", name, err);
    sg_mx_model_free(mx);
    free(out);
    free(out2);
    free(px);
    free(ref);
    sg_model_free(m);
}

int main(void) {
    rng_state = 0x1234567u;
    test_decode();
    test_encode();
    test_scale();
    test_quantize();
    test_gemm();
    const char *root = getenv("SG_ROOT");
    if (!root) root = ".";
    test_forward(root, "tiny16");
    test_forward(root, "tiny196");
    return CHECK_DONE();
}
