/* tests/test_cli_units.c — the command's pure parts in isolation: flag parsing, shard hashing, JSON text,
 * how messages show a path (shown_path.h), the resume line parser and file repair, the path set, the enumerator, the writers' bytes, and which existing
 * files -o may replace (our_output.h).
 * (End-to-end behaviour with the real model is in test_cli.sh and test_cli_formats.py.) */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "../cli/args.h"
#include "../cli/buf.h"
#include "../cli/inputs.h"
#include "../cli/json_text.h"
#include "../cli/our_output.h"
#include "../cli/pathset.h"
#include "../cli/resume.h"
#include "../cli/shard.h"
#include "../cli/shown_path.h"
#include "../cli/writer.h"
#include "../cli/zeroshot.h"

static char g_tmp[512];

static int parse(sg_cli_args *a, char *err, const char *first, ...) {
    static char *argv[64];
    int argc = 0;
    argv[argc++] = "siglip2-embed";
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) argv[argc++] = (char *)s;
    va_end(ap);
    argv[argc] = NULL;
    return sg_cli_args_parse(argc, argv, a, err, 512);
}

static void test_args(void) {
    sg_cli_args a;
    char err[512];
    CHECK(parse(&a, err, "x.jpg", NULL) == 0 && a.npaths == 1 && a.normalize == 1 && a.batch == 32 &&
              a.format == SG_FMT_AUTO && a.on_error == SG_ON_ERROR_SKIP && a.shard_n == 0,
          "args: defaults");
    CHECK(parse(&a, err, "d1", "-o", "out.npy", "d2", "--batch", "7", "-j", "3", "--no-normalize", NULL) == 0 &&
              a.npaths == 2 && strcmp(a.paths[0], "d1") == 0 && strcmp(a.paths[1], "d2") == 0 &&
              strcmp(a.output, "out.npy") == 0 && a.batch == 7 && a.threads == 3 && a.normalize == 0,
          "args: options after operands are parsed (GNU permutation)");
    CHECK(parse(&a, err, "--", "-o", NULL) == 0 && a.npaths == 1 && strcmp(a.paths[0], "-o") == 0,
          "args: -- ends options");
    CHECK(parse(&a, err, "--shard", "3/8", "--on-error", "null", "--format", "fvecs", "--backend", "cuda",
                "--precision", "fp8", "--resample", "bicubic", "--no-exif-rotate", "--fast-decode",
                "--max-pixels", "4M", "--max-file-size", "10MiB", "--dump-preprocessed", "dd", "x", NULL) == 0 &&
              a.shard_k == 3 && a.shard_n == 8 && a.on_error == SG_ON_ERROR_NULL && a.format == SG_FMT_FVECS &&
              a.backend == SG_BACKEND_CUDA && a.precision == SG_PRECISION_FP8 &&
              a.resample == SG_RESAMPLE_BICUBIC && a.exif_rotate == 0 && a.fast_decode == 1 &&
              a.max_pixels == 4ull << 20 && a.max_file_bytes == 10ull << 20 && strcmp(a.dump_dir, "dd") == 0,
          "args: every pass-through option");
    CHECK(parse(&a, err, "-", NULL) == 0 && a.npaths == 1, "args: lone - is an operand");
    struct { const char *why; const char *v[6]; const char *needle; } bad[] = {
        {"unknown long option", {"--frobnicate", "x"}, "--frobnicate"},
        {"unknown short option", {"-Z", "x"}, "-Z"},
        {"missing value", {"x", "--batch"}, "needs a value"},
        {"batch 0", {"--batch", "0", "x"}, "--batch"},
        {"batch not a number", {"--batch", "12abc", "x"}, "12abc"},
        {"threads too many", {"-j", "99999", "x"}, "--threads"},
        {"bad format", {"--format", "csv", "x"}, "csv"},
        {"bad on-error", {"--on-error", "ignore", "x"}, "ignore"},
        {"bad backend", {"--backend", "tpu", "x"}, "tpu"},
        {"bad shard K>=N", {"--shard", "4/4", "x"}, "0-based"},
        {"bad shard form", {"--shard", "1-4", "x"}, "K/N"},
        {"no inputs", {NULL}, "no input"},
        {"two stdin", {"-", "-"}, "only once"},
        {"stdin twice", {"--files-from", "-", "-"}, "stdin"},
        {"-0 without files-from", {"-0", "x"}, "-0"},
        {"resume without -o", {"--resume", "x"}, "-o FILE"},
        {"flag with value", {"--quiet=3", "x"}, "takes no value"},
        {"max-pixels 0", {"--max-pixels", "0", "x"}, "--max-pixels"},
        {"size suffix junk", {"--max-file-size", "3Q", "x"}, "3Q"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = parse(&a, err, bad[i].v[0], bad[i].v[1], bad[i].v[2], bad[i].v[3], NULL);
        CHECK(rc == -1 && strstr(err, bad[i].needle), "args: rejects %s (message: %s)", bad[i].why, err);
        sg_cli_args_free(&a);
    }
    /* Issue 14, item 11: GPU-only options with --backend cpu are refused (with auto they are warned about) */
    CHECK(parse(&a, err, "--backend", "cpu", "--precision", "fp8", "x", NULL) == -1 && strstr(err, "--precision"),
          "args: --backend cpu --precision fp8 refused (%s)", err);
    CHECK(parse(&a, err, "--backend", "cpu", "--device", "3", "x", NULL) == -1 && strstr(err, "--device"),
          "args: --backend cpu --device 3 refused (%s)", err);
    CHECK(parse(&a, err, "--device", "3", "--precision", "bf16", "x", NULL) == 0 && a.device_set && a.device == 3,
          "args: --device and --precision accepted with auto");
    /* Issue 14, item 12: every --files-from is kept, in order; stdin only once */
    CHECK(parse(&a, err, "--files-from", "l1", "x", "--files-from", "-", "--files-from", "l3", NULL) == 0 &&
              a.nfiles_from == 3 && strcmp(a.files_from[0], "l1") == 0 && strcmp(a.files_from[1], "-") == 0 &&
              strcmp(a.files_from[2], "l3") == 0,
          "args: repeated --files-from keeps every list in order");
    sg_cli_args_free(&a);
    CHECK(parse(&a, err, "--files-from", "-", "--files-from", "-", NULL) == -1 && strstr(err, "only once"),
          "args: --files-from - twice refused (%s)", err);
    sg_cli_args_free(&a);
    CHECK(parse(&a, err, "--help", NULL) == 0 && a.help, "args: --help needs no input");
    CHECK(parse(&a, err, "--version", NULL) == 0 && a.version, "args: --version");
    /* Issue 14, item 7: -o out.NPY is npy, as input discovery takes x.JPG */
    CHECK(sg_cli_format_from_path("a/b.npy") == SG_FMT_NPY && sg_cli_format_from_path("x.JSONL") == SG_FMT_JSONL &&
              sg_cli_format_from_path("out.NPY") == SG_FMT_NPY && sg_cli_format_from_path("o.NdJson") == SG_FMT_JSONL &&
              sg_cli_format_from_path("x.txt") == SG_FMT_AUTO &&
              sg_cli_format_from_path("x.ndjson") == SG_FMT_JSONL &&
              sg_cli_format_from_path("dir.fbin/x") == SG_FMT_AUTO &&
              sg_cli_format_from_path("e.fvecs") == SG_FMT_FVECS,
          "args: format from extension");
    sg_cli_args_free(&a);
}

static void test_shard(void) {
    /* Published FNV-1a 64 test vectors (Fowler/Noll/Vo reference code): "" and "a" and "foobar". */
    CHECK(sg_cli_fnv1a64("") == 0xcbf29ce484222325ull && sg_cli_fnv1a64("a") == 0xaf63dc4c8601ec8cull &&
              sg_cli_fnv1a64("foobar") == 0x85944171f73967e8ull,
          "shard: FNV-1a 64 matches the reference vectors");
    int k, n;
    char err[256];
    CHECK(sg_cli_shard_parse("0/1", &k, &n, err, sizeof err) == 0 && k == 0 && n == 1, "shard: 0/1");
    CHECK(sg_cli_shard_parse("-1/4", &k, &n, err, sizeof err) == -1, "shard: negative K refused");
    CHECK(sg_cli_shard_parse("1/0", &k, &n, err, sizeof err) == -1, "shard: N = 0 refused");
    /* every path in exactly one shard, roughly balanced */
    int counts[7] = {0}, bad = 0;
    for (int i = 0; i < 7000; i++) {
        char p[64];
        snprintf(p, sizeof p, "photos/%05d.jpg", i);
        int owners = 0;
        for (int s = 0; s < 7; s++)
            if (sg_cli_shard_keep(p, s, 7)) {
                owners++;
                counts[s]++;
            }
        bad += owners != 1;
    }
    int minc = 7000, maxc = 0;
    for (int s = 0; s < 7; s++) {
        if (counts[s] < minc) minc = counts[s];
        if (counts[s] > maxc) maxc = counts[s];
    }
    CHECK(bad == 0, "shard: each of 7000 paths in exactly one of 7 shards");
    CHECK(minc > 850 && maxc < 1150, "shard: balanced (min %d, max %d of expected 1000)", minc, maxc);
}

static void test_json(void) {
    sg_cli_buf b = {0};
    sg_cli_json_put_string(&b, "a\"b\\c\n\x01\x7f/é");
    CHECK(strcmp(b.p, "\"a\\\"b\\\\c\\n\\u0001\x7f/é\"") == 0, "json: escapes quotes, backslash, controls: %s", b.p);
    sg_cli_buf_clear(&b);
    sg_cli_json_put_string(&b, "bad\xff\xc0\xafok\xed\xa0\x80\xf0\x9f\x98\x80");
#define FFFD "\xEF\xBF\xBD"
    CHECK(strcmp(b.p, "\"bad" FFFD FFFD FFFD "ok" FFFD FFFD FFFD "\xf0\x9f\x98\x80\"") == 0,
          "json: invalid UTF-8 bytes (stray, overlong, surrogate) become U+FFFD, valid 4-byte kept");
    sg_cli_buf_clear(&b);
    sg_cli_buf_puts(&b, "x\xe2\x82");
    sg_cli_buf_clear(&b);
    sg_cli_json_put_string(&b, "\xe2\x82");
    CHECK(strcmp(b.p, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"") == 0, "json: truncated sequence at the end does not overread");
    /* floats: %.9g round-trips every float32; check a spread of random bit patterns */
    srand(12345);
    int fails = 0, differ = 0;
    char ref[64];
    uint64_t x = (uint64_t)time(NULL) | 1; /* fresh bit patterns every run (xorshift64) */
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t u = (uint32_t)x;
        float f;
        memcpy(&f, &u, 4);
        if (!isfinite(f)) continue;
        sg_cli_buf_clear(&b);
        sg_cli_json_put_float(&b, f);
        float g = strtof(b.p, NULL);
        fails += memcmp(&f, &g, 4) != 0;
        snprintf(ref, sizeof ref, "%.9g", (double)f);
        differ += strcmp(ref, b.p) != 0;
    }
    CHECK(fails == 0, "json: 300000 random float32 round-trip through the text exactly (%d failures)", fails);
    /* 2 in 20 million differed in the last digit when measured: allow a handful, not a pattern */
    CHECK(differ <= 3, "json: the fast formatter writes printf's %%.9g text (%d of 300000 differ)", differ);
    const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.0001f, 0.00001f, 123456789.0f, 1e9f, 999999999.0f,
                          1.17549435e-38f, 1e-45f, 3.40282347e+38f, 0.1f, 1.0f / 3.0f, 100.0f, 1e-10f};
    int bad_edge = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        sg_cli_buf_clear(&b);
        sg_cli_json_put_float(&b, edge[i]);
        snprintf(ref, sizeof ref, "%.9g", (double)edge[i]);
        if (strcmp(ref, b.p) != 0) {
            printf("  edge case %s written as %s\n", ref, b.p);
            bad_edge++;
        }
    }
    CHECK(bad_edge == 0, "json: edge cases (zeros, powers of ten, denormals, FLT_MAX) match printf exactly");
    sg_cli_buf_clear(&b);
    sg_cli_json_put_float(&b, NAN);
    sg_cli_buf_putc(&b, ',');
    sg_cli_json_put_float(&b, -INFINITY);
    CHECK(strcmp(b.p, "null,null") == 0, "json: NaN and inf become null");
    /* base64 (path_base64): RFC 4648 test vectors, and random byte strings round-trip */
    static const char *const vec[][2] = {{"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foobar", "Zm9vYmFy"}};
    int b64_ok = 1;
    sg_cli_buf d = {0};
    for (size_t i = 0; i < 4; i++) {
        sg_cli_buf_clear(&b);
        sg_cli_base64_put(&b, (const unsigned char *)vec[i][0], strlen(vec[i][0]));
        b64_ok &= strcmp(b.p, vec[i][1]) == 0 && sg_cli_base64_decode(b.p, b.len, &d) == 0 && strcmp(d.p, vec[i][0]) == 0;
    }
    for (int i = 0; i < 1000 && b64_ok; i++) {
        unsigned char raw[40];
        size_t n = (size_t)(x % 40);
        for (size_t k = 0; k < n; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            raw[k] = (unsigned char)(x | 1); /* no NUL: paths have none */
        }
        sg_cli_buf_clear(&b);
        sg_cli_base64_put(&b, raw, n);
        b64_ok &= sg_cli_base64_decode(b.p, b.len, &d) == 0 && d.len == n && memcmp(d.p, raw, n) == 0;
    }
    b64_ok &= sg_cli_base64_decode("Zm9", 3, &d) == -1 && sg_cli_base64_decode("Zg==Zg==", 8, &d) == -1 &&
              sg_cli_base64_decode("Zh==", 4, &d) == -1 && sg_cli_base64_decode("Z!==", 4, &d) == -1;
    CHECK(b64_ok, "json: base64 matches RFC 4648, round-trips 1000 random names, refuses non-canonical text");
    sg_cli_buf_free(&d);
    sg_cli_buf_free(&b);
}

