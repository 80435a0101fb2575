/* tests/fuzz/dump.h — what the lab drivers in tests/fuzz share (the decoders' sides of the differential scripts,
 * and the VP8 benchmark): the FNV-1a 64 they print as a content hash, and their loop over file paths on stdin.
 *
 * The hash starts from the caller's value, because each must match its script's Python side:
 * SG_DUMP_FNV_ORACLE (1469598103934665603, what scripts/pillow_oracle.py's ORACLE and inflate_differential.py
 * start from: gif_dump, webp_vp8_dump, webp_vp8_bench, inflate_dump) or SG_DUMP_FNV_BASIS (FNV's offset basis,
 * pillow_oracle.fnv1a64's: webp_vp8l_dump). It is tests/check.h's sg_test_fnv1a64_from, typed for printf's %llx.
 */
#ifndef SG_TEST_FUZZ_DUMP_H
#define SG_TEST_FUZZ_DUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

#define SG_DUMP_FNV_ORACLE 1469598103934665603ull
#define SG_DUMP_FNV_BASIS 0xcbf29ce484222325ull

/* FNV-1a 64 of p[0 .. n) from h. */
static inline unsigned long long sg_dump_fnv(const uint8_t *p, size_t n, unsigned long long h) {
    return sg_test_fnv1a64_from(p, n, h);
}

/* For each path on stdin (one a line): the file read whole into an exactly sized buffer (so ASan sees any
 * over-read), handed to fn(path, data, size, ctx), then stdout flushed; "PATH ERR cannot open" for a file that
 * cannot be read. */
static inline void sg_dump_each_file(void (*fn)(const char *path, const uint8_t *d, size_t n, void *ctx),
                                     void *ctx) {
    char path[4096];
    while (fgets(path, sizeof path, stdin)) {
        path[strcspn(path, "\n")] = 0;
        size_t n;
        uint8_t *d = sg_test_read_file(path, &n);
        if (!d) {
            printf("%s ERR cannot open\n", path);
            continue;
        }
        fn(path, d, n, ctx);
        free(d);
        fflush(stdout);
    }
}
#endif
