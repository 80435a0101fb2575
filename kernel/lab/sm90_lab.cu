// kernel/lab/sm90_lab.cu — lab kernels and launchers for the megakernel tasks (sm90_gemm.cuh, sm90_attn.cuh,
// mega_ln.cuh) and the persistent MLP skeleton.
//
// Each lab kernel is a small persistent kernel with the megakernel's CTA shape: 384 threads = producer
// warpgroup (setmaxnreg 40, one thread issues TMA) + 2 consumer warpgroups (setmaxnreg 232, wgmma), grid =
// min(tasks, SMs), tasks taken round-robin, the mbarrier ring carried across tasks. Host side: bf16 upload,
// tensor maps (cuTensorMapEncodeTiled through the runtime's driver entry point, so no -lcuda), NaN-poisoned
// outputs, timing with events.
// The MLP skeleton (sg_sm90_lab_mlp) is the first multi-stage persistent kernel: grid = SM count through a
// cooperative launch, a task table in dependency order handed out statically or by an atomic ticket, FC1 ->
// FC2 dependencies through per-row-tile counters (mega_sync.cuh).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include "sm90_lab.h"
#include "../sm90/sm90_gemm.cuh"
#include "../sm90/sm90_attn.cuh"
#include "../mega/mega_sync.cuh"
#include "../mega/mega_ln.cuh"
#include "../mega/tmap.cuh"
#include "lab_cuda.cuh"

#define SG_LAB_THREADS 384
// Producer 40 + 2 consumers x 232 registers x 128 threads = 64,512 <= 65,536 per SM (one CTA per SM).
#define SG_LAB_REG_PRODUCER 40
#define SG_LAB_REG_CONSUMER 232

// ---------------------------------------------------------------------------------------------------- kernels

// The GEMM kernels' ring barriers (thread 0, then the whole CTA waits): full[] one arrival (+ the TMA bytes),
// empty[] `frees` arrivals (a consumer warpgroup each, and the peer CTA's in a multicast cluster).
__device__ __forceinline__ void sg_lab_ring_init(uint64_t *full, uint64_t *empty, int frees,
                                                 int stages = SG_GEMM_STAGES) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], frees);
        }
        sg_fence_mbar_init();
    }
    __syncthreads();
}

// PP = 0: cooperative consumers (both warpgroups on one tile, BN 128 or 256); PP = 1: ping-pong (alternate
// tiles, BN = 128). MC = 1 (with PP, launched with a cluster dimension of 2): the two CTAs of a cluster take the
// tiles of row tiles 2 p and 2 p + 1 of the same W columns together, and each producer multicasts half of every W
// block into both CTAs (sg_gemm_produce with the rank; mapW then has 64-row boxes), so an SM pulls 24 KB from L2 per
// 128 x 128 x 64 block instead of 32 KB. Measured (H100, session 9): correct, but its main loop no faster than the
// plain ping-pong's (~650 TFLOP/s; docs/perf-notes.md), so the L2 pull was not the bound. A row tile past M (an
// odd count) is zero-filled by TMA and its rows dropped.
// PP = 0 with MC = 1 (BN = 256, session 16): the megakernel's cooperative 128 x 256 task in 2-CTA clusters, each
// producer multicasting its 128-row half of every W block into both CTAs (mapW: 128-row boxes), so an SM pulls A
// 16 KB + W 16 KB per K block instead of 48 KB; every stage is freed by both CTAs' two consumers (empty[] count 4).
// Measured (H100, session 16, M = 196 x 1,024, `test_sm90_lab --power` under scripts/energy_trace.py): 0.96-1.01x the
// plain schedule's time and the same energy within 2 % (main loops alone -1 to -5 %): the L2's reads of W are not
// where a GEMM's time or energy goes. ptxas spills 12 bytes in this instantiation, outside the K loop (the kernel's
// set-up and the producer's tile loop; the K loop has no local memory).
// ST: the ring's depth (the cooperative schedules also run with the megakernel's 3; default SG_GEMM_STAGES).
template <int BN, int PP, int MC = 0, int ST = SG_GEMM_STAGES>
__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_gemm_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapW, int M,
                        int N, int K, sg_sm90_epilogue ep) {
    static_assert(!PP || BN == 128, "ping-pong holds a 128 x 128 tile per warpgroup");
    static_assert(!MC || PP || BN == 256, "the multicast schedules: ping-pong 128 x 128, cooperative 128 x 256");
    static_assert(ST == SG_GEMM_STAGES || !PP, "another ring depth only for the cooperative schedules");
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_GEMM_STAGES], empty[SG_GEMM_STAGES];
    sg_ring_smem sm = {sg_align1024(smem_raw), full, empty};
    sg_lab_ring_init(full, empty, (PP ? 1 : 2) * (1 + MC), ST);  // MC: the peer's consumers free a stage too
    if (MC) sg_cluster_sync();  // the peer's barriers exist before any multicast or remote arrival reaches them
    const int rank = MC ? (int)sg_cluster_rank() : 0, first = MC ? (int)sg_cluster_id() : (int)blockIdx.x,
              step = MC ? (int)sg_cluster_count() : (int)gridDim.x;
    const int tiles_n = N / BN, tiles_m = (M + SG_GEMM_BM - 1) / SG_GEMM_BM;
    const int tiles = (MC ? (tiles_m + 1) / 2 : tiles_m) * tiles_n;  // MC: pairs of row tiles
    const int wg = threadIdx.x / 128;
    sg_ring ring = {0, 0};
    // Column tile fastest: the CTAs running at one time share a few A row blocks, so A (up to 154 MB at
    // M = 25,088) is read from HBM once and the weights (<= 4.7 MB) stay in L2. Row-fastest re-read A once per
    // column tile and ran at 129-252 TFLOP/s (docs/perf-notes.md, kernel/sm90 section, v1).
    if (wg == 0) {
        sg_setmaxnreg_dec<SG_LAB_REG_PRODUCER>();
        if (threadIdx.x == 0) {
            sg_tma_prefetch_desc(&mapA);
            sg_tma_prefetch_desc(&mapW);
            for (int tile = first; tile < tiles; tile += step) {
                const int m0 = ((MC ? 2 : 1) * (tile / tiles_n) + rank) * SG_GEMM_BM, n0 = (tile % tiles_n) * BN;
                sg_gemm_produce<BN, ST>(&mapA, &mapW, m0, n0, K, sm, ring, MC ? rank : -1);
            }
        }
    } else {
        sg_setmaxnreg_inc<SG_LAB_REG_CONSUMER>();
        int j = 0;
        for (int tile = first; tile < tiles; tile += step, j++) {
            const int m0 = ((MC ? 2 : 1) * (tile / tiles_n) + rank) * SG_GEMM_BM, n0 = (tile % tiles_n) * BN;
            if (!PP) {
                sg_sm90_gemm_consume<BN, ST, MC != 0>(wg - 1, m0, n0, M, K, ep, sm, ring);
            } else if ((j & 1) == wg - 1) {
                if (j > 0) sg_named_bar(SG_PP_BAR + (wg - 1), 256);  // the other warpgroup's K loop is done
                const int next = tile + step < tiles ? SG_PP_BAR + (2 - wg) : -1;
                sg_sm90_gemm_consume_pp(m0, n0, M, K, ep, sm, ring, next, MC ? rank ^ 1 : -1);
            } else {
                sg_ring_skip(ring, K / SG_GEMM_BK);
            }
        }
    }
    if (MC) {  // no CTA leaves while its peer may still write into its stages or arrive on its barriers
        __syncthreads();
        sg_cluster_sync();
    }
}

