/* cli/buf.c — growable byte buffer and the fail-fast allocation helpers (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sg_cli_die(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "siglip2-embed: internal error at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void *sg_cli_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) SG_CLI_DIE("out of memory allocating %zu bytes", n);
    return p;
}

void *sg_cli_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) SG_CLI_DIE("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

char *sg_cli_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = sg_cli_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void sg_cli_buf_reserve(sg_cli_buf *b, size_t extra) {
    if (extra > (size_t)-1 / 2 - b->len) SG_CLI_DIE("buffer size overflow");
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) SG_CLI_DIE("out of memory growing a buffer to %zu bytes", cap);
    b->p = p;
    b->cap = cap;
}

void sg_cli_buf_append(sg_cli_buf *b, const char *s, size_t n) {
    sg_cli_buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sg_cli_buf_puts(sg_cli_buf *b, const char *s) { sg_cli_buf_append(b, s, strlen(s)); }

void sg_cli_buf_putc(sg_cli_buf *b, char c) { sg_cli_buf_append(b, &c, 1); }

void sg_cli_buf_clear(sg_cli_buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void sg_cli_buf_free(sg_cli_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
