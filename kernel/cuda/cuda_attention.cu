// kernel/cuda/cuda_attention.cu — encoder self-attention on mma.sync, scores and softmax in registers.
//
// One block per (head, image [, query-tile group]), K and V of the head in shared memory, FlashAttention-2's
// register layout: with mma.sync.m16n8k16 the fp32 accumulator fragment of S = Q K^T for two adjacent 8-key
// tiles is exactly the bf16 A fragment of P for the 16-key step of O = P V, so a warp's 16 x Tp scores never
// leave registers; the row max and sum need two quad shuffles. T <= 256 keys fit at once, so the softmax is
// exact, not online. (The first version, WMMA with the scores through shared memory, was 2x slower at batch 256
// on an H100, 9.1 vs 4.5 ms per forward, and is gone: docs/perf-notes.md.)
// V is stored transposed (Vt[dh][key]); B fragments come from ldmatrix.x4 (one instruction for four 32-bit
// fragment registers; K with head_dim 16 by 32-bit shared loads); row pitches Dh + 8 and Tp + 8 put the 8 rows
// of a fragment load on distinct banks.
// Fragment layouts (PTX ISA, m16n8k16, g = lane / 4, q = lane % 4):
//   A 16x16: a0 (g, 2q..2q+1), a1 (g+8, 2q..), a2 (g, 2q+8..), a3 (g+8, 2q+8..)
//   B 16x8:  b0 (k 2q..2q+1, n g), b1 (k 2q+8.., n g);   C 16x8: c0,c1 (g, 2q..2q+1), c2,c3 (g+8, 2q..2q+1)
#include <cstdint>
#include "cuda_kernels.h"
#include "cuda_common.h"

static constexpr int k_warps = 4;
static constexpr int k_max_tokens = 256;  // Tp / 16 <= 16 key blocks: the score fragments stay in registers
static constexpr int k_load_batch = 8;  // 16-byte loads in flight per thread while filling K and V

__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 b16 matrices from shared memory; lane l gives the address of row l % 8 of matrix l / 8, and gets
// from matrix m the pair at (row l / 4, columns 2 (l % 4) .. + 1) in register m: a B fragment half per matrix.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const sg_bf16 *p) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ uint32_t ld32(const sg_bf16 *p) { return *reinterpret_cast<const uint32_t *>(p); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
    return *reinterpret_cast<uint32_t *>(&v);
}

static size_t attention_smem(int T, int Dh) {
    const int Tp = (T + 15) & ~15;
    return (size_t)Tp * (Dh + 8) * sizeof(sg_bf16) + (size_t)Dh * (Tp + 8) * sizeof(sg_bf16);
}

