/* tests/test_webp_vp8l.c — the VP8L codec (preprocess/decode_webp_vp8l.c) gives Pillow 13's pixels and verdicts.
 *
 * tests/images/webp/vp8l_expected.txt (scripts/make_webp_vp8l_fixtures.py, from Pillow 13 with libwebp 1.6.0)
 * holds, per fixture, the FNV-1a 64 of Pillow's RGBA or RGB bytes, the hash of its alpha channel (lossy files
 * with a lossless ALPH chunk), or that Pillow refuses the file. The chunks are found here with a few lines of
 * RIFF walking (the container decoder is decode_webp.c's); the VP8L payload is passed to its padded end, as
 * libwebp's demuxer hands a frame over, the ALPH stream after its header byte without padding. Output buffers
 * are poisoned first, so a decoder that writes nothing cannot pass. Also: sg_vp8l_info's header checks, the
 * alpha entry point's size checks, and that every vp8l_* fixture has an expected line.
 */
#include "preprocess/internal.h"
#include "tests/check.h"
#include "tests/webp_chunk.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ok, alpha, refused, bad;
} tally;

/* One line of vp8l_expected.txt against our decoders. */
static void check_line(const char *root, const char *line, tally *t) {
    char name[256], kind[16], mode[8] = "";
    int w = 0, h = 0;
    unsigned long long want = 0;
    if (sscanf(line, "%255s %15s", name, kind) != 2) return;
    if (!strcmp(kind, "OK") && sscanf(line, "%*s %*s %d %d %7s %llx", &w, &h, mode, &want) != 4) return;
    if (!strcmp(kind, "ALPHA") && sscanf(line, "%*s %*s %d %d %llx", &w, &h, &want) != 3) return;
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/tests/images/webp/%s", root, name);
    size_t n = 0;
    uint8_t *d = sg_test_read_file(path, &n);
    CHECK(d != NULL, "read %s", path);
    if (!d) {
        t->bad++;
        return;
    }
    size_t clen = 0;
    const uint8_t *vp8l = sg_test_webp_chunk(d, n, "VP8L", 1, &clen);
    if (vp8l) {
        int iw = 0, ih = 0;
        int rc = sg_vp8l_info(vp8l, clen, &iw, &ih, err, sizeof err);
        uint32_t *argb = NULL;
        if (rc == 0) {
            argb = sg_test_xmalloc((size_t)iw * ih * 4);
            memset(argb, 0xA5, (size_t)iw * ih * 4);
            rc = sg_vp8l_decode(vp8l, clen, argb, err, sizeof err);
        }
        if (!strcmp(kind, "OK")) {
            int rgba = !strcmp(mode, "RGBA");
            uint64_t got = 0;
            if (rc == 0 && iw == w && ih == h) {
                uint8_t *px = sg_test_xmalloc((size_t)w * h * 4), *q = px;
                for (size_t i = 0; i < (size_t)w * h; i++) {
                    *q++ = (uint8_t)(argb[i] >> 16), *q++ = (uint8_t)(argb[i] >> 8), *q++ = (uint8_t)argb[i];
                    if (rgba) *q++ = (uint8_t)(argb[i] >> 24);
                }
                got = sg_test_fnv1a64(px, (size_t)(q - px));
                free(px);
            }
            int good = rc == 0 && iw == w && ih == h && got == want;
            CHECK(good, "%s: %dx%d %s as Pillow (ours: rc %d %dx%d hash %016llx, Pillow %016llx) %s", name, w, h, mode,
                  rc, iw, ih, (unsigned long long)got, want, err);
            t->ok++, t->bad += !good;
        } else {
            CHECK(rc != 0, "%s: refused as Pillow refuses it (ours: %s)", name, rc ? err : "decoded");
            t->refused++, t->bad += rc == 0;
        }
        free(argb);
        free(d);
        return;
    }
    size_t vlen = 0;
    const uint8_t *alph = sg_test_webp_chunk(d, n, "ALPH", 0, &clen), *vp8 = sg_test_webp_chunk(d, n, "VP8 ", 0, &vlen);
    CHECK(alph && vp8 && clen >= 1 && vlen >= 10, "%s: has an ALPH and a VP8 chunk", name);
    if (!(alph && vp8 && clen >= 1 && vlen >= 10)) {
        t->bad++;
        free(d);
        return;
    }
    int fw = (vp8[6] | vp8[7] << 8) & 0x3fff, fh = (vp8[8] | vp8[9] << 8) & 0x3fff;
    uint8_t *a = sg_test_xmalloc((size_t)fw * fh);
    memset(a, 0xA5, (size_t)fw * fh);
    int rc = sg_vp8l_decode_alpha(alph + 1, clen - 1, fw, fh, a, err, sizeof err);
    if (!strcmp(kind, "ALPHA")) {
        uint64_t got = rc == 0 ? sg_test_fnv1a64(a, (size_t)fw * fh) : 0;
        int good = rc == 0 && fw == w && fh == h && got == want;
        CHECK(good, "%s: alpha %dx%d as Pillow's (ours: rc %d hash %016llx, Pillow %016llx) %s", name, w, h, rc,
              (unsigned long long)got, want, err);
        t->alpha++, t->bad += !good;
    } else {
        CHECK(rc != 0, "%s: alpha refused as Pillow refuses the file (ours: %s)", name, rc ? err : "decoded");
        t->refused++, t->bad += rc == 0;
    }
    free(a);
    free(d);
}

