/* tests/test_text_cpu.c — the fp32 CPU text tower and the zero-shot scores against Hugging Face transformers.
 *
 * Fixtures tests/fixtures/tinytext and tinytext_nomask (scripts/make_text_fixtures.py: one perturbed random
 * SiglipModel, HF fp32, eager attention; tinytext's tokenizer has the class default model_input_names, so HF
 * masks the pads, tinytext_nomask's lists only input_ids, as google/siglip2-base-patch16-224's does, so HF
 * attends to every position). The processor path's input_ids (and attention_mask when HF returned one) were
 * stored beside the features, so this checks the encoder independently of the tokenizer; for each fixture:
 *   - the mask rule read from tokenizer_config.json (sg_text_mask_rule) agrees with what HF's tokenizer
 *     returned, and the features computed under that rule match HF's while the inverted rule's do not;
 *   - text features of every query (ASCII, accents, CJK, emoji, empty, control characters, > 64 tokens
 *     truncated): cosine >= 0.99999 and max |d| <= 1e-4 to get_text_features(...).pooler_output;
 *   - rows do not depend on the batch they are in or on the thread count (bit for bit), ids outside the
 *     vocabulary fail;
 *   - zero-shot: the CPU vision tower on the pipeline's pixel_values and the text tower on the hypotheses give
 *     scores within 1e-4 of transformers' zero-shot-image-classification pipeline for every (image, label);
 *   - the "cpu" text backend gives the same rows as the forward;
 *   - tokenizer_config.json parsing: model_input_names with and without attention_mask, absent file or key
 *     (class default), and hostile files (wrong types, duplicate key, not JSON, 2.1M values, deep nesting, a
 *     directory) rejected with a message naming the file;
 *   - a vision-only checkpoint (tiny16) fails to load a text tower with a message naming why, and a checkpoint
 *     without tokenizer.json (tiny196) says where it looked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The mask the command builds from token counts (cli/text_run.c: 1 on the first min(ntok, T) positions). */
static uint8_t *pad_mask(const int32_t *ntok, int Q, int T) {
    uint8_t *b = malloc((size_t)Q * T);
    for (int q = 0; q < Q; q++)
        for (int t = 0; t < T; t++) b[(size_t)q * T + t] = t < ntok[q];
    return b;
}

/* The fixture's mask rule as the command reads it (tokenizer_config.json), checked against what HF's tokenizer
 * returned when the references were made: text_mask.i32 exists exactly when it returned an attention_mask.
 * -1 when the rule cannot be read. */
static int fixture_rule(const char *name, const char *dir, int hf_gave_mask) {
    char why[4608], err[2048];
    int amask = -1;
    int rc = sg_text_mask_rule(dir, &amask, why, sizeof why, err, sizeof err);
    CHECK(rc == 0 && amask == hf_gave_mask,
          "%s: tokenizer_config.json says attention mask %s, and HF's tokenizer returned %s (%s)", name,
          rc ? "?" : amask ? "yes" : "no", hf_gave_mask ? "one" : "none (input_ids only)", rc ? err : why);
    return rc == 0 ? amask : -1;
}

