/* cli/inputs.c — the streaming input enumerator (see inputs.h). */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"
#include "shown_path.h"

typedef struct dir_frame {
    char *dir;       /* path of this directory as it will prefix its entries */
    char **names;    /* sorted entry names */
    size_t n, next;
    dev_t dev;
    ino_t ino;
} dir_frame;

#define SKIP_KINDS 16 /* distinct extensions tallied by name; the rest are counted as "other" */

typedef struct skip_kind {
    char ext[16];     /* lower case, with its dot; "" = no extension */
    uint64_t n;
} skip_kind;

struct sg_cli_inputs {
    char **paths;
    int npaths, next_path;
    dir_frame *stack;
    int depth, cap;
    FILE **lists;     /* the --files-from lists, read one after the other */
    char **list_names;
    int nlists, next_list;
    int list_crlf;    /* the current list's line ends: -1 not seen yet, 1 CR LF (Windows), 0 LF */
    int list_start;   /* the current list's first record is next: a UTF-8 BOM before it is dropped */
    int nul_sep, all_files;
    char *line;
    size_t line_cap;
    skip_kind skipped[SKIP_KINDS];
    int nskip_kinds;
    uint64_t skipped_total, skipped_other;
};

/* Counts a file the walk leaves out, by its extension. */
static void count_skipped(sg_cli_inputs *it, const char *name) {
    const char *dot = strrchr(name, '.');
    char ext[16] = "";
    if (dot && dot != name) /* lower case, cut to 15 bytes; ".bashrc" has no extension */
        for (size_t i = 0; dot[i] && i < sizeof ext - 1; i++)
            ext[i] = (char)(dot[i] >= 'A' && dot[i] <= 'Z' ? dot[i] + 32 : dot[i]);
    it->skipped_total++;
    for (int i = 0; i < it->nskip_kinds; i++)
        if (strcmp(it->skipped[i].ext, ext) == 0) {
            it->skipped[i].n++;
            return;
        }
    if (it->nskip_kinds == SKIP_KINDS) {
        it->skipped_other++;
        return;
    }
    snprintf(it->skipped[it->nskip_kinds].ext, sizeof it->skipped[0].ext, "%s", ext);
    it->skipped[it->nskip_kinds++].n = 1;
}

