#!/usr/bin/env bash
# tests/test_backend_stress.sh — tests/tools/sg_backend_stress on the CPU backend with the tiny fixture: mixed
# batch sizes back to back, two in flight, every row equal to its batch-1 reference. (The GPU run of the same
# tool, 10,000 launches of the megakernel, is in scripts/gpu-check.sh.) Also shows that the check fails when a
# single value of a row is off by 1e-3 (SG_STRESS_CORRUPT).
source "$(dirname "$0")/lib.sh"
TOOL=$SG_BUILD/tools/sg_backend_stress
FIX=$SG_ROOT/tests/fixtures/tiny196
if [ ! -x "$TOOL" ]; then fail "sg_backend_stress not built"; done_testing; fi
out=$("$TOOL" "$FIX" cpu 40 7 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q '^PASS: backend cpu, seed 7: 40 launches'; then
    pass "40 mixed batches on cpu, every row equal to its batch-1 reference: ${out#PASS: }"
else
    fail "stress on cpu: $out"
fi
out=$(SG_STRESS_CORRUPT=1 "$TOOL" "$FIX" cpu 5 7 2>&1)
if [ $? -eq 1 ] && echo "$out" | grep -q '^FAIL: backend cpu.* 1 rows differing'; then
    pass "one value off by 1e-3 in one row is caught (SG_STRESS_CORRUPT)"
else
    fail "a corrupted row was not reported: $out"
fi
done_testing