// Schedule 6 (session 24): 256 x 192 tiles, each of two consumer warpgroups owning 128 rows x 192 columns (two
// m64n192k16 per k16 step on the same W block, 2 x 96 accumulator registers). The question it answers: an SM pulls
// (256 + 192) x 128 bytes per K block for 2 x 256 x 192 x 64 FLOP, 22 % fewer bytes per FLOP than the megakernel's
// 128 x 256 task ((128 + 256) x 128 bytes for 2 x 128 x 256 x 64), and at the power limit session 23 put the
// operands' delivery at ~17 mJ of the forward's ~54.5 mJ an image, so this tile's K loops should cost ~10 % less
// energy per FLOP (docs/perf-notes.md, session 24). Its accumulators need more registers than a kernel with a
// producer warpgroup gets: ptxas compiles every thread of a CTA to the same count, 65,536 / threads rounded down
// (168 for 384 threads, and for 288: the count goes by whole warpgroups), setmaxnreg notwithstanding (tried: 192 x
// 256 on three consumer warpgroups stops ptxas at 128 registers, C7602; 288 threads with a producer warp spilled at
// 168). So 256 threads, no producer role: thread 0 feeds the ring from inside the K loop, one block per block
// consumed, waiting on the stage it refills (freed by both warpgroups) after its own warpgroup's MMAs are issued.
// A stage holds A 256 x 64 (32 KB) and W 192 x 64 (24 KB); four stages are 224 KB. Row tiles past M are
// zero-filled by TMA and their rows dropped.
// Measured (H100, session 24, M = 196 x 1,024, `test_sm90_lab --power 6` under scripts/energy_trace.py): its main
// loops run at 0.99-1.01x the 128 x 256 task's time (both ~720-740 TFLOP/s) and 0.97-1.03x its energy: the
// prediction failed. `test_sm90_lab --power-data` says why: the same loop with the same bytes costs 43 % less energy
// with constant operands and 47-49 % less with zeros, so a lone K loop's energy follows the values it multiplies,
// not the bytes an SM pulls. (In the whole megakernel constant values are worth +11 % images/s: the same notes.)
#define SG_LAB192_THREADS 256
#define SG_LAB192_BM 256
#define SG_LAB192_BN 192
#define SG_LAB192_A_BYTES (SG_LAB192_BM * SG_GEMM_BK * 2)
#define SG_LAB192_STAGE_BYTES (SG_LAB192_A_BYTES + SG_GEMM_B_BYTES(SG_LAB192_BN))
static_assert(SG_LAB192_A_BYTES % 1024 == 0 && SG_LAB192_STAGE_BYTES % 1024 == 0,
              "stages and W blocks stay 1024-byte aligned (128-byte swizzle)");

/* D[64x192] (+)= A[64x16] . B[192x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate. */
__device__ __forceinline__ void sg_lab_wgmma_ss_n192(float (&d)[96], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
                 "%96, %97, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32), SG_WGMMA_ACC32(d, 64)
                 : "l"(da), "l"(db), "r"(scale_d));
}

// The ring's feeder (thread 0): the next K block of this CTA's tiles, if any, into the next stage once both
// consumer warpgroups freed it.
typedef struct sg_lab192_feed {
    int tile, k0;
    sg_ring ring;
} sg_lab192_feed;
template <int ST>
__device__ __forceinline__ void sg_lab192_feed_one(sg_lab192_feed &f, int tiles, int tiles_n, int K,
                                                   const CUtensorMap *mapA, const CUtensorMap *mapW,
                                                   const sg_ring_smem &sm) {
    if (f.tile >= tiles) return;
    sg_mbar_wait(&sm.empty[f.ring.stage], f.ring.phase ^ 1u);
    uint8_t *a = sm.stages + f.ring.stage * SG_LAB192_STAGE_BYTES;
    sg_mbar_arrive_expect_tx(&sm.full[f.ring.stage], SG_LAB192_STAGE_BYTES);
    sg_tma_load_2d(a, mapA, &sm.full[f.ring.stage], f.k0, (f.tile / tiles_n) * SG_LAB192_BM);
    sg_tma_load_2d(a + SG_LAB192_A_BYTES, mapW, &sm.full[f.ring.stage], f.k0, (f.tile % tiles_n) * SG_LAB192_BN);
    sg_ring_next(f.ring, ST);
    f.k0 += SG_GEMM_BK;
    if (f.k0 == K) {
        f.k0 = 0;
        f.tile += gridDim.x;
    }
}

template <int ST>
__global__ void __launch_bounds__(SG_LAB192_THREADS, 1)
sg_sm90_lab_gemm192_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapW, int M,
                           int N, int K, sg_sm90_epilogue ep) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[ST], empty[ST];
    sg_ring_smem sm = {sg_align1024(smem_raw), full, empty};
    sg_lab_ring_init(full, empty, 2, ST);  // a stage is freed by both consumer warpgroups
    const int tiles_n = N / SG_LAB192_BN, tiles = (M + SG_LAB192_BM - 1) / SG_LAB192_BM * tiles_n;
    const int c = threadIdx.x / 128, t = threadIdx.x % 128;  // consumer warpgroup: rows [128 c, 128 c + 128)
    const bool feeder = threadIdx.x == 0;
    sg_lab192_feed feed = {(int)blockIdx.x, 0, {0, 0}};
    if (feeder) {
        sg_tma_prefetch_desc(&mapA);
        sg_tma_prefetch_desc(&mapW);
        for (int s = 0; s < ST; s++) sg_lab192_feed_one<ST>(feed, tiles, tiles_n, K, &mapA, &mapW, sm);
    }
    sg_ring ring = {0, 0};
    // Column tile fastest, as in the kernel above.
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int m0 = (tile / tiles_n) * SG_LAB192_BM + 128 * c, n0 = (tile % tiles_n) * SG_LAB192_BN;
        float acc0[96], acc1[96];
#pragma unroll
        for (int i = 0; i < 96; i++) acc0[i] = acc1[i] = 0.0f;
        uint32_t prev_stage = 0;
        for (int k0 = 0; k0 < K; k0 += SG_GEMM_BK) {
            sg_mbar_wait(&sm.full[ring.stage], ring.phase);
            const uint8_t *a = sm.stages + ring.stage * SG_LAB192_STAGE_BYTES + c * (128 * 128);
            const uint64_t da0 = sg_smem_desc(a, 16, 1024), da1 = sg_smem_desc(a + 64 * 128, 16, 1024);
            const uint64_t db = sg_smem_desc(sm.stages + ring.stage * SG_LAB192_STAGE_BYTES + SG_LAB192_A_BYTES, 16,
                                             1024);
            sg_wgmma_fence_regs(acc0);
            sg_wgmma_fence_regs(acc1);
            sg_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < SG_GEMM_BK / 16; kk++) {  // +32 bytes per k16 step = +2 in the address field
                const int accumulate = (k0 > 0 || kk > 0) ? 1 : 0;
                sg_lab_wgmma_ss_n192(acc0, da0 + 2 * kk, db + 2 * kk, accumulate);
                sg_lab_wgmma_ss_n192(acc1, da1 + 2 * kk, db + 2 * kk, accumulate);
            }
            sg_wgmma_commit();
            sg_wgmma_fence_regs(acc0);
            sg_wgmma_fence_regs(acc1);
            sg_wgmma_wait<1>();  // the previous block's MMAs are complete: free its stage, refill one
            if (k0 > 0) {
                if (t == 0) sg_ring_free(sm, prev_stage, -1);
                if (feeder) sg_lab192_feed_one<ST>(feed, tiles, tiles_n, K, &mapA, &mapW, sm);
            }
            prev_stage = ring.stage;
            sg_ring_next(ring, ST);
        }
        sg_wgmma_wait<0>();
        sg_wgmma_fence_regs(acc0);
        sg_wgmma_fence_regs(acc1);
        if (t == 0) sg_ring_free(sm, prev_stage, -1);
        if (feeder) sg_lab192_feed_one<ST>(feed, tiles, tiles_n, K, &mapA, &mapW, sm);
        sg_sm90_gemm_epilogue<SG_LAB192_BN>(acc0, m0, n0, M, ep);
        sg_sm90_gemm_epilogue<SG_LAB192_BN>(acc1, m0 + 64, n0, M, ep);
    }
}

