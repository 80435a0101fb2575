/* kernel/selfcheck.h — the runtime self-check that guards the megakernel backends (sm90, sm100).
 *
 * Before `--backend auto` trusts a megakernel on a device, it embeds a fixed set of synthetic images with the
 * megakernel and with the portable path (the `cuda` backend) and compares the pooled embeddings per image. A
 * disagreement makes auto fall back to the portable path and say why. The verdict is cached per device, binary,
 * weights, backend and precision in a small text file, so only the first run pays for it. kernel/backend.c
 * calls sg_selfcheck_vet; the pieces below it are public so that tests can drive each one with explicit cache
 * directories, keys and stand-in backends (the cpu backend plays both sides in tests/test_selfcheck.c).
 *
 * Environment:
 *   SIGLIP2_SELFCHECK=always|off       rerun ignoring the cache | skip the check (unsafe); default: use the cache
 *                                      (sg_selfcheck_mode_from_env)
 *   SIGLIP2_CACHE_DIR, XDG_CACHE_HOME, HOME   where the verdicts live, first one set wins (sg_selfcheck_cache_dir)
 *   SIGLIP2_TEST_BREAK_BACKEND=NAME[:AMPLITUDE][,NAME...]   tests only: perturb that backend's outputs
 *                                      (sg_selfcheck_break_amplitude, applied by kernel/backend.c)
 *   SIGLIP2_SELFCHECK_VERBOSE=1        kernel/backend.c prints one stderr line saying what the check did
 */
#ifndef SG_SELFCHECK_H
#define SG_SELFCHECK_H

#include <stddef.h>
#include <stdint.h>
#include "backend.h"
#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The batches the check submits: image 0 alone (the batch-1 code path), then images 1..k in one batch with
 * k = min(max_batch, SG_SELFCHECK_BIG_BATCH), both in flight before either is collected, as the pipeline does.
 * 32 is the CLI's default --batch, and at S = 224 it is 6,272 token rows: several waves of GEMM tiles on a
 * 132-SM H100, so tile scheduling, partial tiles and multi-image attention are all exercised. */
#define SG_SELFCHECK_BIG_BATCH 32
/* Version of the input set and of the comparison; part of every cache key, so changing either reruns checks. */
#define SG_SELFCHECK_VERSION 1
/* Relative amplitude of SIGLIP2_TEST_BREAK_BACKEND's perturbation when none is given: cosine 1/sqrt(1+0.25)
 * ≈ 0.894 to the unbroken output, far below every tolerance, the way a real kernel bug usually looks. */
#define SG_SELFCHECK_BREAK_DEFAULT 0.5
/* SIGLIP2_TEST_BREAK_BACKEND=NAME:crash: the wrapper aborts the process at its first collect, as a kernel fault
 * that leaves the CUDA context unusable would end the run (tests the child-process isolation in backend.c). */
#define SG_SELFCHECK_BREAK_CRASH 1e9

typedef enum {
    SG_SELFCHECK_PASS = 0,   /* every image agreed within tolerance */
    SG_SELFCHECK_FAIL,       /* some image disagreed, or the candidate wrote non-finite values */
    SG_SELFCHECK_ERROR,      /* the check could not run (a backend returned an error): not cached */
    SG_SELFCHECK_SKIPPED     /* SIGLIP2_SELFCHECK=off */
} sg_selfcheck_verdict;

typedef enum { SG_SELFCHECK_CACHED = 0, SG_SELFCHECK_ALWAYS, SG_SELFCHECK_OFF } sg_selfcheck_mode;

typedef struct sg_selfcheck_result {
    sg_selfcheck_verdict verdict;
    int images;              /* images compared */
    int worst_image;         /* index in the fixed set of the image with the lowest cosine (-1: none) */
    double worst_cos;        /* its cosine */
    double worst_norm_ratio; /* |candidate| / |reference| furthest from 1, over all images */
    double tolerance;        /* the cosine gate used */
    double seconds;          /* time the comparison took (0 when read from the cache) */
    int cached;              /* 1: the verdict came from the cache file, no embedding was run */
    char reason[512];        /* one line: the worst image, its cosine, the tolerance; or what went wrong */
    char cache_note[1024];   /* one line: which cache file was read or written, or why none was */
} sg_selfcheck_result;

/* Writes image i (i >= 0) of the fixed self-check set: S x S x 3 bytes, HWC RGB, as preprocess/ makes them.
 * Smooth per-image colour gradients, blocky and striped texture, a few discs and per-pixel noise, from a
 * fixed-seed integer PRNG: the same bytes on every machine and compiler, no libm. */
void sg_selfcheck_image(int i, int S, uint8_t *out);

/* The cosine gate for a megakernel `kind` run at `precision` against the bf16 portable path (the why of each
 * number is beside it in selfcheck.c). */
double sg_selfcheck_tolerance(sg_backend_kind kind, sg_precision precision);

/* Embeds the fixed set with cand and ref (same model, both idle) and compares per image: finite values, cosine
 * >= tol, and |cand| / |ref| within 1 ± sqrt(2 (1 - tol)) (the length error a rotation at the gate would
 * give; cosine alone would let a scaled output through). Fills r (verdict PASS, FAIL or ERROR, reason) and
 * returns r->verdict. Leaves both backends idle and usable. */
sg_selfcheck_verdict sg_selfcheck_compare(sg_backend *cand, sg_backend *ref, double tol, sg_selfcheck_result *r);

/* --- cache */

/* The cache folder: $SIGLIP2_CACHE_DIR, else $XDG_CACHE_HOME/siglip2-embed (when absolute), else
 * $HOME/.cache/siglip2-embed. 0, or -1 when none can be named (out is then ""). Creates nothing. */
