/* preprocess/decode_stb.c — the one translation unit that compiles stb_image (Debian's libstb-dev header).
 *
 * Only the format we need is compiled in (BMP). PNG goes through decode_png.c (since session 35: Pillow's verdicts
 * on damaged image data, and faster). PSD goes through decode_psd.c (stb read RGB only
 * and removed a white matte where Pillow drops alpha). JPEG goes through libjpeg-turbo (Pillow's
 * decoder, bit-exact), GIF through decode_gif.c (stb paints transparent pixels black where Pillow shows their
 * palette colour), PNM through decode_pnm.c (Pillow rescales maxvals other than 255) and 16-bit BMP through
 * decode_bmp16.c, RLE8 / RLE4 BMP (which stb refuses) through decode_bmp_rle.c, TGA through decode_tga.c (stb
 * ignores the right-to-left origin and a colour map's first index). An uncompressed or bitfields BMP is first
 * rebuilt as Pillow reads it (sg_bmp_rebuild: header sizes, palette, data offset, bitfield layouts; Pillow's
 * refusals with their reasons), so stb decodes a plain file; JPEG/PNG-in-BMP, which neither stb nor we decode, is
 * refused by name first. A top-down BMP (negative height) decodes like any other: stb flips by the sign. No
 * stdio: we always decode from memory. stb's failure reason is thread-local in C11 (STBI_THREAD_LOCAL), so these
 * wrappers are thread-safe. Its warnings are silenced here and only here.
 */
#include "preprocess/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
/* A side longer than 1<<24 is refused inside stb; the real limit is our pixel cap, checked before decoding. */
#define STBI_MAX_DIMENSIONS (1 << 24)
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
/* stb declares its API static (STB_IMAGE_STATIC) and gcc reports the unused ones at the end of the file, so this one
 * stays off for the whole file */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wshift-negative-value"
#include "stb_image.h"
#pragma GCC diagnostic pop

static int sg_stb_len(size_t len, char *err, size_t errlen) {
    if (len > (size_t)0x7fffffff) return sg_pre_err(err, errlen, "file of %zu bytes is too large for stb_image (max 2 GiB)", len);
    return 0;
}

static const char *sg_stb_reason(void) {
    const char *r = stbi_failure_reason();
    return r ? r : "unknown error";
}

int sg_stb_info(const uint8_t *data, size_t len, int *w, int *h, int *comp, char *err, size_t errlen) {
    if (sg_stb_len(len, err, errlen)) return -1;
    if (!stbi_info_from_memory(data, (int)len, w, h, comp))
        return sg_pre_err(err, errlen, "cannot read the header: %s", sg_stb_reason());
    return 0;
}

uint8_t *sg_stb_load8(const uint8_t *data, size_t len, int req_comp, int *w, int *h, char *err, size_t errlen) {
    int comp;
    if (sg_stb_len(len, err, errlen)) return NULL;
    uint8_t *p = stbi_load_from_memory(data, (int)len, w, h, &comp, req_comp);
    if (!p) sg_pre_err(err, errlen, "decode failed: %s", sg_stb_reason());
    return p;
}

/* Refuses, by name, the BMP compressions stb_image cannot decode (it would say only "unknown image type"): a
 * JPEG or PNG stream inside the BMP. RLE8 and RLE4 never come here (decode_bmp_rle.c). */
static int sg_bmp_refuse_compression(const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (len < 34 || sg_le32(d + 14) < 40) return 0; /* short, or an OS/2 core header with no compression field */
    uint32_t c = sg_le32(d + 30);
    if (c == 4 || c == 5) return sg_pre_err(err, errlen, "BMP holding a %s stream is not supported", c == 4 ? "JPEG" : "PNG");
    return 0;
}

/* A BMP's size by stb's BMP parser alone, whose failure reason then reaches the message (stbi_info_from_memory
 * tries every format and reports the last one's). stb gives a top-down BMP's height as the header's negative
 * number: returned positive, as its loader makes it. */
static int sg_stb_bmp_info(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t errlen) {
    if (sg_stb_len(len, err, errlen)) return -1;
    stbi__context s;
    stbi__start_mem(&s, data, (int)len);
    int comp;
    if (!stbi__bmp_info(&s, w, h, &comp)) return sg_pre_err(err, errlen, "cannot read the header: %s", sg_stb_reason());
    if (*h == INT_MIN) return sg_pre_err(err, errlen, "bad height %d", *h);
    if (*h < 0) *h = -*h;
    return 0;
}

