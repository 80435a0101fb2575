/* cli/shard.h — --shard K/N: a deterministic split of the inputs among N independent processes.
 *
 * An input belongs to shard K (0-based, 0 <= K < N, like Slurm's SLURM_ARRAY_TASK_ID) when the 64-bit
 * FNV-1a hash of its path bytes, exactly as enumerated (so every process must be given the same PATH
 * spelling), is K modulo N. The hash is fixed forever so shards from different runs and machines agree.
 */
#ifndef SG_CLI_SHARD_H
#define SG_CLI_SHARD_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of the bytes of s (offset basis 14695981039346656037, prime 1099511628211). */
uint64_t sg_cli_fnv1a64(const char *s);

/* Parses "K/N" (decimal, 1 <= N <= 1000000, 0 <= K < N). Returns 0, or -1 with a reason in err. */
int sg_cli_shard_parse(const char *s, int *k, int *n, char *err, size_t errlen);

/* 1 if path belongs to shard k of n (n == 0 means no sharding: every path belongs), else 0. */
int sg_cli_shard_keep(const char *path, int k, int n);

#endif
