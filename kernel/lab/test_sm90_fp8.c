/* kernel/lab/test_sm90_fp8.c — the Hopper megakernel's FP8 GEMM task (kernel/sm90/sm90_gemm_fp8.cuh, run through
 * sg_sm90_lab_gemm_fp8) against the CPU emulation of its numerics (kernel/cpu/cpu_mxfp8.c, SG_MX_FP8).
 *
 * Each case draws fresh random operands (seed printed) at a real layer shape (M = 196 B; QKV, out-proj, FC1,
 * FC2), with row magnitudes spread over 2^-4..2^4, an outlier channel and an all-zero 128-block, so a scale
 * applied to the wrong row or block shows as an O(1) error. Checks:
 *   1. the device quantisers (A 1 x 128, W 128 x 128) equal sg_fp8_quantize bit for bit (codes and scales);
 *   2. the GEMM + epilogue against a double-precision reference on the dequantised operands (the sum of
 *      sa sw qa qw over exact products); what is left is the tensor core's accumulation inside a 128-wide
 *      block, the fp32 promotion and the epilogue's fp32 / bf16 rounding; tolerances beside each check;
 *   3. the E4M3 output with 1 x 128 scales (the next FP8 GEMM's input) equals sg_fp8_quantize of the fp32
 *      output the same launch wrote, bit for bit.
 * Outputs and the returned quantised operands are poisoned (NaN / 0xFF) before each run. Without CUDA in the
 * build, or without a compute capability 9.x GPU, the GPU checks print SKIP.
 *   test_sm90_fp8            correctness, B = 1 and 8, M = 1, the three consumer variants, pow2 scales
 *   test_sm90_fp8 --quick    the smallest cases only (for compute-sanitizer)
 *   test_sm90_fp8 --bench    also M = 25,088 (B = 128) timings for the 4 layer shapes, with the epilogue and
 *                            main loop alone, next to the bf16 task of the same lab in the same run
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/check.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/sm100/sm100_desc.h"
#include "kernel/lab/sm90_lab.h"

#define T_TOK 196
/* Consumer variants of sg_sm90_lab_gemm_fp8_args.sub. */
#define VARIANT(sub) ((sub) == 2 ? "cooperative" : (sub) == 1 ? "ping-pong n64 sub-tiles" : "ping-pong n128 rounds")

static uint64_t g_rng;
static float frand(float lo, float hi) { /* reproducible from the printed seed */
    return sg_test_frand(&g_rng, lo, hi);
}

static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* Fills x [rows, k] with U(-1, 1) times a per-row magnitude 2^U(-4, 4), column 7 x 20 (an outlier channel). */
static void fill_rows(float *x, int rows, int k, float base) {
    for (int r = 0; r < rows; r++) {
        const float mag = base * exp2f(frand(-4, 4));
        for (int c = 0; c < k; c++) x[(size_t)r * k + c] = frand(-1, 1) * mag * (c == 7 ? 20.0f : 1.0f);
    }
}

/* Counts positions where a and b differ as bit patterns (n elements of size bytes). */
static long bit_diffs(const void *a, const void *b, size_t n, size_t size) {
    long d = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * size, (const char *)b + i * size, size)) d++;
    return d;
}

/* out_mode: 0 fp32, 1 bf16, 3 fp32 + E4M3 (sg_sm90_lab_gemm_fp8_args). row_step > 1 checks every row_step-th
 * row only (the bench sizes). */
