/* kernel/mega/mega_layer_set.h — a set of encoder layers written as text, for the megakernels' per-layer knobs
 * (SG_FP8_FC2_LAYERS: the layers whose FC2 the Hopper kernel runs in FP8, kernel/mega/mega_gpu.cu). Plain C, no CUDA.
 */
#ifndef SG_MEGA_LAYER_SET_H
#define SG_MEGA_LAYER_SET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses s into *mask (bit l: layer l) for a model of L layers (1..32): "none", "all", or a comma-separated list of
 * layers and ranges, "2-11" or "0,3-5,8" (no spaces). 0, or -1 with the reason in err (empty item, not a number, a
 * range backwards, a layer >= L); *mask is written only on success. */
int sg_mega_layer_set_parse(const char *s, int L, unsigned *mask, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
