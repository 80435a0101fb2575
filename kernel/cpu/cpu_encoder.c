/* kernel/cpu/cpu_encoder.c — the fp32 forward pass of the SigLIP vision tower on the CPU (model-spec.md §3).
 *
 * Design: images are processed in chunks of about SG_CPU_CHUNK_ROWS token rows, so every GEMM sees a tall
 * X (good blocking) while the activations stay bounded whatever n is. Per chunk:
 *   im2col → patch GEMM added onto the positions → L × [LN1 → QKV GEMM → attention per (image, head) →
 *   out-proj GEMM + residual → LN2 → FC1 GEMM + GELU → FC2 GEMM + residual] → post-LN → MAP head.
 * Large products run through the packed GEMM (cpu_gemm.c) with all threads; attention runs one (image, head)
 * per task, its two products (Q·Kᵀ and P·V) through the same GEMM on one thread, with K and V packed per
 * task. LayerNorm statistics and softmax sums are accumulated in double; everything stored is fp32.
 */
#include "cpu_encoder.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_math.h"
#include "cpu_bufs.h"
#include "cpu_packed.h"

#define SG_CPU_CHUNK_ROWS 2048 /* token rows per chunk: 10 images of 196 tokens, ~60 MB of activations at base */

/* 64-byte aligned float buffer of n floats (n > 0), or NULL. */
static float *falloc(size_t n) {
    if (n == 0 || n > (SIZE_MAX - 64) / sizeof(float)) return NULL;
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes);
}

void sg_cpu_bufs_free(sg_cpu_bufs *c) {
    free(c->h); free(c->y); free(c->qkv); free(c->att); free(c->mlp); free(c->scratch);
    free(c->ha); free(c->hz); free(c->hm);
}

int sg_cpu_bufs_alloc_seq(sg_cpu_bufs *c, int D_, int F_, int H, int T_, int in_cols, int seqs, int threads) {
    const size_t D = (size_t)D_, F = (size_t)F_, T = (size_t)T_, Dh = (size_t)(D_ / H);
    const size_t K = (size_t)in_cols, M = (size_t)seqs * T;
    memset(c, 0, sizeof *c);
    c->scratch_per = (sg_cpu_pack_size((int)T, (int)Dh) + sg_cpu_pack_size((int)Dh, (int)T) + T * T + 15) / 16 * 16;
    c->h = falloc(M * D);
    c->y = falloc(M * D);
    c->qkv = falloc(M * 3 * D);
    c->att = falloc(M * D);
    c->mlp = falloc(M * (F > K ? F : K));
    c->scratch = falloc((size_t)threads * c->scratch_per);
    c->ha = falloc((size_t)seqs * D);
    c->hz = falloc((size_t)seqs * D);
    c->hm = falloc((size_t)seqs * F);
    if (!c->h || !c->y || !c->qkv || !c->att || !c->mlp || !c->scratch || !c->ha || !c->hz || !c->hm) {
        sg_cpu_bufs_free(c);
        return -1;
    }
    return 0;
}

int sg_cpu_bufs_alloc(sg_cpu_bufs *c, const sg_config *cfg, int images, int threads) {
    return sg_cpu_bufs_alloc_seq(c, cfg->hidden_size, cfg->intermediate_size, cfg->num_heads, sg_config_tokens(cfg),
                                 sg_config_patch_dim(cfg), images, threads);
}

/* X[b*T + p] = the (c, ky, kx)-ordered pixels of patch p = gi*G + gj of image b (the conv as a GEMM). */
void sg_cpu_im2col(const float *px, int nb, const sg_config *cfg, float *x, int threads) {
    const int S = cfg->image_size, P = cfg->patch_size, G = sg_config_grid(cfg), T = G * G;
    const int C = cfg->num_channels, K = sg_config_patch_dim(cfg);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int row = 0; row < nb * T; row++) {
        int b = row / T, p = row % T, gi = p / G, gj = p % G;
        float *dst = x + (size_t)row * K;
        for (int c = 0; c < C; c++)
            for (int ky = 0; ky < P; ky++)
                memcpy(dst + (size_t)(c * P + ky) * P,
                       px + (((size_t)b * C + c) * S + (size_t)gi * P + ky) * S + (size_t)gj * P,
                       (size_t)P * sizeof(float));
    }
}

