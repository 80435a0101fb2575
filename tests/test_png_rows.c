/* tests/test_png_rows.c — PNG image data decoded as Pillow decodes it (decode_png.c, inflate.c, png_unfilter.c).
 *
 * Since session 35 our own code decodes PNG pixels (stb_image had). The Pillow goldens (test_preprocess) cover real
 * files of every mode, and scripts/png_differential.py compares random and damaged files with Pillow itself.
 * This test needs no Pillow:
 *  1. the SSE2 unfilter kernels against the plain C ones: bpp 1..8, the five filters, a first row (no row above)
 *     and others, rows of 1..67 pixels, nothing written past a row (guard bytes);
 *  2. seeded random PNGs of every colour type and bit depth, interlaced or not, each row's filter type drawn at
 *     random and applied as an encoder does, the zlib stream in stored and fixed-Huffman blocks, in one IDAT or
 *     many: decoded, they must give the pixels convert("RGB") gives, computed here from the samples drawn (not
 *     from the file's bytes);
 *  3. damage, each with Pillow's verdict (ZipDecode.c fed by ImageFile.load): a wrong Adler-32 refuses the image
 *     when its bytes come in the block of the last row, not when they come in a later IDAT; a bad block header
 *     after the rows likewise; a filter type above 4 refuses; a stream that ends after whole rows ends the image
 *     there (the rest 0: black, or palette entry 0), unless its Adler-32 comes in a later IDAT; one that ends
 *     inside a row, or a file cut in the data, is truncated; bytes past the last row are never read, nor what
 *     follows the last row past a 64 KiB read (Pillow's block) of one IDAT;
 *  4. Pillow's palette and tRNS rules: PLTE's whole entries only, none without PLTE (black), the second of two
 *     PLTEs, more than 256 colours refused; tRNS of any size, or in an image with alpha, changes nothing.
 * A failure prints the case's number and seed, so it can be rerun alone.
 */
#include "preprocess/internal.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) { return (uint32_t)(sg_test_splitmix64(&rng_state) % n); }

/* ---- 1. kernels ---------------------------------------------------------------------------------- */
static void check_kernels(void) {
    enum { MAXN = 67 * 8, GUARD = 16 };
    uint8_t src[MAXN], up[MAXN], a[MAXN + GUARD], b[MAXN + GUARD];
    int bad = 0, runs = 0;
    for (int it = 0; it < 20000; it++) {
        int bpp = 1 + (int)rnd(8), filter = (int)rnd(5), first = rnd(4) == 0;
        size_t n = (size_t)bpp * (1 + rnd(67));
        for (size_t k = 0; k < n; k++) src[k] = (uint8_t)rnd(256), up[k] = (uint8_t)rnd(256);
        memset(a, 0xA5, sizeof a), memset(b, 0xA5, sizeof b);
        int ra = sg_png_unfilter(a, first ? NULL : up, src, n, bpp, filter);
        int rb = sg_png_unfilter_c(b, first ? NULL : up, src, n, bpp, filter);
        runs++;
        if (ra || rb || memcmp(a, b, sizeof a)) {
            if (bad++ < 5) printf("  kernels differ: it %d bpp %d filter %d n %zu first %d\n", it, bpp, filter, n, first);
        }
    }
    CHECK(bad == 0, "SSE2 and plain C unfilter agree on %d random rows, and write nothing past a row (%d differ)", runs, bad);
    CHECK(sg_png_unfilter(a, up, src, 3, 3, 5) == -1 && sg_png_unfilter_c(a, up, src, 3, 3, 255) == -1,
          "a filter type above 4 is refused");
}

/* ---- 2. whole files ------------------------------------------------------------------------------ */
typedef struct { uint8_t *p; size_t n, cap; } buf;
static void put(buf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) exit(2);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void put8(buf *b, unsigned v) { uint8_t c = (uint8_t)v; put(b, &c, 1); }
static void put32(buf *b, uint32_t v) {
    uint8_t c[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, c, 4);
}

static uint32_t crc32_png(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}
static void chunk(buf *b, const char *type, const uint8_t *s, size_t n) {
    put32(b, (uint32_t)n);
    size_t at = b->n;
    put(b, type, 4);
    if (n) put(b, s, n);
    put32(b, crc32_png(b->p + at, n + 4));
}

