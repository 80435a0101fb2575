/* cli/inputs.h — streaming enumeration of the inputs: PATH operands, directories, --files-from.
 *
 * Order: the PATH operands as given (a directory is walked depth-first where it stands, each directory's
 * entries sorted by byte-wise name, subdirectories entered at their place in that order), then each
 * --files-from list in the order given, as it is read. A list may come from Windows: a UTF-8 BOM before its
 * first entry is not part of the path, nor, in a newline-separated list, is a carriage return before the
 * newline. Nothing is listed ahead: memory is one sorted
 * directory listing per level being walked, so a million-file tree or list streams. Operands are taken as given whatever their
 * extension (a missing one is still yielded: reading it fails and is reported like any bad input); files
 * found in directories are taken only with an image extension unless all_files, and one that is not a
 * regular file (a FIFO would block the reader forever) is yielded with an error, unread. Symbolic links are
 * followed; a directory already on the current walk path (a link loop) is reported and not re-entered. An
 * entry the walk cannot stat (a dangling link, say to a disk not mounted; a link loop; a path longer than
 * PATH_MAX; an entry of a folder that can be listed but not entered) is yielded with the OS reason whatever its
 * name, since it may be a folder: nothing is dropped that was not seen to be a file of another extension.
 */
#ifndef SG_CLI_INPUTS_H
#define SG_CLI_INPUTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sg_cli_inputs sg_cli_inputs;

typedef struct sg_cli_input {
    char *path;     /* malloc'd; the caller frees it */
    char *error;    /* malloc'd reason when the entry itself could not be read (unreadable directory, link
                       loop, dangling link, a path too long to stat, not a regular file), else NULL */
    int is_stdin;   /* the lone "-" operand: read the image's bytes from stdin */
} sg_cli_input;

/* Starts an enumeration. lists holds nlists --files-from names ("-" = stdin), read in that order after the
 * operands. Returns NULL with a reason in err when a list cannot be opened. */
sg_cli_inputs *sg_cli_inputs_open(char **paths, int npaths, char **lists, int nlists, int nul_sep, int all_files,
                                  char *err, size_t errlen);

/* Yields the next input: 1 (in fills *in), 0 at the end. A read error on the --files-from list ends the
 * enumeration with -1 and a reason in err. Not thread-safe: callers serialise. */
int sg_cli_inputs_next(sg_cli_inputs *it, sg_cli_input *in, char *err, size_t errlen);

void sg_cli_inputs_close(sg_cli_inputs *it);

/* Files that directory walks left out for their extension (not with --all-files): returns how many, and
 * writes the tally into summary, most frequent first: ".webp (2), .heic (1), no extension (1)". */
uint64_t sg_cli_inputs_skipped(const sg_cli_inputs *it, char *summary, size_t len);

/* 1 if name ends with an image extension the decoder understands (case-insensitive). */
int sg_cli_is_image_name(const char *name);

#endif
