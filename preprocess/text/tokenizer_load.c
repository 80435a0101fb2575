/* preprocess/text/tokenizer_load.c — reads a Hugging Face tokenizer.json into an sg_tokenizer: the file, its top
 * level, the model and the added tokens (the normalizer, pre-tokenizer and post-processor sections are read by
 * tokenizer_load_steps.c, and tokenizer_resolve.c builds the final tables).
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
#include "tok_load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Copies the string just read into the arena. */
int sg_tokl_keep_string(loader *L, const char *s, size_t len, uint32_t *off) {
    *off = sg_tok_arena_add(L->t, s, len);
    return *off == UINT32_MAX ? FAIL(L, "out of memory storing a string of %zu bytes", len) : 0;
}

/* Reads a string value and copies it into the arena. */
int sg_tokl_read_kept(loader *L, uint32_t *off, uint32_t *len, const char *what) {
    const char *s;
    size_t n;
    if (sg_json_string(&L->j, &s, &n, what) < 0) return -1;
    *len = (uint32_t)n;
    return sg_tokl_keep_string(L, s, n, off);
}

/* Marks key bit `bit` of an object as seen; a second time is an error. */
int sg_tokl_seen_once(loader *L, unsigned *seen, unsigned bit, const char *obj, const char *key) {
    if (*seen & bit) return FAIL(L, "%s: duplicate key \"%s\"", obj, key);
    *seen |= bit;
    return 0;
}

/* Makes room for element n of the array *p, doubling it. */
int sg_tokl_grow(loader *L, void **p, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *np = realloc(*p, c * elem);
    if (!np) return FAIL(L, "out of memory");
    *p = np;
    *cap = c;
    return 0;
}

