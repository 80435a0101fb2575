// kernel/mega/mega_gpu.cu — the host side of both megakernels (kernel/mega/mega_gpu.h): everything but the kernel.
//
// create: fp32 copies of the QKV, FC1 and the head's K/V and FC1 biases (the portable path keeps them in bf16) and
// the pixel LUT, the per-layer and head parameter tables, tensor maps over the portable path's weights and
// activation buffers (128-byte
// swizzle; boxes of 128 rows x 64 columns, Q/K/V boxes of 256 rows), the dependency counters (zeroed once; the
// kernel's last CTA zeroes them after every launch), and the architecture's shared-memory limit.
// run: on the first use of a batch size (never inside graph capture) builds its task table (kernel/mega/mega_plan.c,
// checked topological before upload) and its store maps (exactly M rows, so TMA drops padding rows); then one
// launch through the architecture's launcher. SG_SM90_PROFILE=1 prints cycle shares per task kind (stderr).
// Host code only (no __global__): compiled once, with the portable path's flags and gencode (Makefile).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>
#include <cuda_runtime.h>
#include "mega_gpu.h"
#include "mega_layer_set.h"
#include "mega_plan.h"
#include "tmap.cuh"
#include "../sm100/sm100_desc.h"

struct sg_mega_gpu {
    const sg_mega_launcher *k;
    CUtensorMap *maps;         // device
    sg_mega_layer_dev *layers; // device
    float *bias;               // device, fp32: per layer qkv_b [2304] + fc1_b [3072], the head's kv_b [1536] +
                               // fc1_b [3072], then the pixel LUT [256]
    sg_mega_head_dev *head;    // device
    unsigned *cnt;             // device
    unsigned long long *prof;  // device, SG_MEGA_PROF_WORDS (+ the trace), when SG_SM90_PROFILE=1 or SG_SM90_TRACE
    unsigned long long trace_cap;  // the trace's entries per CTA (SG_SM90_TRACE=file: appended to it), else 0
    unsigned **tasks;          // [n_max + 1] device task tables, made on first use of each batch size
    CUtensorMap **smaps;       // [n_max + 1] device store maps (SG_SMAPS each), made with the task table
    int *ntasks;               // [n_max + 1]: the main list's length
    int *nside;                // [n_max + 1]: the side list's (after the main list in the same table)
    int L, tm_max, n_max, sms;
    int narrow_max[4];         // [s], s = 1..3: batches of up to this many images run GEMM task shape s (mega_shape)
    int ln_prefetch;           // sg_mega_params.ln_prefetch (SG_MEGA_LN_PREFETCH=0: off)
    int w_prefetch_min;        // launches of this task shape and above prefetch weights (sg_mega_params.w_prefetch):
                               // 3 halves (1-4 images, the default), 2 narrow64 too, 0 all, 4 none
                               // (SG_MEGA_W_PREFETCH_MIN)
    int side_min;              // wide launches of at least this many images hand their row-wise tasks to the side
                               // warps (SG_MEGA_SIDE_MIN=N)
    int fc1_lag, fc2_lag;      // sg_mega_plan_build's interleaving of FC1 / FC2 (SG_MEGA_FC1_LAG, SG_MEGA_FC2_LAG)
    int qkv_lag;               // ... of the next layer's QKV into FC2's stage (SG_MEGA_QKV_LAG)
    size_t cnt_words;
    uint8_t *mx;               // device, FP8 FC1 only: [L] E4M3 W1, [L] their scales, y8, y8's scales
    uint8_t *y8, *y8sf, *w1sf; // inside mx
    unsigned fc2_f8;           // FP8ROW: the layers whose FC2 runs in FP8 (sg_mega_params.fc2_f8)
    uint8_t *f2;               // device, when fc2_f8: [L] E4M3 W2, [L] their scales + biases, h8, h8's scales
    uint8_t *h8;               // inside f2
    float *h8sf, *w2sf;        // inside f2
    float2 *h8k;               // device [L]: each layer's bound on H (sg_mega_params.h8k), FP8ROW only
};

// The task trace's entries per CTA (SG_SM90_TRACE): a 1,024-image launch takes ~6,400 tasks a CTA on 132 SMs; a
// CTA's tasks past it are not recorded.
#define SG_MEGA_TRACE_CAP 8192

// The profile's names: the task kinds (SG_MT_*), then the consumer counters after them (mega_gpu.h).
static const char *const mega_prof_names[] = {"prep",   "patch",  "ln1",     "qkv",       "att",       "out",
                                              "ln2",    "fc1",    "fc2",     "postln",    "hkv",       "pool",
                                              "hout",   "hln",    "hfc1",    "hfc2",      "idle",      "depwait",
                                              "gemm:init", "gemm:kloop", "gemm:store"};
static_assert(sizeof mega_prof_names / sizeof mega_prof_names[0] == SG_MT_END + 5, "a name per profile word");

static size_t sg_mega_prof_words(const sg_mega_gpu *g) {
    return SG_MEGA_PROF_WORDS + (size_t)g->sms * g->trace_cap * (SG_MEGA_TRACE_WORDS + 1);
}

