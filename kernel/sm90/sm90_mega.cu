// kernel/sm90/sm90_mega.cu — the Hopper megakernel: the whole forward (patch embedding, encoder layers,
// post-LayerNorm, MAP head) in one launch.
//
// The kernel's structure (one producer thread feeding both consumer warpgroups through one ring, a storer thread
// per warpgroup; the ticket-ordered task table; counters; the storers' TMA stores and reduce-adds) is shared with
// the Blackwell kernel: kernel/mega/mega_kernel.cuh. This file is its Hopper MMA / accumulator layer (sg_sm90_arch):
//   a consumer warpgroup's 64 x 256 part of a 128 x 256 GEMM task: one wgmma m64n256k16 per k16 step from the
//   shared ring stage (the A block's rows 64 w.., all 256 W rows after it), 128 fp32 registers started at the bias
//   (from the shared-memory slot the producer filled); then tanh GELU (FC1) and the part staged
//   (swizzled) in the warpgroup's own buffer for its storer, one piece (bf16) or two (fp32); small batches' task
//   shapes (mega_plan.h) with m64n128k16 (128 x 128 tasks), m64n64k16 (128 x 64) and m64n32k16 (64 x 64);
//   attention of one (image, head): four 64-query blocks of wgmma (sm90_attn.cuh), two per warpgroup (a narrow
//   launch splits it into two tasks of one block per warpgroup);
// and the launcher handed to the shared host side (kernel/mega/mega_gpu.cu).
#include <cuda_runtime.h>
#include "../mega/mega_kernel.cuh"
#include "sm90_attn.cuh"
#include "sm90_fp8row.cuh"
#include "sm90_gemm.cuh"
#include "sm90_mega.h"

static_assert(SG_MEGA_ATT_BOX_BYTES == SG_ATTN_TILE_BYTES && SG_MEGA_ATT_BOX_ROWS == SG_ATTN_ROWS &&
                  SG_MEGA_DH == SG_ATTN_DH,
              "an attention box (sm90_attn.cuh) is the start of one ring stage");

// Starts a 64-row half tile's accumulator at the tile's bias (bsa: the 32-bit shared address of its bias slot,
// 128 floats; none: zero), so the K loop accumulates onto it: registers k..k+3 share columns 8 (k/4) + 2 (lane %
// 4) + {0, 1} (the wgmma accumulator layout). Shared-memory loads (the producer brought the bias in beside the
// first K block): a global load here cost two dependent L2 round trips per tile (the layer table, then the bias).
template <int R>  // 128 registers: 256 columns (a wide task); 64: 128; 32: 64 (narrow64); 16: 32 (a 64 x 64 part)
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

// Writes a warpgroup's 64 rows (acc: 64 rows x 2 R columns, the wgmma accumulator layout) as bf16 into `buf`, the
// staging buffer, in the layout of R / 32 TMA boxes of 64 columns x 64 rows, 8 KB apart, with 128-byte swizzle
// (16-byte chunk c of row r at position c ^ (r % 8)): the 8 rows a warp writes at once land in 8 different chunks,
// so no bank conflicts. GELU = 1 applies tanh GELU first.
template <int GELU, int R>  // R = 128: 256 columns (four boxes); 64: 128 (two); 32: 64 (one)
__device__ __forceinline__ void sg_mega_stage_bf16(const float (&acc)[R], uint8_t *buf) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // Row r = 16 warp + lane/4 + 8 ((k/2)%2), so r % 8 = lane/4 for every register: the swizzle is a per-thread
    // constant, and the addresses are 32-bit shared-window offsets (64-bit generic pointers for 32 stores cost
    // enough registers to spill).
    const uint32_t base = sg_smem_u32(buf) + (16 * warp + (lane >> 2)) * 128 + 4 * (lane & 3);
    const uint32_t r8 = (uint32_t)lane >> 2;
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const float a = GELU ? sg_mega_gelu(acc[k]) : acc[k], b = GELU ? sg_mega_gelu(acc[k + 1]) : acc[k + 1];
        const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
        const uint32_t off = (k / 32) * 8192 + 8 * ((k / 2) % 2) * 128 + ((((uint32_t)(k / 4) % 8) ^ r8) << 4);
        asm volatile("st.shared.b32 [%0], %1;" ::"r"(base + off), "r"(*reinterpret_cast<const uint32_t *>(&v))
                     : "memory");
    }
}

