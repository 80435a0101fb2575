/* weights/config.c — config.json -> sg_config / sg_text_config, tokenizer_config.json -> the attention-mask
 * rule (see config.h for the accepted shapes).
 *
 * Keys are looked up by walking the child list with exact comparison (cJSON_GetObjectItem ignores case) and
 * a key we read that appears twice is an error (cJSON would keep the first, Python's json the last).
 * Integers are read from valuedouble and must be exact (valueint saturates).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* config.json of real checkpoints is a few KB; 16 MB bounds what a hostile file can make us allocate. */
#define CFG_MAX_BYTES (16u << 20)
/* Real configs hold ~50 values; this bounds cJSON's memory (~64 bytes per value) on hostile input. */
#define CFG_MAX_VALUES 100000u

static void cfg_fail(char *err, size_t errlen, const char *label, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    int n = snprintf(err, errlen, "%s: ", label && *label ? label : "config.json");
    if (n < 0 || (size_t)n >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static const char *cfg_type(const cJSON *v) {
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

/* The child named exactly key; *dup is set when it appears more than once. */
static const cJSON *cfg_get(const cJSON *obj, const char *key, int *dup) {
    const cJSON *found = NULL;
    *dup = 0;
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
        if (strcmp(c->string, key)) continue;
        if (found)
            *dup = 1;
        else
            found = c;
    }
    return found;
}

/* Fetches key from obj; returns 1 if present, 0 if absent, -1 (message written) if duplicated. */
static int cfg_find(const cJSON *obj, const char *prefix, const char *key, const cJSON **v, const char *label,
                    char *err, size_t errlen) {
    int dup;
    *v = cfg_get(obj, key, &dup);
    if (dup) {
        cfg_fail(err, errlen, label, "%s%s appears more than once (ambiguous)", prefix, key);
        return -1;
    }
    return *v != NULL;
}

static int cfg_int(const cJSON *obj, const char *prefix, const char *key, int lo, int hi, int *out, const char *label,
                   char *err, size_t errlen) {
    const cJSON *v;
    int r = cfg_find(obj, prefix, key, &v, label, err, errlen);
    if (r <= 0) return r;
    if (!cJSON_IsNumber(v)) {
        cfg_fail(err, errlen, label, "%s%s is %s, expected an integer", prefix, key, cfg_type(v));
        return -1;
    }
    double d = v->valuedouble;
    if (d != floor(d) || d < lo || d > hi) {
        cfg_fail(err, errlen, label, "%s%s is %.17g, expected an integer in [%d, %d]", prefix, key, d, lo, hi);
        return -1;
    }
    *out = (int)d;
    return 1;
}

/* layer_norm_eps of obj into *out when present: 1 / 0 (absent) / -1 (message written). */
static int cfg_eps(const cJSON *obj, const char *prefix, float *out, const char *label, char *err, size_t errlen) {
    const cJSON *x;
    int r = cfg_find(obj, prefix, "layer_norm_eps", &x, label, err, errlen);
    if (r <= 0) return r;
    if (!cJSON_IsNumber(x)) {
        cfg_fail(err, errlen, label, "%slayer_norm_eps is %s, expected a number", prefix, cfg_type(x));
        return -1;
    }
    if (!(x->valuedouble > 0 && x->valuedouble < 1)) {
        cfg_fail(err, errlen, label, "%slayer_norm_eps is %.17g, expected a number in (0, 1)", prefix, x->valuedouble);
        return -1;
    }
    *out = (float)x->valuedouble;
    return 1;
}

/* hidden_act of obj into *out when present: 1 / 0 (absent) / -1 (message written). */
static int cfg_act(const cJSON *obj, const char *prefix, sg_activation *out, const char *label, char *err,
                   size_t errlen) {
    const cJSON *x;
    int r = cfg_find(obj, prefix, "hidden_act", &x, label, err, errlen);
    if (r <= 0) return r;
    if (!cJSON_IsString(x)) {
        cfg_fail(err, errlen, label, "%shidden_act is %s, expected a string", prefix, cfg_type(x));
        return -1;
    }
    if (!strcmp(x->valuestring, "gelu_pytorch_tanh"))
        *out = SG_ACT_GELU_TANH;
    else if (!strcmp(x->valuestring, "gelu"))
        *out = SG_ACT_GELU_ERF;
    else {
        cfg_fail(err, errlen, label, "%shidden_act '%.60s' is not supported, expected 'gelu_pytorch_tanh' or 'gelu'",
                 prefix, x->valuestring);
        return -1;
    }
    return 1;
}

int sg_config_validate(const sg_config *c, const char *label, char *err, size_t errlen) {
    if (c->num_channels != 3) {
        cfg_fail(err, errlen, label, "num_channels is %d, expected 3 (inputs are RGB)", c->num_channels);
        return -1;
    }
    if (c->hidden_size % c->num_heads) {
        cfg_fail(err, errlen, label, "hidden_size %d is not divisible by num_attention_heads %d", c->hidden_size,
                 c->num_heads);
        return -1;
    }
    if (c->image_size % c->patch_size) {
        cfg_fail(err, errlen, label, "image_size %d is not divisible by patch_size %d", c->image_size, c->patch_size);
        return -1;
    }
    if (!(c->layer_norm_eps > 0 && c->layer_norm_eps < 1)) {
        cfg_fail(err, errlen, label, "layer_norm_eps is %g, expected a number in (0, 1)", (double)c->layer_norm_eps);
        return -1;
    }
    /* The position table is [T, D]; 65536 tokens (e.g. 4096 px at patch 16) bounds its size and the
     * attention buffers the backends allocate from it. */
    long long tokens = (long long)(c->image_size / c->patch_size) * (c->image_size / c->patch_size);
    if (tokens > 65536) {
        cfg_fail(err, errlen, label, "image_size %d / patch_size %d gives %lld tokens, at most 65536 supported",
                 c->image_size, c->patch_size, tokens);
        return -1;
    }
    return 0;
}

/* Parses len bytes of untrusted JSON into an object root (bounded values, nothing but whitespace after it).
 * 0, or -1 with a message. */
static int cfg_root(const char *json, size_t len, const char *label, size_t max_values, const char *what,
                    cJSON **out, char *err, size_t errlen) {
    size_t values = sg_json_values_bound(json, len);
    if (values > max_values) {
        cfg_fail(err, errlen, label, "holds up to %zu JSON values, more than the %zu a %s may have", values,
                 max_values, what);
        return -1;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t at = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
        cfg_fail(err, errlen, label, "not valid JSON: parse error at byte %zu", at);
        return -1;
    }
    for (const char *p = end; p < json + len; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cfg_fail(err, errlen, label, "unexpected '%c' after the JSON object at byte %zu", *p, (size_t)(p - json));
            cJSON_Delete(root);
            return -1;
        }
    }
    if (!cJSON_IsObject(root)) {
        cfg_fail(err, errlen, label, "top level is %s, expected an object", cfg_type(root));
        cJSON_Delete(root);
        return -1;
    }
    *out = root;
    return 0;
}

int sg_config_parse(const char *json, size_t len, const char *label, sg_config *out, char *err, size_t errlen) {
    sg_config c = sg_config_default();
    cJSON *root = NULL;
    if (cfg_root(json, len, label, CFG_MAX_VALUES, "config.json", &root, err, errlen)) return -1;
    int rc = -1;
    const cJSON *mt, *vc;
    int has_mt = cfg_find(root, "", "model_type", &mt, label, err, errlen);
    int has_vc = cfg_find(root, "", "vision_config", &vc, label, err, errlen);
    if (has_mt < 0 || has_vc < 0) goto done;
    if (has_mt && !cJSON_IsString(mt)) {
        cfg_fail(err, errlen, label, "model_type is %s, expected a string", cfg_type(mt));
        goto done;
    }
    const char *model_type = has_mt ? mt->valuestring : NULL;
    if (model_type && strcmp(model_type, "siglip") && strcmp(model_type, "siglip_vision_model")) {
        cfg_fail(err, errlen, label,
                 "model_type '%.60s' is not supported, expected 'siglip' (SiglipModel) or 'siglip_vision_model'%s",
                 model_type,
                 !strncmp(model_type, "siglip2", 7) ? " (the NaFlex Siglip2 models are a different architecture)" : "");
        goto done;
    }
    /* SiglipModel keeps the vision fields under vision_config; a standalone vision config has them at top. */
    const cJSON *v = root;
    const char *prefix = "";
    int nested = model_type ? !strcmp(model_type, "siglip") : has_vc;
    if (nested && has_vc) {
        if (!cJSON_IsObject(vc)) {
            cfg_fail(err, errlen, label, "vision_config is %s, expected an object", cfg_type(vc));
            goto done;
        }
        v = vc;
        prefix = "vision_config.";
        const cJSON *vmt;
        int r = cfg_find(v, prefix, "model_type", &vmt, label, err, errlen);
        if (r < 0) goto done;
        if (r && (!cJSON_IsString(vmt) || strcmp(vmt->valuestring, "siglip_vision_model"))) {
            cfg_fail(err, errlen, label, "vision_config.model_type is %s%.60s%s, expected 'siglip_vision_model'",
                     cJSON_IsString(vmt) ? "'" : "", cJSON_IsString(vmt) ? vmt->valuestring : cfg_type(vmt),
                     cJSON_IsString(vmt) ? "'" : "");
            goto done;
        }
    } else if (nested) {
        v = NULL; /* a SiglipModel config without vision_config: every vision field takes its default */
    }

    /* Upper bounds keep every size product the loader forms well inside 64 bits and reject nonsense early;
     * base is 768/3072/12/12/224/16. */
    if (cfg_int(v, prefix, "hidden_size", 1, 16384, &c.hidden_size, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "intermediate_size", 1, 131072, &c.intermediate_size, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "num_attention_heads", 1, 1024, &c.num_heads, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "num_hidden_layers", 1, 1024, &c.num_layers, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "num_channels", 1, 64, &c.num_channels, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "image_size", 1, 8192, &c.image_size, label, err, errlen) < 0) goto done;
    if (cfg_int(v, prefix, "patch_size", 1, 8192, &c.patch_size, label, err, errlen) < 0) goto done;

    if (cfg_eps(v, prefix, &c.layer_norm_eps, label, err, errlen) < 0) goto done;
    if (cfg_act(v, prefix, &c.activation, label, err, errlen) < 0) goto done;
    const cJSON *x;
    int r = cfg_find(v, prefix, "vision_use_head", &x, label, err, errlen);
    if (r < 0) goto done;
    if (r) {
        if (!cJSON_IsBool(x)) {
            cfg_fail(err, errlen, label, "%svision_use_head is %s, expected true or false", prefix, cfg_type(x));
            goto done;
        }
        if (cJSON_IsFalse(x)) {
            cfg_fail(
                err, errlen, label,
                "%svision_use_head is false: the model has no pooling head, so there is no pooled embedding to output",
                prefix);
            goto done;
        }
    }
    if (sg_config_validate(&c, label, err, errlen)) goto done;
    *out = c;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

int sg_text_config_parse(const char *json, size_t len, const char *label, sg_text_config *out, char *err,
                         size_t errlen) {
    sg_text_config c = sg_text_config_default();
    cJSON *root = NULL;
    if (cfg_root(json, len, label, CFG_MAX_VALUES, "config.json", &root, err, errlen)) return -1;
    int rc = -1;
    const cJSON *mt, *tc;
    int has_mt = cfg_find(root, "", "model_type", &mt, label, err, errlen);
    int has_tc = cfg_find(root, "", "text_config", &tc, label, err, errlen);
    if (has_mt < 0 || has_tc < 0) goto done;
    if (has_mt && !cJSON_IsString(mt)) {
        cfg_fail(err, errlen, label, "model_type is %s, expected a string", cfg_type(mt));
        goto done;
    }
    if ((has_mt && strcmp(mt->valuestring, "siglip")) || (!has_mt && !has_tc)) {
        cfg_fail(err, errlen, label,
                 "%s%.60s%s has no text tower (no text_config): a vision-only checkpoint; text queries need a "
                 "SiglipModel checkpoint (model_type 'siglip', e.g. google/siglip2-base-patch16-224)",
                 has_mt ? "model_type '" : "config without model_type", has_mt ? mt->valuestring : "",
                 has_mt ? "'" : "");
        goto done;
    }
    const cJSON *t = NULL; /* SiglipModel without text_config: every text field takes its default */
    const char *prefix = "text_config.";
    if (has_tc) {
        if (!cJSON_IsObject(tc)) {
            cfg_fail(err, errlen, label, "text_config is %s, expected an object", cfg_type(tc));
            goto done;
        }
        t = tc;
        const cJSON *tmt;
        int r = cfg_find(t, prefix, "model_type", &tmt, label, err, errlen);
        if (r < 0) goto done;
        if (r && (!cJSON_IsString(tmt) || strcmp(tmt->valuestring, "siglip_text_model"))) {
            cfg_fail(err, errlen, label, "text_config.model_type is %s%.60s%s, expected 'siglip_text_model'",
                     cJSON_IsString(tmt) ? "'" : "", cJSON_IsString(tmt) ? tmt->valuestring : cfg_type(tmt),
                     cJSON_IsString(tmt) ? "'" : "");
            goto done;
        }
    }
    /* Bounds as for the vision tower; SigLIP2 base is V 256000, D 768, F 3072, 12 heads, 12 layers, T 64. The
     * vocabulary bound (16M rows) keeps V x D inside 64 bits with room; T is bounded by the attention kernels'
     * reach (256) in the backends, checked there. */
    if (cfg_int(t, prefix, "vocab_size", 1, 1 << 24, &c.vocab_size, label, err, errlen) < 0) goto done;
    if (cfg_int(t, prefix, "hidden_size", 1, 16384, &c.hidden_size, label, err, errlen) < 0) goto done;
    c.projection_size = c.hidden_size;
    if (cfg_int(t, prefix, "intermediate_size", 1, 131072, &c.intermediate_size, label, err, errlen) < 0) goto done;
    if (cfg_int(t, prefix, "num_attention_heads", 1, 1024, &c.num_heads, label, err, errlen) < 0) goto done;
    if (cfg_int(t, prefix, "num_hidden_layers", 1, 1024, &c.num_layers, label, err, errlen) < 0) goto done;
    if (cfg_int(t, prefix, "max_position_embeddings", 1, 4096, &c.max_positions, label, err, errlen) < 0) goto done;
    const cJSON *ps;
    int r = cfg_find(t, prefix, "projection_size", &ps, label, err, errlen);
    if (r < 0) goto done;
    if (r && !cJSON_IsNull(ps) &&
        cfg_int(t, prefix, "projection_size", 1, 16384, &c.projection_size, label, err, errlen) < 0)
        goto done;
    if (cfg_eps(t, prefix, &c.layer_norm_eps, label, err, errlen) < 0) goto done;
    if (cfg_act(t, prefix, &c.activation, label, err, errlen) < 0) goto done;
    if (c.hidden_size % c.num_heads) {
        cfg_fail(err, errlen, label, "text_config.hidden_size %d is not divisible by num_attention_heads %d",
                 c.hidden_size, c.num_heads);
        goto done;
    }
    *out = c;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

/* Reads the file at path (at most CFG_MAX_BYTES; what names the kind of file in the size message) into a malloc'd
 * NUL-terminated buffer. 0, or -1 + message. */
static int cfg_read(const char *path, const char *what, char **buf_out, size_t *len, char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        cfg_fail(err, errlen, path, "cannot open: %s", strerror(errno));
        return -1;
    }
    char *buf = malloc(CFG_MAX_BYTES + 1);
    if (!buf) {
        fclose(fp);
        cfg_fail(err, errlen, path, "out of memory");
        return -1;
    }
    errno = 0;
    size_t n = fread(buf, 1, CFG_MAX_BYTES + 1, fp);
    int bad = ferror(fp), e = errno ? errno : EIO;
    fclose(fp);
    if (bad || n > CFG_MAX_BYTES) {
        if (bad)
            cfg_fail(err, errlen, path, "read error: %s", strerror(e));
        else
            cfg_fail(err, errlen, path, "larger than %u bytes, not a %s", CFG_MAX_BYTES, what);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *buf_out = buf;
    *len = n;
    return 0;
}

int sg_config_load_file(const char *path, sg_config *out, char *err, size_t errlen) {
    char *buf;
    size_t n;
    if (cfg_read(path, "config.json", &buf, &n, err, errlen)) return -1;
    int rc = sg_config_parse(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}

int sg_text_config_load_file(const char *path, sg_text_config *out, char *err, size_t errlen) {
    char *buf;
    size_t n;
    if (cfg_read(path, "config.json", &buf, &n, err, errlen)) return -1;
    int rc = sg_text_config_parse(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}

/* ---- tokenizer_config.json: does the tokenizer return an attention mask? ------------------------------------ */

/* A tokenizer_config.json holds a few hundred values (an added_tokens_decoder entry is ~7); tokenizers with tens
 * of thousands of added tokens exist, so the bound is ten times config.json's (cJSON: ~64 MB at most). */
#define TOKCFG_MAX_VALUES 1000000u

int sg_tokenizer_config_parse(const char *json, size_t len, const char *label, int *attention_mask, char *err,
                              size_t errlen) {
    cJSON *root = NULL;
    if (cfg_root(json, len, label, TOKCFG_MAX_VALUES, "tokenizer_config.json", &root, err, errlen)) return -1;
    const cJSON *names;
    int rc = -1, has = cfg_find(root, "", "model_input_names", &names, label, err, errlen);
    if (has < 0) goto done;
    if (!has) { /* the tokenizer class's default, ["input_ids", "attention_mask"] for GemmaTokenizer */
        *attention_mask = 1;
        rc = 0;
        goto done;
    }
    /* HF runs list(value): null fails there, a string would become a list of characters; only an array of
     * strings is a real setting. */
    if (!cJSON_IsArray(names)) {
        cfg_fail(err, errlen, label, "model_input_names is %s, expected an array of strings (e.g. [\"input_ids\"])",
                 cfg_type(names));
        goto done;
    }
    int found = 0, i = 0;
    for (const cJSON *v = names->child; v; v = v->next, i++) {
        if (!cJSON_IsString(v)) {
            cfg_fail(err, errlen, label, "model_input_names[%d] is %s, expected a string", i, cfg_type(v));
            goto done;
        }
        found |= !strcmp(v->valuestring, "attention_mask");
    }
    *attention_mask = found;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

int sg_tokenizer_config_load_file(const char *path, int *attention_mask, char *err, size_t errlen) {
    char *buf;
    size_t n;
    if (cfg_read(path, "tokenizer_config.json", &buf, &n, err, errlen)) return -1;
    int rc = sg_tokenizer_config_parse(buf, n, path, attention_mask, err, errlen);
    free(buf);
    return rc;
}
