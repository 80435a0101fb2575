/* tests/fuzz/fuzz_safetensors.c — libFuzzer entry point over the safetensors reader and the config parser.
 *
 * Input bytes are a whole safetensors file, parsed in memory. When the parser accepts, the invariants it
 * promises are re-checked here and a violation traps (so the fuzzer reports it): every tensor lies inside
 * the data area, ranges tile it exactly when sorted, names are unique, nbytes = elements x dtype size; and
 * every element is read and widened, so ASan sees any pointer outside the buffer. Inputs that start with
 * '{' are also fed to sg_config_parse and sg_text_config_parse (config.json is the loaders' other untrusted file).
 *
 * Build: make fuzz; run: build-fuzz/fuzz_safetensors -max_len=4096 CORPUS_DIR (seed it with the files
 * tests/make_malformed.py writes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/config.h"
#include "weights/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_u64(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    sg_st_file *f = sg_st_open_memory(data, size, "fuzz", err, sizeof err);
    if (!f) {
        if (strlen(err) < 8) __builtin_trap(); /* every rejection must say why */
    } else {
        uint64_t data_size = f->size - f->data_start;
        uint64_t *ranges = malloc((f->n_tensors + 1) * 2 * sizeof *ranges);
        volatile float sink = 0;
        for (size_t i = 0; i < f->n_tensors; i++) {
            const sg_st_tensor *t = &f->tensors[i];
            uint64_t elems = 1;
            for (int d = 0; d < t->ndim; d++)
                elems *= (uint64_t)t->shape[d];
            if (t->end > data_size || t->begin > t->end || t->nbytes != t->end - t->begin ||
                elems * sg_st_dtype_size(t->dtype) != t->nbytes || t->data != f->base + f->data_start + t->begin)
                __builtin_trap();
            if (i && strcmp(f->tensors[i - 1].name, t->name) >= 0) __builtin_trap();
            if (sg_st_find(f, t->name) != t) __builtin_trap();
            float *wide = malloc(elems ? elems * sizeof *wide : 1);
            sg_st_widen(t->dtype, t->data, wide, elems); /* the loader's conversion, reading every byte */
            for (uint64_t j = 0; j < elems; j++)
                sink += wide[j];
            free(wide);
            ranges[2 * i] = t->begin;
            ranges[2 * i + 1] = t->end;
        }
        qsort(ranges, f->n_tensors, 2 * sizeof *ranges, cmp_u64);
        uint64_t at = 0;
        for (size_t i = 0; i < f->n_tensors; i++) {
            if (ranges[2 * i] != at) __builtin_trap();
            at = ranges[2 * i + 1];
        }
        if (at != data_size) __builtin_trap();
        (void)sink;
        free(ranges);
        sg_st_close(f);
    }
    if (size && data[0] == '{') {
        sg_config c;
        if (sg_config_parse((const char *)data, size, "fuzz", &c, err, sizeof err) == 0 &&
            sg_config_validate(&c, "fuzz", err, sizeof err) != 0)
            __builtin_trap(); /* an accepted config must be valid */
        sg_text_config t;
        if (sg_text_config_parse((const char *)data, size, "fuzz", &t, err, sizeof err) == 0 &&
            (t.hidden_size < 1 || t.num_heads < 1 || t.hidden_size % t.num_heads || t.vocab_size < 1 ||
             t.max_positions < 1 || t.projection_size < 1))
            __builtin_trap(); /* an accepted text config must be usable */
    }
    return 0;
}
