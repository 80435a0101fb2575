/* weights/model_load.c — checkpoint -> sg_model (contract in model_load.h).
 *
 * A load (checkpoint.c's sg_ckpt_load_tower, given this tower's config and bind) is: open the checkpoint (a
 * directory with model.safetensors or a sharded model.safetensors.index.json, or one .safetensors file;
 * config.json beside them if present, else the SiglipVisionConfig defaults), then bind every tensor the config
 * implies (model-spec.md §4) by name, with or without the "vision_model." prefix, checking shape and dtype. F32
 * tensors aligned to 4 bytes are used in place from the mapping; F16/BF16 (and unaligned F32) are widened into
 * owned buffers. Text-tower tensors are never looked at (text_load.c binds them); a vision tensor the config does
 * not use (e.g. layer 12 of a file whose config says 12 layers) is an error, because it means config and weights
 * disagree.
 */
#include "model_load.h"
#include "config.h"
#include "checkpoint.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ML_PREFIX "vision_model."

static void ml_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int ml_is_text_name(const char *n) {
    return !strncmp(n, "text_model.", 11) || !strcmp(n, "logit_scale") || !strcmp(n, "logit_bias");
}

static int ml_wants(const char *n) { return !ml_is_text_name(n); }

/* Binds the tensor called name (without prefix) of the given shape into *dst. */
static int ml_bind(sg_ckpt *c, const float **dst, const char *name, int nd, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3) {
    return sg_ckpt_bind(c, dst, ML_PREFIX, 1, name, nd, d0, d1, d2, d3);
}

/* A name in the vision tower's namespace (prefixed or not); text tensors and anything else are not ours. */
static int ml_is_vision_name(const char *n) {
    static const char *roots[] = {ML_PREFIX, "embeddings.", "encoder.", "post_layernorm.", "head."};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
        if (!strncmp(n, roots[i], strlen(roots[i]))) return 1;
    return 0;
}

/* The tower's bind (sg_ckpt_tower). */
static int ml_bind_all(sg_ckpt *c, void *model, char *err, size_t errlen) {
    sg_model *m = model;
    const sg_config *k = &m->cfg;
    int64_t D = k->hidden_size, F = k->intermediate_size, C = k->num_channels, P = k->patch_size;
    int64_t T = sg_config_tokens(k);
    int ok = !ml_bind(c, &m->patch_w, "embeddings.patch_embedding.weight", 4, D, C, P, P) &&
             !ml_bind(c, &m->patch_b, "embeddings.patch_embedding.bias", 1, D, 0, 0, 0) &&
             !ml_bind(c, &m->pos, "embeddings.position_embedding.weight", 2, T, D, 0, 0);
    ok = ok && !sg_ckpt_bind_layers(c, ML_PREFIX, 1, m->layers, k->num_layers, D, F);
    ok = ok && !ml_bind(c, &m->post_ln_w, "post_layernorm.weight", 1, D, 0, 0, 0) &&
         !ml_bind(c, &m->post_ln_b, "post_layernorm.bias", 1, D, 0, 0, 0) &&
         !ml_bind(c, &m->probe, "head.probe", 3, 1, 1, D, 0) &&
         !ml_bind(c, &m->head_in_w, "head.attention.in_proj_weight", 2, 3 * D, D, 0, 0) &&
         !ml_bind(c, &m->head_in_b, "head.attention.in_proj_bias", 1, 3 * D, 0, 0, 0) &&
         !ml_bind(c, &m->head_out_w, "head.attention.out_proj.weight", 2, D, D, 0, 0) &&
         !ml_bind(c, &m->head_out_b, "head.attention.out_proj.bias", 1, D, 0, 0, 0) &&
         !ml_bind(c, &m->head_ln_w, "head.layernorm.weight", 1, D, 0, 0, 0) &&
         !ml_bind(c, &m->head_ln_b, "head.layernorm.bias", 1, D, 0, 0, 0) &&
         !ml_bind(c, &m->head_fc1_w, "head.mlp.fc1.weight", 2, F, D, 0, 0) &&
         !ml_bind(c, &m->head_fc1_b, "head.mlp.fc1.bias", 1, F, 0, 0, 0) &&
         !ml_bind(c, &m->head_fc2_w, "head.mlp.fc2.weight", 2, D, F, 0, 0) &&
         !ml_bind(c, &m->head_fc2_b, "head.mlp.fc2.bias", 1, D, 0, 0, 0);
    if (!ok) return -1;
    return sg_ckpt_refuse_unused(c, ml_is_vision_name, "vision", k->num_layers, err, errlen);
}

static int ml_config(void *model, const char *cfg_path, int *num_layers, char *err, size_t errlen) {
    sg_model *m = model;
    if (cfg_path) {
        if (sg_config_load_file(cfg_path, &m->cfg, err, errlen)) return -1;
    } else {
        m->cfg = sg_config_default();
    }
    *num_layers = m->cfg.num_layers;
    return 0;
}

static const sg_ckpt_tower ml_tower = {ml_wants, "SiglipVisionConfig", ml_config, ml_bind_all};

/* ---- public ----------------------------------------------------------------------------------------- */

sg_model *sg_model_load(const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    sg_model *m = calloc(1, sizeof *m);
    if (!m) {
        ml_fail(err, errlen, "out of memory");
        return NULL;
    }
    sg_ckpt_slots s = {m->path, sizeof m->path, &m->layers, &m->storage};
    if (sg_ckpt_load_tower(path, &ml_tower, m, s, err, errlen)) {
        free(m);
        return NULL;
    }
    return m;
}

void sg_model_free(sg_model *m) {
    if (!m) return;
    sg_ckpt_storage_free(m->storage);
    free(m->layers);
    free(m);
}
