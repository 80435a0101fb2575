// kernel/cuda/cuda_backend.cu — the "cuda" backend (kernel/backend.h): staging, streams and CUDA graphs.
//
// Two slots, each with pinned host buffers for one batch of pixels and one of embeddings, a device pixel
// buffer and two events. submit copies the caller's pixels into the slot's pinned buffer, enqueues the H2D copy
// on the copy stream, makes the compute stream wait for it, launches the forward (a CUDA graph captured the
// first time this (batch size, slot) is seen) and the D2H copy of the embeddings, and returns. So batch i+1's
// upload overlaps batch i's compute. collect waits for the oldest slot and hands its embeddings out. Slots are
// used in order and a slot is reused only after it was collected, which is what keeps its buffers safe.
// Last section: sg_cuda_time_graph, the same forward graph timed with pixels already on the GPU (no staging), for
// tests/tools/sg_gpu_graph_bench; it lives here because this object is always linked in with the backend (the
// tool reaches it through a weak reference, so that it also links in a build without CUDA).
#include <algorithm>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <ctime>
#include "cuda_forward.h"
#include "cuda_backend.h"
#include "cuda_common.h"
#include "../gpu.h"

namespace {

struct slot {
    uint8_t *h_pix;         // pinned, max_batch * S*S*3
    float *h_out;           // pinned, max_batch * D
    uint8_t *d_pix;         // device
    cudaEvent_t uploaded, done;
    int n;                  // images in flight in this slot, 0 when free
};

struct cuda_impl {
    int device;
    sg_cu_model cm;
    cudaStream_t compute, copy;
    slot slots[SG_BACKEND_MAX_INFLIGHT];
    int head, count;        // oldest slot in flight, and how many are
    cudaGraphExec_t *graphs;  // [SG_BACKEND_MAX_INFLIGHT * (max_batch + 1)]
};

}  // namespace

