/* cli/outpath.c — resolving -o, writing in place where a rename would destroy, tidying dead runs' temporaries
 * (see outpath.h). */
#include "outpath.h"
#include "our_output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"
#include "shown_path.h"

#define MAX_LINK_HOPS 40 /* the kernel's own limit (ELOOP) for a path's symbolic links */

/* Parses the decimal number that ends at the end of s (all digits, at most 9). -1 when s is not that. */
static int parse_small_uint(const char *s) {
    if (!*s || strlen(s) > 9) return -1;
    int v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* The descriptor a name stands for in this process (/dev/fd/N, /dev/stdout, /proc/self/fd/N,
 * /proc/<our pid>/fd/N), or -1. */
static int fd_name(const char *p) {
    if (strcmp(p, "/dev/stdout") == 0) return 1;
    if (strcmp(p, "/dev/stderr") == 0) return 2;
    if (strncmp(p, "/dev/fd/", 8) == 0) return parse_small_uint(p + 8);
    if (strncmp(p, "/proc/self/fd/", 14) == 0) return parse_small_uint(p + 14);
    if (strncmp(p, "/proc/", 6) == 0) {
        char own[64];
        int n = snprintf(own, sizeof own, "/proc/%ld/fd/", (long)getpid());
        if (strncmp(p, own, (size_t)n) == 0) return parse_small_uint(p + n);
    }
    return -1;
}

/* dir/name, or name alone when dir is NULL. */
static char *join_dir(const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0, nl = strlen(name);
    char *p = sg_cli_xmalloc(dl + nl + 1);
    memcpy(p, path, dl);
    memcpy(p + dl, name, nl + 1);
    return p;
}

static const char *node_kind(mode_t m) {
    return S_ISCHR(m) || S_ISBLK(m) ? "device" : S_ISFIFO(m) ? "FIFO" : S_ISSOCK(m) ? "socket" : "special file";
}

int sg_cli_out_resolve(const char *path, sg_cli_out_target *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    t->fd = -1;
    char *cur = sg_cli_xstrdup(path);
    char shown[4096];
    for (int hops = 0;; hops++) {
        int fd = fd_name(cur);
        struct stat st;
        if (fd >= 0 && fcntl(fd, F_GETFD) != -1 && fstat(fd, &st) == 0) {
            t->mode = SG_OUT_IN_PLACE;
            t->path = cur;
            t->fd = fd;
            t->kind = "file descriptor";
            int fl = fcntl(fd, F_GETFL);
            t->seekable = S_ISREG(st.st_mode) && fl != -1 && !(fl & O_APPEND) && lseek(fd, 0, SEEK_CUR) == 0;
            return 0;
        }
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT) { /* a new file (possibly the target of a dangling link): created beside it */
                t->mode = SG_OUT_REPLACE;
                t->path = cur;
                return 0;
            }
            snprintf(err, errlen, "%s: cannot write there: %s", sg_cli_shown_path(cur, shown, sizeof shown),
                     strerror(errno));
            free(cur);
            return -1;
        }
        if (S_ISLNK(st.st_mode)) {
            if (hops == MAX_LINK_HOPS) {
                snprintf(err, errlen, "%s: more than %d symbolic links (a loop?)",
                         sg_cli_shown_path(path, shown, sizeof shown), MAX_LINK_HOPS);
                free(cur);
                return -1;
            }
            char link[4096];
            ssize_t n = readlink(cur, link, sizeof link - 1);
            if (n < 0 || n == (ssize_t)sizeof link - 1) {
                snprintf(err, errlen, "%s: cannot read the symbolic link: %s",
                         sg_cli_shown_path(cur, shown, sizeof shown), n < 0 ? strerror(errno) : "target too long");
                free(cur);
                return -1;
            }
            link[n] = '\0';
            char *next = link[0] == '/' ? sg_cli_xstrdup(link) : join_dir(cur, link);
            free(cur);
            cur = next;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: is a directory (-o takes a file name)", sg_cli_shown_path(cur, shown, sizeof shown));
            free(cur);
            return -1;
        }
        t->path = cur;
        if (S_ISREG(st.st_mode)) {
            t->mode = SG_OUT_REPLACE;
            t->exists = 1;
            t->perm = st.st_mode & 07777;
        } else {
            t->mode = SG_OUT_IN_PLACE;
            t->kind = node_kind(st.st_mode);
        }
        return 0;
    }
}

