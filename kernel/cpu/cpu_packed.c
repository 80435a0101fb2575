/* kernel/cpu/cpu_packed.c — packing an sg_model's Linear weights into GEMM panels (see cpu_packed.h).
 *
 * Design: one aligned allocation holds every packed matrix; each matrix starts on a 64-byte boundary. The
 * q, k and v projections of a layer are packed as one [3D, D] matrix so a single GEMM makes all three; the
 * pooling head's k and v rows of in_proj are packed as one [2D, D] matrix. The probe's query does not depend
 * on the image, so it is computed here once, in double.
 */
#include "cpu_packed.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SG_ALIGN_FLOATS 16 /* 64 bytes: one cache line, and ymm loads never split a line */

int sg_cpu_threads(int threads) {
    if (threads > 0) return threads;
    int t = omp_get_max_threads();
    return t > 0 ? t : 1;
}

static size_t round_up(size_t n) { return (n + SG_ALIGN_FLOATS - 1) / SG_ALIGN_FLOATS * SG_ALIGN_FLOATS; }

/* Packs rows_per_seg rows from each of nseg [rows_per_seg, k] matrices, stacked, as one [nseg*rows, k]. */
static void pack_stacked(const float *const *seg, int nseg, int rows_per_seg, int k, float *dst) {
    int n = nseg * rows_per_seg;
    for (int j0 = 0; j0 < n; j0 += SG_GEMM_NR) {
        float *panel = dst + (size_t)j0 * k;
        for (int j = 0; j < SG_GEMM_NR; j++) {
            int r = j0 + j;
            const float *row = r < n ? seg[r / rows_per_seg] + (size_t)(r % rows_per_seg) * k : NULL;
            for (int i = 0; i < k; i++) panel[(size_t)i * SG_GEMM_NR + j] = row ? row[i] : 0.0f;
        }
    }
}

size_t sg_cpu_layer_pack_floats(int D, int F) {
    return round_up(sg_cpu_pack_size(3 * D, D)) + round_up((size_t)3 * D) + round_up(sg_cpu_pack_size(D, D)) +
           round_up(sg_cpu_pack_size(F, D)) + round_up(sg_cpu_pack_size(D, F));
}

float *sg_cpu_layer_pack_place(sg_cpu_layer_pack *lp, int D, int F, float *p) {
    lp->qkv = (sg_cpu_wpack){p, 3 * D, D}; p += round_up(sg_cpu_pack_size(3 * D, D));
    lp->qkv_b = p; p += round_up((size_t)3 * D);
    lp->o = (sg_cpu_wpack){p, D, D}; p += round_up(sg_cpu_pack_size(D, D));
    lp->fc1 = (sg_cpu_wpack){p, F, D}; p += round_up(sg_cpu_pack_size(F, D));
    lp->fc2 = (sg_cpu_wpack){p, D, F}; p += round_up(sg_cpu_pack_size(D, F));
    return p;
}

void sg_cpu_layer_pack_part(const sg_layer *ly, sg_cpu_layer_pack *lp, int D, int F, int part) {
    switch (part) {
    case 0: {
        const float *seg[3] = {ly->q_w, ly->k_w, ly->v_w};
        pack_stacked(seg, 3, D, D, lp->qkv.p);
        break;
    }
    case 1:
        memcpy(lp->qkv_b, ly->q_b, (size_t)D * sizeof(float));
        memcpy(lp->qkv_b + D, ly->k_b, (size_t)D * sizeof(float));
        memcpy(lp->qkv_b + 2 * D, ly->v_b, (size_t)D * sizeof(float));
        break;
    case 2: sg_cpu_pack_nk(ly->o_w, (size_t)D, D, D, lp->o.p); break;
    case 3: sg_cpu_pack_nk(ly->fc1_w, (size_t)D, F, D, lp->fc1.p); break;
    default: sg_cpu_pack_nk(ly->fc2_w, (size_t)F, D, F, lp->fc2.p); break;
    }
}

static int config_ok(const sg_config *c, char *err, size_t errlen) {
    if (c->hidden_size <= 0 || c->intermediate_size <= 0 || c->num_heads <= 0 || c->num_layers <= 0 ||
        c->image_size <= 0 || c->patch_size <= 0) {
        snprintf(err, errlen, "cpu encoder: config has a non-positive size (hidden %d, mlp %d, heads %d, layers %d, "
                 "image %d, patch %d)", c->hidden_size, c->intermediate_size, c->num_heads, c->num_layers,
                 c->image_size, c->patch_size);
        return -1;
    }
    if (c->hidden_size % c->num_heads != 0) {
        snprintf(err, errlen, "cpu encoder: hidden_size %d is not divisible by num_heads %d", c->hidden_size,
                 c->num_heads);
        return -1;
    }
    if (c->image_size % c->patch_size != 0) {
        snprintf(err, errlen, "cpu encoder: image_size %d is not divisible by patch_size %d", c->image_size,
                 c->patch_size);
        return -1;
    }
    if (c->num_channels != 3) {
        snprintf(err, errlen, "cpu encoder: num_channels is %d, expected 3 (RGB)", c->num_channels);
        return -1;
    }
    return 0;
}

