/* tests/tools/sg_synth_tokenizer.c — writes the synthetic 256k-entry tokenizer.json of tests/synth_tokenizer.h.
 *
 * Usage: sg_synth_tokenizer OUT.json   (prints the FNV-1a 64 fingerprint of the bytes written)
 * scripts/make_tokenizer_fixtures.py runs it to have the tokenizers library encode the test strings with the very
 * file tests/test_tokenizer.c rebuilds in memory.
 */
#include "tests/synth_tokenizer.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
        return 2;
    }
    size_t len;
    char *json = sg_synth_tokenizer_json(&len);
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(json, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[1]);
        return 1;
    }
    printf("%zu bytes, fnv64 %016llx\n", len, (unsigned long long)sg_synth_fnv64(json, len));
    free(json);
    return 0;
}
