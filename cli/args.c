/* cli/args.c — parsing and validating siglip2-embed's options, and the --help text (see args.h). */
#include "args.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "shard.h"

static const char *const k_format_names[] = {"auto", "json", "jsonl", "npy", "fbin", "fvecs", "f32"};

const char *sg_cli_format_name(sg_cli_format f) { return k_format_names[f]; }

static int parse_format(const char *s, sg_cli_format *out, int any_case) {
    for (int i = 1; i < (int)(sizeof k_format_names / sizeof k_format_names[0]); i++) {
        if ((any_case ? strcasecmp(s, k_format_names[i]) : strcmp(s, k_format_names[i])) == 0) {
            *out = (sg_cli_format)i;
            return 0;
        }
    }
    return -1;
}

sg_cli_format sg_cli_format_from_path(const char *path) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return SG_FMT_AUTO;
    sg_cli_format f;
    if (strcasecmp(dot + 1, "ndjson") == 0) return SG_FMT_JSONL;
    if (parse_format(dot + 1, &f, 1) == 0) return f;
    return SG_FMT_AUTO;
}

/* A whole decimal integer in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out) {
    if (!*s) return -1;
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || *e || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int sg_cli_parse_size(const char *s, uint64_t *out) {
    if (*s < '0' || *s > '9') return -1;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno) return -1;
    unsigned shift = 0;
    if (*e) {
        switch (*e) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: return -1;
        }
        if (e[1] && !((e[1] == 'B' || e[1] == 'b') && !e[2]) && !((e[1] == 'i') && (e[2] == 'B') && !e[3]))
            return -1;
    }
    if (shift && v > (~0ull >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

void sg_cli_usage(FILE *f) {
    fputs(
        "Usage: siglip2-embed [OPTIONS] PATH...\n"
        "       siglip2-embed [OPTIONS] --text QUERY... | --texts-from FILE\n"
        "Turn images, or text queries, into SigLIP2 embeddings in one space (google/siglip2-base-patch16-224):\n"
        "a text query's embedding finds the images it describes by cosine similarity.\n"
        "\n"
        "Inputs:\n"
        "  PATH...               image files and directories (recursed, entries sorted by name so runs are\n"
        "                        reproducible; only image extensions unless --all-files). A lone - reads\n"
        "                        one image's bytes from stdin (its path in the output is \"-\").\n"
        "      --files-from FILE read paths from FILE (- = stdin), one per line (CR LF lists: the CR dropped);\n"
        "                        read as it goes; may be repeated: the lists are read in order\n"
        "  -0, --null            --files-from and --texts-from entries end with NUL (find -print0)\n"
        "      --all-files       take every file found in directories, not only image extensions\n"
        "      --shard K/N       embed only the inputs whose path hashes (FNV-1a 64) to K mod N;\n"
        "                        K is 0-based (0..N-1, like SLURM_ARRAY_TASK_ID)\n"
        "\n"
        "Text queries (instead of images; rows carry \"text\" instead of \"path\"):\n"
        "  -t, --text QUERY      embed QUERY (repeat for several; they come first, in order)\n"
        "      --texts-from FILE embed every line of FILE (- = stdin; a trailing CR is dropped; an empty line\n"
        "                        is an empty query); read as it goes (with -0: NUL-separated entries).\n"
        "                        Queries are tokenised as the SigLIP2 processor does (64 tokens, longer ones\n"
        "                        truncated: -v says which); the tokenizer.json beside the weights is used.\n"
        "\n"
        "Zero-shot labels (image runs, JSON formats): each row also gets \"labels\": its best labels with\n"
        "the scores of Hugging Face's zero-shot-image-classification pipeline for SigLIP,\n"
        "sigmoid(exp(logit_scale) * cos + logit_bias) per label (independent: they do not sum to 1)\n"
        "      --labels L1,L2,.. candidate labels (comma-separated, spaces around each trimmed)\n"
        "      --labels-from FILE one label per line (blank lines ignored)\n"
        "      --top-k K         labels per row, best first (default 5)\n"
        "      --template T      the text each label is put into, {} (or {0}) where it goes (default,\n"
        "                        the pipeline's: \"This is a photo of {}.\")\n"
        "\n"
        "Output:\n"
        "  -o, --output FILE     write here (default, or -, stdout); a symlink is followed; a device,\n"
        "                        FIFO or /dev/fd/N is written in place (json, jsonl, f32, fvecs only)\n"
        "  -f, --format FMT      json | jsonl | npy | fbin | fvecs | f32 (default: from -o's extension,\n"
        "                        any case; else json for one image on a terminal, jsonl otherwise)\n"
        "      --normalize       L2-normalise each embedding (default; what cosine search wants)\n"
        "      --no-normalize    write HF's raw pooler_output\n"
        "      --resume          with -o FILE.jsonl: skip inputs already in FILE, append the rest (image\n"
        "                        runs; a file written with --labels continues only with --labels). A\n"
        "                        few inputs already in FILE are embedded again first: a file of other\n"
        "                        weights or another --template is refused, untouched\n"
        "      --on-error MODE   skip (default): report and leave the input out; fail: stop at the first\n"
        "                        failure; null: a null embedding (NaN row in binary formats), so rows\n"
        "                        stay aligned with inputs (not a name with a newline in a binary\n"
        "                        format: FILE.paths cannot list it, so it has no row in any mode)\n"
        "      --dump-preprocessed DIR  also write each input's SxS RGB as DIR/NNNNNN.ppm (input index)\n"
        "\n"
        "Model and compute:\n"
        "      --weights PATH    checkpoint directory or .safetensors file (default: $SIGLIP2_WEIGHTS,\n"
        "                        then the Hugging Face cache)\n"
        "      --backend NAME    auto | cpu | cuda | sm90 | sm100 (default auto)\n"
        "      --device N        CUDA device ordinal (default 0)\n"
        "      --precision P     bf16 | fp8 (GPU megakernels; default: the backend's choice)\n"
        "  -b, --batch N         images per batch (default 32); text queries per batch (default 256)\n"
        "  -j, --threads N       decode workers (default: every core this process may use)\n"
        "\n"
        "Preprocessing (defaults match Hugging Face's processor bit for bit):\n"
        "      --no-exif-rotate  ignore EXIF orientation\n"
        "      --resample NAME   bilinear (default, what SigLIP2 uses) | bicubic\n"
        "      --fast-decode     JPEG DCT-domain downscale before the resize (faster, not bit-exact)\n"
        "      --pillow-version V 13 (default) | 12: match that Pillow's resize pass order (they differ\n"
        "                        on some tall, narrow images) and TGA verdicts\n"
        "      --max-pixels N    refuse images with more than N decoded pixels (default 178956970,\n"
        "                        Pillow's decompression-bomb limit; K/M/G suffixes allowed)\n"
        "      --max-file-size B refuse files larger than B bytes (default 256M; K/M/G suffixes allowed)\n"
        "      --decode-memory B memory the decode workers may hold at once (default: half of what this\n"
        "                        process may still use); an image waits for room (K/M/G suffixes allowed)\n"
        "\n"
        "Reporting:\n"
        "      --progress        show progress on stderr even when it is not a terminal\n"
        "  -q, --quiet           no progress and no summary (errors are still reported)\n"
        "  -v, --verbose         the backend, why, and the numerics it computes in; where the time went,\n"
        "                        at the end: CPU seconds of the decode workers per stage, the compute\n"
        "                        and writer threads' time, waits, peak memory\n"
        "      --info            describe the GPUs, the model and the backend that would run (and its\n"
        "                        numerics); exit\n"
        "      --version         print the version and exit\n"
        "  -h, --help            this text\n"
        "\n"
        "Output formats: json {\"path\":...,\"embedding\":[...]} for a single file or stdin that was\n"
        "embedded, else an array of those ([] when nothing was); jsonl one such object per line (a path\n"
        "that is not UTF-8 also gets \"path_base64\", its exact bytes); npy float32 [N, D]; fbin uint32 N,\n"
        "uint32 D, rows; fvecs int32 D before each row; f32 raw little-endian rows. Binary formats written\n"
        "to a regular file also write FILE.paths (each path's bytes and a newline, same order) and appear\n"
        "only when complete.\n"
        "\n"
        "Exit status: 0 every input embedded; 1 some inputs failed (each reported as\n"
        "\"siglip2-embed: PATH: reason\") or no input was found; 2 usage or setup error.\n",
        f);
}

enum {
    OPT_FILES_FROM = 256, OPT_ALL_FILES, OPT_SHARD, OPT_NORMALIZE, OPT_NO_NORMALIZE, OPT_RESUME, OPT_ON_ERROR,
    OPT_DUMP, OPT_WEIGHTS, OPT_BACKEND, OPT_DEVICE, OPT_PRECISION, OPT_NO_EXIF, OPT_RESAMPLE, OPT_FAST_DECODE,
    OPT_MAX_PIXELS, OPT_MAX_FILE_SIZE, OPT_DECODE_MEMORY, OPT_PROGRESS, OPT_INFO, OPT_VERSION, OPT_PILLOW,
    OPT_TEXTS_FROM, OPT_LABELS, OPT_LABELS_FROM, OPT_TOP_K, OPT_TEMPLATE
};

static const struct option k_long[] = {
    {"files-from", required_argument, 0, OPT_FILES_FROM},
    {"text", required_argument, 0, 't'},
    {"texts-from", required_argument, 0, OPT_TEXTS_FROM},
    {"labels", required_argument, 0, OPT_LABELS},
    {"labels-from", required_argument, 0, OPT_LABELS_FROM},
    {"top-k", required_argument, 0, OPT_TOP_K},
    {"template", required_argument, 0, OPT_TEMPLATE},
    {"null", no_argument, 0, '0'},
    {"all-files", no_argument, 0, OPT_ALL_FILES},
    {"shard", required_argument, 0, OPT_SHARD},
    {"output", required_argument, 0, 'o'},
    {"format", required_argument, 0, 'f'},
    {"normalize", no_argument, 0, OPT_NORMALIZE},
    {"no-normalize", no_argument, 0, OPT_NO_NORMALIZE},
    {"resume", no_argument, 0, OPT_RESUME},
    {"on-error", required_argument, 0, OPT_ON_ERROR},
    {"dump-preprocessed", required_argument, 0, OPT_DUMP},
    {"weights", required_argument, 0, OPT_WEIGHTS},
    {"backend", required_argument, 0, OPT_BACKEND},
    {"device", required_argument, 0, OPT_DEVICE},
    {"precision", required_argument, 0, OPT_PRECISION},
    {"batch", required_argument, 0, 'b'},
    {"threads", required_argument, 0, 'j'},
    {"no-exif-rotate", no_argument, 0, OPT_NO_EXIF},
    {"resample", required_argument, 0, OPT_RESAMPLE},
    {"fast-decode", no_argument, 0, OPT_FAST_DECODE},
    {"pillow-version", required_argument, 0, OPT_PILLOW},
    {"max-pixels", required_argument, 0, OPT_MAX_PIXELS},
    {"max-file-size", required_argument, 0, OPT_MAX_FILE_SIZE},
    {"decode-memory", required_argument, 0, OPT_DECODE_MEMORY},
    {"progress", no_argument, 0, OPT_PROGRESS},
    {"quiet", no_argument, 0, 'q'},
    {"verbose", no_argument, 0, 'v'},
    {"info", no_argument, 0, OPT_INFO},
    {"version", no_argument, 0, OPT_VERSION},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

#define USAGE_ERR(...)                          \
    do {                                        \
        snprintf(err, errlen, __VA_ARGS__);     \
        return -1;                              \
    } while (0)

void sg_cli_args_free(sg_cli_args *a) {
    free(a->texts);
    a->texts = NULL;
    a->ntexts = 0;
    free(a->files_from);
    a->files_from = NULL;
    a->nfiles_from = 0;
}

int sg_cli_args_parse(int argc, char **argv, sg_cli_args *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->normalize = 1;
    a->batch = 32; /* fills a GPU's SMs with 196-token images while keeping latency and memory small */
    a->exif_rotate = 1;
    a->resample = SG_RESAMPLE_BILINEAR;
    a->backend = SG_BACKEND_AUTO;
    a->precision = SG_PRECISION_AUTO;
    optind = 0; /* glibc: 0 re-initialises getopt completely, so the parser can run more than once */
    opterr = 0;
    int c;
    long v;
    while ((c = getopt_long(argc, argv, ":0o:f:b:j:t:qvh", k_long, NULL)) != -1) {
        switch (c) {
        case OPT_FILES_FROM: /* every list is taken, in order: they are read one after the other */
            if (!a->files_from) a->files_from = calloc((size_t)argc, sizeof *a->files_from);
            if (!a->files_from) USAGE_ERR("out of memory");
            a->files_from[a->nfiles_from++] = optarg;
            break;
        case 't':
            /* at most argc values, pointers into argv; allocated on the first one only (sg_cli_args_free) */
            if (!a->texts && !(a->texts = calloc((size_t)argc + 1, sizeof *a->texts))) USAGE_ERR("out of memory");
            a->texts[a->ntexts++] = optarg;
            break;
        /* one list each: a second would replace the first without a word (--files-from, which takes every
         * list, is the exception) */
        case OPT_TEXTS_FROM:
            if (a->texts_from) USAGE_ERR("--texts-from given twice: one list a run (cat A B | siglip2-embed --texts-from -)");
            a->texts_from = optarg;
            break;
        case OPT_LABELS:
            if (a->labels) USAGE_ERR("--labels given twice: give one comma-separated list (--labels \"dog,cat\")");
            a->labels = optarg;
            break;
        case OPT_LABELS_FROM:
            if (a->labels_from) USAGE_ERR("--labels-from given twice: one list a run (cat A B > all.txt)");
            a->labels_from = optarg;
            break;
        case OPT_TOP_K:
            if (parse_long(optarg, 1, 1000000, &v) != 0) USAGE_ERR("--top-k: expected 1..1000000, got '%s'", optarg);
            a->top_k = (int)v;
            break;
        case OPT_TEMPLATE: a->template_ = optarg; break;
        case '0': a->nul_sep = 1; break;
        case OPT_ALL_FILES: a->all_files = 1; break;
        case OPT_SHARD:
            if (sg_cli_shard_parse(optarg, &a->shard_k, &a->shard_n, err, errlen) != 0) return -1;
            break;
        case 'o':
            if (!*optarg) USAGE_ERR("-o: empty file name");
            a->output = strcmp(optarg, "-") == 0 ? NULL : optarg; /* -o - is stdout, as usual */
            break;
        case 'f':
            if (parse_format(optarg, &a->format, 0) != 0)
                USAGE_ERR("--format: expected json, jsonl, npy, fbin, fvecs or f32, got '%s'", optarg);
            break;
        case OPT_NORMALIZE: a->normalize = 1; break;
        case OPT_NO_NORMALIZE: a->normalize = 0; break;
        case OPT_RESUME: a->resume = 1; break;
        case OPT_ON_ERROR:
            if (strcmp(optarg, "skip") == 0) a->on_error = SG_ON_ERROR_SKIP;
            else if (strcmp(optarg, "fail") == 0) a->on_error = SG_ON_ERROR_FAIL;
            else if (strcmp(optarg, "null") == 0) a->on_error = SG_ON_ERROR_NULL;
            else USAGE_ERR("--on-error: expected skip, fail or null, got '%s'", optarg);
            break;
        case OPT_DUMP:
            if (!*optarg) USAGE_ERR("--dump-preprocessed: empty directory name");
            a->dump_dir = optarg;
            break;
        case OPT_WEIGHTS: a->weights = optarg; break;
        case OPT_BACKEND:
            if (sg_backend_parse(optarg, &a->backend) != 0)
                USAGE_ERR("--backend: expected auto, cpu, cuda, sm90 or sm100, got '%s'", optarg);
            break;
        case OPT_DEVICE:
            if (parse_long(optarg, 0, 1023, &v) != 0) USAGE_ERR("--device: expected 0..1023, got '%s'", optarg);
            a->device = (int)v;
            a->device_set = 1;
            break;
        case OPT_PRECISION:
            if (strcmp(optarg, "bf16") == 0) a->precision = SG_PRECISION_BF16;
            else if (strcmp(optarg, "fp8") == 0) a->precision = SG_PRECISION_FP8;
            else USAGE_ERR("--precision: expected bf16 or fp8, got '%s'", optarg);
            break;
        case 'b':
            /* 4096 bounds the pixel ring (4096 x 150 KB per batch at S = 224) to something sane */
            if (parse_long(optarg, 1, 4096, &v) != 0) USAGE_ERR("--batch: expected 1..4096, got '%s'", optarg);
            a->batch = (int)v;
            a->batch_set = 1;
            break;
        case 'j':
            if (parse_long(optarg, 1, 1024, &v) != 0) USAGE_ERR("--threads: expected 1..1024, got '%s'", optarg);
            a->threads = (int)v;
            break;
        case OPT_NO_EXIF: a->exif_rotate = 0; break;
        case OPT_RESAMPLE:
            if (strcmp(optarg, "bilinear") == 0) a->resample = SG_RESAMPLE_BILINEAR;
            else if (strcmp(optarg, "bicubic") == 0) a->resample = SG_RESAMPLE_BICUBIC;
            else USAGE_ERR("--resample: expected bilinear or bicubic, got '%s'", optarg);
            break;
        case OPT_FAST_DECODE: a->fast_decode = 1; break;
        case OPT_PILLOW:
            /* Pillow 13 runs the vertical resize pass first for some size pairs; <= 12 always horizontal first */
            if (strcmp(optarg, "13") == 0) a->pillow_major = 0;
            else if (strcmp(optarg, "12") == 0) a->pillow_major = 12;
            else USAGE_ERR("--pillow-version: expected 12 or 13, got '%s'", optarg);
            break;
        case OPT_MAX_PIXELS:
            if (sg_cli_parse_size(optarg, &a->max_pixels) != 0 || a->max_pixels == 0)
                USAGE_ERR("--max-pixels: expected a positive count (K/M/G suffixes allowed), got '%s'", optarg);
            break;
        case OPT_MAX_FILE_SIZE:
            if (sg_cli_parse_size(optarg, &a->max_file_bytes) != 0 || a->max_file_bytes == 0)
                USAGE_ERR("--max-file-size: expected a positive byte count (K/M/G suffixes allowed), got '%s'",
                          optarg);
            break;
        case OPT_DECODE_MEMORY:
            if (sg_cli_parse_size(optarg, &a->decode_memory) != 0 || a->decode_memory == 0)
                USAGE_ERR("--decode-memory: expected a positive byte count (K/M/G suffixes allowed), got '%s'",
                          optarg);
            break;
        case OPT_PROGRESS: a->progress = 1; break;
        case 'q': a->quiet = 1; break;
        case 'v': a->verbose = 1; break;
        case OPT_INFO: a->info = 1; break;
        case OPT_VERSION: a->version = 1; break;
        case 'h': a->help = 1; break;
        case ':':
            USAGE_ERR("option '%s' needs a value", argv[optind - 1]);
        default: {
            const char *arg = argv[optind - 1];
            if (strncmp(arg, "--", 2) == 0 && optopt) USAGE_ERR("option '%s' takes no value", arg);
            if (strncmp(arg, "--", 2) == 0) USAGE_ERR("unknown option '%s'", arg);
            USAGE_ERR("unknown option '-%c'", optopt);
        }
        }
    }
    a->paths = argv + optind;
    a->npaths = argc - optind;
    if (a->help || a->version || a->info) return 0;
    const int text = sg_cli_args_is_text(a);
    if (text && (a->npaths || a->files_from))
        USAGE_ERR("give either images (PATH, --files-from) or text queries (--text, --texts-from), not both: run "
                  "once for each and concatenate the outputs");
    if (text && (a->labels || a->labels_from))
        USAGE_ERR("--labels scores images against labels; a text run has no images");
    if (text && (a->resume || a->shard_n || a->dump_dir || a->all_files))
        USAGE_ERR("%s applies to image runs only", a->resume ? "--resume" : a->shard_n ? "--shard"
                  : a->dump_dir ? "--dump-preprocessed" : "--all-files");
    if (a->labels && a->labels_from) USAGE_ERR("give --labels or --labels-from, not both");
    if ((a->top_k || a->template_) && !a->labels && !a->labels_from)
        USAGE_ERR("%s needs --labels or --labels-from", a->top_k ? "--top-k" : "--template");
    if (!text && a->npaths == 0 && !a->files_from)
        USAGE_ERR("no input: give image files or directories, --files-from, or --text / --texts-from");
    if (a->texts_from && !strcmp(a->texts_from, "-") && a->labels_from && !strcmp(a->labels_from, "-"))
        USAGE_ERR("stdin cannot hold both --texts-from and --labels-from");
    int stdin_imgs = 0, stdin_lists = 0;
    for (int i = 0; i < a->npaths; i++) stdin_imgs += strcmp(a->paths[i], "-") == 0;
    for (int i = 0; i < a->nfiles_from; i++) stdin_lists += strcmp(a->files_from[i], "-") == 0;
    if (stdin_imgs > 1) USAGE_ERR("'-' (an image on stdin) can be given only once");
    if (stdin_lists > 1) USAGE_ERR("--files-from - (the list on stdin) can be given only once");
    if (stdin_imgs && stdin_lists) USAGE_ERR("stdin cannot hold both an image ('-') and the --files-from list");
    if (a->nul_sep && !a->files_from && !a->texts_from) USAGE_ERR("-0 only applies to --files-from and --texts-from");
    if (a->labels_from && !strcmp(a->labels_from, "-") && (stdin_lists || stdin_imgs))
        USAGE_ERR("stdin cannot hold both %s and --labels-from", stdin_lists ? "the --files-from list" : "an image ('-')");
    if (a->resume && !a->output) USAGE_ERR("--resume needs -o FILE (the JSONL file to continue), not stdout");
    if (a->quiet && a->progress) USAGE_ERR("--quiet and --progress contradict each other");
    /* GPU-only options with the CPU backend asked for by name contradict it; with auto they are only warned
     * about (main.c), since auto may land on the CPU on a machine whose GPU is missing today. */
    if (a->backend == SG_BACKEND_CPU && a->precision != SG_PRECISION_AUTO)
        USAGE_ERR("--precision applies to the GPU backends; --backend cpu always computes in fp32");
    if (a->backend == SG_BACKEND_CPU && a->device_set)
        USAGE_ERR("--device picks a GPU; --backend cpu uses none");
    return 0;
}

