/* tests/tools/sg_mxfp8_forward.c — run the emulated SM100 numerics (kernel/cpu/cpu_mxfp8.c) on a pixels file.
 *
 *   sg_mxfp8_forward MODEL PIXELS.f32 [--mode mxfp8|bf16w|bf16|fp32] [--threads T] [--pooled OUT.f32]
 *                    [--ref POOLED.f32] [--w FMT] [--x FMT] [--attn FMT] [--bf16 KINDS]
 *                    [--fc2-layers LIST] [--fc2-x FMT|bound] [--bound-log OUT.bin]
 *
 * PIXELS.f32 holds float32 [n, 3, S, S] (HF pixel_values). Modes:
 *   mxfp8  the SM100 plan: MXFP8 weights and inputs of every Linear layer, bf16 Q/K/V/P (default);
 *   bf16w  bf16-rounded Linear weights only, everything else fp32 (context);
 *   bf16   bf16 Linear weights and inputs and bf16 Q/K/V/P (what a bf16 tensor-core kernel would see);
 *   fp32   no rounding (a check of the emulation's plumbing against the fp32 encoder).
 * Ablations override the mode: --w / --x / --attn FMT (fp32, bf16, mxfp8; and the SM90 FP8 recipes fp8 =
 * fp32 scales on 1 x 128 input / 128 x 128 weight blocks, fp8pow2 = the same with power-of-two scales,
 * fp8chan = one scale per row: per token / per output channel) set the Linear weight, Linear input and
 * attention formats; --bf16 KINDS (comma list of patch, qkv, out, fc1, fc2, head) keeps those
 * Linear kinds in bf16.
 * --fc2-layers LIST (comma list of encoder layer indexes, "all" or "none"; default none) chooses FC2's format per
 * layer, overriding --bf16's fc2: the listed layers take the --w weights and the --fc2-x input format (default
 * the --x format; "bound" = SG_MX_FP8_BOUND, E4M3 scaled per token by the a-priori bound ||y_r|| C + B of
 * sg_mx_fc1_bound), the others bf16. --bound-log writes (int32 layer, float32 bound_r / max|H_r|) for every
 * layer and token (sg_mx_set_bound_log).
 * With --ref it prints, per image, the cosine and max |Δ| against the reference pooled outputs and a summary
 * line "summary: mode M n N min_cos C mean_cos C max_abs A"; exit status 2 if any cosine is below 0.999
 * (the target), 1 on usage or input errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/cpu/cpu_mxfp8.h"
#include "tests/check.h"
#include "weights/model_load.h"

static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }

static int parse_format_in(const char *s, sg_mx_format *f, int bound_ok) {
    if (!strcmp(s, "fp32")) *f = SG_MX_FP32;
    else if (!strcmp(s, "bf16")) *f = SG_MX_BF16;
    else if (!strcmp(s, "mxfp8")) *f = SG_MX_MXFP8;
    else if (!strcmp(s, "fp8")) *f = SG_MX_FP8;
    else if (!strcmp(s, "fp8pow2")) *f = SG_MX_FP8_POW2;
    else if (!strcmp(s, "fp8chan")) *f = SG_MX_FP8_CHAN;
    else if (bound_ok && !strcmp(s, "bound")) *f = SG_MX_FP8_BOUND;
    else {
        fprintf(stderr, "sg_mxfp8_forward: format '%s', expected fp32, bf16, mxfp8, fp8, fp8pow2 or fp8chan\n", s);
        return -1;
    }
    return 0;
}

static int parse_format(const char *s, sg_mx_format *f) { return parse_format_in(s, f, 0); }

/* "all", "none" or a comma list of layer indexes in [0, 32) -> a bit mask (layers past the model's count are
 * refused by sg_mx_model_create). */
