/* preprocess/internal.h — what the files of preprocess/ share and nothing outside uses.
 *
 * Each decoder turns encoded bytes into an RGB image with Pillow's convert("RGB") rules, after checking the
 * declared size against the pixel cap (before any pixel buffer is allocated). EXIF orientation is found by
 * the container parsers (JPEG APP1, PNG eXIf/iTXt) and applied once, in sg_pre_orient.
 */
#ifndef SG_PREPROCESS_INTERNAL_H
#define SG_PREPROCESS_INTERNAL_H

#include "preprocess/preprocess.h"

#include <stdarg.h>

/* Bytes per value of a TIFF field type (1 BYTE .. 13 IFD, 16 LONG8) as Pillow's _load_dispatch has them, 0 for a
 * type Pillow skips: the TIFF directory readers (decode_tiff.c, decode_tiff_jpeg.c) and EXIF's (exif.c). */
static inline unsigned sg_tiff_type_size(uint32_t typ) {
    static const unsigned size[17] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8};
    return typ < 17 ? size[typ] : 0;
}

/* The little-endian uint32 and uint16 at p (BMP headers and 16-bit pixels). */
static inline uint32_t sg_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint32_t sg_le16(const uint8_t *p) { return (uint32_t)(p[0] | p[1] << 8); }
/* The big-endian uint32 and uint16 at p (PNG chunks, PSD headers). */
static inline uint32_t sg_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint32_t sg_be16(const uint8_t *p) { return (uint32_t)(p[0] << 8 | p[1]); }
/* One channel of Pillow's cmyk2rgb: nk - MULDIV255(c, nk), with c the C, M or Y value and nk = 255 - K. MULDIV255
 * is Pillow's exact a*b/255, rounded; the result is never below 0 (MULDIV255(c, nk) <= nk). */
static inline uint8_t sg_cmyk2rgb_channel(int c, int nk) {
    int t = c * nk + 128;
    return (uint8_t)(nk - (((t >> 8) + t) >> 8));
}

/* Writes a printf-style reason into err (if err and errlen) and returns -1, so callers can `return sg_pre_err(...)`. */
int sg_pre_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Returns 0 when w x h is a positive size within max_pixels (and fits size_t as RGB), else -1 with a reason
 * naming fmt, the declared size and the cap. On 0 the image's pixels are reserved in the decode budget, which
 * may wait (sg_pre_budget_pixels). */
int sg_pre_check_dims(const char *fmt, uint64_t w, uint64_t h, uint64_t max_pixels, char *err, size_t errlen);
/* The pixel cap on a TIFF tile that is decoded whole into one buffer (a compressed tile, JPEG included): a few
 * compressed bytes could otherwise declare a tile of gigabytes around a tiny image. 0, or -1 with a reason. */
int sg_pre_check_tile(uint64_t tw, uint64_t th, uint64_t max_pixels, char *err, size_t errlen);

/* The decode memory budget (preprocess/budget.c) as the calling thread's image uses it: begin and end bracket one
 * image (they nest: only the outermost pair counts; end gives back everything it reserved); file reserves the
 * encoded bytes before they are read; pixels reserves fmt's estimate for a declared w x h, and is called by
 * sg_pre_check_dims once the size has passed. All do nothing when opts->budget is NULL. */
void sg_pre_budget_begin(const sg_preprocess_opts *opts);
void sg_pre_budget_end(void);
void sg_pre_budget_file(uint64_t bytes);
void sg_pre_budget_pixels(const char *fmt, uint64_t w, uint64_t h);
/* Reserves bytes more for the calling thread's image, for memory its decoder allocates as the stream asks (it may
 * wait, as any reservation). */
void sg_pre_budget_more(uint64_t bytes);

/* Allocates img->rgb for w x h (checked by sg_pre_check_dims first). Returns 0 or -1 with a reason. */
int sg_pre_alloc(sg_rgb_image *img, int w, int h, char *err, size_t errlen);

/* --- jpeg_open.c: Pillow's own walk over a JPEG's segments (JpegImageFile._open) -------------------------- */
typedef struct sg_jpeg_open_info {
    int w, h;        /* the size Pillow takes: the last frame header before the scan */
    int layers;      /* its component count: 1 (L), 3 (RGB) or 4 (CMYK, read as Adobe's inverted CMYK) */
    int orientation; /* the EXIF (else XMP) orientation exif_transpose applies, 1 when none, or SG_EXIF_REFUSED */
} sg_jpeg_open_info;
/* 0 with info filled where Pillow's Image.open accepts the file and finds a scan to decode; -1 with Pillow's reason
 * where it raises. Every read is bounds-checked against len. */
