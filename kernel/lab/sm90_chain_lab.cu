// kernel/lab/sm90_chain_lab.cu — hand-off latency between SMs and L2 -> SM ingest bandwidth on Hopper (lab only).
//
// Why: at batch 1 the megakernel is a chain of ~90 dependent stages. Each stage waits on a counter another SM
// released (mega_sync.cuh), bulk-copies what that SM wrote from L2 into shared memory, computes, stores, and
// releases the next counter; its work is too small to fill the GPU, so the forward is roughly 90 x (hand-off +
// one SM's stream from L2). Two kernels measure those two terms in isolation, with the megakernel's own
// primitives (tma_ptx.cuh, mega_sync.cuh), so the numbers bound what any schedule of that design can reach:
//   sg_chain_hop_kernel    a chain of H hops rotating over the SMs (or over a fixed pair): per hop, the flag
//                          round trip, plus with D > 0 a bulk copy of the D bytes the previous hop stored and
//                          D bytes of stores; timed with %globaltimer between the first and the last hop.
//   sg_chain_ingest_kernel N CTAs each stream R bytes through a ring of S bulk-copy stages; timed with events.
//   sg_chain_tingest_kernel the same through tensor maps: the megakernel's 8 KB boxes, or fewer, larger 3D boxes
//                          of the same bytes in the same shared-memory layout.
//   sg_chain_fence_kernel  what a consumer's fence.proxy.async.shared::cta costs while its CTA's bulk copies are in
//                          flight (the megakernel's epilogue fences each staged piece while the producer loads).
//   sg_chain_mma_kernel    one step of a chain of dependent m64nNk16 wgmma, operands already in shared memory: the
//                          floor of a small GEMM task's K loop (K / 16 such steps per output, in a fixed order).
//   sg_chain_task_kernel   the megakernel's 64 x 64 task whole: that chain in its ring, fed from global memory by
//                          tensor-map boxes (as the megakernel) or by 1-D bulk copies of pre-swizzled operands.
// All run one CTA per SM: SG_CHAIN_SMEM of dynamic shared memory, so a second CTA never fits.
// The C API and the exact addressing are in sm90_chain_lab.h; the driver is kernel/lab/test_sm90_chain.c.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "sm90_chain_lab.h"
#include "../mega/mega_sync.cuh"
#include "../mega/tmap.cuh"
#include "../sm90/sm90_ptx.cuh"
#include "lab_cuda.cuh"

#define SG_CHAIN_THREADS 128
#define SG_CHAIN_SMEM (200 * 1024)  // > 228 KB / 2: one CTA per SM (and >= SG_CHAIN_MAX_BYTES)
#define SG_CHAIN_PIECE (16 * 1024)  // bytes per bulk copy of a hop's load (one mbarrier counts them all)
#define SG_CHAIN_FLAG_WORDS 32      // u32 words between flags: a 128-byte line each, no poller shares a line
#define SG_INGEST_MAX_STAGES 32
#define SG_INGEST_SHARED_BYTES (1280 * 1024)
#define SG_INGEST_L2_BYTES (24u << 20)

static_assert(SG_CHAIN_SMEM >= SG_CHAIN_MAX_BYTES + 1024, "a hop's D bytes and the ingest ring (+ its 1 KB alignment) fit");

// The word the ingest buffer holds at u32 index w (the header's pattern).
__device__ __forceinline__ unsigned sg_ingest_word(unsigned long long w) { return (unsigned)w * 2654435761u + 12345u; }

// ------------------------------------------------------------------------------------------------ hop chain
struct sg_hop_params {
    uint8_t *regions;         // H + 2 regions of D bytes: hop h reads region h and writes region h + 1
    unsigned *flags;          // flag h at h * SG_CHAIN_FLAG_WORDS (h = 1 .. H + 1); the start counter at H + 2
    unsigned long long *t;    // [0]: hop 0's %globaltimer, [1]: hop H's
    int *smid;                // per CTA
    int hops, bytes, ctas, inv;  // inv = stride^-1 mod ctas: CTA c runs hops c * inv % ctas + k * ctas
};

// sg_dep_wait (the megakernel's wait, __nanosleep(64) backoff) or, SLEEP false, the same without the backoff:
// ld.acquire.gpu poll, clock64 timeout that traps, then fence.proxy.async.global because the hop's data is read
// next by the bulk copy (async proxy), which the generic acquire alone does not order.
template <bool SLEEP>
__device__ __forceinline__ void sg_hop_wait(const unsigned *flag, unsigned target) {
    if (SLEEP) {
        sg_dep_wait(flag, target);
    } else {
        const unsigned long long t0 = clock64();
        while (sg_ld_acquire(flag) < target)
            if (clock64() - t0 > SG_SPIN_LIMIT) __trap();
        sg_fence_proxy_async_global();
    }
}

template <bool SLEEP>
__global__ void __launch_bounds__(SG_CHAIN_THREADS, 1) sg_chain_hop_kernel(sg_hop_params p) {
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ uint64_t full;  // one phase per hop of this CTA: arrival + D bytes of complete_tx
    const int tid = threadIdx.x, D = p.bytes;
    unsigned *start = p.flags + (size_t)(p.hops + 2) * SG_CHAIN_FLAG_WORDS;
    if (tid == 0) {
        p.smid[blockIdx.x] = sg_smid();
        sg_mbar_init(&full, 1);
        sg_fence_mbar_init();
        sg_red_release_add(start, 1);  // this CTA is resident: hop 0 waits for all, so launch skew is not timed
    }
    __syncthreads();
    if ((int)blockIdx.x >= p.ctas || (D == 0 && tid != 0)) return;  // D = 0: the flag round trip, one thread
    uint32_t parity = 0;
    for (int h = (int)((long long)blockIdx.x * p.inv % p.ctas); h <= p.hops; h += p.ctas) {
        if (tid == 0) {
            if (h == 0)
                sg_hop_wait<SLEEP>(start, gridDim.x);
            else
                sg_hop_wait<SLEEP>(p.flags + (size_t)h * SG_CHAIN_FLAG_WORDS, 1);
        }
        if (D > 0) {
            // The thread that acquired (and fenced) issues the copies, so they are ordered after the acquire.
            if (tid == 0) {
                const uint8_t *src = p.regions + (size_t)h * D;
                sg_mbar_arrive_expect_tx(&full, D);
                for (int o = 0; o < D; o += SG_CHAIN_PIECE)
                    sg_bulk_load(smem + o, src + o, min(SG_CHAIN_PIECE, D - o), &full);
            }
            sg_mbar_wait(&full, parity);  // the others wait here for thread 0's flag and copy alike
            parity ^= 1;
            const uint4 *s = reinterpret_cast<const uint4 *>(smem);
            uint4 *dst = reinterpret_cast<uint4 *>(p.regions + (size_t)(h + 1) * D);
            for (int i = tid; i < D / 16; i += SG_CHAIN_THREADS) {  // coalesced: consecutive threads, 16 B each
                const uint4 v = s[i];
                dst[i] = make_uint4(v.x + 1, v.y + 1, v.z + 1, v.w + 1);
            }
            // All stores before the release below (bar.sync + cumulative release, as sg_dep_signal_wg), and all
            // shared-memory reads before this CTA's next copy overwrites smem (the megakernel's ring relies on
            // the same barrier-then-reissue order, no proxy fence, for that write-after-read).
            __syncthreads();
        }
        if (tid == 0) {
            if (h == 0) p.t[0] = sg_globaltimer();
            if (h == p.hops) p.t[1] = sg_globaltimer();
            sg_red_release_add(p.flags + (size_t)(h + 1) * SG_CHAIN_FLAG_WORDS, 1);
        }
    }
}

// ------------------------------------------------------------------------------------------------ L2 ingest
// An ingest kernel's end, by its one working thread: its CTA's {bad words, chunks consumed}, and CTA 0's clock64 and
// %globaltimer at its start (c0, g0) and now.
__device__ __forceinline__ void sg_ingest_stats(unsigned long long *stats, unsigned long long bad,
                                                unsigned long long seen, unsigned long long c0, unsigned long long g0) {
    const unsigned long long c1 = clock64(), g1 = sg_globaltimer();
    stats[2 * blockIdx.x] = bad;
    stats[2 * blockIdx.x + 1] = seen;
    if (blockIdx.x == 0) {
        unsigned long long *c = stats + 2 * gridDim.x;
        c[0] = c0, c[1] = g0, c[2] = c1, c[3] = g1;
    }
}

struct sg_ingest_params {
    const uint8_t *buf;
    unsigned long long base, span;  // CTA c's region starts at byte base + c * span
    unsigned chunks, region;        // chunks read per CTA; chunks in the region it cycles through
    unsigned stage_bytes, stages;
    unsigned long long *stats;      // per CTA {bad words, chunks consumed}; then CTA 0's clock64 and
                                    // %globaltimer at start and end
};

