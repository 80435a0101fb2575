/* tests/test_safetensors_malformed.c — crafted bad checkpoints must each fail with their own message.
 *
 * tests/make_malformed.py writes the files and cases.tsv (kind, path, substring the message must contain).
 * kind "st": a format violation. sg_st_open, sg_st_open_memory (on an exact-size heap copy, so ASan sees any
 * read past the end) and sg_model_load must all fail and name the problem. kind "model": a valid
 * safetensors file or a bad config.json; the parser accepts the file, sg_model_load rejects it by name.
 * Also: every F16 and BF16 bit pattern widens exactly, checked against Python struct's half-float decoder.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "test_weights_common.h"
#include "weights/model_load.h"
#include "weights/safetensors.h"

/* The message after its "<label>: " part, so messages from different files compare. */
static const char *after_label(const char *err, const char *label) {
    size_t n = strlen(label);
    return !strncmp(err, label, n) && err[n] == ':' ? err + n + 2 : err;
}

static void check_f16_all(const char *dir) {
    char path[4096], err[1024] = "";
    snprintf(path, sizeof path, "%s/f16_all.safetensors", dir);
    sg_st_file *f = sg_st_open(path, err, sizeof err);
    CHECK(f != NULL, "f16_all.safetensors opens (%s)", f ? "ok" : err);
    if (!f) return;
    const sg_st_tensor *h = sg_st_find(f, "h"), *ref = sg_st_find(f, "ref"), *b = sg_st_find(f, "b");
    CHECK(h && ref && b && h->dtype == SG_ST_F16 && b->dtype == SG_ST_BF16 && ref->dtype == SG_ST_F32,
          "f16_all.safetensors has h (F16), b (BF16), ref (F32)");
    if (h && ref && b) {
        int bad_f16 = 0, bad_bf16 = 0, nans = 0;
        for (uint32_t i = 0; i < 65536; i++) {
            uint16_t hv = (uint16_t)(h->data[2 * i] | h->data[2 * i + 1] << 8);
            float got = sg_f16_to_f32(hv), want;
            memcpy(&want, ref->data + 4 * i, 4);
            if (isnan(want)) {
                nans++;
                uint32_t gb;
                memcpy(&gb, &got, 4);
                /* Python's struct keeps NaN-ness and sign only; the payload rule is ours: mantissa << 13. */
                bad_f16 +=
                    !isnan(got) || signbit(got) != signbit(want) || (gb & 0x7fffffu) != (uint32_t)(hv & 0x3ff) << 13;
            } else {
                bad_f16 += memcmp(&got, &want, 4) != 0;
            }
            uint16_t bv = (uint16_t)(b->data[2 * i] | b->data[2 * i + 1] << 8);
            float bg = sg_bf16_to_f32(bv);
            uint32_t bb;
            memcpy(&bb, &bg, 4);
            bad_bf16 += bb != (uint32_t)bv << 16;
        }
        CHECK(bad_f16 == 0,
              "all 65536 F16 patterns widen exactly as Python struct 'e' decodes them "
              "(subnormals, +-0, +-inf; %d NaNs keep sign and payload): %d mismatches",
              nans, bad_f16);
        CHECK(bad_bf16 == 0, "all 65536 BF16 patterns widen to the float with those top 16 bits: %d mismatches",
              bad_bf16);
    }
    sg_st_close(f);
}

int main(void) {
    char dir[4096];
    if (tw_generate("malformed", dir, sizeof dir)) {
        CHECK(0, "tests/make_malformed.py ran");
        return CHECK_DONE();
    }
    char tsv[4200];
    snprintf(tsv, sizeof tsv, "%s/cases.tsv", dir);
    FILE *fp = fopen(tsv, "r");
    CHECK(fp != NULL, "cases.tsv written by the generator");
    if (!fp) return CHECK_DONE();

    char line[4096];
    int n_st = 0, n_model = 0, n_msgs = 0;
    static char msgs[128][1024];
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = 0;
        char *kind = strtok(line, "\t"), *rel = strtok(NULL, "\t"), *expect = strtok(NULL, "");
        if (!kind || !rel || !expect) continue;
        char path[8192], err[1024] = "", err2[1024] = "", err3[1024] = "";
        snprintf(path, sizeof path, "%s/%s", dir, rel);

        strcpy(err3, "poison");
        sg_model *m = sg_model_load(path, err3, sizeof err3);
        CHECK(m == NULL && strstr(err3, expect),
              "%s: sg_model_load fails naming the problem: got \"%s\", expected \"...%s...\"", rel, err3, expect);
        sg_model_free(m);
        if (!strcmp(kind, "st")) {
            n_st++;
            strcpy(err, "poison");
            sg_st_file *f = sg_st_open(path, err, sizeof err);
            CHECK(f == NULL && strstr(err, expect) && strstr(err, path) == err,
                  "%s: sg_st_open fails with \"<path>: ...%s...\": got \"%s\"", rel, expect, err);
            sg_st_close(f);
            size_t len = 0;
            unsigned char *buf = sg_test_read_file(path, &len);
            strcpy(err2, "poison");
            f = buf ? sg_st_open_memory(buf, len, "mem", err2, sizeof err2) : NULL;
            CHECK(buf && f == NULL && !strcmp(after_label(err2, "mem"), after_label(err, path)),
                  "%s: sg_st_open_memory gives the same message: \"%s\"", rel, err2);
            sg_st_close(f);
            free(buf);
            if (n_msgs < 128) snprintf(msgs[n_msgs++], sizeof msgs[0], "%s", after_label(err, path));
        } else {
            n_model++;
        }
    }
    fclose(fp);
    int distinct = 0;
    for (int i = 0; i < n_msgs; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(msgs[i], msgs[j]);
        distinct += !seen;
    }
    CHECK(n_st >= 15 && distinct == n_st,
          "%d crafted malformed safetensors files, %d distinct messages (>= 15, all distinct)", n_st, distinct);
    CHECK(n_model >= 15, "%d crafted model-level / config.json cases rejected by name", n_model);
    check_f16_all(dir);
    return CHECK_DONE();
}
