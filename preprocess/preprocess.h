/* preprocess/preprocess.h — from encoded image bytes to the model's S x S RGB input, exactly as Pillow.
 *
 * The reference is HF's PIL path: Image.open → (ImageOps.exif_transpose) → convert("RGB") →
 * resize((S, S), BILINEAR) (model-spec.md §2, §5, §6). Output pixels are uint8, RGB interleaved, row-major
 * (HWC); rescale and normalisation happen in the backends (sg_pixel_to_float in kernel/model.h).
 * All functions are thread-safe and never abort on bad input: they return -1 with a reason.
 */
#ifndef SG_PREPROCESS_H
#define SG_PREPROCESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SG_RESAMPLE_BILINEAR = 2, SG_RESAMPLE_BICUBIC = 3 } sg_resample; /* Pillow's filter ids */

/* A memory budget shared by threads that decode at once (preprocess/budget.c): each image reserves its file's
 * bytes and an estimate of its decoded pixels before it holds them, and waits (first come, first served) while
 * the reservations of the images being decoded would pass the budget; an image larger than the whole budget
 * decodes alone. Thread-safe. */
typedef struct sg_decode_budget sg_decode_budget;
sg_decode_budget *sg_decode_budget_new(uint64_t bytes); /* NULL when out of memory */
void sg_decode_budget_free(sg_decode_budget *b);
typedef struct sg_decode_budget_stats {
    uint64_t limit, peak; /* the budget, and the most reserved at once */
    uint64_t waits, over; /* reservations that waited; images let in over the budget because nothing else ran */
    double wait_s;        /* wall seconds waited, summed over threads */
} sg_decode_budget_stats;
void sg_decode_budget_get_stats(sg_decode_budget *b, sg_decode_budget_stats *st);

typedef struct sg_preprocess_opts {
    int out_size;            /* S: side of the square output (the model's image_size) */
    sg_resample resample;    /* SG_RESAMPLE_BILINEAR (HF siglip2 default) */
    int exif_rotate;         /* 1: apply EXIF orientation (default); 0: raw pixels */
    int fast_decode;         /* 1: JPEG DCT-domain downscale before the exact resize (not bit-exact) */
    uint64_t max_file_bytes; /* files larger than this are refused */
    uint64_t max_pixels;     /* decoded width*height above this is refused */
    int pillow_major;        /* resize pass order of this Pillow major version: 0 = latest (13: vertical pass
                                first for some size pairs), 12 = Pillow <= 12 (horizontal pass always first);
                                also the TGA and TIFF verdicts that differ (preprocess/decode_tga.c,
                                decode_tiff.c) */
    int whole_image;         /* 1: always decode the whole image, then resize; 0 (default): JPEGs are decoded
                                straight into the resize where they can be (same bytes, less memory traffic).
                                For tests and benchmarks that compare the two paths. */
    sg_decode_budget *budget; /* NULL (default): no limit on what threads decoding at once hold */
} sg_preprocess_opts;

/* Fills opts with the defaults: S = 224, bilinear, EXIF on, exact decode, and the default caps. */
void sg_preprocess_opts_default(sg_preprocess_opts *opts);

/* CPU seconds of the calling thread spent in each stage (CLOCK_THREAD_CPUTIME_ID), accumulated by the
 * functions below when a non-NULL pointer is given. */
typedef struct sg_preprocess_stats {
    double read_s, decode_s, resize_s;
} sg_preprocess_stats;

/* A decoded image converted to RGB: w x h x 3 bytes, row-major. */
typedef struct sg_rgb_image {
    int w, h;
    uint8_t *rgb;
} sg_rgb_image;
void sg_rgb_image_free(sg_rgb_image *img);

/* Decodes data (any supported format), converts to RGB with Pillow's convert("RGB") rules and, when
 * opts->exif_rotate, applies the EXIF orientation. Returns 0, or -1 with a reason in err. */
int sg_decode_rgb(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                  char *err, size_t errlen);

/* Pillow's Image.resize for an RGB image: separable, antialiased, 22-bit fixed point with an 8-bit
 * intermediate; same size returns a copy. dst holds dw*dh*3 bytes. Returns 0, or -1 (bad sizes). */
int sg_resize_rgb(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter);
/* The same with the pass order of Pillow major version pillow_major (see sg_preprocess_opts.pillow_major). */
int sg_resize_rgb_pillow(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter,
                         int pillow_major);

/* Decode + convert + orient + resize. out holds opts->out_size^2 * 3 bytes. Returns 0, or -1 with a reason
 * (without the path: callers prefix it). A JPEG is decoded in blocks of 16 rows, each resized horizontally
 * while in cache, when no EXIF orientation is to be applied and the resize runs its horizontal pass first
 * (every photo size; Pillow 13 runs some tall, narrow ones vertical first); otherwise decoded whole. */
int sg_preprocess_memory(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, uint8_t *out,
                         sg_preprocess_stats *stats, char *err, size_t errlen);

/* Same from a file, checking the file-size cap before reading it. */
int sg_preprocess_file(const char *path, const sg_preprocess_opts *opts, uint8_t *out,
                       sg_preprocess_stats *stats, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