// One thread per CTA issues, waits, checks one word and reissues: what is measured is the bytes in flight per
// SM, which the ring sets, not the number of threads. The other threads only keep the CTA's shape.
// FENCE: a proxy fence between the check's generic read of a stage and the bulk copy that overwrites it. The
// first H100 run (2026-11-26) had it on every stage and measured ~350 ns per chunk whatever the ring held
// (16 or 48 KB, 3 or 12 stages): the fence waits for the copies in flight. Without it the one thread's read
// has returned its value (used in `bad`) long before a copy issued after it can land.
template <bool FENCE>
__global__ void __launch_bounds__(SG_CHAIN_THREADS, 1) sg_chain_ingest_kernel(sg_ingest_params p) {
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ uint64_t full[SG_INGEST_MAX_STAGES];
    if (threadIdx.x != 0) return;
    const unsigned B = p.stage_bytes, S = p.stages;
    for (unsigned s = 0; s < S; s++) sg_mbar_init(&full[s], 1);
    sg_fence_mbar_init();
    const unsigned long long off = p.base + blockIdx.x * p.span;
    auto src_off = [&](unsigned i) { return off + (unsigned long long)(i % p.region) * B; };
    auto issue = [&](unsigned i) {
        sg_mbar_arrive_expect_tx(&full[i % S], B);
        sg_bulk_load(smem + (i % S) * B, p.buf + src_off(i), B, &full[i % S]);
    };
    const unsigned long long c0 = clock64(), g0 = sg_globaltimer();
    for (unsigned i = 0; i < S && i < p.chunks; i++) issue(i);
    unsigned long long bad = 0, seen = 0;
    for (unsigned i = 0; i < p.chunks; i++) {
        sg_mbar_wait(&full[i % S], (i / S) & 1);
        const unsigned w = i * 61u % (B / 4);  // a different word each chunk, so a short or stale copy shows
        bad += reinterpret_cast<const unsigned *>(smem + (i % S) * B)[w] != sg_ingest_word(src_off(i) / 4 + w);
        seen++;
        if (i + S < p.chunks) {
            if (FENCE) sg_fence_proxy_async_smem();  // the generic read above, before the async proxy's write
            issue(i + S);
        }
    }
    sg_ingest_stats(p.stats, bad, seen, c0, g0);
}

// ------------------------------------------------------------------------------------- tensor-map ingest
struct sg_tingest_params {
    unsigned long long base;        // byte offset of the matrix in the filled buffer (its pattern's word origin)
    unsigned long long cols;        // C
    unsigned chunks, region;        // stages read per CTA; K blocks of the panel it cycles through (a multiple of
                                    // the stage's blocks)
    unsigned box_rows, blocks, copies, stages, panel_rows;  // panel_rows: 0 (SHARED: every CTA rows 0..) or box_rows
    unsigned long long *stats;      // as sg_ingest_params
    const uint8_t *bulk_buf;        // the bulk copies' pattern buffer (bulk > 0)
    unsigned long long bulk_base, bulk_span;  // CTA c's bulk chunks at bulk_base + c bulk_span + (i % bulk_region) bulk
    unsigned bulk, bulk_region;
};

// Experiment 4: as sg_chain_ingest_kernel, but each stage is `copies` tensor-map copies (2D boxes, or 3D boxes of
// `blocks` K blocks). The checked word of stage i: block q = i % (copies blocks) of the stage, row r = 7 i %
// box_rows, 16-byte chunk c = 3 i % 8 of the row, stored (128-byte swizzle, every box 1024-byte aligned) at chunk c
// ^ (r % 8) of the row's 128 bytes.
__global__ void __launch_bounds__(SG_CHAIN_THREADS, 1)
    sg_chain_tingest_kernel(const __grid_constant__ CUtensorMap map, sg_tingest_params p) {
    extern __shared__ __align__(128) uint8_t smem_raw[];
    __shared__ uint64_t full[SG_INGEST_MAX_STAGES];
    if (threadIdx.x != 0) return;
    // 128-byte swizzle: every box 1024-byte aligned (the ring <= SG_CHAIN_MAX_BYTES leaves the 1 KB to spare)
    uint8_t *smem = smem_raw + ((1024u - (sg_smem_u32(smem_raw) & 1023u)) & 1023u);
    const unsigned S = p.stages, bps = p.copies * p.blocks, box = p.box_rows * 128u, BT = bps * box, B = BT + p.bulk;
    const unsigned row0 = blockIdx.x * p.panel_rows;
    for (unsigned s = 0; s < S; s++) sg_mbar_init(&full[s], 1);
    sg_fence_mbar_init();
    sg_tma_prefetch_desc(&map);
    auto kb0 = [&](unsigned i) { return (unsigned)((unsigned long long)i * bps % p.region); };
    auto bulk_off = [&](unsigned i) {
        return p.bulk_base + blockIdx.x * p.bulk_span + (unsigned long long)(i % p.bulk_region) * p.bulk;
    };
    auto issue = [&](unsigned i) {
        uint8_t *dst = smem + (i % S) * B;
        sg_mbar_arrive_expect_tx(&full[i % S], B);
        for (unsigned t = 0; t < p.copies; t++) {
            const int kb = (int)(kb0(i) + t * p.blocks);
            if (p.blocks == 1) sg_tma_load_2d(dst + t * box, &map, &full[i % S], 64 * kb, (int)row0);
            else sg_tma_load_3d(dst + t * p.blocks * box, &map, &full[i % S], 0, (int)row0, kb);
        }
        if (p.bulk) sg_bulk_load(dst + BT, p.bulk_buf + bulk_off(i), p.bulk, &full[i % S]);
    };
    const unsigned long long c0 = clock64(), g0 = sg_globaltimer();
    for (unsigned i = 0; i < S && i < p.chunks; i++) issue(i);
    unsigned long long bad = 0, seen = 0;
    for (unsigned i = 0; i < p.chunks; i++) {
        sg_mbar_wait(&full[i % S], (i / S) & 1);
        const unsigned q = i % bps, r = 7u * i % p.box_rows, c = 3u * i % 8u;
        const unsigned got =
            *reinterpret_cast<const unsigned *>(smem + (i % S) * B + q * box + r * 128u + ((c ^ (r % 8u)) << 4));
        const unsigned long long byte =
            p.base + ((unsigned long long)(row0 + r) * p.cols + 64ull * (kb0(i) + q) + 8u * c) * 2u;
        bad += got != sg_ingest_word(byte / 4);
        if (p.bulk) {
            const unsigned w = i * 61u % (p.bulk / 4);
            const unsigned *b = reinterpret_cast<const unsigned *>(smem + (i % S) * B + BT);
            bad += b[w] != sg_ingest_word(bulk_off(i) / 4 + w);
        }
        seen++;
        if (i + S < p.chunks) issue(i + S);
    }
    sg_ingest_stats(p.stats, bad, seen, c0, g0);
}

// ------------------------------------------------------------------------------------ fence under bulk copies
#define SG_FENCE_THREADS 160  // warp 0: the producer (lane 0); warps 1-4: the consumer group (named barrier 1)
#define SG_FENCE_STAGE (48 * 1024)
#define SG_FENCE_STAGING (32 * 1024)
static_assert(3 * SG_FENCE_STAGE + SG_FENCE_STAGING <= SG_CHAIN_SMEM, "ring + staging fit the CTA's smem");

struct sg_fence_params {
    const uint8_t *buf;      // L2-resident source: CTA c cycles through its own SG_FENCE_REGION bytes
    unsigned long long *out; // per CTA {fence cycles, loop cycles, copies, bad}; then CTA 0's clock64, %globaltimer
    int iters, load, fence;
};
#define SG_FENCE_REGION (144 * 1024)

__global__ void __launch_bounds__(SG_FENCE_THREADS, 1) sg_chain_fence_kernel(sg_fence_params p) {
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ uint64_t full[3];
    __shared__ int stop;  // set by consumer 0 when done, polled by the producer: shared atomics (no race)
    uint8_t *staging = smem + 3 * SG_FENCE_STAGE;
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < 3; s++) sg_mbar_init(&full[s], 1);
        sg_fence_mbar_init();
        stop = 0;
    }
    __syncthreads();
    unsigned long long *o = p.out + 4 * blockIdx.x;
    if (tid < 32) {  // the producer: keep three copies in flight until the consumers are done, then drain
        if (tid != 0 || !p.load) return;
        const uint8_t *src = p.buf + (size_t)blockIdx.x * SG_FENCE_REGION;
        unsigned long long n = 0;
        for (int s = 0; s < 3; s++) {
            sg_mbar_arrive_expect_tx(&full[s], SG_FENCE_STAGE);
            sg_bulk_load(smem + s * SG_FENCE_STAGE, src + s * SG_FENCE_STAGE, SG_FENCE_STAGE, &full[s]);
        }
        for (unsigned i = 0;; i++) {
            sg_mbar_wait(&full[i % 3], (i / 3) & 1);
            n++;
            if (atomicOr(&stop, 0)) {  // the two other stages still in flight: wait for them before the CTA may exit
                for (unsigned j = i + 1; j < i + 3; j++) sg_mbar_wait(&full[j % 3], (j / 3) & 1);
                break;
            }
            sg_mbar_arrive_expect_tx(&full[i % 3], SG_FENCE_STAGE);  // nobody reads the ring: no WAR to order
            sg_bulk_load(smem + (i % 3) * SG_FENCE_STAGE, src + (i % 3) * SG_FENCE_STAGE, SG_FENCE_STAGE, &full[i % 3]);
        }
        o[2] = n + 2;
        return;
    }
    const int t = tid - 32;  // consumer thread 0 .. 127
    uint4 *mine = reinterpret_cast<uint4 *>(staging) + 16 * t;
    unsigned long long fc = 0;
    const unsigned long long c0 = clock64(), g0 = sg_globaltimer();
    for (int it = 0; it < p.iters; it++) {
#pragma unroll
        for (int j = 0; j < 16; j++) mine[j] = make_uint4(it, t, j, it ^ t);
        const unsigned long long f0 = clock64();
        if (p.fence) sg_fence_proxy_async_smem();
        fc += clock64() - f0;
        sg_named_bar(1, 128);
    }
    const unsigned long long c1 = clock64(), g1 = sg_globaltimer();
    long long bad = 0;
    for (int j = 0; j < 16; j++) {
        const uint4 v = mine[j];
        const int it = p.iters - 1;
        bad += v.x != (unsigned)it || v.y != (unsigned)t || v.z != (unsigned)j || v.w != (unsigned)(it ^ t);
    }
    if (bad) atomicAdd(&o[3], (unsigned long long)bad);  // o[] is zeroed before the launch
    sg_named_bar(1, 128);
    if (t == 0) {
        atomicExch(&stop, 1);
        o[0] = fc;
        o[1] = c1 - c0;
        if (blockIdx.x == 0) {
            unsigned long long *c = p.out + 4 * gridDim.x;
            c[0] = c0, c[1] = g0, c[2] = c1, c[3] = g1;
        }
    }
}

