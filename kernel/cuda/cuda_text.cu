// kernel/cuda/cuda_text.cu — the "cuda" text backend: the SigLIP text tower on the portable CUDA path.
//
// Per batch of n queries, on one stream, then one synchronisation:
//   host: the rows to compute. As on the CPU (cpu_text.c's design note), only rows that reach the output are
//         computed: each query's attended positions, then position T-1 (the pooled one), packed one query after
//         the other (R rows, about tokens + 1 per query instead of T = 64; without a mask, the real SigLIP2
//         checkpoint's case, all T rows of every query are attended and computed); SG_CUDA_TEXT_COMPACT=0
//         computes all n*T rows with the mask instead, as a cross-check. The distinct token ids of those rows (a
//         vocabulary-sized slot table, reset after use) have their embedding rows widened from the
//         checkpoint's table (m->token_rows: the 256k x 768 table is never converted or uploaded as a whole,
//         so start-up reads only the layers) into pinned memory;
//   H2D:  token rows [u, D] fp32, per row its token-row index and position, per query its row offset and key
//         count (and the mask when not packed);
//   h = rows[index] + pos[position] (fp32, as torch adds them; rows past R zeroed); the L layers through
//   sg_cu_encoder_layers (the vision tower's code; attention over each packed query's keys, or with the mask);
//   each query's last row; final LayerNorm (bf16 out); head GEMM (fp32 out, bias); D2H [n, P].
// Numerics as the vision path: bf16 GEMM inputs with fp32 accumulation, fp32 residual stream and LayerNorm
// statistics. The layer GEMMs run on M = R rounded up to one of 8 sizes per octave (at most 12.5% extra rows,
// and a bounded number of cuBLASLt plans, made once each); the head's plan is per batch size. No CUDA graph:
// about 100 launches per batch, a few hundred microseconds against tens of milliseconds at batch 1,024.
#include <cstdlib>
#include <cstring>
#include <vector>
#include "cuda_common.h"
#include "cuda_forward.h"
#include "cuda_kernels.h"
#include "cuda_weights.h"
#include "../gpu.h"

namespace {

struct layer_plan {
    int M;
    sg_cu_gemm qkv, o, fc1, fc2;
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
    int32_t *d_index;           // [M] token-row index of each row
    int32_t *d_pos;             // [M] position of each row
    int32_t *d_seq;             // [2n + 1]: row offsets [n + 1], then key counts [n]
    uint8_t *d_mask;            // [M]
    float *d_rows;              // [M, D] (at most M distinct rows)
    void *ws;
    float *h_rows;              // pinned, h_rows_cap rows
    size_t h_rows_cap;
    int32_t *h_index;           // pinned [M]
    int32_t *h_pos;             // pinned [M]
    int32_t *h_seq;             // pinned [2n + 1]
    uint8_t *h_mask;            // pinned [M]
    float *h_out;               // pinned [n, P]
    int32_t *slot;              // [V] id -> row number in this batch, -1 when unused
    std::vector<int32_t> uniq;  // ids of the batch's rows, in row order
    sg_cu_gemm **heads;         // [max_batch + 1]: the head GEMM per batch size
    std::vector<layer_plan *> layer_plans;  // per row count M
    int max_batch;
    bool compact;
};

}  // namespace

// h[r] = token row index[r] + position pos_of[r] for r < R; rows R..M-1 (computed, never read) are zeroed.
__global__ void text_embed_kernel(const float *__restrict__ rows, const int32_t *__restrict__ index,
                                  const int32_t *__restrict__ pos_of, const float *__restrict__ pos,
                                  float *__restrict__ h, int R, int M, int D) {
    const size_t total = (size_t)M * D;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / D, d = i % D;
        h[i] = r < (size_t)R ? rows[(size_t)index[r] * D + d] + pos[(size_t)pos_of[r] * D + d] : 0.f;
    }
}

// last[s] = h[off[s + 1] - 1]: each query's last row (position T-1).
__global__ void text_last_kernel(const float *__restrict__ h, const int32_t *__restrict__ off,
                                 float *__restrict__ last, int n, int D) {
    const size_t total = (size_t)n * D;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t s = i / D, d = i % D;
        last[i] = h[((size_t)off[s + 1] - 1) * D + d];
    }
}

static void layer_plan_free(layer_plan *p) {
    sg_cu_gemm *g[] = {&p->qkv, &p->o, &p->fc1, &p->fc2};
    for (sg_cu_gemm *x : g) sg_cu_gemm_free(x);
    free(p);
}

static void impl_free(text_impl *c) {
    if (!c) return;
    cudaSetDevice(c->device);
    if (c->st) cudaStreamSynchronize(c->st);
    if (c->heads) {
        for (int i = 0; i <= c->max_batch; i++)
            if (c->heads[i]) {
                sg_cu_gemm_free(c->heads[i]);
                free(c->heads[i]);
            }
        free(c->heads);
    }
    for (layer_plan *p : c->layer_plans) layer_plan_free(p);
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->act) cudaFree(c->act);
    void *pinned[] = {c->h_rows, c->h_index, c->h_pos, c->h_seq, c->h_mask, c->h_out};
    for (void *q : pinned)
        if (q) cudaFreeHost(q);
    if (c->st) cudaStreamDestroy(c->st);
    sg_cu_text_weights_free(&c->w);
    free(c->slot);
    delete c;
}

