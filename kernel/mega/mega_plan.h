// kernel/mega/mega_plan.h — the task list of the megakernels (the skeleton kernel/mega/mega_kernel.cuh, under
// kernel/sm90/sm90_mega.cu and kernel/sm100/sm100_mega.cu): its tasks, their encoding and counters (shared by the
// kernels and the host), and the host functions that build a launch's list
// and prove it is in dependency order (kernel/mega/mega_plan.c, plain C so CI tests them without a GPU).
//
// One launch runs the whole forward of n images (M = 196 n token rows, tm = ceil(M / 128) row tiles). Every task
// is run by both consumer warpgroups of a CTA; a GEMM task is a 128 x 256 tile, warpgroup w computing its part
// (Hopper: rows 64 w.. of all 256 columns; Blackwell: the 128 x 128 column half w; both parts read the same A block
// from the same ring stage), and each part signals its counter once, so a counter's signals per task are two,
// counted below as 128-column halves. Small batches run narrow launches instead (sg_mega_shape below): 128 x 128 or
// 128 x 64 GEMM tasks, twice or four times as many, whose counts and counter targets below grow as much (and in
// narrow64 launches row-wise tasks of 8 rows, sg_mega_ln_parts); at the fewest images the 768-column kinds run as
// 64 x 64 tasks, eight times as many. Tasks are numbered 0 .. total-1 in a topological
// order (docs/megakernel.md §2); a layer's stages are (tasks, wide launches; signals = halves for GEMMs):
//   LN1   (row tile, quarter)        y = LN1(h), 32 rows per task              4 tm tasks
//   QKV   (row tile, 256-col tile)   qkv = y Wqkv^T + b                       9 tm (18 tm halves)
//   ATT   (image, head[, part])      att = softmax(q k^T / 8) v               12 n (narrow launches: 24 n)
//   OUT   (row tile, col tile)       h += att Wo^T + b                        3 tm (6 tm halves)
//   LN2   (row tile, quarter)        y = LN2(h)                               4 tm
//   FC1   (row tile, col tile)       H = GELU(y W1^T + b1)                    12 tm (24 tm halves)
//   FC2   (row tile, col tile)       h += H W2^T + b2                         3 tm (6 tm halves)
// and after the last layer POSTLN (row tile, quarter): y = post_LN(h), 4 tm tasks. Before layer 0 the patch
// embedding: PREP (row tile, quarter): patches = normalised pixels (bf16, Conv2d weight order), h = positions +
// conv bias, 4 tm tasks; PATCH (row tile, col tile): h += patches Wpatch^T, 3 tm tasks.
// After POSTLN the attention-pooling (MAP) head, whose rows are images (tq = ceil(n / 128) head row tiles):
//   HKV   (row tile, 256-col tile)   k|v = y Wkv^T + b into qkv's K and V columns  6 tm
//   POOL  (image, head)              hatt = softmax(q k^T / 8) v, q the fixed probe query  12 n
//   HOUT  (head row tile, col block) pooled = hatt Wo^T + b  (fp32, stored)      48 tq
//   HLN   (head row tile, quarter)   hy = LN(pooled)                              4 tq
//   HFC1  (head row tile, col block) hmlp = GELU(hy W1^T + b1)                    96 tq
//   HFC2  (head row tile, col block) pooled += hmlp W2^T + b2                     96 tq
// HOUT, HFC1 and HFC2 act on one row per image, and are not GEMM tiles: each is a block of 16, 32 or 8 output
// columns (sg_mega_hmm_cols) over all the tile's rows, computed by the eight consumer warps with mma.sync, K split
// eight ways in a fixed order (kernel/mega/mega_hmm.cuh): at batch 1 a 64 x 64 tile of FC2 was a 5.4 us chain of
// 192 wgmma for one row.
// The head's stages have counters of their own (never shared with the encoder's): a head row tile q is made of
// images whose token rows are far from token row tile q, so a shared counter could be bumped by the head before
// the encoder's last signal for tile q and satisfy a wait too early.
// LayerNorm tasks cover 32 rows (8 per warp) rather than a whole row tile: a warp's rows are latency-bound
// loads, and at small batches the 4x parallelism shortens the chain of dependent stages.
// The table is built on the host (sg_mega_plan_build, called by mega_gpu.cu): stage after stage, with the
// attention and LayerNorm tasks moved up to two grids of tasks behind the tiles they read, so their inputs are
// still in L2.
// Dependencies are counters, one per (stage, row tile) and one per image for attention, that only grow during a
// launch: a stage of layer l needs its producer's counter to reach (l + 1) x (signals per layer), which is
// unambiguous because every stage of layer l + 1 on a row tile transitively waits for all of layer l's work on
// it (the argument is in docs/megakernel.md §3).
#ifndef SG_MEGA_PLAN_H
#define SG_MEGA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SG_HD __host__ __device__
#else
#define SG_HD
#endif

