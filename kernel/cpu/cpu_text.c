/* kernel/cpu/cpu_text.c — the text tower on the CPU (see cpu_text.h).
 *
 * Design: the same chunked scheme as the vision encoder (about SG_CPU_TEXT_CHUNK_ROWS token rows per chunk:
 * tall GEMMs, bounded activations), with one shortcut that changes no bit of the result: only the rows that
 * can reach the output are computed. With HF's mask, a masked position is never a key, so its hidden state
 * influences nothing but itself; the output is the last position's. So each query keeps its attended
 * positions plus position T-1 (a pad for short queries: it attends to the others and is the one pooled), in
 * order: about tokens + 1 rows instead of T = 64, i.e. several times less work for typical queries (without a
 * mask, the real SigLIP2 checkpoint's case, every position is a key and all T rows are kept). Every kept
 * row gets exactly the arithmetic it gets in the full computation (GEMM rows are independent; attention
 * over the same keys in the same order, masked keys contributing exact zeros there). A query with no attended
 * position keeps all T rows (HF's eager attention then averages them uniformly).
 * Per chunk: the token rows are widened straight from the checkpoint's table (m->token_rows; the table is
 * never converted as a whole) and the positions added, in fp32 exactly as torch adds them; then
 * sg_cpu_encoder_layers over the packed sequences; then the final LayerNorm of each query's last row
 * (LayerNorm is per row, so this is the row HF's last_hidden_state[:, -1] holds) and the head Linear. Packing
 * covers the layers and the head (about 85M floats at base), which with the tokenizer's load is most of a
 * one-query run on two cores; nothing else is copied.
 */
#include "cpu_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_bufs.h"
#include "cpu_math.h"
#include "cpu_packed.h"

#define SG_CPU_TEXT_CHUNK_ROWS 2048 /* 32 queries of 64 tokens, ~50 MB of activations at base */

struct sg_cpu_text {
    const sg_text_model *m;
    sg_cpu_layer_pack *layers;
    sg_cpu_wpack head;  /* [P, D] */
    float *buf;         /* one allocation for every packed matrix */
};

void sg_cpu_text_free(sg_cpu_text *p) {
    if (!p) return;
    free(p->buf);
    free(p->layers);
    free(p);
}

sg_cpu_text *sg_cpu_text_pack(const sg_text_model *m, int threads, char *err, size_t errlen) {
    const sg_text_config *c = &m->cfg;
    if (c->hidden_size <= 0 || c->intermediate_size <= 0 || c->num_heads <= 0 || c->num_layers <= 0 ||
        c->max_positions <= 0 || c->projection_size <= 0 || c->hidden_size % c->num_heads) {
        snprintf(err, errlen, "cpu text encoder: unsupported config (hidden %d, mlp %d, heads %d, layers %d, "
                 "positions %d, projection %d)", c->hidden_size, c->intermediate_size, c->num_heads, c->num_layers,
                 c->max_positions, c->projection_size);
        return NULL;
    }
    const int D = c->hidden_size, F = c->intermediate_size, L = c->num_layers, P = c->projection_size;
    const size_t per_layer = sg_cpu_layer_pack_floats(D, F);
    const size_t s_head = (sg_cpu_pack_size(P, D) + 15) / 16 * 16;
    const size_t total = (size_t)L * per_layer + s_head; /* far below SIZE_MAX: the loader checked every shape */
    sg_cpu_text *p = calloc(1, sizeof *p);
    if (p) p->layers = calloc((size_t)L, sizeof *p->layers);
    if (p && p->layers) p->buf = aligned_alloc(64, total * sizeof(float));
    if (!p || !p->layers || !p->buf) {
        snprintf(err, errlen, "cpu text encoder: out of memory packing weights (%.1f MB)", total * 4.0 / 1e6);
        sg_cpu_text_free(p);
        return NULL;
    }
    p->m = m;
    float *q = p->buf;
    for (int l = 0; l < L; l++) q = sg_cpu_layer_pack_place(&p->layers[l], D, F, q);
    p->head = (sg_cpu_wpack){q, P, D};
    const int tasks = 5 * L + 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(sg_cpu_threads(threads))
    for (int t = 0; t < tasks; t++) {
        if (t < 5 * L)
            sg_cpu_layer_pack_part(&m->layers[t / 5], &p->layers[t / 5], D, F, t % 5);
        else
            sg_cpu_pack_nk(m->head_w, (size_t)D, P, D, p->head.p);
    }
    return p;
}

