/* kernel/lab/sm100_mxf8_tile.h — a small, unoptimised tcgen05 MXFP8 GEMM (the SM100 megakernel's MMA layer
 * in isolation), for checking the PTX/SASS offline and, once a B200 is available, the numerics against
 * sg_mxfp8_gemm_ref (kernel/cpu/cpu_mxfp8.h). NOT RUN ON HARDWARE YET: it compiles for sm_100a with no
 * warnings or spills; nothing in the tool calls it.
 */
#ifndef SG_SM100_MXF8_TILE_H
#define SG_SM100_MXF8_TILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* D [M, N] fp32 (row-major, host) = (A·2^SA)(B·2^SB)ᵀ on the current CUDA device.
 * qa [M, K], qb [N, K]: E4M3 codes, K-major (host). sa [M, K/32], sb [N, K/32]: UE8M0 codes, row-major (host;
 * the launcher rearranges them into the 128x4 layout). M, N, K must be multiples of 128.
 * Returns 0, or -1 with a reason in err (bad shape, no sm_100 device, CUDA error). */
int sg_sm100_mxf8_tile_gemm(const uint8_t *qa, const uint8_t *sa, const uint8_t *qb, const uint8_t *sb, int M, int N,
                            int K, float *d, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
