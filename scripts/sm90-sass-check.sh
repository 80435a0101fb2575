#!/usr/bin/env bash
# scripts/sm90-sass-check.sh — the rules the Hopper megakernel's machine code must keep: registers, no local memory,
# the TMA instructions, and wgmma (HGMMA) where the GEMM and the attention need it. No GPU needed, only cuobjdump
# (found by scripts/lib-sass.sh; `make deps` fetches one where the CUDA toolkit has none). `make test` runs it
# through tests/test_sass_offline.sh on the build's object.
#
#   scripts/sm90-sass-check.sh [OBJ [KERNEL]]
#       OBJ     default build/kernel/sm90/sm90_mega.cu.o (run after a build)
#       KERNEL  substring of the mangled kernel names to check, default sg_sm90_mega_kernel (both template
#               instances); another object and kernel are accepted so the rules can be shown to fail
#
# For every function in OBJ whose name contains KERNEL (at least one must), per architecture in the object:
#   registers   --dump-resource-usage: REG <= MAX_REGS (384 threads x 168 = 1 CTA per SM, docs/megakernel.md §5),
#               STACK 0 and LOCAL 0
#   local mem   no LDL / STL in the SASS (a spill)
#   TMA         UTMALDG (tensor load), UTMASTG (tensor store) and UTMAREDG (reduce-add of the residual) present
#   GEMM loop   HGMMA of each GEMM K loop shape in GEMM_HGMMA (wide tasks' 64x256, narrow tasks' 64x128; the FP8
#               instantiations, which have no narrow launches, GEMM_HGMMA_FP8) present, and every one of them inside
#               a loop of its own: the innermost backward branch around it encloses no wgmma of another shape; in the
#               FP8 instantiations (mangled names ending ELb1EEv: template argument F8 = true) the same for the QGMMA
#               (E4M3 wgmma) of FC1's and FC2's wide shape in FP8_QGMMA, and QGMMA of the shapes in FP8_QGMMA_FLAT
#               present (narrow64 tasks' 64x64x32 and FC2's 64 x 64 tasks' 64x32x32: ptxas unrolls those K loops).
#               So the K loop still exists and issues wgmma, rather than the wgmma sitting only in the persistent task
#               loop
#               (which holds the attention's HGMMA too), or being replaced by mma.sync / scalar code.
#   attention   HGMMA of each shape in ATTN_HGMMA present (S = QK^T keys padded to 208; O = PV)
# Prints INFO lines (opcode counts: HGMMA UTMALDG UTMASTG UTMAREDG SYNCS WARPSYNC LDL STL; resource usage) and one
# PASS/FAIL line per rule and function. Without cuobjdump: one SKIP line, exit 0.
# Exit status: 0 every rule passed (or SKIP), 1 a rule failed or OBJ is missing, 2 cuobjdump failed to run.
set -u
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib-sass.sh
. scripts/lib-sass.sh
OBJ=${1:-build/kernel/sm90/sm90_mega.cu.o}
KERNEL=${2:-sg_sm90_mega_kernel}
MAX_REGS=168
GEMM_HGMMA="64x256x16 64x128x16"
GEMM_HGMMA_FP8="64x256x16"
FP8_QGMMA="64x256x32"
FP8_QGMMA_FLAT="64x64x32 64x32x32"
ATTN_HGMMA="64x208x16 64x64x16"
TMA_OPS="UTMALDG UTMASTG UTMAREDG"
COUNTED=(HGMMA QGMMA UTMALDG UTMASTG UTMAREDG SYNCS WARPSYNC LDL STL)

[ -f "$OBJ" ] || { echo "FAIL: $OBJ not built"; exit 1; }
sg_find_cuobjdump
if [ -z "$CUOBJDUMP" ]; then
    echo "SKIP: sm90 SASS rules on $OBJ: cuobjdump not found" \
         "(make deps fetches it into .deps/cuda-tools; or set CUOBJDUMP)"
    exit 0
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if ! "$CUOBJDUMP" -sass "$OBJ" >"$TMP/sass" 2>&1; then
    echo "FAIL: $CUOBJDUMP -sass $OBJ failed:"; sed 's/^/    /' "$TMP/sass" | tail -5; exit 2
