/* preprocess/decode_webp_vp8.c — the VP8 key frame of a lossy WebP, decoded as libwebp 1.6.0 decodes it.
 *
 * Pillow 13 decodes WebP through libwebp (WebPAnimDecoder -> WebPDecode into RGBA, default options: fancy
 * upsampling, in-loop filter on, no dithering); this file gives the same RGB and fails where it fails. It parses
 * (RFC 6386): the 10-byte frame tag and key frame header, the first partition's headers (segments, loop
 * filter, token partitions, quantisers, token probabilities), then per macroblock row the modes (first
 * partition) and per macroblock the tokens (partition mb_y mod count); decode_webp_vp8_dsp.c reconstructs,
 * filters and converts. Rules kept from libwebp, beyond the RFC:
 *   - the frame is refused when the tag is not a key frame, the profile is above 3, the show bit is 0, the first
 *     partition is longer than the data after the 10-byte header, the start code is not 9d 01 2a, or a
 *     dimension is 0 (14 bits each; the two scale bits are read and ignored);
 *   - partitions: the size table (3 bytes each but the last) must fit; a declared size past the data is cut to
 *     what is left (no error); the last partition must have at least one byte;
 *   - the boolean decoder is libwebp's (VP8GetBit with its range-minus-one state, VP8GetSigned for sign bits,
 *     56-bit loads while 8 bytes remain, then byte loads, then one zero byte that sets "eof", then nothing).
 *     Running out is fatal where libwebp checks it: the first partition after the segment and filter headers
 *     and after each macroblock row's modes, a token partition after each macroblock; so a bit read past an end
 *     never reaches a pixel. The last partition ends where the data ends, and libwebp's data is the chunk with
 *     its padding byte (its demuxer hands the padded chunk), so the caller passes the payload and, for an odd
 *     size, the pad byte when the file has it: that byte can decide whether the last partition runs out;
 *   - dequantised coefficients are stored in 16 bits (they wrap as libwebp's int16_t stores do);
 *   - dithering is off (Pillow's default options), so the token reader's dither bookkeeping is not kept.
 * Memory: the Y, U and V planes of the whole frame (padded to macroblocks, 1.5 bytes a pixel: at most ~0.75 MB
 * over w x h x 1.5 for 14-bit sizes) and a few arrays of one macroblock row; nothing is global but constant tables.
 * Work is bounded by the macroblock count (each reads at most a fixed number of symbols), so the caller's pixel
 * cap bounds time as well as memory.
 */
#include "preprocess/decode_webp_vp8.h"
#include "preprocess/internal.h"

#include <stdlib.h>
#include <string.h>

/* --- boolean decoder (RFC 6386 section 7, libwebp's arithmetic) ---------------------------------------------- */
typedef struct {
    uint64_t value;     /* undecoded bits; the next bit's window sits at bit position `bits` */
    uint32_t range;     /* range - 1: 127..254 */
    int bits;           /* bits left in value past the current 8-bit window (negative: load first) */
    const uint8_t *buf; /* next byte */
    const uint8_t *end;
    int eof; /* a zero byte past the end was shifted in */
} vp8_bits;

static void br_load(vp8_bits *br) {
    if (br->end - br->buf >= 8) { /* libwebp reads 8 bytes and keeps 7 (56 bits) while 8 remain */
        const uint8_t *p = br->buf;
        uint64_t in = (uint64_t)p[0] << 48 | (uint64_t)p[1] << 40 | (uint64_t)p[2] << 32 | (uint64_t)p[3] << 24 |
                      (uint64_t)p[4] << 16 | (uint64_t)p[5] << 8 | p[6];
        br->buf += 7;
        br->value = in | br->value << 56;
        br->bits += 56;
    } else if (br->buf < br->end) {
        br->value = *br->buf++ | br->value << 8;
        br->bits += 8;
    } else if (!br->eof) {
        br->value <<= 8;
        br->bits += 8;
        br->eof = 1;
    } else {
        br->bits = 0;
    }
}

/* range - 1 starts at 254; bits at -8 so that the first load leaves the first byte in the window. */
static void br_init(vp8_bits *br, const uint8_t *p, size_t n) {
    br->value = 0, br->range = 254, br->bits = -8, br->eof = 0;
    br->buf = p, br->end = p + n;
    br_load(br); /* libwebp loads at once: an empty partition is at its end already */
}

static inline int br_bit(vp8_bits *br, int prob) {
    uint32_t range = br->range;
    if (br->bits < 0) br_load(br);
    int pos = br->bits;
    uint32_t split = (range * (uint32_t)prob) >> 8;
    uint32_t value = (uint32_t)(br->value >> pos);
    int bit = value > split;
    if (bit) {
        range -= split;
        br->value -= (uint64_t)(split + 1) << pos;
    } else {
        range = split + 1;
    }
    int shift = 7 ^ (31 - __builtin_clz(range)); /* renormalise to 128..255 */
    range <<= shift;
    br->bits -= shift;
    br->range = range - 1;
    return bit;
}

