// kernel/sm90/sm90_gemm_fp8.cuh — one 128 x 128 output tile of C = epilogue((A_q sa) . (W_q sw)^T) in FP8 as a
// megakernel task (sm_90a), and the quantisers that make its operands.
//
// Numerics (DeepGEMM's SM90 recipe; CPU twin and study: kernel/cpu/cpu_mxfp8.h, SG_MX_FP8):
//   - A [M, K] E4M3 row-major with one fp32 scale per 1 x 128 block (per token along K), stored transposed
//     as sa_t [K/128][ld_s] (ld_s = M rounded up to 4, zero padded) so one TMA box of 128 floats brings the
//     scales of a row tile; W [N, K] E4M3 (nn.Linear layout) with one fp32 scale per 128 x 128 block,
//     sw [N/128][K/128]. Both operands are K-major, the only layout FP8 wgmma accepts.
//   - BK = 128 E4M3 = one 128-byte swizzle row = one scale block along K. Per K block the QGMMAs go into a
//     temporary accumulator that starts at zero, then acc = fmaf(tmp, sa[row] * sw[blk], acc) in fp32
//     registers ("promotion"): Hopper's FP8 tensor-core accumulation keeps too few bits for K = 3072
//     (DeepSeek-V3 technical report, "Increasing Accumulation Precision"), and the scales differ per block.
//   - Quantiser (device twin of sg_fp8_quantize, bit-exact, kernel/lab/test_sm90_fp8.c): a = max(amax, 2^-64),
//     s = a / 448, q = cvt.rn.satfinite.e4m3(x * (448 / a)); pow2: s = 2^ceil(log2(a / 448)), exact scaling.
// Roles and ring: as sm90_gemm.cuh (one producer thread, TMA into a 4-stage mbarrier ring; a ping-pong
// consumer warpgroup holds the whole 128 x 128 tile as two m64n128 fp32 accumulators, 128 registers). A stage
// is A 128 x 128 B + W 128 x 128 B = 32 KB (the bf16 stage's size) plus 512 B of activation scales kept in a
// separate array after the ring (TMA needs 128-byte aligned destinations; the stages stay 1024-aligned).
// The consumer's empty[] arrivals come from each of its 4 warps (count 4): every thread reads its rows' scales
// from the stage, so one thread's arrival could free the stage under another warp's pending read.
// Two ping-pong consumer variants (template SUB), both 128 + 64 accumulator registers (and, for comparison in
// the lab, a cooperative one: sg_sm90_fp8_consume_coop):
//   SUB = 0: per K block, two rounds of 4 x m64n128k32 into one 64-register temporary, each waited for and
//            promoted (the tensor core idles during a promotion unless the other warpgroup issues MMAs);
//   SUB = 1: four m64n64 sub-tiles per K block into two 32-register temporaries, so the promotion of one
//            sub-tile overlaps the MMAs of the next (n64 reads A from shared memory twice as often).
// Megakernel use: sg_sm90_fp8_produce<STAGES> + sg_sm90_fp8_kloop_128<SUB, STAGES, INIT> (INIT = 1 adds onto
// accumulators preset with the bias by sg_sm90_acc_init) + sg_sm90_fp8_epilogue_half. Registers: 128
// accumulators + 64 temporaries need the consumers' 232 (384 threads, setmaxnreg); compiled at the 168 that
// ptxas gives a 320-thread CTA, the tile spills about 1.1-1.3 KB (docs/perf-notes.d/fp8.md).
// Epilogue: bias, tanh GELU, fp32 residual, fp32 and/or bf16 stores as sg_sm90_gemm_epilogue, plus an
// optional E4M3 output with its 1 x 128 scales (the input of the next FP8 GEMM): a row's 128 columns of the
// tile live in the 4 lanes of a quad, so the amax is the thread's 32 values and two shfl.xor steps.
#ifndef SG_SM90_GEMM_FP8_CUH
#define SG_SM90_GEMM_FP8_CUH

#include <cuda_fp8.h>
#include "sm90_gemm.cuh"
#include "../warp_reduce.cuh"
#include "../cpu/cpu_mxfp8.h"
#include "../sm100/sm100_desc.h"

