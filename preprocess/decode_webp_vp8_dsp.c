/* preprocess/decode_webp_vp8_dsp.c — VP8 reconstruction and RGB output, with libwebp 1.6.0's exact arithmetic.
 *
 * Intra prediction, the inverse transforms and the loop filter are RFC 6386's (sections 12, 14, 15). Where
 * libwebp's x86 build (what Pillow's wheels run) computes something differently from the RFC's C, this follows
 * the x86 build, since its pixels are the reference:
 *   - a 4x4 block with coefficients past the third goes through libwebp's SSE2 inverse DCT, whose arithmetic is
 *     16-bit lanes throughout: every sum wraps at 16 bits and the two multiplications are mulhi with 20091 and
 *     -30068 (= 35468 - 65536) plus the input. For coefficients an encoder produces this equals the RFC's 32-bit
 *     version; for hostile ones (dequantised values past +-2048) only this gives libwebp's pixels. The chroma
 *     blocks of a macroblock with any AC coefficient use it too, all four of them.
 *   - blocks with only the DC, or only coefficients 0, 1 and 4, use the shortcuts libwebp takes in plain C (32-bit
 *     arithmetic), which equal the full transform when nothing wraps.
 *   - the Y2 (Walsh-Hadamard) transform is 32-bit with 16-bit results.
 * The loop filter follows libwebp's order per macroblock: left edge, inner vertical edges, top edge, inner
 * horizontal edges; the simple filter touches luma only.
 * RGB: libwebp's "fancy" upsampler (each output chroma sample is (9 a + 3 b + 3 c + d + 8) / 16 of the nearest
 * four, computed in libwebp's two rounding steps; the first and last rows and columns mirror) and its 14-bit
 * fixed-point BT.601 conversion (MultHi / VP8Clip8 in yuv.h).
 * Speed: where SSE2 is compiled in (x86-64's baseline, so no run-time dispatch), the loop filter, the full
 * inverse DCT, the upsampling and the conversion run as SSE2 kernels that do the plain C's arithmetic in 16-bit
 * lanes, so their bytes are the C path's (each kernel says why); other architectures run the C.
 * sg_vp8_portable_kernels (tests) switches to the C on x86-64 so that tests/test_webp_vp8 compares the two.
 */
#include "preprocess/decode_webp_vp8.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define BPS SG_VP8_BPS

static int force_portable; /* set by sg_vp8_portable_kernels (tests); read relaxed, like resize.c's */

int sg_vp8_portable_kernels(int on) {
    __atomic_store_n(&force_portable, on != 0, __ATOMIC_RELAXED);
#if defined(__SSE2__)
    return 1;
#else
    return 0;
#endif
}

