/* cli/writer.c — JSON, JSONL, npy, fbin, fvecs and f32 writers (formats in writer.h). */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "buf.h"
#include "json_text.h"
#include "our_output.h"
#include "outpath.h"
#include "shown_path.h"

/* Total size of the npy preamble (magic, version, header length, header, padding, '\n'): the header for
 * the largest N fits in 128 bytes, and 128 is a multiple of 64 as format 1.0 requires for alignment. */
#define NPY_PREAMBLE 128

struct sg_cli_writer {
    sg_cli_writer_cfg cfg;
    FILE *f, *paths;
    char *shown;       /* -o as messages show it (shown_path.h), or "stdout" */
    char *final_path, *tmp_path; /* REPLACE mode (a binary format or JSON to a regular file), else NULL */
    char *final_paths, *tmp_paths; /* ... and the list of a binary format's rows, else NULL */
    int tmp_locks[2];  /* descriptors holding flock()s on the temporaries until they are renamed (-1: none), so
                          another run's cleanup (outpath.h) never takes them for a dead run's, whatever its PID */
    int target_locks[2]; /* REPLACE mode: flock()s on the FILE and FILE.paths that existed when the run started,
                            held to the rename, so that no other run writes them meanwhile (-1: none) */
    char *shown_paths; /* FILE.paths as messages show it */
    char *lazy_path;   /* JSONL over an existing regular file: opened (truncated) at the first row, so a run that
                          writes no row leaves the file as it was */
    int target_existed; /* REPLACE mode: -o named an existing regular file */
    int to_stdout;
    uint64_t rows;
    sg_cli_buf line;
    float *nan_row;
    float *le_row; /* rows converted to little-endian on big-endian hosts */
    sg_cli_buf extra; /* the zero-shot labels of the row being written */
    double *scores;   /* [labels] */
    int *top;         /* [top_k] */
    char errbuf[256];
};

static int is_binary(sg_cli_format f) { return f >= SG_FMT_NPY; }

/* Ctrl-C (or SIGTERM from a scheduler) during a run writing temporaries: remove them, then die of the signal as
 * usual. The names are copied to static storage because only async-signal-safe calls (unlink, signal, raise) may
 * run in the handler. One such writer exists per process. A signal the process was started with ignored (nohup,
 * a background job of a script) stays ignored: the run was meant to outlive it. */
static char g_tmp_main[4096], g_tmp_paths[4096];

static void on_fatal_signal(int sig) {
    if (g_tmp_main[0]) unlink(g_tmp_main);
    if (g_tmp_paths[0]) unlink(g_tmp_paths);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_unless_ignored(int sig) {
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    signal(sig, on_fatal_signal);
}

static void guard_tmp_files(const char *a, const char *b) {
    snprintf(g_tmp_main, sizeof g_tmp_main, "%s", a ? a : "");
    snprintf(g_tmp_paths, sizeof g_tmp_paths, "%s", b ? b : "");
    if (!a) return;
    catch_unless_ignored(SIGINT);
    catch_unless_ignored(SIGTERM);
    catch_unless_ignored(SIGHUP);
}

static char *cat3(const char *a, const char *b, long n) {
    size_t len = strlen(a) + strlen(b) + 32;
    char *p = sg_cli_xmalloc(len);
    if (n >= 0) snprintf(p, len, "%s%s%ld", a, b, n);
    else snprintf(p, len, "%s%s", a, b);
    return p;
}

static void put_u32le(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* The npy preamble for shape (rows, dim), padded with spaces to exactly NPY_PREAMBLE bytes. */
static void npy_preamble(unsigned char out[NPY_PREAMBLE], uint64_t rows, int dim) {
    char hdr[NPY_PREAMBLE];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%llu, %d), }",
                     (unsigned long long)rows, dim);
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    int hlen = NPY_PREAMBLE - 10;
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    memset(out + 10, ' ', (size_t)hlen);
    memcpy(out + 10, hdr, (size_t)n);
    out[NPY_PREAMBLE - 1] = '\n';
}

static int write_all(sg_cli_writer *w, const void *p, size_t n, char *err, size_t errlen) {
    if (n && fwrite(p, 1, n, w->f) != n) {
        snprintf(err, errlen, "%s: write failed: %s", w->shown, strerror(errno));
        return -1;
    }
    return 0;
}

static char *shown_dup(const char *path) {
    sg_cli_buf b = {0};
    sg_cli_shown_path_put(&b, path);
    return b.p;
}

