/* tests/test_sm100_quant.c — the GPU MXFP8 quantisers of the Blackwell backend (kernel/sm100/sm100_quant.cu)
 * against the CPU quantiser sg_mxfp8_quantize (kernel/cpu/cpu_mxfp8.c), bit for bit.
 *
 * The kernels are plain CUDA, so they run on any GPU of compute capability 8.9 or newer for which kernel/sm100
 * was compiled: sm_100a in the normal build, plus sm_90 in scripts/sm100-check.sh's build (the H100 run).
 * Checks, on fresh random data (the seed is printed):
 *   1. weights: a [300, 768] matrix (300 rows: a partial last 128-row atom) whose 32-element blocks are drawn
 *      from eight families: wide normal values (2^-40..2^40), all zeros, a single non-zero, float subnormals
 *      and signed zeros, huge values up to FLT_MAX, exact E4M3 rounding midpoints (ties to even), 2^-30-wide
 *      spreads (E4M3 subnormals and flush to zero), and amax a hair either side of a 448 * 2^e boundary.
 *      Codes must equal the CPU's; every scale byte, read through sg_sm100_sf_offset, must equal the CPU's;
 *      the padding rows' scales must be 0. Outputs are poisoned (0xA5) before the run.
 *   2. LayerNorm + quantise: [200, 768] rows with offsets, scales and an outlier channel; the kernel's fp32 y
 *      must quantise on the CPU to exactly its codes and scales, y must match a double-precision LayerNorm
 *      within 1e-4 * max(1, |y|), padding rows 200..255 get scale 0, and the production call without the y
 *      output gives the same bytes.
 * SKIPs: without CUDA (the launchers are weak references, see below), without a device, or when kernel/sm100
 * was not compiled for this GPU.
 * Linking: in a CUDA build the reference to sg_sm100_backend_create pulls kernel/sm100/sm100_backend.cu.o out
 * of the archive, and with it the megakernel and the quantisers, so the weak references resolve; in a build
 * without CUDA it resolves to kernel/no_gpu.c and the quantiser symbols stay NULL.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/gpu.h"
#include "kernel/sm100/sm100_desc.h"
#include "kernel/sm100/sm100_quant.h"

#pragma weak sg_sm100_quant_check_matrix
#pragma weak sg_sm100_quant_check_ln

sg_backend *(*volatile sg_test_keep_sm100)(const sg_model *, const sg_backend_opts *, char *, size_t) =
    sg_sm100_backend_create;

static uint64_t rng_state;
static uint64_t rng_u64(void) { return sg_test_splitmix64(&rng_state); }
static double rng_uniform(void) { return (rng_u64() >> 11) / 9007199254740992.0; }
static double rng_normal(void) { return sg_test_normal(&rng_state); }
static float rng_sign(void) { return (rng_u64() & 1) ? -1.0f : 1.0f; }

/* One 32-element block of family f (see the header). */
static void fill_block(float *x, int f) {
    switch (f) {
    case 0: {
        int e = (int)(rng_u64() % 81) - 40;
        for (int i = 0; i < 32; i++) x[i] = (float)ldexp(rng_normal(), e);
        break;
    }
    case 1:
        for (int i = 0; i < 32; i++) x[i] = (rng_u64() & 1) ? -0.0f : 0.0f;
        break;
    case 2:
        for (int i = 0; i < 32; i++) x[i] = 0.0f;
        x[rng_u64() % 32] = (float)ldexp(rng_normal(), (int)(rng_u64() % 61) - 30);
        break;
    case 3: /* float subnormals (below 2^-126) and signed zeros */
        for (int i = 0; i < 32; i++)
            x[i] = (i % 5 == 0) ? rng_sign() * 0.0f : rng_sign() * (float)ldexp(rng_uniform(), -126 - (int)(rng_u64() % 20));
        break;
    case 4: /* huge: up to FLT_MAX */
        for (int i = 0; i < 32; i++) x[i] = rng_sign() * (float)(FLT_MAX * (0.01 + 0.99 * rng_uniform()));
        x[rng_u64() % 32] = rng_sign() * FLT_MAX;
        break;
    case 5: { /* element 0 fixes amax = 448 * 2^s (so the scale is 2^s); the others sit on E4M3 midpoints */
        int s = (int)(rng_u64() % 41) - 20;
        x[0] = rng_sign() * (float)ldexp(448.0, s);
        for (int i = 1; i < 32; i++) {
            uint8_t c = (uint8_t)(rng_u64() % 0x7D); /* c and c + 1 both finite, below 448 */
            double mid = 0.5 * ((double)sg_e4m3_decode(c) + (double)sg_e4m3_decode((uint8_t)(c + 1)));
            x[i] = rng_sign() * (float)ldexp(mid, s);
        }
        break;
    }
    case 6: { /* a 2^-30-wide spread: E4M3 subnormals and values that flush to zero */
        int e = (int)(rng_u64() % 21) - 10;
        for (int i = 0; i < 32; i++) x[i] = rng_sign() * (float)ldexp(1.0 + rng_uniform(), e - (int)(rng_u64() % 31));
        break;
    }
    default: { /* amax a hair above or below 448 * 2^s: the scale choice flips there */
        int s = (int)(rng_u64() % 41) - 20;
        float edge = (float)ldexp(448.0, s);
        x[0] = rng_sign() * ((rng_u64() & 1) ? nextafterf(edge, INFINITY) : nextafterf(edge, 0.0f));
        for (int i = 1; i < 32; i++) x[i] = (float)(edge * 0.999 * (2 * rng_uniform() - 1));
        break;
    }
    }
}

