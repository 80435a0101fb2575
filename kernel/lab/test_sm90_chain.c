/* kernel/lab/test_sm90_chain.c — the hop-latency, L2-ingest and proxy-fence microbenchmarks
 * (kernel/lab/sm90_chain_lab.cu): correctness first, then with --bench the tables (the wgmma chain's step, the
 * proxy fence's cost, hop latency, L2 ingest by bulk copies and by tensor maps) that bound the megakernel's batch-1
 * latency.
 *
 * Checks: a chain's data (region k of the chain must equal region 0 + k in every u32 word, the regions poisoned
 * before each launch, so a hop that read before the previous hop's stores were visible to its bulk copy, a
 * missing fence or a hop run out of order, breaks every later region), the pair and spread placements, both
 * wait variants; the ingest kernel's checked words (one per chunk, against the buffer's pattern) and chunk count
 * for each source, with and without a proxy fence per stage; the tensor-map ingest's checked words (through the
 * swizzle) for 2D and 3D boxes of 64 and 128 rows, alone and beside a bulk copy, and each source; the fence kernel's staging words and copies; the
 * wgmma chain's accumulators (exact integer sums); and that bad configurations are refused. Without CUDA in the build, or without a compute
 * capability 9.x GPU, it prints SKIP.
 *   test_sm90_chain                  the checks
 *   test_sm90_chain --quick          the smallest checks (for compute-sanitizer)
 *   test_sm90_chain --bench          the checks, then the tables
 *   test_sm90_chain --task           experiment 7's checks and table 7 only
 * Options after those: --hops=H (timed hops per chain, default 2000), --mb=R (MB streamed per CTA, default 8).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/check.h"
#include "kernel/lab/sm90_chain_lab.h"

#define KB 1024
static uint64_t g_rng;
static const char *k_src[3] = {"shared", "L2", "DRAM"};

/* One chain of H hops of D bytes over `ctas` CTAs (0: all SMs), its regions checked word by word. */
static void hop_check(int H, int D, int ctas, int spin) {
    const size_t words = (size_t)D / 4;
    uint32_t *in = sg_test_xmalloc(words * 4), *out = sg_test_xmalloc((size_t)(H + 1) * words * 4);
    for (size_t i = 0; i < words; i++) in[i] = (uint32_t)sg_test_splitmix64(&g_rng);
    sg_chain_hop_cfg c = {H, D, ctas, spin, 1, in, out};
    sg_chain_hop_result r;
    char err[512] = "";
    if (sg_sm90_chain_hops(&c, &r, err, sizeof err) != 0) {
        CHECK(0, "sm90 chain: %d hops of %d B: %s", H, D, err);
    } else {
        long bad = 0, first = -1;
        for (size_t k = 1; k <= (size_t)H + 1; k++)
            for (size_t j = 0; j < words; j++)
                if (out[(k - 1) * words + j] != in[j] + (uint32_t)k && bad++ == 0) first = (long)((k - 1) * words + j);
        CHECK(bad == 0 && r.ns_per_hop > 0, "sm90 chain: %d hops of %d B over %d CTAs (stride %d, %s): every region "
              "k = region 0 + k (%ld words wrong, first at word %ld of regions 1..), %.0f ns per hop", H, D, r.ctas,
              r.stride, spin ? "spin" : "nanosleep", bad, first, r.ns_per_hop);
    }
    free(in);
    free(out);
}

/* One ingest configuration; 0 when it ran and read what it should (res filled), else the failure is printed. */
static int ingest_run(int N, int source, int B, int S, long long R, long long dram, int reps, int fence,
                      sg_chain_ingest_result *r) {
    sg_chain_ingest_cfg c = {N, source, B, S, R, dram, reps, fence};
    char err[512] = "";
    if (sg_sm90_chain_ingest(&c, r, err, sizeof err) != 0) {
        CHECK(0, "sm90 ingest %s N=%d: %s", k_src[source], N, err);
        return -1;
    }
    if (r->bad != 0 || r->chunks != N * (R / B)) {
        CHECK(0, "sm90 ingest %s N=%d B=%d S=%d R=%lld: %lld checked words wrong, %lld of %lld chunks consumed",
              k_src[source], N, B, S, R, r->bad, r->chunks, N * (R / B));
        return -1;
    }
    return 0;
}