int sg_jpeg_pillow_open(const uint8_t *d, size_t len, int pillow_major, sg_jpeg_open_info *info, char *err,
                        size_t errlen);

/* JPEG via libjpeg-turbo with Pillow's settings. *orientation receives the EXIF orientation (1 when none). */
int sg_pre_decode_jpeg(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen);

/* JPEG decoded and resized in one pass (opts->out_size square, Pillow-exact): the rows go from the decoder to the
 * resize's horizontal pass 16 at a time, so the decoded image is never held whole. Returns 0 (out filled), -1
 * with a reason (the same checks and messages as sg_pre_decode_jpeg), or 1 when this image cannot take that
 * path (an EXIF orientation to apply, or a vertical-first resize): then nothing was written and the caller
 * decodes the whole image instead. stats (may be NULL) gets decode and resize CPU time. */
int sg_pre_jpeg_to_resized(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, uint8_t *out,
                           sg_preprocess_stats *stats, char *err, size_t errlen);

/* PNG: chunk walk (CRC, IHDR, orientation metadata: png_meta.c), then the image data inflated as Pillow's decoder
 * inflates it (inflate.c), unfiltered (png_unfilter.c) and made RGB with Pillow's mode rules. */
int sg_pre_decode_png(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      int *orientation, char *err, size_t errlen);

/* --- png_meta.c: what Pillow keeps of eXIf / tEXt / zTXt / iTXt for getexif() ----------------------- */
typedef struct {
    uint8_t *p; /* owned copy (NUL after the end) */
    size_t n;
    int set;
} sg_png_value;
typedef struct sg_png_meta {
    sg_png_value exif;    /* info["exif"]: eXIf (with "Exif\0\0" in front), or a tEXt / zTXt / iTXt keyed "exif" */
    int exif_is_str;      /* ... from zTXt / iTXt: a str, which getexif() cannot load */
    sg_png_value raw;     /* info["Raw profile type exif"] (ImageMagick) */
    sg_png_value xml;     /* info["XML:com.adobe.xmp"] (any text chunk) */
    sg_png_value xmp;     /* info["xmp"] (iTXt bytes) */
    uint64_t text_memory; /* characters of text so far (check_text_memory) */
} sg_png_meta;            /* zero-initialised to start */
/* Takes one chunk in file order (any type; those not bearing on orientation are ignored). Returns 0, or -1 with
 * a reason where Pillow refuses the file (zTXt method, MAX_TEXT_CHUNK, MAX_TEXT_MEMORY). */
int sg_png_meta_chunk(sg_png_meta *m, const uint8_t *type, const uint8_t *s, size_t n, char *err, size_t errlen);
/* Pillow getexif()'s orientation, XMP fallback included: 1..8, or SG_EXIF_REFUSED where getexif() raises. */
int sg_png_meta_orientation(const sg_png_meta *m, int pillow_major);
void sg_png_meta_free(sg_png_meta *m);

/* --- inflate.c --------------------------------------------------------------------------------------- */
/* Inflates the zlib stream in (trailing bytes ignored) as zlib.decompressobj().decompress(in, max_out) does:
 * 0 with the output (malloc'd, may be NULL when empty; a stream cut short gives what it decoded), 1 when the
 * output passes max_out with input left over (Pillow's ValueError), -1 for a corrupt stream (zlib.error). */
int sg_zlib_inflate(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *out_len);
/* Inflates into n bytes as zlib's inflate with n bytes of room does: decoding goes on after the n-th byte until
 * another byte would be written (a block end, the next block's header and, after the last block, the Adler-32
 * are still checked; input ending there is no error). 0 with out filled, -1 when the stream is corrupt, or ends
 * (or its input ends) before n bytes (out then holds what was decoded). libtiff's Deflate decoding of a strip or
 * tile (tiff_codecs.c). */
int sg_zlib_inflate_exact(const uint8_t *in, size_t len, uint8_t *out, size_t n);
/* A PNG's image data as Pillow's decoder inflates it (ImageFile.load feeds ZipDecode.c the IDAT data in blocks:
 * 64 KiB at most, none across a chunk's end; ends[] are the offsets where they end, ascending, the last = len)
 * into out, n bytes (every row with its filter byte). zlib decodes all it can of the input it was given, so once
 * the n-th byte is out, what follows it in the same block is still read: a block end, the last block's header
 * and the Adler-32, whose errors refuse the image. SG_PNGZ_FULL: n bytes, no error within reach.
 * SG_PNGZ_END: the stream ended (Adler-32 checked) after *got bytes, in the block of its last byte's code
 * (Pillow then ends the image there when *got ends a row, the rest left 0). SG_PNGZ_BROKEN: a corrupt stream
 * (zlib's Z_DATA_ERROR, Pillow's "broken data stream"). SG_PNGZ_SHORT: the input ran out first, or the stream
 * ended where Pillow would not see it (its "image file is truncated"). *last_in: the input's length up to the
 * last output byte's code. */
