/* kernel/lab/sm90_chain_lab.h — Hopper microbenchmarks that bound the megakernel's batch-1 latency, callable
 * from C.
 *
 * At batch 1 the megakernel is a chain of ~90 dependent stages: each waits for a counter released by another SM,
 * then streams its operands from L2 into one SM's shared memory. Two hardware limits bound that design whatever
 * the schedule: the cost of one hand-off between SMs (release -> acquire -> bulk copy of what the previous stage
 * wrote -> stores -> release) and the rate at which one SM (or N SMs at once) can pull bytes from L2. These
 * entry points measure both, the ingest with bulk copies and with tensor maps, and a proxy fence's cost
 * (kernel/lab/sm90_chain_lab.cu; driver kernel/lab/test_sm90_chain.c; standalone run scripts/sm90-chain-lab.sh),
 * and how long one step of a dependent wgmma chain takes (experiment 6: the floor of a small task's K loop). Lab code (kernel/lab/lab.h): in build/liblab.a, linked only into the lab tests; in
 * builds without CUDA the stubs of lab_no_gpu.c refuse.
 *
 * All kernels run one CTA per SM (128 threads, ~200 KB of dynamic shared memory so no second CTA fits).
 * CUDA failures abort with file:line (lab convention, lab_cuda.cuh); bad arguments return -1 with err.
 */
#ifndef SG_SM90_CHAIN_LAB_H
#define SG_SM90_CHAIN_LAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest bytes per hop, and largest ring (stages x stage bytes) of the ingest kernel. */
#define SG_CHAIN_MAX_BYTES (192 * 1024)

/* The number of SMs (> 0) when the lab can run here (a compute capability 9.x device is present), else 0 with
 * the reason in err. */
int sg_sm90_chain_available(char *err, size_t errlen);

/* Experiment 1: a chain of hops 0 .. H. Hop h runs on CTA (h * stride) % ctas, stride coprime with ctas (1 for
 * ctas = 2, else the first such value above ctas / 2), so consecutive hops are on different SMs. Hop h waits for
 * flag h (hop 0: for every CTA of the grid to have started), then, with bytes D > 0, bulk-copies region h (D
 * bytes) into shared memory and stores it with 1 added to every u32 word as region h + 1; then it releases flag
 * h + 1. With D = 0 a hop is the flag round trip alone. Hop 0 reads %globaltimer when it releases, hop H when it
 * would: ns per hop = (t_H - t_0) / H, each of the H intervals one full hand-off. */
typedef struct sg_chain_hop_cfg {
    int hops;              /* H >= 1 */
    int bytes;             /* D: 0, or a multiple of 16 up to SG_CHAIN_MAX_BYTES */
    int ctas;              /* CTAs the chain rotates over: 2 .. SM count; 0 = all SMs */
    int spin;              /* 1: poll without backoff; 0: sg_dep_wait as the megakernel (__nanosleep(64)) */
    int reps;              /* timed launches after one warm-up (>= 1); the median is reported */
    const uint32_t *in;    /* D > 0: region 0, D / 4 words */
    uint32_t *out;         /* NULL, or (H + 1) * D / 4 words: regions 1 .. H + 1 of the last launch (region k
                              must be in + k, wrapping; each launch poisons them with 0xFF bytes first) */
} sg_chain_hop_cfg;

typedef struct sg_chain_hop_result {
    double ns_per_hop;     /* median over the timed launches */
    double ns_min, ns_max; /* fastest and slowest launch */
    int ctas, stride;      /* the rotation used */
    int sm_hop0, sm_hop1;  /* %smid of the CTAs that ran hops 0 and 1 */
} sg_chain_hop_result;

int sg_sm90_chain_hops(const sg_chain_hop_cfg *cfg, sg_chain_hop_result *res, char *err, size_t errlen);

