/* tests/fuzz/webp_vp8l_dump.c — our VP8L decoder's side of the lossless WebP differential (lab code).
 *
 * Reads WebP file paths, one a line, on stdin; finds the first VP8L chunk (or, failing that, an ALPH chunk with
 * compression 1 and the VP8 frame's size) by walking the RIFF chunks itself, decodes it with sg_vp8l_decode
 * (sg_vp8l_decode_alpha) and prints
 *   "PATH OK W H RGBA_FNV1A64 RGB_FNV1A64"  (the pixels as R,G,B,A bytes, and as R,G,B bytes)
 *   "PATH ALPHA W H FNV1A64"                (the alpha plane, before any unfiltering)
 *   "PATH ERR REASON" / "PATH SKIP REASON"  (no chunk this harness reads).
 * Built by hand against a library build, e.g.
 *   cc -O2 -I. tests/fuzz/webp_vp8l_dump.c build-cpu/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/vp8l_dump
 * (with SAN=1 BUILD=build-asan: build-asan/libsiglip2.a and -fsanitize=address,undefined).
 */
#include "preprocess/internal.h"

#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long fnv(const uint8_t *p, size_t n, unsigned long long h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static void dump(const char *path, const uint8_t *d, size_t n) {
    char err[512];
    if (n < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WEBP", 4)) {
        printf("%s SKIP not RIFF WEBP\n", path);
        return;
    }
    const uint8_t *alph = NULL, *vp8 = NULL;
    size_t alen = 0, vlen = 0;
    for (size_t off = 12; off + 8 <= n;) {
        uint32_t sz = le32(d + off + 4);
        /* libwebp's VP8L decoder gets the frame to its padded end (the demuxer sizes frames padded); ALPH is unpadded */
        size_t avail = n - off - 8, padded = (size_t)sz + (sz & 1);
        size_t len = !memcmp(d + off, "VP8L", 4) ? (padded < avail ? padded : avail) : (sz < avail ? sz : avail);
        const uint8_t *p = d + off + 8;
        if (!memcmp(d + off, "VP8L", 4)) {
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
                printf("%s OK %d %d %016llx %016llx\n", path, w, h, fnv(rgba, (size_t)w * h * 4, 0xcbf29ce484222325ull),
                       fnv(rgb, (size_t)w * h * 3, 0xcbf29ce484222325ull));
            }
            free(argb), free(rgba), free(rgb);
            return;
        }
        if (!memcmp(d + off, "ALPH", 4) && !alph) alph = p, alen = len;
        if (!memcmp(d + off, "VP8 ", 4) && !vp8) vp8 = p, vlen = len;
        off += 8 + (size_t)sz + (sz & 1);
        if (sz > n) break;
    }
    if (alph && vp8 && vlen >= 10 && alen >= 1 && (alph[0] & 3) == 1) {
        int w = (vp8[6] | vp8[7] << 8) & 0x3fff, h = (vp8[8] | vp8[9] << 8) & 0x3fff;
        uint8_t *a = malloc((size_t)w * h + 1);
        if (sg_vp8l_decode_alpha(alph + 1, alen - 1, w, h, a, err, sizeof err))
            printf("%s ERR %s\n", path, err);
        else
            printf("%s ALPHA %d %d %016llx\n", path, w, h, fnv(a, (size_t)w * h, 0xcbf29ce484222325ull));
        free(a);
        return;
    }
    printf("%s SKIP no VP8L or lossless ALPH chunk\n", path);
}

int main(void) {
    char path[4096];
    while (fgets(path, sizeof path, stdin)) {
        path[strcspn(path, "\n")] = 0;
        size_t n;
        uint8_t *d = sg_test_read_file(path, &n); /* exactly the file: ASan sees any over-read */
        if (!d) {
            printf("%s ERR cannot open\n", path);
            continue;
        }
        dump(path, d, n);
        free(d);
        fflush(stdout);
    }
    return 0;
}