// ------------------------------------------------------------------------------------------------ wgmma chain
// Experiment 6 (sm90_chain_lab.h). The tiles are written with ordinary stores in the 128-byte swizzle TMA would
// use (16-byte chunk c of row r at c ^ (r % 8)), fenced for the async proxy the wgmma reads through.
__device__ __forceinline__ float sg_mma_a(int r, int k) { return (float)((3 * r + k) % 7 - 3); }
__device__ __forceinline__ float sg_mma_b(int j, int k) { return (float)((5 * j + k) % 5 - 2); }
__device__ __forceinline__ void sg_mma_fill(uint8_t *tile, int rows, float (*f)(int, int)) {
    for (int e = threadIdx.x; e < rows * 64; e += blockDim.x) {
        const int r = e / 64, k = e % 64;
        *reinterpret_cast<__nv_bfloat16 *>(tile + r * 128 + ((((k / 8) ^ (r % 8)) * 16)) + (k % 8) * 2) =
            __float2bfloat16(f(r, k));
    }
}
// The end of a timed chain: thread 0 of warpgroup wg records its clock64 ticks and %globaltimer ns since (c0, g0).
__device__ __forceinline__ void sg_mma_stamp(int wg, long long c0, unsigned long long g0, long long *cyc,
                                             long long *t_ns) {
    const long long c1 = clock64();
    const unsigned long long g1 = sg_globaltimer();
    if (threadIdx.x % 128 == 0) {
        cyc[wg] = c1 - c0;
        t_ns[wg] = (long long)(g1 - g0);
    }
}
// A warpgroup's 64 x 2R accumulator tile into out (row stride ld): register k is row 16 warp + lane / 4 + 8 ((k / 2)
// % 2), column 8 (k / 4) + 2 (lane % 4) + k % 2.
template <int R>
__device__ __forceinline__ void sg_mma_store(const float (&acc)[R], float *out, int ld) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
#pragma unroll
    for (int k = 0; k < R; k++) {
        const int row = 16 * warp + lane / 4 + 8 * ((k / 2) % 2), col = 8 * (k / 4) + 2 * (lane % 4) + k % 2;
        out[(size_t)row * ld + col] = acc[k];
    }
}
template <int N>
__device__ __forceinline__ void sg_mma_step(float (&d)[N / 2], uint64_t da, uint64_t db) {
    if constexpr (N == 32) sg_wgmma_ss_n32(d, da, db, 1);
    else if constexpr (N == 64) sg_wgmma_ss_n64(d, da, db, 1);
    else if constexpr (N == 128) sg_wgmma_ss_n128(d, da, db, 1);
    else sg_wgmma_ss_n256(d, da, db, 1);
}
// out: [wg][chain][64][N] floats; cyc: [wg] clock64 ticks of the chain, t_ns: [wg] %globaltimer ns.
// G: steps per commit, a compile-time constant (a multiple of 4) so the group's wgmma are straight-line code: with a
// run-time inner loop ptxas inserts its own warpgroup.arrive between them (C7519), which serialises the chain.
template <int N, int CH, int G>
__global__ void __launch_bounds__(256, 1) sg_chain_mma_kernel(int steps, float *out, long long *cyc, long long *t_ns) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t *ta = sg_align1024(smem_raw);
    uint8_t *tb = ta + 64 * 128;
    sg_mma_fill(ta, 64, sg_mma_a);
    sg_mma_fill(tb, N, sg_mma_b);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128;
    float acc[CH][N / 2];
#pragma unroll
    for (int c = 0; c < CH; c++)
#pragma unroll
        for (int i = 0; i < N / 2; i++) acc[c][i] = 0.0f;
    const uint64_t da = sg_smem_desc(ta, 16, 1024), db = sg_smem_desc(tb, 16, 1024);
    const long long c0 = clock64();
    const unsigned long long g0 = sg_globaltimer();
    static_assert(G % 4 == 0, "a group is whole K blocks: its step j uses k16 slice j % 4");
    for (int s0 = 0; s0 < steps; s0 += G) {
#pragma unroll
        for (int c = 0; c < CH; c++) sg_wgmma_fence_regs(acc[c]);
        sg_wgmma_fence();
#pragma unroll
        for (int j = 0; j < G; j++) {
            const int kk = j & 3;  // +32 bytes per k16 slice = +2 in the descriptors' address field
#pragma unroll
            for (int c = 0; c < CH; c++) sg_mma_step<N>(acc[c], da + 2 * kk, db + 2 * kk);
        }
        sg_wgmma_commit();
#pragma unroll
        for (int c = 0; c < CH; c++) sg_wgmma_fence_regs(acc[c]);
        sg_wgmma_wait<1>();
    }
    sg_wgmma_wait<0>();
#pragma unroll
    for (int c = 0; c < CH; c++) sg_wgmma_fence_regs(acc[c]);
    sg_mma_stamp(wg, c0, g0, cyc, t_ns);
#pragma unroll
    for (int c = 0; c < CH; c++) sg_mma_store(acc[c], out + (size_t)(wg * CH + c) * 64 * N, N);
}

// Experiment 6's second kernel: the megakernel's small-task K loop around the same chain (FC2's 64 x 64 task at batch
// 1: two warpgroups, m64n32k16 each, three K blocks a 48 KB stage, a 4-stage ring), so the loop's own cost shows
// beside table 6's bare chain. The stages are filled once (every K block the same A / W tiles, so the sums are table
// 6's); a producer thread (warp 8) waits each stage's empty barrier and arrives on its full one with no copy, as the
// megakernel's producer does with the bytes already there; the consumers wait full, build the stage's descriptors,
// run its 12 steps, commit, wait_group 1 and free the previous stage. UNIFORM: the warpgroup and stage indices
// broadcast from lane 0 (v55) or per thread (before v55).
#define SG_MMA_RING_STAGES 4
#define SG_MMA_STAGE (48 * 1024)
#define SG_MMA_BLOCK (16 * 1024)  // a K block: A 64 x 64 bf16, then W 64 x 64
// The consumers' side of experiment 6's ring and experiment 7's task: `stages` stages of three K blocks each (A at
// j STEP into the stage, this warpgroup's 32 W rows at W0 + j STEP + 32 wg rows), twelve m64n32k16 a stage, a commit,
// wait_group 1, the previous stage freed (one arrival per warpgroup). UNIFORM: the stage index broadcast from lane 0
// (v55) or per thread. Returns the %globaltimer at which the first stage had landed.
template <bool UNIFORM, uint32_t STEP, uint32_t W0>
__device__ __forceinline__ unsigned long long sg_mma_ring_consume(float (&acc)[16], const uint8_t *ring, uint64_t *full,
                                                                  uint64_t *empty, int stages, int wg) {
    const int t = threadIdx.x % 128;
    uint32_t stage = 0, phase = 0;
    unsigned long long g_first = 0;
    for (int left = stages; left > 0; left--) {
        sg_mbar_wait(&full[stage], phase);
        if (left == stages) g_first = sg_globaltimer();
        const uint32_t st = UNIFORM ? __shfl_sync(0xffffffffu, stage, 0) : stage;
        const uint8_t *a = ring + st * SG_MMA_STAGE;
        sg_wgmma_fence_regs(acc);
        sg_wgmma_fence();
#pragma unroll
        for (int j = 0; j < 3; j++) {
            const uint64_t dj = sg_smem_desc(a + j * STEP, 16, 1024),
                           dw = sg_smem_desc(a + W0 + j * STEP + wg * 32 * 128, 16, 1024);
#pragma unroll
            for (int kk = 0; kk < 4; kk++) sg_wgmma_ss_n32(acc, dj + 2 * kk, dw + 2 * kk, 1);
        }
        sg_wgmma_commit();
        sg_wgmma_fence_regs(acc);
        sg_wgmma_wait<1>();
        if (left < stages && t == 0)
            sg_mbar_arrive(&empty[(stage + SG_MMA_RING_STAGES - 1) % SG_MMA_RING_STAGES]);
        if (++stage == SG_MMA_RING_STAGES) {
            stage = 0;
            phase ^= 1u;
        }
    }
    sg_wgmma_wait<0>();
    sg_wgmma_fence_regs(acc);
    if (t == 0) sg_mbar_arrive(&empty[(stage + SG_MMA_RING_STAGES - 1) % SG_MMA_RING_STAGES]);
    return g_first;
}
template <bool UNIFORM>
__global__ void __launch_bounds__(288, 1) sg_chain_mma_ring_kernel(int stages_total, float *out, long long *cyc,
                                                                  long long *t_ns) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_MMA_RING_STAGES], empty[SG_MMA_RING_STAGES];
    uint8_t *ring = sg_align1024(smem_raw);
    for (int b = 0; b < SG_MMA_RING_STAGES * 3; b++) {
        uint8_t *blk = ring + (b / 3) * SG_MMA_STAGE + (b % 3) * SG_MMA_BLOCK;
        sg_mma_fill(blk, 64, sg_mma_a);
        sg_mma_fill(blk + 8192, 64, sg_mma_b);
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_MMA_RING_STAGES; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], 2);
        }
        sg_fence_mbar_init();
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int wg = UNIFORM ? __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0) : (int)threadIdx.x / 128;
    if (wg == 2) {  // the producer
        if (threadIdx.x == 256)
            for (int i = 0; i < stages_total; i++) {
                const int s = i % SG_MMA_RING_STAGES;
                sg_mbar_wait(&empty[s], ((i / SG_MMA_RING_STAGES) & 1) ^ 1u);
                sg_mbar_arrive(&full[s]);
            }
        return;
    }
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; i++) acc[i] = 0.0f;
    const long long c0 = clock64();
    const unsigned long long g0 = sg_globaltimer();
    sg_mma_ring_consume<UNIFORM, SG_MMA_BLOCK, 8192>(acc, ring, full, empty, stages_total, wg);
    sg_mma_stamp(wg, c0, g0, cyc, t_ns);
    sg_mma_store(acc, out + (size_t)wg * 64 * 32, 32);  // warpgroup wg's 32 columns are B rows 32 wg..
}

