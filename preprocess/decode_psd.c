/* preprocess/decode_psd.c — Photoshop (PSD) composite images, decoded as Pillow 13 (and 12) decodes them.
 *
 * stb_image read only RGB PSDs and removed a white matte where alpha was partial; Pillow's PsdImagePlugin reads
 * more modes and convert("RGB") just drops alpha. This file follows PsdImagePlugin, ImageFile.load and the raw /
 * PackBits decoders step by step, quirks included:
 *   - Header: version 1 only (2 is PSB). (colour mode, bits) picks Pillow's mode and the channels it reads:
 *     bitmap 1-bit -> "1" (a set bit is white: Pillow does not invert it), grey / bitmap / multichannel /
 *     duotone 8-bit -> "L" (channel 0), indexed 8-bit -> "P", RGB 8-bit -> "RGB" (4 channels: "RGBA", alpha
 *     dropped by convert), CMYK 8-bit -> "CMYK" (each channel inverted, then Pillow's cmyk2rgb), Lab 8-bit ->
 *     "LAB" (refused here: Pillow converts it through LittleCMS). Anything else (16 or 32 bits, duotone 16,
 *     ...) Pillow cannot open. Fewer channels than the mode needs: refused; more: the extra ones are never read.
 *   - Indexed: the palette is the colour mode data when it is exactly 768 bytes (256 R, 256 G, 256 B); with any
 *     other size Pillow has no palette and every pixel is black.
 *   - The sections are read as Pillow reads them, with Python's short reads: the image resources are walked
 *     entry by entry (an entry running past the section's end moves where the next section is read), the
 *     layer section is skipped by its length (even past the end of the file) after reading 4 bytes of it; its
 *     layer records are never parsed (Pillow 12 and 13 read them only when asked for the layers, not to open or
 *     convert, so a broken record does not refuse the file).
 *   - Compression 0 (raw): channel c starts c*w*h bytes after the compression field. 1 (PackBits): a table of
 *     row byte counts for the mode's channels only (an "L" file with an alpha channel has a table twice as
 *     long: Pillow then reads channel 0 from the table's second half), channel c starting after the counts of
 *     the channels before it. Each channel is one PackBits stream over all its rows, the counts aside: a run
 *     past a row's end is cut, 0x80 is skipped, and the stream may run on into the next channel's bytes. Other
 *     compressions (ZIP): refused ("cannot load this image").
 *   - A channel whose data the file ends before is refused (Pillow: image file is truncated; its default
 *     LOAD_TRUNCATED_IMAGES is off, as in HF's loader), including an alpha channel convert would drop.
 * PackBits files are checked whole before the pixels are allocated, so a huge declared size with little data
 * is refused without allocating it. Every read is bounds-checked against len.
 */
#include "preprocess/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- Python's file reads: read(n) gives up to n bytes; a seek may put the position past the end ------------- */
typedef struct {
    const uint8_t *d;
    uint64_t len, p;
} sg_psd_file;

/* read(n): returns how many bytes came (fewer at the end) and where they are */
static uint64_t sg_psd_read(sg_psd_file *f, uint64_t n, const uint8_t **at) {
    uint64_t avail = f->p < f->len ? f->len - f->p : 0;
    if (n > avail) n = avail;
    if (at) *at = n ? f->d + f->p : NULL;
    f->p += n;
    return n;
}

/* i16(read(2)) / i32(read(4)) / i8(read(1)): Pillow fails (struct.error, IndexError) when fewer bytes come */
static int sg_psd_int(sg_psd_file *f, int nbytes, uint32_t *v) {
    const uint8_t *at;
    if (sg_psd_read(f, (uint64_t)nbytes, &at) < (uint64_t)nbytes) return -1;
    *v = nbytes == 4 ? sg_be32(at) : nbytes == 2 ? sg_be16(at) : at[0];
    return 0;
}