// The layer GEMM plans for M rows, made on first use.
static layer_plan *layers_for(text_impl *c, int M, char *err, size_t errlen) {
    for (layer_plan *p : c->layer_plans)
        if (p->M == M) return p;
    const sg_text_config *k = &c->m->cfg;
    const int D = k->hidden_size, F = k->intermediate_size;
    layer_plan *p = (layer_plan *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return nullptr;
    }
    p->M = M;
    const cudaDataType_t BF = CUDA_R_16BF, F32 = CUDA_R_32F;
    char gerr[512];
    // cuBLASLt's GELU epilogue is the tanh form; erf, or a shape with no fused algorithm, gets our kernel.
    p->gelu_fused = k->activation == SG_ACT_GELU_TANH &&
                    sg_cu_gemm_plan(&p->fc1, c->lt, M, F, D, BF, SG_EPI_BIAS_GELU, 0, gerr, sizeof gerr) == 0;
    if ((!p->gelu_fused && sg_cu_gemm_plan(&p->fc1, c->lt, M, F, D, BF, SG_EPI_BIAS, 0, err, errlen)) ||
        sg_cu_gemm_plan(&p->qkv, c->lt, M, 3 * D, D, BF, SG_EPI_BIAS, 0, err, errlen) ||
        sg_cu_gemm_plan(&p->o, c->lt, M, D, D, F32, SG_EPI_BIAS, 1, err, errlen) ||
        sg_cu_gemm_plan(&p->fc2, c->lt, M, D, F, F32, SG_EPI_BIAS, 1, err, errlen)) {
        layer_plan_free(p);
        return nullptr;
    }
    c->layer_plans.push_back(p);
    return p;
}

// The head GEMM plan for n queries.
static sg_cu_gemm *head_for(text_impl *c, int n, char *err, size_t errlen) {
    if (c->heads[n]) return c->heads[n];
    const sg_text_config *k = &c->m->cfg;
    sg_cu_gemm *g = (sg_cu_gemm *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return nullptr;
    }
    if (sg_cu_gemm_plan(g, c->lt, n, k->projection_size, k->hidden_size, CUDA_R_32F, SG_EPI_BIAS, 0, err, errlen)) {
        free(g);
        return nullptr;
    }
    c->heads[n] = g;
    return g;
}