static inline uint8_t clip_8b(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
static inline int clamp_s(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline int avg3(int a, int b, int c) { return (a + 2 * b + c + 2) >> 2; }
static inline int avg2(int a, int b) { return (a + b + 1) >> 1; }

/* --- intra prediction ---------------------------------------------------------------------------------------- */
static void fill_block(uint8_t *dst, int size, int v) {
    for (int j = 0; j < size; j++) memset(dst + j * BPS, v, (size_t)size);
}

/* TrueMotion: left + top - top-left, clipped. */
static void predict_tm(uint8_t *dst, int size) {
    const uint8_t *top = dst - BPS;
    int tl = top[-1];
    for (int j = 0; j < size; j++) {
        int l = dst[j * BPS - 1] - tl;
        for (int i = 0; i < size; i++) dst[j * BPS + i] = clip_8b(l + top[i]);
    }
}

static void predict_vertical(uint8_t *dst, int size) {
    for (int j = 0; j < size; j++) memcpy(dst + j * BPS, dst - BPS, (size_t)size);
}

static void predict_horizontal(uint8_t *dst, int size) {
    for (int j = 0; j < size; j++) memset(dst + j * BPS, dst[j * BPS - 1], (size_t)size);
}

/* DC of size x size from the top row and / or left column (shift = log2 of the samples summed). */
static void predict_dc(uint8_t *dst, int size, int use_top, int use_left) {
    int sum = 0, n = 0;
    if (use_top)
        for (int i = 0; i < size; i++) sum += dst[i - BPS];
    if (use_left)
        for (int j = 0; j < size; j++) sum += dst[j * BPS - 1];
    n = (use_top + use_left) * size;
    int shift = size == 16 ? 4 : 3;
    if (use_top && use_left) shift++;
    fill_block(dst, size, n ? (sum + (n >> 1)) >> shift : 0x80);
}

static void predict_whole(int mode, uint8_t *dst, int size) {
    switch (mode) {
    case SG_VP8_B_TM: predict_tm(dst, size); break;
    case SG_VP8_B_VE: predict_vertical(dst, size); break;
    case SG_VP8_B_HE: predict_horizontal(dst, size); break;
    case SG_VP8_DC_NOTOP: predict_dc(dst, size, 0, 1); break;
    case SG_VP8_DC_NOLEFT: predict_dc(dst, size, 1, 0); break;
    case SG_VP8_DC_NOTOPLEFT: predict_dc(dst, size, 0, 0); break;
    default: predict_dc(dst, size, 1, 1); break;
    }
}

void sg_vp8_predict_luma16(int mode, uint8_t *dst) { predict_whole(mode, dst, 16); }
void sg_vp8_predict_chroma8(int mode, uint8_t *dst) { predict_whole(mode, dst, 8); }

#define P(x, y) dst[(x) + (y) * BPS]

void sg_vp8_predict_luma4(int mode, uint8_t *dst) {
    const uint8_t *t = dst - BPS; /* t[-1] top-left, t[0..3] top, t[4..7] top-right */
    int X = t[-1], A = t[0], B = t[1], C = t[2], D = t[3], E = t[4], F = t[5], G = t[6], H = t[7];
    int I = P(-1, 0), J = P(-1, 1), K = P(-1, 2), L = P(-1, 3);
    switch (mode) {
    case SG_VP8_B_DC: fill_block(dst, 4, (A + B + C + D + I + J + K + L + 4) >> 3); break;
    case SG_VP8_B_TM: predict_tm(dst, 4); break;
    case SG_VP8_B_VE: /* smoothed top row */
        for (int j = 0; j < 4; j++) {
            P(0, j) = (uint8_t)avg3(X, A, B), P(1, j) = (uint8_t)avg3(A, B, C);
            P(2, j) = (uint8_t)avg3(B, C, D), P(3, j) = (uint8_t)avg3(C, D, E);
        }
        break;
    case SG_VP8_B_HE: { /* smoothed left column */
        int v[4] = {avg3(X, I, J), avg3(I, J, K), avg3(J, K, L), avg3(K, L, L)};
        for (int j = 0; j < 4; j++) memset(dst + j * BPS, v[j], 4);
        break;
    }
    case SG_VP8_B_RD: { /* down-right: diagonal e[] from the bottom-left (L) round the corner to the top-right (D) */
        int e[7] = {avg3(J, K, L), avg3(I, J, K), avg3(X, I, J), avg3(A, X, I), avg3(B, A, X), avg3(C, B, A),
                    avg3(D, C, B)};
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) P(i, j) = (uint8_t)e[3 - j + i];
        break;
    }
    case SG_VP8_B_LD: { /* down-left along the top and top-right */
        int e[7] = {avg3(A, B, C), avg3(B, C, D), avg3(C, D, E), avg3(D, E, F), avg3(E, F, G), avg3(F, G, H),
                    avg3(G, H, H)};
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) P(i, j) = (uint8_t)e[i + j];
        break;
    }
    case SG_VP8_B_VR:
        P(0, 0) = P(1, 2) = (uint8_t)avg2(X, A);
        P(1, 0) = P(2, 2) = (uint8_t)avg2(A, B);
        P(2, 0) = P(3, 2) = (uint8_t)avg2(B, C);
        P(3, 0) = (uint8_t)avg2(C, D);
        P(0, 3) = (uint8_t)avg3(K, J, I);
        P(0, 2) = (uint8_t)avg3(J, I, X);
        P(0, 1) = P(1, 3) = (uint8_t)avg3(I, X, A);
        P(1, 1) = P(2, 3) = (uint8_t)avg3(X, A, B);
        P(2, 1) = P(3, 3) = (uint8_t)avg3(A, B, C);
        P(3, 1) = (uint8_t)avg3(B, C, D);
        break;
    case SG_VP8_B_VL:
        P(0, 0) = (uint8_t)avg2(A, B);
        P(1, 0) = P(0, 2) = (uint8_t)avg2(B, C);
        P(2, 0) = P(1, 2) = (uint8_t)avg2(C, D);
        P(3, 0) = P(2, 2) = (uint8_t)avg2(D, E);
        P(0, 1) = (uint8_t)avg3(A, B, C);
        P(1, 1) = P(0, 3) = (uint8_t)avg3(B, C, D);
        P(2, 1) = P(1, 3) = (uint8_t)avg3(C, D, E);
        P(3, 1) = P(2, 3) = (uint8_t)avg3(D, E, F);
        P(3, 2) = (uint8_t)avg3(E, F, G); /* these two break the pattern, as the RFC's do */
        P(3, 3) = (uint8_t)avg3(F, G, H);
        break;
    case SG_VP8_B_HD:
        P(0, 0) = P(2, 1) = (uint8_t)avg2(I, X);
        P(0, 1) = P(2, 2) = (uint8_t)avg2(J, I);
        P(0, 2) = P(2, 3) = (uint8_t)avg2(K, J);
        P(0, 3) = (uint8_t)avg2(L, K);
        P(3, 0) = (uint8_t)avg3(A, B, C);
        P(2, 0) = (uint8_t)avg3(X, A, B);
        P(1, 0) = P(3, 1) = (uint8_t)avg3(I, X, A);
        P(1, 1) = P(3, 2) = (uint8_t)avg3(J, I, X);
        P(1, 2) = P(3, 3) = (uint8_t)avg3(K, J, I);
        P(1, 3) = (uint8_t)avg3(L, K, J);
        break;
    default: /* SG_VP8_B_HU */
        P(0, 0) = (uint8_t)avg2(I, J);
        P(2, 0) = P(0, 1) = (uint8_t)avg2(J, K);
        P(2, 1) = P(0, 2) = (uint8_t)avg2(K, L);
        P(1, 0) = (uint8_t)avg3(I, J, K);
        P(3, 0) = P(1, 1) = (uint8_t)avg3(J, K, L);
        P(3, 1) = P(1, 2) = (uint8_t)avg3(K, L, L);
        P(3, 2) = P(2, 2) = P(0, 3) = P(1, 3) = P(2, 3) = P(3, 3) = (uint8_t)L;
        break;
    }
}
#undef P

/* --- inverse transforms -------------------------------------------------------------------------------------- */
/* The RFC's multiplications by sqrt(2) cos(pi/8) (20091 / 65536 + 1) and sqrt(2) sin(pi/8) (35468 / 65536), in
 * 32-bit arithmetic (libwebp's C, used for its DC-only and three-coefficient shortcuts). */
static inline int mul_c1(int a) { return ((a * 20091) >> 16) + a; }
static inline int mul_c2(int a) { return (a * 35468) >> 16; }

/* The same in one 16-bit lane of libwebp's SSE2 transform: wrapping sums, mulhi by 20091 and by -30068. */
static inline int16_t w16(int v) { return (int16_t)v; } /* wraps to 16 bits (two's complement), as a lane does */
static inline int16_t mulhi16(int16_t a, int k) { return (int16_t)((a * k) >> 16); }
static inline int16_t lane_c(int16_t x1, int16_t x3) { /* mul_c2(x1) - mul_c1(x3) */
    return w16(w16(x1 - x3) + w16(mulhi16(x1, -30068) - mulhi16(x3, 20091)));
}
static inline int16_t lane_d(int16_t x1, int16_t x3) { /* mul_c1(x1) + mul_c2(x3) */
    return w16(w16(x1 + x3) + w16(mulhi16(x1, 20091) + mulhi16(x3, -30068)));
}

/* The full 4x4 inverse DCT with libwebp's SSE2 16-bit arithmetic, added to dst with unsigned saturation. */
static void idct_full(const int16_t *in, uint8_t *dst) {
    int16_t tmp[16]; /* tmp[4 * i + k]: the vertical pass of column i, output k */
    for (int i = 0; i < 4; i++) {
        int16_t a = w16(in[i] + in[8 + i]), b = w16(in[i] - in[8 + i]);
        int16_t c = lane_c(in[4 + i], in[12 + i]), d = lane_d(in[4 + i], in[12 + i]);
        tmp[4 * i + 0] = w16(a + d), tmp[4 * i + 1] = w16(b + c);
        tmp[4 * i + 2] = w16(b - c), tmp[4 * i + 3] = w16(a - d);
    }
    for (int k = 0; k < 4; k++) { /* output row k from output k of each column */
        int16_t dc = w16(tmp[k] + 4);
        int16_t a = w16(dc + tmp[8 + k]), b = w16(dc - tmp[8 + k]);
        int16_t c = lane_c(tmp[4 + k], tmp[12 + k]), d = lane_d(tmp[4 + k], tmp[12 + k]);
        int16_t r[4] = {w16(a + d), w16(b + c), w16(b - c), w16(a - d)};
        uint8_t *row = dst + k * BPS;
        for (int i = 0; i < 4; i++) row[i] = clip_8b(w16(row[i] + (r[i] >> 3)));
    }
}

