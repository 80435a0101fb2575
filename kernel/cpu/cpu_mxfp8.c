/* kernel/cpu/cpu_mxfp8.c — MXFP8 quantisation, the reference block-scaled product and the emulated
 * forward pass of the SM100 numerics (see cpu_mxfp8.h).
 *
 * Design: the forward follows kernel/cpu/cpu_encoder.c step for step (same op order, same LayerNorm in
 * double statistics, same vectorised softmax/GELU), and inserts a rounding of every product operand where the
 * SM100 kernel would store it in a narrow format:
 *   - Linear weights: rounded once at creation (the kernel quantises them at load), then packed;
 *   - Linear inputs (LN1/LN2 outputs, attention output, GELU output, im2col pixels, the head's inputs):
 *     rounded row by row just before the GEMM (the kernel quantises them in the producing epilogue);
 *   - attention: Q, K, V rounded after the QKV GEMM and P after the softmax (bf16 in TMEM on SM100).
 * Products then run in the fp32 packed GEMM on the dequantised values. A scaled E4M3 value has at most 4
 * significant bits and a bf16 value 8, so each product is exact in fp32 (barring underflow below 2^-149,
 * which needs scales near 2^-127) and only the fp32 summation order differs from the block model of
 * sg_mxfp8_gemm_ref. Residual stream, LayerNorm, softmax, GELU and biases stay fp32 as planned for the
 * kernel's epilogues.
 * The SM90 FP8 formats (SG_MX_FP8*) plug into the same two places: weights in 128 x 128 blocks (or per output
 * channel) at creation, inputs in 1 x 128 blocks (or per token) before each GEMM (fp8_round).
 * SG_MX_FP8_BOUND (FC2's input only, on the layers of an sg_mx_fc2_plan) scales each token's H by a bound made
 * from LayerNorm-2's output norm and two per-layer constants (sg_mx_fc1_bound) instead of H's own amax.
 */
#include "cpu_mxfp8.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sm100/sm100_desc.h"
#include "cpu_gemm.h"
#include "cpu_bufs.h"
#include "cpu_math.h"
#include "cpu_packed.h"

static void fp8_round(float *x, size_t ldx, int rows, int k, int block_rows, int block_k, int pow2);

#define SG_MX_CHUNK_IMAGES 4 /* images per chunk: 784 token rows, tall enough for the GEMM blocking */

/* ---------------------------------------------------------------------------------------------------------
 * Quantisation
 * ------------------------------------------------------------------------------------------------------- */

void sg_mxfp8_quantize(const float *x, size_t ldx, int rows, int k, uint8_t *q, uint8_t *s) {
    const int nb = (k + SG_MX_BLOCK - 1) / SG_MX_BLOCK;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        for (int b = 0; b < nb; b++) {
            int k0 = b * SG_MX_BLOCK, k1 = k0 + SG_MX_BLOCK < k ? k0 + SG_MX_BLOCK : k;
            float amax = 0.0f;
            for (int i = k0; i < k1; i++) {
                float a = fabsf(xr[i]);
                if (a > amax) amax = a; /* NaN compares false: it never becomes amax */
            }
            uint8_t u = sg_ue8m0_for_amax(amax);
            s[(size_t)r * nb + b] = u;
            /* x / 2^e as x * 2^-e in double: exact for every float and e in [-127, 127] */
            double inv = ldexp(1.0, 127 - (int)u);
            for (int i = k0; i < k1; i++) q[(size_t)r * k + i] = sg_e4m3_encode((float)((double)xr[i] * inv));
        }
    }
}

void sg_mxfp8_dequantize(const uint8_t *q, const uint8_t *s, int rows, int k, float *y, size_t ldy) {
    const int nb = (k + SG_MX_BLOCK - 1) / SG_MX_BLOCK;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++) {
            double v = (double)sg_e4m3_decode(q[(size_t)r * k + i]) *
                       ldexp(1.0, (int)s[(size_t)r * nb + i / SG_MX_BLOCK] - 127);
            y[(size_t)r * ldy + i] = (float)v;
        }
}

/* One row of k values through MXFP8 and back, in place. */
static void mx_round_row(float *x, int k) {
    for (int k0 = 0; k0 < k; k0 += SG_MX_BLOCK) {
        int k1 = k0 + SG_MX_BLOCK < k ? k0 + SG_MX_BLOCK : k;
        float amax = 0.0f;
        for (int i = k0; i < k1; i++) {
            float a = fabsf(x[i]);
            if (a > amax) amax = a;
        }
        int e = (int)sg_ue8m0_for_amax(amax) - 127;
        double inv = ldexp(1.0, -e), sc = ldexp(1.0, e);
        for (int i = k0; i < k1; i++) x[i] = (float)((double)sg_e4m3_decode(sg_e4m3_encode((float)(x[i] * inv))) * sc);
    }
}

