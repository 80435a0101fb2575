/* cli/args.h — the command line of siglip2-embed: every option, its validation, and --help.
 *
 * Parsing only checks the flags themselves (known option, value in range, no contradictory pair); what
 * depends on the files (the weights, the output's extension, whether a PATH is a directory) is resolved in
 * main.c. Numeric zero values mean "choose the default" where noted.
 */
#ifndef SG_CLI_ARGS_H
#define SG_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../kernel/backend.h"
#include "../preprocess/preprocess.h"

#define SG_CLI_VERSION "0.1.0"

typedef enum {
    SG_FMT_AUTO = 0, /* from -o's extension, else json for one image on a terminal, else jsonl */
    SG_FMT_JSON,
    SG_FMT_JSONL,
    SG_FMT_NPY,
    SG_FMT_FBIN,
    SG_FMT_FVECS,
    SG_FMT_F32
} sg_cli_format;

typedef enum { SG_ON_ERROR_SKIP = 0, SG_ON_ERROR_FAIL, SG_ON_ERROR_NULL } sg_cli_on_error;

typedef struct sg_cli_args {
    char **paths;            /* PATH operands (pointers into argv), in order */
    int npaths;
    char **files_from;       /* every --files-from FILE in order ("-" = stdin; pointers into argv), or NULL */
    int nfiles_from;
    int nul_sep;             /* -0: --files-from entries end with NUL instead of newline */
    int all_files;           /* --all-files: do not filter directory entries by extension */
    const char *output;      /* -o FILE, NULL = stdout */
    sg_cli_format format;
    int normalize;           /* 1 (default): L2-normalise; 0: raw pooler_output */
    int batch;               /* images per backend batch */
    int threads;             /* decode workers, 0 = all cores */
    sg_backend_kind backend;
    int device;
    int device_set;          /* --device was given */
    sg_precision precision;
    int quiet, progress, verbose;
    sg_cli_on_error on_error;
    int resume;
    int shard_k, shard_n;    /* shard_n == 0: no sharding */
    const char *weights;     /* --weights PATH, NULL = sg_weights_locate's search */
    int info, version, help;
    int exif_rotate;         /* 1 (default), 0 with --no-exif-rotate */
    sg_resample resample;
    int fast_decode;
    int pillow_major;        /* resize pass order of this Pillow version: 0 = latest (13), 12 = Pillow <= 12 */
    uint64_t max_pixels;     /* 0 = preprocess default */
    uint64_t max_file_bytes; /* 0 = preprocess default */
    uint64_t decode_memory;  /* --decode-memory, 0 = the default (sg_cli_decode_budget) */
    const char *dump_dir;    /* --dump-preprocessed DIR, or NULL */
    int batch_set;           /* -b was given (text runs otherwise use a larger default batch) */
    /* text queries: a run embeds either images (PATH, --files-from) or texts (--text, --texts-from) */
    char **texts;            /* --text values in order (malloc'd array of pointers into argv) */
    int ntexts;
    const char *texts_from;  /* --texts-from FILE ("-" = stdin), or NULL */
    /* zero-shot labels for image rows */
    const char *labels;      /* --labels "a,b,c", or NULL */
    const char *labels_from; /* --labels-from FILE, or NULL */
    int top_k;               /* --top-k, 0 = default (5) */
    const char *template_;   /* --template, NULL = the pipeline's "This is a photo of {}." */
} sg_cli_args;

/* A text run: --text or --texts-from was given. */
static inline int sg_cli_args_is_text(const sg_cli_args *a) { return a->ntexts > 0 || a->texts_from != NULL; }

/* Parses argv into a (defaults first). Returns 0, or -1 with a one-line reason in err (a usage error: the
 * caller prints it with a hint to --help and exits 2). Uses getopt_long, so it resets getopt's state.
 * Release a with sg_cli_args_free either way. */
int sg_cli_args_parse(int argc, char **argv, sg_cli_args *a, char *err, size_t errlen);

/* Frees what parsing allocated (the --text and --files-from arrays); a stays readable for its plain fields. */
void sg_cli_args_free(sg_cli_args *a);

/* Writes the --help text. */
void sg_cli_usage(FILE *f);

/* Name of a format ("jsonl", ...), and the format a file extension implies, in any case (out.NPY is npy, as
 * input discovery takes x.JPG), or SG_FMT_AUTO if none. */
const char *sg_cli_format_name(sg_cli_format f);
sg_cli_format sg_cli_format_from_path(const char *path);

/* Parses a byte count with an optional K/M/G/T suffix (powers of 1024). Returns 0, or -1. */
int sg_cli_parse_size(const char *s, uint64_t *out);

#endif