int sg_cpu_text_forward(const sg_cpu_text *p, const int32_t *ids, const uint8_t *mask, int n, float *out,
                        int threads, char *err, size_t errlen) {
    const sg_text_model *m = p->m;
    const sg_text_config *c = &m->cfg;
    const int D = c->hidden_size, T = c->max_positions, P = c->projection_size;
    if (n < 0) {
        snprintf(err, errlen, "cpu text encoder: batch size %d is negative", n);
        return -1;
    }
    if (n == 0) return 0;
    long bad = sg_text_ids_check(m, ids, (size_t)n * T);
    if (bad >= 0) {
        snprintf(err, errlen, "cpu text encoder: token id %d (query %ld, position %ld) outside the vocabulary [0, %d)",
                 ids[bad], bad / T, bad % T, c->vocab_size);
        return -1;
    }
    const int nt = sg_cpu_threads(threads);
    int chunk = SG_CPU_TEXT_CHUNK_ROWS / T;
    if (chunk < 1) chunk = 1;
    if (chunk > n) chunk = n;
    sg_cpu_bufs b;
    if (sg_cpu_bufs_alloc_seq(&b, D, c->intermediate_size, c->num_heads, T, 0, chunk, nt) != 0) {
        snprintf(err, errlen, "cpu text encoder: out of memory for the activations of %d queries (%d tokens, width %d)",
                 chunk, T, D);
        return -1;
    }
    const sg_cpu_stack st = {D, c->intermediate_size, c->num_heads, T, c->num_layers, c->layer_norm_eps,
                             c->activation};
    int *off = malloc(((size_t)chunk + 1) * sizeof *off), *kv = malloc((size_t)chunk * sizeof *kv);
    int32_t *pos_of = malloc((size_t)chunk * T * sizeof *pos_of), *rid = malloc((size_t)chunk * T * sizeof *rid);
    if (!off || !kv || !pos_of || !rid) {
        free(off); free(kv); free(pos_of); free(rid);
        sg_cpu_bufs_free(&b);
        snprintf(err, errlen, "cpu text encoder: out of memory");
        return -1;
    }
    for (int i0 = 0; i0 < n; i0 += chunk) {
        const int nb = n - i0 < chunk ? n - i0 : chunk;
        /* the rows that reach the output: attended positions, then position T-1 (see the design note) */
        off[0] = 0;
        int rows = 0;
        for (int s = 0; s < nb; s++) {
            const uint8_t *mk = mask ? mask + (size_t)(i0 + s) * T : NULL;
            const int32_t *id = ids + (size_t)(i0 + s) * T;
            int nk = 0;
            for (int t = 0; t < T; t++)
                if (!mk || mk[t]) {
                    pos_of[rows] = t;
                    rid[rows++] = id[t];
                    nk++;
                }
            if (nk == 0) { /* nothing attended: every position, uniform weights */
                for (int t = 0; t < T; t++) {
                    pos_of[rows] = t;
                    rid[rows++] = id[t];
                }
            } else if (mk && !mk[T - 1]) {
                pos_of[rows] = T - 1;
                rid[rows++] = id[T - 1];
            }
            kv[s] = nk;
            off[s + 1] = rows;
        }
        m->token_rows(m, rid, (size_t)rows, b.h);
        for (int r = 0; r < rows; r++) {
            float *h = b.h + (size_t)r * D;
            const float *pos = m->pos + (size_t)pos_of[r] * D;
            for (int d = 0; d < D; d++) h[d] += pos[d];
        }
        const sg_cpu_seqs seqs = {off, kv};
        /* A few rows (one short query is ~10) are a memory-bound pass over the weights that a second thread
         * barely speeds up, while every OpenMP barrier (dozens per layer) stalls when the machine is busy: on
         * the shared 2-core machine one query's layers took 0.08 s on one thread and 0.1-1.8 s on two. Results
         * do not depend on the thread count. */
        const int lt = rows < 256 ? 1 : nt;
        sg_cpu_encoder_layers(p->layers, m->layers, &st, nb, &seqs, &b, lt);
        for (int s = 0; s < nb; s++) /* each query's last row (position T-1), contiguous for the head GEMM */
            memcpy(b.ha + (size_t)s * D, b.h + (size_t)(off[s + 1] - 1) * D, (size_t)D * sizeof(float));
        sg_cpu_layer_norm(b.ha, b.hz, nb, D, m->final_ln_w, m->final_ln_b, c->layer_norm_eps, nt);
        sg_cpu_gemm(b.hz, (size_t)D, nb, &p->head, m->head_b, out + (size_t)i0 * P, (size_t)P, SG_GEMM_STORE, nt);
    }
    free(off);
    free(kv);
    free(pos_of);
    free(rid);
    sg_cpu_bufs_free(&b);
    return 0;
}

/* ---- the "cpu" text backend ---------------------------------------------------------------------------- */

typedef struct cpu_text_impl {
    sg_cpu_text *pack;
    int threads;
} cpu_text_impl;

static int cpu_text_embed(sg_text_backend *b, const int32_t *ids, const uint8_t *mask, int n, float *out, char *err,
                          size_t errlen) {
    cpu_text_impl *im = b->impl;
    if (n < 1 || n > b->max_batch) {
        snprintf(err, errlen, "cpu text backend: batch of %d queries, expected 1..%d", n, b->max_batch);
        return -1;
    }
    return sg_cpu_text_forward(im->pack, ids, mask, n, out, im->threads, err, errlen);
}

static void cpu_text_destroy(sg_text_backend *b) {
    if (!b) return;
    cpu_text_impl *im = b->impl;
    if (im) sg_cpu_text_free(im->pack);
    free(im);
    free(b);
}

sg_text_backend *sg_cpu_text_backend_create(const sg_text_model *m, const sg_backend_opts *opts, char *err,
                                            size_t errlen) {
    if (opts->threads < 0) {
        snprintf(err, errlen, "cpu text backend: threads %d, expected >= 0 (0 = all cores)", opts->threads);
        return NULL;
    }
    sg_text_backend *b = calloc(1, sizeof *b);
    cpu_text_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        snprintf(err, errlen, "cpu text backend: out of memory");
        return NULL;
    }
    b->name = "cpu";
    b->dim = m->cfg.projection_size;
    b->seq_len = m->cfg.max_positions;
    b->max_batch = opts->max_batch > 0 ? opts->max_batch : 64;
    b->impl = im;
    b->embed = cpu_text_embed;
    b->destroy = cpu_text_destroy;
    im->threads = opts->threads;
    im->pack = sg_cpu_text_pack(m, opts->threads, err, errlen);
    if (!im->pack) {
        cpu_text_destroy(b);
        return NULL;
    }
    return b;
}