#if defined(__SSE2__)
/* idct_full with SSE2: the same 16-bit lanes (one lane per column in the first pass, per row in the second),
 * so the same wrapping sums and mulhi products; the results are the C path's by construction. */
static inline __m128i lane_c_simd(__m128i x1, __m128i x3) {
    __m128i m = _mm_sub_epi16(_mm_mulhi_epi16(x1, _mm_set1_epi16(-30068)), _mm_mulhi_epi16(x3, _mm_set1_epi16(20091)));
    return _mm_add_epi16(_mm_sub_epi16(x1, x3), m);
}
static inline __m128i lane_d_simd(__m128i x1, __m128i x3) {
    __m128i m = _mm_add_epi16(_mm_mulhi_epi16(x1, _mm_set1_epi16(20091)), _mm_mulhi_epi16(x3, _mm_set1_epi16(-30068)));
    return _mm_add_epi16(_mm_add_epi16(x1, x3), m);
}

/* x[0..3]: four rows of 4 int16 (low halves) -> four columns. */
static inline void transpose_4x4_16(__m128i x[4]) {
    __m128i a = _mm_unpacklo_epi16(x[0], x[1]), b = _mm_unpacklo_epi16(x[2], x[3]);
    __m128i lo = _mm_unpacklo_epi32(a, b), hi = _mm_unpackhi_epi32(a, b);
    x[0] = lo, x[1] = _mm_unpackhi_epi64(lo, lo), x[2] = hi, x[3] = _mm_unpackhi_epi64(hi, hi);
}

static void idct_full_simd(const int16_t *in, uint8_t *dst) {
    __m128i r0 = _mm_loadl_epi64((const __m128i *)in), r1 = _mm_loadl_epi64((const __m128i *)(in + 4));
    __m128i r2 = _mm_loadl_epi64((const __m128i *)(in + 8)), r3 = _mm_loadl_epi64((const __m128i *)(in + 12));
    __m128i a = _mm_add_epi16(r0, r2), b = _mm_sub_epi16(r0, r2), c = lane_c_simd(r1, r3), d = lane_d_simd(r1, r3);
    __m128i t[4] = {_mm_add_epi16(a, d), _mm_add_epi16(b, c), _mm_sub_epi16(b, c), _mm_sub_epi16(a, d)};
    transpose_4x4_16(t); /* t[j]: lane k = output k of column j */
    __m128i dc = _mm_add_epi16(t[0], _mm_set1_epi16(4));
    a = _mm_add_epi16(dc, t[2]), b = _mm_sub_epi16(dc, t[2]), c = lane_c_simd(t[1], t[3]), d = lane_d_simd(t[1], t[3]);
    __m128i o[4] = {_mm_srai_epi16(_mm_add_epi16(a, d), 3), _mm_srai_epi16(_mm_add_epi16(b, c), 3),
                    _mm_srai_epi16(_mm_sub_epi16(b, c), 3), _mm_srai_epi16(_mm_sub_epi16(a, d), 3)};
    transpose_4x4_16(o); /* o[k]: output row k */
    __m128i zero = _mm_setzero_si128();
    for (int k = 0; k < 4; k++) {
        uint32_t px;
        memcpy(&px, dst + k * BPS, 4);
        __m128i sum = _mm_add_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128((int)px), zero), o[k]);
        px = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(sum, sum));
        memcpy(dst + k * BPS, &px, 4);
    }
}

static void idct_full_pick(const int16_t *in, uint8_t *dst) {
    if (!__atomic_load_n(&force_portable, __ATOMIC_RELAXED)) idct_full_simd(in, dst);
    else idct_full(in, dst);
}
#else
#define idct_full_pick idct_full
#endif

/* Only coefficients 0, 1 and 4 non-zero (libwebp's TransformAC3, 32-bit). */
static void idct_ac3(const int16_t *in, uint8_t *dst) {
    int a = in[0] + 4;
    int c4 = mul_c2(in[4]), d4 = mul_c1(in[4]), c1 = mul_c2(in[1]), d1 = mul_c1(in[1]);
    int rows[4] = {a + d4, a + c4, a - c4, a - d4};
    for (int j = 0; j < 4; j++) {
        uint8_t *row = dst + j * BPS;
        row[0] = clip_8b(row[0] + ((rows[j] + d1) >> 3));
        row[1] = clip_8b(row[1] + ((rows[j] + c1) >> 3));
        row[2] = clip_8b(row[2] + ((rows[j] - c1) >> 3));
        row[3] = clip_8b(row[3] + ((rows[j] - d1) >> 3));
    }
}

static void idct_dc(const int16_t *in, uint8_t *dst) {
    int dc = (in[0] + 4) >> 3;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) dst[j * BPS + i] = clip_8b(dst[j * BPS + i] + dc);
}

void sg_vp8_add_luma_residual(int nz_code, const int16_t *coeffs, uint8_t *dst) {
    if (nz_code == 3) idct_full_pick(coeffs, dst);
    else if (nz_code == 2) idct_ac3(coeffs, dst);
    else if (nz_code == 1) idct_dc(coeffs, dst);
}

void sg_vp8_add_chroma_residual(int any_ac, int any_dc, const int16_t *coeffs, uint8_t *dst) {
    static const int off[4] = {0, 4, 4 * BPS, 4 * BPS + 4};
    for (int b = 0; b < 4; b++) {
        if (any_ac) idct_full_pick(coeffs + 16 * b, dst + off[b]);
        else if (any_dc && coeffs[16 * b]) idct_dc(coeffs + 16 * b, dst + off[b]);
    }
}

