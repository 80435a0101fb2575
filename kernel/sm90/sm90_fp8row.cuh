// kernel/sm90/sm90_fp8row.cuh — the Hopper megakernel's FP8 tasks (--precision fp8, sg_mega_fc1 SG_FC1_FP8ROW): FC1
// on every layer, FC2 on the layers of sg_mega_params.fc2_f8 (2-11 by default); the device pieces that are not the
// K loop (which is sm90_mega.cu's, beside the bf16 one) or the staging of FC1's E4M3 output (sm90_mega.cu's, beside
// the bf16 staging).
//
// Numerics ("FP8ROW"; CPU twin: kernel/cpu/cpu_mxfp8.h, SG_MX_FP8_CHAN for weights and inputs, SG_MX_FP8_BOUND for
// FC2's input): a Linear's input and weight in E4M3 with one fp32 scale per row over all K elements: per token for
// the input and per output channel for the weight (quantised once at load, sm90_fp8row.cu); a = max(amax, 2^-64),
// s = a / 448, q = cvt.rn.satfinite.e4m3(x * (448 / a)) (sg_fp8_scale, as sm90_gemm_fp8.cuh's block quantiser). FC1's
// input scale is its row's amax (LayerNorm-2 writes the codes and scale, sg_sm90_ln_out_fp8 below); FC2's input H is
// written by 12 FC1 tasks, none of which sees the token's amax, so its scale is a bound LayerNorm-2 computes before
// FC1 runs (below; docs/megakernel.md §22). With one scale per row of either operand the scales leave the K loop:
// the accumulators sum the E4M3 products of all K elements (QGMMA m64nNk32, fp32 accumulate) and the epilogue applies
// y = acc * (sa[row] * sw[col]) + bias[col] (sg_sm90_fp8row_dequant), so the FP8 task needs no more registers than
// the bf16 one (DeepGEMM's per-block promotion needs a second accumulator, which spills at 168 registers). Why per
// row and not DeepGEMM's 1 x 128 / 128 x 128 blocks: E4M3's loss is its 3-bit mantissa, not its range, and the CPU
// study measured the scale recipes within noise of each other (docs/perf-notes.md, kernel/sm90 FP8); the K sums in
// the tensor core's FP8 accumulator (fewer bits kept than fp32, DeepSeek-V3) are over 768 and 3,072 elements, and the
// GPU check measures the result.
#ifndef SG_SM90_FP8ROW_CUH
#define SG_SM90_FP8ROW_CUH

#include "../mega/mega_gpu.h"
#include "../mega/mega_ln.cuh"
#include "sm90_gemm_fp8.cuh"

