/* kernel/backend.h — the one interface the command uses to turn preprocessed pixels into embeddings.
 *
 * A backend takes batches of uint8 S x S RGB images (HWC, as preprocess/ makes them) and returns the
 * pooler_output of each, not normalised. Work is submitted and collected in order, with up to
 * SG_BACKEND_MAX_INFLIGHT batches in flight, so a GPU backend can upload batch i+1 while batch i computes.
 * Backends: "cpu" (kernel/cpu, the fp32 reference), "cuda" (kernel/cuda, portable cuBLASLt path, sm_80+),
 * "sm90" (kernel/sm90, Hopper megakernel), "sm100" (kernel/sm100, Blackwell megakernel). sg_backend_create
 * picks one by compute capability unless told.
 */
#ifndef SG_BACKEND_H
#define SG_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "text_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SG_BACKEND_MAX_INFLIGHT 2

typedef enum {
    SG_BACKEND_AUTO = 0,
    SG_BACKEND_CPU,
    SG_BACKEND_CUDA,
    SG_BACKEND_SM90,
    SG_BACKEND_SM100
} sg_backend_kind;

typedef enum { SG_PRECISION_AUTO = 0, SG_PRECISION_BF16, SG_PRECISION_FP8 } sg_precision;

typedef struct sg_backend_opts {
    sg_backend_kind kind;    /* SG_BACKEND_AUTO: choose by device */
    int device;              /* CUDA device ordinal */
    int max_batch;           /* largest n passed to submit */
    int threads;             /* CPU backend: worker threads, 0 = all cores */
    sg_precision precision;  /* megakernels: bf16 or fp8 */
} sg_backend_opts;

typedef struct sg_backend sg_backend;
struct sg_backend {
    const char *name;        /* "cpu", "cuda", "sm90", "sm100" */
    const char *numerics;    /* what the embeddings are computed in, one line for -v and --info; NULL: not said */
    int dim;                 /* D: floats per embedding */
    int image_size;          /* S */
    int max_batch;
    void *impl;
    /* Starts embedding n (1..max_batch) images of S*S*3 bytes each. pixels may be reused when it returns.
     * At most SG_BACKEND_MAX_INFLIGHT batches may be submitted and not yet collected. 0 or -1 + err. */
    int (*submit)(sg_backend *b, const uint8_t *pixels, int n, char *err, size_t errlen);
    /* Waits for the oldest submitted batch and writes its n * dim floats (pooler_output) to out. */
    int (*collect)(sg_backend *b, float *out, char *err, size_t errlen);
    void (*destroy)(sg_backend *b);
};

/* Creates the backend asked for in opts (or the best one for the machine when SG_BACKEND_AUTO), for model m,
 * which must outlive it. On success, writes into why one line saying which backend was chosen and why
 * (device name, compute capability, or why no GPU is used). Returns NULL with a clear message in err when the
 * asked-for backend cannot run (no device, driver too old, out of memory, not compiled in). */
sg_backend *sg_backend_create(const sg_model *m, const sg_backend_opts *opts, char *why, size_t whylen,
                              char *err, size_t errlen);

/* submit + collect of one batch. */
int sg_backend_embed(sg_backend *b, const uint8_t *pixels, int n, float *out, char *err, size_t errlen);

void sg_backend_destroy(sg_backend *b);

/* ---- text ------------------------------------------------------------------------------------------
 * The text tower has its own, synchronous entry: queries are tokenised on the host and a batch of token ids
 * goes in, pooler_output rows come out (kernel/text_model.h says what is computed). Backends: "cpu"
 * (kernel/cpu/cpu_text.c, fp32 reference) and "cuda" (kernel/cuda/cuda_text.cu, bf16); sm90 and sm100 run
 * text on the portable cuda path (their megakernels are for the vision tower). */
typedef struct sg_text_backend sg_text_backend;
struct sg_text_backend {
    const char *name;        /* "cpu", "cuda" */
    int dim;                 /* P: floats per embedding (the joint space's width) */
    int seq_len;             /* T: ids per query */
    int max_batch;
    void *impl;
    /* Embeds n (1..max_batch) queries: ids [n, T] (each in [0, V): checked, an id outside is an error),
     * mask [n, T] (1 = attended, HF's attention_mask) or NULL for all ones; out [n, dim]. 0, or -1 + err. */
    int (*embed)(sg_text_backend *b, const int32_t *ids, const uint8_t *mask, int n, float *out, char *err,
                 size_t errlen);
    void (*destroy)(sg_text_backend *b);
};

/* Creates the text backend for opts->kind: cpu, cuda (sm90 and sm100 give cuda), or for auto the cuda path
 * on a GPU from sm_80 on, else (or when it cannot start, saying why) cpu. why: one line saying which and why.
 * NULL + err when the asked-for backend cannot run. m must outlive the result. */
sg_text_backend *sg_text_backend_create(const sg_text_model *m, const sg_backend_opts *opts, char *why,
                                        size_t whylen, char *err, size_t errlen);
void sg_text_backend_destroy(sg_text_backend *b);

/* Parses "auto", "cpu", "cuda", "sm90", "sm100". Returns -1 if unknown. */
int sg_backend_parse(const char *s, sg_backend_kind *out);
/* A backend and its numerics as the tools name them: "NAME" or "NAME:fp8" / "NAME:bf16" (e.g. sm90:fp8). 0, or -1
 * for an unknown name or precision; *prec is SG_PRECISION_AUTO without a suffix. */
int sg_backend_parse_spec(const char *s, sg_backend_kind *out, sg_precision *prec);

/* Writes a multi-line, human-readable description of the machine for --info: GPUs found (name, compute
 * capability, memory, driver), the backend auto would choose and why. */
void sg_backend_describe(const sg_model *m_or_null, const sg_backend_opts *opts, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
