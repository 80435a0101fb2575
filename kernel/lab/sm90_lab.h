/* kernel/lab/sm90_lab.h — the stage-by-stage lab of the Hopper megakernel, callable from C.
 *
 * In the spirit of llm.c's dev/cuda: each megakernel task (GEMM tile with fused epilogue, attention of one
 * (image, head), LayerNorm of a row tile) is run alone, in a persistent kernel with the same roles and ring it
 * will have inside the megakernel, on inputs given as fp32 host arrays (rounded to bf16 on upload,
 * round-to-nearest-even), and its result comes back as fp32 for comparison with a CPU reference
 * (kernel/lab/test_sm90_lab.c).
 * Lab code (kernel/lab/lab.h): in build/liblab.a, linked only into the lab tests; in builds without CUDA the
 * stubs of lab_no_gpu.c refuse (sg_sm90_lab_available says so).
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
                                  work on one tile; 2: ping-pong in 2-CTA clusters, the CTAs of a cluster on row
                                  tiles 2p, 2p + 1 of the same columns, each multicasting half the W block into
                                  both (needs bn 128); 3: consumer warpgroups take alternate 64 x 256 tiles
                                  (m64n256k16; needs bn 256); 4: 3 in 2-CTA clusters with the W block multicast;
                                  5: 0 (the megakernel's 128 x 256 task) in 2-CTA clusters, W multicast (bn 256);
                                  6: 256 x 192 tiles, each consumer warpgroup 128 x 192 (bn 256 and N % 192 == 0;
                                  256 threads, no producer role) */
    int reps;                  /* > 0: also time this many back-to-back launches */
    double us;                 /* out: mean microseconds per launch (when reps > 0) */
    double tflops;             /* out: 2 M N K / time */
    int stages;                /* ring depth: 0 (= 4) or 3 (the megakernel's; schedule 0 only) */
    double t0, t1;             /* out: CLOCK_REALTIME seconds around the timed launches (an energy trace's window) */
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

/* The FP8 GEMM task (sm90_gemm_fp8.cuh): C = epilogue((A_q sa) . (W_q sw)^T), A and W given in fp32 and
 * quantised on the device by the FP8 quantise kernels (A in 1 x 128 blocks, W in 128 x 128 blocks, the
 * recipe of sg_fp8_quantize in kernel/cpu/cpu_mxfp8.h), then the ping-pong FP8 GEMM task. */
typedef struct sg_sm90_lab_gemm_fp8_args {
    int M, N, K;               /* M >= 1, N % 128 == 0, K % 128 == 0 */
    const float *A, *W;        /* [M, K], [N, K] fp32 */
    int pow2;                  /* 1: power-of-two scales (operands and FP8 output) */
    const float *bias;         /* [N] fp32 or NULL */
    int gelu;                  /* 1: tanh GELU after the bias */
    const float *residual;     /* [M, N] fp32 or NULL: added last */
    int out_mode;              /* 0: fp32 out; 1: bf16 out (widened here); 2: no store (main-loop timing probe);
                                  3: fp32 out and the E4M3 output with its 1 x 128 scales (out_q, out_s);
                                  4: the E4M3 output alone (what FC1 writes for FC2) */
    float *out;                /* [M, N] (modes 0, 1, 3) */
    unsigned char *out_q;      /* modes 3, 4: [M, N] E4M3 codes */
    float *out_s;              /* modes 3, 4: [M, N/128] scales, row-major */
    unsigned char *qa, *qw;    /* optional: the device quantiser's codes of A [M, K] and W [N, K] */
    float *sa, *sw;            /* optional: its scales, sa [M, K/128] row-major, sw [N/128, K/128] */
    int sub;                   /* consumer variant (sm90_gemm_fp8.cuh): ping-pong with 0 = m64n128 rounds,
                                  1 = m64n64 sub-tiles with overlapped promotion; 2 = cooperative (both
                                  warpgroups on one tile, 64 rows each) */
    int reps;                  /* > 0: also time this many back-to-back GEMM launches (and the A quantiser) */
    double us, tflops;         /* out: mean per GEMM launch, 2 M N K / time */
    double quant_us;           /* out: mean time of the activation quantiser over A [M, K] */
} sg_sm90_lab_gemm_fp8_args;

/* Quantises A and W on the device, runs the FP8 GEMM task once (outputs poisoned with NaN / 0xFF first),
 * copies results (and the quantised operands, where asked) back, then times a->reps launches. 0, or -1 +
 * err for bad arguments or no usable device. CUDA failures abort with file:line. */
int sg_sm90_lab_gemm_fp8(sg_sm90_lab_gemm_fp8_args *a, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
