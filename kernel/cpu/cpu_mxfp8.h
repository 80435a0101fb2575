/* kernel/cpu/cpu_mxfp8.h — a CPU emulation of the numerics planned for the Blackwell (sm_100a) megakernel:
 * MXFP8 Linear layers (E4M3 values, one UE8M0 scale per 32 consecutive K elements of a row) and bf16
 * attention products, run over the whole SigLIP vision tower.
 *
 * It answers, without a B200, "is MXFP8 accurate enough for this model?". The quantisers are bit-faithful
 * (the same converters as the kernel: kernel/sm100/sm100_desc.h). The block-scaled product is modelled as
 * "each scaled E4M3 product exact, sums in fp32": sg_mxfp8_gemm_ref computes every 32-element block exactly
 * (in double, where it is exact) and adds the blocks into an fp32 accumulator, and the forward pass runs the
 * packed fp32 GEMM of kernel/cpu on dequantised operands (every product of two scaled E4M3 values is exact
 * in fp32, only the summation order differs; tests/test_mxfp8.c bounds the difference). The tensor core's
 * exact internal accumulation is not documented, so neither model is claimed to be bit-exact against it.
 *
 * It also emulates the SM90 (Hopper) FP8 recipes (SG_MX_FP8*): E4M3 with fp32 block scales, 1 x 128 per token
 * for inputs and 128 x 128 for weights, promoted into fp32 once per 128-wide K block (DeepGEMM). The forward
 * again runs the fp32 GEMM on dequantised operands: a dequantised value e4m3 * s (fp32 s) is rounded once to
 * fp32 (relative 2^-24, against E4M3's 2^-4), and the per-block promotion with a product exact inside the
 * block is the model ("fp32 per block"); the Hopper tensor core's reduced-precision accumulation inside a
 * block (DeepSeek-V3 technical report, "Increasing Accumulation Precision": about 14 bits kept on H800) is
 * not modelled: the sm90 lab measures it (kernel/lab/test_sm90_fp8.c).
 *
 * This is a test/measurement path, not a backend: it keeps its own copy of the quantised weights and is
 * slower than the fp32 CPU encoder.
 */
#ifndef SG_CPU_MXFP8_H
#define SG_CPU_MXFP8_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SG_MX_BLOCK 32 /* K elements per UE8M0 scale (OCP MX block size) */

/* Number formats an operand can be rounded to before a product. */
typedef enum {
    SG_MX_FP32 = 0,     /* unchanged */
    SG_MX_BF16 = 1,     /* bf16, round to nearest even */
    SG_MX_MXFP8 = 2,    /* E4M3 with one UE8M0 scale per 32 elements along K (only for GEMM operands) */
    /* The SM90 (Hopper) FP8 recipes, GEMM operands only (sg_fp8_quantize): */
    SG_MX_FP8 = 3,      /* E4M3, one fp32 scale amax/448 per 128-element K block of a row for Linear inputs
                         * (per token), per 128 x 128 block for Linear weights: DeepGEMM's SM90 recipe */
    SG_MX_FP8_POW2 = 4, /* the same blocks with power-of-two scales 2^ceil(log2(amax/448)) */
    SG_MX_FP8_CHAN = 5, /* one fp32 scale amax/448 per row over all of K: per output channel for weights,
                         * per token for inputs */
    SG_MX_FP8_BOUND = 6 /* FC2's input H only (sg_mx_fc2_plan.x): E4M3 with one fp32 scale bound_r/448 per
                         * token, bound_r an a-priori bound on max_j |H_rj| known before FC1 runs (from
                         * LayerNorm-2's output norm and per-layer constants of FC1, sg_mx_fc1_bound), so the
                         * GELU epilogue can quantise H without a row-wide amax */
} sg_mx_format;

/* What the emulated forward rounds. linear_w / linear_x: weights and inputs of every Linear layer (patch
 * embedding, QKV, out-proj, FC1, FC2, the head's K/V, probe query, out-proj, FC1, FC2). attention: Q, K, V
 * and the softmax probabilities P (SG_MX_MXFP8 is not allowed there). LayerNorm, softmax, GELU, biases and
 * residuals always stay fp32. */
typedef struct sg_mx_numerics {
    sg_mx_format linear_w, linear_x, attention;
    unsigned bf16_linears; /* SG_MX_LIN_* bits: these Linear kinds use bf16 (weights and inputs) instead of
                            * linear_w / linear_x, to measure which layers need more than MXFP8 */
} sg_mx_numerics;

