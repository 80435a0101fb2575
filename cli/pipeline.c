/* cli/pipeline.c — decode workers, compute thread and ordered writer (design in pipeline.h).
 *
 * Two mutexes: enum_mu serialises the enumerator (which reads directories and stats files, possibly on a
 * slow network file system) and the order in which inputs get their index; mu guards the rest (ring
 * counters, result pool, writer queue, end of input, stop). Each thread holds mu only for bookkeeping,
 * never while decoding, computing or writing. Lock order: enum_mu before mu. */
#include "pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"
#include "shard.h"
#include "shown_path.h"

/* Results held between the compute thread and the writer: the backend's in-flight batches, one being
 * written, and one being filled, so neither side waits on the other in the steady state. */
#define NRES (SG_BACKEND_MAX_INFLIGHT + 2)

typedef struct pixel_batch {
    uint8_t *pixels; /* [B, S, S, 3] */
    char **paths;    /* [B] owned until handed to a result */
    char **errs;     /* [B] NULL = ok */
    int done;        /* slots finished by workers */
} pixel_batch;

typedef struct result {
    int n, n_ok;
    char **paths, **errs; /* [B] */
    float *out;           /* [B, D], the first n_ok rows valid */
} result;

typedef struct sg_cli_pipeline {
    const sg_cli_pipeline_cfg *cfg;
    int B, R, S, D;
    size_t img_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv_slot_free, cv_batch_ready, cv_result_free, cv_wq;
    /* enumeration (under enum_mu: directory reads and stats on a slow file system stall only the workers
       that want a new input, never the compute thread's or writer's bookkeeping under mu) */
    pthread_mutex_t enum_mu;
    uint64_t seq;         /* inputs enumerated, filtered or not: names --dump-preprocessed files */
    uint64_t next_idx;    /* inputs kept (written under enum_mu with atomic stores: the progress line reads it) */
    int enum_done;
    uint64_t skipped_shard, skipped_done;
    /* end of input (under mu) */
    int eof;
    uint64_t n_total;     /* valid once eof */
    /* ring (under mu) */
    pixel_batch *ring;
    uint64_t consumed;    /* batches handed to the backend */
    /* results (under mu) */
    result res[NRES];
    result *free_res[NRES];
    int n_free;
    result *wq[NRES];
    int wq_head, wq_len, wq_end;
    /* control */
    int stop;             /* everyone winds down; written under mu with an atomic store so the
                             enumerating workers may peek at it without mu */
    int fatal;
    char fatal_msg[1024];
    sg_cli_pipeline_stats st;
    /* set up by start; the backend and the writer arrive with finish */
    pthread_t *workers;
    double t0;
    int reject_newlines;  /* the output cannot list a path with a newline (a binary format's FILE.paths) */
    sg_backend *be;
    sg_cli_writer *w;
} pipeline; /* sg_cli_pipeline in pipeline.h */

static void set_fatal_locked(pipeline *p, const char *msg) {
    if (!p->fatal) {
        p->fatal = 1;
        snprintf(p->fatal_msg, sizeof p->fatal_msg, "%s", msg);
    }
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv_slot_free);
    pthread_cond_broadcast(&p->cv_batch_ready);
    pthread_cond_broadcast(&p->cv_result_free);
    pthread_cond_broadcast(&p->cv_wq);
}

static int stopped(pipeline *p) { return __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE); }

static void stop_locked(pipeline *p) {
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv_slot_free);
    pthread_cond_broadcast(&p->cv_batch_ready);
    pthread_cond_broadcast(&p->cv_result_free);
    pthread_cond_broadcast(&p->cv_wq);
}

/* Next input that passes the shard and resume filters, under enum_mu. 1: got one; 0: end, or an unreadable
 * --files-from list (recorded as fatal). */
static int next_kept(pipeline *p, sg_cli_input *in) {
    const sg_cli_pipeline_cfg *c = p->cfg;
    for (;;) {
        char err[512];
        int r = sg_cli_inputs_next(c->inputs, in, err, sizeof err);
        if (r < 0) {
            pthread_mutex_lock(&p->mu); /* lock order: enum_mu, then mu; never the reverse */
            set_fatal_locked(p, err);
            pthread_mutex_unlock(&p->mu);
            return 0;
        }
        if (r == 0) return 0;
        p->seq++;
        if (!sg_cli_shard_keep(in->path, c->shard_k, c->shard_n)) {
            p->skipped_shard++;
        } else if (c->done && c->done->count) {
            /* exact bytes, as resume.c collects them; one row in the file skips one occurrence of its path, so an
             * input given twice still gets its two rows */
            if (!sg_cli_pathset_take(c->done, in->path)) return 1;
            p->skipped_done++;
        } else {
            return 1;
        }
        free(in->path);
        free(in->error);
    }
}

