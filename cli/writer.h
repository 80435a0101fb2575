/* cli/writer.h — the output formats, one row at a time, in input order.
 *
 *   json   one input: {"path":...,"embedding":[...]}; otherwise a JSON array of those, streamed ("[", rows
 *          separated by ",\n", "]") so nothing is held back
 *   jsonl  one object per line; flushed at every batch boundary so a pipe sees rows as batches finish
 *   npy    NumPy format 1.0, float32 little-endian, shape (N, D); the header is written with room for any N
 *          and rewritten with the final N at the end (NumPy allows space padding before the '\n')
 *   fbin   uint32 N, uint32 D, then N*D float32 (DiskANN / big-ann-benchmarks); N patched at the end
 *   fvecs  per row: int32 D then D float32 (the FAISS/TEXMEX benchmark format)
 *   f32    raw little-endian float32 rows
 * A failed input written as a row (--on-error null) is "embedding": null in JSON and a row of NaN in binary
 * formats; a json run that wrote no row (its single input failed) ends as [] so the file is valid JSON.
 * Where -o really writes is outpath.h's business: binary formats and JSON to a regular file (a symlink's target
 * included) are written to TARGET.tmp.PID (and a binary format's TARGET.paths.tmp.PID), flock()ed, synced and
 * renamed into place only when complete, so a TARGET that exists is whole whatever stops the run; JSONL is
 * written in place (so --resume can continue it), but an existing TARGET is truncated only when the first row
 * comes; a new one is flock()ed as it is created (an existing one is locked by main.c), so a second run on it is
 * refused. Either way a run that writes no row
 * leaves an existing TARGET as it was; TARGET.paths holds each row's path, its exact bytes and a '\n',
 * in row order. A path containing a newline cannot be listed there, so such an input is refused (the caller
 * reports it). A device, FIFO or descriptor (/dev/fd/N) is written in place, streamable formats only, with
 * no .paths file.
 * Text queries (cfg.texts) are rows {"text":...,"embedding":[...]} and TARGET.texts lists them, one per line, by
 * the same rule: a query containing a newline is refused in binary formats (JSON escapes it).
 * With cfg.zeroshot, JSON rows also carry "labels" (zero-shot scores, cli/zeroshot.h) after the path.
 */
#ifndef SG_CLI_WRITER_H
#define SG_CLI_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "args.h"
#include "zeroshot.h"

typedef struct sg_cli_writer sg_cli_writer;

typedef struct sg_cli_writer_cfg {
    const char *path;  /* NULL: stdout */
    sg_cli_format format; /* not SG_FMT_AUTO */
    int dim;
    int single;        /* json: the run has exactly one input, write a bare object */
    int append;        /* jsonl: open path for appending (--resume) */
    int texts;         /* rows are text queries: key "text" and FILE.texts instead of "path" and FILE.paths */
    const sg_zeroshot *zeroshot; /* JSON formats: each row with an embedding also gets "labels": its top-k
                                    zero-shot labels, [{"label": ..., "score": ...}, ...], best first */
    int absent;        /* jsonl: main.c found no file at path when the run started (so it holds no lock on it):
                          a file there now was made by another run meanwhile, and is refused, not truncated */
} sg_cli_writer_cfg;

/* Opens the output. Returns NULL with a reason in err (cannot create the file, npy/fbin to a pipe or device,
 * a directory). */
sg_cli_writer *sg_cli_writer_open(const sg_cli_writer_cfg *cfg, char *err, size_t errlen);

/* 1 if this writer cannot hold path (binary formats with a list file: a newline in the path, and for a text run's
 * FILE.texts a carriage return too). */
int sg_cli_writer_rejects_path(const sg_cli_writer *w, const char *path);

/* Writes one row: vec holds dim floats, or NULL for a failed input kept as a null/NaN row.
 * Returns 0, or -1 with a reason in err (write error: disk full, closed pipe). */
int sg_cli_writer_row(sg_cli_writer *w, const char *path, const float *vec, char *err, size_t errlen);
/* --normalize, in place, for an image or a text row before it is written: v / |v|, the norm accumulated in double
 * (768 squares in float would lose the last bits of it); an all-zero or NaN vector has no direction and is left
 * as it is. */
void sg_cli_normalize_row(float *v, int d);

/* Pushes buffered rows to the file (called at batch boundaries). Returns 0 or -1 with a reason. */
int sg_cli_writer_flush(sg_cli_writer *w, char *err, size_t errlen);

/* Finishes the file (closing bracket, final N in the header, rename into place) and frees w. With commit
 * == 0 (a failed run) a temporary binary output is removed instead, and text outputs are just flushed. With no
 * row written, an existing regular file is left untouched (sg_cli_writer_keeps_existing).
 * Returns 0 or -1 with a reason. */
int sg_cli_writer_close(sg_cli_writer *w, int commit, char *err, size_t errlen);

/* Rows written so far. */
uint64_t sg_cli_writer_rows(const sg_cli_writer *w);

/* 1 if -o names an existing regular file that no row has reached: closing now leaves it as it was (a run that
 * embedded nothing, such as one given a folder that is not there, never empties the previous results). */
int sg_cli_writer_keeps_existing(const sg_cli_writer *w);

#endif
