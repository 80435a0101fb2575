/* cli/resume.c — validating, repairing and indexing an interrupted JSONL output (see resume.h); the same row
 * grammar tells our_output.c whether an existing -o FILE holds rows of ours (sg_cli_resume_is_any_row). */
#include "resume.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "json_text.h"
#include "shown_path.h"
#include "zeroshot.h"

/* The two kinds of row: image rows name their input "path", text runs' rows name their query "text". Each
 * kind's key also names its _base64 field ("path_base64"). Only image rows carry "labels". */
typedef struct row_key {
    const char *start;  /* {"path":"  : what the row begins with */
    const char *base64; /* ,"path_base64":"  */
    int labels;         /* the row may carry ,"labels":[...] */
} row_key;
static const row_key k_path = {"{\"path\":\"", ",\"path_base64\":\"", 1};
static const row_key k_text = {"{\"text\":\"", ",\"text_base64\":\"", 0};

static int expect(const char **p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0) return -1;
    *p += n;
    return 0;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Unescapes the JSON string body [s, e) as the writer escapes paths (\" \\ \n \t \r \b \f \u00XX) into out.
 * Returns 0, or -1 on an escape the writer never makes. */
static int unescape(const char *s, const char *e, sg_cli_buf *out) {
    sg_cli_buf_clear(out);
    while (s < e) {
        if (*s != '\\') {
            sg_cli_buf_putc(out, *s++);
            continue;
        }
        if (e - s < 2) return -1;
        char c = s[1], v;
        s += 2;
        switch (c) {
        case '"': v = '"'; break;
        case '\\': v = '\\'; break;
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case 'b': v = '\b'; break;
        case 'f': v = '\f'; break;
        case 'u': {
            if (e - s < 4 || s[0] != '0' || s[1] != '0' || hexval(s[2]) < 0 || hexval(s[3]) < 0) return -1;
            int x = hexval(s[2]) * 16 + hexval(s[3]);
            if (x == 0 || x >= 0x20) return -1; /* paths hold no NUL; the writer escapes only controls */
            v = (char)x;
            s += 4;
            break;
        }
        default: return -1;
        }
        sg_cli_buf_putc(out, v);
    }
    if (!out->p) sg_cli_buf_append(out, "", 0);
    return 0;
}

/* Moves p past a number as the writer prints floats (%.9g: digits, sign, point, exponent), its value in *value
 * (if not NULL). -1 if none is there. */
static int skip_number(const char **p, const char *end, double *value) {
    const char *t = *p;
    while (*p < end && **p && strchr("0123456789+-.eE", **p)) (*p)++;
    if (*p == t || *p - t >= 64) return -1;
    char num[64];
    memcpy(num, t, (size_t)(*p - t));
    num[*p - t] = '\0';
    char *e;
    double v = strtod(num, &e);
    if (value) *value = v;
    return *e ? -1 : 0;
}

/* --- the row grammar of resume.h, on a line that may stop anywhere ---
 * Used whole by row_prefix on a torn last line, and by sg_cli_resume_parse_line for the labels block (which must
 * then end), so a complete row and a torn one are judged by one grammar. Each step checks the next part on a line
 * that may stop anywhere (a crash can cut a write() at any byte): TP_MATCHED moves p past the part, TP_ENDED says the line ended inside it
 * with everything so far as the writer makes it, TP_MISMATCH that the writer never makes these bytes. */
enum { TP_MATCHED, TP_ENDED, TP_MISMATCH };

/* expect for a line that may stop anywhere: the rest of the line is lit, or a beginning of it. */
static int expect_prefix(const char **p, const char *end, const char *lit) {
    size_t n = strlen(lit), have = (size_t)(end - *p);
    if (have < n) return memcmp(*p, lit, have) == 0 ? TP_ENDED : TP_MISMATCH;
    if (memcmp(*p, lit, n) != 0) return TP_MISMATCH;
    *p += n;
    return TP_MATCHED;
}

/* One escape at p (on the backslash), as json_put_string writes them: \" \\ \n \t \r \b \f, or \u00XX in
 * lower-case hex for the other control bytes (never \u0000: paths and labels hold no NUL). */
static int escape_prefix(const char **p, const char *end) {
    const char *s = *p + 1;
    if (s == end) return TP_ENDED;
    if (*s && strchr("\"\\ntrbf", *s)) {
        *p = s + 1;
        return TP_MATCHED;
    }
    if (*s != 'u') return TP_MISMATCH;
    for (int i = 1; i <= 4; i++) {
        if (s + i == end) return TP_ENDED;
        char c = s[i];
        int ok = i <= 2 ? c == '0' : i == 3 ? c == '0' || c == '1' : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        if (!ok || (i == 4 && s[3] == '0' && c == '0')) return TP_MISMATCH;
    }
    *p = s + 5;
    return TP_MATCHED;
}

/* The body and closing quote of a string json_put_string writes (the opening quote is already consumed). */
static int string_prefix(const char **p, const char *end) {
    while (*p < end) {
        unsigned char c = (unsigned char)**p;
        if (c == '"') {
            (*p)++;
            return TP_MATCHED;
        }
        if (c < 0x20) return TP_MISMATCH;
        if (c != '\\') {
            (*p)++;
            continue;
        }
        int r = escape_prefix(p, end);
        if (r != TP_MATCHED) return r;
    }
    return TP_ENDED;
}

/* The body and closing quote of path_base64: standard base64 letters, '=' only as padding at the end. */
static int base64_prefix(const char **p, const char *end) {
    int pad = 0;
    for (; *p < end && **p != '"'; (*p)++) {
        char c = **p;
        if (c == '=') pad++;
        else if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
            return TP_MISMATCH;
        if (pad > 2) return TP_MISMATCH;
    }
    if (*p == end) return TP_ENDED;
    (*p)++;
    return TP_MATCHED;
}

/* 1 if [s, e) can begin a number the writer prints (%.9g: -?digits[.digits][e[+-]digits]). */
static int is_number_start(const char *s, const char *e) {
    int digits = 0, dot = 0, exp = 0;
    if (s < e && *s == '-') s++;
    for (; s < e; s++) {
        if (*s >= '0' && *s <= '9') {
            digits++;
        } else if (*s == '.' && digits && !dot && !exp) {
            dot = 1;
        } else if ((*s == 'e' || *s == 'E') && digits && !exp) {
            exp = 1;
            if (s + 1 < e && (s[1] == '+' || s[1] == '-')) s++;
        } else {
            return 0;
        }
    }
    return 1;
}

/* One number as json_put_float writes it (a NaN or infinity as null); the line may end inside it. */
static int number_prefix(const char **p, const char *end) {
    if (*p < end && **p == 'n') return expect_prefix(p, end, "null");
    const char *t = *p;
    while (*p < end && **p && strchr("0123456789+-.eE", **p)) (*p)++;
    if (*p == end) return *p - t < 64 && is_number_start(t, *p) ? TP_ENDED : TP_MISMATCH;
    *p = t;
    return skip_number(p, end, NULL) == 0 ? TP_MATCHED : TP_MISMATCH;
}

/* The zero-shot block after ,"labels":[ : {"label":"...","score":S} entries separated by commas, then ]. */
static int labels_prefix(const char **p, const char *end) {
    for (;;) {
        int r;
        if ((r = expect_prefix(p, end, "{\"label\":\"")) != TP_MATCHED || (r = string_prefix(p, end)) != TP_MATCHED ||
            (r = expect_prefix(p, end, ",\"score\":")) != TP_MATCHED || (r = number_prefix(p, end)) != TP_MATCHED ||
            (r = expect_prefix(p, end, "}")) != TP_MATCHED)
            return r;
        if (*p == end) return TP_ENDED;
        if (**p != ',') return expect_prefix(p, end, "]");
        (*p)++;
    }
}

/* The embedding after ,"embedding": — null} or [ exactly dim numbers ]} (any count of at least one when dim is
 * 0) — as far as the line goes. */
static int embedding_prefix(const char **p, const char *end, int dim) {
    int r = expect_prefix(p, end, "null}");
    if (r != TP_MISMATCH) return r;
    if ((r = expect_prefix(p, end, "[")) != TP_MATCHED) return r;
    for (int i = 0;; i++) {
        if (dim > 0 && i >= dim) return TP_MISMATCH; /* more numbers than this model's dim: another model's row */
        if ((r = number_prefix(p, end)) != TP_MATCHED) return r;
        if (*p == end) return TP_ENDED;
        if (**p != ',') break;
        (*p)++;
    }
    return expect_prefix(p, end, "]}");
}

/* sg_cli_resume_parse_line for either kind of row (k), at dim (0: any count of at least one number); with emb
 * (dim > 0), also the row's numbers, and *nonfinite = 1 if one of them was written null (a NaN or infinity). */
static int parse_row_values(const row_key *k, const char *line, size_t len, int dim, sg_cli_buf *key,
                            sg_cli_resume_row *row, float *emb, int *nonfinite, char *err, size_t errlen) {
    const char *p = line, *end = line + len;
    sg_cli_resume_row r = {0};
    if (expect(&p, end, k->start) != 0) {
        snprintf(err, errlen, "does not start with %s", k->start);
        return -1;
    }
    const char *s0 = p;
    while (p < end && *p != '"') {
        if ((unsigned char)*p < 0x20) {
            snprintf(err, errlen, "raw control byte 0x%02x inside the path", (unsigned char)*p);
            return -1;
        }
        p += (*p == '\\' && p + 1 < end) ? 2 : 1;
    }
    if (p >= end) {
        snprintf(err, errlen, "unterminated path string");
        return -1;
    }
    const char *s1 = p++; /* the path string's body is [s0, s1) */
    if (unescape(s0, s1, key) != 0 || strlen(key->p) != key->len) {
        snprintf(err, errlen, "the path string has an escape siglip2-embed does not write");
        return -1;
    }
    int has_b64 = 0;
    if (expect(&p, end, k->base64) == 0) {
        const char *b0 = p;
        while (p < end && *p != '"') p++;
        if (p >= end) {
            snprintf(err, errlen, "unterminated path_base64 string");
            return -1;
        }
        if (sg_cli_base64_decode(b0, (size_t)(p - b0), key) != 0 || strlen(key->p) != key->len ||
            sg_cli_utf8_valid(key->p)) {
            snprintf(err, errlen, "path_base64 is not the base64 of a path that is not valid UTF-8");
            return -1;
        }
        p++;
        has_b64 = 1;
    } else if (!sg_cli_utf8_valid(key->p)) {
        snprintf(err, errlen, "the path is not valid UTF-8 and has no path_base64");
        return -1;
    }
    /* The row must be exactly what the writer makes of these bytes: then equal keys mean equal paths. */
    sg_cli_buf canon = {0};
    sg_cli_json_put_string(&canon, key->p);
    int same = canon.len == (size_t)(s1 - s0) + 2 && memcmp(canon.p + 1, s0, (size_t)(s1 - s0)) == 0;
    sg_cli_buf_free(&canon);
    if (!same) {
        snprintf(err, errlen, "the path is not written the way siglip2-embed writes %s",
                 has_b64 ? "the bytes of its path_base64" : "it");
        return -1;
    }
    if (k->labels && end - p > 10 && memcmp(p, ",\"labels\":", 10) == 0) {
        /* the same grammar as a torn row's, required to end (one grammar for the labels, not two) */
        const char *l0 = p + strlen(",\"labels\":[");
        if (expect(&p, end, ",\"labels\":[") != 0 || labels_prefix(&p, end) != TP_MATCHED) {
            snprintf(err, errlen, "\"labels\" is not written the way siglip2-embed writes zero-shot labels");
            return -1;
        }
        r.has_labels = 1;
        r.labels = l0;
        r.labels_len = (size_t)(p - 1 - l0); /* up to the closing ] */
    }
    if (expect(&p, end, ",\"embedding\":") != 0) {
        snprintf(err, errlen, "no \"embedding\" after the path%s", r.has_labels ? " and its labels" : "");
        return -1;
    }
    if (expect(&p, end, "null}") == 0) {
        if (p != end) goto trailing;
        r.is_null = 1;
        if (row) *row = r;
        return 0;
    }
    if (expect(&p, end, "[") != 0) {
        snprintf(err, errlen, "embedding is neither an array nor null");
        return -1;
    }
    int count = 0, seen_null = 0;
    double ss = 0; /* the squares of the numbers up to the first null (a non-finite value) element */
    for (;;) {
        double v = 0;
        if (expect(&p, end, "null") == 0) {
            seen_null = 1;
        } else if (skip_number(&p, end, &v) != 0) {
            snprintf(err, errlen, "embedding element %d is not a number", count);
            return -1;
        } else if (!seen_null) {
            ss += v * v;
        }
        if (emb && count < dim) emb[count] = (float)v;
        count++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (expect(&p, end, "]}") != 0) {
        snprintf(err, errlen, "embedding array not closed by ]}");
        return -1;
    }
    if (dim > 0 && count != dim) {
        snprintf(err, errlen, "embedding has %d %s, expected %d (another model?)", count, count == 1 ? "value" : "values",
                 dim);
        return -1;
    }
    if (p != end) goto trailing;
    r.norm = sqrt(ss);
    if (row) *row = r;
    if (nonfinite) *nonfinite = seen_null;
    return 0;
trailing:
    snprintf(err, errlen, "unexpected bytes after the row's closing brace");
    return -1;
}

static int parse_row(const row_key *k, const char *line, size_t len, int dim, sg_cli_buf *key, sg_cli_resume_row *row,
                     char *err, size_t errlen) {
    return parse_row_values(k, line, len, dim, key, row, NULL, NULL, err, errlen);
}

int sg_cli_resume_parse_line(const char *line, size_t len, int dim, sg_cli_buf *key, sg_cli_resume_row *row,
                             char *err, size_t errlen) {
    return parse_row(&k_path, line, len, dim, key, row, err, errlen);
}

/* --- the torn last line: a prefix of a row the writer could write --- */
/* Checks line[0, len) against the whole row grammar of resume.h. TP_ENDED: a beginning of a row the writer
 * could write at this dim (a torn write); TP_MATCHED: a complete row, with nothing after its closing brace;
 * TP_MISMATCH: not the writer's. */
static int row_prefix(const row_key *k, const char *line, size_t len, int dim) {
    const char *p = line, *end = line + len;
    int r;
    if ((r = expect_prefix(&p, end, k->start)) != TP_MATCHED || (r = string_prefix(&p, end)) != TP_MATCHED)
        return r;
    /* optional parts, in the writer's order: an ended one means a prefix, a mismatched one is just absent */
    if ((r = expect_prefix(&p, end, k->base64)) == TP_ENDED) return r;
    if (r == TP_MATCHED && (r = base64_prefix(&p, end)) != TP_MATCHED) return r;
    if (k->labels && (r = expect_prefix(&p, end, ",\"labels\":[")) == TP_ENDED) return r;
    if (k->labels && r == TP_MATCHED && (r = labels_prefix(&p, end)) != TP_MATCHED) return r;
    if ((r = expect_prefix(&p, end, ",\"embedding\":")) != TP_MATCHED || (r = embedding_prefix(&p, end, dim)) != TP_MATCHED)
        return r;
    return p == end ? TP_MATCHED : TP_MISMATCH;
}

/* sg_cli_resume_is_torn_row for either kind of row, at dim (0: any). */
static int torn_row(const row_key *k, const char *line, size_t len, int dim) {
    if (len == 0 || memchr(line, '\n', len)) return 0;
    int r = row_prefix(k, line, len, dim);
    if (r != TP_MATCHED) return r == TP_ENDED;
    /* A whole row that lost only its newline: cut it (its input is embedded again) if it is one of ours at this
     * dim, byte for byte; a complete row of another model or tool is refused like any foreign line. */
    sg_cli_buf key = {0};
    char err[200];
    int ours = parse_row(k, line, len, dim, &key, NULL, err, sizeof err) == 0;
    sg_cli_buf_free(&key);
    return ours;
}

int sg_cli_resume_is_torn_row(const char *line, size_t len, int dim) { return torn_row(&k_path, line, len, dim); }

int sg_cli_resume_is_any_row(const char *line, size_t len, int torn) {
    sg_cli_buf key = {0};
    char err[200];
    int ours = parse_row(&k_path, line, len, 0, &key, NULL, err, sizeof err) == 0 ||
               parse_row(&k_text, line, len, 0, &key, NULL, err, sizeof err) == 0;
    sg_cli_buf_free(&key);
    if (!ours && torn) ours = torn_row(&k_path, line, len, 0) || torn_row(&k_text, line, len, 0);
    return ours;
}

/* --- a --labels run's rows against this run's labels ---
 * A row holds only its top_k labels (best first) with their scores, so the label list the file was written with
 * cannot be read back whole; it is checked as far as the rows tell: each label in a row is one of this run's,
 * byte for byte as the writer writes it (the label as given, before the --template, which no row records), and
 * each row holds as many as this run writes, min(--top-k, number of labels) (sg_zeroshot.top_k). */

/* The run's labels as the writer writes them (the JSON string without its quotes, json_put_string), into set. */
static void label_set(const sg_zeroshot *z, sg_cli_pathset *set) {
    sg_cli_buf b = {0};
    for (int i = 0; i < z->n; i++) {
        sg_cli_buf_clear(&b);
        sg_cli_json_put_string(&b, z->labels[i]);
        b.p[b.len - 1] = '\0';
        sg_cli_pathset_add(set, b.p + 1);
    }
    sg_cli_buf_free(&b);
}

int sg_cli_resume_next_label(const sg_cli_resume_row *row, size_t *pos, sg_cli_buf *label, double *score) {
    const char *p = row->labels + *pos, *end = row->labels + row->labels_len;
    if (p >= end) return 0;
    p += strlen("{\"label\":\"");
    const char *s0 = p;
    string_prefix(&p, end); /* past the closing quote */
    sg_cli_buf_clear(label);
    sg_cli_buf_append(label, s0, (size_t)(p - 1 - s0));
    p += strlen(",\"score\":");
    *score = NAN;
    if (skip_number(&p, end, score) != 0) p += strlen("null"); /* a score the writer printed as null */
    p += p < end;                                                /* } */
    p += p < end && *p == ',';
    *pos = (size_t)(p - row->labels);
    return 1;
}

/* Checks a row's labels block (row->labels: the entries between [ and ], which parse_row has matched against the
 * grammar) against the run's label set and per-row count. 0, or -1 with the reason in err. */
static int row_labels_match(const sg_cli_resume_row *row, const sg_zeroshot *z, const sg_cli_pathset *set,
                            sg_cli_buf *tmp, char *err, size_t errlen) {
    size_t pos = 0;
    double score;
    int count = 0;
    while (sg_cli_resume_next_label(row, &pos, tmp, &score)) {
        if (!sg_cli_pathset_has(set, tmp->p)) {
            snprintf(err, errlen, "this row's label \"%.240s\" is not one of this run's %d --labels", tmp->p, z->n);
            return -1;
        }
        count++;
    }
    if (count != z->top_k) {
        snprintf(err, errlen, "this row has %d zero-shot %s and this run writes %d per row (the smaller of --top-k "
                 "and its %d --labels)", count, count == 1 ? "label" : "labels", z->top_k, z->n);
        return -1;
    }
    return 0;
}

int sg_cli_resume_prepare(const char *path, int dim, int flags, const sg_zeroshot *zs, sg_cli_pathset *done,
                          sg_cli_resume_info *info, char *err, size_t errlen) {
    const int labels = zs != NULL, raw = (flags & SG_RESUME_RAW) != 0;
    memset(info, 0, sizeof *info);
    char shown[4096];
    sg_cli_shown_path(path, shown, sizeof shown);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: cannot open for --resume: %s", shown, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: --resume needs a regular file to append to (this is a device, FIFO or socket)",
                 shown);
        fclose(f);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0, keep = 0;
    int rc = 0, torn = 0, slot_filled[SG_RESUME_PROBES] = {0};
    sg_cli_buf key = {0}, lab = {0};
    sg_cli_pathset run_labels = {0};
    if (zs) label_set(zs, &run_labels);
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        char perr[200];
        if (line[n - 1] != '\n') {
            /* Only a last line without its newline can be a torn write, and only if it is the beginning of one of
             * our rows at this dim (or a whole one that lost just its newline). After an OS crash or power cut the
             * file system may also show the end of the file as zero bytes (its size written, its data not): a
             * run of NULs ending the file, alone or after such a beginning, is that. */
            size_t len = (size_t)n;
            while (len && line[len - 1] == '\0') len--;
            if (len == 0 || sg_cli_resume_is_torn_row(line, len, dim)) {
                torn = 1;
                break;
            }
            snprintf(err, errlen,
                     "%s:%llu: the last line has no newline and is not the start of a siglip2-embed row; "
                     "refusing to touch a file that is not ours",
                     shown, (unsigned long long)lineno);
            rc = -1;
            break;
        }
        sg_cli_resume_row row;
        if (sg_cli_resume_parse_line(line, (size_t)n - 1, dim, &key, &row, perr, sizeof perr) != 0) {
            snprintf(err, errlen,
                     "%s:%llu: not a siglip2-embed JSONL row with %d floats (%s); refusing to touch a file that is "
                     "not ours",
                     shown, (unsigned long long)lineno, dim, perr);
            rc = -1;
            break;
        }
        /* Rows with an embedding carry labels exactly when the run that wrote them had --labels (a failed input's
         * null row never does): the continued file should not mix the two. */
        if (row.has_labels != labels && !(labels && row.is_null)) {
            snprintf(err, errlen,
                     "%s:%llu: this row %s zero-shot labels and this run %s: resume with the labels the file was "
                     "written with",
                     shown, (unsigned long long)lineno, row.has_labels ? "has" : "has no",
                     labels ? "asks for them (--labels)" : "has no --labels");
            rc = -1;
            break;
        }
        char lerr[400];
        if (row.has_labels && labels && row_labels_match(&row, zs, &run_labels, &lab, lerr, sizeof lerr) != 0) {
            snprintf(err, errlen,
                     "%s:%llu: %s: resume with the --labels and --top-k the file was written with (and the same "
                     "--template, which the file does not record)",
                     shown, (unsigned long long)lineno, lerr);
            rc = -1;
            break;
        }
        /* Likewise unit-norm rows (the default) and raw ones (--no-normalize) do not go in one file. */
        const double norm = row.norm;
        int unit = fabs(norm - 1) <= 1e-3;
        if (norm > 1e-6 && unit == raw) {
            snprintf(err, errlen,
                     "%s:%llu: this row's embedding has norm %.4g, %s, and this run %s: resume with the setting the "
                     "file was written with",
                     shown, (unsigned long long)lineno, norm, unit ? "normalised" : "not normalised (--no-normalize)",
                     raw ? "writes raw ones (--no-normalize)" : "normalises");
            rc = -1;
            break;
        }
        sg_cli_pathset_add(done, key.p);
        info->rows++;
        info->null_rows += row.is_null != 0;
        if (!row.is_null) /* probe slots: the first row, the first from 1/4, 1/2 and 3/4 of the bytes on, the last */
            for (int s = 0; s < SG_RESUME_PROBES; s++) {
                int take = s == SG_RESUME_PROBES - 1 ||
                           (!slot_filled[s] && keep >= (uint64_t)st.st_size * (uint64_t)s / (SG_RESUME_PROBES - 1));
                if (!take) continue;
                slot_filled[s] = 1;
                info->probe[s].offset = keep;
                info->probe[s].lineno = lineno;
                info->probe[s].len = (size_t)n - 1;
            }
        keep += (uint64_t)n;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error during --resume: %s", shown, strerror(errno));
        rc = -1;
    }
    free(line);
    sg_cli_buf_free(&key);
    sg_cli_buf_free(&lab);
    sg_cli_pathset_free(&run_labels);
    fclose(f);
    if (rc != 0) return rc;
    /* the probe slots that found a row, each row once, in slot order */
    for (int s = 0; s < SG_RESUME_PROBES; s++) {
        int dup = !slot_filled[s];
        for (int t = 0; t < info->nprobes && !dup; t++) dup = info->probe[t].lineno == info->probe[s].lineno;
        if (!dup) info->probe[info->nprobes++] = info->probe[s];
    }
    info->keep_bytes = keep;
    if (torn) info->dropped_bytes = (uint64_t)st.st_size - keep;
    return 0;
}

