/* preprocess/resize.c — Pillow's Image.resize (libImaging/Resample.c, 8-bit path) for RGB, bit-exact and fast.
 *
 * The arithmetic is Pillow's exactly (model-spec.md §5): per axis, filter taps widened by the downscale
 * factor, normalised in double over the in-range taps, rounded to 22-bit fixed point; each pass sums
 * pixel*coeff in int32 from 1<<21 and clips acc>>22 to [0,255]. Horizontal pass first, only over the source
 * rows the vertical pass reads, into an 8-bit intermediate (Pillow 13 runs the vertical pass first for some
 * size pairs: see sg_resize_rgb); a pass whose size does not change is skipped.
 *
 * Speed comes from the loop order and the instructions, not from different maths (integer sums are exact in any
 * order, and the AVX2 kernel's split coefficients rebuild the same int32):
 *  - horizontal: a block of SG_RB source rows is transposed so that each output pixel is
 *    sum_t column[xmin+t][0..47] * k[t]: 48 independent int32 lanes (row r, channel c), no reduction, no branch;
 *  - vertical: each output row is sum_t row[ymin+t][0..3w) * k[t], again lane-parallel.
 * Two sets of kernels, picked per resize at run time (sg_resize_avx2):
 *  - portable (every CPU): plain C that gcc vectorises for the baseline ISA, on columns of SG_COL bytes, int32
 *    products (slow on baseline x86-64, whose SSE2 has no 32-bit multiply; x86-64 CPUs since 2013 have AVX2);
 *  - AVX2 (x86-64 with AVX2, intrinsics): the rows are transposed into blocks of two columns whose bytes are
 *    interleaved, so one vpmaddwd multiplies 16 int16 pixels by two taps' coefficients and adds the pairs. With
 *    each coefficient split as kh*2^11 + kl (both int16), two vpmaddwd do 8 lanes x 2 taps where one vpmulld did
 *    8 lanes x 1 tap (as many multiplies, each one cheaper, and half the widening loads); why it is exact is at
 *    sg_hpass_pairs_avx2. The vertical pass keeps its sums in registers. About 2x the portable set on photo
 *    sizes (docs/perf-notes.md, preprocess/ section 6).
 * The tests run every resize check on both sets (sg_resize_portable_kernels) and compare them byte for byte.
 * Coefficient tables are cached per (in, out, filter): a folder of photos repeats a few sizes.
 * The streaming form (sg_resize_stream_*) takes the source a few rows at a time, as a JPEG decoder produces them,
 * and runs the horizontal pass on each block of rows while it is still in cache, so a decoded image never goes
 * through memory whole (a 4032x3024 photo is 36 MB of RGB): the same kernels on the same rows, so the same bytes.
 */
#include "preprocess/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SG_PRECISION_BITS 22 /* Pillow's PRECISION_BITS: 22 fractional bits, so 255 * 2^22 * (sum |k|) fits int32 */
#define SG_RB 16             /* rows per horizontal block: 16 rows x 3 channels = 48 int32 lanes = 6 AVX2 registers */
#define SG_LANES (SG_RB * 3)
/* portable path: bytes per transposed column: 48 used + 16 slack, so the transpose can store each 3-byte pixel
 * as one 4-byte word (its 4th byte lands in the next row's slot, written later, or in the slack) */
#define SG_COL 64
/* AVX2 path: bytes per block of two source columns 2j, 2j+1 (lane l's two bytes at 2l and 2l+1): 96 used + 32
 * slack, so the transpose can store 6 bytes as 8 (the 2 extra land in the next row's slot or in the slack) */
#define SG_PB 128
/* the AVX2 kernel splits each coefficient k = kh * 2^SG_SPLIT + kl, 0 <= kl < 2^SG_SPLIT, so that kh and kl are
 * both int16 for vpmaddwd (the bound is at sg_coeffs_make) */
#define SG_SPLIT 11
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sg_transpose_block packs pixels into words in little-endian byte order"
#endif

/* The AVX2 kernels: x86-64 with GCC or clang, chosen at run time (sg_resize_avx2) when the CPU has AVX2. */
#if defined(__x86_64__) && defined(__GNUC__)
#define SG_HAVE_AVX2 1
#include <immintrin.h>
#define SG_AVX2 __attribute__((target("avx2")))
#else
#define SG_HAVE_AVX2 0
#endif

/* Coefficients of one axis: for output o, taps bounds[2o] .. bounds[2o]+bounds[2o+1]-1 with k[o*ksize + t].
 * ksplit is the same taps for the AVX2 kernel, by pairs of source columns (2j, 2j+1) from j = bounds[2o]/2: for
 * pair i of output o, ksplit[(o*kpairs + i)*2] holds kh of both columns as two int16 (column 2j in the low half),
 * ksplit[... + 1] their kl; a column outside the taps (the one before an odd first tap, the one after an even
 * last) has k = 0. */
