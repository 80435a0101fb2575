// kernel/lab/sm100_gemm.cu — persistent, warp-specialised tcgen05 GEMM for Blackwell (sm_100a), see the .h.
//
// NOT RUN ON HARDWARE: no B200 has been available. Checked offline only (ptxas for sm_100a: no warnings, no
// spills; scripts/sm100-sass-check.sh for the SASS opcodes). A lab kernel since issue 11: the sm100 backend ran
// its encoder layers on it (one GEMM per Linear layer) before the megakernel; it stays as the reference tcgen05
// GEMM for the first B200 run (kernel/lab/test_sm100_gemm.c).
//
// One CTA per SM (≈199 KB of shared memory forces it), 192 threads, tiles of 128 x 128, column tile fastest
// (the A row block stays in L2 while the 6-24 weight column blocks stream past), tile t -> CTA t mod grid.
// Roles:
//   warp 0, one thread — TMA producer: per K block, waits for the stage to be free (empty[s]), announces the
//     bytes (expect_tx), loads the A and B boxes (128 rows x 128 bytes each, 128-byte swizzle) and, for MXFP8,
//     the two 512-byte 128x4 scale atoms of this row block / column block / K block with bulk copies.
//   warp 1 — allocates 512 TMEM columns (whole warp), then one thread issues the MMAs: per tile it waits for an
//     accumulator buffer to be drained (tmem_empty[b]), then per K block waits full[s], copies the scale atoms
//     into this stage's TMEM scale columns (tcgen05.cp, MXFP8 only), issues 4 MMAs (K = 16 bf16 or 32 E4M3
//     each, +32 bytes in the descriptor per step) and commits to empty[s], which frees the stage once they
//     complete; after the tile's last K block it commits to tmem_full[b].
//   warps 2-5 — epilogue: warp w reads TMEM lanes 32 (w % 4)..+31, i.e. output rows, 32 columns per tcgen05.ld;
//     after the last read of a buffer every thread arrives on tmem_empty[b] (count 128), so the MMAs of tile
//     i + 1 (other buffer) and i + 2 (this buffer, once drained) overlap this epilogue's math and stores.
// TMEM columns: [0, 256) two 128 x 128 fp32 accumulators; [256, 256 + 8 STAGES) per-stage scale columns (SFA 4,
// SFB 4), so a copy for stage s + 1 never overwrites scales that MMAs of stage s may still read; 304 rounded up
// to the allocation granule (a power of two) = 512, the whole TMEM, which is free because one CTA owns the SM.
// Ring parity convention (as kernel/sm90): a role waits for phase `phase` of a "full" barrier and for
// `phase ^ 1` of an "empty" one, so the first pass over fresh barriers does not block.
// At the end, sg_sm100_gemm_check (sm100_gemm_check.h) runs one GEMM on host data for kernel/lab/test_sm100_gemm.c.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cudaTypedefs.h>
#include "../cuda/cuda_common.h"
#include "../mega/tmap.cuh"
#include "../sm100/sm100_desc.h"
#include "sm100_gemm.h"
#include "sm100_gemm_check.h"
#include "../sm100/sm100_ptx.cuh"

#define SG_TC_BM 128  // tile rows: the only M of the 1-CTA block-scaled MMA, and the 128 TMEM lanes
#define SG_TC_BN 128  // tile columns: 2 accumulators fit in TMEM beside the scales; N = 768 gives 6 tiles
#define SG_TC_BOX_BYTES (128 * 128)          // one operand box: 128 rows x 128 bytes (64 bf16 or 128 E4M3)
#define SG_TC_STAGE_BYTES (2 * SG_TC_BOX_BYTES)
#define SG_TC_SF_BYTES 512                   // one 128x4 scale atom
// 6 stages: K = 768 bf16 is 12 blocks, K = 3072 is 48; 6 x 32 KB keeps ~1.5 us of loads in flight ahead of the
// MMAs (a 128x128x64 bf16 block is ~0.1 us of tensor time on one SM) and fits beside the scales.
#define SG_TC_STAGES 6
#define SG_TC_THREADS 192   // 6 warps: producer, MMA issuer, 4 epilogue warps (one per TMEM lane quarter)
#define SG_TC_EPI_WARP0 2   // first epilogue warp
#define SG_TC_TMEM_COLS 512 // 2 x 128 accumulator + 6 x 8 scale columns = 304, allocated as a power of two
#define SG_TC_SF_COL0 256   // first scale column: after the two accumulators
#define SG_TC_SMEM_USED \
    (SG_TC_STAGES * SG_TC_STAGE_BYTES + SG_TC_STAGES * 2 * SG_TC_SF_BYTES + (2 * SG_TC_STAGES + 4) * 8 + 16)