int sg_cli_resume_cut_torn(const char *path, const sg_cli_resume_info *info, char *err, size_t errlen) {
    if (!info->dropped_bytes) return 0;
    if (truncate(path, (off_t)info->keep_bytes) != 0) {
        char shown[4096];
        snprintf(err, errlen, "%s: cannot cut off the torn last line: %s", sg_cli_shown_path(path, shown, sizeof shown),
                 strerror(errno));
        return -1;
    }
    return 0;
}

int sg_cli_resume_probe_row(const char *path, const sg_cli_resume_info *info, int i, int dim, sg_cli_buf *line,
                            sg_cli_buf *key, float *emb, sg_cli_resume_row *row) {
    if (i < 0 || i >= info->nprobes || dim <= 0) return -1;
    const size_t len = info->probe[i].len;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    sg_cli_buf_clear(line);
    sg_cli_buf_reserve(line, len + 1);
    ssize_t got = pread(fd, line->p, len, (off_t)info->probe[i].offset);
    close(fd);
    if (got != (ssize_t)len) return -1;
    line->p[len] = '\0';
    line->len = len;
    char err[200];
    int nonfinite = 1;
    if (parse_row_values(&k_path, line->p, len, dim, key, row, emb, &nonfinite, err, sizeof err) != 0) return -1;
    return nonfinite || row->is_null ? -1 : 0;
}