// Writes 64 rows x 128 fp32 columns (R = 64 registers from acc[C0]; 64 columns when R = 32, 32 when R = 16) into
// `buf` as four (two, one) TMA boxes of 32 columns x 64 rows, 128-byte swizzle, for the storer. C0 = 64: the second
// 128 columns of a 64 x 256 accumulator.
template <int R, int C0, int N>
__device__ __forceinline__ void sg_mega_stage_f32(const float (&acc)[N], uint8_t *buf) {
    static_assert(C0 + R <= N, "the piece's registers are in the accumulator");
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // 16-byte chunk of register pair k: 2 ((k/4) % 4) + (lane % 4)/2 (even + bit), so chunk ^ (row % 8) =
    // 2 ((k/4) % 4) ^ x with the per-thread x = ((lane % 4)/2) ^ (lane/4).
    const uint32_t base = sg_smem_u32(buf) + (16 * warp + (lane >> 2)) * 128 + 8 * (lane & 1);
    const uint32_t x = (((uint32_t)lane & 3) >> 1) ^ ((uint32_t)lane >> 2);
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const uint32_t off = (k / 16) * 8192 + 8 * ((k / 2) % 2) * 128 + (((2 * ((uint32_t)(k / 4) % 4)) ^ x) << 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(base + off), "f"(acc[C0 + k]), "f"(acc[C0 + k + 1])
                     : "memory");
    }
}

// Two adjacent columns of H as E4M3 codes: GELU, then the row's 1 / hs (x in the low byte).
__device__ __forceinline__ uint16_t sg_sm90_h8x2(float a, float b, float inv) {
    return sg_fp8x2(sg_mega_gelu(a) * inv, sg_mega_gelu(b) * inv);
}

// FP8ROW FC1's output on a layer whose FC2 runs in FP8 (sg_mega_h8): a warpgroup's 64 rows x 2 R columns of H (the
// accumulator after the dequantisation, before GELU) as E4M3 codes of GELU(acc) / hs[row], into the staging buffer
// (R = 128: a wide task's 64 x 256 part) as two TMA boxes of 64 16-bit elements (128 E4M3) x 64 rows, 8 KB apart, with
// 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)); a register pair is two adjacent columns, one 16-bit store.
// rsa: the 32-bit shared address of the warpgroup's 64 output row scales.
template <int R>
__device__ __forceinline__ void sg_sm90_stage_h8(const float (&acc)[R], uint8_t *buf, uint32_t rsa) {
    static_assert(R == 128, "a wide part: 256 E4M3 columns, two boxes");
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    float h0, h1;
    sg_sm90_row_scales(rsa, h0, h1);
    const float i0 = __frcp_rn(h0), i1 = __frcp_rn(h1);
    // register k: row 16 warp + lane/4 + 8 ((k/2)%2) (so row % 8 = lane/4), byte column c = 8 (k/4) + 2 (lane % 4):
    // box c / 128 = k / 64, chunk (c % 128) / 16 = (k/8) % 8, byte (c % 16) = 8 ((k/4) % 2) + 2 (lane % 4)
    const uint32_t base = sg_smem_u32(buf) + (16 * warp + (lane >> 2)) * 128 + 2 * (lane & 3);
    const uint32_t r8 = (uint32_t)lane >> 2;
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const float inv = (k / 2) % 2 ? i1 : i0;
        const uint16_t v = sg_sm90_h8x2(acc[k], acc[k + 1], inv);
        const uint32_t off = (k / 64) * 8192 + 8 * ((k / 2) % 2) * 128 + ((((uint32_t)(k / 8) % 8) ^ r8) << 4) +
                             8 * ((k / 4) % 2);
        asm volatile("st.shared.b16 [%0], %1;" ::"r"(base + off), "h"(v) : "memory");
    }
}

