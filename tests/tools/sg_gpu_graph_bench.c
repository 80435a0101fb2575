/* tests/tools/sg_gpu_graph_bench.c — the cuda backend's encoder time with pixels already on the GPU.
 *
 *   sg_gpu_graph_bench WEIGHTS BATCH[,BATCH...] [BACKEND]
 *
 * BACKEND: cuda (default: the portable encoder layers), sm90, sm90:fp8 (FC1 in FP8) or sm100 (that megakernel's
 * layers inside the same graph, with the same patch embedding and head).
 * One JSON line per batch size: the median of CUDA-event-timed replays of the forward's CUDA graph, the way
 * scripts/hf_bench.py times HF (no host staging, no copies); with SG_GRAPH_SUSTAIN=S (below) the sustained rate,
 * and the line says "sustained_s". sg_gpu_bench times the backend API instead (with uploads). The timing function
 * lives in kernel/cuda/cuda_backend.cu and is a weak reference here, so this tool also links in a build without
 * CUDA, where it says so and exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/gpu.h"
#include "kernel/model.h"
#include "weights/model_load.h"
#include "tests/check.h"

int sg_cuda_time_graph(const sg_model *m, int device, const char *backend, int n, int iters, double sustain_s,
                       double *median_ms, char *err, size_t errlen) __attribute__((weak));

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s WEIGHTS BATCH[,BATCH...] [cuda|sm90|sm90:fp8|sm100]\n", argv[0]);
        return 1;
    }
    /* Naming the cuda backend's constructor makes the linker take its object from the library, and with it
     * sg_cuda_time_graph (a weak reference alone pulls nothing out of an archive). */
    sg_backend *(*volatile keep)(const sg_model *, const sg_backend_opts *, char *, size_t) = sg_cuda_backend_create;
    (void)keep;
    if (!sg_cuda_time_graph) {
        fprintf(stderr, "unavailable: built without CUDA\n");
        return 2;
    }
    char err[2048];
    sg_model *m = sg_model_load(argv[1], err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const char *backend = argc == 4 ? argv[3] : "cuda";
    /* SG_GRAPH_SUSTAIN=S: S seconds of back-to-back replays before the timed ones, which then span S seconds too:
     * the rate with the clock where the power limit holds it under continuous load (the default short run's first
     * second can run a higher clock: docs/perf-notes.md, session 26). */
    const char *su = getenv("SG_GRAPH_SUSTAIN");
    const double sustain = su ? atof(su) : 0;
    if (sustain < 0 || (sustain > 0 && getenv("SG_GRAPH_WINDOW"))) {
        fprintf(stderr, "SG_GRAPH_SUSTAIN: seconds >= 0, and not with SG_GRAPH_WINDOW (whose replay count it "
                        "varies)\n");
        sg_model_free(m);
        return 1;
    }
    int rc = 0;
    for (char *s = strtok(argv[2], ","); s; s = strtok(NULL, ",")) {
        const int n = atoi(s);
        /* replays: enough for a stable median without spending more than a couple of seconds at n = 1024;
         * SG_GRAPH_ITERS overrides (scripts/energy_trace.py's runs: two counts, whose energies differ by the
         * extra replays alone) */
        const char *it = getenv("SG_GRAPH_ITERS");
        const int iters = it && atoi(it) > 0 ? atoi(it) : n <= 1 ? 200 : n <= 32 ? 50 : n <= 256 ? 20 : 10;
        double ms = 0;
        const double w0 = sg_test_clock_s(CLOCK_REALTIME);
        if (n < 1 || sg_cuda_time_graph(m, 0, backend, n, iters, sustain, &ms, err, sizeof err) != 0) {
            fprintf(stderr, "batch %s: %s\n", s, n < 1 ? "bad batch size" : err);
            rc = 1;
            continue;
        }
        const double w1 = sg_test_clock_s(CLOCK_REALTIME);
        printf("{\"backend\": \"%s-graph\", \"batch\": %d, \"latency_ms\": %.4f, \"img_s\": %.1f", backend, n, ms,
               n / ms * 1e3);
        if (sustain > 0) printf(", \"sustained_s\": %g", sustain);
        printf("}\n");
        if (getenv("SG_GRAPH_WINDOW"))  /* the whole call (set-up, capture, replays): WINDOW NAME T0 T1 REPLAYS 0 */
            printf("WINDOW %s-%d-x%d %.6f %.6f %d 0\n", backend, n, iters, w0, w1, iters);
        fflush(stdout);
    }
    sg_model_free(m);
    return rc;
}
