/* tests/synth_tokenizer.h — a deterministic Gemma-shaped tokenizer.json with a 256,000-entry vocabulary.
 *
 * The real Gemma tokenizer.json (256k BPE with byte fallback) cannot be downloaded here, so the tests build one
 * of the same shape and size: the same normalizer (" " -> "\u2581"), pre-tokenizer (Split " " merged with
 * previous), post-processor ("$A <eos>"), special tokens at ids 0..4, "<0xNN>" byte tokens ("<0x09>" replaced
 * by a literal tab, as transformers' GemmaConverter does), and ~254k merges. Merges come from two sources:
 * chains that spell common English words letter by letter (so real queries merge into long tokens), and random
 * pairs biased towards short tokens (so the heap sees many competing ranks); some random merges form a string
 * that already exists (several merges, one result) and some pairs repeat (the library keeps the last). Three
 * byte tokens are left out (<0xF0>, <0xF1>, <0xC3>) so that characters outside the vocab whose bytes are missing
 * reach the unknown token, and a few added tokens carry lstrip / rstrip / normalized = true, which Gemma's do
 * not, to exercise those paths too.
 *
 * sg_synth_tokenizer_json returns the same bytes on every machine (splitmix64, no libc randomness, no floats):
 * scripts/make_tokenizer_fixtures.py writes it with build/tools/sg_synth_tokenizer, has the tokenizers library
 * encode the committed strings with it, and records the FNV-1a 64 hash of the bytes beside the expected ids;
 * tests/test_tokenizer.c regenerates it in memory and checks the hash before comparing ids.
 */
#ifndef SG_TEST_SYNTH_TOKENIZER_H
#define SG_TEST_SYNTH_TOKENIZER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH_VOCAB 256000
#define SYNTH_SEED 0x5167326C69703221ull

typedef struct {
    char *v;
    size_t n, cap;
} synth_buf;

static inline void synth_put(synth_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *nv = realloc(b->v, cap);
        if (!nv) {
            fprintf(stderr, "synth_tokenizer: out of memory\n");
            exit(2);
        }
        b->v = nv;
        b->cap = cap;
    }
    memcpy(b->v + b->n, s, n);
    b->n += n;
    b->v[b->n] = 0;
}
static inline void synth_puts(synth_buf *b, const char *s) { synth_put(b, s, strlen(s)); }

/* A JSON string literal for s (len bytes): quotes, backslashes and control characters escaped. */
static inline void synth_json_str(synth_buf *b, const char *s, size_t len) {
    synth_puts(b, "\"");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            synth_put(b, e, 2);
        } else if (c == '\n') {
            synth_puts(b, "\\n");
        } else if (c == '\t') {
            synth_puts(b, "\\t");
        } else if (c < 0x20) {
            snprintf(e, sizeof e, "\\u%04x", c);
            synth_puts(b, e);
        } else {
            synth_put(b, (const char *)&c, 1);
        }
    }
    synth_puts(b, "\"");
}

