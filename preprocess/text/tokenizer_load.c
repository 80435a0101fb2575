/* preprocess/text/tokenizer_load.c — reads a Hugging Face tokenizer.json into an sg_tokenizer.
 *
 * The file is walked once with the pull parser of json_lex.h (mmap'd when loaded from a path). What is read is
 * what the tokenizers library's deserializers read (tokenizer/serialization.rs, models/bpe/serialization.rs,
 * added_vocabulary.rs, normalizers/, pre_tokenizers/, processors/template.rs), restricted to the components a
 * Gemma tokenizer uses; any other component is refused by name ("unsupported normalizer type 'NFKC'"), never
 * silently ignored, because ignoring it would give ids that differ from HF's. Unknown keys are skipped, as
 * serde does. The decoder, padding and truncation sections do not affect encoding here (the processor call
 * sets its own padding and truncation) and are skipped after a syntax check.
 *
 * Resolution happens after the walk, because the file's key order is not guaranteed: merges are resolved to
 * ids against the vocab (a merge naming a missing token, or whose concatenation is missing, is an error, as in
 * BpeBuilder::build); added tokens take the id token_to_id gives their content (the vocab's, or the next free
 * id after the vocab's size, as AddedVocabulary::add_tokens does: the "id" in the file is only checked, as the
 * library only warns about it); template special tokens use the ids listed in special_tokens.
 *
 * Bounds: every allocation is proportional to the file's length (strings are copied once into one arena;
 * arrays hold at most one element per 2 bytes of JSON), the file is limited to 1 GiB, ids to [0, 2^31 - 2],
 * nesting to 128 levels in skipped sections and 4 levels of Sequence, and added tokens to 1024 bytes each.
 * Duplicate keys in the objects read here, duplicate vocab strings and duplicate added tokens are refused.
 */
#include "json_lex.h"
#include "tok_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Copies the string just read into the arena. */
static int keep_string(loader *L, const char *s, size_t len, uint32_t *off) {
    *off = sg_tok_arena_add(L->t, s, len);
    return *off == UINT32_MAX ? FAIL(L, "out of memory storing a string of %zu bytes", len) : 0;
}

/* Reads a string value and copies it into the arena. */
static int read_kept(loader *L, uint32_t *off, uint32_t *len, const char *what) {
    const char *s;
    size_t n;
    if (sg_json_string(&L->j, &s, &n, what) < 0) return -1;
    *len = (uint32_t)n;
    return keep_string(L, s, n, off);
}

/* Marks key bit `bit` of an object as seen; a second time is an error. */
static int seen_once(loader *L, unsigned *seen, unsigned bit, const char *obj, const char *key) {
    if (*seen & bit) return FAIL(L, "%s: duplicate key \"%s\"", obj, key);
    *seen |= bit;
    return 0;
}

static int grow(loader *L, void **p, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *np = realloc(*p, c * elem);
    if (!np) return FAIL(L, "out of memory");
    *p = np;
    *cap = c;
    return 0;
}

/* A literal pattern object {"String": "..."} (a {"Regex": ...} pattern is refused). */
static int read_pattern(loader *L, uint32_t *off, uint32_t *len, const char *what) {
    if (sg_json_obj_begin(&L->j, what) < 0) return -1;
    const char *k;
    size_t kl;
    int r, got = 0;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "String")) {
            if (got) return FAIL(L, "%s: more than one pattern", what);
            if (read_kept(L, off, len, what) < 0) return -1;
            if (*len == 0) return FAIL(L, "%s: empty String pattern (unsupported: it would match everywhere)", what);
            got = 1;
        } else if (sg_json_key_is(k, kl, "Regex")) {
            return FAIL(L, "%s: Regex patterns are unsupported (only literal String patterns, as Gemma uses)", what);
        } else {
            return FAIL(L, "%s: expected {\"String\": ...}, got key \"%.*s\"", what, (int)(kl > 40 ? 40 : kl), k);
        }
    }
    if (r < 0) return -1;
    if (!got) return FAIL(L, "%s: empty pattern object", what);
    return 0;
}

/* The "type" value of a component, copied into buf (32 bytes); longer names are cut (they are unsupported
 * anyway). */
static int read_type(loader *L, char *buf, const char *what) {
    const char *s;
    size_t n;
    if (sg_json_string(&L->j, &s, &n, what) < 0) return -1;
    if (n > 31) n = 31;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 0;
}

/* ---- normalizer ---------------------------------------------------------------------------------------- */