#define SG_FP8_BM 128
#define SG_FP8_BN 128
#define SG_FP8_BK 128  // E4M3 elements = bytes: one 128-byte swizzle row, one scale block (SG_FP8_BLOCK)
#define SG_FP8_STAGES 4  // as the bf16 ring: 4 x 32 KB, each stage holds twice the bf16 stage's MMA work
#define SG_FP8_A_BYTES (SG_FP8_BM * SG_FP8_BK)
#define SG_FP8_W_BYTES (SG_FP8_BN * SG_FP8_BK)
#define SG_FP8_STAGE_BYTES (SG_FP8_A_BYTES + SG_FP8_W_BYTES)
#define SG_FP8_SA_BYTES (SG_FP8_BM * 4)
#define SG_FP8_SMEM_BYTES (SG_FP8_STAGES * (SG_FP8_STAGE_BYTES + SG_FP8_SA_BYTES))
#define SG_FP8_EMPTY_ARRIVALS 4  // one per warp of the consuming warpgroup

// Epilogue of an FP8 GEMM task: the bf16 task's, plus an optional E4M3 output.
typedef struct sg_sm90_fp8_epilogue {
    sg_sm90_epilogue base;  // bias, GELU, residual, fp32 / bf16 outputs (out_f32 / out_bf16 may both be NULL)
    uint8_t *out_q;         // [M, base.ldo] E4M3 codes or NULL
    float *out_s;           // [base.ldo / 128][ld_s] scales of out_q (the next GEMM's sa_t layout)
    int ld_s;
    int pow2;               // 1: power-of-two scales for out_q
} sg_sm90_fp8_epilogue;

typedef struct sg_sm90_fp8_smem {
    uint8_t *stages;  // SG_FP8_STAGES x (A 128 x 128, W 128 x 128), 1024-byte aligned
    float *sa;        // SG_FP8_STAGES x 128 activation scales, 128-byte aligned
    uint64_t *full;   // count 1 (+ tx bytes)
    uint64_t *empty;  // count SG_FP8_EMPTY_ARRIVALS
} sg_sm90_fp8_smem;

// Scale s and multiplier inv of a block with largest magnitude amax: the device twin of cpu_mxfp8.c's
// fp8_scale (fmaxf ignores a NaN amax as the CPU's comparison does; '/' is the IEEE division without
// -use_fast_math, as on the CPU).
__device__ __forceinline__ void sg_fp8_scale(float amax, int pow2, float &s, float &inv) {
    const float a = fmaxf(amax, SG_FP8_AMAX_MIN);
    if (pow2) {
        const int e = (int)sg_ue8m0_for_amax(a) - 127;
        s = ldexpf(1.0f, e);
        inv = ldexpf(1.0f, -e);
    } else {
        s = a / SG_E4M3_MAX;
        inv = SG_E4M3_MAX / a;
    }
}

// Two E4M3 codes of (x, y), x in the low byte (the lower address): cvt.rn.satfinite.e4m3x2.f32.
__device__ __forceinline__ uint16_t sg_fp8x2(float x, float y) {
    return (uint16_t)__nv_cvt_float2_to_fp8x2(make_float2(x, y), __NV_SATFINITE, __NV_E4M3);
}
// Four E4M3 codes of (a, b, c, d), a in the lowest byte: one 32-bit store of four consecutive columns.
__device__ __forceinline__ uint32_t sg_fp8x4(float a, float b, float c, float d) {
    return (uint32_t)sg_fp8x2(a, b) | ((uint32_t)sg_fp8x2(c, d) << 16);
}

// --- FP8 wgmma (QGMMA) ---------------------------------------------------------------------------------------
/* D[64x128] (+)= A[64x32] . B[128x32]^T, E4M3 x E4M3, both K-major in shared memory (descriptors), fp32
 * accumulate (QGMMA); scale_d = 0 overwrites D. FP8 wgmma has no transpose operands: K-major only. */
__device__ __forceinline__ void sg_wgmma_fp8_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
                 SG_WGMMA_REGS64 "}, "
                 "%64, %65, p, 1, 1;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x64] (+)= A[64x32] . B[64x32]^T, E4M3 x E4M3, both K-major in shared memory (descriptors), fp32
 * accumulate (QGMMA); scale_d = 0 overwrites D. FP8 wgmma has no transpose operands: K-major only. */
