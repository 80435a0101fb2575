/* kernel/cpu/cpu_encoder.h — the fp32 CPU reference forward pass of the SigLIP vision tower.
 *
 * The oracle for every GPU path and the fallback on machines without a GPU. Matches HF transformers'
 * SiglipVisionModel in fp32 (model-spec.md §3): patch embedding, positions, L pre-LN blocks with tanh GELU,
 * post-LayerNorm, MAP pooling head.
 */
#ifndef SG_CPU_ENCODER_H
#define SG_CPU_ENCODER_H

#include <stdint.h>
#include "../model.h"
#include "../backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pixel_values: [n, C, S, S] float32, already normalised (HF's pixel_values).
 * pooled:      [n, D] pooler_output, or NULL.
 * last_hidden: [n, T, D] last_hidden_state (after post-LN), or NULL.
 * threads: worker threads, 0 = all cores. Returns 0, or -1 with a reason in err (allocation failure). */
int sg_cpu_forward(const sg_model *m, const float *pixel_values, int n, float *pooled, float *last_hidden,
                   int threads, char *err, size_t errlen);

/* uint8 HWC RGB (S x S x 3) to normalised float CHW (3 x S x S), with sg_pixel_to_float. */
void sg_pixels_to_chw(const uint8_t *rgb, int S, float *chw);

/* The "cpu" backend over sg_cpu_forward. */
sg_backend *sg_cpu_backend_create(const sg_model *m, const sg_backend_opts *opts, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
