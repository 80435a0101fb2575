/* weights/locate.c — sg_weights_locate: where the weights are when the user did not say (model_load.h).
 *
 * Order: --weights PATH, then $SIGLIP2_WEIGHTS, then the Hugging Face hub cache as huggingface_hub lays it
 * out: <hub>/models--google--siglip2-base-patch16-224/snapshots/<commit>/{config.json,model.safetensors},
 * with <hub> = $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub. Among snapshots, the one refs/main names wins; otherwise the first (by name)
 * whose weights file exists (the files are symlinks into blobs/, so a partial download shows as missing).
 * An explicit path that does not exist is an error, not a reason to fall back: the user asked for it.
 */
#include "model_load.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LOC_REPO "models--google--siglip2-base-patch16-224"
#define LOC_HOWTO                                                                                                      \
    "to get the weights (about 1.5 GB), run one of:\n"                                                                 \
    "  scripts/fetch-weights.sh\n"                                                                                     \
    "  huggingface-cli download google/siglip2-base-patch16-224   (or: hf download ...)\n"                             \
    "or pass --weights PATH (a directory with config.json + model.safetensors, or a .safetensors file),\n"             \
    "or set SIGLIP2_WEIGHTS=PATH."

static int loc_exists(const char *p) {
    struct stat sb;
    return !stat(p, &sb);
}

static int loc_is_file(const char *p) {
    struct stat sb;
    return !stat(p, &sb) && S_ISREG(sb.st_mode);
}

/* A snapshot directory is usable when its weights file resolves (following the blob symlink). */
static int loc_snapshot_ok(const char *dir) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/model.safetensors", dir) >= (int)sizeof p) return 0;
    if (loc_is_file(p)) return 1;
    if (snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir) >= (int)sizeof p) return 0;
    return loc_is_file(p);
}

static int loc_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Finds a usable snapshot under hub; writes it into out. Writes what was seen into why. */
static int loc_hf(const char *hub, char *out, size_t outlen, char *why, size_t whylen) {
    char repo[4096], p[4096];
    if (snprintf(repo, sizeof repo, "%s/" LOC_REPO, hub) >= (int)sizeof repo) {
        snprintf(why, whylen, "path too long");
        return -1;
    }
    /* refs/main holds the commit hash of the snapshot huggingface_hub last resolved for "main". */
    snprintf(p, sizeof p, "%s/refs/main", repo);
    FILE *fp = fopen(p, "r");
    if (fp) {
        char ref[128] = "";
        size_t n = fread(ref, 1, sizeof ref - 1, fp);
        fclose(fp);
        ref[n] = 0;
        while (n && (ref[n - 1] == '\n' || ref[n - 1] == ' ' || ref[n - 1] == '\r'))
            ref[--n] = 0;
        if (n && !strchr(ref, '/') && strcmp(ref, "..") && strcmp(ref, ".") &&
            snprintf(p, sizeof p, "%s/snapshots/%s", repo, ref) < (int)sizeof p && loc_snapshot_ok(p) &&
            strlen(p) < outlen) {
            snprintf(out, outlen, "%s", p);
            return 0;
        }
    }
    snprintf(p, sizeof p, "%s/snapshots", repo);
    DIR *d = opendir(p);
    if (!d) {
        snprintf(why, whylen, "%s", loc_exists(repo) ? "no snapshots/ directory" : "not present");
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, loc_cmp);
    int rc = -1;
    for (size_t i = 0; i < n && rc; i++) {
        char s[4096];
        if (snprintf(s, sizeof s, "%s/snapshots/%s", repo, names[i]) < (int)sizeof s && loc_snapshot_ok(s) &&
            strlen(s) < outlen) {
            snprintf(out, outlen, "%s", s);
            rc = 0;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc)
        snprintf(why, whylen, "%s", n ? "no snapshot holds model.safetensors (incomplete download?)" : "no snapshots");
    return rc;
}

/* The hub cache directory per huggingface_hub's rules; returns where it came from. */
static const char *loc_hub_dir(char *hub, size_t len) {
    const char *v;
    if ((v = getenv("HF_HUB_CACHE")) && *v) {
        snprintf(hub, len, "%s", v);
        return "$HF_HUB_CACHE";
    }
    /* the older name huggingface_hub still honours */
    if ((v = getenv("HUGGINGFACE_HUB_CACHE")) && *v) {
        snprintf(hub, len, "%s", v);
        return "$HUGGINGFACE_HUB_CACHE";
    }
    if ((v = getenv("HF_HOME")) && *v) {
        snprintf(hub, len, "%s/hub", v);
        return "$HF_HOME/hub";
    }
    if ((v = getenv("XDG_CACHE_HOME")) && *v) {
        snprintf(hub, len, "%s/huggingface/hub", v);
        return "$XDG_CACHE_HOME/huggingface/hub";
    }
    v = getenv("HOME");
    snprintf(hub, len, "%s/.cache/huggingface/hub", v && *v ? v : "~");
    return "~/.cache/huggingface/hub";
}

int sg_weights_locate(const char *explicit_path, char *out, size_t outlen, char *err, size_t errlen) {
    char hub[4096], why[256] = "";
    if (err && errlen) err[0] = 0;
    if (explicit_path && *explicit_path) {
        if (loc_exists(explicit_path) && strlen(explicit_path) < outlen) {
            snprintf(out, outlen, "%s", explicit_path);
            return 0;
        }
        snprintf(err, errlen, "no SigLIP2 weights at --weights %s: no such file or directory\n" LOC_HOWTO,
                 explicit_path);
        return -1;
    }
    const char *env = getenv("SIGLIP2_WEIGHTS");
    if (env && *env) {
        if (loc_exists(env) && strlen(env) < outlen) {
            snprintf(out, outlen, "%s", env);
            return 0;
        }
        snprintf(err, errlen, "no SigLIP2 weights at $SIGLIP2_WEIGHTS=%s: no such file or directory\n" LOC_HOWTO, env);
        return -1;
    }
    const char *src = loc_hub_dir(hub, sizeof hub);
    if (!loc_hf(hub, out, outlen, why, sizeof why)) return 0;
    snprintf(err, errlen,
             "no SigLIP2 weights found. Looked in, in order:\n"
             "  1. --weights PATH: not given\n"
             "  2. $SIGLIP2_WEIGHTS: not set\n"
             "  3. the Hugging Face cache (%s): %s/" LOC_REPO "/snapshots/*/model.safetensors: %s\n" LOC_HOWTO,
             src, hub, why);
    return -1;
}