// Ping-pong of 64 x 256 warpgroup tiles (the GEMM part of a two-stream megakernel design, tested here first):
// the consumer warpgroups take alternate tiles of 64 rows x 256 columns, each with one m64n256k16 per k16 step
// (128 registers, the megakernel's wide K-loop shape since v27), so one's epilogue overlaps the other's K loop. A
// stage holds A 64 x 64 (8 KB) and W 256 x 64 (32 KB). MC = 1 (launched with a cluster dimension of 2): the two
// CTAs of a cluster take row tiles 2 p and 2 p + 1 of the same columns and each multicasts its half of every W
// block into both (mapW: 128-row boxes), so an SM pulls A 8 KB + W 16 KB from L2 per 64 x 256 x 64 block: the bytes
// per FLOP of the megakernel's shared 128 x 256 task, where without the multicast it would be 1.67x as many.
// Measured (H100, session 9): correct, main loops 604-670 TFLOP/s against the cooperative 128 x 256 schedule's
// ~790: one warpgroup's m64n256k16 stream alone does not reach the rate of both together (docs/perf-notes.md).
#define SG_LAB64_A_BYTES (64 * SG_GEMM_BK * 2)
#define SG_LAB64_STAGE_BYTES (SG_LAB64_A_BYTES + SG_GEMM_B_BYTES(256))  // 40 KB
#define SG_LAB64_SMEM (SG_GEMM_STAGES * SG_LAB64_STAGE_BYTES)

// One warpgroup's 64 x 256 tile: the K loop (each stage freed here, and in the peer CTA when peer >= 0, once the
// next block's MMAs are issued), the hand-off to the other warpgroup (next_bar), then the register epilogue.
__device__ __forceinline__ void sg_lab64_consume(int m0, int n0, int M, int K, const sg_sm90_epilogue &ep,
                                                 const sg_ring_smem &sm, sg_ring &ring, int next_bar, int peer) {
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.0f;
    const int t = threadIdx.x % 128;
    uint32_t prev = 0;
    for (int k0 = 0; k0 < K; k0 += SG_GEMM_BK) {
        sg_mbar_wait(&sm.full[ring.stage], ring.phase);
        const uint8_t *a = sm.stages + ring.stage * SG_LAB64_STAGE_BYTES;
        const uint64_t da = sg_smem_desc(a, 16, 1024), db = sg_smem_desc(a + SG_LAB64_A_BYTES, 16, 1024);
        sg_wgmma_fence_regs(acc);
        sg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < SG_GEMM_BK / 16; kk++)
            sg_wgmma_ss_n256(acc, da + 2 * kk, db + 2 * kk, (k0 > 0 || kk > 0) ? 1 : 0);
        sg_wgmma_commit();
        sg_wgmma_fence_regs(acc);
        sg_wgmma_wait<1>();
        if (k0 > 0 && t == 0) sg_ring_free(sm, prev, peer);
        prev = ring.stage;
        sg_ring_next(ring, SG_GEMM_STAGES);
    }
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(acc);
    if (t == 0) sg_ring_free(sm, prev, peer);
    if (next_bar >= 0) sg_named_bar_arrive(next_bar, 256);
    sg_sm90_gemm_epilogue<256>(acc, m0, n0, M, ep);
}

template <int MC>
__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_gemm64_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapW, int M,
                          int N, int K, sg_sm90_epilogue ep) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_GEMM_STAGES], empty[SG_GEMM_STAGES];
    sg_ring_smem sm = {sg_align1024(smem_raw), full, empty};
    sg_lab_ring_init(full, empty, 1 + MC);  // MC: the peer's consumer frees a stage too
    if (MC) sg_cluster_sync();
    const int rank = MC ? (int)sg_cluster_rank() : 0, first = MC ? (int)sg_cluster_id() : (int)blockIdx.x,
              step = MC ? (int)sg_cluster_count() : (int)gridDim.x;
    const int tiles_n = N / 256, tiles_m = (M + 63) / 64;
    const int tiles = (MC ? (tiles_m + 1) / 2 : tiles_m) * tiles_n;
    const int wg = threadIdx.x / 128;
    sg_ring ring = {0, 0};
    if (wg == 0) {  // column tile fastest, as the other schedules
        sg_setmaxnreg_dec<SG_LAB_REG_PRODUCER>();
        if (threadIdx.x == 0) {
            sg_tma_prefetch_desc(&mapA);
            sg_tma_prefetch_desc(&mapW);
            for (int tile = first; tile < tiles; tile += step)
                sg_gemm_produce<256, SG_GEMM_STAGES, 64>(&mapA, &mapW, ((MC ? 2 : 1) * (tile / tiles_n) + rank) * 64,
                                                          (tile % tiles_n) * 256, K, sm, ring, MC ? rank : -1);
        }
    } else {
        sg_setmaxnreg_inc<SG_LAB_REG_CONSUMER>();
        int j = 0;
        for (int tile = first; tile < tiles; tile += step, j++) {
            if ((j & 1) == wg - 1) {
                if (j > 0) sg_named_bar(SG_PP_BAR + (wg - 1), 256);  // the other warpgroup's K loop is done
                const int next = tile + step < tiles ? SG_PP_BAR + (2 - wg) : -1;
                sg_lab64_consume(((MC ? 2 : 1) * (tile / tiles_n) + rank) * 64, (tile % tiles_n) * 256, M, K, ep, sm,
                                 ring, next, MC ? rank ^ 1 : -1);
            } else {
                sg_ring_skip(ring, K / SG_GEMM_BK);
            }
        }
    }
    if (MC) {  // no CTA leaves while its peer may still write into its stages or arrive on its barriers
        __syncthreads();
        sg_cluster_sync();
    }
}

__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_attn_kernel(const __grid_constant__ CUtensorMap mapQKV, int B, __nv_bfloat16 *out) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full, empty;
    uint8_t *base = sg_align1024(smem_raw);
    sg_sm90_attn_smem sm = {base, base + SG_ATTN_TILE_BYTES, base + 2 * SG_ATTN_TILE_BYTES, &full, &empty};
    if (threadIdx.x == 0) {
        sg_mbar_init(&full, 1);
        sg_mbar_init(&empty, 2);
        sg_fence_mbar_init();
    }
    __syncthreads();
    const int tasks = B * 12, wg = threadIdx.x / 128;
    uint32_t phase = 0;
    if (wg == 0) {
        sg_setmaxnreg_dec<SG_LAB_REG_PRODUCER>();
        if (threadIdx.x == 0) {
            sg_tma_prefetch_desc(&mapQKV);
            for (int task = blockIdx.x; task < tasks; task += gridDim.x)
                sg_sm90_attn_produce(&mapQKV, task / 12, task % 12, sm, phase);
        }
    } else {
        sg_setmaxnreg_inc<SG_LAB_REG_CONSUMER>();
        for (int task = blockIdx.x; task < tasks; task += gridDim.x)
            sg_sm90_attn_consume(wg - 1, task / 12, task % 12, out, 768, sm, phase);
    }
}