#define SG_MEGA_D 768
#define SG_MEGA_F 3072
#define SG_MEGA_T 196
#define SG_MEGA_HEADS 12
#define SG_MEGA_DH (SG_MEGA_D / SG_MEGA_HEADS)  // 64
#define SG_MEGA_BM 128
#define SG_MEGA_BN 128                       // columns of a warpgroup's half tile (a counter signal)
#define SG_MEGA_WGS 2                        // consumer warpgroups: halves per GEMM task
#define SG_MEGA_TN (SG_MEGA_WGS * SG_MEGA_BN)  // 256: columns of a GEMM task

enum {
    SG_MT_PREP = 0,  /* patch embedding, part 1: uint8 pixels -> bf16 patches, h = positions + conv bias */
    SG_MT_PATCH,     // part 2: h += patches . Wpatch^T (GEMM tiles)
    SG_MT_LN1,
    SG_MT_QKV,
    SG_MT_ATT,
    SG_MT_OUT,
    SG_MT_LN2,
    SG_MT_FC1,
    SG_MT_FC2,
    SG_MT_POSTLN,
    SG_MT_HKV,   // the MAP head: K and V projections of the post-LayerNorm tokens
    SG_MT_POOL,  // probe attention of one image
    SG_MT_HOUT,
    SG_MT_HLN,
    SG_MT_HFC1,
    SG_MT_HFC2,
    SG_MT_END
};

// 128-column halves per row tile of each GEMM stage: the signals its counter gets per layer (tasks: half as many).
#define SG_MEGA_QKV_TILES (3 * SG_MEGA_D / SG_MEGA_BN)  // 18
#define SG_MEGA_OUT_TILES (SG_MEGA_D / SG_MEGA_BN)      // 6
#define SG_MEGA_FC1_TILES (SG_MEGA_F / SG_MEGA_BN)      // 24
#define SG_MEGA_FC2_TILES (SG_MEGA_D / SG_MEGA_BN)      // 6
#define SG_MEGA_HKV_TILES (2 * SG_MEGA_D / SG_MEGA_BN)  // 12
#define SG_MEGA_LN_PARTS 4                              // LayerNorm (and PREP) tasks per row tile
#define SG_MEGA_LN_ROWS (SG_MEGA_BM / SG_MEGA_LN_PARTS)  // 32
#define SG_MEGA_LN_PARTS_NARROW64 16                     // ... of the encoder in a narrow64 launch: 8 rows

// Counter words: [0] ticket, [1] exit count, then per-row-tile arrays for LN1, QKV, OUT, LN2, FC1, FC2, PREP,
// PATCH, POSTLN, HKV, one per image for attention, and per head row tile arrays for POOL, HOUT, HLN, HFC1, HFC2:
// tm_max words each (images and head row tiles are never more than token row tiles).
#define SG_MEGA_CNT_TICKET 0
#define SG_MEGA_CNT_EXIT 1
#define SG_MEGA_CNT_SIDE 2   // the side list's ticket (sg_mega_plan_split)
#define SG_MEGA_CNT_BASE 32  // the two control words on their own 128-byte line

typedef struct sg_mega_task {
    int kind, layer, a, b;  // a: row tile (GEMM, LN), image (ATT, POOL) or head row tile (HOUT..HFC2); b: column
                            // tile, head (ATT, POOL), or LN part (sg_mega_ln_parts)
} sg_mega_task;