#define SG_TC_SMEM_DYN (SG_TC_SMEM_USED + 1024)  // slack to align the swizzled boxes to 1024 bytes

static_assert(SG_TC_SF_COL0 + 8 * SG_TC_STAGES <= SG_TC_TMEM_COLS, "scale columns exceed the TMEM allocation");
static_assert(SG_TC_SMEM_DYN <= 227 * 1024, "shared memory exceeds the 227 KB per block of sm_100");

// ------------------------------------------------------------------------------------------------- device
struct sg_tc_smem {
    uint8_t *stage;           // [STAGES][A box | B box], 1024-aligned
    uint8_t *sf;              // [STAGES][SFA atom | SFB atom]
    uint64_t *full, *empty;   // [STAGES]
    uint64_t *tfull, *tempty; // [2]
    uint32_t *tmem_slot;
};

__device__ __forceinline__ sg_tc_smem sg_tc_carve(uint8_t *raw) {
    sg_tc_smem s;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    s.stage = p;
    p += SG_TC_STAGES * SG_TC_STAGE_BYTES;
    s.sf = p;
    p += SG_TC_STAGES * 2 * SG_TC_SF_BYTES;
    s.full = (uint64_t *)p;
    s.empty = s.full + SG_TC_STAGES;
    s.tfull = s.empty + SG_TC_STAGES;
    s.tempty = s.tfull + 2;
    s.tmem_slot = (uint32_t *)(s.tempty + 2);
    return s;
}

// The fused epilogue of 32 consecutive columns [col, col + 32) of one row, acc in registers; the semantics of
// sg_sm90_gemm_epilogue. Bias and residual are loaded before any store (the output may alias the residual).
__device__ __forceinline__ void sg_tc_epilogue32(const uint32_t (&v)[32], int row, int col, int M,
                                                 const sg_sm90_epilogue &ep) {
    float a[32];
#pragma unroll
    for (int i = 0; i < 32; i++) a[i] = __uint_as_float(v[i]);
    if (ep.bias) {
#pragma unroll
        for (int i = 0; i < 32; i += 4) {
            const float4 b = *reinterpret_cast<const float4 *>(ep.bias + col + i);
            a[i] += b.x;
            a[i + 1] += b.y;
            a[i + 2] += b.z;
            a[i + 3] += b.w;
        }
    }
    if (ep.gelu) {
#pragma unroll
        for (int i = 0; i < 32; i++) a[i] = sg_gelu_tanh(a[i]);
    }
    if (row >= M) return;
    if (ep.residual) {
        float4 r[8];
        const float4 *src = reinterpret_cast<const float4 *>(ep.residual + (size_t)row * ep.ldr + col);
#pragma unroll
        for (int i = 0; i < 8; i++) r[i] = __ldcg(src + i);  // L2: another SM may have written it (megakernel)
#pragma unroll
        for (int i = 0; i < 8; i++) {
            a[4 * i] += r[i].x;
            a[4 * i + 1] += r[i].y;
            a[4 * i + 2] += r[i].z;
            a[4 * i + 3] += r[i].w;
        }
    }
    if (ep.out_f32) {
        float4 *dst = reinterpret_cast<float4 *>(ep.out_f32 + (size_t)row * ep.ldo + col);
#pragma unroll
        for (int i = 0; i < 8; i++) dst[i] = make_float4(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]);
    }
    if (ep.out_bf16) {
        uint4 *dst = reinterpret_cast<uint4 *>(ep.out_bf16 + (size_t)row * ep.ldo + col);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __nv_bfloat162 p[4];
#pragma unroll
            for (int j = 0; j < 4; j++) p[j] = __floats2bfloat162_rn(a[8 * i + 2 * j], a[8 * i + 2 * j + 1]);
            dst[i] = *reinterpret_cast<uint4 *>(p);
        }
    }
}

