/* tests/fuzz/webp_vp8l_dump.c — our VP8L decoder's side of the lossless WebP differential (lab code).
 *
 * Reads WebP file paths, one a line, on stdin; finds the first VP8L chunk (or, failing that, an ALPH chunk with
 * compression 1 and the VP8 frame's size; tests/webp_chunk.h), decodes it with sg_vp8l_decode
 * (sg_vp8l_decode_alpha) and prints
 *   "PATH OK W H RGBA_FNV1A64 RGB_FNV1A64"  (the pixels as R,G,B,A bytes, and as R,G,B bytes)
 *   "PATH ALPHA W H FNV1A64"                (the alpha plane, before any unfiltering)
 *   "PATH ERR REASON" / "PATH SKIP REASON"  (no chunk this harness reads).
 * Built by hand against a library build, e.g.
 *   cc -O2 -I. tests/fuzz/webp_vp8l_dump.c build-cpu/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/vp8l_dump
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
    if (n < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WEBP", 4)) {
        printf("%s SKIP not RIFF WEBP\n", path);
        return;
    }
    size_t len = 0, alen = 0, vlen = 0;
    /* libwebp's VP8L decoder gets the frame to its padded end (the demuxer sizes frames padded); ALPH is unpadded */
    const uint8_t *p = sg_test_webp_chunk(d, n, "VP8L", 1, &len);
    if (p) {
        int w, h;
        if (sg_vp8l_info(p, len, &w, &h, err, sizeof err)) {
            printf("%s ERR %s\n", path, err);
            return;
        }
        uint32_t *argb = malloc((size_t)w * h * 4);
        uint8_t *rgba = malloc((size_t)w * h * 4), *rgb = malloc((size_t)w * h * 3);
        if (sg_vp8l_decode(p, len, argb, err, sizeof err)) {
            printf("%s ERR %s\n", path, err);
        } else {
            for (size_t i = 0; i < (size_t)w * h; i++) {
                uint32_t c = argb[i];
                rgba[4 * i] = rgb[3 * i] = (uint8_t)(c >> 16);
                rgba[4 * i + 1] = rgb[3 * i + 1] = (uint8_t)(c >> 8);
                rgba[4 * i + 2] = rgb[3 * i + 2] = (uint8_t)c;
                rgba[4 * i + 3] = (uint8_t)(c >> 24);
            }
            printf("%s OK %d %d %016llx %016llx\n", path, w, h,
                   sg_dump_fnv(rgba, (size_t)w * h * 4, SG_DUMP_FNV_BASIS),
                   sg_dump_fnv(rgb, (size_t)w * h * 3, SG_DUMP_FNV_BASIS));
        }
        free(argb), free(rgba), free(rgb);
        return;
    }
    const uint8_t *alph = sg_test_webp_chunk(d, n, "ALPH", 0, &alen);
    const uint8_t *vp8 = sg_test_webp_chunk(d, n, "VP8 ", 0, &vlen);
    if (alph && vp8 && vlen >= 10 && alen >= 1 && (alph[0] & 3) == 1) {
        int w = (vp8[6] | vp8[7] << 8) & 0x3fff, h = (vp8[8] | vp8[9] << 8) & 0x3fff;
        uint8_t *a = malloc((size_t)w * h + 1);
        if (sg_vp8l_decode_alpha(alph + 1, alen - 1, w, h, a, err, sizeof err))
            printf("%s ERR %s\n", path, err);
        else
            printf("%s ALPHA %d %d %016llx\n", path, w, h, sg_dump_fnv(a, (size_t)w * h, SG_DUMP_FNV_BASIS));
        free(a);
        return;
    }
    printf("%s SKIP no VP8L or lossless ALPH chunk\n", path);
}

int main(void) {
    sg_dump_each_file(dump, NULL);
    return 0;
}