static double wall_s(void) {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void impl_free(cuda_impl *c) {
    if (!c) return;
    cudaSetDevice(c->device);
    if (c->compute) cudaStreamSynchronize(c->compute);
    if (c->copy) cudaStreamSynchronize(c->copy);
    if (c->graphs) {
        for (int i = 0; i < SG_BACKEND_MAX_INFLIGHT * (c->cm.max_batch + 1); i++)
            if (c->graphs[i]) cudaGraphExecDestroy(c->graphs[i]);
        free(c->graphs);
    }
    for (slot &s : c->slots) {
        if (s.h_pix) cudaFreeHost(s.h_pix);
        if (s.h_out) cudaFreeHost(s.h_out);
        if (s.d_pix) cudaFree(s.d_pix);
        if (s.uploaded) cudaEventDestroy(s.uploaded);
        if (s.done) cudaEventDestroy(s.done);
    }
    if (c->compute) cudaStreamDestroy(c->compute);
    if (c->copy) cudaStreamDestroy(c->copy);
    sg_cu_model_free(&c->cm);
    free(c);
}

static void cuda_destroy(sg_backend *b) {
    impl_free((cuda_impl *)b->impl);
    free(b);
}

// The graph of the forward for n images reading slot s's device pixels, captured on first use.
static int graph_for(cuda_impl *c, int n, int s, cudaGraphExec_t *out, char *err, size_t errlen) {
    cudaGraphExec_t *g = &c->graphs[s * (c->cm.max_batch + 1) + n];
    if (!*g) {
        // One eager run first: cuBLASLt and lazily loaded kernels may initialise on their first call, which is
        // not allowed inside a capture; it also surfaces errors at their source rather than at replay.
        // SG_CUDA_PROFILE=1 prints where this run's time goes, and the setup steps' times (stderr).
        const bool prof = getenv("SG_CUDA_PROFILE") != nullptr;
        const double t0 = wall_s();
        if (sg_cu_model_prepare(&c->cm, n, c->compute, err, errlen)) return -1;
        const double t1 = wall_s();
        if (sg_cu_forward(&c->cm, c->slots[s].d_pix, n, c->compute, prof, err, errlen)) return -1;
        SG_CU_TRY(cudaStreamSynchronize(c->compute), err, errlen);
        const double t2 = wall_s();
        SG_CU_TRY(cudaStreamBeginCapture(c->compute, cudaStreamCaptureModeThreadLocal), err, errlen);
        const int rc = sg_cu_forward(&c->cm, c->slots[s].d_pix, n, c->compute, 0, err, errlen);
        cudaGraph_t graph = nullptr;
        const cudaError_t e = cudaStreamEndCapture(c->compute, &graph);
        if (rc != 0) {
            if (graph) cudaGraphDestroy(graph);
            return -1;
        }
        SG_CU_TRY(e, err, errlen);
        const double t3 = wall_s();
        const cudaError_t ei = cudaGraphInstantiate(g, graph, 0);
        cudaGraphDestroy(graph);
        SG_CU_TRY(ei, err, errlen);
        if (prof)
            fprintf(stderr, "sg-cuda setup, batch %d slot %d: GEMM plans %.1f ms, eager run %.1f ms, capture %.1f ms, "
                            "instantiate %.1f ms\n",
                    n, s, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (wall_s() - t3) * 1e3);
    }
    *out = *g;
    return 0;
}

static int cuda_submit(sg_backend *b, const uint8_t *pixels, int n, char *err, size_t errlen) {
    cuda_impl *c = (cuda_impl *)b->impl;
    if (n < 1 || n > b->max_batch) {
        snprintf(err, errlen, "cuda backend: batch of %d images, expected 1..%d", n, b->max_batch);
        return -1;
    }
    if (c->count == SG_BACKEND_MAX_INFLIGHT) {
        snprintf(err, errlen, "cuda backend: %d batches already in flight: collect first", c->count);
        return -1;
    }
    SG_CU_TRY(cudaSetDevice(c->device), err, errlen);
    const int si = (c->head + c->count) % SG_BACKEND_MAX_INFLIGHT;
    slot &s = c->slots[si];
    const size_t bytes = (size_t)n * b->image_size * b->image_size * 3;
    memcpy(s.h_pix, pixels, bytes);
    SG_CU_TRY(cudaMemcpyAsync(s.d_pix, s.h_pix, bytes, cudaMemcpyHostToDevice, c->copy), err, errlen);
    SG_CU_TRY(cudaEventRecord(s.uploaded, c->copy), err, errlen);
    SG_CU_TRY(cudaStreamWaitEvent(c->compute, s.uploaded, 0), err, errlen);
    cudaGraphExec_t g;
    if (graph_for(c, n, si, &g, err, errlen)) return -1;
    SG_CU_TRY(cudaGraphLaunch(g, c->compute), err, errlen);
    SG_CU_TRY(cudaMemcpyAsync(s.h_out, c->cm.pooled, (size_t)n * b->dim * sizeof(float), cudaMemcpyDeviceToHost,
                              c->compute),
              err, errlen);
    SG_CU_TRY(cudaEventRecord(s.done, c->compute), err, errlen);
    s.n = n;
    c->count++;
    return 0;
}

static int cuda_collect(sg_backend *b, float *out, char *err, size_t errlen) {
    cuda_impl *c = (cuda_impl *)b->impl;
    if (c->count == 0) {
        snprintf(err, errlen, "cuda backend: collect with nothing submitted");
        return -1;
    }
    slot &s = c->slots[c->head];
    const cudaError_t e = cudaEventSynchronize(s.done);
    const int n = s.n;
    s.n = 0;
    c->head = (c->head + 1) % SG_BACKEND_MAX_INFLIGHT;
    c->count--;
    SG_CU_TRY(e, err, errlen);
    memcpy(out, s.h_out, (size_t)n * b->dim * sizeof(float));
    return 0;
}

#define CREATE_TRY(expr)                                 \
    do {                                                 \
        if ((expr) != 0) {                               \
            impl_free(c);                                \
            free(b);                                     \
            return NULL;                                 \
        }                                                \
    } while (0)

static int soft(cudaError_t e, const char *what, char *err, size_t errlen) {
    if (e == cudaSuccess) return 0;
    snprintf(err, errlen, "cuda backend: %s: %s", what, cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
}

sg_backend *sg_cu_backend_create_ops(const sg_model *m, const sg_backend_opts *o, const sg_cu_encoder_ops *ops,
                                     char *err, size_t errlen) {
    sg_gpu_info gi;
    char gerr[512];
    if (sg_gpu_query(o->device, &gi, gerr, sizeof gerr) != 0) {
        snprintf(err, errlen, "cuda backend: %s", gerr);
        return NULL;
    }
    if (gi.cc_major < 8) {
        snprintf(err, errlen, "cuda backend: %s is sm_%d%d; the portable CUDA path needs sm_80 or newer (bf16 "
                              "tensor cores)", gi.name, gi.cc_major, gi.cc_minor);
        return NULL;
    }
    sg_backend *b = (sg_backend *)calloc(1, sizeof *b);
    cuda_impl *c = (cuda_impl *)calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    c->device = o->device;
    const int max_batch = o->max_batch > 0 ? o->max_batch : 1;
    CREATE_TRY(soft(cudaSetDevice(o->device), "cudaSetDevice", err, errlen));
    const double t0 = wall_s();
    CREATE_TRY(sg_cu_model_init(&c->cm, m, max_batch, err, errlen));
    if (ops) CREATE_TRY(sg_cu_model_set_encoder(&c->cm, m, ops, err, errlen));
    if (getenv("SG_CUDA_PROFILE"))
        fprintf(stderr, "sg-cuda setup: weights %.1f MiB uploaded, activations for batch %d, cuBLASLt: %.1f ms\n",
                c->cm.w.bytes / 1048576.0, max_batch, (wall_s() - t0) * 1e3);
    const int S = m->cfg.image_size, D = m->cfg.hidden_size;
    CREATE_TRY(soft(cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking), "stream", err, errlen));
    CREATE_TRY(soft(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking), "stream", err, errlen));
    for (slot &s : c->slots) {
        CREATE_TRY(soft(cudaHostAlloc((void **)&s.h_pix, (size_t)max_batch * S * S * 3, cudaHostAllocDefault),
                        "pinned pixel staging", err, errlen));
        CREATE_TRY(soft(cudaHostAlloc((void **)&s.h_out, (size_t)max_batch * D * sizeof(float),
                                      cudaHostAllocDefault),
                        "pinned output staging", err, errlen));
        CREATE_TRY(soft(cudaMalloc((void **)&s.d_pix, (size_t)max_batch * S * S * 3), "device pixel buffer", err,
                        errlen));
        CREATE_TRY(soft(cudaEventCreateWithFlags(&s.uploaded, cudaEventDisableTiming), "event", err, errlen));
        CREATE_TRY(soft(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming),
                        "event", err, errlen));
    }
    c->graphs = (cudaGraphExec_t *)calloc((size_t)SG_BACKEND_MAX_INFLIGHT * (max_batch + 1), sizeof(cudaGraphExec_t));
    if (!c->graphs) {
        snprintf(err, errlen, "out of host memory");
        impl_free(c);
        free(b);
        return NULL;
    }
    b->name = ops ? ops->name : "cuda";
    b->numerics = ops ? ops->numerics : SG_CU_NUMERICS_BF16;
    b->dim = D;
    b->image_size = S;
    b->max_batch = max_batch;
    b->impl = c;
    b->submit = cuda_submit;
    b->collect = cuda_collect;
    b->destroy = cuda_destroy;
    return b;
}

