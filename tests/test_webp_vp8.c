/* tests/test_webp_vp8.c — the VP8 (lossy WebP) decoder against Pillow 13's pixels and verdicts.
 *
 * tests/images/webp/vp8_expected.txt (scripts/make_webp_vp8_fixtures.py, from Pillow 13.0.0 / libwebp 1.6.0) holds,
 * for each tests/images/webp/vp8_*.webp, the FNV-1a 64 of Pillow's RGB and its size, or that Pillow refuses it.
 * Each file's "VP8 " chunk is found with a few lines of RIFF walking (the real container is decode_webp.c's) and
 * decoded with sg_vp8_info + sg_vp8_decode_rgb; the verdict, size and hash must be Pillow's. The fixtures span
 * sizes 1x1 .. 300x8, quality 0..100, 1..4 segments, simple / normal / no loop filter, sharpness, 1..8 token
 * partitions, damaged tokens that still decode (wrapping 16-bit transforms), cuts, one change per header check,
 * and two files that differ only in the pad byte after an odd-sized chunk, which Pillow decodes in one and
 * refuses in the other (libwebp's last partition ends after the pad byte). Beyond the fixtures: a stride wider than the row leaves the bytes past each row alone and gives the
 * same pixels; every prefix and a few thousand one-byte flips of a fixture decode or fail without touching
 * memory outside (the ASan build checks that); in-memory header edits (not a key frame, bad start code, first
 * partition past the data, 8 partitions without room for their size table) are refused by sg_vp8_info, as
 * libwebp's VP8GetInfo / VP8GetHeaders refuse them (vp8_hdr_* fixtures hold Pillow's verdicts on the same edits).
 */
#include "preprocess/decode_webp_vp8.h"
#include "preprocess/internal.h"
#include "tests/check.h"
#include "tests/webp_chunk.h"

#include <stdlib.h>
#include <string.h>

/* Decodes a VP8 payload: 0 with *w, *h and a malloc'ed RGB (*rgb), or -1 (err filled). */
static int decode(const uint8_t *v, size_t n, int *w, int *h, uint8_t **rgb, char *err, size_t errlen) {
    *rgb = NULL;
    if (sg_vp8_info(v, n, w, h, err, errlen)) return -1;
    *rgb = malloc((size_t)*w * *h * 3);
    if (!*rgb) return -1;
    if (sg_vp8_decode_rgb(v, n, *rgb, (size_t)*w * 3, err, errlen)) {
        free(*rgb);
        *rgb = NULL;
        return -1;
    }
    return 0;
}

/* The "VP8 " chunk (padded, as libwebp's demuxer hands it over) of fixture `name`, its size in *vn; the whole file
 * in *file (free it; NULL when it cannot be read). NULL when there is no such chunk. */
static const uint8_t *fixture_vp8(const char *root, const char *name, uint8_t **file, size_t *vn) {
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/tests/images/webp/%s", root, name);
    *file = sg_test_read_file(path, &len);
    *vn = 0;
    return *file ? sg_test_webp_chunk(*file, len, "VP8 ", 1, vn) : NULL;
}

/* Every line of vp8_expected.txt: our verdict, size and hash against Pillow's. */
static void check_fixtures(const char *root) {
    char path[4096], line[512], err[256];
    snprintf(path, sizeof path, "%s/tests/images/webp/vp8_expected.txt", root);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    int n = 0, ok = 0, refused = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        char name[256], verdict[8];
        int ew = 0, eh = 0;
        unsigned long long eh64 = 0;
        if (line[0] == '#' || sscanf(line, "%255s %7s", name, verdict) != 2) continue;
        int want_ok = strcmp(verdict, "OK") == 0;
        if (want_ok && sscanf(line, "%*s %*s %d %d %llx", &ew, &eh, &eh64) != 3) continue;
        size_t vn = 0;
        uint8_t *d = NULL;
        const uint8_t *v = fixture_vp8(root, name, &d, &vn);
        n++;
        if (!v) {
            CHECK(0, "%s: no VP8 chunk found", name);
            bad++;
            free(d);
            continue;
        }
        int w = 0, h = 0;
        uint8_t *rgb = NULL;
        err[0] = 0;
        int rc = decode(v, vn, &w, &h, &rgb, err, sizeof err);
        if (want_ok) {
            uint64_t got = rc == 0 ? sg_test_fnv1a64(rgb, (size_t)w * h * 3) : 0;
            if (rc != 0 || w != ew || h != eh || got != eh64) {
                CHECK(0, "%s: want %dx%d %016llx, got rc %d %dx%d %016llx (%s)", name, ew, eh, eh64, rc, w, h,
                      (unsigned long long)got, err);
                bad++;
            }
            ok++;
        } else {
            if (rc == 0) {
                CHECK(0, "%s: Pillow refuses it, we decoded %dx%d", name, w, h);
                bad++;
            }
            refused++;
        }
        free(rgb);
        free(d);
    }
    fclose(f);
    CHECK(n >= 70 && bad == 0, "vp8 fixtures: %d files (%d decoded, %d refused by Pillow), %d differ", n, ok, refused,
          bad);
}

