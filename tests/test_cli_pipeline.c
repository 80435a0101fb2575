/* tests/test_cli_pipeline.c — the parallel pipeline against a mock backend that records how it is driven.
 *
 * 300 tiny PPM inputs, each a flat colour encoding its own index (R = i & 255, G = i >> 8; a flat image stays
 * flat through the resize), plus corrupt files among them. The mock backend's "embedding" of an image is its
 * colour, so every output row proves which input it came from. Checks: rows in input order with the right
 * path for each, whatever the worker count and timing (the mock sleeps randomly); never more than
 * SG_BACKEND_MAX_INFLIGHT batches submitted and uncollected, and two in flight at times (upload overlaps
 * compute); failed inputs as null rows / skipped / stopping the run; a backend failure mid-run keeps an
 * exact prefix of the rows and reports the backend's message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "../cli/inputs.h"
#include "../cli/pipeline.h"
#include "../cli/progress.h"
#include "../cli/writer.h"

#define NIN 300
#define DIM 3

typedef struct mock {
    int S;
    float pending[SG_BACKEND_MAX_INFLIGHT + 1][64][DIM];
    int pending_n[SG_BACKEND_MAX_INFLIGHT + 1];
    int head, count;
    int max_inflight, fail_at, submits;
    unsigned seed;
} mock;

static int mock_submit(sg_backend *b, const uint8_t *px, int n, char *err, size_t errlen) {
    mock *m = b->impl;
    if (++m->submits == m->fail_at) {
        snprintf(err, errlen, "mock device lost at batch %d", m->submits);
        return -1;
    }
    if (m->count == SG_BACKEND_MAX_INFLIGHT) {
        m->count++; /* recorded as a contract violation below */
        if (m->count > m->max_inflight) m->max_inflight = m->count;
        snprintf(err, errlen, "more than %d batches in flight", SG_BACKEND_MAX_INFLIGHT);
        return -1;
    }
    int slot = (m->head + m->count) % (SG_BACKEND_MAX_INFLIGHT + 1);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = px + (size_t)i * m->S * m->S * 3 + (size_t)(m->S * m->S / 2) * 3; /* centre pixel */
        m->pending[slot][i][0] = p[0];
        m->pending[slot][i][1] = p[1];
        m->pending[slot][i][2] = 1.0f;
    }
    m->pending_n[slot] = n;
    m->count++;
    if (m->count > m->max_inflight) m->max_inflight = m->count;
    return 0;
}

static int mock_collect(sg_backend *b, float *out, char *err, size_t errlen) {
    mock *m = b->impl;
    if (m->count == 0) {
        snprintf(err, errlen, "collect with nothing in flight");
        return -1;
    }
    if (rand_r(&m->seed) % 4 == 0) usleep((useconds_t)(rand_r(&m->seed) % 3000)); /* a slow batch now and then */
    memcpy(out, m->pending[m->head], (size_t)m->pending_n[m->head] * DIM * sizeof(float));
    m->head = (m->head + 1) % (SG_BACKEND_MAX_INFLIGHT + 1);
    m->count--;
    return 0;
}

static char g_dir[512];

static void make_inputs(int *bad, int nbad) {
    for (int i = 0; i < NIN; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/in/%04d.ppm", g_dir, i);
        FILE *f = fopen(p, "wb");
        int is_bad = 0;
        for (int k = 0; k < nbad; k++) is_bad |= bad[k] == i;
        if (is_bad) {
            fputs("P6\n3 3\n255\n\x01\x02", f); /* truncated pixel data */
        } else {
            fputs("P6\n3 3\n255\n", f);
            for (int k = 0; k < 9; k++) {
                unsigned char px[3] = {(unsigned char)(i & 255), (unsigned char)(i >> 8), 7};
                fwrite(px, 1, 3, f);
            }
        }
        fclose(f);
    }
}

typedef struct run_result {
    int rc, rows, in_order, nulls, embedded, failed;
    char err[512];
    int max_inflight;
} run_result;

