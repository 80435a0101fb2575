/* cli/pathset.c — open-addressing string multiset (see pathset.h). */
#include "pathset.h"

#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "shard.h"

static size_t find_slot(char **keys, const uint64_t *hashes, size_t cap, const char *s, uint64_t h) {
    size_t i = (size_t)h & (cap - 1);
    while (keys[i] && (hashes[i] != h || strcmp(keys[i], s) != 0)) i = (i + 1) & (cap - 1);
    return i;
}

static void grow(sg_cli_pathset *set) {
    size_t cap = set->cap ? set->cap * 2 : 1024; /* power of two so the probe can mask */
    char **keys = sg_cli_xcalloc(cap, sizeof *keys);
    uint64_t *hashes = sg_cli_xcalloc(cap, sizeof *hashes);
    uint64_t *added = sg_cli_xcalloc(cap, sizeof *added);
    uint64_t *taken = sg_cli_xcalloc(cap, sizeof *taken);
    for (size_t i = 0; i < set->cap; i++) {
        if (!set->keys[i]) continue;
        size_t j = find_slot(keys, hashes, cap, set->keys[i], set->hashes[i]);
        keys[j] = set->keys[i];
        hashes[j] = set->hashes[i];
        added[j] = set->added[i];
        taken[j] = set->taken[i];
    }
    free(set->keys);
    free(set->hashes);
    free(set->added);
    free(set->taken);
    set->keys = keys;
    set->hashes = hashes;
    set->added = added;
    set->taken = taken;
    set->cap = cap;
}

/* The slot holding s, or -1 if s was never added. */
static long lookup(const sg_cli_pathset *set, const char *s) {
    if (set->count == 0) return -1;
    size_t i = find_slot(set->keys, set->hashes, set->cap, s, sg_cli_fnv1a64(s));
    return set->keys[i] ? (long)i : -1;
}

int sg_cli_pathset_add(sg_cli_pathset *set, const char *s) {
    if ((set->count + 1) * 2 > set->cap) grow(set); /* at most half full keeps probes short */
    uint64_t h = sg_cli_fnv1a64(s);
    size_t i = find_slot(set->keys, set->hashes, set->cap, s, h);
    set->added[i]++;
    if (set->keys[i]) return 0;
    set->keys[i] = sg_cli_xstrdup(s);
    set->hashes[i] = h;
    set->count++;
    return 1;
}

int sg_cli_pathset_has(const sg_cli_pathset *set, const char *s) { return lookup(set, s) >= 0; }

int sg_cli_pathset_take_own(const sg_cli_pathset *set, uint64_t *taken, const char *s) {
    long i = lookup(set, s);
    if (i < 0 || taken[i] >= set->added[i]) return 0; /* every row of this path already matched an input */
    taken[i]++;
    return 1;
}

int sg_cli_pathset_take(sg_cli_pathset *set, const char *s) { return sg_cli_pathset_take_own(set, set->taken, s); }

void sg_cli_pathset_free(sg_cli_pathset *set) {
    for (size_t i = 0; i < set->cap; i++) free(set->keys[i]);
    free(set->keys);
    free(set->hashes);
    free(set->added);
    free(set->taken);
    memset(set, 0, sizeof *set);
}