/* An uncompressed or bitfields BMP (1, 4, 8, 24 or 32 bits; 16-bit and RLE files have their own decoders) rebuilt
 * for stb as Pillow reads it (BmpImagePlugin._bitmap):
 *  - any of Pillow's header sizes (12, 40, 52, 56, 64, 108, 124; stb knows no 52 or 64) becomes a 40-byte header;
 *  - the palette: clr_used entries (2^bpp when 0; OS/2 headers 2^bpp of 3 bytes) read right after the header, padded
 *    with black to 256. stb sized it from the data offset (four entries short for OS/2 headers, even negative) and
 *    left the entries past it uninitialised: such files gave pixels that changed from run to run;
 *  - the pixels from Pillow's offset (the file's; past the palette when the file's points right after the header; the
 *    end of what was read when 0), whatever lies between. stb refused any gap before 24- and 32-bit data;
 *  - bitfields: only Pillow's layouts (32 bits: BGRX, XBGR, BGXR, ABGR, RGBA, BGRA, BGAR and all-zero masks, read as
 *    BGRA; 24 bits: BGR); the 8-bit masks are kept for stb, all-zero masks and 24-bit BGR become uncompressed data.
 * Returns the rebuilt file, or NULL with *refused set (Pillow's reason in err) or not (stb reads the file as it is:
 * what neither decodes, or what this does not know). */
static uint8_t *sg_bmp_rebuild(const uint8_t *d, size_t len, uint64_t max_pixels, size_t *out_len, int *refused,
                               char *err, size_t errlen) {
    *refused = 0;
    if (len < 18) return NULL; /* stb's header check refuses it */
    *refused = 1;
    uint32_t hsz = sg_le32(d + 14), off = sg_le32(d + 10);
    int os2 = hsz == 12;
    if (!os2 && !sg_pre_bmp_header_known(hsz))
        return sg_pre_err(err, errlen, "BMP: header of %u bytes (Pillow refuses it)", hsz), NULL;
    if (len < 14 + (size_t)hsz) return sg_pre_err(err, errlen, "BMP: the header is cut short (truncated file)"), NULL;
    uint32_t bpp = sg_le16(d + (os2 ? 24 : 28)), comp = os2 ? 0 : sg_le32(d + 30);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        return sg_pre_err(err, errlen, "BMP: %u bits a pixel (Pillow refuses it)", bpp), NULL;
    if (comp > 5) return sg_pre_err(err, errlen, "BMP: compression %u (Pillow refuses it)", comp), NULL;
    if ((bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32) || (comp != 0 && comp != 3))
        return *refused = 0, NULL; /* OS/2 16-bit files: stb as before (RLE, Windows 16-bit never come here) */
    uint32_t colors = os2 ? 0 : sg_le32(d + 46), entry = os2 ? 3 : 4, m[4] = {0, 0, 0, 0};
    size_t read_end = 14 + (size_t)hsz; /* where Pillow's reading of the header ends */
    if (comp == 3) {
        if (bpp < 24) return *refused = 0, NULL;
        if (len < 66 + (hsz >= 56 ? 4u : 0u))
            return sg_pre_err(err, errlen, "BMP: the bitfield masks are cut short"), NULL;
        for (int i = 0; i < (hsz >= 56 ? 4 : 3); i++) m[i] = sg_le32(d + 54 + 4 * i);
        if (hsz == 40) read_end += 12;
        static const uint32_t ok32[8][4] = {{0xFF0000, 0xFF00, 0xFF, 0}, {0xFF000000, 0xFF0000, 0xFF00, 0},
            {0xFF000000, 0xFF00, 0xFF, 0}, {0xFF000000, 0xFF0000, 0xFF00, 0xFF}, {0xFF, 0xFF00, 0xFF0000, 0xFF000000},
            {0xFF0000, 0xFF00, 0xFF, 0xFF000000}, {0xFF000000, 0xFF00, 0xFF, 0xFF0000}, {0, 0, 0, 0}};
        int ok = 0;
        for (int i = 0; i < 8 && bpp == 32; i++) ok |= !memcmp(m, ok32[i], sizeof m);
        if (bpp == 24) ok = m[0] == 0xFF0000 && m[1] == 0xFF00 && m[2] == 0xFF;
        if (!ok) return sg_pre_err(err, errlen, "BMP: unsupported bitfields layout (Pillow refuses it)"), NULL;
        if (bpp == 24 || !(m[0] | m[1] | m[2] | m[3])) comp = 0; /* plain BGR / BGRA bytes */
    }
    size_t pal_got = 0; /* the palette bytes Pillow's read gets: all of them, or the rest of the file */
    if (bpp <= 8) {
        if (!colors) colors = 1u << bpp;
        pal_got = len - 14 - hsz;
        if ((size_t)colors * entry < pal_got) pal_got = (size_t)colors * entry;
        /* Pillow: "Unsupported BMP Palette size", "invalid palette size" */
        if (colors > 65536 || pal_got / entry > 256)
            return sg_pre_err(err, errlen, "BMP: a palette of %u colours (Pillow refuses it)", colors), NULL;
        if (off == 14 + hsz) off += entry * colors;
        read_end += (size_t)entry * colors;
    }
    if (off == 0) off = (uint32_t)read_end;
    int32_t w = os2 ? (int32_t)sg_le16(d + 18) : (int32_t)sg_le32(d + 18);
    int32_t h = os2 ? (int32_t)sg_le16(d + 20) : (int32_t)sg_le32(d + 22);
    if (h == INT32_MIN) return sg_pre_err(err, errlen, "BMP: bad height %d", h), NULL;
    uint64_t aw = (uint64_t)(w < 0 ? -(int64_t)w : w), rows = (uint64_t)(h < 0 ? -(int64_t)h : h);
    if (sg_pre_check_dims("BMP", aw, rows, max_pixels, err, errlen)) return NULL;
    uint64_t stride = ((uint64_t)bpp * aw + 31) / 32 * 4, need = sg_pre_bmp_data_bytes(bpp, aw, rows);
    if (off > len || need > len - off)
        return sg_pre_err(err, errlen, "BMP: the file is truncated: the pixels at %u need %llu bytes, %zu left", off,
                          (unsigned long long)need, off > len ? 0 : len - off), NULL;
    size_t head = 14 + 40 + (comp == 3 ? 12 : 0), pal = bpp <= 8 ? 1024 : 0, data = len - off;
    if (data < stride * rows) data = (size_t)(stride * rows); /* the last row's padding, zero (stb reads it) */
    size_t out = head + pal + data;
    uint8_t *b = calloc(out, 1);
    if (!b) return NULL;
    b[0] = 'B', b[1] = 'M';
    uint32_t v[] = {(uint32_t)out, 0, (uint32_t)(head + pal), 40, (uint32_t)w, (uint32_t)h};
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++) b[2 + 4 * i + k] = (uint8_t)(v[i] >> (8 * k));
    b[26] = 1, b[28] = (uint8_t)bpp, b[30] = (uint8_t)comp;
    if (pal) b[47] = 1; /* 256 colours */
    for (int i = 0; comp == 3 && i < 3; i++)
        for (int k = 0; k < 4; k++) b[54 + 4 * i + k] = (uint8_t)(m[i] >> (8 * k));
    for (size_t e = 0; e * entry + entry <= pal_got; e++) /* whole entries only, BGR(X) */
        memcpy(b + head + 4 * e, d + 14 + hsz + e * entry, 3);
    memcpy(b + head + pal, d + off, len - off);
    *out_len = out;
    return b;
}