/* FC2 per encoder layer (sg_mx_model_create_fc2): layers 0 keeps FC2 under sg_mx_numerics like every kind.
 * Otherwise bit l decides layer l's FC2 (the encoder's, not the head's), overriding bf16_linears' FC2 bit: set,
 * weights linear_w and input H in format x (linear_x's formats or SG_MX_FP8_BOUND); clear, bf16 weights and
 * inputs. */
typedef struct sg_mx_fc2_plan {
    unsigned layers;
    sg_mx_format x;
} sg_mx_fc2_plan;

/* Linear kinds for sg_mx_numerics.bf16_linears. */
enum {
    SG_MX_LIN_PATCH = 1u << 0, /* patch embedding */
    SG_MX_LIN_QKV = 1u << 1,
    SG_MX_LIN_OUT = 1u << 2,   /* attention out-proj */
    SG_MX_LIN_FC1 = 1u << 3,
    SG_MX_LIN_FC2 = 1u << 4,
    SG_MX_LIN_HEAD = 1u << 5   /* every Linear of the MAP head (K/V, probe query, out-proj, FC1, FC2) */
};

/* The SM100 plan: MXFP8 Linear layers, bf16 attention products (kernel-notes.md §4). The SM90 FP8 study sets
 * linear_w / linear_x to an SG_MX_FP8* format and keeps the other Linear kinds in bf16 with bf16_linears. */
static inline sg_mx_numerics sg_mx_numerics_sm100(void) {
    sg_mx_numerics n = {SG_MX_MXFP8, SG_MX_MXFP8, SG_MX_BF16, 0};
    return n;
}

#define SG_FP8_BLOCK 128 /* K elements (and weight rows) per fp32 scale in the SM90 recipe: one wgmma BK */
/* amax floor, 2^-64: an all-zero block gets a finite, normal scale (2^-64/448) and a finite 448/a. DeepGEMM
 * clamps at 1e-4, which would flush a real block whose values are all below 1e-4; 2^-64 touches no real data. */
#define SG_FP8_AMAX_MIN 0x1p-64f

/* The SM90 FP8 quantiser, bit-exact with kernel/sm90/sm90_gemm_fp8.cuh. Blocks are block_rows x block_k
 * (inputs 1 x 128, weights 128 x 128, per channel 1 x k; the last block of a row or column may be partial).
 * Per block: a = max(amax, SG_FP8_AMAX_MIN) over its non-NaN elements; fp32 scale s = a / 448 and
 * q = e4m3(x * (448 / a)), each operation one fp32 rounding (pow2 = 1: s = 2^ceil(log2(a/448)) and
 * q = e4m3(x * 2^-e), exact scaling). x [rows, k] (row stride ldx) -> q [rows, k] (row stride k) and
 * s [ceil(rows/block_rows), ceil(k/block_k)] row-major. */
void sg_fp8_quantize(const float *x, size_t ldx, int rows, int k, int block_rows, int block_k, int pow2, uint8_t *q,
                     float *s);

/* y [rows, k] (row stride ldy) = e4m3(q) * s with the blocks of sg_fp8_quantize (product in double, rounded
 * once to fp32). */
void sg_fp8_dequantize(const uint8_t *q, const float *s, int rows, int k, int block_rows, int block_k, float *y,
                       size_t ldy);

/* The SM90 product model, "fp32 per block": Y [m, n] (row stride n) with A [m, k] in 1 x 128 blocks (sa
 * [m, k/128]) and B [n, k] in 128 x 128 blocks (sb [ceil(n/128), k/128]); per 128-wide K block the E4M3 dot
 * product is exact (double) and rounded to fp32 (the tensor core's block result, assumed exact), then
 * acc = fmaf(block, sa * sb, acc) in block order: DeepGEMM's promotion. k % 128 == 0. */
void sg_fp8_gemm_ref(const uint8_t *qa, const float *sa, const uint8_t *qb, const float *sb, int m, int n, int k,
                     float *y);

/* Quantises rows x k values (row stride ldx) to E4M3 codes q [rows, k] (row stride k) and UE8M0 scale codes
 * s [rows, ceil(k/32)]: per 32-element block of a row, u = sg_ue8m0_for_amax(amax), q = e4m3(x / 2^(u-127)).
 * A last partial block (k % 32 != 0) takes its amax over the elements it has. NaN elements become the E4M3
 * NaN code and do not take part in amax. */
