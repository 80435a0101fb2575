/* tests/test_bmp_rules.c — uncompressed and bitfields BMPs read with Pillow's rules (decode_stb.c's rebuild for stb).
 *
 * Since session 35 an uncompressed or bitfields BMP is rebuilt as Pillow reads it before stb_image decodes it
 * (scripts/bmp_differential.py checks the whole against Pillow itself). stb had sized a palette from the pixel
 * data's offset (for OS/2 headers four entries short, even negative) and left the entries past it uninitialised:
 * such files gave pixels that changed from run to run. Checked here on files built in memory:
 *  1. palettes: every index gives its entry, indices past the palette black, the same pixels on every decode; OS/2
 *     and Windows headers, clr_used below 2^bpp, a gap between the palette and the pixels, top-down rows;
 *  2. what stb refused and Pillow reads: a 52-byte (V2) header, a gap before 24-bit pixels, 32-bit bitfields of all-
 *     zero masks (read as BGRA), a last row without its padding; and what Pillow refuses: 32-bit bitfields it does
 *     not know, a palette of more than 256 colours;
 *  3. RLE bitmaps under Pillow 12's rules (pillow_major 12) and Pillow 13's (decode_bmp_rle.c): an absolute RLE4 run
 *     of an odd count, a black-and-white palette (Pillow 12 refuses it), a one-colour grey palette ("L" in 12, "1" in
 *     13). The expected pixels were checked against Pillow 12.3 and 13.0 when the test was written;
 *  4. a 16-bit BMP with an OS/2 (12-byte) header: 5-5-5 with Pillow's v * 255 / 31, rows bottom-up (stb refused it).
 */
#include "preprocess/preprocess.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>

static void le32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24); }
static void le16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

/* A w x 1 image whose pixel x has index x % 2^bpp; ncol palette entries (i * 37 + 5, i * 11 + 7, 255 - i) stored
 * as BGR(X); gap bytes between palette and pixels. Returns the file; *n its length. */
static uint8_t *make_bmp(int os2, int bpp, int w, int ncol, int gap, int top_down, size_t *n) {
    int hsz = os2 ? 12 : 40, entry = os2 ? 3 : 4, stride = (w * bpp + 31) / 32 * 4;
    size_t off = 14 + (size_t)hsz + (size_t)ncol * entry + (size_t)gap;
    *n = off + (size_t)stride;
    uint8_t *b = calloc(*n, 1);
    if (!b) exit(2);
    b[0] = 'B', b[1] = 'M';
    le32(b + 2, (uint32_t)*n), le32(b + 10, (uint32_t)off), le32(b + 14, (uint32_t)hsz);
    if (os2) {
        le16(b + 18, (uint32_t)w), le16(b + 20, 1), le16(b + 22, 1), le16(b + 24, (uint32_t)bpp);
    } else {
        le32(b + 18, (uint32_t)w), le32(b + 22, top_down ? (uint32_t)-1 : 1), le16(b + 26, 1), le16(b + 28, (uint32_t)bpp);
        le32(b + 46, (uint32_t)(ncol == 1 << bpp && ncol != 2 ? 0 : ncol)); /* 0 means 2^bpp */
    }
    for (int i = 0; i < ncol; i++) {
        uint8_t *e = b + 14 + hsz + i * entry;
        e[2] = (uint8_t)(i * 37 + 5), e[1] = (uint8_t)(i * 11 + 7), e[0] = (uint8_t)(255 - i);
    }
    for (int i = 0; i < gap; i++) b[14 + hsz + ncol * entry + i] = 0xEE;
    uint8_t *px = b + off;
    for (int x = 0; x < w; x++) {
        int v = x % (1 << bpp), bit = x * bpp;
        px[bit / 8] |= (uint8_t)(v << (8 - bpp - bit % 8));
    }
    return b;
}

static int check_one(int os2, int bpp, int w, int ncol, int gap, int top_down) {
    size_t n;
    uint8_t *f = make_bmp(os2, bpp, w, ncol, gap, top_down, &n);
    int ok = 1;
    for (int rep = 0; rep < 2; rep++) {
        sg_rgb_image img = {0};
        char err[256];
        if (sg_decode_rgb(f, n, NULL, &img, err, sizeof err) || img.w != w || img.h != 1) {
            printf("  os2 %d bpp %d ncol %d gap %d: %s\n", os2, bpp, ncol, gap, err);
            ok = 0;
            break;
        }
        for (int x = 0; x < w; x++) {
            int i = x % (1 << bpp);
            uint8_t want[3] = {0, 0, 0};
            if (i < ncol) want[0] = (uint8_t)(i * 37 + 5), want[1] = (uint8_t)(i * 11 + 7), want[2] = (uint8_t)(255 - i);
            if (memcmp(img.rgb + 3 * x, want, 3)) {
                if (ok) printf("  os2 %d bpp %d ncol %d gap %d: pixel %d is %u %u %u, want %u %u %u\n", os2, bpp, ncol,
                               gap, x, img.rgb[3 * x], img.rgb[3 * x + 1], img.rgb[3 * x + 2], want[0], want[1], want[2]);
                ok = 0;
            }
        }
        sg_rgb_image_free(&img);
    }
    free(f);
    return ok;
}

