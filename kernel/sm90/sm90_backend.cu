// kernel/sm90/sm90_backend.cu — the sm90 backend: the portable path's staging, CUDA graphs, weights and buffers
// (kernel/cuda), with the whole forward (patch embedding, encoder layers, post-LayerNorm, MAP head) run by the
// Hopper megakernel (sm90_mega.cu) in one launch, for every batch size: an image's embedding is then the same bits
// whatever batch it comes in.
//
// Refuses (NULL + reason, so --backend auto falls back to cuda) unless the device is compute capability 9.0
// (sm_90a code runs nowhere else) and the model has the shapes the megakernel is built for. Numerics: bf16 (the
// default, and --precision bf16), or --precision fp8: FC1, and FC2 of layers 2-11, in E4M3 with row scales
// (sm90_fp8row.cuh), every other GEMM in bf16.
#include <cstdio>
#include <cstdlib>
#include "../gpu.h"
#include "../cuda/cuda_backend.h"
#include "sm90_mega.h"

static int sm90_init_bf16(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    return sg_mega_encoder_init(&sg_sm90_mega_launcher, out, m, cm, err, errlen);
}
static int sm90_init_fp8(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    return sg_mega_encoder_init(&sg_sm90_mega_launcher_fp8, out, m, cm, err, errlen);
}

static const sg_cu_encoder_ops k_sm90_bf16 = {"sm90", SG_CU_NUMERICS_BF16, sm90_init_bf16, sg_mega_encoder_run,
                                              sg_mega_encoder_destroy};
static const sg_cu_encoder_ops k_sm90_fp8 = {
    "sm90", "fp8: FC1 of every layer and FC2 of layers 2-11 in E4M3 (one scale per token and per output channel), "
            "the rest bf16 with fp32 accumulation",
    sm90_init_fp8, sg_mega_encoder_run, sg_mega_encoder_destroy};
// --precision fp8 with SG_FP8_FC2_LAYERS set (a lab knob, docs/debug-knobs.md): FC2's layers are the knob's.
static const sg_cu_encoder_ops k_sm90_fp8_knob = {
    "sm90", "fp8: FC1 of every layer in E4M3 and FC2 of the layers SG_FP8_FC2_LAYERS names (one scale per token "
            "and per output channel), the rest bf16 with fp32 accumulation",
    sm90_init_fp8, sg_mega_encoder_run, sg_mega_encoder_destroy};

// The encoder ops for `prec` (FC1 and FC2 in FP8 for SG_PRECISION_FP8, else bf16), or NULL + err (cuda_backend.h).
const sg_cu_encoder_ops *sg_sm90_encoder_ops(const sg_model *m, int device, sg_precision prec, char *err,
                                             size_t errlen) {
    if (sg_gpu_require_cc(device, 9, 0, "sm90", "H100 / H200: the Hopper megakernel is built for sm_90a", err,
                          errlen))
        return nullptr;
    if (!sg_mega_supported(&m->cfg, err, errlen)) return nullptr;
    if (prec != SG_PRECISION_FP8) return &k_sm90_bf16;
    return getenv("SG_FP8_FC2_LAYERS") ? &k_sm90_fp8_knob : &k_sm90_fp8;
}

extern "C" sg_backend *sg_sm90_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t n) {
    const sg_cu_encoder_ops *ops = sg_sm90_encoder_ops(m, o->device, o->precision, err, n);
    return ops ? sg_cu_backend_create_ops(m, o, ops, err, n) : nullptr;
}