/* ---------------------------------------------------------------------------------------------------------
 * SM90 FP8: E4M3 with fp32 block scales
 * ------------------------------------------------------------------------------------------------------- */

/* Scale s and the multiplier inv applied before the E4M3 rounding for a block of largest magnitude amax:
 * s = a / 448, inv = 448 / a (each one fp32 division, as the kernel's '/'), or with pow2 the exact powers of
 * two 2^e, 2^-e with e = ceil(log2(a / 448)) (sg_ue8m0_for_amax). a = max(amax, SG_FP8_AMAX_MIN). */
static void fp8_scale(float amax, int pow2, float *s, float *inv) {
    const float a = amax > SG_FP8_AMAX_MIN ? amax : SG_FP8_AMAX_MIN;
    if (pow2) {
        int e = (int)sg_ue8m0_for_amax(a) - 127;
        *s = ldexpf(1.0f, e);
        *inv = ldexpf(1.0f, -e);
    } else {
        *s = a / SG_E4M3_MAX;
        *inv = SG_E4M3_MAX / a;
    }
}

/* amax over the non-NaN elements of rows x [k0, k1) (row stride ldx). */
static float block_amax(const float *x, size_t ldx, int rows, int k0, int k1) {
    float amax = 0.0f;
    for (int r = 0; r < rows; r++)
        for (int i = k0; i < k1; i++) {
            float a = fabsf(x[(size_t)r * ldx + i]);
            if (a > amax) amax = a; /* NaN compares false: it never becomes amax */
        }
    return amax;
}

void sg_fp8_quantize(const float *x, size_t ldx, int rows, int k, int block_rows, int block_k, int pow2, uint8_t *q,
                     float *s) {
    const int nbk = (k + block_k - 1) / block_k;
    for (int r0 = 0; r0 < rows; r0 += block_rows) {
        const int nr = rows - r0 < block_rows ? rows - r0 : block_rows;
        for (int b = 0; b < nbk; b++) {
            const int k0 = b * block_k, k1 = k0 + block_k < k ? k0 + block_k : k;
            float sc, inv;
            fp8_scale(block_amax(x + (size_t)r0 * ldx, ldx, nr, k0, k1), pow2, &sc, &inv);
            s[(size_t)(r0 / block_rows) * nbk + b] = sc;
            for (int r = r0; r < r0 + nr; r++)
                for (int i = k0; i < k1; i++) q[(size_t)r * k + i] = sg_e4m3_encode(x[(size_t)r * ldx + i] * inv);
        }
    }
}

void sg_fp8_dequantize(const uint8_t *q, const float *s, int rows, int k, int block_rows, int block_k, float *y,
                       size_t ldy) {
    const int nbk = (k + block_k - 1) / block_k;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++)
            y[(size_t)r * ldy + i] = (float)((double)sg_e4m3_decode(q[(size_t)r * k + i]) *
                                             (double)s[(size_t)(r / block_rows) * nbk + i / block_k]);
}

/* In place: each block_rows x block_k block of x [rows, k] through sg_fp8_quantize and back. */
static void fp8_round(float *x, size_t ldx, int rows, int k, int block_rows, int block_k, int pow2) {
    for (int r0 = 0; r0 < rows; r0 += block_rows) {
        const int nr = rows - r0 < block_rows ? rows - r0 : block_rows;
        for (int k0 = 0; k0 < k; k0 += block_k) {
            const int k1 = k0 + block_k < k ? k0 + block_k : k;
            float sc, inv;
            fp8_scale(block_amax(x + (size_t)r0 * ldx, ldx, nr, k0, k1), pow2, &sc, &inv);
            for (int r = r0; r < r0 + nr; r++)
                for (int i = k0; i < k1; i++) {
                    float *v = &x[(size_t)r * ldx + i];
                    *v = (float)((double)sg_e4m3_decode(sg_e4m3_encode(*v * inv)) * (double)sc);
                }
        }
    }
}

