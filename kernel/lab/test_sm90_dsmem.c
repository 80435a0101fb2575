/* kernel/lab/test_sm90_dsmem.c — experiment 8 (kernel/lab/sm90_dsmem_lab.cu): a chain of hops inside one cluster
 * through distributed shared memory, checked, then with --bench timed beside experiment 1's chain through global
 * memory (sm90_chain_lab.h) in the same run.
 *
 * Checks: every cluster size and data size, the last hop's output against in + H + 1 in every word (the output is
 * poisoned before each launch, so a hop that read its input before the previous hop's copy landed, or a lost copy,
 * breaks it), and that bad configurations are refused. Without CUDA in the build, or without a compute capability
 * 9.x GPU, it prints SKIP.
 *   test_sm90_dsmem                  the checks
 *   test_sm90_dsmem --quick          the smallest checks (for compute-sanitizer)
 *   test_sm90_dsmem --bench          the checks, then table 8
 * Option after those: --hops=H (timed hops per chain, default 2000).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/check.h"
#include "kernel/lab/sm90_chain_lab.h"
#include "kernel/lab/sm90_dsmem_lab.h"

#define KB 1024
static uint64_t g_rng;

/* One cluster chain of H hops of D bytes over C CTAs, its output checked word by word. */
static void dsmem_check(int H, int D, int C) {
    const size_t words = (size_t)D / 4;
    uint32_t *in = sg_test_xmalloc(words * 4 + 4), *out = sg_test_xmalloc(words * 4 + 4);
    for (size_t i = 0; i < words; i++) in[i] = (uint32_t)sg_test_splitmix64(&g_rng);
    sg_dsmem_hop_cfg c = {H, D, C, 1, in, out};
    sg_dsmem_hop_result r;
    char err[512] = "";
    if (sg_sm90_dsmem_hops(&c, &r, err, sizeof err) != 0) {
        CHECK(0, "sm90 dsmem: %d hops of %d B in a cluster of %d: %s", H, D, C, err);
    } else {
        long bad = 0, first = -1;
        for (size_t j = 0; j < words; j++)
            if (out[j] != in[j] + (uint32_t)H + 1u && bad++ == 0) first = (long)j;
        CHECK(bad == 0 && r.ns_per_hop > 0, "sm90 dsmem: %d hops of %d B in a cluster of %d (SMs %d, %d): the last "
              "output = input + %d in every word (%ld wrong, first at %ld), %.0f ns per hop", H, D, C, r.sm_rank0,
              r.sm_rank1, H + 1, bad, first, r.ns_per_hop);
    }
    free(in);
    free(out);
}

/* Table 8: ns per hop through a cluster's shared memory against experiment 1's global counters and copies, same
 * data per hop, same run. */
static void dsmem_table(int sms, int H) {
    printf("\nTABLE 8: hand-off per hop, %d timed hops per chain, median of 5 launches (min, max); one CTA per SM.\n"
           "  dsmem C: a cluster of C CTAs, hop h on rank h %% C, data pushed into the next rank's shared memory by\n"
           "  one bulk copy completing on its mbarrier (D = 0: a remote mbarrier arrival). global: experiment 1\n"
           "  (release, acquire poll with __nanosleep(64), bulk copy from global, stores), between 2 SMs and spread\n"
           "  over %d.\n",
           H, sms);
    printf("%10s  %-16s %9s %9s %9s\n", "bytes/hop", "path", "ns/hop", "min", "max");
    static const int Ds[4] = {0, 16 * KB, 64 * KB, 96 * KB};
    static const int Cs[3] = {2, 4, 8};
    uint32_t *in = sg_test_xmalloc(96 * KB);
    for (int i = 0; i < 96 * KB / 4; i++) in[i] = (uint32_t)i;
    for (int d = 0; d < 4; d++) {
        for (int k = 0; k < 3; k++) {
            sg_dsmem_hop_cfg c = {H, Ds[d], Cs[k], 5, in, NULL};
            sg_dsmem_hop_result r;
            char err[512] = "", path[32];
            if (sg_sm90_dsmem_hops(&c, &r, err, sizeof err) != 0) {
                CHECK(0, "sm90 dsmem bench D=%d C=%d: %s", Ds[d], Cs[k], err);
                continue;
            }
            snprintf(path, sizeof path, "dsmem %d", Cs[k]);
            printf("%10d  %-16s %9.0f %9.0f %9.0f\n", Ds[d], path, r.ns_per_hop, r.ns_min, r.ns_max);
            fflush(stdout);
        }
        for (int pair = 1; pair >= 0; pair--) {
            sg_chain_hop_cfg g = {H, Ds[d], pair ? 2 : 0, 0, 5, in, NULL};
            sg_chain_hop_result r;
            char err[512] = "";
            if (sg_sm90_chain_hops(&g, &r, err, sizeof err) != 0) {
                CHECK(0, "sm90 chain bench D=%d: %s", Ds[d], err);
                continue;
            }
            printf("%10d  %-16s %9.0f %9.0f %9.0f\n", Ds[d], pair ? "global pair" : "global spread", r.ns_per_hop,
                   r.ns_min, r.ns_max);
            fflush(stdout);
        }
    }
    free(in);
}

int main(int argc, char **argv) {
    int quick = 0, bench = 0, H = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--bench")) bench = 1;
        else if (!strncmp(argv[i], "--hops=", 7)) H = atoi(argv[i] + 7);
        else {
            fprintf(stderr, "usage: %s [--quick | --bench] [--hops=H]\n", argv[0]);
            return 2;
        }
    }
    if (!sg_test_lab_ready("sm90 dsmem lab", sg_sm90_dsmem_available)) return CHECK_DONE();
    char err[512] = "";
    const int sms = sg_sm90_dsmem_available(err, sizeof err);
    g_rng = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    printf("seed %llu, %d SMs\n", (unsigned long long)g_rng, sms);

    sg_dsmem_hop_result r;
    uint32_t dummy[64] = {0};
    sg_dsmem_hop_cfg bad = {10, 24, 2, 1, dummy, NULL};
    CHECK(sg_sm90_dsmem_hops(&bad, &r, err, sizeof err) == -1, "sm90 dsmem rejects 24 B per hop (%s)", err);
    bad.bytes = 0;
    bad.cluster = 3;
    CHECK(sg_sm90_dsmem_hops(&bad, &r, err, sizeof err) == -1, "sm90 dsmem rejects a cluster of 3 (%s)", err);
    bad.cluster = 2;
    bad.bytes = SG_DSMEM_MAX_BYTES + 16;
    CHECK(sg_sm90_dsmem_hops(&bad, &r, err, sizeof err) == -1, "sm90 dsmem rejects %d B per hop (%s)", bad.bytes, err);

    const int HC = quick ? 5 : 301; /* odd: the last hop is not on rank 0 */
    dsmem_check(HC, 0, 2);
    dsmem_check(HC, 16 * KB, 2);
    if (!quick) {
        for (int C = 2; C <= 8; C *= 2) {
            dsmem_check(HC, 0, C);
            dsmem_check(HC, 48, C); /* a copy shorter than a 16 KB piece */
            dsmem_check(HC, 16 * KB + 16, C);
            dsmem_check(HC, SG_DSMEM_MAX_BYTES, C);
        }
    }
    if (bench && !quick) dsmem_table(sms, H);
    return CHECK_DONE();
}