// LayerNorm lab kernel: persistent over row tiles of 128 rows; the 8 consumer warps do the work, as they will
// in the megakernel (the producer warpgroup has nothing to stream for this task).
__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_ln_kernel(const float *x, const float *gamma, const float *beta, float eps, __nv_bfloat16 *y, int M) {
    const int wg = threadIdx.x / 128;
    if (wg == 0) return;
    const int tiles = (M + SG_GEMM_BM - 1) / SG_GEMM_BM;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x)
        sg_ln_rows(x, SG_LN_D, gamma, beta, eps, y, SG_LN_D, tile * SG_GEMM_BM, SG_GEMM_BM, M,
                        (threadIdx.x - 128) / 32, 8);
}

// Persistent MLP block, the megakernel skeleton: out = residual + FC2(GELU(FC1(X) + b1)) + b2, H = GELU(...) in
// bf16 global memory between the stages. tasks[]: one global topological order. Entry = (kind << 31) |
// (row tile << 16) | column tile; kind 0 = FC1 tile (signals its row tile), 1 = FC2 tile (waits for all FC1
// tiles of its row tile). Task assignment (TICKET):
//   0, static: CTA b runs entries b, b + grid, ...;
//   1, ticket: the producer thread takes the next entry with atomicAdd on a global ticket and hands it to the
//      consumers through a 4-slot smem ring (task_full / task_empty mbarriers), then a terminating SG_TASK_END.
//      Entries are still taken in list order, so the lowest unfinished task never waits (megakernel.md §4).
// counters: two banks of (SG_MLP_MAX_TILES_M row-tile counters + 1 ticket); launch with parity p counts in bank
// p and zeroes bank p^1 for the next launch (stream order makes that safe, and mixed batch sizes never leave a
// stale count behind).
#define SG_MLP_MAX_TILES_M 2048  // M <= 262,144 rows (1,337 images of 196 tokens)
#define SG_MLP_BANK (SG_MLP_MAX_TILES_M + 1)
// Signals per row tile from FC1: 24 column tiles, each signalled by both cooperative consumer warpgroups or by
// the one ping-pong warpgroup that computed it.
#define SG_MLP_FC1_SIGNALS(pp) ((3072 / SG_GEMM_BN) * ((pp) ? 1 : 2))
#define SG_TASK_END 0x7fffffff  // row tile 0x7fff never exists (SG_MLP_MAX_TILES_M)
#define SG_TASKQ 4

template <int PP, int TICKET>
__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_mlp_kernel(const __grid_constant__ CUtensorMap mapX, const __grid_constant__ CUtensorMap mapW1,
                       const __grid_constant__ CUtensorMap mapH, const __grid_constant__ CUtensorMap mapW2,
                       const int *tasks, int ntasks, int M, sg_sm90_epilogue ep1, sg_sm90_epilogue ep2,
                       unsigned *counters, int parity) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_GEMM_STAGES], empty[SG_GEMM_STAGES], task_full[SG_TASKQ], task_empty[SG_TASKQ];
    __shared__ int task_slot[SG_TASKQ];
    sg_ring_smem sm = {sg_align1024(smem_raw), full, empty};
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_GEMM_STAGES; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], PP ? 1 : 2);
        }
        for (int q = 0; q < SG_TASKQ; q++) {
            sg_mbar_init(&task_full[q], 1);
            sg_mbar_init(&task_empty[q], 256);  // every consumer thread, after reading the slot
        }
        sg_fence_mbar_init();
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < SG_MLP_BANK; i += gridDim.x * blockDim.x)
        counters[(parity ^ 1) * SG_MLP_BANK + i] = 0;
    unsigned *cnt = counters + parity * SG_MLP_BANK, *ticket = cnt + SG_MLP_MAX_TILES_M;
    __syncthreads();
    const int wg = threadIdx.x / 128;
    sg_ring ring = {0, 0}, tq = {0, 0};
    if (wg == 0) {
        sg_setmaxnreg_dec<SG_LAB_REG_PRODUCER>();
        if (threadIdx.x == 0) {
            sg_tma_prefetch_desc(&mapX);
            sg_tma_prefetch_desc(&mapW1);
            sg_tma_prefetch_desc(&mapH);
            sg_tma_prefetch_desc(&mapW2);
            for (int j = 0;; j++) {
                const int i = TICKET ? (int)atomicAdd(ticket, 1u) : (int)blockIdx.x + j * (int)gridDim.x;
                const int t = i < ntasks ? tasks[i] : SG_TASK_END;
                if (TICKET) {
                    sg_mbar_wait(&task_empty[tq.stage], tq.phase ^ 1u);
                    task_slot[tq.stage] = t;
                    sg_mbar_arrive(&task_full[tq.stage]);  // release: the slot write is visible to the waiters
                    sg_ring_next(tq, SG_TASKQ);
                }
                if (t == SG_TASK_END) break;
                const int mt = (t >> 16) & 0x7fff, nt = t & 0xffff;
                if (t >= 0) {
                    sg_gemm_produce<SG_GEMM_BN, SG_GEMM_STAGES>(&mapX, &mapW1, mt * SG_GEMM_BM, nt * SG_GEMM_BN, 768,
                                                                sm, ring);
                } else {
                    sg_dep_wait(&cnt[mt], SG_MLP_FC1_SIGNALS(PP));
                    sg_gemm_produce<SG_GEMM_BN, SG_GEMM_STAGES>(&mapH, &mapW2, mt * SG_GEMM_BM, nt * SG_GEMM_BN, 3072,
                                                                sm, ring);
                }
            }
        }
    } else {
        sg_setmaxnreg_inc<SG_LAB_REG_CONSUMER>();
        const int c = wg - 1;  // consumer index
        for (int j = 0;; j++) {
            int t;
            if (TICKET) {
                sg_mbar_wait(&task_full[tq.stage], tq.phase);
                t = task_slot[tq.stage];
                sg_mbar_arrive(&task_empty[tq.stage]);
                sg_ring_next(tq, SG_TASKQ);
            } else {
                const int i = (int)blockIdx.x + j * (int)gridDim.x;
                t = i < ntasks ? tasks[i] : SG_TASK_END;
            }
            const bool mine = !PP || (j & 1) == c;
            if (t == SG_TASK_END) {
                // Ping-pong: the other warpgroup arrived for this turn after its last K loop; take that arrival
                // so no barrier is left half-complete at exit.
                if (PP && mine && j > 0) sg_named_bar(SG_PP_BAR + c, 256);
                break;
            }
            const int mt = (t >> 16) & 0x7fff, nt = t & 0xffff;
            const int m0 = mt * SG_GEMM_BM, n0 = nt * SG_GEMM_BN;
            if (!mine) {
                sg_ring_skip(ring, (t >= 0 ? 768 : 3072) / SG_GEMM_BK);
                continue;
            }
            // ep1 / ep2 are named in separate calls: selecting a reference to one at run time put both kernel
            // parameter structs on the stack (112-byte frame).
            if (PP) {
                if (j > 0) sg_named_bar(SG_PP_BAR + c, 256);  // the other warpgroup's K loop is done
                if (t >= 0)
                    sg_sm90_gemm_consume_pp(m0, n0, M, 768, ep1, sm, ring, SG_PP_BAR + (1 - c));
                else
                    sg_sm90_gemm_consume_pp(m0, n0, M, 3072, ep2, sm, ring, SG_PP_BAR + (1 - c));
            } else {
                if (t >= 0)
                    sg_sm90_gemm_consume<SG_GEMM_BN>(c, m0, n0, M, 768, ep1, sm, ring);
                else
                    sg_sm90_gemm_consume<SG_GEMM_BN>(c, m0, n0, M, 3072, ep2, sm, ring);
            }
            if (t >= 0) sg_dep_signal_wg(&cnt[mt], wg);
        }
    }
}

