/* tests/test_gpu_text.c — the cuda text backend against HF fp32 and the CPU reference (tests/fixtures/tinytext and
 * tinytext_nomask: the same weights, HF's tokenizer returning a mask for the first and input_ids only for the
 * second, as for google/siglip2-base-patch16-224).
 *
 * Needs a GPU: without one (CI) every check prints SKIP with the reason. With one, for each fixture:
 *   1. the mask rule read from tokenizer_config.json agrees with what HF's tokenizer returned; the 12 queries
 *      (stored HF ids, the mask only under the mask rule): cosine >= 0.9999 to HF get_text_features fp32
 *      and to the CPU backend (bf16 GEMMs with fp32 accumulation, the vision path's tolerance);
 *   2. the inverted rule gives other features for query 0; (tinytext) a sequence with no attended position
 *      averages every key as the CPU reference (HF eager) does;
 *   3. a query alone and inside a batch of 12 agree (>= 0.99999); the packed rows (default) and all 64 rows
 *      (SG_CUDA_TEXT_COMPACT=0) agree (>= 0.99999);
 *   4. misuse (batch 0, batch > max, an id outside the vocabulary) returns an error, not a crash.
 * scripts/gpu-text-check.sh runs it, then the full-size accuracy and timing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/backend.h"
#include "kernel/gpu.h"
#include "weights/text_load.h"

static const double k_min_cos = 0.9999;

/* One fixture: its text tower on the cuda backend against HF and the cpu backend, under the fixture's mask rule
 * (tokenizer_config.json, as the command reads it; checked against what HF's tokenizer returned: text_mask.i32
 * is stored exactly when it returned a mask). first: also the checks that do not depend on the fixture. */
