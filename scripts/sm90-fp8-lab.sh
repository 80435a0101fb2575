#!/usr/bin/env bash
# scripts/sm90-fp8-lab.sh [OUTDIR] — builds and runs the FP8 GEMM task of the Hopper megakernel
# (kernel/sm90/sm90_gemm_fp8.cuh, through kernel/lab/sm90_lab.cu) on an H100/H200, standalone.
#
# Builds only kernel/lab/sm90_lab.cu, kernel/lab/test_sm90_fp8.c and the CPU emulation it checks against
# (kernel/cpu/cpu_mxfp8.c and the CPU GEMM it uses), into build/sm90fp8/, so it works while the rest of the
# tree is mid-edit. Then: ptxas report, SASS census (QGMMA/HGMMA, UTMALDG, SYNCS, LDL/STL) of the FP8 kernels,
# the correctness checks and the --bench timings (FP8 next to the bf16 task), compute-sanitizer memcheck,
# racecheck and synccheck on --quick. Logs go to OUTDIR (default build/sm90fp8/logs). Needs nvcc, gcc, cuobjdump, compute-sanitizer.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/sm90fp8/logs}
B=build/sm90fp8
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
mkdir -p "$B" "$OUT"
: >"$OUT/ptxas.txt"
$NVCC -std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr \
    -gencode arch=compute_90a,code=sm_90a -Xptxas -v -c kernel/lab/sm90_lab.cu -o $B/sm90_lab.o 2>>"$OUT/ptxas.txt" ||
    { cat "$OUT/ptxas.txt"; exit 1; }
objs="$B/sm90_lab.o"
for f in kernel/lab/test_sm90_fp8.c kernel/cpu/cpu_mxfp8.c kernel/cpu/cpu_gemm.c kernel/cpu/cpu_packed.c \
    kernel/cpu/cpu_math.c kernel/cpu/cpu_encoder.c; do
    o=$B/$(basename "$f" .c).o
    gcc -std=c11 -O2 -g -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -I. -c "$f" -o "$o" || exit 1
    objs="$objs $o"
done
g++ -fopenmp $objs -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lm -o $B/test_sm90_fp8 || exit 1
grep -A2 -E "fp8" "$OUT/ptxas.txt" | grep -E "Compiling|registers|spill"
grep -E "C75|arn" "$OUT/ptxas.txt"
{
    cuobjdump --dump-resource-usage $B/sm90_lab.o | grep -A1 -i fp8
    echo "SASS census (function, opcode, count):"
    cuobjdump -sass $B/sm90_lab.o | awk '/Function :/ {f = $3}
        {for (i = 1; i <= NF; i++) if ($i ~ /^(QGMMA|HGMMA|UTMALDG|SYNCS|LDL|STL|WARPGROUP|USETMAXREG|F2FP)/) {
            split($i, a, "."); c[f " " a[1]]++ }}
        END {for (k in c) print k, c[k]}' | sort | grep -i fp8
} | tee "$OUT/sass-census.txt"
cuobjdump -sass -fun '_Z27sg_sm90_lab_gemm_fp8_kernelILi1EEv14CUtensorMap_stS0_S0_PKfiii20sg_sm90_fp8_epilogue' \
    $B/sm90_lab.o | gzip >"$OUT/sass-fp8-sub1.txt.gz"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "=== checks + bench"
$B/test_sm90_fp8 --bench 2>&1 | tee "$OUT/lab.txt"
rc=${PIPESTATUS[0]}
. scripts/lib-gpu.sh && sg_lab_sanitizers "$OUT" 90 $B/test_sm90_fp8 --quick
exit $rc
