/* tests/test_model_load.c — config.json parsing, checkpoint binding and weight look-up.
 *
 * Positive loads use the tiny checkpoints tests/make_malformed.py writes (D=8, F=16, H=2, L=2, S=8, P=4)
 * in every supported form: SiglipModel with prefixed names, a text tower and __metadata__; a standalone
 * vision model with bare names and a misaligned data area; F16; BF16; sharded with an index. Every element
 * of every bound tensor is compared with the generator's formula, so a tensor bound to the wrong field or
 * widened wrongly fails. Then config.json shapes, sg_weights_locate against a fake Hugging Face cache
 * ($HF_HUB_CACHE, $HF_HOME, $SIGLIP2_WEIGHTS, --weights), and the real tiny fixtures made with
 * transformers (tests/fixtures/tiny*) when present.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "test_weights_common.h"
#include "weights/config.h"
#include "weights/model_load.h"
#include "weights/safetensors.h"

typedef struct {
    char name[96];
    const float *p;
    size_t n;
} bound;

/* Every tensor pointer of m with its unprefixed name and element count. */
static int list_bound(const sg_model *m, bound *out, int cap) {
    const sg_config *c = &m->cfg;
    size_t D = (size_t)c->hidden_size, F = (size_t)c->intermediate_size, P = (size_t)c->patch_size,
           T = (size_t)sg_config_tokens(c);
    int n = 0;
#define ADD(nm, ptr, cnt)                                                                                              \
    do {                                                                                                               \
        if (n < cap) {                                                                                                 \
            snprintf(out[n].name, sizeof out[n].name, "%s", nm);                                                       \
            out[n].p = ptr;                                                                                            \
            out[n].n = cnt;                                                                                            \
            n++;                                                                                                       \
        }                                                                                                              \
    } while (0)
    ADD("embeddings.patch_embedding.weight", m->patch_w, D * 3 * P * P);
    ADD("embeddings.patch_embedding.bias", m->patch_b, D);
    ADD("embeddings.position_embedding.weight", m->pos, T * D);
    for (int l = 0; l < c->num_layers; l++) {
        const sg_layer *y = &m->layers[l];
        struct {
            const char *s;
            const float *p;
            size_t n;
        } w[] = {
            {"layer_norm1.weight", y->ln1_w, D},          {"layer_norm1.bias", y->ln1_b, D},
            {"self_attn.q_proj.weight", y->q_w, D * D},   {"self_attn.q_proj.bias", y->q_b, D},
            {"self_attn.k_proj.weight", y->k_w, D * D},   {"self_attn.k_proj.bias", y->k_b, D},
            {"self_attn.v_proj.weight", y->v_w, D * D},   {"self_attn.v_proj.bias", y->v_b, D},
            {"self_attn.out_proj.weight", y->o_w, D * D}, {"self_attn.out_proj.bias", y->o_b, D},
            {"layer_norm2.weight", y->ln2_w, D},          {"layer_norm2.bias", y->ln2_b, D},
            {"mlp.fc1.weight", y->fc1_w, F * D},          {"mlp.fc1.bias", y->fc1_b, F},
            {"mlp.fc2.weight", y->fc2_w, D * F},          {"mlp.fc2.bias", y->fc2_b, D},
        };
        for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
            char nm[96];
            snprintf(nm, sizeof nm, "encoder.layers.%d.%s", l, w[i].s);
            ADD(nm, w[i].p, w[i].n);
        }
    }
    ADD("post_layernorm.weight", m->post_ln_w, D);
    ADD("post_layernorm.bias", m->post_ln_b, D);
    ADD("head.probe", m->probe, D);
    ADD("head.attention.in_proj_weight", m->head_in_w, 3 * D * D);
    ADD("head.attention.in_proj_bias", m->head_in_b, 3 * D);
    ADD("head.attention.out_proj.weight", m->head_out_w, D * D);
    ADD("head.attention.out_proj.bias", m->head_out_b, D);
    ADD("head.layernorm.weight", m->head_ln_w, D);
    ADD("head.layernorm.bias", m->head_ln_b, D);
    ADD("head.mlp.fc1.weight", m->head_fc1_w, F * D);
    ADD("head.mlp.fc1.bias", m->head_fc1_b, F);
    ADD("head.mlp.fc2.weight", m->head_fc2_w, D * F);
    ADD("head.mlp.fc2.bias", m->head_fc2_b, D);
#undef ADD
    return n;
}