typedef struct sg_coeffs {
    int in, out, filter, ksize, kpairs;
    int *bounds;
    int32_t *k;
    uint32_t *ksplit;
} sg_coeffs;

static double sg_filter_bilinear(double x) {
    if (x < 0.0) x = -x;
    if (x < 1.0) return 1.0 - x;
    return 0.0;
}

/* Keys cubic with a = -0.5, written in Pillow's operation order so the doubles round the same way. */
static double sg_filter_bicubic(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for the box [0, in). Returns NULL when out of memory. */
static sg_coeffs *sg_coeffs_make(int in, int out, int filter) {
    double (*f)(double) = filter == SG_RESAMPLE_BICUBIC ? sg_filter_bicubic : sg_filter_bilinear;
    double support_r = filter == SG_RESAMPLE_BICUBIC ? 2.0 : 1.0; /* filter radius: triangle 1, Keys cubic 2 */
    double scale = (double)((float)in - 0.0f) / out;               /* Pillow computes in1 - in0 in float */
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = support_r * filterscale;
    if (support > (double)(1 << 28)) return NULL; /* keeps ksize in int; no real image gets near it */
    int ksize = (int)ceil(support) * 2 + 1;
    sg_coeffs *c = calloc(1, sizeof *c);
    double *w = malloc(sizeof(double) * (size_t)ksize);
    if (!c || !w) goto fail;
    c->in = in, c->out = out, c->filter = filter, c->ksize = ksize;
    c->bounds = malloc(sizeof(int) * 2 * (size_t)out);
    c->k = calloc((size_t)out * (size_t)ksize, sizeof(int32_t));
    if (!c->bounds || !c->k) goto fail;
    for (int o = 0; o < out; o++) {
        double center = (o + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5); /* C truncation, as Pillow */
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            w[x] = f((x + xmin - center + 0.5) * ss);
            ww += w[x];
        }
        for (int x = 0; x < xmax; x++) {
            double v = ww != 0.0 ? w[x] / ww : w[x];
            /* round half away from zero into 22-bit fixed point, exactly as normalize_coeffs_8bpc */
            c->k[(size_t)o * ksize + x] = v < 0 ? (int32_t)(-0.5 + v * (1 << SG_PRECISION_BITS))
                                                : (int32_t)(0.5 + v * (1 << SG_PRECISION_BITS));
        }
        c->bounds[2 * o] = xmin;
        c->bounds[2 * o + 1] = xmax;
    }
    /* The split for vpmaddwd. kl = k & 2047 is in [0, 2^11); kh = k >> 11 (an arithmetic shift, as sg_clip8's,
     * so kh * 2^11 + kl == k for negative k too) is an int16 while -2^26 <= k < 2^26, i.e. a normalised weight in
     * [-16, 16). Pillow's weights stay far inside: bilinear ones are in [0, 1]; bicubic ones are divided by the
     * sum of the in-range weights, which always holds the tap nearest the centre (weight >= f(0.5) = 0.56) and
     * the filter's whole lobe on one side of it. Measured, both filters, every in and out <= 600 and every
     * in <= 4100 to 40 sizes up to 512: k in [-0.125, 1.125] * 2^22, and sum |k| <= 1.27 * 2^22 per output.
     * Checked here anyway, so that a table the AVX2 kernel would get wrong can never be used. */
    c->kpairs = ksize / 2 + 1; /* pairs per output: ((xmin & 1) + n + 1) / 2 <= (ksize + 2) / 2 */
    c->ksplit = calloc((size_t)out * (size_t)c->kpairs * 2, sizeof(uint32_t));
    if (!c->ksplit) goto fail;
    for (int o = 0; o < out; o++) {
        int xmin = c->bounds[2 * o], n = c->bounds[2 * o + 1], np = ((xmin & 1) + n + 1) >> 1;
        uint32_t *kp = c->ksplit + (size_t)o * c->kpairs * 2;
        for (int i = 0; i < np; i++)
            for (int h = 0; h < 2; h++) {
                int t = 2 * ((xmin >> 1) + i) + h - xmin; /* tap index of column 2(j0+i)+h */
                int32_t k = t >= 0 && t < n ? c->k[(size_t)o * ksize + t] : 0;
                if (k < -(1 << 26) || k >= (1 << 26)) goto fail;
                kp[2 * i] |= (uint32_t)(uint16_t)(k >> SG_SPLIT) << (16 * h);
                kp[2 * i + 1] |= (uint32_t)(k & ((1 << SG_SPLIT) - 1)) << (16 * h);
            }
    }
    free(w);
    return c;
fail:
    free(w);
    if (c) free(c->bounds), free(c->k), free(c->ksplit), free(c);
    return NULL;
}