// R rows rounded up to one of 8 sizes per power of two (>= 64), at most cap.
static int bucket_rows(int R, int cap) {
    int p = 64;
    while (p < R) p *= 2;
    const int step = p / 8 > 16 ? p / 8 : 16;
    const int M = (R + step - 1) / step * step;
    return M < cap ? M : cap;
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
    const long bad = sg_text_ids_check(m, ids, (size_t)n * T);
    if (bad >= 0) {
        snprintf(err, errlen, "cuda text backend: token id %d (query %ld, position %ld) outside the vocabulary [0, %d)",
                 ids[bad], bad / T, bad % T, k->vocab_size);
        return -1;
    }
    SG_CU_TRY(cudaSetDevice(c->device), err, errlen);
    // The rows to compute, their token rows and positions; per query its offset and key count.
    int32_t *off = c->h_seq, *kv = c->h_seq + n + 1;
    int R = 0;
    c->uniq.clear();
    auto add_row = [&](int32_t id, int t) {
        int32_t &s = c->slot[id];
        if (s < 0) {
            s = (int32_t)c->uniq.size();
            c->uniq.push_back(id);
        }
        c->h_index[R] = s;
        c->h_pos[R++] = t;
    };
    for (int q = 0; q < n; q++) {
        const int32_t *id = ids + (size_t)q * T;
        const uint8_t *mk = mask ? mask + (size_t)q * T : nullptr;
        off[q] = R;
        int nk = 0;
        for (int t = 0; t < T; t++) nk += !mk || mk[t];
        if (!c->compact || nk == 0) { /* every position (no attended one: HF eager averages them all) */
            for (int t = 0; t < T; t++) add_row(id[t], t);
            for (int t = 0; t < T; t++) c->h_mask[(size_t)q * T + t] = !mk || mk[t];
        } else { /* attended positions, then T-1 (cpu_text.c's design note) */
            for (int t = 0; t < T; t++)
                if (!mk || mk[t]) add_row(id[t], t);
            if (mk && !mk[T - 1]) add_row(id[T - 1], T - 1);
        }
        kv[q] = c->compact ? nk : T;
    }
    off[n] = R;
    for (int32_t id : c->uniq) c->slot[id] = -1;
    const size_t u = c->uniq.size();
    const int M = c->compact ? bucket_rows(R, c->max_batch * T) : R;
    layer_plan *lp = layers_for(c, M, err, errlen);
    sg_cu_gemm *head = head_for(c, n, err, errlen);
    if (!lp || !head || ensure_rows(c, u, err, errlen)) return -1;
    m->token_rows(m, c->uniq.data(), u, c->h_rows);

    cudaStream_t st = c->st;
    SG_CU_TRY(cudaMemcpyAsync(c->d_rows, c->h_rows, u * D * sizeof(float), cudaMemcpyHostToDevice, st), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(c->d_index, c->h_index, R * sizeof(int32_t), cudaMemcpyHostToDevice, st), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(c->d_pos, c->h_pos, R * sizeof(int32_t), cudaMemcpyHostToDevice, st), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(c->d_seq, c->h_seq, (2 * n + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, st), err,
              errlen);
    if (!c->compact)
        SG_CU_TRY(cudaMemcpyAsync(c->d_mask, c->h_mask, (size_t)n * T, cudaMemcpyHostToDevice, st), err, errlen);
    const size_t cells = (size_t)M * D;
    const int blocks = (int)((cells + 255) / 256 < 8192 ? (cells + 255) / 256 : 8192);
    text_embed_kernel<<<blocks, 256, 0, st>>>(c->d_rows, c->d_index, c->d_pos, c->w.pos, c->h, R, M, D);
    SG_CU_LAUNCHED(err, errlen);
    const sg_cu_stack stack = {c->h, c->y, c->qkv, c->att, c->big, n, T, D, k->intermediate_size, k->num_heads,
                               k->layer_norm_eps, k->activation == SG_ACT_GELU_TANH, M,
                               c->compact ? c->d_seq : nullptr, c->compact ? c->d_seq + n + 1 : nullptr};
    const sg_cu_layer_plans plans = {&lp->qkv, &lp->o, &lp->fc1, &lp->fc2, lp->gelu_fused};
    if (sg_cu_encoder_layers(c->w.layers, k->num_layers, &plans, &stack, c->compact ? nullptr : c->d_mask, c->lt,
                             c->ws, st, nullptr, nullptr, err, errlen))
        return -1;
    const int lblocks = (int)(((size_t)n * D + 255) / 256);
    text_last_kernel<<<lblocks, 256, 0, st>>>(c->h, c->d_seq, c->last, n, D);
    SG_CU_LAUNCHED(err, errlen);
    if (sg_cu_layernorm(c->last, c->w.final_ln_w, c->w.final_ln_b, c->ylast, n, D, k->layer_norm_eps, st, err,
                        errlen) ||
        sg_cu_gemm_run(head, c->lt, c->ylast, c->w.head_w, c->w.head_b, c->out, c->ws, st, err, errlen))
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
    const char *cv = getenv("SG_CUDA_TEXT_COMPACT");
    c->compact = !(cv && strcmp(cv, "0") == 0);
    const size_t M = (size_t)c->max_batch * T, n = c->max_batch;
    const size_t sizes[] = {M * D * 4, M * D * 2, (M + 16) * 3 * D * 2, M * D * 2, M * F * 2, n * D * 4, n * D * 2,
                            n * P * 4, M * 4,     M * 4,     (2 * n + 1) * 4, M,   M * D * 4, SG_CU_GEMM_WORKSPACE};
    const int npieces = (int)(sizeof sizes / sizeof *sizes);
    const size_t total = sg_cu_pieces_bytes(sizes, npieces);
    c->slot = (int32_t *)malloc((size_t)k->vocab_size * sizeof(int32_t));
    if (!c->slot) {
        snprintf(err, errlen, "cuda text backend: out of host memory for the %d-entry id table", k->vocab_size);
        text_destroy(b);
        return nullptr;
    }
    memset(c->slot, 0xff, (size_t)k->vocab_size * sizeof(int32_t));  // every entry -1
    c->heads = (sg_cu_gemm **)calloc((size_t)c->max_batch + 1, sizeof(sg_cu_gemm *));
    char e2[1024];
    if (!c->heads) {
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
    void **const dst[] = {(void **)&c->h,       (void **)&c->y,     (void **)&c->qkv,   (void **)&c->att,
                          (void **)&c->big,     (void **)&c->last,  (void **)&c->ylast, (void **)&c->out,
                          (void **)&c->d_index, (void **)&c->d_pos, (void **)&c->d_seq, (void **)&c->d_mask,
                          (void **)&c->d_rows,  &c->ws};
    static_assert(sizeof dst / sizeof *dst == sizeof sizes / sizeof *sizes, "one size per buffer");
    sg_cu_pieces_place(c->act, sizes, dst, npieces);
    // Zero once: the attention kernel's last query tile reads the 16 padding rows after qkv.
    if (cudaMemset(c->act, 0, total) != cudaSuccess || cublasLtCreate(&c->lt) != CUBLAS_STATUS_SUCCESS ||
        cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMallocHost(&c->h_index, M * sizeof(int32_t)) != cudaSuccess ||
        cudaMallocHost(&c->h_pos, M * sizeof(int32_t)) != cudaSuccess ||
        cudaMallocHost(&c->h_seq, (2 * n + 1) * sizeof(int32_t)) != cudaSuccess ||
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
