// kernel/sm100/sm100_mega.cu — the Blackwell megakernel: the shared skeleton (kernel/mega/mega_kernel.cuh: task
// table, ticket, counters, producer, storer, LayerNorm, patch and MAP-head tasks; host side kernel/mega/mega_gpu.cu) with a
// tcgen05 MMA / accumulator layer (sg_sm100_arch). Only this file differs from the Hopper kernel (kernel/sm90/sm90_mega.cu).
//
// NOT RUN ON HARDWARE: no B200 has been available. Checked offline only (ptxas for sm_100a; SASS opcodes by
// scripts/sm100-sass-check.sh). The runtime self-check (kernel/selfcheck.c) compares it with the portable path on
// a B200 before `auto` trusts it.
//
// Tensor memory: 512 columns per CTA (one CTA per SM: 199 KB of shared memory), allocated by warp 0 at the start
// and freed at the end: virtual CTA v's 128 x 128 fp32 accumulator at columns 128 v..+127, MXFP8 scales after.
// GEMM tile (one consumer warpgroup, 128 threads):
//   thread 0 issues per K block (after the block's `full` barrier): 4 x tcgen05.mma kind::f16 M128 N128 K16
//   (bf16 -> fp32; the first with enable_input_d = 0), then tcgen05.commit to the stage's `empty` barrier, which
//   frees the stage once the MMAs have read it — except the last one (bf16 output) or two (fp32 output) stages,
//   which are held for the output tile as on Hopper; after the last block, a commit to the virtual CTA's
//   `acc_full` barrier;
//   every thread knows the held stages without waiting (the ring advances one step per K block), waits on
//   acc_full, then reads its accumulator row (thread i of warp w: row 32 (w % 4) + i = TMEM lane) 32 columns at a
//   time (tcgen05.ld.32x32b.x32), adds the bias (from the shared-memory slot the skeleton's producer filled),
//   applies tanh GELU for FC1 and the head's FC1, and writes the row into the held stage(s) in the storer's swizzled TMA box layout;
//   a warpgroup barrier (after tcgen05.fence::before_thread_sync) orders those reads before the next tile's MMAs.
// FC1 in block-scaled MXFP8 (unless --precision bf16): LayerNorm-2 tasks write its input as E4M3 + UE8M0 scales
// (128x4 layout, sm100_quant.cuh); the producer loads K blocks of 128 E4M3 (the same 32 KB stage) plus the two
// 512-byte scale atoms into the stage's scale slot; thread 0 copies them to TMEM (tcgen05.cp) and issues 4
// kind::mxf8f6f4.block_scale MMAs (K = 32) per block.
// Attention: wgmma does not exist on sm_100, so one (image, head) is computed with mma.sync (HMMA) from the same
// three ring stages (sm100_attn.cuh; attention is ~4 % of the FLOPs), then a warpgroup barrier before the
// stages are freed.
// Registers: 320 threads allow 168 per thread (3 warps on one SM sub-partition); LayerNorm keeps 2 rows in flight
// per warp (Hopper: 4), which leaves the consumer loop's state room: 168 registers, no spills.
#include <cuda_runtime.h>
#include "../mega/mega_kernel.cuh"
#include "sm100_attn.cuh"
#include "sm100_desc.h"
#include "sm100_mega.h"
#include "sm100_quant.h"
#include "sm100_ptx.cuh"
#include "sm100_quant.cuh"

static_assert(SG_MEGA_STAGE_BYTES == SG_ATTN_ROWS * SG_ATTN_DH * 2 && SG_MEGA_ATT_BOX_ROWS == SG_ATTN_ROWS &&
                  SG_MEGA_DH == SG_ATTN_DH,
              "an attention box (sm100_attn.cuh) fills one ring stage");