/* Deflate bits, least significant first. */
typedef struct { buf *b; uint32_t acc; int nb; } bits;
static void bput(bits *w, uint32_t v, int n) {
    w->acc |= v << w->nb, w->nb += n;
    while (w->nb >= 8) put8(w->b, w->acc & 0xff), w->acc >>= 8, w->nb -= 8;
}
static void bput_rev(bits *w, uint32_t code, int n) { /* a Huffman code, most significant bit first */
    for (int i = n - 1; i >= 0; i--) bput(w, (code >> i) & 1, 1);
}
static void bflush(bits *w) { if (w->nb) put8(w->b, w->acc & 0xff), w->acc = 0, w->nb = 0; }

/* A zlib stream of raw[0..n): blocks of random size, stored or fixed-Huffman literals (the last one final unless
 * open is set, for a bad block to follow), then the Adler-32 (wrong if bad_adler) unless open. */
static void zlib_stream(buf *z, const uint8_t *raw, size_t n, int bad_adler, int open) {
    put8(z, 0x78), put8(z, 0x01);
    bits w = {z, 0, 0};
    size_t at = 0;
    do {
        size_t m = 1 + rnd(4000);
        if (m > n - at) m = n - at;
        int last = at + m == n && !open;
        if (rnd(2)) { /* stored */
            bput(&w, last, 1), bput(&w, 0, 2), bflush(&w);
            put8(z, m & 0xff), put8(z, (m >> 8) & 0xff), put8(z, ~m & 0xff), put8(z, (~m >> 8) & 0xff);
            put(z, raw + at, m);
        } else { /* fixed Huffman, literals only */
            bput(&w, last, 1), bput(&w, 1, 2);
            for (size_t i = 0; i < m; i++) {
                unsigned v = raw[at + i];
                if (v < 144) bput_rev(&w, 0x30 + v, 8);
                else bput_rev(&w, 0x190 + v - 144, 9);
            }
            bput_rev(&w, 0, 7); /* end of block */
        }
        at += m;
    } while (at < n);
    if (open) { /* a block of type 3, which zlib refuses */
        bput(&w, 1, 1), bput(&w, 3, 2), bflush(&w);
        return;
    }
    bflush(&w);
    uint32_t s1 = 1, s2 = 0;
    for (size_t i = 0; i < n; i++) s1 = (s1 + raw[i]) % 65521, s2 = (s2 + s1) % 65521;
    put32(z, ((s2 << 16) | s1) ^ (bad_adler ? 0x1234u : 0));
}

/* One random image: its samples, the PNG made of them, and the RGB Pillow gives. */
typedef struct {
    int w, h, ctype, depth, interlace, npal;
    uint16_t *smp; /* w * h * channels samples */
    uint8_t pal[768];
    uint8_t *rgb; /* expected */
} image;
static int chans(int ctype) { return ctype == 0 ? 1 : ctype == 2 ? 3 : ctype == 3 ? 1 : ctype == 4 ? 2 : 4; }