/* --- the mode --------------------------------------------------------------------------------------------- */
enum { SG_PSD_1, SG_PSD_L, SG_PSD_P, SG_PSD_RGB, SG_PSD_CMYK, SG_PSD_LAB };

/* Pillow's MODES: (colour mode, bits) -> mode and the channels it needs; -1 when Pillow has none */
static int sg_psd_mode(uint32_t mode, uint32_t bits, uint32_t *need) {
    *need = 1;
    if (bits == 1) return mode == 0 ? SG_PSD_1 : -1;
    if (bits != 8) return -1;
    switch (mode) {
    case 0: case 1: case 7: case 8: return SG_PSD_L; /* bitmap at 8 bits, grey, multichannel, duotone */
    case 2: return SG_PSD_P;
    case 3: *need = 3; return SG_PSD_RGB;
    case 4: *need = 4; return SG_PSD_CMYK;
    case 9: *need = 3; return SG_PSD_LAB;
    default: return -1;
    }
}

static const char *sg_psd_mode_name(uint32_t mode) {
    static const char *names[] = {"bitmap", "greyscale", "indexed", "RGB", "CMYK", "mode 5", "mode 6",
                                  "multichannel", "duotone", "Lab"};
    return mode < 10 ? names[mode] : "an unknown colour mode";
}

/* --- the pixels: a decoded row of channel c lands in the RGB image ------------------------------------------ */
typedef struct {
    uint8_t *rgb;        /* w x h RGB; NULL while only checking that the data is complete */
    uint64_t w, h, rowbytes;
    int kind;
    uint8_t lut[256][3]; /* "P": index -> RGB (all black without a 768-byte palette) */
} sg_psd_out;

static void sg_psd_row(sg_psd_out *o, uint32_t c, uint64_t y, const uint8_t *row) {
    if (!o->rgb) return;
    uint8_t *q = o->rgb + y * o->w * 3;
    uint64_t w = o->w;
    switch (o->kind) {
    case SG_PSD_1: /* rawmode "1": most significant bit first, a set bit white */
        for (uint64_t x = 0; x < w; x++, q += 3) q[0] = q[1] = q[2] = (row[x >> 3] >> (7 - (x & 7)) & 1) ? 255 : 0;
        break;
    case SG_PSD_L:
        for (uint64_t x = 0; x < w; x++, q += 3) q[0] = q[1] = q[2] = row[x];
        break;
    case SG_PSD_P:
        for (uint64_t x = 0; x < w; x++, q += 3) memcpy(q, o->lut[row[x]], 3);
        break;
    case SG_PSD_RGB: /* channel 3 ("RGBA"'s alpha) is dropped by convert("RGB") */
        if (c < 3)
            for (uint64_t x = 0; x < w; x++) q[3 * x + c] = row[x];
        break;
    case SG_PSD_CMYK: /* rawmodes "C;I" .. "K;I" store 255 - v; K comes last and runs Pillow's cmyk2rgb */
        if (c < 3) {
            for (uint64_t x = 0; x < w; x++) q[3 * x + c] = (uint8_t)(255 - row[x]);
            break;
        }
        for (uint64_t x = 0; x < w; x++, q += 3) /* row[x] is 255 - K, K being 255 - v */
            for (int k = 0; k < 3; k++) q[k] = sg_cmyk2rgb_channel(q[k], row[x]);
        break;
    }
}

/* Raw channel c at offset off: rowbytes * h bytes. */
static int sg_psd_raw(sg_psd_out *o, const uint8_t *d, size_t len, uint32_t c, uint64_t off, char *err,
                      size_t errlen) {
    uint64_t need = o->rowbytes * o->h;
    if (off > len || len - off < need)
        return sg_pre_err(err, errlen, "PSD: the file is truncated: channel %u needs %llu bytes at offset %llu, the "
                          "file has %zu (Pillow: image file is truncated)", c, (unsigned long long)need,
                          (unsigned long long)off, len);
    for (uint64_t y = 0; y < o->h; y++) sg_psd_row(o, c, y, d + off + y * o->rowbytes);
    return 0;
}

