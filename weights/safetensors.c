/* weights/safetensors.c — the strict safetensors reader declared in safetensors.h.
 *
 * Order of checks: sizes first (so nothing reads past the buffer), then the header bytes (control bytes,
 * UTF-8, the \u0000 escape that would cut a name short in C), then JSON through cJSON, then each entry,
 * then names (sorted, adjacent equal = duplicate) and byte ranges (sorted by offset: no hole, no overlap,
 * last ends at end of file). cJSON's traps are avoided on purpose: entries and fields are walked through the
 * child list (cJSON_GetObjectItem ignores case and returns the first of duplicate keys), and integers are
 * read from valuedouble and required to be exact and below 2^53 (valueint saturates at INT_MAX).
 */
#include "safetensors.h"
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader uses it in place and needs a little-endian host"
#endif

/* 2^53: the first integer a double cannot tell from its neighbour (2^53 + 1 parses to 2^53), so offsets and
 * dimensions must stay below it to be read exactly. */
#define ST_EXACT_LIMIT 9007199254740992.0

/* Names are shown cut to this many bytes so a hostile 100 MB name cannot flood a message. */
#define ST_NAME_SHOWN 200

/* cJSON spends ~64 bytes per value, so a 100 MB header of "0,0,0,..." would cost ~3 GB before any check
 * could reject it. 4M values (~256 MB of nodes) is ~1000x what a real checkpoint needs (SigLIP2-B: ~2,000
 * values; the full SiglipModel file with its text tower a few thousand). */
#define ST_MAX_VALUES 4000000u

static void st_fail(char *err, size_t errlen, const char *label, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    int n = snprintf(err, errlen, "%s: ", label && *label ? label : "safetensors");
    if (n < 0 || (size_t)n >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

const char *sg_st_dtype_name(sg_st_dtype t) {
    switch (t) {
    case SG_ST_F32:
        return "F32";
    case SG_ST_F16:
        return "F16";
    case SG_ST_BF16:
        return "BF16";
    }
    return "?";
}

size_t sg_st_dtype_size(sg_st_dtype t) {
    return t == SG_ST_F32 ? 4 : 2;
}

/* Branch-light so the bulk loop below vectorises; exact for every input (subnormals: the magic-number
 * subtraction is exact because both operands share the exponent 2^-14). */
static inline float st_f16_to_f32(uint16_t h) {
    const uint32_t exp_mask = 0x7c00u << 13; /* f16 exponent field moved to the f32 position */
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13, e = o & exp_mask, bits;
    o += (127u - 15u) << 23; /* rebias the exponent */
    float f;
    if (e == exp_mask) {
        o += (128u - 16u) << 23; /* inf/NaN: exponent all ones, payload kept */
        bits = o;
    } else if (e == 0) {
        o += 1u << 23; /* zero/subnormal: value = (o as float) - 2^-14 */
        memcpy(&f, &o, 4);
        f -= 0x1p-14f;
        memcpy(&bits, &f, 4);
    } else {
        bits = o;
    }
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, 4);
    return f;
}

static inline float st_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16; /* bfloat16 is the top half of a float32 */
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float sg_f16_to_f32(uint16_t h) {
    return st_f16_to_f32(h);
}
float sg_bf16_to_f32(uint16_t b) {
    return st_bf16_to_f32(b);
}

void sg_st_widen(sg_st_dtype t, const uint8_t *src, float *dst, size_t n) {
    if (t == SG_ST_F32) {
        memcpy(dst, src, n * 4);
    } else if (t == SG_ST_F16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2); /* little-endian host (checked at the top) */
            dst[i] = st_f16_to_f32(h);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = st_bf16_to_f32(h);
        }
    }
}

/* ---- header byte checks ---------------------------------------------------------------------------- */

/* Returns the offset of the first byte that breaks strict UTF-8 (overlong forms, surrogates and code points
 * above U+10FFFF are errors), or len when the whole buffer is valid. */
