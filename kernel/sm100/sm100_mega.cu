// kernel/sm100/sm100_mega.cu — the Blackwell megakernel: the shared skeleton (kernel/mega/mega_kernel.cuh: task
// table, ticket, counters, producer, storer, LayerNorm, patch and MAP-head tasks; host side kernel/mega/mega_gpu.cu) with a
// tcgen05 MMA / accumulator layer (sg_sm100_arch). Only this file differs from the Hopper kernel (kernel/sm90/sm90_mega.cu).
//
// NOT RUN ON HARDWARE: no B200 has been available. Checked offline only (ptxas for sm_100a; SASS opcodes by
// scripts/sm100-sass-check.sh). The runtime self-check (kernel/selfcheck.c) compares it with the portable path on
// a B200 before `auto` trusts it.
//
// Tensor memory: 512 columns per CTA (one CTA per SM: ~214 KB of shared memory), allocated by warp 0 at the start
// and freed at the end: the GEMM task's 128 x 256 fp32 accumulator at columns 0..255 (warpgroup w's half at 128 w),
// MXFP8 scales after.
// GEMM task (both consumer warpgroups, the skeleton's 128 x 256 tile):
//   thread 0 (warpgroup 0) issues per K block (after the block's `full` barrier): for each half, 4 x tcgen05.mma
//   kind::f16 M128 N128 K16 (bf16 -> fp32; the first with enable_input_d = 0; A from the start of the stage, the
//   half's W rows after it), then two tcgen05.commit to the stage's `empty` barrier (it counts one arrival per
//   warpgroup), which frees the stage once the MMAs have read it; after the last block, a commit to `acc_full`;
//   every thread walks the ring the same number of blocks without waiting, waits on acc_full, then reads its
//   accumulator row of its warpgroup's half (thread i of warp w: row 32 (w % 4) + i = TMEM lane) 32 columns at
//   a time (tcgen05.ld.32x32b.x32), adds the bias (from the shared-memory slot the skeleton's producer filled),
//   applies tanh GELU for FC1, and stages the row in the warpgroup's buffer in the storer's
//   swizzled TMA box layout (bf16: one piece; fp32: rows 0-63, then 64-127); a barrier of both warpgroups
//   (after tcgen05.fence::before_thread_sync) orders every TMEM read before the next task's MMAs.
// FC1 in block-scaled MXFP8 (unless --precision bf16): LayerNorm-2 tasks write its input as E4M3 + UE8M0 scales
// (128x4 layout, sm100_quant.cuh); the producer loads K blocks of 128 E4M3 (A 128 rows and W 256 rows: the same
// 48 KB stage) plus three 512-byte scale atoms (A, and W's two halves) into the stage's scale slot; thread 0
// copies them to TMEM (tcgen05.cp) and issues per half 4 kind::mxf8f6f4.block_scale MMAs (K = 32) per block.
// Attention: wgmma does not exist on sm_100, so one (image, head) is computed with mma.sync (HMMA) by the 8
// consumer warps from the same three ring stages (sm100_attn.cuh; attention is ~4 % of the FLOPs).
// Registers: 384 threads (320 without side warps) allow 168 per thread (3 warps on one SM sub-partition); LayerNorm
// keeps 2 rows in flight per warp (Hopper: 4), which leaves the consumer loop's state room: 168 registers, no spills.
#include <cuda_runtime.h>
#include "../mega/mega_kernel.cuh"
#include "sm100_attn.cuh"
#include "sm100_desc.h"
#include "sm100_mega.h"
#include "sm100_quant.h"
#include "sm100_ptx.cuh"
#include "sm100_quant.cuh"

static_assert(SG_MEGA_ATT_BOX_BYTES == SG_ATTN_ROWS * SG_ATTN_DH * 2 && SG_MEGA_ATT_BOX_ROWS == SG_ATTN_ROWS &&
                  SG_MEGA_DH == SG_ATTN_DH,
              "an attention box (sm100_attn.cuh) is the start of one ring stage");

