// kernel/cuda/gpu_query.cu — placeholder until the portable CUDA backend lands (issue 5).
#include <cstdio>
#include <cstring>
#include "../gpu.h"
extern "C" int sg_gpu_compiled(void) { return 1; }
extern "C" int sg_gpu_query(int, sg_gpu_info *i, char *err, size_t n) {
    memset(i, 0, sizeof *i);
    snprintf(err, n, "GPU query not implemented yet");
    return -1;
}
extern "C" sg_backend *sg_cuda_backend_create(const sg_model *, const sg_backend_opts *, char *err, size_t n) {
    snprintf(err, n, "the portable CUDA backend is not implemented yet");
    return NULL;
}
