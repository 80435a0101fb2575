// kernel/sm100/sm100_attn.cuh — self-attention of one (image, head) as a task of one warpgroup, on mma.sync.
//
// Why: the Blackwell megakernel runs attention as a task like the Hopper one (sm90_attn.cuh), but sm_100a has no
// wgmma, and attention is ~4% of the FLOPs, so a plain warp-level body is enough: HMMA m16n8k16 (bf16 in, fp32
// accumulate) fed by ldmatrix. Only sm_80 features are used, so the same code runs on sm_80, sm_90 and sm_100a:
// kernel/lab/test_sm100_attn.c checks it through the lab (sm100_attn_lab.cu) on any GPU that the build has code for
// (an H100 with kernel/sm100 also built for sm_90, as scripts/sm100-check.sh builds it).
// NOT RUN ON A GPU YET: checked offline (ptxas, SASS: HMMA and LDSM, no local memory) and by a host emulation
// of its ldmatrix / HMMA fragment mapping and chunk schedule against a double reference.
//
// Inputs: q, k, v are shared-memory boxes of 256 rows x 64 bf16 (rows img*196 .. img*196+255 of the QKV GEMM
// output, columns of one head), 1024-byte aligned, as TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B: row r
// fills bytes [128 r, 128 r + 128), its 16-byte chunk c (columns 8c..8c+7) at 128 r + ((c ^ (r % 8)) << 4)
// (sg_sw128_offset). Rows 0..195 are the image's tokens; rows past them (the next image, or zeros) are finite.
//
// Work split: the 13 query blocks of 16 rows go round-robin to the calling warps (warp w of n: blocks w, w+n, ...);
// each warp works alone (no barrier, no shared scratch; the caller's other warps run other code). Per block,
// FlashAttention-2 style over three key chunks (keys padded to SG_ATTN_KPAD = 208): 0..63, 64..127, 128..207.
// Per chunk of NT n8 key tiles (sg_mma_attn_key_chunk):
//   S = Q K^T         4 k16 steps (Q A-fragment: one ldmatrix.x4 each) x NT tiles: 4 NT HMMA, K as the "col"
//                     B operand straight from its rows (ldmatrix.x2, no transpose); S: 4 NT fp32 / thread
//   online softmax    m = max(running max, chunk's row max over keys < 196) (a row lives in one lane quad: two
//                     xor shuffles); O and the row sum are scaled by exp2(0.125 log2(e) (old max - m));
//                     P = exp2(0.125 log2(e) (S - m)); keys 196..207 get P = 0 by select, so whatever they hold
//                     is ignored (ptxas drops the S HMMAs of key tile 25, all padding)
//   O += P V          the S accumulators of key tiles 2k, 2k+1 rounded to bf16 (made as P is, 2 NT registers) are
//                     the A fragment of k16 step k; V through ldmatrix.x4.trans; NT / 2 x 8 HMMA
// then out = O / rowsum  bf16, rows >= 196 (padding queries) never stored. 104 + 104 HMMA per block in all, as
// with one chunk; the chunking adds per chunk 4 shuffles, 2 EX2 and 34 FMUL per thread.
// Why chunks: registers. The task is inlined into the megakernel (320 threads: cap 168 registers/thread) where
// the consumer's loop state (~10-15 registers) is live across it. With all 208 keys at once (S: 104 fp32, the
// exact softmax) the body alone took the whole cap (ptxas: 168 sm_100a / 167 sm_90 in the lab). In chunks of at
// most 10 tiles, S is <= 40 registers and P <= 20 next to O's 32: the lab kernel (__launch_bounds__(320, 1), the
// same cap) needs 121 registers for sm_100a, 123 for sm_90, no spills. Chunks are whole k16 steps of P.V
// (multiples of 16 keys, so not two halves of 104); 8 + 8 + 10 tiles measured lower than 14 + 12 (140 / 144).
// Numerics: P of each chunk is rounded to bf16 relative to that chunk's running max (relative 2^-9 as before),
// the rescaling is fp32; the row sum is of the fp32 P (before rounding), as FlashAttention-2 does.
// Keys 208..255 are never read. When the function returns, this thread's reads of q, k, v are complete (every
// ldmatrix result was consumed).
#ifndef SG_SM100_ATTN_CUH
#define SG_SM100_ATTN_CUH

