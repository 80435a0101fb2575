/* kernel/model.h — the SigLIP vision model as every backend sees it.
 *
 * One config struct (the fields of transformers' SiglipVisionConfig that change the forward pass) and one
 * weights struct of fp32 host tensors, laid out exactly as in the checkpoint (Linear weights [out, in],
 * row-major). The weights/ module fills these from a safetensors file; kernel/cpu computes from them
 * directly, the GPU backends convert them once into their own device layouts.
 *
 * Shape legend used throughout the project:
 *   D = hidden_size, F = intermediate_size, H = num_heads, Dh = D / H, L = num_layers,
 *   C = num_channels, S = image_size, P = patch_size, G = S / P, T = G * G tokens (no CLS token).
 */
#ifndef SG_MODEL_H
#define SG_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Activation of the MLPs. SigLIP uses the tanh approximation ("gelu_pytorch_tanh"); "gelu" (erf) is
 * accepted because some re-exports of the checkpoint name it. */
typedef enum { SG_ACT_GELU_TANH = 0, SG_ACT_GELU_ERF = 1 } sg_activation;

typedef struct sg_config {
    int hidden_size;          /* D, 768 for base */
    int intermediate_size;    /* F, 3072 */
    int num_heads;            /* H, 12 */
    int num_layers;           /* L, 12 */
    int num_channels;         /* C, 3 (only 3 is supported: inputs are RGB) */
    int image_size;           /* S, 224 */
    int patch_size;           /* P, 16 */
    float layer_norm_eps;     /* 1e-6 */
    sg_activation activation; /* SG_ACT_GELU_TANH */
} sg_config;

/* The SiglipVisionConfig defaults (transformers configuration_siglip.py); fields absent from config.json
 * take these values. */
static inline sg_config sg_config_default(void) {
    sg_config c = {768, 3072, 12, 12, 3, 224, 16, 1e-6f, SG_ACT_GELU_TANH};
    return c;
}
static inline int sg_config_grid(const sg_config *c) { return c->image_size / c->patch_size; }   /* G */
static inline int sg_config_tokens(const sg_config *c) { return sg_config_grid(c) * sg_config_grid(c); } /* T */
static inline int sg_config_head_dim(const sg_config *c) { return c->hidden_size / c->num_heads; } /* Dh */
/* Length of one flattened patch in (c, ky, kx) order: C * P * P. */
static inline int sg_config_patch_dim(const sg_config *c) {
    return c->num_channels * c->patch_size * c->patch_size;
}

/* One pre-LN encoder block. */
typedef struct sg_layer {
    const float *ln1_w, *ln1_b;             /* [D] */
    const float *q_w, *q_b;                 /* [D, D], [D] */
    const float *k_w, *k_b;                 /* [D, D], [D] */
    const float *v_w, *v_b;                 /* [D, D], [D] */
    const float *o_w, *o_b;                 /* [D, D], [D]  (self_attn.out_proj) */
    const float *ln2_w, *ln2_b;             /* [D] */
    const float *fc1_w, *fc1_b;             /* [F, D], [F] */
    const float *fc2_w, *fc2_b;             /* [D, F], [D] */
} sg_layer;

typedef struct sg_model {
    sg_config cfg;
    const float *patch_w;                   /* [D, C, P, P]  Conv2d weight */
    const float *patch_b;                   /* [D] */
    const float *pos;                       /* [T, D]  position_embedding.weight */
    sg_layer *layers;                       /* [L] */
    const float *post_ln_w, *post_ln_b;     /* [D] */
    /* MAP pooling head (SiglipMultiheadAttentionPoolingHead) */
    const float *probe;                     /* [D]  (stored [1, 1, D]) */
    const float *head_in_w, *head_in_b;     /* [3D, D], [3D]  rows 0:D = Wq, D:2D = Wk, 2D:3D = Wv */
    const float *head_out_w, *head_out_b;   /* [D, D], [D] */
    const float *head_ln_w, *head_ln_b;     /* [D] */
    const float *head_fc1_w, *head_fc1_b;   /* [F, D], [F] */
    const float *head_fc2_w, *head_fc2_b;   /* [D, F], [D] */
    char path[1024];                        /* the .safetensors file the weights came from */
    void *storage;                          /* owned by weights/: mapping and converted buffers */
} sg_model;

/* Pixel normalisation of the HF SiglipImageProcessor, bit for bit: x = float32(p * (1/255) in double),
 * then (x - 0.5f) / 0.5f in float32 (model-spec.md §2). Every backend uses this for uint8 input. */
static inline float sg_pixel_to_float(uint8_t p) {
    float x = (float)((double)p * (1.0 / 255.0));
    return (x - 0.5f) / 0.5f;
}

#ifdef __cplusplus
}
#endif
#endif
