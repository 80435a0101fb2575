// kernel/mega/mega_kernel.cuh — the megakernel skeleton shared by the Hopper (kernel/sm90/sm90_mega.cu) and
// Blackwell (kernel/sm100/sm100_mega.cu) kernels: everything but the MMA / accumulator layer. It includes only
// kernel/mega headers; each architecture's file brings its MMA layer's own headers.
//
// One launch runs the whole forward: patch embedding, all encoder layers, the post-LayerNorm and the attention-
// pooling (MAP) head. Shape of one CTA (one per SM, 320 threads, ~195 KB of shared memory): two independent
// "virtual CTAs", each a producer thread (lane 0 of warp 8 or 9) feeding one consumer warpgroup (warps 0-3 or
// 4-7) through its own 3-stage mbarrier ring of 32 KB stages (A 128 x 64 + W 128 x 64 bf16, 128-byte swizzle).
// Each virtual CTA takes task numbers from one global ticket (atomicAdd) in list order (kernel/mega/mega_plan.h), so
// the lowest unfinished task never waits on anything unfinished and the launch cannot deadlock, whatever the
// residency (no cooperative launch needed, and it can be captured in a CUDA graph).
//   producer: ticket -> wait for the task's input counters (ld.acquire + fence.proxy.async, mega_sync.cuh) ->
//             hand the task number to its consumer (4-slot smem queue) -> fetch the next ticket (its atomic and
//             the table load overlap this task's loads and the consumer's work) -> for a GEMM, the tile's 128 bias
//             values into a shared-memory slot (one bulk copy) -> TMA loads into the ring (GEMM: K/64 blocks of
//             A and W; attention: Q, K, V boxes of 256 x 64, one stage each);
//   consumer: a GEMM tile 128 x 128 (Arch::gemm: the K loop, then bias, tanh GELU, and the tile written
//             (swizzled) into the K loop's last ring stage(s), which it keeps), handed to the storer thread (lane
//             1 of the producer warp): TMA store (or, for out-proj / FC2, TMA reduce-add into the fp32 residual
//             stream h), free the stages, wait for completion, signal the counter; or attention of one
//             (image, head) (Arch::attention), the head's probe attention of one (image, head) (sg_mega_pool), or
//             LayerNorm of 32 rows (mega_ln.cuh); then bar.sync of its warpgroup + one red.release.gpu on the task's counter.
// Every row is computed from that row alone (its image's rows for attention), in an order that does not depend on
// the batch, so an image's embedding is bit-identical whatever its batch size and position.
// Two virtual CTAs instead of a ping-pong pair: a consumer never waits on the other's ring, attention and
// LayerNorm tasks need no hand-off, and one's epilogue still overlaps the other's MMAs.
// Counters are zeroed by the last CTA to finish (an exit count), so the next launch starts from zero with no
// memset and no parity bank; the host zeroes them once at allocation.
//
// The architecture layer (a struct of static device functions, the template parameter Arch):
//   Arch::gemm<PROF>(p, k, bias, ax, sm, ring, sfree, sfree_parity, t_busy, held0, held1) -> the K loop's end time
//       (clock64, profile only): one GEMM tile of task k (m0 = 128 k.a, n0 = 128 k.b, K = sg_mega_gemm_k) by the
//       128 threads of a consumer warpgroup from the ring; it then waits for the store slot (sg_mbar_wait(sfree,
//       sfree_parity)) and writes the tile (+ bias[c] for tile column c, bias in shared memory or NULL for none;
//       then tanh GELU where sg_mega_gelu_tile) into held ring stages: bf16 tiles into held0 as two TMA boxes of
//       64 columns x 128 rows; fp32 tiles (sg_mega_f32_tile) rows 0-63 into held1 and 64-127 into held0, each as
//       four boxes of 32 columns x 64 rows; 128-byte swizzle (16-byte chunk c of a 128-byte row r at position
//       c ^ (r % 8)). Every other stage of the K loop goes back to the producer;
//   Arch::attention(q, k, v, img, head, att, ld, bar): one (image, head) from three ring stages (Q, K, V boxes
//       of 256 rows x 64 columns); when it returns, every thread of the warpgroup has finished reading them
//       (bar: the warpgroup's named barrier);
//   Arch::produce_gemm(p, k, map_a, map_w, m0, n0, K, sm, ring): the producer's TMA loads of a GEMM tile's K
//       blocks (sg_gemm_produce, or the MXFP8 FC1 blocks with their scale atoms);
//   Arch::ln_unroll: rows a warp's LayerNorm keeps in flight (24 registers each);
//   Arch::ln2_quant(p, gamma, beta, r0, M, warp) -> whether it did LayerNorm-2 of rows r0..r0+31 itself (the
//       MXFP8 FC1 input: E4M3 codes + scales); false: the bf16 LayerNorm below;
//   Arch::cta_begin() (every thread, before the CTA's first __syncthreads), Arch::ctx_for(v) (after it: the
//       state handed to virtual CTA v's tasks, which they may update), Arch::cta_end() (every thread, after the last consumer is done):
//       the tensor-memory allocation on SM100, nothing on SM90.
#ifndef SG_MEGA_KERNEL_CUH
#define SG_MEGA_KERNEL_CUH

