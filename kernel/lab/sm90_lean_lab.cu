// kernel/lab/sm90_lean_lab.cu — the lean batch-1 schedule (sm90_lean_lab.h): L encoder layers of one image in one
// launch of 128 CTAs, five stages a layer, each stage on every CTA.
//
// Layout. CTA b owns row group g = b / 32 (tokens 49 g .. 49 g + 48) and column group c = b % 32 in the four GEMM
// stages (72 of Wqkv's 2,304 output columns, 96 of W1's 3,072, 24 of Wo's and W2's 768), and in the attention
// stage, b < 120, head b / 10 and query tiles {b % 10, b % 10 + 10} of its 13 tiles of 16. Between stages every
// CTA increments the stage's counter and waits until all 128 have (targets grow by 128 each launch: `epoch`), so
// each stage is a grid-wide hand-off, as the estimate assumed. Before that wait a CTA issues the copies of its
// next weight slice (weights do not depend on the data), meant to stream while the previous stage finishes;
// measured, they delay the wait's poll by about as long as they take (docs/perf-notes.md, session 33). Params'
// w_late issues them after the wait instead, and `diag` leaves out the weight or the A copies (timing only).
//
// Shared memory (bf16 rows padded by 8 elements, so a row is an odd number of 16-byte units and ldmatrix's eight
// row addresses fall in eight different bank groups):
//   QKV / FC1 / OUT   W slice [N][776], then A [49][776] (LayerNorm's output, or O's rows)
//   FC2               W slice [24][3080], then a ring of 3 A chunks [49][264] (256 columns of H each)
//   ATT               K [208][72], V [208][72], Q [32][72], then the key-split partials (fp32) and their stats
// A's rows 49 .. 63 (the fourth m16 tile's tail) are not stored: their ldmatrix addresses repeat row 48 and the
// results are dropped.
//
// Attention: each 16-query tile is split over 4 warps by keys (64, 48, 48, 48 of the 208; keys >= 196 masked),
// each with its own running max and sum, merged through shared memory; P is rounded to bf16 for P.V. Not the
// megakernel's arithmetic (lab: the check is against a CPU reference with a tolerance).
#include "sm90_lean_lab.h"

#include <cuda_bf16.h>
#include <cstdint>
#include <cstring>
#include <vector>
#include "../mega/mega_gelu.cuh"
#include "../mega/mega_ln.cuh"
#include "../mega/tma_ptx.cuh"
#include "../sm100/sm100_attn.cuh"
#include "../warp_reduce.cuh"
#include "lab_cuda.cuh"

