// kernel/cuda/cuda_text.cu — the "cuda" text backend: the SigLIP text tower on the portable CUDA path.
//
// Per batch of n queries (M = n*T token rows), on one stream, then one synchronisation:
//   host: the distinct token ids of the batch (a vocabulary-sized slot table, reset after use), their rows
//         widened from the checkpoint's table (m->token_rows: the 256k x 768 table is never converted or
//         uploaded as a whole, so start-up reads only the layers) into pinned memory; the ids remapped to
//         row numbers; the mask as bytes;
//   H2D:  rows [u, D] fp32, row index [M], mask [M];
//   h = rows[index] + pos (fp32, as torch adds them); the L layers through sg_cu_encoder_layers (the vision
//   tower's code, with the mask); the last position's row of each query; final LayerNorm (bf16 out); head GEMM
//   (fp32 out, bias); D2H [n, P].
// Numerics as the vision path: bf16 GEMM inputs with fp32 accumulation, fp32 residual stream and LayerNorm
// statistics. GEMM plans are made once per batch size. No CUDA graph: about 100 launches per batch, a few
// hundred microseconds against tens of milliseconds at batch 1,024, and nothing to capture for a single query.
#include <cstdlib>
#include <cstring>
#include <vector>
#include "cuda_common.h"
#include "cuda_forward.h"
#include "cuda_kernels.h"
#include "cuda_weights.h"
#include "../gpu.h"

namespace {

struct text_plan {
    sg_cu_gemm qkv, o, fc1, fc2, head;
    int gelu_fused;
};

struct text_impl {
    int device;
    const sg_text_model *m;
    sg_cu_text_weights w;
    cublasLtHandle_t lt;
    cudaStream_t st;
    void *act;                  // one device allocation: the buffers below
    float *h;                   // [M, D]
    sg_bf16 *y, *qkv, *att, *big;
    float *last;                // [n, D] last position of each query
    sg_bf16 *ylast;             // [n, D] after the final LayerNorm
    float *out;                 // [n, P]
    int32_t *d_index;           // [M]
    uint8_t *d_mask;            // [M]
    float *d_rows;              // [M, D] (at most M distinct rows)
    void *ws;
    float *h_rows;              // pinned, h_rows_cap rows
    size_t h_rows_cap;
    int32_t *h_index;           // pinned [M]
    uint8_t *h_mask;            // pinned [M]
    float *h_out;               // pinned [n, P]
    int32_t *slot;              // [V] id -> row number in this batch, -1 when unused
    std::vector<int32_t> uniq;  // ids of the batch's rows, in row order
    text_plan **plans;          // [max_batch + 1]
    int max_batch;
};

}  // namespace

__global__ void text_embed_kernel(const float *__restrict__ rows, const int32_t *__restrict__ index,
                                  const float *__restrict__ pos, float *__restrict__ h, int M, int T, int D) {
    const size_t total = (size_t)M * D;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / D, d = i % D;
        h[i] = rows[(size_t)index[r] * D + d] + pos[(r % T) * D + d];
    }
}

__global__ void text_last_kernel(const float *__restrict__ h, float *__restrict__ last, int n, int T, int D) {
    const size_t total = (size_t)n * D;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t s = i / D, d = i % D;
        last[i] = h[(s * T + T - 1) * D + d];
    }
}

static size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

static void plan_free(text_plan *p) {
    sg_cu_gemm *g[] = {&p->qkv, &p->o, &p->fc1, &p->fc2, &p->head};
    for (sg_cu_gemm *x : g) sg_cu_gemm_free(x);
    free(p);
}

static void impl_free(text_impl *c) {
    if (!c) return;
    cudaSetDevice(c->device);
    if (c->st) cudaStreamSynchronize(c->st);
    if (c->plans) {
        for (int i = 0; i <= c->max_batch; i++)
            if (c->plans[i]) plan_free(c->plans[i]);
        free(c->plans);
    }
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->act) cudaFree(c->act);
    if (c->h_rows) cudaFreeHost(c->h_rows);
    if (c->h_index) cudaFreeHost(c->h_index);
    if (c->h_mask) cudaFreeHost(c->h_mask);
    if (c->h_out) cudaFreeHost(c->h_out);
    if (c->st) cudaStreamDestroy(c->st);
    sg_cu_text_weights_free(&c->w);
    free(c->slot);
    delete c;
}

