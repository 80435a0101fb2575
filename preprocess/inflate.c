/* preprocess/inflate.c — a zlib stream inflated with the verdicts of Python's zlib.decompressobj().decompress.
 *
 * Pillow inflates PNG zTXt / iTXt text with decompressobj().decompress(data, MAX_TEXT_CHUNK): a stream that
 * stops early is no error (the text is what was decoded), a corrupt one is zlib.error, and output past the cap
 * with input left over is ValueError. stb_image's inflater cannot tell us any of that (it pads a short stream
 * with zero bits and reports one failure for all), so this is our own small decoder in the way of zlib's
 * inflate: the same header checks, the same rules for Huffman code sets (zlib's inflate_table: over-subscribed
 * sets and incomplete ones other than a single 1-bit code are errors; a code outside a set is found after as
 * many bits as zlib's tables take, and an empty code-length code reads each bit as length 0), distances
 * checked against the output once there is room to copy (zlib's MATCH state: a match too far back right after
 * the cap stops, no error), and the Adler-32 trailer checked when present. Bits are pulled one byte at a time
 * as needed, as zlib's slow path does, so "input left over" when the cap is hit means the same here.
 *
 * Speed: while at least 8 input bytes and 258 bytes of room under the cap remain, sg_z_fast decodes literals
 * and matches with first-level tables (SG_Z_FAST bits; longer codes by the same walk as sg_z_decode) from a
 * 64-bit bit buffer filled 8 bytes at a time. It never decides a verdict: at anything else (end of block,
 * codes outside the set, a distance too far back, input or room running short) it stops at the start of the
 * symbol with the buffer rewound to the slow path's state (whole unused bytes given back), and the slow path
 * goes on from there. Stored blocks are copied at once where input and room allow. A change here must show
 * 0 differences in scripts/inflate_differential.py against the previous version (and against Python's zlib).
 */
#include "preprocess/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { SG_Z_OK = 0, SG_Z_EOF = 1, SG_Z_BIG = 2, SG_Z_FULL = 3, SG_Z_BAD = -1 };

typedef struct {
    const uint8_t *in;
    size_t len, pos;
    uint32_t bits;
    int nbits;
    uint8_t *out;
    size_t n, cap, max;
    int stop_full; /* sg_zlib_inflate_exact: stop when a byte past max is to be written (SG_Z_FULL) */
    const size_t *ends; /* sg_zlib_inflate_png: where the input's blocks end; cleared once the cut is made */
    size_t n_ends;
    size_t pos_out; /* pos when the output last grew */
} sg_inflater;

/* sg_zlib_inflate_png's cut: once the output is full, the input ends where the block being read ends. */
static size_t sg_z_block_end(const size_t *ends, size_t n_ends, size_t pos) { /* the first end >= pos, or SIZE_MAX */
    size_t lo = 0, hi = n_ends;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ends[mid] < pos) lo = mid + 1;
        else hi = mid;
    }
    return lo < n_ends ? ends[lo] : SIZE_MAX;
}
static inline void sg_z_cut(sg_inflater *z) {
    if (!z->ends || z->n != z->max) return;
    size_t e = sg_z_block_end(z->ends, z->n_ends, z->pos);
    if (e < z->len) z->len = e;
    z->ends = NULL;
}

#define SG_Z_FAST 10 /* bits of the fast path's first-level table */

typedef struct {
    short count[16];
    short symbol[288];
    short max, kind; /* longest code length (0: no codes); sg_z_build's kind */
    uint16_t fast[1 << SG_Z_FAST]; /* next SG_Z_FAST bits -> length << 9 | symbol; 0: longer code or none */
} sg_huffman;

