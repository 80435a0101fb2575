#!/usr/bin/env bash
# tests/run.sh BUILD_DIR BIN — runs every test of the project and ends with "N passed, N failed, N skipped".
#
# A test is any of: a program $BUILD_DIR/tests/test_* (built from tests/test_*.c), a script tests/test_*.sh,
# or a script tests/test_*.py (run with $SG_PYTHON: the Debian python3 that `make deps` equips with numpy
# and faiss). Each prints one line per check: "PASS: what", "FAIL: what: why" or "SKIP: what: why"
# (tests/check.h, tests/lib.sh and tests/sgtest.py print these). A test that exits non-zero or prints
# nothing counts as one more failure, so a crash can never pass. Set SG_TEST_FILTER to a substring to run
# only matching tests.
set -u
BUILD=${1:-build}
BIN=${2:-./siglip2-embed}
cd "$(dirname "$0")/.."
export SG_ROOT=$PWD SG_BUILD=$PWD/$BUILD SG_BIN=$(realpath "$BIN")
export SG_PYTHON=${SG_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
export SG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sgtest.XXXXXX")
trap 'rm -rf "$SG_TMP"' EXIT
# Sanitizer builds: fail on the first report, and tell LeakSanitizer to stay quiet about OpenMP's pools.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

pass=0 fail=0 skip=0
run_one() {   # name, command...
    local name=$1; shift
    [ -n "${SG_TEST_FILTER:-}" ] && [[ "$name" != *"$SG_TEST_FILTER"* ]] && return
    local log="$SG_TMP/$(basename "$name").log" t0=$SECONDS
    timeout "${SG_TEST_TIMEOUT:-1200}" "$@" >"$log" 2>&1
    local rc=$?
    local p f s
    p=$(grep -c '^PASS: ' "$log"); f=$(grep -c '^FAIL: ' "$log"); s=$(grep -c '^SKIP: ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL: $name exited with status $rc" >>"$log"; f=$((f + 1))
    fi
    if [ $((p + f + s)) -eq 0 ]; then
        echo "FAIL: $name printed no result" >>"$log"; f=1
    fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    printf '%-40s %4d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - t0))
    grep -E '^(FAIL|SKIP): ' "$log" | sed 's/^/    /' | head -40
    if [ "$f" -gt 0 ]; then echo "    --- end of $log:"; tail -15 "$log" | sed 's/^/    | /'; fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && [ -f "$t" ] && [[ "$t" != *.o ]] && [[ "$t" != *.d ]] && run_one "$(basename "$t")" "$t"
done
for t in tests/test_*.sh; do [ -f "$t" ] && run_one "$(basename "$t")" bash "$t"; done
for t in tests/test_*.py; do [ -f "$t" ] && run_one "$(basename "$t")" "$SG_PYTHON" "$t"; done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
