/* preprocess/decode_jpeg.c — JPEG through libjpeg-turbo's TurboJPEG API with Pillow's decoder settings.
 *
 * Pillow's JpegDecode.c keeps libjpeg's defaults: ISLOW integer IDCT and fancy (triangle) chroma upsampling,
 * so asking TurboJPEG for TJFLAG_ACCURATEDCT without TJFLAG_FASTUPSAMPLE gives Pillow's pixels. Modes follow
 * the SOF component count as Pillow does: 1 = L (replicated by libjpeg's gray->RGB), 3 = RGB, 4 = CMYK,
 * which Pillow always reads as "CMYK;I" (Adobe polarity, inverted) and converts with cmyk2rgb.
 * Markers are walked here (bounds-checked) for the EXIF block and the XMP packet, because TurboJPEG does not
 * expose them. A truncated file (libjpeg's "Premature end of JPEG file") is refused, as Pillow refuses it;
 * other libjpeg warnings (corrupt-data notices) are tolerated, as Pillow tolerates them.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

/* Walks the markers before the first scan. Collects the EXIF blocks (Pillow appends later APP1 Exif
 * segments minus their 6-byte prefix) and the last XMP packet and returns the orientation: EXIF first, XMP
 * only when EXIF has none. *sof is set to 1 when a frame header (SOFn) was seen: TurboJPEG 2.1 reports
 * uninitialised sizes for a file that ends before it, so we check for it ourselves. */
static int sg_jpeg_markers(const uint8_t *d, size_t len, int *sof, size_t *sos) {
    static const char xmp_id[] = "http://ns.adobe.com/xap/1.0/"; /* followed by a NUL */
    uint8_t *exif = NULL;
    size_t exif_len = 0;
    const uint8_t *xmp = NULL;
    size_t xmp_len = 0;
    size_t p = 2;
    while (p + 4 <= len) {
        if (d[p] != 0xFF) break;
        uint8_t m = d[p + 1];
        if (m == 0xFF) { p++; continue; } /* fill bytes before a marker */
        if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { p += 2; continue; } /* no length field */
        if (m == 0xDA) { *sos = p; break; } /* scan data: the rest is entropy-coded */
        if (m == 0xD9) break;
        size_t seg = (size_t)d[p + 2] << 8 | d[p + 3];
        if (seg < 2 || seg > len - p - 2) break;
        const uint8_t *s = d + p + 4;
        size_t sl = seg - 2;
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) *sof = 1; /* not DHT, JPG, DAC */
        if (m == 0xE1 && sl >= 6 && memcmp(s, "Exif\0\0", 6) == 0) {
            size_t add = exif ? sl - 6 : sl;
            uint8_t *grown = realloc(exif, exif_len + add + 1);
            if (grown) {
                memcpy(grown + exif_len, exif ? s + 6 : s, add);
                exif = grown, exif_len += add;
            }
        } else if (m == 0xE1 && sl >= sizeof xmp_id && memcmp(s, xmp_id, sizeof xmp_id) == 0) {
            xmp = s + sizeof xmp_id, xmp_len = sl - sizeof xmp_id;
        }
        p += 2 + seg;
    }
    int o = exif ? sg_exif_orientation(exif, exif_len) : 0;
    free(exif);
    if (!o && xmp) o = sg_xmp_orientation(xmp, xmp_len);
    return o ? o : 1;
}

/* 1 if an EOI marker (FF D9) follows offset from. Entropy-coded data stuffs every 0xFF byte as FF 00, so
 * FF D9 can only be the marker itself. */
static int sg_jpeg_has_eoi(const uint8_t *d, size_t len, size_t from) {
    const uint8_t *p = d + from, *end = d + len;
    while (p < end - 1 && (p = memchr(p, 0xFF, (size_t)(end - 1 - p))) != NULL) {
        if (p[1] == 0xD9) return 1;
        p++;
    }
    return 0;
}

/* Pillow's CMYK;I unpack (invert) followed by cmyk2rgb: R = nk - MULDIV255(C, nk) with nk = 255 - K.
 * With C = 255 - c and K = 255 - k (c, k the stored bytes), nk = k. */
