/* preprocess/jpeg_open.c — what Pillow's Image.open learns from a JPEG before libjpeg sees it, and when it refuses.
 *
 * Pillow reads a JPEG's marker segments itself (JpegImagePlugin's JpegImageFile._open) before its decoder hands the
 * whole file to libjpeg, and that walk has verdicts of its own: a byte pair FF xx that is no marker it knows ("no
 * marker found"), a length field or segment cut by the file's end, a frame header (SOFn, or DHP, which it reads as
 * one) of other than 8 bits, 1, 3 or 4 components, or whose component list is not whole, a quantisation table cut
 * short, a JFIF or Adobe segment too short for its version field, an ICC chunk too short for its count byte when
 * a frame header sorts the chunks, a Photoshop resource block cut right after its code; then no frame header (or
 * a zero width or height) or no start-of-scan before the end of the file; and, when no JFIF segment gave the DPI,
 * an EXIF XResolution its DPI reading trips on (sg_exif_dpi_raises). Bytes between segments that are not FF
 * are skipped, FF FF is a fill byte, FF 00 is skipped. Where Pillow refuses, so does this walk; libjpeg's verdict
 * comes after it (decode_jpeg.c). The walk also gives the size and component count Pillow takes (the last frame
 * header before the scan) and the EXIF orientation exif_transpose applies: the EXIF blocks (APP1 "Exif"; later
 * ones appended without their 6-byte prefix), else the last XMP packet, as Pillow's getexif() finds them. An MPF
 * index (APP2 "MPF") makes Pillow open an MPO file, whose first frame is this image: it changes nothing, but for
 * the one index Pillow 12 raises on (sg_jpeg_mpf_pillow12_raises).
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

/* Python's ordering of two byte strings (memcmp, then the shorter first): < 0, 0 or > 0. */
static int sg_bytes_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

/* Pillow's Photoshop (APP13 "Photoshop 3.0") resource walk over s[0 .. sl): 0, or -1 where it raises IndexError
 * (a block that ends right after its resource code, so the name length byte is past the segment). Anything else cut
 * short is a struct.error, which Pillow catches: the walk just ends. */
static int sg_jpeg_photoshop_ok(const uint8_t *s, size_t sl) {
    uint64_t off = 14;
    while (off + 4 <= sl && memcmp(s + off, "8BIM", 4) == 0) {
        off += 4;
        if (off + 2 > sl) return 0;
        unsigned code = sg_be16(s + off);
        off += 2;
        if (off >= sl) return -1;
        off += 1 + (uint64_t)s[off];
        off += off & 1;
        if (off + 4 > sl) return 0;
        uint64_t size = sg_be32(s + off);
        off += 4;
        uint64_t have = off < sl ? sl - off : 0; /* the slice s[off : off + size] */
        if (code == 0x03ED && (size < have ? size : have) < 14) return 0; /* ResolutionInfo reads 14 bytes */
        off += size;
        off += off & 1;
    }
    return 0;
}

/* The segments Pillow's MARKER table reads a length for, by handler: SOF (frame headers and DHP), DQT, APP, COM and
 * Skip (DHT, DAC, SOS, DNL, DRI, EXP). The others of FF C0 .. FF FE (JPG, RSTn, SOI, EOI, JPGn) are bare markers. */
static int sg_jpeg_has_length(unsigned m) {
    return !(m == 0xC8 || (m >= 0xD0 && m <= 0xD9) || (m >= 0xF0 && m <= 0xFD));
}
static int sg_jpeg_is_frame(unsigned m) {
    return (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) || m == 0xDE;
}