static void fp8_case(const char *name, int M, int N, int K, int gelu, int residual, int out_mode, int pow2, int sub,
                     int row_step, int reps) {
    const int kb = K / SG_FP8_BLOCK, nb = N / SG_FP8_BLOCK;
    float *A = sg_test_xmalloc((size_t)M * K * 4), *W = sg_test_xmalloc((size_t)N * K * 4);
    float *bias = sg_test_xmalloc((size_t)N * 4);
    float *res = residual ? sg_test_xmalloc((size_t)M * N * 4) : NULL, *out = sg_test_xmalloc((size_t)M * N * 4);
    fill_rows(A, M, K, 1.0f);
    if (K >= 256)
        for (int c = 128; c < 256; c++) A[c] = 0.0f; /* row 0, block 1: all zero (the amax floor) */
    fill_rows(W, N, K, 1.0f / sqrtf((float)K));
    for (int i = 0; i < N; i++) bias[i] = frand(-0.5f, 0.5f);
    if (res)
        for (size_t i = 0; i < (size_t)M * N; i++) res[i] = frand(-2, 2);
    for (size_t i = 0; i < (size_t)M * N; i++) out[i] = NAN;
    /* The device quantiser's results, poisoned; the CPU's for the checked rows and the whole W. */
    uint8_t *qa = sg_test_xmalloc((size_t)M * K), *qw = sg_test_xmalloc((size_t)N * K);
    uint8_t *qa_c = sg_test_xmalloc((size_t)M * K), *qw_c = sg_test_xmalloc((size_t)N * K);
    float *sa = sg_test_xmalloc((size_t)M * kb * 4), *sw = sg_test_xmalloc((size_t)nb * kb * 4);
    float *sa_c = sg_test_xmalloc((size_t)M * kb * 4), *sw_c = sg_test_xmalloc((size_t)nb * kb * 4);
    memset(qa, 0xFF, (size_t)M * K);
    memset(qw, 0xFF, (size_t)N * K);
    memset(sa, 0xFF, (size_t)M * kb * 4);
    memset(sw, 0xFF, (size_t)nb * kb * 4);
    uint8_t *oq = out_mode == 3 ? sg_test_xmalloc((size_t)M * N) : NULL;
    float *os = out_mode == 3 ? sg_test_xmalloc((size_t)M * nb * 4) : NULL;
    if (oq) {
        memset(oq, 0xFF, (size_t)M * N);
        memset(os, 0xFF, (size_t)M * nb * 4);
    }
    sg_sm90_lab_gemm_fp8_args a;
    memset(&a, 0, sizeof a);
    a.M = M, a.N = N, a.K = K, a.A = A, a.W = W, a.pow2 = pow2, a.bias = bias, a.gelu = gelu, a.residual = res;
    a.out_mode = out_mode, a.out = out, a.out_q = oq, a.out_s = os, a.qa = qa, a.qw = qw, a.sa = sa, a.sw = sw;
    a.sub = sub, a.reps = reps;
    char err[512] = "", what[256];
    snprintf(what, sizeof what, "sm90 fp8 gemm %s M=%d N=%d K=%d %s%s%s%s -> %s%s", name, M, N, K,
             VARIANT(sub), pow2 ? " pow2 scales" : "", gelu ? " +GELU" : "",
             res ? " +residual" : "", out_mode == 1 ? "bf16" : out_mode == 3 ? "fp32+e4m3" : "fp32",
             row_step > 1 ? " (sampled rows)" : "");
    if (sg_sm90_lab_gemm_fp8(&a, err, sizeof err) != 0) {
        CHECK(0, "%s: %s", what, err);
        goto done;
    }
    /* 1. Quantisers, bit for bit. */
    sg_fp8_quantize(W, (size_t)K, N, K, SG_FP8_BLOCK, SG_FP8_BLOCK, pow2, qw_c, sw_c);
    long dq = 0, ds = 0;
    for (int r = 0; r < M; r += row_step) {
        sg_fp8_quantize(A + (size_t)r * K, (size_t)K, 1, K, 1, SG_FP8_BLOCK, pow2, qa_c + (size_t)r * K,
                        sa_c + (size_t)r * kb);
        dq += bit_diffs(qa + (size_t)r * K, qa_c + (size_t)r * K, (size_t)K, 1);
        ds += bit_diffs(sa + (size_t)r * kb, sa_c + (size_t)r * kb, (size_t)kb, 4);
    }
    dq += bit_diffs(qw, qw_c, (size_t)N * K, 1);
    ds += bit_diffs(sw, sw_c, (size_t)nb * kb, 4);
    CHECK(dq == 0 && ds == 0, "%s: device quantisers == sg_fp8_quantize (A 1x128, W 128x128): %ld code and %ld "
          "scale mismatches", what, dq, ds);

    /* 2. Against the double reference on the CPU-quantised operands (equal to the device's when 1 passes). */
    float *dA = sg_test_xmalloc((size_t)K * 4 * 2), *dW = sg_test_xmalloc((size_t)N * K * 4);
    for (size_t i = 0; i < (size_t)N * K; i++) dW[i] = sg_e4m3_decode(qw_c[i]); /* exact in float */
    double se = 0, sr = 0, me = 0, mr = 0;
    long bad = 0;
    for (int r = 0; r < M; r += row_step) {
        for (int i = 0; i < K; i++) dA[i] = sg_e4m3_decode(qa_c[(size_t)r * K + i]);
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int b = 0; b < kb; b++) {
                double d = 0;
                const float *x = dA + b * SG_FP8_BLOCK, *w = dW + (size_t)n * K + b * SG_FP8_BLOCK;
                for (int t = 0; t < SG_FP8_BLOCK; t++) d += (double)x[t] * w[t];
                s += d * sa_c[(size_t)r * kb + b] * sw_c[(size_t)(n / SG_FP8_BLOCK) * kb + b];
            }
            s += bias[n];
            if (gelu) s = gelu_tanh(s);
            if (res) s += res[(size_t)r * N + n];
            const double g = out[(size_t)r * N + n];
            if (!isfinite(g)) {
                bad++;
                continue;
            }
            se += (g - s) * (g - s);
            sr += s * s;
            if (fabs(g - s) > me) me = fabs(g - s);
            if (fabs(s) > mr) mr = fabs(s);
        }
    }
    free(dA);
    free(dW);
    const double l2 = sqrt(se / (sr > 0 ? sr : 1)), mx = me / (mr > 0 ? mr : 1);
    /* bf16 output: one rounding, 2^-9 relative (rel L2 ~1.5e-3). fp32 output: fp32 promotion alone would give
     * ~1e-6; the bound leaves room for the tensor core's reduced-precision accumulation inside a 128-wide block
     * (measured: the printed figure) while any wrong scale, row or swizzle gives O(1). */
    const double tol_l2 = out_mode == 1 ? 4e-3 : 1e-3, tol_max = out_mode == 1 ? 8e-3 : 1e-2;
    CHECK(bad == 0 && l2 <= tol_l2 && mx <= tol_max,
          "%s: vs double reference on the dequantised operands: rel L2 %.2e (tol %.0e), max err/max %.2e (tol "
          "%.0e), non-finite %ld", what, l2, tol_l2, mx, tol_max, bad);

    /* 3. The E4M3 output equals the CPU quantiser on this launch's own fp32 output. */
    if (out_mode == 3) {
        uint8_t *q = sg_test_xmalloc((size_t)N);
        float *s = sg_test_xmalloc((size_t)nb * 4);
        long dqo = 0, dso = 0;
        for (int r = 0; r < M; r++) {
            sg_fp8_quantize(out + (size_t)r * N, (size_t)N, 1, N, 1, SG_FP8_BLOCK, pow2, q, s);
            dqo += bit_diffs(q, oq + (size_t)r * N, (size_t)N, 1);
            dso += bit_diffs(s, os + (size_t)r * nb, (size_t)nb, 4);
        }
        CHECK(dqo == 0 && dso == 0, "%s: E4M3 output + 1x128 scales == sg_fp8_quantize(fp32 output), all %d rows: "
              "%ld code and %ld scale mismatches", what, M, dqo, dso);
        free(q);
        free(s);
    }
    if (reps > 0)
        printf("TIME: %s: %.1f us, %.0f TFLOP/s (A quantiser alone: %.1f us)\n", what, a.us, a.tflops, a.quant_us);
