/* preprocess/decode_png.c — PNG: our own chunk walk, as Pillow's PngImageFile walks it, then stb_image for the pixels.
 *
 * Pillow reads a PNG in three stages, and the walk here follows each (Pillow 12 and 13 agree on all of it):
 *  - _open, up to the first IDAT: every name must be 4 word characters, every chunk whole with a good CRC (an
 *    ancillary chunk too), else the file is refused; an unknown chunk, critical or not, is skipped.
 *  - the IDAT run (load_read): IDAT chunks back to back, CRCs never checked; data cut by the end of the file is
 *    taken as far as it goes (the decoder decides whether it was enough).
 *  - load_end, after the pixels: CRCs never checked; reading stops quietly at the end of the file, a header cut
 *    short, a name that is not 4 word characters, IEND, or an animated APNG's next fcTL; a chunk whose data is
 *    cut refuses the file ("Truncated File Read"), as do the handlers' own checks (sg_png_handler_check).
 *  Bytes after IEND are never read; a missing IEND is no error.
 * Every chunk read goes to png_meta.c, which finds the orientation where Pillow finds it (eXIf, text, XMP).
 * stb_image would read the file its own way (it refuses unknown critical chunks and a missing IEND, and joins
 * IDATs across other chunks), so it gets a rebuilt stream instead: IHDR (compression byte 0, interlace 0/1 as
 * Pillow reads it), PLTE (padded, see below), the tRNS before IDAT, the IDAT run's data, IEND; CRCs zero (stb
 * does not check them). Mode rules that differ from stb's defaults: 16-bit grey is Pillow's I;16, and
 * convert("RGB") clips it at 255 (stb would keep the high byte). Everything else (palette with tRNS, LA,
 * RGBA, 16-bit RGB(A) high byte, 1/2/4-bit grey scaled to 0..255) is what stb gives with 3 requested channels.
 * A palette shorter than its indices need is padded to 256 entries, the missing ones black: stb keeps the
 * palette in an uninitialised stack array, and Pillow 13 maps such indices to (0,0,0) in convert("RGB").
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

/* What the walk learns for the pixel decode: IHDR, PLTE and tRNS (offsets of chunk starts, 0 if none), and
 * the IDAT run as (offset, length) pieces of data. */
typedef struct {
    int depth, ctype;
    size_t ihdr_off, plte_off, trns_off;
    uint32_t plte_len, trns_len;
    size_t *idat; /* offset, length, offset, length, ... */
    size_t n_idat, cap_idat, idat_total;
    int cut; /* the end of the file cut the IDAT run */
} sg_png_layout;

/* APNG state, as PngStream keeps it: acTL's frame count, the last sequence number, whether fcTL came first. */
typedef struct {
    int64_t n_frames; /* -1: None */
    int64_t seq;      /* -1: None */
    int fctl_before_idat;
    uint32_t w, h;
} sg_apng;

/* The checks of Pillow's chunk handlers that raise without LOAD_TRUNCATED_IMAGES (s: the whole data, n bytes).
 * Text chunks are png_meta.c's. */