/* One frame header's payload s[0 .. sl) as Pillow's SOF handler reads it. 0, or -1 with Pillow's reason. */
static int sg_jpeg_frame(const uint8_t *s, size_t sl, sg_jpeg_open_info *info, char *err, size_t errlen) {
    if (sl < 5) return sg_pre_err(err, errlen, "JPEG: frame header of %zu bytes (Pillow needs the size in it)", sl);
    info->w = (int)sg_be16(s + 3), info->h = (int)sg_be16(s + 1);
    if (s[0] != 8) return sg_pre_err(err, errlen, "JPEG: %d-bit samples (Pillow reads 8-bit JPEGs only)", s[0]);
    if (sl < 6) return sg_pre_err(err, errlen, "JPEG: frame header of 5 bytes has no component count");
    info->layers = s[5];
    if (s[5] != 1 && s[5] != 3 && s[5] != 4)
        return sg_pre_err(err, errlen, "JPEG: %d components (Pillow reads 1, 3 or 4)", s[5]);
    if ((sl - 6) % 3)
        return sg_pre_err(err, errlen, "JPEG: frame header's component list ends inside an entry");
    return 0;
}

/* What the walk keeps of APPn segments between frame headers and until the scan. */
typedef struct sg_jpeg_apps {
    uint8_t *exif;          /* the EXIF blocks joined as Pillow joins them (malloc'd) */
    size_t exif_len;
    const uint8_t *xmp;     /* the last XMP packet, after its namespace and NUL */
    size_t xmp_len;
    int jfif_dpi;           /* a JFIF APP0 gave info["dpi"] (units 1 or 2 with both densities) */
    const uint8_t *icc_min; /* the smallest ICC chunk since the last frame header (Pillow sorts them there) */
    size_t icc_min_len;
    const uint8_t *mpf;     /* the last MPF index (APP2 "MPF\0"), after its 4-byte name */
    size_t mpf_len;
} sg_jpeg_apps;

/* One APPn segment (marker m) as Pillow's APP handler reads it. 0, or -1 with a reason where it raises. */
static int sg_jpeg_app(unsigned m, const uint8_t *s, size_t sl, sg_jpeg_apps *a, char *err, size_t errlen) {
    static const char xmp_id[] = "http://ns.adobe.com/xap/1.0/"; /* followed by a NUL */
    if (m == 0xE0 && sl >= 4 && memcmp(s, "JFIF", 4) == 0) {
        if (sl < 7) return sg_pre_err(err, errlen, "JPEG: JFIF segment of %zu bytes has no version", sl);
        if (sl >= 12 && (s[7] == 1 || s[7] == 2)) a->jfif_dpi = 1;
    } else if (m == 0xE1 && sl >= 6 && memcmp(s, "Exif\0\0", 6) == 0) {
        size_t add = a->exif ? sl - 6 : sl;
        uint8_t *grown = realloc(a->exif, a->exif_len + add + 1);
        if (!grown) return sg_pre_err(err, errlen, "JPEG: out of memory for the EXIF blocks");
        memcpy(grown + a->exif_len, a->exif ? s + 6 : s, add);
        a->exif = grown, a->exif_len += add;
    } else if (m == 0xE1 && sl >= sizeof xmp_id && memcmp(s, xmp_id, sizeof xmp_id) == 0) {
        a->xmp = s + sizeof xmp_id, a->xmp_len = sl - sizeof xmp_id;
    } else if (m == 0xE2 && sl >= 4 && memcmp(s, "MPF\0", 4) == 0) {
        a->mpf = s + 4, a->mpf_len = sl - 4;
    } else if (m == 0xE2 && sl >= 12 && memcmp(s, "ICC_PROFILE\0", 12) == 0) {
        if (!a->icc_min || sg_bytes_cmp(s, sl, a->icc_min, a->icc_min_len) < 0) a->icc_min = s, a->icc_min_len = sl;
    } else if (m == 0xED && sl >= 14 && memcmp(s, "Photoshop 3.0\0", 14) == 0) {
        if (sg_jpeg_photoshop_ok(s, sl))
            return sg_pre_err(err, errlen, "JPEG: Photoshop resource block ends after its code (Pillow raises)");
    } else if (m == 0xEE && sl >= 5 && memcmp(s, "Adobe", 5) == 0) {
        if (sl < 7) return sg_pre_err(err, errlen, "JPEG: Adobe segment of %zu bytes has no version", sl);
    }
    return 0;
}

