/* preprocess/decode_png.c — PNG: our own chunk walk, then stb_image for the pixels.
 *
 * stb_image neither checks CRCs nor tells the colour type, so the chunk walk here does both: it verifies the
 * CRC of every chunk (a corrupt file fails with the chunk named), reads IHDR to refuse oversized images
 * before any pixel allocation and to pick Pillow's mode rule, and hands every chunk up to IEND to png_meta.c,
 * which finds the orientation where Pillow finds it (eXIf, text chunks, XMP; after IDAT too).
 * Mode rules that differ from stb's defaults: 16-bit grey is Pillow's I;16, and convert("RGB") clips it
 * at 255 (stb would keep the high byte). Everything else (palette with tRNS, LA, RGBA, 16-bit RGB(A) high
 * byte, 1/2/4-bit grey scaled to 0..255) is what stb gives with 3 requested channels.
 * A palette shorter than its indices need is padded here with Pillow's fill (see sg_png_pad_palette).
 */
#include "preprocess/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* CRC-32 (ISO 3309, polynomial 0xEDB88320) as the PNG specification defines it, table built once. */
static uint32_t sg_crc_table[256];
static void sg_crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        sg_crc_table[n] = c;
    }
}
static uint32_t sg_crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = sg_crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static pthread_once_t sg_crc_once = PTHREAD_ONCE_INIT;

/* Pillow's is_cid: a chunk name of 4 characters from [A-Za-z0-9_]. */
static int sg_png_is_cid(const uint8_t *t) {
    for (int i = 0; i < 4; i++)
        if (!((t[i] | 32) >= 'a' && (t[i] | 32) <= 'z') && !(t[i] >= '0' && t[i] <= '9') && t[i] != '_') return 0;
    return 1;
}

/* stb_image keeps the palette in an uninitialised stack array, so an index past the PLTE entries would read
 * garbage. When PLTE is short we hand stb a copy whose PLTE has 256 entries, the missing ones black: Pillow
 * 13 maps such indices to (0,0,0) in convert("RGB") (its palette buffer is zero-filled past the entries). */
static uint8_t *sg_png_pad_palette(const uint8_t *d, size_t len, size_t plte_off, uint32_t plte_len, size_t *out_len) {
    size_t extra = 768 - plte_len;
    uint8_t *c = malloc(len + extra);
    if (!c) return NULL;
    size_t data_end = plte_off + 8 + plte_len; /* end of the PLTE payload, before its CRC */
    memcpy(c, d, data_end);
    memset(c + data_end, 0, extra);
    memcpy(c + data_end + extra, d + data_end, len - data_end);
    c[plte_off + 0] = 0, c[plte_off + 1] = 0, c[plte_off + 2] = 768 >> 8, c[plte_off + 3] = 768 & 0xff;
    *out_len = len + extra; /* the PLTE CRC is now stale: stb does not check CRCs, and we checked the original */
    return c;
}

/* What the chunk walk learns for the pixel decode. */
typedef struct {
    int depth, ctype;
    size_t plte_off;
    uint32_t plte_len;
} sg_png_layout;

