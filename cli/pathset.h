/* cli/pathset.h — a set of strings (the paths already in an output file, for --resume).
 *
 * Open addressing with linear probing over 64-bit FNV-1a hashes, kept at most half full; strings are copied.
 * Memory is about 60 bytes plus the path per entry, so a million-row output costs well under 200 MB.
 */
#ifndef SG_CLI_PATHSET_H
#define SG_CLI_PATHSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct sg_cli_pathset {
    char **keys;      /* [cap], NULL = empty slot */
    uint64_t *hashes; /* [cap] */
    size_t cap, count;
} sg_cli_pathset;

/* Adds s; returns 1 if it was new, 0 if already present. */
int sg_cli_pathset_add(sg_cli_pathset *set, const char *s);
/* 1 if s is in the set. */
int sg_cli_pathset_has(const sg_cli_pathset *set, const char *s);
/* Releases everything; the set is empty and reusable afterwards. */
void sg_cli_pathset_free(sg_cli_pathset *set);

#endif
