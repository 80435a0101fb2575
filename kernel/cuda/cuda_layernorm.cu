// kernel/cuda/cuda_layernorm.cu — LayerNorm of the fp32 residual stream into the bf16 GEMM input.
//
// One warp per row; the row (D <= 1024, 32 values per lane at most) is read once into registers, then mean and
// the biased variance are two exact passes over the registers (not E[x^2] - E[x]^2, which loses digits when
// the residual stream's mean is large). Statistics stay fp32, as torch's LayerNorm in fp32.
#include "cuda_kernels.h"
#include "cuda_common.h"
#include "../warp_reduce.cuh"

static constexpr int k_max_per_lane = 32;   // D <= 32 * 32 = 1024
static constexpr int k_rows_per_block = 4;  // 4 warps: enough blocks at n = 1 (196 rows → 49 blocks)

__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                 const float *__restrict__ b, sg_bf16 *__restrict__ y, int rows, int D,
                                 float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * k_rows_per_block + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float *xr = x + (size_t)row * D;
    float v[k_max_per_lane];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < k_max_per_lane; i++) {
        const int j = lane + 32 * i;
        v[i] = j < D ? xr[j] : 0.f;
        s += v[i];
    }
    const float mean = sg_warp_sum(s) / (float)D;
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < k_max_per_lane; i++) {
        const int j = lane + 32 * i;
        const float d = v[i] - mean;
        q += j < D ? d * d : 0.f;
    }
    const float rstd = rsqrtf(sg_warp_sum(q) / (float)D + eps);
    sg_bf16 *yr = y + (size_t)row * D;
#pragma unroll
    for (int i = 0; i < k_max_per_lane; i++) {
        const int j = lane + 32 * i;
        if (j < D) yr[j] = __float2bfloat16((v[i] - mean) * rstd * w[j] + b[j]);
    }
}

int sg_cu_layernorm(const float *x, const float *w, const float *b, sg_bf16 *y, int rows, int D, float eps,
                    cudaStream_t st, char *err, size_t errlen) {
    if (D > 32 * k_max_per_lane) {
        snprintf(err, errlen, "%s:%d: LayerNorm width %d > 1024 is not supported", __FILE__, __LINE__, D);
        return -1;
    }
    layernorm_kernel<<<sg_cu_div_up(rows, k_rows_per_block), 32 * k_rows_per_block, 0, st>>>(x, w, b, y, rows,
                                                                                           D, eps);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}