void sg_fp8_gemm_ref(const uint8_t *qa, const float *sa, const uint8_t *qb, const float *sb, int m, int n, int k,
                     float *y) {
    const int nb = k / SG_FP8_BLOCK;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                /* E4M3 values are multiples of 2^-9 below 2^9: 128 products sum to a multiple of 2^-18 below
                 * 2^25, 43 bits, exact in double. */
                double dot = 0.0;
                for (int t = b * SG_FP8_BLOCK; t < (b + 1) * SG_FP8_BLOCK; t++)
                    dot += (double)sg_e4m3_decode(qa[(size_t)i * k + t]) * (double)sg_e4m3_decode(qb[(size_t)j * k + t]);
                const float sc = sa[(size_t)i * nb + b] * sb[(size_t)(j / SG_FP8_BLOCK) * nb + b];
                acc = fmaf((float)dot, sc, acc);
            }
            y[(size_t)i * n + j] = acc;
        }
}

void sg_mx_round_rows(float *x, size_t ldx, int rows, int k, sg_mx_format fmt) {
    if (fmt == SG_MX_FP32) return;
    if (fmt == SG_MX_FP8 || fmt == SG_MX_FP8_POW2 || fmt == SG_MX_FP8_CHAN) {
        const int bk = fmt == SG_MX_FP8_CHAN ? k : SG_FP8_BLOCK;
        fp8_round(x, ldx, rows, k, 1, bk, fmt == SG_MX_FP8_POW2);
        return;
    }
    for (int r = 0; r < rows; r++) {
        float *xr = x + (size_t)r * ldx;
        if (fmt == SG_MX_BF16) {
            for (int i = 0; i < k; i++) xr[i] = sg_bf16_round(xr[i]);
        } else {
            mx_round_row(xr, k);
        }
    }
}

/* The same over rows in parallel. */
static void round_rows_par(float *x, size_t ldx, int rows, int k, sg_mx_format fmt, int threads) {
    if (fmt == SG_MX_FP32) return;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && rows > 1)
    for (int r = 0; r < rows; r++) sg_mx_round_rows(x + (size_t)r * ldx, ldx, 1, k, fmt);
}

/* A weight matrix [n, k] (row stride k) in place: the SM90 FP8 block formats take 128 x 128 blocks (one
 * per group of 128 output rows and 128 K columns); every other format rounds row by row. */
static void round_weights_par(float *w, int n, int k, sg_mx_format fmt, int threads) {
    if (fmt != SG_MX_FP8 && fmt != SG_MX_FP8_POW2) {
        round_rows_par(w, (size_t)k, n, k, fmt, threads);
        return;
    }
    const int groups = (n + SG_FP8_BLOCK - 1) / SG_FP8_BLOCK;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && groups > 1)
    for (int g = 0; g < groups; g++) {
        int r0 = g * SG_FP8_BLOCK, nr = n - r0 < SG_FP8_BLOCK ? n - r0 : SG_FP8_BLOCK;
        fp8_round(w + (size_t)r0 * k, (size_t)k, nr, k, SG_FP8_BLOCK, SG_FP8_BLOCK, fmt == SG_MX_FP8_POW2);
    }
}

void sg_mxfp8_gemm_ref(const uint8_t *qa, const uint8_t *sa, const uint8_t *qb, const uint8_t *sb, int m, int n,
                       int k, float *y) {
    const int nb = (k + SG_MX_BLOCK - 1) / SG_MX_BLOCK;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                int k0 = b * SG_MX_BLOCK, k1 = k0 + SG_MX_BLOCK < k ? k0 + SG_MX_BLOCK : k;
                /* E4M3 values are multiples of 2^-9 below 2^9, so each product is a multiple of 2^-18 below
                 * 2^18 and a 32-term sum is an integer multiple of 2^-18 below 2^23 (41 bits): exact in
                 * double. The 2^(SA+SB-254) scaling is exact too; the one rounding is the fp32 add. */
                double dot = 0.0;
                for (int t = k0; t < k1; t++)
                    dot += (double)sg_e4m3_decode(qa[(size_t)i * k + t]) * (double)sg_e4m3_decode(qb[(size_t)j * k + t]);
                int e = (int)sa[(size_t)i * nb + b] + (int)sb[(size_t)j * nb + b] - 254;
                acc += (float)ldexp(dot, e);
            }
            y[(size_t)i * n + j] = acc;
        }
}

/* ---------------------------------------------------------------------------------------------------------
 * Prepared model
 * ------------------------------------------------------------------------------------------------------- */

typedef struct mx_layer {
    sg_cpu_wpack qkv, o, fc1, fc2; /* qkv: [3D, D] rows q | k | v */
    float *qkv_b;                  /* [3D] */
    sg_mx_format fc2_x;            /* FC2's input format on this layer (sg_mx_fc2_plan, else fx[4]) */
    float bound_c, bound_b;        /* sg_mx_fc1_bound of this layer's FC1 */
} mx_layer;