done:
    free(A); free(W); free(bias); free(res); free(out); free(qa); free(qw); free(qa_c); free(qw_c);
    free(sa); free(sw); free(sa_c); free(sw_c); free(oq); free(os);
}

/* Timing probe: FP8 main loop with no epilogue stores (out_mode 2), or with the E4M3 output alone (out_mode 4,
 * what FC1 writes for FC2; checked through mode 3 by fp8_case). */
static void fp8_probe(const char *name, int M, int N, int K, int sub, int out_mode) {
    float *A = sg_test_xmalloc((size_t)M * K * 4), *W = sg_test_xmalloc((size_t)N * K * 4);
    fill_rows(A, M, K, 1.0f);
    fill_rows(W, N, K, 0.03f);
    sg_sm90_lab_gemm_fp8_args a;
    memset(&a, 0, sizeof a);
    uint8_t *oq = out_mode == 4 ? sg_test_xmalloc((size_t)M * N) : NULL;
    float *os = out_mode == 4 ? sg_test_xmalloc((size_t)M * (N / SG_FP8_BLOCK) * 4) : NULL;
    a.M = M, a.N = N, a.K = K, a.A = A, a.W = W, a.out_mode = out_mode, a.out_q = oq, a.out_s = os, a.sub = sub;
    a.gelu = out_mode == 4, a.reps = 20;
    char err[512] = "";
    if (sg_sm90_lab_gemm_fp8(&a, err, sizeof err) != 0)
        CHECK(0, "sm90 fp8 probe %s: %s", name, err);
    else
        printf("TIME: sm90 fp8 gemm %s M=%d N=%d K=%d %s %s: %.1f us, %.0f TFLOP/s\n", name, M, N, K,
               VARIANT(sub),
               out_mode == 4 ? "+GELU -> E4M3 output alone" : "main loop only (no stores)", a.us, a.tflops);
    free(A);
    free(W);
    free(oq);
    free(os);
}

/* The bf16 task of the same lab (ping-pong, BN 128) on the same shape, for comparison in the same run:
 * with its epilogue (out_bf16 as the layer uses it) and main loop alone. Timing only (test_sm90_lab checks it). */
