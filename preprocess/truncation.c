/* preprocess/truncation.c — refuses truncated BMP and TGA files before stb_image sees them.
 *
 * stb_image reads past the end of these formats as zeros and returns a partly black image, where Pillow
 * raises "image file is truncated". For the uncompressed layouts the pixel data size follows from the
 * header, so we compare it with the file length; TGA's RLE packets are walked without decoding. PSD never comes
 * here: decode_psd.c checks every channel's data itself. BMP RLE never comes here: decode_bmp_rle.c bounds-checks its own stream and refuses
 * one that stops short. Every header read is bounds-checked.
 */
#include "preprocess/internal.h"

#include <string.h>

static int sg_need(const char *fmt, uint64_t need, size_t len, char *err, size_t errlen) {
    if (need > len)
        return sg_pre_err(err, errlen, "%s: the file is truncated: %zu bytes, the header implies %llu", fmt, len, (unsigned long long)need);
    return 0;
}

static int sg_check_bmp(const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (len < 30) return sg_pre_err(err, errlen, "BMP: truncated header (%zu bytes)", len);
    uint32_t off = sg_le32(d + 10), hsize = sg_le32(d + 14);
    if (hsize < 40) return 0; /* OS/2 core headers: rare, left to stb */
    if (len < 14 + 40) return sg_pre_err(err, errlen, "BMP: truncated header (%zu bytes)", len);
    int32_t w = (int32_t)sg_le32(d + 18), h = (int32_t)sg_le32(d + 22);
    uint32_t bpp = sg_le16(d + 28), comp = sg_le32(d + 30);
    if (comp != 0 && comp != 3) return 0; /* JPEG/PNG-in-BMP: refused by decode_stb.c (RLE: decode_bmp_rle.c) */
    uint64_t aw = (uint64_t)(w < 0 ? -(int64_t)w : w), ah = (uint64_t)(h < 0 ? -(int64_t)h : h);
    uint64_t stride = ((bpp * aw + 31) / 32) * 4; /* rows are padded to 4 bytes */
    return sg_need("BMP", (uint64_t)off + stride * ah, len, err, errlen);
}

static int sg_check_tga(const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (len < 18) return sg_pre_err(err, errlen, "TGA: truncated header (%zu bytes)", len);
    uint32_t idlen = d[0], cmtype = d[1], type = d[2], cmlen = sg_le16(d + 5), cmbits = d[7];
    uint32_t w = sg_le16(d + 12), h = sg_le16(d + 14), bpp = d[16];
    uint64_t cm = cmtype ? (uint64_t)cmlen * ((cmbits + 7) / 8) : 0, px = (bpp + 7) / 8, p = 18ull + idlen + cm;
    if (type == 1 || type == 2 || type == 3) return sg_need("TGA", p + (uint64_t)w * h * px, len, err, errlen);
    if (type != 9 && type != 10 && type != 11) return 0; /* stb refuses other types with its own message */
    /* RLE: walk the packets (a header byte, then one pixel repeated or n literal pixels) over w*h pixels */
    for (uint64_t done = 0, total = (uint64_t)w * h; done < total;) {
        if (p >= len) return sg_need("TGA", p + 1, len, err, errlen);
        uint64_t n = (uint64_t)(d[p] & 0x7f) + 1;
        p += 1 + ((d[p] & 0x80) ? px : n * px);
        done += n;
    }
    return sg_need("TGA", p, len, err, errlen);
}

int sg_pre_check_complete(const char *fmt, const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (strcmp(fmt, "BMP") == 0) return sg_check_bmp(d, len, err, errlen);
    if (strcmp(fmt, "TGA") == 0) return sg_check_tga(d, len, err, errlen);
    return 0;
}
