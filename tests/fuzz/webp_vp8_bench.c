/* tests/fuzz/webp_vp8_bench.c — a lab timer for the VP8 (lossy WebP) decoder; not product code, not a test.
 *
 * Usage: webp_vp8_bench REPS FILE...  Decodes each file's "VP8 " chunk REPS times with sg_vp8_decode_rgb and
 * prints the median and minimum milliseconds per decode, the megapixels per second at the median, and the
 * FNV-1a 64 hash of the RGB (to see that a faster build gives the same bytes). Built by hand like
 * webp_vp8_dump.c:
 *   cc -O2 -I. tests/fuzz/webp_vp8_bench.c build-cpu/libsiglip2.a -l:libturbojpeg.a -lcjson -lm -lpthread \
 *      -fopenmp -o /tmp/webp_vp8_bench
 */
#include "preprocess/internal.h"

#include "tests/fuzz/dump.h"
#include "tests/webp_chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: %s REPS FILE...\n", argv[0]), 2;
    int reps = atoi(argv[1]);
    if (reps < 1) reps = 1;
    double *t = malloc(sizeof(double) * (size_t)reps), total_med = 0;
    char err[512];
    for (int a = 2; a < argc; a++) {
        size_t n, vn = 0;
        uint8_t *d = sg_test_read_file(argv[a], &n);
        if (!d) return fprintf(stderr, "%s: cannot open\n", argv[a]), 2;
        const uint8_t *v = sg_test_webp_chunk(d, n, "VP8 ", 1, &vn);
        int w, h;
        if (!v || sg_vp8_info(v, vn, &w, &h, err, sizeof err)) return fprintf(stderr, "%s: no VP8\n", argv[a]), 2;
        uint8_t *rgb = malloc((size_t)w * h * 3);
        for (int r = 0; r < reps; r++) {
            double t0 = 1e3 * sg_test_clock_s(CLOCK_MONOTONIC);
            if (sg_vp8_decode_rgb(v, vn, rgb, (size_t)w * 3, err, sizeof err))
                return fprintf(stderr, "%s: %s\n", argv[a], err), 2;
            t[r] = 1e3 * sg_test_clock_s(CLOCK_MONOTONIC) - t0;
        }
        unsigned long long hs = sg_dump_fnv(rgb, (size_t)w * h * 3, SG_DUMP_FNV_ORACLE);
        sg_test_sort_doubles(t, (size_t)reps);
        double med = t[reps / 2];
        total_med += med;
        printf("%-40s %5dx%-5d median %8.2f ms  min %8.2f ms  %6.1f MP/s  %016llx\n", argv[a], w, h, med, t[0],
               (double)w * h / 1e3 / med, hs);
        free(rgb);
        free(d);
    }
    printf("sum of medians %.2f ms\n", total_med);
    free(t);
    return 0;
}
