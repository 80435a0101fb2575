/* cli/our_output.c — does an existing file look like one siglip2-embed wrote? (rules in our_output.h) */
#include "our_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t u32le(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int starts_with(const unsigned char *h, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && memcmp(h, lit, k) == 0;
}

/* A JSON output of ours: a row, or an array whose first non-blank byte after '[' opens a row or closes it. */
static int looks_json(const unsigned char *h, size_t n) {
    if (starts_with(h, n, "{\"path\":\"") || starts_with(h, n, "{\"text\":\"")) return 1;
    if (n == 0 || h[0] != '[') return 0;
    size_t i = 1;
    while (i < n && (h[i] == '\n' || h[i] == ' ')) i++;
    return i == n || h[i] == ']' || starts_with(h + i, n - i, "{\"path\":\"") ||
           starts_with(h + i, n - i, "{\"text\":\"");
}

static int has_sidecar(const char *path) {
    static const char *const ext[] = {".paths", ".texts"};
    for (int i = 0; i < 2; i++) {
        char p[4200];
        struct stat st;
        if ((size_t)snprintf(p, sizeof p, "%s%s", path, ext[i]) < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
            return 1;
    }
    return 0;
}

/* What common file a magic number says this is ("a JPEG image"), or NULL. */
static const char *known_magic(const unsigned char *h, size_t n) {
    static const struct { const char *magic; size_t len; const char *what; } kinds[] = {
        {"\xff\xd8\xff", 3, "a JPEG image"}, {"\x89PNG", 4, "a PNG image"}, {"GIF8", 4, "a GIF image"},
        {"BM", 2, "a BMP image"}, {"RIFF", 4, "a RIFF file (WebP?)"}, {"%PDF", 4, "a PDF"},
        {"PK\x03\x04", 4, "a ZIP archive"}, {"\x1f\x8b", 2, "gzip data"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (n >= kinds[i].len && memcmp(h, kinds[i].magic, kinds[i].len) == 0) return kinds[i].what;
    return NULL;
}

/* What a foreign file seems to be, for the message: its first bytes in hex and a guess from common magics. */
static void describe(const unsigned char *h, size_t n, char *why, size_t whylen) {
    const char *what = known_magic(h, n);
    if (!what) {
        size_t text = 0;
        while (text < n && (h[text] >= 0x20 || h[text] == '\n' || h[text] == '\r' || h[text] == '\t')) text++;
        what = text == n ? "text that is not this tool's JSON" : "data in no format this tool writes";
    }
    char hex[3 * 8 + 1] = "";
    size_t k = 0;
    for (size_t i = 0; i < n && i < 8; i++) k += (size_t)snprintf(hex + k, sizeof hex - k, i ? " %02x" : "%02x", h[i]);
    snprintf(why, whylen, "starts with %s: %s", hex, what);
}

/* Reads up to 256 bytes of path into h (*n of them) and its size. 0, or -1 with the reason in why. */
static int head_of(const char *path, unsigned char h[256], size_t *n, uint64_t *size, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    ssize_t got = -1;
    if (fd >= 0 && fstat(fd, &st) == 0) got = read(fd, h, 256);
    if (got < 0) snprintf(why, whylen, "cannot be read to check it: %s", strerror(errno));
    if (fd >= 0) close(fd);
    if (got < 0) return -1;
    *n = (size_t)got;
    *size = (uint64_t)st.st_size;
    return 0;
}

int sg_cli_our_list(const char *path, char *why, size_t whylen) {
    unsigned char h[256];
    size_t n;
    uint64_t size;
    if (head_of(path, h, &n, &size, why, whylen) != 0) return -1;
    if (!memchr(h, 0, n) && !known_magic(h, n)) return 1; /* names may hold any byte but NUL (and '/') */
    describe(h, n, why, whylen);
    return 0;
}

int sg_cli_our_output(const char *path, char *why, size_t whylen) {
    unsigned char h[256];
    size_t n;
    uint64_t size;
    if (head_of(path, h, &n, &size, why, whylen) != 0) return -1;
    if (size == 0 || looks_json(h, n)) return 1;
    if (starts_with(h, n, "\x93NUMPY") && memmem(h, n, "'descr': '<f4'", 14)) return 1;
    if (n >= 8) {
        uint64_t N = u32le(h), D = u32le(h + 4);
        if (D >= 1 && D <= 65536 && size == 8 + N * D * 4) return 1; /* fbin */
    }
    if (n >= 4) {
        uint64_t D = u32le(h);
        if (D >= 1 && D <= 65536 && size % (4 * (D + 1)) == 0) return 1; /* fvecs */
    }
    if (size % 4 == 0 && has_sidecar(path)) return 1; /* f32 */
    describe(h, n, why, whylen);
    return 0;
}
