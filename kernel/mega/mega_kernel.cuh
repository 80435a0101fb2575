// kernel/mega/mega_kernel.cuh — the megakernel skeleton shared by the Hopper (kernel/sm90/sm90_mega.cu) and
// Blackwell (kernel/sm100/sm100_mega.cu) kernels: everything but the MMA / accumulator layer. It includes only
// kernel/mega headers; each architecture's file brings its MMA layer's own headers.
//
// One launch runs the whole forward: patch embedding, all encoder layers, the post-LayerNorm and the attention-
// pooling (MAP) head. Shape of one CTA (one per SM, 384 threads, ~209 KB of shared memory): a producer thread (lane 0
// of warp 8, alone in its warp) feeds both consumer warpgroups (warps 0-3, 4-7) through one 3-stage mbarrier ring of
// 48 KB stages; every task is run by both warpgroups; warps 10-11, the side warps, run the LayerNorms and patch
// preparation of launches of 96 images or more from a list of their own beside them (sg_mega_side; a launch without
// a side list has 320 threads). A GEMM task is a 128 x 256 tile: the stage holds the A block
// (128 rows x 64 bf16) once and the W block of 256 rows, so the A operand is loaded once for both warpgroups (a
// quarter fewer bytes from L2 per FLOP than two independent 128 x 128 tiles, docs/perf-notes.md); warpgroup w
// computes its part: on Hopper (Arch::wide_rows) the 64 rows w x all 256 columns (one m64n256k16 a k16 step, which
// reads fewer shared-memory bytes per FLOP than two m64n128k16 and ran 1.2x faster in the lab, perf-notes session
// 9), on Blackwell the 128 x 128 half w. Each warpgroup stages its part into 32 KB of its own and hands it to its
// storer thread (lane w of warp 9), which writes it out with TMA (store, or reduce-add into the fp32 residual
// stream) and signals the task's counter once per part. Small batches (a launch with
// sg_mega_params.narrow) run 128 x 128 tasks instead, twice as many: the stage holds A and 128 W rows, and warpgroup
// w computes the 64-row half w (mega_plan.h); the smallest (narrow = 2) 128 x 64 tasks, four times as many, and in
// halves launches (narrow = 3) the 768-column kinds 64 x 64 tasks, warpgroup w their 32 columns w.
// The CTA takes task numbers from one global ticket (an atomic increment) in list order (kernel/mega/mega_plan.h),
// so the lowest unfinished task never waits on anything unfinished and the launch cannot deadlock, whatever the
// residency (no cooperative launch needed, and it can be captured in a CUDA graph).
//   producer: ticket -> for a GEMM, the tile's 256 bias values into a shared-memory slot (one bulk copy; the
//             bias depends on no task) -> wait for the task's input counters (ld.acquire + fence.proxy.async,
//             mega_sync.cuh) -> hand the task number to the consumers (4-slot smem queue) -> the next ticket's
//             atomic (its round trip overlaps the loads) -> TMA loads into the ring (GEMM: K/64 blocks of
//             A and W, two blocks a stage in a narrow64 launch; attention: Q, K, V boxes of 256 x 64, one stage
//             each, a split task's Q 128 x 64; the head's attention: K and V, and a stage it uses as scratch; the
//             head's products: before the inputs' wait, their weight slice and a scratch stage); for LayerNorm, an L2
//             prefetch of its 32 rows of h) -> the next ticket's table entry;
//   consumers: a GEMM tile (Arch::gemm: warpgroup w's K loop over its half, then tanh GELU where needed, and the
//             half staged (swizzled) in pieces for its storer); attention of one (image, head), or of half its
//             query blocks in a narrow launch (Arch::attention: the blocks shared between the warpgroups); the
//             head's probe attention of one (image, head) (sg_mega_pool); a block of the head's products on rows of
//             images (mega_hmm.cuh: mma.sync, its weight slice from a ring stage the producer fills before the
//             inputs' wait); LayerNorm of 32 rows (mega_ln.cuh, 4 rows per warp); the patch preparation; then a
//             barrier of both warpgroups + one red.release.gpu on the task's counter.
// Every row is computed from that row alone (its image's rows for attention), in an order that does not depend on
// the batch, so an image's embedding is bit-identical whatever its batch size and position.
// Counters are zeroed by the last CTA to finish (an exit count), so the next launch starts from zero with no
// memset and no parity bank; the host zeroes them once at allocation.
//
// The architecture layer (a struct of static device functions, the template parameter Arch):
//   Arch::gemm<PROF>(p, k, w, bias, ax, sm, ring, out, ophase) (profile only: the K loop's start and end go to
//       sg_mega_prof_mark(1) and (2); the skeleton records the phases from them): warpgroup w's half of
//       the GEMM task k (rows m0 = 128 k.a.., columns n0 = 256 k.b + 128 w.., K = sg_mega_gemm_k) from the ring (the W
//       rows of half w start SG_MEGA_A_BYTES + w SG_MEGA_WH_BYTES into a stage; each stage's empty barrier counts one
//       arrival per warpgroup); when Arch::wide_rows, rows m0 + 64 w.. and all 256 columns (n0 = 256 k.b.., the A
//       block's rows 64 w.., the stage's 256 W rows), staged as one bf16 piece of four 64-row boxes, or two fp32 pieces
//       of 64 rows x 128 columns; when p.narrow, rows m0 + 64 w.., columns n0 = 128 k.b.. (the stage's only W rows at
//       SG_MEGA_A_BYTES), staged as one piece of 64 rows (bf16: a *64 map); when the task's shape (sg_mega_shape) is 2
//       the same with 64 columns (n0 = 64 k.b.., out.nbox halved; the head's fp32 parts as two pieces of 32 columns);
//       when 3, a 64 x 64 task: rows m0 = sg_mega_task_m0.., columns sg_mega_task_n0 + 32 w.. (the stage's three K
//       blocks, SG_GEMM_H64_BLOCK apart, each A's 64 rows then W's 64, this part's W rows 32 w..), one fp32 piece of
//       one box; an architecture whose launcher says narrow = 0 never gets such a launch; started at bias[0..128)
//       (shared memory, or zero when NULL); then tanh GELU where sg_mega_gelu_tile, and the half handed to the storer
//       through `out` (sg_mega_out_begin / _end): bf16 tiles as one piece of two TMA boxes of 64 columns x 128 rows
//       (64-row parts: boxes of 64 rows, store mode 4); fp32 tiles (sg_mega_f32_tile) as two pieces of 64 rows (or of
//       128 columns), each four boxes of 32 columns x 64 rows; 128-byte swizzle (16-byte chunk c of a 128-byte row r at
//       position c ^ (r % 8)); or the part written by the warpgroup's threads themselves and only its counter handed
//       over (sg_mega_out_signal: Hopper's small batches' fp32 parts, added into h with vector reductions);
//   Arch::attention(q, k, v, empty, sqkv, img, head, part, att, ld, w): warpgroup w's share of one (image, head)
//       from three consecutive stages of the ring (Q, K, V boxes of 256 rows x 64 columns, at stages
//       sg_mega_qkv_stage(sqkv, 0..2); part >= 0, a narrow launch's split task: only query blocks 2 part, 2 part + 1,
//       Q a box of their 128 rows), which it gives back itself: one arrival by this warpgroup on each one's empty
//       barrier once its threads have finished reading it;
//   Arch::produce_gemm(p, k, map_a, map_w, m0, n0, K, sm, ring): the producer's TMA loads of a GEMM task's K
//       blocks into the launch's ring of sg_mega_ring_stages(p.narrow) stages (A 128 rows, W 256 rows, or 128
//       when the task's shape is 1, 64 when 2 (map_w then has 64-row boxes), A 64 rows and W 64 when 3 (both maps
//       64-row boxes); or the MXFP8 FC1 blocks with their scale atoms);
//   Arch::weight_map64(p, k, map, cols): the 64-row map a GEMM's weight is read through when it is not the
//       skeleton's bf16 one (FP8), and its row length in map elements (0: none to prefetch), for
//       sg_mega_prefetch_next_w;
//   Arch::ln_unroll: rows a warp's LayerNorm keeps in flight (24 registers each);
//   Arch::fc1_fp8row: FC1 runs in FP8 with row scales, and FC2 on the layers of p.fc2_f8 (Hopper's --precision fp8
//       instantiation: sg_mega_fp8row, sg_mega_h8);
//   Arch::wide_rows: a wide task's warpgroup w computes rows 64 w.. x 256 columns (true) or 128 rows x columns
//       128 w.. (false); either way each part signals the task's counter once;
//   Arch::ln2_quant(p, layer, gamma, beta, r0, nr, M, warp, nwarps) -> whether it did LayerNorm-2 of rows
//       r0..r0+nr-1 of that layer itself (the FP8 FC1 input: E4M3 codes + scales, p.fc1's format; on
//       Hopper also the scales of FP8 FC2's input), as warp `warp` of nwarps (the consumers'
//       8, or the side warps' 2; rows warp, warp + nwarps, ...); nr = 32, or 8 in a narrow64 launch, which only
//       Hopper gets; false: the bf16 LayerNorm (sg_mega_rowwise);
//   Arch::cta_begin() (every thread, before the CTA's first __syncthreads), Arch::ctx_for(w) (after it: the
//       state handed to warpgroup w's tasks, which they may update), Arch::cta_end() (every thread, after the
//       consumers are done): the tensor-memory allocation on SM100, nothing on SM90.
#ifndef SG_MEGA_KERNEL_CUH
#define SG_MEGA_KERNEL_CUH

