/* cli/json_text.c — escaping paths and formatting floats for the JSON outputs (rules in json_text.h). */
#include "json_text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if the bytes there are not one. */
static int utf8_valid_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
    if (c < 0xE0) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        unsigned cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        if (cp < 0x800) return 0;                  /* overlong */
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0; /* UTF-16 surrogates are not characters */
        return 3;
    }
    if (c < 0xF5) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        unsigned cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
        if (cp < 0x10000 || cp > 0x10FFFF) return 0;
        return 4;
    }
    return 0;
}

int sg_cli_utf8_valid(const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        int n = utf8_valid_len(s); /* reads at most up to the NUL: a NUL fails the continuation test */
        if (n == 0) return 0;
        s += n;
    }
    return 1;
}

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sg_cli_base64_put(sg_cli_buf *b, const unsigned char *p, size_t n) {
    sg_cli_buf_reserve(b, (n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {k_b64[v >> 18], k_b64[(v >> 12) & 63], i + 1 < n ? k_b64[(v >> 6) & 63] : '=',
                     i + 2 < n ? k_b64[v & 63] : '='};
        sg_cli_buf_append(b, q, 4);
    }
}

static int b64_value(char c) {
    const char *p = c ? strchr(k_b64, c) : NULL;
    return p ? (int)(p - k_b64) : -1;
}

int sg_cli_base64_decode(const char *s, size_t n, sg_cli_buf *out) {
    sg_cli_buf_clear(out);
    if (n % 4) return -1;
    for (size_t i = 0; i < n; i += 4) {
        int pad = (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=');
        if (pad && i + 4 != n) return -1; /* padding only in the last quantum */
        int v[4] = {b64_value(s[i]), b64_value(s[i + 1]), pad >= 2 ? 0 : b64_value(s[i + 2]),
                    pad >= 1 ? 0 : b64_value(s[i + 3])};
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) return -1;
        unsigned u = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        char c[3] = {(char)(u >> 16), (char)(u >> 8), (char)u};
        /* canonical: the bits a padded quantum does not use are zero, as our encoder writes them */
        if ((pad == 1 && (u & 0xff)) || (pad == 2 && (u & 0xffff))) return -1;
        sg_cli_buf_append(out, c, (size_t)(3 - pad));
    }
    if (!out->p) sg_cli_buf_append(out, "", 0);
    return 0;
}

void sg_cli_json_put_string(sg_cli_buf *b, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    sg_cli_buf_putc(b, '"');
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sg_cli_buf_append(b, e, 2);
            s++;
        } else if (c < 0x20) {
            char e[8];
            const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b"
                              : c == '\f' ? "\\f" : NULL;
            if (named) {
                sg_cli_buf_puts(b, named);
            } else {
                snprintf(e, sizeof e, "\\u%04x", c);
                sg_cli_buf_puts(b, e);
            }
            s++;
        } else {
            int n = utf8_valid_len(s); /* reads at most up to the NUL: a NUL fails the continuation test */
            if (n == 0) {
                sg_cli_buf_append(b, "\xEF\xBF\xBD", 3); /* U+FFFD REPLACEMENT CHARACTER */
                s++;
            } else {
                sg_cli_buf_append(b, (const char *)s, (size_t)n);
                s += n;
            }
        }
    }
    sg_cli_buf_putc(b, '"');
}

/* Powers of ten exactly representable in double (10^22 is the largest). */
static const double k_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* a * 10^k in double, for k in [-60, 60]: one or two roundings, relative error below 3e-16. */
static double scale10(double a, int k) {
    while (k > 22) {
        a *= 1e22;
        k -= 22;
    }
    while (k < -22) {
        a /= 1e22;
        k += 22;
    }
    return k >= 0 ? a * k_pow10[k] : a / k_pow10[-k];
}