/* Creates path for writing, exclusively (a stale name is never written through), with the permission bits of
 * the file it will replace, and flock()ed through a second descriptor (*lock) kept open until the rename.
 * NULL with errno set on failure. */
static FILE *create_tmp(const char *path, const sg_cli_out_target *t, int *lock) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    *lock = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* locked at once: an empty temporary passes for a dead run's */
    if (*lock >= 0 && flock(*lock, LOCK_EX | LOCK_NB) != 0) { /* best effort: a file system without locks */
    }
    if (t->exists) (void)fchmod(fd, t->perm); /* best effort: the replaced file's mode, as an editor keeps it */
    FILE *f = fdopen(fd, "wb");
    if (!f) close(fd);
    return f;
}

static void release_locks(sg_cli_writer *w) {
    for (int i = 0; i < 2; i++) {
        if (w->tmp_locks[i] >= 0) close(w->tmp_locks[i]);
        if (w->target_locks[i] >= 0) close(w->target_locks[i]);
        w->tmp_locks[i] = w->target_locks[i] = -1;
    }
}

static void writer_free(sg_cli_writer *w) {
    release_locks(w);
    free(w->shown); free(w->shown_paths);
    free(w->final_path); free(w->tmp_path); free(w->final_paths); free(w->tmp_paths); free(w->lazy_path);
    free(w->nan_row); free(w->le_row); free(w->scores); free(w->top);
    sg_cli_buf_free(&w->line);
    sg_cli_buf_free(&w->extra);
    free(w);
}

/* 1 (with err set) if the existing regular file at path does not look like an output of this tool
 * (our_output.h): replacing it would destroy a file we did not write. */
static int refuse_foreign(const char *path, const char *shown, char *err, size_t errlen) {
    char why[512];
    int ours = sg_cli_our_output(path, why, sizeof why);
    if (ours == 1) return 0;
    if (ours == 0)
        snprintf(err, errlen,
                 "%s exists and was not written by siglip2-embed (%s): not replaced (remove it or choose another -o)",
                 shown, why);
    else
        snprintf(err, errlen, "%s exists and %s: not replaced", shown, why);
    return 1;
}

/* REPLACE mode: the FILE and FILE.paths that exist now. Each is locked for the run (w->target_locks): a JSONL run
 * writing it in place holds that lock (main.c), and would lose its rows to this run's rename; another replacement
 * would pair its FILE with this run's list. And one the user made read-only (chmod a-w) is not replaced, as a
 * JSONL, written in place, is not. 0, or -1 with err. */
static int lock_targets(sg_cli_writer *w, char *err, size_t errlen) {
    const char *name[2] = {w->final_path, w->final_paths}, *shown[2] = {w->shown, w->shown_paths};
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (!name[k] || stat(name[k], &st) != 0) continue;
        if (access(name[k], W_OK) != 0) {
            snprintf(err, errlen, "%s is write-protected: not replaced (make it writable, or choose another -o)",
                     shown[k]);
            return -1;
        }
        w->target_locks[k] = open(name[k], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (w->target_locks[k] >= 0 && sg_cli_out_lock(w->target_locks[k], shown[k], err, errlen) != 0) return -1;
    }
    return 0;
}

/* REPLACE mode: -o written as FILE.tmp.PID (and a binary format's FILE.paths as FILE.paths.tmp.PID), renamed over
 * FILE when complete (sg_cli_writer_close). A JSON array cannot be continued (--resume is for JSONL), so it is
 * written this way too: a run that is killed or fails leaves the earlier FILE whole. 0, or -1 with err. */
