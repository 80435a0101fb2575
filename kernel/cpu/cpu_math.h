/* kernel/cpu/cpu_math.h — vectorisable element-wise math of the CPU encoder: exp, GELU, softmax rows.
 *
 * The encoder calls exp about 5.5 million times and GELU about 7 million times per full-size image; libm's
 * scalar expf/tanhf would cost as much as a third of the GEMM time on two cores. These loops use a
 * branch-free exp (Cephes-style range reduction and polynomial, about 1 ulp) that gcc vectorises, compiled
 * for AVX2 + FMA where the CPU has it. Accuracy stays far inside the 1e-4 parity budget against torch,
 * whose own CPU exp (Sleef) is also about 1 ulp.
 */
#ifndef SG_CPU_MATH_H
#define SG_CPU_MATH_H

/* x[i] = gelu_tanh(x[i]) for i < n, computed as x / (1 + exp(-2u)), u = sqrt(2/pi)(x + 0.044715x^3):
 * the same function as 0.5x(1 + tanh(u)), without tanh's cancellation near 0. */
/* y[r] = LN(x[r]) * g + b over D for each of `rows` rows: biased variance, eps inside the sqrt, statistics in
 * double (so the reference's rounding stays far below the 1e-4 gate). Rows are split across `threads`. */
void sg_cpu_layer_norm(const float *x, float *y, int rows, int D, const float *g, const float *b, float eps,
                       int threads);

void sg_cpu_gelu_tanh_inplace(float *x, int n);

/* x[i] = gelu_erf(x[i]) (exact erf GELU, libm erff; only for checkpoints that ask for it). */
void sg_cpu_gelu_erf_inplace(float *x, int n);

/* In place over one row of n scores: p = softmax(s * scale), max subtracted first, sum in double. */
void sg_cpu_softmax_row(float *s, int n, float scale);

/* exp(x) of the vectorised kernel, one value (for tests): relative error about 1e-7 for x in [-87, 88];
 * below -87 it returns a tiny value or 0, above 88 a huge finite value. */
float sg_cpu_expf(float x);

#endif
