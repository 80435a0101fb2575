/* cli/resume.c — validating, repairing and indexing an interrupted JSONL output (see resume.h). */
#include "resume.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"

static int expect(const char **p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0) return -1;
    *p += n;
    return 0;
}

int sg_cli_resume_parse_line(const char *line, size_t len, int dim, const char **key, size_t *keylen, char *err,
                             size_t errlen) {
    const char *p = line, *end = line + len;
    if (expect(&p, end, "{\"path\":\"") != 0) {
        snprintf(err, errlen, "does not start with {\"path\":\"");
        return -1;
    }
    const char *k0 = p - 1;
    while (p < end && *p != '"') {
        if ((unsigned char)*p < 0x20) {
            snprintf(err, errlen, "raw control byte 0x%02x inside the path", (unsigned char)*p);
            return -1;
        }
        p += (*p == '\\' && p + 1 < end) ? 2 : 1;
    }
    if (p >= end) {
        snprintf(err, errlen, "unterminated path string");
        return -1;
    }
    p++;
    *key = k0;
    *keylen = (size_t)(p - k0);
    if (expect(&p, end, ",\"embedding\":") != 0) {
        snprintf(err, errlen, "no \"embedding\" after the path");
        return -1;
    }
    if (expect(&p, end, "null}") == 0) {
        if (p != end) goto trailing;
        return 0;
    }
    if (expect(&p, end, "[") != 0) {
        snprintf(err, errlen, "embedding is neither an array nor null");
        return -1;
    }
    int count = 0;
    for (;;) {
        const char *t = p;
        if (expect(&p, end, "null") != 0) {
            while (p < end && (strchr("0123456789+-.eE", *p) && *p)) p++;
            if (p == t) {
                snprintf(err, errlen, "embedding element %d is not a number", count);
                return -1;
            }
            char num[64];
            size_t n = (size_t)(p - t);
            if (n >= sizeof num) {
                snprintf(err, errlen, "embedding element %d is too long", count);
                return -1;
            }
            memcpy(num, t, n);
            num[n] = '\0';
            char *e;
            strtod(num, &e);
            if (*e) {
                snprintf(err, errlen, "embedding element %d ('%s') is not a number", count, num);
                return -1;
            }
        }
        count++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (expect(&p, end, "]}") != 0) {
        snprintf(err, errlen, "embedding array not closed by ]}");
        return -1;
    }
    if (count != dim) {
        snprintf(err, errlen, "embedding has %d values, expected %d (another model?)", count, dim);
        return -1;
    }
    if (p != end) goto trailing;
    return 0;
trailing:
    snprintf(err, errlen, "unexpected bytes after the row's closing brace");
    return -1;
}

int sg_cli_resume_prepare(const char *path, int dim, sg_cli_pathset *done, sg_cli_resume_info *info, char *err,
                          size_t errlen) {
    memset(info, 0, sizeof *info);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: cannot open for --resume: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0, off = 0, keep = 0;
    int rc = 0, torn = 0;
    char why[256] = "";
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        int has_nl = line[n - 1] == '\n';
        const char *key;
        size_t keylen;
        char perr[200];
        int ok = has_nl && sg_cli_resume_parse_line(line, (size_t)n - 1, dim, &key, &keylen, perr, sizeof perr) == 0;
        if (!ok) {
            /* Only the last line may be bad: decide once we know whether another line follows. */
            int c = fgetc(f);
            if (c == EOF) {
                torn = 1;
                snprintf(why, sizeof why, "%s", has_nl ? perr : "no final newline");
                break;
            }
            snprintf(err, errlen,
                     "%s:%llu: not a siglip2-embed JSONL row with %d floats (%s); refusing to append to it",
                     path, (unsigned long long)lineno, dim, has_nl ? perr : "line has no newline");
            rc = -1;
            break;
        }
        line[n - 1] = '\0';
        char save = key[keylen];
        ((char *)key)[keylen] = '\0';
        sg_cli_pathset_add(done, key);
        ((char *)key)[keylen] = save;
        info->rows++;
        off += (uint64_t)n;
        keep = off;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error during --resume: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(f);
    if (rc != 0 || !torn) return rc;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: stat failed: %s", path, strerror(errno));
        return -1;
    }
    if (truncate(path, (off_t)keep) != 0) {
        snprintf(err, errlen, "%s: cannot cut off the torn last line (%s): %s", path, why, strerror(errno));
        return -1;
    }
    info->dropped_bytes = (uint64_t)st.st_size - keep;
    return 0;
}