#include <cuda_runtime.h>
#include "mega_ring.cuh"
#include "mega_gelu.cuh"
#include "mega_ln.cuh"
#include "mega_hmm.cuh"
#include "mega_sync.cuh"
#include "mega_plan.h"
#include "mega_gpu.h"

static_assert(SG_MEGA_ATT_BOX_BYTES <= SG_MEGA_STAGE_BYTES && SG_MEGA_STAGE_BYTES % 1024 == 0,
              "an attention box fits a ring stage, and stages keep the 1024-byte alignment of swizzle atoms");
static_assert(SG_MEGA_A_BYTES == SG_GEMM_A_BYTES && SG_MEGA_WH_BYTES == SG_GEMM_B_BYTES(SG_MEGA_BN),
              "a stage is A 128 x 64 and two W halves of 128 x 64");

__device__ __forceinline__ uint8_t *sg_mega_align1024(uint8_t *p) {
    return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// Waits (one thread) until every input of task k is complete: the inputs of kernel/mega/mega_plan.h, the same rules the
// host's order check replays. (An attention task's 256-row boxes also read up to 60 rows of the next image; those
// only meet masked keys or unstored queries: sm90_attn.cuh.)
__device__ __forceinline__ void sg_mega_wait_inputs(const sg_mega_params &p, const sg_mega_task &k) {
    size_t c;
    unsigned t;
    for (int i = 0; sg_mega_input(k, p.n, p.tm_max, p.narrow, i, &c, &t); i++) sg_dep_wait(p.cnt + c, t);
}

// Both consumer warpgroups have written their part of a task's output (global stores): one thread publishes it.
__device__ __forceinline__ void sg_mega_signal_all(unsigned *counter) {
    sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
    if (threadIdx.x == 0) sg_red_release_add(counter, 1);
}

// The next number of the global ticket (list order). Its table entry is a second, dependent round trip
// (sg_mega_task_at), which the producer reads only once the current task's loads are issued. The count stays below
// ntasks + grid, far below sg_atom_inc's wrap-around limit.
__device__ __forceinline__ unsigned sg_mega_take_ticket(const sg_mega_params &p) {
    return sg_atom_inc(p.cnt + SG_MEGA_CNT_TICKET, (unsigned)p.ntasks | 0x40000000u);
}
// Ticket t's table entry (SG_MT_END past the end).
__device__ __forceinline__ unsigned sg_mega_task_at(const sg_mega_params &p, unsigned t) {
    return t < (unsigned)p.ntasks ? __ldg(p.tasks + t) : sg_mega_encode(SG_MT_END, 0, 0, 0);
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
    default: a = SG_MAP_Y, w = SG_MAP_HKVW; break;  // SG_MT_HKV
    }
}

// Whether GEMM task k runs in FP8 with row scales (Hopper's FC1 in the kernel instantiated for it, Arch::fc1_fp8row;
// its launcher sets sg_mega_params.fc1 = SG_FC1_FP8ROW; and FC2 on the layers of p.fc2_f8): its bias slot then also
// holds the weight's column scales and the input's row scales (SG_MEGA_SLOT_*). A compile-time flag, so the bf16
// kernel carries none of its code: the producer's instructions are on the critical path of small batches (a
// run-time flag cost 1-3.5 %).
template <class Arch>
__device__ __forceinline__ bool sg_mega_fp8row(const sg_mega_params &p, const sg_mega_task &k) {
    return Arch::fc1_fp8row &&
           (k.kind == SG_MT_FC1 || (k.kind == SG_MT_FC2 && k.layer < p.L && ((p.fc2_f8 >> k.layer) & 1u)));
}
// The GEMM stage whose weight the chain reads after task k's stage (kind SG_MT_END: none): PATCH -> layer 0's QKV ->
// OUT -> FC1 -> FC2 -> the next layer's QKV; the last layer's FC2 -> the head's K/V (the head's products after it
// bring their own weights, sg_mega_produce_hmm).
__device__ __forceinline__ sg_mega_task sg_mega_next_gemm(const sg_mega_params &p, const sg_mega_task &k) {
    sg_mega_task nx = {SG_MT_END, k.layer, 0, 0};
    switch (k.kind) {
    case SG_MT_PATCH: nx.kind = SG_MT_QKV, nx.layer = 0; break;
    case SG_MT_QKV: nx.kind = SG_MT_OUT; break;
    case SG_MT_OUT: nx.kind = SG_MT_FC1; break;
    case SG_MT_FC1: nx.kind = SG_MT_FC2; break;
    case SG_MT_FC2:
        if (k.layer + 1 < p.L) nx.kind = SG_MT_QKV, nx.layer = k.layer + 1;
        else nx.kind = SG_MT_HKV, nx.layer = p.L;  // the head's tasks carry layer L
        break;
    default: break;
    }
    return nx;
}
// At small batches every weight comes from DRAM when its stage runs (the 172 MB never stay in the 50 MB L2), and a
// small task alone waits on it: FC2's 64 x 64 task 8.0 us against 6.0 with its weight in L2 (chain lab table 7,
// session 17). So a GEMM task's producer, when it takes the task (before it waits on the task's inputs),
// asks L2 for its share of the next GEMM stage's weight: boxes j = i, i + T, ... of the weight's 64-row map (64 x 64
// elements each, row-major over the boxes), i the task's index among the T tasks of its stage. One stage ahead, so
// each stage's prefetch streams while the stage before reads its own weight from L2 (v44, session 12, asked for a
// whole layer's at once and slowed the GEMM beside it). Measured on an H100: 2-4 images 1.4-2.6 % faster (v56,
// session 17); batch 1 1.018x since v55-v63 (session 21: FC2's K loop 7.53 against 8.66 us; unchanged in session
// 17, when the consumers' descriptors paced the small loops); in the other launch shapes -1.7 to +1.2 % (5-9 images
// 0.98-0.99x in session 17), so only halves launches run it by default (sg_mega_params.w_prefetch).
template <class Arch>
__device__ __forceinline__ void sg_mega_prefetch_next_w(const sg_mega_params &p, const sg_mega_task &k) {
    const sg_mega_task nx = sg_mega_next_gemm(p, k);
    if (nx.kind == SG_MT_END) return;
    int a, w;
    sg_mega_gemm_maps(nx, a, w);
    const CUtensorMap *map = p.maps + SG_MAP_R64(p.L, w);
    int cols = sg_mega_gemm_k(nx.kind);
    Arch::weight_map64(p, nx, map, cols);
    const int cb = cols / 64, nbox = sg_mega_kind_tiles(nx.kind) * (SG_MEGA_BN / 64) * cb;
    const int per = sg_mega_gemm_tasks(k.kind, p.narrow), T = per * sg_mega_tiles_m(p.n);
    for (int j = k.a * per + k.b; j < nbox; j += T) sg_tma_prefetch_l2_2d(map, 64 * (j % cb), 64 * (j / cb));
}
// Whether FP8ROW FC1 task k writes its output H as E4M3 with row scales (its layer's FC2 runs in FP8).
template <class Arch>
__device__ __forceinline__ bool sg_mega_h8(const sg_mega_params &p, const sg_mega_task &k) {
    return Arch::fc1_fp8row && k.kind == SG_MT_FC1 && ((p.fc2_f8 >> k.layer) & 1u);
}
// A bias slot's floats: the bias alone, or with the FP8ROW scales (SG_MEGA_SLOT) in the kernel that has them.
template <class Arch>
constexpr int sg_mega_slot() {
    return Arch::fc1_fp8row ? SG_MEGA_SLOT : SG_MEGA_TN;
}