void sg_vp8_inverse_wht(const int16_t *in, int16_t *out) {
    int tmp[16];
    for (int i = 0; i < 4; i++) {
        int a0 = in[i] + in[12 + i], a1 = in[4 + i] + in[8 + i];
        int a2 = in[4 + i] - in[8 + i], a3 = in[i] - in[12 + i];
        tmp[i] = a0 + a1, tmp[8 + i] = a0 - a1, tmp[4 + i] = a3 + a2, tmp[12 + i] = a3 - a2;
    }
    for (int i = 0; i < 4; i++) {
        int dc = tmp[4 * i] + 3; /* the rounding of the final >> 3 */
        int a0 = dc + tmp[4 * i + 3], a1 = tmp[4 * i + 1] + tmp[4 * i + 2];
        int a2 = tmp[4 * i + 1] - tmp[4 * i + 2], a3 = dc - tmp[4 * i + 3];
        out[16 * (4 * i + 0)] = (int16_t)((a0 + a1) >> 3);
        out[16 * (4 * i + 1)] = (int16_t)((a3 + a2) >> 3);
        out[16 * (4 * i + 2)] = (int16_t)((a0 - a1) >> 3);
        out[16 * (4 * i + 3)] = (int16_t)((a3 - a2) >> 3);
    }
}

/* --- loop filter (RFC 6386 section 15) ----------------------------------------------------------------------- */
static inline int sclip1(int v) { return clamp_s(v, -128, 127); } /* signed char */
static inline int sclip2(int v) { return clamp_s(v, -16, 15); }   /* the filter's (x + 3 or 4) >> 3 */
static inline int iabs(int v) { return v < 0 ? -v : v; }

/* p points at q0; the edge runs between p[-step] and p[0]. */
static inline void filter_common2(uint8_t *p, ptrdiff_t step) { /* 2 pixels changed, outer taps used */
    int p1 = p[-2 * step], p0 = p[-step], q0 = p[0], q1 = p[step];
    int a = 3 * (q0 - p0) + sclip1(p1 - q1);
    int a1 = sclip2((a + 4) >> 3), a2 = sclip2((a + 3) >> 3);
    p[-step] = clip_8b(p0 + a2);
    p[0] = clip_8b(q0 - a1);
}

static inline void filter_inner4(uint8_t *p, ptrdiff_t step) { /* subblock edge, no outer taps, 4 changed */
    int p1 = p[-2 * step], p0 = p[-step], q0 = p[0], q1 = p[step];
    int a = 3 * (q0 - p0);
    int a1 = sclip2((a + 4) >> 3), a2 = sclip2((a + 3) >> 3), a3 = (a1 + 1) >> 1;
    p[-2 * step] = clip_8b(p1 + a3);
    p[-step] = clip_8b(p0 + a2);
    p[0] = clip_8b(q0 - a1);
    p[step] = clip_8b(q1 - a3);
}

static inline void filter_mb6(uint8_t *p, ptrdiff_t step) { /* macroblock edge: 6 changed, weights 27 / 18 / 9 */
    int p2 = p[-3 * step], p1 = p[-2 * step], p0 = p[-step], q0 = p[0], q1 = p[step], q2 = p[2 * step];
    int a = sclip1(3 * (q0 - p0) + sclip1(p1 - q1));
    int a1 = (27 * a + 63) >> 7, a2 = (18 * a + 63) >> 7, a3 = (9 * a + 63) >> 7;
    p[-3 * step] = clip_8b(p2 + a3);
    p[-2 * step] = clip_8b(p1 + a2);
    p[-step] = clip_8b(p0 + a1);
    p[0] = clip_8b(q0 - a1);
    p[step] = clip_8b(q1 - a2);
    p[2 * step] = clip_8b(q2 - a3);
}

static inline int edge_ok(const uint8_t *p, ptrdiff_t step, int t2) {
    return 4 * iabs(p[-step] - p[0]) + iabs(p[-2 * step] - p[step]) <= t2;
}

static inline int interior_ok(const uint8_t *p, ptrdiff_t step, int it) {
    return iabs(p[-4 * step] - p[-3 * step]) <= it && iabs(p[-3 * step] - p[-2 * step]) <= it &&
           iabs(p[-2 * step] - p[-step]) <= it && iabs(p[3 * step] - p[2 * step]) <= it &&
           iabs(p[2 * step] - p[step]) <= it && iabs(p[step] - p[0]) <= it;
}

static inline int high_variance(const uint8_t *p, ptrdiff_t step, int hev) {
    return iabs(p[-2 * step] - p[-step]) > hev || iabs(p[step] - p[0]) > hev;
}

/* n pixels along an edge: p the first q0, step across the edge, along the next pixel on it. */
static void simple_edge(uint8_t *p, ptrdiff_t step, ptrdiff_t along, int n, int thresh) {
    int t2 = 2 * thresh + 1;
    for (int i = 0; i < n; i++, p += along)
        if (edge_ok(p, step, t2)) filter_common2(p, step);
}

static void normal_edge(uint8_t *p, ptrdiff_t step, ptrdiff_t along, int n, int thresh, int ilevel, int hev,
                        int mb_edge) {
    int t2 = 2 * thresh + 1;
    for (int i = 0; i < n; i++, p += along) {
        if (!edge_ok(p, step, t2) || !interior_ok(p, step, ilevel)) continue;
        if (high_variance(p, step, hev)) filter_common2(p, step);
        else if (mb_edge) filter_mb6(p, step);
        else filter_inner4(p, step);
    }
}

static void filter_mb_portable(const sg_vp8_filter *f, int simple, int left, int top, uint8_t *y, size_t ys,
                               uint8_t *u, uint8_t *v, size_t uvs) {
    int lim = f->limit, il = f->ilevel, hev = f->hev;
    ptrdiff_t s = (ptrdiff_t)ys, cs = (ptrdiff_t)uvs;
    if (lim == 0) return;
    if (simple) {
        if (left) simple_edge(y, 1, s, 16, lim + 4);
        if (f->inner)
            for (int x = 4; x < 16; x += 4) simple_edge(y + x, 1, s, 16, lim);
        if (top) simple_edge(y, s, 1, 16, lim + 4);
        if (f->inner)
            for (int r = 4; r < 16; r += 4) simple_edge(y + r * s, s, 1, 16, lim);
        return;
    }
    if (left) {
        normal_edge(y, 1, s, 16, lim + 4, il, hev, 1);
        normal_edge(u, 1, cs, 8, lim + 4, il, hev, 1);
        normal_edge(v, 1, cs, 8, lim + 4, il, hev, 1);
    }
    if (f->inner) {
        for (int x = 4; x < 16; x += 4) normal_edge(y + x, 1, s, 16, lim, il, hev, 0);
        normal_edge(u + 4, 1, cs, 8, lim, il, hev, 0);
        normal_edge(v + 4, 1, cs, 8, lim, il, hev, 0);
    }
    if (top) {
        normal_edge(y, s, 1, 16, lim + 4, il, hev, 1);
        normal_edge(u, cs, 1, 8, lim + 4, il, hev, 1);
        normal_edge(v, cs, 1, 8, lim + 4, il, hev, 1);
    }
    if (f->inner) {
        for (int r = 4; r < 16; r += 4) normal_edge(y + r * s, s, 1, 16, lim, il, hev, 0);
        normal_edge(u + 4 * cs, cs, 1, 8, lim, il, hev, 0);
        normal_edge(v + 4 * cs, cs, 1, 8, lim, il, hev, 0);
    }
}

