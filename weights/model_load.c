/* weights/model_load.c — checkpoint -> sg_model (contract in model_load.h).
 *
 * A load is: decide the files (a directory with model.safetensors or a sharded model.safetensors.index.json,
 * or one .safetensors file; config.json beside them if present, else the SiglipVisionConfig defaults), open
 * each safetensors file with the strict reader, then bind every tensor the config implies (model-spec.md §4)
 * by name, with or without the "vision_model." prefix, checking shape and dtype. F32 tensors aligned to 4
 * bytes are used in place from the mapping; F16/BF16 (and unaligned F32) are widened into owned buffers.
 * Text-tower tensors are never looked at; a vision tensor the config does not use (e.g. layer 12 of a file
 * whose config says 12 layers) is an error, because it means config and weights disagree.
 */
#include "model_load.h"
#include "config.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ML_PREFIX "vision_model."

/* What sg_model.storage points at: the open files (mappings) and the buffers of converted tensors. */
typedef struct ml_storage {
    sg_st_file **files;
    int n_files;
    float **bufs;
    size_t n_bufs, cap_bufs;
} ml_storage;

/* State of one load, for messages and binding. */
typedef struct ml_ctx {
    ml_storage *st;
    const char *cfg_note; /* where the config came from, appended to shape errors */
    const char *where;    /* the weights file (or index) named in "not found" errors */
    char *err;
    size_t errlen;
    unsigned char **used; /* used[f][i]: tensor i of file f was bound */
} ml_ctx;

static void ml_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int ml_is_file(const char *p) {
    struct stat sb;
    return p && !stat(p, &sb) && S_ISREG(sb.st_mode);
}

static int ml_is_dir(const char *p) {
    struct stat sb;
    return p && !stat(p, &sb) && S_ISDIR(sb.st_mode);
}

