/* preprocess/text/tokenizer_normalize.c — the normalizer and pre-tokenizer steps a Gemma tokenizer.json uses.
 *
 * Normalizer (tokenizers src/normalizers/replace.rs, prepend.rs): Replace with a literal String pattern replaces
 * every non-overlapping occurrence, left to right (the library escapes the literal into a regex; a literal's
 * leftmost-first matches are exactly these); Prepend adds its prefix to a non-empty string. Gemma's is
 * Replace(" " -> "\u2581"). Steps of a Sequence run in order.
 *
 * Pre-tokenizer (src/pre_tokenizers/split.rs, tokenizer/normalizer.rs NormalizedString::split): Split on a
 * literal String pattern cuts a piece into matches and the text between them and regroups them by the
 * behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous); empty pieces are dropped.
 * Gemma's is Split(" ", MergedWithPrevious), which never fires: the normalizer already turned every space into
 * "\u2581". It is implemented anyway so that a tokenizer.json where it matters is tokenized as HF does.
 */
#include "tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First occurrence of pat (m bytes, m > 0) in s[0..n), or NULL. */
static const char *find_lit(const char *s, size_t n, const char *pat, size_t m) {
    if (m > n) return NULL;
    return memmem(s, n, pat, m);
}

int sg_tok_normalize(const sg_tokenizer *t, const char *s, size_t len, sg_tok_buf *out) {
    out->n = 0;
    if (sg_tok_buf_add(out, s, len) < 0) return -1;
    sg_tok_buf tmp = {0};
    size_t cap = len <= (SIZE_MAX - SG_TOK_EXPANSION_SLACK) / SG_TOK_MAX_EXPANSION
                     ? len * SG_TOK_MAX_EXPANSION + SG_TOK_EXPANSION_SLACK
                     : SIZE_MAX;
    for (int k = 0; k < t->n_norm; k++) {
        const sg_tok_norm *st = &t->norm[k];
        const char *rep = t->arena + st->rep_off;
        tmp.n = 0;
        if (st->kind == SG_NORM_PREPEND) {
            if (out->n == 0) continue;
            if (sg_tok_buf_add(&tmp, rep, st->rep_len) < 0 || sg_tok_buf_add(&tmp, out->v, out->n) < 0) goto oom;
        } else {
            const char *pat = t->arena + st->pat_off;
            const char *p = out->v, *end = out->v + out->n, *m;
            if (!find_lit(p, (size_t)(end - p), pat, st->pat_len)) continue;
            while ((m = find_lit(p, (size_t)(end - p), pat, st->pat_len)) != NULL) {
                if (sg_tok_buf_add(&tmp, p, (size_t)(m - p)) < 0 || sg_tok_buf_add(&tmp, rep, st->rep_len) < 0)
                    goto oom;
                p = m + st->pat_len;
                if (tmp.n > cap) {
                    free(tmp.v);
                    return -2;
                }
            }
            if (sg_tok_buf_add(&tmp, p, (size_t)(end - p)) < 0) goto oom;
        }
        sg_tok_buf swap = *out;
        *out = tmp;
        tmp = swap;
        if (out->n > cap) {
            free(tmp.v);
            return -2;
        }
    }
    free(tmp.v);
    return 0;
oom:
    free(tmp.v);
    return -1;
}

/* A piece of the normalized text: [off, off+len). */
typedef struct {
    size_t off, len;
} range;

typedef struct {
    range *v;
    size_t n, cap;
} ranges;

static int ranges_push(ranges *r, size_t off, size_t len) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        range *nv = realloc(r->v, cap * sizeof *nv);
        if (!nv) return -1;
        r->v = nv;
        r->cap = cap;
    }
    r->v[r->n++] = (range){off, len};
    return 0;
}

/* One segment of a split: [off, off+len) into seg, and match (1: a match of the literal, 0: text between) into
 * (*is_match)[*nseg], grown as needed (*capm entries). 0, or -1 when out of memory. */
static int seg_push(ranges *seg, unsigned char **is_match, size_t *nseg, size_t *capm, size_t off, size_t len,
                    int match) {
    if (ranges_push(seg, off, len) < 0) return -1;
    if (*nseg == *capm) {
        size_t cap = *capm ? *capm * 2 : 16;
        unsigned char *nm = realloc(*is_match, cap);
        if (!nm) return -1;
        *is_match = nm;
        *capm = cap;
    }
    (*is_match)[(*nseg)++] = (unsigned char)match;
    return 0;
}

/* Splits piece [off, off+len) of s on the literal of step st, appending the resulting non-empty pieces to out.
 * Mirrors NormalizedString::split: matches alternate with the text between them, then are regrouped. */
