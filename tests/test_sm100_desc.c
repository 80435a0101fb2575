/* tests/test_sm100_desc.c — the tcgen05 bit-field builders of kernel/sm100/sm100_desc.h against constants
 * worked out by hand from the PTX ISA tables (#tcgen05-instruction-descriptor,
 * #tcgen05-shared-memory-descriptor, Tensor Memory addressing; field positions as transcribed by cutlass
 * mma_sm100_desc.hpp and kernel-notes.md §2) and the cuBLAS/cuDNN 128x4 scale-factor layout, plus pack/unpack
 * round trips over fresh random fields. Each expected value carries its derivation: field, bit range, value.
 * The one value taken from working code rather than derived here is gau-nernst's bf16 M128 N256 idesc.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/sm100/sm100_desc.h"

static uint64_t rng_state, seed_used;
static uint32_t rnd(uint32_t n) { /* uniform in [0, n) */
    return (uint32_t)(sg_test_splitmix64(&rng_state) % n);
}

static void test_idesc(void) {
    /* gau-nernst learn-cuda 02e matmul_v2, bf16 in, f32 out, M=128, N=256, both K-major:
     *   D format F32 = 1 at [4,6)     -> 0x00000010
     *   A format BF16 = 1 at [7,10)   -> 0x00000080
     *   B format BF16 = 1 at [10,13)  -> 0x00000400
     *   N >> 3 = 32 at [17,23)        -> 0x00400000
     *   M >> 4 = 8 at [24,29)         -> 0x08000000      sum 0x08400490 */
    CHECK(sg_sm100_idesc_bf16(128, 256) == 0x08400490u, "idesc kind::f16 bf16 M128 N256 = 0x08400490 (got 0x%08X)",
          sg_sm100_idesc_bf16(128, 256));
    /* Attention S = Q·Kᵀ over 196 keys padded to 208: N >> 3 = 26 at [17,23) -> 0x00340000; + 0x08000490 */
    CHECK(sg_sm100_idesc_bf16(128, 208) == 0x08340490u, "idesc kind::f16 bf16 M128 N208 = 0x08340490 (got 0x%08X)",
          sg_sm100_idesc_bf16(128, 208));
    /* P·V with N = 64 (head dim), M = 64: N>>3 = 8 -> 0x00100000; M>>4 = 4 -> 0x04000000; + 0x490 */
    CHECK(sg_sm100_idesc_bf16(64, 64) == 0x04100490u, "idesc kind::f16 bf16 M64 N64 = 0x04100490 (got 0x%08X)",
          sg_sm100_idesc_bf16(64, 64));
    /* kind::f8f6f4 E4M3 x E4M3 -> F32, M128 N128: D F32 -> 0x10; formats 0; N>>3 = 16 -> 0x00200000;
     * M>>4 = 8 -> 0x08000000: 0x08200010. E5M2 (1) in both: + 0x80 + 0x400 = 0x08200490. */
    sg_sm100_idesc_fields f8 = {0, 0, 0, SG_SM100_DFMT_F32, SG_SM100_F8_E4M3, SG_SM100_F8_E4M3, 0, 0, 0, 0, 128, 128, 0};
    CHECK(sg_sm100_idesc_pack(f8) == 0x08200010u, "idesc kind::f8f6f4 e4m3 M128 N128 = 0x08200010 (got 0x%08X)",
          sg_sm100_idesc_pack(f8));
    f8.a_format = f8.b_format = SG_SM100_F8_E5M2;
    CHECK(sg_sm100_idesc_pack(f8) == 0x08200490u, "idesc kind::f8f6f4 e5m2 M128 N128 = 0x08200490 (got 0x%08X)",
          sg_sm100_idesc_pack(f8));
    /* negate A (bit 13) + B MN-major (bit 16): 0x2000 + 0x10000 on top of the bf16 M128 N256 value */
    sg_sm100_idesc_fields fn = {0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 128, 256, 0};
    CHECK(sg_sm100_idesc_pack(fn) == 0x08412490u, "idesc negate A (bit 13) and B MN-major (bit 16) = 0x08412490 "
          "(got 0x%08X)", sg_sm100_idesc_pack(fn));

    /* Block-scaled kind::mxf8f6f4, E4M3 x E4M3, UE8M0, M128 N256:
     *   formats 0 at [7,10) and [10,13); N >> 3 = 32 at [17,23) -> 0x00400000;
     *   scale format UE8M0 = 1 at bit 23 -> 0x00800000; M >> 4 = 8 at [24,29) -> 0x08000000   = 0x08C00000
     *   sf id 1: B id at [4,6) -> 0x10, A id at [29,31) -> 0x20000000                           = 0x28C00010
     *   sf id 3: 0x30 + 0x60000000                                                              = 0x68C00030 */
    CHECK(sg_sm100_idesc_mxf8(128, 256, 0) == 0x08C00000u, "idesc mxf8f6f4 M128 N256 sf0 = 0x08C00000 (got 0x%08X)",
          sg_sm100_idesc_mxf8(128, 256, 0));
    CHECK(sg_sm100_idesc_mxf8(128, 256, 1) == 0x28C00010u, "idesc mxf8f6f4 M128 N256 sf1 = 0x28C00010 (got 0x%08X)",
          sg_sm100_idesc_mxf8(128, 256, 1));
    CHECK(sg_sm100_idesc_mxf8(128, 256, 3) == 0x68C00030u, "idesc mxf8f6f4 M128 N256 sf3 = 0x68C00030 (got 0x%08X)",
          sg_sm100_idesc_mxf8(128, 256, 3));
    /* FC2 / out-proj tile of 64 output columns: N >> 3 = 8 -> 0x00100000 (+ 0x08800000) = 0x08900000 */
    CHECK(sg_sm100_idesc_mxf8(128, 64, 0) == 0x08900000u, "idesc mxf8f6f4 M128 N64 sf0 = 0x08900000 (got 0x%08X)",
          sg_sm100_idesc_mxf8(128, 64, 0));
    /* The tiles of kernel/lab/sm100_gemm.cu, M128 N128 (PTX ISA #tcgen05-instruction-descriptor, the kind::f16
     * and the .kind::mxf8f6f4 .block_scale tables; N >> 3 = 16 at [17,23) -> 0x00200000):
     *   kind::f16 bf16: 0x10 + 0x80 + 0x400 + 0x00200000 + 0x08000000                           = 0x08200490
     *   mxf8f6f4: 0x00200000 + UE8M0 0x00800000 + 0x08000000 = 0x08A00000; sf id 2: + 0x20 + 0x40000000
     *                                                                                           = 0x48A00020 */
    CHECK(sg_sm100_idesc_bf16(128, 128) == 0x08200490u, "idesc kind::f16 bf16 M128 N128 (sm100 GEMM) = 0x08200490 "
          "(got 0x%08X)", sg_sm100_idesc_bf16(128, 128));
    CHECK(sg_sm100_idesc_mxf8(128, 128, 0) == 0x08A00000u, "idesc mxf8f6f4 M128 N128 sf0 (sm100 GEMM) = 0x08A00000 "
          "(got 0x%08X)", sg_sm100_idesc_mxf8(128, 128, 0));
    CHECK(sg_sm100_idesc_mxf8(128, 128, 2) == 0x48A00020u, "idesc mxf8f6f4 M128 N128 sf2 (sm100 GEMM) = 0x48A00020 "
          "(got 0x%08X)", sg_sm100_idesc_mxf8(128, 128, 2));
    sg_sm100_idesc_bs_fields bs = sg_sm100_idesc_bs_unpack(0x68C00030u);
    CHECK(bs.a_sf_id == 3 && bs.b_sf_id == 3 && bs.scale_format == 1 && bs.m == 128 && bs.n == 256 && bs.k_size == 0,
          "idesc mxf8f6f4 unpack of 0x68C00030: sf ids 3/3, UE8M0, M128, N256, K32");

    int bad = 0, bad_bs = 0;
    for (int i = 0; i < 20000; i++) {
        sg_sm100_idesc_fields f = {rnd(4), rnd(2), rnd(2), rnd(4), rnd(8), rnd(8), rnd(2), rnd(2), rnd(2), rnd(2),
                                   rnd(32) << 4, rnd(64) << 3, rnd(4)};
        uint32_t d = sg_sm100_idesc_pack(f);
        sg_sm100_idesc_fields g = sg_sm100_idesc_unpack(d);
        if (memcmp(&f, &g, sizeof f) != 0 || (d & ((1u << 6) | (1u << 23) | (1u << 29)))) bad++;
        sg_sm100_idesc_bs_fields b = {rnd(4), rnd(2), rnd(4), rnd(4), rnd(8), rnd(8), rnd(2), rnd(2), rnd(2), rnd(2),
                                      rnd(64) << 3, rnd(32) << 4, rnd(2), rnd(2)};
        uint32_t e = sg_sm100_idesc_bs_pack(b);
        sg_sm100_idesc_bs_fields c = sg_sm100_idesc_bs_unpack(e);
        if (memcmp(&b, &c, sizeof b) != 0 || (e & ((1u << 3) | (1u << 6)))) bad_bs++;
    }
    CHECK(bad == 0, "idesc f16/f8f6f4: 20000 random field sets (seed %llu) round-trip and leave reserved bits 6, 23, "
          "29 clear", (unsigned long long)seed_used);
    CHECK(bad_bs == 0, "idesc block-scaled: 20000 random field sets round-trip and leave reserved bits 3, 6 clear");
}

