// kernel/mega/mega_ring.cuh — the mbarrier ring between a producer thread and its consumers, and the producer's
// TMA loads of one GEMM tile: the part of a GEMM task that does not depend on the MMA instructions, shared by the
// Hopper and Blackwell megakernels (through mega_kernel.cuh and their produce_gemm) and the lab's GEMM kernels.
//
// A ring stage holds one K block (BK = 64 bf16 = one 128-byte swizzle row) of A (128 rows of the activations
// [M, K]) followed by the same K block of W (BN rows of the nn.Linear weight [N, K]); both K-major, as TMA writes
// them with CU_TENSOR_MAP_SWIZZLE_128B. full[s] completes when stage s's bytes have landed (the producer's
// expect_tx + TMA complete_tx); empty[s] when its consumers are done with it. The ring position (stage, phase)
// is carried from task to task, so a persistent CTA runs tiles back to back without re-initialising barriers.
#ifndef SG_MEGA_RING_CUH
#define SG_MEGA_RING_CUH

#include "tma_ptx.cuh"

#define SG_GEMM_BM 128
#define SG_GEMM_BK 64
#define SG_GEMM_A_BYTES (SG_GEMM_BM * SG_GEMM_BK * 2)
#define SG_GEMM_B_BYTES(bn) ((bn) * SG_GEMM_BK * 2)
#define SG_GEMM_STAGE_BYTES(bn) (SG_GEMM_A_BYTES + SG_GEMM_B_BYTES(bn))

// Position in the mbarrier ring; each role keeps its own copy and advances it identically.
typedef struct sg_ring {
    uint32_t stage, phase;
} sg_ring;

// The stage before r's (the one the last sg_ring_next left).
__device__ __forceinline__ uint32_t sg_ring_prev(const sg_ring &r, int stages) {
    return r.stage == 0 ? (uint32_t)stages - 1u : r.stage - 1u;
}
// An attention or pool task's Q, K and V stages (j = 0, 1, 2; a head product's weight and scratch stages, j = 0, 1):
// consecutive stages of the ring from wherever it stands, so wrapped in a ring of 3 or 4 (the megakernel's
// sg_mega_ring_stages); the consumer packs their indices 4 bits each, and gives each back by its index.
__device__ __forceinline__ int sg_mega_qkv_stage(int sqkv, int j) { return (sqkv >> (4 * j)) & 15; }
__device__ __forceinline__ void sg_ring_next(sg_ring &r, int stages) {
    if (++r.stage == (uint32_t)stages) {
        r.stage = 0;
        r.phase ^= 1u;
    }
}

// Shared memory of one ring: its stages (1024-aligned) and their barriers.
typedef struct sg_ring_smem {
    uint8_t *stages;   // STAGES x (A block, W block of BN rows), base 1024-byte aligned
    uint64_t *full;    // [STAGES], count 1 (+ tx bytes)
    uint64_t *empty;   // [STAGES], count 2 (the lab's cooperative GEMM: both consumer warpgroups) or 1
} sg_ring_smem;

// A consumer (one thread) is done with ring stage `stage`: one arrival on its empty barrier, and, when peer >= 0
// (a 2-CTA cluster whose producers both write into each stage: the lab's multicast GEMM), one on the same
// barrier in cluster CTA `peer`.
__device__ __forceinline__ void sg_ring_free(const sg_ring_smem &sm, uint32_t stage, int peer) {
    sg_mbar_arrive(&sm.empty[stage]);
    if (peer >= 0) sg_mbar_arrive_remote(&sm.empty[stage], (uint32_t)peer);
}

// Producer side of one tile: called by a single thread. Streams K/BK blocks of A rows [m0, m0+128) and W rows
// [n0, n0+BN). mapA: box {64, 128} over [M, K]; mapW: box {64, BN} over [N, K]; both SWIZZLE_128B.
// STAGES: ring depth (the megakernel gives each consumer its own ring of SG_MEGA_STAGES; the lab's GEMM kernels
// use SG_GEMM_STAGES).
// rank >= 0: this CTA is CTA `rank` of a 2-CTA cluster whose CTAs take tiles of the same W columns (the lab's
// multicast GEMM, BN = 128; mapW: box {64, 64}): it loads its own A block and half the W block, rows [n0 + 64 rank,
// +64), multicast into the same place of both CTAs' stage (64 rank rows into the W block), so an SM pulls A + W / 2
// from L2 per K block instead of A + W. Both producers write every stage, so a stage is refilled only once the
// consumers of both CTAs freed it (its empty barrier counts both: sg_ring_free with the peer). The peer's half may
// land before this CTA's expect_tx for the phase; the barrier's transaction count goes below zero until then, and
// the phase cannot complete before this producer's arrival.
// BM: A rows per block (mapA: box {64, BM}; the lab's 64 x 256 warpgroup tiles use 64); a stage is the A block
// then the W block, BM x 64 + BN x 64 bf16.
template <int BN, int STAGES, int BM = SG_GEMM_BM>
__device__ __forceinline__ void sg_gemm_produce(const CUtensorMap *mapA, const CUtensorMap *mapW, int m0, int n0,
                                                int K, const sg_ring_smem &sm, sg_ring &ring, int rank = -1) {
    constexpr uint32_t a_bytes = BM * SG_GEMM_BK * 2, stage = a_bytes + SG_GEMM_B_BYTES(BN);
    for (int k0 = 0; k0 < K; k0 += SG_GEMM_BK) {
        sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
        uint8_t *a = sm.stages + ring.stage * stage;
        sg_mbar_arrive_expect_tx(&sm.full[ring.stage], stage);  // with a multicast: both halves, one the peer's
        sg_tma_load_2d(a, mapA, &sm.full[ring.stage], k0, m0);
        if (rank < 0)
            sg_tma_load_2d(a + a_bytes, mapW, &sm.full[ring.stage], k0, n0);
        else
            sg_tma_load_2d_mcast(a + a_bytes + rank * SG_GEMM_B_BYTES(BN / 2), mapW, &sm.full[ring.stage], k0,
                                 n0 + BN / 2 * rank, 0x3);
        sg_ring_next(ring, STAGES);
    }
}

