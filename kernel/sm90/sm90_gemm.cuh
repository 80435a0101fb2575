// kernel/sm90/sm90_gemm.cuh — one output tile of C = epilogue(A . W^T) as a megakernel task (sm_90a).
//
// Shapes: A [M, K] bf16 row-major (activations), W [N, K] bf16 row-major (nn.Linear weight, [out, in]), so
// both operands are K-major and no transpose is needed (also what FP8 wgmma requires later). One task = one
// BM x BN tile, BM = 128, BN = 128 or 256 (template); K is walked in BK = 64 blocks (64 bf16 = one 128-byte
// swizzle row).
// Roles inside the CTA (3 warpgroups, 384 threads):
//   warpgroup 0 — producer: one thread streams A and W blocks with TMA into a STAGES-deep mbarrier ring;
//   warpgroups 1, 2 — consumers, in one of two schedules:
//     cooperative: both on one tile, 64 rows each (wgmma m64nBNk16, BN/2 fp32 registers);
//     ping-pong (BN = 128): alternate tiles, each warpgroup the whole tile (2 x m64n128k16, 128 registers),
//     so one's epilogue overlaps the other's K loop (measured faster on 3 of 4 layer shapes).
//   Either way a consumer waits on full[s], issues its wgmma for the K block, and frees the stage (empty[s])
//   once the next block's MMAs are issued (wait_group 1 keeps one block of MMAs in flight).
// The ring, its position (sg_ring) and the producer's TMA loads (sg_gemm_produce) are the architecture-neutral
// part, kernel/mega/mega_ring.cuh; this file is the wgmma consumer side and the register epilogue.
// Epilogue (registers -> global): + bias[n], optional tanh GELU, optional + residual[m, n] (fp32), then fp32
// and/or bf16 stores; rows >= M are dropped (TMA zero-fills them on load).
#ifndef SG_SM90_GEMM_CUH
#define SG_SM90_GEMM_CUH

#include "../mega/mega_ring.cuh"
#include "sm90_ptx.cuh"

#define SG_GEMM_BN 128  // default tile width (the MLP skeleton's); the lab also runs 256
// 4 stages: enough K blocks in flight to cover TMA latency (~1 us) at 0.25-0.5 us of MMAs per block; with
// BN = 128 the ring is 128 KB and leaves ~95 KB of the 227 KB for attention / LayerNorm scratch.
#define SG_GEMM_STAGES 4
#define SG_GEMM_SMEM_BYTES(bn) (SG_GEMM_STAGES * SG_GEMM_STAGE_BYTES(bn))

// Epilogue of one GEMM task. All pointers are device pointers; ld* are in elements.
typedef struct sg_sm90_epilogue {
    const float *bias;        // [N] or NULL
    int gelu;                 // 1: tanh GELU after the bias (gelu_pytorch_tanh)
    const float *residual;    // [M, ldr] fp32 or NULL: added last (may alias out_f32: in-place residual stream)
    int ldr;
    float *out_f32;           // [M, ldo] or NULL
    __nv_bfloat16 *out_bf16;  // [M, ldo] or NULL (the next GEMM's input)
    int ldo;
} sg_sm90_epilogue;

// gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); tanhf (not tanh.approx) until the
// accuracy budget of the whole forward is measured.
__device__ __forceinline__ float sg_gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(k0 * (x + 0.044715f * x * x * x)));
}