#include <cuda_runtime.h>
#include "mega_ring.cuh"
#include "mega_ln.cuh"
#include "mega_sync.cuh"
#include "mega_plan.h"
#include "mega_gpu.h"

static_assert(SG_GEMM_STAGE_BYTES(SG_MEGA_BN) == SG_MEGA_STAGE_BYTES, "a ring stage holds A and W blocks of 128 x 64");

__device__ __forceinline__ uint8_t *sg_mega_align1024(uint8_t *p) {
    return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// Waits (one thread) until every input of task k is complete: the inputs of kernel/mega/mega_plan.h, the same rules the
// host's order check replays. (An attention task's 256-row boxes also read up to 60 rows of the next image; those
// only meet masked keys or unstored queries: sm90_attn.cuh.)
__device__ __forceinline__ void sg_mega_wait_inputs(const sg_mega_params &p, const sg_mega_task &k) {
    size_t c;
    unsigned t;
    for (int i = 0; sg_mega_input(k, p.n, p.tm_max, i, &c, &t); i++) sg_dep_wait(p.cnt + c, t);
}

// The next task number from the global ticket and its table entry (SG_MT_END past the end).
__device__ __forceinline__ unsigned sg_mega_ticket(const sg_mega_params &p) {
    const int t = (int)atomicAdd(p.cnt + SG_MEGA_CNT_TICKET, 1u);
    return t < p.ntasks ? __ldg(p.tasks + t) : sg_mega_encode(SG_MT_END, 0, 0, 0);
}

// A GEMM task's bias (fp32, global), or NULL for the patch embedding (its conv bias is in pos_b).
__device__ __forceinline__ const float *sg_mega_bias(const sg_mega_params &p, const sg_mega_task &k) {
    const sg_mega_layer_dev *L = p.layers + (k.layer < p.L ? k.layer : 0);
    switch (k.kind) {
    case SG_MT_QKV: return L->qkv_b;
    case SG_MT_OUT: return L->o_b;
    case SG_MT_FC1: return L->fc1_b;
    case SG_MT_FC2: return L->fc2_b;
    case SG_MT_HKV: return p.head->kv_b;
    case SG_MT_HOUT: return p.head->o_b;
    case SG_MT_HFC1: return p.head->fc1_b;
    case SG_MT_HFC2: return p.head->fc2_b;
    default: return nullptr;
    }
}

// The tensor maps of a GEMM task's A operand and weight.
__device__ __forceinline__ void sg_mega_gemm_maps(const sg_mega_task &k, int &a, int &w) {
    switch (k.kind) {
    case SG_MT_PATCH: a = SG_MAP_PATCHES, w = SG_MAP_WPATCH; break;
    case SG_MT_QKV: a = SG_MAP_Y, w = SG_MAP_W(k.layer, 0); break;
    case SG_MT_OUT: a = SG_MAP_ATT, w = SG_MAP_W(k.layer, 1); break;
    case SG_MT_FC1: a = SG_MAP_Y, w = SG_MAP_W(k.layer, 2); break;
    case SG_MT_FC2: a = SG_MAP_H, w = SG_MAP_W(k.layer, 3); break;
    case SG_MT_HKV: a = SG_MAP_Y, w = SG_MAP_HKVW; break;
    case SG_MT_HOUT: a = SG_MAP_HATT, w = SG_MAP_HOUTW; break;
    case SG_MT_HFC1: a = SG_MAP_HY, w = SG_MAP_HFC1W; break;
    default: a = SG_MAP_HMLP, w = SG_MAP_HFC2W; break;  // SG_MT_HFC2
    }
}

// Kinds that run as GEMM tiles.
__device__ __forceinline__ bool sg_mega_is_gemm(int kind) {
    return kind == SG_MT_PATCH || kind == SG_MT_QKV || kind == SG_MT_OUT || kind == SG_MT_FC1 || kind == SG_MT_FC2 ||
           kind == SG_MT_HKV || kind == SG_MT_HOUT || kind == SG_MT_HFC1 || kind == SG_MT_HFC2;
}

template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_produce(const sg_mega_params &p, const sg_ring_smem &sm, uint64_t *tfull,
                                                uint64_t *tempty, int *tslot, float *bias_s, uint64_t *bfull,
                                                uint64_t *bempty) {
    sg_ring ring = {0, 0}, tq = {0, 0}, bq = {0, 0};
    unsigned next = sg_mega_ticket(p);
    for (;;) {
        const unsigned code = next;
        const sg_mega_task k = sg_mega_decode(code);
        const long long w0 = PROF ? clock64() : 0;
        sg_mega_wait_inputs(p, k);
        if (PROF) atomicAdd(p.prof + SG_MT_END + 1, (unsigned long long)(clock64() - w0));
        sg_mbar_wait(&tempty[tq.stage], tq.phase ^ 1u);
        tslot[tq.stage] = (int)code;  // SG_MT_END is the stop
        sg_mbar_arrive(&tfull[tq.stage]);  // release: the slot write is visible to the consumer's wait
        sg_ring_next(tq, SG_MEGA_TASKQ);
        if (k.kind == SG_MT_END) return;
        // The next ticket now, before this task's loads (which wait for ring stages): the atomic's and the table
        // load's round trips to L2 then overlap the consumer's work instead of following it. Holding it is safe:
        // this task's loads depend only on this virtual CTA's own consumer, which is running tasks before it.
        next = sg_mega_ticket(p);
        const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
        if (k.kind == SG_MT_ATT || k.kind == SG_MT_POOL) {
            for (int j = 0; j < 3; j++) {  // Q, K, V of head b: columns 768 j + 64 b (POOL: no Q, a scratch stage)
                sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
                const bool load = k.kind == SG_MT_ATT || j > 0;
                sg_mbar_arrive_expect_tx(&sm.full[ring.stage], load ? SG_MEGA_STAGE_BYTES : 0u);
                if (load)
                    sg_tma_load_2d(sm.stages + ring.stage * SG_MEGA_STAGE_BYTES, p.maps + SG_MAP_QKV,
                                   &sm.full[ring.stage], SG_MEGA_D * j + SG_MEGA_DH * k.b, k.a * SG_MEGA_T);
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
        } else if (sg_mega_is_gemm(k.kind)) {
            // This tile's 128 bias values into the next bias slot (freed by the consumer's epilogue); a tile
            // without bias (the patch embedding) still takes its slot, with an arrival and no bytes, so the
            // consumer walks the slots in step with its store queue.
            const float *bias = sg_mega_bias(p, k);
            sg_mbar_wait(&bempty[bq.stage], bq.phase ^ 1u);
            sg_mbar_arrive_expect_tx(&bfull[bq.stage], bias ? SG_MEGA_BN * sizeof(float) : 0u);
            if (bias)
                sg_bulk_load(bias_s + SG_MEGA_BN * bq.stage, bias + n0, SG_MEGA_BN * sizeof(float), &bfull[bq.stage]);
            sg_ring_next(bq, SG_MEGA_BIAS_SLOTS);
            int a, w;
            sg_mega_gemm_maps(k, a, w);
            Arch::produce_gemm(p, k, p.maps + a, p.maps + w, m0, n0, sg_mega_gemm_k(k.kind), sm, ring);
        }  // PREP and LayerNorm tasks read with ordinary loads
    }
}

// The MAP head's attention for one (image, head) (a POOL task, one consumer warpgroup of 128 threads): the
// probe's fixed fp32 query q (64 values of head hh) against the image's 196 keys, from the K and V boxes the
// producer brought into two ring stages (256 rows x 64 bf16, 128-byte swizzle: 16-byte chunk c of row r at
// position c ^ (r % 8)); the third stage is scratch for the scores and the reductions. Thread i scores keys i and
// i + 128; the softmax's max and sum by warp shuffles and the 4 warps' partials; output channel c = i % 64 is
// mixed by two threads over keys [98 h, 98 h + 98) (h = i / 64), added in a fixed order. fp32 throughout, as the
// portable head (kernel/cuda/cuda_pool_attention.cu); the row depends on its image alone.
__device__ __forceinline__ float sg_bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float sg_bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
__device__ __forceinline__ void sg_mega_pool(const sg_mega_params &p, int img, int hh, uint8_t *scratch,
                                             const uint8_t *kbox, const uint8_t *vbox, int bar) {
    const int tid = threadIdx.x % 128, lane = tid % 32, warp = tid / 32;
    float *sc = reinterpret_cast<float *>(scratch);  // [0, 256) scores, then weights; [256, 264) the warps' max
                                                     // and sum; [272, 336) the second half's partial outputs
    const float4 *q4 = reinterpret_cast<const float4 *>(p.head->q + SG_MEGA_DH * hh);
    float sv[2], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const int t = tid + 128 * u;
        sv[u] = -INFINITY;
        if (t < SG_MEGA_T) {
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < SG_MEGA_DH / 8; c++) {  // 8 bf16 per 16-byte chunk
                const uint4 kk = *reinterpret_cast<const uint4 *>(kbox + t * 128 + ((c ^ (t & 7)) << 4));
                const float4 a = __ldg(q4 + 2 * c), b = __ldg(q4 + 2 * c + 1);
                acc = fmaf(a.x, sg_bf16_lo(kk.x), acc);
                acc = fmaf(a.y, sg_bf16_hi(kk.x), acc);
                acc = fmaf(a.z, sg_bf16_lo(kk.y), acc);
                acc = fmaf(a.w, sg_bf16_hi(kk.y), acc);
                acc = fmaf(b.x, sg_bf16_lo(kk.z), acc);
                acc = fmaf(b.y, sg_bf16_hi(kk.z), acc);
                acc = fmaf(b.z, sg_bf16_lo(kk.w), acc);
                acc = fmaf(b.w, sg_bf16_hi(kk.w), acc);
            }
            sv[u] = acc * 0.125f;  // Dh^-1/2, Dh = 64 (nn.MultiheadAttention's scaling)
            mx = fmaxf(mx, sv[u]);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (lane == 0) sc[256 + warp] = mx;
    sg_named_bar(bar, 128);
    mx = fmaxf(fmaxf(sc[256], sc[257]), fmaxf(sc[258], sc[259]));
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const float w = tid + 128 * u < SG_MEGA_T ? expf(sv[u] - mx) : 0.0f;
        sc[tid + 128 * u] = w;
        sum += w;
    }
    sum = sg_warp_sum(sum);
    if (lane == 0) sc[260 + warp] = sum;
    sg_named_bar(bar, 128);  // also publishes the weights
    sum = (sc[260] + sc[261]) + (sc[262] + sc[263]);
    const int c = tid % SG_MEGA_DH, h = tid / SG_MEGA_DH, t0 = 98 * h;
    const uint32_t chunk = (uint32_t)c / 8, within = 2u * ((uint32_t)c % 8);
    float o = 0.0f;
#pragma unroll 7
    for (int t = t0; t < t0 + 98; t++) {
        const uint16_t v = *reinterpret_cast<const uint16_t *>(vbox + t * 128 + ((chunk ^ (t & 7)) << 4) + within);
        o = fmaf(sc[t], __uint_as_float((uint32_t)v << 16), o);
    }
    if (h == 1) sc[272 + c] = o;
    sg_named_bar(bar, 128);
    if (h == 0) p.hatt[(size_t)img * SG_MEGA_D + SG_MEGA_DH * hh + c] = __float2bfloat16((o + sc[272 + c]) / sum);
    sg_named_bar(bar, 128);  // every thread is done with the three stages before they are freed
}

// gelu_pytorch_tanh with the hardware tanh (tanh.approx.f32, max relative error ~2^-11): the result is rounded
// to bf16 (2^-9) right after, so the approximation is below the output's own rounding; tanhf cost ~20
// instructions per element, 128 per thread per FC1 tile.
__device__ __forceinline__ float sg_mega_gelu(float x) {
    const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(k0 * (x + 0.044715f * x * x * x)));
    return 0.5f * x * (1.0f + t);
}

