/* preprocess/decode_bmp_rle.c — RLE8 and RLE4 BMPs (compression 1 and 2), decoded as Pillow 13 (or 12) decodes them.
 *
 * stb_image refuses BMP RLE, so this file reads the header, the palette and the run-length stream itself, with
 * the rules of Pillow's BmpImagePlugin (its BmpRleDecoder), which differ from Windows' in places:
 *   - The stream fills a flat run of w*h palette indices, in file row order: bottom-up, unless the height's top
 *     byte is 0xFF; then the height is 2^32 minus the field and rows run top-down (Windows forbids a top-down
 *     RLE bitmap; Pillow reads it).
 *   - An encoded run (count, index) is cut at the row's end; once a row is full, further runs are dropped until
 *     an end-of-line or a delta. RLE4 runs alternate the byte's high and low nibbles.
 *   - An absolute run (0, n >= 3, n indices) is not cut at the row's end: it spills into the next row. It is
 *     padded to an even file offset (counted from the start of the file, not of the pixel data).
 *   - End-of-line (0, 0) and delta (0, 2, dx, dy) leave index 0 in the pixels they skip: palette entry 0, not
 *     black. A delta moves dx + dy*w pixels forward in the flat run, wrapping across rows.
 *   - A stream that stops (end of file, end-of-bitmap (0, 1), a cut delta or absolute run) before every pixel
 *     was reached is refused ("not enough image data" in Pillow); data after the last pixel is never read.
 *   - Indices map to RGB through the palette: entries the file does not hold (a short palette, or one the file
 *     cuts) are black. A palette whose entries are all grey ramp values (entry i = (i,i,i), or black and white
 *     for two colours) makes the image "L" (index = grey level, even past the palette) or "1" (index 0 black,
 *     any other white). A palette of more than 256 entries is refused, as Pillow refuses it.
 *   - Pillow 12 (pillow_major 12) differs in three places: an absolute RLE4 run of an odd count n reads n/2 bytes,
 *     so it gives n-1 pixels (Pillow 13 reads the byte that holds the last one), and an absolute run is read whole
 *     even past the last pixel (a file cut inside it still decodes if the pixels it holds reach the last); a grey
 *     palette of one colour is "L", not "1"; and a black-and-white palette of two colours is refused (its RLE
 *     decoder asks for a raw mode Pillow 12 has no unpacker for).
 * The compression decides RLE8 or RLE4; the bits per pixel only decide the default palette size (1, 4 or 8;
 * other depths are refused). Every read is bounds-checked against len.
 */
#include "preprocess/internal.h"

#include <stdio.h>
#include <string.h>

int sg_pre_is_bmp_rle(const uint8_t *d, size_t len) {
    if (len < 34 || sg_le32(d + 14) < 40) return 0; /* an OS/2 core header has no compression field */
    uint32_t comp = sg_le32(d + 30);
    return comp == 1 || comp == 2;
}

/* --- the output: pixel n of the flat run, in file row order, lands in its image row ------------------------ */
typedef struct {
    uint8_t *rgb;         /* the w x h RGB image */
    uint64_t w, h;
    int top_down;         /* file row r is image row r (else h-1-r) */
    uint64_t n, total;    /* pixels written so far (Pillow's len(data)), w*h */
    uint64_t col;         /* n % w */
    uint8_t *q;           /* where pixel n goes; NULL once n == total */
    uint8_t lut[256][3];  /* index -> RGB */
} sg_rle_out;

static void sg_rle_seek_row(sg_rle_out *o) {
    uint64_t r = o->n / o->w;
    o->q = r < o->h ? o->rgb + (o->top_down ? r : o->h - 1 - r) * o->w * 3 : NULL;
}

/* Writes one index; callers never pass more than total - n pixels. */
static inline void sg_rle_put(sg_rle_out *o, uint8_t idx) {
    memcpy(o->q, o->lut[idx], 3);
    o->q += 3;
    o->n++;
    if (++o->col == o->w) {
        o->col = 0;
        sg_rle_seek_row(o);
    }
}

static void sg_rle_skip(sg_rle_out *o, uint64_t k) { /* pixels left as index 0 */
    uint64_t room = o->total - o->n;
    for (k = k < room ? k : room; k; k--) sg_rle_put(o, 0);
}

