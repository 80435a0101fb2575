/* kernel/text_model.h — the SigLIP text tower as every backend sees it.
 *
 * HF's SiglipTextModel (transformers modeling_siglip.py) for get_text_features: token embedding + position
 * embedding (T = max_position_embeddings = 64 positions, every sequence padded to T), L pre-LN encoder layers
 * with exactly the vision tower's structure (sg_layer, so the backends' layer code serves both towers) and
 * no causal mask, final LayerNorm, then the head Linear on the LAST position's state (index T-1, which is a
 * pad token for short queries: HF takes last_hidden_state[:, -1, :]). Attention sees the tokenizer's
 * attention mask when the tokenizer returns one (its model_input_names, from tokenizer_config.json or the class
 * default; get_text_features / the zero-shot pipeline pass on what it returns): padded keys are then masked out
 * (query rows, pads included, still run). google/siglip2-base-patch16-224's tokenizer returns none, so every
 * position attends to all T, pads included (weights/text_load.h sg_text_mask_rule decides; docs/text.md §1).
 * The mask is given per sequence as a byte per position (1 = attend), or not at all (NULL: all attended).
 *
 * The token embedding table (256k x 768 for SigLIP2: 786 MB in F32) is never converted or copied as a whole:
 * it stays in the checkpoint's mapping in its own dtype and the rows a batch needs are widened by
 * token_rows. Everything else is fp32 host tensors like sg_model's (F32 in place, F16/BF16 widened at load).
 *
 * Shape legend: V = vocab_size, D = hidden_size, F = intermediate_size, H = heads, Dh = D / H,
 * L = layers, T = max_position_embeddings, P = projection_size (the joint embedding width = vision D).
 */
#ifndef SG_TEXT_MODEL_H
#define SG_TEXT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sg_text_config {
    int vocab_size;           /* V: 256000 for SigLIP2 (Gemma's vocabulary) */
    int hidden_size;          /* D, 768 */
    int intermediate_size;    /* F, 3072 */
    int num_heads;            /* H, 12 */
    int num_layers;           /* L, 12 */
    int max_positions;        /* T, 64: every sequence is padded (or truncated) to this length */
    int projection_size;      /* P: the head's output width; defaults to hidden_size */
    float layer_norm_eps;     /* 1e-6 */
    sg_activation activation; /* SG_ACT_GELU_TANH */
} sg_text_config;

/* The SiglipTextConfig defaults (transformers configuration_siglip.py); fields absent from config.json's
 * text_config take these values (projection_size: hidden_size). */
static inline sg_text_config sg_text_config_default(void) {
    sg_text_config c = {32000, 768, 3072, 12, 12, 64, 768, 1e-6f, SG_ACT_GELU_TANH};
    return c;
}

typedef struct sg_text_model {
    sg_text_config cfg;
    /* Writes the fp32 token embedding rows ids[0..n) to out [n, D]. ids must be in [0, V) (callers check:
     * sg_text_ids_check). Thread-safe; reads only the rows asked for. */
    void (*token_rows)(const struct sg_text_model *m, const int32_t *ids, size_t n, float *out);
    const void *token_table;                /* [V, D] in token_dtype (weights/ owns the meaning) */
    int token_dtype;
    const float *pos;                       /* [T, D]  position_embedding.weight */
    sg_layer *layers;                       /* [L] */
    const float *final_ln_w, *final_ln_b;   /* [D] */
    const float *head_w, *head_b;           /* [P, D], [P] */
    int has_logit;                          /* 1: logit_scale / logit_bias were in the checkpoint */
    float logit_scale, logit_bias;          /* zero-shot: sigmoid(exp(logit_scale) * cos + logit_bias) */
    char path[1024];                        /* the .safetensors file (or index) the weights came from */
    void *storage;                          /* owned by weights/ */
} sg_text_model;

/* -1 when every id of ids[0..n) is in [0, V), else the index of the first that is not. */
static inline long sg_text_ids_check(const sg_text_model *m, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size) return (long)i;
    return -1;
}

#ifdef __cplusplus
}
#endif
#endif