static void sg_coeffs_free(sg_coeffs *c) {
    if (c) free(c->bounds), free(c->k), free(c->ksplit), free(c);
}

/* A small global cache: entries are immutable once published and live until exit. When it is full, tables
 * are built per call and freed (correct, just slower). */
#define SG_CACHE_N 64 /* distinct (in, out, filter) triples kept: a photo folder has a handful of sizes */
static sg_coeffs *sg_cache[SG_CACHE_N];
static int sg_cache_n;
static pthread_mutex_t sg_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static sg_coeffs *sg_coeffs_get(int in, int out, int filter, int *owned) {
    *owned = 0;
    pthread_mutex_lock(&sg_cache_mu);
    for (int i = 0; i < sg_cache_n; i++) {
        sg_coeffs *c = sg_cache[i];
        if (c->in == in && c->out == out && c->filter == filter) {
            pthread_mutex_unlock(&sg_cache_mu);
            return c;
        }
    }
    pthread_mutex_unlock(&sg_cache_mu);
    sg_coeffs *c = sg_coeffs_make(in, out, filter);
    if (!c) return NULL;
    pthread_mutex_lock(&sg_cache_mu);
    if (sg_cache_n < SG_CACHE_N) sg_cache[sg_cache_n++] = c;
    else *owned = 1;
    pthread_mutex_unlock(&sg_cache_mu);
    return c;
}

static inline uint8_t sg_clip8(int32_t acc) {
    int32_t v = acc >> SG_PRECISION_BITS; /* arithmetic shift, as Pillow's clip8 */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* ---- portable kernels (every CPU; plain C that gcc vectorises for the baseline ISA) ---- */

/* Horizontal pass over one transposed block: cols is sw columns of SG_COL bytes (row r, channel c at
 * lane r*3+c); writes dw output pixels of each of the nrows rows into dst (row stride dw*3). */
static void sg_hpass_block(const uint8_t *cols, const sg_coeffs *c, int nrows, uint8_t *dst, int dw) {
    for (int o = 0; o < dw; o++) {
        const int32_t *k = c->k + (size_t)o * c->ksize;
        const uint8_t *col = cols + (size_t)c->bounds[2 * o] * SG_COL;
        int n = c->bounds[2 * o + 1];
        int32_t acc[SG_LANES];
        for (int l = 0; l < SG_LANES; l++) acc[l] = 1 << (SG_PRECISION_BITS - 1);
        for (int t = 0; t < n; t++, col += SG_COL) {
            int32_t kt = k[t];
            for (int l = 0; l < SG_LANES; l++) acc[l] += (int32_t)col[l] * kt;
        }
        for (int r = 0; r < nrows; r++) {
            uint8_t *d = dst + (size_t)r * dw * 3 + (size_t)o * 3;
            d[0] = sg_clip8(acc[r * 3 + 0]);
            d[1] = sg_clip8(acc[r * 3 + 1]);
            d[2] = sg_clip8(acc[r * 3 + 2]);
        }
    }
}

/* Copies nrows (<= SG_RB) rows of sw RGB pixels into columns of SG_COL bytes (row r, channel c at byte
 * r*3+c); lanes of missing rows are zero. Rows go in increasing r so each 4-byte store's spare byte is
 * overwritten by the next row; the last pixel of a row is copied bytewise (a 4-byte load would read past
 * the end of the image). */
static void sg_transpose_block(const uint8_t *src, size_t stride, int sw, int nrows, uint8_t *cols) {
    enum { TILE = 64 }; /* columns per tile: 64 x 64 bytes stay in L1 while 16 rows are scattered into them */
    if (nrows < SG_RB) memset(cols, 0, (size_t)sw * SG_COL);
    for (int x0 = 0; x0 < sw; x0 += TILE) {
        int x1 = x0 + TILE < sw ? x0 + TILE : sw - 1; /* the image's last pixel is copied bytewise below */
        int r = 0;
        for (; r + 1 < nrows; r += 2) { /* two rows per 8-byte store: 6 bytes used, 2 land in row r+2's slot */
            const uint8_t *s0 = src + (size_t)r * stride + (size_t)x0 * 3, *s1 = s0 + stride;
            uint8_t *d = cols + (size_t)x0 * SG_COL + r * 3;
            for (int x = x0; x < x1; x++, s0 += 3, s1 += 3, d += SG_COL) {
                uint32_t a, b;
                memcpy(&a, s0, 4);
                memcpy(&b, s1, 4);
                uint64_t v = (uint64_t)(a & 0xffffffu) | (uint64_t)b << 24; /* little-endian byte order */
                memcpy(d, &v, 8);
            }
        }
        for (; r < nrows; r++) {
            const uint8_t *s = src + (size_t)r * stride + (size_t)x0 * 3;
            uint8_t *d = cols + (size_t)x0 * SG_COL + r * 3;
            for (int x = x0; x < x1; x++, s += 3, d += SG_COL) {
                uint32_t v;
                memcpy(&v, s, 4);
                memcpy(d, &v, 4);
            }
        }
    }
    for (int r = 0; r < nrows; r++) {
        const uint8_t *s = src + (size_t)r * stride + (size_t)(sw - 1) * 3;
        uint8_t *d = cols + (size_t)(sw - 1) * SG_COL + r * 3;
        d[0] = s[0], d[1] = s[1], d[2] = s[2];
    }
}

/* Vertical pass for one output row: dst[l] = clip(sum_t rows[(ymin+t)*stride + l] * k[t]) for l < n. */
static void sg_vpass_row(const uint8_t *src, size_t stride, const int32_t *k, int ntaps, uint8_t *dst, int n) {
    enum { CHUNK = 768 }; /* lanes per accumulator tile: 3 KB of int32 stays in L1 */
    int32_t acc[CHUNK];
    for (int l0 = 0; l0 < n; l0 += CHUNK) {
        int m = n - l0 < CHUNK ? n - l0 : CHUNK;
        for (int l = 0; l < m; l++) acc[l] = 1 << (SG_PRECISION_BITS - 1);
        for (int t = 0; t < ntaps; t++) {
            const uint8_t *s = src + (size_t)t * stride + l0;
            int32_t kt = k[t];
            for (int l = 0; l < m; l++) acc[l] += (int32_t)s[l] * kt;
        }
        for (int l = 0; l < m; l++) dst[l0 + l] = sg_clip8(acc[l]);
    }
}

/* ---- AVX2 kernels (x86-64 CPUs with AVX2: chosen at run time) ---- */
#if SG_HAVE_AVX2
/* sg_vpass_row's sums, 32 lanes at a time held in 4 registers over all taps (the portable loop keeps 768 in
 * memory): vpmovzxbd widens 8 bytes of a row to int32, vpmulld multiplies them by k[t], the same int32 arithmetic.
 * The lanes past the last multiple of 32 go through sg_vpass_row. */
SG_AVX2 static inline __m256i sg_mul8_avx2(const uint8_t *p, __m256i k) { /* 8 bytes as int32, times k */
    return _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)), k);
}