/* Experiment 2: N CTAs (one per SM) each stream R bytes into shared memory through a ring of S stages of B
 * bytes: one thread issues one bulk copy per stage, waits for the oldest, checks one word of it and reissues it.
 * CTA c reads, in order, chunks i = 0 .. R / B - 1 at byte offset base + c * span + (i % region) * B of a buffer
 * whose u32 word w holds w * 2654435761 + 12345 (wrapping), where by source:
 *   SHARED  span 0, region = 1.25 MB / B chunks: all CTAs read the same 1.25 MB (a GEMM's A rows);
 *   L2      span = region * B, region = min(R, 24 MB / N) / B chunks: disjoint, L2-resident after the warm-up;
 *   DRAM    span = R, region = R / B: disjoint, streamed once; base moves by N R per launch through a buffer of
 *           dram_bytes, so no launch reads what the previous one left in L2 (while 2 N R <= dram_bytes).
 * Timed with CUDA events (one warm-up launch, then reps launches, median). */
enum { SG_INGEST_SHARED = 0, SG_INGEST_L2 = 1, SG_INGEST_DRAM = 2 };

typedef struct sg_chain_ingest_cfg {
    int ctas;              /* N: 1 .. SM count */
    int source;            /* SG_INGEST_* */
    int stage_bytes;       /* B: a multiple of 16, >= 256 */
    int stages;            /* S: 1 .. 32, S * B <= SG_CHAIN_MAX_BYTES */
    long long bytes;       /* R per CTA: a multiple of B */
    long long dram_bytes;  /* DRAM source's buffer: 0 = 2 GB; >= N R */
    int reps;              /* >= 1 */
    int fence;             /* 1: fence.proxy.async.shared::cta between a stage's check read and its reissue */
} sg_chain_ingest_cfg;

typedef struct sg_chain_ingest_result {
    double us;             /* median kernel time, CUDA events */
    double gbs_cta;        /* R / us: per CTA (1e9 bytes per s) */
    double gbs_total;      /* N R / us */
    double gbs_cta0;       /* CTA 0's R over its own %globaltimer span (no launch overhead), last launch */
    double mhz;            /* CTA 0's clock64 ticks / %globaltimer ns x 1000, last launch: the SM clock */
    long long bad;         /* checked words that differed from the pattern, all CTAs, last launch: must be 0 */
    long long chunks;      /* stages consumed, all CTAs, last launch: must be N R / B */
} sg_chain_ingest_result;

int sg_sm90_chain_ingest(const sg_chain_ingest_cfg *cfg, sg_chain_ingest_result *res, char *err, size_t errlen);

/* Experiment 4: experiment 2's stream through tensor maps, the way the megakernel loads its GEMM operands (8 KB boxes
 * of 64 rows x 64 bf16, several per ring stage), against fewer, larger copies of the same bytes in the same
 * shared-memory layout. The source is a bf16 row-major matrix [rows, C] holding the buffer's pattern (u32 word w of
 * the buffer = w * 2654435761 + 12345); CTA c reads the panel of rows [c box_rows, +box_rows) (SHARED: rows [0,
 * box_rows) for every CTA), its 64-column K blocks in order, cycling through `region` of them (SHARED 1.25 MB, L2
 * min(R, 24 MB / N), DRAM R: as experiment 2). A ring stage is `copies` TMA copies of `blocks` consecutive K blocks:
 * blocks = 1 is a 2D box {64, box_rows}; blocks > 1 one 3D box {64, box_rows, blocks} (tmap.cuh's
 * sg_tmap_sw128_kblocks), which lands as `blocks` 2D boxes one after another; 128-byte swizzle either way. Stage
 * bytes B = copies x blocks x box_rows x 128. One thread issues, waits, checks one word per stage (a different
 * block, row and 16-byte chunk each time, through the swizzle) and reissues. Timed as experiment 2. */
typedef struct sg_chain_tingest_cfg {
    int ctas;              /* N: 1 .. SM count */
    int source;            /* SG_INGEST_* */
    int box_rows;          /* 64 or 128 */
    int blocks;            /* K blocks per copy: 1 (2D box) .. 8 */
    int copies;            /* copies per stage: >= 1 */
    int stages;            /* S: 1 .. 32, S * B <= SG_CHAIN_MAX_BYTES */
    long long bytes;       /* R per CTA: a multiple of B */
    int reps;              /* >= 1 */
    int bulk;              /* 0, or bytes (a multiple of 1 KB, so the next stage's boxes stay 1024-byte aligned)
                              of one 1-D bulk copy added to each stage after its tensor copies, from a second buffer
                              of the same pattern (SHARED: one 1.25 MB region for all; L2: own regions <= 12 MB in
                              all; DRAM: read once): are the two paths one limit or two? B then counts it too; its
                              checked word as experiment 2's */
} sg_chain_tingest_cfg;

