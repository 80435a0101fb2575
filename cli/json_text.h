/* cli/json_text.h — the JSON text the command writes: escaped paths and round-tripping floats.
 *
 * Paths are bytes on Unix but JSON strings are Unicode, so a path is written as follows: valid UTF-8 passes
 * through unchanged; '"' and '\\' are backslash-escaped; control bytes below 0x20 become \u00XX (or \n, \t,
 * ...); each byte that is not part of a valid UTF-8 sequence (overlong forms, surrogates and code points
 * above U+10FFFF included) becomes U+FFFD, written as its UTF-8 bytes. Every output is therefore accepted by
 * strict parsers (Python's json.loads), and the escaping of a path is the canonical key --resume matches on.
 */
#ifndef SG_CLI_JSON_TEXT_H
#define SG_CLI_JSON_TEXT_H

#include "buf.h"

/* Appends s as a quoted JSON string (with the quotes) to b, by the rules above. */
void sg_cli_json_put_string(sg_cli_buf *b, const char *s);

/* Appends v so that parsing it back as float32 gives the same bits: the text of printf's "%.9g" (9
 * significant digits are enough for any float32), made by a faster formatter; NaN and infinities, which
 * JSON cannot hold, become null. */
void sg_cli_json_put_float(sg_cli_buf *b, float v);

/* Appends one output row: {"path":"...","embedding":[v0,...]} or, when vec is NULL, "embedding":null.
 * No trailing newline. */
void sg_cli_json_put_row(sg_cli_buf *b, const char *path, const float *vec, int dim);

/* The same with another key than "path" ("text" for text queries) and, when extra is not NULL, extra's text
 * (",\"labels\":[...]") inserted after the name. */
void sg_cli_json_put_row_ex(sg_cli_buf *b, const char *key, const char *name, const float *vec, int dim,
                            const char *extra);

#endif
