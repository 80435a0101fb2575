/* preprocess/text/tokenizer_bpe.c — the BPE model with byte fallback, exactly as the tokenizers library runs it.
 *
 * Reference: tokenizers (Rust) src/models/bpe/model.rs, BPE::merge_word and tokenize_with_cache, and
 * src/models/bpe/word.rs, Word::merge_all (read at v0.23.2-dev; checked against the Python package 0.23.3 by
 * tests/test_tokenizer.c). The piece is split into characters; each character is its vocab id if the vocab has
 * it, else (byte_fallback) one "<0xNN>" id per UTF-8 byte if all of them exist, else the unk id (consecutive
 * unknown characters fused into one when fuse_unk). Two quirks are kept on purpose because HF has them: a
 * pending unk is not emitted before byte-fallback ids, only before the next known character or at the end (so
 * "unknown, byte-fallback, known" gives bytes, unk, known), and a character with no id, no bytes and no unk
 * token is dropped.
 *
 * Merges then run with a min-heap ordered by (rank, position): always the lowest-ranked adjacent pair, the
 * leftmost of equal ranks. Entries that went stale (their left symbol was merged away, or the pair at that
 * position no longer merges into the same id) are skipped when popped, as word.rs does. Each merge pushes at
 * most two entries, so the heap never holds more than 3 x the symbol count.
 */
#include "tok_internal.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t rank, pos;
    int32_t new_id;
} heap_item;

/* a goes before b: lower rank first, then lower position. */
static inline int heap_less(heap_item a, heap_item b) { return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos; }

static void heap_push(heap_item *h, size_t *n, heap_item x) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(x, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static heap_item heap_pop(heap_item *h, size_t *n) {
    heap_item top = h[0], x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        heap_item best = x;
        if (l < *n && heap_less(h[l], best)) {
            m = l;
            best = h[l];
        }
        if (r < *n && heap_less(h[r], best)) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n) h[i] = x;
    return top;
}

/* The symbols of one word: id, neighbours (-1 = none) and byte length (0 = merged into its left neighbour). */
typedef struct {
    int32_t *c, *prev, *next, *len;
    size_t n;
} word;

static void word_add(word *w, int32_t id, int32_t len) {
    size_t i = w->n++;
    w->c[i] = id;
    w->len[i] = len;
    w->prev[i] = (int32_t)i - 1;
    w->next[i] = -1;
    if (i) w->next[i - 1] = (int32_t)i;
}

int sg_tok_bpe(const sg_tokenizer *t, const char *s, size_t len, sg_tok_ids *out, char *err, size_t errlen) {
    if (len == 0) return 0;
    if (t->ignore_merges) {
        int32_t id = sg_tok_map_get(&t->vocab, t->arena, s, len);
        if (id >= 0) return sg_tok_ids_push(out, id) < 0 ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    }
    /* One symbol per byte at most (a character is 1 symbol, or one per byte with byte fallback). */
    if (len > (SIZE_MAX / 64)) {
        snprintf(err, errlen, "text of %zu bytes is too long", len);
        return -1;
    }
    int32_t *mem = malloc(len * 4 * sizeof(int32_t) + (3 * len + 1) * sizeof(heap_item));
    if (!mem) {
        snprintf(err, errlen, "out of memory (BPE over %zu bytes)", len);
        return -1;
    }
    word w = {mem, mem + len, mem + 2 * len, mem + 3 * len, 0};
    heap_item *heap = (heap_item *)(mem + 4 * len);
    const unsigned char *u = (const unsigned char *)s;
    int have_unk = 0;
    int32_t unk_len = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = sg_utf8_decode(u + i, len - i, &cp);
        if (!k) k = 1; /* callers pass valid UTF-8; never loop forever if one does not */
        int32_t id = sg_tok_map_get(&t->vocab, t->arena, s + i, (size_t)k);
        if (id >= 0) {
            if (have_unk) {
                word_add(&w, t->unk_id, unk_len);
                have_unk = 0;
            }
            word_add(&w, id, k);
            i += (size_t)k;
            continue;
        }
        if (t->byte_fallback) {
            int all = 1;
            for (int b = 0; b < k; b++) all &= t->byte_ids[u[i + b]] >= 0;
            if (all) {
                for (int b = 0; b < k; b++) word_add(&w, t->byte_ids[u[i + b]], 1);
                i += (size_t)k;
                continue;
            }
        }
        if (t->has_unk) {
            if (t->unk_id < 0) {
                snprintf(err, errlen,
                         "the unknown token \"%.*s\" is not in the vocab (the character at byte %zu "
                         "of a piece needs it)",
                         (int)(t->unk_len > 64 ? 64 : t->unk_len), t->arena + t->unk_off, i);
                free(mem);
                return -1;
            }
            if (have_unk && t->fuse_unk) {
                unk_len += k;
            } else {
                if (have_unk) word_add(&w, t->unk_id, unk_len);
                have_unk = 1;
                unk_len = k;
            }
        }
        i += (size_t)k;
    }
    if (have_unk) word_add(&w, t->unk_id, unk_len);

    size_t hn = 0;
    uint32_t rank;
    int32_t nid;
    for (size_t i = 0; i + 1 < w.n; i++)
        if (sg_tok_merges_get(&t->merges, w.c[i], w.c[i + 1], &rank, &nid))
            heap_push(heap, &hn, (heap_item){rank, (uint32_t)i, nid});
    while (hn) {
        heap_item top = heap_pop(heap, &hn);
        size_t p = top.pos;
        if (w.len[p] == 0 || w.next[p] < 0) continue;
        size_t nx = (size_t)w.next[p];
        if (!sg_tok_merges_get(&t->merges, w.c[p], w.c[nx], &rank, &nid) || nid != top.new_id) continue;
        /* Merge nx into p. */
        w.c[p] = top.new_id;
        w.len[p] += w.len[nx];
        w.next[p] = w.next[nx];
        w.len[nx] = 0;
        if (w.next[nx] >= 0) w.prev[w.next[nx]] = (int32_t)p;
        if (w.prev[p] >= 0) {
            size_t pv = (size_t)w.prev[p];
            if (sg_tok_merges_get(&t->merges, w.c[pv], w.c[p], &rank, &nid))
                heap_push(heap, &hn, (heap_item){rank, (uint32_t)pv, nid});
        }
        if (w.next[p] >= 0) {
            if (sg_tok_merges_get(&t->merges, w.c[p], w.c[w.next[p]], &rank, &nid))
                heap_push(heap, &hn, (heap_item){rank, (uint32_t)p, nid});
        }
    }
    int rc = 0;
    for (size_t i = 0; i < w.n; i++)
        if (w.len[i] != 0 && sg_tok_ids_push(out, w.c[i]) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
    free(mem);
    return rc;
}