#if defined(__SSE2__)
/* The same filter with SSE2, 16 pixels along an edge at once: the eight taps p3 p2 p1 p0 q0 q1 q2 q3 across the
 * edge are eight vectors of 16 bytes (horizontal edges load them as rows; vertical edges transpose 16 rows of 8
 * bytes; the two chroma planes' 8-pixel edges share one vector, U in the low half). The arithmetic is the C
 * path's, in 16-bit lanes, where every intermediate fits: sums of at most 4 * 255 + 255, 3 * 255 + 128 and
 * 27 * 128 + 63; packus is clip_8b. So the bytes are the C path's, and the tests compare the two. */
enum { LF_SIMPLE, LF_INNER, LF_MB };

static inline __m128i abs_diff16(__m128i a, __m128i b) { return _mm_max_epi16(_mm_sub_epi16(a, b), _mm_sub_epi16(b, a)); }
static inline __m128i clamp16(__m128i v, int lo, int hi) {
    return _mm_min_epi16(_mm_max_epi16(v, _mm_set1_epi16((short)lo)), _mm_set1_epi16((short)hi));
}
static inline __m128i select16(__m128i m, __m128i a, __m128i b) { /* m ? a : b */
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}

/* Eight lanes of one edge: x[0..7] the taps as 16-bit values, changed in place. */
static inline void filter_lanes(__m128i x[8], int t2, int it, int hev, int kind) {
    __m128i p3 = x[0], p2 = x[1], p1 = x[2], p0 = x[3], q0 = x[4], q1 = x[5], q2 = x[6], q3 = x[7];
    __m128i edge = _mm_add_epi16(_mm_slli_epi16(abs_diff16(p0, q0), 2), abs_diff16(p1, q1));
    __m128i mask = _mm_cmplt_epi16(edge, _mm_set1_epi16((short)(t2 + 1)));
    __m128i pq = clamp16(_mm_sub_epi16(p1, q1), -128, 127);
    __m128i d = _mm_sub_epi16(q0, p0), d3 = _mm_add_epi16(_mm_add_epi16(d, d), d);
    __m128i a = _mm_add_epi16(d3, pq); /* filter_common2's */
    __m128i c_a1 = clamp16(_mm_srai_epi16(_mm_add_epi16(a, _mm_set1_epi16(4)), 3), -16, 15);
    __m128i c_a2 = clamp16(_mm_srai_epi16(_mm_add_epi16(a, _mm_set1_epi16(3)), 3), -16, 15);
    __m128i c_p0 = _mm_add_epi16(p0, c_a2), c_q0 = _mm_sub_epi16(q0, c_a1);
    if (kind == LF_SIMPLE) {
        x[3] = select16(mask, c_p0, p0);
        x[4] = select16(mask, c_q0, q0);
        return;
    }
    __m128i inner = _mm_max_epi16(_mm_max_epi16(abs_diff16(p3, p2), abs_diff16(p2, p1)),
                                  _mm_max_epi16(abs_diff16(q3, q2), abs_diff16(q2, q1)));
    __m128i near = _mm_max_epi16(abs_diff16(p1, p0), abs_diff16(q1, q0));
    inner = _mm_max_epi16(inner, near);
    mask = _mm_and_si128(mask, _mm_cmplt_epi16(inner, _mm_set1_epi16((short)(it + 1))));
    __m128i hv = _mm_cmpgt_epi16(near, _mm_set1_epi16((short)hev));
    __m128i n_p2 = p2, n_p1 = p1, n_p0, n_q0, n_q1 = q1, n_q2 = q2;
    if (kind == LF_MB) {
        __m128i w = clamp16(a, -128, 127), r = _mm_set1_epi16(63);
        __m128i a1 = _mm_srai_epi16(_mm_add_epi16(_mm_mullo_epi16(w, _mm_set1_epi16(27)), r), 7);
        __m128i a2 = _mm_srai_epi16(_mm_add_epi16(_mm_mullo_epi16(w, _mm_set1_epi16(18)), r), 7);
        __m128i a3 = _mm_srai_epi16(_mm_add_epi16(_mm_mullo_epi16(w, _mm_set1_epi16(9)), r), 7);
        n_p2 = _mm_add_epi16(p2, a3), n_p1 = _mm_add_epi16(p1, a2), n_p0 = _mm_add_epi16(p0, a1);
        n_q0 = _mm_sub_epi16(q0, a1), n_q1 = _mm_sub_epi16(q1, a2), n_q2 = _mm_sub_epi16(q2, a3);
    } else {
        __m128i a1 = clamp16(_mm_srai_epi16(_mm_add_epi16(d3, _mm_set1_epi16(4)), 3), -16, 15);
        __m128i a2 = clamp16(_mm_srai_epi16(_mm_add_epi16(d3, _mm_set1_epi16(3)), 3), -16, 15);
        __m128i a3 = _mm_srai_epi16(_mm_add_epi16(a1, _mm_set1_epi16(1)), 1);
        n_p1 = _mm_add_epi16(p1, a3), n_p0 = _mm_add_epi16(p0, a2);
        n_q0 = _mm_sub_epi16(q0, a1), n_q1 = _mm_sub_epi16(q1, a3);
    }
    /* high variance: filter_common2 (p1, q1, p2, q2 kept) */
    n_p2 = select16(hv, p2, n_p2), n_p1 = select16(hv, p1, n_p1), n_p0 = select16(hv, c_p0, n_p0);
    n_q0 = select16(hv, c_q0, n_q0), n_q1 = select16(hv, q1, n_q1), n_q2 = select16(hv, q2, n_q2);
    x[1] = select16(mask, n_p2, p2), x[2] = select16(mask, n_p1, p1), x[3] = select16(mask, n_p0, p0);
    x[4] = select16(mask, n_q0, q0), x[5] = select16(mask, n_q1, q1), x[6] = select16(mask, n_q2, q2);
}