/* UTF-8 bytes of code point cp into out (NUL-terminated); returns out. */
static char *utf8(unsigned cp, char out[5]) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xE0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | cp >> 18);
        *o++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    *o = 0;
    return out;
}

/* What printf '%b' does with a shown path: \\, \n, \r, \t and \xNN back to bytes; -1 on any other escape. */
static int unescape(const char *s, sg_cli_buf *out) {
    sg_cli_buf_clear(out);
    while (*s) {
        if (*s != '\\') {
            sg_cli_buf_putc(out, *s++);
            continue;
        }
        char c = s[1];
        unsigned v;
        if (c == '\\' || c == 'n' || c == 'r' || c == 't') {
            sg_cli_buf_putc(out, c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : '\\');
            s += 2;
        } else if (c == 'x' && s[2] && s[3] && sscanf(s + 2, "%2x", &v) == 1) {
            sg_cli_buf_putc(out, (char)v);
            s += 4;
        } else {
            return -1;
        }
    }
    return 0;
}

static void test_shown_path(void) {
    /* messages: every byte visible, the path recoverable */
    char shown[128];
    sg_cli_shown_path("a\\b\r\n\t\x1b[31m\x7f\xff\xc2\x85\xc3\xa9.jpg", shown, sizeof shown);
    CHECK(strcmp(shown, "a\\\\b\\r\\n\\t\\x1b[31m\\x7f\\xff\\xc2\\x85\xc3\xa9.jpg") == 0,
          "shown path: backslash, CR/LF/tab, ESC, DEL, invalid UTF-8 and C1 escaped; printable UTF-8 kept (%s)", shown);
    /* Characters that draw nothing or look like a plain space: each of their UTF-8 bytes as \xNN, so that
     * "x.jpg<U+00A0>" is not shown as "x.jpg ". Each range's ends and some inner points... */
    static const unsigned unseen[] = {0x00A0, 0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x1680, 0x17B4, 0x17B5,
                                      0x180B, 0x180E, 0x180F, 0x2000, 0x2007, 0x200A, 0x200B, 0x200C, 0x200D,
                                      0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202D, 0x202E, 0x202F, 0x205F,
                                      0x2060, 0x2064, 0x2066, 0x2069, 0x206F, 0x3000, 0x3164, 0xFE00, 0xFE0F,
                                      0xFEFF, 0xFFA0, 0xFFF0, 0xFFF9, 0xFFFA, 0xFFFB, 0x1BCA0, 0x1BCA3, 0x1D173,
                                      0x1D17A, 0xE0001, 0xE0020, 0xE007F, 0xE0100, 0xE01EF, 0xE0FFF};
    /* ... and the visible characters just outside each range, which pass through as themselves. */
    static const unsigned seen[] = {0x00A1, 0x00AC, 0x00AE, 0x00E9, 0x034E, 0x0350, 0x061B, 0x061D, 0x115E,
                                    0x1161, 0x167F, 0x1681, 0x17B3, 0x17B6, 0x180A, 0x1810, 0x1FFF, 0x2010,
                                    0x2027, 0x2030, 0x205E, 0x2070, 0x2FFF, 0x3001, 0x3163, 0x3165, 0x4E2D,
                                    0xFDFF, 0xFE10, 0xFEFE, 0xFF00, 0xFF9F, 0xFFA1, 0xFFEF, 0xFFFC, 0xFFFD,
                                    0x1BC9F, 0x1BCA4, 0x1D172, 0x1D17B, 0x1F600, 0xDFFFF, 0xE1000};
    int unseen_ok = 1, seen_ok = 1;
    char ch[5], name[32], want[64], got[64];
    for (size_t i = 0; i < sizeof unseen / sizeof unseen[0]; i++) {
        utf8(unseen[i], ch);
        snprintf(name, sizeof name, "x.jpg%s", ch);
        int o = snprintf(want, sizeof want, "x.jpg");
        for (const unsigned char *p = (const unsigned char *)ch; *p; p++)
            o += snprintf(want + o, sizeof want - (size_t)o, "\\x%02x", *p);
        sg_cli_shown_path(name, got, sizeof got);
        if (strcmp(got, want) != 0) {
            if (unseen_ok) printf("  U+%04X shown as %s, expected %s\n", unseen[i], got, want);
            unseen_ok = 0;
        }
    }
    CHECK(unseen_ok, "shown path: non-ASCII spaces, U+2028/9, soft hyphen, zero-width and bidi characters, BOM, "
                     "fillers, variation selectors, tags and U+FFF9..B escaped byte by byte (%zu characters)",
          sizeof unseen / sizeof unseen[0]);
    for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++) {
        snprintf(name, sizeof name, "x%s.jpg", utf8(seen[i], ch));
        sg_cli_shown_path(name, got, sizeof got);
        if (strcmp(got, name) != 0) {
            if (seen_ok) printf("  U+%04X shown as %s\n", seen[i], got);
            seen_ok = 0;
        }
    }
    CHECK(seen_ok, "shown path: the visible characters either side of each escaped range pass through (%zu)",
          sizeof seen / sizeof seen[0]);
    /* printf '%b' gives the name back: random names made of pieces that exercise every rule (an escaped
     * character, a visible one, a control, a lone or truncated sequence, an encoded surrogate) */
    static const char *const parts[] = {"a", "\\", "\n", "\r", "\t", "\x1b", "\x7f", "\xff", "\xc2\x85", "\xc2\xa0",
                                        "\xc3\xa9", "\xe2\x80\x8b", "\xe2\x80\xae", "\xef\xbb\xbf", "\xe4\xb8\xad",
                                        "\xf3\xa0\x80\x81", "\xf0\x9f\x98\x80", "\xe2\x80", "\xed\xa0\x80", "x"};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int trip_ok = 1;
    sg_cli_buf nm = {0}, sh = {0}, back = {0};
    for (int i = 0; i < 2000 && trip_ok; i++) {
        sg_cli_buf_clear(&nm);
        for (int k = 0; k < 12; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sg_cli_buf_puts(&nm, parts[x % (sizeof parts / sizeof parts[0])]);
        }
        sg_cli_buf_clear(&sh);
        sg_cli_shown_path_put(&sh, nm.p);
        trip_ok = unescape(sh.p, &back) == 0 && back.len == nm.len && memcmp(back.p, nm.p, nm.len) == 0;
        for (size_t k = 0; k < sh.len && trip_ok; k++) /* no control byte reaches the terminal */
            trip_ok = (unsigned char)sh.p[k] >= 0x20 && sh.p[k] != 0x7f;
        if (!trip_ok) printf("  %s did not come back\n", sh.p);
    }
    CHECK(trip_ok, "shown path: 2000 random names come back byte for byte by printf '%%b' rules");
    sg_cli_buf_free(&nm);
    sg_cli_buf_free(&sh);
    sg_cli_buf_free(&back);
}