// A GEMM task's tn bias values into the next bias slot (freed once both warpgroups read it); a task without bias
// (the patch embedding) still takes its slot, with an arrival and no bytes. The bias depends on no other task,
// so the producer copies it before it waits for the task's inputs: issued after the hand-over, its round trip
// was the consumers' wait before their first MMA. An FP8ROW task's bias comes interleaved with the weight's column
// scales; its 128 row scales are written by LayerNorm-2, so they are copied once the inputs are complete
// (sg_mega_produce_row_scales), on the same barrier (whose expected bytes count them already). Returns the slot.
template <class Arch>
__device__ __forceinline__ uint32_t sg_mega_produce_bias(const sg_mega_params &p, const sg_mega_task &k, int n0,
                                                         int tn, float *bias_s, uint64_t *bfull, uint64_t *bempty,
                                                         sg_ring &bq) {
    const bool f8 = sg_mega_fp8row<Arch>(p, k);
    // an FP8ROW task's bias comes interleaved with its column scales (sg_mega_params.w1sf, w2sf): 2 tn floats
    const float *bias = !f8                 ? sg_mega_bias(p, k)
                      : k.kind == SG_MT_FC1 ? reinterpret_cast<const float *>(p.w1sf) +
                                                  2 * ((size_t)k.layer * SG_MEGA_F + n0)
                                            : p.w2sf + 2 * ((size_t)k.layer * SG_MEGA_D + n0);
    const uint32_t s = bq.stage, b = (f8 ? 2 : 1) * tn * (uint32_t)sizeof(float);
    const uint32_t rs = (f8 ? 1u : 0u) + (sg_mega_h8<Arch>(p, k) ? 1u : 0u);  // row-scale arrays to come
    sg_mbar_wait(&bempty[s], bq.phase ^ 1u);
    sg_mbar_arrive_expect_tx(&bfull[s], (bias ? b : 0u) + rs * SG_MEGA_BM * (uint32_t)sizeof(float));
    if (bias) sg_bulk_load(bias_s + sg_mega_slot<Arch>() * s, bias + (f8 ? 0 : n0), b, &bfull[s]);
    sg_ring_next(bq, SG_MEGA_BIAS_SLOTS);
    return s;
}

// An FP8ROW task's 128 row scales (rows m0.., written by LayerNorm-2) into its slot, after its inputs' wait: FC1's
// input's (y8sf) and, when FC1 writes E4M3 (sg_mega_h8), its output's (h8sf); FC2's input's (h8sf).
template <class Arch>
__device__ __forceinline__ void sg_mega_produce_row_scales(const sg_mega_params &p, const sg_mega_task &k, int m0,
                                                           float *bias_s, uint64_t *bfull, uint32_t slot) {
    float *d = bias_s + sg_mega_slot<Arch>() * slot;
    const uint32_t b = SG_MEGA_BM * (uint32_t)sizeof(float);
    if (k.kind == SG_MT_FC1) {
        sg_bulk_load(d + SG_MEGA_SLOT_RS, reinterpret_cast<const float *>(p.y8sf) + m0, b, &bfull[slot]);
        if (sg_mega_h8<Arch>(p, k)) sg_bulk_load(d + SG_MEGA_SLOT_HS, p.h8sf + m0, b, &bfull[slot]);
    } else {
        sg_bulk_load(d + SG_MEGA_SLOT_RS, p.h8sf + m0, b, &bfull[slot]);
    }
}

// An encoder LayerNorm task (LN1, LN2, POSTLN; nothing for other kinds) reads its rows of h (32, or 8 in a narrow64
// launch) with ordinary loads: ask L2 for them when the task is handed over, contiguous (rows end at M), so the loads
// do not wait on DRAM. Called by the producer and by the side warps' lead thread; m0: the task's row tile's first
// row, k.a * SG_MEGA_BM.
__device__ __forceinline__ void sg_mega_prefetch_ln_rows(const sg_mega_params &p, const sg_mega_task &k, int m0) {
    if (k.kind != SG_MT_LN1 && k.kind != SG_MT_LN2 && k.kind != SG_MT_POSTLN) return;
    const int nr = sg_mega_ln_rows(k.kind, p.narrow), r0 = m0 + k.b * nr, M = p.n * SG_MEGA_T;
    const int rows = M - r0 < nr ? M - r0 : nr;
    if (rows > 0) sg_bulk_prefetch_l2(p.h + (size_t)r0 * SG_MEGA_D, (uint32_t)rows * SG_MEGA_D * 4u);
}

// A head product task's two ring stages (mega_hmm.cuh): its weight slice (sg_mega_hmm_cols rows of the weight,
// K / SG_MEGA_HMM_BOX boxes of 512-byte rows one after another) and a scratch stage for the warps' partial sums (no
// bytes). Issued before the task's inputs are waited on: the weights depend on no task, so at a few images they
// arrive during the wait. (Tensor copies, as every other stage's: a 1-D bulk copy into a stage that threads had
// read is a hazard to compute-sanitizer racecheck, which does not follow the ring's one-arrival-per-warpgroup
// hand-off.)
__device__ __forceinline__ void sg_mega_produce_hmm(const sg_mega_params &p, const sg_mega_task &k,
                                                    const sg_ring_smem &sm, sg_ring &ring) {
    const int K = sg_mega_gemm_k(k.kind), cb = sg_mega_hmm_cols(k.kind);
    const int m = k.kind == SG_MT_HOUT ? SG_MAP_HOW : k.kind == SG_MT_HFC1 ? SG_MAP_HW1 : SG_MAP_HW2;
    const CUtensorMap *map = p.maps + m;
    uint8_t *st = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
    sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
    sg_mbar_arrive_expect_tx(&sm.full[ring.stage], (uint32_t)(cb * K) * (uint32_t)sizeof(__nv_bfloat16));
    for (int j = 0; j < K / SG_MEGA_HMM_BOX; j++)
        sg_tma_load_2d(st + j * cb * SG_MEGA_HMM_BOX * 2, map, &sm.full[ring.stage], SG_MEGA_HMM_BOX * j, cb * k.b);
    sg_ring_next(ring, sg_mega_ring_stages(p.narrow));
    sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
    sg_mbar_arrive(&sm.full[ring.stage]);
    sg_ring_next(ring, sg_mega_ring_stages(p.narrow));
}

