// kernel/cuda/cuda_attention.cu — encoder self-attention: the dispatch, and the WMMA kernel.
//
// sg_cu_attention runs the mma.sync kernel of cuda_attention_mma.cu (scores in registers), unless the
// environment variable SG_CUDA_ATTN=wmma asks for the kernel below: the first version, simpler to read and
// check (WMMA API, scores through shared memory), about 2x slower at batch 256 on an H100 (9.1 vs 4.5 ms per forward); kept as the cross-
// check of the faster one.
//
// WMMA kernel: one block per (head, image).
// T = 196 tokens is small enough that a whole head's K and V (T x Dh bf16, padded to a multiple of 16 rows and
// zero-filled) live in shared memory, so no online softmax is needed: each warp takes a 16-query tile, computes
// its full 16 x Tp score block with bf16 WMMA (fp32 accumulate) into its own shared buffer, does an exact fp32
// softmax row by row (scale folded into exp2), writes the unnormalised probabilities back as bf16 over the same
// buffer, multiplies by V with WMMA, and divides by the row sums on the way out. Q fragments are read straight
// from global memory; the last tile of an image reads up to 15 rows past it (the next image's, or the padding
// rows the caller allocates), and those rows' results are never stored.
// Shared memory: K, V 2 * Tp * (Dh + 8) bf16 (+8: row pitch off the 128-byte bank period) + 4 warps * 16 rows *
// (Tp + 4) fp32 = 112 KiB for T = 196, Dh = 64, so two blocks fit on an H100 SM.
#include <cstdlib>
#include <cstring>
#include <mma.h>
#include "cuda_kernels.h"
#include "cuda_common.h"

using namespace nvcuda;

static constexpr int k_warps = 4;
static constexpr int k_max_tokens = 256;  // softmax keeps Tp / 32 <= 8 scores per lane in registers

static size_t attention_smem(int T, int Dh) {
    const int Tp = (T + 15) & ~15;
    return (size_t)2 * Tp * (Dh + 8) * sizeof(sg_bf16) + (size_t)k_warps * 16 * (Tp + 4) * sizeof(float);
}

template <int DH>
__global__ void __launch_bounds__(32 * k_warps) attention_kernel(const sg_bf16 *__restrict__ qkv,
                                                                 sg_bf16 *__restrict__ out, int T, int D,
                                                                 float scale_log2e) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int Tp = (T + 15) & ~15, KLD = DH + 8, SLD = Tp + 4, PLD = 2 * SLD;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int head = blockIdx.x, img = blockIdx.y, ld3 = 3 * D;
    sg_bf16 *Ks = reinterpret_cast<sg_bf16 *>(smem);
    sg_bf16 *Vs = Ks + Tp * KLD;
    float *Sw = reinterpret_cast<float *>(Vs + Tp * KLD) + warp * 16 * SLD;
    sg_bf16 *Pw = reinterpret_cast<sg_bf16 *>(Sw);  // probabilities overwrite the scores, row r over row r
    const sg_bf16 *base = qkv + (size_t)img * T * ld3 + head * DH;

    // K and V of this head into shared memory, 16 bytes at a time; rows T..Tp-1 are zero so padded keys
    // contribute 0 * 0 (their probabilities are also 0).
    constexpr int VPR = DH / 8;
    for (int i = threadIdx.x; i < Tp * VPR; i += blockDim.x) {
        const int t = i / VPR, c = (i % VPR) * 8;
        uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
        if (t < T) {
            kv = *reinterpret_cast<const uint4 *>(base + (size_t)t * ld3 + D + c);
            vv = *reinterpret_cast<const uint4 *>(base + (size_t)t * ld3 + 2 * D + c);
        }
        *reinterpret_cast<uint4 *>(Ks + t * KLD + c) = kv;
        *reinterpret_cast<uint4 *>(Vs + t * KLD + c) = vv;
    }
    __syncthreads();

    const int ntiles = Tp / 16;
    for (int qt = warp; qt < ntiles; qt += k_warps) {
        const int q0 = qt * 16;
        wmma::fragment<wmma::matrix_a, 16, 16, 16, sg_bf16, wmma::row_major> qf[DH / 16];
#pragma unroll
        for (int kk = 0; kk < DH / 16; kk++) wmma::load_matrix_sync(qf[kk], base + (size_t)q0 * ld3 + kk * 16, ld3);
        // S = Q K^T: B(k = dh, n = key) is K[key][dh], i.e. column-major with pitch KLD.
        for (int kt = 0; kt < ntiles; kt++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
            wmma::fill_fragment(s, 0.f);
#pragma unroll
            for (int kk = 0; kk < DH / 16; kk++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, sg_bf16, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, Ks + kt * 16 * KLD + kk * 16, KLD);
                wmma::mma_sync(s, qf[kk], kf, s);
            }
            wmma::store_matrix_sync(Sw + kt * 16, s, SLD, wmma::mem_row_major);
        }
        __syncwarp();
        // Softmax in fp32, one row at a time across the warp; lane r keeps 1 / rowsum(r).
        float inv_sum = 0.f;
        for (int r = 0; r < 16; r++) {
            float v[k_max_tokens / 32];
            float mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < k_max_tokens / 32; i++) {
                const int j = lane + 32 * i;
                v[i] = j < T ? Sw[r * SLD + j] * scale_log2e : -INFINITY;
                mx = fmaxf(mx, v[i]);
            }
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            float sum = 0.f;
#pragma unroll
            for (int i = 0; i < k_max_tokens / 32; i++) {
                const int j = lane + 32 * i;
                v[i] = j < T ? exp2f(v[i] - mx) : 0.f;
                sum += v[i];
            }
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            __syncwarp();  // every lane has read row r before any lane overwrites it with bf16
#pragma unroll
            for (int i = 0; i < k_max_tokens / 32; i++) {
                const int j = lane + 32 * i;
                if (j < Tp) Pw[r * PLD + j] = __float2bfloat16(v[i]);
            }
            if (lane == r) inv_sum = 1.f / sum;
        }
        __syncwarp();
        // O = P V: B(k = key, n = dh) is V[key][dh], row-major with pitch KLD.
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[DH / 16];
#pragma unroll
        for (int nt = 0; nt < DH / 16; nt++) wmma::fill_fragment(o[nt], 0.f);
        for (int kt = 0; kt < ntiles; kt++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, sg_bf16, wmma::row_major> pf;
            wmma::load_matrix_sync(pf, Pw + kt * 16, PLD);
#pragma unroll
            for (int nt = 0; nt < DH / 16; nt++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, sg_bf16, wmma::row_major> vf;
                wmma::load_matrix_sync(vf, Vs + kt * 16 * KLD + nt * 16, KLD);
                wmma::mma_sync(o[nt], pf, vf, o[nt]);
            }
        }
        __syncwarp();  // all P reads done before O overwrites the buffer
