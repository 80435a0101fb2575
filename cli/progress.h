/* cli/progress.h — the one-line progress display on stderr.
 *
 * "\r  1234/5000 images  25%  412.3 img/s  ETA 0:00:09  (3 failed)" redrawn at most every 0.2 s (so a fast
 * run does not spend its time on the terminal). 1234 counts every input processed, failed ones included; the
 * rate counts the embedded ones only (done, not failed); the ETA divides what is left by the pace of all
 * inputs processed. The total comes from the counting thread (counter.h) or the
 * end of enumeration; while it is still growing (counting not finished, or a list on stdin that cannot be
 * counted ahead) it is shown with a '+' ("1234/5000+ images") and without percentage or ETA. finish() ends
 * the line. With --progress into a file or pipe the same '\r' lines are written without terminal escapes.
 * A text run counts queries ("1234 queries  5210.4 queries/s"): sg_cli_progress_units.
 */
#ifndef SG_CLI_PROGRESS_H
#define SG_CLI_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct sg_cli_progress {
    FILE *out;          /* NULL: disabled */
    double t0, last;    /* start time, last redraw (seconds, monotonic) */
    int drawn;          /* a line is on screen */
    int tty;            /* out is a terminal: erase to end of line with ESC[K; else plain '\r' */
    const char *one, *many, *rate; /* what is counted: "image", "images", "img/s" unless set otherwise */
} sg_cli_progress;

/* Seconds on a monotonic clock. */
double sg_cli_now(void);

void sg_cli_progress_init(sg_cli_progress *p, FILE *out);
/* Names what the line counts (one item, several, the rate's unit); strings must outlive p. */
void sg_cli_progress_units(sg_cli_progress *p, const char *one, const char *many, const char *rate);
/* Redraws if 0.2 s passed since the last redraw or force is set. done: inputs embedded, failed: inputs that
 * failed. total == 0: unknown; exact == 0: total is a lower bound that may still grow. */
void sg_cli_progress_update(sg_cli_progress *p, uint64_t done, uint64_t failed, uint64_t total, int exact,
                            int force);
/* Clears the line before another message is printed on stderr. */
void sg_cli_progress_clear(sg_cli_progress *p);
/* Draws the final state and ends the line. */
void sg_cli_progress_finish(sg_cli_progress *p, uint64_t done, uint64_t failed, uint64_t total);

#endif
