/* preprocess/png_meta.c — the PNG chunks that decide Pillow's orientation, read as Pillow's PngStream reads them.
 *
 * Pillow keeps chunk text in im.info, a later chunk replacing an earlier one of the same key, and reads every
 * chunk up to IEND (exif_transpose loads the image first, so text after IDAT counts). getexif() then takes
 * info["exif"] (eXIf, with "Exif\0\0" put in front, or a tEXt keyed "exif"), else the hex of ImageMagick's
 * info["Raw profile type exif"] (the lines after the third "\n", read by bytes.fromhex); the XMP packet is
 * info["XML:com.adobe.xmp"] (tEXt, zTXt or iTXt), else info["xmp"] (iTXt bytes, even when not UTF-8).
 * Verdicts as Pillow's: a zTXt method other than 0, text that inflates past MAX_TEXT_CHUNK (1 MiB) or text
 * totalling over MAX_TEXT_MEMORY (64 MiB of characters) refuse the file; a corrupt zlib stream empties a zTXt
 * and drops an iTXt; an iTXt that is not UTF-8 sets info["xmp"] only; hex that bytes.fromhex rejects, or an
 * info["exif"] that is text (zTXt / iTXt), makes getexif() raise, which refuses the file when orienting.
 */
#include "preprocess/internal.h"
#include "preprocess/text/utf8.h"

#include <stdlib.h>
#include <string.h>

#define SG_MAX_TEXT_CHUNK (1u << 20)              /* PngImagePlugin.MAX_TEXT_CHUNK = ImageFile.SAFEBLOCK */
#define SG_MAX_TEXT_MEMORY (64ull * SG_MAX_TEXT_CHUNK) /* PngImagePlugin.MAX_TEXT_MEMORY */

static const char sg_key_xmp[] = "XML:com.adobe.xmp", sg_key_raw[] = "Raw profile type exif";

/* Replaces a slot's value with a copy of n bytes after a prefix of pn bytes. Returns 0, or -1 out of memory. */
static int sg_meta_set(sg_png_value *v, const void *prefix, size_t pn, const uint8_t *p, size_t n) {
    uint8_t *c = malloc(pn + n + 1);
    if (!c) return -1;
    memcpy(c, prefix, pn);
    if (n) memcpy(c + pn, p, n);
    free(v->p);
    v->p = c, v->n = pn + n, v->set = 1;
    return 0;
}

/* Python's strict UTF-8 decode (the shared decoder, preprocess/text/utf8.h): 1 if valid. *chars gets the length
 * of the decoded str, which check_text_memory counts. */
static int sg_utf8_ok(const uint8_t *p, size_t n, size_t *chars) {
    size_t c = 0;
    for (size_t i = 0; i < n; c++) {
        uint32_t cp;
        int k = sg_utf8_decode(p + i, n - i, &cp);
        if (!k) return 0;
        i += (size_t)k;
    }
    if (chars) *chars = c;
    return 1;
}

static int sg_meta_memory(sg_png_meta *m, size_t chars, char *err, size_t errlen) {
    m->text_memory += chars;
    if (m->text_memory > SG_MAX_TEXT_MEMORY)
        return sg_pre_err(err, errlen, "PNG: text chunks hold more than %llu characters (Pillow's MAX_TEXT_MEMORY)",
                          (unsigned long long)SG_MAX_TEXT_MEMORY);
    return 0;
}

/* Stores a decoded text value under key k (kl bytes); is_str: the value is a Python str (not tEXt "exif"). */
static int sg_meta_keep(sg_png_meta *m, const uint8_t *k, size_t kl, const uint8_t *v, size_t vn, int is_str) {
    sg_png_value *slot = NULL;
    if (kl == 4 && memcmp(k, "exif", 4) == 0) slot = &m->exif, m->exif_is_str = is_str;
    else if (kl == sizeof sg_key_raw - 1 && memcmp(k, sg_key_raw, kl) == 0) slot = &m->raw;
    else if (kl == sizeof sg_key_xmp - 1 && memcmp(k, sg_key_xmp, kl) == 0) slot = &m->xml;
    return slot ? sg_meta_set(slot, "", 0, v, vn) : 0;
}

/* Inflates a zTXt / iTXt payload. 0 with *out (may be NULL when empty), 1 for a corrupt stream (zlib.error),
 * -1 with a reason when Pillow refuses the file (past MAX_TEXT_CHUNK, or out of memory). */
static int sg_meta_inflate(const uint8_t *z, size_t n, uint8_t **out, size_t *on, char *err, size_t errlen) {
    int rc = sg_zlib_inflate(z, n, SG_MAX_TEXT_CHUNK, out, on);
    if (rc > 0) return sg_pre_err(err, errlen, "PNG: compressed text inflates past %u bytes (Pillow's MAX_TEXT_CHUNK)", SG_MAX_TEXT_CHUNK);
    return rc < 0 ? 1 : 0;
}

static int sg_meta_ztxt(sg_png_meta *m, const uint8_t *s, size_t n, char *err, size_t errlen) {
    const uint8_t *nul = memchr(s, 0, n);
    size_t kl = nul ? (size_t)(nul - s) : n, vn = nul ? n - kl - 1 : 0;
    if (vn && s[kl + 1] != 0) return sg_pre_err(err, errlen, "PNG: zTXt compression method %u (Pillow refuses it)", s[kl + 1]);
    uint8_t *v = NULL;
    size_t len = 0;
    int rc = vn ? sg_meta_inflate(s + kl + 2, vn - 1, &v, &len, err, errlen) : 0;
    if (rc < 0) return -1;
    if (rc > 0) len = 0; /* zlib.error: the text is empty */
    int r = kl ? sg_meta_memory(m, len, err, errlen) || sg_meta_keep(m, s, kl, v, len, 1) : 0;
    free(v);
    return r ? -1 : 0;
}