uint64_t sg_cli_inputs_skipped(const sg_cli_inputs *it, char *summary, size_t len) {
    if (len) summary[0] = '\0';
    int order[SKIP_KINDS];
    for (int i = 0; i < it->nskip_kinds; i++) order[i] = i;
    for (int i = 1; i < it->nskip_kinds; i++) /* insertion sort, most frequent first */
        for (int j = i; j > 0; j--) {
            const skip_kind *a = &it->skipped[order[j - 1]], *b = &it->skipped[order[j]];
            int in_order = a->n > b->n || (a->n == b->n && (!b->ext[0] || (a->ext[0] && strcmp(a->ext, b->ext) <= 0)));
            if (in_order) break; /* ties by name, "no extension" last */
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t off = 0;
    for (int i = 0; i < it->nskip_kinds && off < len; i++) {
        const skip_kind *k = &it->skipped[order[i]];
        char shown[64];
        off += (size_t)snprintf(summary + off, len - off, "%s%s (%llu)", i ? ", " : "",
                                k->ext[0] ? sg_cli_shown_path(k->ext, shown, sizeof shown) : "no extension",
                                (unsigned long long)k->n);
    }
    if (it->skipped_other && off < len)
        snprintf(summary + off, len - off, ", other (%llu)", (unsigned long long)it->skipped_other);
    return it->skipped_total;
}

int sg_cli_is_image_name(const char *name) {
    /* The containers preprocess/ decodes: JPEG (libjpeg-turbo), GIF and binary PNM (P5/P6) (their own
     * decoders), TIFF and WebP (their own decoders), and PNG, BMP, TGA and PSD through stb_image. */
    static const char *const exts[] = {"jpg", "jpeg", "jpe", "jfif", "png", "bmp", "dib", "gif", "tga", "psd",
                                       "pnm", "ppm", "pgm", "tif", "tiff", "webp"};
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (strcasecmp(dot + 1, exts[i]) == 0) return 1;
    return 0;
}

sg_cli_inputs *sg_cli_inputs_open(char **paths, int npaths, char **lists, int nlists, int nul_sep, int all_files,
                                  char *err, size_t errlen) {
    sg_cli_inputs *it = sg_cli_xcalloc(1, sizeof *it);
    it->list_crlf = -1;
    it->list_start = 1;
    it->paths = paths;
    it->npaths = npaths;
    it->nul_sep = nul_sep;
    it->all_files = all_files;
    it->lists = sg_cli_xcalloc((size_t)(nlists > 0 ? nlists : 1), sizeof *it->lists);
    it->list_names = lists;
    for (int i = 0; i < nlists; i++) {
        it->lists[i] = strcmp(lists[i], "-") == 0 ? stdin : fopen(lists[i], "r");
        it->nlists = i + 1;
        if (!it->lists[i]) {
            char shown[4096];
            snprintf(err, errlen, "--files-from %s: %s", sg_cli_shown_path(lists[i], shown, sizeof shown),
                     strerror(errno));
            sg_cli_inputs_close(it);
            return NULL;
        }
    }
    return it;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = sg_cli_xmalloc(dl + slash + nl + 1);
    memcpy(p, dir, dl);
    if (slash) p[dl] = '/';
    memcpy(p + dl + slash, name, nl + 1);
    return p;
}

static char *xasprintf_err(const char *fmt, const char *a, const char *b) {
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *p = sg_cli_xmalloc(n);
    snprintf(p, n, fmt, a, b);
    return p;
}

/* Reads and sorts directory `dir` into a new frame on the stack. Returns NULL on success or a malloc'd
 * reason. */
static char *push_dir(sg_cli_inputs *it, const char *dir, const struct stat *st) {
    for (int i = 0; i < it->depth; i++)
        if (it->stack[i].dev == st->st_dev && it->stack[i].ino == st->st_ino) {
            sg_cli_buf shown = {0}; /* escaped as every path in a message (shown_path.h): one line, every byte seen */
            sg_cli_shown_path_put(&shown, it->stack[i].dir);
            char *r = xasprintf_err("directory loop: already inside %s%s", shown.p, "");
            sg_cli_buf_free(&shown);
            return r;
        }
    DIR *d = opendir(dir);
    if (!d) return xasprintf_err("cannot open directory: %s%s", strerror(errno), "");
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) SG_CLI_DIE("out of memory listing %s", dir);
            names = nn;
        }
        names[n++] = sg_cli_xstrdup(e->d_name);
    }
    int rerr = errno;
    closedir(d);
    if (rerr) {
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        return xasprintf_err("cannot read directory: %s%s", strerror(rerr), "");
    }
    if (n > 1) qsort(names, n, sizeof *names, cmp_names); /* an empty directory has no array: qsort(NULL) is UB */
    if (it->depth == it->cap) {
        it->cap = it->cap ? it->cap * 2 : 8;
        dir_frame *ns = realloc(it->stack, (size_t)it->cap * sizeof *ns);
        if (!ns) SG_CLI_DIE("out of memory");
        it->stack = ns;
    }
    dir_frame *f = &it->stack[it->depth++];
    f->dir = sg_cli_xstrdup(dir);
    f->names = names;
    f->n = n;
    f->next = 0;
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    return NULL;
}

static void pop_dir(sg_cli_inputs *it) {
    dir_frame *f = &it->stack[--it->depth];
    for (size_t i = f->next; i < f->n; i++) free(f->names[i]);
    free(f->names);
    free(f->dir);
}

static void set_input(sg_cli_input *in, char *path, char *error, int is_stdin) {
    in->path = path;
    in->error = error;
    in->is_stdin = is_stdin;
}

/* Why the walk cannot tell what `path` is (stat failed with errno e), malloc'd: the OS reason, and for a
 * symbolic link where it points, so that a link to a disk that is not mounted says so. */
static char *stat_failure(const char *path, int e) {
    sg_cli_buf b = {0};
    struct stat lst;
    char target[PATH_MAX];
    ssize_t n = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? readlink(path, target, sizeof target - 1) : -1;
    if (n >= 0) {
        target[n] = '\0';
        sg_cli_buf_puts(&b, "a symbolic link to ");
        sg_cli_shown_path_put(&b, target); /* the target is bytes from the disk: shown escaped, like paths */
        sg_cli_buf_puts(&b, e == ENOENT ? ", which does not exist" : ", which cannot be followed: ");
        if (e != ENOENT) sg_cli_buf_puts(&b, strerror(e));
    } else {
        sg_cli_buf_puts(&b, "cannot tell what it is: ");
        sg_cli_buf_puts(&b, strerror(e));
        if (e == ENAMETOOLONG) { /* a tree deeper than the system's path limit: this subtree is not walked */
            char lim[96];
            snprintf(lim, sizeof lim, " (the path is %zu bytes, the limit %d)", strlen(path), PATH_MAX);
            sg_cli_buf_puts(&b, lim);
        }
    }
    return b.p;
}

