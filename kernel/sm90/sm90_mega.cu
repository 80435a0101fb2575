// kernel/sm90/sm90_mega.cu — the Hopper megakernel: all encoder layers and the post-LayerNorm in one launch.
//
// Shape of one CTA (one per SM, 320 threads, ~193 KB of shared memory): two independent "virtual CTAs", each a
// producer thread (lane 0 of warp 8 or 9) feeding one consumer warpgroup (warps 0-3 or 4-7)
// through its own 3-stage mbarrier ring of 32 KB stages (A 128 x 64 + W 128 x 64 bf16, 128-byte swizzle).
// Each virtual CTA takes task numbers from one global ticket (atomicAdd) in list order (kernel/mega_plan.h), so the
// lowest unfinished task never waits on anything unfinished and the launch cannot deadlock, whatever the
// residency (no cooperative launch needed, and it can be captured in a CUDA graph).
//   producer: ticket -> wait for the task's input counters (ld.acquire + fence.proxy.async, sm90_sync.cuh) ->
//             hand the task number to its consumer (4-slot smem queue) -> TMA loads into the ring
//             (GEMM: K/64 blocks of A and W; attention: Q, K, V boxes of 256 x 64, one stage each);
//   consumer: GEMM tile 128 x 128 (2 x wgmma m64n128k16 per k16 step, 128 fp32 registers started at bias +
//             fp32 residual), then tanh GELU and the tile written (swizzled) into the K loop's last ring stage(s),
//             which it keeps, and handed to the storer thread (lane 1 of the producer warp): TMA store (or, for
//             out-proj / FC2, TMA reduce-add into the fp32 residual stream h), free the stages, wait for
//             completion, signal the counter; or attention of one (image, head)
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
#include "../mega_plan.h"
#include "sm90_mega.h"
#include "sm90_tmap.cuh"

// 2 consumer warpgroups (warps 0-7: wgmma needs warpgroup-aligned warps) + 2 producer warps (8, 9). 320 threads
// give every thread 200 registers at compile time; with a producer warpgroup (384 threads) ptxas allocates 168
// and setmaxnreg only moves registers at run time, which left the consumers' GEMM path (128 accumulators)
// spilling.
#define SG_MEGA_THREADS 320
#define SG_MEGA_STAGES 3  // per virtual CTA: 3 x 32 KB; attention needs exactly 3 (Q, K, V)
#define SG_MEGA_TASKQ 4
#define SG_MEGA_RING_BYTES (SG_MEGA_STAGES * SG_GEMM_STAGE_BYTES(SG_MEGA_BN))
#define SG_MEGA_SMEM (2 * SG_MEGA_RING_BYTES + 1024)  // + alignment slack for the 1024-byte swizzle atoms

static_assert(SG_GEMM_STAGE_BYTES(SG_MEGA_BN) == SG_ATTN_TILE_BYTES, "an attention box fills one ring stage");

// Tensor maps (device memory, 64-byte aligned): activations, then 4 weights per layer.
enum { SG_MAP_Y = 0, SG_MAP_ATT, SG_MAP_H, SG_MAP_QKV, SG_MAP_PATCHES, SG_MAP_WPATCH, SG_MAP_W0 };
#define SG_MAP_W(l, j) (SG_MAP_W0 + 4 * (l) + (j))  // j: 0 Wqkv, 1 Wo, 2 W1, 3 W2
// Store maps, made per batch size with exactly M rows so TMA drops the padding rows of the last row tile
// (SG_SMAP_RES takes the reduce-adds into the residual stream).
enum { SG_SMAP_QKV = 0, SG_SMAP_H, SG_SMAP_RES, SG_SMAPS };

// A GEMM tile handed from the consumer warpgroup to its storer thread (lane 1 of the producer warp): the tile
// sits in held ring stages in the TMA box layout; the storer writes it out with TMA, frees the stages, waits for
// completion and signals the tile's counter.
struct sg_mega_store_desc {
    int mode;    // 0: stop; 1: bf16 128 x 128 in stage s0, stored (2 boxes of 64 columns); 2: fp32, rows 0-63 in
                 // s1 and 64-127 in s0 (4 boxes of 32 columns x 64 rows each), added to the tensor (reduce-add)
    int map, x, y, s0, s1;
    unsigned cnt;  // counter word to signal
};
#define SG_MEGA_STOREQ 2

