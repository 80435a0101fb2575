// kernel/cuda/gpu_query.cu — what this machine's CUDA driver and devices are (kernel/gpu.h).
//
// Asks the runtime only things that work without a GPU or a driver (cudaDriverGetVersion returns 0 then), so
// `siglip2-embed --info` and backend auto-selection behave on a machine with no NVIDIA driver at all: each
// failure becomes a sentence (no driver, driver too old for this binary's runtime, no device, bad ordinal).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include "../gpu.h"

extern "C" int sg_gpu_compiled(void) { return 1; }

// "13.0" from 13000.
static void version_str(int v, char *out, size_t n) { snprintf(out, n, "%d.%d", v / 1000, (v % 1000) / 10); }

extern "C" int sg_gpu_query(int device, sg_gpu_info *info, char *err, size_t errlen) {
    memset(info, 0, sizeof *info);
    int drv = 0, rt = 0;
    cudaRuntimeGetVersion(&rt);
    info->runtime_version = rt;
    char rts[16], drvs[16];
    version_str(rt, rts, sizeof rts);
    if (cudaDriverGetVersion(&drv) != cudaSuccess || drv == 0) {
        snprintf(err, errlen, "no NVIDIA driver found (libcuda.so could not be loaded); this binary needs a driver "
                              "supporting CUDA %s or newer", rts);
        return -1;
    }
    info->driver_version = drv;
    version_str(drv, drvs, sizeof drvs);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver || (e == cudaSuccess && drv < rt && drv / 1000 < rt / 1000)) {
        snprintf(err, errlen, "the NVIDIA driver supports CUDA %s but this binary needs CUDA %s: update the driver",
                 drvs, rts);
        cudaGetLastError();
        return -1;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
        snprintf(err, errlen, "no CUDA device visible (driver CUDA %s; check CUDA_VISIBLE_DEVICES and nvidia-smi)",
                 drvs);
        cudaGetLastError();
        return -1;
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cannot list CUDA devices: %s (%s; driver CUDA %s, runtime %s)", cudaGetErrorString(e),
                 cudaGetErrorName(e), drvs, rts);
        cudaGetLastError();
        return -1;
    }
    info->device_count = count;
    if (device < 0 || device >= count) {
        snprintf(err, errlen, "CUDA device %d asked for, but only %d visible (0..%d)", device, count, count - 1);
        return -1;
    }
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cannot read the properties of CUDA device %d: %s", device, cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->total_mem = p.totalGlobalMem;
    // The identity the self-check cache is keyed on (kernel/selfcheck.c): stable across CUDA_VISIBLE_DEVICES
    // renumbering, unlike the ordinal. Both come with the properties already read, so they cost nothing.
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(info->uuid, sizeof info->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.0", (unsigned)p.pciDomainID,
             (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
    return 0;
}

extern "C" int sg_gpu_require_cc(int device, int major, int minor, const char *who, const char *what, char *err,
                                 size_t errlen) {
    sg_gpu_info gi;
    char gerr[512];
    if (sg_gpu_query(device, &gi, gerr, sizeof gerr) != 0) {
        snprintf(err, errlen, "%s backend: %s", who, gerr);
        return -1;
    }
    if (gi.cc_major != major || gi.cc_minor != minor) {
        snprintf(err, errlen, "%s backend: needs a compute capability %d.%d GPU (%s), device %d is %s, sm_%d%d", who,
                 major, minor, what, device, gi.name, gi.cc_major, gi.cc_minor);
        return -1;
    }
    return 0;
}
