/* weights/text_load.h — loading the text tower of a SigLIP checkpoint into an sg_text_model.
 *
 * The same checkpoint as sg_model_load (a directory with config.json + model.safetensors or a sharded index,
 * or one .safetensors file): the text fields come from config.json's text_config (SiglipTextConfig defaults
 * for absent fields), the tensors are "text_model.*" plus the top-level logit_scale / logit_bias (optional:
 * without them zero-shot scores are unavailable). The token embedding table is bound without conversion (see
 * kernel/text_model.h); the rest as fp32 like the vision tower. A vision-only checkpoint, a missing tensor or
 * a shape that disagrees with the config fails with a message naming what is missing and where it looked.
 * Loading the text tower never affects the vision tower: image runs never call this.
 */
#ifndef SG_TEXT_LOAD_H
#define SG_TEXT_LOAD_H

#include <stddef.h>
#include "../kernel/text_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the text tower at path (a directory or a .safetensors file). NULL + message on any problem. */
sg_text_model *sg_text_model_load(const char *path, char *err, size_t errlen);

void sg_text_model_free(sg_text_model *m);

/* The tokenizer.json that goes with the weights at path: DIR/tokenizer.json, DIR being path when it is a
 * directory, else the directory holding the file. 0, or -1 with a message naming the file it looked for. */
int sg_text_tokenizer_path(const char *path, char *out, size_t outlen, char *err, size_t errlen);

/* Whether HF's tokenizer of the checkpoint at path returns an attention mask (config.h,
 * sg_tokenizer_config_parse): from DIR/tokenizer_config.json (DIR as for sg_text_tokenizer_path), or 1 when there
 * is no such file (the tokenizer class's default then applies). When it does, get_text_features(**inputs) and
 * the zero-shot pipeline mask the pad positions as keys; when it does not (google/siglip2-base-patch16-224),
 * every one of the T positions is attended. why gets a line for -v saying which and from where. 0, or -1 with a
 * message naming the file (unreadable, not JSON, model_input_names not an array of strings). */
int sg_text_mask_rule(const char *path, int *attention_mask, char *why, size_t whylen, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