// ---------------------------------------------------------------------------------------------------- host
// 2D tensor map over a row-major [rows, cols] matrix of `type` (elem bytes each), box {box_cols, box_rows}, for
// the E4M3 operands and the fp32 scale rows (tmap.cuh); the lab aborts on failure.
static CUtensorMap sg_tmap_2d(const void *base, CUtensorMapDataType type, int elem, uint64_t rows, uint64_t cols,
                              uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swz) {
    CUtensorMap m;
    char err[256];
    if (sg_tmap_encode_2d(&m, type, elem, base, rows, cols, box_rows, box_cols, swz, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    return m;
}

static CUtensorMap sg_tmap_bf16(const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows, uint32_t box_cols) {
    return sg_tmap_2d(base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, rows, cols, box_rows, box_cols,
                      CU_TENSOR_MAP_SWIZZLE_128B);
}

static __nv_bfloat16 *sg_upload_bf16(const float *h, size_t n) {
    std::vector<__nv_bfloat16> t(n);
    for (size_t i = 0; i < n; i++) t[i] = __float2bfloat16_rn(h[i]);
    __nv_bfloat16 *d = NULL;
    SG_CK(cudaMalloc(&d, n * sizeof *d));
    SG_CK(cudaMemcpy(d, t.data(), n * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}

static float *sg_upload_f32(const float *h, size_t n) {
    if (!h) return NULL;
    float *d = NULL;
    SG_CK(cudaMalloc(&d, n * sizeof *d));
    SG_CK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}

static void sg_download_bf16(float *h, const __nv_bfloat16 *d, size_t n) {
    std::vector<__nv_bfloat16> t(n);
    SG_CK(cudaMemcpy(t.data(), d, n * sizeof *d, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) h[i] = __bfloat162float(t[i]);
}

static int sg_sm_count(void) {
    int dev = 0, n = 0;
    SG_CK(cudaGetDevice(&dev));
    SG_CK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
}

extern "C" int sg_sm90_lab_available(char *err, size_t errlen) { return sg_lab_sm90_sms(err, errlen) > 0; }

extern "C" int sg_sm90_lab_gemm(sg_sm90_lab_gemm_args *a, char *err, size_t errlen) {
    if (!sg_sm90_lab_available(err, errlen)) return -1;
    const int bn = a->bn ? a->bn : SG_GEMM_BN;
    const int pp = a->pingpong, wg64 = pp == 3 || pp == 4;  // 3, 4: 64 x 256 warpgroup tiles
    const int st = a->stages ? a->stages : SG_GEMM_STAGES;
    const int mc = pp == 2 || pp == 4 || pp == 5;  // 2-CTA clusters, the W block multicast
    const int t192 = pp == 6;                      // 256 x 192 tiles, two consumer warpgroups of 128 x 192
    if (a->M < 1 || (bn != 128 && bn != 256) || pp < 0 || pp > 6 || ((pp == 1 || pp == 2) && bn != 128) ||
        ((wg64 || pp == 5 || t192) && bn != 256) || (st != SG_GEMM_STAGES && (st != 3 || pp)) ||
        a->N < bn || a->N % bn || (t192 && a->N % SG_LAB192_BN) || a->K < SG_GEMM_BK || a->K % SG_GEMM_BK || !a->A ||
        !a->W || !a->out) {
        snprintf(err, errlen, "sm90 lab gemm: bad shape M %d N %d K %d tile %d schedule %d (need M >= 1, tile 128 or "
                 "256, schedule 0-6, ping-pong (1, 2) only with 128, 64 x 256 warpgroup tiles (3, 4), the "
                 "cooperative multicast (5) and 256 x 192 tiles (6) only with 256, "
                 "a 3-stage ring only for schedule 0, N %% tile == 0 (and N %% 192 for 6), K %% %d == 0)", a->M,
                 a->N, a->K, bn, pp, SG_GEMM_BK);
        return -1;
    }
    const size_t M = a->M, N = a->N, K = a->K;
    __nv_bfloat16 *dA = sg_upload_bf16(a->A, M * K), *dW = sg_upload_bf16(a->W, N * K);
    float *dbias = sg_upload_f32(a->bias, N), *dres = sg_upload_f32(a->residual, M * N);
    void *dout = NULL;
    const size_t out_bytes = M * N * (a->out_bf16 ? 2 : 4);
    SG_CK(cudaMalloc(&dout, out_bytes));
    SG_CK(cudaMemset(dout, 0xFF, out_bytes));  // NaN in both fp32 and bf16: an unwritten element cannot pass
    const CUtensorMap mA = sg_tmap_bf16(dA, M, K, wg64 ? 64 : t192 ? SG_LAB192_BM : SG_GEMM_BM, SG_GEMM_BK);
    // multicast: halves; schedule 6: 192-row boxes
    const CUtensorMap mW = sg_tmap_bf16(dW, N, K, mc ? bn / 2 : t192 ? SG_LAB192_BN : bn, SG_GEMM_BK);
    sg_sm90_epilogue ep = {dbias, a->gelu, dres, (int)N, a->out_bf16 == 0 ? (float *)dout : NULL,
                           a->out_bf16 == 1 ? (__nv_bfloat16 *)dout : NULL, (int)N};
    const int smem = (wg64 ? SG_LAB64_SMEM : st * (t192 ? SG_LAB192_STAGE_BYTES : SG_GEMM_STAGE_BYTES(bn))) +
                     1024;  // + 1024: ring alignment
    void (*kern)(const CUtensorMap, const CUtensorMap, int, int, int, sg_sm90_epilogue) =
        bn == 256 ? sg_sm90_lab_gemm_kernel<256, 0>
                  : (a->pingpong ? sg_sm90_lab_gemm_kernel<128, 1> : sg_sm90_lab_gemm_kernel<128, 0>);
    SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int bm = wg64 ? 64 : t192 ? SG_LAB192_BM : SG_GEMM_BM;
    int threads = SG_LAB_THREADS;
    if (t192) {
        kern = sg_sm90_lab_gemm192_kernel<SG_GEMM_STAGES>;
        threads = SG_LAB192_THREADS;
        SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    } else if (wg64) {
        kern = pp == 4 ? sg_sm90_lab_gemm64_kernel<1> : sg_sm90_lab_gemm64_kernel<0>;
        SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    } else if (st == 3) {
        kern = bn == 256 ? sg_sm90_lab_gemm_kernel<256, 0, 0, 3> : sg_sm90_lab_gemm_kernel<128, 0, 0, 3>;
        SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    }
    const int tiles = (int)((M + bm - 1) / bm * (N / (t192 ? SG_LAB192_BN : bn)));
    int grid = tiles < sg_sm_count() ? tiles : sg_sm_count();
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute cluster[1];
    if (mc) {  // 2-CTA clusters: one per pair of row tiles and column tile, at most the SMs' pairs
        if (pp == 2) kern = sg_sm90_lab_gemm_kernel<128, 1, 1>;
        if (pp == 5) kern = sg_sm90_lab_gemm_kernel<256, 0, 1>;
        SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        const int units = (int)(((M + bm - 1) / bm + 1) / 2 * (N / bn));
        grid = 2 * (units < sg_sm_count() / 2 ? units : sg_sm_count() / 2);
        cluster[0].id = cudaLaunchAttributeClusterDimension;
        cluster[0].val.clusterDim.x = 2;
        cluster[0].val.clusterDim.y = cluster[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(SG_LAB_THREADS);
        cfg.dynamicSmemBytes = smem;
        cfg.attrs = cluster;
        cfg.numAttrs = 1;
    }
    auto launch = [&] {
        if (mc)
            SG_CK(cudaLaunchKernelEx(&cfg, kern, mA, mW, (int)M, (int)N, (int)K, ep));
        else
            kern<<<grid, threads, smem>>>(mA, mW, (int)M, (int)N, (int)K, ep);
    };
    launch();
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    if (a->out_bf16 == 1) {
        sg_download_bf16(a->out, (const __nv_bfloat16 *)dout, M * N);
    } else if (a->out_bf16 == 0) {
        SG_CK(cudaMemcpy(a->out, dout, M * N * 4, cudaMemcpyDeviceToHost));
    }
    a->t0 = sg_lab_wall_s();
    a->us = sg_lab_time_us(a->reps, launch);
    a->t1 = sg_lab_wall_s();
    a->tflops = a->reps > 0 ? 2.0 * M * N * K / (a->us * 1e-6) / 1e12 : 0;
    SG_CK(cudaFree(dA));
    SG_CK(cudaFree(dW));
    SG_CK(cudaFree(dbias));
    SG_CK(cudaFree(dres));
    SG_CK(cudaFree(dout));
    return 0;
}

extern "C" int sg_sm90_lab_attn(sg_sm90_lab_attn_args *a, char *err, size_t errlen) {
    if (!sg_sm90_lab_available(err, errlen)) return -1;
    if (a->B < 1 || !a->qkv || !a->out) {
        snprintf(err, errlen, "sm90 lab attention: bad arguments (B %d)", a->B);
        return -1;
    }
    const size_t M = (size_t)a->B * SG_ATTN_T;
    __nv_bfloat16 *dqkv = sg_upload_bf16(a->qkv, M * 2304), *dout = NULL;
    SG_CK(cudaMalloc(&dout, M * 768 * 2));
    SG_CK(cudaMemset(dout, 0xFF, M * 768 * 2));  // bf16 NaN: an unwritten element cannot pass
    const CUtensorMap m = sg_tmap_bf16(dqkv, M, 2304, SG_ATTN_ROWS, SG_ATTN_DH);
    const int smem = SG_ATTN_SMEM_BYTES + 1024;
    SG_CK(cudaFuncSetAttribute(sg_sm90_lab_attn_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int tasks = a->B * 12, grid = tasks < sg_sm_count() ? tasks : sg_sm_count();
    sg_sm90_lab_attn_kernel<<<grid, SG_LAB_THREADS, smem>>>(m, a->B, dout);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    sg_download_bf16(a->out, dout, M * 768);
    a->us = sg_lab_time_us(a->reps, [&] { sg_sm90_lab_attn_kernel<<<grid, SG_LAB_THREADS, smem>>>(m, a->B, dout); });
    SG_CK(cudaFree(dqkv));
    SG_CK(cudaFree(dout));
    return 0;
}

// Task table of one MLP launch with tiles_m row tiles, in a topological order that lets FC2 start early: after
// FC1 of row tile g comes FC2 of row tile g - lag, where lag row groups (30 tasks each) cover one wave of the
// grid, so an FC2 task is usually reached after its row's FC1 tiles are done.
static std::vector<int> sg_mlp_tasks(int tiles_m, int grid) {
    const int n1 = 3072 / SG_GEMM_BN, n2 = 768 / SG_GEMM_BN, lag = (grid + n1 + n2 - 1) / (n1 + n2) + 1;
    std::vector<int> t;
    for (int g = 0; g < tiles_m + lag; g++) {
        if (g < tiles_m)
            for (int n = 0; n < n1; n++) t.push_back((g << 16) | n);
        if (g - lag >= 0)
            for (int n = 0; n < n2; n++) t.push_back((int)(0x80000000u | ((unsigned)(g - lag) << 16) | (unsigned)n));
    }
    return t;
}

extern "C" int sg_sm90_lab_mlp(sg_sm90_lab_mlp_args *a, char *err, size_t errlen) {
    if (!sg_sm90_lab_available(err, errlen)) return -1;
    if (a->M < 1 || (a->M + SG_GEMM_BM - 1) / SG_GEMM_BM > SG_MLP_MAX_TILES_M || !a->X || !a->W1 || !a->b1 || !a->W2 ||
        !a->b2 || !a->residual || !a->out) {
        snprintf(err, errlen, "sm90 lab mlp: bad arguments (M %d, at most %d rows)", a->M,
                 SG_MLP_MAX_TILES_M * SG_GEMM_BM);
        return -1;
    }
    const size_t M = a->M;
    __nv_bfloat16 *dX = sg_upload_bf16(a->X, M * 768), *dW1 = sg_upload_bf16(a->W1, 3072 * 768);
    __nv_bfloat16 *dW2 = sg_upload_bf16(a->W2, 768 * 3072), *dH = NULL;
    float *db1 = sg_upload_f32(a->b1, 3072), *db2 = sg_upload_f32(a->b2, 768);
    float *dres = sg_upload_f32(a->residual, M * 768), *dout = NULL;
    unsigned *dcnt = NULL;
    SG_CK(cudaMalloc(&dH, M * 3072 * 2));
    SG_CK(cudaMalloc(&dout, M * 768 * 4));
    SG_CK(cudaMalloc(&dcnt, 2 * SG_MLP_BANK * sizeof *dcnt));
    SG_CK(cudaMemset(dcnt, 0, 2 * SG_MLP_BANK * sizeof *dcnt));  // bank 0 for the first launch

    const int smem = SG_GEMM_SMEM_BYTES(SG_GEMM_BN) + 1024;
    void (*kern)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const CUtensorMap, const int *, int, int,
                 sg_sm90_epilogue, sg_sm90_epilogue, unsigned *, int) =
        a->ticket ? (a->pingpong ? sg_sm90_lab_mlp_kernel<1, 1> : sg_sm90_lab_mlp_kernel<0, 1>)
                  : (a->pingpong ? sg_sm90_lab_mlp_kernel<1, 0> : sg_sm90_lab_mlp_kernel<0, 0>);
    SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    SG_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, SG_LAB_THREADS, smem));
    if (per_sm < 1) {
        fprintf(stderr, "%s:%d: the MLP kernel cannot be resident (occupancy 0)\n", __FILE__, __LINE__);
        abort();
    }
    const int grid = sg_sm_count();
    a->grid = grid;

    // Task tables for every row count used: the stress sizes (images 1, 2, 5, 8, 3, 64 capped at M) and M.
    const int stress_imgs[6] = {1, 2, 5, 8, 3, 64};
    std::vector<int> sizes;
    for (int i = 0; i < 6; i++) sizes.push_back((int)std::min<size_t>(M, (size_t)stress_imgs[i] * 196));
    sizes.push_back((int)M);
    std::vector<int> all, off, cnt;
    for (int m : sizes) {
        std::vector<int> t = sg_mlp_tasks((m + SG_GEMM_BM - 1) / SG_GEMM_BM, grid);
        off.push_back((int)all.size());
        cnt.push_back((int)t.size());
        all.insert(all.end(), t.begin(), t.end());
    }
    int *dtasks = NULL;
    SG_CK(cudaMalloc(&dtasks, all.size() * sizeof(int)));
    SG_CK(cudaMemcpy(dtasks, all.data(), all.size() * sizeof(int), cudaMemcpyHostToDevice));

    const CUtensorMap mX = sg_tmap_bf16(dX, M, 768, SG_GEMM_BM, SG_GEMM_BK);
    const CUtensorMap mW1 = sg_tmap_bf16(dW1, 3072, 768, SG_GEMM_BN, SG_GEMM_BK);
    const CUtensorMap mH = sg_tmap_bf16(dH, M, 3072, SG_GEMM_BM, SG_GEMM_BK);
    const CUtensorMap mW2 = sg_tmap_bf16(dW2, 768, 3072, SG_GEMM_BN, SG_GEMM_BK);
    const sg_sm90_epilogue ep1 = {db1, 1, NULL, 0, NULL, dH, 3072};
    const sg_sm90_epilogue ep2 = {db2, 0, dres, 768, dout, NULL, 768};

    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;  // all CTAs resident, or the launch fails instead of hanging
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(SG_LAB_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = 0;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    long launches = 0;
    auto launch = [&](int which) {
        SG_CK(cudaLaunchKernelEx(&cfg, kern, mX, mW1, mH, mW2, (const int *)(dtasks + off[which]),
                                 cnt[which], sizes[which], ep1, ep2, dcnt, (int)(launches & 1)));
        launches++;
    };
    for (int i = 0; i < a->stress; i++) launch(i % 6);
    SG_CK(cudaDeviceSynchronize());
    SG_CK(cudaMemset(dH, 0xFF, M * 3072 * 2));  // NaN: a row FC2 read before FC1 wrote it would show
    SG_CK(cudaMemset(dout, 0xFF, M * 768 * 4));
    launch(6);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    SG_CK(cudaMemcpy(a->out, dout, M * 768 * 4, cudaMemcpyDeviceToHost));
    a->us = sg_lab_time_us(a->reps, [&] { launch(6); });
    a->tflops = a->reps > 0 ? 2.0 * M * 768 * 3072 * 2 / (a->us * 1e-6) / 1e12 : 0;
    SG_CK(cudaFree(dX));
    SG_CK(cudaFree(dW1));
    SG_CK(cudaFree(dW2));
    SG_CK(cudaFree(dH));
    SG_CK(cudaFree(db1));
    SG_CK(cudaFree(db2));
    SG_CK(cudaFree(dres));
    SG_CK(cudaFree(dout));
    SG_CK(cudaFree(dcnt));
    SG_CK(cudaFree(dtasks));
    return 0;
}

extern "C" int sg_sm90_lab_layernorm(sg_sm90_lab_ln_args *a, char *err, size_t errlen) {
    if (!sg_sm90_lab_available(err, errlen)) return -1;
    if (a->M < 1 || !a->x || !a->gamma || !a->beta || !a->out) {
        snprintf(err, errlen, "sm90 lab layernorm: bad arguments (M %d)", a->M);
        return -1;
    }
    const size_t M = a->M;
    float *dx = sg_upload_f32(a->x, M * SG_LN_D), *dg = sg_upload_f32(a->gamma, SG_LN_D);
    float *db = sg_upload_f32(a->beta, SG_LN_D);
    __nv_bfloat16 *dy = NULL;
    SG_CK(cudaMalloc(&dy, M * SG_LN_D * 2));
    SG_CK(cudaMemset(dy, 0xFF, M * SG_LN_D * 2));  // bf16 NaN: an unwritten element cannot pass
    const int tiles = (int)((M + SG_GEMM_BM - 1) / SG_GEMM_BM), grid = tiles < sg_sm_count() ? tiles : sg_sm_count();
    sg_sm90_lab_ln_kernel<<<grid, SG_LAB_THREADS>>>(dx, dg, db, a->eps, dy, (int)M);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    sg_download_bf16(a->out, dy, M * SG_LN_D);
    a->us = sg_lab_time_us(a->reps,
                           [&] { sg_sm90_lab_ln_kernel<<<grid, SG_LAB_THREADS>>>(dx, dg, db, a->eps, dy, (int)M); });
    SG_CK(cudaFree(dx));
    SG_CK(cudaFree(dg));
    SG_CK(cudaFree(db));
    SG_CK(cudaFree(dy));
    return 0;
}

// ---------------------------------------------------------------------------------------------------- FP8
// The FP8 GEMM task (sm90_gemm_fp8.cuh) in the lab: quantise kernels for A (1 x 128) and W (128 x 128), and a
// persistent ping-pong kernel with the megakernel's roles, tiles taken round-robin, column tile fastest.
#include "../sm90/sm90_gemm_fp8.cuh"

__global__ void sg_sm90_lab_fp8_quant_act_kernel(const float *x, int M, int K, uint8_t *q, float *s_t, int ld_s,
                                                 int pow2) {
    const int w = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), kbs = K / SG_FP8_BK;
    if (w >= M * kbs) return;  // whole warps: blockDim is a multiple of 32
    sg_fp8_quant_act_warp(x, K, w / kbs, w % kbs, q, s_t, ld_s, pow2);
}

__global__ void __launch_bounds__(256) sg_sm90_lab_fp8_quant_w_kernel(const float *w, int K, uint8_t *q, float *s,
                                                                      int pow2) {
    __shared__ float red[8];
    sg_fp8_quant_w_block(w, K, blockIdx.y, blockIdx.x, q, s, pow2, red);
}

// SUB: 0, 1 = ping-pong consumers (sg_sm90_fp8_consume_pp<SUB>), 2 = cooperative (sg_sm90_fp8_consume_coop).
template <int SUB>
__global__ void __launch_bounds__(SG_LAB_THREADS, 1)
sg_sm90_lab_gemm_fp8_kernel(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapSA,
                            const __grid_constant__ CUtensorMap mapW, const float *sw, int M, int N, int K,
                            sg_sm90_fp8_epilogue ep) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_FP8_STAGES], empty[SG_FP8_STAGES];
    uint8_t *base = sg_align1024(smem_raw);
    sg_sm90_fp8_smem sm = {base, reinterpret_cast<float *>(base + SG_FP8_STAGES * SG_FP8_STAGE_BYTES), full, empty};
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_FP8_STAGES; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], SUB == 2 ? 2 * SG_FP8_EMPTY_ARRIVALS : SG_FP8_EMPTY_ARRIVALS);
        }
        sg_fence_mbar_init();
    }
    __syncthreads();
    const int tiles_n = N / SG_FP8_BN, tiles = (M + SG_FP8_BM - 1) / SG_FP8_BM * tiles_n, kbs = K / SG_FP8_BK;
    const int wg = threadIdx.x / 128;
    sg_ring ring = {0, 0};
    if (wg == 0) {
        sg_setmaxnreg_dec<SG_LAB_REG_PRODUCER>();
        if (threadIdx.x == 0) {
            sg_tma_prefetch_desc(&mapA);
            sg_tma_prefetch_desc(&mapSA);
            sg_tma_prefetch_desc(&mapW);
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x)
                sg_sm90_fp8_produce(&mapA, &mapSA, &mapW, (tile / tiles_n) * SG_FP8_BM, (tile % tiles_n) * SG_FP8_BN,
                                    K, sm, ring);
        }
    } else {
        sg_setmaxnreg_inc<SG_LAB_REG_CONSUMER>();
        int j = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, j++) {
            const int mt = tile / tiles_n, nt = tile % tiles_n;
            if constexpr (SUB == 2) {
                sg_sm90_fp8_consume_coop(wg - 1, mt * SG_FP8_BM, nt * SG_FP8_BN, M, K, sw + (size_t)nt * kbs, ep, sm,
                                         ring);
            } else if ((j & 1) == wg - 1) {
                if (j > 0) sg_named_bar(SG_PP_BAR + (wg - 1), 256);  // the other warpgroup's K loop is done
                const int next = tile + (int)gridDim.x < tiles ? SG_PP_BAR + (2 - wg) : -1;
                sg_sm90_fp8_consume_pp<SUB == 1>(mt * SG_FP8_BM, nt * SG_FP8_BN, M, K, sw + (size_t)nt * kbs, ep, sm,
                                                 ring, next);
            } else {
                for (int i = 0; i < kbs; i++) sg_ring_next(ring, SG_FP8_STAGES);
            }
        }
    }
}