struct sg_mega_layer_dev {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *qkv_b, *o_b, *fc1_b, *fc2_b;  // fp32 (the portable path's qkv / fc1 biases are bf16)
};

struct sg_mega_params {
    const CUtensorMap *maps;
    const CUtensorMap *smaps;       // this batch size's store maps: SG_SMAP_QKV, SG_SMAP_H (bf16), SG_SMAP_RES (fp32)
    const sg_mega_layer_dev *layers;
    const float *post_w, *post_b;
    float *h;                       // [M, 768] fp32 residual stream (written by PREP/PATCH; out: encoder output)
    __nv_bfloat16 *y, *qkv, *att, *H, *patches;
    const uint8_t *pix;             // [n, 224, 224, 3] uint8 pixels of this launch
    const float *lut;               // [256] sg_pixel_to_float of each byte value
    const float *pos_b;             // [196, 768] positions + conv bias
    unsigned *cnt;
    const unsigned *tasks;          // the launch's task table (sg_mega_encode), ntasks entries
    int ntasks;
    unsigned long long *prof;       // NULL, or SG_MEGA_PROF_WORDS clock counters (SG_SM90_PROFILE=1)
    int tm_max, n, L;
    float eps;
};

// Profile counters (cycles summed over virtual CTAs): [kind] consumer busy per task kind, [SG_MT_END] consumer
// waiting for its next task, [SG_MT_END + 1] producer waiting on counters, [SG_MT_END + 2..4] GEMM tasks'
// accumulator start (bias + residual loads), K loop and stores; [16 + kind] task counts.
#define SG_MEGA_PROF_WORDS 32