static size_t st_utf8_invalid_at(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
            n = 2;
            cp = c & 0x1f;
            min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 3;
            cp = c & 0x0f;
            min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            n = 4;
            cp = c & 0x07;
            min = 0x10000;
        } else
            return i;
        if (len - i < n) return i;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += n;
    }
    return len;
}

static int st_is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Byte-level rules cJSON does not enforce: raw control bytes (JSON allows only whitespace outside strings
 * and none inside), invalid UTF-8, and the \u0000 escape (cJSON would store a NUL and cut the name). */
static int st_check_header_bytes(const uint8_t *h, size_t n, const char *label, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        if (h[i] < 0x20 && !st_is_space(h[i])) {
            st_fail(err, errlen, label, "header byte %zu is control character 0x%02x, not allowed in JSON", i, h[i]);
            return -1;
        }
    }
    size_t bad = st_utf8_invalid_at(h, n);
    if (bad < n) {
        st_fail(err, errlen, label, "header is not valid UTF-8: byte %zu (0x%02x) starts an invalid sequence", bad,
                h[bad]);
        return -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        if (h[i] != '\\') continue;
        if (h[i + 1] == 'u' && i + 5 < n && h[i + 2] == '0' && h[i + 3] == '0' && h[i + 4] == '0' && h[i + 5] == '0') {
            st_fail(err, errlen, label, "header byte %zu: the escape \\u0000 (NUL) is not allowed in a name", i);
            return -1;
        }
        i++; /* skip the escaped character, so "\\\\u0000" (an escaped backslash) is not mistaken */
    }
    return 0;
}

/* ---- entries --------------------------------------------------------------------------------------- */

/* Reads an exact integer in [0, 2^53) from a JSON number. Returns 0, or -1 with why written to what. */
static int st_exact_uint(const cJSON *v, uint64_t *out, const char **what) {
    if (!cJSON_IsNumber(v)) {
        *what = "not a number";
        return -1;
    }
    double d = v->valuedouble;
    if (!(d >= 0)) {
        *what = "negative";
        return -1;
    }
    if (d >= ST_EXACT_LIMIT) {
        *what = "2^53 or more, not exact in a double";
        return -1;
    }
    if (d != floor(d)) {
        *what = "not an integer";
        return -1;
    }
    *out = (uint64_t)d;
    return 0;
}

