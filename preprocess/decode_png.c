/* preprocess/decode_png.c — PNG: our own chunk walk, as Pillow's PngImageFile walks it, then the pixels as Pillow
 * decodes them.
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
 * The image data (decode_data) is decoded as Pillow's ZipDecode.c decodes it, since session 35 by our own code
 * (stb_image had decoded it before, with its own verdicts on damaged data):
 *  - inflate.c inflates it with zlib's verdicts, fed as ImageFile.load feeds it (64 KiB at most at a time, never
 *    across a chunk's end; sg_zlib_inflate_png): a corrupt stream refuses the image ("broken data stream") where
 *    zlib finds it before the last row is out, or in the rest of the block that row came from (the Adler-32
 *    trailer, mostly); data past the last row is never read. A stream that ends early ends the image there
 *    when it ends a row (the rows after it stay 0, as in Pillow), else the file is truncated.
 *  - every row's filter type must be 0..4; rows are unfiltered by png_unfilter.c (one pass, or Adam7's seven).
 *  - convert("RGB")'s mode rules: grey repeated, 1/2/4-bit grey scaled to 0..255, 16-bit grey as I;16 clipped at
 *    255, other 16-bit samples by their high byte, alpha dropped, tRNS ignored, palette indices looked up with
 *    the entries past PLTE's whole ones black (Pillow 13); PLTE's one check is Pillow's (sg_png_palette).
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

/* What the walk learns for the pixel decode: IHDR and PLTE (offsets of chunk starts, 0 if none; tRNS changes nothing
 * in RGB), and the IDAT run as (offset, length) pieces of data. */
