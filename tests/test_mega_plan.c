/* tests/test_mega_plan.c — the Hopper megakernel's task tables (kernel/mega/mega_plan.c), without a GPU.
 *
 * The megakernel cannot deadlock only if its task table is in dependency order under the kernel's counter rules;
 * sg_mega_plan_check proves that for a table before it is uploaded. Here: the order the backend builds passes
 * the check for every batch size 1..1024 (12 layers, the H100's 132 CTAs, and a small grid), with every GEMM task
 * shape: wide (128 x 256), narrow (128 x 128), narrow64 (128 x 64) and halves (the 768-column kinds 64 x 64);
 * and the check itself fails on tables broken in the ways that matter: a stage before its producer, an image's
 * attention before the second row tile it spans, a task repeated (another missing), a field out of range, a
 * short table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kernel/mega/mega_plan.h"

/* Builds and checks one table; returns it (caller frees) or NULL. */
static uint32_t *build(int n, int L, int grid, int narrow, size_t *count, char *err, size_t errlen) {
    uint32_t *t = NULL;
    if (sg_mega_plan_build(n, L, grid, narrow, 0, 0, 0, &t, count, err, errlen)) return NULL;
    return t;
}

static size_t find(const uint32_t *t, size_t count, int kind, int layer, int a, int b) {
    const uint32_t code = sg_mega_encode(kind, layer, a, b);
    for (size_t i = 0; i < count; i++)
        if (t[i] == code) return i;
    return (size_t)-1;
}

/* Moves t[from] to position to (to < from), shifting the tasks between one place later. */
static void move_before(uint32_t *t, size_t from, size_t to) {
    const uint32_t x = t[from];
    memmove(t + to + 1, t + to, (from - to) * sizeof *t);
    t[to] = x;
}

/* Builds and checks the tables of 12 layers for batches 1..dense, then every step-th up to 1,024, with the given
 * grid, task shape and FC1 / FC2 / QKV lags; returns how many failed (the first one's batch and reason printed, its
 * batch in *first_bad) and adds the tasks checked to *tasks. */
static int sweep_sizes(int grid, int narrow, int fc1_lag, int fc2_lag, int qkv_lag, int dense, int step, long *tasks,
                       int *first_bad) {
    char err[512];
    int bad = 0;
    for (int n = 1; n <= 1024; n += n < dense ? 1 : step) {
        size_t count = 0;
        uint32_t *t = NULL;
        if (sg_mega_plan_build(n, 12, grid, narrow, fc1_lag, fc2_lag, qkv_lag, &t, &count, err, sizeof err) ||
            sg_mega_plan_check(t, count, n, 12, narrow, err, sizeof err) != 0) {
            if (!bad++) {
                *first_bad = n;
                printf("    batch %d: %s\n", n, err);
            }
        } else {
            *tasks += (long)count;
        }
        free(t);
    }
    return bad;
}

