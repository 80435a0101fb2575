/* kernel/cpu/cpu_backend.c — the "cpu" backend: kernel/backend.h's submit/collect over the fp32 encoder.
 *
 * Design: weights are packed once at creation (cpu_packed.c). submit converts the uint8 HWC pixels to
 * normalised CHW floats (sg_pixels_to_chw, bit-exact with HF's processor) and runs the whole forward at once,
 * on opts->threads OpenMP threads, writing into the next free slot of a ring of SG_BACKEND_MAX_INFLIGHT
 * result buffers; collect hands back the oldest slot. The computation is synchronous, so "in flight" only
 * means "computed and not yet collected", which keeps the interface's ordering without a worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_encoder.h"
#include "cpu_packed.h"

#define SG_CPU_DEFAULT_MAX_BATCH 16 /* when the caller gives none: one or two encoder chunks at base size */

typedef struct cpu_slot {
    float *out; /* [max_batch, D] */
    int n;
} cpu_slot;

typedef struct cpu_impl {
    sg_cpu_pack *pack;
    int threads;
    float *chw;                            /* [max_batch, 3, S, S] */
    cpu_slot slots[SG_BACKEND_MAX_INFLIGHT];
    int head, count;                       /* oldest uncollected slot, number uncollected */
} cpu_impl;

static int cpu_submit(sg_backend *b, const uint8_t *pixels, int n, char *err, size_t errlen) {
    cpu_impl *im = b->impl;
    if (n < 1 || n > b->max_batch) {
        snprintf(err, errlen, "cpu backend: batch of %d images, expected 1..%d", n, b->max_batch);
        return -1;
    }
    if (im->count == SG_BACKEND_MAX_INFLIGHT) {
        snprintf(err, errlen, "cpu backend: %d batches already submitted and not collected (max %d)", im->count,
                 SG_BACKEND_MAX_INFLIGHT);
        return -1;
    }
    const int S = b->image_size;
    const size_t img = (size_t)S * S * 3;
    for (int i = 0; i < n; i++) sg_pixels_to_chw(pixels + (size_t)i * img, S, im->chw + (size_t)i * img);
    cpu_slot *s = &im->slots[(im->head + im->count) % SG_BACKEND_MAX_INFLIGHT];
    if (sg_cpu_forward_packed(im->pack, im->chw, n, s->out, NULL, im->threads, err, errlen) != 0) return -1;
    s->n = n;
    im->count++;
    return 0;
}

static int cpu_collect(sg_backend *b, float *out, char *err, size_t errlen) {
    cpu_impl *im = b->impl;
    if (im->count == 0) {
        snprintf(err, errlen, "cpu backend: collect with no batch submitted");
        return -1;
    }
    cpu_slot *s = &im->slots[im->head];
    memcpy(out, s->out, (size_t)s->n * b->dim * sizeof(float));
    im->head = (im->head + 1) % SG_BACKEND_MAX_INFLIGHT;
    im->count--;
    return 0;
}

static void cpu_destroy(sg_backend *b) {
    if (!b) return;
    cpu_impl *im = b->impl;
    if (im) {
        sg_cpu_pack_free(im->pack);
        free(im->chw);
        for (int i = 0; i < SG_BACKEND_MAX_INFLIGHT; i++) free(im->slots[i].out);
        free(im);
    }
    free(b);
}

sg_backend *sg_cpu_backend_create(const sg_model *m, const sg_backend_opts *opts, char *err, size_t errlen) {
    int max_batch = opts->max_batch > 0 ? opts->max_batch : SG_CPU_DEFAULT_MAX_BATCH;
    const int S = m->cfg.image_size, D = m->cfg.hidden_size;
    if (opts->threads < 0) {
        snprintf(err, errlen, "cpu backend: threads %d, expected >= 0 (0 = all cores)", opts->threads);
        return NULL;
    }
    sg_backend *b = calloc(1, sizeof *b);
    cpu_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        snprintf(err, errlen, "cpu backend: out of memory");
        return NULL;
    }
    b->name = "cpu";
    b->numerics = "fp32 throughout (the reference)";
    b->dim = D;
    b->image_size = S;
    b->max_batch = max_batch;
    b->impl = im;
    b->submit = cpu_submit;
    b->collect = cpu_collect;
    b->destroy = cpu_destroy;
    im->threads = opts->threads;
    im->pack = sg_cpu_pack_model(m, opts->threads, err, errlen);
    if (!im->pack) {
        cpu_destroy(b);
        return NULL;
    }
    int ok = S > 0 && D > 0;
    if (ok) im->chw = malloc((size_t)max_batch * S * S * 3 * sizeof(float));
    for (int i = 0; ok && i < SG_BACKEND_MAX_INFLIGHT; i++)
        ok = (im->slots[i].out = malloc((size_t)max_batch * D * sizeof(float))) != NULL;
    if (!ok || !im->chw) {
        snprintf(err, errlen, "cpu backend: out of memory for batches of %d images of %dx%d", max_batch, S, S);
        cpu_destroy(b);
        return NULL;
    }
    return b;
}
