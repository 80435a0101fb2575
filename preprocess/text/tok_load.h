/* preprocess/text/tok_load.h — what the files that read tokenizer.json share (tokenizer_load.c: the file, its
 * top level, model and added tokens; tokenizer_load_steps.c: normalizer, pre-tokenizer, post-processor;
 * tokenizer_resolve.c: merges, added-token ids, template, pad id). Private to preprocess/text/.
 */
#ifndef SG_TOK_LOAD_H
#define SG_TOK_LOAD_H

#include "json_lex.h"
#include "tok_internal.h"

#define MAX_FILE_BYTES (1ull << 30) /* ~30x a real Gemma tokenizer.json (17-34 MB) */
#define MAX_ID 2147483646           /* ids are int32 in the API, and id + 1 (the vocab size) must fit too */
#define MAX_SEQ_DEPTH 4             /* Sequence inside Sequence: Gemma uses none */

/* A merge as read from the file, before resolution. Each half is a byte range of the input (which stays mapped
 * for the whole load), or of the arena when the JSON string had escapes and had to be decoded (IN_ARENA set in
 * its length). */
typedef struct {
    uint32_t a_off, a_len, b_off, b_len;
} raw_merge;
#define IN_ARENA 0x80000000u

/* A template item before resolution: $A, or a special token by name (arena). */
typedef struct {
    int is_sequence;
    uint32_t name_off, name_len;
} raw_item;

/* A special_tokens entry of the template: name and its ids. */
typedef struct {
    uint32_t name_off, name_len, ids_off, n_ids;
} raw_special;

typedef struct {
    sg_json j;
    sg_tokenizer *t;
    raw_merge *merges;
    size_t n_merges, cap_merges;
    raw_item items[SG_TOK_MAX_STEPS];
    int n_items, has_post;
    raw_special *specials;
    size_t n_specials, cap_specials;
    int32_t *ids; /* all template ids read, in the order read */
    size_t n_ids, cap_ids;
    sg_tok_slot *vents; /* vocab entries as read, before the hash table is built */
    size_t n_vents, cap_vents;
    int has_model;
} loader;

/* Records an error with the parser's position (so every message says where). Returns -1. */
#define FAIL(L, ...) sg_json_fail(&(L)->j, __VA_ARGS__)

/* ---- helpers (tokenizer_load.c) ---- */

/* Copies the string just read into the arena. */
int sg_tokl_keep_string(loader *L, const char *s, size_t len, uint32_t *off);
/* Reads a string value and copies it into the arena. */
int sg_tokl_read_kept(loader *L, uint32_t *off, uint32_t *len, const char *what);
/* Marks key bit `bit` of an object as seen; a second time is an error. */
int sg_tokl_seen_once(loader *L, unsigned *seen, unsigned bit, const char *obj, const char *key);
/* Makes room for element n of the array *p (capacity *cap, elements of elem bytes), doubling it. 0 or -1. */
int sg_tokl_grow(loader *L, void **p, size_t *cap, size_t n, size_t elem);
/* A literal pattern object {"String": "..."} (a {"Regex": ...} pattern is refused). */
int sg_tokl_read_pattern(loader *L, uint32_t *off, uint32_t *len, const char *what);
/* The "type" value of a component, copied into buf (32 bytes); longer names are cut (they are unsupported
 * anyway). */
int sg_tokl_read_type(loader *L, char *buf, const char *what);

/* ---- section readers (tokenizer_load_steps.c): each reads one JSON object, 0 or -1 (error in L->j) ---- */

/* "normalizer": Replace / Prepend / Sequence into t->norm. depth counts nested Sequences. */
int sg_tokl_read_normalizer(loader *L, int depth);
/* "pre_tokenizer": Split / Sequence into t->split. */
int sg_tokl_read_pre_tokenizer(loader *L, int depth);
/* "post_processor": TemplateProcessing, kept in L->items / L->specials / L->ids until resolution. */
int sg_tokl_read_post_processor(loader *L);

/* ---- resolution (tokenizer_resolve.c): after the walk, 0 or -1 with a reason in err ---- */

/* Merges to ids (BpeBuilder::build). */
int sg_tokl_resolve_merges(loader *L, char *err, size_t errlen);
/* Everything after the walk: merges, byte ids, unk, added tokens and their tries, template, pad id, vocab size. */
int sg_tokl_resolve(loader *L, char *err, size_t errlen);

#endif