static int open_replaced(sg_cli_writer *w, const sg_cli_out_target *t, char *err, size_t errlen) {
    const sg_cli_writer_cfg *cfg = &w->cfg;
    w->final_path = sg_cli_xstrdup(t->path);
    w->tmp_path = cat3(t->path, ".tmp.", (long)getpid());
    if (is_binary(cfg->format)) {
        w->final_paths = cat3(t->path, cfg->texts ? ".texts" : ".paths", -1);
        w->tmp_paths = cat3(w->final_paths, ".tmp.", (long)getpid());
        w->shown_paths = shown_dup(w->final_paths);
        sg_cli_out_target tp;
        if (sg_cli_out_resolve(w->final_paths, &tp, err, errlen) != 0) return -1;
        int paths_ok = tp.mode == SG_OUT_REPLACE && strcmp(tp.path, w->final_paths) == 0;
        sg_cli_out_target_free(&tp);
        if (!paths_ok) {
            snprintf(err, errlen, "%s exists and is not a regular file: refusing to replace it", w->shown_paths);
            return -1;
        }
        struct stat pst;
        char why[256];
        if (stat(w->final_paths, &pst) == 0 && sg_cli_our_list(w->final_paths, why, sizeof why) != 1) {
            snprintf(err, errlen,
                     "%s exists and is not a list of names this tool wrote (%s): not replaced (remove it or choose "
                     "another -o)",
                     w->shown_paths, why);
            return -1;
        }
    }
    if (lock_targets(w, err, errlen) != 0) return -1;
    w->target_existed = t->exists;
    w->f = create_tmp(w->tmp_path, t, &w->tmp_locks[0]);
    if (w->f && w->tmp_paths) w->paths = create_tmp(w->tmp_paths, t, &w->tmp_locks[1]);
    if (!w->f || (w->tmp_paths && !w->paths)) {
        /* named as the user wrote it; the temporary it is written as first, in the same folder, beside it */
        char shown[4096];
        const char *tmp = w->f ? w->tmp_paths : w->tmp_path, *base = strrchr(tmp, '/');
        snprintf(err, errlen, "%s: cannot create (it is written as %s first, then renamed): %s",
                 w->f ? w->shown_paths : w->shown, sg_cli_shown_path(base ? base + 1 : tmp, shown, sizeof shown),
                 strerror(errno));
        if (w->f) {
            fclose(w->f);
            w->f = NULL;
            unlink(w->tmp_path);
        }
        release_locks(w);
        return -1;
    }
    guard_tmp_files(w->tmp_path, w->tmp_paths);
    return 0;
}

/* A JSONL that was not there when the run started (cfg.absent) but is now: another run's, made meanwhile. */
static const char k_appeared[] = "%s appeared while this run started (another run's output?): left as it is; run "
                                 "again to replace it, or write elsewhere";

/* A new JSONL file, created and flock()ed in one step (the lock held by w->f's descriptor to the end): main.c's
 * lock covers a JSONL that exists when the run starts (and --resume's), so two runs started together on one new
 * name would otherwise both create it and write their rows over each other's. The second is refused, and so is
 * a file that appeared since the run looked (another run's, finished in between): it is not truncated.
 * Returns 0 or -1 with a reason. */
static int open_new_jsonl(sg_cli_writer *w, const char *path, char *err, size_t errlen) {
    const int dlock = sg_cli_out_dir_lock(path); /* not between a replacement's check and its rename (outpath.h) */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    struct stat st;
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open for writing: %s", w->shown, strerror(errno));
        if (dlock >= 0) close(dlock);
        return -1;
    }
    const int locked = sg_cli_out_lock(fd, w->shown, err, errlen);
    if (dlock >= 0) close(dlock);
    if (locked != 0) {
        /* err says so */
    } else if (fstat(fd, &st) == 0 && st.st_size > 0) {
        snprintf(err, errlen, k_appeared, w->shown);
    } else if ((w->f = fdopen(fd, "wb"))) {
        return 0;
    } else {
        snprintf(err, errlen, "%s: %s", w->shown, strerror(errno));
    }
    close(fd);
    return -1;
}

/* Opens -o: in place for devices, FIFOs and descriptors; temporary + rename for binary formats and JSON to a
 * regular file (open_replaced); in place for JSONL to a regular file: appended with --resume, created (and
 * locked) now when new (open_new_jsonl), and when it exists only checked for writing now and truncated at the
 * first row (lazy_path). Returns 0 or -1 with a reason. */
