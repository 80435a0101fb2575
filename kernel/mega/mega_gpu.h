// kernel/mega/mega_gpu.h — the megakernels' shared host-and-device types and their host interface.
//
// Both megakernels (Hopper kernel/sm90/sm90_mega.cu, Blackwell kernel/sm100/sm100_mega.cu) share the kernel's
// skeleton (kernel/mega/mega_kernel.cuh) and all of the host side (kernel/mega/mega_gpu.cu): tensor maps, fp32
// copies of the biases kept in bf16 by the portable path, dependency counters, the task table per batch size, the
// launch; each architecture file
// only provides its kernel's launcher (sg_mega_launcher). The megakernel owns only what the portable path does
// not have: weights and activation buffers are the portable path's (kernel/cuda), passed in here.
#ifndef SG_MEGA_GPU_H
#define SG_MEGA_GPU_H

#include <cstddef>
#include <cstdint>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "../model.h"
#include "../cuda/cuda_forward.h"
#include "mega_plan.h"

// 2 consumer warpgroups (warps 0-7: wgmma needs warpgroup-aligned warps, and tcgen05.ld lets warp w read TMEM lanes
// 32 (w % 4)..+31, so a warpgroup reads all 128) + 4 warps (8: the producer thread alone; 9: the two warpgroups'
// storer threads, lanes 0 and 1; 10-11: the side warps, a wide launch's LayerNorms and patch preparation beside the
// consumers' work). 384 threads leave every thread 168 registers, as 320 did: an SM sub-partition's 16,384
// registers hold three warps of 168 either way.
#define SG_MEGA_THREADS 384
#define SG_MEGA_CONSUMERS 256  // both warpgroups run every task
#define SG_MEGA_STAGES 3       // ring stages of a wide or narrow launch; attention takes three of them (Q, K, V)
#define SG_MEGA_STAGES_SMALL 4 // ... of a narrow64 or halves launch (sg_mega_ring_stages, mega_plan.h)
#define SG_MEGA_TASKQ 4
#define SG_MEGA_A_BYTES 16384  // A block: 128 rows x 64 bf16 (one 128-byte swizzle row each)
#define SG_MEGA_WH_BYTES 16384 // a warpgroup's half of the W block: 128 rows x 64 bf16
#define SG_MEGA_STAGE_BYTES (SG_MEGA_A_BYTES + SG_MEGA_WGS * SG_MEGA_WH_BYTES)  // 48 KB; an attention box: 32 KB
#define SG_MEGA_ATT_BOX_BYTES 32768
#define SG_MEGA_RING_BYTES (SG_MEGA_STAGES * SG_MEGA_STAGE_BYTES)
// Each warpgroup stages its output through 32 KB of its own: a bf16 64 x 256 part, or an fp32 one in two pieces of
// 128 columns, each written out by the warpgroup's storer thread with TMA before the next is staged. A narrow64 or
// halves launch (1-7 images on an H100) gives 48 KB of that to a fourth ring stage: its parts are 64 x 64 bf16 or
// fp32 pieces of 32 columns (8 KB), and its K loops stream long K blocks through one SM and wait on bytes in flight
// (docs/perf-notes.md, sessions 6 and 12). The same shared memory either way.
#define SG_MEGA_OUT_BYTES 32768
#define SG_MEGA_OUT_BYTES_SMALL 8192
#define SG_MEGA_SMEM (SG_MEGA_RING_BYTES + SG_MEGA_WGS * SG_MEGA_OUT_BYTES + 1024)  // + alignment slack (1024-byte atoms)
static_assert(SG_MEGA_STAGES_SMALL * SG_MEGA_STAGE_BYTES + SG_MEGA_WGS * SG_MEGA_OUT_BYTES_SMALL ==
                  SG_MEGA_RING_BYTES + SG_MEGA_WGS * SG_MEGA_OUT_BYTES,
              "a small launch's ring and staging buffers fill the same shared memory as a wide launch's");
#define SG_MEGA_ATT_BOX_ROWS 256  // rows of a Q, K or V box of one (image, head): 196 tokens + padding

