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
    uint32_t off; /* where its string already stands whole in out (entries >= 258, once added) */
    uint32_t len; /* string length (0: never filled) */
} sg_lzw_entry;   /* 8 bytes: the table (40 KB) stays close to L1 */

/* Copies k bytes from f to d in 16-byte steps, writing up to 15 bytes past d + k (the caller leaves that room).
 * Each step loads its 16 bytes before it stores them, so it is right whenever f + k <= d (a string that stands
 * wholly before where it is written), however close the two are. */
static inline void sg_lzw_copy16(uint8_t *d, const uint8_t *f, size_t k) {
    for (size_t i = 0; i < k; i += 16) {
        uint64_t a, b;
        memcpy(&a, f + i, 8), memcpy(&b, f + i + 8, 8);
        memcpy(d + i, &a, 8), memcpy(d + i + 8, &b, 8);
    }
}

/* Fills out[0, occ) and returns 0, or returns -1 (the stream is bad, or ends before occ bytes); on -1 out holds
 * nothing the caller may use (bytes past the last string may have been written: the copies run ahead). */
int sg_tiff_lzw(const uint8_t *in, size_t n, uint8_t *out, size_t occ) {
    if (occ == 0) return 0;
    if (occ > UINT32_MAX) return -1; /* past 4 GB a strip: only with --max-pixels raised far past its default */
    /* entries 258 on (literals are written without the table; 256 and 257 are Clear and EOI), all unfilled */
    sg_lzw_entry *t = malloc(sizeof(sg_lzw_entry) * SG_LZW_CSIZE);
    if (!t) return -1;
    for (int i = 0; i < SG_LZW_CSIZE; i++) t[i].len = 0, t[i].off = 0;
    /* the bit reader: the next accbits bits of the stream, MSB first, in the top of acc (the rest zero) */
    uint64_t acc = 0;
    size_t pos = 0;
    int accbits = 0, nbits = 9, rc = -1;
    int free_ent = -1;  /* -1: libtiff's "before the table" (no entry may be added) */
    int maxcode = 510;  /* the width grows when free_ent passes this: (1 << nbits) - 2 */
    uint32_t old_len = 1; /* the previous code's string length (entry 0 at the start, as libtiff's dec_oldcodep) */
    size_t o = 0, old_off = 0; /* old_off: where that string was written */
    const size_t fast_end = occ >= 16 ? occ - 16 : 0; /* below it a copy of up to 16 bytes may run ahead */
#define SG_LZW_NEXT(code)                                                                                        \
    do {                                                                                                       \
        if (accbits < nbits) {                                                                                 \
            if (n - pos >= 8) { /* whole bytes while they fit: accbits ends at 57..63 */                        \
                uint64_t w;                                                                                    \
                memcpy(&w, in + pos, 8);                                                                       \
                const int take = (63 - accbits) >> 3;                                                          \
                acc |= (__builtin_bswap64(w) >> accbits) & ~(~0ull >> (accbits + 8 * take));                 \
                pos += (size_t)take, accbits += 8 * take;                                                      \
            } else {                                                                                           \
                while (accbits < nbits && pos < n) acc |= (uint64_t)in[pos++] << (56 - accbits), accbits += 8; \
                if (accbits < nbits) goto done; /* the input ends first: "not terminated with EOI" */         \
            }                                                                                                  \
        }                                                                                                      \
        (code) = (uint32_t)(acc >> (64 - nbits));                                                              \
        acc <<= nbits, accbits -= nbits;                                                                       \
    } while (0)
    for (;;) {
        uint32_t code;
        SG_LZW_NEXT(code);
        if (code == 257) goto done; /* EOI */
        if (code == 256) {          /* Clear, then (after any more Clears) a literal or EOI */
            free_ent = 258, nbits = 9, maxcode = 510;
            do SG_LZW_NEXT(code);
            while (code == 256);
            if (code == 257) goto done;
            if (code > 257) goto bad;
            old_off = o;
            out[o++] = (uint8_t)code;
            old_len = 1;
            if (o == occ) { rc = 0; goto done; }
            continue;
        }
        /* a literal or a table code: a new entry is the previous string plus the first byte of code's string */
        if (free_ent < 0 || (int)code > free_ent) goto bad;
        t[free_ent].len = old_len + 1;
        t[free_ent].off = (uint32_t)old_off; /* the previous string, then code's first byte, which follows it in out */
        if (++free_ent > maxcode) {
            if (++nbits > 12) nbits = 12;
            maxcode = (1 << nbits) - 2;
            if (free_ent >= SG_LZW_CSIZE) free_ent = -1;
        }
        old_off = o;
        if (code < 256) {
            out[o++] = (uint8_t)code;
            old_len = 1;
            if (o == occ) { rc = 0; goto done; }
            continue;
        }
        const size_t len = t[code].len, off = t[code].off;
        if (len == 0) goto bad; /* an entry never filled (libtiff zeroes them; cannot happen after the checks) */
        old_len = (uint32_t)len;
        /* The string stands in out already: an entry's string is an earlier string followed by the first byte written
         * after it. The one exception reaches into what is written now: the entry added just above (code =
         * free_ent - 1, "KwKwK"), whose last byte is its own first byte. It is cut to what is left of occ
         * (libtiff keeps the first bytes). */
        uint8_t *d = out + o;
        const uint8_t *f = out + off;
        if (o + len <= fast_end) {
            if (off + len <= o) {
                sg_lzw_copy16(d, f, len);
            } else { /* KwKwK: off + len == o + 1 */
                sg_lzw_copy16(d, f, len - 1);
                d[len - 1] = f[0];
            }
            o += len;
            continue;
        }
        const size_t k = len < occ - o ? len : occ - o;
        for (size_t i = 0; i < k; i++) d[i] = f[i]; /* forward, byte by byte: right in both cases */
        o += k;
        if (o == occ) { rc = 0; goto done; }
    }
#undef SG_LZW_NEXT
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