/* Runs the pipeline over the input dir into a JSONL file and checks every row against its path. */
static run_result run(int threads, int batch, sg_cli_on_error mode, int fail_at) {
    run_result r;
    memset(&r, 0, sizeof r);
    mock m;
    memset(&m, 0, sizeof m);
    m.S = 8;
    m.fail_at = fail_at;
    m.seed = (unsigned)time(NULL) ^ (unsigned)threads;
    sg_backend be = {.name = "mock", .numerics = "fp32 (a mock)", .dim = DIM, .image_size = 8, .max_batch = 64,
                     .impl = &m, .submit = mock_submit, .collect = mock_collect, .destroy = NULL};
    char dir[600], out[600];
    snprintf(dir, sizeof dir, "%s/in", g_dir);
    snprintf(out, sizeof out, "%s/out.jsonl", g_dir);
    char *paths[] = {dir};
    sg_cli_inputs *in = sg_cli_inputs_open(paths, 1, NULL, 0, 0, 0, r.err, sizeof r.err);
    sg_cli_writer_cfg wc = {out, SG_FMT_JSONL, DIM, 0, 0, 0, NULL, 0};
    sg_cli_writer *w = sg_cli_writer_open(&wc, r.err, sizeof r.err);
    sg_preprocess_opts pre;
    sg_preprocess_opts_default(&pre);
    pre.out_size = 8;
    sg_cli_progress prog;
    sg_cli_progress_init(&prog, NULL);
    sg_cli_pipeline_cfg pc = {.backend = &be, .inputs = in, .writer = w, .pre = &pre, .batch = batch,
                              .threads = threads, .normalize = 0, .on_error = mode, .progress = &prog};
    sg_cli_pipeline_stats st;
    fflush(stderr);
    r.rc = sg_cli_pipeline_run(&pc, &st, r.err, sizeof r.err);
    sg_cli_writer_close(w, r.rc == 0, r.err + strlen(r.err), sizeof r.err - strlen(r.err));
    sg_cli_inputs_close(in);
    r.embedded = (int)st.embedded;
    r.failed = (int)st.failed;
    r.max_inflight = m.max_inflight;
    FILE *f = fopen(out, "r");
    char line[512];
    int expect = 0;
    r.in_order = 1;
    while (f && fgets(line, sizeof line, f)) {
        int idx, R, G;
        char *p = strstr(line, "/in/");
        if (!p || sscanf(p, "/in/%d.ppm", &idx) != 1) {
            r.in_order = 0;
            break;
        }
        if (mode == SG_ON_ERROR_SKIP)
            expect = idx >= expect ? idx : -1; /* skipped rows leave gaps but never go backwards */
        if (idx != expect) r.in_order = 0;
        if (strstr(line, "\"embedding\":null")) {
            r.nulls++;
        } else if (sscanf(strstr(line, "[") + 1, "%d,%d", &R, &G) != 2 || R != (idx & 255) || G != (idx >> 8)) {
            r.in_order = 0; /* the row's vector is not its own input's */
        }
        expect++;
        r.rows++;
    }
    if (f) fclose(f);
    return r;
}

int main(void) {
    const char *base = getenv("SG_TMP") ? getenv("SG_TMP") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/cli_pipeline.XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        printf("FAIL: cannot create a scratch directory\n");
        return 1;
    }
    char in[600];
    snprintf(in, sizeof in, "%s/in", g_dir);
    mkdir(in, 0777);
    int bad[3] = {17, 18, 250};
    make_inputs(bad, 3);
    /* stderr gets the "siglip2-embed: PATH: reason" lines of the corrupt inputs: keep the log readable */
    if (!freopen("/dev/null", "w", stderr)) return 1;
    const int cfg[][2] = {{1, 1}, {7, 5}, {16, 3}, {3, 64}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        run_result r = run(cfg[c][0], cfg[c][1], SG_ON_ERROR_NULL, 0);
        CHECK(r.rc == 0 && r.rows == NIN && r.in_order && r.nulls == 3 && r.embedded == NIN - 3 && r.failed == 3,
              "-j %d -b %d --on-error null: %d rows in input order, each its own input's vector, 3 nulls (%s)",
              cfg[c][0], cfg[c][1], r.rows, r.err);
        CHECK(r.max_inflight <= SG_BACKEND_MAX_INFLIGHT, "-j %d -b %d: at most %d batches in flight (saw %d)",
              cfg[c][0], cfg[c][1], SG_BACKEND_MAX_INFLIGHT, r.max_inflight);
        if (cfg[c][1] < NIN / 4)
            CHECK(r.max_inflight == SG_BACKEND_MAX_INFLIGHT, "-j %d -b %d: two batches in flight at times",
                  cfg[c][0], cfg[c][1]);
    }
    run_result r = run(5, 4, SG_ON_ERROR_SKIP, 0);
    CHECK(r.rc == 0 && r.rows == NIN - 3 && r.in_order && r.nulls == 0, "--on-error skip: %d rows, gaps only", r.rows);
    r = run(5, 4, SG_ON_ERROR_FAIL, 0);
    CHECK(r.rc == 0 && r.rows == 17 && r.in_order && r.failed == 1,
          "--on-error fail: stops at input 17 with exactly the 17 rows before it (%d)", r.rows);
    r = run(6, 4, SG_ON_ERROR_NULL, 10);
    CHECK(r.rc == -1 && strstr(r.err, "mock device lost at batch 10") && r.in_order && r.rows >= 4 * 8 &&
              r.rows <= 4 * 9,
          "backend failure at batch 10: reported (%s), output is an exact prefix of %d rows", r.err, r.rows);
    return CHECK_DONE();
}
