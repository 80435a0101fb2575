#!/usr/bin/env bash
# Session 32, second call: WebP end to end again (scripts/gpu-webp-e2e.sh) after the VP8 decoder's SSE2 kernels
# (loop filter, upsampling + YUV->RGB, 4x4 IDCT; merge of vp8-fast), on a fresh machine (setsid; collected by a loop
# that waits for $R/done and tars $R into $OUT).
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s32s; rm -rf $R; mkdir -p $R
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  OUT=$R/webp bash scripts/gpu-webp-e2e.sh > $R/webp.log 2>&1; echo "webp rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
