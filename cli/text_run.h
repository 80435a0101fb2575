/* cli/text_run.h — text queries in, rows out: reading, tokenising, batching, embedding and writing queries.
 *
 * Queries come from the --text operands in order, then the --texts-from stream (one query per line, read as it
 * goes so a list of millions is never held: a trailing "\r" is stripped from each line (CRLF files), every
 * line is a query, an empty one included, so row i is line i; with -0 entries end with NUL and are taken as
 * they are). Each query is tokenised (the SigLIP2 processor's ids, padded to T = 64 on the right, truncated
 * beyond), and batches of up to `batch` queries go to the text backend; rows come out in input order. The
 * attention mask follows the checkpoint's tokenizer, as HF's processor does: when it returns one
 * (tok->attention_mask), 1 on the first min(tokens, T) positions (right padding, tokenizer.h); when it returns
 * input_ids only (google/siglip2-base-patch16-224), none: every one of the T positions is attended.
 * A query the tokenizer rejects (invalid UTF-8) fails alone, like a bad image: "siglip2-embed: query N
 * "text": reason" on stderr, then skip / null row / stop by --on-error. A query longer than T tokens is
 * truncated as HF's processor does; with verbose, a line says so.
 */
#ifndef SG_CLI_TEXT_RUN_H
#define SG_CLI_TEXT_RUN_H

#include <stddef.h>
#include <stdint.h>
#include "../kernel/backend.h"
#include "args.h"
#include "progress.h"
#include "writer.h"

/* The tokenizer as the runner uses it (cli/main.c binds preprocess/text/tokenizer.h; tests bind a table).
 * encode: sg_tokenizer_encode's contract. */
typedef struct sg_cli_text_tok {
    int (*encode)(const void *ctx, const char *text, size_t len, int32_t *ids, int max_len, char *err,
                  size_t errlen);
    const void *ctx;
    int32_t vocab_limit;  /* ids must be below this (the text tower's vocabulary); a query with a larger id
                             (a tokenizer with more entries than the weights) fails alone */
    int attention_mask;   /* 1: the tokenizer returns an attention mask (pads are masked keys); 0: input_ids
                             only, the backend gets no mask (weights/text_load.h sg_text_mask_rule) */
} sg_cli_text_tok;

typedef struct sg_cli_text_cfg {
    sg_text_backend *backend;
    const sg_cli_text_tok *tok;
    sg_cli_writer *writer;
    char **texts;              /* --text operands, in order */
    int ntexts;
    const char *texts_from;    /* --texts-from FILE ("-" = stdin), or NULL */
    int nul_sep;               /* -0 */
    int batch;                 /* queries per backend call, at most backend->max_batch */
    int normalize;
    sg_cli_on_error on_error;
    int verbose;               /* say which queries were truncated */
    sg_cli_progress *progress; /* may be disabled */
    int rows_share_progress_tty; /* rows go to the terminal the progress line is drawn on: clear it first */
} sg_cli_text_cfg;

typedef struct sg_cli_text_stats {
    uint64_t embedded, failed, truncated;
    uint64_t not_reached;      /* read but not written because --on-error fail stopped the run */
    int stopped;
    double tokenize_s, compute_s, write_s, wall_s;
} sg_cli_text_stats;

/* Runs every query to the writer. 0, or -1 on a fatal error (unreadable --texts-from, backend failure, write
 * error) with err; stats are filled either way. */
int sg_cli_text_run(const sg_cli_text_cfg *cfg, sg_cli_text_stats *stats, char *err, size_t errlen);

/* Embeds a fixed list of n strings (the zero-shot hypotheses) into out [n, dim], not normalised. Any string
 * the tokenizer rejects fails the whole call, naming it. 0, or -1 with err. */
int sg_cli_text_embed_list(sg_text_backend *b, const sg_cli_text_tok *tok, char *const *texts, int n, float *out,
                           char *err, size_t errlen);

/* "query N \"text\"" for messages: N is 1-based, the text JSON-escaped (U+FFFD for bytes that are not UTF-8)
 * and cut to about 60 characters. */
void sg_cli_text_label(char *out, size_t outlen, uint64_t index, const char *text, size_t len);

#endif
