// kernel/cuda/cuda_weights.cu — one-time upload of the checkpoint into device layouts (see cuda_weights.h).
//
// Two passes over the same list of tensors: the first only sums sizes (each tensor 256-byte aligned, which
// cuBLASLt's default alignment assumptions want), then one cudaMalloc, then the second pass copies. fp32
// sources are copied as they are; bf16 ones go through a device fp32 scratch buffer and a conversion kernel,
// so the host never touches a converted copy (the GPU converts ~90M values in well under a millisecond;
// the copy from the page cache dominates).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "cuda_weights.h"
#include "cuda_common.h"

__global__ void f32_to_bf16_kernel(const float *__restrict__ src, sg_bf16 *__restrict__ dst, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16(src[i]);
}

namespace {

struct uploader {
    bool sizing;            // first pass: only count bytes
    size_t used;
    char *arena;
    float *scratch;         // device fp32, scratch_count floats
    size_t scratch_count;
    char *err;
    size_t errlen;

    void *place(size_t bytes) {
        void *p = sizing ? nullptr : arena + used;
        used += (bytes + 255) & ~(size_t)255;
        return p;
    }
    // fp32 host -> fp32 device
    int f32(float **dst, const float *src, size_t count) {
        *dst = (float *)place(count * sizeof(float));
        if (!sizing) SG_CU_TRY(cudaMemcpy(*dst, src, count * sizeof(float), cudaMemcpyHostToDevice), err, errlen);
        return 0;
    }
    // fp32 host -> bf16 device, from possibly several host pieces laid end to end
    int bf16(sg_bf16 **dst, std::initializer_list<std::pair<const float *, size_t>> parts) {
        size_t count = 0;
        for (auto &p : parts) count += p.second;
        *dst = (sg_bf16 *)place(count * sizeof(sg_bf16));
        if (sizing) {
            for (auto &p : parts) scratch_count = p.second > scratch_count ? p.second : scratch_count;
            return 0;
        }
        size_t off = 0;
        for (auto &p : parts) {
            SG_CU_TRY(cudaMemcpy(scratch, p.first, p.second * sizeof(float), cudaMemcpyHostToDevice), err, errlen);
            const int blocks = (int)(p.second / 256 + 1 < 4096 ? p.second / 256 + 1 : 4096);
            f32_to_bf16_kernel<<<blocks, 256>>>(scratch, *dst + off, p.second);
            SG_CU_LAUNCHED(err, errlen);
            off += p.second;
        }
        // the scratch buffer is reused by the next tensor: wait for the conversion
        SG_CU_TRY(cudaDeviceSynchronize(), err, errlen);
        return 0;
    }
};

}  // namespace

// Everything derived on the host: pos_b and the head query.
static void derive(const sg_model *m, std::vector<float> &pos_b, std::vector<float> &head_q) {
    const sg_config *c = &m->cfg;
    const int D = c->hidden_size, T = sg_config_tokens(c);
    pos_b.resize((size_t)T * D);
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) pos_b[(size_t)t * D + d] = m->pos[(size_t)t * D + d] + m->patch_b[d];
    head_q.resize(D);
    for (int i = 0; i < D; i++) {
        double s = m->head_in_b[i];
        for (int j = 0; j < D; j++) s += (double)m->head_in_w[(size_t)i * D + j] * m->probe[j];
        head_q[i] = (float)s;
    }
}

// The encoder layers of either tower.
static int walk_layers(uploader &u, const sg_layer *src, sg_cu_layer *dst, int L, size_t D, size_t F) {
    for (int l = 0; l < L; l++) {
        const sg_layer *s = &src[l];
        sg_cu_layer *d = &dst[l];
        if (u.f32(&d->ln1_w, s->ln1_w, D) || u.f32(&d->ln1_b, s->ln1_b, D) || u.f32(&d->ln2_w, s->ln2_w, D) ||
            u.f32(&d->ln2_b, s->ln2_b, D) ||
            u.bf16(&d->qkv_w, {{s->q_w, D * D}, {s->k_w, D * D}, {s->v_w, D * D}}) ||
            u.bf16(&d->qkv_b, {{s->q_b, D}, {s->k_b, D}, {s->v_b, D}}) || u.bf16(&d->o_w, {{s->o_w, D * D}}) ||
            u.f32(&d->o_b, s->o_b, D) || u.bf16(&d->fc1_w, {{s->fc1_w, F * D}}) ||
            u.bf16(&d->fc1_b, {{s->fc1_b, F}}) || u.bf16(&d->fc2_w, {{s->fc2_w, D * F}}) ||
            u.f32(&d->fc2_b, s->fc2_b, D))
            return -1;
    }
    return 0;
}

