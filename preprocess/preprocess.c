/* preprocess/preprocess.c — the public entry points: caps, format sniffing, decode -> orient -> resize.
 *
 * The format is recognised from the first bytes (never from the file name) and each decoder checks the
 * declared size against the pixel cap before allocating pixels. Formats we do not decode are named in the
 * error (AVIF, HEIF, ...), so a user knows what to convert.
 */
#include "preprocess/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Pillow's DecompressionBombError threshold: 2 * Image.MAX_IMAGE_PIXELS (89,478,485, which only warns).
 * Everything Pillow opens without error we open; above it both refuse. */
#define SG_DEFAULT_MAX_PIXELS (2ull * 89478485ull)
/* 256 MiB: far above any photo (a 100 MP JPEG is ~50 MB), small enough to refuse a stray disk image. */
#define SG_DEFAULT_MAX_FILE_BYTES (256ull << 20)

void sg_preprocess_opts_default(sg_preprocess_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->out_size = 224;
    opts->resample = SG_RESAMPLE_BILINEAR;
    opts->exif_rotate = 1;
    opts->fast_decode = 0;
    opts->max_file_bytes = SG_DEFAULT_MAX_FILE_BYTES;
    opts->max_pixels = SG_DEFAULT_MAX_PIXELS;
}

int sg_pre_err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int sg_pre_check_dims(const char *fmt, uint64_t w, uint64_t h, uint64_t max_pixels, char *err, size_t errlen) {
    if (w == 0 || h == 0) return sg_pre_err(err, errlen, "%s: image size %llux%llu is empty", fmt, (unsigned long long)w, (unsigned long long)h);
    if (w > 0x7fffffff || h > 0x7fffffff || w * h > max_pixels)
        return sg_pre_err(err, errlen, "%s: image of %llux%llu = %llu pixels exceeds the cap of %llu pixels (decompression bomb?)",
                          fmt, (unsigned long long)w, (unsigned long long)h, (unsigned long long)(w * h), (unsigned long long)max_pixels);
    if (w * h > (uint64_t)(SIZE_MAX / 4)) return sg_pre_err(err, errlen, "%s: image too large for this machine", fmt);
    sg_pre_budget_pixels(fmt, w, h);
    return 0;
}

int sg_pre_check_tile(uint64_t tw, uint64_t th, uint64_t max_pixels, char *err, size_t errlen) {
    if (tw * th > max_pixels) /* tw and th are 32-bit values: no overflow */
        return sg_pre_err(err, errlen, "TIFF: tiles of %llu x %llu = %llu pixels exceed the cap of %llu pixels (decompression bomb?)",
                          (unsigned long long)tw, (unsigned long long)th, (unsigned long long)(tw * th),
                          (unsigned long long)max_pixels);
    return 0;
}

int sg_pre_alloc(sg_rgb_image *img, int w, int h, char *err, size_t errlen) {
    img->w = w, img->h = h;
    img->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!img->rgb) return sg_pre_err(err, errlen, "out of memory for a %dx%d image", w, h);
    return 0;
}

void sg_rgb_image_free(sg_rgb_image *img) {
    if (!img) return;
    free(img->rgb);
    img->rgb = NULL;
    img->w = img->h = 0;
}

