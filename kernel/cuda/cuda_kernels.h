/* kernel/cuda/cuda_kernels.h — the portable backend's own kernels (everything that is not a GEMM).
 *
 * Shapes use the legend of kernel/model.h; M = n * T token rows. Activations are row-major. Each launcher
 * checks the launch and returns 0, or -1 with file:line in err; all run on the given stream and are safe to
 * capture into a CUDA graph (no allocation, no synchronisation).
 */
#ifndef SG_CUDA_KERNELS_H
#define SG_CUDA_KERNELS_H

#include <cstddef>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

typedef __nv_bfloat16 sg_bf16;

/* Sets the 256-entry uint8 → normalised float table the patchify kernel reads (sg_pixel_to_float of every byte
 * value, so the GPU normalisation is bit-identical to the CPU's). Call once before any sg_cu_patchify. */
int sg_cu_patchify_init(char *err, size_t errlen);

/* pix: [n, S, S, 3] uint8 HWC. Writes patches: [M, C*P*P] bf16 in (c, ky, kx) order (the Conv2d weight's
 * order), token m = img*T + i*G + j; and h: [M, D] fp32 = pos_b[m % T] (positions + conv bias), which the patch
 * GEMM then accumulates into. */
int sg_cu_patchify(const uint8_t *pix, int n, int S, int P, int D, const float *pos_b, sg_bf16 *patches,
                   float *h, cudaStream_t st, char *err, size_t errlen);

/* y[r] = LayerNorm(x[r]) * w + b for rows r < rows; x fp32 [rows, D], y bf16 [rows, D]; statistics in fp32,
 * biased variance, as torch. D <= 1024. */
int sg_cu_layernorm(const float *x, const float *w, const float *b, sg_bf16 *y, int rows, int D, float eps,
                    cudaStream_t st, char *err, size_t errlen);

/* x = GELU(x) in place: tanh_form 1 = gelu_pytorch_tanh, 0 = erf. For when the GEMM epilogue cannot do it. */
int sg_cu_gelu(sg_bf16 *x, size_t count, int tanh_form, cudaStream_t st, char *err, size_t errlen);

/* Multi-head self-attention over each image's T tokens, no mask. qkv: [n*T, 3D] bf16 (q | k | v, heads
 * contiguous inside each), followed by at least 16 readable rows of padding; out: [n*T, D] bf16 with heads
 * concatenated. Supports head_dim in {16, 32, 64, 128} and T <= 256; sg_cu_attention_supported says so. */
int sg_cu_attention_supported(int T, int D, int H, char *why, size_t whylen);
/* Raises the kernel's shared-memory limit for this T; once per process before the first launch (and outside
 * graph capture). */
int sg_cu_attention_init(int T, int D, int H, char *err, size_t errlen);
int sg_cu_attention(const sg_bf16 *qkv, sg_bf16 *out, int n, int T, int D, int H, cudaStream_t st, char *err,
                    size_t errlen);
/* The same with HF's attention mask (text tower): mask [n, T] bytes on the device, key j of sequence i attended
 * when mask[i*T + j] != 0 (masked keys get probability 0; a sequence with no attended key averages all T keys
 * uniformly, as HF's eager attention does); nullptr = no mask. */
int sg_cu_attention_masked(const sg_bf16 *qkv, const uint8_t *mask, sg_bf16 *out, int n, int T, int D, int H,
                           cudaStream_t st, char *err, size_t errlen);
/* Packed sequences of different lengths (the text tower's rows that reach its output, cuda_text.cu): sequence i is
 * rows [seq_off[i], seq_off[i+1]) of qkv / out (at most Tmax rows; device arrays, seq_off [n+1]), and attends to
 * its first seq_kv[i] rows (0: every row, uniform weights, HF eager's result when nothing is attended). qkv needs
 * 16 readable rows after the last sequence. */
int sg_cu_attention_packed(const sg_bf16 *qkv, const int *seq_off, const int *seq_kv, sg_bf16 *out, int n, int Tmax,
                           int D, int H, cudaStream_t st, char *err, size_t errlen);

/* The MAP head's attention: one query per head, q: [D] fp32 (probe projection, the same for every image);
 * kv: [n*T, 2D] bf16 (k | v). out: [n, D] bf16. */
int sg_cu_pool_attention(const float *q, const sg_bf16 *kv, sg_bf16 *out, int n, int T, int D, int H,
                         cudaStream_t st, char *err, size_t errlen);

#endif
