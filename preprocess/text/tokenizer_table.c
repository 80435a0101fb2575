/* preprocess/text/tokenizer_table.c — the tokenizer's lookup tables: string arena, string -> id map, merge map,
 * added-token trie, and the growable arrays one encode call uses.
 *
 * Both maps use open addressing with linear probing and a table at least twice the entry count, so a lookup
 * touches one or two cache lines. The string hash reads 8 bytes at a time (a multiply-xorshift mix): a 256k
 * vocab plus 3 lookups per merge is ~1M hashes at load, which must fit in the 0.3 s budget with the parsing.
 * Every size is checked before it is doubled; a failed allocation is reported, never assumed away.
 */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

uint32_t sg_tok_arena_add(sg_tokenizer *t, const char *s, size_t len) {
    if (len > UINT32_MAX - t->arena_len || t->arena_len + len > UINT32_MAX - 1) return UINT32_MAX;
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + len) cap *= 2;
        char *na = realloc(t->arena, cap);
        if (!na) return UINT32_MAX;
        t->arena = na;
        t->arena_cap = cap;
    }
    uint32_t off = (uint32_t)t->arena_len;
    if (len) memcpy(t->arena + off, s, len);
    t->arena_len += len;
    return off;
}

uint64_t sg_tok_hash(const char *s, size_t len) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (len * 0x9E3779B97F4A7C15ull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

/* Slot index and tag of a hash: the index from the low bits, the tag from the high half. */
#define SLOT_OF(h, mask) ((uint32_t)(h) & (mask))
#define TAG_OF(h) ((uint32_t)((h) >> 32))

int sg_tok_map_reserve(sg_tok_map *m, const char *arena, uint32_t n) {
    if (n > (1u << 29)) return -1;
    uint32_t nslots = 64;
    while (nslots < 2 * n) nslots *= 2;
    if (m->slots && nslots <= m->mask + 1) return 0;
    sg_tok_slot *sl = malloc((size_t)nslots * sizeof *sl);
    if (!sl) return -1;
    for (uint32_t i = 0; i < nslots; i++) sl[i].id = -1;
    uint32_t mask = nslots - 1;
    if (m->slots)
        for (uint32_t i = 0; i <= m->mask; i++) {
            if (m->slots[i].id < 0) continue;
            uint64_t h = sg_tok_hash(arena + m->slots[i].off, m->slots[i].len);
            uint32_t k = SLOT_OF(h, mask);
            while (sl[k].id >= 0) k = (k + 1) & mask;
            sl[k] = m->slots[i];
        }
    free(m->slots);
    m->slots = sl;
    m->mask = mask;
    return 0;
}

/* The first 8 bytes of s, zero-padded. */
static inline uint64_t head_of(const char *s, size_t len) {
    uint64_t h = 0;
    memcpy(&h, s, len < 8 ? len : 8);
    return h;
}

/* Whether slot e holds string s (len bytes, head hd, hash tag tag). */
static inline int slot_is(const sg_tok_slot *e, const char *arena, const char *s, size_t len, uint64_t hd,
                          uint32_t tag) {
    return e->tag == tag && e->len == len && e->head == hd &&
           (len <= 8 || memcmp(arena + e->off + 8, s + 8, len - 8) == 0);
}

int sg_tok_map_put_h(sg_tok_map *m, const char *arena, uint32_t off, uint32_t len, int32_t id, uint64_t h,
                     int32_t *existing) {
    if (m->n >= (1u << 29) || sg_tok_map_reserve(m, arena, m->n + 1) < 0) return -1;
    const char *s = arena + off;
    uint64_t hd = head_of(s, len);
    uint32_t i = SLOT_OF(h, m->mask), tag = TAG_OF(h);
    for (; m->slots[i].id >= 0; i = (i + 1) & m->mask) {
        if (slot_is(&m->slots[i], arena, s, len, hd, tag)) {
            if (existing) *existing = m->slots[i].id;
            return 0;
        }
    }
    m->slots[i] = (sg_tok_slot){hd, len, off, id, tag};
    m->n++;
    return 1;
}

int sg_tok_map_put(sg_tok_map *m, const char *arena, uint32_t off, uint32_t len, int32_t id, int32_t *existing) {
    return sg_tok_map_put_h(m, arena, off, len, id, sg_tok_hash(arena + off, len), existing);
}

int32_t sg_tok_map_get_h(const sg_tok_map *m, const char *arena, const char *s, size_t len, uint64_t h) {
    if (!m->slots) return -1;
    uint64_t hd = head_of(s, len);
    uint32_t i = SLOT_OF(h, m->mask), tag = TAG_OF(h);
    for (; m->slots[i].id >= 0; i = (i + 1) & m->mask)
        if (slot_is(&m->slots[i], arena, s, len, hd, tag)) return m->slots[i].id;
    return -1;
}

int32_t sg_tok_map_get(const sg_tok_map *m, const char *arena, const char *s, size_t len) {
    return sg_tok_map_get_h(m, arena, s, len, sg_tok_hash(s, len));
}

void sg_tok_map_prefetch(const sg_tok_map *m, uint64_t h) {
    if (m->slots) __builtin_prefetch(&m->slots[SLOT_OF(h, m->mask)]);
}

void sg_tok_map_free(sg_tok_map *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* Slot of key in a table of mask + 1 slots: the key's golden-ratio product, high half. */
static inline uint32_t merge_slot(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

int sg_tok_merges_reserve(sg_tok_merges *m, uint32_t n) {
    if (n > (1u << 29)) return -1;
    uint32_t nslots = 1024;
    while (nslots < 2 * n) nslots *= 2;
    if (m->slots && nslots <= m->mask + 1) return 0;
    sg_tok_merge *ns = malloc((size_t)nslots * sizeof *ns);
    if (!ns) return -1;
    for (uint32_t i = 0; i < nslots; i++) ns[i].key = UINT64_MAX;
    if (m->slots)
        for (uint32_t i = 0; i <= m->mask; i++) {
            if (m->slots[i].key == UINT64_MAX) continue;
            uint32_t k = merge_slot(m->slots[i].key, nslots - 1);
            while (ns[k].key != UINT64_MAX) k = (k + 1) & (nslots - 1);
            ns[k] = m->slots[i];
        }
    free(m->slots);
    m->slots = ns;
    m->mask = nslots - 1;
    return 0;
}

int sg_tok_merges_put(sg_tok_merges *m, int32_t left, int32_t right, uint32_t rank, int32_t new_id) {
    if (m->n >= (1u << 29) || sg_tok_merges_reserve(m, m->n + 1) < 0) return -1;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint32_t i = merge_slot(key, m->mask);
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key) i = (i + 1) & m->mask;
    if (m->slots[i].key == UINT64_MAX) m->n++;
    m->slots[i] = (sg_tok_merge){key, rank, new_id};
    return 0;
}

/* Appends a node; returns its index or -1. */
static int32_t trie_node(sg_tok_trie *tr, uint8_t byte) {
    if (tr->n == tr->cap) {
        uint32_t cap = tr->cap ? tr->cap * 2 : 64;
        if (cap < tr->cap || cap > (1u << 30)) return -1;
        sg_tok_trie_node *nn = realloc(tr->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return -1;
        tr->nodes = nn;
        tr->cap = cap;
    }
    tr->nodes[tr->n] = (sg_tok_trie_node){-1, -1, -1, byte};
    return (int32_t)tr->n++;
}

int sg_tok_trie_add(sg_tok_trie *tr, const char *pat, size_t len, int32_t tok) {
    if (!tr->n && trie_node(tr, 0) < 0) return -1;
    int32_t cur = 0;
    for (size_t k = 0; k < len; k++) {
        uint8_t b = (uint8_t)pat[k];
        int32_t c = tr->nodes[cur].first_child;
        while (c >= 0 && tr->nodes[c].byte != b) c = tr->nodes[c].next_sibling;
        if (c < 0) {
            c = trie_node(tr, b);
            if (c < 0) return -1;
            tr->nodes[c].next_sibling = tr->nodes[cur].first_child;
            tr->nodes[cur].first_child = c;
        }
        cur = c;
    }
    tr->nodes[cur].token = tok;
    return 0;
}

int sg_tok_ids_push(sg_tok_ids *a, int32_t id) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *nv = realloc(a->v, cap * sizeof *nv);
        if (!nv) return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = id;
    return 0;
}

int sg_tok_buf_add(sg_tok_buf *b, const char *s, size_t len) {
    if (len > SIZE_MAX / 4 - b->n) return -1;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len) cap *= 2;
        char *nv = realloc(b->v, cap);
        if (!nv) return -1;
        b->v = nv;
        b->cap = cap;
    }
    if (len) memcpy(b->v + b->n, s, len);
    b->n += len;
    return 0;
}