static void check_good(const char *dir, const char *name, const char *path_suffix) {
    char path[4200], err[2048] = "poison";
    snprintf(path, sizeof path, "%s/good/%s", dir, name);
    if (!strcmp(name, "vision_unaligned")) {
        char st[4300];
        snprintf(st, sizeof st, "%s/model.safetensors", path);
        sg_st_file *f = sg_st_open(st, err, sizeof err);
        CHECK(f && f->data_start % 4 == 2, "good/%s: data area starts at 8+N = 2 mod 4 (F32 must be copied)", name);
        sg_st_close(f);
    }
    sg_model *m = sg_model_load(path, err, sizeof err);
    CHECK(m != NULL, "good/%s loads (%s)", name, m ? "ok" : err);
    if (!m) return;
    const sg_config *c = &m->cfg;
    CHECK(c->hidden_size == 8 && c->intermediate_size == 16 && c->num_heads == 2 && c->num_layers == 2 &&
              c->num_channels == 3 && c->image_size == 8 && c->patch_size == 4 && c->layer_norm_eps == 1e-6f &&
              c->activation == SG_ACT_GELU_TANH,
          "good/%s: config read (D=8 F=16 H=2 L=2 S=8 P=4, tanh)", name);
    bound b[64];
    int n = list_bound(m, b, 64), wrong = 0, misaligned = 0, null = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!b[i].p) {
            null++;
            continue;
        }
        misaligned += (uintptr_t)b[i].p % 4 != 0;
        for (size_t j = 0; j < b[i].n; j++)
            wrong += b[i].p[j] != tw_value(b[i].name, j);
        total += b[i].n;
    }
    CHECK(n == 3 + 16 * 2 + 13 && null == 0 && misaligned == 0 && wrong == 0,
          "good/%s: all %d tensors (%zu values) bound to the right fields, exact, 4-byte aligned (%d wrong, %d null)",
          name, n, total, wrong, null);
    CHECK(strlen(m->path) >= strlen(path_suffix) &&
              !strcmp(m->path + strlen(m->path) - strlen(path_suffix), path_suffix),
          "good/%s: m->path is the weights file (%s)", name, m->path);
    sg_model_free(m);
}

static void test_config(void) {
    sg_config c, d = sg_config_default();
    char err[1024];
    const char *google = "{\"initializer_factor\":1.0,\"model_type\":\"siglip\",\"text_config\":{\"model_type\":"
                         "\"siglip_text_model\",\"vocab_size\":256000},\"transformers_version\":\"4.49.0.dev0\","
                         "\"vision_config\":{\"model_type\":\"siglip_vision_model\"}}";
    memset(&c, 0x5a, sizeof c);
    CHECK(!sg_config_parse(google, strlen(google), "google", &c, err, sizeof err) && !memcmp(&c, &d, sizeof c),
          "the real google/siglip2-base-patch16-224 config.json gives every SiglipVisionConfig default");
    CHECK(d.hidden_size == 768 && d.intermediate_size == 3072 && d.num_heads == 12 && d.num_layers == 12 &&
              d.num_channels == 3 && d.image_size == 224 && d.patch_size == 16 && d.layer_norm_eps == 1e-6f &&
              d.activation == SG_ACT_GELU_TANH,
          "defaults are 768/3072/12/12/3/224/16/1e-6/tanh (model-spec.md 1)");
    const char *vis =
        "{\"model_type\":\"siglip_vision_model\",\"hidden_size\":1152,\"intermediate_size\":4304,"
        "\"num_attention_heads\":16,\"num_hidden_layers\":27,\"image_size\":384,\"patch_size\":16,"
        "\"layer_norm_eps\":1e-5,\"hidden_act\":\"gelu\",\"vision_use_head\":true,\"torch_dtype\":\"float32\"}";
    memset(&c, 0x5a, sizeof c);
    CHECK(!sg_config_parse(vis, strlen(vis), "vis", &c, err, sizeof err) && c.hidden_size == 1152 &&
              c.intermediate_size == 4304 && c.num_heads == 16 && c.num_layers == 27 && c.image_size == 384 &&
              c.patch_size == 16 && c.layer_norm_eps == 1e-5f && c.activation == SG_ACT_GELU_ERF && c.num_channels == 3,
          "standalone SiglipVisionModel config (so400m-like): top-level fields, 'gelu' = erf");
    const char *nested = "{\"model_type\":\"siglip\",\"hidden_size\":5,\"vision_config\":{\"hidden_size\":64,"
                         "\"num_attention_heads\":4}}";
    memset(&c, 0x5a, sizeof c);
    CHECK(!sg_config_parse(nested, strlen(nested), "nested", &c, err, sizeof err) && c.hidden_size == 64 &&
              c.num_heads == 4 && c.intermediate_size == 3072,
          "SiglipModel config: vision_config fields win, top-level hidden_size ignored, others default");
    CHECK(!sg_config_parse("{}", 2, "empty", &c, err, sizeof err) && !memcmp(&c, &d, sizeof c), "{} gives defaults");
    const char *cs = "{\"Hidden_Size\":5,\"hidden_size\":8,\"num_attention_heads\":2}";
    CHECK(sg_config_parse(cs, strlen(cs), "case", &c, err, sizeof err) == 0 && c.hidden_size == 8,
          "keys are exact: 'Hidden_Size' is not hidden_size");
    const char *big = "{\"hidden_size\":4294967304}";
    CHECK(sg_config_parse(big, strlen(big), "big", &c, err, sizeof err) && strstr(err, "hidden_size is 4294967304"),
          "hidden_size 2^32+8 rejected, not wrapped by valueint: %s", err);
    CHECK(sg_config_parse("[1]", 3, "arr", &c, err, sizeof err) && strstr(err, "top level is an array"), "%s", err);
    CHECK(sg_config_parse("{\"model_type\":\"siglip2\"}", 24, "s2", &c, err, sizeof err) && strstr(err, "NaFlex"),
          "model_type siglip2 rejected with a hint: %s", err);
}