// TMEM columns: [0, 256) the task's accumulator (half w at 128 w); [256, 292) MXFP8 scale factors, 12 per ring
// stage (SFA 4, SFB of each half 4) at 256 + 12 stage, so a scale copy never overwrites scales an earlier stage's
// MMAs may still read; 512 allocated (a power of two).
#define SG_SM100_MEGA_TMEM_COLS 512
#define SG_SM100_MEGA_SF_COL0 256
#define SG_SM100_MEGA_SF_COLS 12
#define SG_SM100_MEGA_SF_BYTES 1536  // per ring stage: the 128x4 atoms of A and of W's two halves (512 bytes each)
// Dynamic shared memory: the skeleton's ring and staging buffers, then the stages' scale-atom slots.
#define SG_SM100_MEGA_SMEM (SG_MEGA_SMEM + SG_MEGA_STAGES * SG_SM100_MEGA_SF_BYTES)

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
// Per-CTA shared state of this layer (function-scope __shared__: one instance per CTA).
__device__ __forceinline__ uint32_t *sg_sm100_mega_tmem_slot() {
    __shared__ uint32_t slot;
    return &slot;
}
__device__ __forceinline__ uint64_t *sg_sm100_mega_acc_full() {
    __shared__ uint64_t bar;
    return &bar;
}
// The scale-atom slot of ring stage s (after the ring and the staging buffers in the dynamic shared memory).
__device__ __forceinline__ uint8_t *sg_sm100_mega_sf_slot(int s) {
    extern __shared__ uint8_t smem_raw[];
    return sg_mega_align1024(smem_raw) + SG_MEGA_SMEM - 1024 + s * SG_SM100_MEGA_SF_BYTES;
}

// One 32-column chunk j (columns 32 j..+31) of row r as bf16 into the staging buffer: two TMA boxes of 64
// columns x 128 rows, 128-byte swizzle (sg_sw128_offset: 16-byte chunk c of row r at c ^ (r % 8)).
__device__ __forceinline__ void sg_sm100_stage_bf16(const float (&x)[32], uint32_t stage, int r, int j) {
    const uint32_t box = stage + (j / 2) * 16384;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const __nv_bfloat162 v = __floats2bfloat162_rn(x[8 * q + 2 * i], x[8 * q + 2 * i + 1]);
            w[i] = *reinterpret_cast<const uint32_t *>(&v);
        }
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(box + sg_sw128_offset(r, (j % 2) * 4 + q)),
                     "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
    }
}

// One 32-column chunk j of row r as fp32 into the staging buffer (a piece: rows 64 h..+63 of the half): TMA box j
// of 32 columns x 64 rows, 128-byte swizzle.
__device__ __forceinline__ void sg_sm100_stage_f32(const float (&x)[32], uint32_t stage, int r, int j) {
    const uint32_t box = stage + j * 8192;
#pragma unroll
    for (int q = 0; q < 8; q++)
        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(box + sg_sw128_offset(r % 64, q)),
                     "f"(x[4 * q]), "f"(x[4 * q + 1]), "f"(x[4 * q + 2]), "f"(x[4 * q + 3]) : "memory");
}

// The Blackwell layer of kernel/mega/mega_kernel.cuh.
struct sg_sm100_arch {
    // 2 rows in flight per LayerNorm warp, not Hopper's 4: with 4, the consumer loop's state no longer fits in the
    // 168 registers and ptxas spills it (8-60 bytes); with 2, none. (Loads in flight halve; not measured.)
    static constexpr int ln_unroll = 2;
    static constexpr bool wide_rows = false;  // a wide task's warpgroup w: columns 128 w.. (its TMEM half), all rows
    static constexpr bool fc1_fp8row = false;  // FP8 FC1 here is MXFP8 (p.fc1 = SG_FC1_MXFP8), chosen at run time
    struct ctx {
        uint32_t phase;  // acc_full's phase for the next GEMM task
    };

    // The skeleton's weight prefetch (sg_mega_prefetch_next_w; this kernel's wide launches run it only with
    // SG_MEGA_W_PREFETCH_MIN=0): bf16 weights through the skeleton's 64-row maps; MXFP8 FC1's W1 has no 64-row map, so
    // none is asked for.
    static __device__ __forceinline__ void weight_map64(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *&, int &cols) {
        if (p.fc1 == SG_FC1_MXFP8 && k.kind == SG_MT_FC1) cols = 0;
    }