// The GEMM plans for n queries, made on first use.
static text_plan *plan_for(text_impl *c, int n, char *err, size_t errlen) {
    if (c->plans[n]) return c->plans[n];
    const sg_text_config *k = &c->m->cfg;
    const int D = k->hidden_size, F = k->intermediate_size, P = k->projection_size, M = n * k->max_positions;
    text_plan *p = (text_plan *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return nullptr;
    }
    const cudaDataType_t BF = CUDA_R_16BF, F32 = CUDA_R_32F;
    char gerr[512];
    // cuBLASLt's GELU epilogue is the tanh form; erf, or a shape with no fused algorithm, gets our kernel.
    p->gelu_fused = k->activation == SG_ACT_GELU_TANH && !getenv("SG_CUDA_UNFUSED_GELU") &&
                    sg_cu_gemm_plan(&p->fc1, c->lt, M, F, D, BF, SG_EPI_BIAS_GELU, 0, gerr, sizeof gerr) == 0;
    if ((!p->gelu_fused && sg_cu_gemm_plan(&p->fc1, c->lt, M, F, D, BF, SG_EPI_BIAS, 0, err, errlen)) ||
        sg_cu_gemm_plan(&p->qkv, c->lt, M, 3 * D, D, BF, SG_EPI_BIAS, 0, err, errlen) ||
        sg_cu_gemm_plan(&p->o, c->lt, M, D, D, F32, SG_EPI_BIAS, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->fc2, c->lt, M, D, F, F32, SG_EPI_BIAS, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->head, c->lt, n, P, D, F32, SG_EPI_BIAS, 0, err, errlen)) {
        plan_free(p);
        return nullptr;
    }
    c->plans[n] = p;
    return p;
}

// Pinned staging for `rows` token rows (grown on demand: most batches use a few thousand distinct tokens).
static int ensure_rows(text_impl *c, size_t rows, char *err, size_t errlen) {
    if (rows <= c->h_rows_cap) return 0;
    size_t cap = c->h_rows_cap ? c->h_rows_cap : 1024;
    while (cap < rows) cap *= 2;
    if (c->h_rows) cudaFreeHost(c->h_rows);
    c->h_rows = nullptr;
    c->h_rows_cap = 0;
    SG_CU_TRY(cudaMallocHost(&c->h_rows, cap * c->m->cfg.hidden_size * sizeof(float)), err, errlen);
    c->h_rows_cap = cap;
    return 0;
}