struct sg_mx_model {
    const sg_model *m;
    sg_mx_numerics num;
    sg_cpu_wpack patch, head_kv, head_out, head_fc1, head_fc2;
    mx_layer *layers;
    float *probe_q; /* [D]: rounded per num.attention, as the kernel would hold it */
    sg_mx_format fw[6], fx[6]; /* per Linear kind (bit index of SG_MX_LIN_*): weight and input format */
    FILE *bound_log; /* sg_mx_set_bound_log, NULL for none */
    int have_bound;  /* the layers' bound_c / bound_b are set (only made when a plan or the log needs them) */
    float **bufs;   /* every allocation, freed together */
    int nbufs, capbufs;
};

static float *mx_alloc(sg_mx_model *mx, size_t n) {
    if (mx->nbufs == mx->capbufs) {
        int cap = mx->capbufs ? 2 * mx->capbufs : 64;
        float **b = realloc(mx->bufs, (size_t)cap * sizeof *b);
        if (!b) return NULL;
        mx->bufs = b;
        mx->capbufs = cap;
    }
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p) mx->bufs[mx->nbufs++] = p;
    return p;
}

/* Rounds the [n, k] matrix made of nseg stacked segments (each [n/nseg, k], row-major) per fmt and packs it.
 * tmp holds n*k floats. */
static int mx_pack(sg_mx_model *mx, const float *const *seg, int nseg, int n, int k, sg_mx_format fmt, float *tmp,
                   sg_cpu_wpack *out, int threads) {
    int per = n / nseg;
    for (int s = 0; s < nseg; s++) memcpy(tmp + (size_t)s * per * k, seg[s], (size_t)per * k * sizeof(float));
    round_weights_par(tmp, n, k, fmt, threads);
    out->p = mx_alloc(mx, sg_cpu_pack_size(n, k));
    if (!out->p) return -1;
    out->n = n;
    out->k = k;
    sg_cpu_pack_nk(tmp, (size_t)k, n, k, out->p);
    return 0;
}

void sg_mx_fc1_bound(const float *w, const float *b, int F, int D, sg_mx_format fmt, float *C, float *B) {
    /* Other formats than per channel: the rows as the model uses them (rounded like mx_pack does). */
    float *t = NULL;
    if (fmt != SG_MX_FP8_CHAN) {
        t = malloc((size_t)F * D * sizeof(float));
        if (!t) abort();
        memcpy(t, w, (size_t)F * D * sizeof(float));
        round_weights_par(t, F, D, fmt, 1);
    }
    double cmax = 0.0;
    float bmax = 0.0f;
    for (int j = 0; j < F; j++) {
        const float *wj = w + (size_t)j * D;
        double ss = 0.0, sw = 1.0;
        if (fmt == SG_MX_FP8_CHAN) { /* sw_j * ||qw_j||, the E4M3 values and their scale apart (bit-exact codes) */
            float inv, sc;
            fp8_scale(block_amax(wj, (size_t)D, 1, 0, D), 0, &sc, &inv);
            for (int k = 0; k < D; k++) {
                double q = (double)sg_e4m3_decode(sg_e4m3_encode(wj[k] * inv));
                ss += q * q;
            }
            sw = (double)sc;
        } else {
            for (int k = 0; k < D; k++) ss += (double)t[(size_t)j * D + k] * t[(size_t)j * D + k];
        }
        const double c = sw * sqrt(ss);
        if (c > cmax) cmax = c;
        const float ab = fabsf(b[j]);
        if (ab > bmax) bmax = ab;
    }
    free(t);
    *C = (float)(1.0625 * cmax);
    *B = bmax + 0.25f;
}

/* Every layer's bound_c / bound_b (sg_mx_fc1_bound of its FC1 in the model's FC1 weight format). */
static void set_bounds(sg_mx_model *mx) {
    const sg_config *c = &mx->m->cfg;
    for (int l = 0; l < c->num_layers; l++)
        sg_mx_fc1_bound(mx->m->layers[l].fc1_w, mx->m->layers[l].fc1_b, c->intermediate_size, c->hidden_size,
                        mx->fw[3], &mx->layers[l].bound_c, &mx->layers[l].bound_b);
    mx->have_bound = 1;
}

void sg_mx_set_bound_log(sg_mx_model *mx, FILE *f) {
    if (f && !mx->have_bound) set_bounds(mx);
    mx->bound_log = f;
}

void sg_mx_model_free(sg_mx_model *mx) {
    if (!mx) return;
    for (int i = 0; i < mx->nbufs; i++) free(mx->bufs[i]);
    free(mx->bufs);
    free(mx->layers);
    free(mx);
}

