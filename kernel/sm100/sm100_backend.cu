// kernel/sm100/sm100_backend.cu — the Blackwell backend entry point. The SM100 megakernel (issue 7) is not
// written yet, so the backend reports that and `auto` falls back to the portable CUDA path.
#include <cstdio>
#include "../gpu.h"
#include "../cuda/cuda_backend.h"

const sg_cu_encoder_ops *sg_sm100_encoder_ops(const sg_model *, int, char *err, size_t n) {
    snprintf(err, n, "the Blackwell (sm100) megakernel is not implemented yet");
    return nullptr;
}

extern "C" sg_backend *sg_sm100_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t n) {
    const sg_cu_encoder_ops *ops = sg_sm100_encoder_ops(m, o->device, err, n);
    return ops ? sg_cu_backend_create_ops(m, o, ops, err, n) : nullptr;
}