static int read_normalizer(loader *L, int depth) {
    if (depth > MAX_SEQ_DEPTH) return FAIL(L, "normalizer: Sequence nested more than %d deep", MAX_SEQ_DEPTH);
    if (sg_json_obj_begin(&L->j, "normalizer") < 0) return -1;
    char type[32] = "";
    unsigned seen = 0;
    uint32_t pat_off = 0, pat_len = 0, con_off = 0, con_len = 0, pre_off = 0, pre_len = 0;
    int first_step = L->t->n_norm;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "type")) {
            if (seen_once(L, &seen, 1, "normalizer", "type") < 0 || read_type(L, type, "normalizer.type") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pattern")) {
            if (seen_once(L, &seen, 2, "normalizer", "pattern") < 0 ||
                read_pattern(L, &pat_off, &pat_len, "normalizer.pattern") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "content")) {
            if (seen_once(L, &seen, 4, "normalizer", "content") < 0 ||
                read_kept(L, &con_off, &con_len, "normalizer.content") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "prepend")) {
            if (seen_once(L, &seen, 8, "normalizer", "prepend") < 0 ||
                read_kept(L, &pre_off, &pre_len, "normalizer.prepend") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "normalizers")) {
            if (seen_once(L, &seen, 16, "normalizer", "normalizers") < 0) return -1;
            if (sg_json_arr_begin(&L->j, "normalizer.normalizers") < 0) return -1;
            while ((r = sg_json_arr_next(&L->j)) == 1)
                if (read_normalizer(L, depth + 1) < 0) return -1;
            if (r < 0) return -1;
        } else if (sg_json_skip(&L->j) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    if (!(seen & 1)) return FAIL(L, "normalizer: no \"type\"");
    sg_tokenizer *t = L->t;
    if (strcmp(type, "Sequence") == 0) {
        if (!(seen & 16)) return FAIL(L, "normalizer: Sequence without \"normalizers\"");
        return 0;
    }
    if (seen & 16) return FAIL(L, "normalizer: \"normalizers\" in a normalizer of type '%s'", type);
    if (t->n_norm != first_step) return FAIL(L, "normalizer: nested steps inside '%s'", type);
    if (t->n_norm >= SG_TOK_MAX_STEPS) return FAIL(L, "normalizer: more than %d steps", SG_TOK_MAX_STEPS);
    if (strcmp(type, "Replace") == 0) {
        if ((seen & 6) != 6) return FAIL(L, "normalizer: Replace needs \"pattern\" and \"content\"");
        t->norm[t->n_norm++] = (sg_tok_norm){SG_NORM_REPLACE, pat_off, pat_len, con_off, con_len};
        return 0;
    }
    if (strcmp(type, "Prepend") == 0) {
        if (!(seen & 8)) return FAIL(L, "normalizer: Prepend needs \"prepend\"");
        t->norm[t->n_norm++] = (sg_tok_norm){SG_NORM_PREPEND, 0, 0, pre_off, pre_len};
        return 0;
    }
    return FAIL(L, "unsupported normalizer type '%s' (supported: Replace with a String pattern, Prepend, Sequence)",
                type);
}

/* ---- pre-tokenizer ------------------------------------------------------------------------------------- */

static int read_pre_tokenizer(loader *L, int depth) {
    if (depth > MAX_SEQ_DEPTH) return FAIL(L, "pre_tokenizer: Sequence nested more than %d deep", MAX_SEQ_DEPTH);
    if (sg_json_obj_begin(&L->j, "pre_tokenizer") < 0) return -1;
    char type[32] = "", beh[32] = "";
    unsigned seen = 0;
    uint32_t pat_off = 0, pat_len = 0;
    int invert = 0, first_step = L->t->n_split;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "type")) {
            if (seen_once(L, &seen, 1, "pre_tokenizer", "type") < 0 || read_type(L, type, "pre_tokenizer.type") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pattern")) {
            if (seen_once(L, &seen, 2, "pre_tokenizer", "pattern") < 0 ||
                read_pattern(L, &pat_off, &pat_len, "pre_tokenizer.pattern") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "behavior")) {
            if (seen_once(L, &seen, 4, "pre_tokenizer", "behavior") < 0 ||
                read_type(L, beh, "pre_tokenizer.behavior") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "invert")) {
            if (seen_once(L, &seen, 8, "pre_tokenizer", "invert") < 0 ||
                sg_json_bool(&L->j, &invert, "pre_tokenizer.invert") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pretokenizers")) {
            if (seen_once(L, &seen, 16, "pre_tokenizer", "pretokenizers") < 0) return -1;
            if (sg_json_arr_begin(&L->j, "pre_tokenizer.pretokenizers") < 0) return -1;
            while ((r = sg_json_arr_next(&L->j)) == 1)
                if (read_pre_tokenizer(L, depth + 1) < 0) return -1;
            if (r < 0) return -1;
        } else if (sg_json_skip(&L->j) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    if (!(seen & 1)) return FAIL(L, "pre_tokenizer: no \"type\"");
    sg_tokenizer *t = L->t;
    if (strcmp(type, "Sequence") == 0) {
        if (!(seen & 16)) return FAIL(L, "pre_tokenizer: Sequence without \"pretokenizers\"");
        return 0;
    }
    if (seen & 16) return FAIL(L, "pre_tokenizer: \"pretokenizers\" in a pre-tokenizer of type '%s'", type);
    if (t->n_split != first_step) return FAIL(L, "pre_tokenizer: nested steps inside '%s'", type);
    if (strcmp(type, "Split") != 0)
        return FAIL(L, "unsupported pre_tokenizer type '%s' (supported: Split on a String pattern, Sequence)", type);
    if ((seen & 7) != 7) return FAIL(L, "pre_tokenizer: Split needs \"pattern\" and \"behavior\"");
    if (invert) return FAIL(L, "pre_tokenizer: Split with invert = true is unsupported");
    static const struct {
        const char *name;
        sg_split_behavior b;
    } names[] = {{"Removed", SG_SPLIT_REMOVED},
                 {"Isolated", SG_SPLIT_ISOLATED},
                 {"MergedWithPrevious", SG_SPLIT_MERGED_WITH_PREVIOUS},
                 {"MergedWithNext", SG_SPLIT_MERGED_WITH_NEXT},
                 {"Contiguous", SG_SPLIT_CONTIGUOUS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(beh, names[i].name) == 0) {
            if (t->n_split >= SG_TOK_MAX_STEPS) return FAIL(L, "pre_tokenizer: more than %d steps", SG_TOK_MAX_STEPS);
            t->split[t->n_split++] = (sg_tok_split){pat_off, pat_len, names[i].b};
            return 0;
        }
    return FAIL(L, "pre_tokenizer: unknown Split behavior '%s'", beh);
}

/* ---- post-processor ------------------------------------------------------------------------------------ */

/* One piece of a template: {"SpecialToken": {"id": name, "type_id": n}} or {"Sequence": {"id": "A", ...}}. */
static int read_piece(loader *L, int keep) {
    if (sg_json_obj_begin(&L->j, "template piece") < 0) return -1;
    const char *k;
    size_t kl;
    int r, n = 0;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        int special = sg_json_key_is(k, kl, "SpecialToken"), seq = sg_json_key_is(k, kl, "Sequence");
        if (!special && !seq)
            return FAIL(L, "template piece: expected \"SpecialToken\" or \"Sequence\", got \"%.*s\"",
                        (int)(kl > 40 ? 40 : kl), k);
        if (n++) return FAIL(L, "template piece: more than one key");
        raw_item it = {seq, 0, 0};
        int has_id = 0;
        if (sg_json_obj_begin(&L->j, "template piece") < 0) return -1;
        while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
            if (sg_json_key_is(k, kl, "id")) {
                if (has_id++) return FAIL(L, "template piece: duplicate key \"id\"");
                const char *s;
                size_t sl;
                if (sg_json_string(&L->j, &s, &sl, "template piece id") < 0) return -1;
                if (seq && !(sl == 1 && s[0] == 'A')) {
                    if (keep)
                        return FAIL(L, "post_processor: the single template uses sequence '%.*s' (only A exists "
                                    "for one text)", (int)(sl > 8 ? 8 : sl), s);
                } else if (!seq) {
                    it.name_len = (uint32_t)sl;
                    if (keep_string(L, s, sl, &it.name_off) < 0) return -1;
                }
            } else if (sg_json_key_is(k, kl, "type_id")) {
                int64_t v;
                if (sg_json_int(&L->j, 0, UINT32_MAX, &v, "template piece type_id") < 0) return -1;
            } else if (sg_json_skip(&L->j) < 0) {
                return -1;
            }
        }
        if (r < 0) return -1;
        if (!has_id) return FAIL(L, "template piece: no \"id\"");
        if (keep) {
            if (L->n_items >= SG_TOK_MAX_STEPS) return FAIL(L, "post_processor: more than %d pieces", SG_TOK_MAX_STEPS);
            L->items[L->n_items++] = it;
        }
    }
    if (r < 0) return -1;
    if (!n) return FAIL(L, "template piece: empty object");
    return 0;
}

static int read_template(loader *L, int keep, const char *what) {
    if (sg_json_arr_begin(&L->j, what) < 0) return -1;
    int r;
    while ((r = sg_json_arr_next(&L->j)) == 1)
        if (read_piece(L, keep) < 0) return -1;
    return r < 0 ? -1 : 0;
}

static int read_special_tokens(loader *L) {
    if (sg_json_obj_begin(&L->j, "post_processor.special_tokens") < 0) return -1;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (grow(L, (void **)&L->specials, &L->cap_specials, L->n_specials, sizeof *L->specials) < 0) return -1;
        raw_special *sp = &L->specials[L->n_specials];
        sp->name_len = (uint32_t)kl;
        if (keep_string(L, k, kl, &sp->name_off) < 0) return -1;
        for (size_t i = 0; i < L->n_specials; i++)
            if (L->specials[i].name_len == kl && memcmp(L->t->arena + L->specials[i].name_off, k, kl) == 0)
                return FAIL(L, "post_processor.special_tokens: duplicate key \"%.*s\"", (int)(kl > 40 ? 40 : kl), k);
        sp->ids_off = (uint32_t)L->n_ids;
        sp->n_ids = 0;
        int has_ids = 0;
        if (sg_json_obj_begin(&L->j, "special token") < 0) return -1;
        while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
            if (sg_json_key_is(k, kl, "ids")) {
                if (has_ids++) return FAIL(L, "special token: duplicate key \"ids\"");
                if (sg_json_arr_begin(&L->j, "special token ids") < 0) return -1;
                while ((r = sg_json_arr_next(&L->j)) == 1) {
                    int64_t v;
                    if (sg_json_int(&L->j, 0, MAX_ID, &v, "special token id") < 0) return -1;
                    if (grow(L, (void **)&L->ids, &L->cap_ids, L->n_ids, sizeof *L->ids) < 0) return -1;
                    L->ids[L->n_ids++] = (int32_t)v;
                    sp->n_ids++;
                }
                if (r < 0) return -1;
            } else if (sg_json_skip(&L->j) < 0) {
                return -1;
            }
        }
        if (r < 0) return -1;
        if (!has_ids) return FAIL(L, "special token: no \"ids\"");
        L->n_specials++;
    }
    return r < 0 ? -1 : 0;
}