typedef struct {
    int depth, ctype;
    size_t ihdr_off, plte_off;
    uint32_t plte_len;
    size_t *idat; /* offset, length, offset, length, ... */
    size_t n_idat, cap_idat, idat_total;
    int cut; /* the end of the file cuts the last IDAT's data */
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
            /* Pillow's decoder stops at the last row; IDATs after that one are read by load_end, whole or refused:
             * a cut one is refused if the rows end before it (sg_png_decode_data), taken as far as it goes if not. */
            if (sg_png_add_idat(lay, p + 8, n < left ? n : left)) return sg_pre_err(err, errlen, "PNG: out of memory");
            lay->cut = n > left;
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

/* The rows of the image data as Pillow's decoder lays them out (ZipDecode.c): one pass, or Adam7's
 * seven with the empty ones left out; each row a filter byte and its samples. */
typedef struct {
    int w, h, bpp_bits, interlace;
} sg_png_rows;
static const int sg_adam7[7][4] = { /* x0, y0, dx, dy */
    {0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
/* Pass p's width and height in pixels (0 when empty). */
static void sg_png_pass(const sg_png_rows *r, int p, int *pw, int *ph) {
    if (!r->interlace) { *pw = r->w, *ph = r->h; return; }
    *pw = (r->w - sg_adam7[p][0] + sg_adam7[p][2] - 1) / sg_adam7[p][2];
    *ph = (r->h - sg_adam7[p][1] + sg_adam7[p][3] - 1) / sg_adam7[p][3];
    if (*pw <= 0 || *ph <= 0) *pw = *ph = 0;
}
/* A row's bytes, its filter byte not counted, for pw pixels. */
static size_t sg_png_row_bytes(const sg_png_rows *r, int pw) { return ((size_t)pw * r->bpp_bits + 7) / 8; }
/* The data's size when every row is there. */
static size_t sg_png_rows_size(const sg_png_rows *r) {
    size_t n = 0;
    for (int p = 0; p < (r->interlace ? 7 : 1); p++) {
        int pw, ph;
        sg_png_pass(r, p, &pw, &ph);
        if (pw) n += (sg_png_row_bytes(r, pw) + 1) * ph;
    }
    return n;
}
/* Walks the rows that end by got: each filter byte must be 0..4, as Pillow's decoder requires of every row it
 * finishes (-1 otherwise, with the row's number and filter type in row[0], row[1]). *boundary: whether got ends
 * a row. */
static int sg_png_rows_check(const sg_png_rows *r, const uint8_t *raw, size_t got, int row[2], int *boundary) {
    size_t at = 0;
    int k = 0;
    for (int p = 0; p < (r->interlace ? 7 : 1); p++) {
        int pw, ph;
        sg_png_pass(r, p, &pw, &ph);
        size_t rb = sg_png_row_bytes(r, pw) + 1;
        for (int y = 0; y < ph && at < got; y++, k++, at += rb)
            if (at + rb <= got && raw[at] > 4) return row[0] = k, row[1] = raw[at], -1;
    }
    *boundary = at == got;
    return 0;
}

/* Pillow's one check of the palette: a palette image whose PLTE holds more than 256 colours (over 770 bytes) is
 * refused ("invalid palette size"). Otherwise PLTE's whole entries are the palette (none without a PLTE), a second
 * PLTE replaces the first, the entries past them are black, and PLTE and tRNS mean nothing else for RGB. (stb had
 * refused partial entries, a palette image without PLTE and tRNS of other sizes or with alpha: Pillow decodes
 * them.) */
static int sg_png_palette(const uint8_t *d, const sg_png_layout *lay, uint8_t pal[768], char *err, size_t errlen) {
    memset(pal, 0, 768);
    if (lay->ctype != 3 || !lay->plte_off) return 0;
    if (lay->plte_len > 770)
        return sg_pre_err(err, errlen, "PNG: PLTE of %u bytes is more than 256 colours (Pillow refuses it)",
                          lay->plte_len);
    memcpy(pal, d + lay->plte_off + 8, lay->plte_len / 3 * 3); /* at most 768: 770 bytes are 256 entries */
    return 0;
}

/* Pixel i of an unfiltered row of the image's colour type and depth, as RGB the way Pillow's convert("RGB") makes
 * it: grey repeated (1/2/4-bit grey scaled to 0..255; 16-bit grey is I;16, clipped at 255), 16-bit samples by
 * their high byte, alpha dropped, palette indices looked up (pal: 256 entries, the missing ones black). */
static inline void sg_png_rgb(const uint8_t *row, int i, int ctype, int depth, const uint8_t *pal, uint8_t *o) {
    if (depth < 8) {
        int v = row[(i * depth) >> 3] >> (8 - depth - ((i * depth) & 7)) & ((1 << depth) - 1);
        if (ctype == 3) o[0] = pal[3 * v], o[1] = pal[3 * v + 1], o[2] = pal[3 * v + 2];
        else o[0] = o[1] = o[2] = (uint8_t)(v * (depth == 1 ? 255 : depth == 2 ? 85 : 17));
        return;
    }
    int b = depth / 8, n = ctype == 2 ? 3 : ctype == 4 ? 2 : ctype == 6 ? 4 : 1;
    const uint8_t *p = row + (size_t)i * n * b;
    if (ctype == 3) o[0] = pal[3 * p[0]], o[1] = pal[3 * p[0] + 1], o[2] = pal[3 * p[0] + 2];
    else if (ctype == 0 && b == 2) o[0] = o[1] = o[2] = p[0] ? 255 : p[1];
    else if (ctype == 0 || ctype == 4) o[0] = o[1] = o[2] = p[0];
    else o[0] = p[0], o[1] = p[b], o[2] = p[2 * b];
}

/* raw's rows (all there, their filter types checked) unfiltered (png_unfilter.c) and made RGB (sg_png_rgb), each
 * pass of an interlaced image to its pixels' places. Rows of 8-bit RGB are unfiltered straight into the output. */
static int sg_png_pixels(const uint8_t *d, const sg_png_layout *lay, const uint8_t *raw, const sg_png_rows *r,
                         sg_rgb_image *out, char *err, size_t errlen) {
    uint8_t pal[768];
    if (sg_png_palette(d, lay, pal, err, errlen)) return -1;
    int bpp = r->bpp_bits < 8 ? 1 : r->bpp_bits / 8, direct = !r->interlace && lay->ctype == 2 && lay->depth == 8;
    size_t most = sg_png_row_bytes(r, r->w);
    uint8_t *rows = direct ? NULL : malloc(2 * most + 1);
    if (!direct && !rows) return sg_pre_err(err, errlen, "PNG: out of memory");
    if (sg_pre_alloc(out, r->w, r->h, err, errlen)) return free(rows), -1;
    for (int p = 0; p < (r->interlace ? 7 : 1); p++) {
        int pw, ph;
        sg_png_pass(r, p, &pw, &ph);
        size_t rb = sg_png_row_bytes(r, pw);
        int x0 = r->interlace ? sg_adam7[p][0] : 0, y0 = r->interlace ? sg_adam7[p][1] : 0;
        int dx = r->interlace ? sg_adam7[p][2] : 1, dy = r->interlace ? sg_adam7[p][3] : 1;
        for (int y = 0; y < ph; y++, raw += rb + 1) {
            uint8_t *o = out->rgb + (size_t)(y0 + y * dy) * r->w * 3;
            uint8_t *cur = direct ? o : rows + (y & 1) * most;
            const uint8_t *up = !y ? NULL : direct ? o - rb : rows + ((y - 1) & 1) * most;
            sg_png_unfilter(cur, up, raw + 1, rb, bpp, raw[0]);
            if (direct) continue;
            if (dx == 1 && lay->depth == 8 && lay->ctype == 6) /* the common ones, without sg_png_rgb's choices */
                for (int x = 0; x < pw; x++)
                    o[3 * x] = cur[4 * x], o[3 * x + 1] = cur[4 * x + 1], o[3 * x + 2] = cur[4 * x + 2];
            else if (dx == 1 && lay->depth == 8 && (lay->ctype == 0 || lay->ctype == 4))
                for (int x = 0; x < pw; x++) o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = cur[x * bpp];
            else
                for (int x = 0; x < pw; x++)
                    sg_png_rgb(cur, x, lay->ctype, lay->depth, pal, o + 3 * (size_t)(x0 + x * dx));
        }
    }
    free(rows);
    return 0;
}

/* The image data decoded as Pillow decodes it (see the top), then the pixels (sg_png_pixels). */
static int sg_png_decode_data(const uint8_t *d, const sg_png_layout *lay, sg_rgb_image *out, char *err, size_t errlen) {
    const uint8_t *ihdr = d + lay->ihdr_off + 8;
    static const int chans[7] = {1, 0, 3, 1, 2, 0, 4};
    int depth = lay->depth, ctype = lay->ctype;
    uint32_t w = sg_be32(ihdr), h = sg_be32(ihdr + 4);
    if (ctype < 0 || ctype > 6 || !chans[ctype] || (depth != 1 && depth != 2 && depth != 4 && depth != 8 &&
        depth != 16) || (ctype == 3 && depth == 16) || (ctype != 0 && ctype != 3 && depth < 8))
        return sg_pre_err(err, errlen, "PNG: bit depth %d with colour type %d", depth, ctype);
    if (!w || !h || w > (1u << 24) || h > (1u << 24) || (1u << 30) / w / (ctype == 3 ? 4u : (uint32_t)chans[ctype]) < h)
        return sg_pre_err(err, errlen, "PNG: %u x %u is too large", w, h); /* the pixel cap refuses such sizes first */
    sg_png_rows r = {(int)w, (int)h, chans[ctype] * depth, ihdr[12] != 0};
    size_t n = sg_png_rows_size(&r), n_ends = 0;
    size_t *ends = malloc((lay->idat_total / 65536 + lay->n_idat / 2 + 1) * sizeof *ends);
    uint8_t *joined = lay->n_idat > 2 ? malloc(lay->idat_total) : NULL, *raw = malloc(n);
    if (!ends || !raw || (lay->n_idat > 2 && !joined)) {
        free(ends), free(raw), free(joined);
        return sg_pre_err(err, errlen, "PNG: out of memory");
    }
    /* Pillow reads the data 64 KiB at a time, never across a chunk's end (ImageFile.load, load_read). */
    for (size_t k = 0, at = 0; k < lay->n_idat; k += 2) {
        if (joined) memcpy(joined + at, d + lay->idat[k], lay->idat[k + 1]);
        for (size_t e = 65536; e < lay->idat[k + 1]; e += 65536) ends[n_ends++] = at + e;
        at += lay->idat[k + 1];
        if (lay->idat[k + 1]) ends[n_ends++] = at;
    }
    size_t got = 0;
    const uint8_t *z = joined ? joined : d + lay->idat[0];
    size_t last_in = 0, last_piece = lay->idat_total - lay->idat[lay->n_idat - 1];
    int rc = sg_zlib_inflate_png(z, lay->idat_total, ends, n_ends, raw, n, &got, &last_in), row[2], boundary = 0;
    free(ends), free(joined);
    if (rc >= 0 && lay->cut && last_in <= last_piece) /* the rows ended before the cut IDAT: load_end reads it */
        rc = sg_pre_err(err, errlen, "PNG: truncated file: an IDAT after the image data is cut short (Pillow "
                                     "refuses it)");
    else if (rc == SG_PNGZ_BROKEN)
        rc = sg_pre_err(err, errlen, "PNG: broken data stream: the image data's zlib stream is corrupt (Pillow "
                                     "refuses it)");
    else if (sg_png_rows_check(&r, raw, got, row, &boundary))
        rc = sg_pre_err(err, errlen, "PNG: row %d has filter type %d (Pillow refuses it)", row[0], row[1]);
    else if (rc == SG_PNGZ_SHORT || (rc == SG_PNGZ_END && !boundary))
        rc = sg_pre_err(err, errlen, "PNG: truncated file: the image data ends after %zu of its %zu bytes", got, n);
    else {
        memset(raw + got, 0, n - got); /* the stream ended at a row's end: Pillow leaves the rest 0 */
        rc = sg_png_pixels(d, lay, raw, &r, out, err, errlen);
    }
    free(raw);
    return rc;
}

int sg_pre_decode_png(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      int *orientation, char *err, size_t errlen) {
    pthread_once(&sg_crc_once, sg_crc_init);
    sg_png_layout lay = {.ctype = -1};
    sg_png_meta meta = {0};
    int rc = sg_png_walk(d, len, opts, &lay, &meta, err, errlen);
    /* IDATs with no bytes at all: Pillow's decoder gets no data and the file is truncated for it. */
    if (rc == 0 && lay.idat_total == 0)
        rc = sg_pre_err(err, errlen, "PNG: the image data is empty (truncated file)");
    *orientation = rc ? 1 : sg_png_meta_orientation(&meta, opts->pillow_major);
    sg_png_meta_free(&meta);
    if (!rc && *orientation == SG_EXIF_REFUSED && opts->exif_rotate) /* only exif_transpose calls getexif() */
        rc = sg_pre_err(err, errlen, "PNG: the EXIF data is not readable (bad hex, not TIFF, or text): Pillow's "
                                     "exif_transpose raises on it");
    if (*orientation == SG_EXIF_REFUSED) *orientation = 1;
    if (!rc) rc = sg_png_decode_data(d, &lay, out, err, errlen);
    free(lay.idat);
    return rc ? -1 : 0;
}
