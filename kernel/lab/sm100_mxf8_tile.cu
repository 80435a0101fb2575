// kernel/lab/sm100_mxf8_tile.cu — one 128x128 output tile per CTA of D = (A·2^SA)(B·2^SB)ᵀ with the Blackwell
// block-scaled MMA: the MMA / accumulator layer of the SM100 megakernel in isolation (docs/megakernel.md,
// "SM100 (Blackwell) design"). NOT RUN ON HARDWARE: no B200 has been available; it is checked offline only
// (ptxas for sm_100a with no warnings or spills; scripts/sm100-sass-check.sh for the expected SASS opcodes).
//
// Per K block of 128 (one thread issues everything, the simplest correct order; the megakernel splits these
// roles over producer / MMA / epilogue warps and rings of stages):
//   TMA 2D tile loads of A [128 x 128 B] and B [128 x 128 B] with 128-byte swizzle, plus a 1D bulk copy of
//   the two 512-byte 128x4 scale atoms, all completing on one mbarrier (expect_tx) ->
//   tcgen05.cp .32x128b.warpx4 of SFA and SFB into TMEM (4 columns each) ->
//   4 x tcgen05.mma .kind::mxf8f6f4 .block_scale (K = 32 each, scale-factor id = K-step) into a 128 x 128 fp32
//   accumulator in TMEM -> tcgen05.commit to an mbarrier, waited before the smem is overwritten.
// Epilogue: warp w reads TMEM lanes 32w..32w+31 (rows) with tcgen05.ld .32x32b.x32 and stores fp32.
// TMEM: 256 columns (128 accumulator + 4 SFA + 4 SFB, rounded up to a power of two), one CTA per SM.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include "../mega/tmap.cuh"
#include "lab_cuda.cuh"
#include "../sm100/sm100_desc.h"
#include "sm100_mxf8_tile.h"
#include "../sm100/sm100_ptx.cuh"

#define SG_TILE 128                       // M, N and K per block: MXF8 1-CTA MMA needs M = 128
#define SG_TILE_BYTES (SG_TILE * SG_TILE) // one E4M3 operand tile, 16 KiB
#define SG_SF_BYTES 512                   // one 128x4 scale atom
#define SG_SMEM_USED (2 * SG_TILE_BYTES + 2 * SG_SF_BYTES + 8 + 8 + 4)  // A, B, 2 scale atoms, 2 barriers, slot
#define SG_SMEM_DYN (SG_SMEM_USED + 1024) // slack to align the swizzled tiles to 1024 bytes
#define SG_TMEM_COLS 256