/* Makes dir and parents. */
static void mkdirs(const char *p) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
    if (system(cmd)) printf("FAIL: mkdir %s\n", p);
}

static void touch(const char *p) {
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
}

/* The message with its line breaks shown as " | ", so a check prints on one line. */
static const char *one_line(const char *msg) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s", msg);
    for (char *p = buf; (p = strchr(p, '\n'));)
        *p = '|';
    return buf;
}

static void test_locate(const char *dir) {
    char out[4096], err[4096], hub[4200], snap[4300], p[4400];
    snprintf(hub, sizeof hub, "%s/hub", dir);
    const char *repo = "models--google--siglip2-base-patch16-224";
    unsetenv("SIGLIP2_WEIGHTS");
    unsetenv("HF_HOME");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    setenv("HF_HUB_CACHE", hub, 1);
    setenv("HOME", dir, 1);

    snprintf(out, sizeof out, "poison");
    int rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(
        rc == -1 && strstr(err, "--weights PATH: not given") && strstr(err, "$SIGLIP2_WEIGHTS: not set") &&
            strstr(err, hub) && strstr(err, repo) && strstr(err, "$HF_HUB_CACHE") &&
            strstr(err, "scripts/fetch-weights.sh") &&
            strstr(err, "huggingface-cli download google/siglip2-base-patch16-224"),
        "nothing found: the message lists --weights, $SIGLIP2_WEIGHTS, the cache path, and how to get the weights: %s",
        one_line(err));

    /* A cache with two snapshots: "aaa" complete, "bbb" (named by refs/main) complete too, "000" a broken
     * symlink (interrupted download). refs/main must win. */
    snprintf(snap, sizeof snap, "%s/%s/snapshots", hub, repo);
    snprintf(p, sizeof p, "%s/000", snap);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/000/model.safetensors", snap);
    if (symlink("../../blobs/missing", p)) printf("FAIL: symlink\n");
    CHECK(sg_weights_locate(NULL, out, sizeof out, err, sizeof err) == -1 && strstr(err, "incomplete download"),
          "a snapshot whose model.safetensors is a dangling blob link is not used");
    snprintf(p, sizeof p, "%s/%s/blobs", hub, repo);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/%s/blobs/abc123", hub, repo);
    touch(p);
    const char *snaps[] = {"aaa", "bbb"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", snap, snaps[i]);
        mkdirs(p);
        snprintf(p, sizeof p, "%s/%s/model.safetensors", snap, snaps[i]);
        if (symlink("../../blobs/abc123", p)) printf("FAIL: symlink\n");
    }
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "/snapshots/aaa"), "without refs/main the first complete snapshot is chosen: %s", out);
    snprintf(p, sizeof p, "%s/%s/refs", hub, repo);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/%s/refs/main", hub, repo);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("bbb\n", f);
        fclose(f);
    }
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "/snapshots/bbb"), "$HF_HUB_CACHE: the snapshot refs/main names wins: %s", out);

    unsetenv("HF_HUB_CACHE");
    setenv("HF_HOME", dir, 1); /* HF_HOME/hub == our hub */
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, hub) && strstr(out, "/snapshots/bbb"),
          "$HF_HOME/hub is used when $HF_HUB_CACHE is unset: %s", out);
    unsetenv("HF_HOME");
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == -1 && strstr(err, ".cache/huggingface/hub"),
          "then ~/.cache/huggingface/hub (empty here): listed in the message");

    setenv("HF_HUB_CACHE", hub, 1);
    setenv("SIGLIP2_WEIGHTS", dir, 1);
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && !strcmp(out, dir), "$SIGLIP2_WEIGHTS beats the cache: %s", out);
    rc = sg_weights_locate(hub, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && !strcmp(out, hub), "--weights beats $SIGLIP2_WEIGHTS: %s", out);
    setenv("SIGLIP2_WEIGHTS", "/nonexistent/w", 1);
    rc = sg_weights_locate(NULL, out, sizeof out, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "$SIGLIP2_WEIGHTS=/nonexistent/w") && strstr(err, "scripts/fetch-weights.sh"),
          "a $SIGLIP2_WEIGHTS that does not exist is an error naming it (no silent fallback)");
    rc = sg_weights_locate("/nonexistent/x", out, sizeof out, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "--weights /nonexistent/x"),
          "a --weights path that does not exist is an error naming it");
    unsetenv("SIGLIP2_WEIGHTS");
    unsetenv("HF_HUB_CACHE");
}

