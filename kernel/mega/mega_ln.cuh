// kernel/mega/mega_ln.cuh — LayerNorm of rows as a megakernel task (plain CUDA: both architectures).
//
// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta for D = 768, x fp32 (the residual stream), y bf16
// (the next GEMM's A operand). Run by the consumer warps of the CTA (megakernel.md §2, option 1): one warp per
// row, each lane holding 24 values (6 float4 at columns 4 lane + 128 i, so every load instruction of the warp
// reads 512 contiguous bytes), statistics in fp32 with the exact two-pass formula from registers (no
// E[x^2] - E[x]^2 cancellation: ViT residual streams carry channels far larger than the row's spread).
// x is read with __ldcg (L2 only): in the megakernel another SM has just written it. The output is the bf16 rows, or
// what an architecture's out writes instead (Hopper's FP8 FC1 input: E4M3 + a scale per row, sm90_fp8row.cuh).
#ifndef SG_MEGA_LN_CUH
#define SG_MEGA_LN_CUH

#include "../warp_reduce.cuh"
#include "tma_ptx.cuh"

#define SG_LN_D 768
#define SG_LN_PER_LANE (SG_LN_D / 32)  // 24

// One normalised value: (x - mean) * rstd * gamma + beta, the expression every LayerNorm output here uses.
__device__ __forceinline__ float sg_ln_apply(float x, float mean, float rstd, float g, float b) {
    return (x - mean) * rstd * g + b;
}

// Four normalised values of a row as bf16 at y[0 .. 3] (one 8-byte store): sg_ln_out_bf16 and sg_ln_store_bf16.
__device__ __forceinline__ void sg_ln_store4_bf16(__nv_bfloat16 *y, float a, float b, float c, float d) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(a, b), hi = __floats2bfloat162_rn(c, d);
    uint2 pk;
    pk.x = *reinterpret_cast<const uint32_t *>(&lo);
    pk.y = *reinterpret_cast<const uint32_t *>(&hi);
    *reinterpret_cast<uint2 *>(y) = pk;
}

// Normalises rows [r0, min(r0 + rows, M)) with warp `warp` of `nwarps` (rows warp, warp + nwarps, ...), U rows
// at a time per warp so that U rows' loads are in flight together (a row alone is one L2 latency, ~1 us, for
// 3 KB). x: [M, ldx] fp32, ldx a multiple of 4. Each row goes to out(row, v, mean, rstd): v[4 i + j] is the raw
// value of column 4 lane + 128 i + j, and out applies sg_ln_apply with its gamma and beta itself.
template <int U, class Out>
__device__ __forceinline__ void sg_ln_rows_to(const float *x, int ldx, float eps, int r0, int rows, int M, int warp,
                                              int nwarps, const Out &out) {
    const int lane = threadIdx.x % 32;
    const int r_end = r0 + rows < M ? r0 + rows : M;
    for (int r = r0 + warp; r < r_end; r += U * nwarps) {
        float v[U][SG_LN_PER_LANE];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int row = r + u * nwarps;
#pragma unroll
            for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
                const float4 q = row < r_end ? __ldcg(reinterpret_cast<const float4 *>(x + (size_t)row * ldx + 4 * lane +
                                                                                       128 * i))
                                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                v[u][4 * i] = q.x;
                v[u][4 * i + 1] = q.y;
                v[u][4 * i + 2] = q.z;
                v[u][4 * i + 3] = q.w;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int row = r + u * nwarps;
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < SG_LN_PER_LANE; i++) s += v[u][i];
            const float mean = sg_warp_sum(s) * (1.0f / SG_LN_D);
            float ss = 0.0f;
#pragma unroll
            for (int i = 0; i < SG_LN_PER_LANE; i++) ss += (v[u][i] - mean) * (v[u][i] - mean);
            const float rstd = 1.0f / sqrtf(sg_warp_sum(ss) * (1.0f / SG_LN_D) + eps);  // not rsqrtf: 2 ulp
            // (sg_ln_row_early computes the same sums: small and wide launches' rows must match bit for bit)
            if (row >= r_end) continue;  // (uniform across the warp: out may use shuffles)
            out(row, v[u], mean, rstd);
        }
    }
}

