#!/usr/bin/env bash
# scripts/sm90-ab.sh — one version of the Hopper megakernel against another, in one call on one GPU.
#
#   scripts/sm90-ab.sh BASE.tar [OUTDIR]     (OUTDIR default $OUT, else /tmp/sg-sm90-ab)
#
# BASE.tar: the tree to compare against, e.g. `git archive -o .carry/base.tar HEAD~1` (the device machine gets
# no .git). Both trees are built with the same flags (DEPS_PREFIX=.carry/deps when present), then:
# 1. graph replays (pixels on the GPU, CUDA events, median; tests/tools/sg_gpu_graph_bench) of base and new sm90
#    at SG_AB_BATCHES (default 1,32,256,1024), in the order base, new, base, new, so a drift of the card's clock
#    shows as a difference between the two rounds rather than between the versions; the cuda backend once; then
#    the runs of SG_AB_EXTRA ("label ENV=V ...; ..."), the new tree with debug knobs set;
# 2. SG_SM90_PROFILE=1 (cycles per task kind) of both at batches 1 and 1,024;
# 3. the photos' pooled embeddings (--no-normalize, f32) from both: identical bytes, or how far apart;
# 4. the new tree's batch invariance (every row of batches 1-4, 7-12, 15, 16, 17, 255, 256, 1,024 bit-identical
#    to its batch-1 row).
# SG_AB_BACKEND=sm90:fp8 compares the FP8 kernels instead (graphs, profiles, embeddings with --precision fp8,
# invariance); SG_AB_PHOTO_BATCHES="1 5 13" embeds the photos at those --batch sizes (default: one batch).
# Prints a table last (scripts/sm90_ab_table.py). OUTDIR gets few files (the device tool brings back only a handful):
# gpu.txt, graph.jsonl, profile-base.txt, profile-new.txt, and summary.txt (identity, invariance, the table).
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-gpu.sh
. scripts/lib-gpu.sh
ROOT=$PWD
BASE_TAR=${1:?usage: scripts/sm90-ab.sh BASE.tar [OUTDIR]}
RES=${2:-${OUT:-/tmp/sg-sm90-ab}}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
BASE=$WORK/base
mkdir -p "$RES" "$WORK"
PY=${PYTHON:-python3}
BATCHES=${SG_AB_BATCHES:-1,32,256,1024}
BE=${SG_AB_BACKEND:-sm90}
PREC=()
[ "$BE" = sm90:fp8 ] && PREC=(--precision fp8)
T0=$SECONDS
stamp() { echo "== [$((SECONDS - T0))s] $*"; }
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=$ROOT/.carry/deps)
TARGETS=(siglip2-embed build/tools/sg_gpu_graph_bench build/tools/sg_batch_invariance)
JOBS=$(nproc 2>/dev/null || echo 2)

stamp "build base ($BASE_TAR) and new, side by side"
rm -rf "$BASE" && mkdir -p "$BASE" && tar -xf "$BASE_TAR" -C "$BASE" || { echo "cannot unpack $BASE_TAR"; exit 1; }
(cd "$BASE" && make -j"$((JOBS / 2))" "${DEPS[@]}" "${TARGETS[@]}" >"$WORK/build-base.log" 2>&1) &
make -j"$((JOBS / 2))" "${DEPS[@]}" "${TARGETS[@]}" >"$WORK/build-new.log" 2>&1
rc_new=$?
wait $!
rc_base=$?
[ $rc_new -eq 0 ] || { tail -30 "$WORK/build-new.log"; echo "new build failed"; exit 1; }
[ $rc_base -eq 0 ] || { tail -30 "$WORK/build-base.log"; echo "base build failed"; exit 1; }

sg_gpu_checkpoint
sg_gpu_info

graph() {  # graph TREE LABEL BACKEND
    timeout 300 "$1/build/tools/sg_gpu_graph_bench" "$CKPT" "$BATCHES" "$3" 2>"$WORK/graph-$2.err" |
        sed "s/\"backend\": \"[^\"]*\"/\"backend\": \"$2\"/" | tee -a "$RES/graph.jsonl"
}
stamp "graph replays: base, new, base, new, cuda"
: >"$RES/graph.jsonl"
: >"$RES/summary.txt"
graph "$BASE" base-1 "$BE"
graph "$ROOT" new-1 "$BE"
graph "$BASE" base-2 "$BE"
graph "$ROOT" new-2 "$BE"
graph "$ROOT" cuda cuda
# SG_AB_EXTRA="label ENV=V ...; label2 ENV=V ...": more runs of the new tree with debug knobs set (docs/debug-knobs.md)
IFS=';' read -ra extra <<<"${SG_AB_EXTRA:-}"
for spec in "${extra[@]}"; do
    read -ra words <<<"$spec"
    [ ${#words[@]} -ge 1 ] || continue
    (export "${words[@]:1}"; graph "$ROOT" "${words[0]}" "$BE")
done

stamp "SG_SM90_PROFILE=1 at batches 1 and 1,024"
for v in base new; do
    tree=$ROOT
    [ $v = base ] && tree=$BASE
    SG_SM90_PROFILE=1 timeout 120 "$tree/build/tools/sg_gpu_graph_bench" "$CKPT" 1,1024 "$BE" 2>&1 | grep -v '^{' |
        tee "$RES/profile-$v.txt"
done

stamp "the photos' embeddings, base against new (bytes)"
PHOTOS=$ROOT/.carry/photos
[ -d "$PHOTOS" ] || PHOTOS=$ROOT/../shared/bench/photos
for pb in ${SG_AB_PHOTO_BATCHES:-default}; do
    BATCH=()
    [ "$pb" = default ] || BATCH=(--batch "$pb")
    for v in base new; do
        tree=$ROOT
        [ $v = base ] && tree=$BASE
        "$tree/siglip2-embed" --weights "$CKPT" --backend sm90 "${PREC[@]}" "${BATCH[@]}" --no-normalize -f f32 \
            -o "$WORK/emb-$v.f32" "$PHOTOS" 2>"$WORK/emb-$v.err" || { echo "embedding with $v failed:"; tail "$WORK/emb-$v.err"; }
    done
    if cmp -s "$WORK/emb-base.f32" "$WORK/emb-new.f32"; then
        echo "PASS: photos' embeddings ($BE, batch $pb) identical bytes, base and new" \
            "($(($(stat -c %s "$WORK/emb-new.f32") / 3072)) rows)" | tee -a "$RES/summary.txt"
    else
        $PY - "$WORK/emb-base.f32" "$WORK/emb-new.f32" "$BE, batch $pb" <<'EOF' | tee -a "$RES/summary.txt"
import sys, numpy as np
a = np.fromfile(sys.argv[1], np.float32).reshape(-1, 768).astype(np.float64)
b = np.fromfile(sys.argv[2], np.float32).reshape(-1, 768).astype(np.float64)
cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
print(f"DIFF: photos' embeddings ({sys.argv[3]}) differ: {len(a)} rows, min cosine base/new {cos.min():.7f}, "
      f"max |d| {abs(a - b).max():.3g}")
EOF
    fi
done

stamp "batch invariance (new)"
timeout 300 "$ROOT/build/tools/sg_batch_invariance" "$CKPT" "$BE" 2>&1 | tee -a "$RES/summary.txt"

stamp table
$PY scripts/sm90_ab_table.py "$RES/graph.jsonl" | tee -a "$RES/summary.txt"
stamp done
