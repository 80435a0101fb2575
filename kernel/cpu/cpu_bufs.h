/* kernel/cpu/cpu_bufs.h — the activation buffers of one forward chunk and the patch unfolding, shared by the
 * fp32 reference (cpu_encoder.c, which implements them) and the MXFP8 emulation (cpu_mxfp8.c). Internal to
 * kernel/cpu. */
#ifndef SG_CPU_BUFS_H
#define SG_CPU_BUFS_H

#include <stddef.h>
#include "../model.h"

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

/* X[b*T + p] = the (c, ky, kx)-ordered pixels of patch p = gi*G + gj of image b (the conv as a GEMM).
 * px: [nb, C, S, S]; x: [nb*T, C*P*P]. */
void sg_cpu_im2col(const float *px, int nb, const sg_config *cfg, float *x, int threads);

#endif
