/* tests/test_decode_budget.c — the decode memory budget (preprocess/budget.c) with threads.
 *
 * Threads play images: each reserves its "file" and then its "pixels" through the same internal calls the
 * decoders make (sg_pre_budget_file, sg_pre_check_dims), holds them for a while, and gives them back. The test
 * keeps its own account of what is reserved and checks, each time a thread is let in, the rule the budget
 * promises: either everything reserved fits the budget, or the thread that was let in is the only one decoding.
 * Also: no run hangs (an alarm fails the test instead), a single image larger than the whole budget decodes, a
 * budget of NULL changes nothing, nested begin / end pairs give everything back once, real decodes through
 * sg_preprocess_file give the same pixels with a budget as without, and WebP lossless's prefix tables are
 * reserved as they grow.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "preprocess/internal.h"
#include "tests/check.h"

typedef struct {
    sg_preprocess_opts opts;
    pthread_mutex_t mu;
    uint64_t limit;
    uint64_t held;   /* the test's account: files and pixels of threads between their reservation and end */
    int inside;      /* threads whose pixels were granted and that have not ended */
    int violations, max_inside;
    int next_image, n_images;
    uint64_t file_bytes, pixels_w, pixels_h; /* per image; pixels at TIFF's 16 bytes each */
    int big_every;   /* every big_every-th image is four times larger (0: none) */
} world;