static void ingest_check(int N, int source, int B, int S, long long R, long long dram) {
    for (int fence = 0; fence < 2; fence++) {
        sg_chain_ingest_result r;
        if (ingest_run(N, source, B, S, R, dram, 1, fence, &r) == 0)
            CHECK(1, "sm90 ingest %s: %d CTAs x %lld KB in %d stages of %d KB%s: every checked word and chunk as "
                  "expected (%.1f GB/s per CTA)", k_src[source], N, R / KB, S, B / KB,
                  fence ? ", proxy fence per stage" : "", r.gbs_cta);
    }
}

static void hop_table(int sms, int H) {
    printf("\nTABLE 1: hop latency, %d timed hops per chain, median of 5 launches (min, max beside it); one CTA per "
           "SM, %d SMs.\n  spread: hop h on CTA h * stride %% %d; pair: hops alternate between CTAs 0 and 1. wait: "
           "sg_dep_wait's __nanosleep(64) poll, or a tight poll.\n", H, sms, sms);
    printf("%10s  %-20s %-9s %9s %9s %9s  %s\n", "bytes/hop", "placement", "wait", "ns/hop", "min", "max",
           "SMs of hops 0, 1");
    static const int Ds[4] = {0, 16 * KB, 64 * KB, 192 * KB};
    uint32_t *in = sg_test_xmalloc(192 * KB);
    for (int i = 0; i < 192 * KB / 4; i++) in[i] = (uint32_t)i;
    for (int spin = 0; spin < 2; spin++)
        for (int d = 0; d < 4; d++)
            for (int pair = 0; pair < 2; pair++) {
                if (spin && d % 2) continue; /* the tight poll at D = 0 and 64 KB only */
                sg_chain_hop_cfg c = {H, Ds[d], pair ? 2 : 0, spin, 5, in, NULL};
                sg_chain_hop_result r;
                char err[512] = "", place[32];
                if (sg_sm90_chain_hops(&c, &r, err, sizeof err) != 0) {
                    CHECK(0, "sm90 chain bench D=%d: %s", Ds[d], err);
                    continue;
                }
                snprintf(place, sizeof place, pair ? "pair" : "spread (stride %d)", r.stride);
                printf("%10d  %-20s %-9s %9.0f %9.0f %9.0f  %d, %d\n", Ds[d], place, spin ? "spin" : "nanosleep",
                       r.ns_per_hop, r.ns_min, r.ns_max, r.sm_hop0, r.sm_hop1);
                fflush(stdout);
            }
    free(in);
}

/* Tables 2 and 4: the columns, and one run's row (its stage described by `what`). */
static void ingest_columns(const char *what) {
    printf("%-7s %5s %9s %8s %10s %11s %10s %7s\n", "source", "CTAs", what, "us", "GB/s/CTA", "GB/s total",
           "CTA0 GB/s", "MHz");
}
static void ingest_row(int src, int N, const char *what, const sg_chain_ingest_result *r) {
    printf("%-7s %5d %9s %8.1f %10.1f %11.1f %10.1f %7.0f\n", k_src[src], N, what, r->us, r->gbs_cta, r->gbs_total,
           r->gbs_cta0, r->mhz);
}

