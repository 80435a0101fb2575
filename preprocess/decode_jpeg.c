/* preprocess/decode_jpeg.c — JPEG through libjpeg-turbo with Pillow's decoder settings and Pillow's verdicts.
 *
 * Pillow's JpegDecode.c keeps libjpeg's defaults: ISLOW integer IDCT and fancy (triangle) chroma upsampling,
 * which give Pillow's pixels. Modes follow the SOF component count as Pillow does: 1 = L (replicated by
 * libjpeg's gray->RGB), 3 = RGB, 4 = CMYK, which Pillow always reads as "CMYK;I" (Adobe polarity, inverted) and
 * converts with cmyk2rgb. Markers are walked here (bounds-checked) for the EXIF block and the XMP packet.
 * Verdicts as Pillow's: data that runs out before the last row is a truncated file, refused; a libjpeg error
 * (a "broken data stream") is refused even after warnings; other warnings (corrupt-data notices) are tolerated
 * (tests/images/goldens_corrupt.txt holds Pillow's verdicts on damaged files).
 * One decoder (libjpeg's scanline API; TurboJPEG checks the header first, so the same layouts are accepted as
 * when TurboJPEG decoded), two ways out: sg_pre_decode_jpeg writes the whole image, sg_pre_jpeg_to_resized hands
 * blocks of 16 rows to the resize while they are in cache, which preprocess.c takes when it can.
 */
#include "preprocess/internal.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>
/* after stdio.h, which jpeglib.h needs for FILE; jerror.h after jpeglib.h */
#include <jpeglib.h>
#include <jerror.h>

/* Walks the markers before the first scan. Collects the EXIF blocks (Pillow appends later APP1 Exif
 * segments minus their 6-byte prefix) and the last XMP packet and returns the orientation: EXIF first, XMP
 * only when EXIF has no Orientation entry (one Pillow cannot use still counts). An EXIF block getexif() raises
 * on is read once by Pillow's open (_read_dpi_from_exif, which swallows the error and leaves getexif() empty:
 * no orientation, no XMP) unless a JFIF APP0 gave the DPI; then exif_transpose raises: SG_EXIF_REFUSED. *sof is set to 1 when a frame header (SOFn) was seen: TurboJPEG 2.1 reports
 * uninitialised sizes for a file that ends before it, so we check for it ourselves. */
