/* tests/test_cpu_gemm.c — the CPU encoder's packed GEMM against a plain double-precision product.
 *
 * Fresh random X, W, bias and Y (seeded from the clock; the seed is printed) for shapes that hit every edge
 * of the blocking: m, n, k below, at and above the micro-tile (6 x 16), the k slice (256), the row block (96)
 * and the column block (128), and strided X/Y (ldx > k, ldy > n) as attention uses them. Each epilogue is
 * checked: plain, bias-free, tanh GELU, erf GELU and the residual add. Tolerance: relative to the sum of
 * |x·w| terms, 1e-5, about 100 float ulps, since fp32 accumulation over k <= 700 terms errs by ~k·2^-24.
 * Columns past n and rows past m (inside ldy) must be left untouched. Also: 1 thread == 3 threads, bitwise;
 * and cpu_math.c's exp, GELU and softmax against double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/cpu/cpu_gemm.h"
#include "kernel/cpu/cpu_math.h"

static double urand(void) { return rand() / (double)RAND_MAX * 2.0 - 1.0; }

static double gelu_tanh_d(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double gelu_erf_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static int run_case(int m, int n, int k, sg_gemm_epilogue epi, int with_bias, double *worst) {
    const size_t ldx = (size_t)k + 3, ldy = (size_t)n + 5;
    float *x = malloc((size_t)m * ldx * sizeof(float)), *w = malloc((size_t)n * k * sizeof(float));
    float *bias = malloc((size_t)n * sizeof(float));
    float *y = malloc((size_t)(m + 1) * ldy * sizeof(float)), *y0 = malloc((size_t)(m + 1) * ldy * sizeof(float));
    float *y3 = malloc((size_t)(m + 1) * ldy * sizeof(float));
    float *wp = malloc(sg_cpu_pack_size(n, k) * sizeof(float));
    for (size_t i = 0; i < (size_t)m * ldx; i++) x[i] = (float)urand();
    for (size_t i = 0; i < (size_t)n * k; i++) w[i] = (float)(urand() * 0.2);
    for (int i = 0; i < n; i++) bias[i] = (float)urand();
    for (size_t i = 0; i < (size_t)(m + 1) * ldy; i++) y0[i] = (float)urand();
    memcpy(y, y0, (size_t)(m + 1) * ldy * sizeof(float));
    memcpy(y3, y0, (size_t)(m + 1) * ldy * sizeof(float));
    sg_cpu_pack_nk(w, (size_t)k, n, k, wp);
    sg_cpu_wpack pk = {wp, n, k};
    const float *b = with_bias ? bias : NULL;
    sg_cpu_gemm(x, ldx, m, &pk, b, y, ldy, epi, 1);
    sg_cpu_gemm(x, ldx, m, &pk, b, y3, ldy, epi, 3);
    int ok = memcmp(y, y3, (size_t)(m + 1) * ldy * sizeof(float)) == 0;
    for (int i = 0; i <= m && ok; i++) {
        for (size_t j = 0; j < ldy; j++) {
            size_t at = (size_t)i * ldy + j;
            if (i == m || j >= (size_t)n) { /* outside the product: untouched */
                if (memcmp(&y[at], &y0[at], sizeof(float)) != 0) ok = 0;
                continue;
            }
            double s = b ? b[j] : 0.0, mag = fabs(s);
            for (int t = 0; t < k; t++) {
                double p = (double)x[(size_t)i * ldx + t] * w[(size_t)j * k + t];
                s += p;
                mag += fabs(p);
            }
            if (epi == SG_GEMM_ADD) { s += y0[at]; mag += fabs(y0[at]); }
            if (epi == SG_GEMM_GELU_TANH) s = gelu_tanh_d(s);
            if (epi == SG_GEMM_GELU_ERF) s = gelu_erf_d(s);
            double rel = fabs(y[at] - s) / (mag + 1e-30);
            if (!(rel <= 1e-5)) ok = 0;
            if (rel > *worst || rel != rel) *worst = rel;
        }
    }
    free(x); free(w); free(bias); free(y); free(y0); free(y3); free(wp);
    return ok;
}

/* P·V style: pack from Wᵀ given as V [k, n] must equal packing W [n, k]. */
static int check_pack_kn(int k, int n) {
    float *v = malloc((size_t)k * (n + 2) * sizeof(float)), *w = malloc((size_t)n * k * sizeof(float));
    for (int i = 0; i < k; i++)
        for (int j = 0; j < n + 2; j++) v[(size_t)i * (n + 2) + j] = (float)urand();
    for (int j = 0; j < n; j++)
        for (int i = 0; i < k; i++) w[(size_t)j * k + i] = v[(size_t)i * (n + 2) + j];
    size_t sz = sg_cpu_pack_size(n, k);
    float *a = malloc(sz * sizeof(float)), *b = malloc(sz * sizeof(float));
    sg_cpu_pack_kn(v, (size_t)n + 2, k, n, a);
    sg_cpu_pack_nk(w, (size_t)k, n, k, b);
    int ok = memcmp(a, b, sz * sizeof(float)) == 0;
    free(v); free(w); free(a); free(b);
    return ok;
}