SG_AVX2 static void sg_vpass_row_avx2(const uint8_t *src, size_t stride, const int32_t *k, int ntaps, uint8_t *dst,
                                      int n) {
    const __m256i half = _mm256_set1_epi32(1 << (SG_PRECISION_BITS - 1));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int l0 = 0;
    for (; l0 + 32 <= n; l0 += 32) {
        __m256i a0 = half, a1 = half, a2 = half, a3 = half;
        const uint8_t *s = src + l0;
        for (int t = 0; t < ntaps; t++, s += stride) {
            __m256i kt = _mm256_set1_epi32(k[t]);
            a0 = _mm256_add_epi32(a0, sg_mul8_avx2(s, kt));
            a1 = _mm256_add_epi32(a1, sg_mul8_avx2(s + 8, kt));
            a2 = _mm256_add_epi32(a2, sg_mul8_avx2(s + 16, kt));
            a3 = _mm256_add_epi32(a3, sg_mul8_avx2(s + 24, kt));
        }
        a0 = _mm256_srai_epi32(a0, SG_PRECISION_BITS), a1 = _mm256_srai_epi32(a1, SG_PRECISION_BITS);
        a2 = _mm256_srai_epi32(a2, SG_PRECISION_BITS), a3 = _mm256_srai_epi32(a3, SG_PRECISION_BITS);
        /* sg_clip8 by saturating packs, as in sg_hpass_pairs_avx2 */
        __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(a0, a1), _mm256_packs_epi32(a2, a3));
        _mm256_storeu_si256((__m256i *)(dst + l0), _mm256_permutevar8x32_epi32(b, order));
    }
    if (l0 < n) sg_vpass_row(src + l0, stride, k, ntaps, dst + l0, n - l0);
}

