// kernel/sm90/sm90_mega.h — the Hopper megakernel's launchers (sm90_mega.cu), for sm90_backend.cu; the host side
// that uses them is shared with the Blackwell kernel (kernel/mega/mega_gpu.h).
#ifndef SG_SM90_MEGA_H
#define SG_SM90_MEGA_H

#include "../mega/mega_gpu.h"

extern const sg_mega_launcher sg_sm90_mega_launcher;      // FC1 in bf16
extern const sg_mega_launcher sg_sm90_mega_launcher_fp8;  // FC1 and FC2 in FP8 with row scales (--precision fp8)

// The FP8ROW weight quantiser (sm90_fp8row.cu; sg_mega_launcher.quant_weight): x_host [rows, k] fp32 (k a multiple
// of 4, rows even), through the device buffer tmp (rows x k floats) -> q [rows, k] E4M3 codes and one fp32 scale per
// row, bit-identical to sg_fp8_quantize(x, k, rows, k, 1, k, 0, q, s) on the CPU, written into sf (device, 2 rows
// floats) interleaved with bias (device, [rows]): (b[2 j], b[2 j + 1], s[2 j], s[2 j + 1]) per row pair, the
// epilogue's layout (sg_mega_params.w1sf). 0, or -1 with err.
int sg_sm90_quant_weight_rows(const float *x_host, int rows, int k, const float *bias, float *tmp, uint8_t *q,
                              uint8_t *sf, char *err, size_t errlen);

#endif