#include <cmath>
#include <cstdint>
#include <cuda_bf16.h>

// The same constants as sm90_attn.cuh (token-identical, so both headers may be included).
#define SG_ATTN_T 196     // tokens per image
#define SG_ATTN_DH 64     // head dim
#define SG_ATTN_KPAD 208  // keys padded to a multiple of 16 (the k16 step of P.V)
#define SG_ATTN_ROWS 256  // box rows

#define SG_MMA_ATTN_QBLOCKS ((SG_ATTN_T + 15) / 16)  // 13 query blocks of 16
#define SG_MMA_ATTN_NTILES (SG_ATTN_KPAD / 8)        // 26 key tiles of 8 (n8 of S = Q K^T)

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a 1024-byte-aligned box of 128-byte rows written
// with SWIZZLE_128B: the chunk index is XORed with the row's position in its 8-row (1024-byte) group.
__host__ __device__ __forceinline__ uint32_t sg_sw128_offset(int row, int chunk) {
    return (uint32_t)row * 128u + ((uint32_t)(chunk ^ (row & 7)) << 4);
}

// Four 8x8 b16 matrices; lane l gives the shared address of row l % 8 of matrix l / 8 and receives in r[m] the
// pair (row l / 4, columns 2 (l % 4), +1) of matrix m.
__device__ __forceinline__ void sg_mma_attn_ldsm_x4(uint32_t (&r)[4], uint32_t saddr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr));
}
// Two matrices (lanes 0..15 give the addresses), r[m] as above.
__device__ __forceinline__ void sg_mma_attn_ldsm_x2(uint32_t (&r)[2], uint32_t saddr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(saddr));
}
// Four matrices, transposed: lane l receives (rows 2 (l % 4), +1; column l / 4) of matrix m in r[m].
__device__ __forceinline__ void sg_mma_attn_ldsm_x4_trans(uint32_t (&r)[4], uint32_t saddr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr));
}
// d += a b, m16n8k16, bf16 inputs, fp32 accumulators. With g = lane / 4, t = lane % 4 (PTX ISA fragment layouts):
//   A: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)   (row, k)
//   B: b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   D: d0, d1 (g, 2t..2t+1), d2, d3 (g+8, 2t..2t+1)                           (row, n)
__device__ __forceinline__ void sg_mma_attn_hmma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t sg_mma_attn_pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
    return *reinterpret_cast<uint32_t *>(&v);
}