/* A quantisation table segment as Pillow's DQT handler reads it: whole tables of 1 + 64 or 1 + 128 bytes. */
static int sg_jpeg_dqt(const uint8_t *s, size_t sl, char *err, size_t errlen) {
    while (sl) {
        size_t n = s[0] >> 4 ? 129 : 65;
        if (sl < n) return sg_pre_err(err, errlen, "JPEG: bad quantization table marker (a table cut short)");
        s += n, sl -= n;
    }
    return 0;
}

/* The entries of an MPF index Pillow 12's check reads: NumberOfImages (0xB001) and MPEntry (0xB002), the last of
 * each (Pillow 12 keeps a repeated tag's last entry). */
typedef struct {
    const uint8_t *num, *raw;
    uint32_t t_num, t_raw;
    uint64_t raw_len;
} sg_jpeg_mpf_index;

static void sg_jpeg_visit_mpf(void *ctx, uint32_t tag, uint32_t typ, uint32_t count, const uint8_t *v, int be) {
    (void)be;
    sg_jpeg_mpf_index *x = ctx;
    if (tag == 0xB001) x->num = v, x->t_num = typ;
    if (tag == 0xB002) x->raw = v, x->t_raw = typ, x->raw_len = (uint64_t)count * sg_tiff_type_size(typ);
}

/* Pillow 12's MPF check (JpegImagePlugin._getmp, run by Image.open to tell an MPO file): the index of an APP2 "MPF"
 * segment, mpf[0 .. n), is a TIFF directory whose NumberOfImages entry says how many 16-byte MP entries its MPEntry
 * data holds. Where it holds fewer, Pillow 12 unpacks past its end and raises a struct.error nothing catches, so the
 * file is refused (Pillow 13 catches it and reads the file as a JPEG). Everything else wrong in the index is a
 * SyntaxError or TypeError that Pillow catches. 1 where Pillow 12 raises, else 0. The directory is read as
 * ImageFileDirectory_v2 reads it (sg_tiff_ifd0_walk, Pillow 12's rules). */
static int sg_jpeg_mpf_pillow12_raises(const uint8_t *mpf, size_t n) {
    int be, h = sg_tiff_header(mpf, n, &be); /* "II+\0" (BigTIFF) is not accepted: a SyntaxError on 8 header bytes */
    if (h < 0) return 0;
    int ebe = h == 0; /* the entries are big-endian only under "MM\0*" (Pillow's own test) */
    sg_jpeg_mpf_index x = {0};
    sg_tiff_ifd0_walk(mpf, n, be, 12, sg_jpeg_visit_mpf, &x);
    if (!x.num || !x.raw || !(x.t_raw == 1 || x.t_raw == 7)) return 0; /* no count, no entries, or not bytes: caught */
    const uint8_t *v = x.num;
    uint32_t v16 = be ? sg_be16(v) : sg_le16(v), v32 = be ? sg_be32(v) : sg_le32(v);
    int64_t images; /* the first value: an int for the integer types, else a TypeError in range() */
    switch (x.t_num) {
    case 3: images = v16; break;
    case 4: case 13: images = v32; break; /* LONG, IFD (read as a LONG) */
    case 6: images = (int8_t)v[0]; break;
    case 8: images = (int16_t)v16; break;
    case 9: images = (int32_t)v32; break;
    case 16: { uint64_t b = be ? sg_be32(v + 4) : sg_le32(v + 4), l = be ? (uint64_t)v32 << 32 | b : b << 32 | v32;
               images = l > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)l; break; }
    default: return 0;
    }
    for (int64_t k = 0; k < images; k++) {
        if ((uint64_t)(k + 1) * 16 > x.raw_len) return 1; /* struct.unpack_from past the entries */
        const uint8_t *en = x.raw + k * 16;
        uint32_t attr = ebe ? sg_be32(en) : sg_le32(en);
        if ((attr >> 24) & 7) return 0; /* "unsupported picture format in MPO": a SyntaxError, caught */
    }
    return 0;
}