static void check_fixture(const char *root, const char *name, int first) {
    char err[4096], why[4608], dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", root, name);
    sg_text_model *m = sg_text_model_load(dir, err, sizeof err);
    CHECK(m != NULL, "%s text tower loads%s%s", name, m ? "" : ": ", m ? "" : err);
    if (!m) return;
    sg_backend_opts o = {SG_BACKEND_CUDA, 0, 16, 0, SG_PRECISION_AUTO};
    sg_text_backend *gb = sg_text_backend_create(m, &o, why, sizeof why, err, sizeof err);
    o.kind = SG_BACKEND_CPU;
    sg_text_backend *cb = sg_text_backend_create(m, &o, why, sizeof why, err, sizeof err);
    CHECK(gb && cb, "%s: cuda and cpu text backends%s%s", name, gb ? "" : ": ", gb ? "" : err);
    size_t nid = 0, nmk = 0, nref = 0;
    size_t nnt = 0;
    int32_t *ids = sg_test_read_i32(dir, "text_ids.i32", &nid), *mk = sg_test_read_i32(dir, "text_mask.i32", &nmk);
    int32_t *ntok = sg_test_read_i32(dir, "text_ntok.i32", &nnt);
    char p[1200];
    snprintf(p, sizeof p, "%s/text_features.f32", dir);
    float *ref = sg_test_read_floats(p, &nref);
    int amask = -1;
    int rrc = sg_text_mask_rule(dir, &amask, why, sizeof why, err, sizeof err);
    CHECK(rrc == 0 && amask == (mk != NULL), "%s: mask rule %s agrees with HF's tokenizer (%s)", name,
          amask == 1 ? "mask" : amask == 0 ? "no mask" : "?", rrc ? err : why);
    const int shapes = gb && ids && ntok && ref && nid % (size_t)gb->seq_len == 0 &&
                       nnt == nid / (size_t)gb->seq_len && nref == nnt * (size_t)gb->dim && (!mk || nmk == nid);
    CHECK(shapes, "%s: reference files with matching shapes (%zu ids, %zu features)", name, nid, nref);
    if (!gb || !cb || !shapes || rrc || amask != (mk != NULL)) goto out;
    {
        const int T = gb->seq_len, P = gb->dim, Q = (int)(nid / T);
        /* the pad mask: HF's when it returned one, else what the command would build (1 on the first
         * min(tokens, T) positions), which only the inverted rule uses */
        uint8_t *pads = malloc(nid);
        for (int q = 0; q < Q; q++)
            for (int t = 0; t < T; t++)
                pads[(size_t)q * T + t] = mk ? mk[(size_t)q * T + t] != 0 : t < ntok[q];
        const uint8_t *mask = amask ? pads : NULL;
        float *go = sg_test_poisoned((size_t)Q * P), *co = sg_test_poisoned((size_t)Q * P);
        int rc = gb->embed(gb, ids, mask, Q, go, err, sizeof err);
        CHECK(rc == 0, "%s cuda: %d queries%s%s", name, Q, rc ? ": " : "", rc ? err : "");
        cb->embed(cb, ids, mask, Q, co, err, sizeof err);
        for (int q = 0; q < Q && rc == 0; q++) {
            double ma = 0, mb = 0;
            double c_hf = sg_test_cos_min(go + (size_t)q * P, ref + (size_t)q * P, 1, P, &ma);
            double c_cpu = sg_test_cos_min(go + (size_t)q * P, co + (size_t)q * P, 1, P, &mb);
            CHECK(c_hf >= k_min_cos && c_cpu >= k_min_cos,
                  "%s cuda query %d (%s): cosine %.6f to HF fp32, %.6f to the CPU backend (>= %g; max |d| %.2e)", name,
                  q, amask ? "pads masked" : "no mask", c_hf, c_cpu, k_min_cos, ma);
        }
        /* the inverted rule gives other features */
        float *one = sg_test_poisoned((size_t)P), *cone = sg_test_poisoned((size_t)P);
        gb->embed(gb, ids, amask ? NULL : pads, 1, one, err, sizeof err);
        double d = 0;
        CHECK(sg_test_cos_min(one, ref, 1, P, &d) < 0.9999, "%s cuda: query 0 under the inverted mask rule differs "
              "from HF's", name);
        if (first) { /* no attended key = uniform, as the CPU reference */
            uint8_t *none = calloc((size_t)T, 1);
            gb->embed(gb, ids, none, 1, one, err, sizeof err);
            cb->embed(cb, ids, none, 1, cone, err, sizeof err);
            double cu = sg_test_cos_min(one, cone, 1, P, &d);
            CHECK(cu >= k_min_cos, "cuda: a sequence with no attended key matches the CPU reference (cosine %.6f)",
                  cu);
            free(none);
        }
        /* alone vs in a batch */
        double worst = 1;
        for (int q = 0; q < Q; q++) {
            gb->embed(gb, ids + (size_t)q * T, mask ? mask + (size_t)q * T : NULL, 1, one, err, sizeof err);
            double c = sg_test_cos_min(one, go + (size_t)q * P, 1, P, &d);
            if (!(c >= worst)) worst = c;
        }
        CHECK(worst >= 0.99999, "%s cuda: each query alone agrees with the batch of %d (worst cosine %.7f)", name, Q,
              worst);
        /* packed rows vs all 64 rows with the mask (without a mask both compute every row) */
        setenv("SG_CUDA_TEXT_COMPACT", "0", 1);
        o.kind = SG_BACKEND_CUDA;
        sg_text_backend *fb = sg_text_backend_create(m, &o, why, sizeof why, err, sizeof err);
        unsetenv("SG_CUDA_TEXT_COMPACT");
        float *fo = sg_test_poisoned((size_t)Q * P);
        rc = fb ? fb->embed(fb, ids, mask, Q, fo, err, sizeof err) : -1;
        double wf = rc == 0 ? sg_test_cos_min(fo, go, Q, P, &d) : 0;
        CHECK(rc == 0 && wf >= 0.99999, "%s cuda: packed rows agree with all 64 rows%s (worst cosine %.7f)%s%s", name,
              amask ? " + mask" : "", wf, rc ? ": " : "", rc ? err : "");
        sg_text_backend_destroy(fb);
        free(fo);
        if (first) { /* misuse */
            CHECK(gb->embed(gb, ids, mask, 0, go, err, sizeof err) != 0, "cuda: batch 0 refused: %s", err);
            CHECK(gb->embed(gb, ids, mask, 17, go, err, sizeof err) != 0, "cuda: batch 17 > max 16 refused: %s", err);
            int32_t *bad = malloc((size_t)T * sizeof *bad);
            memcpy(bad, ids, (size_t)T * sizeof *bad);
            bad[1] = -1;
            CHECK(gb->embed(gb, bad, mask, 1, go, err, sizeof err) != 0 && strstr(err, "outside the vocabulary"),
                  "cuda: id -1 refused: %s", err);
            free(bad);
        }
        free(one);
        free(cone);
        free(go);
        free(co);
        free(pads);
    }
out:
    free(ids);
    free(mk);
    free(ntok);
    free(ref);
    sg_text_backend_destroy(gb);
    sg_text_backend_destroy(cb);
    sg_text_model_free(m);
}

int main(void) {
    char err[4096];
    sg_gpu_info g;
    if (sg_gpu_query(0, &g, err, sizeof err) != 0) {
        SKIP("cuda text backend vs HF and the CPU reference (tinytext, tinytext_nomask): no usable GPU here (%s)",
             err);
        return 0;
    }
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    printf("GPU: %s\n", g.name);
    check_fixture(root, "tinytext", 1);
    check_fixture(root, "tinytext_nomask", 0);
    return CHECK_DONE();
}