/* Multi-head self-attention of one layer: att[r, h*Dh:(h+1)*Dh] = softmax(q kᵀ / sqrt(Dh)) v within each sequence.
 * Without seqs: nb sequences of T rows, every row a key. With seqs: sequence b is rows [off[b], off[b+1]) and its
 * keys are its first kv[b] rows (kv[b] == 0: every row is a key with weight 1/len, HF eager's result when no
 * position is attended). */
static void self_attention(const float *qkv, float *att, int nb, int D, int H, int T, const sg_cpu_seqs *seqs,
                           sg_cpu_bufs *bufs, int threads) {
    const int Dh = D / H;
    const float scale = 1.0f / sqrtf((float)Dh); /* HF: head_dim**-0.5; exact (0.125) for Dh = 64 */
    const size_t ld = (size_t)3 * D;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        float *scr = bufs->scratch + (size_t)omp_get_thread_num() * bufs->scratch_per;
        float *kp = scr, *vp = kp + sg_cpu_pack_size(T, Dh), *s = vp + sg_cpu_pack_size(Dh, T);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < nb * H; task++) {
            int b = task / H, h = task % H;
            const int r0 = seqs ? seqs->off[b] : b * T, len = seqs ? seqs->off[b + 1] - r0 : T;
            const int uniform = seqs && seqs->kv[b] == 0, nk = seqs && !uniform ? seqs->kv[b] : len;
            const float *q = qkv + (size_t)r0 * ld + (size_t)h * Dh, *k = q + D, *v = q + 2 * D;
            if (uniform) {
                for (size_t i = 0; i < (size_t)len * nk; i++) s[i] = 1.0f / (float)nk;
            } else {
                sg_cpu_pack_nk(k, ld, nk, Dh, kp);         /* scores = Q·Kᵀ: W = K [nk, Dh] */
                sg_cpu_wpack wk = {kp, nk, Dh};
                sg_cpu_gemm_range(q, ld, &wk, NULL, s, (size_t)nk, 0, len, 0, nk, SG_GEMM_STORE);
                for (int i = 0; i < len; i++) sg_cpu_softmax_row(s + (size_t)i * nk, nk, scale);
            }
            sg_cpu_pack_kn(v, ld, nk, Dh, vp);             /* out = P·V: Wᵀ = V [nk, Dh] */
            sg_cpu_wpack wv = {vp, Dh, nk};
            sg_cpu_gemm_range(s, (size_t)nk, &wv, NULL, att + (size_t)r0 * D + (size_t)h * Dh, (size_t)D, 0, len,
                              0, Dh, SG_GEMM_STORE);
        }
    }
}

void sg_cpu_encoder_layers(const sg_cpu_layer_pack *packs, const sg_layer *layers, const sg_cpu_stack *st, int nb,
                           const sg_cpu_seqs *seqs, sg_cpu_bufs *c, int threads) {
    const int D = st->D, F = st->F, M = seqs ? seqs->off[nb] : nb * st->T;
    const size_t Dz = (size_t)D;
    const sg_gemm_epilogue act = st->act == SG_ACT_GELU_ERF ? SG_GEMM_GELU_ERF : SG_GEMM_GELU_TANH;
    for (int l = 0; l < st->L; l++) {
        const sg_layer *ly = &layers[l];
        const sg_cpu_layer_pack *lp = &packs[l];
        sg_cpu_layer_norm(c->h, c->y, M, D, ly->ln1_w, ly->ln1_b, st->eps, threads);
        sg_cpu_gemm(c->y, Dz, M, &lp->qkv, lp->qkv_b, c->qkv, 3 * Dz, SG_GEMM_STORE, threads);
        self_attention(c->qkv, c->att, nb, D, st->H, st->T, seqs, c, threads);
        sg_cpu_gemm(c->att, Dz, M, &lp->o, ly->o_b, c->h, Dz, SG_GEMM_ADD, threads);
        sg_cpu_layer_norm(c->h, c->y, M, D, ly->ln2_w, ly->ln2_b, st->eps, threads);
        sg_cpu_gemm(c->y, Dz, M, &lp->fc1, ly->fc1_b, c->mlp, (size_t)F, act, threads);
        sg_cpu_gemm(c->mlp, (size_t)F, M, &lp->fc2, ly->fc2_b, c->h, Dz, SG_GEMM_ADD, threads);
    }
}

