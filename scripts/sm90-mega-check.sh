#!/usr/bin/env bash
# scripts/sm90-mega-check.sh — quick check of the Hopper megakernel on a Hopper GPU (a subset of gpu-check.sh
# and gpu-bench.sh for iterating on kernel/sm90): build; full-size random checkpoint; the photos through HF fp32,
# --backend cuda and --backend sm90 (cosine to HF per image); sm90 at many batch sizes in one process against
# cuda (same input, bit-for-bit stable across batch sizes?); graph replay timings of both.
#   scripts/sm90-mega-check.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RES=${1:-${OUT:-/tmp/sg-sm90-mega}}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$RES" "$WORK"
PY=${PYTHON:-python3}
T0=$SECONDS
stamp() { echo "== [$((SECONDS - T0))s] $*"; }
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
stamp build
make -j"$(nproc)" "${DEPS[@]}" siglip2-embed build/tools/sg_gpu_graph_bench build/tools/sg_backend_stress >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
BIN=$ROOT/siglip2-embed
CKPT=$WORK/siglip2-base-random
if [ ! -f "$CKPT/model.safetensors" ]; then
    stamp checkpoint
    $PY scripts/make_fixtures.py --full-size "$CKPT" >"$WORK/ckpt.log" 2>&1 || { tail "$WORK/ckpt.log"; exit 1; }
fi
mapfile -t FILES < <(ls .carry/photos/*.jpg | sort)
stamp "HF fp32 reference"
[ -f "$WORK/hf.npy" ] || $PY scripts/hf_embed.py "$CKPT" "$WORK/hf.npy" "${FILES[@]}" >"$WORK/hf.log" 2>&1 || tail "$WORK/hf.log"
for B in cuda sm90; do
    stamp "backend $B"
    timeout 120 "$BIN" --weights "$CKPT" --backend "$B" --batch 8 --no-normalize -q -f npy -o "$WORK/$B.npy" "${FILES[@]}" 2>&1 | tail -3
    $PY scripts/gpu_compare.py "$WORK/hf.npy" "$WORK/$B.npy" "backend $B vs HF fp32" | tee -a "$RES/accuracy.txt"
done
stamp "sm90 at batch 1, 3, 13 (one image per batch / mixed): rows must not depend on the batch"
for b in 1 3 13; do
    timeout 120 "$BIN" --weights "$CKPT" --backend sm90 --batch $b --no-normalize -q -f npy -o "$WORK/sm90-b$b.npy" "${FILES[@]}" 2>&1 | tail -2
    $PY scripts/gpu_compare.py "$WORK/sm90.npy" "$WORK/sm90-b$b.npy" "sm90 batch $b vs batch 8" 0.999999 | tail -1
done
if [ -n "${SG_STRESS:-}" ]; then
    stamp "stress: $SG_STRESS mixed launches"
    timeout 300 build/tools/sg_backend_stress "$CKPT" sm90 "$SG_STRESS" 2>&1 | tail -3
fi
stamp "where the megakernel's time goes (SG_SM90_PROFILE=1: cycles per task kind, one eager launch per batch)"
SG_SM90_PROFILE=1 timeout 120 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_PROFILE_BATCHES:-1,1024}" sm90 2>&1 | grep -v '^{' | tee "$RES/profile-sm90.txt"
stamp "graph replays, pixels on the GPU"
timeout 200 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_BATCHES:-1,8,32,256,1024}" sm90 2>&1 | tee "$RES/graph-sm90.jsonl"
timeout 100 build/tools/sg_gpu_graph_bench "$CKPT" "${SG_BATCHES_CUDA:-1,256,1024}" cuda 2>&1 | tee "$RES/graph-cuda.jsonl"
if [ -n "${SG_SANITIZE:-}" ]; then
    CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
    for TOOL in memcheck racecheck synccheck; do
        stamp "compute-sanitizer $TOOL, sm90, batch 2"
        timeout 300 "$CS" --tool "$TOOL" --error-exitcode 99 "$BIN" --weights "$CKPT" --backend sm90 --batch 2 -q \
            --no-normalize -f npy -o "$WORK/san.npy" "${FILES[0]}" "${FILES[1]}" >"$WORK/san-$TOOL.log" 2>&1
        echo "rc $? $(grep -m1 SUMMARY "$WORK/san-$TOOL.log")"; grep -m5 -E 'Invalid|Race|Barrier|rror' "$WORK/san-$TOOL.log" | head -5
    done
fi
stamp done