// TMEM columns: [0, 256) virtual CTA v's accumulator at 128 v; [256, 304) MXFP8 scale factors, 8 per ring stage
// (SFA 4, SFB 4) at 256 + 8 (3 v + stage), so a scale copy never overwrites scales an earlier stage's MMAs may
// still read; 304 allocated as the next power of two.
#define SG_SM100_MEGA_TMEM_COLS 512
#define SG_SM100_MEGA_SF_COL0 256
#define SG_SM100_MEGA_SF_BYTES 1024  // per ring stage: the SFA and SFB 128x4 atoms of one K block (512 bytes each)
// Dynamic shared memory: the skeleton's two rings, then each virtual CTA's 3 scale-atom slots.
#define SG_SM100_MEGA_SMEM (SG_MEGA_SMEM + 2 * SG_MEGA_STAGES * SG_SM100_MEGA_SF_BYTES)

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
// Per-CTA shared state of this layer (function-scope __shared__: one instance per CTA).
__device__ __forceinline__ uint32_t *sg_sm100_mega_tmem_slot() {
    __shared__ uint32_t slot;
    return &slot;
}
__device__ __forceinline__ uint64_t *sg_sm100_mega_acc_full() {
    __shared__ uint64_t bar[2];
    return bar;
}
// Virtual CTA v's scale-atom slot of ring stage s (after both rings in the dynamic shared memory).
__device__ __forceinline__ uint8_t *sg_sm100_mega_sf_slot(int v, int s) {
    extern __shared__ uint8_t smem_raw[];
    return sg_mega_align1024(smem_raw) + 2 * SG_MEGA_RING_BYTES + (SG_MEGA_STAGES * v + s) * SG_SM100_MEGA_SF_BYTES;
}

// One 32-column chunk j (columns 32 j..+31) of row r as bf16 into the bf16 output stage: two TMA boxes of 64
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