// The bf16 output of sg_ln_rows: y [M, ldy] bf16 (ldy a multiple of 4).
struct sg_ln_out_bf16 {
    const float *gamma, *beta;
    __nv_bfloat16 *y;
    int ldy;
    __device__ __forceinline__ void operator()(int row, const float (&v)[SG_LN_PER_LANE], float mean,
                                               float rstd) const {
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
            const int c = 4 * lane + 128 * i;
            const float4 g = __ldg(reinterpret_cast<const float4 *>(gamma + c));
            const float4 b = __ldg(reinterpret_cast<const float4 *>(beta + c));
            sg_ln_store4_bf16(y + (size_t)row * ldy + c, sg_ln_apply(v[4 * i], mean, rstd, g.x, b.x),
                              sg_ln_apply(v[4 * i + 1], mean, rstd, g.y, b.y),
                              sg_ln_apply(v[4 * i + 2], mean, rstd, g.z, b.z),
                              sg_ln_apply(v[4 * i + 3], mean, rstd, g.w, b.w));
        }
    }
};

// LayerNorm of one row by one warp, for tasks with a row per warp (rows <= nwarps: small launches): gamma and beta
// are loaded beside the row, so their latency (DRAM: the layer's LayerNorm is the first to read them) overlaps the
// row's. sg_ln_rows_to loads them after the row's statistics, which holds no registers while U rows' loads are in
// flight, and with one row per warp also computes the statistics of U - 1 absent rows (measured at batch 1: 3.6 ->
// 1.7 us a LayerNorm task, v61). The same sums as sg_ln_rows_to, so the same bits; out(row, y) gets the lane's 24
// normalised values, y[4 i + j] at column 4 lane + 128 i + j.
template <class OutY>
__device__ __forceinline__ void sg_ln_row_early(const float *x, int ldx, const float *gamma, const float *beta,
                                                float eps, int row, const OutY &out) {
    const int lane = threadIdx.x % 32;
    float v[SG_LN_PER_LANE];
    float4 g[SG_LN_PER_LANE / 4], b[SG_LN_PER_LANE / 4];
#pragma unroll
    for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
        const float4 q = __ldcg(reinterpret_cast<const float4 *>(x + (size_t)row * ldx + 4 * lane + 128 * i));
        v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
    }
#pragma unroll
    for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
        g[i] = __ldg(reinterpret_cast<const float4 *>(gamma + 4 * lane + 128 * i));
        b[i] = __ldg(reinterpret_cast<const float4 *>(beta + 4 * lane + 128 * i));
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < SG_LN_PER_LANE; i++) s += v[i];
    const float mean = sg_warp_sum(s) * (1.0f / SG_LN_D);
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < SG_LN_PER_LANE; i++) ss += (v[i] - mean) * (v[i] - mean);
    const float rstd = 1.0f / sqrtf(sg_warp_sum(ss) * (1.0f / SG_LN_D) + eps);  // as sg_ln_rows_to
#pragma unroll
    for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
        v[4 * i] = sg_ln_apply(v[4 * i], mean, rstd, g[i].x, b[i].x);
        v[4 * i + 1] = sg_ln_apply(v[4 * i + 1], mean, rstd, g[i].y, b[i].y);
        v[4 * i + 2] = sg_ln_apply(v[4 * i + 2], mean, rstd, g[i].z, b[i].z);
        v[4 * i + 3] = sg_ln_apply(v[4 * i + 3], mean, rstd, g[i].w, b[i].w);
    }
    out(row, v);
}

// sg_ln_row_early's bf16 output: y [M, ldy] bf16 (ldy a multiple of 4), as sg_ln_out_bf16 writes it.
struct sg_ln_store_bf16 {
    __nv_bfloat16 *y;
    int ldy;
    __device__ __forceinline__ void operator()(int row, const float (&v)[SG_LN_PER_LANE]) const {
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE / 4; i++)
            sg_ln_store4_bf16(y + (size_t)row * ldy + 4 * lane + 128 * i, v[4 * i], v[4 * i + 1], v[4 * i + 2],
                              v[4 * i + 3]);
    }
};

// LayerNorm into bf16 rows: y[r, :] for r in [r0, min(r0 + rows, M)) (sg_ln_rows_to).
template <int U = 1>
__device__ __forceinline__ void sg_ln_rows(const float *x, int ldx, const float *gamma, const float *beta,
                                                float eps, __nv_bfloat16 *y, int ldy, int r0, int rows, int M,
                                                int warp, int nwarps) {
    sg_ln_rows_to<U>(x, ldx, eps, r0, rows, M, warp, nwarps, sg_ln_out_bf16{gamma, beta, y, ldy});
}
#endif
