/* preprocess/exif.c — the EXIF orientation tag and Pillow's ImageOps.exif_transpose.
 *
 * The tag lives in IFD0 of a TIFF structure (JPEG APP1 "Exif\0\0", PNG eXIf or a text chunk). Pillow reads it
 * with Image.getexif() (Exif.load, TiffImagePlugin.ImageFileDirectory_v2.load) and falls back to the XMP
 * packet's tiff:Orientation only when IFD0 has no Orientation entry at all: an entry Pillow reads but
 * exif_transpose cannot use (0, 9, a BYTE, an ASCII string) means "no transpose", not "ask XMP".
 * sg_exif_orientation replays that reader: which entries it skips, where it stops, which value it keeps
 * (measured against Pillow 12.0 and 13.0 with every TIFF type and counts 0..3; the two differ where noted).
 * Every read is bounds-checked: the bytes come from untrusted files.
 */
#include "preprocess/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SG_TAG_ORIENTATION 0x0112 /* TIFF/EXIF tag number of Orientation */

static uint32_t sg_rd16(const uint8_t *p, int be) { return be ? sg_be16(p) : sg_le16(p); }
static uint32_t sg_rd32(const uint8_t *p, int be) { return be ? sg_be32(p) : sg_le32(p); }
static uint64_t sg_rd64(const uint8_t *p, int be) {
    uint64_t a = sg_rd32(p, be), b = sg_rd32(p + 4, be);
    return be ? a << 32 | b : b << 32 | a;
}

/* exif_transpose's transpose for a number: 2..8 when it equals one of those integers, else 1 (none). */
static int sg_orient_of(double v) { return v >= 2 && v <= 8 && v == floor(v) ? (int)v : 1; }

/* The orientation exif_transpose applies for the entry's first value (Pillow keeps the first of a longer
 * array: "too many entries" is a warning). BYTE, ASCII and UNDEFINED come back as bytes or a string, which
 * match no transpose; numbers match by value, so a LONG 6, a RATIONAL 12/2 or a DOUBLE 6.0 rotate. */
static int sg_orient_value(uint32_t typ, const uint8_t *v, int be) {
    switch (typ) {
    case 3: return sg_orient_of(sg_rd16(v, be));                                  /* SHORT */
    case 4: case 13: return sg_orient_of(sg_rd32(v, be));                         /* LONG, IFD */
    case 6: return sg_orient_of((int8_t)v[0]);                                    /* SBYTE */
    case 8: return sg_orient_of((int16_t)sg_rd16(v, be));                         /* SSHORT */
    case 9: return sg_orient_of((int32_t)sg_rd32(v, be));                         /* SLONG */
    case 16: return sg_rd64(v, be) <= 8 ? sg_orient_of((double)sg_rd64(v, be)) : 1; /* LONG8 */
    case 11: { uint32_t b = sg_rd32(v, be); float f; memcpy(&f, &b, 4); return sg_orient_of(f); } /* FLOAT */
    case 12: { uint64_t b = sg_rd64(v, be); double f; memcpy(&f, &b, 8); return sg_orient_of(f); } /* DOUBLE */
    case 5: case 10: { /* RATIONAL, SRATIONAL: an exact fraction; a zero denominator is NaN */
        int64_t n = typ == 5 ? (int64_t)sg_rd32(v, be) : (int32_t)sg_rd32(v, be);
        int64_t d = typ == 5 ? (int64_t)sg_rd32(v + 4, be) : (int32_t)sg_rd32(v + 4, be);
        return d != 0 && n % d == 0 ? sg_orient_of((double)(n / d)) : 1;
    }
    default: return 1; /* BYTE, ASCII, UNDEFINED */
    }
}

/* Strips Pillow's "Exif\0\0" prefixes (13: one or two; 12: all) and checks the TIFF header as
 * ImageFileDirectory_v2 does. Returns 1 with *be set, 0 when nothing is left (no EXIF), -1 when Pillow raises:
 * a header it does not accept, LE BigTIFF (Exif.load reads only 8 header bytes), or fewer than 8 bytes. */
static int sg_exif_header(const uint8_t **tiff, size_t *len, int pillow_major, int *be) {
    for (int i = 0; (pillow_major == 12 || i < 2) && *len >= 6 && memcmp(*tiff, "Exif\0\0", 6) == 0; i++)
        *tiff += 6, *len -= 6;
    if (*len == 0) return 0;
    return sg_tiff_header(*tiff, *len, be) < 0 ? -1 : 1;
}

int sg_tiff_header(const uint8_t *p, size_t len, int *be) {
    static const char *const ok[] = {"MM\0*", "II*\0", "MM*\0", "II\0*", "MM\0+"}; /* "MM\0+": BigTIFF is read
                                                                                      as classic (ifh[2] != 43) */
    for (int i = 0; i < 5; i++)
        if (len >= 8 && memcmp(p, ok[i], 4) == 0) return *be = p[0] == 'M', i;
    return -1;
}

