/* cli/pipeline.h — the parallel, ordered embedding pipeline.
 *
 *   enumerator ──> N decode workers ──> ring of R pixel batches ──> compute thread ──> writer thread
 *   (streaming,     (read, decode,       (bounded: workers wait     (submit batch j,    (rows in input
 *    shard/resume    resize into their    for a free batch)          collect j-1: two    order, errors
 *    filters)        input's slot)                                    in flight)          reported here)
 *
 * Input i (counted after the shard and resume filters) goes to slot i % B of batch i / B, which lives in
 * ring entry (i / B) % R; a worker waits until that entry has been handed to the backend, so memory is
 * O(B x R x S x S x 3) however many inputs there are, and batches reach the backend — and rows the output —
 * in input order whichever worker finishes first. Failed inputs take no place in the backend's batch (the
 * ok pixels are packed) but keep their place in the output order. The writer prints each failure as
 * "siglip2-embed: PATH: reason" in input order, then skips it, writes a null row, or stops the run.
 * The decode workers can start before the backend exists (sg_cli_pipeline_start): a GPU backend takes about
 * half a second to start, in which 16 workers decode some hundreds of images into the ring.
 */
#ifndef SG_CLI_PIPELINE_H
#define SG_CLI_PIPELINE_H

#include <stdint.h>
#include "../kernel/backend.h"
#include "../preprocess/preprocess.h"
#include "args.h"
#include "counter.h"
#include "inputs.h"
#include "pathset.h"
#include "progress.h"
#include "writer.h"

typedef struct sg_cli_pipeline_cfg {
    sg_backend *backend;            /* sg_cli_pipeline_run only; with start/finish it comes with finish */
    sg_cli_inputs *inputs;
    sg_cli_writer *writer;          /* likewise */
    int image_size, dim;            /* S and D (the model's; the backend must agree); taken from backend when 0 */
    int reject_newline_paths;       /* without writer: the output cannot list a path with a newline */
    const sg_preprocess_opts *pre;  /* out_size must equal the backend's image_size */
    int batch;                      /* B, at most backend->max_batch */
    int threads;                    /* decode workers, >= 1 */
    int normalize;
    sg_cli_on_error on_error;
    int shard_k, shard_n;
    sg_cli_pathset *done;           /* --resume: the exact paths to skip (taken under enum_mu), or NULL */
    const char *dump_dir;           /* --dump-preprocessed, or NULL */
    sg_cli_progress *progress;      /* may be disabled (out == NULL) */
    const sg_cli_counter *counter;  /* the progress line's total before enumeration ends, or NULL */
    int rows_share_progress_tty;    /* rows go to the terminal the progress line is drawn on: clear it first */
} sg_cli_pipeline_cfg;

typedef struct sg_cli_pipeline_stats {
    uint64_t enumerated;     /* inputs found, before the shard and resume filters */
    uint64_t embedded;       /* rows with an embedding */
    uint64_t failed;         /* inputs that could not be embedded (reported) */
    uint64_t skipped_shard;  /* enumerated but belonging to another shard */
    uint64_t skipped_done;   /* already in the output (--resume) */
    uint64_t not_reached;    /* enumerated but never written because the run stopped early */
    int stopped;             /* --on-error fail stopped the run */
    double read_s, decode_s, resize_s;  /* thread CPU time of the workers in each stage, summed */
    double slot_wait_s;      /* wall time workers waited for a free ring batch (the backend or writer lags) */
    double batch_wait_s;     /* wall time the compute thread waited for decoded batches (decode lags) */
    double compute_s;        /* the compute thread's wall time inside submit + collect */
    double write_s;          /* the writer's wall time formatting and writing */
    double wall_s;
} sg_cli_pipeline_stats;

typedef struct sg_cli_pipeline sg_cli_pipeline;

/* Starts the enumerator and the decode workers: they fill the ring (at most R batches) while the caller is
 * still setting up, e.g. starting a GPU backend (half a second that decoding need not wait for). cfg must stay
 * valid until finish or cancel; its backend and writer may be NULL. */
sg_cli_pipeline *sg_cli_pipeline_start(const sg_cli_pipeline_cfg *cfg);

/* Hands over the backend and the open writer, runs everything to the end of the inputs (or the first failure
 * with --on-error fail) and frees p. Returns 0, or -1 on a fatal error (backend failure, write error,
 * unreadable --files-from list, a backend that does not fit the run's S, D or batch) with a message in err;
 * stats are filled either way. Wall time counts from start. */
int sg_cli_pipeline_finish(sg_cli_pipeline *p, sg_backend *backend, sg_cli_writer *writer, sg_cli_pipeline_stats *stats,
                           char *err, size_t errlen);

/* Stops the workers started by start (setup failed: no backend or no output) and frees p. NULL is fine. */
void sg_cli_pipeline_cancel(sg_cli_pipeline *p);

/* start + finish with cfg's backend and writer. */
int sg_cli_pipeline_run(const sg_cli_pipeline_cfg *cfg, sg_cli_pipeline_stats *stats, char *err, size_t errlen);

#endif
