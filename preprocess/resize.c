/* preprocess/resize.c — Pillow's Image.resize (libImaging/Resample.c, 8-bit path) for RGB, bit-exact and fast.
 *
 * The arithmetic is Pillow's exactly (model-spec.md §5): per axis, filter taps widened by the downscale
 * factor, normalised in double over the in-range taps, rounded to 22-bit fixed point; each pass sums
 * pixel*coeff in int32 from 1<<21 and clips acc>>22 to [0,255]. Horizontal pass first, only over the source
 * rows the vertical pass reads, into an 8-bit intermediate (Pillow 13 runs the vertical pass first for some
 * size pairs: see sg_resize_rgb); a pass whose size does not change is skipped.
 *
 * Speed comes from the loop order, not from different maths (integer sums are exact in any order):
 *  - horizontal: a block of SG_RB source rows is transposed into columns of SG_COL bytes, so each output
 *    pixel is sum_t column[xmin+t][0..47] * k[t]: 48 independent int32 lanes, no reduction, no branch;
 *  - vertical: each output row is sum_t row[ymin+t][0..3w) * k[t], again lane-parallel.
 * Both kernels are plain C loops over constant-width lanes that gcc vectorises; on x86-64 an AVX2 clone is
 * picked at run time (target_clones), since baseline SSE2 has no 32-bit multiply (pmulld).
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
/* bytes per transposed column: 48 used + 16 slack, so the transpose can store each 3-byte pixel as one
 * 4-byte word (its 4th byte lands in the next row's slot, written later, or in the slack) */
#define SG_COL 64
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sg_transpose_block packs pixels into words in little-endian byte order"
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SG_CLONES
#endif

/* Coefficients of one axis: for output o, taps bounds[2o] .. bounds[2o]+bounds[2o+1]-1 with k[o*ksize + t]. */
typedef struct sg_coeffs {
    int in, out, filter, ksize;
    int *bounds;
    int32_t *k;
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
    free(w);
    return c;
fail:
    free(w);
    if (c) free(c->bounds), free(c->k), free(c);
    return NULL;
}

static void sg_coeffs_free(sg_coeffs *c) {
    if (c) free(c->bounds), free(c->k), free(c);
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

/* Horizontal pass over one transposed block: cols is sw columns of SG_LANES bytes (row r, channel c at
 * lane r*3+c); writes dw output pixels of each of the nrows rows into dst (row stride dw*3). */
SG_CLONES
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
SG_CLONES
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

/* Horizontal pass over rows [y0, y1) of src (sw wide) into dst (dw wide, y1-y0 rows). 0, or -1 (memory). */
static int sg_hpass(const uint8_t *src, int sw, int y0, int y1, const sg_coeffs *ch, uint8_t *dst, int dw) {
    uint8_t *cols = malloc((size_t)sw * SG_COL);
    if (!cols) return -1;
    for (int y = y0; y < y1; y += SG_RB) {
        int nr = y1 - y < SG_RB ? y1 - y : SG_RB;
        sg_transpose_block(src + (size_t)y * sw * 3, (size_t)sw * 3, sw, nr, cols);
        sg_hpass_block(cols, ch, nr, dst + (size_t)(y - y0) * dw * 3, dw);
    }
    free(cols);
    return 0;
}

/* Vertical pass: src holds the source rows from row `first` on (w wide); writes dh rows of dst. */
static void sg_vpass(const uint8_t *src, int first, int w, const sg_coeffs *cv, uint8_t *dst, int dh) {
    for (int o = 0; o < dh; o++)
        sg_vpass_row(src + (size_t)(cv->bounds[2 * o] - first) * w * 3, (size_t)w * 3, cv->k + (size_t)o * cv->ksize,
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
    uint8_t *cols;       /* one transposed block of SG_RB rows (horizontal pass) */
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
    if (need_h && !(r->cols = malloc((size_t)sw * SG_COL))) goto fail;
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
        sg_transpose_block(src, stride, r->sw, b - a, r->cols);
        sg_hpass_block(r->cols, r->ch, b - a, to, r->dw);
    } else {
        for (int k = 0; k < b - a; k++) memcpy(to + k * row_out, src + k * stride, row_out);
    }
    return 0;
}

int sg_resize_stream_end(sg_resize_stream *r) {
    if (r->mode == SG_STREAM_HV || r->mode == SG_STREAM_V) sg_vpass(r->tmp, r->y0, r->dw, r->cv, r->dst, r->dh);
    return 0;
}

void sg_resize_stream_free(sg_resize_stream *r) {
    if (!r) return;
    if (r->own_h) sg_coeffs_free(r->ch);
    if (r->own_v) sg_coeffs_free(r->cv);
    free(r->cols);
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
    int need_h = sw != dw, need_v = sh != dh, own_h = 0, own_v = 0, rc = -1;
    sg_coeffs *ch = need_h ? sg_coeffs_get(sw, dw, filter, &own_h) : NULL;
    sg_coeffs *cv = need_v ? sg_coeffs_get(sh, dh, filter, &own_v) : NULL;
    uint8_t *tmp = NULL;
    if ((need_h && !ch) || (need_v && !cv)) goto done;
    if (!need_v) {
        rc = sg_hpass(src, sw, 0, sh, ch, dst, dw);
        goto done;
    }
    if (!need_h) {
        sg_vpass(src, 0, sw, cv, dst, dh);
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
        sg_vpass(src, 0, sw, cv, tmp, dh);
        rc = sg_hpass(tmp, sw, 0, dh, ch, dst, dw);
    } else {
        /* horizontal first, only over the source rows [y0, y1) that the vertical pass reads */
        int y0 = cv->bounds[0], y1 = cv->bounds[2 * dh - 2] + cv->bounds[2 * dh - 1];
        tmp = malloc((size_t)(y1 - y0) * dw * 3);
        if (!tmp) goto done;
        rc = sg_hpass(src, sw, y0, y1, ch, tmp, dw);
        if (rc == 0) sg_vpass(tmp, y0, dw, cv, dst, dh);
    }
done:
    free(tmp);
    if (own_h) sg_coeffs_free(ch);
    if (own_v) sg_coeffs_free(cv);
    return rc;
}