/* Copies nrows (<= SG_RB) rows of sw RGB pixels into blocks of SG_PB bytes, block j holding columns 2j and 2j+1:
 * lane l = r*3+c (row r, channel c) at bytes 2l (column 2j) and 2l+1 (column 2j+1), i.e. row r's R R' G G' B B'
 * at bytes 6r..6r+5. The missing column of an odd width is zero, and so are the lanes of missing rows (but for
 * the 2 spare bytes below). One 16-byte load and one byte shuffle make the 6 bytes of two blocks; each goes out
 * as an 8-byte store whose 2 spare bytes land in row r+1's slot (written after, rows go in increasing r) or in
 * the slack. */
SG_AVX2 static void sg_transpose_pairs_avx2(const uint8_t *src, size_t stride, int sw, int nrows, uint8_t *blocks) {
    enum { TILE = 32 }; /* blocks per tile: 32 x 128 bytes stay in L1 while 16 rows are scattered into them */
    const __m128i shuf = _mm_setr_epi8(0, 3, 1, 4, 2, 5, -1, -1, 6, 9, 7, 10, 8, 11, -1, -1);
    int npairs = (sw + 1) / 2;
    /* blocks [0, nv) go two at a time while the 16-byte load at byte 6j stays inside the row: 6j + 16 <= 3 sw */
    int nv = 3 * sw >= 16 ? (((3 * sw - 16) / 6) & ~1) + 2 : 0;
    if (nrows < SG_RB) memset(blocks, 0, (size_t)npairs * SG_PB);
    for (int j0 = 0; j0 < nv; j0 += TILE) {
        int j1 = j0 + TILE < nv ? j0 + TILE : nv;
        for (int r = 0; r < nrows; r++) {
            const uint8_t *s = src + (size_t)r * stride + (size_t)j0 * 6;
            uint8_t *d = blocks + (size_t)j0 * SG_PB + r * 6;
            for (int j = j0; j < j1; j += 2, s += 12, d += 2 * SG_PB) {
                __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)s), shuf);
                _mm_storel_epi64((__m128i *)d, v);
                _mm_storeh_pi((__m64 *)(d + SG_PB), _mm_castsi128_ps(v)); /* movhps: no alignment needed */
            }
        }
    }
    for (int r = 0; r < nrows; r++) /* the last blocks of each row, byte by byte */
        for (int j = nv; j < npairs; j++) {
            const uint8_t *s = src + (size_t)r * stride + (size_t)j * 6;
            uint8_t *d = blocks + (size_t)j * SG_PB + r * 6;
            int two = 2 * j + 1 < sw;
            d[0] = s[0], d[2] = s[1], d[4] = s[2];
            d[1] = two ? s[3] : 0, d[3] = two ? s[4] : 0, d[5] = two ? s[5] : 0;
        }
}

/* Copies a block's outputs (lane l of output o at obuf[o*SG_LANES + l]) to nrows rows of dst, dw pixels each,
 * 4 bytes at a time: a store's spare byte lands on the next pixel, or from a row's last pixel on the next row's
 * first, both written after; the last row's last pixel, which nothing follows, goes bytewise. */
static void sg_scatter_block(const uint8_t *obuf, int nrows, uint8_t *dst, int dw) {
    for (int r = 0; r < nrows; r++) {
        const uint8_t *s = obuf + r * 3;
        uint8_t *d = dst + (size_t)r * dw * 3;
        int n4 = r == nrows - 1 ? dw - 1 : dw;
        for (int o = 0; o < n4; o++) memcpy(d + (size_t)o * 3, s + (size_t)o * SG_LANES, 4);
        if (n4 < dw) memcpy(d + (size_t)n4 * 3, s + (size_t)n4 * SG_LANES, 3);
    }
}

/* Horizontal pass over one block of pairs (sg_transpose_pairs_avx2): the sums of sg_hpass_block, by vpmaddwd.
 * vpmulld makes 8 int32 products per instruction; vpmaddwd makes 16 int16 products and adds them in pairs, so
 * one instruction does two taps (columns 2j, 2j+1) of 8 lanes, on 16 bytes of a block widened to int16. Each
 * k = kh * 2^11 + kl (sg_coeffs_make) gives two sums per lane, H = sum p*kh and L = sum p*kl, and
 * acc = H * 2^11 + L + 2^21 = 2^21 + sum p*k. Why that is exact:
 *  - each vpmaddwd is exact: |p*kh| <= 255 * 2^15, so a pair's sum is below 2^24 in magnitude;
 *  - everything after (vpaddd, vpslld) is arithmetic mod 2^32, so acc equals 2^21 + sum p*k mod 2^32, as the
 *    int32 sum of sg_hpass_block (and Pillow) does; that sum is an int32 (|sum p*k| <= 255 * sum |k| < 2^31:
 *    measured sum |k| <= 1.27 * 2^22, and Pillow's own int32 needs it), so the two are the same int32, and
 *    the clipped bytes are the same. H and L may wrap on the way (L does past ~4100 taps); that changes nothing.
 * The 48 lanes go in two halves of 24 (6 sums in registers); each output's 48 bytes go to obuf, and the block
 * is scattered to its rows at the end (sg_scatter_block). */
