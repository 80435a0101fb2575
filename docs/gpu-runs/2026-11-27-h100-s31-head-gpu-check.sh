#!/usr/bin/env bash
# Session 31: gpu-check alone on the session's last code commit (after the TIFF decoders and the inflate fast path,
# CPU code only), as a check that the whole tree builds and every GPU gate holds on it.
cd "$(dirname "$0")/../.."
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OUT=$OUT/check bash scripts/gpu-check.sh > $OUT/check.log 2>&1; echo "check rc $?"; date -u; tail -1 $OUT/check.log
