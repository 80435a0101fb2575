/* tests/tools/sg_batch_invariance.c — is an image's embedding bit-identical whatever its batch size and position?
 *
 *   sg_batch_invariance WEIGHTS BACKEND [SIZES] [SEED]      e.g. sg_batch_invariance /tmp/full sm90 1,2,7,256
 *
 * A pool of 64 synthetic images (tool_pool.h, as sg_backend_stress.c makes it) is embedded one image per batch: those
 * rows are the references. Then, for every batch size in SIZES (default 1,2,3,4,7,8,9,10,11,12,15,16,17,255,256,1024:
 * on an H100 every GEMM task shape, and the edges between them), one batch is filled with pool images drawn at random
 * (so an image lands at many positions: first, last, straddling 128-row tiles, twice in one batch), the output is
 * poisoned with NaN, and every row must equal its reference bit for bit (memcmp): the claim the megakernel backends
 * make (one launch for every batch size, no routing, every task computing a row from that row alone in a fixed order).
 * One "PASS:"/"FAIL:" line per batch size (the format of tests/check.h), with the number of rows that differ and the
 * largest difference. SG_INVARIANCE_CORRUPT=1 moves one value of the first batch by one ulp, to show the check fails
 * when it should. Exit status: 0 every row identical, 1 some row differed, 2 the backend could not be created.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_pool.h"

#define POOL 64

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s WEIGHTS BACKEND [SIZES] [SEED]\n", argv[0]);
        return 1;
    }
    char sizes_buf[256];
    snprintf(sizes_buf, sizeof sizes_buf, "%s", argc >= 4 ? argv[3] : "1,2,3,4,7,8,9,10,11,12,15,16,17,255,256,1024");
    int sizes[32], nsizes = 0, max_batch = 1;
    for (char *s = strtok(sizes_buf, ","); s && nsizes < 32; s = strtok(NULL, ",")) {
        sizes[nsizes] = atoi(s);
        if (sizes[nsizes] < 1) {
            fprintf(stderr, "bad batch size '%s'\n", s);
            return 1;
        }
        if (sizes[nsizes] > max_batch) max_batch = sizes[nsizes];
        nsizes++;
    }
    const uint64_t seed = argc == 5 ? strtoull(argv[4], NULL, 10) : (uint64_t)time(NULL);
    sg_tool_seed(seed);
    const int corrupt = getenv("SG_INVARIANCE_CORRUPT") != NULL;
    sg_model *m;
    sg_backend *b;
    const int orc = sg_tool_open(argv[1], argv[2], max_batch, &m, &b);
    if (orc) return orc;
    char err[2048];
    const int S = b->image_size, D = b->dim;
    const size_t img = (size_t)S * S * 3;
    uint8_t *pool = malloc(img * POOL), *pix = malloc(img * (size_t)max_batch);
    float *ref = malloc(sizeof(float) * D * POOL), *out = malloc(sizeof(float) * D * (size_t)max_batch);
    int *idx = malloc(sizeof(int) * (size_t)max_batch);
    int rc = 1, failed = 0;
    if (!pool || !pix || !ref || !out || !idx) {
        fprintf(stderr, "out of memory\n");
        goto done;
    }
    sg_tool_make_pool(pool, POOL, S);
    for (int p = 0; p < POOL; p++)
        if (sg_backend_embed(b, pool + p * img, 1, ref + (size_t)p * D, err, sizeof err)) goto fail;
    for (int si = 0; si < nsizes; si++) {
        const int n = sizes[si];
        for (int k = 0; k < n; k++) {
            /* every pool image in turn first (positions spread over the batch), then random ones */
            idx[k] = k < POOL && n >= POOL ? k : (int)(sg_tool_rnd() % POOL);
            memcpy(pix + (size_t)k * img, pool + (size_t)idx[k] * img, img);
        }
        for (size_t k = 0; k < (size_t)n * D; k++) out[k] = NAN;
        if (sg_backend_embed(b, pix, n, out, err, sizeof err)) goto fail;
        if (corrupt && si == 0) out[0] = nextafterf(out[0], INFINITY);
        int differ = 0;
        double maxd = 0;
        for (int k = 0; k < n; k++) {
            const float *r = ref + (size_t)idx[k] * D, *g = out + (size_t)k * D;
            if (memcmp(r, g, sizeof(float) * D) == 0) continue;
            differ++;
            for (int d = 0; d < D; d++) {
                const double e = isnan(g[d]) ? INFINITY : fabs((double)g[d] - r[d]);
                if (e > maxd) maxd = e;
            }
        }
        printf("%s: backend %s, batch %d: %d of %d rows bit-identical to the image's batch-1 row%s",
               differ ? "FAIL" : "PASS", argv[2], n, n - differ, n, differ ? "" : "\n");
        if (differ) printf(" (max |d| %g, seed %llu)\n", maxd, (unsigned long long)seed);
        failed += differ != 0;
    }
    rc = failed ? 1 : 0;
done:
    sg_backend_destroy(b);
    sg_model_free(m);
    free(pool);
    free(pix);
    free(ref);
    free(out);
    free(idx);
    return rc;
fail:
    printf("FAIL: %s\n", err);
    goto done;
}