#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
// Producer (one thread): streams the K blocks of every tile of this CTA into the ring.
template <int KIND>
__device__ __forceinline__ void sg_tc_produce(const CUtensorMap *map_a, const CUtensorMap *map_b, const uint8_t *sfa,
                                              const uint8_t *sfb, int K, int tiles, int tiles_n, const sg_tc_smem &sm) {
    constexpr int BK = KIND == SG_SM100_KIND_MXF8 ? 128 : 64;  // elements per 128-byte swizzle row
    const uint32_t kb32 = (uint32_t)K / 32;
    sg_tma_prefetch_desc(map_a);
    sg_tma_prefetch_desc(map_b);
    sg_ring ring = {0, 0};
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int m0 = (t / tiles_n) * SG_TC_BM, n0 = (t % tiles_n) * SG_TC_BN;
        for (int kb = 0; kb < K / BK; kb++) {
            sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
            uint8_t *st = sm.stage + ring.stage * SG_TC_STAGE_BYTES;
            uint64_t *bar = &sm.full[ring.stage];
            if (KIND == SG_SM100_KIND_MXF8) {
                uint8_t *sf = sm.sf + ring.stage * 2 * SG_TC_SF_BYTES;
                sg_mbar_arrive_expect_tx(bar, SG_TC_STAGE_BYTES + 2 * SG_TC_SF_BYTES);
                sg_bulk_load(sf, sfa + sg_sm100_sf_offset((uint32_t)m0, 4u * kb, kb32), SG_TC_SF_BYTES, bar);
                sg_bulk_load(sf + SG_TC_SF_BYTES, sfb + sg_sm100_sf_offset((uint32_t)n0, 4u * kb, kb32), SG_TC_SF_BYTES,
                             bar);
            } else {
                sg_mbar_arrive_expect_tx(bar, SG_TC_STAGE_BYTES);
            }
            sg_tma_load_2d(st, map_a, bar, kb * BK, m0);
            sg_tma_load_2d(st + SG_TC_BOX_BYTES, map_b, bar, kb * BK, n0);
            sg_ring_next(ring, SG_TC_STAGES);
        }
    }
}