    static __device__ __forceinline__ void cta_begin() {
        if (threadIdx.x == 0) {
            sg_mbar_init(sg_sm100_mega_acc_full(), 1);
            sg_fence_mbar_init();
        }
        if (threadIdx.x / 32 == 0) {  // whole warp: alloc is .sync.aligned
            sg_tc_alloc(sg_sm100_mega_tmem_slot(), SG_SM100_MEGA_TMEM_COLS);
            sg_tc_relinquish();
        }
        sg_tc_fence_before();
    }
    static __device__ __forceinline__ ctx ctx_for(int) {
        sg_tc_fence_after();
        return ctx{0u};
    }
    static __device__ __forceinline__ void cta_end() {
        // The thread index read again (volatile), not kept from cta_begin: a predicate held across the whole
        // kernel was the one value ptxas spilled at 168 registers.
        uint32_t tid;
        asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
        if (tid / 32 == 0) {  // the allocating warp frees
            sg_tc_fence_after();
            sg_tc_dealloc(*sg_sm100_mega_tmem_slot(), SG_SM100_MEGA_TMEM_COLS);
        }
    }

    // MXFP8 FC1 (p.fc1 = SG_FC1_MXFP8): per K block of 128 E4M3, the A box (128 rows x 128 bytes) and W's two
    // 128-row boxes (the stage's 48 KB, as the bf16 blocks) and the three scale atoms of this row tile / W halves / K
    // block (cp.async.bulk, same barrier) into the stage's scale slot. Every other GEMM: the shared producer's bf16
    // blocks.
    static __device__ __forceinline__ void produce_gemm(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *map_a, const CUtensorMap *map_w, int m0,
                                                        int n0, int K, const sg_ring_smem &sm, sg_ring &ring) {
        if (!(p.fc1 == SG_FC1_MXFP8 && k.kind == SG_MT_FC1)) {
            sg_gemm_produce_wide(map_a, map_w, m0, n0, K, sm, ring, 0, SG_MEGA_STAGES);  // never narrow
            return;
        }
        const uint32_t nb = SG_MEGA_D / 32;
        const uint8_t *sfw = p.w1sf + (size_t)k.layer * SG_MEGA_W1SF_BYTES;
        for (int kb = 0; kb < SG_MEGA_D / 128; kb++) {
            sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
            uint8_t *st = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES, *sf = sg_sm100_mega_sf_slot(ring.stage);
            uint64_t *bar = &sm.full[ring.stage];
            sg_mbar_arrive_expect_tx(bar, SG_MEGA_STAGE_BYTES + SG_SM100_MEGA_SF_BYTES);
            sg_bulk_load(sf, p.y8sf + sg_sm100_sf_offset((uint32_t)m0, 4u * kb, nb), 512, bar);
            sg_bulk_load(sf + 512, sfw + sg_sm100_sf_offset((uint32_t)n0, 4u * kb, nb), 512, bar);
            sg_bulk_load(sf + 1024, sfw + sg_sm100_sf_offset((uint32_t)n0 + 128u, 4u * kb, nb), 512, bar);
            sg_tma_load_2d(st, p.maps + SG_MAP_Y8(p.L), bar, kb * 128, m0);
            sg_tma_load_2d(st + SG_MEGA_A_BYTES, p.maps + SG_MAP_W1Q(p.L, k.layer), bar, kb * 128, n0);
            sg_tma_load_2d(st + SG_MEGA_A_BYTES + SG_MEGA_WH_BYTES, p.maps + SG_MAP_W1Q(p.L, k.layer), bar, kb * 128,
                           n0 + 128);
            sg_ring_next(ring, SG_MEGA_STAGES);
        }
    }

    // MXFP8 FC1: LayerNorm-2 of rows r0..r0+nr-1 (below M; nr = 32: this kernel has wide launches only) writes
    // FC1's input as E4M3 + scales, a warp per row (warp of nwarps: the consumers' 8 or the side warps' 2).
    static __device__ __forceinline__ bool ln2_quant(const sg_mega_params &p, int, const float *g, const float *b,
                                                     int r0, int nr, int M, int warp, int nwarps) {
        if (p.fc1 != SG_FC1_MXFP8) return false;
        const int r_end = min(r0 + nr, M);
        for (int row = r0 + warp; row < r_end; row += nwarps)
            sg_ln_quant_row(p.h, g, b, row, SG_MEGA_D, p.eps, p.y8, p.y8sf, nullptr);
        return true;
    }