static int skip_reason(const char *err) {
    return strstr(err, "no CUDA device") != NULL || strstr(err, "not built for this GPU") != NULL;
}

static void test_matrix(void) {
    enum { R = 300, K = 768, NB = K / 32 };
    const size_t sfn = sg_sm100_sf_bytes(R, NB);
    float *x = malloc(sizeof(float) * R * K);
    uint8_t *q = malloc(R * K), *qr = malloc(R * K), *sf = malloc(sfn), *sr = malloc(R * NB);
    int fam_count[8] = {0};
    for (int r = 0; r < R; r++)
        for (int b = 0; b < NB; b++) {
            int f = (int)(rng_u64() % 8);
            fam_count[f]++;
            fill_block(x + (size_t)r * K + 32 * b, f);
        }
    char err[512] = "";
    int rc = sg_sm100_quant_check_matrix(x, R, K, q, sf, err, sizeof err);
    if (rc != 0 && skip_reason(err)) {
        SKIP("sm100 MXFP8 weight quantiser vs sg_mxfp8_quantize: %s", err);
    } else {
        CHECK(rc == 0, "sm100 MXFP8 weight quantiser runs: %s", rc ? err : "ok");
        sg_mxfp8_quantize(x, K, R, K, qr, sr);
        long bad_q = 0, bad_s = 0, bad_pad = 0, first = -1;
        for (long i = 0; rc == 0 && i < (long)R * K; i++)
            if (q[i] != qr[i]) {
                if (first < 0) first = i;
                bad_q++;
            }
        for (int r = 0; rc == 0 && r < R; r++)
            for (int b = 0; b < NB; b++) bad_s += sf[sg_sm100_sf_offset(r, b, NB)] != sr[r * NB + b];
        for (int r = R; rc == 0 && r < (R + 127) / 128 * 128; r++)
            for (int b = 0; b < NB; b++) bad_pad += sf[sg_sm100_sf_offset(r, b, NB)] != 0;
        CHECK(rc == 0 && bad_q == 0, "sm100 MXFP8 weights [%d, %d]: E4M3 codes bit-identical to the CPU (%ld of %d "
              "differ%s; blocks per family %d %d %d %d %d %d %d %d)", R, K, bad_q, R * K,
              first >= 0 ? ", see below" : "", fam_count[0], fam_count[1], fam_count[2], fam_count[3], fam_count[4],
              fam_count[5], fam_count[6], fam_count[7]);
        if (first >= 0)
            printf("    first difference: element %ld = %a: GPU 0x%02x, CPU 0x%02x\n", first, x[first], q[first],
                   qr[first]);
        CHECK(rc == 0 && bad_s == 0, "sm100 MXFP8 weights: UE8M0 scales in the 128x4 layout equal the CPU's (%ld of "
              "%d differ)", bad_s, R * NB);
        CHECK(rc == 0 && bad_pad == 0, "sm100 MXFP8 weights: padding rows %d..%d have scale code 0 (%ld not)", R,
              (R + 127) / 128 * 128 - 1, bad_pad);
    }
    rc = sg_sm100_quant_check_matrix(x, R, 100, q, sf, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "multiple of 32"), "sm100 MXFP8 weight quantiser refuses k = 100: %s", err);
    free(x); free(q); free(qr); free(sf); free(sr);
}

