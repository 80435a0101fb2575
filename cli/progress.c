/* cli/progress.c — the progress line (see progress.h). */
#include "progress.h"

#include <time.h>
#include <unistd.h>

double sg_cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sg_cli_progress_init(sg_cli_progress *p, FILE *out) {
    p->out = out;
    p->t0 = sg_cli_now();
    p->last = 0;
    p->drawn = 0;
    p->tty = out && isatty(fileno(out));
    sg_cli_progress_units(p, "image", "images", "img/s");
}

void sg_cli_progress_units(sg_cli_progress *p, const char *one, const char *many, const char *rate) {
    p->one = one;
    p->many = many;
    p->rate = rate;
}

static void draw(sg_cli_progress *p, uint64_t done, uint64_t failed, uint64_t total, int exact, double now) {
    double el = now - p->t0;
    /* The rate shown counts what was embedded only: a folder of 100k inputs of which 97k fail fast (empty or
     * unreadable files) must not claim tens of thousands of images/s. The ETA goes by every input processed,
     * failed ones included, since failures take time too and the rest of the total will hold some. */
    double rate = el > 0 ? (double)done / el : 0;
    double pace = el > 0 ? (double)(done + failed) / el : 0;
    fprintf(p->out, "%s%llu", p->tty ? "\r\033[K" : "\r", (unsigned long long)(done + failed));
    if (total && total < done + failed) total = done + failed; /* a bound overtaken by the work itself */
    if (total && !exact) {
        fprintf(p->out, "/%llu+ %s", (unsigned long long)total, p->many); /* still counting: no percentage or ETA */
        total = 0;
    } else if (total) {
        fprintf(p->out, "/%llu %s  %3.0f%%", (unsigned long long)total, p->many,
                100.0 * (double)(done + failed) / (double)total);
    } else {
        fprintf(p->out, " %s", done + failed == 1 ? p->one : p->many);
    }
    fprintf(p->out, "  %.1f %s", rate, p->rate);
    if (total && pace > 0 && total > done + failed) {
        long eta = (long)((double)(total - done - failed) / pace + 0.5);
        fprintf(p->out, "  ETA %ld:%02ld:%02ld", eta / 3600, eta / 60 % 60, eta % 60);
    }
    if (failed) fprintf(p->out, "  (%llu failed)", (unsigned long long)failed);
    fflush(p->out);
    p->drawn = 1;
}

void sg_cli_progress_update(sg_cli_progress *p, uint64_t done, uint64_t failed, uint64_t total, int exact,
                            int force) {
    if (!p->out) return;
    double now = sg_cli_now();
    if (!force && now - p->last < 0.2) return; /* 5 redraws a second is smooth and costs nothing */
    p->last = now;
    draw(p, done, failed, total, exact, now);
}

void sg_cli_progress_clear(sg_cli_progress *p) {
    if (!p->out || !p->drawn) return;
    fputs(p->tty ? "\r\033[K" : "\n", p->out);
    p->drawn = 0;
}

void sg_cli_progress_finish(sg_cli_progress *p, uint64_t done, uint64_t failed, uint64_t total) {
    if (!p->out) return;
    draw(p, done, failed, total, 1, sg_cli_now());
    fputc('\n', p->out);
    p->drawn = 0;
}
