#!/usr/bin/env bash
# Session 30: last run, the final tree (setsid; collected by .carry/s30collect.sh with R=/tmp/s30f): gpu-check, gpu-bench,
# selfcheck-gpu, gpu-text-check, then a soak of each megakernel (50,000 back-to-back launches of mixed sizes, new seeds).
cd "$(dirname "$0")/.."
R=/tmp/s30f; rm -rf $R; mkdir -p $R
{
  date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
  OUT=$R/text bash scripts/gpu-text-check.sh > $R/apigraph.log 2>&1; echo "text rc $?"; date -u
  CK=/tmp/sg-gpu-work/siglip2-base-random
  for b in sm90 sm90:fp8; do
    timeout 280 build/tools/sg_backend_stress "$CK" $b 50000 > $R/soak-${b/:/-}.log 2>&1; echo "soak $b rc $? ($CK)"; tail -1 $R/soak-${b/:/-}.log
    date -u
  done
} > $R/driver.log 2>&1
touch $R/done