// The same for the small batches' parts (R = 32: a narrow64 task's 64 x 64, the only small FP8 FC1 shape), into
// h8 [rows, 3072] at (row0, col0) (rows >= M are padding: not written) by the warpgroup's threads through its
// staging buffer `buf` (free: the caller waited with sg_mega_out_begin; 4 KB used), so that each row's 64 bytes
// leave as four coalesced 16-byte stores instead of sixteen 2-byte ones a thread (session 14: FC1's epilogue at
// batch 1 took 2.0 us this way against bf16's 0.7). Row r's 16-byte chunk c sits at chunk c ^ ((r / 2) % 4):
// the eight rows of a warp's shared store then hit eight different bank groups. The caller signals with
// sg_mega_out_signal.
template <int R>
__device__ __forceinline__ void sg_sm90_store_h8(const float (&acc)[R], uint8_t *buf, uint8_t *h8, uint32_t rsa,
                                                 int row0, int col0, int M, int bar) {
    static_assert(R == 32, "a narrow64 part: 64 rows x 64 E4M3 columns");
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    float h0, h1;
    sg_sm90_row_scales(rsa, h0, h1);
    const float i0 = __frcp_rn(h0), i1 = __frcp_rn(h1);
    // register k: row 16 warp + lane/4 + 8 ((k/2)%2), byte column 8 (k/4) + 2 (lane%4) (+1): chunk k/8, byte
    // 8 ((k/4)%2) + 2 (lane%4) within it; rows r and r + 8 have the same (r/2) % 4.
    const int r = 16 * warp + lane / 4;
    const uint32_t x = ((uint32_t)r >> 1) & 3u;
    const uint32_t base = sg_smem_u32(buf) + r * 64 + 2 * (lane & 3);
#pragma unroll
    for (int k = 0; k < R; k += 2) {
        const uint16_t v = sg_sm90_h8x2(acc[k], acc[k + 1], (k / 2) % 2 ? i1 : i0);
        const uint32_t off = 8 * ((k / 2) % 2) * 64 + ((((uint32_t)k / 8) ^ x) << 4) + 8 * ((k / 4) % 2);
        asm volatile("st.shared.b16 [%0], %1;" ::"r"(base + off), "h"(v) : "memory");
    }
    sg_named_bar(bar, 128);
#pragma unroll
    for (int i = 0; i < 2; i++) {  // 256 chunks: thread t the chunks t and t + 128, four threads a row
        const int idx = t + 128 * i, row = idx / 4, c = idx % 4;
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(sg_smem_u32(buf) + row * 64 + ((c ^ ((row >> 1) & 3)) << 4)));
        if (row0 + row < M)
            *reinterpret_cast<uint4 *>(h8 + (size_t)(row0 + row) * SG_MEGA_F + col0 + 16 * c) = v;
    }
}

// A warpgroup's fp32 64 x 2 R part through the storer as two pieces of 64 rows x R columns, the second handed over
// once the first is read out: a wide task's 64 x 256 part (R = 128: two of 128 columns, the 32 KB buffer holds one).
template <int R>
__device__ __forceinline__ void sg_mega_stage_f32_halves(const float (&acc)[R], const sg_mega_out &out,
                                                         uint32_t &ophase) {
    sg_mega_out_begin(out, ophase);
    sg_mega_stage_f32<R / 2, 0>(acc, out.buf);
    sg_mega_out_end(out, ophase, 0, 0, false);
    sg_mega_out_begin(out, ophase);
    sg_mega_stage_f32<R / 2, R / 2>(acc, out.buf);
    sg_mega_out_end(out, ophase, R, 0, true);
}

// A small batch's part's place (x: first column, y: first row), which thread 0 of warpgroup w wrote into out.part
// before the K loop: read by every thread between two of the warpgroup's barriers (after the write, and before
// thread 0 writes the next task's), so nothing about it stays live in registers beside the accumulators.
__device__ __forceinline__ void sg_sm90_part_place(const sg_mega_out &out, int w, int &x, int &y) {
    sg_named_bar(SG_MEGA_BAR_WG + w, 128);
    x = out.part->x;
    y = out.part->y;
    sg_named_bar(SG_MEGA_BAR_WG + w, 128);
}

// Adds a warpgroup's 64 rows x 2 R fp32 columns straight from the accumulators into the residual stream h [rows,
// 768] at (row0, col0) with red.global.add.v2.f32 (in L2; one adder per element per stage, so the sums are
// deterministic, and equal to the TMA reduce-add's bit for bit, measured: v31). For the small batches' tasks (64 x
// 128, 64 x 64, 64 x 32 parts) 2 % faster at batch 1 than staging for the storer; for the wide tasks' 64 x 256
// parts slower (6.0 against 3.6 us per FC2 tile at 1,024 images: 64 reductions per thread through the SM's
// memory pipe), so those keep the staging (sg_mega_stage_f32).
// Register k: row row0 + 16 warp + lane/4 + 8 ((k/2)%2), columns col0 + 8 (k/4) + 2 (lane%4) + {0, 1}, so a
// warp's instruction covers 8 rows x 32 contiguous bytes (whole sectors). Rows >= rows are past the batch.
template <int R>
__device__ __forceinline__ void sg_mega_add_f32(const float (&acc)[R], float *h, int row0, int col0, int rows) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32, r = row0 + 16 * warp + lane / 4;
    float *p0 = h + (size_t)r * SG_MEGA_D + col0 + 2 * (lane & 3), *p1 = p0 + 8 * SG_MEGA_D;
    const bool ok0 = r < rows, ok1 = r + 8 < rows;
