// kernel/cuda/cuda_gelu.cu — GELU in place on bf16, when the fc1 GEMM's epilogue cannot apply it.
//
// SigLIP uses the tanh approximation, which the fc1 GEMM normally applies in its cuBLASLt epilogue; configs
// naming the erf form ("gelu"), or a cuBLASLt without a fused bias+GELU algorithm for a shape, get a bias-only
// epilogue followed by this kernel (the value is computed in fp32 from the bf16 GEMM output).
#include "cuda_kernels.h"
#include "cuda_common.h"

__global__ void gelu_kernel(sg_bf16 *x, size_t count, int tanh_form) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const float v = __bfloat162float(x[i]);
        const float g = tanh_form
                            // gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
                            ? 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))
                            : 0.5f * v * (1.f + erff(v * 0.70710678118654752f));  // 1/sqrt(2)
        x[i] = __float2bfloat16(g);
    }
}

int sg_cu_gelu(sg_bf16 *x, size_t count, int tanh_form, cudaStream_t st, char *err, size_t errlen) {
    const int blocks = (int)(count / 256 + 1 < 65536 ? count / 256 + 1 : 65536);
    gelu_kernel<<<blocks, 256, 0, st>>>(x, count, tanh_form);
    SG_CU_LAUNCHED(err, errlen);
    return 0;
}
