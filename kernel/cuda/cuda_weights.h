/* kernel/cuda/cuda_weights.h — the model's weights in the portable backend's device layouts.
 *
 * Converted once at backend creation from the fp32 host tensors of sg_model (usually an mmapped safetensors
 * file): GEMM weights become bf16 [out, in] (q, k, v stacked into one [3D, D] matrix so the projection is a
 * single GEMM); LayerNorm parameters stay fp32; a GEMM's bias takes its output's type (cuBLASLt's rule: bf16 for
 * the qkv / fc1 GEMMs, fp32 for those accumulating into the fp32 residual stream). Two shortcuts, both exact up
 * to fp32 rounding: the conv bias is folded into the position table (pos_b = pos + patch_b), and the pooling
 * head's query, which does not depend on the image, is computed here once (in double).
 */
#ifndef SG_CUDA_WEIGHTS_H
#define SG_CUDA_WEIGHTS_H

#include <cstddef>
#include "cuda_kernels.h"
#include "../model.h"
#include "../text_model.h"

typedef struct sg_cu_layer {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b;   /* [D] */
    sg_bf16 *qkv_w, *qkv_b;                 /* [3D, D], [3D] */
    sg_bf16 *o_w;                           /* [D, D] */
    float *o_b;                             /* [D] */
    sg_bf16 *fc1_w, *fc1_b;                 /* [F, D], [F] */
    sg_bf16 *fc2_w;                         /* [D, F] */
    float *fc2_b;                           /* [D] */
} sg_cu_layer;

typedef struct sg_cu_weights {
    sg_bf16 *patch_w;                       /* [D, C*P*P] */
    float *pos_b;                           /* [T, D] positions + conv bias */
    sg_cu_layer *layers;                    /* [L], host array of device pointers */
    float *post_ln_w, *post_ln_b;           /* [D] */
    float *head_q;                          /* [D]  probe W_q^T + b_q */
    sg_bf16 *head_kv_w, *head_kv_b;         /* [2D, D], [2D] (in_proj rows D..3D) */
    sg_bf16 *head_out_w;                    /* [D, D] */
    float *head_out_b;                      /* [D] */
    float *head_ln_w, *head_ln_b;           /* [D] */
    sg_bf16 *head_fc1_w, *head_fc1_b;       /* [F, D], [F] */
    sg_bf16 *head_fc2_w;                    /* [D, F] */
    float *head_fc2_b;                      /* [D] */
    void *arena;                            /* one device allocation holding all of the above */
    size_t bytes;
} sg_cu_weights;

/* Uploads and converts m's weights on the current device. Returns 0, or -1 with err (out of device memory
 * with the sizes, or a CUDA error). On failure nothing is left allocated. */
int sg_cu_weights_upload(const sg_model *m, sg_cu_weights *w, char *err, size_t errlen);

void sg_cu_weights_free(sg_cu_weights *w);

/* The text tower (kernel/text_model.h) on the device: the layers as above, positions and LayerNorm fp32, the
 * head's weight bf16 and bias fp32 (its GEMM writes fp32). The token table stays on the host: each batch
 * uploads only the rows it uses (cuda_text.cu). */
typedef struct sg_cu_text_weights {
    float *pos;                             /* [T, D] */
    sg_cu_layer *layers;                    /* [L], host array of device pointers */
    float *final_ln_w, *final_ln_b;         /* [D] */
    sg_bf16 *head_w;                        /* [P, D] */
    float *head_b;                          /* [P] */
    void *arena;
    size_t bytes;
} sg_cu_text_weights;

int sg_cu_text_weights_upload(const sg_text_model *m, sg_cu_text_weights *w, char *err, size_t errlen);
void sg_cu_text_weights_free(sg_cu_text_weights *w);

#endif
