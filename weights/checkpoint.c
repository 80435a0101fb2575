/* weights/checkpoint.c — checkpoint files and tensor binding (contract in checkpoint.h).
 *
 * The storage (open files, widened buffers) outlives the sg_ckpt: a model keeps it as its storage pointer,
 * the rest (paths, the per-tensor "used" marks) is freed when the load ends.
 */
#include "checkpoint.h"
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The open files (mappings) and the buffers of converted tensors. */
typedef struct ck_storage {
    sg_st_file **files;
    int n_files;
    float **bufs;
    size_t n_bufs, cap_bufs;
} ck_storage;

struct sg_ckpt {
    ck_storage *st;
    char dir[4096], st_path[4096], index_path[4096], cfg_path[4096];
    char note[4200];      /* appended to shape errors */
    unsigned char **used; /* used[f][i]: tensor i of file f was bound */
    char *err;
    size_t errlen;
};

static void ck_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int ck_is_file(const char *p) {
    struct stat sb;
    return p && !stat(p, &sb) && S_ISREG(sb.st_mode);
}

static int ck_is_dir(const char *p) {
    struct stat sb;
    return p && !stat(p, &sb) && S_ISDIR(sb.st_mode);
}

static int ck_ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* dir/name into out; -1 when it does not fit. */
static int ck_join(char *out, size_t len, const char *dir, const char *name) {
    int n = snprintf(out, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void ck_shape_str(const int64_t *s, int nd, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* ---- storage -------------------------------------------------------------------------------------- */

void sg_ckpt_storage_free(void *storage) {
    ck_storage *s = storage;
    if (!s) return;
    for (int i = 0; i < s->n_files; i++)
        sg_st_close(s->files[i]);
    free(s->files);
    for (size_t i = 0; i < s->n_bufs; i++)
        free(s->bufs[i]);
    free(s->bufs);
    free(s);
}

static float *ck_alloc_buf(ck_storage *s, size_t n_floats) {
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

static int ck_add_file(ck_storage *s, sg_st_file *f) {
    sg_st_file **nf = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *nf);
    if (!nf) return -1;
    s->files = nf;
    s->files[s->n_files++] = f;
    return 0;
}

/* ---- sharded checkpoints ---------------------------------------------------------------------------- */

/* A shard named in an index must be a plain file name beside the index: no directories, no "..". */
static int ck_shard_name_ok(const char *s) {
    return *s && strlen(s) < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* Opens every shard the index names for a tensor wants() accepts. */
static int ck_open_index(ck_storage *s, const char *index_path, const char *dir, int (*wants)(const char *),
                         char *err, size_t errlen) {
    FILE *fp = fopen(index_path, "rb");
    if (!fp) {
        ck_fail(err, errlen, "%s: cannot open: %s", index_path, strerror(errno));
        return -1;
    }
    /* Real indexes are tens of KB (one line per tensor); 64 MB bounds a hostile one. */
    size_t cap = 64u << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, fp) : 0;
    fclose(fp);
    if (!buf) {
        ck_fail(err, errlen, "%s: out of memory", index_path);
        return -1;
    }
    if (n > cap) {
        free(buf);
        ck_fail(err, errlen, "%s: larger than 64 MB", index_path);
        return -1;
    }
    buf[n] = 0;
    /* a real index has ~3 values per tensor; 4M bounds cJSON's memory as the safetensors reader does */
    if (sg_json_values_bound(buf, n) > 4000000u) {
        free(buf);
        ck_fail(err, errlen, "%s: too many JSON values for a weight index", index_path);
        return -1;
    }
    cJSON *root = cJSON_ParseWithLength(buf, n);
    free(buf);
    int rc = -1;
    const cJSON *wm = NULL;
    if (!root || !cJSON_IsObject(root)) {
        ck_fail(err, errlen, "%s: not a JSON object", index_path);
        goto done;
    }
    for (const cJSON *c = root->child; c; c = c->next)
        if (!strcmp(c->string, "weight_map")) wm = c;
    if (!wm || !cJSON_IsObject(wm)) {
        ck_fail(err, errlen, "%s: no \"weight_map\" object", index_path);
        goto done;
    }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!wants(e->string)) continue;
        if (!cJSON_IsString(e) || !ck_shard_name_ok(e->valuestring)) {
            ck_fail(err, errlen, "%s: weight_map['%.200s'] is not a plain file name beside the index", index_path,
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
        if (ck_join(p, sizeof p, dir, e->valuestring)) {
            ck_fail(err, errlen, "%s: shard path too long", index_path);
            goto done;
        }
        sg_st_file *f = sg_st_open(p, err, errlen);
        if (!f) goto done;
        if (ck_add_file(s, f)) {
            sg_st_close(f);
            ck_fail(err, errlen, "%s: out of memory", index_path);
            goto done;
        }
    }
    if (s->n_files == 0) {
        ck_fail(err, errlen, "%s: weight_map names no tensor of this tower", index_path);
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

/* ---- opening ------------------------------------------------------------------------------------------ */

void sg_ckpt_close(sg_ckpt *c) {
    if (!c) return;
    if (c->used) {
        for (int f = 0; f < c->st->n_files; f++)
            free(c->used[f]);
        free(c->used);
    }
    sg_ckpt_storage_free(c->st);
    free(c);
}

sg_ckpt *sg_ckpt_open(const char *path, int (*wants)(const char *name), char *err, size_t errlen) {
    if (!path || !*path) {
        ck_fail(err, errlen, "no weights path given");
        return NULL;
    }
    sg_ckpt *c = calloc(1, sizeof *c);
    if (c) c->st = calloc(1, sizeof *c->st);
    if (!c || !c->st) {
        free(c);
        ck_fail(err, errlen, "out of memory");
        return NULL;
    }
    c->err = err;
    c->errlen = errlen;
    if (ck_is_dir(path)) {
        snprintf(c->dir, sizeof c->dir, "%s", path);
        char a[4096], b[4096];
        if (ck_join(a, sizeof a, c->dir, "model.safetensors") ||
            ck_join(b, sizeof b, c->dir, "model.safetensors.index.json")) {
            ck_fail(err, errlen, "%s: path too long", path);
            goto fail;
        }
        if (ck_is_file(a))
            snprintf(c->st_path, sizeof c->st_path, "%s", a);
        else if (ck_is_file(b))
            snprintf(c->index_path, sizeof c->index_path, "%s", b);
        else {
            ck_fail(err, errlen, "%s: directory has neither model.safetensors nor model.safetensors.index.json", path);
            goto fail;
        }
    } else if (ck_is_file(path)) {
        if (strlen(path) >= sizeof c->dir) {
            ck_fail(err, errlen, "%s: path too long", path);
            goto fail;
        }
        snprintf(c->dir, sizeof c->dir, "%s", path);
        char *slash = strrchr(c->dir, '/');
        if (slash == c->dir)
            c->dir[1] = 0;
        else if (slash)
            *slash = 0;
        else
            snprintf(c->dir, sizeof c->dir, ".");
        if (ck_ends_with(path, ".index.json"))
            snprintf(c->index_path, sizeof c->index_path, "%s", path);
        else
            snprintf(c->st_path, sizeof c->st_path, "%s", path);
    } else {
        ck_fail(err, errlen,
                "%s: no such file or directory (expected a directory with config.json + model.safetensors, or a "
                ".safetensors file)",
                path);
        goto fail;
    }
    if (ck_join(c->cfg_path, sizeof c->cfg_path, c->dir, "config.json")) {
        ck_fail(err, errlen, "%s: path too long", path);
        goto fail;
    }
    if (!ck_is_file(c->cfg_path)) c->cfg_path[0] = 0;
    if (c->st_path[0]) {
        sg_st_file *f = sg_st_open(c->st_path, err, errlen);
        if (!f) goto fail;
        if (ck_add_file(c->st, f)) {
            sg_st_close(f);
            ck_fail(err, errlen, "out of memory");
            goto fail;
        }
    } else if (ck_open_index(c->st, c->index_path, c->dir, wants, err, errlen)) {
        goto fail;
    }
    c->used = calloc((size_t)c->st->n_files, sizeof *c->used);
    if (!c->used) {
        ck_fail(err, errlen, "out of memory");
        goto fail;
    }
    for (int f = 0; f < c->st->n_files; f++) {
        c->used[f] = calloc(c->st->files[f]->n_tensors + 1, 1);
        if (!c->used[f]) {
            ck_fail(err, errlen, "out of memory");
            goto fail;
        }
    }
    return c;
fail:
    sg_ckpt_close(c);
    return NULL;
}

const char *sg_ckpt_dir(const sg_ckpt *c) { return c->dir; }
const char *sg_ckpt_config(const sg_ckpt *c) { return c->cfg_path; }
const char *sg_ckpt_where(const sg_ckpt *c) { return c->st_path[0] ? c->st_path : c->index_path; }
const char *sg_ckpt_file_label(const sg_ckpt *c, int file) { return c->st->files[file]->label; }
void sg_ckpt_set_note(sg_ckpt *c, const char *note) { snprintf(c->note, sizeof c->note, "%s", note); }
const char *sg_ckpt_note(const sg_ckpt *c) { return c->note; }

void *sg_ckpt_keep_storage(sg_ckpt *c) {
    void *s = c->st;
    c->st = NULL;
    if (c->used) {
        for (int f = 0; f < ((ck_storage *)s)->n_files; f++)
            free(c->used[f]);
        free(c->used);
    }
    free(c);
    return s;
}

/* ---- binding ------------------------------------------------------------------------------------------ */

int sg_ckpt_lookup(sg_ckpt *c, const char *prefix, int allow_bare, const char *name, const sg_st_tensor **out,
                   int *file_idx) {
    char full[512];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const sg_st_tensor *hit = NULL;
    const char *hit_file = NULL;
    for (int f = 0; f < c->st->n_files; f++) {
        const char *cands[2] = {full, name};
        for (int k = 0; k < (allow_bare ? 2 : 1); k++) {
            const sg_st_tensor *t = sg_st_find(c->st->files[f], cands[k]);
            if (!t) continue;
            if (hit) {
                ck_fail(c->err, c->errlen, "%s: tensor '%s' is present twice (as '%s' in %s and '%s' in %s)",
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

void sg_ckpt_mark(sg_ckpt *c, int file, const sg_st_tensor *t) { c->used[file][t - c->st->files[file]->tensors] = 1; }

int sg_ckpt_bind(sg_ckpt *c, const float **dst, const char *prefix, int allow_bare, const char *name, int nd,
                 int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t want[4] = {d0, d1, d2, d3};
    char ws[128], fs[256];
    ck_shape_str(want, nd, ws, sizeof ws);
    const sg_st_tensor *t = NULL;
    int fi = 0;
    if (sg_ckpt_lookup(c, prefix, allow_bare, name, &t, &fi)) return -1;
    if (!t) {
        if (allow_bare)
            ck_fail(c->err, c->errlen, "%s: tensor '%s%s' (or '%s') not found: expected shape %s (F32, F16 or BF16)%s",
                    sg_ckpt_where(c), prefix, name, name, ws, c->note);
        else
            ck_fail(c->err, c->errlen, "%s: tensor '%s%s' not found: expected shape %s (F32, F16 or BF16)%s",
                    sg_ckpt_where(c), prefix, name, ws, c->note);
        return -1;
    }
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++)
        same = t->shape[i] == want[i];
    if (!same) {
        ck_shape_str(t->shape, t->ndim, fs, sizeof fs);
        ck_fail(c->err, c->errlen, "%s: tensor '%s': shape %s expected, found %s (%s)%s", c->st->files[fi]->label,
                t->name, ws, fs, sg_st_dtype_name(t->dtype), c->note);
        return -1;
    }
    sg_ckpt_mark(c, fi, t);
    size_t n = (size_t)(t->nbytes / sg_st_dtype_size(t->dtype));
    if (t->dtype == SG_ST_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
        *dst = (const float *)(const void *)t->data;
        return 0;
    }
    float *b = ck_alloc_buf(c->st, n);
    if (!b) {
        ck_fail(c->err, c->errlen, "%s: tensor '%s': out of memory for %zu floats", c->st->files[fi]->label, t->name,
                n);
        return -1;
    }
    sg_st_widen(t->dtype, t->data, b, n); /* F16/BF16 widened, unaligned F32 copied */
    *dst = b;
    return 0;
}

const sg_st_tensor *sg_ckpt_first_unused(const sg_ckpt *c, int (*is_ours)(const char *name), int *file) {
    for (int f = 0; f < c->st->n_files; f++) {
        const sg_st_file *sf = c->st->files[f];
        for (size_t i = 0; i < sf->n_tensors; i++) {
            if (c->used[f][i] || !is_ours(sf->tensors[i].name)) continue;
            *file = f;
            return &sf->tensors[i];
        }
    }
    return NULL;
}

int sg_ckpt_bind_layers(sg_ckpt *c, const char *prefix, int allow_bare, sg_layer *layers, int L, int64_t D, int64_t F) {
    for (int l = 0; l < L; l++) {
        sg_layer *y = &layers[l];
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
        for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
            char name[160];
            snprintf(name, sizeof name, "encoder.layers.%d.%s", l, w[i].suffix);
            if (sg_ckpt_bind(c, w[i].dst, prefix, allow_bare, name, w[i].nd, w[i].a, w[i].b, 0, 0)) return -1;
        }
    }
    return 0;
}

int sg_ckpt_refuse_unused(const sg_ckpt *c, int (*is_ours)(const char *name), const char *tower, int L, char *err,
                          size_t errlen) {
    int f;
    const sg_st_tensor *t = sg_ckpt_first_unused(c, is_ours, &f);
    if (!t) return 0;
    ck_fail(err, errlen,
            "%s: tensor '%.200s' is not part of the %s model the config describes (%d layers); config and weights "
            "disagree%s",
            sg_ckpt_file_label(c, f), t->name, tower, L, c->note);
    return -1;
}

/* ---- a tower's load ------------------------------------------------------------------------------- */

int sg_ckpt_load_tower(const char *path, const sg_ckpt_tower *t, void *model, sg_ckpt_slots s, char *err,
                       size_t errlen) {
    sg_ckpt *c = sg_ckpt_open(path, t->wants, err, errlen);
    if (!c) return -1;
    char note[4200];
    int L = 0;
    const char *cfg_path = sg_ckpt_config(c);
    if (cfg_path[0]) {
        if (t->config(model, cfg_path, &L, err, errlen)) goto fail;
        snprintf(note, sizeof note, " (config: %s)", cfg_path);
    } else {
        t->config(model, NULL, &L, err, errlen);
        snprintf(note, sizeof note, " (config: %s defaults, no config.json beside the weights)", t->defaults);
    }
    sg_ckpt_set_note(c, note);
    snprintf(s.path, s.path_len, "%s", sg_ckpt_where(c));
    *s.layers = calloc((size_t)L, sizeof **s.layers);
    if (!*s.layers) {
        ck_fail(err, errlen, "out of memory");
        goto fail;
    }
    if (t->bind(c, model, err, errlen)) goto fail;
    *s.storage = sg_ckpt_keep_storage(c);
    return 0;
fail:
    sg_ckpt_close(c);
    free(*s.layers);
    *s.layers = NULL;
    return -1;
}