/* The tiny checkpoints saved by transformers (made by another script into tests/fixtures/). */
static void test_fixtures(void) {
    const char *root = getenv("SG_ROOT");
    const char *names[] = {"tiny196", "tiny16"};
    for (int i = 0; i < 2; i++) {
        char dir[4096], st[4200], err[2048] = "poison";
        snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", root && *root ? root : ".", names[i]);
        snprintf(st, sizeof st, "%s/model.safetensors", dir);
        struct stat sb;
        if (stat(st, &sb)) {
            SKIP("fixture %s: %s not present", names[i], st);
            continue;
        }
        sg_model *m = sg_model_load(dir, err, sizeof err);
        CHECK(m != NULL, "fixture %s (saved by transformers) loads: %s", names[i], m ? "ok" : err);
        if (!m) continue;
        sg_st_file *f = sg_st_open(st, err, sizeof err);
        bound b[4096];
        int n = list_bound(m, b, 4096), same = 0, found = 0;
        for (int k = 0; f && k < n; k++) {
            char full[128];
            snprintf(full, sizeof full, "vision_model.%s", b[k].name);
            const sg_st_tensor *t = sg_st_find(f, full);
            if (!t) t = sg_st_find(f, b[k].name);
            if (!t) continue;
            found++;
            int eq = 1;
            for (size_t j = 0; j < b[k].n && eq; j++) {
                float v;
                if (t->dtype == SG_ST_F32)
                    memcpy(&v, t->data + 4 * j, 4);
                else {
                    uint16_t h = (uint16_t)(t->data[2 * j] | t->data[2 * j + 1] << 8);
                    v = t->dtype == SG_ST_F16 ? sg_f16_to_f32(h) : sg_bf16_to_f32(h);
                }
                eq = memcmp(&v, &b[k].p[j], 4) == 0;
            }
            same += eq;
        }
        CHECK(f && found == n && same == n,
              "fixture %s: %d tensors (%d layers, D=%d, T=%d) bound to the file's tensors of the same name", names[i],
              n, m->cfg.num_layers, m->cfg.hidden_size, sg_config_tokens(&m->cfg));
        sg_st_close(f);
        sg_model_free(m);
    }
}

int main(void) {
    char dir[4096], err[2048];
    if (tw_generate("model_load", dir, sizeof dir)) {
        CHECK(0, "tests/make_malformed.py ran");
        return CHECK_DONE();
    }
    check_good(dir, "full_f32", "good/full_f32/model.safetensors");
    check_good(dir, "vision_unaligned", "good/vision_unaligned/model.safetensors");
    check_good(dir, "vision_f16", "good/vision_f16/model.safetensors");
    check_good(dir, "full_bf16", "good/full_bf16/model.safetensors");
    check_good(dir, "sharded", "good/sharded/model.safetensors.index.json");
    check_good(dir, "full_f32/model.safetensors", "good/full_f32/model.safetensors");

    char p[4200];
    snprintf(p, sizeof p, "%s/good/nothing", dir);
    mkdirs(p);
    CHECK(!sg_model_load(p, err, sizeof err) &&
              strstr(err, "neither model.safetensors nor model.safetensors.index.json"),
          "empty directory: %s", err);
    CHECK(!sg_model_load("/nonexistent/w", err, sizeof err) && strstr(err, "no such file or directory"),
          "missing path: %s", err);
    CHECK(!sg_model_load(NULL, err, sizeof err) && strstr(err, "no weights path"), "NULL path: %s", err);
    sg_model_free(NULL);

    test_config();
    test_locate(dir);
    test_fixtures();
    return CHECK_DONE();
}