/* A w x 2 true-colour BMP: header of hsz bytes, bpp 24 or 32, compression comp with masks m (at byte 54), gap bytes
 * before the pixels, the last row's padding cut when cut is set. Pixel (x, y) is B = x, G = y, R = 200. */
static uint8_t *make_rgb(int hsz, int bpp, int comp, const uint32_t m[4], int gap, int cut, size_t *n) {
    int w = 3, stride = (w * bpp + 31) / 32 * 4;
    size_t off = 14 + (size_t)hsz + (comp == 3 && hsz == 40 ? 12 : 0) + (size_t)gap;
    *n = off + 2 * (size_t)stride - (cut ? (size_t)(stride - w * bpp / 8) : 0);
    uint8_t *b = calloc(off + 2 * (size_t)stride, 1);
    if (!b) exit(2);
    b[0] = 'B', b[1] = 'M';
    le32(b + 2, (uint32_t)*n), le32(b + 10, (uint32_t)off), le32(b + 14, (uint32_t)hsz);
    le32(b + 18, (uint32_t)w), le32(b + 22, 2), le16(b + 26, 1), le16(b + 28, (uint32_t)bpp), le32(b + 30, (uint32_t)comp);
    for (int i = 0; comp == 3 && i < (hsz >= 56 ? 4 : 3); i++) le32(b + 54 + 4 * i, m[i]);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = b + off + (size_t)(1 - y) * stride + (size_t)x * bpp / 8; /* bottom-up */
            p[0] = (uint8_t)x, p[1] = (uint8_t)y, p[2] = 200;
        }
    return b;
}

/* 1 when the file decodes to (200, y, x) at (x, y); 0 when it is refused (err filled); -1 for other pixels. */
static int rgb_case(int hsz, int bpp, int comp, const uint32_t m[4], int gap, int cut, char *err) {
    size_t n;
    uint8_t *f = make_rgb(hsz, bpp, comp, m, gap, cut, &n);
    sg_rgb_image img = {0};
    int rc = sg_decode_rgb(f, n, NULL, &img, err, 256) ? 0 : 1;
    for (int y = 0; rc == 1 && y < 2; y++)
        for (int x = 0; x < 3; x++) {
            const uint8_t *p = img.rgb + 3 * (size_t)(y * 3 + x);
            if (p[0] != 200 || p[1] != y || p[2] != x) rc = -1;
        }
    sg_rgb_image_free(&img);
    free(f);
    return rc;
}

/* A w x 1 RLE BMP (comp 1: RLE8, 2: RLE4, bpp 8 or 4) of ncol palette entries pal (BGRX) and the stream rle, the
 * stream at an even offset. Returns the file; *n its length. */
static uint8_t *make_rle(int comp, int w, const uint8_t *pal, int ncol, const uint8_t *rle, size_t nrle, size_t *n) {
    size_t off = 14 + 40 + (size_t)ncol * 4;
    *n = off + nrle;
    uint8_t *b = calloc(*n, 1);
    if (!b) exit(2);
    b[0] = 'B', b[1] = 'M';
    le32(b + 2, (uint32_t)*n), le32(b + 10, (uint32_t)off), le32(b + 14, 40);
    le32(b + 18, (uint32_t)w), le32(b + 22, 1), le16(b + 26, 1), le16(b + 28, comp == 2 ? 4 : 8);
    le32(b + 30, (uint32_t)comp), le32(b + 46, (uint32_t)ncol);
    memcpy(b + 54, pal, (size_t)ncol * 4);
    memcpy(b + off, rle, nrle);
    return b;
}

/* Decodes f with pillow_major major: 1 when its w x 1 pixels are the RGB triples want, 0 when they differ, -1 when
 * refused (reason in err). */
static int rle_case(const uint8_t *f, size_t n, int major, const uint8_t *want, int w, char *err, size_t errlen) {
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    o.pillow_major = major;
    sg_rgb_image img = {0};
    err[0] = 0;
    if (sg_decode_rgb(f, n, &o, &img, err, errlen)) return -1;
    int same = img.w == w && img.h == 1 && memcmp(img.rgb, want, (size_t)w * 3) == 0;
    sg_rgb_image_free(&img);
    return same;
}