static int write_file(const char *path, const char *data) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(data, f);
    return fclose(f);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *p = malloc(1 << 20);
    *len = fread(p, 1, 1 << 20, f);
    p[*len] = '\0';
    fclose(f);
    return p;
}

/* Writes data to path, runs --resume's preparation on it, and checks the file is refused and left untouched. */
static void check_refused(const char *path, const char *data, size_t n, const char *what) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
    sg_cli_pathset set = {0};
    sg_cli_resume_info info;
    char err[512] = "";
    int rc = sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err);
    size_t len;
    char *s = slurp(path, &len);
    CHECK(rc == -1 && strstr(err, "not ours") && s && len == n && memcmp(s, data, n) == 0,
          "resume: %s is refused and left untouched (%s)", what, err);
    free(s);
    sg_cli_pathset_free(&set);
}

/* --resume's preparation of path for a --labels run with the n labels, --top-k top_k and flags (the labels'
 * embeddings do not matter to the check: unit vectors). Returns its result, the reason in err. */
static int prepare_labels(const char *path, char **labels, int n, int top_k, int flags, sg_cli_pathset *set,
                          char *err, size_t errlen) {
    float emb[8 * 3] = {0};
    for (int i = 0; i < n && i < 8; i++) emb[i * 3] = 1;
    sg_zeroshot zs;
    sg_cli_resume_info info;
    if (n > 8 || sg_zeroshot_init(&zs, labels, n, emb, 3, 4.6f, -10, top_k, err, errlen) != 0) return -2;
    int rc = sg_cli_resume_prepare(path, 3, flags, &zs, set, &info, err, errlen);
    sg_zeroshot_free(&zs);
    return rc;
}

/* The probe rows --resume embeds again (cli/resume_check.h): the first and last rows with an embedding and those
 * at a quarter, half and three quarters of the bytes, each once; read back with their paths and numbers. */
static void test_resume_probes(const char *path) {
    sg_cli_buf all = {0}, line = {0}, key = {0};
    for (int i = 0; i < 40; i++) {
        char row[160];
        if (i % 7 == 3)
            snprintf(row, sizeof row, "{\"path\":\"n%d\",\"embedding\":null}\n", i);
        else
            snprintf(row, sizeof row, "{\"path\":\"p%d\",\"embedding\":[%d,0.5,-2.5e-07]}\n", i, i);
        sg_cli_buf_puts(&all, row);
    }
    sg_cli_buf_puts(&all, "{\"path\":\"z\",\"embedding\":null}\n{\"path\":\"t\",\"embedding\":[1,"); /* torn */
    write_file(path, all.p);
    sg_cli_pathset set = {0};
    sg_cli_resume_info info;
    char err[256] = "";
    int ok = sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && info.nprobes == 5;
    /* the rows expected: for each quarter of the file's bytes, the first row with an embedding starting there */
    int want[5] = {0, -1, -1, -1, 39};
    size_t off = 0;
    for (int i = 0; i < 40; i++) {
        for (int q = 1; q <= 3; q++)
            if (want[q] < 0 && i % 7 != 3 && off >= all.len * (size_t)q / 4) want[q] = i;
        off += strchr(all.p + off, '\n') + 1 - (all.p + off);
    }
    float emb[3];
    for (int i = 0; ok && i < 5; i++) {
        sg_cli_resume_row row;
        char name[16];
        snprintf(name, sizeof name, "p%d", want[i]);
        ok = sg_cli_resume_probe_row(path, &info, i, 3, &line, &key, emb, &row) == 0 && strcmp(key.p, name) == 0 &&
             emb[0] == (float)want[i] && emb[1] == 0.5f && emb[2] == -2.5e-07f &&
             info.probe[i].lineno == (uint64_t)want[i] + 1;
        if (!ok) snprintf(err, sizeof err, "probe %d: %s, line %llu", i, key.p ? key.p : "-", (unsigned long long)info.probe[i].lineno);
    }
    CHECK(ok, "resume: five probe rows, first to last, read back with their paths and numbers (%s)", err);
    sg_cli_pathset_free(&set);
    /* a row whose numbers include a null (NaN written) is no probe once read back; neither is a null row */
    write_file(path, "{\"path\":\"a\",\"embedding\":[3,null,1]}\n{\"path\":\"b\",\"embedding\":null}\n");
    sg_cli_resume_row row;
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && info.nprobes == 1 &&
              sg_cli_resume_probe_row(path, &info, 0, 3, &line, &key, emb, &row) == -1 &&
              sg_cli_resume_probe_row(path, &info, 1, 3, &line, &key, emb, &row) == -1,
          "resume: a row with a non-finite value is not read back as a probe; a null row is never one");
    /* the file changed between the preparation and the check: the row is not what was found */
    write_file(path, "{\"path\":\"a\",\"embedding\":[1,2,3]}\n");
    sg_cli_pathset_free(&set);
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && info.nprobes == 1,
          "resume: one probe");
    write_file(path, "{\"path\":\"a\",\"embedding\":[1,2,3]]\n");
    CHECK(sg_cli_resume_probe_row(path, &info, 0, 3, &line, &key, emb, &row) == -1,
          "resume: a probe row that no longer parses is not read back");
    sg_cli_pathset_free(&set);
    sg_cli_buf_free(&all);
    sg_cli_buf_free(&line);
    sg_cli_buf_free(&key);
}