/* A sign bit (probability 1/2) applied to v, with libwebp's VP8GetSigned update: branch-free, and equal to
 * br_bit(br, 0x80) for every range it meets (range - 1 <= 253 after any bit; only the initial 254 differs). */
static inline int br_signed(vp8_bits *br, int v) {
    if (br->bits < 0) br_load(br);
    int pos = br->bits;
    uint32_t split = br->range >> 1;
    uint32_t value = (uint32_t)(br->value >> pos);
    int32_t mask = (int32_t)(split - value) >> 31; /* -1 when value > split */
    br->bits -= 1;
    br->range += (uint32_t)mask;
    br->range |= 1;
    br->value -= (uint64_t)((split + 1) & (uint32_t)mask) << pos;
    return (v ^ mask) - mask;
}

static uint32_t br_value(vp8_bits *br, int n) {
    uint32_t v = 0;
    while (n-- > 0) v |= (uint32_t)br_bit(br, 0x80) << n;
    return v;
}

static int br_signed_value(vp8_bits *br, int n) {
    int v = (int)br_value(br, n);
    return br_bit(br, 0x80) ? -v : v;
}

/* --- frame header ------------------------------------------------------------------------------------------- */
typedef struct {
    int y1[2], y2[2], uv[2]; /* [DC, AC] dequantisation factors */
} vp8_quant;

typedef struct {
    int w, h, mb_w, mb_h;
    vp8_bits br;        /* the first partition (modes after the headers) */
    vp8_bits parts[8];  /* token partitions */
    int parts_mask;     /* count - 1 */
    int use_segment, update_map, absolute_delta;
    int seg_quant[4], seg_filter[4];
    uint8_t seg_proba[3];
    int filter_simple, filter_level, sharpness, use_lf_delta;
    int ref_lf_delta[4], mode_lf_delta[4];
    int filter_type; /* 0 none, 1 simple, 2 normal */
    vp8_quant dqm[4];
    uint8_t proba[SG_VP8_NUM_TYPES][SG_VP8_NUM_BANDS][SG_VP8_NUM_CTX][SG_VP8_NUM_PROBAS];
    int use_skip, skip_proba;
} vp8_header;

/* RFC 6386 section 14.1: quantiser index -> DC and AC factors. */
static const uint8_t kDcTable[128] = {
    4,   5,   6,   7,   8,   9,   10,  10,  11,  12,  13,  14,  15,  16,  17,  17,  18,  19,  20,  20,  21,  21,
    22,  22,  23,  23,  24,  25,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  37,  38,  39,
    40,  41,  42,  43,  44,  45,  46,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,
    61,  62,  63,  64,  65,  66,  67,  68,  69,  70,  71,  72,  73,  74,  75,  76,  76,  77,  78,  79,  80,  81,
    82,  83,  84,  85,  86,  87,  88,  89,  91,  93,  95,  96,  98,  100, 101, 102, 104, 106, 108, 110, 112, 114,
    116, 118, 122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 143, 145, 148, 151, 154, 157};
static const uint16_t kAcTable[128] = {
    4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,
    26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,  43,  44,  45,  46,  47,
    48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  60,  62,  64,  66,  68,  70,  72,  74,  76,  78,  80,
    82,  84,  86,  88,  90,  92,  94,  96,  98,  100, 102, 104, 106, 108, 110, 112, 114, 116, 119, 122, 125, 128,
    131, 134, 137, 140, 143, 146, 149, 152, 155, 158, 161, 164, 167, 170, 173, 177, 181, 185, 189, 193, 197, 201,
    205, 209, 213, 217, 221, 225, 229, 234, 239, 245, 249, 254, 259, 264, 269, 274, 279, 284};

static int clip_q(int q, int hi) { return q < 0 ? 0 : q > hi ? hi : q; }

static void parse_segment_header(vp8_header *hd) {
    vp8_bits *br = &hd->br;
    hd->use_segment = br_bit(br, 0x80);
    hd->update_map = 0;
    hd->absolute_delta = 1;
    memset(hd->seg_proba, 255, sizeof hd->seg_proba);
    if (!hd->use_segment) return;
    hd->update_map = br_bit(br, 0x80);
    if (br_bit(br, 0x80)) { /* update the segment data */
        hd->absolute_delta = br_bit(br, 0x80);
        for (int s = 0; s < 4; s++) hd->seg_quant[s] = br_bit(br, 0x80) ? br_signed_value(br, 7) : 0;
        for (int s = 0; s < 4; s++) hd->seg_filter[s] = br_bit(br, 0x80) ? br_signed_value(br, 6) : 0;
    }
    if (hd->update_map)
        for (int s = 0; s < 3; s++) hd->seg_proba[s] = br_bit(br, 0x80) ? (uint8_t)br_value(br, 8) : 255;
}

