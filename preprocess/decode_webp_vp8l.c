/* preprocess/decode_webp_vp8l.c — the VP8L (lossless WebP) codec with the pixels and verdicts of libwebp 1.6.0.
 *
 * Format: RFC 9649 section 3. A VP8L chunk is a 5-byte header (0x2f, 14-bit width-1 and height-1, an alpha
 * hint bit, a 3-bit version that must be 0) and an image stream: up to four transforms (each type at most
 * once; predictor and cross-colour carry a sub-image of tile codes, colour indexing a palette of 1..256
 * colours, delta-coded, which packs 2/4/8 pixels per green byte when it has <= 16 / 4 / 2 colours), an
 * optional colour cache (1..11 bits), an optional entropy image choosing one of several groups of five
 * prefix codes per tile, then the LZ77-coded ARGB pixels. Sub-images (transform data, palette, entropy image)
 * are the same minus transforms and entropy image. An ALPH chunk with compression 1 holds such a stream
 * without the 5-byte header; its green channel is the alpha.
 *
 * Rules followed, each from libwebp's vp8l_dec.c / huffman_utils.c / lossless.c / bit_reader_utils.c:
 * - Bits: libwebp's reader state is kept as it is (a 64-bit window of the stream's bytes, a bit position in
 *   it, an end flag), refilled at the same points, because a stream that runs out is read on from that window
 *   (past 64 the position wraps) and the alpha decoder can keep such a value (below). A stream shorter than
 *   8 bytes may be read up to its 64th bit (zeros). Reading past the end is an error for the image and every
 *   sub-image; bytes left over after the last pixel are ignored.
 * - Prefix codes: lengths over 15 cannot occur; all-zero lengths, an over-subscribed set and an incomplete
 *   one are refused; a set with exactly one non-zero length is a 0-bit code whatever that length is. A simple
 *   code gives one or two symbols of length 1 (two equal symbols: one symbol); a symbol past the alphabet
 *   (8-bit symbols against the 40 distance codes) is dropped. The code-length code follows the same rules; a
 *   "max symbol" count above the alphabet and a repeat past it are refused.
 * - Groups: the entropy image's red and green bytes number the group. Every group up to the largest number
 *   is read and checked even when no tile uses it; only used ones are kept here (libwebp keeps all of them
 *   when there are at most 1000 and no more than pixels, which matters only to the alpha path's choice).
 * - Pixels: LZ77 lengths and distances by prefix code plus extra bits; distance codes 1..120 go through the
 *   2-D neighbourhood map (clamped to at least 1), larger ones minus 120; a copy from before the first pixel
 *   or past the last one is refused. The colour cache hashes each pixel in order (0x1e35a7bd * argb >> (32 -
 *   bits)), starting all zero.
 * - Transforms are undone in reverse order of reading, on the whole image in place: predictor (first pixel
 *   + black, first row from the left, first column from above, 14 modes, codes 14-15 black, the top-right of
 *   a row's last pixel is the row's own first pixel), cross-colour (signed 3.5 multipliers), add green, and
 *   colour indexing (palette entries past the palette are transparent black).
 * - Alpha: libwebp decodes a stream whose only transform is colour indexing, with no colour cache and only
 *   one-symbol red, blue and alpha codes in every group it keeps, on an 8-bit path whose values are the same
 *   but whose end rule differs: it stops once the stream has run out after a symbol and fails only if pixels
 *   are then missing. So a stream that runs out inside its last symbol (or right before it) still decodes, that
 *   symbol's bits taken from the window as it stands (zeros past the end, or the window's first bits when the
 *   position sits exactly at 64). Every other alpha stream follows the image rule above.
 * - Lengths: libwebp's VP8L decoder is given the frame to its end as the demuxer sizes it, i.e. the VP8L chunk's
 *   payload plus its pad byte when the size is odd (that byte is read like any other); an ALPH stream is the
 *   chunk's payload after its header byte, unpadded. Callers pass those lengths.
 * No global mutable state; allocations: the caller's output, transform data (about (w/4)*(h/4) each),
 * colour cache (<= 2048 words), prefix tables (up to about 5000 entries per group in use, as libwebp) and,
 * for alpha, a w*h word buffer.
 */
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

enum {
    SG_L_LITERALS = 256,
    SG_L_LENGTH_CODES = 24,
    SG_L_DISTANCE_CODES = 40,
    SG_L_MAX_CACHE_BITS = 11,
    SG_L_MAX_CODE_LENGTH = 15,
    SG_L_CODE_LENGTH_CODES = 19,
    SG_L_MAX_ALPHABET = SG_L_LITERALS + SG_L_LENGTH_CODES + (1 << SG_L_MAX_CACHE_BITS),
    SG_L_ROOT_BITS = 8, /* first-level table bits for codes longer than 8 bits (libwebp's HUFFMAN_TABLE_BITS) */
};

enum { SG_L_PREDICTOR = 0, SG_L_CROSS_COLOR = 1, SG_L_SUBTRACT_GREEN = 2, SG_L_COLOR_INDEXING = 3 };
enum { SG_L_GREEN = 0, SG_L_RED = 1, SG_L_BLUE = 2, SG_L_ALPHA = 3, SG_L_DIST = 4 };

/* Order in which the code-length code's lengths are stored. */
static const uint8_t sg_l_code_length_order[SG_L_CODE_LENGTH_CODES] = {17, 18, 0, 1,  2,  3,  4,  5,  16, 6,
                                                                        7,  8,  9, 10, 11, 12, 13, 14, 15};

