/* tests/test_tokenizer_hostile.c — malformed and hostile tokenizer.json files fail cleanly, with a reason.
 *
 * Each crafted case (below) must give NULL and a message containing the expected words (what, where, got vs
 * expected); cases marked OK must load. Then: every prefix of a small valid file and ~300 prefixes of
 * tests/fixtures/tokenizer/trained.json must fail without crashing (only the whole file loads); deep nesting, a
 * 64 MB string and a million-entry array are refused or skipped within bounded memory; every file in
 * tests/hostile/tokenizer/ (crafted files and fuzzer findings) loads or fails without crashing, and encodes a
 * few queries if it loads. Under `make asan` this also proves there is no out-of-bounds access, leak or undefined
 * behaviour.
 */
#include "preprocess/text/tokenizer.h"
#include "tests/check.h"

#include <dirent.h>
#include <string.h>

/* A small valid tokenizer in Gemma's configuration, cut in three parts so cases can change one of them. */
#define ADDED                                                                                                          \
    "[{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"   \
    "\"special\":true},{\"id\":1,\"content\":\"<eos>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"       \
    "\"normalized\":false,\"special\":true}]"
#define NORM "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"}"
#define POST                                                                                                           \
    "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":"      \
    "{\"id\":\"<eos>\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{\"<eos>\":{\"id\":\"<eos>\",\"ids\":[1],"      \
    "\"tokens\":[\"<eos>\"]}}}"
#define VOCAB "{\"<pad>\":0,\"<eos>\":1,\"<bos>\":2,\"<unk>\":3,\"a\":4,\"b\":5,\"ab\":6,\"\xE2\x96\x81\":7}"
#define MODEL_WITH(extra, vocab, merges)                                                                               \
    "{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":true" extra        \
    ",\"vocab\":" vocab ",\"merges\":" merges "}"
#define MODEL MODEL_WITH("", VOCAB, "[[\"a\",\"b\"]]")
#define TOK(added, norm, post, model)                                                                                  \
    "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":" added ",\"normalizer\":" norm        \
    ",\"pre_tokenizer\":null,\"post_processor\":" post ",\"decoder\":null,\"model\":" model "}"
#define GOOD TOK(ADDED, NORM, POST, MODEL)

static const struct {
    const char *json, *want; /* want: substring of the error, or "OK" */
} cases[] = {
    {GOOD, "OK"},
    {"", "expected '{', got end of input"},
    {"   \n", "expected '{', got end of input"},
    {"[]", "expected '{', got '['"},
    {"{}", "no \"model\" section"},
    {"{", "no closing '}'"},
    {"{\"model\":", "model: expected '{', got end of input"},
    {GOOD "x", "expected end of input after the top-level value, got 'x'"},
    {GOOD ",{}", "expected end of input"},
    {"\xEF\xBB\xBF" GOOD, "expected '{', got byte 0xEF"},
    {"{\"version\":\"2.0\",\"model\":" MODEL "}", "unknown tokenizer version '2.0'"},
    {"{\"version\":1,\"model\":" MODEL "}", "version: expected a string, got '1'"},
    {"{\"model\":" MODEL ",\"model\":" MODEL "}", "duplicate key \"model\""},
    {"{\"model\":" MODEL ",}", "trailing comma"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":0,}", "[]") "}", "trailing comma"},
    {"{\"model\"" MODEL "}", "expected ':'"},
    {"{model:1}", "expected a string, got 'm'"},
    {"{\"model\":" MODEL " \"x\":1}", "expected ',' or '}', got '\"'"},
    {"{\"decoder\":nul,\"model\":" MODEL "}", "expected a JSON value, got 'n'"},
    {"{\"decoder\":nullx,\"model\":" MODEL "}", "expected a JSON value"},
    {"{\"decoder\":[01],\"model\":" MODEL "}", "leading zero"},
    {"{\"decoder\":[1.],\"model\":" MODEL "}", "no digit after the decimal point"},
    {"{\"decoder\":[1e],\"model\":" MODEL "}", "no digit in the exponent"},
    {"{\"decoder\":[-],\"model\":" MODEL "}", "expected a number"},
    {"{\"decoder\":\"a\x01\",\"model\":" MODEL "}", "raw control character 0x01"},
    {"{\"decoder\":\"\xC3\x28\",\"model\":" MODEL "}", "invalid UTF-8 inside a string"},
    {"{\"decoder\":\"\xED\xA0\x80\",\"model\":" MODEL "}", "invalid UTF-8 inside a string"},
    {"{\"decoder\":\"\\ud800\",\"model\":" MODEL "}", "lone leading surrogate"},
    {"{\"decoder\":\"\\udc00x\",\"model\":" MODEL "}", "lone trailing surrogate"},
    {"{\"decoder\":\"\\ud800\\u0041\",\"model\":" MODEL "}", "lone leading surrogate"},
    {"{\"decoder\":\"\\u12\",\"model\":" MODEL "}", "4 hex digits"},
    {"{\"decoder\":\"\\x41\",\"model\":" MODEL "}", "invalid escape '\\x'"},
    {"{\"decoder\":\"abc", "unterminated string"},
    {"{\"decoder\":\"\\ud83d\\ude00 \\u00e9 \\n \\\" \\\\ \\/\",\"model\":" MODEL "}", "OK"},
    {"{\"decoder\":[1,{\"a\":[true,false,null,-0.5e-3,\"x\"]}],\"unknown\":{},\"model\":" MODEL "}", "OK"},
    /* model */
    {"{\"model\":5}", "model: expected '{', got '5'"},
    {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", "unsupported model type 'WordPiece'"},
    {"{\"model\":{\"type\":\"Unigram\"}}", "unsupported model type 'Unigram'"},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB "}}", "missing \"vocab\" or \"merges\""},
    {"{\"model\":" MODEL_WITH("", "[]", "[]") "}", "model.vocab: expected '{', got '['"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "{}") "}", "model.merges: expected '[', got '{'"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":\"0\"}", "[]") "}", "model.vocab id: expected a number, got '\"'"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":-1}", "[]") "}", "expected an integer in [0, 2147483646], got -1"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":2147483647}", "[]") "}", "got 2147483647"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":99999999999999999999999999999}", "[]") "}", "got 9999999999"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":1.5}", "[]") "}", "got a number with a fraction or exponent"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":1e3}", "[]") "}", "got a number with a fraction or exponent"},
    {"{\"model\":" MODEL_WITH("", "{\"a\":1,\"a\":2}", "[]") "}", "duplicate token \"a\" (ids 1 and 2)"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[[\"a\",\"c\"]]") "}", "merge 0 names \"c\", which is not in model.vocab"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[[\"a\",\"b\"],[\"b\",\"a\"]]") "}",
     "merge 1 (\"b\" + \"a\") makes a token that is not in model.vocab"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[[\"a\"]]") "}", "merge 0: expected two strings, got fewer"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[[\"a\",\"b\",\"c\"]]") "}", "merge 0: expected two strings, got more"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[[\"a\",5]]") "}", "merge: expected a string, got '5'"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[\"ab\"]") "}", "exactly one space"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[\"a b c\"]") "}", "exactly one space"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[\"#version: 0.2\",\"a b\"]") ",\"added_tokens\":" ADDED "}", "OK"},
    {"{\"model\":" MODEL_WITH("", VOCAB, "[\"a b\",\"x y\"]") "}", "merge 1 names \"x\""},
    {"{\"model\":" MODEL_WITH(",\"dropout\":0.1", VOCAB, "[]") "}", "duplicate key \"dropout\""},
    {"{\"model\":{\"type\":\"BPE\",\"dropout\":0.1,\"vocab\":{},\"merges\":[]}}", "model.dropout 0.1 is unsupported"},
    {"{\"model\":{\"type\":\"BPE\",\"dropout\":2,\"vocab\":{},\"merges\":[]}}", "outside [0, 1]"},
    {"{\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\",\"vocab\":{},\"merges\":[]}}",
     "continuing_subword_prefix is unsupported"},
    {"{\"model\":{\"type\":\"BPE\",\"end_of_word_suffix\":\"</w>\",\"vocab\":{},\"merges\":[]}}",
     "end_of_word_suffix is unsupported"},
    {"{\"model\":{\"type\":\"BPE\",\"fuse_unk\":\"yes\",\"vocab\":{},\"merges\":[]}}",
     "fuse_unk: expected true or false"},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}", "no \"<pad>\" token"},
    {"{\"model\":" MODEL_WITH(",\"byte_fallback\":false", VOCAB, "[]") "}", "model: duplicate key \"byte_fallback\""},
    /* added tokens */
    {TOK("{}", NORM, POST, MODEL), "added_tokens: expected '['"},
    {TOK("[5]", NORM, POST, MODEL), "added token: expected '{', got '5'"},
    {TOK("[{\"id\":0,\"content\":\"<pad>\"}]", NORM, POST, MODEL), "added token 0: missing \"single_word\""},
    {TOK("[{\"id\":0,\"id\":0}]", NORM, POST, MODEL), "added token: duplicate key \"id\""},
    {TOK("[{\"id\":0,\"content\":\"<pad>\",\"single_word\":true,\"lstrip\":false,\"rstrip\":false,\"normalized\":"
         "false,\"special\":true}]",
         NORM, POST, MODEL),
     "single_word = true is unsupported"},
    {TOK("[{\"id\":0,\"content\":\"\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
         "\"special\":true}]",
         NORM, POST, MODEL),
     "added token 0 has empty content"},
    {TOK("[{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":"
         "false,\"special\":true},{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":"
         "false,\"normalized\":false,\"special\":true}]",
         NORM, POST, MODEL),
     "added token \"<pad>\" appears twice"},
    {TOK("[{\"id\":-5,\"content\":\"x\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":"
         "false,\"special\":true}]",
         NORM, POST, MODEL),
     "added token id: expected an integer in [0, 4294967295], got -5"},
    {TOK("[{\"id\":4000000000,\"content\":\"<new>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
         "\"normalized\":true,\"special\":false}]",
         NORM, POST, MODEL),
     "OK"},
    /* normalizer / pre-tokenizer / post-processor */
    {TOK(ADDED, "{\"type\":\"NFKC\"}", POST, MODEL), "unsupported normalizer type 'NFKC'"},
    {TOK(ADDED, "{\"type\":\"Lowercase\"}", POST, MODEL), "unsupported normalizer type 'Lowercase'"},
    {TOK(ADDED, "{\"pattern\":{\"String\":\" \"}}", POST, MODEL), "normalizer: no \"type\""},
    {TOK(ADDED, "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},\"content\":\"x\"}", POST, MODEL),
     "Regex patterns are unsupported"},
    {TOK(ADDED, "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"x\"}", POST, MODEL),
     "empty String pattern"},
    {TOK(ADDED, "{\"type\":\"Replace\",\"content\":\"x\"}", POST, MODEL), "Replace needs \"pattern\" and \"content\""},
    {TOK(ADDED, "{\"type\":\"Sequence\",\"normalizers\":[" NORM ",{\"type\":\"Prepend\",\"prepend\":\"x\"}]}", POST,
         MODEL),
     "OK"},
    {TOK(ADDED, "{\"type\":\"Sequence\"}", POST, MODEL), "Sequence without \"normalizers\""},
    {TOK(ADDED,
         "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\","
         "\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":"
         "\"Sequence\",\"normalizers\":[]}]}]}]}]}]}",
         POST, MODEL),
     "Sequence nested more than 4 deep"},
    {"{\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":" MODEL "}", "unsupported pre_tokenizer type 'Metaspace'"},
    {"{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":" MODEL "}", "unsupported pre_tokenizer type 'ByteLevel'"},
    {"{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Sideways\",\"invert\":"
     "false},\"model\":" MODEL "}",
     "unknown Split behavior 'Sideways'"},
    {"{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\",\"invert\":"
     "true},\"model\":" MODEL "}",
     "invert = true is unsupported"},
    {TOK(ADDED, NORM, "{\"type\":\"RobertaProcessing\"}", MODEL),
     "unsupported post_processor type 'RobertaProcessing'"},
    {TOK(ADDED, NORM, "{\"type\":\"TemplateProcessing\",\"single\":[]}", MODEL), "needs \"type\", \"single\""},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<cls>\",\"type_id\":0}},"
         "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{}}",
         MODEL),
     "names special token \"<cls>\", which is not in special_tokens"},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"B\",\"type_id\":0}}],"
         "\"special_tokens\":{}}",
         MODEL),
     "uses sequence 'B'"},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"Sequence\":"
         "{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{}}",
         MODEL),
     "uses the sequence twice"},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":0}}],"
         "\"special_tokens\":{\"<eos>\":{\"id\":\"<eos>\",\"ids\":[1],\"tokens\":[\"<eos>\"]}}}",
         MODEL),
     "has no sequence"},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
         "\"special_tokens\":{\"<eos>\":{\"id\":\"<eos>\",\"ids\":[3000000000]}}}",
         MODEL),
     "special token id: expected an integer in [0, 2147483646], got 3000000000"},
    {TOK(ADDED, NORM,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
         "\"special_tokens\":{\"x\":{\"ids\":[]},\"x\":{\"ids\":[]}}}",
         MODEL),
     "special_tokens: duplicate key \"x\""},
};

