/* preprocess/decode_jpeg.c — JPEG through libjpeg-turbo with Pillow's decoder settings and Pillow's verdicts.
 *
 * First Pillow's own walk over the segments (jpeg_open.c): its refusals, the size and component count it takes,
 * the EXIF orientation. Then libjpeg, set up as Pillow's JpegDecode.c sets it up: libjpeg's defaults (ISLOW integer
 * IDCT, fancy (triangle) chroma upsampling), which give Pillow's pixels, and the mode from the component count:
 * 1 = L (replicated by libjpeg's gray->RGB), 3 = RGB, 4 = CMYK, which Pillow always reads as "CMYK;I" (Adobe
 * polarity, inverted) and converts with cmyk2rgb. libjpeg is fed the file as Pillow feeds it (below), so its
 * verdicts are Pillow's: a libjpeg error is refused even after warnings (a "broken data stream"), warnings
 * (corrupt-data notices) are tolerated, and a decoder that wants more than the file holds before its last row is
 * a truncated file (tests/images/goldens_corrupt.txt holds Pillow's verdicts on damaged data,
 * scripts/jpeg_differential.py compares damaged segments with Pillow's). One decoder (libjpeg's scanline API),
 * two ways out: sg_pre_decode_jpeg writes the whole image, sg_pre_jpeg_to_resized hands blocks of 16 rows to the
 * resize while they are in cache, which preprocess.c takes when it can.
 */
#include "preprocess/internal.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* after stdio.h, which jpeglib.h needs for FILE; jerror.h after jpeglib.h */
#include <jpeglib.h>
#include <jerror.h>

/* Pillow's CMYK;I unpack (invert) followed by cmyk2rgb (sg_cmyk2rgb_channel). With C = 255 - c and K = 255 - k
 * (c, k the stored bytes), nk = k. */
static void sg_cmyk_to_rgb(const uint8_t *cmyk, size_t npix, uint8_t *rgb) {
    for (size_t i = 0; i < npix; i++, cmyk += 4, rgb += 3)
        for (int c = 0; c < 3; c++) rgb[c] = sg_cmyk2rgb_channel(255 - cmyk[c], cmyk[3]);
}

/* What both JPEG paths check and learn before any pixel is decoded: the file size limit, Pillow's own verdict on the
 * segments before the scan, the size and component count it takes and the EXIF / XMP orientation (jpeg_open.c), the
 * pixel cap, and the DCT scale of --fast-decode. */
typedef struct sg_jpeg_front {
    int w, h;          /* declared size */
    int is_cmyk;       /* 4 components (CMYK or YCCK): decoded as CMYK, converted with Pillow's rule */
    int orientation;   /* EXIF orientation, 1 when none (or not applied) */
    int denom;         /* DCT scale 1/denom (1 unless --fast-decode) */
    int dw, dh;        /* decoded size at that scale (libjpeg rounds up) */
} sg_jpeg_front;

static int sg_jpeg_front_check(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_jpeg_front *fr,
                               char *err, size_t errlen) {
    if (len > (size_t)0xffffffffu) return sg_pre_err(err, errlen, "JPEG of %zu bytes is too large", len);
    sg_jpeg_open_info oi;
    if (sg_jpeg_pillow_open(data, len, opts->pillow_major, &oi, err, errlen)) return -1;
    fr->w = oi.w, fr->h = oi.h, fr->is_cmyk = oi.layers == 4, fr->orientation = oi.orientation;
    if (sg_pre_check_dims("JPEG", (uint64_t)fr->w, (uint64_t)fr->h, opts->max_pixels, err, errlen)) return -1;
    fr->denom = 1;
    if (opts->fast_decode) {
        /* Pillow's draft(): the largest 1/d with d in {8,4,2} and both sides >= d * out_size */
        int s = fr->w / opts->out_size < fr->h / opts->out_size ? fr->w / opts->out_size : fr->h / opts->out_size;
        fr->denom = s >= 8 ? 8 : s >= 4 ? 4 : s >= 2 ? 2 : 1;
    }
    fr->dw = (fr->w + fr->denom - 1) / fr->denom, fr->dh = (fr->h + fr->denom - 1) / fr->denom; /* libjpeg's ceil */
    if (fr->orientation == SG_EXIF_REFUSED && opts->exif_rotate) /* only exif_transpose reads the block */
        return sg_pre_err(err, errlen, "JPEG: the EXIF block is not TIFF data (Pillow's exif_transpose raises on it)");
    if (fr->orientation == SG_EXIF_REFUSED) fr->orientation = 1;
    return 0;
}

