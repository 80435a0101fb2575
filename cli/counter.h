/* cli/counter.h — counting the inputs ahead of the pipeline, so the progress line can show a total and an ETA.
 *
 * The pipeline enumerates lazily (a million-file tree is never listed ahead), so for directories and lists it
 * knows its total only at the end. When progress is shown, a counting thread walks the same operands and
 * reads the same --files-from lists with its own enumerator (inputs.h), applying the same shard and resume
 * filters, and publishes how many inputs it has seen. A list that cannot be read twice (stdin, a pipe) is not
 * counted: the count is then a lower bound until the pipeline's own enumeration ends. The walk costs one
 * stat per entry, as the pipeline's own does; it stops as soon as the run ends.
 */
#ifndef SG_CLI_COUNTER_H
#define SG_CLI_COUNTER_H

#include <stdint.h>
#include "pathset.h"

typedef struct sg_cli_counter sg_cli_counter;

/* Starts counting in a thread. paths/lists as for sg_cli_inputs_open; done (may be NULL) is only read.
 * Returns NULL when the thread cannot start (then no total is shown). */
sg_cli_counter *sg_cli_counter_start(char **paths, int npaths, char **lists, int nlists, int nul_sep,
                                     int all_files, int shard_k, int shard_n, const sg_cli_pathset *done);

/* The inputs counted so far; *exact is 1 when counting has finished and covered every input. Thread-safe. */
uint64_t sg_cli_counter_get(const sg_cli_counter *c, int *exact);

/* Stops the thread (if still counting) and frees c. NULL is fine. */
void sg_cli_counter_stop(sg_cli_counter *c);

#endif