namespace {
constexpr int T = SG_LEAN_T, D = SG_LEAN_D, F = SG_LEAN_F, HD = 64, QKVN = 3 * D, STAGES = SG_LEAN_STAGES;
constexpr int RG = 4, RR = 49, CG = 32, CTAS = RG * CG, THREADS = 256, WARPS = THREADS / 32;
constexpr int LDK = D + 8, LDF = F + 8;               // 768- and 3,072-wide rows in shared memory
constexpr int KC = 256, LDC = KC + 8, NCH = F / KC, NS = 3;  // FC2's A chunks and ring
constexpr int NQKV = QKVN / CG, NFC1 = F / CG, NOUT = D / CG;  // 72, 96, 24 columns a CTA
constexpr int KEYS = 208, LDH = HD + 8, ATT_CTAS = 120, QT = 13;  // 13 query tiles of 16 a head
static_assert(RG * RR == T && NQKV % 8 == 0 && NFC1 % 8 == 0 && NOUT % 8 == 0, "lean lab tiling");

constexpr int SMEM_QKV = (NQKV + RR) * LDK * 2;
constexpr int SMEM_FC1 = (NFC1 + RR) * LDK * 2;
constexpr int SMEM_OUT = (NOUT + RR) * LDK * 2;
constexpr int SMEM_FC2 = NOUT * LDF * 2 + NS * RR * LDC * 2;
constexpr int ATT_SCRATCH = 2 * KEYS * LDH * 2 + 32 * LDH * 2;  // where the partials start
constexpr int SMEM_ATT = ATT_SCRATCH + 2 * 4 * 16 * HD * 4 + 2 * 4 * 16 * 2 * 4;
constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int SMEM = cmax(cmax(cmax(SMEM_QKV, SMEM_FC1), cmax(SMEM_OUT, SMEM_FC2)), SMEM_ATT);
static_assert(SMEM <= 227 * 1024, "lean lab shared memory");

struct LayerDev {
    const __nv_bfloat16 *wqkv, *wo, *w1, *w2;
    const float *bqkv, *bo, *b1, *b2, *ln1g, *ln1b, *ln2g, *ln2b;
};
struct Params {
    LayerDev layer[SG_LEAN_MAX_LAYERS];
    int layers;
    const float *h_in;
    float *h;
    __nv_bfloat16 *qkv, *o, *hm;
    unsigned *cnt;  // [layers * STAGES]
    unsigned epoch;
    float eps;
    int w_late;                 // 1: a stage's weight copies are issued after its wait, not before
    int diag;                   // diagnostics (wrong outputs): 1 no weight copies, 2 no A operand copies / LayerNorm
    unsigned long long *trace;  // NULL, or [layers * STAGES][CTAS][4]: ready, operands in, K loop done, done
};

// Thread 0 writes %globaltimer into slot k of the CTA's trace record for the stage (traced launches only):
// 0 ready (the wait passed), 1 operands in shared memory (LayerNorm done, the first FC2 chunk), 2 warp 0's MMAs
// done, 3 stores done.
struct Stamp {
    unsigned long long *t;
    __device__ __forceinline__ void operator()(int k) const {
        if (t && threadIdx.x == 0) t[k] = sg_globaltimer();
    }
};

// --- instructions ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void cp16(void *s, const void *g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sg_smem_u32(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// ldmatrix and mma.sync m16n8k16 (bf16 in, fp32 sums): the wrappers of kernel/sm100/sm100_attn.cuh (sm_80
// instructions), given generic pointers to shared memory.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void *p) { sg_mma_attn_ldsm_x4(r, sg_smem_u32(p)); }
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], const void *p) { sg_mma_attn_ldsm_x2(r, sg_smem_u32(p)); }
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void *p) {
    sg_mma_attn_ldsm_x4_trans(r, sg_smem_u32(p));
}
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// --- pieces ---------------------------------------------------------------------------------------------------
// rows x cols bf16 (cols a multiple of 8) from g (row stride ldg) into shared s (row stride lds), by every thread.
__device__ __forceinline__ void copy_rows(__nv_bfloat16 *s, int lds, const __nv_bfloat16 *g, size_t ldg, int rows,
                                          int cols) {
    const int per = cols / 8, n = rows * per;
#pragma unroll 1
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const int r = i / per, c = (i - r * per) * 8;
        cp16(s + r * lds + c, g + (size_t)r * ldg + c);
    }
}

// Thread 0 waits until *cnt reaches target (acquire; a trap after SG_SPIN_LIMIT cycles instead of a hang), then
// the CTA passes a barrier.
__device__ __forceinline__ void wait_count(const unsigned *cnt, unsigned target) {
    if (threadIdx.x == 0) {
        const long long t0 = clock64();
        while (sg_ld_acquire(cnt) < target)
            if (clock64() - t0 > (long long)SG_SPIN_LIMIT) __trap();
        __threadfence();
    }
    __syncthreads();
}
// Every thread's stores done (barrier), then thread 0 makes them visible and counts the CTA in.
__device__ __forceinline__ void signal_count(unsigned *cnt) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        sg_red_release_add(cnt, 1);
    }
}

// LayerNorm's output row (sg_ln_rows_to's callback) into A's shared-memory row row - r0: sg_ln_out_bf16's loop
// with the row offset (kept here rather than added to the product's struct, whose SASS would move: session 33).
struct LnToSmem {
    const float *g, *b;
    __nv_bfloat16 *y;
    int r0;
    __device__ __forceinline__ void operator()(int row, const float (&v)[SG_LN_PER_LANE], float mean,
                                               float rstd) const {
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int i = 0; i < SG_LN_PER_LANE / 4; i++) {
            const int c = 4 * lane + 128 * i;
            const float4 gg = __ldg(reinterpret_cast<const float4 *>(g + c));
            const float4 bb = __ldg(reinterpret_cast<const float4 *>(b + c));
            sg_ln_store4_bf16(y + (row - r0) * LDK + c, sg_ln_apply(v[4 * i], mean, rstd, gg.x, bb.x),
                              sg_ln_apply(v[4 * i + 1], mean, rstd, gg.y, bb.y),
                              sg_ln_apply(v[4 * i + 2], mean, rstd, gg.z, bb.z),
                              sg_ln_apply(v[4 * i + 3], mean, rstd, gg.w, bb.w));
        }
    }
};