sg_mx_model *sg_mx_model_create(const sg_model *m, sg_mx_numerics num, int threads, char *err, size_t errlen) {
    const sg_mx_fc2_plan none = {0, SG_MX_FP32};
    return sg_mx_model_create_fc2(m, num, none, threads, err, errlen);
}

sg_mx_model *sg_mx_model_create_fc2(const sg_model *m, sg_mx_numerics num, sg_mx_fc2_plan fc2, int threads,
                                    char *err, size_t errlen) {
    const sg_config *c = &m->cfg;
    if (c->hidden_size <= 0 || c->intermediate_size <= 0 || c->num_heads <= 0 || c->num_layers <= 0 ||
        c->image_size <= 0 || c->patch_size <= 0 || c->hidden_size % c->num_heads != 0 ||
        c->image_size % c->patch_size != 0 || c->num_channels != 3) {
        snprintf(err, errlen, "mxfp8 emulation: unsupported config (hidden %d, heads %d, image %d, patch %d, "
                 "channels %d)", c->hidden_size, c->num_heads, c->image_size, c->patch_size, c->num_channels);
        return NULL;
    }
    if ((unsigned)num.linear_w > SG_MX_FP8_CHAN || (unsigned)num.linear_x > SG_MX_FP8_CHAN ||
        (unsigned)num.attention > SG_MX_BF16) {
        snprintf(err, errlen, "mxfp8 emulation: bad numerics (weights %d, inputs %d, attention %d; attention takes "
                 "only fp32 or bf16)", (int)num.linear_w, (int)num.linear_x, (int)num.attention);
        return NULL;
    }
    if (fc2.layers && ((unsigned)fc2.x > SG_MX_FP8_BOUND ||
                           (c->num_layers < 32 && (fc2.layers >> c->num_layers) != 0))) {
        snprintf(err, errlen, "mxfp8 emulation: bad FC2 layer set 0x%x or FC2 input format %d (%d layers)",
                 fc2.layers, (int)fc2.x, c->num_layers);
        return NULL;
    }
    const int D = c->hidden_size, F = c->intermediate_size, L = c->num_layers, K = sg_config_patch_dim(c);
    const int nt = sg_cpu_threads(threads);
    sg_mx_model *mx = calloc(1, sizeof *mx);
    if (!mx) goto oom;
    mx->m = m;
    mx->num = num;
    mx->layers = calloc((size_t)L, sizeof *mx->layers);
    size_t tmpn = (size_t)D * (size_t)(K > 3 * D ? K : 3 * D); /* the largest [n, k] rounded at once */
    if ((size_t)F * D > tmpn) tmpn = (size_t)F * D;
    tmpn += (size_t)D; /* the probe row, after the D*D of Wq */
    float *tmp = mx->layers ? mx_alloc(mx, tmpn) : NULL;
    if (!tmp) goto oom;
    for (int kind = 0; kind < 6; kind++) {
        int b = (num.bf16_linears >> kind) & 1;
        mx->fw[kind] = b ? SG_MX_BF16 : num.linear_w;
        mx->fx[kind] = b ? SG_MX_BF16 : num.linear_x;
    }
    const sg_mx_format *fw = mx->fw;
    if (mx_pack(mx, &m->patch_w, 1, D, K, fw[0], tmp, &mx->patch, nt)) goto oom;
    for (int l = 0; l < L; l++) {
        const sg_layer *ly = &m->layers[l];
        mx_layer *xl = &mx->layers[l];
        const float *qkv[3] = {ly->q_w, ly->k_w, ly->v_w};
        sg_mx_format fc2_w = fw[4];
        xl->fc2_x = mx->fx[4];
        if (fc2.layers) {
            const int on = l < 32 && ((fc2.layers >> l) & 1u);
            fc2_w = on ? num.linear_w : SG_MX_BF16;
            xl->fc2_x = on ? fc2.x : SG_MX_BF16;
        }
        if (mx_pack(mx, qkv, 3, 3 * D, D, fw[1], tmp, &xl->qkv, nt) ||
            mx_pack(mx, &ly->o_w, 1, D, D, fw[2], tmp, &xl->o, nt) ||
            mx_pack(mx, &ly->fc1_w, 1, F, D, fw[3], tmp, &xl->fc1, nt) ||
            mx_pack(mx, &ly->fc2_w, 1, D, F, fc2_w, tmp, &xl->fc2, nt))
            goto oom;
        if (!(xl->qkv_b = mx_alloc(mx, (size_t)3 * D))) goto oom;
        memcpy(xl->qkv_b, ly->q_b, (size_t)D * sizeof(float));
        memcpy(xl->qkv_b + D, ly->k_b, (size_t)D * sizeof(float));
        memcpy(xl->qkv_b + 2 * D, ly->v_b, (size_t)D * sizeof(float));
    }
    if (fc2.layers && fc2.x == SG_MX_FP8_BOUND) set_bounds(mx);
    const float *kv = m->head_in_w + (size_t)D * D;
    if (mx_pack(mx, &kv, 1, 2 * D, D, fw[5], tmp, &mx->head_kv, nt) ||
        mx_pack(mx, &m->head_out_w, 1, D, D, fw[5], tmp, &mx->head_out, nt) ||
        mx_pack(mx, &m->head_fc1_w, 1, F, D, fw[5], tmp, &mx->head_fc1, nt) ||
        mx_pack(mx, &m->head_fc2_w, 1, D, F, fw[5], tmp, &mx->head_fc2, nt))
        goto oom;
    /* The probe's query is image-independent: one emulated Linear (probe row through linear_x, Wq through
     * linear_w), then rounded like every attention operand. */
    sg_cpu_wpack wq;
    if (mx_pack(mx, &m->head_in_w, 1, D, D, fw[5], tmp, &wq, nt)) goto oom;
    float *pr = tmp + (size_t)D * D; /* tmp holds >= 2*D*D floats; the first D*D went into wq already */
    memcpy(pr, m->probe, (size_t)D * sizeof(float));
    sg_mx_round_rows(pr, (size_t)D, 1, D, mx->fx[5]);
    if (!(mx->probe_q = mx_alloc(mx, (size_t)D))) goto oom;
    sg_cpu_gemm(pr, (size_t)D, 1, &wq, m->head_in_b, mx->probe_q, (size_t)D, SG_GEMM_STORE, 1);
    sg_mx_round_rows(mx->probe_q, (size_t)D, 1, D, num.attention);
    return mx;
oom:
    snprintf(err, errlen, "mxfp8 emulation: out of memory preparing the weights");
    sg_mx_model_free(mx);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------------
 * Forward
 * ------------------------------------------------------------------------------------------------------- */

/* Self-attention of one layer on rounded Q, K, V; P is rounded per fmt before P·V. */
static void self_attention(const float *qkv, float *att, int nb, const sg_config *cfg, sg_cpu_bufs *bufs,
                           sg_mx_format fmt, int threads) {
    const int D = cfg->hidden_size, H = cfg->num_heads, Dh = sg_config_head_dim(cfg), T = sg_config_tokens(cfg);
    const float scale = 1.0f / sqrtf((float)Dh); /* 0.125 exactly for Dh = 64 */
    const size_t ld = (size_t)3 * D;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        float *scr = bufs->scratch + (size_t)omp_get_thread_num() * bufs->scratch_per;
        float *kp = scr, *vp = kp + sg_cpu_pack_size(T, Dh), *s = vp + sg_cpu_pack_size(Dh, T);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < nb * H; task++) {
            int b = task / H, h = task % H;
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * Dh, *k = q + D, *v = q + 2 * D;
            sg_cpu_pack_nk(k, ld, T, Dh, kp);
            sg_cpu_wpack wk = {kp, T, Dh};
            sg_cpu_gemm_range(q, ld, &wk, NULL, s, (size_t)T, 0, T, 0, T, SG_GEMM_STORE);
            for (int i = 0; i < T; i++) sg_cpu_softmax_row(s + (size_t)i * T, T, scale);
            sg_mx_round_rows(s, (size_t)T, T, T, fmt);
            sg_cpu_pack_kn(v, ld, T, Dh, vp);
            sg_cpu_wpack wv = {vp, Dh, T};
            sg_cpu_gemm_range(s, (size_t)T, &wv, NULL, att + (size_t)b * T * D + (size_t)h * Dh, (size_t)D, 0, T, 0,
                              Dh, SG_GEMM_STORE);
        }
    }
}

