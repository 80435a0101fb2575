/* preprocess/truncation.c — refuses truncated BMP files before stb_image sees them.
 *
 * stb_image reads past the end of this format as zeros and returns a partly black image, where Pillow
 * raises "image file is truncated". For the uncompressed layouts the pixel data size follows from the
 * header, so we compare it with the file length. PSD, TGA and BMP RLE never come here: decode_psd.c,
 * decode_tga.c and decode_bmp_rle.c bounds-check their own data and refuse a file that stops short.
 * Every header read is bounds-checked.
 */
#include "preprocess/internal.h"

#include <string.h>

static int sg_need(const char *fmt, uint64_t need, size_t len, char *err, size_t errlen) {
    if (need > len)
        return sg_pre_err(err, errlen, "%s: the file is truncated: %zu bytes, the header implies %llu", fmt, len, (unsigned long long)need);
    return 0;
}

static int sg_check_bmp(const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (len < 18) return sg_pre_err(err, errlen, "BMP: truncated header (%zu bytes)", len);
    uint32_t off = sg_le32(d + 10), hsize = sg_le32(d + 14);
    if (hsize < 40) return 0; /* OS/2 core headers (a 1 x 1 file is 28 or 29 bytes): their decoders check their data */
    if (len < 14 + 40) return sg_pre_err(err, errlen, "BMP: truncated header (%zu bytes)", len);
    int32_t w = (int32_t)sg_le32(d + 18), h = (int32_t)sg_le32(d + 22);
    uint32_t bpp = sg_le16(d + 28), comp = sg_le32(d + 30);
    if (comp != 0 && comp != 3) return 0; /* JPEG/PNG-in-BMP: refused by decode_stb.c (RLE: decode_bmp_rle.c) */
    uint64_t aw = (uint64_t)(w < 0 ? -(int64_t)w : w), ah = (uint64_t)(h < 0 ? -(int64_t)h : h);
    return sg_need("BMP", (uint64_t)off + sg_pre_bmp_data_bytes(bpp, aw, ah), len, err, errlen);
}

int sg_pre_check_complete(const char *fmt, const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (strcmp(fmt, "BMP") == 0) return sg_check_bmp(d, len, err, errlen);
    return 0;
}