// One warp's share of a [49 x N] += A[49 x kn] . W[N x kn]^T over k in [0, kn) (kn a multiple of 32): m16 tile
// mt, n8 tiles n0 .. n0 + nn - 1 (nn <= NT) of W's rows. A and W in shared memory with row strides lda, ldw
// (elements). The fragments of step k + 16 are loaded before the MMAs of step k (two register sets), so the
// ldmatrix latency overlaps the MMAs; each output stays one k chain in k order.
template <int NT>
__device__ __forceinline__ void warp_gemm(float (&acc)[NT][4], const __nv_bfloat16 *A, int lda,
                                          const __nv_bfloat16 *W, int ldw, int kn, int mt, int n0, int nn) {
    const int lane = threadIdx.x % 32;
    int arow = mt * 16 + (lane & 15);
    if (arow > RR - 1) arow = RR - 1;
    const __nv_bfloat16 *ap = A + arow * lda + (lane >> 4) * 8;
    const __nv_bfloat16 *bp4 = W + (n0 + (lane >> 4) * 8 + (lane & 7)) * ldw + ((lane >> 3) & 1) * 8;
    const __nv_bfloat16 *bp2 = W + (n0 + (lane & 7)) * ldw + ((lane >> 3) & 1) * 8;
    uint32_t a[2][4], bf[2][NT][2];
    auto load = [&](int s, int k) {
        ldsm_x4(a[s], ap + k);
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
            if (j + 1 < nn) {
                uint32_t t[4];
                ldsm_x4(t, bp4 + j * 8 * ldw + k);
                bf[s][j][0] = t[0], bf[s][j][1] = t[1], bf[s][j + 1][0] = t[2], bf[s][j + 1][1] = t[3];
            } else if (j < nn) {
                uint32_t t[2];
                ldsm_x2(t, bp2 + j * 8 * ldw + k);
                bf[s][j][0] = t[0], bf[s][j][1] = t[1];
            }
        }
    };
    auto mmas = [&](int s) {
#pragma unroll
        for (int j = 0; j < NT; j++)
            if (j < nn) sg_mma_attn_hmma(acc[j], a[s], bf[s][j][0], bf[s][j][1]);
    };
    load(0, 0);
#pragma unroll 2
    for (int k = 0; k < kn; k += 32) {
        load(1, k + 16);
        mmas(0);
        if (k + 32 < kn) load(0, k + 32);
        mmas(1);
    }
}

// The warp's tiles of a stage with nt n8 tiles: m16 tile warp % 4; warps 0-3 take the first ceil(nt / 2) n8
// tiles, warps 4-7 the rest.
struct WarpTiles {
    int mt, n0, nn;
};
__device__ __forceinline__ WarpTiles warp_tiles(int nt) {
    const int warp = threadIdx.x / 32, half = (nt + 1) / 2;
    return {warp % 4, warp < 4 ? 0 : half * 8, warp < 4 ? half : nt - half};
}
// Calls ep(row in group, column in slice, v0, v1) for the two adjacent columns each thread holds, rows < 49.
template <int NT, class Ep>
__device__ __forceinline__ void warp_epilogue(const float (&acc)[NT][4], const WarpTiles &w, const Ep &ep) {
    const int lane = threadIdx.x % 32, r = w.mt * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        if (j >= w.nn) break;
        const int col = w.n0 + j * 8 + 2 * (lane % 4);
        if (r < RR) ep(r, col, acc[j][0], acc[j][1]);
        if (r + 8 < RR) ep(r + 8, col, acc[j][2], acc[j][3]);
    }
}

// --- stages ---------------------------------------------------------------------------------------------------
// LayerNorm of the group's rows of x into A, then x A . W^T over K = 768 for a slice of N (= 8 nt) columns whose
// copies were issued before (and committed as the only pending group).
template <int NT, class Ep>
__device__ __forceinline__ void ln_gemm(unsigned char *smem, int N, const float *x, const float *g, const float *b,
                                        float eps, int r0, int no_a, const Stamp &st, const Ep &ep) {
    __nv_bfloat16 *W = reinterpret_cast<__nv_bfloat16 *>(smem), *A = W + N * LDK;
    if (!no_a) sg_ln_rows_to<4>(x, D, eps, r0, RR, T, threadIdx.x / 32, WARPS, LnToSmem{g, b, A, r0});
    cp_wait<0>();
    __syncthreads();
    st(1);
    const WarpTiles w = warp_tiles(N / 8);
    float acc[NT][4] = {};
    warp_gemm<NT>(acc, A, LDK, W, LDK, D, w.mt, w.n0, w.nn);
    st(2);
    warp_epilogue<NT>(acc, w, ep);
}