/* Every vp8l_*.webp fixture has a line (a fixture nobody checks proves nothing). */
static void check_all_listed(const char *root, const char *expected) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/images/webp", root);
    DIR *dp = opendir(dir);
    CHECK(dp != NULL, "open %s", dir);
    if (!dp) return;
    int files = 0, missing = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "vp8l_", 5) || l < 5 || strcmp(de->d_name + l - 5, ".webp")) continue;
        char key[300];
        snprintf(key, sizeof key, "\n%s ", de->d_name);
        files++;
        if (!strstr(expected, key)) {
            missing++;
            printf("  no expected line for %s\n", de->d_name);
        }
    }
    closedir(dp);
    CHECK(files > 100 && missing == 0, "all %d vp8l_*.webp fixtures have an expected line (%d missing)", files, missing);
}

static void check_header_rules(void) {
    char err[256];
    int w = 0, h = 0;
    const uint8_t good[5] = {0x2f, 0x02, 0x40, 0x00, 0x10}; /* 3 x 2, alpha hint set, version 0 */
    CHECK(sg_vp8l_info(good, 5, &w, &h, err, sizeof err) == 0 && w == 3 && h == 2, "info: 3x2 from a 5-byte header");
    const uint8_t big[5] = {0x2f, 0xff, 0xff, 0xff, 0x0f};
    CHECK(sg_vp8l_info(big, 5, &w, &h, err, sizeof err) == 0 && w == 16384 && h == 16384, "info: 16384x16384 is the largest");
    CHECK(sg_vp8l_info(good, 4, &w, &h, err, sizeof err) != 0, "info: 4 bytes refused (%s)", err);
    const uint8_t sig[5] = {0x2e, 0x02, 0x40, 0x00, 0x10};
    CHECK(sg_vp8l_info(sig, 5, &w, &h, err, sizeof err) != 0, "info: signature 0x2e refused (%s)", err);
    for (int v = 1; v < 8; v++) {
        uint8_t ver[5] = {0x2f, 0x02, 0x40, 0x00, (uint8_t)(0x10 | v << 5)};
        CHECK(sg_vp8l_info(ver, 5, &w, &h, err, sizeof err) != 0 && sg_vp8l_decode(ver, 5, NULL, err, sizeof err) != 0,
              "info and decode: version %d refused (%s)", v, err);
    }
    uint8_t a[4];
    CHECK(sg_vp8l_decode_alpha(good, 5, 0, 1, a, err, sizeof err) != 0, "alpha: width 0 refused (%s)", err);
    CHECK(sg_vp8l_decode_alpha(NULL, 0, 2, 2, a, err, sizeof err) != 0, "alpha: an empty stream refused (%s)", err);
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/tests/images/webp/vp8l_expected.txt", root);
    size_t n = 0;
    char *all = sg_test_read_file(path, &n);
    CHECK(all != NULL, "read %s", path);
    if (!all) return CHECK_DONE();
    tally t = {0};
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '#') check_line(root, line, &t);
    if (f) fclose(f);
    CHECK(t.bad == 0 && t.ok >= 50 && t.alpha >= 10 && t.refused >= 40,
          "vp8l_expected.txt: %d decoded, %d alpha planes, %d refused; %d differ from Pillow", t.ok, t.alpha, t.refused,
          t.bad);
    char *text = sg_test_xmalloc(n + 2);
    text[0] = '\n';
    memcpy(text + 1, all, n);
    text[n + 1] = 0;
    check_all_listed(root, text);
    free(text);
    free(all);
    check_header_rules();
    return CHECK_DONE();
}
