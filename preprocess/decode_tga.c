/* preprocess/decode_tga.c — TGA (Targa), decoded as Pillow 13's TgaImagePlugin and TgaRleDecode.c decode it.
 *
 * stb_image mirrored nothing, ignored a colour map's first entry index and read out-of-range indices its own way,
 * so TGA is read here with Pillow's rules (checked against Pillow on every combination of type, depth and map):
 *   - A file is a TGA when its colour map type is 0 or 1, its image type 1, 2, 3, 9, 10 or 11 (bit 3: RLE) and
 *     both sides are positive (TGA has no magic number; sg_pre_is_tga). Pixel depths other than 1, 8, 16, 24, 32
 *     and map depths other than 16, 24, 32 are refused (Pillow cannot identify the file: no 15-bit TGA).
 *   - Pillow decodes only these (type & 7, depth): (1, 8) palette, (3, 1) "1", (3, 8) L, (3, 16) LA, (2, 16)
 *     BGRA 5-5-5-1 (channel v*255/31, floored), (2, 24) BGR, (2, 32) BGRA; others open but cannot load. A
 *     colour-mapped type without a colour map is refused (mode L with raw mode P), so is RLE at 1 bit.
 *   - A colour map holds `first` zero (black) entries, then the file's; more than 256 entries is refused.
 *     Indices past the map are black. It is applied to L and LA images too (LA: the L byte is the index), and
 *     makes RGB, RGBA and "1" images fail (Pillow cannot put a palette on them). Alpha never reaches RGB.
 *   - Rows run bottom-up unless the descriptor has 0x20; 0x10 mirrors each row (right-to-left origin).
 *   - RLE: a run packet may not cross a row's end (Pillow: buffer overrun); a literal packet may, and must be
 *     whole in the file even when its tail is not needed; decoding stops at the last row, data after is unread.
 *     Raw data shorter than the image, or RLE data that stops early, is refused (truncated).
 *   - Pillow seeks 26 bytes back from the end of an RGBA file (type 2/10, 16 or 32 bits) for a TGA 2 footer,
 *     which fails on a file of fewer than 26 bytes (Pillow 12.3 and 13; 12.0 read those). Pillow 12 refuses
 *     32-bit colour maps (opts->pillow_major == 12 follows Pillow 12.3).
 * Every read is bounds-checked; an RLE stream is walked whole before the image is allocated.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

int sg_pre_is_tga(const uint8_t *d, size_t len) {
    int type = len >= 18 ? d[2] & ~8 : 0; /* 1, 2, 3, or those plus 8 (RLE) */
    return type >= 1 && type <= 3 && d[1] <= 1 && sg_le16(d + 12) > 0 && sg_le16(d + 14) > 0;
}

typedef struct {
    const uint8_t *d;
    size_t len;
    uint64_t p;              /* next byte of the pixel data */
    uint32_t w, h, rowbytes, pixbytes;
    int top_down, mirror, kind; /* kind: what a row's bytes are (below) */
    uint8_t lut[256][3];     /* the colour map (black past its entries) */
    int use_lut;
    uint8_t *rgb;            /* NULL: only check the data */
} sg_tga;

enum { SG_TGA_1, SG_TGA_L, SG_TGA_LA, SG_TGA_BGR15, SG_TGA_BGR, SG_TGA_BGRA };

static inline void sg_tga_555(uint32_t v, uint8_t *o) {
    o[0] = (uint8_t)(((v >> 10) & 31) * 255 / 31);
    o[1] = (uint8_t)(((v >> 5) & 31) * 255 / 31);
    o[2] = (uint8_t)((v & 31) * 255 / 31);
}