#pragma unroll
    for (int k = 0; k < R; k += 4) {
        if (ok0) sg_red_add_v2(p0 + 8 * (k / 4), acc[k], acc[k + 1]);
        if (ok1) sg_red_add_v2(p1 + 8 * (k / 4), acc[k + 2], acc[k + 3]);
    }
}

// The Hopper layer of kernel/mega/mega_kernel.cuh; F8: FC1, and FC2 on the layers of p.fc2_f8, in FP8 with row scales
// (--precision fp8).
template <bool F8>
struct sg_sm90_arch {
    struct ctx {};
    static constexpr bool fc1_fp8row = F8;
    static constexpr bool wide_rows = true;  // a wide task's warpgroup w: rows 64 w.., all 256 columns (m64n256k16)
    static constexpr int ln_unroll = 4;  // 4 rows' loads in flight per warp (measured: LayerNorm is HBM-bound)
    static __device__ __forceinline__ void cta_begin() {}
    static __device__ __forceinline__ ctx ctx_for(int) { return ctx(); }
    static __device__ __forceinline__ void cta_end() {}

    // The 64-row map of a weight read in FP8 (E4M3 as 16-bit elements, K / 2 a row), for the skeleton's weight
    // prefetch (sg_mega_prefetch_next_w); bf16 weights keep the skeleton's map.
    static __device__ __forceinline__ void weight_map64(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *&map, int &cols) {
        if (!sg_mega_fp8row<sg_sm90_arch>(p, k)) return;
        map = p.maps + (k.kind == SG_MT_FC1 ? SG_MAP_R64(p.L, SG_MAP_W1Q(p.L, k.layer)) : SG_MAP_W2Q64(p.L, k.layer));
        cols /= 2;
    }
    // FP8ROW FC1 and FC2 (sm90_fp8row.cuh): the E4M3 input and weight through their 16-bit maps (mega_gpu.h), so
    // the same loads bring 128 E4M3 per K block (K = 384 or 1,536 such elements) into the stage's usual places.
    static __device__ __forceinline__ void produce_gemm(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *map_a, const CUtensorMap *map_w, int m0,
                                                        int n0, int K, const sg_ring_smem &sm, sg_ring &ring) {
        const int shape = sg_mega_shape(k.kind, p.narrow);
        if (sg_mega_fp8row<sg_sm90_arch>(p, k)) {
            if (k.kind == SG_MT_FC1) {
                map_a = p.maps + SG_MAP_Y8(p.L);
                map_w = p.maps + (shape >= 2 ? SG_MAP_R64(p.L, SG_MAP_W1Q(p.L, k.layer)) : SG_MAP_W1Q(p.L, k.layer));
            } else {  // FC2; a 64 x 64 task's A rows from the 64-row map
                map_a = p.maps + (shape == 3 ? SG_MAP_H8_64(p.L) : SG_MAP_H8(p.L));
                map_w = p.maps + (shape >= 2 ? SG_MAP_W2Q64(p.L, k.layer) : SG_MAP_W2Q(p.L, k.layer));
            }
            K /= 2;
        }
        sg_gemm_produce_wide(map_a, map_w, m0, n0, K, sm, ring, shape, sg_mega_ring_stages(p.narrow));
    }
    // FP8ROW FC1: LayerNorm-2 writes FC1's input as E4M3 codes + one fp32 scale per row (sm90_fp8row.cuh). Three
    // rows in flight per warp, not ln_unroll's four: with four, ptxas spilled the consumers' loop state (12-16 bytes,
    // also with the row's values recomputed for the codes instead of kept); with three, nothing.
    // On a layer whose FC2 runs in FP8 (p.fc2_f8) it also writes the scales of FC1's E4M3 output. (At small launches
    // the bf16 LayerNorms load gamma and beta with the row, sg_ln_row_early; that form here, or U = 1, spilled the
    // FP8 kernel's profiling instantiation by 4-16 bytes: session 19.)
    static __device__ __forceinline__ bool ln2_quant(const sg_mega_params &p, int layer, const float *g,
                                                     const float *b, int r0, int nr, int M, int warp, int nwarps) {
        if (!F8) return false;
        const bool h8 = (p.fc2_f8 >> layer) & 1u;
        const float2 hk = h8 ? __ldg(p.h8k + layer) : make_float2(0.0f, 0.0f);
        sg_ln_rows_to<3>(p.h, SG_MEGA_D, p.eps, r0, nr, M, warp, nwarps,
                         sg_sm90_ln_out_fp8{g, b, p.y8, reinterpret_cast<float *>(p.y8sf), h8 ? p.h8sf : nullptr,
                                            hk.x, hk.y});
        return true;
    }