// The profile's task trace (SG_SM90_TRACE; mega_gpu.h). Its capacity per CTA (0: no trace) is read into shared
// memory when the CTA starts, so a stamp never waits on a global load.
__shared__ unsigned sg_mega_trace_cap;
// This CTA's i-th task's entry, or NULL past the capacity.
__device__ __forceinline__ unsigned long long *sg_mega_trace_at(const sg_mega_params &p, int i) {
    const unsigned cap = sg_mega_trace_cap;
    return (unsigned)i < cap ? p.prof + SG_MEGA_PROF_WORDS + ((size_t)blockIdx.x * cap + i) * SG_MEGA_TRACE_WORDS
                             : nullptr;
}
// Warpgroup 0's storer: the time of its i-th release of a GEMM tile's counter (after the trace's entries).
__device__ __forceinline__ void sg_mega_trace_release(const sg_mega_params &p, int i) {
    const unsigned long long t = sg_globaltimer();
    const unsigned cap = sg_mega_trace_cap;
    if ((unsigned)i < cap)
        p.prof[SG_MEGA_PROF_WORDS + ((size_t)gridDim.x * cap) * SG_MEGA_TRACE_WORDS + (size_t)blockIdx.x * cap + i] = t;
}

template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_produce(const sg_mega_params &p, const sg_ring_smem &sm, uint64_t *tfull,
                                                uint64_t *tempty, int *tslot, float *bias_s, uint64_t *bfull,
                                                uint64_t *bempty) {
    sg_ring ring = {0, 0}, tq = {0, 0}, bq = {0, 0};
    unsigned next = sg_mega_task_at(p, sg_mega_take_ticket(p));
    int ti = 0;  // PROF: this CTA's tasks so far (the trace's index)
    for (;;) {
        const unsigned code = next;
        const unsigned long long g0 = PROF ? sg_globaltimer() : 0ull;
        const sg_mega_task k = sg_mega_decode(code);
        const int m0 = k.a * SG_MEGA_BM, tn = sg_mega_tn(p.narrow), n0 = sg_mega_task_n0(k.kind, k.b, p.narrow);
        const bool gemm = sg_mega_is_gemm(k.kind);
        if (gemm && p.w_prefetch) sg_mega_prefetch_next_w<Arch>(p, k);
        const uint32_t slot = gemm ? sg_mega_produce_bias<Arch>(p, k, n0, tn, bias_s, bfull, bempty, bq) : 0u;
        if (sg_mega_hmm(k.kind)) sg_mega_produce_hmm(p, k, sm, ring);
        const long long w0 = PROF ? clock64() : 0;
        sg_mega_wait_inputs(p, k);
        if (PROF) {
            const unsigned long long dw = (unsigned long long)(clock64() - w0);
            atomicAdd(p.prof + SG_MT_END + 1, dw);
            atomicAdd(p.prof + SG_MEGA_PROF_DEPW + k.kind, dw);
        }
        const unsigned long long g1 = PROF ? sg_globaltimer() : 0ull;
        if (gemm && sg_mega_fp8row<Arch>(p, k)) sg_mega_produce_row_scales<Arch>(p, k, m0, bias_s, bfull, slot);
        sg_mbar_wait(&tempty[tq.stage], tq.phase ^ 1u);
        tslot[tq.stage] = (int)code;  // SG_MT_END is the stop
        sg_mbar_arrive(&tfull[tq.stage]);  // release: the slot write is visible to the consumers' wait
        sg_ring_next(tq, SG_MEGA_TASKQ);
        if (PROF)
            if (unsigned long long *e = sg_mega_trace_at(p, ti++)) {
                e[0] = code;
                e[1] = g0;
                e[2] = g1;
                e[5] = sg_globaltimer();
            }
        if (k.kind == SG_MT_END) return;
        const unsigned tnext = sg_mega_take_ticket(p);  // its table entry at the loop's end
        if (k.kind == SG_MT_ATT || k.kind == SG_MT_POOL) {
            // Q, K, V of head b % 12: columns 768 j + 64 head (POOL: no Q, a scratch stage); a split attention
            // task's Q is the 128 rows of the block pair holding its query blocks (sg_mega_att_parts)
            const int head = k.b % SG_MEGA_HEADS, part = k.b / SG_MEGA_HEADS, parts = sg_mega_att_parts(p.narrow);
            const bool split = k.kind == SG_MT_ATT && parts > 1;
            const int qblk = sg_mega_att_first_block(part, parts) & ~1;  // the first block of its Q box's pair
            for (int j = 0; j < 3; j++) {
                sg_mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1u);
                const bool load = k.kind == SG_MT_ATT || j > 0, q128 = split && j == 0;
                sg_mbar_arrive_expect_tx(&sm.full[ring.stage], !load ? 0u : q128 ? SG_MEGA_ATT_BOX_BYTES / 2
                                                                                   : SG_MEGA_ATT_BOX_BYTES);
                if (load)
                    sg_tma_load_2d(sm.stages + ring.stage * SG_MEGA_STAGE_BYTES,
                                   p.maps + (q128 ? SG_MAP_QKV128 : SG_MAP_QKV), &sm.full[ring.stage],
                                   SG_MEGA_D * j + SG_MEGA_DH * head,
                                   k.a * SG_MEGA_T + (q128 ? 64 * qblk : 0));
                sg_ring_next(ring, sg_mega_ring_stages(p.narrow));
            }
        } else if (gemm) {
            int a, w;
            sg_mega_gemm_maps(k, a, w);
            const int shape = sg_mega_shape(k.kind, p.narrow);
            if (shape >= 2) w = SG_MAP_R64(p.L, w);  // the weight's 64-row boxes
            if (shape == 3) a = SG_MAP_R64(p.L, a);  // and the A operand's: a 64 x 64 task's rows
            Arch::produce_gemm(p, k, p.maps + a, p.maps + w, sg_mega_task_m0(k.kind, k.a, k.b, p.narrow), n0,
                               sg_mega_gemm_k(k.kind), sm, ring);
        } else if (p.ln_prefetch) {  // the consumers reach a LayerNorm up to four tasks later
            sg_mega_prefetch_ln_rows(p, k, m0);
        }  // PREP and LayerNorm tasks read with ordinary loads, the head's products their A rows too
        // The next ticket's table entry, which needs the atomic's value, once this task's loads are issued: read
        // right after the hand-over (before, with atomicAdd), the two dependent round trips to L2 held back the
        // loads of a task that had just waited for its inputs, on the critical path of small batches.
        next = sg_mega_task_at(p, tnext);
    }
}

// The MAP head's attention for one (image, head) (a POOL task, both consumer warpgroups): the probe's fixed fp32
// query q (64 values of head hh) against the image's 196 keys, from the K and V boxes the producer brought into two
// ring stages (256 rows x 64 bf16, 128-byte swizzle: 16-byte chunk c of row r at position c ^ (r % 8)); the third
// stage is scratch for the scores and the reductions. Thread i (0..255) scores key i; the softmax's max and sum
// by warp shuffles and the 8 warps' partials; output channel c = i % 64 is mixed by four threads over keys
// [49 j, 49 j + 49) (j = i / 64), added in a fixed order. fp32 throughout, as the portable head
// (kernel/cuda/cuda_pool_attention.cu); the row depends on its image alone.
__device__ __forceinline__ float sg_bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float sg_bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
__device__ __forceinline__ void sg_mega_pool(const sg_mega_params &p, int img, int hh, uint8_t *scratch,
                                             const uint8_t *kbox, const uint8_t *vbox) {
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;  // tid < 256: the two consumer warpgroups
    float *sc = reinterpret_cast<float *>(scratch);  // [0, 256) scores, then weights; [256, 264) the warps' max,
                                                     // [264, 272) their sums; [272, 464) parts 1-3's outputs
    const float4 *q4 = reinterpret_cast<const float4 *>(p.head->q + SG_MEGA_DH * hh);
    float sv = -INFINITY;
    if (tid < SG_MEGA_T) {
        float acc = 0.0f;
#pragma unroll
        for (int c = 0; c < SG_MEGA_DH / 8; c++) {  // 8 bf16 per 16-byte chunk
            const uint4 kk = *reinterpret_cast<const uint4 *>(kbox + tid * 128 + ((c ^ (tid & 7)) << 4));
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
        sv = acc * 0.125f;  // Dh^-1/2, Dh = 64 (nn.MultiheadAttention's scaling)
    }
    float mx = sg_warp_max(sv);
    if (lane == 0) sc[256 + warp] = mx;
    sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
    mx = sc[256];
#pragma unroll
    for (int w = 1; w < 8; w++) mx = fmaxf(mx, sc[256 + w]);
    const float wt = tid < SG_MEGA_T ? expf(sv - mx) : 0.0f;
    sc[tid] = wt;
    const float part = sg_warp_sum(wt);
    if (lane == 0) sc[264 + warp] = part;
    sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);  // also publishes the weights
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; w++) sum += sc[264 + w];
    const int c = tid % SG_MEGA_DH, j = tid / SG_MEGA_DH, t0 = 49 * j;
    const uint32_t chunk = (uint32_t)c / 8, within = 2u * ((uint32_t)c % 8);
    float o = 0.0f;
