#!/usr/bin/env bash
# scripts/sm90-lab.sh [OUTDIR] — builds and runs the Hopper megakernel stage lab on an H100/H200, standalone.
#
# Builds only the lab (kernel/lab/sm90_lab.cu, lab_gpu.c), its test kernel/lab/test_sm90_lab.c and kernel/no_gpu.c
# (the stub backends: the test's check that the sm90 backend refuses a model resolves there), so it works while
# the rest of the tree is mid-edit, into build/sm90lab/, then: ptxas report, SASS census (HGMMA, UTMALDG, SYNCS, LDL/STL), the correctness
# checks, the --bench timings, and compute-sanitizer memcheck / racecheck / synccheck on the --quick case.
# Logs go to OUTDIR (default build/sm90lab/logs). Needs nvcc, gcc, cuobjdump, compute-sanitizer (CUDA 13.0).
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/sm90lab/logs}
B=build/sm90lab
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
mkdir -p "$B" "$OUT"
flags="-std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr"
: >"$OUT/ptxas.txt"
$NVCC $flags -gencode arch=compute_90a,code=sm_90a -Xptxas -v -c kernel/lab/sm90_lab.cu -o $B/sm90_lab.o \
    2>>"$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
objs="$B/sm90_lab.o"
for f in kernel/lab/test_sm90_lab.c kernel/lab/lab_gpu.c kernel/no_gpu.c; do
    o=$B/$(basename "$f" .c).o
    gcc -std=c11 -O2 -g -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -I. -c "$f" -o "$o" || exit 1
    objs="$objs $o"
done
g++ -fopenmp $objs -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lm -o $B/test_sm90_lab || exit 1
grep -E "registers|spill|C75" "$OUT/ptxas.txt"
{
    cuobjdump --dump-resource-usage $B/sm90_lab.o
    echo "SASS census (function, opcode, count):"
    cuobjdump -sass $B/sm90_lab.o | awk '/Function :/ {f = $3}
        {for (i = 1; i <= NF; i++) if ($i ~ /^(HGMMA|UTMALDG|SYNCS|LDL|STL|WARPGROUP|USETMAXREG|BAR)/) {
            split($i, a, "."); c[f " " a[1]]++ }}
        END {for (k in c) print k, c[k]}' | sort
} | tee "$OUT/sass-census.txt"
cuobjdump -sass $B/sm90_lab.o | gzip >"$OUT/sass.txt.gz"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "=== checks + bench"
$B/test_sm90_lab --bench 2>&1 | tee "$OUT/lab.txt"
rc=${PIPESTATUS[0]}
. scripts/lib-gpu.sh && sg_lab_sanitizers "$OUT" 120 $B/test_sm90_lab --quick
exit $rc
