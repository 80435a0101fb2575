/* preprocess/inflate.c — a zlib stream inflated with the verdicts of Python's zlib.decompressobj().decompress.
 *
 * Pillow inflates PNG zTXt / iTXt text with decompressobj().decompress(data, MAX_TEXT_CHUNK): a stream that
 * stops early is no error (the text is what was decoded), a corrupt one is zlib.error, and output past the cap
 * with input left over is ValueError. stb_image's inflater cannot tell us any of that (it pads a short stream
 * with zero bits and reports one failure for all), so this is our own small decoder in the way of zlib's
 * inflate: the same header checks, the same rules for Huffman code sets (zlib's inflate_table: over-subscribed
 * sets and incomplete ones other than a single 1-bit code are errors), distances checked against the output,
 * and the Adler-32 trailer checked when present. Bits are pulled one byte at a time as needed, as zlib's slow
 * path does, so "input left over" when the cap is hit means the same here.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

enum { SG_Z_OK = 0, SG_Z_EOF = 1, SG_Z_BIG = 2, SG_Z_FULL = 3, SG_Z_BAD = -1 };

typedef struct {
    const uint8_t *in;
    size_t len, pos;
    uint32_t bits;
    int nbits;
    uint8_t *out;
    size_t n, cap, max;
    int stop_full; /* sg_zlib_inflate_exact: stop when a byte past max is to be written (SG_Z_FULL) */
} sg_inflater;

typedef struct {
    short count[16];
    short symbol[288];
} sg_huffman;

/* The next n bits (LSB first) into *v: SG_Z_OK, or SG_Z_EOF when the input ends first. */
static int sg_z_bits(sg_inflater *z, int n, uint32_t *v) {
    while (z->nbits < n) {
        if (z->pos == z->len) return SG_Z_EOF;
        z->bits |= (uint32_t)z->in[z->pos++] << z->nbits;
        z->nbits += 8;
    }
    *v = z->bits & ((1u << n) - 1);
    z->bits >>= n, z->nbits -= n;
    return SG_Z_OK;
}

/* Appends one byte. At the cap: SG_Z_BIG when input is left (Python's unconsumed_tail), else the end (EOF). */
static int sg_z_put(sg_inflater *z, uint8_t b) {
    if (z->n == z->max) return z->stop_full ? SG_Z_FULL : z->pos < z->len ? SG_Z_BIG : SG_Z_EOF;
    if (z->n == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 4096;
        uint8_t *o = realloc(z->out, cap > z->max ? z->max : cap);
        if (!o) return SG_Z_BAD;
        z->out = o, z->cap = cap > z->max ? z->max : cap;
    }
    z->out[z->n++] = b;
    return SG_Z_OK;
}

/* Canonical code from n lengths; kind 0 = code-length codes. SG_Z_BAD for a set zlib refuses. */
static int sg_z_build(sg_huffman *h, const uint8_t *lens, int n, int kind) {
    short offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n; i++) h->count[lens[i]]++;
    int max = 15;
    while (max > 0 && h->count[max] == 0) max--;
    int left = 1;
    for (int l = 1; l < 16; l++) {
        left = 2 * left - h->count[l];
        if (left < 0) return SG_Z_BAD; /* over-subscribed */
    }
    if (max > 0 && left > 0 && (kind == 0 || max != 1)) return SG_Z_BAD; /* incomplete */
    offs[1] = 0;
    for (int l = 1; l < 15; l++) offs[l + 1] = (short)(offs[l] + h->count[l]);
    for (int i = 0; i < n; i++)
        if (lens[i]) h->symbol[offs[lens[i]]++] = (short)i;
    return SG_Z_OK;
}

/* One symbol; SG_Z_BAD for a code outside the set (an unused code of an incomplete or empty set). */
static int sg_z_decode(sg_inflater *z, const sg_huffman *h, int *sym) {
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; l++) {
        uint32_t b;
        int rc = sg_z_bits(z, 1, &b);
        if (rc) return rc;
        code |= (int)b;
        int count = h->count[l];
        if (code - count < first) return *sym = h->symbol[index + code - first], SG_Z_OK;
        index += count, first = (first + count) << 1, code <<= 1;
    }
    return SG_Z_BAD;
}

static int sg_z_codes(sg_inflater *z, const sg_huffman *lit, const sg_huffman *dist) {
    static const short lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83,
                                    99, 115, 131, 163, 195, 227, 258};
    static const short lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const unsigned short dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513,
                                             769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const short dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12,
                                   12, 13, 13};
    for (;;) {
        int sym, rc;
        uint32_t e;
        if ((rc = sg_z_decode(z, lit, &sym))) return rc;
        if (sym < 256) {
            if ((rc = sg_z_put(z, (uint8_t)sym))) return rc;
            continue;
        }
        if (sym == 256) return SG_Z_OK;
        if (sym > 285) return SG_Z_BAD; /* fixed codes 286, 287 */
        if ((rc = sg_z_bits(z, lext[sym - 257], &e))) return rc;
        size_t n = (size_t)lbase[sym - 257] + e;
        if ((rc = sg_z_decode(z, dist, &sym))) return rc;
        if (sym > 29) return SG_Z_BAD; /* fixed codes 30, 31 */
        if ((rc = sg_z_bits(z, dext[sym], &e))) return rc;
        size_t d = (size_t)dbase[sym] + e;
        if (z->stop_full && z->n == z->max) return SG_Z_FULL; /* zlib leaves at the copy with no room, unchecked */
        if (d > z->n) return SG_Z_BAD; /* too far back */
        for (size_t i = 0; i < n; i++)
            if ((rc = sg_z_put(z, z->out[z->n - d]))) return rc;
    }
}

