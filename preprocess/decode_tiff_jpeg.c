/* preprocess/decode_tiff_jpeg.c — JPEG-compressed TIFF (Compression 7, "new-style" JPEG), decoded as Pillow 13
 * (and 12) decode it: Pillow hands compressed TIFFs to libtiff, whose JPEG codec (tif_jpeg.c) drives libjpeg-turbo.
 *
 * decode_tiff.c calls sg_pre_decode_tiff_jpeg for Compression 7 and nothing else; this file reads IFD0 again for
 * itself (the few tags it needs), strictly: a tag it reads that appears twice, holds no values, has a type other
 * than the one libtiff and Pillow agree on, or whose data lies past the end of the file, and a directory whose
 * out-of-line data adds up past the file's size (where Pillow 13 starts skipping entries), are refused with a
 * reason rather than guessed at. What Pillow and libtiff do, and what is reproduced here:
 *   - Mode (Pillow's OPEN_INFO, then its libtiff branch): photometric 1 (grey) "L", 0 (WhiteIsZero) "L;I"
 *     (inverted by Pillow's unpacker), 2 (RGB) "RGB", 6 (YCbCr) mode RGB with raw mode "RGB" (Pillow sets libtiff's
 *     JPEGCOLORMODE to RGB for contiguous YCbCr JPEG, so libjpeg converts YCbCr to RGB), 5 (CMYK) "CMYK" (Pillow's
 *     cmyk2rgb). 8 bits per sample, SamplesPerPixel 1 / 3 / 3 / 4, no ExtraSamples, SampleFormat 1, FillOrder 1,
 *     PlanarConfiguration 1; anything else is refused (planar JPEG, alpha, 12-bit, old-style JPEG 6 in
 *     decode_tiff.c).
 *   - Every strip or tile is its own JPEG stream, decoded by one libjpeg decompressor as libtiff does: the
 *     JPEGTables tag (when present) is read first as a tables-only stream (jpeg_read_header(FALSE) must say
 *     "tables only", else libtiff's "Bogus JPEGTables field"); then for each strip or tile jpeg_abort and
 *     jpeg_read_header(TRUE) on its bytes, so tables from JPEGTables, or from an earlier strip that carried its
 *     own, stay in force. The source manager behaves as libtiff's: the strip's bytes (StripByteCounts, cut as
 *     libtiff cuts a huge count), and when they run out a warning and a fake EOI, as often as asked.
 *   - Checks of JPEGPreDecode: the JPEG's size must be the strip's (width x rows of this strip, the last one
 *     shorter) or the tile's; a last strip whose JPEG is taller (same width) is read for its rows only (libtiff
 *     warns); a JPEG larger in any other way is refused (libtiff's error), a smaller one too (libtiff only warns,
 *     then returns rows of a buffer it did not fill: not reproduced). Component count = SamplesPerPixel, data
 *     precision 8; sampling factors: component 0 must have YCbCrSubsampling's (YCbCr; others 1,1), every other
 *     component 1,1. YCbCrSubsampling defaults to 2,2 and, when the tag is absent, libtiff's JPEGFixupTags takes
 *     it from the first strip's SOF (its marker scan is reproduced). Colour: YCbCr -> RGB by libjpeg (contiguous
 *     YCbCr with JPEGCOLORMODE_RGB); every other photometric with jpeg_color_space = out_color_space = UNKNOWN
 *     (the samples as coded: an Adobe or JFIF marker changes nothing). libjpeg's defaults otherwise: ISLOW IDCT,
 *     fancy upsampling (within the strip or tile: strips are separate images). More than 99 scans is libtiff's
 *     error.
 *   - Verdicts: libjpeg warnings are tolerated (libtiff turns them into TIFF warnings, which Pillow silences):
 *     corrupt entropy data and data that ends early decode (a strip cut short is finished from a fake EOI, grey
 *     blocks after the cut), as Pillow decodes them; a libjpeg error (bad marker, no SOI, bad Huffman table, ...)
 *     in jpeg_read_header, jpeg_start_decompress or a scanline fails the strip, so Pillow refuses the file
 *     (decoder error -2). jpeg_finish_decompress runs when every row of the JPEG was read; an error there is
 *     taken for success by libtiff (TIFFjpeg_finish_decompress returns -1, which reads as true): libjpeg is
 *     aborted and the next strip decoded. One exception, refused here: a progressive strip whose data ran out
 *     (libjpeg's block smoothing fills the missing coefficients, and libjpeg-turbo 2.1, linked here, and 3.x, in
 *     Pillow's wheels, were seen to give different pixels: scripts/tiff_differential.py --jpeg). A strip or tile
 *     whose byte count is 0, or whose bytes run past the end of the file, is refused (libtiff's read error); a
 *     single strip whose StripByteCounts is missing or 0 gets libtiff's estimate (the file's size less the header
 *     and the directory, cut at the end of the file). Pillow 13's libtiff (4.7.2, not Pillow 12's 4.7.1) refuses a
 *     strip or tile of more than 100,000,000 bytes decoded whose byte count is under a thousandth of that.
 *   - Placement as Pillow's _decodeStrip / _decodeTile: rows of each strip in order, tiles clipped at the right
 *     and bottom edges. Orientation as the rest of the TIFF decoder (sg_exif_orientation on the file).
 * The declared size (and a tile's) is checked against the pixel cap, a strip's or tile's bytes against Pillow's
 * INT_MAX, every strip's and tile's offset and count against the file, before the image is allocated; libjpeg then only allocates for JPEGs whose size was checked to be the
 * strip's or tile's.
 */
