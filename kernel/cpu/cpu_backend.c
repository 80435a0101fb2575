/* placeholder */
#include <stdio.h>
#include "cpu_encoder.h"
sg_backend *sg_cpu_backend_create(const sg_model *m, const sg_backend_opts *o, char *err, size_t errlen) {
    (void)m; (void)o; snprintf(err, errlen, "not yet"); return NULL;
}