static int sg_meta_itxt(sg_png_meta *m, const uint8_t *s, size_t n, char *err, size_t errlen) {
    const uint8_t *nul = memchr(s, 0, n), *end = s + n;
    if (!nul || end - nul - 1 < 2) return 0;
    size_t kl = (size_t)(nul - s);
    uint8_t cf = nul[1], cm = nul[2];
    const uint8_t *lang = nul + 3, *l_end = memchr(lang, 0, (size_t)(end - lang));
    const uint8_t *tk = l_end ? l_end + 1 : NULL, *tk_end = tk ? memchr(tk, 0, (size_t)(end - tk)) : NULL;
    if (!tk_end) return 0;
    const uint8_t *v = tk_end + 1;
    size_t vn = (size_t)(end - v);
    uint8_t *z = NULL;
    if (cf != 0) {
        if (cm != 0) return 0;
        int rc = sg_meta_inflate(v, vn, &z, &vn, err, errlen);
        if (rc) return rc < 0 ? -1 : 0; /* zlib.error: the chunk is dropped */
        v = z;
    }
    int r = 0;
    size_t chars;
    if (kl == sizeof sg_key_xmp - 1 && memcmp(s, sg_key_xmp, kl) == 0) r = sg_meta_set(&m->xmp, "", 0, v, vn);
    if (!r && sg_utf8_ok(lang, (size_t)(l_end - lang), NULL) && sg_utf8_ok(tk, (size_t)(tk_end - tk), NULL) &&
        sg_utf8_ok(v ? v : (const uint8_t *)"", vn, &chars))
        r = sg_meta_memory(m, chars, err, errlen) || sg_meta_keep(m, s, kl, v, vn, 1);
    free(z);
    return r ? -1 : 0;
}

int sg_png_meta_chunk(sg_png_meta *m, const uint8_t *type, const uint8_t *s, size_t n, char *err, size_t errlen) {
    if (memcmp(type, "eXIf", 4) == 0) return sg_meta_set(&m->exif, "Exif\0\0", 6, s, n) ? sg_pre_err(err, errlen, "PNG: out of memory") : (m->exif_is_str = 0);
    if (memcmp(type, "zTXt", 4) == 0) return sg_meta_ztxt(m, s, n, err, errlen);
    if (memcmp(type, "iTXt", 4) == 0) return sg_meta_itxt(m, s, n, err, errlen);
    if (memcmp(type, "tEXt", 4) != 0) return 0;
    const uint8_t *nul = memchr(s, 0, n);
    size_t kl = nul ? (size_t)(nul - s) : n, vn = nul ? n - kl - 1 : 0;
    if (!kl) return 0;
    if (sg_meta_memory(m, vn, err, errlen)) return -1;
    return sg_meta_keep(m, s, kl, s + kl + 1, vn, !(kl == 4 && memcmp(s, "exif", 4) == 0)) ? sg_pre_err(err, errlen, "PNG: out of memory") : 0;
}

/* bytes.fromhex of the raw profile's lines after the third "\n" (the "\n"s dropped, other whitespace allowed
 * between byte pairs). Returns the byte count into out (room for n / 2), or -1 where fromhex raises. */
static long sg_raw_profile_hex(const uint8_t *p, size_t n, uint8_t *out) {
    size_t i = 0, o = 0;
    for (int lines = 0; i < n && lines < 3; i++) lines += p[i] == '\n';
    int half = -1;
    for (; i < n; i++) {
        uint8_t c = p[i];
        if (c == '\n') continue;
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
        if (d < 0 && half < 0 && (c == ' ' || (c >= '\t' && c <= '\r'))) continue;
        if (d < 0) return -1;
        if (half < 0) half = d;
        else out[o++] = (uint8_t)(half << 4 | d), half = -1;
    }
    return half < 0 ? (long)o : -1;
}

int sg_png_meta_orientation(const sg_png_meta *m, int pillow_major) {
    int o = SG_EXIF_ABSENT;
    if (m->exif.set && m->exif_is_str) { /* Exif.load(str): Pillow 12 returns on an empty one, 13 always raises */
        if (pillow_major != 12 || m->exif.n) return SG_EXIF_REFUSED;
    } else if (m->exif.set) {
        o = sg_exif_orientation(m->exif.p, m->exif.n, pillow_major);
    } else if (m->raw.set) {
        uint8_t *b = malloc(m->raw.n / 2 + 1);
        long bn = b ? sg_raw_profile_hex(m->raw.p, m->raw.n, b) : -1;
        o = bn < 0 ? SG_EXIF_REFUSED : sg_exif_orientation(b, (size_t)bn, pillow_major);
        free(b);
    }
    if (o == SG_EXIF_ABSENT && m->xml.n) o = sg_xmp_orientation(m->xml.p, m->xml.n);
    else if (o == SG_EXIF_ABSENT && m->xmp.n) o = sg_xmp_orientation(m->xmp.p, m->xmp.n);
    return o == SG_EXIF_ABSENT ? 1 : o;
}

void sg_png_meta_free(sg_png_meta *m) {
    free(m->exif.p), free(m->raw.p), free(m->xml.p), free(m->xmp.p);
    memset(m, 0, sizeof *m);
}