/* A literal pattern object {"String": "..."} (a {"Regex": ...} pattern is refused). */
int sg_tokl_read_pattern(loader *L, uint32_t *off, uint32_t *len, const char *what) {
    if (sg_json_obj_begin(&L->j, what) < 0) return -1;
    const char *k;
    size_t kl;
    int r, got = 0;
    while ((r = sg_json_obj_next(&L->j, &k, &kl)) == 1) {
        if (sg_json_key_is(k, kl, "String")) {
            if (got) return FAIL(L, "%s: more than one pattern", what);
            if (sg_tokl_read_kept(L, off, len, what) < 0) return -1;
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
int sg_tokl_read_type(loader *L, char *buf, const char *what) {
    const char *s;
    size_t n;
    if (sg_json_string(&L->j, &s, &n, what) < 0) return -1;
    if (n > 31) n = 31;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 0;
}

/* ---- added tokens -------------------------------------------------------------------------------------- */

static int read_added_tokens(loader *L) {
    if (sg_json_arr_begin(&L->j, "added_tokens") < 0) return -1;
    sg_tokenizer *t = L->t;
    size_t cap = 0;
    int r;
    while ((r = sg_json_arr_next(&L->j)) == 1) {
        if (sg_tokl_grow(L, (void **)&t->added, &cap, t->n_added, sizeof *t->added) < 0) return -1;
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
                if (sg_tokl_seen_once(L, &seen, 1, "added token", "id") < 0 ||
                    sg_json_int(&L->j, 0, UINT32_MAX, &v, "added token id") < 0)
                    return -1;
            } else if (sg_json_key_is(k, kl, "content")) {
                if (sg_tokl_seen_once(L, &seen, 2, "added token", "content") < 0 ||
                    sg_tokl_read_kept(L, &a->off, &a->len, "added token content") < 0)
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
                if (sg_tokl_seen_once(L, &seen, 4u << f, "added token", flags[f]) < 0 ||
                    sg_json_bool(&L->j, &fv[f], flags[f]) < 0)
                    return -1;
            }
        }
        if (r < 0) return -1;
        if (seen != 127) {
            for (int i = 0; i < 7; i++)
                if (!(seen & (1u << i)))
                    return FAIL(L, "added token %u: missing \"%s\"", t->n_added,
                                i == 0   ? "id"
                                : i == 1 ? "content"
                                         : flags[i - 2]);
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
        if (sg_tokl_grow(L, (void **)&L->vents, &L->cap_vents, L->n_vents, sizeof *L->vents) < 0) return -1;
        sg_tok_slot *e = &L->vents[L->n_vents];
        e->len = (uint32_t)kl;
        if (sg_tokl_keep_string(L, k, kl, &e->off) < 0) return -1;
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
        if (sg_tokl_grow(L, (void **)&L->merges, &L->cap_merges, L->n_merges, sizeof *L->merges) < 0) return -1;
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
                    if (sg_tokl_keep_string(L, s, n, dst[h][0]) < 0) return -1;
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
                if (sg_tokl_keep_string(L, s, n, &off) < 0) return -1;
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
            if (sg_tokl_seen_once(L, &seen, 1, "model", "type") < 0 || sg_tokl_read_type(L, type, "model.type") < 0)
                return -1;
            if (strcmp(type, "BPE") != 0)
                return FAIL(L, "unsupported model type '%s' (supported: BPE, as Gemma uses)", type);
        } else if (sg_json_key_is(k, kl, "vocab")) {
            if (sg_tokl_seen_once(L, &seen, 2, "model", "vocab") < 0 || read_vocab(L) < 0) return -1;
        } else if (sg_json_key_is(k, kl, "merges")) {
            if (sg_tokl_seen_once(L, &seen, 4, "model", "merges") < 0 || read_merges(L) < 0) return -1;
        } else if (sg_json_key_is(k, kl, "dropout")) {
            if (sg_tokl_seen_once(L, &seen, 8, "model", "dropout") < 0 || (isnull = sg_json_null(&L->j)) < 0) return -1;
            if (!isnull) {
                double d;
                if (sg_json_number(&L->j, &d, "model.dropout") < 0) return -1;
                if (!(d >= 0 && d <= 1)) return FAIL(L, "model.dropout %g is outside [0, 1]", d);
                if (d != 0) return FAIL(L, "model.dropout %g is unsupported (random merges; HF uses none here)", d);
            }
        } else if (sg_json_key_is(k, kl, "unk_token")) {
            if (sg_tokl_seen_once(L, &seen, 16, "model", "unk_token") < 0 || (isnull = sg_json_null(&L->j)) < 0)
                return -1;
            if (!isnull) {
                if (sg_tokl_read_kept(L, &t->unk_off, &t->unk_len, "model.unk_token") < 0) return -1;
                t->has_unk = 1;
            }
        } else if (sg_json_key_is(k, kl, "continuing_subword_prefix") || sg_json_key_is(k, kl, "end_of_word_suffix")) {
            unsigned bit = sg_json_key_is(k, kl, "end_of_word_suffix") ? 32 : 64;
            if (sg_tokl_seen_once(L, &seen, bit, "model",
                                  bit == 32 ? "end_of_word_suffix" : "continuing_subword_prefix") < 0 ||
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
            if (sg_tokl_seen_once(L, &seen, 128u << which, "model", names[which]) < 0 ||
                (isnull = sg_json_null(&L->j)) < 0)
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
    static const char *keys[] = {"version",       "truncation",     "padding", "added_tokens", "normalizer",
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
        if (sg_tokl_seen_once(L, &seen, 1u << w, "tokenizer.json", keys[w]) < 0) return -1;
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
            if (sg_tokl_read_normalizer(L, 0) < 0) return -1;
            break;
        case 5:
            if (sg_tokl_read_pre_tokenizer(L, 0) < 0) return -1;
            break;
        case 6:
            if (sg_tokl_read_post_processor(L) < 0) return -1;
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
        rc = sg_tokl_resolve(&L, msg, sizeof msg);
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