// Experiment 7 (sm90_chain_lab.h): the loop above with its bytes. Each CTA is one 64 x 64 task of a GEMM (FC2 at
// batch 1: row half rh = CTA % row_halves, column tile ct = CTA / row_halves), K / 192 stages of three K blocks of A
// (64 rows) and W (64 rows), copied from global memory by the producer thread: MODE 0 as the megakernel (six tensor-map
// boxes of 8 KB a stage, A and W of a K block side by side), MODE 1 the same stage from pre-swizzled K-block-major
// copies of A and W by six 1-D bulk copies of 8 KB, MODE 2 by two bulk copies of 24 KB (the stage's three A blocks,
// then its three W blocks), MODE 3 as MODE 0 with the two tensor maps read from global memory (as the megakernel's,
// whose maps are a device array) instead of the kernel's parameters. The consumers are the ring kernel's (uniform
// indices), with the stage's block offsets.
#define SG_TASK_KB 8192  // one K block of a 64-row operand: 64 x 64 bf16, 128-byte swizzled
struct sg_task_params {
    const uint8_t *a_blk, *w_blk;  // [row half][K block][8 KB], [column tile][K block][8 KB]
    const CUtensorMap *gmaps;      // MODE 3: mapA, mapW in global memory
    int kblocks, row_halves;
    float *out;                    // [64 row_halves][64 column tiles]
    long long *t;                  // per CTA: loop ns, first stage's wait ns, loop clock64 cycles
    unsigned *done;                // per task, zeroed before a launch: POLL's flag
    const uint8_t *bg_buf;         // bg > 0: the SMs without a task stream their own region of this buffer
    unsigned long long bg_span;    // ... bg_span bytes each (a multiple of 48 KB), in 48 KB bulk copies, 4 in flight,
    int bg;                        // until every task has ended (done[tasks]): the traffic of a neighbouring stage
    int tasks, place;              // place 0: CTA c runs task c (grid = tasks); else grid = every SM and the CTA on
                                   // SM s runs task s (1: SMs 0 .. tasks-1), s / 2 for even s (2: one SM of each
                                   // pair), or SMs - 1 - s (3: the highest SM ids), if below tasks
    int poll;                      // 1: the producer thread, its loads issued, polls done[task] as the megakernel's
                                   // producer polls its next task's inputs (sg_dep_wait), until the consumers end;
                                   // 2: every CTA's producer (those without a task too) polls one shared word,
                                   // done[tasks], until every task has ended (the megakernel's idle CTAs all poll
                                   // the counter of the stage they wait for)
};
// A stage's layout: K block j's A at j STEP, its W at W0 + j STEP (modes 0, 1 as the megakernel: A and W of a block
// side by side; mode 2: the three A blocks, then the three W blocks).
template <int MODE>
struct sg_task_stage {
    static constexpr uint32_t STEP = MODE == 2 ? SG_TASK_KB : 2 * SG_TASK_KB, W0 = MODE == 2 ? 3 * SG_TASK_KB : SG_TASK_KB;
};
template <int MODE>
__device__ __forceinline__ uint32_t sg_task_a_off(int j) { return j * sg_task_stage<MODE>::STEP; }
template <int MODE>
__device__ __forceinline__ uint32_t sg_task_w_off(int j) { return sg_task_stage<MODE>::W0 + j * sg_task_stage<MODE>::STEP; }
template <int MODE>
__global__ void __launch_bounds__(288, 1) sg_chain_task_kernel(const __grid_constant__ CUtensorMap mapA,
                                                               const __grid_constant__ CUtensorMap mapW,
                                                               sg_task_params p) {
    extern __shared__ uint8_t smem_raw[];
    __shared__ uint64_t full[SG_MMA_RING_STAGES], empty[SG_MMA_RING_STAGES];
    const int sm = sg_smid();
    const int ti = p.place == 0 ? (int)blockIdx.x : p.place == 1 ? sm : p.place == 2 ? (sm % 2 ? p.tasks : sm / 2)
                                                                                   : (int)gridDim.x - 1 - sm;
    uint8_t *ring = sg_align1024(smem_raw);
    if (ti >= p.tasks) {  // the whole CTA: its SM runs no task (poll 2: its thread 0 polls the shared word)
        if (threadIdx.x != 0) return;
        if (p.bg) {  // stream this SM's region until the tasks end, then drain the copies in flight
            for (int s = 0; s < SG_MMA_RING_STAGES; s++) sg_mbar_init(&full[s], 1);
            sg_fence_mbar_init();
            const unsigned long long chunks = p.bg_span / SG_MMA_STAGE;
            auto issue = [&](unsigned i) {
                const int s = (int)(i % SG_MMA_RING_STAGES);
                sg_mbar_arrive_expect_tx(&full[s], SG_MMA_STAGE);
                sg_bulk_load(ring + s * SG_MMA_STAGE, p.bg_buf + sm * p.bg_span + (i % chunks) * SG_MMA_STAGE,
                             SG_MMA_STAGE, &full[s]);
            };
            unsigned i = 0;
            for (; i < SG_MMA_RING_STAGES; i++) issue(i);
            for (;; i++) {  // copy i - 4 has landed before copy i reuses its stage
                sg_mbar_wait(&full[i % SG_MMA_RING_STAGES], ((i / SG_MMA_RING_STAGES) - 1) & 1);
                if (sg_ld_acquire(p.done + p.tasks) >= (unsigned)p.tasks) break;
                issue(i);
            }
            for (unsigned j = i + 1; j < i + SG_MMA_RING_STAGES; j++)  // copies i - 3 .. i - 1
                sg_mbar_wait(&full[j % SG_MMA_RING_STAGES], ((j / SG_MMA_RING_STAGES) - 1) & 1);
        } else if (p.poll == 2) {
            sg_dep_wait(p.done + p.tasks, (unsigned)p.tasks);
        }
        return;
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < SG_MMA_RING_STAGES; s++) {
            sg_mbar_init(&full[s], 1);
            sg_mbar_init(&empty[s], 2);
        }
        sg_fence_mbar_init();
    }
    __syncthreads();
    const int rh = ti % p.row_halves, ct = ti / p.row_halves, stages_total = p.kblocks / 3;
    const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
    const unsigned long long g0 = sg_globaltimer();
    const long long c0 = clock64();
    if (wg == 2) {  // the producer
        if (threadIdx.x == 256) {
            const CUtensorMap *ma = MODE == 3 ? p.gmaps : &mapA, *mw = MODE == 3 ? p.gmaps + 1 : &mapW;
            if (MODE == 0 || MODE == 3) {
                sg_tma_prefetch_desc(ma);
                sg_tma_prefetch_desc(mw);
            }
            const uint8_t *a = p.a_blk + (size_t)rh * p.kblocks * SG_TASK_KB,
                          *w = p.w_blk + (size_t)ct * p.kblocks * SG_TASK_KB;
            for (int i = 0; i < stages_total; i++) {
                const int s = i % SG_MMA_RING_STAGES, kb = 3 * i;  // (the copies below as MODE picks)
                sg_mbar_wait(&empty[s], ((i / SG_MMA_RING_STAGES) & 1) ^ 1u);
                uint8_t *dst = ring + s * SG_MMA_STAGE;
                sg_mbar_arrive_expect_tx(&full[s], SG_MMA_STAGE);
                if (MODE == 2) {
                    sg_bulk_load(dst, a + (size_t)kb * SG_TASK_KB, 3 * SG_TASK_KB, &full[s]);
                    sg_bulk_load(dst + 3 * SG_TASK_KB, w + (size_t)kb * SG_TASK_KB, 3 * SG_TASK_KB, &full[s]);
                } else {
#pragma unroll
                    for (int j = 0; j < 3; j++) {
                        if (MODE == 0 || MODE == 3) {
                            sg_tma_load_2d(dst + sg_task_a_off<MODE>(j), ma, &full[s], 64 * (kb + j), 64 * rh);
                            sg_tma_load_2d(dst + sg_task_w_off<MODE>(j), mw, &full[s], 64 * (kb + j), 64 * ct);
                        } else {
                            sg_bulk_load(dst + sg_task_a_off<MODE>(j), a + (size_t)(kb + j) * SG_TASK_KB, SG_TASK_KB,
                                         &full[s]);
                            sg_bulk_load(dst + sg_task_w_off<MODE>(j), w + (size_t)(kb + j) * SG_TASK_KB, SG_TASK_KB,
                                         &full[s]);
                        }
                    }
                }
            }
            if (p.poll) sg_dep_wait(p.poll == 2 ? p.done + p.tasks : p.done + ti, p.poll == 2 ? p.tasks : 1u);
        }
        return;
    }
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; i++) acc[i] = 0.0f;
    const unsigned long long g_first = sg_mma_ring_consume<true, sg_task_stage<MODE>::STEP, sg_task_stage<MODE>::W0>(
        acc, ring, full, empty, stages_total, wg);
    const long long c1 = clock64();
    const unsigned long long g1 = sg_globaltimer();
    if (threadIdx.x == 0) {
        if (p.poll == 1) sg_red_release_add(p.done + ti, 1u);
        if (p.poll == 2 || p.bg) sg_red_release_add(p.done + p.tasks, 1u);
        p.t[3 * ti] = (long long)(g1 - g0);
        p.t[3 * ti + 1] = (long long)(g_first - g0);
        p.t[3 * ti + 2] = c1 - c0;
    }
    const int ld = 64 * (p.tasks / p.row_halves);
    sg_mma_store(acc, p.out + (size_t)rh * 64 * ld + ct * 64 + wg * 32, ld);
}

