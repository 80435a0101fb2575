/* cli/json_text.h — the JSON text the command writes: paths that round-trip to their bytes, and floats.
 *
 * Paths are bytes on Unix but JSON strings are Unicode. A row names its path in two ways:
 *   "path"         always: valid UTF-8 passes through unchanged; '"' and '\\' are backslash-escaped; control
 *                  bytes below 0x20 become \u00XX (or \n, \t, ...); each byte that is not part of a valid UTF-8
 *                  sequence (overlong forms, surrogates and code points above U+10FFFF included) becomes U+FFFD,
 *                  written as its UTF-8 bytes;
 *   "path_base64"  only when the path is not valid UTF-8 (so "path" lost bytes): the path's exact bytes in
 *                  standard base64 (RFC 4648, with padding).
 * So every output is accepted by strict parsers (only plain UTF-8 strings, no lone surrogate escapes, which
 * some parsers refuse), and every row maps back to the exact bytes: path_base64 when present, else "path"
 * encoded as UTF-8 (two names that differ only in invalid bytes, x\xff.jpg and x\xfe.jpg, share "path" but
 * not path_base64). --resume matches on those bytes (resume.c).
 */
#ifndef SG_CLI_JSON_TEXT_H
#define SG_CLI_JSON_TEXT_H

#include "buf.h"

/* Appends s as a quoted JSON string (with the quotes) to b, by the "path" rules above. */
void sg_cli_json_put_string(sg_cli_buf *b, const char *s);

/* 1 if the NUL-terminated s is valid UTF-8 (no overlong forms, surrogates or code points above U+10FFFF). */
int sg_cli_utf8_valid(const char *s);

/* Appends the standard base64 text (with '=' padding) of n bytes. */
void sg_cli_base64_put(sg_cli_buf *b, const unsigned char *p, size_t n);

/* Decodes standard base64 text of length n (padding required, no whitespace) into out (NUL-terminated).
 * Returns 0, or -1 when the text is not canonical base64. */
int sg_cli_base64_decode(const char *s, size_t n, sg_cli_buf *out);

/* Appends v so that parsing it back as float32 gives the same bits: the text of printf's "%.9g" (9
 * significant digits are enough for any float32), made by a faster formatter; NaN and infinities, which
 * JSON cannot hold, become null. */
void sg_cli_json_put_float(sg_cli_buf *b, float v);

/* Appends one output row: {"path":"...","embedding":[v0,...]} or, when vec is NULL, "embedding":null, with
 * "path_base64":"..." between the two when the path is not valid UTF-8. No trailing newline. */
void sg_cli_json_put_row(sg_cli_buf *b, const char *path, const float *vec, int dim);

/* The same with another key than "path" ("text" for text queries) and, when extra is not NULL, extra's text
 * (",\"labels\":[...]") inserted after the name. */
void sg_cli_json_put_row_ex(sg_cli_buf *b, const char *key, const char *name, const float *vec, int dim,
                            const char *extra);

#endif
