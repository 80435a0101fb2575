#!/usr/bin/env bash
# tests/test_sass_offline.sh — the Hopper megakernel's SASS rules as part of `make test`, no GPU needed.
#
# Runs scripts/sm90-sass-check.sh (registers <= 168, no stack / local memory / LDL / STL, UTMALDG + UTMASTG +
# UTMAREDG, HGMMA in the GEMM K loop, QGMMA in the FP8-FC1 instantiations' FC1 loops, the attention's HGMMA
# shapes) on the build's sm90_mega.cu.o and passes its
# PASS/FAIL/INFO lines through. Then shows that the rules can fail: pointed at a portable-path kernel object (sm_80,
# sm_90 and sm_100 code built with mma.sync, no wgmma and no TMA), the script must exit 1 and report the missing
# HGMMA; a run that passed there would mean the rules check nothing.
# Last, scripts/ncu_regions.py (the profile's attribution of samples to roles and phases) on a synthetic source-counter
# table of this build's own SASS, one sample per instruction: its phase anchors must still be in the source and every
# role found; with one opcode changed it must refuse the table (not the profiled build).
# cuobjdump is found by scripts/lib-sass.sh (the same rule as the scripts; `make deps` fetches one into .deps/).
# SKIP when the megakernel object was not built (no nvcc) or no cuobjdump is found.
source "$(dirname "$0")/lib.sh"
cd "$SG_ROOT" || exit 1
# shellcheck source=scripts/lib-sass.sh
. scripts/lib-sass.sh

OBJ=$SG_BUILD/kernel/sm90/sm90_mega.cu.o
if [ ! -f "$OBJ" ]; then
    skip "sm90 megakernel SASS rules: $OBJ not built (no nvcc: CPU-only build)"; done_testing
fi
sg_find_cuobjdump
if [ -z "$CUOBJDUMP" ]; then
    skip "sm90 megakernel SASS rules: cuobjdump not found (make deps fetches it into .deps/cuda-tools)"; done_testing
fi

# 1. The megakernel keeps its rules.
out=$(bash scripts/sm90-sass-check.sh "$OBJ" 2>&1); rc=$?
printf '%s\n' "$out"
if grep -q '^SKIP: ' <<<"$out"; then
    fail "sm90-sass-check.sh skipped although $CUOBJDUMP was found (lookup rules disagree)"
fi
check "scripts/sm90-sass-check.sh exits 0 on $OBJ (got $rc)" test "$rc" -eq 0
check "sm90-sass-check.sh checked the megakernel (summary PASS line)" \
    grep -q '^PASS: sm90 SASS rules hold for all [1-9]' <<<"$out"
check "sm90-sass-check.sh checked the FP8-FC1 instantiations' QGMMA K loops" \
    grep -q '^PASS: .*ELb1EEv.* QGMMA.64x256x32, all inside a GEMM K loop' <<<"$out"

# 2. The rules fail where there is no wgmma: the first portable-path object that holds a kernel.
neg_obj="" neg_fn=""
for o in "$SG_BUILD"/kernel/cuda/*.cu.o; do
    [ -f "$o" ] || continue
    neg_fn=$("$CUOBJDUMP" -sass "$o" 2>/dev/null | awk '/Function : / { print $NF; exit }')
    if [ -n "$neg_fn" ]; then neg_obj=$o; break; fi
done
if [ -z "$neg_obj" ]; then
    fail "no portable kernel object with a kernel in $SG_BUILD/kernel/cuda to show the rules failing"
else
    neg=$(bash scripts/sm90-sass-check.sh "$neg_obj" "$neg_fn" 2>&1); nrc=$?
    nfail=$(grep -c '^FAIL: ' <<<"$neg")
    if [ "$nrc" -eq 1 ] && grep -Eq '^FAIL: sm_90 .*no HGMMA\.[0-9x]+ ' <<<"$neg"; then
        pass "sm90-sass-check.sh fails on $(basename "$neg_obj") ($neg_fn, no wgmma): exit 1, $nfail rule failures"
    else
        fail "sm90-sass-check.sh on $(basename "$neg_obj") ($neg_fn, no wgmma): expected exit 1 and 'no HGMMA'," \
             "got exit $nrc"
        sed 's/^/    | /' <<<"$neg" | head -20   # indented: not counted by tests/run.sh
    fi
fi

# 3. The profile's region attribution still reads this build.
KERNEL=_Z19sg_sm90_mega_kernelILb0ELb0EEv14sg_mega_params
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/table.py" <<'PY'
# cuobjdump -sass of one function on stdin -> a source-counter table (Address, Source, samples, a stall reason), one
# sample per instruction; with an argument, instruction 100 is replaced by a NOP (a table of another build)
import re, sys
out = ['"Address",Source,Warp Stall Sampling (All Samples),stall_selected']
for l in sys.stdin:
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", l)
    if m:
        text = "NOP" if len(sys.argv) > 1 and len(out) == 100 else m.group(2).replace(",", " ")
        out.append("0x%x,%s,1,1" % (0x7f0000000000 + int(m.group(1), 16), text))
print("\n".join(out))
PY
"$CUOBJDUMP" -sass -fun "$KERNEL" "$OBJ" 2>/dev/null | python3 "$T/table.py" >"$T/ok.csv"
"$CUOBJDUMP" -sass -fun "$KERNEL" "$OBJ" 2>/dev/null | python3 "$T/table.py" altered >"$T/bad.csv"
reg=$(python3 scripts/ncu_regions.py "$T/ok.csv" "$OBJ" "$KERNEL" 2>&1); rrc=$?
check "scripts/ncu_regions.py reads this build (exit $rrc, 0 opcode mismatches)" \
    grep -q ' 0 opcode mismatches' <<<"$reg"
for r in producer storer side cons:gemm:kloop cons:gemm:epilogue cons:att:softmax cons:att:PV cons:loop; do
    check "ncu_regions.py finds region $r in the megakernel's code" grep -q "^$r " <<<"$reg"
done
if [ -s "$T/bad.csv" ]; then
    python3 scripts/ncu_regions.py "$T/bad.csv" "$OBJ" "$KERNEL" >"$T/bad.out" 2>&1; brc=$?
    check "ncu_regions.py refuses a table whose SASS differs from the build (exit $brc)" test "$brc" -ne 0
else
    fail "could not write the altered table for ncu_regions.py's negative check"
fi
done_testing
