/* tests/test_preprocess.c — decode and resize are 0 LSB from Pillow on every golden.
 *
 * tests/images/goldens.txt (made by scripts/make_goldens.py with Pillow; versions on its first line) holds
 * FNV-1a 64 hashes of Pillow's RGB bytes for each committed image: decoded (with and without EXIF
 * transpose) and resized to 224 with BILINEAR and BICUBIC, JPEGs also through draft() (our --fast-decode); plus resizes of hash-noise images at odd and
 * random size pairs, regenerated here from the same seed. JPEG resizes are checked through both JPEG paths
 * (decoded straight into the resize, and decoded whole), and the two paths are compared on fresh noise JPEGs of
 * many sizes and layouts. Output buffers are poisoned before each run, so a function that writes nothing cannot
 * pass. Where the resize has AVX2 kernels and the CPU runs them (preprocess/resize.c), every resize check runs
 * again on the portable kernels (sg_resize_portable_kernels), and the two are compared byte for byte on more
 * sizes. Also checks the same-size copy rule, the pixel and file caps,
 * and that sg_preprocess_file agrees with decode + resize.
 */
#include "preprocess/internal.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

static uint8_t *noise(uint32_t seed, int w, int h) {
    size_t n = (size_t)w * h * 3;
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) { /* lowbias32 of seed*golden + i, as scripts/make_goldens.py */
        uint32_t x = seed * 0x9E3779B9u + (uint32_t)i;
        x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
        p[i] = (uint8_t)x;
    }
    return p;
}

/* Every golden of goldens.txt and goldens_pillow12.txt with the resize kernels in use (kern names them); with
 * resize_only, the decode-only entries and the file entry point are left out (they do not resize). */