extern "C" int sg_sm90_lab_gemm_fp8(sg_sm90_lab_gemm_fp8_args *a, char *err, size_t errlen) {
    if (!sg_sm90_lab_available(err, errlen)) return -1;
    if (a->M < 1 || a->N < SG_FP8_BN || a->N % SG_FP8_BN || a->K < SG_FP8_BK || a->K % SG_FP8_BK || !a->A || !a->W ||
        a->out_mode < 0 || a->out_mode > 4 || (a->out_mode != 2 && a->out_mode != 4 && !a->out) ||
        (a->out_mode >= 3 && (!a->out_q || !a->out_s)) || a->sub < 0 || a->sub > 2) {
        snprintf(err, errlen, "sm90 lab gemm fp8: bad arguments M %d N %d K %d out mode %d variant %d (need M >= 1, "
                 "N %% %d == 0, K %% %d == 0, mode 0-4 with its outputs, variant 0-2)", a->M, a->N, a->K,
                 a->out_mode, a->sub, SG_FP8_BN, SG_FP8_BK);
        return -1;
    }
    const size_t M = a->M, N = a->N, K = a->K, kbs = K / SG_FP8_BK;
    const size_t ld_s = (M + 3) / 4 * 4;  // TMA: the global row stride of sa_t is a multiple of 16 bytes
    const size_t ld_o = (M + 3) / 4 * 4;
    float *dA = sg_upload_f32(a->A, M * K), *dW = sg_upload_f32(a->W, N * K);
    float *dbias = sg_upload_f32(a->bias, N), *dres = sg_upload_f32(a->residual, M * N);
    uint8_t *qa = NULL, *qw = NULL, *oq = NULL;
    float *sa_t = NULL, *sw = NULL, *os = NULL;
    void *dout = NULL;
    SG_CK(cudaMalloc(&qa, M * K));
    SG_CK(cudaMalloc(&qw, N * K));
    SG_CK(cudaMalloc(&sa_t, kbs * ld_s * 4));
    SG_CK(cudaMemset(sa_t, 0, kbs * ld_s * 4));  // padding columns M..ld_s: zero scales
    SG_CK(cudaMalloc(&sw, N / SG_FP8_BN * kbs * 4));
    const size_t out_bytes = M * N * (a->out_mode == 1 ? 2 : 4);
    SG_CK(cudaMalloc(&dout, out_bytes));
    SG_CK(cudaMemset(dout, 0xFF, out_bytes));  // NaN in fp32 and bf16: an unwritten element cannot pass
    if (a->out_mode >= 3) {
        SG_CK(cudaMalloc(&oq, M * N));
        SG_CK(cudaMemset(oq, 0xFF, M * N));  // E4M3 NaN code
        SG_CK(cudaMalloc(&os, N / SG_FP8_BN * ld_o * 4));
        SG_CK(cudaMemset(os, 0xFF, N / SG_FP8_BN * ld_o * 4));
    }
    const int qthreads = 256, qblocks = (int)((M * kbs * 32 + qthreads - 1) / qthreads);
    sg_sm90_lab_fp8_quant_act_kernel<<<qblocks, qthreads>>>(dA, (int)M, (int)K, qa, sa_t, (int)ld_s, a->pow2);
    SG_CK(cudaGetLastError());
    sg_sm90_lab_fp8_quant_w_kernel<<<dim3((unsigned)kbs, (unsigned)(N / SG_FP8_BN)), 256>>>(dW, (int)K, qw, sw, a->pow2);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    if (a->qa) SG_CK(cudaMemcpy(a->qa, qa, M * K, cudaMemcpyDeviceToHost));
    if (a->qw) SG_CK(cudaMemcpy(a->qw, qw, N * K, cudaMemcpyDeviceToHost));
    if (a->sw) SG_CK(cudaMemcpy(a->sw, sw, N / SG_FP8_BN * kbs * 4, cudaMemcpyDeviceToHost));
    if (a->sa) {
        std::vector<float> t(kbs * ld_s);
        SG_CK(cudaMemcpy(t.data(), sa_t, t.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t r = 0; r < M; r++)
            for (size_t b = 0; b < kbs; b++) a->sa[r * kbs + b] = t[b * ld_s + r];
    }

    const CUtensorMap mA = sg_tmap_2d(qa, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, M, K, SG_FP8_BM, SG_FP8_BK,
                                      CU_TENSOR_MAP_SWIZZLE_128B);
    const CUtensorMap mW = sg_tmap_2d(qw, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, N, K, SG_FP8_BN, SG_FP8_BK,
                                      CU_TENSOR_MAP_SWIZZLE_128B);
    const CUtensorMap mSA = sg_tmap_2d(sa_t, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, kbs, ld_s, 1, SG_FP8_BM,
                                       CU_TENSOR_MAP_SWIZZLE_NONE);
    sg_sm90_fp8_epilogue ep = {{dbias, a->gelu, dres, (int)N,
                                (a->out_mode == 0 || a->out_mode == 3) ? (float *)dout : NULL,
                                a->out_mode == 1 ? (__nv_bfloat16 *)dout : NULL, (int)N},
                               oq, os, (int)ld_o, a->pow2};
    const int smem = SG_FP8_SMEM_BYTES + 1024;  // + 1024: manual alignment of the ring
    void (*kern)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const float *, int, int, int,
                 sg_sm90_fp8_epilogue) = a->sub == 2   ? sg_sm90_lab_gemm_fp8_kernel<2>
                                         : a->sub == 1 ? sg_sm90_lab_gemm_fp8_kernel<1>
                                                       : sg_sm90_lab_gemm_fp8_kernel<0>;
    SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int tiles = (int)((M + SG_FP8_BM - 1) / SG_FP8_BM * (N / SG_FP8_BN));
    const int grid = tiles < sg_sm_count() ? tiles : sg_sm_count();
    kern<<<grid, SG_LAB_THREADS, smem>>>(mA, mSA, mW, sw, (int)M, (int)N, (int)K, ep);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    if (a->out_mode == 1) {
        sg_download_bf16(a->out, (const __nv_bfloat16 *)dout, M * N);
    } else if (a->out_mode == 0 || a->out_mode == 3) {
        SG_CK(cudaMemcpy(a->out, dout, M * N * 4, cudaMemcpyDeviceToHost));
    }
    if (a->out_mode >= 3) {
        SG_CK(cudaMemcpy(a->out_q, oq, M * N, cudaMemcpyDeviceToHost));
        std::vector<float> t(N / SG_FP8_BN * ld_o);
        SG_CK(cudaMemcpy(t.data(), os, t.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t r = 0; r < M; r++)
            for (size_t b = 0; b < N / SG_FP8_BN; b++) a->out_s[r * (N / SG_FP8_BN) + b] = t[b * ld_o + r];
    }
    a->us = sg_lab_time_us(a->reps, [&] {
        kern<<<grid, SG_LAB_THREADS, smem>>>(mA, mSA, mW, sw, (int)M, (int)N, (int)K, ep);
    });
    a->quant_us = sg_lab_time_us(a->reps, [&] {
        sg_sm90_lab_fp8_quant_act_kernel<<<qblocks, qthreads>>>(dA, (int)M, (int)K, qa, sa_t, (int)ld_s, a->pow2);
    });
    a->tflops = a->reps > 0 ? 2.0 * M * N * K / (a->us * 1e-6) / 1e12 : 0;
    SG_CK(cudaFree(dA));
    SG_CK(cudaFree(dW));
    SG_CK(cudaFree(dbias));
    SG_CK(cudaFree(dres));
    SG_CK(cudaFree(qa));
    SG_CK(cudaFree(qw));
    SG_CK(cudaFree(sa_t));
    SG_CK(cudaFree(sw));
    SG_CK(cudaFree(dout));
    SG_CK(cudaFree(oq));
    SG_CK(cudaFree(os));
    return 0;
}