// KTMAX: compile-time bound on Tp / 16 (register arrays are sized by it; the loops stop at the real KT): 4 for
// the text tower's 64 tokens, 13 for the vision tower's 196, 16 up to 256.
// Which rows a block works on (text; vision passes neither): mask: [n, Tmax] bytes, key j of sequence img is
// attended when mask[img * Tmax + j] != 0; nullptr = every key. seq_off / seq_kv (packed sequences of different
// lengths, cuda_text.cu): sequence img is rows [seq_off[img], seq_off[img + 1]) (at most Tmax) and attends to its
// first seq_kv[img] rows; nullptr = n sequences of Tmax rows. A sequence with no attended key (an all-zero mask
// row, or seq_kv 0) averages all its rows uniformly, as HF's eager attention does (it adds finfo.min to every
// score).
template <int DH, int KTMAX>
__global__ void __launch_bounds__(32 * k_warps) attention_mma_kernel(const sg_bf16 *__restrict__ qkv,
                                                                     const uint8_t *__restrict__ mask,
                                                                     const int *__restrict__ seq_off,
                                                                     const int *__restrict__ seq_kv,
                                                                     sg_bf16 *__restrict__ out, int Tmax, int D,
                                                                     float scale_log2e, int tiles_per_block) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int head = blockIdx.x, img = blockIdx.y, ld3 = 3 * D;
    const int row0 = seq_off ? seq_off[img] : img * Tmax;
    const int T = seq_off ? seq_off[img + 1] - row0 : Tmax;  // this sequence's rows (queries)
    const int kvn = seq_off ? seq_kv[img] : T;
    const bool seq_uniform = seq_off && kvn == 0;
    const int NK = seq_uniform ? T : kvn;                     // its keys: rows 0..NK-1
    const int Tp = (T + 15) & ~15, KT = Tp / 16, VLD = Tp + 8;  // shared memory was sized for Tmax >= T
    constexpr int KLD = DH + 8;
    sg_bf16 *Ks = reinterpret_cast<sg_bf16 *>(smem);  // [Tp][KLD]
    sg_bf16 *Vt = Ks + Tp * KLD;                       // [DH][VLD]
    const sg_bf16 *base = qkv + (size_t)row0 * ld3 + head * DH;

    // Consecutive threads take consecutive keys, so the transposed V writes hit consecutive halfwords. Loads are
    // issued k_load_batch at a time before any store, so a block waits for about two round trips to L2 instead
    // of Tp * Dh / 8 / 128 = 13 serial ones (the compiler cannot hoist loads over the shared stores itself).
    const int total = Tp * (DH / 8);
    for (int i0 = threadIdx.x; i0 < total; i0 += k_load_batch * blockDim.x) {
        uint4 kv[k_load_batch], vv[k_load_batch];
#pragma unroll
        for (int u = 0; u < k_load_batch; u++) {
            const int i = i0 + u * blockDim.x, t = i % Tp, c = (i / Tp) * 8;
            kv[u] = vv[u] = make_uint4(0, 0, 0, 0);
            if (i < total && t < NK) {
                kv[u] = *reinterpret_cast<const uint4 *>(base + (size_t)t * ld3 + D + c);
                vv[u] = *reinterpret_cast<const uint4 *>(base + (size_t)t * ld3 + 2 * D + c);
            }
        }
#pragma unroll
        for (int u = 0; u < k_load_batch; u++) {
            const int i = i0 + u * blockDim.x, t = i % Tp, c = (i / Tp) * 8;
            if (i < total) {
                *reinterpret_cast<uint4 *>(Ks + t * KLD + c) = kv[u];
                const sg_bf16 *ve = reinterpret_cast<const sg_bf16 *>(&vv[u]);
#pragma unroll
                for (int e = 0; e < 8; e++) Vt[(c + e) * VLD + t] = ve[e];
            }
        }
    }
    const uint8_t *km = mask ? mask + (size_t)img * Tmax : nullptr;
    int attended = 0;
    for (int t = threadIdx.x; km && t < T; t += blockDim.x) attended |= km[t] != 0;
    // also the barrier after the K/V stores; no attended key: every key counts, with score 0 (uniform)
    const bool uniform = (__syncthreads_or(attended) == 0 && km) || seq_uniform;
    if (uniform) km = nullptr;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const int t_begin = blockIdx.z * tiles_per_block;
    const int t_end = min(KT, t_begin + tiles_per_block);
    for (int qt = t_begin + warp; qt < t_end; qt += k_warps) {
        const int q0 = qt * 16;
        // Q fragments straight from global; rows past T read the next image's rows or the caller's padding.
        uint32_t qa[DH / 16][4];
        const sg_bf16 *qp = base + (size_t)(q0 + g) * ld3 + 2 * q;
#pragma unroll
        for (int kk = 0; kk < DH / 16; kk++) {
            qa[kk][0] = ld32(qp + kk * 16);
            qa[kk][1] = ld32(qp + 8 * ld3 + kk * 16);
            qa[kk][2] = ld32(qp + kk * 16 + 8);
            qa[kk][3] = ld32(qp + 8 * ld3 + kk * 16 + 8);
        }
        float s[2 * KTMAX][4];
#pragma unroll
        for (int j = 0; j < 2 * KTMAX; j++) {
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
            if (j < 2 * KT) {
                if constexpr (DH >= 32) {
                    // matrices: key rows j*8.., dh columns kk*16 + {0, 8, 16, 24} = (b0, b1) of kk and of kk + 1
                    const sg_bf16 *kp = Ks + (j * 8 + (lane & 7)) * KLD + (lane >> 3) * 8;
#pragma unroll
                    for (int kk = 0; kk < DH / 16; kk += 2) {
                        uint32_t b[4];
                        ldsm_x4(b, kp + kk * 16);
                        mma_bf16_16816(s[j], qa[kk], b[0], b[1]);
                        mma_bf16_16816(s[j], qa[kk + 1], b[2], b[3]);
                    }
                } else {
                    const sg_bf16 *kp = Ks + (j * 8 + g) * KLD + 2 * q;
#pragma unroll
                    for (int kk = 0; kk < DH / 16; kk++)
                        mma_bf16_16816(s[j], qa[kk], ld32(kp + kk * 16), ld32(kp + kk * 16 + 8));
                }
            }
        }
        // Softmax of rows g (s[.][0..1]) and g+8 (s[.][2..3]); padded keys get probability 0.
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 2 * KTMAX; j++) {
            if (j < 2 * KT) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = j * 8 + 2 * q + e;
                    const bool valid = key < NK && (!km || km[key]);
                    const float sc = uniform ? 0.f : scale_log2e;
                    s[j][e] = valid ? s[j][e] * sc : -INFINITY;
                    s[j][2 + e] = valid ? s[j][2 + e] * sc : -INFINITY;
                    mx0 = fmaxf(mx0, s[j][e]);
                    mx1 = fmaxf(mx1, s[j][2 + e]);
                }
            }
        }
