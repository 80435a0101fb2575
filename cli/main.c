/* cli/main.c — siglip2-embed: arguments → weights → backend → pipeline → output, and the exit status.
 *
 * A run embeds images (the pipeline, cli/pipeline.c) or text queries (cli/text_run.c, with the text tower and
 * tokenizer from cli/text_setup.c); --labels adds zero-shot scores to image rows (set up before the image
 * backend starts, so a GPU holds one tower at a time).
 *
 * Exit status: 0 every input embedded; 1 some inputs failed (each reported on stderr as
 * "siglip2-embed: PATH: reason"); 2 usage or setup error (bad flag, no weights, backend unavailable, output
 * not writable) or a fatal error during the run (backend failure, write error).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../kernel/backend.h"
#include "../preprocess/preprocess.h"
#include "../weights/model_load.h"
#include "../weights/text_load.h"
#include "args.h"
#include "buf.h"
#include "inputs.h"
#include "json_text.h"
#include "pathset.h"
#include "pipeline.h"
#include "progress.h"
#include "resume.h"
#include "shard.h"
#include "text_run.h"
#include "text_setup.h"
#include "writer.h"
#include "zeroshot.h"

enum { EXIT_ALL_OK = 0, EXIT_SOME_FAILED = 1, EXIT_SETUP = 2 };

static int setup_error(const char *msg) {
    fprintf(stderr, "siglip2-embed: %s\n", msg);
    return EXIT_SETUP;
}

/* 1 when the run has exactly one input and it is a single file (or stdin): json then writes one object. */
static int single_input(const sg_cli_args *a) {
    if (a->files_from || a->npaths != 1) return 0;
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

/* The number of inputs when it is known before enumeration (only file operands), after the filters. */
static uint64_t count_known_total(const sg_cli_args *a, const sg_cli_pathset *done) {
    if (a->files_from) return 0;
    uint64_t n = 0;
    sg_cli_buf key = {0};
    for (int i = 0; i < a->npaths; i++) {
        struct stat st;
        if (strcmp(a->paths[i], "-") != 0 && stat(a->paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            sg_cli_buf_free(&key);
            return 0;
        }
        if (!sg_cli_shard_keep(a->paths[i], a->shard_k, a->shard_n)) continue;
        sg_cli_buf_clear(&key);
        sg_cli_json_put_string(&key, a->paths[i]);
        if (done && sg_cli_pathset_has(done, key.p)) continue;
        n++;
    }
    sg_cli_buf_free(&key);
    return n;
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
            if (sg_text_tokenizer_path(where, tok, sizeof tok, err, sizeof err) == 0)
                printf("tokenizer: %s\n", tok);
            else
                printf("text queries: unavailable: %s\n", err);
            sg_text_model_free(tm);
        }
    }
    if (m) {
        bo->max_batch = a->batch;
        sg_backend *b = sg_backend_create(m, bo, why, sizeof why, err, sizeof err);
        if (b) {
            printf("backend chosen: %s (%s)\n", b->name, why);
            sg_backend_destroy(b);
        } else {
            printf("backend chosen: none: %s\n", err);
        }
    }
    sg_model_free(m);
    return EXIT_ALL_OK;
}

/* Peak resident memory of this process image in KiB (Linux /proc/self/status VmHWM), or -1 if unknown.
 * VmHWM starts afresh at exec, unlike getrusage's ru_maxrss, which also counts the forking parent. */
static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

static void print_verbose(const sg_cli_pipeline_stats *st, const sg_backend *b, int threads, int batch) {
    double n = (double)(st->embedded + st->failed);
    fprintf(stderr,
            "siglip2-embed: %llu embedded, %llu failed, %llu skipped (other shards), %llu skipped (already "
            "in output)\n"
            "  backend %s, batch %d, %d decode workers\n"
            "  read %.3fs  decode %.3fs  resize %.3fs  (CPU seconds summed over workers)\n"
            "  compute %.3fs  write %.3fs  wall %.3fs: %.1f images/s\n"
            "  peak memory %ld KiB\n",
            (unsigned long long)st->embedded, (unsigned long long)st->failed,
            (unsigned long long)st->skipped_shard, (unsigned long long)st->skipped_done, b->name, batch, threads,
            st->read_s, st->decode_s, st->resize_s, st->compute_s, st->write_s, st->wall_s,
            st->wall_s > 0 ? n / st->wall_s : 0.0, peak_rss_kib());
}