/* Distance codes 1..120: (dy << 4) | (8 - dx) of the neighbour they name (RFC 9649 section 3.2.3.2). */
static const uint8_t sg_l_plane_codes[120] = {
    0x18, 0x07, 0x17, 0x19, 0x28, 0x06, 0x27, 0x29, 0x16, 0x1a, 0x26, 0x2a, 0x38, 0x05, 0x37, 0x39, 0x15, 0x1b,
    0x36, 0x3a, 0x25, 0x2b, 0x48, 0x04, 0x47, 0x49, 0x14, 0x1c, 0x35, 0x3b, 0x46, 0x4a, 0x24, 0x2c, 0x58, 0x45,
    0x4b, 0x34, 0x3c, 0x03, 0x57, 0x59, 0x13, 0x1d, 0x56, 0x5a, 0x23, 0x2d, 0x44, 0x4c, 0x55, 0x5b, 0x33, 0x3d,
    0x68, 0x02, 0x67, 0x69, 0x12, 0x1e, 0x66, 0x6a, 0x22, 0x2e, 0x54, 0x5c, 0x43, 0x4d, 0x65, 0x6b, 0x32, 0x3e,
    0x78, 0x01, 0x77, 0x79, 0x53, 0x5d, 0x11, 0x1f, 0x64, 0x6c, 0x42, 0x4e, 0x76, 0x7a, 0x21, 0x2f, 0x75, 0x7b,
    0x31, 0x3f, 0x63, 0x6d, 0x52, 0x5e, 0x00, 0x74, 0x7c, 0x41, 0x4f, 0x10, 0x20, 0x62, 0x6e, 0x30, 0x73, 0x7d,
    0x51, 0x5f, 0x40, 0x72, 0x7e, 0x61, 0x6f, 0x50, 0x71, 0x7f, 0x60, 0x70};

/* --- bit reader: libwebp's VP8L reader state, LSB first -------------------------------------------------- */

typedef struct {
    const uint8_t *buf;
    size_t len, pos; /* pos: bytes loaded into val so far */
    uint64_t val;    /* bytes [pos-8, pos) (for len < 8: all of them, zero above) */
    int bit_pos;     /* next bit within val; past 64 only once the stream has run out */
    int eos;         /* set where libwebp sets it (reads and refills that find the stream run out) */
} sg_l_bits;

static void sg_l_bits_init(sg_l_bits *br, const uint8_t *buf, size_t len) {
    size_t n = len < 8 ? len : 8;
    br->buf = buf, br->len = len, br->pos = n, br->val = 0, br->bit_pos = 0, br->eos = 0;
    for (size_t i = 0; i < n; i++) br->val |= (uint64_t)buf[i] << (8 * i);
}

/* The stream has been read past its end (libwebp's VP8LIsEndOfStream). */
static inline int sg_l_at_end(const sg_l_bits *br) {
    return br->eos || (br->pos == br->len && br->bit_pos > 64);
}

/* The window from bit_pos on; the shift wraps at 64 as libwebp's does. */
static inline uint32_t sg_l_peek(const sg_l_bits *br) { return (uint32_t)(br->val >> (br->bit_pos & 63)); }

static void sg_l_shift_bytes(sg_l_bits *br) {
    while (br->bit_pos >= 8 && br->pos < br->len) {
        br->val = (br->val >> 8) | ((uint64_t)br->buf[br->pos++] << 56);
        br->bit_pos -= 8;
    }
    if (sg_l_at_end(br)) br->eos = 1, br->bit_pos = 0;
}

/* Tops the window up once half of it is used: 4 bytes at once while more than 8 remain, else byte-wise. */
static inline void sg_l_fill(sg_l_bits *br) {
    if (br->bit_pos < 32) return;
    if (br->pos + 8 < br->len) {
        uint32_t w = (uint32_t)br->buf[br->pos] | (uint32_t)br->buf[br->pos + 1] << 8 |
                     (uint32_t)br->buf[br->pos + 2] << 16 | (uint32_t)br->buf[br->pos + 3] << 24;
        br->val = (br->val >> 32) | ((uint64_t)w << 32);
        br->bit_pos -= 32;
        br->pos += 4;
        return;
    }
    sg_l_shift_bytes(br);
}

/* n <= 24 bits; 0 once the stream has run out (libwebp's VP8LReadBits). */
static uint32_t sg_l_read(sg_l_bits *br, int n) {
    if (br->eos) {
        br->bit_pos = 0;
        return 0;
    }
    uint32_t v = sg_l_peek(br) & ((1u << n) - 1);
    br->bit_pos += n;
    sg_l_shift_bytes(br);
    return v;
}

/* --- prefix codes ----------------------------------------------------------------------------------------- */

/* A table entry: a symbol and its length, or (first level, bits > 8) a second-level table of bits - 8 index
 * bits at offset value from the code's first entry. */
typedef struct {
    uint8_t bits;
    uint16_t value;
} sg_l_entry;

typedef struct {
    uint32_t off;  /* first entry in the pool */
    uint16_t mask; /* first-level index mask: 0 for a one-symbol code, else 2^min(8, longest) - 1 */
} sg_l_code;

typedef struct {
    sg_l_code code[5];
    int trivial;      /* green, red, blue, alpha are one-symbol codes and green is a literal: no bits read */
    uint32_t literal; /* the pixel such a group gives */
} sg_l_group;

typedef struct {
    sg_l_entry *e;
    size_t n, cap;
} sg_l_pool;

typedef struct {
    sg_l_bits br;
    int code_lengths[SG_L_MAX_ALPHABET];
    char *err;
    size_t errlen;
    int oom; /* the failure was memory, not the stream */
} sg_l_dec;

/* Grows the pool to hold n more entries; 0, or -1 when out of memory. */
static int sg_l_pool_reserve(sg_l_pool *p, size_t n) {
    if (p->n + n <= p->cap) return 0;
    size_t cap = p->cap ? p->cap : 4096;
    while (cap < p->n + n) cap *= 2;
    sg_pre_budget_more((uint64_t)(cap - p->cap) * sizeof *p->e); /* a crafted stream can ask for hundreds of MB */
    sg_l_entry *e = realloc(p->e, cap * sizeof *e);
    if (!e) return -1;
    p->e = e, p->cap = cap;
    return 0;
}