#pragma unroll
        for (int o = 1; o <= 2; o <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o));
        }
        float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
        for (int j = 0; j < 2 * KTMAX; j++) {
            if (j < 2 * KT) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    s[j][e] = exp2f(s[j][e] - mx0);
                    s[j][2 + e] = exp2f(s[j][2 + e] - mx1);
                    sum0 += s[j][e];
                    sum1 += s[j][2 + e];
                }
            }
        }
#pragma unroll
        for (int o = 1; o <= 2; o <<= 1) {
            sum0 += __shfl_xor_sync(0xffffffffu, sum0, o);
            sum1 += __shfl_xor_sync(0xffffffffu, sum1, o);
        }
        // O = P V, P's A fragment made from two adjacent S accumulator tiles.
        float o[DH / 8][4];
#pragma unroll
        for (int nt = 0; nt < DH / 8; nt++) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.f;
#pragma unroll
        for (int k2 = 0; k2 < KTMAX; k2++) {
            if (k2 < KT) {
                const uint32_t pa[4] = {pack_bf16(s[2 * k2][0], s[2 * k2][1]), pack_bf16(s[2 * k2][2], s[2 * k2][3]),
                                        pack_bf16(s[2 * k2 + 1][0], s[2 * k2 + 1][1]),
                                        pack_bf16(s[2 * k2 + 1][2], s[2 * k2 + 1][3])};
                // matrices: dh rows nt*8.. and (nt+1)*8.., key columns k2*16 + {0, 8}
                const sg_bf16 *vp = Vt + ((lane >> 4) * 8 + (lane & 7)) * VLD + k2 * 16 + ((lane >> 3) & 1) * 8;
#pragma unroll
                for (int nt = 0; nt < DH / 8; nt += 2) {
                    uint32_t b[4];
                    ldsm_x4(b, vp + nt * 8 * VLD);
                    mma_bf16_16816(o[nt], pa, b[0], b[1]);
                    mma_bf16_16816(o[nt + 1], pa, b[2], b[3]);
                }
            }
        }
        const float inv0 = 1.f / sum0, inv1 = 1.f / sum1;
        const int r0 = q0 + g, r1 = q0 + g + 8;
        sg_bf16 *d0 = out + ((size_t)row0 + r0) * D + head * DH + 2 * q;
        sg_bf16 *d1 = d0 + (size_t)8 * D;
#pragma unroll
        for (int nt = 0; nt < DH / 8; nt++) {
            if (r0 < T)
                *reinterpret_cast<__nv_bfloat162 *>(d0 + nt * 8) = __floats2bfloat162_rn(o[nt][0] * inv0, o[nt][1] * inv0);
            if (r1 < T)
                *reinterpret_cast<__nv_bfloat162 *>(d1 + nt * 8) = __floats2bfloat162_rn(o[nt][2] * inv1, o[nt][3] * inv1);
        }
    }
}

template <int DH, int KTMAX>
static int set_smem(int T, char *err, size_t errlen) {
    SG_CU_TRY(cudaFuncSetAttribute(attention_mma_kernel<DH, KTMAX>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)attention_smem(T, DH)),
              err, errlen);
    return 0;
}

static int g_sms = 132;