/* The next n bits (LSB first) into *v: SG_Z_OK, or SG_Z_EOF when the input ends first. */
static int sg_z_bits(sg_inflater *z, int n, uint32_t *v) {
    while (z->nbits < n) {
        sg_z_cut(z);
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
    z->pos_out = z->pos;
    return SG_Z_OK;
}

/* Canonical code from n lengths; kind 0 = code-length codes. SG_Z_BAD for a set zlib refuses. */
static int sg_z_build(sg_huffman *h, const uint8_t *lens, int n, int kind) {
    short offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n; i++) h->count[lens[i]]++;
    int max = 15;
    while (max > 0 && h->count[max] == 0) max--;
    h->max = (short)max, h->kind = (short)kind;
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
    /* The fast table: canonical codes of up to SG_Z_FAST bits, indexed by their bits in stream order. */
    memset(h->fast, 0, sizeof h->fast);
    for (int l = 1, code = 0, index = 0; l <= SG_Z_FAST; l++) {
        for (int k = 0; k < h->count[l]; k++, code++) {
            unsigned rev = 0;
            for (int b = 0; b < l; b++) rev |= (unsigned)((code >> b) & 1) << (l - 1 - b);
            for (unsigned e = rev; e < (1u << SG_Z_FAST); e += 1u << l)
                h->fast[e] = (uint16_t)(l << 9 | h->symbol[index + k]);
        }
        index += h->count[l], code <<= 1;
    }
    return SG_Z_OK;
}

/* One symbol; SG_Z_BAD for a code outside the set (an unused code of an incomplete or empty set), decided
 * after as many bits as zlib's tables take: no more than the longest code, 1 for an empty set. */
static int sg_z_decode(sg_inflater *z, const sg_huffman *h, int *sym) {
    int code = 0, first = 0, index = 0;
    if (h->max == 0) { /* zlib's table for no codes: 1 bit, an invalid code, but read as length 0 for code lengths */
        uint32_t b;
        int rc = sg_z_bits(z, 1, &b);
        return rc ? rc : h->kind == 0 ? (*sym = 0, SG_Z_OK) : SG_Z_BAD;
    }
    for (int l = 1; l <= h->max; l++) { /* past the longest code: the unused code of an incomplete set */
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

static const short lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83,
                             99, 115, 131, 163, 195, 227, 258};
static const short lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const unsigned short dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513,
                               769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const short dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12,
                            12, 13, 13};
/* A grow of the output as sg_z_put's, until room bytes fit (the caller has seen that max - n >= room). */
static int sg_z_room(sg_inflater *z, size_t room) {
    while (z->cap - z->n < room) {
        size_t cap = z->cap ? 2 * z->cap : 4096;
        uint8_t *o = realloc(z->out, cap > z->max ? z->max : cap);
        if (!o) return SG_Z_BAD;
        z->out = o, z->cap = cap > z->max ? z->max : cap;
    }
    return SG_Z_OK;
}

static inline uint64_t sg_z_le64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
#endif
}

/* One symbol from the bit register (at least 15 valid bits in it): its length in bits, or 0 for a code
 * outside the set. The table for codes of up to SG_Z_FAST bits, else sg_z_decode's walk over the lengths. */
static inline int sg_z_fast_sym(const sg_huffman *h, uint64_t bits, int *sym) {
    unsigned e = h->fast[bits & ((1u << SG_Z_FAST) - 1)];
    if (e) return *sym = (int)(e & 511), (int)(e >> 9);
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; l++) {
        code |= (int)((bits >> (l - 1)) & 1);
        int count = h->count[l];
        if (code - count < first) return *sym = h->symbol[index + code - first], l;
        index += count, first = (first + count) << 1, code <<= 1;
    }
    return 0;
}

/* The fast path: literals and matches while at least 8 input bytes and 258 bytes of room under max remain, so
 * that no symbol here can run out of input or reach the cap. It stops at the start of any symbol it does not
 * take (end of block, a code outside the set, fixed codes 286/287/30/31, a distance too far back, too little
 * input or room left) with the bit state rewound to what the slow path's byte-at-a-time reading has there
 * (pos just past the last byte any consumed bit came from, fewer than 8 bits held), so the slow path decides
 * that symbol, and every verdict, exactly as it would have alone. */