static int sg_z_stored(sg_inflater *z) {
    z->bits = 0, z->nbits = 0; /* to a byte boundary */
    if (z->len - z->pos < 4) return SG_Z_EOF;
    const uint8_t *p = z->in + z->pos;
    unsigned n = sg_le16(p), nc = sg_le16(p + 2);
    if (n != (~nc & 0xffff)) return SG_Z_BAD;
    z->pos += 4;
    for (unsigned i = 0; i < n; i++) {
        if (z->pos == z->len) return SG_Z_EOF;
        int rc = sg_z_put(z, z->in[z->pos++]);
        if (rc) return rc;
    }
    return SG_Z_OK;
}

static int sg_z_fixed(sg_inflater *z) {
    uint8_t l[288];
    sg_huffman lit, dist;
    for (int i = 0; i < 288; i++) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    sg_z_build(&lit, l, 288, 1);
    memset(l, 5, 32);
    sg_z_build(&dist, l, 32, 1);
    return sg_z_codes(z, &lit, &dist);
}

static int sg_z_dynamic(sg_inflater *z) {
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t l[320] = {0};
    uint32_t hlit, hdist, hclen, v;
    int rc;
    if ((rc = sg_z_bits(z, 5, &hlit)) || (rc = sg_z_bits(z, 5, &hdist)) || (rc = sg_z_bits(z, 4, &hclen))) return rc;
    int nlen = (int)hlit + 257, ndist = (int)hdist + 1;
    if (nlen > 286 || ndist > 30) return SG_Z_BAD;
    for (uint32_t i = 0; i < hclen + 4; i++) {
        if ((rc = sg_z_bits(z, 3, &v))) return rc;
        l[order[i]] = (uint8_t)v;
    }
    sg_huffman lc, lit, dist;
    if (sg_z_build(&lc, l, 19, 0)) return SG_Z_BAD;
    memset(l, 0, sizeof l);
    for (int i = 0; i < nlen + ndist;) {
        int sym, rep = 0;
        uint8_t val = 0;
        if ((rc = sg_z_decode(z, &lc, &sym))) return rc;
        if (sym < 16) { l[i++] = (uint8_t)sym; continue; }
        if (sym == 16) {
            if (i == 0) return SG_Z_BAD;
            val = l[i - 1];
            if ((rc = sg_z_bits(z, 2, &v))) return rc;
            rep = 3 + (int)v;
        } else {
            if ((rc = sg_z_bits(z, sym == 17 ? 3 : 7, &v))) return rc;
            rep = (sym == 17 ? 3 : 11) + (int)v;
        }
        if (i + rep > nlen + ndist) return SG_Z_BAD;
        while (rep--) l[i++] = val;
    }
    if (l[256] == 0) return SG_Z_BAD; /* no end-of-block code */
    if (sg_z_build(&lit, l, nlen, 1) || sg_z_build(&dist, l + nlen, ndist, 1)) return SG_Z_BAD;
    return sg_z_codes(z, &lit, &dist);
}

/* Header, blocks, trailer. SG_Z_OK: the stream ended (Adler-32 checked); SG_Z_EOF: the input ran out first. */
static int sg_z_stream(sg_inflater *z) {
    uint32_t h, last, type;
    int rc = sg_z_bits(z, 16, &h);
    if (rc) return rc;
    unsigned cmf = h & 0xff, flg = h >> 8;
    if ((cmf * 256 + flg) % 31 || (cmf & 15) != 8 || (cmf >> 4) > 7 || (flg & 0x20)) return SG_Z_BAD;
    do {
        if ((rc = sg_z_bits(z, 1, &last)) || (rc = sg_z_bits(z, 2, &type))) return rc;
        rc = type == 0 ? sg_z_stored(z) : type == 1 ? sg_z_fixed(z) : type == 2 ? sg_z_dynamic(z) : SG_Z_BAD;
        if (rc) return rc;
    } while (!last);
    z->bits = 0, z->nbits = 0;
    if (z->len - z->pos < 4) return SG_Z_EOF;
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < z->n; i++) a = (a + z->out[i]) % 65521, b = (b + a) % 65521;
    const uint8_t *t = z->in + z->pos;
    uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    return want == (b << 16 | a) ? SG_Z_OK : SG_Z_BAD;
}

int sg_zlib_inflate(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *out_len) {
    sg_inflater z = {.in = in, .len = len, .max = max_out};
    int rc = sg_z_stream(&z);
    if (rc == SG_Z_BAD || rc == SG_Z_BIG) {
        free(z.out);
        *out = NULL, *out_len = 0;
        return rc == SG_Z_BIG ? 1 : -1;
    }
    *out = z.out, *out_len = z.n;
    return 0;
}

int sg_zlib_inflate_exact(const uint8_t *in, size_t len, uint8_t *out, size_t n) {
    if (n == 0) return 0;
    sg_inflater z = {.in = in, .len = len, .max = n, .stop_full = 1};
    int rc = sg_z_stream(&z);
    int ok = z.n == n && (rc == SG_Z_FULL || rc == SG_Z_OK || rc == SG_Z_EOF);
    if (ok) memcpy(out, z.out, n);
    free(z.out);
    return ok ? 0 : -1;
}