static void parse_filter_header(vp8_header *hd) {
    vp8_bits *br = &hd->br;
    hd->filter_simple = br_bit(br, 0x80);
    hd->filter_level = (int)br_value(br, 6);
    hd->sharpness = (int)br_value(br, 3);
    hd->use_lf_delta = br_bit(br, 0x80);
    if (hd->use_lf_delta && br_bit(br, 0x80)) { /* update the deltas */
        for (int i = 0; i < 4; i++)
            if (br_bit(br, 0x80)) hd->ref_lf_delta[i] = br_signed_value(br, 6);
        for (int i = 0; i < 4; i++)
            if (br_bit(br, 0x80)) hd->mode_lf_delta[i] = br_signed_value(br, 6);
    }
    hd->filter_type = hd->filter_level == 0 ? 0 : hd->filter_simple ? 1 : 2;
}

/* The token partitions after the first: a table of 3-byte sizes (all but the last), then the partitions. */
static int parse_partitions(vp8_header *hd, const uint8_t *buf, size_t size, char *err, size_t errlen) {
    size_t last = ((size_t)1 << br_value(&hd->br, 2)) - 1;
    hd->parts_mask = (int)last;
    if (size < 3 * last)
        return sg_pre_err(err, errlen, "VP8: %zu token partitions need a %zu-byte size table, %zu bytes left",
                          last + 1, 3 * last, size);
    const uint8_t *sz = buf, *start = buf + 3 * last;
    size_t left = size - 3 * last;
    for (size_t p = 0; p < last; p++, sz += 3) {
        size_t psize = (size_t)sz[0] | (size_t)sz[1] << 8 | (size_t)sz[2] << 16;
        if (psize > left) psize = left; /* libwebp cuts it to what is left */
        br_init(&hd->parts[p], start, psize);
        start += psize, left -= psize;
    }
    br_init(&hd->parts[last], start, left);
    if (left == 0) return sg_pre_err(err, errlen, "VP8: the last token partition is empty (premature end of data)");
    return 0;
}

static void parse_quant(vp8_header *hd) {
    vp8_bits *br = &hd->br;
    int base = (int)br_value(br, 7);
    int dy1_dc = br_bit(br, 0x80) ? br_signed_value(br, 4) : 0;
    int dy2_dc = br_bit(br, 0x80) ? br_signed_value(br, 4) : 0;
    int dy2_ac = br_bit(br, 0x80) ? br_signed_value(br, 4) : 0;
    int duv_dc = br_bit(br, 0x80) ? br_signed_value(br, 4) : 0;
    int duv_ac = br_bit(br, 0x80) ? br_signed_value(br, 4) : 0;
    for (int s = 0; s < 4; s++) {
        int q = base;
        if (hd->use_segment) q = hd->seg_quant[s] + (hd->absolute_delta ? 0 : base);
        vp8_quant *m = &hd->dqm[s];
        m->y1[0] = kDcTable[clip_q(q + dy1_dc, 127)];
        m->y1[1] = kAcTable[clip_q(q, 127)];
        m->y2[0] = kDcTable[clip_q(q + dy2_dc, 127)] * 2;
        m->y2[1] = kAcTable[clip_q(q + dy2_ac, 127)] * 101581 >> 16; /* x * 155 / 100, exactly, for x <= 284 */
        if (m->y2[1] < 8) m->y2[1] = 8;
        m->uv[0] = kDcTable[clip_q(q + duv_dc, 117)];
        m->uv[1] = kAcTable[clip_q(q + duv_ac, 127)];
    }
}

static void parse_proba(vp8_header *hd) {
    vp8_bits *br = &hd->br;
    for (int t = 0; t < SG_VP8_NUM_TYPES; t++)
        for (int b = 0; b < SG_VP8_NUM_BANDS; b++)
            for (int c = 0; c < SG_VP8_NUM_CTX; c++)
                for (int p = 0; p < SG_VP8_NUM_PROBAS; p++)
                    hd->proba[t][b][c][p] = br_bit(br, sg_vp8_coeff_update_proba[t][b][c][p])
                                                ? (uint8_t)br_value(br, 8)
                                                : sg_vp8_coeff_proba0[t][b][c][p];
    hd->use_skip = br_bit(br, 0x80);
    if (hd->use_skip) hd->skip_proba = (int)br_value(br, 8);
}

int sg_vp8_get_info(const uint8_t *data, size_t avail, size_t size, int *w, int *h, char *err, size_t errlen) {
    if (!data || avail < 10)
        return sg_pre_err(err, errlen, "VP8 data of %zu bytes is shorter than its 10-byte header", avail);
    if (data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a)
        return sg_pre_err(err, errlen, "VP8 start code missing (%02x %02x %02x, not 9d 01 2a)", data[3], data[4],
                          data[5]);
    uint32_t tag = data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16;
    if (tag & 1) return sg_pre_err(err, errlen, "VP8 frame is not a key frame");
    if (((tag >> 1) & 7) > 3) return sg_pre_err(err, errlen, "VP8 profile %u unknown", (tag >> 1) & 7);
    if (!((tag >> 4) & 1)) return sg_pre_err(err, errlen, "VP8 frame is not shown");
    if ((tag >> 5) >= size) /* the first partition's length, which must leave room for the rest */
        return sg_pre_err(err, errlen, "VP8 first partition of %u bytes in a %zu-byte chunk", tag >> 5, size);
    *w = (data[6] | data[7] << 8) & 0x3fff; /* the top two bits are the (ignored) scale */
    *h = (data[8] | data[9] << 8) & 0x3fff;
    if (*w == 0 || *h == 0) return sg_pre_err(err, errlen, "VP8 frame of %dx%d", *w, *h);
    return 0;
}