template <int DH, int KTMAX>
static int launch(const sg_bf16 *qkv, const uint8_t *mask, const int *seq_off, const int *seq_kv, sg_bf16 *out, int n,
                  int T, int D, int H, int sms, cudaStream_t st, char *err, size_t errlen) {
    const int KT = ((T + 15) & ~15) / 16;
    // Few (head, image) pairs (small batches): split each pair's query tiles over several blocks, one tile per
    // warp, so the GPU fills; K and V are then loaded once per block (from L2).
    const int split = (long)n * H < 2L * sms ? sg_cu_div_up(KT, k_warps) : 1;
    const int tiles_per_block = sg_cu_div_up(KT, split);
    const float scale_log2e = (float)(1.0 / sqrt((double)DH) * 1.4426950408889634);  // Dh^-0.5 * log2(e)
    const dim3 grid(H, n, split);
    attention_mma_kernel<DH, KTMAX><<<grid, 32 * k_warps, attention_smem(T, DH), st>>>(
        qkv, mask, seq_off, seq_kv, out, T, D, scale_log2e, tiles_per_block);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}

#define SG_ATTN_DISPATCH(FN, ...)                                                                            \
    switch ((D / H) * 100 + (KT <= 4 ? 4 : KT <= 13 ? 13 : 16)) {                                          \
    case 1604: return FN<16, 4>(__VA_ARGS__);                                                               \
    case 3204: return FN<32, 4>(__VA_ARGS__);                                                               \
    case 6404: return FN<64, 4>(__VA_ARGS__);                                                               \
    case 12804: return FN<128, 4>(__VA_ARGS__);                                                             \
    case 1613: return FN<16, 13>(__VA_ARGS__);                                                              \
    case 1616: return FN<16, 16>(__VA_ARGS__);                                                              \
    case 3213: return FN<32, 13>(__VA_ARGS__);                                                              \
    case 3216: return FN<32, 16>(__VA_ARGS__);                                                              \
    case 6413: return FN<64, 13>(__VA_ARGS__);                                                              \
    case 6416: return FN<64, 16>(__VA_ARGS__);                                                              \
    case 12813: return FN<128, 13>(__VA_ARGS__);                                                            \
    case 12816: return FN<128, 16>(__VA_ARGS__);                                                            \
    default: snprintf(err, errlen, "%s:%d: unsupported head_dim %d / %d tokens", __FILE__, __LINE__, D / H, T); \
        return -1;                                                                                          \
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
        attention_smem(T, Dh) > (size_t)optin) {
        snprintf(why, whylen, "attention kernel needs %zu bytes of shared memory per block, the device allows %d",
                 attention_smem(T, Dh), optin);
        return 0;
    }
    return 1;
}

int sg_cu_attention_init(int T, int D, int H, char *err, size_t errlen) {
    int dev = 0;
    SG_CU_TRY(cudaGetDevice(&dev), err, errlen);
    SG_CU_TRY(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev), err, errlen);
    const int KT = ((T + 15) & ~15) / 16;
    SG_ATTN_DISPATCH(set_smem, T, err, errlen)
}

static int attention_run(const sg_bf16 *qkv, const uint8_t *mask, const int *seq_off, const int *seq_kv, sg_bf16 *out,
                         int n, int T, int D, int H, cudaStream_t st, char *err, size_t errlen) {
    const int KT = ((T + 15) & ~15) / 16;
    SG_ATTN_DISPATCH(launch, qkv, mask, seq_off, seq_kv, out, n, T, D, H, g_sms, st, err, errlen)
}

int sg_cu_attention(const sg_bf16 *qkv, sg_bf16 *out, int n, int T, int D, int H, cudaStream_t st, char *err,
                    size_t errlen) {
    return attention_run(qkv, nullptr, nullptr, nullptr, out, n, T, D, H, st, err, errlen);
}

int sg_cu_attention_masked(const sg_bf16 *qkv, const uint8_t *mask, sg_bf16 *out, int n, int T, int D, int H,
                           cudaStream_t st, char *err, size_t errlen) {
    return attention_run(qkv, mask, nullptr, nullptr, out, n, T, D, H, st, err, errlen);
}

int sg_cu_attention_packed(const sg_bf16 *qkv, const int *seq_off, const int *seq_kv, sg_bf16 *out, int n, int Tmax,
                           int D, int H, cudaStream_t st, char *err, size_t errlen) {
    return attention_run(qkv, nullptr, seq_off, seq_kv, out, n, Tmax, D, H, st, err, errlen);
}