// Tensor maps (device memory, 64-byte aligned): activations, the MAP head's weights, then 4 weights per layer.
enum {
    SG_MAP_Y = 0, SG_MAP_ATT, SG_MAP_H, SG_MAP_QKV, SG_MAP_PATCHES, SG_MAP_WPATCH,
    SG_MAP_HKVW,    // the head's K and V rows of in_proj [1536, 768]
    // the weights of the head's products on rows of images (mega_hmm.cuh) [768, 768], [3072, 768], [768, 3072]:
    // boxes of SG_MEGA_HMM_BOX columns x the task's output columns (sg_mega_hmm_cols), no swizzle
    SG_MAP_HOW, SG_MAP_HW1, SG_MAP_HW2,
    SG_MAP_QKV128,  // qkv with 128-row boxes: a split attention task's Q
    SG_MAP_W0
};
#define SG_MEGA_HMM_BOX 256  // columns (K elements) of a head product's weight box: 512 bytes a row
#define SG_MAP_W(l, j) (SG_MAP_W0 + 4 * (l) + (j))  // j: 0 Wqkv, 1 Wo, 2 W1, 3 W2
// FP8 FC1 only (sg_mega_params.fc1): layer l's E4M3 W1 and FC1's E4M3 input. MXFP8 (Blackwell): byte maps, boxes
// of 128 rows x 128 bytes; FP8ROW (Hopper): the same bytes seen as 16-bit elements [rows, 384], boxes of 64
// elements (128 bytes) x 128 rows, so the bf16 producer's K-block arithmetic (64 elements a block) loads 128 E4M3.
#define SG_MAP_W1Q(L, l) (SG_MAP_W0 + 4 * (L) + (l))
#define SG_MAP_Y8(L) (SG_MAP_W0 + 5 * (L))
// Map i again with boxes of 64 rows, at its index shifted past the ones above: every weight's (the W rows of a
// narrow64 launch's 64-column tasks; Hopper's E4M3 W1 too) and the A operands of the 768-column kinds (ATT, H,
// PATCHES: the rows of a halves launch's 64 x 64 tasks, mega_plan.h); the other shifted indices stay unused.
#define SG_MAP_R64(L, i) (SG_MAP_W0 + 5 * (L) + 1 + (i))
// FP8ROW's FC2 on the layers of sg_mega_params.fc2_f8, after those: layer l's E4M3 W2 [768, 1536 16-bit] and FC2's
// E4M3 input H8 [rows, 1536 16-bit] (FC1's output on those layers), the same kind of maps as W1Q and Y8, with boxes of
// 128 rows and (*64) of 64 rows.
#define SG_MAP_F2(L) (SG_MAP_R64(L, SG_MAP_Y8(L)) + 1)
#define SG_MAP_W2Q(L, l) (SG_MAP_F2(L) + (l))
#define SG_MAP_H8(L) (SG_MAP_F2(L) + (L))
#define SG_MAP_W2Q64(L, l) (SG_MAP_F2(L) + (L) + 1 + (l))
#define SG_MAP_H8_64(L) (SG_MAP_F2(L) + 2 * (L) + 1)
#define SG_MAPS(L) (SG_MAP_H8_64(L) + 1)
// Store maps, made per batch size with exactly M rows so TMA drops the padding rows of the last row tile
// (SG_SMAP_RES takes the reduce-adds into the residual stream).
// The *64 maps are the bf16 ones with 64-row boxes, for a narrow launch's 64-row halves (mega_plan.h) (64 x 64 halves
// of a narrow64 launch use their first box).
// SG_SMAP_H8: FP8ROW's E4M3 H as 16-bit elements [M, 1536], boxes of 64 elements (128 E4M3) x 64 rows.
enum {
    SG_SMAP_QKV = 0, SG_SMAP_H, SG_SMAP_RES, SG_SMAP_QKV64, SG_SMAP_H64, SG_SMAP_H8, SG_SMAPS
};

// A piece of a GEMM tile handed from a consumer warpgroup to its storer thread: the piece sits in the warpgroup's
// staging buffer in the TMA box layout; the storer writes it out with TMA, frees the buffer once read, and
// signals the tile's counter once its last piece is complete.
struct sg_mega_store_desc {
    int mode;  // 0: stop; 1: bf16, stored: nbox boxes of 64 columns x 128 rows 16 KB apart; 2: fp32 64 rows, added
               // to the tensor (reduce-add): nbox boxes of 32 columns 8 KB apart; (3: no longer used: the head's
               // fp32 tiles, stored); 4: bf16, stored: nbox boxes of 64 columns x 64 rows (a *64 map) 8 KB apart;
               // 5: nothing to store (the warpgroup's threads added the part themselves), only the counter to signal
    int nbox;  // boxes of the piece: bf16 4 (256 columns, 64-row boxes), 2 (128) or 1 (64); fp32 4 (128 columns),
               // 2 (64) or 1 (32)
    int map, x, y;
    int cnt;   // counter word to signal once this piece is complete, or -1 (not the tile's last piece)
};

