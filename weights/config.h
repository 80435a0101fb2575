/* weights/config.h — reading the vision (sg_config) and text (sg_text_config) settings of a SigLIP config.json,
 * and whether the checkpoint's tokenizer returns an attention mask (its tokenizer_config.json).
 *
 * Two real shapes are accepted: a SiglipModel config (top-level model_type "siglip", the vision fields nested
 * in "vision_config"; google/siglip2-base-patch16-224 ships just {"model_type":"siglip_vision_model"} there)
 * and a standalone SiglipVisionModel config (model_type "siglip_vision_model", fields at top level). Fields
 * that are absent take the SiglipVisionConfig defaults (sg_config_default). Wrong JSON types, duplicate keys,
 * unknown activations, vision_use_head false (no pooled output) and out-of-range sizes are errors with a
 * message; nothing here aborts.
 */
#ifndef SG_WEIGHTS_CONFIG_H
#define SG_WEIGHTS_CONFIG_H

#include <stddef.h>
#include "../kernel/model.h"
#include "../kernel/text_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An upper bound on the number of values in len bytes of JSON (commas + opening brackets + 1), checked
 * before cJSON parses untrusted text: cJSON spends ~64 bytes per value, so this bounds its memory. */
static inline size_t sg_json_values_bound(const char *s, size_t len) {
    size_t v = 1;
    for (size_t i = 0; i < len; i++)
        v += s[i] == ',' || s[i] == '[' || s[i] == '{';
    return v;
}

/* Parses len bytes of JSON text (need not be NUL-terminated). label names the source in messages. Returns 0
 * and fills *out, or -1 with a message in err ("<label>: vision_config.hidden_size: ..."). */
int sg_config_parse(const char *json, size_t len, const char *label, sg_config *out, char *err, size_t errlen);

/* Reads and parses the file at path (at most 16 MB). Returns 0 or -1 with a message in err. */
int sg_config_load_file(const char *path, sg_config *out, char *err, size_t errlen);

/* The text tower's settings (text_config of a SiglipModel config; absent fields take the SiglipTextConfig
 * defaults, projection_size null or absent = hidden_size). A vision-only config (model_type
 * 'siglip_vision_model', or no model_type and no text_config) is an error saying so. 0, or -1 + message. */
int sg_text_config_parse(const char *json, size_t len, const char *label, sg_text_config *out, char *err,
                         size_t errlen);
int sg_text_config_load_file(const char *path, sg_text_config *out, char *err, size_t errlen);

/* tokenizer_config.json: does HF's tokenizer of this checkpoint return an attention_mask? HF's tokenizers return
 * one exactly when "attention_mask" is in model_input_names (tokenization_utils_base.py and
 * tokenization_utils_tokenizers.py: return_attention_mask defaults to that test), which from_pretrained takes
 * from this file when it sets the key, else from the class (GemmaTokenizer, Siglip2Tokenizer: ["input_ids",
 * "attention_mask"]). google/siglip2-base-patch16-224's file sets ["input_ids"] (transformers
 * convert_siglip2_to_hf.py, get_siglip2_tokenizer()): no mask. *attention_mask = 1 when the key is absent or
 * lists "attention_mask", 0 when it is an array of strings without it. Not JSON, not an object, the key twice,
 * or a value that is not an array of strings (HF's list(value) fails on null and would split a string into
 * characters) is an error naming label. 0, or -1 + message. */
int sg_tokenizer_config_parse(const char *json, size_t len, const char *label, int *attention_mask, char *err,
                              size_t errlen);
/* The same for the file at path (at most 16 MB; a file that cannot be read is an error). */
int sg_tokenizer_config_load_file(const char *path, int *attention_mask, char *err, size_t errlen);

/* Checks the relations the forward pass relies on (heads divide hidden, patch divides image, 3 channels,
 * sizes within sane bounds). Returns 0 or -1 with a message in err. */
int sg_config_validate(const sg_config *c, const char *label, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
