/* cli/zeroshot.c — zero-shot scores and the hypothesis template (contract in zeroshot.h). */
#include "zeroshot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../preprocess/text/utf8.h"
#include "buf.h"

void sg_zeroshot_free(sg_zeroshot *z) {
    if (!z) return;
    for (int i = 0; i < z->n && z->labels; i++) free(z->labels[i]);
    free(z->labels);
    free(z->emb);
    memset(z, 0, sizeof *z);
}

int sg_zeroshot_init(sg_zeroshot *z, char *const *labels, int n, const float *label_emb, int dim, float logit_scale,
                     float logit_bias, int top_k, char *err, size_t errlen) {
    memset(z, 0, sizeof *z);
    if (n < 1 || dim < 1) {
        snprintf(err, errlen, "zero-shot: %d labels of width %d, expected at least one", n, dim);
        return -1;
    }
    z->n = n;
    z->dim = dim;
    z->top_k = top_k < 1 ? 1 : top_k > n ? n : top_k;
    z->scale = exp((double)logit_scale);
    z->bias = logit_bias;
    z->labels = sg_cli_xcalloc((size_t)n, sizeof *z->labels);
    z->emb = sg_cli_xmalloc((size_t)n * dim * sizeof *z->emb);
    for (int i = 0; i < n; i++) {
        z->labels[i] = sg_cli_xstrdup(labels[i]);
        double ss = 0;
        for (int d = 0; d < dim; d++) ss += (double)label_emb[(size_t)i * dim + d] * label_emb[(size_t)i * dim + d];
        if (!(ss > 0) || !isfinite(ss)) {
            snprintf(err, errlen, "zero-shot: label '%s' has a zero or non-finite embedding", labels[i]);
            sg_zeroshot_free(z);
            return -1;
        }
        const double inv = 1.0 / sqrt(ss);
        for (int d = 0; d < dim; d++) z->emb[(size_t)i * dim + d] = label_emb[(size_t)i * dim + d] * inv;
    }
    return 0;
}

void sg_zeroshot_scores(const sg_zeroshot *z, const float *v, double *scores) {
    double ss = 0;
    for (int d = 0; d < z->dim; d++) ss += (double)v[d] * v[d];
    const double inv = ss > 0 ? 1.0 / sqrt(ss) : 0.0;
    for (int j = 0; j < z->n; j++) {
        const double *e = z->emb + (size_t)j * z->dim;
        double dot = 0;
        for (int d = 0; d < z->dim; d++) dot += v[d] * e[d];
        const double logit = z->scale * dot * inv + z->bias;
        scores[j] = 1.0 / (1.0 + exp(-logit));
    }
}

void sg_zeroshot_top(const sg_zeroshot *z, const double *scores, int *idx) {
    /* selection of the k best: k is small (default 5) and n is a label list, so O(k n) is nothing */
    for (int r = 0; r < z->top_k; r++) {
        int best = -1;
        for (int j = 0; j < z->n; j++) {
            int taken = 0;
            for (int q = 0; q < r && !taken; q++) taken = idx[q] == j;
            if (!taken && (best < 0 || scores[j] > scores[best])) best = j;
        }
        idx[r] = best;
    }
}

/* --- the template, read as Python's str.format reads it with one positional argument ---
 * HF's pipeline calls hypothesis_template.format(label), so a template Python accepts with one label gives the
 * same hypothesis here. Python's parser (Objects/stringlib/unicode_format.h, MarkupIterator_next): "{{" and "}}"
 * are literal braces, a lone "}" is an error, and "{" opens a replacement field that runs to its matching "}"
 * (braces nested inside it counted, as a format spec may hold a nested field). Of the fields, the ones that give
 * the label itself are the automatic or explicit first argument with no conversion and an empty format spec:
 * {} {0} {:} {0:}. Anything else ({!r}, {1}, {name}, {0.x}, {:>5}, { }) either fails in Python or changes the
 * text, so it is refused, named, rather than guessed at. */

/* 1 if the field body [s, e) (between the braces) is one that formats the label unchanged. */
static int label_field(const char *s, const char *e) {
    static const char *const ok[] = {"", "0", ":", "0:"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if ((size_t)(e - s) == strlen(ok[i]) && memcmp(s, ok[i], (size_t)(e - s)) == 0) return 1;
    return 0;
}

int sg_zeroshot_format(const char *tmpl, const char *label, char **out, char *err, size_t errlen) {
    /* checked here, not left to the tokenizer, which would blame the label the template was filled with */
    size_t tlen = strlen(tmpl), bad = sg_utf8_check(tmpl, tlen);
    if (bad < tlen) {
        snprintf(err, errlen, "--template: not valid UTF-8 at byte offset %zu (byte 0x%02X): the template must be "
                 "UTF-8 text", bad, (unsigned char)tmpl[bad]);
        return -1;
    }
    sg_cli_buf b = {0};
    int fields = 0;
    for (const char *p = tmpl; *p; p++) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            sg_cli_buf_putc(&b, p[0]);
            p++;
        } else if (p[0] == '}') {
            snprintf(err, errlen, "--template '%s': a lone '}' at byte %zu (write \"}}\" for a literal brace)", tmpl,
                     (size_t)(p - tmpl));
            goto fail;
        } else if (p[0] == '{') {
            const char *q = p + 1;
            for (int level = 1; *q; q++) {
                level += *q == '{' ? 1 : *q == '}' ? -1 : 0;
                if (level == 0) break;
            }
            if (!*q) {
                snprintf(err, errlen, "--template '%s': the '{' at byte %zu is never closed (the label goes where "
                         "\"{}\" is; write \"{{\" for a literal brace)", tmpl, (size_t)(p - tmpl));
                goto fail;
            }
            if (!label_field(p + 1, q)) {
                snprintf(err, errlen, "--template '%s': field %.*s is not supported: use {} (or {0}) where the label "
                         "goes", tmpl, (int)(q + 1 - p), p);
                goto fail;
            }
            sg_cli_buf_puts(&b, label);
            fields++;
            p = q;
        } else {
            sg_cli_buf_putc(&b, *p);
        }
    }
    if (fields != 1) {
        snprintf(err, errlen, "--template '%s' has %d \"{}\", expected exactly one (where the label goes)", tmpl,
                 fields);
        goto fail;
    }
    sg_cli_buf_putc(&b, 0);
    *out = b.p;
    return 0;
fail:
    sg_cli_buf_free(&b);
    return -1;
}