static void ingest_table(int sms, long long R) {
    printf("\nTABLE 2: L2 -> SM ingest, %lld MB per CTA, median of 5 launches (CUDA events, after a warm-up launch).\n"
           "  shared: all CTAs cycle through one 1.25 MB region; L2: own regions, <= 24 MB in all, resident; DRAM: "
           "own regions of a 2 GB buffer, read once.\n  ring: stages x KB (bytes in flight per SM); CTA0 GB/s: CTA "
           "0's own %%globaltimer span; MHz: CTA 0's clock64 / %%globaltimer; +f: a proxy fence per stage.\n", R >> 20);
    ingest_columns("ring");
    static const int Ns[8] = {1, 4, 12, 24, 48, 66, 96, 132};
    /* stages, KB, proxy fence per stage: bytes in flight and piece size without the fence; two with it (the first
     * run's only kind: ~350 ns a piece whatever the ring). 4 x 48 KB: the megakernel's small-launch ring. */
    static const int rings[7][3] = {{4, 8 * KB, 0},  {12, 8 * KB, 0},  {4, 16 * KB, 0}, {12, 16 * KB, 0},
                                    {4, 48 * KB, 0}, {12, 16 * KB, 1}, {4, 48 * KB, 1}};
    int failed = 0, runs = 0;
    for (int src = 0; src < 3; src++)
        for (int n = 0; n < 8; n++) {
            const int N = Ns[n] < sms ? Ns[n] : sms;
            if (n > 0 && Ns[n - 1] >= sms) break; /* clipped: the same N again */
            for (int g = 0; g < 7; g++) {
                const int S = rings[g][0], B = rings[g][1], fence = rings[g][2];
                sg_chain_ingest_result r;
                char ring[24];
                runs++;
                if (ingest_run(N, src, B, S, R / B * B, 0, 5, fence, &r) != 0) {
                    failed++;
                    continue;
                }
                snprintf(ring, sizeof ring, "%dx%d%s", S, B / KB, fence ? "+f" : "");
                ingest_row(src, N, ring, &r);
                fflush(stdout);
            }
        }
    CHECK(failed == 0, "sm90 ingest bench: %d of %d runs read every checked word and chunk as expected", runs - failed,
          runs);
}

/* One tensor-map ingest configuration (experiment 4); 0 when it ran and read what it should, else printed. */
static int tingest_run(int N, int source, int box_rows, int blocks, int copies, int S, long long R, int reps,
                       int bulk, sg_chain_ingest_result *r) {
    sg_chain_tingest_cfg c = {N, source, box_rows, blocks, copies, S, R, reps, bulk};
    char err[512] = "";
    if (sg_sm90_chain_tingest(&c, r, err, sizeof err) != 0) {
        CHECK(0, "sm90 tensor ingest %s N=%d: %s", k_src[source], N, err);
        return -1;
    }
    const long long B = (long long)copies * blocks * box_rows * 128 + bulk;
    if (r->bad || r->chunks != N * (R / B)) {
        CHECK(0, "sm90 tensor ingest %s N=%d rows %d %dx%d blocks + %d bulk S=%d: %lld checked words wrong, %lld of "
              "%lld chunks consumed", k_src[source], N, box_rows, copies, blocks, bulk, S, r->bad, r->chunks,
              N * (R / B));
        return -1;
    }
    return 0;
}

static void tingest_check(int N, int source, int box_rows, int blocks, int copies, int S, long long R, int bulk) {
    sg_chain_ingest_result r;
    if (tingest_run(N, source, box_rows, blocks, copies, S, R, 1, bulk, &r) == 0)
        CHECK(1, "sm90 tensor ingest %s: %d CTAs x %lld KB, stages of %d copies of %d x %d-row K blocks + %d KB bulk: "
              "every checked word and chunk as expected (%.1f GB/s per CTA)", k_src[source], N, R / KB, copies,
              blocks, box_rows, bulk / KB, r.gbs_cta);
}

/* Experiment 4: the megakernel's 8 KB boxes against fewer, larger copies of the same 48 KB stages. */
static void tingest_table(int sms, long long R) {
    printf("\nTABLE 4: L2 -> SM ingest through tensor maps (128-byte swizzle), %lld MB per CTA, 4 stages of 48 KB, "
           "median of 5 launches.\n  copy: copies per stage x (K blocks per copy) x box rows; 6x1x64 is the "
           "megakernel's 64 x 64 task today (A and W boxes of 8 KB), 3x1x128 its 128-row boxes.\n  Sources as table "
           "2 (a CTA's panel: box rows x the region's K blocks).\n", R >> 20);
    ingest_columns("copy");
    static const int Ns[5] = {1, 12, 48, 96, 132};
    static const int shapes[5][3] = {{6, 1, 64}, {2, 3, 64}, {1, 6, 64}, {3, 1, 128}, {1, 3, 128}};
    int failed = 0, runs = 0;
    for (int src = 0; src < 3; src++)
        for (int n = 0; n < 5; n++) {
            const int N = Ns[n] < sms ? Ns[n] : sms;
            if (n > 0 && Ns[n - 1] >= sms) break;
            for (int g = 0; g < 5; g++) {
                const int copies = shapes[g][0], blocks = shapes[g][1], rows = shapes[g][2];
                const long long B = (long long)copies * blocks * rows * 128;
                sg_chain_ingest_result r;
                char shape[24];
                runs++;
                if (tingest_run(N, src, rows, blocks, copies, 4, R / B * B, 5, 0, &r) != 0) {
                    failed++;
                    continue;
                }
                snprintf(shape, sizeof shape, "%dx%dx%d", copies, blocks, rows);
                ingest_row(src, N, shape, &r);
                fflush(stdout);
            }
        }
    CHECK(failed == 0, "sm90 tensor ingest bench: %d of %d runs read every checked word and chunk as expected",
          runs - failed, runs);
}