void sg_mxfp8_quantize(const float *x, size_t ldx, int rows, int k, uint8_t *q, uint8_t *s);

/* y [rows, k] (row stride ldy) = q * 2^(s-127), the inverse of sg_mxfp8_quantize up to rounding. */
void sg_mxfp8_dequantize(const uint8_t *q, const uint8_t *s, int rows, int k, float *y, size_t ldy);

/* In place: x = dequantize(quantize(x)) for rows x k (row stride ldx) in the given format, as a GEMM input
 * (SG_MX_BF16: element-wise bf16 rounding; SG_MX_FP32: nothing; the SM90 FP8 formats in 1 x 128 blocks, or
 * 1 x k for SG_MX_FP8_CHAN). */
void sg_mx_round_rows(float *x, size_t ldx, int rows, int k, sg_mx_format fmt);

/* Reference block-scaled product Y [m, n] = (Aq·sa)(Bq·sb)ᵀ with A [m, k] and B [n, k] both K-major, as the
 * block-scaled MMA computes D += Σ_k A·2^(SA-127) · B·2^(SB-127): per 32-element block the dot product of
 * the E4M3 values is exact (double), scaled by 2^(SA+SB-254) and added to an fp32 accumulator in block
 * order. y has row stride n. */
void sg_mxfp8_gemm_ref(const uint8_t *qa, const uint8_t *sa, const uint8_t *qb, const uint8_t *sb, int m, int n,
                       int k, float *y);

/* Prepared (rounded and packed) weights of the emulated model. */
typedef struct sg_mx_model sg_mx_model;

/* Rounds m's Linear weights per num.linear_w (the SM90 FP8 formats in their weight blocks: 128 x 128, or one
 * row for SG_MX_FP8_CHAN) and packs them for the CPU GEMM. NULL with a reason on
 * allocation failure or an unsupported config / numerics. The model must outlive the result. */
sg_mx_model *sg_mx_model_create(const sg_model *m, sg_mx_numerics num, int threads, char *err, size_t errlen);
/* The same with FC2's format chosen per layer (sg_mx_fc2_plan; {0, SG_MX_FP32} is sg_mx_model_create). */
sg_mx_model *sg_mx_model_create_fc2(const sg_model *m, sg_mx_numerics num, sg_mx_fc2_plan fc2, int threads,
                                    char *err, size_t errlen);
void sg_mx_model_free(sg_mx_model *mx);

/* The per-layer constants of SG_MX_FP8_BOUND, from FC1's weights w [F, D] (row j = output channel j, as the
 * model stores them; rounded here per fmt as the model's FC1 weights are) and bias b [F]:
 *   C = 1.0625 * max_j sw_j ||qw_j||_2 (qw_j the decoded E4M3 values of row j, sw_j its fp32 scale; for a
 *       format without a per-row scale, ||w_j|| of the rounded row), B = max_j |b_j| + 0.25,
 * so that per token bound_r = ||y_r||_2 * C + B (y_r LayerNorm-2's fp32 output, before FC1's input rounding)
 * bounds |gelu(x_rj)| for every j: |x_rj - b_j| <= ||qa_r|| sa_r ||qw_j|| sw_j (Cauchy-Schwarz), the E4M3
 * rounding of the row grows its norm by at most 2^-4 (||qa_r|| sa_r <= 1.0625 ||y_r||), and GELU's negative
 * lobe is above -0.17 (so |gelu(x)| <= max(|x|, 0.17) <= |x - b| + |b| + 0.25). C is computed in double and
 * rounded once to fp32; B in fp32. */
void sg_mx_fc1_bound(const float *w, const float *b, int F, int D, sg_mx_format fmt, float *C, float *B);

/* Optional measurement: with f set, every forward appends, for every layer and token, the pair (int32 layer,
 * float32 bound_r / max_j |H_rj|) to f (FC2's input H in fp32, before any rounding), whatever the FC2 plan. NULL,
 * the default, records nothing. Single-threaded writes from the forward's calling thread. */
void sg_mx_set_bound_log(sg_mx_model *mx, FILE *f);

/* The emulated forward: the contract of sg_cpu_forward (pixel_values [n, C, S, S] normalised, pooled [n, D]
 * and/or last_hidden [n, T, D], either may be NULL), with the numerics given at creation. Returns 0, or -1
 * with a reason in err. */
int sg_mx_forward(const sg_mx_model *mx, const float *pixel_values, int n, float *pooled, float *last_hidden,
                  int threads, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