struct sg_mega_layer_dev {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *qkv_b, *o_b, *fc1_b, *fc2_b;  // fp32 (the portable path's qkv / fc1 biases are bf16)
};
// The MAP head's parameters (fp32).
struct sg_mega_head_dev {
    const float *q;                            // [768] the probe's query, probe W_q^T + b_q (image-independent)
    const float *kv_b, *o_b, *ln_w, *ln_b, *fc1_b, *fc2_b;
};
// A GEMM task's bias (256 floats for its columns) is copied into shared memory by the producer, beside the task's
// first K block, and the consumers start their accumulators from it: two slots, taken by GEMM tasks in turn (full:
// the copy landed; empty: both warpgroups read it).
#define SG_MEGA_BIAS_SLOTS 2
// A slot's floats: [0, 256) the bias; for an FP8ROW task (Hopper's FP8 FC1, and FC2 on the layers of fc2_f8)
// [0, 512) the bias interleaved with the weight's column scales (sg_mega_params.w1sf's / w2sf's layout), [512, 640)
// the input's 128 row scales, and for an FC1 task whose output is E4M3 (sg_mega_h8) [640, 768) its output's.
#define SG_MEGA_SLOT_RS (2 * SG_MEGA_TN)
#define SG_MEGA_SLOT_HS (2 * SG_MEGA_TN + SG_MEGA_BM)
#define SG_MEGA_SLOT (2 * SG_MEGA_TN + 2 * SG_MEGA_BM)

struct sg_mega_params {
    const CUtensorMap *maps;
    const CUtensorMap *smaps;       // this batch size's store maps: SG_SMAP_QKV, SG_SMAP_H (bf16), SG_SMAP_RES (fp32)
    const sg_mega_layer_dev *layers;
    const float *post_w, *post_b;
    float *h;                       // [M, 768] fp32 residual stream (written by PREP/PATCH; out: encoder output)
    __nv_bfloat16 *y, *qkv, *att, *H, *patches;
    const sg_mega_head_dev *head;   // the MAP head's parameters
    float *pooled;                  // [n, 768] fp32: the head's output, the pooler_output
    __nv_bfloat16 *hatt, *hy;       // [n, 768] head: pooled attention, LayerNorm output
    __nv_bfloat16 *hmlp;            // [n, 3072] head: GELU(FC1)
    const uint8_t *pix;             // [n, 224, 224, 3] uint8 pixels of this launch
    const float *lut;               // [256] sg_pixel_to_float of each byte value
    const float *pos_b;             // [196, 768] positions + conv bias
    unsigned *cnt;
    const unsigned *tasks;          // the launch's task table (sg_mega_encode), ntasks entries: the main list
    int ntasks;
    const unsigned *side;           // a wide launch's side list (sg_mega_plan_split), nside entries; 0: none
    int nside;
    unsigned long long *prof;       // NULL, or SG_MEGA_PROF_WORDS clock counters (SG_SM90_PROFILE=1)
    int tm_max, n, L;
    float eps;
    // FC1's numbers (sg_mega_fc1): SG_FC1_BF16, or FP8 from a launcher with a quantiser: LayerNorm-2 writes FC1's
    // input as E4M3 codes y8 [M, 768] and its scales y8sf; FC1's weights are E4M3 (maps SG_MAP_W1Q) with scales
    // w1sf, layer l at l * sg_mega_w1sf_bytes(fc1). MXFP8 (Blackwell): UE8M0 scales per 32 K elements (128x4 layout,
    // 24 blocks per row); FP8ROW (Hopper): one fp32 scale per row (y8sf: [rows] floats, per token; w1sf: per output
    // channel, interleaved with FC1's bias, [1536][4] floats a layer = (b[2j], b[2j + 1], s[2j], s[2j + 1]), so the
    // epilogue reads a column pair's bias and scales with one 16-byte load).
    uint8_t *y8, *y8sf;
    const uint8_t *w1sf;
    int fc1;
    int ln_prefetch;  // 1: the producer asks L2 for a LayerNorm task's rows of h when it hands the task over
    int w_prefetch;   // 1: a GEMM task's producer asks L2 for its share of the next GEMM stage's weight
                      // (sg_mega_prefetch_next_w; halves launches by default)
    int narrow;  // this launch's GEMM task shape (mega_plan.h): 0 wide 128 x 256, 1 narrow 128 x 128, 2 narrow64
                 // 128 x 64, 3 halves (narrow64, the 768-column kinds 64 x 64)
    // FP8ROW only: the layers (bit l) whose FC2 runs in FP8 too. There FC1 writes H as E4M3 codes h8 [M, 3072] with
    // one fp32 scale per token h8sf [rows] (written by LayerNorm-2 from a bound: |H| <= ||y||_2 h8k[l].x + h8k[l].y,
    // y the token's LayerNorm-2 row, sg_sm90_ln_out_fp8), and FC2's weights are E4M3 (maps SG_MAP_W2Q) with
    // per-channel scales interleaved with FC2's bias, w2sf ([384][4] floats a layer, w1sf's layout).
    unsigned fc2_f8;
    uint8_t *h8;
    float *h8sf;
    const float *w2sf;
    const float2 *h8k;  // [L]; (0, 0) on layers outside fc2_f8
};
#define SG_MEGA_W1SF_BYTES (SG_MEGA_F * (SG_MEGA_D / 32))  // 128x4 atoms of a [3072, 768] weight: 73,728 bytes
// FC1's number format: bf16; MXFP8 (Blackwell's recipe: E4M3, a UE8M0 scale per 32 K elements, sm100_quant.h);
// FP8ROW (Hopper's: E4M3, one fp32 scale amax / 448 per input row and per weight row, no per-block promotion,
// kernel/sm90/sm90_fp8row.cuh).
enum sg_mega_fc1 { SG_FC1_BF16 = 0, SG_FC1_MXFP8 = 1, SG_FC1_FP8ROW = 2 };
// Bytes of one layer's FC1 weight scales.
static inline size_t sg_mega_w1sf_bytes(int fc1) {
    return fc1 == SG_FC1_MXFP8 ? SG_MEGA_W1SF_BYTES : fc1 == SG_FC1_FP8ROW ? 2 * SG_MEGA_F * sizeof(float) : 0;
}

