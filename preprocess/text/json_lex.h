/* preprocess/text/json_lex.h — a small pull parser for JSON text that cannot be trusted (tokenizer.json).
 *
 * Why not cJSON (which the project uses for config.json): a Gemma tokenizer.json is ~17-30 MB with ~500k
 * values; building a cJSON tree costs ~64 bytes per value and most of the 0.3 s load budget, only to be walked
 * once. This reader walks the text in place instead: the caller asks for the value it expects next (an object
 * key, a string, an integer in a range, a bool) and skips the values it does not use. Strings without escapes
 * are returned as pointers into the input (no copy); strings with escapes are decoded into one scratch buffer.
 *
 * Strictness follows serde_json, which is what the tokenizers library parses with: RFC 8259 grammar, no raw
 * control characters in strings, valid UTF-8, \u escapes must form valid code points (a lone surrogate is an
 * error), integers are plain decimal (no fraction or exponent) and range-checked without overflow, nesting is
 * limited (serde_json's limit is 128). The first error is kept with its byte offset, line and column; after it,
 * every call fails, so callers may check once at the end of a block. Nothing here allocates except the scratch
 * buffer, which never exceeds the input's length.
 */
#ifndef SG_JSON_LEX_H
#define SG_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>

/* Nesting allowed in skipped values (serde_json's default recursion limit). */
#define SG_JSON_MAX_DEPTH 128

typedef struct sg_json {
    const char *base, *p, *end; /* the whole text, the cursor, one past the last byte */
    const char *label;          /* names the input in messages ("tokenizer.json" or a path) */
    char *err;                  /* first error, "label: byte N (line L, column C): what" */
    size_t errlen;
    int failed;
    char *scratch; /* decoded escaped strings; capacity scratch_cap, never more than the input length + 1 */
    size_t scratch_cap;
} sg_json;

/* Starts reading len bytes at text. label names the input in messages; err (errlen bytes) receives the first
 * error. Call sg_json_done to release the scratch buffer. */
void sg_json_init(sg_json *j, const char *text, size_t len, const char *label, char *err, size_t errlen);
void sg_json_done(sg_json *j);

/* Records an error at the cursor ("what" is printf-style) unless one is already recorded; returns -1. */
int sg_json_fail(sg_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The next non-space byte without consuming it, or -1 at the end of input (or after an error). */
int sg_json_peek(sg_json *j);

/* Checks that only white space is left. 0 or -1. */
int sg_json_end(sg_json *j);

/* Objects: sg_json_obj_begin consumes '{'. sg_json_obj_next then returns 1 with the next key in *key and *klen
 * (valid until the next string is read) and the ':' consumed, 0 after the closing '}', -1 on error. what names
 * the object in messages. */
int sg_json_obj_begin(sg_json *j, const char *what);
int sg_json_obj_next(sg_json *j, const char **key, size_t *klen);
/* Arrays: sg_json_arr_begin consumes '['; sg_json_arr_next returns 1 when an element follows (not consumed), 0
 * after the closing ']', -1 on error. */
int sg_json_arr_begin(sg_json *j, const char *what);
int sg_json_arr_next(sg_json *j);

/* A string value: *s and *len point at its decoded bytes (valid UTF-8, may contain NUL from \u0000), valid until the
 * next string is read. 0 or -1. */
int sg_json_string(sg_json *j, const char **s, size_t *len, const char *what);
/* An integer value in [lo, hi]. 0 or -1 (a fraction, exponent or out-of-range value is an error). */
int sg_json_int(sg_json *j, int64_t lo, int64_t hi, int64_t *out, const char *what);
/* Any JSON number, converted to double. 0 or -1. */
int sg_json_number(sg_json *j, double *out, const char *what);
/* true/false. 0 or -1. */
int sg_json_bool(sg_json *j, int *out, const char *what);
/* If the next value is null, consumes it and returns 1; otherwise returns 0 (nothing consumed); -1 on error. */
int sg_json_null(sg_json *j);
/* Skips one value of any type (nesting limited to SG_JSON_MAX_DEPTH). 0 or -1. */
int sg_json_skip(sg_json *j);

/* key/klen equals the NUL-terminated name. */
int sg_json_key_is(const char *key, size_t klen, const char *name);

#endif
