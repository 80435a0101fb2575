/* tests/tools/tool_pool.h — what the GPU tools that compare rows across launches share (header-only).
 *
 * sg_backend_stress.c and sg_batch_invariance.c embed a pool of synthetic images one image per batch (the
 * references) and then in batches of other sizes, and compare rows. Both draw from the same xorshift generator,
 * make the pool the same way (a gradient per image plus noise: varied, non-degenerate activations) and open the
 * model and backend the same way; their images and seeds therefore mean the same thing in both.
 */
#ifndef SG_TOOL_POOL_H
#define SG_TOOL_POOL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/backend.h"
#include "weights/model_load.h"

static uint64_t g_tool_rng;

/* Seeds the generator (the same seed gives the same pool and draws). */
static inline void sg_tool_seed(uint64_t seed) { g_tool_rng = seed * 2654435761u + 1; }

static inline uint32_t sg_tool_rnd(void) {
    g_tool_rng ^= g_tool_rng << 13;
    g_tool_rng ^= g_tool_rng >> 7;
    g_tool_rng ^= g_tool_rng << 17;
    return (uint32_t)(g_tool_rng >> 32);
}

/* Fills pool with n images of S x S x 3 bytes. */
static inline void sg_tool_make_pool(uint8_t *pool, int n, int S) {
    const size_t img = (size_t)S * S * 3;
    for (int p = 0; p < n; p++)
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++)
                for (int c = 0; c < 3; c++)
                    pool[p * img + ((size_t)y * S + x) * 3 + c] =
                        (uint8_t)((x * (p + 1 + c) + y * (7 * c + 3) + p * 37 + (int)(sg_tool_rnd() % 48)) & 255);
}

/* Loads the weights and creates backend `name` (BACKEND or BACKEND:PRECISION, e.g. sm90:fp8) for batches up to
 * max_batch. 0, or the tool's exit status with the reason on stderr: 1 bad backend name or weights, 2 the backend
 * cannot be created ("unavailable: ..."). */
static inline int sg_tool_open(const char *weights, const char *name, int max_batch, sg_model **m, sg_backend **b) {
    sg_backend_opts o = {SG_BACKEND_AUTO, 0, max_batch, 0, SG_PRECISION_AUTO};
    *m = NULL;
    *b = NULL;
    if (sg_backend_parse_spec(name, &o.kind, &o.precision) != 0) {
        fprintf(stderr, "unknown backend '%s' (BACKEND or BACKEND:fp8 / :bf16)\n", name);
        return 1;
    }
    char err[2048], why[1024];
    if (!(*m = sg_model_load(weights, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (!(*b = sg_backend_create(*m, &o, why, sizeof why, err, sizeof err))) {
        fprintf(stderr, "unavailable: %s\n", err);
        sg_model_free(*m);
        *m = NULL;
        return 2;
    }
    return 0;
}

#endif
