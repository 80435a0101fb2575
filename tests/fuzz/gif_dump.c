/* tests/fuzz/gif_dump.c — our decoder's side of scripts/gif_differential.py.
 *
 * Reads file paths, one a line, on stdin; decodes each with sg_decode_rgb (default options: the caps on) and
 * prints "PATH OK W H FNV1A64" (the hash of the RGB bytes, as the script hashes Pillow's convert("RGB")) or
 * "PATH ERR REASON"; an argument sets pillow_major (12: Pillow 12's rules). Built by hand against a library build, e.g.
 *   cc -I. tests/fuzz/gif_dump.c build/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/gif_dump
 * (with SAN=1 BUILD=build-asan: build-asan/libsiglip2.a and -fsanitize=address,undefined).
 */
#include "preprocess/preprocess.h"

#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    char path[4096], err[512];
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    if (argc > 1) o.pillow_major = atoi(argv[1]); /* e.g. 12: Pillow 12's rules */
    while (fgets(path, sizeof path, stdin)) {
        path[strcspn(path, "\n")] = 0;
        size_t n;
        uint8_t *d = sg_test_read_file(path, &n); /* exactly the file: ASan sees any over-read */
        if (!d) {
            printf("%s ERR cannot open\n", path);
            continue;
        }
        sg_rgb_image img = {0};
        if (sg_decode_rgb(d, n, &o, &img, err, sizeof err)) {
            printf("%s ERR %s\n", path, err);
        } else {
            unsigned long long h = 1469598103934665603ull;
            for (size_t i = 0; i < (size_t)img.w * img.h * 3; i++) h = (h ^ img.rgb[i]) * 1099511628211ull;
            printf("%s OK %d %d %016llx\n", path, img.w, img.h, h);
            sg_rgb_image_free(&img);
        }
        free(d);
        fflush(stdout);
    }
    return 0;
}