__global__ void sg_chain_fill(unsigned *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = sg_ingest_word(i);
}

// ---------------------------------------------------------------------------------------------------- host
extern "C" int sg_sm90_chain_available(char *err, size_t errlen) { return sg_lab_sm90_sms(err, errlen); }

// Sets the kernel's shared memory and checks that exactly one CTA of `threads` fits per SM (what every experiment
// here assumes).
template <class K>
static int sg_chain_one_per_sm(K kern, int threads, char *err, size_t errlen) {
    SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SG_CHAIN_SMEM));
    int per_sm = 0;
    SG_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, SG_CHAIN_SMEM));
    if (per_sm != 1) snprintf(err, errlen, "expected exactly 1 CTA per SM with %d B of shared memory, got %d",
                              SG_CHAIN_SMEM, per_sm);
    return per_sm == 1;
}

static double sg_median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

// A buffer of `bytes` (a multiple of 4) holding the ingest pattern (sm90_chain_lab.h).
static uint8_t *sg_ingest_buffer(long long bytes) {
    uint8_t *buf = NULL;
    int sms = 0;
    SG_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    SG_CK(cudaMalloc(&buf, bytes));
    sg_chain_fill<<<4 * sms, 256>>>(reinterpret_cast<unsigned *>(buf), bytes / 4);
    SG_CK(cudaGetLastError());
    return buf;
}

// Times launch(rep, stats) for rep = 0 (warm-up: code, TLB, the L2 sources made resident) .. reps with CUDA events
// and fills r from the median and the last launch's per-CTA stats ({bad, chunks} per CTA, then CTA 0's clock64
// and %globaltimer at start and end).
template <class Launch>
static void sg_ingest_measure(long long N, long long R, int reps, sg_chain_ingest_result *r, Launch launch) {
    const size_t stat_bytes = (2 * N + 4) * sizeof(unsigned long long);
    unsigned long long *stats = NULL;
    SG_CK(cudaMalloc(&stats, stat_bytes));
    cudaEvent_t e0, e1;
    SG_CK(cudaEventCreate(&e0));
    SG_CK(cudaEventCreate(&e1));
    std::vector<double> us;
    for (int rep = 0; rep <= reps; rep++) {
        SG_CK(cudaMemset(stats, 0xFF, stat_bytes));
        SG_CK(cudaEventRecord(e0));
        launch(rep, stats);
        SG_CK(cudaEventRecord(e1));
        SG_CK(cudaEventSynchronize(e1));
        SG_CK(cudaGetLastError());
        float ms = 0;
        SG_CK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep) us.push_back(1000.0 * ms);
    }
    std::vector<unsigned long long> st(2 * N + 4);
    SG_CK(cudaMemcpy(st.data(), stats, stat_bytes, cudaMemcpyDeviceToHost));
    r->us = sg_median(us);
    r->gbs_cta = R / (r->us * 1e3);
    r->gbs_total = N * R / (r->us * 1e3);
    r->bad = r->chunks = 0;
    for (long long i = 0; i < N; i++) {
        r->bad += (long long)st[2 * i];
        r->chunks += (long long)st[2 * i + 1];
    }
    const double clk = (double)(st[2 * N + 2] - st[2 * N]), ns = (double)(st[2 * N + 3] - st[2 * N + 1]);
    r->gbs_cta0 = ns > 0 ? R / ns : 0;
    r->mhz = ns > 0 ? 1000.0 * clk / ns : 0;
    SG_CK(cudaEventDestroy(e0));
    SG_CK(cudaEventDestroy(e1));
    SG_CK(cudaFree(stats));
}

extern "C" int sg_sm90_chain_hops(const sg_chain_hop_cfg *c, sg_chain_hop_result *r, char *err, size_t errlen) {
    const int sms = sg_sm90_chain_available(err, errlen);
    if (!sms) return -1;
    const int P = c->ctas ? c->ctas : sms, H = c->hops, D = c->bytes;
    if (H < 1 || D < 0 || D % 16 || D > SG_CHAIN_MAX_BYTES || P < 2 || P > sms || c->reps < 1 || (D && !c->in)) {
        snprintf(err, errlen, "sm90 chain hops: bad config H %d D %d ctas %d reps %d (need H >= 1, D a multiple of "
                 "16 in 0 .. %d with input, ctas 2 .. %d, reps >= 1)", H, D, P, c->reps, SG_CHAIN_MAX_BYTES, sms);
        return -1;
    }
    // Stride: coprime with P (every CTA gets hops) and near P / 2, so consecutive hops land on distant CTAs.
    int stride = P == 2 ? 1 : P / 2 + 1;
    while (std::gcd(stride, P) != 1) stride++;
    int inv = 1;
    while ((long long)inv * stride % P != 1) inv++;  // P >= 2
    void (*kern)(sg_hop_params) = c->spin ? sg_chain_hop_kernel<false> : sg_chain_hop_kernel<true>;
    if (!sg_chain_one_per_sm(kern, SG_CHAIN_THREADS, err, errlen)) return -1;

    const size_t flag_bytes = (size_t)(H + 3) * SG_CHAIN_FLAG_WORDS * 4;
    sg_hop_params p = {NULL, NULL, NULL, NULL, H, D, P, inv};
    if (D) {
        SG_CK(cudaMalloc(&p.regions, (size_t)(H + 2) * D));
        SG_CK(cudaMemcpy(p.regions, c->in, D, cudaMemcpyHostToDevice));
    }
    SG_CK(cudaMalloc(&p.flags, flag_bytes));
    SG_CK(cudaMalloc(&p.t, 2 * sizeof(unsigned long long)));
    SG_CK(cudaMalloc(&p.smid, sms * sizeof(int)));
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;  // all CTAs resident (they wait on each other), or the launch fails
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms);
    cfg.blockDim = dim3(SG_CHAIN_THREADS);
    cfg.dynamicSmemBytes = SG_CHAIN_SMEM;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    const sg_lab_hop_ns ns = sg_lab_time_hops(
        c->reps, H, p.t,
        [&] {
            SG_CK(cudaMemset(p.flags, 0, flag_bytes));
            if (D) SG_CK(cudaMemset(p.regions + D, 0xFF, (size_t)(H + 1) * D));  // a stale read cannot pass the check
        },
        [&] { SG_CK(cudaLaunchKernelEx(&cfg, kern, p)); });
    if (D && c->out) SG_CK(cudaMemcpy(c->out, p.regions + D, (size_t)(H + 1) * D, cudaMemcpyDeviceToHost));
    std::vector<int> smid(sms);
    SG_CK(cudaMemcpy(smid.data(), p.smid, sms * sizeof(int), cudaMemcpyDeviceToHost));
    r->ns_per_hop = ns.median;
    r->ns_min = ns.min;
    r->ns_max = ns.max;
    r->ctas = P;
    r->stride = stride;
    r->sm_hop0 = smid[0];
    r->sm_hop1 = smid[stride % P];
    SG_CK(cudaFree(p.regions));
    SG_CK(cudaFree(p.flags));
    SG_CK(cudaFree(p.t));
    SG_CK(cudaFree(p.smid));
    return 0;
}

