#!/usr/bin/env bash
# Session 30: gpu-check alone on the session's final tree (after the last preprocessing merges), timed to fit the
# device time left.
cd "$(dirname "$0")/.."
date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
OUT=$OUT/check bash scripts/gpu-check.sh > $OUT/check.txt 2>&1; echo "check rc $?"; date -u
tail -1 $OUT/check.txt; grep -E "min cosine|launches" $OUT/check.txt | head -6
rm -rf $OUT/check
