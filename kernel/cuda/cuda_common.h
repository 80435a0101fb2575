/* kernel/cuda/cuda_common.h — error handling, and the small host helpers, shared by the portable CUDA backend's
 * sources.
 *
 * Two tiers (docs/style.md): a failing CUDA or cuBLASLt call is an environment error, so it is reported with
 * file:line and the library's own words, never ignored. Functions that can fail return int (0 or -1) and write
 * the message into the caller's err buffer through SG_CU_TRY / SG_LT_TRY; nothing here aborts, so that an out-of-
 * memory or a lost device becomes a clear message from the command instead of a crash.
 */
#ifndef SG_CUDA_COMMON_H
#define SG_CUDA_COMMON_H

#include <cstdio>
#include <cuda_runtime.h>
#include <cublasLt.h>

/* Evaluates a cudaError_t expression; on failure writes "file:line: expr: reason" into err and returns -1. */
#define SG_CU_TRY(expr, err, errlen)                                                                    \
    do {                                                                                                \
        cudaError_t sg_e_ = (expr);                                                                     \
        if (sg_e_ != cudaSuccess) {                                                                     \
            snprintf((err), (errlen), "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #expr,                  \
                     cudaGetErrorString(sg_e_), cudaGetErrorName(sg_e_));                               \
            return -1;                                                                                  \
        }                                                                                               \
    } while (0)

/* The same message, for functions that free what they allocated: on failure sets rc = -1 and jumps to label. */
#define SG_CU_TRY_GOTO(expr, err, errlen, rc, label)                                                    \
    do {                                                                                                \
        cudaError_t sg_e_ = (expr);                                                                     \
        if (sg_e_ != cudaSuccess) {                                                                     \
            snprintf((err), (errlen), "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #expr,                  \
                     cudaGetErrorString(sg_e_), cudaGetErrorName(sg_e_));                               \
            (rc) = -1;                                                                                  \
            goto label;                                                                                 \
        }                                                                                               \
    } while (0)

/* Same for a cublasStatus_t expression. */
#define SG_LT_TRY(expr, err, errlen)                                                                    \
    do {                                                                                                \
        cublasStatus_t sg_s_ = (expr);                                                                  \
        if (sg_s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
            snprintf((err), (errlen), "%s:%d: %s: cuBLASLt status %d", __FILE__, __LINE__, #expr,       \
                     (int)sg_s_);                                                                       \
            return -1;                                                                                  \
        }                                                                                               \
    } while (0)

/* After a kernel launch: catches bad launch configurations at the place they happen. */
#define SG_CU_LAUNCHED(err, errlen) SG_CU_TRY(cudaGetLastError(), err, errlen)

static inline int sg_cu_div_up(long a, long b) { return (int)((a + b - 1) / b); }

/* Activation buffers live in one device allocation cut into n pieces of sizes[i] bytes, each starting on a
 * 256-byte boundary: sg_cu_pieces_bytes is what to allocate, sg_cu_pieces_place points *dst[i] at each piece of
 * base. */
static inline size_t sg_cu_pieces_bytes(const size_t *sizes, int n) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (sizes[i] + 255) & ~(size_t)255;
    return total;
}
static inline void sg_cu_pieces_place(void *base, const size_t *sizes, void **const *dst, int n) {
    char *p = (char *)base;
    for (int i = 0; i < n; i++) {
        *dst[i] = p;
        p += (sizes[i] + 255) & ~(size_t)255;
    }
}

/* For the kernels' test entry points: 0 when a CUDA device is present and `kernel` has code for it; else -1
 * with "no CUDA device (...)" or "kernels not built for this GPU (sm_XY, NAME): <hint>", the phrases the
 * tests SKIP on. */
static inline int sg_cu_kernel_runnable(const void *kernel, const char *hint, char *err, size_t errlen) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        snprintf(err, errlen, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return -1;
    }
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, kernel) != cudaSuccess) {
        cudaGetLastError();
        int dev = 0;
        cudaDeviceProp prop;
        cudaGetDevice(&dev);
        if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) prop.major = prop.minor = 0, prop.name[0] = 0;
        snprintf(err, errlen, "kernels not built for this GPU (sm_%d%d, %s): %s", prop.major, prop.minor, prop.name,
                 hint);
        return -1;
    }
    return 0;
}

#endif