static void check_goldens(const char *root, const char *kern, int resize_only) {
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/tests/images/goldens.txt", root);
    FILE *g = fopen(path, "r");
    CHECK(g != NULL, "open %s", path);
    if (!g) return;
    int ndecode = 0, nresize = 0, nnoise = 0, bad = 0, njpeg_streamed = 0;
    uint8_t *out = malloc(224 * 224 * 3);
    while (fgets(line, sizeof line, g)) {
        char kind[16], name[256];
        unsigned long long want;
        if (line[0] == '#' || sscanf(line, "%15s", kind) != 1) continue;
        if (strcmp(kind, "noise") == 0) {
            unsigned seed;
            int sw, sh, dw, dh, filt;
            if (sscanf(line, "noise %u %d %d %d %d %d %llx", &seed, &sw, &sh, &dw, &dh, &filt, &want) != 7) continue;
            uint8_t *src = noise(seed, sw, sh), *dst = malloc((size_t)dw * dh * 3);
            memset(dst, 0xA5, (size_t)dw * dh * 3);
            int rc = sg_resize_rgb(src, sw, sh, dst, dw, dh, (sg_resample)filt);
            uint64_t got = sg_test_fnv1a64(dst, (size_t)dw * dh * 3);
            CHECK(rc == 0 && got == want, "%s: resize noise seed %u %dx%d -> %dx%d filter %d: 0 LSB from Pillow (hash %016llx, Pillow %016llx)",
                  kern, seed, sw, sh, dw, dh, filt, (unsigned long long)got, want);
            bad += !(rc == 0 && got == want);
            nnoise++;
            free(src), free(dst);
            continue;
        }
        int exif;
        if (sscanf(line, "%*s %255s %d", name, &exif) != 2) continue;
        if (resize_only && (strcmp(kind, "decode") == 0 || strcmp(kind, "draft") == 0)) continue;
        snprintf(path, sizeof path, "%s/tests/images/%s", root, name);
        size_t len = 0;
        uint8_t *data = sg_test_read_file(path, &len);
        sg_preprocess_opts o;
        sg_preprocess_opts_default(&o);
        o.exif_rotate = exif;
        char err[512] = "";
        int fast = strncmp(kind, "draft", 5) == 0; /* --fast-decode must equal Pillow's draft() */
        o.fast_decode = fast;
        if (strcmp(kind, "decode") == 0 || strcmp(kind, "draft") == 0) {
            int w, h;
            if (sscanf(line, "%*s %*s %*d %d %d %llx", &w, &h, &want) != 3) { free(data); continue; }
            sg_rgb_image img = {0};
            int rc = data ? sg_decode_rgb(data, len, &o, &img, err, sizeof err) : -1;
            uint64_t got = rc == 0 ? sg_test_fnv1a64(img.rgb, (size_t)img.w * img.h * 3) : 0;
            int ok = rc == 0 && img.w == w && img.h == h && got == want;
            CHECK(ok, "%s %s exif=%d: %dx%d, 0 LSB from Pillow (got %dx%d hash %016llx, Pillow %016llx; %s)", kind, name, exif, w, h,
                  img.w, img.h, (unsigned long long)got, want, rc ? err : "ok");
            bad += !ok;
            ndecode++;
            sg_rgb_image_free(&img);
        } else if (strcmp(kind, "resize") == 0 || strcmp(kind, "draftresize") == 0) {
            int filt, s;
            if (sscanf(line, "%*s %*s %*d %d %d %llx", &filt, &s, &want) != 3 || s != 224) { free(data); continue; }
            o.resample = (sg_resample)filt;
            memset(out, 0xA5, 224 * 224 * 3);
            int rc = data ? sg_preprocess_memory(data, len, &o, out, NULL, err, sizeof err) : -1;
            uint64_t got = sg_test_fnv1a64(out, 224 * 224 * 3);
            int ok = rc == 0 && got == want;
            if (data && strstr(name, ".jpg")) { /* both JPEG paths, each against Pillow */
                memset(out, 0xA5, 224 * 224 * 3);
                int r = sg_pre_jpeg_to_resized(data, len, &o, out, NULL, err, sizeof err);
                njpeg_streamed += r == 0;
                ok = ok && (r == 1 || (r == 0 && sg_test_fnv1a64(out, 224 * 224 * 3) == want));
                o.whole_image = 1;
                memset(out, 0x5A, 224 * 224 * 3);
                ok = ok && sg_preprocess_memory(data, len, &o, out, NULL, err, sizeof err) == 0 &&
                     sg_test_fnv1a64(out, 224 * 224 * 3) == want;
            }
            CHECK(ok, "%s: preprocess%s %s exif=%d filter=%d -> 224x224: 0 LSB from Pillow%s (hash %016llx, Pillow %016llx; %s)",
                  kern, fast ? " --fast-decode" : "", name, exif, filt, fast ? " draft()" : "", (unsigned long long)got, want,
                  rc ? err : "ok");
            bad += !ok;
            nresize++;
            if (filt == 2 && exif == 1 && !fast && !resize_only) { /* the file entry point gives the same bytes */
                uint8_t *out2 = malloc(224 * 224 * 3);
                memset(out2, 0x5A, 224 * 224 * 3);
                sg_preprocess_stats st = {0};
                int rc2 = sg_preprocess_file(path, &o, out2, &st, err, sizeof err);
                CHECK(rc2 == 0 && memcmp(out, out2, 224 * 224 * 3) == 0 && st.decode_s > 0,
                      "sg_preprocess_file %s equals sg_preprocess_memory and reports decode time", name);
                free(out2);
            }
        }
        free(data);
    }
    fclose(g);
    /* Pillow <= 12 runs the horizontal pass first on every size pair: its hashes, made with Pillow 12.3 */
    snprintf(path, sizeof path, "%s/tests/images/goldens_pillow12.txt", root);
    g = fopen(path, "r");
    CHECK(g != NULL, "open %s", path);
    int n12 = 0, bad12 = 0;
    while (g && fgets(line, sizeof line, g)) {
        unsigned seed;
        int sw, sh, dw, dh, filt;
        unsigned long long want;
        if (sscanf(line, "noise12 %u %d %d %d %d %d %llx", &seed, &sw, &sh, &dw, &dh, &filt, &want) != 7) continue;
        uint8_t *src = noise(seed, sw, sh), *dst = malloc((size_t)dw * dh * 3);
        memset(dst, 0xA5, (size_t)dw * dh * 3);
        int rc = sg_resize_rgb_pillow(src, sw, sh, dst, dw, dh, (sg_resample)filt, 12);
        int ok = rc == 0 && sg_test_fnv1a64(dst, (size_t)dw * dh * 3) == want;
        bad12 += !ok;
        n12++;
        if (!ok)
            CHECK(0, "%s: pillow_major=12: noise seed %u %dx%d -> %dx%d filter %d differs from Pillow 12.3", kern, seed, sw, sh,
                  dw, dh, filt);
        free(src), free(dst);
    }
    if (g) fclose(g);
    CHECK(n12 >= 100 && bad12 == 0, "%s: pillow_major=12: %d resizes 0 LSB from Pillow 12.3 (%d differ)", kern, n12, bad12);
    CHECK((resize_only || ndecode >= 50) && nresize >= 100 && nnoise >= 100,
          "%s: goldens found: %d decode, %d resize, %d noise (expected >= %d/100/100)", kern, ndecode, nresize, nnoise,
          resize_only ? 0 : 50);
    CHECK(bad == 0, "%s: all %d goldens are 0 LSB from Pillow (%d differ)", kern, ndecode + nresize + nnoise, bad);
    CHECK(njpeg_streamed >= 20, "%s: JPEG resize goldens through the streamed decode: %d (the rest have an EXIF orientation)",
          kern, njpeg_streamed);
    free(out);
}


