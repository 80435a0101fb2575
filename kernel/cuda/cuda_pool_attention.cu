// kernel/cuda/cuda_pool_attention.cu — the MAP head's attention: one learned query attends over the T tokens.
//
// The query (probe W_q^T + b_q) does not depend on the image, so it is computed once at load (cuda_weights.cu)
// and this kernel only scores the keys, softmaxes and mixes the values: one block per (head, image), one
// thread per key for the scores, one thread per output channel for the mix. About 0.1% of the FLOPs.
#include "cuda_kernels.h"
#include "cuda_common.h"
#include "../warp_reduce.cuh"

static constexpr int k_threads = 256;

__device__ __forceinline__ float block_reduce(float v, float *red, bool is_max) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = is_max ? sg_warp_max(v) : sg_warp_sum(v);
    __syncthreads();  // red may still be read from the previous reduction
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < k_threads / 32; w++) v = is_max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

// smem: q_h [Dh] + p [T] floats.
__global__ void __launch_bounds__(k_threads) pool_attention_kernel(const float *__restrict__ q,
                                                                   const sg_bf16 *__restrict__ kv,
                                                                   sg_bf16 *__restrict__ out, int T, int D,
                                                                   int Dh, float scale) {
    extern __shared__ float sm[];
    __shared__ float red[k_threads / 32];
    float *qs = sm, *p = sm + Dh;
    const int head = blockIdx.x, img = blockIdx.y;
    for (int c = threadIdx.x; c < Dh; c += k_threads) qs[c] = q[head * Dh + c];
    __syncthreads();
    const sg_bf16 *k = kv + (size_t)img * T * 2 * D + head * Dh;
    const sg_bf16 *v = k + D;
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < T; t += k_threads) {
        float s = 0.f;
        for (int c = 0; c < Dh; c++) s += qs[c] * __bfloat162float(k[(size_t)t * 2 * D + c]);
        p[t] = s * scale;
        mx = fmaxf(mx, p[t]);
    }
    mx = block_reduce(mx, red, true);
    float sum = 0.f;
    for (int t = threadIdx.x; t < T; t += k_threads) {
        p[t] = expf(p[t] - mx);
        sum += p[t];
    }
    sum = block_reduce(sum, red, false);  // its barriers also publish p[]
    const float inv = 1.f / sum;
    for (int c = threadIdx.x; c < Dh; c += k_threads) {
        float acc = 0.f;
        for (int t = 0; t < T; t++) acc += p[t] * __bfloat162float(v[(size_t)t * 2 * D + c]);
        out[(size_t)img * D + head * Dh + c] = __float2bfloat16(acc * inv);
    }
}

int sg_cu_pool_attention(const float *q, const sg_bf16 *kv, sg_bf16 *out, int n, int T, int D, int H,
                         cudaStream_t st, char *err, size_t errlen) {
    const int Dh = D / H;
    const float scale = (float)(1.0 / sqrt((double)Dh));  // Dh^-0.5, as nn.MultiheadAttention
    const size_t smem = (size_t)(Dh + T) * sizeof(float);
    if (smem > 48 * 1024) {
        snprintf(err, errlen, "%s:%d: pooling head: %d tokens + head_dim %d need too much shared memory", __FILE__,
                 __LINE__, T, Dh);
        return -1;
    }
    pool_attention_kernel<<<dim3(H, n), k_threads, smem, st>>>(q, kv, out, T, D, Dh, scale);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}