static image make_image(void) {
    static const int kinds[][2] = {{0, 8}, {2, 8}, {4, 8}, {6, 8}, {0, 8}, {2, 8}, {4, 8}, {6, 8}, {0, 1}, {0, 2},
                                   {0, 4}, {0, 16}, {2, 16}, {4, 16}, {6, 16}, {3, 8}, {3, 4}, {3, 2}, {3, 1}};
    image im = {0};
    int k = (int)rnd(sizeof kinds / sizeof kinds[0]);
    im.ctype = kinds[k][0], im.depth = kinds[k][1], im.interlace = rnd(5) == 0;
    im.w = 1 + (int)rnd(rnd(4) ? 40 : 300), im.h = 1 + (int)rnd(rnd(4) ? 12 : 60);
    int c = chans(im.ctype), smooth = rnd(2);
    uint32_t top = (1u << im.depth) - 1;
    im.npal = 1 + (int)rnd(256);
    for (int i = 0; i < 3 * im.npal; i++) im.pal[i] = (uint8_t)rnd(256);
    size_t np = (size_t)im.w * im.h;
    im.smp = malloc(np * c * sizeof *im.smp), im.rgb = malloc(np * 3);
    if (!im.smp || !im.rgb) exit(2);
    uint32_t v = rnd(top + 1);
    for (size_t i = 0; i < np * c; i++) {
        v = smooth ? (v + top + 1 + rnd(7) - 3) % (top + 1) : rnd(top + 1);
        if (im.depth == 16 && rnd(3) == 0) v = rnd(300); /* grey I;16 values around the clip */
        im.smp[i] = (uint16_t)(im.ctype == 3 && v >= (uint32_t)im.npal && rnd(4) ? v % im.npal : v);
    }
    for (size_t i = 0; i < np; i++) { /* convert("RGB") from the samples */
        const uint16_t *s = im.smp + i * c;
        uint8_t *o = im.rgb + 3 * i;
        if (im.ctype == 3) {
            for (int j = 0; j < 3; j++) o[j] = s[0] < im.npal ? im.pal[3 * s[0] + j] : 0;
        } else if (im.ctype == 0 || im.ctype == 4) {
            uint32_t g = im.depth == 16 ? (im.ctype == 0 ? (s[0] > 255 ? 255 : s[0]) : s[0] >> 8) : s[0] * 255u / top;
            o[0] = o[1] = o[2] = (uint8_t)g;
        } else {
            for (int j = 0; j < 3; j++) o[j] = (uint8_t)(im.depth == 16 ? s[j] >> 8 : s[j]);
        }
    }
    return im;
}

/* The image data: each pass's rows, packed at the image's depth and filtered as an encoder filters them
 * (a random type a row). *rows_end gets each row's end offset (at most max rows). */
static buf image_data(const image *im, size_t *row_end, int max, int *nrows) {
    static const int a7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
    int c = chans(im->ctype), bits = c * im->depth, bpp = bits < 8 ? 1 : bits / 8;
    buf out = {0};
    *nrows = 0;
    for (int p = 0; p < (im->interlace ? 7 : 1); p++) {
        int x0 = im->interlace ? a7[p][0] : 0, y0 = im->interlace ? a7[p][1] : 0;
        int dx = im->interlace ? a7[p][2] : 1, dy = im->interlace ? a7[p][3] : 1;
        int pw = (im->w - x0 + dx - 1) / dx, ph = (im->h - y0 + dy - 1) / dy;
        if (pw <= 0 || ph <= 0) continue;
        size_t rb = ((size_t)pw * bits + 7) / 8;
        uint8_t *prev = calloc(rb + 1, 1), *cur = calloc(rb + 1, 1), *f = malloc(rb + 1);
        if (!prev || !cur || !f) exit(2);
        for (int y = 0; y < ph; y++) {
            memset(cur, 0, rb);
            for (int x = 0; x < pw; x++)
                for (int j = 0; j < c; j++) {
                    uint16_t v = im->smp[((size_t)(y0 + y * dy) * im->w + x0 + x * dx) * c + j];
                    size_t bit = ((size_t)x * c + j) * im->depth;
                    if (im->depth == 16) cur[bit / 8] = (uint8_t)(v >> 8), cur[bit / 8 + 1] = (uint8_t)v;
                    else cur[bit / 8] |= (uint8_t)(v << (8 - im->depth - bit % 8));
                }
            int t = (int)rnd(5);
            f[0] = (uint8_t)t;
            for (size_t k = 0; k < rb; k++) {
                int a = k >= (size_t)bpp ? cur[k - bpp] : 0, b = prev[k], cc = k >= (size_t)bpp ? prev[k - bpp] : 0;
                int pa = abs(b - cc), pb = abs(a - cc), pc = abs(a + b - 2 * cc);
                int pred = t == 0 ? 0 : t == 1 ? a : t == 2 ? b : t == 3 ? (a + b) >> 1 : pa <= pb && pa <= pc ? a : pb <= pc ? b : cc;
                f[k + 1] = (uint8_t)(cur[k] - pred);
            }
            put(&out, f, rb + 1);
            if (*nrows < max) row_end[(*nrows)++] = out.n;
            uint8_t *t2 = prev;
            prev = cur, cur = t2;
        }
        free(prev), free(cur), free(f);
    }
    return out;
}