fi
if ! "$CUOBJDUMP" --dump-resource-usage "$OBJ" >"$TMP/res" 2>&1; then
    echo "FAIL: $CUOBJDUMP --dump-resource-usage $OBJ failed:"; sed 's/^/    /' "$TMP/res" | tail -5; exit 2
fi
echo "INFO: $CUOBJDUMP ($("$CUOBJDUMP" --version 2>/dev/null | grep -o 'V[0-9][0-9.]*' | head -1)) on $OBJ"

# One SASS file per function ("Function : <name>" starts each; "arch = sm_XX" starts each cubin), and the
# resource usage as "arch name REG STACK LOCAL" lines.
awk -v out="$TMP/fn" -v pat="$KERNEL" '
    /^arch = / { arch = $3 }
    /Function : / { keep = index($NF, pat) > 0; if (keep) { n++; print arch " " $NF > (out "." n ".name") } }
    keep { print > (out "." n ".sass") }' "$TMP/sass"
awk '/^arch = / { arch = $3 }
     /^ *Function [^ ]*:$/ { name = $2; sub(/:$/, "", name) }
     /REG:/ && name != "" { r = s = l = "?"
        for (i = 1; i <= NF; i++) {
            split($i, kv, ":")
            if (kv[1] == "REG") r = kv[2]; if (kv[1] == "STACK") s = kv[2]; if (kv[1] == "LOCAL") l = kv[2]
        }
        print arch, name, r, s, l; name = "" }' "$TMP/res" >"$TMP/res.table"

# For each wgmma $1 (OP.SHAPE, e.g. HGMMA.64x256x16) in a function's SASS: "ADDR INNER_LOOP_START INNER_LOOP_END
# SAME OTHER", where the innermost loop is the shortest backward branch (BRA to an address <= its own) that spans
# it, and SAME/OTHER count the wgmma (HGMMA or QGMMA) of the same / another op and shape inside it ("ADDR - - 0 0"
# when no loop spans it).
# Addresses are parsed by hand (mawk, Debian's default awk, has no strtonum).
gemm_loops() {
    awk -v shape="$1" '
        function hex(s,   n, i) { n = 0; s = tolower(s)
            for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return n }
        match($0, /\/\*[0-9a-f]+\*\//) {
            a = hex(substr($0, RSTART + 2, RLENGTH - 4))
            if (match($0, /[HQ]GMMA\.[0-9]+x[0-9]+x[0-9]+/)) {
                nh++; ha[nh] = a; hs[nh] = substr($0, RSTART, RLENGTH)
            }
            if ($0 ~ /[[:space:]]BRA[.[:space:]]/ && $0 ~ /BRA[^;]* 0x[0-9a-f]+/) {
                t = $0; sub(/.*BRA[^;]* 0x/, "", t); sub(/[^0-9a-f].*/, "", t); t = hex(t)
                if (t <= a) { nb++; bs[nb] = a; bt[nb] = t }
            }
        }
        END {
            for (i = 1; i <= nh; i++) {
                if (hs[i] != shape) continue
                best = 0
                for (j = 1; j <= nb; j++)
                    if (bt[j] <= ha[i] && ha[i] < bs[j] && (best == 0 || bs[j] - bt[j] < bs[best] - bt[best])) best = j
                if (best == 0) { printf "%x - - 0 0\n", ha[i]; continue }
                same = other = 0
                for (k = 1; k <= nh; k++)
                    if (ha[k] >= bt[best] && ha[k] < bs[best]) { if (hs[k] == shape) same++; else other++ }
                printf "%x %x %x %d %d\n", ha[i], bt[best], bs[best], same, other
            }
        }' "$2"
}

has_op() { grep -Eq "[[:space:]]$1([.[:space:]]|$)" "$2"; }
count_op() { grep -Ec "[[:space:]]$1([.[:space:]]|$)" "$2"; }