static int sg_jpeg_markers(const uint8_t *d, size_t len, int pillow_major, int *sof, size_t *sos) {
    static const char xmp_id[] = "http://ns.adobe.com/xap/1.0/"; /* followed by a NUL */
    uint8_t *exif = NULL;
    size_t exif_len = 0;
    const uint8_t *xmp = NULL;
    size_t xmp_len = 0;
    int jfif_dpi = 0; /* a JFIF APP0 with density unit 1 or 2 sets Pillow's info["dpi"] */
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
        if (m == 0xE0 && sl >= 12 && memcmp(s, "JFIF", 4) == 0 && (s[7] == 1 || s[7] == 2)) jfif_dpi = 1;
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
    int o = exif ? sg_exif_orientation(exif, exif_len, pillow_major) : SG_EXIF_ABSENT;
    free(exif);
    if (o == SG_EXIF_REFUSED) return jfif_dpi ? SG_EXIF_REFUSED : 1;
    if (o == SG_EXIF_ABSENT && xmp) o = sg_xmp_orientation(xmp, xmp_len);
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

/* Pillow's CMYK;I unpack (invert) followed by cmyk2rgb (sg_cmyk2rgb_channel). With C = 255 - c and K = 255 - k
 * (c, k the stored bytes), nk = k. */
static void sg_cmyk_to_rgb(const uint8_t *cmyk, size_t npix, uint8_t *rgb) {
    for (size_t i = 0; i < npix; i++, cmyk += 4, rgb += 3)
        for (int c = 0; c < 3; c++) rgb[c] = sg_cmyk2rgb_channel(255 - cmyk[c], cmyk[3]);
}

/* What both JPEG paths check and learn before any pixel is decoded: markers (EXIF/XMP orientation, a frame
 * header and a scan), an end-of-image marker after the scan, TurboJPEG's header checks (the component and
 * subsampling layouts it accepts), the pixel cap, and the DCT scale of --fast-decode. */
typedef struct sg_jpeg_front {
    int w, h;          /* declared size */
    int is_cmyk;       /* CMYK or YCCK: decoded as CMYK, converted with Pillow's rule */
    int orientation;   /* EXIF orientation, 1 when none (or not applied) */
    int denom;         /* DCT scale 1/denom (1 unless --fast-decode) */
    int dw, dh;        /* decoded size at that scale (libjpeg rounds up) */
} sg_jpeg_front;

static int sg_jpeg_front_check(tjhandle tj, const uint8_t *data, size_t len, const sg_preprocess_opts *opts,
                               sg_jpeg_front *fr, char *err, size_t errlen) {
    size_t sos = 0;
    int sof = 0, subsamp, cs;
    fr->orientation = sg_jpeg_markers(data, len, opts->pillow_major, &sof, &sos);
    if (!sof || !sos)
        return sg_pre_err(err, errlen, "JPEG: no %s marker before the end of the file: truncated or not a JPEG image",
                          sof ? "start-of-scan (SOS)" : "frame header (SOF)");
    if (!sg_jpeg_has_eoi(data, len, sos)) /* libjpeg-turbo 2.1 does not always warn when a progressive file ends between scans */
        return sg_pre_err(err, errlen, "JPEG: no end-of-image marker after the image data (the file is truncated)");
    if (tjDecompressHeader3(tj, data, (unsigned long)len, &fr->w, &fr->h, &subsamp, &cs) != 0)
        return sg_pre_err(err, errlen, "JPEG: bad header: %s", tjGetErrorStr2(tj));
    if (sg_pre_check_dims("JPEG", (uint64_t)fr->w, (uint64_t)fr->h, opts->max_pixels, err, errlen)) return -1;
    fr->denom = 1;
    if (opts->fast_decode) {
        /* Pillow's draft(): the largest 1/d with d in {8,4,2} and both sides >= d * out_size */
        int s = fr->w / opts->out_size < fr->h / opts->out_size ? fr->w / opts->out_size : fr->h / opts->out_size;
        fr->denom = s >= 8 ? 8 : s >= 4 ? 4 : s >= 2 ? 2 : 1;
    }
    fr->dw = (fr->w + fr->denom - 1) / fr->denom, fr->dh = (fr->h + fr->denom - 1) / fr->denom; /* TJSCALED */
    fr->is_cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
    if (fr->orientation == SG_EXIF_REFUSED && opts->exif_rotate) /* only exif_transpose reads the block */
        return sg_pre_err(err, errlen, "JPEG: the EXIF block is not TIFF data (Pillow's exif_transpose raises on it)");
    if (fr->orientation == SG_EXIF_REFUSED) fr->orientation = 1;
    return 0;
}

/* ---- the decoder: libjpeg's scanline API ------------------------------------------------------------------
 * A whole decoded image is a big buffer: a 12-megapixel photo is 36 MB of RGB, written to fresh pages (a page
 * fault and a zeroed page each 4 KB) and read back by the resize. The scanline API hands out a few rows at a
 * time, so 16 rows are decoded into a small buffer, which stays in cache while the resize's horizontal pass
 * reads them (sg_resize_stream). The decoder is set up as TurboJPEG's tjDecompress2(TJFLAG_ACCURATEDCT |
 * TJFLAG_LIMITSCANS) sets it up (ISLOW IDCT, fancy upsampling, RGB or CMYK output, the same DCT scale, at most
 * 500 scans), with an error manager that turns libjpeg's errors into a message; so the rows are the same bytes
 * (tests/test_preprocess.c checks every JPEG golden through both paths). libturbojpeg.a holds libjpeg-turbo
 * whole, so the scanline functions come from it; jpeglib.h is Debian's libjpeg62-turbo-dev. */

#define SG_JPEG_MAX_SCANS 500 /* TurboJPEG's TJFLAG_LIMITSCANS bound */

typedef struct sg_jpeg_errmgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int eof_warning;               /* "Premature end of JPEG file" was seen: the data ran out (truncated file) */
    char msg[JMSG_LENGTH_MAX + 64];
} sg_jpeg_errmgr;

