/* kernel/lab/sm90_lean_lab.h — issue 12, target 3: the lean batch-1 schedule measured, as a lab kernel callable
 * from C (kernel/lab/sm90_lean_lab.cu; driver kernel/lab/test_sm90_lean.c; run scripts/sm90-lean-lab.sh).
 *
 * The megakernel runs batch 1 as ~7 dependent stages a layer on a few SMs each (0.519 ms for the forward, ~40 us a
 * layer). Sessions 22 and 32 estimated, from isolated parts, that a schedule of five stages a layer, each on all
 * SMs with its weights staged before its inputs arrive and LayerNorm inside the GEMM that reads it, would take
 * ~14-19 us a layer (docs/perf-notes.md). This lab runs that schedule for real on L SigLIP2 encoder layers at one
 * image (196 tokens, D = 768, F = 3,072, 12 heads of 64), in one launch of 128 CTAs (4 row groups of 49 tokens x
 * 32 column groups; one CTA per SM), so the estimate becomes a measurement:
 *   QKV   LayerNorm 1 of the CTA's 49 rows (fp32 residual -> bf16 in shared memory), x its 72 columns of Wqkv
 *   ATT   one head's K and V whole in shared memory, 1-2 tiles of 16 queries, each split over 4 warps by keys
 *   OUT   the CTA's 49 rows of O x its 24 columns of Wo, + bias + residual (fp32, written in place)
 *   FC1   LayerNorm 2 of the 49 rows x 96 columns of W1, + bias, tanh GELU, bf16
 *   FC2   the 49 rows of H (3,072 wide, streamed in 256-column chunks) x 24 columns of W2, + bias + residual
 * A stage's weight slice is copied into shared memory before the CTA waits for the previous stage (a counter that
 * every CTA increments; each stage waits for all 128). The GEMMs are warp mma.sync m16n8k16 (bf16 in, fp32
 * sums, every output one k chain from zero in k order, the bias added after: docs/megakernel.md §34). Lab code:
 * the attention's key split and its merge are not the megakernel's arithmetic, so its outputs are checked
 * against a CPU reference with a tolerance, not bit for bit; this measures time, not target 2.
 * In builds without CUDA, kernel/lab/lab_no_gpu.c's stubs refuse. CUDA failures abort (lab_cuda.cuh).
 */
#ifndef SG_SM90_LEAN_LAB_H
#define SG_SM90_LEAN_LAB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SG_LEAN_T 196   /* tokens of one image */
#define SG_LEAN_D 768   /* width */
#define SG_LEAN_F 3072  /* MLP width */
#define SG_LEAN_MAX_LAYERS 12
#define SG_LEAN_STAGES 5 /* QKV, ATT, OUT, FC1, FC2 */

/* One layer's parameters, fp32 on the host (the lab rounds the four matrices to bf16; PyTorch's [out, in]
 * layout, row n of W is output column n). */
typedef struct sg_lean_layer {
    const float *ln1_g, *ln1_b;      /* [D] */
    const float *wqkv, *bqkv;        /* [3D, D], [3D]: q, k, v columns in that order, heads 64 columns apart */
    const float *wo, *bo;            /* [D, D], [D] */
    const float *ln2_g, *ln2_b;      /* [D] */
    const float *w1, *b1;            /* [F, D], [F] */
    const float *w2, *b2;            /* [D, F], [D] */
} sg_lean_layer;

typedef struct sg_lean_cfg {
    int layers;                      /* 1 .. SG_LEAN_MAX_LAYERS */
    const sg_lean_layer *layer;      /* [layers], each with its own matrices (so they are not all in L2) */
    const float *h_in;               /* [T, D] the residual stream entering layer 0 */
    float *h_out;                    /* [T, D] after the last layer (the first launch's: each launch starts from
                                        h_in, and the device buffers are poisoned with NaN before it) */
    float eps;                       /* LayerNorm epsilon (SigLIP2: 1e-6) */
    int reps;                        /* timed launches after warm-up (>= 1); medians reported */
    int warmup;                      /* untimed launches first (>= 0) */
    int w_after_wait;                /* 1: each stage's weight copies issued after its wait (the variant), not
                                        before it */
    int diag;                        /* 0; diagnostics that leave h wrong (not checked), timed only: 1 no weight
                                        copies (the MMAs read whatever shared memory holds), 2 no A operand copies
                                        and no LayerNorm (QKV, OUT, FC1, FC2) */
} sg_lean_cfg;

typedef struct sg_lean_result {
    double us_median, us_min, us_max;    /* one launch (CUDA events), over the reps */
    int identical;                       /* 1 if every timed launch wrote the first launch's h bit for bit */
    int ctas, sms;                       /* CTAs launched; SMs of the device */
    /* From %globaltimer stamps of one traced launch (after the timed ones), per stage kind averaged over the
     * layers: when the last CTA finished the stage after the last CTA finished the one before (the stage's share
     * of the chain, us) and the median CTA's phases: its wait from the previous stage's end to its own start (the
     * hand-off), then to its operands in shared memory (LayerNorm and copies; FC2: the first chunk), then to warp
     * 0's last MMA, then to its stores done. stage_us sums to the traced launch's span. */
    double stage_us[SG_LEAN_STAGES], handoff_us[SG_LEAN_STAGES];
    double ingest_us[SG_LEAN_STAGES], mma_us[SG_LEAN_STAGES], epi_us[SG_LEAN_STAGES];
    double traced_us;                    /* the traced launch, first CTA start to last CTA end */
} sg_lean_result;

/* SMs of device 0 when it has compute capability 9.x and at least 128 SMs (the lab's 128 CTAs must all be
 * resident), else 0 with the reason in err. */
int sg_sm90_lean_available(char *err, size_t errlen);

/* Runs cfg (uploads, one checked launch into h_out, warm-up, timed launches, one traced launch). 0, or -1 with
 * err for bad arguments or an unusable device. */
int sg_sm90_lean_run(const sg_lean_cfg *cfg, sg_lean_result *res, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
