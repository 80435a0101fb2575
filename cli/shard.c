/* cli/shard.c — FNV-1a path hashing for --shard and for the resume path set (see shard.h). */
#include "shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t sg_cli_fnv1a64(const char *s) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64-bit offset basis */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull; /* FNV-1a 64-bit prime */
    }
    return h;
}

/* Parses a whole non-negative decimal integer in [lo, hi]; -1 if s is not exactly that. */
static int parse_int(const char *s, const char *end, long lo, long hi, long *out) {
    if (s == end || *s < '0' || *s > '9') return -1;
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e != end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int sg_cli_shard_parse(const char *s, int *k, int *n, char *err, size_t errlen) {
    const char *slash = s;
    while (*slash && *slash != '/') slash++;
    long kv, nv;
    const char *end = slash;
    while (*end) end++;
    if (*slash != '/' || parse_int(slash + 1, end, 1, 1000000, &nv) != 0 ||
        parse_int(s, slash, 0, 999999, &kv) != 0) {
        snprintf(err, errlen, "--shard: expected K/N with 0 <= K < N (K is 0-based), got '%s'", s);
        return -1;
    }
    if (kv >= nv) {
        snprintf(err, errlen, "--shard: K must be below N (K is 0-based: 0..%ld), got '%s'", nv - 1, s);
        return -1;
    }
    *k = (int)kv;
    *n = (int)nv;
    return 0;
}

int sg_cli_shard_keep(const char *path, int k, int n) {
    if (n <= 0) return 1;
    return sg_cli_fnv1a64(path) % (uint64_t)n == (uint64_t)k;
}