/* Reads all of stdin (the "-" operand) into memory, refusing more than cap bytes. */
static uint8_t *read_stdin(uint64_t cap, size_t *len, char *err, size_t errlen) {
    size_t n = 0, c = 1 << 16;
    uint8_t *b = sg_cli_xmalloc(c);
    for (;;) {
        if (n == c) {
            c *= 2;
            uint8_t *nb = realloc(b, c);
            if (!nb) SG_CLI_DIE("out of memory reading stdin");
            b = nb;
        }
        ssize_t r = read(STDIN_FILENO, b + n, c - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            free(b);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (cap && n > cap) {
            snprintf(err, errlen, "more than %llu bytes (--max-file-size)", (unsigned long long)cap);
            free(b);
            return NULL;
        }
    }
    *len = n;
    return b;
}

/* Writes all n bytes to fd. 0, or -1 with errno set. */
static int write_full(int fd, const void *buf, size_t n) {
    const char *b = buf;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* --dump-preprocessed: DIR/NNNNNN.ppm. Never through a symbolic link, and over an existing file only if it is a
 * dump of the same size that a run of this tool left (a P6 header for S x S and exactly its bytes): any other
 * file of that name is not ours and stays as it is (the input then fails, saying so). */
static int dump_ppm_at(const char *path, const uint8_t *px, int S, char *err, size_t errlen) {
    char hdr[64], shown[512]; /* a long path is cut ("...") so that the reason after it fits the message */
    int hlen = snprintf(hdr, sizeof hdr, "P6\n%d %d\n255\n", S, S);
    size_t body = (size_t)S * S * 3;
    int created = 1, fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) {
        created = 0;
        fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "--dump-preprocessed: cannot create %s: %s%s", sg_cli_shown_path(path, shown, sizeof shown),
                 strerror(errno), errno == ELOOP ? " (a symbolic link: not followed)" : "");
        if (fd >= 0) close(fd);
        return -1;
    }
    if (st.st_size != 0) {
        char old[64];
        int ours = S_ISREG(st.st_mode) && (size_t)st.st_size == (size_t)hlen + body &&
                   pread(fd, old, (size_t)hlen, 0) == hlen && memcmp(old, hdr, (size_t)hlen) == 0;
        if (!ours || ftruncate(fd, 0) != 0) {
            snprintf(err, errlen, "--dump-preprocessed: %s exists and is not an earlier dump of this size: not replaced",
                     sg_cli_shown_path(path, shown, sizeof shown));
            close(fd);
            return -1;
        }
    }
    int werr = write_full(fd, hdr, (size_t)hlen) == 0 && write_full(fd, px, body) == 0 ? 0 : errno;
    /* a torn dump would block every later run over it: one we created goes; an earlier dump of ours, which this
     * run had emptied, is emptied again (a later run writes over an empty file) */
    if (werr && !created && ftruncate(fd, 0) != 0) { /* nothing more to do: the message says the write failed */
    }
    if (close(fd) != 0 && !werr) werr = errno;
    if (werr) {
        if (created) unlink(path);
        snprintf(err, errlen, "--dump-preprocessed: write failed on %s: %s", sg_cli_shown_path(path, shown, sizeof shown),
                 strerror(werr));
        return -1;
    }
    return 0;
}

/* The dump's name is built whole, however long DIR is (a fixed buffer once cut long names short, so that every
 * input's pixels went to one truncated name): a name the system cannot take fails that input with its reason. */
static int dump_ppm(const char *dir, uint64_t seq, const uint8_t *px, int S, char *err, size_t errlen) {
    sg_cli_buf path = {0};
    char name[32];
    snprintf(name, sizeof name, "/%06llu.ppm", (unsigned long long)seq);
    sg_cli_buf_puts(&path, dir);
    sg_cli_buf_puts(&path, name);
    int rc = dump_ppm_at(path.p, px, S, err, errlen);
    sg_cli_buf_free(&path);
    return rc;
}