static void test_resume(void) {
    sg_cli_buf key = {0};
    char err[256];
    const char *good = "{\"path\":\"a\\\"b\",\"embedding\":[1,-2.5e-07,3]}";
    CHECK(sg_cli_resume_parse_line(good, strlen(good), 3, &key, NULL, err, sizeof err) == 0 && strcmp(key.p, "a\"b") == 0,
          "resume: parses our row and returns the path's exact bytes");
    const char *nul = "{\"path\":\"x\",\"embedding\":null}";
    CHECK(sg_cli_resume_parse_line(nul, strlen(nul), 3, &key, NULL, err, sizeof err) == 0, "resume: null row");
    CHECK(sg_cli_resume_parse_line(good, strlen(good), 4, &key, NULL, err, sizeof err) == -1 && strstr(err, "expected 4"),
          "resume: wrong dim refused (%s)", err);
    /* a non-UTF-8 name: the row the writer makes of it parses back to the same bytes */
    sg_cli_buf row = {0};
    const float v3[3] = {1, 2, 3};
    sg_cli_json_put_row(&row, "d/x\xff\n.jpg", v3, 3);
    CHECK(sg_cli_resume_parse_line(row.p, row.len, 3, &key, NULL, err, sizeof err) == 0 && strcmp(key.p, "d/x\xff\n.jpg") == 0,
          "resume: a path_base64 row gives back the exact bytes (%s)", row.p);
    const char *bads[] = {"{\"path\":\"x\",\"embedding\":[1,2,}", "{\"path\":\"x\",\"embedding\":[1,2,3]}x",
                          "{\"name\":\"x\"}", "{\"path\":\"x\",\"embedding\":[1,zz,3]}", "",
                          "{\"path\":\"x",
                          "{\"path\":\"\\u0041\",\"embedding\":null}",          /* an escape we never write */
                          "{\"path\":\"a\\/b\",\"embedding\":null}",
                          "{\"path\":\"x\xff\",\"embedding\":null}",            /* raw invalid UTF-8 */
                          "{\"path\":\"x\xef\xbf\xbd\",\"path_base64\":\"eMO/\",\"embedding\":null}", /* valid UTF-8 */
                          "{\"path\":\"y\xef\xbf\xbd\",\"path_base64\":\"eP8=\",\"embedding\":null}", /* path != bytes */
                          "{\"path\":\"x\xef\xbf\xbd\",\"path_base64\":\"eP9=\",\"embedding\":null}"}; /* not canonical */
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
        CHECK(sg_cli_resume_parse_line(bads[i], strlen(bads[i]), 3, &key, NULL, err, sizeof err) == -1,
              "resume: rejects row %zu '%s' (%s)", i, bads[i], err);
    const char *ok_ff = "{\"path\":\"x\xef\xbf\xbd\",\"path_base64\":\"eP8=\",\"embedding\":null}";
    CHECK(sg_cli_resume_parse_line(ok_ff, strlen(ok_ff), 3, &key, NULL, err, sizeof err) == 0 && strcmp(key.p, "x\xff") == 0,
          "resume: x\\xff written as x U+FFFD + path_base64 parses back to x\\xff");
    /* --labels rows: the zero-shot block between the path and the embedding (session 27: refused before) */
    const char *lab = "{\"path\":\"p\",\"labels\":[{\"label\":\"a \\\"dog\\\"\",\"score\":0.93},"
                      "{\"label\":\"cat\",\"score\":-1.5e-05}],\"embedding\":[1,2,3]}";
    sg_cli_resume_row facts = {-1, -1, -1, NULL, 0};
    CHECK(sg_cli_resume_parse_line(lab, strlen(lab), 3, &key, &facts, err, sizeof err) == 0 && facts.has_labels == 1 &&
              strcmp(key.p, "p") == 0,
          "resume: a --labels row parses, with its labels seen (%s)", err);
    {
        sg_cli_resume_row lf;
        sg_cli_buf l = {0};
        size_t pos = 0;
        double sc[3] = {0, 0, 0};
        int n = 0, ok = sg_cli_resume_parse_line(lab, strlen(lab), 3, &key, &lf, err, sizeof err) == 0;
        while (ok && n < 3 && sg_cli_resume_next_label(&lf, &pos, &l, &sc[n])) {
            ok &= strcmp(l.p, n == 0 ? "a \\\"dog\\\"" : "cat") == 0;
            n++;
        }
        CHECK(ok && n == 2 && sc[0] == 0.93 && sc[1] == -1.5e-05,
              "resume: a row's labels read back one by one, as written (escaped) with their scores");
        const char *ln = "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":null}],\"embedding\":[1,2,3]}";
        pos = 0;
        CHECK(sg_cli_resume_parse_line(ln, strlen(ln), 3, &key, &lf, err, sizeof err) == 0 &&
                  sg_cli_resume_next_label(&lf, &pos, &l, &sc[0]) == 1 && strcmp(l.p, "a") == 0 && isnan(sc[0]) &&
                  sg_cli_resume_next_label(&lf, &pos, &l, &sc[0]) == 0,
              "resume: a score written null reads back as NaN, then the block ends");
        sg_cli_buf_free(&l);
    }
    CHECK(sg_cli_resume_parse_line(good, strlen(good), 3, &key, &facts, err, sizeof err) == 0 && facts.has_labels == 0,
          "resume: a row without labels says so");
    /* one grammar for the labels in a complete row and in a torn one (session 28: two had differed): a score the
     * writer prints as null (not finite) is ours; an escape it never makes (\/) is not, complete or torn */
    const char *lab_null = "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":null}],\"embedding\":[1,2,3]}";
    CHECK(sg_cli_resume_parse_line(lab_null, strlen(lab_null), 3, &key, &facts, err, sizeof err) == 0 &&
              facts.has_labels == 1,
          "resume: a --labels row whose score was not finite (written null) parses (%s)", err);
    const char *lab_esc = "{\"path\":\"p\",\"labels\":[{\"label\":\"a\\/b\",\"score\":1}],\"embedding\":[1,2,3]}";
    CHECK(sg_cli_resume_parse_line(lab_esc, strlen(lab_esc), 3, &key, &facts, err, sizeof err) == -1 &&
              !sg_cli_resume_is_torn_row(lab_esc, strlen(lab_esc), 3) &&
              !sg_cli_resume_is_torn_row(lab_esc, strlen(lab_esc) - 5, 3),
          "resume: a label with an escape the writer never makes (\\/) is refused, complete or torn");
    const char *bad_labels[] = {"{\"path\":\"p\",\"labels\":[],\"embedding\":[1,2,3]}",
                                "{\"path\":\"p\",\"labels\":[{\"label\":\"a\"}],\"embedding\":[1,2,3]}",
                                "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":x}],\"embedding\":[1,2,3]}",
                                "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":1}]}",
                                "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":1}],\"note\":1,\"embedding\":[1,2,3]}"};
    for (size_t i = 0; i < sizeof bad_labels / sizeof bad_labels[0]; i++)
        CHECK(sg_cli_resume_parse_line(bad_labels[i], strlen(bad_labels[i]), 3, &key, &facts, err, sizeof err) == -1,
              "resume: rejects labels row %zu '%s' (%s)", i, bad_labels[i], err);

    char path[600];
    snprintf(path, sizeof path, "%s/r.jsonl", g_tmp);
    sg_cli_pathset set = {0};
    sg_cli_resume_info info;
    unlink(path);
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && set.count == 0,
          "resume: a missing file means nothing done yet");
    write_file(path, "{\"path\":\"a\",\"embedding\":[1,2,3]}\n{\"path\":\"b\",\"embedding\":null}\n"
                     "{\"path\":\"c\",\"embedding\":[1,2");
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && set.count == 2 && info.rows == 2 &&
              info.dropped_bytes == 28 && sg_cli_pathset_has(&set, "a") && sg_cli_pathset_has(&set, "b") &&
              !sg_cli_pathset_has(&set, "c"),
          "resume: keeps 2 rows, drops the torn line (%llu bytes)", (unsigned long long)info.dropped_bytes);
    size_t len;
    char *s = slurp(path, &len);
    CHECK(s && len == 91, "resume: the preparation leaves the torn line in place (%zu bytes)", len);
    free(s);
    CHECK(sg_cli_resume_cut_torn(path, &info, err, sizeof err) == 0 && (s = slurp(path, &len)) && len == 63 &&
              s[len - 1] == '\n',
          "resume: the cut leaves the file at its last whole line (%zu bytes)", len);
    free(s);
    CHECK(info.nprobes == 1 && info.probe[0].lineno == 1 && info.probe[0].offset == 0,
          "resume: the one row with an embedding is the only probe row (%d)", info.nprobes);
    sg_cli_pathset_free(&set);
    write_file(path, "{\"pa");
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && info.rows == 0 &&
              info.dropped_bytes == 4 && info.nprobes == 0 && sg_cli_resume_cut_torn(path, &info, err, sizeof err) == 0 &&
              (s = slurp(path, &len)) && len == 0,
          "resume: a file holding only the start of a row is emptied");
    free(s);
    sg_cli_pathset_free(&set);
    test_resume_probes(path);
    /* Issue 14, item 2: only a final line without newline that starts like our row may be cut off. */
    static const char row_a[] = "{\"path\":\"a\",\"embedding\":[1,2,3]}\n";
    /* labels and the run must agree: a --labels file continues only with --labels, and the other way round */
    char both[512];
    snprintf(both, sizeof both, "%s\n{\"path\":\"q\",\"embedding\":null}\n", lab);
    write_file(path, both);
    char *lab_run[2] = {"a \"dog\"", "cat"};
    CHECK(prepare_labels(path, lab_run, 2, 5, SG_RESUME_RAW, &set, err, sizeof err) == 0 && set.count == 2 &&
              sg_cli_pathset_has(&set, "p") && sg_cli_pathset_has(&set, "q"),
          "resume --labels: a --labels file (a null row among them) continues (%s)", err);
    sg_cli_pathset_free(&set);
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == -1 && strstr(err, ":1: this row has"),
          "resume without --labels: a --labels file is refused (%s)", err);
    sg_cli_pathset_free(&set);
    write_file(path, row_a);
    CHECK(prepare_labels(path, lab_run, 2, 5, SG_RESUME_RAW, &set, err, sizeof err) == -1 && strstr(err, ":1: this row has no"),
          "resume --labels: a file without labels is refused (%s)", err);
    sg_cli_pathset_free(&set);
    /* normalised rows (the default) and raw ones (--no-normalize) are not mixed in one file */
    write_file(path, "{\"path\":\"u\",\"embedding\":[0.6,0.8,0]}\n{\"path\":\"z\",\"embedding\":[0,0,0]}\n");
    CHECK(sg_cli_resume_prepare(path, 3, 0, NULL, &set, &info, err, sizeof err) == 0 && info.rows == 2,
          "resume: unit-norm rows (and an all-zero one) continue a normalising run (%s)", err);
    sg_cli_pathset_free(&set);
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == -1 && strstr(err, ":1:") &&
              strstr(err, "norm 1"),
          "resume --no-normalize: a file of unit-norm rows is refused (%s)", err);
    sg_cli_pathset_free(&set);
    write_file(path, row_a);
    CHECK(sg_cli_resume_prepare(path, 3, 0, NULL, &set, &info, err, sizeof err) == -1 && strstr(err, "norm 3.742"),
          "resume: a file of raw rows (norm 3.742) is refused by a normalising run (%s)", err);
    sg_cli_pathset_free(&set);
    check_refused(path, "important notes\n", 16, "a note");
    check_refused(path, "important notes", 15, "a note without a final newline");
    check_refused(path, "{\"a\":1}\n", 8, "{\"a\":1}");
    char mixed[256];
    int n = snprintf(mixed, sizeof mixed, "%s%s", row_a, "{\"path\":\"c\",\"embedding\":[1,2]}\n");
    check_refused(path, mixed, (size_t)n, "a complete line with the wrong dim after a valid row");
    n = snprintf(mixed, sizeof mixed, "%s%s", row_a, "a note\n");
    check_refused(path, mixed, (size_t)n, "a complete non-row line after valid rows");
    check_refused(path, "id,vec\n1,2\n3,4\n", 15, "a CSV file");
    sg_cli_buf_free(&key);
    sg_cli_buf_free(&row);
}

/* Session 28: --resume --labels took a file written with other labels and mixed two label sets in it. A row
 * holds only its top_k labels, so the check goes as far as the rows tell: every label in them is one of the
 * run's (as the writer writes it), and every row holds min(top_k, labels) of them; else refused, untouched. */
