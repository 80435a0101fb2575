/* cli/text_run.c — the text query runner (contract in text_run.h).
 *
 * Design: one thread, batch by batch: read up to B queries, tokenise each (a few microseconds each, against
 * milliseconds of compute per batch on any backend), embed the ones that tokenised, then write B rows in
 * input order. Failures keep their place in the order and are reported as they are written, like images.
 * Memory is one batch of queries and ids: a --texts-from list streams.
 */
#include "text_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json_text.h"

typedef struct query {
    char *text;      /* NUL-terminated copy */
    size_t len;
    char *error;     /* malloc'd reason when it cannot be embedded */
    int ntok;        /* tokens before truncation */
    int unwritable;  /* no row can name it, whatever --on-error says (a NUL inside; or see unlisted below) */
} query;

/* The query source: operands first, then the stream. */
typedef struct source {
    char **texts;
    int ntexts, next;
    FILE *list;
    int own_list;
    int nul_sep;
    char *line;
    size_t cap;
    uint64_t index;  /* queries yielded so far */
} source;

/* 1 and a query, 0 at the end, -1 on a read error of the stream (err). */
static int source_next(source *s, query *q, char *err, size_t errlen) {
    memset(q, 0, sizeof *q);
    if (s->next < s->ntexts) {
        q->text = sg_cli_xstrdup(s->texts[s->next++]);
        q->len = strlen(q->text);
        s->index++;
        return 1;
    }
    if (!s->list) return 0;
    errno = 0;
    ssize_t n = getdelim(&s->line, &s->cap, s->nul_sep ? '\0' : '\n', s->list);
    if (n < 0) {
        if (ferror(s->list)) {
            snprintf(err, errlen, "--texts-from: read error: %s", strerror(errno ? errno : EIO));
            return -1;
        }
        return 0;
    }
    size_t len = (size_t)n, skip = 0;
    if (len && s->line[len - 1] == (s->nul_sep ? '\0' : '\n')) len--;
    if (!s->nul_sep && len && s->line[len - 1] == '\r') len--; /* CRLF */
    if (s->index == (uint64_t)s->ntexts) skip = sg_cli_bom_len(s->line, len); /* an editor's BOM: not the query's */
    len -= skip;
    q->text = sg_cli_xmalloc(len + 1);
    memcpy(q->text, s->line + skip, len);
    q->text[len] = 0;
    q->len = len;
    if (memchr(q->text, 0, len)) {
        q->error = sg_cli_xstrdup("contains a NUL byte (no row: a row's text cannot hold one)");
        q->unwritable = 1;
    }
    s->index++;
    return 1;
}

void sg_cli_text_label(char *out, size_t outlen, uint64_t index, const char *text, size_t len) {
    enum { k_max = 60 };
    char cut[k_max * 4 + 8];
    size_t n = len < sizeof cut - 4 ? len : sizeof cut - 4;
    size_t k = 0, chars = 0;
    /* at most k_max characters (UTF-8 lead bytes counted), so a long query stays one readable line */
    while (k < n && text[k] && (chars < k_max || ((unsigned char)text[k] & 0xC0) == 0x80)) {
        if (((unsigned char)text[k] & 0xC0) != 0x80) chars++;
        k++;
    }
    memcpy(cut, text, k);
    int more = k < len;
    if (more) memcpy(cut + k, "...", 4);
    else cut[k] = 0;
    sg_cli_buf b = {0};
    sg_cli_json_put_string(&b, cut);
    snprintf(out, outlen, "query %llu %s", (unsigned long long)index, b.p);
    sg_cli_buf_free(&b);
}

/* Tokenises q into ids [T] and mask [T] (used only when tok->attention_mask); sets q->error on failure. */
static void tokenize(const sg_cli_text_tok *tok, query *q, int T, int32_t *ids, uint8_t *mask) {
    if (q->error) return;
    char err[512] = "";
    int n = tok->encode(tok->ctx, q->text, q->len, ids, T, err, sizeof err);
    if (n < 0) {
        q->error = sg_cli_xstrdup(err[0] ? err : "the tokenizer rejected it");
        return;
    }
    q->ntok = n;
    for (int t = 0; t < T; t++)
        if (ids[t] < 0 || ids[t] >= tok->vocab_limit) {
            snprintf(err, sizeof err, "token id %d (position %d) is outside the text tower's vocabulary of %d "
                     "entries: tokenizer.json and the weights disagree", ids[t], t, tok->vocab_limit);
            q->error = sg_cli_xstrdup(err);
            return;
        }
    const int valid = n < T ? n : T;
    for (int t = 0; t < T; t++) mask[t] = t < valid;
}

