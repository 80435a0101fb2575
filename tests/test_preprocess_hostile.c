/* tests/test_preprocess_hostile.c — every crafted bad file in tests/hostile fails cleanly, with a clear reason.
 *
 * tests/hostile/expect.txt lists each file with a substring its error message must contain (or OK for odd
 * but valid files, such as lying EXIF blocks, which must decode). Each file goes through
 * sg_preprocess_file and sg_decode_rgb with default options, EXIF on and off, both filters, fast decode and
 * whole-image decode (JPEGs are otherwise decoded straight into the resize: both paths must refuse alike); a
 * refused WebP must also be refused with bounded memory (its decode, in a child process, grows the peak RSS by
 * under 32 MB: a canvas is never allocated before the headers and the first frame have passed);
 * under `make asan` this also proves there is no out-of-bounds access or leak. Every prefix of a few valid
 * images (truncation at each length step) must also fail or succeed without crashing. JPEGs with damaged data:
 * both JPEG paths agree with each other (fresh damage every run) and with Pillow (goldens_corrupt.txt); so do RLE
 * BMPs, PSDs, TGAs, GIFs, TIFFs (also with a damaged directory) and WebPs (also with damaged headers), damaged and cut short, whose lines in goldens_corrupt.txt say what Pillow decodes
 * and what it refuses. TGA verdicts that differ between Pillow 12 and 13 are checked with pillow_major 12 and 13.
 */
#include "preprocess/preprocess.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How much decoding the file at path grows a process's peak resident memory, in KB: measured in a child process
 * (fork: the decoders use no threads), so an allocation this process made before cannot hide it. -1 on failure. */
