/* tests/test_bmp_palette.c — palette BMPs (1, 4, 8 bits, uncompressed) with Pillow's palette (decode_stb.c's rebuild).
 *
 * stb_image sizes a BMP's palette from the pixel data's offset (for OS/2 headers four entries short, even negative)
 * and leaves the entries past it uninitialised: before session 35 such files gave pixels that changed from run to
 * run. Pillow reads clr_used entries (2^bpp when 0; OS/2: 2^bpp of 3 bytes) from right after the header and maps
 * indices past them to black (scripts/bmp_differential.py checks this against Pillow itself). Here, on files built
 * in memory with every index 0..2^bpp-1 present, the pixels must be the palette's entries and black past them, the
 * same on every decode: OS/2 and Windows headers, clr_used below 2^bpp, a gap between the palette and the pixels,
 * top-down rows.
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
    return CHECK_DONE();
}