static inline uint32_t sg_l_reverse(uint32_t code, int len) {
    uint32_t r = 0;
    for (int i = 0; i < len; i++) r = (r << 1) | ((code >> i) & 1);
    return r;
}

/* Checks the lengths of n symbols as libwebp's BuildHuffmanTable does and, when out is not NULL, builds the
 * canonical code's tables into the pool. 1 valid, 0 refused, -1 out of memory. */
static int sg_l_build_code(const int *lengths, int n, sg_l_pool *pool, sg_l_code *out) {
    int count[SG_L_MAX_CODE_LENGTH + 1] = {0};
    for (int s = 0; s < n; s++) {
        if (lengths[s] > SG_L_MAX_CODE_LENGTH) return 0;
        count[lengths[s]]++;
    }
    if (count[0] == n) return 0;
    for (int len = 1; len < SG_L_MAX_CODE_LENGTH; len++)
        if (count[len] > (1 << len)) return 0;
    int used = n - count[0];
    if (used > 1) { /* the tree must be neither over- nor under-full: libwebp's open-branch and node counts */
        int open = 1, nodes = 1;
        for (int len = 1; len <= SG_L_MAX_CODE_LENGTH; len++) {
            open <<= 1;
            nodes += open;
            open -= count[len];
            if (open < 0) return 0;
        }
        if (nodes != 2 * used - 1) return 0;
    }
    if (!out) return 1;
    if (used == 1) { /* one symbol: no bits, whatever its length */
        if (sg_l_pool_reserve(pool, 1)) return -1;
        int s = 0;
        while (lengths[s] == 0) s++;
        out->off = (uint32_t)pool->n, out->mask = 0;
        pool->e[pool->n++] = (sg_l_entry){0, (uint16_t)s};
        return 1;
    }
    int longest = SG_L_MAX_CODE_LENGTH;
    while (count[longest] == 0) longest--;
    int root = longest < SG_L_ROOT_BITS ? longest : SG_L_ROOT_BITS;
    /* Canonical codes (shorter first, then by symbol), stored bit-reversed since the stream is LSB first. */
    uint32_t next[SG_L_MAX_CODE_LENGTH + 2];
    next[1] = 0;
    for (int len = 1; len <= SG_L_MAX_CODE_LENGTH; len++) next[len + 1] = (next[len] + count[len]) << 1;
    /* Second-level table sizes: per first-level prefix, the longest code under it. */
    uint8_t sub_bits[1 << SG_L_ROOT_BITS] = {0};
    uint32_t code_at[SG_L_MAX_CODE_LENGTH + 2];
    memcpy(code_at, next, sizeof next);
    if (longest > root) {
        for (int s = 0; s < n; s++) {
            int len = lengths[s];
            if (len <= root) continue;
            uint32_t rev = sg_l_reverse(code_at[len]++, len);
            uint32_t pre = rev & ((1u << root) - 1);
            if (len - root > sub_bits[pre]) sub_bits[pre] = (uint8_t)(len - root);
        }
        memcpy(code_at, next, sizeof next);
    }
    size_t total = (size_t)1 << root;
    for (int p = 0; p < (1 << root); p++)
        if (sub_bits[p]) total += (size_t)1 << sub_bits[p];
    if (sg_l_pool_reserve(pool, total)) return -1;
    sg_l_entry *t = pool->e + pool->n;
    size_t at = (size_t)1 << root;
    for (int p = 0; p < (1 << root); p++) {
        if (!sub_bits[p]) continue;
        t[p] = (sg_l_entry){(uint8_t)(root + sub_bits[p]), (uint16_t)at};
        at += (size_t)1 << sub_bits[p];
    }
    for (int s = 0; s < n; s++) {
        int len = lengths[s];
        if (len == 0) continue;
        uint32_t rev = sg_l_reverse(code_at[len]++, len);
        if (len <= root) {
            for (uint32_t i = rev; i < (1u << root); i += 1u << len) t[i] = (sg_l_entry){(uint8_t)len, (uint16_t)s};
        } else {
            sg_l_entry *sub = t + t[rev & ((1u << root) - 1)].value;
            int sb = sub_bits[rev & ((1u << root) - 1)];
            for (uint32_t i = rev >> root; i < (1u << sb); i += 1u << (len - root))
                sub[i] = (sg_l_entry){(uint8_t)(len - root), (uint16_t)s};
        }
    }
    out->off = (uint32_t)pool->n, out->mask = (uint16_t)((1u << root) - 1);
    pool->n += total;
    return 1;
}

/* One symbol: a first-level lookup, then (codes over 8 bits) a second one from 8 bits further on, each from the
 * window as libwebp reads it. */
static inline int sg_l_read_symbol(const sg_l_entry *t, uint32_t mask, sg_l_bits *br) {
    sg_l_entry e = t[sg_l_peek(br) & mask];
    if (e.bits > SG_L_ROOT_BITS) {
        br->bit_pos += SG_L_ROOT_BITS;
        e = t[e.value + (sg_l_peek(br) & ((1u << (e.bits - SG_L_ROOT_BITS)) - 1))];
    }
    br->bit_pos += e.bits;
    return e.value;
}

