/* tests/test_text_cpu.c — the fp32 CPU text tower and the zero-shot scores against Hugging Face transformers.
 *
 * Fixture tests/fixtures/tinytext (scripts/make_text_fixtures.py: a perturbed random SiglipModel, HF fp32,
 * eager attention; the processor path's input_ids + attention_mask were stored beside the features, so this
 * checks the encoder independently of the tokenizer):
 *   - text features of every query (ASCII, accents, CJK, emoji, empty, control characters, > 64 tokens
 *     truncated): cosine >= 0.99999 and max |d| <= 1e-4 to get_text_features(...).pooler_output;
 *   - the attention mask matters (all-ones mask gives other features: the check above is not vacuous), rows do
 *     not depend on the batch they are in or on the thread count (bit for bit), ids outside the vocabulary fail;
 *   - zero-shot: the CPU vision tower on the pipeline's pixel_values and the text tower on the hypotheses give
 *     scores within 1e-4 of transformers' zero-shot-image-classification pipeline for every (image, label);
 *   - the "cpu" text backend gives the same rows as the forward;
 *   - a vision-only checkpoint (tiny16) fails to load a text tower with a message naming why, and a checkpoint
 *     without tokenizer.json (tiny196) says where it looked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "cli/zeroshot.h"
#include "kernel/backend.h"
#include "kernel/cpu/cpu_encoder.h"
#include "kernel/cpu/cpu_text.h"
#include "weights/config.h"
#include "weights/model_load.h"
#include "weights/text_load.h"

#define TOL_ABS 1e-4      /* fp32 port vs HF fp32, as for the vision tower */
#define TOL_COS 0.99999
#define TOL_ZS 1e-4       /* zero-shot probabilities vs the pipeline's */

static int32_t *read_i32(const char *path, size_t *count) {
    size_t len = 0;
    int32_t *p = sg_test_read_file(path, &len);
    if (p) *count = len / sizeof(int32_t);
    return p;
}

/* The HF attention mask (int32 0/1) as bytes. */
static uint8_t *mask_bytes(const int32_t *m, size_t n) {
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(m[i] != 0);
    return b;
}