// Profile counters (cycles summed over CTAs; consumer counters from warpgroup 0, which runs every task as warpgroup
// 1 does): [kind] consumer busy per task kind, [SG_MT_END] consumer
// waiting for its next task, [SG_MT_END + 1] producer waiting on counters, [SG_MT_END + 2..4] GEMM tasks' start
// (the bias slot's wait), K loop and stores, [SG_MT_END + 5] every CTA's elapsed cycles; [32 + kind] task counts;
// [64 + 16 j + kind] the same three GEMM phases (j = 0, 1, 2) per GEMM kind; per kind of the task waited for:
// [112 + kind] the producer's wait on its inputs, [128 + kind] the consumers' wait for it (warpgroup 0's idle
// before it), [144 + kind] the side warps' wait on its inputs.
#define SG_MEGA_PROF_COUNTS 32
#define SG_MEGA_PROF_GEMM 64
#define SG_MEGA_PROF_DEPW 112
#define SG_MEGA_PROF_IDLE 128
#define SG_MEGA_PROF_SIDEW 144
// [160]: the task trace's entries per CTA (0: none; set by the host when SG_SM90_TRACE names a file), and after
// the counters the trace itself: CTA c's i-th task (the order its producer and consumers took it) at entry
// c * cap + i, SG_MEGA_TRACE_WORDS words each: [0] the task's code (sg_mega_encode), %globaltimer (ns) when [1] the
// producer came to it, [2] its inputs were complete, [3] the consumers started it, [4] they ended it (a GEMM's tile
// handed to the storer threads; other kinds' outputs published), [5] the producer had handed it over, and two phase
// stamps (0: none): a GEMM's K loop [6] start and [7] end, an attention task's [6] Q, K, V in shared memory and [7]
// outputs written. Then one word per entry (c * cap + k): the time warpgroup 0's storer released
// the counter of CTA c's k-th GEMM tile (its stores complete). Consumer stamps are warpgroup 0's; the side warps'
// tasks are not traced.
#define SG_MEGA_PROF_TRACE_CAP 160
#define SG_MEGA_PROF_WORDS 168
#define SG_MEGA_TRACE_WORDS 8

// ---------------------------------------------------------------------------------------------- host interface

struct sg_mega_layer_w {
    const __nv_bfloat16 *qkv_w, *o_w, *fc1_w, *fc2_w;  // [2304, 768], [768, 768], [3072, 768], [768, 3072]
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *o_b, *fc2_b;
};