static void sg_cmyk_to_rgb(const uint8_t *cmyk, size_t npix, uint8_t *rgb) {
    for (size_t i = 0; i < npix; i++, cmyk += 4, rgb += 3) {
        int nk = cmyk[3];
        for (int c = 0; c < 3; c++) {
            int t = (255 - cmyk[c]) * nk + 128; /* MULDIV255: exact a*b/255 rounded, Pillow's macro */
            int v = nk - (((t >> 8) + t) >> 8);
            rgb[c] = (uint8_t)(v < 0 ? 0 : v);
        }
    }
}

int sg_pre_decode_jpeg(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen) {
    if (len > (size_t)0xffffffffu) return sg_pre_err(err, errlen, "JPEG of %zu bytes is too large", len);
    tjhandle tj = tjInitDecompress();
    if (!tj) return sg_pre_err(err, errlen, "JPEG: cannot initialise libjpeg-turbo: %s", tjGetErrorStr2(NULL));
    int rc = -1, w, h, subsamp, cs;
    uint8_t *cmyk = NULL;
    size_t sos = 0;
    int sof = 0, orient = sg_jpeg_markers(data, len, &sof, &sos);
    if (!sof || !sos) {
        sg_pre_err(err, errlen, "JPEG: no %s marker before the end of the file: truncated or not a JPEG image", sof ? "start-of-scan (SOS)" : "frame header (SOF)");
        goto done;
    }
    if (!sg_jpeg_has_eoi(data, len, sos)) {
        /* libjpeg-turbo 2.1 does not always warn when a progressive file ends between scans */
        sg_pre_err(err, errlen, "JPEG: no end-of-image marker after the image data (the file is truncated)");
        goto done;
    }
    if (tjDecompressHeader3(tj, data, (unsigned long)len, &w, &h, &subsamp, &cs) != 0) {
        sg_pre_err(err, errlen, "JPEG: bad header: %s", tjGetErrorStr2(tj));
        goto done;
    }
    if (sg_pre_check_dims("JPEG", (uint64_t)w, (uint64_t)h, opts->max_pixels, err, errlen)) goto done;
    int denom = 1;
    if (opts->fast_decode) {
        /* Pillow's draft(): the largest 1/d with d in {8,4,2} and both sides >= d * out_size */
        int s = w / opts->out_size < h / opts->out_size ? w / opts->out_size : h / opts->out_size;
        denom = s >= 8 ? 8 : s >= 4 ? 4 : s >= 2 ? 2 : 1;
    }
    int dw = (w + denom - 1) / denom, dh = (h + denom - 1) / denom; /* TJSCALED: libjpeg rounds up */
    if (sg_pre_alloc(out, dw, dh, err, errlen)) goto done;
    int is_cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
    uint8_t *dst = out->rgb;
    if (is_cmyk) {
        cmyk = malloc((size_t)dw * dh * 4);
        if (!cmyk) {
            sg_pre_err(err, errlen, "JPEG: out of memory for %dx%d CMYK", dw, dh);
            goto done;
        }
        dst = cmyk;
    }
    /* ACCURATEDCT = ISLOW (Pillow's default); LIMITSCANS refuses progressive files with > 500 scans, a
     * known CPU-exhaustion pattern that no camera writes */
    int flags = TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS;
    if (tjDecompress2(tj, data, (unsigned long)len, dst, dw, 0, dh, is_cmyk ? TJPF_CMYK : TJPF_RGB, flags) != 0) {
        const char *msg = tjGetErrorStr2(tj);
        if (tjGetErrorCode(tj) != TJERR_WARNING || strstr(msg, "Premature end")) {
            sg_pre_err(err, errlen, "JPEG: %s%s", msg,
                       strstr(msg, "Premature end") ? " (the file is truncated)" : "");
            goto done;
        }
    }
    if (is_cmyk) sg_cmyk_to_rgb(cmyk, (size_t)dw * dh, out->rgb);
    *orientation = orient;
    rc = 0;
done:
    if (rc) sg_rgb_image_free(out);
    free(cmyk);
    tjDestroy(tj);
    return rc;
}
