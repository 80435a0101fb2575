/* tests/fuzz/gif_dump.c — our decoder's side of scripts/gif_differential.py.
 *
 * Reads file paths, one a line, on stdin; decodes each with sg_decode_rgb (default options: the caps on) and
 * prints "PATH OK W H FNV1A64" (the hash of the RGB bytes, as the script hashes Pillow's convert("RGB")) or
 * "PATH ERR REASON"; an argument sets pillow_major (12: Pillow 12's rules). Built by hand against a library build, e.g.
 *   cc -I. tests/fuzz/gif_dump.c build/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/gif_dump
 * (with SAN=1 BUILD=build-asan: build-asan/libsiglip2.a and -fsanitize=address,undefined).
 */
#include "preprocess/preprocess.h"

#include "tests/fuzz/dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dump(const char *path, const uint8_t *d, size_t n, void *ctx) {
    const sg_preprocess_opts *o = ctx;
    char err[512];
    sg_rgb_image img = {0};
    if (sg_decode_rgb(d, n, o, &img, err, sizeof err)) {
        printf("%s ERR %s\n", path, err);
    } else {
        printf("%s OK %d %d %016llx\n", path, img.w, img.h,
               sg_dump_fnv(img.rgb, (size_t)img.w * img.h * 3, SG_DUMP_FNV_ORACLE));
        sg_rgb_image_free(&img);
    }
}

int main(int argc, char **argv) {
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    if (argc > 1) o.pillow_major = atoi(argv[1]); /* e.g. 12: Pillow 12's rules */
    sg_dump_each_file(dump, &o);
    return 0;
}