static void nap(int us) {
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

/* The next of n items for a thread to take (*next counts them out under mu), or -1 when all are taken. */
static int take_next(pthread_mutex_t *mu, int *next, int n) {
    pthread_mutex_lock(mu);
    int i = *next < n ? (*next)++ : -1;
    pthread_mutex_unlock(mu);
    return i;
}

static void *player(void *arg) {
    world *w = arg;
    for (;;) {
        int i = take_next(&w->mu, &w->next_image, w->n_images);
        if (i < 0) return NULL;
        const uint64_t scale = w->big_every && i % w->big_every == 0 ? 2 : 1;
        const uint64_t file = w->file_bytes * scale, pw = w->pixels_w * scale, ph = w->pixels_h * scale;
        sg_pre_budget_begin(&w->opts);
        sg_pre_budget_file(file);
        pthread_mutex_lock(&w->mu);
        w->held += file;
        pthread_mutex_unlock(&w->mu);
        char err[256];
        int rc = sg_pre_check_dims("TIFF", pw, ph, 1ull << 40, err, sizeof err);
        pthread_mutex_lock(&w->mu);
        w->held += pw * ph * 16;
        w->inside++;
        if (w->inside > w->max_inside) w->max_inside = w->inside;
        if (rc != 0 || (w->inside > 1 && w->held > w->limit)) w->violations++;
        pthread_mutex_unlock(&w->mu);
        nap(200 + (i * 37) % 500); /* decoding */
        pthread_mutex_lock(&w->mu);
        w->inside--;
        w->held -= file + pw * ph * 16;
        pthread_mutex_unlock(&w->mu);
        sg_pre_budget_end();
    }
}

/* n_threads threads play n_images images of file bytes and w x h pixels against a budget of limit bytes. */
static void play(const char *what, int n_threads, int n_images, uint64_t limit, uint64_t file, uint64_t pw,
                 uint64_t ph, int big_every, int want_wait, int max_inside) {
    world w;
    memset(&w, 0, sizeof w);
    sg_preprocess_opts_default(&w.opts);
    w.opts.budget = sg_decode_budget_new(limit);
    pthread_mutex_init(&w.mu, NULL);
    w.limit = limit, w.n_images = n_images, w.file_bytes = file, w.pixels_w = pw, w.pixels_h = ph;
    w.big_every = big_every;
    pthread_t t[32];
    for (int i = 0; i < n_threads; i++) pthread_create(&t[i], NULL, player, &w);
    for (int i = 0; i < n_threads; i++) pthread_join(t[i], NULL);
    sg_decode_budget_stats st;
    sg_decode_budget_get_stats(w.opts.budget, &st);
    CHECK(w.violations == 0, "%s: every image let in beside others found their reservations within the budget (%d did not)",
          what, w.violations);
    CHECK(w.held == 0 && w.inside == 0, "%s: everything given back (the test's account ends at %llu bytes, %d inside)", what,
          (unsigned long long)w.held, w.inside);
    CHECK(max_inside == 0 || w.max_inside <= max_inside, "%s: at most %d images decoding at once (%d fit; 0: no bound)", what,
          w.max_inside, max_inside);
    CHECK(!want_wait || st.waits > 0, "%s: images waited for room when they had to (%d threads, budget %llu, want waits %d)", what,
          n_threads, (unsigned long long)limit, want_wait);
    printf("PASS: %s: %d threads, %d images: at most %d decoding at once, %llu waits (%.3f s), %llu let in over "
           "the budget alone, most reserved %llu of %llu bytes\n",
           what, n_threads, n_images, w.max_inside, (unsigned long long)st.waits, st.wait_s,
           (unsigned long long)st.over, (unsigned long long)st.peak, (unsigned long long)limit);
    sg_decode_budget_free(w.opts.budget);
    pthread_mutex_destroy(&w.mu);
}

/* After a begin / end pair (nested or not) the budget holds nothing: a second thread can take all of it at once
 * without waiting. */
static void nested(void) {
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    o.budget = sg_decode_budget_new(1000);
    sg_pre_budget_begin(&o);
    sg_pre_budget_file(100);
    sg_pre_budget_begin(&o); /* sg_preprocess_file calls sg_preprocess_memory */
    char err[128];
    CHECK(sg_pre_check_dims("BMP", 10, 10, 1000, err, sizeof err) == 0, "nested: a 10 x 10 BMP passes the size check");
    sg_pre_check_dims("BMP", 5, 5, 1000, err, sizeof err); /* smaller: no more reserved */
    sg_pre_budget_end();
    sg_decode_budget_stats st;
    sg_decode_budget_get_stats(o.budget, &st);
    CHECK(st.peak == 100 + 10 * 10 * 5, "nested: the file's 100 bytes and 10 x 10 x 5 reserved, the smaller size nothing more (%llu)",
          (unsigned long long)st.peak);
    sg_pre_budget_end();
    sg_pre_budget_begin(&o);
    sg_pre_budget_file(1000); /* all of it: fits only if everything was given back */
    sg_pre_budget_end();
    sg_decode_budget_get_stats(o.budget, &st);
    CHECK(st.waits == 0 && st.over == 0 && st.peak == 1000, "nested: after end the whole budget is free again (%llu "
          "waits, %llu over, peak %llu)", (unsigned long long)st.waits, (unsigned long long)st.over,
          (unsigned long long)st.peak);
    sg_decode_budget_free(o.budget);
    /* a failed size check reserves nothing */
    o.budget = sg_decode_budget_new(10);
    sg_pre_budget_begin(&o);
    CHECK(sg_pre_check_dims("PNG", 1000, 1000, 100, err, sizeof err) != 0, "a size over the pixel cap is refused");
    sg_pre_budget_end();
    sg_decode_budget_get_stats(o.budget, &st);
    CHECK(st.peak == 0, "a refused size reserves nothing (%llu bytes)", (unsigned long long)st.peak);
    sg_decode_budget_free(o.budget);
    printf("PASS: nested begin / end give everything back once; a refused size reserves nothing\n");
}

/* Real files through sg_preprocess_file on 4 threads with a budget that lets one in at a time: the same pixels as
 * one thread without a budget. */
typedef struct {
    const sg_preprocess_opts *opts;
    const char **files;
    int n;
    uint8_t *out;
    int next, failed;
    pthread_mutex_t mu;
} decode_job;

static void *decoder(void *arg) {
    decode_job *j = arg;
    for (;;) {
        int i = take_next(&j->mu, &j->next, j->n);
        if (i < 0) return NULL;
        char err[512];
        if (sg_preprocess_file(j->files[i], j->opts, j->out + (size_t)i * 224 * 224 * 3, NULL, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", j->files[i], err);
            pthread_mutex_lock(&j->mu);
            j->failed++;
            pthread_mutex_unlock(&j->mu);
        }
    }
}

static void real_files(const char *root) {
    static const char *names[] = {"png_rgb.png", "png_rgba.png", "png_16bit.png", "gif_anim.gif", "tiff_lzw.tif",
                                  "webp_lossless.webp", "jpeg_420.jpg", "jpeg_progressive.jpg", "bmp_24.bmp",
                                  "exif_orient_6.jpg"};
    const int n = (int)(sizeof names / sizeof *names);
    const char *files[16];
    char paths[16][1024];
    int m = 0;
    for (int i = 0; i < n; i++) {
        snprintf(paths[m], sizeof paths[m], "%s/tests/images/%s", root, names[i]);
        if (access(paths[m], R_OK) == 0) files[m] = paths[m], m++;
    }
    if (m < 4) {
        SKIP("real files: only %d of the test images found under %s/tests/images", m, root);
        return;
    }
    uint8_t *a = sg_test_xmalloc((size_t)m * 224 * 224 * 3), *b = sg_test_xmalloc((size_t)m * 224 * 224 * 3);
    sg_preprocess_opts plain, budgeted;
    sg_preprocess_opts_default(&plain);
    sg_preprocess_opts_default(&budgeted);
    budgeted.budget = sg_decode_budget_new(1); /* room for nothing: each image goes ahead alone */
    decode_job ja = {&plain, files, m, a, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    decode_job jb = {&budgeted, files, m, b, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    decoder(&ja);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, decoder, &jb);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    sg_decode_budget_stats st;
    sg_decode_budget_get_stats(budgeted.budget, &st);
    CHECK(ja.failed == 0 && jb.failed == 0, "real files: all decode with and without a budget (%d / %d failed)", ja.failed, jb.failed);
    CHECK(memcmp(a, b, (size_t)m * 224 * 224 * 3) == 0, "real files: the same pixels with a budget as without");
    CHECK(st.over == (uint64_t)m, "real files: each image let in alone over a 1-byte budget (%llu of %d)",
          (unsigned long long)st.over, m);
    printf("PASS: %d test images on 4 threads under a 1-byte budget (each alone): the same pixels as without one; "
           "%llu waits\n", m, (unsigned long long)st.waits);
    sg_decode_budget_free(budgeted.budget);
    free(a);
    free(b);
}

/* WebP lossless's prefix-code tables are reserved as they grow (sg_pre_budget_more), beyond the pixel estimate: a
 * crafted stream of a few MB can ask for hundreds of MB of them. */
static void webp_tables(const char *root) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/images/webp/vp8l_hand_meta_groups.webp", root); /* 8 x 4, 2 groups */
    size_t n;
    uint8_t *d = sg_test_read_file(path, &n);
    if (!d) {
        SKIP("WebP tables: %s not found", path);
        return;
    }
    sg_preprocess_opts o;
    sg_preprocess_opts_default(&o);
    o.budget = sg_decode_budget_new(1ull << 40);
    uint8_t out[224 * 224 * 3];
    char err[256] = "";
    int rc = sg_preprocess_memory(d, n, &o, out, NULL, err, sizeof err);
    sg_decode_budget_stats st;
    sg_decode_budget_get_stats(o.budget, &st);
    const uint64_t pixels = (uint64_t)n + 8 * 4 * 12; /* the file and the 8 x 4 image at WebP's 12 B/px */
    CHECK(rc == 0 && st.peak >= pixels + 4096 * 3,
          "WebP lossless: its prefix tables are reserved beside its file and pixels (%llu bytes at most, %llu for the "
          "file and pixels; %s)", (unsigned long long)st.peak, (unsigned long long)pixels, rc ? err : "decoded");
    sg_decode_budget_free(o.budget);
    free(d);
}

int main(void) {
    alarm(240); /* a hang is a failure, not a stuck test run */
    const char *root = getenv("SG_ROOT") ? getenv("SG_ROOT") : ".";
    /* each image: a 1 MB file and 1000 x 1000 px x 16 B = 16 MB of pixels */
    play("no budget pressure", 8, 64, 1ull << 40, 1000000, 1000, 1000, 0, 0, 0);
    play("room for 3 at once", 8, 64, 3 * 17000000ull + 100, 1000000, 1000, 1000, 0, 1, 3);
    play("room for 1 at once", 6, 40, 17000000ull, 1000000, 1000, 1000, 0, 1, 1);
    play("some images larger than the budget", 6, 40, 20000000ull, 1000000, 1000, 1000, 3, 1, 0);
    play("budget smaller than any image", 4, 24, 1000, 1000000, 1000, 1000, 0, 1, 1);
    play("a single thread never waits", 1, 8, 1000, 1000000, 1000, 1000, 0, 0, 1);
    nested();
    real_files(root);
    webp_tables(root);
    {
        sg_preprocess_opts o;
        sg_preprocess_opts_default(&o);
        CHECK(o.budget == NULL, "the default options have no budget");
        sg_pre_budget_begin(&o);
        sg_pre_budget_file(1ull << 50);
        char err[64];
        CHECK(sg_pre_check_dims("PNG", 100, 100, 1ull << 30, err, sizeof err) == 0, "no budget: a size check passes and reserves nothing");
        sg_pre_budget_end();
        printf("PASS: without a budget nothing is reserved or waited for\n");
    }
    return CHECK_DONE();
}