// Appends a profiled launch's task trace to the file SG_SM90_TRACE names, as CSV (a header when the file is empty):
// one line per task a CTA ran, times in ns from the launch's first stamp (mega_gpu.h, SG_MEGA_PROF_TRACE_CAP).
// scripts/mega_trace.py reads it.
static int sg_mega_trace_write(const sg_mega_gpu *g, int n, int shape, float ms, char *err, size_t errlen) {
    static int launch = 0;
    const size_t words = (size_t)g->sms * g->trace_cap * SG_MEGA_TRACE_WORDS;
    std::vector<unsigned long long> t(words + (size_t)g->sms * g->trace_cap);
    const unsigned long long *rel_t = t.data() + words;  // the storer's releases (mega_gpu.h)
    if (cudaMemcpy(t.data(), g->prof + SG_MEGA_PROF_WORDS, t.size() * sizeof t[0], cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
        snprintf(err, errlen, "%s megakernel: trace copy: %s", g->k->name, cudaGetErrorString(cudaGetLastError()));
        return -1;
    }
    const char *path = getenv("SG_SM90_TRACE");
    FILE *f = fopen(path, "a");
    if (!f) {
        snprintf(err, errlen, "%s megakernel: cannot append the trace to %s", g->k->name, path);
        return -1;
    }
    unsigned long long t0 = ~0ull;
    for (size_t e = 0; e < words; e += SG_MEGA_TRACE_WORDS)
        if (t[e + 1] && t[e + 1] < t0) t0 = t[e + 1];
    if (ftell(f) == 0)
        fprintf(f, "launch,batch,shape,ms,cta,i,kind,layer,a,b,came,ready,start,end,handed,released,mark1,mark2\n");
    const auto rel = [t0](unsigned long long v) { return v ? (long long)(v - t0) : -1ll; };
    for (int c = 0; c < g->sms; c++) {
        unsigned long long ng = 0;  // the CTA's GEMM tiles so far: the k-th has the storer's k-th release
        for (unsigned long long i = 0; i < g->trace_cap; i++) {
            const unsigned long long *e = t.data() + ((size_t)c * g->trace_cap + i) * SG_MEGA_TRACE_WORDS;
            if (!e[1]) break;
            const sg_mega_task k = sg_mega_decode((unsigned)e[0]);
            const bool gemm = sg_mega_is_gemm(k.kind) && e[3];
            const long long released = gemm && ng < g->trace_cap ? rel(rel_t[(size_t)c * g->trace_cap + ng]) : -1;
            ng += gemm;
            fprintf(f, "%d,%d,%d,%.4f,%d,%llu,%s,%d,%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", launch, n, shape,
                    ms, c, i, k.kind < SG_MT_END ? mega_prof_names[k.kind] : "end", k.layer, k.a, k.b, rel(e[1]),
                    rel(e[2]), rel(e[3]), rel(e[4]), rel(e[5]), released, rel(e[6]), rel(e[7]));
        }
    }
    launch++;
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s megakernel: writing the trace to %s failed", g->k->name, path);
        return -1;
    }
    return 0;
}

#define SG_MEGA_TRY(call)                                                                                       \
    do {                                                                                                        \
        cudaError_t e_ = (call);                                                                                \
        if (e_ != cudaSuccess) {                                                                                \
            snprintf(err, errlen, "%s:%d: %s megakernel: %s: %s", __FILE__, __LINE__, g->k->name, #call,     \
                     cudaGetErrorString(e_));                                                                   \
            cudaGetLastError();                                                                                 \
            sg_mega_gpu_free(g);                                                                               \
            return nullptr;                                                                                     \
        }                                                                                                       \
    } while (0)

void sg_mega_gpu_free(sg_mega_gpu *g) {
    if (!g) return;
    if (g->maps) cudaFree(g->maps);
    if (g->layers) cudaFree(g->layers);
    if (g->bias) cudaFree(g->bias);
    if (g->head) cudaFree(g->head);
    if (g->cnt) cudaFree(g->cnt);
    if (g->prof) cudaFree(g->prof);
    if (g->mx) cudaFree(g->mx);
    if (g->f2) cudaFree(g->f2);
    if (g->h8k) cudaFree(g->h8k);
    for (int i = 0; i <= g->n_max; i++) {
        if (g->tasks && g->tasks[i]) cudaFree(g->tasks[i]);
        if (g->smaps && g->smaps[i]) cudaFree(g->smaps[i]);
    }
    free(g->tasks);
    free(g->smaps);
    free(g->ntasks);
    free(g->nside);
    free(g);
}

int sg_mega_supported(const sg_config *c, char *why, size_t whylen) {
    if (c->hidden_size != SG_MEGA_D || c->intermediate_size != SG_MEGA_F || c->num_heads != SG_MEGA_HEADS ||
        sg_config_tokens(c) != SG_MEGA_T || c->image_size != 224 || c->patch_size != 16 ||
        c->activation != SG_ACT_GELU_TANH || c->num_layers < 1) {
        snprintf(why, whylen, "the megakernels are built for SigLIP2-base shapes (hidden 768, mlp 3072, 12 heads, "
                              "196 tokens, tanh GELU); this model has hidden %d, mlp %d, %d heads, %d tokens",
                 c->hidden_size, c->intermediate_size, c->num_heads, sg_config_tokens(c));
        return 0;
    }
    return 1;
}

// The fp32 bias block g->bias (floats from its start): per layer l, at mega_bias_layer(l), the Q, K, V biases (3 D)
// then FC1's (F) (the portable path keeps these in bf16); the head's K, V (2 D) and FC1 (F) biases at
// mega_bias_layer(L); the pixel LUT (256) at mega_bias_lut(L). Built once in sg_mega_gpu_create.
static size_t mega_bias_layer(int l) { return (size_t)l * (3 * SG_MEGA_D + SG_MEGA_F); }
static size_t mega_bias_lut(int L) { return mega_bias_layer(L) + 2 * SG_MEGA_D + SG_MEGA_F; }

// The device block of an FP8 weight set (bytes, zeroed: padding rows stay finite) and a scratch buffer for one fp32
// weight on its way to the quantiser (tmp_floats). 0, or -1 with err naming `what`; on failure *tmp is freed and
// *block stays for sg_mega_gpu_free.
static int mega_fp8_alloc(const sg_mega_gpu *g, uint8_t **block, size_t bytes, float **tmp, size_t tmp_floats,
                          const char *what, char *err, size_t errlen) {
    *tmp = nullptr;
    cudaError_t e = cudaMalloc(block, bytes);
    if (e == cudaSuccess) e = cudaMemset(*block, 0, bytes);
    if (e == cudaSuccess) e = cudaMalloc(tmp, tmp_floats * sizeof(float));
    if (e == cudaSuccess) return 0;
    cudaGetLastError();
    snprintf(err, errlen, "%s:%d: %s megakernel: %s buffers: %s", __FILE__, __LINE__, g->k->name, what,
             cudaGetErrorString(e));
    if (*tmp) cudaFree(*tmp);
    *tmp = nullptr;
    return -1;
}