int sg_sm90_chain_tingest(const sg_chain_tingest_cfg *cfg, sg_chain_ingest_result *res, char *err, size_t errlen);

/* Experiment 3: what a consumer's fence.proxy.async.shared::cta costs while the CTA's bulk copies are in flight.
 * The megakernel's epilogue (mega_kernel.cuh, sg_mega_out_end) writes each staged piece with ordinary shared
 * stores and fences it before the storer's TMA store reads it, while the producer warp already streams the next
 * task's K blocks. Here, in each of N CTAs: one producer thread keeps a 3 x 48 KB ring of bulk copies from an
 * L2-resident buffer in flight (load = 1) or idles (load = 0); 128 consumer threads repeat `iters` times: write a
 * 32 KB staging buffer (256 B each), fence (fence = 1) or not, named barrier. Reported: the fence's clock64
 * cycles per iteration (mean over the CTAs' thread 0) and one iteration's cycles, and the SM clock. */
typedef struct sg_chain_fence_cfg {
    int ctas;              /* 1 .. SM count; 0 = all */
    int iters;             /* >= 1 */
    int load, fence;       /* 0 or 1 each */
} sg_chain_fence_cfg;

typedef struct sg_chain_fence_result {
    double fence_cycles;   /* per iteration, mean over CTAs (thread 0's clock64 around the fence) */
    double iter_cycles;    /* per iteration of the whole loop, mean over CTAs */
    double mhz;            /* CTA 0's clock64 / %globaltimer */
    long long copies;      /* bulk copies completed by the producers (load = 1), all CTAs */
    long long bad;         /* staging words read back wrong after the loop: must be 0 */
} sg_chain_fence_result;

int sg_sm90_chain_fence(const sg_chain_fence_cfg *cfg, sg_chain_fence_result *res, char *err, size_t errlen);

/* Experiment 6: how long one step of a chain of dependent wgmma takes: the floor of a small task's K loop. At batch 1
 * a GEMM task sums each output over K in K/16 dependent m64nNk16 steps on one SM (the same order at every batch size:
 * the rows' bit-identity), so its K loop cannot be shorter than K/16 such steps, whatever the operands' bytes cost.
 * One CTA; `wgs` warpgroups (1 or 2), each running `chains` independent accumulators (1 or 2; 2 only for n <= 128)
 * through `steps` steps of m64nNk16 (bf16 in, fp32 accumulate) from an A tile [64 x 64] and a B tile [n x 64]
 * already in shared memory (128-byte swizzle, as TMA lays them out), the k16 slice cycling through the tile's four;
 * a commit every `group` steps followed by wait_group 1 (the megakernel's K loop: a wide task commits every 4 steps,
 * a 64 x 64 task every 12). A[r][k] = (3 r + k) % 7 - 3 and B[j][k] = (5 j + k) % 5 - 2, so every sum is a small
 * integer and the accumulators are checked exactly. Reported: clock64 cycles per step (the slower warpgroup; a step
 * is one instruction per chain), the SM clock (clock64 against %globaltimer), wrong accumulator values. */
typedef struct sg_chain_mma_cfg {
    int n;                 /* 32, 64, 128 or 256 */
    int wgs;               /* 1 or 2 */
    int chains;            /* 1 or 2 (2: n <= 128) */
    int steps;             /* >= group, a multiple of it, <= 4096 */
    int group;             /* steps per commit: 4 or 12 */
    int reps;              /* launches; the median is reported */
    int ring;              /* 0: the bare chain; 1, 2: the megakernel's small-task loop around it (FC2's 64 x 64 task:
                              n 32, 2 warpgroups, 1 chain, group 12: three K blocks a 48 KB stage of a 4-stage ring
                              with full / empty barriers and a producer thread arriving without copies), the stage
                              index broadcast from lane 0 (1, v55) or per thread (2) */
} sg_chain_mma_cfg;

