/* weights/text_load.c — checkpoint -> sg_text_model (contract in text_load.h).
 *
 * Order of checks, so the first message is the useful one: the checkpoint opens (checkpoint.c); config.json
 * describes a text tower (a SiglipVisionModel config says it has none); the weights hold at least one
 * "text_model." tensor (else: a vision-only file, say so); then every tensor the config implies, by name and
 * shape. Text tensors the config does not use mean config and weights disagree: an error, as for vision.
 */
#include "text_load.h"
#include "checkpoint.h"
#include "config.h"
#include "safetensors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TL_PREFIX "text_model."

static void tl_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int tl_is_text_name(const char *n) {
    return !strncmp(n, TL_PREFIX, strlen(TL_PREFIX)) || !strcmp(n, "logit_scale") || !strcmp(n, "logit_bias");
}

/* Rows of the table in its own dtype, widened one row at a time (sg_st_widen copies F32 at any alignment). */
static void tl_token_rows(const sg_text_model *m, const int32_t *ids, size_t n, float *out) {
    const size_t D = (size_t)m->cfg.hidden_size, es = sg_st_dtype_size((sg_st_dtype)m->token_dtype);
    const uint8_t *t = m->token_table;
    for (size_t i = 0; i < n; i++)
        sg_st_widen((sg_st_dtype)m->token_dtype, t + (size_t)ids[i] * D * es, out + i * D, D);
}

/* A [1] tensor (logit_scale, logit_bias) into *out. 1 bound, 0 absent, -1 (message) wrong shape. */
static int tl_scalar(sg_ckpt *c, const char *name, float *out) {
    const sg_st_tensor *t;
    int f = 0;
    if (sg_ckpt_lookup(c, "", 0, name, &t, &f)) return -1;
    if (!t) return 0;
    const float *v;
    if (sg_ckpt_bind(c, &v, "", 0, name, 1, 1, 0, 0, 0)) return -1;
    *out = v[0];
    return 1;
}

