/* tests/fuzz/lab_file.h — what the hand-built lab drivers of tests/fuzz share (gif_dump.c, webp_vp8_dump.c,
 * webp_vp8l_dump.c, webp_vp8_bench.c): a whole file read into a buffer of exactly its size (so ASan sees any
 * read past its end), and a top-level chunk of a RIFF WebP found by tag, with the pad byte the codecs are given.
 * Header-only, static functions: each driver is one translation unit built by hand (see its top comment).
 */
#ifndef SG_LAB_FILE_H
#define SG_LAB_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes of path in a malloc'd buffer of exactly *n bytes (at least 1 allocated), or NULL when it cannot be
 * opened or read. */
static inline uint8_t *lab_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = len >= 0 ? malloc(len > 0 ? (size_t)len : 1) : NULL;
    if (d && fread(d, 1, (size_t)len, f) != (size_t)len) free(d), d = NULL;
    fclose(f);
    *n = d ? (size_t)len : 0;
    return d;
}

/* The payload of the first top-level chunk tagged tag in a RIFF WebP of len bytes: *n bytes at the returned
 * pointer (the declared size plus its pad byte when odd, cut to what the file holds), or NULL. */
static inline const uint8_t *lab_webp_chunk(const uint8_t *d, size_t len, const char *tag, size_t *n) {
    if (len < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WEBP", 4)) return NULL;
    size_t off = 12;
    while (len - off >= 8) {
        const uint8_t *s = d + off + 4;
        size_t sz = (size_t)s[0] | (size_t)s[1] << 8 | (size_t)s[2] << 16 | (size_t)s[3] << 24;
        size_t padded = sz + (sz & 1), avail = len - off - 8;
        if (!memcmp(d + off, tag, 4)) {
            *n = padded < avail ? padded : avail;
            return d + off + 8;
        }
        if (padded > avail) return NULL;
        off += 8 + padded;
    }
    return NULL;
}

#endif
