#!/usr/bin/env bash
# Session 32: the session's GPU gates and benchmark in one call on the tree as it stands (setsid; collected by a
# loop that waits for $R/done and tars $R into $OUT): gpu-check, gpu-bench, selfcheck-gpu, then WebP end to end on
# the 4,000-photo corpus re-encoded as WebP (scripts/gpu-webp-e2e.sh: pixels against this machine's Pillow, speed
# beside Pillow's and beside the JPEG corpus, every image's embedding against HF fp32).
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s32f; rm -rf $R; mkdir -p $R
{
  date -u; git log --oneline -1 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
  OUT=$R/webp bash scripts/gpu-webp-e2e.sh > $R/webp.log 2>&1; echo "webp rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
