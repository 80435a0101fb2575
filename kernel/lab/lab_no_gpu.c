/* kernel/lab/lab_no_gpu.c — the lab's entry points for a build without the CUDA toolkit.
 *
 * Compiled into build/liblab.a instead of the .cu files of kernel/lab when the Makefile finds no nvcc (or
 * WITH_CUDA=0), so the lab tests link in every build; each entry point refuses with the reason and the tests
 * SKIP (sg_lab_built says so up front).
 */
#include <stdio.h>
#include <string.h>
#include "lab.h"
#include "sm100_attn_lab.h"
#include "sm100_gemm_check.h"
#include "sm100_mxf8_tile.h"
#include "sm90_chain_lab.h"
#include "sm90_dsmem_lab.h"
#include "sm90_lean_lab.h"
#include "sm90_lab.h"

static const char k_no_cuda[] = "built without CUDA (no nvcc found at build time): the lab kernels are absent";

static int no_cuda(char *err, size_t errlen) {
    snprintf(err, errlen, "%s", k_no_cuda);
    return -1;
}

int sg_lab_built(char *why, size_t whylen) {
    snprintf(why, whylen, "%s", k_no_cuda);
    return 0;
}

/* A lab's availability check: 0 SMs, i.e. not available, with the reason. */
#define SG_LAB_UNAVAILABLE(fn)                                                                                   \
    int fn(char *err, size_t errlen) {                                                                           \
        no_cuda(err, errlen);                                                                                    \
        return 0;                                                                                                \
    }
SG_LAB_UNAVAILABLE(sg_sm90_lab_available)
/* The Hopper lab's launchers all take (args, err, errlen). */
#define SG_LAB_REFUSE(fn, args_t)                                                                                \
    int fn(args_t *a, char *err, size_t errlen) {                                                                \
        (void)a;                                                                                                 \
        return no_cuda(err, errlen);                                                                             \
    }
SG_LAB_REFUSE(sg_sm90_lab_gemm, sg_sm90_lab_gemm_args)
SG_LAB_REFUSE(sg_sm90_lab_attn, sg_sm90_lab_attn_args)
SG_LAB_REFUSE(sg_sm90_lab_mlp, sg_sm90_lab_mlp_args)
SG_LAB_REFUSE(sg_sm90_lab_layernorm, sg_sm90_lab_ln_args)
SG_LAB_REFUSE(sg_sm90_lab_gemm_fp8, sg_sm90_lab_gemm_fp8_args)

/* The microbenchmarks' launchers take (cfg, result, err, errlen). */
#define SG_LAB_REFUSE_RUN(fn, cfg_t, res_t)                                                                      \
    int fn(const cfg_t *c, res_t *r, char *err, size_t errlen) {                                                 \
        (void)c;                                                                                                 \
        (void)r;                                                                                                 \
        return no_cuda(err, errlen);                                                                             \
    }
/* The hop-latency and ingest microbenchmarks (sm90_chain_lab.h). */
SG_LAB_UNAVAILABLE(sg_sm90_chain_available)
SG_LAB_REFUSE_RUN(sg_sm90_chain_hops, sg_chain_hop_cfg, sg_chain_hop_result)
SG_LAB_REFUSE_RUN(sg_sm90_chain_ingest, sg_chain_ingest_cfg, sg_chain_ingest_result)
SG_LAB_REFUSE_RUN(sg_sm90_chain_tingest, sg_chain_tingest_cfg, sg_chain_ingest_result)
SG_LAB_REFUSE_RUN(sg_sm90_chain_fence, sg_chain_fence_cfg, sg_chain_fence_result)
SG_LAB_REFUSE_RUN(sg_sm90_chain_mma, sg_chain_mma_cfg, sg_chain_mma_result)
SG_LAB_REFUSE_RUN(sg_sm90_chain_task, sg_chain_task_cfg, sg_chain_task_result)
/* The cluster hand-off microbenchmark (sm90_dsmem_lab.h). */
SG_LAB_UNAVAILABLE(sg_sm90_dsmem_available)
SG_LAB_REFUSE_RUN(sg_sm90_dsmem_hops, sg_dsmem_hop_cfg, sg_dsmem_hop_result)
/* The lean batch-1 schedule (sm90_lean_lab.h). */
SG_LAB_UNAVAILABLE(sg_sm90_lean_available)
SG_LAB_REFUSE_RUN(sg_sm90_lean_run, sg_lean_cfg, sg_lean_result)

int sg_sm100_attn_lab(const uint16_t *qkv_host, int n_img, int warpgroup, uint16_t *out_host, char *err,
                      size_t errlen) {
    (void)qkv_host; (void)n_img; (void)warpgroup; (void)out_host;
    return no_cuda(err, errlen);
}
/* Never called: test_sm100_attn checks sg_lab_built first. */
uint32_t sg_sm100_attn_lab_sw128_offset(int row, int chunk) {
    (void)row; (void)chunk;
    return UINT32_MAX;
}

int sg_sm100_gemm_check(int kind, int M, int N, int K, const void *a, const void *b, const uint8_t *sfa,
                        const uint8_t *sfb, const float *bias, int gelu, const float *residual, float *out_f32,
                        uint16_t *out_bf16, int sms, char *err, size_t errlen) {
    (void)kind; (void)M; (void)N; (void)K; (void)a; (void)b; (void)sfa; (void)sfb; (void)bias; (void)gelu;
    (void)residual; (void)out_f32; (void)out_bf16; (void)sms;
    return no_cuda(err, errlen);
}

/* The message keeps "no CUDA device", which kernel/lab/test_sm100_tile.c SKIPs on. */
int sg_sm100_mxf8_tile_gemm(const uint8_t *qa, const uint8_t *sa, const uint8_t *qb, const uint8_t *sb, int M, int N,
                            int K, float *d, char *err, size_t errlen) {
    (void)qa; (void)sa; (void)qb; (void)sb; (void)M; (void)N; (void)K; (void)d;
    snprintf(err, errlen, "no CUDA device: %s", k_no_cuda);
    return -1;
}