static long decode_peak_growth_kb(const char *path) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return close(fd[0]), close(fd[1]), -1;
    if (pid == 0) {
        close(fd[0]);
        size_t len = 0;
        uint8_t *data = sg_test_read_file(path, &len);
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        sg_rgb_image img = {0};
        char err[512];
        if (data && sg_decode_rgb(data, len, NULL, &img, err, sizeof err) == 0) sg_rgb_image_free(&img);
        getrusage(RUSAGE_SELF, &r1);
        long kb = r1.ru_maxrss - r0.ru_maxrss;
        _exit(write(fd[1], &kb, sizeof kb) == (ssize_t)sizeof kb ? 0 : 1);
    }
    close(fd[1]);
    long kb = -1;
    if (read(fd[0], &kb, sizeof kb) != (ssize_t)sizeof kb) kb = -1;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? kb : -1;
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/tests/hostile/expect.txt", root);
    FILE *g = fopen(path, "r");
    CHECK(g != NULL, "open %s", path);
    if (!g) return CHECK_DONE();
    uint8_t *out = malloc(224 * 224 * 3);
    int n = 0;
    while (fgets(line, sizeof line, g)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        const char *name = line, *want = tab + 1;
        snprintf(path, sizeof path, "%s/tests/hostile/%s", root, name);
        int must_ok = strcmp(want, "OK") == 0, all_ok = 1;
        char err[512] = "", first_err[512] = "";
        for (int v = 0; v < 5; v++) { /* default; no EXIF; bicubic; fast decode; whole-image decode (JPEG) */
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            o.exif_rotate = v != 1;
            if (v == 2) o.resample = SG_RESAMPLE_BICUBIC;
            if (v == 3) o.fast_decode = 1;
            if (v == 4) o.whole_image = 1;
            err[0] = 0;
            clock_t t0 = clock();
            int rc = sg_preprocess_file(path, &o, out, NULL, err, sizeof err);
            double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
            if (v == 0) snprintf(first_err, sizeof first_err, "%s", err);
            int ok = must_ok ? rc == 0 : (rc == -1 && strstr(err, want) != NULL);
            ok = ok && secs < 5.0; /* refused from the header, not after allocating and decoding gigapixels */
            all_ok &= ok;
        }
        CHECK(all_ok, "hostile %s: %s (got: %s)", name, must_ok ? "decodes" : want, must_ok ? (first_err[0] ? first_err : "ok") : first_err);
        if (strncmp(name, "webp_", 5) == 0 && !must_ok) { /* refused from the headers: nothing the size of the canvas */
            long kb = decode_peak_growth_kb(path);
            CHECK(kb >= 0 && kb < 32 * 1024, "hostile %s: refused with bounded memory (peak RSS +%ld KB, under 32 MB)",
                  name, kb);
        }
        n++;
    }
    fclose(g);
    CHECK(n >= 20, "%d hostile files checked (need >= 20)", n);

    /* every prefix of valid files: no crash, a message whenever it fails */
    static const char *names[] = {"jpeg_progressive.jpg", "png_p_trns.png", "gif_interlaced.gif", "bmp_8.bmp", "psd_rgb.psd",
                                  "tga_rle.tga", "jpeg_cmyk.jpg", "png_exif_o6.png", "bmp_rle8.bmp", "bmp_rle4.bmp",
                                  "psd_rgba_rle.psd", "psd_cmyk_5ch_rle.psd", "psd_indexed.psd", "tga_cm24_rle_first4.tga"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        snprintf(path, sizeof path, "%s/tests/images/%s", root, names[k]);
        size_t len = 0;
        uint8_t *data = sg_test_read_file(path, &len);
        int silent = 0, fails = 0, tries = 0, differ = 0;
        size_t step = len / 97 + 1; /* about 100 cut points per file */
        for (size_t cut = 0; data && cut < len; cut += step) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact-size copy so ASan sees any overread */
            memcpy(copy, data, cut);
            char err[512] = "";
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            int rc = sg_preprocess_memory(copy, cut, &o, out, NULL, err, sizeof err);
            fails += rc != 0;
            silent += rc != 0 && err[0] == 0;
            tries++;
            o.whole_image = 1; /* the JPEG decoded whole must refuse the same prefixes */
            char err2[512] = "";
            int rc2 = sg_preprocess_memory(copy, cut, &o, out, NULL, err2, sizeof err2);
            differ += (rc == 0) != (rc2 == 0);
            free(copy);
        }
        CHECK(data && silent == 0 && fails > 0 && differ == 0,
              "%s cut at %d lengths: %d refused, each with a message; streamed and whole-image decode agree on "
              "every cut (%d differ)", names[k], tries, fails, differ);
        free(data);
    }
    /* corrupted JPEG data (bytes overwritten after the headers): the streamed decode and the whole-image decode
     * accept and refuse the same files, and give the same pixels when they accept (libjpeg's corrupt-data
     * warnings are tolerated alike, its errors refused alike) */
    static const char *jpegs[] = {"jpeg_big_800x600.jpg", "jpeg_progressive.jpg", "jpeg_420.jpg", "jpeg_cmyk.jpg"};
    uint8_t *out2 = malloc(224 * 224 * 3);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
    printf("  corruption seed %llu\n", (unsigned long long)x);
    for (size_t k = 0; k < sizeof jpegs / sizeof *jpegs; k++) {
        snprintf(path, sizeof path, "%s/tests/images/%s", root, jpegs[k]);
        size_t len = 0;
        uint8_t *data = sg_test_read_file(path, &len);
        int agree = 0, accepted = 0, n_try = 60;
        for (int t = 0; data && t < n_try; t++) {
            uint8_t *copy = malloc(len);
            memcpy(copy, data, len);
            for (int b = 0; b < 1 + t % 4; b++) { /* 1-4 bytes in the last two thirds (entropy-coded data) */
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                size_t at = len / 3 + (size_t)(x % (len - len / 3 - 2));
                copy[at] = (uint8_t)(x >> 32);
            }
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            char e1[512] = "", e2[512] = "";
            memset(out, 0xA5, 224 * 224 * 3), memset(out2, 0x5A, 224 * 224 * 3);
            int r1 = sg_preprocess_memory(copy, len, &o, out, NULL, e1, sizeof e1);
            o.whole_image = 1;
            int r2 = sg_preprocess_memory(copy, len, &o, out2, NULL, e2, sizeof e2);
            int same = r1 == r2 && (r1 != 0 || memcmp(out, out2, 224 * 224 * 3) == 0) && (r1 == 0 || strcmp(e1, e2) == 0);
            if (!same) printf("  %s corruption %d: streamed %d (%s), whole %d (%s)\n", jpegs[k], t, r1, e1, r2, e2);
            agree += same;
            accepted += r1 == 0;
            free(copy);
        }
        CHECK(data && agree == n_try, "%s with corrupted data: streamed and whole-image decode agree on %d of %d files "
              "(same pixels or the same message; %d decoded)", jpegs[k], agree, n_try, accepted);
        free(data);
    }
    /* the same against Pillow: goldens_corrupt.txt (scripts/make_corrupt_goldens.py) holds Pillow's verdict and
     * pixels for seeded damage of the same kind (JPEGs, RLE BMPs, PSDs, TGAs, GIFs), and for RLE BMPs, PSDs, TGAs and
     * GIFs cut short; both paths must give Pillow's answer. TIFFs get the same, and damage to their directory's
     * entries (dirdamage lines: bytes ifd + 2 + x % (12 * entries)); WebPs likewise, and damage to the container's
     * headers (hdrdamage lines: bytes 12 + x % (min(len, 64) - 12)). Counts: [0] JPEG, [1] BMP, [2] PSD, [3] TGA,
     * [4] GIF, [5] TIFF, [6] WebP; dir[5] counts the directory damage, dir[6] the header damage. */
    snprintf(path, sizeof path, "%s/tests/images/goldens_corrupt.txt", root);
    FILE *gc = fopen(path, "r");
    int ncorrupt[7] = {0}, corrupt_ok[7] = {0}, refused[7] = {0}, ncut[7] = {0}, ndir[7] = {0};
    char src_name[256] = "";
    uint8_t *src = NULL;
    size_t src_len = 0;
    while (gc && fgets(line, sizeof line, gc)) {
        char name[256], verdict[16], hash[32];
        unsigned long long seed = 0, cut_len = 0;
        int nbytes = 0, cut = sscanf(line, "cut %255s %llu %15s %31s", name, &cut_len, verdict, hash) == 4;
        int dir = !cut && sscanf(line, "dirdamage %255s %llu %d %15s %31s", name, &seed, &nbytes, verdict, hash) == 5;
        int hdr = !cut && !dir && sscanf(line, "hdrdamage %255s %llu %d %15s %31s", name, &seed, &nbytes, verdict, hash) == 5;
        if (!cut && !dir && !hdr && sscanf(line, "corrupt %255s %llu %d %15s %31s", name, &seed, &nbytes, verdict, hash) != 5) continue;
        if (strcmp(name, src_name) != 0) {
            free(src);
            snprintf(path, sizeof path, "%s/tests/images/%s", root, name);
            src = sg_test_read_file(path, &src_len);
            snprintf(src_name, sizeof src_name, "%s", name);
        }
        if (!src || src_len < 8 || cut_len > src_len) continue;
        size_t lo = src_len / 3, span = src_len - src_len / 3 - 2; /* where the damage falls */
        if (dir) { /* IFD0's entries (the source is a valid TIFF) */
            int be = src[0] == 'M';
            size_t ifd = be ? (size_t)src[4] << 24 | (size_t)src[5] << 16 | (size_t)src[6] << 8 | src[7]
                            : (size_t)src[7] << 24 | (size_t)src[6] << 16 | (size_t)src[5] << 8 | src[4];
            size_t ne = ifd + 2 <= src_len ? (be ? (size_t)src[ifd] << 8 | src[ifd + 1] : (size_t)src[ifd + 1] << 8 | src[ifd]) : 0;
            if (ne == 0 || ifd + 2 + 12 * ne > src_len) continue;
            lo = ifd + 2, span = 12 * ne;
        }
        if (hdr) lo = 12, span = (src_len < 64 ? src_len : 64) - 12; /* a WebP's first chunk headers */
        size_t bad_len = cut ? (size_t)cut_len : src_len;
        uint8_t *bad = malloc(bad_len ? bad_len : 1); /* exact size: ASan sees any read past a cut */
        memcpy(bad, src, bad_len);
        uint64_t s = seed | 1; /* the damage of make_corrupt_goldens.py */
        for (int b = 0; b < nbytes; b++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            bad[lo + (size_t)(s % span)] = (uint8_t)(s >> 32);
        }
        int pillow_ok = strcmp(verdict, "ok") == 0, good = 1;
        for (int whole = 0; whole < 2; whole++) {
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            o.whole_image = whole;
            char e[512] = "";
            memset(out, 0xA5, 224 * 224 * 3);
            int rc = sg_preprocess_memory(bad, bad_len, &o, out, NULL, e, sizeof e);
            char got[32];
            snprintf(got, sizeof got, "%016llx", (unsigned long long)sg_test_fnv1a64(out, 224 * 224 * 3));
            int ok = pillow_ok ? rc == 0 && strcmp(got, hash) == 0 : rc == -1 && e[0];
            if (!ok) printf("  %s %s %llu, %s path: %s (rc %d, %s; Pillow: %s %s)\n", name,
                            cut ? "cut at" : dir ? "directory seed" : hdr ? "header seed" : "seed",
                            cut ? cut_len : seed, whole ? "whole-image" : "streamed",
                            pillow_ok ? "differs from Pillow" : "decoded, Pillow refuses", rc, e, verdict, hash);
            good &= ok;
        }
        int kind = strstr(name, ".bmp")   ? 1
                   : strstr(name, ".psd") ? 2
                   : strstr(name, ".tga") ? 3
                   : strstr(name, ".gif") ? 4
                   : strstr(name, ".tif") ? 5
                   : strstr(name, ".webp") ? 6
                                         : 0;
        corrupt_ok[kind] += good;
        refused[kind] += !pillow_ok;
        ncorrupt[kind]++;
        ncut[kind] += cut;
        ndir[kind] += dir || hdr;
        free(bad);
    }
    free(src);
    if (gc) fclose(gc);
    CHECK(ncorrupt[0] >= 200 && corrupt_ok[0] == ncorrupt[0],
          "corrupted JPEGs: both paths give Pillow's verdict and pixels on %d of %d (%d of them Pillow refuses)",
          corrupt_ok[0], ncorrupt[0], refused[0]);
    CHECK(ncorrupt[1] >= 150 && ncut[1] >= 50 && corrupt_ok[1] == ncorrupt[1],
          "corrupted and cut RLE BMPs (%d cut): Pillow's verdict and pixels on %d of %d (%d of them Pillow refuses)",
          ncut[1], corrupt_ok[1], ncorrupt[1], refused[1]);
    CHECK(ncorrupt[2] >= 250 && ncut[2] >= 90 && corrupt_ok[2] == ncorrupt[2],
          "corrupted and cut PSDs (%d cut): Pillow's verdict and pixels on %d of %d (%d of them Pillow refuses)",
          ncut[2], corrupt_ok[2], ncorrupt[2], refused[2]);
    CHECK(ncorrupt[3] >= 200 && ncut[3] >= 50 && corrupt_ok[3] == ncorrupt[3] && refused[3] > 0 &&
          refused[3] < ncorrupt[3],
          "corrupted and cut TGAs (%d cut): Pillow's verdict and pixels on %d of %d (%d of them Pillow refuses)",
          ncut[3], corrupt_ok[3], ncorrupt[3], refused[3]);
    CHECK(ncorrupt[4] >= 80 && ncut[4] >= 50 && corrupt_ok[4] == ncorrupt[4] && refused[4] > 0,
          "corrupted and cut GIFs (%d cut): Pillow's verdict and pixels on %d of %d (%d of them Pillow refuses)",
          ncut[4], corrupt_ok[4], ncorrupt[4], refused[4]);
    CHECK(ncorrupt[5] >= 2500 && ncut[5] >= 900 && ndir[5] >= 800 && corrupt_ok[5] == ncorrupt[5] && refused[5] > 0 &&
              refused[5] < ncorrupt[5],
          "corrupted, cut and directory-damaged TIFFs (%d cut, %d in the directory): Pillow's verdict and pixels on %d "
          "of %d (%d of them Pillow refuses)", ncut[5], ndir[5], corrupt_ok[5], ncorrupt[5], refused[5]);
    CHECK(ncorrupt[6] >= 350 && ncut[6] >= 80 && ndir[6] >= 150 && corrupt_ok[6] == ncorrupt[6] && refused[6] > 0 &&
              refused[6] < ncorrupt[6],
          "corrupted, cut and header-damaged WebPs (%d cut, %d in the headers): Pillow's verdict and pixels on %d of %d "
          "(%d of them Pillow refuses)", ncut[6], ndir[6], corrupt_ok[6], ncorrupt[6], refused[6]);
    /* TGA, GIF and TIFF verdicts of Pillow 12.3 and 13 (pillow_major 12, else 13): Pillow 12 refuses 32-bit colour
     * maps; both refuse an RGBA file of fewer than 26 bytes (its footer seek) and a GIF frame of width 0 at x 0
     * (Pillow 12.0 decoded both); Pillow 13's libtiff 4.7.2 refuses 5 strip offsets with 4 byte
     * counts or none, Pillow 12's 4.7.1 reads them; Pillow 12 refuses 1-bit tiles 17 pixels wide (not 2-bit
     * tiles of 19 x 1)
     * and reads what libtiff reads past an entry where its own directory stops, and planar RGBaX tiles, and
     * refuses a one-strip file too short for its memory map; a TIFF tag repeated with the same value is read by both;
     * a JPEG whose MPF index lists more images than entries Pillow 12 refuses (an uncaught struct.error), Pillow 13
     * reads, and a whole index both read */
    static const struct { const char *file; int ok12, ok13; } pv[] = {
        {"images/tga_cm32_first4.tga", 0, 1}, {"hostile/tga_rgba_under_26_bytes.tga", 0, 0}, {"images/tga_32.tga", 1, 1},
        {"images/refused/gif_frame_0_wide_at_x0.gif", 0, 0}, {"hostile/tiff_diff_planar_5_offsets_4_counts.tif", 1, 0},
        {"hostile/tiff_diff_repeated_length.tif", 1, 1}, {"hostile/tiff_diff_planar_5_offsets_no_counts.tif", 1, 0},
        {"hostile/tiff_diff_1bit_tile_17_wide.tif", 0, 1}, {"hostile/tiff_diff_fill2_pred2_after_long_photometric.tif", 1, 1},
        {"hostile/tiff_diff_65_offsets_3_counts.tif", 1, 0}, {"hostile/tiff_diff_planar_rgbax_tiles.tif", 1, 0},
        {"hostile/tiff_diff_2bit_tile_19x1.tif", 1, 1}, {"hostile/tiff_diff_mmap_too_short.tif", 0, 1},
        {"images/jpeg_seg_mpf_short_entries.jpg", 0, 1}, {"images/jpeg_seg_mpf_index.jpg", 1, 1}};
    for (size_t k = 0; k < sizeof pv / sizeof *pv; k++)
        for (int major = 12; major <= 13; major++) {
            snprintf(path, sizeof path, "%s/tests/%s", root, pv[k].file);
            sg_preprocess_opts o;
            sg_preprocess_opts_default(&o);
            o.pillow_major = major;
            char e[512] = "";
            int rc = sg_preprocess_file(path, &o, out, NULL, e, sizeof e), want = major == 12 ? pv[k].ok12 : pv[k].ok13;
            CHECK((rc == 0) == want, "%s with pillow_major %d: %s, as Pillow %d (%s)", pv[k].file, major,
                  want ? "decoded" : "refused", major, e[0] ? e : "ok");
        }
    free(out2);
    free(out);
    return CHECK_DONE();
}