SG_HD static inline int sg_mega_tiles_m(int n) { return (n * SG_MEGA_T + SG_MEGA_BM - 1) / SG_MEGA_BM; }
SG_HD static inline int sg_mega_tiles_head(int n) { return (n + SG_MEGA_BM - 1) / SG_MEGA_BM; }
// The shapes of a launch's GEMM tasks (chosen per batch size by the host, sg_mega_params.narrow):
//   wide (narrow = 0): 128 x 256, warpgroup w the 128 x 128 column half w (the A block shared: fewer L2 bytes per
//       FLOP, what large batches are bound by);
//   narrow (1): 128 x 128, warpgroup w the 64-row half w, twice the tasks: small batches have too few tiles to
//       fill the GPU. Every element is the same m64n128k16 wgmma chain from the same bias either way, so an
//       image's rows do not depend on the shape its batch got;
//   narrow64 (2): 128 x 64, warpgroup w the 64-row half w with m64n64k16 (another wgmma shape: its rows' bits
//       against the others' are what the GPU batch-invariance test checks), four times the tasks;
//   halves (3): narrow64, except that the kinds with 768 output columns (sg_mega_n768: PATCH, OUT, FC2) run as
//       64 x 64 tasks, eight times the wide count: the 64-row half b & 1 of row tile a and the 64
//       columns b >> 1, warpgroup w computing the 32-column half w with m64n32k16 (both read the same A rows). At a
//       few images those kinds have a task per SM or fewer and each task's time is the bytes it streams through
//       one SM (FC2: A 128 x 3072 + W 64 x 3072, 1.2 MB); a 64-row task streams a third less.
// sg_mega_shape gives a task kind's shape in a launch (3 only for those kinds of a halves launch). Each warpgroup
// signals its part once: a GEMM task gives SG_MEGA_WGS signals, and a row tile's counter gets (its stage's *_TILES)
// << shape of them per layer.
SG_HD static inline int sg_mega_n768(int kind) {
    return kind == SG_MT_PATCH || kind == SG_MT_OUT || kind == SG_MT_FC2;
}
SG_HD static inline int sg_mega_shape(int kind, int narrow) {
    return narrow == 3 ? (sg_mega_n768(kind) ? 3 : 2) : narrow;
}
// The ring's stages in a launch (kernel/mega/mega_gpu.h): a fourth for narrow64 and halves launches.
SG_HD static inline int sg_mega_ring_stages(int narrow) { return narrow >= 2 ? 4 : 3; }
SG_HD static inline int sg_mega_tn(int narrow) { return SG_MEGA_TN >> (narrow < 2 ? narrow : 2); }  // task columns
// 128-column halves per row tile of a GEMM kind's output (the signals of a wide launch's layer).
SG_HD static inline int sg_mega_kind_tiles(int kind) {
    switch (kind) {
    case SG_MT_QKV: return SG_MEGA_QKV_TILES;
    case SG_MT_FC1: return SG_MEGA_FC1_TILES;
    case SG_MT_HKV: return SG_MEGA_HKV_TILES;
    default: return SG_MEGA_OUT_TILES;  /* the sg_mega_n768 kinds */
    }
}
// A GEMM kind's tasks per row tile and layer.
SG_HD static inline int sg_mega_gemm_tasks(int kind, int narrow) {
    return sg_mega_kind_tiles(kind) / SG_MEGA_WGS << sg_mega_shape(kind, narrow);
}
// The head's matrix products on rows of images (HOUT, HFC1, HFC2: kernel/mega/mega_hmm.cuh): output columns per
// task, and tasks per head row tile, the same in every launch shape. Each task streams its weight slice (cols x K
// bf16, 24-48 KB) through one SM, so at a few images a stage is one round of tasks of ~1 us of bytes each.
SG_HD static inline int sg_mega_hmm(int kind) {
    return kind == SG_MT_HOUT || kind == SG_MT_HFC1 || kind == SG_MT_HFC2;
}
#define SG_MEGA_HOUT_COLS 16
#define SG_MEGA_HFC1_COLS 32
#define SG_MEGA_HFC2_COLS 8
SG_HD static inline int sg_mega_hmm_cols(int kind) {
    return kind == SG_MT_HFC1 ? SG_MEGA_HFC1_COLS : kind == SG_MT_HOUT ? SG_MEGA_HOUT_COLS : SG_MEGA_HFC2_COLS;
}
SG_HD static inline int sg_mega_hmm_tasks(int kind) {
    return (kind == SG_MT_HFC1 ? SG_MEGA_F : SG_MEGA_D) / sg_mega_hmm_cols(kind);
}
// The first row and column of GEMM task (kind, a, b) in a launch of shape narrow.
SG_HD static inline int sg_mega_task_m0(int kind, int a, int b, int narrow) {
    return a * SG_MEGA_BM + (sg_mega_shape(kind, narrow) == 3 ? 64 * (b & 1) : 0);
}
SG_HD static inline int sg_mega_task_n0(int kind, int b, int narrow) {
    return sg_mega_tn(narrow) * (sg_mega_shape(kind, narrow) == 3 ? b >> 1 : b);
}
// Attention tasks per (image, head): one (its four 64-query blocks, two per warpgroup), or in a narrow launch two,
// part p taking query blocks 2p and 2p + 1 (one per warpgroup; the b field is head + 12 p), or in a halves launch
// (1-4 images) four, part p taking block p alone (warpgroup 0; warpgroup 1 only gives the stages back: the two
// warpgroups of a task share the SM's tensor pipe and MUFU, v63): the same per-block arithmetic, so an image's rows do
// not depend on it, and at small batches more SMs work on the stage.
SG_HD static inline int sg_mega_att_parts(int narrow) { return narrow == 3 ? 4 : narrow ? 2 : 1; }
// The first of the four 64-query blocks that part `part` of `parts` takes (4 / parts blocks from it; parts: 1, 2 or
// 4, without a division); its Q is the 128-row box of the pair from block first & ~1. (sg_sm90_arch::attention
// computes the same blocks as part * (4 >> (parts / 2)): written with this helper, its SASS moved, session 19.)
SG_HD static inline int sg_mega_att_first_block(int part, int parts) { return part << (2 - parts / 2); }
// Row-wise tasks per row tile of kind LN1, LN2, POSTLN, PREP (the patch preparation) and HLN: 4 of 32 rows; in a
// narrow64 or halves launch (1-7 images on an H100) the encoder's (all but HLN) 16 of 8 rows, a row per warp: there
// such a stage is on the critical path, and its time is the loads of a task's rows (measured on an H100: LayerNorm
// tasks 4.5 -> 3.0 us, batch 1 1.047x, 2 images 1.034x; with narrow launches too, 6 images 1.02x but 8 images
// 0.986x). Each row comes from its own values alone, the same arithmetic in any task, so an image's rows do not
// depend on it.
SG_HD static inline int sg_mega_ln_parts(int kind, int narrow) {
    return narrow >= 2 && kind != SG_MT_HLN ? SG_MEGA_LN_PARTS_NARROW64 : SG_MEGA_LN_PARTS;
}
SG_HD static inline int sg_mega_ln_rows(int kind, int narrow) { return SG_MEGA_BM / sg_mega_ln_parts(kind, narrow); }
SG_HD static inline int sg_mega_head_tasks(int n, int narrow) {
    return sg_mega_gemm_tasks(SG_MT_HKV, narrow) * sg_mega_tiles_m(n) + SG_MEGA_HEADS * n +
           sg_mega_tiles_head(n) * (sg_mega_hmm_tasks(SG_MT_HOUT) + sg_mega_hmm_tasks(SG_MT_HFC1) +
                                    sg_mega_hmm_tasks(SG_MT_HFC2) + sg_mega_ln_parts(SG_MT_HLN, narrow));
}
SG_HD static inline int sg_mega_layer_tasks(int n, int narrow) {
    const int tm = sg_mega_tiles_m(n);
    return tm * (sg_mega_ln_parts(SG_MT_LN1, narrow) + sg_mega_ln_parts(SG_MT_LN2, narrow) +
                 sg_mega_gemm_tasks(SG_MT_QKV, narrow) + sg_mega_gemm_tasks(SG_MT_OUT, narrow) +
                 sg_mega_gemm_tasks(SG_MT_FC1, narrow) + sg_mega_gemm_tasks(SG_MT_FC2, narrow)) +
           SG_MEGA_HEADS * sg_mega_att_parts(narrow) * n;
}
SG_HD static inline int sg_mega_total_tasks(int n, int L, int narrow) {
    return L * sg_mega_layer_tasks(n, narrow) +
           (sg_mega_ln_parts(SG_MT_PREP, narrow) + sg_mega_ln_parts(SG_MT_POSTLN, narrow) +
            sg_mega_gemm_tasks(SG_MT_PATCH, narrow)) * sg_mega_tiles_m(n) +  /* PREP, POSTLN, PATCH */
           sg_mega_head_tasks(n, narrow);
}
SG_HD static inline size_t sg_mega_counter_words(int tm_max) { return SG_MEGA_CNT_BASE + 16 * (size_t)tm_max; }
// Index of the counter a task of `kind` signals (for ATT and POOL, `a` is the image; a POOL task signals its head
// row tile's counter).
SG_HD static inline size_t sg_mega_counter(int kind, int a, int tm_max) {
    const size_t h0 = SG_MEGA_CNT_BASE + 10 * (size_t)tm_max;  // the attention counters, then the head's
    switch (kind) {
    case SG_MT_LN1: return SG_MEGA_CNT_BASE + a;
    case SG_MT_QKV: return SG_MEGA_CNT_BASE + (size_t)tm_max + a;
    case SG_MT_OUT: return SG_MEGA_CNT_BASE + 2 * (size_t)tm_max + a;
    case SG_MT_LN2: return SG_MEGA_CNT_BASE + 3 * (size_t)tm_max + a;
    case SG_MT_FC1: return SG_MEGA_CNT_BASE + 4 * (size_t)tm_max + a;
    case SG_MT_FC2: return SG_MEGA_CNT_BASE + 5 * (size_t)tm_max + a;
    case SG_MT_PREP: return SG_MEGA_CNT_BASE + 6 * (size_t)tm_max + a;
    case SG_MT_PATCH: return SG_MEGA_CNT_BASE + 7 * (size_t)tm_max + a;
    case SG_MT_POSTLN: return SG_MEGA_CNT_BASE + 8 * (size_t)tm_max + a;
    case SG_MT_HKV: return SG_MEGA_CNT_BASE + 9 * (size_t)tm_max + a;
    case SG_MT_POOL: return h0 + (size_t)tm_max + a / SG_MEGA_BM;  // after the n_max <= tm_max image counters
    case SG_MT_HOUT: return h0 + 2 * (size_t)tm_max + a;
    case SG_MT_HLN: return h0 + 3 * (size_t)tm_max + a;
    case SG_MT_HFC1: return h0 + 4 * (size_t)tm_max + a;
    case SG_MT_HFC2: return h0 + 5 * (size_t)tm_max + a;
    default: return h0 + a;  // SG_MT_ATT, per image (n_max <= tm_max)
    }
}

