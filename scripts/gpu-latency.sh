#!/usr/bin/env bash
# scripts/gpu-latency.sh — A/B timing of the cuda backend's latency switches, on a GPU machine, in one call.
#
#   scripts/gpu-latency.sh [CKPT]     (default: gpu-check.sh's full-size random checkpoint; build first)
#
# The switch (kernel/cuda): SG_CUDA_GEMM_TUNE=1 times cuBLASLt's heuristic candidates at plan time ("v4");
# unset or 0 keeps the first heuristic choice ("v3", the default, for reproducible embeddings). ROUNDS (default 3) sets the repeats.
# 1. batch 1, graph replay with pixels on the GPU (sg_gpu_graph_bench, median of 200 replays): v3 and v4
#    interleaved, ROUNDS rounds each, so the spread between rounds of one version is the noise;
# 2. batches 32, 256, 1024 (graph replay), v3 and v4, ROUNDS - 1 rounds (at least 1), interleaved;
# 3. through the backend API (sg_gpu_bench: cold start, staging, upload, download) at batch 1 and 256, the same;
# 4. SG_CUDA_PROFILE=1 at batch 1 with v4: which GEMM candidates were chosen, per-op eager profile.
# Results: $OUT/latency.jsonl (one line per measurement, with its label) and a summary table at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
CKPT=${1:-/tmp/sg-gpu-work/siglip2-base-random}
RES=${OUT:-/tmp/sg-gpu-latency}
mkdir -p "$RES"
J=$RES/latency.jsonl
: >"$J"
[ -f "$CKPT/model.safetensors" ] || { echo "no checkpoint at $CKPT (run scripts/gpu-check.sh first)"; exit 1; }
[ -x build/tools/sg_gpu_graph_bench ] && [ -x build/tools/sg_gpu_bench ] || { echo "build first"; exit 1; }

ROUNDS=${ROUNDS:-3}
R2=$((ROUNDS > 1 ? ROUNDS - 1 : 1))
combo() {  # label -> environment assignments
    case $1 in
    v3) echo "SG_CUDA_GEMM_TUNE=0" ;;
    v4) echo "SG_CUDA_GEMM_TUNE=1" ;;
    esac
}
graph() {  # label round batches
    env $(combo "$1") build/tools/sg_gpu_graph_bench "$CKPT" "$3" 2>>"$RES/latency.err" |
        sed "s/^{/{\"label\": \"$1\", \"round\": $2, \"tool\": \"graph\", /" | tee -a "$J"
}
api() {  # label round batches
    env $(combo "$1") build/tools/sg_gpu_bench "$CKPT" cuda "$3" 2>>"$RES/latency.err" |
        sed "s/^{/{\"label\": \"$1\", \"round\": $2, \"tool\": \"api\", /" | tee -a "$J"
}

for r in $(seq "$ROUNDS"); do for L in v3 v4; do graph $L "$r" 1; done; done
for r in $(seq "$R2"); do for L in v3 v4; do graph $L "$r" 32,256,1024; done; done
for r in $(seq "$R2"); do for L in v3 v4; do api $L "$r" 1,256; done; done
env $(combo v4) SG_CUDA_PROFILE=1 build/tools/sg_gpu_bench "$CKPT" cuda 1 2>&1 >/dev/null | tee "$RES/profile-b1.txt"

python3 - "$J" <<'EOF'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
g = collections.defaultdict(list)
for r in rows:
    if 'batch' not in r:
        print(f"  cold start {r['label']} round {r['round']}: {r.get('cold_start_s')} s (create {r.get('create_s')} s)")
        continue
    key = (r['tool'], r['label'], r['batch'])
    g[key].append(r.get('latency_ms') if r['batch'] == 1 else r.get('img_s', r.get('images_per_s')))
print("summary (batch 1: latency ms per round; larger batches: images/s per round)")
for k in sorted(g):
    v = [x for x in g[k] if x is not None]
    print(f"  {k[0]:5s} {k[1]:5s} batch {k[2]:5d}: " + " ".join(f"{x:.4f}" if k[2] == 1 else f"{x:.0f}" for x in v))
EOF