/* Everything before the first macroblock: the checks of libwebp's VP8GetInfo (on the whole payload) and
 * VP8GetHeaders. */
static int parse_header(const uint8_t *data, size_t len, vp8_header *hd, char *err, size_t errlen) {
    memset(hd, 0, sizeof *hd);
    if (sg_vp8_get_info(data, len, len, &hd->w, &hd->h, err, errlen)) return -1;
    uint32_t part0 = (data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16) >> 5;
    if (part0 > len - 10)
        return sg_pre_err(err, errlen, "VP8: first partition of %u bytes, %zu after the header", part0, len - 10);
    hd->mb_w = (hd->w + 15) >> 4;
    hd->mb_h = (hd->h + 15) >> 4;
    br_init(&hd->br, data + 10, part0);
    br_bit(&hd->br, 0x80); /* colour space */
    br_bit(&hd->br, 0x80); /* clamping type: libwebp always clamps */
    parse_segment_header(hd);
    if (hd->br.eof) return sg_pre_err(err, errlen, "VP8: cannot parse the segment header");
    parse_filter_header(hd);
    if (hd->br.eof) return sg_pre_err(err, errlen, "VP8: cannot parse the filter header");
    if (parse_partitions(hd, data + 10 + part0, len - 10 - part0, err, errlen)) return -1;
    parse_quant(hd);
    br_bit(&hd->br, 0x80); /* refresh_entropy_probs: ignored on a key frame */
    parse_proba(hd);
    return 0; /* the first partition running out here is caught after the first row's modes, as libwebp does */
}

int sg_vp8_info(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t errlen) {
    vp8_header hd;
    if (parse_header(data, len, &hd, err, errlen)) return -1;
    *w = hd.w, *h = hd.h;
    return 0;
}

/* --- modes (RFC 6386 sections 11, 19.3) --------------------------------------------------------------------- */
typedef struct {
    uint8_t segment, skip, is_i4x4, uvmode;
    uint8_t imodes[16]; /* sub-block modes, raster order; imodes[0] is the 16x16 mode otherwise */
} vp8_mb_modes;

static int parse_bmode(vp8_bits *br, const uint8_t *p) {
    if (!br_bit(br, p[0])) return SG_VP8_B_DC;
    if (!br_bit(br, p[1])) return SG_VP8_B_TM;
    if (!br_bit(br, p[2])) return SG_VP8_B_VE;
    if (!br_bit(br, p[3])) {
        if (!br_bit(br, p[4])) return SG_VP8_B_HE;
        return br_bit(br, p[5]) ? SG_VP8_B_VR : SG_VP8_B_RD;
    }
    if (!br_bit(br, p[6])) return SG_VP8_B_LD;
    if (!br_bit(br, p[7])) return SG_VP8_B_VL;
    return br_bit(br, p[8]) ? SG_VP8_B_HU : SG_VP8_B_HD;
}

/* top: the 4 sub-block modes above (this macroblock's column), left: the 4 to the left; both updated. */
static void parse_modes(vp8_header *hd, vp8_mb_modes *m, uint8_t *top, uint8_t *left) {
    vp8_bits *br = &hd->br;
    m->segment = 0;
    if (hd->update_map)
        m->segment = (uint8_t)(!br_bit(br, hd->seg_proba[0]) ? br_bit(br, hd->seg_proba[1])
                                                             : br_bit(br, hd->seg_proba[2]) + 2);
    m->skip = hd->use_skip ? (uint8_t)br_bit(br, hd->skip_proba) : 0;
    m->is_i4x4 = !br_bit(br, 145);
    if (!m->is_i4x4) {
        int mode = br_bit(br, 156) ? (br_bit(br, 128) ? SG_VP8_B_TM : SG_VP8_B_HE)
                                   : (br_bit(br, 163) ? SG_VP8_B_VE : SG_VP8_B_DC);
        m->imodes[0] = (uint8_t)mode;
        memset(top, mode, 4);
        memset(left, mode, 4);
    } else {
        for (int y = 0; y < 4; y++) {
            int mode = left[y];
            for (int x = 0; x < 4; x++) {
                mode = parse_bmode(br, sg_vp8_bmode_proba[top[x]][mode]);
                top[x] = (uint8_t)mode;
            }
            memcpy(m->imodes + 4 * y, top, 4);
            left[y] = (uint8_t)mode;
        }
    }
    m->uvmode = !br_bit(br, 142)   ? SG_VP8_B_DC
                : !br_bit(br, 114) ? SG_VP8_B_VE
                : br_bit(br, 183)  ? SG_VP8_B_TM
                                   : SG_VP8_B_HE;
}

