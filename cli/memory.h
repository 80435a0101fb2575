/* cli/memory.h — how much memory this process may still use, for the decode workers' default budget. */
#ifndef SG_CLI_MEMORY_H
#define SG_CLI_MEMORY_H

#include <stdint.h>

/* Bytes this process can still take: the kernel's MemAvailable (/proc/meminfo), or less when a control group
 * the process runs in (a container, a Slurm job, a systemd slice) has a memory limit: its limit less its usage,
 * for each group from the process's own up to the root (cgroup v2, or v1's memory controller). 0 when none of
 * these can be read (not Linux). */
uint64_t sg_cli_memory_available(void);

/* The decode workers' memory budget: asked (--decode-memory) when not 0, else the default, half of avail (what
 * sg_cli_memory_available() returned), leaving the rest to the backend, the writer and the system, and at least
 * 512 MiB; 4 GiB when avail is 0 (nothing could be read). */
uint64_t sg_cli_decode_budget(uint64_t asked, uint64_t avail);

#endif
