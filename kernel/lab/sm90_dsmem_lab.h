/* kernel/lab/sm90_dsmem_lab.h — Hopper microbenchmark (experiment 8): the hand-off between SMs of one thread-block
 * cluster through distributed shared memory, against the megakernel's global counters (experiment 1,
 * sm90_chain_lab.h), callable from C.
 *
 * Why: at batch 1 the megakernel is a chain of ~90 dependent stages, and each costs 2.4-2.9 us between a GEMM tile's
 * last MMA and the next task's start (docs/perf-notes.md, session 20): the tile's store to global memory, a counter's
 * release, another SM's acquire poll and its copy of the tile from L2. Inside a cluster one SM can instead write
 * into a peer's shared memory with a bulk copy that completes on the peer's mbarrier: data and signal in one
 * operation, no global memory, no poll. This measures what one such hop costs, with the same data volumes and the
 * same work per hop as experiment 1, so the two tables say what a design whose dependent stages stay inside a
 * cluster would save per stage.
 *
 * Lab code (kernel/lab/lab.h): in build/liblab.a, linked only into the lab tests; in builds without CUDA the stubs
 * of lab_no_gpu.c refuse. CUDA failures abort with file:line (lab_cuda.cuh); bad arguments return -1 with err.
 */
#ifndef SG_SM90_DSMEM_LAB_H
#define SG_SM90_DSMEM_LAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest bytes per hop: a CTA keeps an input and an output buffer of this size. */
#define SG_DSMEM_MAX_BYTES (96 * 1024)

/* The number of SMs (> 0) when the lab can run here (a compute capability 9.x device), else 0 with the reason. */
int sg_sm90_dsmem_available(char *err, size_t errlen);

/* One cluster of C CTAs (one per SM) runs a chain of hops 0 .. H; hop h runs on cluster rank h % C. Hop 0 bulk-copies
 * `in` (D bytes) from global memory into its input buffer; every hop adds 1 to each u32 word of its input into its
 * output buffer (all 128 threads, then a proxy fence and a barrier) and, except the last, bulk-copies the output
 * into the next rank's input buffer, completing on that rank's mbarrier (cp.async.bulk.shared::cluster.shared::cta
 * with complete_tx); the next rank's threads wait on it. With D = 0 a hop is the signal alone: one remote
 * mbarrier arrival. Hop 0 reads %globaltimer when it hands over, hop H when it would: ns per hop = (t_H - t_0) / H.
 * The last hop writes its output to `out` (D > 0), which must equal in + H + 1 in every word (hops 0 .. H each add
 * 1). */
typedef struct sg_dsmem_hop_cfg {
    int hops;            /* H >= 1 */
    int bytes;           /* D: 0, or a multiple of 16 up to SG_DSMEM_MAX_BYTES */
    int cluster;         /* C: 2, 4 or 8 (portable cluster sizes) */
    int reps;            /* timed launches after one warm-up (>= 1); the median is reported */
    const uint32_t *in;  /* D > 0: D / 4 words */
    uint32_t *out;       /* NULL, or D / 4 words: the last hop's output of the last launch (poisoned first) */
} sg_dsmem_hop_cfg;

typedef struct sg_dsmem_hop_result {
    double ns_per_hop;     /* median over the timed launches */
    double ns_min, ns_max; /* fastest and slowest launch */
    int sm_rank0, sm_rank1; /* %smid of cluster ranks 0 and 1 */
} sg_dsmem_hop_result;

int sg_sm90_dsmem_hops(const sg_dsmem_hop_cfg *cfg, sg_dsmem_hop_result *res, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
