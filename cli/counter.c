/* cli/counter.c — the counting thread behind the progress line's total (see counter.h). */
#include "counter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "buf.h"
#include "inputs.h"
#include "shard.h"

struct sg_cli_counter {
    pthread_t thread;
    char **paths, **lists;
    int npaths, nlists, nul_sep, all_files, shard_k, shard_n, complete;
    const sg_cli_pathset *done;
    uint64_t count;  /* atomic: inputs counted */
    int finished;    /* atomic: 1 = count final; 2 = final and covering every input */
    int stop;        /* atomic: the run is over */
};

static void *count_main(void *arg) {
    sg_cli_counter *c = arg;
    char err[512];
    sg_cli_inputs *it = sg_cli_inputs_open(c->paths, c->npaths, c->lists, c->nlists, c->nul_sep, c->all_files,
                                           err, sizeof err);
    int ok = it != NULL;
    sg_cli_input in;
    int r = 0;
    /* the occurrences of each --resume path this count has skipped, as the pipeline's own takes (read-only set) */
    uint64_t *taken = c->done && c->done->count ? sg_cli_xcalloc(c->done->cap, sizeof *taken) : NULL;
    while (it && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) && (r = sg_cli_inputs_next(it, &in, err, sizeof err)) == 1) {
        if (sg_cli_shard_keep(in.path, c->shard_k, c->shard_n) && !(taken && sg_cli_pathset_take_own(c->done, taken, in.path)))
            __atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED);
        free(in.path);
        free(in.error);
    }
    ok = ok && r == 0 && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
    sg_cli_inputs_close(it);
    free(taken);
    __atomic_store_n(&c->finished, ok && c->complete ? 2 : 1, __ATOMIC_RELEASE);
    return NULL;
}

sg_cli_counter *sg_cli_counter_start(char **paths, int npaths, char **lists, int nlists, int nul_sep,
                                     int all_files, int shard_k, int shard_n, const sg_cli_pathset *done) {
    sg_cli_counter *c = sg_cli_xcalloc(1, sizeof *c);
    c->paths = paths;
    c->npaths = npaths;
    c->nul_sep = nul_sep;
    c->all_files = all_files;
    c->shard_k = shard_k;
    c->shard_n = shard_n;
    c->done = done;
    c->complete = 1;
    /* Only lists that are regular files can be read a second time; stdin, pipes and FIFOs belong to the run. */
    c->lists = sg_cli_xcalloc((size_t)(nlists > 0 ? nlists : 1), sizeof *c->lists);
    for (int i = 0; i < nlists; i++) {
        struct stat st;
        if (strcmp(lists[i], "-") != 0 && stat(lists[i], &st) == 0 && S_ISREG(st.st_mode)) c->lists[c->nlists++] = lists[i];
        else c->complete = 0;
    }
    /* The image on stdin ("-") counts as one input; the enumerator yields it without reading stdin. */
    if (pthread_create(&c->thread, NULL, count_main, c) != 0) {
        free(c->lists);
        free(c);
        return NULL;
    }
    return c;
}

uint64_t sg_cli_counter_get(const sg_cli_counter *c, int *exact) {
    *exact = __atomic_load_n(&c->finished, __ATOMIC_ACQUIRE) == 2;
    return __atomic_load_n(&c->count, __ATOMIC_RELAXED);
}

void sg_cli_counter_stop(sg_cli_counter *c) {
    if (!c) return;
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    pthread_join(c->thread, NULL);
    free(c->lists);
    free(c);
}
