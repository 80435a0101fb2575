/* kernel/cpu/cpu_text.h — the fp32 CPU reference forward pass of the SigLIP text tower, and the "cpu" text
 * backend.
 *
 * Matches HF transformers' SiglipModel.get_text_features in fp32 (kernel/text_model.h): token rows + positions,
 * the vision tower's layer loop (cpu_encoder.c's sg_cpu_encoder_layers) with the attention mask if any, final
 * LayerNorm of the last position, head Linear.
 */
#ifndef SG_CPU_TEXT_H
#define SG_CPU_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "../backend.h"
#include "../text_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sg_cpu_text sg_cpu_text;

/* Packs m's Linear weights for the CPU GEMM with `threads` threads (0 = all). m must outlive the result.
 * NULL + reason (out of memory, a config the encoder cannot run). */
sg_cpu_text *sg_cpu_text_pack(const sg_text_model *m, int threads, char *err, size_t errlen);
void sg_cpu_text_free(sg_cpu_text *p);

/* ids: [n, T] token ids, each in [0, V); mask: [n, T], 1 = position attended (HF's attention_mask), or NULL
 * for all ones. out: [n, P] pooler_output (not normalised). 0, or -1 with a reason (an id out of range,
 * out of memory). */
int sg_cpu_text_forward(const sg_cpu_text *p, const int32_t *ids, const uint8_t *mask, int n, float *out,
                        int threads, char *err, size_t errlen);

/* The "cpu" text backend over sg_cpu_text_forward. */
sg_text_backend *sg_cpu_text_backend_create(const sg_text_model *m, const sg_backend_opts *opts, char *err,
                                            size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