__device__ __forceinline__ uint8_t *sg_mega_align1024(uint8_t *p) {
    return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// Waits (one thread) until every input of task k is complete: the inputs of kernel/mega_plan.h, the same rules the
// host's order check replays. (An attention task's 256-row boxes also read up to 60 rows of the next image; those
// only meet masked keys or unstored queries: sm90_attn.cuh.)
__device__ __forceinline__ void sg_mega_wait_inputs(const sg_mega_params &p, const sg_mega_task &k) {
    size_t c;
    unsigned t;
    for (int i = 0; sg_mega_input(k, p.n, p.tm_max, i, &c, &t); i++) sg_dep_wait(p.cnt + c, t);
}

template <bool PROF>
__device__ __forceinline__ void sg_mega_produce(const sg_mega_params &p, const sg_sm90_gemm_smem &sm, uint64_t *tfull,
                                                uint64_t *tempty, int *tslot) {
    sg_sm90_ring ring = {0, 0}, tq = {0, 0};
    for (;;) {
        const int t = (int)atomicAdd(p.cnt + SG_MEGA_CNT_TICKET, 1u);
        const unsigned code = t < p.ntasks ? __ldg(p.tasks + t) : sg_mega_encode(SG_MT_END, 0, 0, 0);
        const sg_mega_task k = sg_mega_decode(code);
        const long long w0 = PROF ? clock64() : 0;
        sg_mega_wait_inputs(p, k);
        if (PROF) atomicAdd(p.prof + SG_MT_END + 1, (unsigned long long)(clock64() - w0));
        sg_mbar_wait(&tempty[tq.stage], tq.phase ^ 1u);
        tslot[tq.stage] = (int)code;  // SG_MT_END (kind 8) is the stop
        sg_mbar_arrive(&tfull[tq.stage]);  // release: the slot write is visible to the consumer's wait
        sg_ring_next(tq, SG_MEGA_TASKQ);
        const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
        switch (k.kind) {
        case SG_MT_END: return;
        case SG_MT_ATT:
            for (int j = 0; j < 3; j++) {  // Q, K, V of head b: columns 768 j + 64 b
                sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
                sg_mbar_arrive_expect_tx(&sm.full[ring.stage], SG_ATTN_TILE_BYTES);
                sg_tma_load_2d(sm.stages + ring.stage * SG_ATTN_TILE_BYTES, p.maps + SG_MAP_QKV, &sm.full[ring.stage],
                               SG_MEGA_D * j + SG_ATTN_DH * k.b, k.a * SG_MEGA_T);
                sg_ring_next(ring, SG_MEGA_STAGES);
            }
            break;
        case SG_MT_PATCH:
        case SG_MT_QKV:
        case SG_MT_OUT:
        case SG_MT_FC1:
        case SG_MT_FC2: {  // A operand and weight of the GEMM stage
            const int a = k.kind == SG_MT_PATCH ? SG_MAP_PATCHES : k.kind == SG_MT_OUT ? SG_MAP_ATT
                        : k.kind == SG_MT_FC2   ? SG_MAP_H       : SG_MAP_Y;
            const int w = k.kind == SG_MT_PATCH ? SG_MAP_WPATCH
                        : SG_MAP_W(k.layer, k.kind == SG_MT_QKV ? 0 : k.kind == SG_MT_OUT ? 1 : k.kind == SG_MT_FC1 ? 2 : 3);
            sg_sm90_gemm_produce<SG_MEGA_BN, SG_MEGA_STAGES>(p.maps + a, p.maps + w, m0, n0,
                                                            k.kind == SG_MT_FC2 ? SG_MEGA_F : SG_MEGA_D, sm, ring);
            break;
        }
        default: break;  // PREP and LayerNorm tasks read with ordinary loads
        }
    }
}

// Writes half of a tile (acc: 64 rows, 128 columns; rows 64 half .. of the tile) as bf16 into `buf`, a ring
// stage, in the layout of two TMA boxes of 64 columns x 128 rows with 128-byte swizzle (16-byte chunk c of row r
// at position c ^ (r % 8)): the 8 rows a warp writes at once land in 8 different chunks, so no bank conflicts.
// GELU = 1 applies tanh GELU first.
// gelu_pytorch_tanh with the hardware tanh (tanh.approx.f32, max relative error ~2^-11): the result is rounded
// to bf16 (2^-9) right after, so the approximation is below the output's own rounding; tanhf cost ~20
// instructions per element, 128 per thread per FC1 tile.
__device__ __forceinline__ float sg_mega_gelu(float x) {
    const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(k0 * (x + 0.044715f * x * x * x)));
    return 0.5f * x * (1.0f + t);
}

template <int GELU>
__device__ __forceinline__ void sg_mega_stage_bf16(const float (&acc)[64], uint8_t *buf, int half) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // Row r = 64 half + 16 warp + lane/4 + 8 ((k/2)%2), so r % 8 = lane/4 for every register: the swizzle is a
    // per-thread constant, and the addresses are 32-bit shared-window offsets (64-bit generic pointers for 32
    // stores cost enough registers to spill).
    const uint32_t base = sg_smem_u32(buf) + (64 * half + 16 * warp + (lane >> 2)) * 128 + 4 * (lane & 3);
    const uint32_t r8 = (uint32_t)lane >> 2;
#pragma unroll
    for (int k = 0; k < 64; k += 2) {
        const float a = GELU ? sg_mega_gelu(acc[k]) : acc[k], b = GELU ? sg_mega_gelu(acc[k + 1]) : acc[k + 1];
        const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
        const uint32_t off = (k / 32) * 16384 + 8 * ((k / 2) % 2) * 128 + ((((uint32_t)(k / 4) % 8) ^ r8) << 4);
        asm volatile("st.shared.b32 [%0], %1;" ::"r"(base + off), "r"(*reinterpret_cast<const uint32_t *>(&v))
                     : "memory");
    }
}