// One chunk of keys KEY0 .. KEY0 + 8 NT - 1 for the query block at row q0, folded into this thread's state of
// rows g (o[n][0..1], mx0, sum0) and g + 8 (o[n][2..3], mx1, sum1) with the FlashAttention-2 online softmax.
// The state holds: mx = the exact max of the rows' scores over the keys seen so far (quad-reduced, the same in
// the 4 lanes of a row), sum = this lane's part of sum exp2(sl (s - mx)) (fp32 P, before rounding), o = the P.V
// accumulators relative to the same mx. A new chunk raises mx to m and scales o and sum by exp2(sl (mx - m)).
template <int KEY0, int NT>
__device__ __forceinline__ void sg_mma_attn_key_chunk(float (&o)[SG_ATTN_DH / 8][4], float &mx0, float &mx1,
                                                      float &sum0, float &sum1, uint32_t sq, uint32_t sk,
                                                      uint32_t sv, int q0, int lane) {
    static_assert(KEY0 % 16 == 0 && NT % 2 == 0 && KEY0 < SG_ATTN_T && KEY0 + 8 * NT <= SG_ATTN_KPAD,
                  "a chunk is whole k16 steps of P.V and holds at least one real key");
    const int tq = lane % 4, lrow = lane % 8, lmat = lane / 8;
    // softmax(0.125 s) = exp2(0.125 log2(e) s - 0.125 log2(e) max) / sum: one FFMA + EX2 per element.
    const float scale_log2 = 0.125f * 1.4426950408889634f;

    // S = Q K^T over the chunk, one k16 step (dh 16 kk .. 16 kk + 15) per pass over its NT key tiles. The steps
    // are a loop that is NOT unrolled and K comes in ldmatrix.x2 (2 registers a tile): all 4 NT accumulators are
    // live at the top of the loop, and what ptxas hoists ahead of the HMMAs stays small.
    // Q A-fragment of step kk: matrices (rows +0, chunk 2 kk), (rows +8, 2 kk), (+0, 2 kk + 1), (+8, 2 kk + 1)
    // are a0..a3. Query rows past 195 read padding rows (finite) and are never stored.
    // K, key tile j: matrix m (0, 1) is keys KEY0 + 8 j .. + 7, dh chunk 2 kk + m, so lane l gets (key
    // KEY0 + 8 j + g, dh 16 kk + 8 m + 2t..) = b0, b1 (lanes 16..31 give addresses ldmatrix.x2 ignores).
    float s[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll 1
    for (int kk = 0; kk < SG_ATTN_DH / 16; kk++) {
        uint32_t qa[4];
        sg_mma_attn_ldsm_x4(qa, sq + sg_sw128_offset(q0 + lrow + 8 * (lmat & 1), 2 * kk + (lmat >> 1)));
#pragma unroll
        for (int j = 0; j < NT; j++) {
            uint32_t b[2];
            sg_mma_attn_ldsm_x2(b, sk + sg_sw128_offset(KEY0 + 8 * j + lrow, 2 * kk + (lmat & 1)));
            sg_mma_attn_hmma(s[j], qa, b[0], b[1]);
        }
    }

    // New running max of row g (s[j][0..1]) and row g + 8 (s[j][2..3]) over real keys KEY0 + 8j + 2t + e < 196.
    float m0 = mx0, m1 = mx1;
#pragma unroll
    for (int j = 0; j < NT; j++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            if (KEY0 + 8 * j + 2 * tq + e < SG_ATTN_T) {
                m0 = fmaxf(m0, s[j][e]);
                m1 = fmaxf(m1, s[j][2 + e]);
            }
        }
    }
    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 1));
    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 2));
    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 2));
    if (KEY0 > 0) {  // the first chunk starts from o = 0, sum = 0: nothing to rescale
        const float a0 = exp2f((mx0 - m0) * scale_log2), a1 = exp2f((mx1 - m1) * scale_log2);
        sum0 *= a0;
        sum1 *= a1;
#pragma unroll
        for (int n = 0; n < SG_ATTN_DH / 8; n++) {
            o[n][0] *= a0;
            o[n][1] *= a0;
            o[n][2] *= a1;
            o[n][3] *= a1;
        }
    }
    mx0 = m0;
    mx1 = m1;

    // P, rounded to bf16 as soon as it is made: the S accumulators of key tiles 2 kc, 2 kc + 1 are exactly the A
    // fragment of the k16 step kc of P.V (a0 = row g keys KEY0 + 16 kc + 2t.., a1 = row g + 8, a2 / a3 = the same
    // 8 keys later). Padding keys (>= 196) get P = 0 by select, so whatever they hold is ignored.
    const float off0 = -m0 * scale_log2, off1 = -m1 * scale_log2;
    uint32_t pa[NT / 2][4];
#pragma unroll
    for (int j = 0; j < NT; j++) {
        float p[4];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const bool valid = KEY0 + 8 * j + 2 * tq + e < SG_ATTN_T;
            p[e] = valid ? exp2f(fmaf(s[j][e], scale_log2, off0)) : 0.0f;
            p[2 + e] = valid ? exp2f(fmaf(s[j][2 + e], scale_log2, off1)) : 0.0f;
            sum0 += p[e];
            sum1 += p[2 + e];
        }
        pa[j / 2][2 * (j % 2)] = sg_mma_attn_pack_bf16(p[0], p[1]);
        pa[j / 2][2 * (j % 2) + 1] = sg_mma_attn_pack_bf16(p[2], p[3]);
    }

    // O += P V, k16 step kc = keys KEY0 + 16 kc .. + 15. One ldmatrix.x4.trans covers dh tiles 2 p, 2 p + 1:
    // matrix m is keys KEY0 + 16 kc + 8 (m & 1) + 0..7, dh chunk 2 p + (m >> 1), so lane l gets (keys
    // KEY0 + 16 kc + 8 (m & 1) + 2t, +1; dh 8 (2 p + (m >> 1)) + g): b0, b1 of dh tile 2 p, then of 2 p + 1.
