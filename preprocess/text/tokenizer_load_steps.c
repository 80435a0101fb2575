/* preprocess/text/tokenizer_load_steps.c — the normalizer, pre-tokenizer and post-processor sections of
 * tokenizer.json (tokenizers src/normalizers/, src/pre_tokenizers/split.rs, src/processors/template.rs).
 *
 * A component is an object with a "type" that may come anywhere among its keys (serde's internally tagged
 * enums buffer until they see it), so each reader collects the fields it knows, then checks them against the
 * type at the end. Sequences nest up to 4 levels and append their steps in order. Only literal String patterns
 * are accepted; a type this reader does not implement is refused by name.
 */
#include "tok_load.h"

#include <stdio.h>
#include <string.h>

/* ---- normalizer ---------------------------------------------------------------------------------------- */

int sg_tokl_read_normalizer(loader *L, int depth) {
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
            if (sg_tokl_seen_once(L, &seen, 1, "normalizer", "type") < 0 ||
                sg_tokl_read_type(L, type, "normalizer.type") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pattern")) {
            if (sg_tokl_seen_once(L, &seen, 2, "normalizer", "pattern") < 0 ||
                sg_tokl_read_pattern(L, &pat_off, &pat_len, "normalizer.pattern") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "content")) {
            if (sg_tokl_seen_once(L, &seen, 4, "normalizer", "content") < 0 ||
                sg_tokl_read_kept(L, &con_off, &con_len, "normalizer.content") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "prepend")) {
            if (sg_tokl_seen_once(L, &seen, 8, "normalizer", "prepend") < 0 ||
                sg_tokl_read_kept(L, &pre_off, &pre_len, "normalizer.prepend") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "normalizers")) {
            if (sg_tokl_seen_once(L, &seen, 16, "normalizer", "normalizers") < 0) return -1;
            if (sg_json_arr_begin(&L->j, "normalizer.normalizers") < 0) return -1;
            while ((r = sg_json_arr_next(&L->j)) == 1)
                if (sg_tokl_read_normalizer(L, depth + 1) < 0) return -1;
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

int sg_tokl_read_pre_tokenizer(loader *L, int depth) {
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
            if (sg_tokl_seen_once(L, &seen, 1, "pre_tokenizer", "type") < 0 ||
                sg_tokl_read_type(L, type, "pre_tokenizer.type") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pattern")) {
            if (sg_tokl_seen_once(L, &seen, 2, "pre_tokenizer", "pattern") < 0 ||
                sg_tokl_read_pattern(L, &pat_off, &pat_len, "pre_tokenizer.pattern") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "behavior")) {
            if (sg_tokl_seen_once(L, &seen, 4, "pre_tokenizer", "behavior") < 0 ||
                sg_tokl_read_type(L, beh, "pre_tokenizer.behavior") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "invert")) {
            if (sg_tokl_seen_once(L, &seen, 8, "pre_tokenizer", "invert") < 0 ||
                sg_json_bool(&L->j, &invert, "pre_tokenizer.invert") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pretokenizers")) {
            if (sg_tokl_seen_once(L, &seen, 16, "pre_tokenizer", "pretokenizers") < 0) return -1;
            if (sg_json_arr_begin(&L->j, "pre_tokenizer.pretokenizers") < 0) return -1;
            while ((r = sg_json_arr_next(&L->j)) == 1)
                if (sg_tokl_read_pre_tokenizer(L, depth + 1) < 0) return -1;
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
                        return FAIL(L,
                                    "post_processor: the single template uses sequence '%.*s' (only A exists "
                                    "for one text)",
                                    (int)(sl > 8 ? 8 : sl), s);
                } else if (!seq) {
                    it.name_len = (uint32_t)sl;
                    if (sg_tokl_keep_string(L, s, sl, &it.name_off) < 0) return -1;
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
        if (sg_tokl_grow(L, (void **)&L->specials, &L->cap_specials, L->n_specials, sizeof *L->specials) < 0) return -1;
        raw_special *sp = &L->specials[L->n_specials];
        sp->name_len = (uint32_t)kl;
        if (sg_tokl_keep_string(L, k, kl, &sp->name_off) < 0) return -1;
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
                    if (sg_tokl_grow(L, (void **)&L->ids, &L->cap_ids, L->n_ids, sizeof *L->ids) < 0) return -1;
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

int sg_tokl_read_post_processor(loader *L) {
    if (sg_json_obj_begin(&L->j, "post_processor") < 0) return -1;
    char type[32] = "";
    unsigned seen = 0;
    const char *k;
    size_t kl;
    int r;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "type")) {
            if (sg_tokl_seen_once(L, &seen, 1, "post_processor", "type") < 0 ||
                sg_tokl_read_type(L, type, "post_processor.type") < 0)
                return -1;
            if (strcmp(type, "TemplateProcessing") != 0)
                return FAIL(L, "unsupported post_processor type '%s' (supported: TemplateProcessing)", type);
        } else if (sg_json_key_is(k, kl, "single")) {
            if (sg_tokl_seen_once(L, &seen, 2, "post_processor", "single") < 0 || read_template(L, 1, "single") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "pair")) {
            if (sg_tokl_seen_once(L, &seen, 4, "post_processor", "pair") < 0 || read_template(L, 0, "pair") < 0)
                return -1;
        } else if (sg_json_key_is(k, kl, "special_tokens")) {
            if (sg_tokl_seen_once(L, &seen, 8, "post_processor", "special_tokens") < 0 || read_special_tokens(L) < 0)
                return -1;
        } else if (sg_json_skip(&L->j) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    if ((seen & 11) != 11)
        return FAIL(L, "post_processor: TemplateProcessing needs \"type\", \"single\" and "
                       "\"special_tokens\"");
    L->has_post = 1;
    return 0;
}
