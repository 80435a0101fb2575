// kernel/cuda/cuda_gemm.cu — cuBLASLt plans for Y = X W^T (+ bias) (GELU) (+ Y).
//
// cuBLASLt is column-major, our activations row-major. A row-major [R, C] matrix is a column-major [C, R] one,
// so Y^T[N, M] = W[N, K] X^T[K, M] is computed as: A = W viewed col-major [K, N] with op T, B = X viewed col-
// major [K, M] with op N, C = D = Y viewed col-major [N, M]. The bias then runs along D's rows (N, the output
// features), which is what the epilogue broadcasts. Compute type fp32 (bf16 products, fp32 sums).
// Algorithm choice: a plan runs the heuristic's first result (deterministic for a given GPU and cuBLAS) and
// keeps up to SG_CU_GEMM_CANDIDATES more; when SG_CUDA_GEMM_TUNE=1, sg_cu_gemm_tune times them once per batch
// size on the real operands and keeps the fastest. At one image (M = 196) that picks smaller or split-K tiles
// (batch-1 forward 10-28 us faster: docs/perf-notes.md, portable CUDA backend, v4). Every candidate accumulates
// in fp32, so accuracy does not depend on which wins, but the choice is made by timing and may differ between
// processes (results then differ by rounding), which is why it is opt-in.
#include <cmath>
#include <cstring>
#include "cuda_gemm.h"
#include "cuda_common.h"

int sg_cu_gemm_plan(sg_cu_gemm *g, cublasLtHandle_t lt, int M, int N, int K, cudaDataType_t out_type,
                    sg_cu_epilogue epi, int accumulate, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    g->M = M;
    g->N = N;
    g->K = K;
    g->out_type = out_type;
    g->epi = epi;
    g->accumulate = accumulate;
    SG_LT_TRY(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), err, errlen);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    SG_LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), err, errlen);
    SG_LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), err, errlen);
    const cublasLtEpilogue_t e = epi == SG_EPI_BIAS_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
                                 : epi == SG_EPI_BIAS    ? CUBLASLT_EPILOGUE_BIAS
                                                         : CUBLASLT_EPILOGUE_DEFAULT;
    SG_LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), err, errlen);
    SG_LT_TRY(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, K, N, K), err, errlen);
    SG_LT_TRY(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, K, M, K), err, errlen);
    SG_LT_TRY(cublasLtMatrixLayoutCreate(&g->lc, out_type, N, M, N), err, errlen);
    cublasLtMatmulPreference_t pref;
    SG_LT_TRY(cublasLtMatmulPreferenceCreate(&pref), err, errlen);
    const size_t ws = SG_CU_GEMM_WORKSPACE;
    cublasStatus_t s =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t res[SG_CU_GEMM_CANDIDATES];
    int count = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(lt, g->op, g->la, g->lb, g->lc, g->lc, pref, SG_CU_GEMM_CANDIDATES, res,
                                           &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || count == 0) {
        snprintf(err, errlen, "%s:%d: cuBLASLt has no algorithm for %d x %d x %d (out %s, epilogue %d): status %d",
                 __FILE__, __LINE__, M, N, K, out_type == CUDA_R_32F ? "fp32" : "bf16", (int)epi, (int)s);
        return -1;
    }
    for (int i = 0; i < count; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) g->cand[g->ncand++] = res[i].algo;
    if (g->ncand == 0) {
        snprintf(err, errlen, "%s:%d: cuBLASLt's algorithms for %d x %d x %d all report a failed state", __FILE__,
                 __LINE__, M, N, K);
        return -1;
    }
    g->algo = g->cand[0];
    return 0;
}

static float median3(float a, float b, float c) { return fmaxf(fminf(a, b), fminf(fmaxf(a, b), c)); }

int sg_cu_gemm_tune(sg_cu_gemm *g, cublasLtHandle_t lt, const void *X, const void *W, const void *bias, void *Y,
                    void *workspace, cudaStream_t st, char *err, size_t errlen) {
    if (g->ncand < 2) return 0;
    // 3 rounds of k_reps back-to-back runs per candidate, median round: one round of a 196-row GEMM is ~50 us,
    // long against the event resolution (~0.5 us) and short for the whole tuning (~9 GEMMs x 8 x 3 rounds).
    constexpr int k_reps = 5, k_rounds = 3;
    cudaEvent_t ev[k_rounds + 1];
    for (int i = 0; i <= k_rounds; i++) SG_CU_TRY(cudaEventCreate(&ev[i]), err, errlen);
    const cublasLtMatmulAlgo_t first = g->cand[0];
    float best_ms = 0.f, first_ms = 0.f;
    int best = -1, rc = 0;
    for (int c = 0; c < g->ncand && rc == 0; c++) {
        g->algo = g->cand[c];
        char ignored[256];
        if (sg_cu_gemm_run(g, lt, X, W, bias, Y, workspace, st, ignored, sizeof ignored)) continue;  // warm-up
        float t[k_rounds];
        bool ok = true;
        for (int r = 0; r < k_rounds && ok; r++) {
            if (cudaEventRecord(ev[r], st) != cudaSuccess) rc = -1;
            for (int i = 0; i < k_reps && ok; i++)
                ok = sg_cu_gemm_run(g, lt, X, W, bias, Y, workspace, st, ignored, sizeof ignored) == 0;
            if (cudaEventRecord(ev[r + 1], st) != cudaSuccess || cudaEventSynchronize(ev[r + 1]) != cudaSuccess ||
                cudaEventElapsedTime(&t[r], ev[r], ev[r + 1]) != cudaSuccess)
                rc = -1;
        }
        if (rc || !ok) continue;
        const float ms = median3(t[0], t[1], t[2]);
        if (c == 0) first_ms = ms;
        if (best < 0 || ms < best_ms) {
            best = c;
            best_ms = ms;
        }
    }
    for (int i = 0; i <= k_rounds; i++) cudaEventDestroy(ev[i]);
    if (rc) {
        snprintf(err, errlen, "%s:%d: timing GEMM candidates for %d x %d x %d: %s", __FILE__, __LINE__, g->M, g->N,
                 g->K, cudaGetErrorString(cudaGetLastError()));
        g->algo = first;
        return -1;
    }
    // Keep the first choice unless the winner is clearly faster (3%: above run-to-run noise of these timings).
    g->chosen = (best >= 0 && !(first_ms > 0.f && best_ms > 0.97f * first_ms)) ? best : 0;
    g->algo = g->cand[g->chosen];
    return 0;
}

int sg_cu_gemm_run(sg_cu_gemm *g, cublasLtHandle_t lt, const void *X, const void *W, const void *bias, void *Y,
                   void *workspace, cudaStream_t st, char *err, size_t errlen) {
    if (g->epi != SG_EPI_NONE)
        SG_LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), err,
                  errlen);
    const float alpha = 1.f, beta = g->accumulate ? 1.f : 0.f;
    SG_LT_TRY(cublasLtMatmul(lt, g->op, &alpha, W, g->la, X, g->lb, &beta, Y, g->lc, Y, g->lc, &g->algo, workspace,
                             SG_CU_GEMM_WORKSPACE, st),
              err, errlen);
    return 0;
}

void sg_cu_gemm_free(sg_cu_gemm *g) {
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    memset(g, 0, sizeof *g);
}
