/* tests/test_tokenizer.c — the C tokenizer gives Hugging Face's ids for every test string, loads a 256k vocab in
 * time, and handles bad queries as documented.
 *
 * References come from scripts/make_tokenizer_fixtures.py (the tokenizers library, cross-checked there against
 * transformers' GemmaTokenizer), committed in tests/fixtures/tokenizer/ so this runs without Python:
 *   strings.bin   "SGTS", u32 count; per string u32 n + n bytes, or u32 (n | 2^31), u32 repeats, n-byte pattern
 *   NAME.ids      "SGTI", u32 count, u64 fingerprint; per string: varint count (ids before truncation), then
 *                 count <= 64: the count ids (HF's max_length=64 call gives these then pad ids);
 *                 count > 64: u64 FNV-1a 64 of HF's untruncated ids (as int32 LE), then the 64 ids of HF's call.
 * For each tokenizer (trained.json; the 256k synthetic one rebuilt from tests/synth_tokenizer.h, whose bytes
 * must hash to the fingerprint; every variants/NAME.json) every string is encoded twice: with max_len 64
 * (compared id for id, and the returned count) and, when longer, untruncated (max_len = count; compared by
 * hash). Any difference prints the string and both id lists and fails.
 *
 * Timing: the 256k tokenizer is written to a file and loaded 3 times; the best must take <= 0.3 s of CPU (wall
 * time is printed too). Encoding must reach 20,000 short queries/s on one thread. Both are SKIPped (with the figure)
 * under sanitizers, whose instrumentation makes them meaningless. Bad queries: invalid UTF-8 (-1 and the byte offset),
 * the empty query, embedded NUL, unterminated buffers, max_len below the template's specials.
 */
#include "preprocess/text/tokenizer.h"
#include "tests/check.h"
#include "tests/synth_tokenizer.h"
#include "tests/tok_queries.h"

#include <dirent.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MAX_LEN 64

static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return sg_test_clock_s(CLOCK_THREAD_CPUTIME_ID); }

/* ---- fixture readers ------------------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint32_t rd_u32(rd *r) {
    if (r->end - r->p < 4) return r->bad = 1, 0;
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}
static uint64_t rd_u64(rd *r) {
    uint64_t lo = rd_u32(r);
    return lo | (uint64_t)rd_u32(r) << 32;
}
static uint64_t rd_varint(rd *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return r->bad = 1, 0;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

typedef struct {
    char **s;
    size_t *len;
    uint32_t n;
} strings;

static int load_strings(const char *path, strings *out) {
    size_t n;
    uint8_t *buf = sg_test_read_file(path, &n);
    if (!buf) return -1;
    rd r = {buf, buf + n, 0};
    if (n < 8 || memcmp(buf, "SGTS", 4) != 0) return free(buf), -1;
    r.p += 4;
    out->n = rd_u32(&r);
    out->s = calloc(out->n, sizeof *out->s);
    out->len = calloc(out->n, sizeof *out->len);
    for (uint32_t i = 0; i < out->n && !r.bad; i++) {
        uint32_t len = rd_u32(&r), times = 1;
        if (len & 0x80000000u) {
            len &= 0x7FFFFFFFu;
            times = rd_u32(&r);
        }
        if (r.bad || (size_t)(r.end - r.p) < len) {
            r.bad = 1;
            break;
        }
        out->len[i] = (size_t)len * times;
        out->s[i] = malloc(out->len[i] + 1);
        for (uint32_t k = 0; k < times; k++) memcpy(out->s[i] + (size_t)k * len, r.p, len);
        out->s[i][out->len[i]] = 0;
        r.p += len;
    }
    free(buf);
    return r.bad ? -1 : 0;
}

/* FNV-1a 64 over ids as little-endian int32 bytes (the script hashes the same way). */
static uint64_t fnv_ids(const int32_t *ids, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) h = (h ^ (((uint32_t)ids[i] >> (8 * b)) & 0xFF)) * 1099511628211ull;
    return h;
}

/* A string for messages: printable ASCII as is, the rest escaped, cut at 60 bytes. */
static const char *shown(const char *s, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap && i < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", c);
    }
    if (n > 60 && o + 4 < cap) o += (size_t)snprintf(buf + o, cap - o, "...");
    buf[o] = 0;
    return buf;
}