#pragma unroll 7
    for (int t = t0; t < t0 + 49; t++) {
        const uint16_t v = *reinterpret_cast<const uint16_t *>(vbox + t * 128 + ((chunk ^ (t & 7)) << 4) + within);
        o = fmaf(sc[t], __uint_as_float((uint32_t)v << 16), o);
    }
    if (j > 0) sc[272 + SG_MEGA_DH * (j - 1) + c] = o;
    sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);
    if (j == 0)
        p.hatt[(size_t)img * SG_MEGA_D + SG_MEGA_DH * hh + c] =
            __float2bfloat16(((o + sc[272 + c]) + sc[336 + c] + sc[400 + c]) / sum);
    sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);  // every thread is done with the three stages
}

// A head product task (HOUT, HFC1, HFC2; mega_hmm.cuh) over its head row tile's images: w_s the weight slice the
// producer brought, scratch the stage for the partial sums.
__device__ __forceinline__ void sg_mega_head_product(const sg_mega_params &p, const sg_mega_task &k,
                                                     const uint8_t *w_s, uint8_t *scratch, int warp, int lane) {
    const int r0 = k.a * SG_MEGA_BM, r_end = min(r0 + SG_MEGA_BM, p.n);
    const uint32_t w = sg_smem_u32(w_s), part = sg_smem_u32(scratch);
    float *pooled = p.pooled;
    if (k.kind == SG_MT_HOUT) {
        sg_mega_hmm_task<SG_MEGA_D, SG_MEGA_HOUT_COLS>(
            p.hatt, r0, r_end, w, p.head->o_b, SG_MEGA_HOUT_COLS * k.b, part, warp, lane,
            [=](int r, int c, float s) { pooled[(size_t)r * SG_MEGA_D + c] = s; });
    } else if (k.kind == SG_MT_HFC1) {
        __nv_bfloat16 *hmlp = p.hmlp;
        sg_mega_hmm_task<SG_MEGA_D, SG_MEGA_HFC1_COLS>(
            p.hy, r0, r_end, w, p.head->fc1_b, SG_MEGA_HFC1_COLS * k.b, part, warp, lane,
            [=](int r, int c, float s) { hmlp[(size_t)r * SG_MEGA_F + c] = __float2bfloat16(sg_mega_gelu(s)); });
    } else {  // SG_MT_HFC2: the MLP's output added to the residual, the attention's output (HOUT's)
        sg_mega_hmm_task<SG_MEGA_F, SG_MEGA_HFC2_COLS>(
            p.hmlp, r0, r_end, w, p.head->fc2_b, SG_MEGA_HFC2_COLS * k.b, part, warp, lane, [=](int r, int c, float s) {
                float *d = pooled + (size_t)r * SG_MEGA_D + c;
                *d = __ldcg(d) + s;
            });
    }
}

// A consumer warpgroup's side of its storer: the 32 KB staging buffer, the one-slot hand-off (ready: a piece is
// staged and described; free: the storer has read it out), the hand-off's descriptor, and `part`, the warpgroup's
// part of the task (mode, boxes, map, first element, counter), which thread 0 writes before the K loop and copies
// into `desc` per piece: in shared memory, six values fewer live beside the accumulators (a 64 x 256 accumulator
// had spilled the consumer's state). Arch::gemm stages each piece between sg_mega_out_begin and sg_mega_out_end;
// `phase` (each thread's own, flipped per piece) is the hand-off's position.
struct sg_mega_out {
    uint8_t *buf;
    uint64_t *ready, *free;
    sg_mega_store_desc *desc, *part;
};

// Every thread of the warpgroup, before writing a piece into the buffer: waits until the last one was read out.
__device__ __forceinline__ void sg_mega_out_begin(const sg_mega_out &o, uint32_t phase) {
    sg_mbar_wait(o.free, phase ^ 1u);
}

// Every thread of the warpgroup, after writing a piece whose first element is (dx, dy) from the part's (x, y)
// (fp32 pieces: rows 64 p.., or columns 128 p.. of a 64 x 256 part): the piece is handed over; the last one
// carries the part's counter to signal.
__device__ __forceinline__ void sg_mega_out_end(const sg_mega_out &o, uint32_t &phase, int dx, int dy, bool last) {
    sg_fence_proxy_async_smem();  // this thread's smem writes, before the TMA store reads them
    if (threadIdx.x % 128 == 0) {
        sg_mega_store_desc d = *o.part;
        d.x += dx;
        d.y += dy;
        if (!last) d.cnt = -1;
        *o.desc = d;
    }
    sg_mbar_arrive(o.ready);  // count 128: every thread's writes and fence are done
    phase ^= 1u;
}

// Every thread of the warpgroup, after writing its share of a part with its own global stores or reductions
// (store mode 5): the storer signals the part's counter (its release, after the mbarrier's CTA-scope
// acquire of every thread's arrival, publishes their writes as the LayerNorm tasks' barrier + release does).
__device__ __forceinline__ void sg_mega_out_signal(const sg_mega_out &o, uint32_t &phase) {
    sg_mbar_wait(o.free, phase ^ 1u);  // the hand-off's descriptor is free
    if (threadIdx.x % 128 == 0) {
        sg_mega_store_desc d = *o.part;
        d.mode = 5;
        d.nbox = 0;
        *o.desc = d;
    }
    sg_mbar_arrive(o.ready);  // count 128 (release, CTA scope): every thread's writes are ordered before it
    phase ^= 1u;
}

// The storer thread of a consumer warpgroup (see sg_mega_store_desc). A tile's completion is awaited only after
// the next piece's stores are issued (wait_group 1), so stores overlap; before blocking for new work the pending
// signal is flushed, so a counter is never held back while the consumers wait for work that depends on it.
template <bool PROF>
__device__ __forceinline__ void sg_mega_storer(const sg_mega_params &p, const uint8_t *buf, uint64_t *ready,
                                               uint64_t *free, const sg_mega_store_desc *desc, bool rec) {
    uint32_t phase = 0;
    int pending = -1;  // counter word of the tile whose stores are issued but not yet known complete
    int nrel = 0;      // PROF (rec: warpgroup 0's storer): the tiles released so far, for the trace
    auto release = [&](int c) {
        sg_red_release_add(p.cnt + c, 1);
        if (PROF && rec) sg_mega_trace_release(p, nrel++);
    };
    auto flush = [&] {  // the pending tile's stores complete, then its signal
        if (pending < 0) return;
        sg_bulk_wait0();
        sg_fence_proxy_async_global();
        release(pending);
        pending = -1;
    };
    for (;;) {
        if (pending >= 0 && !sg_mbar_try_wait(ready, phase)) flush();
        sg_mbar_wait(ready, phase);
        phase ^= 1u;
        const sg_mega_store_desc d = *desc;
        if (d.mode == 0) break;
        if (d.mode == 5) {  // written by the warpgroup's threads: signal, after the tile still in flight
            sg_mbar_arrive(free);
            flush();
            release(d.cnt);
            continue;
        }
        const CUtensorMap *map = p.smaps + d.map;
        if (d.mode == 1 || d.mode == 4) {  // bf16: boxes of 64 columns x 128 rows 16 KB apart, or x 64 rows 8 KB
            const int bytes = d.mode == 1 ? 16384 : 8192;
            for (int j = 0; j < d.nbox; j++) sg_tma_store_2d(map, buf + j * bytes, d.x + 64 * j, d.y);
        } else {  // fp32 (2): reduce-add, boxes of 32 columns 8 KB apart
            for (int j = 0; j < d.nbox; j++) sg_tma_reduce_add_2d(map, buf + j * 8192, d.x + 32 * j, d.y);
        }
        sg_bulk_commit();
        sg_bulk_wait_read0();  // the buffer may be refilled
        sg_mbar_arrive(free);
        if (pending >= 0) {  // the previous tile is complete once at most this piece is in flight
            sg_bulk_wait1();
            sg_fence_proxy_async_global();  // async-proxy writes, then the generic release
            release(pending);
            pending = -1;
        }
        if (d.cnt >= 0) pending = d.cnt;
    }
    flush();
}