static buf png_file(const image *im, const buf *z, size_t split) {
    buf f = {0};
    put(&f, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13];
    for (int i = 0; i < 4; i++) ihdr[i] = (uint8_t)(im->w >> (24 - 8 * i)), ihdr[4 + i] = (uint8_t)(im->h >> (24 - 8 * i));
    ihdr[8] = (uint8_t)im->depth, ihdr[9] = (uint8_t)im->ctype, ihdr[10] = ihdr[11] = 0, ihdr[12] = (uint8_t)im->interlace;
    chunk(&f, "IHDR", ihdr, 13);
    if (im->ctype == 3) chunk(&f, "PLTE", im->pal, 3 * (size_t)im->npal);
    if (split == 0) split = z->n;
    for (size_t at = 0; at < z->n;) { /* the first IDAT ends at split; the rest in one or many */
        size_t m = at == 0 ? split : rnd(3) ? z->n - at : 1 + rnd((uint32_t)(z->n - at));
        chunk(&f, "IDAT", z->p + at, m);
        at += m;
    }
    chunk(&f, "IEND", NULL, 0);
    return f;
}

static int decode(const buf *f, sg_rgb_image *img, char *err, size_t errlen) {
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    int orient = 1;
    *img = (sg_rgb_image){0};
    return sg_pre_decode_png(f->p, f->n, &o, img, &orient, err, errlen);
}

static void check_files(uint64_t seed, int count) {
    enum { MAXR = 4096 };
    static size_t row_end[MAXR];
    int bad[10] = {0}, runs[10] = {0};
    static const char *what[10] = {"undamaged", "wrong Adler-32 in the last row's block", "wrong Adler-32 in its own IDAT",
                                  "bad block after the rows, same block", "bad block after the rows, own IDAT",
                                  "a filter type above 4", "the stream ends after whole rows",
                                  "the stream ends inside a row, or the file is cut in the data", "bytes past the last row",
                                  "the stream ends after whole rows, its Adler-32 in the next IDAT"};
    for (int i = 0; i < count; i++) {
        rng_state = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
        image im = make_image();
        int nrows;
        buf data = image_data(&im, row_end, MAXR, &nrows);
        int kind = (int)rnd(10), want_ok = 1, zero_from = -1; /* zero_from: the row whose pixels on are 0 */
        size_t n = data.n, split = 0;
        buf z = {0};
        if (kind == 5) { /* a row's filter byte */
            int r = (int)rnd((uint32_t)nrows);
            data.p[r ? row_end[r - 1] : 0] = (uint8_t)(5 + rnd(251));
            want_ok = 0;
        }
        if ((kind == 6 || kind == 9) && !im.interlace && nrows > 1) { /* whole rows only */
            int r = 1 + (int)rnd((uint32_t)nrows - 1);
            n = row_end[r - 1], zero_from = kind == 6 ? r : -1, want_ok = kind == 6;
        } else if (kind == 6 || kind == 9) {
            kind = 0;
        }
        if (kind == 7) n = n > 1 ? 1 + rnd((uint32_t)n - 1) : 0, want_ok = 0;
        if (kind == 7)
            for (int r = 0; r < nrows; r++) if (row_end[r] == n) n--; /* inside a row */
        if (kind == 8) {
            for (int k = 0; k < 1 + (int)rnd(60); k++) put8(&data, rnd(256));
        }
        size_t zn_rows; /* the stream's length up to the end of the rows' last block */
        zlib_stream(&z, data.p, kind == 8 ? data.n : n, kind == 1 || kind == 2, kind == 3 || kind == 4);
        zn_rows = z.n - (kind == 3 || kind == 4 ? 1 : 4);
        if (kind == 1 || kind == 3) want_ok = 0;
        if (kind == 2 || kind == 4 || kind == 9) split = zn_rows; /* the trailer or the bad block in the next IDAT */
        if (kind == 7 && rnd(2)) { /* or the file cut in the data rather than the stream */
            zlib_stream((z.n = 0, &z), data.p, data.n, 0, 0);
            buf f = png_file(&im, &z, 0);
            /* within the first half of the stream's data: rows are lost (literals take 8 bits or more) */
            f.n = 8 + 25 + (im.ctype == 3 ? 12 + 3 * (size_t)im.npal : 0) + 8 + 2 + rnd((uint32_t)(z.n > 10 ? (z.n - 6) / 2 : 1));
            free(z.p), z = f;
        } else {
            buf f = png_file(&im, &z, split);
            free(z.p), z = f;
        }
        sg_rgb_image img;
        char err[512] = "";
        int rc = decode(&z, &img, err, sizeof err), ok = rc == 0 ? 1 : 0;
        if (ok && zero_from >= 0) {
            uint8_t zero[3] = {0, 0, 0};
            if (im.ctype == 3) memcpy(zero, im.pal, 3);
            for (size_t p = (size_t)zero_from * im.w; p < (size_t)im.w * im.h; p++) memcpy(im.rgb + 3 * p, zero, 3);
        }
        int same = ok == want_ok && (!ok || (img.w == im.w && img.h == im.h && !memcmp(img.rgb, im.rgb, (size_t)im.w * im.h * 3)));
        runs[kind]++;
        if (!same && bad[kind]++ < 4)
            printf("  case %d (seed %llu), %s, ctype %d depth %d interlace %d %dx%d: rc %d '%s'\n", i, (unsigned long long)seed,
                   what[kind], im.ctype, im.depth, im.interlace, im.w, im.h, rc, err);
        sg_rgb_image_free(&img);
        free(z.p), free(data.p), free(im.smp), free(im.rgb);
    }
    for (int k = 0; k < 10; k++)
        CHECK(bad[k] == 0, "%s: %d random PNGs (seed %llu) give Pillow's verdict and pixels (%d differ)", what[k], runs[k],
              (unsigned long long)seed, bad[k]);
}