#include "preprocess/internal.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* after stdio.h, which jpeglib.h needs for FILE; jerror.h after jpeglib.h */
#include <jpeglib.h>
#include <jerror.h>

/* --- IFD0, read strictly ------------------------------------------------------------------------------------ */
enum { J_W, J_H, J_BPS, J_COMP, J_PHOTO, J_FILL, J_SOFF, J_SPP, J_RPS, J_SBC, J_PLANAR, J_TW, J_TL, J_TOFF, J_TBC,
       J_EXTRA, J_SFMT, J_TABLES, J_SUBS, J_N };
static const uint16_t sg_tj_tags[J_N] = {256, 257, 258, 259, 262, 266, 273, 277, 278, 279, 284, 322, 323, 324, 325,
                                         338, 339, 347, 530};

typedef struct {
    int set, typ;
    uint32_t count;
    const uint8_t *v;
} sg_tj_entry;

typedef struct {
    const uint8_t *d;
    size_t len;
    int be;
    sg_tj_entry e[J_N];
} sg_tj_ifd;

static uint32_t sg_tj16(const sg_tj_ifd *t, const uint8_t *p) { return t->be ? sg_be16(p) : sg_le16(p); }
static uint32_t sg_tj32(const sg_tj_ifd *t, const uint8_t *p) { return t->be ? sg_be32(p) : sg_le32(p); }

/* Value i of a SHORT or LONG entry. */
static uint32_t sg_tj_val(const sg_tj_ifd *t, const sg_tj_entry *e, uint32_t i) {
    return e->typ == 3 ? sg_tj16(t, e->v + 2 * (size_t)i) : sg_tj32(t, e->v + 4 * (size_t)i);
}

