#!/usr/bin/env bash
# Session 36, fourth call (no H100 could be started: it ran on an H200): PNG photos end to end with the PNG
# decoder as it landed in session 35 (version 3: the SSE2 Adler-32 and the RGBA / grey row loops, timed on the build machine only; session 35's device figure, 246.7
# images/s, was version 2's). scripts/gpu-format-e2e.sh png: gpu-bench's 4,000 photos saved as PNG by this machine's
# Pillow, pixels against Pillow, speed against Pillow on 16 processes, every embedding against HF fp32. Run with
# setsid and collected by .carry/collect.sh, which waits for $R/done and tars $R into $OUT.
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s36p; rm -rf $R; mkdir -p $R
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  PYTHON=$(command -v python3) OUT=$R/png bash scripts/gpu-format-e2e.sh png > $R/png.log 2>&1; echo "png e2e rc $?"
  date -u
} > $R/driver.log 2>&1
touch $R/done