static int sg_png_handler_check(const uint8_t *t, const uint8_t *s, uint32_t n, int ctype, sg_apng *a, char *err, size_t errlen) {
    static const struct { char name[5]; uint32_t min; } need[] = {{"gAMA", 4}, {"cHRM", 32}, {"sRGB", 1}, {"pHYs", 9}, {"acTL", 8}, {"fcTL", 26}, {"fdAT", 4}};
    char tn[5] = {(char)t[0], (char)t[1], (char)t[2], (char)t[3], 0};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!memcmp(t, need[i].name, 4) && n < need[i].min) return sg_pre_err(err, errlen, "PNG: %s chunk of %u bytes is truncated (Pillow refuses it)", tn, n);
    if (!memcmp(t, "IHDR", 4) && (n < 13 || s[11])) return sg_pre_err(err, errlen, "PNG: IHDR is truncated or has an unknown filter method");
    if (!memcmp(t, "tRNS", 4) && (ctype == 0 || ctype == 2) && n < (ctype == 2 ? 6u : 2u))
        return sg_pre_err(err, errlen, "PNG: tRNS of %u bytes is truncated (Pillow refuses it)", n);
    if (!memcmp(t, "iCCP", 4)) {
        const uint8_t *nul = n ? memchr(s, 0, n) : NULL;
        size_t i = nul ? (size_t)(nul - s) + 1 : 0; /* s.find(b"\0") + 1: 0 when there is none */
        if (i >= n) return sg_pre_err(err, errlen, "PNG: iCCP has no compression method");
        if (s[i]) return sg_pre_err(err, errlen, "PNG: iCCP compression method %u (Pillow refuses it)", s[i]);
        uint8_t *o = NULL;
        size_t on;
        int rc = sg_zlib_inflate(s + i + 1, n - i - 1, 1u << 20, &o, &on);
        free(o);
        if (rc > 0) return sg_pre_err(err, errlen, "PNG: the ICC profile inflates past 1 MiB (Pillow's MAX_TEXT_CHUNK)");
    }
    if (!memcmp(t, "acTL", 4)) {
        uint32_t f = sg_be32(s);
        a->n_frames = a->n_frames >= 0 ? -1 : f == 0 || f > 0x80000000u ? -1 : (int64_t)f;
    }
    if (!memcmp(t, "fcTL", 4) || !memcmp(t, "fdAT", 4)) {
        uint32_t q = sg_be32(s);
        int fc = t[0] == 'f' && t[1] == 'c';
        if (fc ? (a->seq < 0 && q != 0) || (a->seq >= 0 && (int64_t)q != a->seq + 1) : a->seq < 0 || (int64_t)q != a->seq + 1)
            return sg_pre_err(err, errlen, "PNG: APNG frame sequence error (Pillow refuses it)");
        a->seq = q;
        if (fc && ((uint64_t)sg_be32(s + 12) + sg_be32(s + 4) > a->w || (uint64_t)sg_be32(s + 16) + sg_be32(s + 8) > a->h))
            return sg_pre_err(err, errlen, "PNG: APNG frame outside the image (Pillow refuses it)");
    }
    return 0;
}

static int sg_png_add_idat(sg_png_layout *lay, size_t off, size_t n) {
    if (lay->n_idat + 2 > lay->cap_idat) {
        size_t c = lay->cap_idat ? 2 * lay->cap_idat : 16;
        size_t *g = realloc(lay->idat, c * sizeof *g);
        if (!g) return -1;
        lay->idat = g, lay->cap_idat = c;
    }
    lay->idat[lay->n_idat++] = off, lay->idat[lay->n_idat++] = n, lay->idat_total += n;
    return 0;
}