static int sg_tj_read_ifd(sg_tj_ifd *t, char *err, size_t errlen) {
    uint32_t ifd = sg_tj32(t, t->d + 4);
    if (ifd > t->len || t->len - ifd < 2) return sg_pre_err(err, errlen, "TIFF: the first directory lies past the end of the file");
    uint32_t n = sg_tj16(t, t->d + ifd);
    if ((uint64_t)ifd + 2 + 12ull * n > t->len) return sg_pre_err(err, errlen, "TIFF: the directory runs past the end of the file (JPEG-compressed: not read here)");
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = t->d + ifd + 2 + 12ull * i;
        uint32_t tag = sg_tj16(t, e), typ = sg_tj16(t, e + 2), count = sg_tj32(t, e + 4);
        int k = -1;
        for (int j = 0; j < J_N; j++) if (sg_tj_tags[j] == tag) k = j;
        uint64_t size = (uint64_t)count * sg_tiff_type_size(typ);
        if (k < 0 && size == 0) continue; /* skipped by Pillow, not read here */
        if (k >= 0 && size == 0) return sg_pre_err(err, errlen, "TIFF: tag %u of type %u with %u values (JPEG-compressed: not read here)", tag, typ, count);
        const uint8_t *v = e + 8;
        if (size > 4) {
            uint32_t off = sg_tj32(t, e + 8);
            total += size;
            if (off > t->len || size > t->len - off || total > t->len)
                return sg_pre_err(err, errlen, "TIFF: the data of tag %u lies past the end of the file (JPEG-compressed: not read here)", tag);
            v = t->d + off;
        }
        if (k < 0) continue;
        if (t->e[k].set) return sg_pre_err(err, errlen, "TIFF: tag %u appears twice (JPEG-compressed: not read here)", tag);
        int ok = k == J_TABLES ? typ == 7 || typ == 1 : k == J_BPS || k == J_EXTRA || k == J_SFMT || k == J_SUBS ? typ == 3 : typ == 3 || typ == 4;
        if (!ok) return sg_pre_err(err, errlen, "TIFF: tag %u of type %u (JPEG-compressed: not read here)", tag, typ);
        t->e[k].set = 1, t->e[k].typ = (int)typ, t->e[k].count = count, t->e[k].v = v;
    }
    return 0;
}

/* A one-value tag: def when absent; -1 when it has several values. */
static int sg_tj_one(const sg_tj_ifd *t, int k, uint32_t def, uint32_t *v) {
    const sg_tj_entry *e = &t->e[k];
    if (!e->set) return *v = def, 0;
    if (e->count != 1) return -1;
    *v = sg_tj_val(t, e, 0);
    return 0;
}

/* --- libjpeg as libtiff drives it --------------------------------------------------------------------------- */
#define SG_TJ_MAX_SCANS 100 /* libtiff's max_allowed_scan_number: scan 100 is an error */

typedef struct {
    struct jpeg_source_mgr pub;
    const uint8_t *data;
    size_t len;
} sg_tj_src;

typedef struct {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    struct jpeg_progress_mgr progress;
    sg_tj_src src;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX + 64];
    int created, rc, in_finish, again, tables_read;
    int warned; /* a libjpeg warning in this strip or tile */
    uint64_t start; /* the strip or tile to go on from after an error in jpeg_finish_decompress */
    uint64_t ci; /* the strip or tile being decoded, for messages */
    uint8_t *row;
} sg_tj_state;

static const JOCTET sg_tj_eoi[2] = {0xFF, JPEG_EOI};

static void sg_tj_init_source(j_decompress_ptr c) {
    sg_tj_src *s = (sg_tj_src *)c->src;
    s->pub.next_input_byte = s->data, s->pub.bytes_in_buffer = s->len;
}
/* the data ran out: a warning and a fake EOI (libtiff's std_fill_input_buffer) */
static boolean sg_tj_fill(j_decompress_ptr c) {
    WARNMS(c, JWRN_JPEG_EOF);
    c->src->next_input_byte = sg_tj_eoi, c->src->bytes_in_buffer = 2;
    return TRUE;
}
static void sg_tj_skip(j_decompress_ptr c, long n) {
    if (n <= 0) return;
    if ((size_t)n > c->src->bytes_in_buffer) (void)sg_tj_fill(c);
    else c->src->next_input_byte += n, c->src->bytes_in_buffer -= (size_t)n;
}
static void sg_tj_term(j_decompress_ptr c) { (void)c; }

static void sg_tj_on_error(j_common_ptr c) {
    sg_tj_state *st = (sg_tj_state *)c; /* d is the first member */
    (*c->err->format_message)(c, st->msg);
    longjmp(st->jump, 1);
}
static void sg_tj_on_message(j_common_ptr c, int level) { /* warnings: silenced by Pillow; noted for the check below */
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) ((sg_tj_state *)c)->warned = 1;
}
static void sg_tj_on_progress(j_common_ptr c) {
    sg_tj_state *st = (sg_tj_state *)c;
    if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number >= SG_TJ_MAX_SCANS) {
        snprintf(st->msg, sizeof st->msg, "scan number %d exceeds libtiff's maximum (%d)", ((j_decompress_ptr)c)->input_scan_number, SG_TJ_MAX_SCANS);
        longjmp(st->jump, 1);
    }
}
static void sg_tj_set_src(sg_tj_state *st, const uint8_t *p, size_t n) {
    st->src.data = p, st->src.len = n;
    st->src.pub.next_input_byte = NULL, st->src.pub.bytes_in_buffer = 0;
}