/* Experiment 4 with a bulk copy per stage beside the tensor copies: one limit or two? And table 2's bulk copies
 * beyond 48 KB (one copy per stage; the bulk kernel's copies complete one after another). */
static void mixed_table(int sms, long long R) {
    printf("\nTABLE 5: tensor-map copies and 1-D bulk copies in the same stages, %lld MB per CTA, median of 5 "
           "launches.\n  stage: tensor part (copies x K blocks x rows) + bulk KB, x stages; bulk-only rows: table 2's "
           "kernel (no tensor map).\n", R >> 20);
    printf("%-7s %5s %16s %8s %10s %11s %10s\n", "source", "CTAs", "stage", "us", "GB/s/CTA", "GB/s total",
           "CTA0 GB/s");
    static const int Ns[3] = {1, 48, 132};
    /* tensor K blocks (of 64 rows), bulk KB, stages; blocks 0: the bulk kernel alone */
    static const int cfg[6][3] = {{3, 0, 4}, {3, 24, 4}, {6, 0, 4}, {6, 48, 2}, {0, 48, 4}, {0, 96, 2}};
    int failed = 0, runs = 0;
    for (int src = 1; src < 3; src++)
        for (int n = 0; n < 3; n++) {
            const int N = Ns[n] < sms ? Ns[n] : sms;
            for (int g = 0; g < 6; g++) {
                const int blocks = cfg[g][0], bulk = cfg[g][1] * KB, S = cfg[g][2];
                const long long B = (long long)blocks * 8 * KB + bulk;
                sg_chain_ingest_result r;
                char stage[40];
                runs++;
                const int bad = blocks ? tingest_run(N, src, 64, blocks, 1, S, R / B * B, 5, bulk, &r)
                                       : ingest_run(N, src, bulk, S, R / B * B, 0, 5, 0, &r);
                if (bad) {
                    failed++;
                    continue;
                }
                snprintf(stage, sizeof stage, "%s%dx64+%d x%d", blocks ? "1x" : "", blocks, bulk / KB, S);
                printf("%-7s %5d %16s %8.1f %10.1f %11.1f %10.1f\n", k_src[src], N, stage, r.us, r.gbs_cta,
                       r.gbs_total, r.gbs_cta0);
                fflush(stdout);
            }
        }
    CHECK(failed == 0, "sm90 mixed ingest bench: %d of %d runs read every checked word and chunk as expected",
          runs - failed, runs);
}

/* Experiment 3: the consumers' proxy fence with and without the producer's copies in flight. */
static void fence_table(int sms) {
    printf("\nTABLE 3: fence.proxy.async.shared::cta after 32 KB of staging stores by 128 threads, %d CTAs (one per "
           "SM), 2000 iterations;\n  load: one producer thread of the CTA keeps 3 x 48 KB bulk copies from L2 in "
           "flight meanwhile. Cycles per iteration, mean over CTAs.\n", sms);
    printf("%-6s %-6s %13s %13s %9s %7s\n", "load", "fence", "fence cyc", "iter cyc", "iter ns", "MHz");
    for (int load = 0; load < 2; load++)
        for (int fence = 0; fence < 2; fence++) {
            sg_chain_fence_cfg c = {0, 2000, load, fence};
            sg_chain_fence_result r;
            char err[512] = "";
            if (sg_sm90_chain_fence(&c, &r, err, sizeof err) != 0) {
                CHECK(0, "sm90 fence bench: %s", err);
                continue;
            }
            printf("%-6s %-6s %13.1f %13.1f %9.1f %7.0f\n", load ? "yes" : "no", fence ? "yes" : "no",
                   r.fence_cycles, r.iter_cycles, r.mhz > 0 ? r.iter_cycles / r.mhz * 1000 : 0, r.mhz);
            fflush(stdout);
            if (r.bad || (load && r.copies < sms))
                CHECK(0, "sm90 fence bench load %d fence %d: %lld staging words wrong, %lld copies", load, fence,
                      r.bad, r.copies);
        }
}