int sg_cli_text_run(const sg_cli_text_cfg *c, sg_cli_text_stats *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    const double t_start = sg_cli_now();
    sg_text_backend *b = c->backend;
    const int T = b->seq_len, P = b->dim;
    const int B = c->batch < 1 ? 1 : c->batch > b->max_batch ? b->max_batch : c->batch;
    source src = {c->texts, c->ntexts, 0, NULL, 0, c->nul_sep, NULL, 0, 0};
    if (c->texts_from) {
        if (!strcmp(c->texts_from, "-")) {
            src.list = stdin;
        } else if (!(src.list = fopen(c->texts_from, "r"))) {
            snprintf(err, errlen, "--texts-from %s: %s", c->texts_from, strerror(errno));
            return -1;
        }
        src.own_list = src.list != stdin;
    }
    query *qs = sg_cli_xcalloc((size_t)B, sizeof *qs);
    int32_t *ids = sg_cli_xmalloc((size_t)B * T * sizeof *ids);
    uint8_t *mask = sg_cli_xmalloc((size_t)B * T);
    float *out = sg_cli_xmalloc((size_t)B * P * sizeof *out);
    int *slot = sg_cli_xmalloc((size_t)B * sizeof *slot); /* query i's row in the backend batch, -1 if failed */
    int rc = 0, done = 0;
    uint64_t first_index = 1;
    while (!done && rc == 0) {
        /* read and tokenise one batch */
        int nq = 0, nok = 0;
        double t0 = sg_cli_now();
        first_index = src.index + 1;
        while (nq < B) {
            int r = source_next(&src, &qs[nq], err, errlen);
            if (r < 0) {
                rc = -1;
                break;
            }
            if (r == 0) {
                done = 1;
                break;
            }
            tokenize(c->tok, &qs[nq], T, ids + (size_t)nok * T, mask + (size_t)nok * T);
            slot[nq] = qs[nq].error ? -1 : nok++;
            nq++;
        }
        st->tokenize_s += sg_cli_now() - t0;
        if (rc != 0 && nq == 0) break;
        t0 = sg_cli_now();
        if (nok > 0 && b->embed(b, ids, c->tok->attention_mask ? mask : NULL, nok, out, err, errlen) != 0) {
            rc = -1;
            nq = 0; /* a backend failure is fatal: nothing of this batch is written */
        }
        st->compute_s += sg_cli_now() - t0;
        t0 = sg_cli_now();
        if (c->rows_share_progress_tty) sg_cli_progress_clear(c->progress); /* never draw inside a row */
        for (int i = 0; i < nq && rc == 0; i++) {
            query *q = &qs[i];
            char label[512];
            int unlisted = q->unwritable || (c->writer && sg_cli_writer_rejects_path(c->writer, q->text));
            if (!q->error && unlisted)
                q->error = sg_cli_xstrdup("contains a line break (\\n or \\r), which the binary format's .texts list "
                                          "cannot hold (no row)");
            if (q->error) {
                st->failed++;
                sg_cli_progress_clear(c->progress);
                sg_cli_text_label(label, sizeof label, first_index + (uint64_t)i, q->text, q->len);
                fprintf(stderr, "siglip2-embed: %s: %s\n", label, q->error);
                if (c->on_error == SG_ON_ERROR_FAIL) {
                    st->stopped = 1;
                    st->not_reached += (uint64_t)(nq - i - 1);
                    done = 1;
                    break;
                }
                /* no null row for a query that no row can name: the .texts list cannot hold it (it would shift
                 * every later query), or it holds a NUL (its row would name a shorter query) */
                if (c->on_error == SG_ON_ERROR_NULL && !unlisted &&
                    sg_cli_writer_row(c->writer, q->text, NULL, err, errlen) != 0)
                    rc = -1;
                continue;
            }
            if (q->ntok > T) {
                st->truncated++;
                if (c->verbose) {
                    sg_cli_progress_clear(c->progress);
                    sg_cli_text_label(label, sizeof label, first_index + (uint64_t)i, q->text, q->len);
                    fprintf(stderr, "siglip2-embed: %s: %d tokens, truncated to %d (as the SigLIP2 processor does)\n",
                            label, q->ntok, T);
                }
            }
            float *v = out + (size_t)slot[i] * P;
            if (c->normalize) sg_cli_normalize_row(v, P);
            if (sg_cli_writer_row(c->writer, q->text, v, err, errlen) != 0) rc = -1;
            else st->embedded++;
        }
        if (rc == 0 && sg_cli_writer_flush(c->writer, err, errlen) != 0) rc = -1;
        st->write_s += sg_cli_now() - t0;
        for (int i = 0; i < nq; i++) {
            free(qs[i].text);
            free(qs[i].error);
        }
        if (c->progress) sg_cli_progress_update(c->progress, st->embedded, st->failed, 0, 0, 0);
    }
    if (src.own_list) fclose(src.list);
    free(src.line);
    free(qs);
    free(ids);
    free(mask);
    free(out);
    free(slot);
    st->wall_s = sg_cli_now() - t_start;
    return rc;
}

int sg_cli_text_embed_list(sg_text_backend *b, const sg_cli_text_tok *tok, char *const *texts, int n, float *out,
                           char *err, size_t errlen) {
    const int T = b->seq_len, P = b->dim;
    int32_t *ids = sg_cli_xmalloc((size_t)b->max_batch * T * sizeof *ids);
    uint8_t *mask = sg_cli_xmalloc((size_t)b->max_batch * T);
    int rc = 0;
    for (int i0 = 0; i0 < n && rc == 0; i0 += b->max_batch) {
        const int nb = n - i0 < b->max_batch ? n - i0 : b->max_batch;
        for (int i = 0; i < nb && rc == 0; i++) {
            query q = {texts[i0 + i], strlen(texts[i0 + i]), NULL, 0, 0};
            tokenize(tok, &q, T, ids + (size_t)i * T, mask + (size_t)i * T);
            if (q.error) {
                snprintf(err, errlen, "label \"%s\": %s", texts[i0 + i], q.error);
                free(q.error);
                rc = -1;
            }
        }
        if (rc == 0)
            rc = b->embed(b, ids, tok->attention_mask ? mask : NULL, nb, out + (size_t)i0 * P, err, errlen);
    }
    free(ids);
    free(mask);
    return rc;
}