/* libtiff's JPEGFixupTagsSubsampling: the first strip's SOF gives YCbCrSubsampling when the tag is absent. */
static void sg_tj_fixup_subsampling(const uint8_t *p, size_t n, uint32_t spp, uint32_t *hs, uint32_t *vs) {
    size_t i = 0;
    for (;;) {
        while (i < n && p[i] != 0xFF) i++;
        while (i < n && p[i] == 0xFF) i++;
        if (i >= n) return;
        uint8_t m = p[i++];
        if (m == 0xD8) continue;
        if (m == 0xFE || (m >= 0xE0 && m <= 0xEF) || m == 0xDB || m == 0xDA || m == 0xC4 || m == 0xDD) {
            if (n - i < 2) return;
            uint32_t len = (uint32_t)p[i] << 8 | p[i + 1];
            if (len < 2) return;
            i += 2;
            i = len - 2 > n - i ? n : i + (len - 2);
            continue;
        }
        if (m == 0xC0 || m == 0xC1 || m == 0xC2 || m == 0xC9 || m == 0xCA) {
            if (n - i < 2) return;
            uint32_t len = (uint32_t)p[i] << 8 | p[i + 1];
            if (len != 8 + spp * 3) return;
            i += 2 + 7; /* precision, height, width, count, first component id */
            if (i >= n) return;
            uint32_t ph = p[i] >> 4, pv = p[i] & 15;
            i += 2;
            for (uint32_t o = 1; o < spp; o++) {
                i += 1;
                if (i >= n) return;
                if (p[i] != 0x11) return;
                i += 2;
            }
            if ((ph != 1 && ph != 2 && ph != 4) || (pv != 1 && pv != 2 && pv != 4)) return;
            *hs = ph, *vs = pv;
            return;
        }
        return;
    }
}

/* Strip or tile i's byte count as libtiff reads it: the tag's (or libtiff's estimate, est), a huge one trimmed. */
static uint64_t sg_tj_count(const sg_tj_ifd *t, const sg_tj_entry *be, uint64_t i, int estimate, uint64_t est, uint64_t chunk_bytes) {
    uint64_t bc = estimate ? est : sg_tj_val(t, be, (uint32_t)i);
    if (bc > 1024 * 1024 && (bc - 4096) / 10 > chunk_bytes) bc = chunk_bytes * 10 + 4096;
    return bc;
}

/* What the decode loop needs, fixed before it starts. */
typedef struct {
    const sg_tj_ifd *t;
    uint32_t w, h, photo, spp, cw, ch;
    uint64_t across, down;
    int tiled;
    uint32_t hs, vs;
    uint64_t chunk_bytes, est;
    int estimate;
    const sg_tj_entry *oe, *be;
    uint8_t *rgb;
} sg_tj_job;