// A row-wise task (LayerNorm of 32 rows, or 8 in a narrow64 launch; the patch preparation) by warp `warp` of
// `nwarps` (the consumers' 8, or the side warps' 2): the rows warp, warp + nwarps, ...; each row is computed from its
// own values by the same code whichever warps run it, so an image's rows do not depend on the launch's shape.
//   LayerNorms: rows of h -> y (the head's: rows of pooled, an image each -> hy), or the architecture's FP8 FC1
//   input (Arch::ln2_quant); PREP: a warp per token row, its 768 patch values (lane + 32 q: coalesced stores), then
//   h = positions + conv bias.
template <class Arch>
__device__ __forceinline__ void sg_mega_rowwise(const sg_mega_params &p, const sg_mega_task &k, int warp,
                                                int nwarps) {
    const int M = p.n * SG_MEGA_T, nr = sg_mega_ln_rows(k.kind, p.narrow), r0 = k.a * SG_MEGA_BM + k.b * nr;
    if (k.kind != SG_MT_PREP) {
        const sg_mega_layer_dev *L = p.layers + (k.layer < p.L ? k.layer : 0);
        const bool head = k.kind == SG_MT_HLN;
        const float *g = k.kind == SG_MT_LN1 ? L->ln1_w : k.kind == SG_MT_LN2 ? L->ln2_w
                       : head ? p.head->ln_w : p.post_w;
        const float *b = k.kind == SG_MT_LN1 ? L->ln1_b : k.kind == SG_MT_LN2 ? L->ln2_b
                       : head ? p.head->ln_b : p.post_b;
        if (k.kind == SG_MT_LN2 && Arch::ln2_quant(p, k.layer, g, b, r0, nr, M, warp, nwarps)) return;
        if (nr <= nwarps) {  // a row per warp (small launches): gamma and beta loaded with the row
            if (warp < nr && r0 + warp < (head ? p.n : M))
                sg_ln_row_early(head ? p.pooled : p.h, SG_MEGA_D, g, b, p.eps, r0 + warp,
                                sg_ln_store_bf16{head ? p.hy : p.y, SG_MEGA_D});
            return;
        }
        sg_ln_rows<Arch::ln_unroll>(head ? p.pooled : p.h, SG_MEGA_D, g, b, p.eps, head ? p.hy : p.y, SG_MEGA_D, r0, nr,
                                    head ? p.n : M, warp, nwarps);
        return;
    }
    const int lane = threadIdx.x % 32, r_end = min(r0 + nr, M);
    for (int row = r0 + warp; row < r_end; row += nwarps) {
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
}

// The side warps (10 and 11): the side list of a wide launch (mega_plan.h, sg_mega_plan_split: the patch
// preparation and the encoder's LayerNorms), run beside the consumers' GEMMs and attention instead of between them,
// from a ticket of its own. Thread 0 of the pair takes the ticket (the next one as soon as a task's inputs are
// complete, its table entry after the task), waits for the task's inputs, asks L2 for a LayerNorm's rows of h
// (sg_mega_prefetch_ln_rows: two warps take four rounds of loads for 32 rows) and hands the task over through
// shared memory; both warps run its rows; a barrier, then thread 0's release on the task's counter. Narrow launches
// have no side list (their row-wise stages are on the critical path, where eight warps finish a task sooner): the
// warps leave at once.
template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_side(const sg_mega_params &p, int warp, unsigned *slot) {
    if (p.nside == 0) return;
    const bool lead = warp == 0 && threadIdx.x % 32 == 0;
    auto take = [&] { return sg_atom_inc(p.cnt + SG_MEGA_CNT_SIDE, (unsigned)p.nside | 0x40000000u); };
    auto entry = [&](unsigned t) {
        return t < (unsigned)p.nside ? __ldg(p.side + t) : sg_mega_encode(SG_MT_END, 0, 0, 0);
    };
    unsigned next = lead ? entry(take()) : 0u, tnext = 0u;
    for (;;) {
        if (lead) {
            const sg_mega_task k = sg_mega_decode(next);
            if (k.kind != SG_MT_END) {
                const long long w0 = PROF ? clock64() : 0;
                sg_mega_wait_inputs(p, k);
                if (PROF) atomicAdd(p.prof + SG_MEGA_PROF_SIDEW + k.kind, (unsigned long long)(clock64() - w0));
                tnext = take();
                if (p.ln_prefetch)  // later rounds of loads then hit L2
                    sg_mega_prefetch_ln_rows(p, k, k.a * SG_MEGA_BM);
            }
            *slot = next;
        }
        sg_named_bar(SG_MEGA_BAR_SIDE, 64);
        const sg_mega_task k = sg_mega_decode(*slot);
        if (k.kind == SG_MT_END) return;
        const long long t0 = PROF ? clock64() : 0;
        sg_mega_rowwise<Arch>(p, k, warp, 2);
        if (lead) next = entry(tnext);
        sg_named_bar(SG_MEGA_BAR_SIDE, 64);  // every row written, and the slot read by both warps
        if (lead) {
            sg_red_release_add(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), 1);
            if (PROF) {
                atomicAdd(p.prof + k.kind, (unsigned long long)(clock64() - t0));
                atomicAdd(p.prof + SG_MEGA_PROF_COUNTS + k.kind, 1ull);
            }
        }
    }
}

// The profile's time stamps (SG_SM90_PROFILE=1; thread 0, warpgroup 0's view): [0] the task's start, [1] a GEMM
// task's K loop start, [2] its end. In shared memory rather than registers: a 64-bit stamp live across the K loop
// spilled the profiling instantiation (and one live across the epilogue, the FP8 kernel's).
__shared__ long long sg_mega_prof_t[3];
__shared__ int sg_mega_trace_n;  // the consumers' tasks so far (the trace's index; thread 0)
// The trace's two phase stamps of the current task (%globaltimer, 0: none): a GEMM's K loop start and end (marks 1
// and 2), an attention task's Q, K and V in shared memory and its outputs written.
__shared__ unsigned long long sg_mega_trace_ph[2];
__device__ __forceinline__ void sg_mega_prof_mark(int i) {
    if (threadIdx.x == 0) {
        sg_mega_prof_t[i] = clock64();
        if (i > 0) sg_mega_trace_ph[i - 1] = sg_globaltimer();
    }
}

// A consumer's positions in the task queue (SG_MEGA_TASKQ = 4 slots) and the bias slots (2), packed in one
// register: the consumers' loop-carried state must fit beside the GEMM's 128 accumulators in 168 registers, and
// one more live value spilled it. Bits 0-2: tasks taken mod 8 (slot, phase); bits 3-4: GEMM tasks taken mod 4.
struct sg_mega_qpos {
    uint32_t v;
    __device__ __forceinline__ uint32_t tstage() const { return v & 3u; }
    __device__ __forceinline__ uint32_t tphase() const { return (v >> 2) & 1u; }
    __device__ __forceinline__ void tnext() { v = (v & ~7u) | ((v + 1u) & 7u); }
    __device__ __forceinline__ uint32_t bstage() const { return (v >> 3) & 1u; }
    __device__ __forceinline__ uint32_t bphase() const { return (v >> 4) & 1u; }
    __device__ __forceinline__ void bnext() { v = (v & 7u) | ((v + 8u) & 0x18u); }
};
static_assert(SG_MEGA_TASKQ == 4 && SG_MEGA_BIAS_SLOTS == 2, "sg_mega_qpos's bit fields");