/* Fills one slot: the reason on failure (malloc'd) or NULL. */
static char *process_one(pipeline *p, const sg_cli_input *in, uint64_t seq, uint8_t *px,
                         sg_preprocess_stats *ps) {
    const sg_cli_pipeline_cfg *c = p->cfg;
    char err[1024];
    if (in->error) return sg_cli_xstrdup(in->error);
    if (p->reject_newlines && strchr(in->path, '\n'))
        return sg_cli_xstrdup("path contains a newline, which the .paths file cannot list");
    int rc;
    if (in->is_stdin) {
        size_t len = 0;
        uint8_t *data = read_stdin(c->pre->max_file_bytes, &len, err, sizeof err);
        rc = data ? sg_preprocess_memory(data, len, c->pre, px, ps, err, sizeof err) : -1;
        free(data);
    } else {
        rc = sg_preprocess_file(in->path, c->pre, px, ps, err, sizeof err);
    }
    if (rc != 0) return sg_cli_xstrdup(err[0] ? err : "cannot preprocess (no reason given)");
    if (c->dump_dir && dump_ppm(c->dump_dir, seq, px, p->S, err, sizeof err) != 0) return sg_cli_xstrdup(err);
    return NULL;
}

static void *worker_main(void *arg) {
    pipeline *p = arg;
    sg_preprocess_stats ps = {0, 0, 0};
    for (;;) {
        sg_cli_input in;
        pthread_mutex_lock(&p->enum_mu);
        if (p->enum_done || stopped(p)) {
            pthread_mutex_unlock(&p->enum_mu);
            break;
        }
        if (!next_kept(p, &in)) {
            p->enum_done = 1;
            uint64_t total = p->next_idx;
            pthread_mutex_unlock(&p->enum_mu);
            pthread_mutex_lock(&p->mu);
            p->eof = 1;
            p->n_total = total;
            pthread_cond_broadcast(&p->cv_batch_ready);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        uint64_t seq = p->seq - 1, idx = __atomic_fetch_add(&p->next_idx, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&p->enum_mu);

        uint64_t j = idx / (uint64_t)p->B;
        pthread_mutex_lock(&p->mu);
        if (!p->stop && j >= p->consumed + (uint64_t)p->R) {
            double t = sg_cli_now();
            while (!p->stop && j >= p->consumed + (uint64_t)p->R) pthread_cond_wait(&p->cv_slot_free, &p->mu);
            p->st.slot_wait_s += sg_cli_now() - t;
        }
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) {
            free(in.path);
            free(in.error);
            break;
        }
        pixel_batch *pb = &p->ring[j % (uint64_t)p->R];
        int s = (int)(idx % (uint64_t)p->B);
        char *why = process_one(p, &in, seq, pb->pixels + (size_t)s * p->img_bytes, &ps);
        free(in.error);
        pb->paths[s] = in.path;
        pb->errs[s] = why;

        pthread_mutex_lock(&p->mu);
        pb->done++;
        pthread_cond_broadcast(&p->cv_batch_ready);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->st.read_s += ps.read_s;
    p->st.decode_s += ps.decode_s;
    p->st.resize_s += ps.resize_s;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Hands a finished result to the writer, under mu. */
static void push_writer_locked(pipeline *p, result *r) {
    p->wq[(p->wq_head + p->wq_len) % NRES] = r;
    p->wq_len++;
    pthread_cond_signal(&p->cv_wq);
}

/* Stops the run with "backend NAME: why" as its fatal message, under mu. */
static void set_backend_fatal_locked(pipeline *p, const sg_backend *be, const char *why) {
    char msg[1200];
    snprintf(msg, sizeof msg, "backend %s: %s", be->name, why);
    set_fatal_locked(p, msg);
}

/* Waits for the backend to hand back f's embeddings (the time counted as compute); on failure stops the run
 * with the backend's message. Returns 0, or -1 on failure. */
static int collect_result(pipeline *p, sg_backend *be, result *f) {
    char err[1024];
    double t = sg_cli_now();
    int rc = be->collect(be, f->out, err, sizeof err);
    p->st.compute_s += sg_cli_now() - t;
    if (rc == 0) return 0;
    pthread_mutex_lock(&p->mu);
    set_backend_fatal_locked(p, be, err);
    pthread_mutex_unlock(&p->mu);
    return -1;
}

static void *compute_main(void *arg) {
    pipeline *p = arg;
    sg_backend *be = p->be;
    result *fifo[NRES];
    int fifo_len = 0, inflight = 0, backend_ok = 1;
    char err[1024];
    for (uint64_t j = 0;; j++) {
        pixel_batch *pb = &p->ring[j % (uint64_t)p->R];
        pthread_mutex_lock(&p->mu);
        int n = 0, finished = 0;
        double t_wait = sg_cli_now();
        while (!p->stop) {
            uint64_t first = j * (uint64_t)p->B;
            if (p->eof && p->n_total <= first) {
                finished = 1;
                break;
            }
            n = p->eof && p->n_total - first < (uint64_t)p->B ? (int)(p->n_total - first) : p->B;
            if (pb->done == n) break;
            pthread_cond_wait(&p->cv_batch_ready, &p->mu);
        }
        p->st.batch_wait_s += sg_cli_now() - t_wait;
        while (!p->stop && !finished && p->n_free == 0) pthread_cond_wait(&p->cv_result_free, &p->mu);
        if (p->stop || finished) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        result *r = p->free_res[--p->n_free];
        pthread_mutex_unlock(&p->mu);

        r->n = n;
        r->n_ok = 0;
        for (int s = 0; s < n; s++) {
            r->paths[s] = pb->paths[s];
            r->errs[s] = pb->errs[s];
            pb->paths[s] = pb->errs[s] = NULL;
            if (r->errs[s]) continue;
            if (s != r->n_ok)
                memmove(pb->pixels + (size_t)r->n_ok * p->img_bytes, pb->pixels + (size_t)s * p->img_bytes,
                        p->img_bytes);
            r->n_ok++;
        }
        if (r->n_ok) {
            double t = sg_cli_now();
            if (be->submit(be, pb->pixels, r->n_ok, err, sizeof err) != 0) {
                pthread_mutex_lock(&p->mu);
                set_backend_fatal_locked(p, be, err);
                p->free_res[p->n_free++] = r; /* its paths are freed at teardown via the result pool */
                pthread_mutex_unlock(&p->mu);
                backend_ok = 0;
                break;
            }
            p->st.compute_s += sg_cli_now() - t;
            inflight++;
        }
        pthread_mutex_lock(&p->mu);
        pb->done = 0;
        p->consumed++;
        pthread_cond_broadcast(&p->cv_slot_free);
        pthread_mutex_unlock(&p->mu);
        fifo[fifo_len++] = r;

        /* Hand results on in order: the oldest once the backend holds its most batches, or at once when it
         * holds no images (every input failed). A batch in flight with only such results behind it is also
         * collected once they fill the pool (fifo_len == NRES): otherwise the next batch would wait for a free
         * result that only the writer, waiting for this one, could give back (a hang after one good batch and
         * a few batches of missing or corrupt files; session 27). */
        while (fifo_len > 0 && (inflight == SG_BACKEND_MAX_INFLIGHT || fifo[0]->n_ok == 0 || fifo_len == NRES)) {
            result *f = fifo[0];
            memmove(fifo, fifo + 1, (size_t)(fifo_len - 1) * sizeof *fifo);
            fifo_len--;
            if (f->n_ok) {
                inflight--;
                if (collect_result(p, be, f) != 0) backend_ok = 0;
            }
            pthread_mutex_lock(&p->mu);
            push_writer_locked(p, f);
            pthread_mutex_unlock(&p->mu);
        }
        if (!backend_ok) break;
    }
    /* Drain: collect what is still in flight (the backend must not be destroyed with work queued) and
     * pass it on in order; after a stop the writer discards it. */
    for (int i = 0; i < fifo_len; i++) {
        result *f = fifo[i];
        if (f->n_ok && backend_ok && collect_result(p, be, f) != 0) backend_ok = 0;
        pthread_mutex_lock(&p->mu);
        if (backend_ok) push_writer_locked(p, f);
        else p->free_res[p->n_free++] = f;
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->wq_end = 1;
    pthread_cond_broadcast(&p->cv_wq);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void free_result_strings(result *r) {
    for (int s = 0; s < r->n; s++) {
        free(r->paths[s]);
        free(r->errs[s]);
        r->paths[s] = r->errs[s] = NULL;
    }
    r->n = 0;
}

static void report_failure(pipeline *p, const char *path, const char *why) {
    sg_cli_progress_clear(p->cfg->progress);
    sg_cli_buf shown = {0};
    sg_cli_shown_path_put(&shown, path); /* control bytes visible, the exact path recoverable */
    fprintf(stderr, "siglip2-embed: %s: %s\n", shown.p, why);
    sg_cli_buf_free(&shown);
}

/* Writes every result the compute thread hands over (each was computed successfully, so even after a
 * fatal error elsewhere its rows are worth keeping for --resume), until it decides to stop itself:
 * --on-error fail, or a write error. */
static void *writer_main(void *arg) {
    pipeline *p = arg;
    const sg_cli_pipeline_cfg *c = p->cfg;
    int writing = 1;
    char err[1024];
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->wq_len == 0 && !p->wq_end) pthread_cond_wait(&p->cv_wq, &p->mu);
        if (p->wq_len == 0) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        result *r = p->wq[p->wq_head];
        p->wq_head = (p->wq_head + 1) % NRES;
        p->wq_len--;
        int exact = p->eof;
        uint64_t total = exact ? p->n_total : 0;
        pthread_mutex_unlock(&p->mu);
        if (!exact && c->counter) total = sg_cli_counter_get(c->counter, &exact);
        if (!exact) { /* at least what the workers have taken so far (a list on stdin cannot be counted ahead) */
            uint64_t seen = __atomic_load_n(&p->next_idx, __ATOMIC_RELAXED);
            if (seen > total) total = seen;
        }

        double t = sg_cli_now();
        if (c->rows_share_progress_tty) sg_cli_progress_clear(c->progress); /* never draw inside a row */
        int k = 0;
        for (int s = 0; s < r->n && writing; s++) {
            const float *vec = NULL;
            if (r->errs[s]) {
                p->st.failed++;
                report_failure(p, r->paths[s], r->errs[s]);
                if (c->on_error == SG_ON_ERROR_FAIL) {
                    p->st.stopped = 1;
                    writing = 0;
                    pthread_mutex_lock(&p->mu);
                    stop_locked(p);
                    pthread_mutex_unlock(&p->mu);
                    break;
                }
                /* no row under skip, nor for a name the output's list cannot hold (a newline in a binary format's
                 * FILE.paths): a NaN row without its name would shift every later name against its row */
                if (c->on_error == SG_ON_ERROR_SKIP || (p->reject_newlines && strchr(r->paths[s], '\n'))) continue;
            } else {
                float *v = r->out + (size_t)k++ * p->D;
                if (c->normalize) sg_cli_normalize_row(v, p->D);
                vec = v;
                p->st.embedded++;
            }
            if (sg_cli_writer_row(p->w, r->paths[s], vec, err, sizeof err) != 0) {
                writing = 0;
                pthread_mutex_lock(&p->mu);
                set_fatal_locked(p, err);
                pthread_mutex_unlock(&p->mu);
            }
        }
        if (writing && sg_cli_writer_flush(p->w, err, sizeof err) != 0) {
            writing = 0;
            pthread_mutex_lock(&p->mu);
            set_fatal_locked(p, err);
            pthread_mutex_unlock(&p->mu);
        }
        p->st.write_s += sg_cli_now() - t;
        sg_cli_progress_update(c->progress, p->st.embedded, p->st.failed, total, exact, 0);

        free_result_strings(r);
        pthread_mutex_lock(&p->mu);
        p->free_res[p->n_free++] = r;
        pthread_cond_signal(&p->cv_result_free);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

sg_cli_pipeline *sg_cli_pipeline_start(const sg_cli_pipeline_cfg *cfg) {
    pipeline *p = sg_cli_xcalloc(1, sizeof *p);
    p->cfg = cfg;
    p->B = cfg->batch;
    p->S = cfg->image_size ? cfg->image_size : cfg->backend->image_size;
    p->D = cfg->dim ? cfg->dim : cfg->backend->dim;
    p->reject_newlines = cfg->writer ? sg_cli_writer_rejects_path(cfg->writer, "\n") : cfg->reject_newline_paths;
    p->img_bytes = (size_t)p->S * p->S * 3;
    /* Enough batches for every worker to have one image in hand beyond the batch the backend holds, plus
     * one filling: the ring never starves the backend and never grows with the input. */
    p->R = 2 + (cfg->threads + p->B - 1) / p->B;
    if (p->R < 3) p->R = 3;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->enum_mu, NULL);
    pthread_cond_init(&p->cv_slot_free, NULL);
    pthread_cond_init(&p->cv_batch_ready, NULL);
    pthread_cond_init(&p->cv_result_free, NULL);
    pthread_cond_init(&p->cv_wq, NULL);
    p->ring = sg_cli_xcalloc((size_t)p->R, sizeof *p->ring);
    for (int i = 0; i < p->R; i++) {
        p->ring[i].pixels = sg_cli_xmalloc((size_t)p->B * p->img_bytes);
        p->ring[i].paths = sg_cli_xcalloc((size_t)p->B, sizeof(char *));
        p->ring[i].errs = sg_cli_xcalloc((size_t)p->B, sizeof(char *));
    }
    for (int i = 0; i < NRES; i++) {
        p->res[i].paths = sg_cli_xcalloc((size_t)p->B, sizeof(char *));
        p->res[i].errs = sg_cli_xcalloc((size_t)p->B, sizeof(char *));
        p->res[i].out = sg_cli_xmalloc((size_t)p->B * p->D * sizeof(float));
        p->free_res[p->n_free++] = &p->res[i];
    }
    p->t0 = sg_cli_now();
    p->workers = sg_cli_xcalloc((size_t)cfg->threads, sizeof *p->workers);
    for (int i = 0; i < cfg->threads; i++)
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) SG_CLI_DIE("cannot start decode workers");
    return p;
}

static void pipeline_free(pipeline *p) {
    for (int i = 0; i < p->R; i++) {
        for (int s = 0; s < p->B; s++) {
            free(p->ring[i].paths[s]);
            free(p->ring[i].errs[s]);
        }
        free(p->ring[i].pixels);
        free(p->ring[i].paths);
        free(p->ring[i].errs);
    }
    for (int i = 0; i < NRES; i++) {
        free_result_strings(&p->res[i]);
        free(p->res[i].paths);
        free(p->res[i].errs);
        free(p->res[i].out);
    }
    free(p->ring);
    free(p->workers);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->enum_mu);
    pthread_cond_destroy(&p->cv_slot_free);
    pthread_cond_destroy(&p->cv_batch_ready);
    pthread_cond_destroy(&p->cv_result_free);
    pthread_cond_destroy(&p->cv_wq);
    free(p);
}

void sg_cli_pipeline_cancel(sg_cli_pipeline *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    stop_locked(p);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->cfg->threads; i++) pthread_join(p->workers[i], NULL);
    pipeline_free(p);
}

