/* preprocess/text/tok_internal.h — the loaded tokenizer's tables, shared by the files of preprocess/text/.
 *
 * One sg_tokenizer holds what HF's tokenizers library builds from a tokenizer.json, restricted to the parts a
 * Gemma/SigLIP2 tokenizer uses (docs/tokenizer.md lists them; anything else is refused at load time):
 *   - the BPE model: vocab (string -> id), merges ((left id, right id) -> (rank, merged id)), unk token,
 *     fuse_unk, byte_fallback (the 256 "<0xNN>" ids), ignore_merges;
 *   - added tokens, matched as whole strings before the model runs: one byte trie over the tokens matched in the
 *     raw text (normalized = false) and one over those matched in the normalized text (normalized = true);
 *   - the normalizer (a list of Replace / Prepend steps), the pre-tokenizer (a list of Split steps on a literal
 *     string), and the post-processor (a TemplateProcessing "single" template: $A and special-token ids).
 * All strings live in one arena; tables hold offsets into it. Nothing is modified after load, so encode is
 * thread-safe.
 */
#ifndef SG_TOK_INTERNAL_H
#define SG_TOK_INTERNAL_H

#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

/* ---- string -> id hash (vocab, added tokens) ---------------------------------------------------------- */

/* One slot holds what a lookup compares first: a 32-bit hash tag, the length and the first 8 bytes of the string
 * (so most tokens, which are short, are matched without touching the arena), plus the string's place in the
 * arena and the id (-1 = empty slot). Loading a 256k vocab resolves ~1M strings; each lookup costing one cache
 * miss instead of two is what keeps the load inside its 0.3 s budget. */
typedef struct sg_tok_slot {
    uint64_t head; /* bytes 0..7 of the string, zero-padded */
    uint32_t len, off;
    int32_t id;
    uint32_t tag;
} sg_tok_slot;

typedef struct sg_tok_map {
    sg_tok_slot *slots; /* open addressing, linear probing */
    uint32_t mask;      /* slot count - 1 (a power of two, at least twice n) */
    uint32_t n;
} sg_tok_map;

/* ---- (left, right) -> (rank, merged id) hash (BPE merges) --------------------------------------------- */

typedef struct sg_tok_merge {
    uint64_t key; /* (uint64_t)left << 32 | right; UINT64_MAX = empty slot */
    uint32_t rank;
    int32_t new_id;
} sg_tok_merge;

typedef struct sg_tok_merges {
    sg_tok_merge *slots;
    uint32_t mask, n;
} sg_tok_merges;

/* ---- added tokens -------------------------------------------------------------------------------------- */

typedef struct sg_tok_added {
    uint32_t off, len;   /* content in the arena */
    uint32_t poff, plen; /* the pattern matched: content, or its normalized form when normalized = true */
    int32_t id;
    uint8_t lstrip, rstrip, normalized, special;
} sg_tok_added;

/* A byte trie over added-token patterns. Node 0 is the root; children of a node are a linked list (first_child,
 * next_sibling), which is enough for the few hundred tokens a real tokenizer has. token = index into
 * sg_tokenizer.added of the pattern ending here, -1 if none. */
typedef struct sg_tok_trie_node {
    int32_t first_child, next_sibling, token;
    uint8_t byte;
} sg_tok_trie_node;

typedef struct sg_tok_trie {
    sg_tok_trie_node *nodes;
    uint32_t n, cap;
} sg_tok_trie;

/* Added tokens longer than this are refused at load: matching costs up to this many trie steps per input byte. */
#define SG_TOK_MAX_ADDED_LEN 1024

/* ---- normalizer, pre-tokenizer, post-processor -------------------------------------------------------- */

typedef enum { SG_NORM_REPLACE, SG_NORM_PREPEND } sg_norm_kind;
typedef struct sg_tok_norm {
    sg_norm_kind kind;
    uint32_t pat_off, pat_len; /* Replace: the literal pattern (non-empty) */
    uint32_t rep_off, rep_len; /* Replace: its replacement; Prepend: the prefix */
} sg_tok_norm;

/* SplitDelimiterBehavior of the tokenizers library. */
typedef enum {
    SG_SPLIT_REMOVED,
    SG_SPLIT_ISOLATED,
    SG_SPLIT_MERGED_WITH_PREVIOUS,
    SG_SPLIT_MERGED_WITH_NEXT,
    SG_SPLIT_CONTIGUOUS
} sg_split_behavior;
typedef struct sg_tok_split {
    uint32_t pat_off, pat_len; /* the literal pattern (non-empty) */
    sg_split_behavior behavior;
} sg_tok_split;

/* One item of the "single" template: the sequence ($A) or a run of special-token ids. */
typedef struct sg_tok_tmpl {
    int is_sequence;
    uint32_t ids_off, n_ids; /* special: ids in sg_tokenizer.tmpl_ids[ids_off .. ids_off+n_ids) */
} sg_tok_tmpl;

#define SG_TOK_MAX_STEPS 16 /* normalizer / pre-tokenizer steps and template items kept (Gemma: 1, 1, 2) */

struct sg_tokenizer {
    char *arena; /* every string of the tables below */
    size_t arena_len, arena_cap;

    sg_tok_map vocab;      /* the BPE model's vocab */
    sg_tok_merges merges;  /* its merges */
    int32_t byte_ids[256]; /* id of "<0xNN>" for each byte, -1 if absent (used when byte_fallback) */
    int byte_fallback, fuse_unk, ignore_merges;
    int has_unk;               /* model.unk_token was a string */
    uint32_t unk_off, unk_len; /* that string */
    int32_t unk_id;            /* its id in the vocab, -1 if it is not there (HF then fails when it needs it) */

