/* kernel/sm100/sm100_quant.h — MXFP8 quantisers on the GPU for the Blackwell backend: weights at load, and the
 * FC1 input fused with LayerNorm 2.
 *
 * Output format (what the block-scaled tcgen05.mma reads, kernel/lab/sm100_gemm.h): E4M3 codes q [rows, k]
 * row-major, and one UE8M0 code per 32 consecutive elements of a row in the 128x4 atom layout
 * (sg_sm100_sf_offset(row, k-block, k/32); sg_sm100_sf_bytes(rows, k/32) bytes, rows padded to 128 with
 * code 0). Per block: u = sg_ue8m0_for_amax(amax), q = e4m3(x * 2^(127-u)) rounded to nearest even,
 * saturating: bit-identical to sg_mxfp8_quantize (kernel/cpu/cpu_mxfp8.c) for NaN-free input, which
 * tests/test_sm100_quant.c checks on fresh random data.
 * Plain CUDA (no tcgen05): the kernels also run on sm_90 when kernel/sm100 is built with an sm_90 target too
 * (scripts/sm100-check.sh does), so they are tested on an H100.
 */
#ifndef SG_SM100_QUANT_H
#define SG_SM100_QUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Test entry points, host memory in and out (they allocate, run on the current device and synchronise).
 * Return 0, or -1 with err: "no CUDA device ...", "kernels not built for this GPU ...", a bad shape, or a
 * CUDA error. */

/* x [rows, k] fp32 (k % 32 == 0) -> q [rows, k] and sf [sg_sm100_sf_bytes(rows, k/32)]. */
int sg_sm100_quant_check_matrix(const float *x, int rows, int k, uint8_t *q, uint8_t *sf, char *err, size_t errlen);

/* y = LayerNorm(x) * w + b per row (fp32 statistics, the formula of sg_cu_layernorm), then quantised:
 * x [rows, d] (d % 32 == 0, d <= 1024) -> q [rows, d], sf [sg_sm100_sf_bytes(rows, d/32)], and y [rows, d]
 * fp32 (the values that were quantised) when y is not NULL. */
int sg_sm100_quant_check_ln(const float *x, const float *w, const float *b, int rows, int d, float eps, uint8_t *q,
                            uint8_t *sf, float *y, char *err, size_t errlen);

#ifdef __cplusplus
}

#include <cuda_runtime.h>

/* Device pointers, enqueued on st (capture-safe, no allocation, no synchronisation); 0, or -1 with err. */

/* The weight quantiser (x [rows, k] fp32 on the device). */
int sg_sm100_quant_matrix(const float *x, int rows, int k, uint8_t *q, uint8_t *sf, cudaStream_t st, char *err,
                          size_t errlen);

/* A weight from host memory: copies x_host [rows, k] fp32 into tmp (device, rows * k floats), quantises it on the
 * legacy stream and synchronises (so tmp may be refilled at once). For load time only. bias is unused (the launchers'
 * quantisers share one signature; Hopper's interleaves its scales with the bias). */
int sg_sm100_quant_weight(const float *x_host, int rows, int k, const float *bias, float *tmp, uint8_t *q,
                          uint8_t *sf, char *err, size_t errlen);

/* LayerNorm + quantise of rows [0, rows); rows [rows, rows_pad) get scale code 0 (q is not written there: the
 * GEMM's TMA zero-fills rows >= M). y_f32: optional fp32 copy of the normalised rows (tests), NULL normally. */
int sg_sm100_ln_quant(const float *x, const float *w, const float *b, int rows, int rows_pad, int d, float eps,
                      uint8_t *q, uint8_t *sf, float *y_f32, cudaStream_t st, char *err, size_t errlen);
#endif

#endif
