/* preprocess/decode_gif.c — the first frame of a GIF, as Pillow's Image.open(f).convert("RGB") shows it.
 *
 * stb_image composites GIF frames to RGBA and paints transparent pixels black, while Pillow keeps frame 0
 * in mode P (or L without a palette) and convert("RGB") ignores transparency. So this file decodes the
 * palette indices itself (LZW, interlace) and applies Pillow's frame-0 rules (GifImagePlugin._seek and
 * load_prepare): the canvas is the logical screen, grown to the first frame's right and bottom edges when the
 * frame extends past it (a 0x0 screen too; the pixel cap applies to the grown size, as Pillow's
 * decompression-bomb check does), pre-filled with the transparency index when the frame has one and with
 * index 0 otherwise; the frame's indices are drawn over it verbatim (transparent ones included); then each
 * index is looked up in the frame's palette (local, else global). Indices past the palette's entries are
 * black; without a palette the index is a grey level (mode L). A palette whose entries are all i -> (i,i,i) is
 * dropped, as Pillow drops it: a global one leaves no palette, a local one leaves the global one. A frame of zero
 * width or height is refused (Pillow 12.3 and 13: tile cannot extend outside image; 12.0 decoded one of width 0 at
 * x 0 as the whole image).
 * Blocks before the first frame are walked as GifImagePlugin._seek walks them: a byte that is neither '!', ','
 * nor ';' is passed over; after an extension's label one sub-block is read ("data()": a short one at the end of
 * the file is kept as it is), and for a NETSCAPE2.0 application block one more; then sub-blocks are skipped up
 * to a zero-length one. So when that first (or NETSCAPE's second) sub-block is the terminator itself, the
 * bytes after it are read as further sub-blocks, as Pillow reads them. A comment's sub-blocks are read up to
 * the first empty one. A Graphic Control Extension whose first sub-block is shorter than 3 bytes, or than 4
 * with the transparency flag, is refused (Pillow: IndexError / struct.error, "cannot identify image file");
 * one without the flag leaves an earlier one's transparency index in force.
 * LZW (libImaging/GifDecode.c): minimum code sizes 0..12 are accepted, larger ones refused (Pillow: decoder
 * error at load). Codes below the clear code are literals whose pixel is the code's low byte (sizes 9..12);
 * the first code after a clear (or at the start) must be a literal; a code past the next free entry, or a
 * string that reaches an entry >= 4096 or is longer than 4096, is broken LZW data. The table stops growing at
 * 4096 entries (no clear needed: the codes stay 12 bits). Codes are read until the frame's last pixel is
 * written and never past it. Pillow feeds the decoder the file in reads of 64 KiB from the frame's data on;
 * the decoder stops at an end code or where the next sub-block is not yet whole, and the next read must
 * bring more bytes, else the file is truncated. So an end code before the last pixel is passed over only
 * while some of the file is still unread, and a frame whose data stops before its last pixel is refused
 * (Pillow: image file is truncated).
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

enum { SG_GIF_READ = 65536 }; /* ImageFile.MAXBLOCK: the bytes of each read Pillow hands its decoder */

typedef struct sg_gif_reader { /* the image data sub-blocks, read as one bit stream */
    const uint8_t *d;
    size_t len, p;     /* p: next byte of the file */
    size_t avail;      /* end of the bytes Pillow has read so far */
    size_t block_left; /* bytes left in the current sub-block */
    uint32_t bits;
    int nbits;
} sg_gif_reader;

/* Next code of `size` bits (LSB first), or -2 when the next sub-block is not whole in the bytes read so far. */
static int sg_gif_code(sg_gif_reader *r, int size) {
    while (r->nbits < size) {
        if (r->block_left == 0) { /* a new sub-block (one of length 0 is passed over, as Pillow does) */
            if (r->p >= r->avail || r->avail - r->p - 1 < r->d[r->p]) return -2;
            r->block_left = r->d[r->p++];
            continue;
        }
        r->bits |= (uint32_t)r->d[r->p++] << r->nbits;
        r->nbits += 8;
        r->block_left--;
    }
    int c = (int)(r->bits & ((1u << size) - 1));
    r->bits >>= size;
    r->nbits -= size;
    return c;
}

/* Pillow's decoder returned to ImageFile.load, which reads up to 64 KiB more: 0, or -1 when none is left. */
static int sg_gif_read_more(sg_gif_reader *r) {
    if (r->avail == r->len) return -1;
    r->avail = r->len - r->avail < SG_GIF_READ ? r->len : r->avail + SG_GIF_READ;
    return 0;
}