    sg_tok_added *added; /* added tokens, in file order */
    uint32_t n_added;
    sg_tok_map added_map; /* content -> id, for token_to_id */
    sg_tok_trie trie_raw, trie_norm;

    sg_tok_norm norm[SG_TOK_MAX_STEPS];
    int n_norm;
    sg_tok_split split[SG_TOK_MAX_STEPS];
    int n_split;
    sg_tok_tmpl tmpl[SG_TOK_MAX_STEPS];
    int n_tmpl;
    int32_t *tmpl_ids;
    uint32_t n_tmpl_ids;
    int n_special; /* ids the template adds around $A */

    int32_t pad_id;     /* id of "<pad>" */
    int32_t vocab_size; /* largest id encode can produce, + 1 */
};

/* ---- tables (tokenizer_table.c) ------------------------------------------------------------------------ */

/* Appends len bytes to t's arena; returns their offset, or UINT32_MAX when out of memory or past 4 GiB. */
uint32_t sg_tok_arena_add(sg_tokenizer *t, const char *s, size_t len);
/* 64-bit hash of a byte string (used by the maps). */
uint64_t sg_tok_hash(const char *s, size_t len);
/* Makes room for n entries in all (rehashing the strings in arena if the table grows). 0 or -1 (out of memory, or n
 * past 2^29). */
int sg_tok_map_reserve(sg_tok_map *m, const char *arena, uint32_t n);
/* Inserts (arena string off/len, id) unless the string is already there. Returns 1 inserted, 0 duplicate (the
 * existing entry's id in *existing), -1 out of memory. */
int sg_tok_map_put(sg_tok_map *m, const char *arena, uint32_t off, uint32_t len, int32_t id, int32_t *existing);
/* The id of string s (len bytes), or -1. */
int32_t sg_tok_map_get(const sg_tok_map *m, const char *arena, const char *s, size_t len);
/* The same two with the string's sg_tok_hash already computed (h), and a prefetch of the slot a lookup of hash
 * h starts at: the loader computes hashes a few entries ahead and prefetches, so that ~1M lookups overlap their
 * cache misses instead of paying them one after another. */
int sg_tok_map_put_h(sg_tok_map *m, const char *arena, uint32_t off, uint32_t len, int32_t id, uint64_t h,
                     int32_t *existing);
int32_t sg_tok_map_get_h(const sg_tok_map *m, const char *arena, const char *s, size_t len, uint64_t h);
void sg_tok_map_prefetch(const sg_tok_map *m, uint64_t h);
void sg_tok_map_free(sg_tok_map *m);
/* Makes room for n merges (rehashing if the table grows). 0 or -1 (out of memory, or n past 2^29). */
int sg_tok_merges_reserve(sg_tok_merges *m, uint32_t n);
/* Sets (left, right) -> (rank, new_id), growing the table as needed; a pair already present is overwritten (HF
 * keeps the last duplicate). 0 or -1 (out of memory). */
int sg_tok_merges_put(sg_tok_merges *m, int32_t left, int32_t right, uint32_t rank, int32_t new_id);
/* Looks (left, right) up: 1 with *rank and *new_id, or 0. */
static inline int sg_tok_merges_get(const sg_tok_merges *m, int32_t left, int32_t right, uint32_t *rank,
                                    int32_t *new_id) {
    if (!m->slots) return 0;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    for (;;) {
        const sg_tok_merge *s = &m->slots[i];
        if (s->key == key) {
            *rank = s->rank;
            *new_id = s->new_id;
            return 1;
        }
        if (s->key == UINT64_MAX) return 0;
        i = (i + 1) & m->mask;
    }
}
/* Adds pattern (len bytes) for added token index tok to the trie. 0 or -1 (out of memory). */
int sg_tok_trie_add(sg_tok_trie *tr, const char *pat, size_t len, int32_t tok);

/* ---- encoding pieces ----------------------------------------------------------------------------------- */

/* A growable array of ids, for one encode call. */
typedef struct sg_tok_ids {
    int32_t *v;
    size_t n, cap;
} sg_tok_ids;
int sg_tok_ids_push(sg_tok_ids *a, int32_t id);

/* A growable byte buffer, for one encode call. */
typedef struct sg_tok_buf {
    char *v;
    size_t n, cap;
} sg_tok_buf;
int sg_tok_buf_add(sg_tok_buf *b, const char *s, size_t len);

/* BPE over one pre-tokenized piece (tokenizer_bpe.c): appends its ids to out. 0, or -1 with a reason. */
int sg_tok_bpe(const sg_tokenizer *t, const char *s, size_t len, sg_tok_ids *out, char *err, size_t errlen);
/* A normalizer may make text longer (Gemma's: 1 byte -> 3 per space); a hostile one (16 chained Replace steps
 * with long replacements) could make it exponentially longer. The normalized text is capped at this many times
 * the input, plus a constant, so memory stays proportional to the query. */
#define SG_TOK_MAX_EXPANSION 64
#define SG_TOK_EXPANSION_SLACK 4096
/* Applies the normalizer steps to s (len bytes), writing the result to out (cleared first). 0; -1 out of memory;
 * -2 if the result would pass the expansion cap. */
int sg_tok_normalize(const sg_tokenizer *t, const char *s, size_t len, sg_tok_buf *out);
/* Runs the pre-tokenizer steps over s and BPE over every piece, appending ids to out. 0 or -1 with a reason. */
int sg_tok_pretokenize_bpe(const sg_tokenizer *t, const char *s, size_t len, sg_tok_ids *out, char *err, size_t errlen);

#endif