// FP8 FC1 (launchers with a quantiser): FC1's weights quantised once, here, on the GPU (MXFP8: E4M3 + 128x4 UE8M0
// scales, sg_sm100_quant_weight, bit-identical to the CPU's sg_mxfp8_quantize; FP8ROW: E4M3 + one fp32 scale per
// output channel, sg_sm90_quant_weight_rows, bit-identical to sg_fp8_quantize with 1 x 768 blocks, interleaved with
// the bias; needs g->bias), and the buffers
// LayerNorm-2 writes FC1's input into (rows padded to whole 128-row tiles, zeroed once: padding rows stay finite);
// their tensor maps into maps (MXFP8: bytes, boxes of 128 rows x 128 bytes; FP8ROW: 16-bit elements, boxes of 64 x
// 128 rows and, for W1, 64 x 64 rows: mega_gpu.h), all with 128-byte swizzle (one K block of 128 E4M3).
static int mega_fc1_fp8(sg_mega_gpu *g, const sg_model *m, CUtensorMap *maps, char *err, size_t errlen) {
    const int L = g->L, D = SG_MEGA_D, F = SG_MEGA_F, fmt = g->k->fc1;
    const size_t rows = (size_t)g->tm_max * SG_MEGA_BM, w1 = (size_t)F * D, w1sf = sg_mega_w1sf_bytes(fmt);
    const size_t y8 = rows * D;
    const size_t y8sf = fmt == SG_FC1_MXFP8 ? sg_sm100_sf_bytes((uint32_t)rows, (uint32_t)D / 32)
                                            : rows * sizeof(float);
    float *tmp;
    if (mega_fp8_alloc(g, &g->mx, L * (w1 + w1sf) + y8 + y8sf, &tmp, w1, "FP8 FC1", err, errlen)) return -1;
    g->w1sf = g->mx + L * w1;
    g->y8 = g->w1sf + L * w1sf;
    g->y8sf = g->y8 + y8;
    const bool row = fmt == SG_FC1_FP8ROW;
    const CUtensorMapDataType type = row ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const int elem = row ? 2 : 1;
    const uint32_t bc = 128 / elem;  // a box's 128 bytes of K
    int rc = 0;
    for (int l = 0; l < L && rc == 0; l++) {
        uint8_t *q = g->mx + l * w1;
        // FP8ROW's scales come interleaved with the layer's FC1 bias (g->bias: per layer qkv_b, then fc1_b)
        rc = g->k->quant_weight(m->layers[l].fc1_w, F, D, g->bias + mega_bias_layer(l) + 3 * D, tmp, q,
                                g->w1sf + l * w1sf, err, errlen);
        if (rc == 0)
            rc = sg_tmap_encode_2d(&maps[SG_MAP_W1Q(L, l)], type, elem, q, F, D / elem, SG_MEGA_BN, bc,
                                   CU_TENSOR_MAP_SWIZZLE_128B, err, errlen);
        if (rc == 0 && row)
            rc = sg_tmap_encode_2d(&maps[SG_MAP_R64(L, SG_MAP_W1Q(L, l))], type, elem, q, F, D / elem, 64, bc,
                                   CU_TENSOR_MAP_SWIZZLE_128B, err, errlen);
    }
    if (rc == 0)
        rc = sg_tmap_encode_2d(&maps[SG_MAP_Y8(L)], type, elem, g->y8, rows, D / elem, SG_MEGA_BM, bc,
                               CU_TENSOR_MAP_SWIZZLE_128B, err, errlen);
    cudaFree(tmp);
    return rc;
}

// The layers whose FC2 runs in FP8 beside FC1 (FP8ROW only): SG_FP8_FC2_LAYERS=none|all|LIST (LIST: layers and
// ranges, "0-5,8"; mega_layer_set.h, docs/debug-knobs.md), else every layer but the first two: FC2 in FP8 costs the
// first layers' most (the CPU study and the H100, docs/perf-notes.md session 13: layer 0's FC2 alone takes min
// cosine 0.99958 -> 0.99936; layers 2-11 keep 0.99942 on the photos and the fixtures, all 12 layers 0.99908 /
// 0.99899). 0, or -1 with err for a set that does not parse.
static int mega_fc2_f8_layers(int L, unsigned *mask, char *err, size_t errlen) {
    const char *e = getenv("SG_FP8_FC2_LAYERS");
    if (!e) {
        *mask = (L >= 32 ? ~0u : (1u << L) - 1u) & ~3u;
        return 0;
    }
    char why[256];
    if (sg_mega_layer_set_parse(e, L, mask, why, sizeof why) == 0) return 0;
    snprintf(err, errlen, "SG_FP8_FC2_LAYERS: %s", why);
    return -1;
}

