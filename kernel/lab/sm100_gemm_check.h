/* kernel/lab/sm100_gemm_check.h — a host-memory entry point to the tcgen05 GEMM (sm100_gemm.cu) for
 * kernel/lab/test_sm100_gemm.c, C-callable.
 */
#ifndef SG_SM100_GEMM_CHECK_H
#define SG_SM100_GEMM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C [M, N] = epilogue(A [M, K] . B [N, K]^T) on the current device, which must be compute capability 10.0.
 * kind 0: a, b are bf16 bit patterns (uint16); kind 1: E4M3 codes with UE8M0 scales sfa [M, K/32] and
 * sfb [N, K/32] row-major (rearranged into the 128x4 layout here). Epilogue: + bias [N] (NULL: none), tanh GELU
 * (gelu = 1), + residual [M, N] fp32 in place (NULL: none; needs out_f32), then out_f32 and/or out_bf16 (bf16
 * bit patterns). Outputs are NaN-poisoned before the run. sms: the most CTAs to launch (small values give each
 * CTA many tiles). Returns 0, or -1 with err: "no CUDA device", "needs an sm_100 ...", bad arguments, or a CUDA
 * error. */
int sg_sm100_gemm_check(int kind, int M, int N, int K, const void *a, const void *b, const uint8_t *sfa,
                        const uint8_t *sfb, const float *bias, int gelu, const float *residual, float *out_f32,
                        uint16_t *out_bf16, int sms, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