#pragma unroll
        for (int nt = 0; nt < DH / 16; nt++) wmma::store_matrix_sync(Sw + nt * 16, o[nt], SLD, wmma::mem_row_major);
        __syncwarp();
        for (int r = 0; r < 16; r++) {
            const float inv = __shfl_sync(0xffffffffu, inv_sum, r);
            const int t = q0 + r;
            if (t >= T) break;  // warp-uniform
            sg_bf16 *dst = out + ((size_t)img * T + t) * D + head * DH;
            for (int c = 2 * lane; c < DH; c += 64)
                *reinterpret_cast<__nv_bfloat162 *>(dst + c) =
                    __floats2bfloat162_rn(Sw[r * SLD + c] * inv, Sw[r * SLD + c + 1] * inv);
        }
        __syncwarp();  // the next tile reuses this warp's buffer
    }
}

int sg_cu_attention_supported(int T, int D, int H, char *why, size_t whylen) {
    const int Dh = D / H;
    if (D % H != 0 || (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)) {
        snprintf(why, whylen, "attention kernel supports head_dim 16, 32, 64 or 128, got %d (hidden %d / %d heads)",
                 D % H ? -1 : Dh, D, H);
        return 0;
    }
    if (T > k_max_tokens) {
        snprintf(why, whylen, "attention kernel supports up to %d tokens, got %d", k_max_tokens, T);
        return 0;
    }
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
        sg_cu_attention_mma_smem(T, Dh) > (size_t)optin) {
        snprintf(why, whylen, "attention kernel needs %zu bytes of shared memory per block, the device allows %d",
                 sg_cu_attention_mma_smem(T, Dh), optin);
        return 0;
    }
    return 1;
}

template <int DH>
static int set_smem(int T, char *err, size_t errlen) {
    SG_CU_TRY(cudaFuncSetAttribute(attention_kernel<DH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)attention_smem(T, DH)),
              err, errlen);
    return 0;
}

static int g_use_wmma = -1;  // -1: not initialised
static int g_sms = 132;

int sg_cu_attention_init(int T, int D, int H, char *err, size_t errlen) {
    const char *v = getenv("SG_CUDA_ATTN");
    g_use_wmma = v && strcmp(v, "wmma") == 0;
    int dev = 0;
    SG_CU_TRY(cudaGetDevice(&dev), err, errlen);
    SG_CU_TRY(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev), err, errlen);
    if (sg_cu_attention_mma_init(T, D, H, err, errlen)) return -1;
    if (!g_use_wmma) return 0;
    switch (D / H) {
    case 16: return set_smem<16>(T, err, errlen);
    case 32: return set_smem<32>(T, err, errlen);
    case 64: return set_smem<64>(T, err, errlen);
    case 128: return set_smem<128>(T, err, errlen);
    default: snprintf(err, errlen, "%s:%d: unsupported head_dim %d", __FILE__, __LINE__, D / H); return -1;
    }
}

template <int DH>
static int launch(const sg_bf16 *qkv, sg_bf16 *out, int n, int T, int D, int H, cudaStream_t st, char *err,
                  size_t errlen) {
    const size_t smem = attention_smem(T, DH);
    // scale = Dh^-0.5 (exact for 64: 0.125), folded with log2(e) so the softmax uses exp2f.
    const float scale_log2e = (float)(1.0 / sqrt((double)DH) * 1.4426950408889634);
    attention_kernel<DH><<<dim3(H, n), 32 * k_warps, smem, st>>>(qkv, out, T, D, scale_log2e);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}

int sg_cu_attention(const sg_bf16 *qkv, sg_bf16 *out, int n, int T, int D, int H, cudaStream_t st, char *err,
                    size_t errlen) {
    if (!g_use_wmma) return sg_cu_attention_mma(qkv, out, n, T, D, H, g_sms, st, err, errlen);
    switch (D / H) {
    case 16: return launch<16>(qkv, out, n, T, D, H, st, err, errlen);
    case 32: return launch<32>(qkv, out, n, T, D, H, st, err, errlen);
    case 64: return launch<64>(qkv, out, n, T, D, H, st, err, errlen);
    case 128: return launch<128>(qkv, out, n, T, D, H, st, err, errlen);
    default: snprintf(err, errlen, "%s:%d: unsupported head_dim %d", __FILE__, __LINE__, D / H); return -1;
    }
}
