// kernel/sm100/sm100_quant.cu — MXFP8 quantisers (see sm100_quant.h): plain CUDA, any target >= sm_89.
//
// The per-block recipe is shared with the CPU through kernel/sm100/sm100_desc.h: the scale code comes from the
// same sg_ue8m0_for_amax (exact integer/frexp arithmetic, valid in device code), the scaling is the same exact
// double product x * 2^(127-u) rounded once to float, and the element code is the hardware's
// cvt.rn.satfinite.e4m3x2.f32 (cuda_fp8.h __nv_cvt_float_to_fp8 with __NV_SATFINITE), which is what
// sg_e4m3_encode models; tests/test_sm100_quant.c proves the two agree bit for bit on fresh random data.
//   - matrix: one thread per (row, 32-element block): 8 float4 loads, amax, 32 codes as 2 uint4 stores.
//   - LayerNorm + quantise: one warp per row, lane j holds columns j + 32 i (coalesced), so block i is one
//     value per lane: its amax is a 5-step shuffle max, and the warp stores the block's 32 codes as 32
//     consecutive bytes; lane 0 writes the scale byte.
#include <cstdio>
#include "../cuda/cuda_common.h"
#include "sm100_quant.cuh"
#include "sm100_quant.h"

static constexpr int k_ln_max_blocks = SG_LNQ_MAX_BLOCKS;
static constexpr int k_ln_rows_per_cta = 4;  // 4 warps: 49 CTAs at one image (196 rows), as sg_cu_layernorm
static constexpr int k_mat_threads = 256;    // one thread per 32-element block; load time only, any size works

__global__ void sg_quant_matrix_kernel(const float *__restrict__ x, int rows, int k, uint8_t *__restrict__ q,
                                       uint8_t *__restrict__ sf) {
    const int nb = k / 32;
    const long id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (long)rows * nb) return;
    const int r = (int)(id / nb), blk = (int)(id % nb);
    const float4 *src = reinterpret_cast<const float4 *>(x + (size_t)r * k + 32 * blk);
    float v[32];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float4 f = src[i];
        v[4 * i] = f.x;
        v[4 * i + 1] = f.y;
        v[4 * i + 2] = f.z;
        v[4 * i + 3] = f.w;
    }
#pragma unroll
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
    const uint8_t u = sg_ue8m0_for_amax(amax);
    uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; i++)
        w[i] = (uint32_t)sg_q_e4m3(v[4 * i], u) | (uint32_t)sg_q_e4m3(v[4 * i + 1], u) << 8 |
               (uint32_t)sg_q_e4m3(v[4 * i + 2], u) << 16 | (uint32_t)sg_q_e4m3(v[4 * i + 3], u) << 24;
    uint4 *dst = reinterpret_cast<uint4 *>(q + (size_t)r * k + 32 * blk);
    dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
    dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
    sf[sg_sm100_sf_offset((uint32_t)r, (uint32_t)blk, (uint32_t)nb)] = u;
}

__global__ void sg_ln_quant_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                   const float *__restrict__ b, int rows, int rows_pad, int d, float eps,
                                   uint8_t *__restrict__ q, uint8_t *__restrict__ sf, float *__restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * k_ln_rows_per_cta + (threadIdx.x >> 5);
    const int nb = d / 32;
    if (row >= rows_pad) return;
    if (row >= rows) {  // padding rows of the last 128-row atom: defined scales, no values
        for (int i = lane; i < nb; i += 32) sf[sg_sm100_sf_offset((uint32_t)row, (uint32_t)i, (uint32_t)nb)] = 0;
        return;
    }
    sg_ln_quant_row(x, w, b, row, d, eps, q, sf, y);
}

