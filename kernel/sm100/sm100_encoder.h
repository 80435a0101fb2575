/* kernel/sm100/sm100_encoder.h — the Blackwell encoder layers (sm100_encoder.cu) as sg_cu_encoder_ops, for
 * sm100_backend.cu, which decides whether they may run on a device (C++ only).
 */
#ifndef SG_SM100_ENCODER_H
#define SG_SM100_ENCODER_H

#include <cstddef>
#include "../cuda/cuda_forward.h"

/* 1 when the sm100 kernels support config c, else 0 with the reason in why. The portable backend's own
 * checks (attention shape, channels) come on top, in sg_cu_model_init. */
int sg_sm100_config_supported(const sg_config *c, char *why, size_t whylen);

/* The ops themselves; callers check the device and config first. fc1_mxfp8 = 1: FC1 in block-scaled MXFP8
 * (the accuracy plan of record, --precision auto / fp8); 0: every GEMM bf16 (--precision bf16). */
const sg_cu_encoder_ops *sg_sm100_encoder_ops_impl(int fc1_mxfp8);

#endif
