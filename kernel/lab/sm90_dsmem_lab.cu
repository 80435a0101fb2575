// kernel/lab/sm90_dsmem_lab.cu — experiment 8: a chain of dependent hops inside one thread-block cluster, each hop
// handing its data to the next SM's shared memory with one bulk copy that completes on that SM's mbarrier (lab only).
//
// Experiment 1 (sm90_chain_lab.cu) measured the megakernel's hand-off between SMs through global memory: a counter's
// release, another SM's acquire poll, a bulk copy of what the first SM stored (~0.75 us a hop with no data, ~1.5 us
// with 16 KB). Here the same chain and the same work per hop (add 1 to every u32 word of the input) run on the CTAs
// of one cluster, and the data moves through distributed shared memory instead:
//   hop h (cluster rank h % C): wait on its own mbarrier (armed by its thread 0 for D bytes), add 1 to every word of
//   its input buffer into its output buffer (128 threads), fence the generic writes for the async proxy, barrier,
//   then thread 0 issues cp.async.bulk.shared::cluster.shared::cta from its output buffer into rank (h + 1) % C's
//   input buffer, completing on that rank's mbarrier. With D = 0 the hop is one remote mbarrier arrival.
// A buffer is never written while it is read: a rank's input is refilled only by hop h + C (after its hop h read it),
// its output only by its own hop h + C, which starts after the next rank's barrier saw hop h's copy complete.
// The C API and the addressing are in sm90_dsmem_lab.h; the driver is kernel/lab/test_sm90_dsmem.c.
#include <cstdio>
#include <cuda_runtime.h>
#include "sm90_dsmem_lab.h"
#include "../mega/tma_ptx.cuh"
#include "lab_cuda.cuh"

#define SG_DSMEM_THREADS 128
#define SG_DSMEM_SMEM (2 * SG_DSMEM_MAX_BYTES)  // input and output buffers: one CTA per SM
#define SG_DSMEM_PIECE (16 * 1024)              // bytes per bulk copy (one mbarrier counts them all)

struct sg_dsmem_params {
    const uint8_t *in;      // D bytes: hop 0's input
    uint8_t *out;           // D bytes: hop H's output
    unsigned long long *t;  // [0]: hop 0's %globaltimer at its hand-over, [1]: hop H's when it would hand over
    int *smid;              // per cluster rank
    int hops, bytes;
};

// The shared::cluster address of `local` (this CTA's shared memory) in cluster CTA `rank`.
__device__ __forceinline__ uint32_t sg_dsmem_peer(const void *local, uint32_t rank) {
    uint32_t a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(sg_smem_u32(local)), "r"(rank));
    return a;
}
// `bytes` (a multiple of 16) of this CTA's shared memory at src into a peer's at dst, completing (complete_tx) on
// the peer's mbarrier at bar (dst and bar: shared::cluster addresses from sg_dsmem_peer).
__device__ __forceinline__ void sg_dsmem_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "r"(sg_smem_u32(src)), "r"(bytes), "r"(bar) : "memory");
}

__global__ void __launch_bounds__(SG_DSMEM_THREADS, 1) sg_dsmem_hop_kernel(sg_dsmem_params p) {
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ uint64_t full;  // one phase per hop of this rank: thread 0's arrival + D bytes, or the peer's arrival
    const int tid = threadIdx.x, D = p.bytes;
    const uint32_t C = sg_cluster_size(), rank = sg_cluster_rank(), next = (rank + 1) % C;
    uint8_t *in_s = smem, *out_s = smem + SG_DSMEM_MAX_BYTES;
    if (tid == 0) {
        p.smid[rank] = sg_smid();
        sg_mbar_init(&full, 1);
        sg_fence_mbar_init();
    }
    sg_cluster_sync();  // every rank's barrier is initialised before a peer copies or arrives on it
    const uint32_t peer_in = sg_dsmem_peer(in_s, next), peer_full = sg_dsmem_peer(&full, next);
    uint32_t parity = 0;
    for (int h = (int)rank; h <= p.hops; h += (int)C) {
        if (D > 0 && tid == 0) {
            sg_mbar_arrive_expect_tx(&full, (uint32_t)D);  // the previous rank's bytes may land first: then the
                                                           // phase completes at this arrival
            if (h == 0)
                for (int o = 0; o < D; o += SG_DSMEM_PIECE)
                    sg_bulk_load(in_s + o, p.in + o, (uint32_t)min(SG_DSMEM_PIECE, D - o), &full);
        }
        if (D > 0 || h > 0) {  // D = 0: the previous rank's remote arrival completes the phase
            sg_mbar_wait(&full, parity);
            parity ^= 1u;
        }
        if (D > 0) {
            const uint4 *s = reinterpret_cast<const uint4 *>(in_s);
            uint4 *d = reinterpret_cast<uint4 *>(out_s);
            for (int i = tid; i < D / 16; i += SG_DSMEM_THREADS) {
                const uint4 v = s[i];
                d[i] = make_uint4(v.x + 1, v.y + 1, v.z + 1, v.w + 1);
            }
            sg_fence_proxy_async_smem();  // each writer's generic stores, before the bulk copy reads them
            __syncthreads();
        }
        if (tid == 0) {
            if (h == 0) p.t[0] = sg_globaltimer();
            if (h == p.hops) {
                p.t[1] = sg_globaltimer();
            } else if (D > 0) {
                for (int o = 0; o < D; o += SG_DSMEM_PIECE)
                    sg_dsmem_copy(peer_in + (uint32_t)o, out_s + o, (uint32_t)min(SG_DSMEM_PIECE, D - o), peer_full);
            } else {
                sg_mbar_arrive_remote(&full, next);
            }
        }
    }
    if (D > 0 && p.hops % (int)C == (int)rank) {  // the last hop's output (its barrier above made it complete)
        const uint4 *s = reinterpret_cast<const uint4 *>(out_s);
        uint4 *d = reinterpret_cast<uint4 *>(p.out);
        for (int i = tid; i < D / 16; i += SG_DSMEM_THREADS) d[i] = s[i];
    }
    sg_cluster_sync();  // no CTA leaves while a peer may still copy into its shared memory
}

