#!/usr/bin/env bash
# scripts/sm90-sass-check.sh — registers, spills and the instructions that matter in the Hopper megakernel's SASS
# (needs cuobjdump: the GPU machine has it). Run after a build (build/kernel/sm90/sm90_mega.cu.o).
#   scripts/sm90-sass-check.sh [OBJ]
set -u
cd "$(dirname "$0")/.."
OBJ=${1:-build/kernel/sm90/sm90_mega.cu.o}
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
[ -f "$OBJ" ] || { echo "FAIL: $OBJ not built"; exit 1; }
"$CUOBJDUMP" --dump-resource-usage "$OBJ" 2>&1 | grep -A1 "sg_sm90_mega_kernel" | sed 's/^/  /'
fail=0
for f in $("$CUOBJDUMP" -sass "$OBJ" | grep -o 'Function : [^ ]*sg_sm90_mega_kernel[^ ]*' | awk '{print $3}' | sort -u); do
    sass=$("$CUOBJDUMP" -sass -fun "$f" "$OBJ")
    line="$f:"
    for op in HGMMA UTMALDG UTMASTG UTMAREDG SYNCS WARPSYNC LDL STL; do
        line="$line $op=$(echo "$sass" | grep -c "$op")"
    done
    echo "  $line"
    echo "$sass" | grep -qE '\b(LDL|STL)\b' && { echo "FAIL: local memory in $f"; fail=1; }
    echo "$sass" | grep -q HGMMA || { echo "FAIL: no HGMMA in $f"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: sm90 megakernel SASS: HGMMA present, no local-memory loads/stores"
exit $fail
