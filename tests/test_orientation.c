/* tests/test_orientation.c — EXIF / XMP orientation: Pillow's refusals, and where Pillow 12 and 13 differ.
 *
 * The orientation cases of tests/images (scripts/orient_cases.py) are checked pixel by pixel by test_preprocess
 * through goldens.txt's decode / resize lines; where Pillow raises, goldens.txt has "refused FILE EXIF"
 * instead, and here each must fail: decoded whole and through sg_preprocess_memory (so both JPEG paths), with
 * EXIF rotation on (EXIF 1) or off (EXIF 0). Then sg_exif_orientation on hand-made blocks for the rules Pillow
 * 12 and 13 read differently (repeated entries, an out-of-line entry larger than the block, "Exif\0\0" three
 * times), and sg_zlib_inflate's verdicts (a cut stream decodes partly, a bad checksum is an error, the cap).
 */
#include "preprocess/internal.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>

static void check_refused(const char *root) {
    char path[4096], line[1024], name[256], err[512];
    snprintf(path, sizeof path, "%s/tests/images/goldens.txt", root);
    FILE *g = fopen(path, "r");
    CHECK(g != NULL, "open %s", path);
    int n = 0, bad = 0, exif;
    uint8_t *out = malloc(224 * 224 * 3);
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    while (g && fgets(line, sizeof line, g)) {
        size_t len = 0;
        if (sscanf(line, "refused %255s %d", name, &exif) != 2) continue;
        o.exif_rotate = exif;
        snprintf(path, sizeof path, "%s/tests/images/%s", root, name);
        uint8_t *data = sg_test_read_file(path, &len);
        sg_rgb_image img;
        int whole = data ? sg_decode_rgb(data, len, &o, &img, err, sizeof err) : 0;
        int mem = data ? sg_preprocess_memory(data, len, &o, out, NULL, err, sizeof err) : 0;
        CHECK(data && whole == -1 && mem == -1, "%s exif=%d: refused, as by Pillow (%s)", name, exif, err);
        bad += !(data && whole == -1 && mem == -1);
        n++;
        free(data);
    }
    if (g) fclose(g);
    CHECK(n >= 10 && bad == 0, "%d Pillow refusals of orientation metadata reproduced (%d not)", n, bad);
    free(out);
}

/* A big-endian TIFF block with two Orientation entries: (type, count, value field) each. */
static size_t two_entries(uint8_t *b, int t1, uint32_t c1, uint32_t v1, int t2, uint32_t c2, uint32_t v2) {
    static const uint8_t head[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 2};
    memcpy(b, head, sizeof head);
    uint8_t *e = b + sizeof head;
    int t[2] = {t1, t2};
    uint32_t c[2] = {c1, c2}, v[2] = {v1, v2};
    for (int i = 0; i < 2; i++, e += 12) {
        uint8_t x[12] = {0x01, 0x12, 0, (uint8_t)t[i], (uint8_t)(c[i] >> 24), (uint8_t)(c[i] >> 16), (uint8_t)(c[i] >> 8),
                         (uint8_t)c[i], (uint8_t)(v[i] >> 24), (uint8_t)(v[i] >> 16), (uint8_t)(v[i] >> 8), (uint8_t)v[i]};
        memcpy(e, x, 12);
    }
    memset(e, 0, 4);
    return (size_t)(e + 4 - b);
}

static void check_pillow_versions(void) {
    uint8_t b[64 + 12];
    size_t n = two_entries(b, 3, 1, 6u << 16, 3, 1, 3u << 16);
    CHECK(sg_exif_orientation(b, n, 0) == 6 && sg_exif_orientation(b, n, 12) == 3,
          "a repeated Orientation: Pillow 13 keeps the first (6), Pillow 12 the last (3)");
    n = two_entries(b, 3, 100000, 0, 3, 1, 5u << 16);
    CHECK(sg_exif_orientation(b, n, 0) == 5 && sg_exif_orientation(b, n, 12) == SG_EXIF_ABSENT,
          "an entry with more data than the block: Pillow 13 skips it (then 5), Pillow 12 stops reading (absent)");
    n = two_entries(b, 1, 1, 6u << 24, 14, 1, 6u << 16);
    CHECK(sg_exif_orientation(b, n, 0) == 1 && sg_exif_orientation(b, n, 12) == 1,
          "a BYTE 6 is present but never rotates; a type Pillow does not know is skipped");
    uint8_t p[18 + sizeof b];
    memcpy(p, "Exif\0\0Exif\0\0Exif\0\0", 18);
    n = two_entries(p + 18, 3, 1, 8u << 16, 3, 1, 8u << 16) + 18;
    CHECK(sg_exif_orientation(p, n, 0) == SG_EXIF_REFUSED && sg_exif_orientation(p, n, 12) == 8 &&
              sg_exif_orientation(p + 6, n - 6, 0) == 8,
          "\"Exif\\0\\0\" three times: Pillow 13 strips two and raises, Pillow 12 strips all");
}