static void check_features(const char *dir, const sg_text_model *tm) {
    char path[1200], err[2048];
    const int T = tm->cfg.max_positions, P = tm->cfg.projection_size;
    size_t nid = 0, nmask = 0, nref = 0;
    snprintf(path, sizeof path, "%s/text_ids.i32", dir);
    int32_t *ids = read_i32(path, &nid);
    snprintf(path, sizeof path, "%s/text_mask.i32", dir);
    int32_t *mk = read_i32(path, &nmask);
    snprintf(path, sizeof path, "%s/text_features.f32", dir);
    float *ref = sg_test_read_floats(path, &nref);
    CHECK(ids && mk && ref && nid == nmask && nid % T == 0 && nref == nid / T * P,
          "tinytext: reference files present with matching shapes (%zu ids, %zu features)", nid, nref);
    if (!ids || !mk || !ref || nid != nmask || nid % T || nref != nid / T * P) goto out;
    const int Q = (int)(nid / T);
    uint8_t *mask = mask_bytes(mk, nid);
    sg_cpu_text *pk = sg_cpu_text_pack(tm, 0, err, sizeof err);
    CHECK(pk != NULL, "tinytext: pack text weights%s%s", pk ? "" : ": ", pk ? "" : err);
    if (!pk) { free(mask); goto out; }
    float *out = sg_test_poisoned((size_t)Q * P);
    int rc = sg_cpu_text_forward(pk, ids, mask, Q, out, 0, err, sizeof err);
    CHECK(rc == 0, "tinytext: forward of %d queries%s%s", Q, rc ? ": " : "", rc ? err : "");
    double worst_cos = 1, worst_abs = 0;
    for (int q = 0; q < Q && rc == 0; q++) {
        double mabs = 0;
        double c = sg_test_cos_min(out + (size_t)q * P, ref + (size_t)q * P, 1, P, &mabs);
        int ntok = 0;
        for (int t = 0; t < T; t++) ntok += mask[(size_t)q * T + t];
        CHECK(c >= TOL_COS && mabs <= TOL_ABS, "tinytext query %d (%d tokens): cosine %.8f (>= %g), max |d| %.2e "
              "(<= %g) to HF get_text_features", q, ntok, c, TOL_COS, mabs, TOL_ABS);
        if (c < worst_cos) worst_cos = c;
        if (mabs > worst_abs) worst_abs = mabs;
    }
    printf("tinytext: %d queries, worst cosine %.9f, worst max |d| %.3e\n", Q, worst_cos, worst_abs);

    /* Without the mask the padded queries come out different: the mask is doing something. */
    float *nomask = malloc((size_t)Q * P * sizeof(float));
    sg_cpu_text_forward(pk, ids, NULL, Q, nomask, 0, err, sizeof err);
    double mabs = 0;
    double c0 = sg_test_cos_min(nomask, ref, 1, P, &mabs);
    CHECK(c0 < 0.9999, "tinytext query 0 without the attention mask differs from HF (cosine %.6f): the mask is used", c0);

    /* One query at a time, and on 1 thread: the same bits. */
    float *one = malloc((size_t)P * sizeof(float));
    int same = 1;
    for (int q = 0; q < Q; q++) {
        sg_cpu_text_forward(pk, ids + (size_t)q * T, mask + (size_t)q * T, 1, one, 1, err, sizeof err);
        same &= memcmp(one, out + (size_t)q * P, (size_t)P * sizeof(float)) == 0;
    }
    CHECK(same, "tinytext: each query alone on 1 thread gives the same bits as the batch on all threads");

    /* The backend entry gives the forward's rows. */
    sg_backend_opts bo = {SG_BACKEND_CPU, 0, 4, 0, SG_PRECISION_AUTO};
    char why[512];
    sg_text_backend *tb = sg_text_backend_create(tm, &bo, why, sizeof why, err, sizeof err);
    CHECK(tb && tb->dim == P && tb->seq_len == T, "text backend cpu created (dim %d, seq %d)%s%s", tb ? tb->dim : 0,
          tb ? tb->seq_len : 0, tb ? "" : ": ", tb ? "" : err);
    if (tb) {
        float *bo_out = malloc((size_t)4 * P * sizeof(float));
        rc = tb->embed(tb, ids, mask, 4, bo_out, err, sizeof err);
        CHECK(rc == 0 && memcmp(bo_out, out, (size_t)4 * P * sizeof(float)) == 0,
              "text backend cpu: 4 queries identical to the forward");
        rc = tb->embed(tb, ids, mask, 5, bo_out, err, sizeof err);
        CHECK(rc != 0 && strstr(err, "batch of 5"), "text backend cpu: batch above max_batch refused: %s", err);
        int32_t bad[64];
        memcpy(bad, ids, sizeof bad);
        bad[3] = tm->cfg.vocab_size;
        rc = tb->embed(tb, bad, mask, 1, bo_out, err, sizeof err);
        CHECK(rc != 0 && strstr(err, "outside the vocabulary"), "text backend cpu: token id = V refused: %s", err);
        free(bo_out);
        sg_text_backend_destroy(tb);
    }
    free(one);
    free(nomask);
    free(out);
    free(mask);
    sg_cpu_text_free(pk);
out:
    free(ids);
    free(mk);
    free(ref);
}

