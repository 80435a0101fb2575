/* kernel/sm90/sm90_lab.h — the stage-by-stage lab of the Hopper megakernel, callable from C.
 *
 * In the spirit of llm.c's dev/cuda: each megakernel task (GEMM tile with fused epilogue, attention of one
 * (image, head), LayerNorm of a row tile) is run alone, in a persistent kernel with the same roles and ring it
 * will have inside the megakernel, on inputs given as fp32 host arrays (rounded to bf16 on upload,
 * round-to-nearest-even), and its result comes back as fp32 for comparison with a CPU reference
 * (tests/test_sm90_lab.c).
 * These functions exist only in CUDA builds: C callers declare them weak and test the address
 * (tests/test_sm90_lab.c), and they are linked in through sg_sm90_backend_create (sm90_backend.cu).
 */
#ifndef SG_SM90_LAB_H
#define SG_SM90_LAB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C = epilogue(A . W^T): A [M, K], W [N, K] (nn.Linear layout), out [M, N]. */
typedef struct sg_sm90_lab_gemm_args {
    int M, N, K;               /* M >= 1, N % bn == 0, K % 64 == 0 */
    const float *A, *W;        /* rounded to bf16 on upload */
    const float *bias;         /* [N] fp32 or NULL */
    int gelu;                  /* 1: tanh GELU after the bias */
    const float *residual;     /* [M, N] fp32 or NULL: added last */
    int out_bf16;              /* 1: the kernel stores bf16 (widened here); 0: fp32; 2: no store at all (a timing
                                  probe of the main loop: out is left untouched) */
    float *out;                /* [M, N] result */
    int bn;                    /* tile width: 128 (also when 0) or 256; N % bn == 0 */
    int pingpong;              /* 1: consumer warpgroups take alternate 128 x 128 tiles (needs bn 128); 0: both
                                  work on one tile */
    int reps;                  /* > 0: also time this many back-to-back launches */
    double us;                 /* out: mean microseconds per launch (when reps > 0) */
    double tflops;             /* out: 2 M N K / time */
} sg_sm90_lab_gemm_args;

/* Attention of B images x 12 heads: qkv [B*196, 2304] (Q | K | V, head h at column 64 h of each),
 * out [B*196, 768] (bf16 on the device, widened here). */
typedef struct sg_sm90_lab_attn_args {
    int B;
    const float *qkv;
    float *out;
    int reps;
    double us;
} sg_sm90_lab_attn_args;

/* The megakernel skeleton on an MLP block: out = residual + FC2(GELU(FC1(X) + b1)) + b2 in one persistent,
 * cooperative launch (grid = SM count), FC2 row tiles waiting on FC1 row tiles through global counters. */
typedef struct sg_sm90_lab_mlp_args {
    int M;                     /* rows (196 per image), 1 .. 262,144 */
    const float *X;            /* [M, 768] FC1 input (the LN2 output), bf16 on upload */
    const float *W1, *b1;      /* [3072, 768], [3072] */
    const float *W2, *b2;      /* [768, 3072], [768] */
    const float *residual;     /* [M, 768] fp32 */
    float *out;                /* [M, 768] fp32 result of the last launch (with M rows) */
    int pingpong;              /* consumer schedule, as in sg_sm90_lab_gemm_args */
    int ticket;                /* 1: tasks handed out by a global atomic ticket; 0: static round-robin */
    int stress;                /* > 0: that many launches with mixed row counts (<= M) before the checked one */
    int reps;                  /* > 0: time this many launches with M rows */
    double us, tflops;         /* out: mean per launch */
    int grid;                  /* out: CTAs launched */
} sg_sm90_lab_mlp_args;

/* LayerNorm over D = 768 (the LN1 / LN2 / post-LN task): x [M, 768] fp32, out [M, 768] (bf16 on the device,
 * widened here). */
typedef struct sg_sm90_lab_ln_args {
    int M;
    const float *x, *gamma, *beta;
    float eps;
    float *out;
    int reps;
    double us;
} sg_sm90_lab_ln_args;

/* 1 when the lab can run here (a compute capability 9.x device is present), else 0 with the reason. */
int sg_sm90_lab_available(char *err, size_t errlen);

/* Runs the GEMM task kernel once (device output poisoned with NaN first), copies the result to a->out, then
 * times a->reps launches. 0, or -1 + err for bad arguments or no usable device. CUDA failures abort with
 * file:line. */
int sg_sm90_lab_gemm(sg_sm90_lab_gemm_args *a, char *err, size_t errlen);

/* Same for the attention task. */
int sg_sm90_lab_attn(sg_sm90_lab_attn_args *a, char *err, size_t errlen);

/* Runs the MLP skeleton: `stress` mixed-size launches, then one launch with M rows (outputs poisoned first)
 * whose result goes to a->out, then `reps` timed launches. 0, or -1 + err. */
int sg_sm90_lab_mlp(sg_sm90_lab_mlp_args *a, char *err, size_t errlen);

/* Runs the LayerNorm task kernel once (output poisoned first), then times a->reps launches. 0, or -1 + err. */
int sg_sm90_lab_layernorm(sg_sm90_lab_ln_args *a, char *err, size_t errlen);

/* One line naming the lab stages compiled into this binary. */
const char *sg_sm90_lab_stages(void);

#ifdef __cplusplus
}
#endif
#endif