// Writes 64 rows x 128 fp32 columns into `buf` as four TMA boxes of 32 columns x 64 rows, 128-byte swizzle.
__device__ __forceinline__ void sg_mega_stage_f32(const float (&acc)[64], uint8_t *buf) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    // 16-byte chunk of register pair k: 2 ((k/4) % 4) + (lane % 4)/2 (even + bit), so chunk ^ (row % 8) =
    // 2 ((k/4) % 4) ^ x with the per-thread x = ((lane % 4)/2) ^ (lane/4).
    const uint32_t base = sg_smem_u32(buf) + (16 * warp + (lane >> 2)) * 128 + 8 * (lane & 1);
    const uint32_t x = (((uint32_t)lane & 3) >> 1) ^ ((uint32_t)lane >> 2);
#pragma unroll
    for (int k = 0; k < 64; k += 2) {
        const uint32_t off = (k / 16) * 8192 + 8 * ((k / 2) % 2) * 128 + (((2 * ((uint32_t)(k / 4) % 4)) ^ x) << 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(base + off), "f"(acc[k]), "f"(acc[k + 1]) : "memory");
    }
}

// The storer thread of a virtual CTA (see sg_mega_store_desc). Tile i's completion is awaited only after tile
// i + 1's stores are issued (wait_group 1), so stores overlap; before blocking for a new tile the pending signal
// is flushed, so a counter is never held back while the consumer waits for work that depends on it.
__device__ __forceinline__ void sg_mega_storer(const sg_mega_params &p, const sg_sm90_gemm_smem &sm,
                                               uint64_t *sready, uint64_t *sfree, const sg_mega_store_desc *sdesc) {
    sg_sm90_ring q = {0, 0};
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
        } else {
            for (int h = 0; h < 2; h++) {
                const uint8_t *b = sm.stages + (h ? d.s0 : d.s1) * SG_GEMM_STAGE_BYTES(SG_MEGA_BN);
                for (int j = 0; j < 4; j++) sg_tma_reduce_add_2d(map, b + j * 8192, d.x + 32 * j, d.y + 64 * h);
            }
        }
        sg_bulk_commit();
        sg_bulk_wait_read0();  // the stages may be refilled
        sg_mbar_arrive(&sm.empty[d.s0]);
        if (d.mode == 2) sg_mbar_arrive(&sm.empty[d.s1]);
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