static void test_resume_labels(void) {
    char path[600], err[1024];
    snprintf(path, sizeof path, "%s/rl.jsonl", g_tmp);
    /* rows written by a run with --labels dog,"a \"cat\"",caf\xc3\xa9<TAB>x --top-k 2 (the writer's bytes): i1's
     * best two are a "cat", dog; i2's caf\xc3\xa9<TAB>x, a "cat"; i3 failed (a null row, no labels) */
    const float v[3] = {0.6f, 0.8f, 0};
    char *written[3] = {"dog", "a \"cat\"", "caf\xc3\xa9\tx"};
    const float lemb[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    sg_zeroshot zw;
    /* logit scale 1, bias 0: the scores are sigmoid(cos), so the order is the cosines' */
    CHECK(sg_zeroshot_init(&zw, written, 3, lemb, 3, 0, 0, 2, err, sizeof err) == 0, "labels resume: setup");
    sg_cli_writer_cfg wc = {path, SG_FMT_JSONL, 3, 0, 0, 0, &zw, 0};
    unlink(path);
    err[0] = '\0';
    sg_cli_writer *w = sg_cli_writer_open(&wc, err, sizeof err);
    const float v2[3] = {0, 0.6f, 0.8f};
    CHECK(w && sg_cli_writer_row(w, "i1", v, err, sizeof err) == 0 && sg_cli_writer_row(w, "i2", v2, err, sizeof err) == 0 &&
              sg_cli_writer_row(w, "i3", NULL, err, sizeof err) == 0 && sg_cli_writer_close(w, 1, err, sizeof err) == 0,
          "labels resume: the writer wrote 3 rows (%s)", err);
    sg_zeroshot_free(&zw);
    size_t n0;
    char *orig = slurp(path, &n0);
    CHECK(orig && strstr(orig, "\"label\":\"a \\\"cat\\\"\"") && strstr(orig, "caf\xc3\xa9\\tx"),
          "labels resume: the file holds the labels as the writer escapes them:\n%s", orig ? orig : "");
    struct { char *labels[4]; int n, top_k, ok; const char *why; } cases[] = {
        {{"dog", "a \"cat\"", "caf\xc3\xa9\tx"}, 3, 2, 1, "the same labels"},
        {{"caf\xc3\xa9\tx", "dog", "a \"cat\""}, 3, 2, 1, "the same labels in another order"},
        {{"dog", "a \"cat\"", "caf\xc3\xa9\tx", "bird"}, 4, 2, 1, "one label more, top 2 (the rows cannot tell)"},
        {{"car", "boat"}, 2, 2, 0, ":1: this row's label \"a \\\"cat\\\"\" is not one of this run's 2 --labels"},
        {{"dog", "a \"cat\""}, 2, 2, 0, ":2: this row's label \"caf\xc3\xa9\\tx\" is not one"},
        {{"dog", "a cat", "caf\xc3\xa9\tx"}, 3, 2, 0, "label \"a \\\"cat\\\"\" is not one"},
        {{"dog", "a \"cat\"", "caf\xc3\xa9 x"}, 3, 2, 0, "is not one"},
        {{"dog", "a \"cat\"", "caf\xc3\xa9\tx"}, 3, 1, 0, ":1: this row has 2 zero-shot labels and this run writes 1"},
        {{"dog", "a \"cat\"", "caf\xc3\xa9\tx"}, 3, 5, 0, "this run writes 3 per row"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, orig ? orig : "");
        sg_cli_pathset set = {0};
        err[0] = '\0';
        int rc = prepare_labels(path, cases[i].labels, cases[i].n, cases[i].top_k, 0, &set, err, sizeof err);
        size_t n;
        char *now = slurp(path, &n);
        int same = now && orig && n == n0 && memcmp(now, orig, n) == 0;
        if (cases[i].ok)
            CHECK(rc == 0 && set.count == 3 && same, "labels resume: %s continues (%s)", cases[i].why, err);
        else
            CHECK(rc == -1 && strstr(err, cases[i].why) && strstr(err, "--template") && same,
                  "labels resume: refused, untouched, saying '%s' (%s)", cases[i].why, err);
        free(now);
        sg_cli_pathset_free(&set);
    }
    free(orig);
}

/* Bug A (session 28): a last line without newline may be cut only if it is a beginning of a row the writer could
 * write at the run's dim (or a whole one of ours that lost its newline); before, any line starting with
 * {"path":" was cut, a foreign tool's line or another model's complete row included. */
static void test_resume_torn(void) {
    /* every cut of real rows: a non-UTF-8 path (escapes, path_base64) with labels, and a null row */
    sg_cli_buf row = {0};
    const float v3[3] = {0.25f, -1.5e-07f, 3};
    sg_cli_json_put_row_ex(&row, "path", "d/x\xff\x01\"\n.jpg", v3, 3,
                           ",\"labels\":[{\"label\":\"a \\\"dog\\\"\",\"score\":0.93},{\"label\":\"cat\",\"score\":1e-05}]");
    size_t bad_cut = 0;
    for (size_t n = 1; n <= row.len && !bad_cut; n++)
        if (!sg_cli_resume_is_torn_row(row.p, n, 3)) bad_cut = n;
    CHECK(bad_cut == 0, "resume torn: every cut of a --labels row with escapes and path_base64 is accepted "
                        "(%zu bytes; first cut refused: %zu, 0 = none)", row.len, bad_cut);
    const char *ok[][2] = {
        {"inside the path", "{\"path\":\"dir/im"},
        {"inside an escape", "{\"path\":\"a\\"},
        {"inside a \\u escape", "{\"path\":\"a\\u00"},
        {"inside path_base64", "{\"path\":\"x\xef\xbf\xbd\",\"path_base64\":\"eP"},
        {"inside a label", "{\"path\":\"p\",\"labels\":[{\"label\":\"a do"},
        {"inside a score", "{\"path\":\"p\",\"labels\":[{\"label\":\"a\",\"score\":0.9"},
        {"inside a number's exponent", "{\"path\":\"a\",\"embedding\":[1,-2.5e-"},
        {"right after [", "{\"path\":\"a\",\"embedding\":["},
        {"right after a comma", "{\"path\":\"a\",\"embedding\":[1,"},
        {"inside null", "{\"path\":\"a\",\"embedding\":nu"},
        {"before the closing brace", "{\"path\":\"a\",\"embedding\":[1,2,3]"},
        {"a whole row of ours that lost its newline", "{\"path\":\"a\",\"embedding\":[1,2,3]}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK(sg_cli_resume_is_torn_row(ok[i][1], strlen(ok[i][1]), 3) == 1, "resume torn: cut %s is accepted (%s)",
              ok[i][0], ok[i][1]);
    sg_cli_buf big = {0};
    float v768[768];
    for (int i = 0; i < 768; i++) v768[i] = 0.01f * (float)(i % 7);
    sg_cli_json_put_row(&big, "b.png", v768, 768);
    const char *bad[][2] = {
        {"another tool's line", "{\"path\":\"a.jpg\",\"caption\":\"a dog, written by another tool\"}"},
        {"another tool's line, cut", "{\"path\":\"a.jpg\",\"caption\":\"a d"},
        {"a prefix with more numbers than dim", "{\"path\":\"a\",\"embedding\":[1,2,3,4"},
        {"a comma after dim numbers", "{\"path\":\"a\",\"embedding\":[1,2,3,"},
        {"a complete row with too few numbers", "{\"path\":\"a\",\"embedding\":[1,2]}"},
        {"an escape the writer never makes", "{\"path\":\"a\\q"},
        {"a \\u escape the writer never makes", "{\"path\":\"\\u0041"},
        {"a number the writer never prints", "{\"path\":\"a\",\"embedding\":[1x"},
        {"bytes after the closing brace", "{\"path\":\"a\",\"embedding\":null}x"},
        {"a key the writer never writes after the path", "{\"path\":\"a\",\"id\":"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(sg_cli_resume_is_torn_row(bad[i][1], strlen(bad[i][1]), 3) == 0, "resume torn: %s is refused (%s)",
              bad[i][0], bad[i][1]);
    CHECK(sg_cli_resume_is_torn_row(big.p, big.len, 3) == 0 && sg_cli_resume_is_torn_row(big.p, big.len, 64) == 0,
          "resume torn: a complete 768-value row without newline is refused at dim 3 and 64");
    CHECK(sg_cli_resume_is_torn_row(big.p, big.len, 768) == 1, "resume torn: ... and cut at dim 768 (ours)");
    /* through the file repair: refused and untouched (check_refused runs at dim 3) */
    char path[600];
    snprintf(path, sizeof path, "%s/torn.jsonl", g_tmp);
    check_refused(path, bad[0][1], strlen(bad[0][1]), "a last line of another tool starting with {\"path\":\"");
    check_refused(path, big.p, big.len, "another model's complete row without newline");
    char two[256];
    int n = snprintf(two, sizeof two, "{\"path\":\"a\",\"embedding\":[1,2,3]}\n%s", bad[2][1]);
    check_refused(path, two, (size_t)n, "a row, then a last line with more numbers than dim");
    sg_cli_buf_free(&row);
    sg_cli_buf_free(&big);
}

/* --- which existing files -o may replace (our_output.h); session 28's audit: before, any line starting with
 * {"path":", any '<f4' npy and an int32 .ivecs without a list beside it passed, and were replaced --- */

static void put_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* sg_cli_our_output on the n bytes data written to path: 1 ours, 0 not (why says what it seems), -1 unreadable. */
static int ours_of(const char *path, const void *data, size_t n, char *why, size_t whylen) {
    put_file(path, data, n);
    why[0] = '\0';
    return sg_cli_our_output(path, why, whylen);
}

/* A row at any dim, text rows, and torn ones: the grammar our_output.c asks of an existing -o FILE
 * (sg_cli_resume_is_any_row). */
static void test_any_row(void) {
    sg_cli_buf row = {0};
    const float v5[5] = {1, 2, 3, 4, 5};
    sg_cli_json_put_row_ex(&row, "text", "caf\xc3\xa9 \"q\"\n", v5, 5, NULL);
    CHECK(sg_cli_resume_is_any_row(row.p, row.len, 0) == 1, "any row: a text run's row (%s)", row.p);
    sg_cli_buf_clear(&row);
    sg_cli_json_put_row_ex(&row, "text", "bad \xff", NULL, 5, NULL);
    CHECK(sg_cli_resume_is_any_row(row.p, row.len, 0) == 1 && strstr(row.p, "text_base64"),
          "any row: a text row with text_base64 and a null embedding (%s)", row.p);
    size_t bad_cut = 0;
    for (size_t n = 1; n < row.len && !bad_cut; n++)
        if (sg_cli_resume_is_any_row(row.p, n, 1) != 1 || sg_cli_resume_is_any_row(row.p, n, 0) != 0) bad_cut = n;
    CHECK(bad_cut == 0, "any row: every cut of a text row is a torn row, and not a complete one (first wrong: %zu)",
          bad_cut);
    float big[1152];
    for (int i = 0; i < 1152; i++) big[i] = 0.001f * (float)i;
    sg_cli_buf_clear(&row);
    sg_cli_json_put_row(&row, "a.png", big, 1152);
    CHECK(sg_cli_resume_is_any_row(row.p, row.len, 0) == 1 && sg_cli_resume_is_any_row(row.p, 30, 1) == 1,
          "any row: a 1152-value image row is ours at any dim, whole or torn");
    const char *bad[][2] = {
        {"jq -c output", "{\"path\":\"cats/a.jpg\",\"label\":\"cat\"}"},
        {"a text row with labels (only image rows have them)",
         "{\"text\":\"q\",\"labels\":[{\"label\":\"a\",\"score\":1}],\"embedding\":[1]}"},
        {"an empty embedding", "{\"path\":\"a\",\"embedding\":[]}"},
        {"a path row with text_base64", "{\"path\":\"x\xef\xbf\xbd\",\"text_base64\":\"eP8=\",\"embedding\":null}"},
        {"another key", "{\"name\":\"a\",\"embedding\":[1]}"},
        {"spaces (json.dumps)", "{\"path\": \"a\", \"embedding\": [1]}"},
        {"a CR before the newline", "{\"path\":\"a\",\"embedding\":[1]}\r"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(sg_cli_resume_is_any_row(bad[i][1], strlen(bad[i][1]), 1) == 0, "any row: %s is not ours (%s)",
              bad[i][0], bad[i][1]);
    /* resume is unchanged: still one dim, image rows only */
    const char *txt = "{\"text\":\"q\",\"embedding\":[1,2,3]}";
    CHECK(!sg_cli_resume_is_torn_row(txt, strlen(txt), 3) && !sg_cli_resume_is_torn_row(row.p, row.len, 3),
          "any row: --resume still refuses a text row and another dim's row");
    sg_cli_buf_free(&row);
}

/* Every format the writer makes, image and text runs, is ours; without its list a binary one is not. */
static void test_our_output_written(void) {
    const float rows[2][3] = {{0.6f, 0.8f, 0}, {30, -4, 5e-8f}};
    const sg_cli_format fmts[] = {SG_FMT_JSONL, SG_FMT_JSON, SG_FMT_NPY, SG_FMT_FBIN, SG_FMT_FVECS, SG_FMT_F32};
    char *lab[2] = {"dog", "a \"cat\""};
    const float lemb[6] = {1, 0, 0, 0, 1, 0};
    sg_zeroshot zs;
    char err[256] = "", why[256], path[700], list[720];
    CHECK(sg_zeroshot_init(&zs, lab, 2, lemb, 3, 4.6f, -10, 2, err, sizeof err) == 0, "our output: labels (%s)", err);
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (int texts = 0; texts < 2; texts++)
            for (int variant = 0; variant < 3; variant++) { /* 0: rows; 1: labels (JSON) or single; 2: no row */
                const int json = fmts[f] < SG_FMT_NPY;
                if (variant == 1 && !json) continue;
                snprintf(path, sizeof path, "%s/w%zu_%d_%d.out", g_tmp, f, texts, variant);
                snprintf(list, sizeof list, "%s%s", path, texts ? ".texts" : ".paths");
                unlink(path);
                unlink(list);
                sg_cli_writer_cfg c = {path, fmts[f], 3, 0, 0, texts, NULL, 0};
                if (variant == 1 && (texts || fmts[f] == SG_FMT_JSON)) c.single = fmts[f] == SG_FMT_JSON;
                if (variant == 1 && !texts) c.zeroshot = &zs;
                sg_cli_writer *w = sg_cli_writer_open(&c, err, sizeof err);
                if (w && variant != 2) {
                    sg_cli_writer_row(w, "d/x\xff\x01\".png", rows[0], err, sizeof err); /* path_base64 */
                    if (!c.single) {
                        sg_cli_writer_row(w, "b", NULL, err, sizeof err); /* --on-error null */
                        sg_cli_writer_row(w, "c", rows[1], err, sizeof err);
                    }
                }
                int closed = w && sg_cli_writer_close(w, 1, err, sizeof err) == 0;
                why[0] = '\0';
                int ours = sg_cli_our_output(path, why, sizeof why);
                CHECK(closed && ours == 1, "our output: the writer's %s (%s run, %s) is ours (%d: %s)",
                      sg_cli_format_name(fmts[f]), texts ? "text" : "image",
                      variant == 2 ? "no row" : variant == 1 ? (c.zeroshot ? "labels" : "single") : "rows", ours, why);
                if (json || (variant == 2 && fmts[f] >= SG_FMT_FVECS)) continue; /* fvecs, f32 with no row: empty */
                unlink(list);
                ours = sg_cli_our_output(path, why, sizeof why);
                CHECK(ours == 0 && strstr(why, "FILE.paths / FILE.texts"),
                      "our output: ... and without its list it is not (%s)", why);
            }
    sg_zeroshot_free(&zs);
}

/* A JSONL or JSON array cut anywhere (a run killed mid-write, or just started) is ours; another tool's is not. */
static void test_our_output_json(void) {
    char path[700], why[256];
    snprintf(path, sizeof path, "%s/cut.json", g_tmp);
    sg_cli_buf file = {0}, row = {0};
    const float v[4] = {0.5f, -0.5f, 0.5f, 0.5f};
    sg_cli_json_put_row_ex(&row, "path", "p\xff", v, 4, ",\"labels\":[{\"label\":\"a\",\"score\":0.5}]");
    for (int array = 0; array < 2; array++) {
        sg_cli_buf_clear(&file);
        if (array) sg_cli_buf_puts(&file, "[\n");
        sg_cli_buf_append(&file, row.p, row.len);
        sg_cli_buf_puts(&file, array ? ",\n{\"path\":\"q\",\"embedding\":null}\n]\n" : "\n{\"path\":\"q\",\"embedding\":null}\n");
        size_t bad_cut = 0;
        for (size_t n = 1; n <= file.len && !bad_cut; n++)
            if (ours_of(path, file.p, n, why, sizeof why) != 1) bad_cut = n;
        CHECK(bad_cut == 0, "our output: every cut of a %s of ours is ours (%zu bytes; first refused: %zu, 0 = none)",
              array ? "JSON array" : "JSONL file", file.len, bad_cut);
    }
    /* a first row longer than one read (4 x 64 KiB): read on to its end */
    float big[20000];
    for (int i = 0; i < 20000; i++) big[i] = -1.23456789e-10f * (float)i;
    sg_cli_buf_clear(&row);
    sg_cli_json_put_row(&row, "long.png", big, 20000);
    sg_cli_buf_putc(&row, '\n');
    CHECK(ours_of(path, row.p, row.len, why, sizeof why) == 1, "our output: a %zu-byte first row is ours", row.len);
    row.p[row.len - 40] = 'x';
    CHECK(ours_of(path, row.p, row.len, why, sizeof why) == 0, "our output: ... and not with a stray byte near its end");
    const char *empty[][2] = {{"[]", "[]"}, {"[]\n", "[]\\n"}, {"[\n]", "[\\n]"}, {"[\n]\n", "[\\n]\\n"},
                              {"[", "["}, {"[\n", "[\\n"}};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++)
        CHECK(ours_of(path, empty[i][0], strlen(empty[i][0]), why, sizeof why) == 1,
              "our output: an empty or just-started array %s is ours", empty[i][1]);
    CHECK(ours_of(path, "", 0, why, sizeof why) == 1, "our output: an empty file is ours (nothing to lose)");
    const char *foreign[][2] = {
        {"jq -c output", "{\"path\":\"cats/a.jpg\",\"label\":\"cat\"}\n"},
        {"jq -c output, one line without newline", "{\"path\":\"cats/a.jpg\",\"label\":\"cat\"}"},
        {"a compact JSON array", "[{\"path\":\"a.jpg\",\"score\":1}]"},
        {"a compact array of rows like ours", "[{\"path\":\"a\",\"embedding\":[1]}]\n"},
        {"json.dumps rows", "{\"path\": \"a\", \"embedding\": [1]}\n"},
        {"our row, then bytes after it", "{\"path\":\"a\",\"embedding\":[1]} \n"},
        {"a torn first line followed by more lines", "{\"path\":\"a\",\"embe\n{\"path\":\"b\",\"embedding\":null}\n"},
        {"a row with CR LF", "{\"path\":\"a\",\"embedding\":[1]}\r\n"},
        {"an array with a foreign row", "[\n{\"id\":1}\n]\n"},
        {"an array, then junk", "[]x"},
        {"an array with a space", "[ ]"},
        {"an array of rows without the writer's newline", "[{\"path\":\"a\",\"embedding\":[1]}\n]\n"},
        {"a note", "important notes\n"},
    };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        int r = ours_of(path, foreign[i][1], strlen(foreign[i][1]), why, sizeof why);
        CHECK(r == 0 && strstr(why, "starts with"), "our output: %s is not ours (%s)", foreign[i][0], why);
    }
    /* with some FILE.paths beside it, another tool's JSON is still not taken for raw f32 */
    char list[720];
    snprintf(list, sizeof list, "%s.paths", path);
    put_file(list, "a\n", 2);
    CHECK(ours_of(path, foreign[0][1], 36, why, sizeof why) == 0, "our output: a jq line with a list beside it (%s)",
          why);
    unlink(list);
    sg_cli_buf_free(&file);
    sg_cli_buf_free(&row);
}

/* An npy made as np.save makes one (header padded to 64 bytes) of the given header dict and data size. */
static size_t npy_bytes(unsigned char *out, int major, const char *dict, size_t data) {
    size_t hlen = (10 + strlen(dict) + 1 + 63) / 64 * 64 - 10;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)hlen;
    out[9] = (unsigned char)(hlen >> 8);
    memset(out + 10, ' ', hlen);
    memcpy(out + 10, dict, strlen(dict));
    out[10 + hlen - 1] = '\n';
    memset(out + 10 + hlen, 0, data);
    return 10 + hlen + data;
}

/* The binary formats: their own shape and, for each, the list beside them. */
static void test_our_output_binary(void) {
    char path[700], list[720], why[256];
    static unsigned char b[128 + 10 * 512 * 4 + 64];
    snprintf(path, sizeof path, "%s/feat.npy", g_tmp);
    snprintf(list, sizeof list, "%s.paths", path);
    size_t n = npy_bytes(b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 512), }", 10 * 512 * 4);
    unlink(list);
    CHECK(ours_of(path, b, n, why, sizeof why) == 0 && strstr(why, "an npy without the FILE.paths"),
          "our output: another tool's [10, 512] '<f4' npy without FILE.paths is not ours (%s)", why);
    put_file(list, "", 0); /* an empty list is a list: a run whose rows all failed */
    CHECK(ours_of(path, b, n, why, sizeof why) == 1, "our output: ... with a FILE.paths beside it, it is");
    const struct { const char *what, *dict; int major; size_t data; } npy[] = {
        {"1-D (np.save of arange(7))", "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", 1, 28},
        {"float64", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 1, 48},
        {"in Fortran order", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 1, 24},
        {"3-D", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }", 1, 96},
        {"of version 2.0", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 24},
        {"truncated", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 1, 20},
        {"with D = 0", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }", 1, 0},
        {"with too large a shape for its size", "{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999999999, 9), }",
         1, 24},
    };
    for (size_t i = 0; i < sizeof npy / sizeof npy[0]; i++) {
        n = npy_bytes(b, npy[i].major, npy[i].dict, npy[i].data);
        CHECK(ours_of(path, b, n, why, sizeof why) == 0 && strstr(why, "an npy"),
              "our output: an npy, %s, is not ours, even with FILE.paths (%s)", npy[i].what, why);
    }
    /* an int32 .ivecs ground truth (D = 100 before each row) passes the fvecs size rule: only its list tells */
    snprintf(path, sizeof path, "%s/gt.ivecs", g_tmp);
    snprintf(list, sizeof list, "%s.paths", path);
    int32_t iv[4 * 101];
    for (int i = 0; i < 4 * 101; i++) iv[i] = i % 101 ? i : 100;
    unlink(list);
    CHECK(ours_of(path, iv, sizeof iv, why, sizeof why) == 0 && strstr(why, "D = 100 before each row as in fvecs or ivecs") &&
              strstr(why, "without the FILE.paths"),
          "our output: an int32 .ivecs without FILE.paths is not ours (%s)", why);
    put_file(list, "\xff\xd8\xff\xe0 a photo", 12);
    CHECK(ours_of(path, iv, sizeof iv, why, sizeof why) == 0 && strstr(why, "not a list of names"),
          "our output: ... nor with a photo named FILE.paths beside it (%s)", why);
    snprintf(list, sizeof list, "%s.texts", path);
    put_file(list, "q\n", 2);
    CHECK(ours_of(path, iv, sizeof iv, why, sizeof why) == 1, "our output: a FILE.texts list is a list too");
    unlink(list);
    snprintf(list, sizeof list, "%s.paths", path);
    unlink(list);
    /* fbin-like and raw data without a list */
    uint32_t fb[2 + 6] = {2, 3};
    CHECK(ours_of(path, fb, sizeof fb, why, sizeof why) == 0 && strstr(why, "fbin-like header"),
          "our output: an fbin-like file without FILE.paths is not ours (%s)", why);
    CHECK(ours_of(path, "\x01\x02\x03\x04\x05\x06\x07\x08", 8, why, sizeof why) == 0 &&
              strstr(why, "data in no format this tool writes (its raw f32 has a FILE.paths"),
          "our output: raw data without FILE.paths is not ours (%s)", why);
    /* a dead run's temporary whose list was already renamed to TARGET.paths (outpath.c's stale clean-up) */
    char tmp[720], target[700];
    snprintf(target, sizeof target, "%s/t.npy", g_tmp);
    snprintf(tmp, sizeof tmp, "%s.tmp.99999", target);
    snprintf(list, sizeof list, "%s.paths", target);
    n = npy_bytes(b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    put_file(tmp, b, n);
    put_file(list, "a\nb\n", 4);
    CHECK(sg_cli_our_output_listed(tmp, target, why, sizeof why) == 1 && sg_cli_our_output(tmp, why, sizeof why) == 0,
          "our output: a temporary is judged with the list of the target it was renamed to (%s)", why);
}

static void test_pathset(void) {
    sg_cli_pathset set = {0};
    int ok = 1;
    for (int i = 0; i < 20000; i++) {
        char p[32];
        snprintf(p, sizeof p, "k%d", i);
        ok &= sg_cli_pathset_add(&set, p) == 1;
    }
    ok &= sg_cli_pathset_add(&set, "k77") == 0;
    for (int i = 0; i < 20000; i++) {
        char p[32];
        snprintf(p, sizeof p, "k%d", i);
        ok &= sg_cli_pathset_has(&set, p);
        snprintf(p, sizeof p, "j%d", i);
        ok &= !sg_cli_pathset_has(&set, p);
    }
    CHECK(ok && set.count == 20000, "pathset: 20000 adds, duplicates and lookups");
    sg_cli_pathset_free(&set);

    /* Bug B (session 28): each row consumes one occurrence, so an input named twice is skipped only as often as
     * the file holds it (one match used to skip every occurrence and lose a row). */
    sg_cli_pathset_add(&set, "a");
    sg_cli_pathset_add(&set, "a");
    sg_cli_pathset_add(&set, "b");
    uint64_t own[1024] = {0}; /* the set's first capacity */
    int own_ok = set.cap == 1024 && sg_cli_pathset_take_own(&set, own, "a") && sg_cli_pathset_take_own(&set, own, "a") &&
                 !sg_cli_pathset_take_own(&set, own, "a");
    CHECK(set.count == 2 && sg_cli_pathset_take(&set, "a") && sg_cli_pathset_take(&set, "a") &&
              !sg_cli_pathset_take(&set, "a") && sg_cli_pathset_take(&set, "b") && !sg_cli_pathset_take(&set, "b") &&
              !sg_cli_pathset_take(&set, "c") && sg_cli_pathset_has(&set, "a"),
          "pathset: a path added twice is taken twice, then no more (2 distinct, has unchanged)");
    CHECK(own_ok, "pathset: take_own counts in the caller's array the same way");
    /* growing keeps the counts: 20000 more paths, then a and b as before */
    sg_cli_pathset_free(&set);
    sg_cli_pathset_add(&set, "a");
    sg_cli_pathset_add(&set, "a");
    int grew_ok = sg_cli_pathset_take(&set, "a");
    for (int i = 0; i < 20000; i++) {
        char p[32];
        snprintf(p, sizeof p, "k%d", i);
        sg_cli_pathset_add(&set, p);
    }
    grew_ok = grew_ok && sg_cli_pathset_take(&set, "a") && !sg_cli_pathset_take(&set, "a") &&
              sg_cli_pathset_take(&set, "k5") && !sg_cli_pathset_take(&set, "k5");
    CHECK(grew_ok, "pathset: counts and takes survive the table growing");
    sg_cli_pathset_free(&set);

    /* the resume file repair adds one occurrence per row */
    char path[600];
    snprintf(path, sizeof path, "%s/dup.jsonl", g_tmp);
    write_file(path, "{\"path\":\"a\",\"embedding\":[1,2,3]}\n{\"path\":\"a\",\"embedding\":null}\n");
    sg_cli_resume_info info;
    char err[256] = "";
    CHECK(sg_cli_resume_prepare(path, 3, SG_RESUME_RAW, NULL, &set, &info, err, sizeof err) == 0 && info.rows == 2 &&
              sg_cli_pathset_take(&set, "a") && sg_cli_pathset_take(&set, "a") && !sg_cli_pathset_take(&set, "a"),
          "resume: two rows of one path skip two of its inputs, not a third (%s)", err);
    sg_cli_pathset_free(&set);
}

static void touch(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    write_file(p, "x");
}

/* The paths that nlists list files yield (nul_sep as for sg_cli_inputs_open), each followed by '|', into got. */
static void list_paths(char **lists, int nlists, int nul_sep, sg_cli_buf *got) {
    char err[256];
    sg_cli_input in;
    sg_cli_inputs *it = sg_cli_inputs_open(NULL, 0, lists, nlists, nul_sep, 0, err, sizeof err);
    while (sg_cli_inputs_next(it, &in, err, sizeof err) == 1) {
        sg_cli_buf_puts(got, in.path);
        sg_cli_buf_putc(got, '|');
        free(in.path);
        free(in.error);
    }
    sg_cli_inputs_close(it);
}

static void test_inputs(void) {
    char root[600], sub[700], sub2[800];
    snprintf(root, sizeof root, "%s/tree", g_tmp);
    snprintf(sub, sizeof sub, "%s/b_dir", root);
    snprintf(sub2, sizeof sub2, "%s/z", root);
    mkdir(root, 0777);
    mkdir(sub, 0777);
    mkdir(sub2, 0777);
    touch(root, "c.png");
    touch(root, "a.JPG");
    touch(root, "notes.txt");
    touch(sub, "x.jpeg");
    touch(sub2, "y.gif");
    char loop[900];
    snprintf(loop, sizeof loop, "%s/loop", sub2);
    symlink("..", loop);
    char fifo[900];
    snprintf(fifo, sizeof fifo, "%s/pipe.jpg", sub2);
    mkfifo(fifo, 0666);
    char *paths[] = {root, "missing.jpg"};
    char err[256];
    sg_cli_inputs *it = sg_cli_inputs_open(paths, 2, NULL, 0, 0, 0, err, sizeof err);
    sg_cli_buf got = {0};
    sg_cli_input in;
    int n = 0, loops = 0;
    while (sg_cli_inputs_next(it, &in, err, sizeof err) == 1) {
        const char *rel = strncmp(in.path, root, strlen(root)) == 0 ? in.path + strlen(root) : in.path;
        if (in.error) loops++;
        else {
            sg_cli_buf_puts(&got, rel);
            sg_cli_buf_putc(&got, ';');
        }
        free(in.path);
        free(in.error);
        n++;
    }
    char summary[256];
    uint64_t nskip = sg_cli_inputs_skipped(it, summary, sizeof summary);
    sg_cli_inputs_close(it);
    CHECK(got.p && strcmp(got.p, "/a.JPG;/b_dir/x.jpeg;/c.png;/z/y.gif;missing.jpg;") == 0,
          "inputs: sorted depth-first walk, image extensions only, operands as given: %s", got.p);
    CHECK(loops == 2, "inputs: a symlink loop and a FIFO named .jpg are reported, not followed or read (%d)", loops);
    CHECK(nskip == 1 && strcmp(summary, ".txt (1)") == 0, "inputs: files left out are tallied by extension (%s)",
          summary);
    sg_cli_buf_free(&got);

    /* Issue 14, item 9: what a folder of unsupported formats held, most frequent first */
    char odd[700];
    snprintf(odd, sizeof odd, "%s/odd", g_tmp);
    mkdir(odd, 0777);
    touch(odd, "a.avif");
    touch(odd, "b.AVIF");
    touch(odd, "c.heic");
    touch(odd, "README");
    char *odd_paths[] = {odd};
    it = sg_cli_inputs_open(odd_paths, 1, NULL, 0, 0, 0, err, sizeof err);
    n = 0;
    while (sg_cli_inputs_next(it, &in, err, sizeof err) == 1) {
        free(in.path);
        free(in.error);
        n++;
    }
    nskip = sg_cli_inputs_skipped(it, summary, sizeof summary);
    sg_cli_inputs_close(it);
    CHECK(n == 0 && nskip == 4 && strcmp(summary, ".avif (2), .heic (1), no extension (1)") == 0,
          "inputs: a folder of unsupported formats yields nothing and says what it skipped (%s)", summary);

    char list[700];
    snprintf(list, sizeof list, "%s/list0", g_tmp);
    FILE *f = fopen(list, "wb");
    fwrite("one\0two\nlines\0\0three\0", 1, 22, f);
    fclose(f);
    char *lists[2] = {list, NULL};
    list_paths(lists, 1, 1, &got);
    CHECK(got.p && strcmp(got.p, "one|two\nlines|three|") == 0, "inputs: -0 list keeps newlines, skips empty");
    sg_cli_buf_free(&got);
    it = sg_cli_inputs_open(NULL, 0, lists, 1, 0, 0, err, sizeof err);
    int rc = sg_cli_inputs_next(it, &in, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "-0"), "inputs: NUL in a newline list is an error pointing at -0 (%s)", err);
    sg_cli_inputs_close(it);
    char *missing[] = {"/nonexistent/list"};
    CHECK(sg_cli_inputs_open(NULL, 0, missing, 1, 0, 0, err, sizeof err) == NULL && strstr(err, "list"),
          "inputs: unreadable --files-from reported (%s)", err);

    /* Issue 14, items 6 and 12: a CRLF list loses its CRs (a CR elsewhere stays); two lists are read in order */
    char crlf[700], second[700];
    snprintf(crlf, sizeof crlf, "%s/crlf.txt", g_tmp);
    snprintf(second, sizeof second, "%s/second.txt", g_tmp);
    write_file(crlf, "a.jpg\r\nb\rc.jpg\r\n\r\nlast.jpg\r");
    write_file(second, "z.jpg\n");
    char *two[] = {crlf, second};
    list_paths(two, 2, 0, &got);
    CHECK(got.p && strcmp(got.p, "a.jpg|b\rc.jpg|last.jpg|z.jpg|") == 0,
          "inputs: CRLF list without its CRs, then the second list (got %s)", got.p);
    sg_cli_buf_free(&got);
}

static void test_writers(void) {
    const float rows[2][3] = {{1.0f, -0.5f, 0.25f}, {3.0f, 4.0f, 5.0f}};
    char path[700], err[256];
    size_t len;
    /* fbin: n, d, rows; a NaN row for the failed input */
    snprintf(path, sizeof path, "%s/o.fbin", g_tmp);
    sg_cli_writer_cfg c = {path, SG_FMT_FBIN, 3, 0, 0, 0, NULL, 0};
    sg_cli_writer *w = sg_cli_writer_open(&c, err, sizeof err);
    sg_cli_writer_row(w, "p0", rows[0], err, sizeof err);
    sg_cli_writer_row(w, "p1", NULL, err, sizeof err);
    sg_cli_writer_row(w, "p2", rows[1], err, sizeof err);
    struct stat st;
    CHECK(stat(path, &st) != 0, "writer: binary output is not in place before close");
    CHECK(sg_cli_writer_rejects_path(w, "a\nb") && !sg_cli_writer_rejects_path(w, "ab"),
          "writer: newline paths rejected for binary formats");
    CHECK(sg_cli_writer_close(w, 1, err, sizeof err) == 0, "writer: fbin closes");
    char *s = slurp(path, &len);
    uint32_t hdr[2];
    float v[9];
    memcpy(hdr, s, 8);
    memcpy(v, s + 8, sizeof v);
    CHECK(len == 8 + 36 && hdr[0] == 3 && hdr[1] == 3 && v[0] == 1.0f && isnan(v[3]) && isnan(v[5]) && v[8] == 5.0f,
          "writer: fbin header n=3 d=3 and rows (NaN row for the failure)");
    free(s);
    char pp[800];
    snprintf(pp, sizeof pp, "%s.paths", path);
    s = slurp(pp, &len);
    CHECK(s && strcmp(s, "p0\np1\np2\n") == 0, "writer: FILE.paths lists the rows' paths");
    free(s);
    /* npy header */
    snprintf(path, sizeof path, "%s/o.npy", g_tmp);
    c.path = path;
    c.format = SG_FMT_NPY;
    w = sg_cli_writer_open(&c, err, sizeof err);
    sg_cli_writer_row(w, "p0", rows[0], err, sizeof err);
    sg_cli_writer_close(w, 1, err, sizeof err);
    s = slurp(path, &len);
    CHECK(len == 128 + 12 && memcmp(s, "\x93NUMPY\x01\x00", 8) == 0 && s[8] == 118 && s[9] == 0 &&
              strstr(s + 10, "'shape': (1, 3)") && s[127] == '\n',
          "writer: npy 1.0 header of 128 bytes with the final shape");
    free(s);
    /* an aborted binary run leaves nothing behind */
    snprintf(path, sizeof path, "%s/gone.fvecs", g_tmp);
    c.path = path;
    c.format = SG_FMT_FVECS;
    w = sg_cli_writer_open(&c, err, sizeof err);
    sg_cli_writer_row(w, "p0", rows[0], err, sizeof err);
    sg_cli_writer_close(w, 0, err, sizeof err);
    snprintf(pp, sizeof pp, "%s.paths", path);
    CHECK(stat(path, &st) != 0 && stat(pp, &st) != 0, "writer: aborted binary output removed");
    /* json array and single object */
    snprintf(path, sizeof path, "%s/o.json", g_tmp);
    c.path = path;
    c.format = SG_FMT_JSON;
    w = sg_cli_writer_open(&c, err, sizeof err);
    sg_cli_writer_row(w, "a", rows[0], err, sizeof err);
    sg_cli_writer_row(w, "b", NULL, err, sizeof err);
    sg_cli_writer_close(w, 1, err, sizeof err);
    s = slurp(path, &len);
    CHECK(s && strcmp(s, "[\n{\"path\":\"a\",\"embedding\":[1,-0.5,0.25]},\n"
                         "{\"path\":\"b\",\"embedding\":null}\n]\n") == 0,
          "writer: json array with a null row");
    free(s);
    c.single = 1;
    w = sg_cli_writer_open(&c, err, sizeof err);
    sg_cli_writer_row(w, "a", rows[1], err, sizeof err);
    sg_cli_writer_close(w, 1, err, sizeof err);
    s = slurp(path, &len);
    CHECK(s && strcmp(s, "{\"path\":\"a\",\"embedding\":[3,4,5]}\n") == 0, "writer: json single object");
    free(s);
    c.path = NULL;
    c.format = SG_FMT_NPY;
    CHECK(sg_cli_writer_open(&c, err, sizeof err) == NULL && strstr(err, "-o"), "writer: npy to stdout refused (%s)",
          err);
}

int main(void) {
    const char *base = getenv("SG_TMP") ? getenv("SG_TMP") : "/tmp";
    snprintf(g_tmp, sizeof g_tmp, "%s/cli_units.XXXXXX", base);
    if (!mkdtemp(g_tmp)) {
        printf("FAIL: cannot create a scratch directory under %s\n", base);
        return 1;
    }
    test_args();
    test_shard();
    test_json();
    test_shown_path();
    test_resume();
    test_resume_labels();
    test_resume_torn();
    test_pathset();
    test_inputs();
    test_writers();
    test_any_row();
    test_our_output_written();
    test_our_output_json();
    test_our_output_binary();
    return CHECK_DONE();
}
