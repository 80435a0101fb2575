/* preprocess/exif.c — the EXIF orientation tag and Pillow's ImageOps.exif_transpose.
 *
 * The tag lives in IFD0 of a TIFF structure (JPEG APP1 "Exif\0\0", PNG eXIf). Pillow reads it with
 * Image.getexif() and, when EXIF has no orientation, falls back to the XMP packet's tiff:Orientation.
 * Every read is bounds-checked: the bytes come from untrusted files, and a malformed block simply means
 * "no orientation" (0), never an error.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

#define SG_TAG_ORIENTATION 0x0112 /* TIFF/EXIF tag number of Orientation */

static uint32_t sg_rd16(const uint8_t *p, int be) { return be ? (uint32_t)(p[0] << 8 | p[1]) : (uint32_t)(p[1] << 8 | p[0]); }
static uint32_t sg_rd32(const uint8_t *p, int be) {
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int sg_exif_orientation(const uint8_t *tiff, size_t len) {
    /* Pillow strips one or two "Exif\0\0" prefixes before parsing */
    for (int i = 0; i < 2 && len >= 6 && memcmp(tiff, "Exif\0\0", 6) == 0; i++) tiff += 6, len -= 6;
    if (len < 8) return 0;
    int be;
    if (memcmp(tiff, "II*\0", 4) == 0) be = 0;
    else if (memcmp(tiff, "MM\0*", 4) == 0) be = 1;
    else return 0;
    uint32_t ifd = sg_rd32(tiff + 4, be);
    if (ifd > len || len - ifd < 2) return 0;
    uint32_t n = sg_rd16(tiff + ifd, be);
    int orientation = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12; /* 12-byte entries: tag, type, count, value */
        if (e + 12 > len) break;
        if (sg_rd16(tiff + e, be) != SG_TAG_ORIENTATION) continue;
        uint32_t type = sg_rd16(tiff + e + 2, be), count = sg_rd32(tiff + e + 4, be);
        if (count != 1) continue; /* Pillow then holds a tuple, which exif_transpose ignores */
        switch (type) {
        case 1: case 6: orientation = tiff[e + 8]; break;              /* BYTE, SBYTE */
        case 3: case 8: orientation = (int)sg_rd16(tiff + e + 8, be); break; /* SHORT, SSHORT */
        case 4: case 9: orientation = (int)sg_rd32(tiff + e + 8, be); break; /* LONG, SLONG */
        default: break;
        }
    }
    return orientation >= 1 && orientation <= 8 ? orientation : 0;
}

int sg_xmp_orientation(const uint8_t *xmp, size_t len) {
    static const char key[] = "tiff:Orientation";
    size_t kl = sizeof key - 1;
    for (size_t i = 0; i + kl + 2 <= len; i++) {
        if (memcmp(xmp + i, key, kl) != 0) continue;
        const uint8_t *p = xmp + i + kl;
        if (p[0] == '=' && p[1] == '"' && i + kl + 3 <= len && p[2] >= '0' && p[2] <= '9') return p[2] - '0';
        if (p[0] == '>' && p[1] >= '0' && p[1] <= '9') return p[1] - '0';
    }
    return 0;
}

int sg_pre_orient(sg_rgb_image *img, int orientation, char *err, size_t errlen) {
    if (orientation < 2 || orientation > 8) return 0;
    int w = img->w, h = img->h;
    int swap = orientation >= 5; /* 5..8 exchange width and height */
    int ow = swap ? h : w, oh = swap ? w : h;
    uint8_t *dst = malloc((size_t)w * h * 3);
    if (!dst) return sg_pre_err(err, errlen, "out of memory rotating %dx%d", w, h);
    const uint8_t *src = img->rgb;
    for (int y = 0; y < oh; y++) {
        uint8_t *d = dst + (size_t)y * ow * 3;
        for (int x = 0; x < ow; x++, d += 3) {
            int sx, sy; /* source pixel of output (x, y) for Pillow's transpose methods */
            switch (orientation) {
            case 2: sx = w - 1 - x, sy = y; break;         /* FLIP_LEFT_RIGHT */
            case 3: sx = w - 1 - x, sy = h - 1 - y; break; /* ROTATE_180 */
            case 4: sx = x, sy = h - 1 - y; break;         /* FLIP_TOP_BOTTOM */
            case 5: sx = y, sy = x; break;                 /* TRANSPOSE */
            case 6: sx = y, sy = h - 1 - x; break;         /* ROTATE_270 */
            case 7: sx = w - 1 - y, sy = h - 1 - x; break; /* TRANSVERSE */
            default: sx = w - 1 - y, sy = x; break;        /* 8: ROTATE_90 */
            }
            const uint8_t *s = src + ((size_t)sy * w + sx) * 3;
            d[0] = s[0], d[1] = s[1], d[2] = s[2];
        }
    }
    free(img->rgb);
    img->rgb = dst;
    img->w = ow, img->h = oh;
    return 0;
}