/* --- tokens (RFC 6386 section 13) --------------------------------------------------------------------------- */
static const uint8_t kBands[16 + 1] = {0, 1, 2, 3, 6, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 0}; /* + a sentinel */
static const uint8_t kZigzag[16] = {0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15};
static const uint8_t kCat3[] = {173, 148, 140, 0};
static const uint8_t kCat4[] = {176, 155, 140, 135, 0};
static const uint8_t kCat5[] = {180, 157, 141, 134, 130, 0};
static const uint8_t kCat6[] = {254, 254, 243, 230, 196, 177, 153, 140, 133, 130, 129, 0};
static const uint8_t *const kCat3456[] = {kCat3, kCat4, kCat5, kCat6};

/* A token of 2 or more (the tree past "one"), with its extra bits. */
static int parse_large(vp8_bits *br, const uint8_t *p) {
    if (!br_bit(br, p[3])) {
        if (!br_bit(br, p[4])) return 2;
        return 3 + br_bit(br, p[5]);
    }
    if (!br_bit(br, p[6])) {
        if (!br_bit(br, p[7])) return 5 + br_bit(br, 159);
        int v = 7 + 2 * br_bit(br, 165);
        return v + br_bit(br, 145);
    }
    int bit1 = br_bit(br, p[8]);
    int bit0 = br_bit(br, p[9 + bit1]);
    int cat = 2 * bit1 + bit0, v = 0;
    for (const uint8_t *t = kCat3456[cat]; *t; t++) v += v + br_bit(br, *t);
    return v + 3 + (8 << cat);
}

/* One block's tokens from position n, dequantised into out (natural order). Returns libwebp's count: the
 * position after the last token read before end-of-block (16 when the block runs to its end). */
static int parse_coeffs(vp8_bits *br, const uint8_t (*prob)[SG_VP8_NUM_CTX][SG_VP8_NUM_PROBAS], int ctx,
                        const int *dq, int n, int16_t *out) {
    const uint8_t *p = prob[kBands[n]][ctx];
    for (; n < 16; n++) {
        if (!br_bit(br, p[0])) return n; /* end of block */
        while (!br_bit(br, p[1])) {      /* zero tokens */
            if (++n == 16) return 16;
            p = prob[kBands[n]][0];
        }
        const uint8_t (*next)[SG_VP8_NUM_PROBAS] = prob[kBands[n + 1]];
        int v;
        if (!br_bit(br, p[2])) {
            v = 1;
            p = next[1];
        } else {
            v = parse_large(br, p);
            p = next[2];
        }
        out[kZigzag[n]] = (int16_t)(br_signed(br, v) * dq[n > 0]); /* 16 bits, wrapping as libwebp's store */
    }
    return 16;
}

/* Non-zero flags of the blocks along a macroblock's top or left edge: 0..3 luma, 4..5 U, 6..7 V, 8 the Y2. */
typedef struct {
    uint8_t f[9];
} vp8_nz;

/* The 2-bit class of a decoded block, which picks its inverse transform (see sg_vp8_add_luma_residual). */
static int nz_code(int nz, const int16_t *block) { return nz > 3 ? 3 : nz > 1 ? 2 : block[0] != 0; }

/* Reads a macroblock's tokens into coeffs[384] (16 luma, 4 U, 4 V blocks) and codes[24]; returns 1 when every
 * code is 0 (nothing to add, no inner-edge filtering from the coefficients). */