/* JPEGs decoded straight into the resize (16 rows at a time) give the bytes of decode-whole-then-resize: fresh
 * noise JPEGs of many sizes (drawn from seed), every subsampling, grey, CMYK and progressive, both filters, two
 * output sizes, exact and --fast-decode. The goldens already pass through the streamed path; this covers sizes
 * they do not (odd widths, blocks straddling the resize window, upscales, one-axis resizes). */
static void check_streamed(uint64_t seed, const char *kern) {
    {
        static const int subs[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY, TJSAMP_440, TJSAMP_411};
        int sizes[40][2] = {{1, 1}, {7, 5}, {16, 16}, {17, 33}, {224, 224}, {224, 300}, {300, 224}, {500, 375},
                            {375, 500}, {800, 600}, {333, 999}, {1000, 17}, {17, 1000}, {225, 223}};
        int nsizes = 14;
        uint64_t rs = seed;
        while (nsizes < 40) {
            rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
            sizes[nsizes][0] = 1 + (int)(rs % 1100);
            sizes[nsizes][1] = 1 + (int)((rs >> 20) % 900);
            nsizes++;
        }
        tjhandle tj = tjInitCompress();
        int streamed = 0, fell_back = 0, same = 0, cases = 0;
        uint8_t *a = malloc(224 * 224 * 3), *b = malloc(224 * 224 * 3);
        for (int i = 0; i < nsizes; i++) {
            int w = sizes[i][0], h = sizes[i][1], sub = subs[i % 6];
            int cmyk = i % 9 == 8, prog = i % 5 == 4;
            uint8_t *px = noise(1000u + (unsigned)i, w * (cmyk ? 4 : 3), h); /* w*4 x h bytes covers CMYK */
            unsigned char *jpg = NULL;
            unsigned long jlen = 0;
            int flags = TJFLAG_ACCURATEDCT | (prog ? TJFLAG_PROGRESSIVE : 0);
            if (tjCompress2(tj, px, w, 0, h, cmyk ? TJPF_CMYK : TJPF_RGB, &jpg, &jlen, cmyk ? TJSAMP_444 : sub, 90,
                            flags) != 0) {
                CHECK(0, "tjCompress2 %dx%d sub %d: %s", w, h, sub, tjGetErrorStr2(tj));
                free(px);
                continue;
            }
            for (int v = 0; v < 6; v++) {
                sg_preprocess_opts so;
                sg_preprocess_opts_default(&so);
                so.out_size = v % 3 == 2 ? 64 : 224;
                so.resample = v % 2 ? SG_RESAMPLE_BICUBIC : SG_RESAMPLE_BILINEAR;
                so.fast_decode = v >= 3;
                char e1[256] = "", e2[256] = "";
                size_t n = (size_t)so.out_size * so.out_size * 3;
                memset(a, 0xA5, n), memset(b, 0x5A, n);
                int r = sg_pre_jpeg_to_resized(jpg, jlen, &so, a, NULL, e1, sizeof e1);
                so.whole_image = 1;
                int r2 = sg_preprocess_memory(jpg, jlen, &so, b, NULL, e2, sizeof e2);
                streamed += r == 0, fell_back += r == 1;
                int ok = r2 == 0 && (r == 1 || (r == 0 && memcmp(a, b, n) == 0));
                same += ok;
                cases++;
                if (!ok)
                    CHECK(0, "%s: streamed JPEG %dx%d sub %d%s%s -> %d filter %d fast %d: differs from the whole-image path (%d/%d: %s%s)",
                          kern, w, h, sub, cmyk ? " CMYK" : "", prog ? " progressive" : "", so.out_size, so.resample,
                          so.fast_decode, r, r2, e1, e2);
            }
            tjFree(jpg);
            free(px);
        }
        tjDestroy(tj);
        free(a), free(b);
        CHECK(same == cases && streamed >= cases / 2,
              "%s: streamed JPEG decode + resize = whole-image path, byte for byte: %d of %d cases (%d streamed, %d took the "
              "whole-image path: vertical-first sizes)",
              kern, same, cases, streamed, fell_back);
    }
}