/* MAP-head attention: the (rounded) probe query over each image's T rounded keys/values (kv [nb*T, 2D]). */
static void head_attention(const float *probe_q, const float *kv, float *out, int nb, const sg_config *cfg,
                           sg_cpu_bufs *bufs, sg_mx_format fmt) {
    const int D = cfg->hidden_size, H = cfg->num_heads, Dh = sg_config_head_dim(cfg), T = sg_config_tokens(cfg);
    const float scale = 1.0f / sqrtf((float)Dh);
    const size_t ld = (size_t)2 * D;
    float *s = bufs->scratch;
    for (int task = 0; task < nb * H; task++) {
        int b = task / H, h = task % H;
        const float *q = probe_q + (size_t)h * Dh;
        const float *k0 = kv + (size_t)b * T * ld + (size_t)h * Dh, *v0 = k0 + D;
        for (int j = 0; j < T; j++) {
            float d = 0; /* fp32 accumulation, as the tensor core's */
            for (int i = 0; i < Dh; i++) d += q[i] * k0[(size_t)j * ld + i];
            s[j] = d;
        }
        sg_cpu_softmax_row(s, T, scale);
        sg_mx_round_rows(s, (size_t)T, 1, T, fmt);
        float *o = out + (size_t)b * D + (size_t)h * Dh;
        for (int i = 0; i < Dh; i++) {
            float a = 0;
            for (int j = 0; j < T; j++) a += s[j] * v0[(size_t)j * ld + i];
            o[i] = a;
        }
    }
}