#pragma unroll
    for (int kc = 0; kc < NT / 2; kc++) {
        const int r = KEY0 + 16 * kc + lrow + 8 * (lmat & 1);
#pragma unroll
        for (int p = 0; p < SG_ATTN_DH / 16; p++) {
            uint32_t b[4];
            sg_mma_attn_ldsm_x4_trans(b, sv + sg_sw128_offset(r, 2 * p + (lmat >> 1)));
            sg_mma_attn_hmma(o[2 * p], pa[kc], b[0], b[1]);
            sg_mma_attn_hmma(o[2 * p + 1], pa[kc], b[2], b[3]);
        }
    }
}

// Called by `nwarps` warps (warp = this one's index among them, 0..nwarps-1; the megakernel: its 8 consumer warps,
// the lab: one warpgroup's 4); see the design comment. out: row img*196 + query at out + row * ldo + head * 64,
// 64 bf16 columns.
__device__ __forceinline__ void sg_mma_attn_task(const uint8_t *q, const uint8_t *k, const uint8_t *v, int img,
                                                 int head, __nv_bfloat16 *out, int ldo, int warp, int nwarps) {
    const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
    const uint32_t sq = (uint32_t)__cvta_generic_to_shared(q);
    const uint32_t sk = (uint32_t)__cvta_generic_to_shared(k);
    const uint32_t sv = (uint32_t)__cvta_generic_to_shared(v);

    for (int qb = warp; qb < SG_MMA_ATTN_QBLOCKS; qb += nwarps) {
        const int q0 = 16 * qb;
        float o[SG_ATTN_DH / 8][4];
#pragma unroll
        for (int n = 0; n < SG_ATTN_DH / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
        float mx0 = -INFINITY, mx1 = -INFINITY, sum0 = 0.0f, sum1 = 0.0f;
        // Keys 0..63, 64..127, 128..207 (the last chunk holds the 12 padding keys; see the design comment).
        sg_mma_attn_key_chunk<0, 8>(o, mx0, mx1, sum0, sum1, sq, sk, sv, q0, lane);
        sg_mma_attn_key_chunk<64, 8>(o, mx0, mx1, sum0, sum1, sq, sk, sv, q0, lane);
        sg_mma_attn_key_chunk<128, 10>(o, mx0, mx1, sum0, sum1, sq, sk, sv, q0, lane);
        static_assert(128 + 8 * 10 == SG_ATTN_KPAD, "the chunks cover keys 0..207");
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);

        const float inv0 = 1.0f / sum0, inv1 = 1.0f / sum1;
        const int r0 = q0 + g, r1 = q0 + g + 8;
        __nv_bfloat16 *d0 = out + (size_t)(img * SG_ATTN_T + r0) * ldo + head * SG_ATTN_DH + 2 * tq;
        __nv_bfloat16 *d1 = d0 + (size_t)8 * ldo;
#pragma unroll
        for (int n = 0; n < SG_ATTN_DH / 8; n++) {
            if (r0 < SG_ATTN_T)
                *reinterpret_cast<__nv_bfloat162 *>(d0 + 8 * n) = __floats2bfloat162_rn(o[n][0] * inv0, o[n][1] * inv0);
            if (r1 < SG_ATTN_T)
                *reinterpret_cast<__nv_bfloat162 *>(d1 + 8 * n) = __floats2bfloat162_rn(o[n][2] * inv1, o[n][3] * inv1);
        }
    }
}
#endif