/* Feeds src (sw x sh) to a resize stream in chunks of 1..16 rows drawn from *rs. 0, or -1 when the size pair does not
 * stream (vertical-first) or a call fails. */
static int resize_streamed(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, int filt, int major,
                           uint64_t *rs) {
    sg_resize_stream *r = sg_resize_stream_begin(sw, sh, dst, dw, dh, (sg_resample)filt, major);
    if (!r) return -1;
    int rc = 0;
    for (int y = 0; y < sh && rc == 0;) {
        int n = 1 + (int)(sg_test_splitmix64(rs) % 16);
        if (n > sh - y) n = sh - y;
        rc = sg_resize_stream_rows(r, src + (size_t)y * sw * 3, (size_t)sw * 3, y, n);
        y += n;
    }
    if (rc == 0) rc = sg_resize_stream_end(r);
    sg_resize_stream_free(r);
    return rc;
}

/* The AVX2 kernels give the portable kernels' bytes: noise images of edge and random sizes (drawn from seed), both
 * filters, both pass orders (Pillow 12 and 13), whole image and streamed in random chunks. The portable kernels are
 * the plain Pillow arithmetic, checked against Pillow by the goldens; this covers the sizes the goldens do not (odd
 * widths, widths around the AVX2 transpose's 16-byte loads, one-pixel axes, upscales, large downscale factors). */