int sg_cli_out_open_in_place(const sg_cli_out_target *t, char *err, size_t errlen) {
    char shown[4096];
    int fd = t->fd >= 0 ? fcntl(t->fd, F_DUPFD_CLOEXEC, 3) : open(t->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        snprintf(err, errlen, "%s: cannot open this %s for writing: %s", sg_cli_shown_path(t->path, shown, sizeof shown),
                 t->kind, strerror(errno));
    return fd;
}

void sg_cli_out_target_free(sg_cli_out_target *t) {
    free(t->path);
    t->path = NULL;
}

/* The PID in name when it is base + suffix + decimal digits, else -1. */
static long stale_pid(const char *name, const char *base, const char *suffix) {
    size_t bl = strlen(base), sl = strlen(suffix);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, suffix, sl) != 0) return -1;
    return parse_small_uint(name + bl + sl);
}

/* Removes full (and counts and names it) if it is a regular file of this user's. */
static int remove_ours(const char *target, const char *name, char *removed, size_t removedlen) {
    char *full = join_dir(target, name);
    struct stat st;
    /* A live run holds a flock() on its temporaries (writer.c) until it renames them: its PID may look dead from
     * here (another PID namespace, a container, another host on a shared file system), its lock does not. */
    int fd = open(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             !(flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) && unlink(full) == 0;
    if (fd >= 0) close(fd);
    if (ok && removed && removedlen) {
        size_t l = strlen(removed);
        snprintf(removed + l, removedlen - l, "%s%s", l ? ", " : "", name);
    }
    free(full);
    return ok;
}

char *sg_cli_out_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? sg_cli_xstrdup(path) : sg_cli_xstrdup(".");
    if (slash) dir[slash == path ? 1 : slash - path] = '\0';
    return dir;
}

int sg_cli_out_clean_stale(const char *target, char *removed, size_t removedlen) {
    if (removed && removedlen) removed[0] = '\0';
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    char *dir = sg_cli_out_dir(target);
    DIR *d = opendir(dir);
    int count = 0;
    struct dirent *e;
    /* A run creates TARGET.tmp.PID and its list TARGET.paths.tmp.PID (.texts for queries) together, and renames
     * the list first. So a dead run's TARGET.tmp.PID is taken as ours when its list is beside it, or when its own
     * bytes look like one of our outputs with the list already renamed to TARGET.paths (our_output.h); a name
     * alone is not enough, since anyone may call a file that. Its list goes with it; a list alone is left. */
    while (d && (e = readdir(d))) {
        long pid = stale_pid(e->d_name, base, ".tmp.");
        if (pid <= 0) continue;
        /* This run has no temporaries yet (it cleans before it creates them), so one under its own PID was left by
         * a dead process that had the same PID: a run killed as PID 1 of a container, whose next run is PID 1
         * again. A live run's are kept by their lock (remove_ours). */
        const int alive = pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
        if (alive) continue; /* or not ours to judge */
        char list[2][512], why[256];
        int has_list[2];
        for (int k = 0; k < 2; k++) {
            struct stat st;
            snprintf(list[k], sizeof list[k], "%s%s.tmp.%ld", base, k ? ".texts" : ".paths", pid);
            char *full = join_dir(target, list[k]);
            has_list[k] = lstat(full, &st) == 0 && S_ISREG(st.st_mode);
            free(full);
        }
        char *main_full = join_dir(target, e->d_name);
        int ours = has_list[0] || has_list[1] || sg_cli_our_output_listed(main_full, target, why, sizeof why) == 1;
        free(main_full);
        if (!ours || !remove_ours(target, e->d_name, removed, removedlen)) continue;
        count++;
        for (int k = 0; k < 2; k++) count += has_list[k] && remove_ours(target, list[k], removed, removedlen);
    }
    if (d) closedir(d);
    free(dir);
    return count;
}

int sg_cli_out_lock(int fd, const char *shown, char *err, size_t errlen) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) return 0;
    snprintf(err, errlen, "%s is being written by another siglip2-embed run (it holds the file's lock): wait for it "
             "to end, or write elsewhere", shown);
    return -1;
}

int sg_cli_out_dir_lock(const char *path) {
    char *dir = sg_cli_out_dir(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    while (fd >= 0 && flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    } /* a folder that cannot be locked is used unlocked (best effort) */
    return fd;
}
