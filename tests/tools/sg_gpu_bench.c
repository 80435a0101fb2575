/* tests/tools/sg_gpu_bench.c — times one backend through the backend API, for scripts/gpu-bench.sh.
 *
 *   sg_gpu_bench WEIGHTS BACKEND BATCH[,BATCH...]     e.g. sg_gpu_bench /tmp/full cuda 1,32,256,1024
 *
 * Prints one JSON object per line: first {"load_s", "create_s", "first_embed_s"} (cold start: model load from
 * the page cache, weight upload + setup, first batch including graph capture), then per batch size:
 *   latency_ms: median wall time of one submit+collect (pixels uploaded, graph launched, embeddings copied back);
 *   img_s: steady-state throughput with two batches in flight (the upload of one overlaps the other's compute,
 *          so this is the encoder's rate with pixels effectively on the GPU, as long as the copy is faster),
 *          timed from the first batch's collect to the last's, so the pipeline's fill is not in it;
 *   img_s_with_fill: the same run timed from the first submit (the figure img_s was until session 26).
 * Uses only sg_backend_* so every backend is timed the same way. Exit 2 when the backend cannot be created
 * (its reason on stderr), 1 on any other failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/backend.h"
#include "weights/model_load.h"
#include "tests/check.h"

static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s WEIGHTS BACKEND[:fp8|:bf16] BATCH[,BATCH...]\n", argv[0]);
        return 1;
    }
    int batches[16], nb = 0, max_batch = 1;
    for (char *s = strtok(argv[3], ","); s && nb < 16; s = strtok(NULL, ",")) {
        batches[nb] = atoi(s);
        if (batches[nb] < 1) {
            fprintf(stderr, "bad batch size '%s'\n", s);
            return 1;
        }
        if (batches[nb] > max_batch) max_batch = batches[nb];
        nb++;
    }
    sg_backend_opts o = {SG_BACKEND_AUTO, 0, max_batch, 0, SG_PRECISION_AUTO};
    if (sg_backend_parse_spec(argv[2], &o.kind, &o.precision) != 0) {
        fprintf(stderr, "unknown backend '%s' (BACKEND or BACKEND:fp8 / :bf16)\n", argv[2]);
        return 1;
    }
    char err[2048], why[1024];
    double t0 = now();
    sg_model *m = sg_model_load(argv[1], err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t1 = now();
    /* Random pixels, made outside the timed steps (150 MB of them take longer than the cold start itself). */
    const size_t img = (size_t)m->cfg.image_size * m->cfg.image_size * 3;
    uint8_t *pix = malloc(img * max_batch);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < img * max_batch; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pix[i] = (uint8_t)(x >> 56);
    }
    const double t1b = now();
    sg_backend *b = sg_backend_create(m, &o, why, sizeof why, err, sizeof err);
    if (!b) {
        fprintf(stderr, "unavailable: %s\n", err);
        sg_model_free(m);
        free(pix);
        return 2;
    }
    double t2 = now();
    const char *label = strchr(argv[2], ':') ? argv[2] : b->name;  // sm90:fp8 keeps its precision in the report
    float *out = malloc((size_t)max_batch * b->dim * sizeof(float));
    if (sg_backend_embed(b, pix, 1, out, err, sizeof err)) goto fail;
    double t3 = now();
    printf("{\"backend\": \"%s\", \"load_s\": %.4f, \"create_s\": %.4f, \"first_embed_s\": %.4f, \"cold_start_s\": %.4f}\n",
           label, t1 - t0, t2 - t1b, t3 - t2, (t1 - t0) + (t2 - t1b) + (t3 - t2));
    for (int k = 0; k < nb; k++) {
        const int n = batches[k];
        /* iterations: enough for a stable median without spending more than a few seconds at n = 1024 */
        const int iters = n <= 1 ? 200 : n <= 32 ? 60 : n <= 256 ? 20 : 10;
        /* the first call at a new size pays setup (GEMM plans, warm-up run, graph capture per staging slot) */
        double f0 = now();
        if (sg_backend_embed(b, pix, n, out, err, sizeof err)) goto fail;
        const double first = now() - f0;
        for (int w = 0; w < 3; w++)
            if (sg_backend_embed(b, pix, n, out, err, sizeof err)) goto fail;
        double lat[200];
        for (int i = 0; i < iters; i++) {
            double a = now();
            if (sg_backend_embed(b, pix, n, out, err, sizeof err)) goto fail;
            lat[i] = now() - a;
        }
        sg_test_sort_doubles(lat, (size_t)iters);
        /* Throughput: `rounds` batches, two in flight. The steady-state clock starts when the first batch is
         * collected: the second is then already queued behind it, so the window holds rounds - 1 batch periods and
         * none of the pipeline's fill (the first batch's staging and upload with nothing to overlap them, ~1 ms a
         * batch at 1,024 images over 20 rounds). img_s_with_fill keeps the whole window, as before session 26. */
        const int rounds = iters * 2;
        double a = now(), s0 = 0;
        if (b->submit(b, pix, n, err, sizeof err)) goto fail;
        for (int i = 1; i < rounds; i++) {
            if (b->submit(b, pix, n, err, sizeof err) || b->collect(b, out, err, sizeof err)) goto fail;
            if (i == 1) s0 = now();
        }
        if (b->collect(b, out, err, sizeof err)) goto fail;
        const double end = now();
        const double thr = (double)n * (rounds - 1) / (end - s0), thr_fill = (double)n * rounds / (end - a);
        printf("{\"backend\": \"%s\", \"batch\": %d, \"latency_ms\": %.4f, \"latency_min_ms\": %.4f, \"img_s\": %.1f, "
               "\"img_s_with_fill\": %.1f, \"first_call_ms\": %.1f}\n",
               label, n, lat[iters / 2] * 1e3, lat[0] * 1e3, thr, thr_fill, first * 1e3);
        fflush(stdout);
    }
    sg_backend_destroy(b);
    sg_model_free(m);
    free(pix);
    free(out);
    return 0;
fail:
    fprintf(stderr, "%s\n", err);
    return 1;
}
