/* cli/resume_check.c — --resume: the file's probe rows embedded again and scored again (see resume_check.h). */
#include "resume_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "json_text.h"
#include "shown_path.h"
#include "writer.h"

static double cosine(const float *a, const float *b, int d) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < d; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1 : 0);
}

/* 1 if two scores of one label (sigmoid(scale * cos + bias)) come from cosines within SG_RESUME_MAX_COS of each
 * other: their log-odds differ by at most scale * SG_RESUME_MAX_COS. Rows print scores with 9 digits (%.9g), so
 * below 1 - 1e-8 a score's log-odds are exact to ~1e-8 relative; two scores that close to 1 agree. */
static int scores_agree(double was, double now, double scale) {
    if (!isfinite(was) || was < 0 || was > 1) return 0;
    if (was > 1 - 1e-8 && now > 1 - 1e-8) return 1;
    const double lo = 1e-300;
    double a = was < lo ? lo : was > 1 - 1e-12 ? 1 - 1e-12 : was, b = now < lo ? lo : now > 1 - 1e-12 ? 1 - 1e-12 : now;
    return fabs(log(a / (1 - a)) - log(b / (1 - b))) <= scale * SG_RESUME_MAX_COS;
}

/* The row's labels block (row->labels: {"label":"<as the writer escapes it>","score":NUM},...) against the scores
 * this run's labels give the row's own embedding emb. 0, or -1 with the first label that is off in err. */
static int labels_agree(const sg_cli_resume_row *row, const float *emb, const sg_zeroshot *zs, char *err,
                        size_t errlen) {
    double *now = (double *)malloc((size_t)zs->n * sizeof *now), was;
    sg_cli_buf lab = {0}, esc = {0};
    if (!now) return 0; /* out of memory: no check rather than a refusal */
    sg_zeroshot_scores(zs, emb, now);
    size_t pos = 0;
    int rc = 0;
    while (rc == 0 && sg_cli_resume_next_label(row, &pos, &lab, &was)) {
        for (int j = 0; j < zs->n; j++) {
            sg_cli_buf_clear(&esc);
            sg_cli_json_put_string(&esc, zs->labels[j]); /* "label", quoted */
            if (esc.len - 2 != lab.len || memcmp(esc.p + 1, lab.p, lab.len) != 0) continue;
            if (!scores_agree(was, now[j], zs->scale)) {
                snprintf(err, errlen, "label \"%.200s\" scores %.4g in the file and %.4g with this run's labels",
                         zs->labels[j], was, now[j]);
                rc = -1;
            }
            break;
        }
    }
    sg_cli_buf_free(&lab);
    sg_cli_buf_free(&esc);
    free(now);
    return rc;
}

int sg_cli_resume_check(const sg_cli_resume_check_cfg *c, char *err, size_t errlen) {
    const sg_cli_resume_info *ri = c->info;
    const int D = c->backend->dim, S = c->pre->out_size, n = ri->nprobes;
    if (n == 0) return 0; /* a new file, or one of null rows only: nothing to compare */
    char shown[4096], shown_in[4096];
    sg_cli_shown_path(c->path, shown, sizeof shown);
    float *stored = (float *)malloc((size_t)D * sizeof *stored), *now = (float *)malloc((size_t)D * sizeof *now);
    uint8_t *px = (uint8_t *)malloc((size_t)S * S * 3);
    sg_cli_buf line = {0}, key = {0};
    int rc = 0, compared = 0, agreed = 0;
    char first_bad[4400] = "";
    if (!stored || !now || !px) goto done; /* out of memory: no check rather than a refusal */
    /* first, last, middle, then the quarters: the ends of the file first (the first run's rows, the last one's) */
    int order[SG_RESUME_PROBES], no = 0, mid = n / 2;
    if (n > 0) order[no++] = 0;
    if (n > 1) order[no++] = n - 1;
    if (mid > 0 && mid < n - 1) order[no++] = mid;
    for (int i = 1; i < n - 1; i++)
        if (i != mid) order[no++] = i;
    for (int o = 0; o < no && rc == 0; o++) {
        const int i = order[o];
        sg_cli_resume_row row;
        if (sg_cli_resume_probe_row(c->path, ri, i, D, &line, &key, stored, &row) != 0) continue;
        const unsigned long long lineno = (unsigned long long)ri->probe[i].lineno;
        char why[512];
        if (c->zs && row.has_labels && labels_agree(&row, stored, c->zs, why, sizeof why) != 0) {
            snprintf(err, errlen,
                     "%s:%llu: %s: resume with the --template (and text model) the file was written with, or write "
                     "to a new file",
                     shown, lineno, why);
            rc = -1;
            break;
        }
        struct stat st;
        char perr[512];
        if (compared == SG_RESUME_CHECK_IMAGES || strcmp(key.p, "-") == 0 || stat(key.p, &st) != 0 ||
            !S_ISREG(st.st_mode) || sg_preprocess_file(key.p, c->pre, px, NULL, perr, sizeof perr) != 0 ||
            sg_backend_embed(c->backend, px, 1, now, perr, sizeof perr) != 0)
            continue;
        if (c->normalize) sg_cli_normalize_row(now, D);
        const double cs = cosine(stored, now, D);
        compared++;
        sg_cli_shown_path(key.p, shown_in, sizeof shown_in);
        if (cs >= SG_RESUME_MIN_COSINE) {
            agreed++;
        } else {
            if (!first_bad[0])
                snprintf(first_bad, sizeof first_bad, "%s (line %llu) now has cosine %.4f to its row", shown_in, lineno,
                         cs);
            if (!c->quiet)
                fprintf(stderr,
                        "siglip2-embed: warning: %s (line %llu of %s) embeds differently now (cosine %.4f to its row): "
                        "changed since it was embedded? Its row is kept as it is\n",
                        shown_in, lineno, shown, cs);
        }
    }
    if (rc == 0 && compared && !agreed) {
        snprintf(err, errlen,
                 "%s: its rows were not made by these weights and settings: embedded again, %s%s (the same model "
                 "and settings give above %.2f); resume with the --weights and options the file was written with, or "
                 "write to a new file",
                 shown, first_bad, compared == 1 ? "" : compared == 2 ? ", and the other one too" : ", and the other two too",
                 SG_RESUME_MIN_COSINE);
        rc = -1;
    } else if (rc == 0 && c->verbose) {
        if (compared)
            fprintf(stderr,
                    "siglip2-embed: --resume: %d of %d of the file's inputs embedded again agree with their rows\n",
                    agreed, compared);
        else
            fprintf(stderr, "siglip2-embed: --resume: none of the file's probe rows' inputs could be read now: the "
                            "weights were not checked against its rows\n");
    }
done:
    free(stored);
    free(now);
    free(px);
    sg_cli_buf_free(&line);
    sg_cli_buf_free(&key);
    return rc;
}