fail=0
nfun=0
for nf in "$TMP"/fn.*.name; do
    [ -e "$nf" ] || continue
    nfun=$((nfun + 1))
    read -r arch name <"$nf"; sass="${nf%.name}.sass"; what="$arch $name"
    line=""
    for op in "${COUNTED[@]}"; do line="$line $op=$(count_op "$op" "$sass")"; done
    echo "INFO: $what:$line"

    # registers, stack, local memory (resource usage)
    reg="" stack="" local=""
    read -r _ _ reg stack local < <(awk -v a="$arch" -v n="$name" '$1 == a && $2 == n' "$TMP/res.table") || true
    echo "INFO: $what: REG=${reg:-?} STACK=${stack:-?} LOCAL=${local:-?}"
    if ! [[ "${reg:-}" =~ ^[0-9]+$ ]]; then
        echo "FAIL: $what: no register count in cuobjdump --dump-resource-usage"; fail=1
    elif [ "$reg" -gt "$MAX_REGS" ] || [ "$stack" != 0 ] || [ "$local" != 0 ]; then
        echo "FAIL: $what: $reg registers (limit $MAX_REGS), stack $stack, local $local (both must be 0)"; fail=1
    else
        echo "PASS: $what: $reg registers (limit $MAX_REGS), no stack, no local memory"
    fi
    # spills in the code
    nl=$(( $(count_op LDL "$sass") + $(count_op STL "$sass") ))
    if [ "$nl" -ne 0 ]; then echo "FAIL: $what: $nl LDL/STL (local memory) in the SASS"; fail=1
    else echo "PASS: $what: no LDL/STL in the SASS"; fi
    # TMA
    missing=""
    for op in $TMA_OPS; do has_op "$op" "$sass" || missing="$missing $op"; done
    if [ -n "$missing" ]; then echo "FAIL: $what: missing in the SASS:$missing"; fail=1
    else echo "PASS: $what: SASS has $TMA_OPS"; fi
    # GEMM K loops: HGMMA of each GEMM shape (and QGMMA of FC1's in an FP8 instantiation), each in a loop holding no
    # wgmma of another shape
    ops=""
    if [[ "$name" == *ELb1EEv* ]]; then
        for gs in $GEMM_HGMMA_FP8; do ops="$ops HGMMA.$gs"; done
        for gs in $FP8_QGMMA; do ops="$ops QGMMA.$gs"; done
    else
        for gs in $GEMM_HGMMA; do ops="$ops HGMMA.$gs"; done
    fi
    for g in $ops; do
        gemm_loops "$g" "$sass" >"$TMP/loops"
        n_gemm=$(wc -l <"$TMP/loops")
        n_bad=$(awk '$2 == "-" || $5 != 0' "$TMP/loops" | wc -l)
        if [ "$n_gemm" -eq 0 ]; then
            echo "FAIL: $what: no $g (a GEMM task's wgmma) in the SASS"; fail=1
        elif [ "$n_bad" -ne 0 ]; then
            echo "FAIL: $what: $n_bad of $n_gemm $g not in a K loop of their own" \
                 "(ADDR LOOP_START LOOP_END SAME OTHER):"
            awk '$2 == "-" || $5 != 0' "$TMP/loops" | head -5 | sed 's/^/    /'; fail=1
        else
            loops=$(awk -v op="${g%%.*}" '{ print $2 ".." $3 " (" $4 " " op ")" }' "$TMP/loops" | sort -u | tr '\n' ' ')
            echo "PASS: $what: $n_gemm $g, all inside a GEMM K loop: ${loops% }"
        fi
    done
    if [[ "$name" == *ELb1EEv* ]]; then
        missing=""
        for s in $FP8_QGMMA_FLAT; do grep -q "QGMMA\.$s\." "$sass" || missing="$missing QGMMA.$s"; done
        if [ -n "$missing" ]; then echo "FAIL: $what: FP8 FC1 wgmma missing in the SASS:$missing"; fail=1
        else echo "PASS: $what: FP8's unrolled QGMMA shapes present ($FP8_QGMMA_FLAT)"; fi
    fi
    # attention wgmma shapes
    missing=""
    for s in $ATTN_HGMMA; do grep -q "HGMMA\.$s\." "$sass" || missing="$missing HGMMA.$s"; done
    if [ -n "$missing" ]; then echo "FAIL: $what: attention wgmma missing in the SASS:$missing"; fail=1
    else echo "PASS: $what: attention HGMMA shapes present ($ATTN_HGMMA)"; fi
done
if [ "$nfun" -eq 0 ]; then
    echo "FAIL: no function matching '$KERNEL' in $OBJ"; fail=1
elif [ "$fail" -eq 0 ]; then
    echo "PASS: sm90 SASS rules hold for all $nfun '$KERNEL' functions of $OBJ"
fi
exit $fail