static int ml_ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* dir/name into out; -1 when it does not fit. */
static int ml_join(char *out, size_t len, const char *dir, const char *name) {
    int n = snprintf(out, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void ml_shape_str(const int64_t *s, int nd, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* ---- storage -------------------------------------------------------------------------------------- */

static void ml_storage_free(ml_storage *s) {
    if (!s) return;
    for (int i = 0; i < s->n_files; i++)
        sg_st_close(s->files[i]);
    free(s->files);
    for (size_t i = 0; i < s->n_bufs; i++)
        free(s->bufs[i]);
    free(s->bufs);
    free(s);
}

static float *ml_alloc_buf(ml_storage *s, size_t n_floats) {
    if (s->n_bufs == s->cap_bufs) {
        size_t cap = s->cap_bufs ? 2 * s->cap_bufs : 64;
        float **nb = realloc(s->bufs, cap * sizeof *nb);
        if (!nb) return NULL;
        s->bufs = nb;
        s->cap_bufs = cap;
    }
    float *b = malloc(n_floats ? n_floats * sizeof(float) : 1);
    if (b) s->bufs[s->n_bufs++] = b;
    return b;
}

static int ml_add_file(ml_storage *s, sg_st_file *f) {
    sg_st_file **nf = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *nf);
    if (!nf) return -1;
    s->files = nf;
    s->files[s->n_files++] = f;
    return 0;
}

/* ---- sharded checkpoints ---------------------------------------------------------------------------- */

/* A shard named in an index must be a plain file name beside the index: no directories, no "..". */
static int ml_shard_name_ok(const char *s) {
    return *s && strlen(s) < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int ml_is_text_name(const char *n) {
    return !strncmp(n, "text_model.", 11) || !strcmp(n, "logit_scale") || !strcmp(n, "logit_bias");
}

/* Opens every shard the index names for a non-text tensor. */
static int ml_open_index(ml_storage *s, const char *index_path, const char *dir, char *err, size_t errlen) {
    FILE *fp = fopen(index_path, "rb");
    if (!fp) {
        ml_fail(err, errlen, "%s: cannot open: %s", index_path, strerror(errno));
        return -1;
    }
    /* Real indexes are tens of KB (one line per tensor); 64 MB bounds a hostile one. */
    size_t cap = 64u << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, fp) : 0;
    fclose(fp);
    if (!buf) {
        ml_fail(err, errlen, "%s: out of memory", index_path);
        return -1;
    }
    if (n > cap) {
        free(buf);
        ml_fail(err, errlen, "%s: larger than 64 MB", index_path);
        return -1;
    }
    buf[n] = 0;
    /* a real index has ~3 values per tensor; 4M bounds cJSON's memory as the safetensors reader does */
    if (sg_json_values_bound(buf, n) > 4000000u) {
        free(buf);
        ml_fail(err, errlen, "%s: too many JSON values for a weight index", index_path);
        return -1;
    }
    cJSON *root = cJSON_ParseWithLength(buf, n);
    free(buf);
    int rc = -1;
    const cJSON *wm = NULL;
    if (!root || !cJSON_IsObject(root)) {
        ml_fail(err, errlen, "%s: not a JSON object", index_path);
        goto done;
    }
    for (const cJSON *c = root->child; c; c = c->next)
        if (!strcmp(c->string, "weight_map")) wm = c;
    if (!wm || !cJSON_IsObject(wm)) {
        ml_fail(err, errlen, "%s: no \"weight_map\" object", index_path);
        goto done;
    }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (ml_is_text_name(e->string)) continue;
        if (!cJSON_IsString(e) || !ml_shard_name_ok(e->valuestring)) {
            ml_fail(err, errlen, "%s: weight_map['%.200s'] is not a plain file name beside the index", index_path,
                    e->string);
            goto done;
        }
        int seen = 0;
        for (int i = 0; i < s->n_files && !seen; i++) {
            const char *l = s->files[i]->label, *slash = strrchr(l, '/');
            seen = !strcmp(slash ? slash + 1 : l, e->valuestring);
        }
        if (seen) continue;
        char p[4096];
        if (ml_join(p, sizeof p, dir, e->valuestring)) {
            ml_fail(err, errlen, "%s: shard path too long", index_path);
            goto done;
        }
        sg_st_file *f = sg_st_open(p, err, errlen);
        if (!f) goto done;
        if (ml_add_file(s, f)) {
            sg_st_close(f);
            ml_fail(err, errlen, "%s: out of memory", index_path);
            goto done;
        }
    }
    if (s->n_files == 0) {
        ml_fail(err, errlen, "%s: weight_map names no vision tensor", index_path);
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

/* ---- binding ------------------------------------------------------------------------------------------ */

/* Finds name (without prefix) as "vision_model.<name>" or "<name>" across the open files. */
static int ml_lookup(ml_ctx *c, const char *name, const sg_st_tensor **out, int *file_idx) {
    char full[512];
    snprintf(full, sizeof full, ML_PREFIX "%s", name);
    const sg_st_tensor *hit = NULL;
    const char *hit_file = NULL;
    for (int f = 0; f < c->st->n_files; f++) {
        const char *cands[2] = {full, name};
        for (int k = 0; k < 2; k++) {
            const sg_st_tensor *t = sg_st_find(c->st->files[f], cands[k]);
            if (!t) continue;
            if (hit) {
                ml_fail(c->err, c->errlen, "%s: tensor '%s' is present twice (as '%s' in %s and '%s' in %s)",
                        c->st->files[f]->label, name, hit->name, hit_file, t->name, c->st->files[f]->label);
                return -1;
            }
            hit = t;
            hit_file = c->st->files[f]->label;
            *file_idx = f;
        }
    }
    *out = hit;
    return 0;
}

/* Binds the tensor called name (without prefix) of the given shape into *dst. */
static int ml_bind(ml_ctx *c, const float **dst, const char *name, int nd, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3) {
    int64_t want[4] = {d0, d1, d2, d3};
    char ws[128], fs[256];
    ml_shape_str(want, nd, ws, sizeof ws);
    const sg_st_tensor *t = NULL;
    int fi = 0;
    if (ml_lookup(c, name, &t, &fi)) return -1;
    if (!t) {
        ml_fail(c->err, c->errlen,
                "%s: tensor '" ML_PREFIX "%s' (or '%s') not found: expected shape %s (F32, F16 or BF16)%s", c->where,
                name, name, ws, c->cfg_note);
        return -1;
    }
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++)
        same = t->shape[i] == want[i];
    if (!same) {
        ml_shape_str(t->shape, t->ndim, fs, sizeof fs);
        ml_fail(c->err, c->errlen, "%s: tensor '%s': shape %s expected, found %s (%s)%s", c->st->files[fi]->label,
                t->name, ws, fs, sg_st_dtype_name(t->dtype), c->cfg_note);
        return -1;
    }
    c->used[fi][t - c->st->files[fi]->tensors] = 1;
    size_t n = (size_t)(t->nbytes / sg_st_dtype_size(t->dtype));
    if (t->dtype == SG_ST_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
        *dst = (const float *)(const void *)t->data;
        return 0;
    }
    float *b = ml_alloc_buf(c->st, n);
    if (!b) {
        ml_fail(c->err, c->errlen, "%s: tensor '%s': out of memory for %zu floats", c->st->files[fi]->label, t->name,
                n);
        return -1;
    }
    sg_st_widen(t->dtype, t->data, b, n); /* F16/BF16 widened, unaligned F32 copied */
    *dst = b;
    return 0;
}

/* A name in the vision tower's namespace (prefixed or not); text tensors and anything else are not ours. */
static int ml_is_vision_name(const char *n) {
    static const char *roots[] = {ML_PREFIX, "embeddings.", "encoder.", "post_layernorm.", "head."};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
        if (!strncmp(n, roots[i], strlen(roots[i]))) return 1;
    return 0;
}

static int ml_bind_all(ml_ctx *c, sg_model *m) {
    const sg_config *k = &m->cfg;
    int64_t D = k->hidden_size, F = k->intermediate_size, C = k->num_channels, P = k->patch_size;
    int64_t T = sg_config_tokens(k);
    int ok = !ml_bind(c, &m->patch_w, "embeddings.patch_embedding.weight", 4, D, C, P, P) &&
             !ml_bind(c, &m->patch_b, "embeddings.patch_embedding.bias", 1, D, 0, 0, 0) &&
             !ml_bind(c, &m->pos, "embeddings.position_embedding.weight", 2, T, D, 0, 0);
    for (int l = 0; ok && l < k->num_layers; l++) {
        sg_layer *y = &m->layers[l];
        struct {
            const float **dst;
            const char *suffix;
            int nd;
            int64_t a, b;
        } w[] = {
            {&y->ln1_w, "layer_norm1.weight", 1, D, 0},      {&y->ln1_b, "layer_norm1.bias", 1, D, 0},
            {&y->q_w, "self_attn.q_proj.weight", 2, D, D},   {&y->q_b, "self_attn.q_proj.bias", 1, D, 0},
            {&y->k_w, "self_attn.k_proj.weight", 2, D, D},   {&y->k_b, "self_attn.k_proj.bias", 1, D, 0},
            {&y->v_w, "self_attn.v_proj.weight", 2, D, D},   {&y->v_b, "self_attn.v_proj.bias", 1, D, 0},
            {&y->o_w, "self_attn.out_proj.weight", 2, D, D}, {&y->o_b, "self_attn.out_proj.bias", 1, D, 0},
            {&y->ln2_w, "layer_norm2.weight", 1, D, 0},      {&y->ln2_b, "layer_norm2.bias", 1, D, 0},
            {&y->fc1_w, "mlp.fc1.weight", 2, F, D},          {&y->fc1_b, "mlp.fc1.bias", 1, F, 0},
            {&y->fc2_w, "mlp.fc2.weight", 2, D, F},          {&y->fc2_b, "mlp.fc2.bias", 1, D, 0},
        };
        for (size_t i = 0; ok && i < sizeof w / sizeof *w; i++) {
            char name[160];
            snprintf(name, sizeof name, "encoder.layers.%d.%s", l, w[i].suffix);
            ok = !ml_bind(c, w[i].dst, name, w[i].nd, w[i].a, w[i].b, 0, 0);
        }
    }
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
    for (int f = 0; f < c->st->n_files; f++) {
        const sg_st_file *sf = c->st->files[f];
        for (size_t i = 0; i < sf->n_tensors; i++) {
            if (c->used[f][i] || !ml_is_vision_name(sf->tensors[i].name)) continue;
            ml_fail(c->err, c->errlen,
                    "%s: tensor '%.200s' is not part of the vision model the config describes (%d layers); config and "
                    "weights disagree%s",
                    sf->label, sf->tensors[i].name, k->num_layers, c->cfg_note);
            return -1;
        }
    }
    return 0;
}

/* ---- public ----------------------------------------------------------------------------------------- */

sg_model *sg_model_load(const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!path || !*path) {
        ml_fail(err, errlen, "no weights path given");
        return NULL;
    }
    char dir[4096], st_path[4096] = "", index_path[4096] = "", cfg_path[4096];
    if (ml_is_dir(path)) {
        snprintf(dir, sizeof dir, "%s", path);
        char a[4096], b[4096];
        if (ml_join(a, sizeof a, dir, "model.safetensors") ||
            ml_join(b, sizeof b, dir, "model.safetensors.index.json")) {
            ml_fail(err, errlen, "%s: path too long", path);
            return NULL;
        }
        if (ml_is_file(a))
            snprintf(st_path, sizeof st_path, "%s", a);
        else if (ml_is_file(b))
            snprintf(index_path, sizeof index_path, "%s", b);
        else {
            ml_fail(err, errlen, "%s: directory has neither model.safetensors nor model.safetensors.index.json", path);
            return NULL;
        }
    } else if (ml_is_file(path)) {
        if (strlen(path) >= sizeof dir) {
            ml_fail(err, errlen, "%s: path too long", path);
            return NULL;
        }
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            dir[1] = 0;
        else if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
        if (ml_ends_with(path, ".index.json"))
            snprintf(index_path, sizeof index_path, "%s", path);
        else
            snprintf(st_path, sizeof st_path, "%s", path);
    } else {
        ml_fail(err, errlen,
                "%s: no such file or directory (expected a directory with config.json + model.safetensors, or a "
                ".safetensors file)",
                path);
        return NULL;
    }

    sg_model *m = calloc(1, sizeof *m);
    ml_storage *s = calloc(1, sizeof *s);
    if (!m || !s) {
        free(m);
        free(s);
        ml_fail(err, errlen, "out of memory");
        return NULL;
    }
    m->storage = s;
    char note[4200] = "";
    ml_ctx c = {s, note, st_path[0] ? st_path : index_path, err, errlen, NULL};
    if (ml_join(cfg_path, sizeof cfg_path, dir, "config.json")) {
        ml_fail(err, errlen, "%s: path too long", path);
        goto fail;
    }
    if (ml_is_file(cfg_path)) {
        if (sg_config_load_file(cfg_path, &m->cfg, err, errlen)) goto fail;
        snprintf(note, sizeof note, " (config: %s)", cfg_path);
    } else {
        m->cfg = sg_config_default();
        snprintf(note, sizeof note, " (config: SiglipVisionConfig defaults, no config.json beside the weights)");
    }

    if (st_path[0]) {
        sg_st_file *f = sg_st_open(st_path, err, errlen);
        if (!f) goto fail;
        if (ml_add_file(s, f)) {
            sg_st_close(f);
            ml_fail(err, errlen, "out of memory");
            goto fail;
        }
        snprintf(m->path, sizeof m->path, "%s", st_path);
    } else {
        if (ml_open_index(s, index_path, dir, err, errlen)) goto fail;
        snprintf(m->path, sizeof m->path, "%s", index_path);
    }

    c.used = calloc((size_t)s->n_files, sizeof *c.used);
    if (!c.used) {
        ml_fail(err, errlen, "out of memory");
        goto fail;
    }
    for (int f = 0; f < s->n_files; f++) {
        c.used[f] = calloc(s->files[f]->n_tensors + 1, 1);
        if (!c.used[f]) {
            ml_fail(err, errlen, "out of memory");
            goto fail;
        }
    }
    m->layers = calloc((size_t)m->cfg.num_layers, sizeof *m->layers);
    if (!m->layers) {
        ml_fail(err, errlen, "out of memory");
        goto fail;
    }
    if (ml_bind_all(&c, m)) goto fail;
    for (int f = 0; f < s->n_files; f++)
        free(c.used[f]);
    free(c.used);
    return m;

fail:
    if (c.used) {
        for (int f = 0; f < s->n_files; f++)
            free(c.used[f]);
        free(c.used);
    }
    sg_model_free(m);
    return NULL;
}

void sg_model_free(sg_model *m) {
    if (!m) return;
    ml_storage_free(m->storage);
    free(m->layers);
    free(m);
}
