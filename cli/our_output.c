/* cli/our_output.c — does an existing file look like one siglip2-embed wrote? (rules in our_output.h) */
#include "our_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "resume.h"

/* The longest first line read to find a JSON output's first row: a row of 65536 values is about 1 MiB, a path
 * at most PATH_MAX escaped, labels a few kB; a file whose first line runs past this is not ours. */
#define JSON_ROW_CAP ((size_t)64 << 20)

static uint32_t u32le(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int starts_with(const unsigned char *h, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && memcmp(h, lit, k) == 0;
}

/* --- JSON and JSONL --- */
enum { J_NOT, J_OURS, J_MORE }; /* not ours; ours; cannot tell yet: the first row goes on past the bytes read */

/* Is the line [l, l+len) (without its '\n') a row of ours? torn: it may also be a beginning of one (the file ends
 * there: a write cut short). comma: an array's row line, which ends in ',' when more rows follow. */
static int row_line(const char *l, size_t len, int torn, int comma) {
    if (comma && len && l[len - 1] == ',' && sg_cli_resume_is_any_row(l, len - 1, 0)) return 1;
    return sg_cli_resume_is_any_row(l, len, torn);
}

/* The verdict on the first n bytes b of a file of size bytes that starts with '{' or '['. */
static int json_verdict(const char *b, size_t n, uint64_t size) {
    const int whole = n == size;
    size_t start = 0;
    int comma = 0;
    if (b[0] == '[') { /* the writer's array: "[" "\n" row ",\n" row ... "\n]\n", or "[]\n" when no row came */
        if (n < 2) return whole ? J_OURS : J_MORE;
        if (b[1] == ']') return size == 2 || (size == 3 && b[2] == '\n') ? J_OURS : J_NOT;
        if (b[1] != '\n') return J_NOT;
        if (n < 3) return whole ? J_OURS : J_MORE;
        if (b[2] == ']') return size == 3 || (size == 4 && n == 4 && b[3] == '\n') ? J_OURS : J_NOT;
        start = 2;
        comma = 1;
    } else if (b[0] != '{') {
        return J_NOT;
    }
    const char *l = b + start, *nl = memchr(l, '\n', n - start);
    if (nl) return row_line(l, (size_t)(nl - l), 0, comma) ? J_OURS : J_NOT;
    /* no '\n' yet: where the file ends here, a torn last row is ours; otherwise read on while it may be a row */
    if (!row_line(l, n - start, 1, comma)) return J_NOT;
    return whole ? J_OURS : J_MORE;
}

/* Reads [0, want) of fd into b, or less at the end of the file; the count read, or -1. */
static ssize_t read_prefix(int fd, char *b, size_t want) {
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, b + got, want - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* 1 if the file at fd (h: its first n bytes; size bytes) is a JSON or JSONL output of ours, reading on (doubling
 * what is read) while its first row may still turn out to be one of ours. */
static int json_ours(int fd, const unsigned char *h, size_t n, uint64_t size) {
    int v = json_verdict((const char *)h, n, size);
    char *b = NULL;
    size_t have = n;
    while (v == J_MORE && have < JSON_ROW_CAP) {
        size_t want = have * 2 < JSON_ROW_CAP ? have * 2 : JSON_ROW_CAP;
        if (want > size) want = (size_t)size;
        char *nb = realloc(b, want);
        if (!nb) break;
        b = nb;
        ssize_t got = read_prefix(fd, b, want);
        if (got <= (ssize_t)have) { /* a read error, or the file shrank under us: not known to be ours */
            v = J_NOT;
            break;
        }
        have = (size_t)got;
        v = json_verdict(b, have, have < want ? have : size);
    }
    free(b);
    return v == J_OURS;
}

/* --- the binary formats: npy, fbin, fvecs, f32 --- */

/* The list a binary output of ours has beside it: 1 if base.paths or base.texts is a regular file and a list of
 * names (sg_cli_our_list); 0 if neither is there; -1 if one is there and is not a list, with why set. */
static int has_list(const char *base, char *why, size_t whylen) {
    static const char *const ext[] = {".paths", ".texts"};
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        char p[4200], lwhy[200];
        struct stat st;
        if ((size_t)snprintf(p, sizeof p, "%s%s", base, ext[i]) >= sizeof p || stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (sg_cli_our_list(p, lwhy, sizeof lwhy) == 1) return 1;
        if (!seen) snprintf(why, whylen, "its FILE%s is not a list of names this tool wrote (%s)", ext[i], lwhy);
        seen = 1;
    }
    return seen ? -1 : 0;
}

/* Reads an unsigned decimal (at most 18 digits, so it fits) at *p; -1 if there is none. */
static int read_count(const char **p, const char *end, uint64_t *v) {
    const char *s = *p;
    *v = 0;
    while (*p < end && **p >= '0' && **p <= '9' && *p - s < 18) *v = *v * 10 + (uint64_t)(*(*p)++ - '0');
    return *p > s && !(*p < end && **p >= '0' && **p <= '9') ? 0 : -1;
}

/* 1 if h (n bytes of a file of size bytes, which starts with the npy magic) is the npy the writer makes
 * (writer.c npy_preamble; np.save of a 2-D float32 array makes the same): version 1.0, the header
 * {'descr': '<f4', 'fortran_order': False, 'shape': (N, D), } padded with spaces to a final '\n', and exactly
 * N*D float32 after it. 0 with what differs in why. */
static int npy_ours(const unsigned char *h, size_t n, uint64_t size, char *why, size_t whylen) {
    static const char k_head[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    if (n < 10 || h[6] != 1 || h[7] != 0) {
        snprintf(why, whylen, "an npy of format version %d.%d, not the 1.0 this tool writes", n > 6 ? h[6] : 0,
                 n > 7 ? h[7] : 0);
        return 0;
    }
    size_t hlen = (size_t)h[8] | (size_t)h[9] << 8, off = 10 + hlen;
    const char *p = (const char *)h + 10, *end = (const char *)h + off;
    uint64_t N = 0, D = 0;
    int ok = off <= n && hlen > 0 && end[-1] == '\n' && (size_t)(end - p) > sizeof k_head &&
             memcmp(p, k_head, sizeof k_head - 1) == 0;
    if (ok) {
        p += sizeof k_head - 1;
        ok = read_count(&p, end, &N) == 0 && end - p > 2 && memcmp(p, ", ", 2) == 0;
    }
    if (ok) {
        p += 2;
        ok = read_count(&p, end, &D) == 0 && D >= 1 && end - p >= 4 && memcmp(p, "), }", 4) == 0;
    }
    if (ok)
        for (p += 4; p < end - 1 && ok; p++) ok = *p == ' ';
    if (!ok) {
        /* the header as text, for the message: up to its first '}' (or 100 bytes), control bytes shown as '?' */
        char shown[104];
        size_t k = 0;
        for (size_t i = 10; i < n && i < off && k < 100; i++) {
            shown[k++] = h[i] >= 0x20 && h[i] < 0x7f ? (char)h[i] : '?';
            if (h[i] == '}') break;
        }
        shown[k] = '\0';
        snprintf(why, whylen, "an npy with header %s, not the '<f4', C-order, 2-D (N, D) one this tool writes", shown);
        return 0;
    }
    if (N > (UINT64_MAX - off) / 4 / D || size != off + N * D * 4) {
        snprintf(why, whylen, "an npy of shape (%llu, %llu) whose size, %llu bytes, does not match it (truncated?)",
                 (unsigned long long)N, (unsigned long long)D, (unsigned long long)size);
        return 0;
    }
    return 1;
}

/* --- reading the file, and saying what a foreign one seems to be --- */

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

/* What a foreign file seems to be, for the message: its first bytes in hex and what (a near miss of one of our
 * formats, said by the caller), or a guess from common magics. f32: the size would fit raw f32, so data is
 * told what this tool's f32 would have had. */
static void describe(const unsigned char *h, size_t n, const char *what, int f32, char *why, size_t whylen) {
    if (!what) what = known_magic(h, n);
    if (!what) {
        size_t text = 0;
        while (text < n && (h[text] >= 0x20 || h[text] == '\n' || h[text] == '\r' || h[text] == '\t')) text++;
        if (text < n && f32)
            what = "data in no format this tool writes (its raw f32 has a FILE.paths / FILE.texts beside it)";
        else if (text < n) what = "data in no format this tool writes";
        else if (starts_with(h, n, "{\"path\":\"") || starts_with(h, n, "{\"text\":\"") || starts_with(h, n, "[{") ||
                 starts_with(h, n, "[\n{"))
            what = "JSON whose first row is not one this tool writes (\"path\" or \"text\", then \"embedding\", "
                   "nothing else)";
        else what = "text that is not this tool's JSON";
    }
    char hex[3 * 8 + 1] = "";
    size_t k = 0;
    for (size_t i = 0; i < n && i < 8; i++) k += (size_t)snprintf(hex + k, sizeof hex - k, i ? " %02x" : "%02x", h[i]);
    snprintf(why, whylen, "starts with %s: %s", hex, what);
}

/* Opens path and reads up to 256 bytes into h (*n of them) and its size. The descriptor, or -1 with the reason in
 * why. */
static int head_of(const char *path, unsigned char h[256], size_t *n, uint64_t *size, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    ssize_t got = -1;
    if (fd >= 0 && fstat(fd, &st) == 0) got = read_prefix(fd, (char *)h, 256);
    if (got < 0) {
        snprintf(why, whylen, "cannot be read to check it: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    *n = (size_t)got;
    *size = (uint64_t)st.st_size;
    return fd;
}

int sg_cli_our_list(const char *path, char *why, size_t whylen) {
    unsigned char h[256];
    size_t n;
    uint64_t size;
    int fd = head_of(path, h, &n, &size, why, whylen);
    if (fd < 0) return -1;
    close(fd);
    if (!memchr(h, 0, n) && !known_magic(h, n)) return 1; /* names may hold any byte but NUL (and '/') */
    describe(h, n, NULL, 0, why, whylen);
    return 0;
}

/* 1 if h (n bytes of a file of size bytes, not JSON of ours) is a binary output of ours: the format's own shape,
 * then its list beside list_base. 0 with a near miss's words in near (or near left empty), and *f32 set when
 * the size alone would fit raw f32. */
static int binary_ours(const unsigned char *h, size_t n, uint64_t size, const char *list_base, char *near,
                       size_t nearlen, int *f32) {
    const char *no_list = " without the FILE.paths / FILE.texts this tool writes beside its outputs";
    const uint32_t w0 = n >= 4 ? u32le(h) : 0, w1 = n >= 8 ? u32le(h + 4) : 0;
    char fmt[100], lwhy[200];
    *f32 = 0;
    if (starts_with(h, n, "\x93NUMPY")) {
        if (!npy_ours(h, n, size, near, nearlen)) return 0;
        snprintf(fmt, sizeof fmt, "an npy");
    } else if (n >= 8 && w1 >= 1 && w1 <= 65536 && size == 8 + (uint64_t)w0 * w1 * 4) {
        snprintf(fmt, sizeof fmt, "an fbin-like header (N = %u, D = %u) that matches the size,", w0, w1);
    } else if (n >= 4 && w0 >= 1 && w0 <= 65536 && size % (4 * ((uint64_t)w0 + 1)) == 0) {
        snprintf(fmt, sizeof fmt, "int32 D = %u before each row as in fvecs or ivecs,", w0);
    } else if (size % 4 == 0) {
        no_list = NULL; /* raw f32: a likeness too weak to name (any size that is a multiple of 4) */
        *f32 = 1;
        snprintf(fmt, sizeof fmt, "raw 4-byte values,");
    } else {
        return 0;
    }
    int list = has_list(list_base, lwhy, sizeof lwhy);
    if (list == 1) return 1;
    if (list < 0) snprintf(near, nearlen, "%s but %s", fmt, lwhy);
    else if (no_list) snprintf(near, nearlen, "%s%s", fmt, no_list);
    return 0;
}

int sg_cli_our_output_listed(const char *path, const char *list_base, char *why, size_t whylen) {
    unsigned char h[256];
    size_t n;
    uint64_t size;
    int fd = head_of(path, h, &n, &size, why, whylen);
    if (fd < 0) return -1;
    int json = size == 0 || (n && (h[0] == '{' || h[0] == '[') && json_ours(fd, h, n, size));
    close(fd);
    if (json) return 1;
    /* What starts as one of our rows is judged as JSON only (raw floats begin with those 9 or 11 bytes with a
     * chance of 2^-72): another tool's JSON with some FILE.paths beside it is not taken for f32. */
    char near[320] = "";
    int f32 = 0;
    if (!starts_with(h, n, "{\"path\":\"") && !starts_with(h, n, "{\"text\":\"") &&
        !starts_with(h, n, "[\n{\"path\":\"") && !starts_with(h, n, "[\n{\"text\":\"") &&
        binary_ours(h, n, size, list_base, near, sizeof near, &f32))
        return 1;
    describe(h, n, near[0] ? near : NULL, f32, why, whylen);
    return 0;
}

int sg_cli_our_output(const char *path, char *why, size_t whylen) {
    return sg_cli_our_output_listed(path, path, why, whylen);
}
