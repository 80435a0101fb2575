/* kernel/backend.c — choosing a backend at run time, and the helpers shared by all backends.
 *
 * Policy for --backend auto: no usable GPU → cpu; compute capability 9.0 → sm90 (Hopper megakernel);
 * 10.x → sm100 (Blackwell megakernel); other GPUs from sm_80 on → cuda (portable path); older GPUs → cpu.
 * When the preferred GPU backend cannot be created (not built, not implemented, failed its self-check), auto
 * falls back to the next one down (sm90/sm100 → cuda → cpu) and says why. An explicit --backend never falls
 * back: it either runs what was asked or fails with the reason.
 *
 * Self-check (kernel/selfcheck.h): a megakernel that auto picks is first compared with the portable cuda path
 * on fixed inputs, once per device + binary + weights (the verdict is cached). On a disagreement auto warns on
 * stderr and uses the cuda backend built for the check. An explicit --backend sm90|sm100 runs no check (the
 * user asked for that kernel, e.g. to debug it), but warns when the cache holds a failed verdict for it.
 * SIGLIP2_TEST_BREAK_BACKEND wraps the named backends in a perturbing wrapper here, at creation, so that tests
 * can make a backend disagree through the real submit/collect path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"
#include "gpu.h"
#include "selfcheck.h"
#include "cpu/cpu_encoder.h"

static const char *const k_names[] = {"auto", "cpu", "cuda", "sm90", "sm100"};

int sg_backend_parse(const char *s, sg_backend_kind *out) {
    for (int i = 0; i < (int)(sizeof k_names / sizeof k_names[0]); i++) {
        if (strcmp(s, k_names[i]) == 0) {
            *out = (sg_backend_kind)i;
            return 0;
        }
    }
    return -1;
}

int sg_backend_parse_spec(const char *s, sg_backend_kind *out, sg_precision *prec) {
    char name[32];
    const char *colon = strchr(s, ':');
    const size_t n = colon ? (size_t)(colon - s) : strlen(s);
    if (n >= sizeof name) return -1;
    memcpy(name, s, n);
    name[n] = 0;
    *prec = SG_PRECISION_AUTO;
    if (colon && strcmp(colon + 1, "fp8") == 0) *prec = SG_PRECISION_FP8;
    else if (colon && strcmp(colon + 1, "bf16") == 0) *prec = SG_PRECISION_BF16;
    else if (colon) return -1;
    return sg_backend_parse(name, out);
}

/* The backends' own constructors (tests pass their own through sg_backend_create_with). */
static sg_backend *real_ctor(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, char *err,
                             size_t errlen) {
    switch (k) {
    case SG_BACKEND_CPU: return sg_cpu_backend_create(m, o, err, errlen);
    case SG_BACKEND_CUDA: return sg_cuda_backend_create(m, o, err, errlen);
    case SG_BACKEND_SM90: return sg_sm90_backend_create(m, o, err, errlen);
    case SG_BACKEND_SM100: return sg_sm100_backend_create(m, o, err, errlen);
    default: snprintf(err, errlen, "no such backend"); return NULL;
    }
}

/* ctor's backend k, inside the perturbing wrapper when SIGLIP2_TEST_BREAK_BACKEND names it. */
static sg_backend *create_kind(sg_backend_ctor ctor, sg_backend_kind k, const sg_model *m, const sg_backend_opts *o,
                               char *err, size_t errlen) {
    sg_backend *b = ctor(k, m, o, err, errlen);
    double amp = b ? sg_selfcheck_break_amplitude(k_names[k]) : 0;
    return amp > 0 ? sg_selfcheck_break_wrap(b, amp, err, errlen) : b;
}

static int is_megakernel(sg_backend_kind k) { return k == SG_BACKEND_SM90 || k == SG_BACKEND_SM100; }

/* The self-check cache key of megakernel k on device g for this run, and the cache folder. 0, or -1 when the
 * run cannot be identified (then the check runs and nothing is cached). */
