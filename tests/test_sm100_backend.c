/* tests/test_sm100_backend.c — the gate of the Blackwell backend (kernel/sm100/sm100_backend.cu): it must refuse,
 * with the reason, every config its kernels do not support and every device that is not compute capability
 * 10.0, before touching weights or the GPU.
 *
 * The model here has a config and no tensors: every path exercised must refuse before reading them (a crash
 * would be the failure). Config refusals need no GPU; the device refusal needs a CUDA device that is not a
 * B200 (on a 10.0 device the backend would be created, so that check SKIPs there, as it does with no device).
 * In a build without CUDA, kernel/no_gpu.c answers and everything SKIPs.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kernel/gpu.h"

static sg_backend *try_create(sg_config cfg, sg_precision prec, char *err, size_t errlen) {
    sg_model m;
    memset(&m, 0, sizeof m);
    m.cfg = cfg;
    sg_backend_opts o;
    memset(&o, 0, sizeof o);
    o.kind = SG_BACKEND_SM100;
    o.device = 0;
    o.max_batch = 4;
    o.precision = prec;
    err[0] = 0;
    return sg_sm100_backend_create(&m, &o, err, errlen);
}

int main(void) {
    char err[1024];
    if (!sg_gpu_compiled()) {
        sg_backend *b = try_create(sg_config_default(), SG_PRECISION_AUTO, err, sizeof err);
        CHECK(b == NULL && strstr(err, "without CUDA"), "sm100 backend in a build without CUDA refuses: %s", err);
        SKIP("sm100 backend gate: this build has no CUDA");
        return CHECK_DONE();
    }
    sg_config erf = sg_config_default();
    erf.activation = SG_ACT_GELU_ERF;
    sg_backend *b = try_create(erf, SG_PRECISION_AUTO, err, sizeof err);
    CHECK(b == NULL && strstr(err, "gelu_pytorch_tanh"), "sm100 backend refuses an erf-GELU config: %s", err);

    sg_config narrow = sg_config_default();
    narrow.hidden_size = 704; /* 11 heads of 64: a multiple of 64, not of 128 */
    narrow.num_heads = 11;
    b = try_create(narrow, SG_PRECISION_BF16, err, sizeof err);
    CHECK(b == NULL && strstr(err, "multiples of 128"), "sm100 backend refuses hidden_size 704: %s", err);

    sg_config wide = sg_config_default();
    wide.intermediate_size = 3000;
    b = try_create(wide, SG_PRECISION_FP8, err, sizeof err);
    CHECK(b == NULL && strstr(err, "multiples of 128"), "sm100 backend refuses intermediate_size 3000: %s", err);

    sg_gpu_info gi;
    char gerr[512];
    if (sg_gpu_query(0, &gi, gerr, sizeof gerr) != 0) {
        SKIP("sm100 backend device gate: %s", gerr);
    } else if (gi.cc_major == 10 && gi.cc_minor == 0) {
        SKIP("sm100 backend device gate: device 0 (%s) is a compute capability 10.0 GPU, which the backend accepts",
             gi.name);
    } else {
        b = try_create(sg_config_default(), SG_PRECISION_AUTO, err, sizeof err);
        CHECK(b == NULL && strstr(err, "compute capability 10.0") && strstr(err, gi.name),
              "sm100 backend refuses %s (sm_%d%d): %s", gi.name, gi.cc_major, gi.cc_minor, err);
    }
    return CHECK_DONE();
}
