// kernel/cuda/cuda_forward.cu — the forward pass as a sequence of cuBLASLt GEMMs and our kernels (see .h).
#include <cstdlib>
#include <cstring>
#include "cuda_forward.h"
#include "cuda_common.h"

int sg_cu_model_init(sg_cu_model *cm, const sg_model *m, int max_batch, char *err, size_t errlen) {
    memset(cm, 0, sizeof *cm);
    const sg_config *c = &m->cfg;
    cm->cfg = *c;
    const int D = c->hidden_size, F = c->intermediate_size, H = c->num_heads, T = sg_config_tokens(c);
    const int CPP = sg_config_patch_dim(c);
    if (c->num_channels != 3 || c->image_size % c->patch_size != 0) {
        snprintf(err, errlen, "cuda backend: needs 3 channels and image_size a multiple of patch_size (got %d, %d/%d)",
                 c->num_channels, c->image_size, c->patch_size);
        return -1;
    }
    if (D % 16 != 0 || F % 8 != 0 || D > 1024) {
        snprintf(err, errlen, "cuda backend: needs hidden_size a multiple of 16 and <= 1024 and intermediate_size a "
                              "multiple of 8 (got %d, %d)", D, F);
        return -1;
    }
    char why[256];
    if (!sg_cu_attention_supported(T, D, H, why, sizeof why)) {
        snprintf(err, errlen, "cuda backend: %s", why);
        return -1;
    }
    if (max_batch < 1) max_batch = 1;
    cm->max_batch = max_batch;
    if (sg_cu_attention_init(T, D, H, err, errlen) || sg_cu_patchify_init(err, errlen)) return -1;
    if (sg_cu_weights_upload(m, &cm->w, err, errlen)) return -1;

    const size_t M = (size_t)max_batch * T, n = max_batch;
    const size_t big_cols = (size_t)(F > CPP ? F : CPP);
    const size_t sizes[] = {M * D * 4,        M * D * 2, (M + 16) * 3 * D * 2, M * D * 2, M * big_cols * 2,
                            n * D * 2,        n * D * 2, n * F * 2,            n * D * 4, SG_CU_GEMM_WORKSPACE};
    const int npieces = (int)(sizeof sizes / sizeof *sizes);
    const size_t total = sg_cu_pieces_bytes(sizes, npieces);
    cudaError_t e = cudaMalloc(&cm->act, total);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        snprintf(err, errlen, "cuda backend: cannot allocate %.1f MiB of GPU memory for activations of batch %d "
                              "(%.1f of %.1f MiB free; try a smaller --batch): %s",
                 total / 1048576.0, max_batch, fr / 1048576.0, tot / 1048576.0, cudaGetErrorString(e));
        sg_cu_model_free(cm);
        return -1;
    }
    void **const dst[] = {(void **)&cm->h,    (void **)&cm->y,  (void **)&cm->qkv,  (void **)&cm->att,
                          (void **)&cm->big,  (void **)&cm->hatt, (void **)&cm->hy, (void **)&cm->hmlp,
                          (void **)&cm->pooled, &cm->workspace};
    static_assert(sizeof dst / sizeof *dst == sizeof sizes / sizeof *sizes, "one size per buffer");
    sg_cu_pieces_place(cm->act, sizes, dst, npieces);
    // Zero once: the attention kernel's last query tile reads the 16 padding rows after qkv (their results are
    // discarded, but they should be defined values).
    if (cudaMemset(cm->act, 0, total) != cudaSuccess || cublasLtCreate(&cm->lt) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "%s:%d: cuda backend: cudaMemset / cublasLtCreate failed", __FILE__, __LINE__);
        cudaGetLastError();
        sg_cu_model_free(cm);
        return -1;
    }
    cm->plans = (sg_cu_plan **)calloc((size_t)max_batch + 1, sizeof(sg_cu_plan *));
    if (!cm->plans) {
        snprintf(err, errlen, "out of host memory");
        sg_cu_model_free(cm);
        return -1;
    }
    return 0;
}

static void plan_free(sg_cu_plan *p) {
    sg_cu_gemm *g[] = {&p->patch, &p->qkv, &p->o, &p->fc1, &p->fc2, &p->hkv, &p->hout, &p->hfc1, &p->hfc2};
    for (sg_cu_gemm *x : g) sg_cu_gemm_free(x);
    free(p);
}

