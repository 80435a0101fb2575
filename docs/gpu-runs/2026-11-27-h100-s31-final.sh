#!/usr/bin/env bash
# Session 31: the session's GPU check and benchmark in one call on the tree as it stands (setsid; collected by a
# loop that waits for $R/done and tars $R into $OUT): gpu-check, gpu-bench, selfcheck-gpu, gpu-text-check.
cd "$(dirname "$0")/../.."
R=/tmp/s31f; rm -rf $R; mkdir -p $R
{
  date -u; git log --oneline -1 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
  OUT=$R/text bash scripts/gpu-text-check.sh > $R/text.log 2>&1; echo "text rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
