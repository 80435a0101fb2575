/* preprocess/decode_pnm.c — binary PNM (P5 grey, P6 RGB) with Pillow's rules for every maxval, 1 to 65535.
 *
 * Pillow (PpmImagePlugin) reads maxval 255 as raw bytes. Any other maxval goes through its PpmDecoder: samples
 * are one byte when maxval < 256, else two bytes big-endian, and each becomes min(out_max, round(v / maxval *
 * out_max)), Python's round (half to even) on the double quotient; out_max is 255, except for P5 with maxval
 * over 255, which Pillow opens as 32-bit mode "I" (out_max 65535; maxval 65535 is read raw, the same values),
 * and convert("RGB") then clips to 0..255 (i2rgb), so such a PGM is mostly white, as in Pillow. A sample above
 * maxval is not refused: the min() clips it. Every sample value maps through one table built per image.
 *
 * The header is parsed here as Pillow reads it (pnm_parse_header; not by stb_image, which overflows an int on a long
 * number: tests/fuzz/README.md), and a file shorter than its pixels is refused, as Pillow refuses it ("not enough
 * image data").
 */
#include "preprocess/internal.h"

#include <math.h>
#include <stdlib.h>

static int pnm_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Pillow's _read_token from *p: white space before it skipped, a '#' anywhere drops the rest of its line (up to CR
 * or LF) and the token goes on after it, the token ends at white space (consumed) or the end of the file, and an 11th
 * byte makes it too long. 0 with the token, -1 at the end of the file, -2 for a token too long. */
static int pnm_token(const uint8_t *d, size_t len, size_t *p, char tok[11], int *n) {
    *n = 0;
    while (*n <= 10 && *p < len) {
        uint8_t c = d[(*p)++];
        if (pnm_ws(c)) {
            if (*n) break;
            continue;
        }
        if (c == '#') {
            while (*p < len && d[*p] != '\r' && d[*p] != '\n') (*p)++;
            if (*p < len) (*p)++;
            continue;
        }
        if (*n < 11) tok[*n] = (char)c;
        (*n)++;
    }
    return *n == 0 ? -1 : *n > 10 ? -2 : 0;
}

/* Python's int() of a token: an optional sign, then digits with single underscores between them (at most 10 bytes,
 * so it fits). 0 and the value, or -1. */
static int pnm_int(const char *t, int n, int64_t *v) {
    int i = 0, neg = 0, under = 0;
    if (i < n && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    if (i >= n || t[i] < '0' || t[i] > '9') return -1;
    int64_t x = 0;
    for (; i < n; i++) {
        if (t[i] == '_') {
            if (under) return -1;
            under = 1;
            continue;
        }
        if (t[i] < '0' || t[i] > '9') return -1;
        x = x * 10 + (t[i] - '0'), under = 0;
    }
    if (under) return -1;
    *v = neg ? -x : x;
    return 0;
}

/* The header as Pillow's PpmImagePlugin reads it: the magic ends at white space (P5 or P6 followed by anything else is
 * not a PPM file), then width, height and maxval as tokens (pnm_token, pnm_int); a size that is not positive is
 * refused (Pillow cannot identify the file), and so is a maxval outside 1..65535. *data_start is where the maxval's
 * token ended (past the white space that ended it): the pixels start there. */
static int pnm_parse_header(const uint8_t *d, size_t len, uint64_t v[3], size_t *data_start, char *err, size_t errlen) {
    if (len > 2 && !pnm_ws(d[2])) return sg_pre_err(err, errlen, "PNM: not a PPM file (the magic is not P5 or P6 alone)");
    size_t p = len > 2 ? 3 : 2;
    for (int i = 0; i < 3; i++) {
        char tok[11];
        int n, rc = pnm_token(d, len, &p, tok, &n);
        int64_t x = 0;
        if (rc == -1) return sg_pre_err(err, errlen, "PNM: the header ends early (truncated file)");
        if (rc == -2) return sg_pre_err(err, errlen, "PNM: a header token of more than 10 bytes at byte %zu", p);
        if (pnm_int(tok, n, &x)) return sg_pre_err(err, errlen, "PNM: a header token ending at byte %zu is not a number", p);
        if (i < 2 && x <= 0) return sg_pre_err(err, errlen, "PNM: image size %lld is not positive", (long long)x);
        if (i == 2 && (x <= 0 || x > 65535))
            return sg_pre_err(err, errlen, "PNM: maxval %lld is out of range (1 to 65535)", (long long)x);
        v[i] = (uint64_t)x;
    }
    *data_start = p;
    return 0;
}

/* The 8-bit grey or channel value each sample value s (0 .. nvalues-1) becomes, by the rules above. */
static void pnm_fill_table(uint8_t *table, size_t nvalues, uint32_t maxval, int grey) {
    double out_max = grey && maxval > 255 ? 65535.0 : 255.0;
    for (size_t s = 0; s < nvalues; s++) {
        double r;
        if (maxval == 255 || (grey && maxval == 65535)) r = (double)s; /* Pillow's raw paths: no arithmetic */
        else r = nearbyint((double)s / (double)maxval * out_max); /* default rounding mode: ties to even */
        table[s] = r >= 255.0 ? 255 : (uint8_t)r; /* min(out_max), then mode I's clip to 8 bits */
    }
}

int sg_pre_decode_pnm(const uint8_t *d, size_t len, const sg_preprocess_opts *opts, sg_rgb_image *out, char *err,
                      size_t errlen) {
    uint64_t v[3] = {0, 0, 0};
    size_t start = 0;
    if (pnm_parse_header(d, len, v, &start, err, errlen)) return -1;
    uint64_t w = v[0], h = v[1], maxval = v[2];
    if (sg_pre_check_dims("PNM", w, h, opts->max_pixels, err, errlen)) return -1;
    int grey = d[1] == '5', wide = maxval > 255;
    uint64_t samples = w * h * (grey ? 1 : 3), need = (uint64_t)start + samples * (wide ? 2 : 1);
    if (need > len)
        return sg_pre_err(err, errlen, "PNM: the file is truncated: %zu bytes, the header implies %llu", len,
                          (unsigned long long)need);
    size_t nvalues = wide ? 65536 : 256;
    uint8_t *table = malloc(nvalues);
    if (!table) return sg_pre_err(err, errlen, "out of memory");
    pnm_fill_table(table, nvalues, (uint32_t)maxval, grey);
    if (sg_pre_alloc(out, (int)w, (int)h, err, errlen)) {
        free(table);
        return -1;
    }
    const uint8_t *s = d + start;
    uint8_t *o = out->rgb;
    for (uint64_t i = 0; i < samples; i++) {
        uint8_t x = table[wide ? (size_t)(s[2 * i] << 8 | s[2 * i + 1]) : s[i]];
        if (grey) o[3 * i] = o[3 * i + 1] = o[3 * i + 2] = x; /* convert("RGB") from L or I: grey replicated */
        else o[i] = x;
    }
    free(table);
    return 0;
}
