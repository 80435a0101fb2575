/* kernel/mega/mega_plan.c — building the megakernels' task table and proving it is in dependency order.
 *
 * The kernel (kernel/mega/mega_kernel.cuh) hands task numbers out with one global ticket, in table order; a task
 * only waits for tasks with smaller numbers, so the lowest unfinished task can always run and the launch cannot
 * deadlock, whatever the residency. That argument holds only if the table is topological under the kernel's
 * counter rules; sg_mega_plan_check replays those rules (sg_mega_input, the same function the kernel waits
 * with) on every table before it is uploaded, and CI runs it for
 * every batch size (tests/test_mega_plan.c). Plain C, no CUDA: it is part of every build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mega_plan.h"

typedef struct {
    uint32_t *t;
    size_t n, cap;
} tasks;

static void put(tasks *v, int kind, int layer, int a, int b) { v->t[v->n++] = sg_mega_encode(kind, layer, a, b); }

static void put_tiles(tasks *v, int kind, int layer, int r, int parts) {
    for (int b = 0; b < parts; b++) put(v, kind, layer, r, b);
}

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* The row tile holding an image's last token: its attention tasks go with that row tile (all the rows they read
 * are then produced). */
static int last_tile(int img, int M) { return imin(M - 1, img * SG_MEGA_T + SG_MEGA_T - 1) / SG_MEGA_BM; }

/* Attention tasks (kind ATT, or the head's POOL), `parts` per head (b = head + 12 part), of the images whose last
 * row tile is in [r0, r1). Images are in row order, so *next walks. */
static void put_att(tasks *v, int kind, int layer, int r0, int r1, int n, int M, int parts, int *next) {
    while (*next < n && last_tile(*next, M) < r1) {
        if (last_tile(*next, M) >= r0)
            for (int b = 0; b < SG_MEGA_HEADS * parts; b++) put(v, kind, layer, *next, b);
        (*next)++;
    }
}

/* One stage of a segment: kind, layer, tasks per row tile (attention: parts per head), and its row tiles' offset
 * behind the segment's loop. */
typedef struct {
    int kind, layer, per, off;
} stage;

/* Stages interleaved row tile by row tile: at step r, stage i puts its tasks of row tile r - off_i (when that is a
 * row tile; an attention stage: the images whose last row tile it is), in the order the stages are listed. */
static void put_segment(tasks *v, const stage *st, int count, int tm, int n) {
    int last = 0, next = 0;
    for (int i = 0; i < count; i++) last = imax(last, st[i].off);
    for (int r = 0; r < tm + last; r++)
        for (int i = 0; i < count; i++) {
            const int t = r - st[i].off;
            if (t < 0 || t >= tm) continue;
            if (st[i].kind == SG_MT_ATT)
                put_att(v, SG_MT_ATT, st[i].layer, t, t + 1, n, n * SG_MEGA_T, st[i].per, &next);
            else
                put_tiles(v, st[i].kind, st[i].layer, t, st[i].per);
        }
}

/* Stage by stage, with the memory-bound tasks following their producer at a distance of lag row tiles instead of
 * waiting for the whole stage: after the QKV tiles of row tile r come the attention tasks of the images ending in
 * row tile r - lag_att; after the out-projection of r the LayerNorm-2 of r - lag_ln; after FC2 of r the next
 * layer's LayerNorm-1 (or the post-LayerNorm) of r - lag_ln; the same between the patch GEMM and layer 0's
 * LayerNorm-1. Their inputs are then still in L2, and the lag (about two grids of tasks) keeps them from waiting. */
