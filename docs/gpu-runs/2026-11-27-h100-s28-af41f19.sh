#!/usr/bin/env bash
# Session 28: gpu-check, selfcheck-gpu, gpu-text-check on the final tree (setsid; R=/tmp/s28h, collected with s22collect.sh).
cd "$(dirname "$0")/.."
R=/tmp/s28h; rm -rf $R; mkdir -p $R
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
  OUT=$R/text bash scripts/gpu-text-check.sh > $R/apigraph.log 2>&1; echo "text rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