/* --- the palette: Pillow's P, L or 1 mode, as a lookup table ------------------------------------------------ */
/* pal holds palbytes bytes (BGRX entries) of a palette of `colors` entries. Returns 0, or -1 when Pillow (major
 * version p12 ? 12 : 13) refuses the palette. */
static int sg_rle_palette(sg_rle_out *o, const uint8_t *pal, uint64_t palbytes, uint64_t colors, int p12, char *err,
                          size_t errlen) {
    int grey = 1; /* Pillow drops a palette of grey ramp entries: entry i is (i,i,i) (i & 255 past 255), or
                   * entries 0 and 255 for two colours; an entry the file cuts short is not grey */
    for (uint64_t i = 0; i < colors && grey; i++) {
        uint8_t v = colors == 2 ? (uint8_t)(i ? 255 : 0) : (uint8_t)i;
        grey = 4 * i + 3 <= palbytes && pal[4 * i] == v && pal[4 * i + 1] == v && pal[4 * i + 2] == v;
    }
    if (grey && p12 && colors == 2)
        return sg_pre_err(err, errlen, "BMP: black-and-white RLE bitmap (Pillow 12: unknown raw mode for mode 1)");
    if (grey) {
        int one = p12 ? colors == 2 : colors <= 2; /* mode "1": any index but 0 is white; else "L" */
        for (int i = 0; i < 256; i++) {
            uint8_t v = one ? (uint8_t)(i ? 255 : 0) : (uint8_t)i;
            o->lut[i][0] = o->lut[i][1] = o->lut[i][2] = v;
        }
        return 0;
    }
    uint64_t size = palbytes / 4;
    if (size > 256)
        return sg_pre_err(err, errlen, "BMP: palette of %llu colours for an RLE bitmap (Pillow: invalid palette size, "
                          "at most 256)", (unsigned long long)size);
    memset(o->lut, 0, sizeof o->lut); /* entries past the palette are black, as in Pillow's P -> RGB */
    for (uint64_t i = 0; i < size; i++) {
        o->lut[i][0] = pal[4 * i + 2];
        o->lut[i][1] = pal[4 * i + 1];
        o->lut[i][2] = pal[4 * i];
    }
    return 0;
}

/* --- the stream ----------------------------------------------------------------------------------------------- */
enum { SG_RLE_FULL, SG_RLE_RAN_OUT, SG_RLE_END_OF_BITMAP };

/* Runs the RLE8 / RLE4 stream from file offset p until every pixel is written or the stream stops, as Pillow 13
 * (p12: 12) reads it. *dropped counts the pixels of encoded runs cut at a row's end. Returns why it stopped. */
static int sg_rle_run(sg_rle_out *o, const uint8_t *d, size_t len, uint64_t p, int rle4, int p12, uint64_t *dropped) {
    uint64_t x = 0; /* Pillow's x: the column, or w and beyond once a row is full or an absolute run spilled */
    while (o->n < o->total) {
        if (p + 2 > len) return SG_RLE_RAN_OUT;
        uint32_t count = d[p], b = d[p + 1];
        p += 2;
        if (count) { /* encoded run: cut at the row's end */
            uint64_t k = x + count > o->w ? (x < o->w ? o->w - x : 0) : count;
            *dropped += count - k;
            for (uint64_t i = 0; i < k; i++) sg_rle_put(o, rle4 ? (uint8_t)(i & 1 ? b & 15 : b >> 4) : (uint8_t)b);
            x += k;
        } else if (b == 0) { /* end of line: the rest of the row stays index 0 */
            sg_rle_skip(o, o->col ? o->w - o->col : 0);
            x = 0;
        } else if (b == 1) { /* end of bitmap */
            return SG_RLE_END_OF_BITMAP;
        } else if (b == 2) { /* delta: dx right and dy rows on, in the flat run */
            if (p + 2 > len) return SG_RLE_RAN_OUT;
            sg_rle_skip(o, d[p] + (uint64_t)d[p + 1] * o->w);
            p += 2;
            x = o->col;
        } else { /* absolute run of b indices, not cut at the row's end (Pillow 12: of b bytes, or b/2 in RLE4) */
            uint64_t room = o->total - o->n, want = p12 ? (rle4 ? b & ~1u : b) : b < room ? b : room;
            uint64_t nbytes = rle4 ? (want + 1) / 2 : want, avail = p < len ? len - p : 0;
            if (want > room) want = room; /* Pillow 12's pixels past the last one are never used */
            if (avail > nbytes) avail = nbytes;
            for (uint64_t i = 0, k = 0; i < avail; i++) { /* k: pixels written, at most want */
                uint8_t v = d[p + i];
                if (!rle4) {
                    if (k++ < want) sg_rle_put(o, v);
                    continue;
                }
                if (k++ < want) sg_rle_put(o, v >> 4);
                if (k++ < want) sg_rle_put(o, v & 15);
            }
            p += avail;
            if (avail < nbytes) return o->n == o->total ? SG_RLE_FULL : SG_RLE_RAN_OUT;
            if (o->n == o->total) break;
            x += b;
            p += p & 1; /* to an even offset in the file */
        }
    }
    return SG_RLE_FULL;
}