/* The fence experiment runs and leaves the staging intact, with and without copies in flight. */
static void fence_check(int ctas, int iters) {
    for (int load = 0; load < 2; load++) {
        sg_chain_fence_cfg c = {ctas, iters, load, 1};
        sg_chain_fence_result r;
        char err[512] = "";
        if (sg_sm90_chain_fence(&c, &r, err, sizeof err) != 0) {
            CHECK(0, "sm90 fence load %d: %s", load, err);
            continue;
        }
        CHECK(r.bad == 0 && (load ? r.copies >= 3 * ctas : r.copies == 0),
              "sm90 fence: %d CTAs x %d iterations, load %d: %lld staging words wrong, %lld copies (%.0f cycles a "
              "fence)", ctas, iters, load, r.bad, r.copies, r.fence_cycles);
    }
}

/* Experiment 6: one configuration (ring 0: the bare chain; 1, 2: FC2's task in the megakernel's small-task loop with
 * the stage index uniform or per thread); every accumulator must equal the CPU's integer sums. */
static void mma_check(int n, int wgs, int chains, int group, int ring) {
    sg_chain_mma_cfg c = {n, wgs, chains, 192, group, 2, ring};
    sg_chain_mma_result r = {0, 0, 0};
    char err[512] = "";
    if (sg_sm90_chain_mma(&c, &r, err, sizeof err) != 0) {
        CHECK(0, "sm90 mma chain n %d ring %d: %s", n, ring, err);
        return;
    }
    CHECK(r.bad == 0 && r.cycles_per_step > 0, "sm90 mma chain: 192 steps of m64n%dk16, %d warpgroup(s) x %d "
          "chain(s), a commit every %d%s: %lld of %d accumulators wrong, %.1f cycles a step", n, wgs, chains, group,
          ring == 1 ? ", in the megakernel's small-task loop (stage index uniform)"
          : ring == 2 ? ", in the megakernel's small-task loop (stage index per thread)" : "",
          r.bad, wgs * chains * 64 * (ring ? 32 : n), r.cycles_per_step);
}

/* One row of table 6 (5 launches, median), with a note after it. */
static void mma_row(int n, int wgs, int chains, int group, int ring, const char *note) {
    sg_chain_mma_cfg c = {n, wgs, chains, 192, group, 5, ring};
    sg_chain_mma_result r = {0, 0, 0};
    char err[512] = "";
    if (sg_sm90_chain_mma(&c, &r, err, sizeof err) != 0 || r.bad) {
        CHECK(0, "sm90 mma chain bench n %d ring %d: %s (%lld wrong)", n, ring, err, r.bad);
        return;
    }
    const double ns_step = r.mhz > 0 ? r.cycles_per_step / r.mhz * 1000 : 0;
    printf("%-5d %-4d %-7d %-3d %12.1f %10.1f %14.0f %14.2f%s\n", n, wgs, chains, group, r.cycles_per_step, ns_step,
           wgs * chains * 64.0 * n * 16 / r.cycles_per_step, 192 * ns_step / 1000, note);
    fflush(stdout);
}

/* Table 6: cycles per step of a dependent wgmma chain, operands in shared memory (the floor of a small task's K
 * loop: at batch 1 FC2's 64 x 64 task is two warpgroups of one m64n32k16 chain of 192 steps, a commit every 12). */