static void test_ln(void) {
    enum { R = 200, D = 768, NB = D / 32 };
    const size_t sfn = sg_sm100_sf_bytes(R, NB);
    const float eps = 1e-6f;
    float *x = malloc(sizeof(float) * R * D), *y = malloc(sizeof(float) * R * D), *w = malloc(sizeof(float) * D),
          *b = malloc(sizeof(float) * D);
    uint8_t *q = malloc(R * D), *q2 = malloc(R * D), *qr = malloc(R * D), *sf = malloc(sfn), *sf2 = malloc(sfn),
            *sr = malloc(R * NB);
    for (int j = 0; j < D; j++) {
        w[j] = (j % 97 == 5) ? 0.0f : (float)(1.0 + 0.5 * rng_normal()); /* w = 0: y = b exactly */
        b[j] = (float)(0.2 * rng_normal());
    }
    for (int r = 0; r < R; r++) {
        double off = 4 * rng_uniform() - 2, sc = 0.3 * pow(100.0, rng_uniform());
        for (int j = 0; j < D; j++) x[(size_t)r * D + j] = (float)(off + sc * rng_normal() * (j == 17 ? 300.0 : 1.0));
    }
    char err[512] = "";
    int rc = sg_sm100_quant_check_ln(x, w, b, R, D, eps, q, sf, y, err, sizeof err);
    if (rc != 0 && skip_reason(err)) {
        SKIP("sm100 LayerNorm + MXFP8 quantiser: %s", err);
    } else {
        CHECK(rc == 0, "sm100 LayerNorm + MXFP8 runs: %s", rc ? err : "ok");
        sg_mxfp8_quantize(y, D, R, D, qr, sr);
        long bad_q = 0, bad_s = 0, bad_pad = 0;
        double worst = 0;
        for (long i = 0; rc == 0 && i < (long)R * D; i++) bad_q += q[i] != qr[i];
        for (int r = 0; rc == 0 && r < R; r++) {
            for (int c = 0; c < NB; c++) bad_s += sf[sg_sm100_sf_offset(r, c, NB)] != sr[r * NB + c];
            const float *xr = x + (size_t)r * D;
            double mean = 0, var = 0;
            for (int j = 0; j < D; j++) mean += xr[j];
            mean /= D;
            for (int j = 0; j < D; j++) var += (xr[j] - mean) * (xr[j] - mean);
            const double rstd = 1.0 / sqrt(var / D + eps);
            for (int j = 0; j < D; j++) {
                double ref = (xr[j] - mean) * rstd * w[j] + b[j];
                double e = fabs(y[(size_t)r * D + j] - ref) / fmax(1.0, fabs(ref));
                if (!(e <= worst)) worst = e; /* NaN (an unwritten element) sticks */
            }
        }
        for (int r = R; rc == 0 && r < (R + 127) / 128 * 128; r++)
            for (int c = 0; c < NB; c++) bad_pad += sf[sg_sm100_sf_offset(r, c, NB)] != 0;
        CHECK(rc == 0 && bad_q == 0 && bad_s == 0, "sm100 LayerNorm + MXFP8 [%d, %d]: codes and scales are "
              "sg_mxfp8_quantize of the kernel's own fp32 LayerNorm output (%ld codes, %ld scales differ)", R, D,
              bad_q, bad_s);
        CHECK(rc == 0 && worst <= 1e-4, "sm100 LayerNorm + MXFP8: fp32 LayerNorm within 1e-4 * max(1, |y|) of a "
              "double reference (worst %.2e)", worst);
        CHECK(rc == 0 && bad_pad == 0, "sm100 LayerNorm + MXFP8: padding rows %d..%d have scale code 0 (%ld not)", R,
              (R + 127) / 128 * 128 - 1, bad_pad);
        int rc2 = sg_sm100_quant_check_ln(x, w, b, R, D, eps, q2, sf2, NULL, err, sizeof err);
        CHECK(rc == 0 && rc2 == 0 && memcmp(q, q2, (size_t)R * D) == 0 && memcmp(sf, sf2, sfn) == 0,
              "sm100 LayerNorm + MXFP8: the call without the fp32 copy writes the same bytes");
    }
    rc = sg_sm100_quant_check_ln(x, w, b, R, 100, eps, q, sf, y, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "multiple of 32"), "sm100 LayerNorm + MXFP8 refuses d = 100: %s", err);
    free(x); free(y); free(w); free(b); free(q); free(q2); free(qr); free(sf); free(sf2); free(sr);
}

int main(void) {
    if (!sg_sm100_quant_check_matrix || !sg_sm100_quant_check_ln) {
        SKIP("sm100 MXFP8 quantisers: this build has no CUDA (kernel/no_gpu.c)");
        return CHECK_DONE();
    }
    rng_state = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    printf("    seed %llu\n", (unsigned long long)rng_state);
    test_matrix();
    test_ln();
    return CHECK_DONE();
}
