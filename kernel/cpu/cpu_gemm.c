/* kernel/cpu/cpu_gemm.c — cache-blocked fp32 GEMM Y = X·Wᵀ + b with fused epilogues (see cpu_gemm.h).
 *
 * Design: a BLIS-style outer-product micro-kernel. For one panel of SG_GEMM_NR = 16 packed columns and
 * SG_GEMM_MR = 6 rows of X it keeps 6 x 2 vectors of 8 floats in registers and, for each k, broadcasts one X
 * value per row and multiplies it by the two W vectors of that k. It is written with GCC vector extensions
 * (portable GNU C, no intrinsics) and compiled twice through target_clones: an x86-64-v3 (AVX2 + FMA) clone
 * picked at run time where the CPU has it, and a baseline clone for any x86-64.
 *   Blocking: k in slices of SG_GEMM_KC (a 16 x KC panel slice, 16 KB, stays in L1 while every micro-row of
 *   the row block streams past it); rows in blocks of SG_GEMM_MC (the MC x KC block of X, 96 KB, stays in
 *   L2); columns in blocks of SG_GEMM_NC. The parallel driver hands (row block, column block) tiles to
 *   OpenMP threads. Partial sums over k slices are kept in Y itself; bias enters with the first slice and the
 *   activation (cpu_math.c, vectorised) is applied to the finished tile, so there is no extra buffer.
 */
/* The file is compiled with -std=c11, which turns off floating-point contraction; the micro-kernel needs
 * a*b+c fused into FMA to reach the FMA units' throughput. Contraction only changes rounding (it is at least
 * as accurate), which the 1e-4 parity budget against HF covers by orders of magnitude. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#else
#pragma GCC optimize("fp-contract=fast")
#endif

#include "cpu_gemm.h"
#include "cpu_math.h"

#include <string.h>

#define SG_GEMM_KC 256 /* k slice: 16 x 256 floats = 16 KB of W, half of a 32 KB L1d */
#define SG_GEMM_MC 96  /* row block: 96 x 256 floats = 96 KB of X, well inside a 512 KB L2; multiple of MR */
#define SG_GEMM_NC 128 /* column block: 8 panels per tile, enough tiles to balance 2 to 16 threads */

/* Run-time dispatch between an AVX2+FMA build and the baseline. Sanitizer builds skip it: ifunc resolvers
 * run before the sanitizer runtime is set up. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
#define SG_GEMM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SG_GEMM_CLONES
#endif

typedef float sg_v8 __attribute__((vector_size(32)));
typedef float sg_v8u __attribute__((vector_size(32), aligned(4))); /* the same, loadable from any float */

size_t sg_cpu_pack_size(int n, int k) {
    return (size_t)((n + SG_GEMM_NR - 1) / SG_GEMM_NR) * SG_GEMM_NR * (size_t)k;
}

void sg_cpu_pack_nk(const float *w, size_t ldw, int n, int k, float *dst) {
    for (int j0 = 0; j0 < n; j0 += SG_GEMM_NR) {
        float *panel = dst + (size_t)j0 * k;
        int cols = n - j0 < SG_GEMM_NR ? n - j0 : SG_GEMM_NR;
        for (int j = 0; j < SG_GEMM_NR; j++) {
            const float *row = w + (size_t)(j0 + j) * ldw;
            if (j < cols) {
                for (int i = 0; i < k; i++) panel[(size_t)i * SG_GEMM_NR + j] = row[i];
            } else {
                for (int i = 0; i < k; i++) panel[(size_t)i * SG_GEMM_NR + j] = 0.0f;
            }
        }
    }
}

void sg_cpu_pack_kn(const float *v, size_t ldv, int k, int n, float *dst) {
    for (int j0 = 0; j0 < n; j0 += SG_GEMM_NR) {
        float *panel = dst + (size_t)j0 * k;
        int cols = n - j0 < SG_GEMM_NR ? n - j0 : SG_GEMM_NR;
        for (int i = 0; i < k; i++) {
            const float *src = v + (size_t)i * ldv + j0;
            float *d = panel + (size_t)i * SG_GEMM_NR;
            for (int j = 0; j < cols; j++) d[j] = src[j];
            for (int j = cols; j < SG_GEMM_NR; j++) d[j] = 0.0f;
        }
    }
}