static void check_all_sizes(void) {
    char err[512];
    const struct {
        const char *name;
        int grid;
    } orders[] = {
        {"132 CTAs (H100)", 132},
        {"8 CTAs", 8},
    };
    static const char *shape[] = {"wide", "narrow", "narrow64", "halves"};
    for (int narrow = 0; narrow < 4; narrow++)
    for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
        int first_bad = 0;
        long tasks = 0;
        /* every partial-tile pattern, then up to 1,024 */
        const int bad = sweep_sizes(orders[o].grid, narrow, 0, 0, 0, 128, 61, &tasks, &first_bad);
        if (bad)
            CHECK(0, "%s, %s GEMM tasks: %d task tables out of order, the first at batch %d", orders[o].name,
                  shape[narrow], bad, first_bad);
        else
            CHECK(1, "%s, %s GEMM tasks: task tables for batches 1..128 and up to 1,024 are complete and in "
                  "dependency order (%ld tasks checked)", orders[o].name, shape[narrow], tasks);
    }
    /* FC1 / FC2 interleaved behind their inputs' producers (SG_MEGA_FC1_LAG / SG_MEGA_FC2_LAG), and the next
     * layer's QKV + attention inside FC2's stage (SG_MEGA_QKV_LAG), in every shape for the latter */
    const int lags[][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 1, 0, 0}, {2, 2, 0, 0}, {1, 0, 1, 0}, {1, 0, 2, 0},
                           {1, 1, 1, 0}, {1, 0, 1, 1}, {1, 0, 1, 2}, {1, 0, 1, 3}};
    for (size_t j = 0; j < sizeof lags / sizeof lags[0]; j++) {
        int first_bad = 0;
        long tasks = 0;
        const int bad = sweep_sizes(132, lags[j][3], lags[j][0], lags[j][1], lags[j][2], 64, 97, &tasks, &first_bad);
        if (bad)
            CHECK(0, "FC1 / FC2 / QKV interleaved %d / %d / %d grids behind (shape %d): %d tables out of order, the "
                  "first at batch %d", lags[j][0], lags[j][1], lags[j][2], lags[j][3], bad, first_bad);
        else
            CHECK(1, "FC1 / FC2 / QKV interleaved %d / %d / %d grids behind (shape %d): tables for batches 1..64 and "
                  "up to 1,024 complete and in dependency order", lags[j][0], lags[j][1], lags[j][2], lags[j][3]);
    }
    size_t count = 0;
    for (int L = 1; L <= 3; L++) {
        uint32_t *t = build(5, L, 132, 0, &count, err, sizeof err);
        CHECK(t && sg_mega_plan_check(t, count, 5, L, 0, err, sizeof err) == 0 &&
                  count == (size_t)sg_mega_total_tasks(5, L, 0),
              "%d layer(s), batch 5: %zu tasks, in order", L, count);
        free(t);
    }
    uint32_t *t = build(1, 12, 132, 0, &count, err, sizeof err);
    /* batch 1 = 2 row tiles; GEMM tasks are 256 columns wide: per layer 2 x (4 + 9 + 3 + 4 + 12 + 3) + 12 heads = 82;
     * plus 2 x (4 + 3) for the patch embedding, 2 x 4 for the post-LayerNorm, and the MAP head: 2 x 6 K/V tiles +
     * 12 pooling tasks (one per head) + one head row tile x (48 + 4 + 96 + 96): the head's products in column
     * blocks of 16, 32 and 8 (mega_hmm.cuh) and its LayerNorm, the same in every launch shape */
    CHECK(t && count == 12 * 82 + 14 + 8 + 268,
          "batch 1: %zu tasks (12 layers x 82 + patch embedding 14 + post-LN 8 + head 268)", count);
    free(t);
    t = build(1, 12, 132, 1, &count, err, sizeof err);
    /* narrow: GEMM tasks 128 columns wide, twice as many, and two attention tasks per head: per layer 2 x (4 + 18 +
     * 6 + 4 + 24 + 6) + 24 = 148; patch embedding 2 x (4 + 6); post-LN 8; head 2 x 12 + 12 + 244 */
    CHECK(t && count == 12 * 148 + 20 + 8 + 280,
          "batch 1, narrow: %zu tasks (12 layers x 148 + patch embedding 20 + post-LN 8 + head 280)", count);
    free(t);
    t = build(1, 12, 132, 2, &count, err, sizeof err);
    /* narrow64: 64 columns, four times the wide GEMM tasks, two attention tasks per head, and the encoder's
     * row-wise tasks (LayerNorms, patch preparation) 16 of 8 rows per row tile: per layer 2 x (16 + 36 + 12 + 16 +
     * 48 + 12) + 24 = 304; patch embedding 2 x (16 + 12); post-LN 2 x 16; head 2 x 24 + 12 + 244 (the head's
     * LayerNorm: 4) */
    CHECK(t && count == 12 * 304 + 56 + 32 + 304,
          "batch 1, narrow64: %zu tasks (12 layers x 304 + patch embedding 56 + post-LN 32 + head 304)", count);
    free(t);
    t = build(1, 12, 132, 3, &count, err, sizeof err);
    /* halves: narrow64, with the 768-column kinds (patch, out-projection, FC2) as 64 x 64 tasks, 24 per row tile,
     * and four attention tasks per head: per layer 2 x (16 + 36 + 24 + 16 + 48 + 24) + 48 = 376; patch embedding
     * 2 x (16 + 24); post-LN 2 x 16; head 2 x 24 + 12 + 244 */
    CHECK(t && count == 12 * 376 + 80 + 32 + 304,
          "batch 1, halves: %zu tasks (12 layers x 376 + patch embedding 80 + post-LN 32 + head 304)", count);
    free(t);
    CHECK(build(1, 12, 132, 4, &count, err, sizeof err) == NULL, "a task shape beyond halves is refused (%s)", err);
    CHECK(build(1, SG_MEGA_MAX_LAYERS + 1, 132, 0, &count, err, sizeof err) == NULL,
          "more layers than the encoding holds is refused (%s)", err);
}