extern "C" int sg_sm90_dsmem_available(char *err, size_t errlen) { return sg_lab_sm90_sms(err, errlen); }

extern "C" int sg_sm90_dsmem_hops(const sg_dsmem_hop_cfg *c, sg_dsmem_hop_result *r, char *err, size_t errlen) {
    if (!sg_sm90_dsmem_available(err, errlen)) return -1;
    const int H = c->hops, D = c->bytes, C = c->cluster;
    if (H < 1 || D < 0 || D % 16 || D > SG_DSMEM_MAX_BYTES || (C != 2 && C != 4 && C != 8) || c->reps < 1 ||
        (D && !c->in)) {
        snprintf(err, errlen, "sm90 dsmem hops: bad config H %d D %d cluster %d reps %d (need H >= 1, D a multiple of "
                 "16 in 0 .. %d with input, cluster 2, 4 or 8, reps >= 1)", H, D, C, c->reps, SG_DSMEM_MAX_BYTES);
        return -1;
    }
    SG_CK(cudaFuncSetAttribute(sg_dsmem_hop_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SG_DSMEM_SMEM));
    sg_dsmem_params p = {NULL, NULL, NULL, NULL, H, D};
    if (D) {
        uint8_t *in = NULL, *out = NULL;
        SG_CK(cudaMalloc(&in, D));
        SG_CK(cudaMalloc(&out, D));
        SG_CK(cudaMemcpy(in, c->in, D, cudaMemcpyHostToDevice));
        p.in = in;
        p.out = out;
    }
    SG_CK(cudaMalloc(&p.t, 2 * sizeof(unsigned long long)));
    SG_CK(cudaMalloc(&p.smid, C * sizeof(int)));
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;  // one cluster: its CTAs are co-scheduled, so the chain runs
    attr.val.clusterDim.x = (unsigned)C;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)C);
    cfg.blockDim = dim3(SG_DSMEM_THREADS);
    cfg.dynamicSmemBytes = SG_DSMEM_SMEM;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    const sg_lab_hop_ns ns = sg_lab_time_hops(
        c->reps, H, p.t,
        [&] {
            if (D) SG_CK(cudaMemset(p.out, 0xFF, D));  // a hop that skipped its copy cannot pass the check
        },
        [&] { SG_CK(cudaLaunchKernelEx(&cfg, sg_dsmem_hop_kernel, p)); });
    if (D && c->out) SG_CK(cudaMemcpy(c->out, p.out, D, cudaMemcpyDeviceToHost));
    int smid[8] = {0};
    SG_CK(cudaMemcpy(smid, p.smid, C * sizeof(int), cudaMemcpyDeviceToHost));
    r->ns_per_hop = ns.median;
    r->ns_min = ns.min;
    r->ns_max = ns.max;
    r->sm_rank0 = smid[0];
    r->sm_rank1 = smid[1];
    SG_CK(cudaFree(const_cast<uint8_t *>(p.in)));
    SG_CK(cudaFree(p.out));
    SG_CK(cudaFree(p.t));
    SG_CK(cudaFree(p.smid));
    return 0;
}
