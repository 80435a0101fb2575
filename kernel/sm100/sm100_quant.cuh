// kernel/sm100/sm100_quant.cuh — the MXFP8 quantisers' device pieces shared by the standalone kernels
// (sm100_quant.cu) and the Blackwell megakernel's LayerNorm-2 task (sm100_mega.cu): the element code and one row of
// LayerNorm + quantisation by one warp. Formats and rounding: sm100_quant.h.
#ifndef SG_SM100_QUANT_CUH
#define SG_SM100_QUANT_CUH

#include <cuda_fp8.h>
#include "../warp_reduce.cuh"
#include "sm100_desc.h"

#define SG_LNQ_MAX_BLOCKS 32  // d <= 32 * 32 = 1024 per warp-held row

__device__ __forceinline__ uint8_t sg_q_e4m3(float x, uint8_t u) {
    const float s = (float)((double)x * ldexp(1.0, 127 - (int)u));  // exact scaling, one rounding (as the CPU)
    return (uint8_t)__nv_cvt_float_to_fp8(s, __NV_SATFINITE, __NV_E4M3);
}

// Row `row` of x [., d] (d % 32 == 0, d <= 1024) by one warp: y = LayerNorm(x) * w + b (fp32 statistics, the
// expression of sg_cu_layernorm), then MXFP8: lane j holds columns j + 32 i, so 32-column block i is one value per
// lane, its amax a warp max; codes into qr = q + row * d, the block's UE8M0 code into sf (128x4 layout, lane 0),
// and the fp32 values into y (row-major) when it is not NULL. x is read with __ldcg (L2): in the megakernel another SM has
// just written the row.
__device__ __forceinline__ void sg_ln_quant_row(const float *__restrict__ x, const float *__restrict__ w,
                                                const float *__restrict__ b, int row, int d, float eps,
                                                uint8_t *__restrict__ q, uint8_t *__restrict__ sf,
                                                float *__restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int nb = d / 32;
    const float *xr = x + (size_t)row * d;
    float v[SG_LNQ_MAX_BLOCKS];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < SG_LNQ_MAX_BLOCKS; i++) {
        v[i] = i < nb ? __ldcg(xr + lane + 32 * i) : 0.f;
        s += v[i];
    }
    const float mean = sg_warp_sum(s) / (float)d;
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < SG_LNQ_MAX_BLOCKS; i++) {
        const float dv = v[i] - mean;
        ss += i < nb ? dv * dv : 0.f;
    }
    const float rstd = rsqrtf(sg_warp_sum(ss) / (float)d + eps);
    uint8_t *qr = q + (size_t)row * d;
#pragma unroll
    for (int i = 0; i < SG_LNQ_MAX_BLOCKS; i++) {
        if (i >= nb) break;
        const int j = lane + 32 * i;
        const float yv = (v[i] - mean) * rstd * w[j] + b[j];  // the expression of sg_cu_layernorm
        if (y) y[(size_t)row * d + j] = yv;
        const uint8_t u = sg_ue8m0_for_amax(sg_warp_max(fabsf(yv)));
        qr[j] = sg_q_e4m3(yv, u);
        if (lane == 0) sf[sg_sm100_sf_offset((uint32_t)row, (uint32_t)i, (uint32_t)nb)] = u;
    }
}

#endif