static void test_smem_desc(void) {
    /* K-major SW128 tile at shared address 0x400:
     *   start 0x400 >> 4 = 0x40 at [0,14)          -> 0x0000000000000040
     *   LBO 16 >> 4 = 1 at [16,30)                 -> 0x0000000000010000
     *   SBO 1024 >> 4 = 64 at [32,46)              -> 0x0000004000000000
     *   version 1 at [46,48)                       -> 0x0000400000000000
     *   layout SWIZZLE_128B = 2 at [61,64)         -> 0x4000000000000000     sum 0x4000404000010040 */
    uint64_t d = sg_sm100_smem_desc_kmajor_sw128(0x400);
    CHECK(d == 0x4000404000010040ull, "smem desc K-major SW128 @0x400 = 0x4000404000010040 (got 0x%016llX)",
          (unsigned long long)d);
    /* The Hopper encoding puts 128B swizzle as 1 at [62,64): the same bits as 2 at [61,64). */
    CHECK((d & (3ull << 62)) == (1ull << 62), "SWIZZLE_128B (2 at [61,64)) is bit-identical to Hopper's 1 at [62,64)");
    /* Scale factors for tcgen05.cp .32x128b.warpx4 at 0x2000: start 0x200; LBO 0; SBO 128 >> 4 = 8 at
     * [32,46) -> 0x0000000800000000; version 1 -> 0x0000400000000000; layout 0:       0x0000400800000200 */
    d = sg_sm100_smem_desc_sf(0x2000);
    CHECK(d == 0x0000400800000200ull, "smem desc scale factors @0x2000 = 0x0000400800000200 (got 0x%016llX)",
          (unsigned long long)d);
    /* 64B swizzle (4), base offset 5 at [49,52) -> 0x000A000000000000, LBO mode 1 at bit 52 ->
     * 0x0010000000000000, start 0x3FFF0 (the top of the 14-bit field) -> 0x3FFF:
     * 0x8000000000000000 + 0x001A400000000000 + 0x3FFF + LBO 0x100 -> 0x10<<16 = 0x100000, SBO 2048 -> 0x80<<32 */
    sg_sm100_smem_desc_fields f = {0x3FFF0, 0x100, 2048, 1, 5, 1, SG_SM100_LAYOUT_64B};
    d = sg_sm100_smem_desc_pack(f);
    CHECK(d == 0x801A408000103FFFull, "smem desc 64B swizzle, base offset 5, LBO mode 1 = 0x801A408000103FFF (got 0x%016llX)",
          (unsigned long long)d);
    /* The K loop of kernel/lab/sm100_gemm.cu advances a K-major SW128 descriptor by 32 bytes (16 bf16 or
     * 32 E4M3) per MMA with "desc + 2": the start address is addr >> 4 in [0,14) (PTX ISA "tcgen05 Shared
     * Memory Descriptor"), so this is exact when no carry leaves the field, i.e. for every 1024-aligned tile
     * base below the 227 KB of shared memory and the 4 K steps of a 128-byte swizzle row. */
    int bad_step = 0;
    for (uint32_t base = 0; base < 227u * 1024u; base += 1024u)
        for (uint32_t st = 0; st < 4; st++)
            bad_step += sg_sm100_smem_desc_kmajor_sw128(base + 32u * st) != sg_sm100_smem_desc_kmajor_sw128(base) + 2u * st;
    CHECK(bad_step == 0, "smem desc: +32 bytes along K = desc + 2 for every 1024-aligned base < 227 KB, 4 steps "
          "(%d wrong)", bad_step);
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        sg_sm100_smem_desc_fields a = {rnd(1u << 14) << 4, rnd(1u << 14) << 4, rnd(1u << 14) << 4, rnd(4), rnd(8),
                                       rnd(2), rnd(8)};
        uint64_t e = sg_sm100_smem_desc_pack(a);
        sg_sm100_smem_desc_fields b = sg_sm100_smem_desc_unpack(e);
        if (memcmp(&a, &b, sizeof a) != 0 || (e & ((3ull << 14) | (3ull << 30) | (1ull << 48) | (0xFFull << 53))))
            bad++;
    }
    CHECK(bad == 0, "smem desc: 20000 random field sets round-trip; bits 14-15, 30-31, 48, 53-60 stay clear");
}