template <bool PROF>
__device__ __forceinline__ void sg_mega_consume(const sg_mega_params &p, int v, const sg_sm90_gemm_smem &sm,
                                                uint64_t *tfull, uint64_t *tempty, const int *tslot, uint64_t *sready,
                                                uint64_t *sfree, sg_mega_store_desc *sdesc) {
    sg_sm90_ring ring = {0, 0}, tq = {0, 0}, sq = {0, 0};
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
        case SG_MT_POSTLN: {
            const float *g = k.kind == SG_MT_LN1 ? L->ln1_w : k.kind == SG_MT_LN2 ? L->ln2_w : p.post_w;
            const float *b = k.kind == SG_MT_LN1 ? L->ln1_b : k.kind == SG_MT_LN2 ? L->ln2_b : p.post_b;
            sg_sm90_ln_rows<4>(p.h, SG_MEGA_D, g, b, p.eps, p.y, SG_MEGA_D, k.a * SG_MEGA_BM + k.b * SG_MEGA_LN_ROWS,
                               SG_MEGA_LN_ROWS, M, warp, 4);
            if (k.kind != SG_MT_POSTLN) sg_dep_signal_wg(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), bar);
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
        default: {  // the four GEMMs: the accumulators start at the bias (sg_sm90_acc_init); QKV / FC1 tiles are
                    // stored as bf16 (FC1 after GELU), out-proj / FC2 tiles are added to the fp32 residual stream
                    // h by a TMA reduce-add in L2 (h += tile: one adder per element per stage, so deterministic),
                    // which spares loading the residual
            const int m0 = k.a * SG_MEGA_BM, n0 = k.b * SG_MEGA_BN;
            const bool resid = k.kind == SG_MT_OUT || k.kind == SG_MT_FC2 || k.kind == SG_MT_PATCH;
            const float *bias = k.kind == SG_MT_QKV ? L->qkv_b : k.kind == SG_MT_OUT ? L->o_b
                              : k.kind == SG_MT_FC1 ? L->fc1_b : k.kind == SG_MT_FC2 ? L->fc2_b
                              : nullptr;  // PATCH: the conv bias is in pos_b
            float acc0[64], acc1[64];
            sg_sm90_acc_init(acc0, n0, bias);
            sg_sm90_acc_init(acc1, n0, bias);
            const long long t_k = PROF ? clock64() : 0;
            uint32_t held0 = 0, held1 = 0;
            sg_sm90_gemm_kloop_128_hold<SG_MEGA_STAGES, 1>(acc0, acc1, k.kind == SG_MT_FC2 ? SG_MEGA_F : SG_MEGA_D,
                                                           sm, ring, resid ? 2 : 1, held0, held1);
            const long long t_e = PROF ? clock64() : 0;
            if (PROF && tid == 0) {
                atomicAdd(p.prof + SG_MT_END + 2, (unsigned long long)(t_k - t_busy));  // accumulator start
                atomicAdd(p.prof + SG_MT_END + 3, (unsigned long long)(t_e - t_k));     // K loop
            }
            // Stage the tile in the held ring stage(s) and hand it to the storer thread (TMA store + signal).
            sg_mbar_wait(&sfree[sq.stage], sq.phase ^ 1u);
            if (k.kind == SG_MT_QKV || k.kind == SG_MT_FC1) {
                uint8_t *buf = sm.stages + held0 * SG_GEMM_STAGE_BYTES(SG_MEGA_BN);
                if (k.kind == SG_MT_FC1) {
                    sg_mega_stage_bf16<1>(acc0, buf, 0);
                    sg_mega_stage_bf16<1>(acc1, buf, 1);
                } else {
                    sg_mega_stage_bf16<0>(acc0, buf, 0);
                    sg_mega_stage_bf16<0>(acc1, buf, 1);
                }
            } else {
                sg_mega_stage_f32(acc0, sm.stages + held1 * SG_GEMM_STAGE_BYTES(SG_MEGA_BN));
                sg_mega_stage_f32(acc1, sm.stages + held0 * SG_GEMM_STAGE_BYTES(SG_MEGA_BN));
            }
            sg_fence_proxy_async_smem();  // this thread's smem writes, before the TMA store reads them
            if (tid == 0) {
                sg_mega_store_desc &d = sdesc[sq.stage];
                d.mode = resid ? 2 : 1;
                d.map = k.kind == SG_MT_QKV ? SG_SMAP_QKV : k.kind == SG_MT_FC1 ? SG_SMAP_H : SG_SMAP_RES;
                d.x = n0;
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
            atomicAdd(p.prof + 16 + k.kind, 1ull);
        }
    }
}