static void print_ids(const char *label, const int32_t *ids, int n) {
    printf("    %s:", label);
    for (int i = 0; i < n && i < 70; i++) printf(" %d", ids[i]);
    printf("\n");
}

/* Compares every string of ids file `ids_path` (with the strings it covers: every `stride`-th) for tokenizer
 * t. Returns the number of mismatching strings; *compared gets the number compared. */
static int compare_all(const sg_tokenizer *t, const char *name, const char *ids_path, const strings *S, int stride,
                       uint64_t *fingerprint, int *compared, int *truncated) {
    size_t n;
    uint8_t *buf = sg_test_read_file(ids_path, &n);
    *compared = *truncated = 0;
    if (!buf || n < 16 || memcmp(buf, "SGTI", 4) != 0) {
        printf("    %s: cannot read %s\n", name, ids_path);
        free(buf);
        return -1;
    }
    rd r = {buf + 4, buf + n, 0};
    uint32_t count = rd_u32(&r);
    *fingerprint = rd_u64(&r);
    int bad = 0;
    int32_t got[MAX_LEN], want[MAX_LEN];
    int32_t *full = NULL;
    size_t full_cap = 0;
    char err[512], sb[600];
    int32_t pad = sg_tokenizer_pad_id(t);
    for (uint32_t i = 0; i < count && !r.bad; i++) {
        uint32_t si = i * (uint32_t)stride;
        if (si >= S->n) {
            r.bad = 1;
            break;
        }
        const char *s = S->s[si];
        size_t len = S->len[si];
        int hf_count = (int)rd_varint(&r);
        uint64_t hf_hash = 0;
        if (hf_count <= MAX_LEN) {
            for (int k = 0; k < hf_count; k++) want[k] = (int32_t)rd_varint(&r);
            for (int k = hf_count; k < MAX_LEN; k++) want[k] = pad;
        } else {
            hf_hash = rd_u64(&r);
            for (int k = 0; k < MAX_LEN; k++) want[k] = (int32_t)rd_varint(&r);
        }
        if (r.bad) break;
        int c = sg_tokenizer_encode(t, s, len, got, MAX_LEN, err, sizeof err);
        int ok = c == hf_count && memcmp(got, want, sizeof got) == 0;
        if (ok && hf_count > MAX_LEN) {
            (*truncated)++;
            if ((size_t)hf_count > full_cap) {
                full_cap = (size_t)hf_count;
                free(full);
                full = malloc(full_cap * sizeof *full);
            }
            int c2 = sg_tokenizer_encode(t, s, len, full, hf_count, err, sizeof err);
            ok = c2 == hf_count && fnv_ids(full, hf_count) == hf_hash;
            if (!ok && bad < 5)
                printf("    %s: string %u (%zu bytes) untruncated ids differ from HF's (count %d vs %d)\n", name, si,
                       len, c2, hf_count);
        } else if (!ok && bad < 5) {
            printf("    %s: string %u \"%s\": count %d (HF %d)%s%s\n", name, si, shown(s, len, sb, sizeof sb), c,
                   hf_count, c < 0 ? ", error: " : "", c < 0 ? err : "");
            print_ids("HF ", want, MAX_LEN);
            print_ids("got", got, MAX_LEN);
        }
        bad += !ok;
        (*compared)++;
    }
    if (r.bad || r.p != r.end) {
        printf("    %s: %s is malformed or does not match strings.bin\n", name, ids_path);
        bad++;
    }
    free(full);
    free(buf);
    return bad;
}

/* ---- the checks ----------------------------------------------------------------------------------------- */

static void check_fixture(const char *name, const char *json_path, const strings *S, int stride) {
    char err[512], ids_path[4096];
    sg_tokenizer *t = sg_tokenizer_load(json_path, err, sizeof err);
    CHECK(t != NULL, "%s: loads (%s)", name, t ? "ok" : err);
    if (!t) return;
    size_t pl = strlen(json_path); /* NAME.json -> NAME.ids */
    snprintf(ids_path, sizeof ids_path, "%.*s.ids", (int)(pl > 5 ? pl - 5 : pl), json_path);
    uint64_t fp;
    int compared, truncated;
    int bad = compare_all(t, name, ids_path, S, stride, &fp, &compared, &truncated);
    CHECK(bad == 0 && compared > 0,
          "%s: %d strings identical to HF's ids (max_length=64 call; %d also untruncated), %d "
          "mismatches",
          name, compared - (bad > 0 ? bad : 0), truncated, bad);
    sg_tokenizer_free(t);
}

