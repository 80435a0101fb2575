// kernel/sm90/sm90_mega.cuh — the task list of the Hopper megakernel, shared by the kernel and the host.
//
// One launch runs the L encoder layers and the post-LayerNorm of n images (M = 196 n token rows, tm = ceil(M /
// 128) row tiles). Tasks are numbered 0 .. total-1 in a topological order: layer by layer, and inside a layer
// stage by stage (docs/megakernel.md §2):
//   LN1   (row tile)                 y = LN1(h)                               tm tasks
//   QKV   (row tile, 128-col tile)   qkv = y Wqkv^T + b                       18 tm
//   ATT   (image, head)              att = softmax(q k^T / 8) v               12 n
//   OUT   (row tile, col tile)       h += att Wo^T + b                        6 tm
//   LN2   (row tile)                 y = LN2(h)                               tm
//   FC1   (row tile, col tile)       H = GELU(y W1^T + b1)                    24 tm
//   FC2   (row tile, col tile)       h += H W2^T + b2                         6 tm
// and after the last layer POSTLN (row tile): y = post_LN(h), tm tasks.
// A task number is all a CTA needs: sg_mega_decode turns it into (kind, layer, a, b), so there is no task table
// in memory and any batch size 1..max works with the same kernel.
// Dependencies are counters, one per (stage, row tile) and one per image for attention, that only grow during a
// launch: a stage of layer l needs its producer's counter to reach (l + 1) x (signals per layer), which is
// unambiguous because every stage of layer l + 1 on a row tile transitively waits for all of layer l's work on
// it (the argument is in docs/megakernel.md §3).
#ifndef SG_SM90_MEGA_CUH
#define SG_SM90_MEGA_CUH

#define SG_MEGA_D 768
#define SG_MEGA_F 3072
#define SG_MEGA_T 196
#define SG_MEGA_HEADS 12
#define SG_MEGA_BM 128
#define SG_MEGA_BN 128

enum {
    SG_MT_LN1 = 0,
    SG_MT_QKV,
    SG_MT_ATT,
    SG_MT_OUT,
    SG_MT_LN2,
    SG_MT_FC1,
    SG_MT_FC2,
    SG_MT_POSTLN,
    SG_MT_END
};

// Column tiles per row tile of each GEMM stage.
#define SG_MEGA_QKV_TILES (3 * SG_MEGA_D / SG_MEGA_BN)  // 18
#define SG_MEGA_OUT_TILES (SG_MEGA_D / SG_MEGA_BN)      // 6
#define SG_MEGA_FC1_TILES (SG_MEGA_F / SG_MEGA_BN)      // 24
#define SG_MEGA_FC2_TILES (SG_MEGA_D / SG_MEGA_BN)      // 6

// Counter words: [0] ticket, [1] exit count, then per-row-tile arrays for LN1, QKV, OUT, LN2, FC1, FC2 (tm_max
// each) and one per image for attention (n_max).
#define SG_MEGA_CNT_TICKET 0
#define SG_MEGA_CNT_EXIT 1
#define SG_MEGA_CNT_BASE 32  // the two control words on their own 128-byte line

typedef struct sg_mega_task {
    int kind, layer, a, b;  // a: row tile (GEMM, LN) or image (ATT); b: column tile (GEMM) or head (ATT)
} sg_mega_task;

__host__ __device__ inline int sg_mega_tiles_m(int n) { return (n * SG_MEGA_T + SG_MEGA_BM - 1) / SG_MEGA_BM; }
__host__ __device__ inline int sg_mega_layer_tasks(int n) {
    const int tm = sg_mega_tiles_m(n);
    return tm * (2 + SG_MEGA_QKV_TILES + SG_MEGA_OUT_TILES + SG_MEGA_FC1_TILES + SG_MEGA_FC2_TILES) +
           SG_MEGA_HEADS * n;
}
__host__ __device__ inline int sg_mega_total_tasks(int n, int L) {
    return L * sg_mega_layer_tasks(n) + sg_mega_tiles_m(n);
}
__host__ __device__ inline size_t sg_mega_counter_words(int tm_max, int n_max) {
    return SG_MEGA_CNT_BASE + 6 * (size_t)tm_max + (size_t)n_max;
}
// Index of the counter a task of `kind` signals (for ATT, `a` is the image).
__host__ __device__ inline size_t sg_mega_counter(int kind, int a, int tm_max) {
    switch (kind) {
    case SG_MT_LN1: return SG_MEGA_CNT_BASE + a;
    case SG_MT_QKV: return SG_MEGA_CNT_BASE + (size_t)tm_max + a;
    case SG_MT_OUT: return SG_MEGA_CNT_BASE + 2 * (size_t)tm_max + a;
    case SG_MT_LN2: return SG_MEGA_CNT_BASE + 3 * (size_t)tm_max + a;
    case SG_MT_FC1: return SG_MEGA_CNT_BASE + 4 * (size_t)tm_max + a;
    case SG_MT_FC2: return SG_MEGA_CNT_BASE + 5 * (size_t)tm_max + a;
    default: return SG_MEGA_CNT_BASE + 6 * (size_t)tm_max + a;  // SG_MT_ATT
    }
}

// Task number t (0 <= t) of a launch for n images and L layers; SG_MT_END past the last.
__host__ __device__ inline sg_mega_task sg_mega_decode(int t, int n, int L) {
    const int tm = sg_mega_tiles_m(n), per = sg_mega_layer_tasks(n);
    sg_mega_task k = {SG_MT_END, 0, 0, 0};
    if (t < 0) return k;
    const int l = t / per;
    int r = t - l * per;
    if (l >= L) {
        r = t - L * per;
        if (r < tm) k.kind = SG_MT_POSTLN, k.layer = L, k.a = r;
        return k;
    }
    k.layer = l;
    // An if-chain, not a loop over an array: a dynamically indexed array would live in local memory.
    int cols;
    if (r < tm) k.kind = SG_MT_LN1, cols = 1;
    else if ((r -= tm) < tm * SG_MEGA_QKV_TILES) k.kind = SG_MT_QKV, cols = SG_MEGA_QKV_TILES;
    else if ((r -= tm * SG_MEGA_QKV_TILES) < n * SG_MEGA_HEADS) k.kind = SG_MT_ATT, cols = SG_MEGA_HEADS;
    else if ((r -= n * SG_MEGA_HEADS) < tm * SG_MEGA_OUT_TILES) k.kind = SG_MT_OUT, cols = SG_MEGA_OUT_TILES;
    else if ((r -= tm * SG_MEGA_OUT_TILES) < tm) k.kind = SG_MT_LN2, cols = 1;
    else if ((r -= tm) < tm * SG_MEGA_FC1_TILES) k.kind = SG_MT_FC1, cols = SG_MEGA_FC1_TILES;
    else r -= tm * SG_MEGA_FC1_TILES, k.kind = SG_MT_FC2, cols = SG_MEGA_FC2_TILES;
    k.a = r / cols;  // row tile (or image): column tiles (or heads) vary fastest, so the CTAs running at one
    k.b = r % cols;  // time share their A rows in L2
    return k;
}
#endif