/* 16 pixels of one edge: t[0..7] the taps as bytes, changed in place (p3 and q3 never change). */
static void filter_taps(__m128i t[8], int thresh, int it, int hev, int kind) {
    __m128i zero = _mm_setzero_si128(), lo[8], hi[8];
    for (int k = 0; k < 8; k++) lo[k] = _mm_unpacklo_epi8(t[k], zero), hi[k] = _mm_unpackhi_epi8(t[k], zero);
    filter_lanes(lo, 2 * thresh + 1, it, hev, kind);
    filter_lanes(hi, 2 * thresh + 1, it, hev, kind);
    for (int k = 1; k < 7; k++) t[k] = _mm_packus_epi16(lo[k], hi[k]);
}

/* 16 rows of 8 bytes (row r at rows[r]) <-> 8 vectors of 16 bytes (vector k: byte k of each row). */
static void transpose_16x8(uint8_t *const rows[16], __m128i t[8]) {
    __m128i a[8], b[8], c[8];
    for (int i = 0; i < 8; i++)
        a[i] = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)rows[2 * i]),
                                 _mm_loadl_epi64((const __m128i *)rows[2 * i + 1]));
    for (int i = 0; i < 4; i++) { /* b[2i]: columns 0-3 of rows 4i..4i+3, b[2i+1]: columns 4-7 */
        b[2 * i] = _mm_unpacklo_epi16(a[2 * i], a[2 * i + 1]);
        b[2 * i + 1] = _mm_unpackhi_epi16(a[2 * i], a[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* c[4h + j]: columns 2j', 2j'+1 of rows 8h..8h+7 */
        c[4 * h + 0] = _mm_unpacklo_epi32(b[4 * h], b[4 * h + 2]);     /* columns 0, 1 */
        c[4 * h + 1] = _mm_unpackhi_epi32(b[4 * h], b[4 * h + 2]);     /* columns 2, 3 */
        c[4 * h + 2] = _mm_unpacklo_epi32(b[4 * h + 1], b[4 * h + 3]); /* columns 4, 5 */
        c[4 * h + 3] = _mm_unpackhi_epi32(b[4 * h + 1], b[4 * h + 3]); /* columns 6, 7 */
    }
    for (int j = 0; j < 4; j++) {
        t[2 * j] = _mm_unpacklo_epi64(c[j], c[4 + j]);
        t[2 * j + 1] = _mm_unpackhi_epi64(c[j], c[4 + j]);
    }
}

static void untranspose_16x8(const __m128i t[8], uint8_t *const rows[16]) {
    __m128i a[8], b[8];
    for (int j = 0; j < 4; j++) { /* a[j]: columns 2j, 2j+1 of rows 0-7, a[4+j]: of rows 8-15 */
        a[j] = _mm_unpacklo_epi8(t[2 * j], t[2 * j + 1]);
        a[4 + j] = _mm_unpackhi_epi8(t[2 * j], t[2 * j + 1]);
    }
    for (int h = 0; h < 2; h++) { /* b[4h + i]: columns 0-3 (i 0, 1) or 4-7 (i 2, 3) of rows 8h + 4 (i & 1).. */
        b[4 * h + 0] = _mm_unpacklo_epi16(a[4 * h], a[4 * h + 1]);     /* columns 0-3, rows 0-3 */
        b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h], a[4 * h + 1]);     /* columns 0-3, rows 4-7 */
        b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 2], a[4 * h + 3]); /* columns 4-7, rows 0-3 */
        b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 2], a[4 * h + 3]); /* columns 4-7, rows 4-7 */
    }
    for (int h = 0; h < 2; h++)
        for (int q = 0; q < 2; q++) {
            __m128i r01 = _mm_unpacklo_epi32(b[4 * h + q], b[4 * h + 2 + q]); /* rows 4q, 4q+1 */
            __m128i r23 = _mm_unpackhi_epi32(b[4 * h + q], b[4 * h + 2 + q]); /* rows 4q+2, 4q+3 */
            int r = 8 * h + 4 * q;
            _mm_storel_epi64((__m128i *)rows[r], r01);
            _mm_storel_epi64((__m128i *)rows[r + 1], _mm_srli_si128(r01, 8));
            _mm_storel_epi64((__m128i *)rows[r + 2], r23);
            _mm_storel_epi64((__m128i *)rows[r + 3], _mm_srli_si128(r23, 8));
        }
}

/* A horizontal edge (between rows) of 16 pixels at p (the q0 row), or of 8 in U at p and 8 in V at p2. */
static void hedge_simd(uint8_t *p, uint8_t *p2, ptrdiff_t s, int thresh, int it, int hev, int kind) {
    __m128i t[8];
    for (int k = 0; k < 8; k++) {
        const uint8_t *r = p + (k - 4) * s;
        t[k] = p2 ? _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)r),
                                       _mm_loadl_epi64((const __m128i *)(p2 + (k - 4) * s)))
                  : _mm_loadu_si128((const __m128i *)r);
    }
    filter_taps(t, thresh, it, hev, kind);
    for (int k = 1; k < 7; k++) {
        uint8_t *r = p + (k - 4) * s;
        if (p2) {
            _mm_storel_epi64((__m128i *)r, t[k]);
            _mm_storel_epi64((__m128i *)(p2 + (k - 4) * s), _mm_srli_si128(t[k], 8));
        } else {
            _mm_storeu_si128((__m128i *)r, t[k]);
        }
    }
}

/* A vertical edge (between columns) of 16 rows at p (the q0 column), or of 8 rows in U at p and 8 in V at p2. */
static void vedge_simd(uint8_t *p, uint8_t *p2, ptrdiff_t s, int thresh, int it, int hev, int kind) {
    uint8_t *rows[16];
    for (int r = 0; r < 16; r++) rows[r] = p2 && r >= 8 ? p2 + (r - 8) * s - 4 : p + r * s - 4;
    __m128i t[8];
    transpose_16x8(rows, t);
    filter_taps(t, thresh, it, hev, kind);
    untranspose_16x8(t, rows);
}