/* Walks the chunks as Pillow does (see the top of the file). */
static int sg_png_walk(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_png_layout *lay,
                       sg_png_meta *meta, char *err, size_t errlen) {
    size_t p = 8; /* after the signature */
    int stage = 0, animated = 0; /* stage 0: _open, 1: the IDAT run, 2: load_end */
    sg_apng a = {-1, -1, 0, 0, 0};
    for (;;) {
        if (len - p < 8 || !sg_png_is_cid(d + p + 4)) { /* struct.error or a broken name */
            if (stage == 0) return sg_pre_err(err, errlen, len - p < 8 ? "PNG: truncated chunk header at offset %zu (no IDAT)" : "PNG: broken chunk name at offset %zu", p);
            break;
        }
        uint32_t n = sg_be32(d + p);
        const uint8_t *type = d + p + 4, *s = d + p + 8;
        size_t left = len - p - 8;
        int is_idat = !memcmp(type, "IDAT", 4);
        if (stage == 1 && !is_idat) stage = 2;
        if (stage > 0 && (!memcmp(type, "IEND", 4) || (animated && !memcmp(type, "fcTL", 4))))
            break; /* IEND, or the next frame of an animated APNG */
        if (is_idat && stage < 2) { /* the IDAT run: data as far as the file goes, CRC unread */
            if (!lay->ihdr_off) return sg_pre_err(err, errlen, "PNG: IDAT before IHDR");
            /* Pillow's decoder stops at the last row; IDATs after that one are read by load_end, whole or refused.
             * We take a cut IDAT after the first as such a one (wrong only where the cut lost no pixel data). */
            if (n > left && lay->n_idat)
                return sg_pre_err(err, errlen, "PNG: IDAT at offset %zu declares %u bytes, only %zu left (truncated file)", p, n, left);
            if (sg_png_add_idat(lay, p + 8, n < left ? n : left)) return sg_pre_err(err, errlen, "PNG: out of memory");
            lay->cut = n >= left || left - n < 8;
            if (stage == 0) /* is_animated, fixed at open: acTL's count, plus the IDAT when no fcTL came first */
                animated = a.n_frames >= 0 && a.n_frames + !a.fctl_before_idat > 1;
            stage = 1;
            if (n >= left || left - n < 4) break;
            p += 12 + (size_t)n;
            continue;
        }
        char tn[5];
        for (int i = 0; i < 4; i++) tn[i] = (char)type[i];
        tn[4] = 0;
        if (n > left) return sg_pre_err(err, errlen, "PNG: chunk '%s' at offset %zu declares %u bytes, only %zu left (truncated file)", tn, p, n, left);
        if (stage == 0 && !memcmp(type, "IEND", 4)) return sg_pre_err(err, errlen, "PNG: no IDAT chunk (truncated or not an image)");
        if (sg_png_handler_check(type, s, n, lay->ctype, &a, err, errlen)) return -1;
        if (stage == 0) {
            if (left - n < 4) return sg_pre_err(err, errlen, "PNG: chunk '%s' at offset %zu has no CRC (truncated file)", tn, p);
            uint32_t stored = sg_be32(s + n), crc = sg_crc32(type, (size_t)n + 4);
            if (stored != crc)
                return sg_pre_err(err, errlen, "PNG: bad CRC in chunk '%s' at offset %zu: stored 0x%08x, computed 0x%08x", tn, p, stored, crc);
            if (!memcmp(type, "IHDR", 4)) {
                lay->ihdr_off = p, lay->depth = s[8], lay->ctype = s[9], a.w = sg_be32(s), a.h = sg_be32(s + 4);
                if (sg_pre_check_dims("PNG", sg_be32(s), sg_be32(s + 4), opts->max_pixels, err, errlen)) return -1;
            } else if (!memcmp(type, "PLTE", 4)) {
                lay->plte_off = p, lay->plte_len = n;
            } else if (!memcmp(type, "tRNS", 4)) {
                lay->trns_off = p, lay->trns_len = n;
            } else if (!memcmp(type, "fcTL", 4)) {
                a.fctl_before_idat = 1;
            }
        }
        if (sg_png_meta_chunk(meta, type, s, n, err, errlen)) return -1;
        if (left - n < 4) break; /* load_end: the CRC read finds the end of the file */
        p += 12 + (size_t)n;
    }
    return 0;
}

static uint8_t *sg_png_put(uint8_t *o, const char *type, const uint8_t *s, size_t n) {
    o[0] = (uint8_t)(n >> 24), o[1] = (uint8_t)(n >> 16), o[2] = (uint8_t)(n >> 8), o[3] = (uint8_t)n;
    memcpy(o + 4, type, 4);
    if (n && s) memcpy(o + 8, s, n);
    else if (n) memset(o + 8, 0, n);
    memset(o + 8 + n, 0, 4); /* stb does not read CRCs */
    return o + 12 + n;
}