static int parse_residuals(const vp8_header *hd, vp8_bits *token_br, const vp8_mb_modes *m, vp8_nz *top,
                           vp8_nz *left, int16_t *coeffs, uint8_t *codes) {
    vp8_bits local = *token_br, *br = &local; /* a local copy the compiler can keep in registers */
    const vp8_quant *q = &hd->dqm[m->segment];
    int first = 0, type = 3, any = 0;
    memset(coeffs, 0, 384 * sizeof *coeffs);
    if (!m->is_i4x4) { /* the Y2 block carries the 16 luma DCs */
        int16_t dc[16] = {0};
        int nz = parse_coeffs(br, hd->proba[1], top->f[8] + left->f[8], q->y2, 0, dc);
        top->f[8] = left->f[8] = nz > 0;
        if (nz > 1) {
            sg_vp8_inverse_wht(dc, coeffs);
        } else { /* DC only: the transform's shortcut */
            int16_t dc0 = (int16_t)((dc[0] + 3) >> 3);
            for (int i = 0; i < 16; i++) coeffs[16 * i] = dc0;
        }
        first = 1, type = 0;
    }
    for (int y = 0; y < 4; y++) {
        int l = left->f[y];
        for (int x = 0; x < 4; x++) {
            int16_t *blk = coeffs + 16 * (4 * y + x);
            int nz = parse_coeffs(br, hd->proba[type], l + top->f[x], q->y1, first, blk);
            l = top->f[x] = nz > first;
            codes[4 * y + x] = (uint8_t)nz_code(nz, blk);
            any |= codes[4 * y + x];
        }
        left->f[y] = (uint8_t)l;
    }
    for (int ch = 0; ch < 2; ch++) {
        for (int y = 0; y < 2; y++) {
            int l = left->f[4 + 2 * ch + y];
            for (int x = 0; x < 2; x++) {
                int b = 16 + 4 * ch + 2 * y + x;
                int nz = parse_coeffs(br, hd->proba[2], l + top->f[4 + 2 * ch + x], q->uv, 0, coeffs + 16 * b);
                l = top->f[4 + 2 * ch + x] = nz > 0;
                codes[b] = (uint8_t)nz_code(nz, coeffs + 16 * b);
                any |= codes[b];
            }
            left->f[4 + 2 * ch + y] = (uint8_t)l;
        }
    }
    *token_br = local;
    return !any;
}

/* --- reconstruction of one macroblock ------------------------------------------------------------------------ */
typedef struct {
    uint8_t *y, *u, *v;  /* planes, padded to whole macroblocks */
    size_t ys, uvs;      /* their strides */
    uint8_t *top_y, *top_u, *top_v; /* the unfiltered bottom row of the macroblock row above */
    uint8_t ws[SG_VP8_WS_SIZE];     /* the current macroblock with its borders (decode_webp_vp8.h) */
} vp8_frame;

/* The DC modes at the frame's top / left edge read only what exists (RFC 6386 section 12.2). */
static int edge_mode(int mb_x, int mb_y, int mode) {
    if (mode != SG_VP8_B_DC) return mode;
    if (mb_x == 0) return mb_y == 0 ? SG_VP8_DC_NOTOPLEFT : SG_VP8_DC_NOLEFT;
    return mb_y == 0 ? SG_VP8_DC_NOTOP : SG_VP8_B_DC;
}

/* Sets the workspace's borders for macroblock (mb_x, mb_y): left column 129 at the frame's left edge (else the
 * previous macroblock's last columns, still in the workspace), top row 127 on the first row (else the row
 * above, unfiltered), top-left 127 on the first row and 129 on the others' first macroblock. */
static void set_borders(vp8_frame *fr, int mb_x, int mb_y, int mb_w, int is_i4x4) {
    uint8_t *y = fr->ws + SG_VP8_WS_Y, *u = fr->ws + SG_VP8_WS_U, *v = fr->ws + SG_VP8_WS_V;
    const int B = SG_VP8_BPS;
    if (mb_x == 0) {
        for (int j = 0; j < 16; j++) y[j * B - 1] = 129;
        for (int j = 0; j < 8; j++) u[j * B - 1] = v[j * B - 1] = 129;
        if (mb_y > 0) {
            y[-1 - B] = u[-1 - B] = v[-1 - B] = 129;
        } else {
            memset(y - B - 1, 127, 16 + 4 + 1);
            memset(u - B - 1, 127, 8 + 1);
            memset(v - B - 1, 127, 8 + 1);
        }
    } else { /* the previous macroblock's last 4 columns (and its top row's) move to the left border */
        for (int j = -1; j < 16; j++) memcpy(y + j * B - 4, y + j * B + 12, 4);
        for (int j = -1; j < 8; j++) memcpy(u + j * B - 4, u + j * B + 4, 4), memcpy(v + j * B - 4, v + j * B + 4, 4);
    }
    if (mb_y > 0) {
        memcpy(y - B, fr->top_y + 16 * mb_x, 16);
        memcpy(u - B, fr->top_u + 8 * mb_x, 8);
        memcpy(v - B, fr->top_v + 8 * mb_x, 8);
    }
    if (is_i4x4) { /* top-right of the sub-blocks: from the next macroblock above, repeated down the right side */
        uint8_t *tr = y - B + 16;
        if (mb_y > 0) {
            if (mb_x >= mb_w - 1) memset(tr, fr->top_y[16 * mb_x + 15], 4);
            else memcpy(tr, fr->top_y + 16 * (mb_x + 1), 4);
        }
        memcpy(tr + 4 * B, tr, 4), memcpy(tr + 8 * B, tr, 4), memcpy(tr + 12 * B, tr, 4);
    }
}

