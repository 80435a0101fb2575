// docs/gpu-runs/2026-11-27-h100-s31-mma-bits.cu — a one-off experiment (session 31, issue 12 target 3), never
// linked into the product: are the fp32 sums of a bf16 K chain the same bits when run as wgmma (m64nNk16, what the
// megakernel's GEMM tasks use at every batch size) and as warp-level mma.sync (m16n8k16, HMMA: tiles of 16 rows)?
// If they are, a small-batch schedule could cut a GEMM into 16- or 32-row tasks on mma.sync and still give an
// image's rows the bits the large batches give (target 2); if not, every task of every batch size must use wgmma
// of 64 rows, as today. Also: wgmma N = 64 against N = 256 (expected equal, session 22), and both against two CPU
// models of one k16 step (exact 16-term sum rounded once, then added; fp32 FMA chain in k order); every case from
// zero and from a bias (the accumulators' start in the megakernel's OUT / FC2 tasks).
// Build: nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -I. THIS.cu -o mma_bits; run: ./mma_bits
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include "kernel/sm90/sm90_ptx.cuh"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

// One K block of 64 of rows [0, R) of X [R, K] into shared memory as TMA's SWIZZLE_128B K-major layout: row r at
// r * 128 bytes, its 16-byte chunk c at chunk c ^ (r % 8).
__device__ void stage_block(uint8_t *s, const __nv_bfloat16 *x, int R, int K, int k0) {
    for (int i = threadIdx.x; i < R * 8; i += blockDim.x) {
        const int r = i / 8, c = i % 8;
        const uint4 v = *reinterpret_cast<const uint4 *>(x + (size_t)r * K + k0 + 8 * c);
        *reinterpret_cast<uint4 *>(s + r * 128 + ((c ^ (r % 8)) * 16)) = v;
    }
}

// C [64, N] = A [64, K] . B [N, K]^T with wgmma m64nNk16 (N = 64 or 256), one warpgroup, k in order.
template <int N>
__global__ void k_wgmma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, const float *bias, float *C, int K) {
    extern __shared__ __align__(1024) uint8_t smem[];
    uint8_t *sa = smem, *sb = smem + 64 * 128;
    float acc[N / 2];
    for (int k = 0; k < N / 2; k++) acc[k] = bias ? bias[8 * (k / 4) + 2 * (threadIdx.x % 4) + k % 2] : 0.0f;
    for (int k0 = 0; k0 < K; k0 += 64) {
        stage_block(sa, A, 64, K, k0);
        stage_block(sb, B, N, K, k0);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        const uint64_t da = sg_smem_desc(sa, 16, 1024), db = sg_smem_desc(sb, 16, 1024);
        sg_wgmma_fence_regs(acc);
        sg_wgmma_fence();
        for (int kk = 0; kk < 4; kk++) {
            const int scale_d = (bias || k0 || kk) ? 1 : 0;
            if constexpr (N == 256) sg_wgmma_ss_n256(acc, da + 2 * kk, db + 2 * kk, scale_d);
            else sg_wgmma_ss_n64(acc, da + 2 * kk, db + 2 * kk, scale_d);
        }
        sg_wgmma_commit();
        sg_wgmma_wait<0>();
        sg_wgmma_fence_regs(acc);
        __syncthreads();
    }
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    for (int k = 0; k < N / 2; k++) {
        const int row = 16 * warp + lane / 4 + 8 * ((k / 2) % 2), col = 8 * (k / 4) + 2 * (lane % 4) + k % 2;
        C[row * N + col] = acc[k];
    }
}

// The same C [64, 64] with mma.sync m16n8k16: warp w the rows 16 w.., eight n8 blocks, k in order.
__global__ void k_mma_sync(const __nv_bfloat16 *A, const __nv_bfloat16 *B, const float *bias, float *C, int K) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    float d[8][4];
    for (int j = 0; j < 8; j++) {
        const float b0 = bias ? bias[8 * j + 2 * t] : 0.0f, b1 = bias ? bias[8 * j + 2 * t + 1] : 0.0f;
        d[j][0] = d[j][2] = b0, d[j][1] = d[j][3] = b1;
    }
    const uint32_t *A32 = reinterpret_cast<const uint32_t *>(A), *B32 = reinterpret_cast<const uint32_t *>(B);
    const int r0 = 16 * warp + g, K2 = K / 2;
    for (int k = 0; k < K; k += 16) {
        const uint32_t a0 = A32[r0 * K2 + (k + 2 * t) / 2], a1 = A32[(r0 + 8) * K2 + (k + 2 * t) / 2];
        const uint32_t a2 = A32[r0 * K2 + (k + 2 * t + 8) / 2], a3 = A32[(r0 + 8) * K2 + (k + 2 * t + 8) / 2];
        for (int j = 0; j < 8; j++) {
            const int n = 8 * j + g;
            const uint32_t b0 = B32[n * K2 + (k + 2 * t) / 2], b1 = B32[n * K2 + (k + 2 * t + 8) / 2];
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
    }
    for (int j = 0; j < 8; j++) {
        C[r0 * 64 + 8 * j + 2 * t] = d[j][0], C[r0 * 64 + 8 * j + 2 * t + 1] = d[j][1];
        C[(r0 + 8) * 64 + 8 * j + 2 * t] = d[j][2], C[(r0 + 8) * 64 + 8 * j + 2 * t + 1] = d[j][3];
    }
}

