// kernel/sm90/sm90_mega.h — host interface of the Hopper megakernel (sm90_mega.cu), for sm90_backend.cu.
//
// The megakernel owns only what the portable path does not have: tensor maps, fp32 copies of two biases, the
// dependency counters. Weights and activation buffers are the portable path's (kernel/cuda), passed in here.
#ifndef SG_SM90_MEGA_H
#define SG_SM90_MEGA_H

#include <cstddef>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "../model.h"

struct sg_sm90_mega_layer_w {
    const __nv_bfloat16 *qkv_w, *o_w, *fc1_w, *fc2_w;  // [2304, 768], [768, 768], [3072, 768], [768, 3072]
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *o_b, *fc2_b;
};

struct sg_sm90_mega_buffers {
    int max_batch;
    float *h;               // [M, 768] fp32
    __nv_bfloat16 *y;       // [M, 768]
    __nv_bfloat16 *qkv;     // [qkv_rows >= M, 2304]
    size_t qkv_rows;
    __nv_bfloat16 *att;     // [M, 768]
    __nv_bfloat16 *H;       // [M, 3072]
    __nv_bfloat16 *patches; // [M, 768] (the portable path's `big` buffer)
    const __nv_bfloat16 *patch_w;  // [768, 768] Conv2d weight as [out, c ky kx]
    const float *pos_b;     // [196, 768] positions + conv bias
    const sg_sm90_mega_layer_w *layers;  // [L], host array
};

struct sg_sm90_mega;

// 1 if the megakernel's fixed shapes fit this model, else 0 with the reason.
int sg_sm90_mega_supported(const sg_config *c, char *why, size_t whylen);
// Builds tensor maps over b's buffers and weights, uploads fp32 biases, allocates counters (current device).
// NULL + err on failure.
sg_sm90_mega *sg_sm90_mega_create(const sg_model *m, const sg_sm90_mega_buffers *b, char *err, size_t errlen);
// Enqueues patch embedding + encoder layers + post-LayerNorm for n images: pix [n, 224, 224, 3] uint8 (device)
// -> y = post_LN(encoder(embed(pix))); h holds the encoder output. One kernel launch; capturable.
int sg_sm90_mega_run(sg_sm90_mega *g, const sg_sm90_mega_buffers *b, const uint8_t *pix, const float *post_w,
                     const float *post_b, float eps, int n, cudaStream_t st, char *err, size_t errlen);
void sg_sm90_mega_free(sg_sm90_mega *g);

#endif
