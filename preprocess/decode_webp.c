/* preprocess/decode_webp.c — a WebP file as Pillow 13 opens it: the first frame's RGB on its canvas.
 *
 * Pillow's WebPImagePlugin hands the whole file to libwebp 1.6's WebPAnimDecoder (default options: MODE_RGBA)
 * and convert("RGB") drops the alpha channel. This file replays, in order, every step that can refuse a file:
 *  1. Pillow's _accept: "RIFF", "WEBP" at 8 and a first chunk "VP8 ", "VP8L" or "VP8X" at 12 (anything else:
 *     "cannot identify image file"); then its decompression-bomb check on the size _get_size reads from the
 *     first 30 bytes, and Image.open's on the canvas (opts->max_pixels, before any allocation).
 *  2. WebPAnimDecoderNew's WebPGetFeatures over the whole file (sg_webp_features): RIFF size 12 .. 2^32 - 10,
 *     a VP8X chunk of exactly 10 bytes and a canvas under 2^32 pixels; for a still VP8X file a walk over the
 *     chunks to the image that stays inside the RIFF size, and the image's header, whose size must be the
 *     canvas; for a simple file the image's header. It is lenient where the data runs out after VP8X.
 *  3. WebPDemux (sg_webp_demux_parse), which takes only a whole file (a RIFF size past the end refuses it; bytes
 *     after the RIFF chunk are ignored). Chunks are padded to even sizes and every padded size must stay
 *     inside the RIFF chunk; 1..7 bytes left after a chunk refuse the file. Simple file: the image chunk (an
 *     ALPH after it is dropped, chunks after it are never read). VP8X: a payload of at least 10 bytes, flags
 *     within 0x3e, then chunks until the RIFF end: a second VP8X refuses; ALPH / VP8 / VP8L make the one
 *     still frame (ALPH first; a VP8L after ALPH refuses; the ALPH is dropped without the alpha flag), which
 *     must fill the canvas exactly and may not come twice, nor with the animation flag or after ANIM; ANIM
 *     (6 bytes at least; later ones skipped) must precede ANMF; an ANMF's 16-byte header gives the offsets
 *     (2 x 24 bits) and its image chunks follow it, read by the same frame reader, which stops at the first
 *     other chunk: the walk goes on from there, so the ANMF's size only bounds what the frame may read. Its
 *     frame, sized by its own bitstream, must lie inside the canvas; frames count only with the animation
 *     flag, and a frame with ALPH but no image refuses the file. EXIF / XMP / ICCP chunks are kept only with
 *     their flag; Pillow asks for the first of each, and an empty one counts as none.
 *  4. WebPAnimDecoderGetNext on frame 1: the canvas zero-filled (pixels outside the frame are 0,0,0), the
 *     frame decoded with WebPDecode at its offset (its own header checks repeat the demuxer's). VP8L through
 *     decode_webp_vp8l.c, VP8 through decode_webp_vp8.c; both get the payload with its padding byte, as
 *     libwebp hands them io.data_size. A VP8 frame's ALPH is decoded with it and fails it where libwebp's
 *     alpha decoder fails (sg_webp_check_alpha): a payload of 1 byte or less, compression method > 1,
 *     pre-processing > 1, reserved bits set, raw alpha shorter than width x height, or a lossless stream
 *     libwebp refuses. The alpha values never reach RGB (MODE_RGBA is not premultiplied), so the filters
 *     (horizontal / vertical / gradient, which cannot fail) are not undone.
 *  5. Orientation: Pillow's getexif() loads info["exif"] (the first kept EXIF chunk), else finds
 *     tiff:Orientation in info["xmp"]; WebP is not rotated at load, so only with opts->exif_rotate.
 * Every offset is checked against the bytes (RIFF end <= len) before it is read; nothing is allocated until
 * the file has passed steps 1-3 and the canvas its cap, and the first frame is decoded before the canvas is
 * allocated (but a VP8 frame that covers the canvas, decoded into it), so a bad frame on a large canvas costs
 * no canvas. No state outside the call: safe in several threads at once.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

#define SG_WEBP_MAX_PAYLOAD 0xfffffff6u    /* MAX_CHUNK_PAYLOAD: 2^32 - 1 - 8 - 1 */
#define SG_WEBP_MAX_AREA (1ull << 32)       /* MAX_IMAGE_AREA: a canvas or frame of 2^32 pixels or more */
#define SG_WEBP_PILLOW_BOMB_HEAD 30         /* Pillow reads 30 bytes for _accept and _get_size */
enum {                                      /* VP8X flags */
    SG_WEBP_F_ANIM = 0x02, SG_WEBP_F_XMP = 0x04, SG_WEBP_F_EXIF = 0x08, SG_WEBP_F_ALPHA = 0x10,
    SG_WEBP_F_ICCP = 0x20, SG_WEBP_F_VALID = 0x3e
};

