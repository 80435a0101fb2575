/* kernel/text_backend.c — choosing the text backend (kernel/backend.h's text entry).
 *
 * Policy: --backend cpu → cpu; cuda, sm90, sm100 → the portable cuda text path (the megakernels are vision
 * only; text is a few small GEMMs per query and the portable path reaches the throughput target); auto → cuda
 * on a GPU of compute capability 8.0 or newer, falling back to cpu (saying why) when there is none or it
 * cannot start. An explicit GPU backend never falls back.
 */
#include <stdio.h>
#include <string.h>
#include "backend.h"
#include "gpu.h"
#include "cpu/cpu_text.h"

sg_text_backend *sg_text_backend_create(const sg_text_model *m, const sg_backend_opts *o, char *why, size_t whylen,
                                        char *err, size_t errlen) {
    static const char *const names[] = {"auto", "cpu", "cuda", "sm90", "sm100"};
    if (o->kind == SG_BACKEND_CPU) {
        snprintf(why, whylen, "backend 'cpu' asked for with --backend");
        return sg_cpu_text_backend_create(m, o, err, errlen);
    }
    if (o->kind != SG_BACKEND_AUTO) {
        snprintf(why, whylen, "backend '%s' asked for with --backend%s", names[o->kind],
                 o->kind == SG_BACKEND_CUDA ? "" : " (text runs on the portable cuda path)");
        return sg_cuda_text_backend_create(m, o, err, errlen);
    }
    sg_gpu_info g;
    char gerr[512];
    if (sg_gpu_query(o->device, &g, gerr, sizeof gerr) != 0) {
        snprintf(why, whylen, "no usable GPU (%s): CPU reference", gerr);
        return sg_cpu_text_backend_create(m, o, err, errlen);
    }
    if (g.cc_major < 8) {
        snprintf(why, whylen, "%s is sm_%d%d, older than sm_80: CPU reference", g.name, g.cc_major, g.cc_minor);
        return sg_cpu_text_backend_create(m, o, err, errlen);
    }
    char cerr[1024];
    sg_text_backend *b = sg_cuda_text_backend_create(m, o, cerr, sizeof cerr);
    if (b) {
        snprintf(why, whylen, "%s is sm_%d%d: portable CUDA path", g.name, g.cc_major, g.cc_minor);
        return b;
    }
    snprintf(why, whylen, "%s is sm_%d%d but the cuda text backend cannot start (%s): CPU reference", g.name,
             g.cc_major, g.cc_minor, cerr);
    return sg_cpu_text_backend_create(m, o, err, errlen);
}

void sg_text_backend_destroy(sg_text_backend *b) {
    if (b) b->destroy(b);
}