__device__ __forceinline__ void sg_wgmma_fp8_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {"
                 SG_WGMMA_REGS32 "}, "
                 "%32, %33, p, 1, 1;\n}\n"
                 : SG_WGMMA_ACC32(d, 0)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x32] (+)= A[64x32] . B[32x32]^T, E4M3 x E4M3 (QGMMA); the megakernel's FP8 FC2 in a 64 x 64 task's 64 x 32
 * part (the smallest batches). */
__device__ __forceinline__ void sg_wgmma_fp8_n32(float (&d)[16], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "%16, %17, p, 1, 1;\n}\n"
                 : SG_WGMMA_ACC8(d, 0), SG_WGMMA_ACC8(d, 8)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x256] (+)= A[64x32] . B[256x32]^T, E4M3 x E4M3, both K-major in shared memory (descriptors), fp32
 * accumulate (QGMMA); the megakernel's FP8 FC1 (sm90_fp8row.cuh) in a wide task's 64 x 256 part. */
__device__ __forceinline__ void sg_wgmma_fp8_n256(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
                 SG_WGMMA_REGS128 "}, "
                 "%128, %129, p, 1, 1;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32), SG_WGMMA_ACC32(d, 64), SG_WGMMA_ACC32(d, 96)
                 : "l"(da), "l"(db), "r"(scale_d));
}

// Producer side of one tile (a single thread): K/128 blocks of A rows [m0, m0 + 128), W rows [n0, n0 + 128)
// and the 128 activation scales of the row tile. mapA: E4M3 [M, K], box {128, 128}; mapW: E4M3 [N, K], box
// {128, 128}, both SWIZZLE_128B; mapSA: fp32 [K/128, ld_s], box {128, 1}, no swizzle (columns >= ld_s and
// rows >= M of A are zero-filled, so padding rows promote 0 x 0). STAGES: ring depth (the megakernel's virtual
// CTAs have 3-stage rings).
template <int STAGES = SG_FP8_STAGES>
__device__ __forceinline__ void sg_sm90_fp8_produce(const CUtensorMap *mapA, const CUtensorMap *mapSA,
                                                    const CUtensorMap *mapW, int m0, int n0, int K,
                                                    const sg_sm90_fp8_smem &sm, sg_ring &ring) {
    for (int k0 = 0; k0 < K; k0 += SG_FP8_BK) {
        sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
        uint8_t *a = sm.stages + ring.stage * SG_FP8_STAGE_BYTES;
        sg_mbar_arrive_expect_tx(&sm.full[ring.stage], SG_FP8_STAGE_BYTES + SG_FP8_SA_BYTES);
        sg_tma_load_2d(a, mapA, &sm.full[ring.stage], k0, m0);
        sg_tma_load_2d(a + SG_FP8_A_BYTES, mapW, &sm.full[ring.stage], k0, n0);
        sg_tma_load_2d(sm.sa + ring.stage * SG_FP8_BM, mapSA, &sm.full[ring.stage], m0, k0 / SG_FP8_BK);
        sg_ring_next(ring, STAGES);
    }
}

// Issues 4 x k32 (one 128-wide K block) of D = A . B^T into a fresh temporary and commits them as one group.
template <int R>
__device__ __forceinline__ void sg_fp8_issue_block(float (&d)[R], uint64_t da, uint64_t db) {
    static_assert(R == 64 || R == 32, "m64n128 or m64n64 temporaries");
    sg_wgmma_fence_regs(d);
    sg_wgmma_fence();  // the previous promotion read d: order it before the MMAs overwrite d
#pragma unroll
    for (int kk = 0; kk < SG_FP8_BK / 32; kk++) {  // +32 bytes per k32 step = +2 in the address field
        if constexpr (R == 64)
            sg_wgmma_fp8_n128(d, da + 2 * kk, db + 2 * kk, kk > 0 ? 1 : 0);
        else
            sg_wgmma_fp8_n64(d, da + 2 * kk, db + 2 * kk, kk > 0 ? 1 : 0);
    }
    sg_wgmma_commit();
    sg_wgmma_fence_regs(d);
}