int sg_pre_decode_bmp_rle(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                          char *err, size_t errlen) {
    uint32_t hsize = sg_le32(d + 14), comp = sg_le32(d + 30);
    const char *name = comp == 1 ? "RLE8" : "RLE4";
    if (!sg_pre_bmp_header_known(hsize))
        return sg_pre_err(err, errlen, "BMP: unsupported header size %u (Pillow reads RLE after a header of 40, 52, 56, "
                          "64, 108 or 124 bytes)", hsize);
    if (len < 14 + (uint64_t)hsize)
        return sg_pre_err(err, errlen, "BMP: truncated header: %zu bytes, the %u-byte header ends at %u", len, hsize,
                          14 + hsize);
    uint64_t w = sg_le32(d + 18), hfield = sg_le32(d + 22);
    int top_down = d[25] == 0xFF; /* Pillow's test for a negative height: its top byte only */
    uint64_t h = top_down ? (1ull << 32) - hfield : hfield;
    uint32_t bits = sg_le16(d + 28);
    if (bits != 1 && bits != 4 && bits != 8)
        return sg_pre_err(err, errlen, "BMP: %s data in a %u-bit bitmap (Pillow reads RLE in 1-, 4- and 8-bit bitmaps "
                          "only)", name, bits);
    if (sg_pre_check_dims("BMP", w, h, opts->max_pixels, err, errlen)) return -1;
    uint64_t colors = sg_le32(d + 46);
    if (colors == 0) colors = 1ull << bits;
    if (colors > 65536)
        return sg_pre_err(err, errlen, "BMP: palette of %llu colours (Pillow reads at most 65536)",
                          (unsigned long long)colors);

    /* The palette follows the header, whatever the data offset says; the file may cut it short. */
    uint64_t pal_at = 14 + (uint64_t)hsize, palbytes = len - pal_at;
    if (palbytes > 4 * colors) palbytes = 4 * colors;
    sg_rle_out o;
    int p12 = opts->pillow_major == 12;
    if (sg_rle_palette(&o, d + pal_at, palbytes, colors, p12, err, errlen)) return -1;
    /* Pillow's data offset: bfOffBits, except that one pointing at the palette is moved past it, and 0 means
     * right after the palette as read */
    uint64_t off = sg_le32(d + 10);
    if (off == pal_at) off += 4 * colors;
    else if (off == 0) off = pal_at + palbytes;

    if (sg_pre_alloc(out, (int)w, (int)h, err, errlen)) return -1;
    o.rgb = out->rgb, o.w = w, o.h = h, o.top_down = top_down;
    o.n = 0, o.total = w * h, o.col = 0;
    sg_rle_seek_row(&o);
    uint64_t dropped = 0;
    int why = sg_rle_run(&o, d, len, off, comp == 2, p12, &dropped);
    if (why == SG_RLE_FULL) return 0;
    char cut[160] = "";
    if (dropped)
        snprintf(cut, sizeof cut, "; %llu pixels of runs past a row's end were dropped, as Pillow drops them",
                 (unsigned long long)dropped);
    if (why == SG_RLE_END_OF_BITMAP)
        return sg_pre_err(err, errlen, "BMP: %s end-of-bitmap after %llu of %llux%llu pixels: Pillow refuses a bitmap "
                          "that leaves pixels unwritten (not enough image data)%s", name, (unsigned long long)o.n,
                          (unsigned long long)w, (unsigned long long)h, cut);
    return sg_pre_err(err, errlen, "BMP: %s data is truncated: it ends after %llu of %llux%llu pixels (Pillow: not "
                      "enough image data)%s", name, (unsigned long long)o.n, (unsigned long long)w,
                      (unsigned long long)h, cut);
}
