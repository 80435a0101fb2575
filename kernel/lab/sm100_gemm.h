/* kernel/lab/sm100_gemm.h — the Blackwell (sm_100a) persistent tcgen05 GEMM with fused epilogues (C++ only).
 *
 *   C[M, N] = epilogue(A[M, K] . B[N, K]^T)
 *
 * Both operands K-major row-major (activations [M, K], nn.Linear weights [out, in]), read by TMA through the
 * tensor maps made here. Two MMA kinds:
 *   SG_SM100_KIND_BF16: bf16 x bf16 -> fp32 (tcgen05.mma kind::f16), K a multiple of 64;
 *   SG_SM100_KIND_MXF8: MXFP8, E4M3 values with one UE8M0 scale per 32 K elements of every A row and B row,
 *     the scales in the 128x4 atom layout (sg_sm100_sf_offset, rows padded to 128), K a multiple of 128.
 * The epilogue is sg_sm90_epilogue's, with the same meaning as on Hopper (kernel/sm90/sm90_gemm.cuh): + bias[n]
 * (fp32), tanh GELU, + fp32 residual (may alias out_f32: the in-place residual stream), fp32 and/or bf16 out.
 * N must be a multiple of 128; rows >= M are neither read (TMA zero-fills them) nor written.
 * Design and state: kernel/lab/sm100_gemm.cu, docs/megakernel.md "SM100". NEVER RUN ON HARDWARE (no B200
 * here): compiled and SASS-checked only.
 */
#ifndef SG_SM100_GEMM_H
#define SG_SM100_GEMM_H

#include <cstddef>
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>
#include "../sm90/sm90_gemm.cuh"

typedef enum { SG_SM100_KIND_BF16 = 0, SG_SM100_KIND_MXF8 = 1 } sg_sm100_kind;

typedef struct sg_sm100_gemm {
    sg_sm100_kind kind;
    int M, N, K;
    CUtensorMap a, b;          /* sg_sm100_tmap over A [M, K] and B [N, K] of this kind */
    const uint8_t *sfa, *sfb;  /* MXF8 only: scales of A (rows padded to 128) and B, 128x4 layout, device */
    sg_sm90_epilogue ep;       /* device pointers */
} sg_sm100_gemm;

/* Once per process, outside graph capture: raises the kernels' shared-memory limit (the tensor maps are encoded
 * by kernel/mega/tmap.cuh). 0, or -1 with err (no sm_100a image for the current device). */
int sg_sm100_gemm_init(char *err, size_t errlen);

/* The TMA map of a row-major [rows, cols] operand of `kind` at device address base (16-byte aligned, cols *
 * element size a multiple of 16): box 128 rows x 128 bytes, 128-byte swizzle, out-of-range rows read as zero.
 * Host-only work (no GPU call), so it may run while a stream is being captured. 0, or -1 with err. */
int sg_sm100_tmap(CUtensorMap *map, sg_sm100_kind kind, const void *base, int rows, int cols, char *err,
                  size_t errlen);

/* Enqueues the GEMM on st with min(sms, tiles) persistent CTAs. Checks the shape rules above; 0, or -1 with
 * err. Safe inside graph capture. */
int sg_sm100_gemm_run(const sg_sm100_gemm *g, int sms, cudaStream_t st, char *err, size_t errlen);

#endif