/* A stride past the row: the same pixels, and the bytes between rows untouched. */
static void check_stride(const char *root) {
    char err[256];
    size_t vn = 0;
    uint8_t *d = NULL;
    const uint8_t *v = fixture_vp8(root, "vp8_size_33x65.webp", &d, &vn);
    int w = 0, h = 0;
    uint8_t *ref = NULL;
    if (!v || decode(v, vn, &w, &h, &ref, err, sizeof err)) {
        CHECK(0, "stride: vp8_size_33x65.webp decodes");
        free(d);
        return;
    }
    size_t stride = (size_t)w * 3 + 13;
    uint8_t *wide = malloc(stride * h);
    memset(wide, 0xA5, stride * h);
    int rc = sg_vp8_decode_rgb(v, vn, wide, stride, err, sizeof err);
    int same = rc == 0, pad_kept = 1;
    for (int y = 0; y < h && same; y++) {
        same = memcmp(wide + y * stride, ref + (size_t)y * w * 3, (size_t)w * 3) == 0;
        for (size_t x = (size_t)w * 3; x < stride; x++) pad_kept &= wide[y * stride + x] == 0xA5;
    }
    CHECK(same && pad_kept, "stride %zu for a %dx%d image: same pixels, bytes past the rows untouched", stride, w, h);
    free(wide);
    free(ref);
    free(d);
}

/* Every prefix of a payload and many one-byte edits: each decodes or fails (ASan / UBSan watch the memory). */
static void check_robust(const char *root) {
    char err[256];
    size_t vn = 0;
    uint8_t *d = NULL;
    const uint8_t *v = fixture_vp8(root, "vp8_partitions8.webp", &d, &vn);
    if (!v) {
        CHECK(0, "robust: vp8_partitions8.webp has a VP8 chunk");
        free(d);
        return;
    }
    int decoded = 0, failed = 0;
    for (size_t n = 0; n <= vn; n++) {
        uint8_t *cut = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
        memcpy(cut, v, n);
        int w, h;
        uint8_t *rgb = NULL;
        decode(cut, n, &w, &h, &rgb, err, sizeof err) ? failed++ : decoded++;
        free(rgb);
        free(cut);
    }
    CHECK(decoded >= 1 && failed >= 1, "every prefix of a %zu-byte payload: %d decode, %d fail, none crash", vn,
          decoded, failed);
    uint64_t s = 12345;
    int kernels_differ = 0;
    decoded = failed = 0;
    uint8_t *m = malloc(vn);
    for (int i = 0; i < 3000; i++) {
        memcpy(m, v, vn);
        uint64_t r = sg_test_splitmix64(&s);
        size_t at = (r >> 8) % (i & 1 ? vn : (vn < 40 ? vn : 40)); /* half of the edits in the headers */
        m[at] ^= (uint8_t)(r | 1);
        int w, h;
        uint8_t *rgb = NULL;
        if (decode(m, vn, &w, &h, &rgb, err, sizeof err)) {
            failed++;
        } else { /* damaged tokens give extreme coefficients and pixels: the C kernels must agree */
            decoded++;
            uint8_t *rgb_c = NULL;
            sg_vp8_portable_kernels(1);
            int rc = decode(m, vn, &w, &h, &rgb_c, err, sizeof err);
            sg_vp8_portable_kernels(0);
            if (rc || memcmp(rgb, rgb_c, (size_t)w * h * 3)) kernels_differ++;
            free(rgb_c);
        }
        free(rgb);
    }
    CHECK(decoded + failed == 3000, "3000 one-byte edits: %d decode, %d fail, none crash", decoded, failed);
    CHECK(kernels_differ == 0, "the %d decoded edits: %d differ between the SIMD and the C kernels", decoded,
          kernels_differ);
    free(m);
    free(d);
}