/* The code lengths of an alphabet of n symbols from the code-length code. 0 or -1 (refused). */
static int sg_l_read_code_lengths(sg_l_dec *d, const int *cl_lengths, int n) {
    sg_l_bits *br = &d->br;
    sg_l_pool pool = {0};
    sg_l_code cl;
    int rc = sg_l_build_code(cl_lengths, SG_L_CODE_LENGTH_CODES, &pool, &cl);
    if (rc <= 0) {
        free(pool.e);
        if (rc < 0) d->oom = 1;
        return -1;
    }
    int max_symbol = n;
    if (sg_l_read(br, 1)) {
        int nbits = 2 + 2 * (int)sg_l_read(br, 3);
        max_symbol = 2 + (int)sg_l_read(br, nbits);
        if (max_symbol > n) {
            free(pool.e);
            return -1;
        }
    }
    int prev = 8; /* the length a repeat code 16 copies before any non-zero one */
    for (int s = 0; s < n;) {
        if (max_symbol-- == 0) break;
        sg_l_fill(br);
        sg_l_entry e = pool.e[cl.off + (sg_l_peek(br) & cl.mask)];
        br->bit_pos += e.bits;
        int v = e.value;
        if (v < 16) {
            d->code_lengths[s++] = v;
            if (v) prev = v;
            continue;
        }
        static const uint8_t extra[3] = {2, 3, 7}, base[3] = {3, 3, 11};
        int repeat = (int)sg_l_read(br, extra[v - 16]) + base[v - 16];
        if (s + repeat > n) {
            free(pool.e);
            return -1;
        }
        int fill = v == 16 ? prev : 0;
        while (repeat-- > 0) d->code_lengths[s++] = fill;
    }
    free(pool.e);
    return 0;
}

/* One prefix code of an alphabet of n symbols, built into pool (out != NULL) or only checked. 0, or -1. */
static int sg_l_read_code(sg_l_dec *d, int n, sg_l_pool *pool, sg_l_code *out) {
    sg_l_bits *br = &d->br;
    memset(d->code_lengths, 0, (size_t)n * sizeof d->code_lengths[0]);
    int ok;
    if (sg_l_read(br, 1)) { /* simple code: one or two symbols of length 1 */
        int two = (int)sg_l_read(br, 1);
        int first_bits = sg_l_read(br, 1) ? 8 : 1;
        int s = (int)sg_l_read(br, first_bits);
        if (s < n) d->code_lengths[s] = 1;
        if (two) {
            s = (int)sg_l_read(br, 8);
            if (s < n) d->code_lengths[s] = 1;
        }
        ok = 1;
    } else {
        int cl_lengths[SG_L_CODE_LENGTH_CODES] = {0};
        int ncodes = 4 + (int)sg_l_read(br, 4);
        for (int i = 0; i < ncodes; i++) cl_lengths[sg_l_code_length_order[i]] = (int)sg_l_read(br, 3);
        ok = sg_l_read_code_lengths(d, cl_lengths, n) == 0;
    }
    if (!ok || br->eos) return -1;
    int rc = sg_l_build_code(d->code_lengths, n, pool, out);
    if (rc < 0) d->oom = 1;
    return rc == 1 ? 0 : -1;
}

/* --- entropy-coded images --------------------------------------------------------------------------------- */

typedef struct {
    int cache_bits;   /* 0: no colour cache */
    int meta_bits;    /* 0: one group for the whole image */
    int meta_xsize;   /* tiles per row of the entropy image */
    uint32_t *meta;   /* group (index into groups) per tile, or NULL */
    sg_l_group *groups;
    int ngroups;
    sg_l_pool pool;
    int rba_trivial;  /* libwebp's Is8bOptimizable over the groups it keeps */
} sg_l_entropy;

static void sg_l_entropy_free(sg_l_entropy *e) {
    free(e->meta);
    free(e->groups);
    free(e->pool.e);
    memset(e, 0, sizeof *e);
}

static int sg_l_decode_pixels(sg_l_dec *d, sg_l_entropy *e, uint32_t *px, int w, int h, int alpha8, uint32_t *cache);

/* A sub-image of w x h (no transforms, no entropy image): its header and pixels into a new buffer. */
static uint32_t *sg_l_read_subimage(sg_l_dec *d, int w, int h);

/* The groups of prefix codes: the entropy image (when allowed), then five codes per group. 0, or -1. */
static int sg_l_read_codes(sg_l_dec *d, int w, int h, int cache_bits, int allow_meta, sg_l_entropy *e) {
    sg_l_bits *br = &d->br;
    int max_group = 0, npix = 1;
    uint32_t *meta = NULL;
    e->cache_bits = cache_bits;
    if (allow_meta && sg_l_read(br, 1)) {
        e->meta_bits = 2 + (int)sg_l_read(br, 3);
        int mw = (int)(((uint32_t)w + (1u << e->meta_bits) - 1) >> e->meta_bits);
        int mh = (int)(((uint32_t)h + (1u << e->meta_bits) - 1) >> e->meta_bits);
        meta = sg_l_read_subimage(d, mw, mh);
        if (!meta) return -1;
        e->meta_xsize = mw, npix = mw * mh;
        for (int i = 0; i < npix; i++) {
            meta[i] = (meta[i] >> 8) & 0xffff;
            if ((int)meta[i] > max_group) max_group = (int)meta[i];
        }
    }
    if (br->eos) {
        free(meta);
        return -1;
    }
    int ngroups_read = max_group + 1;
    /* Keep only the groups some tile uses, numbered in order of first use. */
    int *map = malloc((size_t)ngroups_read * sizeof *map);
    if (!map) {
        free(meta);
        d->oom = 1;
        return -1;
    }
    for (int g = 0; g < ngroups_read; g++) map[g] = -1;
    int nused = 0;
    if (meta) {
        for (int i = 0; i < npix; i++) {
            if (map[meta[i]] < 0) map[meta[i]] = nused++;
            meta[i] = (uint32_t)map[meta[i]];
        }
    } else {
        map[0] = nused++;
    }
    /* libwebp keeps every group, used or not, when there are few (this decides only the alpha path). */
    int keeps_all = !(ngroups_read > 1000 || (int64_t)ngroups_read > (int64_t)w * h);
    e->meta = meta;
    e->groups = calloc((size_t)nused, sizeof *e->groups);
    e->ngroups = nused;
    if (!e->groups) {
        free(map);
        d->oom = 1;
        return -1;
    }
    e->rba_trivial = 1;
    int green_size = SG_L_LITERALS + SG_L_LENGTH_CODES + (cache_bits ? 1 << cache_bits : 0);
    for (int g = 0; g < ngroups_read; g++) {
        sg_l_group *grp = map[g] >= 0 ? &e->groups[map[g]] : NULL;
        int trivial_rba = 1;
        for (int j = 0; j < 5; j++) {
            int n = j == SG_L_GREEN ? green_size : j == SG_L_DIST ? SG_L_DISTANCE_CODES : SG_L_LITERALS;
            sg_l_code tmp;
            int need = grp != NULL || keeps_all; /* a code to build (kept) or only to check */
            if (sg_l_read_code(d, n, &e->pool, need ? (grp ? &grp->code[j] : &tmp) : NULL)) {
                free(map);
                return -1;
            }
            if (j != SG_L_GREEN && j != SG_L_DIST && (grp ? grp->code[j].mask : (need ? tmp.mask : 0)))
                trivial_rba = 0;
        }
        if ((grp || keeps_all) && !trivial_rba) e->rba_trivial = 0;
        if (grp) {
            const sg_l_entry *t = e->pool.e;
            grp->trivial = 0;
            if (trivial_rba && grp->code[SG_L_GREEN].mask == 0 && t[grp->code[SG_L_GREEN].off].value < SG_L_LITERALS) {
                grp->trivial = 1;
                grp->literal = (uint32_t)t[grp->code[SG_L_ALPHA].off].value << 24 |
                               (uint32_t)t[grp->code[SG_L_RED].off].value << 16 |
                               (uint32_t)t[grp->code[SG_L_GREEN].off].value << 8 | t[grp->code[SG_L_BLUE].off].value;
            }
        }
    }
    free(map);
    return 0;
}

