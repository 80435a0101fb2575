// kernel/mega/tmap.cuh — host side: TMA tensor maps over row-major matrices, for the megakernels' host side
// (mega_gpu.cu) and the lab's kernels.
//
// cuTensorMapEncodeTiled is reached through the runtime's driver entry point, so nothing links -lcuda.
// Every map is 2D over a row-major [rows, cols] matrix; the usual one is bf16 or fp32 with a box of {one 128-byte
// row (64 bf16 or 32 fp32), box_rows}, 128-byte swizzle (the wgmma K-major / MN-major SW128 layouts), and
// out-of-bounds rows zero-filled.
#ifndef SG_TMAP_CUH
#define SG_TMAP_CUH

#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

// 2D map over a row-major [rows, cols] matrix of `type` (elem bytes each), box {box_cols, box_rows}, swizzle
// swz, out-of-bounds rows zero-filled. 0, or -1 with err. The one encoder of kernel/mega, kernel/sm90,
// kernel/sm100 and kernel/lab.
static inline int sg_tmap_encode_2d(CUtensorMap *m, CUtensorMapDataType type, int elem, const void *base,
                                    uint64_t rows, uint64_t cols, uint32_t box_rows, uint32_t box_cols,
                                    CUtensorMapSwizzle swz, char *err, size_t errlen) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !p) {
            cudaGetLastError();
            snprintf(err, errlen, "%s:%d: cuTensorMapEncodeTiled not found in the driver", __FILE__, __LINE__);
            return -1;
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    const cuuint64_t dims[2] = {cols, rows};
    const cuuint64_t strides[1] = {cols * (cuuint64_t)elem};
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t estr[2] = {1, 1};
    const CUresult r = fn(m, type, 2, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "%s:%d: cuTensorMapEncodeTiled failed (%d): rows %llu cols %llu box %ux%u", __FILE__,
                 __LINE__, (int)r, (unsigned long long)rows, (unsigned long long)cols, box_rows, box_cols);
        return -1;
    }
    return 0;
}

// The common case: bf16 (f32 = 0) or fp32 (f32 = 1) elements, 128-byte swizzle.
static inline int sg_tmap_sw128(CUtensorMap *m, int f32, const void *base, uint64_t rows, uint64_t cols,
                                  uint32_t box_rows, uint32_t box_cols, char *err, size_t errlen) {
    return sg_tmap_encode_2d(m, f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, f32 ? 4 : 2,
                             base, rows, cols, box_rows, box_cols, CU_TENSOR_MAP_SWIZZLE_128B, err, errlen);
}
static inline int sg_tmap_sw128_bf16(CUtensorMap *m, const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                    uint32_t box_cols, char *err, size_t errlen) {
    return sg_tmap_sw128(m, 0, base, rows, cols, box_rows, box_cols, err, errlen);
}
#endif