SG_AVX2 static void sg_hpass_pairs_avx2(const uint8_t *blocks, const sg_coeffs *c, uint8_t *obuf, int nrows,
                                        uint8_t *dst, int dw) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* undoes the 128-bit-lane order of the packs */
    const __m256i half = _mm256_set1_epi32(1 << (SG_PRECISION_BITS - 1));
    for (int o = 0; o < dw; o++) {
        int xmin = c->bounds[2 * o], np = ((xmin & 1) + c->bounds[2 * o + 1] + 1) >> 1;
        const uint32_t *kp = c->ksplit + (size_t)o * c->kpairs * 2;
        __m256i acc[6];
        for (int h = 0; h < 2; h++) {
            const uint8_t *p = blocks + (size_t)(xmin >> 1) * SG_PB + 48 * h;
            __m256i h0 = _mm256_setzero_si256(), h1 = h0, h2 = h0, l0 = half, l1 = half, l2 = half;
#pragma GCC unroll 2
            for (int i = 0; i < np; i++, p += SG_PB) {
                __m256i kh = _mm256_set1_epi32((int32_t)kp[2 * i]);
                __m256i kl = _mm256_set1_epi32((int32_t)kp[2 * i + 1]);
                __m256i v0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
                __m256i v1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p + 16)));
                __m256i v2 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p + 32)));
                h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(v0, kh));
                l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(v0, kl));
                h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(v1, kh));
                l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(v1, kl));
                h2 = _mm256_add_epi32(h2, _mm256_madd_epi16(v2, kh));
                l2 = _mm256_add_epi32(l2, _mm256_madd_epi16(v2, kl));
            }
            acc[3 * h + 0] = _mm256_add_epi32(_mm256_slli_epi32(h0, SG_SPLIT), l0); /* 2^21 + sum p*k */
            acc[3 * h + 1] = _mm256_add_epi32(_mm256_slli_epi32(h1, SG_SPLIT), l1);
            acc[3 * h + 2] = _mm256_add_epi32(_mm256_slli_epi32(h2, SG_SPLIT), l2);
        }
        for (int g = 0; g < 6; g++) acc[g] = _mm256_srai_epi32(acc[g], SG_PRECISION_BITS);
        /* sg_clip8 by saturating packs: acc >> 22 fits int16, so int32 -> int16 keeps it and int16 -> uint8
         * clips to [0, 255]; then vpermd puts the lanes back in order */
        __m256i b0 = _mm256_packus_epi16(_mm256_packs_epi32(acc[0], acc[1]), _mm256_packs_epi32(acc[2], acc[3]));
        __m256i s45 = _mm256_packs_epi32(acc[4], acc[5]);
        __m256i b1 = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(s45, s45), order);
        uint8_t *ob = obuf + (size_t)o * SG_LANES;
        _mm256_storeu_si256((__m256i *)ob, _mm256_permutevar8x32_epi32(b0, order));
        _mm_storeu_si128((__m128i *)(ob + 32), _mm256_castsi256_si128(b1));
    }
    sg_scatter_block(obuf, nrows, dst, dw);
}
#endif

/* ---- the passes, on the kernels chosen at run time ---- */

static int sg_force_portable; /* set by sg_resize_portable_kernels (tests) */

