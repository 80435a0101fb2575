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

#include "tests/fuzz/dump.h"
#include "tests/webp_chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dump(const char *path, const uint8_t *d, size_t n, void *ctx) {
    (void)ctx;
    char err[512];
    size_t vn = 0;
    const uint8_t *v = sg_test_webp_chunk(d, n, "VP8 ", 1, &vn);
    int w = 0, h = 0;
    if (!v) {
        printf("%s ERR no VP8 chunk\n", path);
    } else if (sg_vp8_info(v, vn, &w, &h, err, sizeof err)) {
        printf("%s ERR %s\n", path, err);
    } else {
        uint8_t *rgb = malloc((size_t)w * h * 3);
        if (!rgb) exit(2);
        if (sg_vp8_decode_rgb(v, vn, rgb, (size_t)w * 3, err, sizeof err))
            printf("%s ERR %s\n", path, err);
        else
            printf("%s OK %d %d %016llx\n", path, w, h, sg_dump_fnv(rgb, (size_t)w * h * 3, SG_DUMP_FNV_ORACLE));
        free(rgb);
    }
}

int main(void) {
    sg_dump_each_file(dump, NULL);
    return 0;
}