/* Next entry of the directory walk, if one is under way: 1 yielded, 0 walk finished. */
static int next_from_walk(sg_cli_inputs *it, sg_cli_input *in) {
    while (it->depth > 0) {
        dir_frame *f = &it->stack[it->depth - 1];
        if (f->next == f->n) {
            pop_dir(it);
            continue;
        }
        char *name = f->names[f->next++];
        char *path = join(f->dir, name);
        struct stat st;
        if (stat(path, &st) != 0) {
            /* Whatever its name, it may be a folder (a disk not mounted, a loop): it fails as an input,
             * never counted among the files skipped for their extension. */
            int e = errno;
            free(name);
            set_input(in, path, stat_failure(path, e), 0);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            free(name);
            char *why = push_dir(it, path, &st);
            if (why) {
                set_input(in, path, why, 0);
                return 1;
            }
            free(path);
            continue;
        }
        int wanted = it->all_files || sg_cli_is_image_name(name);
        if (!wanted) count_skipped(it, name);
        free(name);
        if (!wanted) {
            free(path);
            continue;
        }
        /* A FIFO, socket or device found in a tree would block or never end when read: report it instead
         * of opening it. (Operands are opened as given: `<(cmd)` is a pipe on purpose.) */
        char *why =
            S_ISREG(st.st_mode) ? NULL : sg_cli_xstrdup("not a regular file (FIFO, socket or device): not read");
        set_input(in, path, why, 0);
        return 1;
    }
    return 0;
}

int sg_cli_inputs_next(sg_cli_inputs *it, sg_cli_input *in, char *err, size_t errlen) {
    for (;;) {
        if (next_from_walk(it, in)) return 1;
        if (it->next_path < it->npaths) {
            const char *p = it->paths[it->next_path++];
            if (strcmp(p, "-") == 0) {
                set_input(in, sg_cli_xstrdup("-"), NULL, 1);
                return 1;
            }
            struct stat st;
            if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
                char *why = push_dir(it, p, &st);
                if (why) {
                    set_input(in, sg_cli_xstrdup(p), why, 0);
                    return 1;
                }
                continue;
            }
            set_input(in, sg_cli_xstrdup(p), NULL, 0);
            return 1;
        }
        if (it->next_list == it->nlists) return 0;
        FILE *list = it->lists[it->next_list];
        errno = 0;
        ssize_t n = getdelim(&it->line, &it->line_cap, it->nul_sep ? '\0' : '\n', list);
        if (n < 0) {
            if (ferror(list)) {
                char shown[4096];
                snprintf(err, errlen, "--files-from %s: read error: %s",
                         sg_cli_shown_path(it->list_names[it->next_list], shown, sizeof shown), strerror(errno));
                return -1;
            }
            it->next_list++; /* this list is done: on to the next */
            it->list_crlf = -1;
            it->list_start = 1;
            continue;
        }
        if (n > 0 && it->line[n - 1] == (it->nul_sep ? '\0' : '\n')) it->line[--n] = '\0';
        /* A list saved by Windows Notepad (and other editors) starts with a UTF-8 BOM: not part of the first path,
         * which would then fail as a file not found. (A first name that truly starts with U+FEFF can be listed as
         * ./NAME.) */
        size_t bom = it->list_start ? sg_cli_bom_len(it->line, (size_t)n) : 0;
        if (bom) {
            memmove(it->line, it->line + bom, (size_t)n - bom + 1); /* with its NUL */
            n -= (ssize_t)bom;
        }
        it->list_start = 0;
        /* A list written on Windows ends its lines with CR LF: there the CR is not part of the path. Its first
         * line says which kind of list this is, so in a plain LF list a file whose name ends in CR keeps it (and
         * is not taken for the file without it). */
        if (!it->nul_sep && it->list_crlf < 0) it->list_crlf = n > 0 && it->line[n - 1] == '\r';
        if (!it->nul_sep && it->list_crlf == 1 && n > 0 && it->line[n - 1] == '\r') it->line[--n] = '\0';
        if (n == 0) continue; /* blank lines (and an empty trailing record) are not inputs */
        if (strlen(it->line) != (size_t)n) {
            /* a NUL inside a newline-separated list: the list was made with -print0 but read without -0 */
            snprintf(err, errlen, "--files-from: entry contains a NUL byte (use -0 for find -print0 lists)");
            return -1;
        }
        struct stat st;
        if (stat(it->line, &st) == 0 && S_ISDIR(st.st_mode)) {
            char *why = push_dir(it, it->line, &st);
            if (why) {
                set_input(in, sg_cli_xstrdup(it->line), why, 0);
                return 1;
            }
            continue;
        }
        set_input(in, sg_cli_xstrdup(it->line), NULL, 0);
        return 1;
    }
}

void sg_cli_inputs_close(sg_cli_inputs *it) {
    if (!it) return;
    while (it->depth > 0) pop_dir(it);
    free(it->stack);
    for (int i = 0; i < it->nlists; i++)
        if (it->lists[i] && it->lists[i] != stdin) fclose(it->lists[i]);
    free(it->lists);
    free(it->line);
    free(it);
}
