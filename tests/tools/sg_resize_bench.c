/* tests/tools/sg_resize_bench.c — times the resize alone (preprocess/resize.c) on one thread, by size.
 *
 *   build/tools/sg_resize_bench [--reps N] [--out S] [--filter 2|3] [--mode stream|whole] [WxH ...]
 *
 * For each source size (default: the photo sizes 4032x3024 3000x2000 1920x1080 640x480) a noise image is resized to
 * S x S (default 224, bilinear) N times (default 21); the tool prints the median, min and max of this thread's CPU
 * time per resize in ms. --mode stream (default) feeds the source 16 rows at a time through sg_resize_stream_*
 * from one 16-row buffer that stays in cache, as the JPEG decoder hands rows to the resize in siglip2-embed: this
 * times the arithmetic (transpose, horizontal and vertical kernels), not the DRAM read of a decoded image. --mode
 * whole calls sg_resize_rgb on the whole image (the path of EXIF-rotated and vertical-first images). It also prints
 * an FNV-1a hash of the last output, so two builds can be checked to give the same bytes on the same input.
 */
#include "preprocess/internal.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { return sg_test_clock_s(CLOCK_THREAD_CPUTIME_ID); }

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--reps N] [--out S] [--filter 2|3] [--mode stream|whole] [WxH ...]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    int reps = 21, out = 224, filter = SG_RESAMPLE_BILINEAR, stream = 1, first = 1;
    while (first < argc && strncmp(argv[first], "--", 2) == 0) {
        if (first + 1 >= argc) return usage(argv[0]);
        const char *opt = argv[first], *val = argv[first + 1];
        if (!strcmp(opt, "--reps")) reps = atoi(val);
        else if (!strcmp(opt, "--out")) out = atoi(val);
        else if (!strcmp(opt, "--filter")) filter = atoi(val);
        else if (!strcmp(opt, "--mode") && (!strcmp(val, "stream") || !strcmp(val, "whole"))) stream = !strcmp(val, "stream");
        else return usage(argv[0]);
        first += 2;
    }
    if (reps < 1 || reps > 1000 || out < 1 || out > 4096 || (filter != SG_RESAMPLE_BILINEAR && filter != SG_RESAMPLE_BICUBIC))
        return usage(argv[0]);
    static const char *defaults[] = {"4032x3024", "3000x2000", "1920x1080", "640x480"};
    int nsizes = first < argc ? argc - first : 4;
    double *t = sg_test_xmalloc(sizeof(double) * (size_t)reps);
    uint8_t *dst = sg_test_xmalloc((size_t)out * out * 3);
    printf("resize to %dx%d %s, %s, median of %d (min, max), thread CPU ms\n", out, out,
           filter == SG_RESAMPLE_BICUBIC ? "bicubic" : "bilinear", stream ? "streamed 16 rows at a time" : "whole image",
           reps);
    for (int i = 0; i < nsizes; i++) {
        const char *arg = first < argc ? argv[first + i] : defaults[i];
        int sw = 0, sh = 0;
        if (sscanf(arg, "%dx%d", &sw, &sh) != 2 || sw < 1 || sh < 1 || sw > 20000 || sh > 20000) return usage(argv[0]);
        size_t rows = stream ? (sh < 16 ? (size_t)sh : 16) : (size_t)sh; /* stream: one 16-row block, reused */
        uint8_t *src = sg_test_xmalloc(rows * sw * 3);
        uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)sw * 31 ^ (uint64_t)sh;
        for (size_t k = 0; k < rows * sw * 3; k++) src[k] = (uint8_t)(sg_test_splitmix64(&s) >> 56);
        int ok = 1;
        for (int r = 0; r < reps && ok; r++) {
            double t0 = now();
            if (stream) {
                sg_resize_stream *rs = sg_resize_stream_begin(sw, sh, dst, out, out, (sg_resample)filter, 0);
                if (!rs) { ok = 0; break; }
                for (int y = 0; y < sh; y += 16) {
                    int n = sh - y < 16 ? sh - y : 16;
                    sg_resize_stream_rows(rs, src, (size_t)sw * 3, y, n);
                }
                sg_resize_stream_end(rs);
                sg_resize_stream_free(rs);
            } else if (sg_resize_rgb(src, sw, sh, dst, out, out, (sg_resample)filter) != 0) {
                ok = 0;
            }
            t[r] = now() - t0;
        }
        if (!ok) {
            printf("%-10s  cannot %s (vertical-first size pair, or out of memory)\n", arg, stream ? "stream" : "resize");
            free(src);
            continue;
        }
        sg_test_sort_doubles(t, (size_t)reps);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < (size_t)out * out * 3; k++) h = (h ^ dst[k]) * 0x100000001b3ull;
        printf("%-10s %8.3f ms  (%.3f, %.3f)  out %016llx\n", arg, 1e3 * t[reps / 2], 1e3 * t[0], 1e3 * t[reps - 1],
               (unsigned long long)h);
        free(src);
    }
    free(t);
    free(dst);
    return 0;
}
