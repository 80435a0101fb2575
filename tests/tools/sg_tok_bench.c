/* tests/tools/sg_tok_bench.c — times the tokenizer: loading a tokenizer.json and encoding short queries.
 *
 * Usage: sg_tok_bench TOKENIZER.json [QUERIES]     (QUERIES: encodes to time, default 200000)
 *        sg_tok_bench --synth [QUERIES]            (the 256k-entry tokenizer of tests/synth_tokenizer.h, written to
 *                                                   a temporary file first so the load reads a real file)
 * Prints the load time (best of 5 loads, wall and CPU, and the first), vocab size, and queries/s on one thread for a
 * fixed set of short captions (tests/tok_queries.h, max_len 64). docs/tokenizer.md quotes its figures.
 */
#include "preprocess/text/tokenizer.h"
#include "tests/synth_tokenizer.h"
#include "tests/check.h"
#include "tests/tok_queries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) { return sg_test_clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return sg_test_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TOKENIZER.json|--synth [QUERIES]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    char tmp[] = "/tmp/sg_tok_bench.XXXXXX";
    int synth = strcmp(path, "--synth") == 0;
    if (synth) {
        size_t len;
        char *json = sg_synth_tokenizer_json(&len);
        int fd = mkstemp(tmp);
        if (fd < 0 || write(fd, json, len) != (ssize_t)len || close(fd) != 0) {
            fprintf(stderr, "cannot write %s\n", tmp);
            return 1;
        }
        free(json);
        path = tmp;
    }
    long queries = argc > 2 ? atol(argv[2]) : 200000;
    char err[512];
    double first = 0, best = 1e9, best_cpu = 1e9;
    sg_tokenizer *t = NULL;
    for (int r = 0; r < 5; r++) {
        double t0 = now(), c0 = cpu();
        sg_tokenizer *x = sg_tokenizer_load(path, err, sizeof err);
        double dt = now() - t0, dc = cpu() - c0;
        if (dc < best_cpu) best_cpu = dc;
        if (!x) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if (r == 0) first = dt;
        if (dt < best) best = dt;
        if (t) sg_tokenizer_free(t);
        t = x;
    }
    if (synth) unlink(tmp);
    printf("load: best %.3f s wall (%.3f s CPU), first %.3f s (5 loads), vocab_size %d\n", best, best_cpu, first,
           sg_tokenizer_vocab_size(t));
    const char *const *q = sg_tok_queries;
    int32_t ids[64];
    long total_tokens = 0;
    double t0 = now();
    for (long i = 0; i < queries; i++) {
        const char *s = q[i % SG_TOK_QUERIES];
        int n = sg_tokenizer_encode(t, s, strlen(s), ids, 64, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        total_tokens += n;
    }
    double dt = now() - t0;
    printf("encode: %ld queries in %.3f s = %.0f queries/s (%.1f tokens each, one thread)\n", queries, dt, queries / dt,
           (double)total_tokens / queries);
    sg_tokenizer_free(t);
    return 0;
}
