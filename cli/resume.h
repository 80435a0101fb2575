/* cli/resume.h — --resume: what an interrupted JSONL output already holds, made safe to append to.
 *
 * The command writes JSONL rows only as whole lines ending in '\n', in exactly the form json_text.c makes:
 *   {"path":"<escaped path>",["path_base64":"<bytes>",]["labels":[...],]"embedding":[<dim numbers>]}   or
 *   ...:null}   ("labels": the zero-shot scores of a --labels run, on rows with an embedding)
 * A kill -9 can therefore leave at most one torn line: the last, without its '\n', and a beginning of one of
 * our rows, cut at any byte (inside the path, path_base64, a label, a number, an escape or a literal). Resuming
 * checks that every line ending in '\n' is one of our rows with the model's dim, and that a last line without
 * '\n' follows the row grammar as far as it goes, with at most dim numbers:
 *   {"path":"<body>"[,"path_base64":"<base64>"][,"labels":[{"label":"<body>","score":NUM},...]],"embedding":
 *   then null} or [NUM,...,NUM]}
 * and, if nothing of the row is missing (only its '\n' was lost), that it is one of our rows at this dim byte
 * for byte. A run of NUL bytes ending the file (alone, or after such a beginning) is cut off too: after an OS crash
 * or power cut a file system may show a file's last blocks as zeros (its size written, its data not). Anything else (a note, {"a":1}, a foreign line after our rows, a line of another tool that starts
 * with {"path":", a complete row of another model) means the file is not ours and it is refused, untouched.
 * Only then is the torn line cut off with ftruncate. The exact bytes of every row's path are collected
 * (path_base64 when present, else the unescaped "path"), null rows included (those inputs were tried and
 * reported; --on-error null promised one row each), so the rerun skips exactly those inputs, compared
 * byte for byte with each new input's path, and each input ends up in the file exactly once. Each row skips
 * one occurrence: an input list that names a path twice had two rows in an uninterrupted run, and still does.
 */
#ifndef SG_CLI_RESUME_H
#define SG_CLI_RESUME_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "pathset.h"
#include "zeroshot.h"

/* Rows with an embedding that sg_cli_resume_check embeds again (cli/resume_check.h): the first, the first at or
 * after a quarter, half and three quarters of the file's bytes, and the last (the same row may fill several). */
#define SG_RESUME_PROBES 5
typedef struct sg_cli_resume_info {
    uint64_t rows;          /* complete rows kept */
    uint64_t dropped_bytes; /* bytes of the torn last line, cut off by sg_cli_resume_cut_torn (0 if none) */
    uint64_t null_rows;     /* of rows, those with "embedding":null (inputs that failed in an earlier run) */
    uint64_t keep_bytes;    /* the whole rows' bytes: where a torn last line begins */
    int nprobes;            /* probe rows found (0 .. SG_RESUME_PROBES) */
    struct {
        uint64_t offset, lineno; /* where the row starts in the file, and its line number (1-based) */
        size_t len;              /* its length without the '\n' */
    } probe[SG_RESUME_PROBES];
} sg_cli_resume_info;

/* What sg_cli_resume_parse_line learns of a row besides its path, in the same pass. */
typedef struct sg_cli_resume_row {
    int has_labels; /* the row has "labels" (a --labels run's row with an embedding) */
    int is_null;    /* "embedding":null: a failed input's row */
    double norm;    /* the embedding's Euclidean norm, over its numbers up to the first null element; 0 if is_null */
    const char *labels; /* with has_labels: the entries of "labels", between its [ and ], in the line parsed */
    size_t labels_len;
} sg_cli_resume_row;

/* The next entry of a row's labels block (row->labels, matched against the grammar by the parse): its label as the
 * writer escaped it (the JSON string's body) into label, its score into *score (NaN where the writer printed null).
 * *pos starts at 0. Returns 1 while an entry was read, 0 at the end of the block. */
int sg_cli_resume_next_label(const sg_cli_resume_row *row, size_t *pos, sg_cli_buf *label, double *score);

/* Checks one line (without its '\n') of an output file. On success returns 0, sets key to the exact bytes
 * of the row's path (NUL-terminated) and *row (if not NULL). The row must be byte for byte what the writer makes
 * of that path, so a row edited by hand or written by another tool is refused. Returns -1 with a reason in err
 * otherwise. */
int sg_cli_resume_parse_line(const char *line, size_t len, int dim, sg_cli_buf *key, sg_cli_resume_row *row,
                             char *err, size_t errlen);

/* 1 if the len bytes at line (a last line without '\n') may be cut off as a crash's leftover: a proper prefix
 * of a row the writer could write with dim numbers (the grammar above, ending anywhere), or a complete row
 * that sg_cli_resume_parse_line accepts at dim. 0 for anything else, a line holding a '\n' included. */
int sg_cli_resume_is_torn_row(const char *line, size_t len, int dim);

/* The same grammar for our_output.c, which asks whether an existing -o FILE is ours before replacing it: 1 if
 * the len bytes at line (without a '\n') are a complete row the writer makes, an image run's ("path", as above)
 * or a text run's ({"text":"<escaped query>"[,"text_base64":"<bytes>"],"embedding":...}: no labels), with any
 * number of embedding values (an output of another model is still ours); with torn, also a beginning of one
 * (sg_cli_resume_is_torn_row at any dim: a kill -9 mid-write). 0 for anything else. */
int sg_cli_resume_is_any_row(const char *line, size_t len, int torn);

/* Prepares `path` for appending: a missing file is fine (nothing done yet); otherwise every line ending in
 * '\n' must be one of our rows with `dim` floats and a last line without '\n' a torn one
 * (sg_cli_resume_is_torn_row; cut off later by sg_cli_resume_cut_torn, so that a run refused before it writes
 * leaves the file as it was), and the path of every row is added to done, once per row (each
 * skips one occurrence of its input: sg_cli_pathset_take). `flags` (SG_RESUME_*) and zs (the run's zero-shot
 * labels, NULL without --labels) say how the run writes its rows, and the file's rows with an embedding must
 * match, so the continued file holds one kind of row: "labels" exactly with --labels, and unit-norm vectors
 * unless --no-normalize (raw pooler_output, whose norm is not 1; an all-zero row matches either). With zs, as
 * far as a row tells (it holds only its top_k labels): every label in it is one of zs's (as the writer writes
 * the label, before the --template, which rows do not record) and it holds zs->top_k of them. Returns 0, or -1
 * with "FILE:LINE: reason" in err (the file is then left untouched). */
enum { SG_RESUME_RAW = 1 }; /* the run has --no-normalize */
int sg_cli_resume_prepare(const char *path, int dim, int flags, const sg_zeroshot *zs, sg_cli_pathset *done,
                          sg_cli_resume_info *info, char *err, size_t errlen);

/* Cuts off the torn last line that sg_cli_resume_prepare found (info->dropped_bytes of them), just before the run
 * appends. 0 (nothing to cut included), or -1 with err. */
int sg_cli_resume_cut_torn(const char *path, const sg_cli_resume_info *info, char *err, size_t errlen);

/* Reads probe row i (0 .. info->nprobes - 1) of the file again: its path's exact bytes into key, its dim numbers
 * into emb, and *row as sg_cli_resume_parse_line gives it. 0, or -1 if the row cannot be read back as it was or
 * holds a value that is not finite (written null). */
int sg_cli_resume_probe_row(const char *path, const sg_cli_resume_info *info, int i, int dim, sg_cli_buf *line,
                            sg_cli_buf *key, float *emb, sg_cli_resume_row *row);

#endif