// acc[OFF + k] = fmaf(tmp[k], scale of k's row, acc[OFF + k]); register k of a wgmma fragment is in row
// lane/4 + 8 ((k/2) % 2) of its warp's 16, so s0 serves the first row and s1 the one 8 below. OFF = 32 puts an
// m64n64 temporary into columns 64..127 of an m64n128 accumulator (same row pattern, column block k/4 + 8).
template <int R, int OFF>
__device__ __forceinline__ void sg_fp8_promote(float (&acc)[64], const float (&tmp)[R], float s0, float s1) {
#pragma unroll
    for (int k = 0; k < R; k++) acc[OFF + k] = fmaf(tmp[k], ((k / 2) % 2) ? s1 : s0, acc[OFF + k]);
}

// Frees ring stage `stage` after this warp's reads of it: one arrival per warp (SG_FP8_EMPTY_ARRIVALS).
__device__ __forceinline__ void sg_fp8_release(const sg_sm90_fp8_smem &sm, uint32_t stage) {
    __syncwarp();
    if (threadIdx.x % 32 == 0) sg_mbar_arrive(&sm.empty[stage]);
}

// Fused epilogue of one 64-row half tile (rows [r0, r0 + 64), columns [n0, n0 + 128)) in registers.
// The bias / GELU / residual / store steps of sg_sm90_gemm_epilogue (sg_sm90_epilogue_math, _store: same
// register map, all loads before the first store, rows >= M dropped); then, with ep.out_q, the E4M3 codes and
// 1 x 128 scales of the final values.
__device__ __forceinline__ void sg_sm90_fp8_epilogue_half(float (&acc)[64], int r0, int n0, int M,
                                                          const sg_sm90_fp8_epilogue &ep) {
    const sg_sm90_epilogue &e = ep.base;
    if (!e.out_f32 && !e.out_bf16 && !ep.out_q) return;  // timing probe of the main loop (lab only)
    sg_sm90_epilogue_math<128>(acc, r0, n0, M, e);
    sg_sm90_epilogue_store<128>(acc, r0, n0, M, e);
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row0 = r0 + 16 * warp + lane / 4, col0 = n0 + 2 * (lane % 4);
    if (!ep.out_q) return;
    float m0 = 0.0f, m1 = 0.0f;  // amax of rows row0 and row0 + 8 over this thread's 32 columns each
#pragma unroll
    for (int k = 0; k < 64; k++) {
        if ((k / 2) % 2)
            m1 = fmaxf(m1, fabsf(acc[k]));
        else
            m0 = fmaxf(m0, fabsf(acc[k]));
    }
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {  // the 4 lanes of a quad hold the row's other 96 columns
        m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, o));
        m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, o));
    }
    float s0, inv0, s1, inv1;
    sg_fp8_scale(m0, ep.pow2, s0, inv0);
    sg_fp8_scale(m1, ep.pow2, s1, inv1);
#pragma unroll
    for (int k = 0; k < 64; k += 2) {
        const int hi = (k / 2) % 2, row = row0 + 8 * hi, col = col0 + 8 * (k / 4);
        const float inv = hi ? inv1 : inv0;
        if (row < M)
            *reinterpret_cast<uint16_t *>(ep.out_q + (size_t)row * e.ldo + col) = sg_fp8x2(acc[k] * inv, acc[k + 1] * inv);
    }
    if (lane % 4 == 0) {
        float *s = ep.out_s + (size_t)(n0 / SG_FP8_BN) * ep.ld_s;
        if (row0 < M) s[row0] = s0;
        if (row0 + 8 < M) s[row0 + 8] = s1;
    }
}