static void mma_table(void) {
    printf("\nTABLE 6: a chain of dependent m64nNk16 wgmma (bf16, fp32 accumulators), operands already in shared "
           "memory, 192 steps (K = 3,072),\n  one CTA; warpgroups x independent chains each; a commit every G steps "
           "then wait_group 1. Median of 5 launches.\n");
    printf("%-5s %-4s %-7s %-3s %12s %10s %14s %14s\n", "N", "WGs", "chains", "G", "cycles/step", "ns/step",
           "MACs/cycle/SM", "192 steps, us");
    static const int ns[4] = {32, 64, 128, 256}, cfgs[4][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}}, gs[2] = {12, 4};
    for (int gi = 0; gi < 2; gi++)
        for (int ni = 0; ni < 4; ni++)
            for (int ci = 0; ci < 4; ci++)
                if (cfgs[ci][1] == 1 || ns[ni] <= 128) mma_row(ns[ni], cfgs[ci][0], cfgs[ci][1], gs[gi], 0, "");
    /* FC2's 64 x 64 task (n 32, 2 warpgroups, G 12) inside the megakernel's small-task loop: a 4-stage ring of
     * 48 KB stages, full / empty barriers, a producer thread arriving without copies. */
    mma_row(32, 2, 1, 12, 1, "  in the megakernel's ring, stage index uniform (v55)");
    mma_row(32, 2, 1, 12, 2, "  in the megakernel's ring, stage index per thread (before v55)");
}

/* Experiment 7: one configuration of the 64 x 64 task with its bytes; every output must equal the CPU's sums. */
static const char *k_task_mode[4] = {"tensor 6 x 8 KB", "bulk 6 x 8 KB", "bulk 2 x 24 KB", "tensor, maps gmem"};
/* Each mode also carries one of the surroundings, so every path of the kernel is checked: mode 0 its producer polling
 * its own flag, mode 1 on SMs 0..N-1 with the other SMs streaming beside it, mode 2 on SMs 0..N-1 with every SM
 * polling one word. */
static void task_check(int mode, int rh, int ct, int k, int cold) {
    sg_chain_task_cfg c = {mode, rh, ct, k, cold, 2, mode == 0 ? 1 : mode == 2 ? 2 : 0, mode == 1 || mode == 2,
                           mode == 1};
    sg_chain_task_result r = {0, 0, 0, 0, 0, 0, 0};
    char err[512] = "";
    if (sg_sm90_chain_task(&c, &r, err, sizeof err) != 0) {
        CHECK(0, "sm90 chain task mode %d: %s", mode, err);
        return;
    }
    CHECK(r.bad == 0 && r.loop_us_med > 0, "sm90 chain task (%s%s): %d x %d tasks of 64 x 64, K %d: %lld of %d outputs "
          "wrong, loop %.2f us", k_task_mode[mode], cold == 1 ? ", cold" : cold == 2 ? ", A rewritten" : "", rh, ct, k,
          r.bad, rh * ct * 4096, r.loop_us_med);
}

/* One row of table 7 (10 launches, medians). */
static void task_row(int mode, int rh, int ct, int k, int cold, int poll, int place, int bg) {
    sg_chain_task_cfg c = {mode, rh, ct, k, cold, 10, poll, place, bg};
    static const char *where[4] = {"", "  on SMs 0..N-1", "  on even SMs", "  on the highest SMs"};
    sg_chain_task_result r = {0, 0, 0, 0, 0, 0, 0};
    char err[512] = "";
    if (sg_sm90_chain_task(&c, &r, err, sizeof err) != 0 || r.bad) {
        CHECK(0, "sm90 chain task bench mode %d: %s (%lld wrong)", mode, err, r.bad);
        return;
    }
    static const char *l2[3] = {"hot", "cold", "A new"};
    printf("%-17s %-5s %4d %5d %10.2f %10.2f %9.2f %9.2f %9.1f %6.0f%s\n", k_task_mode[mode], l2[cold],
           rh * ct, k, r.loop_us_max, r.loop_us_med, r.first_us, r.launch_us, r.gbs_cta, r.mhz,
           bg == 1 ? "  84 SMs streaming L2 beside" : bg == 2 ? "  84 SMs streaming DRAM beside"
           : poll == 1 ? "  producer polling" : poll == 2 ? "  every SM polling one word" : where[place]);
    fflush(stdout);
}

/* Table 7: the megakernel's 64 x 64 task (FC2's and the out-projection's at batch 1: 4 row halves x 12 column tiles)
 * with its operands copied as the megakernel does (tensor maps) or by 1-D bulk copies of pre-swizzled operands. */
