// kernel/sm90/sm90_fc1_fp8.cuh — the Hopper megakernel's FP8 FC1 (--precision fp8, sg_mega_fc1 SG_FC1_FP8ROW): the
// device pieces that are not the K loop (which is sm90_mega.cu's, beside the bf16 one).
//
// Numerics ("FP8ROW"; CPU twin: kernel/cpu/cpu_mxfp8.h, SG_MX_FP8_CHAN for weights and inputs): FC1's input and
// weight in E4M3 with one fp32 scale per row over all 768 K elements: per token for the input (written by
// LayerNorm-2, sg_sm90_ln_out_fp8 below) and per output channel for the weight (quantised once at load,
// sm90_fc1_fp8.cu); a = max(amax, 2^-64), s = a / 448, q = cvt.rn.satfinite.e4m3(x * (448 / a)) (sg_fp8_scale, as
// sm90_gemm_fp8.cuh's block quantiser). With one scale per row of either operand the scales leave the K loop:
// the accumulators sum the E4M3 products of all 768 K elements (QGMMA m64nNk32, fp32 accumulate) and the
// epilogue applies y = acc * (sa[row] * sw[col]) + bias[col] before GELU (sg_sm90_fp8row_dequant), so the FP8 task
// needs no more registers than the bf16 one (DeepGEMM's per-block promotion needs a second accumulator, which
// spills at 168 registers). Why per row and not DeepGEMM's 1 x 128 / 128 x 128 blocks: E4M3's loss is its 3-bit
// mantissa, not its range, and the CPU study measured the scale recipes within noise of each other
// (docs/perf-notes.md, kernel/sm90 FP8); the K sum in the tensor core's FP8 accumulator (fewer bits kept than
// fp32, DeepSeek-V3) is over 768 elements, not DeepGEMM's thousands, and the GPU check measures the result.
#ifndef SG_SM90_FC1_FP8_CUH
#define SG_SM90_FC1_FP8_CUH

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

#endif