static void check_synth(const char *root, const strings *S) {
    size_t len;
    double t0 = now();
    char *json = sg_synth_tokenizer_json(&len);
    double gen = now() - t0;
    char ids_path[4096], tmp[4096], err[512];
    snprintf(ids_path, sizeof ids_path, "%s/tests/fixtures/tokenizer/synth256k.ids", root);
    size_t n;
    uint8_t *hdr = sg_test_read_file(ids_path, &n);
    uint64_t want_fp = 0;
    if (hdr && n >= 16) {
        rd r = {hdr + 8, hdr + n, 0};
        want_fp = rd_u64(&r);
    }
    free(hdr);
    uint64_t fp = sg_synth_fnv64(json, len);
    CHECK(fp == want_fp, "synth256k: generated %zu bytes in %.2f s, fingerprint %016llx (fixture %016llx)", len, gen,
          (unsigned long long)fp, (unsigned long long)want_fp);

    /* Load time from a real file (page cache warm after the write). */
    const char *dir = getenv("SG_TMP") ? getenv("SG_TMP") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/synth256k.%d.json", dir, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    int wrote = f && fwrite(json, 1, len, f) == len;
    if (f) wrote &= fclose(f) == 0;
    CHECK(wrote, "synth256k: written to %s", tmp);
    free(json);
    sg_tokenizer *t = NULL;
    double best = 1e9, best_cpu = 1e9;
    for (int r = 0; r < 3 && wrote; r++) {
        t0 = now();
        double c0 = cpu_now();
        sg_tokenizer *x = sg_tokenizer_load(tmp, err, sizeof err);
        double dt = now() - t0, dc = cpu_now() - c0;
        if (!x) {
            CHECK(0, "synth256k: loads (%s)", err);
            break;
        }
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
        sg_tokenizer_free(t);
        t = x;
    }
    unlink(tmp);
    if (!t) return;
    CHECK(sg_tokenizer_vocab_size(t) == 256003 && sg_tokenizer_pad_id(t) == 0,
          "synth256k: vocab_size %d (256,000 + 3 added tokens outside the vocab), pad id %d",
          sg_tokenizer_vocab_size(t), sg_tokenizer_pad_id(t));
    /* Gated on the loading thread's CPU time: the load is single-threaded and reads a file in the page cache, so
     * on an idle machine wall = CPU; on a shared CI machine the wall clock also counts time spent waiting for a
     * core, which says nothing about this code. Both are printed. */
    if (SANITIZED)
        SKIP("synth256k: load time %.3f s not gated under sanitizers (limit 0.3 s applies to the normal build)", best);
    else
        CHECK(best_cpu <= 0.3,
              "synth256k: 22.6 MB tokenizer.json with 256,000 entries loads in %.3f s of CPU (%.3f s "
              "wall; best of 3, limit 0.3 s)",
              best_cpu, best);
    int compared, truncated;
    int bad = compare_all(t, "synth256k", ids_path, S, 1, &fp, &compared, &truncated);
    CHECK(bad == 0 && compared > 0,
          "synth256k: %d strings identical to HF's ids (max_length=64 call; %d also "
          "untruncated), %d mismatches",
          compared - (bad > 0 ? bad : 0), truncated, bad);

    /* Encoding speed on short captions, one thread. */
    const char *const *q = sg_tok_queries;
    int32_t ids[MAX_LEN];
    long iters = SANITIZED ? 2000 : 100000;
    t0 = now();
    int okq = 1;
    for (long i = 0; i < iters; i++)
        okq &= sg_tokenizer_encode(t, q[i % SG_TOK_QUERIES], strlen(q[i % SG_TOK_QUERIES]), ids, MAX_LEN, err,
                                   sizeof err) > 0;
    double qps = iters / (now() - t0);
    if (SANITIZED)
        SKIP("synth256k: %.0f queries/s not gated under sanitizers", qps);
    else
        CHECK(okq && qps >= 20000, "synth256k: %.0f short queries/s on one thread (limit 20,000)", qps);
    sg_tokenizer_free(t);
}

