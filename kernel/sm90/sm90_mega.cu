// kernel/sm90/sm90_mega.cu — the Hopper megakernel: the whole forward (patch embedding, encoder layers,
// post-LayerNorm, MAP head) in one launch.
//
// The kernel's structure (one producer thread feeding both consumer warpgroups through one ring, a storer thread
// per warpgroup; the ticket-ordered task table; counters; the storers' TMA stores and reduce-adds) is shared with
// the Blackwell kernel: kernel/mega/mega_kernel.cuh. This file is its Hopper MMA / accumulator layer (sg_sm90_arch):
//   a consumer warpgroup's 128 x 128 half of a 128 x 256 GEMM task: 2 x wgmma m64n128k16 per k16 step from the
//   shared ring stage (A block at its start, this half's W rows after it), 128 fp32 registers started at the bias
//   (from the shared-memory slot the producer filled); then tanh GELU (FC1, the head's FC1) and the half staged
//   (swizzled) in the warpgroup's own buffer for its storer, one piece (bf16) or two (fp32); small batches' task
//   shapes (mega_plan.h) with m64n128k16 (128 x 128 tasks), m64n64k16 (128 x 64) and m64n32k16 (64 x 64);
//   attention of one (image, head): four 64-query blocks of wgmma (sm90_attn.cuh), two per warpgroup (a narrow
//   launch splits it into two tasks of one block per warpgroup);
// and the launcher handed to the shared host side (kernel/mega/mega_gpu.cu).
#include <cuda_runtime.h>
#include "../mega/mega_kernel.cuh"
#include "sm90_attn.cuh"
#include "sm90_gemm.cuh"
#include "sm90_mega.h"

static_assert(SG_MEGA_ATT_BOX_BYTES == SG_ATTN_TILE_BYTES && SG_MEGA_ATT_BOX_ROWS == SG_ATTN_ROWS &&
                  SG_MEGA_DH == SG_ATTN_DH,
              "an attention box (sm90_attn.cuh) is the start of one ring stage");

// Starts a 64-row half tile's accumulator at the tile's bias (bsa: the 32-bit shared address of its bias slot,
// 128 floats; none: zero), so the K loop accumulates onto it: registers k..k+3 share columns 8 (k/4) + 2 (lane %
// 4) + {0, 1} (the wgmma accumulator layout). Shared-memory loads (the producer brought the bias in beside the
// first K block): a global load here cost two dependent L2 round trips per tile (the layer table, then the bias).
template <int R>  // 64 registers: 128 columns; 32: 64 (a narrow64 task); 16: 32 (a 64 x 64 task's part)
__device__ __forceinline__ void sg_mega_acc_init(float (&acc)[R], uint32_t bsa, bool has_bias) {
    const uint32_t col0 = 2u * (threadIdx.x & 3u);
#pragma unroll
    for (int k = 0; k < R; k += 4) {
        float2 b = make_float2(0.0f, 0.0f);
        if (has_bias)
            asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];"  // volatile + memory: not above the slot's wait
                         : "=f"(b.x), "=f"(b.y) : "r"(bsa + 4u * (col0 + 8u * (k / 4))) : "memory");
        acc[k] = acc[k + 2] = b.x;
        acc[k + 1] = acc[k + 3] = b.y;
    }
}