static void bf16_time(const char *name, int M, int N, int K, int gelu, int residual, int out_bf16) {
    float *A = sg_test_xmalloc((size_t)M * K * 4), *W = sg_test_xmalloc((size_t)N * K * 4);
    float *bias = sg_test_xmalloc((size_t)N * 4);
    float *res = residual ? sg_test_xmalloc((size_t)M * N * 4) : NULL, *out = sg_test_xmalloc((size_t)M * N * 4);
    fill_rows(A, M, K, 1.0f);
    fill_rows(W, N, K, 0.03f);
    for (int i = 0; i < N; i++) bias[i] = frand(-0.5f, 0.5f);
    if (res)
        for (size_t i = 0; i < (size_t)M * N; i++) res[i] = frand(-2, 2);
    char err[512] = "";
    for (int probe = 0; probe < 2; probe++) {
        sg_sm90_lab_gemm_args a = {M, N, K, A, W, bias, gelu, res, probe ? 2 : out_bf16, out, 128, 1, 20, 0, 0, 0, 0, 0};
        if (sg_sm90_lab_gemm(&a, err, sizeof err) != 0)
            CHECK(0, "sm90 bf16 gemm %s for comparison: %s", name, err);
        else
            printf("TIME: sm90 bf16 gemm %s M=%d N=%d K=%d ping-pong %s: %.1f us, %.0f TFLOP/s\n", name, M, N, K,
                   probe ? "main loop only (no stores)" : "with epilogue", a.us, a.tflops);
    }
    free(A); free(W); free(bias); free(res); free(out);
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const int bench = argc > 1 && !strcmp(argv[1], "--bench");
    char err[512] = "";
    if (!sg_test_lab_ready("sm90 fp8 lab", sg_sm90_lab_available)) return CHECK_DONE();
    g_rng = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    printf("seed %llu\n", (unsigned long long)g_rng);

    float dummy = 0;
    sg_sm90_lab_gemm_fp8_args bad;
    memset(&bad, 0, sizeof bad);
    bad.M = 196, bad.N = 768, bad.K = 700, bad.A = bad.W = bad.out = &dummy;
    CHECK(sg_sm90_lab_gemm_fp8(&bad, err, sizeof err) == -1, "sm90 fp8 gemm rejects K=700 (%s)", err);

    /* The four layer GEMMs as the FP8 layer would run them: QKV -> bf16 (attention stays bf16), out-proj and
     * FC2 + residual -> fp32 residual stream, FC1 + GELU -> E4M3 + scales (FC2's input) and fp32 for the check. */
    const int Bs[2] = {1, 8};
    for (int sub = 0; sub < 3; sub++)
        for (int i = 0; i < (quick ? 1 : 2); i++) {
            const int M = T_TOK * Bs[i];
            fp8_case("qkv", M, 2304, 768, 0, 0, 1, 0, sub, 1, 0);
            fp8_case("out-proj", M, 768, 768, 0, 1, 0, 0, sub, 1, 0);
            fp8_case("fc1", M, 3072, 768, 1, 0, 3, 0, sub, 1, 0);
            fp8_case("fc2", M, 768, 3072, 0, 1, 0, 0, sub, 1, 0);
        }
    fp8_case("fc1", T_TOK, 3072, 768, 1, 0, 3, 1, 0, 1, 0);
    if (!quick) {
        fp8_case("qkv", 1, 2304, 768, 0, 0, 0, 0, 0, 1, 0);
        fp8_case("fc2", 1, 768, 3072, 0, 1, 3, 0, 1, 1, 0);
        fp8_case("fc2", T_TOK * 8, 768, 3072, 0, 1, 3, 1, 1, 1, 0);
    }
    if (bench) {
        const int M = T_TOK * 128;
        for (int sub = 0; sub < 3; sub++) {
            fp8_case("qkv", M, 2304, 768, 0, 0, 1, 0, sub, 61, 20);
            fp8_case("out-proj", M, 768, 768, 0, 1, 0, 0, sub, 61, 20);
            fp8_case("fc1", M, 3072, 768, 1, 0, 3, 0, sub, 61, 20);
            fp8_case("fc2", M, 768, 3072, 0, 1, 0, 0, sub, 61, 20);
            fp8_probe("qkv", M, 2304, 768, sub, 2);
            fp8_probe("out-proj", M, 768, 768, sub, 2);
            fp8_probe("fc1", M, 3072, 768, sub, 2);
            fp8_probe("fc2", M, 768, 3072, sub, 2);
            fp8_probe("fc1", M, 3072, 768, sub, 4);
        }
        bf16_time("qkv", M, 2304, 768, 0, 0, 1);
        bf16_time("out-proj", M, 768, 768, 0, 1, 0);
        bf16_time("fc1", M, 3072, 768, 1, 0, 1);
        bf16_time("fc2", M, 768, 3072, 0, 1, 0);
    }
    return CHECK_DONE();
}
