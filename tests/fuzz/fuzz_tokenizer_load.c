/* tests/fuzz/fuzz_tokenizer_load.c — libFuzzer entry point over the tokenizer.json reader.
 *
 * Input bytes are a whole tokenizer.json, loaded from memory (sg_tokenizer_load_mem; the buffer libFuzzer gives
 * ends exactly at the last byte, so ASan sees any read past it). A rejection must say why (a message of at
 * least 10 characters). An accepted tokenizer must keep its promises: pad id and every id encode writes lie in
 * [0, vocab_size), a query either gives a count at least the template's special tokens or fails with a reason,
 * and ids past the count are pad ids. A violation traps, so the fuzzer reports it.
 *
 * Build: make fuzz; run as in tests/fuzz/README.md (seeds: the variant tokenizers in tests/fixtures/tokenizer/variants
 * and the crafted cases of tests/test_tokenizer_hostile.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess/text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    err[0] = 0;
    sg_tokenizer *t = sg_tokenizer_load_mem((const char *)data, size, err, sizeof err);
    if (!t) {
        if (strlen(err) < 10) __builtin_trap(); /* every rejection must say why */
        return 0;
    }
    int32_t vs = sg_tokenizer_vocab_size(t), pad = sg_tokenizer_pad_id(t);
    if (vs <= 0 || pad < 0 || pad >= vs) __builtin_trap();
    static const char *const q[] = {"",
                                    "a",
                                    "a photo of a dog",
                                    "<eos>",
                                    "<pad>x<bos>",
                                    "\xC3\xA9\xF0\x9F\x90\xB6",
                                    "  \t\n\xE2\x96\x81",
                                    "<0x41>",
                                    "\xE3\x80\x80x \xC2\xA0"};
    int32_t ids[16];
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        err[0] = 0;
        int n = sg_tokenizer_encode(t, q[i], strlen(q[i]), ids, 16, err, sizeof err);
        if (n < 0) {
            if (strlen(err) < 10) __builtin_trap();
            continue;
        }
        for (int k = 0; k < 16; k++) {
            if (ids[k] < 0 || ids[k] >= vs) __builtin_trap();
            if (k >= n && ids[k] != pad) __builtin_trap();
        }
    }
    sg_tokenizer_free(t);
    return 0;
}