// The storer thread of a virtual CTA (see sg_mega_store_desc). Tile i's completion is awaited only after tile
// i + 1's stores are issued (wait_group 1), so stores overlap; before blocking for a new tile the pending signal
// is flushed, so a counter is never held back while the consumer waits for work that depends on it.
__device__ __forceinline__ void sg_mega_storer(const sg_mega_params &p, const sg_ring_smem &sm,
                                               uint64_t *sready, uint64_t *sfree, const sg_mega_store_desc *sdesc) {
    sg_ring q = {0, 0};
    int pending = -1;  // counter word of the tile whose stores are issued but not yet known complete
    for (;;) {
        if (pending >= 0 && !sg_mbar_try_wait(&sready[q.stage], q.phase)) {
            sg_bulk_wait0();
            sg_fence_proxy_async_global();
            sg_red_release_add(p.cnt + pending, 1);
            pending = -1;
        }
        sg_mbar_wait(&sready[q.stage], q.phase);
        const sg_mega_store_desc d = sdesc[q.stage];
        sg_mbar_arrive(&sfree[q.stage]);
        sg_ring_next(q, SG_MEGA_STOREQ);
        if (d.mode == 0) break;
        const CUtensorMap *map = p.smaps + d.map;
        if (d.mode == 1) {
            const uint8_t *b = sm.stages + d.s0 * SG_GEMM_STAGE_BYTES(SG_MEGA_BN);
            sg_tma_store_2d(map, b, d.x, d.y);
            sg_tma_store_2d(map, b + 16384, d.x + 64, d.y);
        } else {  // fp32: reduce-add (2) or store (3)
            for (int h = 0; h < 2; h++) {
                const uint8_t *b = sm.stages + (h ? d.s0 : d.s1) * SG_GEMM_STAGE_BYTES(SG_MEGA_BN);
                for (int j = 0; j < 4; j++) {
                    if (d.mode == 2) sg_tma_reduce_add_2d(map, b + j * 8192, d.x + 32 * j, d.y + 64 * h);
                    else sg_tma_store_2d(map, b + j * 8192, d.x + 32 * j, d.y + 64 * h);
                }
            }
        }
        sg_bulk_commit();
        sg_bulk_wait_read0();  // the stages may be refilled
        sg_mbar_arrive(&sm.empty[d.s0]);
        if (d.mode != 1) sg_mbar_arrive(&sm.empty[d.s1]);
        if (pending >= 0) {  // the previous tile is complete once at most this one is in flight
            sg_bulk_wait1();
            sg_fence_proxy_async_global();  // async-proxy writes, then the generic release
            sg_red_release_add(p.cnt + pending, 1);
        }
        pending = (int)d.cnt;
    }
    if (pending >= 0) {
        sg_bulk_wait0();
        sg_fence_proxy_async_global();
        sg_red_release_add(p.cnt + pending, 1);
    }
}