template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_consume(const sg_mega_params &p, int w, typename Arch::ctx &ax,
                                                const sg_ring_smem &sm, uint64_t *tfull, uint64_t *tempty,
                                                const int *tslot, const sg_mega_out &out0, const float *bias_s,
                                                uint64_t *bfull, uint64_t *bempty) {
    sg_ring ring = {0, 0};
    sg_mega_qpos q = {0};
    uint32_t ophase = 0;  // the storer hand-off's position
    const int tid = threadIdx.x % 128, warp = threadIdx.x / 32;  // warp: 0..7 of both
    const bool rec = PROF && threadIdx.x == 0;  // the profile: warpgroup 0's view (both run every task)
    long long t_idle = 0;
    for (;;) {
        if (PROF) t_idle = clock64();
        sg_mbar_wait(&tfull[q.tstage()], q.tphase());
        const sg_mega_task k = sg_mega_decode((unsigned)tslot[q.tstage()]);
        sg_mbar_arrive(&tempty[q.tstage()]);
        q.tnext();
        if (k.kind == SG_MT_END) {  // stop this warpgroup's storer
            sg_mega_out_begin(out0, ophase);
            if (tid == 0) out0.desc->mode = 0;
            sg_mbar_arrive(out0.ready);
            return;
        }
        if (PROF) {
            sg_mega_prof_mark(0);
            if (rec) {
                const unsigned long long idle = (unsigned long long)(sg_mega_prof_t[0] - t_idle);
                atomicAdd(p.prof + SG_MT_END, idle);
                atomicAdd(p.prof + SG_MEGA_PROF_IDLE + k.kind, idle);
                const unsigned long long g = sg_globaltimer();
                if (unsigned long long *e = sg_mega_trace_at(p, sg_mega_trace_n)) e[3] = g;
                sg_mega_trace_ph[0] = sg_mega_trace_ph[1] = 0ull;
            }
        }
        switch (k.kind) {
        case SG_MT_LN1:
        case SG_MT_LN2:
        case SG_MT_POSTLN:
        case SG_MT_HLN:
        case SG_MT_PREP:
            sg_mega_rowwise<Arch>(p, k, warp, 8);
            sg_mega_signal_all(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max));
            break;
        case SG_MT_HOUT:
        case SG_MT_HFC1:
        case SG_MT_HFC2: {  // two stages: the weight slice, scratch (sg_mega_produce_hmm)
            uint8_t *st[2];
            int si = 0;
            for (int j = 0; j < 2; j++) {
                sg_mbar_wait(&sm.full[ring.stage], ring.phase);
                st[j] = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
                si |= (int)ring.stage << (4 * j);
                sg_ring_next(ring, sg_mega_ring_stages(p.narrow));
            }
            sg_mega_head_product(p, k, st[0], st[1], warp, tid % 32);
            sg_mega_signal_all(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max));  // after both warpgroups' barrier:
            if (tid == 0)                                                      // every read of both stages done
                for (int j = 0; j < 2; j++) sg_mbar_arrive(&sm.empty[sg_mega_qkv_stage(si, j)]);
            break;
        }
        case SG_MT_ATT:
        case SG_MT_POOL: {  // three stages: Q, K, V (POOL: scratch, K, V)
            uint8_t *st[3];
            int sqkv = 0;  // the three stages' indices (sg_mega_qkv_stage)
            for (int j = 0; j < 3; j++) {
                sg_mbar_wait(&sm.full[ring.stage], ring.phase);
                st[j] = sm.stages + ring.stage * SG_MEGA_STAGE_BYTES;
                sqkv |= (int)ring.stage << (4 * j);
                sg_ring_next(ring, sg_mega_ring_stages(p.narrow));
            }
            // The stages come back in ring order, one arrival per warpgroup on each: the attention gives them back
            // itself (as early as its reads end), the pool after its last barrier.
            if (k.kind == SG_MT_ATT) {
                const int parts = sg_mega_att_parts(p.narrow), part = parts > 1 ? k.b / SG_MEGA_HEADS : -1;
                if (rec) sg_mega_trace_ph[0] = sg_globaltimer();
                Arch::attention(st[0], st[1], st[2], sm.empty, sqkv, k.a, k.b % SG_MEGA_HEADS, part, parts, p.att,
                                SG_MEGA_D, w);
                if (rec) sg_mega_trace_ph[1] = sg_globaltimer();
                sg_named_bar(SG_MEGA_BAR_ALL, SG_MEGA_CONSUMERS);  // both warpgroups' outputs written
            } else {
                sg_mega_pool(p, k.a, k.b, st[0], st[1], st[2]);
                if (tid == 0)
                    for (int j = 0; j < 3; j++) sg_mbar_arrive(&sm.empty[sg_mega_qkv_stage(sqkv, j)]);
            }
            if (threadIdx.x == 0)  // both warpgroups passed the barrier above: their writes are ordered before this
                sg_red_release_add(p.cnt + sg_mega_counter(k.kind, k.a, p.tm_max), 1);
            break;
        }
        default: {  // the GEMMs: QKV / FC1 / HKV halves are stored as bf16 (FC1 after GELU); out-proj / FC2 /
                    // patch halves are added to the fp32 residual stream h in L2 (a TMA reduce-add, or on Hopper's
                    // small batches vector reductions from the registers; h += tile: one adder per element per
                    // stage, so deterministic), which spares loading the residual
            // This warpgroup's part (mega_plan.h): columns 128 w.. of a wide task (rows 64 w.. when
            // Arch::wide_rows), rows 64 w.. of a narrow or narrow64 one, columns 32 w.. of a 64 x 64 one (shape 3).
            sg_mbar_wait(&bfull[q.bstage()], q.bphase());  // the bias slot (PATCH's carries no bias)
            const int shape = sg_mega_shape(k.kind, p.narrow);
            const bool rows = shape == 1 || shape == 2 || (shape == 0 && Arch::wide_rows);  // a 64-row part
            const int cw = shape == 0 && !rows ? SG_MEGA_BN * w : shape == 3 ? 32 * w : 0;  // its first column
            // (an FP8ROW slot holds two floats a column: the bias interleaved with the column scales)
            const float *bias = k.kind != SG_MT_PATCH ? bias_s + sg_mega_slot<Arch>() * q.bstage() +
                                                            (sg_mega_fp8row<Arch>(p, k) ? 2 : 1) * cw
                                                      : nullptr;
            const bool f32 = sg_mega_f32_tile(k.kind);
            const int n0 = sg_mega_task_n0(k.kind, k.b, p.narrow) + cw;
            if (tid == 0) {  // the part's destination, for sg_mega_out_end
                sg_mega_store_desc &t = *out0.part;
                t.mode = f32 ? 2 : rows ? 4 : 1;
                // boxes of 64 (bf16) or 32 (fp32) columns a piece: a 64 x 256 part's bf16 piece has 256 columns,
                // a narrow64 part 64, a 64 x 64 task's (fp32) 32; fp32 pieces have 128 columns (32 in a narrow64
                // launch, whose staging buffers are 8 KB)
                t.nbox = shape == 3 || (shape == 2 && f32) ? 1
                       : shape == 0 && rows && !f32      ? 4
                                                         : (f32 ? 4 : 2) >> (shape == 2);
                int map = k.kind == SG_MT_QKV || k.kind == SG_MT_HKV ? SG_SMAP_QKV
                        : k.kind == SG_MT_FC1                        ? SG_SMAP_H
                                                                     : SG_SMAP_RES;
                if (rows && !f32)  // the same tensor's map with 64-row boxes
                    map = map == SG_SMAP_QKV ? SG_SMAP_QKV64 : SG_SMAP_H64;
                t.map = map;
                t.x = k.kind == SG_MT_HKV ? SG_MEGA_D + n0 : n0;  // the head's K and V go to qkv's K and V columns
                if (sg_mega_h8<Arch>(p, k)) {  // E4M3 H, 16-bit elements: a 64 x 256 part is two boxes of 64 x 64
                    t.nbox = 2;
                    t.map = SG_SMAP_H8;
                    t.x = n0 / 2;
                }
                t.y = sg_mega_task_m0(k.kind, k.a, k.b, p.narrow) + (rows ? 64 * w : 0);
                t.cnt = (int)sg_mega_counter(k.kind, k.a, p.tm_max);
            }
            Arch::template gemm<PROF>(p, k, w, bias, ax, sm, ring, out0, ophase);
            sg_mbar_arrive(&bempty[q.bstage()]);  // every thread of both warpgroups has read its bias (count 256)
            q.bnext();
            if (rec) {  // the GEMM's phases, in total and per kind: start (bias slot), K loop, staging + stores
                const unsigned long long ph[3] = {(unsigned long long)(sg_mega_prof_t[1] - sg_mega_prof_t[0]),
                                                  (unsigned long long)(sg_mega_prof_t[2] - sg_mega_prof_t[1]),
                                                  (unsigned long long)(clock64() - sg_mega_prof_t[2])};
                for (int j = 0; j < 3; j++) {
                    atomicAdd(p.prof + SG_MT_END + 2 + j, ph[j]);
                    atomicAdd(p.prof + SG_MEGA_PROF_GEMM + 16 * j + k.kind, ph[j]);
                }
            }
            break;
        }
        }
        if (rec) {
            const long long t1 = clock64();
            const unsigned long long g = sg_globaltimer();
            if (unsigned long long *e = sg_mega_trace_at(p, sg_mega_trace_n++)) {
                e[4] = g;
                e[6] = sg_mega_trace_ph[0];
                e[7] = sg_mega_trace_ph[1];
            }
            atomicAdd(p.prof + k.kind, (unsigned long long)(t1 - sg_mega_prof_t[0]));
            atomicAdd(p.prof + SG_MEGA_PROF_COUNTS + k.kind, 1ull);
        }
    }
}