static void build_interleaved(tasks *v, int n, int L, int grid, int narrow, int fc1_lag, int fc2_lag, int qkv_lag) {
    const int tm = sg_mega_tiles_m(n), M = n * SG_MEGA_T;
    /* Two grids of tasks: with one (the 2-virtual-CTA kernel's best), the 128 x 256 kernel's consumers idled 14 % of
     * the time on inputs still in flight; 2, 3 and 4 grids measured within 0.3 % of each other (H100: 11,619 /
     * 11,634 / 11,619 images/s at 1,024 against 11,210 with one), and the shorter lag keeps inputs in L2. */
    const int lag_att = imax(1, 2 * grid / sg_mega_gemm_tasks(SG_MT_QKV, narrow)),
              lag_ln = imax(1, 2 * grid / sg_mega_gemm_tasks(SG_MT_OUT, narrow));
    for (int r = 0; r < tm; r++) put_tiles(v, SG_MT_PREP, 0, r, sg_mega_ln_parts(SG_MT_PREP, narrow));
    for (int r = 0; r < tm + lag_ln; r++) {
        if (r < tm) put_tiles(v, SG_MT_PATCH, 0, r, sg_mega_gemm_tasks(SG_MT_PATCH, narrow));
        if (r - lag_ln >= 0) put_tiles(v, SG_MT_LN1, 0, r - lag_ln, sg_mega_ln_parts(SG_MT_LN1, narrow));
    }
    /* qkv_lag > 0 (grids of QKV tasks): the next layer's QKV tiles and attention join the FC2 segment, behind its
     * LayerNorm-1, instead of a stage of their own, so FC2 tiles do not run back to back (each one's first K blocks
     * then wait a round trip: a side list takes the LayerNorms out from between them). */
    const int lagq = imax(1, qkv_lag * grid / sg_mega_gemm_tasks(SG_MT_QKV, narrow));
    for (int l = 0; l < L; l++) {
        if (l == 0 || !qkv_lag) {  /* the layer's QKV tiles with its attention lag_att row tiles behind */
            const stage qa[2] = {{SG_MT_QKV, l, sg_mega_gemm_tasks(SG_MT_QKV, narrow), 0},
                                 {SG_MT_ATT, l, sg_mega_att_parts(narrow), lag_att}};
            put_segment(v, qa, 2, tm, n);
        }
        /* The rest of the layer as segments: out-projection + LayerNorm-2; FC1; FC2 + the next LayerNorm-1 (or the
         * post-LayerNorm). fc1_lag / fc2_lag > 0 (grids of FC1 tasks) merge FC1 into the segment before it / FC2
         * into FC1's, that many grids behind, so their inputs are still in L2: FC1 lag 1 is the default (mega_gpu.cu,
         * +2 % at 1,024); FC2 lags measured slower (docs/perf-notes.md, sessions 5 and 6). */
        const int fc1_per = sg_mega_gemm_tasks(SG_MT_FC1, narrow);
        const int lag1 = imax(1, fc1_lag * grid / fc1_per), lag2 = imax(1, fc2_lag * grid / fc1_per);
        const int next_ln = l + 1 < L ? SG_MT_LN1 : SG_MT_POSTLN;
        stage seg[7];
        int k = 0, off = 0;
        seg[k++] = (stage){SG_MT_OUT, l, sg_mega_gemm_tasks(SG_MT_OUT, narrow), 0};
        seg[k++] = (stage){SG_MT_LN2, l, sg_mega_ln_parts(SG_MT_LN2, narrow), off = lag_ln};
        if (fc1_lag > 0) {
            seg[k++] = (stage){SG_MT_FC1, l, fc1_per, off += lag1};
        } else {
            put_segment(v, seg, k, tm, n);
            k = 0;
            seg[k++] = (stage){SG_MT_FC1, l, fc1_per, off = 0};
        }
        if (fc2_lag > 0) {
            seg[k++] = (stage){SG_MT_FC2, l, sg_mega_gemm_tasks(SG_MT_FC2, narrow), off += lag2};
        } else {
            put_segment(v, seg, k, tm, n);
            k = 0;
            seg[k++] = (stage){SG_MT_FC2, l, sg_mega_gemm_tasks(SG_MT_FC2, narrow), off = 0};
        }
        seg[k++] = (stage){next_ln, l + 1, sg_mega_ln_parts(next_ln, narrow), off += lag_ln};
        if (qkv_lag && l + 1 < L) {
            seg[k++] = (stage){SG_MT_QKV, l + 1, sg_mega_gemm_tasks(SG_MT_QKV, narrow), off += lagq};
            seg[k++] = (stage){SG_MT_ATT, l + 1, sg_mega_att_parts(narrow), off + lag_att};
        }
        put_segment(v, seg, k, tm, n);
    }
    /* The MAP head: its K/V tiles row tile by row tile with each image's probe attention behind them, then the
     * head's products (mega_hmm.cuh) and LayerNorm on rows of images, stage by stage (tq <= 8 head row tiles at
     * batch 1,024). */
    const int tq = sg_mega_tiles_head(n);
    int next = 0;
    for (int r = 0; r < tm + lag_att; r++) {
        if (r < tm) put_tiles(v, SG_MT_HKV, L, r, sg_mega_gemm_tasks(SG_MT_HKV, narrow));
        if (r - lag_att >= 0) put_att(v, SG_MT_POOL, L, r - lag_att, r - lag_att + 1, n, M, 1, &next);
    }
    for (int q = 0; q < tq; q++) put_tiles(v, SG_MT_HOUT, L, q, sg_mega_hmm_tasks(SG_MT_HOUT));
    for (int q = 0; q < tq; q++) put_tiles(v, SG_MT_HLN, L, q, sg_mega_ln_parts(SG_MT_HLN, narrow));
    for (int q = 0; q < tq; q++) put_tiles(v, SG_MT_HFC1, L, q, sg_mega_hmm_tasks(SG_MT_HFC1));
    for (int q = 0; q < tq; q++) put_tiles(v, SG_MT_HFC2, L, q, sg_mega_hmm_tasks(SG_MT_HFC2));
}