static int read_post_processor(loader *L) {
    if (sg_json_obj_begin(&L->j, "post_processor") < 0) return -1;
    char type[32] = "";
    unsigned seen = 0;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "type")) {
            if (seen_once(L, &seen, 1, "post_processor", "type") < 0 || read_type(L, type, "post_processor.type") < 0)
                return -1;
            if (strcmp(type, "TemplateProcessing") != 0)
                return FAIL(L, "unsupported post_processor type '%s' (supported: TemplateProcessing)", type);
        } else if (sg_json_key_is(k, kl, "single")) {
            if (seen_once(L, &seen, 2, "post_processor", "single") < 0 || read_template(L, 1, "single") < 0) return -1;
        } else if (sg_json_key_is(k, kl, "pair")) {
            if (seen_once(L, &seen, 4, "post_processor", "pair") < 0 || read_template(L, 0, "pair") < 0) return -1;
        } else if (sg_json_key_is(k, kl, "special_tokens")) {
            if (seen_once(L, &seen, 8, "post_processor", "special_tokens") < 0 || read_special_tokens(L) < 0)
                return -1;
        } else if (sg_json_skip(&L->j) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    if ((seen & 11) != 11) return FAIL(L, "post_processor: TemplateProcessing needs \"type\", \"single\" and "
                                          "\"special_tokens\"");
    L->has_post = 1;
    return 0;
}