// K loop of one FP8 128 x 128 tile by one warpgroup: rows 0-63 into acc0, 64-127 into acc1, K/128 blocks, each
// promoted with the stage's activation scales and sw_tile[kb] (the weight block scales of this column tile,
// global memory). SUB: 0 = m64n128 rounds, 1 = m64n64 sub-tiles (file comment). STAGES: ring depth. INIT = 0:
// the accumulators start at zero; 1: the caller set them (e.g. the bias, sg_sm90_acc_init), and the
// promotion adds onto them.
template <int SUB, int STAGES = SG_FP8_STAGES, int INIT = 0>
__device__ __forceinline__ void sg_sm90_fp8_kloop_128(float (&acc0)[64], float (&acc1)[64], int K, const float *sw_tile,
                                                      const sg_sm90_fp8_smem &sm, sg_ring &ring) {
    if (!INIT) {
#pragma unroll
        for (int i = 0; i < 64; i++) acc0[i] = acc1[i] = 0.0f;
    }
    const int t = threadIdx.x % 128, r = 16 * (t / 32) + (t % 32) / 4;  // this thread's rows r, r + 8 (+ 64)
    for (int kb = 0; kb < K / SG_FP8_BK; kb++) {
        const float swk = __ldg(sw_tile + kb);
        sg_mbar_wait(&sm.full[ring.stage], ring.phase);
        const uint8_t *a = sm.stages + ring.stage * SG_FP8_STAGE_BYTES, *b = a + SG_FP8_A_BYTES;
        const float *sa = sm.sa + ring.stage * SG_FP8_BM;
        const float s00 = sa[r] * swk, s01 = sa[r + 8] * swk, s10 = sa[64 + r] * swk, s11 = sa[72 + r] * swk;
        const uint64_t da0 = sg_smem_desc(a, 16, 1024), da1 = sg_smem_desc(a + 64 * SG_FP8_BK, 16, 1024);
        const uint64_t db = sg_smem_desc(b, 16, 1024);
        if constexpr (SUB == 0) {
            float tmp[64];
            sg_fp8_issue_block(tmp, da0, db);
            sg_wgmma_wait<0>();
            sg_wgmma_fence_regs(tmp);
            sg_fp8_promote<64, 0>(acc0, tmp, s00, s01);
            sg_fp8_issue_block(tmp, da1, db);
            sg_wgmma_wait<0>();
            sg_wgmma_fence_regs(tmp);
            sg_fp8_release(sm, ring.stage);  // A, W read by the MMAs, the scales are in registers
            sg_fp8_promote<64, 0>(acc1, tmp, s10, s11);
        } else {
            // W rows 64..127 of the tile: 8 swizzle atoms of 1024 bytes further.
            const uint64_t db1 = sg_smem_desc(b + 64 * SG_FP8_BK, 16, 1024);
            float t0[32], t1[32];
            sg_fp8_issue_block(t0, da0, db);
            sg_fp8_issue_block(t1, da0, db1);
            sg_wgmma_wait<1>();
            sg_wgmma_fence_regs(t0);
            sg_fp8_promote<32, 0>(acc0, t0, s00, s01);
            sg_fp8_issue_block(t0, da1, db);
            sg_wgmma_wait<1>();
            sg_wgmma_fence_regs(t1);
            sg_fp8_promote<32, 32>(acc0, t1, s00, s01);
            sg_fp8_issue_block(t1, da1, db1);
            sg_wgmma_wait<1>();
            sg_wgmma_fence_regs(t0);
            sg_fp8_promote<32, 0>(acc1, t0, s10, s11);
            sg_wgmma_wait<0>();
            sg_wgmma_fence_regs(t1);
            sg_fp8_release(sm, ring.stage);
            sg_fp8_promote<32, 32>(acc1, t1, s10, s11);
        }
        sg_ring_next(ring, STAGES);
    }
}

// Ping-pong consumer of one FP8 tile (the lab's schedule): the K loop above, then the epilogue of rows
// [m0, m0 + 128) x columns [n0, n0 + 128). The hand-off with the other warpgroup (next_bar) is
// sg_sm90_gemm_consume_pp's.
template <int SUB>
__device__ __forceinline__ void sg_sm90_fp8_consume_pp(int m0, int n0, int M, int K, const float *sw_tile,
                                                       const sg_sm90_fp8_epilogue &ep, const sg_sm90_fp8_smem &sm,
                                                       sg_ring &ring, int next_bar) {
    float acc0[64], acc1[64];
    sg_sm90_fp8_kloop_128<SUB>(acc0, acc1, K, sw_tile, sm, ring);
    if (next_bar >= 0) sg_named_bar_arrive(next_bar, 256);
    sg_sm90_fp8_epilogue_half(acc0, m0, n0, M, ep);
    sg_sm90_fp8_epilogue_half(acc1, m0 + 64, n0, M, ep);
}