static int split_piece(const sg_tokenizer *t, const sg_tok_split *st, const char *s, size_t off, size_t len,
                       ranges *out) {
    const char *pat = t->arena + st->pat_off;
    size_t m = st->pat_len;
    size_t pos = off, end = off + len;
    /* State of the regrouping: [cur_s, cur_e) is the piece being built (open = one is pending). */
    size_t cur_s = 0, cur_e = 0;
    int open = 0, prev_match = 0;
    /* First the alternating list of segments, (range, is_match), covering the piece (a literal's matches
     * cannot overlap); then the regrouping, as the library does it. */
    ranges seg = {0};
    unsigned char *is_match = NULL;
    size_t nseg = 0, capm = 0;
    while (pos < end) {
        const char *f = find_lit(s + pos, end - pos, pat, m);
        size_t ms = f ? (size_t)(f - s) : end;
        if (ms > pos && seg_push(&seg, &is_match, &nseg, &capm, pos, ms - pos, 0) < 0) goto oom;
        if (!f) break;
        if (seg_push(&seg, &is_match, &nseg, &capm, ms, m, 1) < 0) goto oom;
        pos = ms + m;
    }
    switch (st->behavior) {
    case SG_SPLIT_REMOVED:
        for (size_t i = 0; i < nseg; i++)
            if (!is_match[i] && ranges_push(out, seg.v[i].off, seg.v[i].len) < 0) goto oom;
        break;
    case SG_SPLIT_ISOLATED:
        for (size_t i = 0; i < nseg; i++)
            if (ranges_push(out, seg.v[i].off, seg.v[i].len) < 0) goto oom;
        break;
    case SG_SPLIT_CONTIGUOUS:
    case SG_SPLIT_MERGED_WITH_PREVIOUS:
    case SG_SPLIT_MERGED_WITH_NEXT: {
        /* Contiguous: a segment of the same kind as the previous one extends it. MergedWithPrevious: a match
         * right after a non-match extends it. Otherwise a new piece starts. MergedWithNext is the mirror image
         * of MergedWithPrevious: walk backwards, a match right before a non-match extends that piece leftwards,
         * and the pieces (found last first) are put back in order at the end. */
        const int back = st->behavior == SG_SPLIT_MERGED_WITH_NEXT;
        size_t first_new = out->n;
        for (size_t k = 0; k < nseg; k++) {
            size_t i = back ? nseg - 1 - k : k;
            int mt = is_match[i];
            int extend = st->behavior == SG_SPLIT_CONTIGUOUS ? (mt == prev_match) : (mt && !prev_match);
            if (extend && open) {
                if (back)
                    cur_s = seg.v[i].off;
                else
                    cur_e = seg.v[i].off + seg.v[i].len;
            } else {
                if (open && ranges_push(out, cur_s, cur_e - cur_s) < 0) goto oom;
                cur_s = seg.v[i].off;
                cur_e = cur_s + seg.v[i].len;
                open = 1;
            }
            prev_match = mt;
        }
        if (open && ranges_push(out, cur_s, cur_e - cur_s) < 0) goto oom;
        for (size_t a = first_new, b = out->n; back && a + 1 < b; a++, b--) {
            range x = out->v[a];
            out->v[a] = out->v[b - 1];
            out->v[b - 1] = x;
        }
        break;
    }
    }
    free(seg.v);
    free(is_match);
    return 0;
oom:
    free(seg.v);
    free(is_match);
    return -1;
}

int sg_tok_pretokenize_bpe(const sg_tokenizer *t, const char *s, size_t len, sg_tok_ids *out, char *err,
                           size_t errlen) {
    if (t->n_split == 0) return sg_tok_bpe(t, s, len, out, err, errlen);
    ranges cur = {0}, next = {0};
    int rc = -1;
    if (ranges_push(&cur, 0, len) < 0) goto oom;
    for (int k = 0; k < t->n_split; k++) {
        next.n = 0;
        for (size_t i = 0; i < cur.n; i++)
            if (split_piece(t, &t->split[k], s, cur.v[i].off, cur.v[i].len, &next) < 0) goto oom;
        ranges swap = cur;
        cur = next;
        next = swap;
    }
    rc = 0;
    for (size_t i = 0; i < cur.n && rc == 0; i++) rc = sg_tok_bpe(t, s + cur.v[i].off, cur.v[i].len, out, err, errlen);
    free(cur.v);
    free(next.v);
    return rc;
oom:
    snprintf(err, errlen, "out of memory while pre-tokenizing %zu bytes", len);
    free(cur.v);
    free(next.v);
    return -1;
}