/* Every strip or tile into j->rgb; libjpeg's errors longjmp to sg_tj_run. 0, or -1 with a reason. */
static int sg_tj_decode_all(sg_tj_state *st, const sg_tj_job *j, char *err, size_t errlen) {
    const sg_tj_ifd *tp = j->t;
    const uint8_t *d = tp->d;
    const uint32_t w = j->w, h = j->h, photo = j->photo, spp = j->spp, cw = j->cw, ch = j->ch, hs = j->hs, vs = j->vs;
    const uint64_t across = j->across, down = j->down, chunk_bytes = j->chunk_bytes;
    const int tiled = j->tiled;
    const sg_tj_entry *oe = j->oe, *be = j->be;
    if (tp->e[J_TABLES].set && !st->tables_read) {
        st->tables_read = 1;
        sg_tj_set_src(st, tp->e[J_TABLES].v, tp->e[J_TABLES].count);
        if (jpeg_read_header(&st->d, FALSE) != JPEG_HEADER_TABLES_ONLY)
            return sg_pre_err(err, errlen, "TIFF: the JPEGTables tag holds more than tables (libtiff: bogus JPEGTables field)");
    }
    if (!st->row) st->row = malloc((size_t)cw * spp + 16);
    if (!st->row) return sg_pre_err(err, errlen, "TIFF: out of memory for a row of %u pixels", cw);
    for (uint64_t cy = 0; cy < down; cy++)
        for (uint64_t cx = 0; cx < across; cx++) {
            uint64_t ci = st->ci = cy * across + cx;
            if (ci < st->start) continue;
            uint64_t off = sg_tj_val(tp, oe, (uint32_t)ci), bc = sg_tj_count(tp, be, ci, j->estimate, j->est, chunk_bytes);
            uint32_t x0 = (uint32_t)(cx * cw), y0 = (uint32_t)(cy * ch);
            uint32_t seg_h = tiled ? ch : (h - y0 < ch ? h - y0 : ch); /* rows libtiff expects */
            jpeg_abort_decompress(&st->d);
            st->warned = 0;
            sg_tj_set_src(st, d + off, (size_t)bc);
            jpeg_read_header(&st->d, TRUE);
            JDIMENSION jw = st->d.image_width, jh = st->d.image_height;
            if (jw < cw || jh < seg_h) 
                return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu is %ux%u, smaller than the %ux%u expected (libtiff returns rows it did not decode: not reproduced)",
                           tiled ? "tile" : "strip", (unsigned long long)ci, jw, jh, cw, seg_h);

            if (!(jw == cw && jh > seg_h && !tiled && y0 + seg_h == h) && (jw > cw || jh > seg_h)) 
                return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu is %ux%u, larger than the %ux%u expected (libtiff: JPEG strip/tile size exceeds expected dimensions)",
                           tiled ? "tile" : "strip", (unsigned long long)ci, jw, jh, cw, seg_h);

            if ((uint32_t)st->d.num_components != spp || st->d.data_precision != 8) 
                return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu has %d components of %d bits for %u samples of 8 (libtiff: improper JPEG component count or data precision)",
                           tiled ? "tile" : "strip", (unsigned long long)ci, st->d.num_components, st->d.data_precision, spp);

            for (int c = 0; c < st->d.num_components; c++) {
                uint32_t eh = c ? 1 : hs, ev = c ? 1 : vs;
                if ((uint32_t)st->d.comp_info[c].h_samp_factor != eh || (uint32_t)st->d.comp_info[c].v_samp_factor != ev) 
                    return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu: component %d has sampling factors %d,%d, expected %u,%u (libtiff: improper JPEG sampling factors)",
                               tiled ? "tile" : "strip", (unsigned long long)ci, c, st->d.comp_info[c].h_samp_factor, st->d.comp_info[c].v_samp_factor, eh, ev);

            }
            if (photo == 6) st->d.jpeg_color_space = JCS_YCbCr, st->d.out_color_space = JCS_RGB;
            else st->d.jpeg_color_space = JCS_UNKNOWN, st->d.out_color_space = JCS_UNKNOWN;
            jpeg_start_decompress(&st->d);
            if (st->d.output_width != cw || (uint32_t)st->d.output_components != spp) 
                return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu decodes to %u pixels of %d samples", tiled ? "tile" : "strip", (unsigned long long)ci,
                           st->d.output_width, st->d.output_components);

            uint32_t wn = w - x0 < cw ? w - x0 : cw, hn = h - y0 < ch ? h - y0 : ch;
            for (uint32_t r = 0; r < seg_h; r++) {
                JSAMPROW rp = st->row;
                if (jpeg_read_scanlines(&st->d, &rp, 1) != 1) 
                    return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu stopped at row %u", tiled ? "tile" : "strip", (unsigned long long)ci, r);

                if (r >= hn) continue;
                uint8_t *q = j->rgb + ((size_t)(y0 + r) * w + x0) * 3;
                const uint8_t *s = st->row;
                for (uint32_t x = 0; x < wn; x++, q += 3, s += spp) {
                    if (spp == 3) q[0] = s[0], q[1] = s[1], q[2] = s[2];
                    else if (spp == 1) q[0] = q[1] = q[2] = photo == 0 ? (uint8_t)(255 - s[0]) : s[0];
                    else for (int c = 0; c < 3; c++) q[c] = sg_cmyk2rgb_channel(s[c], 255 - s[3]);
                }
            }
            if (st->d.progressive_mode && st->warned)
                return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu is progressive and damaged or cut short: libjpeg's block smoothing of the missing "
                                  "coefficients differs between libjpeg-turbo versions (2.1 here, 3.x in Pillow): not reproduced", tiled ? "tile" : "strip", (unsigned long long)ci);
            if (st->d.output_scanline >= st->d.output_height) { /* libtiff takes an error here for success */
                st->in_finish = 1;
                jpeg_finish_decompress(&st->d);
                st->in_finish = 0;
            }
        }
    return 0;
}

