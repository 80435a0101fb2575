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
 * dropped, as Pillow drops it: a global one leaves no palette, a local one leaves the global one. A frame of zero width or height is refused (Pillow: tile cannot extend outside
 * image).
 * Broken LZW data is an error. Pillow's GifDecode.c reads codes until the frame's last pixel is written and
 * never past it: an end code before then is passed over, so is a zero-length block (the frame's terminator),
 * and the bytes that follow are read on as more sub-blocks; a sub-block is only started when the file holds it
 * whole. So a frame whose data stops before its last pixel is refused (Pillow: image file is truncated), and
 * what follows its last pixel is never read.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct sg_gif_reader { /* the image data sub-blocks, read as one bit stream */
    const uint8_t *d;
    size_t len, p;     /* p: next byte of the file */
    size_t block_left; /* bytes left in the current sub-block */
    uint32_t bits;
    int nbits;
} sg_gif_reader;

/* Next code of `size` bits (LSB first), or -2 when the file ends first (or holds the next sub-block only in part). */
static int sg_gif_code(sg_gif_reader *r, int size) {
    while (r->nbits < size) {
        if (r->block_left == 0) { /* a new sub-block (one of length 0 is passed over, as Pillow does) */
            if (r->p >= r->len || r->len - r->p - 1 < r->d[r->p]) return -2;
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

/* Decodes fw*fh LZW-coded indices into idx (row order of the file). Returns the number of pixels written,
 * or -1 with a reason. */
static long sg_gif_lzw(sg_gif_reader *r, int min_size, uint8_t *idx, size_t npix, char *err, size_t errlen) {
    enum { MAXC = 4096 }; /* GIF codes are at most 12 bits */
    static const char *fmt_trunc = "GIF: the first frame's data stops before its last pixel (Pillow: image file is truncated)";
    uint16_t prefix[MAXC];
    uint8_t suffix[MAXC], first[MAXC], stack[MAXC];
    int clear = 1 << min_size, eoi = clear + 1, size = min_size + 1, next = clear + 2, prev = -1;
    for (int i = 0; i < clear; i++) suffix[i] = first[i] = (uint8_t)i, prefix[i] = 0;
    size_t n = 0;
    while (n < npix) {
        int c = sg_gif_code(r, size);
        if (c == -2) return sg_pre_err(err, errlen, "%s", fmt_trunc);
        if (c == eoi) continue; /* Pillow reads on */
        if (c == clear) {
            size = min_size + 1, next = clear + 2, prev = -1;
            continue;
        }
        if (c > next || (c == next && prev < 0))
            return sg_pre_err(err, errlen, "GIF: broken LZW data in the first frame: code %d, at most %d expected", c, prev < 0 ? next - 1 : next);
        int code = c, sp = 0;
        if (c == next) { /* KwKwK: the string of prev plus its own first byte */
            stack[sp++] = first[prev];
            code = prev;
        }
        while (code >= clear) {
            stack[sp++] = suffix[code];
            code = prefix[code];
        }
        stack[sp++] = (uint8_t)code;
        if (prev >= 0 && next < MAXC) {
            prefix[next] = (uint16_t)prev;
            suffix[next] = (uint8_t)code;
            first[next] = first[prev];
            next++;
            if (next == (1 << size) && size < 12) size++;
        }
        while (sp > 0 && n < npix) idx[n++] = stack[--sp];
        prev = c;
    }
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
    for (;;) {
        if (p >= len) return sg_pre_err(err, errlen, "GIF: no image in the file (truncated at offset %zu)", p);
        uint8_t b = d[p++];
        if (b == 0x3B) return sg_pre_err(err, errlen, "GIF: the file has no image frame");
        if (b == 0x21) { /* extension: label, then sub-blocks */
            if (p >= len) return sg_pre_err(err, errlen, "GIF: truncated extension at offset %zu", p);
            uint8_t label = d[p++];
            int first_block = 1;
            for (;;) {
                if (p >= len) return sg_pre_err(err, errlen, "GIF: truncated extension at offset %zu", p);
                size_t n = d[p++];
                if (n == 0) break;
                if (len - p < n) return sg_pre_err(err, errlen, "GIF: truncated extension at offset %zu", p);
                /* Graphic Control Extension: packed flags, delay, transparent index */
                if (label == 0xF9 && first_block && n >= 4) transparency = (d[p] & 1) ? d[p + 3] : -1;
                first_block = 0;
                p += n;
            }
            continue;
        }
        if (b != 0x2C) return sg_pre_err(err, errlen, "GIF: unknown block 0x%02x at offset %zu", b, p - 1);
        break;
    }
    if (len - p < 10) return sg_pre_err(err, errlen, "GIF: truncated image descriptor");
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
    if (min_size < 1 || min_size > 11) return sg_pre_err(err, errlen, "GIF: LZW minimum code size %d, expected 1..11", min_size);

    size_t npix = (size_t)sw * sh, fpix = (size_t)fw * fh;
    uint8_t *canvas = malloc(npix ? npix : 1), *idx = malloc(fpix ? fpix : 1);
    if (!canvas || !idx) {
        free(canvas), free(idx);
        return sg_pre_err(err, errlen, "GIF: out of memory for %dx%d", sw, sh);
    }
    memset(canvas, transparency >= 0 ? transparency : 0, npix);
    sg_gif_reader r = {.d = d, .len = len, .p = p};
    long got = sg_gif_lzw(&r, min_size, idx, fpix, err, errlen);
    if (got < 0) {
        free(canvas), free(idx);
        return -1;
    }
    /* rows in file order; interlaced frames store rows 0,8,16.. then 4,12.. then 2,6.. then 1,3.. */
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    size_t k = 0;
    int pass = 0, row = 0;
    for (int i = 0; i < fh && k < (size_t)got; i++) {
        int y = i;
        if (fflags & 0x40) {
            while (row >= fh) pass++, row = start[pass];
            y = row;
            row += step[pass];
        }
        size_t m = (size_t)got - k < (size_t)fw ? (size_t)got - k : (size_t)fw;
        memcpy(canvas + (size_t)(fy + y) * sw + fx, idx + k, m);
        k += m;
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
