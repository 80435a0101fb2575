// kernel/warp_reduce.cuh — a warp's sum or maximum of one float per lane, for every GPU kernel file (the portable
// path, the megakernels' skeleton, the Hopper and Blackwell layers, the lab).
//
// An xor butterfly over offsets 16, 8, 4, 2, 1: every lane ends with the same value, and the order of the additions
// is fixed, so a row reduced by these always rounds the same way, whichever kernel runs it. Callers that reduce
// over fewer lanes (the attention's quads: offsets 1 and 2) write their own two shuffles.
#ifndef SG_WARP_REDUCE_CUH
#define SG_WARP_REDUCE_CUH

__device__ __forceinline__ float sg_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float sg_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
#endif
