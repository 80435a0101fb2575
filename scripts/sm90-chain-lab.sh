#!/usr/bin/env bash
# scripts/sm90-chain-lab.sh [OUTDIR] — builds and runs the hop-latency / L2-ingest / proxy-fence microbenchmarks
# (kernel/lab/sm90_chain_lab.cu, driver kernel/lab/test_sm90_chain.c) on an H100/H200, standalone.
#
# Builds only those two files into build/sm90chain/ (so it works while the rest of the tree is mid-edit), then:
# the ptxas report (registers, spills), a SASS count of local-memory instructions when cuobjdump is found, the
# checks and the seven tables (test_sm90_chain --bench -> OUTDIR/chain.txt: the wgmma chain's step, proxy fence,
# hops, bulk-copy ingest, tensor-map ingest, the two mixed, the 64 x 64 task with its bytes), and compute-sanitizer memcheck, synccheck and racecheck on --quick. Without a compute capability 9.x GPU it stops after the build and says so (exit 3).
# Logs go to OUTDIR (default build/sm90chain/logs). Needs CUDA 13.0 (nvcc; compute-sanitizer for the last step)
# and gcc/g++. Extra arguments for the bench (e.g. --hops=4000 --mb=16) go in $CHAIN_ARGS; CHAIN_ARGS=--task runs
# only experiment 7 (the 64 x 64 task with its bytes: checks and table 7).
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/sm90chain/logs}
B=build/sm90chain
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
mkdir -p "$B" "$OUT"
echo "=== build (sm_90a)"
$NVCC -std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr \
    -gencode arch=compute_90a,code=sm_90a -Xptxas -v -c kernel/lab/sm90_chain_lab.cu -o $B/sm90_chain_lab.o \
    2>"$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
gcc -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I. -c kernel/lab/test_sm90_chain.c -o $B/test_sm90_chain.o ||
    exit 1
g++ $B/test_sm90_chain.o $B/sm90_chain_lab.o -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lm \
    -o $B/test_sm90_chain || exit 1
# Kernel name, then its registers and spills: every kernel must show 0 bytes spill stores / loads.
grep -E "Compiling entry|registers|spill" "$OUT/ptxas.txt" | sed -E "s/.*entry function '([^']+)'.*/\1:/"
. scripts/lib-sass.sh && sg_find_cuobjdump
if [ -n "$CUOBJDUMP" ]; then
    n=$("$CUOBJDUMP" -sass $B/sm90_chain_lab.o | grep -cE 'LDL|STL')
    echo "local-memory instructions (LDL/STL) in the SASS: $n"
fi

"$B/test_sm90_chain" --quick >"$OUT/probe.txt" 2>&1
if grep -q "^SKIP: sm90 chain lab" "$OUT/probe.txt"; then
    echo "built $B/test_sm90_chain, but no run here: $(grep '^SKIP' "$OUT/probe.txt" | head -1)"
    command -v nvidia-smi >/dev/null 2>&1 || echo "(nvidia-smi not found either: no NVIDIA driver on this machine)"
    exit 3
fi
command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
echo "=== checks + bench"
# shellcheck disable=SC2086
"$B/test_sm90_chain" --bench ${CHAIN_ARGS:-} 2>&1 | tee "$OUT/chain.txt"
rc=${PIPESTATUS[0]}
. scripts/lib-gpu.sh && sg_lab_sanitizers "$OUT" 300 "$B/test_sm90_chain" --quick
exit $rc