/* Row r of the file (0 = first) into its image row, as RGB. */
static void sg_tga_row(sg_tga *t, const uint8_t *s, uint32_t r) {
    if (!t->rgb) return;
    uint8_t *o = t->rgb + (size_t)(t->top_down ? r : t->h - 1 - r) * t->w * 3;
    for (uint32_t x = 0; x < t->w; x++) {
        uint8_t *q = o + 3 * (size_t)(t->mirror ? t->w - 1 - x : x);
        switch (t->kind) {
        case SG_TGA_1: q[0] = q[1] = q[2] = (s[x >> 3] >> (7 - (x & 7)) & 1) ? 255 : 0; break;
        case SG_TGA_L:
        case SG_TGA_LA: {
            uint8_t v = s[(size_t)x * t->pixbytes];
            if (t->use_lut) memcpy(q, t->lut[v], 3);
            else q[0] = q[1] = q[2] = v;
            break;
        }
        case SG_TGA_BGR15: sg_tga_555(sg_le16(s + 2 * (size_t)x), q); break;
        default: q[0] = s[(size_t)x * t->pixbytes + 2], q[1] = s[(size_t)x * t->pixbytes + 1], q[2] = s[(size_t)x * t->pixbytes];
        }
    }
}

/* Pillow's ImagingTgaRleDecode over the whole image: 0 (every row written, or checked when t->rgb is NULL), 1
 * when the data ends first, 2 when a run packet crosses a row's end. row is a rowbytes buffer. */
static int sg_tga_rle(sg_tga *t, uint8_t *row) {
    uint64_t p = t->p, x = 0, n;
    uint32_t r = 0, depth = t->pixbytes;
    for (;;) {
        if (p >= t->len) return 1;
        uint8_t c = t->d[p];
        n = (uint64_t)depth * ((c & 0x7f) + 1);
        uint64_t extra = 0;
        if (c & 0x80) { /* run: one pixel repeated, within the row */
            if (t->len - p < 1 + (uint64_t)depth) return 1;
            if (x + n > t->rowbytes) return 2;
            if (t->rgb)
                for (uint64_t i = 0; i < n; i += depth) memcpy(row + x + i, t->d + p + 1, depth);
            p += 1 + depth;
        } else { /* literal: n bytes, spilling into the rows after */
            if (t->len - p < 1 + n) return 1;
            const uint8_t *src = t->d + p + 1;
            p += 1 + n;
            if (x + n > t->rowbytes) extra = x + n - t->rowbytes, n = t->rowbytes - x;
            if (t->rgb) memcpy(row + x, src, n);
            src += n;
            for (;;) {
                x += n;
                if (x >= t->rowbytes) {
                    sg_tga_row(t, row, r);
                    x = 0;
                    if (++r == t->h) return 0;
                }
                if (!extra) break;
                n = extra < t->rowbytes ? extra : t->rowbytes;
                if (t->rgb) memcpy(row, src, n);
                src += n, extra -= n;
            }
            continue;
        }
        x += n;
        if (x >= t->rowbytes) {
            sg_tga_row(t, row, r);
            x = 0;
            if (++r == t->h) return 0;
        }
    }
}