sg_cpu_pack *sg_cpu_pack_model(const sg_model *m, int threads, char *err, size_t errlen) {
    const sg_config *c = &m->cfg;
    if (config_ok(c, err, errlen) != 0) return NULL;
    const int D = c->hidden_size, F = c->intermediate_size, L = c->num_layers, K = sg_config_patch_dim(c);
    /* Sizes fit: the loader checked every tensor against the file, so each is far below SIZE_MAX. */
    size_t s_patch = round_up(sg_cpu_pack_size(D, K)), s_dd = round_up(sg_cpu_pack_size(D, D));
    size_t s_fc1 = round_up(sg_cpu_pack_size(F, D)), s_fc2 = round_up(sg_cpu_pack_size(D, F));
    size_t s_kv = round_up(sg_cpu_pack_size(2 * D, D)), s_d = round_up((size_t)D);
    size_t per_layer = sg_cpu_layer_pack_floats(D, F);
    size_t total = s_patch + (size_t)L * per_layer + s_kv + s_dd + s_fc1 + s_fc2 + s_d;

    sg_cpu_pack *pk = calloc(1, sizeof *pk);
    if (pk) pk->layers = calloc((size_t)L, sizeof *pk->layers);
    if (pk && pk->layers && total <= SIZE_MAX / sizeof(float)) pk->buf = aligned_alloc(64, total * sizeof(float));
    if (!pk || !pk->layers || !pk->buf) {
        snprintf(err, errlen, "cpu encoder: out of memory packing weights (%.1f MB)", total * 4.0 / 1e6);
        sg_cpu_pack_free(pk);
        return NULL;
    }
    pk->m = m;
    float *p = pk->buf;
    pk->patch = (sg_cpu_wpack){p, D, K}; p += s_patch;
    for (int l = 0; l < L; l++) p = sg_cpu_layer_pack_place(&pk->layers[l], D, F, p);
    pk->head_kv = (sg_cpu_wpack){p, 2 * D, D}; p += s_kv;
    pk->head_out = (sg_cpu_wpack){p, D, D}; p += s_dd;
    pk->head_fc1 = (sg_cpu_wpack){p, F, D}; p += s_fc1;
    pk->head_fc2 = (sg_cpu_wpack){p, D, F}; p += s_fc2;
    pk->probe_q = p;

    /* Task t < 5L packs one matrix of layer t/5; the last five pack the patch embedding and the head. */
    const int tasks = 5 * L + 5;
#pragma omp parallel for schedule(dynamic, 1) num_threads(sg_cpu_threads(threads))
    for (int t = 0; t < tasks; t++) {
        if (t < 5 * L) {
            sg_cpu_layer_pack_part(&m->layers[t / 5], &pk->layers[t / 5], D, F, t % 5);
            continue;
        }
        switch (t - 5 * L) {
        case 0: sg_cpu_pack_nk(m->patch_w, (size_t)K, D, K, pk->patch.p); break;
        case 1: sg_cpu_pack_nk(m->head_in_w + (size_t)D * D, (size_t)D, 2 * D, D, pk->head_kv.p); break;
        case 2: sg_cpu_pack_nk(m->head_out_w, (size_t)D, D, D, pk->head_out.p); break;
        case 3:
            sg_cpu_pack_nk(m->head_fc1_w, (size_t)D, F, D, pk->head_fc1.p);
            sg_cpu_pack_nk(m->head_fc2_w, (size_t)F, D, F, pk->head_fc2.p);
            break;
        default:
            for (int j = 0; j < D; j++) {
                const float *wq = m->head_in_w + (size_t)j * D; /* in_proj rows 0:D are Wq */
                double s = m->head_in_b[j];
                for (int i = 0; i < D; i++) s += (double)m->probe[i] * wq[i];
                pk->probe_q[j] = (float)s;
            }
            break;
        }
    }
    return pk;
}

void sg_cpu_pack_free(sg_cpu_pack *pk) {
    if (!pk) return;
    free(pk->buf);
    free(pk->layers);
    free(pk);
}