enum { SG_PNGZ_FULL = 0, SG_PNGZ_END = 1, SG_PNGZ_BROKEN = -1, SG_PNGZ_SHORT = -2 };
int sg_zlib_inflate_png(const uint8_t *in, size_t len, const size_t *ends, size_t n_ends, uint8_t *out, size_t n,
                        size_t *got, size_t *last_in);

/* GIF first frame with Pillow's rules for transparent pixels (palette colour, not black). */
int sg_pre_decode_gif(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      char *err, size_t errlen);

/* 16-bit BMP (uncompressed or BI_BITFIELDS): Pillow's v*255/31 widening, not stb's bit replication. */
int sg_pre_is_bmp16(const uint8_t *data, size_t len);
int sg_pre_decode_bmp16(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                        char *err, size_t errlen);

/* RLE8 / RLE4 BMP (compression 1 / 2) with Pillow's BmpRleDecoder rules: runs cut at the row's end, absolute
 * runs padded to an even file offset, skipped pixels left as index 0, a stream that stops short refused. */
int sg_pre_is_bmp_rle(const uint8_t *data, size_t len);
int sg_pre_decode_bmp_rle(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                          char *err, size_t errlen);

/* PSD (Photoshop) composite image with the rules of Pillow's PsdImagePlugin: 1-bit bitmap, 8-bit grey, indexed,
 * RGB(A), CMYK, multichannel and duotone; raw or PackBits; a file that ends before the data is refused. */
int sg_pre_decode_psd(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      char *err, size_t errlen);

/* TGA with Pillow 13's rules (decode_tga.c): sg_pre_is_tga is Pillow's header test (TGA has no magic number). */
int sg_pre_is_tga(const uint8_t *data, size_t len);
int sg_pre_decode_tga(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      char *err, size_t errlen);

/* TIFF (classic, first image) with the rules of Pillow's TiffImagePlugin and, for compressed data, libtiff's
 * (decode_tiff.c; codecs in tiff_codecs.c). *orientation receives IFD0's Orientation (1 when none). */
int sg_pre_decode_tiff(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen);
/* JPEG-compressed TIFF (Compression 7) as Pillow decodes it through libtiff's JPEG codec (decode_tiff_jpeg.c);
 * called by sg_pre_decode_tiff, with its arguments. */
int sg_pre_decode_tiff_jpeg(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                            int *orientation, char *err, size_t errlen);
/* TIFF strip / tile codecs with libtiff's verdicts (tiff_codecs.c): fill out[0, occ) from in[0, n); 0, or -1
 * where libtiff's codec fails. sg_tiff_unpredict undoes Predictor 2 per row on 8- or 16-bit samples. */
int sg_tiff_lzw(const uint8_t *in, size_t n, uint8_t *out, size_t occ);
int sg_tiff_packbits(const uint8_t *in, size_t n, uint8_t *out, size_t occ);
int sg_tiff_deflate(const uint8_t *in, size_t n, uint8_t *out, size_t occ);
void sg_tiff_unpredict(uint8_t *buf, size_t rows, size_t rowbytes, int stride, int bits, int be);

/* --- WebP: decode_webp.c (the RIFF container with the rules of libwebp 1.6's demuxer and WebPAnimDecoder, which
 * Pillow's WebPImagePlugin decodes through: VP8X, ALPH, ANIM / ANMF first frame on its canvas, EXIF / XMP),
 * decode_webp_vp8l.c (lossless), decode_webp_vp8.c (lossy). Each codec gives libwebp's pixels and fails where
 * libwebp's decoder fails. -------------------------------------------------------------------------------- */
/* A WebP file: the first frame's RGB channels as Pillow's convert("RGB") gives them. *orientation receives the
 * EXIF orientation Pillow's getexif() finds (EXIF chunk, then XMP), 1 when none. */
int sg_pre_decode_webp(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen);
/* VP8L (lossless) bitstream, data = the VP8L chunk's payload (signature byte 0x2f first). sg_vp8l_info reads its
 * 5-byte header: 0 with the size, or -1 with a reason where libwebp's VP8LGetInfo refuses it. */