extern "C" sg_backend *sg_cuda_backend_create(const sg_model *m, const sg_backend_opts *o, char *err,
                                               size_t errlen) {
    return sg_cu_backend_create_ops(m, o, nullptr, err, errlen);
}

// --- pixels-on-GPU timing for tests/tools/sg_gpu_graph_bench (gpu-bench.sh): the issue's encoder figures are
// "pixels already on the GPU", the way HF is timed (CUDA events around the model call).

__global__ void fill_pixels_kernel(uint8_t *p, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u;  // Knuth's multiplicative hash: varied bytes, no state
        p[i] = (uint8_t)((h ^ (h >> 15)) >> 7);
    }
}

static int time_graph(sg_cu_model *cm, uint8_t *pix, int n, int iters, double sustain_s, cudaStream_t st,
                      double *median_ms, char *err, size_t errlen) {
    if (sg_cu_forward(cm, pix, n, st, 0, err, errlen)) return -1;
    SG_CU_TRY(cudaStreamSynchronize(st), err, errlen);
    SG_CU_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), err, errlen);
    const int rc = sg_cu_forward(cm, pix, n, st, 0, err, errlen);
    cudaGraph_t graph = nullptr;
    const cudaError_t e = cudaStreamEndCapture(st, &graph);
    if (rc != 0) {
        if (graph) cudaGraphDestroy(graph);
        return -1;
    }
    SG_CU_TRY(e, err, errlen);
    cudaGraphExec_t exec;
    const cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    SG_CU_TRY(ei, err, errlen);
    cudaEvent_t a, b;
    SG_CU_TRY(cudaEventCreate(&a), err, errlen);
    SG_CU_TRY(cudaEventCreate(&b), err, errlen);
    // Warm-up: 3 replays, or as many as fill sustain_s seconds of back-to-back replays (the power limit's clock
    // settles within about two seconds of continuous load: docs/perf-notes.md, session 26).
    const double w0 = wall_s();
    for (int i = 0; i < 3 || wall_s() - w0 < sustain_s; i++) {  // one at a time: the clock sees what it times
        SG_CU_TRY(cudaGraphLaunch(exec, st), err, errlen);
        SG_CU_TRY(cudaStreamSynchronize(st), err, errlen);
    }
    // Timed: iters replays, or more until they span sustain_s seconds; each between two events, the median kept.
    std::vector<float> ms;
    const double t0 = wall_s();
    for (int i = 0; i < iters || wall_s() - t0 < sustain_s; i++) {
        SG_CU_TRY(cudaEventRecord(a, st), err, errlen);
        SG_CU_TRY(cudaGraphLaunch(exec, st), err, errlen);
        SG_CU_TRY(cudaEventRecord(b, st), err, errlen);
        SG_CU_TRY(cudaEventSynchronize(b), err, errlen);
        float t = 0;
        SG_CU_TRY(cudaEventElapsedTime(&t, a, b), err, errlen);
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(exec);
    std::sort(ms.begin(), ms.end());
    *median_ms = ms[ms.size() / 2];
    return 0;
}

