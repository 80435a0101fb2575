// kernel/sm100/sm100_backend.cu — the Blackwell backend entry points: the portable CUDA backend (staging, graphs,
// weights, buffers) with the Blackwell megakernel (sm100_mega.cu: the whole forward, patch embedding to MAP head,
// in one launch for every batch size; FC1 in block-scaled MXFP8 unless --precision bf16).
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
#include "sm100_mega.h"

// 1 when the sm100 kernels support config c, else 0 with the reason in why (needs no device). The megakernel's
// own shape check (sg_mega_supported) and the portable backend's checks (sg_cu_model_init) come on top.
static int sm100_config_supported(const sg_config *c, char *why, size_t whylen) {
    const int D = c->hidden_size, F = c->intermediate_size;
    if (D % 128 || F % 128 || D > 1024) {
        snprintf(why, whylen, "the sm100 kernels need hidden_size and intermediate_size multiples of 128 and "
                              "hidden_size <= 1024 (got %d, %d)", D, F);
        return 0;
    }
    if (c->activation != SG_ACT_GELU_TANH) {
        snprintf(why, whylen, "the sm100 FC1 epilogue implements gelu_pytorch_tanh only (this config uses erf GELU)");
        return 0;
    }
    return 1;
}

static int sm100_mega_init_bf16(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    return sg_mega_encoder_init(&sg_sm100_mega_launcher, out, m, cm, err, errlen);
}
static int sm100_mega_init_mxfp8(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    return sg_mega_encoder_init(&sg_sm100_mega_launcher_mxfp8, out, m, cm, err, errlen);
}

static const sg_cu_encoder_ops k_sm100_mega_bf16 = {"sm100", SG_CU_NUMERICS_BF16, sm100_mega_init_bf16,
                                                    sg_mega_encoder_run, sg_mega_encoder_destroy};
static const sg_cu_encoder_ops k_sm100_mega_mxfp8 = {
    "sm100", "FC1 in MXFP8 (E4M3 with one power-of-two scale per 32 values), the rest bf16 with fp32 accumulation",
    sm100_mega_init_mxfp8, sg_mega_encoder_run, sg_mega_encoder_destroy};

static const sg_cu_encoder_ops *sm100_ops(const sg_model *m, int device, int fc1_mxfp8, char *err, size_t n) {
    char why[256];
    if (!sm100_config_supported(&m->cfg, why, sizeof why)) {
        snprintf(err, n, "sm100 backend: %s", why);
        return nullptr;
    }
    if (sg_gpu_require_cc(device, 10, 0, "sm100", "B200/GB200; its kernels are built for sm_100a", err, n))
        return nullptr;
    if (!sg_mega_supported(&m->cfg, err, n)) return nullptr;
    return fc1_mxfp8 ? &k_sm100_mega_mxfp8 : &k_sm100_mega_bf16;
}

// FC1 in MXFP8 unless prec is SG_PRECISION_BF16 (the default numerics: docs/perf-notes.md, kernel/sm100).
const sg_cu_encoder_ops *sg_sm100_encoder_ops(const sg_model *m, int device, sg_precision prec, char *err, size_t n) {
    return sm100_ops(m, device, prec != SG_PRECISION_BF16, err, n);
}

extern "C" sg_backend *sg_sm100_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t n) {
    const sg_cu_encoder_ops *ops = sg_sm100_encoder_ops(m, o->device, o->precision, err, n);
    return ops ? sg_cu_backend_create_ops(m, o, ops, err, n) : nullptr;
}