static int open_file_output(sg_cli_writer *w, char *err, size_t errlen) {
    const sg_cli_writer_cfg *cfg = &w->cfg;
    sg_cli_out_target t;
    if (sg_cli_out_resolve(cfg->path, &t, err, errlen) != 0) return -1;
    int rc = -1;
    if (t.mode == SG_OUT_REPLACE && t.exists && !cfg->append && refuse_foreign(t.path, w->shown, err, errlen)) {
        /* err says why */
    } else if (t.mode == SG_OUT_IN_PLACE) {
        if (cfg->append) {
            snprintf(err, errlen, "%s: --resume needs a regular file to append to, not a %s", w->shown, t.kind);
        } else if ((cfg->format == SG_FMT_NPY || cfg->format == SG_FMT_FBIN) && !t.seekable) {
            snprintf(err, errlen,
                     "%s is a %s: --format %s needs a regular file (its header holds the final row count, written "
                     "at the end); f32, fvecs, json and jsonl can be streamed there",
                     w->shown, t.kind, sg_cli_format_name(cfg->format));
        } else {
            int fd = sg_cli_out_open_in_place(&t, err, errlen);
            if (fd >= 0 && !(w->f = fdopen(fd, "wb"))) {
                snprintf(err, errlen, "%s: %s", w->shown, strerror(errno));
                close(fd);
            }
            rc = w->f ? 0 : -1;
        }
    } else if (is_binary(cfg->format) || cfg->format == SG_FMT_JSON) {
        rc = open_replaced(w, &t, err, errlen);
    } else if (t.exists && !cfg->append && cfg->absent) {
        snprintf(err, errlen, k_appeared, w->shown);
    } else if (t.exists && !cfg->append) {
        int fd = open(t.path, O_WRONLY | O_CLOEXEC); /* can it be written? (neither truncated nor created) */
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot open for writing: %s", w->shown, strerror(errno));
        } else {
            close(fd);
            w->target_existed = 1;
            w->lazy_path = sg_cli_xstrdup(t.path);
            rc = 0;
        }
    } else if (cfg->append) { /* locked by main.c since before --resume read it */
        w->f = fopen(t.path, "ab");
        if (!w->f) snprintf(err, errlen, "%s: cannot open for writing: %s", w->shown, strerror(errno));
        rc = w->f ? 0 : -1;
    } else {
        rc = open_new_jsonl(w, t.path, err, errlen);
    }
    sg_cli_out_target_free(&t);
    return rc;
}

/* What a file holds before its first row: the npy / fbin header with N = 0 (patched at the end), or a JSON
 * array's opening bracket. */
static int write_start(sg_cli_writer *w, char *err, size_t errlen) {
    const sg_cli_writer_cfg *cfg = &w->cfg;
    if (cfg->format == SG_FMT_NPY) {
        unsigned char pre[NPY_PREAMBLE];
        npy_preamble(pre, 0, cfg->dim);
        return write_all(w, pre, sizeof pre, err, errlen);
    }
    if (cfg->format == SG_FMT_FBIN) {
        unsigned char hdr[8];
        put_u32le(hdr, 0);
        put_u32le(hdr + 4, (uint32_t)cfg->dim);
        return write_all(w, hdr, sizeof hdr, err, errlen);
    }
    if (cfg->format == SG_FMT_JSON && !cfg->single) return write_all(w, "[", 1, err, errlen);
    return 0;
}

/* The first row of a JSON output over an existing file: only now is the file truncated and started. */
static int open_lazy(sg_cli_writer *w, char *err, size_t errlen) {
    if (!(w->f = fopen(w->lazy_path, "wb"))) {
        snprintf(err, errlen, "%s: cannot open for writing: %s", w->shown, strerror(errno));
        return -1;
    }
    free(w->lazy_path);
    w->lazy_path = NULL;
    return write_start(w, err, errlen);
}

sg_cli_writer *sg_cli_writer_open(const sg_cli_writer_cfg *cfg, char *err, size_t errlen) {
    sg_cli_writer *w = sg_cli_xcalloc(1, sizeof *w);
    w->cfg = *cfg;
    w->tmp_locks[0] = w->tmp_locks[1] = w->target_locks[0] = w->target_locks[1] = -1;
    w->to_stdout = cfg->path == NULL;
    w->shown = w->to_stdout ? sg_cli_xstrdup("stdout") : shown_dup(cfg->path);
    if (w->to_stdout) {
        if ((cfg->format == SG_FMT_NPY || cfg->format == SG_FMT_FBIN)) {
            snprintf(err, errlen, "--format %s needs -o FILE (its header holds the final row count)",
                     sg_cli_format_name(cfg->format));
            writer_free(w);
            return NULL;
        }
        if (is_binary(cfg->format) && isatty(STDOUT_FILENO)) {
            snprintf(err, errlen, "refusing to write binary %s to a terminal: use -o FILE or a pipe",
                     sg_cli_format_name(cfg->format));
            writer_free(w);
            return NULL;
        }
        w->f = stdout;
    } else if (open_file_output(w, err, errlen) != 0) {
        writer_free(w);
        return NULL;
    }
    w->nan_row = sg_cli_xmalloc((size_t)cfg->dim * sizeof(float));
    for (int i = 0; i < cfg->dim; i++) w->nan_row[i] = NAN;
    w->le_row = sg_cli_xmalloc((size_t)cfg->dim * sizeof(float));
    if (cfg->zeroshot) {
        w->scores = sg_cli_xmalloc((size_t)cfg->zeroshot->n * sizeof(double));
        w->top = sg_cli_xmalloc((size_t)cfg->zeroshot->top_k * sizeof(int));
    }
    if (!w->lazy_path && write_start(w, err, errlen) != 0) {
        sg_cli_writer_close(w, 0, w->errbuf, sizeof w->errbuf);
        return NULL;
    }
    return w;
}