int sg_cli_pipeline_finish(sg_cli_pipeline *p, sg_backend *backend, sg_cli_writer *writer, sg_cli_pipeline_stats *stats,
                           char *err, size_t errlen) {
    p->be = backend;
    p->w = writer;
    if (backend->image_size != p->S || backend->dim != p->D || backend->max_batch < p->B) {
        snprintf(err, errlen, "backend %s takes %dx%d images, %d-float rows, batches up to %d; the run was set up for "
                 "%dx%d, %d, %d", backend->name, backend->image_size, backend->image_size, backend->dim,
                 backend->max_batch, p->S, p->S, p->D, p->B);
        memset(stats, 0, sizeof *stats);
        sg_cli_pipeline_cancel(p);
        return -1;
    }
    pthread_t compute, writer_t;
    if (pthread_create(&compute, NULL, compute_main, p) != 0 || pthread_create(&writer_t, NULL, writer_main, p) != 0)
        SG_CLI_DIE("cannot start threads");
    for (int i = 0; i < p->cfg->threads; i++) pthread_join(p->workers[i], NULL);
    pthread_join(compute, NULL);
    pthread_join(writer_t, NULL);
    p->st.wall_s = sg_cli_now() - p->t0;
    p->st.enumerated = p->seq;
    p->st.skipped_shard = p->skipped_shard;
    p->st.skipped_done = p->skipped_done;
    uint64_t enumerated = p->next_idx;
    p->st.not_reached = enumerated - p->st.embedded - p->st.failed;
    *stats = p->st;
    int rc = 0;
    if (p->fatal) {
        snprintf(err, errlen, "%s", p->fatal_msg);
        rc = -1;
    }
    pipeline_free(p);
    return rc;
}

int sg_cli_pipeline_run(const sg_cli_pipeline_cfg *cfg, sg_cli_pipeline_stats *stats, char *err, size_t errlen) {
    return sg_cli_pipeline_finish(sg_cli_pipeline_start(cfg), cfg->backend, cfg->writer, stats, err, errlen);
}