static void reconstruct_mb(vp8_frame *fr, int mb_x, int mb_y, int mb_w, int mb_h, const vp8_mb_modes *m,
                           const int16_t *coeffs, const uint8_t *codes) {
    uint8_t *y = fr->ws + SG_VP8_WS_Y, *u = fr->ws + SG_VP8_WS_U, *v = fr->ws + SG_VP8_WS_V;
    const int B = SG_VP8_BPS;
    set_borders(fr, mb_x, mb_y, mb_w, m->is_i4x4);
    if (m->is_i4x4) {
        for (int n = 0; n < 16; n++) {
            uint8_t *dst = y + (n >> 2) * 4 * B + (n & 3) * 4;
            sg_vp8_predict_luma4(m->imodes[n], dst);
            sg_vp8_add_luma_residual(codes[n], coeffs + 16 * n, dst);
        }
    } else {
        sg_vp8_predict_luma16(edge_mode(mb_x, mb_y, m->imodes[0]), y);
        for (int n = 0; n < 16; n++)
            sg_vp8_add_luma_residual(codes[n], coeffs + 16 * n, y + (n >> 2) * 4 * B + (n & 3) * 4);
    }
    int uvmode = edge_mode(mb_x, mb_y, m->uvmode);
    sg_vp8_predict_chroma8(uvmode, u);
    sg_vp8_predict_chroma8(uvmode, v);
    for (int ch = 0; ch < 2; ch++) {
        const uint8_t *c = codes + 16 + 4 * ch;
        int any_ac = (c[0] | c[1] | c[2] | c[3]) & 2, any = c[0] | c[1] | c[2] | c[3];
        sg_vp8_add_chroma_residual(any_ac, any, coeffs + 256 + 64 * ch, ch ? v : u);
    }
    if (mb_y < mb_h - 1) { /* the unfiltered bottom row, for the next row's prediction */
        memcpy(fr->top_y + 16 * mb_x, y + 15 * B, 16);
        memcpy(fr->top_u + 8 * mb_x, u + 7 * B, 8);
        memcpy(fr->top_v + 8 * mb_x, v + 7 * B, 8);
    }
    uint8_t *py = fr->y + (size_t)mb_y * 16 * fr->ys + (size_t)mb_x * 16;
    uint8_t *pu = fr->u + (size_t)mb_y * 8 * fr->uvs + (size_t)mb_x * 8;
    uint8_t *pv = fr->v + (size_t)mb_y * 8 * fr->uvs + (size_t)mb_x * 8;
    for (int j = 0; j < 16; j++) memcpy(py + j * fr->ys, y + j * B, 16);
    for (int j = 0; j < 8; j++) memcpy(pu + j * fr->uvs, u + j * B, 8), memcpy(pv + j * fr->uvs, v + j * B, 8);
}

/* --- the frame ---------------------------------------------------------------------------------------------- */
/* Loop-filter parameters per segment and per (16x16, sub-block) prediction (RFC 6386 sections 9.3, 9.6, 15). */
static void filter_strengths(const vp8_header *hd, sg_vp8_filter out[4][2]) {
    memset(out, 0, sizeof(sg_vp8_filter) * 8);
    if (hd->filter_type == 0) return;
    for (int s = 0; s < 4; s++) {
        int base = hd->filter_level;
        if (hd->use_segment) base = hd->seg_filter[s] + (hd->absolute_delta ? 0 : hd->filter_level);
        for (int i4 = 0; i4 <= 1; i4++) {
            sg_vp8_filter *f = &out[s][i4];
            int level = base;
            if (hd->use_lf_delta) level += hd->ref_lf_delta[0] + (i4 ? hd->mode_lf_delta[0] : 0);
            level = level < 0 ? 0 : level > 63 ? 63 : level;
            f->inner = (uint8_t)i4;
            if (level == 0) continue; /* limit 0: not filtered */
            int ilevel = level;
            if (hd->sharpness > 0) {
                ilevel >>= hd->sharpness > 4 ? 2 : 1;
                if (ilevel > 9 - hd->sharpness) ilevel = 9 - hd->sharpness;
            }
            if (ilevel < 1) ilevel = 1;
            f->ilevel = (uint8_t)ilevel;
            f->limit = (uint8_t)(2 * level + ilevel);
            f->hev = (uint8_t)(level >= 40 ? 2 : level >= 15 ? 1 : 0);
        }
    }
}

typedef struct {
    vp8_frame fr;
    vp8_mb_modes *modes;  /* [mb_w]: this row's */
    uint8_t *intra_top;   /* [4 * mb_w]: sub-block modes along the bottom of the row above */
    vp8_nz *nz_top;       /* [mb_w] */
    sg_vp8_filter *finfo; /* [mb_w]: this row's */
    int *rgb_tmp;         /* [2 * w] */
    uint8_t *mem;
} vp8_work;

