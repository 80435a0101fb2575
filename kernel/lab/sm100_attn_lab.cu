// kernel/lab/sm100_attn_lab.cu — a test harness for the SM100 megakernel's attention task (sm100_attn.cuh).
//
// Why: the task is written for the Blackwell megakernel, where its inputs arrive by TMA; checking it there is
// slow and needs a B200. It uses only sm_80 features, so this lab runs it alone on any sm_80+ GPU (an H100
// through scripts/sm100-check.sh, which also builds kernel/sm100 for sm_90) against kernel/lab/test_sm100_attn.c's
// CPU reference.
// One CTA of 256 threads per (head, image): all threads copy the Q, K, V boxes (256 rows x 64 bf16 of the head,
// rows img*196 ..; rows past the tensor zero, as TMA fills them) with plain 16-byte loads into dynamic shared
// memory at the SWIZZLE_128B addresses (sg_sw128_offset), one __syncthreads (allowed here, not in the task),
// then warpgroup `wg` calls sg_mma_attn_task while the other warpgroup exits. __launch_bounds__(320, 1) gives
// the kernel the register cap of the megakernel the task is inlined into, so ptxas -v of this file is the
// task's register use there. The output buffer is NaN-poisoned and has guard rows after the tensor.
#include <cstdio>
#include <cuda_runtime.h>
#include "../cuda/cuda_common.h"
#include "../sm100/sm100_attn.cuh"
#include "sm100_attn_lab.h"

#define SG_ATTN_LAB_HEADS 12
#define SG_ATTN_LAB_QKV_LD (3 * SG_ATTN_LAB_HEADS * SG_ATTN_DH)  // 2304
#define SG_ATTN_LAB_OUT_LD (SG_ATTN_LAB_HEADS * SG_ATTN_DH)      // 768
#define SG_ATTN_LAB_BOX_BYTES (SG_ATTN_ROWS * SG_ATTN_DH * 2)    // 32 KiB per box
#define SG_ATTN_LAB_SMEM (3 * SG_ATTN_LAB_BOX_BYTES + 1024)      // + slack to align the boxes to 1024 bytes
#define SG_ATTN_LAB_THREADS 256

__global__ void __launch_bounds__(320, 1)
    sg_sm100_attn_lab_kernel(const __nv_bfloat16 *__restrict__ qkv, int rows, __nv_bfloat16 *__restrict__ out, int wg) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t *box = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    const int head = blockIdx.x, img = blockIdx.y;
    // Element i: box i / 2048 (Q, K, V), row (i / 8) % 256, chunk i % 8; 8 consecutive threads read one 128-byte row.
    for (int i = threadIdx.x; i < 3 * SG_ATTN_ROWS * 8; i += blockDim.x) {
        const int b = i / (SG_ATTN_ROWS * 8), r = (i / 8) % SG_ATTN_ROWS, c = i % 8;
        const int row = img * SG_ATTN_T + r;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (row < rows)
            val = *reinterpret_cast<const uint4 *>(qkv + (size_t)row * SG_ATTN_LAB_QKV_LD +
                                                   b * SG_ATTN_LAB_OUT_LD + head * SG_ATTN_DH + 8 * c);
        *reinterpret_cast<uint4 *>(box + b * SG_ATTN_LAB_BOX_BYTES + sg_sw128_offset(r, c)) = val;
    }
    __syncthreads();
    if ((int)threadIdx.x / 128 == wg)
        sg_mma_attn_task(box, box + SG_ATTN_LAB_BOX_BYTES, box + 2 * SG_ATTN_LAB_BOX_BYTES, img, head, out,
                         SG_ATTN_LAB_OUT_LD, (int)(threadIdx.x % 128) / 32, 4);
}

extern "C" uint32_t sg_sm100_attn_lab_sw128_offset(int row, int chunk) { return sg_sw128_offset(row, chunk); }

// Every CUDA call below: on failure, the message goes to err and the function cleans up and returns -1.
#define SG_ATTN_LAB_CK(call) SG_CU_TRY_GOTO(call, err, errlen, rc, done)

extern "C" int sg_sm100_attn_lab(const uint16_t *qkv_host, int n_img, int warpgroup, uint16_t *out_host, char *err,
                                 size_t errlen) {
    if (n_img < 1 || n_img > 65535 || (warpgroup != 0 && warpgroup != 1) || !qkv_host || !out_host) {
        snprintf(err, errlen, "sm100 attn lab: bad arguments (n_img %d, warpgroup %d)", n_img, warpgroup);
        return -1;
    }
    // No device, or no code for it in the build (kernel/sm100 is built for sm_100a only unless GENCODE_SM100 adds
    // more): the test SKIPs on these messages.
    if (sg_cu_kernel_runnable((const void *)sg_sm100_attn_lab_kernel,
                              "kernel/sm100 is compiled for sm_100a; scripts/sm100-check.sh adds sm_90", err, errlen))
        return -1;
    int rc = -1;
    const int rows = n_img * SG_ATTN_T;
    const size_t qkv_bytes = (size_t)rows * SG_ATTN_LAB_QKV_LD * 2;
    const size_t out_bytes = (size_t)(rows + SG_SM100_ATTN_LAB_GUARD_ROWS) * SG_ATTN_LAB_OUT_LD * 2;
    __nv_bfloat16 *d_qkv = NULL, *d_out = NULL;
    SG_ATTN_LAB_CK(cudaMalloc(&d_qkv, qkv_bytes));
    SG_ATTN_LAB_CK(cudaMalloc(&d_out, out_bytes));
    SG_ATTN_LAB_CK(cudaMemcpy(d_qkv, qkv_host, qkv_bytes, cudaMemcpyHostToDevice));
    SG_ATTN_LAB_CK(cudaMemset(d_out, 0xFF, out_bytes));  // NaN poison: every output must be written, guards not
    SG_ATTN_LAB_CK(cudaFuncSetAttribute(sg_sm100_attn_lab_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        SG_ATTN_LAB_SMEM));
    sg_sm100_attn_lab_kernel<<<dim3(SG_ATTN_LAB_HEADS, n_img), SG_ATTN_LAB_THREADS, SG_ATTN_LAB_SMEM>>>(d_qkv, rows,
                                                                                                      d_out, warpgroup);
    SG_ATTN_LAB_CK(cudaGetLastError());
    SG_ATTN_LAB_CK(cudaDeviceSynchronize());
    SG_ATTN_LAB_CK(cudaMemcpy(out_host, d_out, out_bytes, cudaMemcpyDeviceToHost));
    rc = 0;
done:
    if (d_qkv && cudaFree(d_qkv) != cudaSuccess && rc == 0) {
        snprintf(err, errlen, "sm100 attn lab: cudaFree failed");
        rc = -1;
    }
    if (d_out && cudaFree(d_out) != cudaSuccess && rc == 0) {
        snprintf(err, errlen, "sm100 attn lab: cudaFree failed");
        rc = -1;
    }
    return rc;
}
