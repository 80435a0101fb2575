/* preprocess/text/tokenizer_encode.c — one query to its token ids, as the SigLIP2 processor produces them.
 *
 * The order is the tokenizers library's TokenizerImpl::encode followed by post_process (tokenizer/mod.rs,
 * added_vocabulary.rs), with the settings transformers passes for padding="max_length", max_length=N,
 * truncation=True (docs/tokenizer.md):
 *   1. added tokens with normalized = false are cut out of the raw text (leftmost-longest match, lstrip /
 *      rstrip applied as AddedVocabulary::find_matches does);
 *   2. every other piece is normalized, and added tokens with normalized = true are cut out of the result;
 *   3. the remaining pieces are pre-tokenized and run through BPE;
 *   4. the content ids are truncated to N minus the template's special tokens (so an EOS at the end of the
 *      template survives truncation), the template is applied, and the result is padded on the right with the
 *      pad id.
 * The return value counts the ids before truncation (content + template specials), so > N means truncated.
 * Invalid UTF-8 is refused (HF takes a Python str, which cannot hold it) with the offset of the first bad byte.
 */
#include "tok_internal.h"
#include "utf8.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unicode White_Space (what \s means in the Rust regex crate, which the library uses for lstrip/rstrip). */
static int is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Start of the run of white space that ends s[0..n) (n if there is none). */
static size_t trailing_space_start(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = n;
    while (i > 0) {
        size_t b = i - 1;
        while (b > 0 && (u[b] & 0xC0) == 0x80) b--;
        uint32_t cp;
        if (!sg_utf8_decode(u + b, i - b, &cp) || !is_space(cp)) break;
        i = b;
    }
    return i;
}

/* Length of the run of white space that starts s[0..n). */
static size_t leading_space_len(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int k = sg_utf8_decode(u + i, n - i, &cp);
        if (!k || !is_space(cp)) break;
        i += (size_t)k;
    }
    return i;
}

/* The longest pattern of trie tr that starts at s[0..n): its added-token index, length in *mlen; or -1. */
static int32_t longest_at(const sg_tok_trie *tr, const char *s, size_t n, size_t *mlen) {
    int32_t best = -1, cur = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t c = tr->nodes[cur].first_child;
        uint8_t b = (uint8_t)s[k];
        while (c >= 0 && tr->nodes[c].byte != b) c = tr->nodes[c].next_sibling;
        if (c < 0) break;
        cur = c;
        if (tr->nodes[cur].token >= 0) {
            best = tr->nodes[cur].token;
            *mlen = k + 1;
        }
    }
    return best;
}

/* What to do with each split of a piece: called with (id >= 0, -) for an added token, or (-1, range) for text. */
typedef int (*split_fn)(const sg_tokenizer *t, int32_t id, const char *s, size_t len, void *ctx);

/* AddedVocabulary::find_matches: cuts s[0..n) into added tokens of trie tr and the text between them, calling
 * fn on each in order. Matching is leftmost-longest and resumes after each match's own end (before any rstrip
 * extension), as the Aho-Corasick iterator in the library does. */