extern "C" int sg_sm90_chain_ingest(const sg_chain_ingest_cfg *c, sg_chain_ingest_result *r, char *err,
                                    size_t errlen) {
    const int sms = sg_sm90_chain_available(err, errlen);
    if (!sms) return -1;
    const long long N = c->ctas, B = c->stage_bytes, S = c->stages, R = c->bytes;
    const long long dram = (c->dram_bytes ? c->dram_bytes : 2LL << 30) / 16 * 16;
    if (N < 1 || N > sms || c->source < 0 || c->source > 2 || B < 256 || B % 16 || S < 1 ||
        S > SG_INGEST_MAX_STAGES || S * B > SG_CHAIN_MAX_BYTES || R < B || R % B || R / B > 0x7fffffff ||
        c->reps < 1 || (c->source == SG_INGEST_DRAM && N * R > dram)) {
        snprintf(err, errlen, "sm90 chain ingest: bad config N %lld source %d B %lld S %lld R %lld (need N 1 .. %d, "
                 "B >= 256 a multiple of 16, S 1 .. %d, S B <= %d, R a multiple of B, N R <= the DRAM buffer)",
                 N, c->source, B, S, R, sms, SG_INGEST_MAX_STAGES, SG_CHAIN_MAX_BYTES);
        return -1;
    }
    sg_ingest_params p = {};
    long long buf_bytes;
    p.chunks = (unsigned)(R / B);
    if (c->source == SG_INGEST_SHARED) {
        p.region = (unsigned)(SG_INGEST_SHARED_BYTES / B);
        p.span = 0;
        buf_bytes = p.region * B;
    } else if (c->source == SG_INGEST_L2) {
        p.region = (unsigned)(std::min<long long>(R, SG_INGEST_L2_BYTES / N) / B);
        p.span = p.region * B;
        buf_bytes = N * p.span;
    } else {
        p.region = p.chunks;
        p.span = R;
        buf_bytes = dram;
    }
    if (p.region == 0) {
        snprintf(err, errlen, "sm90 chain ingest: a stage of %lld B exceeds the region each CTA reads", B);
        return -1;
    }
    p.stage_bytes = (unsigned)B;
    p.stages = (unsigned)S;
    void (*kern)(sg_ingest_params) = c->fence ? sg_chain_ingest_kernel<true> : sg_chain_ingest_kernel<false>;
    if (!sg_chain_one_per_sm(kern, SG_CHAIN_THREADS, err, errlen)) return -1;
    uint8_t *buf = sg_ingest_buffer(buf_bytes);
    p.buf = buf;
    // DRAM: each launch reads the next window of N R bytes, so none finds the previous launch's tail in L2.
    const long long windows = c->source == SG_INGEST_DRAM ? dram / (N * R) : 1;
    sg_ingest_measure(N, R, c->reps, r, [&](int rep, unsigned long long *stats) {
        p.base = (unsigned long long)(rep % windows) * (N * R);
        p.stats = stats;
        kern<<<(unsigned)N, SG_CHAIN_THREADS, SG_CHAIN_SMEM>>>(p);
    });
    SG_CK(cudaFree(buf));
    return 0;
}

extern "C" int sg_sm90_chain_tingest(const sg_chain_tingest_cfg *c, sg_chain_ingest_result *r, char *err,
                                     size_t errlen) {
    const int sms = sg_sm90_chain_available(err, errlen);
    if (!sms) return -1;
    const long long N = c->ctas, S = c->stages, R = c->bytes, box = (long long)c->box_rows * 128;
    const long long bps = (long long)c->copies * c->blocks, BT = bps * box, B = BT + c->bulk;
    if (N < 1 || N > sms || c->source < 0 || c->source > 2 || (c->box_rows != 64 && c->box_rows != 128) ||
        c->blocks < 1 || c->blocks > 8 || c->copies < 1 || c->bulk < 0 || c->bulk % 1024 || S < 1 ||
        S > SG_INGEST_MAX_STAGES ||
        S * B > SG_CHAIN_MAX_BYTES || R < B || R % B || R / B > 0x7fffffff || c->reps < 1) {
        snprintf(err, errlen, "sm90 chain tingest: bad config N %lld source %d box rows %d blocks %d copies %d S %lld "
                 "R %lld (need N 1 .. %d, box rows 64 or 128, blocks 1 .. 8, bulk a multiple of 1 KB, S 1 .. %d, "
                 "S B <= %d, R a multiple of B)", N, c->source, c->box_rows, c->blocks, c->copies, S, R, sms, SG_INGEST_MAX_STAGES,
                 SG_CHAIN_MAX_BYTES);
        return -1;
    }
    sg_tingest_params p = {};
    p.chunks = (unsigned)(R / B);
    // The panel's K blocks: a multiple of the stage's, as many as the source's bytes allow.
    const long long target = c->source == SG_INGEST_SHARED ? SG_INGEST_SHARED_BYTES
                             : c->source == SG_INGEST_L2   ? std::min<long long>(R, SG_INGEST_L2_BYTES / N)
                                                           : R;
    p.region = (unsigned)(std::min(target, R / B * BT) / box / bps * bps);
    if (p.region == 0) {
        snprintf(err, errlen, "sm90 chain tingest: a stage of %lld B exceeds the region each CTA reads", B);
        return -1;
    }
    p.cols = 64ull * p.region;
    p.box_rows = (unsigned)c->box_rows;
    p.blocks = (unsigned)c->blocks;
    p.copies = (unsigned)c->copies;
    p.stages = (unsigned)S;
    p.panel_rows = c->source == SG_INGEST_SHARED ? 0u : (unsigned)c->box_rows;
    const long long rows = c->source == SG_INGEST_SHARED ? c->box_rows : N * c->box_rows;
    const long long mat = rows * (long long)p.cols * 2;
    const long long windows = c->source == SG_INGEST_DRAM ? std::max<long long>(1, (2LL << 30) / mat) : 1;
    if (!sg_chain_one_per_sm(sg_chain_tingest_kernel, SG_CHAIN_THREADS, err, errlen)) return -1;
    uint8_t *buf = sg_ingest_buffer(windows * mat), *bulk_buf = NULL;
    // The bulk copies' own buffer, laid out as experiment 2's sources (L2: half its budget, the maps' panels the rest)
    long long bulk_windows = 1;
    p.bulk = (unsigned)c->bulk;
    if (c->bulk) {
        const long long per_cta = p.chunks * (long long)c->bulk;
        const long long l2 = std::min<long long>(per_cta, SG_INGEST_L2_BYTES / 2 / N);
        p.bulk_region = c->source == SG_INGEST_SHARED ? (unsigned)(SG_INGEST_SHARED_BYTES / c->bulk)
                        : c->source == SG_INGEST_L2   ? (unsigned)(l2 / c->bulk)
                                                      : p.chunks;
        p.bulk_span = c->source == SG_INGEST_SHARED ? 0 : (unsigned long long)p.bulk_region * c->bulk;
        const long long one = c->source == SG_INGEST_SHARED ? (long long)p.bulk_region * c->bulk
                                                            : N * (long long)p.bulk_span;
        if (c->source == SG_INGEST_DRAM) bulk_windows = std::max<long long>(1, (1LL << 30) / one);
        if (p.bulk_region == 0) {
            snprintf(err, errlen, "sm90 chain tingest: a bulk copy of %d B exceeds the region each CTA reads", c->bulk);
            SG_CK(cudaFree(buf));
            return -1;
        }
        bulk_buf = sg_ingest_buffer(bulk_windows * one);
        p.bulk_buf = bulk_buf;
    }
    const long long bulk_one = N * (long long)p.bulk_span;
    CUtensorMap map;
    int rc = 0;
    sg_ingest_measure(N, R, c->reps, r, [&](int rep, unsigned long long *stats) {
        p.base = (unsigned long long)(rep % windows) * mat;
        p.bulk_base = (unsigned long long)(rep % bulk_windows) * bulk_one;
        p.stats = stats;
        const void *m0 = buf + p.base;
        if (rc == 0)
            rc = c->blocks == 1 ? sg_tmap_sw128_bf16(&map, m0, rows, p.cols, c->box_rows, 64, err, errlen)
                                : sg_tmap_sw128_kblocks(&map, m0, rows, p.cols, c->box_rows, c->blocks, err, errlen);
        if (rc == 0) sg_chain_tingest_kernel<<<(unsigned)N, SG_CHAIN_THREADS, SG_CHAIN_SMEM>>>(map, p);
    });
    SG_CK(cudaFree(buf));
    if (bulk_buf) SG_CK(cudaFree(bulk_buf));
    return rc;
}