// FP8ROW FC2 on the layers of g->fc2_f8: their W2 quantised like W1 (E4M3, one fp32 scale per output channel,
// interleaved with FC2's bias), the buffers FC1 writes its E4M3 output and LayerNorm-2 its scales into (rows padded
// to whole row tiles, zeroed once), and their maps (16-bit elements: W2 [768, 1536] and H8 [rows, 1536], boxes of 64 x
// 128 rows and 64 x 64 rows, 128-byte swizzle).
static int mega_fc2_fp8(sg_mega_gpu *g, const sg_model *m, const sg_mega_buffers *b, CUtensorMap *maps, char *err,
                        size_t errlen) {
    const int L = g->L, D = SG_MEGA_D, F = SG_MEGA_F;
    const size_t rows = (size_t)g->tm_max * SG_MEGA_BM, w2 = (size_t)D * F, w2sf = 2 * (size_t)D * sizeof(float);
    const size_t bytes = L * (w2 + w2sf) + rows * F + rows * sizeof(float);
    float *tmp;
    if (mega_fp8_alloc(g, &g->f2, bytes, &tmp, w2, "FP8 FC2", err, errlen)) return -1;
    g->w2sf = reinterpret_cast<float *>(g->f2 + L * w2);
    g->h8 = g->f2 + L * (w2 + w2sf);
    g->h8sf = reinterpret_cast<float *>(g->h8 + rows * F);
    const CUtensorMapDataType u16 = CU_TENSOR_MAP_DATA_TYPE_UINT16;
    const CUtensorMapSwizzle sw = CU_TENSOR_MAP_SWIZZLE_128B;
    int rc = 0;
    for (int l = 0; l < L && rc == 0; l++) {
        uint8_t *q = g->f2 + l * w2;
        rc = g->k->quant_weight(m->layers[l].fc2_w, D, F, b->layers[l].fc2_b, tmp, q,
                                reinterpret_cast<uint8_t *>(g->w2sf) + l * w2sf, err, errlen);
        if (rc == 0)
            rc = sg_tmap_encode_2d(&maps[SG_MAP_W2Q(L, l)], u16, 2, q, D, F / 2, SG_MEGA_BN, 64, sw, err, errlen) ||
                 sg_tmap_encode_2d(&maps[SG_MAP_W2Q64(L, l)], u16, 2, q, D, F / 2, 64, 64, sw, err, errlen);
    }
    if (rc == 0)
        rc = sg_tmap_encode_2d(&maps[SG_MAP_H8(L)], u16, 2, g->h8, rows, F / 2, SG_MEGA_BM, 64, sw, err, errlen) ||
             sg_tmap_encode_2d(&maps[SG_MAP_H8_64(L)], u16, 2, g->h8, rows, F / 2, 64, 64, sw, err, errlen);
    cudaFree(tmp);
    return rc;
}

// FP8ROW FC2's bound on layer l's FC1 output (sg_sm90_ln_out_fp8): |H_j| <= ||y||_2 c + b with c = 1.0625^2
// max_j ||W1_j||_2 (E4M3 rounds each of y and W1 by at most 2^-4 of a value: the bound holds for the products the
// tensor cores sum) and b = max_j |b1_j| + 0.25 (GELU's negative lobe is above -0.17).
static void mega_h8_bound(const sg_model *m, int l, float *c, float *b) {
    const int D = SG_MEGA_D, F = SG_MEGA_F;
    double wmax = 0.0, bmax = 0.0;
    for (int j = 0; j < F; j++) {
        const float *w = m->layers[l].fc1_w + (size_t)j * D;
        double ss = 0.0;
        for (int k = 0; k < D; k++) ss += (double)w[k] * w[k];
        if (ss > wmax) wmax = ss;
        const double bj = fabs((double)m->layers[l].fc1_b[j]);
        if (bj > bmax) bmax = bj;
    }
    *c = (float)(1.0625 * 1.0625 * sqrt(wmax));
    *b = (float)(bmax + 0.25);
}

