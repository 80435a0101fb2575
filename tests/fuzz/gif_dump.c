/* tests/fuzz/gif_dump.c — our decoder's side of the differential scripts (scripts/gif_differential.py and the others
 * built on scripts/pillow_oracle.py).
 *
 * Reads file paths, one a line, on stdin; decodes each with sg_decode_rgb (default options: the caps on) and
 * prints "PATH OK W H FNV1A64" (the hash of the RGB bytes, as the script hashes Pillow's convert("RGB")) or
 * "PATH ERR REASON"; a first argument sets pillow_major (12: Pillow 12's rules). A second argument "224" runs the
 * command's own path instead (sg_preprocess_memory: decode, orient, bilinear resize to 224 x 224; a JPEG decoded
 * straight into the resize), printing the hash of those bytes, against the oracle's resize((224, 224), BILINEAR).
 * Built by hand against a library build, e.g.
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

static void dump_resized(const char *path, const uint8_t *d, size_t n, void *ctx) {
    const sg_preprocess_opts *o = ctx;
    char err[512];
    uint8_t *out = malloc((size_t)o->out_size * o->out_size * 3);
    if (out && sg_preprocess_memory(d, n, o, out, NULL, err, sizeof err) == 0)
        printf("%s OK %d %d %016llx\n", path, o->out_size, o->out_size,
               sg_dump_fnv(out, (size_t)o->out_size * o->out_size * 3, SG_DUMP_FNV_ORACLE));
    else
        printf("%s ERR %s\n", path, out ? err : "out of memory");
    free(out);
}

int main(int argc, char **argv) {
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    if (argc > 1) o.pillow_major = atoi(argv[1]); /* e.g. 12: Pillow 12's rules */
    if (argc > 2) o.out_size = atoi(argv[2]);    /* the command's path: decode, orient, resize */
    sg_dump_each_file(argc > 2 ? dump_resized : dump, &o);
    return 0;
}