/* The colour-cache flag and size, then the codes. 0, or -1 with d->err set. */
static int sg_l_read_entropy(sg_l_dec *d, int w, int h, int allow_meta, sg_l_entropy *e) {
    int cache_bits = 0;
    if (sg_l_read(&d->br, 1)) {
        cache_bits = (int)sg_l_read(&d->br, 4);
        if (cache_bits < 1 || cache_bits > SG_L_MAX_CACHE_BITS)
            return sg_pre_err(d->err, d->errlen, "WebP lossless: colour cache of %d bits (1..11 allowed)", cache_bits);
    }
    if (sg_l_read_codes(d, w, h, cache_bits, allow_meta, e)) {
        if (d->oom) return sg_pre_err(d->err, d->errlen, "WebP lossless: out of memory for the prefix codes");
        if (d->errlen && d->err[0]) return -1; /* a sub-image said why */
        return sg_pre_err(d->err, d->errlen, "WebP lossless: invalid prefix code or stream ends in the codes");
    }
    return 0;
}

static uint32_t *sg_l_read_subimage(sg_l_dec *d, int w, int h) {
    sg_l_entropy e = {0};
    if (sg_l_read_entropy(d, w, h, 0, &e)) {
        sg_l_entropy_free(&e);
        return NULL;
    }
    uint32_t *px = malloc((size_t)w * h * sizeof *px);
    uint32_t *cache = e.cache_bits ? calloc((size_t)1 << e.cache_bits, sizeof *cache) : NULL;
    if (!px || (e.cache_bits && !cache)) {
        free(px), free(cache), sg_l_entropy_free(&e);
        d->oom = 1;
        sg_pre_err(d->err, d->errlen, "WebP lossless: out of memory for a %dx%d sub-image", w, h);
        return NULL;
    }
    int rc = sg_l_decode_pixels(d, &e, px, w, h, 0, cache);
    free(cache);
    sg_l_entropy_free(&e);
    if (rc || d->br.eos) {
        if (!rc) sg_pre_err(d->err, d->errlen, "WebP lossless: stream ends in a sub-image");
        free(px);
        return NULL;
    }
    return px;
}

/* Length or distance from its prefix symbol and extra bits (extra bits are read only for symbols >= 4). */
static inline int sg_l_prefix_value(int sym, sg_l_bits *br) {
    if (sym < 4) return sym + 1;
    int extra = (sym - 2) >> 1;
    return ((2 + (sym & 1)) << extra) + (int)sg_l_read(br, extra) + 1;
}

static inline int sg_l_plane_distance(int w, int code) {
    if (code > 120) return code - 120;
    int c = sg_l_plane_codes[code - 1];
    int dist = (c >> 4) * w + 8 - (c & 0xf);
    return dist >= 1 ? dist : 1;
}

static inline uint32_t sg_l_cache_key(uint32_t argb, int bits) { return (argb * 0x1e35a7bdu) >> (32 - bits); }

/* The group of prefix codes of pixel (x, y). */
static inline const sg_l_group *sg_l_group_at(const sg_l_entropy *e, int x, int y) {
    if (!e->meta) return &e->groups[0];
    return &e->groups[e->meta[(size_t)(y >> e->meta_bits) * e->meta_xsize + (x >> e->meta_bits)]];
}

static inline int sg_l_read_with(const sg_l_entry *pool, sg_l_code c, sg_l_bits *br) {
    return sg_l_read_symbol(pool + c.off, c.mask, br);
}

/* A literal's red, blue and alpha after its green, with libwebp's refill between red and blue. */
static inline uint32_t sg_l_read_literal(const sg_l_entry *pool, const sg_l_group *g, int green, sg_l_bits *br) {
    uint32_t red = (uint32_t)sg_l_read_with(pool, g->code[SG_L_RED], br);
    sg_l_fill(br);
    uint32_t blue = (uint32_t)sg_l_read_with(pool, g->code[SG_L_BLUE], br);
    uint32_t alpha = (uint32_t)sg_l_read_with(pool, g->code[SG_L_ALPHA], br);
    return alpha << 24 | red << 16 | (uint32_t)green << 8 | blue;
}

/* Copies length pixels from dist back, forwards (an overlap repeats the pattern). */
static inline void sg_l_copy(uint32_t *dst, int dist, int length) {
    const uint32_t *src = dst - dist;
    for (int i = 0; i < length; i++) dst[i] = src[i];
}