int sg_cli_writer_rejects_path(const sg_cli_writer *w, const char *path) {
    /* FILE.texts is read back as text, and a CR ends a line there (Python's text mode; --texts-from drops a CR
     * before the newline): a query holding one would not come back as it was */
    return w->paths != NULL && (strchr(path, '\n') != NULL || (w->cfg.texts && strchr(path, '\r') != NULL));
}

/* The row as little-endian float32 bytes. */
static const float *as_le(sg_cli_writer *w, const float *vec) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (int i = 0; i < w->cfg.dim; i++) {
        uint32_t u;
        memcpy(&u, &vec[i], 4);
        u = __builtin_bswap32(u);
        memcpy(&w->le_row[i], &u, 4);
    }
    return w->le_row;
#else
    (void)w;
    return vec;
#endif
}

/* w->extra = ,"labels":[{"label":"...","score":S},...] for the embedding vec (scores printed like floats:
 * %.9g of the float32 value, so they read back as the value HF's float32 pipeline would print). */
static void zeroshot_extra(sg_cli_writer *w, const float *vec) {
    const sg_zeroshot *z = w->cfg.zeroshot;
    sg_zeroshot_scores(z, vec, w->scores);
    sg_zeroshot_top(z, w->scores, w->top);
    sg_cli_buf_clear(&w->extra);
    sg_cli_buf_puts(&w->extra, ",\"labels\":[");
    for (int r = 0; r < z->top_k; r++) {
        sg_cli_buf_puts(&w->extra, r ? ",{\"label\":" : "{\"label\":");
        sg_cli_json_put_string(&w->extra, z->labels[w->top[r]]);
        sg_cli_buf_puts(&w->extra, ",\"score\":");
        sg_cli_json_put_float(&w->extra, (float)w->scores[w->top[r]]);
        sg_cli_buf_putc(&w->extra, '}');
    }
    sg_cli_buf_puts(&w->extra, "]");
}

void sg_cli_normalize_row(float *v, int d) {
    double ss = 0;
    for (int i = 0; i < d; i++) ss += (double)v[i] * v[i];
    if (!(ss > 0)) return;
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < d; i++) v[i] = (float)(v[i] * inv);
}

