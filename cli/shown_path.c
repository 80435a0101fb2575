/* cli/shown_path.c — escaping paths for messages (rules in shown_path.h). */
#include "shown_path.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4) that is a printable character (not a C0/C1 control, not
 * DEL), or 0. */
static int printable_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return c >= 0x20 && c != 0x7f;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return (s[1] & 0xC0) == 0x80 && !(c == 0xC2 && s[1] < 0xA0) ? 2 : 0; /* C1: C2 80..C2 9F */
    if (c < 0xF0) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        unsigned cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) ? 3 : 0;
    }
    if (c < 0xF5) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        unsigned cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
        return cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

void sg_cli_shown_path_put(sg_cli_buf *b, const char *path) {
    const unsigned char *s = (const unsigned char *)path;
    while (*s) {
        if (*s == '\\') {
            sg_cli_buf_puts(b, "\\\\");
            s++;
            continue;
        }
        int n = printable_len(s); /* reads at most up to the NUL: a NUL fails every continuation test */
        if (n) {
            sg_cli_buf_append(b, (const char *)s, (size_t)n);
            s += n;
            continue;
        }
        char e[8];
        if (*s == '\n' || *s == '\r' || *s == '\t') snprintf(e, sizeof e, "\\%c", *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't');
        else snprintf(e, sizeof e, "\\x%02x", *s);
        sg_cli_buf_puts(b, e);
        s++;
    }
    if (!b->p) sg_cli_buf_append(b, "", 0);
}

const char *sg_cli_shown_path(const char *path, char *out, size_t outlen) {
    sg_cli_buf b = {0};
    sg_cli_shown_path_put(&b, path);
    if (b.len < outlen) {
        memcpy(out, b.p, b.len + 1);
    } else if (outlen >= 4) {
        memcpy(out, b.p, outlen - 4);
        memcpy(out + outlen - 4, "...", 4);
    } else if (outlen) {
        out[0] = '\0';
    }
    sg_cli_buf_free(&b);
    return out;
}
