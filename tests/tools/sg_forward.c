/* tests/tools/sg_forward.c — run the fp32 CPU encoder on a pixels file: outputs, timing, comparison.
 *
 *   sg_forward MODEL PIXELS.f32 [--n N] [--threads T] [--repeat R] [--pooled OUT.f32] [--last OUT.f32]
 *              [--ref POOLED.f32] [--ref-last LAST.f32]
 *
 * MODEL is anything sg_model_load accepts; PIXELS.f32 holds float32 [n, 3, S, S] (HF pixel_values, as
 * scripts/make_fixtures.py writes them). Weights are packed once (timed apart), then the batch of N images
 * (default: all in the file) runs R times (default 1); the tool prints each run's wall and CPU seconds, the
 * medians, the seconds per image and the achieved GFLOP/s (per wall second and per CPU second) (FLOPs counted from the config: every GEMM and both attention
 * products, 2 per multiply-add). --ref/--ref-last compare the outputs with HF's (max |Δ| and worst cosine
 * over images). Exit status 0 on success, 1 on a usage or input error, 2 when a comparison exceeds
 * max |Δ| 1e-4 or cos < 0.99999. Used by scripts/bench_cpu.py for the timing next to HF.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/cpu/cpu_packed.h"
#include "tests/check.h"
#include "weights/model_load.h"

static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }

static int write_floats(const char *path, const float *p, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, sizeof(float), n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* FLOPs of one image's forward pass (2 per multiply-add). */
static double flops_per_image(const sg_config *c) {
    double D = c->hidden_size, F = c->intermediate_size, L = c->num_layers, T = sg_config_tokens(c);
    double K = sg_config_patch_dim(c);
    double layer = 2 * T * D * 3 * D + 2 * 2 * T * T * D + 2 * T * D * D + 2 * 2 * T * D * F;
    double head = 2 * T * D * 2 * D + 2 * 2 * T * D + 2 * D * D + 2 * 2 * D * F;
    return 2 * T * K * D + L * layer + head;
}