// One (head, query tiles) attention task: K and V of the head, 1-2 tiles of 16 queries.
__device__ __forceinline__ void attention(unsigned char *smem, const __nv_bfloat16 *qkv, __nv_bfloat16 *o,
                                          const Stamp &st) {
    const int b = blockIdx.x, head = b / 10, j = b % 10, nm = j + 10 < QT ? 2 : 1;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *Ks = reinterpret_cast<__nv_bfloat16 *>(smem), *Vs = Ks + KEYS * LDH, *Qs = Vs + KEYS * LDH;
    float *part = reinterpret_cast<float *>(smem + ATT_SCRATCH), *stat = part + 2 * 4 * 16 * HD;
    copy_rows(Ks, LDH, qkv + D + head * HD, QKVN, T, HD);
    copy_rows(Vs, LDH, qkv + 2 * D + head * HD, QKVN, T, HD);
    for (int m = 0; m < nm; m++) {
        const int q0 = (j + 10 * m) * 16, rows = q0 + 16 <= T ? 16 : T - q0;
        copy_rows(Qs + m * 16 * LDH, LDH, qkv + (size_t)q0 * QKVN + head * HD, QKVN, rows, HD);
    }
    cp_commit();
    for (int i = threadIdx.x; i < (KEYS - T) * LDH; i += THREADS) {  // the padded keys: zero (P is 0 there)
        Ks[T * LDH + i] = __float2bfloat16(0.0f);
        Vs[T * LDH + i] = __float2bfloat16(0.0f);
    }
    cp_wait<0>();
    __syncthreads();
    st(1);
    const int mi = warp / 4, ks = warp % 4;
    const float c = 0.125f * 1.4426950408889634f;  // 1 / sqrt(64), in log2 units
    if (mi < nm) {
        const int kb = ks == 0 ? 0 : 64 + (ks - 1) * 48, ntile = ks == 0 ? 8 : 6;
        int qrow = mi * 16 + (lane & 15);
        if ((j + 10 * mi) * 16 + (lane & 15) >= T) qrow = mi * 16;  // a query past 195: any row (dropped)
        uint32_t qa[4][4];
#pragma unroll
        for (int kk = 0; kk < 4; kk++) ldsm_x4(qa[kk], Qs + qrow * LDH + kk * 16 + (lane >> 4) * 8);
        float s[8][4] = {};
#pragma unroll
        for (int t = 0; t < 8; t += 2) {
            if (t >= ntile) break;
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                uint32_t bb[4];
                ldsm_x4(bb, Ks + (kb + t * 8 + (lane >> 4) * 8 + (lane & 7)) * LDH + kk * 16 + ((lane >> 3) & 1) * 8);
                sg_mma_attn_hmma(s[t], qa[kk], bb[0], bb[1]);
                sg_mma_attn_hmma(s[t + 1], qa[kk], bb[2], bb[3]);
            }
        }
        float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            if (t >= ntile) break;
            const int key = kb + t * 8 + 2 * (lane % 4);
            if (key >= T) s[t][0] = s[t][2] = -INFINITY;
            if (key + 1 >= T) s[t][1] = s[t][3] = -INFINITY;
            m0 = fmaxf(m0, fmaxf(s[t][0], s[t][1]));
            m1 = fmaxf(m1, fmaxf(s[t][2], s[t][3]));
        }
        m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 1));
        m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 2));
        m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
        m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 2));
        float l0 = 0.0f, l1 = 0.0f;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            if (t >= ntile) break;
            s[t][0] = ex2((s[t][0] - m0) * c), s[t][1] = ex2((s[t][1] - m0) * c);
            s[t][2] = ex2((s[t][2] - m1) * c), s[t][3] = ex2((s[t][3] - m1) * c);
            l0 += s[t][0] + s[t][1];
            l1 += s[t][2] + s[t][3];
        }
        l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
        l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
        float acc[8][4] = {};