static int sg_z_fast(sg_inflater *z, const sg_huffman *lit, const sg_huffman *dist) {
    const uint8_t *in = z->in;
    const uint16_t *lfast = lit->fast;
    size_t pos = z->pos, len = z->len, n = z->n, max = z->max, cap = z->cap;
    uint8_t *out = z->out;
    uint64_t bits = z->bits;
    int nbits = z->nbits, rc = SG_Z_OK;
    while (len - pos >= 8 && max - n >= 258) {
        if (cap - n < 258) {
            z->n = n;
            if ((rc = sg_z_room(z, 258))) break;
            out = z->out, cap = z->cap;
        }
        bits |= sg_z_le64(in + pos) << nbits; /* to 56..63 valid bits */
        pos += (size_t)((63 - nbits) >> 3);
        nbits |= 56;
        uint64_t b = bits;
        int nb = nbits, sym, l;
        if (!(l = sg_z_fast_sym(lit, b, &sym))) break;
        b >>= l, nb -= l;
        if (sym < 256) {
            out[n++] = (uint8_t)sym;
            /* Up to two more literals with codes in the table: at most 15 + 2 * SG_Z_FAST bits in all, and
             * 258 bytes of room were there for the first. */
            for (int k = 0; k < 2; k++) {
                unsigned e = lfast[b & ((1u << SG_Z_FAST) - 1)];
                if (!e || (e & 511) >= 256) break;
                out[n++] = (uint8_t)e;
                b >>= e >> 9, nb -= (int)(e >> 9);
            }
            bits = b, nbits = nb;
            continue;
        }
        if (sym == 256 || sym > 285) break;
        int x = lext[sym - 257];
        size_t mlen = (size_t)lbase[sym - 257] + (size_t)(b & ((1u << x) - 1));
        b >>= x, nb -= x;
        if (!(l = sg_z_fast_sym(dist, b, &sym)) || sym > 29) break;
        b >>= l, nb -= l;
        x = dext[sym];
        size_t d = (size_t)dbase[sym] + (size_t)(b & ((1u << x) - 1));
        b >>= x, nb -= x;
        if (d > n) break;
        bits = b, nbits = nb;
        uint8_t *o = out + n;
        const uint8_t *f = o - d;
        if (d >= mlen) memcpy(o, f, mlen);
        else if (d == 1) memset(o, *f, mlen);
        else for (size_t i = 0; i < mlen; i++) o[i] = f[i];
        n += mlen;
    }
    pos -= (size_t)(nbits >> 3); /* give back whole bytes not yet used */
    nbits &= 7;
    if (n != z->n) z->pos_out = pos; /* every symbol taken here wrote bytes */
    z->pos = pos, z->n = n, z->nbits = nbits, z->bits = (uint32_t)(bits & ((1u << nbits) - 1));
    return rc;
}

static int sg_z_codes(sg_inflater *z, const sg_huffman *lit, const sg_huffman *dist) {
    for (;;) {
        int sym, rc;
        uint32_t e;
        if (z->len - z->pos >= 8 && z->max - z->n >= 258 && (rc = sg_z_fast(z, lit, dist))) return rc;
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
        /* no room: zlib leaves at the copy, the distance unchecked (exact mode: FULL; else the cap's verdict) */
        if (d > z->n) return z->n == z->max ? sg_z_put(z, 0) : SG_Z_BAD; /* too far back */
        for (size_t i = 0; i < n; i++)
            if ((rc = sg_z_put(z, z->out[z->n - d]))) return rc;
    }
}

