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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: %s REPS FILE...\n", argv[0]), 2;
    int reps = atoi(argv[1]);
    if (reps < 1) reps = 1;
    double *t = malloc(sizeof(double) * (size_t)reps), total_med = 0;
    char err[512];
    for (int a = 2; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) return fprintf(stderr, "%s: cannot open\n", argv[a]), 2;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *d = malloc((size_t)n);
        if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) return 2;
        fclose(f);
        size_t vn = 0;
        const uint8_t *v = find_vp8(d, (size_t)n, &vn);
        int w, h;
        if (!v || sg_vp8_info(v, vn, &w, &h, err, sizeof err)) return fprintf(stderr, "%s: no VP8\n", argv[a]), 2;
        uint8_t *rgb = malloc((size_t)w * h * 3);
        for (int r = 0; r < reps; r++) {
            double t0 = now_ms();
            if (sg_vp8_decode_rgb(v, vn, rgb, (size_t)w * 3, err, sizeof err))
                return fprintf(stderr, "%s: %s\n", argv[a], err), 2;
            t[r] = now_ms() - t0;
        }
        unsigned long long hs = 1469598103934665603ull;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) hs = (hs ^ rgb[i]) * 1099511628211ull;
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
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