/* Times one graph replay of the forward of n images on device `device`, with the encoder layers of `backend`
 * ("cuda": the portable ones; "sm90", "sm100": that megakernel, which must be able to run on this device): the
 * median of at least iters replays, after 3 warm-up replays. sustain_s > 0: the warm-up lasts sustain_s seconds of
 * replays and the timed ones span at least as long (the sustained rate, with the clock where the power limit holds
 * it); 0: the short measurement gpu-bench has always made. Returns 0, or -1 with err. */
extern "C" int sg_cuda_time_graph(const sg_model *m, int device, const char *backend, int n, int iters,
                                  double sustain_s, double *median_ms, char *err, size_t errlen) {
    if (n < 1 || iters < 1) {
        snprintf(err, errlen, "sg_cuda_time_graph: n %d, iters %d", n, iters);
        return -1;
    }
    const sg_cu_encoder_ops *ops = nullptr;
    if (strcmp(backend, "cuda") != 0) {
        ops = sg_cu_encoder_ops_for(backend, m, device, err, errlen);
        if (!ops) return -1;
    }
    SG_CU_TRY(cudaSetDevice(device), err, errlen);
    sg_cu_model cm;
    if (sg_cu_model_init(&cm, m, n, err, errlen)) return -1;
    if (ops && sg_cu_model_set_encoder(&cm, m, ops, err, errlen)) {
        sg_cu_model_free(&cm);
        return -1;
    }
    const size_t count = (size_t)n * m->cfg.image_size * m->cfg.image_size * 3;
    uint8_t *pix = nullptr;
    cudaStream_t st = nullptr;
    int rc = -1;
    if (cudaMalloc(&pix, count) != cudaSuccess || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: cannot allocate %zu bytes of pixels or a stream", __FILE__, __LINE__, count);
        cudaGetLastError();
    } else {
        fill_pixels_kernel<<<256, 256, 0, st>>>(pix, count);
        rc = time_graph(&cm, pix, n, iters, sustain_s, st, median_ms, err, errlen);
        cudaStreamSynchronize(st);
    }
    if (st) cudaStreamDestroy(st);
    if (pix) cudaFree(pix);
    sg_cu_model_free(&cm);
    return rc;
}

const sg_cu_encoder_ops *sg_cu_encoder_ops_for(const char *name, const sg_model *m, int device, char *err,
                                               size_t errlen) {
    sg_backend_kind k = SG_BACKEND_AUTO;
    sg_precision prec = SG_PRECISION_AUTO;
    const int ok = sg_backend_parse_spec(name, &k, &prec) == 0;
    if (ok && k == SG_BACKEND_SM90) return sg_sm90_encoder_ops(m, device, prec, err, errlen);
    if (ok && k == SG_BACKEND_SM100) return sg_sm100_encoder_ops(m, device, prec, err, errlen);
    snprintf(err, errlen, "no megakernel backend named '%s'", name);
    return nullptr;
}
