/* tests/fuzz/fuzz_tokenizer_encode.c — libFuzzer entry point over sg_tokenizer_encode.
 *
 * The first input byte picks a tokenizer and max_len, the rest is the query (any bytes: invalid UTF-8 must be
 * refused with its offset, never read past). Tokenizers: the trained Gemma-configured fixture
 * (tests/fixtures/tokenizer/trained.json, found from the working directory or $SG_ROOT) when present, and three
 * small built-in ones that reach the rarer paths: added tokens with lstrip / rstrip / normalized = true and
 * overlapping contents, missing byte tokens with fused and unfused unknown tokens, Prepend + Split(Contiguous)
 * with a two-id template. Properties checked (a violation traps):
 *   - the result is a count >= 0, or -1 with a reason; invalid UTF-8 gives -1 exactly when the input is invalid;
 *   - every id is in [0, vocab_size) and ids past the count are pad ids;
 *   - truncation keeps a prefix: encoding with max_len = count gives ids whose first max_len - specials content
 *     ids equal those of the truncated call (templates here are "$A <eos>" or "<bos> $A <eos>").
 *
 * Build: make fuzz; run as in tests/fuzz/README.md (seeds: one file per test string of strings.bin).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess/text/tokenizer.h"
#include "preprocess/text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ADDED_BASE                                                                                                     \
    "{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"    \
    "\"special\":true},{\"id\":1,\"content\":\"<eos>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"       \
    "\"normalized\":false,\"special\":true},{\"id\":2,\"content\":\"<bos>\",\"single_word\":false,\"lstrip\":false,"   \
    "\"rstrip\":false,\"normalized\":false,\"special\":true}"
#define VOCAB_BASE                                                                                                     \
    "\"<pad>\":0,\"<eos>\":1,\"<bos>\":2,\"<unk>\":3,\"a\":4,\"b\":5,\"ab\":6,\"\xE2\x96\x81\":7,\"\xE2\x96\x81"       \
    "a\":8,"                                                                                                           \
    "\"abab\":9,\"<0x41>\":10,\"<0xC3>\":11,\"<0xA9>\":12,\"<0x20>\":13,\"<0x0A>\":14,\"<0xE2>\":15,\"<0x96>\":16,"    \
    "\"<0x81>\":17,\"x\":18,\"\xE2\x96\x81\xE2\x96\x81\":19"
#define MERGES_BASE "[[\"a\",\"b\"],[\"\xE2\x96\x81\",\"a\"],[\"ab\",\"ab\"],[\"\xE2\x96\x81\",\"\xE2\x96\x81\"]]"
#define EOS_TEMPLATE                                                                                                   \
    "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":"      \
    "{\"id\":\"<eos>\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{\"<eos>\":{\"id\":\"<eos>\",\"ids\":[1]}}}"

static const char *const builtin[] = {
    /* added-token flags */
    "{\"version\":\"1.0\",\"added_tokens\":[" ADDED_BASE
    ",{\"id\":20,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":true,\"rstrip\":true,\"normalized\":false,"
    "\"special\":true},{\"id\":21,\"content\":\" ab\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
    "\"normalized\":true,\"special\":false},{\"id\":22,\"content\":\"<s><s>\",\"single_word\":false,\"lstrip\":false,"
    "\"rstrip\":true,\"normalized\":false,\"special\":false},{\"id\":23,\"content\":\"x \",\"single_word\":false,"
    "\"lstrip\":true,\"rstrip\":true,\"normalized\":false,\"special\":false}],"
    "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"},"
    "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"MergedWithPrevious\","
    "\"invert\":false},\"post_processor\":" EOS_TEMPLATE ",\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\","
    "\"fuse_unk\":true,\"byte_fallback\":true,\"vocab\":{" VOCAB_BASE "},\"merges\":" MERGES_BASE "}}",
    /* unknown tokens, unfused */
    "{\"version\":\"1.0\",\"added_tokens\":[" ADDED_BASE "],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Split\","
    "\"pattern\":{\"String\":\"b\"},\"behavior\":\"MergedWithNext\",\"invert\":false},\"post_processor\":" EOS_TEMPLATE
    ",\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":false,\"byte_fallback\":true,\"vocab\":"
    "{" VOCAB_BASE "},\"merges\":" MERGES_BASE "}}",
    /* Prepend + Split(Contiguous), "<bos> $A <eos>", ignore_merges, no byte fallback */
    "{\"version\":\"1.0\",\"added_tokens\":[" ADDED_BASE "],\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
    "{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
    "\"content\":\"\xE2\x96\x81\"}]},\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"\xE2\x96\x81\"},"
    "\"behavior\":\"Contiguous\",\"invert\":false},\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":["
    "{\"SpecialToken\":{\"id\":\"<bos>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":"
    "{\"id\":\"<eos>\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{\"<bos>\":{\"ids\":[2]},\"<eos>\":{\"ids\":[1]}"
    "}},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":false,"
    "\"ignore_merges\":true,\"vocab\":{" VOCAB_BASE "},\"merges\":" MERGES_BASE "}}",
};

static sg_tokenizer *toks[4];
static int ntok, lead[4];

static void init(void) {
    char err[512];
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        toks[ntok] = sg_tokenizer_load_mem(builtin[i], strlen(builtin[i]), err, sizeof err);
        if (!toks[ntok]) {
            fprintf(stderr, "fuzz_tokenizer_encode: built-in tokenizer %zu: %s\n", i, err);
            abort();
        }
        lead[ntok++] = i == 2; /* template starts with <bos> */
    }
    char path[4096];
    const char *root = getenv("SG_ROOT");
    snprintf(path, sizeof path, "%s%stests/fixtures/tokenizer/trained.json", root ? root : "", root ? "/" : "");
    toks[ntok] = sg_tokenizer_load(path, err, sizeof err);
    if (toks[ntok])
        lead[ntok++] = 0;
    else
        fprintf(stderr, "fuzz_tokenizer_encode: %s (fuzzing the built-in tokenizers only)\n", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ntok) init();
    if (size < 1) return 0;
    const sg_tokenizer *t = toks[data[0] % ntok];
    int max_len = 2 + (data[0] >> 2) % 40; /* 2..41: short enough that truncation happens often */
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t ids[64], *full = NULL;
    char err[512];
    err[0] = 0;
    int n = sg_tokenizer_encode(t, text, len, ids, max_len, err, sizeof err);
    int valid = sg_utf8_check(text, len) == len;
    if (n < 0) {
        if (strlen(err) < 10) __builtin_trap();
        if (valid && !strstr(err, "unknown token")) __builtin_trap(); /* valid text fails only for a missing unk */
        return 0;
    }
    if (!valid) __builtin_trap();
    int32_t vs = sg_tokenizer_vocab_size(t), pad = sg_tokenizer_pad_id(t);
    for (int k = 0; k < max_len; k++) {
        if (ids[k] < 0 || ids[k] >= vs) __builtin_trap();
        if (k >= n && ids[k] != pad) __builtin_trap();
    }
    if (n > max_len) {
        full = malloc((size_t)n * sizeof *full);
        int n2 = sg_tokenizer_encode(t, text, len, full, n, err, sizeof err);
        if (n2 != n) __builtin_trap();
        int specials = lead[data[0] % ntok] ? 2 : 1;
        int keep = max_len - specials, off = lead[data[0] % ntok];
        if (keep > 0 && memcmp(ids + off, full + off, (size_t)keep * sizeof *ids) != 0) __builtin_trap();
        if (ids[max_len - 1] != full[n - 1]) __builtin_trap(); /* the template's last id survives truncation */
        free(full);
    }
    return 0;
}
