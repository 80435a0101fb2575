// kernel/mega/tma_ptx.cuh — the architecture-neutral instructions of the megakernels, as inline PTX: what the
// Hopper (sm_90a) and Blackwell (sm_100a) kernels, the skeleton (mega_kernel.cuh) and the lab kernels share.
//
// One thin wrapper per instruction, no policy: the clock and SM-id special registers, mbarrier (init, arrive,
// expect_tx, parity wait with a debug timeout), TMA 2D (and 3D) tile loads and small bulk copies that complete on an
// mbarrier, TMA tile stores and reduce-adds with their bulk async-groups, the cluster's rank and size, the proxy
// fences, the release / acquire counter operations and named barriers. Each exists on sm_90 and later, so this
// header carries no per-architecture guard; the MMA instructions are in each architecture's own header
// (kernel/sm90/sm90_ptx.cuh: wgmma; kernel/sm100/sm100_ptx.cuh: tcgen05).
// Layout facts used by the callers: operands are stored as TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B: rows
// of 128 bytes (64 bf16), 8-row groups of 1024 bytes, each group 1024-byte aligned.
#ifndef SG_TMA_PTX_CUH
#define SG_TMA_PTX_CUH

#include <cstdint>
#include <cstdio>
#include <cuda.h>
#include <cuda_bf16.h>

// Debug timeout for every spin wait: 2^35 cycles is ~17 s at 1.98 GHz, far beyond any legitimate wait in a
// kernel of a few ms, so a lost arrival traps instead of hanging the GPU. It was 2^32 (~2 s) until session 28:
// under compute-sanitizer racecheck a batch-2 launch runs for seconds, and one of gpu-check's runs (sm90:fp8,
// batch 2) trapped once while 20 reruns (10 with this limit at 2^40) were clean. Measured in session 29 (every
// wait timed; docs/perf-notes.md): without a sanitizer no wait passes 6e5 cycles; under racecheck the longest are a
// storer's, idle until its next tile, which grow with the run (3.9e9 cycles at batch 12, 90 % of 2^32), the others
// stay below 8.5e8. (-DSG_SPIN_LIMIT=... overrides it for such experiments.)
#ifndef SG_SPIN_LIMIT
#define SG_SPIN_LIMIT (1ull << 35)
#endif

// --- special registers: the trace's and the labs' clocks and placement ---------------------------------------------
// %globaltimer: ns, one clock for every SM (the megakernel's task trace and the chain labs compare stamps across SMs).
__device__ __forceinline__ unsigned long long sg_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// The SM this thread runs on.
__device__ __forceinline__ int sg_smid() {
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return (int)r;
}

__device__ __forceinline__ uint32_t sg_smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// --- mbarrier -----------------------------------------------------------------------------------------------
__device__ __forceinline__ void sg_mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sg_smem_u32(bar)), "r"(count) : "memory");
}
// Makes initialised barriers visible to the async proxy (TMA complete_tx) and to the other threads.
__device__ __forceinline__ void sg_fence_mbar_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void sg_mbar_arrive(uint64_t *bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(sg_smem_u32(bar)) : "memory");
}
// Arrives once and announces `bytes` of TMA traffic that must land before the phase can complete.
__device__ __forceinline__ void sg_mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}"
                 ::"r"(sg_smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ int sg_mbar_try_wait(uint64_t *bar, uint32_t parity) {
    uint32_t ok;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(sg_smem_u32(bar)), "r"(parity) : "memory");
    return (int)ok;
}
// Waits until the phase with the given parity has completed; traps after SG_SPIN_LIMIT cycles. No printf
// here: a call inside the wgmma pipeline makes ptxas serialise every wgmma (C7510); the trap surfaces on the
// host as cudaErrorLaunchFailure at the launch's SG_CK, and compute-sanitizer names the line.
__device__ __forceinline__ void sg_mbar_wait(uint64_t *bar, uint32_t parity) {
    if (sg_mbar_try_wait(bar, parity)) return;
    const unsigned long long t0 = clock64();
    while (!sg_mbar_try_wait(bar, parity))
        if (clock64() - t0 > SG_SPIN_LIMIT) __trap();
}

// --- TMA ----------------------------------------------------------------------------------------------------
__device__ __forceinline__ void sg_tma_prefetch_desc(const CUtensorMap *map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// Asks L2 for the box at (x, y) of `map`: no shared memory, no completion; later copies of it hit L2.
__device__ __forceinline__ void sg_tma_prefetch_l2_2d(const CUtensorMap *map, int x, int y) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y) : "memory");
}
// Copies the box at (x = inner coordinate, y = row) of `map` into smem `dst`, completing on `bar`.
// Rows outside the tensor are zero-filled by the hardware.
__device__ __forceinline__ void sg_tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(sg_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(sg_smem_u32(bar)), "r"(x), "r"(y)
                 : "memory");
}

// The 3D box at (x, y, z) of `map` (sg_tmap_sw128_kblocks: x the column within a 64-column K block, y the row, z
// the K block), completing on `bar`: `blocks` consecutive K blocks of box_rows rows land as that many 2D boxes one
// after another, in one copy instead of one per K block.
__device__ __forceinline__ void sg_tma_load_3d(void *dst, const CUtensorMap *map, uint64_t *bar, int x, int y, int z) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 ::"r"(sg_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(sg_smem_u32(bar)), "r"(x), "r"(y),
                 "r"(z) : "memory");
}

