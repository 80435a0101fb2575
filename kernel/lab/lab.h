/* kernel/lab/lab.h — whether this build has the lab's CUDA kernels.
 *
 * kernel/lab holds experiment and check kernels (the Hopper stage lab, the FP8 GEMM task, the Blackwell
 * attention task, MXFP8 tile and per-GEMM tcgen05 GEMM), their launchers and their tests. They are built into
 * their own archive (build/liblab.a), linked only into the lab tests, never into siglip2-embed. In a build
 * without CUDA the archive holds lab_no_gpu.c instead: the same entry points, each refusing with the reason,
 * so the lab tests link everywhere and SKIP where the kernels are absent.
 */
#ifndef SG_LAB_H
#define SG_LAB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the lab's CUDA kernels are compiled into this build (lab_gpu.c), else 0 with the reason in why
 * (lab_no_gpu.c). Says nothing about a device being present: each launcher checks that itself. */
int sg_lab_built(char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
