// kernel/sm100/sm100_backend.cu — the Blackwell backend entry points: the portable CUDA backend with the
// encoder layers of sm100_encoder.cu (tcgen05 GEMMs; FC1 in MXFP8 unless --precision bf16).
//
// Gate, in this order: the config must be one the kernels support (checked first: it needs no device, so the
// refusals are testable anywhere); the device must be compute capability 10.0 exactly (B200 / GB200): the
// kernels are compiled for sm_100a, and arch-specific ("a") code runs on no other part — a 10.3 B300 would
// need an sm_103a build — so any other device is refused with that reason rather than failing at the first
// launch. Never run on hardware yet: the runtime self-check (kernel/selfcheck.c) compares this backend with
// the portable one on a fixed input before `auto` may use it.
#include <cstdio>
#include "../gpu.h"
#include "../cuda/cuda_backend.h"
#include "sm100_encoder.h"

static const sg_cu_encoder_ops *sm100_ops(const sg_model *m, int device, int fc1_mxfp8, char *err, size_t n) {
    char why[256];
    if (!sg_sm100_config_supported(&m->cfg, why, sizeof why)) {
        snprintf(err, n, "sm100 backend: %s", why);
        return nullptr;
    }
    sg_gpu_info gi;
    char gerr[512];
    if (sg_gpu_query(device, &gi, gerr, sizeof gerr) != 0) {
        snprintf(err, n, "sm100 backend: %s", gerr);
        return nullptr;
    }
    if (gi.cc_major != 10 || gi.cc_minor != 0) {
        snprintf(err, n, "sm100 backend: needs a compute capability 10.0 GPU (B200/GB200; its kernels are built "
                         "for sm_100a), device %d is %s, sm_%d%d", device, gi.name, gi.cc_major, gi.cc_minor);
        return nullptr;
    }
    return sg_sm100_encoder_ops_impl(fc1_mxfp8);
}

// The default numerics (FC1 in MXFP8), for callers without backend options (sg_cu_encoder_ops_for).
const sg_cu_encoder_ops *sg_sm100_encoder_ops(const sg_model *m, int device, char *err, size_t n) {
    return sm100_ops(m, device, 1, err, n);
}

extern "C" sg_backend *sg_sm100_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t n) {
    const sg_cu_encoder_ops *ops = sm100_ops(m, o->device, o->precision != SG_PRECISION_BF16, err, n);
    return ops ? sg_cu_backend_create_ops(m, o, ops, err, n) : nullptr;
}