static int text_embed(sg_text_backend *b, const int32_t *ids, const uint8_t *mask, int n, float *out, char *err,
                      size_t errlen) {
    text_impl *c = (text_impl *)b->impl;
    const sg_text_model *m = c->m;
    const sg_text_config *k = &m->cfg;
    const int T = k->max_positions, D = k->hidden_size, P = k->projection_size;
    if (n < 1 || n > b->max_batch) {
        snprintf(err, errlen, "cuda text backend: batch of %d queries, expected 1..%d", n, b->max_batch);
        return -1;
    }
    const size_t M = (size_t)n * T;
    const long bad = sg_text_ids_check(m, ids, M);
    if (bad >= 0) {
        snprintf(err, errlen, "cuda text backend: token id %d (query %ld, position %ld) outside the vocabulary [0, %d)",
                 ids[bad], bad / T, bad % T, k->vocab_size);
        return -1;
    }
    SG_CU_TRY(cudaSetDevice(c->device), err, errlen);
    text_plan *p = plan_for(c, n, err, errlen);
    if (!p) return -1;
    // Distinct ids -> row numbers; the slot table is reset for exactly the ids used.
    c->uniq.clear();
    for (size_t i = 0; i < M; i++) {
        int32_t &s = c->slot[ids[i]];
        if (s < 0) {
            s = (int32_t)c->uniq.size();
            c->uniq.push_back(ids[i]);
        }
        c->h_index[i] = s;
        c->h_mask[i] = mask ? (uint8_t)(mask[i] != 0) : 1;
    }
    const size_t u = c->uniq.size();
    for (size_t i = 0; i < u; i++) c->slot[c->uniq[i]] = -1;
    if (ensure_rows(c, u, err, errlen)) return -1;
    m->token_rows(m, c->uniq.data(), u, c->h_rows);

    cudaStream_t st = c->st;
    SG_CU_TRY(cudaMemcpyAsync(c->d_rows, c->h_rows, u * D * sizeof(float), cudaMemcpyHostToDevice, st), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(c->d_index, c->h_index, M * sizeof(int32_t), cudaMemcpyHostToDevice, st), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(c->d_mask, c->h_mask, M, cudaMemcpyHostToDevice, st), err, errlen);
    const int blocks = (int)((M * D + 255) / 256 < 8192 ? (M * D + 255) / 256 : 8192);
    text_embed_kernel<<<blocks, 256, 0, st>>>(c->d_rows, c->d_index, c->w.pos, c->h, (int)M, T, D);
    SG_CU_LAUNCHED(err, errlen);
    const sg_cu_stack stack = {c->h, c->y, c->qkv, c->att, c->big, n, T, D, k->intermediate_size, k->num_heads,
                               k->layer_norm_eps, k->activation == SG_ACT_GELU_TANH};
    const sg_cu_layer_plans lp = {&p->qkv, &p->o, &p->fc1, &p->fc2, p->gelu_fused};
    if (sg_cu_encoder_layers(c->w.layers, k->num_layers, &lp, &stack, c->d_mask, c->lt, c->ws, st, nullptr, nullptr,
                             err, errlen))
        return -1;
    const int lblocks = (int)(((size_t)n * D + 255) / 256);
    text_last_kernel<<<lblocks, 256, 0, st>>>(c->h, c->last, n, T, D);
    SG_CU_LAUNCHED(err, errlen);
    if (sg_cu_layernorm(c->last, c->w.final_ln_w, c->w.final_ln_b, c->ylast, n, D, k->layer_norm_eps, st, err,
                        errlen) ||
        sg_cu_gemm_run(&p->head, c->lt, c->ylast, c->w.head_w, c->w.head_b, c->out, c->ws, st, err, errlen))
        return -1;
    SG_CU_TRY(cudaMemcpyAsync(c->h_out, c->out, (size_t)n * P * sizeof(float), cudaMemcpyDeviceToHost, st), err,
              errlen);
    SG_CU_TRY(cudaStreamSynchronize(st), err, errlen);
    memcpy(out, c->h_out, (size_t)n * P * sizeof(float));
    return 0;
}

static void text_destroy(sg_text_backend *b) {
    if (!b) return;
    impl_free((text_impl *)b->impl);
    free(b);
}

#define SG_CUDA_TEXT_DEFAULT_MAX_BATCH 256

