/* tests/fuzz/webp_vp8_dump.c — our VP8 decoder's side of the lossy WebP differential (against Pillow 13).
 *
 * Reads file paths, one a line, on stdin; finds each file's "VP8 " chunk with a minimal RIFF walk (the real
 * container is decode_webp.c's), decodes it with sg_vp8_decode_rgb and prints "PATH OK W H FNV1A64" (the hash of
 * the RGB bytes) or "PATH ERR REASON". The chunk's bytes are the payload plus its pad byte when the size is odd
 * and the file has it (what libwebp's demuxer hands the decoder). Built by hand against a library build, e.g.
 *   cc -I. tests/fuzz/webp_vp8_dump.c build-cpu/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread -fopenmp \
 *      -o /tmp/webp_vp8_dump
 * (with SAN=1 BUILD=build-asan: build-asan/libsiglip2.a and -fsanitize=address,undefined).
 */
#include "preprocess/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The "VP8 " chunk of a RIFF WebP: *n bytes at the returned pointer, or NULL. */
static const uint8_t *find_vp8(const uint8_t *d, size_t len, size_t *n) {
    if (len < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WEBP", 4)) return NULL;
    size_t off = 12;
    while (len - off >= 8) {
        size_t sz = sg_le32(d + off + 4), avail = len - off - 8;
        if (!memcmp(d + off, "VP8 ", 4)) {
            size_t padded = sz + (sz & 1);
            *n = padded < avail ? padded : avail;
            return d + off + 8;
        }
        if (sz + (sz & 1) > avail) return NULL;
        off += 8 + sz + (sz & 1);
    }
    return NULL;
}

int main(void) {
    char path[4096], err[512];
    while (fgets(path, sizeof path, stdin)) {
        path[strcspn(path, "\n")] = 0;
        FILE *f = fopen(path, "rb");
        if (!f) {
            printf("%s ERR cannot open\n", path);
            continue;
        }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *d = malloc(n > 0 ? (size_t)n : 1); /* exactly the file: ASan sees any over-read */
        if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) return 2;
        fclose(f);
        size_t vn = 0;
        const uint8_t *v = find_vp8(d, (size_t)n, &vn);
        int w = 0, h = 0;
        if (!v) {
            printf("%s ERR no VP8 chunk\n", path);
        } else if (sg_vp8_info(v, vn, &w, &h, err, sizeof err)) {
            printf("%s ERR %s\n", path, err);
        } else {
            uint8_t *rgb = malloc((size_t)w * h * 3);
            if (!rgb) return 2;
            if (sg_vp8_decode_rgb(v, vn, rgb, (size_t)w * 3, err, sizeof err)) {
                printf("%s ERR %s\n", path, err);
            } else {
                unsigned long long hs = 1469598103934665603ull;
                for (size_t i = 0; i < (size_t)w * h * 3; i++) hs = (hs ^ rgb[i]) * 1099511628211ull;
                printf("%s OK %d %d %016llx\n", path, w, h, hs);
            }
            free(rgb);
        }
        fflush(stdout);
        free(d);
    }
    return 0;
}