/* Decodes npix LZW-coded indices into idx (row order of the file). Returns 0, or -1 with a reason. */
static int sg_gif_lzw(sg_gif_reader *r, int min_size, uint8_t *idx, size_t npix, char *err, size_t errlen) {
    enum { MAXC = 4096 }; /* GifDecode.c's GIFTABLE and GIFBUFFER */
    static const char *broken = "GIF: broken LZW data in the first frame";
    uint16_t link[MAXC] = {0};
    uint8_t data[MAXC] = {0}, stack[MAXC];
    int clear = 1 << min_size, eoi = clear + 1, size = min_size + 1, next = clear + 2, first = 1, lastcode = 0;
    uint8_t lastdata = 0;
    size_t n = 0;
    while (n < npix) {
        int c = sg_gif_code(r, size);
        if (c == -2 || c == eoi) { /* the decoder returns; ImageFile.load reads on */
            if (sg_gif_read_more(r))
                return sg_pre_err(err, errlen, "GIF: the first frame's data stops before its last pixel (Pillow: "
                                  "image file is truncated)");
            continue;
        }
        if (c == clear) {
            size = min_size + 1, next = clear + 2, first = 1;
            continue;
        }
        if (first) { /* the first code after a clear (or at the start) is a literal */
            if (c > clear) return sg_pre_err(err, errlen, "%s: code %d after a clear", broken, c);
            lastdata = (uint8_t)c, lastcode = c, first = 0;
            idx[n++] = lastdata;
            continue;
        }
        int thiscode = c, sp = 0;
        if (c > next) return sg_pre_err(err, errlen, "%s: code %d, at most %d expected", broken, c, next);
        if (c == next) { /* KwKwK: the previous string plus its own first byte */
            stack[sp++] = lastdata;
            c = lastcode;
        }
        while (c >= clear) {
            if (sp >= MAXC || c >= MAXC) return sg_pre_err(err, errlen, "%s: a string past the table", broken);
            stack[sp++] = data[c];
            c = link[c];
        }
        lastdata = (uint8_t)c;
        if (next < MAXC) {
            data[next] = (uint8_t)c;
            link[next] = (uint16_t)lastcode;
            if (next == (1 << size) - 1 && size < 12) size++;
            next++;
        }
        lastcode = thiscode;
        idx[n++] = lastdata;
        while (sp > 0 && n < npix) idx[n++] = stack[--sp];
    }
    return 0;
}

/* GifImageFile.data(): the length of the sub-block at *p, moved past (short at the end of the file), or -1
 * (Pillow: None) at the end of the file or for a zero-length one. */
static long sg_gif_data(const uint8_t *d, size_t len, size_t *p) {
    if (*p >= len) return -1;
    size_t n = d[(*p)++];
    if (n == 0) return -1;
    if (n > len - *p) n = len - *p;
    *p += n;
    return (long)n;
}

/* Pillow's _is_palette_needed, negated: every entry i is (i, i, i). */
static int sg_gif_grey_ramp(const uint8_t *pal, int n) {
    for (int i = 0; i < n; i++)
        if (pal[3 * i] != i || pal[3 * i + 1] != i || pal[3 * i + 2] != i) return 0;
    return 1;
}

