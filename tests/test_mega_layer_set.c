/* tests/test_mega_layer_set.c — the layer sets of the megakernels' per-layer knobs (kernel/mega/mega_layer_set.c,
 * SG_FP8_FC2_LAYERS): what parses to which layers, and that every malformed set is refused with a reason instead of
 * silently meaning something else.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "kernel/mega/mega_layer_set.h"

static void good(const char *s, int L, unsigned want) {
    char err[256] = "";
    unsigned m = 0xdeadbeefu;
    const int rc = sg_mega_layer_set_parse(s, L, &m, err, sizeof err);
    CHECK(rc == 0 && m == want, "'%s' for %d layers is 0x%x (got rc %d, 0x%x %s)", s, L, want, rc, m, err);
}

static void bad(const char *s, int L) {
    char err[256] = "";
    unsigned m = 0x1234u;
    const int rc = sg_mega_layer_set_parse(s, L, &m, err, sizeof err);
    CHECK(rc != 0 && m == 0x1234u && err[0], "'%s' for %d layers is refused, the mask untouched (%s)", s, L, err);
}

int main(void) {
    good("none", 12, 0);
    good("all", 12, 0xfff);
    good("all", 32, 0xffffffffu);
    good("2-11", 12, 0xffc);
    good("1-11", 12, 0xffe);
    good("0,3-5,8", 12, 0x139);
    good("11", 12, 0x800);
    good("0", 1, 1);
    good("5,5,4-5", 12, 0x30);
    bad("", 12);
    bad("12", 12);
    bad("2-12", 12);
    bad("5-3", 12);
    bad("1,", 12);
    bad(",1", 12);
    bad("1,,2", 12);
    bad("1 ,2", 12);
    bad(" 1", 12);
    bad("-1", 12);
    bad("1-", 12);
    bad("x", 12);
    bad("All", 12);
    bad("0x3", 12);
    bad("1-2-3", 12);
    bad("1000000", 12);
    bad("1", 0);
    bad("1", 33);
    return CHECK_DONE();
}