    // Warpgroup w's part: the accumulators start at the bias (its shared-memory slot, or zero), the K loop walks the
    // shared ring (each stage freed by one arrival per warpgroup once the next block's MMAs are issued), then the
    // part is staged for the storer. Wide task (128 x 256): 64 x 256, rows 64 w.. (one m64n256 accumulator, A's
    // rows 64 w.., all 256 W rows: 10 KB of shared memory read per k16 step for 262,144 MACs, where two m64n128k16
    // over the column halves read 12 KB; the lab's K loops ran at 804 against 660 TFLOP/s, perf-notes session 9);
    // narrow (128 x 128): 64 x 128, rows 64 w.. (A's rows 64 w.., the stage's only W rows, m64n128k16).
    template <bool PROF>
    static __device__ __forceinline__ void gemm(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                const float *bias, ctx &c, const sg_ring_smem &sm, sg_ring &ring,
                                                const sg_mega_out &out, uint32_t &ophase) {
        const int shape = sg_mega_shape(k.kind, p.narrow);
        // The FP8 kernel has no narrow (128 x 128) launches (mega_gpu.cu): their FP8 FC1 and FC2 copies besides the
        // others' spilled its consumers' state (ptxas, 168 registers); a trap, should the host ever send one.
        if constexpr (F8) {
            if (shape == 1) __trap();
            if (sg_mega_fp8row<sg_sm90_arch>(p, k)) {
                if (k.kind == SG_MT_FC1) {  // FC1 is never a 64 x 64 task (shape 3)
                    switch (shape) {
                    case 2: return gemm_half<PROF, 2, 1>(p, k, w, bias, c, sm, ring, out, ophase);
                    default: return gemm_half<PROF, 0, 1>(p, k, w, bias, c, sm, ring, out, ophase);
                    }
                }
                switch (shape) {  // FC2
                case 3: return gemm_half<PROF, 3, 2>(p, k, w, bias, c, sm, ring, out, ophase);
                case 2: return gemm_half<PROF, 2, 2>(p, k, w, bias, c, sm, ring, out, ophase);
                default: return gemm_half<PROF, 0, 2>(p, k, w, bias, c, sm, ring, out, ophase);
                }
            }
        }
        switch (shape) {
        case 3: return gemm_half<PROF, 3, 0>(p, k, w, bias, c, sm, ring, out, ophase);
        case 2: return gemm_half<PROF, 2, 0>(p, k, w, bias, c, sm, ring, out, ophase);
        case 1:
            if constexpr (!F8) return gemm_half<PROF, 1, 0>(p, k, w, bias, c, sm, ring, out, ophase);
            [[fallthrough]];
        default: return gemm_half<PROF, 0, 0>(p, k, w, bias, c, sm, ring, out, ophase);
        }
    }