// A task is one 32-bit word in the launch's task table (built on the host, mega_plan.c):
// kind [27, 32), layer [23, 27), a [8, 23), b [0, 8).
SG_HD static inline unsigned sg_mega_encode(int kind, int layer, int a, int b) {
    return ((unsigned)kind << 27) | ((unsigned)layer << 23) | ((unsigned)a << 8) | (unsigned)b;
}
SG_HD static inline sg_mega_task sg_mega_decode(unsigned code) {
    sg_mega_task k;
    k.kind = (int)(code >> 27);
    k.layer = (int)((code >> 23) & 15u);
    k.a = (int)((code >> 8) & 0x7fffu);
    k.b = (int)(code & 255u);
    return k;
}

// Kinds that run as GEMM tiles.
SG_HD static inline int sg_mega_is_gemm(int kind) {
    return kind == SG_MT_PATCH || kind == SG_MT_QKV || kind == SG_MT_OUT || kind == SG_MT_FC1 || kind == SG_MT_FC2 ||
           kind == SG_MT_HKV;
}
// The GEMM stages whose output tiles are fp32, added into the fp32 residual stream h (OUT, FC2, PATCH) by a TMA
// reduce-add; the others (QKV, FC1, HKV) store bf16 tiles.
SG_HD static inline int sg_mega_f32_tile(int kind) {
    return kind == SG_MT_OUT || kind == SG_MT_FC2 || kind == SG_MT_PATCH;
}
// The GEMM stage followed by tanh GELU (the encoder MLPs' first Linear).
SG_HD static inline int sg_mega_gelu_tile(int kind) { return kind == SG_MT_FC1; }
// Signals a task gives its counter: one per 128-column half for a GEMM task (each half's storer signals when its
// stores are complete), one for every other task.
SG_HD static inline int sg_mega_signals(int kind) { return sg_mega_is_gemm(kind) ? SG_MEGA_WGS : 1; }
// K of a GEMM stage or a head product (its input width).
SG_HD static inline int sg_mega_gemm_k(int kind) {
    return kind == SG_MT_FC2 || kind == SG_MT_HFC2 ? SG_MEGA_F : SG_MEGA_D;
}