sg_mega_gpu *sg_mega_gpu_create(const sg_mega_launcher *k, const sg_model *m, const sg_mega_buffers *b, char *err,
                                size_t errlen) {
    sg_mega_gpu *g = (sg_mega_gpu *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return nullptr;
    }
    g->k = k;
    const sg_config *c = &m->cfg;
    if (!sg_mega_supported(c, err, errlen)) {
        sg_mega_gpu_free(g);
        return nullptr;
    }
    const int L = c->num_layers, D = SG_MEGA_D, F = SG_MEGA_F;
    g->L = L;
    g->n_max = b->max_batch;
    g->tm_max = sg_mega_tiles_m(b->max_batch);
    g->tasks = (unsigned **)calloc((size_t)g->n_max + 1, sizeof(unsigned *));
    g->ntasks = (int *)calloc((size_t)g->n_max + 1, sizeof(int));
    g->nside = (int *)calloc((size_t)g->n_max + 1, sizeof(int));
    g->smaps = (CUtensorMap **)calloc((size_t)g->n_max + 1, sizeof(CUtensorMap *));
    if (!g->tasks || !g->ntasks || !g->nside || !g->smaps || L > SG_MEGA_MAX_LAYERS || g->tm_max > SG_MEGA_MAX_TILES_M) {
        snprintf(err, errlen, "%s megakernel: out of host memory, or batch %d / %d layers beyond the task encoding",
                 k->name, b->max_batch, L);
        sg_mega_gpu_free(g);
        return nullptr;
    }
    int dev = 0;
    SG_MEGA_TRY(cudaGetDevice(&dev));
    SG_MEGA_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));
    if (const char *e = getenv("SG_MEGA_GRID")) {  // lab: fewer CTAs than SMs (how a stage's rate scales with them)
        const int grid = atoi(e);
        if (grid > 0 && grid < g->sms) g->sms = grid;
    }
    // Narrow (128 x 128) GEMM tasks for small batches, whose wide tasks leave most SMs idle: up to one row tile
    // per 7 SMs (H100, 132 SMs: 11 images, 17 row tiles); narrow64 (128 x 64, two K blocks per ring stage, a
    // 4-stage ring, LayerNorm tasks of 8 rows) up to one row tile per 9 SMs (9 images, 14 row tiles); halves
    // (narrow64 with the 768-column kinds as 64 x 64 tasks, 24 per row tile) up to one row tile per 18 SMs (4
    // images, 7 row tiles: those kinds' 168 tasks a little over one wave). Measured on an H100 after v43 gave
    // narrow64 and halves their fourth stage (session 12, docs/perf-notes.md): narrow64 against the rule before
    // (narrow at 8, wide from 9) 1.03x at 8 images, 1.09x at 9, 0.96x at 10-11; narrow against wide 1.00x at 10,
    // 1.02x at 11, 0.93x at 12; halves against narrow64 0.97x at 5, 0.94x at 6 (sessions 7-8: narrow against wide
    // 1.23x at batch 1, 0.94x at 14; halves 1.08x at batch 1). SG_MEGA_NARROW_MAX=N, SG_MEGA_NARROW64_MAX=N and
    // SG_MEGA_HALVES_MAX=N override them (docs/debug-knobs.md; 0: none).
    for (int s = 0; s < 4; s++) g->narrow_max[s] = 0;  // [0] unused: every batch may run wide
    const char *lag = getenv("SG_MEGA_FC1_LAG");
    g->fc1_lag = lag ? atoi(lag) : 1;  // FC1 one grid behind LayerNorm-2 (v16: +1.4 %, docs/perf-notes.md)
    lag = getenv("SG_MEGA_FC2_LAG");
    g->fc2_lag = lag ? atoi(lag) : 0;
    lag = getenv("SG_MEGA_QKV_LAG");
    g->qkv_lag = lag ? atoi(lag) : 0;
    const char *lnp = getenv("SG_MEGA_LN_PREFETCH");
    g->ln_prefetch = lnp ? atoi(lnp) != 0 : 1;
    const char *wp = getenv("SG_MEGA_W_PREFETCH_MIN");
    g->w_prefetch_min = wp ? atoi(wp) : 3;
    const char *side = getenv("SG_MEGA_SIDE_MIN");
    g->side_min = side ? atoi(side) : 96;
    static const int per[4] = {0, 7, 9, 18};
    static const char *knob[4] = {nullptr, "SG_MEGA_NARROW_MAX", "SG_MEGA_NARROW64_MAX", "SG_MEGA_HALVES_MAX"};
    for (int s = 1; s <= k->narrow && s < 4; s++) {
        while (sg_mega_tiles_m(g->narrow_max[s] + 1) * per[s] <= g->sms) g->narrow_max[s]++;
        if (const char *e = getenv(knob[s])) g->narrow_max[s] = atoi(e);
    }
    // Hopper's FP8 kernel has no narrow (128 x 128) task copies (sm90_mega.cu: with FP8 FC2's, they spilled): 10-11
    // images run wide there.
    if (k->fc1 == SG_FC1_FP8ROW) g->narrow_max[1] = 0;

    // fp32 biases of the GEMMs whose portable-path biases are bf16 (per layer, then the head's), and the LUT.
    const size_t head0 = mega_bias_layer(L), lut0 = mega_bias_lut(L);
    std::vector<float> hb(lut0 + 256);
    for (int i = 0; i < 256; i++) hb[lut0 + i] = sg_pixel_to_float((uint8_t)i);
    memcpy(hb.data() + head0, m->head_in_b + D, 2 * D * sizeof(float));  // in_proj rows D..3D: K and V
    memcpy(hb.data() + head0 + 2 * D, m->head_fc1_b, F * sizeof(float));
    for (int l = 0; l < L; l++) {
        float *q = hb.data() + mega_bias_layer(l);
        memcpy(q, m->layers[l].q_b, D * sizeof(float));
        memcpy(q + D, m->layers[l].k_b, D * sizeof(float));
        memcpy(q + 2 * D, m->layers[l].v_b, D * sizeof(float));
        memcpy(q + 3 * D, m->layers[l].fc1_b, F * sizeof(float));
    }
    SG_MEGA_TRY(cudaMalloc(&g->bias, hb.size() * sizeof(float)));
    SG_MEGA_TRY(cudaMemcpy(g->bias, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<sg_mega_layer_dev> hl(L);
    for (int l = 0; l < L; l++) {
        const sg_mega_layer_w &w = b->layers[l];
        const float *q = g->bias + mega_bias_layer(l);
        hl[l] = {w.ln1_w, w.ln1_b, w.ln2_w, w.ln2_b, q, w.o_b, q + 3 * D, w.fc2_b};
    }
    if (k->quant_weight && k->fc1 == SG_FC1_FP8ROW) {
        if (mega_fc2_f8_layers(L, &g->fc2_f8, err, errlen)) {
            sg_mega_gpu_free(g);
            return nullptr;
        }
        std::vector<float2> hk(L, make_float2(0.0f, 0.0f));
        for (int l = 0; l < L; l++)
            if ((g->fc2_f8 >> l) & 1u) mega_h8_bound(m, l, &hk[l].x, &hk[l].y);
        SG_MEGA_TRY(cudaMalloc(&g->h8k, L * sizeof(float2)));
        SG_MEGA_TRY(cudaMemcpy(g->h8k, hk.data(), L * sizeof(float2), cudaMemcpyHostToDevice));
    }
    SG_MEGA_TRY(cudaMalloc(&g->layers, L * sizeof(sg_mega_layer_dev)));
    SG_MEGA_TRY(cudaMemcpy(g->layers, hl.data(), L * sizeof(sg_mega_layer_dev), cudaMemcpyHostToDevice));
    const sg_mega_head_dev hh = {b->head_q,  g->bias + head0,         b->head_out_b, b->head_ln_w,
                                 b->head_ln_b, g->bias + head0 + 2 * D, b->head_fc2_b};
    SG_MEGA_TRY(cudaMalloc(&g->head, sizeof hh));
    SG_MEGA_TRY(cudaMemcpy(g->head, &hh, sizeof hh, cudaMemcpyHostToDevice));

    const uint64_t M = (uint64_t)b->max_batch * SG_MEGA_T;
    std::vector<CUtensorMap> hm(SG_MAPS(L));
    if ((k->quant_weight && mega_fc1_fp8(g, m, hm.data(), err, errlen)) ||
        (g->fc2_f8 && mega_fc2_fp8(g, m, b, hm.data(), err, errlen))) {
        sg_mega_gpu_free(g);
        return nullptr;
    }
    // The activations ([rows, cols] bf16; qkv's boxes are attention's), and with boxes of 64 rows too (SG_MAP_R64)
    // the A operands of the 768-column kinds, whose tasks are 64 x 64 in a halves launch.
    struct act { int map; const void *p; uint64_t rows, cols, box; bool r64; };
    const act acts[] = {{SG_MAP_Y, b->y, M, D, SG_MEGA_BM, false},
                        {SG_MAP_ATT, b->att, M, D, SG_MEGA_BM, true},
                        {SG_MAP_H, b->H, M, F, SG_MEGA_BM, true},
                        {SG_MAP_QKV, b->qkv, b->qkv_rows, 3 * D, SG_MEGA_ATT_BOX_ROWS, false},
                        {SG_MAP_QKV128, b->qkv, b->qkv_rows, 3 * D, 128, false},
                        {SG_MAP_PATCHES, b->patches, M, D, SG_MEGA_BM, true}};
    int rc = 0;
    for (const act &a : acts)
        rc = rc || sg_tmap_sw128_bf16(&hm[a.map], a.p, a.rows, a.cols, a.box, 64, err, errlen) ||
             (a.r64 && sg_tmap_sw128_bf16(&hm[SG_MAP_R64(L, a.map)], a.p, a.rows, a.cols, 64, 64, err, errlen));
    // Every weight ([rows, cols] bf16) twice: boxes of SG_MEGA_BN rows (wide and narrow launches) and of 64 rows
    // (narrow64 and halves launches, SG_MAP_R64).
    struct weight { int map; const void *w; uint64_t rows, cols; };
    std::vector<weight> ws = {{SG_MAP_WPATCH, b->patch_w, D, D}, {SG_MAP_HKVW, b->head_kv_w, 2 * D, D}};
    // The head's products' weights (mega_hmm.cuh): boxes of SG_MEGA_HMM_BOX K elements x a task's output columns.
    const weight hws[3] = {{SG_MAP_HOW, b->head_out_w, D, D}, {SG_MAP_HW1, b->head_fc1_w, F, D},
                           {SG_MAP_HW2, b->head_fc2_w, D, F}};
    const int hkind[3] = {SG_MT_HOUT, SG_MT_HFC1, SG_MT_HFC2};
    for (int i = 0; i < 3 && !rc; i++)
        rc = sg_tmap_encode_2d(&hm[hws[i].map], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, hws[i].w, hws[i].rows, hws[i].cols,
                               (uint32_t)sg_mega_hmm_cols(hkind[i]), SG_MEGA_HMM_BOX, CU_TENSOR_MAP_SWIZZLE_NONE, err,
                               errlen);
    for (int l = 0; l < L; l++) {
        const sg_mega_layer_w &w = b->layers[l];
        ws.push_back({SG_MAP_W(l, 0), w.qkv_w, 3 * D, D});
        ws.push_back({SG_MAP_W(l, 1), w.o_w, D, D});
        ws.push_back({SG_MAP_W(l, 2), w.fc1_w, F, D});
        ws.push_back({SG_MAP_W(l, 3), w.fc2_w, D, F});
    }
    for (size_t i = 0; i < ws.size() && !rc; i++)
        rc = sg_tmap_sw128_bf16(&hm[ws[i].map], ws[i].w, ws[i].rows, ws[i].cols, SG_MEGA_BN, 64, err, errlen) ||
             sg_tmap_sw128_bf16(&hm[SG_MAP_R64(L, ws[i].map)], ws[i].w, ws[i].rows, ws[i].cols, 64, 64, err, errlen);
    if (rc) {
        sg_mega_gpu_free(g);
        return nullptr;
    }
    SG_MEGA_TRY(cudaMalloc(&g->maps, hm.size() * sizeof(CUtensorMap)));
    SG_MEGA_TRY(cudaMemcpy(g->maps, hm.data(), hm.size() * sizeof(CUtensorMap), cudaMemcpyHostToDevice));
    g->cnt_words = sg_mega_counter_words(g->tm_max);
    SG_MEGA_TRY(cudaMalloc(&g->cnt, g->cnt_words * sizeof(unsigned)));
    SG_MEGA_TRY(cudaMemset(g->cnt, 0, g->cnt_words * sizeof(unsigned)));
    if (getenv("SG_SM90_TRACE")) g->trace_cap = SG_MEGA_TRACE_CAP;
    if (getenv("SG_SM90_PROFILE") || g->trace_cap)
        SG_MEGA_TRY(cudaMalloc(&g->prof, sg_mega_prof_words(g) * sizeof(unsigned long long)));
    int per_sm = 0;
    SG_MEGA_TRY(k->prepare(&per_sm));
    if (per_sm < 1) {
        snprintf(err, errlen, "%s megakernel: cannot be resident (%d bytes of shared memory, %d threads)",
                 k->name, SG_MEGA_SMEM, SG_MEGA_THREADS);
        sg_mega_gpu_free(g);
        return nullptr;
    }
    return g;
}

// The GEMM task shape of a launch of n images (sg_mega_params.narrow): the narrowest whose limit n is within.
static int mega_shape(const sg_mega_gpu *g, int n) {
    for (int s = 3; s > 0; s--)
        if (n <= g->narrow_max[s]) return s;
    return 0;
}

int sg_mega_gpu_run(sg_mega_gpu *g, const sg_mega_buffers *b, const uint8_t *pix, const float *post_w,
                     const float *post_b, float eps, int n, cudaStream_t st, char *err, size_t errlen) {
    if (n < 1 || n > g->n_max) {
        snprintf(err, errlen, "%s:%d: %s megakernel: batch %d outside 1..%d", __FILE__, __LINE__, g->k->name, n, g->n_max);
        return -1;
    }
    const int shape = mega_shape(g, n);  // the launch's GEMM task shape (sg_mega_params.narrow)
    if (!g->tasks[n]) {  // first use of this batch size: outside graph capture (the backend runs it eagerly first)
        cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(st, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
            snprintf(err, errlen, "%s:%d: %s megakernel: batch %d first seen during graph capture", __FILE__, __LINE__, g->k->name, n);
            return -1;
        }
        // The order: stage by stage with the memory-bound tasks interleaved one grid behind their producers,
        // measured best on an H100 (11,524 images/s at batch 1024 against 11,142-11,358 for plain stage by stage
        // and 8,811-9,442 for wavefronts of 4-16 row tiles, docs/perf-notes.md). Every table is checked
        // topological before it is used (kernel/mega/mega_plan.c).
        uint32_t *t = nullptr;
        size_t count = 0;
        if (sg_mega_plan_build(n, g->L, g->sms, shape, g->fc1_lag, g->fc2_lag, g->qkv_lag, &t, &count, err,
                               errlen))
            return -1;
        if (sg_mega_plan_check(t, count, n, g->L, shape, err, errlen)) {
            free(t);
            return -1;
        }
        // A wide launch's row-wise tasks go to the side warps, in a list of their own after the main list (checked
        // above as one order; mega_plan.h says why two tickets over it cannot deadlock), from side_min images on.
        // Smaller launches keep them on the consumers: there each such stage is on the critical path, and eight
        // warps finish a task sooner (H100, side warps against none in one build: 16 images 0.89x, 32 0.95x, 48-64
        // 0.98-0.99x, 96 1.04x, 128 1.03x, 256 1.06x, 1,024 1.04x; docs/perf-notes.md session 10).
        size_t nside = 0;
        if (n >= g->side_min && shape == 0 && sg_mega_plan_split(t, count, &nside)) {
            snprintf(err, errlen, "%s megakernel: task table split: out of host memory", g->k->name);
            free(t);
            return -1;
        }
        unsigned *d = nullptr;
        const bool up = cudaMalloc(&d, count * sizeof(unsigned)) == cudaSuccess &&
                        cudaMemcpy(d, t, count * sizeof(unsigned), cudaMemcpyHostToDevice) == cudaSuccess;
        free(t);
        if (!up) {
            snprintf(err, errlen, "%s:%d: %s megakernel: task table upload: %s", __FILE__, __LINE__, g->k->name,
                     cudaGetErrorString(cudaGetLastError()));
            if (d) cudaFree(d);
            return -1;
        }
        g->tasks[n] = d;
        g->ntasks[n] = (int)(count - nside);
        g->nside[n] = (int)nside;
        const uint64_t M = (uint64_t)n * SG_MEGA_T;
        CUtensorMap sm[SG_SMAPS];  // (SG_SMAP_H8 over H when no FC2 runs in FP8: encoded, never used)
        CUtensorMap *dm = nullptr;
        if (sg_tmap_sw128(&sm[SG_SMAP_QKV], 0, b->qkv, M, 3 * SG_MEGA_D, SG_MEGA_BM, 64, err, errlen) ||
            sg_tmap_sw128(&sm[SG_SMAP_H], 0, b->H, M, SG_MEGA_F, SG_MEGA_BM, 64, err, errlen) ||
            sg_tmap_sw128(&sm[SG_SMAP_RES], 1, b->h, M, SG_MEGA_D, 64, 32, err, errlen) ||
            sg_tmap_sw128(&sm[SG_SMAP_QKV64], 0, b->qkv, M, 3 * SG_MEGA_D, 64, 64, err, errlen) ||
            sg_tmap_sw128(&sm[SG_SMAP_H64], 0, b->H, M, SG_MEGA_F, 64, 64, err, errlen) ||
            sg_tmap_encode_2d(&sm[SG_SMAP_H8], CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, g->h8 ? (void *)g->h8 : (void *)b->H,
                              M, SG_MEGA_F / 2, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B, err, errlen))
            return -1;
        if (cudaMalloc(&dm, sizeof sm) != cudaSuccess ||
            cudaMemcpy(dm, sm, sizeof sm, cudaMemcpyHostToDevice) != cudaSuccess) {
            snprintf(err, errlen, "%s:%d: %s megakernel: store maps upload: %s", __FILE__, __LINE__, g->k->name,
                     cudaGetErrorString(cudaGetLastError()));
            if (dm) cudaFree(dm);
            return -1;
        }
        g->smaps[n] = dm;
    }
    sg_mega_params p;
    p.tasks = g->tasks[n];
    p.smaps = g->smaps[n];
    p.ntasks = g->ntasks[n];
    p.side = g->tasks[n] + g->ntasks[n];
    p.nside = g->nside[n];
    p.maps = g->maps;
    p.layers = g->layers;
    p.post_w = post_w;
    p.post_b = post_b;
    p.h = b->h;
    p.y = b->y;
    p.qkv = b->qkv;
    p.att = b->att;
    p.H = b->H;
    p.patches = b->patches;
    p.pix = pix;
    p.lut = g->bias + mega_bias_lut(g->L);
    p.head = g->head;
    p.pooled = b->pooled;
    p.hatt = b->hatt;
    p.hy = b->hy;
    p.hmlp = b->hmlp;
    p.pos_b = b->pos_b;
    p.cnt = g->cnt;
    p.tm_max = g->tm_max;
    p.n = n;
    p.L = g->L;
    p.eps = eps;
    p.y8 = g->y8;
    p.y8sf = g->y8sf;
    p.w1sf = g->w1sf;
    p.fc1 = g->mx ? g->k->fc1 : SG_FC1_BF16;
    p.fc2_f8 = g->fc2_f8;
    p.h8 = g->h8;
    p.h8sf = g->h8sf;
    p.w2sf = g->w2sf;
    p.h8k = g->h8k;
    p.narrow = shape;
    p.ln_prefetch = g->ln_prefetch;
    p.w_prefetch = shape >= g->w_prefetch_min;
    // SG_SM90_PROFILE=1: launches outside graph capture count cycles per task kind and print a summary (stderr).
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    const bool prof = g->prof && cudaStreamIsCapturing(st, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone;
    p.prof = prof ? g->prof : nullptr;
    if (prof && (cudaMemsetAsync(g->prof, 0, sg_mega_prof_words(g) * sizeof(unsigned long long), st) != cudaSuccess ||
                 cudaMemcpyAsync(g->prof + SG_MEGA_PROF_TRACE_CAP, &g->trace_cap, sizeof g->trace_cap,
                                 cudaMemcpyHostToDevice, st) != cudaSuccess)) {
        snprintf(err, errlen, "%s:%d: %s megakernel: profile reset failed", __FILE__, __LINE__, g->k->name);
        return -1;
    }
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    if (prof) {
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        cudaEventRecord(e0, st);
    }
    const cudaError_t e = g->k->launch(prof, g->sms, st, &p);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: %s megakernel launch: %s", __FILE__, __LINE__, g->k->name, cudaGetErrorString(e));
        return -1;
    }
    if (prof) {
        unsigned long long h[SG_MEGA_PROF_WORDS];
        float ms = 0;
        cudaEventRecord(e1, st);
        if (cudaMemcpyAsync(h, g->prof, sizeof h, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
            cudaStreamSynchronize(st) != cudaSuccess) {
            snprintf(err, errlen, "%s:%d: %s megakernel: %s", __FILE__, __LINE__, g->k->name, cudaGetErrorString(cudaGetLastError()));
            return -1;
        }
        cudaEventElapsedTime(&ms, e0, e1);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        if (g->trace_cap && sg_mega_trace_write(g, n, shape, ms, err, errlen) != 0) return -1;
        // Shares of the CTAs' own elapsed cycles (summed at their exit), so they hold whatever clock the GPU ran at;
        // the consumer counters are warpgroup 0's (both warpgroups run every task), the producer's is its own.
        const double cta_cycles = (double)h[SG_MT_END + 5];
        const double mhz = (double)h[SG_MT_END + 5] / g->sms / (ms * 1e3);
        const char *const *names = mega_prof_names;
        fprintf(stderr, "sg-%s profile, batch %d: %.3f ms at ~%.0f MHz, %d tasks; per kind: share of consumer time, "
                        "tasks, us per task%s\n", g->k->name, n, ms, mhz, sg_mega_total_tasks(n, g->L, shape),
                p.nside ? " (prep, ln1, ln2, postln: the side warps' time, not the consumers')" : "");
        for (int i = 0; i < SG_MT_END + 5; i++) {
            const unsigned long long cnt = i < SG_MT_END ? h[SG_MEGA_PROF_COUNTS + i] : 0ull;
            fprintf(stderr, "  %-10s %5.1f%%  %8llu  %8.2f\n", names[i], 100.0 * h[i] / cta_cycles, cnt,
                    cnt ? h[i] / mhz / cnt : 0.0);
        }
        for (int i = 0; i < SG_MT_END; i++) {  // GEMM kinds whose layer records its phases (us per task)
            const unsigned long long cnt = h[SG_MEGA_PROF_COUNTS + i], *ph = h + SG_MEGA_PROF_GEMM + i;
            if (cnt && (ph[0] || ph[16] || ph[32]))
                fprintf(stderr, "  %-10s start %6.2f  K loop %6.2f  staging+stores %6.2f us per task\n", names[i],
                        ph[0] / mhz / cnt, ph[16] / mhz / cnt, ph[32] / mhz / cnt);
        }
        // The waits by the kind of task waited for, as shares of the CTAs' cycles: the consumers' idle before it,
        // the producer's and the side warps' waits on its inputs.
        fprintf(stderr, "  waits before a task of each kind (share of CTA cycles): consumers idle / producer on inputs "
                        "/ side warps on inputs\n");
        for (int i = 0; i < SG_MT_END; i++) {
            const unsigned long long ci = h[SG_MEGA_PROF_IDLE + i], pd = h[SG_MEGA_PROF_DEPW + i],
                                     sd = h[SG_MEGA_PROF_SIDEW + i];
            if (ci || pd || sd)
                fprintf(stderr, "  %-10s %5.1f%% %5.1f%% %5.1f%%\n", names[i], 100.0 * ci / cta_cycles,
                        100.0 * pd / cta_cycles, 100.0 * sd / cta_cycles);
        }
    }
    return 0;
}


// ------------------------------------------------------------------------------- as the portable path's encoder

namespace {
struct mega_ctx {
    sg_mega_gpu *mega;
    sg_mega_buffers buf;
    std::vector<sg_mega_layer_w> layers;
};
}  // namespace

int sg_mega_encoder_init(const sg_mega_launcher *k, void **out, const sg_model *m, sg_cu_model *cm, char *err,
                         size_t errlen) {
    mega_ctx *c = new (std::nothrow) mega_ctx();
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
    const sg_cu_weights &w = cm->w;
    c->buf = {cm->max_batch, cm->h,        cm->y,           cm->qkv,          M + 16,       cm->att,
              cm->big,       cm->big,      w.patch_w,       w.pos_b,          c->layers.data(),
              w.head_kv_w,   w.head_out_w, w.head_fc1_w,    w.head_fc2_w,     w.head_q,     w.head_out_b,
              w.head_ln_w,   w.head_ln_b,  w.head_fc2_b,    cm->hatt,         cm->hy,       cm->hmlp,
              cm->pooled};
    c->mega = sg_mega_gpu_create(k, m, &c->buf, err, errlen);
    if (!c->mega) {
        delete c;
        return -1;
    }
    *out = c;
    return 0;
}

int sg_mega_encoder_run(void *ctx, sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, char *err,
                        size_t errlen) {
    mega_ctx *c = (mega_ctx *)ctx;
    return sg_mega_gpu_run(c->mega, &c->buf, pix, cm->w.post_ln_w, cm->w.post_ln_b, cm->cfg.layer_norm_eps, n, st,
                           err, errlen);  // pooled = the pooler_output
}

void sg_mega_encoder_destroy(void *ctx) {
    mega_ctx *c = (mega_ctx *)ctx;
    sg_mega_gpu_free(c->mega);
    delete c;
}
