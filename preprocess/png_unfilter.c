/* preprocess/png_unfilter.c — undoes PNG's five row filters (None, Sub, Up, Average, Paeth) on 8-bit samples.
 *
 * A filtered row holds, for each byte x, x - predictor, where the predictor looks at a (the byte one pixel to the
 * left), b (the byte above) and c (the byte above a); bytes left of the row and the row above the first are 0.
 * This is the arithmetic of the PNG specification, of Pillow's ZipDecode.c and of stb_image, which decoded every PNG
 * before session 35. Rows of whole pixels of bpp bytes (1..8; rows of 1/2/4-bit samples unfilter with bpp 1).
 *
 * Sub, Average and Paeth carry a dependency from each pixel to the next, so the x86-64 kernels (SSE2, the
 * architecture's baseline, no run-time choice) hold one pixel's bytes in the 16-bit lanes of a register and walk the
 * row pixel by pixel: Paeth's three distances and its choice for 3 or 4 bytes at once, without branches. Up has no
 * such dependency and goes 16 bytes at a time. The plain C below is what other CPUs run and the reference the tests
 * compare the SSE2 kernels with (sg_png_unfilter_c).
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline uint8_t sg_paeth(int a, int b, int c) {
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

int sg_png_unfilter_c(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int bpp, int filter) {
    size_t k;
    switch (filter) {
    case 0:
        memcpy(dst, src, n);
        return 0;
    case 1:
        for (k = 0; k < (size_t)bpp && k < n; k++) dst[k] = src[k];
        for (; k < n; k++) dst[k] = (uint8_t)(src[k] + dst[k - bpp]);
        return 0;
    case 2:
        for (k = 0; k < n; k++) dst[k] = (uint8_t)(src[k] + (up ? up[k] : 0));
        return 0;
    case 3:
        for (k = 0; k < (size_t)bpp && k < n; k++) dst[k] = (uint8_t)(src[k] + ((up ? up[k] : 0) >> 1));
        for (; k < n; k++) dst[k] = (uint8_t)(src[k] + (((up ? up[k] : 0) + dst[k - bpp]) >> 1));
        return 0;
    case 4:
        for (k = 0; k < (size_t)bpp && k < n; k++) dst[k] = (uint8_t)(src[k] + (up ? up[k] : 0));
        for (; k < n; k++)
            dst[k] = (uint8_t)(src[k] + (up ? sg_paeth(dst[k - bpp], up[k], up[k - bpp]) : dst[k - bpp]));
        return 0;
    }
    return -1;
}

#if defined(__SSE2__)
/* One pixel widened to 16-bit lanes. sg_px_load4 / sg_px_store4 move 4 bytes (a 3-byte pixel's load takes one byte
 * past it, its store writes one: callers use them where that byte is inside the row); sg_px_load3 / sg_px_store3
 * stay inside the pixel, for a row's last one. */
static inline __m128i sg_px_load4(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)v), _mm_setzero_si128());
}
static inline __m128i sg_px_load3(const uint8_t *p) {
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)v), _mm_setzero_si128());
}
static inline void sg_px_store4(uint8_t *p, __m128i x) {
    uint32_t v = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(x, x));
    memcpy(p, &v, 4);
}
static inline void sg_px_store3(uint8_t *p, __m128i x) {
    uint32_t v = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(x, x));
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
}
static inline __m128i sg_abs16(__m128i x) { return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x)); }

/* The next pixel's value from its filtered bytes x, its left neighbour a, the byte above b and above-left c
 * (16-bit lanes), for filter 1 (Sub), 3 (Average) or 4 (Paeth). */
static inline __m128i sg_px_unfilter(__m128i x, __m128i a, __m128i b, __m128i c, int filter) {
    __m128i pred;
    if (filter == 1) {
        pred = a;
    } else if (filter == 3) {
        pred = _mm_srli_epi16(_mm_add_epi16(a, b), 1);
    } else {
        __m128i pa_ = _mm_sub_epi16(b, c), pb_ = _mm_sub_epi16(a, c);
        __m128i pa = sg_abs16(pa_), pb = sg_abs16(pb_), pc = sg_abs16(_mm_add_epi16(pa_, pb_));
        __m128i lo = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
        /* a where pa is the least, else b where pb is, else c: the specification's order of ties */
        __m128i is_a = _mm_cmpeq_epi16(pa, lo), is_b = _mm_andnot_si128(is_a, _mm_cmpeq_epi16(pb, lo));
        pred = _mm_or_si128(_mm_and_si128(is_a, a),
                            _mm_or_si128(_mm_and_si128(is_b, b), _mm_andnot_si128(_mm_or_si128(is_a, is_b), c)));
    }
    return _mm_and_si128(_mm_add_epi16(x, pred), _mm_set1_epi16(0xff));
}

/* Sub, Average and Paeth along a row of 3- or 4-byte pixels (bpp and filter are constants where this is inlined;
 * up is read only for Average and Paeth). */
static inline void sg_unfilter_px(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int bpp, int filter) {
    __m128i a = _mm_setzero_si128(), b = a, c = a;
    size_t k = 0, last = n - (size_t)bpp;
    for (; k < last; k += (size_t)bpp) {
        if (filter != 1) b = sg_px_load4(up + k);
        a = sg_px_unfilter(sg_px_load4(src + k), a, b, c, filter);
        sg_px_store4(dst + k, a);
        c = b;
    }
    if (bpp == 4) {
        if (filter != 1) b = sg_px_load4(up + k);
        sg_px_store4(dst + k, sg_px_unfilter(sg_px_load4(src + k), a, b, c, filter));
    } else {
        if (filter != 1) b = sg_px_load3(up + k);
        sg_px_store3(dst + k, sg_px_unfilter(sg_px_load3(src + k), a, b, c, filter));
    }
}

/* One filter's row, so that the filter is a constant in each copy of the loop. */
static void sg_unfilter_row3(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int filter) {
    if (filter == 1) sg_unfilter_px(dst, up, src, n, 3, 1);
    else if (filter == 3) sg_unfilter_px(dst, up, src, n, 3, 3);
    else sg_unfilter_px(dst, up, src, n, 3, 4);
}
static void sg_unfilter_row4(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int filter) {
    if (filter == 1) sg_unfilter_px(dst, up, src, n, 4, 1);
    else if (filter == 3) sg_unfilter_px(dst, up, src, n, 4, 3);
    else sg_unfilter_px(dst, up, src, n, 4, 4);
}
#endif

int sg_png_unfilter(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int bpp, int filter) {
#if defined(__SSE2__)
    if (filter == 2 && up) {
        size_t k = 0;
        for (; k + 16 <= n; k += 16)
            _mm_storeu_si128((__m128i *)(dst + k), _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + k)),
                                                                 _mm_loadu_si128((const __m128i *)(up + k))));
        for (; k < n; k++) dst[k] = (uint8_t)(src[k] + up[k]);
        return 0;
    }
    if ((bpp == 3 || bpp == 4) && n && n % (size_t)bpp == 0 && (filter == 1 || (up && (filter == 3 || filter == 4)))) {
        if (bpp == 3) sg_unfilter_row3(dst, up, src, n, filter);
        else sg_unfilter_row4(dst, up, src, n, filter);
        return 0;
    }
#endif
    return sg_png_unfilter_c(dst, up, src, n, bpp, filter);
}
