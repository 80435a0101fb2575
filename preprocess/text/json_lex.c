/* preprocess/text/json_lex.c — the pull parser declared in json_lex.h.
 *
 * Every function starts by checking j->failed, so a sequence of calls can be checked once. Positions in
 * messages are byte offsets into the input plus line and column (computed only when an error is recorded).
 * The fast path of sg_json_string scans for the closing quote and returns a pointer into the input when the
 * string has no escape; only strings with a backslash are decoded into the scratch buffer.
 */
#include "json_lex.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sg_json_init(sg_json *j, const char *text, size_t len, const char *label, char *err, size_t errlen) {
    memset(j, 0, sizeof *j);
    j->base = j->p = text;
    j->end = text + len;
    j->label = label && *label ? label : "json";
    j->err = err;
    j->errlen = errlen;
    if (err && errlen) err[0] = 0;
}

void sg_json_done(sg_json *j) {
    free(j->scratch);
    j->scratch = NULL;
    j->scratch_cap = 0;
}

int sg_json_fail(sg_json *j, const char *fmt, ...) {
    if (j->failed) return -1;
    j->failed = 1;
    if (!j->err || !j->errlen) return -1;
    size_t off = (size_t)(j->p - j->base), line = 1, col = 1;
    for (const char *q = j->base; q < j->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    int n = snprintf(j->err, j->errlen, "%s: byte %zu (line %zu, column %zu): ", j->label, off, line, col);
    if (n < 0 || (size_t)n >= j->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err + n, j->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The byte at the cursor, shown in messages: printable ASCII as 'c', anything else as hex, "end of input" at
 * the end. buf holds 16 bytes. */
static const char *shown(const sg_json *j, char *buf) {
    if (j->p >= j->end) return "end of input";
    unsigned c = (unsigned char)*j->p;
    if (c >= 0x20 && c < 0x7F)
        snprintf(buf, 16, "'%c'", (char)c);
    else
        snprintf(buf, 16, "byte 0x%02X", c);
    return buf;
}

static void skip_ws(sg_json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++;
}

int sg_json_peek(sg_json *j) {
    if (j->failed) return -1;
    skip_ws(j);
    return j->p < j->end ? (unsigned char)*j->p : -1;
}

int sg_json_end(sg_json *j) {
    if (j->failed) return -1;
    skip_ws(j);
    char b[16];
    if (j->p != j->end) return sg_json_fail(j, "expected end of input after the top-level value, got %s", shown(j, b));
    return 0;
}

static int expect(sg_json *j, char c, const char *what) {
    if (j->failed) return -1;
    skip_ws(j);
    char b[16];
    if (j->p >= j->end || *j->p != c) return sg_json_fail(j, "%s: expected '%c', got %s", what, c, shown(j, b));
    j->p++;
    return 0;
}

int sg_json_obj_begin(sg_json *j, const char *what) { return expect(j, '{', what); }
int sg_json_arr_begin(sg_json *j, const char *what) { return expect(j, '[', what); }

/* Right after '{' or '[', or after an element: decides whether another element follows. Whether this is the
 * first element is read from the cursor: the last non-space byte before it is the opening bracket only then
 * (a value never ends in '{' or '['), so callers keep no state. */
static int next_elem(sg_json *j, char close, const char *what) {
    if (j->failed) return -1;
    /* Look back past white space to see whether we are right after the opening bracket. */
    const char *q = j->p;
    while (q > j->base && (q[-1] == ' ' || q[-1] == '\n' || q[-1] == '\r' || q[-1] == '\t')) q--;
    int first = q > j->base && (q[-1] == '{' || q[-1] == '[');
    skip_ws(j);
    char b[16];
    if (j->p >= j->end) return sg_json_fail(j, "%s: unexpected end of input (no closing '%c')", what, close);
    if (*j->p == close) {
        j->p++;
        return 0;
    }
    if (!first) {
        if (*j->p != ',') return sg_json_fail(j, "%s: expected ',' or '%c', got %s", what, close, shown(j, b));
        j->p++;
        skip_ws(j);
        /* A trailing comma ("[1,]") is an error in JSON (serde_json refuses it too). */
        if (j->p < j->end && *j->p == close) return sg_json_fail(j, "%s: trailing comma before '%c'", what, close);
    }
    return 1;
}

int sg_json_obj_next(sg_json *j, const char **key, size_t *klen) {
    int r = next_elem(j, '}', "object");
    if (r != 1) return r;
    if (sg_json_string(j, key, klen, "object key") < 0) return -1;
    if (expect(j, ':', "object") < 0) return -1;
    return 1;
}

int sg_json_arr_next(sg_json *j) { return next_elem(j, ']', "array"); }

static int hex4(const char *s, uint32_t *v) {
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        r <<= 4;
        if (c >= '0' && c <= '9')
            r |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            r |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            r |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *v = r;
    return 0;
}

int sg_json_string(sg_json *j, const char **s, size_t *len, const char *what) {
    if (j->failed) return -1;
    skip_ws(j);
    char b[16];
    if (j->p >= j->end || *j->p != '"') return sg_json_fail(j, "%s: expected a string, got %s", what, shown(j, b));
    const char *start = ++j->p;
    /* Fast path: scan to the closing quote; plain ASCII bytes need no further check. */
    const char *q = start;
    int escaped = 0;
    while (q < j->end) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') break;
        if (c == '\\') {
            escaped = 1;
            break;
        }
        if (c < 0x20) {
            j->p = q;
            return sg_json_fail(j, "%s: raw control character 0x%02X inside a string (must be escaped)", what, c);
        }
        if (c < 0x80) {
            q++;
            continue;
        }
        uint32_t cp;
        int k = sg_utf8_decode((const unsigned char *)q, (size_t)(j->end - q), &cp);
        if (!k) {
            j->p = q;
            return sg_json_fail(j, "%s: invalid UTF-8 inside a string", what);
        }
        q += k;
    }
    if (q >= j->end) {
        j->p = start - 1;
        return sg_json_fail(j, "%s: unterminated string", what);
    }
    if (!escaped) {
        *s = start;
        *len = (size_t)(q - start);
        j->p = q + 1;
        return 0;
    }
    /* Slow path: decode into scratch. The decoded form is never longer than the source text, so the buffer
     * needs at most the rest of the input. */
    size_t need = (size_t)(j->end - start) + 1;
    if (j->scratch_cap < need) {
        size_t cap = j->scratch_cap ? j->scratch_cap : 256;
        while (cap < need) cap *= 2;
        if (cap > (size_t)(j->end - j->base) + 1) cap = (size_t)(j->end - j->base) + 1;
        char *nb = realloc(j->scratch, cap);
        if (!nb) return sg_json_fail(j, "%s: out of memory decoding a string", what);
        j->scratch = nb;
        j->scratch_cap = cap;
    }
    char *o = j->scratch;
    memcpy(o, start, (size_t)(q - start));
    o += q - start;
    j->p = q;
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            *s = j->scratch;
            *len = (size_t)(o - j->scratch);
            j->p++;
            return 0;
        }
        if (c < 0x20)
            return sg_json_fail(j, "%s: raw control character 0x%02X inside a string (must be escaped)", what, c);
        if (c >= 0x80) {
            uint32_t cp;
            int k = sg_utf8_decode((const unsigned char *)j->p, (size_t)(j->end - j->p), &cp);
            if (!k) return sg_json_fail(j, "%s: invalid UTF-8 inside a string", what);
            memcpy(o, j->p, (size_t)k);
            o += k;
            j->p += k;
            continue;
        }
        if (c != '\\') {
            *o++ = (char)c;
            j->p++;
            continue;
        }
        if (j->end - j->p < 2) break;
        char e = j->p[1];
        j->p += 2;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            uint32_t v, lo;
            if (j->end - j->p < 4 || hex4(j->p, &v) < 0) {
                j->p -= 2;
                return sg_json_fail(j, "%s: \\u must be followed by 4 hex digits", what);
            }
            j->p += 4;
            if (v >= 0xDC00 && v <= 0xDFFF) {
                j->p -= 6;
                return sg_json_fail(j, "%s: lone trailing surrogate \\u%04X", what, (unsigned)v);
            }
            if (v >= 0xD800 && v <= 0xDBFF) {
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || hex4(j->p + 2, &lo) < 0 || lo < 0xDC00 ||
                    lo > 0xDFFF) {
                    j->p -= 6;
                    return sg_json_fail(j, "%s: lone leading surrogate \\u%04X (no trailing surrogate after it)", what,
                                        (unsigned)v);
                }
                j->p += 6;
                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += sg_utf8_encode(v, o);
            break;
        }
        default:
            j->p -= 2;
            return sg_json_fail(j, "%s: invalid escape '\\%c'", what, (e >= 0x20 && e < 0x7F) ? e : '?');
        }
    }
    j->p = start - 1;
    return sg_json_fail(j, "%s: unterminated string", what);
}

