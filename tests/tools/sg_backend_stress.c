/* tests/tools/sg_backend_stress.c — many back-to-back batches of mixed sizes through one backend, every row checked.
 *
 *   sg_backend_stress WEIGHTS BACKEND LAUNCHES [SEED]        e.g. sg_backend_stress /tmp/full sm90 10000
 *
 * A pool of 64 synthetic images (smooth gradients + noise, from a fixed generator) is embedded one image per
 * batch first; those rows are the reference. Then LAUNCHES batches are submitted, two in flight, each of a size
 * drawn from 1..1024 (98 % from {1, 2, 3, 5, 8, 13, 31, 64}, 2 % from {100, 255, 512, 1024}: every path of the
 * megakernel's task list, partial row tiles, images straddling tiles, and the largest batch, without spending
 * minutes on big batches) and filled with pool images chosen at random. Every returned row must equal the
 * reference row of its image bit for bit for the megakernel backends (the whole forward is one launch whose rows
 * do not depend on the batch), within 1e-4 for cuda (cuBLASLt may reduce in another order for another M), and the
 * output buffer is poisoned with NaN before every collect. The summary also counts the rows that are not bit-identical. A lost signal in the megakernel
 * shows as a trap (launch error) or a wrong row here, never as a silent pass.
 * Prints one summary line; exit 0 when every row matched, 1 otherwise, 2 when the backend cannot be created.
 * SG_STRESS_CORRUPT=1 moves one value of the first collected batch by 1e-3, to show the check fails when it should.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_pool.h"
#include "tests/check.h"

#define POOL 64
#define MAXB 1024


static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }

static int draw_size(void) {
    static const int small[] = {1, 2, 3, 5, 8, 13, 31, 64}, big[] = {100, 255, 512, MAXB};
    return sg_tool_rnd() % 100 < 98 ? small[sg_tool_rnd() % 8] : big[sg_tool_rnd() % 4];
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s WEIGHTS BACKEND LAUNCHES [SEED]\n", argv[0]);
        return 1;
    }
    const long launches = atol(argv[3]);
    const int corrupt = getenv("SG_STRESS_CORRUPT") != NULL; /* flips one output bit: the check must fail */
    const uint64_t seed = argc == 5 ? strtoull(argv[4], NULL, 10) : (uint64_t)time(NULL);
    sg_tool_seed(seed);
    if (launches < 1) {
        fprintf(stderr, "bad launch count '%s'\n", argv[3]);
        return 1;
    }
    sg_model *m;
    sg_backend *b;
    const int orc = sg_tool_open(argv[1], argv[2], MAXB, &m, &b);
    if (orc) return orc;
    char err[2048];
    const int S = b->image_size, D = b->dim;
    const size_t img = (size_t)S * S * 3;
    uint8_t *pool = malloc(img * POOL), *pix[2] = {malloc(img * MAXB), malloc(img * MAXB)};
    float *ref = malloc(sizeof(float) * D * POOL), *out = malloc(sizeof(float) * D * MAXB);
    int *idx[2] = {malloc(sizeof(int) * MAXB), malloc(sizeof(int) * MAXB)}, n[2] = {0, 0};
    int rc = 1;
    if (!pool || !pix[0] || !pix[1] || !ref || !out || !idx[0] || !idx[1]) {
        fprintf(stderr, "out of memory\n");
        goto done;
    }
    sg_tool_make_pool(pool, POOL, S);
    for (int p = 0; p < POOL; p++)
        if (sg_backend_embed(b, pool + p * img, 1, ref + (size_t)p * D, err, sizeof err)) goto fail;

    long images = 0, bad_rows = 0, inexact_rows = 0;
    /* cuda: a row may differ from its batch-1 reference by reduction order where cuBLASLt picks another algorithm
     * for another M (measured up to 6.7e-6 on an H100). The megakernels: not at all. A lost or early dependency
     * signal reads stale or unwritten data and moves a row by orders of magnitude more. */
    const double tol = strcmp(b->name, "cuda") == 0 ? 1e-4 : 0.0;
    double maxd = 0;
    const double t0 = now();
    for (long i = 0; i <= launches; i++) {
        const int s = (int)(i % 2);
        if (i < launches) { /* submit launch i into slot s (slot s^1 is in flight) */
            n[s] = draw_size();
            for (int k = 0; k < n[s]; k++) {
                idx[s][k] = (int)(sg_tool_rnd() % POOL);
                memcpy(pix[s] + k * img, pool + (size_t)idx[s][k] * img, img);
            }
            if (b->submit(b, pix[s], n[s], err, sizeof err)) goto fail;
        }
        if (i > 0) { /* collect launch i - 1 (the oldest) */
            const int c = 1 - s;
            for (size_t k = 0; k < (size_t)n[c] * D; k++) out[k] = NAN;
            if (b->collect(b, out, err, sizeof err)) goto fail;
            if (corrupt && i == 1) out[0] += 1e-3f; /* self-test of the checker: one value of the first launch */
            for (int k = 0; k < n[c]; k++) {
                const float *r = ref + (size_t)idx[c][k] * D, *g = out + (size_t)k * D;
                if (memcmp(r, g, sizeof(float) * D) != 0) {
                    inexact_rows++;
                    double e_row = 0;
                    for (int d = 0; d < D; d++) {
                        const double e = isnan(g[d]) ? INFINITY : fabs((double)g[d] - r[d]);
                        if (e > e_row) e_row = e;
                    }
                    if (e_row > maxd) maxd = e_row;
                    if (e_row <= tol) continue;
                    bad_rows++;
                    if (bad_rows <= 5)
                        fprintf(stderr, "launch %ld (batch %d): row %d (pool image %d) differs from its reference\n",
                                i - 1, n[c], k, idx[c][k]);
                }
            }
            images += n[c];
        }
    }
    printf("%s: backend %s, seed %llu: %ld launches of mixed batch sizes (1..%d), %ld images in %.1f s, %ld rows "
           "differing from the batch-1 reference by more than %g (%ld not bit-identical, max |d| %g)\n",
           bad_rows ? "FAIL" : "PASS", argv[2], (unsigned long long)seed, launches, MAXB, images, now() - t0,
           bad_rows, tol, inexact_rows, maxd);
    rc = bad_rows ? 1 : 0;
done:
    sg_backend_destroy(b);
    sg_model_free(m);
    free(pool);
    free(pix[0]);
    free(pix[1]);
    free(ref);
    free(out);
    free(idx[0]);
    free(idx[1]);
    return rc;
fail:
    fprintf(stderr, "FAIL: %s\n", err);
    goto done;
}