int sg_pre_decode_tga(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out, char *err,
                      size_t errlen) {
    uint32_t idlen = d[0], cmtype = d[1], type = d[2], first = sg_le16(d + 3), cmlen = sg_le16(d + 5), cmbits = d[7];
    uint32_t w = sg_le16(d + 12), h = sg_le16(d + 14), depth = d[16], desc = d[17];
    int rle = (type & 8) != 0, t7 = type & 7, p12 = opts->pillow_major == 12;
    if (depth != 1 && depth != 8 && depth != 16 && depth != 24 && depth != 32)
        return sg_pre_err(err, errlen, "TGA: %u bits per pixel (Pillow cannot identify it: it reads 1, 8, 16, 24 or 32)", depth);
    if (cmtype && cmbits != 16 && cmbits != 24 && cmbits != 32)
        return sg_pre_err(err, errlen, "TGA: colour map of %u-bit entries (Pillow cannot identify it: it reads 16, 24 "
                          "or 32)", cmbits);
    if (cmtype && cmbits == 32 && p12)
        return sg_pre_err(err, errlen, "TGA: colour map of 32-bit entries (Pillow 12 refuses it: unrecognized raw mode)");
    int kind = -1;
    if (t7 == 1 && depth == 8) kind = SG_TGA_L;
    if (t7 == 3) kind = depth == 1 ? SG_TGA_1 : depth == 8 ? SG_TGA_L : depth == 16 ? SG_TGA_LA : -1;
    if (t7 == 2) kind = depth == 16 ? SG_TGA_BGR15 : depth == 24 ? SG_TGA_BGR : depth == 32 ? SG_TGA_BGRA : -1;
    if (kind < 0)
        return sg_pre_err(err, errlen, "TGA: image type %u with %u-bit pixels (Pillow has no decoder for it: cannot "
                          "load this image)", type, depth);
    if (t7 == 1 && !cmtype)
        return sg_pre_err(err, errlen, "TGA: colour-mapped image type %u without a colour map (Pillow: unknown raw "
                          "mode)", type);
    if (rle && depth == 1)
        return sg_pre_err(err, errlen, "TGA: RLE with 1-bit pixels (Pillow's decoder never finishes a row: image file "
                          "is truncated)");
    if (cmtype && t7 != 1 && kind != SG_TGA_L && kind != SG_TGA_LA)
        return sg_pre_err(err, errlen, "TGA: a colour map on a %s image (Pillow cannot apply it: unrecognized image "
                          "mode)", kind == SG_TGA_1 ? "1-bit" : "true-colour");
    uint32_t ebytes = cmbits / 8, nent = cmtype ? first + cmlen : 0;
    if (nent > 256)
        return sg_pre_err(err, errlen, "TGA: colour map of %u entries (first index %u + %u; Pillow: invalid palette "
                          "size, at most 256)", nent, first, cmlen);
    if (sg_pre_check_dims("TGA", w, h, opts->max_pixels, err, errlen)) return -1;
    if (len < 26 && t7 == 2 && depth != 24)
        return sg_pre_err(err, errlen, "TGA: an RGBA file of %zu bytes (Pillow seeks 26 bytes back from the end for "
                          "a TGA 2 footer and fails: invalid argument)", len);

    sg_tga t = {.d = d, .len = len, .w = w, .h = h, .kind = kind, .top_down = (desc & 0x20) != 0,
                .mirror = (desc & 0x10) != 0, .use_lut = cmtype != 0};
    t.pixbytes = depth / 8;
    t.rowbytes = (uint32_t)(((uint64_t)w * depth + 7) / 8);
    uint64_t cm_at = 18ull + idlen, data_at = cm_at + (uint64_t)cmlen * ebytes * cmtype;
    if (data_at > len)
        return sg_pre_err(err, errlen, "TGA: the file is truncated: %zu bytes, its header%s ends at %llu", len,
                          cmtype ? " and colour map" : "", (unsigned long long)data_at);
    memset(t.lut, 0, sizeof t.lut);
    for (uint32_t i = 0; i < cmlen && cmtype; i++) {
        const uint8_t *e = d + cm_at + (uint64_t)i * ebytes;
        uint8_t *q = t.lut[first + i];
        if (ebytes == 2) sg_tga_555(sg_le16(e), q);
        else q[0] = e[2], q[1] = e[1], q[2] = e[0];
    }
    t.p = data_at;
    uint64_t need = rle ? 0 : (uint64_t)t.rowbytes * h;
    if (!rle && len - data_at < need)
        return sg_pre_err(err, errlen, "TGA: the file is truncated: %zu bytes, the header implies %llu", len,
                          (unsigned long long)(data_at + need));
    if (rle) { /* the whole stream first, before any pixel is allocated */
        int why = sg_tga_rle(&t, NULL);
        if (why == 1) return sg_pre_err(err, errlen, "TGA: RLE data is truncated: the file ends before the last row");
        if (why == 2)
            return sg_pre_err(err, errlen, "TGA: an RLE run packet crosses the end of a row (Pillow: buffer overrun "
                              "when reading image file)");
    }
    if (sg_pre_alloc(out, (int)w, (int)h, err, errlen)) return -1;
    t.rgb = out->rgb;
    if (!rle) {
        for (uint32_t r = 0; r < h; r++) sg_tga_row(&t, d + data_at + (uint64_t)r * t.rowbytes, r);
        return 0;
    }
    uint8_t *row = malloc(t.rowbytes);
    if (!row) return sg_pre_err(err, errlen, "TGA: out of memory for a row of %u bytes", t.rowbytes);
    sg_tga_rle(&t, row);
    free(row);
    return 0;
}