int main(void) {
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    printf("seed %u\n", seed);
    static const int ms[] = {1, 5, 6, 7, 97, 200};
    static const int ns[] = {1, 15, 16, 17, 130};
    static const int ks[] = {1, 8, 255, 257, 700};
    static const char *names[] = {"store", "gelu_tanh", "gelu_erf", "add"};
    for (int e = 0; e < 4; e++) {
        int all = 1, cases = 0;
        double worst = 0;
        for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
            for (size_t c = 0; c < sizeof ns / sizeof *ns; c++)
                for (size_t d = 0; d < sizeof ks / sizeof *ks; d++) {
                    all &= run_case(ms[a], ns[c], ks[d], (sg_gemm_epilogue)e, (int)((a + c + d) % 3 != 0), &worst);
                    cases++;
                }
        CHECK(all, "gemm %s: %d shapes (m 1..200, n 1..130, k 1..700, strided) vs double: worst rel err %.2g "
              "(gate 1e-5), untouched outside, 1 thread == 3 threads", names[e], cases, worst);
    }
    CHECK(check_pack_kn(37, 21) && check_pack_kn(196, 64) && check_pack_kn(1, 1),
          "pack_kn (V [k, n] strided) equals pack_nk of its transpose");
    /* exp and GELU of cpu_math.c against double, over a dense sweep (relative for exp, absolute for GELU
     * since GELU's result feeds a sum); softmax rows sum to 1 and match double. */
    double e_exp = 0, e_gt = 0, e_ge = 0;
    float xs[4001], g1[4001], g2[4001];
    for (int i = 0; i <= 4000; i++) xs[i] = g1[i] = g2[i] = -20.0f + 0.01f * (float)i + (float)urand() * 0.004f;
    sg_cpu_gelu_tanh_inplace(g1, 4001);
    sg_cpu_gelu_erf_inplace(g2, 4001);
    for (int i = 0; i <= 4000; i++) {
        double x = xs[i];
        float arg = (float)(4.3 * x);
        double ex = exp((double)arg);
        double r = fabs(sg_cpu_expf(arg) - ex) / ex;
        if (r > e_exp || r != r) e_exp = r;
        double a = fabs(g1[i] - gelu_tanh_d(x)) / (1 + fabs(x)), b = fabs(g2[i] - gelu_erf_d(x)) / (1 + fabs(x));
        if (a > e_gt || a != a) e_gt = a;
        if (b > e_ge || b != b) e_ge = b;
    }
    CHECK(e_exp < 5e-7, "expf over [-86, 86]: worst relative error %.2g (gate 5e-7, ~4 ulp)", e_exp);
    CHECK(e_gt < 5e-7 && e_ge < 5e-7, "gelu tanh / erf over [-20, 20]: worst |d|/(1+|x|) %.2g / %.2g (gate 5e-7)",
          e_gt, e_ge);
    CHECK(sg_cpu_expf(-200.0f) >= 0 && sg_cpu_expf(-200.0f) < 1e-37f && isfinite(sg_cpu_expf(200.0f)),
          "expf clamps: exp(-200) = %.3g (tiny, not negative), exp(200) finite", sg_cpu_expf(-200.0f));
    float row[197];
    double mx = -1e30, sum = 0, worst = 0, tot = 0;
    for (int j = 0; j < 197; j++) { row[j] = (float)(urand() * 40); if (row[j] * 0.125 > mx) mx = row[j] * 0.125; }
    for (int j = 0; j < 197; j++) sum += exp(row[j] * 0.125 - mx);
    float ref[197];
    for (int j = 0; j < 197; j++) ref[j] = (float)(exp(row[j] * 0.125 - mx) / sum);
    sg_cpu_softmax_row(row, 197, 0.125f);
    for (int j = 0; j < 197; j++) { tot += row[j]; if (fabs(row[j] - ref[j]) > worst) worst = fabs(row[j] - ref[j]); }
    CHECK(worst < 1e-7 && fabs(tot - 1) < 1e-6, "softmax row of 197 (scores +-40, scale 1/8): max |d| %.2g vs double, "
          "sum %.9f", worst, tot);
    return CHECK_DONE();
}
