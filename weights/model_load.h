/* weights/model_load.h — finding and loading a SigLIP vision checkpoint into an sg_model.
 *
 * Accepts a directory holding config.json + model.safetensors (or a sharded model.safetensors.index.json),
 * or a single .safetensors file (then the config is read from a config.json beside it if present, else the
 * SiglipVisionConfig defaults apply). Tensor names may carry the "vision_model." prefix or not; text-tower
 * tensors are ignored. F32 tensors are used in place from the mapping when aligned; F16/BF16 are converted
 * to fp32 once at load.
 */
#ifndef SG_MODEL_LOAD_H
#define SG_MODEL_LOAD_H

#include <stddef.h>
#include "../kernel/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resolves where the weights are, in order: explicit_path (from --weights; may be NULL), $SIGLIP2_WEIGHTS,
 * then the Hugging Face cache (~/.cache/huggingface/hub/models--google--siglip2-base-patch16-224/snapshots/
 * *, honouring $HF_HOME and $HF_HUB_CACHE). Writes the chosen path into out and returns 0. On failure returns
 * -1 and writes into err a multi-line message listing every place it looked and how to get the weights. */
int sg_weights_locate(const char *explicit_path, char *out, size_t outlen, char *err, size_t errlen);

/* Loads the model at path (a directory or a .safetensors file). Returns NULL on any problem, with a message
 * naming it in err (file, tensor name, expected vs found shape and dtype). Never aborts on bad input. */
sg_model *sg_model_load(const char *path, char *err, size_t errlen);

/* Releases everything sg_model_load allocated or mapped. NULL is allowed. */
void sg_model_free(sg_model *m);

#ifdef __cplusplus
}
#endif
#endif
