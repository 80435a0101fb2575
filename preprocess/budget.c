/* preprocess/budget.c — how much memory the decoding threads may hold at once (sg_preprocess_opts.budget).
 *
 * Each decode worker holds one image's encoded bytes and its decoded pixels (and what its decoder needs beside
 * them) until the image is resized. Sixteen workers on sixteen panoramas or scans of 100+ megapixels would hold
 * tens of GB at once, so a folder of them could run a machine out of memory where one at a time fits. With a
 * budget, every image reserves what it will hold before it holds it:
 *   - the file's bytes, before they are read (sg_preprocess_file);
 *   - its pixels, once the decoder knows the declared size (sg_pre_check_dims, which every decoder calls before
 *     it allocates pixels), at a per-format number of bytes per pixel measured from the decoders' peaks (below);
 *   - and what a decoder allocates beyond that estimate as the stream asks for it (sg_pre_budget_more: WebP
 *     lossless's prefix-code tables, which a crafted file of a few MB can grow to hundreds of MB);
 * and gives it all back when the image is done. A reservation that does not fit waits, first come first served.
 *
 * Why it cannot deadlock: a thread that holds a reservation blocks on nothing but the budget until it gives it
 * back (a decode worker has its batch slot before it decodes); when it asks for more and waits in line, it counts
 * as not running. A waiting request is granted when it is first in line and fits, or when no thread is running:
 * then every holder is waiting, and the first in line goes ahead over the limit (an image larger than the whole
 * budget still decodes, alone). So something always runs, and everything that runs finishes.
 *
 * The reservations are estimates (declared size x bytes per pixel), not the allocations themselves, so the
 * resident set can pass the budget by what the estimates miss; they are set above the measured peaks to keep that
 * small. Without a budget (NULL, the library's default) nothing here runs.
 */
#include "preprocess/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sg_decode_budget {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t limit, used, peak;
    int running;                   /* threads holding a reservation that are not waiting for more */
    uint64_t next_ticket, serving; /* the line of waiting requests */
    uint64_t waits, over;          /* reservations that had to wait; images let in (partly) over the budget */
    double wait_s;
};

/* This thread's image: its budget, what it holds (file bytes; pixel estimate and more), and how deep the begin /
 * end pairs nest (a caller may bracket an image itself around the entry points' own pair). */
static __thread struct {
    sg_decode_budget *b;
    uint64_t file, pix, more; /* the encoded bytes, the pixel estimate, what the decoder asked for beyond it */
    int depth, over;          /* over: some of it was let in over the budget */
} tl;

sg_decode_budget *sg_decode_budget_new(uint64_t bytes) {
    sg_decode_budget *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->limit = bytes;
    return b;
}

void sg_decode_budget_free(sg_decode_budget *b) {
    if (!b) return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}

void sg_decode_budget_get_stats(sg_decode_budget *b, sg_decode_budget_stats *st) {
    memset(st, 0, sizeof *st);
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    st->limit = b->limit, st->peak = b->peak, st->waits = b->waits, st->over = b->over, st->wait_s = b->wait_s;
    pthread_mutex_unlock(&b->mu);
}

static double sg_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Adds extra bytes to what the calling thread holds (held: what it holds already). Returns 1 when they were let
 * in over the budget (nothing else running), else 0. */
static int sg_budget_take(sg_decode_budget *b, uint64_t held, uint64_t extra) {
    int over = 0;
    pthread_mutex_lock(&b->mu);
    if (b->next_ticket == b->serving && b->used + extra <= b->limit) { /* nobody waiting and it fits */
        if (!held) b->running++;
    } else {
        const uint64_t ticket = b->next_ticket++;
        if (held && --b->running == 0) /* while it waits, this thread is not running: if it was the last, the */
            pthread_cond_broadcast(&b->cv); /* first in line goes ahead */
        if (!(ticket == b->serving && b->running == 0)) { /* it has to wait (else it goes ahead alone at once) */
            b->waits++;
            const double t0 = sg_mono();
            while (!(ticket == b->serving && (b->used + extra <= b->limit || b->running == 0)))
                pthread_cond_wait(&b->cv, &b->mu);
            b->wait_s += sg_mono() - t0;
        }
        over = b->used + extra > b->limit;
        b->serving++;
        b->running++;
        pthread_cond_broadcast(&b->cv); /* the next in line may fit too */
    }
    b->used += extra;
    if (b->used > b->peak) b->peak = b->used;
    pthread_mutex_unlock(&b->mu);
    return over;
}

void sg_pre_budget_begin(const sg_preprocess_opts *opts) {
    if (tl.depth++ == 0) tl.b = opts ? opts->budget : NULL, tl.file = tl.pix = tl.more = 0, tl.over = 0;
}

void sg_pre_budget_end(void) {
    if (--tl.depth > 0) return;
    sg_decode_budget *b = tl.b;
    const uint64_t held = tl.file + tl.pix + tl.more;
    const int over = tl.over;
    tl.b = NULL, tl.file = tl.pix = tl.more = 0, tl.over = 0;
    if (!b || !held) return;
    pthread_mutex_lock(&b->mu);
    b->used -= held;
    b->over += (uint64_t)over;
    b->running--;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void sg_pre_budget_file(uint64_t bytes) {
    if (!tl.b || bytes <= tl.file) return;
    tl.over |= sg_budget_take(tl.b, tl.file + tl.pix + tl.more, bytes - tl.file);
    tl.file = bytes;
}

/* Bytes a decoder holds per declared pixel at its peak, the encoded bytes not counted, with room over what was
 * measured (4000 x 3000 images, ru_maxrss growth over the decode; docs/perf-notes.md, preprocess/ section 7):
 * JPEG streamed into the resize 0.3 baseline, 3.2 progressive (its coefficients), and decoded whole ("JPEG whole",
 * reserved by sg_pre_decode_jpeg: an EXIF rotation or a vertical-first resize) 3 more, 6 more rotated; PNG (our
 * own decoder since session 35: the rows, then RGB) 6.0 RGB, 7.0 RGBA, 9.0 RGB 16-bit, 11.0 RGBA 16-bit; TIFF 6.9;
 * WebP 6.9 lossless, 4.4 lossy, +3 rotated; GIF 3.9; BMP, TGA, PNM 3.1. */
static uint64_t sg_bytes_per_pixel(const char *fmt) {
    if (!strcmp(fmt, "TIFF") || !strcmp(fmt, "PSD")) return 16;
    if (!strcmp(fmt, "PNG")) return 12;
    if (!strcmp(fmt, "WebP")) return 12;
    if (!strcmp(fmt, "JPEG whole")) return 10;
    if (!strcmp(fmt, "JPEG")) return 4;
    if (!strcmp(fmt, "GIF")) return 6;
    return 5;
}

void sg_pre_budget_pixels(const char *fmt, uint64_t w, uint64_t h) {
    if (!tl.b) return;
    const uint64_t need = w * h * sg_bytes_per_pixel(fmt); /* w * h <= the pixel cap: no overflow */
    if (need <= tl.pix) return;
    tl.over |= sg_budget_take(tl.b, tl.file + tl.pix + tl.more, need - tl.pix);
    tl.pix = need;
}

void sg_pre_budget_more(uint64_t bytes) {
    if (!tl.b || !bytes) return;
    tl.over |= sg_budget_take(tl.b, tl.file + tl.pix + tl.more, bytes);
    tl.more += bytes;
}
