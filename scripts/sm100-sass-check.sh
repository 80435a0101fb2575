#!/usr/bin/env bash
# scripts/sm100-sass-check.sh — offline checks of the Blackwell (sm_100a) kernels, no B200 needed: the product's
# in kernel/sm100/ and the lab's in kernel/lab/sm100_*.cu.
#
#   scripts/sm100-sass-check.sh [FILE.cu ...]        (default: every kernel/sm100/*.cu and kernel/lab/sm100_*.cu)
#
# 1. ptxas (always; any machine with nvcc): compiles each file for sm_100a with the project's warning flags and
#    -Xptxas -v; fails on a warning, on spill stores/loads or on a stack frame (local memory) in any kernel, and
#    prints the registers of every kernel.
# 2. SASS (where cuobjdump is found, by the rule in scripts/lib-sass.sh: $CUOBJDUMP, PATH, $CUDA_HOME/bin, then
#    .deps/cuda-tools/bin, where `make deps` puts NVIDIA's 13.2 wheels' cuobjdump + nvdisasm): disassembles the cubin,
#    splits it per kernel and counts UTCHMMA (tcgen05.mma kind::f16), UTCQMMA (kind::f8f6f4 / mxf8f6f4 block
#    scaled), UTCCP (tcgen05.cp, scales to TMEM), UTCBAR (tcgen05.commit), LDTM (tcgen05.ld), UTMALDG (TMA
#    tensor load), UTMASTG / UTMAREDG (TMA store / reduce-add), HMMA (mma.sync), UBLKCP (cp.async.bulk: the
#    expected name, counted only), UTCATOMSWS (tcgen05.alloc /
#    dealloc) and LDL/STL (local memory). Each kernel named in RULES must contain its opcodes; no kernel may
#    contain LDL or STL. Host-only files are compiled but not disassembled. Without cuobjdump it prints
#    "SKIP: ..." and that step does not fail.
# Exit status: 0 all checks that could run passed, 1 a check failed, 2 usage/tool error.
# Mnemonics: ../shared/docs/kernel-notes.md §5 (seen with cuobjdump 13.0 on probe kernels).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
# shellcheck source=scripts/lib-sass.sh
. "$ROOT/scripts/lib-sass.sh"
sg_find_cuobjdump   # sets CUOBJDUMP ("" when none) and NVDISASM_PATH
COUNTED=(UTCHMMA UTCQMMA UTCCP UTCBAR LDTM UTMALDG UTMASTG UTMAREDG HMMA UBLKCP UTCATOMSWS LDL STL)
# "substring of the mangled kernel name: opcodes that must appear in its SASS"
RULES=(
    "sg_sm100_mxf8_tile_kernel:UTCQMMA UTCCP UTCBAR LDTM UTMALDG"
    "sg_sm100_gemm_kernelILi0E:UTCHMMA UTCBAR LDTM UTMALDG UTCATOMSWS"
    "sg_sm100_gemm_kernelILi1E:UTCQMMA UTCCP UTCBAR LDTM UTMALDG UTCATOMSWS"
    # the megakernel, both instantiations: tcgen05 GEMM tiles (bf16 and block-scaled MXFP8 with its scale copies),
    # TMA loads / stores / reduce-adds, mma.sync attention
    "sg_sm100_mega_kernel:UTCHMMA UTCQMMA UTCCP UTCBAR LDTM UTMALDG UTMASTG UTMAREDG HMMA UTCATOMSWS"
)
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$NVCC" ]; then echo "sm100-sass-check: nvcc not found (set NVCC)" >&2; exit 2; fi
cd "$ROOT"
if [ $# -gt 0 ]; then FILES=("$@"); else FILES=(kernel/sm100/*.cu kernel/lab/sm100_*.cu); fi

fail=0
seen_rules=()
for f in "${FILES[@]}"; do
    base="$(basename "$f" .cu)"
    cubin="$TMP/$base.cubin"
    if ! "$NVCC" -std=c++17 -O3 -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr \
            -gencode arch=compute_100a,code=sm_100a -cubin -o "$cubin" "$f" -Xptxas -v >"$TMP/$base.ptxas" 2>&1; then
        echo "FAIL: $f: nvcc/ptxas for sm_100a failed:"; sed 's/^/    /' "$TMP/$base.ptxas"; fail=1; continue
    fi
    # "kernel regs" per entry function, from ptxas -v ("Compiling entry function 'X'" ... "Used N registers").
    regs="$(awk '/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
                 /Used [0-9]+ registers/ && k != "" { match($0, /Used [0-9]+/); printf "%s %s regs; ", k, substr($0, RSTART + 5, RLENGTH - 5); k = "" }' \
            "$TMP/$base.ptxas")"
    if grep -Eq '[1-9][0-9]* bytes (spill stores|spill loads|stack frame)' "$TMP/$base.ptxas"; then
        echo "FAIL: $f: ptxas reports spills or a stack frame:"; grep -E 'spill|stack' "$TMP/$base.ptxas" | sed 's/^/    /'
        fail=1
    else
        echo "PASS: $f: sm_100a compile with no warnings, no spills, no stack frame"
    fi
    [ -n "$regs" ] && echo "INFO: $f: ${regs%; }"
    grep -q '__global__' "$f" || continue  # host-side file: nothing to disassemble
    if [ -z "$CUOBJDUMP" ]; then
        echo "SKIP: $f: SASS opcode counts: cuobjdump not found (make deps fetches it into .deps/cuda-tools; or set CUOBJDUMP)"
        continue
    fi
    if ! "$CUOBJDUMP" -sass "$cubin" >"$TMP/$base.sass" 2>&1; then
        echo "FAIL: $f: cuobjdump -sass failed:"; sed 's/^/    /' "$TMP/$base.sass"; fail=1; continue
    fi
    # One file per kernel: the SASS listing starts each with "Function : <mangled name>".
    rm -f "$TMP/$base".fn.*
    awk -v out="$TMP/$base.fn" '/Function : / { n++; name = $NF; print name > (out "." n ".name") }
                                 n > 0 { print > (out "." n ".sass") }' "$TMP/$base.sass"
    for nf in "$TMP/$base".fn.*.name; do
        [ -e "$nf" ] || continue
        name="$(cat "$nf")"; sass="${nf%.name}.sass"
        line=""
        for op in "${COUNTED[@]}"; do
            n="$(grep -Ec "[[:space:]]$op([.[:space:]]|$)" "$sass")"
            line="$line $op=$n"
            case "$op" in
                LDL|STL) if [ "$n" -ne 0 ]; then echo "FAIL: $f: $name: $n $op (local memory) in the SASS"; fail=1; fi ;;
            esac
        done
        echo "INFO: $f: $name:$line"
        for rule in "${RULES[@]}"; do
            pat="${rule%%:*}"; ops="${rule#*:}"
            case "$name" in *"$pat"*) ;; *) continue ;; esac
            seen_rules+=("$pat")
            missing=""
            for op in $ops; do
                grep -Eq "[[:space:]]$op([.[:space:]]|$)" "$sass" || missing="$missing $op"
            done
            if [ -n "$missing" ]; then
                echo "FAIL: $f: $pat: missing in the SASS:$missing"; fail=1
            elif grep -Eq "[[:space:]](LDL|STL)([.[:space:]]|$)" "$sass"; then
                echo "FAIL: $f: $pat: has $ops but also local memory (LDL/STL)"; fail=1
            else
                echo "PASS: $f: $pat: SASS has $ops; no LDL/STL"
            fi
        done
    done
    "$CUOBJDUMP" --dump-resource-usage "$cubin" 2>/dev/null | grep -i 'REG\|STACK\|LOCAL' | sed 's/^/INFO:    /'
done
# Every rule must have matched a kernel when the default file set was checked (a renamed kernel must not
# silently drop its check).
if [ -n "$CUOBJDUMP" ] && [ $# -eq 0 ]; then
    for rule in "${RULES[@]}"; do
        pat="${rule%%:*}"; found=0
        for s in "${seen_rules[@]+"${seen_rules[@]}"}"; do [ "$s" = "$pat" ] && found=1; done
        if [ "$found" -eq 0 ]; then echo "FAIL: no kernel matches the SASS rule '$pat'"; fail=1; fi
    done
fi
exit $fail
