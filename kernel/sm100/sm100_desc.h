/* kernel/sm100/sm100_desc.h — bit-field builders of the Blackwell (sm_100a) tensor-core path, and the
 * MXFP8 element/scale converters shared by the kernel and its CPU emulation (kernel/cpu/cpu_mxfp8.c).
 *
 * Plain C, header-only, usable from C tests and from CUDA device code (SG_SM100_HD adds __host__ __device__
 * under nvcc). Every descriptor is built from a struct of named fields and can be unpacked again, so the
 * tests (tests/test_sm100_desc.c) check each field against the PTX ISA tables and round-trip them.
 *
 * Sources of the bit positions: the PTX ISA tables named below, as transcribed by cutlass
 * include/cute/arch/mma_sm100_desc.hpp (read at commit 0d2b201e) and ../shared/docs/kernel-notes.md §2, which
 * agree field by field (the ISA pages themselves were not re-read when this was written; the derivations are
 * in the tests):
 *   - shared-memory descriptor: "tcgen05 Shared Memory Descriptor" (#tcgen05-shared-memory-descriptor);
 *   - instruction descriptors: "Instruction descriptor" tables for .kind::f16 / ::f8f6f4 and for
 *     .kind::mxf8f6f4 .block_scale (#tcgen05-instruction-descriptor);
 *   - TMEM address: "Tensor Memory addressing" (lane in bits 31..16, column in bits 15..0);
 *   - scale-factor layout: the cuBLAS / cuDNN / CUTLASS "128x4" atom (cutlass SfKMajorAtom; cudnn-frontend
 *     "mxfp8-scale-factor-128x4-layout"), which is what tcgen05.cp .32x128b.warpx4 expects in shared memory;
 *   - E4M3 and UE8M0: OCP Microscaling Formats (MX) v1.0 §5.3 and §5.4.
 */
#ifndef SG_SM100_DESC_H
#define SG_SM100_DESC_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SG_SM100_HD __host__ __device__
#else
#define SG_SM100_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------
 * Shared-memory matrix descriptor (64 bit)
 *   [0,14)  start address >> 4      [16,30) leading-dimension byte offset (LBO) >> 4
 *   [32,46) stride-dimension byte offset (SBO) >> 4     [46,48) version, must be 1 on sm_100
 *   [49,52) base offset (for swizzle patterns not aligned to their repeat)   bit 52 LBO mode
 *   [61,64) layout / swizzle
 * ------------------------------------------------------------------------------------------------------- */
typedef enum {
    SG_SM100_LAYOUT_NONE = 0,            /* no swizzle (interleaved core matrices) */
    SG_SM100_LAYOUT_128B_BASE32B = 1,    /* 128-byte swizzle with 32-byte atomicity */
    SG_SM100_LAYOUT_128B = 2,
    SG_SM100_LAYOUT_64B = 4,
    SG_SM100_LAYOUT_32B = 6
} sg_sm100_layout;

typedef struct sg_sm100_smem_desc_fields {
    uint32_t start_addr; /* shared-memory byte address; 16-byte aligned, < 256 KiB */
    uint32_t lbo;        /* leading byte offset in bytes; multiple of 16 */
    uint32_t sbo;        /* stride byte offset in bytes; multiple of 16 */
    uint32_t version;    /* 1 on sm_100 (0 is the Hopper encoding and faults) */
    uint32_t base_offset;/* 0..7 */
    uint32_t lbo_mode;   /* 0 = relative byte offset */
    uint32_t layout;     /* sg_sm100_layout */
} sg_sm100_smem_desc_fields;

