/* cli/our_output.h — does an existing file look like one siglip2-embed wrote? Asked before -o replaces it.
 *
 * The tool never replaces a file it did not write: `-o photo.jpg` (a typo for .json), `-o *.jpg` (a glob that
 * put an image in -o's place), `-o notes.json`, or another tool's feat.npy / gt.ivecs / labels.jsonl must not be
 * destroyed. So before an existing regular file is written over (truncated or renamed over), its bytes are
 * compared with what each output format looks like when this tool writes it (cli/writer.c):
 *   empty          nothing to lose
 *   json / jsonl   the first line is a complete row exactly as the writer makes it (resume.h's grammar, image
 *                  rows {"path":... with optional path_base64 and labels, text rows {"text":...; any number of
 *                  embedding values, so another model's output of ours is still ours), or, when the file is
 *                  that one line without a '\n', a beginning of one (a run killed mid-write); or a JSON array
 *                  as the writer lays it out: [ then '\n' then such a row, with the ',' after it when more
 *                  rows came (and where the file ends on that line, a beginning of one); or an empty or
 *                  just-started array: [ or [\n alone, [] or [\n] with or without a final '\n'. A file that
 *                  starts like one of our rows ({"path":" or {"text":", after [\n or not) is judged as JSON only.
 *   npy            version 1.0, header {'descr': '<f4', 'fortran_order': False, 'shape': (N, D), } (D >= 1)
 *                  with size exactly header + N*D*4
 *   fbin           uint32 N, uint32 D (1..65536), size exactly 8 + N*D*4
 *   fvecs          int32 D (1..65536) first, size a multiple of 4*(D+1)
 *   f32            size a multiple of 4
 * and each binary format only with its list beside it: the tool writes npy, fbin, fvecs and f32 to a regular
 * file only together with FILE.paths (image runs) or FILE.texts (text runs), so one of them must be there and
 * pass sg_cli_our_list. Without it, an npy of the right shape is still another tool's (np.save of features;
 * an int32 .ivecs that happens to fit the fvecs rule) and is refused. A file that starts with the npy magic is
 * judged as npy only. A JSON file is read up to the end of its first row (at most 64 MiB: no row this tool
 * writes is that long); the other checks read 256 bytes. The check is about content, not names, so a renamed
 * output of ours (with its list renamed beside it) still passes.
 * Any other content is not ours, and the caller refuses with exit 2, saying what the file seems to be and, for
 * a near miss, what was expected.
 */
#ifndef SG_CLI_OUR_OUTPUT_H
#define SG_CLI_OUR_OUTPUT_H

#include <stddef.h>

/* 1 if the regular file at path looks like an output of this tool (or is empty); 0 if not, with what it seems to
 * be in why ("starts with ff d8 ff e0: a JPEG image"); -1 if it cannot be read, with the reason in why. */
int sg_cli_our_output(const char *path, char *why, size_t whylen);

/* The same, with a binary format's list looked for as list_base.paths / list_base.texts instead of beside path:
 * a dead run's TARGET.tmp.PID whose list was already renamed to TARGET.paths (outpath.c) passes with
 * list_base = TARGET. */
int sg_cli_our_output_listed(const char *path, const char *list_base, char *why, size_t whylen);

/* The same for a FILE.paths / FILE.texts list beside a binary output: ours holds names one per line, which may
 * hold any byte but NUL, so anything without a NUL passes (a list left when its FILE was deleted is replaced as
 * before); a NUL or an image's or archive's magic in its first bytes (a photo named x.npy.paths) is not ours. */
int sg_cli_our_list(const char *path, char *why, size_t whylen);

#endif