/* Header edits in memory, refused by sg_vp8_info as libwebp's VP8GetInfo / VP8GetHeaders refuse them. */
static void check_header_refusals(const char *root) {
    char err[256];
    size_t vn = 0;
    uint8_t *d = NULL;
    const uint8_t *v = fixture_vp8(root, "vp8_hdr_parts8_ok.webp", &d, &vn);
    int w = 0, h = 0;
    if (!v || vn < 40) {
        CHECK(0, "header: vp8_hdr_parts8_ok.webp has a VP8 chunk");
        free(d);
        return;
    }
    CHECK(sg_vp8_info(v, vn, &w, &h, err, sizeof err) == 0 && w == 16 && h == 48, "header: the unedited file: %dx%d",
          w, h);
    uint8_t *m = malloc(vn);
    uint32_t part0 = (v[0] | v[1] << 8 | v[2] << 16) >> 5;
    struct {
        const char *what;
        size_t at;
        uint8_t xor_;
        size_t len; /* 0: the whole payload */
    } edits[] = {
        {"not a key frame", 0, 0x01, 0},
        {"profile 4", 0, 0x08, 0},
        {"show bit 0", 0, 0x10, 0},
        {"start code 9d 01 2b", 5, 0x01, 0},
        {"9 bytes", 0, 0, 9},
        {"first partition past the data", 0, 0, 10 + part0 - 1},
        {"8 partitions without room for the size table", 0, 0, 10 + part0 + 20},
        {"8 partitions, last empty", 0, 0, 10 + part0 + 21},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        size_t n = edits[i].len ? edits[i].len : vn;
        memcpy(m, v, n);
        m[edits[i].at] ^= edits[i].xor_;
        err[0] = 0;
        int rc = sg_vp8_info(m, n, &w, &h, err, sizeof err);
        CHECK(rc == -1 && err[0], "header: %s refused (%s)", edits[i].what, err);
    }
    memcpy(m, v, vn);
    m[7] |= 0xC0, m[9] |= 0x40; /* scale bits: read, ignored */
    CHECK(sg_vp8_info(m, vn, &w, &h, err, sizeof err) == 0 && w == 16 && h == 48, "header: scale bits ignored");
    free(m);
    free(d);
}

/* The loop filter on random macroblocks (random strengths, kinds, neighbours; pixels near a random level so
 * every filter branch is taken, with some far off): the SIMD kernels against the C ones, byte for byte. */
static void check_filter_kernels(void) {
    enum { W = 48, H = 48, CW = 24, CH = 24 };
    static uint8_t y0[W * H], u0[CW * CH], v0[CW * CH], y1[W * H], u1[CW * CH], v1[CW * CH];
    uint64_t s = 777;
    int differ = 0, changed = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t r = sg_test_splitmix64(&s);
        int base = (int)(r & 255), spread = 1 + (int)((r >> 8) % 64);
        for (int k = 0; k < W * H; k++) {
            uint64_t q = sg_test_splitmix64(&s);
            int px = (q & 15) == 0 ? (int)(q >> 8 & 255) : base + (int)((q >> 8) % (uint64_t)spread) - spread / 2;
            y0[k] = (uint8_t)(px < 0 ? 0 : px > 255 ? 255 : px);
            u0[k % (CW * CH)] = (uint8_t)(y0[k] ^ (q >> 20 & 3));
            v0[(k * 7) % (CW * CH)] = (uint8_t)(y0[k] + (q >> 24 & 3));
        }
        int level = (int)((r >> 16) % 64), ilevel = 1 + (int)((r >> 24) % 63);
        sg_vp8_filter f = {(uint8_t)(2 * level + ilevel), (uint8_t)ilevel, (uint8_t)(r >> 32 & 1),
                           (uint8_t)((r >> 33) % 3)};
        int simple = (int)(r >> 35 & 1), left = (int)(r >> 36 & 1), top = (int)(r >> 37 & 1);
        memcpy(y1, y0, sizeof y0), memcpy(u1, u0, sizeof u0), memcpy(v1, v0, sizeof v0);
        sg_vp8_filter_mb(&f, simple, left, top, y0 + 16 * W + 16, W, u0 + 8 * CW + 8, v0 + 8 * CW + 8, CW);
        sg_vp8_portable_kernels(1);
        sg_vp8_filter_mb(&f, simple, left, top, y1 + 16 * W + 16, W, u1 + 8 * CW + 8, v1 + 8 * CW + 8, CW);
        sg_vp8_portable_kernels(0);
        differ += memcmp(y0, y1, sizeof y0) || memcmp(u0, u1, sizeof u0) || memcmp(v0, v1, sizeof v0);
        changed += f.limit > 0;
    }
    CHECK(differ == 0, "loop filter, 20000 random macroblocks (%d filtered): %d differ between SIMD and C", changed,
          differ);
}

