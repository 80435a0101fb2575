#!/usr/bin/env bash
# Session 33: the GPU gates and the benchmark in one call on the session's final tree (no product kernel changed:
# sg_mega_gelu moved to kernel/mega/mega_gelu.cuh with identical SASS), run with setsid and collected by a loop
# that waits for $R/done and tars $R into $OUT: gpu-check, gpu-bench, selfcheck-gpu.
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s33f; rm -rf $R; mkdir -p $R
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
