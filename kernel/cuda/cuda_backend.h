/* kernel/cuda/cuda_backend.h — the portable backend's machinery (staging, streams, CUDA graphs, patch embedding,
 * pooling head) offered to the megakernel backends, which replace only the encoder layers
 * (sg_cu_encoder_ops, cuda_forward.h).
 */
#ifndef SG_CUDA_BACKEND_H
#define SG_CUDA_BACKEND_H

#include "cuda_forward.h"
#include "../backend.h"

/* The cuda backend with the encoder layers of ops (NULL: the portable ones); its name is ops->name. NULL + err
 * when it cannot be created. */
sg_backend *sg_cu_backend_create_ops(const sg_model *m, const sg_backend_opts *o, const sg_cu_encoder_ops *ops,
                                     char *err, size_t errlen);

/* The encoder ops of megakernel backend `name` (sg_backend_parse_spec's "sm90", "sm90:fp8", "sm100", ...) if it can
 * run model m on device `device`, else NULL with the reason in err. */
const sg_cu_encoder_ops *sg_cu_encoder_ops_for(const char *name, const sg_model *m, int device, char *err,
                                               size_t errlen);
/* The same per megakernel, with the numerics `prec` asks for (kernel/sm90/sm90_backend.cu: FC1 in FP8 for
 * SG_PRECISION_FP8, else bf16; kernel/sm100/sm100_backend.cu: FC1 in MXFP8 unless SG_PRECISION_BF16). */
const sg_cu_encoder_ops *sg_sm90_encoder_ops(const sg_model *m, int device, sg_precision prec, char *err,
                                             size_t errlen);
const sg_cu_encoder_ops *sg_sm100_encoder_ops(const sg_model *m, int device, sg_precision prec, char *err,
                                              size_t errlen);

#endif
