// kernel/sm90/sm90_backend.cu — the sm90 backend: the portable path's staging, CUDA graphs, weights and buffers
// (kernel/cuda), with the whole forward (patch embedding, encoder layers, post-LayerNorm, MAP head) run by the
// Hopper megakernel (sm90_mega.cu) in one launch, for every batch size: an image's embedding is then the same bits
// whatever batch it comes in.
//
// Refuses (NULL + reason, so --backend auto falls back to cuda) unless the device is compute capability 9.0
// (sm_90a code runs nowhere else) and the model has the shapes the megakernel is built for. --precision fp8 is
// not implemented yet and is refused with that reason.
#include <cstdio>
#include "../gpu.h"
#include "../cuda/cuda_backend.h"
#include "sm90_mega.h"

static int sm90_init(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    return sg_mega_encoder_init(&sg_sm90_mega_launcher, out, m, cm, err, errlen);
}

static const sg_cu_encoder_ops k_sm90_ops = {"sm90", sm90_init, sg_mega_encoder_run, sg_mega_encoder_destroy};

const sg_cu_encoder_ops *sg_sm90_encoder_ops(const sg_model *m, int device, char *err, size_t errlen) {
    if (sg_gpu_require_cc(device, 9, 0, "sm90", "H100 / H200: the Hopper megakernel is built for sm_90a", err,
                          errlen))
        return nullptr;
    if (!sg_mega_supported(&m->cfg, err, errlen)) return nullptr;
    return &k_sm90_ops;
}

extern "C" sg_backend *sg_sm90_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t n) {
    if (o->precision == SG_PRECISION_FP8) {
        snprintf(n ? err : nullptr, n, "sm90 backend: --precision fp8 is not implemented yet (bf16 only)");
        return nullptr;
    }
    const sg_cu_encoder_ops *ops = sg_sm90_encoder_ops(m, o->device, err, n);
    return ops ? sg_cu_backend_create_ops(m, o, ops, err, n) : nullptr;
}
