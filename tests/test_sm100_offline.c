/* tests/test_sm100_offline.c — runs scripts/sm100-sass-check.sh so the offline checks of the Blackwell kernels
 * (sm_100a compile with no warnings, no spills, no stack frame; SASS opcodes where cuobjdump exists) are part of
 * `make test`. The script's PASS/FAIL/SKIP lines are passed through (and its INFO lines: registers, SASS opcode
 * counts); its exit status is checked here. Without nvcc the whole check is a SKIP.
 *
 * cuobjdump is looked up here by the same rule as the script (scripts/lib-sass.sh: $CUOBJDUMP, PATH,
 * $CUDA_HOME/bin, .deps/cuda-tools/bin, where `make deps` fetches one). When one is found, the SASS step must have
 * run: a SKIP line from the script, or no "SASS has" rule passing, is then a failure, so a broken lookup cannot
 * quietly turn the SASS rules back into SKIPs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

/* The cuobjdump scripts/lib-sass.sh finds, in out ("" when none). */
static void find_cuobjdump(const char *root, char *out, size_t cap) {
    char cmd[2048];
    out[0] = 0;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && bash -c '. scripts/lib-sass.sh && sg_find_cuobjdump && printf %%s \"$CUOBJDUMP\"' 2>/dev/null",
             root);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)cap, p)) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    pclose(p);
}

int main(void) {
    const char *root = getenv("SG_ROOT");
    if (!root) root = ".";
    if (system("command -v nvcc >/dev/null 2>&1 || test -x /usr/local/cuda/bin/nvcc") != 0) {
        SKIP("sm100 offline checks: nvcc not found");
        return CHECK_DONE();
    }
    char tool[1024];
    find_cuobjdump(root, tool, sizeof tool);
    printf("INFO: cuobjdump: %s\n", tool[0] ? tool : "none found (the SASS step SKIPs)");

    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && nice scripts/sm100-sass-check.sh 2>&1", root);
    FILE *p = popen(cmd, "r");
    if (!p) {
        CHECK(0, "sm100 offline checks: cannot start scripts/sm100-sass-check.sh");
        return CHECK_DONE();
    }
    char line[4096];
    int skips = 0, sass_rules_passed = 0;
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout); /* PASS / FAIL / SKIP lines of the script are counted by tests/run.sh */
        if (!strncmp(line, "SKIP:", 5)) skips++;
        if (!strncmp(line, "PASS:", 5) && strstr(line, ": SASS has ")) sass_rules_passed++;
    }
    int st = pclose(p);
    int rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    CHECK(rc == 0, "scripts/sm100-sass-check.sh exits 0 (got %d)", rc);
    if (tool[0]) {
        CHECK(skips == 0, "with cuobjdump found (%s), the script skipped nothing (%d SKIP lines)", tool, skips);
        CHECK(sass_rules_passed > 0, "with cuobjdump found, SASS rules were checked (%d passed)", sass_rules_passed);
    }
    return CHECK_DONE();
}