static const char *st_json_type(const cJSON *v) {
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

/* Writes "[a, b, c]" into buf. */
static void st_shape_str(const int64_t *shape, int ndim, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static int st_parse_entry(const cJSON *e, sg_st_tensor *t, uint64_t data_size, const char *label, char *err,
                          size_t errlen) {
    const char *nm = e->string;
    if (!cJSON_IsObject(e)) {
        st_fail(err, errlen, label, "tensor '%.*s': entry is %s, expected an object {dtype, shape, data_offsets}",
                ST_NAME_SHOWN, nm, st_json_type(e));
        return -1;
    }
    const cJSON *dt = NULL, *sh = NULL, *off = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
        const cJSON **slot = !strcmp(f->string, "dtype")          ? &dt
                             : !strcmp(f->string, "shape")        ? &sh
                             : !strcmp(f->string, "data_offsets") ? &off
                                                                  : NULL;
        if (!slot) {
            st_fail(err, errlen, label, "tensor '%.*s': unknown field '%.*s', expected only dtype, shape, data_offsets",
                    ST_NAME_SHOWN, nm, ST_NAME_SHOWN, f->string);
            return -1;
        }
        if (*slot) {
            st_fail(err, errlen, label, "tensor '%.*s': field '%s' appears twice", ST_NAME_SHOWN, nm, f->string);
            return -1;
        }
        *slot = f;
    }
    const char *missing = !dt ? "dtype" : !sh ? "shape" : !off ? "data_offsets" : NULL;
    if (missing) {
        st_fail(err, errlen, label, "tensor '%.*s': missing field '%s'", ST_NAME_SHOWN, nm, missing);
        return -1;
    }

    if (!cJSON_IsString(dt)) {
        st_fail(err, errlen, label, "tensor '%.*s': dtype is %s, expected a string", ST_NAME_SHOWN, nm,
                st_json_type(dt));
        return -1;
    }
    if (!strcmp(dt->valuestring, "F32"))
        t->dtype = SG_ST_F32;
    else if (!strcmp(dt->valuestring, "F16"))
        t->dtype = SG_ST_F16;
    else if (!strcmp(dt->valuestring, "BF16"))
        t->dtype = SG_ST_BF16;
    else {
        st_fail(err, errlen, label, "tensor '%.*s': unsupported dtype '%.40s', expected F32, F16 or BF16",
                ST_NAME_SHOWN, nm, dt->valuestring);
        return -1;
    }

    if (!cJSON_IsArray(sh)) {
        st_fail(err, errlen, label, "tensor '%.*s': shape is %s, expected an array of integers", ST_NAME_SHOWN, nm,
                st_json_type(sh));
        return -1;
    }
    int ndim = cJSON_GetArraySize(sh);
    if (ndim > SG_ST_MAX_DIMS) {
        st_fail(err, errlen, label, "tensor '%.*s': shape has %d dimensions, at most %d supported", ST_NAME_SHOWN, nm,
                ndim, SG_ST_MAX_DIMS);
        return -1;
    }
    t->ndim = ndim;
    uint64_t elems = 1;
    int overflow = 0, i = 0;
    for (const cJSON *d = sh->child; d; d = d->next, i++) {
        uint64_t v;
        const char *why;
        if (st_exact_uint(d, &v, &why)) {
            if (cJSON_IsNumber(d))
                st_fail(err, errlen, label, "tensor '%.*s': shape[%d] is %.17g (%s), expected an integer in [0, 2^53)",
                        ST_NAME_SHOWN, nm, i, d->valuedouble, why);
            else
                st_fail(err, errlen, label, "tensor '%.*s': shape[%d] is %s, expected an integer", ST_NAME_SHOWN, nm, i,
                        st_json_type(d));
            return -1;
        }
        t->shape[i] = (int64_t)v;
        overflow |= __builtin_mul_overflow(elems, v, &elems);
    }
    uint64_t need;
    overflow |= __builtin_mul_overflow(elems, (uint64_t)sg_st_dtype_size(t->dtype), &need);
    char shs[256];
    st_shape_str(t->shape, t->ndim, shs, sizeof shs);
    if (overflow) {
        st_fail(err, errlen, label, "tensor '%.*s': shape %s x %zu bytes overflows 64 bits", ST_NAME_SHOWN, nm, shs,
                sg_st_dtype_size(t->dtype));
        return -1;
    }

    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2) {
        if (cJSON_IsArray(off))
            st_fail(err, errlen, label, "tensor '%.*s': data_offsets has %d elements, expected 2 [begin, end]",
                    ST_NAME_SHOWN, nm, cJSON_GetArraySize(off));
        else
            st_fail(err, errlen, label, "tensor '%.*s': data_offsets is %s, expected an array [begin, end]",
                    ST_NAME_SHOWN, nm, st_json_type(off));
        return -1;
    }
    uint64_t be[2];
    i = 0;
    for (const cJSON *d = off->child; d; d = d->next, i++) {
        const char *why;
        if (st_exact_uint(d, &be[i], &why)) {
            if (cJSON_IsNumber(d))
                st_fail(err, errlen, label,
                        "tensor '%.*s': data_offsets[%d] is %.17g (%s), expected an integer in [0, 2^53)",
                        ST_NAME_SHOWN, nm, i, d->valuedouble, why);
            else
                st_fail(err, errlen, label, "tensor '%.*s': data_offsets[%d] is %s, expected an integer", ST_NAME_SHOWN,
                        nm, i, st_json_type(d));
            return -1;
        }
    }
    if (be[0] > be[1]) {
        st_fail(err, errlen, label, "tensor '%.*s': data_offsets [%llu, %llu] has begin after end", ST_NAME_SHOWN, nm,
                (unsigned long long)be[0], (unsigned long long)be[1]);
        return -1;
    }
    if (be[1] > data_size) {
        st_fail(err, errlen, label,
                "tensor '%.*s': data_offsets [%llu, %llu] out of range: the data area is %llu bytes (truncated file?)",
                ST_NAME_SHOWN, nm, (unsigned long long)be[0], (unsigned long long)be[1], (unsigned long long)data_size);
        return -1;
    }
    if (be[1] - be[0] != need) {
        st_fail(err, errlen, label,
                "tensor '%.*s': shape %s (%s) needs %llu bytes, but data_offsets [%llu, %llu] span %llu", ST_NAME_SHOWN,
                nm, shs, sg_st_dtype_name(t->dtype), (unsigned long long)need, (unsigned long long)be[0],
                (unsigned long long)be[1], (unsigned long long)(be[1] - be[0]));
        return -1;
    }
    t->begin = be[0];
    t->end = be[1];
    t->nbytes = need;
    return 0;
}

