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
 *     not know, a palette of more than 256 colours.
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
    return CHECK_DONE();
}