    // S: the task's shape (mega_plan.h's sg_mega_shape): 0 wide, 1 narrow, 2 narrow64 (64 columns: m64n64k16, 32
    // registers; a ring stage holds two K blocks, sg_gemm_produce_wide), 3 a 64 x 64 task (this warpgroup's 32
    // columns of all 64 rows: m64n32k16, 16 registers; three K blocks a stage). F: 0 bf16; an FP8ROW task
    // (sm90_fp8row.cuh): 1 FC1, 2 FC2 (a separate copy each: with the output's kind known at compile time, the
    // other kind's epilogue is not in it; one copy for both spilled): K blocks of 128 E4M3 in the same places, four
    // m64nNk32 a block, accumulators from zero, and the scales and bias applied after the K loop.
    template <bool PROF, int S, int F>
    static __device__ __forceinline__ void gemm_half(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                     const float *bias, ctx &, const sg_ring_smem &sm, sg_ring &ring,
                                                     const sg_mega_out &out, uint32_t &ophase) {
        constexpr bool FP8 = F != 0;
        const int tid = threadIdx.x % 128;
        constexpr int R = S == 3 ? 16 : S == 2 ? 32 : S == 1 ? 64 : 128;  // accumulator registers: 2 R columns
        float acc[R];
        {
            const bool hb = bias != nullptr && !FP8;
            sg_mega_acc_init(acc, hb ? sg_smem_u32(bias) : 0u, hb);
        }
        if (PROF) sg_mega_prof_mark(1);
        constexpr int BLOCKS = S == 3 ? SG_GEMM_H64_BLOCKS : S == 2 ? 2 : 1;  // K blocks a stage
        constexpr int NS = S >= 2 ? SG_MEGA_STAGES_SMALL : SG_MEGA_STAGES;  // the launch's ring (sg_mega_ring_stages)
        // Stages of the task, counted down; the stage before ring.stage is the one to free (registers are tight
        // beside a 64 x 256 accumulator: a loop index, its bound and a `prev` stage spilled the loop's state).
        const int n = sg_mega_gemm_k(k.kind) / (FP8 ? 2 : 1) / (BLOCKS * SG_GEMM_BK);
        for (int left = n; left > 0; left--) {
            sg_mbar_wait(&sm.full[ring.stage], ring.phase);
            // Small tasks (v55): the stage index broadcast from lane 0, so the descriptors below are computed in
            // uniform registers and the m64n32 / m64n64 steps issue back to back; computed per thread, each step
            // waited on four R2UR and 64-bit adds (FC2's K loop at batch 1 ~1.6x its MMA floor, perf-notes session
            // 16). Wide tasks keep ring.stage: their steps are long enough to hide it, and the FP8 kernel spilled.
            const uint32_t st = S >= 2 ? __shfl_sync(0xffffffffu, ring.stage, 0) : ring.stage;
            const uint8_t *a = sm.stages + st * SG_MEGA_STAGE_BYTES;
            // this warpgroup's 64 A rows (a 64 x 64 task: all 64 of them) and the stage's W rows from the start
            const uint64_t da = sg_smem_desc(a + (S == 3 ? 0 : w * 64 * 128), 16, 1024);
            const uint64_t db = sg_smem_desc(a + SG_MEGA_A_BYTES, 16, 1024);
            sg_wgmma_fence_regs(acc);
            sg_wgmma_fence();
            if constexpr (S == 3) {  // three K blocks of A 64 rows and W 64 rows; this warpgroup's W rows 32 w..
#pragma unroll
                for (int j = 0; j < SG_GEMM_H64_BLOCKS; j++) {
                    const uint8_t *blk = a + j * SG_GEMM_H64_BLOCK;
                    const uint64_t dj = sg_smem_desc(blk, 16, 1024);
                    const uint64_t dw = sg_smem_desc(blk + SG_GEMM_B_BYTES(64) + w * 32 * 128, 16, 1024);
#pragma unroll
                    for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {
                        if constexpr (FP8) sg_wgmma_fp8_n32(acc, dj + 2 * kk, dw + 2 * kk, 1);
                        else sg_wgmma_ss_n32(acc, dj + 2 * kk, dw + 2 * kk, 1);
                    }
                }
            } else if constexpr (S == 2) {  // the stage's two K blocks in order: the k16 chain of one block a stage
                const uint64_t da2 = sg_smem_desc(a + SG_GEMM_N64_PAIR + w * 64 * 128, 16, 1024);
                const uint64_t db2 = sg_smem_desc(a + SG_GEMM_N64_PAIR + SG_MEGA_A_BYTES, 16, 1024);
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {  // 32 bytes of K a step: 16 bf16 or 32 E4M3
                    if constexpr (FP8) sg_wgmma_fp8_n64(acc, da + 2 * kk, db + 2 * kk, 1);
                    else sg_wgmma_ss_n64(acc, da + 2 * kk, db + 2 * kk, 1);
                }
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {
                    if constexpr (FP8) sg_wgmma_fp8_n64(acc, da2 + 2 * kk, db2 + 2 * kk, 1);
                    else sg_wgmma_ss_n64(acc, da2 + 2 * kk, db2 + 2 * kk, 1);
                }
            } else if constexpr (S == 1) {
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {
                    if constexpr (FP8) sg_wgmma_fp8_n128(acc, da + 2 * kk, db + 2 * kk, 1);
                    else sg_wgmma_ss_n128(acc, da + 2 * kk, db + 2 * kk, 1);
                }
            } else {  // all 256 W rows: one m64n256k16 a k16 step (+32 bytes per step = +2 in the address field)
#pragma unroll
                for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {
                    if constexpr (FP8) sg_wgmma_fp8_n256(acc, da + 2 * kk, db + 2 * kk, 1);
                    else sg_wgmma_ss_n256(acc, da + 2 * kk, db + 2 * kk, 1);
                }
            }
            sg_wgmma_commit();
            sg_wgmma_fence_regs(acc);
            sg_wgmma_wait<1>();  // the previous block's MMAs are complete: its stage is free (for this warpgroup)
            if (left < n && tid == 0) sg_mbar_arrive(&sm.empty[sg_ring_prev(ring, NS)]);
            sg_ring_next(ring, NS);
        }
        sg_wgmma_wait<0>();
        sg_wgmma_fence_regs(acc);
        if (tid == 0) sg_mbar_arrive(&sm.empty[sg_ring_prev(ring, NS)]);
        if (PROF) sg_mega_prof_mark(2);  // the skeleton records the start, K loop and staging
        if constexpr (FP8) {
            epilogue_fp8<S, F>(p, k, w, bias, acc, out, ophase);
            return;
        }
        if (!sg_mega_f32_tile(k.kind)) {  // one piece: the bf16 64 rows (a 64 x 64 task is always fp32)
            if constexpr (S != 3) {
                sg_mega_out_begin(out, ophase);
                if (sg_mega_gelu_tile(k.kind)) sg_mega_stage_bf16<1>(acc, out.buf);
                else sg_mega_stage_bf16<0>(acc, out.buf);
                sg_mega_out_end(out, ophase, 0, 0, true);
            }
        } else if constexpr (S == 0) {  // fp32, wide: two pieces of 64 rows x 128 columns through the storer
            sg_mega_stage_f32_halves(acc, out, ophase);
        } else {  // fp32, small batches: added into h from the registers, at the part's place
            int x, y;
            sg_sm90_part_place(out, w, x, y);
            sg_mega_add_f32(acc, p.h, y, x, p.n * SG_MEGA_T);
            sg_mega_out_signal(out, ophase);
        }
    }