int sg_mega_plan_build(int n, int L, int grid, int narrow, int fc1_lag, int fc2_lag, int qkv_lag, uint32_t **out,
                       size_t *count, char *err, size_t errlen) {
    *out = NULL;
    *count = 0;
    if (n < 1 || L < 1 || L > SG_MEGA_MAX_LAYERS || sg_mega_tiles_m(n) > SG_MEGA_MAX_TILES_M || narrow < 0 ||
        narrow > 3) {
        snprintf(err, errlen, "megakernel task table: batch %d with %d layers (task shape %d) is beyond the task "
                 "encoding", n, L, narrow);
        return -1;
    }
    tasks v = {NULL, 0, (size_t)sg_mega_total_tasks(n, L, narrow)};
    v.t = malloc(v.cap * sizeof *v.t);
    if (!v.t) {
        snprintf(err, errlen, "megakernel task table: out of host memory (%zu tasks)", v.cap);
        return -1;
    }
    build_interleaved(&v, n, L, grid, narrow, fc1_lag, fc2_lag, qkv_lag);
    if (v.n != v.cap) { /* a builder bug: it must emit each task once */
        snprintf(err, errlen, "%s:%d: megakernel task table for batch %d: %zu tasks built, expected %zu", __FILE__,
                 __LINE__, n, v.n, v.cap);
        free(v.t);
        return -1;
    }
    *out = v.t;
    *count = v.n;
    return 0;
}

/* Tasks of one kind per unit (row tile, image for ATT and POOL, head row tile for HOUT..HFC2) and per layer: the
 * range of the b field. */
static int per_unit(int kind, int narrow) {
    switch (kind) {
    case SG_MT_PREP: case SG_MT_LN1: case SG_MT_LN2: case SG_MT_POSTLN: case SG_MT_HLN:
        return sg_mega_ln_parts(kind, narrow);
    case SG_MT_PATCH: case SG_MT_OUT: case SG_MT_FC2: case SG_MT_QKV: case SG_MT_FC1: case SG_MT_HKV:
        return sg_mega_gemm_tasks(kind, narrow);
    case SG_MT_HOUT: case SG_MT_HFC1: case SG_MT_HFC2: return sg_mega_hmm_tasks(kind);
    case SG_MT_ATT: return SG_MEGA_HEADS * sg_mega_att_parts(narrow);
    case SG_MT_POOL: return SG_MEGA_HEADS;
    default: return 0;
    }
}

int sg_mega_plan_split(uint32_t *t, size_t count, size_t *side) {
    uint32_t *tmp = malloc((count ? count : 1) * sizeof *tmp);
    if (!tmp) return -1;
    size_t m = 0, s = 0;
    for (size_t i = 0; i < count; i++) {
        if (sg_mega_side_kind(sg_mega_decode(t[i]).kind)) tmp[s++] = t[i];
        else t[m++] = t[i];
    }
    memcpy(t + m, tmp, s * sizeof *t);
    free(tmp);
    *side = s;
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int sg_mega_plan_check(const uint32_t *t, size_t count, int n, int L, int narrow, char *err, size_t errlen) {
    const int tm = sg_mega_tiles_m(n), tq = sg_mega_tiles_head(n);
    if (count != (size_t)sg_mega_total_tasks(n, L, narrow)) {
        snprintf(err, errlen, "megakernel task table for batch %d: %zu tasks, expected %d", n, count,
                 sg_mega_total_tasks(n, L, narrow));
        return -1;
    }
    const size_t words = sg_mega_counter_words(tm);
    unsigned *c = calloc(words, sizeof *c);
    uint32_t *sorted = malloc(count * sizeof *sorted);
    if (!c || !sorted) {
        free(c);
        free(sorted);
        snprintf(err, errlen, "megakernel task table check: out of host memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const sg_mega_task k = sg_mega_decode(t[i]);
        const int l = k.layer;
        const int head_rows = k.kind >= SG_MT_HOUT && k.kind <= SG_MT_HFC2;
        const int units = k.kind == SG_MT_ATT || k.kind == SG_MT_POOL ? n : head_rows ? tq : tm;
        const int in_layer = k.kind == SG_MT_PREP || k.kind == SG_MT_PATCH ? l == 0
                             : k.kind >= SG_MT_POSTLN                     ? l == L  /* the post-LN and the head */
                                                                          : l < L;
        int ok = k.kind < SG_MT_END && in_layer && k.a < units && k.b < per_unit(k.kind, narrow);
        size_t cw;
        unsigned target;
        for (int j = 0; ok && sg_mega_input(k, n, tm, narrow, j, &cw, &target); j++) ok = c[cw] >= target;
        if (!ok) {
            snprintf(err, errlen, "megakernel task table for batch %d: task %zu (kind %d, layer %d, %d, %d) is out of "
                     "range or comes before its inputs", n, i, k.kind, k.layer, k.a, k.b);
            rc = -1;
        } else {
            c[sg_mega_counter(k.kind, k.a, tm)] += (unsigned)sg_mega_signals(k.kind);
        }
    }
    /* Every field in range, no task twice and the right count: then every task of the launch is there once. */
    if (rc == 0) {
        memcpy(sorted, t, count * sizeof *t);
        qsort(sorted, count, sizeof *sorted, cmp_u32);
        for (size_t i = 1; i < count && rc == 0; i++)
            if (sorted[i] == sorted[i - 1]) {
                const sg_mega_task k = sg_mega_decode(sorted[i]);
                snprintf(err, errlen, "megakernel task table for batch %d: task (kind %d, layer %d, %d, %d) appears "
                         "twice", n, k.kind, k.layer, k.a, k.b);
                rc = -1;
            }
    }
    free(c);
    free(sorted);
    return rc;
}