// PROF = 1 (SG_SM90_PROFILE=1) adds the cycle counters; it is a separate instantiation because the counters'
// registers made the GEMM path spill 8 bytes.
template <bool PROF>
__global__ void __launch_bounds__(SG_MEGA_THREADS) sg_sm90_mega_kernel(const __grid_constant__ sg_mega_params p) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[2][SG_MEGA_STAGES], empty[2][SG_MEGA_STAGES];
    __shared__ uint64_t tfull[2][SG_MEGA_TASKQ], tempty[2][SG_MEGA_TASKQ];
    __shared__ int tslot[2][SG_MEGA_TASKQ];
    __shared__ uint64_t sready[2][SG_MEGA_STOREQ], sfree[2][SG_MEGA_STOREQ];
    __shared__ sg_mega_store_desc sdesc[2][SG_MEGA_STOREQ];
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
        }
        sg_fence_mbar_init();
    }
    __syncthreads();
    const int wg = threadIdx.x / 128;
    if (wg < 2) {
        const sg_sm90_gemm_smem sm = {rings + wg * SG_MEGA_RING_BYTES, full[wg], empty[wg]};
        sg_mega_consume<PROF>(p, wg, sm, tfull[wg], tempty[wg], tslot[wg], sready[wg], sfree[wg], sdesc[wg]);
    } else {
        const int v = threadIdx.x / 32 - 8;  // producer warps 8 and 9
        const sg_sm90_gemm_smem sm = {rings + v * SG_MEGA_RING_BYTES, full[v], empty[v]};
        if (threadIdx.x % 32 == 0)
            sg_mega_produce<PROF>(p, sm, tfull[v], tempty[v], tslot[v]);
        else if (threadIdx.x % 32 == 1)
            sg_mega_storer(p, sm, sready[v], sfree[v], sdesc[v]);
        __syncwarp();
    }
    // The last CTA out zeroes the counters for the next launch: every other CTA's counter traffic is ordered
    // before its exit increment (bar.sync + the cumulative fence below).
    // (__syncthreads_or, not a shared variable: compute-sanitizer racecheck paired a shared-memory flag written
    // here with the next kernel's shared-memory reads, cuBLAS starting early on the freed SMs.)
    __syncthreads();
    int is_last = 0;
    if (threadIdx.x == 0) {
        __threadfence();
        is_last = atomicAdd(p.cnt + SG_MEGA_CNT_EXIT, 1u) == gridDim.x - 1;
        __threadfence();
    }
    if (__syncthreads_or(is_last)) {
        const size_t words = sg_mega_counter_words(p.tm_max, p.tm_max);  // >= n_max: 128-row tiles < images
        for (size_t i = threadIdx.x; i < words; i += blockDim.x) p.cnt[i] = 0;
    }
}

// ---------------------------------------------------------------------------------------------------- host

struct sg_sm90_mega {
    CUtensorMap *maps;         // device
    sg_mega_layer_dev *layers; // device
    float *bias;               // device: per layer qkv_b [2304] + fc1_b [3072] in fp32, then the pixel LUT [256]
    unsigned *cnt;             // device
    unsigned long long *prof;  // device, SG_MEGA_PROF_WORDS, when SG_SM90_PROFILE=1
    unsigned **tasks;          // [n_max + 1] device task tables, made on first use of each batch size
    CUtensorMap **smaps;       // [n_max + 1] device store maps (SG_SMAPS each), made with the task table
    int *ntasks;               // [n_max + 1]
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
    if (g->prof) cudaFree(g->prof);
    for (int i = 0; i <= g->n_max; i++) {
        if (g->tasks && g->tasks[i]) cudaFree(g->tasks[i]);
        if (g->smaps && g->smaps[i]) cudaFree(g->smaps[i]);
    }
    free(g->tasks);
    free(g->smaps);
    free(g->ntasks);
    free(g);
}

int sg_sm90_mega_supported(const sg_config *c, char *why, size_t whylen) {
    if (c->hidden_size != SG_MEGA_D || c->intermediate_size != SG_MEGA_F || c->num_heads != SG_MEGA_HEADS ||
        sg_config_tokens(c) != SG_MEGA_T || c->image_size != 224 || c->patch_size != 16 ||
        c->activation != SG_ACT_GELU_TANH || c->num_layers < 1) {
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
    g->tasks = (unsigned **)calloc((size_t)g->n_max + 1, sizeof(unsigned *));
    g->ntasks = (int *)calloc((size_t)g->n_max + 1, sizeof(int));
    g->smaps = (CUtensorMap **)calloc((size_t)g->n_max + 1, sizeof(CUtensorMap *));
    if (!g->tasks || !g->ntasks || !g->smaps || L > SG_MEGA_MAX_LAYERS || g->tm_max > SG_MEGA_MAX_TILES_M) {
        snprintf(err, errlen, "sm90 megakernel: out of host memory, or batch %d / %d layers beyond the task encoding",
                 b->max_batch, L);
        sg_sm90_mega_free(g);
        return nullptr;
    }
    int dev = 0;
    SG_MEGA_TRY(cudaGetDevice(&dev));
    SG_MEGA_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));

    // fp32 biases of the two GEMMs whose portable-path biases are bf16.
    std::vector<float> hb((size_t)L * (3 * D + F) + 256);
    for (int i = 0; i < 256; i++) hb[(size_t)L * (3 * D + F) + i] = sg_pixel_to_float((uint8_t)i);
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
             sg_sm90_tmap_bf16(&hm[SG_MAP_QKV], b->qkv, b->qkv_rows, 3 * D, SG_ATTN_ROWS, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_PATCHES], b->patches, M, D, SG_MEGA_BM, 64, err, errlen) ||
             sg_sm90_tmap_bf16(&hm[SG_MAP_WPATCH], b->patch_w, D, D, SG_MEGA_BN, 64, err, errlen);
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
    if (getenv("SG_SM90_PROFILE")) SG_MEGA_TRY(cudaMalloc(&g->prof, SG_MEGA_PROF_WORDS * sizeof(unsigned long long)));
    SG_MEGA_TRY(cudaFuncSetAttribute(sg_sm90_mega_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     SG_MEGA_SMEM));
    SG_MEGA_TRY(cudaFuncSetAttribute(sg_sm90_mega_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     SG_MEGA_SMEM));
    int per_sm = 0;
    SG_MEGA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sg_sm90_mega_kernel<false>, SG_MEGA_THREADS,
                                                              SG_MEGA_SMEM));
    if (per_sm < 1) {
        snprintf(err, errlen, "sm90 megakernel: cannot be resident (%d bytes of shared memory, %d threads)",
                 SG_MEGA_SMEM, SG_MEGA_THREADS);
        sg_sm90_mega_free(g);
        return nullptr;
    }
    return g;
}

