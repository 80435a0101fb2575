// kernel/mega/tmap.cuh — host side: TMA tensor maps over row-major matrices, for the megakernels' host side
// (mega_gpu.cu) and the lab's kernels.
//
// cuTensorMapEncodeTiled is reached through the runtime's driver entry point, so nothing links -lcuda.
// Every map is over a row-major [rows, cols] matrix, 2D (or 3D with the 128-byte K blocks as a dimension:
// sg_tmap_kblocks); the usual one is bf16 or fp32 with a box of {one 128-byte row (64 bf16 or 32 fp32),
// box_rows}, 128-byte swizzle (the wgmma K-major / MN-major SW128 layouts), and out-of-bounds rows zero-filled.
#ifndef SG_TMAP_CUH
#define SG_TMAP_CUH

#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

// The driver's cuTensorMapEncodeTiled (looked up once), or NULL with err.
static inline PFN_cuTensorMapEncodeTiled_v12000 sg_tmap_encoder(char *err, size_t errlen) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !p) {
            cudaGetLastError();
            snprintf(err, errlen, "%s:%d: cuTensorMapEncodeTiled not found in the driver", __FILE__, __LINE__);
            return NULL;
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

// 2D map over a row-major [rows, cols] matrix of `type` (elem bytes each), box {box_cols, box_rows}, swizzle
// swz, out-of-bounds rows zero-filled. 0, or -1 with err. The one encoder of kernel/mega, kernel/sm90,
// kernel/sm100 and kernel/lab.
static inline int sg_tmap_encode_2d(CUtensorMap *m, CUtensorMapDataType type, int elem, const void *base,
                                    uint64_t rows, uint64_t cols, uint32_t box_rows, uint32_t box_cols,
                                    CUtensorMapSwizzle swz, char *err, size_t errlen) {
    PFN_cuTensorMapEncodeTiled_v12000 fn = sg_tmap_encoder(err, errlen);
    if (!fn) return -1;
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

// A row-major [rows, cols] matrix of `type` (elem bytes each; cols a multiple of kb = 128 / elem, one 128-byte K
// block) seen as 3D: {kb columns of a K block, rows, K blocks}, strides {cols elem, 128} bytes, box {kb, box_rows,
// blocks}, 128-byte swizzle: one copy (sg_tma_load_3d at (0, row, first block)) brings `blocks` consecutive K blocks
// of box_rows rows, laid out in shared memory exactly as that many 2D boxes {kb, box_rows} one after another (each
// box_rows x 128 bytes, swizzled the same way). 0, or -1 with err.
static inline int sg_tmap_kblocks(CUtensorMap *m, CUtensorMapDataType type, int elem, const void *base, uint64_t rows,
                                  uint64_t cols, uint32_t box_rows, uint32_t blocks, char *err, size_t errlen) {
    const uint64_t kb = 128 / elem;
    if (cols % kb) {
        snprintf(err, errlen, "%s:%d: %llu columns are not whole K blocks of %llu", __FILE__, __LINE__,
                 (unsigned long long)cols, (unsigned long long)kb);
        return -1;
    }
    PFN_cuTensorMapEncodeTiled_v12000 fn = sg_tmap_encoder(err, errlen);
    if (!fn) return -1;
    const cuuint64_t dims[3] = {kb, rows, cols / kb};
    const cuuint64_t strides[2] = {cols * elem, 128};
    const cuuint32_t box[3] = {(cuuint32_t)kb, box_rows, blocks};
    const cuuint32_t estr[3] = {1, 1, 1};
    const CUresult r = fn(m, type, 3, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "%s:%d: cuTensorMapEncodeTiled (3D, K blocks) failed (%d): rows %llu cols %llu box "
                 "%llux%ux%u", __FILE__, __LINE__, (int)r, (unsigned long long)rows, (unsigned long long)cols,
                 (unsigned long long)kb, box_rows, blocks);
        return -1;
    }
    return 0;
}
static inline int sg_tmap_sw128_kblocks(CUtensorMap *m, const void *base, uint64_t rows, uint64_t cols,
                                        uint32_t box_rows, uint32_t blocks, char *err, size_t errlen) {
    return sg_tmap_kblocks(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, rows, cols, box_rows, blocks, err, errlen);
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
