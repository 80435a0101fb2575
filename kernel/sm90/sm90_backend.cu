// kernel/sm90/sm90_backend.cu — the sm90 backend: the portable path's staging, CUDA graphs and pooling head
// (kernel/cuda), with patch embedding, encoder layers and post-LayerNorm run by the Hopper megakernel
// (sm90_mega.cu) in one launch for batches of 16 images or more (smaller ones take the portable path, faster
// there so far).
//
// Refuses (NULL + reason, so --backend auto falls back to cuda) unless the device is compute capability 9.0
// (sm_90a code runs nowhere else) and the model has the shapes the megakernel is built for. --precision fp8 is
// not implemented yet and is refused with that reason.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "../gpu.h"
#include "../cuda/cuda_backend.h"
#include "sm90_lab.h"
#include "sm90_mega.h"

namespace {
struct sm90_ctx {
    sg_sm90_mega *mega;
    sg_sm90_mega_buffers buf;
    std::vector<sg_sm90_mega_layer_w> layers;
};
}  // namespace

static int sm90_init(void **out, const sg_model *m, sg_cu_model *cm, char *err, size_t errlen) {
    sm90_ctx *c = new (std::nothrow) sm90_ctx();
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    const int L = cm->cfg.num_layers;
    c->layers.resize(L);
    for (int l = 0; l < L; l++) {
        const sg_cu_layer &w = cm->w.layers[l];
        c->layers[l] = {w.qkv_w, w.o_w, w.fc1_w, w.fc2_w, w.ln1_w, w.ln1_b, w.ln2_w, w.ln2_b, w.o_b, w.fc2_b};
    }
    const size_t M = (size_t)cm->max_batch * sg_config_tokens(&cm->cfg);
    c->buf = {cm->max_batch, cm->h,       cm->y,         cm->qkv, M + 16, cm->att, cm->big,
              cm->big,       cm->w.patch_w, cm->w.pos_b, c->layers.data()};
    c->mega = sg_sm90_mega_create(m, &c->buf, err, errlen);
    if (!c->mega) {
        delete c;
        return -1;
    }
    *out = c;
    return 0;
}

static int sm90_run(void *ctx, sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, char *err,
                    size_t errlen) {
    sm90_ctx *c = (sm90_ctx *)ctx;
    return sg_sm90_mega_run(c->mega, &c->buf, pix, cm->w.post_ln_w, cm->w.post_ln_b, cm->cfg.layer_norm_eps, n, st, err,
                            errlen);
}

static void sm90_destroy(void *ctx) {
    sm90_ctx *c = (sm90_ctx *)ctx;
    sg_sm90_mega_free(c->mega);
    delete c;
}

// Batches of fewer than 16 images run the portable layers: the megakernel's chain of dependent stages costs
// ~1.3 ms at batch 1 against 0.6 ms for the portable path's CUDA graph (H100, docs/perf-notes.md), and the
// crossover was measured between 8 and 32 images.
static const sg_cu_encoder_ops k_sm90_ops = {"sm90", 16, 1, sm90_init, sm90_run, sm90_destroy};

const sg_cu_encoder_ops *sg_sm90_encoder_ops(const sg_model *m, int device, char *err, size_t errlen) {
    sg_gpu_info gi;
    char gerr[512];
    if (sg_gpu_query(device, &gi, gerr, sizeof gerr) != 0) {
        snprintf(err, errlen, "sm90 backend: %s", gerr);
        return nullptr;
    }
    if (gi.cc_major != 9 || gi.cc_minor != 0) {
        snprintf(err, errlen, "sm90 backend: %s is sm_%d%d; the Hopper megakernel runs on sm_90 only", gi.name,
                 gi.cc_major, gi.cc_minor);
        return nullptr;
    }
    if (!sg_sm90_mega_supported(&m->cfg, err, errlen)) return nullptr;
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

// Keeps the stage lab (sm90_lab.cu) linked into every CUDA build: tests reach it through weak references.
extern "C" const char *sg_sm90_backend_lab_stages(void) { return sg_sm90_lab_stages(); }
