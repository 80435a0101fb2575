/* weights/safetensors.h — a strict, never-crashing reader of the safetensors format.
 *
 * Layout (github.com/huggingface/safetensors): bytes 0..7 hold N, a little-endian u64; bytes 8..8+N hold a
 * UTF-8 JSON object mapping tensor names to {"dtype", "shape", "data_offsets": [begin, end]} plus an optional
 * "__metadata__" object of strings; the data area follows, offsets relative to its start, end exclusive.
 *
 * The file is untrusted: every rule below is checked and a violation gives NULL and a message of the form
 * "<file>: <where>: <what>, got X, expected Y". Rules: N <= 100 MB and 8+N <= file size; the header is valid
 * UTF-8 JSON (no raw control bytes, no \u0000 escape, nothing but spaces after the object, at most 4M values
 * so cJSON's memory stays bounded); every dtype is F32, F16 or BF16; every shape dimension and offset is an
 * exact non-negative integer below 2^53; shape product x dtype size equals end - begin (overflow-checked);
 * the byte ranges, sorted, start at 0, neither overlap nor leave holes, and the last ends at the end of the
 * file; a name appears once (compared exactly, byte for byte: "a" and "A" are two tensors). Unknown fields
 * inside a tensor entry are rejected too.
 *
 * The parser works on memory (sg_st_open_memory) so tests and the fuzzer can drive it without files;
 * sg_st_open maps a file read-only and parses the mapping.
 */
#ifndef SG_SAFETENSORS_H
#define SG_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SG_ST_F32 = 0, SG_ST_F16 = 1, SG_ST_BF16 = 2 } sg_st_dtype;

/* Deepest tensor the reader accepts; SigLIP's deepest is the 4-d patch embedding. Deeper shapes are
 * rejected with a message rather than truncated. */
#define SG_ST_MAX_DIMS 8
/* The format's own limit on the header (safetensors' MAX_HEADER_SIZE): 100,000,000 bytes. */
#define SG_ST_MAX_HEADER ((uint64_t)100000000)

typedef struct sg_st_tensor {
    char *name; /* exact key from the header (UTF-8, no NUL inside) */
    sg_st_dtype dtype;
    int ndim;
    int64_t shape[SG_ST_MAX_DIMS];
    uint64_t begin, end; /* byte offsets in the data area, end exclusive */
    const uint8_t *data; /* start of the tensor's bytes (inside the mapping or caller's buffer) */
    uint64_t nbytes;     /* end - begin == product(shape) * dtype size */
} sg_st_tensor;

typedef struct sg_st_file {
    char label[512];     /* file path (or the caller's label) used in messages */
    const uint8_t *base; /* the whole file */
    size_t size;
    int mapped;          /* 1: base is an mmap that sg_st_close unmaps */
    uint64_t data_start; /* 8 + N */
    size_t n_tensors;
    sg_st_tensor *tensors; /* sorted by name (strcmp) for sg_st_find */
    int has_metadata;      /* 1 if "__metadata__" was present */
} sg_st_file;

/* Maps the file at path and parses it. Returns NULL with a message in err on any problem (I/O or format).
 * The result owns the mapping; release it with sg_st_close. */
sg_st_file *sg_st_open(const char *path, char *err, size_t errlen);

/* Parses len bytes at buf, which must stay valid and unchanged while the result is in use (the result points
 * into it and does not free it). label names the input in messages (may be NULL). */
sg_st_file *sg_st_open_memory(const void *buf, size_t len, const char *label, char *err, size_t errlen);

/* The tensor named exactly name, or NULL. */
const sg_st_tensor *sg_st_find(const sg_st_file *f, const char *name);

/* Releases f (unmaps when it was opened from a file). NULL is allowed. */
void sg_st_close(sg_st_file *f);

/* "F32", "F16", "BF16". */
const char *sg_st_dtype_name(sg_st_dtype t);
/* Bytes per element: 4, 2, 2. */
size_t sg_st_dtype_size(sg_st_dtype t);

/* Exact widening of IEEE binary16 and bfloat16 bit patterns to float (every value is representable, so no
 * rounding happens): subnormals, infinities and NaNs (payload kept) are handled. */
float sg_f16_to_f32(uint16_t h);
float sg_bf16_to_f32(uint16_t b);

/* Widens n little-endian elements of dtype t at src (any alignment) into dst: a copy for F32. */
void sg_st_widen(sg_st_dtype t, const uint8_t *src, float *dst, size_t n);

#ifdef __cplusplus
}
#endif
#endif
