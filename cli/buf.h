/* cli/buf.h — a growable byte buffer, the one string builder the command's writers and parsers share.
 *
 * Growth failures are environment errors (out of memory) and fail fast with file:line, like the rest of the
 * command's invariant checks, so callers never have to thread an error through every append.
 */
#ifndef SG_CLI_BUF_H
#define SG_CLI_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct sg_cli_buf {
    char *p;       /* NUL-terminated after every append (p may be NULL while len == 0) */
    size_t len;
    size_t cap;
} sg_cli_buf;

/* Makes room for `extra` more bytes plus the terminating NUL. */
void sg_cli_buf_reserve(sg_cli_buf *b, size_t extra);
/* Appends n bytes of s. */
void sg_cli_buf_append(sg_cli_buf *b, const char *s, size_t n);
/* Appends a NUL-terminated string. */
void sg_cli_buf_puts(sg_cli_buf *b, const char *s);
/* Appends one byte. */
void sg_cli_buf_putc(sg_cli_buf *b, char c);
/* Empties the buffer, keeping its memory. */
void sg_cli_buf_clear(sg_cli_buf *b);
/* Releases the memory; the buffer is empty and reusable afterwards. */
void sg_cli_buf_free(sg_cli_buf *b);

/* Fails fast on an environment error (out of memory, broken invariant) with file:line. */
#define SG_CLI_DIE(...) sg_cli_die(__FILE__, __LINE__, __VA_ARGS__)
void sg_cli_die(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));

/* malloc/calloc/strdup that fail fast on exhaustion. */
void *sg_cli_xmalloc(size_t n);
void *sg_cli_xcalloc(size_t n, size_t size);
char *sg_cli_xstrdup(const char *s);

/* Bytes of a UTF-8 BOM at s (n bytes): 3, or 0. A list saved by Windows Notepad starts with one, which is not part of
 * its first entry (--files-from, --texts-from, --labels-from drop it). */
static inline size_t sg_cli_bom_len(const char *s, size_t n) {
    return n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

#endif