int sg_jpeg_pillow_open(const uint8_t *d, size_t len, int pillow_major, sg_jpeg_open_info *info, char *err,
                        size_t errlen) {
    memset(info, 0, sizeof *info);
    if (len < 3 || d[0] != 0xFF || d[1] != 0xD8 || d[2] != 0xFF) return sg_pre_err(err, errlen, "not a JPEG file");
    sg_jpeg_apps a = {0};
    int rc = -1, frame = 0, scan = 0;
    size_t p = 3;    /* the byte after the one in hand */
    unsigned c = 0xFF; /* the byte in hand (Pillow's s[0]) */
    for (;;) {
        if (c != 0xFF) { /* junk between segments: the next byte */
            if (p >= len) break;
            c = d[p++];
            continue;
        }
        if (p >= len) break;
        unsigned m = d[p++];
        if (m == 0xFF) continue; /* a fill byte: FF in hand again */
        if (m == 0x00) {         /* FF 00: skipped */
            if (p >= len) break;
            c = d[p++];
            continue;
        }
        if (m < 0xC0) {
            sg_pre_err(err, errlen, "JPEG: FF %02X is not a marker (Pillow: no marker found)", m);
            goto done;
        }
        if (sg_jpeg_has_length(m)) {
            if (len - p < 2) {
                sg_pre_err(err, errlen, "JPEG: the file ends inside marker FF %02X's length", m);
                goto done;
            }
            long n = (long)sg_be16(d + p) - 2;
            p += 2;
            const uint8_t *s = d + p;
            size_t sl = n > 0 ? (size_t)n : 0; /* Pillow reads nothing for a length below 3 */
            if (sl > len - p) {
                sg_pre_err(err, errlen, "JPEG: marker FF %02X's segment of %zu bytes runs past the file's end", m, sl);
                goto done;
            }
            p += sl;
            if (sg_jpeg_is_frame(m)) {
                if (sg_jpeg_frame(s, sl, info, err, errlen)) goto done;
                frame = 1;
                if (a.icc_min && a.icc_min_len < 14) {
                    sg_pre_err(err, errlen, "JPEG: ICC profile chunk of %zu bytes has no count (Pillow raises)",
                               a.icc_min_len);
                    goto done;
                }
                a.icc_min = NULL;
            } else if (m == 0xDB) {
                if (sg_jpeg_dqt(s, sl, err, errlen)) goto done;
            } else if (m >= 0xE0 && m <= 0xEF) {
                if (sg_jpeg_app(m, s, sl, &a, err, errlen)) goto done;
            } else if (m == 0xDA) {
                scan = 1;
                break;
            }
        }
        if (p >= len) break;
        c = d[p++];
    }
    if (!frame) {
        sg_pre_err(err, errlen, "JPEG: no frame header (SOF) before the end of the file: truncated or not a JPEG");
        goto done;
    }
    if (info->w <= 0 || info->h <= 0) {
        sg_pre_err(err, errlen, "JPEG: frame header of %dx%d pixels (Pillow: not identified)", info->w, info->h);
        goto done;
    }
    if (!scan) {
        sg_pre_err(err, errlen, "JPEG: no start-of-scan (SOS) marker before the end of the file: truncated");
        goto done;
    }
    if (pillow_major == 12 && a.mpf && sg_jpeg_mpf_pillow12_raises(a.mpf, a.mpf_len)) {
        sg_pre_err(err, errlen, "JPEG: its MPF index lists more images than entries (Pillow 12 raises on it)");
        goto done;
    }
    if (a.exif && !a.jfif_dpi && sg_exif_dpi_raises(a.exif, a.exif_len, pillow_major)) {
        sg_pre_err(err, errlen, "JPEG: its EXIF XResolution is one byte or digit (Pillow's open raises reading the DPI)");
        goto done;
    }
    /* Pillow's open reads the EXIF once for its DPI (_read_dpi_from_exif) unless JFIF gave it, and swallows an error
     * there by leaving getexif() empty (no orientation, not even XMP's); otherwise exif_transpose raises on it. */
    int o = a.exif ? sg_exif_orientation(a.exif, a.exif_len, pillow_major) : SG_EXIF_ABSENT;
    if (o == SG_EXIF_REFUSED && !a.jfif_dpi) o = 1;
    if (o == SG_EXIF_ABSENT && a.xmp) o = sg_xmp_orientation(a.xmp, a.xmp_len);
    info->orientation = o ? o : 1;
    rc = 0;
done:
    free(a.exif);
    return rc;
}