// The inputs of task k, one at a time (i = 0, 1, ...): the counter word it waits on and the value that counter
// must reach (GEMM producers' targets 2, 4 or 8 times as high in a narrow launch, sg_mega_shape); returns 0 past the
// last one. The
// kernel's producers wait on exactly these (mega_kernel.cuh) and sg_mega_plan_check replays them, so the order
// proof and the kernel cannot disagree. n: images of the launch; tm_layout: the row tiles the counter arrays were
// laid out for (the kernel's tm_max).
// An image's 196 rows span 2 or 3 row tiles; a 128-row tile overlaps 1 or 2 images.
SG_HD static inline int sg_mega_input(sg_mega_task k, int n, int tm_layout, int narrow, int i, size_t *counter,
                                      unsigned *target) {
    const int l = k.layer;
    int kind, first = k.a, count = 1;
    unsigned t;
    switch (k.kind) {
    case SG_MT_PATCH: kind = SG_MT_PREP, t = sg_mega_ln_parts(SG_MT_PREP, narrow); break;
    case SG_MT_LN1:
        if (l > 0) kind = SG_MT_FC2, t = SG_MEGA_FC2_TILES * l;
        else kind = SG_MT_PATCH, t = SG_MEGA_OUT_TILES;
        break;
    case SG_MT_QKV: kind = SG_MT_LN1, t = sg_mega_ln_parts(SG_MT_LN1, narrow) * (l + 1); break;
    case SG_MT_ATT:
        kind = SG_MT_QKV, t = SG_MEGA_QKV_TILES * (l + 1);
        first = k.a * SG_MEGA_T / SG_MEGA_BM;
        count = (k.a * SG_MEGA_T + SG_MEGA_T - 1) / SG_MEGA_BM - first + 1;
        break;
    case SG_MT_OUT: {
        const int end = k.a * SG_MEGA_BM + SG_MEGA_BM < n * SG_MEGA_T ? k.a * SG_MEGA_BM + SG_MEGA_BM : n * SG_MEGA_T;
        kind = SG_MT_ATT, t = SG_MEGA_HEADS * sg_mega_att_parts(narrow) * (l + 1);
        first = k.a * SG_MEGA_BM / SG_MEGA_T;
        count = (end - 1) / SG_MEGA_T - first + 1;
        break;
    }
    case SG_MT_LN2: kind = SG_MT_OUT, t = SG_MEGA_OUT_TILES * (l + 1); break;
    case SG_MT_FC1: kind = SG_MT_LN2, t = sg_mega_ln_parts(SG_MT_LN2, narrow) * (l + 1); break;
    case SG_MT_FC2: kind = SG_MT_FC1, t = SG_MEGA_FC1_TILES * (l + 1); break;
    case SG_MT_POSTLN: kind = SG_MT_FC2, t = SG_MEGA_FC2_TILES * l; break; /* layer field = L */
    case SG_MT_HKV: kind = SG_MT_POSTLN, t = sg_mega_ln_parts(SG_MT_POSTLN, narrow); break;
    case SG_MT_POOL:
        kind = SG_MT_HKV, t = SG_MEGA_HKV_TILES;
        first = k.a * SG_MEGA_T / SG_MEGA_BM;
        count = (k.a * SG_MEGA_T + SG_MEGA_T - 1) / SG_MEGA_BM - first + 1;
        break;
    case SG_MT_HOUT:  /* every head of every image of head row tile a (one POOL signal each) */
        kind = SG_MT_POOL, first = k.a * SG_MEGA_BM;
        t = SG_MEGA_HEADS * (unsigned)(n - first < SG_MEGA_BM ? n - first : SG_MEGA_BM);
        break;
    case SG_MT_HLN: kind = SG_MT_HOUT, t = sg_mega_hmm_tasks(SG_MT_HOUT); break;
    case SG_MT_HFC1: kind = SG_MT_HLN, t = sg_mega_ln_parts(SG_MT_HLN, narrow); break;
    case SG_MT_HFC2: kind = SG_MT_HFC1, t = sg_mega_hmm_tasks(SG_MT_HFC1); break;
    default: return 0;                                                     /* PREP, END: no inputs */
    }
    if (i >= count) return 0;
    *counter = sg_mega_counter(kind, first + i, tm_layout);
    *target = sg_mega_signals(kind) == SG_MEGA_WGS ? t << sg_mega_shape(kind, narrow) : t;  // a GEMM producer
    return 1;
}