#pragma unroll
        for (int u = 0; u < 4; u++) {
            if (2 * u >= ntile) break;
            const uint32_t pa[4] = {sg_mma_attn_pack_bf16(s[2 * u][0], s[2 * u][1]),
                                    sg_mma_attn_pack_bf16(s[2 * u][2], s[2 * u][3]),
                                    sg_mma_attn_pack_bf16(s[2 * u + 1][0], s[2 * u + 1][1]),
                                    sg_mma_attn_pack_bf16(s[2 * u + 1][2], s[2 * u + 1][3])};
#pragma unroll
            for (int dp = 0; dp < 4; dp++) {
                uint32_t bb[4];
                const int key = kb + 16 * u + (lane & 7) + ((lane >> 3) & 1) * 8;
                ldsm_x4_t(bb, Vs + key * LDH + dp * 16 + (lane >> 4) * 8);
                sg_mma_attn_hmma(acc[2 * dp], pa, bb[0], bb[1]);
                sg_mma_attn_hmma(acc[2 * dp + 1], pa, bb[2], bb[3]);
            }
        }
        float *P = part + (mi * 4 + ks) * 16 * HD;
        const int ra = lane / 4, rb = ra + 8;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const int col = t * 8 + 2 * (lane % 4);
            *reinterpret_cast<float2 *>(P + ra * HD + col) = make_float2(acc[t][0], acc[t][1]);
            *reinterpret_cast<float2 *>(P + rb * HD + col) = make_float2(acc[t][2], acc[t][3]);
        }
        if (lane % 4 == 0) {
            float *sp = stat + (mi * 4 + ks) * 32;
            sp[ra] = m0, sp[rb] = m1, sp[16 + ra] = l0, sp[16 + rb] = l1;
        }
    }
    st(2);
    __syncthreads();
    for (int i = threadIdx.x; i < nm * 16 * 8; i += THREADS) {  // (tile, row, 8 columns)
        const int m = i / 128, r = (i / 8) % 16, cg = i % 8, q = (j + 10 * m) * 16 + r;
        if (q >= T) continue;
        float mx = -INFINITY, w[4], L = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) mx = fmaxf(mx, stat[(m * 4 + k) * 32 + r]);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[k] = ex2((stat[(m * 4 + k) * 32 + r] - mx) * c);
            L += w[k] * stat[(m * 4 + k) * 32 + 16 + r];
        }
        uint32_t out[4];
#pragma unroll
        for (int e = 0; e < 8; e += 2) {
            float v[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float sum = 0.0f;
#pragma unroll
                for (int k = 0; k < 4; k++) sum += w[k] * part[((m * 4 + k) * 16 + r) * HD + cg * 8 + e + h];
                v[h] = sum / L;
            }
            out[e / 2] = sg_mma_attn_pack_bf16(v[0], v[1]);
        }
        *reinterpret_cast<uint4 *>(o + (size_t)q * D + head * HD + cg * 8) = make_uint4(out[0], out[1], out[2], out[3]);
    }
}

