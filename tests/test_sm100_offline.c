/* tests/test_sm100_offline.c — runs scripts/sm100-sass-check.sh so the offline checks of the Blackwell kernels
 * (sm_100a compile with no warnings, no spills, no stack frame; SASS opcodes where cuobjdump exists) are part of
 * `make test`. The script's PASS/FAIL/SKIP lines are passed through; its exit status is checked here. Without
 * nvcc the whole check is a SKIP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

int main(void) {
    const char *root = getenv("SG_ROOT");
    if (!root) root = ".";
    if (system("command -v nvcc >/dev/null 2>&1 || test -x /usr/local/cuda/bin/nvcc") != 0) {
        SKIP("sm100 offline checks: nvcc not found");
        return CHECK_DONE();
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && nice scripts/sm100-sass-check.sh 2>&1", root);
    FILE *p = popen(cmd, "r");
    if (!p) {
        CHECK(0, "sm100 offline checks: cannot start scripts/sm100-sass-check.sh");
        return CHECK_DONE();
    }
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        if (!strncmp(line, "INFO:", 5)) continue;
        fputs(line, stdout); /* PASS / FAIL / SKIP lines of the script, counted by tests/run.sh */
    }
    int st = pclose(p);
    int rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    CHECK(rc == 0, "scripts/sm100-sass-check.sh exits 0 (got %d)", rc);
    return CHECK_DONE();
}