static void check_broken_tables(void) {
    char err[512];
    size_t count = 0;
    const int n = 3, L = 2; /* image 0: rows 0-195 (tiles 0, 1); image 1: 196-391 (tiles 1-3); image 2: tiles 3, 4 */
    uint32_t *good = build(n, L, 132, 0, &count, err, sizeof err);
    CHECK(good && sg_mega_plan_check(good, count, n, L, 0, err, sizeof err) == 0, "the table of batch 3 passes");
    if (!good) return;
    uint32_t *t = malloc(count * sizeof *t);

    memcpy(t, good, count * sizeof *t); /* a QKV tile before the LayerNorm it reads */
    size_t q = find(t, count, SG_MT_QKV, 1, 2, 4), ln = find(t, count, SG_MT_LN1, 1, 2, 3);
    move_before(t, q, ln);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0 && strstr(err, "before its inputs"),
          "QKV of layer 1 moved before its LayerNorm-1 is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* image 0's attention after row tile 0's QKV tiles but before tile 1's */
    size_t a = find(t, count, SG_MT_ATT, 0, 0, 7), q1 = find(t, count, SG_MT_QKV, 0, 1, 0);
    move_before(t, a, q1);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0,
          "attention of an image before the QKV of the second row tile it spans is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* out-projection of row tile 1 before image 1's attention (it overlaps) */
    size_t o = find(t, count, SG_MT_OUT, 0, 1, 0), a1 = find(t, count, SG_MT_ATT, 0, 1, 11);
    move_before(t, o, a1);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0,
          "out-projection of a row tile before the attention of an image overlapping it is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* a task twice, another missing: the counters still add up */
    t[find(t, count, SG_MT_FC1, 0, 4, 11)] = sg_mega_encode(SG_MT_FC1, 0, 4, 10);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0, "a repeated FC1 tile (another missing) is "
          "rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* a post-LayerNorm task repeated in place of another */
    t[find(t, count, SG_MT_POSTLN, L, 4, 3)] = sg_mega_encode(SG_MT_POSTLN, L, 4, 2);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0 && strstr(err, "twice"),
          "a repeated post-LayerNorm task is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* a column tile that does not exist */
    t[find(t, count, SG_MT_QKV, 0, 0, 8)] = sg_mega_encode(SG_MT_QKV, 0, 0, 9);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0 && strstr(err, "out of range"),
          "a QKV column tile 9 (of 0..8) is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* the head's K/V tile of row tile 2 before its post-LayerNorm */
    size_t hkv = find(t, count, SG_MT_HKV, L, 2, 5), pl = find(t, count, SG_MT_POSTLN, L, 2, 1);
    move_before(t, hkv, pl);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0 && strstr(err, "before its inputs"),
          "a head K/V tile before the post-LayerNorm of its row tile is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* image 1's pooling before the K/V tiles of row tile 3 (it spans 1-3) */
    size_t pool = find(t, count, SG_MT_POOL, L, 1, 5), kv3 = find(t, count, SG_MT_HKV, L, 3, 0);
    move_before(t, pool, kv3);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0,
          "the pooling of an image before the head K/V of the last row tile it spans is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* the head's out-projection before the last image's pooling */
    size_t hout = find(t, count, SG_MT_HOUT, L, 0, 2), pool2 = find(t, count, SG_MT_POOL, L, 2, 11);
    move_before(t, hout, pool2);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0,
          "the head's out-projection before the pooling of every image of its rows is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* the head's FC2 before one of its FC1 column blocks */
    size_t hf2 = find(t, count, SG_MT_HFC2, L, 0, 0), hf1 = find(t, count, SG_MT_HFC1, L, 0, 95);
    move_before(t, hf2, hf1);
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0,
          "the head's FC2 before its last FC1 column block is rejected (%s)", err);

    memcpy(t, good, count * sizeof *t); /* the whole table reversed */
    for (size_t i = 0; i < count / 2; i++) {
        const uint32_t x = t[i];
        t[i] = t[count - 1 - i];
        t[count - 1 - i] = x;
    }
    CHECK(sg_mega_plan_check(t, count, n, L, 0, err, sizeof err) != 0, "the table reversed is rejected (%s)", err);

    CHECK(sg_mega_plan_check(good, count - 1, n, L, 0, err, sizeof err) != 0, "a table one task short is rejected (%s)",
          err);
    CHECK(sg_mega_plan_check(good, count, n + 1, L, 0, err, sizeof err) != 0,
          "a table checked against another batch size is rejected (%s)", err);
    CHECK(sg_mega_plan_check(good, count, n, L, 1, err, sizeof err) != 0,
          "a wide table checked as a narrow one is rejected (%s)", err);
    free(t);
    free(good);

    /* Narrow tables: the counters' targets double (two signals per 128 columns), and the check sees it. */
    good = build(n, L, 132, 1, &count, err, sizeof err);
    CHECK(good && sg_mega_plan_check(good, count, n, L, 1, err, sizeof err) == 0, "the narrow table of batch 3 passes");
    if (!good) return;
    CHECK(sg_mega_plan_check(good, count, n, L, 0, err, sizeof err) != 0,
          "a narrow table checked as a wide one is rejected (%s)", err);
    t = malloc(count * sizeof *t);
    memcpy(t, good, count * sizeof *t); /* FC2 of row tile 2 before the last of its 24 narrow FC1 tiles */
    size_t f2 = find(t, count, SG_MT_FC2, 0, 2, 0), f1 = find(t, count, SG_MT_FC1, 0, 2, 23);
    move_before(t, f2, f1);
    CHECK(sg_mega_plan_check(t, count, n, L, 1, err, sizeof err) != 0 && strstr(err, "before its inputs"),
          "narrow: FC2 before the last FC1 tile of its row tile is rejected (%s)", err);
    memcpy(t, good, count * sizeof *t); /* LayerNorm-2 before the last narrow out-projection tile (of 6) */
    size_t l2 = find(t, count, SG_MT_LN2, 0, 1, 0), o5 = find(t, count, SG_MT_OUT, 0, 1, 5);
    move_before(t, l2, o5);
    CHECK(sg_mega_plan_check(t, count, n, L, 1, err, sizeof err) != 0 && strstr(err, "before its inputs"),
          "narrow: LayerNorm-2 before the last out-projection tile of its row tile is rejected (%s)", err);
    free(t);
    free(good);

    /* Halves tables: a row tile's 768-column stages give 48 signals per layer (24 tasks of 64 x 64, two warpgroups
     * each), and the check sees a LayerNorm ahead of any one of them. */
    good = build(n, L, 132, 3, &count, err, sizeof err);
    CHECK(good && sg_mega_plan_check(good, count, n, L, 3, err, sizeof err) == 0, "the halves table of batch 3 passes");
    if (!good) return;
    CHECK(sg_mega_plan_check(good, count, n, L, 2, err, sizeof err) != 0,
          "a halves table checked as a narrow64 one is rejected (%s)", err);
    t = malloc(count * sizeof *t);
    memcpy(t, good, count * sizeof *t); /* layer 1's LayerNorm-1 of row tile 2 before FC2's last 64 x 64 task there */
    size_t l1 = find(t, count, SG_MT_LN1, 1, 2, 0), h23 = find(t, count, SG_MT_FC2, 0, 2, 23);
    move_before(t, l1, h23);
    CHECK(sg_mega_plan_check(t, count, n, L, 3, err, sizeof err) != 0 && strstr(err, "before its inputs"),
          "halves: LayerNorm-1 before the last FC2 task (rows 64-127, columns 704-767) of its row tile is rejected "
          "(%s)", err);
    memcpy(t, good, count * sizeof *t); /* an out-projection task beyond the 24 of a row tile */
    t[find(t, count, SG_MT_OUT, 0, 1, 23)] = sg_mega_encode(SG_MT_OUT, 0, 1, 24);
    CHECK(sg_mega_plan_check(t, count, n, L, 3, err, sizeof err) != 0 && strstr(err, "out of range"),
          "halves: an out-projection task 24 (of 0..23) is rejected (%s)", err);
    free(t);
    free(good);
}

