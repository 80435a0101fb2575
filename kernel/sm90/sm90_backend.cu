// kernel/sm90/sm90_backend.cu — placeholder until the Hopper megakernel lands (issue 6).
#include <cstdio>
#include "../gpu.h"
extern "C" sg_backend *sg_sm90_backend_create(const sg_model *, const sg_backend_opts *, char *err, size_t n) {
    snprintf(err, n, "the Hopper megakernel is not implemented yet");
    return NULL;
}
