#!/usr/bin/env bash
# Session 29: last run, the final tree (setsid; collected by .carry/s22collect.sh with R=/tmp/s29f): gpu-check, gpu-bench (with the sustained
# rates), selfcheck-gpu, gpu-text-check (its log as apigraph.log, which the collector copies).
cd "$(dirname "$0")/.."
R=/tmp/s29f; rm -rf $R; mkdir -p $R
{
  date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
  OUT=$R/text bash scripts/gpu-text-check.sh > $R/apigraph.log 2>&1; echo "text rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
