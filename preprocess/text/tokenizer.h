/* preprocess/text/tokenizer.h — SigLIP2's text tokenizer: a Hugging Face tokenizer.json (Gemma's BPE with byte
 * fallback) applied exactly as the SigLIP2 processor applies it (docs/tokenizer.md has the facts and sources).
 *
 * The text counterpart of preprocess/preprocess.h: a query string in, the 64 token ids the text tower reads
 * out. Loading parses untrusted JSON and never aborts: malformed or hostile files give NULL and a reason
 * (what, where, got vs expected), with allocation bounded by the file's size. A loaded tokenizer is immutable:
 * sg_tokenizer_encode may be called from several threads at once.
 */
#ifndef SG_TOKENIZER_H
#define SG_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sg_tokenizer sg_tokenizer;

/* Loads a Hugging Face fast-tokenizer file (tokenizer.json). NULL on error with the reason in err (what, where,
 * got vs expected); never aborts on hostile input, bounded allocation. */
sg_tokenizer *sg_tokenizer_load(const char *path, char *err, size_t errlen);
/* The same from len bytes of JSON in memory (need not be NUL-terminated; not kept after the call): for fuzzing
 * and tests. */
sg_tokenizer *sg_tokenizer_load_mem(const char *json, size_t len, char *err, size_t errlen);
/* Frees t (NULL is fine). */
void sg_tokenizer_free(sg_tokenizer *t);

/* Token ids of one query exactly as the SigLIP2 processor gives them (special tokens, lower-casing or not,
 * padding to max_len with the pad id, truncation), written to ids[0..max_len). Returns the number of tokens
 * before truncation (> max_len means it was truncated), or -1 with a reason in err (e.g. invalid UTF-8 at
 * byte offset N). text need not be NUL-terminated. */
int sg_tokenizer_encode(const sg_tokenizer *t, const char *text, size_t len, int32_t *ids, int max_len, char *err,
                        size_t errlen);
/* The id padding uses (the "<pad>" token's id). */
int32_t sg_tokenizer_pad_id(const sg_tokenizer *t);
/* One more than the largest id encode can write (vocabulary, added tokens, template and pad ids): every id is
 * below it, so a caller can check it against the rows of the token embedding once, at load. */
int32_t sg_tokenizer_vocab_size(const sg_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
