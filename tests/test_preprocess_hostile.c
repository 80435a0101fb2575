/* tests/test_preprocess_hostile.c — every crafted bad file in tests/hostile fails cleanly, with a clear reason.
 *
 * tests/hostile/expect.txt lists each file with a substring its error message must contain (or OK for odd
 * but valid files, such as lying EXIF blocks, which must decode). Each file goes through
 * sg_preprocess_file and sg_decode_rgb with default options, EXIF on and off, both filters and fast decode;
 * under `make asan` this also proves there is no out-of-bounds access or leak. Every prefix of a few valid
 * images (truncation at each length step) must also fail or succeed without crashing.
 */
#include "preprocess/preprocess.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/tests/hostile/expect.txt", root);
    FILE *g = fopen(path, "r");
    CHECK(g != NULL, "open %s", path);
    if (!g) return CHECK_DONE();
    uint8_t *out = malloc(224 * 224 * 3);
    int n = 0;
    while (fgets(line, sizeof line, g)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        const char *name = line, *want = tab + 1;
        snprintf(path, sizeof path, "%s/tests/hostile/%s", root, name);
        int must_ok = strcmp(want, "OK") == 0, all_ok = 1;
        char err[512] = "", first_err[512] = "";
        for (int v = 0; v < 4; v++) { /* default; no EXIF; bicubic; fast decode */
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            o.exif_rotate = v != 1;
            if (v == 2) o.resample = SG_RESAMPLE_BICUBIC;
            if (v == 3) o.fast_decode = 1;
            err[0] = 0;
            clock_t t0 = clock();
            int rc = sg_preprocess_file(path, &o, out, NULL, err, sizeof err);
            double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
            if (v == 0) snprintf(first_err, sizeof first_err, "%s", err);
            int ok = must_ok ? rc == 0 : (rc == -1 && strstr(err, want) != NULL);
            ok = ok && secs < 5.0; /* refused from the header, not after allocating and decoding gigapixels */
            all_ok &= ok;
        }
        CHECK(all_ok, "hostile %s: %s (got: %s)", name, must_ok ? "decodes" : want, must_ok ? (first_err[0] ? first_err : "ok") : first_err);
        n++;
    }
    fclose(g);
    CHECK(n >= 20, "%d hostile files checked (need >= 20)", n);

    /* every prefix of valid files: no crash, a message whenever it fails */
    static const char *names[] = {"jpeg_progressive.jpg", "png_p_trns.png", "gif_interlaced.gif", "bmp_8.bmp", "psd_rgb.psd",
                                  "tga_rle.tga", "jpeg_cmyk.jpg", "png_exif_o6.png"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        snprintf(path, sizeof path, "%s/tests/images/%s", root, names[k]);
        size_t len = 0;
        uint8_t *data = sg_test_read_file(path, &len);
        int silent = 0, fails = 0, tries = 0;
        size_t step = len / 97 + 1; /* about 100 cut points per file */
        for (size_t cut = 0; data && cut < len; cut += step) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact-size copy so ASan sees any overread */
            memcpy(copy, data, cut);
            char err[512] = "";
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            int rc = sg_preprocess_memory(copy, cut, &o, out, NULL, err, sizeof err);
            fails += rc != 0;
            silent += rc != 0 && err[0] == 0;
            tries++;
            free(copy);
        }
        CHECK(data && silent == 0 && fails > 0, "%s cut at %d lengths: %d refused, each with a message", names[k], tries, fails);
        free(data);
    }
    free(out);
    return CHECK_DONE();
}