/* The LZ77-coded pixels of a w x h image. alpha8: libwebp's 8-bit alpha path's end rule (header comment).
 * cache: 2^cache_bits zeroed words when the image has a colour cache. 0, or -1 with d->err set. */
static int sg_l_decode_pixels(sg_l_dec *d, sg_l_entropy *e, uint32_t *px, int w, int h, int alpha8, uint32_t *cache) {
    sg_l_bits *br = &d->br;
    const size_t end = (size_t)w * h;
    const int cache_bits = e->cache_bits, tile_mask = (1 << e->meta_bits) - 1;
    const sg_l_entry *pool = e->pool.e;
    size_t pos = 0;
    int x = 0, y = 0;
    const sg_l_group *g = sg_l_group_at(e, 0, 0);
    while (pos < end) {
        if (alpha8 && br->eos) break;
        if ((x & tile_mask) == 0) g = sg_l_group_at(e, x, y);
        int run = 1; /* pixels this step produces */
        if (g->trivial && !alpha8) { /* libwebp reads nothing for such a group, not even a refill */
            px[pos] = g->literal;
        } else {
            sg_l_fill(br);
            int code = sg_l_read_with(pool, g->code[SG_L_GREEN], br);
            if (code < SG_L_LITERALS) {
                px[pos] = sg_l_read_literal(pool, g, code, br);
            } else if (code < SG_L_LITERALS + SG_L_LENGTH_CODES) {
                run = sg_l_prefix_value(code - SG_L_LITERALS, br);
                int dsym = sg_l_read_with(pool, g->code[SG_L_DIST], br);
                sg_l_fill(br);
                int dist = sg_l_plane_distance(w, sg_l_prefix_value(dsym, br));
                if (!alpha8 && sg_l_at_end(br)) break;
                if (pos < (size_t)dist || end - pos < (size_t)run)
                    return sg_pre_err(d->err, d->errlen, "WebP lossless: backward reference of %d pixels at distance "
                                      "%d at pixel %zu of %zu", run, dist, pos, end);
                sg_l_copy(px + pos, dist, run);
            } else { /* a colour cache key: the green alphabet has them only with a cache */
                px[pos] = cache[code - SG_L_LITERALS - SG_L_LENGTH_CODES];
            }
        }
        if (cache) /* every pixel in order, as libwebp's lazy inserts leave it at each lookup */
            for (int i = 0; i < run; i++) cache[sg_l_cache_key(px[pos + i], cache_bits)] = px[pos + i];
        pos += (size_t)run;
        for (x += run; x >= w; x -= w) y++;
        if (run > 1 && pos < end && (x & tile_mask)) g = sg_l_group_at(e, x, y);
        if (sg_l_at_end(br)) {
            if (!alpha8) break;
            br->eos = 1;
        }
    }
    if (sg_l_at_end(br)) br->eos = 1;
    if (br->eos && (!alpha8 || pos < end))
        return sg_pre_err(d->err, d->errlen, "WebP lossless: stream ends at pixel %zu of %zu", pos, end);
    return 0;
}

/* --- transforms ------------------------------------------------------------------------------------------- */

typedef struct {
    int type, bits;
    int xsize;      /* width of the image this transform outputs */
    uint32_t *data; /* tile codes, or the palette (expanded to 2^(8 >> bits) entries) */
} sg_l_transform;

static inline uint32_t sg_l_add(uint32_t a, uint32_t b) { /* per-channel a + b mod 256 */
    return (((a & 0xff00ff00u) + (b & 0xff00ff00u)) & 0xff00ff00u) | (((a & 0x00ff00ffu) + (b & 0x00ff00ffu)) & 0x00ff00ffu);
}

static inline uint32_t sg_l_avg2(uint32_t a, uint32_t b) { /* per-channel floor((a + b) / 2) */
    return (((a ^ b) & 0xfefefefeu) >> 1) + (a & b);
}

static inline uint32_t sg_l_clip255(int v) { return v < 0 ? 0 : v > 255 ? 255 : (uint32_t)v; }

/* Mode 11: T or L, whichever is nearer (Manhattan over the four channels) to L + T - TL; ties give T. */
static inline uint32_t sg_l_select(uint32_t t, uint32_t l, uint32_t tl) {
    int score = 0;
    for (int sh = 0; sh < 32; sh += 8) {
        int a = (int)(t >> sh & 0xff), b = (int)(l >> sh & 0xff), c = (int)(tl >> sh & 0xff);
        score += abs(b - c) - abs(a - c);
    }
    return score <= 0 ? t : l;
}

/* Mode 12: clamp(L + T - TL) per channel. */
static inline uint32_t sg_l_add_sub_full(uint32_t l, uint32_t t, uint32_t tl) {
    uint32_t r = 0;
    for (int sh = 0; sh < 32; sh += 8)
        r |= sg_l_clip255((int)(l >> sh & 0xff) + (int)(t >> sh & 0xff) - (int)(tl >> sh & 0xff)) << sh;
    return r;
}

/* Mode 13: a = avg(L, T); clamp(a + (a - TL) / 2) per channel, the division truncating toward zero. */
static inline uint32_t sg_l_add_sub_half(uint32_t l, uint32_t t, uint32_t tl) {
    uint32_t avg = sg_l_avg2(l, t), r = 0;
    for (int sh = 0; sh < 32; sh += 8) {
        int a = (int)(avg >> sh & 0xff), b = (int)(tl >> sh & 0xff);
        r |= sg_l_clip255(a + (a - b) / 2) << sh;
    }
    return r;
}

