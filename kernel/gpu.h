/* kernel/gpu.h — what the rest of the program may ask of the GPU side.
 *
 * Implemented by the CUDA sources (kernel/cuda, kernel/sm90, kernel/sm100) when the build has nvcc, and by
 * kernel/no_gpu.c otherwise, so that callers never need #ifdefs. Every function reports problems as a
 * return value plus a message; none aborts on a missing driver or device.
 */
#ifndef SG_GPU_H
#define SG_GPU_H

#include <stddef.h>
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sg_gpu_info {
    int device_count;        /* CUDA devices visible */
    char name[256];          /* of the queried device */
    int cc_major, cc_minor;  /* compute capability */
    int sm_count;
    size_t total_mem;        /* bytes */
    int driver_version;      /* e.g. 13000 */
    int runtime_version;     /* the CUDA runtime this binary was built with */
    char uuid[48];           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi prints it; "" if unknown */
    char pci_bus_id[32];     /* "dddd:bb:dd.0" (domain:bus:device.function); "" if unknown */
} sg_gpu_info;

/* 1 when this binary was built with CUDA support, 0 otherwise. */
int sg_gpu_compiled(void);

/* Queries device `device`. Returns 0, or -1 with a reason in err (built without CUDA, no driver, driver
 * older than the runtime, no device, ordinal out of range). */
int sg_gpu_query(int device, sg_gpu_info *info, char *err, size_t errlen);

/* The megakernel backends' device gate: 0 when device `device` has compute capability major.minor exactly
 * (arch-specific "a" code runs on no other part), else -1 with "<who> backend: needs a compute capability
 * M.m GPU (<what>), device D is NAME, sm_XY", or "<who> backend: " + the query's reason. */
int sg_gpu_require_cc(int device, int major, int minor, const char *who, const char *what, char *err, size_t errlen);

/* Backend constructors: NULL + err when the backend cannot run here. */
sg_backend *sg_cuda_backend_create(const sg_model *m, const sg_backend_opts *opts, char *err, size_t errlen);
sg_backend *sg_sm90_backend_create(const sg_model *m, const sg_backend_opts *opts, char *err, size_t errlen);
sg_backend *sg_sm100_backend_create(const sg_model *m, const sg_backend_opts *opts, char *err, size_t errlen);

/* The portable CUDA path's text backend (kernel/cuda/cuda_text.cu). */
sg_text_backend *sg_cuda_text_backend_create(const sg_text_model *m, const sg_backend_opts *opts, char *err,
                                             size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