void sg_tiff_ifd0_walk(const uint8_t *tiff, size_t len, int be, int pillow_major, sg_tiff_visit visit, void *ctx) {
    uint32_t ifd = sg_rd32(tiff + 4, be);
    if (ifd > len || len - ifd < 2) return; /* the entry count cannot be read: an empty IFD */
    uint32_t n = sg_rd16(tiff + ifd, be);
    uint8_t stored[65536 / 8] = {0}; /* Pillow 13 keeps a tag's first readable entry and skips repeats */
    uint64_t out_of_line = 0; /* Pillow 13: out-of-line bytes so far; an entry taking the sum past len is skipped */
    for (uint32_t i = 0; i < n; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12; /* 12-byte entries: tag, type, count, value */
        if (e + 12 > len) break;                     /* a short read ends the IFD; entries read so far count */
        uint32_t tag = sg_rd16(tiff + e, be), typ = sg_rd16(tiff + e + 2, be), count = sg_rd32(tiff + e + 4, be);
        if (pillow_major != 12 && (stored[tag >> 3] >> (tag & 7) & 1)) continue;
        uint64_t size = (uint64_t)count * sg_tiff_type_size(typ);
        if (size == 0) continue; /* an unsupported type or no values: skipped, as if absent */
        const uint8_t *v = tiff + e + 8;
        if (size > 4) {
            uint32_t off = sg_rd32(v, be);
            if (pillow_major != 12 && (out_of_line += size) > len) continue;
            if (off > len || size > len - off) break; /* data past the end: Pillow stops reading the IFD */
            v = tiff + off;
        }
        stored[tag >> 3] |= (uint8_t)(1u << (tag & 7));
        visit(ctx, tag, typ, count, v, be);
    }
}

/* The EXIF block's IFD0 walked as getexif() reads it (sg_tiff_ifd0_walk). Returns 1 after the walk, 0 when there is
 * no EXIF, -1 when getexif() raises on the header. */
static int sg_exif_walk(const uint8_t *tiff, size_t len, int pillow_major, sg_tiff_visit visit, void *ctx) {
    int be, h = sg_exif_header(&tiff, &len, pillow_major, &be);
    if (h > 0) sg_tiff_ifd0_walk(tiff, len, be, pillow_major, visit, ctx);
    return h;
}

static void sg_visit_orientation(void *ctx, uint32_t tag, uint32_t typ, uint32_t count, const uint8_t *v, int be) {
    (void)count;
    if (tag == SG_TAG_ORIENTATION) *(int *)ctx = sg_orient_value(typ, v, be);
}

int sg_exif_orientation(const uint8_t *tiff, size_t len, int pillow_major) {
    int orientation = SG_EXIF_ABSENT;
    int h = sg_exif_walk(tiff, len, pillow_major, sg_visit_orientation, &orientation);
    return h < 0 ? SG_EXIF_REFUSED : h == 0 ? SG_EXIF_ABSENT : orientation;
}

/* What JpegImageFile._read_dpi_from_exif reads: ResolutionUnit (0x0128) is there, and XResolution (0x011A) as
 * getexif() gives it: bytes for BYTE / UNDEFINED (as many as its count), a str for ASCII (one trailing NUL
 * dropped), else a number or a tuple. */
typedef struct {
    int unit;                 /* a ResolutionUnit entry was kept */
    uint32_t xtyp, xcount;    /* XResolution's type and count, 0 when absent */
    const uint8_t *x;         /* its value bytes */
} sg_exif_dpi;

static void sg_visit_dpi(void *ctx, uint32_t tag, uint32_t typ, uint32_t count, const uint8_t *v, int be) {
    (void)be;
    sg_exif_dpi *d = ctx;
    if (tag == 0x0128) d->unit = 1;
    if (tag == 0x011A) d->xtyp = typ, d->xcount = count, d->x = v;
}

int sg_exif_dpi_raises(const uint8_t *tiff, size_t len, int pillow_major) {
    sg_exif_dpi d = {0};
    if (sg_exif_walk(tiff, len, pillow_major, sg_visit_dpi, &d) <= 0 || !d.unit || !d.xtyp) return 0;
    /* float(x[0]) / x[1]: an IndexError (which Pillow does not catch) on bytes of length 1 and on a str of length 0,
     * or of length 1 whose character float() reads (a digit); every other value passes or fails in a way it catches */
    if (d.xtyp == 1 || d.xtyp == 7) return d.xcount == 1;
    if (d.xtyp == 2) {
        uint32_t n = d.xcount - (d.x[d.xcount - 1] == 0); /* load_string drops one trailing NUL */
        return n == 0 || (n == 1 && d.x[0] >= '0' && d.x[0] <= '9');
    }
    return 0;
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
