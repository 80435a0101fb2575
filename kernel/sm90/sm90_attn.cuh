// kernel/sm90/sm90_attn.cuh — self-attention of one (image, head) as a megakernel task (sm_90a).
//
// Input: the QKV GEMM output, bf16 [M = 196 B, 2304] row-major: columns [0,768) Q, [768,1536) K,
// [1536,2304) V, head h at column 64 h of each. Output: bf16 [M, ldo], head h at columns [64 h, 64 h + 64).
// With only 196 tokens everything fits in shared memory, so there is no online softmax (kernel-notes.md §4):
//   producer (one thread): three TMA boxes of 256 rows x 64 columns (Q, K, V of the head) on one mbarrier;
//   consumer warpgroup wg (0, 1) takes the 64-query row blocks wg and wg + 2 (rows 196..255 are padding and
//   never stored):
//     S  = Q_blk . K^T        4 x wgmma m64n208k16 (K-major both; keys 196..207 are masked below)
//     P  = exp2((S - rowmax) * 0.125 log2 e), exact fp32 row max and sum (a row lives in one lane quad)
//     O  = P . V              13 x wgmma m64n64k16, P from registers (bf16), V MN-major (tnspB = 1)
//     out = O / rowsum  (bf16)
// Padding rows of the boxes come from the next image or are zero-filled past the end of the tensor: finite,
// and multiplied by P = 0 (masked keys) or never stored (padding queries).
#ifndef SG_SM90_ATTN_CUH
#define SG_SM90_ATTN_CUH

#include "../mega/mega_ring.cuh"
#include "sm90_ptx.cuh"

#define SG_ATTN_T 196          // tokens per image
#define SG_ATTN_DH 64          // head dim
#define SG_ATTN_KPAD 208       // keys padded to a multiple of 16 (wgmma K step of P.V) and of 8 (n208)
#define SG_ATTN_ROWS 256       // TMA box rows: 4 query blocks of 64
#define SG_ATTN_TILE_BYTES (SG_ATTN_ROWS * SG_ATTN_DH * 2)
#define SG_ATTN_SMEM_BYTES (3 * SG_ATTN_TILE_BYTES)

typedef struct sg_sm90_attn_smem {
    uint8_t *q, *k, *v;  // SG_ATTN_TILE_BYTES each, 1024-byte aligned, SWIZZLE_128B layout
    uint64_t *full;      // count 1 (+ tx bytes)
    uint64_t *empty;     // count 2 (one arrival per consumer warpgroup)
} sg_sm90_attn_smem;

// Producer: one thread. mapQKV: box {64, 256} over [M, 2304], SWIZZLE_128B. `phase` is this role's phase bit
// of the one-slot ring, flipped after each task.
__device__ __forceinline__ void sg_sm90_attn_produce(const CUtensorMap *mapQKV, int img, int head,
                                                     const sg_sm90_attn_smem &sm, uint32_t &phase) {
    sg_mbar_wait(sm.empty, phase ^ 1u);
    sg_mbar_arrive_expect_tx(sm.full, 3 * SG_ATTN_TILE_BYTES);
    const int row = img * SG_ATTN_T, col = head * SG_ATTN_DH;
    sg_tma_load_2d(sm.q, mapQKV, sm.full, col, row);
    sg_tma_load_2d(sm.k, mapQKV, sm.full, 768 + col, row);
    sg_tma_load_2d(sm.v, mapQKV, sm.full, 1536 + col, row);
    phase ^= 1u;
}

// One 64-query block rb (0..3) of one (image, head) by the 128 threads of a warpgroup, with Q, K, V already in
// shared memory (qblk: the block's 64 Q rows; k, v: 256 x 64 bf16 SW128 boxes; 1024-byte aligned). release (the
// warpgroup's last block in the megakernel; else NULL): the ring's empty barriers; Q, K and V are stages
// sg_mega_qkv_stage(sqkv, 0..2) (mega_ring.cuh); one arrival each by thread 0, Q's and K's once S = Q K^T is
// complete, V's once P V is.
__device__ __forceinline__ void sg_sm90_attn_block(int rb, const uint8_t *qblk, const uint8_t *k, const uint8_t *v,
                                                   int img, int head, __nv_bfloat16 *out, int ldo,
                                                   uint64_t *release, int sqkv) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // softmax(0.125 s) = exp2(0.125 log2(e) s - 0.125 log2(e) max) / sum: one FFMA and one ex2.approx.ftz per
    // element (exp2f's range handling for results below 2^-126 cost four more instructions per element, and the
    // softmax is issue-bound: docs/perf-notes.md session 11; such terms are below the sum's rounding anyway).
    const float scale_log2 = 0.125f * 1.4426950408889634f;
    const uint64_t dk = sg_smem_desc(k, 16, 1024);
    // V as the MN-major B operand: one 64-wide N block (LBO unused), 8-key groups 1024 bytes apart; each k16
    // step of P.V covers 16 keys = 2048 bytes.
    const uint64_t dv = sg_smem_desc(v, SG_ATTN_TILE_BYTES, 1024);
    float s[SG_ATTN_KPAD / 2];
