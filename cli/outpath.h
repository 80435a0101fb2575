/* cli/outpath.h — where -o FILE really is, so that writing it never destroys what we did not write.
 *
 * Writing a temporary and renaming it over FILE keeps an existing FILE whole until the new one is complete,
 * but a rename replaces the directory entry itself: done to /dev/null it deletes the device (as root), to a
 * FIFO it leaves the reader waiting forever, to a symbolic link it replaces the link. So -o is resolved first:
 *   - a symbolic link is followed, hop by hop (at most 40), to its final target;
 *   - a regular file, or a name that does not exist yet, is REPLACED: written as TARGET.tmp.PID in the
 *     target's directory and renamed over TARGET (the link, if any, stays a link);
 *   - a device, FIFO or socket, and an open descriptor's name (/dev/fd/N, /dev/stdout, /dev/stderr,
 *     /proc/self/fd/N: what a shell's >(cmd) passes), is written IN PLACE: the descriptor itself is used
 *     (so an appending stdout keeps appending), or the node is opened for writing; never renamed over,
 *     never truncated. Such a target takes streamable formats only, and gets no FILE.paths beside it.
 * A kill -9 leaves TARGET.tmp.PID (and TARGET.paths.tmp.PID) behind; sg_cli_out_clean_stale removes those
 * of processes that no longer exist, so the next run for the same output tidies up after the dead one: only
 * a pair, or a TARGET.tmp.PID whose bytes look like our output with its list already renamed to TARGET.paths
 * (our_output.h), never a file by its name alone, and never one that a process holds flock()ed (the writer locks
 * its temporaries until it renames them: a live run in another PID namespace or on another host of a shared file
 * system has a PID that looks dead from here).
 */
#ifndef SG_CLI_OUTPATH_H
#define SG_CLI_OUTPATH_H

#include <stddef.h>
#include <sys/types.h>

typedef enum { SG_OUT_REPLACE = 0, SG_OUT_IN_PLACE } sg_cli_out_mode;

typedef struct sg_cli_out_target {
    sg_cli_out_mode mode;
    char *path;     /* REPLACE: the resolved target (links followed); IN_PLACE: the name as given */
    int exists;     /* REPLACE: the target exists (a regular file) */
    mode_t perm;    /* REPLACE: its permission bits, given to the file that replaces it */
    int fd;         /* IN_PLACE: the descriptor named (/dev/fd/N ...), or -1 when the node must be opened */
    int seekable;   /* IN_PLACE: a regular file at offset 0, not appending: a header can be rewritten there */
    const char *kind; /* IN_PLACE: "device", "FIFO", "socket" or "file descriptor", for messages */
} sg_cli_out_target;

/* Resolves path (the argument of -o) into t. Returns 0, or -1 with a reason in err (a directory, a link
 * loop, a component that cannot be read). */
int sg_cli_out_resolve(const char *path, sg_cli_out_target *t, char *err, size_t errlen);

/* Opens t for writing and returns a descriptor: IN_PLACE only (a dup of the named descriptor, or the node
 * opened write-only, neither truncated nor created). -1 with a reason in err. */
int sg_cli_out_open_in_place(const sg_cli_out_target *t, char *err, size_t errlen);

void sg_cli_out_target_free(sg_cli_out_target *t);

/* Takes an exclusive flock() on fd, an output written in place (JSONL), for as long as fd stays open; shown is
 * the output as messages show it. 0 (a file system without locks included), or -1 with "being written by another
 * run" in err when another run holds it. */
int sg_cli_out_lock(int fd, const char *shown, char *err, size_t errlen);

/* An exclusive flock() on the folder path is in, waited for: held around the few steps that must not interleave
 * with another run's (a replacement's check and pair of renames, a JSONL's lock being taken), so that each sees the
 * other's whole. Returns the folder's descriptor (closing it releases the lock; on a file system without locks it
 * is returned unlocked), or -1 when the folder cannot be opened. */
int sg_cli_out_dir_lock(const char *path);

/* The folder path is in, malloc'd: "." for a bare name, "/" for a name in the root. */
char *sg_cli_out_dir(const char *path);

/* Removes TARGET.tmp.PID and TARGET.paths.tmp.PID (or .texts.tmp.PID) in target's directory that belong to this
 * user, whose PID is not a running process or is this one's (left by a kill -9; called before this run creates
 * its own), that no process holds locked, and that are a pair or look like our output. Writes the names removed, comma-separated, into
 * removed (may be NULL). Returns how many were removed. */
int sg_cli_out_clean_stale(const char *target, char *removed, size_t removedlen);

#endif
