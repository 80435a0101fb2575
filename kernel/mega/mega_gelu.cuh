// kernel/mega/mega_gelu.cuh — the megakernels' GELU (FC1's epilogue), in its own header so that the lab kernels
// (kernel/lab/sm90_lean_lab.cu) compute it the same way without the whole skeleton.
#ifndef SG_MEGA_GELU_CUH
#define SG_MEGA_GELU_CUH

// gelu_pytorch_tanh with the hardware tanh (tanh.approx.f32, max relative error ~2^-11): the result is rounded
// to bf16 (2^-9) right after, so the approximation is below the output's own rounding; tanhf cost ~20
// instructions per element, 128 per thread per FC1 tile. Written as 0.5 x + 0.5 x tanh(x (k0 + k1 x^2)): five
// FP32 instructions and the tanh per element, where the textbook order compiled to seven (the FC1 epilogue is
// issue- and instruction-fetch-bound: docs/perf-notes.md session 11).
__device__ __forceinline__ float sg_mega_gelu(float x) {
    const float k0 = 0.7978845608028654f;            // sqrt(2/pi)
    const float k1 = 0.044715f * 0.7978845608028654f;  // 0.044715 sqrt(2/pi)
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(x * fmaf(x * x, k1, k0)));
    const float h = 0.5f * x;
    return fmaf(h, t, h);
}

#endif
