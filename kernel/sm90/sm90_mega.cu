// kernel/sm90/sm90_mega.cu — the Hopper megakernel: all encoder layers and the post-LayerNorm in one launch.
//
// Shape of one CTA (one per SM, 384 threads, ~193 KB of shared memory): two independent "virtual CTAs", each a
// producer thread (lane 0 of warp 0 or 1; setmaxnreg 56) feeding one consumer warpgroup (setmaxnreg 224)
// through its own 3-stage mbarrier ring of 32 KB stages (A 128 x 64 + W 128 x 64 bf16, 128-byte swizzle).
// Each virtual CTA takes task numbers from one global ticket (atomicAdd) in list order (sm90_mega.cuh), so the
// lowest unfinished task never waits on anything unfinished and the launch cannot deadlock, whatever the
// residency (no cooperative launch needed, and it can be captured in a CUDA graph).
//   producer: ticket -> wait for the task's input counters (ld.acquire + fence.proxy.async, sm90_sync.cuh) ->
//             hand the task number to its consumer (4-slot smem queue) -> TMA loads into the ring
//             (GEMM: K/64 blocks of A and W; attention: Q, K, V boxes of 256 x 64, one stage each);
//   consumer: GEMM tile 128 x 128 (2 x wgmma m64n128k16 per k16 step, 128 fp32 registers started at bias +
//             fp32 residual, then tanh GELU and bf16/fp32 stores; the residual stream h is updated in place), or attention of one (image, head)
//             (four 64-query blocks, sm90_attn.cuh), or LayerNorm of a row tile (sm90_ln.cuh); then
//             bar.sync of its warpgroup + one red.release.gpu on the task's counter.
// Two virtual CTAs instead of a ping-pong pair: a consumer never waits on the other's ring, attention and
// LayerNorm tasks need no hand-off, and one's epilogue still overlaps the other's MMAs.
// Counters are zeroed by the last CTA to finish (an exit count), so the next launch starts from zero with no
// memset and no parity bank; the host zeroes them once at allocation.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "sm90_gemm.cuh"
#include "sm90_attn.cuh"
#include "sm90_ln.cuh"
#include "sm90_sync.cuh"
#include "sm90_mega.cuh"
#include "sm90_mega.h"
#include "sm90_tmap.cuh"

#define SG_MEGA_THREADS 384
#define SG_MEGA_STAGES 3  // per virtual CTA: 3 x 32 KB; attention needs exactly 3 (Q, K, V)
#define SG_MEGA_TASKQ 4
#define SG_MEGA_RING_BYTES (SG_MEGA_STAGES * SG_GEMM_STAGE_BYTES(SG_MEGA_BN))
#define SG_MEGA_SMEM (2 * SG_MEGA_RING_BYTES + 1024)  // + alignment slack for the 1024-byte swizzle atoms
#define SG_MEGA_REG_PRODUCER 56  // 40 spilled 8 bytes in the producer (ticket, task decode, counter waits)
#define SG_MEGA_REG_CONSUMER 224  // 128 x 56 + 256 x 224 = 64,512 <= 65,536

static_assert(SG_GEMM_STAGE_BYTES(SG_MEGA_BN) == SG_ATTN_TILE_BYTES, "an attention box fills one ring stage");

// Tensor maps (device memory, 64-byte aligned): activations, then 4 weights per layer.
enum { SG_MAP_Y = 0, SG_MAP_ATT, SG_MAP_H, SG_MAP_QKV, SG_MAP_W0 };
#define SG_MAP_W(l, j) (SG_MAP_W0 + 4 * (l) + (j))  // j: 0 Wqkv, 1 Wo, 2 W1, 3 W2

struct sg_mega_layer_dev {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *qkv_b, *o_b, *fc1_b, *fc2_b;  // fp32 (the portable path's qkv / fc1 biases are bf16)
};

struct sg_mega_params {
    const CUtensorMap *maps;
    const sg_mega_layer_dev *layers;
    const float *post_w, *post_b;
    float *h;                       // [M, 768] fp32 residual stream (in: patch embeddings; out: encoder output)
    __nv_bfloat16 *y, *qkv, *att, *H;
    unsigned *cnt;
    int tm_max, n, L;
    float eps;
};

