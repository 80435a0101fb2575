// kernel/sm90/sm90_ptx.cuh — the Hopper-only (sm_90a) instructions of the megakernel, as inline PTX: wgmma
// (fence / mma_async / commit / wait), its 64-bit shared-memory matrix descriptor, and setmaxnreg.
//
// One thin wrapper per instruction, no policy. The architecture-neutral ones (mbarrier, TMA, proxy fences,
// counters, named barriers) are in kernel/mega/tma_ptx.cuh, included here. Layout facts used by the callers:
//   - Operands are stored as TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes (64 bf16),
//     8-row groups of 1024 bytes, each group 1024-byte aligned.
//   - wgmma accumulator of m64nN, fp32, thread t of the warpgroup: register k holds
//     row = 16*(t/32) + (t%32)/4 + 8*((k/2)%2), col = 8*(k/4) + 2*(t%4) + k%2   (PTX ISA "wgmma D fragment").
// kernel/sm90 is compiled for sm_90a alone (Makefile GENCODE_SM90), the only target that assembles wgmma and
// setmaxnreg, so these need no per-architecture guard.
#ifndef SG_SM90_PTX_CUH
#define SG_SM90_PTX_CUH

#include "../mega/tma_ptx.cuh"

// --- register budget ----------------------------------------------------------------------------------------
template <int R> __device__ __forceinline__ void sg_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> __device__ __forceinline__ void sg_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// --- wgmma --------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor: [0,14) address>>4, [16,30) leading byte offset>>4, [32,46) stride byte
// offset>>4, [62,64) swizzle (1 = 128B). K-major SW128 operands: LBO unused (16), SBO = 1024 (8 rows x 128 B).
// MN-major SW128 (V in P.V): LBO = distance between 64-wide MN blocks, SBO = 1024 between 8-row K groups.
__device__ __forceinline__ uint64_t sg_smem_desc(const void *p, uint32_t lbo, uint32_t sbo) {
    const uint64_t a = sg_smem_u32(p);
    return ((a & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) | ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void sg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void sg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void sg_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// The "+f" operands of accumulator registers d[i .. i+7] and d[i .. i+31], for the wgmma wrappers' register lists.
#define SG_WGMMA_ACC8(d, i)                                                                                        \
    "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]),         \
        "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define SG_WGMMA_ACC32(d, i)                                                                                       \
    SG_WGMMA_ACC8(d, i), SG_WGMMA_ACC8(d, (i) + 8), SG_WGMMA_ACC8(d, (i) + 16), SG_WGMMA_ACC8(d, (i) + 24)
// The register lists of those operands in the wgmma instruction text: %0 .. %31, %0 .. %63, %0 .. %127 (what
// follows them is the descriptors, numbered from 32, 64 or 128).
#define SG_WGMMA_REGS32                                                                                            \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                       \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define SG_WGMMA_REGS64                                                                                            \
    SG_WGMMA_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "           \
                    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define SG_WGMMA_REGS128                                                                                           \
    SG_WGMMA_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "           \
                    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
                    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
                    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// Keeps the compiler from moving accumulator reads/writes across an asynchronous wgmma.
template <int R> __device__ __forceinline__ void sg_wgmma_fence_regs(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* D[64x128] (+)= A[64x16] . B[128x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate;
 * scale_d = 0 overwrites D (first K step of a tile). */
__device__ __forceinline__ void sg_wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS64 "}, "
                 "%64, %65, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x64] (+)= A[64x16] . B[64x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate (the
 * megakernel's narrow64 GEMM tasks). */
__device__ __forceinline__ void sg_wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS32 "}, "
                 "%32, %33, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC32(d, 0)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x32] (+)= A[64x16] . B[32x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate (a
 * warpgroup's 32 columns of the megakernel's 64 x 64 GEMM tasks). */
__device__ __forceinline__ void sg_wgmma_ss_n32(float (&d)[16], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "%16, %17, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC8(d, 0), SG_WGMMA_ACC8(d, 8)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x256] (+)= A[64x16] . B[256x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate;
 * scale_d = 0 overwrites D (first K step of a tile). */
__device__ __forceinline__ void sg_wgmma_ss_n256(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS128 "}, "
                 "%128, %129, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32), SG_WGMMA_ACC32(d, 64), SG_WGMMA_ACC32(d, 96)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x208] (+)= A[64x16] . B[208x16]^T, both K-major in shared memory (descriptors), bf16 in, fp32 accumulate;
 * scale_d = 0 overwrites D (first K step of a tile). */
__device__ __forceinline__ void sg_wgmma_ss_n208(float (&d)[104], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %106, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n208k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103}, "
                 "%104, %105, p, 1, 1, 0, 0;\n}\n"
                 : SG_WGMMA_ACC32(d, 0), SG_WGMMA_ACC32(d, 32), SG_WGMMA_ACC32(d, 64), SG_WGMMA_ACC8(d, 96)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x64] (+)= A[64x16] (registers, bf16 pairs in the m64k16 fragment layout) . B[16x64] (shared memory,
 * MN-major: tnspB = 1), fp32 accumulate. */
__device__ __forceinline__ void sg_wgmma_rs_n64_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 SG_WGMMA_REGS32 "}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : SG_WGMMA_ACC32(d, 0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

#endif
