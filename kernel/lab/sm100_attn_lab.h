/* kernel/lab/sm100_attn_lab.h — the mma.sync attention task of the SM100 megakernel (sm100_attn.cuh) run alone,
 * callable from C, so kernel/lab/test_sm100_attn.c can compare it with a CPU reference on any sm_80+ GPU.
 *
 * The launcher runs one CTA per (image, head); the CTA copies the Q, K, V boxes of that head from global memory
 * into shared memory in the TMA SWIZZLE_128B layout the megakernel's boxes have (rows past the tensor zero) and
 * one warpgroup of it calls sg_mma_attn_task. Nothing in the tool calls this.
 * Lab code (kernel/lab/lab.h): in build/liblab.a, linked only into the lab tests; in builds without CUDA the
 * stubs of lab_no_gpu.c refuse.
 */
#ifndef SG_SM100_ATTN_LAB_H
#define SG_SM100_ATTN_LAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SG_SM100_ATTN_LAB_GUARD_ROWS 64 /* poisoned output rows after the tensor, returned for inspection */

/* Attention of n_img images x 12 heads. qkv_host: bf16 bits [n_img*196, 2304] (Q | K | V, head h at column 64 h
 * of each). out_host: bf16 bits [n_img*196 + SG_SM100_ATTN_LAB_GUARD_ROWS, 768]: the device buffer is filled with
 * 0xFF bytes (NaN) before the run and copied back whole, guard rows included, so unwritten elements and writes
 * past the tensor show. warpgroup (0 or 1): which warpgroup of a 256-thread CTA runs the task (1 checks that the
 * task only depends on threadIdx.x % 128). Returns 0, or -1 with a reason in err: "no CUDA device ...",
 * "kernels not built for this GPU ..." (this build has no code for it), bad arguments, or a CUDA error. */
int sg_sm100_attn_lab(const uint16_t *qkv_host, int n_img, int warpgroup, uint16_t *out_host, char *err,
                      size_t errlen);

/* sg_sw128_offset (sm100_attn.cuh), the box address function the task reads with, run on the host. */
uint32_t sg_sm100_attn_lab_sw128_offset(int row, int chunk);

#ifdef __cplusplus
}
#endif
#endif