// Fused epilogue of one 64-row half tile held in registers by a consumer warpgroup: rows [r0, r0 + 64),
// columns [n0, n0 + BN). Register k of acc is (row 16 warp + lane/4 + 8 ((k/2)%2), column 8 (k/4) + 2 (lane%4)
// + k%2); pairs (k, k+1) are adjacent columns, stored as one float2 / bf16x2.
// All bias and residual loads are issued before the first store: the output may alias the residual (in-place
// residual stream), so the compiler may not move a load above an earlier store, and loads interleaved with
// stores ran one global-memory latency per register pair (v2: 2.2x the main loop's time on out-proj).
// In two steps, so that the FP8 epilogue (sm90_gemm_fp8.cuh) adds its quantisation to the same math and stores:
// sg_sm90_epilogue_math (bias, GELU, residual, in registers), then sg_sm90_epilogue_store.
template <int BN>
__device__ __forceinline__ void sg_sm90_epilogue_math(float (&acc)[BN / 2], int r0, int n0, int M,
                                                      const sg_sm90_epilogue &ep) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row0 = r0 + 16 * warp + lane / 4, col0 = n0 + 2 * (lane % 4);
    if (ep.bias) {
#pragma unroll
        for (int k = 0; k < BN / 2; k += 4) {  // registers k..k+3 share columns col0 + 8 (k/4) + {0, 1}
            const float2 bb = *reinterpret_cast<const float2 *>(ep.bias + col0 + 8 * (k / 4));
            acc[k] += bb.x;
            acc[k + 1] += bb.y;
            acc[k + 2] += bb.x;
            acc[k + 3] += bb.y;
        }
    }
    if (ep.gelu) {
#pragma unroll
        for (int k = 0; k < BN / 2; k++) acc[k] = sg_gelu_tanh(acc[k]);
    }
    if (ep.residual) {
        float2 r[BN / 4];
#pragma unroll
        for (int k = 0; k < BN / 2; k += 2) {
            const int row = row0 + 8 * ((k / 2) % 2);
            // __ldcg (L2 only): in the megakernel the residual was just written by another SM, and a line this SM
            // cached earlier would be stale.
            r[k / 2] = row < M ? __ldcg(reinterpret_cast<const float2 *>(ep.residual + (size_t)row * ep.ldr + col0 +
                                                                         8 * (k / 4)))
                               : make_float2(0.0f, 0.0f);
        }
#pragma unroll
        for (int k = 0; k < BN / 2; k += 2) {
            acc[k] += r[k / 2].x;
            acc[k + 1] += r[k / 2].y;
        }
    }
}

template <int BN>
__device__ __forceinline__ void sg_sm90_epilogue_store(const float (&acc)[BN / 2], int r0, int n0, int M,
                                                       const sg_sm90_epilogue &ep) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row0 = r0 + 16 * warp + lane / 4, col0 = n0 + 2 * (lane % 4);
#pragma unroll
    for (int k = 0; k < BN / 2; k += 2) {
        const int row = row0 + 8 * ((k / 2) % 2), col = col0 + 8 * (k / 4);
        if (row >= M) continue;
        if (ep.out_f32)
            *reinterpret_cast<float2 *>(ep.out_f32 + (size_t)row * ep.ldo + col) = make_float2(acc[k], acc[k + 1]);
        if (ep.out_bf16)
            *reinterpret_cast<__nv_bfloat162 *>(ep.out_bf16 + (size_t)row * ep.ldo + col) =
                __floats2bfloat162_rn(acc[k], acc[k + 1]);
    }
}

template <int BN>
__device__ __forceinline__ void sg_sm90_gemm_epilogue(float (&acc)[BN / 2], int r0, int n0, int M,
                                                      const sg_sm90_epilogue &ep) {
    if (!ep.out_f32 && !ep.out_bf16) return;  // timing probe of the main loop (lab only)
    sg_sm90_epilogue_math<BN>(acc, r0, n0, M, ep);
    sg_sm90_epilogue_store<BN>(acc, r0, n0, M, ep);
}