// The megakernel's GEMM task (kernel/mega/mega_kernel.cuh): per K block one stage of A rows [m0, m0+128) followed by
// the W rows of both warpgroups' halves, [n0, n0+128) and [n0+128, n0+256) (mapW: box {64, 128}), so both halves
// read the same A block. STAGES: the megakernel's ring depth. shape (the task's, mega_plan.h's sg_mega_shape) 1: only
// W rows [n0, n0+128) (a 128 x 128 task, whose warpgroups take the A block's 64-row halves); the stage keeps its
// size. 2: a 128 x 64 task (mapW: box {64, 64}), whose K block (A 16 KB + W 8 KB) is half a stage, so a stage holds
// two consecutive K blocks, the second SG_GEMM_N64_PAIR bytes in (K is a multiple of 128): twice the bytes in flight
// per ring slot, for the small batches' tasks, which stream long K blocks through one SM and wait on bytes in flight
// (FC2: 768 KB of A each; measured: docs/perf-notes.md, session 6). 3: a 64 x 64 task (mapA and mapW: boxes {64,
// 64}), K block A 8 KB + W 8 KB, three consecutive K blocks a stage, SG_GEMM_H64_BLOCK apart (K a multiple of 192).
// stages: the ring's depth in this launch (3, or 4 for the launches of shapes 2 and 3: sg_mega_ring_stages).
#define SG_GEMM_N64_PAIR (SG_GEMM_A_BYTES + SG_GEMM_B_BYTES(64))  // 24 KB: the second K block of a narrow64 stage
#define SG_GEMM_H64_BLOCK (2 * SG_GEMM_B_BYTES(64))                // 16 KB: a 64 x 64 task's K block (A, then W)
#define SG_GEMM_H64_BLOCKS 3                                       // ... per stage
__device__ __forceinline__ void sg_gemm_produce_wide(const CUtensorMap *mapA, const CUtensorMap *mapW, int m0, int n0,
                                                     int K, const sg_ring_smem &sm, sg_ring &ring, int shape,
                                                     int stages) {
    constexpr uint32_t half = SG_GEMM_B_BYTES(128), stage = SG_GEMM_A_BYTES + 2 * half;
    static_assert(2 * SG_GEMM_N64_PAIR <= stage && SG_GEMM_N64_PAIR % 1024 == 0, "two narrow64 K blocks per stage");
    static_assert(SG_GEMM_H64_BLOCKS * SG_GEMM_H64_BLOCK == stage, "three 64 x 64 K blocks fill a stage");
    if (shape == 3) {
        for (int k0 = 0; k0 < K; k0 += SG_GEMM_H64_BLOCKS * SG_GEMM_BK) {
            sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
            uint8_t *a = sm.stages + ring.stage * stage;
            sg_mbar_arrive_expect_tx(&sm.full[ring.stage], stage);
#pragma unroll
            for (int j = 0; j < SG_GEMM_H64_BLOCKS; j++) {
                sg_tma_load_2d(a + j * SG_GEMM_H64_BLOCK, mapA, &sm.full[ring.stage], k0 + j * SG_GEMM_BK, m0);
                sg_tma_load_2d(a + j * SG_GEMM_H64_BLOCK + SG_GEMM_B_BYTES(64), mapW, &sm.full[ring.stage],
                               k0 + j * SG_GEMM_BK, n0);
            }
            sg_ring_next(ring, stages);
        }
        return;
    }
    const int step = shape == 2 ? 2 * SG_GEMM_BK : SG_GEMM_BK;
    const uint32_t bytes = shape == 2 ? 2 * SG_GEMM_N64_PAIR : SG_GEMM_A_BYTES + (2 * half >> shape);
    for (int k0 = 0; k0 < K; k0 += step) {
        sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
        uint8_t *a = sm.stages + ring.stage * stage;
        sg_mbar_arrive_expect_tx(&sm.full[ring.stage], bytes);
        sg_tma_load_2d(a, mapA, &sm.full[ring.stage], k0, m0);
        sg_tma_load_2d(a + SG_GEMM_A_BYTES, mapW, &sm.full[ring.stage], k0, n0);
        if (shape == 2) {
            sg_tma_load_2d(a + SG_GEMM_N64_PAIR, mapA, &sm.full[ring.stage], k0 + SG_GEMM_BK, m0);
            sg_tma_load_2d(a + SG_GEMM_N64_PAIR + SG_GEMM_A_BYTES, mapW, &sm.full[ring.stage], k0 + SG_GEMM_BK, n0);
        } else if (!shape) {
            sg_tma_load_2d(a + SG_GEMM_A_BYTES + half, mapW, &sm.full[ring.stage], k0, n0 + 128);
        }
        sg_ring_next(ring, stages);
    }
}
#endif