/* FC2's input H [M, F] (fp32, after GELU) in place through SG_MX_FP8_BOUND: token r's scale bound[r] / 448
 * (sg_fp8_scale's arithmetic), E4M3 satfinite. */
static void bound_round(float *x, int M, int F, const float *bound, int nt) {
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int r = 0; r < M; r++) {
        float sc, inv;
        fp8_scale(bound[r], 0, &sc, &inv);
        float *xr = x + (size_t)r * F;
        for (int j = 0; j < F; j++) xr[j] = (float)((double)sg_e4m3_decode(sg_e4m3_encode(xr[j] * inv)) * (double)sc);
    }
}

/* The bound log (sg_mx_set_bound_log): (layer, bound[r] / max_j |H_rj|) per token. */
static void bound_log(FILE *f, int layer, const float *x, int M, int F, const float *bound) {
    for (int r = 0; r < M; r++) {
        const float amax = block_amax(x + (size_t)r * F, (size_t)F, 1, 0, F);
        struct { int32_t layer; float ratio; } rec = {layer, bound[r] / amax};
        fwrite(&rec, sizeof rec, 1, f);
    }
}

static void forward_chunk(const sg_mx_model *mx, const float *px, int nb, float *pooled, float *last_hidden,
                          sg_cpu_bufs *c, float *bound, int nt) {
    const sg_model *m = mx->m;
    const sg_config *cfg = &m->cfg;
    const int D = cfg->hidden_size, F = cfg->intermediate_size, T = sg_config_tokens(cfg), M = nb * T;
    const int K = sg_config_patch_dim(cfg);
    const size_t Dz = (size_t)D;
    const float eps = cfg->layer_norm_eps;
    const sg_mx_format *fx = mx->fx, fa = mx->num.attention; /* fx[kind]: 0 patch 1 qkv 2 out 3 fc1 4 fc2 5 head */
    const sg_gemm_epilogue act = cfg->activation == SG_ACT_GELU_ERF ? SG_GEMM_GELU_ERF : SG_GEMM_GELU_TANH;

    sg_cpu_im2col(px, nb, cfg, c->mlp, nt);
    round_rows_par(c->mlp, (size_t)K, M, K, fx[0], nt);
    for (int b = 0; b < nb; b++) memcpy(c->h + (size_t)b * T * Dz, m->pos, (size_t)T * Dz * sizeof(float));
    sg_cpu_gemm(c->mlp, (size_t)K, M, &mx->patch, m->patch_b, c->h, Dz, SG_GEMM_ADD, nt);

    for (int l = 0; l < cfg->num_layers; l++) {
        const sg_layer *ly = &m->layers[l];
        const mx_layer *xl = &mx->layers[l];
        sg_cpu_layer_norm(c->h, c->y, M, D, ly->ln1_w, ly->ln1_b, eps, nt);
        round_rows_par(c->y, Dz, M, D, fx[1], nt);
        sg_cpu_gemm(c->y, Dz, M, &xl->qkv, xl->qkv_b, c->qkv, 3 * Dz, SG_GEMM_STORE, nt);
        round_rows_par(c->qkv, 3 * Dz, M, 3 * D, fa, nt);
        self_attention(c->qkv, c->att, nb, cfg, c, fa, nt);
        round_rows_par(c->att, Dz, M, D, fx[2], nt);
        sg_cpu_gemm(c->att, Dz, M, &xl->o, ly->o_b, c->h, Dz, SG_GEMM_ADD, nt);
        sg_cpu_layer_norm(c->h, c->y, M, D, ly->ln2_w, ly->ln2_b, eps, nt);
        const int need_bound = xl->fc2_x == SG_MX_FP8_BOUND || mx->bound_log;
        if (need_bound) { /* bound_r = ||y_r|| * C + B from the fp32 LayerNorm-2 output (norm summed in double) */
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
            for (int r = 0; r < M; r++) {
                double ss = 0.0;
                for (int i = 0; i < D; i++) ss += (double)c->y[(size_t)r * Dz + i] * c->y[(size_t)r * Dz + i];
                bound[r] = sqrtf((float)ss) * xl->bound_c + xl->bound_b;
            }
        }
        round_rows_par(c->y, Dz, M, D, fx[3], nt);
        sg_cpu_gemm(c->y, Dz, M, &xl->fc1, ly->fc1_b, c->mlp, (size_t)F, act, nt);
        if (mx->bound_log) bound_log(mx->bound_log, l, c->mlp, M, F, bound);
        if (xl->fc2_x == SG_MX_FP8_BOUND)
            bound_round(c->mlp, M, F, bound, nt);
        else
            round_rows_par(c->mlp, (size_t)F, M, F, xl->fc2_x, nt);
        sg_cpu_gemm(c->mlp, (size_t)F, M, &xl->fc2, ly->fc2_b, c->h, Dz, SG_GEMM_ADD, nt);
    }
    sg_cpu_layer_norm(c->h, c->y, M, D, m->post_ln_w, m->post_ln_b, eps, nt);
    if (last_hidden) memcpy(last_hidden, c->y, (size_t)M * Dz * sizeof(float));
    if (!pooled) return;

    round_rows_par(c->y, Dz, M, D, fx[5], nt);
    sg_cpu_gemm(c->y, Dz, M, &mx->head_kv, m->head_in_b + D, c->qkv, 2 * Dz, SG_GEMM_STORE, nt);
    round_rows_par(c->qkv, 2 * Dz, M, 2 * D, fa, nt);
    head_attention(mx->probe_q, c->qkv, c->hz, nb, cfg, c, fa);
    round_rows_par(c->hz, Dz, nb, D, fx[5], nt);
    sg_cpu_gemm(c->hz, Dz, nb, &mx->head_out, m->head_out_b, c->ha, Dz, SG_GEMM_STORE, nt);
    sg_cpu_layer_norm(c->ha, c->hz, nb, D, m->head_ln_w, m->head_ln_b, eps, nt);
    round_rows_par(c->hz, Dz, nb, D, fx[5], nt);
    sg_cpu_gemm(c->hz, Dz, nb, &mx->head_fc1, m->head_fc1_b, c->hm, (size_t)F, act, nt);
    round_rows_par(c->hm, (size_t)F, nb, F, fx[5], nt);
    sg_cpu_gemm(c->hm, (size_t)F, nb, &mx->head_fc2, m->head_fc2_b, c->ha, Dz, SG_GEMM_ADD, nt);
    memcpy(pooled, c->ha, (size_t)nb * Dz * sizeof(float));
}