    // The epilogue of an FP8ROW task's part (F = 1 FC1, 2 FC2): acc = acc sa sw + bias from its slot (bias and column
    // scales interleaved at `bias`, this part's columns: 2 cw floats into the slot, cw = 32 w in a 64 x 64 task, else
    // 0; the row scales at SG_MEGA_SLOT_RS, for rows 64 w.. of the row tile, or a 64 x 64 task's 64 rows: 64 (k.b %
    // 2).., read back from the part's first row), then FC1's GELU and bf16 piece, or its E4M3 H (sg_mega_h8, the
    // output's row scales at SG_MEGA_SLOT_HS), or FC2's fp32 residual add: two staged pieces (wide) or vector
    // reductions from the registers (small batches), as the bf16 tiles'.
    template <int S, int F, int R>
    static __device__ __forceinline__ void epilogue_fp8(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                        const float *bias, float (&acc)[R], const sg_mega_out &out,
                                                        uint32_t &ophase) {
        const uint32_t bsa = sg_smem_u32(bias), slot = bsa - (S == 3 ? 8u * 32u * w : 0u);
        if constexpr (S != 3) sg_sm90_fp8row_dequant(acc, bsa, slot + 4u * (SG_MEGA_SLOT_RS + 64 * w));
        if constexpr (F == 1) {
            static_assert(S == 0 || S == 2, "FP8 FC1 runs as wide or narrow64 tasks");
            if (sg_mega_h8<sg_sm90_arch>(p, k)) {  // E4M3 H (its layer's FC2 runs in FP8): GELU, / hs, E4M3
                const uint32_t hsa = slot + 4u * (SG_MEGA_SLOT_HS + 64 * w);
                if constexpr (S == 0) {
                    sg_mega_out_begin(out, ophase);
                    sg_sm90_stage_h8(acc, out.buf, hsa);
                    sg_mega_out_end(out, ophase, 0, 0, true);
                } else {  // small batches: rows through the staging buffer (no 64-byte-row box for narrow64)
                    sg_mega_out_begin(out, ophase);
                    sg_named_bar(SG_MEGA_BAR_WG + w, 128);  // thread 0's part, visible (read by all before the
                    const int x = out.part->x, y = out.part->y;  // store's own barrier: thread 0 writes the next)
                    sg_sm90_store_h8(acc, out.buf, p.h8, hsa, y, 2 * x, p.n * SG_MEGA_T,  // x: 16-bit units
                                     SG_MEGA_BAR_WG + w);
                    sg_mega_out_signal(out, ophase);
                }
                return;
            }
            sg_mega_out_begin(out, ophase);
            sg_mega_stage_bf16<1>(acc, out.buf);
            sg_mega_out_end(out, ophase, 0, 0, true);
        } else if constexpr (S == 0) {
            sg_mega_stage_f32_halves(acc, out, ophase);
        } else {
            int x, y;
            sg_sm90_part_place(out, w, x, y);
            if constexpr (S == 3) sg_sm90_fp8row_dequant(acc, bsa, slot + 4u * (SG_MEGA_SLOT_RS + (y & 127)));
            sg_mega_add_f32(acc, p.h, y, x, p.n * SG_MEGA_T);
            sg_mega_out_signal(out, ophase);
        }
    }