struct sg_mega_buffers {
    int max_batch;
    float *h;               // [M, 768] fp32
    __nv_bfloat16 *y;       // [M, 768]
    __nv_bfloat16 *qkv;     // [qkv_rows >= M, 2304]
    size_t qkv_rows;
    __nv_bfloat16 *att;     // [M, 768]
    __nv_bfloat16 *H;       // [M, 3072]
    __nv_bfloat16 *patches; // [M, 768] (the portable path's `big` buffer)
    const __nv_bfloat16 *patch_w;  // [768, 768] Conv2d weight as [out, c ky kx]
    const float *pos_b;     // [196, 768] positions + conv bias
    const sg_mega_layer_w *layers;  // [L], host array
    // the MAP head: weights [1536, 768] (K and V rows of in_proj), [768, 768], [3072, 768], [768, 3072]; the
    // probe's query and LayerNorm (fp32, device); activations for max_batch rows
    const __nv_bfloat16 *head_kv_w, *head_out_w, *head_fc1_w, *head_fc2_w;
    const float *head_q, *head_out_b, *head_ln_w, *head_ln_b, *head_fc2_b;
    __nv_bfloat16 *hatt, *hy, *hmlp;  // [max_batch, 768], [max_batch, 768], [max_batch, 3072]
    float *pooled;                    // [max_batch, 768]: the head's output
};

// One architecture's kernel (sm90_mega.cu, sm100_mega.cu).
struct sg_mega_launcher {
    const char *name;  // "sm90", "sm100": in messages
    // Sets both instantiations' dynamic shared-memory limit (SG_MEGA_SMEM); *per_sm: CTAs that fit on one SM.
    cudaError_t (*prepare)(int *per_sm);
    // Launches the kernel (prof: the SG_SM90_PROFILE instantiation) with grid CTAs of SG_MEGA_THREADS threads (64
    // fewer, no side warps, when p->nside is 0).
    cudaError_t (*launch)(int prof, int grid, cudaStream_t st, const sg_mega_params *p);
    // NULL: FC1 in bf16. Else FC1 runs in FP8 (format fc1) and this quantises its weights at create time (x_host
    // [rows, k] fp32, through the device buffer tmp -> E4M3 q + scales sf: sm100_quant.h's sg_sm100_quant_weight,
    // 128x4 UE8M0 atoms (bias unused); sm90_mega.h's sg_sm90_quant_weight_rows, one fp32 per row, interleaved with
    // the layer's FC1 bias (device fp32), the layout of sg_mega_params.w1sf).
    int (*quant_weight)(const float *x_host, int rows, int k, const float *bias, float *tmp, uint8_t *q, uint8_t *sf,
                        char *err, size_t errlen);
    // The narrowest GEMM task shape the kernel runs (sg_mega_params.narrow: small batches get them); 0: wide only.
    int narrow;
    int fc1;  // sg_mega_fc1: SG_FC1_BF16 when quant_weight is NULL
};

struct sg_mega_gpu;

// 1 if the megakernels' fixed shapes fit this model, else 0 with the reason.
int sg_mega_supported(const sg_config *c, char *why, size_t whylen);
// Builds tensor maps over b's buffers and weights, uploads fp32 biases, allocates counters (current device).
// NULL + err on failure.
sg_mega_gpu *sg_mega_gpu_create(const sg_mega_launcher *k, const sg_model *m, const sg_mega_buffers *b, char *err,
                                size_t errlen);
// Enqueues the whole forward of n images: pix [n, 224, 224, 3] uint8 (device) -> pooled = MAP head(post_LN(
// encoder(embed(pix)))) (HF's pooler_output) in b->pooled; h holds the encoder output. One kernel launch;
// capturable (after the first, eager, launch of each batch size, which builds its task table).
int sg_mega_gpu_run(sg_mega_gpu *g, const sg_mega_buffers *b, const uint8_t *pix, const float *post_w,
                    const float *post_b, float eps, int n, cudaStream_t st, char *err, size_t errlen);
void sg_mega_gpu_free(sg_mega_gpu *g);

// The megakernel as the portable backend's encoder (sg_cu_encoder_ops: init / run / destroy), over the portable
// path's weights and buffers. The architecture's ops pass their launcher to init.
int sg_mega_encoder_init(const sg_mega_launcher *k, void **out, const sg_model *m, sg_cu_model *cm, char *err,
                         size_t errlen);
int sg_mega_encoder_run(void *ctx, sg_cu_model *cm, const uint8_t *pix, int n, cudaStream_t st, char *err,
                        size_t errlen);
void sg_mega_encoder_destroy(void *ctx);

#endif
