/* preprocess/decode_pnm.c — binary PNM (P5 grey, P6 RGB) with Pillow's rules for every maxval, 1 to 65535.
 *
 * Pillow (PpmImagePlugin) reads maxval 255 as raw bytes. Any other maxval goes through its PpmDecoder: samples
 * are one byte when maxval < 256, else two bytes big-endian, and each becomes min(out_max, round(v / maxval *
 * out_max)), Python's round (half to even) on the double quotient; out_max is 255, except for P5 with maxval
 * over 255, which Pillow opens as 32-bit mode "I" (out_max 65535; maxval 65535 is read raw, the same values),
 * and convert("RGB") then clips to 0..255 (i2rgb), so such a PGM is mostly white, as in Pillow. A sample above
 * maxval is not refused: the min() clips it. Every sample value maps through one table built per image.
 *
 * The header is parsed here, not by stb_image (2.27 overflows an int on a long number: tests/fuzz/README.md),
 * and a file shorter than its pixels is refused, as Pillow refuses it ("not enough image data").
 */
#include "preprocess/internal.h"

#include <math.h>
#include <stdlib.h>

/* Magic, then width, height, maxval as decimal tokens separated by whitespace and '#' comments, then exactly
 * one whitespace byte before the pixels. A number longer than 9 digits is refused. On success *data_start is
 * the pixels' offset (possibly len: then the size check refuses the file). */
static int pnm_parse_header(const uint8_t *d, size_t len, uint64_t v[3], size_t *data_start, char *err, size_t errlen) {
    size_t p = 2;
    for (int i = 0; i < 3; i++) {
        for (;;) {
            while (p < len && (d[p] == ' ' || d[p] == '\t' || d[p] == '\n' || d[p] == '\r' || d[p] == '\v' || d[p] == '\f')) p++;
            if (p < len && d[p] == '#') {
                while (p < len && d[p] != '\n' && d[p] != '\r') p++;
                continue;
            }
            break;
        }
        if (p >= len || d[p] < '0' || d[p] > '9') return sg_pre_err(err, errlen, "PNM: bad or truncated header at byte %zu", p);
        v[i] = 0;
        int digits = 0;
        while (p < len && d[p] >= '0' && d[p] <= '9') {
            if (++digits > 9) return sg_pre_err(err, errlen, "PNM: number with more than 9 digits in the header at byte %zu", p);
            v[i] = v[i] * 10 + (uint64_t)(d[p++] - '0');
        }
    }
    *data_start = p + 1;
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
    if (maxval == 0 || maxval > 65535) /* Pillow: "maxval must be greater than 0 and less than 65536" */
        return sg_pre_err(err, errlen, "PNM: maxval %llu is out of range (1 to 65535)", (unsigned long long)maxval);
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
