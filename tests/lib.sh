# tests/lib.sh — sourced by the shell tests: pass/fail/skip lines for tests/run.sh, and the paths it exports
# (SG_ROOT, SG_BIN, SG_BUILD, SG_PYTHON, SG_TMP).
: "${SG_ROOT:?run through tests/run.sh}"
sg_failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; sg_failures=$((sg_failures + 1)); }
skip() { echo "SKIP: $*"; }
# check "what" command... — PASS if the command succeeds.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
done_testing() { exit $((sg_failures > 0)); }