static void check_rle_rules(void) {
    char err[256] = "";
    size_t n;
    uint8_t pal[16 * 4];
    for (int i = 0; i < 16; i++) pal[4 * i] = (uint8_t)(i * 16), pal[4 * i + 1] = (uint8_t)(200 - i), pal[4 * i + 2] = (uint8_t)(i + 1), pal[4 * i + 3] = 0;
    /* an absolute run of 3 indices (1, 2, 3 in two bytes 0x12 0x30), end of line, end of bitmap, 4 pixels wide:
     * Pillow 13 reads both bytes (1 2 3) and pads the row with index 0; Pillow 12 reads one byte (1 2), skips 0x30 as
     * the word-alignment pad, and the row is padded */
    static const uint8_t odd_run[] = {0, 3, 0x12, 0x30, 0, 0, 0, 1};
    uint8_t *f = make_rle(2, 4, pal, 16, odd_run, sizeof odd_run, &n), want13[12], want12[12];
    static const int idx13[4] = {1, 2, 3, 0}, idx12[4] = {1, 2, 0, 0};
    for (int x = 0; x < 4; x++)
        for (int c = 0; c < 3; c++) want13[3 * x + c] = pal[4 * idx13[x] + 2 - c], want12[3 * x + c] = pal[4 * idx12[x] + 2 - c];
    CHECK(rle_case(f, n, 13, want13, 4, err, sizeof err) == 1, "RLE4 absolute run of 3, Pillow 13: indices 1 2 3 0 (%s)", err);
    CHECK(rle_case(f, n, 12, want12, 4, err, sizeof err) == 1, "RLE4 absolute run of 3, Pillow 12: indices 1 2 0 0 (%s)", err);
    free(f);
    /* a black-and-white palette: Pillow 13 reads mode 1 (any index but 0 white), Pillow 12 refuses */
    static const uint8_t bw[8] = {0, 0, 0, 0, 255, 255, 255, 0}, run4[] = {4, 1, 0, 1}, white[12] = {255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255}, grey1[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    f = make_rle(1, 4, bw, 2, run4, sizeof run4, &n);
    CHECK(rle_case(f, n, 13, white, 4, err, sizeof err) == 1, "black-and-white RLE8, Pillow 13: mode 1 (%s)", err);
    CHECK(rle_case(f, n, 12, white, 4, err, sizeof err) == -1 && strstr(err, "Pillow 12"),
          "black-and-white RLE8, Pillow 12: refused ('%s')", err);
    free(f);
    /* a grey palette of one colour: mode 1 in Pillow 13 (index 1 white), L in Pillow 12 (index 1 is grey level 1) */
    f = make_rle(1, 4, bw, 1, run4, sizeof run4, &n);
    CHECK(rle_case(f, n, 13, white, 4, err, sizeof err) == 1, "one-colour grey RLE8, Pillow 13: mode 1 (%s)", err);
    CHECK(rle_case(f, n, 12, grey1, 4, err, sizeof err) == 1, "one-colour grey RLE8, Pillow 12: mode L (%s)", err);
    free(f);
}

/* 4: a 3 x 2 OS/2 16-bit BMP whose pixel (x, y) in file order is the 15-bit value (x * 11 + y * 7) * 1021 mod 2^15;
 * Pillow's BGR;15: r = bits 10-14, g = 5-9, b = 0-4, each v * 255 / 31, file rows bottom-up. */
static void check_os2_16(void) {
    enum { W = 3, H = 2, STRIDE = 8 };
    uint8_t f[26 + STRIDE * H] = {'B', 'M'}, want[W * H * 3];
    le32(f + 2, sizeof f), le32(f + 10, 26), le32(f + 14, 12);
    le16(f + 18, W), le16(f + 20, H), le16(f + 22, 1), le16(f + 24, 16);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint32_t v = (uint32_t)((x * 11 + y * 7) * 1021) & 0x7FFF;
            le16(f + 26 + y * STRIDE + 2 * x, v);
            uint8_t *o = want + ((H - 1 - y) * W + x) * 3; /* file row y is image row H-1-y */
            o[0] = (uint8_t)(((v >> 10) & 31) * 255 / 31), o[1] = (uint8_t)(((v >> 5) & 31) * 255 / 31);
            o[2] = (uint8_t)((v & 31) * 255 / 31);
        }
    char err[256] = "";
    sg_rgb_image img = {0};
    int rc = sg_decode_rgb(f, sizeof f, NULL, &img, err, sizeof err);
    CHECK(rc == 0 && img.w == W && img.h == H && memcmp(img.rgb, want, sizeof want) == 0,
          "a 16-bit BMP with an OS/2 header decodes as Pillow's BGR;15 ('%s')", err);
    sg_rgb_image_free(&img);
    /* the smallest OS/2 files, 1 x 1 without the row's padding: 28 bytes at 16 bits, 29 at 24 (Pillow reads both) */
    for (int bpp = 16; bpp <= 24; bpp += 8) {
        uint8_t t[29] = {'B', 'M'};
        size_t n = 26 + (size_t)bpp / 8;
        le32(t + 2, (uint32_t)n), le32(t + 10, 26), le32(t + 14, 12);
        le16(t + 18, 1), le16(t + 20, 1), le16(t + 22, 1), le16(t + 24, (uint32_t)bpp);
        t[26] = 0x1F, t[27] = 0x40, t[28] = 0x77; /* 16-bit: b 31, g 0, r 16 (0x401F); 24-bit: B G R */
        uint8_t px[3] = {(uint8_t)(16 * 255 / 31), 0, 255}, px24[3] = {0x77, 0x40, 0x1F};
        err[0] = 0;
        rc = sg_decode_rgb(t, n, NULL, &img, err, sizeof err);
        CHECK(rc == 0 && img.w == 1 && img.h == 1 && memcmp(img.rgb, bpp == 16 ? px : px24, 3) == 0,
              "a 1 x 1 %d-bit OS/2 BMP of %zu bytes decodes, as Pillow decodes it ('%s')", bpp, n, err);
        sg_rgb_image_free(&img);
    }
}

