/* cli/resume.h — --resume: what an interrupted JSONL output already holds, made safe to append to.
 *
 * The command writes JSONL rows only as whole lines ending in '\n', in exactly the form json_text.c makes:
 *   {"path":"<escaped path>",["path_base64":"<bytes>",]["labels":[...],]"embedding":[<dim numbers>]}   or
 *   ...:null}   ("labels": the zero-shot scores of a --labels run, on rows with an embedding)
 * A kill -9 can therefore leave at most one torn line: the last, without its '\n', and the start of one of
 * our rows (it begins with the first bytes of {"path":"). Resuming checks that every line ending in '\n'
 * is one of our rows with the model's dim, and that a last line without '\n' is such a start; anything else
 * (a note, {"a":1}, a foreign line after our rows) means the file is not ours and it is refused, untouched.
 * Only then is the torn line cut off with ftruncate. The exact bytes of every row's path are collected
 * (path_base64 when present, else the unescaped "path"), null rows included (those inputs were tried and
 * reported; --on-error null promised one row each), so the rerun skips exactly those inputs, compared
 * byte for byte with each new input's path, and each input ends up in the file exactly once.
 */
#ifndef SG_CLI_RESUME_H
#define SG_CLI_RESUME_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "pathset.h"

typedef struct sg_cli_resume_info {
    uint64_t rows;          /* complete rows kept */
    uint64_t dropped_bytes; /* bytes of the torn last line cut off (0 if none) */
} sg_cli_resume_info;

/* Checks one line (without its '\n') of an output file. On success returns 0, sets key to the exact bytes
 * of the row's path (NUL-terminated) and *has_labels (if not NULL) to whether the row has "labels". The row must be byte for byte what the writer makes of that path, so a
 * row edited by hand or written by another tool is refused. Returns -1 with a reason in err otherwise. */
int sg_cli_resume_parse_line(const char *line, size_t len, int dim, sg_cli_buf *key, int *has_labels, char *err,
                             size_t errlen);

/* 1 if the len bytes at line can be the beginning of one of our rows cut short by a crash: a prefix of
 * {"path":" or a longer text starting with it. */
int sg_cli_resume_is_torn_row(const char *line, size_t len);

/* Prepares `path` for appending: a missing file is fine (nothing done yet); otherwise every line ending in
 * '\n' must be one of our rows with `dim` floats and a last line without '\n' the start of one (then cut off),
 * and the path of every row is added to done. `labels`: the run has --labels; its rows with an embedding must
 * then have "labels" and, without it, must not (the continued file holds one kind of row). Returns 0, or -1 with
 * "FILE:LINE: reason" in err (the file is then left untouched). */
int sg_cli_resume_prepare(const char *path, int dim, int labels, sg_cli_pathset *done, sg_cli_resume_info *info,
                          char *err, size_t errlen);

#endif