    template <bool PROF>
    static __device__ __forceinline__ void gemm(const sg_mega_params &p, const sg_mega_task &k, int w,
                                                const float *bias, ctx &c, const sg_ring_smem &sm, sg_ring &ring,
                                                const sg_mega_out &out, uint32_t &ophase) {
        const int tid = threadIdx.x % 128, warp = tid / 32, r = tid;  // r: this thread's row = TMEM lane
        // block-scaled MXFP8, K blocks of 128
        const bool mx = p.fc1 == SG_FC1_MXFP8 && k.kind == SG_MT_FC1;
        const int nk = mx ? SG_MEGA_D / 128 : sg_mega_gemm_k(k.kind) / 64;
        const uint32_t tmem0 = *sg_sm100_mega_tmem_slot();
        uint64_t *acc_full = sg_sm100_mega_acc_full();
        if (PROF) sg_mega_prof_mark(1);
        if (threadIdx.x == 0) {  // the MMA issuer: both halves
            sg_ring q = ring;
            for (int kb = 0; kb < nk; kb++) {
                sg_mbar_wait(&sm.full[q.stage], q.phase);
                sg_tc_fence_after();
                const uint32_t a = sg_smem_u32(sm.stages + q.stage * SG_MEGA_STAGE_BYTES);
                const uint64_t da = sg_sm100_smem_desc_kmajor_sw128(a);
                const uint64_t db0 = sg_sm100_smem_desc_kmajor_sw128(a + SG_MEGA_A_BYTES);
                const uint64_t db1 = sg_sm100_smem_desc_kmajor_sw128(a + SG_MEGA_A_BYTES + SG_MEGA_WH_BYTES);
                if (mx) {  // scales to TMEM first: the same thread's tcgen05 operations run in issue order
                    const uint32_t sfa =
                        tmem0 + sg_sm100_tmem_addr(0, SG_SM100_MEGA_SF_COL0 + SG_SM100_MEGA_SF_COLS * q.stage);
                    const uint32_t sf = sg_smem_u32(sg_sm100_mega_sf_slot((int)q.stage));
                    sg_tc_cp_sf(sfa, sg_sm100_smem_desc_sf(sf));
                    sg_tc_cp_sf(sfa + 4u, sg_sm100_smem_desc_sf(sf + 512));
                    sg_tc_cp_sf(sfa + 8u, sg_sm100_smem_desc_sf(sf + 1024));
#pragma unroll
                    for (int s = 0; s < 4; s++) {  // K = 32 E4M3 per MMA: +32 bytes = +2 in the address field
                        const uint32_t idesc = sg_sm100_idesc_mxf8(SG_MEGA_BM, SG_MEGA_BN, s);
                        sg_tc_mma_mxf8(tmem0, da + 2 * s, db0 + 2 * s, idesc, sfa, sfa + 4u, (kb | s) != 0);
                        sg_tc_mma_mxf8(tmem0 + SG_MEGA_BN, da + 2 * s, db1 + 2 * s, idesc, sfa, sfa + 8u, (kb | s) != 0);
                    }
                } else {
                    const uint32_t idesc = sg_sm100_idesc_bf16(SG_MEGA_BM, SG_MEGA_BN);
#pragma unroll
                    for (int s = 0; s < 4; s++) {  // K = 16 bf16 per MMA: +32 bytes = +2 in the address field
                        sg_tc_mma_f16(tmem0, da + 2 * s, db0 + 2 * s, idesc, (kb | s) != 0);
                        sg_tc_mma_f16(tmem0 + SG_MEGA_BN, da + 2 * s, db1 + 2 * s, idesc, (kb | s) != 0);
                    }
                }
                sg_tc_commit(&sm.empty[q.stage]);  // the stage's barrier counts one arrival per warpgroup's half
                sg_tc_commit(&sm.empty[q.stage]);
                sg_ring_next(q, SG_MEGA_STAGES);
            }
            sg_tc_commit(acc_full);
        }
        __syncwarp();
        for (int kb = 0; kb < nk; kb++) sg_ring_next(ring, SG_MEGA_STAGES);  // the same walk, for every thread
        sg_mbar_wait(acc_full, c.phase);
        c.phase ^= 1u;
        sg_tc_fence_after();
        if (PROF) sg_mega_prof_mark(2);  // the skeleton records the start, K loop and staging
        const uint32_t tmem = tmem0 + sg_sm100_tmem_addr(32u * (uint32_t)warp, (uint32_t)(SG_MEGA_BN * w));
        const uint32_t buf = sg_smem_u32(out.buf);
        const bool f32 = sg_mega_f32_tile(k.kind), gelu = sg_mega_gelu_tile(k.kind);
        const int pieces = f32 ? 2 : 1;
        for (int piece = 0; piece < pieces; piece++) {
            sg_mega_out_begin(out, ophase);
            if (!f32 || r / 64 == piece) {  // fp32: rows 0-63 (warps 0, 1), then 64-127 (warps 2, 3)
#pragma unroll 1
                for (int j = 0; j < SG_MEGA_BN / 32; j++) {
                    uint32_t v[32];
                    sg_tc_ld_32x32b_x32(tmem + 32u * (uint32_t)j, v);
                    sg_tc_wait_ld(v);
                    float x[32];
#pragma unroll
                    for (int i = 0; i < 32; i += 4) {  // the bias slot in shared memory: a broadcast read
                        const float4 b = bias ? *reinterpret_cast<const float4 *>(bias + 32 * j + i)
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                        x[i] = __uint_as_float(v[i]) + b.x;
                        x[i + 1] = __uint_as_float(v[i + 1]) + b.y;
                        x[i + 2] = __uint_as_float(v[i + 2]) + b.z;
                        x[i + 3] = __uint_as_float(v[i + 3]) + b.w;
                    }
                    if (gelu) {
#pragma unroll
                        for (int i = 0; i < 32; i++) x[i] = sg_mega_gelu(x[i]);
                    }
                    if (f32)
                        sg_sm100_stage_f32(x, buf, r, j);
                    else
                        sg_sm100_stage_bf16(x, buf, r, j);
                }
            }
            sg_mega_out_end(out, ophase, 0, 64 * piece, piece == pieces - 1);
        }
        // Every thread's TMEM reads are done before thread 0 issues the next task's first MMA into the same columns.
        sg_tc_fence_before();
        sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
    }