/* A zlib stream of one stored block holding src (n < 65536): header, block, Adler-32. Returns its length. */
static size_t stored_stream(const uint8_t *src, size_t n, uint8_t *z) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) a = (a + src[i]) % 65521, b = (b + a) % 65521;
    uint8_t h[7] = {0x78, 0x01, 1, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)~n, (uint8_t)(~n >> 8)};
    memcpy(z, h, 7);
    memcpy(z + 7, src, n);
    uint8_t t[4] = {(uint8_t)(b >> 8), (uint8_t)b, (uint8_t)(a >> 8), (uint8_t)a};
    memcpy(z + 7 + n, t, 4);
    return n + 11;
}

/* Huffman blocks are checked through the PNG goldens (Pillow-compressed text, cut and damaged); here the
 * verdicts on a stored block. */
static void check_inflate(void) {
    uint8_t src[5000], z[5100], *out = NULL;
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 13 + (i >> 7));
    size_t zn = stored_stream(src, sizeof src, z), on;
    int rc = sg_zlib_inflate(z, zn, 1 << 20, &out, &on);
    CHECK(rc == 0 && on == sizeof src && memcmp(out, src, on) == 0, "inflate gives a stored block back (%zu)", on);
    free(out);
    rc = sg_zlib_inflate(z, zn / 2, 1 << 20, &out, &on);
    CHECK(rc == 0 && on == zn / 2 - 7 && memcmp(out, src, on) == 0,
          "a stream cut in half gives what it holds, as Python's decompressobj (%zu bytes)", on);
    free(out);
    z[zn - 1] ^= 1;
    CHECK(sg_zlib_inflate(z, zn, 1 << 20, &out, &on) == -1, "a bad Adler-32 is an error (zlib.error)");
    z[zn - 1] ^= 1;
    z[1] ^= 1;
    CHECK(sg_zlib_inflate(z, zn, 1 << 20, &out, &on) == -1, "a bad header check is an error");
    z[1] ^= 1;
    CHECK(sg_zlib_inflate(z, zn, 4999, &out, &on) == 1, "output past the cap with input left over is refused");
    CHECK(sg_zlib_inflate(z, zn, 5000, &out, &on) == 0 && on == 5000, "output exactly at the cap is not");
    free(out);
    CHECK(sg_zlib_inflate(z, 7 + 5000, 4999, &out, &on) == 1,
          "a stored byte past the cap is input left over even as the last byte (Python: ValueError)");
    CHECK(sg_zlib_inflate(z, 7 + 4999, 4999, &out, &on) == 0 && on == 4999, "a cut stored block ending at the cap is not");
    free(out);
}

/* A Huffman stream (Python's zlib.compress at level 9 of 8 copies of a 600-byte pattern: long matches, the
 * table-driven fast path) and its verdicts as Python's decompressobj / zlib with n bytes of room give them. */
