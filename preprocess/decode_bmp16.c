/* preprocess/decode_bmp16.c — 16-bit BMP (5-5-5 and 5-6-5), decoded with Pillow's unpackers.
 *
 * stb_image widens a 5-bit channel by bit replication ((v << 3) | (v >> 2)), Pillow's BGR;15 / BGR;16
 * unpackers compute v * 255 / 31 (or / 63) with truncation, which differs by 1 on about half the values.
 * So uncompressed and BI_BITFIELDS 16-bit BMPs are decoded here, with an OS/2 (12-byte) header too (no compression
 * field: 5-5-5; stb refused those). Like Pillow, only the two standard bitfield layouts are accepted. The file was
 * already size- and truncation-checked (sg_pre_check_complete).
 */
#include "preprocess/internal.h"

int sg_pre_is_bmp16(const uint8_t *d, size_t len) {
    if (len >= 26 && sg_le32(d + 14) == 12) return sg_le16(d + 24) == 16; /* OS/2: width, height, planes, bits */
    if (len < 54 || sg_le32(d + 14) < 40) return 0;
    uint32_t comp = sg_le32(d + 30);
    return sg_le16(d + 28) == 16 && (comp == 0 || comp == 3);
}

int sg_pre_decode_bmp16(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out, char *err,
                        size_t errlen) {
    uint32_t off = sg_le32(d + 10), hsize = sg_le32(d + 14);
    int os2 = hsize == 12; /* 16-bit width and height (unsigned: rows bottom-up), no compression field */
    int32_t w = os2 ? (int32_t)sg_le16(d + 18) : (int32_t)sg_le32(d + 18);
    int32_t h = os2 ? (int32_t)sg_le16(d + 20) : (int32_t)sg_le32(d + 22);
    uint32_t comp = os2 ? 0 : sg_le32(d + 30);
    int top_down = h < 0;
    if (w <= 0 || h == 0 || h == INT32_MIN) return sg_pre_err(err, errlen, "BMP: bad size %dx%d", w, h);
    if (top_down) h = -h;
    if (!os2 && !sg_pre_bmp_header_known(hsize))
        return sg_pre_err(err, errlen, "BMP: header of %u bytes (Pillow refuses it)", hsize);
    if (len < 14 + (size_t)hsize) return sg_pre_err(err, errlen, "BMP: the header is cut short (truncated file)");
    if (off == 0) /* Pillow reads the pixels from where its reading of the header ended */
        off = 14 + hsize + (comp == 3 && hsize == 40 ? 12 : 0);
    if (sg_pre_check_dims("BMP", (uint64_t)w, (uint64_t)h, opts->max_pixels, err, errlen)) return -1;
    if (sg_pre_check_complete("BMP", d, len, err, errlen)) return -1;
    int g6 = 0; /* 5-6-5 */
    if (comp == 3) {
        /* masks follow a 40-byte header; V4/V5 headers hold them at the same offset */
        if (len < 14 + 40 + 12 || hsize < 40) return sg_pre_err(err, errlen, "BMP: truncated bitfield masks");
        uint32_t rm = sg_le32(d + 54), gm = sg_le32(d + 58), bm = sg_le32(d + 62);
        if (rm == 0xf800 && gm == 0x07e0 && bm == 0x001f) g6 = 1;
        else if (!(rm == 0x7c00 && gm == 0x03e0 && bm == 0x001f))
            return sg_pre_err(err, errlen, "BMP: unsupported 16-bit bitfields layout (masks %x %x %x; Pillow reads 5-5-5 and 5-6-5 only)", rm, gm, bm);
    }
    size_t stride = (((size_t)16 * w + 31) / 32) * 4;
    if (off > len || sg_pre_bmp_data_bytes(16, (uint64_t)w, (uint64_t)h) > len - off)
        return sg_pre_err(err, errlen, "BMP: the file is truncated: the pixels at %u run past its end", off);
    if (sg_pre_alloc(out, w, h, err, errlen)) return -1;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = d + off + (size_t)(top_down ? y : h - 1 - y) * stride;
        uint8_t *o = out->rgb + (size_t)y * w * 3;
        for (int x = 0; x < w; x++, s += 2, o += 3) {
            uint32_t v = sg_le16(s);
            if (g6) {
                o[0] = (uint8_t)(((v >> 11) & 31) * 255 / 31);
                o[1] = (uint8_t)(((v >> 5) & 63) * 255 / 63);
            } else {
                o[0] = (uint8_t)(((v >> 10) & 31) * 255 / 31);
                o[1] = (uint8_t)(((v >> 5) & 31) * 255 / 31);
            }
            o[2] = (uint8_t)((v & 31) * 255 / 31);
        }
    }
    return 0;
}
