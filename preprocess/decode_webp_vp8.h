/* preprocess/decode_webp_vp8.h — what the three files of the VP8 (lossy WebP) decoder share, and nothing else uses.
 *
 * decode_webp_vp8.c parses (frame header, boolean decoder, modes, tokens) and drives the frame;
 * decode_webp_vp8_dsp.c reconstructs (intra prediction, inverse transforms, loop filter) and converts to RGB
 * (libwebp's fancy upsampling and fixed-point YUV -> RGB); decode_webp_vp8_tables.c holds the RFC 6386
 * probability tables. The public entry points are sg_vp8_info / sg_vp8_decode_rgb in internal.h.
 */
#ifndef SG_DECODE_WEBP_VP8_H
#define SG_DECODE_WEBP_VP8_H

#include <stddef.h>
#include <stdint.h>

enum {
    SG_VP8_NUM_TYPES = 4,   /* token block types: 0 i16 AC, 1 i16 DC (Y2), 2 chroma, 3 i4 (whole block) */
    SG_VP8_NUM_BANDS = 8,
    SG_VP8_NUM_CTX = 3,
    SG_VP8_NUM_PROBAS = 11,
    SG_VP8_NUM_BMODES = 10,
};

/* Intra modes, numbered as libwebp numbers them (its sub-block mode table is indexed so). The 16x16 and chroma
 * modes reuse DC / TM / VE / HE; the three DC variants at the frame's top / left edge follow. */
enum {
    SG_VP8_B_DC = 0, SG_VP8_B_TM, SG_VP8_B_VE, SG_VP8_B_HE, SG_VP8_B_RD,
    SG_VP8_B_VR, SG_VP8_B_LD, SG_VP8_B_VL, SG_VP8_B_HD, SG_VP8_B_HU,
    SG_VP8_DC_NOTOP = 10, SG_VP8_DC_NOLEFT, SG_VP8_DC_NOTOPLEFT,
};

extern const uint8_t sg_vp8_coeff_proba0[SG_VP8_NUM_TYPES][SG_VP8_NUM_BANDS][SG_VP8_NUM_CTX][SG_VP8_NUM_PROBAS];
extern const uint8_t sg_vp8_coeff_update_proba[SG_VP8_NUM_TYPES][SG_VP8_NUM_BANDS][SG_VP8_NUM_CTX][SG_VP8_NUM_PROBAS];
extern const uint8_t sg_vp8_bmode_proba[SG_VP8_NUM_BMODES][SG_VP8_NUM_BMODES][SG_VP8_NUM_BMODES - 1];

/* The reconstruction workspace of one macroblock: rows of SG_VP8_BPS bytes holding the block with its top row
 * (one above), left column (one before) and four top-right pixels, as the predictors read them. */
#define SG_VP8_BPS 32
#define SG_VP8_WS_Y (SG_VP8_BPS * 1 + 8) /* offset of the luma block's first pixel */
#define SG_VP8_WS_U (SG_VP8_WS_Y + SG_VP8_BPS * 16 + SG_VP8_BPS)
#define SG_VP8_WS_V (SG_VP8_WS_U + 16)
#define SG_VP8_WS_SIZE (SG_VP8_BPS * 17 + SG_VP8_BPS * 9)

/* Predicts one block in the workspace (dst: its first pixel) from its top row / left column. */
void sg_vp8_predict_luma4(int mode, uint8_t *dst);
void sg_vp8_predict_luma16(int mode, uint8_t *dst);
void sg_vp8_predict_chroma8(int mode, uint8_t *dst);

/* Adds one 4x4 block's residual (16 dequantised coefficients, natural order) to dst. nz_code is the block's
 * class as the token reader sets it: 3 any coefficient past the third, 2 only the first three (DC, 1, 4),
 * 1 only the DC, 0 none. */
void sg_vp8_add_luma_residual(int nz_code, const int16_t *coeffs, uint8_t *dst);
/* Adds a chroma plane's four 4x4 residuals (64 coefficients) to its 8x8 block; any_ac / any_dc say whether a
 * coefficient past the DC, or any at all, is non-zero. */
void sg_vp8_add_chroma_residual(int any_ac, int any_dc, const int16_t *coeffs, uint8_t *dst);
/* The inverse Walsh-Hadamard transform of the Y2 block into the DC of the 16 luma blocks (out[16 * i]). */
void sg_vp8_inverse_wht(const int16_t *in, int16_t *out);

/* One macroblock's loop-filter parameters (limit 0: not filtered). */
typedef struct {
    uint8_t limit;  /* 2 * level + interior limit */
    uint8_t ilevel; /* interior limit */
    uint8_t inner;  /* filter the inner edges too (sub-block modes, or any non-zero coefficient) */
    uint8_t hev;    /* high edge variance threshold */
} sg_vp8_filter;

/* Filters the macroblock whose luma starts at y (stride ys) and chroma at u / v (stride uvs): the normal filter
 * on all three planes, or (simple) the luma only; left / top say whether the macroblock has a neighbour there. */
void sg_vp8_filter_mb(const sg_vp8_filter *f, int simple, int left, int top, uint8_t *y, size_t ys, uint8_t *u,
                      uint8_t *v, size_t uvs);

/* Writes the w x h RGB image from the Y plane (stride ys) and the half-size U / V planes (stride uvs) with
 * libwebp's fancy upsampler and its YUV -> RGB. tmp holds 2 * w ints. */
void sg_vp8_yuv_to_rgb(const uint8_t *y, size_t ys, const uint8_t *u, const uint8_t *v, size_t uvs, int w, int h,
                       uint8_t *rgb, size_t stride, int *tmp);

/* Test hook: on != 0 makes every later call use the plain C kernels (what other architectures run) even where
 * the SSE2 ones are compiled in; 0 gives the SSE2 ones back. Returns 1 when this build has SSE2 kernels (so the
 * two settings run different code), else 0. Not for use while another thread decodes. */
int sg_vp8_portable_kernels(int on);

#endif
