/* tests/test_weights_common.h — helpers shared by the weights tests (test_safetensors_malformed.c,
 * test_model_load.c): run the fixture generator tests/make_malformed.py and recompute its tensor values.
 *
 * The generator fills element j of the tensor whose unprefixed name is N with
 * ((fnv1a32(N) + 7 j) mod 251 - 125) / 64, exact in F32, F16 and BF16 (see make_malformed.py).
 */
#ifndef SG_TEST_WEIGHTS_COMMON_H
#define SG_TEST_WEIGHTS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline uint32_t tw_fnv1a32(const char *s) {
    uint32_t h = 0x811C9DC5u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x01000193u;
    return h;
}

static inline float tw_value(const char *name, size_t j) {
    return (float)((double)((tw_fnv1a32(name) + 7 * (uint64_t)j) % 251) - 125.0) / 64.0f;
}

/* Runs the generator into a fresh folder named tag under $SG_TMP (or /tmp); writes the folder into dir.
 * Returns 0 on success. */
static inline int tw_generate(const char *tag, char *dir, size_t len) {
    const char *tmp = getenv("SG_TMP"), *root = getenv("SG_ROOT"), *py = getenv("SG_PYTHON");
    char cmd[8192];
    snprintf(dir, len, "%s/%s.%d", tmp && *tmp ? tmp : "/tmp", tag, (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' '%s/tests/make_malformed.py' '%s'", dir, py && *py ? py : "python3",
             root && *root ? root : ".", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