/* Pillow reads an IDAT 64 KiB at a time: what lies past such a block end, after the last row, is never read.
 * A grey 6552 x 20 image is 131,060 bytes of rows, two stored blocks of 65,535 and 65,525 bytes after the 2-byte
 * header: its last row ends at byte 131,072 of the stream, a block end. A bad block header (type 3) right there is
 * not read; with an empty stored block before the second data block, it falls 5 bytes into the next block and is. */
static void check_block_ends(void) {
    image im = {.w = 6552, .h = 20, .ctype = 0, .depth = 8};
    size_t np = (size_t)im.w * im.h, row_end[20];
    im.smp = malloc(np * sizeof *im.smp), im.rgb = malloc(np * 3);
    if (!im.smp || !im.rgb) exit(2);
    rng_state = 3502;
    for (size_t i = 0; i < np; i++) im.smp[i] = (uint16_t)rnd(256), memset(im.rgb + 3 * i, im.smp[i], 3);
    int nrows;
    buf data = image_data(&im, row_end, 20, &nrows);
    for (int pad = 0; pad < 2; pad++) {
        buf z = {0};
        put8(&z, 0x78), put8(&z, 0x01);
        for (size_t at = 0, blk = 0; at < data.n; blk++) {
            if (pad && blk == 1) put8(&z, 0), put8(&z, 0), put8(&z, 0), put8(&z, 0xff), put8(&z, 0xff); /* empty */
            size_t m = data.n - at < 65535 ? data.n - at : 65535;
            put8(&z, 0), put8(&z, m & 0xff), put8(&z, m >> 8), put8(&z, ~m & 0xff), put8(&z, (~m >> 8) & 0xff);
            put(&z, data.p + at, m);
            at += m;
        }
        put8(&z, 0x07); /* final, type 3 */
        buf f = png_file(&im, &z, 0);
        sg_rgb_image img;
        char err[512] = "";
        int rc = decode(&f, &img, err, sizeof err);
        if (!pad)
            CHECK(z.n == 131073 && rc == 0 && img.w == im.w && !memcmp(img.rgb, im.rgb, np * 3),
                  "a bad block header just past a 64 KiB read is never read: the image decodes (rc %d '%s')", rc, err);
        else
            CHECK(rc != 0 && strstr(err, "broken data stream"), "5 bytes later, in the same read, it refuses the image ('%s')", err);
        sg_rgb_image_free(&img);
        free(f.p), free(z.p);
    }
    free(data.p), free(im.smp), free(im.rgb);
}

/* Pillow's palette and tRNS rules (sg_png_palette), on a 4 x 1 image: one PLTE chunk set (two when plte2 is set,
 * the last counting), tRNS of trns_n bytes when trns_n >= 0. */