/* A loaded tokenizer must encode without crashing; returns 0 if every query gives a count or a clean error. */
static int exercise(const sg_tokenizer *t) {
    static const char *const q[] = {
        "", "a", "ab ab", "a photo of a dog", "<eos><pad>", "\xC3\xA9\xF0\x9F\x90\xB6", "  \t\n", "\xFF"};
    int32_t ids[64];
    char err[256];
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        err[0] = 0;
        int n = sg_tokenizer_encode(t, q[i], strlen(q[i]), ids, 64, err, sizeof err);
        if (n < 0 && !err[0]) return -1;
        if (n >= 0)
            for (int k = 0; k < 64; k++)
                if (ids[k] < 0 || ids[k] >= sg_tokenizer_vocab_size(t)) return -1;
    }
    return 0;
}

/* Loads len bytes; returns 1 if loaded (and exercised), 0 if refused with a message, -1 if refused silently or
 * the loaded tokenizer misbehaved. */
static int try_load(const char *json, size_t len, char *err, size_t errlen) {
    err[0] = 0;
    sg_tokenizer *t = sg_tokenizer_load_mem(json, len, err, errlen);
    if (!t) return strlen(err) >= 10 ? 0 : -1;
    int r = exercise(t) == 0 ? 1 : -1;
    sg_tokenizer_free(t);
    return r;
}