/* ---- added tokens -------------------------------------------------------------------------------------- */

static int read_added_tokens(loader *L) {
    if (sg_json_arr_begin(&L->j, "added_tokens") < 0) return -1;
    sg_tokenizer *t = L->t;
    size_t cap = 0;
    int r;
    while ((r = sg_json_arr_next(&L->j)) == 1) {
        if (grow(L, (void **)&t->added, &cap, t->n_added, sizeof *t->added) < 0) return -1;
        sg_tok_added *a = &t->added[t->n_added];
        memset(a, 0, sizeof *a);
        if (sg_json_obj_begin(&L->j, "added token") < 0) return -1;
        unsigned seen = 0;
        const char *k;
        size_t kl;
        static const char *flags[] = {"single_word", "lstrip", "rstrip", "normalized", "special"};
        int fv[5] = {0};
        while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
            if (sg_json_key_is(k, kl, "id")) {
                int64_t v;
                if (seen_once(L, &seen, 1, "added token", "id") < 0 ||
                    sg_json_int(&L->j, 0, UINT32_MAX, &v, "added token id") < 0)
                    return -1;
            } else if (sg_json_key_is(k, kl, "content")) {
                if (seen_once(L, &seen, 2, "added token", "content") < 0 ||
                    read_kept(L, &a->off, &a->len, "added token content") < 0)
                    return -1;
                if (a->len > SG_TOK_MAX_ADDED_LEN)
                    return FAIL(L, "added token of %u bytes (limit %d)", a->len, SG_TOK_MAX_ADDED_LEN);
            } else {
                int f = -1;
                for (int i = 0; i < 5; i++)
                    if (sg_json_key_is(k, kl, flags[i])) f = i;
                if (f < 0) {
                    if (sg_json_skip(&L->j) < 0) return -1;
                    continue;
                }
                if (seen_once(L, &seen, 4u << f, "added token", flags[f]) < 0 ||
                    sg_json_bool(&L->j, &fv[f], flags[f]) < 0)
                    return -1;
            }
        }
        if (r < 0) return -1;
        if (seen != 127) {
            for (int i = 0; i < 7; i++)
                if (!(seen & (1u << i)))
                    return FAIL(L, "added token %u: missing \"%s\"", t->n_added,
                                i == 0 ? "id" : i == 1 ? "content" : flags[i - 2]);
        }
        if (fv[0]) return FAIL(L, "added token %u: single_word = true is unsupported", t->n_added);
        a->lstrip = (uint8_t)fv[1];
        a->rstrip = (uint8_t)fv[2];
        a->normalized = (uint8_t)fv[3];
        a->special = (uint8_t)fv[4];
        t->n_added++;
    }
    return r < 0 ? -1 : 0;
}

/* ---- model --------------------------------------------------------------------------------------------- */

/* model.vocab: entries are collected first and hashed once at the end, into a table sized for all of them. */
static int read_vocab(loader *L) {
    sg_tokenizer *t = L->t;
    if (sg_json_obj_begin(&L->j, "model.vocab") < 0) return -1;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (grow(L, (void **)&L->vents, &L->cap_vents, L->n_vents, sizeof *L->vents) < 0) return -1;
        sg_tok_slot *e = &L->vents[L->n_vents];
        e->len = (uint32_t)kl;
        if (keep_string(L, k, kl, &e->off) < 0) return -1;
        int64_t id;
        if (sg_json_int(&L->j, 0, MAX_ID, &id, "model.vocab id") < 0) return -1;
        e->id = (int32_t)id;
        L->n_vents++;
    }
    if (r < 0) return -1;
    if (L->n_vents > (1u << 29)) return FAIL(L, "model.vocab: %zu entries is too many", L->n_vents);
    if (sg_tok_map_reserve(&t->vocab, t->arena, (uint32_t)L->n_vents) < 0) return FAIL(L, "out of memory (vocab)");
    /* Hashes are computed PF entries ahead and their slots prefetched (see sg_tok_map_prefetch); the hash is
     * parked in the entry's head field, which the table fills in itself. */
    enum { PF = 16 };
    for (size_t i = 0; i < L->n_vents + PF; i++) {
        if (i < L->n_vents) {
            sg_tok_slot *f = &L->vents[i];
            f->head = sg_tok_hash(t->arena + f->off, f->len);
            sg_tok_map_prefetch(&t->vocab, f->head);
        }
        if (i < PF) continue;
        const sg_tok_slot *e = &L->vents[i - PF];
        int32_t dup;
        int p = sg_tok_map_put_h(&t->vocab, t->arena, e->off, e->len, e->id, e->head, &dup);
        if (p < 0) return FAIL(L, "out of memory (vocab)");
        if (p == 0)
            return FAIL(L, "model.vocab: duplicate token \"%.*s\" (ids %d and %d)", (int)(e->len > 60 ? 60 : e->len),
                        t->arena + e->off, dup, e->id);
    }
    free(L->vents);
    L->vents = NULL;
    return 0;
}