int sg_pre_decode_stb(const char *fmt, const uint8_t *data, size_t len, const sg_preprocess_opts *opts,
                      sg_rgb_image *out, char *err, size_t errlen) {
    int w, h, comp, refused = 0;
    int bmp = strcmp(fmt, "BMP") == 0, named = bmp && sg_bmp_refuse_compression(data, len, err, errlen);
    size_t rlen = 0;
    uint8_t *rebuilt = NULL;
    if (bmp && !named && !(rebuilt = sg_bmp_rebuild(data, len, opts->max_pixels, &rlen, &refused, err, errlen)) &&
        refused)
        return -1;
    const uint8_t *src = rebuilt ? rebuilt : data;
    size_t n = rebuilt ? rlen : len;
    int rc = 0;
    if (bmp ? named || sg_stb_bmp_info(src, n, &w, &h, err, errlen)
            : sg_stb_info(data, len, &w, &h, &comp, err, errlen)) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        rc = sg_pre_err(err, errlen, "%s: %s", fmt, why);
    }
    if (!rc && sg_pre_check_dims(fmt, (uint64_t)w, (uint64_t)h, opts->max_pixels, err, errlen)) rc = -1;
    if (!rc && sg_pre_check_complete(fmt, data, len, err, errlen)) rc = -1;
    if (!rc && stbi_is_16_bit_from_memory(src, (int)n))
        rc = sg_pre_err(err, errlen, "%s with 16 bits per channel is not supported", fmt);
    uint8_t *rgb = rc ? NULL : sg_stb_load8(src, n, 3, &w, &h, err, errlen);
    free(rebuilt);
    if (rc) return -1;
    if (!rgb) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return sg_pre_err(err, errlen, "%s: %s", fmt, why);
    }
    out->w = w, out->h = h, out->rgb = rgb;
    return 0;
}