/* Worst max|a-b| and cosine over n vectors of d; returns 1 when within the parity gate. */
static int compare(const char *what, const float *a, const float *b, int n, size_t d) {
    double wa = 0, wc = 1;
    for (int i = 0; i < n; i++) {
        double mx = 0, dot = 0, na = 0, nb = 0;
        for (size_t j = 0; j < d; j++) {
            double x = a[(size_t)i * d + j], y = b[(size_t)i * d + j];
            if (!(fabs(x - y) <= mx)) mx = fabs(x - y);
            dot += x * y; na += x * x; nb += y * y;
        }
        double cs = dot / sqrt(na * nb);
        if (!(mx <= wa)) wa = mx;
        if (!(cs >= wc)) wc = cs;
    }
    printf("%s vs reference: %d images, worst max|d| %.3g, worst cos %.9f\n", what, n, wa, wc);
    return wa <= 1e-4 && wc >= 0.99999;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL PIXELS.f32 [--n N] [--threads T] [--repeat R] [--pooled OUT] [--last OUT] "
                "[--ref POOLED] [--ref-last LAST]\n", argv[0]);
        return 1;
    }
    int n = 0, threads = 0, repeat = 1;
    const char *out_pool = NULL, *out_last = NULL, *ref_pool = NULL, *ref_last = NULL;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "sg_forward: %s needs a value\n", a); return 1; }
        if (!strcmp(a, "--n")) n = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--repeat")) repeat = atoi(v);
        else if (!strcmp(a, "--pooled")) out_pool = v;
        else if (!strcmp(a, "--last")) out_last = v;
        else if (!strcmp(a, "--ref")) ref_pool = v;
        else if (!strcmp(a, "--ref-last")) ref_last = v;
        else { fprintf(stderr, "sg_forward: unknown option %s\n", a); return 1; }
        i++;
    }
    if (repeat < 1 || threads < 0 || n < 0) { fprintf(stderr, "sg_forward: bad --repeat/--threads/--n\n"); return 1; }
    char err[2048];
    double t0 = now();
    sg_model *m = sg_model_load(argv[1], err, sizeof err);
    if (!m) { fprintf(stderr, "sg_forward: %s\n", err); return 1; }
    const sg_config *c = &m->cfg;
    const size_t img = (size_t)3 * c->image_size * c->image_size, D = (size_t)c->hidden_size;
    const size_t TD = (size_t)sg_config_tokens(c) * D;
    size_t npx = 0;
    float *px = sg_test_read_floats(argv[2], &npx);
    if (!px || npx % img != 0 || npx == 0) {
        fprintf(stderr, "sg_forward: %s: expected float32 [n, 3, %d, %d], got %zu floats\n", argv[2],
                c->image_size, c->image_size, npx);
        return 1;
    }
    if (n == 0 || (size_t)n > npx / img) n = (int)(npx / img);
    double t1 = now();
    sg_cpu_pack *pk = sg_cpu_pack_model(m, threads, err, sizeof err);
    if (!pk) { fprintf(stderr, "sg_forward: %s\n", err); return 1; }
    double t2 = now();
    printf("model %s: D %d, F %d, L %d, T %d; load %.3f s, pack %.3f s; %d images, %d threads\n", argv[1],
           c->hidden_size, c->intermediate_size, c->num_layers, sg_config_tokens(c), t1 - t0, t2 - t1, n,
           sg_cpu_threads(threads));
    float *pool = malloc((size_t)n * D * sizeof(float)), *last = malloc((size_t)n * TD * sizeof(float));
    double *runs = malloc((size_t)repeat * sizeof(double)), *cpu = malloc((size_t)repeat * sizeof(double));
    for (int r = 0; r < repeat; r++) {
        double a = now(), ac = sg_test_clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (sg_cpu_forward_packed(pk, px, n, pool, out_last || ref_last ? last : NULL, threads, err, sizeof err)) {
            fprintf(stderr, "sg_forward: %s\n", err);
            return 1;
        }
        runs[r] = now() - a;
        cpu[r] = sg_test_clock_s(CLOCK_PROCESS_CPUTIME_ID) - ac;
        printf("run %d: %.4f s wall, %.4f s cpu\n", r, runs[r], cpu[r]);
    }
    sg_test_sort_doubles(runs, (size_t)repeat);
    sg_test_sort_doubles(cpu, (size_t)repeat);
    double med = runs[repeat / 2], medc = cpu[repeat / 2], fl = flops_per_image(c);
    /* cpu seconds (all threads) measure the work independently of other processes on a shared machine. */
    printf("median %.4f s for %d images: %.4f s/image, %.2f GFLOP/image, %.1f GFLOP/s; "
           "cpu %.4f s/image, %.1f GFLOP per cpu-second\n", med, n, med / n, fl / 1e9, fl * n / med / 1e9,
           medc / n, fl * n / medc / 1e9);
    int rc = 0;
    if (out_pool && write_floats(out_pool, pool, (size_t)n * D)) { fprintf(stderr, "sg_forward: cannot write %s\n", out_pool); rc = 1; }
    if (out_last && write_floats(out_last, last, (size_t)n * TD)) { fprintf(stderr, "sg_forward: cannot write %s\n", out_last); rc = 1; }
    size_t cnt = 0;
    float *ref;
    if (ref_pool) {
        ref = sg_test_read_floats(ref_pool, &cnt);
        if (!ref || cnt < (size_t)n * D) { fprintf(stderr, "sg_forward: %s: too short\n", ref_pool); return 1; }
        if (!compare("pooled", pool, ref, n, D)) rc = rc ? rc : 2;
        free(ref);
    }
    if (ref_last) {
        ref = sg_test_read_floats(ref_last, &cnt);
        if (!ref || cnt < (size_t)n * TD) { fprintf(stderr, "sg_forward: %s: too short\n", ref_last); return 1; }
        if (!compare("last_hidden", last, ref, n, TD)) rc = rc ? rc : 2;
        free(ref);
    }
    free(pool); free(last); free(runs); free(cpu); free(px);
    sg_cpu_pack_free(pk);
    sg_model_free(m);
    return rc;
}
