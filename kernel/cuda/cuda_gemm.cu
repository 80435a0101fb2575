// kernel/cuda/cuda_gemm.cu — cuBLASLt plans for Y = X W^T (+ bias) (GELU) (+ Y).
//
// cuBLASLt is column-major, our activations row-major. A row-major [R, C] matrix is a column-major [C, R] one,
// so Y^T[N, M] = W[N, K] X^T[K, M] is computed as: A = W viewed col-major [K, N] with op T, B = X viewed col-
// major [K, M] with op N, C = D = Y viewed col-major [N, M]. The bias then runs along D's rows (N, the output
// features), which is what the epilogue broadcasts. Compute type fp32 (bf16 products, fp32 sums).
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
    cublasLtMatmulHeuristicResult_t res;
    int count = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(lt, g->op, g->la, g->lb, g->lc, g->lc, pref, 1, &res, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || count == 0) {
        snprintf(err, errlen, "%s:%d: cuBLASLt has no algorithm for %d x %d x %d (out %s, epilogue %d): status %d",
                 __FILE__, __LINE__, M, N, K, out_type == CUDA_R_32F ? "fp32" : "bf16", (int)epi, (int)s);
        return -1;
    }
    g->algo = res.algo;
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