// The row-wise tasks a wide launch hands to the CTAs' side warps instead of the consumer warpgroups
// (sg_mega_plan_split): the patch preparation and the encoder's LayerNorms (not the head's, whose rows are few).
SG_HD static inline int sg_mega_side_kind(int kind) {
    return kind == SG_MT_PREP || kind == SG_MT_LN1 || kind == SG_MT_LN2 || kind == SG_MT_POSTLN;
}

#define SG_MEGA_MAX_LAYERS 15  // the layer field's 4 bits (POSTLN is layer L)
#define SG_MEGA_MAX_TILES_M 0x7fff

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the task table of a launch for n images and L layers on a GPU of `grid` CTAs (one per SM), with wide or
 * narrow GEMM tasks (sg_mega_tn) and FC1 / FC2 interleaved fc1_lag / fc2_lag grids behind their inputs' producers
 * (0: stage by stage), and the next layer's QKV and attention qkv_lag grids behind its LayerNorm-1 inside the FC2
 * stage (0: a stage of their own), in the one
 * order the kernel uses: stage by stage, with the attention and LayerNorm tasks about two grids of tasks behind
 * the tiles they read. *out (malloc'd, caller frees) gets *count words. 0, or -1 with err (out of
 * memory, n or L beyond the encoding). */