/* A text run: queries in, rows out. */
static int run_texts(const sg_cli_args *a, sg_backend_opts *bo) {
    char where[4096], err[4096];
    if (sg_weights_locate(a->weights, where, sizeof where, err, sizeof err) != 0) return setup_error(err);
    /* 256 queries of 64 tokens keep a GPU busy (16k token rows per call) while a first row comes out fast */
    bo->max_batch = a->batch_set ? a->batch : 256;
    sg_cli_text_env env;
    if (sg_cli_text_env_open(&env, where, bo, err, sizeof err) != 0) return setup_error(err);
    if (a->verbose) fprintf(stderr, "siglip2-embed: text backend %s: %s\n", env.backend->name, env.why);
    int single = a->ntexts == 1 && !a->texts_from;
    sg_cli_format fmt = a->format != SG_FMT_AUTO ? a->format
                        : a->output && sg_cli_format_from_path(a->output) != SG_FMT_AUTO
                            ? sg_cli_format_from_path(a->output)
                            : single && !a->output && isatty(STDOUT_FILENO) ? SG_FMT_JSON : SG_FMT_JSONL;
    sg_cli_writer_cfg wc = {a->output, fmt, env.backend->dim, single && fmt == SG_FMT_JSON, 0, 1, NULL};
    sg_cli_writer *w = sg_cli_writer_open(&wc, err, sizeof err);
    if (!w) {
        sg_cli_text_env_close(&env);
        return setup_error(err);
    }
    sg_cli_progress prog;
    sg_cli_progress_init(&prog, !a->quiet && (a->progress || isatty(STDERR_FILENO)) ? stderr : NULL);
    sg_cli_text_cfg tc = {env.backend, &env.tok, w, a->texts, a->ntexts, a->texts_from, a->nul_sep,
                          bo->max_batch, a->normalize, a->on_error, a->verbose, &prog};
    sg_cli_text_stats st;
    int prc = sg_cli_text_run(&tc, &st, err, sizeof err);
    char cerr[1024];
    int crc = sg_cli_writer_close(w, prc == 0, cerr, sizeof cerr);
    if (prog.out) sg_cli_progress_finish(&prog, st.embedded, st.failed, st.embedded + st.failed);
    int rc = EXIT_SETUP;
    if (prc != 0) {
        setup_error(err);
    } else if (crc != 0) {
        setup_error(cerr);
    } else {
        rc = st.failed ? EXIT_SOME_FAILED : EXIT_ALL_OK;
        if (st.failed && !a->quiet)
            fprintf(stderr, "siglip2-embed: %llu of %llu queries failed%s\n", (unsigned long long)st.failed,
                    (unsigned long long)(st.failed + st.embedded + st.not_reached),
                    st.stopped ? " (stopped at the first: --on-error fail)" : "");
    }
    if (a->verbose) {
        double n = (double)(st.embedded + st.failed);
        fprintf(stderr,
                "siglip2-embed: %llu queries embedded, %llu failed, %llu truncated to %d tokens\n"
                "  text backend %s, batch %d\n"
                "  tokenize %.3fs  compute %.3fs  write %.3fs  wall %.3fs: %.1f queries/s\n"
                "  peak memory %ld KiB\n",
                (unsigned long long)st.embedded, (unsigned long long)st.failed, (unsigned long long)st.truncated,
                env.backend->seq_len, env.backend->name, bo->max_batch, st.tokenize_s, st.compute_s, st.write_s,
                st.wall_s, st.wall_s > 0 ? n / st.wall_s : 0.0, peak_rss_kib());
    }
    sg_cli_text_env_close(&env);
    return rc;
}

