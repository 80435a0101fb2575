/* cli/resume.h — --resume: what an interrupted JSONL output already holds, made safe to append to.
 *
 * The command writes JSONL rows only as whole lines ending in '\n', in exactly the form json_text.c makes:
 *   {"path":"<escaped path>","embedding":[<dim numbers>]}   or   ...,"embedding":null}
 * A kill -9 can therefore leave at most one torn line, the last, which lacks its '\n' (or, if the file
 * system lost a tail, a last line that does not parse). Resuming checks every earlier line has that form
 * with the model's dim (so we never append to someone else's file), cuts the torn line off with
 * ftruncate, and collects the escaped path of every row, null rows included (those inputs were tried and
 * reported; --on-error null promised one row each), so the rerun skips them and each input ends up in the
 * file exactly once. Keys are the escaped JSON text of the path, compared with the escaping of each new
 * input, so paths that are not valid UTF-8 still match.
 */
#ifndef SG_CLI_RESUME_H
#define SG_CLI_RESUME_H

#include <stddef.h>
#include <stdint.h>
#include "pathset.h"

typedef struct sg_cli_resume_info {
    uint64_t rows;          /* complete rows kept */
    uint64_t dropped_bytes; /* bytes of the torn last line cut off (0 if none) */
} sg_cli_resume_info;

/* Checks one line (without its '\n') of an output file. On success returns 0 and sets *key and *keylen to the
 * escaped path literal inside line (quotes included). Returns -1 with a reason in err otherwise. */
int sg_cli_resume_parse_line(const char *line, size_t len, int dim, const char **key, size_t *keylen, char *err,
                             size_t errlen);

/* Prepares `path` for appending: a missing file is fine (nothing done yet); otherwise every complete line
 * must be ours with `dim` floats, a torn last line is truncated away, and the path of every row is added to
 * done. Returns 0, or -1 with "FILE:LINE: reason" in err (the file is then left untouched). */
int sg_cli_resume_prepare(const char *path, int dim, sg_cli_pathset *done, sg_cli_resume_info *info, char *err,
                          size_t errlen);

#endif