extern "C" int sg_sm90_chain_fence(const sg_chain_fence_cfg *c, sg_chain_fence_result *r, char *err, size_t errlen) {
    const int sms = sg_sm90_chain_available(err, errlen);
    if (!sms) return -1;
    const int N = c->ctas ? c->ctas : sms;
    if (N < 1 || N > sms || c->iters < 1 || (c->load | c->fence) & ~1) {
        snprintf(err, errlen, "sm90 chain fence: bad config N %d iters %d load %d fence %d", N, c->iters, c->load,
                 c->fence);
        return -1;
    }
    if (!sg_chain_one_per_sm(sg_chain_fence_kernel, SG_FENCE_THREADS, err, errlen)) return -1;
    sg_fence_params p = {};
    uint8_t *buf = NULL;
    const size_t buf_bytes = (size_t)N * SG_FENCE_REGION;
    SG_CK(cudaMalloc(&buf, buf_bytes));
    sg_chain_fill<<<4 * sms, 256>>>(reinterpret_cast<unsigned *>(buf), buf_bytes / 4);
    SG_CK(cudaGetLastError());
    const size_t out_bytes = (4 * (size_t)N + 4) * sizeof(unsigned long long);
    SG_CK(cudaMalloc(&p.out, out_bytes));
    p.buf = buf;
    p.iters = c->iters;
    p.load = c->load;
    p.fence = c->fence;
    for (int rep = 0; rep < 2; rep++) {  // rep 0 warms up (code, and the source into L2)
        SG_CK(cudaMemset(p.out, 0, out_bytes));
        sg_chain_fence_kernel<<<N, SG_FENCE_THREADS, SG_CHAIN_SMEM>>>(p);
        SG_CK(cudaGetLastError());
        SG_CK(cudaDeviceSynchronize());
    }
    std::vector<unsigned long long> o(4 * (size_t)N + 4);
    SG_CK(cudaMemcpy(o.data(), p.out, out_bytes, cudaMemcpyDeviceToHost));
    double f = 0, l = 0;
    r->copies = r->bad = 0;
    for (int i = 0; i < N; i++) {
        f += (double)o[4 * i];
        l += (double)o[4 * i + 1];
        r->copies += (long long)o[4 * i + 2];
        r->bad += (long long)o[4 * i + 3];
    }
    r->fence_cycles = f / N / c->iters;
    r->iter_cycles = l / N / c->iters;
    const double clk = (double)(o[4 * N + 2] - o[4 * N]), ns = (double)(o[4 * N + 3] - o[4 * N + 1]);
    r->mhz = ns > 0 ? 1000.0 * clk / ns : 0;
    SG_CK(cudaFree(buf));
    SG_CK(cudaFree(p.out));
    return 0;
}

// Experiment 6's launches and check, for both kernels: `reps` timed launches after a warm-up (the output poisoned
// with NaN before each, so an unwritten value cannot pass), then every accumulator of the last against the CPU's
// integer sums. groups tiles of 64 x cols; column col of tile g used B row brow * g + col (0: the bare chain, whose
// tiles all use B rows 0..; 32: the ring variant, whose warpgroup w owns B rows 32 w..). Step s uses k16 slice s % 4,
// so each slice counts steps / 4 times, or once more for the first steps % 4 slices.
typedef void (*sg_mma_kernel)(int, float *, long long *, long long *);
static void sg_chain_mma_run(const sg_chain_mma_cfg *c, sg_chain_mma_result *r, sg_mma_kernel kern, int arg,
                             int threads, int smem, int groups, int cols, int brow) {
    if (smem > 48 * 1024) SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const size_t words = (size_t)groups * 64 * cols;
    float *d_out;
    long long *d_cyc, *d_ns;
    SG_CK(cudaMalloc(&d_out, words * sizeof(float)));
    SG_CK(cudaMalloc(&d_cyc, 2 * sizeof(long long)));
    SG_CK(cudaMalloc(&d_ns, 2 * sizeof(long long)));
    std::vector<double> per_step;
    long long cyc[2] = {0, 0}, ns[2] = {0, 0};
    for (int rep = 0; rep <= c->reps; rep++) {  // rep 0: warm-up
        SG_CK(cudaMemset(d_out, 0xFF, words * sizeof(float)));
        kern<<<1, threads, smem>>>(arg, d_out, d_cyc, d_ns);
        SG_CK(cudaGetLastError());
        SG_CK(cudaDeviceSynchronize());
        SG_CK(cudaMemcpy(cyc, d_cyc, c->wgs * sizeof(long long), cudaMemcpyDeviceToHost));
        SG_CK(cudaMemcpy(ns, d_ns, c->wgs * sizeof(long long), cudaMemcpyDeviceToHost));
        if (rep > 0) per_step.push_back((double)std::max(cyc[0], c->wgs > 1 ? cyc[1] : 0) / c->steps);
    }
    std::vector<float> out(words);
    SG_CK(cudaMemcpy(out.data(), d_out, words * sizeof(float), cudaMemcpyDeviceToHost));
    long long bad = 0;
    for (int g = 0; g < groups; g++)
        for (int row = 0; row < 64; row++)
            for (int col = 0; col < cols; col++) {
                double sum = 0;
                for (int sl = 0; sl < 4; sl++) {
                    const int times = c->steps / 4 + (sl < c->steps % 4);
                    double dot = 0;
                    for (int k = 16 * sl; k < 16 * sl + 16; k++)
                        dot += (double)((3 * row + k) % 7 - 3) * ((5 * (brow * g + col) + k) % 5 - 2);
                    sum += times * dot;
                }
                if (out[((size_t)g * 64 + row) * cols + col] != (float)sum) bad++;
            }
    r->cycles_per_step = sg_median(per_step);
    r->mhz = ns[0] > 0 ? (double)cyc[0] / ns[0] * 1000.0 : 0;
    r->bad = bad;
    SG_CK(cudaFree(d_out));
    SG_CK(cudaFree(d_cyc));
    SG_CK(cudaFree(d_ns));
}

extern "C" int sg_sm90_chain_mma(const sg_chain_mma_cfg *c, sg_chain_mma_result *r, char *err, size_t errlen) {
    if (sg_sm90_chain_available(err, errlen) <= 0) return -1;
    const int n = c->n;
    if ((n != 32 && n != 64 && n != 128 && n != 256) || c->wgs < 1 || c->wgs > 2 || c->chains < 1 || c->chains > 2 ||
        (c->chains == 2 && n > 128) || (c->group != 4 && c->group != 12) || c->steps < c->group ||
        (c->ring && (n != 32 || c->wgs != 2 || c->chains != 1 || c->group != 12 || c->ring > 2)) ||
        c->steps % c->group || c->steps > 4096 || c->reps < 1) {
        snprintf(err, errlen, "sm90 mma chain: n %d (32, 64, 128, 256), %d warpgroups (1-2), %d chains (1-2; 2 only "
                 "for n <= 128), %d steps in groups of %d (4 or 12, steps a multiple, <= 4096), %d reps, ring %d (1-2: "
                 "only n 32, 2 warpgroups, 1 chain, groups of 12)", n, c->wgs, c->chains, c->steps, c->group, c->reps,
                 c->ring);
        return -1;
    }
    if (c->ring) {  // FC2's 64 x 64 task in the megakernel's loop: 256 consumers + the producer's warp
        sg_chain_mma_run(c, r, c->ring == 1 ? sg_chain_mma_ring_kernel<true> : sg_chain_mma_ring_kernel<false>,
                         c->steps / 12, 288, 1024 + SG_MMA_RING_STAGES * SG_MMA_STAGE, 2, 32, 32);
        return 0;
    }
    static const sg_mma_kernel k4[4][2] = {{sg_chain_mma_kernel<32, 1, 4>, sg_chain_mma_kernel<32, 2, 4>},
                                           {sg_chain_mma_kernel<64, 1, 4>, sg_chain_mma_kernel<64, 2, 4>},
                                           {sg_chain_mma_kernel<128, 1, 4>, sg_chain_mma_kernel<128, 2, 4>},
                                           {sg_chain_mma_kernel<256, 1, 4>, nullptr}};
    static const sg_mma_kernel k12[4][2] = {{sg_chain_mma_kernel<32, 1, 12>, sg_chain_mma_kernel<32, 2, 12>},
                                            {sg_chain_mma_kernel<64, 1, 12>, sg_chain_mma_kernel<64, 2, 12>},
                                            {sg_chain_mma_kernel<128, 1, 12>, sg_chain_mma_kernel<128, 2, 12>},
                                            {sg_chain_mma_kernel<256, 1, 12>, nullptr}};
    const int ni = n == 32 ? 0 : n == 64 ? 1 : n == 128 ? 2 : 3;
    sg_chain_mma_run(c, r, (c->group == 4 ? k4 : k12)[ni][c->chains - 1], c->steps, 128 * c->wgs,
                     1024 + 64 * 128 + n * 128, c->wgs * c->chains, n, 0);
    return 0;
}

// Experiment 7's operands (every value a small integer, exact in bf16, every sum exact in fp32): row-major [rows, K]
// for the tensor maps and its pre-swizzled K-block-major copy [rows / 64][K / 64][64 rows x 128 bytes], each block
// as a 128-byte-swizzle box lands in shared memory (16-byte chunk c of row r at c ^ (r % 8)).
static int sg_task_a(int r, int k) { return (3 * r + k) % 7 - 3; }
static int sg_task_w(int n, int k) { return (2 * n + 3 * k + n / 5) % 5 - 2; }
static void sg_task_operand(int rows, int K, int (*f)(int, int), std::vector<__nv_bfloat16> &rm,
                            std::vector<__nv_bfloat16> &blk) {
    rm.resize((size_t)rows * K);
    blk.resize((size_t)rows * K);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++) {
            const __nv_bfloat16 v = __float2bfloat16((float)f(r, k));
            rm[(size_t)r * K + k] = v;
            const size_t byte = ((size_t)(r / 64) * (K / 64) + k / 64) * SG_TASK_KB + (r % 64) * 128 +
                                ((((k % 64) / 8) ^ (r % 8)) * 16) + (k % 8) * 2;
            blk[byte / 2] = v;
        }
}