/* model.merges: ["left", "right"] pairs or legacy "left right" strings. Only their byte ranges are recorded
 * here; resolve_merges turns them into ids once the vocab is known (whatever the key order). */
static int read_merges(loader *L) {
    if (sg_json_arr_begin(&L->j, "model.merges") < 0) return -1;
    int r;
    while ((r = sg_json_arr_next(&L->j)) == 1) {
        if (L->n_merges >= (1u << 29)) return FAIL(L, "model.merges: too many merges");
        if (grow(L, (void **)&L->merges, &L->cap_merges, L->n_merges, sizeof *L->merges) < 0) return -1;
        raw_merge *m = &L->merges[L->n_merges];
        const char *s;
        size_t n;
        if (sg_json_peek(&L->j) == '[') {
            if (sg_json_arr_begin(&L->j, "merge") < 0) return -1;
            uint32_t *dst[2][2] = {{&m->a_off, &m->a_len}, {&m->b_off, &m->b_len}};
            for (int h = 0; h < 3; h++) {
                if ((r = sg_json_arr_next(&L->j)) < 0) return -1;
                if (r != (h < 2))
                    return FAIL(L, "merge %zu: expected two strings, got %s", L->n_merges, h < 2 ? "fewer" : "more");
                if (h == 2) break;
                if (sg_json_string(&L->j, &s, &n, "merge") < 0) return -1;
                if (n >= IN_ARENA) return FAIL(L, "merge %zu: string too long", L->n_merges);
                *dst[h][1] = (uint32_t)n;
                if (s >= L->j.base && s < L->j.end) {
                    *dst[h][0] = (uint32_t)(s - L->j.base);
                } else {
                    if (keep_string(L, s, n, dst[h][0]) < 0) return -1;
                    *dst[h][1] |= IN_ARENA;
                }
            }
        } else {
            /* Legacy: exactly one space (convert_merges_to_hashmap splits on ' ' into 2 parts); "#version"
             * lines are skipped, as the library does. */
            if (sg_json_string(&L->j, &s, &n, "merge") < 0) return -1;
            if (n >= 8 && memcmp(s, "#version", 8) == 0) continue;
            const char *sp = memchr(s, ' ', n);
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1))
                return FAIL(L, "merge %zu: expected \"left right\" with exactly one space", L->n_merges);
            if (n >= IN_ARENA) return FAIL(L, "merge %zu: string too long", L->n_merges);
            m->a_len = (uint32_t)(sp - s);
            m->b_len = (uint32_t)(n - m->a_len - 1);
            if (s >= L->j.base && s < L->j.end) {
                m->a_off = (uint32_t)(s - L->j.base);
                m->b_off = m->a_off + m->a_len + 1;
            } else {
                uint32_t off;
                if (keep_string(L, s, n, &off) < 0) return -1;
                m->a_off = off;
                m->b_off = off + m->a_len + 1;
                m->a_len |= IN_ARENA;
                m->b_len |= IN_ARENA;
            }
        }
        L->n_merges++;
    }
    return r < 0 ? -1 : 0;
}

/* The bytes of one half of a raw merge. */
static const char *half(const loader *L, uint32_t off, uint32_t len) {
    return (len & IN_ARENA) ? L->t->arena + off : L->j.base + off;
}

/* A merge being resolved: its halves, their concatenation and the three hashes. */
typedef struct {
    const char *a, *b;
    size_t la, lb;
    uint64_t ha, hb, hc;
    char *cat;
    size_t cap;
} pending;

/* BpeBuilder::build: each merge's halves and their concatenation must be in the vocab; merge i gets rank i (a
 * pair listed twice keeps the later rank). Three lookups per merge, ~750k for a 256k vocab: the hashes of merge
 * i + PF are computed (and its slots prefetched) while merge i is resolved, so the cache misses overlap. */
static int resolve_merges(loader *L, char *err, size_t errlen) {
    enum { PF = 8 };
    pending ring[PF];
    memset(ring, 0, sizeof ring);
    sg_tokenizer *t = L->t;
    if (sg_tok_merges_reserve(&t->merges, (uint32_t)L->n_merges) < 0) {
        snprintf(err, errlen, "out of memory (%zu merges)", L->n_merges);
        return -1;
    }
    int rc = 0;
    char b1[80];
    for (size_t i = 0; i < L->n_merges + PF && rc == 0; i++) {
        if (i >= PF) { /* resolve merge i - PF */
            size_t k = i - PF;
            pending *q = &ring[k % PF];
            int32_t a = sg_tok_map_get_h(&t->vocab, t->arena, q->a, q->la, q->ha);
            int32_t b = a < 0 ? -1 : sg_tok_map_get_h(&t->vocab, t->arena, q->b, q->lb, q->hb);
            int32_t c = b < 0 ? -1 : sg_tok_map_get_h(&t->vocab, t->arena, q->cat, q->la + q->lb, q->hc);
            if (a < 0 || b < 0) {
                const char *s = a < 0 ? q->a : q->b;
                size_t n = a < 0 ? q->la : q->lb;
                snprintf(b1, sizeof b1, "%.*s%s", (int)(n > 60 ? 60 : n), s, n > 60 ? "..." : "");
                snprintf(err, errlen, "merge %zu names \"%s\", which is not in model.vocab", k, b1);
                rc = -1;
            } else if (c < 0) {
                snprintf(err, errlen, "merge %zu (\"%.*s\" + \"%.*s\") makes a token that is not in model.vocab", k,
                         (int)(q->la > 40 ? 40 : q->la), q->a, (int)(q->lb > 40 ? 40 : q->lb), q->b);
                rc = -1;
            } else if (sg_tok_merges_put(&t->merges, a, b, (uint32_t)k, c) < 0) {
                snprintf(err, errlen, "out of memory (merges)");
                rc = -1;
            }
        }
        if (i < L->n_merges && rc == 0) { /* prepare merge i */
            pending *q = &ring[i % PF];
            const raw_merge *m = &L->merges[i];
            q->a = half(L, m->a_off, m->a_len);
            q->b = half(L, m->b_off, m->b_len);
            q->la = m->a_len & ~IN_ARENA;
            q->lb = m->b_len & ~IN_ARENA;
            if (q->la + q->lb > q->cap) {
                size_t c = q->cap ? q->cap * 2 : 64;
                while (c < q->la + q->lb) c *= 2;
                char *nc = realloc(q->cat, c);
                if (!nc) {
                    snprintf(err, errlen, "out of memory");
                    rc = -1;
                    break;
                }
                q->cat = nc;
                q->cap = c;
            }
            memcpy(q->cat, q->a, q->la);
            memcpy(q->cat + q->la, q->b, q->lb);
            q->ha = sg_tok_hash(q->a, q->la);
            q->hb = sg_tok_hash(q->b, q->lb);
            q->hc = sg_tok_hash(q->cat, q->la + q->lb);
            sg_tok_map_prefetch(&t->vocab, q->ha);
            sg_tok_map_prefetch(&t->vocab, q->hb);
            sg_tok_map_prefetch(&t->vocab, q->hc);
        }
    }
    for (int i = 0; i < PF; i++) free(ring[i].cat);
    return rc;
}