static int selfcheck_key(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, const sg_gpu_info *g,
                         char *key, size_t keylen, char *dir, size_t dirlen) {
    char bin[1600], label[64];
    double amp = sg_selfcheck_break_amplitude(k_names[k]);
    if (amp > 0) snprintf(label, sizeof label, "%s+break%g", k_names[k], amp); /* never shares a broken verdict */
    else snprintf(label, sizeof label, "%s", k_names[k]);
    if (sg_selfcheck_cache_dir(dir, dirlen) != 0) return -1;
    if (sg_selfcheck_binary_id(bin, sizeof bin) != 0) return -1;
    return sg_selfcheck_key(g, bin, m, label, o->precision, o->max_batch, key, keylen);
}

typedef struct {
    sg_backend_ctor ctor;
    const sg_model *m;
    const sg_backend_opts *o;
} ref_ctx;

static sg_backend *make_cuda_ref(void *ctx, char *err, size_t errlen) {
    const ref_ctx *r = ctx;
    return create_kind(r->ctor, SG_BACKEND_CUDA, r->m, r->o, err, errlen);
}

static int selfcheck_verbose(void) {
    const char *v = getenv("SIGLIP2_SELFCHECK_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

/* Isolation of a first check. A megakernel that faults leaves this process's CUDA context unusable (every later
 * call fails, the portable fallback included), and one that hangs is stopped only by its ~2 s spin limit; so
 * when there is no cached verdict yet, the check runs in a child process: this binary with --info (which creates
 * the auto backend, runs the check in-process and caches the verdict) and SIGLIP2_SELFCHECK_CHILD=1. If the
 * child dies (a signal) or does not finish within SG_SELFCHECK_CHILD_S seconds, the parent caches a FAIL naming
 * how; then the parent reads the verdict. Returns 0 when the child ran (the cache now holds a verdict, or the
 * child found the check could not run), -1 when no child could be started (the caller checks in-process). */
#define SG_SELFCHECK_CHILD_S 300
static int selfcheck_in_child(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o, const char *dir,
                              const char *key, double tol) {
    char exe[4096], dev[16], batch[16];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || !m->path[0]) return -1;
    exe[len] = 0;
    snprintf(dev, sizeof dev, "%d", o->device);
    snprintf(batch, sizeof batch, "%d", o->max_batch > 0 ? o->max_batch : 1);
    const char *prec = o->precision == SG_PRECISION_BF16 ? "bf16" : o->precision == SG_PRECISION_FP8 ? "fp8" : NULL;
    char *argv[16];
    int a = 0;
    argv[a++] = exe;
    argv[a++] = "--info";
    argv[a++] = "--weights";
    argv[a++] = (char *)m->path;
    argv[a++] = "--device";
    argv[a++] = dev;
    argv[a++] = "--batch";
    argv[a++] = batch;
    if (prec) {
        argv[a++] = "--precision";
        argv[a++] = (char *)prec;
    }
    argv[a] = NULL;
    extern char **environ;
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **envp = calloc(ne + 2, sizeof *envp);
    if (!envp) return -1;
    for (size_t i = 0; i < ne; i++) envp[i] = environ[i];
    envp[ne] = "SIGLIP2_SELFCHECK_CHILD=1";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (!selfcheck_verbose()) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (rc != 0) return -1;
    int status = 0, waited = 0;
    for (int ms = 0; ms < SG_SELFCHECK_CHILD_S * 1000; ms += 20) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            waited = 1;
            break;
        }
        if (w < 0 && errno != EINTR) return -1;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!waited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    sg_selfcheck_result r;
    char note[1024];
    if (sg_selfcheck_cache_load(dir, key, &r, note, sizeof note)) return 0; /* the child's verdict */
    if (waited && WIFEXITED(status)) return 0; /* ran, but the check could not run: the caller tries in-process */
    memset(&r, 0, sizeof r);
    r.verdict = SG_SELFCHECK_FAIL;
    r.worst_image = -1;
    r.tolerance = tol;
    if (!waited)
        snprintf(r.reason, sizeof r.reason, "the check did not finish within %d s in a child process (killed)",
                 SG_SELFCHECK_CHILD_S);
    else
        snprintf(r.reason, sizeof r.reason, "the check crashed in a child process (signal %d: %s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    char err[512];
    if (sg_selfcheck_cache_store(dir, key, &r, err, sizeof err) != 0)
        fprintf(stderr, "siglip2-embed: warning: %s self-check: %s; %s\n", k_names[k], r.reason, err);
    return 0;
}

/* Runs (or looks up) megakernel cand's self-check for auto; returns the backend to use (cand, the cuda
 * reference after a failure, or NULL when the check could not run) and fills r. */
static sg_backend *vet_megakernel(sg_backend_ctor ctor, sg_backend *cand, sg_backend_kind k, const sg_model *m,
                                  const sg_backend_opts *o, const sg_gpu_info *g, sg_selfcheck_result *r) {
    char key[8192], dir[4096];
    int keyed = selfcheck_key(k, m, o, g, key, sizeof key, dir, sizeof dir) == 0;
    ref_ctx rc = {ctor, m, o};
    sg_selfcheck_ctx c = {keyed ? dir : NULL, keyed ? key : NULL, sg_selfcheck_mode_from_env(),
                          sg_selfcheck_tolerance(k, o->precision), make_cuda_ref, &rc};
    const int child = getenv("SIGLIP2_SELFCHECK_CHILD") != NULL;
    int by_child = 0; /* the verdict read below was just written by the child process */
    if (keyed && !child && ctor == real_ctor && c.mode != SG_SELFCHECK_OFF) {
        sg_selfcheck_result prev;
        char note[1024];
        if (c.mode == SG_SELFCHECK_ALWAYS || !sg_selfcheck_cache_load(dir, key, &prev, note, sizeof note))
            if (selfcheck_in_child(k, m, o, dir, key, c.tolerance) == 0) {
                c.mode = SG_SELFCHECK_CACHED;
                by_child = 1;
            }
    }
    sg_backend *b = sg_selfcheck_vet(cand, &c, r);
    const char *how = !r->cached ? "" : by_child ? " (checked in a child process)" : " (cached)";
    if (child && keyed && r->verdict == SG_SELFCHECK_ERROR) {
        /* In the child an error from the check is what a faulting kernel looks like (the context is now
         * unusable): record it as a failure so the parent does not repeat it in its own context. */
        sg_selfcheck_result f = *r;
        char err[512];
        f.verdict = SG_SELFCHECK_FAIL;
        snprintf(f.reason, sizeof f.reason, "error during the check: %.400s", r->reason);
        if (sg_selfcheck_cache_store(dir, key, &f, err, sizeof err) != 0)
            fprintf(stderr, "siglip2-embed: %s\n", err);
    }
    static const char *const verdicts[] = {"passed", "FAILED", "could not run", "skipped"};
    if (selfcheck_verbose())
        fprintf(stderr, "siglip2-embed: self-check of %s against cuda: %s%s (%s; %.3f s); %s\n", k_names[k],
                verdicts[r->verdict], how, r->reason, r->seconds, r->cache_note);
    if (r->verdict == SG_SELFCHECK_FAIL)
        fprintf(stderr, "siglip2-embed: warning: the %s megakernel failed its self-check against the portable "
                        "cuda path (%s)%s; using the cuda backend (SIGLIP2_SELFCHECK=always checks again, "
                        "--backend %s forces it)\n", k_names[k], r->reason,
                r->cached ? (by_child ? ", checked in a child process" : ", cached verdict") : "",
                k_names[k]);
    if (by_child) r->cached = 0; /* the check ran for this run, in the child: not an earlier verdict */
    return b;
}

/* For an explicit --backend sm90|sm100 on device g: a warning when the cache holds a failed verdict for this run. */
static void warn_if_failed_before(sg_backend_kind k, const sg_model *m, const sg_backend_opts *o,
                                  const sg_gpu_info *g) {
    char key[8192], dir[4096], note[1024];
    sg_selfcheck_result r;
    if (selfcheck_key(k, m, o, g, key, sizeof key, dir, sizeof dir) != 0) return;
    if (sg_selfcheck_cache_load(dir, key, &r, note, sizeof note) && r.verdict == SG_SELFCHECK_FAIL)
        fprintf(stderr, "siglip2-embed: warning: %s failed its self-check on this GPU before (%s; %s); running it "
                        "anyway because --backend %s was given\n", k_names[k], r.reason, r.cache_note, k_names[k]);
}

/* The backend auto prefers for a device of this compute capability, and a sentence saying why. */
static sg_backend_kind preferred_kind(const sg_gpu_info *g, char *why, size_t whylen) {
    if (g->cc_major == 9 && g->cc_minor == 0) {
        snprintf(why, whylen, "%s is sm_90 (Hopper): Hopper megakernel (the whole forward in one launch)", g->name);
        return SG_BACKEND_SM90;
    }
    if (g->cc_major == 10) {
        snprintf(why, whylen, "%s is sm_%d%d (Blackwell): Blackwell megakernel", g->name, g->cc_major,
                 g->cc_minor);
        return SG_BACKEND_SM100;
    }
    if (g->cc_major >= 8) {
        snprintf(why, whylen, "%s is sm_%d%d: portable CUDA path", g->name, g->cc_major, g->cc_minor);
        return SG_BACKEND_CUDA;
    }
    snprintf(why, whylen, "%s is sm_%d%d, older than sm_80: CPU reference", g->name, g->cc_major, g->cc_minor);
    return SG_BACKEND_CPU;
}

sg_backend *sg_backend_create(const sg_model *m, const sg_backend_opts *o, char *why, size_t whylen, char *err,
                              size_t errlen) {
    sg_gpu_info g;
    char gerr[512] = "";
    /* --backend cpu / cuda need no device query here (cuda makes its own): skip the driver start-up cost */
    int need_gpu = o->kind == SG_BACKEND_AUTO || is_megakernel(o->kind);
    int have_gpu = need_gpu && sg_gpu_query(o->device, &g, gerr, sizeof gerr) == 0;
    return sg_backend_create_with(m, o, have_gpu ? &g : NULL, gerr, real_ctor, why, whylen, err, errlen);
}

sg_backend *sg_backend_create_with(const sg_model *m, const sg_backend_opts *o, const sg_gpu_info *gpu,
                                   const char *gpu_err, sg_backend_ctor ctor, char *why, size_t whylen, char *err,
                                   size_t errlen) {
    if (o->kind != SG_BACKEND_AUTO) {
        snprintf(why, whylen, "backend '%s' asked for with --backend", k_names[o->kind]);
        sg_backend *b = create_kind(ctor, o->kind, m, o, err, errlen);
        if (b && gpu && is_megakernel(o->kind)) warn_if_failed_before(o->kind, m, o, gpu);
        return b;
    }
    if (!gpu) {
        snprintf(why, whylen, "no usable GPU (%s): CPU reference", gpu_err);
        return create_kind(ctor, SG_BACKEND_CPU, m, o, err, errlen);
    }
    const sg_gpu_info g = *gpu;
    char pref_why[512];
    sg_backend_kind k = preferred_kind(&g, pref_why, sizeof pref_why);
    char fallback[1536] = "";
    for (;;) {
        char kerr[1024];
        sg_backend *b = create_kind(ctor, k, m, o, kerr, sizeof kerr);
        if (b && is_megakernel(k)) {
            sg_selfcheck_result r;
            b = vet_megakernel(ctor, b, k, m, o, &g, &r);
            size_t used = strlen(fallback);
            if (r.verdict == SG_SELFCHECK_FAIL) {
                snprintf(fallback + used, sizeof fallback - used, "; %s failed its self-check (%s%s), using cuda",
                         k_names[k], r.reason, r.cached ? ", cached" : "");
                if (b) {
                    snprintf(why, whylen, "%s%s", pref_why, fallback);
                    return b;
                }
                k = SG_BACKEND_CUDA; /* the reference could not be rebuilt: the usual chain from cuda */
                continue;
            }
            if (r.verdict == SG_SELFCHECK_ERROR) {
                snprintf(kerr, sizeof kerr, "its self-check could not run: %s", r.reason);
            } else if (r.verdict == SG_SELFCHECK_SKIPPED) {
                snprintf(fallback + used, sizeof fallback - used, "; self-check skipped (SIGLIP2_SELFCHECK=off)");
            } else {
                snprintf(fallback + used, sizeof fallback - used, "; self-check passed%s (worst cosine %.6f to cuda)",
                         r.cached ? " (cached)" : "", r.worst_cos);
            }
        }
        if (b) {
            snprintf(why, whylen, "%s%s", pref_why, fallback);
            return b;
        }
        if (k == SG_BACKEND_CPU) {
            snprintf(err, errlen, "%s", kerr);
            return NULL;
        }
        size_t used = strlen(fallback);
        snprintf(fallback + used, sizeof fallback - used, "; %s unavailable (%s)", k_names[k], kerr);
        k = is_megakernel(k) ? SG_BACKEND_CUDA : SG_BACKEND_CPU;
        used = strlen(fallback);
        snprintf(fallback + used, sizeof fallback - used, ", using %s", k_names[k]);
    }
}

int sg_backend_embed(sg_backend *b, const uint8_t *pixels, int n, float *out, char *err, size_t errlen) {
    if (b->submit(b, pixels, n, err, errlen) != 0) return -1;
    return b->collect(b, out, err, errlen);
}

void sg_backend_destroy(sg_backend *b) {
    if (b) b->destroy(b);
}

void sg_backend_describe(const sg_model *m, const sg_backend_opts *o, char *out, size_t outlen) {
    sg_gpu_info g;
    char gerr[512], why[512];
    size_t n = 0;
#define APPEND(...) n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, __VA_ARGS__)
    APPEND("CUDA support compiled in: %s\n", sg_gpu_compiled() ? "yes" : "no");
    if (sg_gpu_query(o->device, &g, gerr, sizeof gerr) != 0) {
        APPEND("GPU: none usable (%s)\n", gerr);
        APPEND("backend (auto): cpu, because there is no usable GPU\n");
    } else {
        APPEND("GPUs visible: %d\n", g.device_count);
        APPEND("GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", o->device, g.name, g.cc_major,
               g.cc_minor, g.sm_count, (double)g.total_mem / (1024.0 * 1024.0 * 1024.0));
        APPEND("CUDA driver %d.%d, runtime %d.%d\n", g.driver_version / 1000, (g.driver_version % 1000) / 10,
               g.runtime_version / 1000, (g.runtime_version % 1000) / 10);
        sg_backend_kind k = preferred_kind(&g, why, sizeof why);
        APPEND("backend (auto): %s, because %s\n", k_names[k], why);
        if (k == SG_BACKEND_SM90 || k == SG_BACKEND_SM100)
            APPEND("  (if %s cannot be created here, auto falls back to cuda, then cpu; with weights, the line "
                   "'backend chosen' says which ran)\n", k_names[k]);
        if (is_megakernel(k) && m) {
            char key[8192], dir[4096], note[1024];
            sg_selfcheck_result r;
            if (selfcheck_key(k, m, o, &g, key, sizeof key, dir, sizeof dir) != 0)
                APPEND("self-check of %s: runs every time (no cache folder, or the binary or weights cannot be "
                       "identified)\n", k_names[k]);
            else if (sg_selfcheck_cache_load(dir, key, &r, note, sizeof note))
                APPEND("self-check of %s: %s earlier (%s; %s)\n", k_names[k],
                       r.verdict == SG_SELFCHECK_PASS ? "passed" : "FAILED", r.reason, r.cache_note);
            else
                APPEND("self-check of %s: not run yet for this GPU, binary, weights and batch size (%s)\n",
                       k_names[k], note);
        }
    }
    if (m) {
        const sg_config *c = &m->cfg;
        APPEND("model: %s\n", m->path);
        APPEND("  hidden %d, mlp %d, heads %d, layers %d, image %d, patch %d (%d tokens)\n", c->hidden_size,
               c->intermediate_size, c->num_heads, c->num_layers, c->image_size, c->patch_size,
               sg_config_tokens(c));
    }
#undef APPEND
}