int main(void) {
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    char err[1024], path[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ok = strcmp(cases[i].want, "OK") == 0;
        /* Loaded from a copy that ends exactly at the last byte, so ASan sees any read past the end. */
        size_t n = strlen(cases[i].json);
        char *copy = malloc(n ? n : 1);
        memcpy(copy, cases[i].json, n);
        int r = try_load(copy, n, err, sizeof err);
        free(copy);
        if (ok)
            CHECK(r == 1, "case %zu loads%s%s", i, r == 1 ? "" : ": ", r == 1 ? "" : err);
        else
            CHECK(r == 0 && strstr(err, cases[i].want), "case %zu refused: \"%s\" (expected \"%s\")", i, err,
                  cases[i].want);
    }

    /* The unknown token is not in the vocab: loads, but encoding a character that needs it fails cleanly (the
     * library fails there too). */
    {
        const char *j = "{\"added_tokens\":" ADDED ",\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"vocab\":"
                        "{\"<pad>\":0,\"<eos>\":1,\"a\":2},\"merges\":[]}}";
        sg_tokenizer *t = sg_tokenizer_load_mem(j, strlen(j), err, sizeof err);
        CHECK(t != NULL, "tokenizer whose unk token is not in its vocab loads");
        int32_t ids[8];
        int n = t ? sg_tokenizer_encode(t, "a", 1, ids, 8, err, sizeof err) : -1;
        CHECK(n == 1 && ids[0] == 2, "  and encodes known characters");
        n = t ? sg_tokenizer_encode(t, "ab", 2, ids, 8, err, sizeof err) : 0;
        CHECK(n == -1 && strstr(err, "unknown token \"<unk>\" is not in the vocab"), "  and refuses \"ab\": \"%s\"",
              err);
        sg_tokenizer_free(t);
    }

    /* A normalizer that multiplies the text (16 steps of "a" -> 8 x "a"): memory stays proportional to the query,
     * the query is refused instead of growing 8^16 times. */
    {
        char j[4096];
        size_t o = (size_t)snprintf(j, sizeof j,
                                    "{\"added_tokens\":" ADDED ",\"normalizer\":{\"type\":\"Sequence\","
                                    "\"normalizers\":[");
        for (int k = 0; k < 16; k++)
            o += (size_t)snprintf(j + o, sizeof j - o,
                                  "%s{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},"
                                  "\"content\":\"aaaaaaaa\"}",
                                  k ? "," : "");
        o += (size_t)snprintf(j + o, sizeof j - o, "]},\"model\":" MODEL "}");
        sg_tokenizer *t = sg_tokenizer_load_mem(j, o, err, sizeof err);
        CHECK(t != NULL, "16 chained Replace steps load (%s)", t ? "ok" : err);
        int32_t ids[64];
        int n = t ? sg_tokenizer_encode(t, "ab", 2, ids, 64, err, sizeof err) : 0;
        CHECK(n == -1 && strstr(err, "expands a 2-byte piece past 64 times"),
              "  and an exploding query is refused: \"%s\"", err);
        n = t ? sg_tokenizer_encode(t, "b", 1, ids, 64, err, sizeof err) : -1;
        CHECK(n == 1 && ids[0] == 5, "  while a query the steps leave alone encodes (\"b\" -> %d ids)", n);
        sg_tokenizer_free(t);
    }

    /* Every prefix of the small file: only the whole one loads. */
    {
        const char *g = GOOD;
        size_t n = strlen(g);
        int clean = 1, loaded = 0;
        for (size_t k = 0; k <= n; k++) {
            char *copy = malloc(k ? k : 1);
            memcpy(copy, g, k);
            int r = try_load(copy, k, err, sizeof err);
            free(copy);
            if (r < 0) clean = 0;
            if (r == 1) loaded++;
        }
        CHECK(clean && loaded == 1,
              "all %zu prefixes of a %zu-byte tokenizer.json fail cleanly but the whole file (%d load)", n, n, loaded);
    }
    /* ~300 prefixes of the trained fixture (260 KB). */
    snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/trained.json", root);
    size_t flen;
    char *fixture = sg_test_read_file(path, &flen);
    CHECK(fixture != NULL, "read %s", path);
    if (fixture) {
        int clean = 1, loaded = 0, tried = 0;
        for (size_t k = 0; k <= flen; k += flen / 300 + 1) {
            int r = try_load(fixture, k, err, sizeof err);
            clean &= r >= 0;
            loaded += r == 1;
            tried++;
        }
        CHECK(clean && loaded == 0, "%d prefixes of trained.json fail cleanly", tried);
        CHECK(try_load(fixture, flen, err, sizeof err) == 1, "the whole trained.json loads");
        free(fixture);
    }

    /* Deep nesting, in a skipped section and in a parsed one. */
    {
        size_t depth = 100000, n = 2 * depth + 64;
        char *j = malloc(n);
        size_t o = (size_t)snprintf(j, n, "{\"decoder\":");
        for (size_t k = 0; k < depth; k++) j[o++] = '[';
        for (size_t k = 0; k < depth; k++) j[o++] = ']';
        j[o++] = '}';
        sg_tokenizer *t = sg_tokenizer_load_mem(j, o, err, sizeof err);
        CHECK(t == NULL && strstr(err, "nesting deeper than 128 levels"), "100,000 nested arrays refused: \"%s\"", err);
        o = (size_t)snprintf(j, n, "{\"post_processor\":");
        for (size_t k = 0; k < 1000; k++) o += (size_t)snprintf(j + o, n - o, "{\"type\":");
        t = sg_tokenizer_load_mem(j, o, err, sizeof err);
        CHECK(t == NULL && strstr(err, "expected a string, got '{'"), "nested objects where a string belongs: \"%s\"",
              err);
        free(j);
    }
    /* A 64 MB string in an unknown key (skipped without a copy), one with escapes (decoded into a scratch buffer no
     * larger than the file), a million-element array, and a 2 KB added token (refused). */
    {
        size_t big = 64u << 20, n = big + 512;
        char *j = malloc(n);
        size_t o = (size_t)snprintf(j, n, "{\"junk\":\"");
        memset(j + o, 'x', big);
        o += big;
        o += (size_t)snprintf(j + o, n - o, "\",\"added_tokens\":" ADDED ",\"model\":" MODEL "}");
        CHECK(try_load(j, o, err, sizeof err) == 1, "64 MB string in an unknown key is skipped");
        o = (size_t)snprintf(j, n, "{\"junk\":\"");
        for (size_t k = 0; k < big / 2; k += 2) {
            j[o++] = '\\';
            j[o++] = 'n';
        }
        o += (size_t)snprintf(j + o, n - o, "\",\"added_tokens\":" ADDED ",\"model\":" MODEL "}");
        CHECK(try_load(j, o, err, sizeof err) == 1, "32 MB of escapes in an unknown key is decoded and skipped");
        o = (size_t)snprintf(j, n, "{\"junk\":[");
        for (size_t k = 0; k < 1000000; k++) o += (size_t)snprintf(j + o, n - o, "%s0", k ? "," : "");
        o += (size_t)snprintf(j + o, n - o, "],\"added_tokens\":" ADDED ",\"model\":" MODEL "}");
        CHECK(try_load(j, o, err, sizeof err) == 1, "a million-element array is skipped");
        o = (size_t)snprintf(j, n, "{\"added_tokens\":[{\"id\":9,\"content\":\"");
        memset(j + o, 'y', 2048);
        o += 2048;
        o += (size_t)snprintf(j + o, n - o, "\"}],\"model\":" MODEL "}");
        int r = try_load(j, o, err, sizeof err);
        CHECK(r == 0 && strstr(err, "added token of 2048 bytes (limit 1024)"), "2 KB added token refused: \"%s\"", err);
        free(j);
    }
    /* NUL bytes: inside a string as \u0000 (a valid character), raw in the structure (refused). */
    {
        static const char raw[] = "{\"decoder\":\"a\",\0\"model\":{}}";
        sg_tokenizer *t = sg_tokenizer_load_mem(raw, sizeof raw - 1, err, sizeof err);
        CHECK(t == NULL && strstr(err, "expected a string, got byte 0x00"), "raw NUL refused: \"%s\"", err);
        const char *j =
            "{\"added_tokens\":" ADDED ",\"model\":" MODEL_WITH("",
                                                                "{\"<pad>\":0,\"<eos>\":1,\"a\\u0000b\":2,"
                                                                "\"a\":3,\"\\u0000b\":4,\"\\u0000\":5,\"b\":6}",
                                                                "[[\"\\u0000\",\"b\"],[\"a\",\"\\u0000b\"]]") "}";
        t = sg_tokenizer_load_mem(j, strlen(j), err, sizeof err);
        int32_t ids[4];
        int n = t ? sg_tokenizer_encode(t, "a\0b", 3, ids, 4, err, sizeof err) : -1;
        CHECK(n == 1 && ids[0] == 2 && ids[1] == 0,
              "\\u0000 inside tokens works (no template: no <eos>) (\"a\\0b\" -> id %d)", n > 0 ? ids[0] : -1);
        sg_tokenizer_free(t);
    }
    CHECK(sg_tokenizer_load_mem(NULL, 5, err, sizeof err) == NULL && strstr(err, "NULL"), "NULL buffer refused");

    /* Files kept in tests/hostile/tokenizer: crafted ones and fuzzer findings. */
    snprintf(path, sizeof path, "%s/tests/hostile/tokenizer", root);
    DIR *d = opendir(path);
    int files = 0, clean = 1;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char fp[4600];
        snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
        size_t n;
        char *buf = sg_test_read_file(fp, &n);
        if (!buf) continue;
        int r = try_load(buf, n, err, sizeof err);
        if (r < 0) {
            clean = 0;
            printf("    %s: refused without a message or misbehaved\n", e->d_name);
        }
        free(buf);
        files++;
    }
    if (d) closedir(d);
    CHECK(d != NULL && clean && files > 0, "%d files in tests/hostile/tokenizer load or fail cleanly", files);
    return CHECK_DONE();
}