// ---------------------------------------------------------------------------------------------------- device
// PTX wrappers: kernel/sm100/sm100_ptx.cuh (tcgen05, bulk copy) and, through it, kernel/mega/tma_ptx.cuh
// (mbarrier, TMA), shared with the persistent GEMM (sm100_gemm.cu).
__global__ void __launch_bounds__(128, 1)
    sg_sm100_mxf8_tile_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                              const uint8_t *__restrict__ sfa, const uint8_t *__restrict__ sfb, float *__restrict__ d,
                              int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sm = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *s_a = sm, *s_b = sm + SG_TILE_BYTES, *s_sfa = s_b + SG_TILE_BYTES, *s_sfb = s_sfa + SG_SF_BYTES;
    uint64_t *bar_full = (uint64_t *)(s_sfb + SG_SF_BYTES), *bar_mma = bar_full + 1;
    uint32_t *slot = (uint32_t *)(bar_mma + 1);
    const int warp = threadIdx.x / 32, m0 = blockIdx.y * SG_TILE, n0 = blockIdx.x * SG_TILE;
    const int kblocks = K / SG_TILE, kb32 = K / 32;

    if (threadIdx.x == 0) {
        sg_mbar_init(bar_full, 1);
        sg_mbar_init(bar_mma, 1);
        sg_fence_mbar_init();
        sg_tma_prefetch_desc(&map_a);
        sg_tma_prefetch_desc(&map_b);
    }
    if (warp == 0) {
        sg_tc_alloc(slot, SG_TMEM_COLS);
        sg_tc_relinquish();
    }
    sg_tc_fence_before();
    __syncthreads();
    sg_tc_fence_after();
    const uint32_t tmem = *(volatile uint32_t *)slot;
    const uint32_t d_tmem = tmem, sfa_tmem = tmem + SG_TILE, sfb_tmem = tmem + SG_TILE + 4;

    if (threadIdx.x == 0) {
        for (int kb = 0; kb < kblocks; kb++) {
            sg_mbar_arrive_expect_tx(bar_full, 2 * SG_TILE_BYTES + 2 * SG_SF_BYTES);
            sg_tma_load_2d(s_a, &map_a, bar_full, kb * SG_TILE, m0);
            sg_tma_load_2d(s_b, &map_b, bar_full, kb * SG_TILE, n0);
            sg_bulk_load(s_sfa, sfa + sg_sm100_sf_offset((uint32_t)m0, (uint32_t)kb * 4, (uint32_t)kb32), SG_SF_BYTES,
                         bar_full);
            sg_bulk_load(s_sfb, sfb + sg_sm100_sf_offset((uint32_t)n0, (uint32_t)kb * 4, (uint32_t)kb32), SG_SF_BYTES,
                         bar_full);
            sg_mbar_wait(bar_full, kb & 1);
            sg_tc_fence_after();
            sg_tc_cp_sf(sfa_tmem, sg_sm100_smem_desc_sf(sg_smem_u32(s_sfa)));
            sg_tc_cp_sf(sfb_tmem, sg_sm100_smem_desc_sf(sg_smem_u32(s_sfb)));
            const uint64_t a_desc = sg_sm100_smem_desc_kmajor_sw128(sg_smem_u32(s_a));
            const uint64_t b_desc = sg_sm100_smem_desc_kmajor_sw128(sg_smem_u32(s_b));
#pragma unroll
            for (int s = 0; s < 4; s++) // K-step of 32 E4M3 = 32 bytes = +2 in the descriptor's address>>4 field
                sg_tc_mma_mxf8(d_tmem, a_desc + 2 * s, b_desc + 2 * s, sg_sm100_idesc_mxf8(SG_TILE, SG_TILE, s), sfa_tmem,
                               sfb_tmem, (kb | s) != 0);
            sg_tc_commit(bar_mma);
            sg_mbar_wait(bar_mma, kb & 1); // smem and the TMEM scale columns are reused by the next block
        }
    }
    __syncthreads();
    sg_tc_fence_after();

    // Epilogue: output row m0 + 32*warp + lane = TMEM lane 32*warp + lane (data path layout D, M = 128).
    const int row = m0 + 32 * warp + (threadIdx.x % 32);
    for (int c = 0; c < SG_TILE; c += 32) {
        uint32_t v[32];
        sg_tc_ld_32x32b_x32(d_tmem + sg_sm100_tmem_addr(32u * warp, (uint32_t)c), v);
        sg_tc_wait_ld(v);
        float4 *dst = (float4 *)(d + (size_t)row * N + n0 + c);
#pragma unroll
        for (int i = 0; i < 8; i++)
            dst[i] = make_float4(__uint_as_float(v[4 * i]), __uint_as_float(v[4 * i + 1]), __uint_as_float(v[4 * i + 2]),
                                 __uint_as_float(v[4 * i + 3]));
    }
    sg_tc_fence_before();
    __syncthreads();
    if (warp == 0) sg_tc_dealloc(tmem, SG_TMEM_COLS);
#else
    (void)sfa; (void)sfb; (void)d; (void)N; (void)K;
#endif
}