// One 32-column chunk j of row r as fp32 into an fp32 output stage (rows 64 h..+63 of the tile): TMA box j of 32
// columns x 64 rows, 128-byte swizzle.
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
    // Kept small (it is live across every task, attention included, whose scores take most registers): the
    // TMEM address and the barrier are re-derived from v when a GEMM tile needs them.
    struct ctx {
        uint32_t v;      // virtual CTA 0 or 1: accumulator columns 128 v.., acc_full[v], named barrier 1 + v
        uint32_t phase;  // acc_full[v]'s phase for the next tile
    };

    static __device__ __forceinline__ void cta_begin() {
        if (threadIdx.x == 0) {
            sg_mbar_init(&sg_sm100_mega_acc_full()[0], 1);
            sg_mbar_init(&sg_sm100_mega_acc_full()[1], 1);
            sg_fence_mbar_init();
        }
        if (threadIdx.x / 32 == 0) {  // whole warp: alloc is .sync.aligned
            sg_tc_alloc(sg_sm100_mega_tmem_slot(), SG_SM100_MEGA_TMEM_COLS);
            sg_tc_relinquish();
        }
        sg_tc_fence_before();
    }
    static __device__ __forceinline__ ctx ctx_for(int v) {
        sg_tc_fence_after();
        return ctx{(uint32_t)v, 0u};
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

    // MXFP8 FC1 (p.fc1_mx): per K block of 128 E4M3, the A and W boxes (128 rows x 128 bytes: the stage's 32 KB, as
    // the bf16 blocks) and the two scale atoms of this row tile / column tile / K block (cp.async.bulk, same
    // barrier) into the stage's scale slot. Every other GEMM: the Hopper producer's bf16 blocks.
    static __device__ __forceinline__ void produce_gemm(const sg_mega_params &p, const sg_mega_task &k,
                                                        const CUtensorMap *map_a, const CUtensorMap *map_w, int m0,
                                                        int n0, int K, const sg_ring_smem &sm, sg_ring &ring) {
        if (!(p.fc1_mx && k.kind == SG_MT_FC1)) {
            sg_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(map_a, map_w, m0, n0, K, sm, ring);
            return;
        }
        const int v = threadIdx.x / 32 - 8;  // producer warps 8, 9
        const uint32_t nb = SG_MEGA_D / 32;
        const uint8_t *sfw = p.w1sf + (size_t)k.layer * SG_MEGA_W1SF_BYTES;
        for (int kb = 0; kb < SG_MEGA_D / 128; kb++) {
            sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
            uint8_t *st = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES, *sf = sg_sm100_mega_sf_slot(v, ring.stage);
            uint64_t *bar = &sm.full[ring.stage];
            sg_mbar_arrive_expect_tx(bar, SG_MEGA_STAGE_BYTES + SG_SM100_MEGA_SF_BYTES);
            sg_bulk_load(sf, p.y8sf + sg_sm100_sf_offset((uint32_t)m0, 4u * kb, nb), 512, bar);
            sg_bulk_load(sf + 512, sfw + sg_sm100_sf_offset((uint32_t)n0, 4u * kb, nb), 512, bar);
            sg_tma_load_2d(st, p.maps + SG_MAP_Y8(p.L), bar, kb * 128, m0);
            sg_tma_load_2d(st + SG_MEGA_STAGE_BYTES / 2, p.maps + SG_MAP_W1Q(p.L, k.layer), bar, kb * 128, n0);
            sg_ring_next(ring, SG_MEGA_STAGES);
        }
    }

    // MXFP8 FC1: LayerNorm-2 of rows r0..r0+31 (below M) writes FC1's input as E4M3 + scales, a warp per row.
    static __device__ __forceinline__ bool ln2_quant(const sg_mega_params &p, const float *g, const float *b, int r0,
                                                     int M, int warp) {
        if (!p.fc1_mx) return false;
        const int r_end = min(r0 + SG_MEGA_LN_ROWS, M);
        for (int row = r0 + warp; row < r_end; row += 4)
            sg_ln_quant_row(p.h, g, b, row, SG_MEGA_D, p.eps, p.y8, p.y8sf, nullptr);
        return true;
    }

    template <bool PROF>
    static __device__ __forceinline__ long long gemm(const sg_mega_params &p, const sg_mega_task &k, const float *bias,
                                                     ctx &c, const sg_ring_smem &sm, sg_ring &ring,
                                                     uint64_t *sfree, uint32_t sfree_parity, long long t_busy,
                                                     uint32_t &held0, uint32_t &held1) {
        const int tid = threadIdx.x % 128, warp = tid / 32, r = tid;  // r: this thread's row = TMEM lane
        const bool f32 = sg_mega_f32_tile(k.kind);
        const bool mx = p.fc1_mx && k.kind == SG_MT_FC1;  // block-scaled MXFP8, K blocks of 128 (not the head's FC1)
        const int hold = f32 ? 2 : 1;
        const int nk = mx ? SG_MEGA_D / 128 : sg_mega_gemm_k(k.kind) / 64;
        const uint32_t tmem0 = *sg_sm100_mega_tmem_slot();
        const uint32_t tmem = tmem0 + sg_sm100_tmem_addr(0, 128u * c.v);
        uint64_t *acc_full = &sg_sm100_mega_acc_full()[c.v];
        const long long t_k = PROF ? clock64() : 0;
        if (tid == 0) {
            sg_ring q = ring;
            for (int kb = 0; kb < nk; kb++) {
                sg_mbar_wait(&sm.full[q.stage], q.phase);
                sg_tc_fence_after();
                const uint32_t a = sg_smem_u32(sm.stages + q.stage * SG_MEGA_STAGE_BYTES);
                const uint64_t da = sg_sm100_smem_desc_kmajor_sw128(a);
                const uint64_t db = sg_sm100_smem_desc_kmajor_sw128(a + SG_MEGA_STAGE_BYTES / 2);
                if (mx) {  // scales to TMEM first: the same thread's tcgen05 operations run in issue order
                    const uint32_t sfa = tmem0 + sg_sm100_tmem_addr(0, SG_SM100_MEGA_SF_COL0 +
                                                                           8u * (SG_MEGA_STAGES * c.v + q.stage));
                    const uint32_t sf = sg_smem_u32(sg_sm100_mega_sf_slot((int)c.v, (int)q.stage));
                    sg_tc_cp_sf(sfa, sg_sm100_smem_desc_sf(sf));
                    sg_tc_cp_sf(sfa + 4u, sg_sm100_smem_desc_sf(sf + 512));
#pragma unroll
                    for (int s = 0; s < 4; s++)  // K = 32 E4M3 per MMA: +32 bytes = +2 in the address field
                        sg_tc_mma_mxf8(tmem, da + 2 * s, db + 2 * s, sg_sm100_idesc_mxf8(SG_MEGA_BM, SG_MEGA_BN, s),
                                       sfa, sfa + 4u, (kb | s) != 0);
                } else {
                    const uint32_t idesc = sg_sm100_idesc_bf16(SG_MEGA_BM, SG_MEGA_BN);
#pragma unroll
                    for (int s = 0; s < 4; s++)  // K = 16 bf16 per MMA: +32 bytes = +2 in the address field
                        sg_tc_mma_f16(tmem, da + 2 * s, db + 2 * s, idesc, (kb | s) != 0);
                }
                if (kb < nk - hold) sg_tc_commit(&sm.empty[q.stage]);
                sg_ring_next(q, SG_MEGA_STAGES);
            }
            sg_tc_commit(acc_full);
        }
        __syncwarp();
        for (int kb = 0; kb < nk; kb++) {  // the same ring walk, for every thread: the held stages
            if (kb == nk - 2) held1 = ring.stage;
            if (kb == nk - 1) held0 = ring.stage;
            sg_ring_next(ring, SG_MEGA_STAGES);
        }
        sg_mbar_wait(acc_full, c.phase);
        c.phase ^= 1u;
        sg_tc_fence_after();
        const long long t_e = PROF ? clock64() : 0;
        if (PROF && tid == 0) {
            atomicAdd(p.prof + SG_MT_END + 2, (unsigned long long)(t_k - t_busy));
            atomicAdd(p.prof + SG_MT_END + 3, (unsigned long long)(t_e - t_k));
        }
        sg_mbar_wait(sfree, sfree_parity);
        const uint32_t s0 = sg_smem_u32(sm.stages + held0 * SG_MEGA_STAGE_BYTES);
        const uint32_t s1 = sg_smem_u32(sm.stages + held1 * SG_MEGA_STAGE_BYTES);
#pragma unroll 1
        for (int j = 0; j < SG_MEGA_BN / 32; j++) {
            uint32_t v[32];
            sg_tc_ld_32x32b_x32(tmem + sg_sm100_tmem_addr(32u * (uint32_t)warp, 32u * (uint32_t)j), v);
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
            if (sg_mega_gelu_tile(k.kind)) {
#pragma unroll
                for (int i = 0; i < 32; i++) x[i] = sg_mega_gelu(x[i]);
            }
            if (f32)
                sg_sm100_stage_f32(x, r < 64 ? s1 : s0, r, j);
            else
                sg_sm100_stage_bf16(x, s0, r, j);
        }
        // Every thread's TMEM reads are done before thread 0 issues the next tile's first MMA into the same columns.
        sg_tc_fence_before();
        sg_named_bar(1 + (int)c.v, 128);
        return t_e;
    }

    static __device__ __forceinline__ void attention(const uint8_t *q, const uint8_t *k, const uint8_t *v, int img,
                                                     int head, __nv_bfloat16 *out, int ldo, int bar) {
        sg_mma_attn_task(q, k, v, img, head, out, ldo);
        sg_named_bar(bar, 128);  // warps finish at different times: all reads done before the stages are freed
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
const sg_mega_launcher sg_sm100_mega_launcher = {"sm100", sm100_fns::prepare, sm100_fns::launch, nullptr};
const sg_mega_launcher sg_sm100_mega_launcher_mxfp8 = {"sm100", sm100_fns::prepare, sm100_fns::launch,
                                                      sg_sm100_quant_weight};