sg_text_backend *sg_cuda_text_backend_create(const sg_text_model *m, const sg_backend_opts *o, char *err,
                                             size_t errlen) {
    const sg_text_config *k = &m->cfg;
    const int D = k->hidden_size, F = k->intermediate_size, H = k->num_heads, T = k->max_positions;
    const int P = k->projection_size;
    sg_gpu_info g;
    char gerr[512];
    if (sg_gpu_query(o->device, &g, gerr, sizeof gerr) != 0) {
        snprintf(err, errlen, "cuda text backend: %s", gerr);
        return nullptr;
    }
    if (g.cc_major < 8) {
        snprintf(err, errlen, "cuda text backend: needs compute capability 8.0 or newer, device %d is %s, sm_%d%d",
                 o->device, g.name, g.cc_major, g.cc_minor);
        return nullptr;
    }
    if (D % 16 != 0 || F % 8 != 0 || D > 1024 || P % 4 != 0) {
        snprintf(err, errlen, "cuda text backend: needs hidden_size a multiple of 16 and <= 1024, intermediate_size a "
                              "multiple of 8 and projection_size a multiple of 4 (got %d, %d, %d)", D, F, P);
        return nullptr;
    }
    char why[256];
    if (cudaSetDevice(o->device) != cudaSuccess || !sg_cu_attention_supported(T, D, H, why, sizeof why)) {
        cudaGetLastError();
        snprintf(err, errlen, "cuda text backend: %s", why);
        return nullptr;
    }
    text_impl *c = new (std::nothrow) text_impl();
    sg_text_backend *b = (sg_text_backend *)calloc(1, sizeof *b);
    if (!c || !b) {
        delete c;
        free(b);
        snprintf(err, errlen, "cuda text backend: out of host memory");
        return nullptr;
    }
    c->device = o->device;
    c->m = m;
    c->max_batch = o->max_batch > 0 ? o->max_batch : SG_CUDA_TEXT_DEFAULT_MAX_BATCH;
    b->name = "cuda";
    b->dim = P;
    b->seq_len = T;
    b->max_batch = c->max_batch;
    b->impl = c;
    b->embed = text_embed;
    b->destroy = text_destroy;
    const size_t M = (size_t)c->max_batch * T, n = c->max_batch;
    const size_t sizes[] = {M * D * 4, M * D * 2, (M + 16) * 3 * D * 2, M * D * 2, M * F * 2, n * D * 4, n * D * 2,
                            n * P * 4, M * 4,     M,         M * D * 4, SG_CU_GEMM_WORKSPACE};
    size_t total = 0;
    for (size_t s : sizes) total += align256(s);
    c->slot = (int32_t *)malloc((size_t)k->vocab_size * sizeof(int32_t));
    if (!c->slot) {
        snprintf(err, errlen, "cuda text backend: out of host memory for the %d-entry id table", k->vocab_size);
        text_destroy(b);
        return nullptr;
    }
    memset(c->slot, 0xff, (size_t)k->vocab_size * sizeof(int32_t));  // every entry -1
    c->plans = (text_plan **)calloc((size_t)c->max_batch + 1, sizeof(text_plan *));
    char e2[1024];
    if (!c->plans) {
        snprintf(err, errlen, "cuda text backend: out of host memory");
        text_destroy(b);
        return nullptr;
    }
    if (sg_cu_attention_init(T, D, H, e2, sizeof e2) || sg_cu_text_weights_upload(m, &c->w, e2, sizeof e2)) {
        snprintf(err, errlen, "cuda text backend: %s", e2);
        text_destroy(b);
        return nullptr;
    }
    cudaError_t e = cudaMalloc(&c->act, total);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "cuda text backend: cannot allocate %.1f MiB of GPU memory for batches of %d queries "
                              "(try a smaller --batch): %s", total / 1048576.0, c->max_batch, cudaGetErrorString(e));
        text_destroy(b);
        return nullptr;
    }
    char *q = (char *)c->act;
    void **dst[] = {(void **)&c->h,    (void **)&c->y,       (void **)&c->qkv,    (void **)&c->att,
                    (void **)&c->big,  (void **)&c->last,    (void **)&c->ylast,  (void **)&c->out,
                    (void **)&c->d_index, (void **)&c->d_mask, (void **)&c->d_rows, &c->ws};
    for (int i = 0; i < 12; i++) {
        *dst[i] = q;
        q += align256(sizes[i]);
    }
    // Zero once: the attention kernel's last query tile reads the 16 padding rows after qkv.
    if (cudaMemset(c->act, 0, total) != cudaSuccess || cublasLtCreate(&c->lt) != CUBLAS_STATUS_SUCCESS ||
        cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMallocHost(&c->h_index, M * sizeof(int32_t)) != cudaSuccess ||
        cudaMallocHost(&c->h_mask, M) != cudaSuccess ||
        cudaMallocHost(&c->h_out, n * P * sizeof(float)) != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "%s:%d: cuda text backend: set-up (cudaMemset / cublasLtCreate / stream / pinned "
                              "buffers) failed", __FILE__, __LINE__);
        text_destroy(b);
        return nullptr;
    }
    return b;
}