// MMA issuer (one thread): per tile, an accumulator buffer, the K loop, a commit per stage and one per tile.
template <int KIND>
__device__ __forceinline__ void sg_tc_issue(uint32_t tmem, int K, int tiles, const sg_tc_smem &sm) {
    constexpr int BK = KIND == SG_SM100_KIND_MXF8 ? 128 : 64;
    sg_ring ring = {0, 0};
    int local = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, local++) {
        const int buf = local & 1;
        const uint32_t use = (uint32_t)(local >> 1) & 1u;  // how many times buf was filled before, mod 2
        sg_mbar_wait(&sm.tempty[buf], use ^ 1u);
        sg_tc_fence_after();
        const uint32_t d_tmem = tmem + sg_sm100_tmem_addr(0, (uint32_t)(buf * SG_TC_BN));
        for (int kb = 0; kb < K / BK; kb++) {
            sg_mbar_wait(&sm.full[ring.stage], ring.phase);
            sg_tc_fence_after();
            const uint8_t *st = sm.stage + ring.stage * SG_TC_STAGE_BYTES;
            const uint64_t a_desc = sg_sm100_smem_desc_kmajor_sw128(sg_smem_u32(st));
            const uint64_t b_desc = sg_sm100_smem_desc_kmajor_sw128(sg_smem_u32(st + SG_TC_BOX_BYTES));
            if (KIND == SG_SM100_KIND_MXF8) {
                const uint8_t *sf = sm.sf + ring.stage * 2 * SG_TC_SF_BYTES;
                const uint32_t sfa_t = tmem + sg_sm100_tmem_addr(0, SG_TC_SF_COL0 + 8u * ring.stage);
                const uint32_t sfb_t = sfa_t + 4u;
                sg_tc_cp_sf(sfa_t, sg_sm100_smem_desc_sf(sg_smem_u32(sf)));
                sg_tc_cp_sf(sfb_t, sg_sm100_smem_desc_sf(sg_smem_u32(sf + SG_TC_SF_BYTES)));
#pragma unroll
                for (int s = 0; s < 4; s++)  // K step of 32 E4M3 = 32 bytes = +2 in the address field
                    sg_tc_mma_mxf8(d_tmem, a_desc + 2 * s, b_desc + 2 * s,
                                   sg_sm100_idesc_mxf8(SG_TC_BM, SG_TC_BN, (uint32_t)s), sfa_t, sfb_t, (kb | s) != 0);
            } else {
#pragma unroll
                for (int s = 0; s < 4; s++)  // K step of 16 bf16 = 32 bytes = +2 in the address field
                    sg_tc_mma_f16(d_tmem, a_desc + 2 * s, b_desc + 2 * s, sg_sm100_idesc_bf16(SG_TC_BM, SG_TC_BN),
                                  (kb | s) != 0);
            }
            sg_tc_commit(&sm.empty[ring.stage]);  // frees the stage (smem and scale columns) once these complete
            sg_ring_next(ring, SG_TC_STAGES);
        }
        sg_tc_commit(&sm.tfull[buf]);
    }
}

// Epilogue (warps 2-5, 128 threads): drains each tile's accumulator buffer row by row, 32 columns at a time.
__device__ __forceinline__ void sg_tc_drain(uint32_t tmem, int M, int tiles, int tiles_n, const sg_sm90_epilogue &ep,
                                            const sg_tc_smem &sm) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t quarter = (uint32_t)(warp % 4);  // the TMEM lane quarter this warp may access
    int local = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, local++) {
        const int buf = local & 1;
        const uint32_t use = (uint32_t)(local >> 1) & 1u;
        const int m0 = (t / tiles_n) * SG_TC_BM, n0 = (t % tiles_n) * SG_TC_BN;
        sg_mbar_wait(&sm.tfull[buf], use);
        __syncwarp();  // lanes leave the spin at different times; tcgen05.ld is .sync.aligned
        sg_tc_fence_after();
        const uint32_t base = tmem + sg_sm100_tmem_addr(32u * quarter, (uint32_t)(buf * SG_TC_BN));
        const int row = m0 + 32 * (int)quarter + lane;  // data-path layout D, M = 128: row = TMEM lane
#pragma unroll 1
        for (int c = 0; c < SG_TC_BN; c += 32) {
            uint32_t v[32];
            __syncwarp();  // reconverge after the previous chunk's row < M branch
            sg_tc_ld_32x32b_x32(base + (uint32_t)c, v);
            sg_tc_wait_ld(v);
            if (c == SG_TC_BN - 32) {  // the buffer is read: hand it back to the MMA thread
                sg_tc_fence_before();
                sg_mbar_arrive(&sm.tempty[buf]);
            }
            sg_tc_epilogue32(v, row, n0 + c, M, ep);
        }
    }
}
#endif

