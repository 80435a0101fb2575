/* kernel/cpu/cpu_packed.h — the model's Linear weights packed once for the CPU GEMM, and the forward pass
 * that runs on them.
 *
 * sg_cpu_forward (cpu_encoder.h) packs, runs and frees on every call; the "cpu" backend and the timing tool
 * pack once with sg_cpu_pack_model and call sg_cpu_forward_packed per batch. The pack holds pointers into
 * the sg_model (LayerNorm parameters, biases, positions, probe), so the model must outlive it.
 */
#ifndef SG_CPU_PACKED_H
#define SG_CPU_PACKED_H

#include <stddef.h>
#include "../model.h"
#include "cpu_gemm.h"

typedef struct sg_cpu_layer_pack {
    sg_cpu_wpack qkv; /* [3D, D]: rows 0:D = Wq, D:2D = Wk, 2D:3D = Wv */
    float *qkv_b;     /* [3D] */
    sg_cpu_wpack o, fc1, fc2;
} sg_cpu_layer_pack;

typedef struct sg_cpu_pack {
    const sg_model *m;
    sg_cpu_wpack patch;      /* [D, C*P*P]: the conv weight, flattened in (c, ky, kx) order */
    sg_cpu_layer_pack *layers;
    sg_cpu_wpack head_kv;    /* [2D, D]: in_proj rows D:3D (Wk, Wv) */
    sg_cpu_wpack head_out, head_fc1, head_fc2;
    float *probe_q;          /* [D]: probe · Wqᵀ + bq, the same query for every image */
    float *buf;              /* one allocation holding every packed matrix above */
} sg_cpu_pack;

/* Packs m's weights with `threads` threads (0 = all). Returns NULL with a reason in err on allocation
 * failure or a config the encoder cannot run (checked: positive sizes, D divisible by H, S divisible by P,
 * C = 3). */
sg_cpu_pack *sg_cpu_pack_model(const sg_model *m, int threads, char *err, size_t errlen);

void sg_cpu_pack_free(sg_cpu_pack *pk);

/* sg_cpu_forward on packed weights (same contract). */
int sg_cpu_forward_packed(const sg_cpu_pack *pk, const float *pixel_values, int n, float *pooled,
                          float *last_hidden, int threads, char *err, size_t errlen);

/* One encoder layer's packs, for either tower: the floats they take (each matrix 64-byte aligned), laying
 * them out from p (returns the end), and packing part 0..4 of them (qkv, qkv bias, o, fc1, fc2: five
 * independent tasks, so callers spread layers x parts over threads). */
size_t sg_cpu_layer_pack_floats(int D, int F);
float *sg_cpu_layer_pack_place(sg_cpu_layer_pack *lp, int D, int F, float *p);
void sg_cpu_layer_pack_part(const sg_layer *ly, sg_cpu_layer_pack *lp, int D, int F, int part);

/* threads as the API takes it (0 = all cores) to an OpenMP thread count >= 1. */
int sg_cpu_threads(int threads);

#endif