/* Scans a JSON number at the cursor without converting it: sets *int_only when it has no fraction and no
 * exponent, and returns its end, or NULL (with the error recorded) if it is not a valid number. */
static const char *scan_number(sg_json *j, int *int_only, const char *what) {
    const char *q = j->p;
    char b[16];
    if (q < j->end && *q == '-') q++;
    if (q >= j->end || *q < '0' || *q > '9')
        return sg_json_fail(j, "%s: expected a number, got %s", what, shown(j, b)), NULL;
    if (*q == '0') {
        q++;
        if (q < j->end && *q >= '0' && *q <= '9') return sg_json_fail(j, "%s: number with a leading zero", what), NULL;
    } else {
        while (q < j->end && *q >= '0' && *q <= '9') q++;
    }
    *int_only = 1;
    if (q < j->end && *q == '.') {
        *int_only = 0;
        q++;
        if (q >= j->end || *q < '0' || *q > '9')
            return sg_json_fail(j, "%s: no digit after the decimal point", what), NULL;
        while (q < j->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < j->end && (*q == 'e' || *q == 'E')) {
        *int_only = 0;
        q++;
        if (q < j->end && (*q == '+' || *q == '-')) q++;
        if (q >= j->end || *q < '0' || *q > '9') return sg_json_fail(j, "%s: no digit in the exponent", what), NULL;
        while (q < j->end && *q >= '0' && *q <= '9') q++;
    }
    return q;
}

int sg_json_int(sg_json *j, int64_t lo, int64_t hi, int64_t *out, const char *what) {
    if (j->failed) return -1;
    skip_ws(j);
    int int_only;
    const char *q = scan_number(j, &int_only, what);
    if (!q) return -1;
    if (!int_only)
        return sg_json_fail(j, "%s: expected an integer in [%lld, %lld], got a number with a fraction or exponent",
                            what, (long long)lo, (long long)hi);
    const char *d = j->p;
    int neg = *d == '-';
    if (neg) d++;
    /* Accumulate as a magnitude capped just above the range, so no digit count can overflow. */
    uint64_t cap = neg ? (uint64_t)(-(lo + 1)) + 1 : (uint64_t)(hi < 0 ? 0 : hi);
    uint64_t v = 0;
    int over = 0;
    for (; d < q; d++) {
        unsigned dig = (unsigned)(*d - '0');
        if (dig > cap || v > (cap - dig) / 10) {
            over = 1;
            break;
        }
        v = v * 10 + dig;
    }
    if (neg && lo >= 0 && v != 0) over = 1;
    if (over || (!neg && (int64_t)v > hi) || (neg && -(int64_t)(v - 1) - 1 < lo)) {
        int n = (int)(q - j->p);
        return sg_json_fail(j, "%s: expected an integer in [%lld, %lld], got %.*s%s", what, (long long)lo,
                            (long long)hi, n > 40 ? 40 : n, j->p, n > 40 ? "..." : "");
    }
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    if (neg && v == 0) *out = 0;
    j->p = q;
    return 0;
}

int sg_json_number(sg_json *j, double *out, const char *what) {
    if (j->failed) return -1;
    skip_ws(j);
    int int_only;
    const char *q = scan_number(j, &int_only, what);
    if (!q) return -1;
    /* strtod needs a terminated copy; a number longer than 64 bytes is refused rather than copied. */
    char buf[72];
    size_t n = (size_t)(q - j->p);
    if (n > 64) return sg_json_fail(j, "%s: number longer than 64 characters", what);
    memcpy(buf, j->p, n);
    buf[n] = 0;
    *out = strtod(buf, NULL);
    j->p = q;
    return 0;
}

static int literal(sg_json *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) return 0;
    /* "nullx" or "true1": a literal must not run into more letters or digits. */
    if ((size_t)(j->end - j->p) > n) {
        char c = j->p[n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return 0;
    }
    j->p += n;
    return 1;
}

int sg_json_bool(sg_json *j, int *out, const char *what) {
    if (j->failed) return -1;
    skip_ws(j);
    char b[16];
    if (literal(j, "true")) {
        *out = 1;
        return 0;
    }
    if (literal(j, "false")) {
        *out = 0;
        return 0;
    }
    return sg_json_fail(j, "%s: expected true or false, got %s", what, shown(j, b));
}

int sg_json_null(sg_json *j) {
    if (j->failed) return -1;
    skip_ws(j);
    return literal(j, "null");
}

int sg_json_skip(sg_json *j) {
    if (j->failed) return -1;
    /* Iterative: depth counts open brackets; stack[] remembers which kind each one was. */
    char stack[SG_JSON_MAX_DEPTH];
    int depth = 0;
    char b[16];
    for (;;) {
        skip_ws(j);
        if (j->p >= j->end) return sg_json_fail(j, "unexpected end of input inside a value");
        char c = *j->p;
        if (c == '{' || c == '[') {
            if (depth >= SG_JSON_MAX_DEPTH) return sg_json_fail(j, "nesting deeper than %d levels", SG_JSON_MAX_DEPTH);
            stack[depth++] = c;
            j->p++;
            int r = next_elem(j, c == '{' ? '}' : ']', c == '{' ? "object" : "array");
            if (r < 0) return -1;
            if (r == 0) {
                depth--;
                goto after_value;
            }
            if (c == '{') {
                const char *k;
                size_t kl;
                if (sg_json_string(j, &k, &kl, "object key") < 0 || expect(j, ':', "object") < 0) return -1;
            }
            continue;
        }
        if (c == '"') {
            const char *s;
            size_t l;
            if (sg_json_string(j, &s, &l, "string") < 0) return -1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            int int_only;
            const char *q = scan_number(j, &int_only, "number");
            if (!q) return -1;
            j->p = q;
        } else if (!literal(j, "true") && !literal(j, "false") && !literal(j, "null")) {
            return sg_json_fail(j, "expected a JSON value, got %s", shown(j, b));
        }
    after_value:
        while (depth > 0) {
            char open = stack[depth - 1];
            int r = next_elem(j, open == '{' ? '}' : ']', open == '{' ? "object" : "array");
            if (r < 0) return -1;
            if (r == 0) {
                depth--;
                continue;
            }
            if (open == '{') {
                const char *k;
                size_t kl;
                if (sg_json_string(j, &k, &kl, "object key") < 0 || expect(j, ':', "object") < 0) return -1;
            }
            break;
        }
        if (depth == 0) return 0;
    }
}

int sg_json_key_is(const char *key, size_t klen, const char *name) {
    size_t n = strlen(name);
    return klen == n && memcmp(key, name, n) == 0;
}