int sg_vp8l_info(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t errlen);
/* Decodes the whole stream as libwebp's VP8L decoder does into argb[w*h] (0xAARRGGBB, row-major; the caller
 * allocates it from sg_vp8l_info's size after its pixel cap). 0, or -1 with a reason where libwebp fails. */
int sg_vp8l_decode(const uint8_t *data, size_t len, uint32_t *argb, char *err, size_t errlen);
/* An ALPH chunk's lossless alpha (compression method 1): data is the headerless VP8L image stream of a w x h
 * image (the bytes after the ALPH header byte), whose green channel is the alpha, written to alpha[w*h] before
 * any unfiltering. 0, or -1 with a reason where libwebp's alpha decoder fails. */
int sg_vp8l_decode_alpha(const uint8_t *data, size_t len, int w, int h, uint8_t *alpha, char *err, size_t errlen);
/* libwebp's VP8GetInfo on the 10-byte frame header of a VP8 payload of which avail bytes are at data and whose
 * chunk declares size bytes: key frame, profile, show bit, start code, first partition shorter than size, no
 * zero side. 0 with the size, or -1 with a reason. The container's check of every frame (decode_webp.c); the
 * codec's own (sg_vp8_info) makes it first. */
int sg_vp8_get_info(const uint8_t *data, size_t avail, size_t size, int *w, int *h, char *err, size_t errlen);
/* VP8 (lossy) key frame, data = the "VP8 " chunk's payload. sg_vp8_info checks the frame header as libwebp's
 * VP8GetInfo / VP8GetHeaders do: 0 with the size, or -1 with a reason. */
int sg_vp8_info(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t errlen);
/* Decodes it into RGB exactly as libwebp's WebPDecode into MODE_RGBA gives (fancy upsampling of the chroma):
 * w x h pixels of 3 bytes at rgb, rows stride bytes apart. 0, or -1 with a reason where libwebp fails. */
int sg_vp8_decode_rgb(const uint8_t *data, size_t len, uint8_t *rgb, size_t stride, char *err, size_t errlen);

/* BMP (but 16-bit and RLE) through stb_image, 8 bits per channel. fmt names the format for messages. */
int sg_pre_decode_stb(const char *fmt, const uint8_t *data, size_t len, const sg_preprocess_opts *opts,
                      sg_rgb_image *out, char *err, size_t errlen);

/* Binary PNM (P5/P6), any maxval from 1 to 65535, rescaled to 8 bits exactly as Pillow does. */
int sg_pre_decode_pnm(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                      char *err, size_t errlen);

/* Refuses a BMP file shorter than its header implies (stb would read zeros past the end).
 * fmt is "BMP". Returns 0 or -1 with a reason. */
int sg_pre_check_complete(const char *fmt, const uint8_t *data, size_t len, char *err, size_t errlen);
/* The BMP info header sizes Pillow's BmpImagePlugin reads besides OS/2's 12 (BITMAPINFOHEADER and its successors). */
static inline int sg_pre_bmp_header_known(uint32_t hsize) {
    return hsize == 40 || hsize == 52 || hsize == 56 || hsize == 64 || hsize == 108 || hsize == 124;
}
/* The bytes of pixel data Pillow reads for w x h pixels of bpp bits: rows padded to 4 bytes, but the last row's
 * padding is never read. */
static inline uint64_t sg_pre_bmp_data_bytes(uint64_t bpp, uint64_t w, uint64_t h) {
    return h ? (bpp * w + 31) / 32 * 4 * (h - 1) + (bpp * w + 7) / 8 : 0;
}

/* --- resize.c: the streaming form of sg_resize_rgb_pillow ----------------------------------------------- */
/* Source rows arrive in order, up to 16 at a time; the horizontal pass runs on each block as it arrives, the
 * vertical pass at the end. Same bytes as sg_resize_rgb_pillow on the whole image. */
typedef struct sg_resize_stream sg_resize_stream;
/* Plans the resize of an sw x sh image into dst (dw x dh x 3). NULL when the resize cannot stream (Pillow 13's
 * vertical-first order for this size pair, a bad filter or size, out of memory): use sg_resize_rgb_pillow. */
sg_resize_stream *sg_resize_stream_begin(int sw, int sh, uint8_t *dst, int dw, int dh, sg_resample filter,
                                         int pillow_major);
/* Feeds source rows [y, y+n), n <= 16, row r at rows + r*stride (each sw*3 bytes). Returns 0, or -1 on a bad call. */
int sg_resize_stream_rows(sg_resize_stream *r, const uint8_t *rows, size_t stride, int y, int n);
/* Runs what is left (the vertical pass) into dst once every row was fed. Returns 0. */
int sg_resize_stream_end(sg_resize_stream *r);
void sg_resize_stream_free(sg_resize_stream *r);
/* Test hook: on != 0 makes every resize started after it use the portable kernels (what CPUs without AVX2 and
 * other architectures run) even on a CPU with AVX2; 0 gives back the choice by CPU. Returns 1 when this build
 * and CPU have the AVX2 kernels (so the two settings run different code), else 0. Not for use while another
 * thread may start a resize. */