int sg_mx_forward(const sg_mx_model *mx, const float *pixel_values, int n, float *pooled, float *last_hidden,
                  int threads, char *err, size_t errlen) {
    if (n < 0) {
        snprintf(err, errlen, "mxfp8 emulation: batch size %d is negative", n);
        return -1;
    }
    if (n == 0) return 0;
    const sg_config *cfg = &mx->m->cfg;
    const int T = sg_config_tokens(cfg), D = cfg->hidden_size, S = cfg->image_size, C = cfg->num_channels;
    const int nt = sg_cpu_threads(threads);
    int chunk = n < SG_MX_CHUNK_IMAGES ? n : SG_MX_CHUNK_IMAGES;
    sg_cpu_bufs bufs;
    if (sg_cpu_bufs_alloc(&bufs, cfg, chunk, nt) != 0) {
        snprintf(err, errlen, "mxfp8 emulation: out of memory for the activations of %d images", chunk);
        return -1;
    }
    float *bound = malloc((size_t)chunk * T * sizeof(float)); /* per token: SG_MX_FP8_BOUND's bound_r */
    if (!bound) {
        sg_cpu_bufs_free(&bufs);
        snprintf(err, errlen, "mxfp8 emulation: out of memory for the activations of %d images", chunk);
        return -1;
    }
    for (int i0 = 0; i0 < n; i0 += chunk) {
        int nb = n - i0 < chunk ? n - i0 : chunk;
        forward_chunk(mx, pixel_values + (size_t)i0 * C * S * S, nb, pooled ? pooled + (size_t)i0 * D : NULL,
                      last_hidden ? last_hidden + (size_t)i0 * T * D : NULL, &bufs, bound, nt);
    }
    free(bound);
    sg_cpu_bufs_free(&bufs);
    return 0;
}