__device__ __forceinline__ uint8_t *sg_mega_align1024(uint8_t *p) {
    return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// Waits (one thread) until every input of task k is complete.
__device__ __forceinline__ void sg_mega_wait_inputs(const sg_mega_params &p, const sg_mega_task &k) {
    const unsigned *c = p.cnt;
    const int l = k.layer, tm = p.tm_max, M = p.n * SG_MEGA_T;
    switch (k.kind) {
    case SG_MT_LN1:
        if (l > 0) sg_dep_wait(c + sg_mega_counter(SG_MT_FC2, k.a, tm), SG_MEGA_FC2_TILES * l);
        break;
    case SG_MT_QKV: sg_dep_wait(c + sg_mega_counter(SG_MT_LN1, k.a, tm), l + 1); break;
    case SG_MT_ATT: {
        // The image's 196 rows span 2 or 3 row tiles. (The 256-row boxes also read up to 60 rows of the next
        // image; those only meet masked keys or unstored queries: sm90_attn.cuh.)
        const int r0 = k.a * SG_MEGA_T / SG_MEGA_BM, r1 = (k.a * SG_MEGA_T + SG_MEGA_T - 1) / SG_MEGA_BM;
        for (int r = r0; r <= r1; r++) sg_dep_wait(c + sg_mega_counter(SG_MT_QKV, r, tm), SG_MEGA_QKV_TILES * (l + 1));
        break;
    }
    case SG_MT_OUT: {
        const int last = min(k.a * SG_MEGA_BM + SG_MEGA_BM, M) - 1;
        for (int i = k.a * SG_MEGA_BM / SG_MEGA_T; i <= last / SG_MEGA_T; i++)
            sg_dep_wait(c + sg_mega_counter(SG_MT_ATT, i, tm), SG_MEGA_HEADS * (l + 1));
        break;
    }
    case SG_MT_LN2: sg_dep_wait(c + sg_mega_counter(SG_MT_OUT, k.a, tm), SG_MEGA_OUT_TILES * (l + 1)); break;
    case SG_MT_FC1: sg_dep_wait(c + sg_mega_counter(SG_MT_LN2, k.a, tm), l + 1); break;
    case SG_MT_FC2: sg_dep_wait(c + sg_mega_counter(SG_MT_FC1, k.a, tm), SG_MEGA_FC1_TILES * (l + 1)); break;
    case SG_MT_POSTLN: sg_dep_wait(c + sg_mega_counter(SG_MT_FC2, k.a, tm), SG_MEGA_FC2_TILES * l); break;
    default: break;
    }
}

__device__ __forceinline__ void sg_mega_produce(const sg_mega_params &p, const sg_sm90_gemm_smem &sm, uint64_t *tfull,
                                                uint64_t *tempty, int *tslot) {
    sg_sm90_ring ring = {0, 0}, tq = {0, 0};
    const int total = sg_mega_total_tasks(p.n, p.L);
    for (;;) {
        const int t = (int)atomicAdd(p.cnt + SG_MEGA_CNT_TICKET, 1u);
        const sg_mega_task k = sg_mega_decode(t < total ? t : -1, p.n, p.L);
        sg_mega_wait_inputs(p, k);
        sg_mbar_wait(&tempty[tq.stage], tq.phase ^ 1u);
        tslot[tq.stage] = k.kind == SG_MT_END ? -1 : t;
        sg_mbar_arrive(&tfull[tq.stage]);  // release: the slot write is visible to the consumer's wait
        sg_ring_next(tq, SG_MEGA_TASKQ);
        const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
        switch (k.kind) {
        case SG_MT_END: return;
        case SG_MT_QKV:
            sg_sm90_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(p.maps + SG_MAP_Y, p.maps + SG_MAP_W(k.layer, 0), m0, n0,
                                                            SG_MEGA_D, sm, ring);
            break;
        case SG_MT_OUT:
            sg_sm90_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(p.maps + SG_MAP_ATT, p.maps + SG_MAP_W(k.layer, 1), m0,
                                                            n0, SG_MEGA_D, sm, ring);
            break;
        case SG_MT_FC1:
            sg_sm90_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(p.maps + SG_MAP_Y, p.maps + SG_MAP_W(k.layer, 2), m0, n0,
                                                            SG_MEGA_D, sm, ring);
            break;
        case SG_MT_FC2:
            sg_sm90_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(p.maps + SG_MAP_H, p.maps + SG_MAP_W(k.layer, 3), m0, n0,
                                                            SG_MEGA_F, sm, ring);
            break;
        case SG_MT_ATT:
            for (int j = 0; j < 3; j++) {  // Q, K, V of head b: columns 768 j + 64 b
                sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
                sg_mbar_arrive_expect_tx(&sm.full[ring.stage], SG_ATTN_TILE_BYTES);
                sg_tma_load_2d(sm.stages + ring.stage * SG_ATTN_TILE_BYTES, p.maps + SG_MAP_QKV, &sm.full[ring.stage],
                               SG_MEGA_D * j + SG_ATTN_DH * k.b, k.a * SG_MEGA_T);
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
            break;
        default: break;  // LayerNorm tasks read h with ordinary loads
        }
    }
}

__device__ __forceinline__ void sg_mega_consume(const sg_mega_params &p, int v, const sg_sm90_gemm_smem &sm,
                                                uint64_t *tfull, uint64_t *tempty, const int *tslot) {
    sg_sm90_ring ring = {0, 0}, tq = {0, 0};
    const int tid = threadIdx.x % 128, warp = tid / 32, M = p.n * SG_MEGA_T;
    const int bar = 1 + v;  // named barrier of this warpgroup (counter signals)
    for (;;) {
        sg_mbar_wait(&tfull[tq.stage], tq.phase);
        const int t = tslot[tq.stage];
        sg_mbar_arrive(&tempty[tq.stage]);
        sg_ring_next(tq, SG_MEGA_TASKQ);
        if (t < 0) return;
        const sg_mega_task k = sg_mega_decode(t, p.n, p.L);
        const sg_mega_layer_dev *L = p.layers + (k.layer < p.L ? k.layer : 0);
        switch (k.kind) {
        case SG_MT_LN1:
        case SG_MT_LN2:
        case SG_MT_POSTLN: {
            const float *g = k.kind == SG_MT_LN1 ? L->ln1_w : k.kind == SG_MT_LN2 ? L->ln2_w : p.post_w;
            const float *b = k.kind == SG_MT_LN1 ? L->ln1_b : k.kind == SG_MT_LN2 ? L->ln2_b : p.post_b;
            sg_sm90_ln_rows(p.h, SG_MEGA_D, g, b, p.eps, p.y, SG_MEGA_D, k.a * SG_MEGA_BM, SG_MEGA_BM, M, warp, 4);
            if (k.kind != SG_MT_POSTLN) sg_dep_signal_wg(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), bar);
            break;
        }
        case SG_MT_ATT: {
            const uint8_t *qkv[3];
            for (int j = 0; j < 3; j++) {
                sg_mbar_wait(&sm.full[ring.stage], ring.phase);
                qkv[j] = sm.stages + ring.stage * SG_ATTN_TILE_BYTES;
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
            for (int rb = 0; rb < 4; rb++) sg_sm90_attn_block(rb, qkv[0], qkv[1], qkv[2], k.a, k.b, p.att, SG_MEGA_D);
            if (tid == 0)  // the three stages come back in ring order (each wgmma waited before its block ended)
                for (int j = 0; j < 3; j++)
                    sg_mbar_arrive(&sm.empty[(ring.stage + j) % SG_MEGA_STAGES]);
            sg_dep_signal_wg(p.cnt + sg_mega_counter(SG_MT_ATT, k.a, p.tm_max), bar);
            break;
        }
        default: {  // the four GEMMs: out = [GELU](bias + [residual] + A W^T), the accumulators start at
                    // bias + residual (sg_sm90_acc_init), so the epilogue only applies GELU and stores
            const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
            const bool resid = k.kind == SG_MT_OUT || k.kind == SG_MT_FC2;
            const float *bias = k.kind == SG_MT_QKV ? L->qkv_b : k.kind == SG_MT_OUT ? L->o_b
                              : k.kind == SG_MT_FC1 ? L->fc1_b : L->fc2_b;
            float acc0[64], acc1[64];
            sg_sm90_acc_init(acc0, m0, n0, M, bias, resid ? p.h : nullptr, SG_MEGA_D);
            sg_sm90_acc_init(acc1, m0 + 64, n0, M, bias, resid ? p.h : nullptr, SG_MEGA_D);
            sg_sm90_gemm_kloop_128<SG_MEGA_STAGES, 1>(acc0, acc1, k.kind == SG_MT_FC2 ? SG_MEGA_F : SG_MEGA_D, sm,
                                                      ring);
            sg_sm90_epilogue ep;
            if (k.kind == SG_MT_QKV) ep = {nullptr, 0, nullptr, 0, nullptr, p.qkv, 3 * SG_MEGA_D};
            else if (k.kind == SG_MT_FC1) ep = {nullptr, 1, nullptr, 0, nullptr, p.H, SG_MEGA_F};
            else ep = {nullptr, 0, nullptr, 0, p.h, nullptr, SG_MEGA_D};
            sg_sm90_gemm_epilogue<128>(acc0, m0, n0, M, ep);
            sg_sm90_gemm_epilogue<128>(acc1, m0 + 64, n0, M, ep);
            sg_dep_signal_wg(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), bar);
            break;
        }
        }
    }
}

__global__ void __launch_bounds__(SG_MEGA_THREADS, 1) sg_sm90_mega_kernel(const __grid_constant__ sg_mega_params p) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[2][SG_MEGA_STAGES], empty[2][SG_MEGA_STAGES];
    __shared__ uint64_t tfull[2][SG_MEGA_TASKQ], tempty[2][SG_MEGA_TASKQ];
    __shared__ int tslot[2][SG_MEGA_TASKQ];
    __shared__ int last_cta;
    uint8_t *rings = sg_mega_align1024(smem_raw);
    if (threadIdx.x == 0) {
        for (int v = 0; v < 2; v++) {
            for (int s = 0; s < SG_MEGA_STAGES; s++) {
                sg_mbar_init(&full[v][s], 1);
                sg_mbar_init(&empty[v][s], 1);
            }
            for (int q = 0; q < SG_MEGA_TASKQ; q++) {
                sg_mbar_init(&tfull[v][q], 1);
                sg_mbar_init(&tempty[v][q], 128);  // every consumer thread, after reading the slot
            }
        }
        sg_fence_mbar_init();
    }
    __syncthreads();
    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        sg_setmaxnreg_dec<SG_MEGA_REG_PRODUCER>();
        const int warp = threadIdx.x / 32;
        if (warp < 2) {
            if (threadIdx.x % 32 == 0) {
                const sg_sm90_gemm_smem sm = {rings + warp * SG_MEGA_RING_BYTES, full[warp], empty[warp]};
                sg_mega_produce(p, sm, tfull[warp], tempty[warp], tslot[warp]);
            }
            __syncwarp();
        }
    } else {
        sg_setmaxnreg_inc<SG_MEGA_REG_CONSUMER>();
        const int v = wg - 1;
        const sg_sm90_gemm_smem sm = {rings + v * SG_MEGA_RING_BYTES, full[v], empty[v]};
        sg_mega_consume(p, v, sm, tfull[v], tempty[v], tslot[v]);
    }
    // The last CTA out zeroes the counters for the next launch: every other CTA's counter traffic is ordered
    // before its exit increment (bar.sync + the cumulative fence below).
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last_cta = atomicAdd(p.cnt + SG_MEGA_CNT_EXIT, 1u) == gridDim.x - 1;
        __threadfence();
    }
    __syncthreads();
    if (last_cta) {
        const size_t words = sg_mega_counter_words(p.tm_max, p.tm_max);  // >= n_max: 128-row tiles < images
        for (size_t i = threadIdx.x; i < words; i += blockDim.x) p.cnt[i] = 0;
    }
}

