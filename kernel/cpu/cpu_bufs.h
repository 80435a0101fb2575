/* kernel/cpu/cpu_bufs.h — the activation buffers of one forward chunk and the patch unfolding, shared by the
 * fp32 reference (cpu_encoder.c, which implements them) and the MXFP8 emulation (cpu_mxfp8.c). Internal to
 * kernel/cpu. */
#ifndef SG_CPU_BUFS_H
#define SG_CPU_BUFS_H

#include <stddef.h>
#include <stdint.h>
#include "../model.h"
#include "cpu_packed.h"

/* Activations of one chunk; sizes for up to `images` images. */
typedef struct sg_cpu_bufs {
    float *h;       /* [M, D]  residual stream */
    float *y;       /* [M, D]  LayerNorm output */
    float *qkv;     /* [M, 3D] q | k | v per token (the head uses [M, 2D] k | v) */
    float *att;     /* [M, D]  attention output, heads concatenated */
    float *mlp;     /* [M, max(F, C*P*P)]  FC1 output; im2col patches before the first layer */
    float *scratch; /* threads x scratch_per: packed K, packed V, scores */
    size_t scratch_per;
    float *ha, *hz, *hm; /* head: [images, D] attention out / LN out, [images, F] MLP */
} sg_cpu_bufs;

/* Allocates every buffer for up to `images` images and `threads` workers (64-byte aligned). 0, or -1 with
 * nothing left allocated. */
int sg_cpu_bufs_alloc(sg_cpu_bufs *c, const sg_config *cfg, int images, int threads);
void sg_cpu_bufs_free(sg_cpu_bufs *c);
/* The same for `seqs` sequences of T tokens of width D (H heads, MLP F), whose first GEMM reads in_cols
 * columns from mlp (the vision tower's im2col patches; the text tower passes 0). */
int sg_cpu_bufs_alloc_seq(sg_cpu_bufs *c, int D, int F, int H, int T, int in_cols, int seqs, int threads);

/* What the layer loop needs from either tower's config. */
typedef struct sg_cpu_stack {
    int D, F, H, T, L;
    float eps;
    sg_activation act;
} sg_cpu_stack;

/* Sequences of different lengths packed row after row (the text tower's, see cpu_text.c): sequence b is rows
 * [off[b], off[b+1]) (at most T of them) and attends to its first kv[b] rows; kv[b] == 0 means every row with
 * weight 1/len (what HF's eager attention gives when no position is attended). */
typedef struct sg_cpu_seqs {
    const int *off; /* [nb + 1], off[0] = 0 */
    const int *kv;  /* [nb] */
} sg_cpu_seqs;

/* The L pre-LN encoder layers (both towers share the structure) over c->h [M, D] in place, using c->y, qkv,
 * att and mlp as scratch. seqs NULL: nb sequences of T rows (M = nb*T), every row a key (vision); else as
 * sg_cpu_seqs says (M = off[nb]). */
void sg_cpu_encoder_layers(const sg_cpu_layer_pack *packs, const sg_layer *layers, const sg_cpu_stack *st, int nb,
                           const sg_cpu_seqs *seqs, sg_cpu_bufs *c, int threads);

/* X[b*T + p] = the (c, ky, kx)-ordered pixels of patch p = gi*G + gj of image b (the conv as a GEMM).
 * px: [nb, C, S, S]; x: [nb*T, C*P*P]. */
void sg_cpu_im2col(const float *px, int nb, const sg_config *cfg, float *x, int threads);

#endif
