/* cli/our_output.h — does an existing file look like one siglip2-embed wrote? Asked before -o replaces it.
 *
 * The tool never replaces a file it did not write: `-o photo.jpg` (a typo for .json), `-o *.jpg` (a glob that
 * put an image in -o's place) or `-o notes.json` must not destroy the file. So before an existing regular file
 * is written over (truncated or renamed over), its first bytes and size are compared with what each output
 * format looks like when this tool writes it:
 *   empty                      nothing to lose
 *   json / jsonl               starts with {"path":" or {"text":" (a row), or [ then whitespace and a row or ]
 *   npy                        \x93NUMPY magic and a '<f4' header
 *   fbin                       uint32 N, uint32 D (1..65536), size exactly 8 + N*D*4
 *   fvecs                      int32 D (1..65536) first, size a multiple of 4*(D+1)
 *   f32                        size a multiple of 4, with FILE.paths or FILE.texts beside it (every f32 the
 *                              tool writes to a regular file has one)
 * (The FILE.paths list beside a binary output: any text, sg_cli_our_list.)
 * Any other content is not ours, and the caller refuses with exit 2, naming what the file seems to be. The
 * check reads at most 256 bytes; it is about content, not names, so a renamed output of ours still passes.
 */
#ifndef SG_CLI_OUR_OUTPUT_H
#define SG_CLI_OUR_OUTPUT_H

#include <stddef.h>

/* 1 if the regular file at path looks like an output of this tool (or is empty); 0 if not, with what it seems to
 * be in why ("starts with ff d8 ff e0: a JPEG image"); -1 if it cannot be read, with the reason in why. */
int sg_cli_our_output(const char *path, char *why, size_t whylen);

/* The same for a FILE.paths / FILE.texts list beside a binary output: ours holds names one per line, which may
 * hold any byte but NUL, so anything without a NUL passes (a list left when its FILE was deleted is replaced as
 * before); a NUL or an image's or archive's magic in its first bytes (a photo named x.npy.paths) is not ours. */
int sg_cli_our_list(const char *path, char *why, size_t whylen);

#endif