// The whole kernel, for the architecture's __global__ wrapper (launched with SG_MEGA_THREADS threads and the
// architecture's dynamic shared memory, grid = SM count). PROF = 1 (SG_SM90_PROFILE=1) adds the cycle counters; it
// is a separate instantiation because the counters' registers made the Hopper GEMM path spill.
template <class Arch, bool PROF>
__device__ __forceinline__ void sg_mega_kernel_body(const sg_mega_params &p) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ long long t_start;  // the profile's CTA start, kept in shared memory rather than a register
    __shared__ uint64_t full[SG_MEGA_STAGES_SMALL], empty[SG_MEGA_STAGES_SMALL];
    __shared__ uint64_t tfull[SG_MEGA_TASKQ], tempty[SG_MEGA_TASKQ];
    __shared__ int tslot[SG_MEGA_TASKQ];
    __shared__ uint64_t sready[SG_MEGA_WGS], sfree[SG_MEGA_WGS];
    __shared__ sg_mega_store_desc sdesc[2 * SG_MEGA_WGS];  // [w]: warpgroup w's hand-off; [WGS + w]: its part
    __shared__ __align__(16) float bias_s[SG_MEGA_BIAS_SLOTS * sg_mega_slot<Arch>()];
    __shared__ uint64_t bfull[SG_MEGA_BIAS_SLOTS], bempty[SG_MEGA_BIAS_SLOTS];
    __shared__ unsigned side_slot;  // the side warps' current task
    // The ring's stages, then the warpgroups' staging buffers (mega_gpu.h: a small launch's fourth stage is 48 KB
    // of a wide one's buffers).
    const int stages = sg_mega_ring_stages(p.narrow);
    const int obytes = stages == SG_MEGA_STAGES ? SG_MEGA_OUT_BYTES : SG_MEGA_OUT_BYTES_SMALL;
    uint8_t *ring = sg_mega_align1024(smem_raw), *outbuf = ring + stages * SG_MEGA_STAGE_BYTES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_MEGA_STAGES_SMALL; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], SG_MEGA_WGS);  // one arrival per consumer warpgroup
        }
        for (int q = 0; q < SG_MEGA_TASKQ; q++) {
            sg_mbar_init(&tfull[q], 1);
            sg_mbar_init(&tempty[q], SG_MEGA_CONSUMERS);  // every consumer thread, after reading the slot
        }
        for (int w = 0; w < SG_MEGA_WGS; w++) {
            sg_mbar_init(&sready[w], 128);  // every thread of warpgroup w, after staging its part of a piece
            sg_mbar_init(&sfree[w], 1);     // warpgroup w's storer, once the piece is read out
        }
        for (int q = 0; q < SG_MEGA_BIAS_SLOTS; q++) {
            sg_mbar_init(&bfull[q], 1);                   // the producer's expect_tx (+ the copy's bytes)
            sg_mbar_init(&bempty[q], SG_MEGA_CONSUMERS);  // every consumer thread, after its accumulator start
        }
        sg_fence_mbar_init();
        if (PROF) {
            t_start = clock64();
            sg_mega_trace_n = 0;
            sg_mega_trace_cap = (unsigned)p.prof[SG_MEGA_PROF_TRACE_CAP];
        }
    }
    Arch::cta_begin();
    __syncthreads();
    const sg_ring_smem sm = {ring, full, empty};
    // Broadcast from lane 0, so the compiler knows the role branch is warp-uniform and can keep what the consumers
    // compute from uniform values (their ring stage, the wgmma descriptors) in uniform registers (v55).
    const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
    if (wg < SG_MEGA_WGS) {
        const sg_mega_out out = {outbuf + wg * obytes, &sready[wg], &sfree[wg], &sdesc[wg],
                                 &sdesc[SG_MEGA_WGS + wg]};
        typename Arch::ctx ax = Arch::ctx_for(wg);
        sg_mega_consume<Arch, PROF>(p, wg, ax, sm, tfull, tempty, tslot, out, bias_s, bfull, bempty);
    } else {
        // The producer alone in warp 8, the storers in warp 9 (lane v: warpgroup v's): threads of one warp that take
        // different paths run one path at a time, and a storer waiting on its barrier (mbarrier.try_wait suspends
        // the thread) must not hold up the producer, whose steps are on the critical path of every hand-off.
        // Warps 10 and 11: the side list's row-wise tasks (sg_mega_side).
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (warp == 8 && lane == 0)
            sg_mega_produce<Arch, PROF>(p, sm, tfull, tempty, tslot, bias_s, bfull, bempty);
        else if (warp == 9 && lane < SG_MEGA_WGS)
            sg_mega_storer<PROF>(p, outbuf + lane * obytes, &sready[lane], &sfree[lane], &sdesc[lane], lane == 0);
        else if (warp >= 10)
            sg_mega_side<Arch, PROF>(p, warp - 10, &side_slot);
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
    // Without a side list (p->nside = 0) the CTA has no side warps: 320 threads, none waiting idle at the final
    // barrier (measured the same as 384 at batch 1: the 1-2 % small batches lost with v36 is code placement).
    static cudaError_t launch(int prof, int grid, cudaStream_t st, const sg_mega_params *p) {
        const int threads = p->nside ? SG_MEGA_THREADS : SG_MEGA_THREADS - 64;
        if (prof)
            K1<<<grid, threads, SMEM, st>>>(*p);
        else
            K0<<<grid, threads, SMEM, st>>>(*p);
        return cudaGetLastError();
    }
};

#endif
