/* tests/tok_queries.h — the short captions the tokenizer's encoding speed is measured on.
 *
 * tests/test_tokenizer.c (its queries/s gate) and tests/tools/sg_tok_bench.c (the figures docs/tokenizer.md
 * quotes) encode these same ten, round robin, so that the two numbers are of the same work: English captions of
 * a few words, one French, one Japanese, one with an emoji, one in capitals.
 */
#ifndef SG_TEST_TOK_QUERIES_H
#define SG_TEST_TOK_QUERIES_H

#define SG_TOK_QUERIES 10

static const char *const sg_tok_queries[SG_TOK_QUERIES] = {
    "a photo of a dog",
    "a dog on a beach at sunset",
    "This is a photo of two cats.",
    "a red car parked in front of an old building",
    "Un chat noir sur un canapé",
    "富士山の写真",
    "people playing football in the park",
    "a close-up of a flower 🌸",
    "A PAINTING OF A HORSE",
    "night city",
};

#endif
