// kernel/lab/lab_cuda.cuh — what the lab's CUDA launchers (kernel/lab/sm90_lab.cu, sm100_mxf8_tile.cu) share: a
// CUDA-call check that aborts with the call and the error (lab code only: the product reports errors instead), and
// the timing of a launch repeated with CUDA events, and the check that device 0 is a Hopper GPU.
#ifndef SG_LAB_CUDA_CUH
#define SG_LAB_CUDA_CUH

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <cuda_runtime.h>

#define SG_CK(call)                                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
            abort();                                                                                  \
        }                                                                                             \
    } while (0)

// Device 0's SM count when it has compute capability 9.x (the labs' sm_90a code runs there), else 0 with the
// reason in err.
static inline int sg_lab_sm90_sms(char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(err, errlen, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return 0;
    }
    cudaDeviceProp p;
    SG_CK(cudaGetDeviceProperties(&p, 0));
    if (p.major != 9) {
        snprintf(err, errlen, "needs a compute capability 9.x GPU (sm_90a code), got %s with %d.%d", p.name, p.major,
                 p.minor);
        return 0;
    }
    return p.multiProcessorCount;
}

// Mean microseconds per call of launch() over reps back-to-back calls on the default stream, between two CUDA
// events; 0 when reps <= 0.
template <class F>
static double sg_lab_time_us(int reps, F launch) {
    if (reps <= 0) return 0.0;
    cudaEvent_t e0, e1;
    SG_CK(cudaEventCreate(&e0));
    SG_CK(cudaEventCreate(&e1));
    SG_CK(cudaEventRecord(e0));
    for (int r = 0; r < reps; r++) launch();
    SG_CK(cudaEventRecord(e1));
    SG_CK(cudaEventSynchronize(e1));
    SG_CK(cudaGetLastError());
    float ms = 0;
    SG_CK(cudaEventElapsedTime(&ms, e0, e1));
    SG_CK(cudaEventDestroy(e0));
    SG_CK(cudaEventDestroy(e1));
    return 1000.0 * ms / reps;
}

// The first 1024-byte boundary at or after p: where a lab kernel's 128-byte-swizzled tiles start in its dynamic
// shared memory (its allocation keeps 1 KB to spare).
__device__ __forceinline__ uint8_t *sg_align1024(uint8_t *p) {
    return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// A chain kernel's ns per hop over `reps` timed launches: launch() runs reps + 1 times (the first warms up code and
// TLB and is not counted), each after reset(); each run leaves the first and the last hop's %globaltimer in t_dev[0]
// and t_dev[1], and counts (t1 - t0) / hops. The median (of the middle two for an even count), fastest and slowest.
struct sg_lab_hop_ns {
    double median, min, max;
};
template <class Reset, class Launch>
static sg_lab_hop_ns sg_lab_time_hops(int reps, int hops, const unsigned long long *t_dev, Reset reset,
                                      Launch launch) {
    std::vector<double> ns;
    for (int rep = 0; rep <= reps; rep++) {
        reset();
        launch();
        SG_CK(cudaGetLastError());
        SG_CK(cudaDeviceSynchronize());
        unsigned long long t[2];
        SG_CK(cudaMemcpy(t, t_dev, sizeof t, cudaMemcpyDeviceToHost));
        if (rep) ns.push_back((double)(long long)(t[1] - t[0]) / hops);
    }
    std::sort(ns.begin(), ns.end());
    return {(ns[(ns.size() - 1) / 2] + ns[ns.size() / 2]) / 2, ns.front(), ns.back()};
}

// Wall-clock seconds (CLOCK_REALTIME): the window a timed run announces to scripts/energy_trace.py.
static inline double sg_lab_wall_s() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#endif
