// kernel/mega/mega_sync.cuh — dependencies between tasks running on different SMs of the persistent kernels.
//
// One monotonic u32 counter per (stage, row tile) in global memory, zeroed once when allocated and never reset:
// launch number `epoch` (1, 2, ...) waits for `per_launch * epoch`, so back-to-back launches need no memset
// and a stale count from the previous launch can never satisfy a wait (kernel-notes.md §3).
//   writer: all threads store their part of the tile -> bar.sync over the writing warpgroup -> one thread
//           red.release.gpu.add (the barrier plus the cumulative release publish every thread's stores);
//   reader: one thread ld.acquire.gpu spin (with nanosleep backoff and a clock64 timeout that traps rather than
//           hangs) -> fence.proxy.async.global, because the tile is then read by TMA (the async proxy), which a
//           generic acquire does not order (deepseek-ai/DeepEP#621) -> TMA loads.
// Deadlock freedom is the scheduler's job: every CTA runs its tasks in one global topological order.
#ifndef SG_MEGA_SYNC_CUH
#define SG_MEGA_SYNC_CUH

#include "tma_ptx.cuh"

// The megakernels' named barriers: SG_MEGA_BAR_WG + w (1, 2) for consumer warpgroup w alone, SG_MEGA_BAR_ALL for
// both consumer warpgroups, SG_MEGA_BAR_SIDE for the side warps (0 is __syncthreads).
#define SG_MEGA_BAR_WG 1
#define SG_MEGA_BAR_ALL 3
#define SG_MEGA_BAR_SIDE 4

// Waits until *counter >= target (one thread). Traps after SG_SPIN_LIMIT cycles: a missing signal is a
// scheduler bug, and a trap is reported at the launch instead of a silent hang.
__device__ __forceinline__ void sg_dep_wait(const unsigned *counter, unsigned target) {
    if (sg_ld_acquire(counter) < target) {
        const unsigned long long t0 = clock64();
        while (sg_ld_acquire(counter) < target) {
            __nanosleep(64);  // short: producers are ~1 us ahead at most, and polling hits L2 only
            if (clock64() - t0 > SG_SPIN_LIMIT) __trap();
        }
    }
    sg_fence_proxy_async_global();
}

// Called by all 128 threads of one warpgroup after their global stores of a tile; bar_id (1..15) must be
// private to that warpgroup. One thread publishes the stores with a release add.
__device__ __forceinline__ void sg_dep_signal_wg(unsigned *counter, int bar_id) {
    sg_named_bar(bar_id, 128);
    if (threadIdx.x % 128 == 0) sg_red_release_add(counter, 1);
}
#endif
