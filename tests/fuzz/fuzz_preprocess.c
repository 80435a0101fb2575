/* tests/fuzz/fuzz_preprocess.c — libFuzzer entry point over decode + convert + EXIF + resize.
 *
 * The first byte of the input picks the options (EXIF on/off, bilinear/bicubic, fast decode, output side,
 * Pillow 12 or 13 resize order),
 * the rest is the file. The pixel cap is lowered to 2 MP so that the fuzzer spends its time in the parsers,
 * not in memset of huge legitimate images; the cap check itself is what is fuzzed at that boundary.
 * Any crash, sanitizer report or leak is a bug; returning -1 with a reason is the expected outcome for junk.
 */
#include "preprocess/preprocess.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int sides[4] = {224, 1, 7, 300}; /* the model's side, degenerate, odd, upscale */
    uint8_t sel = data[0];
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    o.exif_rotate = sel & 1;
    o.resample = (sel & 2) ? SG_RESAMPLE_BICUBIC : SG_RESAMPLE_BILINEAR;
    o.fast_decode = (sel >> 2) & 1;
    o.out_size = sides[(sel >> 3) & 3];
    o.pillow_major = (sel & 32) ? 12 : 0;
    o.max_pixels = 2u << 20; /* 2 MP: see above */
    char err[256];
    uint8_t *out = malloc((size_t)o.out_size * o.out_size * 3);
    if (!out) return 0;
    if (sg_preprocess_memory(data + 1, size - 1, &o, out, NULL, err, sizeof err) != 0 && err[0] == 0) abort();
    free(out);
    return 0;
}
