/* cli/text_setup.h — what a run needs for text: the text tower, the tokenizer.json beside it, a text backend;
 * and the zero-shot labels of an image run built from them.
 *
 * Every failure is a setup error (exit 2) with a message naming what is missing and where it looked: a
 * vision-only checkpoint, no tokenizer.json, a tokenizer_config.json that cannot be read (whose
 * model_input_names decides whether the pads are masked, as in HF), a tokenizer whose ids do not fit the text
 * tower's vocabulary, no logit_scale / logit_bias for zero-shot, a text tower whose output width differs from the
 * image embedding's.
 */
#ifndef SG_CLI_TEXT_SETUP_H
#define SG_CLI_TEXT_SETUP_H

#include <stddef.h>
#include "../kernel/backend.h"
#include "args.h"
#include "text_run.h"
#include "zeroshot.h"

typedef struct sg_cli_text_env {
    sg_text_model *model;
    void *tokenizer;          /* sg_tokenizer */
    sg_cli_text_tok tok;      /* bound to tokenizer */
    sg_text_backend *backend;
    char why[1024];           /* which backend and why */
    char mask_why[4608];      /* whether pads are masked and which file says so (tok.attention_mask) */
} sg_cli_text_env;

/* Loads the text tower and tokenizer of the checkpoint at weights (a located path) and creates the text backend
 * for opts (max_batch queries per call). 0, or -1 with err (the env is then empty). */
int sg_cli_text_env_open(sg_cli_text_env *env, const char *weights, const sg_backend_opts *opts, char *err,
                         size_t errlen);
void sg_cli_text_env_close(sg_cli_text_env *env);

/* The zero-shot set-up of an image run: reads the labels (--labels or --labels-from), puts each into the
 * template, embeds them with the text tower once, and fills z (top-k, logit scale and bias). image_dim is the
 * vision embedding's width, which the text tower's must equal. 0, or -1 with err. */
int sg_cli_zeroshot_setup(sg_zeroshot *z, const sg_cli_args *a, const char *weights, const sg_backend_opts *opts,
                          int image_dim, int verbose, char *err, size_t errlen);

/* The labels of --labels (split at commas, surrounding whitespace trimmed) or --labels-from (one per line,
 * CR stripped, blank lines ignored, whitespace trimmed). An empty label, or none at all, is an error.
 * *out is a malloc'd array of malloc'd strings. 0, or -1 with err. */
int sg_cli_labels_read(const char *inline_list, const char *file, char ***out, int *n, char *err, size_t errlen);

#endif