int sg_selfcheck_cache_dir(char *out, size_t outlen);

/* Identity of the running program: path, size, mtime (ns), inode and device of /proc/self/exe. -1 if unknown. */
int sg_selfcheck_binary_id(char *out, size_t outlen);

/* The cache key, one line: device (name, compute capability, UUID, PCI bus id, driver), binary identity,
 * weights (path, size, mtime, inode of m->path and the config's shapes), backend label (e.g. "sm90", or
 * "sm90+break0.5" when the test wrapper is on), precision, the check's batch sizes and SG_SELFCHECK_VERSION.
 * Control characters in names become '?'. -1 when the weights file cannot be stat'ed (then nothing is cached). */
int sg_selfcheck_key(const sg_gpu_info *g, const char *binary_id, const sg_model *m, const char *backend_label,
                     sg_precision precision, int max_batch, char *out, size_t outlen);

/* The cache file for key in dir: dir/selfcheck-<64-bit FNV-1a of key, hex>.txt. */
void sg_selfcheck_cache_path(const char *dir, const char *key, char *out, size_t outlen);

/* Reads the verdict for key from dir. 1 on a hit (r filled, r->cached = 1, verdict PASS or FAIL); 0 on a miss,
 * including an unreadable, corrupt, or other-key file (why in note, when note is not NULL). Never fails. */
int sg_selfcheck_cache_load(const char *dir, const char *key, sg_selfcheck_result *r, char *note, size_t notelen);

/* Writes r's verdict (PASS or FAIL only) for key into dir, creating dir (and missing parents, mode 0700) if
 * needed; written to a temporary file in dir and renamed over the final name, so readers never see half a file.
 * 0, or -1 with the reason in err. */
int sg_selfcheck_cache_store(const char *dir, const char *key, const sg_selfcheck_result *r, char *err,
                             size_t errlen);

/* --- policy */

/* SIGLIP2_SELFCHECK: unset, "" or "auto" → CACHED; "always" → ALWAYS; "off" → OFF. Anything else → CACHED,
 * with a one-line warning to stderr. */
sg_selfcheck_mode sg_selfcheck_mode_from_env(void);

/* Creates the reference backend (the portable path) for sg_selfcheck_vet: NULL + err when it cannot. */
typedef sg_backend *(*sg_selfcheck_make_fn)(void *ctx, char *err, size_t errlen);

typedef struct sg_selfcheck_ctx {
    const char *cache_dir;          /* NULL or "": nothing is cached */
    const char *key;                /* NULL: nothing is cached */
    sg_selfcheck_mode mode;
    double tolerance;
    sg_selfcheck_make_fn make_ref;
    void *make_ref_ctx;
} sg_selfcheck_ctx;

/* Decides whether candidate `cand` may be used, and returns the backend to use; fills r.
 *   mode OFF: returns cand unchecked (verdict SKIPPED).
 *   cached PASS (mode CACHED): returns cand; no reference is created.
 *   cached FAIL (mode CACHED): destroys cand, returns a fresh reference (NULL if that fails).
 *   otherwise runs sg_selfcheck_compare against a fresh reference and caches PASS/FAIL (a cache that cannot be
 *   written only adds a line to r->cache_note): PASS → destroys the reference, returns cand; FAIL → destroys
 *   cand, returns the reference, which has just been used and is idle; ERROR → destroys both, returns NULL.
 * The caller tells PASS/SKIPPED (got cand back) from FAIL (got the reference) by r->verdict. */
sg_backend *sg_selfcheck_vet(sg_backend *cand, const sg_selfcheck_ctx *c, sg_selfcheck_result *r);

/* --- kernel/backend.c's policy with its inputs exposed, for tests */

/* Makes backend k (not SG_BACKEND_AUTO) for model m: NULL + err when it cannot. */
typedef sg_backend *(*sg_backend_ctor)(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, char *err,
                                       size_t errlen);

/* sg_backend_create (kernel/backend.h) with the device and the constructors given: gpu is the queried device, or
 * NULL when there is none (gpu_err says why); ctor makes each backend. sg_backend_create is this with
 * sg_gpu_query and the real constructors; tests pass a fake sm_90 / sm_100 device whose "sm90", "sm100" and
 * "cuda" are cpu backends, to drive the auto path, its self-check, fallback, cache and warnings without a GPU.
 * Implemented in kernel/backend.c. */
sg_backend *sg_backend_create_with(const sg_model *m, const sg_backend_opts *opts, const sg_gpu_info *gpu,
                                   const char *gpu_err, sg_backend_ctor ctor, char *why, size_t whylen, char *err,
                                   size_t errlen);

/* --- fault injection for tests */

/* The perturbation amplitude SIGLIP2_TEST_BREAK_BACKEND asks for backend `name` ("sm90:0.05,sm100" gives
 * 0.05 for sm90, SG_SELFCHECK_BREAK_DEFAULT for sm100), 0 when it names no such backend. A malformed
 * amplitude gives the default, with a warning to stderr. */
double sg_selfcheck_break_amplitude(const char *name);

/* Wraps inner (taking ownership) in a backend with the same name, dim, image size and max batch whose collect
 * adds amplitude * rms(row) * (±1, a fixed pseudo-random sign per dimension) to every output row: a real
 * disagreement through the real submit/collect path, cosine ≈ 1/sqrt(1 + amplitude²). NULL + err (inner
 * destroyed) when out of memory. */
sg_backend *sg_selfcheck_break_wrap(sg_backend *inner, double amplitude, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
