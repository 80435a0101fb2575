/* kernel/lab/test_sm100_tile.c — the tcgen05 MXFP8 GEMM tile (kernel/lab/sm100_mxf8_tile.cu) against the CPU
 * block-scaled reference sg_mxfp8_gemm_ref, on a Blackwell (sm_100) GPU only.
 *
 * This is the first on-hardware check of the SM100 MMA layer: the 128x4 scale layout as tcgen05.cp places it,
 * the smem / instruction descriptors, and the accumulation model. Fresh random operands whose 32-element
 * blocks span 2^-20..2^20 (so a wrong scale pairing cannot hide), outputs NaN-poisoned by the launcher.
 * Gate: |D - ref| <= (K + 14) * 2^-24 * sum|a*b| per element (the fp32 summation bound; the hardware's
 * summation order is not documented). It SKIPs without an sm_100 device.
 * Linking: build/liblab.a; in builds without CUDA its stub (kernel/lab/lab_no_gpu.c) reports "no CUDA device"
 * so the test SKIPs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/check.h"
#include "kernel/cpu/cpu_mxfp8.h"
#include "kernel/lab/sm100_mxf8_tile.h"


static uint64_t rng_state;
static double rng_normal(void) { return sg_test_normal(&rng_state); }

int main(void) {
    enum { M = 256, N = 384, K = 512 }; /* 2 x 3 tiles, 4 K blocks of 128 (16 scale blocks per row) */
    const int nb = K / 32;
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K);
    float *d = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N);
    uint8_t *qa = malloc(M * K), *qb = malloc(N * K), *sa = malloc(M * nb), *sb = malloc(N * nb);
    rng_state = (uint64_t)time(NULL);
    for (int i = 0; i < M * K; i++) a[i] = (float)(rng_normal() * ldexp(1.0, (int)((i / 32 * 7919u) % 41) - 20));
    for (int i = 0; i < N * K; i++) b[i] = (float)(rng_normal() * ldexp(1.0, (int)((i / 32 * 104729u) % 41) - 20));
    sg_mxfp8_quantize(a, K, M, K, qa, sa);
    sg_mxfp8_quantize(b, K, N, K, qb, sb);
    sg_mxfp8_gemm_ref(qa, sa, qb, sb, M, N, K, ref);
    char err[512] = "";
    int rc = sg_sm100_mxf8_tile_gemm(qa, sa, qb, sb, M, N, K, d, err, sizeof err);
    if (rc != 0 && strstr(err, "needs an sm_100")) {
        SKIP("sm100 MXFP8 tile vs CPU reference: %s", err);
    } else if (rc != 0 && strstr(err, "no CUDA device")) {
        SKIP("sm100 MXFP8 tile vs CPU reference: %s", err);
    } else {
        CHECK(rc == 0, "sm100 MXFP8 tile runs: %s", rc ? err : "ok");
        float *ad = malloc(sizeof(float) * M * K), *bd = malloc(sizeof(float) * N * K);
        sg_mxfp8_dequantize(qa, sa, M, K, ad, K);
        sg_mxfp8_dequantize(qb, sb, N, K, bd, K);
        double worst = 0;
        for (int i = 0; i < M && rc == 0; i++)
            for (int j = 0; j < N; j++) {
                double mag = 0;
                for (int t = 0; t < K; t++) mag += fabs((double)ad[(size_t)i * K + t] * bd[(size_t)j * K + t]);
                double e = fabs((double)d[(size_t)i * N + j] - ref[(size_t)i * N + j]) / (mag * (K + 14) * ldexp(1.0, -24));
                if (!(e <= worst)) worst = e; /* NaN (an unwritten element) sticks */
            }
        CHECK(rc == 0 && worst <= 1.0, "sm100 MXFP8 tile (M %d N %d K %d) vs sg_mxfp8_gemm_ref: worst %.3f of the fp32 "
              "bound (K+14) * 2^-24 * sum|a*b|", M, N, K, worst);
        free(ad);
        free(bd);
    }
    int bad = sg_sm100_mxf8_tile_gemm(qa, sa, qb, sb, 100, N, K, d, err, sizeof err);
    if (bad == -1 && strstr(err, "built without CUDA"))
        SKIP("sm100 MXFP8 tile shape check: %s", err);
    else
        CHECK(bad == -1 && strstr(err, "multiples of 128"), "sm100 MXFP8 tile refuses M = 100: %s", err);
    free(a); free(b); free(d); free(ref); free(qa); free(qb); free(sa); free(sb);
    return CHECK_DONE();
}