/* acc[6][16] = sum over kc of a[r][k] * b[k][0:16]. a: MR row pointers (already offset to the k slice). */
static inline __attribute__((always_inline)) void micro_6x16(int kc, const float *const a[SG_GEMM_MR],
                                                             const float *b, float acc[SG_GEMM_MR][SG_GEMM_NR]) {
    sg_v8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    sg_v8 c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    for (int k = 0; k < kc; k++) {
        sg_v8 b0 = *(const sg_v8u *)(b + (size_t)k * SG_GEMM_NR);
        sg_v8 b1 = *(const sg_v8u *)(b + (size_t)k * SG_GEMM_NR + 8);
        sg_v8 x;
        /* Spelled as an initializer so gcc emits one vbroadcastss from memory (a load-port uop) rather than
         * a load plus a register shuffle that competes with the FMAs for an FP pipe. */
#define SG_BCAST(p) ((sg_v8){(p)[k], (p)[k], (p)[k], (p)[k], (p)[k], (p)[k], (p)[k], (p)[k]})
        x = SG_BCAST(a0); c00 += x * b0; c01 += x * b1;
        x = SG_BCAST(a1); c10 += x * b0; c11 += x * b1;
        x = SG_BCAST(a2); c20 += x * b0; c21 += x * b1;
        x = SG_BCAST(a3); c30 += x * b0; c31 += x * b1;
        x = SG_BCAST(a4); c40 += x * b0; c41 += x * b1;
        x = SG_BCAST(a5); c50 += x * b0; c51 += x * b1;
#undef SG_BCAST
    }
    *(sg_v8u *)acc[0] = c00; *(sg_v8u *)(acc[0] + 8) = c01;
    *(sg_v8u *)acc[1] = c10; *(sg_v8u *)(acc[1] + 8) = c11;
    *(sg_v8u *)acc[2] = c20; *(sg_v8u *)(acc[2] + 8) = c21;
    *(sg_v8u *)acc[3] = c30; *(sg_v8u *)(acc[3] + 8) = c31;
    *(sg_v8u *)acc[4] = c40; *(sg_v8u *)(acc[4] + 8) = c41;
    *(sg_v8u *)acc[5] = c50; *(sg_v8u *)(acc[5] + 8) = c51;
}

/* Folds one k slice's micro-tile into Y: the first slice adds the bias (and, for ADD, the old Y), later
 * slices add to the partial sum in Y. */
static inline void merge(float *y, size_t ldy, int rows, int cols, float acc[SG_GEMM_MR][SG_GEMM_NR],
                         const float *bias, int first, sg_gemm_epilogue epi) {
    int add_y = !first || epi == SG_GEMM_ADD;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * ldy;
        for (int j = 0; j < cols; j++) {
            float v = acc[r][j];
            if (first && bias) v += bias[j];
            yr[j] = add_y ? v + yr[j] : v;
        }
    }
}

SG_GEMM_CLONES
void sg_cpu_gemm_range(const float *x, size_t ldx, const sg_cpu_wpack *w, const float *bias, float *y,
                       size_t ldy, int m0, int m1, int n0, int n1, sg_gemm_epilogue epi) {
    const int K = w->k;
    float acc[SG_GEMM_MR][SG_GEMM_NR];
    for (int k0 = 0; k0 < K; k0 += SG_GEMM_KC) {
        int kc = K - k0 < SG_GEMM_KC ? K - k0 : SG_GEMM_KC;
        int first = k0 == 0;
        for (int j0 = n0; j0 < n1; j0 += SG_GEMM_NR) {
            const float *b = w->p + (size_t)j0 * K + (size_t)k0 * SG_GEMM_NR;
            int cols = n1 - j0 < SG_GEMM_NR ? n1 - j0 : SG_GEMM_NR;
            for (int i0 = m0; i0 < m1; i0 += SG_GEMM_MR) {
                int rows = m1 - i0 < SG_GEMM_MR ? m1 - i0 : SG_GEMM_MR;
                const float *a[SG_GEMM_MR];
                /* A short last micro-row repeats its last row; the extra results are not stored. */
                for (int r = 0; r < SG_GEMM_MR; r++) a[r] = x + (size_t)(i0 + (r < rows ? r : rows - 1)) * ldx + k0;
                micro_6x16(kc, a, b, acc);
                merge(y + (size_t)i0 * ldy + j0, ldy, rows, cols, acc, bias ? bias + j0 : NULL, first, epi);
            }
        }
    }
    /* The activation, once the sums are complete, over rows of the tile (still in L2). */
    for (int i = m0; i < m1 && (epi == SG_GEMM_GELU_TANH || epi == SG_GEMM_GELU_ERF); i++) {
        if (epi == SG_GEMM_GELU_TANH) sg_cpu_gelu_tanh_inplace(y + (size_t)i * ldy + n0, n1 - n0);
        else sg_cpu_gelu_erf_inplace(y + (size_t)i * ldy + n0, n1 - n0);
    }
}

void sg_cpu_gemm(const float *x, size_t ldx, int m, const sg_cpu_wpack *w, const float *bias, float *y,
                 size_t ldy, sg_gemm_epilogue epi, int threads) {
    int mt = (m + SG_GEMM_MC - 1) / SG_GEMM_MC, nt = (w->n + SG_GEMM_NC - 1) / SG_GEMM_NC;
    int tiles = mt * nt;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && tiles > 1)
    for (int t = 0; t < tiles; t++) {
        int i0 = (t / nt) * SG_GEMM_MC, j0 = (t % nt) * SG_GEMM_NC;
        int i1 = i0 + SG_GEMM_MC < m ? i0 + SG_GEMM_MC : m;
        int j1 = j0 + SG_GEMM_NC < w->n ? j0 + SG_GEMM_NC : w->n;
        sg_cpu_gemm_range(x, ldx, w, bias, y, ldy, i0, i1, j0, j1, epi);
    }
}