// Cooperative consumer of one tile: all 128 threads of consumer warpgroup `wg` (0 or 1), which owns rows
// [m0 + 64 wg, m0 + 64 wg + 64); both warpgroups work on the same tile (empty[] count 2). Runs the K loop and
// the fused epilogue. MC: the lab's 2-CTA cluster (W multicast) whose peer CTA writes into this ring too, so each
// stage is freed there as well (empty[] count 4; the peer's rank read where it is used, which keeps it out of the
// K loop's registers).
template <int BN, int STAGES = SG_GEMM_STAGES, bool MC = false>
__device__ __forceinline__ void sg_sm90_gemm_consume(int wg, int m0, int n0, int M, int K, const sg_sm90_epilogue &ep,
                                                     const sg_ring_smem &sm, sg_ring &ring) {
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.0f;
    const int t = threadIdx.x % 128;
    uint32_t prev_stage = 0;
    for (int k0 = 0; k0 < K; k0 += SG_GEMM_BK) {
        sg_mbar_wait(&sm.full[ring.stage], ring.phase);
        const uint8_t *a = sm.stages + ring.stage * SG_GEMM_STAGE_BYTES(BN) + wg * (64 * 128);
        const uint8_t *b = sm.stages + ring.stage * SG_GEMM_STAGE_BYTES(BN) + SG_GEMM_A_BYTES;
        const uint64_t da = sg_smem_desc(a, 16, 1024), db = sg_smem_desc(b, 16, 1024);
        sg_wgmma_fence_regs(acc);
        sg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {  // +32 bytes per k16 step = +2 in the address field
            if constexpr (BN == 256)
                sg_wgmma_ss_n256(acc, da + 2 * kk, db + 2 * kk, (k0 > 0 || kk > 0) ? 1 : 0);
            else
                sg_wgmma_ss_n128(acc, da + 2 * kk, db + 2 * kk, (k0 > 0 || kk > 0) ? 1 : 0);
        }
        sg_wgmma_commit();
        sg_wgmma_fence_regs(acc);
        // The previous block's MMAs are complete once at most this block's group is pending: free its stage.
        sg_wgmma_wait<1>();
        if (k0 > 0 && t == 0) sg_ring_free(sm, prev_stage, MC ? (int)(sg_cluster_rank() ^ 1u) : -1);
        prev_stage = ring.stage;
        sg_ring_next(ring, STAGES);
    }
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(acc);
    if (t == 0) sg_ring_free(sm, prev_stage, MC ? (int)(sg_cluster_rank() ^ 1u) : -1);
    sg_sm90_gemm_epilogue<BN>(acc, m0 + 64 * wg, n0, M, ep);
}

// Ping-pong consumer: one warpgroup computes the whole 128 x 128 tile (two m64n128 accumulators, 128 registers)
// and the two consumer warpgroups take alternate tiles (empty[] count 1), so one runs its K loop while the other
// runs its epilogue and the tensor cores do not idle during epilogues.
// Hand-off (the caller's part): a warpgroup starts a tile's K loop only after the other one finished the K loop
// of the tile before (named barrier `SG_PP_BAR + wg`, 256 threads). Besides ordering the tensor-core use this is
// required for correctness: a warpgroup that stepped over the other's K blocks would otherwise wait on a full[]
// barrier up to K/BK/STAGES phases ahead, and a parity wait cannot tell phase p from phase p + 2.
// next_bar >= 0: arrive there once this K loop is done (the other warpgroup has a next tile waiting on it).
// Starts a 64-row half tile's accumulator at bias[n] (zero when bias is NULL), so the K loop accumulates onto it
// and the epilogue has no bias to add. (The megakernel adds the residual with a TMA reduce-add instead of
// loading it.) Layout as in the epilogue below: registers k..k+3 share columns col0 + 8 (k/4) + {0, 1}.
__device__ __forceinline__ void sg_sm90_acc_init(float (&acc)[64], int n0, const float *bias) {
    const int col0 = n0 + 2 * (threadIdx.x % 4);
#pragma unroll
    for (int k = 0; k < 64; k += 4) {
        const float2 b =
            bias ? __ldg(reinterpret_cast<const float2 *>(bias + col0 + 8 * (k / 4))) : make_float2(0.0f, 0.0f);
        acc[k] = acc[k + 2] = b.x;
        acc[k + 1] = acc[k + 3] = b.y;
    }
}

