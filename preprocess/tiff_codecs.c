/* preprocess/tiff_codecs.c — the compressions of TIFF strips and tiles, with the verdicts of libtiff 4.7.
 *
 * Pillow hands every compressed TIFF to libtiff (TIFFReadEncodedStrip / TIFFReadTile), which asks the codec for
 * exactly one strip's or tile's bytes (occ) from exactly StripByteCounts bytes of input. Each function here fills
 * out[0, occ) from in[0, n) and returns 0, or -1 where libtiff's codec fails (Pillow: decoder error -2):
 *   - LZW (tif_lzw.c, new style: codes MSB first, 9 to 12 bits, one code early): the table starts unusable, so
 *     the first code must be Clear (256); a code past the next free entry, or a regular code once the table is
 *     full (5119 entries, libtiff's CSIZE) without a Clear, is "using code not yet in table"; a code after Clear
 *     above 257 likewise; EOI or the end of the input before occ bytes is an error; the stream stops being read
 *     once occ bytes are out (a string longer than what is left is cut). Old-style LZW (first byte 0, second
 *     odd: libtiff's compatibility decoder) is refused by the caller.
 *   - PackBits (tif_packbits.c): one stream over the whole strip; 0x80 is a no-op; a run or literal longer than
 *     what is left of occ is cut; input that ends before occ bytes is an error ("not enough data").
 *   - Deflate (tif_zip.c: zlib inflate with occ bytes of room): inflate.c's decoder, stopped where zlib stops:
 *     when a byte past occ would be written (a block end right after the last byte, and then the Adler-32, are
 *     still checked; a length and distance read with no room left end it too, the distance unchecked). A stream that ends, or whose input ends, before occ bytes is an error.
 * Horizontal differencing (Predictor 2) is undone per row after decoding, on 8- or 16-bit samples.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

/* --- LZW ---------------------------------------------------------------------------------------------------- */
#define SG_LZW_CSIZE 5119 /* libtiff: MAXCODE(12) + 1024 entries */

typedef struct {
    uint32_t off;   /* where its string already stands whole in out (entries >= 258, once added) */
    uint16_t len;   /* string length (0: never filled) */
    uint8_t first;  /* its first byte */
} sg_lzw_entry;     /* 8 bytes: the table (40 KB) stays close to L1 */

