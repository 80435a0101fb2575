/* kernel/cpu/cpu_math.c — vectorisable exp, GELU and softmax rows for the CPU encoder (see cpu_math.h).
 *
 * exp(x) = 2^n · e^r with n = round(x / ln 2) and r = x - n·ln 2 in [-0.35, 0.35] (ln 2 split in two parts,
 * Cody–Waite, so r is exact to a few ulps), e^r by the degree-7 minimax polynomial of Cephes' expf, and 2^n
 * built directly in the exponent bits. Rounding uses the 1.5·2^23 trick instead of rintf so the loop
 * vectorises on every x86-64 level. x is clamped to [-87, 88] so 2^n stays a normal float: there is no
 * overflow to inf, and below e^-87 (1.6e-38) the result only has to be tiny for softmax and GELU.
 */
/* FMA contraction (off under -std=c11) makes the range reduction and polynomial both faster and slightly
 * more accurate; no-trapping-math lets gcc turn the clamps into vector compare-and-blend (nothing here reads
 * the floating-point exception flags). Without both, these loops stay scalar. */
#if defined(__clang__)
#pragma clang fp contract(fast) /* clang already assumes no trapping math by default */
#else
#pragma GCC optimize("fp-contract=fast", "no-trapping-math")
#endif

#include "cpu_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
#define SG_MATH_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SG_MATH_CLONES
#endif

static inline float exp_poly(float x) {
    x = x > 88.0f ? 88.0f : x;    /* 2^127 · e^0.3 is still finite */
    x = x < -87.0f ? -87.0f : x;  /* 2^-126 is the smallest normal */
    const float magic = 12582912.0f; /* 1.5 · 2^23: adding it rounds to an integer, ties to even */
    float n = (x * 1.44269504088896341f + magic) - magic; /* round(x · log2 e) */
    float r = x - n * 0.693359375f;  /* ln 2 high part: 0.693359375 has 9 significant bits, exact */
    r = r - n * -2.12194440e-4f;     /* ln 2 - 0.693359375 */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

float sg_cpu_expf(float x) { return exp_poly(x); }

SG_MATH_CLONES
void sg_cpu_gelu_tanh_inplace(float *x, int n) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int i = 0; i < n; i++) {
        float v = x[i];
        float u = k * (v + 0.044715f * v * v * v);
        x[i] = v / (1.0f + exp_poly(-2.0f * u)); /* 0.5(1 + tanh u) = 1 / (1 + e^(-2u)) */
    }
}

void sg_cpu_gelu_erf_inplace(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f)); /* x / sqrt 2 */
}

SG_MATH_CLONES
void sg_cpu_softmax_row(float *s, int n, float scale) {
    float mx = -INFINITY;
    for (int j = 0; j < n; j++) mx = s[j] * scale > mx ? s[j] * scale : mx;
    for (int j = 0; j < n; j++) s[j] = exp_poly(s[j] * scale - mx);
    double sum = 0;
    for (int j = 0; j < n; j++) sum += s[j];
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < n; j++) s[j] *= inv;
}

void sg_cpu_layer_norm(const float *x, float *y, int rows, int D, const float *g, const float *b, float eps,
                       int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && rows > 1)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * D;
        float *yr = y + (size_t)r * D;
        double mean = 0, var = 0;
        for (int i = 0; i < D; i++) mean += xr[i];
        mean /= D;
        for (int i = 0; i < D; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= D;
        float mu = (float)mean, rstd = (float)(1.0 / sqrt(var + (double)eps));
        for (int i = 0; i < D; i++) yr[i] = (xr[i] - mu) * rstd * g[i] + b[i];
    }
}