int sg_mega_plan_build(int n, int L, int grid, int narrow, int fc1_lag, int fc2_lag, int qkv_lag, uint32_t **out,
                       size_t *count, char *err, size_t errlen);

/* Replays table t on the host with the kernel's counter rules (the same waits as sg_mega_wait_inputs in
 * mega_kernel.cuh) and checks that every task's inputs are complete when its turn comes (so the ticket scheduler
 * cannot deadlock), that every field is in range, and that every task of the launch appears exactly once.
 * 0, or -1 with the first offending task in err. */
int sg_mega_plan_check(const uint32_t *t, size_t count, int n, int L, int narrow, char *err, size_t errlen);

/* Splits a checked table in place into two lists, each in the table's order: the main list (the first
 * count - *side tasks: GEMMs, attention, the head) for the consumer warpgroups, and the side list (the last *side:
 * sg_mega_side_kind's row-wise tasks) for the side warps, each list with its own ticket. Still deadlock-free: take
 * the lowest unfinished task X of the checked order; its inputs are complete, and every task before it in its own
 * list is finished, so the worker holding X (or the next one to take a ticket of that list) runs it. 0, or -1 (out
 * of memory; t untouched). */
int sg_mega_plan_split(uint32_t *t, size_t count, size_t *side);

#ifdef __cplusplus
}
#endif
#endif