/* The tower's bind (sg_ckpt_tower). */
static int tl_bind_all(sg_ckpt *c, void *model, char *err, size_t errlen) {
    sg_text_model *m = model;
    const char *note = sg_ckpt_note(c);
    const sg_text_config *k = &m->cfg;
    const int64_t V = k->vocab_size, D = k->hidden_size, F = k->intermediate_size, T = k->max_positions;
    const int64_t P = k->projection_size;
    const sg_st_tensor *t;
    int f = 0;
    if (sg_ckpt_lookup(c, TL_PREFIX, 0, "embeddings.token_embedding.weight", &t, &f)) return -1;
    if (!t) {
        int any_text = 0;
        const sg_st_tensor *u = sg_ckpt_first_unused(c, tl_is_text_name, &f);
        any_text = u != NULL;
        if (!any_text)
            tl_fail(err, errlen,
                    "%s: no text tower: the file holds no 'text_model.*' tensor (a vision-only checkpoint, e.g. "
                    "saved from SiglipVisionModel); text queries need a full SiglipModel checkpoint such as "
                    "google/siglip2-base-patch16-224%s",
                    sg_ckpt_where(c), note);
        else
            tl_fail(err, errlen, "%s: tensor '" TL_PREFIX "embeddings.token_embedding.weight' not found: expected "
                                 "shape [%lld, %lld] (F32, F16 or BF16)%s",
                    sg_ckpt_where(c), (long long)V, (long long)D, note);
        return -1;
    }
    if (t->ndim != 2 || t->shape[0] != V || t->shape[1] != D) {
        char fs[128] = "[";
        for (int i = 0; i < t->ndim; i++)
            snprintf(fs + strlen(fs), sizeof fs - strlen(fs), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        tl_fail(err, errlen, "%s: tensor '%s': shape [%lld, %lld] expected, found %s] (%s)%s", sg_ckpt_file_label(c, f),
                t->name, (long long)V, (long long)D, fs, sg_st_dtype_name(t->dtype), note);
        return -1;
    }
    sg_ckpt_mark(c, f, t);
    m->token_table = t->data;
    m->token_dtype = (int)t->dtype;
    m->token_rows = tl_token_rows;
    if (sg_ckpt_bind(c, &m->pos, TL_PREFIX, 0, "embeddings.position_embedding.weight", 2, T, D, 0, 0) ||
        sg_ckpt_bind_layers(c, TL_PREFIX, 0, m->layers, k->num_layers, D, F) ||
        sg_ckpt_bind(c, &m->final_ln_w, TL_PREFIX, 0, "final_layer_norm.weight", 1, D, 0, 0, 0) ||
        sg_ckpt_bind(c, &m->final_ln_b, TL_PREFIX, 0, "final_layer_norm.bias", 1, D, 0, 0, 0) ||
        sg_ckpt_bind(c, &m->head_w, TL_PREFIX, 0, "head.weight", 2, P, D, 0, 0) ||
        sg_ckpt_bind(c, &m->head_b, TL_PREFIX, 0, "head.bias", 1, P, 0, 0, 0))
        return -1;
    int rs = tl_scalar(c, "logit_scale", &m->logit_scale), rb = tl_scalar(c, "logit_bias", &m->logit_bias);
    if (rs < 0 || rb < 0) return -1;
    m->has_logit = rs == 1 && rb == 1;
    return sg_ckpt_refuse_unused(c, tl_is_text_name, "text", k->num_layers, err, errlen);
}

static int tl_config(void *model, const char *cfg_path, int *num_layers, char *err, size_t errlen) {
    sg_text_model *m = model;
    if (cfg_path) {
        if (sg_text_config_load_file(cfg_path, &m->cfg, err, errlen)) return -1;
    } else {
        m->cfg = sg_text_config_default();
    }
    *num_layers = m->cfg.num_layers;
    return 0;
}

static const sg_ckpt_tower tl_tower = {tl_is_text_name, "SiglipTextConfig", tl_config, tl_bind_all};

sg_text_model *sg_text_model_load(const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    sg_text_model *m = calloc(1, sizeof *m);
    if (!m) {
        tl_fail(err, errlen, "out of memory");
        return NULL;
    }
    sg_ckpt_slots s = {m->path, sizeof m->path, &m->layers, &m->storage};
    if (sg_ckpt_load_tower(path, &tl_tower, m, s, err, errlen)) {
        free(m);
        return NULL;
    }
    return m;
}

void sg_text_model_free(sg_text_model *m) {
    if (!m) return;
    sg_ckpt_storage_free(m->storage);
    free(m->layers);
    free(m);
}

/* DIR/name, DIR being path when it is a directory, else the directory holding the file. 0, or -1 + message. */
static int tl_beside(const char *path, const char *name, char *out, size_t outlen, char *err, size_t errlen) {
    struct stat sb;
    char dir[4096];
    if (!path || strlen(path) >= sizeof dir) {
        tl_fail(err, errlen, "no weights path, or one too long, to find %s beside", name);
        return -1;
    }
    snprintf(dir, sizeof dir, "%s", path);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            dir[1] = 0;
        else if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
    }
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen) {
        tl_fail(err, errlen, "%s: path too long", dir);
        return -1;
    }
    return 0;
}

int sg_text_tokenizer_path(const char *path, char *out, size_t outlen, char *err, size_t errlen) {
    struct stat sb;
    if (tl_beside(path, "tokenizer.json", out, outlen, err, errlen) != 0) return -1;
    if (stat(out, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(strlen(out) - strlen("/tokenizer.json")), out);
        tl_fail(err, errlen,
                "no tokenizer.json beside the weights (looked for %s): text queries need the checkpoint's "
                "tokenizer (hf download google/siglip2-base-patch16-224 tokenizer.json tokenizer_config.json --local-dir %s)",
                out, dir);
        return -1;
    }
    return 0;
}

int sg_text_mask_rule(const char *path, int *attention_mask, char *why, size_t whylen, char *err, size_t errlen) {
    char cfg[4200];
    struct stat sb;
    if (tl_beside(path, "tokenizer_config.json", cfg, sizeof cfg, err, errlen) != 0) return -1;
    if (stat(cfg, &sb) != 0 && errno == ENOENT) { /* HF then uses the tokenizer class's default */
        *attention_mask = 1;
        snprintf(why, whylen, "no %s: the tokenizer class default model_input_names [input_ids, attention_mask] "
                 "applies, pad positions are masked", cfg);
        return 0;
    }
    int mask = 1;
    if (sg_tokenizer_config_load_file(cfg, &mask, err, errlen) != 0) return -1;
    *attention_mask = mask;
    snprintf(why, whylen, mask ? "%s: the tokenizer returns an attention mask (model_input_names has "
                                 "attention_mask, or the class default applies): pad positions are masked"
                               : "%s: model_input_names without attention_mask: the tokenizer returns input_ids only, "
                                 "every position is attended, pads included",
             cfg);
    return 0;
}