int sg_cu_model_prepare(sg_cu_model *cm, int n, cudaStream_t st, char *err, size_t errlen) {
    if (n < 1 || n > cm->max_batch) {
        snprintf(err, errlen, "%s:%d: batch %d outside 1..%d", __FILE__, __LINE__, n, cm->max_batch);
        return -1;
    }
    if (cm->plans[n]) return 0;
    const sg_config *c = &cm->cfg;
    const int D = c->hidden_size, F = c->intermediate_size, M = n * sg_config_tokens(c);
    const int CPP = sg_config_patch_dim(c);
    sg_cu_plan *p = (sg_cu_plan *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    cublasLtHandle_t lt = cm->lt;
    const cudaDataType_t BF = CUDA_R_16BF, F32 = CUDA_R_32F;
    // cuBLASLt's GELU epilogue is the tanh form (gelu_pytorch_tanh, SigLIP's); the erf form, or a shape with no
    // fused algorithm, gets a bias-only epilogue and our GELU kernel.
    p->gelu_fused = c->activation == SG_ACT_GELU_TANH;
    char gerr[512];
    if (p->gelu_fused && (sg_cu_gemm_plan(&p->fc1, lt, M, F, D, BF, SG_EPI_BIAS_GELU, 0, gerr, sizeof gerr) ||
                          sg_cu_gemm_plan(&p->hfc1, lt, n, F, D, BF, SG_EPI_BIAS_GELU, 0, gerr, sizeof gerr))) {
        sg_cu_gemm_free(&p->fc1);
        sg_cu_gemm_free(&p->hfc1);
        p->gelu_fused = 0;
    }
    if ((!p->gelu_fused && (sg_cu_gemm_plan(&p->fc1, lt, M, F, D, BF, SG_EPI_BIAS, 0, err, errlen) ||
                            sg_cu_gemm_plan(&p->hfc1, lt, n, F, D, BF, SG_EPI_BIAS, 0, err, errlen))) ||
        sg_cu_gemm_plan(&p->patch, lt, M, D, CPP, F32, SG_EPI_NONE, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->qkv, lt, M, 3 * D, D, BF, SG_EPI_BIAS, 0, err, errlen) ||
        sg_cu_gemm_plan(&p->o, lt, M, D, D, F32, SG_EPI_BIAS, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->fc2, lt, M, D, F, F32, SG_EPI_BIAS, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->hkv, lt, M, 2 * D, D, BF, SG_EPI_BIAS, 0, err, errlen) ||
        sg_cu_gemm_plan(&p->hout, lt, n, D, D, F32, SG_EPI_BIAS, 0, err, errlen) ||
        sg_cu_gemm_plan(&p->hfc2, lt, n, D, F, F32, SG_EPI_BIAS, 1, err, errlen)) {
        plan_free(p);
        return -1;
    }
    // Timed algorithm choice is opt-in (SG_CUDA_GEMM_TUNE=1): it saves 10-17 us at batch 1 on an H100, but the
    // winner varies between processes when candidates are close, so embeddings would then differ by bf16
    // rounding from run to run and between batch sizes. By default cuBLASLt's first heuristic is used, which is
    // deterministic for a given GPU and cuBLAS, and gives bit-identical rows whatever the batch.
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    const char *tune = getenv("SG_CUDA_GEMM_TUNE");
    if (cudaStreamIsCapturing(st, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone && tune &&
        strcmp(tune, "1") == 0) {
        // Each GEMM is timed on the operands it meets in the forward (layer 0's weights; the values do not
        // change the speed). Outputs land in the activation buffers, which every forward rewrites from the start.
        const sg_cu_weights *w = &cm->w;
        const sg_cu_layer *L = &w->layers[0];
        struct {
            sg_cu_gemm *g;
            const void *x, *wt, *b;
            void *y;
        } jobs[] = {{&p->patch, cm->big, w->patch_w, nullptr, cm->h},
                    {&p->qkv, cm->y, L->qkv_w, L->qkv_b, cm->qkv},
                    {&p->o, cm->att, L->o_w, L->o_b, cm->h},
                    {&p->fc1, cm->y, L->fc1_w, L->fc1_b, cm->big},
                    {&p->fc2, cm->big, L->fc2_w, L->fc2_b, cm->h},
                    {&p->hkv, cm->y, w->head_kv_w, w->head_kv_b, cm->qkv},
                    {&p->hout, cm->hatt, w->head_out_w, w->head_out_b, cm->pooled},
                    {&p->hfc1, cm->hy, w->head_fc1_w, w->head_fc1_b, cm->hmlp},
                    {&p->hfc2, cm->hmlp, w->head_fc2_w, w->head_fc2_b, cm->pooled}};
        for (auto &j : jobs) {
            if (sg_cu_gemm_tune(j.g, lt, j.x, j.wt, j.b, j.y, cm->workspace, st, err, errlen)) {
                plan_free(p);
                return -1;
            }
        }
        if (getenv("SG_CUDA_PROFILE"))
            fprintf(stderr, "sg-cuda GEMM tuning, batch %d: chosen candidate (of) patch %d(%d) qkv %d(%d) o %d(%d) "
                            "fc1 %d(%d) fc2 %d(%d) hkv %d(%d) hout %d(%d) hfc1 %d(%d) hfc2 %d(%d)\n",
                    n, p->patch.chosen, p->patch.ncand, p->qkv.chosen, p->qkv.ncand, p->o.chosen, p->o.ncand,
                    p->fc1.chosen, p->fc1.ncand, p->fc2.chosen, p->fc2.ncand, p->hkv.chosen, p->hkv.ncand,
                    p->hout.chosen, p->hout.ncand, p->hfc1.chosen, p->hfc1.ncand, p->hfc2.chosen, p->hfc2.ncand);
    }
    cm->plans[n] = p;
    return 0;
}

// Per-op timing of one eager forward (profile = 1): an event after every op, summed by op kind, printed to
// stderr. Only for finding where the time goes; graph replays are not instrumented.
namespace {
struct profiler {
    static constexpr int k_max = 256;
    cudaEvent_t ev[k_max + 1];
    const char *label[k_max + 1];
    int count = 0;
    bool on = false;
    cudaStream_t st = nullptr;
    void start(bool enable, cudaStream_t s) {
        on = enable;
        st = s;
        if (!on) return;
        cudaEventCreate(&ev[0]);
        cudaEventRecord(ev[0], st);
        count = 1;
    }
    void mark(const char *what) {
        if (!on || count > k_max) return;
        cudaEventCreate(&ev[count]);
        cudaEventRecord(ev[count], st);
        label[count++] = what;
    }
    void report(int n) {
        if (!on) return;
        cudaEventSynchronize(ev[count - 1]);
        const char *names[32];
        float ms[32], total = 0;
        int kinds = 0;
        for (int i = 1; i < count; i++) {
            float t = 0;
            cudaEventElapsedTime(&t, ev[i - 1], ev[i]);
            total += t;
            int k = 0;
            while (k < kinds && strcmp(names[k], label[i]) != 0) k++;
            if (k == kinds && kinds < 32) {
                names[kinds] = label[i];
                ms[kinds++] = 0;
            }
            if (k < 32) ms[k] += t;
        }
        fprintf(stderr, "sg-cuda profile, batch %d (eager, one forward): %.3f ms\n", n, total);
        for (int k = 0; k < kinds; k++)
            fprintf(stderr, "  %-12s %8.3f ms  %5.1f%%\n", names[k], ms[k], 100 * ms[k] / total);
        for (int i = 0; i < count; i++) cudaEventDestroy(ev[i]);
        on = false;
    }
};
}  // namespace

static void profile_mark(void *ctx, const char *what) { static_cast<profiler *>(ctx)->mark(what); }

int sg_cu_encoder_layers(const sg_cu_layer *layers, int L, const sg_cu_layer_plans *p, const sg_cu_stack *s,
                         const uint8_t *mask, cublasLtHandle_t lt, void *ws, cudaStream_t st,
                         void (*mark)(void *ctx, const char *what), void *mark_ctx, char *err, size_t errlen) {
    const int M = s->M ? s->M : s->n * s->T, D = s->D;
#define RUN(what, x)                    \
    if (x) return -1;                   \
    if (mark) mark(mark_ctx, what)
    for (int l = 0; l < L; l++) {
        const sg_cu_layer *Y = &layers[l];
        RUN("layernorm", sg_cu_layernorm(s->h, Y->ln1_w, Y->ln1_b, s->y, M, D, s->eps, st, err, errlen));
        RUN("gemm_qkv", sg_cu_gemm_run(p->qkv, lt, s->y, Y->qkv_w, Y->qkv_b, s->qkv, ws, st, err, errlen));
        RUN("attention", s->seq_off ? sg_cu_attention_packed(s->qkv, s->seq_off, s->seq_kv, s->att, s->n, s->T, D, s->H,
                                                             st, err, errlen)
                                    : sg_cu_attention_masked(s->qkv, mask, s->att, s->n, s->T, D, s->H, st, err, errlen));
        RUN("gemm_o", sg_cu_gemm_run(p->o, lt, s->att, Y->o_w, Y->o_b, s->h, ws, st, err, errlen));
        RUN("layernorm", sg_cu_layernorm(s->h, Y->ln2_w, Y->ln2_b, s->y, M, D, s->eps, st, err, errlen));
        RUN("gemm_fc1", sg_cu_gemm_run(p->fc1, lt, s->y, Y->fc1_w, Y->fc1_b, s->big, ws, st, err, errlen));
        if (!p->gelu_fused) {
            RUN("gelu", sg_cu_gelu(s->big, (size_t)M * s->F, s->tanh_form, st, err, errlen));
        }
        RUN("gemm_fc2", sg_cu_gemm_run(p->fc2, lt, s->big, Y->fc2_w, Y->fc2_b, s->h, ws, st, err, errlen));
    }
#undef RUN
    return 0;
}

int sg_cu_forward(sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, int profile, char *err,
                  size_t errlen) {
    if (sg_cu_model_prepare(cm, n, st, err, errlen)) return -1;
    sg_cu_plan *p = cm->plans[n];
    const sg_config *c = &cm->cfg;
    const sg_cu_weights *w = &cm->w;
    const int D = c->hidden_size, F = c->intermediate_size, H = c->num_heads, T = sg_config_tokens(c);
    const int M = n * T;
    const float eps = c->layer_norm_eps;
    const int tanh_form = c->activation == SG_ACT_GELU_TANH;
    cublasLtHandle_t lt = cm->lt;
    void *ws = cm->workspace;
    profiler prof;
    prof.start(profile != 0, st);
#define RUN(what, x)     \
    if (x) return -1;    \
    prof.mark(what)
    if (cm->enc) {  // the whole forward in the megakernel's one launch
        RUN(cm->enc->name, cm->enc->run(cm->enc_ctx, cm, pix, n, st, err, errlen));
        prof.report(n);
        return 0;
    }
    RUN("patchify", sg_cu_patchify(pix, n, c->image_size, c->patch_size, D, w->pos_b, cm->big, cm->h, st, err, errlen));
    RUN("gemm_patch", sg_cu_gemm_run(&p->patch, lt, cm->big, w->patch_w, nullptr, cm->h, ws, st, err, errlen));
    {
        const sg_cu_stack stack = {cm->h, cm->y, cm->qkv, cm->att, cm->big, n, T, D, F, H, eps, tanh_form, 0,
                                   nullptr, nullptr};
        const sg_cu_layer_plans lp = {&p->qkv, &p->o, &p->fc1, &p->fc2, p->gelu_fused};
        if (sg_cu_encoder_layers(w->layers, c->num_layers, &lp, &stack, nullptr, lt, ws, st, profile_mark, &prof,
                                 err, errlen))
            return -1;
    }
    RUN("layernorm", sg_cu_layernorm(cm->h, w->post_ln_w, w->post_ln_b, cm->y, M, D, eps, st, err, errlen));
    RUN("head_kv", sg_cu_gemm_run(&p->hkv, lt, cm->y, w->head_kv_w, w->head_kv_b, cm->qkv, ws, st, err, errlen));
    RUN("head_rest", sg_cu_pool_attention(w->head_q, cm->qkv, cm->hatt, n, T, D, H, st, err, errlen));
    RUN("head_rest",
        sg_cu_gemm_run(&p->hout, lt, cm->hatt, w->head_out_w, w->head_out_b, cm->pooled, ws, st, err, errlen));
    RUN("head_rest", sg_cu_layernorm(cm->pooled, w->head_ln_w, w->head_ln_b, cm->hy, n, D, eps, st, err, errlen));
    RUN("head_rest",
        sg_cu_gemm_run(&p->hfc1, lt, cm->hy, w->head_fc1_w, w->head_fc1_b, cm->hmlp, ws, st, err, errlen));
    if (!p->gelu_fused) {
        RUN("head_rest", sg_cu_gelu(cm->hmlp, (size_t)n * F, tanh_form, st, err, errlen));
    }
    RUN("head_rest",
        sg_cu_gemm_run(&p->hfc2, lt, cm->hmlp, w->head_fc2_w, w->head_fc2_b, cm->pooled, ws, st, err, errlen));
#undef RUN
    prof.report(n);
    return 0;
}

int sg_cu_model_set_encoder(sg_cu_model *cm, const sg_model *m, const sg_cu_encoder_ops *ops, char *err,
                            size_t errlen) {
    void *ctx = nullptr;
    if (ops->init(&ctx, m, cm, err, errlen)) return -1;
    cm->enc = ops;
    cm->enc_ctx = ctx;
    return 0;
}

void sg_cu_model_free(sg_cu_model *cm) {
    if (cm->enc && cm->enc_ctx) cm->enc->destroy(cm->enc_ctx);
    if (cm->plans) {
        for (int i = 0; i <= cm->max_batch; i++)
            if (cm->plans[i]) plan_free(cm->plans[i]);
        free(cm->plans);
    }
    if (cm->lt) cublasLtDestroy(cm->lt);
    if (cm->act) cudaFree(cm->act);
    sg_cu_weights_free(&cm->w);
    memset(cm, 0, sizeof *cm);
}