__global__ void __launch_bounds__(THREADS, 1) lean_kernel(const __grid_constant__ Params p) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int b = blockIdx.x, g = b / CG, c = b % CG, r0 = g * RR;
    const unsigned target = p.epoch * CTAS;
    __nv_bfloat16 *Wsm = reinterpret_cast<__nv_bfloat16 *>(smem);
    for (int l = 0; l < p.layers; l++) {
        const LayerDev &L = p.layer[l];
        const float *hsrc = l == 0 ? p.h_in : p.h;
        unsigned *cnt = p.cnt + l * STAGES;
        auto stamp = [&](int s) {
            return Stamp{p.trace ? p.trace + ((size_t)(l * STAGES + s) * CTAS + b) * 4 : nullptr};
        };
        // A stage's start: its weight slice's copies (before or after the wait), the wait for every CTA to have
        // finished the previous stage (none before layer 0's first), stamp 0.
        auto begin = [&](int s, const __nv_bfloat16 *w, int ldw, int ld, int rows, int cols) {
            if (p.diag == 1) w = nullptr, cp_commit();  // (an empty group: FC2's ring counts groups)
            if (w && !p.w_late) copy_rows(Wsm, ldw, w, ld, rows, cols), cp_commit();
            if (l > 0 || s > 0) wait_count(cnt + s - 1, target);
            if (w && p.w_late) copy_rows(Wsm, ldw, w, ld, rows, cols), cp_commit();
            stamp(s)(0);
        };
        auto end = [&](int s) {
            stamp(s)(3);
            signal_count(cnt + s);
        };
        // QKV: LayerNorm 1 inside; q, k, v bf16
        begin(0, L.wqkv + (size_t)c * NQKV * D, LDK, D, NQKV, D);
        ln_gemm<5>(smem, NQKV, hsrc, L.ln1g, L.ln1b, p.eps, r0, p.diag == 2, stamp(0),
                   [&](int r, int col, float v0, float v1) {
            const int n = c * NQKV + col;
            *reinterpret_cast<uint32_t *>(p.qkv + (size_t)(r0 + r) * QKVN + n) =
                sg_mma_attn_pack_bf16(v0 + L.bqkv[n], v1 + L.bqkv[n + 1]);
        });
        end(0);
        // ATT
        begin(1, nullptr, 0, 0, 0, 0);
        if (b < ATT_CTAS) attention(smem, p.qkv, p.o, stamp(1));
        end(1);
        // OUT: h = hsrc + O . Wo^T + bo
        {
            begin(2, L.wo + (size_t)c * NOUT * D, LDK, D, NOUT, D);
            __nv_bfloat16 *A = Wsm + NOUT * LDK;
            if (p.diag != 2) copy_rows(A, LDK, p.o + (size_t)r0 * D, D, RR, D);
            cp_commit();
            cp_wait<0>();
            __syncthreads();
            stamp(2)(1);
            const WarpTiles w = warp_tiles(NOUT / 8);
            float acc[2][4] = {};
            warp_gemm<2>(acc, A, LDK, Wsm, LDK, D, w.mt, w.n0, w.nn);
            stamp(2)(2);
            warp_epilogue<2>(acc, w, [&](int r, int col, float v0, float v1) {
                const int n = c * NOUT + col;
                const size_t at = (size_t)(r0 + r) * D + n;
                const float2 x = __ldcg(reinterpret_cast<const float2 *>(hsrc + at));
                *reinterpret_cast<float2 *>(p.h + at) = make_float2(x.x + (v0 + L.bo[n]), x.y + (v1 + L.bo[n + 1]));
            });
            end(2);
        }
        // FC1: LayerNorm 2 inside; GELU; bf16 H
        begin(3, L.w1 + (size_t)c * NFC1 * D, LDK, D, NFC1, D);
        ln_gemm<6>(smem, NFC1, p.h, L.ln2g, L.ln2b, p.eps, r0, p.diag == 2, stamp(3),
                   [&](int r, int col, float v0, float v1) {
            const int n = c * NFC1 + col;
            *reinterpret_cast<uint32_t *>(p.hm + (size_t)(r0 + r) * F + n) =
                sg_mma_attn_pack_bf16(sg_mega_gelu(v0 + L.b1[n]), sg_mega_gelu(v1 + L.b1[n + 1]));
        });
        end(3);
        // FC2: h += H . W2^T + b2, H streamed in 256-column chunks
        {
            begin(4, L.w2 + (size_t)c * NOUT * F, LDF, F, NOUT, F);
            __nv_bfloat16 *ring = Wsm + NOUT * LDF;
            for (int ch = 0; ch < NS; ch++) {
                if (p.diag != 2) copy_rows(ring + ch * RR * LDC, LDC, p.hm + (size_t)r0 * F + ch * KC, F, RR, KC);
                cp_commit();
            }
            const WarpTiles w = warp_tiles(NOUT / 8);
            float acc[2][4] = {};
            for (int ch = 0; ch < NCH; ch++) {
                cp_wait<NS - 1>();
                __syncthreads();
                if (ch == 0) stamp(4)(1);
                warp_gemm<2>(acc, ring + (ch % NS) * RR * LDC, LDC, Wsm + ch * KC, LDF, KC, w.mt, w.n0, w.nn);
                __syncthreads();
                if (ch + NS < NCH && p.diag != 2)
                    copy_rows(ring + (ch % NS) * RR * LDC, LDC, p.hm + (size_t)r0 * F + (ch + NS) * KC, F, RR, KC);
                cp_commit();
            }
            stamp(4)(2);
            warp_epilogue<2>(acc, w, [&](int r, int col, float v0, float v1) {
                const int n = c * NOUT + col;
                const size_t at = (size_t)(r0 + r) * D + n;
                const float2 x = __ldcg(reinterpret_cast<const float2 *>(p.h + at));
                *reinterpret_cast<float2 *>(p.h + at) = make_float2(x.x + (v0 + L.b2[n]), x.y + (v1 + L.b2[n + 1]));
            });
            end(4);
        }
    }
}

