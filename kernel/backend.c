/* kernel/backend.c — choosing a backend at run time, and the helpers shared by all backends.
 *
 * Policy for --backend auto: no usable GPU → cpu; compute capability 9.0 → sm90 (Hopper megakernel);
 * 10.x → sm100 (Blackwell megakernel); other GPUs from sm_80 on → cuda (portable path); older GPUs → cpu.
 * When the preferred GPU backend cannot be created (not built, not implemented, failed its self-check), auto
 * falls back to the next one down (sm90/sm100 → cuda → cpu) and says why. An explicit --backend never falls
 * back: it either runs what was asked or fails with the reason.
 */
#include <stdio.h>
#include <string.h>
#include "backend.h"
#include "gpu.h"
#include "cpu/cpu_encoder.h"

static const char *const k_names[] = {"auto", "cpu", "cuda", "sm90", "sm100"};

int sg_backend_parse(const char *s, sg_backend_kind *out) {
    for (int i = 0; i < (int)(sizeof k_names / sizeof k_names[0]); i++) {
        if (strcmp(s, k_names[i]) == 0) {
            *out = (sg_backend_kind)i;
            return 0;
        }
    }
    return -1;
}

static sg_backend *create_kind(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, char *err,
                               size_t errlen) {
    switch (k) {
    case SG_BACKEND_CPU: return sg_cpu_backend_create(m, o, err, errlen);
    case SG_BACKEND_CUDA: return sg_cuda_backend_create(m, o, err, errlen);
    case SG_BACKEND_SM90: return sg_sm90_backend_create(m, o, err, errlen);
    case SG_BACKEND_SM100: return sg_sm100_backend_create(m, o, err, errlen);
    default: snprintf(err, errlen, "no such backend"); return NULL;
    }
}

/* The backend auto prefers for a device of this compute capability, and a sentence saying why. */
static sg_backend_kind preferred_kind(const sg_gpu_info *g, char *why, size_t whylen) {
    if (g->cc_major == 9 && g->cc_minor == 0) {
        snprintf(why, whylen, "%s is sm_90 (Hopper): Hopper megakernel", g->name);
        return SG_BACKEND_SM90;
    }
    if (g->cc_major == 10) {
        snprintf(why, whylen, "%s is sm_%d%d (Blackwell): Blackwell megakernel", g->name, g->cc_major,
                 g->cc_minor);
        return SG_BACKEND_SM100;
    }
    if (g->cc_major >= 8) {
        snprintf(why, whylen, "%s is sm_%d%d: portable CUDA path", g->name, g->cc_major, g->cc_minor);
        return SG_BACKEND_CUDA;
    }
    snprintf(why, whylen, "%s is sm_%d%d, older than sm_80: CPU reference", g->name, g->cc_major, g->cc_minor);
    return SG_BACKEND_CPU;
}

sg_backend *sg_backend_create(const sg_model *m, const sg_backend_opts *o, char *why, size_t whylen, char *err,
                              size_t errlen) {
    if (o->kind != SG_BACKEND_AUTO) {
        snprintf(why, whylen, "backend '%s' asked for with --backend", k_names[o->kind]);
        return create_kind(o->kind, m, o, err, errlen);
    }
    sg_gpu_info g;
    char gerr[512];
    if (sg_gpu_query(o->device, &g, gerr, sizeof gerr) != 0) {
        snprintf(why, whylen, "no usable GPU (%s): CPU reference", gerr);
        return sg_cpu_backend_create(m, o, err, errlen);
    }
    char pref_why[512];
    sg_backend_kind k = preferred_kind(&g, pref_why, sizeof pref_why);
    char fallback[1024] = "";
    for (;;) {
        char kerr[1024];
        sg_backend *b = create_kind(k, m, o, kerr, sizeof kerr);
        if (b) {
            snprintf(why, whylen, "%s%s", pref_why, fallback);
            return b;
        }
        if (k == SG_BACKEND_CPU) {
            snprintf(err, errlen, "%s", kerr);
            return NULL;
        }
        size_t used = strlen(fallback);
        snprintf(fallback + used, sizeof fallback - used, "; %s unavailable (%s)", k_names[k], kerr);
        k = (k == SG_BACKEND_SM90 || k == SG_BACKEND_SM100) ? SG_BACKEND_CUDA : SG_BACKEND_CPU;
        used = strlen(fallback);
        snprintf(fallback + used, sizeof fallback - used, ", using %s", k_names[k]);
    }
}

int sg_backend_embed(sg_backend *b, const uint8_t *pixels, int n, float *out, char *err, size_t errlen) {
    if (b->submit(b, pixels, n, err, errlen) != 0) return -1;
    return b->collect(b, out, err, errlen);
}

void sg_backend_destroy(sg_backend *b) {
    if (b) b->destroy(b);
}

void sg_backend_describe(const sg_model *m, const sg_backend_opts *o, char *out, size_t outlen) {
    sg_gpu_info g;
    char gerr[512], why[512];
    size_t n = 0;
#define APPEND(...) n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, __VA_ARGS__)
    APPEND("CUDA support compiled in: %s\n", sg_gpu_compiled() ? "yes" : "no");
    if (sg_gpu_query(o->device, &g, gerr, sizeof gerr) != 0) {
        APPEND("GPU: none usable (%s)\n", gerr);
        APPEND("backend (auto): cpu, because there is no usable GPU\n");
    } else {
        APPEND("GPUs visible: %d\n", g.device_count);
        APPEND("GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", o->device, g.name, g.cc_major,
               g.cc_minor, g.sm_count, (double)g.total_mem / (1024.0 * 1024.0 * 1024.0));
        APPEND("CUDA driver %d.%d, runtime %d.%d\n", g.driver_version / 1000, (g.driver_version % 1000) / 10,
               g.runtime_version / 1000, (g.runtime_version % 1000) / 10);
        sg_backend_kind k = preferred_kind(&g, why, sizeof why);
        APPEND("backend (auto): %s, because %s\n", k_names[k], why);
        if (k == SG_BACKEND_SM90 || k == SG_BACKEND_SM100)
            APPEND("  (if %s cannot be created here, auto falls back to cuda, then cpu; with weights, the line "
                   "'backend chosen' says which ran)\n", k_names[k]);
    }
    if (m) {
        const sg_config *c = &m->cfg;
        APPEND("model: %s\n", m->path);
        APPEND("  hidden %d, mlp %d, heads %d, layers %d, image %d, patch %d (%d tokens)\n", c->hidden_size,
               c->intermediate_size, c->num_heads, c->num_layers, c->image_size, c->patch_size,
               sg_config_tokens(c));
    }
#undef APPEND
}
