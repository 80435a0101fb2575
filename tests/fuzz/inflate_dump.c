/* tests/fuzz/inflate_dump.c — the C side of scripts/inflate_differential.py.
 *
 * Reads records from stdin: a mode byte ('i': sg_zlib_inflate with a cap, 'x': sg_zlib_inflate_exact into n
 * bytes, 'l': sg_tiff_lzw into n bytes), the cap or n (8 bytes, little-endian), the stream's length (4 bytes, little-endian), the stream. For
 * each prints "RC LEN FNV1A64" for preprocess/inflate.c and then the same for a second build of the decoder
 * whose entry points are named old_zlib_inflate / old_zlib_inflate_exact / old_tiff_lzw (the script builds
 * previous versions of inflate.c and tiff_codecs.c that way), one line per record. Every buffer is malloc'd to its exact size so that
 * ASan sees any over-read or over-write. For 'x' and 'l' the whole out buffer is hashed on success, pre-filled
 * with 0xa5, so a byte left unwritten shows too; on failure only the result code is compared. Built by the script (see its top comment), e.g.
 *   cc -O2 -I. tests/fuzz/inflate_dump.c preprocess/inflate.c preprocess/tiff_codecs.c /tmp/old.o /tmp/old_codecs.o
 */
#include "preprocess/internal.h"

#include "tests/fuzz/dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int old_zlib_inflate(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *out_len);
int old_zlib_inflate_exact(const uint8_t *in, size_t len, uint8_t *out, size_t n);
int old_tiff_lzw(const uint8_t *in, size_t n, uint8_t *out, size_t occ);

static unsigned long long fnv(const uint8_t *p, size_t n) { return sg_dump_fnv(p, n, SG_DUMP_FNV_ORACLE); }

static void one(int mode, uint64_t param, const uint8_t *d, size_t len, int old) {
    if (mode == 'i') {
        uint8_t *o = NULL;
        size_t on = 0;
        int rc = old ? old_zlib_inflate(d, len, (size_t)param, &o, &on) : sg_zlib_inflate(d, len, (size_t)param, &o, &on);
        printf("%d %zu %016llx", rc, on, fnv(o, on));
        free(o);
    } else {
        uint8_t *o = malloc(param ? (size_t)param : 1);
        if (!o) exit(2);
        memset(o, 0xa5, (size_t)param);
        int rc = mode == 'l' ? (old ? old_tiff_lzw(d, len, o, (size_t)param) : sg_tiff_lzw(d, len, o, (size_t)param)) : old ? old_zlib_inflate_exact(d, len, o, (size_t)param) : sg_zlib_inflate_exact(d, len, o, (size_t)param);
        /* out is the caller's only when it succeeds: on failure inflate holds whatever was decoded, and LZW's
         * copies may have run ahead of the last string (the TIFF decoder refuses the image either way) */
        printf("%d %llu %016llx", rc, (unsigned long long)param, rc ? 0ull : fnv(o, (size_t)param));
        free(o);
    }
}

int main(void) {
    unsigned char h[13];
    while (fread(h, 1, 13, stdin) == 13) {
        uint64_t param = 0;
        for (int i = 8; i >= 1; i--) param = param << 8 | h[i];
        size_t len = (size_t)h[9] | (size_t)h[10] << 8 | (size_t)h[11] << 16 | (size_t)h[12] << 24;
        uint8_t *d = malloc(len ? len : 1);
        if (!d || fread(d, 1, len, stdin) != len) return 2;
        one(h[0], param, d, len, 0);
        putchar(' ');
        one(h[0], param, d, len, 1);
        putchar('\n');
        free(d);
    }
    return 0;
}
