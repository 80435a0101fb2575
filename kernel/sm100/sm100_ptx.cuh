// kernel/sm100/sm100_ptx.cuh — the Blackwell (sm_100a) instructions of the tcgen05 GEMM, as inline PTX.
//
// One thin wrapper per instruction, no policy. The architecture-neutral ones (mbarrier init / arrive /
// expect_tx / parity wait with its trap timeout, TMA 2D tile loads, proxy fences, release/acquire counters)
// are NOT repeated here: they come from kernel/mega/tma_ptx.cuh (sm_90 and later, no architecture guard), with
// the cp.async.bulk (non-tensor) copy that brings the 512-byte scale atoms. What is added:
//   - tcgen05: alloc / dealloc / relinquish_alloc_permit, the two thread-sync fences, commit to an mbarrier,
//     mma kind::f16 and kind::mxf8f6f4.block_scale (cta_group::1, both operands from shared memory),
//     cp .32x128b.warpx4 (scale factors to TMEM), ld .32x32b.x32 and wait::ld.
// Syntax: PTX ISA 9.0 "tcgen05" sections; the same forms as CUDA 13's cuda::ptx::tcgen05_* wrappers
// (include/cccl/cuda/__ptx/instructions/generated/tcgen05_*.h) and ../shared/docs/kernel-notes.md §2.
// Every tcgen05 wrapper exists only where the target has tcgen05 (__CUDA_ARCH_FEAT_SM100_ALL); callers put
// their tcgen05 code under the same guard so the file also compiles for other targets.
#ifndef SG_SM100_PTX_CUH
#define SG_SM100_PTX_CUH

#include "../mega/tma_ptx.cuh"

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
// --- tensor memory allocation (one whole warp; the same warp deallocates) --------------------------------
// Writes the TMEM base address of `ncols` columns (power of 2, 32..512) into shared memory at slot.
__device__ __forceinline__ void sg_tc_alloc(uint32_t *slot, uint32_t ncols) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(sg_smem_u32(slot)),
                 "r"(ncols) : "memory");
}
__device__ __forceinline__ void sg_tc_relinquish() {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void sg_tc_dealloc(uint32_t taddr, uint32_t ncols) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
}

// --- ordering of tcgen05 operations around thread synchronisation -----------------------------------------
__device__ __forceinline__ void sg_tc_fence_before() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void sg_tc_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }

// Arrives once on `bar` when every tcgen05.mma / tcgen05.cp this thread issued before has completed.
__device__ __forceinline__ void sg_tc_commit(uint64_t *bar) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                 ::"r"(sg_smem_u32(bar)) : "memory");
}

// --- MMA (one thread issues; A and B from shared memory via descriptors; D in TMEM) -----------------------
// D (+)= A . B^T, bf16 x bf16 -> fp32 (K = 16 per instruction); accumulate = 0 overwrites D.
__device__ __forceinline__ void sg_tc_mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                              uint32_t accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}"
                 ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate) : "memory");
}
// D (+)= (A . 2^SA)(B . 2^SB)^T, E4M3 x E4M3 with one UE8M0 per 32 K elements -> fp32 (K = 32 per
// instruction); the scale-factor ids in idesc pick the byte of each 32-bit TMEM scale word.
__device__ __forceinline__ void sg_tc_mma_mxf8(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                               uint32_t sfa_tmem, uint32_t sfb_tmem, uint32_t accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block32 [%0], %1, %2, %3, [%4], [%5], p;\n}"
                 ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem), "r"(accumulate)
                 : "memory");
}

// --- scale factors: shared -> TMEM ------------------------------------------------------------------------
// One 512-byte 128x4 atom (32 rows of 16 bytes, descriptor sg_sm100_smem_desc_sf) into 4 TMEM columns at
// taddr, the 32 rows broadcast to the 4 lane quarters (.warpx4). Same issue thread and in-order with the MMAs.
__device__ __forceinline__ void sg_tc_cp_sf(uint32_t taddr, uint64_t sdesc) {
    asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(sdesc) : "memory");
}

// --- TMEM -> registers (whole warp; warp w%4 reads lanes 32(w%4)..+31) ------------------------------------
// Thread i gets lane (taddr's lane + i), 32 consecutive 32-bit columns from taddr's column.
__device__ __forceinline__ void sg_tc_ld_32x32b_x32(uint32_t taddr, uint32_t (&v)[32]) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
                 "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "[%32];"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]),
                   "=r"(v[8]), "=r"(v[9]), "=r"(v[10]), "=r"(v[11]), "=r"(v[12]), "=r"(v[13]), "=r"(v[14]),
                   "=r"(v[15]), "=r"(v[16]), "=r"(v[17]), "=r"(v[18]), "=r"(v[19]), "=r"(v[20]), "=r"(v[21]),
                   "=r"(v[22]), "=r"(v[23]), "=r"(v[24]), "=r"(v[25]), "=r"(v[26]), "=r"(v[27]), "=r"(v[28]),
                   "=r"(v[29]), "=r"(v[30]), "=r"(v[31])
                 : "r"(taddr));
}
// Waits until this thread's earlier tcgen05.ld results are in registers. The registers then pass through an
// empty volatile asm: the ld's outputs look ready to the compiler at the ld itself, and without this it may
// schedule their first use above the wait (volatile asm statements keep their order; plain arithmetic does not).
__device__ __forceinline__ void sg_tc_wait_ld(uint32_t (&v)[32]) {
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+r"(v[i])::"memory");
}
#endif

#endif
