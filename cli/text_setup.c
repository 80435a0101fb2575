/* cli/text_setup.c — text tower + tokenizer + text backend for a run, and zero-shot labels (see text_setup.h). */
#include "text_setup.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../preprocess/text/tokenizer.h"
#include "../weights/text_load.h"
#include "buf.h"

#define SG_ZEROSHOT_DEFAULT_TOP_K 5
#define SG_ZEROSHOT_DEFAULT_TEMPLATE "This is a photo of {}." /* pipelines/zero_shot_image_classification.py */

static int tok_encode(const void *ctx, const char *text, size_t len, int32_t *ids, int max_len, char *err,
                      size_t errlen) {
    return sg_tokenizer_encode((const sg_tokenizer *)ctx, text, len, ids, max_len, err, errlen);
}

void sg_cli_text_env_close(sg_cli_text_env *env) {
    sg_text_backend_destroy(env->backend);
    sg_tokenizer_free((sg_tokenizer *)env->tokenizer);
    sg_text_model_free(env->model);
    memset(env, 0, sizeof *env);
}

int sg_cli_text_env_open(sg_cli_text_env *env, const char *weights, const sg_backend_opts *opts, char *err,
                         size_t errlen) {
    memset(env, 0, sizeof *env);
    char e[4096], tokpath[4200];
    if (!(env->model = sg_text_model_load(weights, e, sizeof e))) {
        snprintf(err, errlen, "cannot load the text tower at %s: %s", weights, e);
        return -1;
    }
    if (sg_text_tokenizer_path(weights, tokpath, sizeof tokpath, e, sizeof e) != 0) {
        snprintf(err, errlen, "%s", e);
        sg_cli_text_env_close(env);
        return -1;
    }
    sg_tokenizer *t = sg_tokenizer_load(tokpath, e, sizeof e);
    if (!t) {
        snprintf(err, errlen, "cannot load the tokenizer %s: %s", tokpath, e);
        sg_cli_text_env_close(env);
        return -1;
    }
    env->tokenizer = t;
    env->tok.encode = tok_encode;
    env->tok.ctx = t;
    env->tok.vocab_limit = env->model->cfg.vocab_size;
    /* HF's processor and the zero-shot pipeline pass on whatever the tokenizer returns: a mask or not */
    if (sg_text_mask_rule(weights, &env->tok.attention_mask, env->mask_why, sizeof env->mask_why, e, sizeof e) != 0) {
        snprintf(err, errlen, "cannot read the tokenizer's settings: %s", e);
        sg_cli_text_env_close(env);
        return -1;
    }
    /* More tokenizer ids than embedding rows is not an error by itself (a query that uses one fails alone, as
     * HF would fail on it); a tokenizer much larger than the table is the wrong file, said up front. */
    const int32_t tv = sg_tokenizer_vocab_size(t), mv = env->model->cfg.vocab_size;
    if (tv > mv + mv / 8) {
        snprintf(err, errlen, "%s has %d ids but the text tower's vocabulary (text_config.vocab_size) has %d "
                 "entries: the tokenizer does not belong to these weights", tokpath, tv, mv);
        sg_cli_text_env_close(env);
        return -1;
    }
    if (!(env->backend = sg_text_backend_create(env->model, opts, env->why, sizeof env->why, e, sizeof e))) {
        snprintf(err, errlen, "cannot start a text backend: %s", e);
        sg_cli_text_env_close(env);
        return -1;
    }
    return 0;
}

/* s with surrounding whitespace removed, malloc'd. */
static char *trimmed(const char *s, size_t len) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    char *o = sg_cli_xmalloc(len + 1);
    memcpy(o, s, len);
    o[len] = 0;
    return o;
}

