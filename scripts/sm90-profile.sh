#!/usr/bin/env bash
# scripts/sm90-profile.sh — where the Hopper megakernel's time goes, in one call on a Hopper GPU machine.
#
#   scripts/sm90-profile.sh [OUTDIR]        (default $OUT, else /tmp/sg-sm90-profile)
#
# 1. build (DEPS_PREFIX=.carry/deps when present) and the full-size random checkpoint (speed does not depend
#    on the values);
# 2. graph-replay timings of the sm90 and cuda encoders, pixels on the GPU (tests/tools/sg_gpu_graph_bench);
# 3. SG_SM90_PROFILE=1: the megakernel's own cycle counters per task kind (consumer busy / idle, producer
#    dependency waits, GEMM K loop / stores), batches SG_PROFILE_BATCHES (default 1,1024);
# 4. ncu on one megakernel launch at batch SG_NCU_BATCH (default 1024): speed of light, warp states (the stall
#    breakdown of docs/kernel-notes.md §9), memory workload (L2 sectors by operation: reads, writes, reductions),
#    source counters (the instructions the warps stall on), saved as OUTDIR/ncu-B.txt and OUTDIR/ncu-B.ncu-rep.
# Environment: SG_BATCHES (timings, default 1,256,1024), SG_NCU=0 skips ncu.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-gpu.sh
. scripts/lib-gpu.sh
ROOT=$PWD
RES=${1:-${OUT:-/tmp/sg-sm90-profile}}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$RES" "$WORK"
PY=${PYTHON:-python3}
T0=$SECONDS
stamp() { echo "== [$((SECONDS - T0))s] $*"; }
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
stamp build
make -j"$(nproc)" "${DEPS[@]}" siglip2-embed build/tools/sg_gpu_graph_bench >"$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log"; exit 1; }
sg_gpu_checkpoint
sg_gpu_info
stamp "graph replays (pixels on the GPU): sm90, then cuda"
timeout 200 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_BATCHES:-1,256,1024}" sm90 2>&1 | tee "$RES/graph-sm90.jsonl"
timeout 200 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_BATCHES:-1,256,1024}" cuda 2>&1 | tee "$RES/graph-cuda.jsonl"
stamp "SG_SM90_PROFILE=1 (cycles per task kind, one eager launch per batch)"
SG_SM90_PROFILE=1 timeout 120 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_PROFILE_BATCHES:-1,1024}" sm90 2>&1 |
    grep -v '^{' | tee "$RES/profile-sm90.txt"
if [ "${SG_NCU:-1}" != 0 ]; then
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
    B=${SG_NCU_BATCH:-1024}
    stamp "ncu, one megakernel launch at batch $B"
    # The graph tool runs the forward eagerly first (task table), then captures and replays: skip the eager
    # launch and profile the first replayed one. --clock-control none: the card as it runs.
    timeout 400 "$NCU" --clock-control none -k regex:sg_sm90_mega_kernel --launch-skip 1 -c 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
        --section Occupancy --section LaunchStats --section SourceCounters \
        --metrics lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_red.sum \
        -o "$RES/ncu-$B" -f build/tools/sg_gpu_graph_bench "$CKPT" "$B" sm90 >"$WORK/ncu.log" 2>&1
    echo "ncu rc $?"; tail -3 "$WORK/ncu.log"
    "$NCU" -i "$RES/ncu-$B.ncu-rep" --page details --print-details all >"$RES/ncu-$B.txt" 2>&1
    "$NCU" -i "$RES/ncu-$B.ncu-rep" --page raw --csv >"$RES/ncu-$B-raw.csv" 2>&1
    grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|stalled|Stall|Tensor|lts__t_sectors|hit_rate|dram__bytes|Warp Cycles|Issued Warp|Eligible' \
        "$RES/ncu-$B.txt" | head -80
fi
stamp done