// K loop of one 128 x 128 tile by one warpgroup (rows 0-63 into acc0, 64-127 into acc1) over a STAGES-deep ring
// whose empty[] barriers count 1; each stage is freed once the next block's MMAs are issued.
// INIT = 0: the accumulators start at zero; 1: they were set by the caller (sg_sm90_acc_init).
// hold (0, 1 or 2): the last `hold` stages are not freed but returned (last block's stage in held0, the one
// before in held1), so the caller can stage its output tile there; it must free them later.
// peer >= 0 (the lab's 2-CTA clusters, whose stages are also written by the peer CTA's multicast loads): a stage is
// freed on the empty barriers of this CTA and of cluster CTA `peer` (they count an arrival from each).
template <int STAGES, int INIT = 0>
__device__ __forceinline__ void sg_sm90_gemm_kloop_128_hold(float (&acc0)[64], float (&acc1)[64], int K,
                                                            const sg_ring_smem &sm, sg_ring &ring, int hold,
                                                            uint32_t &held0, uint32_t &held1, int peer = -1) {
    if (!INIT) {
#pragma unroll
        for (int i = 0; i < 64; i++) acc0[i] = acc1[i] = 0.0f;
    }
    const int t = threadIdx.x % 128;
    uint32_t prev_stage = 0;
    for (int k0 = 0; k0 < K; k0 += SG_GEMM_BK) {
        sg_mbar_wait(&sm.full[ring.stage], ring.phase);
        const uint8_t *a = sm.stages + ring.stage * SG_GEMM_STAGE_BYTES(128);
        const uint8_t *b = a + SG_GEMM_A_BYTES;
        const uint64_t da = sg_smem_desc(a, 16, 1024), db = sg_smem_desc(b, 16, 1024);
        const uint64_t da1 = sg_smem_desc(a + 64 * 128, 16, 1024);
        sg_wgmma_fence_regs(acc0);
        sg_wgmma_fence_regs(acc1);
        sg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {
            const int acc = (INIT || k0 > 0 || kk > 0) ? 1 : 0;
            sg_wgmma_ss_n128(acc0, da + 2 * kk, db + 2 * kk, acc);
            sg_wgmma_ss_n128(acc1, da1 + 2 * kk, db + 2 * kk, acc);
        }
        sg_wgmma_commit();
        sg_wgmma_fence_regs(acc0);
        sg_wgmma_fence_regs(acc1);
        sg_wgmma_wait<1>();
        if (k0 > 0) {
            if (hold == 2 && k0 + SG_GEMM_BK >= K) held1 = prev_stage;
            else if (t == 0) sg_ring_free(sm, prev_stage, peer);
        }
        prev_stage = ring.stage;
        sg_ring_next(ring, STAGES);
    }
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(acc0);
    sg_wgmma_fence_regs(acc1);
    if (hold >= 1) held0 = prev_stage;
    else if (t == 0) sg_ring_free(sm, prev_stage, peer);
}

template <int STAGES, int INIT = 0>
__device__ __forceinline__ void sg_sm90_gemm_kloop_128(float (&acc0)[64], float (&acc1)[64], int K,
                                                       const sg_ring_smem &sm, sg_ring &ring, int peer = -1) {
    uint32_t h0, h1;
    sg_sm90_gemm_kloop_128_hold<STAGES, INIT>(acc0, acc1, K, sm, ring, 0, h0, h1, peer);
}

#define SG_PP_BAR 3  // named barriers 3 and 4 (1 and 2 are the counter signals of mega_sync.cuh)
__device__ __forceinline__ void sg_sm90_gemm_consume_pp(int m0, int n0, int M, int K, const sg_sm90_epilogue &ep,
                                                        const sg_ring_smem &sm, sg_ring &ring,
                                                        int next_bar, int peer = -1) {
    float acc0[64], acc1[64];
    sg_sm90_gemm_kloop_128<SG_GEMM_STAGES>(acc0, acc1, K, sm, ring, peer);
    if (next_bar >= 0) sg_named_bar_arrive(next_bar, 256);
    sg_sm90_gemm_epilogue<128>(acc0, m0, n0, M, ep);
    sg_sm90_gemm_epilogue<128>(acc1, m0 + 64, n0, M, ep);
}

// Steps a consumer's ring position over `blocks` K blocks that belong to the other consumer warpgroup.
__device__ __forceinline__ void sg_ring_skip(sg_ring &r, int blocks) {
    for (int i = 0; i < blocks; i++) sg_ring_next(r, SG_GEMM_STAGES);
}
#endif