static int split_added(const sg_tokenizer *t, const sg_tok_trie *tr, const char *s, size_t n, split_fn fn, void *ctx) {
    if (!tr->n || n == 0) return fn(t, -1, s, n, ctx);
    size_t start_offset = 0, i = 0;
    while (i < n) {
        size_t mlen = 0, st = i;
        int32_t tok = -1;
        for (; st < n; st++) {
            tok = longest_at(tr, s + st, n - st, &mlen);
            if (tok >= 0) break;
        }
        if (tok < 0) break;
        const sg_tok_added *a = &t->added[tok];
        size_t start = st, stop = st + mlen;
        i = stop;
        if (a->lstrip) {
            size_t ns = trailing_space_start(s, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip) stop += leading_space_len(s + stop, n - stop);
        if (start_offset < start && fn(t, -1, s + start_offset, start - start_offset, ctx) < 0) return -1;
        if (fn(t, a->id, NULL, 0, ctx) < 0) return -1;
        start_offset = stop;
    }
    if (start_offset < n && fn(t, -1, s + start_offset, n - start_offset, ctx) < 0) return -1;
    return 0;
}

typedef struct {
    sg_tok_ids *ids;
    sg_tok_buf norm;
    char *err;
    size_t errlen;
} enc_ctx;

/* A split of a normalized piece: an added token, or text for the pre-tokenizer and BPE. */
static int on_normalized(const sg_tokenizer *t, int32_t id, const char *s, size_t len, void *vctx) {
    enc_ctx *c = vctx;
    if (id >= 0) {
        if (sg_tok_ids_push(c->ids, id) < 0) return snprintf(c->err, c->errlen, "out of memory"), -1;
        return 0;
    }
    return sg_tok_pretokenize_bpe(t, s, len, c->ids, c->err, c->errlen);
}

/* A split of the raw text: an added token, or text to normalize and split again. */
static int on_raw(const sg_tokenizer *t, int32_t id, const char *s, size_t len, void *vctx) {
    enc_ctx *c = vctx;
    if (id >= 0) {
        if (sg_tok_ids_push(c->ids, id) < 0) return snprintf(c->err, c->errlen, "out of memory"), -1;
        return 0;
    }
    if (len == 0) return 0;
    int r = sg_tok_normalize(t, s, len, &c->norm);
    if (r == -2)
        return snprintf(c->err, c->errlen, "the normalizer expands a %zu-byte piece past %d times its length", len,
                        SG_TOK_MAX_EXPANSION),
               -1;
    if (r < 0) return snprintf(c->err, c->errlen, "out of memory"), -1;
    /* split_added may call back into on_normalized only, which does not touch c->norm, so the buffer stays
     * valid while it is walked. */
    return split_added(t, &t->trie_norm, c->norm.v, c->norm.n, on_normalized, c);
}

int sg_tokenizer_encode(const sg_tokenizer *t, const char *text, size_t len, int32_t *ids, int max_len, char *err,
                        size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    if (!t || !ids || (!text && len)) {
        snprintf(err, errlen, "sg_tokenizer_encode: NULL %s", !t ? "tokenizer" : !ids ? "ids" : "text");
        return -1;
    }
    if (max_len < t->n_special) {
        snprintf(err, errlen, "max_len %d is less than the %d special tokens the template adds", max_len, t->n_special);
        return -1;
    }
    size_t bad = sg_utf8_check(text, len);
    if (bad < len) {
        snprintf(err, errlen, "invalid UTF-8 at byte offset %zu (byte 0x%02X)", bad, (unsigned char)text[bad]);
        return -1;
    }
    sg_tok_ids content = {0};
    enc_ctx c = {&content, {0}, err, errlen};
    int rc = split_added(t, &t->trie_raw, text, len, on_raw, &c);
    free(c.norm.v);
    if (rc < 0) {
        free(content.v);
        return -1;
    }
    if (content.n > (size_t)(INT_MAX - t->n_special)) {
        snprintf(err, errlen, "text of %zu bytes gives %zu tokens, more than this API can count", len, content.n);
        free(content.v);
        return -1;
    }
    int total = (int)content.n + t->n_special;
    size_t keep = (size_t)(max_len - t->n_special);
    if (keep > content.n) keep = content.n;
    int o = 0;
    for (int k = 0; k < t->n_tmpl; k++) {
        const sg_tok_tmpl *it = &t->tmpl[k];
        /* (memcpy with a NULL source is undefined even for 0 bytes: an empty query has no content array.) */
        if (it->is_sequence) {
            if (keep) memcpy(ids + o, content.v, keep * sizeof *ids);
            o += (int)keep;
        } else {
            if (it->n_ids) memcpy(ids + o, t->tmpl_ids + it->ids_off, it->n_ids * sizeof *ids);
            o += (int)it->n_ids;
        }
    }
    while (o < max_len) ids[o++] = t->pad_id;
    free(content.v);
    return total;
}

int32_t sg_tokenizer_pad_id(const sg_tokenizer *t) { return t ? t->pad_id : -1; }
int32_t sg_tokenizer_vocab_size(const sg_tokenizer *t) { return t ? t->vocab_size : 0; }
