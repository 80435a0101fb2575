/* cli/memory.c — the memory this process may still use (design in memory.h).
 *
 * A container or a batch job sees the whole machine's MemAvailable, but its control group's limit is what the
 * kernel's OOM killer enforces, so both are read and the smaller wins. Every file is read defensively: any
 * that is missing or malformed is skipped, never an error.
 */
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first unsigned number in file, or 0 when it cannot be read or holds "max" (no limit). */
static uint64_t read_u64(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok ? (uint64_t)v : 0;
}

static uint64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* min over the groups from dir (a path under root) up to root of limit - usage, for the groups with a limit;
 * UINT64_MAX when none has one. limit_name / usage_name: cgroup v2's memory.max / memory.current, or v1's
 * memory.limit_in_bytes / memory.usage_in_bytes (v1 reports "no limit" as a huge number, above any machine). */
static uint64_t group_room(const char *root, const char *dir, const char *limit_name, const char *usage_name) {
    uint64_t room = UINT64_MAX;
    char path[4096], rel[2048];
    snprintf(rel, sizeof rel, "%s", dir);
    for (;;) {
        /* rel "" is the mount's root: the host's root group (no limit there), or in a container whose cgroup
           namespace or bind mount shows only its own group, that group */
        snprintf(path, sizeof path, "%s%s/%s", root, rel, limit_name);
        uint64_t limit = read_u64(path);
        if (limit && limit < (1ull << 60)) {
            snprintf(path, sizeof path, "%s%s/%s", root, rel, usage_name);
            uint64_t used = read_u64(path);
            uint64_t r = limit > used ? limit - used : 0;
            if (r < room) room = r;
        }
        char *slash = strrchr(rel, '/'); /* up one group */
        if (!slash) break;
        *slash = '\0';
    }
    return room;
}

static uint64_t cgroup_room(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return UINT64_MAX;
    char line[4096];
    uint64_t room = UINT64_MAX;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* "0::/path" (v2) or "N:controllers:/path" (v1) */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *dir = c2 + 1;
        uint64_t r = UINT64_MAX;
        if (!ctrl[0] && line[0] == '0')
            r = group_room("/sys/fs/cgroup", dir, "memory.max", "memory.current");
        else if (strstr(ctrl, "memory"))
            r = group_room("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
        if (r < room) room = r;
    }
    fclose(f);
    return room;
}

uint64_t sg_cli_memory_available(void) {
    uint64_t avail = mem_available(), room = cgroup_room();
    if (room != UINT64_MAX && (avail == 0 || room < avail)) avail = room;
    return avail;
}

uint64_t sg_cli_decode_budget(uint64_t asked, uint64_t avail) {
    if (asked) return asked;
    if (!avail) return 4ull << 30;
    uint64_t half = avail / 2;
    return half < (512ull << 20) ? 512ull << 20 : half;
}