int sg_tiff_lzw(const uint8_t *in, size_t n, uint8_t *out, size_t occ) {
    if (occ == 0) return 0;
    if (occ > UINT32_MAX) return -1; /* past 4 GB a strip: only with --max-pixels raised far past its default */
    sg_lzw_entry *t = malloc(sizeof(sg_lzw_entry) * SG_LZW_CSIZE);
    if (!t) return -1;
    for (int i = 0; i < 256; i++) t[i].len = 1, t[i].first = (uint8_t)i, t[i].off = 0;
    for (int i = 256; i < SG_LZW_CSIZE; i++) t[i].len = 0, t[i].first = 0, t[i].off = 0;
    uint64_t bits_left = (uint64_t)n * 8, pos = 0;
    uint32_t acc = 0;
    int accbits = 0, nbits = 9, rc = -1;
    int free_ent = -1;  /* -1: libtiff's "before the table" (no entry may be added) */
    int maxcode = 510;  /* the width grows when free_ent passes this: (1 << nbits) - 2 */
    int old = 0;        /* entry 0 at the start, as libtiff's dec_oldcodep */
    size_t o = 0, old_off = 0; /* old_off: where old's string was written */
    for (;;) {
        /* the next nbits-bit code, MSB first; the input ending first is "not terminated with EOI" */
        while (accbits < nbits) {
            if (bits_left < 8) goto done;
            acc = (acc << 8) | in[pos++];
            accbits += 8, bits_left -= 8;
        }
        uint32_t code = (acc >> (accbits - nbits)) & ((1u << nbits) - 1);
        accbits -= nbits;
        if (code == 257) goto done; /* EOI */
        if (code == 256) {          /* Clear, then (after any more Clears) a literal or EOI */
            free_ent = 258, nbits = 9, maxcode = 510;
            do {
                while (accbits < nbits) {
                    if (bits_left < 8) goto done;
                    acc = (acc << 8) | in[pos++];
                    accbits += 8, bits_left -= 8;
                }
                code = (acc >> (accbits - nbits)) & ((1u << nbits) - 1);
                accbits -= nbits;
            } while (code == 256);
            if (code == 257) goto done;
            if (code > 257) goto bad;
            old_off = o;
            out[o++] = (uint8_t)code;
            old = (int)code;
            if (o == occ) { rc = 0; goto done; }
            continue;
        }
        /* a literal or a table code: a new entry is old's string plus the first byte of code's string */
        if (free_ent < 0 || (int)code > free_ent) goto bad;
        t[free_ent].len = (uint16_t)(t[old].len + 1);
        t[free_ent].first = t[old].first;
        t[free_ent].off = (uint32_t)old_off; /* old's string, then the first byte of code's, which follows it in out */
        if (++free_ent > maxcode) {
            if (++nbits > 12) nbits = 12;
            maxcode = (1 << nbits) - 2;
            if (free_ent >= SG_LZW_CSIZE) free_ent = -1;
        }
        old = (int)code;
        uint32_t len = t[code].len;
        if (len == 0) goto bad; /* an entry never filled (libtiff zeroes them; cannot happen after the checks) */
        /* the string, cut to what is left of occ (libtiff keeps the first bytes): copied from where it stands
         * in out already (an entry's string is old's string followed by the first byte written after it, and
         * nothing is cut before the end); the entry added just now reaches one byte into what is written here,
         * the byte that is written first (its first byte), so that copy goes forward byte by byte */
        size_t room = occ - o, k = len < room ? len : room;
        old_off = o;
        if (code < 256) {
            out[o] = (uint8_t)code;
        } else {
            const uint8_t *f = out + t[code].off;
            uint8_t *d = out + o;
            if (k > 16 && t[code].off + k <= o) memcpy(d, f, k);
            else for (size_t i = 0; i < k; i++) d[i] = f[i]; /* short, or overlapping: forward */
        }
        o += k;
        if (o == occ) { rc = 0; goto done; }
    }
bad:
    rc = -1;
done:
    free(t);
    return rc;
}

/* --- PackBits ----------------------------------------------------------------------------------------------- */
int sg_tiff_packbits(const uint8_t *in, size_t n, uint8_t *out, size_t occ) {
    size_t p = 0, o = 0;
    while (p < n && o < occ) {
        int b = in[p++];
        if (b >= 128) b -= 256;
        if (b < 0) {
            if (b == -128) continue;
            size_t k = (size_t)(1 - b);
            if (k > occ - o) k = occ - o;
            if (p == n) break;
            memset(out + o, in[p++], k);
            o += k;
        } else {
            size_t k = (size_t)b + 1;
            if (k > occ - o) k = occ - o;
            if (n - p < k) break;
            memcpy(out + o, in + p, k);
            o += k, p += k;
        }
    }
    return o == occ ? 0 : -1;
}

/* --- Deflate ------------------------------------------------------------------------------------------------ */
int sg_tiff_deflate(const uint8_t *in, size_t n, uint8_t *out, size_t occ) {
    return sg_zlib_inflate_exact(in, n, out, occ);
}

/* --- Predictor 2 -------------------------------------------------------------------------------------------- */
void sg_tiff_unpredict(uint8_t *buf, size_t rows, size_t rowbytes, int stride, int bits, int be) {
    for (size_t r = 0; r < rows; r++) {
        uint8_t *p = buf + r * rowbytes;
        if (bits == 8) {
            for (size_t i = (size_t)stride; i < rowbytes; i++) p[i] = (uint8_t)(p[i] + p[i - stride]);
            continue;
        }
        size_t nv = rowbytes / 2; /* 16-bit values in the file's byte order */
        for (size_t i = (size_t)stride; i < nv; i++) {
            uint8_t *a = p + 2 * i, *b = p + 2 * (i - stride);
            uint32_t v = be ? (uint32_t)(a[0] << 8 | a[1]) + (uint32_t)(b[0] << 8 | b[1])
                            : (uint32_t)(a[1] << 8 | a[0]) + (uint32_t)(b[1] << 8 | b[0]);
            if (be) a[0] = (uint8_t)(v >> 8), a[1] = (uint8_t)v;
            else a[1] = (uint8_t)(v >> 8), a[0] = (uint8_t)v;
        }
    }
}