/* Packs the fields; values outside their bit ranges are truncated (the tests check the ranges). */
static inline SG_SM100_HD uint64_t sg_sm100_smem_desc_pack(sg_sm100_smem_desc_fields f) {
    return ((uint64_t)((f.start_addr >> 4) & 0x3FFFu)) | ((uint64_t)((f.lbo >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((f.sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)(f.version & 3u) << 46) |
           ((uint64_t)(f.base_offset & 7u) << 49) | ((uint64_t)(f.lbo_mode & 1u) << 52) |
           ((uint64_t)(f.layout & 7u) << 61);
}

static inline SG_SM100_HD sg_sm100_smem_desc_fields sg_sm100_smem_desc_unpack(uint64_t d) {
    sg_sm100_smem_desc_fields f;
    f.start_addr = (uint32_t)(d & 0x3FFFu) << 4;
    f.lbo = (uint32_t)((d >> 16) & 0x3FFFu) << 4;
    f.sbo = (uint32_t)((d >> 32) & 0x3FFFu) << 4;
    f.version = (uint32_t)((d >> 46) & 3u);
    f.base_offset = (uint32_t)((d >> 49) & 7u);
    f.lbo_mode = (uint32_t)((d >> 52) & 1u);
    f.layout = (uint32_t)((d >> 61) & 7u);
    return f;
}

/* The common K-major 128-byte-swizzled operand tile: 8-row x 128-byte swizzle atoms stacked every 1024 bytes
 * (SBO); LBO is unused for swizzled K-major layouts (16 is the conventional placeholder). Tile base must be
 * 1024-byte aligned so base_offset is 0. */
static inline SG_SM100_HD uint64_t sg_sm100_smem_desc_kmajor_sw128(uint32_t smem_addr) {
    sg_sm100_smem_desc_fields f = {smem_addr, 16, 1024, 1, 0, 0, SG_SM100_LAYOUT_128B};
    return sg_sm100_smem_desc_pack(f);
}

/* The scale-factor source of tcgen05.cp .32x128b.warpx4: 512 contiguous bytes (one 128x4 atom), no swizzle,
 * 32 rows of 16 bytes with SBO = 128 (one 8-row core-matrix group of 16-byte rows), LBO = 0. */
static inline SG_SM100_HD uint64_t sg_sm100_smem_desc_sf(uint32_t smem_addr) {
    sg_sm100_smem_desc_fields f = {smem_addr, 0, 128, 1, 0, 0, SG_SM100_LAYOUT_NONE};
    return sg_sm100_smem_desc_pack(f);
}

/* ---------------------------------------------------------------------------------------------------------
 * Instruction descriptor (32 bit) of tcgen05.mma .kind::f16 and .kind::f8f6f4
 *   [0,2) sparsity selector  bit 2 sparse  bit 3 saturate  [4,6) D format (0 F16, 1 F32)
 *   [7,10) A format  [10,13) B format  (kind::f16: 0 F16, 1 BF16; kind::f8f6f4: 0 E4M3, 1 E5M2)
 *   bit 13 negate A  bit 14 negate B  bit 15 A major  bit 16 B major (0 = K-major, 1 = MN-major)
 *   [17,23) N >> 3   bit 23 reserved   [24,29) M >> 4   bit 29 reserved   [30,32) max shift (.ws only)
 * ------------------------------------------------------------------------------------------------------- */
enum { SG_SM100_DFMT_F16 = 0, SG_SM100_DFMT_F32 = 1 };
enum { SG_SM100_F16KIND_F16 = 0, SG_SM100_F16KIND_BF16 = 1 };
enum { SG_SM100_F8_E4M3 = 0, SG_SM100_F8_E5M2 = 1 };
enum { SG_SM100_MAJOR_K = 0, SG_SM100_MAJOR_MN = 1 };

typedef struct sg_sm100_idesc_fields {
    uint32_t sparse_sel, sparse, saturate;
    uint32_t d_format;         /* SG_SM100_DFMT_* */
    uint32_t a_format, b_format;
    uint32_t negate_a, negate_b;
    uint32_t a_major, b_major; /* SG_SM100_MAJOR_* */
    uint32_t m, n;             /* the MMA shape itself (M 64/128/256, N multiple of 8 or 16), not shifted */
    uint32_t max_shift;
} sg_sm100_idesc_fields;

static inline SG_SM100_HD uint32_t sg_sm100_idesc_pack(sg_sm100_idesc_fields f) {
    return (f.sparse_sel & 3u) | ((f.sparse & 1u) << 2) | ((f.saturate & 1u) << 3) | ((f.d_format & 3u) << 4) |
           ((f.a_format & 7u) << 7) | ((f.b_format & 7u) << 10) | ((f.negate_a & 1u) << 13) |
           ((f.negate_b & 1u) << 14) | ((f.a_major & 1u) << 15) | ((f.b_major & 1u) << 16) |
           (((f.n >> 3) & 0x3Fu) << 17) | (((f.m >> 4) & 0x1Fu) << 24) | ((f.max_shift & 3u) << 30);
}

static inline SG_SM100_HD sg_sm100_idesc_fields sg_sm100_idesc_unpack(uint32_t d) {
    sg_sm100_idesc_fields f;
    f.sparse_sel = d & 3u;
    f.sparse = (d >> 2) & 1u;
    f.saturate = (d >> 3) & 1u;
    f.d_format = (d >> 4) & 3u;
    f.a_format = (d >> 7) & 7u;
    f.b_format = (d >> 10) & 7u;
    f.negate_a = (d >> 13) & 1u;
    f.negate_b = (d >> 14) & 1u;
    f.a_major = (d >> 15) & 1u;
    f.b_major = (d >> 16) & 1u;
    f.n = ((d >> 17) & 0x3Fu) << 3;
    f.m = ((d >> 24) & 0x1Fu) << 4;
    f.max_shift = (d >> 30) & 3u;
    return f;
}

/* Dense bf16 x bf16 -> f32, both operands K-major (what the SM90 twin uses for attention). */
static inline SG_SM100_HD uint32_t sg_sm100_idesc_bf16(uint32_t m, uint32_t n) {
    sg_sm100_idesc_fields f = {0, 0, 0, SG_SM100_DFMT_F32, SG_SM100_F16KIND_BF16, SG_SM100_F16KIND_BF16, 0, 0,
                               SG_SM100_MAJOR_K, SG_SM100_MAJOR_K, m, n, 0};
    return sg_sm100_idesc_pack(f);
}

/* ---------------------------------------------------------------------------------------------------------
 * Instruction descriptor (32 bit) of tcgen05.mma .kind::mxf8f6f4 .block_scale
 *   [0,2) sparsity selector  bit 2 sparse  bit 3 reserved  [4,6) B scale-factor id  bit 6 reserved
 *   [7,10) A format  [10,13) B format  bit 13/14 negate A/B  bit 15/16 A/B major
 *   [17,23) N >> 3   bit 23 scale format (1 = UE8M0, 0 = UE4M3)   [24,29) M >> 4
 *   [29,31) A scale-factor id   bit 31 K size (0 = K 32 for 8-bit types)
 * D is always F32, so there is no D-format field. The scale-factor ids select which byte of each 32-bit
 * TMEM scale word this MMA uses: with one UE8M0 per 32 K elements and MMA K = 32, K-step s of a 128-wide K
 * block uses id s % 4.
 * ------------------------------------------------------------------------------------------------------- */
enum { SG_SM100_SF_UE4M3 = 0, SG_SM100_SF_UE8M0 = 1 };

typedef struct sg_sm100_idesc_bs_fields {
    uint32_t sparse_sel, sparse;
    uint32_t b_sf_id, a_sf_id; /* 0..3 */
    uint32_t a_format, b_format;
    uint32_t negate_a, negate_b;
    uint32_t a_major, b_major;
    uint32_t n, m;             /* not shifted */
    uint32_t scale_format;     /* SG_SM100_SF_* */
    uint32_t k_size;
} sg_sm100_idesc_bs_fields;

static inline SG_SM100_HD uint32_t sg_sm100_idesc_bs_pack(sg_sm100_idesc_bs_fields f) {
    return (f.sparse_sel & 3u) | ((f.sparse & 1u) << 2) | ((f.b_sf_id & 3u) << 4) | ((f.a_format & 7u) << 7) |
           ((f.b_format & 7u) << 10) | ((f.negate_a & 1u) << 13) | ((f.negate_b & 1u) << 14) |
           ((f.a_major & 1u) << 15) | ((f.b_major & 1u) << 16) | (((f.n >> 3) & 0x3Fu) << 17) |
           ((f.scale_format & 1u) << 23) | (((f.m >> 4) & 0x1Fu) << 24) | ((f.a_sf_id & 3u) << 29) |
           ((f.k_size & 1u) << 31);
}

static inline SG_SM100_HD sg_sm100_idesc_bs_fields sg_sm100_idesc_bs_unpack(uint32_t d) {
    sg_sm100_idesc_bs_fields f;
    f.sparse_sel = d & 3u;
    f.sparse = (d >> 2) & 1u;
    f.b_sf_id = (d >> 4) & 3u;
    f.a_format = (d >> 7) & 7u;
    f.b_format = (d >> 10) & 7u;
    f.negate_a = (d >> 13) & 1u;
    f.negate_b = (d >> 14) & 1u;
    f.a_major = (d >> 15) & 1u;
    f.b_major = (d >> 16) & 1u;
    f.n = ((d >> 17) & 0x3Fu) << 3;
    f.scale_format = (d >> 23) & 1u;
    f.m = ((d >> 24) & 0x1Fu) << 4;
    f.a_sf_id = (d >> 29) & 3u;
    f.k_size = (d >> 31) & 1u;
    return f;
}

/* MXFP8 (E4M3 x E4M3, UE8M0 scales, K-major) for K-step sf_id of a 128-wide K block. */
static inline SG_SM100_HD uint32_t sg_sm100_idesc_mxf8(uint32_t m, uint32_t n, uint32_t sf_id) {
    sg_sm100_idesc_bs_fields f = {0, 0, sf_id, sf_id, SG_SM100_F8_E4M3, SG_SM100_F8_E4M3, 0, 0,
                                  SG_SM100_MAJOR_K, SG_SM100_MAJOR_K, n, m, SG_SM100_SF_UE8M0, 0};
    return sg_sm100_idesc_bs_pack(f);
}

/* Shape rules of the MMAs this project issues (cta_group::1; PTX ISA "tcgen05.mma" valid shapes):
 * kind::f16 M 64 -> N % 8, 8..256; M 128 -> N % 16, 16..256; kind::mxf8f6f4 .block_scale needs M = 128 and
 * N % 8, 8..256 on one CTA. Returns 1 when the shape is legal, else 0. */
static inline SG_SM100_HD int sg_sm100_shape_ok_f16(uint32_t m, uint32_t n) {
    if (m == 64) return n >= 8 && n <= 256 && n % 8 == 0;
    if (m == 128) return n >= 16 && n <= 256 && n % 16 == 0;
    return 0;
}
static inline SG_SM100_HD int sg_sm100_shape_ok_mxf8(uint32_t m, uint32_t n) {
    return m == 128 && n >= 8 && n <= 256 && n % 8 == 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Tensor-memory address: lane in bits [16,32), column in [0,16). 128 lanes x 512 columns of 32 bit per SM.
 * Warp w of a warpgroup may only touch lanes 32*(w%4)..+31 (tcgen05.ld/st data-path restriction).
 * ------------------------------------------------------------------------------------------------------- */
static inline SG_SM100_HD uint32_t sg_sm100_tmem_addr(uint32_t lane, uint32_t column) {
    return (lane << 16) | (column & 0xFFFFu);
}
static inline SG_SM100_HD uint32_t sg_sm100_tmem_lane(uint32_t addr) { return addr >> 16; }
static inline SG_SM100_HD uint32_t sg_sm100_tmem_column(uint32_t addr) { return addr & 0xFFFFu; }

/* ---------------------------------------------------------------------------------------------------------
 * The 128x4 scale-factor layout. One 512-byte atom holds the UE8M0 scales of 128 rows x 4 K-blocks of 32
 * (i.e. 128 rows x 128 K elements): byte (m % 32) * 16 + (m / 32) * 4 + j for row m < 128 and K-block j < 4.
 * Atoms are stored K-major: atom (mb, kb) starts at (mb * ceil(kblocks / 4) + kb) * 512.
 * ------------------------------------------------------------------------------------------------------- */
static inline SG_SM100_HD uint32_t sg_sm100_sf_atom_offset(uint32_t m, uint32_t j) {
    return (m % 32u) * 16u + (m / 32u) * 4u + j;
}

/* Byte offset of the scale of (row, K-block kblock) in a [rows, kblocks] scale matrix laid out as atoms;
 * kblocks is the number of 32-wide K-blocks of a row (padded to a multiple of 4 in storage). */
static inline SG_SM100_HD uint64_t sg_sm100_sf_offset(uint32_t row, uint32_t kblock, uint32_t kblocks) {
    uint32_t atoms_k = (kblocks + 3u) / 4u;
    return ((uint64_t)(row / 128u) * atoms_k + kblock / 4u) * 512u + sg_sm100_sf_atom_offset(row % 128u, kblock % 4u);
}

/* Bytes of the atom-padded scale storage of a [rows, kblocks] matrix. */
static inline SG_SM100_HD uint64_t sg_sm100_sf_bytes(uint32_t rows, uint32_t kblocks) {
    return (uint64_t)((rows + 127u) / 128u) * ((kblocks + 3u) / 4u) * 512u;
}

/* ---------------------------------------------------------------------------------------------------------
 * E4M3 (OCP MX v1.0 §5.3, "FN" variant): 1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities;
 * S.1111.111 is NaN, so the largest finite value is S.1111.110 = 1.75 * 2^8 = 448. Subnormals
 * (exponent 0) are m * 2^-9, the smallest 2^-9.
 * ------------------------------------------------------------------------------------------------------- */
#define SG_E4M3_MAX 448.0f
#define SG_E4M3_NAN 0x7Fu

/* Value of an E4M3 code (NaN for 0x7F / 0xFF). Exact in float. */
static inline SG_SM100_HD float sg_e4m3_decode(uint8_t c) {
    uint32_t e = (c >> 3) & 15u, m = c & 7u;
    float v;
    if (e == 15u && m == 7u) {
        v = nanf("");
    } else if (e == 0u) {
        v = (float)m * (1.0f / 512.0f); /* m * 2^-9 */
    } else {
        v = (float)(8u + m) * ldexpf(1.0f, (int)e - 10); /* (1 + m/8) * 2^(e-7) */
    }
    return (c & 0x80u) ? -v : v;
}

/* Nearest E4M3 code of x, ties to even, saturating: |x| > 448 (and +-inf) give +-448, NaN gives 0x7F.
 * This is cvt.rn.satfinite.e4m3x2.f32. Computed in double, where x * 2^k is exact, so the only rounding is
 * the explicit round-to-nearest-even of the scaled mantissa (rint in the default rounding mode). */
static inline SG_SM100_HD uint8_t sg_e4m3_encode(float x) {
    if (x != x) return (uint8_t)SG_E4M3_NAN;
    uint32_t sign = signbit(x) ? 0x80u : 0u;
    double a = x < 0 ? -(double)x : (double)x;
    if (a >= 448.0) return (uint8_t)(sign | 0x7Eu);
    if (a < 0.015625) { /* below 2^-6, the smallest normal: subnormal steps of 2^-9 */
        uint32_t m = (uint32_t)rint(a * 512.0); /* 0..8; 8 is exactly code 0x08 = 2^-6 */
        return (uint8_t)(sign | m);
    }
    int ex;
    double f = frexp(a, &ex);  /* a = f * 2^ex, f in [0.5, 1) */
    int E = ex - 1;                      /* a = (2f) * 2^E, E in [-6, 8] */
    uint32_t m = (uint32_t)rint((2.0 * f - 1.0) * 8.0);
    if (m == 8u) { m = 0; E++; }         /* rounded up to the next binade (never past 448: a < 448 here) */
    return (uint8_t)(sign | ((uint32_t)(E + 7) << 3) | m);
}

/* UE8M0 (OCP MX v1.0 §5.4): an 8-bit biased exponent, value 2^(u - 127); 0xFF is NaN. */
#define SG_UE8M0_NAN 0xFFu

static inline SG_SM100_HD float sg_ue8m0_decode(uint8_t u) {
    return u == SG_UE8M0_NAN ? nanf("") : ldexpf(1.0f, (int)u - 127);
}

/* The scale exponent of a block with largest magnitude amax, NVIDIA's MXFP8 recipe (cuBLAS / Transformer
 * Engine / ThunderKittens test_quantize.py; kernel-notes.md §2): e = clamp(ceil(log2(amax / 448)), -127, 127),
 * the smallest power of two that brings amax to <= 448, so no element saturates. (The OCP spec's own
 * example uses floor(log2(amax)) - 8, which can push the block maximum past 448 into saturation.)
 * amax = 0 gives -127 (code 0); amax = inf gives 127; NaN gives the NaN code. Returned as the UE8M0 code
 * e + 127. Exact: no floating log2 (frexp splits amax = f * 2^k, and 448 = 0.875 * 2^9). */
static inline SG_SM100_HD uint8_t sg_ue8m0_for_amax(float amax) {
    if (amax != amax) return (uint8_t)SG_UE8M0_NAN;
    if (!(amax > 0.0f)) return 0;
    if (isinf(amax)) return 254; /* log2(inf) clamps to the largest finite scale, 2^127 */
    int k;
    double f = frexp((double)amax, &k);
    int e = f <= 0.875 ? k - 9 : k - 8; /* amax/448 = (f/0.875) * 2^(k-9), f/0.875 in [0.57, 1.15) */
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return (uint8_t)(e + 127);
}

/* bf16 of x, round to nearest even (NaN stays a quiet NaN). */
static inline SG_SM100_HD float sg_bf16_round(float x) {
    union { float f; uint32_t u; } v;
    v.f = x;
    if ((v.u & 0x7F800000u) == 0x7F800000u && (v.u & 0x7FFFFFu)) {
        v.u |= 0x400000u;
    } else {
        v.u += 0x7FFFu + ((v.u >> 16) & 1u);
    }
    v.u &= 0xFFFF0000u;
    return v.f;
}
/* The bf16 bit pattern of sg_bf16_round(x). */
static inline SG_SM100_HD uint16_t sg_bf16_bits(float x) {
    union { float f; uint32_t u; } v;
    v.f = sg_bf16_round(x);
    return (uint16_t)(v.u >> 16);
}

#ifdef __cplusplus
}
#endif
#endif