static void sg_jpeg_on_error(j_common_ptr c) {
    sg_jpeg_errmgr *e = (sg_jpeg_errmgr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jump, 1);
}

/* Warnings (level < 0) are tolerated, as Pillow and TurboJPEG tolerate corrupt-data notices, except the one
 * that says the data ran out; trace messages (level >= 0) are ignored. */
static void sg_jpeg_on_message(j_common_ptr c, int level) {
    sg_jpeg_errmgr *e = (sg_jpeg_errmgr *)c->err;
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) {
        e->eof_warning = 1;
        (*c->err->format_message)(c, e->msg);
    }
}

static void sg_jpeg_on_progress(j_common_ptr c) {
    if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > SG_JPEG_MAX_SCANS) {
        sg_jpeg_errmgr *e = (sg_jpeg_errmgr *)c->err;
        snprintf(e->msg, sizeof e->msg, "Progressive JPEG image has more than %d scans", SG_JPEG_MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

/* This thread's CPU time, for the stage statistics. */
static double sg_jpeg_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Called with each block of decoded rows: rows [y, y+n) of the image as RGB, n <= SG_JPEG_BLOCK_ROWS, row r at
 * rgb + r*stride. Returns 0, or -1 with a reason in err. */
typedef int (*sg_jpeg_row_sink)(void *ctx, const uint8_t *rgb, size_t stride, int y, int n, char *err, size_t errlen);

/* What the decode needs after a longjmp: kept in one struct behind a pointer, so setjmp's rules on locals
 * changed after it do not apply. */
typedef struct sg_jpeg_rows_state {
    struct jpeg_decompress_struct d;
    sg_jpeg_errmgr err;
    struct jpeg_progress_mgr progress;
    int created;
    uint8_t *block;      /* SG_JPEG_BLOCK_ROWS decoded rows (3 bytes per pixel, 4 for CMYK) */
    uint8_t *block_rgb;  /* the same rows converted to RGB (CMYK only) */
} sg_jpeg_rows_state;

#define SG_JPEG_BLOCK_ROWS 16 /* rows per hand-over: the resize's transposed block height (SG_RB in resize.c) */

/* Decodes the image fr describes, SG_JPEG_BLOCK_ROWS rows at a time, as TurboJPEG's tjDecompress2 sets libjpeg up.
 * Rows go straight into dst (the whole RGB image, fr->dw x fr->dh) when dst is given, else into a small block;
 * then each block goes to sink (may be NULL), whose CPU time is added to *sink_s (may be NULL). As in Pillow: a
 * libjpeg error is an error even after warnings (a "broken data stream"; TurboJPEG would call it a warning once any
 * warning was seen), and so is running out of data before the last row; other warnings are tolerated. Returns 0
 * or -1. */
static int sg_jpeg_decode_rows(const uint8_t *data, size_t len, const sg_jpeg_front *fr, uint8_t *dst,
                               sg_jpeg_row_sink sink, void *ctx, double *sink_s, char *err, size_t errlen) {
    sg_jpeg_rows_state *st = calloc(1, sizeof *st);
    if (!st) return sg_pre_err(err, errlen, "JPEG: out of memory");
    int rc = -1;
    size_t px = fr->is_cmyk ? 4 : 3;
    if (setjmp(st->err.jump)) {
        sg_pre_err(err, errlen, "JPEG: %s", st->err.msg);
        goto done;
    }
    st->d.err = jpeg_std_error(&st->err.pub);
    st->err.pub.error_exit = sg_jpeg_on_error;
    st->err.pub.emit_message = sg_jpeg_on_message;
    jpeg_create_decompress(&st->d);
    st->created = 1;
    st->progress.progress_monitor = sg_jpeg_on_progress;
    st->d.progress = &st->progress;
    jpeg_mem_src(&st->d, data, (unsigned long)len);
    jpeg_read_header(&st->d, TRUE);
    st->d.dct_method = JDCT_ISLOW;        /* TJFLAG_ACCURATEDCT, Pillow's default */
    st->d.do_fancy_upsampling = TRUE;     /* no TJFLAG_FASTUPSAMPLE: Pillow's triangle upsampling */
    st->d.out_color_space = fr->is_cmyk ? JCS_CMYK : JCS_RGB;
    st->d.scale_num = 1;
    st->d.scale_denom = (unsigned)fr->denom;
    jpeg_start_decompress(&st->d);
    if ((int)st->d.output_width != fr->dw || (int)st->d.output_height != fr->dh ||
        st->d.output_components != (int)px) {
        sg_pre_err(err, errlen, "JPEG: libjpeg decodes %ux%u x %d, the header said %dx%d x %zu", st->d.output_width,
                   st->d.output_height, st->d.output_components, fr->dw, fr->dh, px);
        goto done;
    }
    size_t row = (size_t)fr->dw * px, rgb_row = (size_t)fr->dw * 3;
    if (!dst || fr->is_cmyk) st->block = malloc(row * SG_JPEG_BLOCK_ROWS + 4); /* + 4: 4-byte loads at a row's end */
    if (!dst && fr->is_cmyk) st->block_rgb = malloc(rgb_row * SG_JPEG_BLOCK_ROWS + 4);
    if (((!dst || fr->is_cmyk) && !st->block) || (!dst && fr->is_cmyk && !st->block_rgb)) {
        sg_pre_err(err, errlen, "JPEG: out of memory for %d rows of %d pixels", SG_JPEG_BLOCK_ROWS, fr->dw);
        goto done;
    }
    while (st->d.output_scanline < st->d.output_height) {
        int y = (int)st->d.output_scanline, n = 0;
        uint8_t *base = dst && !fr->is_cmyk ? dst + (size_t)y * rgb_row : st->block;
        JSAMPROW rows[SG_JPEG_BLOCK_ROWS];
        for (int k = 0; k < SG_JPEG_BLOCK_ROWS; k++) rows[k] = base + (size_t)k * row;
        while (n < SG_JPEG_BLOCK_ROWS && st->d.output_scanline < st->d.output_height) {
            JDIMENSION got = jpeg_read_scanlines(&st->d, rows + n, (JDIMENSION)(SG_JPEG_BLOCK_ROWS - n));
            if (got == 0) break; /* suspension cannot happen with a memory source; guard anyway */
            n += (int)got;
        }
        if (n == 0) break;
        const uint8_t *rgb = base;
        if (fr->is_cmyk) {
            uint8_t *to = dst ? dst + (size_t)y * rgb_row : st->block_rgb;
            sg_cmyk_to_rgb(st->block, (size_t)fr->dw * n, to);
            rgb = to;
        }
        if (sink) {
            double t = sink_s ? sg_jpeg_cpu_now() : 0;
            if (sink(ctx, rgb, rgb_row, y, n, err, errlen) != 0) goto done;
            if (sink_s) *sink_s += sg_jpeg_cpu_now() - t;
        }
    }
    if (st->d.output_scanline < st->d.output_height) {
        sg_pre_err(err, errlen, "JPEG: decoding stopped at row %u of %u", st->d.output_scanline, st->d.output_height);
        goto done;
    }
    /* Data that ran out before the last row is a truncated image (Pillow: "image file is truncated"); running
     * out while finish_decompress looks for the end marker after the last row, Pillow accepts. A libjpeg error
     * in finish_decompress (an unknown marker after a corrupt scan) Pillow refuses; so does the longjmp above. */
    if (st->err.eof_warning) {
        sg_pre_err(err, errlen, "JPEG: %s (the file is truncated)", st->err.msg);
        goto done;
    }
    jpeg_finish_decompress(&st->d);
    rc = 0;
done:
    if (st->created) jpeg_destroy_decompress(&st->d);
    free(st->block);
    free(st->block_rgb);
    free(st);
    return rc;
}

/* What both entry points do first: the size limit, then sg_jpeg_front_check with a decompressor of its own (the
 * decode itself uses libjpeg's scanline API). 0, or -1 + message. */
static int sg_jpeg_front_read(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_jpeg_front *fr,
                              char *err, size_t errlen) {
    if (len > (size_t)0xffffffffu) return sg_pre_err(err, errlen, "JPEG of %zu bytes is too large", len);
    tjhandle tj = tjInitDecompress();
    if (!tj) return sg_pre_err(err, errlen, "JPEG: cannot initialise libjpeg-turbo: %s", tjGetErrorStr2(NULL));
    int front = sg_jpeg_front_check(tj, data, len, opts, fr, err, errlen);
    tjDestroy(tj);
    return front ? -1 : 0;
}

int sg_pre_decode_jpeg(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen) {
    sg_jpeg_front fr;
    if (sg_jpeg_front_read(data, len, opts, &fr, err, errlen)) return -1;
    sg_pre_budget_pixels("JPEG whole", (uint64_t)fr.dw, (uint64_t)fr.dh); /* more than the streamed path holds */
    if (sg_pre_alloc(out, fr.dw, fr.dh, err, errlen)) return -1;
    if (sg_jpeg_decode_rows(data, len, &fr, out->rgb, NULL, NULL, NULL, err, errlen) != 0) {
        sg_rgb_image_free(out);
        return -1;
    }
    *orientation = fr.orientation;
    return 0;
}

static int sg_jpeg_sink_resize(void *ctx, const uint8_t *rgb, size_t stride, int y, int n, char *err, size_t errlen) {
    if (sg_resize_stream_rows(ctx, rgb, stride, y, n) == 0) return 0;
    return sg_pre_err(err, errlen, "JPEG: rows %d..%d do not fit the image being resized", y, y + n);
}

int sg_pre_jpeg_to_resized(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, uint8_t *out,
                           sg_preprocess_stats *stats, char *err, size_t errlen) {
    double t0 = stats ? sg_jpeg_cpu_now() : 0;
    sg_jpeg_front fr;
    if (sg_jpeg_front_read(data, len, opts, &fr, err, errlen)) return -1;
    if (opts->exif_rotate && fr.orientation != 1) return 1; /* rows must be transposed or flipped first */
    sg_resize_stream *rs =
        sg_resize_stream_begin(fr.dw, fr.dh, out, opts->out_size, opts->out_size, opts->resample, opts->pillow_major);
    if (!rs) return 1; /* a vertical-first resize (or no memory for the plan): the whole-image path does it */
    double resize_s = 0;
    int rc = sg_jpeg_decode_rows(data, len, &fr, NULL, sg_jpeg_sink_resize, rs, stats ? &resize_s : NULL, err, errlen);
    if (rc == 0) {
        double t = stats ? sg_jpeg_cpu_now() : 0;
        sg_resize_stream_end(rs);
        if (stats) resize_s += sg_jpeg_cpu_now() - t;
    }
    sg_resize_stream_free(rs);
    if (stats) {
        stats->resize_s += resize_s;
        stats->decode_s += sg_jpeg_cpu_now() - t0 - resize_s;
    }
    return rc;
}