/* Invalid UTF-8, empty and odd queries, against the trained tokenizer (ids from the fixture's conventions:
 * <pad> 0, <eos> 1). */
static void check_queries(const char *json_path) {
    char err[512];
    sg_tokenizer *t = sg_tokenizer_load(json_path, err, sizeof err);
    if (!t) return;
    int32_t ids[MAX_LEN];
    static const struct {
        const char *s;
        size_t len, off;
    } bad[] = {{"abc\x80", 4, 3},  {"\xC0\x80", 2, 0},          {"ok \xED\xA0\x80", 6, 3},
               {"\xE2\x82", 2, 0}, {"a\xF4\x90\x80\x80", 5, 1}, {"\xFF", 1, 0},
               {"caf\xC3", 4, 3},  {"\xF0\x9F\x90", 3, 0},      {"<eos>\xFE<eos>", 11, 5}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte offset %zu", bad[i].off);
        int n = sg_tokenizer_encode(t, bad[i].s, bad[i].len, ids, MAX_LEN, err, sizeof err);
        CHECK(n == -1 && strstr(err, want), "invalid UTF-8 case %zu refused: \"%s\"", i, err);
    }
    int n = sg_tokenizer_encode(t, "", 0, ids, MAX_LEN, err, sizeof err);
    int pads = 1;
    for (int k = 1; k < MAX_LEN; k++) pads &= ids[k] == 0;
    CHECK(n == 1 && ids[0] == 1 && pads, "empty query gives HF's [<eos>, <pad> x 63] (count %d, first id %d)", n,
          ids[0]);
    n = sg_tokenizer_encode(t, NULL, 0, ids, MAX_LEN, err, sizeof err);
    CHECK(n == 1 && ids[0] == 1, "NULL text with length 0 is the empty query");
    /* Not NUL-terminated: only len bytes are read (the bytes after differ). */
    char a[] = "dogXYZ", b[] = "dog!!!";
    int32_t ia[MAX_LEN], ib[MAX_LEN];
    int na = sg_tokenizer_encode(t, a, 3, ia, MAX_LEN, err, sizeof err);
    int nb = sg_tokenizer_encode(t, b, 3, ib, MAX_LEN, err, sizeof err);
    CHECK(na > 1 && na == nb && memcmp(ia, ib, sizeof ia) == 0, "text is read for len bytes only");
    n = sg_tokenizer_encode(t, "a\0b", 3, ids, MAX_LEN, err, sizeof err);
    CHECK(n >= 3, "embedded NUL is a character (%d ids)", n);
    n = sg_tokenizer_encode(t, "dog", 3, ids, 0, err, sizeof err);
    CHECK(n == -1 && strstr(err, "max_len"), "max_len 0 refused: \"%s\"", err);
    n = sg_tokenizer_encode(t, "dog", 3, ids, 1, err, sizeof err);
    CHECK(n >= 2 && ids[0] == 1, "max_len 1 keeps only <eos> (count %d)", n);
    sg_tokenizer_free(t);
    CHECK(sg_tokenizer_load("/nonexistent/tokenizer.json", err, sizeof err) == NULL && strstr(err, "cannot open"),
          "missing file: \"%s\"", err);
    sg_tokenizer_free(NULL);
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char path[4096];
    strings S = {0};
    snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/strings.bin", root);
    CHECK(load_strings(path, &S) == 0, "read %u test strings from %s", S.n, path);
    if (!S.n) return CHECK_DONE();

    snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/trained.json", root);
    check_fixture("trained", path, &S, 1);
    check_queries(path);
    check_synth(root, &S);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/tokenizer/variants", root);
    DIR *d = opendir(dir);
    CHECK(d != NULL, "open %s", dir);
    int nvar = 0;
    char *names[64];
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && nvar < 64) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) names[nvar++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    for (int i = 0; i < nvar; i++) {
        char name[300];
        snprintf(name, sizeof name, "variant %.*s", (int)(strlen(names[i]) - 5), names[i]);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        check_fixture(name, path, &S, 6);
        free(names[i]);
    }
    CHECK(nvar >= 15, "%d variant tokenizers compared", nvar);
    for (uint32_t i = 0; i < S.n; i++) free(S.s[i]);
    free(S.s);
    free(S.len);
    return CHECK_DONE();
}
