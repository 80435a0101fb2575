#!/usr/bin/env bash
# tests/test_backend_stress.sh — tests/tools/sg_backend_stress on the CPU backend with the tiny fixture: mixed
# batch sizes back to back, two in flight, every row equal to its batch-1 reference. (The GPU run of the same
# tool, 10,000 launches of the megakernel, is in scripts/gpu-check.sh.) Also shows that the check fails when a
# single value of a row is off by 1e-3 (SG_STRESS_CORRUPT). And tests/tools/sg_batch_invariance, the bit-identity
# check gpu-check.sh runs on the megakernels, on the CPU backend (which is batch-invariant too), with its own
# negative control (SG_INVARIANCE_CORRUPT: one value moved by one ulp).
source "$(dirname "$0")/lib.sh"
TOOL=$SG_BUILD/tools/sg_backend_stress
INV=$SG_BUILD/tools/sg_batch_invariance
FIX=$SG_ROOT/tests/fixtures/tiny196
if [ ! -x "$TOOL" ] || [ ! -x "$INV" ]; then fail "sg_backend_stress or sg_batch_invariance not built"; done_testing; fi
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
out=$("$INV" "$FIX" cpu 1,2,3,17 5 2>&1)
if [ $? -eq 0 ] && [ "$(echo "$out" | grep -c '^PASS: backend cpu, batch')" -eq 4 ]; then
    pass "cpu: every row of batches 1, 2, 3, 17 bit-identical to its image's batch-1 row (sg_batch_invariance)"
else
    fail "batch invariance on cpu: $out"
fi
out=$(SG_INVARIANCE_CORRUPT=1 "$INV" "$FIX" cpu 1,2 5 2>&1)
if [ $? -eq 1 ] && echo "$out" | grep -q '^FAIL: backend cpu, batch 1: 0 of 1 rows bit-identical'; then
    pass "one value moved by one ulp is caught (SG_INVARIANCE_CORRUPT)"
else
    fail "a one-ulp change was not reported: $out"
fi
done_testing
