// kernel/sm100/sm100_backend.cu — the Blackwell backend entry point. The SM100 megakernel (issue 7) is not
// written yet, so the backend reports that and `auto` falls back to the portable CUDA path.
#include <cstdio>
#include "../gpu.h"
extern "C" sg_backend *sg_sm100_backend_create(const sg_model *, const sg_backend_opts *, char *err, size_t n) {
    snprintf(err, n, "the Blackwell (sm100) megakernel is not implemented yet");
    return NULL;
}