static int read_model(loader *L) {
    sg_tokenizer *t = L->t;
    if (sg_json_obj_begin(&L->j, "model") < 0) return -1;
    unsigned seen = 0;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        int isnull;
        if (sg_json_key_is(k, kl, "type")) {
            char type[32];
            if (seen_once(L, &seen, 1, "model", "type") < 0 || read_type(L, type, "model.type") < 0) return -1;
            if (strcmp(type, "BPE") != 0)
                return FAIL(L, "unsupported model type '%s' (supported: BPE, as Gemma uses)", type);
        } else if (sg_json_key_is(k, kl, "vocab")) {
            if (seen_once(L, &seen, 2, "model", "vocab") < 0 || read_vocab(L) < 0) return -1;
        } else if (sg_json_key_is(k, kl, "merges")) {
            if (seen_once(L, &seen, 4, "model", "merges") < 0 || read_merges(L) < 0) return -1;
        } else if (sg_json_key_is(k, kl, "dropout")) {
            if (seen_once(L, &seen, 8, "model", "dropout") < 0 || (isnull = sg_json_null(&L->j)) < 0) return -1;
            if (!isnull) {
                double d;
                if (sg_json_number(&L->j, &d, "model.dropout") < 0) return -1;
                if (!(d >= 0 && d <= 1)) return FAIL(L, "model.dropout %g is outside [0, 1]", d);
                if (d != 0) return FAIL(L, "model.dropout %g is unsupported (random merges; HF uses none here)", d);
            }
        } else if (sg_json_key_is(k, kl, "unk_token")) {
            if (seen_once(L, &seen, 16, "model", "unk_token") < 0 || (isnull = sg_json_null(&L->j)) < 0) return -1;
            if (!isnull) {
                if (read_kept(L, &t->unk_off, &t->unk_len, "model.unk_token") < 0) return -1;
                t->has_unk = 1;
            }
        } else if (sg_json_key_is(k, kl, "continuing_subword_prefix") || sg_json_key_is(k, kl, "end_of_word_suffix")) {
            unsigned bit = sg_json_key_is(k, kl, "end_of_word_suffix") ? 32 : 64;
            if (seen_once(L, &seen, bit, "model", bit == 32 ? "end_of_word_suffix" : "continuing_subword_prefix") < 0 ||
                (isnull = sg_json_null(&L->j)) < 0)
                return -1;
            if (!isnull)
                return FAIL(L, "model.%s is unsupported (Gemma has none)",
                            bit == 32 ? "end_of_word_suffix" : "continuing_subword_prefix");
        } else if (sg_json_key_is(k, kl, "fuse_unk") || sg_json_key_is(k, kl, "byte_fallback") ||
                   sg_json_key_is(k, kl, "ignore_merges")) {
            int which = sg_json_key_is(k, kl, "fuse_unk") ? 0 : sg_json_key_is(k, kl, "byte_fallback") ? 1 : 2;
            static const char *names[] = {"fuse_unk", "byte_fallback", "ignore_merges"};
            int *dst[] = {&t->fuse_unk, &t->byte_fallback, &t->ignore_merges};
            if (seen_once(L, &seen, 128u << which, "model", names[which]) < 0 || (isnull = sg_json_null(&L->j)) < 0)
                return -1;
            if (!isnull && sg_json_bool(&L->j, dst[which], names[which]) < 0) return -1;
        } else if (sg_json_skip(&L->j) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    if ((seen & 6) != 6) return FAIL(L, "model: missing \"vocab\" or \"merges\"");
    L->has_model = 1;
    return 0;
}

/* ---- top level ----------------------------------------------------------------------------------------- */

static int read_top(loader *L) {
    if (sg_json_obj_begin(&L->j, "tokenizer.json") < 0) return -1;
    static const char *keys[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
                                 "pre_tokenizer", "post_processor", "decoder", "model"};
    unsigned seen = 0;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        int w = -1;
        for (int i = 0; i < 9; i++)
            if (sg_json_key_is(k, kl, keys[i])) w = i;
        if (w < 0) {
            if (sg_json_skip(&L->j) < 0) return -1;
            continue;
        }
        if (seen_once(L, &seen, 1u << w, "tokenizer.json", keys[w]) < 0) return -1;
        int isnull = 0;
        if (w != 0 && w != 3 && w != 8 && (isnull = sg_json_null(&L->j)) < 0) return -1;
        if (isnull) continue;
        switch (w) {
        case 0: {
            const char *s;
            size_t n;
            if (sg_json_string(&L->j, &s, &n, "version") < 0) return -1;
            if (!(n == 3 && memcmp(s, "1.0", 3) == 0))
                return FAIL(L, "unknown tokenizer version '%.*s' (expected 1.0)", (int)(n > 20 ? 20 : n), s);
            break;
        }
        case 1:
        case 2:
        case 7:
            if (sg_json_skip(&L->j) < 0) return -1;
            break;
        case 3:
            if (read_added_tokens(L) < 0) return -1;
            break;
        case 4:
            if (read_normalizer(L, 0) < 0) return -1;
            break;
        case 5:
            if (read_pre_tokenizer(L, 0) < 0) return -1;
            break;
        case 6:
            if (read_post_processor(L) < 0) return -1;
            break;
        case 8:
            if (read_model(L) < 0) return -1;
            break;
        }
    }
    if (r < 0) return -1;
    if (sg_json_end(&L->j) < 0) return -1;
    if (!L->has_model) return FAIL(L, "no \"model\" section");
    return 0;
}

