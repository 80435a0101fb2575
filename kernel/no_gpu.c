/* kernel/no_gpu.c — the GPU entry points of kernel/gpu.h for a build without the CUDA toolkit.
 *
 * Compiled instead of the .cu sources when the Makefile finds no nvcc (or WITH_CUDA=0): every GPU backend
 * then reports that it was not compiled in, and backend selection falls back to the CPU reference.
 */
#include <stdio.h>
#include <string.h>
#include "gpu.h"

static const char k_no_cuda[] = "this siglip2-embed was built without CUDA (no nvcc found at build time)";

int sg_gpu_compiled(void) { return 0; }

int sg_gpu_query(int device, sg_gpu_info *info, char *err, size_t errlen) {
    (void)device;
    memset(info, 0, sizeof *info);
    snprintf(err, errlen, "%s", k_no_cuda);
    return -1;
}

static sg_backend *not_built(const char *name, char *err, size_t errlen) {
    snprintf(err, errlen, "backend '%s' unavailable: %s", name, k_no_cuda);
    return NULL;
}

sg_backend *sg_cuda_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t errlen) {
    (void)m; (void)o;
    return not_built("cuda", err, errlen);
}
sg_backend *sg_sm90_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t errlen) {
    (void)m; (void)o;
    return not_built("sm90", err, errlen);
}
sg_backend *sg_sm100_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t errlen) {
    (void)m; (void)o;
    return not_built("sm100", err, errlen);
}

sg_text_backend *sg_cuda_text_backend_create(const sg_text_model *m, const sg_backend_opts *o, char *err,
                                             size_t errlen) {
    (void)m; (void)o;
    snprintf(err, errlen, "text backend 'cuda' unavailable: %s", k_no_cuda);
    return NULL;
}