/* Names a format we recognise but do not decode, or returns NULL. */
static const char *sg_unsupported_name(const uint8_t *d, size_t len) {
    if (len >= 12 && memcmp(d + 4, "ftyp", 4) == 0) {
        if (memcmp(d + 8, "avif", 4) == 0 || memcmp(d + 8, "avis", 4) == 0) return "AVIF";
        if (memcmp(d + 8, "hei", 3) == 0 || memcmp(d + 8, "mif1", 4) == 0 || memcmp(d + 8, "msf1", 4) == 0) return "HEIF/HEIC";
        return "an ISO media file (MP4/MOV/HEIF family)";
    }
    if (len >= 12 && memcmp(d, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0) return "JPEG 2000";
    if (len >= 4 && memcmp(d, "\xff\x4f\xff\x51", 4) == 0) return "JPEG 2000 codestream";
    if ((len >= 2 && d[0] == 0xFF && d[1] == 0x0A) || (len >= 12 && memcmp(d, "\0\0\0\x0cJXL \r\n\x87\n", 12) == 0)) return "JPEG XL";
    if (len >= 4 && memcmp(d, "\0\0\1\0", 4) == 0) return "ICO";
    if (len >= 4 && memcmp(d, "qoif", 4) == 0) return "QOI";
    if (len >= 4 && memcmp(d, "%PDF", 4) == 0) return "PDF";
    if (len >= 4 && memcmp(d, "DDS ", 4) == 0) return "DDS";
    if (len >= 4 && memcmp(d, "\x76\x2f\x31\x01", 4) == 0) return "OpenEXR";
    if (len >= 2 && d[0] == 'P' && (d[1] == '1' || d[1] == '2' || d[1] == '3' || d[1] == '4' || d[1] == '7'))
        return d[1] == '4' ? "PBM bitmap (P4)" : d[1] == '7' ? "PAM (P7)" : "ASCII PNM (P1/P2/P3)";
    if (len >= 1 && (d[0] == '<' || (len >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0))) return "text/XML (SVG or HTML?)";
    return NULL;
}

int sg_decode_rgb(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out, char *err, size_t errlen) {
    sg_preprocess_opts def;
    if (!opts) sg_preprocess_opts_default(&def), opts = &def;
    out->w = out->h = 0, out->rgb = NULL;
    if (!d || len == 0) return sg_pre_err(err, errlen, "empty file (0 bytes)");
    if (len > opts->max_file_bytes)
        return sg_pre_err(err, errlen, "file of %zu bytes exceeds the cap of %llu bytes", len, (unsigned long long)opts->max_file_bytes);
    if (opts->out_size <= 0) return sg_pre_err(err, errlen, "output size %d must be positive", opts->out_size);
    int orientation = 1, rc;
    int orient_always = 0; /* TIFF: Pillow rotates at load (TiffImageFile.load_end), --no-exif-rotate or not */
    if (len >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) {
        rc = sg_pre_decode_jpeg(d, len, opts, out, &orientation, err, errlen);
    } else if (len >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) {
        rc = sg_pre_decode_png(d, len, opts, out, &orientation, err, errlen);
    } else if (len >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) {
        rc = sg_pre_decode_gif(d, len, opts, out, err, errlen);
    } else if (len >= 2 && d[0] == 'B' && d[1] == 'M') {
        rc = sg_pre_is_bmp_rle(d, len) ? sg_pre_decode_bmp_rle(d, len, opts, out, err, errlen)
             : sg_pre_is_bmp16(d, len) ? sg_pre_decode_bmp16(d, len, opts, out, err, errlen)
                                       : sg_pre_decode_stb("BMP", d, len, opts, out, err, errlen);
    } else if (len >= 4 && memcmp(d, "8BPS", 4) == 0) {
        rc = sg_pre_decode_psd(d, len, opts, out, err, errlen);
    } else if (len >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) {
        rc = sg_pre_decode_tiff(d, len, opts, out, &orientation, err, errlen);
        orient_always = 1;
    } else if (len >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6')) {
        rc = sg_pre_decode_pnm(d, len, opts, out, err, errlen);
    } else if (len >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) {
        rc = sg_pre_decode_webp(d, len, opts, out, &orientation, err, errlen);
    } else {
        const char *name = sg_unsupported_name(d, len);
        if (name) return sg_pre_err(err, errlen, "unsupported format: %s (supported: JPEG, PNG, GIF, BMP, TGA, PNM P5/P6, PSD, TIFF, WebP)", name);
        if (!sg_pre_is_tga(d, len)) {
            char hex[3 * 8 + 1] = {0};
            for (size_t i = 0; i < len && i < 8; i++) snprintf(hex + 3 * i, 4, "%02x ", d[i]);
            return sg_pre_err(err, errlen, "unknown image format (first bytes: %.*s; supported: JPEG, PNG, GIF, BMP, TGA, PNM P5/P6, PSD, TIFF, WebP)",
                              (int)(len < 8 ? 3 * len - 1 : 23), hex);
        }
        rc = sg_pre_decode_tga(d, len, opts, out, err, errlen);
    }
    if (rc) {
        sg_rgb_image_free(out);
        return -1;
    }
    if ((opts->exif_rotate || orient_always) && sg_pre_orient(out, orientation, err, errlen)) {
        sg_rgb_image_free(out);
        return -1;
    }
    return 0;
}

/* This thread's CPU time: the stage figures are what the stage cost, not how long a thread that was waiting
 * for a core took (summed over more workers than cores, wall times would exceed the process's CPU time). */
static double sg_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int sg_preprocess_bytes(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, uint8_t *out,
                               sg_preprocess_stats *stats, char *err, size_t errlen) {
    /* JPEG, the common case: decoded straight into the resize when it can be (sg_pre_jpeg_to_resized). The
     * checks sg_decode_rgb makes first are made here too, in the same order, so the same files fail the same
     * way on both paths. */
    if (data && len >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF && len <= opts->max_file_bytes &&
        opts->out_size > 0 && !opts->whole_image) {
        int r = sg_pre_jpeg_to_resized(data, len, opts, out, stats, err, errlen);
        if (r <= 0) return r;
    }
    sg_rgb_image img;
    double t0 = sg_now();
    if (sg_decode_rgb(data, len, opts, &img, err, errlen)) return -1;
    double t1 = sg_now();
    int rc = sg_resize_rgb_pillow(img.rgb, img.w, img.h, out, opts->out_size, opts->out_size, opts->resample,
                                  opts->pillow_major);
    double t2 = sg_now();
    if (rc) sg_pre_err(err, errlen, "resize of %dx%d to %d failed (bad filter or out of memory)", img.w, img.h, opts->out_size);
    sg_rgb_image_free(&img);
    if (stats) stats->decode_s += t1 - t0, stats->resize_s += t2 - t1;
    return rc;
}

int sg_preprocess_memory(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, uint8_t *out,
                         sg_preprocess_stats *stats, char *err, size_t errlen) {
    sg_preprocess_opts def;
    if (!opts) sg_preprocess_opts_default(&def), opts = &def;
    sg_pre_budget_begin(opts);
    sg_pre_budget_file(len); /* bytes the caller holds already (an image from stdin), reserved beside its pixels */
    int rc = sg_preprocess_bytes(data, len, opts, out, stats, err, errlen);
    sg_pre_budget_end();
    return rc;
}

/* sg_preprocess_file inside its image's budget bracket: the file's bytes are reserved before they are read, the
 * pixels by the decoder. */
static int sg_preprocess_path(const char *path, const sg_preprocess_opts *opts, uint8_t *out,
                              sg_preprocess_stats *stats, char *err, size_t errlen) {
    double t0 = sg_now();
    /* O_NONBLOCK: opening a FIFO named as an input would otherwise wait for a writer forever; it is refused
     * below like any file that is not regular, and a regular file reads the same either way. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sg_pre_err(err, errlen, "cannot open: %s", strerror(errno));
    struct stat st;
    FILE *f = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))) {
        close(fd);
        return sg_pre_err(err, errlen, "not a regular file (FIFO, socket or device): not read");
    }
    if ((uint64_t)st.st_size > opts->max_file_bytes) {
        fclose(f);
        return sg_pre_err(err, errlen, "file of %lld bytes exceeds the cap of %llu bytes", (long long)st.st_size,
                          (unsigned long long)opts->max_file_bytes);
    }
    size_t n = (size_t)st.st_size;
    sg_pre_budget_file(n);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return sg_pre_err(err, errlen, "out of memory reading %zu bytes", n);
    }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || got != n) {
        free(buf);
        return sg_pre_err(err, errlen, "read error: got %zu of %zu bytes", got, n);
    }
    if (stats) stats->read_s += sg_now() - t0;
    int rc = sg_preprocess_bytes(buf, n, opts, out, stats, err, errlen);
    free(buf);
    return rc;
}

int sg_preprocess_file(const char *path, const sg_preprocess_opts *opts, uint8_t *out, sg_preprocess_stats *stats,
                       char *err, size_t errlen) {
    sg_preprocess_opts def;
    if (!opts) sg_preprocess_opts_default(&def), opts = &def;
    sg_pre_budget_begin(opts);
    int rc = sg_preprocess_path(path, opts, out, stats, err, errlen);
    sg_pre_budget_end();
    return rc;
}