static int sg_z_stored(sg_inflater *z) {
    z->bits = 0, z->nbits = 0; /* to a byte boundary */
    sg_z_cut(z);
    if (z->len - z->pos < 4) return SG_Z_EOF;
    const uint8_t *p = z->in + z->pos;
    unsigned n = sg_le16(p), nc = sg_le16(p + 2);
    if (n != (~nc & 0xffff)) return SG_Z_BAD;
    z->pos += 4;
    /* Bytes that the loop below would take with input and room to spare, taken at once. */
    size_t k = n;
    if (k > z->len - z->pos) k = z->len - z->pos;
    if (k > z->max - z->n) k = z->max - z->n;
    if (k && sg_z_room(z, k)) return SG_Z_BAD;
    if (k) memcpy(z->out + z->n, z->in + z->pos, k);
    z->n += k, z->pos += k, n -= (unsigned)k;
    if (k) z->pos_out = z->pos;
    for (unsigned i = 0; i < n; i++) {
        if (z->pos == z->len) return SG_Z_EOF;
        int rc = sg_z_put(z, z->in[z->pos]); /* at the cap the byte is input left over, as zlib leaves it */
        if (rc) return rc;
        z->pos++;
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

/* Adler-32 of p[0..n), reduced every 5552 bytes, before b can pass 2^32 (zlib's NMAX). Within a run of L bytes from
 * (a0, b0): a = a0 + sum p[j], b = b0 + L a0 + sum (L - j) p[j]. The x86-64 path takes 16 bytes a step: their sum
 * (psadbw), their sum weighted 16..1 (pmaddwd), and the sum of the earlier steps' byte sums (16 x that is the rest
 * of the weights); the plain loop below does the rest, and all of it on other CPUs. */
static uint32_t sg_adler32(const uint8_t *p, size_t n) {
    uint32_t a = 1, b = 0;
    while (n) {
        size_t e = n < 5552 ? n : 5552;
        n -= e;
#if defined(__SSE2__)
        size_t k = e / 16;
        if (k) {
            const __m128i zero = _mm_setzero_si128();
            const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
            const __m128i w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
            __m128i sum = zero, prefix = zero, weighted = zero;
            for (size_t j = 0; j < k; j++, p += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)p);
                prefix = _mm_add_epi32(prefix, sum);
                sum = _mm_add_epi32(sum, _mm_sad_epu8(v, zero));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(v, zero), w_lo));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(v, zero), w_hi));
            }
            uint32_t s4[4], p4[4], w4[4];
            _mm_storeu_si128((__m128i *)s4, sum), _mm_storeu_si128((__m128i *)p4, prefix);
            _mm_storeu_si128((__m128i *)w4, weighted);
            uint64_t bytes = (uint64_t)s4[0] + s4[2], pre = (uint64_t)p4[0] + p4[2]; /* psadbw: lanes 0 and 2 */
            uint64_t wt = (uint64_t)w4[0] + w4[1] + w4[2] + w4[3];
            b = (uint32_t)((b + 16 * (uint64_t)k * a + 16 * pre + wt) % 65521);
            a = (uint32_t)((a + bytes) % 65521);
            e -= 16 * k;
        }
#endif
        for (; e >= 8; e -= 8, p += 8) /* 8 steps of the loop below at once */
            b += 8 * a + 8u * p[0] + 7u * p[1] + 6u * p[2] + 5u * p[3] + 4u * p[4] + 3u * p[5] + 2u * p[6] + p[7],
            a += (uint32_t)p[0] + p[1] + p[2] + p[3] + p[4] + p[5] + p[6] + p[7];
        for (; e; e--) a += *p++, b += a;
        a %= 65521, b %= 65521;
    }
    return b << 16 | a;
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
    sg_z_cut(z);
    if (z->len - z->pos < 4) return SG_Z_EOF;
    z->pos += 4; /* the stream's end, once its Adler-32 is checked below */
    const uint8_t *t = z->in + z->pos - 4;
    uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    return want == sg_adler32(z->out, z->n) ? SG_Z_OK : SG_Z_BAD;
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
    /* straight into out: with cap = max = n the output is never grown (sg_z_put stops at max first, sg_z_room
     * is asked for no more than max - n), so out is never reallocated; on failure it holds what was decoded */
    sg_inflater z = {.in = in, .len = len, .max = n, .stop_full = 1, .out = out, .cap = n};
    int rc = sg_z_stream(&z);
    return z.n == n && (rc == SG_Z_FULL || rc == SG_Z_OK || rc == SG_Z_EOF) ? 0 : -1;
}

int sg_zlib_inflate_png(const uint8_t *in, size_t len, const size_t *ends, size_t n_ends, uint8_t *out, size_t n,
                        size_t *got, size_t *last_in) {
    *got = 0, *last_in = 0;
    if (n == 0) return SG_PNGZ_FULL;
    sg_inflater z = {.in = in, .len = len, .max = n, .stop_full = 1, .out = out, .cap = n, .ends = ends,
                     .n_ends = n_ends};
    int rc = sg_z_stream(&z);
    *got = z.n, *last_in = z.pos_out;
    if (rc == SG_Z_BAD) return SG_PNGZ_BROKEN;
    if (z.n == n) return SG_PNGZ_FULL;
    if (rc != SG_Z_OK) return SG_PNGZ_SHORT;
    /* The stream ended before n bytes. Pillow sees that end only in the zlib call that wrote the last byte,
     * whose input ends with the block that byte's code came from: the Adler-32 must end there too. */
    return z.n && z.pos <= sg_z_block_end(ends, n_ends, z.pos_out) ? SG_PNGZ_END : SG_PNGZ_SHORT;
}