static void test_tmem_and_shapes(void) {
    CHECK(sg_sm100_tmem_addr(32, 64) == 0x00200040u, "TMEM address lane 32 column 64 = 0x00200040");
    CHECK(sg_sm100_tmem_addr(96, 511) == 0x006001FFu, "TMEM address lane 96 column 511 = 0x006001FF");
    CHECK(sg_sm100_tmem_lane(0x006001FFu) == 96 && sg_sm100_tmem_column(0x006001FFu) == 511,
          "TMEM address field extraction");
    /* kernel/lab/sm100_gemm.cu's TMEM map (PTX ISA "Tensor Memory addressing": lane in bits 31-16, column in
     * 15-0; "data path layout D": M = 128 puts output row m in lane m; 512 columns from a base of lane 0,
     * column 0): accumulator buffer b
     * at column 128 b; epilogue warp w reads lane quarter w % 4, 32 columns at a time, so warp 5 (quarter 1),
     * buffer 1, third chunk reads lane 32, column 128 + 64 = 192 -> 0x002000C0; the scale columns of ring stage
     * s are 256 + 8 s (SFA) and + 4 (SFB): stage 5's SFB at column 300 = 0x12C, inside the allocation. */
    CHECK(sg_sm100_tmem_addr(32u * (5 % 4), 128u * 1 + 64u) == 0x002000C0u,
          "TMEM address of the sm100 GEMM epilogue: warp 5, buffer 1, columns 64.. = 0x002000C0");
    CHECK(sg_sm100_tmem_addr(0, 256u + 8u * 5 + 4u) == 0x0000012Cu && 256u + 8u * 6 <= 512u,
          "TMEM scale columns of ring stage 5 (SFB) = 0x0000012C, all 6 stages inside 512 columns");
    CHECK(sg_sm100_shape_ok_f16(128, 208) && sg_sm100_shape_ok_f16(64, 8) && !sg_sm100_shape_ok_f16(128, 200) &&
              !sg_sm100_shape_ok_f16(256, 256) && !sg_sm100_shape_ok_f16(64, 264),
          "kind::f16 cta_group::1 shapes: M128 N%%16, M64 N%%8, N <= 256, M in {64, 128}");
    CHECK(sg_sm100_shape_ok_mxf8(128, 64) && sg_sm100_shape_ok_mxf8(128, 256) && !sg_sm100_shape_ok_mxf8(64, 64) &&
              !sg_sm100_shape_ok_mxf8(128, 12),
          "mxf8f6f4 block_scale cta_group::1 shapes: M = 128 only, N %% 8 in 8..256");
}

