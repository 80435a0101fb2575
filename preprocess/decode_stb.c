/* preprocess/decode_stb.c — the one translation unit that compiles stb_image (Debian's libstb-dev header).
 *
 * Only the format we need is compiled in (BMP). PNG goes through decode_png.c (since session 35: Pillow's verdicts
 * on damaged image data, and faster). PSD goes through decode_psd.c (stb read RGB only
 * and removed a white matte where Pillow drops alpha). JPEG goes through libjpeg-turbo (Pillow's
 * decoder, bit-exact), GIF through decode_gif.c (stb paints transparent pixels black where Pillow shows their
 * palette colour), PNM through decode_pnm.c (Pillow rescales maxvals other than 255) and 16-bit BMP through
 * decode_bmp16.c, RLE8 / RLE4 BMP (which stb refuses) through decode_bmp_rle.c, TGA through decode_tga.c (stb
 * ignores the right-to-left origin and a colour map's first index). A BMP's header is read by stb's
 * BMP parser alone, so its reason reaches the message; JPEG/PNG-in-BMP, which neither stb nor we decode, is
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

/* A palette BMP (1, 4 or 8 bits a pixel, uncompressed) rebuilt for stb with Pillow's palette: stb sizes the palette
 * from the pixel data's offset, off by four entries for OS/2 headers (its psize can come out negative), and leaves the
 * entries past it as uninitialised stack memory, so indices past the palette gave pixels that changed from run to
 * run (valgrind: uninitialised values reach the output). Pillow reads clr_used entries (2^bpp when 0; OS/2 headers:
 * 2^bpp of 3 bytes) from right after the header, whatever the offset, and maps indices past them to black. The
 * rebuilt file: a 40-byte header with the same size and depth, those entries padded with black to 256, and the pixel
 * data from the original offset. NULL (no rebuild: stb reads the file as it is) for anything else. */
static uint8_t *sg_bmp_palette_rebuild(const uint8_t *d, size_t len, size_t *out_len) {
    if (len < 30) return NULL;
    uint32_t hsz = sg_le32(d + 14), off = sg_le32(d + 10);
    int os2 = hsz == 12;
    if (!os2 && (hsz != 40 && hsz != 56 && hsz != 108 && hsz != 124)) return NULL;
    if (len < 14 + (size_t)hsz || off < 14 + hsz || off > len) return NULL;
    uint32_t bpp = sg_le16(d + (os2 ? 24 : 28)), comp = os2 ? 0 : sg_le32(d + 30);
    if ((bpp != 1 && bpp != 4 && bpp != 8) || comp != 0) return NULL;
    uint32_t colors = os2 ? 0 : sg_le32(d + 46), entry = os2 ? 3 : 4;
    if (!colors) colors = 1u << bpp;
    if (colors > 256) return NULL;
    int32_t w = os2 ? (int32_t)sg_le16(d + 18) : (int32_t)sg_le32(d + 18);
    int32_t h = os2 ? (int32_t)sg_le16(d + 20) : (int32_t)sg_le32(d + 22);
    size_t avail = len - 14 - hsz, n = (size_t)colors * entry < avail ? (size_t)colors * entry : avail;
    size_t out = 14 + 40 + 1024 + (len - off);
    uint8_t *b = calloc(out, 1);
    if (!b) return NULL;
    b[0] = 'B', b[1] = 'M';
    uint32_t v[] = {(uint32_t)out, 0, 14 + 40 + 1024, 40, (uint32_t)w, (uint32_t)h};
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++) b[2 + 4 * i + k] = (uint8_t)(v[i] >> (8 * k));
    b[26] = 1, b[28] = (uint8_t)bpp, b[46] = 0, b[47] = 1; /* planes 1, bpp, no compression, 256 colours */
    for (size_t e = 0; e * entry + entry <= n; e++) /* whole entries only, BGR(X) */
        memcpy(b + 54 + 4 * e, d + 14 + hsz + e * entry, 3);
    memcpy(b + 54 + 1024, d + off, len - off);
    *out_len = out;
    return b;
}

int sg_pre_decode_stb(const char *fmt, const uint8_t *data, size_t len, const sg_preprocess_opts *opts,
                      sg_rgb_image *out, char *err, size_t errlen) {
    int w, h, comp;
    int bmp = strcmp(fmt, "BMP") == 0;
    if (bmp ? sg_bmp_refuse_compression(data, len, err, errlen) || sg_stb_bmp_info(data, len, &w, &h, err, errlen)
            : sg_stb_info(data, len, &w, &h, &comp, err, errlen)) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return sg_pre_err(err, errlen, "%s: %s", fmt, why);
    }
    if (sg_pre_check_dims(fmt, (uint64_t)w, (uint64_t)h, opts->max_pixels, err, errlen)) return -1;
    if (sg_pre_check_complete(fmt, data, len, err, errlen)) return -1;
    if (stbi_is_16_bit_from_memory(data, (int)len))
        return sg_pre_err(err, errlen, "%s with 16 bits per channel is not supported", fmt);
    size_t rlen = 0;
    uint8_t *rebuilt = bmp ? sg_bmp_palette_rebuild(data, len, &rlen) : NULL;
    uint8_t *rgb = sg_stb_load8(rebuilt ? rebuilt : data, rebuilt ? rlen : len, 3, &w, &h, err, errlen);
    free(rebuilt);
    if (!rgb) {
        char why[200];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return sg_pre_err(err, errlen, "%s: %s", fmt, why);
    }
    out->w = w, out->h = h, out->rgb = rgb;
    return 0;
}
