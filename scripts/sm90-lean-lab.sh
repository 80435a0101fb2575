#!/usr/bin/env bash
# scripts/sm90-lean-lab.sh [OUTDIR] — builds and runs the lean batch-1 schedule lab (kernel/lab/sm90_lean_lab.cu,
# driver kernel/lab/test_sm90_lean.c; issue 12, target 3) on an H100/H200, standalone.
#
# Builds only those two files into build/sm90lean/ (so it works while the rest of the tree is mid-edit), then: the
# ptxas report (registers, spills), the checks and the table (test_sm90_lean --bench -> OUTDIR/lean.txt: 1 and 12
# layers against the CPU reference, us a forward of 12 layers, each stage kind's share of a layer and its
# hand-off), and compute-sanitizer memcheck, synccheck and racecheck on --quick. Without a compute capability 9.x
# GPU it stops after the build and says so (exit 3). Logs go to OUTDIR (default build/sm90lean/logs). Needs CUDA
# 13.0 (nvcc; compute-sanitizer for the last step) and gcc/g++ with OpenMP. SG_LEAN_NVCC_FLAGS adds nvcc flags
# (e.g. -DSG_SPIN_LIMIT=...).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${1:-build/sm90lean/logs}
B=build/sm90lean
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
mkdir -p "$B" "$OUT"
echo "=== build (sm_90a)"
# shellcheck disable=SC2086
$NVCC -std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr \
    -gencode arch=compute_90a,code=sm_90a -Xptxas -v ${SG_LEAN_NVCC_FLAGS:-} -c kernel/lab/sm90_lean_lab.cu \
    -o $B/sm90_lean_lab.o 2>"$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
gcc -std=c11 -O2 -g -fopenmp -Wall -Wextra -Werror -D_GNU_SOURCE -I. -c kernel/lab/test_sm90_lean.c \
    -o $B/test_sm90_lean.o || exit 1
g++ -fopenmp $B/test_sm90_lean.o $B/sm90_lean_lab.o -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lm \
    -o $B/test_sm90_lean || exit 1
grep -E "registers|spill" "$OUT/ptxas.txt"
"$B/test_sm90_lean" --quick >"$OUT/probe.txt" 2>&1
if grep -q "^SKIP: sm90 lean lab" "$OUT/probe.txt"; then
    echo "built $B/test_sm90_lean, but no run here: $(grep '^SKIP' "$OUT/probe.txt" | head -1)"
    exit 3
fi
cat "$OUT/probe.txt"
command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"
echo "=== checks + bench"
timeout 300 "$B/test_sm90_lean" --bench 2>&1 | tee "$OUT/lean.txt"
rc=${PIPESTATUS[0]}
. scripts/lib-gpu.sh && sg_lab_sanitizers "$OUT" 300 "$B/test_sm90_lean" --quick
exit $rc
