/* kernel/lab/lab_gpu.c — kernel/lab/lab.h for a build with CUDA: the lab's kernels (the .cu files of
 * kernel/lab) are in build/liblab.a beside this file. The Makefile compiles it instead of lab_no_gpu.c when nvcc
 * is found.
 */
#include "lab.h"

int sg_lab_built(char *why, size_t whylen) {
    if (whylen) why[0] = 0;
    return 1;
}