static inline uint64_t synth_next(uint64_t *s) {
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The vocabulary under construction: strings in one buffer, a hash set for membership. */
typedef struct {
    synth_buf text; /* all token strings, back to back */
    uint32_t *off, *len;
    uint32_t n;
    uint32_t *slots; /* index + 1 */
    uint32_t mask;
} synth_vocab;

static inline uint64_t synth_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static inline int32_t synth_find(const synth_vocab *v, const char *s, size_t n) {
    uint32_t i = (uint32_t)synth_hash(s, n) & v->mask;
    while (v->slots[i]) {
        uint32_t k = v->slots[i] - 1;
        if (v->len[k] == n && memcmp(v->text.v + v->off[k], s, n) == 0) return (int32_t)k;
        i = (i + 1) & v->mask;
    }
    return -1;
}

/* Adds s unless present; returns its index. */
static inline uint32_t synth_add(synth_vocab *v, const char *s, size_t n) {
    int32_t f = synth_find(v, s, n);
    if (f >= 0) return (uint32_t)f;
    uint32_t k = v->n++;
    v->off[k] = (uint32_t)v->text.n;
    v->len[k] = (uint32_t)n;
    synth_put(&v->text, s, n);
    uint32_t i = (uint32_t)synth_hash(s, n) & v->mask;
    while (v->slots[i]) i = (i + 1) & v->mask;
    v->slots[i] = k + 1;
    return k;
}

static inline size_t synth_utf8(uint32_t cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
               o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (char)(0xF0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
           o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

/* Words spelled out by merge chains ("\u2581" + word and word alone), so that queries merge realistically. */
static const char *const synth_words[] = {
    "the",     "a",     "of",    "and",    "in",       "on",       "with",     "photo",   "picture",  "image",
    "dog",     "cat",   "beach", "sunset", "mountain", "city",     "street",   "car",     "red",      "blue",
    "green",   "white", "black", "man",    "woman",    "child",    "people",   "sitting", "running",  "standing",
    "tree",    "water", "sky",   "house",  "food",     "plate",    "table",    "flower",  "bird",     "horse",
    "train",   "bus",   "night", "snow",   "river",    "bridge",   "painting", "drawing", "portrait", "landscape",
    "close",   "up",    "view",  "small",  "large",    "old",      "new",      "two",     "three",    "group",
    "playing", "ball",  "grass", "field",  "road",     "building", "window",   "door",    "light",    "dark",
    "this",    "is",    "that",  "for",    "from",     "by",       "an",       "at",      "to",       "it",
    "there",   "are",   "be",    "was",    "where",    "what",
};

typedef struct {
    const char *content;
    int lstrip, rstrip, normalized, special;
} synth_added;

/* The synthetic tokenizer.json, NUL-terminated, in a malloc'd buffer (free it); its length in *len. */
static inline char *sg_synth_tokenizer_json(size_t *len) {
    synth_vocab v = {0};
    v.off = malloc(SYNTH_VOCAB * sizeof *v.off);
    v.len = malloc(SYNTH_VOCAB * sizeof *v.len);
    v.mask = (1u << 20) - 1;
    v.slots = calloc((size_t)v.mask + 1, sizeof *v.slots);
    uint32_t *ma = malloc(2 * SYNTH_VOCAB * sizeof *ma), *mb = malloc(2 * SYNTH_VOCAB * sizeof *mb);
    if (!v.off || !v.len || !v.slots || !ma || !mb) {
        fprintf(stderr, "synth_tokenizer: out of memory\n");
        exit(2);
    }
    uint32_t nm = 0;
    char s[64];
    /* Special tokens, then Gemma-like control pieces. */
    static const char *const specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[@BOS@]"};
    for (int i = 0; i < 6; i++) synth_add(&v, specials[i], strlen(specials[i]));
    for (int i = 0; i < 50; i++) synth_add(&v, s, (size_t)snprintf(s, sizeof s, "<unused%d>", i));
    synth_add(&v, "<start_of_turn>", 15);
    synth_add(&v, "<end_of_turn>", 13);
    for (int i = 1; i <= 12; i++) {
        memset(s, '\n', (size_t)i);
        synth_add(&v, s, (size_t)i);
    }
    for (int i = 2; i <= 12; i++) {
        size_t n = 0;
        for (int k = 0; k < i; k++) n += synth_utf8(0x2581, s + n);
        synth_add(&v, s, n);
    }
    static const char *const tags[] = {"<table>", "</table>", "<tr>", "<td>", "<h1>", "</h1>", "<b>", "</b>", "<br>"};
    for (int i = 0; i < 9; i++) synth_add(&v, tags[i], strlen(tags[i]));
    synth_add(&v, "<sep>", 5);
    synth_add(&v, "\xE2\x96\x81<q>", 6); /* "\u2581<q>": the normalized form of the added token " <q>" */
    /* Byte tokens: a literal tab for 0x09; three left out on purpose (see the top of the file). */
    for (int b = 0; b < 256; b++) {
        if (b == 0xF0 || b == 0xF1 || b == 0xC3) continue;
        if (b == 0x09)
            synth_add(&v, "\t", 1);
        else
            synth_add(&v, s, (size_t)snprintf(s, sizeof s, "<0x%02X>", b));
    }
    /* The alphabet. */
    uint32_t alpha0 = v.n;
    synth_add(&v, s, synth_utf8(0x2581, s));
    for (uint32_t c = 0x21; c < 0x7F; c++) synth_add(&v, s, synth_utf8(c, s));
    static const uint32_t ranges[][2] = {
        {0xC0, 0xFF},       {0x391, 0x3A9}, {0x3B1, 0x3C9}, {0x410, 0x44F},   {0x3041, 0x3093}, {0x4E00, 0x4E00 + 999},
        {0x1F600, 0x1F620}, {0x301, 0x301}, {0xA0, 0xA0},   {0x2019, 0x201D}, {0x2014, 0x2014}, {0xAC00, 0xAC00 + 199}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
        for (uint32_t c = ranges[r][0]; c <= ranges[r][1]; c++)
            if (c != 0xD7 && c != 0xF7) synth_add(&v, s, synth_utf8(c, s));
    uint32_t alpha_end = v.n;
    /* Word chains: "\u2581w", "\u2581wo", ... and "w", "wo", ...: each step one merge (prefix + next letter). */
    for (size_t w = 0; w < sizeof synth_words / sizeof synth_words[0]; w++) {
        for (int lead = 0; lead < 2; lead++) {
            size_t n = 0;
            char cur[64];
            if (lead) n = synth_utf8(0x2581, cur);
            const char *word = synth_words[w];
            for (size_t k = 0; word[k]; k++) {
                int32_t left = n ? synth_find(&v, cur, n) : -1;
                cur[n++] = word[k];
                uint32_t right = (uint32_t)synth_find(&v, word + k, 1);
                uint32_t id = synth_add(&v, cur, n);
                if (left >= 0) {
                    ma[nm] = (uint32_t)left;
                    mb[nm] = right;
                    nm++;
                }
                (void)id;
            }
        }
    }
    /* Random merges until the vocabulary is full. */
    uint64_t st = SYNTH_SEED;
    while (v.n < SYNTH_VOCAB) {
        uint32_t span = v.n - alpha0;
        /* u^3 on a 32-bit uniform: index density falls off towards recent (longer) tokens. */
        uint64_t u1 = synth_next(&st) >> 43, u2 = synth_next(&st) >> 43; /* 21-bit uniforms */
        uint32_t a = alpha0 + (uint32_t)((((u1 * u1) >> 21) * u1 >> 21) * span >> 21);
        uint32_t b = alpha0 + (uint32_t)((((u2 * u2) >> 21) * u2 >> 21) * span >> 21);
        if (a >= v.n || b >= v.n) continue;
        size_t la = v.len[a], lb = v.len[b];
        if (la + lb > 32) continue;
        memcpy(s, v.text.v + v.off[a], la);
        memcpy(s + la, v.text.v + v.off[b], lb);
        int32_t f = synth_find(&v, s, la + lb);
        /* An existing string: keep 1 in 8 as a merge (while the merge arrays have room). */
        if (f >= 0 && (nm >= SYNTH_VOCAB + SYNTH_VOCAB / 2 || (synth_next(&st) & 7) != 0)) continue;
        synth_add(&v, s, la + lb);
        ma[nm] = a;
        mb[nm] = b;
        nm++;
    }
    (void)alpha_end;

    synth_buf out = {0};
    synth_puts(&out, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
    /* Added tokens: the specials, then the control pieces and tags (not special), then the flag cases. */
    synth_added added[128];
    int na = 0;
    for (int i = 0; i < 6; i++) added[na++] = (synth_added){specials[i], 0, 0, 0, 1};
    static char unused_names[50][16];
    for (int i = 0; i < 50; i++) {
        snprintf(unused_names[i], sizeof unused_names[i], "<unused%d>", i);
        added[na++] = (synth_added){unused_names[i], 0, 0, 0, 1};
    }
    added[na++] = (synth_added){"<start_of_turn>", 0, 0, 0, 1};
    added[na++] = (synth_added){"<end_of_turn>", 0, 0, 0, 1};
    static const char *const nl[] = {"\n", "\n\n", "\n\n\n", "\n\n\n\n"};
    for (int i = 0; i < 4; i++) added[na++] = (synth_added){nl[i], 0, 0, 0, 0};
    for (int i = 0; i < 9; i++) added[na++] = (synth_added){tags[i], 0, 0, 0, 0};
    added[na++] = (synth_added){"<sep>", 1, 1, 0, 1};
    added[na++] = (synth_added){" <q>", 0, 0, 1, 0};       /* matched as "\u2581<q>" after normalization */
    added[na++] = (synth_added){"<extra_id>", 0, 1, 0, 1}; /* not in the vocab: gets the next free id */
    added[na++] = (synth_added){"[LS]", 1, 0, 0, 0};       /* not in the vocab either */
    int32_t next_id = (int32_t)v.n;                        /* what the library assigns to contents outside the vocab */
    for (int i = 0; i < na; i++) {
        int32_t id = synth_find(&v, added[i].content, strlen(added[i].content));
        char buf[256];
        if (id < 0) id = next_id++;
        snprintf(buf, sizeof buf, "%s{\"id\":%d,\"content\":", i ? "," : "", id);
        synth_puts(&out, buf);
        synth_json_str(&out, added[i].content, strlen(added[i].content));
        snprintf(buf, sizeof buf,
                 ",\"single_word\":false,\"lstrip\":%s,\"rstrip\":%s,\"normalized\":%s,\"special\":%s}",
                 added[i].lstrip ? "true" : "false", added[i].rstrip ? "true" : "false",
                 added[i].normalized ? "true" : "false", added[i].special ? "true" : "false");
        synth_puts(&out, buf);
    }
    synth_puts(&out,
               "],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"},"
               "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":"
               "\"MergedWithPrevious\",\"invert\":false},"
               "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\","
               "\"type_id\":0}},{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":0}}],\"pair\":[{\"Sequence\":"
               "{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":0}},{\"Sequence\":"
               "{\"id\":\"B\",\"type_id\":1}},{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":1}}],"
               "\"special_tokens\":{\"<eos>\":{\"id\":\"<eos>\",\"ids\":[1],\"tokens\":[\"<eos>\"]}}},"
               "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":"
               "\"\xE2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]},"
               "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":"
               "null,\"end_of_word_suffix\":null,\"fuse_unk\":true,\"byte_fallback\":true,\"ignore_merges\":false,"
               "\"vocab\": {");
    /* vocab and merges laid out as serde_json's pretty printer writes them (what tokenizer.save() produces),
     * so the file has the size and white space of a real one (~30 MB). */
    for (uint32_t k = 0; k < v.n; k++) {
        synth_puts(&out, k ? ",\n      " : "\n      ");
        synth_json_str(&out, v.text.v + v.off[k], v.len[k]);
        char buf[16];
        snprintf(buf, sizeof buf, ": %u", k);
        synth_puts(&out, buf);
    }
    synth_puts(&out, "\n    },\n    \"merges\": [");
    for (uint32_t m = 0; m < nm; m++) {
        synth_puts(&out, m ? ",\n      [\n        " : "\n      [\n        ");
        synth_json_str(&out, v.text.v + v.off[ma[m]], v.len[ma[m]]);
        synth_puts(&out, ",\n        ");
        synth_json_str(&out, v.text.v + v.off[mb[m]], v.len[mb[m]]);
        synth_puts(&out, "\n      ]");
    }
    synth_puts(&out, "\n    ]\n  }\n}\n");
    free(v.text.v);
    free(v.off);
    free(v.len);
    free(v.slots);
    free(ma);
    free(mb);
    *len = out.n;
    return out.v;
}

/* FNV-1a 64 of len bytes: the fingerprint of the generated file recorded beside the expected ids. */
static inline uint64_t sg_synth_fnv64(const char *p, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

#endif