/* ---- resolution ---------------------------------------------------------------------------------------- */

/* A short printable form of arena string off/len for messages. */
static const char *show(const sg_tokenizer *t, uint32_t off, uint32_t len, char *buf, size_t cap) {
    int n = (int)(len > 60 ? 60 : len);
    snprintf(buf, cap, "\"%.*s\"%s", n, t->arena + off, len > 60 ? "..." : "");
    return buf;
}

/* The id token_to_id gives a string: the added tokens' first, then the vocab's; -1 if neither has it. */
static int32_t token_to_id(const sg_tokenizer *t, const char *s, size_t len) {
    int32_t id = sg_tok_map_get(&t->added_map, t->arena, s, len);
    return id >= 0 ? id : sg_tok_map_get(&t->vocab, t->arena, s, len);
}

static int resolve(loader *L, char *err, size_t errlen) {
    sg_tokenizer *t = L->t;
    char b1[80];
    int32_t max_id = -1;
    for (uint32_t i = 0; i <= t->vocab.mask && t->vocab.slots; i++)
        if (t->vocab.slots[i].id > max_id) max_id = t->vocab.slots[i].id;

    if (resolve_merges(L, err, errlen) < 0) return -1;

    /* Byte fallback ids and the unknown token. */
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_ids[b] = sg_tok_map_get(&t->vocab, t->arena, name, 6);
    }
    t->unk_id = t->has_unk ? sg_tok_map_get(&t->vocab, t->arena, t->arena + t->unk_off, t->unk_len) : -1;

    /* Added tokens: ids as AddedVocabulary::add_tokens assigns them (all in one call, in file order). */
    int64_t next_id = t->vocab.n;
    for (uint32_t i = 0; i < t->n_added; i++) {
        sg_tok_added *a = &t->added[i];
        if (a->len == 0) {
            snprintf(err, errlen, "tokenizer.json: added token %u has empty content", i);
            return -1;
        }
        if (sg_tok_map_get(&t->added_map, t->arena, t->arena + a->off, a->len) >= 0) {
            snprintf(err, errlen, "tokenizer.json: added token %s appears twice", show(t, a->off, a->len, b1, sizeof b1));
            return -1;
        }
        int32_t id = sg_tok_map_get(&t->vocab, t->arena, t->arena + a->off, a->len);
        if (id < 0) {
            if (next_id > MAX_ID) {
                snprintf(err, errlen, "tokenizer.json: added token %u would get id %lld, past the id limit", i,
                         (long long)next_id);
                return -1;
            }
            id = (int32_t)next_id++;
        }
        a->id = id;
        if (id > max_id) max_id = id;
        if (sg_tok_map_put(&t->added_map, t->arena, a->off, a->len, id, NULL) < 0) goto oom;
        /* The pattern: the content, or the content normalized (for normalized = true tokens). */
        a->poff = a->off;
        a->plen = a->len;
        if (a->normalized && t->n_norm) {
            sg_tok_buf nb = {0};
            if (sg_tok_normalize(t, t->arena + a->off, a->len, &nb) < 0) goto oom;
            uint32_t off = sg_tok_arena_add(t, nb.v, nb.n);
            free(nb.v);
            if (off == UINT32_MAX) goto oom;
            a->poff = off;
            a->plen = (uint32_t)nb.n;
        }
    }
    /* The tries, built after every pattern is in the arena (a later arena growth cannot move them then). A
     * pattern that is also an earlier token's pattern in the same trie replaces it: the library's matcher keeps
     * one value per pattern too. Empty normalized patterns cannot match anything and are left out. */
    for (uint32_t i = 0; i < t->n_added; i++) {
        sg_tok_added *a = &t->added[i];
        if (a->plen == 0) continue;
        if (a->plen > SG_TOK_MAX_ADDED_LEN * 4) {
            snprintf(err, errlen, "tokenizer.json: added token %u normalizes to %u bytes (limit %d)", i, a->plen,
                     SG_TOK_MAX_ADDED_LEN * 4);
            return -1;
        }
        if (sg_tok_trie_add(a->normalized ? &t->trie_norm : &t->trie_raw, t->arena + a->poff, a->plen, (int32_t)i) < 0)
            goto oom;
    }

    /* Template: resolve special-token names; a missing template means just the sequence. */
    if (!L->has_post) L->n_items = 0;
    int has_seq = 0;
    if (L->has_post) {
        t->tmpl_ids = malloc((L->n_ids ? L->n_ids : 1) * sizeof *t->tmpl_ids);
        if (!t->tmpl_ids) goto oom;
        for (int i = 0; i < L->n_items; i++) {
            const raw_item *it = &L->items[i];
            if (it->is_sequence) {
                if (has_seq++) {
                    snprintf(err, errlen, "tokenizer.json: post_processor.single uses the sequence twice");
                    return -1;
                }
                t->tmpl[t->n_tmpl++] = (sg_tok_tmpl){1, 0, 0};
                continue;
            }
            const raw_special *sp = NULL;
            for (size_t s = 0; s < L->n_specials; s++)
                if (L->specials[s].name_len == it->name_len &&
                    memcmp(t->arena + L->specials[s].name_off, t->arena + it->name_off, it->name_len) == 0)
                    sp = &L->specials[s];
            if (!sp) {
                snprintf(err, errlen, "tokenizer.json: post_processor.single names special token %s, which is not in "
                         "special_tokens", show(t, it->name_off, it->name_len, b1, sizeof b1));
                return -1;
            }
            t->tmpl[t->n_tmpl++] = (sg_tok_tmpl){0, t->n_tmpl_ids, sp->n_ids};
            for (uint32_t q = 0; q < sp->n_ids; q++) {
                int32_t id = L->ids[sp->ids_off + q];
                t->tmpl_ids[t->n_tmpl_ids++] = id;
                if (id > max_id) max_id = id;
            }
            if (t->n_special > 4096 - (int)sp->n_ids) {
                snprintf(err, errlen, "tokenizer.json: the single template adds more than 4096 special tokens");
                return -1;
            }
            t->n_special += (int)sp->n_ids;
        }
    }
    if (!has_seq) {
        if (L->has_post) {
            snprintf(err, errlen, "tokenizer.json: post_processor.single has no sequence ($A)");
            return -1;
        }
        t->tmpl[t->n_tmpl++] = (sg_tok_tmpl){1, 0, 0};
    }

    /* Padding uses "<pad>" (the pad_token of Gemma's tokenizer_config.json and GemmaTokenizer's default). */
    t->pad_id = token_to_id(t, "<pad>", 5);
    if (t->pad_id < 0) {
        snprintf(err, errlen, "tokenizer.json: no \"<pad>\" token (neither in added_tokens nor in model.vocab); the "
                 "SigLIP2 processor pads with it");
        return -1;
    }
    t->vocab_size = max_id + 1;
    return 0;