typedef struct sg_chain_mma_result {
    double cycles_per_step; /* median over the launches */
    double mhz;             /* the last launch's SM clock */
    long long bad;          /* accumulator values that differ from the CPU's sums, last launch: must be 0 */
} sg_chain_mma_result;

int sg_sm90_chain_mma(const sg_chain_mma_cfg *cfg, sg_chain_mma_result *res, char *err, size_t errlen);

/* Experiment 7: the megakernel's 64 x 64 GEMM task (FC2's at batch 1) whole, its operands copied from global memory:
 * is a small task's K loop bound by how its bytes arrive? N = row_halves x col_tiles CTAs, CTA c the task of row half
 * c % row_halves (A rows 64 (c % row_halves)..) and column tile c / row_halves (W rows 64 (c / row_halves)..), K / 192
 * stages of three K blocks of A and W (48 KB) through a 4-stage ring, a producer thread and two consumer warpgroups
 * (m64n32k16, v55's uniform indices: experiment 6's ring kernel). mode 0: six tensor-map boxes of 8 KB a stage (the
 * megakernel's halves tasks); 1: the same bytes from pre-swizzled K-block-major copies of A and W by six 1-D bulk copies
 * of 8 KB; 2: by two of 24 KB (the stage's A blocks, then its W blocks); 3: as 0 with the tensor maps in global memory
 * (the megakernel's are a device array), not kernel parameters. A[r][k] = (3 r + k) % 7 - 3, W[n][k] = (2 n +
 * 3 k + n / 5) % 5 - 2: every output is checked exactly. cold 1: the L2 emptied before each launch and A rewritten (W
 * from DRAM, A from L2, as at batch 1); 2: only A rewritten (A just written, W in L2). Reported from kernel entry to each CTA's last MMA (%globaltimer): the slowest
 * CTA's loop and the median CTA's (medians over the launches), the median CTA's wait for its first stage, the launch
 * (events), the median CTA's bytes per microsecond, the SM clock. */
typedef struct sg_chain_task_cfg {
    int mode;              /* 0 tensor maps, 1 bulk 8 KB, 2 bulk 24 KB, 3 tensor maps in global memory */
    int row_halves;        /* 1 .. 4 */
    int col_tiles;         /* >= 1; row_halves x col_tiles <= SM count */
    int k;                 /* a multiple of 192, <= 6144 */
    int cold;              /* 0, 1 or 2 */
    int reps;              /* >= 1 */
    int poll;              /* 1: the producer thread, its loads issued, polls a flag in global memory (sg_dep_wait, as
                              the megakernel's producer polls its next task's inputs) until the consumers end; 2: every
                              CTA's producer, with a task or not, polls one shared word until all tasks have ended
                              (with place > 0: a CTA on every SM, as the megakernel's idle CTAs all poll the counter of
                              the stage they wait for) */
    int place;             /* which SMs run the tasks: 0 as the hardware places N CTAs; 1 SMs 0 .. N-1 (%smid); 2 the
                              even SMs (one of each pair, 2 N <= SMs); 3 the N highest SM ids (1-3 launch a CTA on
                              every SM, the others idle) */
    int bg;                /* with place > 0: the SMs without a task stream their own data (48 KB bulk copies, 4 in
                              flight) until the tasks end, as a neighbouring stage's tasks do: 1 from L2 (256 KB each),
                              2 from DRAM (2 MB each) */
} sg_chain_task_cfg;

typedef struct sg_chain_task_result {
    double loop_us_max, loop_us_med, first_us, launch_us;
    double gbs_cta;        /* A + W bytes of a task / loop_us_med */
    double mhz;            /* CTA 0's clock64 / %globaltimer over its loop */
    long long bad;         /* outputs that differ from the CPU's sums, last launch: must be 0 */
} sg_chain_task_result;

int sg_sm90_chain_task(const sg_chain_task_cfg *cfg, sg_chain_task_result *res, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