static void free_list(char **l, int n) {
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

int sg_cli_labels_read(const char *inline_list, const char *file, char ***out, int *n, char *err, size_t errlen) {
    char **l = NULL;
    int cnt = 0, cap = 0;
#define PUSH(x)                                                          \
    do {                                                                 \
        if (cnt == cap) {                                                \
            cap = cap ? 2 * cap : 16;                                    \
            char **nl = realloc(l, (size_t)cap * sizeof *l);             \
            if (!nl) SG_CLI_DIE("out of memory");                        \
            l = nl;                                                      \
        }                                                                \
        l[cnt++] = (x);                                                  \
    } while (0)
    if (inline_list) {
        const char *p = inline_list;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char *lab = trimmed(p, len);
            if (!*lab) {
                snprintf(err, errlen, "--labels: label %d is empty (labels are separated by commas)", cnt + 1);
                free(lab);
                free_list(l, cnt);
                return -1;
            }
            PUSH(lab);
            if (!comma) break;
            p = comma + 1;
        }
    } else {
        FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
        if (!f) {
            snprintf(err, errlen, "--labels-from %s: %s", file, strerror(errno));
            return -1;
        }
        char *line = NULL;
        size_t lcap = 0;
        ssize_t r;
        int lineno = 0;
        while ((r = getline(&line, &lcap, f)) >= 0) {
            size_t skip = ++lineno == 1 ? sg_cli_bom_len(line, (size_t)r) : 0;
            if (memchr(line, 0, (size_t)r)) { /* a label is text: a NUL would cut it short without a word */
                snprintf(err, errlen, "--labels-from %s: line %d contains a NUL byte", file, lineno);
                free(line);
                if (f != stdin) fclose(f);
                free_list(l, cnt);
                return -1;
            }
            char *lab = trimmed(line + skip, (size_t)r - skip);
            if (!*lab) {
                free(lab);
                continue;
            }
            PUSH(lab);
        }
        int bad = ferror(f);
        free(line);
        if (f != stdin) fclose(f);
        if (bad) {
            snprintf(err, errlen, "--labels-from %s: read error", file);
            free_list(l, cnt);
            return -1;
        }
        if (cnt == 0) {
            snprintf(err, errlen, "--labels-from %s: no labels in it", file);
            free(l);
            return -1;
        }
    }
#undef PUSH
    *out = l;
    *n = cnt;
    return 0;
}

int sg_cli_zeroshot_setup(sg_zeroshot *z, const sg_cli_args *a, const char *weights, const sg_backend_opts *opts,
                          int image_dim, int verbose, char *err, size_t errlen) {
    char **labels = NULL, e[4096];
    int n = 0;
    if (sg_cli_labels_read(a->labels, a->labels_from, &labels, &n, err, errlen) != 0) return -1;
    const char *tmpl = a->template_ ? a->template_ : SG_ZEROSHOT_DEFAULT_TEMPLATE;
    char **hyp = sg_cli_xcalloc((size_t)n, sizeof *hyp);
    int rc = -1;
    float *emb = NULL;
    sg_cli_text_env env;
    memset(&env, 0, sizeof env);
    for (int i = 0; i < n; i++)
        if (sg_zeroshot_format(tmpl, labels[i], &hyp[i], err, errlen) != 0) goto out;
    sg_backend_opts to = *opts;
    to.max_batch = n < 256 ? n : 256;
    if (sg_cli_text_env_open(&env, weights, &to, e, sizeof e) != 0) {
        snprintf(err, errlen, "--labels: %s", e);
        goto out;
    }
    if (!env.model->has_logit) {
        snprintf(err, errlen, "--labels: %s has no logit_scale / logit_bias tensors, which the zero-shot scores need "
                 "(sigmoid(exp(logit_scale) * cos + logit_bias))", env.model->path);
        goto out;
    }
    if (env.backend->dim != image_dim) {
        snprintf(err, errlen, "--labels: the text tower's embeddings have %d values (projection_size) but the image "
                 "embeddings have %d: they are not in one space", env.backend->dim, image_dim);
        goto out;
    }
    if (verbose)
        fprintf(stderr, "siglip2-embed: labels: %d, text backend %s: %s\nsiglip2-embed: text attention: %s\n", n,
                env.backend->name, env.why, env.mask_why);
    emb = sg_cli_xmalloc((size_t)n * image_dim * sizeof *emb);
    if (sg_cli_text_embed_list(env.backend, &env.tok, hyp, n, emb, e, sizeof e) != 0) {
        snprintf(err, errlen, "--labels: %s", e);
        goto out;
    }
    rc = sg_zeroshot_init(z, labels, n, emb, image_dim, env.model->logit_scale, env.model->logit_bias,
                          a->top_k ? a->top_k : SG_ZEROSHOT_DEFAULT_TOP_K, err, errlen);
out:
    sg_cli_text_env_close(&env);
    for (int i = 0; i < n; i++) free(hyp[i]);
    free(hyp);
    free_list(labels, n);
    free(emb);
    return rc;
}