// ---------------------------------------------------------------------------------------------------- host

struct sg_sm90_mega {
    CUtensorMap *maps;         // device
    sg_mega_layer_dev *layers; // device
    float *bias;               // device: per layer qkv_b [2304] + fc1_b [3072] in fp32
    unsigned *cnt;             // device
    int L, tm_max, n_max, sms;
    size_t cnt_words;
};

#define SG_MEGA_TRY(call)                                                                                       \
    do {                                                                                                        \
        cudaError_t e_ = (call);                                                                                \
        if (e_ != cudaSuccess) {                                                                                \
            snprintf(err, errlen, "%s:%d: sm90 megakernel: %s: %s", __FILE__, __LINE__, #call,                  \
                     cudaGetErrorString(e_));                                                                   \
            cudaGetLastError();                                                                                 \
            sg_sm90_mega_free(g);                                                                               \
            return nullptr;                                                                                     \
        }                                                                                                       \
    } while (0)

void sg_sm90_mega_free(sg_sm90_mega *g) {
    if (!g) return;
    if (g->maps) cudaFree(g->maps);
    if (g->layers) cudaFree(g->layers);
    if (g->bias) cudaFree(g->bias);
    if (g->cnt) cudaFree(g->cnt);
    free(g);
}

int sg_sm90_mega_supported(const sg_config *c, char *why, size_t whylen) {
    if (c->hidden_size != SG_MEGA_D || c->intermediate_size != SG_MEGA_F || c->num_heads != SG_MEGA_HEADS ||
        sg_config_tokens(c) != SG_MEGA_T || c->activation != SG_ACT_GELU_TANH || c->num_layers < 1) {
        snprintf(why, whylen, "the Hopper megakernel is built for SigLIP2-base shapes (hidden 768, mlp 3072, 12 heads, "
                              "196 tokens, tanh GELU); this model has hidden %d, mlp %d, %d heads, %d tokens",
                 c->hidden_size, c->intermediate_size, c->num_heads, sg_config_tokens(c));
        return 0;
    }
    return 1;
}