static int walk(uploader &u, const sg_model *m, sg_cu_weights *w, const float *pos_b, const float *head_q) {
    const sg_config *c = &m->cfg;
    const size_t D = c->hidden_size, F = c->intermediate_size, T = sg_config_tokens(c);
    const size_t CPP = sg_config_patch_dim(c);
    if (u.bf16(&w->patch_w, {{m->patch_w, D * CPP}})) return -1;
    if (u.f32(&w->pos_b, pos_b, T * D)) return -1;
    if (walk_layers(u, m->layers, w->layers, c->num_layers, D, F)) return -1;
    if (u.f32(&w->post_ln_w, m->post_ln_w, D) || u.f32(&w->post_ln_b, m->post_ln_b, D) ||
        u.f32(&w->head_q, head_q, D) || u.bf16(&w->head_kv_w, {{m->head_in_w + D * D, 2 * D * D}}) ||
        u.bf16(&w->head_kv_b, {{m->head_in_b + D, 2 * D}}) || u.bf16(&w->head_out_w, {{m->head_out_w, D * D}}) ||
        u.f32(&w->head_out_b, m->head_out_b, D) || u.f32(&w->head_ln_w, m->head_ln_w, D) ||
        u.f32(&w->head_ln_b, m->head_ln_b, D) || u.bf16(&w->head_fc1_w, {{m->head_fc1_w, F * D}}) ||
        u.bf16(&w->head_fc1_b, {{m->head_fc1_b, F}}) || u.bf16(&w->head_fc2_w, {{m->head_fc2_w, D * F}}) ||
        u.f32(&w->head_fc2_b, m->head_fc2_b, D))
        return -1;
    return 0;
}

// Sizing pass, one allocation, copy pass: walk(u) places (sizing) or uploads every tensor. On success *arena
// holds everything; on failure nothing stays allocated.
template <typename Walk>
static int upload_all(Walk walk, void **arena, size_t *bytes_out, const char *what, char *err, size_t errlen) {
    uploader u = {true, 0, nullptr, nullptr, 0, err, errlen};
    walk(u);
    const size_t bytes = u.used;
    cudaError_t e = cudaMalloc(arena, bytes);
    if (e == cudaSuccess) {
        e = cudaMalloc(&u.scratch, u.scratch_count * sizeof(float));
        if (e != cudaSuccess) cudaFree(*arena);
    }
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        snprintf(err, errlen, "cannot allocate %.1f MiB of GPU memory for the %s (+%.1f MiB scratch): %s "
                              "(%.1f of %.1f MiB free)",
                 bytes / 1048576.0, what, u.scratch_count * 4 / 1048576.0, cudaGetErrorString(e), fr / 1048576.0,
                 tot / 1048576.0);
        *arena = nullptr;
        return -1;
    }
    *bytes_out = bytes;
    u.sizing = false;
    u.used = 0;
    u.arena = (char *)*arena;
    const int rc = walk(u);
    cudaFree(u.scratch);
    return rc;
}

int sg_cu_weights_upload(const sg_model *m, sg_cu_weights *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    w->layers = (sg_cu_layer *)calloc((size_t)m->cfg.num_layers, sizeof(sg_cu_layer));
    if (!w->layers) {
        snprintf(err, errlen, "out of host memory for %d layer records", m->cfg.num_layers);
        return -1;
    }
    std::vector<float> pos_b, head_q;
    derive(m, pos_b, head_q);
    auto fn = [&](uploader &u) { return walk(u, m, w, pos_b.data(), head_q.data()); };
    if (upload_all(fn, &w->arena, &w->bytes, "weights", err, errlen)) {
        sg_cu_weights_free(w);
        return -1;
    }
    return 0;
}

int sg_cu_text_weights_upload(const sg_text_model *m, sg_cu_text_weights *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    const sg_text_config *c = &m->cfg;
    w->layers = (sg_cu_layer *)calloc((size_t)c->num_layers, sizeof(sg_cu_layer));
    if (!w->layers) {
        snprintf(err, errlen, "out of host memory for %d layer records", c->num_layers);
        return -1;
    }
    const size_t D = c->hidden_size, F = c->intermediate_size, T = c->max_positions, P = c->projection_size;
    auto fn = [&](uploader &u) {
        if (u.f32(&w->pos, m->pos, T * D) || walk_layers(u, m->layers, w->layers, c->num_layers, D, F) ||
            u.f32(&w->final_ln_w, m->final_ln_w, D) || u.f32(&w->final_ln_b, m->final_ln_b, D) ||
            u.bf16(&w->head_w, {{m->head_w, P * D}}) || u.f32(&w->head_b, m->head_b, P))
            return -1;
        return 0;
    };
    if (upload_all(fn, &w->arena, &w->bytes, "text weights", err, errlen)) {
        sg_cu_text_weights_free(w);
        return -1;
    }
    return 0;
}

void sg_cu_text_weights_free(sg_cu_text_weights *w) {
    if (w->arena) cudaFree(w->arena);
    free(w->layers);
    memset(w, 0, sizeof *w);
}

void sg_cu_weights_free(sg_cu_weights *w) {
    if (w->arena) cudaFree(w->arena);
    free(w->layers);
    memset(w, 0, sizeof *w);
}
