/* tests/tools/sg_pre_bench.c — times preprocess/ per image on one thread: decode, resize, total, fast decode.
 *
 *   build/tools/sg_pre_bench [--reps N] [--size S] FILE...
 *
 * Each file is read into memory once (file I/O is not timed, as in the Pillow side of
 * scripts/bench_preprocess.py); then, N times, three paths are timed: exact, whole image (sg_decode_rgb, then
 * sg_resize_rgb to S x S: decode and resize apart); exact, streamed (sg_preprocess_memory, which decodes a JPEG
 * straight into the resize, 16 rows at a time: what siglip2-embed runs); and --fast-decode (sg_preprocess_memory
 * with fast_decode). Per image the median over the N reps is kept; the tool prints the mean over images of those
 * medians in ms, checks the streamed output is byte-identical to the whole-image one (it must be), and the pixel
 * difference of fast decode from the exact output (max and mean |delta| over all values). Times are this
 * thread's CPU time, so that other processes on a shared machine do not inflate them.
 */
#include "preprocess/preprocess.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time: the build machine is shared, wall time is not ours */
static double now(void) { return sg_test_clock_s(CLOCK_THREAD_CPUTIME_ID); }

static double median(double *v, int n) {
    sg_test_sort_doubles(v, (size_t)n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    int reps = 3, size = 224, first = 1;
    while (first < argc && strncmp(argv[first], "--", 2) == 0) {
        if (!strcmp(argv[first], "--reps") && first + 1 < argc) reps = atoi(argv[first + 1]), first += 2;
        else if (!strcmp(argv[first], "--size") && first + 1 < argc) size = atoi(argv[first + 1]), first += 2;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--size S] FILE...\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 100 || size < 1 || first >= argc) {
        fprintf(stderr, "usage: %s [--reps N] [--size S] FILE...\n", argv[0]);
        return 2;
    }
    size_t npx = (size_t)size * size * 3;
    uint8_t *exact = malloc(npx), *fast = malloc(npx), *streamed = malloc(npx);
    double *td = malloc(sizeof(double) * reps), *tr = malloc(sizeof(double) * reps), *tf = malloc(sizeof(double) * reps);
    double *ts = malloc(sizeof(double) * reps);
    double sum_d = 0, sum_r = 0, sum_f = 0, sum_s = 0, sum_abs = 0;
    long n_ok = 0, n_bad = 0, n_differ = 0;
    int max_abs = 0;
    for (int i = first; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { n_bad++; continue; }
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *data = malloc(len > 0 ? (size_t)len : 1);
        size_t got = fread(data, 1, (size_t)len, f);
        fclose(f);
        sg_preprocess_opts o;
        sg_preprocess_opts_default(&o);
        o.out_size = size;
        char err[512];
        int ok = 1;
        for (int r = 0; r < reps && ok; r++) {
            sg_rgb_image img;
            double t0 = now();
            if (sg_decode_rgb(data, got, &o, &img, err, sizeof err)) { ok = 0; break; }
            double t1 = now();
            sg_resize_rgb(img.rgb, img.w, img.h, exact, size, size, o.resample);
            double t2 = now();
            sg_rgb_image_free(&img);
            double t4 = now();
            if (sg_preprocess_memory(data, got, &o, streamed, NULL, err, sizeof err)) { ok = 0; break; }
            ts[r] = now() - t4;
            sg_preprocess_opts of = o;
            of.fast_decode = 1;
            double t3 = now();
            if (sg_preprocess_memory(data, got, &of, fast, NULL, err, sizeof err)) { ok = 0; break; }
            tf[r] = now() - t3, td[r] = t1 - t0, tr[r] = t2 - t1;
        }
        free(data);
        if (!ok) {
            fprintf(stderr, "%s: %s\n", argv[i], err);
            n_bad++;
            continue;
        }
        sum_d += median(td, reps), sum_r += median(tr, reps), sum_f += median(tf, reps), sum_s += median(ts, reps);
        n_differ += memcmp(exact, streamed, npx) != 0;
        for (size_t k = 0; k < npx; k++) {
            int d = abs((int)exact[k] - (int)fast[k]);
            sum_abs += d;
            if (d > max_abs) max_abs = d;
        }
        n_ok++;
    }
    if (n_ok == 0) {
        fprintf(stderr, "no image decoded\n");
        return 1;
    }
    printf("images %ld (failed %ld), reps %d, median per image, mean over images, one thread\n", n_ok, n_bad, reps);
    printf("ours exact: decode %.2f ms  resize %.2f ms  total %.2f ms  (whole image, then resize)\n", 1e3 * sum_d / n_ok, 1e3 * sum_r / n_ok,
           1e3 * (sum_d + sum_r) / n_ok);
    printf("ours streamed: total %.2f ms  (decode straight into the resize; %ld of %ld outputs differ from exact)\n",
           1e3 * sum_s / n_ok, n_differ, n_ok);
    printf("ours fast-decode: total %.2f ms  |delta| vs exact: max %d mean %.3f\n", 1e3 * sum_f / n_ok, max_abs,
           sum_abs / ((double)n_ok * npx));
    free(exact), free(fast), free(streamed), free(td), free(tr), free(tf), free(ts);
    return n_differ ? 1 : 0;
}