    // Query blocks w and w + 2 of the four 64-query blocks (a split task of `parts`, part >= 0: its 4 / parts
    // blocks from 4 part / parts, one per warpgroup, its Q the 128-row box of the block pair); the last block gives
    // the Q and K stages back as soon as its S = Q K^T is complete and V's after P V, so the producer's next loads
    // overlap its softmax and P V; a warpgroup with no block (a quarter task's warpgroup 1) gives them back at once.
    // One loop for all kinds of task: a second inlined copy of the block cost the register that spilled the kernel.
    static __device__ __forceinline__ void attention(const uint8_t *q, const uint8_t *k, const uint8_t *v,
                                                     uint64_t *empty, int sqkv, int img, int head, int part,
                                                     int parts, __nv_bfloat16 *out, int ldo, int w) {
        const int per = 4 >> (parts / 2);  // blocks per task: as sg_mega_att_first_block (mega_plan.h)
        const int first = part >= 0 ? part * per : 0, end = part >= 0 ? first + per : 4;
        const int base = part >= 0 ? first & ~1 : 0;
        for (int rb = first + w; rb < end; rb += SG_MEGA_WGS)
            sg_sm90_attn_block(rb, q + (rb - base) * 64 * 128, k, v, img, head, out, ldo,
                               rb + SG_MEGA_WGS >= end ? empty : nullptr, sqkv);
        if (first + w >= end && threadIdx.x % 128 == 0)
            for (int j = 0; j < 3; j++) sg_mbar_arrive(empty + sg_mega_qkv_stage(sqkv, j));
    }
};

// PROF = 1 (SG_SM90_PROFILE=1) adds the cycle counters; F8: FC1 and FC2 in FP8 (--precision fp8), a kernel of its own.
template <bool PROF, bool F8>
__global__ void __launch_bounds__(SG_MEGA_THREADS) sg_sm90_mega_kernel(const __grid_constant__ sg_mega_params p) {
    sg_mega_kernel_body<sg_sm90_arch<F8>, PROF>(p);
}

typedef sg_mega_launch_fns<sg_sm90_mega_kernel<false, false>, sg_sm90_mega_kernel<true, false>, SG_MEGA_SMEM> sm90_fns;
typedef sg_mega_launch_fns<sg_sm90_mega_kernel<false, true>, sg_sm90_mega_kernel<true, true>, SG_MEGA_SMEM> sm90_f8_fns;

// FC1 in bf16 (the default) or in FP8 with row scales (--precision fp8: sm90_fp8row.cuh).
const sg_mega_launcher sg_sm90_mega_launcher = {"sm90", sm90_fns::prepare, sm90_fns::launch, nullptr, 3, SG_FC1_BF16};
const sg_mega_launcher sg_sm90_mega_launcher_fp8 = {"sm90", sm90_f8_fns::prepare, sm90_f8_fns::launch,
                                                    sg_sm90_quant_weight_rows, 3, SG_FC1_FP8ROW};