static int sg_tag(const uint8_t *p, const char *t) { return memcmp(p, t, 4) == 0; }
/* A chunk tag for messages: its 4 bytes, '?' for those that are not printable ASCII. */
typedef struct { char s[5]; } sg_webp_tag;
static sg_webp_tag sg_tag_text(const uint8_t *p) {
    sg_webp_tag t = {{0}};
    for (int i = 0; i < 4; i++) t.s[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    return t;
}
static uint32_t sg_le24(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16; }

/* ---------------------------------------------------------------------------------------------------------
 * Bitstream headers (VP8GetInfo, VP8LGetInfo), as WebPGetFeatures reads them. */

/* The header of the image whose chunk header is at p (tag, declared size), avail payload bytes after it:
 * VP8GetInfo or VP8LGetInfo with WebPGetFeatures's "not enough data" limits (10 and 5 bytes). */
static int sg_webp_image_info(const uint8_t *p, size_t avail, int *w, int *h, char *err, size_t errlen) {
    if (sg_tag(p, "VP8L")) {
        if (avail < 5)
            return sg_pre_err(err, errlen, "WebP: VP8L data of %zu bytes is shorter than its 5-byte header", avail);
        return sg_vp8l_info(p + 8, avail, w, h, err, errlen);
    }
    return sg_vp8_get_info(p + 8, avail, sg_le32(p + 4), w, h, err, errlen);
}

/* ---------------------------------------------------------------------------------------------------------
 * Step 2: WebPAnimDecoderNew's WebPGetFeatures over the whole file (ParseHeadersInternal without headers).
 * Pillow's _accept has made sure of "RIFF", "WEBP" and a VP8 / VP8L / VP8X tag at 12. */
static int sg_webp_features(const uint8_t *d, size_t len, char *err, size_t errlen) {
    if (len < 20) return sg_pre_err(err, errlen, "WebP: file of %zu bytes ends in its first chunk header", len);
    uint32_t riff = sg_le32(d + 4);
    if (riff < 12 || riff > SG_WEBP_MAX_PAYLOAD)
        return sg_pre_err(err, errlen, "WebP: RIFF size %u outside 12 .. %u", riff, SG_WEBP_MAX_PAYLOAD);
    const uint8_t *p = d + 12;
    size_t n = len - 12;
    int vp8x = 0, cw = 0, ch = 0;
    if (sg_tag(p, "VP8X")) {
        if (sg_le32(p + 4) != 10)
            return sg_pre_err(err, errlen, "WebP: VP8X chunk of %u bytes, not 10", sg_le32(p + 4));
        if (n < 18) return sg_pre_err(err, errlen, "WebP: file ends in the VP8X chunk");
        uint32_t flags = sg_le32(p + 8);
        cw = (int)sg_le24(p + 12) + 1, ch = (int)sg_le24(p + 15) + 1;
        if ((uint64_t)cw * (uint64_t)ch >= SG_WEBP_MAX_AREA)
            return sg_pre_err(err, errlen, "WebP: canvas of %dx%d is 2^32 pixels or more", cw, ch);
        if (flags & SG_WEBP_F_ANIM) return 0; /* an animation: the VP8X header is all it reads */
        p += 18, n -= 18, vp8x = 1;
        /* the chunks before the image, each inside the RIFF size (a 32-bit sum, as libwebp's); running out of
         * data here is no error after a VP8X chunk */
        uint32_t total = 4 + 8 + 10;
        for (;;) {
            if (n < 8) return 0;
            uint32_t size = sg_le32(p + 4);
            if (size > SG_WEBP_MAX_PAYLOAD) return sg_pre_err(err, errlen, "WebP: chunk size %u too large", size);
            uint32_t disk = (8 + size + 1) & ~1u;
            total += disk;
            if (total > riff) return sg_pre_err(err, errlen, "WebP: chunks run past the RIFF size of %u", riff);
            if (sg_tag(p, "VP8 ") || sg_tag(p, "VP8L")) break;
            if (n < disk) return 0;
            p += disk, n -= disk;
        }
    }
    if (n < 8) return vp8x ? 0 : sg_pre_err(err, errlen, "WebP: file ends in the image chunk's header");
    uint32_t size = sg_le32(p + 4);
    if (size > riff - 12)
        return sg_pre_err(err, errlen, "WebP: image chunk of %u bytes past the RIFF size of %u", size, riff);
    n -= 8;
    int lossless = sg_tag(p, "VP8L");
    if (n < (lossless ? 5u : 10u)) return vp8x ? 0 : sg_pre_err(err, errlen, "WebP: file ends in the image header");
    int w, h;
    if (sg_webp_image_info(p, n, &w, &h, err, errlen)) return -1;
    if (vp8x && (w != cw || h != ch))
        return sg_pre_err(err, errlen, "WebP: image of %dx%d on a VP8X canvas of %dx%d", w, h, cw, ch);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Step 3: the demuxer (libwebp's demux.c on a whole file). */

typedef struct sg_webp_frame {
    size_t img_off, img_size;   /* the image chunk: header offset, header + padded payload (0: none) */
    size_t alpha_off, alpha_size; /* the ALPH chunk likewise */
    int x, y, w, h;             /* offset on the canvas (even) and the bitstream's size */
    int num;                    /* frame number, 0 while no image or alpha chunk was seen */
    int complete;               /* an image chunk was found */
} sg_webp_frame;

typedef struct sg_webp_demux {
    const uint8_t *d;
    size_t pos, end;           /* next byte; the RIFF chunk's end (<= the file's length) */
    uint32_t flags;
    int ext;                   /* VP8X file */
    int cw, ch;                /* canvas */
    int nframes;               /* frames added */
    int last_incomplete;       /* the last frame added had no image chunk */
    int anim_chunks;
    sg_webp_frame first;       /* frame 1, the one decoded */
    size_t exif_off, exif_n, xmp_off, xmp_n; /* first kept EXIF / XMP payload (n 0: none) */
    int exif_seen, xmp_seen;
} sg_webp_demux;

/* ParseStatus: more data needed is an error too, as the whole file is there */
enum { SG_WEBP_OK = 0, SG_WEBP_ERR = -1 };

static size_t sg_left(const sg_webp_demux *m) { return m->end - m->pos; }

/* IsValidExtendedFormat's checks of one frame of a VP8X file, made as the frame is added (only frame 1 is
 * kept): it has an image chunk, its ALPH comes first, and it fills the canvas (a still image) or lies inside it
 * (an animation frame). */
static int sg_webp_check_frame(const sg_webp_demux *m, const sg_webp_frame *f, char *err, size_t errlen) {
    if (!f->complete) return sg_pre_err(err, errlen, "WebP: a frame has no image chunk");
    if (f->alpha_size && f->alpha_off > f->img_off) return sg_pre_err(err, errlen, "WebP: ALPH chunk after its image");
    if (!(m->flags & SG_WEBP_F_ANIM)) {
        if (f->x || f->y || f->w != m->cw || f->h != m->ch)
            return sg_pre_err(err, errlen, "WebP: image of %dx%d on a VP8X canvas of %dx%d", f->w, f->h, m->cw, m->ch);
    } else if ((int64_t)f->x + f->w > m->cw || (int64_t)f->y + f->h > m->ch) {
        return sg_pre_err(err, errlen, "WebP: frame of %dx%d at %d,%d outside the %dx%d canvas", f->w, f->h, f->x, f->y,
                          m->cw, m->ch);
    }
    return 0;
}

/* A frame joins the list (AddFrame): refused after a frame that had no image chunk; a VP8X file's frames are
 * checked here (a simple file's one frame always has its image and sets the canvas). */
static int sg_webp_add_frame(sg_webp_demux *m, const sg_webp_frame *f, char *err, size_t errlen) {
    if (m->nframes && m->last_incomplete) return sg_pre_err(err, errlen, "WebP: a frame follows one without an image");
    if (m->ext && sg_webp_check_frame(m, f, err, errlen)) return -1;
    if (m->nframes == 0) m->first = *f;
    m->last_incomplete = !f->complete;
    m->nframes++;
    return SG_WEBP_OK;
}

/* The size of the chunk whose 8-byte header is at m->pos (at least 8 bytes left): its payload and, padded to even,
 * what it takes, which must stay inside the RIFF end. 0, or -1 with a reason. */
static int sg_webp_chunk_size(const sg_webp_demux *m, uint32_t *size, uint32_t *padded, char *err, size_t errlen) {
    const uint8_t *c = m->d + m->pos;
    *size = sg_le32(c + 4);
    if (*size > SG_WEBP_MAX_PAYLOAD) return sg_pre_err(err, errlen, "WebP: chunk size %u too large", *size);
    *padded = *size + (*size & 1);
    if (*padded > sg_left(m) - 8)
        return sg_pre_err(err, errlen, "WebP: '%s' chunk of %u bytes runs past the RIFF end", sg_tag_text(c).s, *size);
    return 0;
}

/* StoreFrame: reads ALPH / VP8 / VP8L chunks into f from pos, stopping before the first other chunk (or a
 * second of a kind); min_size is what must be left when it starts. */
static int sg_webp_store_frame(sg_webp_demux *m, int num, uint32_t min_size, sg_webp_frame *f, char *err,
                               size_t errlen) {
    int alpha_chunks = 0, image_chunks = 0;
    if (sg_left(m) < 8 || sg_left(m) < min_size)
        return sg_pre_err(err, errlen, "WebP: file ends where a frame's chunks should be");
    for (;;) {
        size_t start = m->pos;
        const uint8_t *c = m->d + start;
        uint32_t size = 0, padded = 0;
        if (sg_webp_chunk_size(m, &size, &padded, err, errlen)) return -1;
        int is_alpha = sg_tag(c, "ALPH"), is_image = sg_tag(c, "VP8 ") || sg_tag(c, "VP8L");
        if (sg_tag(c, "VP8L") && alpha_chunks) return sg_pre_err(err, errlen, "WebP: VP8L image after an ALPH chunk");
        if ((!is_alpha && !is_image) || (is_alpha && alpha_chunks) || (is_image && image_chunks)) return SG_WEBP_OK;
        if (is_alpha) {
            alpha_chunks++;
            f->alpha_off = start, f->alpha_size = 8 + (size_t)padded, f->num = num;
        } else {
            if (sg_webp_image_info(c, padded, &f->w, &f->h, err, errlen)) return -1;
            image_chunks++;
            f->img_off = start, f->img_size = 8 + (size_t)padded, f->num = num, f->complete = 1;
        }
        m->pos = start + 8 + padded;
        if (m->pos == m->end) return SG_WEBP_OK;
        if (sg_left(m) < 8) return sg_pre_err(err, errlen, "WebP: %zu stray bytes at the RIFF end", sg_left(m));
    }
}

/* ParseSingleImage: the still image (simple file, or ALPH / VP8 / VP8L at the top level of a VP8X file). */
static int sg_webp_single_image(sg_webp_demux *m, char *err, size_t errlen) {
    if (m->nframes) return sg_pre_err(err, errlen, "WebP: a second image at the top level");
    sg_webp_frame f = {0};
    if (sg_webp_store_frame(m, 1, 0, &f, err, errlen)) return -1;
    if (!(m->flags & SG_WEBP_F_ALPHA)) f.alpha_off = f.alpha_size = 0; /* no alpha flag: ALPH ignored */
    if (!m->ext && f.complete) m->cw = f.w, m->ch = f.h;
    return sg_webp_add_frame(m, &f, err, errlen);
}

/* ParseAnimationFrame: an ANMF chunk of padded size `padded` whose header starts at pos. */
static int sg_webp_anmf(sg_webp_demux *m, uint32_t padded, char *err, size_t errlen) {
    if (padded < 16) return sg_pre_err(err, errlen, "WebP: ANMF chunk of %u bytes, under 16", padded);
    const uint8_t *p = m->d + m->pos;
    sg_webp_frame f = {0};
    f.x = 2 * (int)sg_le24(p), f.y = 2 * (int)sg_le24(p + 3);
    uint64_t w = sg_le24(p + 6) + 1ull, h = sg_le24(p + 9) + 1ull;
    if (w * h >= SG_WEBP_MAX_AREA)
        return sg_pre_err(err, errlen, "WebP: ANMF frame of %llux%llu is 2^32 pixels or more",
                                                     (unsigned long long)w, (unsigned long long)h);
    f.w = (int)w, f.h = (int)h; /* replaced by the bitstream's size when there is an image chunk */
    m->pos += 16;
    size_t start = m->pos;
    if (sg_webp_store_frame(m, m->nframes + 1, padded - 16, &f, err, errlen)) return -1;
    if (m->pos - start > padded - 16) return sg_pre_err(err, errlen, "WebP: a frame's chunks run past its ANMF chunk");
    if ((m->flags & SG_WEBP_F_ANIM) && f.num > 0) return sg_webp_add_frame(m, &f, err, errlen);
    return SG_WEBP_OK;
}

/* ParseVP8XChunks: the chunks after VP8X, to the RIFF end. */
static int sg_webp_vp8x_chunks(sg_webp_demux *m, char *err, size_t errlen) {
    const int anim = !!(m->flags & SG_WEBP_F_ANIM);
    for (;;) {
        size_t start = m->pos;
        const uint8_t *c = m->d + start;
        uint32_t size = 0, padded = 0;
        if (sg_webp_chunk_size(m, &size, &padded, err, errlen)) return -1;
        int skip = 1, rc = 0; /* skip: a chunk passed over whole (ICCP and unknown ones play no part here) */
        if (sg_tag(c, "VP8X")) return sg_pre_err(err, errlen, "WebP: a second VP8X chunk");
        if (sg_tag(c, "ALPH") || sg_tag(c, "VP8 ") || sg_tag(c, "VP8L")) {
            if (anim || m->anim_chunks) return sg_pre_err(err, errlen, "WebP: a still image in an animation");
            rc = sg_webp_single_image(m, err, errlen), skip = 0;
        } else if (sg_tag(c, "ANIM")) { /* the first gives background and loop count; later ones are skipped */
            if (padded < 6) return sg_pre_err(err, errlen, "WebP: ANIM chunk of %u bytes, under 6", size);
            m->anim_chunks = 1;
        } else if (sg_tag(c, "ANMF")) {
            if (!m->anim_chunks) return sg_pre_err(err, errlen, "WebP: ANMF before ANIM");
            m->pos += 8;
            rc = sg_webp_anmf(m, padded, err, errlen), skip = 0;
        } else if (sg_tag(c, "EXIF")) {
            if ((m->flags & SG_WEBP_F_EXIF) && !m->exif_seen)
                m->exif_seen = 1, m->exif_off = start + 8, m->exif_n = size;
        } else if (sg_tag(c, "XMP ")) {
            if ((m->flags & SG_WEBP_F_XMP) && !m->xmp_seen) m->xmp_seen = 1, m->xmp_off = start + 8, m->xmp_n = size;
        }
        if (rc) return -1;
        if (skip) m->pos = start + 8 + padded;
        if (m->pos == m->end) return SG_WEBP_OK;
        if (sg_left(m) < 8) return sg_pre_err(err, errlen, "WebP: %zu stray bytes at the RIFF end", sg_left(m));
    }
}

/* WebPDemux on the whole file: 0 with m filled, or -1 with a reason. */
static int sg_webp_demux_parse(const uint8_t *d, size_t len, sg_webp_demux *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->d = d;
    if (len < 20) return sg_pre_err(err, errlen, "WebP: file of %zu bytes ends in its first chunk header", len);
    uint32_t riff = sg_le32(d + 4);
    if (riff < 8 || riff > SG_WEBP_MAX_PAYLOAD) return sg_pre_err(err, errlen, "WebP: RIFF size %u out of range", riff);
    if ((uint64_t)riff + 8 > len)
        return sg_pre_err(err, errlen, "WebP: file of %zu bytes is cut short of its RIFF size (%llu bytes)", len,
                          (unsigned long long)riff + 8);
    m->end = (size_t)riff + 8, m->pos = 12;
    const uint8_t *c = d + 12;
    if (sg_tag(c, "VP8 ") || sg_tag(c, "VP8L")) {
        if (sg_left(m) < 8) return sg_pre_err(err, errlen, "WebP: RIFF chunk ends in the image chunk's header");
        return sg_webp_single_image(m, err, errlen);
    }
    /* VP8X (the only other tag _accept lets through) */
    if (sg_left(m) < 8) return sg_pre_err(err, errlen, "WebP: RIFF chunk ends in the VP8X chunk header");
    m->ext = 1;
    uint32_t size = sg_le32(c + 4);
    if (size > SG_WEBP_MAX_PAYLOAD || size < 10) return sg_pre_err(err, errlen, "WebP: VP8X chunk of %u bytes", size);
    uint32_t padded = size + (size & 1);
    if (padded > sg_left(m) - 8) return sg_pre_err(err, errlen, "WebP: VP8X chunk runs past the RIFF end");
    m->flags = c[8];
    m->cw = (int)sg_le24(c + 12) + 1, m->ch = (int)sg_le24(c + 15) + 1;
    if ((uint64_t)m->cw * (uint64_t)m->ch >= SG_WEBP_MAX_AREA)
        return sg_pre_err(err, errlen, "WebP: canvas of %dx%d is 2^32 pixels or more", m->cw, m->ch);
    m->pos = 12 + 8 + (size_t)padded;
    if (sg_left(m) < 8) return sg_pre_err(err, errlen, "WebP: no chunk after VP8X");
    if (sg_webp_vp8x_chunks(m, err, errlen)) return -1;
    if (m->flags & ~(uint32_t)SG_WEBP_F_VALID)
        return sg_pre_err(err, errlen, "WebP: VP8X flags 0x%02x has reserved bits", m->flags);
    if (!m->nframes) return sg_pre_err(err, errlen, "WebP: no frame");
    return 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Steps 1, 4 and 5. */

/* Pillow's _get_size on the first 30 bytes and its decompression-bomb check (max(1, side) each way), made
 * before libwebp sees the file. 0, or -1 with a reason. */
static int sg_webp_head_bomb(const uint8_t *d, size_t len, uint64_t max_pixels, char *err, size_t errlen) {
    uint64_t w = 0, h = 0;
    if (sg_tag(d + 12, "VP8 ") && len >= SG_WEBP_PILLOW_BOMB_HEAD && d[23] == 0x9d && d[24] == 0x01 && d[25] == 0x2a) {
        w = sg_le16(d + 26) & 0x3fff, h = sg_le16(d + 28) & 0x3fff;
    } else if (sg_tag(d + 12, "VP8X") && len >= SG_WEBP_PILLOW_BOMB_HEAD) {
        w = sg_le24(d + 24) + 1ull, h = sg_le24(d + 27) + 1ull;
    } else if (sg_tag(d + 12, "VP8L") && len >= 25 && d[20] == 0x2f) {
        uint32_t bits = sg_le32(d + 21);
        w = (bits & 0x3fff) + 1ull, h = ((bits >> 14) & 0x3fff) + 1ull;
    }
    w += !w, h += !h;
    if (w * h > max_pixels) return sg_pre_check_dims("WebP", w, h, max_pixels, err, errlen);
    return 0;
}

/* A VP8 frame's ALPH payload (n bytes, its declared size) for a w x h frame: libwebp's ALPHInit checks, then
 * for lossless alpha the whole stream decoded (its values are dropped: only the verdict counts). */
static int sg_webp_check_alpha(const uint8_t *a, size_t n, int w, int h, int decode, char *err, size_t errlen) {
    if (n <= 1) return sg_pre_err(err, errlen, "WebP: ALPH chunk of %zu bytes has no data", n);
    int method = a[0] & 3, pre = (a[0] >> 4) & 3, rsrv = a[0] >> 6;
    if (method > 1 || pre > 1 || rsrv)
        return sg_pre_err(err, errlen, "WebP: ALPH header 0x%02x (method %d, pre-processing %d, reserved %d)", a[0],
                          method, pre, rsrv);
    size_t npix = (size_t)w * (size_t)h;
    if (method == 0) {
        if (n - 1 < npix) return sg_pre_err(err, errlen, "WebP: raw alpha of %zu bytes for %zu pixels", n - 1, npix);
        return 0;
    }
    if (!decode) return 0;
    uint8_t *alpha = malloc(npix);
    if (!alpha) return sg_pre_err(err, errlen, "WebP: out of memory for a %dx%d alpha plane", w, h);
    int rc = sg_vp8l_decode_alpha(a + 1, n - 1, w, h, alpha, err, errlen);
    free(alpha);
    return rc ? -1 : 0;
}

/* Allocates the canvas (cw x ch, zeroed unless the frame covers it) and copies frame f's pixels from src to its
 * offset (src: f->w x f->h pixels, 3 bytes each, or 4 as 0xAARRGGBB when argb). 0, or -1 out of memory. */
static int sg_webp_canvas(sg_rgb_image *img, int cw, int ch, const void *src, int argb, const sg_webp_frame *f,
                          char *err, size_t errlen) {
    if (sg_pre_alloc(img, cw, ch, err, errlen)) return -1;
    size_t stride = (size_t)cw * 3;
    if (f->w != cw || f->h != ch) memset(img->rgb, 0, stride * (size_t)ch);
    for (int y = 0; y < f->h; y++) {
        uint8_t *o = img->rgb + (size_t)(f->y + y) * stride + (size_t)f->x * 3;
        if (!argb) {
            memcpy(o, (const uint8_t *)src + (size_t)y * (size_t)f->w * 3, (size_t)f->w * 3);
            continue;
        }
        const uint32_t *s = (const uint32_t *)src + (size_t)y * (size_t)f->w;
        for (int x = 0; x < f->w; x++, o += 3) /* 0xAARRGGBB: alpha dropped */
            o[0] = (uint8_t)(s[x] >> 16), o[1] = (uint8_t)(s[x] >> 8), o[2] = (uint8_t)s[x];
    }
    return 0;
}

/* Decodes frame f (checked by the demuxer) and puts it on a cw x ch canvas in img. The frame is decoded before
 * the canvas is allocated, except a VP8 frame that covers the canvas, which is decoded straight into it. 0, or
 * -1 with a reason (img then holds nothing). */
static int sg_webp_decode_frame(const uint8_t *d, const sg_webp_frame *f, int cw, int ch, sg_rgb_image *img,
                                char *err, size_t errlen) {
    const uint8_t *c = d + f->img_off, *payload = c + 8;
    size_t n = f->img_size - 8; /* with the padding byte, as libwebp's io.data_size */
    size_t npix = (size_t)f->w * (size_t)f->h;
    int rc;
    if (sg_tag(c, "VP8L")) {
        uint32_t *argb = malloc(npix * 4);
        if (!argb) return sg_pre_err(err, errlen, "WebP: out of memory for a %dx%d frame", f->w, f->h);
        rc = sg_vp8l_decode(payload, n, argb, err, errlen) || sg_webp_canvas(img, cw, ch, argb, 1, f, err, errlen);
        free(argb);
        return rc ? -1 : 0;
    }
    if (f->w == cw && f->h == ch) { /* the common case: no copy */
        rc = sg_pre_alloc(img, cw, ch, err, errlen) ||
             sg_vp8_decode_rgb(payload, n, img->rgb, (size_t)cw * 3, err, errlen);
    } else {
        uint8_t *rgb = malloc(npix * 3);
        if (!rgb) return sg_pre_err(err, errlen, "WebP: out of memory for a %dx%d frame", f->w, f->h);
        rc = sg_vp8_decode_rgb(payload, n, rgb, (size_t)f->w * 3, err, errlen) ||
             sg_webp_canvas(img, cw, ch, rgb, 0, f, err, errlen);
        free(rgb);
    }
    if (!rc && f->alpha_size) { /* decoded with the frame in libwebp, which fails where it fails */
        const uint8_t *a = d + f->alpha_off;
        rc = sg_webp_check_alpha(a + 8, sg_le32(a + 4), f->w, f->h, 1, err, errlen);
    }
    if (rc) sg_rgb_image_free(img);
    return rc ? -1 : 0;
}

/* getexif()'s orientation: the EXIF chunk (Exif.load), else tiff:Orientation in the XMP chunk. */
static int sg_webp_orientation(const uint8_t *d, const sg_webp_demux *m, int pillow_major) {
    int o = m->exif_n ? sg_exif_orientation(d + m->exif_off, m->exif_n, pillow_major) : SG_EXIF_ABSENT;
    if (o == SG_EXIF_ABSENT && m->xmp_n) o = sg_xmp_orientation(d + m->xmp_off, m->xmp_n);
    return o == SG_EXIF_ABSENT ? 1 : o;
}

int sg_pre_decode_webp(const uint8_t *data, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out,
                       int *orientation, char *err, size_t errlen) {
    *orientation = 1;
    if (len < 16 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WEBP", 4) != 0)
        return sg_pre_err(err, errlen, "WebP: file of %zu bytes too short to identify (Pillow reads 16)", len);
    const uint8_t *first = data + 12;
    if (!sg_tag(first, "VP8 ") && !sg_tag(first, "VP8L") && !sg_tag(first, "VP8X")) {
        return sg_pre_err(err, errlen, "WebP: first chunk '%s' is not VP8, VP8L or VP8X (Pillow cannot identify it)",
                          sg_tag_text(first).s);
    }
    if (sg_webp_head_bomb(data, len, opts->max_pixels, err, errlen)) return -1;
    if (len < 20) return sg_pre_err(err, errlen, "WebP: file of %zu bytes ends in its first chunk header", len);
    sg_webp_demux m;
    if (sg_webp_features(data, len, err, errlen) || sg_webp_demux_parse(data, len, &m, err, errlen)) return -1;
    const sg_webp_frame *f = &m.first;
    /* the canvas, then the frame (inside the canvas after the demuxer's checks, so never the one refused) */
    if (sg_pre_check_dims("WebP", (uint64_t)m.cw, (uint64_t)m.ch, opts->max_pixels, err, errlen) ||
        sg_pre_check_dims("WebP", (uint64_t)f->w, (uint64_t)f->h, opts->max_pixels, err, errlen))
        return -1;
    /* the codec's own header checks and, for VP8, the alpha header, before the canvas is allocated */
    int fw, fh, lossless = sg_tag(data + f->img_off, "VP8L");
    size_t n = f->img_size - 8;
    if ((lossless ? sg_vp8l_info : sg_vp8_info)(data + f->img_off + 8, n, &fw, &fh, err, errlen)) return -1;
    if (fw != f->w || fh != f->h)
        return sg_pre_err(err, errlen, "WebP: frame header read as %dx%d and %dx%d", f->w, f->h, fw, fh);
    if (!lossless && f->alpha_size &&
        sg_webp_check_alpha(data + f->alpha_off + 8, sg_le32(data + f->alpha_off + 4), fw, fh, 0, err, errlen))
        return -1;
    if (sg_webp_decode_frame(data, f, m.cw, m.ch, out, err, errlen)) return -1;
    if (opts->exif_rotate) *orientation = sg_webp_orientation(data, &m, opts->pillow_major);
    if (*orientation == SG_EXIF_REFUSED) { /* only exif_transpose calls getexif(), after the frame is loaded */
        sg_rgb_image_free(out);
        return sg_pre_err(err, errlen, "WebP: the EXIF chunk is not TIFF data: Pillow's exif_transpose raises on it");
    }
    return 0;
}