/* ---- the decoder: libjpeg's scanline API, fed as Pillow feeds it -------------------------------------------
 * A whole decoded image is a big buffer: a 12-megapixel photo is 36 MB of RGB, written to fresh pages (a page
 * fault and a zeroed page each 4 KB) and read back by the resize. The scanline API hands out a few rows at a
 * time, so 16 rows are decoded into a small buffer, which stays in cache while the resize's horizontal pass
 * reads them (sg_resize_stream). The decoder is set up as Pillow's JpegDecode.c sets it up (libjpeg's defaults:
 * ISLOW IDCT, fancy upsampling; RGB or CMYK output; the DCT scale of --fast-decode), with an error manager that
 * turns libjpeg's errors into a message and ignores its warnings, as Pillow does. libturbojpeg.a holds libjpeg-turbo
 * whole, so the scanline functions come from it; jpeglib.h is Debian's libjpeg62-turbo-dev.
 *
 * Pillow's ImageFile.load hands the decoder the file 64 KiB at a time, and its data source suspends libjpeg when a
 * read runs past what it was given. A decoder still suspended when the file has no more is a truncated file,
 * refused; but once the last row is out, Pillow calls jpeg_finish_decompress with what it holds and takes the image
 * whether that finishes or suspends (so an image without its end marker decodes when libjpeg needed no byte past
 * the data for its last row, and is refused when its last codes sat in the bytes libjpeg reads ahead); an error
 * there (a bad marker after the image data, inside what was handed over) is refused. The data source below does the
 * same: the same 64 KiB reads, the same suspensions, so the same verdicts. One bound of our own (TurboJPEG's): a
 * progressive file of more than 500 scans is refused, where Pillow would spend minutes on it. */

#define SG_JPEG_MAX_SCANS 500 /* TurboJPEG's TJFLAG_LIMITSCANS bound */
#define SG_JPEG_READ 65536    /* Pillow's ImageFile.decodermaxblock: the bytes each read hands the decoder */

typedef struct sg_jpeg_errmgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX + 64];
} sg_jpeg_errmgr;

static void sg_jpeg_on_error(j_common_ptr c) {
    sg_jpeg_errmgr *e = (sg_jpeg_errmgr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jump, 1);
}

/* Warnings (corrupt-data notices) and trace messages: Pillow tolerates them, and so do we. */
static void sg_jpeg_on_message(j_common_ptr c, int level) { (void)c, (void)level; }