// --- clusters (thread block clusters, sm_90+; used by the lab's 2-CTA GEMM, kernel/lab/sm90_lab.cu) ---------------
__device__ __forceinline__ uint32_t sg_cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t sg_cluster_id() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t sg_cluster_count() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}
// The CTAs in this CTA's cluster (1 without a cluster launch).
__device__ __forceinline__ uint32_t sg_cluster_size() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
// Every thread of every CTA of the cluster (aligned: all threads of the CTA execute it): what each did before is
// visible to the others after (initialised barriers before a peer's multicast or remote arrival; no CTA leaves
// while a peer may still write into its shared memory).
__device__ __forceinline__ void sg_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Arrives on the mbarrier at bar's offset in the shared memory of cluster CTA `rank`: a consumer telling the peer's
// producer that a stage the peer also fills is free. The default (CTA-scope) semantics, as CUTLASS's cluster
// barriers use for the same hand-off: `.release.cluster` compiled to a MEMBAR.ALL.GPU before every arrival, in the
// K loop.
__device__ __forceinline__ void sg_mbar_arrive_remote(uint64_t *bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(sg_smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
// sg_tma_load_2d into the same shared-memory offset of every cluster CTA in `mask` (bit r: CTA r), each copy
// completing on the mbarrier at bar's offset in its own CTA.
__device__ __forceinline__ void sg_tma_load_2d_mcast(void *dst, const CUtensorMap *map, uint64_t *bar, int x, int y,
                                                     uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;"
                 ::"r"(sg_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(sg_smem_u32(bar)), "r"(x), "r"(y),
                 "h"(mask) : "memory");
}

// Asks L2 for `bytes` (a multiple of 16) from global `src` on: no shared memory, no completion; later loads hit L2.
__device__ __forceinline__ void sg_bulk_prefetch_l2(const void *src, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// A small contiguous copy global -> shared (16-byte aligned, size a multiple of 16; a GEMM tile's bias, MXFP8
// scale atoms), completing on `bar` with complete_tx (count the bytes in the barrier's expect_tx).
__device__ __forceinline__ void sg_bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(sg_smem_u32(dst)), "l"(src), "r"(bytes), "r"(sg_smem_u32(bar)) : "memory");
}

// Copies smem `src` (laid out as the box of `map`) to the box at (x, y) of `map`; rows and columns outside the
// tensor are not written. Completion is tracked by this thread's bulk async-groups (commit / wait below).
__device__ __forceinline__ void sg_tma_store_2d(const CUtensorMap *map, const void *src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(sg_smem_u32(src)), "r"(x), "r"(y) : "memory");
}
// As sg_tma_store_2d, but adds src to the box in global memory (element type of the map, here fp32), done in L2.
__device__ __forceinline__ void sg_tma_reduce_add_2d(const CUtensorMap *map, const void *src, int x, int y) {
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(sg_smem_u32(src)), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void sg_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until the committed stores have finished reading shared memory (the buffer may be reused).
__device__ __forceinline__ void sg_bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Waits until the committed stores are complete in global memory (all of them; or all but the newest group).
__device__ __forceinline__ void sg_bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void sg_bulk_wait1() { asm volatile("cp.async.bulk.wait_group 1;" ::: "memory"); }
// Generic-proxy writes to global memory become visible to later async-proxy (TMA) reads of this thread.
__device__ __forceinline__ void sg_fence_proxy_async_global() {
    asm volatile("fence.proxy.async.global;" ::: "memory");
}
// Generic-proxy writes to shared memory become visible to wgmma / TMA reads (each writer, before the barrier).
__device__ __forceinline__ void sg_fence_proxy_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// --- cross-CTA counters (megakernel dependencies) -----------------------------------------------------------
// dst[0..1] += {a, b} in L2 (relaxed, gpu scope; sm_90's vector red: one instruction per 8 bytes).
__device__ __forceinline__ void sg_red_add_v2(float *dst, float a, float b) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void sg_red_release_add(unsigned *p, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// A fetch-and-increment by one thread (relaxed) whose result is waited for only where it is used: atom.inc,
// wrapping to 0 past `limit`, which must be a run-time value above any count reached. With a constant limit
// (or with atomicAdd / atom.add) ptxas turned it into a warp-aggregated add, whose shuffle of the result waits
// for the round trip at once, because it cannot prove the calling thread is alone.
__device__ __forceinline__ unsigned sg_atom_inc(unsigned *p, unsigned limit) {
    unsigned old;
    asm volatile("atom.relaxed.gpu.global.inc.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(limit) : "memory");
    return old;
}
__device__ __forceinline__ unsigned sg_ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Named barrier among `count` threads (a multiple of 32); id 0 is __syncthreads.
__device__ __forceinline__ void sg_named_bar(int id, int count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
// Arrives on a named barrier without waiting (the other `count` - warps of arrivals come from bar.sync callers).
__device__ __forceinline__ void sg_named_bar_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

#endif