int sg_sm90_mega_run(sg_sm90_mega *g, const sg_sm90_mega_buffers *b, const uint8_t *pix, const float *post_w,
                     const float *post_b, float eps, int n, cudaStream_t st, char *err, size_t errlen) {
    if (n < 1 || n > g->n_max) {
        snprintf(err, errlen, "%s:%d: sm90 megakernel: batch %d outside 1..%d", __FILE__, __LINE__, n, g->n_max);
        return -1;
    }
    if (!g->tasks[n]) {  // first use of this batch size: outside graph capture (the backend runs it eagerly first)
        cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(st, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
            snprintf(err, errlen, "%s:%d: sm90 megakernel: batch %d first seen during graph capture", __FILE__,
                     __LINE__, n);
            return -1;
        }
        // The default order is stage by stage with the memory-bound tasks interleaved one grid behind their
        // producers: on an H100 11,524 images/s at batch 1024 against 11,142-11,358 for plain stage by stage and
        // 8,811-9,442 (an earlier kernel version) for wavefronts of 4-16 row tiles (docs/perf-notes.md).
        // SG_SM90_ORDER=stage, SG_SM90_WAVE="G,lag" and SG_SM90_LAGX=k (lag multiplier) choose other orders,
        // for experiments. Every table is checked topological before it is used (kernel/mega_plan.c).
        int G = SG_MEGA_MAX_TILES_M, lag = 1;
        const char *e = getenv("SG_SM90_WAVE"), *o = getenv("SG_SM90_ORDER"), *x = getenv("SG_SM90_LAGX");
        if (e) sscanf(e, "%d,%d", &G, &lag);
        const int order = (o && strcmp(o, "stage") == 0) || e ? SG_MEGA_ORDER_WAVE : SG_MEGA_ORDER_INTERLEAVE;
        uint32_t *t = nullptr;
        size_t count = 0;
        if (sg_mega_plan_build(n, g->L, 2 * g->sms, order, G, lag, x ? atoi(x) : 1, &t, &count, err, errlen))
            return -1;
        if (sg_mega_plan_check(t, count, n, g->L, err, errlen)) {
            free(t);
            return -1;
        }
        unsigned *d = nullptr;
        const bool up = cudaMalloc(&d, count * sizeof(unsigned)) == cudaSuccess &&
                        cudaMemcpy(d, t, count * sizeof(unsigned), cudaMemcpyHostToDevice) == cudaSuccess;
        free(t);
        if (!up) {
            snprintf(err, errlen, "%s:%d: sm90 megakernel: task table upload: %s", __FILE__, __LINE__,
                     cudaGetErrorString(cudaGetLastError()));
            if (d) cudaFree(d);
            return -1;
        }
        g->tasks[n] = d;
        g->ntasks[n] = (int)count;
        const uint64_t M = (uint64_t)n * SG_MEGA_T;
        CUtensorMap sm[SG_SMAPS];
        CUtensorMap *dm = nullptr;
        if (sg_sm90_tmap_2d(&sm[SG_SMAP_QKV], 0, b->qkv, M, 3 * SG_MEGA_D, SG_MEGA_BM, 64, err, errlen) ||
            sg_sm90_tmap_2d(&sm[SG_SMAP_H], 0, b->H, M, SG_MEGA_F, SG_MEGA_BM, 64, err, errlen) ||
            sg_sm90_tmap_2d(&sm[SG_SMAP_RES], 1, b->h, M, SG_MEGA_D, 64, 32, err, errlen))
            return -1;
        if (cudaMalloc(&dm, sizeof sm) != cudaSuccess ||
            cudaMemcpy(dm, sm, sizeof sm, cudaMemcpyHostToDevice) != cudaSuccess) {
            snprintf(err, errlen, "%s:%d: sm90 megakernel: store maps upload: %s", __FILE__, __LINE__,
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
    p.lut = g->bias + (size_t)g->L * (3 * SG_MEGA_D + SG_MEGA_F);
    p.pos_b = b->pos_b;
    p.cnt = g->cnt;
    p.tm_max = g->tm_max;
    p.n = n;
    p.L = g->L;
    p.eps = eps;
    // SG_SM90_PROFILE=1: launches outside graph capture count cycles per task kind and print a summary (stderr).
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    const bool prof = g->prof && cudaStreamIsCapturing(st, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone;
    p.prof = prof ? g->prof : nullptr;
    if (prof && cudaMemsetAsync(g->prof, 0, SG_MEGA_PROF_WORDS * sizeof(unsigned long long), st) != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: sm90 megakernel: profile reset failed", __FILE__, __LINE__);
        return -1;
    }
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    if (prof) {
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        cudaEventRecord(e0, st);
    }
    if (prof)
        sg_sm90_mega_kernel<true><<<g->sms, SG_MEGA_THREADS, SG_MEGA_SMEM, st>>>(p);
    else
        sg_sm90_mega_kernel<false><<<g->sms, SG_MEGA_THREADS, SG_MEGA_SMEM, st>>>(p);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: sm90 megakernel launch: %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return -1;
    }
    if (prof) {
        unsigned long long h[SG_MEGA_PROF_WORDS];
        float ms = 0;
        cudaEventRecord(e1, st);
        if (cudaMemcpyAsync(h, g->prof, sizeof h, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
            cudaStreamSynchronize(st) != cudaSuccess) {
            snprintf(err, errlen, "%s:%d: sm90 megakernel: %s", __FILE__, __LINE__, cudaGetErrorString(cudaGetLastError()));
            return -1;
        }
        cudaEventElapsedTime(&ms, e0, e1);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        int dev = 0, khz = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
        const double vcta_us = 2.0 * g->sms * ms * 1e3;  // virtual-CTA microseconds available in the launch
        static const char *names[] = {"prep", "patch", "ln1", "qkv", "att", "out", "ln2", "fc1", "fc2", "postln",
                                      "idle", "depwait", "gemm:init", "gemm:kloop", "gemm:store"};
        fprintf(stderr, "sg-sm90 profile, batch %d: %.3f ms, %d tasks; per kind: share of consumer time, tasks, "
                        "us per task\n", n, ms, sg_mega_total_tasks(n, g->L));
        for (int i = 0; i <= SG_MT_END + 4; i++) {
            const double us = h[i] / (khz * 1e-3);
            fprintf(stderr, "  %-8s %5.1f%%  %8llu  %8.2f\n", names[i], 100.0 * us / vcta_us,
                    i < SG_MT_END ? h[16 + i] : 0ull, i < SG_MT_END && h[16 + i] ? us / h[16 + i] : 0.0);
        }
    }
    return 0;
}

