// placeholder
#include <cstdio>
#include <cstring>
#include "../gpu.h"
extern "C" int sg_gpu_compiled(void) { return 1; }
extern "C" int sg_gpu_query(int, sg_gpu_info *i, char *err, size_t n) { memset(i,0,sizeof *i); snprintf(err,n,"todo"); return -1; }
extern "C" sg_backend *sg_cuda_backend_create(const sg_model*, const sg_backend_opts*, char *err, size_t n) { snprintf(err,n,"todo"); return NULL; }
extern "C" sg_backend *sg_sm90_backend_create(const sg_model*, const sg_backend_opts*, char *err, size_t n) { snprintf(err,n,"todo"); return NULL; }
extern "C" sg_backend *sg_sm100_backend_create(const sg_model*, const sg_backend_opts*, char *err, size_t n) { snprintf(err,n,"todo"); return NULL; }
