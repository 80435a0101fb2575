// kernel/sm90/sm90_fp8row.cu — the Hopper megakernel's FP8 weights (sm90_fp8row.cuh: FC1's, and FC2's on the layers
// it runs in FP8): E4M3 with one fp32 scale per output channel, quantised once when the backend is created, on the GPU
// (a warp per row: its amax, then the codes), with the CPU quantiser's arithmetic (sg_fp8_quantize with 1 x k blocks,
// kernel/cpu/cpu_mxfp8.c); the scales are written interleaved with the layer's bias, the layout the megakernel's
// epilogue reads (sg_mega_params.w1sf, w2sf).
#include <cstdio>
#include "sm90_fp8row.cuh"
#include "sm90_mega.h"

__global__ void sg_sm90_quant_rows_kernel(const float *x, int rows, int k, const float *bias, uint8_t *q, float *bs) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *xr = x + (size_t)row * k;
    float amax = 0.0f;
    for (int c = 4 * lane; c < k; c += 128) {
        const float4 v = *reinterpret_cast<const float4 *>(xr + c);
        amax = fmaxf(fmaxf(amax, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
    }
    float sc, inv;
    sg_fp8_scale(sg_warp_max(amax), 0, sc, inv);
    for (int c = 4 * lane; c < k; c += 128) {
        const float4 v = *reinterpret_cast<const float4 *>(xr + c);
        *reinterpret_cast<uint32_t *>(q + (size_t)row * k + c) = sg_fp8x4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    }
    if (lane == 0) {  // column pair row / 2: (b[2 j], b[2 j + 1], s[2 j], s[2 j + 1])
        bs[4 * (row / 2) + row % 2] = bias[row];
        bs[4 * (row / 2) + 2 + row % 2] = sc;
    }
}

int sg_sm90_quant_weight_rows(const float *x_host, int rows, int k, const float *bias, float *tmp, uint8_t *q,
                              uint8_t *sf, char *err, size_t errlen) {
    if (k % 4 != 0 || rows % 2 != 0) {
        snprintf(err, errlen, "%s:%d: FP8 weight of %d rows of %d elements (an even count of multiples of 4 expected)",
                 __FILE__, __LINE__, rows, k);
        return -1;
    }
    cudaError_t e = cudaMemcpy(tmp, x_host, (size_t)rows * k * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        sg_sm90_quant_rows_kernel<<<(rows + 7) / 8, 256>>>(tmp, rows, k, bias, q, reinterpret_cast<float *>(sf));
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "%s:%d: FP8 weight quantiser: %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