/* Formats v as printf's "%.9g" would, about ten times faster (snprintf costs ~0.6 ms per 768-float row,
 * which made the writer the bottleneck of a GPU run). The 9 significant digits come from scaling the float,
 * exact in double, by a power of ten with at most ~3e-16 relative error; the result can differ from printf
 * in the last digit when v sits that close to a rounding boundary (2 of 20 million random float32 bit
 * patterns), and is then still within 1e-8 relative of v while float32 values are at least 6e-8 apart, so
 * parsing it back always gives the same float (test_cli_units checks both on random floats). */
static int format_float9(float v, char *out) {
    char *p = out;
    double a = v;
    if (a < 0 || (a == 0 && signbit(a))) {
        *p++ = '-';
        a = -a;
    }
    if (a == 0) {
        *p++ = '0';
        return (int)(p - out);
    }
    int e = (int)floor(log10(a));
    double m = scale10(a, 8 - e);
    if (m < 1e8) { /* log10 rounded up across a power of ten */
        e--;
        m = scale10(a, 8 - e);
    } else if (m >= 1e9) {
        e++;
        m = scale10(a, 8 - e);
    }
    uint64_t q = (uint64_t)llrint(m); /* round half to even, as glibc's printf rounds exact ties */
    if (q >= 1000000000u) {
        q /= 10;
        e++;
    }
    char d[9];
    for (int i = 8; i >= 0; i--) {
        d[i] = (char)('0' + q % 10);
        q /= 10;
    }
    int nd = 9;
    while (nd > 1 && d[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    if (e < -4 || e >= 9) {                   /* %g's switch to exponent form for precision 9 */
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            for (int i = 1; i < nd; i++) *p++ = d[i];
        }
        *p++ = 'e';
        *p++ = e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae >= 10) *p++ = (char)('0' + ae / 10);
        else *p++ = '0';
        *p++ = (char)('0' + ae % 10);
    } else if (e >= 0) {
        for (int i = 0; i <= e; i++) *p++ = d[i];
        if (nd > e + 1) {
            *p++ = '.';
            for (int i = e + 1; i < nd; i++) *p++ = d[i];
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -e - 1; i++) *p++ = '0';
        for (int i = 0; i < nd; i++) *p++ = d[i];
    }
    return (int)(p - out);
}

void sg_cli_json_put_float(sg_cli_buf *b, float v) {
    if (!isfinite(v)) {
        sg_cli_buf_append(b, "null", 4);
        return;
    }
    char t[32];
    int n = format_float9(v, t);
    sg_cli_buf_append(b, t, (size_t)n);
}

void sg_cli_json_put_row(sg_cli_buf *b, const char *path, const float *vec, int dim) {
    sg_cli_json_put_row_ex(b, "path", path, vec, dim, NULL);
}

void sg_cli_json_put_row_ex(sg_cli_buf *b, const char *key, const char *name, const float *vec, int dim,
                            const char *extra) {
    sg_cli_buf_putc(b, '{');
    sg_cli_json_put_string(b, key);
    sg_cli_buf_putc(b, ':');
    sg_cli_json_put_string(b, name);
    if (!sg_cli_utf8_valid(name)) { /* a path that is not UTF-8: its exact bytes beside the readable form */
        sg_cli_buf_putc(b, ',');
        sg_cli_buf_putc(b, '"');
        sg_cli_buf_puts(b, key);
        sg_cli_buf_puts(b, "_base64\":\"");
        sg_cli_base64_put(b, (const unsigned char *)name, strlen(name));
        sg_cli_buf_putc(b, '"');
    }
    if (extra) sg_cli_buf_puts(b, extra);
    if (!vec) {
        sg_cli_buf_puts(b, ",\"embedding\":null}");
        return;
    }
    sg_cli_buf_reserve(b, (size_t)dim * 16 + 16); /* "%.9g" is at most 15 chars ("-1.23456789e-38") + ',' */
    sg_cli_buf_puts(b, ",\"embedding\":[");
    for (int i = 0; i < dim; i++) {
        if (i) sg_cli_buf_putc(b, ',');
        sg_cli_json_put_float(b, vec[i]);
    }
    sg_cli_buf_puts(b, "]}");
}