/* PackBits channel c: one stream from off until h rows are full (Pillow's ImagingPackbitsDecode); row is a
 * rowbytes buffer. */
static int sg_psd_packbits(sg_psd_out *o, const uint8_t *d, size_t len, uint32_t c, uint64_t off, uint8_t *row,
                           char *err, size_t errlen) {
    uint64_t p = off, x = 0, y = 0, n = o->rowbytes;
    while (y < o->h) {
        if (p >= len) break;
        uint32_t b = d[p];
        if (b == 0x80) { /* no-op */
            p++;
            continue;
        }
        if (b & 0x80) { /* run: 257 - b copies of the next byte, cut at the row's end */
            if (len - p < 2) break;
            uint64_t k = 257 - b;
            if (k > n - x) k = n - x;
            memset(row + x, d[p + 1], k);
            x += k;
            p += 2;
        } else { /* literal: b + 1 bytes, cut at the row's end */
            if (len - p < b + 2ull) break;
            uint64_t k = b + 1ull;
            if (k > n - x) k = n - x;
            memcpy(row + x, d + p + 1, k);
            x += k;
            p += b + 2ull;
        }
        if (x == n) {
            sg_psd_row(o, c, y++, row);
            x = 0;
        }
    }
    if (y == o->h) return 0;
    return sg_pre_err(err, errlen, "PSD: the file is truncated: the PackBits data of channel %u ends after %llu of %llu "
                      "rows (Pillow: image file is truncated)", c, (unsigned long long)y, (unsigned long long)o->h);
}

