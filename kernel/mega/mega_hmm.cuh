// kernel/mega/mega_hmm.cuh — the MAP head's matrix products on rows of images (HOUT, HFC1, HFC2) as megakernel
// tasks: plain warp-level mma.sync (HMMA m16n8k16, bf16 in, fp32 out), so both architectures run the same code.
//
// The head's products act on one row per image: pooled = hatt Wo^T + bo, hmlp = GELU(hy W1^T + b1),
// pooled += hmlp W2^T + b2. As GEMM tiles (a 64 x 64 task per SM at a few images) each was one long chain of
// wgmma for a single useful row: FC2's K = 3,072 took 8.6 us at batch 1, the head 21 us of the batch's tail. Here a
// task is a block of CB output columns (sg_mega_hmm_cols: 16, 32, 8) over every row of a head row tile, and the
// eight consumer warps split K eight ways:
//   - warp w takes the K elements [256 i + 32 w, 256 i + 32 w + 32) for every i, and reads the weight slice's B
//     fragments for them from the ring stage the producer filled with the task's CB weight rows (tensor copies of
//     256-element boxes, issued before it waits on the task's inputs: the weights depend on nothing);
//   - per 16 rows, each warp loads its A fragments straight from global memory (ld.global.cg: another SM has
//     just written them), runs its k16 steps (6 or 24) as one accumulator chain and writes the sums to the scratch
//     stage; the 8 warps' partial sums are then added in warp order, the bias last, by one thread per output;
//   - inside a k32 block, lane t % 4 takes the 8 consecutive elements [8 (t % 4), 8 (t % 4) + 8): k16 step s uses
//     elements 4 s.. 4 s + 3 of them as the fragment's k pairs (2 (t % 4), +1) and (2 (t % 4) + 8, +1). That is a
//     fixed permutation of k inside the block, the same for A and B, so the product is unchanged and each lane
//     reads 16 contiguous bytes of a row.
// Every output is the same sum in the same order whatever the batch and the row's place in it, so an image's
// embedding does not depend on its batch (target 2 of issue 12; the GPU invariance test checks it).
#ifndef SG_MEGA_HMM_CUH
#define SG_MEGA_HMM_CUH

#include <cstdint>
#include <cuda_bf16.h>
#include "mega_gpu.h"
#include "mega_plan.h"
#include "mega_sync.cuh"
#include "tma_ptx.cuh"

// D += A B for one m16n8k16 step (bf16 in, fp32 accumulate). Fragments (g = lane / 4, t = lane % 4):
//   A: a0 (row g, k 2t..2t+1), a1 (g + 8, 2t..), a2 (g, 2t+8..), a3 (g + 8, 2t+8..); B: b0 (k 2t.., n g), b1 (k
//   2t+8.., n g); D: d0, d1 (g, n 2t, 2t+1), d2, d3 (g + 8, ...).
__device__ __forceinline__ void sg_hmm_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                           uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Shared memory through 32-bit shared-window addresses (ld / st.shared): generic pointers into the ring cost the
// consumers' loop 64-bit address registers, and the kernel has none to spare (168, no spills).
__device__ __forceinline__ uint4 sg_hmm_lds128(uint32_t a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}
__device__ __forceinline__ float sg_hmm_lds32(uint32_t a) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}
__device__ __forceinline__ void sg_hmm_sts64(uint32_t a, float x, float y) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y) : "memory");
}

// 16 bytes of row `row` (zero when row >= rows), from L2.
__device__ __forceinline__ uint4 sg_hmm_load_a(const __nv_bfloat16 *a, int K, int row, int rows, int k) {
    return row < rows ? __ldcg(reinterpret_cast<const uint4 *>(a + (size_t)row * K + k)) : make_uint4(0, 0, 0, 0);
}