template <int KIND>
__global__ void __launch_bounds__(SG_TC_THREADS, 1)
    sg_sm100_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                         const uint8_t *__restrict__ sfa, const uint8_t *__restrict__ sfb, int M, int N, int K,
                         const sg_sm90_epilogue ep) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
    extern __shared__ uint8_t smem_raw[];
    const sg_tc_smem sm = sg_tc_carve(smem_raw);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tiles_n = N / SG_TC_BN, tiles = ((M + SG_TC_BM - 1) / SG_TC_BM) * tiles_n;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_TC_STAGES; s++) {
            sg_mbar_init(&sm.full[s], 1);
            sg_mbar_init(&sm.empty[s], 1);
        }
        for (int b = 0; b < 2; b++) {
            sg_mbar_init(&sm.tfull[b], 1);
            sg_mbar_init(&sm.tempty[b], 128);
        }
        sg_fence_mbar_init();
    }
    if (warp == 1) {
        sg_tc_alloc(sm.tmem_slot, SG_TC_TMEM_COLS);
        sg_tc_relinquish();
    }
    sg_tc_fence_before();
    __syncthreads();
    sg_tc_fence_after();
    const uint32_t tmem = *sm.tmem_slot;
    // Roles are taken by whole warps (one lane works, the others wait at __syncwarp), so every warp reaches the
    // final __syncthreads converged.
    if (warp == 0) {
        if (lane == 0) sg_tc_produce<KIND>(&map_a, &map_b, sfa, sfb, K, tiles, tiles_n, sm);
        __syncwarp();
    } else if (warp == 1) {
        if (lane == 0) sg_tc_issue<KIND>(tmem, K, tiles, sm);
        __syncwarp();
    } else {
        sg_tc_drain(tmem, M, tiles, tiles_n, ep, sm);
    }
    __syncthreads();
    if (warp == 1) {
        sg_tc_fence_after();
        sg_tc_dealloc(tmem, SG_TC_TMEM_COLS);
    }
#else
    (void)sfa; (void)sfb; (void)M; (void)N; (void)K; (void)ep;
#endif
}

// --------------------------------------------------------------------------------------------------- host
static bool sg_tc_ready = false;  // sg_sm100_gemm_init has set the kernels' shared-memory limit

int sg_sm100_gemm_init(char *err, size_t errlen) {
    const void *kernels[2] = {(const void *)sg_sm100_gemm_kernel<SG_SM100_KIND_BF16>,
                              (const void *)sg_sm100_gemm_kernel<SG_SM100_KIND_MXF8>};
    for (const void *k : kernels) {
        cudaFuncAttributes a;
        cudaError_t e = cudaFuncGetAttributes(&a, k);
        if (e == cudaSuccess) e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SG_TC_SMEM_DYN);
        if (e != cudaSuccess) {
            cudaGetLastError();
            snprintf(err, errlen, "%s:%d: sm100 GEMM kernel unusable on this device (built for sm_100a only): %s",
                     __FILE__, __LINE__, cudaGetErrorString(e));
            return -1;
        }
    }
    sg_tc_ready = true;
    return 0;
}

int sg_sm100_tmap(CUtensorMap *map, sg_sm100_kind kind, const void *base, int rows, int cols, char *err,
                  size_t errlen) {
    const int esize = kind == SG_SM100_KIND_MXF8 ? 1 : 2;
    if (!sg_tc_ready || rows <= 0 || cols <= 0 || ((uintptr_t)base & 15) || ((size_t)cols * esize) % 16) {
        snprintf(err, errlen, "%s:%d: sm100 tensor map: rows %d cols %d base %p (needs sg_sm100_gemm_init, "
                              "16-byte alignment and rows of a multiple of 16 bytes)", __FILE__, __LINE__, rows, cols,
                 base);
        return -1;
    }
    // box: 128 bytes (one swizzle row) x 128 rows
    return sg_tmap_encode_2d(map, esize == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, esize,
                             base, (uint64_t)rows, (uint64_t)cols, 128, (uint32_t)(128 / esize),
                             CU_TENSOR_MAP_SWIZZLE_128B, err, errlen);
}