int main(void) {
    int ok = 1, n = 0;
    for (int bpp = 1; bpp <= 8; bpp *= 2) {
        if (bpp == 2) continue;
        int full = 1 << bpp;
        ok &= check_one(1, bpp, full + 3, full, 0, 0), n++;           /* OS/2: 3-byte entries */
        ok &= check_one(0, bpp, full + 3, full, 0, 0), n++;           /* clr_used 0 */
        ok &= check_one(0, bpp, full + 3, full > 2 ? full / 2 + 1 : 1, 0, 0), n++; /* a short palette */
        ok &= check_one(0, bpp, full + 3, full > 2 ? 3 : 1, 7, 1), n++; /* a gap after it, top-down */
    }
    CHECK(ok, "%d palette BMPs (1, 4, 8 bits; OS/2 and Windows headers; full, short and gapped palettes): every index "
          "gives its entry, indices past the palette black, the same pixels on every decode", n);

    char err[256] = "";
    static const uint32_t none[4] = {0, 0, 0, 0}, bgra[4] = {0xFF0000, 0xFF00, 0xFF, 0xFF000000};
    static const uint32_t odd[4] = {0xFF00, 0xFF0000, 0xFF, 0};
    CHECK(rgb_case(52, 24, 0, none, 0, 0, err) == 1, "a 52-byte (V2) header is read, as Pillow reads it ('%s')", err);
    CHECK(rgb_case(40, 24, 0, none, 5, 0, err) == 1, "24-bit pixels 5 bytes after the header are read from the offset ('%s')", err);
    CHECK(rgb_case(124, 32, 0, none, 9, 0, err) == 1, "32-bit pixels after a gap, V5 header ('%s')", err);
    CHECK(rgb_case(40, 24, 0, none, 0, 1, err) == 1, "the last row without its padding is read, as Pillow reads it ('%s')", err);
    CHECK(rgb_case(40, 32, 3, none, 0, 0, err) == 1, "32-bit bitfields of all-zero masks are read as BGRA ('%s')", err);
    CHECK(rgb_case(56, 32, 3, bgra, 0, 0, err) == 1, "32-bit BGRA bitfields in a V3 header ('%s')", err);
    CHECK(rgb_case(40, 32, 3, odd, 0, 0, err) == 0 && strstr(err, "bitfields"),
          "32-bit bitfields Pillow does not know are refused ('%s')", err);
    size_t nb;
    uint8_t *f = make_bmp(0, 8, 10, 300, 0, 0, &nb);
    sg_rgb_image img = {0};
    CHECK(sg_decode_rgb(f, nb, NULL, &img, err, sizeof err) != 0 && strstr(err, "colours"),
          "a palette of 300 colours is refused, as Pillow refuses it ('%s')", err);
    sg_rgb_image_free(&img);
    free(f);
    check_rle_rules();
    check_os2_16();
    return CHECK_DONE();
}