static int st_cmp_name(const void *a, const void *b) {
    return strcmp(((const sg_st_tensor *)a)->name, ((const sg_st_tensor *)b)->name);
}

static int st_cmp_range(const void *a, const void *b) {
    const sg_st_tensor *x = *(const sg_st_tensor *const *)a, *y = *(const sg_st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Sorted by offset, the ranges must tile [0, data_size) exactly. */
static int st_check_tiling(sg_st_file *f, uint64_t data_size, char *err, size_t errlen) {
    const char *label = f->label;
    if (f->n_tensors == 0) {
        if (data_size) {
            st_fail(err, errlen, label, "no tensors, but %llu bytes follow the header, expected none",
                    (unsigned long long)data_size);
            return -1;
        }
        return 0;
    }
    sg_st_tensor **by = malloc(f->n_tensors * sizeof *by);
    if (!by) {
        st_fail(err, errlen, label, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < f->n_tensors; i++)
        by[i] = &f->tensors[i];
    qsort(by, f->n_tensors, sizeof *by, st_cmp_range);
    int rc = 0;
    if (by[0]->begin != 0) {
        st_fail(err, errlen, label,
                "hole of %llu bytes at the start of the data area: first tensor '%.*s' begins at %llu, expected 0",
                (unsigned long long)by[0]->begin, ST_NAME_SHOWN, by[0]->name, (unsigned long long)by[0]->begin);
        rc = -1;
    }
    for (size_t i = 1; i < f->n_tensors && !rc; i++) {
        const sg_st_tensor *p = by[i - 1], *t = by[i];
        if (t->begin < p->end) {
            st_fail(err, errlen, label, "tensor '%.*s' [%llu, %llu) overlaps tensor '%.*s' [%llu, %llu)", ST_NAME_SHOWN,
                    t->name, (unsigned long long)t->begin, (unsigned long long)t->end, ST_NAME_SHOWN, p->name,
                    (unsigned long long)p->begin, (unsigned long long)p->end);
            rc = -1;
        } else if (t->begin > p->end) {
            st_fail(err, errlen, label,
                    "hole of %llu bytes between tensor '%.*s' (ends at %llu) and tensor '%.*s' (begins at %llu)",
                    (unsigned long long)(t->begin - p->end), ST_NAME_SHOWN, p->name, (unsigned long long)p->end,
                    ST_NAME_SHOWN, t->name, (unsigned long long)t->begin);
            rc = -1;
        }
    }
    const sg_st_tensor *last = by[f->n_tensors - 1];
    if (!rc && last->end != data_size) {
        st_fail(err, errlen, label,
                "%llu trailing bytes after the last tensor '%.*s' (ends at %llu, data area is %llu bytes), expected it "
                "to end at end of file",
                (unsigned long long)(data_size - last->end), ST_NAME_SHOWN, last->name, (unsigned long long)last->end,
                (unsigned long long)data_size);
        rc = -1;
    }
    free(by);
    return rc;
}

static int st_parse(sg_st_file *f, char *err, size_t errlen) {
    const char *label = f->label;
    if (f->size < 8) {
        st_fail(err, errlen, label, "file is %zu bytes, too short for the 8-byte header length (empty or truncated)",
                f->size);
        return -1;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | f->base[i];
    /* A file that starts with text (config.json, an index, a README) read as a header length gives ~1e18:
     * name the real problem instead of that number. */
    int text = 1;
    for (int i = 0; i < 8; i++) text &= (f->base[i] >= 0x20 && f->base[i] < 0x7f) || f->base[i] == '\n' ||
                                        f->base[i] == '\r' || f->base[i] == '\t';
    if (text && (n > SG_ST_MAX_HEADER || n > f->size - 8)) {
        char start[24], *q = start; /* the 8 bytes, whitespace shown as escapes */
        for (int i = 0; i < 8; i++) {
            uint8_t c = f->base[i];
            if (c == '\n' || c == '\r' || c == '\t') *q++ = '\\', *q++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            else *q++ = (char)c;
        }
        *q = '\0';
        st_fail(err, errlen, label,
                "not a safetensors file: it starts with text (\"%s\"%s), where a safetensors file starts with the "
                "8-byte length of its JSON header",
                start, f->base[0] == '{' ? ", like a JSON file" : "");
        return -1;
    }
    if (n > SG_ST_MAX_HEADER) {
        st_fail(err, errlen, label, "header length %llu exceeds the format's limit of %llu bytes",
                (unsigned long long)n, (unsigned long long)SG_ST_MAX_HEADER);
        return -1;
    }
    if (n > f->size - 8) {
        st_fail(err, errlen, label, "header length %llu runs past the end of the file (%zu bytes: at most %zu)",
                (unsigned long long)n, f->size, f->size - 8);
        return -1;
    }
    if (n < 2) {
        st_fail(err, errlen, label, "header length %llu is too short for a JSON object (at least 2 bytes, \"{}\")",
                (unsigned long long)n);
        return -1;
    }
    const uint8_t *h = f->base + 8;
    if (st_check_header_bytes(h, (size_t)n, label, err, errlen)) return -1;
    size_t values = sg_json_values_bound((const char *)h, (size_t)n);
    if (values > ST_MAX_VALUES) {
        st_fail(err, errlen, label, "header holds up to %zu JSON values, more than the %u this reader accepts", values,
                ST_MAX_VALUES);
        return -1;
    }
    size_t first = 0;
    while (first < n && st_is_space(h[first]))
        first++;
    if (first == n || h[first] != '{') {
        st_fail(err, errlen, label, "header is not a JSON object: first character is '%c', expected '{'",
                first < n ? h[first] : ' ');
        return -1;
    }

    /* cJSON is given a NUL-terminated copy: the mapping has no terminator after the header. */
    char *txt = malloc((size_t)n + 1);
    if (!txt) {
        st_fail(err, errlen, label, "out of memory for a %llu-byte header", (unsigned long long)n);
        return -1;
    }
    memcpy(txt, h, (size_t)n);
    txt[n] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(txt, (size_t)n, &end, 0);
    if (!root) {
        size_t at = end && end >= txt && end <= txt + n ? (size_t)(end - txt) : 0;
        st_fail(err, errlen, label, "header is not valid JSON: parse error at header byte %zu", at);
        free(txt);
        return -1;
    }
    for (const char *p = end; p < txt + n; p++) {
        if (!st_is_space((uint8_t)*p)) {
            st_fail(err, errlen, label,
                    "header has '%c' after the JSON object at header byte %zu, expected only spaces", *p,
                    (size_t)(p - txt));
            cJSON_Delete(root);
            free(txt);
            return -1;
        }
    }
    free(txt);
    txt = NULL;
    f->data_start = 8 + n;
    uint64_t data_size = f->size - f->data_start;

    int rc = 0;
    size_t count = 0;
    for (const cJSON *e = root->child; e; e = e->next)
        count++;
    f->tensors = calloc(count ? count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        st_fail(err, errlen, label, "out of memory");
        cJSON_Delete(root);
        return -1;
    }
    for (const cJSON *e = root->child; e && !rc; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (f->has_metadata) {
                st_fail(err, errlen, label, "duplicate key '__metadata__'");
                rc = -1;
                break;
            }
            f->has_metadata = 1;
            if (!cJSON_IsObject(e)) {
                st_fail(err, errlen, label, "__metadata__ is %s, expected an object of strings", st_json_type(e));
                rc = -1;
                break;
            }
            for (const cJSON *m = e->child; m; m = m->next) {
                if (!cJSON_IsString(m)) {
                    st_fail(err, errlen, label, "__metadata__ '%.*s' is %s, expected a string", ST_NAME_SHOWN,
                            m->string, st_json_type(m));
                    rc = -1;
                    break;
                }
            }
            continue;
        }
        sg_st_tensor *t = &f->tensors[f->n_tensors];
        rc = st_parse_entry(e, t, data_size, label, err, errlen);
        if (rc) break;
        t->name = strdup(e->string);
        if (!t->name) {
            st_fail(err, errlen, label, "out of memory");
            rc = -1;
            break;
        }
        t->data = f->base + f->data_start + t->begin;
        f->n_tensors++;
    }
    cJSON_Delete(root);
    if (rc) return -1;

    qsort(f->tensors, f->n_tensors, sizeof *f->tensors, st_cmp_name);
    for (size_t i = 1; i < f->n_tensors; i++) {
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name)) {
            st_fail(err, errlen, label, "duplicate tensor name '%.*s' (each name may appear once)", ST_NAME_SHOWN,
                    f->tensors[i].name);
            return -1;
        }
    }
    return st_check_tiling(f, data_size, err, errlen);
}

static sg_st_file *st_new(const char *label) {
    sg_st_file *f = calloc(1, sizeof *f);
    if (f) snprintf(f->label, sizeof f->label, "%s", label && *label ? label : "safetensors");
    return f;
}

sg_st_file *sg_st_open_memory(const void *buf, size_t len, const char *label, char *err, size_t errlen) {
    sg_st_file *f = st_new(label);
    if (!f) {
        st_fail(err, errlen, label, "out of memory");
        return NULL;
    }
    f->base = buf;
    f->size = len;
    if (!buf && len) {
        st_fail(err, errlen, f->label, "no buffer");
        sg_st_close(f);
        return NULL;
    }
    if (st_parse(f, err, errlen)) {
        sg_st_close(f);
        return NULL;
    }
    return f;
}

sg_st_file *sg_st_open(const char *path, char *err, size_t errlen) {
    sg_st_file *f = st_new(path);
    if (!f) {
        st_fail(err, errlen, path, "out of memory");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st_fail(err, errlen, path, "cannot open: %s", strerror(errno));
        sg_st_close(f);
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        st_fail(err, errlen, path, "not a regular file");
        close(fd);
        sg_st_close(f);
        return NULL;
    }
    f->size = (size_t)sb.st_size;
    if (f->size >= 8) {
        void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            st_fail(err, errlen, path, "cannot map %zu bytes: %s", f->size, strerror(errno));
            close(fd);
            sg_st_close(f);
            return NULL;
        }
        f->base = p;
        f->mapped = 1;
    }
    close(fd);
    if (st_parse(f, err, errlen)) {
        sg_st_close(f);
        return NULL;
    }
    return f;
}

const sg_st_tensor *sg_st_find(const sg_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[mid].name, name);
        if (c == 0) return &f->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void sg_st_close(sg_st_file *f) {
    if (!f) return;
    if (f->tensors) {
        for (size_t i = 0; i < f->n_tensors; i++)
            free(f->tensors[i].name);
        free(f->tensors);
    }
    if (f->mapped && f->base) munmap((void *)f->base, f->size);
    free(f);
}