int sg_pre_decode_gif(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      char *err, size_t errlen) {
    if (len < 13) return sg_pre_err(err, errlen, "GIF: %zu bytes, too short for the header (13)", len);
    int sw = d[6] | d[7] << 8, sh = d[8] | d[9] << 8, flags = d[10];
    /* a screen over the cap is refused at once; an empty one may still grow to the first frame's extent */
    if ((uint64_t)sw * sh > opts->max_pixels &&
        sg_pre_check_dims("GIF", (uint64_t)sw, (uint64_t)sh, opts->max_pixels, err, errlen))
        return -1;
    size_t p = 13;
    const uint8_t *gpal = NULL, *pal = NULL;
    int gpal_n = 0, pal_n = 0, transparency = -1;
    if (flags & 0x80) {
        gpal_n = 2 << (flags & 7);
        if (len - p < (size_t)gpal_n * 3) return sg_pre_err(err, errlen, "GIF: truncated global colour table");
        gpal = d + p;
        p += (size_t)gpal_n * 3;
        if (sg_gif_grey_ramp(gpal, gpal_n)) gpal = NULL, gpal_n = 0;
    }
    for (;;) { /* the blocks before the first frame, walked as GifImagePlugin._seek walks them */
        if (p >= len) return sg_pre_err(err, errlen, "GIF: no image in the file (truncated at offset %zu)", p);
        uint8_t b = d[p++];
        if (b == 0x3B) return sg_pre_err(err, errlen, "GIF: the file has no image frame");
        if (b == 0x2C) break;
        if (b != 0x21) continue; /* Pillow passes over any other byte */
        if (p >= len) return sg_pre_err(err, errlen, "GIF: truncated extension at offset %zu", p);
        uint8_t label = d[p++];
        size_t at = p + 1; /* the first sub-block's bytes */
        long n = sg_gif_data(d, len, &p);
        if (label == 0xF9 && n >= 0) { /* Graphic Control Extension: packed flags, delay, transparent index */
            if (n < 3 || ((d[at] & 1) && n < 4))
                return sg_pre_err(err, errlen, "GIF: graphic control block of %ld bytes (Pillow: cannot identify "
                                  "image file)", n);
            if (d[at] & 1) transparency = d[at + 3];
        } else if (label == 0xFE) { /* comment: sub-blocks up to the first empty one */
            while (n > 0) n = sg_gif_data(d, len, &p);
            continue;
        } else if (label == 0xFF && n >= 11 && memcmp(d + at, "NETSCAPE2.0", 11) == 0) {
            sg_gif_data(d, len, &p); /* the loop count's sub-block, or the terminator */
        }
        while (sg_gif_data(d, len, &p) > 0) {
        }
    }
    if (len - p < 9) return sg_pre_err(err, errlen, "GIF: truncated image descriptor");
    int fx = d[p] | d[p + 1] << 8, fy = d[p + 2] | d[p + 3] << 8, fw = d[p + 4] | d[p + 5] << 8,
        fh = d[p + 6] | d[p + 7] << 8, fflags = d[p + 8];
    p += 9;
    if (fx + fw > sw) sw = fx + fw; /* Pillow grows the image to the frame */
    if (fy + fh > sh) sh = fy + fh;
    if (sg_pre_check_dims("GIF", (uint64_t)sw, (uint64_t)sh, opts->max_pixels, err, errlen)) return -1;
    if (fw == 0 || fh == 0)
        return sg_pre_err(err, errlen, "GIF: first frame of %dx%d pixels at (%d,%d) is empty (Pillow: tile cannot "
                          "extend outside image)", fw, fh, fx, fy);
    if (fflags & 0x80) {
        pal_n = 2 << (fflags & 7);
        if (len - p < (size_t)pal_n * 3) return sg_pre_err(err, errlen, "GIF: truncated local colour table");
        pal = d + p;
        p += (size_t)pal_n * 3;
        if (sg_gif_grey_ramp(pal, pal_n)) pal = gpal, pal_n = gpal_n; /* Pillow: mode L, but the global palette
                                                                         * stays the image's and is applied */
    } else {
        pal = gpal, pal_n = gpal_n;
    }
    if (p >= len) return sg_pre_err(err, errlen, "GIF: truncated before the LZW code size");
    int min_size = d[p++];
    if (min_size > 12) return sg_pre_err(err, errlen, "GIF: LZW minimum code size %d, expected 0..12", min_size);

    size_t npix = (size_t)sw * sh, fpix = (size_t)fw * fh;
    uint8_t *canvas = malloc(npix ? npix : 1), *idx = malloc(fpix ? fpix : 1);
    if (!canvas || !idx) {
        free(canvas), free(idx);
        return sg_pre_err(err, errlen, "GIF: out of memory for %dx%d", sw, sh);
    }
    memset(canvas, transparency >= 0 ? transparency : 0, npix);
    sg_gif_reader r = {.d = d, .len = len, .p = p, .avail = len - p < SG_GIF_READ ? len : p + SG_GIF_READ};
    if (sg_gif_lzw(&r, min_size, idx, fpix, err, errlen)) {
        free(canvas), free(idx);
        return -1;
    }
    /* rows in file order; interlaced frames store rows 0,8,16.. then 4,12.. then 2,6.. then 1,3.. */
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    size_t k = 0;
    int pass = 0, row = 0;
    for (int i = 0; i < fh; i++) {
        int y = i;
        if (fflags & 0x40) {
            while (row >= fh) pass++, row = start[pass];
            y = row;
            row += step[pass];
        }
        memcpy(canvas + (size_t)(fy + y) * sw + fx, idx + k, (size_t)fw);
        k += (size_t)fw;
    }
    free(idx);
    if (sg_pre_alloc(out, sw, sh, err, errlen)) {
        free(canvas);
        return -1;
    }
    for (size_t i = 0; i < npix; i++) {
        uint8_t *o = out->rgb + 3 * i;
        int v = canvas[i];
        if (!pal) o[0] = o[1] = o[2] = (uint8_t)v;
        else if (v < pal_n) o[0] = pal[3 * v], o[1] = pal[3 * v + 1], o[2] = pal[3 * v + 2];
        else o[0] = o[1] = o[2] = 0;
    }
    free(canvas);
    return 0;
}