static void task_table(int sms) {
    printf("\nTABLE 7: 64 x 64 GEMM tasks (m64n32k16 x 2 warpgroups, 4-stage ring of 48 KB stages), operands copied "
           "from global memory;\n  loop = kernel entry to a CTA's last MMA (slowest CTA, median CTA), first = the median "
           "CTA's wait for its first stage; medians of 10 launches.\n");
    printf("%-17s %-5s %4s %5s %10s %10s %9s %9s %9s %6s\n", "copies", "L2", "CTAs", "K", "loop max", "loop med",
           "first", "launch", "GB/s/CTA", "MHz");
    for (int k = 3072; k >= 768; k /= 4)
        for (int cold = 0; cold < 3; cold++)
            for (int mode = 0; mode < 4; mode++) task_row(mode, 4, 12, k, cold, 0, 0, 0);
    for (int mode = 0; mode < 3; mode += 2) task_row(mode, 1, 1, 3072, 0, 0, 0, 0);
    if (sms >= 132)
        for (int mode = 0; mode < 3; mode += 2) task_row(mode, 4, 33, 3072, 0, 0, 0, 0);
    /* The megakernel's surroundings, one at a time: A just written (W in L2), the producer polling, and where the
     * 48 tasks run (the megakernel's go to whichever CTAs take their tickets). */
    for (int cold = 0; cold < 3; cold += 2) task_row(0, 4, 12, 3072, cold, 1, 0, 0);
    for (int place = 1; place < 4; place++) task_row(0, 4, 12, 3072, 0, 0, place, 0);
    task_row(0, 4, 12, 3072, 0, 2, 1, 0);
    task_row(0, 4, 12, 3072, 2, 2, 1, 0);
    task_row(0, 4, 12, 768, 0, 2, 1, 0);
    for (int bg = 1; bg < 3; bg++) task_row(0, 4, 12, 3072, 0, 0, 1, bg);
}

