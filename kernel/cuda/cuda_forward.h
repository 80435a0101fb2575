/* kernel/cuda/cuda_forward.h — the SigLIP vision forward pass on one stream, for the portable backend.
 *
 * sg_cu_model owns the device weights, the cuBLASLt handle and workspace, and activation buffers sized for
 * max_batch images. sg_cu_forward only enqueues work (kernels and cuBLASLt calls, no allocation, no sync), so
 * the backend captures it into one CUDA graph per batch size. Per layer (M = n*T rows):
 *   y = LN1(h) [bf16]; qkv = y Wqkv^T + b [bf16]; att = attention(qkv) [bf16]; h += att Wo^T + bo [fp32];
 *   y = LN2(h); big = GELU(y W1^T + b1) [bf16]; h += big W2^T + b2 [fp32]
 * then y = post-LN(h); kv = y Wkv^T + b; pooled = MAP head (q fixed) → out-proj → a; a += MLP(LN(a)).
 * The residual stream h stays fp32; GEMM inputs are bf16 with fp32 accumulation.
 */
#ifndef SG_CUDA_FORWARD_H
#define SG_CUDA_FORWARD_H

#include <cstdint>
#include "cuda_gemm.h"
#include "cuda_weights.h"

typedef struct sg_cu_plan {
    sg_cu_gemm patch, qkv, o, fc1, fc2, hkv, hout, hfc1, hfc2;
    int gelu_fused;                 /* 1: GELU in fc1's epilogue; 0: bias epilogue + sg_cu_gelu (erf GELU, or no
                                       fused cuBLASLt algorithm for the shape) */
} sg_cu_plan;

struct sg_cu_model;

/* The buffers and shape of one run of the encoder layers (either tower): h [M, D] fp32 residual stream (in
 * and out), y [M, D], qkv [M + 16, 3D], att [M, D], big [M, F] bf16 scratch; M = n*T rows, or with packed
 * sequences (seq_off, seq_kv: device arrays, see sg_cu_attention_packed) the M given, at least seq_off[n]
 * (the rows past it are computed and ignored). */
typedef struct sg_cu_stack {
    float *h;
    sg_bf16 *y, *qkv, *att, *big;
    int n, T, D, F, H;
    float eps;
    int tanh_form;  /* 1: gelu_pytorch_tanh, 0: erf */
    int M;          /* 0: n*T */
    const int *seq_off, *seq_kv;  /* nullptr: n sequences of T rows */
} sg_cu_stack;

/* The four per-layer GEMM plans for M = n*T rows, and whether fc1's epilogue applies GELU. */
typedef struct sg_cu_layer_plans {
    sg_cu_gemm *qkv, *o, *fc1, *fc2;
    int gelu_fused;
} sg_cu_layer_plans;

/* Enqueues the L pre-LN layers on st (no allocation, no sync: capturable). mask: [n, T] device bytes (the
 * text tower's attention mask) or nullptr. mark (may be NULL) is called after each op, for profiling. 0, or
 * -1 with err. Both towers run their layers through here. */
int sg_cu_encoder_layers(const sg_cu_layer *layers, int L, const sg_cu_layer_plans *p, const sg_cu_stack *s,
                         const uint8_t *mask, cublasLtHandle_t lt, void *ws, cudaStream_t st,
                         void (*mark)(void *ctx, const char *what), void *mark_ctx, char *err, size_t errlen);

/* A replacement for the whole forward (the megakernels of kernel/sm90 and kernel/sm100 plug in here, for every
 * batch size): the backend keeps the portable path's staging, graphs, weights and buffers, and hands the
 * computation over. Contract of run: pix is [n, S, S, 3] uint8 on the device; it enqueues work on st only (no
 * allocation, no sync: it is captured into the backend's CUDA graph; the first call for each n happens outside
 * capture, so lazy set-up per batch size may happen there) and leaves cm->pooled [n, D] fp32 = the pooler_output
 * (patch embedding, encoder, post-LayerNorm, MAP head). init runs once after sg_cu_model_init, with the weights
 * uploaded and the activations allocated; destroy frees what init made. Both return 0 or -1 with err. */
/* The numerics line of every GPU path that runs in bf16 (cuda, and the megakernels at --precision bf16). */
#define SG_CU_NUMERICS_BF16 "bf16 GEMMs and attention with fp32 accumulation"

typedef struct sg_cu_encoder_ops {
    const char *name;      /* the backend's name: "sm90", "sm100" */
    const char *numerics;  /* sg_backend.numerics: what its embeddings are computed in */
    int (*init)(void **ctx, const sg_model *m, struct sg_cu_model *cm, char *err, size_t errlen);
    int (*run)(void *ctx, struct sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, char *err,
               size_t errlen);
    void (*destroy)(void *ctx);
} sg_cu_encoder_ops;

typedef struct sg_cu_model {
    sg_config cfg;
    const sg_cu_encoder_ops *enc;   /* NULL: the portable kernels and cuBLASLt GEMMs */
    void *enc_ctx;
    sg_cu_weights w;
    cublasLtHandle_t lt;
    void *workspace;                /* SG_CU_GEMM_WORKSPACE bytes */
    int max_batch;
    float *h;                       /* [M, D] residual stream */
    sg_bf16 *y;                     /* [M, D] LayerNorm output */
    sg_bf16 *qkv;                   /* [M + 16, 3D] (the head reuses it as kv [M, 2D]) */
    sg_bf16 *att;                   /* [M, D] */
    sg_bf16 *big;                   /* [M, max(F, C*P*P)]: fc1 output, and the patches */
    sg_bf16 *hatt, *hy, *hmlp;      /* head: [n, D], [n, D], [n, F] */
    float *pooled;                  /* [n, D] head output = pooler_output */
    sg_cu_plan **plans;             /* [max_batch + 1], made on first use of each n */
    void *act;                      /* one allocation holding the activations */
} sg_cu_model;

/* Checks that the config is one these kernels support (writes why not), uploads the weights, allocates
 * activations for max_batch images on the current device. 0, or -1 with err (unsupported, out of memory with
 * sizes, CUDA/cuBLASLt error); nothing stays allocated on failure. */
int sg_cu_model_init(sg_cu_model *cm, const sg_model *m, int max_batch, char *err, size_t errlen);

/* Makes the GEMM plans for batch size n (1..max_batch) if not made yet and, only when the environment sets
 * SG_CUDA_GEMM_TUNE=1 and st is not capturing, times each GEMM's heuristic candidates on st to pick the fastest
 * (sg_cu_gemm_tune). It overwrites the activation buffers, after work already queued on st. Call before
 * capturing sg_cu_forward. */
int sg_cu_model_prepare(sg_cu_model *cm, int n, cudaStream_t st, char *err, size_t errlen);

/* Enqueues the forward of n images: pix is [n, S, S, 3] uint8 on the device; the result lands in cm->pooled.
 * profile = 1 (never while capturing): times every op with events, waits, and prints a per-op summary. */
int sg_cu_forward(sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, int profile, char *err,
                  size_t errlen);

/* Hands the encoder layers to ops (see sg_cu_encoder_ops); ops->init runs now. 0, or -1 with err (cm keeps the
 * portable layers). */
int sg_cu_model_set_encoder(sg_cu_model *cm, const sg_model *m, const sg_cu_encoder_ops *ops, char *err,
                            size_t errlen);

void sg_cu_model_free(sg_cu_model *cm);

#endif