// Writes half of a tile (acc: 64 rows, 128 columns; rows 64 half .. of the tile) as bf16 into `buf`, the staging
// buffer, in the layout of two TMA boxes of 64 columns x 128 rows with 128-byte swizzle (16-byte chunk c of row r
// at position c ^ (r % 8)): the 8 rows a warp writes at once land in 8 different chunks, so no bank conflicts.
// GELU = 1 applies tanh GELU first.
template <int GELU, int R>  // R = 64: 128 columns (two boxes); 32: 64 (box 0)
__device__ __forceinline__ void sg_mega_stage_bf16(const float (&acc)[R], uint8_t *buf, int half) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // Row r = 64 half + 16 warp + lane/4 + 8 ((k/2)%2), so r % 8 = lane/4 for every register: the swizzle is a
    // per-thread constant, and the addresses are 32-bit shared-window offsets (64-bit generic pointers for 32
    // stores cost enough registers to spill).
    const uint32_t base = sg_smem_u32(buf) + (64 * half + 16 * warp + (lane >> 2)) * 128 + 4 * (lane & 3);
    const uint32_t r8 = (uint32_t)lane >> 2;
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const float a = GELU ? sg_mega_gelu(acc[k]) : acc[k], b = GELU ? sg_mega_gelu(acc[k + 1]) : acc[k + 1];
        const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
        const uint32_t off = (k / 32) * 16384 + 8 * ((k / 2) % 2) * 128 + ((((uint32_t)(k / 4) % 8) ^ r8) << 4);
        asm volatile("st.shared.b32 [%0], %1;" ::"r"(base + off), "r"(*reinterpret_cast<const uint32_t *>(&v))
                     : "memory");
    }
}

// Writes 64 rows x 128 fp32 columns (R = 64; 64 columns when R = 32, 32 when R = 16) into `buf` as four (two, one)
// TMA boxes of 32 columns x 64 rows, 128-byte swizzle.
template <int R>
__device__ __forceinline__ void sg_mega_stage_f32(const float (&acc)[R], uint8_t *buf) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // 16-byte chunk of register pair k: 2 ((k/4) % 4) + (lane % 4)/2 (even + bit), so chunk ^ (row % 8) =
    // 2 ((k/4) % 4) ^ x with the per-thread x = ((lane % 4)/2) ^ (lane/4).
    const uint32_t base = sg_smem_u32(buf) + (16 * warp + (lane >> 2)) * 128 + 8 * (lane & 1);
    const uint32_t x = (((uint32_t)lane & 3) >> 1) ^ ((uint32_t)lane >> 2);
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const uint32_t off = (k / 16) * 8192 + 8 * ((k / 2) % 2) * 128 + (((2 * ((uint32_t)(k / 4) % 4)) ^ x) << 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(base + off), "f"(acc[k]), "f"(acc[k + 1]) : "memory");
    }
}

// The Hopper layer of kernel/mega/mega_kernel.cuh.
struct sg_sm90_arch {
    struct ctx {};
    static constexpr int ln_unroll = 4;  // 4 rows' loads in flight per warp (measured: LayerNorm is HBM-bound)
    static __device__ __forceinline__ void cta_begin() {}
    static __device__ __forceinline__ ctx ctx_for(int) { return ctx(); }
    static __device__ __forceinline__ void cta_end() {}

    static __device__ __forceinline__ void produce_gemm(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *map_a, const CUtensorMap *map_w, int m0,
                                                        int n0, int K, const sg_ring_smem &sm, sg_ring &ring) {
        sg_gemm_produce_wide<SG_MEGA_STAGES>(map_a, map_w, m0, n0, K, sm, ring, sg_mega_shape(k.kind, p.narrow));
    }
    static __device__ __forceinline__ bool ln2_quant(const sg_mega_params &, const float *, const float *, int, int,
                                                     int) {
        return false;  // bf16 FC1 input (FP8 is not in the Hopper megakernel)
    }

    // Warpgroup w's half: the accumulators start at the bias (its shared-memory slot, or zero), the K loop walks the
    // shared ring (each stage freed by one arrival per warpgroup once the next block's MMAs are issued), then the
    // half is staged for the storer. Wide task (128 x 256): the half is 128 x 128, columns 128 w.. (two m64n128
    // accumulators over the A block's two 64-row halves, this half's W rows); narrow (128 x 128): 64 x 128, rows
    // 64 w.. (one accumulator, A's half w, the stage's only W rows). The same m64n128k16 chain either way.
    template <bool PROF>
    static __device__ __forceinline__ long long gemm(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                     const float *bias, ctx &c, const sg_ring_smem &sm, sg_ring &ring,
                                                     const sg_mega_out &out, uint32_t &ophase) {
        switch (sg_mega_shape(k.kind, p.narrow)) {
        case 3: return gemm_half<PROF, 3>(p, k, w, bias, c, sm, ring, out, ophase);
        case 2: return gemm_half<PROF, 2>(p, k, w, bias, c, sm, ring, out, ophase);
        case 1: return gemm_half<PROF, 1>(p, k, w, bias, c, sm, ring, out, ophase);
        default: return gemm_half<PROF, 0>(p, k, w, bias, c, sm, ring, out, ophase);
        }
    }