int main(int argc, char **argv) {
    int quick = 0, bench = 0, task = 0, H = 2000;
    long long mb = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--bench")) bench = 1;
        else if (!strcmp(argv[i], "--task")) task = 1;
        else if (!strncmp(argv[i], "--hops=", 7)) H = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "--mb=", 5)) mb = atoll(argv[i] + 5);
        else {
            fprintf(stderr, "usage: %s [--quick | --bench | --task] [--hops=H] [--mb=MB]\n", argv[0]);
            return 2;
        }
    }
    if (!sg_test_lab_ready("sm90 chain lab", sg_sm90_chain_available)) return CHECK_DONE();
    char err[512] = "";
    const int sms = sg_sm90_chain_available(err, sizeof err);
    g_rng = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    printf("seed %llu, %d SMs\n", (unsigned long long)g_rng, sms);
    /* The 64 x 64 task with its bytes: each way of copying, hot and cold, outputs against the CPU. */
    for (int mode = 0; mode < 4; mode++) task_check(mode, quick ? 1 : 4, quick ? 2 : 12, quick ? 576 : 3072, mode % 3);
    sg_chain_task_cfg kbad = {0, 4, 12, 1000, 0, 1, 0, 0, 0};
    sg_chain_task_result kr;
    CHECK(sg_sm90_chain_task(&kbad, &kr, err, sizeof err) == -1, "sm90 chain task rejects K 1000 (%s)", err);
    if (task) {
        if (!quick) task_table(sms);
        return CHECK_DONE();
    }

    sg_chain_hop_result hr;
    sg_chain_hop_cfg bad = {10, 24, 0, 0, 1, NULL, NULL};
    uint32_t dummy[64] = {0};
    bad.in = dummy;
    CHECK(sg_sm90_chain_hops(&bad, &hr, err, sizeof err) == -1, "sm90 chain rejects 24 B per hop (%s)", err);
    bad.bytes = 0;
    bad.ctas = 1;
    CHECK(sg_sm90_chain_hops(&bad, &hr, err, sizeof err) == -1, "sm90 chain rejects a chain on one CTA (%s)", err);
    sg_chain_ingest_result ir;
    sg_chain_ingest_cfg ibad = {1, SG_INGEST_L2, 16 * KB, 13, 16 * KB * 13, 0, 1, 0};
    CHECK(sg_sm90_chain_ingest(&ibad, &ir, err, sizeof err) == -1, "sm90 ingest rejects a 208 KB ring (%s)", err);

    /* Chains: every placement and wait variant, data checked. */
    const int HC = quick ? 6 : 300;
    hop_check(HC, 0, 0, 0);
    hop_check(HC, 16 * KB, 0, 0);
    hop_check(HC, 16 * KB, 2, 0);
    if (!quick) {
        hop_check(HC, 0, 2, 1);
        hop_check(HC, 64 * KB, 0, 1);
        hop_check(HC, 64 * KB, 2, 0);
        hop_check(HC, 192 * KB, 0, 0);
        hop_check(HC, 192 * KB, 2, 0);
        hop_check(HC, 48, 3, 0); /* a piece shorter than 16 KB, an odd CTA count */
    }
    /* Ingest: every source, one CTA and many, both stage sizes. */
    for (int src = 0; src < 3; src++) {
        if (quick) {
            ingest_check(2, src, 16 * KB, 3, 256 * KB, 16 << 20);
            continue;
        }
        ingest_check(1, src, 16 * KB, 12, 2 << 20, 0);
        ingest_check(sms, src, 16 * KB, 12, 2 << 20, 0);
        ingest_check(sms, src, 48 * KB, 4, 48 * KB * 40, 0);
    }
    /* Tensor-map ingest: 2D and 3D boxes, both box heights, every source. */
    for (int src = 0; src < 3; src++) {
        tingest_check(2, src, 64, 1, 6, 4, 48 * KB * 8, 0);
        tingest_check(2, src, 64, 3, 2, 4, 48 * KB * 8, 0);
        tingest_check(2, src, 64, 3, 1, 4, 48 * KB * 8, 24 * KB);
        if (quick) continue;
        tingest_check(sms, src, 64, 6, 1, 4, 48 * KB * 40, 0);
        tingest_check(sms, src, 128, 3, 1, 4, 48 * KB * 40, 0);
        tingest_check(1, src, 128, 1, 3, 4, 48 * KB * 40, 0);
        tingest_check(sms, src, 64, 6, 1, 2, 96 * KB * 20, 48 * KB);
    }
    sg_chain_tingest_cfg tbad = {1, SG_INGEST_L2, 96, 1, 6, 4, 48 * KB * 8, 1, 0};
    CHECK(sg_sm90_chain_tingest(&tbad, &ir, err, sizeof err) == -1, "sm90 tensor ingest rejects 96-row boxes (%s)",
          err);
    sg_chain_tingest_cfg tbad2 = {1, SG_INGEST_L2, 64, 3, 1, 4, 48 * KB * 8, 1, 512};
    CHECK(sg_sm90_chain_tingest(&tbad2, &ir, err, sizeof err) == -1,
          "sm90 tensor ingest rejects a bulk copy that would misalign the next stage's boxes (%s)", err);
    fence_check(quick ? 2 : sms, quick ? 20 : 500);
    /* The wgmma chain: every shape and placement the table times, each accumulator against the CPU. */
    mma_check(32, 2, 1, 12, 0);
    mma_check(32, 2, 1, 12, 1);
    if (!quick) {
        mma_check(32, 2, 1, 12, 2);
        mma_check(64, 1, 2, 4, 0);
        mma_check(128, 2, 2, 12, 0);
        mma_check(256, 1, 1, 4, 0);
        mma_check(32, 1, 2, 4, 0);
    }
    sg_chain_mma_cfg mbad = {256, 1, 2, 192, 4, 1, 0};
    sg_chain_mma_result mr;
    CHECK(sg_sm90_chain_mma(&mbad, &mr, err, sizeof err) == -1, "sm90 mma chain rejects two n256 chains (%s)", err);
    if (bench && !quick) {
        mma_table();
        fence_table(sms);
        hop_table(sms, H);
        ingest_table(sms, mb << 20);
        tingest_table(sms, mb << 20);
        mixed_table(sms, mb << 20);
        task_table(sms);
    }
    return CHECK_DONE();
}