sg_sm90_mega *sg_sm90_mega_create(const sg_model *m, const sg_sm90_mega_buffers *b, char *err, size_t errlen) {
    sg_sm90_mega *g = (sg_sm90_mega *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return nullptr;
    }
    const sg_config *c = &m->cfg;
    if (!sg_sm90_mega_supported(c, err, errlen)) {
        sg_sm90_mega_free(g);
        return nullptr;
    }
    const int L = c->num_layers, D = SG_MEGA_D, F = SG_MEGA_F;
    g->L = L;
    g->n_max = b->max_batch;
    g->tm_max = sg_mega_tiles_m(b->max_batch);
    int dev = 0;
    SG_MEGA_TRY(cudaGetDevice(&dev));
    SG_MEGA_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));

    // fp32 biases of the two GEMMs whose portable-path biases are bf16.
    std::vector<float> hb((size_t)L * (3 * D + F));
    for (int l = 0; l < L; l++) {
        float *q = hb.data() + (size_t)l * (3 * D + F);
        memcpy(q, m->layers[l].q_b, D * sizeof(float));
        memcpy(q + D, m->layers[l].k_b, D * sizeof(float));
        memcpy(q + 2 * D, m->layers[l].v_b, D * sizeof(float));
        memcpy(q + 3 * D, m->layers[l].fc1_b, F * sizeof(float));
    }
    SG_MEGA_TRY(cudaMalloc(&g->bias, hb.size() * sizeof(float)));
    SG_MEGA_TRY(cudaMemcpy(g->bias, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<sg_mega_layer_dev> hl(L);
    for (int l = 0; l < L; l++) {
        const sg_sm90_mega_layer_w &w = b->layers[l];
        const float *q = g->bias + (size_t)l * (3 * D + F);
        hl[l] = {w.ln1_w, w.ln1_b, w.ln2_w, w.ln2_b, q, w.o_b, q + 3 * D, w.fc2_b};
    }
    SG_MEGA_TRY(cudaMalloc(&g->layers, L * sizeof(sg_mega_layer_dev)));
    SG_MEGA_TRY(cudaMemcpy(g->layers, hl.data(), L * sizeof(sg_mega_layer_dev), cudaMemcpyHostToDevice));

    const uint64_t M = (uint64_t)b->max_batch * SG_MEGA_T;
    std::vector<CUtensorMap> hm(SG_MAP_W0 + 4 * L);
    int rc = sg_sm90_tmap_bf16(&hm[SG_MAP_Y], b->y, M, D, SG_MEGA_BM, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_ATT], b->att, M, D, SG_MEGA_BM, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_H], b->H, M, F, SG_MEGA_BM, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_QKV], b->qkv, b->qkv_rows, 3 * D, SG_ATTN_ROWS, 64, err, errlen);
    for (int l = 0; l < L && !rc; l++) {
        const sg_sm90_mega_layer_w &w = b->layers[l];
        rc = sg_sm90_tmap_bf16(&hm[SG_MAP_W(l, 0)], w.qkv_w, 3 * D, D, SG_MEGA_BN, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_W(l, 1)], w.o_w, D, D, SG_MEGA_BN, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_W(l, 2)], w.fc1_w, F, D, SG_MEGA_BN, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_W(l, 3)], w.fc2_w, D, F, SG_MEGA_BN, 64, err, errlen);
    }
    if (rc) {
        sg_sm90_mega_free(g);
        return nullptr;
    }
    SG_MEGA_TRY(cudaMalloc(&g->maps, hm.size() * sizeof(CUtensorMap)));
    SG_MEGA_TRY(cudaMemcpy(g->maps, hm.data(), hm.size() * sizeof(CUtensorMap), cudaMemcpyHostToDevice));
    g->cnt_words = sg_mega_counter_words(g->tm_max, g->tm_max);
    SG_MEGA_TRY(cudaMalloc(&g->cnt, g->cnt_words * sizeof(unsigned)));
    SG_MEGA_TRY(cudaMemset(g->cnt, 0, g->cnt_words * sizeof(unsigned)));
    SG_MEGA_TRY(cudaFuncSetAttribute(sg_sm90_mega_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SG_MEGA_SMEM));
    int per_sm = 0;
    SG_MEGA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sg_sm90_mega_kernel, SG_MEGA_THREADS,
                                                              SG_MEGA_SMEM));
    if (per_sm < 1) {
        snprintf(err, errlen, "sm90 megakernel: cannot be resident (%d bytes of shared memory, %d threads)",
                 SG_MEGA_SMEM, SG_MEGA_THREADS);
        sg_sm90_mega_free(g);
        return nullptr;
    }
    return g;
}

int sg_sm90_mega_run(sg_sm90_mega *g, const sg_sm90_mega_buffers *b, const float *post_w, const float *post_b, float eps,
                     int n, cudaStream_t st, char *err, size_t errlen) {
    if (n < 1 || n > g->n_max) {
        snprintf(err, errlen, "%s:%d: sm90 megakernel: batch %d outside 1..%d", __FILE__, __LINE__, n, g->n_max);
        return -1;
    }
    sg_mega_params p;
    p.maps = g->maps;
    p.layers = g->layers;
    p.post_w = post_w;
    p.post_b = post_b;
    p.h = b->h;
    p.y = b->y;
    p.qkv = b->qkv;
    p.att = b->att;
    p.H = b->H;
    p.cnt = g->cnt;
    p.tm_max = g->tm_max;
    p.n = n;
    p.L = g->L;
    p.eps = eps;
    sg_sm90_mega_kernel<<<g->sms, SG_MEGA_THREADS, SG_MEGA_SMEM, st>>>(p);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: sm90 megakernel launch: %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

int sg_sm90_mega_tasks(int n, int L) { return sg_mega_total_tasks(n, L); }