static void filter_mb_simd(const sg_vp8_filter *f, int simple, int left, int top, uint8_t *y, size_t ys,
                           uint8_t *u, uint8_t *v, size_t uvs) {
    int lim = f->limit, il = f->ilevel, hev = f->hev;
    ptrdiff_t s = (ptrdiff_t)ys, cs = (ptrdiff_t)uvs;
    if (lim == 0) return;
    if (simple) {
        if (left) vedge_simd(y, NULL, s, lim + 4, 0, 0, LF_SIMPLE);
        if (f->inner)
            for (int x = 4; x < 16; x += 4) vedge_simd(y + x, NULL, s, lim, 0, 0, LF_SIMPLE);
        if (top) hedge_simd(y, NULL, s, lim + 4, 0, 0, LF_SIMPLE);
        if (f->inner)
            for (int r = 4; r < 16; r += 4) hedge_simd(y + r * s, NULL, s, lim, 0, 0, LF_SIMPLE);
        return;
    }
    if (left) {
        vedge_simd(y, NULL, s, lim + 4, il, hev, LF_MB);
        vedge_simd(u, v, cs, lim + 4, il, hev, LF_MB);
    }
    if (f->inner) {
        for (int x = 4; x < 16; x += 4) vedge_simd(y + x, NULL, s, lim, il, hev, LF_INNER);
        vedge_simd(u + 4, v + 4, cs, lim, il, hev, LF_INNER);
    }
    if (top) {
        hedge_simd(y, NULL, s, lim + 4, il, hev, LF_MB);
        hedge_simd(u, v, cs, lim + 4, il, hev, LF_MB);
    }
    if (f->inner) {
        for (int r = 4; r < 16; r += 4) hedge_simd(y + r * s, NULL, s, lim, il, hev, LF_INNER);
        hedge_simd(u + 4 * cs, v + 4 * cs, cs, lim, il, hev, LF_INNER);
    }
}
#endif

void sg_vp8_filter_mb(const sg_vp8_filter *f, int simple, int left, int top, uint8_t *y, size_t ys, uint8_t *u,
                      uint8_t *v, size_t uvs) {
#if defined(__SSE2__)
    if (!__atomic_load_n(&force_portable, __ATOMIC_RELAXED)) {
        filter_mb_simd(f, simple, left, top, y, ys, u, v, uvs);
        return;
    }
#endif
    filter_mb_portable(f, simple, left, top, y, ys, u, v, uvs);
}

/* --- fancy upsampling and YUV -> RGB ------------------------------------------------------------------------- */
/* libwebp's fixed point: MultHi(v, k) = v * k >> 8, then 6 fractional bits clipped to 0..255 (VP8Clip8). */
static inline uint8_t clip8_fix6(int v) { return (uint8_t)((v & ~16383) == 0 ? v >> 6 : v < 0 ? 0 : 255); }

static inline void yuv_pixel(int y, int u, int v, uint8_t *rgb) {
    int yy = (y * 19077) >> 8;
    rgb[0] = clip8_fix6(yy + ((v * 26149) >> 8) - 14234);
    rgb[1] = clip8_fix6(yy - ((u * 6419) >> 8) - ((v * 13320) >> 8) + 8708);
    rgb[2] = clip8_fix6(yy + ((u * 33050) >> 8) - 17685);
}

/* One output row's chroma, w samples into out[0..w), from the near chroma row n (weight 3) and the far one f
 * (weight 1), as libwebp's UpsampleRgbaLinePair computes either row of a pair. */
static void upsample_row(const uint8_t *n, const uint8_t *f, int w, int *out) {
    out[0] = (3 * n[0] + f[0] + 2) >> 2;
    int pairs = (w - 1) >> 1;
    for (int x = 1; x <= pairs; x++) {
        int sum = n[x - 1] + n[x] + f[x - 1] + f[x] + 8;
        int d_left = (sum + 2 * (n[x] + f[x - 1])) >> 3;  /* toward column x - 1 */
        int d_right = (sum + 2 * (n[x - 1] + f[x])) >> 3; /* toward column x */
        out[2 * x - 1] = (d_left + n[x - 1]) >> 1;
        out[2 * x] = (d_right + n[x]) >> 1;
    }
    if (!(w & 1)) out[w - 1] = (3 * n[pairs] + f[pairs] + 2) >> 2;
}

#if defined(__SSE2__)
/* The same upsampling and conversion with SSE2, bytes equal to the C path's:
 *   - upsampling: 8 pairs of output samples at once, the C formulas in 16-bit lanes (sums below 2,100), packed to
 *     bytes (each result is 0..255);
 *   - conversion: 16 pixels at once; (x * k) >> 8 for a byte x and k < 65536 is mulhi_epu16(x << 8, k); red and
 *     green stay within int16 (-14,234 .. 30,814 and -10,953 .. 27,710), so wrapping adds give their exact
 *     values, and srai 6 then packus is clip8_fix6; blue's y + u term reaches 51,922, so it is added unsigned,
 *     its - 17,685 saturates at 0 (where the C path clips to 0) and srli 6 then packus clips the top;
 *   - the 16 RGB triples are written as eight 8-byte stores of two pixels (6 bytes used, each store's last two
 *     bytes rewritten by the next), so the loop stops 17 pixels before the row's end and C finishes the row. */
static void upsample_row_simd(const uint8_t *n, const uint8_t *f, int w, uint8_t *out) {
    __m128i zero = _mm_setzero_si128(), eight = _mm_set1_epi16(8);
    out[0] = (uint8_t)((3 * n[0] + f[0] + 2) >> 2);
    int pairs = (w - 1) >> 1, x = 1;
    for (; x + 7 <= pairs; x += 8) {
        __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(n + x - 1)), zero); /* n[x - 1] */
        __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(n + x)), zero);     /* n[x] */
        __m128i c = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(f + x - 1)), zero); /* f[x - 1] */
        __m128i d = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(f + x)), zero);     /* f[x] */
        __m128i sum = _mm_add_epi16(_mm_add_epi16(_mm_add_epi16(a, b), _mm_add_epi16(c, d)), eight);
        __m128i bc = _mm_add_epi16(b, c), ad = _mm_add_epi16(a, d);
        __m128i d_left = _mm_srai_epi16(_mm_add_epi16(sum, _mm_add_epi16(bc, bc)), 3);
        __m128i d_right = _mm_srai_epi16(_mm_add_epi16(sum, _mm_add_epi16(ad, ad)), 3);
        __m128i odd = _mm_srai_epi16(_mm_add_epi16(d_left, a), 1);   /* out[2x - 1] */
        __m128i even = _mm_srai_epi16(_mm_add_epi16(d_right, b), 1); /* out[2x] */
        __m128i mixed = _mm_packus_epi16(_mm_unpacklo_epi16(odd, even), _mm_unpackhi_epi16(odd, even));
        _mm_storeu_si128((__m128i *)(out + 2 * x - 1), mixed);
    }
    for (; x <= pairs; x++) {
        int sum = n[x - 1] + n[x] + f[x - 1] + f[x] + 8;
        out[2 * x - 1] = (uint8_t)((((sum + 2 * (n[x] + f[x - 1])) >> 3) + n[x - 1]) >> 1);
        out[2 * x] = (uint8_t)((((sum + 2 * (n[x - 1] + f[x])) >> 3) + n[x]) >> 1);
    }
    if (!(w & 1)) out[w - 1] = (uint8_t)((3 * n[pairs] + f[pairs] + 2) >> 2);
}