static void check_zeroshot(const char *dir, const sg_text_model *tm) {
    char path[1200], err[2048];
    snprintf(path, sizeof path, "%s/zeroshot.json", dir);
    size_t len = 0;
    char *js = sg_test_read_file(path, &len);
    cJSON *root = js ? cJSON_ParseWithLength(js, len) : NULL;
    free(js);
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(root, "labels");
    const cJSON *scores = cJSON_GetObjectItemCaseSensitive(root, "scores");
    CHECK(cJSON_IsArray(labels) && cJSON_IsArray(scores), "tinytext: zeroshot.json has labels and scores");
    if (!cJSON_IsArray(labels) || !cJSON_IsArray(scores)) { cJSON_Delete(root); return; }
    const int L = cJSON_GetArraySize(labels), N = cJSON_GetArraySize(scores);
    const int T = tm->cfg.max_positions, P = tm->cfg.projection_size;
    sg_model *vm = sg_model_load(dir, err, sizeof err);
    CHECK(vm != NULL, "tinytext: vision tower loads%s%s", vm ? "" : ": ", vm ? "" : err);
    size_t npx = 0, nid = 0, nmk = 0;
    snprintf(path, sizeof path, "%s/zs_pixels.f32", dir);
    float *px = sg_test_read_floats(path, &npx);
    snprintf(path, sizeof path, "%s/zs_ids.i32", dir);
    int32_t *ids = read_i32(path, &nid);
    snprintf(path, sizeof path, "%s/zs_mask.i32", dir);
    int32_t *mk = read_i32(path, &nmk);
    if (vm && px && ids && mk && nid == (size_t)L * T && nmk == nid && vm->cfg.hidden_size == P) {
        const int S = vm->cfg.image_size;
        CHECK(npx == (size_t)N * 3 * S * S, "tinytext: %d images of pixels", N);
        float *img = malloc((size_t)N * P * sizeof(float)), *lab = malloc((size_t)L * P * sizeof(float));
        uint8_t *mask = mask_bytes(mk, nmk);
        sg_cpu_text *pk = sg_cpu_text_pack(tm, 0, err, sizeof err);
        int ok = sg_cpu_forward(vm, px, N, img, NULL, 0, err, sizeof err) == 0 && pk &&
                 sg_cpu_text_forward(pk, ids, mask, L, lab, 0, err, sizeof err) == 0;
        CHECK(ok, "tinytext: image and label embeddings%s%s", ok ? "" : ": ", ok ? "" : err);
        char **names = calloc((size_t)L, sizeof *names);
        for (int j = 0; j < L; j++) names[j] = cJSON_GetArrayItem(labels, j)->valuestring;
        sg_zeroshot z;
        CHECK(tm->has_logit, "tinytext: logit_scale and logit_bias bound (%g, %g)", tm->logit_scale, tm->logit_bias);
        if (ok && sg_zeroshot_init(&z, names, L, lab, P, tm->logit_scale, tm->logit_bias, L, err, sizeof err) == 0) {
            double *s = malloc((size_t)L * sizeof(double));
            int *top = malloc((size_t)L * sizeof(int));
            for (int i = 0; i < N; i++) {
                sg_zeroshot_scores(&z, img + (size_t)i * P, s);
                sg_zeroshot_top(&z, s, top);
                const cJSON *ref = cJSON_GetArrayItem(scores, i);
                double worst = 0, best_ref = -1;
                const char *best_label = NULL;
                for (int j = 0; j < L; j++) {
                    const cJSON *r = cJSON_GetObjectItemCaseSensitive(ref, names[j]);
                    double d = r ? fabs(s[j] - r->valuedouble) : 1;
                    if (!(d <= worst)) worst = d;
                    if (r && r->valuedouble > best_ref) { best_ref = r->valuedouble; best_label = names[j]; }
                }
                CHECK(worst <= TOL_ZS, "zero-shot image %d: %d scores within %g of the HF pipeline's (max |d| %.2e)", i,
                      L, TOL_ZS, worst);
                CHECK(best_label && !strcmp(names[top[0]], best_label), "zero-shot image %d: top label '%s' as HF's",
                      i, names[top[0]]);
            }
            free(s);
            free(top);
            sg_zeroshot_free(&z);
        }
        free(names);
        free(img);
        free(lab);
        free(mask);
        sg_cpu_text_free(pk);
    } else {
        CHECK(0, "tinytext: zero-shot inputs present (%zu ids for %d labels, projection %d)", nid, L, P);
    }
    free(px);
    free(ids);
    free(mk);
    sg_model_free(vm);
    cJSON_Delete(root);
}

static void check_template(void) {
    char err[512], *out = NULL;
    int rc = sg_zeroshot_format("This is a photo of {}.", "dog", &out, err, sizeof err);
    CHECK(rc == 0 && !strcmp(out, "This is a photo of dog."), "template: HF's default with 'dog'");
    free(out);
    rc = sg_zeroshot_format("{{{}}}", "x", &out, err, sizeof err);
    CHECK(rc == 0 && !strcmp(out, "{x}"), "template: escaped braces as Python's str.format");
    if (rc == 0) free(out);
    CHECK(sg_zeroshot_format("no field", "x", &out, err, sizeof err) != 0 && strstr(err, "exactly one"),
          "template without {}: %s", err);
    CHECK(sg_zeroshot_format("{} and {}", "x", &out, err, sizeof err) != 0, "template with two {}: %s", err);
    CHECK(sg_zeroshot_format("a {0}", "x", &out, err, sizeof err) != 0 && strstr(err, "lone"), "template {0}: %s",
          err);
}