// LayerNorm-2's output for FP8ROW FC1 (sg_ln_rows_to's out): the row's E4M3 codes into q [M, 768] (lane j's four
// columns 4 j + 128 i as one 32-bit store: 128 contiguous bytes a warp instruction) and its scale into s[row].
// hs != NULL (the layer's FC2 runs in FP8 too): also the scale of the row's FC1 output H, from a bound known before
// FC1 runs, so FC1's epilogue can write H as E4M3 with one scale per token over all its 3,072 columns (FC2's K loop
// then needs no per-block promotion, as FC1's): |H_j| <= ||y||_2 hc + hb (Cauchy-Schwarz on FC1's row j, hc =
// 1.0625^2 max_j ||W1_j||_2 covers both operands' E4M3 rounding, hb = max_j |b1_j| + 0.25 the bias and GELU's
// negative lobe), hs = bound / 448 (sg_fp8_scale; cvt.satfinite clamps what an accumulation error might exceed).
struct sg_sm90_ln_out_fp8 {
    const float *gamma, *beta;
    uint8_t *q;
    float *s;
    float *hs;
    float hc, hb;
    __device__ __forceinline__ void operator()(int row, const float (&v)[SG_LN_PER_LANE], float mean,
                                               float rstd) const {
        const int lane = threadIdx.x % 32;
        float y[SG_LN_PER_LANE], amax = 0.0f;
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
            const int c = 4 * lane + 128 * i;
            const float4 g = __ldg(reinterpret_cast<const float4 *>(gamma + c));
            const float4 b = __ldg(reinterpret_cast<const float4 *>(beta + c));
            y[4 * i] = sg_ln_apply(v[4 * i], mean, rstd, g.x, b.x);
            y[4 * i + 1] = sg_ln_apply(v[4 * i + 1], mean, rstd, g.y, b.y);
            y[4 * i + 2] = sg_ln_apply(v[4 * i + 2], mean, rstd, g.z, b.z);
            y[4 * i + 3] = sg_ln_apply(v[4 * i + 3], mean, rstd, g.w, b.w);
        }
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE; i++) amax = fmaxf(amax, fabsf(y[i]));
        float sc, inv;
        sg_fp8_scale(sg_warp_max(amax), 0, sc, inv);
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE / 4; i++)
            *reinterpret_cast<uint32_t *>(q + (size_t)row * SG_LN_D + 4 * lane + 128 * i) =
                sg_fp8x4(y[4 * i] * inv, y[4 * i + 1] * inv, y[4 * i + 2] * inv, y[4 * i + 3] * inv);
        if (lane == 0) s[row] = sc;
        if (hs) {
            float ss = 0.0f;
#pragma unroll
            for (int i = 0; i < SG_LN_PER_LANE; i++) ss = fmaf(y[i], y[i], ss);
            float hsc, hinv;
            sg_fp8_scale(fmaf(sqrtf(sg_warp_sum(ss)), hc, hb), 0, hsc, hinv);
            if (lane == 0) hs[row] = hsc;
        }
    }
};

// The two per-row scales of this thread's accumulator rows (16 warp + lane/4 and 8 below it, the wgmma layout) from a
// warpgroup's 64 consecutive row scales at the 32-bit shared address rsa.
__device__ __forceinline__ void sg_sm90_row_scales(uint32_t rsa, float &s0, float &s1) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(s0) : "r"(rsa + 4u * (16 * warp + lane / 4)) : "memory");
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(s1) : "r"(rsa + 4u * (16 * warp + lane / 4 + 8)) : "memory");
}

// The FP8ROW epilogue's first step, on a warpgroup's 64-row accumulator (64 rows x 2 R columns, the wgmma layout:
// register k at row 16 warp + lane/4 + 8 ((k/2) % 2), column 8 (k/4) + 2 (lane % 4) + k % 2): acc = acc * (sa[row]
// * sw[col]) + bias[col], with the slot's bias and column scales interleaved at bsa (column pair c/2 as (b[c],
// b[c + 1], sw[c], sw[c + 1]): one 16-byte load per register quad) and the warpgroup's 64 row scales at rsa (32-bit
// shared addresses).
template <int R>
__device__ __forceinline__ void sg_sm90_fp8row_dequant(float (&acc)[R], uint32_t bsa, uint32_t rsa) {
    const int lane = threadIdx.x % 32;
    float sa0, sa1;
    sg_sm90_row_scales(rsa, sa0, sa1);
    const uint32_t col0 = 2u * ((uint32_t)lane & 3u);
#pragma unroll
    for (int k = 0; k < R; k += 4) {
        float2 b, s;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(b.x), "=f"(b.y), "=f"(s.x), "=f"(s.y) : "r"(bsa + 8u * (col0 + 8u * (k / 4))) : "memory");
        acc[k] = fmaf(acc[k], sa0 * s.x, b.x);
        acc[k + 1] = fmaf(acc[k + 1], sa0 * s.y, b.y);
        acc[k + 2] = fmaf(acc[k + 2], sa1 * s.x, b.x);
        acc[k + 3] = fmaf(acc[k + 3], sa1 * s.y, b.y);
    }
}
#endif