int sg_sm100_gemm_run(const sg_sm100_gemm *g, int sms, cudaStream_t st, char *err, size_t errlen) {
    const int bk = g->kind == SG_SM100_KIND_MXF8 ? 128 : 64;
    if (g->M <= 0 || g->N <= 0 || g->N % SG_TC_BN || g->K <= 0 || g->K % bk || sms <= 0 ||
        (g->kind == SG_SM100_KIND_MXF8 && (!g->sfa || !g->sfb)) || (!g->ep.out_f32 && !g->ep.out_bf16)) {
        snprintf(err, errlen, "%s:%d: sm100 GEMM: unsupported M %d N %d K %d kind %d (N %% 128, K %% %d, scales, "
                              "an output)", __FILE__, __LINE__, g->M, g->N, g->K, (int)g->kind, bk);
        return -1;
    }
    const int tiles = ((g->M + SG_TC_BM - 1) / SG_TC_BM) * (g->N / SG_TC_BN);
    const int grid = tiles < sms ? tiles : sms;
    if (g->kind == SG_SM100_KIND_MXF8)
        sg_sm100_gemm_kernel<SG_SM100_KIND_MXF8><<<grid, SG_TC_THREADS, SG_TC_SMEM_DYN, st>>>(
            g->a, g->b, g->sfa, g->sfb, g->M, g->N, g->K, g->ep);
    else
        sg_sm100_gemm_kernel<SG_SM100_KIND_BF16><<<grid, SG_TC_THREADS, SG_TC_SMEM_DYN, st>>>(
            g->a, g->b, nullptr, nullptr, g->M, g->N, g->K, g->ep);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: sm100 GEMM launch (grid %d, %d bytes smem): %s", __FILE__, __LINE__, grid,
                 SG_TC_SMEM_DYN, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

// ------------------------------------------------------------------------------------ test entry point
// Host memory in and out, for kernel/lab/test_sm100_gemm.c (sm100_gemm_check.h). Allocates, converts the row-major
// scales into the 128x4 layout, poisons the outputs (NaN), runs sg_sm100_gemm_run with `sms` CTAs at most (a
// small value gives each CTA many tiles: ring wrap-around and both TMEM buffers), synchronises, copies back.
#define SG_GC_TRY(x) SG_CU_TRY_GOTO(x, err, errlen, rc, done)

extern "C" int sg_sm100_gemm_check(int kind, int M, int N, int K, const void *a, const void *b, const uint8_t *sfa,
                                   const uint8_t *sfb, const float *bias, int gelu, const float *residual,
                                   float *out_f32, uint16_t *out_bf16, int sms, char *err, size_t errlen) {
    const int mx = kind == SG_SM100_KIND_MXF8, esize = mx ? 1 : 2;
    if (M <= 0 || N <= 0 || N % 128 || K <= 0 || K % (mx ? 128 : 64) || sms <= 0 || (!out_f32 && !out_bf16) ||
        (mx && (!sfa || !sfb)) || (residual && !out_f32)) {
        snprintf(err, errlen, "sm100 GEMM check: bad arguments (M %d N %d K %d kind %d sms %d)", M, N, K, kind, sms);
        return -1;
    }
    int dev = 0, ma = 0, mi = 0, count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        snprintf(err, errlen, "no CUDA device");
        return -1;
    }
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, dev);
    if (ma != 10 || mi != 0) {
        snprintf(err, errlen, "sm100 GEMM check: needs an sm_100 (compute capability 10.0) device, got sm_%d%d", ma,
                 mi);
        return -1;
    }
    if (sg_sm100_gemm_init(err, errlen)) return -1;
    const int kb32 = K / 32;
    const size_t sfa_n = sg_sm100_sf_bytes((uint32_t)M, (uint32_t)kb32), sfb_n = sg_sm100_sf_bytes((uint32_t)N, (uint32_t)kb32);
    uint8_t *hsfa = nullptr, *hsfb = nullptr;
    void *da = nullptr, *db = nullptr;
    uint8_t *dsfa = nullptr, *dsfb = nullptr;
    float *dbias = nullptr, *dout = nullptr;
    __nv_bfloat16 *dout16 = nullptr;
    int rc = 0;
    sg_sm100_gemm g;
    memset(&g, 0, sizeof g);
    SG_GC_TRY(cudaMalloc(&da, (size_t)M * K * esize));
    SG_GC_TRY(cudaMalloc(&db, (size_t)N * K * esize));
    SG_GC_TRY(cudaMemcpy(da, a, (size_t)M * K * esize, cudaMemcpyHostToDevice));
    SG_GC_TRY(cudaMemcpy(db, b, (size_t)N * K * esize, cudaMemcpyHostToDevice));
    if (mx) {
        hsfa = (uint8_t *)calloc(sfa_n, 1);
        hsfb = (uint8_t *)calloc(sfb_n, 1);
        if (!hsfa || !hsfb) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
            goto done;
        }
        for (int r = 0; r < M; r++)
            for (int j = 0; j < kb32; j++) hsfa[sg_sm100_sf_offset((uint32_t)r, (uint32_t)j, (uint32_t)kb32)] = sfa[(size_t)r * kb32 + j];
        for (int r = 0; r < N; r++)
            for (int j = 0; j < kb32; j++) hsfb[sg_sm100_sf_offset((uint32_t)r, (uint32_t)j, (uint32_t)kb32)] = sfb[(size_t)r * kb32 + j];
        SG_GC_TRY(cudaMalloc(&dsfa, sfa_n));
        SG_GC_TRY(cudaMalloc(&dsfb, sfb_n));
        SG_GC_TRY(cudaMemcpy(dsfa, hsfa, sfa_n, cudaMemcpyHostToDevice));
        SG_GC_TRY(cudaMemcpy(dsfb, hsfb, sfb_n, cudaMemcpyHostToDevice));
    }
    if (bias) {
        SG_GC_TRY(cudaMalloc(&dbias, (size_t)N * sizeof(float)));
        SG_GC_TRY(cudaMemcpy(dbias, bias, (size_t)N * sizeof(float), cudaMemcpyHostToDevice));
    }
    if (out_f32) {
        SG_GC_TRY(cudaMalloc(&dout, (size_t)M * N * sizeof(float)));
        if (residual)
            SG_GC_TRY(cudaMemcpy(dout, residual, (size_t)M * N * sizeof(float), cudaMemcpyHostToDevice));
        else
            SG_GC_TRY(cudaMemset(dout, 0xFF, (size_t)M * N * sizeof(float)));  // NaN poison
    }
    if (out_bf16) {
        SG_GC_TRY(cudaMalloc(&dout16, (size_t)M * N * 2));
        SG_GC_TRY(cudaMemset(dout16, 0xFF, (size_t)M * N * 2));  // NaN poison
    }
    g.kind = (sg_sm100_kind)kind;
    g.M = M;
    g.N = N;
    g.K = K;
    g.sfa = dsfa;
    g.sfb = dsfb;
    g.ep.bias = dbias;
    g.ep.gelu = gelu;
    g.ep.residual = residual ? dout : nullptr;  // in place, as the residual stream
    g.ep.ldr = N;
    g.ep.out_f32 = dout;
    g.ep.out_bf16 = dout16;
    g.ep.ldo = N;
    if (sg_sm100_tmap(&g.a, g.kind, da, M, K, err, errlen) || sg_sm100_tmap(&g.b, g.kind, db, N, K, err, errlen) ||
        sg_sm100_gemm_run(&g, sms, 0, err, errlen)) {
        rc = -1;
        goto done;
    }
    SG_GC_TRY(cudaDeviceSynchronize());
    if (out_f32) SG_GC_TRY(cudaMemcpy(out_f32, dout, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToHost));
    if (out_bf16) SG_GC_TRY(cudaMemcpy(out_bf16, dout16, (size_t)M * N * 2, cudaMemcpyDeviceToHost));
done:
    free(hsfa);
    free(hsfb);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dsfa);
    cudaFree(dsfb);
    cudaFree(dbias);
    cudaFree(dout);
    cudaFree(dout16);
    return rc;
}