/* Upsampling and YUV -> RGB on random planes (widths 1..100 so every loop tail and both parities run, values
 * over the whole byte range, now and then 0 / 255 runs): the SIMD kernels against the C ones, byte for byte. */
static void check_rgb_kernels(void) {
    enum { MAXW = 100, MAXH = 9 };
    static uint8_t y[MAXW * MAXH], u[MAXW * MAXH], v[MAXW * MAXH], a[MAXW * MAXH * 3], b[MAXW * MAXH * 3];
    static int tmp[2 * MAXW];
    uint64_t s = 4242;
    int differ = 0;
    for (int i = 0; i < 3000; i++) {
        uint64_t r = sg_test_splitmix64(&s);
        int w = 1 + (int)(r % MAXW), h = 1 + (int)((r >> 8) % MAXH), mode = (int)(r >> 16 & 3);
        for (int k = 0; k < MAXW * MAXH; k++) {
            uint64_t q = sg_test_splitmix64(&s);
            int pick = mode == 0 ? 0 : (int)(q & 7); /* mode 0: uniform; else some extremes */
            y[k] = (uint8_t)(pick == 1 ? 0 : pick == 2 ? 255 : q >> 8);
            u[k] = (uint8_t)(pick == 3 ? 0 : pick == 4 ? 255 : q >> 16);
            v[k] = (uint8_t)(pick == 5 ? 0 : pick == 6 ? 255 : q >> 24);
        }
        int uvw = (w + 1) / 2;
        sg_vp8_yuv_to_rgb(y, (size_t)w, u, v, (size_t)uvw, w, h, a, (size_t)w * 3, tmp);
        sg_vp8_portable_kernels(1);
        sg_vp8_yuv_to_rgb(y, (size_t)w, u, v, (size_t)uvw, w, h, b, (size_t)w * 3, tmp);
        sg_vp8_portable_kernels(0);
        differ += memcmp(a, b, (size_t)w * h * 3) != 0;
    }
    CHECK(differ == 0, "YUV -> RGB, 3000 random planes (widths 1..%d): %d differ between SIMD and C", MAXW, differ);
}

/* The full inverse DCT on random blocks (coefficients of every 16-bit size, so the lanes wrap, and small ones;
 * random pixels under them): the SIMD kernel against the C one, byte for byte. */
static void check_idct_kernels(void) {
    uint64_t s = 99;
    int differ = 0;
    for (int i = 0; i < 100000; i++) {
        int16_t c[16];
        uint8_t a[4 * SG_VP8_BPS], b[4 * SG_VP8_BPS];
        int bits = 1 + (int)(sg_test_splitmix64(&s) % 16);
        for (int k = 0; k < 16; k++) c[k] = (int16_t)((int64_t)sg_test_splitmix64(&s) >> (64 - bits));
        for (int k = 0; k < 4 * SG_VP8_BPS; k++) a[k] = b[k] = (uint8_t)sg_test_splitmix64(&s);
        sg_vp8_add_luma_residual(3, c, a);
        sg_vp8_portable_kernels(1);
        sg_vp8_add_luma_residual(3, c, b);
        sg_vp8_portable_kernels(0);
        differ += memcmp(a, b, sizeof a) != 0;
    }
    CHECK(differ == 0, "inverse DCT, 100000 random blocks: %d differ between SIMD and C", differ);
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    int simd = sg_vp8_portable_kernels(0);
    check_fixtures(root);
    check_stride(root);
    if (simd) { /* the same fixtures on the plain C kernels, what other architectures run */
        sg_vp8_portable_kernels(1);
        check_fixtures(root);
        check_stride(root);
        sg_vp8_portable_kernels(0);
        check_filter_kernels();
        check_rgb_kernels();
        check_idct_kernels();
    }
    check_robust(root);
    check_header_refusals(root);
    return CHECK_DONE();
}