static inline __m128i mulhi_byte(__m128i x8, int k) { /* (x * k) >> 8 for 8 bytes (x8 their 16-bit lanes << 8) */
    return _mm_mulhi_epu16(x8, _mm_set1_epi16((short)k));
}

/* R, G, B of 8 pixels: y, u, v are the bytes in the high half of each 16-bit lane (x << 8). */
static inline void yuv8(__m128i y, __m128i u, __m128i v, __m128i *r, __m128i *g, __m128i *b) {
    __m128i yy = mulhi_byte(y, 19077);
    *r = _mm_srai_epi16(_mm_sub_epi16(_mm_add_epi16(yy, mulhi_byte(v, 26149)), _mm_set1_epi16(14234)), 6);
    __m128i gm = _mm_add_epi16(mulhi_byte(u, 6419), mulhi_byte(v, 13320));
    *g = _mm_srai_epi16(_mm_add_epi16(_mm_sub_epi16(yy, gm), _mm_set1_epi16(8708)), 6);
    *b = _mm_srli_epi16(_mm_subs_epu16(_mm_add_epi16(yy, mulhi_byte(u, 33050)), _mm_set1_epi16(17685)), 6);
}

static inline uint64_t low64(__m128i v) {
    uint64_t r;
    _mm_storel_epi64((__m128i *)&r, v);
    return r;
}

static inline void store_two_pixels(uint8_t *o, uint64_t rgb0rgb0) { /* 8 bytes: 6 of two pixels, 2 scratch */
    uint64_t packed = (rgb0rgb0 & 0xFFFFFFull) | ((rgb0rgb0 >> 8) & 0xFFFFFF000000ull);
    memcpy(o, &packed, 8);
}

static void yuv_row_simd(const uint8_t *y, const uint8_t *u, const uint8_t *v, int w, uint8_t *o) {
    __m128i zero = _mm_setzero_si128();
    int x = 0;
    for (; x + 17 <= w; x += 16) {
        __m128i Y = _mm_loadu_si128((const __m128i *)(y + x)), U = _mm_loadu_si128((const __m128i *)(u + x));
        __m128i V = _mm_loadu_si128((const __m128i *)(v + x)), r0, g0, b0, r1, g1, b1;
        yuv8(_mm_unpacklo_epi8(zero, Y), _mm_unpacklo_epi8(zero, U), _mm_unpacklo_epi8(zero, V), &r0, &g0, &b0);
        yuv8(_mm_unpackhi_epi8(zero, Y), _mm_unpackhi_epi8(zero, U), _mm_unpackhi_epi8(zero, V), &r1, &g1, &b1);
        __m128i R = _mm_packus_epi16(r0, r1), G = _mm_packus_epi16(g0, g1), B = _mm_packus_epi16(b0, b1);
        __m128i rg_lo = _mm_unpacklo_epi8(R, G), rg_hi = _mm_unpackhi_epi8(R, G);
        __m128i b_lo = _mm_unpacklo_epi8(B, zero), b_hi = _mm_unpackhi_epi8(B, zero);
        __m128i px[4] = {_mm_unpacklo_epi16(rg_lo, b_lo), _mm_unpackhi_epi16(rg_lo, b_lo),
                         _mm_unpacklo_epi16(rg_hi, b_hi), _mm_unpackhi_epi16(rg_hi, b_hi)};
        uint8_t *q = o + 3 * x;
        for (int k = 0; k < 4; k++) {
            store_two_pixels(q + 12 * k, low64(px[k]));
            store_two_pixels(q + 12 * k + 6, low64(_mm_unpackhi_epi64(px[k], px[k])));
        }
    }
    for (; x < w; x++) yuv_pixel(y[x], u[x], v[x], o + 3 * x);
}

static void yuv_to_rgb_simd(const uint8_t *y, size_t ys, const uint8_t *u, const uint8_t *v, size_t uvs, int w,
                            int h, uint8_t *rgb, size_t stride, uint8_t *tmp) {
    int uv_h = (h + 1) >> 1;
    uint8_t *cu = tmp, *cv = tmp + w;
    for (int r = 0; r < h; r++) {
        int near = r >> 1, far = (r & 1) ? near + 1 : near - 1;
        if (far < 0) far = 0;
        if (far > uv_h - 1) far = uv_h - 1;
        upsample_row_simd(u + (size_t)near * uvs, u + (size_t)far * uvs, w, cu);
        upsample_row_simd(v + (size_t)near * uvs, v + (size_t)far * uvs, w, cv);
        yuv_row_simd(y + (size_t)r * ys, cu, cv, w, rgb + (size_t)r * stride);
    }
}
#endif

void sg_vp8_yuv_to_rgb(const uint8_t *y, size_t ys, const uint8_t *u, const uint8_t *v, size_t uvs, int w, int h,
                       uint8_t *rgb, size_t stride, int *tmp) {
#if defined(__SSE2__)
    if (!__atomic_load_n(&force_portable, __ATOMIC_RELAXED)) { /* tmp's 8 w bytes hold two byte rows */
        yuv_to_rgb_simd(y, ys, u, v, uvs, w, h, rgb, stride, (uint8_t *)tmp);
        return;
    }
#endif
    int uv_h = (h + 1) >> 1;
    int *cu = tmp, *cv = tmp + w;
    for (int r = 0; r < h; r++) {
        /* row r sits between chroma rows r / 2 (near) and the next one up (even r) or down (odd r), clamped */
        int near = r >> 1, far = (r & 1) ? near + 1 : near - 1;
        if (far < 0) far = 0;
        if (far > uv_h - 1) far = uv_h - 1;
        upsample_row(u + (size_t)near * uvs, u + (size_t)far * uvs, w, cu);
        upsample_row(v + (size_t)near * uvs, v + (size_t)far * uvs, w, cv);
        const uint8_t *yr = y + (size_t)r * ys;
        uint8_t *o = rgb + (size_t)r * stride;
        for (int x = 0; x < w; x++) yuv_pixel(yr[x], cu[x], cv[x], o + 3 * x);
    }
}