static void test_sf_layout(void) {
    /* byte = (m % 32) * 16 + (m / 32) * 4 + j inside a 512-byte atom */
    CHECK(sg_sm100_sf_atom_offset(0, 0) == 0 && sg_sm100_sf_atom_offset(1, 0) == 16 &&
              sg_sm100_sf_atom_offset(31, 0) == 496 && sg_sm100_sf_atom_offset(32, 0) == 4 &&
              sg_sm100_sf_atom_offset(33, 2) == 22 && sg_sm100_sf_atom_offset(127, 3) == 511,
          "128x4 atom offsets: (0,0)=0 (1,0)=16 (31,0)=496 (32,0)=4 (33,2)=22 (127,3)=511");
    unsigned char seen[512] = {0};
    int dup = 0;
    for (uint32_t m = 0; m < 128; m++)
        for (uint32_t j = 0; j < 4; j++) {
            uint32_t o = sg_sm100_sf_atom_offset(m, j);
            if (o >= 512 || seen[o]++) dup++;
        }
    CHECK(dup == 0, "128x4 atom: the 512 (row, K-block) pairs map one-to-one onto bytes 0..511");
    /* row 130, K-block 5, K = 768 (24 K-blocks -> 6 atoms along K): atom (1, 1) at (1*6 + 1) * 512 = 3584,
     * inside it row 2, j 1 -> 2*16 + 0*4 + 1 = 33: 3617 */
    CHECK(sg_sm100_sf_offset(130, 5, 24) == 3617, "scale offset of row 130, K-block 5 with K = 768: 3617 (got %llu)",
          (unsigned long long)sg_sm100_sf_offset(130, 5, 24));
    /* The cuDNN description as a 5-D row-major array [M/128][K/128][32][4][4] indexed by
     * (m/128, kb/4, m%32, (m%128)/32, kb%4), written independently. */
    int bad = 0;
    const uint32_t KB = 96; /* K = 3072, FC2 */
    for (uint32_t m = 0; m < 300; m++)
        for (uint32_t kb = 0; kb < KB; kb++) {
            uint64_t want = ((((uint64_t)(m / 128) * (KB / 4) + kb / 4) * 32 + m % 32) * 4 + (m % 128) / 32) * 4 + kb % 4;
            if (sg_sm100_sf_offset(m, kb, KB) != want) bad++;
        }
    CHECK(bad == 0, "scale offsets of a 300 x 96 scale matrix equal the [M/128][K/128][32][4][4] array index");
    CHECK(sg_sm100_sf_bytes(300, 96) == 3 * 24 * 512 && sg_sm100_sf_bytes(196, 24) == 2 * 6 * 512 &&
              sg_sm100_sf_bytes(1, 1) == 512,
          "scale storage sizes pad rows to 128 and K-blocks to 4");
}

static void test_bf16(void) {
    CHECK(sg_bf16_round(1.00390625f) == 1.0f, "bf16: 1 + 2^-8 ties to even -> 1");
    CHECK(sg_bf16_round(1.01171875f) == 1.015625f, "bf16: 1 + 3*2^-8 ties to even -> 1 + 2^-6");
    CHECK(sg_bf16_round(nextafterf(1.00390625f, 2.0f)) == 1.0078125f, "bf16: one float above the tie rounds up");
    CHECK(isnan(sg_bf16_round(NAN)) && isinf(sg_bf16_round(INFINITY)) && sg_bf16_round(-0.0f) == 0.0f &&
              signbit(sg_bf16_round(-0.0f)),
          "bf16: NaN stays NaN, inf stays inf, -0 keeps its sign");
}

int main(void) {
    rng_state = seed_used = (uint64_t)time(NULL);
    test_idesc();
    test_smem_desc();
    test_tmem_and_shapes();
    test_sf_layout();
    test_bf16();
    return CHECK_DONE();
}