static void check_features(const char *name, const char *dir, const sg_text_model *tm) {
    char path[1200], err[2048];
    const int T = tm->cfg.max_positions, P = tm->cfg.projection_size;
    size_t nid = 0, nmask = 0, nref = 0, nnt = 0;
    snprintf(path, sizeof path, "%s/text_ids.i32", dir);
    int32_t *ids = read_i32(path, &nid);
    snprintf(path, sizeof path, "%s/text_mask.i32", dir);
    int32_t *mk = read_i32(path, &nmask); /* absent when HF's tokenizer returned no mask */
    snprintf(path, sizeof path, "%s/text_ntok.i32", dir);
    int32_t *ntok = read_i32(path, &nnt);
    snprintf(path, sizeof path, "%s/text_features.f32", dir);
    float *ref = sg_test_read_floats(path, &nref);
    const int shapes = ids && ntok && ref && nid % T == 0 && nref == nid / T * P && nnt == nid / T &&
                       (!mk || nmask == nid);
    CHECK(shapes, "%s: reference files present with matching shapes (%zu ids, %zu features, mask %s)", name, nid,
          nref, mk ? "stored" : "none");
    const int amask = fixture_rule(name, dir, mk != NULL);
    if (!shapes || amask < 0) goto out;
    const int Q = (int)(nid / T);
    for (int q = 0; q < Q; q++) ntok[q] = ntok[q] < T ? ntok[q] : T;
    uint8_t *pads = pad_mask(ntok, Q, T);
    if (mk) {
        uint8_t *hf = mask_bytes(mk, nid);
        CHECK(memcmp(hf, pads, nid) == 0, "%s: HF's attention mask is 1 on the first min(tokens, 64) positions", name);
        free(hf);
    }
    /* what the command passes: the pad mask when the tokenizer returns one, else nothing */
    const uint8_t *mask = amask ? pads : NULL;
    sg_cpu_text *pk = sg_cpu_text_pack(tm, 0, err, sizeof err);
    CHECK(pk != NULL, "%s: pack text weights%s%s", name, pk ? "" : ": ", pk ? "" : err);
    if (!pk) { free(pads); goto out; }
    float *out = sg_test_poisoned((size_t)Q * P);
    int rc = sg_cpu_text_forward(pk, ids, mask, Q, out, 0, err, sizeof err);
    CHECK(rc == 0, "%s: forward of %d queries%s%s", name, Q, rc ? ": " : "", rc ? err : "");
    double worst_cos = 1, worst_abs = 0;
    for (int q = 0; q < Q && rc == 0; q++) {
        double mabs = 0;
        double c = sg_test_cos_min(out + (size_t)q * P, ref + (size_t)q * P, 1, P, &mabs);
        CHECK(c >= TOL_COS && mabs <= TOL_ABS, "%s query %d (%d tokens, %s): cosine %.8f (>= %g), max |d| %.2e "
              "(<= %g) to HF get_text_features", name, q, ntok[q], amask ? "pads masked" : "no mask", c, TOL_COS,
              mabs, TOL_ABS);
        if (c < worst_cos) worst_cos = c;
        if (mabs > worst_abs) worst_abs = mabs;
    }
    printf("%s: %d queries, worst cosine %.9f, worst max |d| %.3e\n", name, Q, worst_cos, worst_abs);

    /* The inverted rule gives other features for the padded queries: the checks above are not vacuous. */
    float *inv = malloc((size_t)Q * P * sizeof(float));
    sg_cpu_text_forward(pk, ids, amask ? NULL : pads, Q, inv, 0, err, sizeof err);
    double mabs = 0;
    double c0 = sg_test_cos_min(inv, ref, 1, P, &mabs);
    CHECK(c0 < 0.9999, "%s query 0 %s differs from HF (cosine %.6f): the mask rule matters", name,
          amask ? "without the attention mask" : "with a pad mask", c0);

    /* One query at a time, and on 1 thread: the same bits. */
    float *one = malloc((size_t)P * sizeof(float));
    int same = 1;
    for (int q = 0; q < Q; q++) {
        sg_cpu_text_forward(pk, ids + (size_t)q * T, mask ? mask + (size_t)q * T : NULL, 1, one, 1, err, sizeof err);
        same &= memcmp(one, out + (size_t)q * P, (size_t)P * sizeof(float)) == 0;
    }
    CHECK(same, "%s: each query alone on 1 thread gives the same bits as the batch on all threads", name);

    /* The backend entry gives the forward's rows. */
    sg_backend_opts bo = {SG_BACKEND_CPU, 0, 4, 0, SG_PRECISION_AUTO};
    char why[512];
    sg_text_backend *tb = sg_text_backend_create(tm, &bo, why, sizeof why, err, sizeof err);
    CHECK(tb && tb->dim == P && tb->seq_len == T, "%s: text backend cpu created (dim %d, seq %d)%s%s", name,
          tb ? tb->dim : 0, tb ? tb->seq_len : 0, tb ? "" : ": ", tb ? "" : err);
    if (tb) {
        float *bo_out = malloc((size_t)4 * P * sizeof(float));
        rc = tb->embed(tb, ids, mask, 4, bo_out, err, sizeof err);
        CHECK(rc == 0 && memcmp(bo_out, out, (size_t)4 * P * sizeof(float)) == 0,
              "%s: text backend cpu: 4 queries identical to the forward", name);
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
    free(inv);
    free(out);
    free(pads);
    sg_cpu_text_free(pk);
out:
    free(ids);
    free(mk);
    free(ntok);
    free(ref);
}

static void check_zeroshot(const char *name, const char *dir, const sg_text_model *tm) {
    char path[1200], err[2048];
    snprintf(path, sizeof path, "%s/zeroshot.json", dir);
    size_t len = 0;
    char *js = sg_test_read_file(path, &len);
    cJSON *root = js ? cJSON_ParseWithLength(js, len) : NULL;
    free(js);
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(root, "labels");
    const cJSON *scores = cJSON_GetObjectItemCaseSensitive(root, "scores");
    CHECK(cJSON_IsArray(labels) && cJSON_IsArray(scores), "%s: zeroshot.json has labels and scores", name);
    if (!cJSON_IsArray(labels) || !cJSON_IsArray(scores)) { cJSON_Delete(root); return; }
    const int L = cJSON_GetArraySize(labels), N = cJSON_GetArraySize(scores);
    const int T = tm->cfg.max_positions, P = tm->cfg.projection_size;
    sg_model *vm = sg_model_load(dir, err, sizeof err);
    CHECK(vm != NULL, "%s: vision tower loads%s%s", name, vm ? "" : ": ", vm ? "" : err);
    size_t npx = 0, nid = 0, nmk = 0;
    snprintf(path, sizeof path, "%s/zs_pixels.f32", dir);
    float *px = sg_test_read_floats(path, &npx);
    snprintf(path, sizeof path, "%s/zs_ids.i32", dir);
    int32_t *ids = read_i32(path, &nid);
    snprintf(path, sizeof path, "%s/zs_mask.i32", dir);
    int32_t *mk = read_i32(path, &nmk); /* absent when the pipeline's tokenizer returned no mask */
    const int amask = fixture_rule(name, dir, mk != NULL);
    if (vm && px && ids && amask >= 0 && nid == (size_t)L * T && (!mk || nmk == nid) && vm->cfg.hidden_size == P) {
        const int S = vm->cfg.image_size;
        CHECK(npx == (size_t)N * 3 * S * S, "%s: %d images of pixels", name, N);
        float *img = malloc((size_t)N * P * sizeof(float)), *lab = malloc((size_t)L * P * sizeof(float));
        uint8_t *mask = mk ? mask_bytes(mk, nmk) : NULL;
        sg_cpu_text *pk = sg_cpu_text_pack(tm, 0, err, sizeof err);
        int ok = sg_cpu_forward(vm, px, N, img, NULL, 0, err, sizeof err) == 0 && pk &&
                 sg_cpu_text_forward(pk, ids, amask ? mask : NULL, L, lab, 0, err, sizeof err) == 0;
        CHECK(ok, "%s: image and label embeddings%s%s", name, ok ? "" : ": ", ok ? "" : err);
        char **names = calloc((size_t)L, sizeof *names);
        for (int j = 0; j < L; j++) names[j] = cJSON_GetArrayItem(labels, j)->valuestring;
        sg_zeroshot z;
        CHECK(tm->has_logit, "%s: logit_scale and logit_bias bound (%g, %g)", name, tm->logit_scale, tm->logit_bias);
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
                CHECK(worst <= TOL_ZS, "%s zero-shot image %d: %d scores within %g of the HF pipeline's (max |d| "
                      "%.2e)", name, i, L, TOL_ZS, worst);
                CHECK(best_label && !strcmp(names[top[0]], best_label), "%s zero-shot image %d: top label '%s' as "
                      "HF's", name, i, names[top[0]]);
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
        CHECK(0, "%s: zero-shot inputs present (%zu ids for %d labels, projection %d)", name, nid, L, P);
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
    /* Python's str.format takes {0}, {:} and {0:} for the one positional argument exactly as {} (session 28:
     * they were refused as "a lone '{'"); HF's pipeline formats the hypothesis that way */
    const char *same[] = {"a {} b", "a {0} b", "a {:} b", "a {0:} b"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        out = NULL;
        rc = sg_zeroshot_format(same[i], "x", &out, err, sizeof err);
        CHECK(rc == 0 && out && !strcmp(out, "a x b"), "template %s gives what Python's format does ('%s')", same[i],
              rc == 0 ? out : err);
        if (rc == 0) free(out);
    }
    rc = sg_zeroshot_format("{{{0}}}", "x", &out, err, sizeof err);
    CHECK(rc == 0 && !strcmp(out, "{x}"), "template: {0} between escaped braces");
    if (rc == 0) free(out);
    CHECK(sg_zeroshot_format("{} and {0}", "x", &out, err, sizeof err) != 0 && strstr(err, "exactly one"),
          "template with {} and {0} (two fields): %s", err);
    /* any other field formats something else, or fails in Python: refused, the message naming the field */
    const char *other[] = {"a {!r}", "a { }", "a {1}", "a {name}", "a {:>5}", "a {0!s}", "a {0.x}", "a {:{}}"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "field %s is not supported", other[i] + 2);
        CHECK(sg_zeroshot_format(other[i], "x", &out, err, sizeof err) != 0 && strstr(err, want) &&
                  strstr(err, "use {} (or {0})"),
              "template '%s' refused naming the field: %s", other[i], err);
    }
    CHECK(sg_zeroshot_format("a {0", "x", &out, err, sizeof err) != 0 && strstr(err, "byte 2 is never closed"),
          "template with an unclosed '{': %s", err);
    CHECK(sg_zeroshot_format("a } {}", "x", &out, err, sizeof err) != 0 && strstr(err, "lone '}' at byte 2"),
          "template with a lone '}': %s", err);
    /* a template that is not UTF-8 is the template's error, not the label's (session 28: the tokenizer blamed
     * "label ..."), whatever the label */
    CHECK(sg_zeroshot_format("caf\xe9 {}", "dog", &out, err, sizeof err) != 0 && strstr(err, "--template") &&
              strstr(err, "UTF-8") && strstr(err, "offset 3"),
          "template not UTF-8: refused naming the template: %s", err);
    CHECK(sg_zeroshot_format("{} \xed\xa0\x80", "dog", &out, err, sizeof err) != 0 && strstr(err, "UTF-8"),
          "template with an encoded surrogate (not UTF-8 for Python either): %s", err);
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

/* tokenizer_config.json's model_input_names (HF returns an attention_mask exactly when it lists one), and
 * hostile or wrong files rejected with a message naming the file. */
static void check_tokenizer_config(void) {
    char err[512];
    static const struct {
        const char *json;
        int mask;
    } ok[] = {
        {"{}", 1}, /* the class default applies */
        {"{\"tokenizer_class\": \"GemmaTokenizer\", \"padding_side\": \"right\"}", 1},
        {"{\"model_input_names\": [\"input_ids\"]}", 0}, /* google/siglip2-base-patch16-224 */
        {"{\"model_input_names\": [\"input_ids\", \"attention_mask\"]}", 1},
        {"{\"model_input_names\": []}", 0},
        {"{\"model_input_names\": [\"input_ids\", \"Attention_Mask\"]}", 0}, /* Python's `in` is exact */
        {"{\"model_input_names\": [\"input_ids\", \"token_type_ids\", \"attention_mask\"]}", 1},
        {"{\"x\": {\"model_input_names\": [\"input_ids\"]}}", 1}, /* only the top level counts */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int m = -1;
        int rc = sg_tokenizer_config_parse(ok[i].json, strlen(ok[i].json), "tc.json", &m, err, sizeof err);
        CHECK(rc == 0 && m == ok[i].mask, "tokenizer_config %s: attention mask %d (expected %d)%s%s", ok[i].json, m,
              ok[i].mask, rc ? ": " : "", rc ? err : "");
    }
    static const struct {
        const char *json, *expect;
    } bad[] = {
        {"{\"model_input_names\": null}", "model_input_names is null, expected an array of strings"},
        {"{\"model_input_names\": \"input_ids\"}", "is a string, expected an array"},
        {"{\"model_input_names\": {\"input_ids\": 1}}", "is an object"},
        {"{\"model_input_names\": [\"input_ids\", 7]}", "model_input_names[1] is a number"},
        {"{\"model_input_names\": [\"input_ids\"], \"model_input_names\": [\"input_ids\", \"attention_mask\"]}",
         "more than once"},
        {"{\"model_input_names\": [\"input_ids\"", "not valid JSON"},
        {"[\"input_ids\"]", "top level is an array"},
        {"{} {}", "after the JSON object"},
        {"", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int m = -1;
        int rc = sg_tokenizer_config_parse(bad[i].json, strlen(bad[i].json), "tc.json", &m, err, sizeof err);
        CHECK(rc != 0 && strstr(err, bad[i].expect) && !strncmp(err, "tc.json: ", 9) && m == -1,
              "tokenizer_config %s rejected naming the file: %s", bad[i].json, err);
    }
    /* more values than any real file: refused before cJSON allocates for them */
    size_t n = 2100000;
    char *big = malloc(2 * n + 64);
    size_t k = (size_t)sprintf(big, "{\"model_input_names\": [\"input_ids\"], \"x\": [");
    for (size_t i = 0; i < n; i++) k += (size_t)sprintf(big + k, i ? ",0" : "0");
    k += (size_t)sprintf(big + k, "]}");
    int m = -1;
    int rc = sg_tokenizer_config_parse(big, k, "tc.json", &m, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "JSON values"), "tokenizer_config with 2.1M values refused: %s", err);
    free(big);
    /* 1,000 levels of nesting (cJSON's limit) fail cleanly */
    char deep[4200];
    k = (size_t)sprintf(deep, "{\"a\": ");
    for (int i = 0; i < 2000; i++) deep[k++] = '[';
    rc = sg_tokenizer_config_parse(deep, k, "tc.json", &m, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "not valid JSON"), "tokenizer_config nested 2,000 deep refused: %s", err);
}

/* sg_text_mask_rule on directories: no tokenizer_config.json (class default: mask), a malformed one (an error
 * naming it), one that is a directory, and a weights file path (looks beside it). */
static void check_mask_rule_files(const char *root) {
    char tmp[1024], p[1200], why[4608], err[4608];
    const char *base = getenv("SG_TMP") ? getenv("SG_TMP") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/text_cpu_rule.%d", base, (int)getpid());
    snprintf(p, sizeof p, "mkdir -p '%s'", tmp);
    if (system(p) != 0) {
        CHECK(0, "mkdir %s", tmp);
        return;
    }
    int m = -1;
    int rc = sg_text_mask_rule(tmp, &m, why, sizeof why, err, sizeof err);
    CHECK(rc == 0 && m == 1 && strstr(why, "no ") && strstr(why, "tokenizer_config.json"),
          "no tokenizer_config.json: the class default (mask): %s", rc ? err : why);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", tmp);
    static const char *files[] = {"{\"model_input_names\": [\"input_ids\"", "{\"model_input_names\": null}"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(p, "wb");
        if (f) {
            fputs(files[i], f);
            fclose(f);
        }
        m = -1;
        rc = sg_text_mask_rule(tmp, &m, why, sizeof why, err, sizeof err);
        CHECK(f && rc != 0 && strstr(err, p) && m == -1,
              "malformed tokenizer_config.json %s: an error naming the file: %s", files[i], err);
    }
    remove(p);
    mkdir(p, 0700);
    rc = sg_text_mask_rule(tmp, &m, why, sizeof why, err, sizeof err);
    CHECK(rc != 0 && strstr(err, p), "tokenizer_config.json that is a directory: an error naming it: %s", err);
    rmdir(p);
    rmdir(tmp);
    snprintf(p, sizeof p, "%s/tests/fixtures/tinytext_nomask/model.safetensors", root);
    m = -1;
    rc = sg_text_mask_rule(p, &m, why, sizeof why, err, sizeof err);
    CHECK(rc == 0 && m == 0 && strstr(why, "tinytext_nomask/tokenizer_config.json"),
          "a weights file path: the tokenizer_config.json beside it (no mask): %s", rc ? err : why);
}

int main(void) {
    check_config();
    check_tokenizer_config();
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    check_mask_rule_files(root);
    char dir[1024], err[4096], tok[4096];
    /* tinytext: tokenizer class default (HF passes the mask); tinytext_nomask: the same weights with the
     * tokenizer saved as SigLIP2's (model_input_names ["input_ids"]: no mask, every position attended) */
    static const char *fixtures[] = {"tinytext", "tinytext_nomask"};
    for (int f = 0; f < 2; f++) {
        snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", root, fixtures[f]);
        sg_text_model *tm = sg_text_model_load(dir, err, sizeof err);
        CHECK(tm != NULL, "%s: text tower loads%s%s", fixtures[f], tm ? "" : ": ", tm ? "" : err);
        if (!tm) continue;
        const sg_text_config *c = &tm->cfg;
        CHECK(c->hidden_size == 48 && c->num_heads == 3 && c->num_layers == 2 && c->max_positions == 64 &&
              c->projection_size == 32, "%s: config D %d H %d L %d T %d P %d", fixtures[f], c->hidden_size,
              c->num_heads, c->num_layers, c->max_positions, c->projection_size);
        CHECK(sg_text_tokenizer_path(dir, tok, sizeof tok, err, sizeof err) == 0, "%s: tokenizer.json found",
              fixtures[f]);
        check_features(fixtures[f], dir, tm);
        check_zeroshot(fixtures[f], dir, tm);
        sg_text_model_free(tm);
    }
    check_template();

    snprintf(dir, sizeof dir, "%s/tests/fixtures/tiny16", root);
    sg_text_model *tm = sg_text_model_load(dir, err, sizeof err);
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