static int palette_case(int ctype, const uint8_t *plte, int plte_n, int plte2, int trns_n, sg_rgb_image *img, char *err) {
    static const uint8_t idx[4] = {0, 1, 2, 255};
    uint8_t row[1 + 16] = {0}, ihdr[13] = {0, 0, 0, 4, 0, 0, 0, 1, 8, (uint8_t)ctype, 0, 0, 0};
    int c = chans(ctype);
    for (int x = 0; x < 4; x++)
        for (int j = 0; j < c; j++) row[1 + x * c + j] = ctype == 3 ? idx[x] : (uint8_t)(40 * x + j);
    buf z = {0}, f = {0};
    zlib_stream(&z, row, 1 + 4 * (size_t)c, 0, 0);
    put(&f, "\x89PNG\r\n\x1a\n", 8);
    chunk(&f, "IHDR", ihdr, 13);
    if (plte2) chunk(&f, "PLTE", (const uint8_t *)"\1\2\3\4\5\6", 6);
    if (plte_n >= 0) chunk(&f, "PLTE", plte, (size_t)plte_n);
    uint8_t t[10] = {0, 9, 0, 9, 0, 9, 0, 9, 0, 9};
    if (trns_n >= 0) chunk(&f, "tRNS", t, (size_t)trns_n);
    chunk(&f, "IDAT", z.p, z.n);
    chunk(&f, "IEND", NULL, 0);
    int rc = decode(&f, img, err, 512);
    free(z.p), free(f.p);
    return rc;
}

static void check_palette_rules(void) {
    uint8_t pal[800];
    for (int i = 0; i < 800; i++) pal[i] = (uint8_t)(i * 7 + 1);
    sg_rgb_image img;
    char err[512] = "";
    int rc = palette_case(3, pal, 7, 0, -1, &img, err); /* two whole entries and one byte */
    CHECK(rc == 0 && !memcmp(img.rgb, pal, 6) && !memcmp(img.rgb + 6, "\0\0\0\0\0\0", 6),
          "PLTE of 7 bytes: two colours, the other indices black (rc %d '%s')", rc, err);
    sg_rgb_image_free(&img);
    rc = palette_case(3, pal, -1, 0, 1, &img, err);
    CHECK(rc == 0 && !memcmp(img.rgb, "\0\0\0\0\0\0\0\0\0\0\0\0", 12), "no PLTE: every index black, tRNS or not (rc %d '%s')", rc, err);
    sg_rgb_image_free(&img);
    rc = palette_case(3, pal, 770, 0, 5, &img, err);
    CHECK(rc == 0 && !memcmp(img.rgb + 9, pal + 765, 3), "PLTE of 770 bytes: 256 colours, index 255 the last (rc %d '%s')", rc, err);
    sg_rgb_image_free(&img);
    rc = palette_case(3, pal, 771, 0, -1, &img, err);
    CHECK(rc != 0 && strstr(err, "more than 256 colours"), "PLTE of 771 bytes is refused, as Pillow refuses it ('%s')", err);
    sg_rgb_image_free(&img);
    rc = palette_case(3, pal, 6, 1, -1, &img, err);
    CHECK(rc == 0 && !memcmp(img.rgb, pal, 6), "of two PLTE chunks the second counts (rc %d '%s')", rc, err);
    sg_rgb_image_free(&img);
    int ok = 1;
    static const int kinds[4][2] = {{6, 6}, {4, 2}, {0, 4}, {2, 8}}; /* tRNS with alpha, or of another size */
    for (int k = 0; k < 4; k++) {
        rc = palette_case(kinds[k][0], pal, k == 3 ? 7 : -1, 0, kinds[k][1], &img, err);
        ok &= rc == 0 && img.w == 4 && img.rgb[3] == 40 && img.rgb[3 * 3 + 2] == (kinds[k][0] == 2 || kinds[k][0] == 6 ? 122 : 120);
        sg_rgb_image_free(&img);
    }
    CHECK(ok, "tRNS in RGBA and grey + alpha, of 4 bytes in grey, of 8 in RGB (with a partial PLTE): decoded, alpha dropped");
}

int main(void) {
    rng_state = 35;
    check_kernels();
    check_files(3501, 6000);
    check_block_ends();
    check_palette_rules();
    return CHECK_DONE();
}