    // S: the task's shape (mega_plan.h's sg_mega_shape): 0 wide, 1 narrow, 2 narrow64 (64 columns: m64n64k16, 32
    // registers; a ring stage holds two K blocks, sg_gemm_produce_wide), 3 a 64 x 64 task (this warpgroup's 32
    // columns of all 64 rows: m64n32k16, 16 registers; three K blocks a stage).
    template <bool PROF, int S>
    static __device__ __forceinline__ long long gemm_half(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                          const float *bias, ctx &, const sg_ring_smem &sm,
                                                          sg_ring &ring, const sg_mega_out &out, uint32_t &ophase) {
        constexpr bool NARROW = S > 0;
        const int tid = threadIdx.x % 128;
        float acc0[S == 3 ? 16 : S == 2 ? 32 : 64], acc1[NARROW ? 1 : 64];
        {
            const bool hb = bias != nullptr;
            const uint32_t bsa = hb ? sg_smem_u32(bias) : 0u;
            sg_mega_acc_init(acc0, bsa, hb);
            if constexpr (!NARROW) sg_mega_acc_init(acc1, bsa, hb);
        }
        if (PROF) sg_mega_prof_mark(1);
        const int K = sg_mega_gemm_k(k.kind);
        uint32_t prev = 0;
        constexpr int BLOCKS = S == 3 ? SG_GEMM_H64_BLOCKS : S == 2 ? 2 : 1;  // K blocks a stage
        for (int k0 = 0; k0 < K; k0 += BLOCKS * SG_GEMM_BK) {
            sg_mbar_wait(&sm.full[ring.stage], ring.phase);
            const uint8_t *a = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
            const uint64_t da = sg_smem_desc(a + (NARROW ? w * 64 * 128 : 0), 16, 1024);
            const uint64_t db = sg_smem_desc(a + SG_MEGA_A_BYTES + (NARROW ? 0 : w * SG_MEGA_WH_BYTES), 16, 1024);
            sg_wgmma_fence_regs(acc0);
            if constexpr (!NARROW) sg_wgmma_fence_regs(acc1);
            sg_wgmma_fence();
            if constexpr (S == 3) {  // three K blocks of A 64 rows and W 64 rows; this warpgroup's W rows 32 w..
#pragma unroll
                for (int j = 0; j < SG_GEMM_H64_BLOCKS; j++) {
                    const uint8_t *blk = a + j * SG_GEMM_H64_BLOCK;
                    const uint64_t dj = sg_smem_desc(blk, 16, 1024);
                    const uint64_t dw = sg_smem_desc(blk + SG_GEMM_B_BYTES(64) + w * 32 * 128, 16, 1024);
#pragma unroll
                    for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) sg_wgmma_ss_n32(acc0, dj + 2 * kk, dw + 2 * kk, 1);
                }
            } else if constexpr (S == 2) {  // the stage's two K blocks in order: the k16 chain of one block a stage
                const uint64_t da2 = sg_smem_desc(a + SG_GEMM_N64_PAIR + w * 64 * 128, 16, 1024);
                const uint64_t db2 = sg_smem_desc(a + SG_GEMM_N64_PAIR + SG_MEGA_A_BYTES, 16, 1024);
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) sg_wgmma_ss_n64(acc0, da + 2 * kk, db + 2 * kk, 1);
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) sg_wgmma_ss_n64(acc0, da2 + 2 * kk, db2 + 2 * kk, 1);
            } else if constexpr (NARROW) {
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) sg_wgmma_ss_n128(acc0, da + 2 * kk, db + 2 * kk, 1);
            } else {
                const uint64_t da1 = sg_smem_desc(a + 64 * 128, 16, 1024);
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {  // +32 bytes per k16 step = +2 in the address field
                    sg_wgmma_ss_n128(acc0, da + 2 * kk, db + 2 * kk, 1);
                    sg_wgmma_ss_n128(acc1, da1 + 2 * kk, db + 2 * kk, 1);
                }
            }
            sg_wgmma_commit();
            sg_wgmma_fence_regs(acc0);
            if constexpr (!NARROW) sg_wgmma_fence_regs(acc1);
            sg_wgmma_wait<1>();  // the previous block's MMAs are complete: its stage is free (for this warpgroup)
            if (k0 > 0 && tid == 0) sg_mbar_arrive(&sm.empty[prev]);
            prev = ring.stage;
            sg_ring_next(ring, SG_MEGA_STAGES);
        }
        sg_wgmma_wait<0>();
        sg_wgmma_fence_regs(acc0);
        if constexpr (!NARROW) sg_wgmma_fence_regs(acc1);
        if (tid == 0) sg_mbar_arrive(&sm.empty[prev]);
        const long long t_e = PROF ? clock64() : 0;  // the skeleton records the start, K loop and staging
        if (S != 3 && !sg_mega_f32_tile(k.kind)) {  // one piece: the bf16 128 x 128 half (narrow: 64 x 128)
            sg_mega_out_begin(out, ophase);
            if (sg_mega_gelu_tile(k.kind)) {
                sg_mega_stage_bf16<1>(acc0, out.buf, 0);
                if constexpr (!NARROW) sg_mega_stage_bf16<1>(acc1, out.buf, 1);
            } else {
                sg_mega_stage_bf16<0>(acc0, out.buf, 0);
                if constexpr (!NARROW) sg_mega_stage_bf16<0>(acc1, out.buf, 1);
            }
            sg_mega_out_end(out, ophase, 0, true);
        } else {  // pieces of 64 fp32 rows: two (narrow: one; a 64 x 64 task's 32 columns: one box)
            sg_mega_out_begin(out, ophase);
            sg_mega_stage_f32(acc0, out.buf);
            sg_mega_out_end(out, ophase, 0, NARROW);
            if constexpr (!NARROW) {
                sg_mega_out_begin(out, ophase);
                sg_mega_stage_f32(acc1, out.buf);
                sg_mega_out_end(out, ophase, 1, true);
            }
        }
        return t_e;
    }

    // Query blocks w and w + 2 of the four 64-query blocks (a split task, part >= 0: block 2 part + w, its Q rows
    // at 64 w of the 128-row box); the last block gives the Q and K stages back as soon as its S = Q K^T is
    // complete and V's after P V, so the producer's next loads overlap its softmax and P V. One loop for both
    // kinds of task: a second inlined copy of the block cost the register that spilled the kernel.
    static __device__ __forceinline__ void attention(const uint8_t *q, const uint8_t *k, const uint8_t *v,
                                                     uint64_t *empty, int s0, int img, int head, int part,
                                                     __nv_bfloat16 *out, int ldo, int w) {
        const int base = part >= 0 ? 2 * part : 0, first = base + w, end = part >= 0 ? first + 1 : 4;
        for (int rb = first; rb < end; rb += SG_MEGA_WGS)
            sg_sm90_attn_block(rb, q + (rb - base) * 64 * 128, k, v, img, head, out, ldo,
                               rb + SG_MEGA_WGS >= end ? empty : nullptr, s0);
    }
};

// PROF = 1 (SG_SM90_PROFILE=1) adds the cycle counters.
template <bool PROF>
__global__ void __launch_bounds__(SG_MEGA_THREADS) sg_sm90_mega_kernel(const __grid_constant__ sg_mega_params p) {
    sg_mega_kernel_body<sg_sm90_arch, PROF>(p);
}

typedef sg_mega_launch_fns<sg_sm90_mega_kernel<false>, sg_sm90_mega_kernel<true>, SG_MEGA_SMEM> sm90_fns;

const sg_mega_launcher sg_sm90_mega_launcher = {"sm90", sm90_fns::prepare, sm90_fns::launch, nullptr, 3};