static void check_kernels_agree(uint64_t seed) {
    static const int fixed[][4] = {{1, 1, 3, 2},   {1, 7, 1, 3},     {7, 1, 3, 1},     {2, 2, 224, 224}, {3, 5, 224, 224},
                                   {5, 3, 4, 2},   {6, 6, 5, 5},     {7, 9, 3, 4},     {11, 5, 10, 4},   {16, 16, 15, 15},
                                   {17, 33, 9, 7}, {1000, 17, 7, 3}, {17, 1000, 3, 7}, {4032, 3, 224, 1}, {3, 4032, 1, 224},
                                   {333, 999, 224, 224}, {225, 223, 224, 224}, {640, 480, 224, 224}, {1, 300, 1, 224},
                                   {300, 1, 224, 1}};
    enum { NFIXED = sizeof fixed / sizeof fixed[0], NRANDOM = 200 };
    uint64_t rs = seed;
    int cases = 0, same = 0;
    for (int i = 0; i < NFIXED + NRANDOM; i++) {
        int sw, sh, dw, dh;
        if (i < NFIXED) {
            sw = fixed[i][0], sh = fixed[i][1], dw = fixed[i][2], dh = fixed[i][3];
        } else { /* mostly downscales of up to 1200 pixels a side, some upscales */
            sw = 1 + (int)(sg_test_splitmix64(&rs) % 1200), sh = 1 + (int)(sg_test_splitmix64(&rs) % 700);
            dw = 1 + (int)(sg_test_splitmix64(&rs) % 300), dh = 1 + (int)(sg_test_splitmix64(&rs) % 300);
        }
        size_t ndst = (size_t)dw * dh * 3;
        uint8_t *src = noise(5000u + (unsigned)i, sw, sh), *want = malloc(ndst), *got = malloc(ndst);
        for (int filt = SG_RESAMPLE_BILINEAR; filt <= SG_RESAMPLE_BICUBIC; filt++)
            for (int major = 12; major <= 13; major++) {
                sg_resize_portable_kernels(1);
                memset(want, 0xA5, ndst);
                int rw = sg_resize_rgb_pillow(src, sw, sh, want, dw, dh, (sg_resample)filt, major);
                sg_resize_portable_kernels(0);
                memset(got, 0x5A, ndst);
                int ok = rw == 0 && sg_resize_rgb_pillow(src, sw, sh, got, dw, dh, (sg_resample)filt, major) == 0 &&
                         memcmp(want, got, ndst) == 0;
                memset(got, 0x3C, ndst);
                int rstream = resize_streamed(src, sw, sh, got, dw, dh, filt, major, &rs);
                ok = ok && (rstream == -1 || memcmp(want, got, ndst) == 0);
                cases++, same += ok;
                if (!ok)
                    CHECK(0, "AVX2 resize %dx%d -> %dx%d filter %d pillow %d differs from the portable kernels (%s)", sw, sh,
                          dw, dh, filt, major, rstream == 0 ? "whole image or streamed" : "whole image");
            }
        free(src), free(want), free(got);
    }
    CHECK(same == cases, "AVX2 resize kernels = portable kernels, byte for byte, whole image and streamed: %d of %d cases",
          same, cases);
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    uint64_t seed = 0x2545F4914F6CDD1Dull ^ (uint64_t)time(NULL); /* fresh random sizes every run */
    printf("  random sizes seeded from %llu\n", (unsigned long long)seed);
    /* The kernels this CPU picks first; then, where that was AVX2, the same checks on the portable kernels (what CPUs
     * without AVX2 and other architectures run), and the two compared on more sizes. */
    int avx2 = sg_resize_portable_kernels(0);
    const char *kern = avx2 ? "AVX2 kernels" : "portable kernels";
    check_goldens(root, kern, 0);
    check_streamed(seed, kern);
    if (avx2) {
        sg_resize_portable_kernels(1);
        check_goldens(root, "portable kernels", 1);
        check_streamed(seed, "portable kernels");
        sg_resize_portable_kernels(0);
        check_kernels_agree(seed);
    } else {
        SKIP("AVX2 resize kernels: not in this build or not on this CPU (the portable ones ran above)");
    }
    char path[4096];
    uint8_t *out = malloc(224 * 224 * 3);
    /* same size: Pillow returns an unfiltered copy */
    uint8_t *src = noise(99, 224, 224);
    memset(out, 0, 224 * 224 * 3);
    CHECK(sg_resize_rgb(src, 224, 224, out, 224, 224, SG_RESAMPLE_BICUBIC) == 0 && memcmp(src, out, 224 * 224 * 3) == 0,
          "224x224 input is copied, not filtered");
    CHECK(sg_resize_rgb(src, 0, 224, out, 224, 224, SG_RESAMPLE_BILINEAR) == -1 &&
              sg_resize_rgb(src, 224, 224, out, 224, 224, (sg_resample)7) == -1,
          "resize refuses an empty size and an unknown filter");
    free(src);


    /* caps: a real image just over the pixel cap and the file cap fails with a message naming the cap */
    snprintf(path, sizeof path, "%s/tests/images/jpeg_big_800x600.jpg", root);
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    CHECK(o.out_size == 224 && o.resample == SG_RESAMPLE_BILINEAR && o.exif_rotate == 1 && o.fast_decode == 0 &&
              o.max_pixels == 178956970ull,
          "defaults: 224, bilinear, EXIF on, exact decode, pixel cap = Pillow's bomb threshold 178956970");
    char err[512] = "";
    o.max_pixels = 800 * 600 - 1;
    int rc = sg_preprocess_file(path, &o, out, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "exceeds the cap of 479999 pixels"), "pixel cap refuses 800x600 at 479999 (%s)", err);
    o.max_pixels = 800 * 600;
    CHECK(sg_preprocess_file(path, &o, out, NULL, err, sizeof err) == 0, "pixel cap admits 800x600 at 480000");
    o.max_file_bytes = 1000;
    rc = sg_preprocess_file(path, &o, out, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "exceeds the cap of 1000 bytes"), "file-size cap refuses before reading (%s)", err);
    free(out);
    return CHECK_DONE();
}
