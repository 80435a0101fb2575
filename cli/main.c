/* cli/main.c — siglip2-embed: arguments → weights → backend → pipeline → output, and the exit status.
 *
 * A run embeds images (the pipeline, cli/pipeline.c) or text queries (cli/text_run.c, with the text tower and
 * tokenizer from cli/text_setup.c); --labels adds zero-shot scores to image rows (set up before the image
 * backend starts, so a GPU holds one tower at a time).
 *
 * Exit status: 0 every input embedded; 1 some inputs failed (each reported on stderr as
 * "siglip2-embed: PATH: reason"), or no input was found at all (what the directories held instead is said);
 * 2 usage or setup error (bad flag, no weights, backend unavailable, output not writable) or a fatal error
 * during the run (backend failure, write error).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../kernel/backend.h"
#include "../preprocess/preprocess.h"
#include "../weights/model_load.h"
#include "../weights/text_load.h"
#include "args.h"
#include "buf.h"
#include "counter.h"
#include "inputs.h"
#include "memory.h"
#include "outpath.h"
#include "pathset.h"
#include "pipeline.h"
#include "progress.h"
#include "resume.h"
#include "resume_check.h"
#include "shard.h"
#include "shown_path.h"
#include "text_run.h"
#include "text_setup.h"
#include "writer.h"
#include "zeroshot.h"

enum { EXIT_ALL_OK = 0, EXIT_SOME_FAILED = 1, EXIT_SETUP = 2 };

static int setup_error(const char *msg) {
    fprintf(stderr, "siglip2-embed: %s\n", msg);
    return EXIT_SETUP;
}

/* "1 row", "2 rows": the noun for a count. */
static const char *plural(uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

/* 1 when the run has exactly one input and it is a single file (or stdin): json then writes one object. */
static int single_input(const sg_cli_args *a) {
    if (a->nfiles_from || a->npaths != 1) return 0;
    struct stat st;
    return strcmp(a->paths[0], "-") == 0 || stat(a->paths[0], &st) != 0 || !S_ISDIR(st.st_mode);
}

static sg_cli_format choose_format(const sg_cli_args *a, int single) {
    if (a->format != SG_FMT_AUTO) return a->format;
    if (a->output) {
        sg_cli_format f = sg_cli_format_from_path(a->output);
        return f != SG_FMT_AUTO ? f : SG_FMT_JSONL;
    }
    return single && isatty(STDOUT_FILENO) ? SG_FMT_JSON : SG_FMT_JSONL;
}

/* 1 when descriptors a and b are the same terminal (rows on stdout would land among the progress line's
 * redraws on stderr). */
static int same_terminal(int a, int b) {
    struct stat x, y;
    return isatty(a) && isatty(b) && fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_rdev == y.st_rdev;
}

/* Whether a run draws the progress line on stderr: automatically when stderr is a terminal, except when the rows
 * themselves are printed on that same terminal (its redraws would land among them); --progress forces it, and
 * then *rows_share_tty says the line must be cleared before each batch of rows. Image and text runs alike. */
static int progress_wanted(const sg_cli_args *a, int *rows_share_tty) {
    int rows_on_err_tty = !a->output && same_terminal(STDOUT_FILENO, STDERR_FILENO);
    int show = !a->quiet && (a->progress || (isatty(STDERR_FILENO) && !rows_on_err_tty));
    *rows_share_tty = show && rows_on_err_tty;
    return show;
}

/* Cores this process may run on: the affinity mask (what Slurm, taskset or a container grants), not every
 * core of the machine, so a job given 8 cores of a 128-core node starts 8 decode workers. */
static int usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int run_info(const sg_cli_args *a, sg_backend_opts *bo) {
    char where[4096], err[4096], why[1024], desc[8192];
    sg_model *m = NULL;
    if (sg_weights_locate(a->weights, where, sizeof where, err, sizeof err) != 0) {
        printf("weights: not found\n%s\n", err);
    } else if (!(m = sg_model_load(where, err, sizeof err))) {
        printf("weights: %s: cannot load: %s\n", where, err);
    }
    sg_backend_describe(m, bo, desc, sizeof desc);
    fputs(desc, stdout);
    if (m) { /* the text tower, loaded only to describe it (binding maps, converts nothing large) */
        char tok[4200];
        sg_text_model *tm = sg_text_model_load(where, err, sizeof err);
        if (!tm) {
            printf("text queries: unavailable: %s\n", err);
        } else {
            const sg_text_config *c = &tm->cfg;
            printf("text tower: hidden %d, mlp %d, heads %d, layers %d, %d positions, vocabulary %d, projection %d%s\n",
                   c->hidden_size, c->intermediate_size, c->num_heads, c->num_layers, c->max_positions,
                   c->vocab_size, c->projection_size, tm->has_logit ? "" : " (no logit_scale/bias: no zero-shot)");
            int amask = 1;
            char mwhy[4608];
            if (sg_text_tokenizer_path(where, tok, sizeof tok, err, sizeof err) != 0)
                printf("text queries: unavailable: %s\n", err);
            else if (sg_text_mask_rule(where, &amask, mwhy, sizeof mwhy, err, sizeof err) != 0)
                printf("tokenizer: %s\ntext queries: unavailable: %s\n", tok, err);
            else
                printf("tokenizer: %s\ntext attention: %s\n", tok, mwhy);
            sg_text_model_free(tm);
        }
    }
    if (m) {
        bo->max_batch = a->batch;
        sg_backend *b = sg_backend_create(m, bo, why, sizeof why, err, sizeof err);
        if (b) {
            printf("backend chosen: %s (%s)\n", b->name, why);
            if (b->numerics) printf("numerics: %s\n", b->numerics);
            sg_backend_destroy(b);
        } else {
            printf("backend chosen: none: %s\n", err);
        }
    }
    {
        const uint64_t avail = sg_cli_memory_available(), budget = sg_cli_decode_budget(a->decode_memory, avail);
        printf("decode memory: the decode workers may hold %.0f MiB at once (%s the %.0f MiB this process may still "
               "use)\n", budget / 1048576.0, a->decode_memory ? "--decode-memory; of" : "the default: half of",
               avail / 1048576.0);
    }
    sg_model_free(m);
    return EXIT_ALL_OK;
}

static void print_verbose(const sg_cli_pipeline_stats *st, const sg_backend *b, int threads, int batch,
                          uint64_t skipped_files, const char *skipped_summary) {
    double n = (double)st->embedded; /* images embedded per second: failed inputs are not images */
    /* The process's own accounting: user + sys over all threads, and the peak resident set as the OS reports it
     * to a parent (getrusage's ru_maxrss, what /usr/bin/time -v and wait4 show). */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double user = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
    double sys = (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    fprintf(stderr,
            "siglip2-embed: %llu embedded, %llu failed, %llu skipped (other shards), %llu skipped (already "
            "in output)\n"
            "  backend %s, batch %d, %d decode %s\n"
            "  decode workers, CPU seconds (thread CPU time, summed): read %.3f  decode %.3f  resize %.3f  "
            "(%.0f%% of the workers' wall time)\n"
            "  waits, wall seconds: workers for a free batch %.3f (summed), compute thread for decoded "
            "batches %.3f\n"
            "  compute %.3fs (submit + collect)  write %.3fs  wall %.3fs: %.1f images/s\n"
            "  process CPU: user %.3fs + sys %.3fs; peak memory %ld KiB (max RSS)\n",
            (unsigned long long)st->embedded, (unsigned long long)st->failed,
            (unsigned long long)st->skipped_shard, (unsigned long long)st->skipped_done, b->name, batch, threads,
            plural((uint64_t)threads, "worker", "workers"), st->read_s, st->decode_s, st->resize_s,
            st->wall_s > 0 ? 100.0 * (st->read_s + st->decode_s + st->resize_s) / (threads * st->wall_s) : 0.0,
            st->slot_wait_s, st->batch_wait_s, st->compute_s, st->write_s, st->wall_s,
            st->wall_s > 0 ? n / st->wall_s : 0.0, user, sys, ru.ru_maxrss);
    if (skipped_files)
        fprintf(stderr, "  %llu %s in directories skipped for their extension: %s\n",
                (unsigned long long)skipped_files, plural(skipped_files, "file", "files"), skipped_summary);
}

/* The decode memory budget's line of the -v summary. */
static void print_budget(sg_decode_budget *budget) {
    sg_decode_budget_stats bs;
    sg_decode_budget_get_stats(budget, &bs);
    fprintf(stderr, "  decode memory: budget %.1f MiB (--decode-memory), most reserved at once %.1f MiB; %llu %s "
                    "waited for room (%.3f s summed)",
            bs.limit / 1048576.0, bs.peak / 1048576.0, (unsigned long long)bs.waits,
            plural(bs.waits, "image", "images"), bs.wait_s);
    if (bs.over)
        fprintf(stderr, ", %llu went ahead over it while nothing else was decoding", (unsigned long long)bs.over);
    fputc('\n', stderr);
}

/* A hint when --weights names a file that is not a checkpoint but sits beside one (DIR/config.json). */
static void weights_hint(const char *weights, char *hint, size_t len) {
    hint[0] = '\0';
    struct stat st;
    size_t n = weights ? strlen(weights) : 0;
    if (!weights || stat(weights, &st) != 0 || !S_ISREG(st.st_mode) ||
        (n >= 12 && strcmp(weights + n - 12, ".safetensors") == 0))
        return;
    char dir[4096];
    const char *slash = strrchr(weights, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - weights) : 1, slash ? weights : ".");
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    char shown[4096];
    snprintf(hint, len, "; --weights takes a checkpoint directory or its .safetensors file: did you mean --weights %s?",
             sg_cli_shown_path(dir, shown, sizeof shown));
}

/* The process's peak memory as the OS counts it (ru_maxrss, KiB on Linux), for a text run's -v summary. */
static long text_peak_rss_kib(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* --device / --precision given while the cpu backend runs (auto found no usable GPU): a warning saying which were
 * ignored and why, so nothing asked for is dropped silently. 1 if it warned. */
static int warn_gpu_options_ignored(const sg_cli_args *a, const char *backend, const char *because) {
    const int prec = a->precision != SG_PRECISION_AUTO;
    if (strcmp(backend, "cpu") != 0 || !(a->device_set || prec)) return 0;
    fprintf(stderr, "siglip2-embed: warning: %s%s%s ignored: %s\n", a->device_set ? "--device" : "",
            a->device_set && prec ? " and " : "", prec ? "--precision" : "", because);
    return 1;
}

/* The note for a run that wrote no row over an existing -o FILE (the writer left it as it was). */
static void say_kept(const char *output) {
    char shown[4096];
    fprintf(stderr, "siglip2-embed: no row written: %s left as it was\n", sg_cli_shown_path(output, shown, sizeof shown));
}

/* JSONL to a regular file is written in place (appended with --resume): two runs on one file would interleave or
 * duplicate its rows (two --resume runs each append every input). The run holds an flock() on FILE from before it
 * reads it for --resume to its end, and a run that finds FILE locked is refused. With --resume a missing FILE is
 * created now, so that two runs starting together cannot both begin from nothing; without, *absent says so and
 * the writer locks FILE as it creates it, refusing one that another run made meanwhile (writer.h). 0, or -1
 * with err. */
static int lock_jsonl(const char *output, int resume, int *fd, int *absent, char *err, size_t errlen) {
    sg_cli_out_target t;
    if (!output || sg_cli_out_resolve(output, &t, err, errlen) != 0) return output ? -1 : 0;
    int rc = 0;
    *absent = t.mode == SG_OUT_REPLACE && !t.exists && !resume; /* the writer creates and locks it (writer.h) */
    if (t.mode == SG_OUT_REPLACE && (t.exists || resume)) {
        const int dlock = sg_cli_out_dir_lock(t.path); /* not between a replacement's check and its rename */
        *fd = open(t.path, O_RDONLY | (resume ? O_CREAT : 0) | O_CLOEXEC, 0666);
        char shown[4096];
        if (*fd >= 0) rc = sg_cli_out_lock(*fd, sg_cli_shown_path(output, shown, sizeof shown), err, errlen);
        if (dlock >= 0) close(dlock);
    }
    sg_cli_out_target_free(&t);
    return rc;
}

/* -o written as TARGET.tmp.PID and renamed (binary formats and JSON to a regular file: *replaced = 1): removes
 * what runs killed before renaming left beside TARGET (outpath.h), and says so. 0, or -1 with err. */
static int tidy_dead_runs(const char *output, sg_cli_format fmt, int quiet, int *replaced, char *err, size_t errlen) {
    *replaced = 0;
    if (!output || fmt == SG_FMT_JSONL) return 0; /* JSONL is written in place */
    sg_cli_out_target t;
    if (sg_cli_out_resolve(output, &t, err, errlen) != 0) return -1;
    char removed[2048];
    *replaced = t.mode == SG_OUT_REPLACE;
    int nrm = *replaced ? sg_cli_out_clean_stale(t.path, removed, sizeof removed) : 0;
    if (nrm && !quiet)
        fprintf(stderr, "siglip2-embed: removed %d temporary %s left by a run that was killed: %s\n", nrm,
                plural((uint64_t)nrm, "file", "files"), removed);
    sg_cli_out_target_free(&t);
    return 0;
}

/* A text run: queries in, rows out. */
static int run_texts(const sg_cli_args *a, sg_backend_opts *bo) {
    char where[4096], err[4096];
    if (sg_weights_locate(a->weights, where, sizeof where, err, sizeof err) != 0) return setup_error(err);
    /* 256 queries of 64 tokens keep a GPU busy (16k token rows per call) while a first row comes out fast */
    bo->max_batch = a->batch_set ? a->batch : 256;
    sg_cli_text_env env;
    if (sg_cli_text_env_open(&env, where, bo, err, sizeof err) != 0) return setup_error(err);
    if (a->verbose)
        fprintf(stderr, "siglip2-embed: text backend %s: %s\nsiglip2-embed: text attention: %s\n", env.backend->name,
                env.why, env.mask_why);
    /* GPU-only options that a text run could not honour: said, as for images, not silently dropped. */
    char because[1200];
    snprintf(because, sizeof because, "text runs on the cpu backend here (%s), which computes in fp32", env.why);
    if (!warn_gpu_options_ignored(a, env.backend->name, because) && a->precision == SG_PRECISION_FP8)
        fprintf(stderr, "siglip2-embed: warning: --precision fp8 ignored: text queries run on the portable cuda "
                        "path in bf16 (FP8 is for images, in the sm90 and sm100 megakernels)\n");
    int single = a->ntexts == 1 && !a->texts_from;
    sg_cli_format fmt = choose_format(a, single);
    sg_cli_writer_cfg wc = {a->output, fmt, env.backend->dim, single && fmt == SG_FMT_JSON, 0, 1, NULL, 0};
    int replaced, out_lock = -1; /* a JSONL output is locked as in an image run (lock_jsonl) */
    sg_cli_writer *w = tidy_dead_runs(a->output, fmt, a->quiet, &replaced, err, sizeof err) == 0 &&
                               (fmt != SG_FMT_JSONL ||
                                lock_jsonl(a->output, 0, &out_lock, &wc.absent, err, sizeof err) == 0)
                           ? sg_cli_writer_open(&wc, err, sizeof err)
                           : NULL;
    if (!w) {
        if (out_lock >= 0) close(out_lock);
        sg_cli_text_env_close(&env);
        return setup_error(err);
    }
    int rows_share_tty;
    sg_cli_progress prog;
    sg_cli_progress_init(&prog, progress_wanted(a, &rows_share_tty) ? stderr : NULL);
    sg_cli_progress_units(&prog, "query", "queries", "queries/s");
    sg_cli_text_cfg tc = {env.backend, &env.tok, w, a->texts, a->ntexts, a->texts_from, a->nul_sep,
                          bo->max_batch, a->normalize, a->on_error, a->verbose, &prog, rows_share_tty};
    sg_cli_text_stats st;
    int prc = sg_cli_text_run(&tc, &st, err, sizeof err);
    char cerr[1024];
    int kept = sg_cli_writer_keeps_existing(w);
    int crc = sg_cli_writer_close(w, prc == 0, cerr, sizeof cerr);
    if (prog.out) sg_cli_progress_finish(&prog, st.embedded, st.failed, st.embedded + st.failed);
    int rc = EXIT_SETUP;
    if (prc != 0) {
        setup_error(err);
    } else if (crc != 0) {
        setup_error(cerr);
    } else if (st.embedded + st.failed + st.not_reached == 0) {
        /* as an image run with nothing to embed: a script wants to know (exit 1) */
        fprintf(stderr, "siglip2-embed: 0 queries found (the --texts-from lists given hold no query)\n");
        rc = EXIT_SOME_FAILED;
    } else {
        rc = st.failed ? EXIT_SOME_FAILED : EXIT_ALL_OK;
        if (st.stopped && !a->quiet) /* how many were read past it depends on the batch: not a total to print */
            fprintf(stderr, "siglip2-embed: stopped at the first failed query (--on-error fail), %llu embedded before it\n",
                    (unsigned long long)st.embedded);
        else if (st.failed && !a->quiet)
            fprintf(stderr, "siglip2-embed: %llu of %llu queries failed\n", (unsigned long long)st.failed,
                    (unsigned long long)(st.failed + st.embedded + st.not_reached));
    }
    if (kept && !a->quiet) say_kept(a->output);
    if (a->verbose) {
        double n = (double)st.embedded;
        fprintf(stderr,
                "siglip2-embed: %llu queries embedded, %llu failed, %llu truncated to %d tokens\n"
                "  text backend %s, batch %d\n"
                "  tokenize %.3fs  compute %.3fs  write %.3fs  wall %.3fs: %.1f queries/s\n"
                "  peak memory %ld KiB\n",
                (unsigned long long)st.embedded, (unsigned long long)st.failed, (unsigned long long)st.truncated,
                env.backend->seq_len, env.backend->name, bo->max_batch, st.tokenize_s, st.compute_s, st.write_s,
                st.wall_s, st.wall_s > 0 ? n / st.wall_s : 0.0, text_peak_rss_kib());
    }
    if (out_lock >= 0) close(out_lock);
    sg_cli_text_env_close(&env);
    return rc;
}

/* 1 (with err) if a list the run reads (--files-from, --texts-from, --labels-from) is the -o file itself: JSONL is
 * written in place, so the list would be emptied, or appended to, while it is read. */
static int list_is_output(const sg_cli_args *a, char *err, size_t errlen) {
    struct stat o, l;
    if (!a->output || stat(a->output, &o) != 0 || !S_ISREG(o.st_mode)) return 0;
    const char *opt[3] = {"--texts-from", "--labels-from", "--files-from"};
    for (int i = 0; i < 2 + a->nfiles_from; i++) {
        const char *f = i == 0 ? a->texts_from : i == 1 ? a->labels_from : a->files_from[i - 2];
        if (f && strcmp(f, "-") && stat(f, &l) == 0 && l.st_dev == o.st_dev && l.st_ino == o.st_ino) {
            snprintf(err, errlen, "%s %s is the -o file itself: it would be overwritten while it is read", opt[i < 2 ? i : 2], f);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    double t_start = sg_cli_now();
    static sg_cli_args a; /* static: its --text array stays reachable until exit (it lives as long as argv) */
    char err[4096], msg[8192];
    if (sg_cli_args_parse(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "siglip2-embed: %s\nTry 'siglip2-embed --help' for the options.\n", err);
        sg_cli_args_free(&a);
        return EXIT_SETUP;
    }
    if (a.help || a.version) {
        if (a.help) sg_cli_usage(stdout);
        else printf("siglip2-embed %s\n", SG_CLI_VERSION);
        sg_cli_args_free(&a);
        return EXIT_ALL_OK;
    }
    if (!a.info && list_is_output(&a, err, sizeof err)) {
        sg_cli_args_free(&a);
        return setup_error(err);
    }
    sg_backend_opts bo = {a.backend, a.device, a.batch, 0, a.precision};
    if (a.info || sg_cli_args_is_text(&a)) {
        int irc = a.info ? run_info(&a, &bo) : run_texts(&a, &bo);
        sg_cli_args_free(&a);
        return irc;
    }

    int single = single_input(&a);
    sg_cli_format fmt = choose_format(&a, single);
    if (a.resume && fmt != SG_FMT_JSONL) {
        sg_cli_args_free(&a);
        return setup_error("--resume works with JSONL output only (-o FILE.jsonl or --format jsonl)");
    }

    int rc = EXIT_SETUP;
    sg_model *m = NULL;
    sg_backend *b = NULL;
    sg_cli_pathset done = {0};
    int out_lock = -1, out_absent = 0; /* a JSONL output's flock, held to the end (lock_jsonl) */
    sg_cli_inputs *in = NULL;
    sg_cli_writer *w = NULL;
    sg_cli_counter *counter = NULL;
    sg_cli_pipeline *pl = NULL;
    sg_decode_budget *budget = NULL;
    sg_zeroshot zs;
    memset(&zs, 0, sizeof zs);
    char where[4096], cerr[1024];
    if (sg_weights_locate(a.weights, where, sizeof where, err, sizeof err) != 0) {
        setup_error(err); /* already says where it looked and how to get the weights */
        goto out;
    }
    if (!(m = sg_model_load(where, err, sizeof err))) {
        char hint[4200], shown[4096];
        weights_hint(a.weights, hint, sizeof hint);
        snprintf(msg, sizeof msg, "cannot load the weights at %s: %s%s", sg_cli_shown_path(where, shown, sizeof shown),
                 err, hint);
        setup_error(msg);
        goto out;
    }
    double t_loaded = sg_cli_now();
    /* Zero-shot labels: embedded once, with the text tower, before the image backend takes the device. */
    const int labels = a.labels || a.labels_from;
    if (labels && fmt != SG_FMT_JSON && fmt != SG_FMT_JSONL) {
        setup_error("--labels adds zero-shot scores to JSON rows: use --format json or jsonl (a binary format has "
                    "nowhere to put them)");
        goto out;
    }
    if (labels && sg_cli_zeroshot_setup(&zs, &a, where, &bo, m->cfg.hidden_size, a.verbose, err, sizeof err) != 0) {
        setup_error(err);
        goto out;
    }
    /* The run is set up from the model (S, D) and the flags alone, so decoding can start before the backend:
     * a GPU backend takes about half a second to start (weights converted and uploaded), time in which the
     * decode workers fill the pipeline's ring. The output is opened only once the backend runs, so a backend
     * that cannot start leaves an existing output file untouched. */
    int S = m->cfg.image_size, D = m->cfg.hidden_size, batch = a.batch;
    sg_preprocess_opts pre;
    sg_preprocess_opts_default(&pre);
    pre.out_size = S;
    pre.resample = a.resample;
    pre.exif_rotate = a.exif_rotate;
    pre.fast_decode = a.fast_decode;
    pre.pillow_major = a.pillow_major;
    if (a.max_pixels) pre.max_pixels = a.max_pixels;
    if (a.max_file_bytes) pre.max_file_bytes = a.max_file_bytes;
    /* What the decode workers hold at once is bounded (preprocess/budget.c): a folder of huge scans on many
     * cores would otherwise hold one decoded image per worker, tens of GB. */
    if (!(budget = sg_decode_budget_new(sg_cli_decode_budget(a.decode_memory, sg_cli_memory_available())))) {
        setup_error("out of memory");
        goto out;
    }
    pre.budget = budget;

    char shown_out[4096];
    if (a.output) sg_cli_shown_path(a.output, shown_out, sizeof shown_out);
    if (fmt == SG_FMT_JSONL && lock_jsonl(a.output, a.resume, &out_lock, &out_absent, err, sizeof err) != 0) {
        setup_error(err);
        goto out;
    }
    sg_cli_resume_info ri;
    memset(&ri, 0, sizeof ri);
    if (a.resume) {
        struct stat rst;
        if (!a.quiet && stat(a.output, &rst) == 0 && rst.st_size > (64 << 20)) /* ~1 s a 64 MB: say what it does */
            fprintf(stderr, "siglip2-embed: reading %s (%lld MB) to resume it\n", shown_out,
                    (long long)(rst.st_size >> 20));
        if (sg_cli_resume_prepare(a.output, D, a.normalize ? 0 : SG_RESUME_RAW, labels ? &zs : NULL, &done,
                                  &ri, err, sizeof err) != 0) {
            setup_error(err);
            goto out;
        }
    }
    double t_setup = sg_cli_now();
    int replaced = 0;
    if (tidy_dead_runs(a.output, fmt, a.quiet, &replaced, err, sizeof err) != 0) {
        setup_error(err);
        goto out;
    }
    int reject_newlines = replaced && fmt >= SG_FMT_NPY; /* a binary format's FILE.paths lists one path a line */
    if (a.dump_dir && mkdir(a.dump_dir, 0777) != 0 && errno != EEXIST) {
        char shown[4096];
        snprintf(msg, sizeof msg, "--dump-preprocessed %s: cannot create: %s",
                 sg_cli_shown_path(a.dump_dir, shown, sizeof shown), strerror(errno));
        setup_error(msg);
        goto out;
    }
    in = sg_cli_inputs_open(a.paths, a.npaths, a.files_from, a.nfiles_from, a.nul_sep, a.all_files, err, sizeof err);
    if (!in) {
        setup_error(err);
        goto out;
    }
    int rows_share_tty;
    int show_progress = progress_wanted(&a, &rows_share_tty);
    sg_cli_progress prog;
    sg_cli_progress_init(&prog, show_progress ? stderr : NULL);
    if (show_progress)
        counter = sg_cli_counter_start(a.paths, a.npaths, a.files_from, a.nfiles_from, a.nul_sep, a.all_files,
                                       a.shard_k, a.shard_n, a.resume ? &done : NULL);
    int threads = a.threads ? a.threads : usable_cores();
    sg_cli_pipeline_cfg pc = {
        .inputs = in, .image_size = S, .dim = D, .reject_newline_paths = reject_newlines, .pre = &pre,
        .batch = batch, .threads = threads, .normalize = a.normalize, .on_error = a.on_error, .shard_k = a.shard_k,
        .shard_n = a.shard_n, .done = a.resume ? &done : NULL, .dump_dir = a.dump_dir, .progress = &prog,
        .counter = counter, .rows_share_progress_tty = rows_share_tty,
    };
    /* Early start only when nothing the workers read can block for long: a list or an image on stdin, or a
     * list that is a pipe, would keep a worker in read() if the backend then failed to start and the run had
     * to be called off. */
    int early = 1;
    for (int i = 0; i < a.npaths; i++) early &= strcmp(a.paths[i], "-") != 0;
    for (int i = 0; i < a.nfiles_from; i++) {
        struct stat lst;
        early &= strcmp(a.files_from[i], "-") != 0 && stat(a.files_from[i], &lst) == 0 && S_ISREG(lst.st_mode);
    }
    if (early) pl = sg_cli_pipeline_start(&pc);

    char why[1024];
    if (!(b = sg_backend_create(m, &bo, why, sizeof why, err, sizeof err))) {
        snprintf(msg, sizeof msg, "cannot start a backend: %s", err);
        setup_error(msg);
        goto out;
    }
    double t_backend = sg_cli_now();
    if (a.verbose) fprintf(stderr, "siglip2-embed: backend %s: %s\n", b->name, why);
    if (a.verbose && b->numerics) fprintf(stderr, "siglip2-embed: numerics: %s\n", b->numerics);
    /* GPU-only options that auto could not honour (no usable GPU here): said, not silently dropped. --backend
     * cpu with them is refused while parsing. */
    char because[1200];
    snprintf(because, sizeof because, "no GPU backend is running (%s); the cpu backend computes in fp32", why);
    warn_gpu_options_ignored(&a, b->name, because);
    /* FP8 lives in the megakernels (sm90: FC1; sm100: MXFP8); the portable path is bf16 whatever was asked. */
    if (strcmp(b->name, "cuda") == 0 && a.precision == SG_PRECISION_FP8)
        fprintf(stderr, "siglip2-embed: warning: --precision fp8 ignored: the cuda backend computes in bf16 (FP8 runs "
                        "in the sm90 and sm100 megakernels: H100 / H200, B200)\n");
    /* --resume: the file's rows were made by this model and labels (a few embedded again), then its torn last
     * line goes; a refused run leaves the file as it was. */
    if (a.resume) {
        sg_cli_resume_check_cfg chk = {a.output, &ri, b, &pre, a.normalize, labels ? &zs : NULL, a.verbose, a.quiet};
        if (sg_cli_resume_check(&chk, err, sizeof err) != 0 ||
            sg_cli_resume_cut_torn(a.output, &ri, err, sizeof err) != 0) {
            setup_error(err);
            goto out;
        }
        if (a.verbose || (ri.dropped_bytes && !a.quiet))
            fprintf(stderr, "siglip2-embed: resuming %s: %llu %s already there%s\n", shown_out,
                    (unsigned long long)ri.rows, plural(ri.rows, "row", "rows"),
                    ri.dropped_bytes ? ", torn last line removed" : "");
    }
    sg_cli_writer_cfg wc = {a.output, fmt, D, single && fmt == SG_FMT_JSON, a.resume, 0, labels ? &zs : NULL,
                            out_absent};
    w = sg_cli_writer_open(&wc, err, sizeof err);
    if (!w) {
        setup_error(err);
        goto out;
    }
    if (!pl) pl = sg_cli_pipeline_start(&pc);
    sg_cli_pipeline_stats st;
    int prc = sg_cli_pipeline_finish(pl, b, w, &st, err, sizeof err);
    pl = NULL;
    sg_cli_counter_stop(counter);
    counter = NULL;
    int kept = sg_cli_writer_keeps_existing(w);
    int crc = sg_cli_writer_close(w, prc == 0, cerr, sizeof cerr);
    w = NULL;
    if (prog.out) sg_cli_progress_finish(&prog, st.embedded, st.failed, st.embedded + st.failed);
    char skipped_summary[1024];
    uint64_t skipped_files = sg_cli_inputs_skipped(in, skipped_summary, sizeof skipped_summary);
    if (prc != 0) {
        setup_error(err);
    } else if (crc != 0) {
        setup_error(cerr);
    } else if (st.enumerated == 0) {
        /* Nothing to embed at all: a script wants to know (exit 1), and a person wants to know why. */
        if (skipped_files)
            fprintf(stderr, "siglip2-embed: 0 images found; %llu %s skipped: %s (directories are searched for "
                            "image extensions only; --all-files takes every file)\n",
                    (unsigned long long)skipped_files, plural(skipped_files, "file", "files"), skipped_summary);
        else
            fprintf(stderr, "siglip2-embed: 0 images found (no files in the directories and lists given)\n");
        rc = EXIT_SOME_FAILED;
    } else {
        rc = st.failed ? EXIT_SOME_FAILED : EXIT_ALL_OK;
        uint64_t tried = st.failed + st.embedded + st.not_reached;
        if (st.stopped && !a.quiet) /* how far the workers had read past it is no total to print */
            fprintf(stderr, "siglip2-embed: stopped at the first failed input (--on-error fail), %llu embedded before it\n",
                    (unsigned long long)st.embedded);
        else if (st.failed && !a.quiet)
            fprintf(stderr, "siglip2-embed: %llu of %llu %s failed\n", (unsigned long long)st.failed,
                    (unsigned long long)tried, plural(tried, "input", "inputs"));
    }
    if (rc == EXIT_ALL_OK && ri.null_rows) {
        /* the inputs behind them failed in an earlier run (reported there): the file is not all embeddings */
        if (!a.quiet)
            fprintf(stderr, "siglip2-embed: %s holds %llu null %s from an earlier run (inputs that failed there)\n",
                    shown_out, (unsigned long long)ri.null_rows, plural(ri.null_rows, "row", "rows"));
        rc = EXIT_SOME_FAILED;
    }
    if (prc == 0 && ri.rows && !st.skipped_done && st.enumerated && !a.quiet)
        fprintf(stderr, "siglip2-embed: warning: none of the %llu rows already in %s matched an input of this run: "
                        "rows are matched by path, so give PATH spelled as the first run did\n",
                (unsigned long long)ri.rows, shown_out);
    if (kept && !a.quiet) say_kept(a.output);
    if (a.verbose) {
        fprintf(stderr, "siglip2-embed: start-up: weights %.3fs, labels and --resume %.3fs, backend %.3fs%s\n",
                t_loaded - t_start, t_setup - t_loaded, t_backend - t_setup,
                early ? " (decoding ran meanwhile)" : " (then decoding started: an input comes from stdin or a pipe)");
        print_verbose(&st, b, threads, batch, skipped_files, skipped_summary);
        print_budget(budget);
    }
out:
    if (out_lock >= 0) close(out_lock);
    sg_cli_pipeline_cancel(pl);
    sg_decode_budget_free(budget); /* after the workers have stopped */
    sg_cli_counter_stop(counter);
    if (w) sg_cli_writer_close(w, 0, cerr, sizeof cerr);
    sg_cli_inputs_close(in);
    sg_cli_pathset_free(&done);
    sg_backend_destroy(b);
    sg_zeroshot_free(&zs);
    sg_model_free(m);
    sg_cli_args_free(&a);
    return rc;
}