/* Adds mode's prediction to pixels [x0, x1) of the row at p (the row above at p - w; x0 >= 1). */
static void sg_l_predict_run(uint32_t *p, int w, int x0, int x1, int mode) {
    const uint32_t *up = p - w;
    switch (mode) {
    case 1:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], p[x - 1]);
        break;
    case 2:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], up[x]);
        break;
    case 3: /* the last pixel's top-right is p[0], the row's own first pixel, which up[w] is */
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], up[x + 1]);
        break;
    case 4:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], up[x - 1]);
        break;
    case 5:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_avg2(sg_l_avg2(p[x - 1], up[x + 1]), up[x]));
        break;
    case 6:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_avg2(p[x - 1], up[x - 1]));
        break;
    case 7:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_avg2(p[x - 1], up[x]));
        break;
    case 8:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_avg2(up[x - 1], up[x]));
        break;
    case 9:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_avg2(up[x], up[x + 1]));
        break;
    case 10:
        for (int x = x0; x < x1; x++)
            p[x] = sg_l_add(p[x], sg_l_avg2(sg_l_avg2(p[x - 1], up[x - 1]), sg_l_avg2(up[x], up[x + 1])));
        break;
    case 11:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_select(up[x], p[x - 1], up[x - 1]));
        break;
    case 12:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_add_sub_full(p[x - 1], up[x], up[x - 1]));
        break;
    case 13:
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], sg_l_add_sub_half(p[x - 1], up[x], up[x - 1]));
        break;
    default: /* 0, and 14-15 as libwebp reads them: opaque black */
        for (int x = x0; x < x1; x++) p[x] = sg_l_add(p[x], 0xff000000u);
        break;
    }
}

static void sg_l_inverse_predictor(const sg_l_transform *t, uint32_t *px, int h) {
    const int w = t->xsize, tile = 1 << t->bits;
    const int tiles_x = (w + tile - 1) >> t->bits;
    px[0] = sg_l_add(px[0], 0xff000000u);
    sg_l_predict_run(px, w, 1, w, 1);
    for (int y = 1; y < h; y++) {
        uint32_t *p = px + (size_t)y * w;
        const uint32_t *modes = t->data + (size_t)(y >> t->bits) * tiles_x;
        p[0] = sg_l_add(p[0], p[-w]);
        for (int x = 1; x < w;) {
            int x1 = (x & ~(tile - 1)) + tile;
            if (x1 > w) x1 = w;
            sg_l_predict_run(p, w, x, x1, (int)(modes[x >> t->bits] >> 8 & 0xf));
            x = x1;
        }
    }
}

static inline int sg_l_color_delta(int8_t pred, int8_t color) { return ((int)pred * color) >> 5; }

static void sg_l_inverse_cross_color(const sg_l_transform *t, uint32_t *px, int h) {
    const int w = t->xsize;
    const int tiles_x = (w + (1 << t->bits) - 1) >> t->bits;
    for (int y = 0; y < h; y++) {
        uint32_t *p = px + (size_t)y * w;
        const uint32_t *codes = t->data + (size_t)(y >> t->bits) * tiles_x;
        for (int x = 0; x < w; x++) {
            uint32_t c = codes[x >> t->bits], argb = p[x];
            int8_t g2r = (int8_t)(c & 0xff), g2b = (int8_t)(c >> 8 & 0xff), r2b = (int8_t)(c >> 16 & 0xff);
            int8_t green = (int8_t)(argb >> 8 & 0xff);
            int red = (int)(argb >> 16 & 0xff), blue = (int)(argb & 0xff);
            red = (red + sg_l_color_delta(g2r, green)) & 0xff;
            blue = (blue + sg_l_color_delta(g2b, green) + sg_l_color_delta(r2b, (int8_t)red)) & 0xff;
            p[x] = (argb & 0xff00ff00u) | (uint32_t)red << 16 | (uint32_t)blue;
        }
    }
}

static void sg_l_add_green(uint32_t *px, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t g = px[i] >> 8 & 0xff;
        px[i] = (px[i] & 0xff00ff00u) | (((px[i] & 0x00ff00ffu) + (g << 16 | g)) & 0x00ff00ffu);
    }
}

/* Palette lookup, unpacking 2^bits indices per green byte, in place: from the last pixel back, since output
 * pixel y*w+x is never before the packed pixel y*pw+(x>>bits) it reads, nor before any one read later. */
static void sg_l_inverse_color_index(const sg_l_transform *t, uint32_t *px, int h) {
    const int w = t->xsize, bits = t->bits;
    const int pw = (w + (1 << bits) - 1) >> bits;
    const int bpp = 8 >> bits;
    const uint32_t mask = (1u << bpp) - 1;
    for (int y = h - 1; y >= 0; y--) {
        const uint32_t *src = px + (size_t)y * pw;
        uint32_t *dst = px + (size_t)y * w;
        for (int x = w - 1; x >= 0; x--) {
            uint32_t idx = (src[x >> bits] >> 8 & 0xff) >> ((x & ((1 << bits) - 1)) * bpp) & mask;
            dst[x] = t->data[idx];
        }
    }
}

/* Undoes transforms n-1 .. 0 on the w x h image (w the final width). */
static void sg_l_undo_transforms(const sg_l_transform *tr, int n, uint32_t *px, int h) {
    for (int i = n - 1; i >= 0; i--) {
        switch (tr[i].type) {
        case SG_L_PREDICTOR: sg_l_inverse_predictor(&tr[i], px, h); break;
        case SG_L_CROSS_COLOR: sg_l_inverse_cross_color(&tr[i], px, h); break;
        case SG_L_SUBTRACT_GREEN: sg_l_add_green(px, (size_t)tr[i].xsize * h); break;
        default: sg_l_inverse_color_index(&tr[i], px, h); break;
        }
    }
}

static inline int sg_l_subsample(int size, int bits) { return (int)(((uint32_t)size + (1u << bits) - 1) >> bits); }

/* One transform: its type (each at most once), then its data. *xsize becomes the packed width after colour
 * indexing. 0, or -1 with d->err set. */