    // All 8 consumer warps share the task's MMAs, so the stages go back only when both warpgroups are done.
    static __device__ __forceinline__ void attention(const uint8_t *q, const uint8_t *k, const uint8_t *v,
                                                     uint64_t *empty, int sqkv, int img, int head, int /*part*/,
                                                     int /*parts*/, __nv_bfloat16 *out, int ldo,
                                                     int) {  // never split: no narrow launch
        sg_mma_attn_task(q, k, v, img, head, out, ldo, threadIdx.x / 32, 2 * 4);  // the 8 consumer warps
        sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
        if (threadIdx.x % 128 == 0)
            for (int j = 0; j < 3; j++) sg_mbar_arrive(empty + sg_mega_qkv_stage(sqkv, j));
    }
};
#endif

// PROF = 1 (SG_SM90_PROFILE=1) adds the cycle counters.
template <bool PROF>
__global__ void __launch_bounds__(SG_MEGA_THREADS) sg_sm100_mega_kernel(const __grid_constant__ sg_mega_params p) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
    sg_mega_kernel_body<sg_sm100_arch, PROF>(p);
#else
    __trap();  // compiled for other targets only so that the file builds there (scripts/sm100-check.sh)
#endif
}

typedef sg_mega_launch_fns<sg_sm100_mega_kernel<false>, sg_sm100_mega_kernel<true>, SG_SM100_MEGA_SMEM> sm100_fns;

// FC1 in bf16 (--precision bf16) or in block-scaled MXFP8 (the default numerics: docs/perf-notes.md, kernel/sm100).
const sg_mega_launcher sg_sm100_mega_launcher = {"sm100", sm100_fns::prepare, sm100_fns::launch, nullptr, 0,
                                                SG_FC1_BF16};
const sg_mega_launcher sg_sm100_mega_launcher_mxfp8 = {"sm100", sm100_fns::prepare, sm100_fns::launch,
                                                      sg_sm100_quant_weight, 0, SG_FC1_MXFP8};