static void sg_jpeg_on_progress(j_common_ptr c) {
    if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > SG_JPEG_MAX_SCANS) {
        sg_jpeg_errmgr *e = (sg_jpeg_errmgr *)c->err;
        snprintf(e->msg, sizeof e->msg, "Progressive JPEG image has more than %d scans", SG_JPEG_MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

/* The data source: the file in memory, of which data[0 .. end) has been handed over (Pillow's reads so far);
 * libjpeg's window is [next_input_byte, data + end). A skip past end is remembered and taken from the next read. */
typedef struct sg_jpeg_feed {
    struct jpeg_source_mgr pub;
    const uint8_t *data;
    size_t len, end, skip;
} sg_jpeg_feed;

static void sg_jpeg_feed_start(j_decompress_ptr c) { (void)c; }
static void sg_jpeg_feed_term(j_decompress_ptr c) { (void)c; }
static boolean sg_jpeg_feed_fill(j_decompress_ptr c) { (void)c; return FALSE; } /* suspend: the caller reads on */

static void sg_jpeg_feed_skip(j_decompress_ptr c, long n) {
    sg_jpeg_feed *f = (sg_jpeg_feed *)c->src;
    if (n <= 0) return;
    size_t k = (size_t)n < f->pub.bytes_in_buffer ? (size_t)n : f->pub.bytes_in_buffer;
    f->pub.next_input_byte += k, f->pub.bytes_in_buffer -= k;
    f->skip = (size_t)n - k;
}

/* Pillow's next read: 1 with the next 64 KiB handed over (less any skip still owed), 0 when the file has no more. */
static int sg_jpeg_feed_more(sg_jpeg_feed *f) {
    if (f->end >= f->len) return 0;
    f->end = f->len - f->end > SG_JPEG_READ ? f->end + SG_JPEG_READ : f->len;
    size_t pos = (size_t)(f->pub.next_input_byte - f->data), k = f->end - pos < f->skip ? f->end - pos : f->skip;
    pos += k, f->skip -= k;
    f->pub.next_input_byte = f->data + pos, f->pub.bytes_in_buffer = f->end - pos;
    return 1;
}

static void sg_jpeg_feed_init(sg_jpeg_feed *f, j_decompress_ptr c, const uint8_t *data, size_t len) {
    memset(f, 0, sizeof *f);
    f->pub.init_source = sg_jpeg_feed_start, f->pub.term_source = sg_jpeg_feed_term;
    f->pub.fill_input_buffer = sg_jpeg_feed_fill, f->pub.skip_input_data = sg_jpeg_feed_skip;
    f->pub.resync_to_restart = jpeg_resync_to_restart;
    f->data = data, f->len = len;
    f->pub.next_input_byte = data;
    sg_jpeg_feed_more(f);
    c->src = &f->pub;
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
    sg_jpeg_feed feed;
    int created, started; /* jpeg_create_decompress and jpeg_start_decompress done */
    uint8_t *block;      /* SG_JPEG_BLOCK_ROWS decoded rows (3 bytes per pixel, 4 for CMYK) */
    uint8_t *block_rgb;  /* the same rows converted to RGB (CMYK only) */
} sg_jpeg_rows_state;

#define SG_JPEG_BLOCK_ROWS 16 /* rows per hand-over: the resize's transposed block height (SG_RB in resize.c) */

/* Decodes the image fr describes, SG_JPEG_BLOCK_ROWS rows at a time, as Pillow's decoder does (above). Rows go
 * straight into dst (the whole RGB image, fr->dw x fr->dh) when dst is given, else into a small block; then each
 * block goes to sink (may be NULL), whose CPU time is added to *sink_s (may be NULL). Returns 0 or -1. */
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
    sg_jpeg_feed_init(&st->feed, &st->d, data, len);
    int got;
    while ((got = jpeg_read_header(&st->d, FALSE)) != JPEG_HEADER_OK) /* Pillow reads on past a tables-only stream */
        if (got == JPEG_SUSPENDED && !sg_jpeg_feed_more(&st->feed)) goto truncated;
    st->d.dct_method = JDCT_ISLOW;        /* libjpeg's default, and Pillow's */
    st->d.do_fancy_upsampling = TRUE;     /* Pillow's triangle upsampling */
    st->d.out_color_space = fr->is_cmyk ? JCS_CMYK : JCS_RGB; /* grey comes out replicated, as convert("RGB") */
    st->d.scale_num = 1;
    st->d.scale_denom = (unsigned)fr->denom;
    while (!jpeg_start_decompress(&st->d))
        if (!sg_jpeg_feed_more(&st->feed)) goto truncated;
    st->started = 1;
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
            JDIMENSION more = jpeg_read_scanlines(&st->d, rows + n, (JDIMENSION)(SG_JPEG_BLOCK_ROWS - n));
            if (more == 0 && !sg_jpeg_feed_more(&st->feed)) goto truncated;
            n += (int)more;
        }
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
    (void)jpeg_finish_decompress(&st->d); /* with what was handed over: suspended is done, an error is refused */
    rc = 0;
    goto done;
truncated:
    if (st->started)
        sg_pre_err(err, errlen, "JPEG: the file ends at row %u of %u (truncated)", st->d.output_scanline,
                   st->d.output_height);
    else
        sg_pre_err(err, errlen, "JPEG: the file ends before the image data (truncated)");
done:
    if (st->created) jpeg_destroy_decompress(&st->d);
    free(st->block);
    free(st->block_rgb);
    free(st);
    return rc;
}

int sg_pre_decode_jpeg(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen) {
    sg_jpeg_front fr;
    if (sg_jpeg_front_check(data, len, opts, &fr, err, errlen)) return -1;
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
    if (sg_jpeg_front_check(data, len, opts, &fr, err, errlen)) return -1;
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