// -------------------------------------------------------------------------------------------- launchers
int sg_sm100_quant_matrix(const float *x, int rows, int k, uint8_t *q, uint8_t *sf, cudaStream_t st, char *err,
                          size_t errlen) {
    if (rows <= 0 || k <= 0 || k % 32 || ((uintptr_t)x & 15)) {
        snprintf(err, errlen, "%s:%d: MXFP8 quantiser: rows %d, k %d (k must be a multiple of 32, x 16-byte "
                              "aligned)", __FILE__, __LINE__, rows, k);
        return -1;
    }
    cudaError_t e = cudaSuccess;
    if (rows % 128) e = cudaMemsetAsync(sf, 0, sg_sm100_sf_bytes((uint32_t)rows, (uint32_t)k / 32), st);
    const long n = (long)rows * (k / 32);
    if (e == cudaSuccess) {
        sg_quant_matrix_kernel<<<(unsigned)((n + k_mat_threads - 1) / k_mat_threads), k_mat_threads, 0, st>>>(
            x, rows, k, q, sf);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: MXFP8 quantiser launch: %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

int sg_sm100_quant_weight(const float *x_host, int rows, int k, const float * /*bias*/, float *tmp, uint8_t *q,
                          uint8_t *sf, char *err, size_t errlen) {
    SG_CU_TRY(cudaMemcpy(tmp, x_host, (size_t)rows * k * sizeof(float), cudaMemcpyHostToDevice), err, errlen);
    if (sg_sm100_quant_matrix(tmp, rows, k, q, sf, 0, err, errlen)) return -1;
    SG_CU_TRY(cudaDeviceSynchronize(), err, errlen);
    return 0;
}

int sg_sm100_ln_quant(const float *x, const float *w, const float *b, int rows, int rows_pad, int d, float eps,
                      uint8_t *q, uint8_t *sf, float *y_f32, cudaStream_t st, char *err, size_t errlen) {
    if (rows <= 0 || rows_pad < rows || d <= 0 || d % 32 || d > 32 * k_ln_max_blocks) {
        snprintf(err, errlen, "%s:%d: LayerNorm + MXFP8: rows %d (padded %d), d %d (needs d %% 32 == 0, d <= %d)",
                 __FILE__, __LINE__, rows, rows_pad, d, 32 * k_ln_max_blocks);
        return -1;
    }
    sg_ln_quant_kernel<<<(rows_pad + k_ln_rows_per_cta - 1) / k_ln_rows_per_cta, 32 * k_ln_rows_per_cta, 0, st>>>(
        x, w, b, rows, rows_pad, d, eps, q, sf, y_f32);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: LayerNorm + MXFP8 launch: %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

// ------------------------------------------------------------------------------------- test entry points
// "no CUDA device" / "kernels not built for this GPU" are the phrases tests/test_sm100_quant.c SKIPs on.
static const char k_q_hint[] = "kernel/sm100 is compiled for sm_100a; scripts/sm100-check.sh adds sm_90";
#define SG_Q_TRY(x) SG_CU_TRY_GOTO(x, err, errlen, rc, done)

extern "C" int sg_sm100_quant_check_matrix(const float *x, int rows, int k, uint8_t *q, uint8_t *sf, char *err,
                                           size_t errlen) {
    if (rows <= 0 || k <= 0 || k % 32) {
        snprintf(err, errlen, "MXFP8 quantiser check: rows %d, k %d (k must be a multiple of 32)", rows, k);
        return -1;
    }
    if (sg_cu_kernel_runnable((const void *)sg_quant_matrix_kernel, k_q_hint, err, errlen)) return -1;
    const size_t xn = (size_t)rows * k, sfn = sg_sm100_sf_bytes((uint32_t)rows, (uint32_t)k / 32);
    float *dx = nullptr;
    uint8_t *dq = nullptr, *dsf = nullptr;
    int rc = 0;
    SG_Q_TRY(cudaMalloc(&dx, xn * sizeof(float)));
    SG_Q_TRY(cudaMalloc(&dq, xn));
    SG_Q_TRY(cudaMalloc(&dsf, sfn));
    SG_Q_TRY(cudaMemcpy(dx, x, xn * sizeof(float), cudaMemcpyHostToDevice));
    SG_Q_TRY(cudaMemset(dq, 0xA5, xn));  // poison: every byte must be written
    SG_Q_TRY(cudaMemset(dsf, 0xA5, sfn));
    if (sg_sm100_quant_matrix(dx, rows, k, dq, dsf, 0, err, errlen)) {
        rc = -1;
        goto done;
    }
    SG_Q_TRY(cudaDeviceSynchronize());
    SG_Q_TRY(cudaMemcpy(q, dq, xn, cudaMemcpyDeviceToHost));
    SG_Q_TRY(cudaMemcpy(sf, dsf, sfn, cudaMemcpyDeviceToHost));
done:
    cudaFree(dx);
    cudaFree(dq);
    cudaFree(dsf);
    return rc;
}

extern "C" int sg_sm100_quant_check_ln(const float *x, const float *w, const float *b, int rows, int d, float eps,
                                       uint8_t *q, uint8_t *sf, float *y, char *err, size_t errlen) {
    if (rows <= 0 || d <= 0 || d % 32 || d > 1024) {
        snprintf(err, errlen, "LayerNorm + MXFP8 check: rows %d, d %d (d must be a multiple of 32, <= 1024)", rows, d);
        return -1;
    }
    if (sg_cu_kernel_runnable((const void *)sg_ln_quant_kernel, k_q_hint, err, errlen)) return -1;
    const int rows_pad = (rows + 127) / 128 * 128;
    const size_t xn = (size_t)rows * d, sfn = sg_sm100_sf_bytes((uint32_t)rows, (uint32_t)d / 32);
    float *dx = nullptr, *dw = nullptr, *db = nullptr, *dy = nullptr;
    uint8_t *dq = nullptr, *dsf = nullptr;
    int rc = 0;
    SG_Q_TRY(cudaMalloc(&dx, xn * sizeof(float)));
    SG_Q_TRY(cudaMalloc(&dy, xn * sizeof(float)));
    SG_Q_TRY(cudaMalloc(&dw, (size_t)d * sizeof(float)));
    SG_Q_TRY(cudaMalloc(&db, (size_t)d * sizeof(float)));
    SG_Q_TRY(cudaMalloc(&dq, xn));
    SG_Q_TRY(cudaMalloc(&dsf, sfn));
    SG_Q_TRY(cudaMemcpy(dx, x, xn * sizeof(float), cudaMemcpyHostToDevice));
    SG_Q_TRY(cudaMemcpy(dw, w, (size_t)d * sizeof(float), cudaMemcpyHostToDevice));
    SG_Q_TRY(cudaMemcpy(db, b, (size_t)d * sizeof(float), cudaMemcpyHostToDevice));
    SG_Q_TRY(cudaMemset(dq, 0xA5, xn));
    SG_Q_TRY(cudaMemset(dsf, 0xA5, sfn));
    SG_Q_TRY(cudaMemset(dy, 0xFF, xn * sizeof(float)));  // NaN poison
    if (sg_sm100_ln_quant(dx, dw, db, rows, rows_pad, d, eps, dq, dsf, y ? dy : nullptr, 0, err, errlen)) {
        rc = -1;
        goto done;
    }
    SG_Q_TRY(cudaDeviceSynchronize());
    SG_Q_TRY(cudaMemcpy(q, dq, xn, cudaMemcpyDeviceToHost));
    SG_Q_TRY(cudaMemcpy(sf, dsf, sfn, cudaMemcpyDeviceToHost));
    if (y) SG_Q_TRY(cudaMemcpy(y, dy, xn * sizeof(float), cudaMemcpyDeviceToHost));
done:
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dq);
    cudaFree(dsf);
    return rc;
}