template <class T>
static T *sg_task_upload(const std::vector<T> &v) {
    T *d = NULL;
    SG_CK(cudaMalloc(&d, v.size() * sizeof(T)));
    SG_CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

extern "C" int sg_sm90_chain_task(const sg_chain_task_cfg *c, sg_chain_task_result *r, char *err, size_t errlen) {
    const int sms = sg_sm90_chain_available(err, errlen);
    if (!sms) return -1;
    const int N = c->row_halves * c->col_tiles, K = c->k;
    if (c->mode < 0 || c->mode > 3 || c->row_halves < 1 || c->row_halves > 4 || c->col_tiles < 1 || N > sms ||
        K < 192 || K % 192 || K > 6144 || c->cold < 0 || c->cold > 2 || c->poll < 0 || c->poll > 2 || c->place < 0 ||
        c->place > 3 || (c->place == 2 && 2 * N > sms) || c->bg < 0 || c->bg > 2 || (c->bg && !c->place) ||
        c->reps < 1) {
        snprintf(err, errlen, "sm90 chain task: mode %d (0-3), %d row halves (1-4) x %d column tiles (<= %d CTAs, <= %d "
                 "with place 2), K %d (a multiple of 192, <= 6144), cold %d (0-2), poll %d (0-2), place %d (0-3), bg %d "
                 "(0-2, only with place > 0), %d reps", c->mode, c->row_halves, c->col_tiles, sms, sms / 2, K, c->cold,
                 c->poll, c->place, c->bg, c->reps);
        return -1;
    }
    const int rows = 64 * c->row_halves, cols = 64 * c->col_tiles, smem = 1024 + SG_MMA_RING_STAGES * SG_MMA_STAGE;
    std::vector<__nv_bfloat16> a_rm, a_blk, w_rm, w_blk;
    sg_task_operand(rows, K, sg_task_a, a_rm, a_blk);
    sg_task_operand(cols, K, sg_task_w, w_rm, w_blk);
    __nv_bfloat16 *d_a = sg_task_upload(a_rm), *d_ab = sg_task_upload(a_blk), *d_w = sg_task_upload(w_rm),
                  *d_wb = sg_task_upload(w_blk);
    // cold 1: the L2 emptied before each launch by writing a buffer larger than it, then A rewritten, so W comes from
    // DRAM and A from L2, as at batch 1 (the weights streamed once a forward, the activations just written); cold 2:
    // only A rewritten (W in L2, A just written, as inside the megakernel with its weights resident).
    __nv_bfloat16 *d_a0 = c->cold ? sg_task_upload(a_rm) : NULL, *d_ab0 = c->cold ? sg_task_upload(a_blk) : NULL;
    const size_t flush_bytes = 128u << 20, a_bytes = a_rm.size() * sizeof(__nv_bfloat16);
    uint8_t *d_flush = NULL, *d_bg = NULL;
    if (c->cold) SG_CK(cudaMalloc(&d_flush, flush_bytes));
    sg_task_params p = {};
    CUtensorMap *d_maps = NULL;  // mode 3's maps in global memory
    auto release = [&]() {
        for (void *d : {(void *)d_a, (void *)d_ab, (void *)d_w, (void *)d_wb, (void *)d_a0, (void *)d_ab0,
                        (void *)d_flush, (void *)p.out, (void *)p.t, (void *)d_maps, (void *)p.done, (void *)d_bg})
            if (d) SG_CK(cudaFree(d));
    };
    CUtensorMap mapA, mapW;
    if (sg_tmap_sw128_bf16(&mapA, d_a, rows, K, 64, 64, err, errlen) ||
        sg_tmap_sw128_bf16(&mapW, d_w, cols, K, 64, 64, err, errlen)) {
        release();
        return -1;
    }
    p.a_blk = reinterpret_cast<const uint8_t *>(d_ab);
    p.w_blk = reinterpret_cast<const uint8_t *>(d_wb);
    p.kblocks = K / 64;
    p.row_halves = c->row_halves;
    const size_t out_words = (size_t)rows * cols;
    SG_CK(cudaMalloc(&p.out, out_words * sizeof(float)));
    SG_CK(cudaMalloc(&p.t, 3 * (size_t)N * sizeof(long long)));
    SG_CK(cudaMalloc(&p.done, (size_t)(N + 1) * sizeof(unsigned)));
    p.poll = c->poll;
    p.tasks = N;
    p.place = c->place;
    // bg 1: 256 KB a SM (in L2 after the warm-up), 2: 2 MB a SM (168 MB in all: DRAM)
    p.bg = c->bg;
    p.bg_span = c->bg == 2 ? 42ull * SG_MMA_STAGE : 5ull * SG_MMA_STAGE;
    if (c->bg) {
        SG_CK(cudaMalloc(&d_bg, (size_t)sms * p.bg_span));
        SG_CK(cudaMemset(d_bg, 1, (size_t)sms * p.bg_span));
    }
    p.bg_buf = d_bg;
    typedef void (*kern_t)(const CUtensorMap, const CUtensorMap, sg_task_params);
    static const kern_t kerns[4] = {sg_chain_task_kernel<0>, sg_chain_task_kernel<1>, sg_chain_task_kernel<2>,
                                    sg_chain_task_kernel<3>};
    const kern_t kern = kerns[c->mode];
    SG_CK(cudaMalloc(&d_maps, 2 * sizeof(CUtensorMap)));
    SG_CK(cudaMemcpy(d_maps, &mapA, sizeof mapA, cudaMemcpyHostToDevice));
    SG_CK(cudaMemcpy(d_maps + 1, &mapW, sizeof mapW, cudaMemcpyHostToDevice));
    p.gmaps = d_maps;
    SG_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaEvent_t e0, e1;
    SG_CK(cudaEventCreate(&e0));
    SG_CK(cudaEventCreate(&e1));
    std::vector<double> loop_max, loop_med, first, launch, mhz;
    std::vector<long long> t(3 * (size_t)N);
    for (int rep = 0; rep <= c->reps; rep++) {  // rep 0: warm-up
        SG_CK(cudaMemset(p.out, 0xFF, out_words * sizeof(float)));
        SG_CK(cudaMemset(p.done, 0, (size_t)(N + 1) * sizeof(unsigned)));
        if (c->cold) {
            if (c->cold == 1) SG_CK(cudaMemset(d_flush, rep & 255, flush_bytes));
            SG_CK(cudaMemcpy(d_a, d_a0, a_bytes, cudaMemcpyDeviceToDevice));
            SG_CK(cudaMemcpy(d_ab, d_ab0, a_bytes, cudaMemcpyDeviceToDevice));
        }
        SG_CK(cudaEventRecord(e0));
        kern<<<c->place ? sms : N, 288, smem>>>(mapA, mapW, p);
        SG_CK(cudaEventRecord(e1));
        SG_CK(cudaEventSynchronize(e1));
        SG_CK(cudaGetLastError());
        if (!rep) continue;
        float ms = 0;
        SG_CK(cudaEventElapsedTime(&ms, e0, e1));
        launch.push_back(1000.0 * ms);
        SG_CK(cudaMemcpy(t.data(), p.t, t.size() * sizeof(long long), cudaMemcpyDeviceToHost));
        std::vector<double> lp, fs;
        for (int i = 0; i < N; i++) {
            lp.push_back(t[3 * i] / 1e3);
            fs.push_back(t[3 * i + 1] / 1e3);
        }
        loop_max.push_back(*std::max_element(lp.begin(), lp.end()));
        loop_med.push_back(sg_median(lp));
        first.push_back(sg_median(fs));
        mhz.push_back(t[0] > 0 ? (double)t[2] / t[0] * 1e3 : 0);
    }
    std::vector<float> out(out_words);
    SG_CK(cudaMemcpy(out.data(), p.out, out_words * sizeof(float), cudaMemcpyDeviceToHost));
    long long bad = 0;
    std::vector<int> ar(K), wr((size_t)cols * K);
    for (int n = 0; n < cols; n++)
        for (int k = 0; k < K; k++) wr[(size_t)n * K + k] = sg_task_w(n, k);
    for (int row = 0; row < rows; row++) {
        for (int k = 0; k < K; k++) ar[k] = sg_task_a(row, k);
        for (int n = 0; n < cols; n++) {
            int sum = 0;  // |sum| <= 3 x 2 x 6,144
            for (int k = 0; k < K; k++) sum += ar[k] * wr[(size_t)n * K + k];
            bad += out[(size_t)row * cols + n] != (float)sum;
        }
    }
    r->loop_us_max = sg_median(loop_max);
    r->loop_us_med = sg_median(loop_med);
    r->first_us = sg_median(first);
    r->launch_us = sg_median(launch);
    r->gbs_cta = 2.0 * 64 * K * 2 / (r->loop_us_med * 1e3);
    r->mhz = sg_median(mhz);
    r->bad = bad;
    SG_CK(cudaEventDestroy(e0));
    SG_CK(cudaEventDestroy(e1));
    release();
    return 0;
}