int sg_cli_writer_row(sg_cli_writer *w, const char *path, const float *vec, char *err, size_t errlen) {
    const sg_cli_writer_cfg *c = &w->cfg;
    int rc;
    if (w->lazy_path && open_lazy(w, err, errlen) != 0) return -1;
    if (c->format == SG_FMT_JSON || c->format == SG_FMT_JSONL) {
        sg_cli_buf_clear(&w->line);
        if (c->format == SG_FMT_JSON && !c->single) sg_cli_buf_puts(&w->line, w->rows ? ",\n" : "\n");
        const char *extra = NULL;
        if (c->zeroshot && vec) {
            zeroshot_extra(w, vec);
            extra = w->extra.p;
        }
        sg_cli_json_put_row_ex(&w->line, c->texts ? "text" : "path", path, vec, c->dim, extra);
        if (c->format == SG_FMT_JSONL || c->single) sg_cli_buf_putc(&w->line, '\n');
        rc = write_all(w, w->line.p, w->line.len, err, errlen);
    } else {
        if (sg_cli_writer_rejects_path(w, path)) {
            char shown[4096];
            snprintf(err, errlen, "%s: %s contains a line break, cannot be listed in %s",
                     sg_cli_shown_path(path, shown, sizeof shown), c->texts ? "query" : "path", w->shown_paths);
            return -1;
        }
        const float *v = as_le(w, vec ? vec : w->nan_row);
        rc = 0;
        if (c->format == SG_FMT_FVECS) {
            unsigned char d[4];
            put_u32le(d, (uint32_t)c->dim);
            rc = write_all(w, d, 4, err, errlen);
        }
        if (rc == 0) rc = write_all(w, v, (size_t)c->dim * sizeof(float), err, errlen);
        if (rc == 0 && w->paths && fprintf(w->paths, "%s\n", path) < 0) {
            snprintf(err, errlen, "%s: write failed: %s", w->shown_paths, strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0) w->rows++;
    return rc;
}

int sg_cli_writer_flush(sg_cli_writer *w, char *err, size_t errlen) {
    if (w->f && fflush(w->f) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", w->shown, strerror(errno));
        return -1;
    }
    return 0;
}


/* Writes the final row count into the header of npy / fbin outputs. */
static int patch_header(sg_cli_writer *w, char *err, size_t errlen) {
    if (w->cfg.format == SG_FMT_NPY) {
        unsigned char pre[NPY_PREAMBLE];
        npy_preamble(pre, w->rows, w->cfg.dim);
        if (fseek(w->f, 0, SEEK_SET) != 0) goto fail;
        return write_all(w, pre, sizeof pre, err, errlen);
    }
    if (w->cfg.format == SG_FMT_FBIN) {
        if (w->rows > UINT32_MAX) {
            snprintf(err, errlen, "%s: %llu rows do not fit fbin's uint32 count", w->shown,
                     (unsigned long long)w->rows);
            return -1;
        }
        unsigned char n[4];
        put_u32le(n, (uint32_t)w->rows);
        if (fseek(w->f, 0, SEEK_SET) != 0) goto fail;
        return write_all(w, n, 4, err, errlen);
    }
    return 0;
fail:
    snprintf(err, errlen, "%s: seek failed: %s", w->shown, strerror(errno));
    return -1;
}

/* The end of a JSON output: the array's closing bracket, or [] when a single-input run wrote no row (its
 * input failed), so the file is valid JSON whatever happened. */
static int json_end(sg_cli_writer *w, char *err, size_t errlen) {
    if (w->cfg.format != SG_FMT_JSON) return 0;
    if (!w->cfg.single) return write_all(w, w->rows ? "\n]\n" : "]\n", w->rows ? 3 : 2, err, errlen);
    return w->rows ? 0 : write_all(w, "[]\n", 3, err, errlen);
}

/* The temporaries' bytes on the disk before they are renamed over FILE, so a power cut after the rename cannot
 * leave FILE with the new name and lost contents. 0, or -1 with err. */
static int sync_tmp(sg_cli_writer *w, char *err, size_t errlen) {
    FILE *f[2] = {w->f, w->paths};
    const char *shown[2] = {w->shown, w->shown_paths};
    for (int i = 0; i < 2; i++) {
        if (f[i] && (fflush(f[i]) != 0 || fsync(fileno(f[i])) != 0)) {
            snprintf(err, errlen, "%s: write failed: %s", shown[i], strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* A binary FILE replaced by a run of the other kind (an image run over a text run's output, or the other way round)
 * leaves the old kind's list beside it, naming rows that are gone (FILE.texts beside an image run's FILE.paths):
 * that list, one of ours (sg_cli_our_list) describing the FILE just replaced, goes too. */
static void drop_other_list(sg_cli_writer *w) {
    char *other = cat3(w->final_path, w->cfg.texts ? ".paths" : ".texts", -1);
    struct stat st;
    char why[256];
    if (lstat(other, &st) == 0 && S_ISREG(st.st_mode) && sg_cli_our_list(other, why, sizeof why) == 1) unlink(other);
    free(other);
}

/* Renames the temporaries over FILE.paths and FILE, one right after the other with Ctrl-C, SIGTERM and SIGHUP
 * held back, so only a kill -9 or a power cut in the microseconds between them can leave the new list beside the
 * old FILE; then syncs the folder, so the renames themselves survive a power cut. 0, or -1 with err. */
/* Before the renames (under the folder's lock): a FILE or FILE.paths that this run did not lock at its start
 * (absent then) and that another run now holds, a JSONL begun meanwhile, is not replaced. 0, or -1 with err. */
static int check_new_targets(sg_cli_writer *w, char *err, size_t errlen) {
    const char *name[2] = {w->final_path, w->final_paths}, *shown[2] = {w->shown, w->shown_paths};
    for (int k = 0; k < 2; k++) {
        if (!name[k] || w->target_locks[k] >= 0) continue;
        const int fd = open(name[k], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        const int held = fd >= 0 && sg_cli_out_lock(fd, shown[k], err, errlen) != 0;
        if (fd >= 0) close(fd);
        if (held) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, "; this run's output was not put in its place");
            return -1;
        }
    }
    return 0;
}

/* Tests only: SIGLIP2_TEST_RENAME_PAUSE_MS=N sleeps N ms between the two renames, so that a test can start another
 * run's renames right there (docs/debug-knobs.md). */
static void test_pause_between_renames(void) {
    const char *e = getenv("SIGLIP2_TEST_RENAME_PAUSE_MS");
    long ms = e ? strtol(e, NULL, 10) : 0;
    if (ms > 0 && ms <= 60000) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

static int rename_into_place(sg_cli_writer *w, char *err, size_t errlen) {
    sigset_t hold, old;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    sigprocmask(SIG_BLOCK, &hold, &old);
    /* Under the folder's lock, which other runs take for their renames and JSONL locks (outpath.h): a FILE or
     * FILE.paths that appeared since the start is checked for a JSONL run writing it (its rows would vanish with
     * the rename), and the two renames are never split by another run's pair (a FILE of one run beside the
     * list of another: rows and names that do not match). */
    const int dlock = sg_cli_out_dir_lock(w->final_path);
    if (errlen) err[0] = '\0';
    int rc = check_new_targets(w, err, errlen);
    if (rc == 0 && w->tmp_paths && rename(w->tmp_paths, w->final_paths) != 0) rc = -1;
    if (rc == 0 && w->tmp_paths) test_pause_between_renames();
    if (rc == 0 && rename(w->tmp_path, w->final_path) != 0) rc = -1;
    if (rc != 0 && !err[0]) snprintf(err, errlen, "%s: cannot rename into place: %s", w->shown, strerror(errno));
    if (rc == 0 && w->tmp_paths && w->target_existed) drop_other_list(w);
    if (rc == 0) release_locks(w); /* before the folder's: a run waiting there finds FILE whole and free */
    if (dlock >= 0) {
        (void)flock(dlock, LOCK_UN); /* the folder's sync below need not hold other runs back */
        if (rc == 0 && fsync(dlock) != 0) { /* best effort: some file systems cannot sync a folder */
        }
        close(dlock);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int sg_cli_writer_close(sg_cli_writer *w, int commit, char *err, size_t errlen) {
    int rc = 0;
    char tmp[256];
    if (w->lazy_path) {
        /* No row came: the existing file was never opened and stays as it was. */
    } else if (commit && w->rows == 0 && w->target_existed && w->tmp_path) {
        commit = 0; /* the same for a binary format: its temporaries are removed, the existing file kept */
    } else if (commit) {
        rc = json_end(w, err, errlen);
        if (rc == 0) rc = patch_header(w, err, errlen);
    } else if (!w->tmp_path) {
        json_end(w, tmp, sizeof tmp); /* a stopped run still leaves valid JSON (on a stream) holding its rows */
    }
    if (w->tmp_path && commit && rc == 0) rc = sync_tmp(w, err, errlen);
    if (w->to_stdout) {
        if (fflush(stdout) != 0 && rc == 0 && commit) {
            snprintf(err, errlen, "stdout: write failed: %s", strerror(errno));
            rc = -1;
        }
    } else if (w->f) {
        if (fclose(w->f) != 0 && rc == 0 && commit) {
            snprintf(err, errlen, "%s: write failed: %s", w->shown, strerror(errno));
            rc = -1;
        }
    }
    if (w->paths && fclose(w->paths) != 0 && rc == 0 && commit) {
        snprintf(err, errlen, "%s: write failed: %s", w->shown_paths, strerror(errno));
        rc = -1;
    }
    if (w->tmp_path) {
        if (commit && rc == 0) rc = rename_into_place(w, err, errlen);
        if (!commit || rc != 0) {
            unlink(w->tmp_path);
            if (w->tmp_paths) unlink(w->tmp_paths);
        }
        release_locks(w);
        guard_tmp_files(NULL, NULL);
    }
    writer_free(w);
    return rc;
}

uint64_t sg_cli_writer_rows(const sg_cli_writer *w) { return w->rows; }

int sg_cli_writer_keeps_existing(const sg_cli_writer *w) { return w->rows == 0 && w->target_existed; }