/* The stream stb reads (see the top of the file). */
static uint8_t *sg_png_rebuild(const uint8_t *d, const sg_png_layout *lay, size_t *out_len) {
    const size_t piece = 1u << 30; /* stb's IDAT size limit */
    uint32_t pl = lay->plte_off ? lay->plte_len : 0;
    if (lay->ctype == 3 && pl && pl < 768 && pl % 3 == 0) pl = 768;
    size_t n = 8 + 25 + (lay->plte_off ? 12 + pl : 0) + (lay->trns_off ? 12 + lay->trns_len : 0) +
               lay->idat_total + 12 * (lay->idat_total / piece + 1) + 12;
    uint8_t *b = malloc(n), *o = b;
    if (!b) return NULL;
    memcpy(o, d, 8);
    o = sg_png_put(o + 8, "IHDR", d + lay->ihdr_off + 8, 13);
    o[-5] = o[-5] ? 1 : 0, o[-7] = 0; /* interlace: Pillow takes any non-zero as Adam7; compression: unread */
    if (lay->plte_off) {
        uint8_t *at = o;
        o = sg_png_put(o, "PLTE", NULL, pl);
        memcpy(at + 8, d + lay->plte_off + 8, lay->plte_len);
    }
    if (lay->trns_off) o = sg_png_put(o, "tRNS", d + lay->trns_off + 8, lay->trns_len);
    size_t k = 0, used = 0; /* piece k of the IDAT data, bytes of it used */
    size_t left = lay->idat_total;
    do {
        size_t m = left < piece ? left : piece;
        uint8_t *at = o;
        o = sg_png_put(o, "IDAT", NULL, m);
        for (size_t w = 0; w < m;) {
            size_t take = lay->idat[2 * k + 1] - used < m - w ? lay->idat[2 * k + 1] - used : m - w;
            memcpy(at + 8 + w, d + lay->idat[2 * k] + used, take);
            w += take, used += take;
            if (used == lay->idat[2 * k + 1]) k++, used = 0;
        }
        left -= m;
    } while (left);
    o = sg_png_put(o, "IEND", NULL, 0);
    *out_len = (size_t)(o - b);
    return b;
}

int sg_pre_decode_png(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      int *orientation, char *err, size_t errlen) {
    pthread_once(&sg_crc_once, sg_crc_init);
    sg_png_layout lay = {.ctype = -1};
    sg_png_meta meta = {0};
    int rc = sg_png_walk(d, len, opts, &lay, &meta, err, errlen);
    /* IDATs with no bytes at all: Pillow's decoder gets no data and the file is truncated for it. (stb, given an
     * empty IDAT, offsets a NULL pointer: undefined behaviour, found by fuzzing.) */
    if (rc == 0 && lay.idat_total == 0)
        rc = sg_pre_err(err, errlen, "PNG: the image data is empty (truncated file)");
    *orientation = rc ? 1 : sg_png_meta_orientation(&meta, opts->pillow_major);
    sg_png_meta_free(&meta);
    size_t src_len = 0;
    uint8_t *src = rc ? NULL : sg_png_rebuild(d, &lay, &src_len);
    free(lay.idat);
    if (rc) return -1;
    if (!src) return sg_pre_err(err, errlen, "PNG: out of memory");
    if (*orientation == SG_EXIF_REFUSED && opts->exif_rotate) /* only exif_transpose calls getexif() */
        return free(src), sg_pre_err(err, errlen, "PNG: the EXIF data is not readable (bad hex, not TIFF, or text): Pillow's exif_transpose raises on it");
    if (*orientation == SG_EXIF_REFUSED) *orientation = 1;
    int depth = lay.depth, ctype = lay.ctype;

    int sw, sh;
    if (ctype == 0 && depth == 16) {
        uint16_t *g = sg_stb_load16(src, src_len, 1, &sw, &sh, err, errlen);
        free(src);
        if (!g) return lay.cut ? sg_pre_err(err, errlen, "PNG: truncated file: the IDAT data ends early") : -1;
        if (sg_pre_alloc(out, sw, sh, err, errlen)) { free(g); return -1; }
        for (size_t i = 0, np = (size_t)sw * sh; i < np; i++) {
            uint8_t v = g[i] > 255 ? 255 : (uint8_t)g[i]; /* Pillow I;16 -> RGB clips, it does not scale */
            out->rgb[3 * i] = out->rgb[3 * i + 1] = out->rgb[3 * i + 2] = v;
        }
        free(g);
        return 0;
    }
    uint8_t *rgb = sg_stb_load8(src, src_len, 3, &sw, &sh, err, errlen);
    free(src);
    if (!rgb) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return sg_pre_err(err, errlen, "PNG: %s%s", lay.cut ? "truncated file: " : "", why);
    }
    out->w = sw, out->h = sh, out->rgb = rgb;
    return 0;
}
