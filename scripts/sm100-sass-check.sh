#!/usr/bin/env bash
# scripts/sm100-sass-check.sh — offline checks of the Blackwell (sm_100a) kernels in kernel/sm100/, no B200 needed.
#
#   scripts/sm100-sass-check.sh [FILE.cu ...]        (default: every kernel/sm100/*.cu that issues tcgen05.mma)
#
# 1. ptxas (always; any machine with nvcc): compiles each file for sm_100a with the project's warning flags and
#    -Xptxas -v; fails on a warning, on spill stores/loads or on a stack frame (local memory).
# 2. SASS (where cuobjdump exists: the GPU machine; the CPU build machines have none): disassembles the cubin and
#    counts, per file, UTCQMMA (block-scaled / fp8 MMA), UTCCP (scale-factor copy to TMEM), UTCBAR (tcgen05.commit),
#    LDTM (tcgen05.ld), UTMALDG (TMA tensor load) and LDL/STL (local memory). Fails if any expected opcode is
#    missing or any LDL/STL appears. Without cuobjdump it prints "SKIP: ..." and that step does not fail.
# Exit status: 0 all checks that could run passed, 1 a check failed, 2 usage/tool error.
# Mnemonics: ../shared/docs/kernel-notes.md §5 (seen with cuobjdump 13.0 on probe kernels).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
CUOBJDUMP="${CUOBJDUMP:-$(command -v cuobjdump || { [ -x /usr/local/cuda/bin/cuobjdump ] && echo /usr/local/cuda/bin/cuobjdump; } || true)}"
EXPECT=(UTCQMMA UTCCP UTCBAR LDTM UTMALDG)
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$NVCC" ]; then echo "sm100-sass-check: nvcc not found (set NVCC)" >&2; exit 2; fi
cd "$ROOT"
if [ $# -gt 0 ]; then FILES=("$@"); else
    FILES=()
    for f in kernel/sm100/*.cu; do grep -q 'tcgen05.mma' "$f" && FILES+=("$f"); done
fi
if [ ${#FILES[@]} -eq 0 ]; then echo "sm100-sass-check: no kernel/sm100/*.cu issues tcgen05.mma" >&2; exit 2; fi

fail=0
for f in "${FILES[@]}"; do
    base="$(basename "$f" .cu)"
    cubin="$TMP/$base.cubin"
    if ! "$NVCC" -std=c++17 -O3 -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings \
            -gencode arch=compute_100a,code=sm_100a -cubin -o "$cubin" "$f" -Xptxas -v >"$TMP/$base.ptxas" 2>&1; then
        echo "FAIL: $f: nvcc/ptxas for sm_100a failed:"; sed 's/^/    /' "$TMP/$base.ptxas"; fail=1; continue
    fi
    regs="$(grep -o 'Used [0-9]* registers' "$TMP/$base.ptxas" | tr '\n' ' ')"
    if grep -Eq '[1-9][0-9]* bytes (spill stores|spill loads|stack frame)' "$TMP/$base.ptxas"; then
        echo "FAIL: $f: ptxas reports spills or a stack frame:"; grep -E 'spill|stack' "$TMP/$base.ptxas" | sed 's/^/    /'
        fail=1
    else
        echo "PASS: $f: sm_100a compile with no warnings, no spills, no stack frame (${regs% })"
    fi
    if [ -z "$CUOBJDUMP" ]; then
        echo "SKIP: $f: SASS opcode counts: cuobjdump not found here (run this script on the GPU machine)"
        continue
    fi
    if ! "$CUOBJDUMP" -sass "$cubin" >"$TMP/$base.sass" 2>&1; then
        echo "FAIL: $f: cuobjdump -sass failed:"; sed 's/^/    /' "$TMP/$base.sass"; fail=1; continue
    fi
    line=""
    for op in "${EXPECT[@]}" LDL STL; do
        n="$(grep -Ec "[[:space:]]$op([.[:space:]]|$)" "$TMP/$base.sass")"
        line="$line $op=$n"
        case "$op" in
            LDL|STL) if [ "$n" -ne 0 ]; then echo "FAIL: $f: $n $op (local memory) in the SASS"; fail=1; fi ;;
            *) if [ "$n" -eq 0 ]; then echo "FAIL: $f: no $op in the SASS"; fail=1; fi ;;
        esac
    done
    echo "INFO: $f: SASS counts:$line"
    "$CUOBJDUMP" --dump-resource-usage "$cubin" 2>/dev/null | grep -i 'REG\|STACK\|LOCAL' | sed 's/^/INFO:    /'
done
exit $fail