/* Walks every chunk to IEND: CRCs, IHDR (the pixel cap), PLTE, and the metadata for png_meta.c. */
static int sg_png_walk(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_png_layout *lay,
                       sg_png_meta *meta, char *err, size_t errlen) {
    size_t p = 8; /* after the signature */
    int seen_idat = 0, seen_iend = 0, meta_on = 1;
    while (p < len) {
        if (len - p < 12) return sg_pre_err(err, errlen, "PNG: truncated chunk header at offset %zu (%zu bytes left, need 12)", p, len - p);
        uint32_t n = sg_be32(d + p);
        const uint8_t *type = d + p + 4;
        char tn[5];
        for (int i = 0; i < 4; i++) tn[i] = type[i] >= 32 && type[i] < 127 ? (char)type[i] : '?';
        tn[4] = 0;
        if (n > 0x7fffffffu || n > len - p - 12)
            return sg_pre_err(err, errlen, "PNG: chunk '%s' at offset %zu declares %u bytes, only %zu left (truncated file)", tn, p, n, len - p - 12);
        uint32_t stored = sg_be32(d + p + 8 + n), crc = sg_crc32(type, (size_t)n + 4);
        if (stored != crc)
            return sg_pre_err(err, errlen, "PNG: bad CRC in chunk '%s' at offset %zu: stored 0x%08x, computed 0x%08x", tn, p, stored, crc);
        const uint8_t *s = d + p + 8;
        if (p == 8 && memcmp(type, "IHDR", 4) != 0) return sg_pre_err(err, errlen, "PNG: first chunk is '%s', expected IHDR", tn);
        if (memcmp(type, "IHDR", 4) == 0) {
            if (n != 13) return sg_pre_err(err, errlen, "PNG: IHDR has %u bytes, expected 13", n);
            lay->depth = s[8], lay->ctype = s[9];
            if (sg_pre_check_dims("PNG", sg_be32(s), sg_be32(s + 4), opts->max_pixels, err, errlen)) return -1;
        } else if (memcmp(type, "PLTE", 4) == 0) {
            lay->plte_off = p, lay->plte_len = n;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            seen_idat = 1;
        } else if (memcmp(type, "IEND", 4) == 0) {
            seen_iend = 1;
            break;
        } else if (seen_idat && !sg_png_is_cid(type)) {
            meta_on = 0; /* Pillow's load_end stops reading chunks at a name that is not 4 word characters */
        } else if (meta_on && sg_png_meta_chunk(meta, type, s, n, err, errlen)) {
            return -1;
        }
        p += 12 + (size_t)n;
    }
    if (!seen_idat) return sg_pre_err(err, errlen, "PNG: no IDAT chunk (truncated or not an image)");
    if (!seen_iend) return sg_pre_err(err, errlen, "PNG: no IEND chunk (the file is truncated)");
    return 0;
}

int sg_pre_decode_png(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      int *orientation, char *err, size_t errlen) {
    pthread_once(&sg_crc_once, sg_crc_init);
    sg_png_layout lay = {.ctype = -1};
    sg_png_meta meta = {0};
    int rc = sg_png_walk(d, len, opts, &lay, &meta, err, errlen);
    *orientation = rc ? 1 : sg_png_meta_orientation(&meta, opts->pillow_major);
    sg_png_meta_free(&meta);
    if (rc) return -1;
    if (*orientation == SG_EXIF_REFUSED && opts->exif_rotate) /* only exif_transpose calls getexif() */
        return sg_pre_err(err, errlen, "PNG: the EXIF data is not readable (bad hex, not TIFF, or text): Pillow's exif_transpose raises on it");
    if (*orientation == SG_EXIF_REFUSED) *orientation = 1;
    int depth = lay.depth, ctype = lay.ctype;
    size_t plte_off = lay.plte_off;
    uint32_t plte_len = lay.plte_len;

    int sw, sh;
    if (ctype == 0 && depth == 16) {
        uint16_t *g = sg_stb_load16(d, len, 1, &sw, &sh, err, errlen);
        if (!g) return -1;
        if (sg_pre_alloc(out, sw, sh, err, errlen)) { free(g); return -1; }
        for (size_t i = 0, np = (size_t)sw * sh; i < np; i++) {
            uint8_t v = g[i] > 255 ? 255 : (uint8_t)g[i]; /* Pillow I;16 -> RGB clips, it does not scale */
            out->rgb[3 * i] = out->rgb[3 * i + 1] = out->rgb[3 * i + 2] = v;
        }
        free(g);
        return 0;
    }
    const uint8_t *src = d;
    size_t src_len = len;
    uint8_t *padded = NULL;
    if (ctype == 3 && plte_off && plte_len < 768 && plte_len % 3 == 0) {
        padded = sg_png_pad_palette(d, len, plte_off, plte_len, &src_len);
        if (!padded) return sg_pre_err(err, errlen, "PNG: out of memory");
        src = padded;
    }
    uint8_t *rgb = sg_stb_load8(src, src_len, 3, &sw, &sh, err, errlen);
    free(padded);
    if (!rgb) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return sg_pre_err(err, errlen, "PNG: %s", why);
    }
    out->w = sw, out->h = sh, out->rgb = rgb;
    return 0;
}