/* MAP head attention: one query (the probe's, precomputed) over the T tokens of each image.
 * kv: [nb*T, 2D] (k | v); out: [nb, D]. */
static void head_attention(const float *probe_q, const float *kv, float *out, int nb, const sg_config *cfg,
                           sg_cpu_bufs *bufs, int threads) {
    const int D = cfg->hidden_size, H = cfg->num_heads, Dh = sg_config_head_dim(cfg), T = sg_config_tokens(cfg);
    const float scale = 1.0f / sqrtf((float)Dh);
    const size_t ld = (size_t)2 * D;
#pragma omp parallel num_threads(threads) if (threads > 1 && nb * H > 1)
    {
        float *s = bufs->scratch + (size_t)omp_get_thread_num() * bufs->scratch_per;
#pragma omp for schedule(static)
        for (int task = 0; task < nb * H; task++) {
            int b = task / H, h = task % H;
            const float *q = probe_q + (size_t)h * Dh;
            const float *k0 = kv + (size_t)b * T * ld + (size_t)h * Dh, *v0 = k0 + D;
            for (int j = 0; j < T; j++) {
                const float *k = k0 + (size_t)j * ld;
                double d = 0;
                for (int i = 0; i < Dh; i++) d += (double)q[i] * k[i];
                s[j] = (float)d;
            }
            sg_cpu_softmax_row(s, T, scale);
            float *o = out + (size_t)b * D + (size_t)h * Dh;
            for (int i = 0; i < Dh; i++) {
                double a = 0;
                for (int j = 0; j < T; j++) a += (double)s[j] * v0[(size_t)j * ld + i];
                o[i] = (float)a;
            }
        }
    }
}

/* The forward of nb images (px: [nb, C, S, S]) into pooled [nb, D] and last_hidden [nb, T, D] (each may be
 * NULL). */