static int sg_l_read_transform(sg_l_dec *d, int *xsize, int ysize, unsigned *seen, sg_l_transform *t) {
    int type = (int)sg_l_read(&d->br, 2);
    if (*seen & (1u << type)) return sg_pre_err(d->err, d->errlen, "WebP lossless: transform %d appears twice", type);
    *seen |= 1u << type;
    t->type = type, t->xsize = *xsize, t->bits = 0, t->data = NULL;
    if (type == SG_L_PREDICTOR || type == SG_L_CROSS_COLOR) {
        t->bits = 2 + (int)sg_l_read(&d->br, 3);
        t->data = sg_l_read_subimage(d, sg_l_subsample(*xsize, t->bits), sg_l_subsample(ysize, t->bits));
        return t->data ? 0 : -1;
    }
    if (type == SG_L_COLOR_INDEXING) {
        int ncolors = (int)sg_l_read(&d->br, 8) + 1;
        t->bits = ncolors > 16 ? 0 : ncolors > 4 ? 1 : ncolors > 2 ? 2 : 3;
        *xsize = sg_l_subsample(*xsize, t->bits);
        uint32_t *pal = sg_l_read_subimage(d, ncolors, 1);
        if (!pal) return -1;
        int size = 1 << (8 >> t->bits); /* every index a packed byte can hold; those past the palette are 0 */
        t->data = calloc((size_t)size, sizeof *t->data);
        if (!t->data) {
            free(pal);
            return sg_pre_err(d->err, d->errlen, "WebP lossless: out of memory for the palette");
        }
        t->data[0] = pal[0];
        for (int i = 1; i < ncolors; i++) t->data[i] = sg_l_add(pal[i], t->data[i - 1]);
        free(pal);
    }
    return 0;
}

/* The image stream of a w x h image (after the 5-byte header, or an ALPH chunk's) into px (w*h words). is_alpha:
 * the stream is an ALPH chunk's (libwebp may take its 8-bit path). 0, or -1 with d->err set. */
static int sg_l_decode_stream(sg_l_dec *d, int w, int h, uint32_t *px, int is_alpha) {
    sg_l_transform tr[4];
    int ntr = 0, xsize = w, rc = -1;
    unsigned seen = 0;
    sg_l_entropy e = {0};
    uint32_t *cache = NULL;
    while (sg_l_read(&d->br, 1)) {
        if (sg_l_read_transform(d, &xsize, h, &seen, &tr[ntr])) {
            if (!(d->errlen && d->err[0])) sg_pre_err(d->err, d->errlen, "WebP lossless: bad transform data");
            goto done;
        }
        ntr++; /* at most 4: a fifth would repeat a type */
    }
    if (sg_l_read_entropy(d, xsize, h, 1, &e)) goto done;
    if (e.cache_bits && !(cache = calloc((size_t)1 << e.cache_bits, sizeof *cache))) {
        sg_pre_err(d->err, d->errlen, "WebP lossless: out of memory for the colour cache");
        goto done;
    }
    int alpha8 = is_alpha && ntr == 1 && tr[0].type == SG_L_COLOR_INDEXING && !e.cache_bits && e.rba_trivial;
    if (sg_l_decode_pixels(d, &e, px, xsize, h, alpha8, cache)) goto done;
    sg_l_undo_transforms(tr, ntr, px, h);
    rc = 0;
done:
    for (int i = 0; i < ntr; i++) free(tr[i].data);
    free(cache);
    sg_l_entropy_free(&e);
    return rc;
}

/* --- entry points ----------------------------------------------------------------------------------------- */

int sg_vp8l_info(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t errlen) {
    if (!data || len < 5) return sg_pre_err(err, errlen, "WebP lossless: header of %zu bytes (5 needed)", len);
    if (data[0] != 0x2f) return sg_pre_err(err, errlen, "WebP lossless: signature 0x%02x (0x2f expected)", data[0]);
    if (data[4] >> 5) return sg_pre_err(err, errlen, "WebP lossless: version %d (0 expected)", data[4] >> 5);
    uint32_t bits = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
    *w = (int)(bits & 0x3fff) + 1;
    *h = (int)(bits >> 14 & 0x3fff) + 1;
    return 0;
}

int sg_vp8l_decode(const uint8_t *data, size_t len, uint32_t *argb, char *err, size_t errlen) {
    int w, h;
    if (err && errlen) err[0] = 0;
    if (sg_vp8l_info(data, len, &w, &h, err, errlen)) return -1;
    sg_l_dec *d = malloc(sizeof *d);
    if (!d) return sg_pre_err(err, errlen, "WebP lossless: out of memory");
    d->err = err, d->errlen = errlen, d->oom = 0;
    sg_l_bits_init(&d->br, data, len);
    sg_l_read(&d->br, 8 + 14 + 14 + 1 + 3 - 24); /* signature byte, then the fields sg_vp8l_info checked */
    sg_l_read(&d->br, 24);
    int rc = sg_l_decode_stream(d, w, h, argb, 0);
    free(d);
    return rc;
}

int sg_vp8l_decode_alpha(const uint8_t *data, size_t len, int w, int h, uint8_t *alpha, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (w <= 0 || h <= 0 || w > 16384 || h > 16384)
        return sg_pre_err(err, errlen, "WebP alpha: bad size %dx%d", w, h);
    size_t n = (size_t)w * h;
    sg_l_dec *d = malloc(sizeof *d);
    uint32_t *px = malloc(n * sizeof *px);
    if (!d || !px) {
        free(d), free(px);
        return sg_pre_err(err, errlen, "WebP alpha: out of memory for %dx%d", w, h);
    }
    d->err = err, d->errlen = errlen, d->oom = 0;
    static const uint8_t none[1] = {0};
    sg_l_bits_init(&d->br, data ? data : none, data ? len : 0);
    int rc = sg_l_decode_stream(d, w, h, px, 1);
    if (rc == 0)
        for (size_t i = 0; i < n; i++) alpha[i] = (uint8_t)(px[i] >> 8);
    free(px);
    free(d);
    return rc;
}