static int sg_tj_run(const sg_tj_job *j, char *err, size_t errlen) {
    sg_tj_state *st = calloc(1, sizeof *st);
    if (!st) return sg_pre_err(err, errlen, "TIFF: out of memory");
    st->rc = -1;
    do {
        st->again = 0;
        if (setjmp(st->jump)) {
            if (st->in_finish) { /* TIFFjpeg_finish_decompress's -1 is true: libtiff aborts and goes on */
                st->in_finish = 0;
                jpeg_abort((j_common_ptr)&st->d);
                st->start = st->ci + 1, st->again = 1;
            } else {
                sg_pre_err(err, errlen, "TIFF: JPEG %s %llu: %s (libtiff fails; Pillow: decoder error -2)", j->tiled ? "tile" : "strip",
                           (unsigned long long)st->ci, st->msg);
            }
        } else if (st->created) {
            st->rc = sg_tj_decode_all(st, j, err, errlen);
        } else {
        st->d.err = jpeg_std_error(&st->jerr);
        st->jerr.error_exit = sg_tj_on_error;
        st->jerr.emit_message = sg_tj_on_message;
        jpeg_create_decompress(&st->d);
        st->created = 1;
        st->progress.progress_monitor = sg_tj_on_progress;
        st->d.progress = &st->progress;
        st->src.pub.init_source = sg_tj_init_source;
        st->src.pub.fill_input_buffer = sg_tj_fill;
        st->src.pub.skip_input_data = sg_tj_skip;
        st->src.pub.resync_to_restart = jpeg_resync_to_restart;
        st->src.pub.term_source = sg_tj_term;
        st->d.src = &st->src.pub;
        st->rc = sg_tj_decode_all(st, j, err, errlen);
        }
    } while (st->again);
    int rc = st->rc;
    if (st->created) jpeg_destroy_decompress(&st->d);
    free(st->row);
    free(st);
    return rc;
}