template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_consume(const sg_mega_params &p, int v, typename Arch::ctx &ax,
                                                const sg_ring_smem &sm,
                                                uint64_t *tfull, uint64_t *tempty, const int *tslot, uint64_t *sready,
                                                uint64_t *sfree, sg_mega_store_desc *sdesc, const float *bias_s,
                                                uint64_t *bfull, uint64_t *bempty) {
    // The bias slots are taken one per GEMM task, as the store queue's slots are: sq indexes both.
    static_assert(SG_MEGA_BIAS_SLOTS == SG_MEGA_STOREQ, "a GEMM task takes one bias slot and one store slot");
    sg_ring ring = {0, 0}, tq = {0, 0}, sq = {0, 0};
    const int tid = threadIdx.x % 128, warp = tid / 32, M = p.n * SG_MEGA_T;
    const int bar = 1 + v;  // named barrier of this warpgroup (counter signals)
    long long t_idle = 0;
    for (;;) {
        if (PROF) t_idle = clock64();
        sg_mbar_wait(&tfull[tq.stage], tq.phase);
        const sg_mega_task k = sg_mega_decode((unsigned)tslot[tq.stage]);
        sg_mbar_arrive(&tempty[tq.stage]);
        sg_ring_next(tq, SG_MEGA_TASKQ);
        if (k.kind == SG_MT_END) {  // stop the storer
            sg_mbar_wait(&sfree[sq.stage], sq.phase ^ 1u);
            if (tid == 0) sdesc[sq.stage].mode = 0;
            sg_mbar_arrive(&sready[sq.stage]);
            return;
        }
        long long t_busy = 0;
        if (PROF) {
            t_busy = clock64();
            if (tid == 0) atomicAdd(p.prof + SG_MT_END, (unsigned long long)(t_busy - t_idle));
        }
        const sg_mega_layer_dev *L = p.layers + (k.layer < p.L ? k.layer : 0);
        switch (k.kind) {
        case SG_MT_LN1:
        case SG_MT_LN2:
        case SG_MT_POSTLN:
        case SG_MT_HLN: {  // the head's LayerNorm: rows of images, pooled -> hy
            const bool head = k.kind == SG_MT_HLN;
            const float *g = k.kind == SG_MT_LN1 ? L->ln1_w : k.kind == SG_MT_LN2 ? L->ln2_w
                           : head ? p.head->ln_w : p.post_w;
            const float *b = k.kind == SG_MT_LN1 ? L->ln1_b : k.kind == SG_MT_LN2 ? L->ln2_b
                           : head ? p.head->ln_b : p.post_b;
            const int r0 = k.a * SG_MEGA_BM + k.b * SG_MEGA_LN_ROWS;
            if (k.kind != SG_MT_LN2 || !Arch::ln2_quant(p, g, b, r0, M, warp))
                sg_ln_rows<Arch::ln_unroll>(head ? p.pooled : p.h, SG_MEGA_D, g, b, p.eps, head ? p.hy : p.y,
                                            SG_MEGA_D, r0, SG_MEGA_LN_ROWS, head ? p.n : M, warp, 4);
            sg_dep_signal_wg(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), bar);
            break;
        }
        case SG_MT_POOL: {  // the head's attention: scratch, K and V stages
            uint8_t *st[3];
            for (int j = 0; j < 3; j++) {
                sg_mbar_wait(&sm.full[ring.stage], ring.phase);
                st[j] = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
            sg_mega_pool(p, k.a, k.b, st[0], st[1], st[2], bar);
            if (tid == 0)
                for (int j = 0; j < 3; j++) sg_mbar_arrive(&sm.empty[(ring.stage + j) % SG_MEGA_STAGES]);
            sg_dep_signal_wg(p.cnt + sg_mega_counter(SG_MT_POOL, k.a, p.tm_max), bar);
            break;
        }
        case SG_MT_PREP: {  // a warp per token row: 768 patch values (lane + 32 q: coalesced stores), then h = pos
            const int r0 = k.a * SG_MEGA_BM + k.b * SG_MEGA_LN_ROWS, lane = tid % 32;
            const int r_end = min(r0 + SG_MEGA_LN_ROWS, M);
            for (int row = r0 + warp; row < r_end; row += 4) {
                const int img = row / SG_MEGA_T, t = row % SG_MEGA_T, gy = t / 14, gx = t % 14;
                const uint8_t *src = p.pix + (size_t)img * (224 * 224 * 3) + ((gy * 16) * 224 + gx * 16) * 3;
                uint8_t px[24];  // all 24 byte loads in flight at once: a row is then one memory latency, not 24
#pragma unroll
                for (int q = 0; q < 24; q++) {  // e = c 256 + ky 16 + kx: the Conv2d weight's (c, ky, kx) order
                    const int e = lane + 32 * q, c = e >> 8, ky = (e >> 4) & 15, kx = e & 15;
                    px[q] = __ldg(src + (ky * 224 + kx) * 3 + c);
                }
#pragma unroll
                for (int q = 0; q < 24; q++)
                    p.patches[(size_t)row * SG_MEGA_D + lane + 32 * q] = __float2bfloat16(__ldg(p.lut + px[q]));
#pragma unroll
                for (int q = 0; q < 6; q++) {
                    const int d = 4 * lane + 128 * q;
                    *reinterpret_cast<float4 *>(p.h + (size_t)row * SG_MEGA_D + d) =
                        __ldg(reinterpret_cast<const float4 *>(p.pos_b + (size_t)t * SG_MEGA_D + d));
                }
            }
            sg_dep_signal_wg(p.cnt + sg_mega_counter(SG_MT_PREP, k.a, p.tm_max), bar);
            break;
        }
        case SG_MT_ATT: {
            const uint8_t *qkv[3];
            for (int j = 0; j < 3; j++) {
                sg_mbar_wait(&sm.full[ring.stage], ring.phase);
                qkv[j] = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
            Arch::attention(qkv[0], qkv[1], qkv[2], k.a, k.b, p.att, SG_MEGA_D, bar);
            if (tid == 0)  // the three stages come back in ring order
                for (int j = 0; j < 3; j++)
                    sg_mbar_arrive(&sm.empty[(ring.stage + j) % SG_MEGA_STAGES]);
            sg_dep_signal_wg(p.cnt + sg_mega_counter(SG_MT_ATT, k.a, p.tm_max), bar);
            break;
        }
        default: {  // the GEMMs: QKV / FC1 / HKV / HFC1 tiles are stored as bf16 (FC1 and HFC1 after GELU);
                    // out-proj / FC2 / patch tiles are added to the fp32 residual stream h by a TMA reduce-add in L2
                    // (h += tile: one adder per element per stage, so deterministic), which spares loading the
                    // residual; the head's out-projection is stored into pooled (fp32), its FC2 added to it
            const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
            sg_mbar_wait(&bfull[sq.stage], sq.phase);  // the bias slot (PATCH's carries no bias)
            const float *bias = k.kind != SG_MT_PATCH ? bias_s + SG_MEGA_BN * sq.stage : nullptr;
            uint32_t held0 = 0, held1 = 0;  // t_e: the K loop's end (profile)
            const long long t_e = Arch::template gemm<PROF>(p, k, bias, ax, sm, ring, &sfree[sq.stage], sq.phase ^ 1u,
                                                            t_busy, held0, held1);
            sg_mbar_arrive(&bempty[sq.stage]);  // every thread has read its bias values (count 128)
            sg_fence_proxy_async_smem();  // this thread's smem writes, before the TMA store reads them
            if (tid == 0) {
                sg_mega_store_desc &d = sdesc[sq.stage];
                const bool head = k.kind >= SG_MT_HKV;
                d.mode = !sg_mega_f32_tile(k.kind) ? 1 : k.kind == SG_MT_HOUT ? 3 : 2;
                d.map = k.kind == SG_MT_QKV || k.kind == SG_MT_HKV ? SG_SMAP_QKV
                      : k.kind == SG_MT_FC1                        ? SG_SMAP_H
                      : k.kind == SG_MT_HFC1                       ? SG_SMAP_HMLP
                      : head                                       ? SG_SMAP_POOLED
                                                                   : SG_SMAP_RES;
                d.x = k.kind == SG_MT_HKV ? SG_MEGA_D + n0 : n0;  // the head's K and V go to qkv's K and V columns
                d.y = m0;
                d.s0 = (int)held0;
                d.s1 = (int)held1;
                d.cnt = (unsigned)sg_mega_counter(k.kind, k.a, p.tm_max);
            }
            sg_mbar_arrive(&sready[sq.stage]);  // count 128: every thread's writes and fence are done
            sg_ring_next(sq, SG_MEGA_STOREQ);
            if (PROF && tid == 0) atomicAdd(p.prof + SG_MT_END + 4, (unsigned long long)(clock64() - t_e));  // stores
            break;
        }
        }
        if (PROF && tid == 0) {
            atomicAdd(p.prof + k.kind, (unsigned long long)(clock64() - t_busy));
            atomicAdd(p.prof + SG_MEGA_PROF_COUNTS + k.kind, 1ull);
        }
    }
}

// The whole kernel, for the architecture's __global__ wrapper (launched with SG_MEGA_THREADS threads and
// SG_MEGA_SMEM bytes of dynamic shared memory, grid = SM count). PROF = 1 (SG_SM90_PROFILE=1) adds the cycle
// counters; it is a separate instantiation because the counters' registers made the Hopper GEMM path spill 8 bytes.
template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_kernel_body(const sg_mega_params &p) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ long long t_start;  // the profile's CTA start, kept in shared memory rather than a register
    __shared__ uint64_t full[2][SG_MEGA_STAGES], empty[2][SG_MEGA_STAGES];
    __shared__ uint64_t tfull[2][SG_MEGA_TASKQ], tempty[2][SG_MEGA_TASKQ];
    __shared__ int tslot[2][SG_MEGA_TASKQ];
    __shared__ uint64_t sready[2][SG_MEGA_STOREQ], sfree[2][SG_MEGA_STOREQ];
    __shared__ sg_mega_store_desc sdesc[2][SG_MEGA_STOREQ];
    __shared__ __align__(16) float bias_s[2][SG_MEGA_BIAS_SLOTS * SG_MEGA_BN];
    __shared__ uint64_t bfull[2][SG_MEGA_BIAS_SLOTS], bempty[2][SG_MEGA_BIAS_SLOTS];
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
            for (int q = 0; q < SG_MEGA_STOREQ; q++) {
                sg_mbar_init(&sready[v][q], 128);  // every consumer thread, after staging its part of the tile
                sg_mbar_init(&sfree[v][q], 1);     // the storer, after reading the descriptor
            }
            for (int q = 0; q < SG_MEGA_BIAS_SLOTS; q++) {
                sg_mbar_init(&bfull[v][q], 1);     // the producer's expect_tx (+ the copy's bytes)
                sg_mbar_init(&bempty[v][q], 128);  // every consumer thread, after its epilogue
            }
        }
        sg_fence_mbar_init();
        if (PROF) t_start = clock64();
    }
    Arch::cta_begin();
    __syncthreads();
    const int wg = threadIdx.x / 128;
    if (wg < 2) {
        const sg_ring_smem sm = {rings + wg * SG_MEGA_RING_BYTES, full[wg], empty[wg]};
        typename Arch::ctx ax = Arch::ctx_for(wg);
        sg_mega_consume<Arch, PROF>(p, wg, ax, sm, tfull[wg], tempty[wg], tslot[wg], sready[wg], sfree[wg], sdesc[wg],
                                    bias_s[wg], bfull[wg], bempty[wg]);
    } else {
        const int v = threadIdx.x / 32 - 8;  // producer warps 8 and 9
        const sg_ring_smem sm = {rings + v * SG_MEGA_RING_BYTES, full[v], empty[v]};
        if (threadIdx.x % 32 == 0)
            sg_mega_produce<Arch, PROF>(p, sm, tfull[v], tempty[v], tslot[v], bias_s[v], bfull[v], bempty[v]);
        else if (threadIdx.x % 32 == 1)
            sg_mega_storer(p, sm, sready[v], sfree[v], sdesc[v]);
        __syncwarp();
    }
    // The last CTA out zeroes the counters for the next launch: every other CTA's counter traffic is ordered
    // before its exit increment (bar.sync + the cumulative fence below).
    // (__syncthreads_or, not a shared variable: compute-sanitizer racecheck paired a shared-memory flag written
    // here with the next kernel's shared-memory reads, cuBLAS starting early on the freed SMs.)
    __syncthreads();
    if (PROF && threadIdx.x == 0) atomicAdd(p.prof + SG_MT_END + 5, (unsigned long long)(clock64() - t_start));
    Arch::cta_end();
    int is_last = 0;
    if (threadIdx.x == 0) {
        __threadfence();
        is_last = atomicAdd(p.cnt + SG_MEGA_CNT_EXIT, 1u) == gridDim.x - 1;
        __threadfence();
    }
    if (__syncthreads_or(is_last)) {
        const size_t words = sg_mega_counter_words(p.tm_max);
        for (size_t i = threadIdx.x; i < words; i += blockDim.x) p.cnt[i] = 0;
    }
}

// The host side of an architecture's launcher (sg_mega_launcher): its two kernel instantiations (K0 plain, K1 with
// the profile counters), launched with SMEM bytes of dynamic shared memory.
template <void (*K0)(const sg_mega_params), void (*K1)(const sg_mega_params), int SMEM>
struct sg_mega_launch_fns {
    static cudaError_t prepare(int *per_sm) {
        cudaError_t e = cudaFuncSetAttribute(K0, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
        if (e == cudaSuccess) e = cudaFuncSetAttribute(K1, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, K0, SG_MEGA_THREADS, SMEM);
        return e;
    }
    static cudaError_t launch(int prof, int grid, cudaStream_t st, const sg_mega_params *p) {
        if (prof)
            K1<<<grid, SG_MEGA_THREADS, SMEM, st>>>(*p);
        else
            K0<<<grid, SG_MEGA_THREADS, SMEM, st>>>(*p);
        return cudaGetLastError();
    }
};

#endif