std::vector<__nv_bfloat16> to_bf16(const float *x, size_t n) {
    std::vector<__nv_bfloat16> v(n);
    for (size_t i = 0; i < n; i++) v[i] = __float2bfloat16(x[i]);
    return v;
}
template <class X> X *upload(const X *x, size_t n) {
    X *d = nullptr;
    SG_CK(cudaMalloc(&d, n * sizeof(X)));
    SG_CK(cudaMemcpy(d, x, n * sizeof(X), cudaMemcpyHostToDevice));
    return d;
}
__nv_bfloat16 *upload_bf16(const float *x, size_t n) {
    const std::vector<__nv_bfloat16> v = to_bf16(x, n);
    return upload(v.data(), n);
}
}  // namespace

extern "C" int sg_sm90_lean_available(char *err, size_t errlen) {
    const int sms = sg_lab_sm90_sms(err, errlen);
    if (sms && sms < CTAS) {
        snprintf(err, errlen, "needs %d SMs for its %d resident CTAs, the device has %d", CTAS, CTAS, sms);
        return 0;
    }
    return sms;
}

extern "C" int sg_sm90_lean_run(const sg_lean_cfg *cfg, sg_lean_result *res, char *err, size_t errlen) {
    const int sms = sg_sm90_lean_available(err, errlen);
    if (!sms) return -1;
    if (cfg->layers < 1 || cfg->layers > SG_LEAN_MAX_LAYERS || !cfg->layer || !cfg->h_in || !cfg->h_out ||
        cfg->reps < 1 || cfg->warmup < 0 || cfg->diag < 0 || cfg->diag > 2) {
        snprintf(err, errlen, "sm90 lean: bad config (layers %d of 1 .. %d, reps %d >= 1, warmup %d >= 0, arrays "
                 "given)", cfg->layers, SG_LEAN_MAX_LAYERS, cfg->reps, cfg->warmup);
        return -1;
    }
    memset(res, 0, sizeof *res);
    SG_CK(cudaFuncSetAttribute(lean_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    int per_sm = 0;
    SG_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lean_kernel, THREADS, SMEM));
    if (per_sm != 1) {
        snprintf(err, errlen, "sm90 lean: expected 1 CTA per SM with %d B of shared memory, got %d", SMEM, per_sm);
        return -1;
    }
    Params p = {};
    std::vector<void *> owned;
    for (int l = 0; l < cfg->layers; l++) {
        const sg_lean_layer &s = cfg->layer[l];
        LayerDev &d = p.layer[l];
        d.wqkv = upload_bf16(s.wqkv, (size_t)QKVN * D);
        d.wo = upload_bf16(s.wo, (size_t)D * D);
        d.w1 = upload_bf16(s.w1, (size_t)F * D);
        d.w2 = upload_bf16(s.w2, (size_t)D * F);
        d.bqkv = upload(s.bqkv, QKVN), d.bo = upload(s.bo, D), d.b1 = upload(s.b1, F), d.b2 = upload(s.b2, D);
        d.ln1g = upload(s.ln1_g, D), d.ln1b = upload(s.ln1_b, D), d.ln2g = upload(s.ln2_g, D);
        d.ln2b = upload(s.ln2_b, D);
        for (const void *q : {(const void *)d.wqkv, (const void *)d.wo, (const void *)d.w1, (const void *)d.w2,
                              (const void *)d.bqkv, (const void *)d.bo, (const void *)d.b1, (const void *)d.b2,
                              (const void *)d.ln1g, (const void *)d.ln1b, (const void *)d.ln2g, (const void *)d.ln2b})
            owned.push_back(const_cast<void *>(q));
    }
    p.layers = cfg->layers;
    p.eps = cfg->eps;
    p.w_late = cfg->w_after_wait;
    p.diag = cfg->diag;
    p.h_in = upload(cfg->h_in, (size_t)T * D);
    SG_CK(cudaMalloc(&p.h, (size_t)T * D * 4));
    SG_CK(cudaMalloc(&p.qkv, (size_t)T * QKVN * 2));
    SG_CK(cudaMalloc(&p.o, (size_t)T * D * 2));
    SG_CK(cudaMalloc(&p.hm, (size_t)T * F * 2));
    SG_CK(cudaMalloc(&p.cnt, SG_LEAN_MAX_LAYERS * STAGES * sizeof(unsigned)));
    SG_CK(cudaMemset(p.cnt, 0, SG_LEAN_MAX_LAYERS * STAGES * sizeof(unsigned)));
    const size_t trace_n = (size_t)cfg->layers * STAGES * CTAS * 4;
    unsigned long long *trace = nullptr;
    SG_CK(cudaMalloc(&trace, trace_n * sizeof *trace));
    owned.insert(owned.end(), {(void *)p.h_in, (void *)p.h, (void *)p.qkv, (void *)p.o, (void *)p.hm, (void *)p.cnt,
                               (void *)trace});
    unsigned epoch = 0;
    auto launch = [&](unsigned long long *tr) {
        p.epoch = ++epoch;
        p.trace = tr;
        lean_kernel<<<CTAS, THREADS, SMEM>>>(p);
        SG_CK(cudaGetLastError());
    };
    // The checked launch: every intermediate poisoned (0xFF bytes: NaN in fp32 and bf16).
    SG_CK(cudaMemset(p.h, 0xFF, (size_t)T * D * 4));
    SG_CK(cudaMemset(p.qkv, 0xFF, (size_t)T * QKVN * 2));
    SG_CK(cudaMemset(p.o, 0xFF, (size_t)T * D * 2));
    SG_CK(cudaMemset(p.hm, 0xFF, (size_t)T * F * 2));
    launch(nullptr);
    SG_CK(cudaDeviceSynchronize());
    SG_CK(cudaMemcpy(cfg->h_out, p.h, (size_t)T * D * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < cfg->warmup; i++) launch(nullptr);
    std::vector<cudaEvent_t> ev(2 * cfg->reps);
    for (auto &e : ev) SG_CK(cudaEventCreate(&e));
    for (int i = 0; i < cfg->reps; i++) {
        SG_CK(cudaEventRecord(ev[2 * i]));
        launch(nullptr);
        SG_CK(cudaEventRecord(ev[2 * i + 1]));
    }
    SG_CK(cudaDeviceSynchronize());
    std::vector<double> us(cfg->reps);
    for (int i = 0; i < cfg->reps; i++) {
        float ms = 0;
        SG_CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        us[i] = 1000.0 * ms;
    }
    for (auto &e : ev) SG_CK(cudaEventDestroy(e));
    std::sort(us.begin(), us.end());
    res->us_median = (us[(us.size() - 1) / 2] + us[us.size() / 2]) / 2, res->us_min = us.front();
    res->us_max = us.back();
    std::vector<float> last((size_t)T * D);
    SG_CK(cudaMemcpy(last.data(), p.h, last.size() * 4, cudaMemcpyDeviceToHost));
    res->identical = memcmp(last.data(), cfg->h_out, last.size() * 4) == 0;
    // The traced launch.
    SG_CK(cudaMemset(trace, 0, trace_n * sizeof *trace));
    launch(trace);
    SG_CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> tr(trace_n);
    SG_CK(cudaMemcpy(tr.data(), trace, trace_n * sizeof *trace, cudaMemcpyDeviceToHost));
    const int S = cfg->layers * STAGES;
    auto rec = [&](int s, int b) { return &tr[((size_t)s * CTAS + b) * 4]; };
    std::vector<unsigned long long> done_max(S, 0);
    unsigned long long start = ~0ull;
    for (int s = 0; s < S; s++)
        for (int b = 0; b < CTAS; b++) {
            done_max[s] = std::max(done_max[s], rec(s, b)[3]);
            if (s == 0) start = std::min(start, rec(s, b)[0]);
        }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
    };
    for (int s = 0; s < S; s++) {
        const unsigned long long prev = s ? done_max[s - 1] : start;
        std::vector<double> wait, in, mma, epi;
        for (int b = 0; b < CTAS; b++) {
            const unsigned long long *t = rec(s, b);
            wait.push_back((double)(long long)(t[0] - prev));
            if (!t[1] || !t[2]) continue;  // attention: the 8 CTAs without a task
            in.push_back((double)(long long)(t[1] - t[0]));
            mma.push_back((double)(long long)(t[2] - t[1]));
            epi.push_back((double)(long long)(t[3] - t[2]));
        }
        const int k = s % STAGES;
        const double n = 1000.0 * cfg->layers;
        res->stage_us[k] += (double)(long long)(done_max[s] - prev) / n;
        res->handoff_us[k] += (s ? median(wait) : 0.0) / n;
        res->ingest_us[k] += median(in) / n, res->mma_us[k] += median(mma) / n, res->epi_us[k] += median(epi) / n;
    }
    res->traced_us = (double)(long long)(done_max[S - 1] - start) / 1000.0;
    res->ctas = CTAS, res->sms = sms;
    for (void *q : owned) SG_CK(cudaFree(q));
    return 0;
}
