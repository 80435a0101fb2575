#!/usr/bin/env bash
# Session 25: -v / --info name the numerics; selfcheck-gpu (its new numerics checks) and --info per backend spec.
# Run from the repo root on a Hopper GPU: OUT=DIR bash docs/gpu-runs/2026-11-27-h200-s25-numerics.sh
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
: "${OUT:?OUT=DIR}"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/numerics.txt
OUT=/tmp/s25n bash scripts/selfcheck-gpu.sh > $OUT/selfcheck.txt 2>&1; echo "selfcheck rc $?" >> $OUT/numerics.txt
CK=/tmp/sg-gpu-work/siglip2-base-random
for spec in "--backend auto" "--backend auto --precision fp8" "--backend sm90 --precision bf16" "--backend cuda"; do
  echo "== siglip2-embed --info $spec" >> $OUT/numerics.txt
  ./siglip2-embed --info --weights $CK $spec 2>&1 | grep -E "^backend chosen|^numerics" >> $OUT/numerics.txt
done
echo "== SG_FP8_FC2_LAYERS=none --precision fp8 -v" >> $OUT/numerics.txt
SG_FP8_FC2_LAYERS=none SIGLIP2_SELFCHECK=off ./siglip2-embed -v -q --weights $CK --backend sm90 --precision fp8 -o /tmp/x.npy .carry/photos/Aqua.jpg 2>&1 | grep -E "backend|numerics" >> $OUT/numerics.txt
date -u >> $OUT/numerics.txt
