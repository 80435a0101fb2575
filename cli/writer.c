/* cli/writer.c — JSON, JSONL, npy, fbin, fvecs and f32 writers (formats in writer.h). */
#include "writer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"
#include "json_text.h"

/* Total size of the npy preamble (magic, version, header length, header, padding, '\n'): the header for
 * the largest N fits in 128 bytes, and 128 is a multiple of 64 as format 1.0 requires for alignment. */
#define NPY_PREAMBLE 128

struct sg_cli_writer {
    sg_cli_writer_cfg cfg;
    FILE *f, *paths;
    char *final_path, *tmp_path, *final_paths, *tmp_paths;
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

/* Ctrl-C (or SIGTERM from a scheduler) during a binary run: remove the temporary files, then die of the
 * signal as usual. The names are copied to static storage because only async-signal-safe calls (unlink,
 * signal, raise) may run in the handler. One binary writer exists per process. */
static char g_tmp_main[4096], g_tmp_paths[4096];

static void on_fatal_signal(int sig) {
    if (g_tmp_main[0]) unlink(g_tmp_main);
    if (g_tmp_paths[0]) unlink(g_tmp_paths);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_tmp_files(const char *a, const char *b) {
    snprintf(g_tmp_main, sizeof g_tmp_main, "%s", a ? a : "");
    snprintf(g_tmp_paths, sizeof g_tmp_paths, "%s", b ? b : "");
    if (!a) return;
    signal(SIGINT, on_fatal_signal);
    signal(SIGTERM, on_fatal_signal);
    signal(SIGHUP, on_fatal_signal);
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
        snprintf(err, errlen, "%s: write failed: %s", w->to_stdout ? "stdout" : w->final_path, strerror(errno));
        return -1;
    }
    return 0;
}

sg_cli_writer *sg_cli_writer_open(const sg_cli_writer_cfg *cfg, char *err, size_t errlen) {
    sg_cli_writer *w = sg_cli_xcalloc(1, sizeof *w);
    w->cfg = *cfg;
    w->to_stdout = cfg->path == NULL;
    if (w->to_stdout) {
        if ((cfg->format == SG_FMT_NPY || cfg->format == SG_FMT_FBIN)) {
            snprintf(err, errlen, "--format %s needs -o FILE (its header holds the final row count)",
                     sg_cli_format_name(cfg->format));
            free(w);
            return NULL;
        }
        if (is_binary(cfg->format) && isatty(STDOUT_FILENO)) {
            snprintf(err, errlen, "refusing to write binary %s to a terminal: use -o FILE or a pipe",
                     sg_cli_format_name(cfg->format));
            free(w);
            return NULL;
        }
        w->f = stdout;
    } else if (is_binary(cfg->format)) {
        w->final_path = sg_cli_xstrdup(cfg->path);
        w->tmp_path = cat3(cfg->path, ".tmp.", (long)getpid());
        w->final_paths = cat3(cfg->path, cfg->texts ? ".texts" : ".paths", -1);
        w->tmp_paths = cat3(w->final_paths, ".tmp.", (long)getpid());
        w->f = fopen(w->tmp_path, "wb");
        if (w->f) w->paths = fopen(w->tmp_paths, "wb");
        if (!w->f || !w->paths) {
            snprintf(err, errlen, "%s: cannot create: %s", w->f ? w->tmp_paths : w->tmp_path, strerror(errno));
            if (w->f) {
                fclose(w->f);
                unlink(w->tmp_path);
            }
            free(w->final_path); free(w->tmp_path); free(w->final_paths); free(w->tmp_paths);
            free(w);
            return NULL;
        }
        guard_tmp_files(w->tmp_path, w->tmp_paths);
    } else {
        w->final_path = sg_cli_xstrdup(cfg->path);
        w->f = fopen(cfg->path, cfg->append ? "ab" : "wb");
        if (!w->f) {
            snprintf(err, errlen, "%s: cannot open for writing: %s", cfg->path, strerror(errno));
            free(w->final_path);
            free(w);
            return NULL;
        }
    }
    w->nan_row = sg_cli_xmalloc((size_t)cfg->dim * sizeof(float));
    for (int i = 0; i < cfg->dim; i++) w->nan_row[i] = NAN;
    w->le_row = sg_cli_xmalloc((size_t)cfg->dim * sizeof(float));
    if (cfg->zeroshot) {
        w->scores = sg_cli_xmalloc((size_t)cfg->zeroshot->n * sizeof(double));
        w->top = sg_cli_xmalloc((size_t)cfg->zeroshot->top_k * sizeof(int));
    }
    int rc = 0;
    if (cfg->format == SG_FMT_NPY) {
        unsigned char pre[NPY_PREAMBLE];
        npy_preamble(pre, 0, cfg->dim);
        rc = write_all(w, pre, sizeof pre, err, errlen);
    } else if (cfg->format == SG_FMT_FBIN) {
        unsigned char hdr[8];
        put_u32le(hdr, 0);
        put_u32le(hdr + 4, (uint32_t)cfg->dim);
        rc = write_all(w, hdr, sizeof hdr, err, errlen);
    } else if (cfg->format == SG_FMT_JSON && !cfg->single) {
        rc = write_all(w, "[", 1, err, errlen);
    }
    if (rc != 0) {
        sg_cli_writer_close(w, 0, w->errbuf, sizeof w->errbuf);
        return NULL;
    }
    return w;
}

int sg_cli_writer_rejects_path(const sg_cli_writer *w, const char *path) {
    return w->paths != NULL && strchr(path, '\n') != NULL;
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

int sg_cli_writer_row(sg_cli_writer *w, const char *path, const float *vec, char *err, size_t errlen) {
    const sg_cli_writer_cfg *c = &w->cfg;
    int rc;
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
        if (w->paths && strchr(path, '\n')) {
            snprintf(err, errlen, "%s: %s contains a newline, cannot be listed in %s", path, c->texts ? "query" : "path",
                     w->final_paths);
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
            snprintf(err, errlen, "%s: write failed: %s", w->tmp_paths, strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0) w->rows++;
    return rc;
}

int sg_cli_writer_flush(sg_cli_writer *w, char *err, size_t errlen) {
    if (fflush(w->f) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", w->to_stdout ? "stdout" : w->final_path, strerror(errno));
        return -1;
    }
    return 0;
}

uint64_t sg_cli_writer_rows(const sg_cli_writer *w) { return w->rows; }

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
            snprintf(err, errlen, "%s: %llu rows do not fit fbin's uint32 count", w->final_path,
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
    snprintf(err, errlen, "%s: seek failed: %s", w->tmp_path, strerror(errno));
    return -1;
}

int sg_cli_writer_close(sg_cli_writer *w, int commit, char *err, size_t errlen) {
    int rc = 0;
    char tmp[256];
    if (commit) {
        if (w->cfg.format == SG_FMT_JSON && !w->cfg.single) rc = write_all(w, w->rows ? "\n]\n" : "]\n",
                                                                           w->rows ? 3 : 2, err, errlen);
        if (rc == 0) rc = patch_header(w, err, errlen);
    } else if (w->cfg.format == SG_FMT_JSON && !w->cfg.single && !w->tmp_path) {
        /* a stopped run still leaves valid JSON holding the rows written so far */
        write_all(w, w->rows ? "\n]\n" : "]\n", w->rows ? 3 : 2, tmp, sizeof tmp);
    }
    if (w->to_stdout) {
        if (fflush(stdout) != 0 && rc == 0 && commit) {
            snprintf(err, errlen, "stdout: write failed: %s", strerror(errno));
            rc = -1;
        }
    } else {
        if (fclose(w->f) != 0 && rc == 0 && commit) {
            snprintf(err, errlen, "%s: write failed: %s", w->final_path, strerror(errno));
            rc = -1;
        }
    }
    if (w->paths && fclose(w->paths) != 0 && rc == 0 && commit) {
        snprintf(err, errlen, "%s: write failed: %s", w->tmp_paths, strerror(errno));
        rc = -1;
    }
    if (w->tmp_path) {
        if (commit && rc == 0) {
            if (rename(w->tmp_paths, w->final_paths) != 0 || rename(w->tmp_path, w->final_path) != 0) {
                snprintf(err, errlen, "%s: cannot rename into place: %s", w->final_path, strerror(errno));
                rc = -1;
            }
        }
        if (!commit || rc != 0) {
            unlink(w->tmp_path);
            unlink(w->tmp_paths);
        }
        guard_tmp_files(NULL, NULL);
    }
    free(w->final_path); free(w->tmp_path); free(w->final_paths); free(w->tmp_paths);
    free(w->nan_row); free(w->le_row); free(w->scores); free(w->top);
    sg_cli_buf_free(&w->line);
    sg_cli_buf_free(&w->extra);
    free(w);
    return rc;
}