static void forward_chunk(const sg_cpu_pack *pk, const float *px, int nb, float *pooled, float *last_hidden,
                          sg_cpu_bufs *c, int threads) {
    const sg_model *m = pk->m;
    const sg_config *cfg = &m->cfg;
    const int D = cfg->hidden_size, T = sg_config_tokens(cfg), M = nb * T;
    const size_t Dz = (size_t)D;
    const float eps = cfg->layer_norm_eps;
    const sg_gemm_epilogue act = cfg->activation == SG_ACT_GELU_ERF ? SG_GEMM_GELU_ERF : SG_GEMM_GELU_TANH;

    sg_cpu_im2col(px, nb, cfg, c->mlp, threads);
    for (int b = 0; b < nb; b++) memcpy(c->h + (size_t)b * T * Dz, m->pos, (size_t)T * Dz * sizeof(float));
    sg_cpu_gemm(c->mlp, (size_t)sg_config_patch_dim(cfg), M, &pk->patch, m->patch_b, c->h, Dz, SG_GEMM_ADD, threads);

    const sg_cpu_stack st = {D, cfg->intermediate_size, cfg->num_heads, T, cfg->num_layers, eps, cfg->activation};
    sg_cpu_encoder_layers(pk->layers, m->layers, &st, nb, NULL, c, threads);
    sg_cpu_layer_norm(c->h, c->y, M, D, m->post_ln_w, m->post_ln_b, eps, threads);
    if (last_hidden) memcpy(last_hidden, c->y, (size_t)M * Dz * sizeof(float));
    if (!pooled) return;

    /* MAP head: a = out_proj(attn(probe, y, y)); pooled = a + fc2(gelu(fc1(LN(a)))). The residual is the
     * attention output, not the probe. */
    sg_cpu_gemm(c->y, Dz, M, &pk->head_kv, m->head_in_b + D, c->qkv, 2 * Dz, SG_GEMM_STORE, threads);
    head_attention(pk->probe_q, c->qkv, c->hz, nb, cfg, c, threads);
    sg_cpu_gemm(c->hz, Dz, nb, &pk->head_out, m->head_out_b, c->ha, Dz, SG_GEMM_STORE, threads);
    sg_cpu_layer_norm(c->ha, c->hz, nb, D, m->head_ln_w, m->head_ln_b, eps, threads);
    sg_cpu_gemm(c->hz, Dz, nb, &pk->head_fc1, m->head_fc1_b, c->hm, (size_t)cfg->intermediate_size, act, threads);
    sg_cpu_gemm(c->hm, (size_t)cfg->intermediate_size, nb, &pk->head_fc2, m->head_fc2_b, c->ha, Dz, SG_GEMM_ADD,
                threads);
    memcpy(pooled, c->ha, (size_t)nb * Dz * sizeof(float));
}

int sg_cpu_forward_packed(const sg_cpu_pack *pk, const float *pixel_values, int n, float *pooled,
                          float *last_hidden, int threads, char *err, size_t errlen) {
    if (n < 0) {
        snprintf(err, errlen, "cpu encoder: batch size %d is negative", n);
        return -1;
    }
    if (n == 0) return 0;
    const sg_config *cfg = &pk->m->cfg;
    const int T = sg_config_tokens(cfg), D = cfg->hidden_size, S = cfg->image_size, C = cfg->num_channels;
    const int nt = sg_cpu_threads(threads);
    int chunk = SG_CPU_CHUNK_ROWS / T;
    if (chunk < 1) chunk = 1;
    if (chunk > n) chunk = n;
    sg_cpu_bufs bufs;
    if (sg_cpu_bufs_alloc(&bufs, cfg, chunk, nt) != 0) {
        snprintf(err, errlen, "cpu encoder: out of memory for the activations of %d images (%d tokens, width %d)",
                 chunk, T, D);
        return -1;
    }
    for (int i0 = 0; i0 < n; i0 += chunk) {
        int nb = n - i0 < chunk ? n - i0 : chunk;
        forward_chunk(pk, pixel_values + (size_t)i0 * C * S * S, nb, pooled ? pooled + (size_t)i0 * D : NULL,
                      last_hidden ? last_hidden + (size_t)i0 * T * D : NULL, &bufs, nt);
    }
    sg_cpu_bufs_free(&bufs);
    return 0;
}

int sg_cpu_forward(const sg_model *m, const float *pixel_values, int n, float *pooled, float *last_hidden,
                   int threads, char *err, size_t errlen) {
    sg_cpu_pack *pk = sg_cpu_pack_model(m, threads, err, errlen);
    if (!pk) return -1;
    int rc = sg_cpu_forward_packed(pk, pixel_values, n, pooled, last_hidden, threads, err, errlen);
    sg_cpu_pack_free(pk);
    return rc;
}

void sg_pixels_to_chw(const uint8_t *rgb, int S, float *chw) {
    float lut[256]; /* 256 values instead of S*S*3 double multiplies; the same bits as sg_pixel_to_float */
    for (int i = 0; i < 256; i++) lut[i] = sg_pixel_to_float((uint8_t)i);
    const size_t plane = (size_t)S * S;
    for (size_t p = 0; p < plane; p++)
        for (int c = 0; c < 3; c++) chw[c * plane + p] = lut[rgb[3 * p + c]];
}