// ---------------------------------------------------------------------------------------------------- host
// 2D uint8 tensor map over a row-major [rows, cols] E4M3 matrix, box 128 x 128 bytes, 128-byte swizzle (the
// K-major SW128 layout sg_sm100_smem_desc_kmajor_sw128 describes).
static CUtensorMap sg_tile_tmap(const void *base, uint64_t rows, uint64_t cols) {
    CUtensorMap m;
    char err[256];
    if (sg_tmap_encode_2d(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, base, rows, cols, SG_TILE, SG_TILE,
                          CU_TENSOR_MAP_SWIZZLE_128B, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    return m;
}

// Row-major [rows, kb32] UE8M0 codes into the 128x4 atom layout.
static std::vector<uint8_t> sg_tile_sf_layout(const uint8_t *s, int rows, int kb32) {
    std::vector<uint8_t> out(sg_sm100_sf_bytes((uint32_t)rows, (uint32_t)kb32), 0);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < kb32; j++) out[sg_sm100_sf_offset((uint32_t)r, (uint32_t)j, (uint32_t)kb32)] = s[(size_t)r * kb32 + j];
    return out;
}

extern "C" int sg_sm100_mxf8_tile_gemm(const uint8_t *qa, const uint8_t *sa, const uint8_t *qb, const uint8_t *sb,
                                       int M, int N, int K, float *d, char *err, size_t errlen) {
    if (M <= 0 || N <= 0 || K <= 0 || M % SG_TILE || N % SG_TILE || K % SG_TILE) {
        snprintf(err, errlen, "sm100 mxf8 tile: M %d, N %d, K %d must be positive multiples of %d", M, N, K, SG_TILE);
        return -1;
    }
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        snprintf(err, errlen, "sm100 mxf8 tile: no CUDA device");
        return -1;
    }
    if (prop.major != 10) {
        snprintf(err, errlen, "sm100 mxf8 tile: needs an sm_100 (B200/B300) device, got sm_%d%d (%s)", prop.major,
                 prop.minor, prop.name);
        return -1;
    }
    const int kb32 = K / 32;
    std::vector<uint8_t> lsa = sg_tile_sf_layout(sa, M, kb32), lsb = sg_tile_sf_layout(sb, N, kb32);
    uint8_t *da = NULL, *db = NULL, *dsa = NULL, *dsb = NULL;
    float *dd = NULL;
    SG_CK(cudaMalloc(&da, (size_t)M * K));
    SG_CK(cudaMalloc(&db, (size_t)N * K));
    SG_CK(cudaMalloc(&dsa, lsa.size()));
    SG_CK(cudaMalloc(&dsb, lsb.size()));
    SG_CK(cudaMalloc(&dd, (size_t)M * N * sizeof(float)));
    SG_CK(cudaMemcpy(da, qa, (size_t)M * K, cudaMemcpyHostToDevice));
    SG_CK(cudaMemcpy(db, qb, (size_t)N * K, cudaMemcpyHostToDevice));
    SG_CK(cudaMemcpy(dsa, lsa.data(), lsa.size(), cudaMemcpyHostToDevice));
    SG_CK(cudaMemcpy(dsb, lsb.data(), lsb.size(), cudaMemcpyHostToDevice));
    SG_CK(cudaMemset(dd, 0xFF, (size_t)M * N * sizeof(float))); // NaN poison: every element must be written
    CUtensorMap ma = sg_tile_tmap(da, (uint64_t)M, (uint64_t)K), mb = sg_tile_tmap(db, (uint64_t)N, (uint64_t)K);
    SG_CK(cudaFuncSetAttribute(sg_sm100_mxf8_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SG_SMEM_DYN));
    sg_sm100_mxf8_tile_kernel<<<dim3(N / SG_TILE, M / SG_TILE), 128, SG_SMEM_DYN>>>(ma, mb, dsa, dsb, dd, N, K);
    SG_CK(cudaGetLastError());
    SG_CK(cudaDeviceSynchronize());
    SG_CK(cudaMemcpy(d, dd, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToHost));
    SG_CK(cudaFree(da));
    SG_CK(cudaFree(db));
    SG_CK(cudaFree(dsa));
    SG_CK(cudaFree(dsb));
    SG_CK(cudaFree(dd));
    return 0;
}