int sg_resize_portable_kernels(int on);

/* --- decode_stb.c: the only file that compiles stb_image ------------------------------------------- */
/* Header-only size query. Returns 0 and w, h, channels in the file, or -1 with stb's reason. */
int sg_stb_info(const uint8_t *data, size_t len, int *w, int *h, int *comp, char *err, size_t errlen);
/* Decodes with req_comp channels (8-bit). Returns a malloc'd buffer (free with free) or NULL with a reason. */
uint8_t *sg_stb_load8(const uint8_t *data, size_t len, int req_comp, int *w, int *h, char *err, size_t errlen);

/* --- png_unfilter.c ---------------------------------------------------------------------------------- */
/* Undoes PNG filter `filter` (0-4) on one row of n bytes of bpp-byte pixels (1..8; n a multiple of bpp): src the
 * filtered bytes (after the filter byte), up the row above as unfiltered (NULL for the first row: zeros), dst the
 * output (not overlapping src or up). Returns 0, or -1 for a filter type above 4.
 * sg_png_unfilter runs the SSE2 kernels on x86-64, sg_png_unfilter_c the portable C (the tests' reference). */
int sg_png_unfilter(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int bpp, int filter);
int sg_png_unfilter_c(uint8_t *dst, const uint8_t *up, const uint8_t *src, size_t n, int bpp, int filter);

/* --- exif.c ------------------------------------------------------------------------------------------ */
/* What Pillow's getexif() makes of a TIFF-structured EXIF block (with or without "Exif\0\0" prefixes) for
 * Pillow major version pillow_major (0 = 13): SG_EXIF_ABSENT when IFD0 has no Orientation entry (Pillow then
 * asks XMP), 1..8 the transpose exif_transpose applies (1: an entry whose value it does not act on), or
 * SG_EXIF_REFUSED when getexif() raises (a header that is not TIFF), so Pillow's pipeline fails on the file.
 * Every offset is bounds-checked against len. */
/* Which TIFF header Pillow's ImageFileDirectory_v2 accepts at p (at least 8 bytes): 0 "MM\0*", 1 "II*\0", 2 "MM*\0",
 * 3 "II\0*", 4 "MM\0+" (BigTIFF's, read as classic), with *be set; -1 for any other. */
int sg_tiff_header(const uint8_t *p, size_t len, int *be);
/* Walks IFD0 of the TIFF structure at tiff[0 .. len) (its header already accepted, byte order be) as
 * ImageFileDirectory_v2.load reads it: a short read or data past the end ends it, unsupported types and empty entries
 * are skipped, and with Pillow 13 a tag's first readable entry only is kept (an entry whose out-of-line data takes the
 * sum past len skipped), with Pillow 12 every one (the last one read is the value). visit(ctx, tag, type, count,
 * value bytes, be) for each entry kept, in file order. Every offset is bounds-checked against len. */
typedef void (*sg_tiff_visit)(void *ctx, uint32_t tag, uint32_t typ, uint32_t count, const uint8_t *v, int be);
void sg_tiff_ifd0_walk(const uint8_t *tiff, size_t len, int be, int pillow_major, sg_tiff_visit visit, void *ctx);
#define SG_EXIF_ABSENT 0
#define SG_EXIF_REFUSED (-1)
int sg_exif_orientation(const uint8_t *tiff, size_t len, int pillow_major);
/* 1 when Pillow's JPEG open, reading the DPI from this EXIF block (JpegImageFile._read_dpi_from_exif, called when no
 * JFIF segment gave one), raises an error it does not catch: an IndexError from an XResolution of one byte, or an
 * empty or one-digit string, beside a ResolutionUnit. Then Image.open fails whatever the orientation. */
int sg_exif_dpi_raises(const uint8_t *tiff, size_t len, int pillow_major);
/* Orientation from XMP text (Pillow's regex tiff:Orientation(="|>)([0-9])), or 0 when absent. */
int sg_xmp_orientation(const uint8_t *xmp, size_t len);
/* Applies Pillow's transpose for orientation 2..8 to img in place (new buffer). Others: no change.
 * Returns 0, or -1 when out of memory. */
int sg_pre_orient(sg_rgb_image *img, int orientation, char *err, size_t errlen);

#endif