static int work_alloc(const vp8_header *hd, vp8_work *wk, char *err, size_t errlen) {
    size_t mb_w = (size_t)hd->mb_w, mb_h = (size_t)hd->mb_h;
    size_t ys = mb_w * 16, uvs = mb_w * 8;
    size_t plane_y = ys * mb_h * 16, plane_uv = uvs * mb_h * 8;
    size_t n_modes = mb_w * sizeof(vp8_mb_modes), n_nz = mb_w * sizeof(vp8_nz);
    size_t n_f = mb_w * sizeof(sg_vp8_filter), n_tmp = 2 * (size_t)hd->w * sizeof(int);
    size_t total = plane_y + 2 * plane_uv + ys + 2 * uvs + 4 * mb_w + n_modes + n_nz + n_f + n_tmp + 64;
    memset(wk, 0, sizeof *wk);
    wk->mem = calloc(1, total); /* 14-bit sizes: no overflow in size_t */
    if (!wk->mem) return sg_pre_err(err, errlen, "VP8: out of memory (%zu bytes)", total);
    uint8_t *p = wk->mem;
    wk->rgb_tmp = (int *)p, p += n_tmp;           /* ints first: aligned */
    wk->modes = (vp8_mb_modes *)p, p += n_modes;  /* bytes only from here */
    wk->nz_top = (vp8_nz *)p, p += n_nz;
    wk->finfo = (sg_vp8_filter *)p, p += n_f;
    wk->intra_top = p, p += 4 * mb_w;
    wk->fr.top_y = p, p += ys;
    wk->fr.top_u = p, p += uvs;
    wk->fr.top_v = p, p += uvs;
    wk->fr.y = p, p += plane_y;
    wk->fr.u = p, p += plane_uv;
    wk->fr.v = p;
    wk->fr.ys = ys, wk->fr.uvs = uvs;
    return 0;
}

static void filter_row(const vp8_header *hd, vp8_work *wk, int mb_y) {
    vp8_frame *fr = &wk->fr;
    for (int mb_x = 0; mb_x < hd->mb_w; mb_x++)
        sg_vp8_filter_mb(&wk->finfo[mb_x], hd->filter_type == 1, mb_x > 0, mb_y > 0,
                         fr->y + (size_t)mb_y * 16 * fr->ys + (size_t)mb_x * 16,
                         fr->ys, fr->u + (size_t)mb_y * 8 * fr->uvs + (size_t)mb_x * 8,
                         fr->v + (size_t)mb_y * 8 * fr->uvs + (size_t)mb_x * 8, fr->uvs);
}

/* All macroblocks into the planes, filtered; 0, or -1 where a partition runs out as libwebp reports it. */
static int decode_frame(vp8_header *hd, vp8_work *wk, char *err, size_t errlen) {
    sg_vp8_filter strengths[4][2];
    filter_strengths(hd, strengths);
    int16_t coeffs[384];
    uint8_t codes[24];
    for (int mb_y = 0; mb_y < hd->mb_h; mb_y++) {
        uint8_t intra_left[4] = {0, 0, 0, 0}; /* B_DC at the left edge */
        for (int mb_x = 0; mb_x < hd->mb_w; mb_x++)
            parse_modes(hd, &wk->modes[mb_x], wk->intra_top + 4 * mb_x, intra_left);
        if (hd->br.eof)
            return sg_pre_err(err, errlen, "VP8: premature end of the first partition (macroblock row %d)", mb_y);
        vp8_bits *tokens = &hd->parts[mb_y & hd->parts_mask];
        vp8_nz left = {{0}};
        for (int mb_x = 0; mb_x < hd->mb_w; mb_x++) {
            const vp8_mb_modes *m = &wk->modes[mb_x];
            vp8_nz *top = &wk->nz_top[mb_x];
            int skip = m->skip;
            if (!skip) {
                skip = parse_residuals(hd, tokens, m, top, &left, coeffs, codes);
            } else {
                memset(top->f, 0, 8), memset(left.f, 0, 8);
                if (!m->is_i4x4) top->f[8] = left.f[8] = 0;
                memset(codes, 0, sizeof codes);
            }
            if (hd->filter_type > 0) {
                wk->finfo[mb_x] = strengths[m->segment][m->is_i4x4];
                wk->finfo[mb_x].inner |= (uint8_t)!skip;
            }
            if (tokens->eof)
                return sg_pre_err(err, errlen, "VP8: premature end of token partition %d (macroblock %d, %d)",
                                  mb_y & hd->parts_mask, mb_x, mb_y);
            reconstruct_mb(&wk->fr, mb_x, mb_y, hd->mb_w, hd->mb_h, m, coeffs, codes);
        }
        if (hd->filter_type > 0) filter_row(hd, wk, mb_y);
    }
    return 0;
}

int sg_vp8_decode_rgb(const uint8_t *data, size_t len, uint8_t *rgb, size_t stride, char *err, size_t errlen) {
    vp8_header hd;
    vp8_work wk;
    if (parse_header(data, len, &hd, err, errlen)) return -1;
    if (work_alloc(&hd, &wk, err, errlen)) return -1;
    int rc = decode_frame(&hd, &wk, err, errlen);
    if (rc == 0)
        sg_vp8_yuv_to_rgb(wk.fr.y, wk.fr.ys, wk.fr.u, wk.fr.v, wk.fr.uvs, hd.w, hd.h, rgb, stride, wk.rgb_tmp);
    free(wk.mem);
    return rc;
}