oom:
    snprintf(err, errlen, "tokenizer.json: out of memory");
    return -1;
}

void sg_tokenizer_free(sg_tokenizer *t) {
    if (!t) return;
    free(t->arena);
    sg_tok_map_free(&t->vocab);
    free(t->merges.slots);
    free(t->added);
    sg_tok_map_free(&t->added_map);
    free(t->trie_raw.nodes);
    free(t->trie_norm.nodes);
    free(t->tmpl_ids);
    free(t);
}

/* Parses len bytes of JSON; label names the input in messages. */
static sg_tokenizer *load(const char *json, size_t len, const char *label, char *err, size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    if (len > MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: %zu bytes is larger than the %llu-byte limit", label, len,
                 (unsigned long long)MAX_FILE_BYTES);
        return NULL;
    }
    loader L;
    memset(&L, 0, sizeof L);
    L.t = calloc(1, sizeof *L.t);
    if (!L.t) {
        snprintf(err, errlen, "%s: out of memory", label);
        return NULL;
    }
    sg_json_init(&L.j, json, len, label, err, errlen);
    int rc = read_top(&L);
    sg_json_done(&L.j);
    if (rc == 0) {
        char msg[512];
        rc = resolve(&L, msg, sizeof msg);
        if (rc < 0) {
            /* resolve's messages start with "tokenizer.json:"; name the real input instead. */
            const char *tail = strncmp(msg, "tokenizer.json: ", 16) == 0 ? msg + 16 : msg;
            snprintf(err, errlen, "%s: %s", label, tail);
        }
    }
    free(L.merges);
    free(L.vents);
    free(L.specials);
    free(L.ids);
    if (rc < 0) {
        sg_tokenizer_free(L.t);
        return NULL;
    }
    return L.t;
}

sg_tokenizer *sg_tokenizer_load_mem(const char *json, size_t len, char *err, size_t errlen) {
    if (!json && len) {
        if (err && errlen) snprintf(err, errlen, "tokenizer.json: NULL buffer");
        return NULL;
    }
    return load(json ? json : "", len, "tokenizer.json", err, errlen);
}

sg_tokenizer *sg_tokenizer_load(const char *path, char *err, size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) {
        close(fd);
        snprintf(err, errlen, "%s: empty file (expected a tokenizer.json object)", path);
        return NULL;
    }
    if ((unsigned long long)st.st_size > MAX_FILE_BYTES) {
        close(fd);
        snprintf(err, errlen, "%s: %lld bytes is larger than the %llu-byte limit", path, (long long)st.st_size,
                 (unsigned long long)MAX_FILE_BYTES);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        return NULL;
    }
    madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
    sg_tokenizer *t = load(map, (size_t)st.st_size, path, err, errlen);
    munmap(map, (size_t)st.st_size);
    return t;
}
