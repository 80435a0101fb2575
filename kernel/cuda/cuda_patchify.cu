// kernel/cuda/cuda_patchify.cu — uint8 pixels to normalised bf16 patches, and the residual stream's start.
//
// The host uploads raw uint8 pixels (3x fewer bytes than floats); normalisation happens here through a table of
// the 256 values sg_pixel_to_float gives, so it is bit-identical to the CPU reference before the bf16 rounding.
// One block per token: it gathers the token's P*P*3 bytes into the (c, ky, kx) order of the Conv2d weight, and
// writes that token's row of h = positions + conv bias, which the patch GEMM accumulates onto (beta = 1).
#include "cuda_kernels.h"
#include "cuda_common.h"
#include "../model.h"

static __constant__ float k_pixel_lut[256];

int sg_cu_patchify_init(char *err, size_t errlen) {
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = sg_pixel_to_float((uint8_t)i);
    SG_CU_TRY(cudaMemcpyToSymbol(k_pixel_lut, lut, sizeof lut), err, errlen);
    return 0;
}

// grid: M blocks (one per token), block: 256 threads.
__global__ void patchify_kernel(const uint8_t *__restrict__ pix, int S, int P, int G, int D,
                                const float *__restrict__ pos_b, sg_bf16 *__restrict__ patches,
                                float *__restrict__ h) {
    const int m = blockIdx.x, T = G * G;
    const int img = m / T, t = m % T, gi = t / G, gj = t % G;
    const int PP = P * P, CPP = 3 * PP;
    const uint8_t *src = pix + (size_t)img * S * S * 3;
    for (int e = threadIdx.x; e < CPP; e += blockDim.x) {
        const int c = e / PP, ky = (e / P) % P, kx = e % P;
        const int y = gi * P + ky, x = gj * P + kx;
        patches[(size_t)m * CPP + e] = __float2bfloat16(k_pixel_lut[src[((size_t)y * S + x) * 3 + c]]);
    }
    for (int d = threadIdx.x; d < D; d += blockDim.x) h[(size_t)m * D + d] = pos_b[(size_t)t * D + d];
}

int sg_cu_patchify(const uint8_t *pix, int n, int S, int P, int D, const float *pos_b, sg_bf16 *patches,
                   float *h, cudaStream_t st, char *err, size_t errlen) {
    const int G = S / P;
    patchify_kernel<<<n * G * G, 256, 0, st>>>(pix, S, P, G, D, pos_b, patches, h);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}