int sg_pre_decode_tiff_jpeg(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                            int *orientation, char *err, size_t errlen) {
    sg_tj_ifd t;
    memset(&t, 0, sizeof t);
    t.d = d, t.len = len, t.be = d[0] == 'M'; /* the header's 8 bytes checked by sg_pre_decode_tiff */
    if (sg_tj_read_ifd(&t, err, errlen)) return -1;
    uint32_t w, h, photo, fill, spp, planar, rps, tw = 0, tl = 0;
    if (!t.e[J_W].set || !t.e[J_H].set) return sg_pre_err(err, errlen, "TIFF: no ImageWidth or ImageLength (Pillow: missing dimensions)");
    if (!t.e[J_PHOTO].set) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed without PhotometricInterpretation (Pillow and libtiff guess differently)");
    if (sg_tj_one(&t, J_W, 0, &w) || sg_tj_one(&t, J_H, 0, &h) || sg_tj_one(&t, J_PHOTO, 0, &photo) ||
        sg_tj_one(&t, J_FILL, 1, &fill) || sg_tj_one(&t, J_SPP, 1, &spp) || sg_tj_one(&t, J_PLANAR, 1, &planar) ||
        sg_tj_one(&t, J_RPS, 0xffffffffu, &rps) || sg_tj_one(&t, J_TW, 0, &tw) || sg_tj_one(&t, J_TL, 0, &tl))
        return sg_pre_err(err, errlen, "TIFF: a one-value tag with several values (JPEG-compressed: not read here)");
    uint32_t want = photo == 0 || photo == 1 ? 1 : photo == 2 || photo == 6 ? 3 : photo == 5 ? 4 : 0;
    if (!want) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed photometric %u is not supported (supported: grey, RGB, YCbCr, CMYK)", photo);
    if (spp != want) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed photometric %u with %u samples per pixel is not supported", photo, spp);
    const sg_tj_entry *b = &t.e[J_BPS];
    if (!b->set || (b->count != 1 && b->count != spp)) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with %u BitsPerSample values for %u samples (not supported)", b->set ? b->count : 0, spp);
    for (uint32_t i = 0; i < b->count; i++)
        if (sg_tj_val(&t, b, i) != 8) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with %u-bit samples is not supported (8 only)", sg_tj_val(&t, b, i));
    if (t.e[J_EXTRA].set) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with extra samples is not supported");
    if (t.e[J_SFMT].set)
        for (uint32_t i = 0; i < t.e[J_SFMT].count; i++)
            if (sg_tj_val(&t, &t.e[J_SFMT], i) != 1) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with SampleFormat %u is not supported", sg_tj_val(&t, &t.e[J_SFMT], i));
    if (fill != 1) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with FillOrder %u is not supported", fill);
    if (planar != 1) return sg_pre_err(err, errlen, "TIFF: JPEG-compressed with PlanarConfiguration %u is not supported", planar);
    if (sg_pre_check_dims("TIFF", w, h, opts->max_pixels, err, errlen)) return -1;
    /* strips or tiles */
    int tiled = t.e[J_TW].set || t.e[J_TOFF].set;
    if (tiled ? !t.e[J_TW].set || !t.e[J_TL].set || !t.e[J_TOFF].set || !t.e[J_TBC].set || t.e[J_SOFF].set
              : !t.e[J_SOFF].set)
        return sg_pre_err(err, errlen, "TIFF: JPEG-compressed %s without their offsets and byte counts, or with both strips and tiles (not read here)", tiled ? "tiles" : "strips");
    uint32_t cw, ch;
    if (tiled) {
        if (tw == 0 || tl == 0 || tw > 65535 || tl > 65535)
            return sg_pre_err(err, errlen, "TIFF: JPEG tiles of %u x %u (a JPEG strip or tile has at most 65535 x 65535 pixels)", tw, tl);
        cw = tw, ch = tl;
    } else {
        if (rps == 0) return sg_pre_err(err, errlen, "TIFF: RowsPerStrip of 0 (libtiff cannot read the file)");
        if (rps > 0x7fffffffu && rps != 0xffffffffu) return sg_pre_err(err, errlen, "TIFF: RowsPerStrip of %u (Pillow: decoder error)", rps);
        cw = w, ch = rps > h ? h : rps;
    }
    uint64_t across = ((uint64_t)w + cw - 1) / cw, down = ((uint64_t)h + ch - 1) / ch, nchunks = across * down;
    const sg_tj_entry *oe = &t.e[tiled ? J_TOFF : J_SOFF], *be = &t.e[tiled ? J_TBC : J_SBC];
    /* libtiff estimates the byte count of a single strip when StripByteCounts is missing or 0 (with an offset):
     * the file's size less the header and the directory, cut at the end of the file */
    int estimate = !tiled && nchunks == 1 && oe->count >= 1 && (!be->set || (sg_tj_val(&t, be, 0) == 0 && sg_tj_val(&t, oe, 0) != 0));
    uint64_t est = 0;
    if (!tiled && !be->set && !estimate) return sg_pre_err(err, errlen, "TIFF: no StripByteCounts for %llu strips (libtiff: missing required field)", (unsigned long long)nchunks);
    if (estimate) {
        uint32_t ifd = sg_tj32(&t, d + 4), n = sg_tj16(&t, d + ifd);
        uint64_t space = 8 + 2 + 12ull * n + 4;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = d + ifd + 2 + 12ull * i;
            unsigned u = sg_tiff_type_size(sg_tj16(&t, e + 2));
            if (!u) return sg_pre_err(err, errlen, "TIFF: an entry of unknown type while StripByteCounts must be estimated (libtiff fails)");
            uint64_t ds = (uint64_t)u * sg_tj32(&t, e + 4);
            space += ds > 4 ? ds : 0;
        }
        uint64_t off = sg_tj_val(&t, oe, 0);
        est = len < space ? len : len - space;
        if (off > len - est) est = off >= len ? 0 : len - off;
    }
    if (oe->count < nchunks || (!estimate && be->count < nchunks))
        return sg_pre_err(err, errlen, "TIFF: %llu %s, %u offsets and %u byte counts (libtiff cannot read the file)", (unsigned long long)nchunks,
                          tiled ? "tiles" : "strips", oe->count, be->set ? be->count : 0);
    uint64_t chunk_bytes = (uint64_t)cw * ch * spp; /* TIFFStripSize / TIFFTileSize (upsampled for YCbCr) */
    if (chunk_bytes > 0x7ffffffeu) /* Pillow's _decodeStrip / _decodeTile: more than INT_MAX - 1 bytes */
        return sg_pre_err(err, errlen, "TIFF: a %s of %llu bytes (Pillow: decoder error, out of memory)", tiled ? "tile" : "strip", (unsigned long long)chunk_bytes);
    if (tiled && sg_pre_check_tile(cw, ch, opts->max_pixels, err, errlen)) return -1;
    size_t maxbc = 0;
    for (uint64_t i = 0; i < nchunks; i++) {
        uint64_t off = sg_tj_val(&t, oe, (uint32_t)i), bc = sg_tj_count(&t, be, i, estimate, est, chunk_bytes);
        if (bc == 0) return sg_pre_err(err, errlen, "TIFF: %s %llu has no data (libtiff: invalid byte count 0)", tiled ? "tile" : "strip", (unsigned long long)i);
        if (bc > len || off > len - bc)
            return sg_pre_err(err, errlen, "TIFF: the file is truncated: %s %llu needs bytes %llu..%llu, the file has %zu (libtiff: read error)",
                              tiled ? "tile" : "strip", (unsigned long long)i, (unsigned long long)off, (unsigned long long)(off + bc), len);
        if (opts->pillow_major != 12 && chunk_bytes > 100000000 && bc < chunk_bytes / 1000) /* libtiff 4.7.2 (Pillow 13) */
            return sg_pre_err(err, errlen, "TIFF: %s %llu of %llu bytes has %llu compressed bytes (libtiff 4.7.2: likely invalid byte count; Pillow 13: decoder error -2)",
                              tiled ? "tile" : "strip", (unsigned long long)i, (unsigned long long)chunk_bytes, (unsigned long long)bc);
        if (bc < 2 || d[off] != 0xFF || d[off + 1] != 0xD8) /* libjpeg's first_marker, checked before allocating */
            return sg_pre_err(err, errlen, "TIFF: JPEG %s %llu does not start with SOI (libjpeg: not a JPEG file; Pillow: decoder error -2)",
                              tiled ? "tile" : "strip", (unsigned long long)i);
        if (bc > maxbc) maxbc = (size_t)bc;
    }
    /* YCbCrSubsampling: the tag, else 2,2 fixed up from the first strip's SOF */
    uint32_t hs = 1, vs = 1;
    if (photo == 6) {
        const sg_tj_entry *e = &t.e[J_SUBS];
        if (e->set) {
            if (e->count != 2) return sg_pre_err(err, errlen, "TIFF: YCbCrSubsampling with %u values (not read here)", e->count);
            hs = sg_tj_val(&t, e, 0), vs = sg_tj_val(&t, e, 1);
        } else {
            hs = vs = 2;
            uint64_t off = sg_tj_val(&t, oe, 0), bc = estimate ? est : sg_tj_val(&t, be, 0);
            if (off != 0 && off < len) sg_tj_fixup_subsampling(d + off, (size_t)(bc < len - off ? bc : len - off), spp, &hs, &vs);
        }
    }
    *orientation = sg_exif_orientation(d, len, opts->pillow_major);
    if (*orientation < 1) *orientation = 1;
    if (sg_pre_alloc(out, (int)w, (int)h, err, errlen)) return -1;

    sg_tj_job job = {&t, w, h, photo, spp, cw, ch, across, down, tiled, hs, vs, chunk_bytes, est, estimate, oe, be, out->rgb};
    if (sg_tj_run(&job, err, errlen)) return sg_rgb_image_free(out), -1;
    return 0;
}