// Output columns [c0, c0 + CB) of rows [r0, r_end) of A [.., K] bf16 (global), from the weight slice at w_s (CB
// rows of K bf16; a shared-window address) and the bias (fp32, global); `part`: 2 x 8 x 16 x CB floats of scratch
// (a shared-window address). Each output goes to out(row, column, value) (bias included), by one thread. Run by
// the 256 consumer threads, as warp `warp` (0..7) lane `lane` (the caller's, already in registers); returns with
// every output handed to out (not yet published: the caller's barrier and release).
template <int K, int CB, class Out>
__device__ __forceinline__ void sg_mega_hmm_task(const __nv_bfloat16 *a, int r0, int r_end, uint32_t w_s,
                                                 const float *bias, int c0, uint32_t part, int warp, int lane,
                                                 const Out &out) {
    constexpr int NB = K / SG_MEGA_HMM_BOX, NT = CB / 8;  // per warp: k32 blocks (one per 256 elements); n8 tiles
    constexpr int NA = NB < 4 ? NB : 4, NCH = NB / NA;    // A fragments in chunks of NA k32 blocks
    static_assert(K % 256 == 0 && NB % NA == 0 && CB % 8 == 0 && 16 * CB <= 2 * 256, "head product shape");
    const int g = lane / 4, t4 = lane % 4;
    // this warp's k32 blocks: block w of every 256 elements, the lane's 8 elements of block i from k = kw + 256 i
    const int kw = 32 * warp + 8 * t4;
    // its B fragments, weight row 8 n + g (column c0 + 8 n + g), read from shared memory where they are used (held
    // in registers for the task, they spilled the kernel's consumers): the slice is K / 256 boxes of CB rows x 512
    // bytes (SG_MEGA_HMM_BOX), element (row, k) at box k / 256, byte 2 (k % 256) = 2 kw: a constant offset from wl
    const uint32_t wl = w_s + (uint32_t)(g * 2 * SG_MEGA_HMM_BOX + 2 * kw);
    int buf = 0;
    for (int rb = r0; rb < r_end; rb += 16, buf ^= 1) {
        float acc[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[n][e] = 0.0f;
        uint4 lo[2][NA], hi[2][NA];  // rows g and g + 8 of the block: chunk ch in lo / hi[ch & 1]
#pragma unroll
        for (int i = 0; i < NA; i++) {
            lo[0][i] = sg_hmm_load_a(a, K, rb + g, r_end, kw + SG_MEGA_HMM_BOX * i);
            hi[0][i] = sg_hmm_load_a(a, K, rb + g + 8, r_end, kw + SG_MEGA_HMM_BOX * i);
        }
#pragma unroll
        for (int ch = 0; ch < NCH; ch++) {
            if (ch + 1 < NCH) {  // the next chunk's loads in flight under this chunk's MMAs
#pragma unroll
                for (int i = 0; i < NA; i++) {
                    const int k = kw + SG_MEGA_HMM_BOX * (NA * (ch + 1) + i);
                    lo[(ch + 1) & 1][i] = sg_hmm_load_a(a, K, rb + g, r_end, k);
                    hi[(ch + 1) & 1][i] = sg_hmm_load_a(a, K, rb + g + 8, r_end, k);
                }
            }
#pragma unroll
            for (int i = 0; i < NA; i++) {
                const uint4 l = lo[ch & 1][i], h = hi[ch & 1][i];
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    const uint4 w = sg_hmm_lds128(wl + (uint32_t)(((NA * ch + i) * CB + 8 * n) * 2 * SG_MEGA_HMM_BOX));
                    sg_hmm_mma(acc[n], l.x, h.x, l.y, h.y, w.x, w.y);  // k16 step 0: elements 0-3 of the 8
                    sg_hmm_mma(acc[n], l.z, h.z, l.w, h.w, w.z, w.w);  // step 1: elements 4-7
                }
            }
        }
        // This warp's partial sums into the scratch: part[buf][warp][row 0..15][col 0..CB)
        const uint32_t pw = part + 4u * (uint32_t)((buf * 8 + warp) * 16 * CB + g * CB + 2 * t4);
#pragma unroll
        for (int n = 0; n < NT; n++) {
            sg_hmm_sts64(pw + 4u * (8 * n), acc[n][0], acc[n][1]);
            sg_hmm_sts64(pw + 4u * (8 * CB + 8 * n), acc[n][2], acc[n][3]);
        }
        // Every warp's partials written (the barrier of the next block orders this block's reads of buf before
        // that block's writes of it two blocks on: scratch is double-buffered).
        sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
        const uint32_t pb = part + 4u * (uint32_t)(buf * 8 * 16 * CB);
        for (int o = 32 * warp + lane; o < 16 * CB; o += SG_MEGA_CONSUMERS) {
            const int r = o / CB, c = o % CB, row = rb + r;
            if (row >= r_end) continue;
            float s = sg_hmm_lds32(pb + 4u * o);
#pragma unroll
            for (int w = 1; w < 8; w++) s += sg_hmm_lds32(pb + 4u * (w * 16 * CB + o));
            out(row, c0 + c, s + __ldg(bias + c0 + c));
        }
    }
}

#endif
