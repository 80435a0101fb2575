/* kernel/cpu/cpu_gemm.h — the one fp32 matrix product of the CPU encoder: Y = X·Wᵀ + b, W [n, k] row-major.
 *
 * Every Linear layer, the patch embedding (over im2col patches) and both products of attention go through
 * here. W is first packed into column panels of SG_GEMM_NR output features, each panel [k][SG_GEMM_NR]
 * contiguous and zero-padded past n, so the micro-kernel reads W with unit stride and broadcasts X. Products
 * are cache-blocked over k (SG_GEMM_KC), rows (SG_GEMM_MC) and columns (SG_GEMM_NC); the epilogue fuses bias,
 * GELU or the residual add. Each output element is always computed by one thread with the same k order, so
 * results do not depend on the thread count.
 */
#ifndef SG_CPU_GEMM_H
#define SG_CPU_GEMM_H

#include <stddef.h>

#define SG_GEMM_MR 6   /* rows per micro-tile: 6 x 2 accumulators of 8 floats fill 12 of the 16 ymm registers */
#define SG_GEMM_NR 16  /* columns per micro-tile and per packed panel: two 8-float vectors */

typedef enum {
    SG_GEMM_STORE = 0,     /* Y = X·Wᵀ + b */
    SG_GEMM_GELU_TANH,     /* Y = gelu_tanh(X·Wᵀ + b) */
    SG_GEMM_GELU_ERF,      /* Y = gelu_erf(X·Wᵀ + b) */
    SG_GEMM_ADD            /* Y = Y + (X·Wᵀ + b): the residual add */
} sg_gemm_epilogue;

/* A packed weight: ceil(n / SG_GEMM_NR) panels of [k][SG_GEMM_NR] floats. */
typedef struct sg_cpu_wpack {
    float *p;
    int n, k;
} sg_cpu_wpack;

/* Floats needed to pack an [n, k] matrix. */
size_t sg_cpu_pack_size(int n, int k);

/* Packs W [n, k] (row stride ldw) into dst (sg_cpu_pack_size(n, k) floats). Serial. */
void sg_cpu_pack_nk(const float *w, size_t ldw, int n, int k, float *dst);

/* Packs Wᵀ given as V [k, n] (row stride ldv), i.e. W[j][i] = V[i][j], into dst. Serial. Used for P·V. */
void sg_cpu_pack_kn(const float *v, size_t ldv, int k, int n, float *dst);

/* Rows [m0, m1) and columns [n0, n1) of Y = epilogue(X·Wᵀ + bias), on the calling thread. n0 must be a
 * multiple of SG_GEMM_NR. x: [m, k] row stride ldx; y: row stride ldy; bias [n] or NULL. */
void sg_cpu_gemm_range(const float *x, size_t ldx, const sg_cpu_wpack *w, const float *bias, float *y,
                       size_t ldy, int m0, int m1, int n0, int n1, sg_gemm_epilogue epi);

/* The whole product for m rows, split over `threads` OpenMP threads (>= 1). */
void sg_cpu_gemm(const float *x, size_t ldx, int m, const sg_cpu_wpack *w, const float *bias, float *y,
                 size_t ldy, sg_gemm_epilogue epi, int threads);

#endif