/* The side list of a wide launch (sg_mega_plan_split): the row-wise kinds, every one of them, in the table's order, and
 * the main list the rest in order (so each list is a subsequence of the checked order, which is what the split's
 * deadlock argument needs). */
static void check_split(void) {
    char err[512];
    for (int n = 1; n <= 1024; n = n < 40 ? n + 13 : n * 2) {
        size_t count = 0, side = 0, nside = 0;
        uint32_t *t = build(n, 12, 132, 0, &count, err, sizeof err), *orig = malloc(count * sizeof *orig);
        memcpy(orig, t, count * sizeof *t);
        for (size_t i = 0; i < count; i++) nside += (size_t)sg_mega_side_kind(sg_mega_decode(t[i]).kind);
        int ok = sg_mega_plan_split(t, count, &side) == 0 && side == nside && side > 0;
        size_t im = 0, is = count - side;  /* walk orig: each task is the next of its own list */
        for (size_t i = 0; ok && i < count; i++) {
            const int sk = sg_mega_side_kind(sg_mega_decode(orig[i]).kind);
            ok = sk ? t[is++] == orig[i] : t[im++] == orig[i];
        }
        ok = ok && im == count - side && is == count;
        /* the lists one after the other (all main tasks first) is NOT a valid order: the first GEMM waits on a side
         * task, which is why the two lists need tickets of their own */
        const int concat_bad = sg_mega_plan_check(t, count, n, 12, 0, err, sizeof err) != 0;
        CHECK(ok && concat_bad, "batch %d: the side list holds the %zu row-wise tasks and the main list the other %zu, "
              "both in the table's order (the main list alone is not runnable: %s)", n, side, count - side,
              concat_bad ? "rejected" : "ACCEPTED");
        free(t);
        free(orig);
    }
}

int main(void) {
    check_all_sizes();
    check_broken_tables();
    check_split();
    return CHECK_DONE();
}