static int parse_layers(const char *s, unsigned *mask) {
    *mask = 0;
    if (!strcmp(s, "none")) return 0;
    if (!strcmp(s, "all")) {
        *mask = ~0u; /* trimmed to the model's layers in main */
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long l = strtol(tok, &end, 10);
        if (*end || end == tok || l < 0 || l >= 32) {
            fprintf(stderr, "sg_mxfp8_forward: --fc2-layers '%s', expected all, none or layer indexes 0..31\n", tok);
            return -1;
        }
        *mask |= 1u << l;
    }
    return 0;
}

static int parse_kinds(const char *s, unsigned *mask) {
    static const char *names[] = {"patch", "qkv", "out", "fc1", "fc2", "head"};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int i = 0; i < 6; i++)
            if (!strcmp(tok, names[i])) {
                *mask |= 1u << i;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "sg_mxfp8_forward: --bf16 kind '%s', expected patch, qkv, out, fc1, fc2 or head\n", tok);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *px_path = NULL, *out_path = NULL, *ref_path = NULL, *mode = "mxfp8";
    const char *ow = NULL, *ox = NULL, *oa = NULL, *okinds = NULL, *olayers = NULL, *ofc2x = NULL, *log_path = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pooled") && i + 1 < argc) out_path = argv[++i];
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc) ref_path = argv[++i];
        else if (!strcmp(argv[i], "--w") && i + 1 < argc) ow = argv[++i];
        else if (!strcmp(argv[i], "--x") && i + 1 < argc) ox = argv[++i];
        else if (!strcmp(argv[i], "--attn") && i + 1 < argc) oa = argv[++i];
        else if (!strcmp(argv[i], "--bf16") && i + 1 < argc) okinds = argv[++i];
        else if (!strcmp(argv[i], "--fc2-layers") && i + 1 < argc) olayers = argv[++i];
        else if (!strcmp(argv[i], "--fc2-x") && i + 1 < argc) ofc2x = argv[++i];
        else if (!strcmp(argv[i], "--bound-log") && i + 1 < argc) log_path = argv[++i];
        else if (argv[i][0] != '-' && !model_path) model_path = argv[i];
        else if (argv[i][0] != '-' && !px_path) px_path = argv[i];
        else {
            fprintf(stderr, "sg_mxfp8_forward: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!model_path || !px_path) {
        fprintf(stderr, "usage: sg_mxfp8_forward MODEL PIXELS.f32 [--mode mxfp8|bf16w|bf16|fp32] [--threads T] "
                        "[--pooled OUT.f32] [--ref POOLED.f32]\n");
        return 1;
    }
    sg_mx_numerics num;
    sg_mx_fc2_plan fc2 = {0, SG_MX_FP32};
    if (!strcmp(mode, "mxfp8")) num = sg_mx_numerics_sm100();
    else if (!strcmp(mode, "bf16w")) num = (sg_mx_numerics){SG_MX_BF16, SG_MX_FP32, SG_MX_FP32, 0};
    else if (!strcmp(mode, "bf16")) num = (sg_mx_numerics){SG_MX_BF16, SG_MX_BF16, SG_MX_BF16, 0};
    else if (!strcmp(mode, "fp32")) num = (sg_mx_numerics){SG_MX_FP32, SG_MX_FP32, SG_MX_FP32, 0};
    else {
        fprintf(stderr, "sg_mxfp8_forward: --mode '%s', expected mxfp8, bf16w, bf16 or fp32\n", mode);
        return 1;
    }
    if ((ow && parse_format(ow, &num.linear_w)) || (ox && parse_format(ox, &num.linear_x)) ||
        (oa && parse_format(oa, &num.attention)) || (okinds && parse_kinds(okinds, &num.bf16_linears)) ||
        (olayers && parse_layers(olayers, &fc2.layers)))
        return 1;
    fc2.x = num.linear_x;
    if (ofc2x && parse_format_in(ofc2x, &fc2.x, 1)) return 1;

    char err[512];
    sg_model *m = sg_model_load(model_path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "sg_mxfp8_forward: %s\n", err);
        return 1;
    }
    if (fc2.layers == ~0u && m->cfg.num_layers < 32) fc2.layers = (1u << m->cfg.num_layers) - 1u;
    const int S = m->cfg.image_size, D = m->cfg.hidden_size;
    const size_t per = (size_t)3 * S * S;
    size_t count = 0;
    float *px = sg_test_read_floats(px_path, &count);
    if (!px || count == 0 || count % per) {
        fprintf(stderr, "sg_mxfp8_forward: %s: cannot read, or %zu floats is not a multiple of 3x%dx%d\n", px_path,
                count, S, S);
        return 1;
    }
    const int n = (int)(count / per);
    double t0 = now();
    sg_mx_model *mx = sg_mx_model_create_fc2(m, num, fc2, threads, err, sizeof err);
    if (!mx) {
        fprintf(stderr, "sg_mxfp8_forward: %s\n", err);
        return 1;
    }
    FILE *blog = NULL;
    if (log_path) {
        if (!(blog = fopen(log_path, "wb"))) {
            fprintf(stderr, "sg_mxfp8_forward: cannot write %s\n", log_path);
            return 1;
        }
        sg_mx_set_bound_log(mx, blog);
    }
    double t1 = now();
    float *pooled = malloc((size_t)n * D * sizeof(float));
    if (!pooled) return 1;
    for (size_t i = 0; i < (size_t)n * D; i++) pooled[i] = NAN; /* poisoned: every value must be written */
    if (sg_mx_forward(mx, px, n, pooled, NULL, threads, err, sizeof err) != 0) {
        fprintf(stderr, "sg_mxfp8_forward: %s\n", err);
        return 1;
    }
    double t2 = now();
    if (blog && fclose(blog) != 0) {
        fprintf(stderr, "sg_mxfp8_forward: cannot write %s\n", log_path);
        return 1;
    }
    printf("mode %s: %d images, prepare %.2f s, forward %.2f s\n", mode, n, t1 - t0, t2 - t1);
    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        if (!f || fwrite(pooled, sizeof(float), (size_t)n * D, f) != (size_t)n * D || fclose(f) != 0) {
            fprintf(stderr, "sg_mxfp8_forward: cannot write %s\n", out_path);
            return 1;
        }
    }
    int rc = 0;
    if (ref_path) {
        size_t rc_count = 0;
        float *ref = sg_test_read_floats(ref_path, &rc_count);
        if (!ref || rc_count != (size_t)n * D) {
            fprintf(stderr, "sg_mxfp8_forward: %s: expected %d x %d floats, got %zu\n", ref_path, n, D, rc_count);
            return 1;
        }
        double min_cos = 2, sum_cos = 0, max_abs = 0;
        for (int b = 0; b < n; b++) {
            const float *a = pooled + (size_t)b * D, *r = ref + (size_t)b * D;
            double dot = 0, na = 0, nr = 0, ma = 0;
            for (int i = 0; i < D; i++) {
                dot += (double)a[i] * r[i];
                na += (double)a[i] * a[i];
                nr += (double)r[i] * r[i];
                double d = fabs((double)a[i] - r[i]);
                if (!(d <= ma)) ma = d; /* NaN sticks */
            }
            double cs = dot / sqrt(na * nr);
            if (!(cs >= min_cos)) min_cos = cs;
            sum_cos += cs;
            if (!(ma <= max_abs)) max_abs = ma;
            printf("image %d: cos %.7f max_abs %.4g\n", b, cs, ma);
        }
        printf("summary: mode %s n %d min_cos %.7f mean_cos %.7f max_abs %.4g\n", mode, n, min_cos, sum_cos / n,
               max_abs);
        if (!(min_cos >= 0.999)) rc = 2; /* the target for every image */
        free(ref);
    }
    free(pooled);
    free(px);
    sg_mx_model_free(mx);
    sg_model_free(m);
    return rc;
}