/* text_config parsing: defaults, and hostile or wrong values rejected with a message naming the field. */
static void check_config(void) {
    char err[512];
    sg_text_config c;
    const char *ok = "{\"model_type\": \"siglip\", \"text_config\": {\"model_type\": \"siglip_text_model\", "
                     "\"vocab_size\": 256000}, \"vision_config\": {}}";
    int rc = sg_text_config_parse(ok, strlen(ok), "cfg", &c, err, sizeof err);
    CHECK(rc == 0 && c.vocab_size == 256000 && c.hidden_size == 768 && c.num_layers == 12 && c.max_positions == 64 &&
              c.projection_size == 768 && c.num_heads == 12,
          "text_config: siglip2-base's (only vocab_size given) takes the SiglipTextConfig defaults%s%s", rc ? ": " : "",
          rc ? err : "");
    static const struct {
        const char *json, *expect;
    } bad[] = {
        {"{\"model_type\": \"siglip_vision_model\"}", "no text tower"},
        {"{\"hidden_size\": 8}", "no text tower"},
        {"{\"model_type\": \"siglip\", \"text_config\": [1]}", "text_config is an array"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"hidden_size\": 50, \"num_attention_heads\": 12}}",
         "not divisible"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"vocab_size\": 1e12}}", "text_config.vocab_size"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"max_position_embeddings\": -1}}", "max_position"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"model_type\": \"t5\"}}", "siglip_text_model"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"hidden_act\": \"relu\"}}", "hidden_act"},
        {"{\"model_type\": \"siglip\", \"text_config\": {\"vocab_size\": 5, \"vocab_size\": 6}}", "more than once"},
        {"{\"model_type\": \"siglip\"", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = sg_text_config_parse(bad[i].json, strlen(bad[i].json), "cfg", &c, err, sizeof err);
        CHECK(rc != 0 && strstr(err, bad[i].expect), "text_config %s rejected: %s", bad[i].json, err);
    }
}

int main(void) {
    check_config();
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char dir[1024], err[4096], tok[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tinytext", root);
    sg_text_model *tm = sg_text_model_load(dir, err, sizeof err);
    CHECK(tm != NULL, "tinytext: text tower loads%s%s", tm ? "" : ": ", tm ? "" : err);
    if (tm) {
        const sg_text_config *c = &tm->cfg;
        CHECK(c->hidden_size == 48 && c->num_heads == 3 && c->num_layers == 2 && c->max_positions == 64 &&
              c->projection_size == 32, "tinytext: config D %d H %d L %d T %d P %d", c->hidden_size, c->num_heads,
              c->num_layers, c->max_positions, c->projection_size);
        CHECK(sg_text_tokenizer_path(dir, tok, sizeof tok, err, sizeof err) == 0, "tinytext: tokenizer.json found");
        check_features(dir, tm);
        check_zeroshot(dir, tm);
        sg_text_model_free(tm);
    }
    check_template();

    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny16", root);
    tm = sg_text_model_load(dir, err, sizeof err);
    CHECK(!tm && strstr(err, "no text tower") && strstr(err, "config.json"),
          "tiny16 (SiglipVisionModel): text load fails naming why and where: %s", err);
    sg_text_model_free(tm);
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny16/model.safetensors", root);
    tm = sg_text_model_load(dir, err, sizeof err);
    CHECK(!tm && strstr(err, "no text tower"), "tiny16 weights file alone: %s", err);
    sg_text_model_free(tm);
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny196", root);
    int rc = sg_text_tokenizer_path(dir, tok, sizeof tok, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "tiny196/tokenizer.json"), "tiny196: no tokenizer.json, says where it looked: %s",
          err);
    return CHECK_DONE();
}
