/* cli/zeroshot.c — zero-shot scores and the hypothesis template (contract in zeroshot.h). */
#include "zeroshot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int sg_zeroshot_format(const char *tmpl, const char *label, char **out, char *err, size_t errlen) {
    sg_cli_buf b = {0};
    int fields = 0;
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '{' && p[1] == '{') {
            sg_cli_buf_putc(&b, '{');
            p++;
        } else if (p[0] == '}' && p[1] == '}') {
            sg_cli_buf_putc(&b, '}');
            p++;
        } else if (p[0] == '{' && p[1] == '}') {
            sg_cli_buf_puts(&b, label);
            fields++;
            p++;
        } else if (p[0] == '{' || p[0] == '}') {
            snprintf(err, errlen, "--template '%s': a lone '%c' at byte %zu (the label goes where \"{}\" is; write "
                     "\"{{\" or \"}}\" for a literal brace)", tmpl, p[0], (size_t)(p - tmpl));
            sg_cli_buf_free(&b);
            return -1;
        } else {
            sg_cli_buf_putc(&b, *p);
        }
    }
    if (fields != 1) {
        snprintf(err, errlen, "--template '%s' has %d \"{}\", expected exactly one (where the label goes)", tmpl,
                 fields);
        sg_cli_buf_free(&b);
        return -1;
    }
    sg_cli_buf_putc(&b, 0);
    *out = b.p;
    return 0;
}
