/* preprocess/text/tokenizer_resolve.c — turns what tokenizer_load.c read into the tables encode uses.
 *
 * Runs after the whole file was walked, because its key order is not guaranteed. Merges: both halves and their
 * concatenation must be in the vocab (BpeBuilder::build), the i-th gets rank i. Added tokens: the id
 * token_to_id gives their content, else the next free id after the vocab's size (AddedVocabulary::add_tokens;
 * the file's "id" is only checked, as the library only warns about it); their match patterns (normalized when
 * normalized = true) go into two tries. Template: special-token names to ids. Pad: the id of "<pad>".
 */
#include "tok_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int sg_tokl_resolve_merges(loader *L, char *err, size_t errlen) {
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

int sg_tokl_resolve(loader *L, char *err, size_t errlen) {
    sg_tokenizer *t = L->t;
    char b1[80];
    int32_t max_id = -1;
    for (uint32_t i = 0; i <= t->vocab.mask && t->vocab.slots; i++)
        if (t->vocab.slots[i].id > max_id) max_id = t->vocab.slots[i].id;

    if (sg_tokl_resolve_merges(L, err, errlen) < 0) return -1;

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
            snprintf(err, errlen, "tokenizer.json: added token %s appears twice",
                     show(t, a->off, a->len, b1, sizeof b1));
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
            int r = sg_tok_normalize(t, t->arena + a->off, a->len, &nb);
            if (r == -2) {
                free(nb.v);
                snprintf(err, errlen, "added token %u: the normalizer expands it past %d times its length", i,
                         SG_TOK_MAX_EXPANSION);
                return -1;
            }
            if (r < 0) {
                free(nb.v);
                goto oom;
            }
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
                snprintf(err, errlen,
                         "tokenizer.json: post_processor.single names special token %s, which is not in "
                         "special_tokens",
                         show(t, it->name_off, it->name_len, b1, sizeof b1));
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
        snprintf(err, errlen,
                 "tokenizer.json: no \"<pad>\" token (neither in added_tokens nor in model.vocab); the "
                 "SigLIP2 processor pads with it");
        return -1;
    }
    t->vocab_size = max_id + 1;
    return 0;
oom:
    snprintf(err, errlen, "tokenizer.json: out of memory");
    return -1;
}