int main(int argc, char **argv) {
    static sg_cli_args a; /* static: its --text array stays reachable until exit (it lives as long as argv) */
    char err[4096], msg[8192];
    if (sg_cli_args_parse(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "siglip2-embed: %s\nTry 'siglip2-embed --help' for the options.\n", err);
        return EXIT_SETUP;
    }
    if (a.help) {
        sg_cli_usage(stdout);
        return EXIT_ALL_OK;
    }
    if (a.version) {
        printf("siglip2-embed %s\n", SG_CLI_VERSION);
        return EXIT_ALL_OK;
    }
    sg_backend_opts bo = {a.backend, a.device, a.batch, 0, a.precision};
    if (a.info) return run_info(&a, &bo);
    if (sg_cli_args_is_text(&a)) return run_texts(&a, &bo);

    int single = single_input(&a);
    sg_cli_format fmt = choose_format(&a, single);
    if (a.resume && fmt != SG_FMT_JSONL)
        return setup_error("--resume works with JSONL output only (-o FILE.jsonl or --format jsonl)");

    char where[4096];
    if (sg_weights_locate(a.weights, where, sizeof where, err, sizeof err) != 0) {
        return setup_error(err); /* already says where it looked and how to get the weights */
    }
    sg_model *m = sg_model_load(where, err, sizeof err);
    if (!m) {
        snprintf(msg, sizeof msg, "cannot load the weights at %s: %s", where, err);
        return setup_error(msg);
    }
    /* Zero-shot labels: embedded once, with the text tower, before the image backend takes the device. */
    sg_zeroshot zs;
    memset(&zs, 0, sizeof zs);
    const int labels = a.labels || a.labels_from;
    if (labels && fmt != SG_FMT_JSON && fmt != SG_FMT_JSONL) {
        sg_model_free(m);
        return setup_error("--labels adds zero-shot scores to JSON rows: use --format json or jsonl (a binary "
                           "format has nowhere to put them)");
    }
    if (labels && sg_cli_zeroshot_setup(&zs, &a, where, &bo, m->cfg.hidden_size, a.verbose, err, sizeof err) != 0) {
        sg_model_free(m);
        return setup_error(err);
    }
    char why[1024];
    sg_backend *b = sg_backend_create(m, &bo, why, sizeof why, err, sizeof err);
    if (!b) {
        snprintf(msg, sizeof msg, "cannot start a backend: %s", err);
        sg_zeroshot_free(&zs);
        sg_model_free(m);
        return setup_error(msg);
    }
    if (a.verbose) fprintf(stderr, "siglip2-embed: backend %s: %s\n", b->name, why);
    int batch = a.batch < b->max_batch ? a.batch : b->max_batch;
    if (batch < 1) batch = 1;

    sg_preprocess_opts pre;
    sg_preprocess_opts_default(&pre);
    pre.out_size = b->image_size;
    pre.resample = a.resample;
    pre.exif_rotate = a.exif_rotate;
    pre.fast_decode = a.fast_decode;
    pre.pillow_major = a.pillow_major;
    if (a.max_pixels) pre.max_pixels = a.max_pixels;
    if (a.max_file_bytes) pre.max_file_bytes = a.max_file_bytes;

    int rc = EXIT_SETUP;
    sg_cli_pathset done = {0};
    sg_cli_inputs *in = NULL;
    sg_cli_writer *w = NULL;
    if (a.resume) {
        sg_cli_resume_info ri;
        if (sg_cli_resume_prepare(a.output, b->dim, &done, &ri, err, sizeof err) != 0) {
            setup_error(err);
            goto out;
        }
        if (a.verbose || (ri.dropped_bytes && !a.quiet))
            fprintf(stderr, "siglip2-embed: resuming %s: %llu rows already there%s\n", a.output,
                    (unsigned long long)ri.rows, ri.dropped_bytes ? ", torn last line removed" : "");
    }
    if (a.dump_dir && mkdir(a.dump_dir, 0777) != 0 && errno != EEXIST) {
        snprintf(msg, sizeof msg, "--dump-preprocessed %s: cannot create: %s", a.dump_dir, strerror(errno));
        setup_error(msg);
        goto out;
    }
    in = sg_cli_inputs_open(a.paths, a.npaths, a.files_from, a.nul_sep, a.all_files, err, sizeof err);
    if (!in) {
        setup_error(err);
        goto out;
    }
    sg_cli_writer_cfg wc = {a.output, fmt, b->dim, single && fmt == SG_FMT_JSON, a.resume, 0, labels ? &zs : NULL};
    w = sg_cli_writer_open(&wc, err, sizeof err);
    if (!w) {
        setup_error(err);
        goto out;
    }
    sg_cli_progress prog;
    sg_cli_progress_init(&prog, !a.quiet && (a.progress || isatty(STDERR_FILENO)) ? stderr : NULL);
    int threads = a.threads ? a.threads : usable_cores();
    sg_cli_pipeline_cfg pc = {
        .backend = b, .inputs = in, .writer = w, .pre = &pre, .batch = batch, .threads = threads,
        .normalize = a.normalize, .on_error = a.on_error, .shard_k = a.shard_k, .shard_n = a.shard_n,
        .done = a.resume ? &done : NULL, .dump_dir = a.dump_dir, .progress = &prog,
        .total_hint = count_known_total(&a, a.resume ? &done : NULL),
    };
    sg_cli_pipeline_stats st;
    int prc = sg_cli_pipeline_run(&pc, &st, err, sizeof err);
    char cerr[1024];
    int crc = sg_cli_writer_close(w, prc == 0, cerr, sizeof cerr);
    w = NULL;
    if (prog.out) sg_cli_progress_finish(&prog, st.embedded, st.failed, st.embedded + st.failed);
    if (prc != 0) {
        setup_error(err);
    } else if (crc != 0) {
        setup_error(cerr);
    } else {
        rc = st.failed ? EXIT_SOME_FAILED : EXIT_ALL_OK;
        if (st.failed && !a.quiet)
            fprintf(stderr, "siglip2-embed: %llu of %llu inputs failed%s\n", (unsigned long long)st.failed,
                    (unsigned long long)(st.failed + st.embedded + st.not_reached),
                    st.stopped ? " (stopped at the first: --on-error fail)" : "");
    }
    if (a.verbose) print_verbose(&st, b, threads, batch);
out:
    if (w) sg_cli_writer_close(w, 0, cerr, sizeof cerr);
    sg_cli_inputs_close(in);
    sg_cli_pathset_free(&done);
    sg_backend_destroy(b);
    sg_zeroshot_free(&zs);
    sg_model_free(m);
    return rc;
}