/* 1 when the AVX2 kernels are compiled in, the CPU has AVX2, and no test asked for the portable ones. */
static int sg_resize_avx2(void) {
#if SG_HAVE_AVX2
    return !__atomic_load_n(&sg_force_portable, __ATOMIC_RELAXED) && __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

int sg_resize_portable_kernels(int on) {
    __atomic_store_n(&sg_force_portable, on != 0, __ATOMIC_RELAXED);
#if SG_HAVE_AVX2
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

/* Scratch bytes of one horizontal block for sw -> dw: the transposed rows in either layout (sw columns of SG_COL,
 * or (sw+1)/2 blocks of SG_PB: both at most (sw+1) * 64), then the AVX2 kernel's outputs (dw * SG_LANES). */
static size_t sg_hwork_size(int sw, int dw) { return ((size_t)sw + 1) * SG_COL + (size_t)dw * SG_LANES; }

/* Horizontal pass over nrows (<= SG_RB) rows of sw pixels (row r at src + r*stride) into nrows rows of dst, dw
 * pixels each (row stride dw*3); work holds sg_hwork_size(sw, dw) bytes. */
static void sg_hblock(int avx2, uint8_t *work, const uint8_t *src, size_t stride, int sw, int nrows,
                      const sg_coeffs *ch, uint8_t *dst, int dw) {
#if SG_HAVE_AVX2
    if (avx2) {
        sg_transpose_pairs_avx2(src, stride, sw, nrows, work);
        sg_hpass_pairs_avx2(work, ch, work + ((size_t)sw + 1) * SG_COL, nrows, dst, dw);
        return;
    }
#endif
    (void)avx2;
    sg_transpose_block(src, stride, sw, nrows, work);
    sg_hpass_block(work, ch, nrows, dst, dw);
}

/* Horizontal pass over rows [y0, y1) of src (sw wide) into dst (dw wide, y1-y0 rows). 0, or -1 (memory). */
static int sg_hpass(int avx2, const uint8_t *src, int sw, int y0, int y1, const sg_coeffs *ch, uint8_t *dst, int dw) {
    uint8_t *work = malloc(sg_hwork_size(sw, dw));
    if (!work) return -1;
    for (int y = y0; y < y1; y += SG_RB) {
        int nr = y1 - y < SG_RB ? y1 - y : SG_RB;
        sg_hblock(avx2, work, src + (size_t)y * sw * 3, (size_t)sw * 3, sw, nr, ch, dst + (size_t)(y - y0) * dw * 3,
                  dw);
    }
    free(work);
    return 0;
}

/* Vertical pass: src holds the source rows from row `first` on (w wide); writes dh rows of dst. */
static void sg_vpass(int avx2, const uint8_t *src, int first, int w, const sg_coeffs *cv, uint8_t *dst, int dh) {
    void (*row)(const uint8_t *, size_t, const int32_t *, int, uint8_t *, int) = sg_vpass_row;
#if SG_HAVE_AVX2
    if (avx2) row = sg_vpass_row_avx2;
#endif
    (void)avx2;
    for (int o = 0; o < dh; o++)
        row(src + (size_t)(cv->bounds[2 * o] - first) * w * 3, (size_t)w * 3, cv->k + (size_t)o * cv->ksize,
            cv->bounds[2 * o + 1], dst + (size_t)o * w * 3, w * 3);
}

/* ---- streaming: rows in as a decoder produces them, the horizontal pass done while they are in cache ---- */

typedef enum { SG_STREAM_COPY, SG_STREAM_H, SG_STREAM_V, SG_STREAM_HV } sg_stream_mode;

struct sg_resize_stream {
    sg_stream_mode mode;
    int sw, sh, dw, dh;
    int y0, y1;          /* the source rows the output depends on (the vertical pass's window) */
    sg_coeffs *ch, *cv;
    int own_h, own_v;
    int avx2;            /* the kernels, chosen once per stream (sg_resize_avx2) */
    uint8_t *work;       /* one transposed block of SG_RB rows and its outputs (horizontal pass, sg_hwork_size) */
    uint8_t *tmp;        /* rows [y0, y1) after the horizontal pass (or as given, SG_STREAM_V), dw wide */
    uint8_t *dst;
};

sg_resize_stream *sg_resize_stream_begin(int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter,
                                         int pillow_major) {
    if (!dst || sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0) return NULL;
    if (filter != SG_RESAMPLE_BILINEAR && filter != SG_RESAMPLE_BICUBIC) return NULL;
    int need_h = sw != dw, need_v = sh != dh;
    /* the pass order rule of sg_resize_rgb_pillow: a vertical-first resize needs every row first */
    if (need_h && need_v && (pillow_major == 0 || pillow_major >= 13) && sh > dh && 2 * ((long)sw - dw) < (long)sh - dh)
        return NULL;
    sg_resize_stream *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->avx2 = sg_resize_avx2();
    r->mode = need_h && need_v ? SG_STREAM_HV : need_h ? SG_STREAM_H : need_v ? SG_STREAM_V : SG_STREAM_COPY;
    r->sw = sw, r->sh = sh, r->dw = dw, r->dh = dh, r->dst = dst;
    r->y0 = 0, r->y1 = sh;
    if (need_h && !(r->ch = sg_coeffs_get(sw, dw, filter, &r->own_h))) goto fail;
    if (need_v) {
        if (!(r->cv = sg_coeffs_get(sh, dh, filter, &r->own_v))) goto fail;
        r->y0 = r->cv->bounds[0];
        r->y1 = r->cv->bounds[2 * dh - 2] + r->cv->bounds[2 * dh - 1];
        /* rows [y0, y1) at the pass's input width: dw after a horizontal pass, else sw (== dw) */
        if (!(r->tmp = malloc((size_t)(r->y1 - r->y0) * dw * 3))) goto fail;
    }
    if (need_h && !(r->work = malloc(sg_hwork_size(sw, dw)))) goto fail;
    return r;
fail:
    sg_resize_stream_free(r);
    return NULL;
}

int sg_resize_stream_rows(sg_resize_stream *r, const uint8_t *rows, size_t stride, int y, int n) {
    if (n <= 0 || n > SG_RB || y < 0 || y + n > r->sh) return -1;
    int a = y > r->y0 ? y : r->y0, b = y + n < r->y1 ? y + n : r->y1; /* the rows of [y, y+n) that are used */
    if (a >= b) return 0;
    const uint8_t *src = rows + (size_t)(a - y) * stride;
    size_t row_out = (size_t)r->dw * 3;
    uint8_t *to = r->mode == SG_STREAM_HV || r->mode == SG_STREAM_V ? r->tmp + (size_t)(a - r->y0) * row_out
                                                                    : r->dst + (size_t)a * row_out;
    if (r->mode == SG_STREAM_H || r->mode == SG_STREAM_HV) {
        sg_hblock(r->avx2, r->work, src, stride, r->sw, b - a, r->ch, to, r->dw);
    } else {
        for (int k = 0; k < b - a; k++) memcpy(to + k * row_out, src + k * stride, row_out);
    }
    return 0;
}

int sg_resize_stream_end(sg_resize_stream *r) {
    if (r->mode == SG_STREAM_HV || r->mode == SG_STREAM_V)
        sg_vpass(r->avx2, r->tmp, r->y0, r->dw, r->cv, r->dst, r->dh);
    return 0;
}

void sg_resize_stream_free(sg_resize_stream *r) {
    if (!r) return;
    if (r->own_h) sg_coeffs_free(r->ch);
    if (r->own_v) sg_coeffs_free(r->cv);
    free(r->work);
    free(r->tmp);
    free(r);
}

int sg_resize_rgb(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter) {
    return sg_resize_rgb_pillow(src, sw, sh, dst, dw, dh, filter, 0);
}

int sg_resize_rgb_pillow(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter,
                         int pillow_major) {
    if (!src || !dst || sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0) return -1;
    if (filter != SG_RESAMPLE_BILINEAR && filter != SG_RESAMPLE_BICUBIC) return -1;
    if (sw == dw && sh == dh) { /* Pillow returns a copy, unfiltered */
        memcpy(dst, src, (size_t)sw * sh * 3);
        return 0;
    }
    int need_h = sw != dw, need_v = sh != dh, own_h = 0, own_v = 0, rc = -1, avx2 = sg_resize_avx2();
    sg_coeffs *ch = need_h ? sg_coeffs_get(sw, dw, filter, &own_h) : NULL;
    sg_coeffs *cv = need_v ? sg_coeffs_get(sh, dh, filter, &own_v) : NULL;
    uint8_t *tmp = NULL;
    if ((need_h && !ch) || (need_v && !cv)) goto done;
    if (!need_v) {
        rc = sg_hpass(avx2, src, sw, 0, sh, ch, dst, dw);
        goto done;
    }
    if (!need_h) {
        sg_vpass(avx2, src, 0, sw, cv, dst, dh);
        rc = 0;
        goto done;
    }
    /* Pillow 13 picks the pass order; measured against it on 2,900 random size pairs (both filters), it runs
     * the vertical pass first exactly when the height shrinks and 2*(sw-dw) < (sh-dh). Pillow <= 12 always
     * runs the horizontal pass first. The 8-bit intermediate makes the order visible in the output (up to
     * a few LSB), so we follow the version asked for. */
    int v_first = (pillow_major == 0 || pillow_major >= 13) && sh > dh && 2 * ((long)sw - dw) < (long)sh - dh;
    if (v_first) {
        tmp = malloc((size_t)sw * dh * 3);
        if (!tmp) goto done;
        sg_vpass(avx2, src, 0, sw, cv, tmp, dh);
        rc = sg_hpass(avx2, tmp, sw, 0, dh, ch, dst, dw);
    } else {
        /* horizontal first, only over the source rows [y0, y1) that the vertical pass reads */
        int y0 = cv->bounds[0], y1 = cv->bounds[2 * dh - 2] + cv->bounds[2 * dh - 1];
        tmp = malloc((size_t)(y1 - y0) * dw * 3);
        if (!tmp) goto done;
        rc = sg_hpass(avx2, src, sw, y0, y1, ch, tmp, dw);
        if (rc == 0) sg_vpass(avx2, tmp, y0, dw, cv, dst, dh);
    }
done:
    free(tmp);
    if (own_h) sg_coeffs_free(ch);
    if (own_v) sg_coeffs_free(cv);
    return rc;
}