static uint64_t rng = 88172645463325252ull;
static double urand() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (rng >> 11) * (1.0 / 9007199254740992.0); }
static double nrand() { return sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand()); }
static float bf(float x) { __nv_bfloat16 h = __float2bfloat16_rn(x); return __bfloat162float(h); }

int main() {
    const int Ks[2] = {768, 3072};
    const char *dists[3] = {"normal", "outliers (1 % x 100)", "positive (|normal|)"};
    cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
    printf("device: %s, sm_%d%d\n", pr.name, pr.major, pr.minor);
    CK(cudaFuncSetAttribute(k_wgmma<256>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 128 + 256 * 128));
    printf("| K | values | wgmma n64 vs n256 | mma.sync vs wgmma n64 | wgmma vs CPU k16-exact | wgmma vs CPU fma chain | mma.sync vs CPU k16-exact | max |rel| wgmma vs double |\n");
    printf("|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (int K : Ks)
        for (int dist = 0; dist < 3; dist++)
            for (int rep = 0; rep < 4; rep++) {
                const bool with_bias = rep >= 2;
                std::vector<float> hbias(256);
                for (int i = 0; i < 256; i++) hbias[i] = with_bias ? bf((float)(4 * nrand())) : 0.0f;
                std::vector<__nv_bfloat16> hA(64 * K), hB(256 * K);
                std::vector<float> fA(64 * K), fB(256 * K);
                auto gen = [&](void) {
                    double v = nrand();
                    if (dist == 1 && urand() < 0.01) v *= 100;
                    if (dist == 2) v = fabs(v);
                    return bf((float)v);
                };
                for (int i = 0; i < 64 * K; i++) fA[i] = gen(), hA[i] = __float2bfloat16_rn(fA[i]);
                for (int i = 0; i < 256 * K; i++) fB[i] = gen(), hB[i] = __float2bfloat16_rn(fB[i]);
                __nv_bfloat16 *dA, *dB; float *c64, *c256, *cm, *db = nullptr;
                CK(cudaMalloc(&db, 256 * 4));
                CK(cudaMemcpy(db, hbias.data(), 256 * 4, cudaMemcpyHostToDevice));
                const float *dbias = with_bias ? db : nullptr;
                CK(cudaMalloc(&dA, 64 * K * 2)); CK(cudaMalloc(&dB, 256 * K * 2));
                CK(cudaMalloc(&c64, 64 * 64 * 4)); CK(cudaMalloc(&c256, 64 * 256 * 4)); CK(cudaMalloc(&cm, 64 * 64 * 4));
                CK(cudaMemcpy(dA, hA.data(), 64 * K * 2, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(dB, hB.data(), 256 * K * 2, cudaMemcpyHostToDevice));
                CK(cudaMemset(c64, 0xff, 64 * 64 * 4)); CK(cudaMemset(c256, 0xff, 64 * 256 * 4)); CK(cudaMemset(cm, 0xff, 64 * 64 * 4));
                k_wgmma<64><<<1, 128, 64 * 128 * 2>>>(dA, dB, dbias, c64, K);
                k_wgmma<256><<<1, 128, 64 * 128 + 256 * 128>>>(dA, dB, dbias, c256, K);
                k_mma_sync<<<1, 128>>>(dA, dB, dbias, cm, K);
                CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                std::vector<float> h64(64 * 64), h256(64 * 256), hm(64 * 64);
                CK(cudaMemcpy(h64.data(), c64, h64.size() * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(h256.data(), c256, h256.size() * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(hm.data(), cm, hm.size() * 4, cudaMemcpyDeviceToHost));
                int d_n = 0, d_m = 0, d_ex = 0, d_fma = 0, d_mex = 0; double maxrel = 0;
                for (int r = 0; r < 64; r++)
                    for (int c = 0; c < 64; c++) {
                        const float w = h64[r * 64 + c];
                        float ex = hbias[c], fm = hbias[c]; double dd = hbias[c], mag = fabs(hbias[c]);
                        for (int k = 0; k < K; k += 16) {
                            double s = 0;
                            for (int j = 0; j < 16; j++) {
                                const double p = (double)fA[r * K + k + j] * fB[c * K + k + j];
                                s += p, fm = fmaf(fA[r * K + k + j], fB[c * K + k + j], fm), mag += fabs(p);
                            }
                            ex = (float)((double)ex + s);  // the k16 step's exact sum and the accumulator, rounded once
                            dd += s;
                        }
                        uint32_t bw, b2, bm, be, bfm;
                        memcpy(&bw, &w, 4); memcpy(&b2, &h256[r * 256 + c], 4); memcpy(&bm, &hm[r * 64 + c], 4);
                        memcpy(&be, &ex, 4); memcpy(&bfm, &fm, 4);
                        d_n += bw != b2, d_m += bw != bm, d_ex += bw != be, d_fma += bw != bfm, d_mex += bm != be;
                        const double rel = fabs(w - dd) / (mag > 0 ? mag : 1);
                        if (rel > maxrel) maxrel = rel;
                    }
                printf("| %d | %s%s | %d / 4096 differ | %d / 4096 | %d / 4096 | %d / 4096 | %d / 4096 | %.2e |\n", K, dists[dist], with_bias ? ", from a bias" : "",
                       d_n, d_m, d_ex, d_fma, d_mex, maxrel);
                CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(c64)); CK(cudaFree(c256)); CK(cudaFree(cm)); CK(cudaFree(db));
            }
    return 0;
}
