/* cli/shown_path.h — how a path appears in a message on stderr: every byte visible, every path recoverable.
 *
 * A file name may hold any byte but '/' and NUL: a carriage return (a CRLF list), an escape sequence that
 * would repaint the terminal, bytes that are not UTF-8, a character that draws nothing or looks like a space
 * (a no-break space or a BOM pasted in with the name). Messages show a path as C-style text: printable ASCII
 * and valid UTF-8 from U+00A0 up pass through; '\' becomes \\; newline, carriage return and tab become
 * \n, \r, \t; every other byte below 0x20, 0x7f, every byte that is not part of valid UTF-8, and the UTF-8
 * bytes of C1 controls (U+0080..U+009F) and of the characters that draw nothing or look like a plain space
 * (non-ASCII spaces, line and paragraph separators, Unicode's default-ignorable characters such as U+00AD,
 * U+200B..U+200F, U+202A..U+202E, U+2060, U+2066..U+2069, U+FEFF, and U+FFF9..U+FFFB: the table in
 * shown_path.c) become \xNN. The mapping is reversible (printf '%b' or Python's codecs.escape_decode give the
 * bytes back), so "siglip2-embed: PATH: reason" names exactly one file, and two names that differ only in
 * such a character look different.
 */
#ifndef SG_CLI_SHOWN_PATH_H
#define SG_CLI_SHOWN_PATH_H

#include <stddef.h>
#include "buf.h"

/* Appends path, escaped by the rules above, to b. */
void sg_cli_shown_path_put(sg_cli_buf *b, const char *path);

/* path escaped into out (at most outlen - 1 bytes, cut with "..." when longer); returns out, for printf. */
const char *sg_cli_shown_path(const char *path, char *out, size_t outlen);

#endif