int sg_pre_decode_psd(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out, char *err,
                      size_t errlen) {
    if (len < 26) return sg_pre_err(err, errlen, "PSD: truncated header (%zu bytes of 26)", len);
    uint32_t version = sg_be16(d + 4), psd_channels = sg_be16(d + 12), bits = sg_be16(d + 22), mode = sg_be16(d + 24);
    uint64_t h = sg_be32(d + 14), w = sg_be32(d + 18);
    if (version != 1)
        return sg_pre_err(err, errlen, "PSD: version %u is not supported (Pillow reads version 1; 2 is PSB, the large "
                          "document format)", version);
    uint32_t channels;
    int kind = sg_psd_mode(mode, bits, &channels);
    if (kind < 0)
        return sg_pre_err(err, errlen, "PSD: %s (mode %u) with %u bits per channel is not supported (Pillow reads "
                          "1-bit bitmap and 8-bit greyscale, indexed, RGB, CMYK, multichannel and duotone)",
                          sg_psd_mode_name(mode), mode, bits);
    if (kind == SG_PSD_LAB)
        return sg_pre_err(err, errlen, "PSD: Lab colour is not supported (Pillow converts Lab to RGB through "
                          "LittleCMS, which this tool does not reproduce)");
    if (channels > psd_channels)
        return sg_pre_err(err, errlen, "PSD: %s with %u channels, %u needed (Pillow: not enough channels)",
                          sg_psd_mode_name(mode), psd_channels, channels);
    if (kind == SG_PSD_RGB && psd_channels == 4) channels = 4; /* "RGBA" */
    if (sg_pre_check_dims("PSD", w, h, opts->max_pixels, err, errlen)) return -1;

    sg_psd_out o;
    memset(&o, 0, sizeof o);
    o.w = w, o.h = h, o.kind = kind, o.rowbytes = bits == 1 ? (w + 7) / 8 : w;
    sg_psd_file f = {d, len, 26};
    const uint8_t *at;
    uint32_t size, v;
    /* colour mode data: the palette of an indexed image when exactly 768 bytes */
    if (sg_psd_int(&f, 4, &size)) return sg_pre_err(err, errlen, "PSD: truncated before the colour mode data");
    if (sg_psd_read(&f, size, &at) == 768 && size == 768 && kind == SG_PSD_P)
        for (int i = 0; i < 256; i++) o.lut[i][0] = at[i], o.lut[i][1] = at[256 + i], o.lut[i][2] = at[512 + i];
    /* image resources, walked as Pillow walks them */
    if (sg_psd_int(&f, 4, &size)) return sg_pre_err(err, errlen, "PSD: truncated before the image resources");
    for (uint64_t end = f.p + size; f.p < end;) {
        sg_psd_read(&f, 4, NULL); /* signature */
        if (sg_psd_int(&f, 2, &v) || sg_psd_int(&f, 1, &v))
            return sg_pre_err(err, errlen, "PSD: the image resources are truncated");
        if (!(sg_psd_read(&f, v, NULL) & 1)) sg_psd_read(&f, 1, NULL); /* the name, padded to even */
        if (sg_psd_int(&f, 4, &v)) return sg_pre_err(err, errlen, "PSD: the image resources are truncated");
        if (sg_psd_read(&f, v, NULL) & 1) sg_psd_read(&f, 1, NULL); /* the data, padded to even */
    }
    /* layer and mask information: 4 bytes of it read, then skipped by its length */
    if (sg_psd_int(&f, 4, &size)) return sg_pre_err(err, errlen, "PSD: truncated before the layer information");
    if (size) {
        uint64_t end = f.p + size;
        if (sg_psd_int(&f, 4, &v)) return sg_pre_err(err, errlen, "PSD: the layer information is truncated");
        f.p = end;
    }
    uint32_t comp;
    if (sg_psd_int(&f, 2, &comp)) return sg_pre_err(err, errlen, "PSD: truncated before the image data");
    if (comp > 1)
        return sg_pre_err(err, errlen, "PSD: compression %u%s is not supported (Pillow reads raw and PackBits: "
                          "cannot load this image)", comp, comp == 2 || comp == 3 ? " (ZIP)" : "");

    uint64_t off[4];
    if (comp == 0) {
        for (uint32_t c = 0; c < channels; c++) off[c] = f.p + (uint64_t)c * w * h;
        for (uint32_t c = 0; c < channels; c++) /* every channel present before the pixels are allocated */
            if (sg_psd_raw(&o, d, len, c, off[c], err, errlen)) return -1;
    } else {
        uint64_t rows = (uint64_t)channels * h;
        if (f.p > len || len - f.p < rows * 2)
            return sg_pre_err(err, errlen, "PSD: the file is truncated in the PackBits row byte counts (%llu rows; "
                              "Pillow: truncated file read)", (unsigned long long)rows);
        uint64_t p = f.p + rows * 2;
        for (uint32_t c = 0; c < channels; c++) {
            off[c] = p;
            for (uint64_t y = 0; y < h; y++) p += sg_be16(d + f.p + 2 * ((uint64_t)c * h + y));
        }
    }
    uint8_t *row = NULL;
    int rc = 0;
    if (comp == 1) { /* checked whole first, with no pixels to write, then decoded */
        if (!(row = malloc(o.rowbytes)))
            return sg_pre_err(err, errlen, "out of memory for a row of %llu bytes", (unsigned long long)o.rowbytes);
        for (uint32_t c = 0; c < channels && !rc; c++) rc = sg_psd_packbits(&o, d, len, c, off[c], row, err, errlen);
    }
    if (!rc) rc = sg_pre_alloc(out, (int)w, (int)h, err, errlen);
    o.rgb = out->rgb;
    for (uint32_t c = 0; c < channels && !rc; c++)
        rc = comp ? sg_psd_packbits(&o, d, len, c, off[c], row, err, errlen)
                  : sg_psd_raw(&o, d, len, c, off[c], err, errlen);
    free(row);
    return rc;
}
