// kernel/sm100/sm100_mega.h — the Blackwell megakernel's launchers (sm100_mega.cu), for sm100_backend.cu; the host
// side that uses them is shared with the Hopper kernel (kernel/mega/mega_gpu.h).
#ifndef SG_SM100_MEGA_H
#define SG_SM100_MEGA_H

#include "../mega/mega_gpu.h"

extern const sg_mega_launcher sg_sm100_mega_launcher;        // every GEMM in bf16 (--precision bf16)
extern const sg_mega_launcher sg_sm100_mega_launcher_mxfp8;  // FC1 in block-scaled MXFP8 (auto, fp8)

#endif
