/* tests/tools/sg_text_check.c — the text tower of a checkpoint against HF references, and its throughput.
 *
 *   sg_text_check DIR BACKEND [BATCH ROUNDS]
 *
 * DIR holds a SiglipModel checkpoint and references from scripts/make_text_fixtures.py (text_ids.i32,
 * text_features.f32: HF fp32 get_text_features of what the checkpoint's tokenizer returned; text_mask.i32 when
 * that included an attention mask). The mask rule is the command's (sg_text_mask_rule: DIR/tokenizer_config.json)
 * and must agree with the references (a mask stored exactly when the rule says HF returns one); without a mask
 * the backend gets none and every position is attended. "attention_mask" in each line says which.
 * BACKEND: cpu | cuda | auto. Prints one JSON line per measurement:
 *   {"what": "load", ...}      text tower load + backend creation (weight packing or upload), seconds
 *   {"what": "accuracy", ...}  per-query cosine to HF fp32 and the worst (and its max |d| relative to max |ref|)
 *   {"what": "throughput", ...} with BATCH > 0: ROUNDS timed calls of BATCH queries after one warm-up, twice:
 *     "ids": "fixture" (the reference queries repeated: a few hundred distinct tokens) and "random" (13 random
 *     ids per query over the whole vocabulary after <bos>: ~13 x BATCH distinct rows to widen and upload, the
 *     worst case for the per-batch token upload; masked to those 14 under the mask rule);
 *     queries/s = BATCH x ROUNDS / time, through the backend API
 *     (ids in, rows out: tokenisation excluded, as HF's get_text_features is timed on ids).
 * Exit 0 when it ran (the caller judges the numbers), 1 on an error (stderr: "unavailable: reason").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "kernel/backend.h"
#include "weights/text_load.h"

static double now_s(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }

static int bench(sg_text_backend *b, const char *label, const int32_t *ids, const uint8_t *mask, int batch,
                 int rounds, float *out, int amask) {
    char err[2048];
    if (b->embed(b, ids, mask, batch, out, err, sizeof err) != 0) {
        fprintf(stderr, "unavailable: %s\n", err);
        return -1;
    }
    double t0 = now_s();
    for (int r = 0; r < rounds; r++)
        if (b->embed(b, ids, mask, batch, out, err, sizeof err) != 0) {
            fprintf(stderr, "unavailable: %s\n", err);
            return -1;
        }
    double dt = now_s() - t0;
    printf("{\"what\": \"throughput\", \"backend\": \"%s\", \"attention_mask\": %s, \"ids\": \"%s\", "
           "\"batch\": %d, \"rounds\": %d, \"seconds\": %.4f, \"queries_per_s\": %.1f, \"ms_per_batch\": %.3f}\n",
           b->name, amask ? "true" : "false", label, batch, rounds, dt, batch * (double)rounds / dt,
           dt / rounds * 1e3);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sg_text_check DIR cpu|cuda|auto [BATCH ROUNDS]\n");
        return 2;
    }
    const char *dir = argv[1];
    const int batch = argc > 3 ? atoi(argv[3]) : 0, rounds = argc > 4 ? atoi(argv[4]) : 10;
    sg_backend_opts o = {SG_BACKEND_AUTO, 0, batch > 64 ? batch : 64, 0, SG_PRECISION_AUTO};
    if (sg_backend_parse(argv[2], &o.kind) != 0) {
        fprintf(stderr, "unavailable: unknown backend '%s'\n", argv[2]);
        return 1;
    }
    char err[4096], why[1024];
    double t0 = now_s();
    sg_text_model *m = sg_text_model_load(dir, err, sizeof err);
    if (!m) {
        fprintf(stderr, "unavailable: %s\n", err);
        return 1;
    }
    double t1 = now_s();
    sg_text_backend *b = sg_text_backend_create(m, &o, why, sizeof why, err, sizeof err);
    if (!b) {
        fprintf(stderr, "unavailable: %s\n", err);
        sg_text_model_free(m);
        return 1;
    }
    double t2 = now_s();
    int amask = 1;
    char mwhy[4608];
    if (sg_text_mask_rule(dir, &amask, mwhy, sizeof mwhy, err, sizeof err) != 0) {
        fprintf(stderr, "unavailable: %s\n", err);
        sg_text_backend_destroy(b);
        sg_text_model_free(m);
        return 1;
    }
    printf("{\"what\": \"load\", \"backend\": \"%s\", \"load_s\": %.4f, \"backend_s\": %.4f, \"why\": \"%s\", "
           "\"attention_mask\": %s}\n", b->name, t1 - t0, t2 - t1, why, amask ? "true" : "false");
    const int T = b->seq_len, P = b->dim;
    size_t nid = 0, nmk = 0, nref = 0;
    int32_t *ids = sg_test_read_i32(dir, "text_ids.i32", &nid), *mk = sg_test_read_i32(dir, "text_mask.i32", &nmk);
    char p[4200];
    snprintf(p, sizeof p, "%s/text_features.f32", dir);
    float *ref = sg_test_read_floats(p, &nref);
    int rc = 0;
    if (!ids || !ref || (mk && nid != nmk) || nid % T || nref != nid / T * P) {
        fprintf(stderr, "unavailable: %s: no usable text_ids.i32 / text_mask.i32 / text_features.f32\n", dir);
        rc = 1;
        goto out;
    }
    if (amask != (mk != NULL)) {
        fprintf(stderr, "unavailable: %s: the references were made %s an attention mask but %s\n", dir,
                mk ? "with" : "without", mwhy);
        rc = 1;
        goto out;
    }
    const int Q = (int)(nid / T);
    uint8_t *mask = NULL; /* the mask the command would pass: none without the mask rule */
    if (amask) {
        mask = malloc(nid);
        for (size_t i = 0; i < nid; i++) mask[i] = mk[i] != 0;
    }
    float *out = malloc((size_t)(Q > batch ? Q : batch) * P * sizeof(float));
    double worst = 1, worst_rel = 0;
    printf("{\"what\": \"accuracy\", \"backend\": \"%s\", \"attention_mask\": %s, \"cosines\": [", b->name,
           amask ? "true" : "false");
    for (int q0 = 0; q0 < Q && rc == 0; q0 += b->max_batch) {
        int n = Q - q0 < b->max_batch ? Q - q0 : b->max_batch;
        if (b->embed(b, ids + (size_t)q0 * T, mask ? mask + (size_t)q0 * T : NULL, n, out + (size_t)q0 * P, err,
                     sizeof err)) {
            fprintf(stderr, "unavailable: %s\n", err);
            rc = 1;
        }
    }
    for (int q = 0; q < Q && rc == 0; q++) {
        double mabs = 0, c = sg_test_cos_min(out + (size_t)q * P, ref + (size_t)q * P, 1, P, &mabs), mref = 0;
        for (int i = 0; i < P; i++) mref = fmax(mref, fabs(ref[(size_t)q * P + i]));
        printf("%s%.7f", q ? ", " : "", c);
        if (!(c >= worst)) worst = c;
        if (mabs / mref > worst_rel) worst_rel = mabs / mref;
    }
    printf("], \"queries\": %d, \"worst_cosine\": %.7f, \"worst_max_abs_rel\": %.3e}\n", Q, worst, worst_rel);
    fflush(stdout);
    if (rc == 0 && batch > 0) {
        int32_t *bi = malloc((size_t)batch * T * sizeof *bi);
        uint8_t *bm = malloc((size_t)batch * T);
        for (int i = 0; i < batch; i++) {
            memcpy(bi + (size_t)i * T, ids + (size_t)(i % Q) * T, (size_t)T * sizeof *bi);
            if (mask) memcpy(bm + (size_t)i * T, mask + (size_t)(i % Q) * T, (size_t)T);
        }
        rc = bench(b, "fixture", bi, mask ? bm : NULL, batch, rounds, out, amask) ? 1 : 0;
        uint64_t s = 12345;
        for (int i = 0; i < batch && rc == 0; i++) {
            int32_t *r = bi + (size_t)i * T;
            uint8_t *rm = bm + (size_t)i * T;
            for (int t = 0; t < T; t++) {
                r[t] = t == 0 ? 2 : t <= 13 ? (int32_t)(sg_test_splitmix64(&s) % (uint64_t)m->cfg.vocab_size) : 0;
                rm[t] = t <= 13;
            }
        }
        if (rc == 0) rc = bench(b, "random", bi, mask ? bm : NULL, batch, rounds, out, amask) ? 1 : 0;
        free(bi);
        free(bm);
    }
    free(mask);
    free(out);
out:
    free(ids);
    free(mk);
    free(ref);
    sg_text_backend_destroy(b);
    sg_text_model_free(m);
    return rc;
}
