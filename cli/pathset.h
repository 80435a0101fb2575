/* cli/pathset.h — a multiset of strings (the paths already in an output file, for --resume).
 *
 * Open addressing with linear probing over 64-bit FNV-1a hashes, kept at most half full; strings are copied.
 * Each path keeps how often it was added: an input list may name a path twice, an uninterrupted run then
 * writes two rows, and a resumed run must skip only as many occurrences as the file already holds (one row
 * consumes one occurrence), or it would lose a row. Memory is about 100 bytes plus the path per entry, so a
 * million-row output costs well under 300 MB.
 *
 * Threads: add only while no one else uses the set (before the run starts). has, take_own and the distinct
 * count read only what add writes; take writes only the taken counters, so one thread may take (the pipeline,
 * under its enumeration mutex) while others call has or take_own. */
#ifndef SG_CLI_PATHSET_H
#define SG_CLI_PATHSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct sg_cli_pathset {
    char **keys;      /* [cap], NULL = empty slot */
    uint64_t *hashes; /* [cap] */
    uint64_t *added;  /* [cap] occurrences added */
    uint64_t *taken;  /* [cap] occurrences taken (sg_cli_pathset_take), at most added */
    size_t cap, count; /* count: distinct strings */
} sg_cli_pathset;

/* Adds one occurrence of s; returns 1 if s was new, 0 if already present (its count goes up). */
int sg_cli_pathset_add(sg_cli_pathset *set, const char *s);
/* 1 if s was ever added (whatever was taken since). */
int sg_cli_pathset_has(const sg_cli_pathset *set, const char *s);
/* 1 if an occurrence of s is left, and takes it (the input is already in the file: skip it); 0 if s was never
 * added or all its occurrences were taken (embed the input). */
int sg_cli_pathset_take(sg_cli_pathset *set, const char *s);
/* The same with the takes recorded in the caller's own array of set->cap zeroed counters instead of the set,
 * which stays untouched: a second reader (the progress counter) follows the same skips beside the run. */
int sg_cli_pathset_take_own(const sg_cli_pathset *set, uint64_t *taken, const char *s);
/* Releases everything; the set is empty and reusable afterwards. */
void sg_cli_pathset_free(sg_cli_pathset *set);

#endif