// Cooperative consumer (the lab's comparison schedule, DeepGEMM's shape): both consumer warpgroups work on one
// 128 x 128 tile, warpgroup wg on rows [64 wg, 64 wg + 64) with a 64-register accumulator and a 64-register
// temporary; each waits for its own QGMMAs before promoting, and the other warpgroup's QGMMAs keep the tensor
// core busy meanwhile. empty[] then takes 8 arrivals (both warpgroups' warps). The epilogue is not overlapped
// with MMAs (both warpgroups reach it together).
__device__ __forceinline__ void sg_sm90_fp8_consume_coop(int wg, int m0, int n0, int M, int K, const float *sw_tile,
                                                         const sg_sm90_fp8_epilogue &ep, const sg_sm90_fp8_smem &sm,
                                                         sg_ring &ring) {
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.0f;
    const int t = threadIdx.x % 128, r = 64 * wg + 16 * (t / 32) + (t % 32) / 4;
    for (int kb = 0; kb < K / SG_FP8_BK; kb++) {
        const float swk = __ldg(sw_tile + kb);
        sg_mbar_wait(&sm.full[ring.stage], ring.phase);
        const uint8_t *a = sm.stages + ring.stage * SG_FP8_STAGE_BYTES, *b = a + SG_FP8_A_BYTES;
        const float *sa = sm.sa + ring.stage * SG_FP8_BM;
        const float s0 = sa[r] * swk, s1 = sa[r + 8] * swk;
        float tmp[64];
        sg_fp8_issue_block(tmp, sg_smem_desc(a + 64 * wg * SG_FP8_BK, 16, 1024), sg_smem_desc(b, 16, 1024));
        sg_wgmma_wait<0>();
        sg_wgmma_fence_regs(tmp);
        sg_fp8_release(sm, ring.stage);
        sg_fp8_promote<64, 0>(acc, tmp, s0, s1);
        sg_ring_next(ring, SG_FP8_STAGES);
    }
    sg_sm90_fp8_epilogue_half(acc, m0 + 64 * wg, n0, M, ep);
}

// Activation quantiser, one warp per (row, 128-column block), lane l holding columns 4l..4l+3: x [M, K] fp32
// -> q [M, K] E4M3, s_t[kb * ld_s + row] (the sa_t layout). The LN / attention / FC1 tasks will do the same
// from their registers.
__device__ __forceinline__ void sg_fp8_quant_act_warp(const float *x, int K, int row, int kb, uint8_t *q, float *s_t,
                                                      int ld_s, int pow2) {
    const int lane = threadIdx.x % 32;
    const size_t off = (size_t)row * K + (size_t)kb * SG_FP8_BK + 4 * lane;
    const float4 v = *reinterpret_cast<const float4 *>(x + off);
    const float m = sg_warp_max(fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    float s, inv;
    sg_fp8_scale(m, pow2, s, inv);
    *reinterpret_cast<uint32_t *>(q + off) = sg_fp8x4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    if (lane == 0) s_t[(size_t)kb * ld_s + row] = s;
}

// Weight quantiser, one 256-thread block per 128 x 128 block (bn, bk): thread t takes row t/2, columns
// 64 (t%2) .. +63. w [N, K] fp32 -> q [N, K] E4M3, s[bn * (K/128) + bk]. red: 8 floats of shared memory.
__device__ __forceinline__ void sg_fp8_quant_w_block(const float *w, int K, int bn, int bk, uint8_t *q, float *s,
                                                     int pow2, float *red) {
    const int t = threadIdx.x;
    const size_t off = (size_t)(bn * SG_FP8_BN + t / 2) * K + (size_t)bk * SG_FP8_BK + 64 * (t % 2);
    const float4 *src = reinterpret_cast<const float4 *>(w + off);
    float m = 0.0f;
#pragma unroll 4
    for (int i = 0; i < 16; i++) {
        const float4 v = src[i];
        m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    }
    m = sg_warp_max(m);
    if (t % 32 == 0) red[t / 32] = m;
    __syncthreads();
    m = red[0];
#pragma unroll
    for (int i = 1; i < 8; i++) m = fmaxf(m, red[i]);
    float sc, inv;
    sg_fp8_scale(m, pow2, sc, inv);
    uint32_t *dst = reinterpret_cast<uint32_t *>(q + off);
#pragma unroll 4
    for (int i = 0; i < 16; i++) {
        const float4 v = src[i];
        dst[i] = sg_fp8x4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    }
    if (t == 0) s[(size_t)bn * (K / SG_FP8_BK) + bk] = sc;
}
#endif