#pragma unroll
    for (int i = 0; i < SG_ATTN_KPAD / 2; i++) s[i] = 0.0f;
    const uint64_t dq = sg_smem_desc(qblk, 16, 1024);
    sg_wgmma_fence_regs(s);
    sg_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < SG_ATTN_DH / 16; kk++) sg_wgmma_ss_n208(s, dq + 2 * kk, dk + 2 * kk, kk > 0);
    sg_wgmma_commit();
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(s);
    if (release && t == 0) {  // this warpgroup's reads of Q and K are complete
        sg_mbar_arrive(release + sg_mega_qkv_stage(sqkv, 0));
        sg_mbar_arrive(release + sg_mega_qkv_stage(sqkv, 1));
    }

    // Register k holds row r + 8 ((k/2)%2), column 8 (k/4) + 2 (lane%4) + k%2 (sm90_ptx.cuh).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int k = 0; k < SG_ATTN_KPAD / 2; k++) {
        const int col = 8 * (k / 4) + 2 * (lane % 4) + (k % 2);
        if (col < SG_ATTN_T) mx[(k / 2) % 2] = fmaxf(mx[(k / 2) % 2], s[k]);
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    }
    float sum[2] = {0.0f, 0.0f};
    const float mxs[2] = {mx[0] * scale_log2, mx[1] * scale_log2};
#pragma unroll
    for (int k = 0; k < SG_ATTN_KPAD / 2; k++) {
        const int col = 8 * (k / 4) + 2 * (lane % 4) + (k % 2);
        float p = 0.0f;
        if (col < SG_ATTN_T)
            asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(fmaf(s[k], scale_log2, -mxs[(k / 2) % 2])));
        s[k] = p;
        sum[(k / 2) % 2] += p;
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
    }

    float o[SG_ATTN_DH / 2];
#pragma unroll
    for (int i = 0; i < SG_ATTN_DH / 2; i++) o[i] = 0.0f;
    // The m64k16 A fragment is the accumulator layout of 16 columns: (r, c), (r+8, c), (r, c+8), (r+8, c+8)
    // pairs = accumulator registers 8kk + {0,1}, {2,3}, {4,5}, {6,7}.
    uint32_t pa[SG_ATTN_KPAD / 16][4];
#pragma unroll
    for (int kk = 0; kk < SG_ATTN_KPAD / 16; kk++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            __nv_bfloat162 v2 = __floats2bfloat162_rn(s[8 * kk + 2 * j], s[8 * kk + 2 * j + 1]);
            pa[kk][j] = *reinterpret_cast<uint32_t *>(&v2);
        }
    }
    sg_wgmma_fence_regs(o);
    sg_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < SG_ATTN_KPAD / 16; kk++) sg_wgmma_rs_n64_tb(o, pa[kk], dv + kk * (2048 >> 4), kk > 0);
    sg_wgmma_commit();
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(o);
    if (release && t == 0) sg_mbar_arrive(release + sg_mega_qkv_stage(sqkv, 2));  // and of V

    const float inv[2] = {1.0f / sum[0], 1.0f / sum[1]};
    const int r0 = 64 * rb + 16 * warp + lane / 4;
#pragma unroll
    for (int k = 0; k < SG_ATTN_DH / 2; k += 2) {
        const int r = r0 + 8 * ((k / 2) % 2);
        const int col = head * SG_ATTN_DH + 8 * (k / 4) + 2 * (lane % 4);
        if (r < SG_ATTN_T) {
            const float f = inv[(k / 2) % 2];
            *reinterpret_cast<__nv_bfloat162 *>(out + (size_t)(img * SG_ATTN_T + r) * ldo + col) =
                __floats2bfloat162_rn(o[k] * f, o[k + 1] * f);
        }
    }
}

// Consumer: all 128 threads of consumer warpgroup wg (0 or 1); takes query blocks wg and wg + 2.
__device__ __forceinline__ void sg_sm90_attn_consume(int wg, int img, int head, __nv_bfloat16 *out, int ldo,
                                                     const sg_sm90_attn_smem &sm, uint32_t &phase) {
    sg_mbar_wait(sm.full, phase);
    for (int rb = wg; rb < 4; rb += 2)
        sg_sm90_attn_block(rb, sm.q + rb * 64 * 128, sm.k, sm.v, img, head, out, ldo, nullptr, 0);
    if (threadIdx.x % 128 == 0) sg_mbar_arrive(sm.empty);
    phase ^= 1u;
}
#endif