static void check_inflate_huffman(void) {
    static const uint8_t z[] =
        "\x78\xda\x63\xe0\x95\x52\x37\x71\xf4\x8b\xce\x28\x6d\xea\x9f\xb3\x72\xdb\xe1\x0b\x77\x5f\x7d\x67"
        "\x11\x94\xd3\xb6\x70\x0d\x8a\xcf\xa9\x6c\x9b\xbc\x60\xed\xae\xe3\x57\x1e\xbe\xfb\xcd\x21\xaa\xa4"
        "\x6f\xe3\x19\x96\x5c\x50\xdb\x35\x7d\xc9\xc6\x7d\xa7\x6f\x3c\xfd\xf4\x9f\x47\x52\xcd\xd8\xc1\x37"
        "\x2a\xbd\xa4\xb1\x6f\xf6\x8a\xad\x87\xce\xdf\x79\xf9\x8d\x59\x40\x56\xcb\xdc\x25\x30\x2e\xbb\xa2"
        "\x75\xd2\xfc\x35\x3b\x8f\x5d\x7e\xf0\xf6\x17\xbb\x88\xa2\x9e\xb5\x47\x68\x52\x7e\x4d\xe7\xb4\xc5"
        "\x1b\xf6\x9e\xba\xfe\xe4\xe3\x3f\x6e\x09\x55\x23\x7b\x9f\xc8\xb4\x62\x0a\xb4\x36\xf4\xce\x5a\xbe"
        "\xe5\xe0\xb9\xdb\x2f\xbe\x32\xf1\xcb\x68\x9a\x39\x07\xc4\x66\x95\xb7\x4c\x9c\xb7\x7a\xc7\xd1\x4b"
        "\xf7\xdf\xfc\x64\x13\x56\xd0\xb5\x72\x0f\x49\xcc\xab\xee\x98\xba\x68\xfd\x9e\x93\xd7\x1e\x7f\xf8"
        "\xcb\x25\xae\x62\x68\xe7\x1d\x91\x5a\x54\xdf\x33\x73\xd9\xe6\x03\x67\x6f\x3d\xff\x42\x81\x56\x46"
        "\x3e\x69\x0d\x53\x27\xff\x98\xcc\xb2\xe6\x09\x73\x57\x6d\x3f\x72\xf1\xde\xeb\x1f\xac\x42\xf2\x3a"
        "\x96\x6e\xc1\x09\xb9\x55\xed\x53\x16\xae\xdb\x7d\xe2\xea\xa3\xf7\x7f\x38\xc5\x94\x0d\x6c\xbd\xc2"
        "\x53\x0a\xeb\xba\x67\x2c\xdd\xb4\xff\xcc\xcd\x67\x9f\x19\xe0\xa1\x4e\x81\x56\xaa\x44\x18\xad\xe2"
        "\x9a\x61\x34\x5d\x8d\xa6\xab\xd1\x74\x35\x9a\xae\x46\xd3\xd5\x68\xba\x1a\x4d\x57\xa3\xe9\x6a\x34"
        "\x5d\x8d\xa6\xab\xd1\x74\x35\x9a\xae\x46\xd3\xd5\x68\xba\x1a\x4d\x57\xa3\xe9\x8a\x4a\x71\x0d\x00"
        "\xbe\x4e\x46\xa8";
    uint8_t src[4800], *out = NULL, exact[4801];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)((i % 600) * 13 + ((i % 600) >> 7));
    size_t on;
    int rc = sg_zlib_inflate(z, sizeof z, 1 << 20, &out, &on);
    CHECK(rc == 0 && on == sizeof src && memcmp(out, src, on) == 0, "inflate gives a Huffman stream back (%zu)", on);
    free(out);
    rc = sg_zlib_inflate(z, 200, 1 << 20, &out, &on);
    CHECK(rc == 0 && on == 244 && memcmp(out, src, on) == 0, "a Huffman stream cut at 200 bytes gives 244, as Python (%zu)", on);
    free(out);
    CHECK(sg_zlib_inflate(z, sizeof z, 4799, &out, &on) == 1, "a Huffman stream past the cap is refused");
    CHECK(sg_zlib_inflate(z, sizeof z, 4800, &out, &on) == 0 && on == 4800, "a Huffman stream exactly at the cap is not");
    free(out);
    CHECK(sg_zlib_inflate_exact(z, sizeof z, exact, 4800) == 0 && memcmp(exact, src, 4800) == 0, "exact: all of it");
    CHECK(sg_zlib_inflate_exact(z, sizeof z, exact, 4799) == 0 && memcmp(exact, src, 4799) == 0, "exact: one byte short");
    CHECK(sg_zlib_inflate_exact(z, sizeof z, exact, 4801) == -1, "exact: a byte more than the stream holds");
    CHECK(sg_zlib_inflate_exact(z, sizeof z - 5, exact, 4800) == 0, "exact: the Adler-32 cut off is no error");
}

/* A match too far back right after the cap: zlib checks the distance only once it has room to copy, so with
 * the cap (or n bytes of room) reached it stops without an error: a fixed block of 'S', then length 3 at
 * distance 2, then end of block. Python: decompress(s, 1) gives b"S" with input left; decompress(s, 2) raises. */
static void check_inflate_zlib_edges(void) {
    static const uint8_t z[] = {0x78, 0x01, 0x0b, 0x06, 0x42, 0x00, 0x00, 0x00, 0x00, 0x00};
    uint8_t *out = NULL, o[2];
    size_t on;
    CHECK(sg_zlib_inflate(z, sizeof z, 1, &out, &on) == 1, "too far back after the cap: input left over (Python: ValueError)");
    CHECK(sg_zlib_inflate(z, sizeof z, 2, &out, &on) == -1, "too far back with room: zlib.error");
    CHECK(sg_zlib_inflate_exact(z, sizeof z, o, 1) == 0 && o[0] == 'S', "exact: too far back after the n-th byte is no error");
    CHECK(sg_zlib_inflate_exact(z, sizeof z, o, 2) == -1, "exact: too far back with room is");
    /* A dynamic block whose code-length code has no codes: zlib reads each bit as length 0 and finds the end-
     * of-block code missing only after all 264 + 1 lengths, so a stream cut before then is no error. */
    uint8_t e[43] = {0x58, 0xc3, 0x3d};
    CHECK(sg_zlib_inflate(e, 8, 1 << 20, &out, &on) == 0 && on == 0, "no code-length codes, cut: no error, as zlib");
    CHECK(sg_zlib_inflate(e, sizeof e, 1 << 20, &out, &on) == -1, "no code-length codes: missing end-of-block");
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    check_refused(root);
    check_pillow_versions();
    check_inflate();
    check_inflate_huffman();
    check_inflate_zlib_edges();
    return CHECK_DONE();
}
