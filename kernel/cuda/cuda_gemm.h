/* kernel/cuda/cuda_gemm.h — the one GEMM shape the model needs, through cuBLASLt.
 *
 *   Y[M, N] = X[M, K] · W[N, K]^T (+ bias[N]) (then GELU) (+ Y when accumulate)
 *
 * X and W are row-major bf16 (W as stored in the checkpoint, [out, in]); Y is row-major bf16 or fp32; the
 * bias has Y's type (cuBLASLt's rule). Accumulation is fp32. "accumulate" (beta = 1, C = D = Y) is how the
 * residual adds are fused into the out-projection, fc2 and patch GEMMs. A plan is made once per shape (the
 * algorithm heuristic runs then) and run many times, also inside CUDA graph capture.
 */
#ifndef SG_CUDA_GEMM_H
#define SG_CUDA_GEMM_H

#include <cstddef>
#include <cublasLt.h>
#include <cuda_runtime.h>

typedef enum { SG_EPI_NONE = 0, SG_EPI_BIAS, SG_EPI_BIAS_GELU } sg_cu_epilogue;

/* How many of cuBLASLt's heuristic results a plan keeps for timing: at M = 196 (one image) the first choice is
 * often a large tile that leaves most SMs idle, and a later candidate (smaller tiles, split-K) is faster. */
#define SG_CU_GEMM_CANDIDATES 8

typedef struct sg_cu_gemm {
    int M, N, K;
    cudaDataType_t out_type;
    sg_cu_epilogue epi;
    int accumulate;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;      /* the one run: heuristic's first choice, or the fastest after sg_cu_gemm_tune */
    int chosen;                     /* index of algo in cand (SG_CUDA_PROFILE=1 prints it) */
    int ncand;                      /* heuristic's candidates kept for sg_cu_gemm_tune, best-ranked first */
    cublasLtMatmulAlgo_t cand[SG_CU_GEMM_CANDIDATES];
} sg_cu_gemm;

/* Bytes of workspace every plan may use; the caller allocates one buffer of this size per stream. */
#define SG_CU_GEMM_WORKSPACE ((size_t)32 << 20)

/* Plans the GEMM. Returns 0, or -1 with err (also when cuBLASLt offers no algorithm for it: for
 * SG_EPI_BIAS_GELU the caller may then retry with SG_EPI_BIAS and apply GELU itself). */
int sg_cu_gemm_plan(sg_cu_gemm *g, cublasLtHandle_t lt, int M, int N, int K, cudaDataType_t out_type,
                    sg_cu_epilogue epi, int accumulate, char *err, size_t errlen);

/* Enqueues Y = ... on st. bias may be NULL only with SG_EPI_NONE. */
int sg_cu_gemm_run(sg_cu_gemm *g, cublasLtHandle_t lt, const void *X, const void *W, const void *bias, void *Y,
                   void *workspace, cudaStream_t st, char *err, size_t errlen);

/* Times every kept candidate on the real operands (a few runs each, on st, which must not be capturing; Y and
 * the workspace are overwritten with meaningless values) and keeps the fastest in g->algo. The heuristic's first
 * choice stays unless another is at least 3% faster (below that it is timing noise, and the first choice keeps
 * results identical to an untuned plan). Returns 0, or -1 with err on a CUDA error; a candidate that fails to
 * run is skipped. */
int sg_cu_gemm_tune(sg_cu_gemm *g, cublasLtHandle_t lt, const void *X, const void *W, const void *bias, void *Y,
                    void *workspace, cudaStream_t st, char *err, size_t errlen);

void sg_cu_gemm_free(sg_cu_gemm *g);

#endif
